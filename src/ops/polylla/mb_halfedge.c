/* meshbatch: half-edges of a planar triangulation for the Polylla op (see
 * mb_halfedge.h; rules in mb_polylla.h).
 *
 * Source: Salinas-Fernandez et al., "POLYLLA: polygonal meshing algorithm
 * based on terminal-edge regions", 2022, section 3 (the half-edge form of
 * the input triangulation). The twins are found as in a CSR adjacency
 * build: a counting sort of the half-edges by their smaller vertex (4 B a
 * half-edge: the ids alone, their keys read from the corners), then a
 * sort of each (small) bucket by the larger vertex; no hash table, so the
 * work is O(n) for bounded degree and the result is independent of the
 * thread count.
 */
#include "mb_halfedge.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mb_halfedge_free(mb_halfedge *he) {
  if (!he) return;
  free(he->vert);
  free(he->twin);
  memset(he, 0, sizeof *he);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* The larger vertex of half-edge h's edge. */
static inline int32_t edge_hi(const int32_t *vert, int32_t h) {
  int32_t a = vert[h], b = vert[mb_he_next(h)];
  return a < b ? b : a;
}

/* Sort a bucket of half-edges by (larger vertex, half-edge id), the keys
 * computed from vert (a bucket holds half-edges, 4 B each, not keys).
 * Buckets hold about six entries on a Delaunay triangulation: insertion
 * sort; the rare large fan is sorted as keys in a scratch array. Returns 0
 * when that scratch array cannot be had. */
static int sort_bucket(const int32_t *vert, uint32_t *a, int64_t n) {
  if (n > 32) {
    uint64_t *k = malloc(sizeof *k * (size_t)n);
    if (!k) return 0;
    for (int64_t i = 0; i < n; i++)
      k[i] = ((uint64_t)(uint32_t)edge_hi(vert, (int32_t)a[i]) << 32) | a[i];
    qsort(k, (size_t)n, sizeof *k, cmp_u64);
    for (int64_t i = 0; i < n; i++) a[i] = (uint32_t)k[i];
    free(k);
    return 1;
  }
  for (int64_t i = 1; i < n; i++) {
    uint32_t v = a[i];
    int32_t wv = edge_hi(vert, (int32_t)v);
    int64_t j = i - 1;
    while (j >= 0) {
      int32_t wj = edge_hi(vert, (int32_t)a[j]);
      if (wj < wv || (wj == wv && a[j] < v)) break;
      a[j + 1] = a[j];
      j--;
    }
    a[j + 1] = v;
  }
  return 1;
}

#define HE_NOBAD INT64_MAX

/* The message for the first bad edge: the run of equal keys holding
 * half-edge h in its (sorted) bucket. */
static mb_error edge_error(const mb_mesh *tri, const mb_halfedge *he, const uint32_t *bucket,
                           const int32_t *off, int64_t h) {
  int32_t a = he->vert[h], b = he->vert[mb_he_next((int32_t)h)];
  int32_t u = a < b ? a : b, w = a < b ? b : a;
  int64_t tris[8];
  int n = 0, total = 0;
  for (int64_t i = off[u]; i < off[u + 1]; i++) {
    if (edge_hi(he->vert, (int32_t)bucket[i]) != w) continue;
    int64_t g = (int64_t)bucket[i];
    if (n < 8) tris[n++] = g / 3;
    total++;
  }
  const char *name = tri->name ? tri->name : "";
  if (total == 2)
    MB_FAIL(MB_ERR_FORMAT,
            "mesh '%s': triangle %lld (0-based) and triangle %lld both use edge (%d, %d) in "
            "the same direction after counter-clockwise orientation (overlapping triangles); "
            "not a planar manifold triangulation",
            name, (long long)tris[0], (long long)tris[1], (int)u, (int)w);
  char list[160] = "";
  size_t len = 0;
  for (int i = 0; i < n && len < sizeof list - 24; i++)
    len += (size_t)snprintf(list + len, sizeof list - len, "%s%lld", i ? ", " : "",
                            (long long)tris[i]);
  MB_FAIL(MB_ERR_FORMAT,
          "mesh '%s': triangle %lld (0-based): edge (%d, %d) is shared by %d triangles (%s%s); "
          "not a planar manifold triangulation",
          name, (long long)tris[0], (int)u, (int)w, total, list, total > n ? ", ..." : "");
}

mb_error mb_halfedge_build(const mb_mesh *tri, mb_halfedge *he) {
  MB_CHECK(he, MB_ERR_ARG, "mb_halfedge_build: NULL argument");
  memset(he, 0, sizeof *he);
  MB_CHECK(tri, MB_ERR_ARG, "mb_halfedge_build: NULL mesh");
  return mb_halfedge_build_mapped(tri, NULL, he);
}

/* Vertex v's position [3]: the map's, or tri's own. */
static inline const double *he_point(const mb_halfedge_map *map, const double *x, int64_t v) {
  return map ? map->point(map->ctx, v) : x + 3 * v;
}

mb_error mb_halfedge_build_mapped(const mb_mesh *tri, const mb_halfedge_map *map,
                                  mb_halfedge *he) {
  MB_CHECK(he, MB_ERR_ARG, "mb_halfedge_build_mapped: NULL argument");
  memset(he, 0, sizeof *he);
  MB_CHECK(tri && (!map || (map->index && map->point)), MB_ERR_ARG,
           "mb_halfedge_build_mapped: NULL mesh or map");
  const char *name = tri->name ? tri->name : "";
  const int64_t nf = tri->nf, nv = map ? map->nv : tri->nv;
  MB_CHECK(nf > 0 && nv > 0, MB_ERR_ARG, "mesh '%s' has no triangles (%lld faces, %lld vertices)",
           name, (long long)nf, (long long)nv);
  MB_CHECK(nf <= INT32_MAX / 3 && nv <= INT32_MAX, MB_ERR_ARG,
           "mesh '%s' is too large for 32-bit half-edge ids (%lld triangles, %lld vertices; "
           "at most %d triangles)",
           name, (long long)nf, (long long)nv, INT32_MAX / 3);

  /* Every face a triangle (face_offsets[f] = 3 f). */
  const int64_t *fo = tri->face_offsets;
  int64_t bad = HE_NOBAD;
#pragma omp parallel for schedule(static) reduction(min : bad)
  for (int64_t f = 0; f < nf; f++)
    if (fo[f] != 3 * f || fo[f + 1] != 3 * f + 3) bad = f < bad ? f : bad;
  if (bad != HE_NOBAD)
    MB_FAIL(MB_ERR_ARG,
            "mesh '%s': face %lld (0-based) has %lld vertices; Polylla needs a triangulation "
            "(every face a triangle)",
            name, (long long)bad, (long long)(fo[bad + 1] - fo[bad]));

  const int32_t nt = (int32_t)nf, nh = 3 * nt;
  he->nt = nt;
  he->nv = (int32_t)nv;
  he->vert = malloc(sizeof(int32_t) * (size_t)nh);
  he->twin = malloc(sizeof(int32_t) * (size_t)nh);
  if (!he->vert || !he->twin) {
    mb_halfedge_free(he);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for the half-edges of mesh '%s' (%lld triangles)", name,
            (long long)nf);
  }
  int32_t *vert = he->vert, *twin = he->twin;

  /* Orientation: each triangle counter-clockwise (mb_polylla.h, "Half-edges"). */
  const int64_t *fi = tri->face_indices;
  const double *x = tri->xyz; /* without a map */
  int64_t bad_range = HE_NOBAD, bad_coord = HE_NOBAD, bad_degen = HE_NOBAD;
#pragma omp parallel for schedule(static) reduction(min : bad_range, bad_coord, bad_degen)
  for (int32_t t = 0; t < nt; t++) {
    int64_t a = fi[3 * (int64_t)t], b = fi[3 * (int64_t)t + 1], c = fi[3 * (int64_t)t + 2];
    if (map) {
      a = map->index(map->ctx, a);
      b = map->index(map->ctx, b);
      c = map->index(map->ctx, c);
    }
    vert[3 * t] = vert[3 * t + 1] = vert[3 * t + 2] = 0;
    if (a < 0 || a >= nv || b < 0 || b >= nv || c < 0 || c >= nv) {
      bad_range = t < bad_range ? t : bad_range;
      continue;
    }
    const double *pa = he_point(map, x, a), *pb = he_point(map, x, b), *pc = he_point(map, x, c);
    double xa = pa[0], ya = pa[1], xb = pb[0], yb = pb[1];
    double xc = pc[0], yc = pc[1];
    if (!isfinite(xa) || !isfinite(ya) || !isfinite(xb) || !isfinite(yb) || !isfinite(xc) ||
        !isfinite(yc)) {
      bad_coord = t < bad_coord ? t : bad_coord;
      continue;
    }
    double o = (xb - xa) * (yc - ya) - (yb - ya) * (xc - xa);
    if (o < 0) {
      int64_t s = b;
      b = c;
      c = s;
    } else if (!(o > 0)) {
      bad_degen = t < bad_degen ? t : bad_degen;
    }
    vert[3 * t] = (int32_t)a;
    vert[3 * t + 1] = (int32_t)b;
    vert[3 * t + 2] = (int32_t)c;
  }
  if (bad_range != HE_NOBAD || bad_coord != HE_NOBAD || bad_degen != HE_NOBAD) {
    int64_t t = bad_range != HE_NOBAD ? bad_range : bad_coord != HE_NOBAD ? bad_coord : bad_degen;
    long long a = (long long)fi[3 * t], b = (long long)fi[3 * t + 1], c = (long long)fi[3 * t + 2];
    mb_halfedge_free(he);
    if (bad_range != HE_NOBAD)
      MB_FAIL(MB_ERR_FORMAT,
              "mesh '%s': triangle %lld (0-based) has a vertex index out of range "
              "(%lld %lld %lld; %lld vertices)",
              name, (long long)t, a, b, c, (long long)nv);
    if (bad_coord != HE_NOBAD)
      MB_FAIL(MB_ERR_FORMAT,
              "mesh '%s': triangle %lld (0-based) has a vertex with a non-finite coordinate "
              "(vertices %lld %lld %lld)",
              name, (long long)t, a, b, c);
    /* the face's own indices named, their positions by the mapped numbers */
    const double *pa = he_point(map, x, map ? map->index(map->ctx, a) : a);
    const double *pb = he_point(map, x, map ? map->index(map->ctx, b) : b);
    const double *pc = he_point(map, x, map ? map->index(map->ctx, c) : c);
    MB_FAIL(MB_ERR_FORMAT,
            "mesh '%s': triangle %lld (0-based) is degenerate: zero area (collinear or "
            "repeated vertices %lld (%.17g, %.17g), %lld (%.17g, %.17g), %lld (%.17g, %.17g))",
            name, (long long)t, a, pa[0], pa[1], b, pb[0], pb[1], c, pc[0], pc[1]);
  }

  if (map && map->faces_read) map->faces_read(map->ctx); /* fi is not read again */

  /* Counting sort by the smaller vertex: off[u] counts, then holds the end
   * of bucket u, then (after the fill, which decrements it) its start. */
  int32_t *off = calloc((size_t)nv + 1, sizeof *off);
  uint32_t *bucket = malloc(sizeof *bucket * (size_t)nh);
  if (!off || !bucket) {
    free(off);
    free(bucket);
    if (map && map->faces_restore) map->faces_restore(map->ctx, vert, nt);
    mb_halfedge_free(he);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for the edge buckets of mesh '%s'", name);
  }
#pragma omp parallel for schedule(static)
  for (int32_t h = 0; h < nh; h++) {
    int32_t a = vert[h], b = vert[mb_he_next(h)];
    int32_t u = a < b ? a : b;
#pragma omp atomic
    off[u]++;
  }
  for (int64_t u = 1; u <= nv; u++) off[u] += off[u - 1];
#pragma omp parallel for schedule(static)
  for (int32_t h = 0; h < nh; h++) {
    int32_t a = vert[h], b = vert[mb_he_next(h)];
    int32_t u = a < b ? a : b;
    int32_t p;
#pragma omp atomic capture
    p = --off[u];
    bucket[p] = (uint32_t)h;
  }

  /* Matching inside each bucket: equal larger vertex = same edge. A run of
   * one is a boundary half-edge, of two a twin pair (opposite directions),
   * longer runs are non-manifold. The first bad edge is the one of the
   * smallest half-edge id (so of the first triangle). */
  int64_t bad_edge = HE_NOBAD;
  int sorted = 1;
#pragma omp parallel for schedule(dynamic, 4096) reduction(min : bad_edge, sorted)
  for (int64_t u = 0; u < nv; u++) {
    int64_t s = off[u], e = off[u + 1];
    if (e - s > 1 && !sort_bucket(vert, bucket + s, e - s)) {
      sorted = 0;
      continue;
    }
    for (int64_t i = s; i < e;) {
      const int32_t w = edge_hi(vert, (int32_t)bucket[i]);
      int64_t j = i + 1;
      while (j < e && edge_hi(vert, (int32_t)bucket[j]) == w) j++;
      int32_t h0 = (int32_t)bucket[i];
      if (j - i == 1) {
        twin[h0] = -1;
      } else {
        int32_t h1 = (int32_t)bucket[i + 1];
        if (j - i == 2 && vert[h0] != vert[h1]) {
          twin[h0] = h1;
          twin[h1] = h0;
        } else {
          for (int64_t k = i; k < j; k++) twin[bucket[k]] = -1;
          bad_edge = h0 < bad_edge ? h0 : bad_edge;
        }
      }
      i = j;
    }
  }
  mb_error err = MB_SUCCESS;
  if (!sorted)
    err = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                       "out of memory sorting the edges of mesh '%s'", name);
  else if (bad_edge != HE_NOBAD) err = edge_error(tri, he, bucket, off, bad_edge);
  free(off);
  free(bucket);
  if (err) {
    if (map && map->faces_restore) map->faces_restore(map->ctx, vert, nt);
    mb_halfedge_free(he);
    return err;
  }
  return MB_SUCCESS;
}
