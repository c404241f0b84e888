/* meshbatch: HDF5 mesh collections (layout in docs/format.md).
 *
 * One file holds many named meshes under /meshes/<name>/ with a format
 * version at "/". Reading: every rank opens the file (collective), learns the
 * list of meshes (names and sizes), then reads any mesh independently.
 * Writing: all ranks call mb_collection_write together with the meshes they
 * hold (possibly none); the file is written through parallel HDF5 under a
 * temporary name and renamed when complete, and an XDMF file is written
 * beside it (same path with .xdmf) so ParaView and meshio open all meshes.
 * A mesh distributed over the ranks in contiguous slabs (partitioned runs)
 * is read by mb_collection_read_slab and written by mb_collection_write_slabs;
 * the file is the same as if one rank had written the whole mesh.
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

/* Rows of one mesh held by this rank, when a mesh is distributed over the
 * ranks in contiguous slabs (partitioned runs). */
typedef struct mb_mesh_slab {
  mb_mesh *rows;          /* rows->nv vertex rows (xyz and every field) and rows->nf face rows
                             of the whole mesh; rows->face_indices hold GLOBAL vertex ids in
                             [0, nv); rows->face_offsets start at 0; name, index, attrs as for
                             a whole mesh (owned by whoever created the slab) */
  int64_t vertex_start;   /* whole-mesh row of rows' first vertex */
  int64_t face_start;     /* whole-mesh row of rows' first face */
  int64_t nv, nf;         /* vertices and faces of the whole mesh */
} mb_mesh_slab;

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

/* Read rows [vertex_start, vertex_start + nvrows) of the vertices (and of
 * every field) and rows [face_start, face_start + nfrows) of the faces of
 * mesh i, by hyperslab (only those rows are read), plus its attributes. Not
 * collective. Face indices stay global; offsets are rebased to start at 0.
 * Zero-row ranges are allowed. On success slab->rows is new (the caller frees
 * it with mb_mesh_free), slab->rows->index = i and slab->nv, nf are those of
 * the whole mesh. Errors: MB_ERR_ARG (i or a range outside the mesh),
 * MB_ERR_FORMAT (indices outside [0, nv), NaN/Inf coordinates, bad offsets),
 * MB_ERR_HDF5, MB_ERR_MEMORY; *slab is then left untouched. */
/* Copy rows [v0, v0 + nvrows) of vertices (and fields) and [f0, f0 + nfrows)
 * of faces of a whole mesh into a new slab (faces keep their whole-mesh
 * vertex ids; attributes are copied). Not collective. slab->rows is new
 * (the caller frees it with mb_mesh_free). Errors: MB_ERR_ARG (rows outside
 * the mesh), MB_ERR_MEMORY. */
mb_error mb_mesh_slab_cut(const mb_mesh *mesh, int64_t v0, int64_t nvrows, int64_t f0,
                          int64_t nfrows, mb_mesh_slab *slab);

mb_error mb_collection_read_slab(mb_collection *coll, int64_t i, int64_t vertex_start,
                                 int64_t nvrows, int64_t face_start, int64_t nfrows,
                                 mb_mesh_slab *slab);

/* Close the reader. Collective over the open's comm. */
mb_error mb_collection_close(mb_collection *coll);

/* Write a collection. Collective over comm: every rank passes the meshes it
 * holds (nlocal may be 0; meshes are borrowed). Mesh names must be unique
 * over all ranks. Meshes are stored in ascending mesh->index order (ties
 * by name), so the file does not depend on which rank held which mesh. The
 * file is created as "<path>.tmp-<pid>", closed, renamed to path by rank 0,
 * then "<path without .h5>.xdmf" is written by rank 0.
 * Errors: MB_ERR_IO, MB_ERR_HDF5, MB_ERR_MPI, MB_ERR_ARG (duplicate names).
 * On error no file exists at path (an earlier file there is left untouched).
 * Same as mb_collection_write_slabs(comm, path, nlocal, local_meshes, 0, NULL). */
mb_error mb_collection_write(MPI_Comm comm, const char *path, int nlocal,
                             mb_mesh *const *local_meshes);

/* Like mb_collection_write, plus meshes held in slabs. Collective over comm:
 * every rank passes its whole meshes (nlocal, local) and its slabs (nslabs,
 * slabs; both may be 0; all borrowed). Slabs with the same name form one
 * mesh, at most one slab per mesh name per rank, zero-row slabs allowed:
 * they must tile [0, nv) and [0, nf) exactly and agree on nv, nf, the
 * index and the field names and components; the mesh is a triangle mesh if
 * every slab's faces are triangles. The mesh attributes written are those of
 * the slab with the lowest vertex_start (ties: lowest face_start, then lowest
 * rank). Every rank writes its own rows by hyperslab; the file (datasets,
 * values, attributes, XDMF companions) is the same as if one rank had
 * written each mesh whole with mb_collection_write.
 * Errors: as mb_collection_write, plus MB_ERR_ARG for a slab outside its
 * mesh and for slabs that do not tile or disagree (the same code on every
 * rank; no file is left at path), MB_ERR_FORMAT for bad slab rows (as
 * mb_mesh_validate, but indices must lie in [0, nv) of the whole mesh). */
mb_error mb_collection_write_slabs(MPI_Comm comm, const char *path, int nlocal,
                                   mb_mesh *const *local, int nslabs,
                                   const mb_mesh_slab *slabs);

/* The XDMF companions (written by mb_collection_write[_slabs] on rank 0) are produced
 * by the private io/mb_xdmf.h; their layout is in docs/format.md. */

#ifdef __cplusplus
}
#endif
#endif
