/* meshbatch: the dataset container (see mb_mesh.h). */
#include "mb_mesh.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *mb_strdup(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

mb_error mb_mesh_create(const char *name, int64_t nv, int64_t nf, int64_t nidx,
                        mb_mesh **mesh) {
  MB_CHECK(mesh && name, MB_ERR_ARG, "mb_mesh_create: NULL argument");
  MB_CHECK(nv >= 0 && nf >= 0 && nidx >= 0, MB_ERR_ARG,
           "mb_mesh_create: negative size (nv=%lld nf=%lld nidx=%lld)",
           (long long)nv, (long long)nf, (long long)nidx);
  mb_mesh *m;
  MB_CALLOC(m, 1);
  m->kind = MB_KIND_SURFACE;
  m->index = -1;
  m->nv = nv;
  m->nf = nf;
  m->name = mb_strdup(name);
  m->xyz = mb_zalloc((size_t)(nv ? nv : 1) * 3, sizeof(double));
  m->face_offsets = mb_zalloc((size_t)nf + 1, sizeof(int64_t));
  m->face_indices = mb_zalloc((size_t)(nidx ? nidx : 1), sizeof(int64_t));
  if (!m->name || !m->xyz || !m->face_offsets || !m->face_indices) {
    mb_mesh_free(m);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for mesh '%s' (%lld vertices, %lld faces)",
            name, (long long)nv, (long long)nf);
  }
  *mesh = m;
  return MB_SUCCESS;
}

void mb_attrs_clear(mb_attrs *a) {
  if (!a) return;
  for (int i = 0; i < a->n; i++) {
    free(a->keys[i]);
    free(a->values[i]);
  }
  free(a->keys);
  free(a->values);
  a->n = 0;
  a->keys = a->values = NULL;
}

mb_error mb_grid_create(const char *name, const int64_t shape[3], const double origin[3],
                        const double spacing[3], mb_mesh **grid) {
  MB_CHECK(grid && name && shape && origin && spacing, MB_ERR_ARG, "mb_grid_create: NULL argument");
  int64_t nv = 1;
  for (int a = 0; a < 3; a++) {
    MB_CHECK(shape[a] >= 1 && shape[a] <= ((int64_t)1 << 40) && nv <= ((int64_t)1 << 62) / shape[a],
             MB_ERR_ARG, "grid '%s': shape %lld x %lld x %lld out of range", name,
             (long long)shape[0], (long long)shape[1], (long long)shape[2]);
    MB_CHECK(isfinite(spacing[a]) && spacing[a] > 0 && isfinite(origin[a]), MB_ERR_ARG,
             "grid '%s': spacing must be positive and finite and the origin finite (axis %c: "
             "spacing %g, origin %g)", name, "zyx"[a], spacing[a], origin[a]);
    nv *= shape[a];
  }
  mb_mesh *m;
  MB_CALLOC(m, 1);
  m->kind = MB_KIND_GRID3D;
  m->index = -1;
  m->nv = nv;
  m->name = mb_strdup(name);
  m->face_offsets = calloc(1, sizeof(int64_t));
  m->face_indices = calloc(1, sizeof(int64_t));
  if (!m->name || !m->face_offsets || !m->face_indices) {
    mb_mesh_free(m);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for grid '%s'", name);
  }
  for (int a = 0; a < 3; a++) {
    m->shape[a] = shape[a];
    m->origin[a] = origin[a];
    m->spacing[a] = spacing[a];
  }
  *grid = m;
  return MB_SUCCESS;
}

static void field_list_free(mb_field *fields, int n) {
  for (int i = 0; i < n; i++) {
    free(fields[i].name);
    free(fields[i].data);
    free(fields[i].data32);
  }
  free(fields);
}

void mb_mesh_free(mb_mesh *m) {
  if (!m) return;
  free(m->name);
  free(m->xyz);
  free(m->face_offsets);
  free(m->face_indices);
  field_list_free(m->fields, m->nfields);
  field_list_free(m->face_fields, m->nface_fields);
  mb_attrs_clear(&m->attrs);
  free(m);
}

mb_error mb_mesh_duplicate(const mb_mesh *s, mb_mesh **copy) {
  int64_t nidx = s->face_offsets[s->nf];
  mb_mesh *m;
  if (s->kind == MB_KIND_GRID3D) {
    MB_CALL(mb_grid_create(s->name, s->shape, s->origin, s->spacing, &m));
  } else {
    MB_CALL(mb_mesh_create(s->name, s->nv, s->nf, nidx, &m));
    memcpy(m->xyz, s->xyz, sizeof(double) * 3 * (size_t)s->nv);
    memcpy(m->face_offsets, s->face_offsets, sizeof(int64_t) * ((size_t)s->nf + 1));
    memcpy(m->face_indices, s->face_indices, sizeof(int64_t) * (size_t)nidx);
  }
  m->kind = s->kind;
  m->index = s->index;
  for (int i = 0; i < s->nfields; i++) {
    const mb_field *f = &s->fields[i];
    mb_error e = f->dtype == MB_FLOAT32 ? mb_mesh_set_field_f32(m, f->name, f->ncomp, f->data32)
                                        : mb_mesh_set_field(m, f->name, f->ncomp, f->data);
    if (e) { mb_mesh_free(m); MB_CALL(e); }
  }
  for (int i = 0; i < s->nface_fields; i++) {
    mb_error e = mb_mesh_set_face_field(m, s->face_fields[i].name, s->face_fields[i].ncomp,
                                        s->face_fields[i].data);
    if (e) { mb_mesh_free(m); MB_CALL(e); }
  }
  for (int i = 0; i < s->attrs.n; i++) {
    mb_error e = mb_attrs_set(&m->attrs, s->attrs.keys[i], s->attrs.values[i]);
    if (e) { mb_mesh_free(m); MB_CALL(e); }
  }
  *copy = m;
  return MB_SUCCESS;
}

int mb_mesh_is_triangles(const mb_mesh *m) {
  for (int64_t f = 0; f < m->nf; f++)
    if (m->face_offsets[f + 1] - m->face_offsets[f] != 3) return 0;
  return 1;
}

/* A grid3d: its point count and every field's values present. */
static mb_error grid_validate(const mb_mesh *m, const char *src) {
  MB_CHECK(m->nv == m->shape[0] * m->shape[1] * m->shape[2] && m->nv > 0, MB_ERR_FORMAT,
           "%s: grid of shape %lld x %lld x %lld holds %lld points", src, (long long)m->shape[0],
           (long long)m->shape[1], (long long)m->shape[2], (long long)m->nv);
  for (int i = 0; i < m->nfields; i++)
    MB_CHECK(m->fields[i].dtype == MB_FLOAT32 ? m->fields[i].data32 != NULL
                                              : m->fields[i].data != NULL,
             MB_ERR_FORMAT, "%s: field '%s' has no values", src, m->fields[i].name);
  return MB_SUCCESS;
}

mb_error mb_mesh_validate(const mb_mesh *m, const char *source) {
  const char *src = source ? source : (m->name ? m->name : "mesh");
  if (m->kind == MB_KIND_GRID3D) return grid_validate(m, src);
  MB_CHECK(m->nv > 0, MB_ERR_FORMAT, "%s: empty mesh (no vertices)", src);
  MB_CHECK(m->nf > 0, MB_ERR_FORMAT, "%s: empty mesh (no faces)", src);
  MB_CALL(mb_mesh_validate_rows(m, 0, 0, m->nv, src));
  return MB_SUCCESS;
}

mb_error mb_mesh_validate_rows(const mb_mesh *m, int64_t v0, int64_t f0, int64_t nv,
                               const char *source) {
  const char *src = source ? source : (m->name ? m->name : "mesh");
  for (int64_t i = 0; i < 3 * m->nv; i++)
    MB_CHECK(isfinite(m->xyz[i]), MB_ERR_FORMAT,
             "%s: vertex %lld has a non-finite coordinate (%g)", src, (long long)(v0 + i / 3),
             m->xyz[i]);
  MB_CHECK(m->face_offsets[0] == 0, MB_ERR_FORMAT, "%s: face offsets must start at 0", src);
  for (int64_t f = 0; f < m->nf; f++) {
    int64_t a = m->face_offsets[f], b = m->face_offsets[f + 1];
    MB_CHECK(b - a >= 3, MB_ERR_FORMAT, "%s: face %lld has %lld vertices (need at least 3)",
             src, (long long)(f0 + f), (long long)(b - a));
    for (int64_t k = a; k < b; k++)
      MB_CHECK(m->face_indices[k] >= 0 && m->face_indices[k] < nv, MB_ERR_FORMAT,
               "%s: face %lld refers to vertex %lld, outside [0, %lld)", src,
               (long long)(f0 + f), (long long)m->face_indices[k], (long long)nv);
  }
  return MB_SUCCESS;
}

void mb_mesh_bbox(const mb_mesh *m, double lo[3], double hi[3]) {
  for (int d = 0; d < 3; d++) {
    lo[d] = m->nv ? m->xyz[d] : 0.0;
    hi[d] = lo[d];
  }
  for (int64_t i = 0; i < m->nv; i++)
    for (int d = 0; d < 3; d++) {
      double x = m->xyz[3 * i + d];
      if (x < lo[d]) lo[d] = x;
      if (x > hi[d]) hi[d] = x;
    }
}

double mb_mesh_bbox_diagonal(const mb_mesh *m) {
  double lo[3], hi[3];
  mb_mesh_bbox(m, lo, hi);
  return sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
              (hi[2] - lo[2]) * (hi[2] - lo[2]));
}

/* Append or replace field `name` in the list (*fields, *nfields): its
 * values the array `copy` of ncomp values of dtype a row, taken (freed on
 * error too). */
static mb_error field_list_put(mb_field **fields, int *nfields, const char *name, int ncomp,
                               mb_dtype dtype, void *copy) {
  if (ncomp <= 0) free(copy);
  MB_CHECK(ncomp > 0, MB_ERR_ARG, "field '%s': ncomp must be positive", name);
  int slot = *nfields;
  for (int i = 0; i < *nfields; i++)
    if (!strcmp((*fields)[i].name, name)) slot = i;
  if (slot == *nfields) {
    mb_field *f = realloc(*fields, sizeof(mb_field) * (size_t)(*nfields + 1));
    if (!f) { free(copy); MB_FAIL(MB_ERR_MEMORY, "out of memory for field '%s'", name); }
    *fields = f;
    f[slot] = (mb_field){.name = mb_strdup(name)};
    (*nfields)++;
  } else {
    free((*fields)[slot].data);
    free((*fields)[slot].data32);
  }
  mb_field *f = &(*fields)[slot];
  f->ncomp = ncomp;
  f->dtype = dtype;
  f->data = dtype == MB_FLOAT64 ? copy : NULL;
  f->data32 = dtype == MB_FLOAT32 ? copy : NULL;
  return MB_SUCCESS;
}

/* The same with a copy of data's n x ncomp values. */
static mb_error field_list_set(mb_field **fields, int *nfields, int64_t n, const char *name,
                               int ncomp, mb_dtype dtype, const void *data) {
  MB_CHECK(ncomp > 0, MB_ERR_ARG, "field '%s': ncomp must be positive", name);
  const size_t width = dtype == MB_FLOAT32 ? sizeof(float) : sizeof(double);
  void *copy = mb_alloc(width * (size_t)ncomp * (size_t)(n ? n : 1));
  MB_CHECK(copy, MB_ERR_MEMORY, "out of memory for field '%s'", name);
  memcpy(copy, data, width * (size_t)ncomp * (size_t)n);
  return field_list_put(fields, nfields, name, ncomp, dtype, copy);
}

mb_error mb_mesh_take_face_field(mb_mesh *m, const char *name, int ncomp, double *data) {
  if (!m || !name || !data) free(data);
  MB_CHECK(m && name && data, MB_ERR_ARG, "mb_mesh_take_face_field: NULL argument");
  return field_list_put(&m->face_fields, &m->nface_fields, name, ncomp, MB_FLOAT64, data);
}

mb_error mb_mesh_set_field(mb_mesh *m, const char *name, int ncomp, const double *data) {
  return field_list_set(&m->fields, &m->nfields, m->nv, name, ncomp, MB_FLOAT64, data);
}

mb_error mb_mesh_set_field_f32(mb_mesh *m, const char *name, int ncomp, const float *data) {
  return field_list_set(&m->fields, &m->nfields, m->nv, name, ncomp, MB_FLOAT32, data);
}

mb_error mb_mesh_set_face_field(mb_mesh *m, const char *name, int ncomp, const double *data) {
  return field_list_set(&m->face_fields, &m->nface_fields, m->nf, name, ncomp, MB_FLOAT64,
                        data);
}

int mb_mesh_field_index(const mb_mesh *m, const char *name) {
  for (int i = 0; i < m->nfields; i++)
    if (!strcmp(m->fields[i].name, name)) return i;
  return -1;
}

static const char *const mb_kind_names[MB_NKINDS] = {"none", "surface", "triangulation2d",
                                                     "polygons2d", "grid3d"};

const char *mb_kind_name(mb_kind kind) {
  return (kind >= 0 && kind < MB_NKINDS) ? mb_kind_names[kind] : "unknown";
}

mb_kind mb_kind_from_name(const char *name) {
  for (int k = 1; k < MB_NKINDS; k++)
    if (name && !strcmp(name, mb_kind_names[k])) return (mb_kind)k;
  return MB_KIND_NONE;
}

mb_error mb_attrs_set(mb_attrs *a, const char *key, const char *value) {
  for (int i = 0; i < a->n; i++)
    if (!strcmp(a->keys[i], key)) {
      char *v = mb_strdup(value);
      MB_CHECK(v, MB_ERR_MEMORY, "out of memory");
      free(a->values[i]);
      a->values[i] = v;
      return MB_SUCCESS;
    }
  char **k = realloc(a->keys, sizeof(char *) * (size_t)(a->n + 1));
  MB_CHECK(k, MB_ERR_MEMORY, "out of memory");
  a->keys = k;
  char **v = realloc(a->values, sizeof(char *) * (size_t)(a->n + 1));
  MB_CHECK(v, MB_ERR_MEMORY, "out of memory");
  a->values = v;
  a->keys[a->n] = mb_strdup(key);
  a->values[a->n] = mb_strdup(value);
  MB_CHECK(a->keys[a->n] && a->values[a->n], MB_ERR_MEMORY, "out of memory");
  a->n++;
  return MB_SUCCESS;
}

mb_error mb_attrs_setf(mb_attrs *a, const char *key, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  MB_CALL(mb_attrs_set(a, key, buf));
  return MB_SUCCESS;
}

const char *mb_attrs_get(const mb_attrs *a, const char *key) {
  for (int i = 0; i < a->n; i++)
    if (!strcmp(a->keys[i], key)) return a->values[i];
  return NULL;
}

mb_error mb_mesh_slab_cut(const mb_mesh *m, int64_t v0, int64_t nvrows, int64_t f0,
                          int64_t nfrows, mb_mesh_slab *slab) {
  MB_CHECK(v0 >= 0 && nvrows >= 0 && v0 <= m->nv - nvrows && f0 >= 0 && nfrows >= 0 &&
               f0 <= m->nf - nfrows,
           MB_ERR_ARG,
           "mb_mesh_slab_cut: rows [%lld, %lld) / faces [%lld, %lld) outside mesh '%s'",
           (long long)v0, (long long)(v0 + nvrows), (long long)f0, (long long)(f0 + nfrows),
           m->name);
  const int64_t i0 = m->face_offsets[f0], nidx = m->face_offsets[f0 + nfrows] - i0;
  mb_mesh *r;
  MB_CALL(mb_mesh_create(m->name, nvrows, nfrows, nidx, &r));
  r->kind = m->kind;
  r->index = m->index;
  memcpy(r->xyz, m->xyz + 3 * v0, sizeof *r->xyz * 3 * (size_t)nvrows);
  for (int64_t f = 0; f <= nfrows; f++) r->face_offsets[f] = m->face_offsets[f0 + f] - i0;
  memcpy(r->face_indices, m->face_indices + i0, sizeof *r->face_indices * (size_t)nidx);
  mb_error e = MB_SUCCESS;
  for (int a = 0; !e && a < m->attrs.n; a++)
    e = mb_attrs_set(&r->attrs, m->attrs.keys[a], m->attrs.values[a]);
  for (int k = 0; !e && k < m->nfields; k++) {
    const mb_field *fd = &m->fields[k];
    e = mb_mesh_set_field(r, fd->name, fd->ncomp, fd->data + (size_t)fd->ncomp * (size_t)v0);
  }
  for (int k = 0; !e && k < m->nface_fields; k++) {
    const mb_field *fd = &m->face_fields[k];
    e = mb_mesh_set_face_field(r, fd->name, fd->ncomp,
                               fd->data + (size_t)fd->ncomp * (size_t)f0);
  }
  if (e) {
    mb_mesh_free(r);
    MB_CALL(e);
  }
  *slab = (mb_mesh_slab){.rows = r, .vertex_start = v0, .face_start = f0, .nv = m->nv, .nf = m->nf};
  return MB_SUCCESS;
}

mb_error mb_grid_block_cut(const mb_mesh *g, const int64_t lo[3], const int64_t n[3],
                           mb_mesh_slab *slab) {
  MB_CHECK(g && g->kind == MB_KIND_GRID3D && slab, MB_ERR_ARG, "mb_grid_block_cut: not a grid");
  for (int a = 0; a < 3; a++)
    MB_CHECK(lo[a] >= 0 && n[a] >= 1 && lo[a] + n[a] <= g->shape[a], MB_ERR_ARG,
             "grid '%s': block outside the grid", g->name);
  mb_mesh *b;
  MB_CALL(mb_grid_create(g->name, n, g->origin, g->spacing, &b));
  b->index = g->index;
  mb_error e = MB_SUCCESS;
  for (int f = 0; f < g->nfields && !e; f++) {
    const mb_field *fd = &g->fields[f];
    const size_t w = (fd->dtype == MB_FLOAT32 ? sizeof(float) : sizeof(double)) * (size_t)fd->ncomp;
    char *buf = mb_alloc(w * (size_t)b->nv);
    if (!buf) {
      e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
      break;
    }
    const char *src = fd->dtype == MB_FLOAT32 ? (const char *)fd->data32 : (const char *)fd->data;
    for (int64_t k = 0; k < n[0]; k++)
      for (int64_t j = 0; j < n[1]; j++)
        memcpy(buf + w * (size_t)((k * n[1] + j) * n[2]),
               src + w * (size_t)(((lo[0] + k) * g->shape[1] + lo[1] + j) * g->shape[2] + lo[2]),
               w * (size_t)n[2]);
    e = fd->dtype == MB_FLOAT32 ? mb_mesh_set_field_f32(b, fd->name, fd->ncomp, (float *)buf)
                                : mb_mesh_set_field(b, fd->name, fd->ncomp, (double *)buf);
    free(buf);
  }
  for (int i = 0; !e && i < g->attrs.n; i++) e = mb_attrs_set(&b->attrs, g->attrs.keys[i], g->attrs.values[i]);
  if (e) {
    mb_mesh_free(b);
    MB_CALL(e);
  }
  *slab = (mb_mesh_slab){.rows = b, .nv = g->nv};
  for (int a = 0; a < 3; a++) {
    slab->grid_lo[a] = lo[a];
    slab->grid_shape[a] = g->shape[a];
  }
  return MB_SUCCESS;
}
