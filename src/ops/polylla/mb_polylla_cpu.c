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
 *               middle edges, and the successors changed by the new
 *               frontier edges                                        O(tips * degree)
 * The successors are first computed on the label-phase frontier (that is
 * where the tips are decided, all at once), then patched by the repair:
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

#include "mb_halfedge.h"

/* Half-edge flags. */
enum { PL_FRONTIER = 1, PL_REPAIRED_CYCLE = 2 };

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

/* Label phase (paper 3.1-3.2): longest edge of each triangle by the total
 * key order, then the frontier flags: an edge is frontier when it is on
 * the boundary or the longest edge of neither triangle. Counts the
 * frontier edges, frontier half-edges and non-frontier (internal) edges. */
static void label_phase(const mb_halfedge *he, const double *x, uint8_t *lmax, uint8_t *flags,
                        int64_t *n_frontier_edges, int64_t *n_frontier_half, int64_t *n_internal) {
  const int32_t nt = he->nt, nh = 3 * nt;
  const int32_t *vert = he->vert, *twin = he->twin;
  int64_t nfe = 0, nfh = 0, nint = 0;
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int32_t t = 0; t < nt; t++) {
      int32_t v0 = vert[3 * t], v1 = vert[3 * t + 1], v2 = vert[3 * t + 2];
      double l0 = edge_len2(x, v0, v1), l1 = edge_len2(x, v1, v2), l2 = edge_len2(x, v2, v0);
      int k = 0;
      double lb = l0;
      int32_t b0 = v0, b1 = v1;
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
      flags[h] = (uint8_t)f;
      nfh += f;
    }
  }
  *n_frontier_edges = nfe;
  *n_frontier_half = nfh;
  *n_internal = nint;
}

/* The successor of frontier half-edge h (paper 3.3): turn clockwise around
 * the vertex h points to, s = next(h), s = next(twin(s)), until a frontier
 * half-edge. Non-frontier half-edges are interior, so twin(s) exists, and
 * every vertex has a frontier half-edge in each fan (see the file
 * comment), so the loop ends. */
static inline int32_t successor(const uint8_t *flags, const int32_t *twin, int32_t h) {
  int32_t s = mb_he_next(h);
  while (!(flags[s] & PL_FRONTIER)) s = mb_he_next(twin[s]);
  return s;
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* Traversal, first part (paper 3.3): succ[h] for every frontier half-edge,
 * -1 elsewhere. The tips come out of the same loop (GPolylla's
 * formulation): g points to a barrier-edge tip exactly when its successor
 * is its own twin. *tips (owned by the caller) lists those g, sorted. */
static mb_error successors(const mb_halfedge *he, const uint8_t *flags, int32_t *succ,
                           int32_t **tips, int64_t *ntips) {
  const int32_t nh = 3 * he->nt;
  const int32_t *twin = he->twin;
  int32_t *all = NULL;
  int64_t nall = 0;
  int failed = 0;
#pragma omp parallel
  {
    int32_t *mine = NULL;
    int64_t n = 0, cap = 0;
#pragma omp for schedule(static)
    for (int32_t h = 0; h < nh; h++) {
      if (!(flags[h] & PL_FRONTIER)) {
        succ[h] = -1;
        continue;
      }
      int32_t s = successor(flags, twin, h);
      succ[h] = s;
      if (s == twin[h]) {
        if (n == cap) {
          cap = cap ? 2 * cap : 64;
          int32_t *p = realloc(mine, sizeof *p * (size_t)cap);
          if (!p) {
#pragma omp atomic write
            failed = 1;
            cap = n;
            continue;
          }
          mine = p;
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

/* Repair phase (paper 3.4). For each tip v (g points to v, e0 = twin(g)
 * leaves v), walk clockwise e_{i+1} = next(twin(e_i)): the walk meets the
 * k = degree(v) - 1 internal edges e_1 .. e_k before coming back to e0;
 * e_m, m = (k + 1) / 2, becomes a frontier edge (both half-edges). Then
 * fix the successors the new frontier half-edges change: their own, and
 * that of the frontier half-edge that turned past them (found by turning
 * back, p = prev(n), p = prev(twin(p)), until a frontier half-edge).
 * Before that, counts the label-phase cycles that hold a tip
 * (polygons_repaired) by walking them with the label-phase successors. */
static mb_error repair_phase(const mb_halfedge *he, uint8_t *flags, int32_t *succ,
                             const int32_t *tips, int64_t ntips, int64_t *n_repaired,
                             int64_t *n_new_edges) {
  const int32_t *twin = he->twin;
  int64_t repaired = 0;
  for (int64_t i = 0; i < ntips; i++) {
    int32_t g = tips[i];
    if (flags[g] & PL_REPAIRED_CYCLE) continue;
    repaired++;
    int32_t s = g;
    do {
      flags[s] |= PL_REPAIRED_CYCLE;
      s = succ[s];
    } while (s != g);
  }
  *n_repaired = repaired;

  int32_t *added = malloc(sizeof *added * (size_t)(ntips ? ntips : 1));
  MB_CHECK(added, MB_ERR_MEMORY, "out of memory for %lld middle edges", (long long)ntips);
  int64_t nadd = 0;
  for (int64_t i = 0; i < ntips; i++) {
    int32_t e0 = twin[tips[i]];
    int64_t deg = 1;
    for (int32_t s = mb_he_next(twin[e0]); s != e0; s = mb_he_next(twin[s])) deg++;
    int64_t k = deg - 1, m = (k + 1) / 2;
    int32_t e = e0;
    for (int64_t j = 0; j < m; j++) e = mb_he_next(twin[e]);
    if (!(flags[e] & PL_FRONTIER)) { /* another tip may have chosen the same edge */
      flags[e] |= PL_FRONTIER;
      flags[twin[e]] |= PL_FRONTIER;
      added[nadd++] = e;
    }
  }
  for (int64_t i = 0; i < nadd; i++) {
    for (int side = 0; side < 2; side++) {
      int32_t n = side ? twin[added[i]] : added[i];
      succ[n] = successor(flags, twin, n);
      int32_t p = mb_he_prev(n);
      while (!(flags[p] & PL_FRONTIER)) p = mb_he_prev(twin[p]);
      succ[p] = n;
    }
  }
  free(added);
  *n_new_edges = nadd;
  return MB_SUCCESS;
}

/* Traversal, second part: the canonical sweep. Half-edges in increasing id;
 * the first one met of each cycle is its smallest, its head; the cycle is
 * walked from it and written as one polygon (the origins of its
 * half-edges). Visited half-edges get succ = -2. */
static mb_error canonical_sweep(const mb_halfedge *he, int32_t *succ, int64_t npoly, int64_t nidx,
                                int64_t *offsets, int64_t *indices) {
  const int32_t nh = 3 * he->nt;
  const int32_t *vert = he->vert;
  int64_t p = 0, pos = 0;
  for (int32_t h = 0; h < nh; h++) {
    if (succ[h] < 0) continue;
    if (p == npoly) break;
    offsets[p++] = pos;
    int32_t s = h;
    do {
      if (pos == nidx) break;
      indices[pos++] = vert[s];
      int32_t nx = succ[s];
      succ[s] = -2;
      s = nx;
    } while (s != h && s >= 0);
    if (s != h) break;
  }
  int ok = p == npoly && pos == nidx;
  if (ok)
    for (int32_t h = 0; h < nh; h++)
      if (succ[h] >= 0) {
        ok = 0;
        break;
      }
  MB_CHECK(ok, MB_ERR_NUMERIC,
           "Polylla traversal: the frontier half-edges do not form the expected %lld cycles of "
           "%lld half-edges (internal error)",
           (long long)npoly, (long long)nidx);
  offsets[npoly] = nidx;
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

mb_error mb_polylla_cpu(const mb_mesh *tri, mb_mesh **poly, mb_polylla_stats *stats) {
  const double t_start = now_ms();
  MB_CHECK(tri && poly, MB_ERR_ARG, "mb_polylla_cpu: NULL argument");
  *poly = NULL;
  const char *name = tri->name ? tri->name : "";
  MB_CHECK(tri->kind == MB_KIND_TRIANGULATION2D, MB_ERR_ARG,
           "mesh '%s' is of kind %s; Polylla needs a triangulation2d (every face a triangle)",
           name, mb_kind_name(tri->kind));

  mb_error err = MB_SUCCESS;
  mb_halfedge he = {0};
  uint8_t *lmax = NULL, *flags = NULL;
  int32_t *succ = NULL, *tips = NULL;
  double *counts = NULL;
  mb_mesh *out = NULL;
  mb_polylla_stats st;
  memset(&st, 0, sizeof st);

  /* Half-edges (paper 3, input as half-edges): orientation and twins. */
  double t0 = now_ms();
  MB_CALL_GOTO(err, done, mb_halfedge_build(tri, &he));
  const int32_t nt = he.nt, nh = 3 * nt;
  st.triangles = nt;
  st.ms_halfedge = now_ms() - t0;

  /* Label phase (paper 3.1-3.2). */
  t0 = now_ms();
  int64_t nfe, nfh, nint;
  PL_ALLOC(lmax, nt);
  PL_ALLOC(flags, nh);
  label_phase(&he, tri->xyz, lmax, flags, &nfe, &nfh, &nint);
  free(lmax);
  lmax = NULL;
  st.ms_label = now_ms() - t0;

  /* Traversal (paper 3.3), first part: successors on the label-phase
   * frontier, which also yields the barrier-edge tips. */
  t0 = now_ms();
  int64_t ntips = 0;
  PL_ALLOC(succ, nh);
  MB_CALL_GOTO(err, done, successors(&he, flags, succ, &tips, &ntips));
  st.ms_traversal = now_ms() - t0;

  /* Repair phase (paper 3.4): middle edges of the tips, successors patched. */
  t0 = now_ms();
  int64_t nrep = 0, nnew = 0;
  MB_CALL_GOTO(err, done, repair_phase(&he, flags, succ, tips, ntips, &nrep, &nnew));
  st.ms_repair = now_ms() - t0;

  /* Traversal, second part: canonical polygons straight into the output. */
  t0 = now_ms();
  const int64_t npoly = (int64_t)nt - (nint - nnew), nidx = nfh + 2 * nnew;
  MB_CALL_GOTO(err, done, mb_mesh_create(name, tri->nv, npoly, nidx, &out));
  out->kind = MB_KIND_POLYGONS2D;
  out->index = tri->index;
  MB_CALL_GOTO(err, done,
               canonical_sweep(&he, succ, npoly, nidx, out->face_offsets, out->face_indices));
  st.ms_traversal += now_ms() - t0;

  /* Output: vertices, vertex_count, attributes. */
  memcpy(out->xyz, tri->xyz, sizeof(double) * 3 * (size_t)tri->nv);
  PL_ALLOC(counts, npoly);
  for (int64_t p = 0; p < npoly; p++)
    counts[p] = (double)(out->face_offsets[p + 1] - out->face_offsets[p]);
  MB_CALL_GOTO(err, done, mb_mesh_set_face_field(out, "vertex_count", 1, counts));
  st.polygons = npoly;
  st.frontier_edges = nfe + nnew;
  st.barrier_edge_tips = ntips;
  st.polygons_repaired = nrep;
  MB_CALL_GOTO(err, done, mb_attrs_setf(&out->attrs, "polygons", "%lld", (long long)npoly));
  MB_CALL_GOTO(err, done, mb_attrs_setf(&out->attrs, "frontier_edges", "%lld",
                                        (long long)st.frontier_edges));
  MB_CALL_GOTO(err, done,
               mb_attrs_setf(&out->attrs, "barrier_edge_tips", "%lld", (long long)ntips));
  MB_CALL_GOTO(err, done,
               mb_attrs_setf(&out->attrs, "polygons_repaired", "%lld", (long long)nrep));
  *poly = out;
  out = NULL;
  st.ms_total = now_ms() - t_start;
  if (stats) *stats = st;

done:
  mb_halfedge_free(&he);
  free(lmax);
  free(flags);
  free(succ);
  free(tips);
  free(counts);
  mb_mesh_free(out);
  return err;
}
