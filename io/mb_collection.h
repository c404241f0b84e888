/* meshbatch: HDF5 collections of datasets (layout in docs/format.md).
 *
 * One file holds many named datasets under /meshes/<name>/ with a format
 * version at "/". Every dataset has a kind (mb_mesh.kind, stored as the
 * group's `kind` attribute): surface (vertices [N,3]), triangulation2d
 * (vertices [N,2], triangles [M,3]) or polygons2d (vertices [N,2], faces as
 * offsets + indices); planar kinds are read back with z = 0. Per-vertex
 * fields (mb_mesh.fields) and per-face fields (mb_mesh.face_fields) are
 * stored with every kind. Files of format version 1 (no kind attribute)
 * are read as surfaces. Reading: every rank opens the file (collective),
 * learns the list of datasets (names, kinds and sizes), then reads any
 * dataset independently.
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
#include <stddef.h>
#include <stdint.h>

#include "mb_error.h"
#include "mb_mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MB_COLLECTION_FORMAT "meshbatch-collection"
/* The version written; files of versions 1 (no `kind`, every mesh a surface)
 * up to this one are read. */
#define MB_COLLECTION_FORMAT_VERSION 2
#define MB_COLLECTION_FORMAT_VERSION_MIN 1

/* Kind and sizes of one dataset in a collection, known without reading its
 * arrays. */
typedef struct mb_mesh_info {
  char name[256];
  int64_t index;    /* position in the collection (creation order) */
  int64_t nv;
  int64_t nf;
  int64_t nidx;     /* total vertex indices over all faces (3 nf for triangles) */
  int triangles;    /* 1 if the faces are stored as `triangles` [M,3] (then all are
                       triangles): surfaces of triangles and every triangulation2d;
                       0 for offsets + indices (every polygons2d, even of triangles) */
  mb_kind kind;     /* MB_KIND_SURFACE, _TRIANGULATION2D, _POLYGONS2D or _GRID3D
                       (version 1 files: always MB_KIND_SURFACE) */
  int64_t shape[3];  /* grid3d: points per axis (z, y, x); nv is their product, nf 0 */
  double origin[3], spacing[3];
  int64_t nvalues;      /* field components per vertex row (grid point), all fields together */
  int64_t nface_values; /* field components per face row, all face fields together */
  char problem[384];    /* non-empty: the dataset is refused (external raw storage, a virtual
                           dataset, or declared sizes its file does not hold), the message
                           naming it; its sizes are then 0 and reading it fails with
                           MB_ERR_FORMAT and this message, the other datasets are read */
} mb_mesh_info;

typedef struct mb_collection mb_collection; /* opaque reader handle */

/* mb_mesh_slab (rows of one mesh held by a rank) is defined in mb_mesh.h. */

/* Open a collection for reading. Collective over comm. Checks the format
 * name and version attributes (versions MB_COLLECTION_FORMAT_VERSION_MIN ..
 * MB_COLLECTION_FORMAT_VERSION), every dataset's kind and the shapes of its
 * HDF5 datasets. On success *coll is new (free it with mb_collection_close).
 * Errors: MB_ERR_ARG (NULL argument), MB_ERR_IO (missing file), MB_ERR_FORMAT
 * (not an HDF5 file, not a meshbatch collection, unsupported version,
 * missing or unknown kind, wrong dataset shapes), MB_ERR_HDF5, MB_ERR_MEMORY;
 * problems of the file give the same code on every rank; *coll is then NULL. */
mb_error mb_collection_open(MPI_Comm comm, const char *path, mb_collection **coll);

/* Number of datasets, and the kind and sizes of dataset i in [0, count)
 * (borrowed; NULL if i is outside). Not collective. */
int64_t mb_collection_count(const mb_collection *coll);
const mb_mesh_info *mb_collection_info(const mb_collection *coll, int64_t i);

/* The format_version of the open file (1 or 2). Not collective. */
int mb_collection_version(const mb_collection *coll);

/* Read dataset i whole (kind, vertices, faces, per-vertex and per-face
 * fields, attributes). Not collective: any rank may read any dataset at any
 * time. The caller owns *mesh (free with mb_mesh_free); (*mesh)->index = i;
 * planar kinds get xyz [nv,3] with z = +0.0.
 * Errors: MB_ERR_ARG (NULL argument, i outside), MB_ERR_FORMAT (bad shapes,
 * out-of-range indices, NaN), MB_ERR_HDF5, MB_ERR_MEMORY. */
mb_error mb_collection_read(mb_collection *coll, int64_t i, mb_mesh **mesh);

/* Read rows [vertex_start, vertex_start + nvrows) of the vertices (and of
 * every per-vertex field) and rows [face_start, face_start + nfrows) of the
 * faces (and of every per-face field) of dataset i, by hyperslab (only those
 * rows are read), plus its kind and attributes. Not collective. Planar kinds
 * read 2 columns per vertex row (z = +0.0 in rows->xyz); triangulation2d
 * reads rows of `triangles` [M,3]. Face indices stay global; offsets are
 * rebased to start at 0. Zero-row ranges are allowed. On success slab->rows
 * is new (the caller frees it with mb_mesh_free), slab->rows->index = i and
 * slab->nv, nf are those of the whole mesh. Errors: MB_ERR_ARG (NULL
 * argument, i or a range outside the mesh), MB_ERR_FORMAT (indices outside
 * [0, nv), NaN/Inf coordinates, bad offsets), MB_ERR_HDF5, MB_ERR_MEMORY;
 * *slab is then left untouched. */
mb_error mb_collection_read_slab(mb_collection *coll, int64_t i, int64_t vertex_start,
                                 int64_t nvrows, int64_t face_start, int64_t nfrows,
                                 mb_mesh_slab *slab);

/* Close the reader. Collective over the open's comm. */
/* Read block [lo, lo + n) (per axis z, y, x) of grid3d dataset i by
 * hyperslab, every field in its stored precision: slab->rows is a new
 * grid3d of shape n with the grid's origin, spacing and attributes,
 * slab->grid_lo = lo, slab->grid_shape the grid's shape, slab->nv its
 * points. Not collective (each rank reads its own block).
 * Errors: MB_ERR_ARG (not a grid, block outside it), MB_ERR_HDF5,
 * MB_ERR_MEMORY. */
mb_error mb_collection_read_grid_block(mb_collection *coll, int64_t i, const int64_t lo[3],
                                       const int64_t n[3], mb_mesh_slab *slab);

mb_error mb_collection_close(mb_collection *coll);

/* Length of the stem of a collection path that its XDMF companions are
 * named after: path without a final ".h5" ("out/a.h5" -> 5, "out/a.hdf" -> 9);
 * the companions are STEM.xdmf and STEM.MESH.xdmf. Not collective. */
size_t mb_collection_stem_length(const char *path);

/* Write a collection (format version MB_COLLECTION_FORMAT_VERSION).
 * Collective over comm: every rank passes the meshes it holds (nlocal may be
 * 0; meshes are borrowed), of any kind, mixed freely. Mesh names must be
 * unique over all ranks. Meshes are stored in ascending mesh->index order
 * (ties by name), so the file does not depend on which rank held which mesh.
 * Each mesh is checked: a valid kind, mb_mesh_validate, every face a
 * triangle for triangulation2d, z = 0 for planar kinds (only x, y are
 * stored), names of fields and face fields, attribute keys other than the
 * reserved `index` and `kind`. The file is created as "<path>.tmp-<pid>",
 * written, renamed to path by rank 0, and the XDMF companions
 * "<path without .h5>.xdmf" and "<path without .h5>.<name>.xdmf" are put
 * beside it by rank 0.
 * Errors: MB_ERR_IO, MB_ERR_HDF5, MB_ERR_MPI, MB_ERR_MEMORY, MB_ERR_ARG
 * (duplicate names, bad kind, names or attributes), MB_ERR_FORMAT (a mesh
 * that fails the checks above), the same code on every rank. On error no
 * file exists at path (an earlier file there is left untouched).
 * Same as mb_collection_write_slabs(comm, path, nlocal, local_meshes, 0, NULL). */
mb_error mb_collection_write(MPI_Comm comm, const char *path, int nlocal,
                             mb_mesh *const *local_meshes);

/* Like mb_collection_write, plus meshes held in slabs. Collective over comm:
 * every rank passes its whole meshes (nlocal, local) and its slabs (nslabs,
 * slabs; both may be 0; all borrowed). Slabs with the same name form one
 * mesh, at most one slab per mesh name per rank, zero-row slabs allowed:
 * they must tile [0, nv) and [0, nf) exactly and agree on nv, nf, the
 * index, the kind and the names and components of the fields and face
 * fields; a surface is stored as `triangles` if every slab's faces are
 * triangles (a triangulation2d always, a polygons2d never). Each slab's rows
 * are checked like a whole mesh's (kind rules included). The mesh attributes
 * written are those of the slab with the lowest vertex_start (ties: lowest
 * face_start, then lowest rank). Every rank writes its own rows by hyperslab
 * (planar vertex rows from the x, y columns of xyz); the file (datasets,
 * values, attributes, XDMF companions) is the same as if one rank had
 * written each mesh whole with mb_collection_write.
 * Errors: as mb_collection_write, plus MB_ERR_ARG for a slab outside its
 * mesh and for slabs that do not tile or disagree (the same code on every
 * rank; no file is left at path), MB_ERR_FORMAT for bad slab rows (as
 * mb_mesh_validate, but indices must lie in [0, nv) of the whole mesh). */
mb_error mb_collection_write_slabs(MPI_Comm comm, const char *path, int nlocal,
                                   mb_mesh *const *local, int nslabs,
                                   const mb_mesh_slab *slabs);

/* A collection written one mesh at a time by one process (per-mesh runs on
 * one rank write each mesh as it finishes, while the next one computes).
 * The file is the one mb_collection_write would make of the same meshes,
 * dataset for dataset and attribute for attribute (docs/format.md,
 * "Writing one mesh at a time"); only the order of the groups in the file
 * is the order of the puts. None of these functions is collective; they
 * use HDF5's MPI-IO driver on MPI_COMM_SELF; call them from one thread. */
typedef struct mb_collection_writer mb_collection_writer;

/* Start writing a collection to path: refuses a folder of path that does
 * not exist, or one with less than expected_bytes free (statvfs; 0: no
 * check), then creates "<path>.tmp-<pid>". durable: finish syncs the file,
 * its XDMF companions and the folder as mb_collection_write_durable does. On success *writer is new; end
 * it with mb_collection_writer_finish or mb_collection_writer_abort.
 * Errors: MB_ERR_ARG (NULL or empty argument, path too long), MB_ERR_IO (no
 * folder, no room: "no room for the output ... MB are free", cannot
 * create), MB_ERR_HDF5, MB_ERR_MEMORY; *writer is then NULL and no file is
 * left. */
mb_error mb_collection_writer_begin(const char *path, double expected_bytes, int durable,
                                    mb_collection_writer **writer);

/* Write one mesh as the group /meshes/<name>, checked as
 * mb_collection_write checks it. Takes the mesh (owned from the call on,
 * freed by the writer in every case, also on error): its groups and
 * datasets are made at once, and the arrays that are the mesh's own memory
 * (vertices, triangles or face indices, fields) are written by the
 * writer's thread with pwrite at the offsets HDF5 allocated
 * (H5Dget_offset), while the caller goes on; at most two meshes wait for
 * that thread, put blocks beyond. Its mesh->index orders it among the
 * others (ties by name). Errors: MB_ERR_ARG (a name written before, bad
 * kind, names or attributes), MB_ERR_FORMAT (a mesh that fails the checks),
 * MB_ERR_HDF5, or MB_ERR_IO for a failed write of this or an earlier mesh
 * (the message names the mesh and says where the disk is full),
 * MB_ERR_MEMORY. After an error the caller should abort the writer. */
mb_error mb_collection_writer_put(mb_collection_writer *writer, mb_mesh *mesh);

/* Meshes put so far (0 for NULL). */
int64_t mb_collection_writer_count(const mb_collection_writer *writer);

/* Wait for the raw writes, number the meshes 0 .. n-1 in ascending
 * (mesh->index, name), close the file, write the XDMF companions and publish them with the file at path
 * as mb_collection_write does (an earlier output is replaced in one step
 * or left whole). Frees the writer in every case. Errors: MB_ERR_HDF5,
 * MB_ERR_IO (the publication failed: nothing new is left, an earlier
 * output is put back), MB_ERR_MEMORY. */
mb_error mb_collection_writer_finish(mb_collection_writer *writer);

/* Stop without publishing: drop the raw writes not yet done, close and
 * remove the temporary file and free the writer (and the meshes it still
 * holds). path is left as it was. NULL is allowed. */
void mb_collection_writer_abort(mb_collection_writer *writer);

/* Several processes writing through one writer (per-mesh runs on several
 * ranks write each mesh as it finishes): the process that holds the writer
 * (the writer rank) makes a mesh's group and datasets from a description
 * another process (the mesh's holder) sends it, and hands back where each
 * dataset's bytes lie in the file (the extents); the holder then writes
 * them itself with pwrite, beside the other holders. The file is the one
 * mb_collection_writer_put would make of the mesh. The transport of the
 * description and the extents is the caller's; none of these functions is
 * collective. Meshes that cannot be written so (grid3d, faces other than
 * triangles, float32 fields, a big-endian host) are put whole by the
 * writer's process (mb_collection_writer_put). */
typedef struct mb_collection_extent {
  int64_t offset; /* byte offset of the dataset's first value in the file (-1: none) */
  int64_t bytes;  /* its size in bytes */
} mb_collection_extent;

/* The holder: check mesh as mb_collection_writer_put checks it and describe
 * it into *meta (new, *len bytes; the caller frees it with free()).
 * *nextents: how many datasets the holder will write itself with
 * mb_collection_write_extents (vertices, triangles, every field, every face
 * field, in that order), or 0 where the mesh must be put whole (then *meta
 * is NULL). The mesh is borrowed. Errors: MB_ERR_ARG (NULL argument, bad
 * kind, names or attributes), MB_ERR_FORMAT (a mesh that fails the checks),
 * MB_ERR_MEMORY. */
mb_error mb_collection_describe(const mb_mesh *mesh, char **meta, size_t *len, int *nextents);

/* The writer's process: create the group and datasets of the mesh that
 * meta[len] (from mb_collection_describe) describes, without its values,
 * and return in ext[0 .. nextents) where each dataset lies (HDF5 allocates
 * a dataset's space when it creates it under the MPI-IO driver; the values
 * are never filled). The mesh counts as put (numbered by finish).
 * Errors: MB_ERR_ARG (no writer, a name written before, a description that
 * does not give nextents datasets), MB_ERR_FORMAT (a description that does
 * not parse), MB_ERR_HDF5 (a dataset with no place in the file), MB_ERR_IO,
 * MB_ERR_MEMORY. After an error the caller should abort the writer. */
mb_error mb_collection_writer_put_described(mb_collection_writer *writer, const char *meta,
                                            size_t len, int nextents,
                                            mb_collection_extent *ext);

/* The temporary file the writer fills ("<path>.tmp-<pid>"; borrowed, valid
 * until finish or abort), for the holders to open (open(2), O_WRONLY). */
const char *mb_collection_writer_temporary(const mb_collection_writer *writer);

/* The holder: write the values of mesh (the one described) into fd, the
 * writer's temporary file (path names it in messages), at the extents
 * ext[0 .. n) the writer returned: pwrite, planar vertices packed to their
 * x, y columns. Errors: MB_ERR_ARG (n or a size that is not the mesh's: a
 * description of another mesh), MB_ERR_IO (a failed write, with a note
 * where the disk is full), MB_ERR_MEMORY. */
mb_error mb_collection_write_extents(int fd, const char *path, const mb_mesh *mesh, int n,
                                     const mb_collection_extent *ext);

/* mb_collection_write_slabs, and the files on the disk before their names
 * change: every rank's writes synced (H5Fflush, that is MPI_File_sync:
 * fsync on each rank), then rank 0 syncs the file and each XDMF companion
 * (fsync) before the first rename or exchange and the folder after the
 * last. A crash of the machine or the loss of a node then leaves at path
 * either the earlier file or the whole new one, never a new name over
 * data that did not reach the disk (the checkpoint of --resume relies on
 * it). Collective over comm. Errors: those of mb_collection_write_slabs,
 * and MB_ERR_IO where a sync fails ("cannot sync ... to the disk"); on
 * error no file exists at path (an earlier one is left whole). */
mb_error mb_collection_write_durable(MPI_Comm comm, const char *path, int nlocal,
                                     mb_mesh *const *local, int nslabs,
                                     const mb_mesh_slab *slabs);

/* mb_collection_write_durable without the XDMF companions: the HDF5 file
 * alone, synced, then renamed into place, and the folder synced (two
 * fsyncs and one rename, against six and three with the companions of one
 * mesh). For the runner's checkpoints of partitioned runs
 * (OUTPUT.ckpt/INDEX.h5), which only meshbatch reads back. Collective over comm. Errors: those of
 * mb_collection_write_durable. */
mb_error mb_collection_write_checkpoint(MPI_Comm comm, const char *path, int nlocal,
                                        mb_mesh *const *local, int nslabs,
                                        const mb_mesh_slab *slabs);

/* The XDMF companions (written by mb_collection_write[_slabs] on rank 0) are produced
 * by the private io/mb_xdmf.h; their layout is in docs/format.md. */

#ifdef __cplusplus
}
#endif
#endif
