/* meshbatch: internals of the HDF5 collection (io/mb_collection_*.c), shared
 * by its files and, for mb_collection_open_image, by meshbatch's own tests.
 * Not installed, not public.
 *
 * The collection is one public header (mb_collection.h) over files split by
 * concern:
 *   mb_collection_common.c   HDF5 helpers (quiet error stack, transfers in
 *                            pieces below MPI-IO's 2 GiB) and the kinds
 *   mb_collection_gather.c   the collective writer's metadata: checks,
 *                            gathering every rank's pieces, grouping meshes
 *   mb_collection_layout.c   the datasets and attributes of every kind as
 *                            docs/format.md lays them out
 *   mb_collection_publish.c  durability and publishing: free space, fsync,
 *                            XDMF companions, rename/exchange into place
 *   mb_collection_write.c    the collective writer (mb_collection_write*)
 *   mb_collection_writer.c   the one-rank writer (mb_collection_writer_*)
 *                            and its pwrite thread
 *   mb_collection_read.c     the reader (open, info, read, read_slab,
 *                            read_grid_block, close)
 * Nothing here is collective unless its comment says so. */
#ifndef MB_COLLECTION_PRIVATE_H
#define MB_COLLECTION_PRIVATE_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "mb_collection.h"
#include "mb_xdmf.h"

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

enum { MB_NAME_MAX = 256, MB_PATH_MAX = 4096 };

/* ------------------------------------------- HDF5 helpers (_common.c) */

/* HDF5's own error-stack printing, saved by mb_h5_quiet_begin (which
 * silences it) and put back by mb_h5_quiet_end: for the duration of one
 * call of the collection, on the calling thread's default stack only. */
typedef struct mb_h5_quiet {
  H5E_auto2_t func;
  void *data;
} mb_h5_quiet;

/* Save the current handler of HDF5's default error stack and silence it. */
mb_h5_quiet mb_h5_quiet_begin(void);

/* Put back the handler q saved by mb_h5_quiet_begin. */
void mb_h5_quiet_end(mb_h5_quiet q);

/* Close an HDF5 identifier of any type; nothing for id < 0. Errors ignored
 * (for clean-up paths). */
void mb_h5_close_id(hid_t id);

/* Read (write = 0) or write the block start[0..rank) + count[0..rank) of
 * dataset d from or into buf, whose memory is an array of mem_dims
 * (mem_dims[a] >= count[a]; the block lies at its origin), values of
 * memory type mt; rank <= 4. Independent transfer, in slices of the first
 * axis of at most 1 GiB (MESHBATCH_IO_PIECE_BYTES sets it; a single slice
 * may be larger): MPI-IO moves at most 2^31 - 1 bytes a call. A block that
 * is not contiguous in memory (mem_dims[a] > count[a] for some a >= 1)
 * moves through a contiguous bounce buffer of at most 16 MiB a slice,
 * packed and unpacked by H5Dgather and H5Dscatter: MPI-IO would otherwise
 * make one system call per contiguous run. Not collective. Returns < 0 on
 * the first failing HDF5 call (or when the bounce buffer cannot be
 * allocated). */
herr_t mb_h5_block_transfer(hid_t d, hid_t mt, int write, int rank, const hsize_t *start,
                            const hsize_t *count, const hsize_t *mem_dims, void *buf);

/* ------------------------------- passes on all threads (_bulk.c) */

/* Read rows [row0, row0 + nrows) of dataset d, rows of row_bytes bytes
 * stored one after another (a whole [N] or [N, k] dataset's rows, k as in
 * memory), into buf by pread of the file at path on up to 8 OpenMP threads
 * (the first touch of the rows' pages and the page cache's copy on several
 * cores; HDF5 reads on one) where the bytes on the disk are those of
 * memory type mt: a contiguous dataset, allocated, in the file itself,
 * whose type H5Tequal finds equal to mt (a little-endian file type on a
 * little-endian host). *done = 1 when read; 0 where it does not apply
 * (path NULL: a file image; under 16 MiB; another layout or type;
 * MESHBATCH_RAW_READ=0; an open that fails): the caller reads through
 * HDF5. src and dset name the dataset in messages. Not collective; never
 * beside another HDF5 call. Errors: MB_ERR_IO (a pread failed),
 * MB_ERR_FORMAT (the file ends inside the rows). */
mb_error mb_coll_read_raw(hid_t d, const char *path, const char *src, const char *dset, hid_t mt,
                          int64_t row0, int64_t nrows, size_t row_bytes, void *buf, int *done);

/* A mesh of info's sizes (name, kind's planarity, nv, nf, nidx) for the
 * reader, whose reads fill its arrays: mb_mesh_create's mesh without the
 * zeroing of what they overwrite (a pass over every page before the
 * read's own); xyz stays zeroed for planar kinds, whose z the file does not
 * hold. *out owned by the caller (mb_mesh_free). Not collective. Errors:
 * MB_ERR_MEMORY, MB_ERR_ARG (sizes out of range). */
mb_error mb_coll_mesh_for_read(const mb_mesh_info *info, mb_mesh **out);

/* mb_mesh_validate(m, src) with its passes over a large mesh's rows (from
 * 2^18 faces) on all OpenMP threads; the one-thread pass where they find
 * a fault, so the verdict and the message are the same. Not collective.
 * Errors: MB_ERR_FORMAT as mb_mesh_validate. */
mb_error mb_coll_validate(const mb_mesh *m, const char *src);

/* mb_mesh_validate_rows(m, v0, f0, nv, src) likewise. Not collective.
 * Errors: MB_ERR_FORMAT. */
mb_error mb_coll_validate_rows(const mb_mesh *m, int64_t v0, int64_t f0, int64_t nv,
                               const char *src);

/* In one pass over the faces (all OpenMP threads from 2^18 faces):
 * *mixed_len = mb_xdmf_mixed_length(m), *triangles =
 * mb_mesh_is_triangles(m), *big = mb_xdmf_fan_count(m) > 0. Faces must
 * have at least 3 vertices (validated). Not collective; cannot fail. */
void mb_coll_face_stats(const mb_mesh *m, int64_t *mixed_len, int *triangles, int *big);

/* Rows [start, start + n) lie inside [0, total). */
static inline int mb_coll_rows_inside(int64_t start, int64_t n, int64_t total) {
  return start >= 0 && n >= 0 && start <= total - n;
}

/* A kind this build stores (surface, triangulation2d, polygons2d, grid3d). */
int mb_coll_kind_known(mb_kind k);

/* Planar kinds (triangulation2d, polygons2d) store vertices as [N,2]. */
int mb_coll_kind_planar(mb_kind k);

/* Columns of `vertices` in the file for a kind: 2 planar, else 3. */
int mb_coll_kind_vcols(mb_kind k);

/* --------------------------------------- writer metadata (_gather.c) */

/* A growable byte buffer; oom is set (and data kept) when a growth fails. */
typedef struct mb_buf {
  char *data;
  size_t len, cap;
  int oom;
} mb_buf;

/* A piece of a mesh being written: a whole mesh (one piece covering every
 * row) or the rows of one slab. Known on every rank after the gather. */
typedef struct mb_wpiece {
  const char *name;               /* strings borrowed from the gathered buffer */
  mb_kind kind;
  int64_t index, nv, nf;          /* of the whole mesh, as the holder states them */
  int64_t vstart, nvrows;         /* vertex rows [vstart, vstart + nvrows) */
  int64_t fstart, nfrows;         /* face rows [fstart, fstart + nfrows) */
  int64_t nidx, mixed_len;        /* vertex indices of its faces; its part of xdmf_mixed */
  int tri, big;                   /* all its faces are triangles; it has a face of >= 5 */
  int whole, rank, local;         /* whole mesh or slab; holder; position in its list */
  int nfields, nface_fields;
  const mb_xdmf_field *fields, *face_fields;
  int64_t shape[3];               /* grid3d: shape (z, y, x), origin, spacing */
  double origin[3], spacing[3];
  int64_t glo[3], gn[3];          /* grid3d: this piece's block, first point and extent */
  int nattrs;
  const char **keys, **values;
  int64_t idx_start, mixed_start; /* its first row of face_indices and of xdmf_mixed */
} mb_wpiece;

/* One mesh of the collection being written, as known on every rank. */
typedef struct mb_wmesh {
  mb_xdmf_mesh x;      /* name, kind, sizes, topology, fields (strings borrowed) */
  int64_t index;       /* mesh->index of the caller (sort key) */
  int64_t nidx;
  mb_wpiece *p;        /* its np pieces by (vstart, fstart, rank); p[0] gives the attributes */
  int np;
} mb_wmesh;

/* What this rank passed to the writer (borrowed). */
typedef struct mb_held {
  int rank;
  int nlocal, nslabs;
  mb_mesh *const *local;
  const mb_mesh_slab *slabs;
} mb_held;

/* The gathered metadata of all ranks (owns the arrays; strings point into buf). */
typedef struct mb_wset {
  char *buf;
  int64_t n, np;       /* meshes, pieces */
  mb_wmesh *m;
  mb_wpiece *p;
  mb_xdmf_field *fields;
  const char **strs;
} mb_wset;

/* Check this rank's meshes and slabs (names, kinds, fields, attributes,
 * rows) and serialize their metadata into b (count, then one record a
 * piece). Not collective. Errors: MB_ERR_ARG, MB_ERR_FORMAT, MB_ERR_MEMORY. */
mb_error mb_coll_pack_local(const mb_held *h, mb_buf *b);

/* Gather the metadata of every rank's pieces (local: this rank's, from
 * mb_coll_pack_local), group them into meshes sorted by (index, name) and
 * check them (no duplicate names; slabs agree and tile the rows). w is
 * filled (free with mb_coll_wset_free, also on error). Collective over
 * comm; identical result and check errors on every rank, but MB_ERR_MEMORY
 * and metadata over 2 GiB (MB_ERR_ARG) may be local: callers agree with
 * mb_agree. Errors: MB_ERR_ARG, MB_ERR_MEMORY, MB_ERR_MPI. */
mb_error mb_coll_gather_meshes(MPI_Comm comm, const mb_buf *local, mb_wset *w);

/* Free what w owns and zero it (safe on a zeroed set). */
void mb_coll_wset_free(mb_wset *w);

/* qsort order of mb_wmesh: by (index, name). */
int mb_coll_cmp_wmesh(const void *a, const void *b);

/* ---------------------------------------- datasets of a kind (_layout.c) */

/* Raw writes handed to the one-rank writer's thread (mb_collection_writer.c):
 * while the writer puts a mesh, the rows of a contiguous dataset whose file
 * bytes are the mesh's own memory (same type, same row length) are not
 * written through HDF5 but recorded as (offset in the file, bytes) from
 * H5Dget_offset, and the writer's thread writes them with pwrite while the
 * main thread goes on reading the next mesh (HDF5 itself is not
 * thread-safe). HDF5 has allocated their space when it created them (early
 * allocation, the MPI-IO driver's rule), so no metadata changes. */
typedef struct mb_raw_job {
  haddr_t offset;
  const char *buf;
  size_t bytes;
} mb_raw_job;

typedef struct mb_raw_batch {
  mb_mesh *mesh;             /* owned: freed once its jobs are written */
  mb_raw_job *jobs;
  int njobs, cap;
  struct mb_raw_batch *next;
} mb_raw_batch;

/* The batch mb_coll_put_mesh fills, NULL elsewhere. Used only by the thread
 * that makes HDF5 calls (the writer's caller). */
extern mb_raw_batch *mb_coll_raw_collect;

/* Where each dataset created by put_dataset lies in the file, in creation
 * order (offset -1: not allocated), while mb_coll_extent_collect points at
 * one (mb_collection_writer_put_described); oom set when a growth failed. */
typedef struct mb_coll_extents {
  mb_collection_extent *e;
  int n, cap, oom;
} mb_coll_extents;

/* The list put_dataset fills, NULL elsewhere (the HDF5 thread only). */
extern mb_coll_extents *mb_coll_extent_collect;

/* Create tmp through MPI-IO over comm with collective metadata (on one
 * rank too), no object times, file format of HDF5 1.8; *out is the open
 * file. Collective over comm. Errors: MB_ERR_HDF5, MB_ERR_IO (with the
 * reason on rank 0), MB_ERR_MPI. */
mb_error mb_coll_create_h5(MPI_Comm comm, const char *tmp, hid_t *out);

/* Group /meshes/<name> of mesh w with its attributes (index = pos, kind,
 * then those of its first piece) and its datasets as docs/format.md lays
 * them out for its kind; p and m are this rank's piece and its rows, or
 * NULL where it holds none. A failure of this rank's own raw writes is
 * recorded in *lerr (and does not stop the collective sequence).
 * Collective over the file's communicator. Errors: MB_ERR_HDF5,
 * MB_ERR_MEMORY. */
mb_error mb_coll_put_mesh(hid_t meshes, const mb_wmesh *w, int64_t pos, const mb_wpiece *p,
                          const mb_mesh *m, mb_error *lerr);

/* The root attributes (format, format_version) and the group /meshes
 * (*meshes, for the caller to close). Collective. Errors: MB_ERR_HDF5. */
mb_error mb_coll_put_root(hid_t file, hid_t *meshes);

/* Root attributes, /meshes and every mesh of w, in its order; h: what this
 * rank holds. Local raw-data failures in *lerr. Collective. Errors:
 * MB_ERR_HDF5, MB_ERR_MEMORY. */
mb_error mb_coll_put_contents(hid_t file, const mb_wset *w, const mb_held *h, mb_error *lerr);

/* ------------------------------------ durability, publishing (_publish.c) */

/* Bytes of the arrays the file will hold (every piece of every mesh of w):
 * positions, faces and their offsets, the XDMF connectivity, and every
 * field, at 8 bytes a value (float32 fields counted at 8: a bound). */
double mb_coll_estimated_bytes(const mb_wset *w);

/* Bytes free to this user in the folder of path (statvfs), -1 where it
 * cannot tell. */
double mb_coll_free_bytes(const char *path);

/* Refuse to start a file the folder of tmp has no room for: need bytes
 * (statvfs; where it cannot tell, go on). Not collective. Errors:
 * MB_ERR_IO. */
mb_error mb_coll_check_space(const char *tmp, double need);

/* 0 where the environment sets MESHBATCH_SPACE_CHECK=0: the free-space
 * checks before writing are skipped (the full-disk path's tests; file
 * systems whose statvfs misleads), else 1. Not collective. */
int mb_coll_space_check_on(void);

/* ": no space left on the disk (or the quota is full)" where the folder of
 * path has less than 1 MB free (statvfs), else "": a clause for the message
 * of a failed write. A static string. Not collective. */
const char *mb_coll_full_note(const char *path);

/* Free bytes below which mb_coll_close_h5 flushes before it closes. */
#define MB_COLL_LOW_SPACE (256.0 * 1024 * 1024)

/* Close file (the temporary tmp, created by mb_coll_create_h5 over comm)
 * safely on a full disk. Unless discard, and where the folder has less
 * than MB_COLL_LOW_SPACE free (statvfs on rank 0; a flush is a file sync
 * under MPI-IO, too dear for every output), its metadata is first flushed
 * (H5Fflush); where that fails on any rank, or discard is set, rank 0
 * truncates tmp to nothing before the close, so that the close, which
 * still writes metadata, finds room: a failed H5Fclose leaves HDF5 1.10
 * with a half-closed file that crashes the library's own close at
 * MPI_Finalize. The file's contents are lost then: callers remove tmp.
 * Collective over comm. Errors: MB_ERR_IO (the flush or the close failed,
 * with "no space" where the disk is full), MB_ERR_MPI. */
mb_error mb_coll_close_h5(MPI_Comm comm, hid_t file, const char *tmp, int discard);

/* The folder of path must exist. Not collective. Errors: MB_ERR_IO naming
 * the folder. */
mb_error mb_coll_check_folder(const char *path);

/* Write the XDMF companions of the meshes of w under temporary names, then
 * put the HDF5 file tmp and the XDMF files into place at path and its
 * companions' names (docs/format.md, "Writing"): every final name is
 * checked first, each file is exchanged with the earlier one at its name
 * (renameat2 RENAME_EXCHANGE) or renamed, the earlier one kept by a hard
 * link; if any step fails every earlier file is put back and nothing new
 * stays. suffix: the temporary names' suffix (".tmp-<pid>"). durable:
 * every file is synced before the first name changes, the folder after
 * the last. xdmf 0: the HDF5 file alone, no companions (checkpoints, read
 * back by meshbatch only). Called by one rank (rank 0). Errors: MB_ERR_IO,
 * MB_ERR_MEMORY, those of the XDMF writer. */
mb_error mb_coll_publish(const char *path, const char *tmp, const char *suffix,
                         const mb_wset *w, int durable, int xdmf);

#endif
