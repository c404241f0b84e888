/* Reproducible reductions of device arrays (cuda/partition/mb_reduce.cu)
 * against the CPU's (partition/mb_reduce.c), bit for bit, on 1-4 ranks
 * (one GPU per rank, or several ranks on one GPU):
 *  - 10^7 mixed-magnitude values split unevenly in a permuted order (the
 *    data of test_reduce.c): dot, 2-norm and sum equal the CPU's bits and
 *    the correctly rounded values (checked with Python's math.fsum);
 *  - the bins of one rank's share (mixed data, and data of one magnitude
 *    range; products, squares, plain sums) equal the CPU's bins;
 *  - hand cases: rounding ties, subnormals, overflow, NaN and infinities,
 *    empty shares;
 *  - on one rank, 2^28 + 4099 values: several launches with carries between.
 * Exits 77 (skip) where some rank has no CUDA device (or CUDA is not built). */
#include <float.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_cuda.h"
#include "mb_mpi.h"
#include "mb_reduce.h"
#include "mb_reduce_impl.h"
#include "mb_testutil.h"
#include "reduce_testdata.h"

static int g_rank, g_size;
static mb_reduce_device *g_rd;

static uint64_t bits_of(double v) {
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  return b;
}

static void assert_same_bits(double got, double want, const char *what) {
  if (bits_of(got) != bits_of(want) && !(isnan(got) && isnan(want)))
    fail_msg("rank %d of %d, %s: GPU %a (%.17g), expected %a (%.17g)", g_rank, g_size, what, got,
             got, want, want);
}

/* Device copies of x[n], y[n]; the bins of the GPU and of the CPU agree
 * for products, squares and sums. */
static void check_bins(int64_t n, const double *x, const double *y, double **dx, double **dy) {
  assert_int_equal(mb_reduce_device_upload(n, x, dx), MB_SUCCESS);
  assert_int_equal(mb_reduce_device_upload(n, y, dy), MB_SUCCESS);
  for (int mode = 0; mode < 3; mode++) {
    mb_reduce_acc cpu, gpu;
    mb_reduce_acc_zero(&cpu);
    mb_reduce_acc_zero(&gpu);
    mb_reduce_acc_add(&cpu, n, x, mode == 0 ? y : mode == 1 ? x : NULL);
    assert_int_equal(mb_reduce_device_acc(g_rd, NULL, n, *dx, mode == 0 ? *dy : mode == 1 ? *dx : NULL,
                                          &gpu),
                     MB_SUCCESS);
    if (memcmp(&cpu, &gpu, sizeof cpu))
      fail_msg("rank %d, mode %d: the GPU's bins differ from the CPU's", g_rank, mode);
  }
}

static void make_share(int64_t n, int kind, double **x, double **y, int64_t *m) {
  int64_t j0, j1;
  td_split(n, g_rank, g_size, &j0, &j1);
  const int64_t a = td_perm_a(n);
  *m = j1 - j0;
  *x = malloc(sizeof **x * (size_t)(*m + 1));
  *y = malloc(sizeof **y * (size_t)(*m + 1));
  assert_true(*x && *y);
  for (int64_t j = j0; j < j1; j++) {
    const int64_t g = td_perm(j, a, n);
    if (kind == 0) td_mixed((uint64_t)g, *x + (j - j0), *y + (j - j0));
    else td_cancel((uint64_t)g, (uint64_t)(n / 2 + 1), *x + (j - j0), *y + (j - j0));
  }
}

static void test_mixed_1e7(void **state) {
  (void)state;
  const int64_t n = 10000000;
  double *x, *y, *dx = NULL, *dy = NULL;
  int64_t m;
  make_share(n, 0, &x, &y, &m);
  check_bins(m, x, y, &dx, &dy);
  double cpu[3], gpu[3];
  assert_int_equal(mb_reduce_dot(MPI_COMM_WORLD, m, x, y, &cpu[0]), MB_SUCCESS);
  assert_int_equal(mb_reduce_norm2(MPI_COMM_WORLD, m, x, &cpu[1]), MB_SUCCESS);
  assert_int_equal(mb_reduce_sum(MPI_COMM_WORLD, m, y, &cpu[2]), MB_SUCCESS);
  assert_int_equal(mb_reduce_dot_device(g_rd, NULL, MPI_COMM_WORLD, m, dx, dy, &gpu[0]), MB_SUCCESS);
  assert_int_equal(mb_reduce_norm2_device(g_rd, NULL, MPI_COMM_WORLD, m, dx, &gpu[1]), MB_SUCCESS);
  assert_int_equal(mb_reduce_sum_device(g_rd, NULL, MPI_COMM_WORLD, m, dy, &gpu[2]), MB_SUCCESS);
  assert_same_bits(gpu[0], cpu[0], "dot");
  assert_same_bits(gpu[1], cpu[1], "norm");
  assert_same_bits(gpu[2], cpu[2], "sum");
  /* the correctly rounded values (Python: math.fsum of the same float64 terms) */
  assert_same_bits(gpu[0], 0x1.db63a8396e242p+994, "dot, correctly rounded");
  assert_same_bits(gpu[1], 0x1.5fa1433b2cf4bp+506, "norm, correctly rounded");
  assert_same_bits(gpu[2], 0x1.b6bd615568652p+507, "sum, correctly rounded");
  double naive = 0, all = 0;
  assert_int_equal(mb_reduce_dot_device_naive(g_rd, NULL, m, dx, dy, &naive), MB_SUCCESS);
  MPI_Allreduce(&naive, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    printf("GPU mixed 1e7 on %d ranks: dot %a; naive GPU dot %.17g\n", g_size, gpu[0], all);
  mb_reduce_device_release(dx);
  mb_reduce_device_release(dy);
  free(x);
  free(y);
  /* exactly cancelling pairs around a 3 */
  make_share(n, 1, &x, &y, &m);
  assert_int_equal(mb_reduce_device_upload(m, x, &dx), MB_SUCCESS);
  assert_int_equal(mb_reduce_device_upload(m, y, &dy), MB_SUCCESS);
  double d = 0;
  assert_int_equal(mb_reduce_dot_device(g_rd, NULL, MPI_COMM_WORLD, m, dx, dy, &d), MB_SUCCESS);
  assert_same_bits(d, 3.0, "cancelling pairs around a 3");
  mb_reduce_device_release(dx);
  mb_reduce_device_release(dy);
  free(x);
  free(y);
}

/* One magnitude range (a solver's vectors): the register windows hit. */
static void test_narrow(void **state) {
  (void)state;
  const int64_t n = 3000017;
  double *x = malloc(sizeof *x * (size_t)n), *y = malloc(sizeof *y * (size_t)n), *dx, *dy;
  assert_true(x && y);
  for (int64_t i = 0; i < n; i++) {
    x[i] = td_value(7 * (uint64_t)i + (uint64_t)g_rank, -8, 8);
    y[i] = td_value(7 * (uint64_t)i + 1, -3, 3);
  }
  check_bins(n, x, y, &dx, &dy);
  double cpu = 0, gpu = 0;
  assert_int_equal(mb_reduce_dot(MPI_COMM_WORLD, n, x, y, &cpu), MB_SUCCESS);
  assert_int_equal(mb_reduce_dot_device(g_rd, NULL, MPI_COMM_WORLD, n, dx, dy, &gpu), MB_SUCCESS);
  assert_same_bits(gpu, cpu, "narrow dot");
  mb_reduce_device_release(dx);
  mb_reduce_device_release(dy);
  free(x);
  free(y);
}

static void test_hand_cases(void **state) {
  (void)state;
  const double u = 0x1p-53, tiny = 0x1p-1074;
  const struct {
    double t[4];
    int n;
    double want;
  } cases[] = {
      {{1e300, 1.0, -1e300}, 3, 1.0},           {{1.0, u, u}, 3, 1.0 + 2 * u},
      {{1.0, u}, 2, 1.0},                       {{1.0 + 2 * u, u}, 2, 1.0 + 4 * u},
      {{1.0, u, tiny}, 3, 1.0 + 2 * u},         {{1.0, u, -tiny}, 3, 1.0},
      {{tiny, tiny, tiny}, 3, 3 * tiny},        {{DBL_MAX, DBL_MAX, -DBL_MAX}, 3, DBL_MAX},
      {{DBL_MAX, DBL_MAX}, 2, INFINITY},        {{-DBL_MAX, -0x1p970}, 2, -INFINITY},
      {{0.5, -0.5, -0.0}, 3, 0.0},              {{1.0, INFINITY, 2.0}, 3, INFINITY},
      {{-INFINITY, 5.0}, 2, -INFINITY},         {{INFINITY, 1.0, -INFINITY}, 3, NAN},
      {{1.0, NAN}, 2, NAN},                     {{0x1.fffffffffffffp-1, 0x1p-54}, 2, 1.0},
      {{0, 0, 0, 0}, 0, 0.0},
  };
  const double ones[4] = {1, 1, 1, 1};
  double *d1 = NULL;
  assert_int_equal(mb_reduce_device_upload(4, ones, &d1), MB_SUCCESS);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    /* the terms on the last rank, none elsewhere */
    const int n = g_rank == g_size - 1 ? cases[c].n : 0;
    double *dt = NULL, s = -1, d = -1;
    assert_int_equal(mb_reduce_device_upload(4, cases[c].t, &dt), MB_SUCCESS);
    assert_int_equal(mb_reduce_sum_device(g_rd, NULL, MPI_COMM_WORLD, n, dt, &s), MB_SUCCESS);
    assert_int_equal(mb_reduce_dot_device(g_rd, NULL, MPI_COMM_WORLD, n, dt, d1, &d), MB_SUCCESS);
    char what[64];
    snprintf(what, sizeof what, "hand case %zu", c);
    assert_same_bits(s, cases[c].want, what);
    assert_same_bits(d, cases[c].want, what);
    mb_reduce_device_release(dt);
  }
  mb_reduce_device_release(d1);
}

/* Device-resident column sums (mb_reduce_device_columns, _allreduce,
 * _download): three columns of this rank's share, summed over the ranks,
 * have the CPU's slots and value. */
static void test_columns(void **state) {
  (void)state;
  const int64_t n = 1000003;
  double *x, *y, *dt = NULL;
  int64_t m;
  make_share(n, 0, &x, &y, &m);
  const int64_t ld = m + 5;
  double *t = calloc((size_t)(3 * ld), sizeof *t);
  assert_non_null(t);
  for (int64_t i = 0; i < m; i++) {
    t[i] = x[i] * y[i];
    t[ld + i] = x[i];
    t[2 * ld + i] = y[i];
  }
  mb_reduce_acc cpu[3], got[3], gpu[3];
  for (int j = 0; j < 3; j++) {
    mb_reduce_acc_zero(&cpu[j]);
    mb_reduce_acc_zero(&gpu[j]);
    mb_reduce_acc_add(&cpu[j], m, t + j * ld, NULL);
  }
  assert_int_equal(mb_reduce_acc_allreduce(MPI_COMM_WORLD, 3, cpu), MB_SUCCESS);
  assert_int_equal(mb_reduce_device_upload(3 * ld, t, &dt), MB_SUCCESS);
  /* the device accumulators: 3 x MB_REDUCE_NSLOTS int64, uploaded as zeros of the same size */
  double zeros[3 * MB_REDUCE_NSLOTS] = {0};
  int64_t *dacc = NULL;
  assert_int_equal(mb_reduce_device_upload(3 * MB_REDUCE_NSLOTS, zeros, (double **)&dacc),
                   MB_SUCCESS);
  assert_int_equal(mb_reduce_device_columns(g_rd, NULL, 3, m, dt, ld, dacc), MB_SUCCESS);
  assert_int_equal(mb_reduce_device_allreduce(g_rd, NULL, MPI_COMM_WORLD, 3, dacc), MB_SUCCESS);
  assert_int_equal(mb_reduce_device_download(g_rd, NULL, 3, dacc, got), MB_SUCCESS);
  for (int j = 0; j < 3; j++) {
    mb_reduce_acc_add_slots(&gpu[j], got[j].slot); /* normalised, as the CPU's */
    if (memcmp(&cpu[j], &gpu[j], sizeof cpu[j]))
      fail_msg("rank %d, column %d: the device-resident slots differ from the CPU's", g_rank, j);
    assert_same_bits(mb_reduce_acc_value(&got[j]), mb_reduce_acc_value(&cpu[j]), "column value");
  }
  mb_reduce_device_release((double *)dacc);
  mb_reduce_device_release(dt);
  free(t);
  free(x);
  free(y);
}

/* More terms than one launch takes: carries between launches (one rank). */
static void test_many_launches(void **state) {
  (void)state;
  if (g_size != 1) skip();
  const int64_t n = ((int64_t)1 << 28) + 4099;
  double *x = malloc(sizeof *x * (size_t)n), *dx = NULL;
  if (!x) skip();
  for (int64_t i = 0; i < n; i++) x[i] = td_value((uint64_t)i, 200, 210); /* one range: big bins */
  mb_reduce_acc cpu, gpu;
  mb_reduce_acc_zero(&cpu);
  mb_reduce_acc_zero(&gpu);
  mb_reduce_acc_add(&cpu, n, x, NULL);
  assert_int_equal(mb_reduce_device_upload(n, x, &dx), MB_SUCCESS);
  assert_int_equal(mb_reduce_device_acc(g_rd, NULL, n, dx, NULL, &gpu), MB_SUCCESS);
  if (memcmp(&cpu, &gpu, sizeof cpu)) fail_msg("2^28 + 4099 terms: the GPU's bins differ");
  mb_reduce_device_release(dx);
  free(x);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  char why[256] = "";
  int have = mb_cuda_device_count(why, sizeof why) > 0, all = 0;
  MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    if (g_rank == 0)
      printf("skipped: no CUDA device on some rank (%s)\n",
             why[0] ? why : "this build has no CUDA backend");
    MPI_Finalize();
    return MB_TEST_SKIP;
  }
  int local = 0, dev = 0;
  char name[256];
  if (mb_local_rank(MPI_COMM_WORLD, &local) || mb_cuda_select_device(local, &dev, name, sizeof name) ||
      mb_reduce_device_create(&g_rd)) {
    fprintf(stderr, "rank %d: cannot set up the device: %s\n", g_rank, mb_error_message());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  printf("rank %d of %d: device %d (%s)\n", g_rank, g_size, dev, name);
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_hand_cases),
                                     cmocka_unit_test(test_mixed_1e7),
                                     cmocka_unit_test(test_narrow),
                                     cmocka_unit_test(test_columns),
                                     cmocka_unit_test(test_many_launches)};
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  mb_reduce_device_free(g_rd);
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any ? 1 : 0;
}
