/* The stencil kernels on a grid split over the ranks (partition/mb_cart.h:
 * Cartesian blocks, 4-plane face halos) give the one-rank results bit for
 * bit: derivative along each axis, the Laplacian, 10 heat steps and 10 wave
 * steps, periodic and Dirichlet, float64 (and float32 for the Laplacian and
 * heat), on shapes the rank counts do not divide, with mb_cart_dims' cut
 * (MPI_Dims_create's on small grids, the slab cut on a grid of 64 planes
 * per rank along z) and with slabs along z given (mb_cart_create_dims; a
 * cut whose product is not the rank count is refused). The cut's rule
 * (mb_cart_dims: slabs along z where z is a longest axis and each slab
 * keeps MB_CART_SLAB_MIN_PLANES planes, else MPI_Dims_create's cut, the
 * most blocks along the longest axis) is checked on its own. Each rank computes the
 * one-rank result on the whole grid itself and compares its block. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_cart.h"
#include "mb_stencil.h"
#include "mb_testutil.h"

static int g_rank, g_size;

typedef struct dist {
  mb_cart *cart;
  int64_t L[3], nl;         /* framed local sizes, points */
  mb_stencil_grid whole, local;
} dist;

/* dims: the blocks per axis (mb_cart_create_dims), NULL for mb_cart_dims' cut */
static void dist_make(dist *d, const int64_t n[3], const int *dims, const double h[3], int bc,
                      double outside) {
  assert_int_equal(
      mb_cart_create_dims(MPI_COMM_WORLD, n, dims, bc == MB_STENCIL_PERIODIC, 4, &d->cart),
      MB_SUCCESS);
  if (dims)
    for (int a = 0; a < 3; a++) assert_int_equal(d->cart->dims[a], dims[a]);
  d->whole = (mb_stencil_grid){.n = {n[0], n[1], n[2]}, .h = {h[0], h[1], h[2]},
                               .bc = (mb_stencil_boundary)bc, .outside = outside};
  d->local = d->whole;
  d->local.ghost = 4;
  for (int a = 0; a < 3; a++) {
    d->local.n[a] = d->cart->nloc[a];
    d->L[a] = d->cart->nloc[a] + 8;
  }
  d->nl = d->L[0] * d->L[1] * d->L[2];
}

/* Position of local point (k, j, i) in the frame, and of the same point in
 * the whole grid. */
static int64_t at_local(const dist *d, int64_t k, int64_t j, int64_t i) {
  return ((k + 4) * d->L[1] + j + 4) * d->L[2] + i + 4;
}
static int64_t at_whole(const dist *d, int64_t k, int64_t j, int64_t i) {
  const mb_cart *c = d->cart;
  return ((c->lo[0] + k) * d->whole.n[1] + c->lo[1] + j) * d->whole.n[2] + c->lo[2] + i;
}

#define DEFINE_FOR(T, SFX, CART_T)                                                             \
  static void scatter_##SFX(const dist *d, const T *whole, T *local) {                         \
    for (int64_t k = 0; k < d->cart->nloc[0]; k++)                                             \
      for (int64_t j = 0; j < d->cart->nloc[1]; j++)                                           \
        for (int64_t i = 0; i < d->cart->nloc[2]; i++)                                         \
          local[at_local(d, k, j, i)] = whole[at_whole(d, k, j, i)];                           \
  }                                                                                            \
  static void halo_##SFX(const dist *d, T *local) {                                            \
    assert_int_equal(mb_cart_exchange_begin(d->cart, CART_T, local), MB_SUCCESS);              \
    assert_int_equal(mb_cart_exchange_end(d->cart), MB_SUCCESS);                               \
    if (d->whole.bc == MB_STENCIL_DIRICHLET)                                                   \
      mb_cart_fill_outside(d->cart, CART_T, local, d->whole.outside);                          \
  }                                                                                            \
  static int64_t mismatches_##SFX(const dist *d, const T *whole, const T *local) {             \
    int64_t bad = 0;                                                                           \
    for (int64_t k = 0; k < d->cart->nloc[0]; k++)                                             \
      for (int64_t j = 0; j < d->cart->nloc[1]; j++)                                           \
        for (int64_t i = 0; i < d->cart->nloc[2]; i++)                                         \
          bad += memcmp(&local[at_local(d, k, j, i)], &whole[at_whole(d, k, j, i)], sizeof(T)) \
                 != 0;                                                                         \
    return bad;                                                                                \
  }                                                                                            \
  /* heat steps on the blocks: halo, then the fused step (mb_stencil.h) */                    \
  static void heat_dist_##SFX(const dist *d, double alpha, double dt, int steps, T *u, T *w) { \
    for (int s = 0; s < steps; s++) {                                                          \
      halo_##SFX(d, u);                                                                        \
      assert_int_equal(mb_stencil_heat_step_##SFX(&d->local, alpha * dt, u, w), MB_SUCCESS);   \
      memcpy(u, w, sizeof(T) * (size_t)d->nl);                                                \
    }                                                                                          \
  }

DEFINE_FOR(double, f64, MB_CART_FLOAT64)
DEFINE_FOR(float, f32, MB_CART_FLOAT32)

/* every rank's count of points differing from the one-rank run, summed */
static void assert_same(const char *what, int64_t bad) {
  int64_t all = 0;
  MPI_Allreduce(&bad, &all, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (all) fail_msg("%s: %lld points differ from the one-rank run", what, (long long)all);
}

static void check_case(const int64_t n[3], const int *dims, int bc) {
  const double h[3] = {0.3, 0.2, 0.1};
  dist d;
  dist_make(&d, n, dims, h, bc, -0.75);
  const int64_t nw = n[0] * n[1] * n[2];
  double *u = malloc(sizeof *u * (size_t)nw), *ref = malloc(sizeof *ref * (size_t)nw);
  double *wk = malloc(sizeof *wk * (size_t)nw), *prev = malloc(sizeof *prev * (size_t)nw);
  double *lu = calloc((size_t)d.nl, sizeof *lu), *lw = calloc((size_t)d.nl, sizeof *lw);
  double *lp = calloc((size_t)d.nl, sizeof *lp);
  float *u32 = malloc(sizeof *u32 * (size_t)nw), *ref32 = malloc(sizeof *ref32 * (size_t)nw);
  float *w32 = malloc(sizeof *w32 * (size_t)nw);
  float *lu32 = calloc((size_t)d.nl, sizeof *lu32), *lw32 = calloc((size_t)d.nl, sizeof *lw32);
  assert_true(u && ref && wk && prev && lu && lw && lp && u32 && ref32 && w32 && lu32 && lw32);
  for (int64_t p = 0; p < nw; p++) {
    u[p] = sin(0.011 * (double)p) * cos(0.37 * (double)(p % 29)) + 0.1;
    u32[p] = (float)u[p];
  }
  char what[160];
  /* derivatives and Laplacian */
  for (int op = 0; op < 4; op++) {
    if (op < 3) assert_int_equal(mb_stencil_derivative_f64(&d.whole, op, u, ref), MB_SUCCESS);
    else assert_int_equal(mb_stencil_laplacian_f64(&d.whole, u, ref), MB_SUCCESS);
    scatter_f64(&d, u, lu);
    halo_f64(&d, lu);
    if (op < 3) assert_int_equal(mb_stencil_derivative_f64(&d.local, op, lu, lw), MB_SUCCESS);
    else assert_int_equal(mb_stencil_laplacian_f64(&d.local, lu, lw), MB_SUCCESS);
    snprintf(what, sizeof what, "%s, %s, %lldx%lldx%lld", op < 3 ? "derivative" : "laplacian",
             bc ? "dirichlet" : "periodic", (long long)n[0], (long long)n[1], (long long)n[2]);
    assert_same(what, mismatches_f64(&d, ref, lw));
  }
  assert_int_equal(mb_stencil_laplacian_f32(&d.whole, u32, ref32), MB_SUCCESS);
  scatter_f32(&d, u32, lu32);
  halo_f32(&d, lu32);
  assert_int_equal(mb_stencil_laplacian_f32(&d.local, lu32, lw32), MB_SUCCESS);
  assert_same("laplacian float32", mismatches_f32(&d, ref32, lw32));
  /* 10 heat steps */
  const double alpha = 0.7, dt = 0.5 * mb_stencil_heat_dt_limit(&d.whole, alpha);
  memcpy(ref, u, sizeof *u * (size_t)nw);
  assert_int_equal(mb_stencil_heat_f64(&d.whole, alpha, dt, 10, ref, wk), MB_SUCCESS);
  scatter_f64(&d, u, lu);
  heat_dist_f64(&d, alpha, dt, 10, lu, lw);
  assert_same("heat, 10 steps", mismatches_f64(&d, ref, lu));
  memcpy(ref32, u32, sizeof *u32 * (size_t)nw);
  assert_int_equal(mb_stencil_heat_f32(&d.whole, alpha, dt, 10, ref32, w32), MB_SUCCESS);
  scatter_f32(&d, u32, lu32);
  heat_dist_f32(&d, alpha, dt, 10, lu32, lw32);
  assert_same("heat float32, 10 steps", mismatches_f32(&d, ref32, lu32));
  /* 10 wave steps from u_prev = u */
  const double c = 1.3, wdt = 0.5 * mb_stencil_wave_dt_limit(&d.whole, c);
  memcpy(ref, u, sizeof *u * (size_t)nw);
  memcpy(prev, u, sizeof *u * (size_t)nw);
  assert_int_equal(mb_stencil_wave_f64(&d.whole, c, wdt, 10, prev, ref, wk), MB_SUCCESS);
  scatter_f64(&d, u, lu);
  scatter_f64(&d, u, lp);
  const double b = (double)(c * c * wdt * wdt);
  for (int s = 0; s < 10; s++) {
    halo_f64(&d, lu);
    assert_int_equal(mb_stencil_wave_step_f64(&d.local, b, lp, lu, lw), MB_SUCCESS);
    double *t = lp;
    lp = lu;
    lu = lw;
    lw = t;
  }
  assert_same("wave, 10 steps", mismatches_f64(&d, ref, lu));
  free(u); free(ref); free(wk); free(prev); free(lu); free(lw); free(lp);
  free(u32); free(ref32); free(w32); free(lu32); free(lw32);
  mb_cart_free(d.cart);
}

/* mb_cart_dims on n[3] over size ranks gives z, y, x blocks */
static void expect_dims(int size, int64_t nz, int64_t ny, int64_t nx, int z, int y, int x) {
  const int64_t n[3] = {nz, ny, nx};
  int d[3] = {0, 0, 0};
  assert_int_equal(mb_cart_dims(size, n, d), MB_SUCCESS);
  if (d[0] != z || d[1] != y || d[2] != x)
    fail_msg("mb_cart_dims(%d, %lld x %lld x %lld) = %d x %d x %d, expected %d x %d x %d", size,
             (long long)nz, (long long)ny, (long long)nx, d[0], d[1], d[2], z, y, x);
}

static void test_dims_rule(void **state) {
  (void)state;
  assert_int_equal(MB_CART_SLAB_MIN_PLANES, 64);
  /* slabs: z a longest axis, 64 planes or more per slab */
  expect_dims(4, 1024, 1024, 1024, 4, 1, 1); /* the 4-GPU strong run */
  expect_dims(4, 2048, 512, 512, 4, 1, 1);   /* the 4-GPU weak run */
  expect_dims(4, 256, 256, 256, 4, 1, 1);    /* exactly 64 planes each */
  expect_dims(8, 512, 512, 512, 8, 1, 1);
  expect_dims(3, 200, 100, 50, 3, 1, 1);     /* 66 planes each */
  expect_dims(1, 16, 16, 16, 1, 1, 1);
  /* MPI_Dims_create's cut, the most blocks along the longest axis */
  expect_dims(4, 255, 255, 255, 2, 2, 1);    /* 63 planes: too thin */
  expect_dims(8, 511, 511, 511, 2, 2, 2);
  expect_dims(4, 256, 512, 512, 1, 2, 2);    /* z not a longest axis: no slabs */
  expect_dims(4, 16, 16, 16, 2, 2, 1);
  expect_dims(4, 40, 12, 10, 2, 2, 1);
  expect_dims(6, 16, 64, 32, 1, 3, 2);
  int d[3];
  const int64_t n[3] = {64, 64, 64};
  assert_int_equal(mb_cart_dims(0, n, d), MB_ERR_ARG);
  mb_error_clear();
  if (g_rank == 0)
    print_message("mb_cart_dims: slabs from 64 planes per rank, else MPI_Dims_create's cut\n");
}

static void test_blocks(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{13, 17, 19}, {16, 16, 16}, {9, 24, 11}};
  for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
    for (int bc = 0; bc < 2; bc++) check_case(shapes[k], NULL, bc);
  /* slabs along z, the cut given (mb_cart_create_dims), and a cut whose
   * product is not the rank count refused */
  const int64_t tall[3] = {40, 12, 10};
  const int slabs[3] = {g_size, 1, 1}, wrong[3] = {g_size + 1, 1, 1};
  for (int bc = 0; bc < 2; bc++) check_case(tall, slabs, bc);
  /* the default cut of a grid of 64 planes per rank along z: slabs */
  const int64_t deep[3] = {64 * (int64_t)g_size, 6, 5};
  for (int bc = 0; bc < 2; bc++) check_case(deep, NULL, bc);
  mb_cart *sc = NULL;
  assert_int_equal(mb_cart_create(MPI_COMM_WORLD, deep, 1, 4, &sc), MB_SUCCESS);
  assert_int_equal(sc->dims[0], g_size);
  assert_int_equal(sc->dims[1] * sc->dims[2], 1);
  mb_cart_free(sc);
  mb_cart *bad = NULL;
  assert_int_equal(mb_cart_create_dims(MPI_COMM_WORLD, tall, wrong, 1, 4, &bad), MB_ERR_ARG);
  assert_null(bad);
  mb_error_clear();
  if (g_rank == 0)
    print_message("%d ranks: derivative x/y/z, laplacian (float64, float32), heat and wave "
                  "(10 steps) bitwise equal to one rank on 3 shapes and on %d x 1 x 1 slabs "
                  "(given and by default), periodic and dirichlet\n",
                  g_size, g_size);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_dims_rule),
                                     cmocka_unit_test(test_blocks)};
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any ? 1 : 0;
}
