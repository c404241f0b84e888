/* meshbatch: the collective writer's metadata: every rank checks and
 * serializes what it holds, the records are all-gathered, grouped into
 * meshes and checked (duplicate names, slabs that agree and tile the rows),
 * identically on every rank (see mb_collection_private.h). */
#include "mb_collection.h"
#include "mb_collection_private.h"
#include "mb_mpi.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ byte buffers */

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

/* ----------------------------------------------------------- write: metadata */

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
  MB_CHECK(mb_coll_kind_known(m->kind), MB_ERR_ARG,
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
  if (mb_coll_kind_planar(m->kind))
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
  MB_CALL(mb_coll_validate(m, m->name));
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
  MB_CHECK(mb_coll_rows_inside(s->vertex_start, m->nv, s->nv), MB_ERR_ARG,
           "mb_collection_write_slabs: slab of mesh '%s': vertex rows [%lld, %lld) outside "
           "[0, %lld)", m->name, (long long)s->vertex_start,
           (long long)(s->vertex_start + m->nv), (long long)s->nv);
  MB_CHECK(mb_coll_rows_inside(s->face_start, m->nf, s->nf), MB_ERR_ARG,
           "mb_collection_write_slabs: slab of mesh '%s': face rows [%lld, %lld) outside "
           "[0, %lld)", m->name, (long long)s->face_start, (long long)(s->face_start + m->nf),
           (long long)s->nf);
  MB_CALL(mb_coll_validate_rows(m, s->vertex_start, s->face_start, s->nv, m->name));
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
  int64_t mixed_len;
  int tri, big;
  mb_coll_face_stats(m, &mixed_len, &tri, &big); /* one pass over the faces */
  buf_i64(b, mixed_len);
  buf_i64(b, tri);
  buf_i64(b, big); /* a face of >= 5 vertices */
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
mb_error mb_coll_pack_local(const mb_held *h, mb_buf *b) {
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

void mb_coll_wset_free(mb_wset *w) {
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

int mb_coll_cmp_wmesh(const void *a, const void *b) {
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
  qsort(w->m, (size_t)w->n, sizeof *w->m, mb_coll_cmp_wmesh);
  return MB_SUCCESS;
}

/* Gather the metadata of every rank's pieces, group them into meshes sorted
 * by (index, name) and check them. Collective; identical result on every rank. */
mb_error mb_coll_gather_meshes(MPI_Comm comm, const mb_buf *local, mb_wset *w) {
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
