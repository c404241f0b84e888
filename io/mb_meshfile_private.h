/* meshbatch: the entry points of the OBJ, OFF and PLY code (mb_obj.c,
 * mb_off.c, mb_ply.c), called by the dispatcher (mb_meshfile.c). Not
 * installed, not public. The helpers they use are in mb_meshfile_util.h.
 * A reader receives the whole file as one NUL-terminated buffer and fills
 * an mb_mf_builder; a writer receives an open FILE and a checked mesh.
 */
#ifndef MB_MESHFILE_PRIVATE_H
#define MB_MESHFILE_PRIVATE_H

#include <stddef.h>
#include <stdio.h>

#include "mb_meshfile_util.h"

/* ------------------------------------------------------------ formats */

/* Readers: parse data (len bytes, NUL-terminated) into b; path for messages. */
mb_error mb_obj_read(const char *path, const char *data, size_t len, mb_mf_builder *b);
mb_error mb_off_read(const char *path, const char *data, size_t len, mb_mf_builder *b);
mb_error mb_ply_read(const char *path, const char *data, size_t len, mb_mf_builder *b);

/* Writers: write a checked mesh to f; stdio errors are detected by the caller.
 * Errors: MB_ERR_ARG (mesh not representable in the format). */
mb_error mb_obj_write(FILE *f, const char *path, const mb_mesh *m);
mb_error mb_off_write(FILE *f, const char *path, const mb_mesh *m);
mb_error mb_ply_write(FILE *f, const char *path, const mb_mesh *m);

#endif
