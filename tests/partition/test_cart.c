/* Cartesian blocks of a 3D grid (partition/mb_cart.h) on any rank count:
 * the blocks tile the grid exactly (sizes differ by at most one plane),
 * and after an exchange every ghost point of the six faces holds the value
 * of the grid point it stands for (wrapped across a periodic grid), or the
 * Dirichlet value outside a non-periodic one; float64 and float32; shapes
 * that the rank counts do not divide; a grid too thin for the ranks is
 * refused on every rank with the reason. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "mb_cart.h"
#include "mb_testutil.h"

static int g_rank, g_size;

/* A value that names the grid point (exact in float32 for these sizes). */
static double value_of(const int64_t n[3], int64_t k, int64_t j, int64_t i) {
  return (double)((k * n[1] + j) * n[2] + i) + 0.5;
}

static int64_t wrap(int64_t v, int64_t n) { return ((v % n) + n) % n; }

static void check_halo(const int64_t n[3], int periodic, mb_cart_dtype dtype) {
  mb_cart *c = NULL;
  assert_int_equal(mb_cart_create(MPI_COMM_WORLD, n, periodic, 4, &c), MB_SUCCESS);
  /* the blocks tile the grid */
  int64_t points = c->nloc[0] * c->nloc[1] * c->nloc[2], total = 0;
  MPI_Allreduce(&points, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  assert_int_equal(total, n[0] * n[1] * n[2]);
  for (int a = 0; a < 3; a++) {
    assert_true(c->nloc[a] >= n[a] / c->dims[a] && c->nloc[a] <= n[a] / c->dims[a] + 1);
    assert_int_equal(c->lo[a], n[a] * c->coords[a] / c->dims[a]);
  }
  const int64_t g = 4, L[3] = {c->nloc[0] + 8, c->nloc[1] + 8, c->nloc[2] + 8};
  const int64_t size = mb_cart_local_size(c);
  assert_int_equal(size, L[0] * L[1] * L[2]);
  double *u64 = malloc(sizeof *u64 * (size_t)size);
  float *u32 = malloc(sizeof *u32 * (size_t)size);
  assert_true(u64 && u32);
  for (int64_t p = 0; p < size; p++) u64[p] = u32[p] = -1;
  for (int64_t k = 0; k < c->nloc[0]; k++)
    for (int64_t j = 0; j < c->nloc[1]; j++)
      for (int64_t i = 0; i < c->nloc[2]; i++) {
        int64_t p = ((k + g) * L[1] + j + g) * L[2] + i + g;
        u64[p] = u32[p] = (float)value_of(n, c->lo[0] + k, c->lo[1] + j, c->lo[2] + i);
      }
  void *u = dtype == MB_CART_FLOAT32 ? (void *)u32 : (void *)u64;
  assert_int_equal(mb_cart_exchange_begin(c, dtype, u), MB_SUCCESS);
  assert_int_equal(mb_cart_exchange_end(c), MB_SUCCESS);
  if (!periodic) mb_cart_fill_outside(c, dtype, u, -7.0);
  /* every face ghost: 4 planes beyond the block along one axis, inside the
   * block's extent along the other two */
  int64_t checked = 0;
  for (int a = 0; a < 3; a++)
    for (int s = 0; s < 2; s++)
      for (int64_t d = 1; d <= g; d++)
        for (int64_t q = 0; q < c->nloc[(a + 1) % 3]; q++)
          for (int64_t r = 0; r < c->nloc[(a + 2) % 3]; r++) {
            int64_t loc[3], glob[3];
            loc[a] = s == 0 ? -d : c->nloc[a] - 1 + d;
            loc[(a + 1) % 3] = q;
            loc[(a + 2) % 3] = r;
            int outside = 0;
            for (int b = 0; b < 3; b++) {
              glob[b] = c->lo[b] + loc[b];
              if (glob[b] < 0 || glob[b] >= n[b]) {
                if (periodic) glob[b] = wrap(glob[b], n[b]);
                else outside = 1;
              }
            }
            double want = outside ? -7.0 : (double)(float)value_of(n, glob[0], glob[1], glob[2]);
            int64_t p = ((loc[0] + g) * L[1] + loc[1] + g) * L[2] + loc[2] + g;
            double got = dtype == MB_CART_FLOAT32 ? (double)u32[p] : u64[p];
            if (got != want)
              fail_msg("rank %d, axis %d side %d depth %lld: ghost (%lld, %lld, %lld) holds %.1f, "
                       "expected %.1f", g_rank, a, s, (long long)d, (long long)loc[0],
                       (long long)loc[1], (long long)loc[2], got, want);
            checked++;
          }
  assert_true(checked > 0);
  free(u64);
  free(u32);
  mb_cart_free(c);
}

static void test_halos(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{13, 17, 19}, {16, 16, 16}, {9, 40, 8}};
  for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
    for (int periodic = 0; periodic < 2; periodic++) {
      check_halo(shapes[k], periodic, MB_CART_FLOAT64);
      check_halo(shapes[k], periodic, MB_CART_FLOAT32);
    }
}

/* Along the axis a thin grid is cut, blocks would be thinner than the
 * halo: refused on every rank, naming the axis. */
static void test_too_thin(void **state) {
  (void)state;
  const int64_t n[3] = {7, 7, 7};
  mb_cart *c = (mb_cart *)0x1;
  mb_error e = mb_cart_create(MPI_COMM_WORLD, n, 1, 4, &c);
  if (g_size == 1) { /* one block of 7 >= 4: fine */
    assert_int_equal(e, MB_SUCCESS);
    mb_cart_free(c);
    return;
  }
  assert_int_equal(e, MB_ERR_ARG);
  assert_null(c);
  mb_test_assert_message_contains("thinner than the halo of 4");
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_halos),
                                     cmocka_unit_test(test_too_thin)};
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any ? 1 : 0;
}
