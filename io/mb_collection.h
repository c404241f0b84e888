/* meshbatch: HDF5 mesh collections (layout in docs/format.md).
 *
 * One file holds many named meshes under /meshes/<name>/ with a format
 * version at "/". Reading: every rank opens the file (collective), learns the
 * list of meshes (names and sizes), then reads any mesh independently.
 * Writing: all ranks call mb_collection_write together with the meshes they
 * hold (possibly none); the file is written through parallel HDF5 under a
 * temporary name and renamed when complete, and an XDMF file is written
 * beside it (same path with .xdmf) so ParaView and meshio open all meshes.
 */
#ifndef MB_COLLECTION_H
#define MB_COLLECTION_H

#include <mpi.h>
#include <stdint.h>

#include "mb_error.h"
#include "mb_mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MB_COLLECTION_FORMAT "meshbatch-collection"
#define MB_COLLECTION_FORMAT_VERSION 1

/* Sizes of one mesh in a collection, known without reading its arrays. */
typedef struct mb_mesh_info {
  char name[256];
  int64_t index;    /* position in the collection (creation order) */
  int64_t nv;
  int64_t nf;
  int64_t nidx;     /* total vertex indices over all faces (3 nf for triangles) */
  int triangles;    /* 1 if all faces are triangles */
} mb_mesh_info;

typedef struct mb_collection mb_collection; /* opaque reader handle */

/* Open a collection for reading. Collective over comm. Checks the format
 * name and version attributes and the shapes of every mesh's datasets.
 * Errors: MB_ERR_IO (missing file), MB_ERR_FORMAT (not an HDF5 file, not a
 * meshbatch collection, unsupported version, wrong dataset shapes), MB_ERR_HDF5. */
mb_error mb_collection_open(MPI_Comm comm, const char *path, mb_collection **coll);

/* Number of meshes, and the sizes of mesh i in [0, count). Not collective. */
int64_t mb_collection_count(const mb_collection *coll);
const mb_mesh_info *mb_collection_info(const mb_collection *coll, int64_t i);

/* Read mesh i (vertices, faces, fields, attributes). Not collective: any rank
 * may read any mesh at any time. The caller owns *mesh; (*mesh)->index = i.
 * Errors: MB_ERR_FORMAT (bad shapes, out-of-range indices, NaN), MB_ERR_HDF5. */
mb_error mb_collection_read(mb_collection *coll, int64_t i, mb_mesh **mesh);

/* Close the reader. Collective over the open's comm. */
mb_error mb_collection_close(mb_collection *coll);

/* Write a collection. Collective over comm: every rank passes the meshes it
 * holds (nlocal may be 0; meshes are borrowed). Mesh names must be unique
 * over all ranks. Meshes are stored in ascending mesh->index order (ties
 * by name), so the file does not depend on which rank held which mesh. The
 * file is created as "<path>.tmp-<pid>", closed, renamed to path by rank 0,
 * then "<path without .h5>.xdmf" is written by rank 0.
 * Errors: MB_ERR_IO, MB_ERR_HDF5, MB_ERR_MPI, MB_ERR_ARG (duplicate names).
 * On error no file exists at path (an earlier file there is left untouched). */
mb_error mb_collection_write(MPI_Comm comm, const char *path, int nlocal,
                             mb_mesh *const *local_meshes);

/* The XDMF companions (written by mb_collection_write on rank 0) are produced
 * by the private io/mb_xdmf.h; their layout is in docs/format.md. */

#ifdef __cplusplus
}
#endif
#endif
