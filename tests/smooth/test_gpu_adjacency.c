/* meshbatch GPU test: the vertex adjacency built on the device from the
 * face list (mb_cuda_adjacency_build, cuda/smooth/mb_adjacency_cuda.cu)
 * against the host build (mb_adjacency_build_opts, then
 * mb_adjacency_permute_opts in the same vertex order), array for array and
 * bit for bit: row, col, opp_row, opp, on_boundary, brow, bcol, for every
 * combination of MB_ADJ_OPPOSITE and MB_ADJ_BOUNDARY, in the mesh's own
 * order, the Hilbert order (mb_adjacency_sfc) and a random permutation.
 *
 * Meshes: a small closed sphere (no boundary), an open grid (boundary), a
 * quad grid and a mixed polygon mesh (triangles, quads, a pentagon, a face
 * with a repeated vertex: a self-loop edge the builder drops), the
 * awkward mesh (an edge in three faces, an isolated vertex, a degenerate
 * triangle, two components), a grid whose vertices are spread among
 * isolated ones (before the first, between each, after the last), a fan
 * round a hub of valence 3000 with a repeated face, and a generated grid of
 * 1 M vertices. Every mesh's claimed property is asserted on the host
 * build, so that a generator change cannot empty the test.
 *
 * End to end: mb_cuda_smooth_mesh (device build) against mb_cuda_smooth on
 * the host-built renumbered adjacency, bitwise, for each weights and
 * boundary rule in float64 and float32, and the positions must have moved.
 * Errors: a vertex order with a repeat or an index out of range, a face
 * index out of range, cotangent weights on polygons; zero iterations leave
 * the positions untouched.
 *
 * Exits 77 (skip) without a CUDA device or without the CUDA backend.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_meshes.h"
#include "mb_adjacency.h"
#include "mb_cuda.h"
#include "mb_smooth.h"
#include "mb_smooth_cuda.h"
#include "mb_testutil.h"

/* ------------------------------------------------------------- helpers */

static uint64_t lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return *s >> 17;
}

/* A random permutation of [0, n) (Fisher-Yates). */
static int64_t *random_perm(int64_t n, uint64_t seed) {
  int64_t *p = malloc(sizeof *p * (size_t)(n ? n : 1));
  assert_non_null(p);
  for (int64_t i = 0; i < n; i++) p[i] = i;
  for (int64_t i = n - 1; i > 0; i--) {
    const int64_t j = (int64_t)(lcg(&seed) % (uint64_t)(i + 1)), t = p[i];
    p[i] = p[j];
    p[j] = t;
  }
  return p;
}

static int64_t *sfc_perm(const mb_mesh *m) {
  int64_t *p = malloc(sizeof *p * (size_t)m->nv);
  assert_non_null(p);
  assert_int_equal(mb_adjacency_sfc(m->nv, m->xyz, p), MB_SUCCESS);
  return p;
}

/* Fail at the first entry where a and b differ, naming it. */
static void same_i64(const char *label, const char *what, const int64_t *a, const int64_t *b,
                     int64_t n) {
  assert_non_null(a);
  assert_non_null(b);
  for (int64_t k = 0; k < n; k++)
    if (a[k] != b[k])
      fail_msg("%s: %s[%lld]: host %lld, device %lld", label, what, (long long)k,
               (long long)a[k], (long long)b[k]);
}

/* The host reference: the build, renumbered by perm when given. */
static mb_adjacency *host_adjacency(const mb_mesh *m, const int64_t *perm, unsigned flags) {
  mb_adjacency *h = NULL, *p = NULL;
  if (mb_adjacency_build_opts(m, flags, &h) != MB_SUCCESS) fail_msg("%s", mb_error_message());
  if (!perm) return h;
  if (mb_adjacency_permute_opts(h, perm, flags, &p) != MB_SUCCESS)
    fail_msg("%s", mb_error_message());
  mb_adjacency_free(h);
  return p;
}

static mb_adjacency *device_adjacency(const mb_mesh *m, const int64_t *perm, unsigned flags) {
  mb_adjacency *d = NULL;
  if (mb_cuda_adjacency_build(m, perm, flags, &d) != MB_SUCCESS)
    fail_msg("mb_cuda_adjacency_build(%s): %s", m->name, mb_error_message());
  assert_non_null(d);
  return d;
}

/* Every array of the device build equals the host's, and arrays not asked
 * for are absent. */
static void compare_one(const mb_mesh *m, const int64_t *perm, const char *order, unsigned flags) {
  char label[160];
  snprintf(label, sizeof label, "%s, order %s, flags %s%s", m->name, order,
           flags & MB_ADJ_OPPOSITE ? "opposite " : "", flags & MB_ADJ_BOUNDARY ? "boundary" : "-");
  mb_adjacency *h = host_adjacency(m, perm, flags), *d = device_adjacency(m, perm, flags);
  assert_int_equal(d->nv, h->nv);
  assert_int_equal(d->nnz, h->nnz);
  same_i64(label, "row", h->row, d->row, h->nv + 1);
  same_i64(label, "col", h->col, d->col, h->nnz);
  if ((flags & MB_ADJ_OPPOSITE) && mb_mesh_is_triangles(m)) {
    assert_non_null(h->opp);
    same_i64(label, "opp_row", h->opp_row, d->opp_row, h->nnz + 1);
    same_i64(label, "opp", h->opp, d->opp, h->opp_row[h->nnz]);
  } else {
    assert_null(d->opp_row);
    assert_null(d->opp);
  }
  if (flags & MB_ADJ_BOUNDARY) {
    assert_non_null(d->on_boundary);
    for (int64_t v = 0; v < h->nv; v++)
      if (h->on_boundary[v] != d->on_boundary[v])
        fail_msg("%s: on_boundary[%lld]: host %d, device %d", label, (long long)v,
                 h->on_boundary[v], d->on_boundary[v]);
    same_i64(label, "brow", h->brow, d->brow, h->nv + 1);
    same_i64(label, "bcol", h->bcol, d->bcol, h->brow[h->nv]);
  } else {
    assert_null(d->on_boundary);
    assert_null(d->brow);
    assert_null(d->bcol);
  }
  mb_adjacency_free(h);
  mb_adjacency_free(d);
}

/* All flag combinations in the mesh's own order, the Hilbert order and a
 * random one (the large mesh: both flags and none, in the last two). */
static void compare_all(const mb_mesh *m, int large) {
  int64_t *sfc = sfc_perm(m), *rnd = random_perm(m->nv, 12345);
  static const unsigned all[] = {0, MB_ADJ_OPPOSITE, MB_ADJ_BOUNDARY,
                                 MB_ADJ_OPPOSITE | MB_ADJ_BOUNDARY};
  static const unsigned few[] = {0, MB_ADJ_OPPOSITE | MB_ADJ_BOUNDARY};
  const unsigned *flags = large ? few : all;
  const int nflags = large ? 2 : 4;
  for (int k = 0; k < nflags; k++) {
    if (!large) compare_one(m, NULL, "mesh", flags[k]);
    compare_one(m, sfc, "sfc", flags[k]);
    compare_one(m, rnd, "random", flags[k]);
  }
  printf("[ gpu ] %s: %lld vertices, device adjacency == host adjacency\n", m->name,
         (long long)m->nv);
  free(sfc);
  free(rnd);
}

/* What the host build says about a mesh, to assert each mesh's purpose. */
typedef struct {
  int64_t boundary_entries, isolated, max_degree, multi_edges; /* multi: in 3+ faces */
} mesh_facts;

static mesh_facts facts(const mb_mesh *m) {
  mesh_facts f = {0, 0, 0, 0};
  mb_adjacency *h = host_adjacency(m, NULL, mb_mesh_is_triangles(m) ? MB_ADJ_OPPOSITE : 0);
  f.boundary_entries = h->brow[h->nv];
  for (int64_t v = 0; v < h->nv; v++) {
    const int64_t d = h->row[v + 1] - h->row[v];
    f.isolated += d == 0;
    if (d > f.max_degree) f.max_degree = d;
  }
  if (h->opp)
    for (int64_t k = 0; k < h->nnz; k++) f.multi_edges += h->opp_row[k + 1] - h->opp_row[k] >= 3;
  mb_adjacency_free(h);
  return f;
}

static mb_mesh *validated(mb_mesh *m) {
  if (mb_mesh_validate(m, m->name) != MB_SUCCESS) fail_msg("%s", mb_error_message());
  return m;
}

/* Triangles, quads, one pentagon and a quad with a repeated vertex (its
 * edge (b, b) is a self-loop) over a 6 x 5 grid of points. */
static mb_mesh *mixed_polygons(void) {
  enum { NX = 6, NY = 5, NV = NX * NY };
  int64_t off[64], idx[256], nf = 0, n = 0;
  off[0] = 0;
#define FACE(...)                                                              \
  do {                                                                         \
    const int64_t v_[] = {__VA_ARGS__};                                        \
    for (size_t q_ = 0; q_ < sizeof v_ / sizeof v_[0]; q_++) idx[n++] = v_[q_]; \
    off[++nf] = n;                                                             \
  } while (0)
  for (int j = 0; j < NY - 1; j++)
    for (int i = 0; i < NX - 1; i++) {
      const int64_t a = j * NX + i, b = a + 1, c = a + NX + 1, d = a + NX;
      if (i == 2 && j == 1) continue; /* covered by the pentagon below */
      if (i == 3 && j == 1) continue;
      if ((i + j) % 3 == 0) {
        FACE(a, b, c);
        FACE(a, c, d);
      } else if (i == 0 && j == 2) {
        FACE(a, b, b, c, d); /* a repeated vertex: a self-loop edge */
      } else {
        FACE(a, b, c, d);
      }
    }
  { /* cells (2, 1) and (3, 1) as a pentagon and a triangle */
    const int64_t a = 1 * NX + 2;
    FACE(a, a + 1, a + 2, a + NX + 2, a + NX + 1);
    FACE(a, a + NX + 1, a + NX);
  }
#undef FACE
  mb_mesh *m = NULL;
  assert_int_equal(mb_mesh_create("mixed", NV, nf, n, &m), MB_SUCCESS);
  memcpy(m->face_offsets, off, sizeof(int64_t) * (size_t)(nf + 1));
  memcpy(m->face_indices, idx, sizeof(int64_t) * (size_t)n);
  for (int64_t v = 0; v < NV; v++) {
    m->xyz[3 * v] = (double)(v % NX);
    m->xyz[3 * v + 1] = (double)(v / NX);
    m->xyz[3 * v + 2] = 0.1 * (double)((v * 7) % 5);
  }
  return validated(m);
}

/* A grid of (n + 1)^2 vertices renumbered v -> 3 v + 1 among 3 (n + 1)^2 + 2
 * vertices: isolated vertices before, between and after the used ones. */
static mb_mesh *sparse_grid(int n) {
  mb_mesh *g = mb_gpu_mesh_grid(n, 0.2, 5);
  mb_mesh *m = NULL;
  const int64_t nv = 3 * g->nv + 2;
  assert_int_equal(mb_mesh_create("sparse", nv, g->nf, g->face_offsets[g->nf], &m),
                   MB_SUCCESS);
  memcpy(m->face_offsets, g->face_offsets, sizeof(int64_t) * (size_t)(g->nf + 1));
  for (int64_t k = 0; k < g->face_offsets[g->nf]; k++)
    m->face_indices[k] = 3 * g->face_indices[k] + 1;
  for (int64_t v = 0; v < nv; v++) { /* isolated ones off to the side */
    m->xyz[3 * v] = 5.0 + (double)v * 1e-3;
    m->xyz[3 * v + 1] = -5.0;
  }
  for (int64_t v = 0; v < g->nv; v++) memcpy(m->xyz + 3 * (3 * v + 1), g->xyz + 3 * v, 24);
  mb_mesh_free(g);
  return validated(m);
}

/* A closed fan round hub 0 of n rim vertices (n triangles) with its first
 * triangle repeated: edges of that triangle lie in 2 or 3 faces. */
static mb_mesh *hub_fan(int n) {
  mb_mesh *m = NULL;
  const int nf = n + 1;
  assert_int_equal(mb_mesh_create("hub", n + 1, nf, 3 * nf, &m), MB_SUCCESS);
  for (int f = 0; f < nf; f++) {
    const int i = f < n ? f : 0;
    m->face_offsets[f + 1] = 3 * (f + 1);
    m->face_indices[3 * f] = 0;
    m->face_indices[3 * f + 1] = 1 + i;
    m->face_indices[3 * f + 2] = 1 + (i + 1) % n;
  }
  for (int v = 1; v <= n; v++) {
    const double t = 6.283185307179586 * (v - 1) / n;
    m->xyz[3 * v] = cos(t);
    m->xyz[3 * v + 1] = sin(t);
    m->xyz[3 * v + 2] = 0.1 * sin(3 * t);
  }
  return validated(m);
}

/* ------------------------------------------------------- the comparisons */

static void test_closed(void **state) {
  (void)state;
  mb_mesh *m = mb_gpu_mesh_octasphere(3, 0.02, 7);
  mesh_facts f = facts(m);
  assert_int_equal(f.boundary_entries, 0);
  assert_int_equal(f.isolated, 0);
  compare_all(m, 0);
  mb_mesh_free(m);
}

static void test_boundary(void **state) {
  (void)state;
  mb_mesh *m = mb_gpu_mesh_grid(40, 0.2, 3);
  mesh_facts f = facts(m);
  assert_int_equal(f.boundary_entries, 2 * 4 * 40); /* each of 160 boundary edges, both ways */
  compare_all(m, 0);
  mb_mesh_free(m);
}

static void test_polygons(void **state) {
  (void)state;
  mb_mesh *q = mb_gpu_mesh_quads(15, 0.2, 11), *x = mixed_polygons();
  assert_false(mb_mesh_is_triangles(q));
  assert_false(mb_mesh_is_triangles(x));
  assert_true(facts(x).boundary_entries > 0);
  compare_all(q, 0);
  compare_all(x, 0);
  mb_mesh_free(q);
  mb_mesh_free(x);
}

static void test_awkward(void **state) {
  (void)state;
  mb_mesh *m = mb_gpu_mesh_awkward();
  mesh_facts f = facts(m);
  assert_int_equal(f.isolated, 1);
  assert_true(f.multi_edges >= 1);
  compare_all(m, 0);
  mb_mesh_free(m);
}

static void test_isolated(void **state) {
  (void)state;
  mb_mesh *m = sparse_grid(9);
  mesh_facts f = facts(m);
  assert_int_equal(f.isolated, 2 * 100 + 2);
  compare_all(m, 0);
  mb_mesh_free(m);
}

static void test_hub(void **state) {
  (void)state;
  mb_mesh *m = hub_fan(3000);
  mesh_facts f = facts(m);
  assert_int_equal(f.max_degree, 3000);
  assert_true(f.multi_edges >= 1);
  compare_all(m, 0);
  mb_mesh_free(m);
}

static void test_large(void **state) {
  (void)state;
  mb_mesh *m = mb_gpu_mesh_grid(1000, 0.2, 13);
  assert_int_equal(m->nv, 1001 * 1001);
  compare_all(m, 1);
  mb_mesh_free(m);
}

/* ------------------------------------------------------------ end to end */


/* mb_cuda_smooth_mesh == mb_cuda_smooth on the host-built adjacency in the
 * same order, bit for bit, and the positions moved. */
static void smooth_both(const mb_mesh *m, const int64_t *perm, const mb_smooth_stage *st, int nst,
                        mb_precision prec) {
  const int64_t nv = m->nv;
  const size_t bytes = sizeof(double) * 3 * (size_t)nv;
  double *x0 = malloc(bytes), *xh = malloc(bytes), *xd = malloc(bytes);
  assert_true(x0 && xh && xd);
  for (int64_t v = 0; v < nv; v++) memcpy(x0 + 3 * v, m->xyz + 3 * (perm ? perm[v] : v), 24);
  memcpy(xh, x0, bytes);
  memcpy(xd, x0, bytes);
  mb_adjacency *h = host_adjacency(m, perm, MB_ADJ_OPPOSITE | MB_ADJ_BOUNDARY);
  if (mb_cuda_smooth(h, st, nst, prec, xh) != MB_SUCCESS) fail_msg("%s", mb_error_message());
  double sec[2] = {-1, -1};
  if (mb_cuda_smooth_mesh(m, perm, st, nst, prec, xd, sec) != MB_SUCCESS)
    fail_msg("%s", mb_error_message());
  assert_true(sec[0] >= 0 && sec[1] >= 0);
  if (memcmp(xh, xd, bytes) != 0) {
    for (int64_t k = 0; k < 3 * nv; k++)
      if (memcmp(xh + k, xd + k, sizeof(double)) != 0)
        fail_msg("%s (%s %s %s): position %lld: host-built %.17g, device-built %.17g", m->name,
                 mb_weights_name(st[0].weights), mb_boundary_name(st[0].boundary),
                 prec == MB_PRECISION_FLOAT32 ? "float32" : "float64", (long long)k, xh[k], xd[k]);
  }
  assert_true(memcmp(x0, xd, bytes) != 0); /* something was smoothed */
  mb_adjacency_free(h);
  free(x0);
  free(xh);
  free(xd);
}

static void test_smooth_end_to_end(void **state) {
  (void)state;
  mb_mesh *meshes[] = {mb_gpu_mesh_grid(60, 0.3, 17), mb_gpu_mesh_awkward(),
                       mb_gpu_mesh_quads(20, 0.3, 19), mixed_polygons()};
  static const mb_weights ws[] = {MB_WEIGHTS_UNIFORM, MB_WEIGHTS_COTANGENT,
                                  MB_WEIGHTS_INVERSE_DISTANCE};
  static const mb_boundary bs[] = {MB_BOUNDARY_FREE, MB_BOUNDARY_FIXED, MB_BOUNDARY_CURVE};
  static const mb_precision ps[] = {MB_PRECISION_FLOAT64, MB_PRECISION_FLOAT32};
  int runs = 0;
  for (int i = 0; i < 4; i++) {
    mb_mesh *m = meshes[i];
    int64_t *sfc = sfc_perm(m);
    for (int w = 0; w < 3; w++) {
      if (ws[w] == MB_WEIGHTS_COTANGENT && !mb_mesh_is_triangles(m)) continue;
      for (int b = 0; b < 3; b++)
        for (int p = 0; p < 2; p++) {
          /* a Taubin stage then a Laplacian one with the same rules */
          const mb_smooth_stage st[2] = {mb_gpu_stage(MB_SMOOTH_TAUBIN, ws[w], bs[b], 5),
                                         mb_gpu_stage(MB_SMOOTH_LAPLACIAN, ws[w], bs[b], 2)};
          smooth_both(m, sfc, st, 2, ps[p]);
          smooth_both(m, NULL, st, 2, ps[p]);
          runs += 2;
        }
    }
    free(sfc);
    mb_mesh_free(m);
  }
  assert_int_equal(runs, 2 * 2 * 3 * (3 + 3 + 2 + 2));
  printf("[ gpu ] %d smoothing runs: device-built == host-built, bit for bit\n", runs);
}

/* ---------------------------------------------------------------- errors */

static void test_errors(void **state) {
  (void)state;
  mb_mesh *m = mb_gpu_mesh_grid(8, 0.2, 23);
  mb_adjacency *a = NULL;
  int64_t *p = random_perm(m->nv, 1);
  p[5] = p[6]; /* a repeat */
  assert_int_equal(mb_cuda_adjacency_build(m, p, MB_ADJ_BOUNDARY, &a), MB_ERR_ARG);
  mb_test_assert_message_contains("not a permutation");
  assert_null(a);
  p[5] = m->nv; /* out of range */
  assert_int_equal(mb_cuda_adjacency_build(m, p, 0, &a), MB_ERR_ARG);
  mb_test_assert_message_contains("outside");
  assert_null(a);
  free(p);

  /* a face index out of range (an unvalidated mesh) */
  const int64_t saved = m->face_indices[7];
  m->face_indices[7] = m->nv + 3;
  assert_int_equal(mb_cuda_adjacency_build(m, NULL, MB_ADJ_OPPOSITE, &a), MB_ERR_ARG);
  mb_test_assert_message_contains("face index");
  assert_null(a);
  m->face_indices[7] = saved;

  /* after the errors, the device still builds */
  a = device_adjacency(m, NULL, MB_ADJ_OPPOSITE | MB_ADJ_BOUNDARY);
  assert_true(a->nnz > 0);
  mb_adjacency_free(a);

  /* zero iterations: positions untouched, bit for bit */
  const size_t bytes = sizeof(double) * 3 * (size_t)m->nv;
  double *x = malloc(bytes);
  assert_non_null(x);
  memcpy(x, m->xyz, bytes);
  const mb_smooth_stage z = mb_gpu_stage(MB_SMOOTH_TAUBIN, MB_WEIGHTS_UNIFORM, MB_BOUNDARY_FREE, 0);
  assert_int_equal(mb_cuda_smooth_mesh(m, NULL, &z, 1, MB_PRECISION_FLOAT32, x, NULL),
                   MB_SUCCESS);
  assert_memory_equal(x, m->xyz, bytes);
  free(x);
  mb_mesh_free(m);

  /* cotangent weights on polygons: the host path's message */
  mb_mesh *q = mb_gpu_mesh_quads(4, 0.1, 29);
  const mb_smooth_stage c = mb_gpu_stage(MB_SMOOTH_LAPLACIAN, MB_WEIGHTS_COTANGENT, MB_BOUNDARY_FREE, 1);
  assert_int_equal(mb_cuda_smooth_mesh(q, NULL, &c, 1, MB_PRECISION_FLOAT64, q->xyz, NULL),
                   MB_ERR_ARG);
  mb_test_assert_message_contains("cotangent weights need a triangle mesh");
  mb_mesh_free(q);
}

int main(void) {
  const int begin = mb_gpu_test_begin("gpu_adjacency", NULL, 0);
  if (begin) return begin;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_closed),   cmocka_unit_test(test_boundary),
      cmocka_unit_test(test_polygons), cmocka_unit_test(test_awkward),
      cmocka_unit_test(test_isolated), cmocka_unit_test(test_hub),
      cmocka_unit_test(test_large),    cmocka_unit_test(test_smooth_end_to_end),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
