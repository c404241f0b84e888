/* The quaternion Cholesky factor of willmore_flow's CPU inverse iteration
 * (src/ops/willmore/mb_willmore_qchol.h), on the Dirac operator D - rho of
 * a real mesh (data/meshes/spot.obj, 2,930 vertices) with a random rho:
 *  - the solve of (D - rho + sigma I) x = b, b random, checked through the
 *    real 4n x 4n matrix (mb_csr_spmv: an independent reading of the 4x4
 *    blocks): ||b - (D - rho + sigma I) x|| <= 1e-12 ||b|| for sigma 1e-3
 *    of the largest diagonal, and the backward error
 *    ||r|| / (max_i D_ii ||x||) <= 1e-14 for sigma 1e-12 of it (the
 *    inverse iteration's shift, near a singular matrix);
 *  - the factor and the solve are the same bits when repeated, and with
 *    x aliasing b;
 *  - errors: a negative shift that makes the matrix indefinite, a NaN
 *    entry (MB_ERR_NUMERIC, "not positive definite"), a solve without a
 *    factor, a matrix not of 4x4 blocks (MB_ERR_ARG). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_adjacency.h"
#include "mb_csr.h"
#include "mb_meshfile.h"
#include "mb_testutil.h"
#include "mb_willmore.h"
#include "mb_willmore_qchol.h"

static uint64_t rng = 88172645463325252ull;
static double urand(void) { /* xorshift64, in [-1, 1) */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static double norm2(int64_t n, const double *v) {
  double s = 0.0;
  for (int64_t i = 0; i < n; i++) s += v[i] * v[i];
  return sqrt(s);
}

/* ||b - (D + sigma I) x||_2 */
static double residual(const mb_csr *D, double sigma, const double *x, const double *b,
                       double *r) {
  mb_csr_spmv(D, 1, x, r);
  for (int32_t i = 0; i < D->nrows; i++) r[i] = b[i] - r[i] - sigma * x[i];
  return norm2(D->nrows, r);
}

static void test_qchol_spot(void **state) {
  (void)state;
  mb_mesh *m = NULL;
  mb_adjacency *adj = NULL;
  mb_test_read_repo_mesh("spot.obj", &m, &adj);
  const int64_t n = m->nv, nm = 4 * n;
  double *rho = malloc(sizeof(double) * (size_t)n);
  double *b = malloc(sizeof(double) * (size_t)nm), *x = malloc(sizeof(double) * (size_t)nm);
  double *x2 = malloc(sizeof(double) * (size_t)nm), *r = malloc(sizeof(double) * (size_t)nm);
  assert_true(rho && b && x && x2 && r);
  for (int64_t i = 0; i < n; i++) rho[i] = 0.5 * urand();
  for (int64_t i = 0; i < nm; i++) b[i] = urand();
  mb_willmore_dirac *d = NULL;
  assert_int_equal(mb_willmore_dirac_create(adj, m->nf, m->face_indices, &d), MB_SUCCESS);
  assert_int_equal(mb_willmore_dirac_assemble(d, m->xyz, rho), MB_SUCCESS);
  const mb_csr *D = mb_willmore_dirac_matrix(d);
  double dmax = 0.0;
  for (int32_t i = 0; i < D->nrows; i++) dmax = fmax(dmax, D->val[D->diag[i]]);
  mb_willmore_qchol *q = NULL;
  assert_int_equal(mb_willmore_qchol_create(D, &q), MB_SUCCESS);
  assert_int_equal(mb_willmore_qchol_solve(q, b, x), MB_ERR_ARG); /* no factor yet */
  mb_test_assert_message_contains("no factor");
  printf("qchol: spot, %lld vertices, %lld quaternions below L's diagonal\n", (long long)n,
         (long long)mb_willmore_qchol_nnz(q));
  assert_true(mb_willmore_qchol_nnz(q) >= (D->nnz / 16 - n) / 2); /* at least A's lower part */

  /* a well-conditioned shift */
  double sigma = 1e-3 * dmax;
  assert_int_equal(mb_willmore_qchol_factor(q, D, sigma), MB_SUCCESS);
  assert_int_equal(mb_willmore_qchol_solve(q, b, x), MB_SUCCESS);
  double res = residual(D, sigma, x, b, r);
  printf("qchol: sigma %.3g: ||b - A x|| / ||b|| = %.3g\n", sigma, res / norm2(nm, b));
  assert_true(res <= 1e-12 * norm2(nm, b));
  /* the same bits again, and in place */
  assert_int_equal(mb_willmore_qchol_factor(q, D, sigma), MB_SUCCESS);
  memcpy(x2, b, sizeof(double) * (size_t)nm);
  assert_int_equal(mb_willmore_qchol_solve(q, x2, x2), MB_SUCCESS);
  assert_memory_equal(x, x2, sizeof(double) * (size_t)nm);

  /* the inverse iteration's shift: nearly singular, backward error small */
  sigma = 1e-12 * dmax;
  assert_int_equal(mb_willmore_qchol_factor(q, D, sigma), MB_SUCCESS);
  assert_int_equal(mb_willmore_qchol_solve(q, b, x), MB_SUCCESS);
  res = residual(D, sigma, x, b, r);
  const double berr = res / (dmax * norm2(nm, x));
  printf("qchol: sigma %.3g: ||x|| %.3g, backward error ||r|| / (max D_ii ||x||) = %.3g\n",
         sigma, norm2(nm, x), berr);
  assert_true(berr <= 1e-14);

  /* indefinite */
  assert_int_equal(mb_willmore_qchol_factor(q, D, -0.5 * dmax), MB_ERR_NUMERIC);
  mb_test_assert_message_contains("not positive definite");
  assert_int_equal(mb_willmore_qchol_solve(q, b, x), MB_ERR_ARG); /* the failed factor is gone */
  /* a NaN entry */
  rho[17] = NAN;
  assert_int_equal(mb_willmore_dirac_assemble(d, m->xyz, rho), MB_SUCCESS);
  assert_int_equal(mb_willmore_qchol_factor(q, D, 1e-3 * dmax), MB_ERR_NUMERIC);
  mb_test_assert_message_contains("not positive definite");
  /* not of 4x4 blocks */
  mb_willmore_qchol *bad = NULL;
  mb_csr odd = {0};
  odd.nrows = odd.ncols = 6;
  assert_int_equal(mb_willmore_qchol_create(&odd, &bad), MB_ERR_ARG);
  mb_test_assert_message_contains("4x4 blocks");
  assert_null(bad);

  mb_willmore_qchol_free(q);
  mb_willmore_dirac_free(d);
  free(rho);
  free(b);
  free(x);
  free(x2);
  free(r);
  mb_adjacency_free(adj);
  mb_mesh_free(m);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_qchol_spot),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  MPI_Finalize();
  return rc;
}
