/* meshbatch: scale-test mesh generators (see mb_generate.h). */
#include "mb_generate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mb_adjacency.h"

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

static mb_error subdivide_once(const mb_mesh *m, mb_mesh **out) {
  mb_adjacency *a = NULL;
  MB_CALL(mb_adjacency_build(m, &a));
  /* number the undirected edges (i < j) in CSR order: new vertex nv + id */
  int64_t *edge_id = malloc(sizeof *edge_id * (size_t)(a->nnz ? a->nnz : 1));
  if (!edge_id) { mb_adjacency_free(a); MB_FAIL(MB_ERR_MEMORY, "out of memory"); }
  int64_t ne = 0;
  for (int64_t i = 0; i < a->nv; i++)
    for (int64_t k = a->row[i]; k < a->row[i + 1]; k++)
      edge_id[k] = a->col[k] > i ? ne++ : -1;
  mb_mesh *s = NULL;
  mb_error e = mb_mesh_create(m->name, m->nv + ne, 4 * m->nf, 12 * m->nf, &s);
  if (e) { free(edge_id); mb_adjacency_free(a); MB_CALL(e); }
  s->index = m->index;
  memcpy(s->xyz, m->xyz, sizeof(double) * 3 * (size_t)m->nv);
  for (int64_t i = 0; i < a->nv; i++)
    for (int64_t k = a->row[i]; k < a->row[i + 1]; k++)
      if (edge_id[k] >= 0)
        for (int d = 0; d < 3; d++)
          s->xyz[3 * (m->nv + edge_id[k]) + d] =
              0.5 * (m->xyz[3 * i + d] + m->xyz[3 * a->col[k] + d]);
  for (int64_t f = 0; f < m->nf; f++) {
    const int64_t *v = m->face_indices + 3 * f;
    int64_t mid[3];
    for (int t = 0; t < 3; t++) {
      int64_t p = v[t], q = v[(t + 1) % 3], lo = p < q ? p : q, hi = p < q ? q : p;
      mid[t] = m->nv + edge_id[edge_slot(a, lo, hi)];
    }
    const int64_t tri[4][3] = {{v[0], mid[0], mid[2]}, {mid[0], v[1], mid[1]},
                               {mid[2], mid[1], v[2]}, {mid[0], mid[1], mid[2]}};
    memcpy(s->face_indices + 12 * f, tri, sizeof tri);
  }
  for (int64_t f = 0; f <= 4 * m->nf; f++) s->face_offsets[f] = 3 * f;
  free(edge_id);
  mb_adjacency_free(a);
  *out = s;
  return MB_SUCCESS;
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

/* splitmix64: a small, well-mixed deterministic generator. */
static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
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
    double u = (double)(splitmix64(&state) >> 11) * 0x1.0p-53; /* [0, 1) */
    double scale = (1.0 + noise * (2.0 * u - 1.0)) / r;
    for (int d = 0; d < 3; d++) p[d] *= scale;
  }
  *out = s;
  return MB_SUCCESS;
}
