/* meshbatch: scale-test mesh generators (see mb_generate.h). */
#include "mb_generate.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libqhull_r/qhull_ra.h>

#include "mb_adjacency.h"
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

/* ------------------------------------------------------------ Delaunay */

/* Uniform double in [0, 1) with 53 random bits. */
static double uniform01(uint64_t *state) {
  return (double)(splitmix64(state) >> 11) * 0x1.0p-53;
}

/* A standard normal draw (Box-Muller, one of the pair). */
static double normal01(uint64_t *state) {
  double u = 1.0 - uniform01(state); /* (0, 1] */
  double v = uniform01(state);
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* npoints points [n, 2] of the chosen distribution (see mb_generate.h). */
static void delaunay_points(int64_t n, uint64_t seed, int clustered, double *p) {
  uint64_t st = seed;
  enum { NC = 8 };
  double cx[NC], cy[NC], sd[NC];
  if (clustered)
    for (int c = 0; c < NC; c++) {
      cx[c] = 0.15 + 0.7 * uniform01(&st);
      cy[c] = 0.15 + 0.7 * uniform01(&st);
      sd[c] = 0.02 + 0.06 * uniform01(&st);
    }
  for (int64_t i = 0; i < n; i++) {
    double x, y;
    if (!clustered || uniform01(&st) < 0.1) {
      x = uniform01(&st);
      y = uniform01(&st);
    } else {
      int c = (int)(splitmix64(&st) % NC);
      do {
        x = cx[c] + sd[c] * normal01(&st);
        y = cy[c] + sd[c] * normal01(&st);
      } while (!(x >= 0.0 && x < 1.0 && y >= 0.0 && y < 1.0));
    }
    p[2 * i] = x;
    p[2 * i + 1] = y;
  }
}

/* Twice the signed area of (a, b, c) in the plane. */
static double orient2(const double *p, int64_t a, int64_t b, int64_t c) {
  return (p[2 * b] - p[2 * a]) * (p[2 * c + 1] - p[2 * a + 1]) -
         (p[2 * b + 1] - p[2 * a + 1]) * (p[2 * c] - p[2 * a]);
}

/* Physical memory in bytes, 0 if unknown. */
static double physical_memory(void) {
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  if (pages > 0 && size > 0) return (double)pages * (double)size;
#endif
  return 0;
}

/* Run qhull on pts [n, 2]; fill *tri (malloc'ed, [*nt, 3], CCW, smallest
 * index first) and count the zero-area triangles dropped. */
static mb_error delaunay_qhull(int64_t n, double *pts, int64_t **tri, int64_t *nt,
                               int64_t *ndegenerate) {
  qhT qh_qh;
  qhT *qh = &qh_qh;
  FILE *err = tmpfile();
  char flags[] = "qhull d Qbb Qc Qz Q12 Qt";
  qh_zero(qh, err ? err : stderr);
  int code = qh_new_qhull(qh, 2, (int)n, pts, False, flags, NULL, err ? err : stderr);
  mb_error e = MB_SUCCESS;
  if (code != 0) {
    char msg[512] = "";
    if (err) {
      rewind(err);
      size_t got = fread(msg, 1, sizeof msg - 1, err);
      msg[got] = '\0';
      for (char *c = msg; *c; c++)
        if (*c == '\n') *c = ' ';
    }
    e = mb_error_set(MB_ERR_NUMERIC, __FILE__, __LINE__, __func__,
                     "qhull failed on %lld points (exit code %d): %s", (long long)n, code, msg);
  }
  int64_t count = 0, m = 0, degenerate = 0;
  facetT *facet;
  vertexT *vertex, **vertexp;
  if (!e) {
    FORALLfacets if (!facet->upperdelaunay) count++;
    *tri = malloc(sizeof **tri * (size_t)(3 * (count ? count : 1)));
    if (!*tri)
      e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                       "out of memory for %lld triangles", (long long)count);
  }
  if (!e) {
    FORALLfacets {
      if (facet->upperdelaunay) continue;
      int64_t v[3];
      int k = 0, bad = 0;
      FOREACHvertex_(facet->vertices) {
        int id = qh_pointid(qh, vertex->point);
        if (k < 3) v[k] = id;
        bad |= id < 0 || id >= n;
        k++;
      }
      if (k != 3 || bad) {
        e = mb_error_set(MB_ERR_NUMERIC, __FILE__, __LINE__, __func__,
                         "qhull gave a lower Delaunay facet with %d vertices%s", k,
                         bad ? " (or an unknown point)" : "");
        break;
      }
      double o = orient2(pts, v[0], v[1], v[2]);
      if (o == 0.0) {
        degenerate++;
        continue;
      }
      if (o < 0) {
        int64_t t = v[1];
        v[1] = v[2];
        v[2] = t;
      }
      int r = v[0] < v[1] ? (v[0] < v[2] ? 0 : 2) : (v[1] < v[2] ? 1 : 2);
      for (int j = 0; j < 3; j++) (*tri)[3 * m + j] = v[(r + j) % 3];
      m++;
    }
  }
  int curlong, totlong;
  qh_freeqhull(qh, !qh_ALL);
  qh_memfreeshort(qh, &curlong, &totlong);
  if (err) fclose(err);
  if (e) {
    free(*tri);
    *tri = NULL;
    return e;
  }
  *nt = m;
  *ndegenerate = degenerate;
  return MB_SUCCESS;
}

/* Sort triangles (a, b, c), a the smallest, by (a, b, c) into out: a
 * counting sort on a, then an insertion sort of each (short) bucket. */
static mb_error sort_triangles(int64_t nv, int64_t nt, const int64_t *tri, int64_t *out) {
  int64_t *start = calloc((size_t)nv + 2, sizeof *start);
  MB_CHECK(start, MB_ERR_MEMORY, "out of memory sorting %lld triangles", (long long)nt);
  for (int64_t t = 0; t < nt; t++) start[tri[3 * t] + 2]++;
  for (int64_t v = 0; v < nv; v++) start[v + 2] += start[v + 1];
  for (int64_t t = 0; t < nt; t++) {
    int64_t *d = out + 3 * start[tri[3 * t] + 1]++;
    memcpy(d, tri + 3 * t, 3 * sizeof *d);
  }
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < nv; v++) {
    int64_t *row = out + 3 * start[v];
    int64_t n = start[v + 1] - start[v];
    for (int64_t i = 1; i < n; i++) {
      int64_t b = row[3 * i + 1], c = row[3 * i + 2], j = i;
      while (j > 0 && (row[3 * (j - 1) + 1] > b ||
                       (row[3 * (j - 1) + 1] == b && row[3 * (j - 1) + 2] > c))) {
        memcpy(row + 3 * j, row + 3 * (j - 1), 3 * sizeof *row);
        j--;
      }
      row[3 * j] = v;
      row[3 * j + 1] = b;
      row[3 * j + 2] = c;
    }
  }
  free(start);
  return MB_SUCCESS;
}

/* The position of cell (x, y) of a 2^21 x 2^21 grid along a Hilbert curve
 * (D. Hilbert, "Ueber die stetige Abbildung einer Linie auf ein
 * Flaechenstueck", Math. Ann. 38, 1891) that starts in cell (0, 0) and
 * ends in cell (2^21 - 1, 0): 42 bits, two a level from the coarsest.
 * At each level the quadrant, seen in the current sub-square's frame,
 * gives the digit, (0, 0) 0, (0, 1) 1, (1, 1) 2, (1, 0) 3; the first
 * quadrant's sub-curve is the transposed curve (swap x and y), the last
 * one's the anti-transposed (swap, then complement both), the middle two
 * are the curve itself. Consecutive cells along it share a side. */
static uint64_t hilbert_key(uint32_t x, uint32_t y) {
  uint64_t key = 0;
  uint32_t swap = 0, flip = 0;
  for (int b = 20; b >= 0; b--) {
    uint32_t bx = (x >> b) & 1u, by = (y >> b) & 1u;
    if (swap) {
      uint32_t t = bx;
      bx = by;
      by = t;
    }
    bx ^= flip;
    by ^= flip;
    uint32_t d = (bx << 1) | (bx ^ by);
    key = (key << 2) | d;
    if (d == 0) swap ^= 1u;
    else if (d == 3) swap ^= 1u, flip ^= 1u;
  }
  return key;
}

/* perm [n]: the points of p [n, 2] (in [0, 1)^2) in Hilbert-curve order
 * of 2^21 x 2^21 cells, ties (points in one cell) in index order: a
 * stable LSD radix sort of the 42-bit keys, 3 passes of 14 bits. */
static mb_error hilbert_order(int64_t n, const double *p, int64_t *perm) {
  uint64_t *key = malloc(sizeof *key * (size_t)n), *key2 = malloc(sizeof *key2 * (size_t)n);
  int64_t *perm2 = malloc(sizeof *perm2 * (size_t)n);
  int64_t *count = malloc(sizeof *count * ((size_t)1 << 14));
  if (!key || !key2 || !perm2 || !count) {
    free(key), free(key2), free(perm2), free(count);
    MB_FAIL(MB_ERR_MEMORY, "out of memory ordering %lld points", (long long)n);
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) {
    uint32_t x = (uint32_t)(p[2 * i] * 2097152.0), y = (uint32_t)(p[2 * i + 1] * 2097152.0);
    key[i] = hilbert_key(x, y);
    perm[i] = i;
  }
  for (int pass = 0; pass < 3; pass++) {
    int shift = 14 * pass;
    memset(count, 0, sizeof *count * ((size_t)1 << 14));
    for (int64_t i = 0; i < n; i++) count[(key[i] >> shift) & 0x3fff]++;
    int64_t sum = 0;
    for (int b = 0; b < (1 << 14); b++) {
      int64_t c = count[b];
      count[b] = sum;
      sum += c;
    }
    for (int64_t i = 0; i < n; i++) {
      int64_t d = count[(key[i] >> shift) & 0x3fff]++;
      key2[d] = key[i];
      perm2[d] = perm[i];
    }
    uint64_t *tk = key;
    key = key2, key2 = tk;
    memcpy(perm, perm2, sizeof *perm * (size_t)n);
  }
  free(key), free(key2), free(perm2), free(count);
  return MB_SUCCESS;
}

mb_error mb_generate_delaunay(int64_t npoints, uint64_t seed, int clustered, mb_mesh **out) {
  MB_CHECK(out, MB_ERR_ARG, "mb_generate_delaunay: NULL output");
  *out = NULL;
  MB_CHECK(npoints >= 3 && npoints <= INT_MAX, MB_ERR_ARG,
           "Delaunay point count must be in [3, %d] (got %lld)", INT_MAX, (long long)npoints);
  MB_CHECK(clustered == 0 || clustered == 1, MB_ERR_ARG,
           "distribution must be uniform (0) or clustered (1), got %d", clustered);
  double mem = physical_memory(), need = 1024.0 * (double)npoints;
  MB_CHECK(mem == 0 || need < mem, MB_ERR_MEMORY,
           "a Delaunay triangulation of %lld points needs about %.1f GB while qhull runs, "
           "more than this machine's %.1f GB",
           (long long)npoints, need / 1e9, mem / 1e9);
  double *pts = malloc(sizeof *pts * 2 * (size_t)npoints);
  MB_CHECK(pts, MB_ERR_MEMORY, "out of memory for %lld points", (long long)npoints);
  double t0 = mb_wtime();
  delaunay_points(npoints, seed, clustered, pts);
  /* The vertices are numbered along a Hilbert curve (sorted[k] =
   * pts[perm[k]]), and qhull gets them in that order. */
  int64_t *perm = malloc(sizeof *perm * (size_t)npoints);
  double *sorted = malloc(sizeof *sorted * 2 * (size_t)npoints);
  mb_error e = perm && sorted ? hilbert_order(npoints, pts, perm)
                              : mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                                             "out of memory for %lld points", (long long)npoints);
  if (!e) {
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < npoints; k++) {
      sorted[2 * k] = pts[2 * perm[k]];
      sorted[2 * k + 1] = pts[2 * perm[k] + 1];
    }
  }
  free(pts);
  free(perm);
  pts = sorted;
  int64_t *tri = NULL, nt = 0, ndeg = 0;
  if (!e) e = delaunay_qhull(npoints, pts, &tri, &nt, &ndeg);
  if (e) {
    free(pts);
    MB_CALL(e);
  }
  double t1 = mb_wtime();
  /* Points that are no triangle's vertex ('Qc': nearly coincident) go. */
  int64_t *newid = calloc((size_t)npoints, sizeof *newid), nv = 0;
  if (!newid) {
    free(pts);
    free(tri);
    MB_FAIL(MB_ERR_MEMORY, "out of memory");
  }
  for (int64_t k = 0; k < 3 * nt; k++) newid[tri[k]] = 1;
  for (int64_t i = 0; i < npoints; i++) newid[i] = newid[i] ? nv++ : -1;
  if (nv < npoints)
    for (int64_t k = 0; k < 3 * nt; k++) tri[k] = newid[tri[k]];
  char name[64];
  snprintf(name, sizeof name, "delaunay_%lld", (long long)npoints);
  mb_mesh *m = NULL;
  e = nt > 0 ? mb_mesh_create(name, nv, nt, 3 * nt, &m)
             : mb_error_set(MB_ERR_NUMERIC, __FILE__, __LINE__, __func__,
                            "qhull gave no triangle for %lld points", (long long)npoints);
  if (!e) e = sort_triangles(nv, nt, tri, m->face_indices);
  free(tri);
  if (e) {
    free(pts);
    free(newid);
    mb_mesh_free(m);
    MB_CALL(e);
  }
  m->kind = MB_KIND_TRIANGULATION2D;
  m->index = 0;
  for (int64_t i = 0; i < npoints; i++)
    if (newid[i] >= 0) {
      m->xyz[3 * newid[i]] = pts[2 * i];
      m->xyz[3 * newid[i] + 1] = pts[2 * i + 1];
      m->xyz[3 * newid[i] + 2] = 0.0;
    }
  for (int64_t f = 0; f <= nt; f++) m->face_offsets[f] = 3 * f;
  free(pts);
  free(newid);
  mb_log(MB_LOG_VERBOSE,
         "delaunay: %lld points (%s, seed %llu): %lld vertices, %lld triangles, %lld "
         "zero-area triangles dropped, %lld points not in the triangulation; qhull %.2f s, "
         "total %.2f s",
         (long long)npoints, clustered ? "clustered" : "uniform", (unsigned long long)seed,
         (long long)nv, (long long)nt, (long long)ndeg, (long long)(npoints - nv), t1 - t0,
         mb_wtime() - t0);
  *out = m;
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
