/* meshbatch: HDF5 collections of datasets (surface, triangulation2d,
 * polygons2d), parallel writer and independent reader (see mb_collection.h;
 * the layout is specified in docs/format.md). */
#include "mb_collection.h"
#include "mb_collection_private.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mb_mpi.h"
#include "mb_xdmf.h"

enum { MB_NAME_MAX = 256, MB_PATH_MAX = 4096 };

/* ------------------------------------------------------------ HDF5 helpers */

/* Silence HDF5's own error-stack printing for the duration of a call. */
typedef struct h5_quiet {
  H5E_auto2_t func;
  void *data;
} h5_quiet;

static h5_quiet h5_quiet_begin(void) {
  h5_quiet q = {NULL, NULL};
  H5Eget_auto2(H5E_DEFAULT, &q.func, &q.data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  return q;
}

static void h5_quiet_end(h5_quiet q) { H5Eset_auto2(H5E_DEFAULT, q.func, q.data); }

static void h5_close_id(hid_t id) {
  if (id < 0) return;
  switch (H5Iget_type(id)) {
  case H5I_DATASET: H5Dclose(id); break;
  case H5I_GROUP: H5Gclose(id); break;
  case H5I_ATTR: H5Aclose(id); break;
  case H5I_DATASPACE: H5Sclose(id); break;
  case H5I_DATATYPE: H5Tclose(id); break;
  case H5I_GENPROP_LST: H5Pclose(id); break;
  case H5I_FILE: H5Fclose(id); break;
  default: break;
  }
}

/* "[a,b]" for an error message. */
/* ------------------------------------------------------------ large transfers */

/* MPI-IO, under parallel HDF5, moves at most 2^31 - 1 bytes in one call, so
 * a dataset of 2 GiB or more must be read and written in pieces: slices
 * along the first (slowest) axis of at most this many bytes. Settable by
 * MESHBATCH_IO_PIECE_BYTES (tests use small pieces to reach every path). */
static size_t io_piece_bytes(void) {
  static size_t bytes = 0;
  if (!bytes) {
    const char *v = getenv("MESHBATCH_IO_PIECE_BYTES");
    long long b = v ? atoll(v) : 0;
    bytes = b > 0 ? (size_t)b : (size_t)1 << 30;
  }
  return bytes;
}

/* Read (write = 0) or write the block start[0..rank) + count[0..rank) of
 * dataset d from or into buf, whose memory is an array of mem_dims
 * (mem_dims[a] >= count[a]; the block lies at its origin), values of
 * memory type mt. Independent transfer, in slices of the first axis of at
 * most io_piece_bytes() (a single slice may be larger). Returns < 0 on
 * the first failing call. */
static herr_t h5_block_transfer(hid_t d, hid_t mt, int write, int rank, const hsize_t *start,
                                const hsize_t *count, const hsize_t *mem_dims, void *buf) {
  if (count[0] == 0) return 0;
  hsize_t slice = H5Tget_size(mt);
  for (int a = 1; a < rank; a++) slice *= count[a];
  hsize_t step = slice ? io_piece_bytes() / slice : count[0];
  if (step < 1) step = 1;
  hid_t fs = H5Dget_space(d), ms = H5Screate_simple(rank, mem_dims, NULL);
  herr_t st = fs >= 0 && ms >= 0 ? 0 : -1;
  for (hsize_t k = 0; st >= 0 && k < count[0]; k += step) {
    hsize_t fstart[4], mstart[4] = {0, 0, 0, 0}, n[4];
    for (int a = 0; a < rank; a++) {
      fstart[a] = start[a];
      n[a] = count[a];
    }
    fstart[0] += k;
    mstart[0] = k;
    n[0] = count[0] - k < step ? count[0] - k : step;
    st = H5Sselect_hyperslab(fs, H5S_SELECT_SET, fstart, NULL, n, NULL);
    if (st >= 0) st = H5Sselect_hyperslab(ms, H5S_SELECT_SET, mstart, NULL, n, NULL);
    if (st >= 0)
      st = write ? H5Dwrite(d, mt, ms, fs, H5P_DEFAULT, buf) : H5Dread(d, mt, ms, fs, H5P_DEFAULT, buf);
  }
  h5_close_id(fs);
  h5_close_id(ms);
  return st;
}

/* ------------------------------------------------------------ small helpers */

static const char *shape_str(int rank, const hsize_t *dims, char *buf, size_t len) {
  int k = snprintf(buf, len, "[");
  for (int i = 0; i < rank && k < (int)len; i++)
    k += snprintf(buf + k, len - (size_t)k, "%s%llu", i ? "," : "", (unsigned long long)dims[i]);
  if (k < (int)len) snprintf(buf + k, len - (size_t)k, "]");
  return buf;
}

/* --------------------------------------------------------- error agreement */

/* Agree on an error over comm: mb_agree (the code and message of the lowest
 * failing rank on every rank). Collective. */
static mb_error sync_error(MPI_Comm comm, mb_error local) {
  return mb_agree(comm, local); /* one error rule (src/mb_mpi.h) */
}

/* ------------------------------------------------------------ byte buffers */

typedef struct mb_buf {
  char *data;
  size_t len, cap;
  int oom;
} mb_buf;

static void buf_put(mb_buf *b, const void *p, size_t n) {
  if (b->oom) return;
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 1024;
    while (cap < b->len + n) cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) { b->oom = 1; return; }
    b->data = d;
    b->cap = cap;
  }
  memcpy(b->data + b->len, p, n);
  b->len += n;
}

static void buf_i64(mb_buf *b, int64_t v) { buf_put(b, &v, sizeof v); }

static void buf_str(mb_buf *b, const char *s) {
  int64_t n = (int64_t)strlen(s) + 1;
  buf_i64(b, n);
  buf_put(b, s, (size_t)n);
}

typedef struct mb_rd {
  const char *p, *end;
} mb_rd;

static int64_t rd_i64(mb_rd *r) {
  int64_t v = 0;
  if (r->p + sizeof v <= r->end) memcpy(&v, r->p, sizeof v);
  r->p += sizeof v;
  return v;
}

static double rd_f64(mb_rd *r) {
  double v = 0;
  if (r->p + sizeof v <= r->end) memcpy(&v, r->p, sizeof v);
  r->p += sizeof v;
  return v;
}

static const char *rd_str(mb_rd *r) {
  int64_t n = rd_i64(r);
  const char *s = r->p;
  r->p += n;
  return s;
}

/* ------------------------------------------------------------- mesh rows */

/* Rows [start, start + n) lie inside [0, total). */
static int rows_inside(int64_t start, int64_t n, int64_t total) {
  return start >= 0 && n >= 0 && start <= total - n;
}

/* A kind this build stores. */
static int kind_known(mb_kind k) {
  return k == MB_KIND_SURFACE || k == MB_KIND_TRIANGULATION2D || k == MB_KIND_POLYGONS2D ||
         k == MB_KIND_GRID3D;
}

/* Planar kinds store vertices as [N,2]. */
static int kind_planar(mb_kind k) {
  return k == MB_KIND_TRIANGULATION2D || k == MB_KIND_POLYGONS2D;
}

/* Columns of `vertices` in the file for a kind. */
static int kind_vcols(mb_kind k) { return kind_planar(k) ? 2 : 3; }

/* ----------------------------------------------------------- write: metadata */

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

/* Check a mesh or field name: non-empty, < 256 bytes, no '/', not "." or "..". */
static mb_error check_name(const char *what, const char *name, const char *mesh) {
  MB_CHECK(name && *name, MB_ERR_ARG, "mb_collection_write: %s of mesh '%s' is empty", what,
           mesh ? mesh : "");
  MB_CHECK(strlen(name) < MB_NAME_MAX, MB_ERR_ARG,
           "mb_collection_write: %s '%.40s...' is longer than %d bytes", what, name,
           MB_NAME_MAX - 1);
  MB_CHECK(!strchr(name, '/') && strcmp(name, ".") && strcmp(name, ".."), MB_ERR_ARG,
           "mb_collection_write: %s '%s' may not contain '/' nor be '.' or '..'", what, name);
  return MB_SUCCESS;
}

/* Check a list of fields of a mesh: names, components, data. */
static mb_error check_field_list(const mb_mesh *m, const char *what, int n, const mb_field *fd,
                                 int64_t rows) {
  for (int i = 0; i < n; i++) {
    MB_CALL(check_name(what, fd[i].name, m->name));
    MB_CHECK(fd[i].ncomp > 0, MB_ERR_ARG, "mesh '%s': %s '%s' has %d components", m->name,
             what, fd[i].name, fd[i].ncomp);
    MB_CHECK((fd[i].dtype == MB_FLOAT32 ? (const void *)fd[i].data32 : fd[i].data) || rows == 0,
             MB_ERR_ARG, "mesh '%s': %s '%s' has no data", m->name, what, fd[i].name);
    for (int j = 0; j < i; j++)
      MB_CHECK(strcmp(fd[i].name, fd[j].name), MB_ERR_ARG, "mesh '%s': two %ss named '%s'",
               m->name, what, fd[i].name);
  }
  return MB_SUCCESS;
}

/* Check the name, kind, field names and attributes of a mesh (or slab rows). */
static mb_error check_meta(const mb_mesh *m) {
  MB_CHECK(m && m->name, MB_ERR_ARG, "mb_collection_write: NULL mesh or mesh name");
  MB_CALL(check_name("mesh name", m->name, m->name));
  MB_CHECK(kind_known(m->kind), MB_ERR_ARG,
           "mesh '%s': kind %d (%s) cannot be stored (surface, triangulation2d, polygons2d or "
           "grid3d)",
           m->name, (int)m->kind, mb_kind_name(m->kind));
  MB_CALL(check_field_list(m, "field name", m->nfields, m->fields, m->nv));
  MB_CALL(check_field_list(m, "face field name", m->nface_fields, m->face_fields, m->nf));
  for (int i = 0; i < m->attrs.n; i++) {
    MB_CHECK(m->attrs.keys[i] && *m->attrs.keys[i] && m->attrs.values[i], MB_ERR_ARG,
             "mesh '%s': attribute %d has an empty key or a NULL value", m->name, i);
    MB_CHECK(strcmp(m->attrs.keys[i], "index") && strcmp(m->attrs.keys[i], "kind") &&
                 (m->kind != MB_KIND_GRID3D || (strcmp(m->attrs.keys[i], "shape") &&
                                                strcmp(m->attrs.keys[i], "origin") &&
                                                strcmp(m->attrs.keys[i], "spacing"))),
             MB_ERR_ARG, "mesh '%s': attribute key '%s' is reserved by the collection format",
             m->name, m->attrs.keys[i]);
  }
  return MB_SUCCESS;
}

/* The rules of the kind on some rows of a mesh: planar kinds have z = 0 in
 * every vertex row (only x, y are stored), a triangulation2d has only
 * triangles. v0, f0: whole-mesh rows of the first vertex and face. */
static mb_error check_kind_rows(const mb_mesh *m, int64_t v0, int64_t f0) {
  if (kind_planar(m->kind))
    for (int64_t i = 0; i < m->nv; i++)
      MB_CHECK(m->xyz[3 * i + 2] == 0.0, MB_ERR_FORMAT,
               "%s: vertex %lld has z = %g, a %s must have z = 0", m->name,
               (long long)(v0 + i), m->xyz[3 * i + 2], mb_kind_name(m->kind));
  if (m->kind == MB_KIND_TRIANGULATION2D)
    for (int64_t f = 0; f < m->nf; f++)
      MB_CHECK(m->face_offsets[f + 1] - m->face_offsets[f] == 3, MB_ERR_FORMAT,
               "%s: face %lld has %lld vertices, a triangulation2d has only triangles",
               m->name, (long long)(f0 + f),
               (long long)(m->face_offsets[f + 1] - m->face_offsets[f]));
  return MB_SUCCESS;
}

/* Check one local mesh before anything is written. Not collective. */
static mb_error check_local_mesh(const mb_mesh *m) {
  MB_CALL(check_meta(m));
  MB_CALL(mb_mesh_validate(m, m->name));
  MB_CALL(check_kind_rows(m, 0, 0));
  return MB_SUCCESS;
}

/* Check one local slab: whole-mesh sizes, its rows inside them, its data
 * (indices are global). Not collective. */
static mb_error check_slab(const mb_mesh_slab *s) {
  const mb_mesh *m = s->rows;
  MB_CALL(check_meta(m));
  if (m->kind == MB_KIND_GRID3D) { /* a block of the grid */
    for (int a = 0; a < 3; a++)
      MB_CHECK(s->grid_lo[a] >= 0 && m->shape[a] >= 1 &&
                   s->grid_lo[a] + m->shape[a] <= s->grid_shape[a],
               MB_ERR_ARG, "mb_collection_write_slabs: block of grid '%s' outside its shape",
               m->name);
    MB_CHECK(s->nv == s->grid_shape[0] * s->grid_shape[1] * s->grid_shape[2], MB_ERR_ARG,
             "mb_collection_write_slabs: grid '%s': nv is not the product of the shape", m->name);
    MB_CALL(mb_mesh_validate(m, m->name));
    return MB_SUCCESS;
  }
  MB_CHECK(s->nv > 0 && s->nf > 0, MB_ERR_ARG,
           "mb_collection_write_slabs: mesh '%s' has %lld vertices and %lld faces (need > 0)",
           m->name, (long long)s->nv, (long long)s->nf);
  MB_CHECK(rows_inside(s->vertex_start, m->nv, s->nv), MB_ERR_ARG,
           "mb_collection_write_slabs: slab of mesh '%s': vertex rows [%lld, %lld) outside "
           "[0, %lld)", m->name, (long long)s->vertex_start,
           (long long)(s->vertex_start + m->nv), (long long)s->nv);
  MB_CHECK(rows_inside(s->face_start, m->nf, s->nf), MB_ERR_ARG,
           "mb_collection_write_slabs: slab of mesh '%s': face rows [%lld, %lld) outside "
           "[0, %lld)", m->name, (long long)s->face_start, (long long)(s->face_start + m->nf),
           (long long)s->nf);
  MB_CALL(mb_mesh_validate_rows(m, s->vertex_start, s->face_start, s->nv, m->name));
  MB_CALL(check_kind_rows(m, s->vertex_start, s->face_start));
  return MB_SUCCESS;
}

/* Serialize the metadata of one piece (a whole mesh is passed as a slab
 * covering every row). */
static void pack_piece(mb_buf *b, const mb_mesh_slab *s, int whole, int local) {
  const mb_mesh *m = s->rows;
  buf_str(b, m->name);
  buf_i64(b, m->kind);
  buf_i64(b, m->index);
  buf_i64(b, s->nv);
  buf_i64(b, s->nf);
  buf_i64(b, s->vertex_start);
  buf_i64(b, m->nv);
  buf_i64(b, s->face_start);
  buf_i64(b, m->nf);
  buf_i64(b, m->face_offsets[m->nf]);
  buf_i64(b, mb_xdmf_mixed_length(m));
  buf_i64(b, mb_mesh_is_triangles(m));
  buf_i64(b, mb_xdmf_fan_count(m) > 0); /* a face of >= 5 vertices */
  buf_i64(b, whole);
  buf_i64(b, local);
  buf_i64(b, m->nfields);
  for (int f = 0; f < m->nfields; f++) {
    buf_str(b, m->fields[f].name);
    buf_i64(b, m->fields[f].ncomp);
    buf_i64(b, m->fields[f].dtype);
  }
  for (int a = 0; a < 3; a++) { /* a whole grid is one block */
    const int block = m->kind == MB_KIND_GRID3D && !whole;
    buf_i64(b, block ? s->grid_shape[a] : m->shape[a]);
    buf_put(b, &m->origin[a], sizeof(double));
    buf_put(b, &m->spacing[a], sizeof(double));
    buf_i64(b, block ? s->grid_lo[a] : 0);
    buf_i64(b, m->shape[a]);
  }
  buf_i64(b, m->nface_fields);
  for (int f = 0; f < m->nface_fields; f++) {
    buf_str(b, m->face_fields[f].name);
    buf_i64(b, m->face_fields[f].ncomp);
    buf_i64(b, MB_FLOAT64);
  }
  buf_i64(b, m->attrs.n);
  for (int a = 0; a < m->attrs.n; a++) {
    buf_str(b, m->attrs.keys[a]);
    buf_str(b, m->attrs.values[a]);
  }
}

/* Check and serialize this rank's pieces (count, then one record each). */
static mb_error pack_local(const mb_held *h, mb_buf *b) {
  buf_i64(b, (int64_t)h->nlocal + h->nslabs);
  for (int i = 0; i < h->nlocal; i++) {
    mb_mesh *m = h->local[i];
    MB_CALL(check_local_mesh(m));
    mb_mesh_slab whole = {.rows = m, .nv = m->nv, .nf = m->nf};
    pack_piece(b, &whole, 1, i);
  }
  for (int i = 0; i < h->nslabs; i++) {
    MB_CALL(check_slab(&h->slabs[i]));
    pack_piece(b, &h->slabs[i], 0, i);
  }
  MB_CHECK(!b->oom, MB_ERR_MEMORY, "out of memory serializing mesh metadata");
  return MB_SUCCESS;
}

/* The gathered metadata of all ranks (owns the arrays; strings point into buf). */
typedef struct mb_wset {
  char *buf;
  int64_t n, np;       /* meshes, pieces */
  mb_wmesh *m;
  mb_wpiece *p;
  mb_xdmf_field *fields;
  const char **strs;
} mb_wset;

static void wset_free(mb_wset *w) {
  free(w->buf);
  free(w->m);
  free(w->p);
  free(w->fields);
  free(w->strs);
  memset(w, 0, sizeof *w);
}

/* Parse one piece record; fields and attribute strings go to the next free slots. */
static void unpack_piece(mb_rd *r, mb_wpiece *p, mb_xdmf_field **fields, const char ***strs) {
  p->name = rd_str(r);
  p->kind = (mb_kind)rd_i64(r);
  p->index = rd_i64(r);
  p->nv = rd_i64(r);
  p->nf = rd_i64(r);
  p->vstart = rd_i64(r);
  p->nvrows = rd_i64(r);
  p->fstart = rd_i64(r);
  p->nfrows = rd_i64(r);
  p->nidx = rd_i64(r);
  p->mixed_len = rd_i64(r);
  p->tri = (int)rd_i64(r);
  p->big = (int)rd_i64(r);
  p->whole = (int)rd_i64(r);
  p->local = (int)rd_i64(r);
  p->nfields = (int)rd_i64(r);
  p->fields = *fields;
  for (int f = 0; f < p->nfields; f++) {
    (*fields)[f].name = rd_str(r);
    (*fields)[f].ncomp = rd_i64(r);
    (*fields)[f].dtype = rd_i64(r);
  }
  *fields += p->nfields;
  for (int a = 0; a < 3; a++) {
    p->shape[a] = rd_i64(r);
    p->origin[a] = rd_f64(r);
    p->spacing[a] = rd_f64(r);
    p->glo[a] = rd_i64(r);
    p->gn[a] = rd_i64(r);
  }
  p->nface_fields = (int)rd_i64(r);
  p->face_fields = *fields;
  for (int f = 0; f < p->nface_fields; f++) {
    (*fields)[f].name = rd_str(r);
    (*fields)[f].ncomp = rd_i64(r);
    (*fields)[f].dtype = rd_i64(r);
  }
  *fields += p->nface_fields;
  p->nattrs = (int)rd_i64(r);
  p->keys = *strs;
  p->values = *strs + p->nattrs;
  for (int a = 0; a < p->nattrs; a++) {
    (*strs)[a] = rd_str(r);
    (*strs)[p->nattrs + a] = rd_str(r);
  }
  *strs += 2 * p->nattrs;
}

/* Count pieces, fields and attributes in the gathered buffer (upper bounds). */
static void count_records(const char *buf, size_t len, const int *counts, int nranks,
                          int64_t *npiece, int64_t *nfield, int64_t *nstr) {
  *npiece = 0;
  const char *p = buf;
  for (int r = 0; r < nranks; r++) {
    mb_rd rd = {p, p + counts[r]};
    *npiece += rd_i64(&rd);
    p += counts[r];
  }
  /* fields and strings: bounded by the bytes (each takes >= 16 bytes) */
  *nfield = (int64_t)(len / 16) + 1;
  *nstr = (int64_t)(len / 8) + 1;
}

/* All-gather the packed metadata of every rank into w->buf: rank r's bytes
 * are counts[r] bytes at displs[r]. Collective. */
static mb_error gather_bytes(MPI_Comm comm, const mb_buf *local, int nranks, int *counts,
                             int *displs, mb_wset *w) {
  MB_CHECK(local->len < INT_MAX, MB_ERR_ARG, "mesh metadata too large (%zu bytes)", local->len);
  int mine = (int)local->len;
  MB_CALL_MPI_AGREED(comm, MPI_Allgather(&mine, 1, MPI_INT, counts, 1, MPI_INT, comm));
  long long total = 0;
  for (int r = 0; r < nranks; r++) { displs[r] = (int)total; total += counts[r]; }
  MB_CHECK(total < INT_MAX, MB_ERR_ARG, "collection metadata too large (%lld bytes)", total);
  w->buf = malloc((size_t)total + 1);
  MB_CHECK(w->buf, MB_ERR_MEMORY, "out of memory");
  MB_CALL_MPI(MPI_Allgatherv(local->data, mine, MPI_BYTE, w->buf, counts, displs, MPI_BYTE,
                             comm));
  return MB_SUCCESS;
}

/* Parse every rank's records into w->p, recording the holder rank. */
static mb_error unpack_all(mb_wset *w, const int *counts, const int *displs, int nranks) {
  size_t total = (size_t)displs[nranks - 1] + (size_t)counts[nranks - 1];
  int64_t nf, ns;
  count_records(w->buf, total, counts, nranks, &w->np, &nf, &ns);
  w->p = calloc((size_t)w->np + 1, sizeof *w->p);
  w->m = calloc((size_t)w->np + 1, sizeof *w->m);
  w->fields = calloc((size_t)nf, sizeof *w->fields);
  w->strs = calloc((size_t)ns, sizeof *w->strs);
  MB_CHECK(w->p && w->m && w->fields && w->strs, MB_ERR_MEMORY, "out of memory");
  mb_xdmf_field *fp = w->fields;
  const char **sp = w->strs;
  int64_t k = 0;
  for (int r = 0; r < nranks; r++) {
    mb_rd rd = {w->buf + displs[r], w->buf + displs[r] + counts[r]};
    int64_t n = rd_i64(&rd);
    for (int64_t i = 0; i < n; i++, k++) {
      unpack_piece(&rd, &w->p[k], &fp, &sp);
      w->p[k].rank = r;
    }
  }
  return MB_SUCCESS;
}

static int cmp_i64(int64_t a, int64_t b) { return a < b ? -1 : a > b; }

/* Pieces by (name, vstart, fstart, rank): a mesh's pieces are adjacent and
 * the first one gives the attributes. */
static int cmp_piece(const void *a, const void *b) {
  const mb_wpiece *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  if (!c) c = cmp_i64(x->vstart, y->vstart);
  if (!c) c = cmp_i64(x->fstart, y->fstart);
  return c ? c : cmp_i64(x->rank, y->rank);
}

static int cmp_piece_rank(const void *a, const void *b) {
  return cmp_i64((*(const mb_wpiece *const *)a)->rank, (*(const mb_wpiece *const *)b)->rank);
}

static int cmp_piece_face(const void *a, const void *b) {
  const mb_wpiece *x = *(const mb_wpiece *const *)a, *y = *(const mb_wpiece *const *)b;
  int c = cmp_i64(x->fstart, y->fstart);
  return c ? c : cmp_i64(x->nfrows, y->nfrows);
}

static int cmp_wmesh(const void *a, const void *b) {
  const mb_wmesh *x = a, *y = b;
  if (x->index != y->index) return x->index < y->index ? -1 : 1;
  return strcmp(x->x.name, y->x.name);
}

/* Two pieces of one mesh agree on its kind, sizes, index and fields. */
static mb_error check_agree(const mb_wpiece *a, const mb_wpiece *b) {
  const char *what = a->kind != b->kind       ? "the kind"
                     : a->nv != b->nv         ? "the number of vertices"
                     : a->nf != b->nf         ? "the number of faces"
                     : a->index != b->index   ? "the mesh index"
                     : a->nfields != b->nfields ? "the number of fields"
                     : a->nface_fields != b->nface_fields ? "the number of face fields"
                                              : NULL;
  for (int f = 0; !what && f < a->nfields; f++)
    if (strcmp(a->fields[f].name, b->fields[f].name) || a->fields[f].ncomp != b->fields[f].ncomp)
      what = "the field names or components";
  for (int f = 0; !what && f < a->nface_fields; f++)
    if (strcmp(a->face_fields[f].name, b->face_fields[f].name) ||
        a->face_fields[f].ncomp != b->face_fields[f].ncomp)
      what = "the face field names or components";
  MB_CHECK(!what, MB_ERR_ARG,
           "mb_collection_write_slabs: slabs of mesh '%s' on ranks %d and %d disagree on %s",
           a->name, a->rank, b->rank, what);
  return MB_SUCCESS;
}

/* One step of a tiling check: a piece of n > 0 rows from start must begin
 * where the previous one ended (*next). Pieces of no rows are skipped. */
static mb_error tile_step(const char *mesh, const char *what, int64_t start, int64_t n,
                          int64_t *next) {
  if (n == 0) return MB_SUCCESS;
  MB_CHECK(start == *next, MB_ERR_ARG,
           "mb_collection_write_slabs: slabs of mesh '%s' %s at %s row %lld", mesh,
           start < *next ? "overlap" : "leave a gap", what,
           (long long)(start < *next ? start : *next));
  *next = start + n;
  return MB_SUCCESS;
}

/* The last step of a tiling check: the pieces covered all `total` rows. */
static mb_error tile_end(const char *mesh, const char *what, int64_t next, int64_t total) {
  MB_CHECK(next == total, MB_ERR_ARG,
           "mb_collection_write_slabs: slabs of mesh '%s' leave a gap at %s row %lld", mesh,
           what, (long long)next);
  return MB_SUCCESS;
}

/* The faces of a mesh's pieces (in tmp, sorted here by face_start) tile
 * [0, nf); set each piece's first rows of face_indices and xdmf_mixed (prefix
 * sums in face order). */
static mb_error tile_faces(mb_wpiece **tmp, int n) {
  qsort(tmp, (size_t)n, sizeof *tmp, cmp_piece_face);
  int64_t next = 0, idx = 0, mixed = 0;
  for (int k = 0; k < n; k++) {
    MB_CALL(tile_step(tmp[k]->name, "face", tmp[k]->fstart, tmp[k]->nfrows, &next));
    tmp[k]->idx_start = idx;
    tmp[k]->mixed_start = mixed;
    idx += tmp[k]->nidx;
    mixed += tmp[k]->mixed_len;
  }
  MB_CALL(tile_end(tmp[0]->name, "face", next, tmp[0]->nf));
  return MB_SUCCESS;
}

/* Check the n pieces of one mesh (sorted by cmp_piece; tmp is scratch): a
 * whole mesh stands alone; slabs agree, come from different ranks and tile
 * the vertex and face rows exactly. Sets the pieces' offsets. */
static mb_error check_group(mb_wpiece *p, int n, mb_wpiece **tmp) {
  for (int k = 0; k < n; k++)
    MB_CHECK(!p[k].whole || n == 1, MB_ERR_ARG, "mb_collection_write: duplicate mesh name '%s'",
             p[0].name);
  for (int k = 1; k < n; k++) MB_CALL(check_agree(&p[0], &p[k]));
  for (int k = 0; k < n; k++) tmp[k] = &p[k];
  qsort(tmp, (size_t)n, sizeof *tmp, cmp_piece_rank);
  for (int k = 1; k < n; k++)
    MB_CHECK(tmp[k]->rank != tmp[k - 1]->rank, MB_ERR_ARG,
             "mb_collection_write_slabs: rank %d holds two slabs of mesh '%s'", tmp[k]->rank,
             p[0].name);
  if (p[0].kind == MB_KIND_GRID3D) { /* blocks inside the grid, their volumes its points */
    int64_t points = 0;
    for (int k = 0; k < n; k++) {
      for (int a = 0; a < 3; a++)
        MB_CHECK(p[k].shape[a] == p[0].shape[a], MB_ERR_ARG,
                 "mb_collection_write_slabs: blocks of grid '%s' disagree on its shape",
                 p[0].name);
      points += p[k].gn[0] * p[k].gn[1] * p[k].gn[2];
    }
    MB_CHECK(points == p[0].nv, MB_ERR_ARG,
             "mb_collection_write_slabs: the blocks of grid '%s' hold %lld points, the grid %lld",
             p[0].name, (long long)points, (long long)p[0].nv);
    return MB_SUCCESS;
  }
  int64_t next = 0;
  for (int k = 0; k < n; k++)
    MB_CALL(tile_step(p[0].name, "vertex", p[k].vstart, p[k].nvrows, &next));
  MB_CALL(tile_end(p[0].name, "vertex", next, p[0].nv));
  MB_CALL(tile_faces(tmp, n));
  return MB_SUCCESS;
}

/* The whole mesh described by its n checked pieces. Stored as `triangles`:
 * a triangulation2d always, a polygons2d never, a surface if every piece is
 * of triangles. xdmf_triangles only if some piece has a face of >= 5
 * vertices, and then it holds sum(n - 2) = nidx - 2 nf rows. */
static void make_mesh(mb_wpiece *p, int n, mb_wmesh *w) {
  int tri = 1, big = 0;
  int64_t nidx = 0, mixed = 0;
  for (int k = 0; k < n; k++) {
    tri &= p[k].tri;
    big |= p[k].big;
    nidx += p[k].nidx;
    mixed += p[k].mixed_len;
  }
  if (p[0].kind == MB_KIND_TRIANGULATION2D) tri = 1; /* checked by check_kind_rows */
  if (p[0].kind == MB_KIND_POLYGONS2D) tri = 0;
  w->x.name = p[0].name;
  w->x.kind = p[0].kind;
  w->x.nv = p[0].nv;
  w->x.nf = p[0].nf;
  w->x.triangles = tri;
  w->x.mixed_len = tri ? 0 : mixed;
  w->x.fan_ntri = tri || !big ? 0 : nidx - 2 * p[0].nf;
  w->x.nfields = p[0].nfields;
  w->x.fields = p[0].fields;
  w->x.nface_fields = p[0].nface_fields;
  w->x.face_fields = p[0].face_fields;
  for (int a = 0; a < 3; a++) {
    w->x.shape[a] = p[0].shape[a];
    w->x.origin[a] = p[0].origin[a];
    w->x.spacing[a] = p[0].spacing[a];
  }
  w->index = p[0].index;
  w->nidx = nidx;
  w->p = p;
  w->np = n;
}

/* Group the pieces into meshes, check every group and sort the meshes by
 * (index, name). Identical result (and error) on every rank. */
static mb_error build_meshes(mb_wset *w) {
  qsort(w->p, (size_t)w->np, sizeof *w->p, cmp_piece);
  mb_wpiece **tmp;
  MB_CALLOC(tmp, w->np);
  mb_error e = MB_SUCCESS;
  w->n = 0;
  for (int64_t a = 0, b; a < w->np && !e; a = b) {
    for (b = a + 1; b < w->np && !strcmp(w->p[b].name, w->p[a].name); b++) continue;
    e = check_group(&w->p[a], (int)(b - a), tmp);
    if (!e) make_mesh(&w->p[a], (int)(b - a), &w->m[w->n++]);
  }
  free(tmp);
  MB_CALL(e);
  qsort(w->m, (size_t)w->n, sizeof *w->m, cmp_wmesh);
  return MB_SUCCESS;
}

/* Gather the metadata of every rank's pieces, group them into meshes sorted
 * by (index, name) and check them. Collective; identical result on every rank. */
static mb_error gather_meshes(MPI_Comm comm, const mb_buf *local, mb_wset *w) {
  int nranks;
  MB_CALL_MPI(MPI_Comm_size(comm, &nranks));
  int *counts, *displs;
  MB_CALLOC(counts, nranks);
  displs = calloc((size_t)nranks, sizeof *displs);
  if (!displs) { free(counts); MB_FAIL(MB_ERR_MEMORY, "out of memory"); }
  mb_error e = gather_bytes(comm, local, nranks, counts, displs, w);
  if (!e) e = unpack_all(w, counts, displs, nranks);
  free(counts);
  free(displs);
  MB_CALL(e);
  MB_CALL(build_meshes(w));
  return MB_SUCCESS;
}

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

/* Raw writes handed to a thread (mb_collection_writer, below): while the
 * writer puts a mesh, the rows of a contiguous dataset whose file bytes
 * are the mesh's own memory (same type, same row length) are not written
 * through HDF5 but recorded as (offset in the file, bytes) from
 * H5Dget_offset, and the writer's thread writes them with pwrite while
 * the main thread goes on reading the next mesh (HDF5 itself is not
 * thread-safe). HDF5 has allocated their space when it created them
 * (early allocation, the MPI-IO driver's rule), so no metadata changes. */
typedef struct raw_job {
  haddr_t offset;
  const char *buf;
  size_t bytes;
} raw_job;

typedef struct raw_batch {
  mb_mesh *mesh;             /* owned: freed once its jobs are written */
  raw_job *jobs;
  int njobs, cap;
  struct raw_batch *next;
} raw_batch;

/* The batch put_mesh fills, NULL elsewhere. Used only by the thread that
 * makes HDF5 calls (the writer's caller). */
static raw_batch *raw_collect;

/* Record rows r of dataset d for the writer's thread; 0 where they must go
 * through HDF5 (not contiguous or not allocated, another memory type or
 * row length, out of memory). */
static int defer_rows(hid_t d, hid_t mt, int rank, int64_t d1, const mb_rows *r) {
  if (r->mcols && r->mcols != d1) return 0;
  const haddr_t off = H5Dget_offset(d);
  if (off == HADDR_UNDEF) return 0;
  hid_t ft = H5Dget_type(d);
  const int same = ft >= 0 && H5Tequal(ft, mt) > 0;
  h5_close_id(ft);
  raw_batch *b = raw_collect;
  if (!same) return 0;
  if (b->njobs == b->cap) {
    const int cap = b->cap ? 2 * b->cap : 8;
    raw_job *j = realloc(b->jobs, sizeof *j * (size_t)cap);
    if (!j) return 0;
    b->jobs = j;
    b->cap = cap;
  }
  const size_t row = H5Tget_size(mt) * (size_t)(rank == 2 ? d1 : 1);
  b->jobs[b->njobs++] = (raw_job){off + (haddr_t)r->start * row, r->buf, row * (size_t)r->n};
  return 1;
}

/* Write rows r of dataset d ([d0] if rank 1, [d0, d1] if rank 2) by hyperslab
 * (rows of r->mcols values in memory, 0: d1). Independent transfer, in
 * pieces below MPI-IO's 2 GiB limit; or recorded for the writer's thread. */
static herr_t write_rows(hid_t d, hid_t mt, int rank, int64_t d1, const mb_rows *r) {
  if (raw_collect && r->in_mesh && defer_rows(d, mt, rank, d1, r)) return 0;
  const hsize_t start[2] = {(hsize_t)r->start, 0}, count[2] = {(hsize_t)r->n, (hsize_t)d1};
  const hsize_t mem[2] = {(hsize_t)r->n, (hsize_t)(r->mcols ? r->mcols : d1)};
  return h5_block_transfer(d, mt, 1, rank, start, count, mem, (void *)r->buf);
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
    h5_close_id(sp);
    h5_close_id(dcpl);
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
      const herr_t st = h5_block_transfer(d, f32 ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE, 1, rank,
                                          start, count, count,
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
                      kind_vcols(w->x.kind), &r, lerr));
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
static mb_error put_mesh(hid_t meshes, const mb_wmesh *w, int64_t pos, const mb_wpiece *p,
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
static mb_error put_root(hid_t file, hid_t *meshes) {
  MB_CALL(put_str_attr(file, "format", MB_COLLECTION_FORMAT));
  int version = MB_COLLECTION_FORMAT_VERSION;
  MB_CALL(put_attr(file, "format_version", H5T_STD_I32LE, H5T_NATIVE_INT, &version));
  MB_CALL(make_group(file, "meshes", meshes));
  return MB_SUCCESS;
}

/* Root attributes, /meshes and every mesh, in the agreed order. Collective. */
static mb_error put_contents(hid_t file, const mb_wset *w, const mb_held *h, mb_error *lerr) {
  hid_t meshes;
  MB_CALL(put_root(file, &meshes));
  mb_error e = MB_SUCCESS;
  for (int64_t i = 0; i < w->n && !e; i++) {
    const mb_wpiece *p = held_piece(&w->m[i], h->rank);
    const mb_mesh *m = !p ? NULL : p->whole ? h->local[p->local] : h->slabs[p->local].rows;
    e = put_mesh(meshes, &w->m[i], i, p, m, lerr);
  }
  H5Gclose(meshes);
  MB_CALL(e);
  return MB_SUCCESS;
}

/* Bytes of the arrays the file will hold (every piece of every mesh):
 * positions, faces and their offsets, the XDMF connectivity, and every
 * field, at 8 bytes a value (float32 fields counted at 8: a bound). */
static double estimated_bytes(const mb_wset *w) {
  double b = 0;
  for (int64_t k = 0; k < w->np; k++) {
    const mb_wpiece *p = &w->p[k];
    double fv = 0, ff = 0;
    for (int f = 0; f < p->nfields; f++) fv += p->fields[f].ncomp;
    for (int f = 0; f < p->nface_fields; f++) ff += p->face_fields[f].ncomp;
    const double rows = p->kind == MB_KIND_GRID3D ? (double)p->gn[0] * p->gn[1] * p->gn[2]
                                                  : (double)p->nvrows;
    b += 8.0 * (rows * (3 + fv) + (double)p->nfrows * (1 + ff) + (double)p->nidx +
                (double)p->mixed_len);
  }
  return b;
}

/* The folder of path into dir[len]: "." for a bare name, "/" for "/x". */
static void folder_of(const char *path, char *dir, size_t len) {
  snprintf(dir, len, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) *(slash == dir ? slash + 1 : slash) = '\0';
  else snprintf(dir, len, ".");
}

/* Bytes free to this user in the folder of path (statvfs), -1 where it
 * cannot tell. */
static double free_bytes(const char *path) {
  char dir[MB_PATH_MAX];
  folder_of(path, dir, sizeof dir);
  struct statvfs v;
  return statvfs(dir, &v) == 0 ? (double)v.f_bavail * (double)v.f_frsize : -1;
}

/* Refuse to start a file the folder has no room for (statvfs; where it
 * cannot tell, go on): a clear error instead of a failed write. */
static mb_error check_space(const char *tmp, double need) {
  char dir[MB_PATH_MAX];
  folder_of(tmp, dir, sizeof dir);
  const double avail = free_bytes(tmp);
  if (avail < 0) return MB_SUCCESS;
  MB_CHECK(avail >= need, MB_ERR_IO,
           "no room for the output in %s: it needs about %.1f MB, %.1f MB are free (the disk "
           "or quota is full); nothing was written", dir, need / 1e6, avail / 1e6);
  return MB_SUCCESS;
}

/* Create tmp through MPI-IO over comm with collective metadata (on one rank
 * too: see write_h5), no object times, file format of HDF5 1.8. Collective. */
static mb_error create_h5(MPI_Comm comm, const char *tmp, hid_t *out) {
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
  h5_close_id(fcpl);
  H5Pclose(fapl);
  MB_CHECK(file >= 0, MB_ERR_IO, "cannot create %s (parallel HDF5): %s", tmp,
           rank == 0 ? mb_create_reason(tmp) : "see rank 0");
  *out = file;
  return MB_SUCCESS;
}

/* Create tmp through MPI-IO with collective metadata, write everything and
 * close. Returns the collective outcome; local raw-data failures in *lerr.
 * MPI-IO on one rank too: it writes at pwrite's speed there, and under sec2
 * HDF5 places fractal-heap blocks (dense attributes and links) elsewhere:
 * other bytes (docs/benchmarks.md, "One rank: MPI-IO or sec2"). */
static mb_error write_h5(MPI_Comm comm, const char *tmp, const mb_wset *w, const mb_held *h,
                         int durable, mb_error *lerr) {
  int rank = 0;
  MB_CALL_MPI(MPI_Comm_rank(comm, &rank));
  MB_CALL(mb_agree(comm, rank == 0 ? check_space(tmp, estimated_bytes(w)) : MB_SUCCESS));
  hid_t file;
  MB_CALL(create_h5(comm, tmp, &file));
  mb_error e = put_contents(file, w, h, lerr);
  /* durable: every rank's writes to the disk (MPI_File_sync, collective) */
  if (!e && durable && H5Fflush(file, H5F_SCOPE_GLOBAL) < 0)
    e = mb_error_set(MB_ERR_IO, __FILE__, __LINE__, __func__, "cannot sync %s to the disk", tmp);
  if (H5Fclose(file) < 0 && !e)
    e = mb_error_set(MB_ERR_HDF5, __FILE__, __LINE__, __func__, "H5Fclose(%s) failed", tmp);
  MB_CALL(e);
  return MB_SUCCESS;
}


/* ------------------------------------------------------ write: publishing */

/* path without a trailing ".h5" (the XDMF stem). */
size_t mb_collection_stem_length(const char *path) {
  const size_t n = strlen(path);
  return n > 3 && !strcmp(path + n - 3, ".h5") ? n - 3 : n;
}

static void xdmf_stem(const char *path, char *stem, size_t len) {
  snprintf(stem, len, "%.*s", (int)mb_collection_stem_length(path), path);
}

/* Remove the temporary files of the first n entries of tmps; free them all. */
static void drop_tmps(char **tmps, int64_t n, int64_t total) {
  for (int64_t i = 0; i < total; i++) {
    if (i < n && tmps[i]) unlink(tmps[i]);
    free(tmps[i]);
  }
  free(tmps);
}

/* Final names of the XDMF files: [0] the collection, [1 + i] mesh i. */
static char *xdmf_name(const char *stem, const char *mesh, const char *suffix) {
  size_t len = strlen(stem) + (mesh ? strlen(mesh) + 1 : 0) + strlen(suffix) + 8;
  char *s = malloc(len);
  if (s) snprintf(s, len, "%s%s%s.xdmf%s", stem, mesh ? "." : "", mesh ? mesh : "", suffix);
  return s;
}

/* Write every XDMF file under a temporary name (tmps[i]). Rank 0 only. */
static mb_error write_xdmf_tmps(const char *stem, const char *h5name, const char *suffix,
                                const mb_wset *w, char **tmps, mb_xdmf_mesh *xm) {
  for (int64_t i = 0; i < w->n; i++) xm[i] = w->m[i].x;
  for (int64_t i = 0; i <= w->n; i++) {
    tmps[i] = xdmf_name(stem, i ? xm[i - 1].name : NULL, suffix);
    MB_CHECK(tmps[i], MB_ERR_MEMORY, "out of memory");
    if (i == 0)
      MB_CALL(mb_xdmf_write_collection(tmps[0], h5name, w->n, xm));
    else
      MB_CALL(mb_xdmf_write_mesh(tmps[i], h5name, &xm[i - 1]));
  }
  return MB_SUCCESS;
}

/* Swap two names in one step (Linux renameat2 with RENAME_EXCHANGE). Used
 * rather than rename() over an earlier file: ext4 writes out at once the
 * delayed blocks of a file renamed over another (auto_da_alloc: 0.33 s for
 * a 619 MB output), not those of an exchanged one, and the earlier file
 * stays whole at the temporary name, so it needs no hard link. -1 with
 * errno ENOSYS where there is no such call. */
static int exchange(const char *a, const char *b) {
#ifdef SYS_renameat2
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1) /* <linux/fs.h>; glibc declares it only for _GNU_SOURCE */
#endif
  return (int)syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
#else
  (void)a;
  (void)b;
  errno = ENOSYS;
  return -1;
#endif
}

/* The file system or kernel cannot exchange (NFS, Lustre, kernels before
 * 3.15): rename with a hard link instead. Any other errno is a real error. */
static int exchange_unsupported(int err) {
  return err == EINVAL || err == ENOSYS || err == EOPNOTSUPP || err == ENOTSUP;
}

/* One file put into place by publish: its temporary and final names, and
 * how an earlier file at the final name is kept until the end: swapped to
 * the temporary name, or (no exchange there) a hard link at bak. */
typedef struct mb_pub {
  char tmp[MB_PATH_MAX], final[MB_PATH_MAX], bak[MB_PATH_MAX];
  int had;    /* an earlier file stood at final */
  int linked; /* and bak links to it */
  enum { PUB_WAITING, PUB_EXCHANGED, PUB_RENAMED } moved;
} mb_pub;

/* Put back what publish had moved: the earlier files where there were any,
 * nothing new where there were none; remove the temporaries and links. */
static void publish_undo(mb_pub *p, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    if (p[i].moved == PUB_EXCHANGED) {
      /* swap back: the temporary name then holds the new file; should that
       * fail, the earlier file is moved over the new one instead */
      if (exchange(p[i].tmp, p[i].final) == 0 || rename(p[i].tmp, p[i].final) == 0)
        unlink(p[i].tmp);
    } else if (p[i].moved == PUB_RENAMED) {
      if (p[i].linked) rename(p[i].bak, p[i].final);
      else unlink(p[i].final);
    } else {
      unlink(p[i].tmp);
      if (p[i].linked) unlink(p[i].bak);
    }
  }
}

/* Put one file into place: exchanged with the earlier file, or where there
 * is none or the file system cannot exchange, renamed (the earlier file
 * kept by a hard link until the end). */
static mb_error publish_one(const char *path, mb_pub *p, const char *suffix) {
  if (p->had) {
    if (exchange(p->tmp, p->final) == 0) {
      p->moved = PUB_EXCHANGED;
      return MB_SUCCESS;
    }
    MB_CHECK(exchange_unsupported(errno), MB_ERR_IO,
             "cannot publish %s: cannot exchange %s and %s: %s; the earlier output was put "
             "back", path, p->tmp, p->final, strerror(errno));
    snprintf(p->bak, sizeof p->bak, "%s%s.bak", p->final, suffix);
    MB_CHECK(link(p->final, p->bak) == 0, MB_ERR_IO,
             "cannot publish %s: cannot keep the earlier %s while replacing it: %s; the earlier "
             "output was put back", path, p->final, strerror(errno));
    p->linked = 1;
  }
  MB_CHECK(rename(p->tmp, p->final) == 0, MB_ERR_IO,
           "cannot rename %s to %s: %s; the earlier output was put back", p->tmp, p->final,
           strerror(errno));
  p->moved = PUB_RENAMED;
  return MB_SUCCESS;
}

/* fsync a file (or a folder) by name: its data, or its entries, on the disk. */
static mb_error sync_path(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  MB_CHECK(fd >= 0, MB_ERR_IO, "cannot open %s to sync it: %s", path, strerror(errno));
  const int ok = fsync(fd) == 0;
  const int err = errno;
  close(fd);
  MB_CHECK(ok, MB_ERR_IO, "cannot sync %s to the disk: %s", path, strerror(err));
  return MB_SUCCESS;
}

/* The folder of path, synced: renames into it on the disk. */
static mb_error sync_folder(const char *path) {
  char dir[MB_PATH_MAX];
  folder_of(path, dir, sizeof dir);
  MB_CALL(sync_path(dir));
  return MB_SUCCESS;
}

/* Rank 0: write the XDMF companions under temporary names, then put the
 * HDF5 file and the XDMF files into place (docs/format.md, "Writing"):
 * every final name is checked first (a folder or other non-file there
 * stops the publication before anything is moved), each file is exchanged
 * with the earlier one at its name (or renamed, the earlier one kept by a
 * hard link), and if any step fails every earlier file is put back and
 * nothing new stays: the previous output is left whole. durable: every
 * file is synced before the first name changes (the HDF5 file's data
 * already, by write_h5 or the writer), the folder after the last. */
static mb_error publish(const char *path, const char *tmp, const char *suffix,
                        const mb_wset *w, int durable) {
  char stem[MB_PATH_MAX];
  xdmf_stem(path, stem, sizeof stem);
  const char *slash = strrchr(path, '/');
  const char *h5name = slash ? slash + 1 : path;
  const int64_t total = w->n + 1;
  char **tmps = calloc((size_t)total, sizeof *tmps);
  mb_xdmf_mesh *xm = calloc((size_t)total, sizeof *xm);
  mb_pub *p = calloc((size_t)total + 1, sizeof *p);
  if (!tmps || !xm || !p) {
    free(tmps);
    free(xm);
    free(p);
    MB_FAIL(MB_ERR_MEMORY, "out of memory");
  }
  mb_error e = write_xdmf_tmps(stem, h5name, suffix, w, tmps, xm);
  free(xm);
  const size_t slen = strlen(suffix);
  snprintf(p[0].tmp, sizeof p[0].tmp, "%s", tmp);
  snprintf(p[0].final, sizeof p[0].final, "%s", path);
  for (int64_t i = 0; i < total; i++) {
    if (!tmps[i]) continue;
    snprintf(p[i + 1].tmp, sizeof p[i + 1].tmp, "%s", tmps[i]);
    snprintf(p[i + 1].final, sizeof p[i + 1].final, "%.*s", (int)(strlen(tmps[i]) - slen), tmps[i]);
  }
  drop_tmps(tmps, e ? total : 0, total); /* names copied; files removed only on failure */
  MB_CALL_GOTO(e, fail, e);
  for (int64_t i = 0; i <= total && !e; i++) { /* what stands at each final name */
    struct stat st;
    if (lstat(p[i].final, &st) != 0) continue;
    if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
      e = mb_error_set(MB_ERR_IO, __FILE__, __LINE__, __func__,
                       "cannot publish %s: %s is in the way (%s, not a file); nothing was "
                       "replaced", path, p[i].final, S_ISDIR(st.st_mode) ? "a folder" : "");
      break;
    }
    p[i].had = 1;
  }
  for (int64_t i = 0; i <= total && !e && durable; i++) e = sync_path(p[i].tmp);
  for (int64_t i = 0; i <= total && !e; i++) e = publish_one(path, &p[i], suffix);
  if (!e && durable) e = sync_folder(path);
fail:
  if (e) {
    publish_undo(p, total + 1);
  } else {
    for (int64_t i = 0; i <= total; i++) { /* the earlier files, now at these names */
      if (p[i].moved == PUB_EXCHANGED) unlink(p[i].tmp);
      if (p[i].linked) unlink(p[i].bak);
    }
  }
  free(p);
  if (e) mb_error_trace(__FILE__, __LINE__, __func__);
  return e;
}

/* Rank 0: the folder of path must exist. */
static mb_error check_folder(const char *path) {
  char dir[MB_PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash) return MB_SUCCESS;
  if (slash == dir) slash[1] = '\0'; else *slash = '\0';
  struct stat st;
  MB_CHECK(stat(dir, &st) == 0, MB_ERR_IO, "cannot write %s: folder %s: %s", path, dir,
           strerror(errno));
  MB_CHECK(S_ISDIR(st.st_mode), MB_ERR_IO, "cannot write %s: %s is not a folder", path, dir);
  return MB_SUCCESS;
}

/* Steps before the file exists: local checks, gathering, folder and tmp name. */
static mb_error prepare_write(MPI_Comm comm, const char *path, const mb_held *h, mb_wset *w,
                              char *suffix, size_t slen) {
  mb_buf b = {0};
  mb_error e = MB_SUCCESS;
  if (h->nlocal < 0 || (h->nlocal > 0 && !h->local) || h->nslabs < 0 ||
      (h->nslabs > 0 && !h->slabs))
    e = mb_error_set(MB_ERR_ARG, __FILE__, __LINE__, __func__,
                     "mb_collection_write: bad nlocal or nslabs");
  else
    e = pack_local(h, &b);
  if (e) mb_error_trace(__FILE__, __LINE__, __func__);
  mb_error g = sync_error(comm, e); /* every rank stops here if one failed */
  if (g) { free(b.data); return g; }
  e = gather_meshes(comm, &b, w);
  free(b.data);
  MB_CALL(sync_error(comm, e));
  long long pid = (long long)getpid();
  e = h->rank == 0 ? check_folder(path) : MB_SUCCESS;
  const int rc = MPI_Bcast(&pid, 1, MPI_LONG_LONG, 0, comm);
  if (rc && !e) e = mb_error_set_mpi(rc, __FILE__, __LINE__, __func__, "MPI_Bcast(&pid)");
  snprintf(suffix, slen, ".tmp-%lld", pid);
  MB_CALL(sync_error(comm, e)); /* the folder's check and the broadcast */
  return MB_SUCCESS;
}

static mb_error write_collection(MPI_Comm comm, const char *path, int nlocal,
                                 mb_mesh *const *local, int nslabs, const mb_mesh_slab *slabs,
                                 int durable) {
  MB_CHECK(path && *path, MB_ERR_ARG, "mb_collection_write: empty path");
  MB_CHECK(strlen(path) < MB_PATH_MAX - 300, MB_ERR_ARG, "mb_collection_write: path too long");
  mb_held h = {0, nlocal, nslabs, local, slabs};
  MB_CALL_MPI(MPI_Comm_rank(comm, &h.rank));
  h5_quiet q = h5_quiet_begin();
  mb_wset w = {0};
  char suffix[64], tmp[MB_PATH_MAX];
  mb_error e = prepare_write(comm, path, &h, &w, suffix, sizeof suffix);
  if (e) goto out;
  snprintf(tmp, sizeof tmp, "%s%s", path, suffix);
  mb_error lerr = MB_SUCCESS;
  e = write_h5(comm, tmp, &w, &h, durable, &lerr);
  e = sync_error(comm, e ? e : lerr);
  if (!e)
    e = sync_error(comm, h.rank == 0 ? publish(path, tmp, suffix, &w, durable) : MB_SUCCESS);
  if (e && h.rank == 0) unlink(tmp);
out:
  wset_free(&w);
  h5_quiet_end(q);
  if (e) mb_error_trace(__FILE__, __LINE__, __func__);
  return e;
}

mb_error mb_collection_write_slabs(MPI_Comm comm, const char *path, int nlocal,
                                   mb_mesh *const *local, int nslabs,
                                   const mb_mesh_slab *slabs) {
  MB_CALL(write_collection(comm, path, nlocal, local, nslabs, slabs, 0));
  return MB_SUCCESS;
}

mb_error mb_collection_write_durable(MPI_Comm comm, const char *path, int nlocal,
                                     mb_mesh *const *local, int nslabs,
                                     const mb_mesh_slab *slabs) {
  MB_CALL(write_collection(comm, path, nlocal, local, nslabs, slabs, 1));
  return MB_SUCCESS;
}

mb_error mb_collection_write(MPI_Comm comm, const char *path, int nlocal,
                             mb_mesh *const *local_meshes) {
  MB_CALL(write_collection(comm, path, nlocal, local_meshes, 0, NULL, 0));
  return MB_SUCCESS;
}

/* ------------------------------------------------- write: one mesh at a time */

/* A collection written by one process as its meshes come (per-mesh runs on
 * one rank): each put creates and fills one group of the temporary file;
 * finish numbers the groups' `index` attributes in (index, name) order,
 * writes the XDMF companions and publishes as mb_collection_write does. */
struct mb_collection_writer {
  char path[MB_PATH_MAX], tmp[MB_PATH_MAX], suffix[64];
  hid_t file, meshes;
  int64_t n, cap;
  mb_wset *sets;      /* one per mesh written: its metadata (the XDMF description borrows it) */
  /* the raw writes' thread (see raw_job) and its queue of meshes */
  int fd;             /* tmp opened for pwrite, -1: every write goes through HDF5 */
  pthread_t thread;
  int running;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  raw_batch *head, *tail;
  int queued;         /* batches queued or being written */
  int cancel;         /* abort: drop the queued batches unwritten */
  int stop;           /* no more batches */
  int raw_errno;      /* the first failed pwrite's errno, 0 */
  int durable;        /* sync the file, its companions and the folder at finish */
  char raw_mesh[256]; /* and its mesh */
};

/* At most this many meshes wait for (or are in) their raw writes: put
 * waits beyond it, so the memory held stays bounded. */
enum { RAW_QUEUE_MAX = 2 };

static void raw_batch_free(raw_batch *b) {
  mb_mesh_free(b->mesh);
  free(b->jobs);
  free(b);
}

/* Write every job of b (pwrite, whole; retried on EINTR); errno or 0. */
static int raw_batch_write(int fd, const raw_batch *b) {
  for (int k = 0; k < b->njobs; k++) {
    const raw_job *j = &b->jobs[k];
    for (size_t done = 0; done < j->bytes;) {
      const ssize_t n = pwrite(fd, j->buf + done, j->bytes - done, (off_t)(j->offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return n < 0 ? errno : EIO;
      done += (size_t)n;
    }
  }
  return 0;
}

static void *raw_thread(void *arg) {
  mb_collection_writer *w = arg;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (!w->head && !w->stop) pthread_cond_wait(&w->cv, &w->mu);
    raw_batch *b = w->head;
    if (!b) break;
    w->head = b->next;
    if (!w->head) w->tail = NULL;
    const int skip = w->cancel || w->raw_errno;
    pthread_mutex_unlock(&w->mu);
    const int err = skip ? 0 : raw_batch_write(w->fd, b);
    pthread_mutex_lock(&w->mu);
    if (err && !w->raw_errno) {
      w->raw_errno = err;
      snprintf(w->raw_mesh, sizeof w->raw_mesh, "%s", b->mesh->name ? b->mesh->name : "?");
    }
    w->queued--;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    raw_batch_free(b);
    pthread_mutex_lock(&w->mu);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

/* Queue b for the thread, waiting while RAW_QUEUE_MAX are queued. */
static void raw_enqueue(mb_collection_writer *w, raw_batch *b) {
  pthread_mutex_lock(&w->mu);
  while (w->queued >= RAW_QUEUE_MAX) pthread_cond_wait(&w->cv, &w->mu);
  if (w->tail) w->tail->next = b; else w->head = b;
  w->tail = b;
  w->queued++;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

/* Let the thread write (cancel = 0) or drop (1) what is queued, and end it. */
static void raw_stop(mb_collection_writer *w, int cancel) {
  if (!w->running) return;
  pthread_mutex_lock(&w->mu);
  w->cancel |= cancel;
  w->stop = 1;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
  pthread_join(w->thread, NULL);
  w->running = 0;
}

/* The first failed raw write as an error of the writer (MB_ERR_IO), or 0. */
static mb_error raw_error(mb_collection_writer *w);

static void writer_free(mb_collection_writer *w) {
  raw_stop(w, 1);
  if (w->fd >= 0) close(w->fd);
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
  h5_quiet q = h5_quiet_begin();
  h5_close_id(w->meshes);
  h5_close_id(w->file);
  h5_quiet_end(q);
  for (int64_t i = 0; i < w->n; i++) wset_free(&w->sets[i]);
  free(w->sets);
  free(w);
}

mb_error mb_collection_writer_begin(const char *path, double expected_bytes, int durable,
                                    mb_collection_writer **writer) {
  MB_CHECK(path && *path && writer, MB_ERR_ARG, "mb_collection_writer_begin: empty argument");
  MB_CHECK(strlen(path) < MB_PATH_MAX - 300, MB_ERR_ARG, "mb_collection_writer_begin: path too long");
  *writer = NULL;
  MB_CALL(check_folder(path));
  mb_collection_writer *w = calloc(1, sizeof *w);
  MB_CHECK(w, MB_ERR_MEMORY, "out of memory");
  w->file = w->meshes = -1;
  w->fd = -1;
  w->durable = durable;
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  snprintf(w->path, sizeof w->path, "%s", path);
  snprintf(w->suffix, sizeof w->suffix, ".tmp-%lld", (long long)getpid());
  snprintf(w->tmp, sizeof w->tmp, "%s%s", path, w->suffix);
  h5_quiet q = h5_quiet_begin();
  mb_error e = check_space(w->tmp, expected_bytes);
  if (!e) e = create_h5(MPI_COMM_SELF, w->tmp, &w->file);
  if (!e) e = put_root(w->file, &w->meshes);
  h5_quiet_end(q);
  if (e) {
    mb_collection_writer_abort(w);
    MB_CALL(e);
  }
  /* raw writes on a thread of their own; without one (no descriptor, no
   * thread) they go through HDF5 on the caller's thread */
  w->fd = open(w->tmp, O_WRONLY | O_CLOEXEC);
  if (w->fd >= 0 && pthread_create(&w->thread, NULL, raw_thread, w) == 0) w->running = 1;
  *writer = w;
  return MB_SUCCESS;
}

/* Why a write failed, where the cause is a full disk: a clause for the message. */
static const char *full_disk_note(const char *tmp) {
  const double avail = free_bytes(tmp);
  return avail >= 0 && avail < 1e6 ? ": the disk or quota is full" : "";
}

static mb_error raw_error(mb_collection_writer *w) {
  pthread_mutex_lock(&w->mu);
  const int err = w->raw_errno;
  char mesh[256];
  snprintf(mesh, sizeof mesh, "%s", w->raw_mesh);
  pthread_mutex_unlock(&w->mu);
  MB_CHECK(!err, MB_ERR_IO, "cannot write mesh '%s' to %s: %s%s", mesh, w->tmp, strerror(err),
           full_disk_note(w->tmp));
  return MB_SUCCESS;
}

mb_error mb_collection_writer_put(mb_collection_writer *w, mb_mesh *mesh) {
  if (!w || w->file < 0 || !mesh) {
    mb_mesh_free(mesh);
    MB_FAIL(MB_ERR_ARG, "mb_collection_writer_put: no writer or mesh");
  }
  raw_batch *batch = calloc(1, sizeof *batch);
  mb_error e = raw_error(w);
  if (!e && !batch) e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  if (!e && w->n == w->cap) {
    const int64_t cap = w->cap ? 2 * w->cap : 64;
    mb_wset *s = realloc(w->sets, sizeof *s * (size_t)cap);
    if (s) {
      w->sets = s;
      w->cap = cap;
    } else {
      e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
    }
  }
  if (e) {
    free(batch);
    mb_mesh_free(mesh);
    MB_CALL(e);
  }
  batch->mesh = mesh;
  mb_mesh *const one[1] = {mesh};
  const mb_held h = {0, 1, 0, one, NULL};
  mb_buf b = {0};
  mb_wset *set = &w->sets[w->n];
  memset(set, 0, sizeof *set);
  e = pack_local(&h, &b);
  if (!e) e = gather_meshes(MPI_COMM_SELF, &b, set);
  free(b.data);
  h5_quiet q = h5_quiet_begin();
  const htri_t exists = e ? 0 : H5Lexists(w->meshes, set->m[0].x.name, H5P_DEFAULT);
  if (exists < 0)
    e = mb_error_set(MB_ERR_HDF5, __FILE__, __LINE__, __func__, "H5Lexists(%s) failed",
                     set->m[0].x.name);
  else if (exists > 0)
    e = mb_error_set(MB_ERR_ARG, __FILE__, __LINE__, __func__,
                     "mb_collection_write: duplicate mesh name '%s'", set->m[0].x.name);
  mb_error lerr = MB_SUCCESS;
  /* index: a placeholder of the right type, numbered by finish */
  raw_collect = w->running ? batch : NULL;
  if (!e) e = put_mesh(w->meshes, &set->m[0], mesh->index, &set->m[0].p[0], mesh, &lerr);
  raw_collect = NULL;
  if (!e) e = lerr;
  h5_quiet_end(q);
  if (e) {
    wset_free(set);
    char why[1024];
    snprintf(why, sizeof why, "%s", mb_error_message());
    e = mb_error_set(e, __FILE__, __LINE__, __func__, "cannot write mesh '%s' to %s: %s%s",
                     mesh->name ? mesh->name : "?", w->tmp, why, full_disk_note(w->tmp));
    raw_batch_free(batch);
    return e;
  }
  w->n++;
  if (batch->njobs) raw_enqueue(w, batch);
  else raw_batch_free(batch);
  return MB_SUCCESS;
}

int64_t mb_collection_writer_count(const mb_collection_writer *w) { return w ? w->n : 0; }

/* Number the `index` attributes of the groups 0 .. n-1 in the order of all
 * (sorted by (index, name)). */
static mb_error renumber_index(hid_t meshes, const mb_wset *all) {
  for (int64_t i = 0; i < all->n; i++) {
    hid_t g = H5Gopen2(meshes, all->m[i].x.name, H5P_DEFAULT);
    MB_CALL_H5(g);
    hid_t a = H5Aopen(g, "index", H5P_DEFAULT);
    herr_t st = a >= 0 ? H5Awrite(a, H5T_NATIVE_INT64, &i) : -1;
    h5_close_id(a);
    H5Gclose(g);
    MB_CALL_H5(st);
  }
  return MB_SUCCESS;
}

mb_error mb_collection_writer_finish(mb_collection_writer *w) {
  MB_CHECK(w && w->file >= 0, MB_ERR_ARG, "mb_collection_writer_finish: no writer");
  raw_stop(w, 0); /* every raw write done */
  mb_wset all = {.n = w->n};
  all.m = calloc((size_t)w->n + 1, sizeof *all.m);
  mb_error e = raw_error(w);
  if (!e && !all.m) e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  for (int64_t i = 0; !e && i < w->n; i++) all.m[i] = w->sets[i].m[0];
  if (!e) qsort(all.m, (size_t)all.n, sizeof *all.m, cmp_wmesh);
  h5_quiet q = h5_quiet_begin();
  if (!e) e = renumber_index(w->meshes, &all);
  if (H5Gclose(w->meshes) < 0 && !e)
    e = mb_error_set(MB_ERR_HDF5, __FILE__, __LINE__, __func__, "H5Gclose(/meshes) of %s failed",
                     w->tmp);
  w->meshes = -1;
  if (H5Fclose(w->file) < 0 && !e)
    e = mb_error_set(MB_ERR_HDF5, __FILE__, __LINE__, __func__, "H5Fclose(%s) failed%s", w->tmp,
                     full_disk_note(w->tmp));
  w->file = -1;
  h5_quiet_end(q);
  if (!e) e = publish(w->path, w->tmp, w->suffix, &all, w->durable);
  free(all.m);
  if (e) { /* publish put back whatever it had moved */
    mb_error_trace(__FILE__, __LINE__, __func__);
    mb_collection_writer_abort(w);
    return e;
  }
  writer_free(w);
  return MB_SUCCESS;
}

void mb_collection_writer_abort(mb_collection_writer *w) {
  if (!w) return;
  char tmp[MB_PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s", w->tmp);
  writer_free(w);
  unlink(tmp);
}

/* ------------------------------------------------------------------ reading */

struct mb_collection {
  char *path;
  hid_t file;
  int version;         /* format_version of the file */
  int64_t n;
  mb_mesh_info *infos;
};

/* A growable list of link or attribute names. */
typedef struct mb_names {
  char **v;
  int n, cap;
  int oom;
} mb_names;

static void names_free(mb_names *l) {
  for (int i = 0; i < l->n; i++) free(l->v[i]);
  free(l->v);
  memset(l, 0, sizeof *l);
}

static int names_add(mb_names *l, const char *name) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 16;
    char **v = realloc(l->v, sizeof *v * (size_t)cap);
    if (!v) { l->oom = 1; return -1; }
    l->v = v;
    l->cap = cap;
  }
  if (!(l->v[l->n] = mb_strdup(name))) { l->oom = 1; return -1; }
  l->n++;
  return 0;
}

static herr_t link_cb(hid_t g, const char *name, const H5L_info_t *info, void *op) {
  (void)g;
  (void)info;
  return names_add(op, name);
}

static herr_t attr_cb(hid_t loc, const char *name, const H5A_info_t *info, void *op) {
  (void)loc;
  (void)info;
  return names_add(op, name);
}

/* Names of the links of a group, in creation order where tracked, else by name. */
static mb_error list_links(hid_t g, mb_names *l) {
  hsize_t idx = 0;
  if (H5Literate(g, H5_INDEX_CRT_ORDER, H5_ITER_INC, &idx, link_cb, l) >= 0) return MB_SUCCESS;
  names_free(l);
  idx = 0;
  MB_CALL_H5(H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, link_cb, l));
  MB_CHECK(!l->oom, MB_ERR_MEMORY, "out of memory");
  return MB_SUCCESS;
}

/* Names of the attributes of an object, in creation order where tracked. */
static mb_error list_attrs(hid_t o, mb_names *l) {
  hsize_t idx = 0;
  if (H5Aiterate2(o, H5_INDEX_CRT_ORDER, H5_ITER_INC, &idx, attr_cb, l) >= 0) return MB_SUCCESS;
  names_free(l);
  idx = 0;
  MB_CALL_H5(H5Aiterate2(o, H5_INDEX_NAME, H5_ITER_INC, &idx, attr_cb, l));
  MB_CHECK(!l->oom, MB_ERR_MEMORY, "out of memory");
  return MB_SUCCESS;
}

/* Read a string attribute (fixed or variable length) into a new string; *out
 * stays NULL if the attribute is not a string. */
static mb_error get_str_attr(hid_t a, char **out) {
  *out = NULL;
  hid_t ft = H5Aget_type(a);
  MB_CALL_H5(ft);
  int is_str = H5Tget_class(ft) == H5T_STRING;
  int is_var = is_str && H5Tis_variable_str(ft) > 0;
  size_t size = H5Tget_size(ft);
  H5T_cset_t cset = is_str ? H5Tget_cset(ft) : H5T_CSET_ASCII;
  H5Tclose(ft);
  if (!is_str) return MB_SUCCESS;
  hid_t mt = H5Tcopy(H5T_C_S1);
  MB_CALL_H5(mt);
  herr_t st = H5Tset_cset(mt, cset == H5T_CSET_UTF8 ? H5T_CSET_UTF8 : H5T_CSET_ASCII);
  if (st >= 0 && is_var) {
    char *s = NULL;
    st = H5Tset_size(mt, H5T_VARIABLE);
    if (st >= 0) st = H5Aread(a, mt, &s);
    if (st >= 0) *out = mb_strdup(s ? s : "");
    if (s) H5free_memory(s);
  } else if (st >= 0) {
    st = H5Tset_size(mt, size + 1);
    if (st >= 0) st = H5Tset_strpad(mt, H5T_STR_NULLTERM);
    *out = st >= 0 ? calloc(size + 1, 1) : NULL;
    if (*out) st = H5Aread(a, mt, *out);
  }
  H5Tclose(mt);
  if (st < 0) { free(*out); *out = NULL; }
  MB_CALL_H5(st);
  MB_CHECK(*out, MB_ERR_MEMORY, "out of memory");
  return MB_SUCCESS;
}

/* The root attributes: format name and version (returned in *version). */
static mb_error check_root(hid_t file, const char *path, int *version) {
  MB_CHECK(H5Aexists(file, "format") > 0, MB_ERR_FORMAT,
           "%s: not a meshbatch collection (no 'format' attribute at /)", path);
  hid_t a = H5Aopen(file, "format", H5P_DEFAULT);
  MB_CALL_H5(a);
  char *fmt = NULL;
  mb_error e = get_str_attr(a, &fmt);
  H5Aclose(a);
  MB_CALL(e);
  int ok = fmt && !strcmp(fmt, MB_COLLECTION_FORMAT);
  char shown[64];
  snprintf(shown, sizeof shown, "%s", fmt ? fmt : "(not a string)");
  free(fmt);
  MB_CHECK(ok, MB_ERR_FORMAT, "%s: not a meshbatch collection (format is '%s', expected '%s')",
           path, shown, MB_COLLECTION_FORMAT);
  MB_CHECK(H5Aexists(file, "format_version") > 0, MB_ERR_FORMAT,
           "%s: no 'format_version' attribute at /", path);
  a = H5Aopen(file, "format_version", H5P_DEFAULT);
  MB_CALL_H5(a);
  hid_t ft = H5Aget_type(a);
  int isint = ft >= 0 && H5Tget_class(ft) == H5T_INTEGER;
  if (ft >= 0) H5Tclose(ft);
  long long v = -1;
  herr_t st = isint ? H5Aread(a, H5T_NATIVE_LLONG, &v) : -1;
  H5Aclose(a);
  MB_CHECK(st >= 0, MB_ERR_FORMAT, "%s: attribute 'format_version' is not an integer", path);
  MB_CHECK(v >= MB_COLLECTION_FORMAT_VERSION_MIN && v <= MB_COLLECTION_FORMAT_VERSION,
           MB_ERR_FORMAT, "%s: unsupported format_version %lld (this build reads versions %d to %d)",
           path, v, MB_COLLECTION_FORMAT_VERSION_MIN, MB_COLLECTION_FORMAT_VERSION);
  *version = (int)v;
  return MB_SUCCESS;
}

/* Open dataset <mesh>/<dset> (relative to g), check its class and rank <= 2,
 * return its rank and dims. *found = 0 (and no error) if it does not exist. */
static mb_error probe_dataset(hid_t g, const char *path, const char *mesh, const char *dset,
                              H5T_class_t cls, int *found, int *rank, hsize_t dims[2]) {
  *found = 0;
  if (H5Lexists(g, dset, H5P_DEFAULT) <= 0) return MB_SUCCESS;
  hid_t d = H5Dopen2(g, dset, H5P_DEFAULT);
  MB_CHECK(d >= 0, MB_ERR_FORMAT, "%s: /meshes/%s/%s is not a dataset", path, mesh, dset);
  hid_t t = H5Dget_type(d), sp = H5Dget_space(d);
  H5T_class_t c = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
  int r = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
  hsize_t full[H5S_MAX_RANK] = {0};
  if (r > 0 && r <= H5S_MAX_RANK) H5Sget_simple_extent_dims(sp, full, NULL);
  h5_close_id(t);
  h5_close_id(sp);
  H5Dclose(d);
  MB_CHECK(c == cls, MB_ERR_FORMAT, "%s: /meshes/%s/%s has the wrong type (expected %s)", path,
           mesh, dset, cls == H5T_FLOAT ? "float64" : "int64");
  char sh[96];
  MB_CHECK(r >= 1 && r <= 2, MB_ERR_FORMAT, "%s: /meshes/%s/%s has rank %d shape %s", path, mesh,
           dset, r, shape_str(r > 0 ? r : 0, full, sh, sizeof sh));
  *found = 1;
  *rank = r;
  dims[0] = full[0];
  dims[1] = r == 2 ? full[1] : 0;
  return MB_SUCCESS;
}

/* Like probe_dataset, but the dataset must exist with rank `want_rank` and
 * (if want_cols > 0) dims[1] == want_cols; `expect` names the expected shape. */
static mb_error need_dataset(hid_t g, const char *path, const char *mesh, const char *dset,
                             H5T_class_t cls, int want_rank, hsize_t want_cols,
                             const char *expect, hsize_t dims[2]) {
  int found, rank;
  MB_CALL(probe_dataset(g, path, mesh, dset, cls, &found, &rank, dims));
  MB_CHECK(found, MB_ERR_FORMAT, "%s: /meshes/%s/%s is missing", path, mesh, dset);
  char sh[96];
  MB_CHECK(rank == want_rank && (want_cols == 0 || dims[1] == want_cols) && dims[0] > 0,
           MB_ERR_FORMAT, "%s: /meshes/%s/%s has shape %s, expected %s", path, mesh, dset,
           shape_str(rank, dims, sh, sizeof sh), expect);
  return MB_SUCCESS;
}

/* Check the fields in group `group` of a mesh group: float [rows,k] each
 * (per-vertex fields: group "fields", rows N; per-face: "face_fields", M). */
static mb_error check_fields(hid_t g, const char *path, const char *mesh, const char *group,
                             int64_t rows) {
  if (H5Lexists(g, group, H5P_DEFAULT) <= 0) return MB_SUCCESS;
  int face = !strcmp(group, "face_fields");
  hid_t fg = H5Gopen2(g, group, H5P_DEFAULT);
  MB_CHECK(fg >= 0, MB_ERR_FORMAT, "%s: /meshes/%s/%s is not a group", path, mesh, group);
  mb_names l = {0};
  mb_error e = list_links(fg, &l);
  for (int i = 0; i < l.n && !e; i++) {
    char dset[MB_NAME_MAX + 16];
    hsize_t dims[2];
    snprintf(dset, sizeof dset, "%s/%s", group, l.v[i]);
    e = need_dataset(g, path, mesh, dset, H5T_FLOAT, 2, 0, face ? "[M,k]" : "[N,k]", dims);
    if (!e && (int64_t)dims[0] != rows)
      e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                       "%s: /meshes/%s/%s has %llu rows, expected %s = %lld (%s)", path, mesh,
                       dset, (unsigned long long)dims[0], face ? "M" : "N", (long long)rows,
                       face ? "faces" : "vertices");
  }
  names_free(&l);
  H5Gclose(fg);
  MB_CALL(e);
  return MB_SUCCESS;
}

/* The integer attribute `index` of a mesh group. */
static mb_error get_index(hid_t g, const char *path, const char *mesh, int64_t *index) {
  MB_CHECK(H5Aexists(g, "index") > 0, MB_ERR_FORMAT, "%s: /meshes/%s has no 'index' attribute",
           path, mesh);
  hid_t a = H5Aopen(g, "index", H5P_DEFAULT);
  MB_CALL_H5(a);
  hid_t t = H5Aget_type(a);
  int isint = t >= 0 && H5Tget_class(t) == H5T_INTEGER;
  h5_close_id(t);
  long long v = -1;
  herr_t st = isint ? H5Aread(a, H5T_NATIVE_LLONG, &v) : -1;
  H5Aclose(a);
  MB_CHECK(st >= 0, MB_ERR_FORMAT, "%s: /meshes/%s: attribute 'index' is not an integer", path,
           mesh);
  *index = v;
  return MB_SUCCESS;
}

/* The kind of a mesh group: its string attribute `kind` (format version 2;
 * required), or surface (version 1, where `kind` is not special). */
static mb_error get_kind(hid_t g, const char *path, const char *mesh, int version,
                         mb_kind *kind) {
  *kind = MB_KIND_SURFACE;
  if (version < 2) return MB_SUCCESS;
  MB_CHECK(H5Aexists(g, "kind") > 0, MB_ERR_FORMAT, "%s: /meshes/%s has no 'kind' attribute",
           path, mesh);
  hid_t a = H5Aopen(g, "kind", H5P_DEFAULT);
  MB_CALL_H5(a);
  char *s = NULL;
  mb_error e = get_str_attr(a, &s);
  H5Aclose(a);
  MB_CALL(e);
  MB_CHECK(s, MB_ERR_FORMAT, "%s: /meshes/%s: attribute 'kind' is not a string", path, mesh);
  *kind = mb_kind_from_name(s);
  char shown[64];
  snprintf(shown, sizeof shown, "%s", s);
  free(s);
  MB_CHECK(kind_known(*kind), MB_ERR_FORMAT,
           "%s: /meshes/%s has kind '%s', which this build does not read (surface, "
           "triangulation2d, polygons2d)", path, mesh, shown);
  return MB_SUCCESS;
}

/* Kind, shapes and sizes of one mesh group. Faces: a surface has
 * `triangles` or `face_offsets` + `face_indices`; a triangulation2d has
 * `triangles`; a polygons2d has `face_offsets` + `face_indices`. */
/* A 3-vector attribute of a grid group: int64 or float64 by mt. */
static mb_error get_vec3_attr(hid_t g, const char *path, const char *mesh, const char *name,
                              H5T_class_t cls, hid_t mt, void *out) {
  MB_CHECK(H5Aexists(g, name) > 0, MB_ERR_FORMAT, "%s: /meshes/%s (grid3d) has no '%s' attribute",
           path, mesh, name);
  hid_t a = H5Aopen(g, name, H5P_DEFAULT);
  MB_CALL_H5(a);
  hid_t t = H5Aget_type(a), sp = H5Aget_space(a);
  hsize_t n = 0;
  int ok = t >= 0 && H5Tget_class(t) == cls && sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 &&
           H5Sget_simple_extent_dims(sp, &n, NULL) == 1 && n == 3;
  h5_close_id(t);
  h5_close_id(sp);
  herr_t st = ok ? H5Aread(a, mt, out) : -1;
  H5Aclose(a);
  MB_CHECK(st >= 0, MB_ERR_FORMAT, "%s: /meshes/%s: attribute '%s' is not 3 %s values", path,
           mesh, name, cls == H5T_INTEGER ? "integer" : "float");
  return MB_SUCCESS;
}

/* A grid3d group: shape, origin, spacing, and fields [nz, ny, nx(, k)] of
 * float32 or float64. */
static mb_error scan_grid(hid_t g, const char *path, const char *mesh, mb_mesh_info *info) {
  MB_CALL(get_vec3_attr(g, path, mesh, "shape", H5T_INTEGER, H5T_NATIVE_INT64, info->shape));
  MB_CALL(get_vec3_attr(g, path, mesh, "origin", H5T_FLOAT, H5T_NATIVE_DOUBLE, info->origin));
  MB_CALL(get_vec3_attr(g, path, mesh, "spacing", H5T_FLOAT, H5T_NATIVE_DOUBLE, info->spacing));
  int64_t nv = 1;
  for (int a = 0; a < 3; a++) {
    MB_CHECK(info->shape[a] >= 1 && info->shape[a] <= ((int64_t)1 << 40) &&
                 nv <= ((int64_t)1 << 62) / info->shape[a] && isfinite(info->origin[a]) &&
                 isfinite(info->spacing[a]) && info->spacing[a] > 0,
             MB_ERR_FORMAT, "%s: /meshes/%s: shape %lld x %lld x %lld, spacing %g %g %g out of "
             "range", path, mesh, (long long)info->shape[0], (long long)info->shape[1],
             (long long)info->shape[2], info->spacing[0], info->spacing[1], info->spacing[2]);
    nv *= info->shape[a];
  }
  info->nv = nv;
  info->nf = info->nidx = 0;
  info->triangles = 0;
  if (H5Lexists(g, "fields", H5P_DEFAULT) <= 0) return MB_SUCCESS;
  hid_t fg = H5Gopen2(g, "fields", H5P_DEFAULT);
  MB_CHECK(fg >= 0, MB_ERR_FORMAT, "%s: /meshes/%s/fields is not a group", path, mesh);
  mb_names l = {0};
  mb_error e = list_links(fg, &l);
  for (int i = 0; i < l.n && !e; i++) {
    hid_t d = H5Dopen2(fg, l.v[i], H5P_DEFAULT);
    hid_t t = d >= 0 ? H5Dget_type(d) : -1, sp = d >= 0 ? H5Dget_space(d) : -1;
    hsize_t dims[H5S_MAX_RANK] = {0};
    int r = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    if (r > 0 && r <= H5S_MAX_RANK) H5Sget_simple_extent_dims(sp, dims, NULL);
    size_t bytes = t >= 0 ? H5Tget_size(t) : 0;
    int ok = t >= 0 && H5Tget_class(t) == H5T_FLOAT && (bytes == 4 || bytes == 8) &&
             (r == 3 || (r == 4 && dims[3] >= 1 && dims[3] <= 1024)) &&
             (int64_t)dims[0] == info->shape[0] && (int64_t)dims[1] == info->shape[1] &&
             (int64_t)dims[2] == info->shape[2];
    h5_close_id(t);
    h5_close_id(sp);
    h5_close_id(d);
    if (!ok)
      e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                       "%s: /meshes/%s/fields/%s is not a float32 or float64 dataset of shape "
                       "[%lld, %lld, %lld] (or with a last axis of components)", path, mesh,
                       l.v[i], (long long)info->shape[0], (long long)info->shape[1],
                       (long long)info->shape[2]);
  }
  names_free(&l);
  H5Gclose(fg);
  MB_CALL(e);
  return MB_SUCCESS;
}

static mb_error scan_mesh(hid_t g, const char *path, const char *mesh, int version,
                          mb_mesh_info *info) {
  hsize_t dims[2];
  MB_CHECK(strlen(mesh) < sizeof info->name, MB_ERR_FORMAT, "%s: mesh name too long", path);
  snprintf(info->name, sizeof info->name, "%s", mesh);
  MB_CALL(get_index(g, path, mesh, &info->index));
  MB_CALL(get_kind(g, path, mesh, version, &info->kind));
  if (info->kind == MB_KIND_GRID3D) return scan_grid(g, path, mesh, info);
  int vc = kind_vcols(info->kind);
  MB_CALL(need_dataset(g, path, mesh, "vertices", H5T_FLOAT, 2, (hsize_t)vc,
                       vc == 2 ? "[N,2]" : "[N,3]", dims));
  info->nv = (int64_t)dims[0];
  int tri, rank;
  MB_CALL(probe_dataset(g, path, mesh, "triangles", H5T_INTEGER, &tri, &rank, dims));
  MB_CHECK(tri || info->kind != MB_KIND_TRIANGULATION2D, MB_ERR_FORMAT,
           "%s: /meshes/%s (triangulation2d) has no 'triangles'", path, mesh);
  MB_CHECK(!tri || info->kind != MB_KIND_POLYGONS2D, MB_ERR_FORMAT,
           "%s: /meshes/%s (polygons2d) has 'triangles'; its faces are "
           "'face_offsets'/'face_indices'", path, mesh);
  if (tri) {
    MB_CHECK(H5Lexists(g, "face_offsets", H5P_DEFAULT) <= 0, MB_ERR_FORMAT,
             "%s: /meshes/%s has both triangles and face_offsets", path, mesh);
    MB_CALL(need_dataset(g, path, mesh, "triangles", H5T_INTEGER, 2, 3, "[M,3]", dims));
    info->nf = (int64_t)dims[0];
    info->nidx = 3 * info->nf;
    info->triangles = 1;
  } else {
    MB_CHECK(H5Lexists(g, "face_offsets", H5P_DEFAULT) > 0, MB_ERR_FORMAT,
             "%s: /meshes/%s has neither 'triangles' nor 'face_offsets'/'face_indices'", path,
             mesh);
    MB_CALL(need_dataset(g, path, mesh, "face_offsets", H5T_INTEGER, 1, 0, "[M+1]", dims));
    MB_CHECK(dims[0] >= 2, MB_ERR_FORMAT,
             "%s: /meshes/%s/face_offsets has shape [%llu], expected [M+1] with M >= 1", path,
             mesh, (unsigned long long)dims[0]);
    info->nf = (int64_t)dims[0] - 1;
    MB_CALL(need_dataset(g, path, mesh, "face_indices", H5T_INTEGER, 1, 0, "[K]", dims));
    info->nidx = (int64_t)dims[0];
    info->triangles = 0;
  }
  MB_CALL(check_fields(g, path, mesh, "fields", info->nv));
  MB_CALL(check_fields(g, path, mesh, "face_fields", info->nf));
  return MB_SUCCESS;
}

static int cmp_info(const void *a, const void *b) {
  const mb_mesh_info *x = a, *y = b;
  return x->index < y->index ? -1 : x->index > y->index;
}

/* Scan /meshes: every mesh group, sorted by index (which must be 0..n-1). */
static mb_error scan_meshes(hid_t file, const char *path, int version, mb_names *l,
                            mb_mesh_info **infos) {
  MB_CHECK(H5Lexists(file, "meshes", H5P_DEFAULT) > 0, MB_ERR_FORMAT,
           "%s: no /meshes group", path);
  hid_t ms = H5Gopen2(file, "meshes", H5P_DEFAULT);
  MB_CHECK(ms >= 0, MB_ERR_FORMAT, "%s: /meshes is not a group", path);
  mb_error e = list_links(ms, l);
  *infos = calloc((size_t)l->n + 1, sizeof **infos);
  if (!e && !*infos) e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  for (int i = 0; i < l->n && !e; i++) {
    hid_t g = H5Gopen2(ms, l->v[i], H5P_DEFAULT);
    if (g < 0) {
      e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                       "%s: /meshes/%s is not a group", path, l->v[i]);
      break;
    }
    e = scan_mesh(g, path, l->v[i], version, &(*infos)[i]);
    H5Gclose(g);
  }
  H5Gclose(ms);
  MB_CALL(e);
  qsort(*infos, (size_t)l->n, sizeof **infos, cmp_info);
  for (int i = 0; i < l->n; i++)
    MB_CHECK((*infos)[i].index == i, MB_ERR_FORMAT,
             "%s: mesh indices are not 0..%d (mesh '%s' has index %lld)", path, l->n - 1,
             (*infos)[i].name, (long long)(*infos)[i].index);
  return MB_SUCCESS;
}

/* Rank 0: validate the whole file and list its meshes. */
static mb_error scan_file(hid_t file, const char *path, int *version, int64_t *n,
                         mb_mesh_info **infos) {
  MB_CALL(check_root(file, path, version));
  mb_names l = {0};
  mb_error e = scan_meshes(file, path, *version, &l, infos);
  *n = l.n;
  names_free(&l);
  MB_CALL(e);
  return MB_SUCCESS;
}

/* Rank 0: the file must exist and be HDF5. */
static mb_error precheck_file(const char *path) {
  struct stat st;
  MB_CHECK(stat(path, &st) == 0, MB_ERR_IO, "%s: cannot open collection: %s", path,
           strerror(errno));
  MB_CHECK(S_ISREG(st.st_mode), MB_ERR_IO, "%s: not a regular file", path);
  FILE *fp = fopen(path, "rb");
  MB_CHECK(fp, MB_ERR_IO, "%s: cannot open collection: %s", path, strerror(errno));
  fclose(fp);
  MB_CHECK(H5Fis_hdf5(path) > 0, MB_ERR_FORMAT, "%s: not an HDF5 file", path);
  return MB_SUCCESS;
}

/* Open the file collectively and let rank 0 validate it; broadcast the list.
 * image = NULL: the file c->path through MPI-IO, or sec2 where comm has one
 * rank; else the file image of size bytes through the core driver
 * (mb_collection_open_image). */
static mb_error open_and_scan(MPI_Comm comm, int rank, mb_collection *c, const void *image,
                              size_t size) {
  if (!image) MB_CALL(sync_error(comm, rank == 0 ? precheck_file(c->path) : MB_SUCCESS));
  int nranks = 1;
  MB_CALL_MPI(MPI_Comm_size(comm, &nranks));
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  MB_CALL_H5(fapl);
  herr_t st = 0;
  if (image) { /* in memory, no backing file; HDF5 copies the image */
    st = H5Pset_fapl_core(fapl, 1 << 16, 0);
    if (st >= 0) st = H5Pset_file_image(fapl, (void *)image, size);
  } else if (nranks > 1) {
    st = H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL);
  } else { /* plain pread: MPI_File_open costs 0.4 ms and a lock file beside the input */
    st = H5Pset_fapl_sec2(fapl);
#if H5_VERSION_GE(1, 12, 1) || (H5_VERS_MAJOR == 1 && H5_VERS_MINOR == 10 && H5_VERS_RELEASE >= 7)
    /* no flock, as under MPI-IO: file systems without it would refuse the open */
    if (st >= 0) st = H5Pset_file_locking(fapl, 0, 1);
#endif
  }
  if (st >= 0) st = H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
  c->file = st >= 0 ? H5Fopen(c->path, H5F_ACC_RDONLY, fapl) : -1;
  H5Pclose(fapl);
  mb_error e = c->file >= 0 ? MB_SUCCESS
                            : mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                                           "%s: HDF5 cannot open the file", c->path);
  MB_CALL(sync_error(comm, e));
  e = rank == 0 ? scan_file(c->file, c->path, &c->version, &c->n, &c->infos) : MB_SUCCESS;
  MB_CALL(sync_error(comm, e));
  long long n = c->n;
  MB_CALL_MPI(MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, comm));
  MB_CALL_MPI(MPI_Bcast(&c->version, 1, MPI_INT, 0, comm));
  if (rank != 0) {
    c->n = n;
    c->infos = calloc((size_t)n + 1, sizeof *c->infos);
  }
  int ok = c->infos != NULL, all;
  MB_CALL_MPI(MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm));
  MB_CHECK(all, MB_ERR_MEMORY, "out of memory for the mesh list of %s", c->path);
  size_t bytes = sizeof *c->infos * (size_t)n, chunk = (size_t)1 << 30;
  for (size_t off = 0; off < bytes; off += chunk) {
    size_t len = bytes - off < chunk ? bytes - off : chunk;
    MB_CALL_MPI(MPI_Bcast((char *)c->infos + off, (int)len, MPI_BYTE, 0, comm));
  }
  return MB_SUCCESS;
}

/* mb_collection_open (image = NULL) and mb_collection_open_image. */
static mb_error open_collection(MPI_Comm comm, const char *path, const void *image, size_t size,
                                mb_collection **coll) {
  *coll = NULL;
  int rank;
  MB_CALL_MPI(MPI_Comm_rank(comm, &rank));
  mb_collection *c;
  MB_CALLOC(c, 1);
  c->file = -1;
  c->path = mb_strdup(path);
  if (!c->path) { free(c); MB_FAIL(MB_ERR_MEMORY, "out of memory"); }
  h5_quiet q = h5_quiet_begin();
  mb_error e = open_and_scan(comm, rank, c, image, size);
  h5_quiet_end(q);
  if (e) {
    if (c->file >= 0) H5Fclose(c->file); /* collective: every rank reaches here */
    free(c->infos);
    free(c->path);
    free(c);
    MB_CALL(e);
  }
  *coll = c;
  return MB_SUCCESS;
}

mb_error mb_collection_open(MPI_Comm comm, const char *path, mb_collection **coll) {
  MB_CHECK(path && coll, MB_ERR_ARG, "mb_collection_open: NULL argument");
  MB_CALL(open_collection(comm, path, NULL, 0, coll));
  return MB_SUCCESS;
}

mb_error mb_collection_open_image(MPI_Comm comm, const char *name, const void *image,
                                  size_t size, mb_collection **coll) {
  MB_CHECK(name && image && size && coll, MB_ERR_ARG,
           "mb_collection_open_image: NULL argument or empty image");
  MB_CALL(open_collection(comm, name, image, size, coll));
  return MB_SUCCESS;
}

int64_t mb_collection_count(const mb_collection *coll) { return coll ? coll->n : 0; }

int mb_collection_version(const mb_collection *coll) { return coll ? coll->version : 0; }

const mb_mesh_info *mb_collection_info(const mb_collection *coll, int64_t i) {
  if (!coll || i < 0 || i >= coll->n) return NULL;
  return &coll->infos[i];
}

/* Read a whole dataset of loc into buf (memory type mt). */
static mb_error read_all(hid_t loc, const char *src, const char *dset, hid_t mt, void *buf) {
  hid_t d = H5Dopen2(loc, dset, H5P_DEFAULT);
  MB_CHECK(d >= 0, MB_ERR_FORMAT, "%s/%s: cannot open dataset", src, dset);
  hid_t fs = H5Dget_space(d);
  const int rank = fs >= 0 ? H5Sget_simple_extent_ndims(fs) : -1;
  hsize_t dims[4] = {0, 0, 0, 0}, start[4] = {0, 0, 0, 0};
  herr_t st = rank >= 1 && rank <= 4 ? H5Sget_simple_extent_dims(fs, dims, NULL) : -1;
  h5_close_id(fs);
  if (st >= 0) st = h5_block_transfer(d, mt, 0, rank, start, dims, dims, buf);
  H5Dclose(d);
  MB_CHECK(st >= 0, MB_ERR_HDF5, "%s/%s: H5Dread failed", src, dset);
  return MB_SUCCESS;
}

/* Read rows [start, start + n) of dataset dset of loc ([N] if cols = 0, else
 * [N, cols]) into buf by hyperslab (memory type mt). A row of buf holds mcols
 * values (0: cols) of which the first cols are read (planar vertices: cols 2
 * into xyz rows of 3, whose z is left as it is). Nothing is read if n = 0. */
static mb_error read_rows_into(hid_t loc, const char *src, const char *dset, hid_t mt,
                               int64_t start, int64_t n, int64_t cols, int64_t mcols,
                               void *buf) {
  if (n == 0) return MB_SUCCESS;
  hid_t d = H5Dopen2(loc, dset, H5P_DEFAULT);
  MB_CHECK(d >= 0, MB_ERR_FORMAT, "%s/%s: cannot open dataset", src, dset);
  const hsize_t off[2] = {(hsize_t)start, 0}, count[2] = {(hsize_t)n, (hsize_t)cols};
  const hsize_t mem[2] = {(hsize_t)n, (hsize_t)(mcols ? mcols : cols)};
  herr_t st = h5_block_transfer(d, mt, 0, cols ? 2 : 1, off, count, mem, buf);
  H5Dclose(d);
  MB_CHECK(st >= 0, MB_ERR_HDF5, "%s/%s: H5Dread of rows [%lld, %lld) failed", src, dset,
           (long long)start, (long long)(start + n));
  return MB_SUCCESS;
}

/* read_rows_into with rows of buf as wide as those of the dataset. */
static mb_error read_rows(hid_t loc, const char *src, const char *dset, hid_t mt, int64_t start,
                          int64_t n, int64_t cols, void *buf) {
  MB_CALL(read_rows_into(loc, src, dset, mt, start, n, cols, 0, buf));
  return MB_SUCCESS;
}

/* Fields from group `group` ("fields": per vertex, "face_fields": per face),
 * in creation order: rows [r0, r0 + n) of each [total, k] dataset, where n
 * is m->nv (vertex) or m->nf (face) rows (r0 = 0, total = n for a whole mesh). */
static mb_error read_fields(hid_t g, const char *src, mb_mesh *m, const char *group, int64_t r0,
                            int64_t total) {
  if (H5Lexists(g, group, H5P_DEFAULT) <= 0) return MB_SUCCESS;
  int face = !strcmp(group, "face_fields");
  int64_t n = face ? m->nf : m->nv;
  hid_t fg = H5Gopen2(g, group, H5P_DEFAULT);
  MB_CHECK(fg >= 0, MB_ERR_FORMAT, "%s/%s: not a group", src, group);
  mb_names l = {0};
  mb_error e = list_links(fg, &l);
  for (int i = 0; i < l.n && !e; i++) {
    int found, rank;
    hsize_t dims[2];
    e = probe_dataset(fg, src, group, l.v[i], H5T_FLOAT, &found, &rank, dims);
    if (!e && (rank != 2 || (int64_t)dims[0] != total || dims[1] < 1 || dims[1] > INT_MAX))
      e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                       "%s/%s/%s: expected shape [%s,k] with %s = %lld", src, group, l.v[i],
                       face ? "M" : "N", face ? "M" : "N", (long long)total);
    double *data = e ? NULL : mb_alloc(sizeof(double) * (size_t)n * dims[1] + 1);
    if (!e && !data) e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
    if (!e) e = read_rows(fg, src, l.v[i], H5T_NATIVE_DOUBLE, r0, n, (int64_t)dims[1], data);
    if (!e)
      e = face ? mb_mesh_set_face_field(m, l.v[i], (int)dims[1], data)
               : mb_mesh_set_field(m, l.v[i], (int)dims[1], data);
    free(data);
  }
  names_free(&l);
  H5Gclose(fg);
  MB_CALL(e);
  return MB_SUCCESS;
}

/* String attributes of the mesh group, in creation order (`index` skipped,
 * and `kind` from format version 2 on). */
static mb_error read_attrs(hid_t g, int version, mb_mesh *m) {
  mb_names l = {0};
  mb_error e = list_attrs(g, &l);
  for (int i = 0; i < l.n && !e; i++) {
    if (!strcmp(l.v[i], "index") || (version >= 2 && !strcmp(l.v[i], "kind"))) continue;
    if (m->kind == MB_KIND_GRID3D && (!strcmp(l.v[i], "shape") || !strcmp(l.v[i], "origin") ||
                                      !strcmp(l.v[i], "spacing")))
      continue;
    hid_t a = H5Aopen(g, l.v[i], H5P_DEFAULT);
    if (a < 0) { e = mb_error_set(MB_ERR_HDF5, __FILE__, __LINE__, __func__, "H5Aopen failed"); break; }
    char *s = NULL;
    e = get_str_attr(a, &s);
    H5Aclose(a);
    if (!e && s) e = mb_attrs_set(&m->attrs, l.v[i], s);
    free(s);
  }
  names_free(&l);
  MB_CALL(e);
  return MB_SUCCESS;
}

/* The fields of a grid3d group, each in its stored precision. */
static mb_error read_grid_fields(hid_t g, const char *src, mb_mesh *m) {
  if (H5Lexists(g, "fields", H5P_DEFAULT) <= 0) return MB_SUCCESS;
  hid_t fg = H5Gopen2(g, "fields", H5P_DEFAULT);
  MB_CHECK(fg >= 0, MB_ERR_FORMAT, "%s/fields: not a group", src);
  mb_names l = {0};
  mb_error e = list_links(fg, &l);
  for (int i = 0; i < l.n && !e; i++) {
    hid_t d = H5Dopen2(fg, l.v[i], H5P_DEFAULT);
    hid_t t = d >= 0 ? H5Dget_type(d) : -1, sp = d >= 0 ? H5Dget_space(d) : -1;
    hsize_t dims[4] = {0, 0, 0, 1};
    int r = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    if (r == 3 || r == 4) H5Sget_simple_extent_dims(sp, dims, NULL);
    const int f32 = t >= 0 && H5Tget_size(t) == 4, ncomp = r == 4 ? (int)dims[3] : 1;
    void *buf = mb_alloc((f32 ? sizeof(float) : sizeof(double)) * (size_t)m->nv * (size_t)ncomp);
    const hsize_t start[4] = {0, 0, 0, 0};
    herr_t st = buf && d >= 0 && (r == 3 || r == 4)
                    ? h5_block_transfer(d, f32 ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE, 0, r, start,
                                        dims, dims, buf)
                    : -1;
    h5_close_id(t);
    h5_close_id(sp);
    h5_close_id(d);
    if (st < 0)
      e = mb_error_set(buf ? MB_ERR_HDF5 : MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                       "%s/fields/%s: cannot read the field", src, l.v[i]);
    else
      e = f32 ? mb_mesh_set_field_f32(m, l.v[i], ncomp, buf)
              : mb_mesh_set_field(m, l.v[i], ncomp, buf);
    free(buf);
  }
  names_free(&l);
  H5Gclose(fg);
  MB_CALL(e);
  return MB_SUCCESS;
}

/* Offsets rows [f0, f0 + n] of a polygon mesh as read (a slab's, or the
 * whole mesh's with f0 = 0, n = M): inside [0, K], from 0 at the first face,
 * K after the last face, >= 3 vertices per face (so increasing: every face's
 * range of face_indices lies inside it). */
static mb_error check_slab_offsets(const char *src, const mb_mesh_info *info, int64_t f0,
                                   int64_t n, const int64_t *off) {
  MB_CHECK(off[0] >= 0 && off[n] <= info->nidx && (f0 > 0 || off[0] == 0) &&
               (f0 + n < info->nf || off[n] == info->nidx),
           MB_ERR_FORMAT, "%s/face_offsets: rows %lld..%lld hold %lld..%lld, outside [0, %lld]",
           src, (long long)f0, (long long)(f0 + n), (long long)off[0], (long long)off[n],
           (long long)info->nidx);
  for (int64_t f = 0; f < n; f++)
    MB_CHECK(off[f + 1] - off[f] >= 3, MB_ERR_FORMAT,
             "%s: face %lld has %lld vertices (need at least 3)", src, (long long)(f0 + f),
             (long long)(off[f + 1] - off[f]));
  return MB_SUCCESS;
}

/* Arrays, fields and attributes of one mesh group into a new mesh (whose
 * xyz is zeroed: planar kinds keep z = 0). */
static mb_error read_group(hid_t g, const char *src, int version, const mb_mesh_info *info,
                           mb_mesh *m) {
  m->kind = info->kind;
  if (m->kind == MB_KIND_GRID3D) {
    MB_CALL(read_grid_fields(g, src, m));
    MB_CALL(read_attrs(g, version, m));
    MB_CALL(mb_mesh_validate(m, src));
    return MB_SUCCESS;
  }
  MB_CALL(read_rows_into(g, src, "vertices", H5T_NATIVE_DOUBLE, 0, m->nv,
                         kind_vcols(info->kind), 3, m->xyz));
  if (info->triangles) {
    MB_CALL(read_all(g, src, "triangles", H5T_NATIVE_INT64, m->face_indices));
    for (int64_t f = 0; f <= m->nf; f++) m->face_offsets[f] = 3 * f;
  } else {
    MB_CALL(read_all(g, src, "face_offsets", H5T_NATIVE_INT64, m->face_offsets));
    MB_CALL(read_all(g, src, "face_indices", H5T_NATIVE_INT64, m->face_indices));
    MB_CHECK(m->face_offsets[m->nf] == info->nidx, MB_ERR_FORMAT,
             "%s/face_offsets: last offset is %lld, expected %lld (length of face_indices)",
             src, (long long)m->face_offsets[m->nf], (long long)info->nidx);
    MB_CALL(check_slab_offsets(src, info, 0, m->nf, m->face_offsets));
  }
  MB_CALL(read_fields(g, src, m, "fields", 0, m->nv));
  MB_CALL(read_fields(g, src, m, "face_fields", 0, m->nf));
  MB_CALL(read_attrs(g, version, m));
  MB_CALL(mb_mesh_validate(m, src));
  return MB_SUCCESS;
}

mb_error mb_collection_read(mb_collection *coll, int64_t i, mb_mesh **mesh) {
  MB_CHECK(coll && mesh, MB_ERR_ARG, "mb_collection_read: NULL argument");
  MB_CHECK(i >= 0 && i < coll->n, MB_ERR_ARG, "mb_collection_read: mesh %lld outside [0, %lld)",
           (long long)i, (long long)coll->n);
  const mb_mesh_info *info = &coll->infos[i];
  char src[MB_PATH_MAX];
  snprintf(src, sizeof src, "%s:/meshes/%s", coll->path, info->name);
  mb_mesh *m;
  if (info->kind == MB_KIND_GRID3D)
    MB_CALL(mb_grid_create(info->name, info->shape, info->origin, info->spacing, &m));
  else
    MB_CALL(mb_mesh_create(info->name, info->nv, info->nf, info->nidx, &m));
  m->index = i;
  h5_quiet q = h5_quiet_begin();
  hid_t ms = H5Gopen2(coll->file, "meshes", H5P_DEFAULT);
  hid_t g = ms >= 0 ? H5Gopen2(ms, info->name, H5P_DEFAULT) : -1;
  mb_error e = g >= 0 ? read_group(g, src, coll->version, info, m)
                      : mb_error_set(MB_ERR_HDF5, __FILE__, __LINE__, __func__,
                                     "%s: cannot open the mesh group", src);
  h5_close_id(g);
  h5_close_id(ms);
  h5_quiet_end(q);
  if (e) { mb_mesh_free(m); MB_CALL(e); }
  *mesh = m;
  return MB_SUCCESS;
}

/* Create s->rows with nvr vertex rows and faces rows [s->face_start,
 * s->face_start + nfr): triangles by hyperslab, or for polygon meshes the
 * offsets rows (rebased to 0) and the range of face_indices they span. */
static mb_error read_slab_faces(hid_t g, const char *src, const mb_mesh_info *info,
                                int64_t nvr, int64_t nfr, mb_mesh_slab *s) {
  int64_t f0 = s->face_start, base = 3 * f0, nidx = 3 * nfr, *off = NULL;
  if (!info->triangles) {
    MB_CALLOC(off, nfr + 1);
    mb_error e = read_rows(g, src, "face_offsets", H5T_NATIVE_INT64, f0, nfr + 1, 0, off);
    if (!e) e = check_slab_offsets(src, info, f0, nfr, off);
    if (e) { free(off); MB_CALL(e); }
    base = off[0];
    nidx = off[nfr] - off[0];
  }
  mb_error e = mb_mesh_create(info->name, nvr, nfr, nidx, &s->rows);
  for (int64_t f = 0; !e && f <= nfr; f++) s->rows->face_offsets[f] = off ? off[f] - base : 3 * f;
  free(off);
  MB_CALL(e);
  if (info->triangles)
    MB_CALL(read_rows(g, src, "triangles", H5T_NATIVE_INT64, f0, nfr, 3, s->rows->face_indices));
  else
    MB_CALL(read_rows(g, src, "face_indices", H5T_NATIVE_INT64, base, nidx, 0,
                      s->rows->face_indices));
  return MB_SUCCESS;
}

/* Rows, fields and attributes of a slab of one mesh group into s->rows. */
static mb_error read_slab_group(hid_t g, const char *src, int version, const mb_mesh_info *info,
                                int64_t nvr, int64_t nfr, mb_mesh_slab *s) {
  MB_CALL(read_slab_faces(g, src, info, nvr, nfr, s));
  s->rows->kind = info->kind;
  MB_CALL(read_rows_into(g, src, "vertices", H5T_NATIVE_DOUBLE, s->vertex_start, nvr,
                         kind_vcols(info->kind), 3, s->rows->xyz));
  MB_CALL(read_fields(g, src, s->rows, "fields", s->vertex_start, info->nv));
  MB_CALL(read_fields(g, src, s->rows, "face_fields", s->face_start, info->nf));
  MB_CALL(read_attrs(g, version, s->rows));
  MB_CALL(mb_mesh_validate_rows(s->rows, s->vertex_start, s->face_start, info->nv, src));
  return MB_SUCCESS;
}

mb_error mb_collection_read_slab(mb_collection *coll, int64_t i, int64_t vertex_start,
                                 int64_t nvrows, int64_t face_start, int64_t nfrows,
                                 mb_mesh_slab *slab) {
  MB_CHECK(coll && slab, MB_ERR_ARG, "mb_collection_read_slab: NULL argument");
  MB_CHECK(i >= 0 && i < coll->n, MB_ERR_ARG,
           "mb_collection_read_slab: mesh %lld outside [0, %lld)", (long long)i,
           (long long)coll->n);
  const mb_mesh_info *info = &coll->infos[i];
  MB_CHECK(info->kind != MB_KIND_GRID3D, MB_ERR_UNSUPPORTED,
           "%s: '%s' is a grid3d; grids are read whole (mb_collection_read)", coll->path,
           info->name);
  MB_CHECK(rows_inside(vertex_start, nvrows, info->nv), MB_ERR_ARG,
           "mb_collection_read_slab: vertex rows [%lld, %lld) outside [0, %lld) of mesh '%s'",
           (long long)vertex_start, (long long)(vertex_start + nvrows), (long long)info->nv,
           info->name);
  MB_CHECK(rows_inside(face_start, nfrows, info->nf), MB_ERR_ARG,
           "mb_collection_read_slab: face rows [%lld, %lld) outside [0, %lld) of mesh '%s'",
           (long long)face_start, (long long)(face_start + nfrows), (long long)info->nf,
           info->name);
  char src[MB_PATH_MAX];
  snprintf(src, sizeof src, "%s:/meshes/%s", coll->path, info->name);
  mb_mesh_slab s = {.vertex_start = vertex_start, .face_start = face_start, .nv = info->nv,
                    .nf = info->nf};
  h5_quiet q = h5_quiet_begin();
  hid_t ms = H5Gopen2(coll->file, "meshes", H5P_DEFAULT);
  hid_t g = ms >= 0 ? H5Gopen2(ms, info->name, H5P_DEFAULT) : -1;
  mb_error e = g >= 0 ? read_slab_group(g, src, coll->version, info, nvrows, nfrows, &s)
                      : mb_error_set(MB_ERR_HDF5, __FILE__, __LINE__, __func__,
                                     "%s: cannot open the mesh group", src);
  h5_close_id(g);
  h5_close_id(ms);
  h5_quiet_end(q);
  if (e) { mb_mesh_free(s.rows); MB_CALL(e); }
  s.rows->index = i;
  *slab = s;
  return MB_SUCCESS;
}

mb_error mb_collection_read_grid_block(mb_collection *coll, int64_t i, const int64_t lo[3],
                                       const int64_t n[3], mb_mesh_slab *slab) {
  MB_CHECK(coll && slab && lo && n, MB_ERR_ARG, "mb_collection_read_grid_block: NULL argument");
  MB_CHECK(i >= 0 && i < coll->n, MB_ERR_ARG,
           "mb_collection_read_grid_block: dataset %lld outside [0, %lld)", (long long)i,
           (long long)coll->n);
  const mb_mesh_info *info = &coll->infos[i];
  MB_CHECK(info->kind == MB_KIND_GRID3D, MB_ERR_ARG, "%s: '%s' is a %s, not a grid3d", coll->path,
           info->name, mb_kind_name(info->kind));
  for (int a = 0; a < 3; a++)
    MB_CHECK(lo[a] >= 0 && n[a] >= 1 && lo[a] + n[a] <= info->shape[a], MB_ERR_ARG,
             "%s: block outside grid '%s'", coll->path, info->name);
  char src[MB_PATH_MAX];
  snprintf(src, sizeof src, "%s:/meshes/%s", coll->path, info->name);
  mb_mesh *m;
  MB_CALL(mb_grid_create(info->name, n, info->origin, info->spacing, &m));
  m->index = i;
  mb_error e = MB_SUCCESS;
  h5_quiet q = h5_quiet_begin();
  hid_t ms = H5Gopen2(coll->file, "meshes", H5P_DEFAULT);
  hid_t g = ms >= 0 ? H5Gopen2(ms, info->name, H5P_DEFAULT) : -1;
  hid_t fg = g >= 0 && H5Lexists(g, "fields", H5P_DEFAULT) > 0 ? H5Gopen2(g, "fields", H5P_DEFAULT) : -1;
  mb_names l = {0};
  if (g < 0) e = mb_error_set(MB_ERR_HDF5, __FILE__, __LINE__, __func__, "%s: cannot open", src);
  if (!e && fg >= 0) e = list_links(fg, &l);
  for (int k = 0; k < l.n && !e; k++) {
    hid_t d = H5Dopen2(fg, l.v[k], H5P_DEFAULT);
    hid_t t = d >= 0 ? H5Dget_type(d) : -1, fs = d >= 0 ? H5Dget_space(d) : -1;
    hsize_t dims[4] = {0, 0, 0, 1};
    const int r = fs >= 0 ? H5Sget_simple_extent_ndims(fs) : -1;
    if (r == 3 || r == 4) H5Sget_simple_extent_dims(fs, dims, NULL);
    const int f32 = t >= 0 && H5Tget_size(t) == 4, ncomp = r == 4 ? (int)dims[3] : 1;
    hsize_t start[4] = {(hsize_t)lo[0], (hsize_t)lo[1], (hsize_t)lo[2], 0};
    hsize_t count[4] = {(hsize_t)n[0], (hsize_t)n[1], (hsize_t)n[2], (hsize_t)ncomp};
    void *buf = mb_alloc((f32 ? sizeof(float) : sizeof(double)) * (size_t)m->nv * (size_t)ncomp);
    herr_t st = buf && fs >= 0 && (r == 3 || r == 4)
                    ? h5_block_transfer(d, f32 ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE, 0, r, start,
                                        count, count, buf)
                    : -1;
    h5_close_id(t);
    h5_close_id(fs);
    h5_close_id(d);
    if (st < 0)
      e = mb_error_set(buf ? MB_ERR_HDF5 : MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                       "%s/fields/%s: cannot read the block", src, l.v[k]);
    else
      e = f32 ? mb_mesh_set_field_f32(m, l.v[k], ncomp, buf) : mb_mesh_set_field(m, l.v[k], ncomp, buf);
    free(buf);
  }
  names_free(&l);
  if (!e && g >= 0) e = read_attrs(g, coll->version, m);
  h5_close_id(fg);
  h5_close_id(g);
  h5_close_id(ms);
  h5_quiet_end(q);
  if (e) {
    mb_mesh_free(m);
    MB_CALL(e);
  }
  *slab = (mb_mesh_slab){.rows = m, .nv = info->nv, .nf = 0};
  for (int a = 0; a < 3; a++) {
    slab->grid_lo[a] = lo[a];
    slab->grid_shape[a] = info->shape[a];
  }
  return MB_SUCCESS;
}

mb_error mb_collection_close(mb_collection *coll) {
  if (!coll) return MB_SUCCESS;
  herr_t st = coll->file >= 0 ? H5Fclose(coll->file) : 0;
  char path[MB_PATH_MAX];
  snprintf(path, sizeof path, "%s", coll->path);
  free(coll->infos);
  free(coll->path);
  free(coll);
  MB_CHECK(st >= 0, MB_ERR_HDF5, "%s: H5Fclose failed", path);
  return MB_SUCCESS;
}

