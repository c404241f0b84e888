/* CPU stencil kernels (src/ops/stencil/mb_stencil.h): accuracy and order of
 * convergence on a periodic field of sines, heat and wave against their
 * analytic solutions, stability limits refused with the limit in the
 * message, Dirichlet values beyond the grid, the plain and framed paths
 * bit for bit, float32 against float64, thread-count independence, and the
 * arithmetic contract of mb_stencil.h (weights, fused chains) bit for bit
 * against the header's formulas written out here. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "mb_stencil.h"
#include "mb_testutil.h"

static const double TWO_PI = 6.283185307179586476925286766559;

/* u = sin(kz z) sin(ky y) sin(kx x) on a periodic unit cube of n^3 points,
 * with m periods per axis. */
static double *sines(int64_t n, int m) {
  double *u = malloc(sizeof *u * (size_t)(n * n * n));
  assert_non_null(u);
  const double h = 1.0 / (double)n, k = TWO_PI * m;
  for (int64_t a = 0; a < n; a++)
    for (int64_t b = 0; b < n; b++)
      for (int64_t c = 0; c < n; c++)
        u[(a * n + b) * n + c] = sin(k * a * h) * sin(k * b * h) * sin(k * c * h);
  return u;
}

/* max |du/dx - exact| over the grid, for m periods, n points per axis. */
static double derivative_error(int64_t n, int m) {
  double *u = sines(n, m), *du = malloc(sizeof *du * (size_t)(n * n * n));
  assert_non_null(du);
  mb_stencil_grid g = {.n = {n, n, n}, .h = {1.0 / n, 1.0 / n, 1.0 / n}};
  assert_int_equal(mb_stencil_derivative_f64(&g, 2, u, du), MB_SUCCESS);
  const double h = 1.0 / (double)n, k = TWO_PI * m;
  double err = 0;
  for (int64_t a = 0; a < n; a++)
    for (int64_t b = 0; b < n; b++)
      for (int64_t c = 0; c < n; c++) {
        double exact = k * sin(k * a * h) * sin(k * b * h) * cos(k * c * h);
        err = fmax(err, fabs(du[(a * n + b) * n + c] - exact));
      }
  free(u);
  free(du);
  return err;
}

static double laplacian_error(int64_t n, int m) {
  double *u = sines(n, m), *lap = malloc(sizeof *lap * (size_t)(n * n * n));
  assert_non_null(lap);
  mb_stencil_grid g = {.n = {n, n, n}, .h = {1.0 / n, 1.0 / n, 1.0 / n}};
  assert_int_equal(mb_stencil_laplacian_f64(&g, u, lap), MB_SUCCESS);
  const double k = TWO_PI * m;
  double err = 0;
  for (int64_t p = 0; p < n * n * n; p++) err = fmax(err, fabs(lap[p] + 3 * k * k * u[p]));
  free(u);
  free(lap);
  return err;
}

static void test_accuracy(void **state) {
  (void)state;
  double e128 = derivative_error(128, 1);
  print_message("derivative, 128^3, one period: max error %.3e (amplitude 2 pi)\n", e128);
  assert_true(e128 <= 1e-10);
  /* order between 16 and 32 points per period (errors far above round-off) */
  double e16 = derivative_error(32, 2), e32 = derivative_error(64, 2);
  double p = log2(e16 / e32);
  print_message("derivative: error %.3e at 16 points per period, %.3e at 32: order %.2f\n", e16,
                e32, p);
  assert_true(p >= 7.5);
  double l16 = laplacian_error(32, 2), l32 = laplacian_error(64, 2);
  double q = log2(l16 / l32);
  print_message("laplacian: error %.3e and %.3e: order %.2f\n", l16, l32, q);
  assert_true(q >= 7.5);
}

/* heat on a single sine mode: u(t) = exp(-3 alpha k^2 t) u(0); the explicit
 * scheme's own factor per step is (1 + alpha dt lambda_h) with lambda_h the
 * discrete eigenvalue, so the error is that of time stepping, O(dt). */
static void test_heat(void **state) {
  (void)state;
  const int64_t n = 32;
  mb_stencil_grid g = {.n = {n, n, n}, .h = {1.0 / n, 1.0 / n, 1.0 / n}};
  const double alpha = 0.5, limit = mb_stencil_heat_dt_limit(&g, alpha);
  double *u = sines(n, 1), *u0 = sines(n, 1), *work = malloc(sizeof *work * (size_t)(n * n * n));
  assert_non_null(work);
  /* refused beyond the limit, with the limit in the message */
  assert_int_equal(mb_stencil_heat_f64(&g, alpha, 1.01 * limit, 1, u, work), MB_ERR_ARG);
  mb_test_assert_message_contains("exceeds the stability limit");
  const double dt = 0.1 * limit;
  const int64_t steps = 200;
  assert_int_equal(mb_stencil_heat_f64(&g, alpha, dt, steps, u, work), MB_SUCCESS);
  const double k2 = TWO_PI * TWO_PI, t = dt * (double)steps;
  const double decay = exp(-3 * alpha * k2 * t);
  double err = 0;
  for (int64_t p = 0; p < n * n * n; p++) err = fmax(err, fabs(u[p] - decay * u0[p]));
  /* time error ~ t (3 alpha k^2)^2 dt / 2 */
  const double bound = t * pow(3 * alpha * k2, 2) * dt / 2 * 1.5 + 1e-10;
  print_message("heat: 200 steps at 0.1 of the limit, decay %.6f, max error %.3e (bound %.3e)\n",
                decay, err, bound);
  assert_true(err <= bound);
  assert_true(decay < 0.9); /* the field did change */
  assert_int_equal(mb_stencil_heat_f64(&g, alpha, 0.99 * limit, 1, u, work), MB_SUCCESS);
  free(u);
  free(u0);
  free(work);
}

/* wave from rest on a sine mode: u(t) = cos(omega t) u(0), omega = c k sqrt(3) */
static void test_wave(void **state) {
  (void)state;
  const int64_t n = 32;
  mb_stencil_grid g = {.n = {n, n, n}, .h = {1.0 / n, 1.0 / n, 1.0 / n}};
  const double c = 1.0, limit = mb_stencil_wave_dt_limit(&g, c);
  double *u = sines(n, 1), *prev = sines(n, 1), *u0 = sines(n, 1);
  double *work = malloc(sizeof *work * (size_t)(n * n * n));
  assert_non_null(work);
  assert_int_equal(mb_stencil_wave_f64(&g, c, 1.01 * limit, 1, prev, u, work), MB_ERR_ARG);
  mb_test_assert_message_contains("exceeds the CFL limit");
  const double dt = 0.05 * limit;
  const int64_t steps = 100;
  /* from rest, second-order start: u_prev = u + (c dt)^2 / 2 lap(u) */
  assert_int_equal(mb_stencil_laplacian_f64(&g, u, work), MB_SUCCESS);
  for (int64_t p = 0; p < n * n * n; p++) prev[p] = u[p] + 0.5 * c * c * dt * dt * work[p];
  assert_int_equal(mb_stencil_wave_f64(&g, c, dt, steps, prev, u, work), MB_SUCCESS);
  const double omega = c * TWO_PI * sqrt(3.0), t = dt * (double)steps;
  double err = 0, amp = 0;
  for (int64_t p = 0; p < n * n * n; p++) {
    err = fmax(err, fabs(u[p] - cos(omega * t) * u0[p]));
    amp = fmax(amp, fabs(u[p]));
  }
  print_message("wave: 100 steps, cos(omega t) = %.4f, max error %.3e\n", cos(omega * t), err);
  /* leapfrog phase error ~ t omega^3 dt^2 / 24 */
  const double bound = t * pow(omega, 3) * dt * dt / 24 * 2 + 1e-9;
  print_message("wave: bound %.3e\n", bound);
  assert_true(err < bound);
  assert_true(amp <= 1.0 + 1e-6);
  free(u);
  free(prev);
  free(u0);
  free(work);
}

/* Dirichlet: a polynomial of degree <= 8 along x is differentiated exactly
 * away from the faces; next to a face the stencil reads `outside`. */
static void test_dirichlet(void **state) {
  (void)state;
  const int64_t nz = 3, ny = 2, nx = 20;
  double u[3 * 2 * 20], du[3 * 2 * 20];
  const double h = 0.5;
  for (int64_t p = 0; p < nz * ny * nx; p++) {
    double x = (double)(p % nx) * h;
    u[p] = x * x * x - 2 * x;
  }
  mb_stencil_grid g = {.n = {nz, ny, nx}, .h = {1, 1, h}, .bc = MB_STENCIL_DIRICHLET,
                       .outside = 3.0};
  assert_int_equal(mb_stencil_derivative_f64(&g, 2, u, du), MB_SUCCESS);
  for (int64_t i = 4; i < nx - 4; i++) {
    double x = (double)i * h;
    assert_true(fabs(du[i] - (3 * x * x - 2)) < 1e-10);
  }
  /* point 0: neighbours -1..-4 are `outside` */
  double s = 0.8 * (u[1] - 3.0) + -0.2 * (u[2] - 3.0);
  s = s + 4.0 / 105.0 * (u[3] - 3.0);
  s = s + -1.0 / 280.0 * (u[4] - 3.0);
  assert_true(du[0] == s * (1.0 / h));
}

/* plain (ghost 0) and framed (ghost 4 + fill) paths: the same bits */
static void test_paths(void **state) {
  (void)state;
  const int64_t n[3] = {13, 17, 19}, np = n[0] * n[1] * n[2];
  const int64_t L[3] = {n[0] + 8, n[1] + 8, n[2] + 8}, nl = L[0] * L[1] * L[2];
  double *u = malloc(sizeof *u * (size_t)np), *a = malloc(sizeof *a * (size_t)np);
  double *fu = calloc((size_t)nl, sizeof *fu), *fa = calloc((size_t)nl, sizeof *fa);
  assert_true(u && a && fu && fa);
  for (int64_t p = 0; p < np; p++) u[p] = sin(0.37 * (double)p) + 0.01 * (double)(p % 7);
  for (int bc = 0; bc < 2; bc++) {
    mb_stencil_grid g = {.n = {n[0], n[1], n[2]}, .h = {0.3, 0.2, 0.1},
                         .bc = (mb_stencil_boundary)bc, .outside = -0.25};
    mb_stencil_grid f = g;
    f.ghost = 4;
    for (int64_t k = 0; k < n[0]; k++)
      for (int64_t j = 0; j < n[1]; j++)
        memcpy(fu + ((k + 4) * L[1] + j + 4) * L[2] + 4, u + (k * n[1] + j) * n[2],
               sizeof(double) * (size_t)n[2]);
    assert_int_equal(mb_stencil_fill_ghosts_f64(&f, fu), MB_SUCCESS);
    for (int op = 0; op < 4; op++) {
      if (op < 3) {
        assert_int_equal(mb_stencil_derivative_f64(&g, op, u, a), MB_SUCCESS);
        assert_int_equal(mb_stencil_derivative_f64(&f, op, fu, fa), MB_SUCCESS);
      } else {
        assert_int_equal(mb_stencil_laplacian_f64(&g, u, a), MB_SUCCESS);
        assert_int_equal(mb_stencil_laplacian_f64(&f, fu, fa), MB_SUCCESS);
      }
      for (int64_t k = 0; k < n[0]; k++)
        for (int64_t j = 0; j < n[1]; j++)
          assert_memory_equal(fa + ((k + 4) * L[1] + j + 4) * L[2] + 4, a + (k * n[1] + j) * n[2],
                              sizeof(double) * (size_t)n[2]);
    }
  }
  free(u);
  free(a);
  free(fu);
  free(fa);
}

/* float32 follows float64; 1 and 2 threads give the same bits */
static void test_precision_threads(void **state) {
  (void)state;
  const int64_t n = 24, np = n * n * n;
  double *u = sines(n, 1), *d1 = malloc(sizeof *d1 * (size_t)np), *d2 = malloc(sizeof *d2 * (size_t)np);
  float *u32 = malloc(sizeof *u32 * (size_t)np), *d32 = malloc(sizeof *d32 * (size_t)np);
  assert_true(d1 && d2 && u32 && d32);
  for (int64_t p = 0; p < np; p++) u32[p] = (float)u[p];
  mb_stencil_grid g = {.n = {n, n, n}, .h = {1.0 / n, 1.0 / n, 1.0 / n}};
  assert_int_equal(mb_stencil_laplacian_f64(&g, u, d1), MB_SUCCESS);
  assert_int_equal(mb_stencil_laplacian_f32(&g, u32, d32), MB_SUCCESS);
  double scale = 0, err = 0;
  for (int64_t p = 0; p < np; p++) {
    scale = fmax(scale, fabs(d1[p]));
    err = fmax(err, fabs(d1[p] - (double)d32[p]));
  }
  print_message("laplacian float32 vs float64: max rel difference %.3e\n", err / scale);
  assert_true(err / scale < 1e-5);
  int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  assert_int_equal(mb_stencil_laplacian_f64(&g, u, d1), MB_SUCCESS);
  omp_set_num_threads(2);
  assert_int_equal(mb_stencil_laplacian_f64(&g, u, d2), MB_SUCCESS);
  omp_set_num_threads(saved);
  assert_memory_equal(d1, d2, sizeof(double) * (size_t)np);
  free(u);
  free(d1);
  free(d2);
  free(u32);
  free(d32);
}

/* The header's contract written out for one point of a periodic grid of
 * shape n (z, y, x) with spacing h: the derivative along each axis, the
 * Laplacian, a heat step and a wave step, in T, compared bit for bit with
 * the kernels on every point. */
#define CONTRACT_TEST(T, SFX, FMA)                                                                 \
  static void contract_##SFX(void) {                                                               \
    const int64_t n[3] = {9, 10, 11}, np = n[0] * n[1] * n[2];                                     \
    mb_stencil_grid g = {.n = {n[0], n[1], n[2]}, .h = {0.3, 0.7, 1.1}};                           \
    T *u = malloc(sizeof *u * (size_t)np), *p = malloc(sizeof *p * (size_t)np);                    \
    T *got = malloc(sizeof *got * (size_t)np);                                                     \
    assert_true(u && p && got);                                                                    \
    for (int64_t q = 0; q < np; q++) {                                                             \
      u[q] = (T)sin(0.37 * (double)q) * (T)1.7;                                                    \
      p[q] = (T)cos(0.11 * (double)q);                                                             \
    }                                                                                              \
    const mb_stencil_weights w = mb_stencil_weights_of(&g);                                        \
    const T a = (T)0.013, b = (T)0.021;                                                            \
    for (int what = 0; what < 6; what++) {                                                         \
      mb_error e = what < 3   ? mb_stencil_derivative_##SFX(&g, what, u, got)                      \
                   : what == 3 ? mb_stencil_laplacian_##SFX(&g, u, got)                            \
                   : what == 4 ? mb_stencil_heat_step_##SFX(&g, 0.013, u, got)                     \
                               : mb_stencil_wave_step_##SFX(&g, 0.021, p, u, got);                 \
      assert_int_equal(e, MB_SUCCESS);                                                             \
      int64_t bad = 0;                                                                             \
      for (int64_t z = 0; z < n[0]; z++)                                                           \
        for (int64_t y = 0; y < n[1]; y++)                                                         \
          for (int64_t x = 0; x < n[2]; x++) {                                                     \
            const int64_t at[3] = {z, y, x}, q = (z * n[1] + y) * n[2] + x;                        \
            /* the k-th neighbour along axis ax, periodic */                                       \
            T nb[3][9];                                                                            \
            for (int ax = 0; ax < 3; ax++)                                                         \
              for (int k = -4; k <= 4; k++) {                                                      \
                int64_t c[3] = {at[0], at[1], at[2]};                                              \
                c[ax] = ((c[ax] + k) % n[ax] + n[ax]) % n[ax];                                     \
                nb[ax][k + 4] = u[(c[0] * n[1] + c[1]) * n[2] + c[2]];                             \
              }                                                                                    \
            T want;                                                                                \
            if (what < 3) {                                                                        \
              const T *v = nb[what];                                                               \
              T s = (T)w.first[what][0] * (v[5] - v[3]);                                           \
              s = FMA((T)w.first[what][1], v[6] - v[2], s);                                        \
              s = FMA((T)w.first[what][2], v[7] - v[1], s);                                        \
              want = FMA((T)w.first[what][3], v[8] - v[0], s);                                     \
            } else {                                                                               \
              T s = (T)w.center * u[q];                                                            \
              for (int ax = 0; ax < 3; ax++)                                                       \
                for (int k = 1; k <= 4; k++)                                                       \
                  s = FMA((T)w.second[ax][k - 1], nb[ax][4 + k] + nb[ax][4 - k], s);              \
              want = what == 3 ? s : what == 4 ? FMA(a, s, u[q]) : FMA(b, s, (u[q] + u[q]) - p[q]); \
            }                                                                                      \
            bad += memcmp(&want, &got[q], sizeof want) != 0;                                       \
          }                                                                                        \
      if (bad) fail_msg(#T " op %d: %lld points differ from the contract", what, (long long)bad);  \
    }                                                                                              \
    free(u);                                                                                       \
    free(p);                                                                                       \
    free(got);                                                                                     \
  }

CONTRACT_TEST(double, f64, fma)
CONTRACT_TEST(float, f32, fmaf)

static void test_contract(void **state) {
  (void)state;
  contract_f64();
  contract_f32();
  print_message("derivatives, Laplacian, heat and wave steps equal mb_stencil.h's formulas bit "
                "for bit (float64, float32)\n");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_accuracy),  cmocka_unit_test(test_heat),
      cmocka_unit_test(test_wave),      cmocka_unit_test(test_dirichlet),
      cmocka_unit_test(test_paths),     cmocka_unit_test(test_precision_threads),
      cmocka_unit_test(test_contract),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
