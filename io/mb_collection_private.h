/* meshbatch: internal entry points of the collection reader (mb_collection.c)
 * for meshbatch's own tests. Not installed, not public. */
#ifndef MB_COLLECTION_PRIVATE_H
#define MB_COLLECTION_PRIVATE_H

#include <stddef.h>

#include "mb_collection.h"

/* mb_collection_open on an HDF5 file image in memory (the bytes of a
 * collection file, as H5Fget_file_image gives them) instead of a file on
 * disk: HDF5's core driver, no MPI-IO, no file system. Everything after the
 * open (the checks of mb_collection_open, mb_collection_read, _read_slab,
 * _read_grid_block, _close) is the same code as for a file; reads are
 * independent transfers in both cases. For the fuzz harness of the reader
 * (tests/fuzz/fuzz_collection.c), which would otherwise spend most of its
 * time writing and opening files through MPI-IO.
 * Collective over comm, like mb_collection_open: every rank passes an image
 * of the same bytes (rank 0 validates its copy, as it does a file). `name`
 * stands for the path in error messages and names the in-memory file for
 * HDF5, which takes two open files of the same name for one: collections
 * open at the same time in a process need different names. HDF5 copies the image: the caller
 * keeps ownership of `image` and may free it as soon as this returns.
 * Errors: those of mb_collection_open, with MB_ERR_ARG for a NULL argument
 * or size 0 and MB_ERR_FORMAT for bytes that HDF5 cannot open; *coll is then
 * NULL. */
mb_error mb_collection_open_image(MPI_Comm comm, const char *name, const void *image,
                                  size_t size, mb_collection **coll);

#endif
