/* meshbatch: Polylla on the CPU (the reference backend of the contract in
 * mb_polylla.h, which fixes every rule used here).
 *
 * Source: S. Salinas-Fernandez, N. Hitschfeld-Kahler, A. Ortiz-Bernardin,
 * H. Si, "POLYLLA: polygonal meshing algorithm based on terminal-edge
 * regions", Engineering with Computers 38 (2022): section 3.1-3.2 (label
 * phase: longest edges, frontier edges), 3.3 (traversal phase), 3.4
 * (repair phase: barrier-edge tips, middle edges); the data-parallel form
 * of the phases follows GPolylla (Salinas-Fernandez et al., 2023).
 *
 * Phases and their cost (n half-edges):
 *   half-edges  orientation, twins by counting sort (mb_halfedge.c)  O(n), OpenMP
 *   label       longest edge per triangle, frontier flags             O(n), OpenMP
 *   traversal   successor of every frontier half-edge (turning
 *               around its head), then one sequential sweep in
 *               increasing half-edge id that walks each cycle from
 *               its head, the smallest id, writing the polygons in
 *               canonical order                                       O(n)
 *   repair      the tips, found by the successor loop (a half-edge g
 *               whose successor is twin(g) points to a tip), their
 *               middle edges region by region in walk order (OpenMP
 *               over regions), and the successors changed by the new
 *               frontier edges                                        O(tips * degree + cycles with tips)
 * The successors are first computed on the label-phase frontier (that is
 * where the tips are found), then patched by the repair:
 * the result is the successor function of the repaired frontier, exactly
 * as if repair had run before the traversal. The number of polygons is
 * known before the sweep: the triangles joined across non-frontier edges
 * form a forest (every triangle owns one edge, its longest, and a cycle of
 * owned edges would need a cyclically increasing key), so polygons =
 * triangles - non-frontier edges.
 */
#include "mb_polylla.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "mb_halfedge.h"

/* Per half-edge words. The label phase turns he->twin into tf[h]: the
 * twin in the low 31 bits (PL_NOTWIN on the boundary) and the frontier
 * flag in bit 31, so that turning around a vertex touches one array (one
 * cache miss per step on large meshes, whose triangles are rarely near
 * their neighbours in memory). The traversal keeps, for each frontier
 * half-edge, its successor (succ[h], 4 B); the sweep reads the target
 * vertex from the corners (vert[next(h)]), which stay until it ends (a
 * rank's rows give their faces up for them: a successor and a target side
 * by side, 8 B a half-edge, cost the partitioned run 24 B a triangle at
 * its peak, 2026-11-28). A half-edge points to a barrier-edge tip exactly
 * when its successor is its twin. */
#define PL_F 0x80000000u
#define PL_NOTWIN 0x7FFFFFFFu
#define PL_AHEAD 16        /* prefetch distance of the label and successor loops */

/* succ[h]: the successor of frontier half-edge h, -1 for a non-frontier
 * half-edge, -2 once swept. */

static inline int32_t pl_twin(const uint32_t *tf, int32_t h) {
  uint32_t v = tf[h] & PL_NOTWIN;
  return v == PL_NOTWIN ? -1 : (int32_t)v;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

/* Squared length of edge (a, b): dx = x_hi - x_lo with the vertices in
 * increasing index order, so both half-edges give the same bits; the
 * library is built with -ffp-contract=off (no FMA). */
static inline double edge_len2(const double *x, int32_t a, int32_t b) {
  int32_t lo = a < b ? a : b, hi = a < b ? b : a;
  double dx = x[3 * (int64_t)hi] - x[3 * (int64_t)lo];
  double dy = x[3 * (int64_t)hi + 1] - x[3 * (int64_t)lo + 1];
  return dx * dx + dy * dy;
}

/* Key (squared length, max vertex, min vertex) of edge a: greater than b? */
static inline int key_greater(double la, int32_t a0, int32_t a1, double lb, int32_t b0,
                              int32_t b1) {
  if (la != lb) return la > lb;
  int32_t ahi = a0 > a1 ? a0 : a1, bhi = b0 > b1 ? b0 : b1;
  if (ahi != bhi) return ahi > bhi;
  int32_t alo = a0 < a1 ? a0 : a1, blo = b0 < b1 ? b0 : b1;
  return alo > blo;
}

void mb_polylla_longest_edge(const int64_t v[3], const double xy[6], mb_polylla_ties ties,
                             int64_t e[2]) {
  int c[3] = {0, 1, 2};
  double o = (xy[2] - xy[0]) * (xy[5] - xy[1]) - (xy[3] - xy[1]) * (xy[4] - xy[0]);
  if (o < 0) c[1] = 2, c[2] = 1;
  int best = -1;
  double bl = 0;
  int64_t bhi = 0, blo = 0;
  for (int k = 0; k < 3; k++) {
    int i = c[k], j = c[(k + 1) % 3];
    int lo = v[i] < v[j] ? i : j, hi = v[i] < v[j] ? j : i;
    double dx = xy[2 * hi] - xy[2 * lo], dy = xy[2 * hi + 1] - xy[2 * lo + 1];
    double l = dx * dx + dy * dy;
    int better = best < 0 || l > bl;
    if (!better && ties == MB_POLYLLA_TIES_KEY && l == bl)
      better = v[hi] > bhi || (v[hi] == bhi && v[lo] > blo);
    if (better) best = k, bl = l, bhi = v[hi], blo = v[lo];
  }
  e[0] = blo;
  e[1] = bhi;
}

/* Label phase (paper 3.1-3.2): longest edge of each triangle by the total
 * key order, then the frontier flags: an edge is frontier when it is on
 * the boundary or the longest edge of neither triangle. Rewrites
 * he->twin in place as tf (see above). Counts the frontier edges,
 * frontier half-edges and non-frontier (internal) edges. */
static void label_phase(mb_halfedge *he, const double *x, mb_polylla_ties ties, uint8_t *lmax,
                        int64_t *n_frontier_edges, int64_t *n_frontier_half, int64_t *n_internal) {
  const int32_t nt = he->nt, nh = 3 * nt;
  const int32_t *vert = he->vert;
  int32_t *twin = he->twin;
  uint32_t *tf = (uint32_t *)he->twin;
  int64_t nfe = 0, nfh = 0, nint = 0;
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int32_t t = 0; t < nt; t++) {
      if (t + PL_AHEAD < nt) { /* the coordinates are scattered: fetch ahead */
        const int32_t *w = vert + 3 * (t + PL_AHEAD);
        __builtin_prefetch(x + 3 * (int64_t)w[0]);
        __builtin_prefetch(x + 3 * (int64_t)w[1]);
        __builtin_prefetch(x + 3 * (int64_t)w[2]);
      }
      int32_t v0 = vert[3 * t], v1 = vert[3 * t + 1], v2 = vert[3 * t + 2];
      double l0 = edge_len2(x, v0, v1), l1 = edge_len2(x, v1, v2), l2 = edge_len2(x, v2, v0);
      int k = 0;
      double lb = l0;
      int32_t b0 = v0, b1 = v1;
      if (ties == MB_POLYLLA_TIES_CORNERS) { /* the first longest in corner order */
        lmax[t] = (uint8_t)(l1 > l0 ? (l2 > l1 ? 2 : 1) : (l2 > l0 ? 2 : 0));
        continue;
      }
      if (key_greater(l1, v1, v2, lb, b0, b1)) {
        k = 1;
        lb = l1;
        b0 = v1;
        b1 = v2;
      }
      if (key_greater(l2, v2, v0, lb, b0, b1)) k = 2;
      lmax[t] = (uint8_t)k;
    }
    /* implicit barrier: every lmax is known */
#pragma omp for schedule(static) reduction(+ : nfe, nfh, nint)
    for (int32_t h = 0; h < nh; h++) {
      int32_t g = twin[h];
      int f;
      if (g < 0) {
        f = 1;
        nfe++;
      } else {
        f = lmax[h / 3] != h % 3 && lmax[g / 3] != g % 3;
        if (h < g) {
          if (f)
            nfe++;
          else
            nint++;
        }
      }
      tf[h] = (g < 0 ? PL_NOTWIN : (uint32_t)g) | (f ? PL_F : 0u);
      nfh += f;
    }
  }
  *n_frontier_edges = nfe;
  *n_frontier_half = nfh;
  *n_internal = nint;
}

/* Under ties: corners, the smallest triangle on a cycle of joins (each
 * triangle joined to the one across its longest edge unless that edge is
 * terminal or on the boundary), -1 if there is none. Such a cycle holds
 * equally long edges only and leaves its region without a terminal edge.
 * Each triangle has one such join, so the joins form a functional graph:
 * one walk per triangle, stopped at the first triangle seen before; a
 * walk that meets its own trail has found a cycle. O(triangles), serial.
 * On out of memory returns -2. */
static int64_t tie_cycle(const uint32_t *tf, int32_t nt, const uint8_t *lmax) {
  int32_t *walk = calloc((size_t)nt, sizeof *walk); /* id + 1 of the walk that saw it */
  if (!walk) return -2;
  int64_t found = -1;
  for (int32_t t0 = 0; t0 < nt; t0++) {
    int32_t t = t0, w = -1;
    while (walk[t] == 0) {
      walk[t] = t0 + 1;
      w = pl_twin(tf, 3 * t + lmax[t]);
      if (w < 0 || lmax[w / 3] == w % 3) break; /* boundary or terminal edge: a root */
      t = w / 3;
    }
    if (walk[t] != t0 + 1 || w < 0 || lmax[w / 3] == w % 3) continue; /* old trail, or a root */
    int32_t lo = t; /* back on this walk's own trail: a cycle through t */
    for (int32_t u = pl_twin(tf, 3 * t + lmax[t]) / 3; u != t; u = pl_twin(tf, 3 * u + lmax[u]) / 3)
      if (u < lo) lo = u;
    if (found < 0 || lo < found) found = lo;
  }
  free(walk);
  return found;
}

/* The successor of frontier half-edge h (paper 3.3): turn clockwise around
 * the vertex h points to, s = next(h), s = next(twin(s)), until a frontier
 * half-edge. Non-frontier half-edges are interior, so twin(s) exists, and
 * every fan around a vertex holds a frontier half-edge (see the file
 * comment), so the loop ends. */
static inline int32_t successor(const uint32_t *tf, int32_t h) {
  int32_t s = mb_he_next(h);
  while (!(tf[s] & PL_F)) s = mb_he_next((int32_t)(tf[s] & PL_NOTWIN));
  return s;
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* Traversal, first part (paper 3.3): link[h] for every half-edge. The
 * tips come out of the same loop (as in GPolylla): g points to a
 * barrier-edge tip exactly when its successor is its own twin. *tips
 * (owned by the caller) lists those g, sorted. */
static mb_error successors(const mb_halfedge *he, const uint32_t *tf, int32_t *succ,
                           int32_t **tips, int64_t *ntips) {
  const int32_t nh = 3 * he->nt;
  int32_t *all = NULL;
  int64_t nall = 0;
  int failed = 0;
#pragma omp parallel
  {
    int32_t *mine = NULL;
    int64_t n = 0, cap = 0;
#pragma omp for schedule(static)
    for (int32_t h = 0; h < nh; h++) {
      if (h + PL_AHEAD < nh) { /* first turning step of a later half-edge */
        uint32_t v = tf[mb_he_next(h + PL_AHEAD)];
        if (!(v & PL_F)) __builtin_prefetch(tf + mb_he_next((int32_t)(v & PL_NOTWIN)));
      }
      if (!(tf[h] & PL_F)) {
        succ[h] = -1;
        continue;
      }
      int32_t s = successor(tf, h);
      int tip = s == pl_twin(tf, h);
      succ[h] = s;
      if (tip) {
        if (n == cap) {
          int64_t c = cap ? 2 * cap : 64;
          int32_t *p = realloc(mine, sizeof *p * (size_t)c);
          if (!p) {
#pragma omp atomic write
            failed = 1;
            continue;
          }
          mine = p;
          cap = c;
        }
        mine[n++] = h;
      }
    }
    int gave_up;
#pragma omp atomic read
    gave_up = failed;
#pragma omp critical(mb_polylla_tips)
    if (n > 0 && !gave_up) {
      int32_t *p = realloc(all, sizeof *p * (size_t)(nall + n));
      if (p) {
        memcpy(p + nall, mine, sizeof *p * (size_t)n);
        all = p;
        nall += n;
      } else {
        failed = 1;
      }
    }
    free(mine);
  }
  if (failed) {
    free(all);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for the barrier-edge tips");
  }
  if (nall > 1) qsort(all, (size_t)nall, sizeof *all, cmp_i32);
  *tips = all;
  *ntips = nall;
  return MB_SUCCESS;
}

/* Repair phase (paper 3.4), OpenMP over the tips, which are independent.
 * 1. polygons_repaired: the label-phase cycles holding a tip, each counted
 *    by its smallest tip half-edge (walks with the label-phase successors).
 * 2. Middle edges, region by region (mb_polylla.h): a tip finds its
 *    region's seed by following longest edges (the longest-edge
 *    propagation path, which stays in the region) and the region's start;
 *    the first tip to claim the start repairs the region's tips in walk
 *    order from it, each from the first frontier half-edge clockwise from
 *    the tip's last outgoing half-edge, counting the middle edges added so
 *    far. Regions are disjoint, so no two threads touch the same edge.
 * 3. Successors changed by the new frontier half-edges n: their own, and
 *    that of the frontier half-edge that turned past n (found by turning
 *    back, p = prev(n), p = prev(twin(p)), until a frontier half-edge);
 *    distinct n have distinct such p. */
static mb_error repair_phase(const mb_halfedge *he, const uint8_t *lmax, uint32_t *tf,
                             int32_t *succ, const int32_t *tips, int64_t ntips,
                             int64_t *n_repaired, int64_t *n_new_edges) {
  int64_t repaired = 0, nadd = 0;
#pragma omp parallel for schedule(dynamic, 64) reduction(+ : repaired)
  for (int64_t i = 0; i < ntips; i++) {
    int32_t g = tips[i], first = 1;
    for (int32_t s = succ[g]; s != g; s = succ[s])
      if (succ[s] == pl_twin(tf, s) && s < g) { /* s points to a tip */
        first = 0;
        break;
      }
    repaired += first;
  }
  *n_repaired = repaired;
  if (ntips == 0) {
    *n_new_edges = 0;
    return MB_SUCCESS;
  }

  const int32_t nh = 3 * he->nt;
  int32_t *mid = malloc(sizeof *mid * (size_t)ntips);
  int32_t *start = malloc(sizeof *start * (size_t)ntips); /* each tip's region start */
  uint8_t *claimed = calloc((size_t)nh, 1); /* pages are touched only where claimed */
  if (!mid || !start || !claimed) {
    free(mid);
    free(start);
    free(claimed);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for %lld middle edges", (long long)ntips);
  }
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int64_t i = 0; i < ntips; i++) {
      /* The tip's region: follow the longest edges from g's triangle to the
       * region's seed (its terminal edge, h < twin(h), or boundary terminal
       * edge), then turn clockwise to the region's start (on the label-phase
       * frontier: no edge is added before the barrier below). */
      int32_t t = tips[i] / 3, seed;
      for (;;) {
        int32_t h = 3 * t + lmax[t], w = pl_twin(tf, h);
        if (w < 0 || lmax[w / 3] == w % 3) {
          seed = w < 0 || h < w ? h : w;
          break;
        }
        t = w / 3;
      }
      int32_t e0 = seed;
      while (!(tf[e0] & PL_F)) e0 = mb_he_next(pl_twin(tf, e0));
      start[i] = e0;
      mid[i] = -1;
    }
    /* implicit barrier */
#pragma omp for schedule(dynamic, 16) reduction(+ : nadd)
    for (int64_t i = 0; i < ntips; i++) {
      int32_t e0 = start[i];
      /* One thread per region repairs its tips, in walk order from the start. */
      if (__atomic_exchange_n(&claimed[e0], 1, __ATOMIC_RELAXED)) continue;
      /* the leader sets mid[] of every tip of its region */
      int32_t h = e0;
      do {
        h = succ[h];
        if (succ[h] != pl_twin(tf, h)) continue; /* h points to no tip */
        /* tip v = target(h): degree, its last outgoing half-edge and its
         * frontier edges now */
        int32_t b = pl_twin(tf, h), e = b, last = b;
        int64_t deg = 0, nfront = 0;
        do {
          e = mb_he_next(pl_twin(tf, e));
          deg++;
          nfront += (tf[e] & PL_F) != 0;
          if (e > last) last = e;
        } while (e != b);
        if (h == e0 && nfront > 1) continue; /* the start's tip, repaired already */
        /* from the first frontier half-edge clockwise from `last`, with
         * the middle edges of the region's earlier tips */
        e = last;
        while (!(tf[e] & PL_F)) e = mb_he_next(pl_twin(tf, e));
        int64_t k = deg - 1, adv = k % 2 == 0 ? k / 2 - 1 : k / 2;
        e = mb_he_next(pl_twin(tf, e));
        for (int64_t j = 0; j < adv; j++) e = mb_he_next(pl_twin(tf, e));
        const int32_t *at = bsearch(&h, tips, (size_t)ntips, sizeof *tips, cmp_i32);
        if (!(tf[e] & PL_F)) { /* a new frontier edge */
          tf[e] |= PL_F;
          tf[pl_twin(tf, e)] |= PL_F;
          mid[at - tips] = e;
          nadd++;
        }
      } while (h != e0);
    }
#pragma omp for schedule(dynamic, 64)
    for (int64_t i = 0; i < ntips; i++) {
      if (mid[i] < 0) continue;
      for (int side = 0; side < 2; side++) {
        int32_t n = side ? pl_twin(tf, mid[i]) : mid[i];
        succ[n] = successor(tf, n);
      }
    }
#pragma omp for schedule(dynamic, 64)
    for (int64_t i = 0; i < ntips; i++) {
      if (mid[i] < 0) continue;
      for (int side = 0; side < 2; side++) {
        int32_t n = side ? pl_twin(tf, mid[i]) : mid[i];
        int32_t p = mb_he_prev(n);
        while (!(tf[p] & PL_F)) p = mb_he_prev((int32_t)(tf[p] & PL_NOTWIN));
        succ[p] = n;
      }
    }
  }
  free(mid);
  free(start);
  free(claimed);
  *n_new_edges = nadd;
  return MB_SUCCESS;
}

/* Traversal, second part: the canonical sweep. Half-edges in increasing
 * id; the first one met of each cycle is its smallest, its head; the cycle
 * is walked from it and written as one polygon: the origins of its
 * half-edges from the head, i.e. the targets of the head .. last half-edge
 * shifted by one (the last target, the head's origin, goes first).
 * Visited half-edges get succ = -2. */
static mb_error canonical_sweep(int32_t nt, int32_t *succ, const int32_t *vert, int64_t npoly,
                                int64_t nidx,
                                int64_t *offsets, int64_t *indices, int64_t *heads) {
  const int32_t nh = 3 * nt;
  int64_t p = 0, pos = 0;
  int ok = 1;
  for (int32_t h = 0; h < nh && ok; h++) {
    if (succ[h] < 0) continue;
    if (p == npoly || pos == nidx) {
      ok = 0;
      break;
    }
    if (heads) heads[p] = h;
    offsets[p++] = pos;
    int64_t first = pos++;
    int32_t s = h;
    for (;;) {
      int32_t nx = succ[s];
      int64_t t = vert[mb_he_next(s)];
      succ[s] = -2;
      if (nx == h) {
        indices[first] = t;
        break;
      }
      if (nx < 0 || pos == nidx) {
        ok = 0;
        break;
      }
      indices[pos++] = t;
      s = nx;
    }
  }
  ok = ok && p == npoly && pos == nidx;
  MB_CHECK(ok, MB_ERR_NUMERIC,
           "Polylla traversal: the frontier half-edges do not form the expected %lld cycles of "
           "%lld half-edges (internal error)",
           (long long)npoly, (long long)nidx);
  offsets[npoly] = nidx;
  return MB_SUCCESS;
}

/* Regions left out (mb_polylla_opts.seeds): the triangles joined to a seed
 * across label-phase non-frontier edges, by a breadth-first walk from the
 * seeds. out[t] = 1 for those; *list (owned by the caller) receives them
 * sorted, *n their number; *nfront and *ninner count their frontier and
 * non-frontier half-edges. */
static mb_error left_out_regions(const uint32_t *tf, int32_t nt, const int64_t *seeds,
                                 int64_t nseeds, uint8_t *out, int32_t **list, int64_t *n,
                                 int64_t *nfront, int64_t *ninner) {
  int32_t *q = malloc(sizeof *q * (size_t)(nt ? nt : 1));
  MB_CHECK(q, MB_ERR_MEMORY, "out of memory for the regions left out");
  int64_t tail = 0, nf = 0, ni = 0;
  for (int64_t i = 0; i < nseeds; i++) {
    const int64_t t = seeds[i];
    if (t < 0 || t >= nt) {
      free(q);
      MB_FAIL(MB_ERR_ARG, "seed triangle %lld out of range (%d triangles)", (long long)t, nt);
    }
    if (!out[t]) out[t] = 1, q[tail++] = (int32_t)t;
  }
  for (int64_t i = 0; i < tail; i++)
    for (int k = 0; k < 3; k++) {
      const int32_t h = 3 * q[i] + k;
      if (tf[h] & PL_F) {
        nf++;
        continue;
      }
      ni++;
      const int32_t u = pl_twin(tf, h) / 3; /* non-frontier: interior */
      if (!out[u]) out[u] = 1, q[tail++] = u;
    }
  if (tail > 1) qsort(q, (size_t)tail, sizeof *q, cmp_i32);
  int32_t *s = realloc(q, sizeof *q * (size_t)(tail ? tail : 1)); /* the rest back */
  *list = s ? s : q;
  *n = tail;
  *nfront = nf;
  *ninner = ni;
  return MB_SUCCESS;
}

#define PL_ALLOC(ptr, n)                                                                 \
  do {                                                                                   \
    (ptr) = malloc(sizeof(*(ptr)) * (size_t)((n) ? (n) : 1));                            \
    if (!(ptr)) {                                                                        \
      err = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,                    \
                         "out of memory for Polylla on mesh '%s' (%lld triangles)", name, \
                         (long long)tri->nf);                                            \
      goto done;                                                                         \
    }                                                                                    \
  } while (0)

/* The output's positions from the core: a copy of tri's, tri's own array
 * (shared: mb_polylla_opts.share_xyz), or none (the caller sets them). */
typedef enum { CORE_XYZ_COPY, CORE_XYZ_SHARE, CORE_XYZ_NONE } core_xyz;

/* Polylla on tri from its half-edges *he_in (built by the caller,
 * st_in->ms_halfedge its time; taken over and freed here after the repair
 * phase, their last reader), the rest of mb_polylla_cpu's contract: label,
 * traversal, repair, the canonical sweep into *poly (the links freed
 * then), its positions as xyz says; repair 0: the pinch repair left to the
 * caller (tri's face arrays are not read: the caller may have none).
 * xyz_drop: NULL, or the caller's array of tri's positions (with
 * CORE_XYZ_NONE), freed and set NULL after the label phase, their last
 * reader (a rank's local positions: the sweep's peak without them). */
static mb_error polylla_core(const mb_mesh *tri, mb_halfedge *he_in, const mb_polylla_opts *opts,
                             int repair, core_xyz xyz, double **xyz_drop, mb_mesh **poly,
                             mb_polylla_stats *st_in, int32_t **vert_out,
                             const mb_halfedge_map *restore);

/* Freed pages back to the system (glibc): the program keeps freed blocks
 * of up to 32 MB in its heap (src/cli/main.c, malloc_policy), which the
 * larger arrays that come next (mapped apart) cannot reuse. Called on a
 * rank's rows only (the partitioned run's peak), not on the many small
 * meshes of a batch. */
static void pages_back(void) {
#ifdef __GLIBC__
  (void)malloc_trim(0);
#endif
}

/* *poly freed on a failure, its positions not where they are tri's own
 * (shared: the input keeps them). */
static void free_poly(mb_mesh **poly, const mb_mesh *tri) {
  if (*poly && (*poly)->xyz == tri->xyz) (*poly)->xyz = NULL;
  mb_mesh_free(*poly);
  *poly = NULL;
}

/* A rank's rows read through mb_polylla_ids (mb_halfedge_map): the local
 * number of id g, the position of local number l (a row's or a ghost's). */
typedef struct ids_map_ctx {
  const mb_polylla_ids *ids;
  int64_t nbelow, nrows;
  const double *rows_xyz; /* [nrows, 3] */
  mb_mesh *consume;       /* NULL, or the rows whose faces go once read */
} ids_map_ctx;
static int64_t ids_index(const void *ctx, int64_t g) {
  const ids_map_ctx *m = ctx;
  return mb_polylla_ids_local(m->ids, m->nbelow, m->nrows, g);
}
static const double *ids_point(const void *ctx, int64_t l) {
  const ids_map_ctx *m = ctx;
  return mb_polylla_ids_xyz(m->ids, m->nbelow, m->nrows, m->rows_xyz, l);
}
/* The rows' faces given up once the half-edges have their corners, and
 * given back (as oriented) from them where the call fails after. */
static void ids_faces_read(const void *ctx) {
  mb_mesh *rows = ((const ids_map_ctx *)ctx)->consume;
  free(rows->face_offsets);
  free(rows->face_indices);
  rows->face_offsets = rows->face_indices = NULL;
  pages_back();
}
static void ids_faces_restore(const void *ctx, const int32_t *vert, int32_t nt) {
  const ids_map_ctx *m = ctx;
  (void)nt; /* the rows' own count */
  /* where this fails (out of memory: its message then replaces the call's),
   * the faces stay NULL and the caller sees it */
  (void)mb_polylla_ids_faces(m->consume, m->ids, vert);
}

mb_error mb_polylla_cpu(const mb_mesh *tri, const mb_polylla_opts *opts, mb_mesh **poly,
                        mb_polylla_stats *stats) {
  const double t_start = now_ms();
  MB_CHECK(tri && poly, MB_ERR_ARG, "mb_polylla_cpu: NULL argument");
  *poly = NULL;
  const char *name = tri->name ? tri->name : "";
  MB_CHECK(tri->kind == MB_KIND_TRIANGULATION2D, MB_ERR_ARG,
           "mesh '%s' is of kind %s; Polylla needs a triangulation2d (every face a triangle)",
           name, mb_kind_name(tri->kind));
  mb_polylla_stats st;
  memset(&st, 0, sizeof st);
  mb_halfedge he = {0};
  if (!(opts && opts->ids)) {
    /* Half-edges (paper 3, input as half-edges): orientation and twins. */
    const double t0 = now_ms();
    mb_error e = mb_halfedge_build(tri, &he);
    st.ms_halfedge = now_ms() - t0;
    const core_xyz xm = opts && opts->share_xyz ? CORE_XYZ_SHARE : CORE_XYZ_COPY;
    if (!e) e = polylla_core(tri, &he, opts, 1, xm, NULL, poly, &st, NULL, NULL);
    mb_halfedge_free(&he);
    MB_CALL(e);
    st.ms_total = now_ms() - t_start;
    if (stats) *stats = st;
    return MB_SUCCESS;
  }
  /* tri: a rank's rows: the half-edges of the rows' faces read through
   * the ids (mb_halfedge_build_mapped: no renumbered copy of the faces)
   * over the rows' and ghosts' positions in the local numbering (the core
   * reads positions only), the polygons mapped to ids, then the pinch
   * repair on the rows with ids, as the CUDA backend does. With the core
   * freeing the half-edges and links once the polygons are written:
   * measured, 2026-11-28, 4 CPU ranks at 4 M vertices (grid2d,
   * partitioner blocks), the per-rank peak RSS 406-410 -> 337-345 MB; with
   * the faces read through the ids, the local positions dropped after the
   * label phase, the half-edges before the sweep and the rows' positions
   * shared (share_xyz), then their pages returned (malloc_trim): 242-248
   * MB (docs/benchmarks.md, "Partitioned
   * Polylla's per-rank memory: the CPU backend's working set") */
  mb_polylla_opts o = *opts;
  o.ids = NULL;
  o.share_xyz = 0;
  o.consume_faces = NULL;
  int64_t *own_heads = NULL; /* the pinch repair reads the heads */
  if (!o.heads) o.heads = &own_heads;
  mb_mesh *rows =
      opts->consume_faces == tri && opts->rows_corners ? opts->consume_faces : NULL;
  if (opts->rows_corners) *opts->rows_corners = NULL;
  int64_t *corners = NULL; /* the left-out triangles', local numbers */
  o.left_out_corners = opts->left_out_corners ? &corners : NULL;
  if (opts->left_out_corners) *opts->left_out_corners = NULL;
  double t0 = now_ms();
  const ids_map_ctx ctx = {opts->ids, mb_polylla_ids_below(opts->ids), tri->nv, tri->xyz, rows};
  const mb_halfedge_map map = {ids_index, ids_point, &ctx, tri->nv + opts->ids->nghost,
                               rows ? ids_faces_read : NULL, rows ? ids_faces_restore : NULL};
  mb_error e = mb_halfedge_build_mapped(tri, &map, &he);
  st.ms_halfedge = now_ms() - t0;
  /* then the rows' and ghosts' positions in the local numbering, for the
   * label phase (freed there; not held beside the build's sort keys) */
  mb_mesh *local = NULL;
  int32_t *vert = NULL; /* with rows given up: their corners, for the pinch repair */
  if (!e) {
    e = mb_polylla_ids_positions(tri, opts->ids, &local);
    if (e && rows) ids_faces_restore(&ctx, he.vert, he.nt);
  }
  if (!e)
    e = polylla_core(local, &he, &o, 0, CORE_XYZ_NONE, &local->xyz, poly, &st,
                     rows ? &vert : NULL, rows ? &map : NULL);
  mb_halfedge_free(&he);
  mb_mesh_free(local);
  if (e) {
    if (rows && vert) ids_faces_restore(&ctx, vert, (int32_t)tri->nf);
    free(vert);
    MB_CALL(e);
  }
  mb_polylla_ids_apply(*poly, opts->ids, tri->nv, 1);
  if (corners) {
    const int64_t nb = mb_polylla_ids_below(opts->ids);
    const int64_t n3 = 3 * (opts->nleft_out ? *opts->nleft_out : 0);
    for (int64_t k = 0; k < n3; k++)
      corners[k] = mb_polylla_ids_global(opts->ids, nb, tri->nv, corners[k]);
    *opts->left_out_corners = corners;
  }
  mb_polylla_ids ids = *opts->ids;
  ids.corners = vert;
  mb_mesh *p = *poly; /* its vertices: tri's rows, shared or a copy */
  double *x = opts->share_xyz ? tri->xyz
                              : malloc(sizeof(double) * 3 * (size_t)(tri->nv ? tri->nv : 1));
  if (!x) {
    mb_mesh_free(p);
    *poly = NULL;
    e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                     "out of memory for the positions of mesh '%s'", name);
  } else {
    if (x != tri->xyz) memcpy(x, tri->xyz, sizeof(double) * 3 * (size_t)tri->nv);
    p->xyz = x;
    p->nv = tri->nv;
    /* every polygon simple: pinches cut (mb_polylla.h, "Pinch repair") */
    t0 = now_ms();
    e = mb_polylla_split_pinches(tri, &ids, poly, o.heads, &st);
    if (e) free_poly(poly, tri);
    st.ms_traversal += now_ms() - t0;
  }
  free(own_heads);
  if (e) {
    if (opts->heads) {
      free(*opts->heads);
      *opts->heads = NULL;
    }
    if (opts->left_out_corners) {
      free(*opts->left_out_corners);
      *opts->left_out_corners = NULL;
    }
    if (rows) ids_faces_restore(&ctx, vert, (int32_t)tri->nf);
    free(vert);
    vert = NULL;
  }
  if (rows) *opts->rows_corners = vert; /* the rows' faces as the caller gets them back */
  MB_CALL(e);
  st.ms_total = now_ms() - t_start;
  if (stats) *stats = st;
  return MB_SUCCESS;
}

static mb_error polylla_core(const mb_mesh *tri, mb_halfedge *he_in, const mb_polylla_opts *opts,
                             int repair, core_xyz xyz, double **xyz_drop, mb_mesh **poly,
                             mb_polylla_stats *st_in, int32_t **vert_out,
                             const mb_halfedge_map *restore) {
  const char *name = tri->name ? tri->name : "";
  mb_error err = MB_SUCCESS;
  mb_halfedge he = *he_in; /* ours now: freed once the polygons are written */
  memset(he_in, 0, sizeof *he_in);
  uint8_t *lmax = NULL, *leftout = NULL;
  int32_t *leftlist = NULL;
  int64_t nleft = 0, left_front = 0, left_inner = 0;
  int32_t *link = NULL;      /* the successors */
  int32_t *vert_keep = NULL; /* the corners, once the twins have gone */
  int32_t *tips = NULL;
  double *counts = NULL;
  int64_t *heads = NULL, *corners = NULL;
  mb_mesh *out = NULL;
  mb_polylla_stats st = *st_in;
  const int32_t nt = he.nt, nh = 3 * nt;
  st.triangles = nt;
  double t0;

  /* Label phase (paper 3.1-3.2). */
  t0 = now_ms();
  int64_t nfe, nfh, nint;
  PL_ALLOC(lmax, nt);
  const mb_polylla_ties ties = opts ? opts->ties : MB_POLYLLA_TIES_KEY;
  label_phase(&he, tri->xyz, ties, lmax, &nfe, &nfh, &nint);
  if (xyz_drop && xyz == CORE_XYZ_NONE) { /* the positions' last reader */
    free(*xyz_drop);
    *xyz_drop = NULL;
    /* their pages back (pages_back): measured, 4 CPU ranks at 4 M
     * vertices, the peak 263 -> 242-248 MB a rank */
    pages_back();
  }
  if (ties == MB_POLYLLA_TIES_CORNERS) {
    int64_t c = tie_cycle((const uint32_t *)he.twin, nt, lmax);
    if (c == -2) {
      err = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                         "out of memory for Polylla on mesh '%s'", name);
      goto done;
    }
    if (c >= 0) {
      err = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__, MB_POLYLLA_TIE_CYCLE_MSG,
                         name, (long long)c);
      goto done;
    }
  }
  uint32_t *tf = (uint32_t *)he.twin;
  if (opts && opts->nseeds > 0) {
    leftout = calloc((size_t)nt, 1);
    MB_CHECK_GOTO(err, done, leftout, MB_ERR_MEMORY, "out of memory for Polylla on mesh '%s'",
                  name);
    MB_CALL_GOTO(err, done, left_out_regions(tf, nt, opts->seeds, opts->nseeds, leftout,
                                             &leftlist, &nleft, &left_front, &left_inner));
    free(leftout); /* the sorted list says it from here */
    leftout = NULL;
    pages_back(); /* (seeds: a rank's rows) before the links come */
    if (opts->left_out_corners) { /* as oriented, while the corners are here */
      const int64_t n3 = 3 * nleft;
      PL_ALLOC(corners, n3);
      for (int64_t i = 0; i < nleft; i++)
        for (int k = 0; k < 3; k++) corners[3 * i + k] = he.vert[3 * leftlist[i] + k];
    }
  }
  st.ms_label = now_ms() - t0;

  /* Traversal (paper 3.3), first part: successors on the label-phase
   * frontier, which also yields the barrier-edge tips. */
  t0 = now_ms();
  int64_t ntips = 0;
  PL_ALLOC(link, nh);
  MB_CALL_GOTO(err, done, successors(&he, tf, link, &tips, &ntips));
  if (leftlist) { /* the tips of the regions kept (leftlist is sorted) */
    int64_t k = 0;
    for (int64_t i = 0; i < ntips; i++) {
      const int32_t t = tips[i] / 3;
      if (!bsearch(&t, leftlist, (size_t)nleft, sizeof *leftlist, cmp_i32)) tips[k++] = tips[i];
    }
    ntips = k;
  }
  st.ms_traversal = now_ms() - t0;

  /* Repair phase (paper 3.4): middle edges of the tips, successors patched. */
  t0 = now_ms();
  int64_t nrep = 0, nnew = 0;
  MB_CALL_GOTO(err, done, repair_phase(&he, lmax, tf, link, tips, ntips, &nrep, &nnew));
  free(lmax);
  lmax = NULL;
  st.ms_repair = now_ms() - t0;

  /* Traversal, second part: canonical polygons straight into the output. */
  t0 = now_ms();
  /* polygons = triangles - internal edges, over the regions kept */
  const int64_t npoly = ((int64_t)nt - nleft) - ((nint - left_inner / 2) - nnew);
  const int64_t nidx = (nfh - left_front) + 2 * nnew;
  for (int64_t i = 0; i < nleft; i++) /* the sweep passes over the regions left out */
    for (int k = 0; k < 3; k++) link[3 * leftlist[i] + k] = -1;
  /* the twins' last reader was the repair: they go before the output
   * comes; the corners stay for the sweep (its targets), then go, or go to
   * the caller, who reads them after (vert_out) */
  vert_keep = he.vert;
  he.vert = NULL;
  mb_halfedge_free(&he);
  if (vert_out) pages_back(); /* a rank's rows: before the output's come */
  if (repair || (opts && opts->heads)) PL_ALLOC(heads, npoly); /* the repair reads them */
  /* no positions yet: they come after the half-edges and links go */
  MB_CALL_GOTO(err, done, mb_mesh_create(name, 0, npoly, nidx, &out));
  free(out->xyz);
  out->xyz = NULL;
  out->kind = MB_KIND_POLYGONS2D;
  out->index = tri->index;
  MB_CALL_GOTO(err, done,
               canonical_sweep(nt, link, vert_keep, npoly, nidx, out->face_offsets,
                               out->face_indices,
                               heads));
  st.ms_traversal += now_ms() - t0;
  /* the links go before the output's positions and counts come */
  free(link);
  link = NULL;
  if (vert_out) *vert_out = vert_keep;
  else free(vert_keep);
  vert_keep = NULL;
  if (vert_out) pages_back(); /* a rank's rows: before the counts and the caller's output */

  /* Output: vertices (a copy, tri's own array, or none: the caller's),
   * vertex_count, attributes. */
  out->nv = tri->nv;
  if (xyz == CORE_XYZ_SHARE) {
    out->xyz = tri->xyz;
  } else if (xyz == CORE_XYZ_COPY) {
    const int64_t n3 = 3 * tri->nv;
    PL_ALLOC(out->xyz, n3);
    memcpy(out->xyz, tri->xyz, sizeof(double) * 3 * (size_t)tri->nv);
  }
  PL_ALLOC(counts, npoly);
  for (int64_t p = 0; p < npoly; p++)
    counts[p] = (double)(out->face_offsets[p + 1] - out->face_offsets[p]);
  err = mb_mesh_take_face_field(out, "vertex_count", 1, counts);
  counts = NULL; /* the mesh's now (freed by it on error too) */
  MB_CALL_GOTO(err, done, err);
  st.polygons = npoly;
  st.frontier_edges = nfe + nnew;
  st.barrier_edge_tips = ntips;
  st.polygons_repaired = nrep;
  st.boundary_edges = 2 * nfe - nfh;
  MB_CALL_GOTO(err, done, mb_attrs_setf(&out->attrs, "polygons", "%lld", (long long)npoly));
  MB_CALL_GOTO(err, done, mb_attrs_setf(&out->attrs, "frontier_edges", "%lld",
                                        (long long)st.frontier_edges));
  MB_CALL_GOTO(err, done,
               mb_attrs_setf(&out->attrs, "barrier_edge_tips", "%lld", (long long)ntips));
  MB_CALL_GOTO(err, done,
               mb_attrs_setf(&out->attrs, "polygons_repaired", "%lld", (long long)nrep));
  *poly = out;
  out = NULL;
  /* every polygon simple: pinches cut (mb_polylla.h, "Pinch repair");
   * repair 0: the caller's */
  t0 = now_ms();
  err = repair ? mb_polylla_split_pinches(tri, NULL, poly, &heads, &st) : MB_SUCCESS;
  if (err) {
    free_poly(poly, tri);
    mb_error_trace(__FILE__, __LINE__, __func__);
    goto done;
  }
  if (opts && opts->heads) {
    *opts->heads = heads;
    heads = NULL;
  }
  st.ms_traversal += now_ms() - t0;
  *st_in = st;
  if (opts && opts->left_out) {
    int64_t *l = malloc(sizeof *l * (size_t)(nleft ? nleft : 1));
    if (!l) {
      free_poly(poly, tri);
      if (opts->heads) {
        free(*opts->heads);
        *opts->heads = NULL;
      }
      MB_CHECK_GOTO(err, done, 0, MB_ERR_MEMORY, "out of memory for Polylla on mesh '%s'", name);
    }
    for (int64_t i = 0; i < nleft; i++) l[i] = leftlist[i];
    *opts->left_out = l;
    if (opts->nleft_out) *opts->nleft_out = nleft;
  }
  if (opts && opts->left_out_corners) {
    *opts->left_out_corners = corners;
    corners = NULL;
  }

done:
  if (err && restore && restore->faces_restore && (he.vert || vert_keep)) /* the faces back */
    restore->faces_restore(restore->ctx, he.vert ? he.vert : vert_keep, nt);
  free(vert_keep);
  mb_halfedge_free(&he);
  free(lmax);
  free(leftout);
  free(leftlist);
  free(link);
  free(tips);
  free(counts);
  free(heads);
  free(corners);
  free_poly(&out, tri); /* on a failure before the output is handed over */
  return err;
}
