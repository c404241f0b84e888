/* meshbatch GPU test: mb_polylla_cuda against the CPU backend mb_polylla_cpu
 * (where the library has it) and against a small serial reference written
 * here from the rules of src/ops/polylla/mb_polylla.h, on built meshes (one
 * triangle, square grids, a lattice of isosceles triangles whose two long
 * sides tie (also under ties: corners, against the CPU), a fan whose ties
 * form a cycle under ties: corners (the same error from both), a fan with a barrier-edge tip, two components with a hole,
 * clockwise input, jittered grids), Delaunay triangulations of 10 k and 1 M
 * random points (mb_generate_delaunay, where the library has it) and
 * ../shared/data/triangulations/pikachu.1.node when present.
 *
 * Acceptance: the GPU mesh equals the CPU mesh bit for bit (kind, name,
 * index, vertices, offsets, indices, the vertex_count field, attributes in
 * order); offsets, indices and figures equal the reference's; every
 * frontier half-edge is in exactly one polygon (no polygon twice); error
 * cases (degenerate triangle, non-manifold edge) give the same code.
 *
 * `test_gpu_polylla --bench N [delaunay]` instead times mb_polylla_cuda_bench
 * on a jittered grid of about N vertices (or the Delaunay triangulation of N
 * uniform points) with warmup 1, repeats 5, and prints the figures;
 * `--cpu-only` checks the reference against the CPU backend alone. Exits 77 (skip) without a CUDA device or the CUDA backend.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_meshes.h"
#include "mb_cuda.h"
#include "mb_polylla.h"
#include "mb_testutil.h"
#include "mb_polylla_cuda.h"
#include "mb_generate.h"
#include "mb_trianglefile.h"

/* ------------------------------------------------ serial reference (test) */

typedef struct ref_result {
  int64_t npoly, nidx, frontier_edges, tips, repaired;
  int64_t *off, *idx;
} ref_result;

static void ref_free(ref_result *r) {
  free(r->off);
  free(r->idx);
  memset(r, 0, sizeof *r);
}

typedef struct ref_key {
  int64_t lo, hi, h;
} ref_key;

static int ref_key_cmp(const void *a, const void *b) {
  const ref_key *x = a, *y = b;
  if (x->lo != y->lo) return x->lo < y->lo ? -1 : 1;
  if (x->hi != y->hi) return x->hi < y->hi ? -1 : 1;
  return x->h < y->h ? -1 : x->h > y->h;
}

static int64_t ref_next(int64_t h) { return h % 3 == 2 ? h - 2 : h + 1; }

static double ref_len2(const double *xyz, int64_t a, int64_t b) {
  const int64_t lo = a < b ? a : b, hi = a < b ? b : a;
  volatile double dx = xyz[3 * hi] - xyz[3 * lo], dy = xyz[3 * hi + 1] - xyz[3 * lo + 1];
  volatile double xx = dx * dx, yy = dy * dy;
  return xx + yy;
}

/* key(a) > key(b) for edges (a0, a1), (b0, b1) */
static int ref_longer(const double *xyz, int64_t a0, int64_t a1, int64_t b0, int64_t b1) {
  const double la = ref_len2(xyz, a0, a1), lb = ref_len2(xyz, b0, b1);
  if (la != lb) return la > lb;
  const int64_t ha = a0 > a1 ? a0 : a1, hb = b0 > b1 ? b0 : b1;
  if (ha != hb) return ha > hb;
  const int64_t la_ = a0 < a1 ? a0 : a1, lb_ = b0 < b1 ? b0 : b1;
  return la_ > lb_;
}

static int64_t ref_succ(int64_t h, const int64_t *twin, const unsigned char *fr, unsigned char lvl) {
  int64_t s = ref_next(h);
  while (!(fr[s] && fr[s] <= lvl)) s = ref_next(twin[s]);
  return s;
}

/* Returns MB_SUCCESS or the error code the rules give (MB_ERR_FORMAT). */
static mb_error ref_polylla(const mb_mesh *m, ref_result *r) {
  memset(r, 0, sizeof *r);
  const int64_t nt = m->nf, nh = 3 * nt, nv = m->nv;
  const double *xyz = m->xyz;
  int64_t *V = malloc(sizeof(int64_t) * (size_t)nh);
  assert_non_null(V);
  for (int64_t t = 0; t < nt; t++) {
    int64_t a = m->face_indices[3 * t], b = m->face_indices[3 * t + 1],
            c = m->face_indices[3 * t + 2];
    volatile double p = (xyz[3 * b] - xyz[3 * a]) * (xyz[3 * c + 1] - xyz[3 * a + 1]);
    volatile double q = (xyz[3 * b + 1] - xyz[3 * a + 1]) * (xyz[3 * c] - xyz[3 * a]);
    const double o = p - q;
    if (o == 0) {
      free(V);
      return MB_ERR_FORMAT;
    }
    if (o < 0) {
      int64_t tmp = b;
      b = c;
      c = tmp;
    }
    V[3 * t] = a;
    V[3 * t + 1] = b;
    V[3 * t + 2] = c;
  }
  ref_key *k = malloc(sizeof(ref_key) * (size_t)nh);
  int64_t *twin = malloc(sizeof(int64_t) * (size_t)nh);
  assert_true(k && twin);
  for (int64_t h = 0; h < nh; h++) {
    const int64_t o = V[h], d = V[ref_next(h)];
    k[h].lo = o < d ? o : d;
    k[h].hi = o < d ? d : o;
    k[h].h = h;
    twin[h] = -1;
  }
  qsort(k, (size_t)nh, sizeof *k, ref_key_cmp);
  int bad = 0;
  for (int64_t i = 0; i < nh;) {
    int64_t j = i;
    while (j < nh && k[j].lo == k[i].lo && k[j].hi == k[i].hi) j++;
    if (j - i > 2) bad = 1;
    if (j - i == 2) {
      const int64_t g = k[i].h, h = k[i + 1].h;
      if (V[g] == V[h]) bad = 1;
      twin[g] = h;
      twin[h] = g;
    }
    i = j;
  }
  free(k);
  if (bad) {
    free(V);
    free(twin);
    return MB_ERR_FORMAT;
  }
  unsigned char *lng = malloc((size_t)(nt > 0 ? nt : 1)), *fr = calloc((size_t)(nh > 0 ? nh : 1), 1);
  assert_true(lng && fr);
  for (int64_t t = 0; t < nt; t++) {
    int best = 0;
    for (int e = 1; e < 3; e++)
      if (ref_longer(xyz, V[3 * t + e], V[3 * t + (e + 1) % 3], V[3 * t + best],
                     V[3 * t + (best + 1) % 3]))
        best = e;
    lng[t] = (unsigned char)best;
  }
  for (int64_t h = 0; h < nh; h++) {
    const int64_t tw = twin[h];
    fr[h] = tw < 0 || (lng[h / 3] != h % 3 && lng[tw / 3] != tw % 3);
  }
  /* repair: counts per vertex, tips, middle edges (fr = 2) */
  int64_t *cnt = calloc((size_t)(nv > 0 ? nv : 1), sizeof(int64_t));
  unsigned char *seen = calloc((size_t)(nh > 0 ? nh : 1), 1);
  assert_true(cnt && seen);
  for (int64_t h = 0; h < nh; h++)
    if (fr[h] && (twin[h] < 0 || h < twin[h])) {
      cnt[V[h]]++;
      cnt[V[ref_next(h)]]++;
    }
  for (int64_t h = 0; h < nh; h++) {
    if (fr[h] != 1 || cnt[V[h]] != 1) continue;
    r->tips++;
    int64_t mn = h, s = h;
    do {
      s = ref_succ(s, twin, fr, 1);
      if (s < mn) mn = s;
    } while (s != h);
    if (!seen[mn]) {
      seen[mn] = 1;
      r->repaired++;
    }
  }
  /* middle edges, region by region in walk order from the region's start
   * (the first frontier half-edge clockwise from its seed), each counted
   * from the first frontier half-edge clockwise from the tip's last
   * outgoing half-edge, with the middle edges added so far */
  for (int64_t h0 = 0; h0 < nh; h0++) {
    const int64_t g0 = twin[h0];
    if (lng[h0 / 3] != h0 % 3 || (g0 >= 0 && (lng[g0 / 3] != g0 % 3 || g0 < h0))) continue;
    int64_t st = h0;
    while (!fr[st]) st = ref_next(twin[st]);
    int64_t x = st;
    do {
      x = ref_succ(x, twin, fr, 1);
      if (ref_succ(x, twin, fr, 1) != twin[x]) continue;
      const int64_t b = twin[x];
      int64_t e = b, last = b, d = 0, nf = 0;
      do {
        e = ref_next(twin[e]);
        d++;
        nf += fr[e] != 0;
        if (e > last) last = e;
      } while (e != b);
      if (x == st && nf > 1) continue; /* the start's tip, repaired already */
      e = last;
      while (!fr[e]) e = ref_next(twin[e]);
      const int64_t kk = d - 1, adv = kk % 2 == 0 ? kk / 2 - 1 : kk / 2;
      e = ref_next(twin[e]);
      for (int64_t i = 0; i < adv; i++) e = ref_next(twin[e]);
      if (!fr[e]) fr[e] = fr[twin[e]] = 2;
    } while (x != st);
  }
  /* traversal in increasing head id: a half-edge not yet visited is the
   * smallest of its cycle */
  memset(seen, 0, (size_t)nh);
  int64_t nfh = 0;
  for (int64_t h = 0; h < nh; h++)
    if (fr[h]) {
      nfh++;
      if (twin[h] < 0 || h < twin[h]) r->frontier_edges++;
    }
  r->off = malloc(sizeof(int64_t) * (size_t)(nfh + 1));
  r->idx = malloc(sizeof(int64_t) * (size_t)(nfh + 1));
  assert_true(r->off && r->idx);
  r->off[0] = 0;
  for (int64_t h = 0; h < nh; h++) {
    if (!fr[h] || seen[h]) continue;
    int64_t s = h;
    do {
      seen[s] = 1;
      r->idx[r->nidx++] = V[s];
      s = ref_succ(s, twin, fr, 2);
    } while (s != h);
    r->off[++r->npoly] = r->nidx;
  }
  free(V);
  free(twin);
  free(lng);
  free(fr);
  free(cnt);
  free(seen);
  return MB_SUCCESS;
}

/* ------------------------------------------------------------- checks */

static int cmp_pair(const void *a, const void *b) {
  const int64_t *x = a, *y = b;
  if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
  return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* Every directed vertex pair of the polygons occurs once (a frontier
 * half-edge in two polygons, or a polygon listed twice, would repeat one). */
static void assert_no_duplicates(const mb_mesh *p) {
  const int64_t n = p->face_offsets[p->nf];
  int64_t *e = malloc(sizeof(int64_t) * 2 * (size_t)(n ? n : 1));
  assert_non_null(e);
  for (int64_t f = 0; f < p->nf; f++) {
    const int64_t b = p->face_offsets[f], c = p->face_offsets[f + 1];
    assert_true(c - b >= 2);
    for (int64_t i = b; i < c; i++) {
      e[2 * i] = p->face_indices[i];
      e[2 * i + 1] = p->face_indices[i + 1 < c ? i + 1 : b];
    }
  }
  qsort(e, (size_t)n, 2 * sizeof(int64_t), cmp_pair);
  for (int64_t i = 1; i < n; i++)
    assert_false(e[2 * i] == e[2 * i - 2] && e[2 * i + 1] == e[2 * i - 1]);
  free(e);
}

static long long attr_ll(const mb_mesh *m, const char *key) {
  const char *v = mb_attrs_get(&m->attrs, key);
  assert_non_null(v);
  return atoll(v);
}

/* The same polygon mesh bit for bit: kind, vertices, faces, fields, face
 * fields and attributes (mb_test_assert_same_mesh), and the dataset index. */
static void assert_same_polygons(const mb_mesh *a, const mb_mesh *b) {
  assert_int_equal(a->index, b->index);
  mb_test_assert_same_mesh(a, b);
}

/* --cpu-only: compare the reference with the CPU backend, no device needed
 * (checks this file's reading of the rules where no GPU is at hand). */
static int g_cpu_only = 0;

static mb_error run_backend(const mb_mesh *m, mb_mesh **out, mb_polylla_stats *st) {
  if (g_cpu_only) return mb_polylla_cpu(m, NULL, out, st);
  return mb_polylla_cuda(m, NULL, out, st);
}

/* Run the three and compare; returns the GPU stats. */
static mb_polylla_stats check_mesh(const mb_mesh *m, const char *what) {
  mb_polylla_stats gs;
  memset(&gs, 0, sizeof gs);
  mb_mesh *g = NULL;
  mb_error eg = run_backend(m, &g, &gs);
  if (eg) printf("[ gpu ] %s: %s\n", what, mb_error_message());
  assert_int_equal(eg, MB_SUCCESS);
  assert_int_equal(g->kind, MB_KIND_POLYGONS2D);
  assert_string_equal(g->name, m->name);
  assert_int_equal(g->index, m->index);
  assert_int_equal(g->nv, m->nv);
  assert_memory_equal(g->xyz, m->xyz, sizeof(double) * 3 * (size_t)m->nv);
  assert_int_equal(g->nface_fields, 1);
  assert_string_equal(g->face_fields[0].name, "vertex_count");
  for (int64_t f = 0; f < g->nf; f++)
    assert_true(g->face_fields[0].data[f] ==
                (double)(g->face_offsets[f + 1] - g->face_offsets[f]));
  assert_no_duplicates(g);

  ref_result r;
  assert_int_equal(ref_polylla(m, &r), MB_SUCCESS);
  assert_int_equal(g->nf, r.npoly);
  assert_memory_equal(g->face_offsets, r.off, sizeof(int64_t) * ((size_t)r.npoly + 1));
  assert_memory_equal(g->face_indices, r.idx, sizeof(int64_t) * (size_t)r.nidx);
  assert_int_equal(attr_ll(g, "polygons"), r.npoly);
  assert_int_equal(attr_ll(g, "frontier_edges"), r.frontier_edges);
  assert_int_equal(attr_ll(g, "barrier_edge_tips"), r.tips);
  assert_int_equal(attr_ll(g, "polygons_repaired"), r.repaired);
  assert_int_equal(gs.polygons, r.npoly);
  assert_int_equal(gs.frontier_edges, r.frontier_edges);
  assert_int_equal(gs.barrier_edge_tips, r.tips);
  assert_int_equal(gs.polygons_repaired, r.repaired);
  assert_int_equal(gs.triangles, m->nf);
  ref_free(&r);

  mb_mesh *c = NULL;
  mb_polylla_stats cs;
  mb_error ec = mb_polylla_cpu(m, NULL, &c, &cs);
  if (ec) printf("[ gpu ] %s: CPU: %s\n", what, mb_error_message());
  assert_int_equal(ec, MB_SUCCESS);
  assert_same_polygons(g, c);
  assert_int_equal(cs.polygons, gs.polygons);
  assert_int_equal(cs.frontier_edges, gs.frontier_edges);
  assert_int_equal(cs.barrier_edge_tips, gs.barrier_edge_tips);
  assert_int_equal(cs.polygons_repaired, gs.polygons_repaired);
  mb_mesh_free(c);
  const char *cpu = "identical to the CPU";
  printf("[ gpu ] %-28s nv %9lld nt %9lld polygons %8lld frontier %9lld tips %6lld repaired "
         "%6lld: identical to the reference, %s (kernels %.3f ms, total %.1f ms)\n",
         what, (long long)m->nv, (long long)m->nf, (long long)gs.polygons,
         (long long)gs.frontier_edges, (long long)gs.barrier_edge_tips,
         (long long)gs.polygons_repaired, cpu, gs.ms_kernels, gs.ms_total);
  mb_mesh_free(g);
  return gs;
}

/* Same error code from every backend (and the reference). */
static void check_error(const mb_mesh *m, mb_error want, const char *what) {
  mb_mesh *g = (mb_mesh *)&g; /* must be reset */
  mb_error eg = run_backend(m, &g, NULL);
  printf("[ gpu ] %s: GPU: %s: %s\n", what, mb_error_name(eg), mb_error_message());
  assert_int_equal(eg, want);
  assert_null(g);
  if (want == MB_ERR_FORMAT) {
    ref_result r;
    assert_int_equal(ref_polylla(m, &r), want);
  }
  mb_mesh *c = NULL;
  mb_error ec = mb_polylla_cpu(m, NULL, &c, NULL);
  printf("[ gpu ] %s: CPU: %s: %s\n", what, mb_error_name(ec), mb_error_message());
  assert_int_equal(ec, eg);
  mb_mesh_free(c);
}

/* ties: corners (the reference code's rule): the GPU gives the CPU's mesh
 * bit for bit, or the same error in the same words. The serial reference
 * above knows the key rule only. */
static void check_corners(const mb_mesh *m, const char *what) {
  const mb_polylla_opts o = {.ties = MB_POLYLLA_TIES_CORNERS};
  mb_mesh *g = NULL, *c = NULL;
  mb_error eg = g_cpu_only ? mb_polylla_cpu(m, &o, &g, NULL) : mb_polylla_cuda(m, &o, &g, NULL);
  char gmsg[1024];
  snprintf(gmsg, sizeof gmsg, "%s", eg ? mb_error_message() : "");
  mb_error ec = mb_polylla_cpu(m, &o, &c, NULL);
  printf("[ gpu ] %-28s ties: corners: GPU %s, CPU %s%s%s\n", what, mb_error_name(eg),
         mb_error_name(ec), eg ? ": " : "", gmsg);
  assert_int_equal(eg, ec);
  if (eg) {
    assert_string_equal(gmsg, mb_error_message());
  } else {
    assert_same_polygons(g, c);
  }
  mb_mesh_free(g);
  mb_mesh_free(c);
}

/* ------------------------------------------------------------- meshes */

static mb_mesh *make_tri(const char *name, int64_t nv, const double *xy, int64_t nt,
                         const int64_t *t) {
  double *xyz = calloc(3 * (size_t)nv, sizeof(double));
  assert_non_null(xyz);
  for (int64_t i = 0; i < nv; i++) {
    xyz[3 * i] = xy[2 * i];
    xyz[3 * i + 1] = xy[2 * i + 1];
  }
  mb_mesh *m = mb_test_mesh_triangles(name, nv, xyz, nt, t);
  free(xyz);
  m->kind = MB_KIND_TRIANGULATION2D;
  m->index = 7;
  return m;
}

static uint64_t rng_next(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1.0p-53; }

/* n x n vertices on a unit-spaced grid, moved by up to `jitter` in x and y,
 * each square split by a diagonal: mode 0 always (i,j)-(i+1,j+1), 1
 * alternating, 2 random. Squares whose cell (i, j) lies in `hole` (a
 * half-open box [h0, h1)^2, h1 > h0) are left out. */
static mb_mesh *make_grid(const char *name, int64_t n, double jitter, int mode, uint64_t seed,
                          int64_t h0, int64_t h1) {
  const int64_t nv = n * n;
  double *xy = malloc(sizeof(double) * 2 * (size_t)nv);
  int64_t *t = malloc(sizeof(int64_t) * 6 * (size_t)((n - 1) * (n - 1)));
  assert_true(xy && t);
  uint64_t s = seed;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) {
      xy[2 * (j * n + i)] = (double)i + jitter * (2 * rng_unit(&s) - 1);
      xy[2 * (j * n + i) + 1] = (double)j + jitter * (2 * rng_unit(&s) - 1);
    }
  int64_t nt = 0;
  for (int64_t j = 0; j + 1 < n; j++)
    for (int64_t i = 0; i + 1 < n; i++) {
      if (i >= h0 && i < h1 && j >= h0 && j < h1) continue;
      const int64_t a = j * n + i, b = a + 1, c = a + n + 1, d = a + n;
      const int diag = mode == 0 ? 0 : mode == 1 ? (int)((i + j) & 1) : (int)(rng_next(&s) & 1);
      int64_t *q = t + 3 * nt;
      if (!diag) {
        q[0] = a; q[1] = b; q[2] = c; q[3] = a; q[4] = c; q[5] = d;
      } else {
        q[0] = a; q[1] = b; q[2] = d; q[3] = b; q[4] = c; q[5] = d;
      }
      nt += 2;
    }
  mb_mesh *m = make_tri(name, nv, xy, nt, t);
  free(xy);
  free(t);
  return m;
}

static void test_single_triangle(void **state) {
  (void)state;
  const double xy[] = {0, 0, 1, 0, 0, 1};
  const int64_t ccw[] = {0, 1, 2}, cw[] = {0, 2, 1}, rot[] = {2, 0, 1};
  mb_mesh *m = make_tri("one", 3, xy, 1, ccw);
  mb_polylla_stats s = check_mesh(m, "single triangle");
  assert_int_equal(s.polygons, 1);
  assert_int_equal(s.frontier_edges, 3);
  mb_mesh_free(m);
  m = make_tri("one_cw", 3, xy, 1, cw);
  check_mesh(m, "single triangle, clockwise");
  mb_mesh_free(m);
  m = make_tri("one_rot", 3, xy, 1, rot);
  check_mesh(m, "single triangle, rotated");
  mb_mesh_free(m);
}

static void test_square_grids(void **state) {
  (void)state;
  for (int mode = 0; mode < 3; mode++) {
    char name[64];
    snprintf(name, sizeof name, "square grid, diagonals %d", mode);
    mb_mesh *m = make_grid("grid", 12, 0.0, mode, 5, 0, 0);
    check_mesh(m, name);
    mb_mesh_free(m);
  }
  mb_mesh *g = NULL;
  assert_int_equal(mb_generate_grid2d(10000, &g), MB_SUCCESS);
  mb_polylla_stats s = check_mesh(g, "mb_generate_grid2d 10k");
  assert_true(s.polygons > 0);
  mb_mesh_free(g);
}

/* Rows y = 2 j with x = i + (j odd ? 0.5 : 0): every triangle is isosceles
 * with base 1 and two sides of squared length 4.25 exactly: the longest edge
 * is always decided by the vertex indices. */
static void test_tie_lattice(void **state) {
  (void)state;
  const int64_t nx = 9, ny = 8, nv = nx * ny;
  double *xy = malloc(sizeof(double) * 2 * (size_t)nv);
  int64_t *t = malloc(sizeof(int64_t) * 6 * (size_t)nv);
  assert_true(xy && t);
  for (int64_t j = 0; j < ny; j++)
    for (int64_t i = 0; i < nx; i++) {
      xy[2 * (j * nx + i)] = (double)i + (j & 1 ? 0.5 : 0.0);
      xy[2 * (j * nx + i) + 1] = 2.0 * (double)j;
    }
  int64_t nt = 0;
  for (int64_t j = 0; j + 1 < ny; j++)
    for (int64_t i = 0; i + 1 < nx; i++) {
      const int64_t a = j * nx + i, b = a + 1, c = (j + 1) * nx + i, d = c + 1;
      int64_t *q = t + 3 * nt;
      if (!(j & 1)) { /* upper row shifted right: (a b c), (b d c) */
        q[0] = a; q[1] = b; q[2] = c; q[3] = b; q[4] = d; q[5] = c;
      } else { /* lower row shifted right: (a d c), (a b d) */
        q[0] = a; q[1] = d; q[2] = c; q[3] = a; q[4] = b; q[5] = d;
      }
      nt += 2;
    }
  mb_mesh *m = make_tri("ties", nv, xy, nt, t);
  check_mesh(m, "isosceles lattice (ties)");
  check_corners(m, "isosceles lattice (ties)");
  /* the same triangles listed backwards and clockwise */
  for (int64_t f = 0; f < nt / 2; f++)
    for (int k = 0; k < 3; k++) {
      int64_t tmp = t[3 * f + k];
      t[3 * f + k] = t[3 * (nt - 1 - f) + k];
      t[3 * (nt - 1 - f) + k] = tmp;
    }
  for (int64_t f = 0; f < nt; f++) {
    int64_t tmp = t[3 * f + 1];
    t[3 * f + 1] = t[3 * f + 2];
    t[3 * f + 2] = tmp;
  }
  mb_mesh_free(m);
  m = make_tri("ties_cw", nv, xy, nt, t);
  check_mesh(m, "isosceles lattice, reversed, clockwise");
  check_corners(m, "isosceles lattice, reversed, clockwise");
  mb_mesh_free(m);
  free(xy);
  free(t);
}

/* A fan of 8 triangles around vertex 0 whose spoke lengths rise and fall
 * once: only the shortest spoke is a frontier edge, so vertex 0 is a
 * barrier-edge tip (degree 8, k = 7, middle edge e_4). */
static void test_tip_fan(void **state) {
  (void)state;
  const double rad[8] = {10, 11, 12, 13, 14, 13.5, 12.5, 11.5};
  double xy[18] = {0, 0};
  int64_t t[24];
  for (int i = 0; i < 8; i++) {
    const double a = 2 * 3.14159265358979323846 * i / 8;
    xy[2 + 2 * i] = rad[i] * cos(a);
    xy[3 + 2 * i] = rad[i] * sin(a);
    t[3 * i] = 0;
    t[3 * i + 1] = 1 + i;
    t[3 * i + 2] = 1 + (i + 1) % 8;
  }
  mb_mesh *m = make_tri("fan", 9, xy, 8, t);
  mb_polylla_stats s = check_mesh(m, "fan with a barrier-edge tip");
  assert_int_equal(s.barrier_edge_tips, 1);
  assert_int_equal(s.polygons_repaired, 1);
  assert_int_equal(s.polygons, 2);
  mb_mesh_free(m);
}

/* Two components: a jittered grid with a square hole, and a second grid
 * shifted away, in one mesh (the second's vertices numbered after). */
static void test_two_components_hole(void **state) {
  (void)state;
  mb_mesh *a = make_grid("a", 10, 0.2, 2, 11, 3, 6);
  mb_mesh *b = make_grid("b", 6, 0.2, 2, 12, 0, 0);
  const int64_t nv = a->nv + b->nv, nt = a->nf + b->nf;
  double *xy = malloc(sizeof(double) * 2 * (size_t)nv);
  int64_t *t = malloc(sizeof(int64_t) * 3 * (size_t)nt);
  assert_true(xy && t);
  for (int64_t i = 0; i < a->nv; i++) {
    xy[2 * i] = a->xyz[3 * i];
    xy[2 * i + 1] = a->xyz[3 * i + 1];
  }
  for (int64_t i = 0; i < b->nv; i++) {
    xy[2 * (a->nv + i)] = b->xyz[3 * i] + 20;
    xy[2 * (a->nv + i) + 1] = b->xyz[3 * i + 1] - 3;
  }
  memcpy(t, a->face_indices, sizeof(int64_t) * 3 * (size_t)a->nf);
  for (int64_t k = 0; k < 3 * b->nf; k++) t[3 * a->nf + k] = b->face_indices[k] + a->nv;
  mb_mesh *m = make_tri("two", nv, xy, nt, t);
  check_mesh(m, "two components, one hole");
  mb_mesh_free(m);
  mb_mesh_free(a);
  mb_mesh_free(b);
  free(xy);
  free(t);
}

static void test_jittered(void **state) {
  (void)state;
  mb_mesh *m = make_grid("jitter", 100, 0.15, 2, 3, 0, 0);
  mb_polylla_stats s = check_mesh(m, "jittered grid 10k");
  assert_true(s.barrier_edge_tips >= 0);
  /* every triangle flipped: the same output */
  mb_mesh *g = NULL, *h = NULL;
  assert_int_equal(run_backend(m, &g, NULL), MB_SUCCESS);
  for (int64_t f = 0; f < m->nf; f++) {
    int64_t tmp = m->face_indices[3 * f + 1];
    m->face_indices[3 * f + 1] = m->face_indices[3 * f + 2];
    m->face_indices[3 * f + 2] = tmp;
  }
  check_mesh(m, "jittered grid 10k, clockwise");
  assert_int_equal(run_backend(m, &h, NULL), MB_SUCCESS);
  assert_same_polygons(g, h);
  mb_mesh_free(g);
  mb_mesh_free(h);
  mb_mesh_free(m);
  m = make_grid("jitter1m", 1000, 0.15, 2, 4, 0, 0);
  check_mesh(m, "jittered grid 1M");
  mb_mesh_free(m);
}

static void test_delaunay(void **state) {
  (void)state;
  const int64_t sizes[] = {10000, 1000000};
  for (int c = 0; c < 2; c++)
    for (int i = 0; i < 2; i++) {
      if (c == 1 && i == 1) continue;
      mb_mesh *m = NULL;
      mb_error e = mb_generate_delaunay(sizes[i], 42 + (uint64_t)i, c, &m);
      if (e) printf("[ gpu ] delaunay: %s\n", mb_error_message());
      assert_int_equal(e, MB_SUCCESS);
      char what[64];
      snprintf(what, sizeof what, "delaunay %lld%s", (long long)sizes[i], c ? " clustered" : "");
      mb_polylla_stats s = check_mesh(m, what);
      assert_true(s.barrier_edge_tips > 0 || sizes[i] < 100000);
      mb_mesh_free(m);
    }
}

static void test_pikachu(void **state) {
  (void)state;
  char buf[4096];
  const char *path = mb_test_data_path("triangulations/pikachu.1.node", buf, sizeof buf);
  if (!path || !mb_test_file_exists(path)) {
    printf("[ gpu ] pikachu: data absent, part skipped\n");
    return;
  }
  mb_mesh *m = NULL;
  mb_error e = mb_trianglefile_read(path, &m);
  if (e) printf("[ gpu ] pikachu: %s\n", mb_error_message());
  assert_int_equal(e, MB_SUCCESS);
  check_mesh(m, "pikachu.1");
  check_corners(m, "pikachu.1");
  mb_mesh_free(m);
}

/* Twelve triangles round vertex 12 with spokes of squared length 25 and
 * shorter rims, after one outer triangle: under ties: corners the spokes
 * join the fan in a cycle, which both backends refuse naming triangle 1. */
static void test_tie_cycle(void **state) {
  (void)state;
  const double xy[] = {5, 0,  4,  3,  3,  4,  0,  5,  -3, 4,  -4, 3, -5, 0,
                       -4, -3, -3, -4, 0, -5, 3, -4, 4, -3, 0, 0, 9, 4};
  int64_t t[3 * 13] = {1, 0, 13};
  for (int i = 0; i < 12; i++) {
    t[3 * (i + 1)] = 12;
    t[3 * (i + 1) + 1] = i;
    t[3 * (i + 1) + 2] = (i + 1) % 12;
  }
  mb_mesh *m = make_tri("fan12", 14, xy, 13, t);
  check_mesh(m, "fan of 12 ties");
  check_corners(m, "fan of 12 ties");
  mb_mesh_free(m);
}

static void test_errors(void **state) {
  (void)state;
  /* triangle 1 is degenerate (collinear) */
  const double xy[] = {0, 0, 1, 0, 0, 1, 2, 0, 1, 1};
  const int64_t deg[] = {0, 1, 2, 0, 1, 3};
  mb_mesh *m = make_tri("degenerate", 5, xy, 2, deg);
  check_error(m, MB_ERR_FORMAT, "degenerate triangle");
  mb_mesh_free(m);
  /* repeated vertex */
  const int64_t rep[] = {0, 1, 2, 1, 4, 4};
  m = make_tri("repeated", 5, xy, 2, rep);
  check_error(m, MB_ERR_FORMAT, "repeated vertex");
  mb_mesh_free(m);
  /* edge 0-1 in three triangles */
  const double xy2[] = {0, 0, 1, 0, 0, 1, 0.5, -1, 1, 1};
  const int64_t nm[] = {0, 1, 2, 1, 0, 3, 0, 1, 4};
  m = make_tri("nonmanifold", 5, xy2, 3, nm);
  check_error(m, MB_ERR_FORMAT, "non-manifold edge");
  mb_mesh_free(m);
  /* not a triangulation2d */
  const int64_t ok[] = {0, 1, 2};
  m = make_tri("surface", 3, xy, 1, ok);
  m->kind = MB_KIND_SURFACE;
  check_error(m, MB_ERR_ARG, "surface kind");
  mb_mesh_free(m);
}

/* ------------------------------------------------------------- bench */

static int run_bench(int64_t n, int delaunay) {
  mb_mesh *m = NULL;
  const char *what = "jittered grid";
  if (delaunay) {
    if (mb_generate_delaunay(n, 1, 0, &m)) {
      printf("bench: %s\n", mb_error_message());
      return 1;
    }
    what = "uniform Delaunay";
  }
  const int64_t side = (int64_t)ceil(sqrt((double)n));
  uint64_t s = 99;
  const int64_t nv = delaunay ? m->nv : side * side,
                nt = delaunay ? m->nf : 2 * (side - 1) * (side - 1);
  if (!delaunay && mb_mesh_create("bench", nv, nt, 3 * nt, &m)) return 1;
  if (!delaunay) {
    m->kind = MB_KIND_TRIANGULATION2D;
    for (int64_t j = 0; j < side; j++)
      for (int64_t i = 0; i < side; i++) {
        m->xyz[3 * (j * side + i)] = (double)i + 0.15 * (2 * rng_unit(&s) - 1);
        m->xyz[3 * (j * side + i) + 1] = (double)j + 0.15 * (2 * rng_unit(&s) - 1);
      }
    int64_t f = 0;
    for (int64_t j = 0; j + 1 < side; j++)
      for (int64_t i = 0; i + 1 < side; i++) {
        const int64_t a = j * side + i, b = a + 1, c = a + side + 1, d = a + side;
        int64_t *q = m->face_indices + 3 * f;
        if (rng_next(&s) & 1) {
          q[0] = a; q[1] = b; q[2] = c; q[3] = a; q[4] = c; q[5] = d;
        } else {
          q[0] = a; q[1] = b; q[2] = d; q[3] = b; q[4] = c; q[5] = d;
        }
        f += 2;
      }
    for (int64_t k = 0; k <= nt; k++) m->face_offsets[k] = 3 * k;
  }
  mb_polylla_stats st;
  double gbs = 0;
  mb_error e = mb_polylla_cuda_bench(m, 1, 5, &st, &gbs);
  if (e) {
    printf("bench failed: %s\n%s", mb_error_message(), mb_error_traceback());
    mb_mesh_free(m);
    return 1;
  }
  const double bytes = MB_POLYLLA_LABEL_BYTES(nv, nt);
  printf("polylla bench: %s, %lld vertices, %lld triangles -> %lld polygons, "
         "%lld frontier edges, %lld tips, %lld repaired (median of 5)\n",
         what, (long long)nv, (long long)nt, (long long)st.polygons, (long long)st.frontier_edges,
         (long long)st.barrier_edge_tips, (long long)st.polygons_repaired);
  printf("  copy_in %.2f ms | halfedge %.2f | label %.3f | repair %.3f | traversal %.3f | "
         "copy_out %.2f ms\n",
         st.ms_copy_in, st.ms_halfedge, st.ms_label, st.ms_repair, st.ms_traversal,
         st.ms_copy_out);
  printf("  kernels (label+repair+traversal) %.3f ms | total %.1f ms\n", st.ms_kernels,
         st.ms_total);
  printf("  copy bandwidth %.0f GB/s | label bytes %.3e (%.1f B/tri) -> %.0f GB/s = %.1f %% of "
         "copy\n",
         gbs, bytes, bytes / (double)nt, bytes / (st.ms_label * 1e-3) / 1e9,
         100.0 * bytes / (st.ms_label * 1e-3) / 1e9 / gbs);
  mb_mesh_free(m);
  return 0;
}

int main(int argc, char **argv) {
  g_cpu_only = argc == 2 && strcmp(argv[1], "--cpu-only") == 0;
  int skip = g_cpu_only ? 0 : mb_gpu_skip_unless_device("test_gpu_polylla");
  if (skip) return skip;
  if (argc >= 3 && strcmp(argv[1], "--bench") == 0)
    return run_bench(atoll(argv[2]), argc == 4 && strcmp(argv[3], "delaunay") == 0);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_single_triangle),  cmocka_unit_test(test_square_grids),
      cmocka_unit_test(test_tie_lattice),      cmocka_unit_test(test_tip_fan),
      cmocka_unit_test(test_two_components_hole), cmocka_unit_test(test_jittered),
      cmocka_unit_test(test_pikachu),          cmocka_unit_test(test_delaunay),
      cmocka_unit_test(test_tie_cycle),        cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
