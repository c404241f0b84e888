/* Every weight and boundary rule of the CPU reference backend on tiny meshes
 * against values computed by hand (docs/guide.md, "Smoothing rules"). */
#include "mb_testutil.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_adjacency.h"
#include "mb_smooth.h"
#include "mb_smooth_op.h"

/* Smooth `mesh` with one stage and compare vertex v with the expected point. */
static void run_stage(mb_mesh *m, mb_smooth_stage st) {
  mb_adjacency *adj = NULL;
  assert_int_equal(mb_adjacency_build(m, &adj), MB_SUCCESS);
  assert_int_equal(mb_smooth_cpu(adj, &st, 1, m->xyz), MB_SUCCESS);
  mb_adjacency_free(adj);
}

static void expect_point(const mb_mesh *m, int64_t v, double x, double y, double z, double tol) {
  const double *p = m->xyz + 3 * v;
  if (fabs(p[0] - x) > tol || fabs(p[1] - y) > tol || fabs(p[2] - z) > tol)
    fail_msg("vertex %lld: got (%.17g, %.17g, %.17g), expected (%.17g, %.17g, %.17g)",
             (long long)v, p[0], p[1], p[2], x, y, z);
}

static mb_smooth_stage laplacian(mb_weights w, mb_boundary b) {
  return (mb_smooth_stage){MB_SMOOTH_LAPLACIAN, 0.5, 0.0, 1, w, b};
}

/* A square pyramid without base: corners 0..3 at z = 0, apex 4 at z = 1. */
static mb_mesh *pyramid(void) {
  static const double xyz[] = {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 0.5, 0.5, 1};
  static const int64_t tri[] = {0, 1, 4, 1, 2, 4, 2, 3, 4, 3, 0, 4};
  return mb_test_mesh_triangles("pyramid", 5, xyz, 4, tri);
}

static void test_adjacency(void **state) {
  (void)state;
  mb_mesh *m = pyramid();
  mb_adjacency *a = NULL;
  assert_int_equal(mb_adjacency_build(m, &a), MB_SUCCESS);
  assert_int_equal(a->nnz, 16);
  const int64_t row0[] = {1, 3, 4}, row4[] = {0, 1, 2, 3};
  for (int k = 0; k < 3; k++) assert_int_equal(a->col[a->row[0] + k], row0[k]);
  for (int k = 0; k < 4; k++) assert_int_equal(a->col[a->row[4] + k], row4[k]);
  for (int v = 0; v < 4; v++) assert_true(a->on_boundary[v]);
  assert_false(a->on_boundary[4]);
  assert_int_equal(a->brow[1] - a->brow[0], 2); /* corner 0: boundary neighbours 1, 3 */
  assert_int_equal(a->bcol[a->brow[0]], 1);
  assert_int_equal(a->bcol[a->brow[0] + 1], 3);
  /* edge 4-0 lies in faces (0,1,4) and (3,0,4): opposite vertices 1 then 3 */
  int64_t k40 = a->row[4];
  assert_int_equal(a->opp_row[k40 + 1] - a->opp_row[k40], 2);
  assert_int_equal(a->opp[a->opp_row[k40]], 1);
  assert_int_equal(a->opp[a->opp_row[k40] + 1], 3);
  mb_adjacency_free(a);
  mb_mesh_free(m);
}

static void test_uniform_free(void **state) {
  (void)state;
  mb_mesh *m = pyramid();
  run_stage(m, laplacian(MB_WEIGHTS_UNIFORM, MB_BOUNDARY_FREE));
  /* corner 0: neighbours 1, 3, 4 -> mean (0.5, 0.5, 1/3); half way there */
  expect_point(m, 0, 0.25, 0.25, 1.0 / 6.0, 1e-15);
  expect_point(m, 4, 0.5, 0.5, 0.5, 1e-15); /* apex: mean of corners (0.5,0.5,0) */
  mb_mesh_free(m);
}

static void test_uniform_fixed(void **state) {
  (void)state;
  mb_mesh *m = pyramid();
  run_stage(m, laplacian(MB_WEIGHTS_UNIFORM, MB_BOUNDARY_FIXED));
  expect_point(m, 0, 0, 0, 0, 0);
  expect_point(m, 2, 1, 1, 0, 0);
  expect_point(m, 4, 0.5, 0.5, 0.5, 1e-15);
  mb_mesh_free(m);
}

static void test_boundary_curve(void **state) {
  (void)state;
  mb_mesh *m = pyramid();
  run_stage(m, laplacian(MB_WEIGHTS_UNIFORM, MB_BOUNDARY_CURVE));
  /* corner 0: (p0 + p1 + p3) / 3 = (1/3, 1/3, 0); half way: (1/6, 1/6, 0) */
  expect_point(m, 0, 1.0 / 6.0, 1.0 / 6.0, 0, 1e-15);
  expect_point(m, 4, 0.5, 0.5, 0.5, 1e-15); /* interior vertex: the weight rule */
  mb_mesh_free(m);
}

static void test_cotangent_right_triangle(void **state) {
  (void)state;
  /* Right angle at 0: cot at 2 and at 1 are 1, at 0 is 0.
   * w01 = w02 = 0.5, w12 = 0. */
  static const double xyz[] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
  static const int64_t tri[] = {0, 1, 2};
  mb_mesh *m = mb_test_mesh_triangles("right", 3, xyz, 1, tri);
  run_stage(m, laplacian(MB_WEIGHTS_COTANGENT, MB_BOUNDARY_FREE));
  expect_point(m, 0, 0.25, 0.25, 0, 1e-15);
  expect_point(m, 1, 0.5, 0, 0, 1e-15); /* only neighbour 0 has weight */
  expect_point(m, 2, 0, 0.5, 0, 1e-15);
  mb_mesh_free(m);
}

static void test_cotangent_negative_clamped(void **state) {
  (void)state;
  /* Obtuse angle at 2: w01 = cot(angle at 2) / 2 < 0 is clamped to 0, so
   * vertex 0 moves towards 2 alone (w02 = cot(angle at 1) / 2 = 2.5). */
  static const double xyz[] = {0, 0, 0, 2, 0, 0, 1, 0.2, 0};
  static const int64_t tri[] = {0, 1, 2};
  mb_mesh *m = mb_test_mesh_triangles("obtuse", 3, xyz, 1, tri);
  run_stage(m, laplacian(MB_WEIGHTS_COTANGENT, MB_BOUNDARY_FREE));
  expect_point(m, 0, 0.5, 0.1, 0, 1e-15);
  mb_mesh_free(m);
}

static void test_inverse_distance(void **state) {
  (void)state;
  static const double xyz[] = {0, 0, 0, 2, 0, 0, 0, 1, 0};
  static const int64_t tri[] = {0, 1, 2};
  mb_mesh *m = mb_test_mesh_triangles("invd", 3, xyz, 1, tri);
  run_stage(m, laplacian(MB_WEIGHTS_INVERSE_DISTANCE, MB_BOUNDARY_FREE));
  /* w1 = 1/2, w2 = 1: mean (1, 1, 0) / 1.5 = (2/3, 2/3, 0); half way */
  expect_point(m, 0, 1.0 / 3.0, 1.0 / 3.0, 0, 1e-11);
  mb_mesh_free(m);
}

static void test_taubin_iteration(void **state) {
  (void)state;
  mb_mesh *m = pyramid();
  mb_smooth_stage st = {MB_SMOOTH_TAUBIN, 0.5, -0.53, 1, MB_WEIGHTS_UNIFORM, MB_BOUNDARY_FIXED};
  run_stage(m, st);
  /* apex z: 1 -> 0.5 (lambda) -> 0.5 - 0.53 * (0 - 0.5) = 0.765 (mu) */
  expect_point(m, 4, 0.5, 0.5, 0.765, 1e-15);
  assert_int_equal(mb_smooth_passes(&st), 2);
  mb_mesh_free(m);
}

static void test_isolated_and_nonmanifold(void **state) {
  (void)state;
  /* three triangles on edge 0-1 (non-manifold), vertex 5 isolated */
  static const double xyz[] = {0, 0, 0, 1, 0, 0, 0.5, 1, 0, 0.5, -1, 0, 0.5, 0, 1, 9, 9, 9};
  static const int64_t tri[] = {0, 1, 2, 1, 0, 3, 0, 1, 4};
  mb_mesh *m = mb_test_mesh_triangles("nonmanifold", 6, xyz, 3, tri);
  mb_adjacency *a = NULL;
  assert_int_equal(mb_adjacency_build(m, &a), MB_SUCCESS);
  assert_int_equal(a->row[6] - a->row[5], 0);
  int64_t k01 = a->row[0]; /* first neighbour of 0 is 1 */
  assert_int_equal(a->col[k01], 1);
  assert_int_equal(a->opp_row[k01 + 1] - a->opp_row[k01], 3);
  mb_adjacency_free(a);
  for (int w = 0; w < 3; w++)
    for (int b = 0; b < 3; b++) {
      mb_mesh *c = NULL;
      assert_int_equal(mb_mesh_duplicate(m, &c), MB_SUCCESS);
      mb_smooth_stage st = {MB_SMOOTH_TAUBIN, 0.5, -0.53, 10, (mb_weights)w, (mb_boundary)b};
      run_stage(c, st);
      expect_point(c, 5, 9, 9, 9, 0); /* never moves, never NaN */
      for (int64_t i = 0; i < 3 * c->nv; i++) assert_true(isfinite(c->xyz[i]));
      mb_mesh_free(c);
    }
  mb_mesh_free(m);
}

static void test_cotangent_needs_triangles(void **state) {
  (void)state;
  mb_mesh *m = NULL;
  assert_int_equal(mb_mesh_create("quad", 4, 1, 4, &m), MB_SUCCESS);
  const double xyz[] = {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0};
  for (int i = 0; i < 12; i++) m->xyz[i] = xyz[i];
  m->face_offsets[1] = 4;
  for (int i = 0; i < 4; i++) m->face_indices[i] = i;
  mb_adjacency *a = NULL;
  assert_int_equal(mb_adjacency_build(m, &a), MB_SUCCESS);
  mb_smooth_stage st = laplacian(MB_WEIGHTS_COTANGENT, MB_BOUNDARY_FREE);
  assert_int_equal(mb_smooth_cpu(a, &st, 1, m->xyz), MB_ERR_ARG);
  mb_test_assert_message_contains("cotangent weights need a triangle mesh");
  st.weights = MB_WEIGHTS_UNIFORM; /* polygons are fine for uniform weights */
  assert_int_equal(mb_smooth_cpu(a, &st, 1, m->xyz), MB_SUCCESS);
  expect_point(m, 0, 0.25, 0.25, 0, 1e-15);
  mb_adjacency_free(a);
  mb_mesh_free(m);
}

/* A noisy open n x n grid (deterministic): has interior and boundary vertices. */
static mb_mesh *noisy_grid(int n) {
  mb_mesh *m = NULL;
  int64_t nf = 2 * (int64_t)(n - 1) * (n - 1);
  assert_int_equal(mb_mesh_create("grid", (int64_t)n * n, nf, 3 * nf, &m), MB_SUCCESS);
  uint64_t s = 12345;
  for (int64_t i = 0; i < (int64_t)n * n; i++)
    for (int d = 0; d < 3; d++) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      double r = (double)(s >> 11) * 0x1.0p-53 - 0.5;
      m->xyz[3 * i + d] = (d == 0 ? (double)(i % n) : d == 1 ? (double)(i / n) : 0.0) + 0.3 * r;
    }
  int64_t f = 0;
  for (int j = 0; j + 1 < n; j++)
    for (int i = 0; i + 1 < n; i++) {
      int64_t a = (int64_t)j * n + i, t[6] = {a, a + 1, a + n + 1, a, a + n + 1, a + n};
      memcpy(m->face_indices + 3 * f, t, sizeof t);
      f += 2;
    }
  for (int64_t k = 0; k <= nf; k++) m->face_offsets[k] = 3 * k;
  return m;
}

/* Smoothing on each renumbered adjacency the CUDA backend can work on
 * (mb_smooth_locality_order: the Hilbert order of the positions, reverse
 * Cuthill-McKee; only the arrays the rule needs) gives bitwise the same
 * positions as the mesh order for every rule; the Hilbert order is the same
 * for 1, 2 and 3 threads, and MB_LOCALITY_NONE renumbers nothing. */
static void test_permutation_invariance(void **state) {
  (void)state;
  mb_mesh *m = noisy_grid(40);
  const int64_t nv = m->nv;
  mb_adjacency *a = NULL;
  assert_int_equal(mb_adjacency_build(m, &a), MB_SUCCESS);
  const size_t bytes = sizeof(double) * 3 * (size_t)nv;
  double *x = malloc(bytes);
  int64_t *first = malloc(sizeof *first * (size_t)nv);
  uint8_t *seen = malloc((size_t)nv);
  const int saved = omp_get_max_threads();
  int compared = 0;
  for (int w = 0; w < 3; w++)
    for (int b = 0; b < 3; b++) {
      mb_smooth_stage st = {MB_SMOOTH_TAUBIN, 0.5, -0.53, 5, (mb_weights)w, (mb_boundary)b};
      memcpy(x, m->xyz, bytes);
      assert_int_equal(mb_smooth_cpu(a, &st, 1, x), MB_SUCCESS);
      const unsigned need = mb_smooth_locality_needs(&st, 1);
      for (int kind = MB_LOCALITY_SFC; kind <= MB_LOCALITY_NONE; kind++)
        for (int threads = 1; threads <= (kind == MB_LOCALITY_SFC ? 3 : 1); threads++) {
          int64_t *perm;
          mb_adjacency *p;
          double *y, sec[2];
          omp_set_num_threads(threads);
          assert_int_equal(mb_smooth_locality_order(a, m->xyz, (mb_locality)kind, need, &perm, &p,
                                                    &y, sec),
                           MB_SUCCESS);
          omp_set_num_threads(saved);
          if (kind == MB_LOCALITY_NONE) {
            assert_null(perm);
            assert_null(p);
            assert_null(y);
            continue;
          }
          assert_true(sec[0] >= 0 && sec[1] >= 0);
          assert_true((p->opp != NULL) == (w == MB_WEIGHTS_COTANGENT));
          assert_true((p->brow != NULL) == (b != MB_BOUNDARY_FREE));
          memset(seen, 0, (size_t)nv);
          for (int64_t v = 0; v < nv; v++) {
            assert_true(perm[v] >= 0 && perm[v] < nv && !seen[perm[v]]);
            seen[perm[v]] = 1;
          }
          if (kind == MB_LOCALITY_SFC && threads == 1)
            memcpy(first, perm, sizeof *first * (size_t)nv);
          if (kind == MB_LOCALITY_SFC)
            assert_memory_equal(perm, first, sizeof *first * (size_t)nv);
          assert_int_equal(mb_smooth_cpu(p, &st, 1, y), MB_SUCCESS);
          for (int64_t v = 0; v < nv; v++)
            assert_memory_equal(y + 3 * v, x + 3 * perm[v], 3 * sizeof(double));
          compared++;
          free(perm);
          free(y);
          mb_adjacency_free(p);
        }
    }
  int moved = 0; /* the Hilbert order is not the grid's row order */
  for (int64_t v = 0; v < nv; v++) moved += first[v] != v;
  assert_true(moved > nv / 2);
  printf("permutation invariance: 9 rules x (Hilbert order on 1-3 threads, reverse "
         "Cuthill-McKee) = %d bitwise-identical runs on a 40 x 40 grid\n", compared);
  free(x);
  free(first);
  free(seen);
  mb_adjacency_free(a);
  mb_mesh_free(m);
}

/* The scale rule of mb_smooth.h ("Scale"): 1 inside the window, the
 * bounding box's exponent outside it; non-finite input and overflow on
 * the way back are MB_ERR_NUMERIC. */
static void test_scale_rule(void **state) {
  (void)state;
  assert_int_equal(mb_smooth_scale_exponent(0.0), 0);
  assert_int_equal(mb_smooth_scale_exponent(0.9), 0);
  assert_int_equal(mb_smooth_scale_exponent(60000.0), 0);
  assert_int_equal(mb_smooth_scale_exponent(1e-5), 0);
  assert_int_equal(mb_smooth_scale_exponent(65536.0), -17);    /* 2^16 = 0.5 2^17 */
  assert_int_equal(mb_smooth_scale_exponent(ldexp(1.0, -17)), 0); /* 0.5 2^-16 */
  assert_int_equal(mb_smooth_scale_exponent(ldexp(0.99, -17)), 17);
  int e;
  (void)frexp(1e150, &e);
  assert_int_equal(mb_smooth_scale_exponent(1e150), -e);
  double x[6] = {1e150, -3e149, 2e148, 0, 1, -1e150}, maxabs = -1;
  assert_int_equal(mb_smooth_maxabs(2, x, &maxabs), MB_SUCCESS);
  assert_true(maxabs == 1e150);
  const double y0 = x[1];
  assert_int_equal(mb_smooth_scale_rows(2, x, -e), MB_SUCCESS);
  assert_true(fabs(x[0]) < 1 && fabs(x[5]) < 1 && fabs(x[0]) >= 0.5);
  assert_int_equal(mb_smooth_scale_rows(2, x, e), MB_SUCCESS);
  assert_true(x[1] == y0); /* a power of two: exact both ways */
  x[4] = NAN;
  assert_int_equal(mb_smooth_maxabs(2, x, &maxabs), MB_ERR_NUMERIC);
  assert_non_null(strstr(mb_error_message(), "vertex 1"));
  mb_error_clear();
  x[4] = 0.75;
  assert_int_equal(mb_smooth_scale_rows(2, x, 1024), MB_ERR_NUMERIC);
  assert_non_null(strstr(mb_error_message(), "overflows"));
  mb_error_clear();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_adjacency),
      cmocka_unit_test(test_uniform_free),
      cmocka_unit_test(test_uniform_fixed),
      cmocka_unit_test(test_boundary_curve),
      cmocka_unit_test(test_cotangent_right_triangle),
      cmocka_unit_test(test_cotangent_negative_clamped),
      cmocka_unit_test(test_inverse_distance),
      cmocka_unit_test(test_taubin_iteration),
      cmocka_unit_test(test_isolated_and_nonmanifold),
      cmocka_unit_test(test_cotangent_needs_triangles),
      cmocka_unit_test(test_permutation_invariance),
      cmocka_unit_test(test_scale_rule),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
