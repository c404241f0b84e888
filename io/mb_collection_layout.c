/* meshbatch: the datasets and attributes of each kind in a collection file
 * (surface, triangulation2d, polygons2d, grid3d), as docs/format.md lays
 * them out: created collectively, each rank writing its rows (see
 * mb_collection_private.h). */
#include "mb_collection.h"
#include "mb_collection_private.h"

#include <hdf5.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ write: HDF5 */

/* Create a scalar attribute of the given file type and write value (memory type mt). */
static mb_error put_attr(hid_t loc, const char *name, hid_t ft, hid_t mt, const void *value) {
  hid_t sp = H5Screate(H5S_SCALAR);
  MB_CALL_H5(sp);
  hid_t a = H5Acreate2(loc, name, ft, sp, H5P_DEFAULT, H5P_DEFAULT);
  H5Sclose(sp);
  MB_CALL_H5(a);
  herr_t st = H5Awrite(a, mt, value);
  H5Aclose(a);
  MB_CALL_H5(st);
  return MB_SUCCESS;
}

/* A fixed-length UTF-8 string attribute (NUL-terminated, size strlen + 1). */
static mb_error put_str_attr(hid_t loc, const char *name, const char *value) {
  hid_t t = H5Tcopy(H5T_C_S1);
  MB_CALL_H5(t);
  if (H5Tset_size(t, strlen(value) + 1) < 0 || H5Tset_strpad(t, H5T_STR_NULLTERM) < 0 ||
      H5Tset_cset(t, H5T_CSET_UTF8) < 0) {
    H5Tclose(t);
    MB_FAIL(MB_ERR_HDF5, "cannot make a string type for attribute '%s'", name);
  }
  mb_error e = put_attr(loc, name, t, t, value);
  H5Tclose(t);
  MB_CALL(e);
  return MB_SUCCESS;
}

/* Rows [start, start + n) of a dataset that this rank writes from buf (n = 0:
 * none). A row of buf holds mcols values, of which the first d1 (the columns
 * of the dataset) are written; mcols = 0 means d1 (planar vertices are
 * written from xyz rows of 3 with mcols = 3, d1 = 2). */
typedef struct mb_rows {
  int64_t start, n;
  const void *buf;
  int64_t mcols;
  int in_mesh;  /* buf is the mesh's own memory (alive until the mesh is freed) */
} mb_rows;

/* See mb_collection_private.h. */
mb_raw_batch *mb_coll_raw_collect;
mb_coll_extents *mb_coll_extent_collect;

/* Record where dataset d (d0 x d1 values of file type ft; rank 1: d1 unused)
 * lies in the file, for a put from a description (mb_coll_extents). */
static void collect_extent(hid_t d, hid_t ft, int rank, int64_t d0, int64_t d1) {
  mb_coll_extents *x = mb_coll_extent_collect;
  if (x->n == x->cap) {
    const int cap = x->cap ? 2 * x->cap : 8;
    mb_collection_extent *e = realloc(x->e, sizeof *e * (size_t)cap);
    if (!e) {
      x->oom = 1;
      return;
    }
    x->e = e;
    x->cap = cap;
  }
  const int64_t bytes = d0 * (rank == 2 ? d1 : 1) * (int64_t)H5Tget_size(ft);
  const haddr_t off = bytes > 0 ? H5Dget_offset(d) : HADDR_UNDEF;
  x->e[x->n++] = (mb_collection_extent){off == HADDR_UNDEF ? -1 : (int64_t)off, bytes};
}

/* Record rows r of dataset d for the writer's thread; 0 where they must go
 * through HDF5 (not contiguous or not allocated, another memory type or
 * row length, out of memory). */
static int defer_rows(hid_t d, hid_t mt, int rank, int64_t d1, const mb_rows *r) {
  if (r->mcols && r->mcols != d1) return 0;
  const haddr_t off = H5Dget_offset(d);
  if (off == HADDR_UNDEF) return 0;
  hid_t ft = H5Dget_type(d);
  const int same = ft >= 0 && H5Tequal(ft, mt) > 0;
  mb_h5_close_id(ft);
  mb_raw_batch *b = mb_coll_raw_collect;
  if (!same) return 0;
  if (b->njobs == b->cap) {
    const int cap = b->cap ? 2 * b->cap : 8;
    mb_raw_job *j = realloc(b->jobs, sizeof *j * (size_t)cap);
    if (!j) return 0;
    b->jobs = j;
    b->cap = cap;
  }
  const size_t row = H5Tget_size(mt) * (size_t)(rank == 2 ? d1 : 1);
  b->jobs[b->njobs++] = (mb_raw_job){off + (haddr_t)r->start * row, r->buf, row * (size_t)r->n};
  return 1;
}

/* Write rows r of dataset d ([d0] if rank 1, [d0, d1] if rank 2) by hyperslab
 * (rows of r->mcols values in memory, 0: d1). Independent transfer, in
 * pieces below MPI-IO's 2 GiB limit; or recorded for the writer's thread. */
static herr_t write_rows(hid_t d, hid_t mt, int rank, int64_t d1, const mb_rows *r) {
  if (mb_coll_raw_collect && r->in_mesh && defer_rows(d, mt, rank, d1, r)) return 0;
  const hsize_t start[2] = {(hsize_t)r->start, 0}, count[2] = {(hsize_t)r->n, (hsize_t)d1};
  const hsize_t mem[2] = {(hsize_t)r->n, (hsize_t)(r->mcols ? r->mcols : d1)};
  return mb_h5_block_transfer(d, mt, 1, rank, start, count, mem, (void *)r->buf);
}

/* Create a dataset (collective), let this rank write its rows r if it holds
 * any (independent; a failure is recorded in *lerr and does not stop the
 * collective sequence), then close it (collective). */
static mb_error put_dataset(hid_t loc, const char *name, hid_t ft, hid_t mt, int rank,
                            int64_t d0, int64_t d1, const mb_rows *r, mb_error *lerr) {
  hsize_t dims[2] = {(hsize_t)d0, (hsize_t)d1};
  hid_t sp = H5Screate_simple(rank, dims, NULL);
  MB_CALL_H5(sp);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (dcpl >= 0) H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
  if (dcpl >= 0) H5Pset_obj_track_times(dcpl, 0); /* reproducible bytes */
  hid_t d = H5Dcreate2(loc, name, ft, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  H5Sclose(sp);
  if (dcpl >= 0) H5Pclose(dcpl);
  MB_CALL_H5(d);
  if (mb_coll_extent_collect) collect_extent(d, ft, rank, d0, d1);
  if (r->n > 0 && *lerr == MB_SUCCESS && write_rows(d, mt, rank, d1, r) < 0)
    *lerr = mb_error_set(MB_ERR_HDF5, __FILE__, __LINE__, __func__,
                         "H5Dwrite of rows [%lld, %lld) of dataset '%s' failed",
                         (long long)r->start, (long long)(r->start + r->n), name);
  MB_CALL_H5(H5Dclose(d));
  return MB_SUCCESS;
}

/* A group with link and attribute creation order tracked. Collective. */
static mb_error make_group(hid_t loc, const char *name, hid_t *g) {
  hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
  MB_CALL_H5(gcpl);
  const int ok =
      H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) >= 0 &&
      H5Pset_attr_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) >= 0 &&
      H5Pset_obj_track_times(gcpl, 0) >= 0;
  *g = ok ? H5Gcreate2(loc, name, H5P_DEFAULT, gcpl, H5P_DEFAULT) : -1;
  H5Pclose(gcpl);
  MB_CALL_H5(*g);
  return MB_SUCCESS;
}

/* This rank's rows of the polygon datasets of mesh w from its piece p (rows
 * m): r[0..3] for face_offsets, face_indices, xdmf_mixed, xdmf_triangles,
 * from the new buffers buf[0..2]. Offsets are shifted by the piece's first
 * index; the piece holding the last face also writes the final offset. */
static mb_error fill_polygon_rows(const mb_wmesh *w, const mb_wpiece *p, const mb_mesh *m,
                                  mb_rows r[4], int64_t *buf[3]) {
  int last = p->nfrows > 0 && p->fstart + p->nfrows == w->x.nf;
  int64_t nfan = w->x.fan_ntri ? p->nidx - 2 * p->nfrows : 0;
  buf[0] = malloc(sizeof(int64_t) * (size_t)(p->nfrows + 1));
  buf[1] = malloc(sizeof(int64_t) * (size_t)(p->mixed_len + 1));
  buf[2] = malloc(sizeof(int64_t) * 3 * (size_t)(nfan + 1));
  MB_CHECK(buf[0] && buf[1] && buf[2], MB_ERR_MEMORY, "out of memory");
  for (int64_t f = 0; f <= p->nfrows; f++) buf[0][f] = m->face_offsets[f] + p->idx_start;
  mb_xdmf_fill_mixed(m, buf[1]); /* global vertex ids: it only copies face_indices */
  if (nfan) mb_xdmf_fill_fan(m, buf[2]);
  r[0] = (mb_rows){p->fstart, p->nfrows + last, buf[0], 0, 0};
  r[1] = (mb_rows){p->idx_start, p->nidx, m->face_indices, 0, 1};
  r[2] = (mb_rows){p->mixed_start, p->mixed_len, buf[1], 0, 0};
  /* fan triangles of the earlier faces: sum(n - 2) = idx_start - 2 fstart */
  r[3] = (mb_rows){p->idx_start - 2 * p->fstart, nfan, buf[2], 0, 0};
  return MB_SUCCESS;
}

/* The polygon datasets of a mesh (face_offsets, face_indices, xdmf_mixed and,
 * with a face of >= 5 vertices anywhere in the mesh, xdmf_triangles); p and
 * m are this rank's piece and rows, or NULL. Collective. */
static mb_error put_polygon_datasets(hid_t g, const mb_wmesh *w, const mb_wpiece *p,
                                     const mb_mesh *m, mb_error *lerr) {
  mb_rows r[4] = {{0, 0, NULL, 0, 0}, {0, 0, NULL, 0, 0}, {0, 0, NULL, 0, 0}, {0, 0, NULL, 0, 0}};
  int64_t *buf[3] = {NULL, NULL, NULL};
  if (m && *lerr == MB_SUCCESS) {
    *lerr = fill_polygon_rows(w, p, m, r, buf);
    if (*lerr) memset(r, 0, sizeof r);
  }
  mb_error e = put_dataset(g, "face_offsets", H5T_STD_I64LE, H5T_NATIVE_INT64, 1, w->x.nf + 1,
                           0, &r[0], lerr);
  if (!e)
    e = put_dataset(g, "face_indices", H5T_STD_I64LE, H5T_NATIVE_INT64, 1, w->nidx, 0, &r[1],
                    lerr);
  if (!e)
    e = put_dataset(g, "xdmf_mixed", H5T_STD_I64LE, H5T_NATIVE_INT64, 1, w->x.mixed_len, 0,
                    &r[2], lerr);
  if (!e && w->x.fan_ntri)
    e = put_dataset(g, "xdmf_triangles", H5T_STD_I64LE, H5T_NATIVE_INT64, 2, w->x.fan_ntri, 3,
                    &r[3], lerr);
  for (int k = 0; k < 3; k++) free(buf[k]);
  MB_CALL(e);
  return MB_SUCCESS;
}

/* Group `fields` with one dataset per per-vertex field; this rank writes its
 * vertex rows. */
static mb_error put_fields(hid_t g, const mb_wmesh *w, const mb_wpiece *p, const mb_mesh *m,
                           mb_error *lerr) {
  if (w->x.nfields == 0) return MB_SUCCESS;
  hid_t fg;
  MB_CALL(make_group(g, "fields", &fg));
  mb_error e = MB_SUCCESS;
  for (int f = 0; f < w->x.nfields && !e; f++) {
    mb_rows r = {m ? p->vstart : 0, m ? p->nvrows : 0, m ? m->fields[f].data : NULL, 0, 1};
    e = put_dataset(fg, w->x.fields[f].name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, w->x.nv,
                    w->x.fields[f].ncomp, &r, lerr);
  }
  H5Gclose(fg);
  MB_CALL(e);
  return MB_SUCCESS;
}

/* Group `face_fields` with one [nf, k] dataset per per-face field; this rank
 * writes its face rows. With a fan view (xdmf_triangles), also group
 * `xdmf_fan_fields`: each face field on the fan triangles, [T, k], rows from
 * sum(n - 2) over the earlier faces = idx_start - 2 fstart. Collective. */
static mb_error put_face_fields(hid_t g, const mb_wmesh *w, const mb_wpiece *p,
                                const mb_mesh *m, mb_error *lerr) {
  if (w->x.nface_fields == 0) return MB_SUCCESS;
  for (int fan = 0; fan < 2; fan++) {
    if (fan && w->x.fan_ntri == 0) break;
    hid_t fg;
    MB_CALL(make_group(g, fan ? "xdmf_fan_fields" : "face_fields", &fg));
    mb_error e = MB_SUCCESS;
    for (int f = 0; f < w->x.nface_fields && !e; f++) {
      const mb_xdmf_field *xf = &w->x.face_fields[f];
      double *buf = NULL;
      mb_rows r = {0, 0, NULL, 0, 0};
      if (m && !fan) r = (mb_rows){p->fstart, p->nfrows, m->face_fields[f].data, 0, 1};
      if (m && fan && *lerr == MB_SUCCESS) {
        int64_t nfan = p->nidx - 2 * p->nfrows;
        buf = malloc(sizeof *buf * (size_t)xf->ncomp * (size_t)nfan + 1);
        if (!buf) {
          *lerr = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
        } else {
          mb_xdmf_fill_fan_field(m, &m->face_fields[f], buf);
          r = (mb_rows){p->idx_start - 2 * p->fstart, nfan, buf, 0, 0};
        }
      }
      e = put_dataset(fg, xf->name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2,
                      fan ? w->x.fan_ntri : w->x.nf, xf->ncomp, &r, lerr);
      free(buf);
    }
    H5Gclose(fg);
    MB_CALL(e);
  }
  return MB_SUCCESS;
}

/* An attribute of n values (a 1-D array). */
static mb_error put_vec_attr(hid_t loc, const char *name, hid_t ft, hid_t mt, int n,
                             const void *values) {
  hsize_t dims[1] = {(hsize_t)n};
  hid_t sp = H5Screate_simple(1, dims, NULL);
  MB_CALL_H5(sp);
  hid_t a = H5Acreate2(loc, name, ft, sp, H5P_DEFAULT, H5P_DEFAULT);
  H5Sclose(sp);
  MB_CALL_H5(a);
  herr_t st = H5Awrite(a, mt, values);
  H5Aclose(a);
  MB_CALL_H5(st);
  return MB_SUCCESS;
}

/* Chunk of a grid field: up to 32 x 64 x 128 points (1 MiB of float32),
 * whole components. */
static void grid_chunk(const int64_t shape[3], int64_t ncomp, hsize_t chunk[4]) {
  const int64_t most[3] = {32, 64, 128};
  for (int a = 0; a < 3; a++) chunk[a] = (hsize_t)(shape[a] < most[a] ? shape[a] : most[a]);
  chunk[3] = (hsize_t)ncomp;
}

/* The datasets of a grid3d: group `fields`, one chunked dataset per field,
 * [nz, ny, nx] (or [nz, ny, nx, k]) of its dtype. The rank that holds the
 * grid writes it (independent transfer); the others take part in the
 * collective creation. */
static mb_error put_grid_datasets(hid_t g, const mb_wmesh *w, const mb_wpiece *p,
                                  const mb_mesh *m, mb_error *lerr) {
  MB_CALL(put_vec_attr(g, "shape", H5T_STD_I64LE, H5T_NATIVE_INT64, 3, w->x.shape));
  MB_CALL(put_vec_attr(g, "origin", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 3, w->x.origin));
  MB_CALL(put_vec_attr(g, "spacing", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 3, w->x.spacing));
  if (w->x.nfields == 0) return MB_SUCCESS;
  hid_t fg;
  MB_CALL(make_group(g, "fields", &fg));
  mb_error e = MB_SUCCESS;
  for (int f = 0; f < w->x.nfields && !e; f++) {
    const mb_xdmf_field *xf = &w->x.fields[f];
    const int rank = xf->ncomp > 1 ? 4 : 3, f32 = xf->dtype == MB_FLOAT32;
    hsize_t dims[4] = {(hsize_t)w->x.shape[0], (hsize_t)w->x.shape[1], (hsize_t)w->x.shape[2],
                       (hsize_t)xf->ncomp}, chunk[4];
    grid_chunk(w->x.shape, xf->ncomp, chunk);
    hid_t sp = H5Screate_simple(rank, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hid_t d = -1;
    if (sp >= 0 && dcpl >= 0 && H5Pset_chunk(dcpl, rank, chunk) >= 0 &&
        H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) >= 0 && H5Pset_obj_track_times(dcpl, 0) >= 0)
      d = H5Dcreate2(fg, xf->name, f32 ? H5T_IEEE_F32LE : H5T_IEEE_F64LE, sp, H5P_DEFAULT, dcpl,
                     H5P_DEFAULT);
    mb_h5_close_id(sp);
    mb_h5_close_id(dcpl);
    if (d < 0) {
      e = mb_error_set(MB_ERR_HDF5, __FILE__, __LINE__, __func__,
                       "cannot create dataset fields/%s of grid '%s'", xf->name, w->x.name);
      break;
    }
    if (m && *lerr == MB_SUCCESS) { /* this rank's block, by hyperslab */
      const mb_field *mf = &m->fields[f];
      hsize_t start[4] = {(hsize_t)p->glo[0], (hsize_t)p->glo[1], (hsize_t)p->glo[2], 0};
      hsize_t count[4] = {(hsize_t)p->gn[0], (hsize_t)p->gn[1], (hsize_t)p->gn[2],
                          (hsize_t)xf->ncomp};
      const herr_t st = mb_h5_block_transfer(d, f32 ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE, 1,
                                             rank, start, count, count,
                                             f32 ? (void *)mf->data32 : (void *)mf->data);
      if (st < 0)
        *lerr = mb_error_set(MB_ERR_HDF5, __FILE__, __LINE__, __func__,
                             "H5Dwrite of field '%s' of grid '%s' failed", xf->name, w->x.name);
    }
    if (H5Dclose(d) < 0)
      e = mb_error_set(MB_ERR_HDF5, __FILE__, __LINE__, __func__, "H5Dclose failed");
  }
  H5Gclose(fg);
  MB_CALL(e);
  return MB_SUCCESS;
}

/* Datasets of one mesh group; p and m are this rank's piece of the mesh and
 * its rows, or NULL where it holds none. Collective. */
static mb_error put_mesh_datasets(hid_t g, const mb_wmesh *w, const mb_wpiece *p,
                                  const mb_mesh *m, mb_error *lerr) {
  if (w->x.kind == MB_KIND_GRID3D) return put_grid_datasets(g, w, p, m, lerr);
  /* planar kinds: the x, y columns of the xyz rows */
  mb_rows r = {m ? p->vstart : 0, m ? p->nvrows : 0, m ? m->xyz : NULL, 3, 1};
  MB_CALL(put_dataset(g, "vertices", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, w->x.nv,
                      mb_coll_kind_vcols(w->x.kind), &r, lerr));
  if (w->x.triangles) {
    r = (mb_rows){m ? p->fstart : 0, m ? p->nfrows : 0, m ? m->face_indices : NULL, 0, 1};
    MB_CALL(put_dataset(g, "triangles", H5T_STD_I64LE, H5T_NATIVE_INT64, 2, w->x.nf, 3, &r,
                        lerr));
  } else {
    MB_CALL(put_polygon_datasets(g, w, p, m, lerr));
  }
  MB_CALL(put_fields(g, w, p, m, lerr));
  MB_CALL(put_face_fields(g, w, p, m, lerr));
  return MB_SUCCESS;
}

/* Group /meshes/<name> with its attributes (index, kind, then those of its
 * first piece) and datasets. Collective. */
mb_error mb_coll_put_mesh(hid_t meshes, const mb_wmesh *w, int64_t pos, const mb_wpiece *p,
                          const mb_mesh *m, mb_error *lerr) {
  hid_t g;
  MB_CALL(make_group(meshes, w->x.name, &g));
  const mb_wpiece *a = &w->p[0];
  mb_error e = put_attr(g, "index", H5T_STD_I64LE, H5T_NATIVE_INT64, &pos);
  if (!e) e = put_str_attr(g, "kind", mb_kind_name(w->x.kind));
  for (int k = 0; k < a->nattrs && !e; k++) e = put_str_attr(g, a->keys[k], a->values[k]);
  if (!e) e = put_mesh_datasets(g, w, p, m, lerr);
  H5Gclose(g);
  MB_CALL(e);
  return MB_SUCCESS;
}

/* The piece of mesh w that this rank holds, or NULL. */
static const mb_wpiece *held_piece(const mb_wmesh *w, int rank) {
  for (int k = 0; k < w->np; k++)
    if (w->p[k].rank == rank) return &w->p[k];
  return NULL;
}

/* The root attributes and the group /meshes (*meshes, to close). Collective. */
mb_error mb_coll_put_root(hid_t file, hid_t *meshes) {
  MB_CALL(put_str_attr(file, "format", MB_COLLECTION_FORMAT));
  int version = MB_COLLECTION_FORMAT_VERSION;
  MB_CALL(put_attr(file, "format_version", H5T_STD_I32LE, H5T_NATIVE_INT, &version));
  MB_CALL(make_group(file, "meshes", meshes));
  return MB_SUCCESS;
}

/* Root attributes, /meshes and every mesh, in the agreed order. Collective. */
mb_error mb_coll_put_contents(hid_t file, const mb_wset *w, const mb_held *h, mb_error *lerr) {
  hid_t meshes;
  MB_CALL(mb_coll_put_root(file, &meshes));
  mb_error e = MB_SUCCESS;
  for (int64_t i = 0; i < w->n && !e; i++) {
    const mb_wpiece *p = held_piece(&w->m[i], h->rank);
    const mb_mesh *m = !p ? NULL : p->whole ? h->local[p->local] : h->slabs[p->local].rows;
    e = mb_coll_put_mesh(meshes, &w->m[i], i, p, m, lerr);
  }
  H5Gclose(meshes);
  MB_CALL(e);
  return MB_SUCCESS;
}

/* Create tmp through MPI-IO over comm with collective metadata (on one rank
 * too: see write_h5 in mb_collection_write.c), no object times, file format
 * of HDF5 1.8. Collective. */
mb_error mb_coll_create_h5(MPI_Comm comm, const char *tmp, hid_t *out) {
  int rank = 0;
  MB_CALL_MPI(MPI_Comm_rank(comm, &rank));
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  MB_CALL_H5(fapl);
  if (H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL) < 0 ||
      H5Pset_all_coll_metadata_ops(fapl, 1) < 0 || H5Pset_coll_metadata_write(fapl, 1) < 0 ||
      H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0 ||
      H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V18) < 0) {
    H5Pclose(fapl);
    MB_FAIL(MB_ERR_HDF5, "cannot set up the MPI-IO file access for %s", tmp);
  }
  hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
  if (fcpl >= 0) H5Pset_obj_track_times(fcpl, 0);
  hid_t file = H5Fcreate(tmp, H5F_ACC_TRUNC, fcpl >= 0 ? fcpl : H5P_DEFAULT, fapl);
  mb_h5_close_id(fcpl);
  H5Pclose(fapl);
  MB_CHECK(file >= 0, MB_ERR_IO, "cannot create %s (parallel HDF5): %s", tmp,
           rank == 0 ? mb_create_reason(tmp) : "see rank 0");
  *out = file;
  return MB_SUCCESS;
}

