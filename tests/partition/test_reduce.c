/* Reproducible reductions (partition/mb_reduce.h) on any rank count:
 *  - hand-checked sums and dot products: absorption, ties to even, the
 *    sticky bit, subnormals, overflow and cancellation past DBL_MAX, NaN and
 *    infinities, zero, each spread over the ranks;
 *  - 10^7 values of mixed magnitude (products 1e-300 .. 1e300, both signs,
 *    nearly cancelling pairs, zeros, subnormals), split unevenly over the
 *    ranks in a permuted order: dot, 2-norm and sum have the bits of the
 *    one-rank serial result of rank 0 in the natural order (also with 3
 *    OpenMP threads), which are the correctly rounded values (found once
 *    with Python's math.fsum of the same terms), and a naive left-to-right
 *    sum differs from them (so the data can tell);
 *  - 10^7 exactly cancelling values around one 3: the dot product is 3.0,
 *    where the naive sum is not;
 *  - the GPU's register-window method, run on the CPU, gives the same bins
 *    as the CPU's direct one (mixed data, and data of one magnitude range);
 *  - several accumulators in one collective; argument errors.
 * The bits are written to stdout on rank 0, for the GPU test and by hand. */
#include <float.h>
#include <math.h>
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_reduce.h"
#include "mb_reduce_impl.h"
#include "mb_testutil.h"
#include "reduce_testdata.h"

static int g_rank, g_size;

static uint64_t bits_of(double v) {
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  return b;
}

static void assert_same_bits(double got, double want, const char *what) {
  if (bits_of(got) != bits_of(want))
    fail_msg("rank %d of %d, %s: got %a (%.17g), expected %a (%.17g)", g_rank, g_size, what, got,
             got, want, want);
}

/* The terms t[n] dealt round-robin to the ranks, from rank `first` on;
 * their sum and their dot product with ones must be `want`. */
static void check_sum(const double *t, int n, int first, double want, const char *what) {
  double mine[64], ones[64];
  int m = 0;
  for (int i = 0; i < n; i++)
    if ((i + first) % g_size == g_rank) {
      mine[m] = t[i];
      ones[m++] = 1.0;
    }
  double s = -1, d = -1;
  assert_int_equal(mb_reduce_sum(MPI_COMM_WORLD, m, mine, &s), MB_SUCCESS);
  assert_int_equal(mb_reduce_dot(MPI_COMM_WORLD, m, mine, ones, &d), MB_SUCCESS);
  if (isnan(want)) {
    if (!isnan(s) || !isnan(d)) fail_msg("%s: expected NaN, got %g and %g", what, s, d);
    return;
  }
  assert_same_bits(s, want, what);
  assert_same_bits(d, want, what);
}

static void test_hand_cases(void **state) {
  (void)state;
  const double u = 0x1p-53, tiny = 0x1p-1074;
  for (int first = 0; first < 3; first++) {
    { const double t[] = {1e300, 1.0, -1e300}; check_sum(t, 3, first, 1.0, "absorption"); }
    { const double t[] = {1.0, u, u}; check_sum(t, 3, first, 1.0 + 2 * u, "two halves of an ulp"); }
    { const double t[] = {1.0, u}; check_sum(t, 2, first, 1.0, "tie to even (down)"); }
    { const double t[] = {1.0 + 2 * u, u}; check_sum(t, 2, first, 1.0 + 4 * u, "tie to even (up)"); }
    { const double t[] = {1.0, u, tiny}; check_sum(t, 3, first, 1.0 + 2 * u, "sticky bit past a tie"); }
    { const double t[] = {-1.0, -u, -tiny}; check_sum(t, 3, first, -1.0 - 2 * u, "negative sticky"); }
    { const double t[] = {1.0, u, -tiny}; check_sum(t, 3, first, 1.0, "just below a tie: down"); }
    { const double t[] = {tiny, tiny, tiny}; check_sum(t, 3, first, 3 * tiny, "subnormals"); }
    { const double t[] = {0x1p-1022, -tiny}; check_sum(t, 2, first, 0x1p-1022 - tiny, "below the normals"); }
    { const double t[] = {DBL_MAX, DBL_MAX, -DBL_MAX}; check_sum(t, 3, first, DBL_MAX, "past DBL_MAX and back"); }
    { const double t[] = {DBL_MAX, DBL_MAX}; check_sum(t, 2, first, INFINITY, "overflow"); }
    { const double t[] = {-DBL_MAX, -0x1p970}; check_sum(t, 2, first, -INFINITY, "overflow at the tie"); }
    { const double t[] = {DBL_MAX, 0x1p969}; check_sum(t, 2, first, DBL_MAX, "below the overflow tie"); }
    { const double t[] = {0.5, -0.5, -0.0}; check_sum(t, 3, first, 0.0, "exact zero is +0"); }
    { const double t[] = {1.0, INFINITY, 2.0}; check_sum(t, 3, first, INFINITY, "+Inf"); }
    { const double t[] = {-INFINITY, 5.0}; check_sum(t, 2, first, -INFINITY, "-Inf"); }
    { const double t[] = {INFINITY, 1.0, -INFINITY}; check_sum(t, 3, first, NAN, "Inf - Inf"); }
    { const double t[] = {1.0, NAN}; check_sum(t, 2, first, NAN, "NaN"); }
    { const double t[] = {0x1.fffffffffffffp-1, 0x1p-54}; check_sum(t, 2, first, 1.0, "carry into the next binade"); }
    { const double t[] = {0x1p100, 0x1p-100, -0x1p100}; check_sum(t, 3, first, 0x1p-100, "far apart"); }
  }
  check_sum(NULL, 0, 0, 0.0, "empty");
  /* dot products: products rounded once, then summed exactly */
  {
    double x[2] = {1.0 + 0x1p-30, 1e200}, y[2] = {1.0 + 0x1p-30, 1e200}, d = 0;
    const int n = g_rank == 0 ? 2 : 0;
    assert_int_equal(mb_reduce_dot(MPI_COMM_WORLD, n, x, y, &d), MB_SUCCESS);
    assert_same_bits(d, INFINITY, "overflowing product");
    x[1] = y[1] = 0x1p-600; /* underflows to 0 */
    assert_int_equal(mb_reduce_dot(MPI_COMM_WORLD, n, x, y, &d), MB_SUCCESS);
    assert_same_bits(d, 1.0 + 0x1p-29, "rounded product, underflow to 0");
    x[0] = 0.0;
    y[0] = INFINITY;
    assert_int_equal(mb_reduce_dot(MPI_COMM_WORLD, n, x, y, &d), MB_SUCCESS);
    assert_true(isnan(d));
  }
  /* sum of squares 1..M and its norm */
  {
    const int64_t M = 100000;
    int64_t i0, i1;
    td_split(M, g_rank, g_size, &i0, &i1);
    double *x = malloc(sizeof *x * (size_t)(i1 - i0 + 1));
    assert_non_null(x);
    for (int64_t i = i0; i < i1; i++) x[i - i0] = (double)(i + 1);
    double d = 0, nrm = 0;
    assert_int_equal(mb_reduce_dot(MPI_COMM_WORLD, i1 - i0, x, x, &d), MB_SUCCESS);
    assert_same_bits(d, (double)(M * (M + 1) * (2 * M + 1) / 6), "sum of squares");
    assert_int_equal(mb_reduce_norm2(MPI_COMM_WORLD, i1 - i0, x, &nrm), MB_SUCCESS);
    assert_same_bits(nrm, sqrt((double)(M * (M + 1) * (2 * M + 1) / 6)), "norm");
    free(x);
  }
}

/* This rank's share of n values of a generator in the permuted order. */
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
  /* rank 0: the serial reference, natural order, one thread then three */
  double ref[3] = {0, 0, 0}, naive = 0;
  if (g_rank == 0) {
    double *x = malloc(sizeof *x * (size_t)n), *y = malloc(sizeof *y * (size_t)n);
    assert_true(x && y);
    for (int64_t g = 0; g < n; g++) td_mixed((uint64_t)g, x + g, y + g);
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    assert_int_equal(mb_reduce_dot(MPI_COMM_SELF, n, x, y, &ref[0]), MB_SUCCESS);
    assert_int_equal(mb_reduce_norm2(MPI_COMM_SELF, n, x, &ref[1]), MB_SUCCESS);
    assert_int_equal(mb_reduce_sum(MPI_COMM_SELF, n, y, &ref[2]), MB_SUCCESS);
    /* the correctly rounded values: Python's math.fsum of the same float64 terms */
    assert_same_bits(ref[0], 0x1.db63a8396e242p+994, "dot, correctly rounded");
    assert_same_bits(ref[1], 0x1.5fa1433b2cf4bp+506, "norm, correctly rounded");
    assert_same_bits(ref[2], 0x1.b6bd615568652p+507, "sum, correctly rounded");
    omp_set_num_threads(3);
    double again[3];
    assert_int_equal(mb_reduce_dot(MPI_COMM_SELF, n, x, y, &again[0]), MB_SUCCESS);
    assert_int_equal(mb_reduce_norm2(MPI_COMM_SELF, n, x, &again[1]), MB_SUCCESS);
    assert_int_equal(mb_reduce_sum(MPI_COMM_SELF, n, y, &again[2]), MB_SUCCESS);
    omp_set_num_threads(threads);
    assert_same_bits(again[0], ref[0], "dot, 3 threads");
    assert_same_bits(again[1], ref[1], "norm, 3 threads");
    assert_same_bits(again[2], ref[2], "sum, 3 threads");
    /* the GPU's register-window method, run on the CPU: the same bins */
    mb_reduce_acc direct, windowed;
    mb_reduce_acc_zero(&direct);
    mb_reduce_acc_zero(&windowed);
    mb_reduce_acc_add(&direct, n, x, y);
    mb_reduce_acc_add_windowed(&windowed, n, x, y);
    assert_memory_equal(&direct, &windowed, sizeof direct);
    assert_same_bits(mb_reduce_acc_value(&windowed), ref[0], "dot, register windows");
    for (int64_t g = 0; g < n; g++) naive += x[g] * y[g];
    printf("mixed 1e7: dot %a (%.17g), norm %a, sum %a; naive serial dot %.17g\n", ref[0], ref[0],
           ref[1], ref[2], naive);
    /* the data can tell a reproducible sum from a naive one */
    if (bits_of(naive) == bits_of(ref[0]))
      fail_msg("the naive serial sum equals the exact one: the data do not test anything");
    free(x);
    free(y);
  }
  MPI_Bcast(ref, 3, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  double *x, *y;
  int64_t m;
  make_share(n, 0, &x, &y, &m);
  double got[3], local_naive = 0, dist_naive = 0;
  assert_int_equal(mb_reduce_dot(MPI_COMM_WORLD, m, x, y, &got[0]), MB_SUCCESS);
  assert_int_equal(mb_reduce_norm2(MPI_COMM_WORLD, m, x, &got[1]), MB_SUCCESS);
  assert_int_equal(mb_reduce_sum(MPI_COMM_WORLD, m, y, &got[2]), MB_SUCCESS);
  assert_same_bits(got[0], ref[0], "dot, permuted and split");
  assert_same_bits(got[1], ref[1], "norm, permuted and split");
  assert_same_bits(got[2], ref[2], "sum, permuted and split");
  for (int64_t i = 0; i < m; i++) local_naive += x[i] * y[i];
  MPI_Allreduce(&local_naive, &dist_naive, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    printf("mixed 1e7 on %d ranks: dot %a; naive permuted split dot %.17g (%s the exact one)\n",
           g_size, got[0], dist_naive, bits_of(dist_naive) == bits_of(ref[0]) ? "equals" : "differs from");
  /* two accumulators in one collective: the same bits */
  mb_reduce_acc acc[2];
  mb_reduce_acc_zero(&acc[0]);
  mb_reduce_acc_zero(&acc[1]);
  mb_reduce_acc_add(&acc[0], m, x, y);
  mb_reduce_acc_add(&acc[1], m / 2, y, NULL); /* in two pieces */
  mb_reduce_acc_add(&acc[1], m - m / 2, y + m / 2, NULL);
  assert_int_equal(mb_reduce_acc_allreduce(MPI_COMM_WORLD, 2, acc), MB_SUCCESS);
  assert_same_bits(mb_reduce_acc_value(&acc[0]), ref[0], "dot through an accumulator");
  assert_same_bits(mb_reduce_acc_value(&acc[1]), ref[2], "sum through an accumulator");
  free(x);
  free(y);
}

/* Values of one magnitude range, as a solver's vectors (x in +-[1, 2) 2^-8
 * .. 2^8, y of either sign): the window hits; direct and windowed bins agree. */
static void test_narrow(void **state) {
  (void)state;
  const int64_t n = 1000003;
  double *x = malloc(sizeof *x * (size_t)n), *y = malloc(sizeof *y * (size_t)n);
  assert_true(x && y);
  for (int64_t i = 0; i < n; i++) {
    x[i] = td_value(7 * (uint64_t)i, -8, 8);
    y[i] = td_value(7 * (uint64_t)i + 1, -3, 3);
  }
  for (int mode = 0; mode < 3; mode++) {
    const double *yy = mode == 0 ? y : mode == 1 ? x : NULL;
    mb_reduce_acc direct, windowed;
    mb_reduce_acc_zero(&direct);
    mb_reduce_acc_zero(&windowed);
    mb_reduce_acc_add(&direct, n, x, yy);
    mb_reduce_acc_add_windowed(&windowed, n, x, yy);
    assert_memory_equal(&direct, &windowed, sizeof direct);
  }
  /* the split of the same values over the ranks gives the one-rank bits */
  double whole = 0, split = 0;
  assert_int_equal(mb_reduce_dot(MPI_COMM_SELF, n, x, y, &whole), MB_SUCCESS);
  int64_t i0, i1;
  td_split(n, g_rank, g_size, &i0, &i1);
  assert_int_equal(mb_reduce_dot(MPI_COMM_WORLD, i1 - i0, x + i0, y + i0, &split), MB_SUCCESS);
  assert_same_bits(split, whole, "narrow data, split");
  free(x);
  free(y);
}

static void test_cancel_1e7(void **state) {
  (void)state;
  const int64_t n = 10000000;
  double *x, *y;
  int64_t m;
  make_share(n, 1, &x, &y, &m);
  double d = 0, local_naive = 0, naive = 0;
  assert_int_equal(mb_reduce_dot(MPI_COMM_WORLD, m, x, y, &d), MB_SUCCESS);
  assert_same_bits(d, 3.0, "exactly cancelling pairs around a 3");
  for (int64_t i = 0; i < m; i++) local_naive += x[i] * y[i];
  MPI_Allreduce(&local_naive, &naive, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) printf("cancelling 1e7 on %d ranks: dot %.17g, naive %.17g\n", g_size, d, naive);
  if (naive == 3.0) fail_msg("the naive sum found the exact 3: the data do not test anything");
  free(x);
  free(y);
}

static void test_errors(void **state) {
  (void)state;
  double d = 0;
  assert_int_equal(mb_reduce_acc_allreduce(MPI_COMM_WORLD, 0, NULL), MB_ERR_ARG);
  /* every rank passes bad arguments, so none enters the collective */
  assert_int_equal(mb_reduce_dot(MPI_COMM_WORLD, -1, &d, &d, &d), MB_ERR_ARG);
  assert_int_equal(mb_reduce_dot(MPI_COMM_WORLD, 3, NULL, &d, &d), MB_ERR_ARG);
  mb_test_assert_message_contains("mb_reduce_dot");
  assert_int_equal(mb_reduce_sum(MPI_COMM_WORLD, 1, &d, NULL), MB_ERR_ARG);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_hand_cases),
                                     cmocka_unit_test(test_mixed_1e7),
                                     cmocka_unit_test(test_narrow),
                                     cmocka_unit_test(test_cancel_1e7),
                                     cmocka_unit_test(test_errors)};
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any ? 1 : 0;
}
