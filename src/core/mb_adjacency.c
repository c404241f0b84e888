/* meshbatch: vertex adjacency in CSR form (see mb_adjacency.h).
 *
 * Construction is a counting sort: every face edge (a, b) adds the directed
 * entries a->b and b->a (with the face's opposite vertex for triangles) into
 * per-vertex buckets in face order; each bucket is then sorted by neighbour
 * (stably, so opposite vertices stay in face order) and equal neighbours are
 * collapsed. An edge seen in exactly one face is a boundary edge.
 */
#include "mb_adjacency.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Stable sort of one bucket by neighbour c[0..n), carrying the opposite
 * vertices o (NULL without them): insertion sort for the usual short rows
 * (about 6 entries per vertex on a triangle mesh), a merge sort through tc
 * and to for long ones (hub vertices), so that opposite vertices stay in
 * face order. */
static void sort_bucket(int32_t *c, int32_t *o, int64_t n, int32_t *tc, int32_t *to) {
  if (n <= 32 || !tc) {
    for (int64_t k = 1; k < n; k++) {
      const int32_t xc = c[k], xo = o ? o[k] : 0;
      int64_t m = k - 1;
      while (m >= 0 && c[m] > xc) {
        c[m + 1] = c[m];
        if (o) o[m + 1] = o[m];
        m--;
      }
      c[m + 1] = xc;
      if (o) o[m + 1] = xo;
    }
    return;
  }
  const int64_t h = n / 2;
  sort_bucket(c, o, h, tc, to);
  sort_bucket(c + h, o ? o + h : NULL, n - h, tc, to);
  int64_t i = 0, j = h, k = 0;
  while (i < h || j < n) {
    const int64_t s = j >= n || (i < h && c[i] <= c[j]) ? i++ : j++;
    tc[k] = c[s];
    if (o) to[k] = o[s];
    k++;
  }
  memcpy(c, tc, sizeof *c * (size_t)n);
  if (o) memcpy(o, to, sizeof *o * (size_t)n);
}

void mb_adjacency_free(mb_adjacency *a) {
  if (!a) return;
  free(a->row);
  free(a->col);
  free(a->opp_row);
  free(a->opp);
  free(a->on_boundary);
  free(a->brow);
  free(a->bcol);
  free(a);
}

/* Visit every edge of every face as (a, b, opposite or -1); self-loops skipped. */
#define MB_FOR_EACH_FACE_EDGE(m, tri, ...)                                     \
  for (int64_t f_ = 0; f_ < (m)->nf; f_++) {                                   \
    int64_t s_ = (m)->face_offsets[f_], k_ = (m)->face_offsets[f_ + 1] - s_;  \
    const int64_t *v_ = (m)->face_indices + s_;                                \
    for (int64_t t_ = 0; t_ < k_; t_++) {                                      \
      int64_t a = v_[t_], b = v_[(t_ + 1) % k_];                              \
      int64_t o = (tri) ? v_[(t_ + 2) % 3] : -1;                               \
      if (a == b) continue;                                                    \
      __VA_ARGS__                                                              \
    }                                                                          \
  }

/* The bucket sizes (fill = 0) or the buckets' neighbours (fill = 1, start
 * the cursor) of every face edge, faces spread over the OpenMP threads:
 * the order within a bucket is then arbitrary (the buckets are sorted and
 * collapsed after), so this serves the build without opposite vertices. */
static void face_edges_parallel(const mb_mesh *m, int fill, int64_t *start, int32_t *bc) {
#pragma omp parallel for schedule(static)
  for (int64_t f = 0; f < m->nf; f++) {
    const int64_t s = m->face_offsets[f], k = m->face_offsets[f + 1] - s;
    const int64_t *v = m->face_indices + s;
    for (int64_t t = 0; t < k; t++) {
      const int64_t a = v[t], b = v[(t + 1) % k];
      if (a == b) continue;
      if (!fill) {
#pragma omp atomic update
        start[a + 2]++;
#pragma omp atomic update
        start[b + 2]++;
        continue;
      }
      int64_t pa, pb;
#pragma omp atomic capture
      pa = start[a + 1]++;
#pragma omp atomic capture
      pb = start[b + 1]++;
      bc[pa] = (int32_t)b;
      bc[pb] = (int32_t)a;
    }
  }
}

mb_error mb_adjacency_build(const mb_mesh *m, mb_adjacency **out) {
  return mb_adjacency_build_opts(m, MB_ADJ_OPPOSITE, out);
}

/* Memory while building (nent = 2 x face edges, about 6 nv on a triangle
 * mesh): start[nv + 2] int64, the buckets' neighbours (4 bytes per entry)
 * and, with opposites, their opposite vertices (4 more); then the result
 * (mb_adjacency.h); the buckets are freed before the boundary lists. */
mb_error mb_adjacency_build_opts(const mb_mesh *m, unsigned flags, mb_adjacency **out) {
  const int64_t nv = m->nv;
  const int tri = mb_mesh_is_triangles(m) && (flags & MB_ADJ_OPPOSITE);
  MB_CHECK(nv < INT32_MAX, MB_ERR_ARG,
           "mesh '%s' has %lld vertices: the adjacency builder takes fewer than 2^31",
           m->name ? m->name : "mesh", (long long)nv);
  /* while collapsing, col[k] carries SHARED when its edge is in two or more
   * faces (not a boundary edge); cleared when the boundary lists are made */
  const int64_t SHARED = (int64_t)1 << 62;
  int64_t *start = NULL;
  int32_t *bc = NULL, *bo = NULL; /* bucket neighbours and opposite vertices */
  mb_adjacency *a;
  MB_CALLOC(a, 1);
  a->nv = nv;

  /* 1. bucket sizes, then the buckets in face order (start[] is the fill
   * cursor: afterwards start[i] and start[i + 1] bound bucket i) */
  start = mb_zalloc((size_t)nv + 2, sizeof *start);
  if (!start) goto oom;
  if (tri) { /* opposite vertices keep face order within a bucket: one thread */
    MB_FOR_EACH_FACE_EDGE(m, tri, { (void)o; start[a + 2]++; start[b + 2]++; });
  } else {
    face_edges_parallel(m, 0, start, NULL);
  }
  for (int64_t i = 0; i < nv; i++) start[i + 2] += start[i + 1];
  const int64_t nent = start[nv + 1];
  bc = mb_alloc(sizeof *bc * (size_t)(nent ? nent : 1));
  if (!bc) goto oom;
  if (tri && !(bo = mb_alloc(sizeof *bo * (size_t)(nent ? nent : 1)))) goto oom;
  if (tri) {
    MB_FOR_EACH_FACE_EDGE(m, tri, {
      const int64_t pa = start[a + 1]++, pb = start[b + 1]++;
      bc[pa] = (int32_t)b;
      bc[pb] = (int32_t)a;
      bo[pa] = bo[pb] = (int32_t)o;
    });
  } else {
    face_edges_parallel(m, 1, start, bc);
  }

  /* 2. sort buckets, count distinct neighbours */
  a->row = mb_alloc(sizeof *a->row * ((size_t)nv + 1));
  if (!a->row) goto oom;
  a->row[0] = 0;
  int oom_sort = 0;
#pragma omp parallel reduction(| : oom_sort)
  {
    int32_t *tc = NULL, *to = NULL;
    int64_t cap = 0;
#pragma omp for schedule(dynamic, 1024)
    for (int64_t i = 0; i < nv; i++) {
      int32_t *c = bc + start[i];
      const int64_t n = start[i + 1] - start[i];
      if (n > 32 && n > cap) {
        free(tc);
        free(to);
        cap = n;
        tc = mb_alloc(sizeof *tc * (size_t)cap);
        to = mb_alloc(sizeof *to * (size_t)cap);
        if (!tc || !to) {
          free(tc);
          free(to);
          tc = to = NULL;
          cap = 0;
          oom_sort = 1;
        }
      }
      sort_bucket(c, tri ? bo + start[i] : NULL, n, tc, to);
      int64_t d = 0;
      for (int64_t k = 0; k < n; k++)
        if (k == 0 || c[k] != c[k - 1]) d++;
      a->row[i + 1] = d;
    }
    free(tc);
    free(to);
  }
  if (oom_sort) goto oom;
  for (int64_t i = 0; i < nv; i++) a->row[i + 1] += a->row[i];
  a->nnz = a->row[nv];

  /* 3. collapse: neighbours, edge multiplicity, opposite vertices */
  a->col = mb_alloc(sizeof *a->col * (size_t)(a->nnz ? a->nnz : 1));
  a->on_boundary = mb_alloc((size_t)(nv ? nv : 1));
  if (!a->col || !a->on_boundary) goto oom;
  if (tri) {
    a->opp_row = mb_alloc(sizeof *a->opp_row * ((size_t)a->nnz + 1));
    a->opp = mb_alloc(sizeof *a->opp * (size_t)(nent ? nent : 1));
    if (!a->opp_row || !a->opp) goto oom;
    a->opp_row[0] = 0;
  }
#pragma omp parallel for schedule(dynamic, 1024)
  for (int64_t i = 0; i < nv; i++) {
    const int32_t *c = bc + start[i];
    int64_t n = start[i + 1] - start[i], k = a->row[i] - 1, nb = 0;
    for (int64_t t = 0; t < n; t++) {
      if (t == 0 || c[t] != c[t - 1]) a->col[++k] = c[t];
      else a->col[k] |= SHARED;
      if (tri) {
        a->opp[start[i] + t] = bo[start[i] + t];
        a->opp_row[k + 1] = start[i] + t + 1; /* the end of this edge's opposite vertices */
      }
    }
    for (int64_t q = a->row[i]; q < a->row[i + 1]; q++)
      if (!(a->col[q] & SHARED)) nb++;
    a->on_boundary[i] = nb > 0;
  }
  free(bc);
  free(bo);
  bc = bo = NULL;
  free(start);
  start = NULL;

  /* 4. the boundary lists, once the buckets are gone */
  a->brow = mb_alloc(sizeof *a->brow * ((size_t)nv + 1));
  if (!a->brow) goto oom;
  a->brow[0] = 0;
#pragma omp parallel for schedule(dynamic, 1024)
  for (int64_t i = 0; i < nv; i++) {
    int64_t nb = 0;
    for (int64_t q = a->row[i]; q < a->row[i + 1]; q++)
      if (!(a->col[q] & SHARED)) nb++;
    a->brow[i + 1] = nb;
  }
  for (int64_t i = 0; i < nv; i++) a->brow[i + 1] += a->brow[i];
  a->bcol = mb_alloc(sizeof *a->bcol * (size_t)(a->brow[nv] ? a->brow[nv] : 1));
  if (!a->bcol) goto oom;
#pragma omp parallel for schedule(dynamic, 1024)
  for (int64_t i = 0; i < nv; i++) {
    int64_t p = a->brow[i];
    for (int64_t q = a->row[i]; q < a->row[i + 1]; q++) {
      if (!(a->col[q] & SHARED)) a->bcol[p++] = a->col[q];
      a->col[q] &= ~SHARED;
    }
  }
  *out = a;
  return MB_SUCCESS;

oom:
  free(start);
  free(bc);
  free(bo);
  mb_adjacency_free(a);
  MB_FAIL(MB_ERR_MEMORY, "out of memory building the adjacency of '%s' (%lld vertices)",
          m->name ? m->name : "mesh", (long long)nv);
}

/* ------------------------------------------------------------ reordering */

static int64_t degree(const mb_adjacency *a, int64_t i) { return a->row[i + 1] - a->row[i]; }

mb_error mb_adjacency_rcm(const mb_adjacency *a, int64_t *perm) {
  const int64_t nv = a->nv;
  uint8_t *seen = mb_zalloc((size_t)(nv ? nv : 1), 1);
  int64_t *by_degree = mb_alloc(sizeof *by_degree * (size_t)(nv ? nv : 1));
  if (!seen || !by_degree) {
    free(seen);
    free(by_degree);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for the vertex ordering of %lld vertices", (long long)nv);
  }
  /* component seeds in increasing degree: a counting sort on degree */
  int64_t maxdeg = 0;
  for (int64_t i = 0; i < nv; i++)
    if (degree(a, i) > maxdeg) maxdeg = degree(a, i);
  int64_t *start = mb_zalloc((size_t)maxdeg + 2, sizeof *start);
  if (!start) {
    free(seen);
    free(by_degree);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for the vertex ordering");
  }
  for (int64_t i = 0; i < nv; i++) start[degree(a, i) + 1]++;
  for (int64_t d = 0; d <= maxdeg; d++) start[d + 1] += start[d];
  for (int64_t i = 0; i < nv; i++) by_degree[start[degree(a, i)]++] = i;
  free(start);
  /* breadth-first search; perm doubles as the queue */
  int64_t head = 0, tail = 0;
  for (int64_t s = 0; s < nv; s++) {
    int64_t seed = by_degree[s];
    if (seen[seed]) continue;
    seen[seed] = 1;
    perm[tail++] = seed;
    while (head < tail) {
      int64_t v = perm[head++], first = tail;
      for (int64_t k = a->row[v]; k < a->row[v + 1]; k++)
        if (!seen[a->col[k]]) {
          seen[a->col[k]] = 1;
          perm[tail++] = a->col[k];
        }
      for (int64_t x = first + 1; x < tail; x++) { /* new neighbours by degree */
        int64_t u = perm[x], y = x - 1;
        while (y >= first && degree(a, perm[y]) > degree(a, u)) {
          perm[y + 1] = perm[y];
          y--;
        }
        perm[y + 1] = u;
      }
    }
  }
  for (int64_t i = 0; i < nv / 2; i++) {
    int64_t t = perm[i];
    perm[i] = perm[nv - 1 - i];
    perm[nv - 1 - i] = t;
  }
  free(seen);
  free(by_degree);
  return MB_SUCCESS;
}

/* ------------------------------------------------ space-filling-curve order */

/* Spread the low 21 bits of x to every third bit (bit k -> bit 3k). */
static uint64_t spread3(uint64_t x) {
  x &= 0x1fffff;
  x = (x | x << 32) & 0x1f00000000ffffULL;
  x = (x | x << 16) & 0x1f0000ff0000ffULL;
  x = (x | x << 8) & 0x100f00f00f00f00fULL;
  x = (x | x << 4) & 0x10c30c30c30c30c3ULL;
  x = (x | x << 2) & 0x1249249249249249ULL;
  return x;
}

/* The 3D Hilbert curve as a state machine (the grammar or table form, see
 * M. Bader, "Space-Filling Curves", Springer 2013): in state s, the child
 * octant o = x << 2 | y << 1 | z (the coordinates' bits at that level) is
 * visited as digit hilbert_table[s][o] & 7 and entered in state
 * hilbert_table[s][o] >> 3. The 24 states and their entries were derived
 * from, and are tested against, J. Skilling's algorithm ("Programming the
 * Hilbert curve", AIP Conf. Proc. 707 (2004), 381-387: axes to transposed
 * index, the transpose's bits interleaved with x's bit highest), which
 * tests/smooth/test_adjacency.c implements as the reference. A table
 * look-up per level (two, with hilbert_pairs) instead of Skilling's
 * data-dependent branches: 190 -> 44 ns a key on random cells here with
 * one level per look-up. */
static const uint8_t hilbert_table[24][8] = {
    {8, 17, 27, 2, 39, 46, 52, 5},
    {56, 71, 73, 86, 91, 20, 10, 13},
    {48, 1, 103, 110, 115, 18, 12, 21},
    {126, 129, 29, 26, 79, 80, 140, 3},
    {148, 43, 37, 34, 127, 128, 78, 81},
    {156, 45, 35, 42, 31, 6, 160, 105},
    {72, 87, 139, 4, 57, 70, 50, 53},
    {0, 171, 111, 76, 49, 58, 102, 61},
    {180, 143, 83, 184, 69, 54, 66, 97},
    {16, 123, 9, 74, 47, 60, 38, 77},
    {132, 95, 85, 14, 67, 144, 82, 33},
    {142, 55, 185, 96, 93, 116, 90, 11},
    {188, 107, 175, 176, 101, 98, 62, 65},
    {164, 109, 119, 22, 99, 106, 152, 41},
    {174, 177, 63, 64, 117, 114, 92, 19},
    {30, 125, 161, 122, 7, 172, 104, 75},
    {130, 25, 133, 166, 179, 136, 84, 191},
    {94, 15, 141, 28, 145, 32, 138, 51},
    {146, 155, 149, 36, 137, 24, 190, 167},
    {154, 157, 147, 44, 169, 182, 120, 135},
    {162, 165, 121, 134, 187, 108, 168, 183},
    {118, 173, 23, 124, 153, 170, 40, 59},
    {178, 113, 131, 88, 181, 158, 68, 151},
    {186, 163, 89, 112, 189, 100, 150, 159},
};

/* Two levels per look-up: pair[s][o1 << 3 | o2] = the two digits (6 bits)
 * | the state after both << 6, from hilbert_table (3 KiB, built per call). */
typedef uint16_t hilbert_pairs[24][64];

static void hilbert_pairs_make(hilbert_pairs pair) {
  for (unsigned s = 0; s < 24; s++)
    for (unsigned o = 0; o < 64; o++) {
      const unsigned e1 = hilbert_table[s][o >> 3], e2 = hilbert_table[e1 >> 3][o & 7];
      pair[s][o] = (uint16_t)((e1 & 7) << 3 | (e2 & 7) | (e2 >> 3) << 6);
    }
}

/* The index of cell (x, y, z) of a 2^b grid (1 <= b <= 21) along the 3D
 * Hilbert curve, 3b bits, most significant level first. */
static uint64_t hilbert3(const hilbert_pairs pair, uint32_t x, uint32_t y, uint32_t z, int b) {
  const uint64_t m = spread3(x) << 2 | spread3(y) << 1 | spread3(z);
  uint64_t h = 0;
  unsigned s = 0;
  int l = b;
  if (l & 1) {
    const unsigned e = hilbert_table[0][m >> 3 * --l & 7];
    h = e & 7;
    s = e >> 3;
  }
  for (; l > 0; l -= 2) {
    const unsigned e = pair[s][m >> 3 * (l - 2) & 63];
    h = h << 6 | (e & 63);
    s = e >> 6;
  }
  return h;
}

uint64_t mb_hilbert3(uint32_t x, uint32_t y, uint32_t z, int bits) {
  hilbert_pairs pair;
  hilbert_pairs_make(pair);
  return bits >= 1 && bits <= 21 ? hilbert3((const uint16_t(*)[64])pair, x, y, z, bits) : 0;
}

/* Cell of coordinate v on an axis from lo with scale cells per unit, in
 * [0, cells): NaN and values below lo to 0, values past the box to the
 * last cell. */
static uint32_t quantize(double v, double lo, double scale, uint32_t cells) {
  const double q = (v - lo) * scale;
  if (!(q >= 0)) return 0;
  return q >= (double)cells ? cells - 1 : (uint32_t)q;
}

/* Radix digits of the sort: 8 bits, 256 buckets per thread. */
enum { SFC_DIGIT = 8, SFC_RADIX = 1 << SFC_DIGIT };

mb_error mb_adjacency_sfc(int64_t nv, const double *xyz, int64_t *perm) {
  MB_CHECK(nv >= 0 && (nv == 0 || (xyz && perm)), MB_ERR_ARG,
           "bad arguments for the space-filling-curve order (%lld vertices)", (long long)nv);
  if (nv <= 1) {
    if (nv == 1) perm[0] = 0;
    return MB_SUCCESS;
  }
  /* the index in the low ib bits of a word, the cell's curve index above */
  int ib = 1;
  while (ib < 63 && ((uint64_t)(nv - 1) >> ib)) ib++;
  const int b = (64 - ib) / 3 > 21 ? 21 : (64 - ib) / 3;
  MB_CHECK(b >= 1, MB_ERR_ARG, "too many vertices (%lld) for the space-filling-curve order",
           (long long)nv);
  const uint64_t imask = ((uint64_t)1 << ib) - 1;
  const uint32_t cells = (uint32_t)1 << b;
  uint64_t *tmp = mb_alloc(sizeof *tmp * (size_t)nv);
  int64_t *hist = mb_alloc(sizeof *hist * SFC_RADIX * (size_t)omp_get_max_threads());
  if (!tmp || !hist) {
    free(tmp);
    free(hist);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for the space-filling-curve order of %lld vertices",
            (long long)nv);
  }
  /* the bounding cube of the finite positions (min and max are exact: the
   * same for every thread count) */
  double lo0 = HUGE_VAL, lo1 = HUGE_VAL, lo2 = HUGE_VAL;
  double hi0 = -HUGE_VAL, hi1 = -HUGE_VAL, hi2 = -HUGE_VAL;
#pragma omp parallel for schedule(static) reduction(min : lo0, lo1, lo2) \
    reduction(max : hi0, hi1, hi2)
  for (int64_t i = 0; i < nv; i++) {
    const double *p = xyz + 3 * i;
    if (isfinite(p[0]) && p[0] < lo0) lo0 = p[0];
    if (isfinite(p[0]) && p[0] > hi0) hi0 = p[0];
    if (isfinite(p[1]) && p[1] < lo1) lo1 = p[1];
    if (isfinite(p[1]) && p[1] > hi1) hi1 = p[1];
    if (isfinite(p[2]) && p[2] < lo2) lo2 = p[2];
    if (isfinite(p[2]) && p[2] > hi2) hi2 = p[2];
  }
  double side = 0;
  if (hi0 - lo0 > side) side = hi0 - lo0;
  if (hi1 - lo1 > side) side = hi1 - lo1;
  if (hi2 - lo2 > side) side = hi2 - lo2;
  const double scale = side > 0 && isfinite(side) ? (double)cells / side : 0;
  /* words: curve index << ib | vertex, built in perm's storage (int64_t and
   * uint64_t may alias) */
  uint64_t *src = (uint64_t *)perm, *dst = tmp;
  hilbert_pairs pair;
  hilbert_pairs_make(pair);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < nv; i++) {
    const double *p = xyz + 3 * i;
    const uint64_t h =
        hilbert3((const uint16_t(*)[64])pair, quantize(p[0], lo0, scale, cells),
                 quantize(p[1], lo1, scale, cells), quantize(p[2], lo2, scale, cells), b);
    src[i] = h << ib | (uint64_t)i;
  }
  /* LSD radix sort on the curve bits only: the words start in vertex order
   * and every pass is stable, so equal cells stay in vertex order and the
   * result is the one ascending order of distinct words, whatever the
   * number of threads. A pass whose digit is the same in every word is
   * skipped. */
  for (int shift = ib; shift < ib + 3 * b; shift += SFC_DIGIT) {
    int skip = 0;
#pragma omp parallel
    {
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
      const int64_t first = nv * t / nt, last = nv * (t + 1) / nt;
      int64_t *h = hist + (size_t)t * SFC_RADIX;
      memset(h, 0, sizeof *h * SFC_RADIX);
      for (int64_t i = first; i < last; i++) h[(src[i] >> shift) & (SFC_RADIX - 1)]++;
#pragma omp barrier
#pragma omp single
      {
        int64_t sum = 0;
        for (int d = 0; d < SFC_RADIX; d++) {
          int64_t all = 0;
          for (int u = 0; u < nt; u++) {
            const int64_t c = hist[(size_t)u * SFC_RADIX + d];
            hist[(size_t)u * SFC_RADIX + d] = sum;
            sum += c;
            all += c;
          }
          if (all == nv) skip = 1;
        }
      }
      if (!skip)
        for (int64_t i = first; i < last; i++)
          dst[h[(src[i] >> shift) & (SFC_RADIX - 1)]++] = src[i];
    }
    if (!skip) {
      uint64_t *s = src;
      src = dst;
      dst = s;
    }
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < nv; i++) perm[i] = (int64_t)(src[i] & imask);
  free(tmp);
  free(hist);
  return MB_SUCCESS;
}

/* nr[1..n] += the sum of the ones before (an inclusive prefix sum of the
 * row lengths in nr[1..n], nr[0] = 0): per-thread block sums, then each
 * block offset, in parallel. The sums are of integers: the same for every
 * thread count. */
static void prefix_sum(int64_t *nr, int64_t n, int64_t *part) {
#pragma omp parallel
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t first = 1 + n * t / nt, last = 1 + n * (t + 1) / nt;
    int64_t s = 0;
    for (int64_t v = first; v < last; v++) s = nr[v] += s;
    part[t + 1] = s;
#pragma omp barrier
#pragma omp single
    {
      part[0] = 0;
      for (int u = 0; u < nt; u++) part[u + 1] += part[u];
    }
    for (int64_t v = first; v < last; v++) nr[v] += part[t];
  }
}

/* Rows of src CSR (row, col) in the order perm, columns mapped by inv
 * (NULL: copied); part: omp_get_max_threads() + 1 scratch entries. Row
 * lengths, their prefix sum and the rows' copies in parallel (OpenMP). */
static mb_error permute_csr(int64_t nv, const int64_t *perm, const int64_t *inv,
                            const int64_t *row, const int64_t *col, int64_t *part,
                            int64_t **nrow, int64_t **ncol) {
  *nrow = mb_alloc(sizeof **nrow * ((size_t)nv + 1));
  *ncol = mb_alloc(sizeof **ncol * (size_t)(row[nv] ? row[nv] : 1));
  MB_CHECK(*nrow && *ncol, MB_ERR_MEMORY, "out of memory for a renumbered adjacency");
  int64_t *nr = *nrow, *nc = *ncol;
  nr[0] = 0;
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < nv; v++) nr[v + 1] = row[perm[v] + 1] - row[perm[v]];
  prefix_sum(nr, nv, part);
#pragma omp parallel for schedule(dynamic, 4096)
  for (int64_t v = 0; v < nv; v++)
    for (int64_t k = row[perm[v]], q = nr[v]; k < row[perm[v] + 1]; k++, q++)
      nc[q] = inv ? inv[col[k]] : col[k];
  return MB_SUCCESS;
}

mb_error mb_adjacency_permute(const mb_adjacency *a, const int64_t *perm, mb_adjacency **out) {
  return mb_adjacency_permute_opts(a, perm, MB_ADJ_OPPOSITE | MB_ADJ_BOUNDARY, out);
}

mb_error mb_adjacency_permute_opts(const mb_adjacency *a, const int64_t *perm, unsigned flags,
                                   mb_adjacency **out) {
  const int64_t nv = a->nv;
  mb_adjacency *p = mb_zalloc(1, sizeof *p);
  int64_t *inv = mb_alloc(sizeof *inv * (size_t)(nv ? nv : 1));
  int64_t *part = mb_alloc(sizeof *part * ((size_t)omp_get_max_threads() + 1));
  mb_error e = p && inv && part ? MB_SUCCESS
                                : mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                                               "out of memory");
  if (!e) {
    p->nv = nv;
    p->nnz = a->nnz;
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < nv; v++) inv[perm[v]] = v;
    e = permute_csr(nv, perm, inv, a->row, a->col, part, &p->row, &p->col);
  }
  if (flags & MB_ADJ_BOUNDARY) {
    if (!e) e = permute_csr(nv, perm, inv, a->brow, a->bcol, part, &p->brow, &p->bcol);
    if (!e && !(p->on_boundary = mb_alloc((size_t)(nv ? nv : 1))))
      e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
    if (!e)
#pragma omp parallel for schedule(static)
      for (int64_t v = 0; v < nv; v++) p->on_boundary[v] = a->on_boundary[perm[v]];
  }
  /* opposite vertices follow their directed edge */
  if (!e && a->opp && (flags & MB_ADJ_OPPOSITE)) {
    int64_t *edge_perm = mb_alloc(sizeof *edge_perm * (size_t)(a->nnz ? a->nnz : 1));
    if (!edge_perm) e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
    if (!e)
#pragma omp parallel for schedule(dynamic, 4096)
      for (int64_t v = 0; v < nv; v++)
        for (int64_t k = a->row[perm[v]], q = p->row[v]; k < a->row[perm[v] + 1]; k++, q++)
          edge_perm[q] = k;
    if (!e) e = permute_csr(a->nnz, edge_perm, inv, a->opp_row, a->opp, part, &p->opp_row, &p->opp);
    free(edge_perm);
  }
  free(inv);
  free(part);
  if (e) {
    mb_adjacency_free(p);
    return e;
  }
  *out = p;
  return MB_SUCCESS;
}

/* ------------------------------------------------------ locality figures */

static int cmp_i64(const void *x, const void *y) {
  const int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a > b) - (a < b);
}

mb_error mb_adjacency_gather_figures(const mb_adjacency *a, mb_gather_figures *f) {
  const int64_t nv = a->nv, nwarps = (nv + 31) / 32;
  double dist = 0, warp = 0, lines = 0, far = 0;
  int bad = 0;
#pragma omp parallel reduction(+ : dist, warp, lines, far) reduction(| : bad)
  {
    int64_t *buf = NULL, cap = 0;
#pragma omp for schedule(dynamic, 256)
    for (int64_t w = 0; w < nwarps; w++) {
      const int64_t v0 = 32 * w, v1 = v0 + 32 < nv ? v0 + 32 : nv;
      const int64_t need = 2 * (a->row[v1] - a->row[v0]);
      if (need > cap) {
        int64_t *nb = realloc(buf, sizeof *nb * (size_t)need);
        if (!nb) {
          bad = 1;
          continue;
        }
        buf = nb;
        cap = need;
      }
      int64_t n = 0;
      for (int64_t v = v0; v < v1; v++)
        for (int64_t k = a->row[v]; k < a->row[v + 1]; k++) {
          const int64_t c = a->col[k], d = c > v ? c - v : v - c;
          dist += (double)d;
          warp += c / 32 == w;
          far += d > 65536;
          buf[n++] = 12 * c / 128; /* float32 [nv, 3]: the lines of the first and last byte */
          buf[n++] = (12 * c + 11) / 128;
        }
      qsort(buf, (size_t)n, sizeof *buf, cmp_i64);
      for (int64_t k = 0; k < n; k++) lines += k == 0 || buf[k] != buf[k - 1];
    }
    free(buf);
  }
  MB_CHECK(!bad, MB_ERR_MEMORY, "out of memory for the locality figures");
  const double nnz = a->nnz > 0 ? (double)a->nnz : 1;
  f->mean_distance = dist / nnz;
  f->same_warp = warp / nnz;
  f->far = far / nnz;
  f->lines_per_warp = nwarps ? lines / (double)nwarps : 0;
  return MB_SUCCESS;
}
