/* meshbatch: scale-test mesh generators (see mb_generate.h). */
#include "mb_generate.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mb_adjacency.h"
#include "mb_generate_private.h"
#include "mb_log.h"

/* Index of neighbour j in the sorted row of i (binary search). */
static int64_t edge_slot(const mb_adjacency *a, int64_t i, int64_t j) {
  int64_t lo = a->row[i], hi = a->row[i + 1] - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (a->col[mid] < j) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Split the marked edges of a triangle mesh at their midpoints. split
 * [a->nnz] marks an undirected edge i < j at its slot (i, j) (NULL: every
 * edge, the 1-to-4 level). New vertex nv + id for the marked edges in CSR
 * order. A triangle with 3 split edges becomes 4, with 2 becomes 3 (the
 * quadrilateral left beside the corner triangle is cut by its shorter
 * diagonal, the one from the first unsplit-edge vertex on a tie), with 1
 * becomes 2: the mesh stays conforming and every new point lies on the
 * input's flat triangles (red-green refinement). Orientation is kept. */
static mb_error subdivide_marked(const mb_mesh *m, const mb_adjacency *a, const uint8_t *split,
                                 mb_mesh **out) {
  int64_t *edge_id = malloc(sizeof *edge_id * (size_t)(a->nnz ? a->nnz : 1));
  MB_CHECK(edge_id, MB_ERR_MEMORY, "out of memory");
  int64_t ne = 0;
  for (int64_t i = 0; i < a->nv; i++)
    for (int64_t k = a->row[i]; k < a->row[i + 1]; k++)
      edge_id[k] = a->col[k] > i && (!split || split[k]) ? ne++ : -1;
  /* faces out: 1 + (split edges) per triangle */
  int64_t nf_out = 0;
  for (int64_t f = 0; f < m->nf; f++) {
    const int64_t *v = m->face_indices + 3 * f;
    nf_out++;
    for (int t = 0; t < 3; t++) {
      int64_t p = v[t], q = v[(t + 1) % 3], lo = p < q ? p : q, hi = p < q ? q : p;
      if (edge_id[edge_slot(a, lo, hi)] >= 0) nf_out++;
    }
  }
  mb_mesh *s = NULL;
  mb_error e = mb_mesh_create(m->name, m->nv + ne, nf_out, 3 * nf_out, &s);
  if (e) { free(edge_id); MB_CALL(e); }
  s->index = m->index;
  memcpy(s->xyz, m->xyz, sizeof(double) * 3 * (size_t)m->nv);
  for (int64_t i = 0; i < a->nv; i++)
    for (int64_t k = a->row[i]; k < a->row[i + 1]; k++)
      if (edge_id[k] >= 0)
        for (int d = 0; d < 3; d++)
          s->xyz[3 * (m->nv + edge_id[k]) + d] =
              0.5 * (m->xyz[3 * i + d] + m->xyz[3 * a->col[k] + d]);
  int64_t *w = s->face_indices;
#define MB_TRI(A, B, C) (w[0] = (A), w[1] = (B), w[2] = (C), w += 3)
  for (int64_t f = 0; f < m->nf; f++) {
    const int64_t *v = m->face_indices + 3 * f;
    int64_t mid[3]; /* mid[t]: the midpoint of edge (v[t], v[t+1]), or -1 */
    int nsplit = 0;
    for (int t = 0; t < 3; t++) {
      int64_t p = v[t], q = v[(t + 1) % 3], lo = p < q ? p : q, hi = p < q ? q : p;
      int64_t id = edge_id[edge_slot(a, lo, hi)];
      mid[t] = id >= 0 ? m->nv + id : -1;
      nsplit += id >= 0;
    }
    if (nsplit == 3) {
      MB_TRI(v[0], mid[0], mid[2]);
      MB_TRI(mid[0], v[1], mid[1]);
      MB_TRI(mid[2], mid[1], v[2]);
      MB_TRI(mid[0], mid[1], mid[2]);
    } else if (nsplit == 0) {
      MB_TRI(v[0], v[1], v[2]);
    } else if (nsplit == 1) {
      int t = mid[0] >= 0 ? 0 : mid[1] >= 0 ? 1 : 2;
      int64_t a0 = v[t], b0 = v[(t + 1) % 3], c0 = v[(t + 2) % 3];
      MB_TRI(a0, mid[t], c0);
      MB_TRI(mid[t], b0, c0);
    } else { /* two: edge t = (a0, b0) unsplit, m1 on (b0, c0), m2 on (c0, a0) */
      int t = mid[0] < 0 ? 0 : mid[1] < 0 ? 1 : 2;
      int64_t a0 = v[t], b0 = v[(t + 1) % 3], c0 = v[(t + 2) % 3];
      int64_t m1 = mid[(t + 1) % 3], m2 = mid[(t + 2) % 3];
      double d1 = 0, d2 = 0;
      for (int d = 0; d < 3; d++) {
        double x1 = s->xyz[3 * m1 + d] - s->xyz[3 * a0 + d];
        double x2 = s->xyz[3 * m2 + d] - s->xyz[3 * b0 + d];
        d1 += x1 * x1;
        d2 += x2 * x2;
      }
      MB_TRI(m1, c0, m2);
      if (d1 <= d2) {
        MB_TRI(a0, b0, m1);
        MB_TRI(a0, m1, m2);
      } else {
        MB_TRI(a0, b0, m2);
        MB_TRI(b0, m1, m2);
      }
    }
  }
#undef MB_TRI
  for (int64_t f = 0; f <= nf_out; f++) s->face_offsets[f] = 3 * f;
  free(edge_id);
  *out = s;
  return MB_SUCCESS;
}

static mb_error subdivide_once(const mb_mesh *m, mb_mesh **out) {
  mb_adjacency *a = NULL;
  MB_CALL(mb_adjacency_build_opts(m, 0, &a));
  mb_error e = subdivide_marked(m, a, NULL, out);
  mb_adjacency_free(a);
  return e;
}

mb_error mb_generate_subdivide(const mb_mesh *m, int levels, mb_mesh **out) {
  MB_CHECK(levels >= 0, MB_ERR_ARG, "subdivision levels must be >= 0 (got %d)", levels);
  MB_CHECK(mb_mesh_is_triangles(m), MB_ERR_ARG,
           "midpoint subdivision needs a triangle mesh; '%s' has polygons", m->name);
  mb_mesh *cur = NULL;
  MB_CALL(mb_mesh_duplicate(m, &cur));
  for (int l = 0; l < levels; l++) {
    mb_mesh *next = NULL;
    mb_error e = subdivide_once(cur, &next);
    mb_mesh_free(cur);
    MB_CALL(e);
    cur = next;
  }
  *out = cur;
  return MB_SUCCESS;
}

typedef struct edge_len {
  double len2;
  int64_t slot;
} edge_len;

/* Longest first; equal lengths by CSR slot (deterministic). */
static int edge_len_cmp(const void *x, const void *y) {
  const edge_len *p = x, *q = y;
  if (p->len2 != q->len2) return p->len2 > q->len2 ? -1 : 1;
  return (p->slot > q->slot) - (p->slot < q->slot);
}

mb_error mb_generate_subdivide_to(const mb_mesh *m, int64_t nv_target, int *levels,
                                  mb_mesh **out) {
  MB_CHECK(mb_mesh_is_triangles(m), MB_ERR_ARG,
           "midpoint subdivision needs a triangle mesh; '%s' has polygons", m->name);
  MB_CHECK(nv_target >= m->nv && nv_target < ((int64_t)1 << 31), MB_ERR_ARG,
           "target vertex count %lld must be in [%lld, 2^31) for '%s'", (long long)nv_target,
           (long long)m->nv, m->name);
  mb_mesh *cur = NULL;
  MB_CALL(mb_mesh_duplicate(m, &cur));
  int full = 0;
  for (;;) {
    mb_adjacency *a = NULL;
    mb_error e = mb_adjacency_build_opts(cur, 0, &a);
    if (e) { mb_mesh_free(cur); MB_CALL(e); }
    int64_t ne = a->nnz / 2, k = nv_target - cur->nv;
    if (ne == 0 && k > 0) {
      mb_adjacency_free(a);
      mb_mesh_free(cur);
      MB_FAIL(MB_ERR_ARG, "'%s' has no edges to split", m->name);
    }
    mb_mesh *next = NULL;
    if (ne > 0 && k >= ne) { /* a whole 1-to-4 level still fits */
      e = subdivide_marked(cur, a, NULL, &next);
      full++;
    } else if (k > 0) { /* the k longest edges */
      edge_len *el = malloc(sizeof *el * (size_t)(ne ? ne : 1));
      uint8_t *split = calloc((size_t)(a->nnz ? a->nnz : 1), 1);
      if (!el || !split) e = MB_ERR_MEMORY;
      else {
        int64_t n = 0;
        for (int64_t i = 0; i < a->nv; i++)
          for (int64_t s = a->row[i]; s < a->row[i + 1]; s++) {
            int64_t j = a->col[s];
            if (j <= i) continue;
            double l2 = 0;
            for (int d = 0; d < 3; d++) {
              double x = cur->xyz[3 * j + d] - cur->xyz[3 * i + d];
              l2 += x * x;
            }
            el[n++] = (edge_len){l2, s};
          }
        qsort(el, (size_t)n, sizeof *el, edge_len_cmp);
        for (int64_t q = 0; q < k && q < n; q++) split[el[q].slot] = 1;
        e = subdivide_marked(cur, a, split, &next);
      }
      free(el);
      free(split);
      if (e == MB_ERR_MEMORY && !next) {
        mb_adjacency_free(a);
        mb_mesh_free(cur);
        MB_FAIL(MB_ERR_MEMORY, "out of memory");
      }
    }
    mb_adjacency_free(a);
    if (e) { mb_mesh_free(cur); MB_CALL(e); }
    if (!next) break;
    mb_mesh_free(cur);
    cur = next;
    if (cur->nv >= nv_target) break;
  }
  if (levels) *levels = full;
  *out = cur;
  return MB_SUCCESS;
}

mb_error mb_generate_unit_area(mb_mesh *m, double *area_before) {
  MB_CHECK(m->kind == MB_KIND_SURFACE && mb_mesh_is_triangles(m), MB_ERR_ARG,
           "unit-area scaling needs a triangle surface; '%s' is not one", m->name);
  double area = 0, c[3] = {0, 0, 0};
  for (int64_t f = 0; f < m->nf; f++) {
    const int64_t *v = m->face_indices + 3 * f;
    const double *p = m->xyz + 3 * v[0], *q = m->xyz + 3 * v[1], *r = m->xyz + 3 * v[2];
    double a[3] = {q[0] - p[0], q[1] - p[1], q[2] - p[2]};
    double b[3] = {r[0] - p[0], r[1] - p[1], r[2] - p[2]};
    double n[3] = {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                   a[0] * b[1] - a[1] * b[0]};
    double fa = 0.5 * sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    area += fa;
    for (int d = 0; d < 3; d++) c[d] += fa * ((p[d] + q[d] + r[d]) / 3.0);
  }
  MB_CHECK(isfinite(area) && area > 0, MB_ERR_NUMERIC,
           "%s: surface area is %g; cannot scale it to unit area", m->name, area);
  for (int d = 0; d < 3; d++) c[d] /= area;
  double s = 1.0 / sqrt(area);
  for (int64_t i = 0; i < m->nv; i++)
    for (int d = 0; d < 3; d++) m->xyz[3 * i + d] = (m->xyz[3 * i + d] - c[d]) * s;
  if (area_before) *area_before = area;
  return MB_SUCCESS;
}

static mb_error icosahedron(mb_mesh **out) {
  const double t = (1.0 + sqrt(5.0)) / 2.0;
  const double v[12][3] = {{-1, t, 0}, {1, t, 0}, {-1, -t, 0}, {1, -t, 0},
                           {0, -1, t}, {0, 1, t}, {0, -1, -t}, {0, 1, -t},
                           {t, 0, -1}, {t, 0, 1}, {-t, 0, -1}, {-t, 0, 1}};
  const int64_t f[20][3] = {{0, 11, 5}, {0, 5, 1},  {0, 1, 7},   {0, 7, 10}, {0, 10, 11},
                            {1, 5, 9},  {5, 11, 4}, {11, 10, 2}, {10, 7, 6}, {7, 1, 8},
                            {3, 9, 4},  {3, 4, 2},  {3, 2, 6},   {3, 6, 8},  {3, 8, 9},
                            {4, 9, 5},  {2, 4, 11}, {6, 2, 10},  {8, 6, 7},  {9, 8, 1}};
  mb_mesh *m = NULL;
  MB_CALL(mb_mesh_create("sphere", 12, 20, 60, &m));
  memcpy(m->xyz, v, sizeof v);
  memcpy(m->face_indices, f, sizeof f);
  for (int64_t k = 0; k <= 20; k++) m->face_offsets[k] = 3 * k;
  *out = m;
  return MB_SUCCESS;
}

mb_error mb_generate_sphere(int64_t min_vertices, double noise, uint64_t seed, mb_mesh **out) {
  MB_CHECK(min_vertices >= 1 && min_vertices <= ((int64_t)1 << 31), MB_ERR_ARG,
           "sphere size must be in [1, 2^31] vertices (got %lld)", (long long)min_vertices);
  MB_CHECK(noise >= 0 && isfinite(noise), MB_ERR_ARG, "noise must be >= 0 (got %g)", noise);
  int levels = 0;
  for (int64_t nv = 12; nv < min_vertices; nv = 10 * (((nv - 2) / 10) * 4) + 2) levels++;
  mb_mesh *ico = NULL, *s = NULL;
  MB_CALL(icosahedron(&ico));
  mb_error e = mb_generate_subdivide(ico, levels, &s);
  mb_mesh_free(ico);
  MB_CALL(e);
  uint64_t state = seed;
  for (int64_t i = 0; i < s->nv; i++) {
    double *p = s->xyz + 3 * i;
    double r = sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
    double u = (double)(mb_splitmix64(&state) >> 11) * 0x1.0p-53; /* [0, 1) */
    double scale = (1.0 + noise * (2.0 * u - 1.0)) / r;
    for (int d = 0; d < 3; d++) p[d] *= scale;
  }
  *out = s;
  return MB_SUCCESS;
}

/* ------------------------------------------------------------ grid2d */

mb_error mb_generate_grid2d(int64_t min_vertices, mb_mesh **out) {
  MB_CHECK(out, MB_ERR_ARG, "mb_generate_grid2d: NULL output");
  *out = NULL;
  MB_CHECK(min_vertices >= 1 && min_vertices <= ((int64_t)1 << 40), MB_ERR_ARG,
           "grid2d size must be in [1, 2^40] vertices (got %lld)", (long long)min_vertices);
  int64_t n = (int64_t)sqrt((double)min_vertices);
  while (n * n < min_vertices) n++;
  while (n > 1 && (n - 1) * (n - 1) >= min_vertices) n--;
  if (n < 2) n = 2;
  int64_t nv = n * n, nq = (n - 1) * (n - 1), nt = 2 * nq;
  char name[64];
  snprintf(name, sizeof name, "grid2d_%lld", (long long)nv);
  mb_mesh *m = NULL;
  MB_CALL(mb_mesh_create(name, nv, nt, 3 * nt, &m));
  m->kind = MB_KIND_TRIANGULATION2D;
  m->index = 0;
  const double h = 1.0 / (double)(n - 1);
  double *xyz = m->xyz;
  int64_t *idx = m->face_indices, *off = m->face_offsets;
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) {
      double *p = xyz + 3 * (j * n + i);
      p[0] = (double)i * h;
      p[1] = (double)j * h;
      p[2] = 0.0;
    }
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < n - 1; j++)
    for (int64_t i = 0; i < n - 1; i++) {
      int64_t v00 = j * n + i, v10 = v00 + 1, v01 = v00 + n, v11 = v01 + 1;
      int64_t *t = idx + 6 * (j * (n - 1) + i);
      t[0] = v00, t[1] = v10, t[2] = v11;
      t[3] = v00, t[4] = v11, t[5] = v01;
    }
#pragma omp parallel for schedule(static)
  for (int64_t f = 0; f <= nt; f++) off[f] = 3 * f;
  *out = m;
  return MB_SUCCESS;
}

/* ------------------------------------------------------------ grid3d */

static const char *const grid_field_names[] = {"sines", "gaussian", "noise"};

const char *mb_grid_field_kind_name(mb_grid_field_kind k) {
  return k >= 0 && k <= MB_GRID_NOISE ? grid_field_names[k] : "unknown";
}

int mb_grid_field_kind_from_name(const char *name) {
  for (int k = 0; k <= MB_GRID_NOISE; k++)
    if (!strcmp(name, grid_field_names[k])) return k;
  return -1;
}

static uint64_t grid_mix(uint64_t z) { /* splitmix64 finaliser */
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* The value of field kind k at point (k0, k1, k2) (z, y, x). */
static double grid_value(const mb_mesh *g, mb_grid_field_kind k, uint64_t seed, int64_t p,
                         const int64_t idx[3]) {
  const double two_pi = 6.283185307179586476925286766559;
  double x[3], L[3];
  for (int a = 0; a < 3; a++) {
    x[a] = g->origin[a] + (double)idx[a] * g->spacing[a];
    L[a] = (double)g->shape[a] * g->spacing[a];
  }
  switch (k) {
  case MB_GRID_SINES:
    return sin(two_pi * (x[0] - g->origin[0]) / L[0]) * sin(two_pi * (x[1] - g->origin[1]) / L[1]) *
           sin(two_pi * (x[2] - g->origin[2]) / L[2]);
  case MB_GRID_GAUSSIAN: {
    double s = fmin(L[0], fmin(L[1], L[2])) / 10, r2 = 0;
    for (int a = 0; a < 3; a++) {
      double c = g->origin[a] + 0.5 * (double)(g->shape[a] - 1) * g->spacing[a];
      r2 += (x[a] - c) * (x[a] - c);
    }
    return exp(-r2 / (2 * s * s));
  }
  case MB_GRID_NOISE:
  default:
    return (double)(grid_mix(seed * 0x100000001b3ull + (uint64_t)p) >> 11) * 0x1.0p-52 - 1.0;
  }
}

mb_error mb_generate_grid3d(const int64_t shape[3], const double origin[3],
                            const double spacing[3], int nfields, const char *const *names,
                            const mb_grid_field_kind *kinds, mb_dtype dtype, uint64_t seed,
                            mb_mesh **out) {
  char name[96];
  snprintf(name, sizeof name, "grid_%lldx%lldx%lld", (long long)shape[0], (long long)shape[1],
           (long long)shape[2]);
  mb_mesh *g;
  MB_CALL(mb_grid_create(name, shape, origin, spacing, &g));
  const size_t width = dtype == MB_FLOAT32 ? sizeof(float) : sizeof(double);
  void *buf = malloc(width * (size_t)g->nv);
  if (!buf) {
    mb_mesh_free(g);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for a grid of %lld points", (long long)g->nv);
  }
  mb_error e = MB_SUCCESS;
  for (int f = 0; f < nfields && !e; f++) {
#pragma omp parallel for schedule(static)
    for (int64_t k0 = 0; k0 < shape[0]; k0++)
      for (int64_t k1 = 0; k1 < shape[1]; k1++)
        for (int64_t k2 = 0; k2 < shape[2]; k2++) {
          const int64_t idx[3] = {k0, k1, k2}, p = (k0 * shape[1] + k1) * shape[2] + k2;
          double v = grid_value(g, kinds[f], seed, p, idx);
          if (dtype == MB_FLOAT32) ((float *)buf)[p] = (float)v;
          else ((double *)buf)[p] = v;
        }
    e = dtype == MB_FLOAT32 ? mb_mesh_set_field_f32(g, names[f], 1, buf)
                            : mb_mesh_set_field(g, names[f], 1, buf);
  }
  free(buf);
  if (e) {
    mb_mesh_free(g);
    MB_CALL(e);
  }
  *out = g;
  return MB_SUCCESS;
}
