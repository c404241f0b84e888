/* meshbatch: the deform room's inexact inner solve (key `cg_iterations`,
 * mb_deform.h): at most k Jacobi-preconditioned CG iterations of the three
 * coordinates together, warm-started from the last iterate. The method is
 * the CUDA backend's device CG (cuda/deform/mb_deform.cu) step for step, so
 * both backends run the same iterates up to the rounding of their dot
 * products (here: serial sums in row order; there: fixed-order two-pass
 * sums). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mb_deform_private.h"

mb_error mb_deform_cg(const char *name, const mb_csr *H, const double *B, double *X, int k,
                      long long *iters) {
  MB_CHECK(H && k >= 1 && iters && (H->nrows == 0 || (B && X)), MB_ERR_ARG,
           "mb_deform_cg: bad arguments");
  const int32_t n = H->nrows;
  if (n == 0) return MB_SUCCESS;
  const size_t n3 = 3 * (size_t)n;
  double *r = malloc(sizeof(double) * n3), *z = malloc(sizeof(double) * n3);
  double *p = malloc(sizeof(double) * n3), *q = malloc(sizeof(double) * n3);
  double *dinv = malloc(sizeof(double) * (size_t)n);
  mb_error err = MB_SUCCESS;
  MB_CHECK_GOTO(err, done, r && z && p && q && dinv, MB_ERR_MEMORY,
                "%s: out of memory for the CG of %d rows", name, n);
  for (int32_t i = 0; i < n; i++) {
    const double a = H->val[H->diag[i]];
    MB_CHECK_GOTO(err, done, a > 0 && isfinite(a), MB_ERR_NUMERIC,
                  "%s: the CG broke down (a diagonal entry %g <= 0 or non-finite at row %d: the "
                  "system matrix is not positive definite)",
                  name, a, i);
    dinv[i] = 1.0 / a;
  }
  /* r = b - A x, z = dinv r, p = z; r.z, r.r, b.b per column */
  double rz[3] = {0, 0, 0}, rr[3] = {0, 0, 0}, bb[3] = {0, 0, 0}, alpha[3] = {0, 0, 0},
         beta[3] = {0, 0, 0};
  int done_c[3];
  for (int32_t i = 0; i < n; i++) {
    double ax[3] = {0, 0, 0};
    for (int32_t e = H->rowptr[i]; e < H->rowptr[i + 1]; e++)
      for (int c = 0; c < 3; c++) ax[c] += H->val[e] * X[3 * (size_t)H->col[e] + c];
    for (int c = 0; c < 3; c++) {
      const size_t m = 3 * (size_t)i + c;
      r[m] = B[m] - ax[c];
      z[m] = dinv[i] * r[m];
      p[m] = z[m];
      rz[c] += r[m] * z[m];
      rr[c] += r[m] * r[m];
      bb[c] += B[m] * B[m];
    }
  }
  int all = 1;
  for (int c = 0; c < 3; c++) {
    MB_CHECK_GOTO(err, done, isfinite(rr[c]) && isfinite(bb[c]), MB_ERR_NUMERIC,
                  "%s: the CG met a non-finite value (right-hand side or start)", name);
    done_c[c] = bb[c] == 0 || sqrt(rr[c]) <= MB_DEFORM_PCG_RTOL * sqrt(bb[c]);
    all &= done_c[c];
  }
  int it = 0;
  while (!all && it < k) {
    double pq[3] = {0, 0, 0};
#pragma omp parallel for schedule(static) if (n >= 4096)
    for (int32_t i = 0; i < n; i++) { /* q = A p (rows in parallel: each row's own sum) */
      double aq[3] = {0, 0, 0};
      for (int32_t e = H->rowptr[i]; e < H->rowptr[i + 1]; e++)
        for (int c = 0; c < 3; c++)
          if (!done_c[c]) aq[c] += H->val[e] * p[3 * (size_t)H->col[e] + c];
      for (int c = 0; c < 3; c++)
        if (!done_c[c]) q[3 * (size_t)i + c] = aq[c];
    }
    for (int32_t i = 0; i < n; i++) /* p.q in row order: the same bits for any thread count */
      for (int c = 0; c < 3; c++)
        if (!done_c[c]) pq[c] += p[3 * (size_t)i + c] * q[3 * (size_t)i + c];
    for (int c = 0; c < 3; c++)
      if (!done_c[c]) {
        MB_CHECK_GOTO(err, done, pq[c] > 0 && isfinite(pq[c]), MB_ERR_NUMERIC,
                      "%s: the CG broke down (curvature p'Ap = %g at iteration %d: the system "
                      "matrix is not positive definite, or a non-finite value)",
                      name, pq[c], it + 1);
        alpha[c] = rz[c] / pq[c];
      }
    double rzn[3] = {0, 0, 0}, rrn[3] = {0, 0, 0};
    for (int32_t i = 0; i < n; i++) /* x += alpha p, r -= alpha q, z = dinv r */
      for (int c = 0; c < 3; c++)
        if (!done_c[c]) {
          const size_t m = 3 * (size_t)i + c;
          X[m] = X[m] + alpha[c] * p[m];
          r[m] = r[m] - alpha[c] * q[m];
          z[m] = dinv[i] * r[m];
          rzn[c] += r[m] * z[m];
          rrn[c] += r[m] * r[m];
        }
    it++;
    all = 1;
    for (int c = 0; c < 3; c++) {
      if (!done_c[c]) {
        MB_CHECK_GOTO(err, done, isfinite(rrn[c]) && isfinite(rzn[c]), MB_ERR_NUMERIC,
                      "%s: the CG met a non-finite residual at iteration %d", name, it);
        rr[c] = rrn[c];
        if (sqrt(rrn[c]) <= MB_DEFORM_PCG_RTOL * sqrt(bb[c])) done_c[c] = 1;
        else {
          beta[c] = rzn[c] / rz[c];
          rz[c] = rzn[c];
        }
      }
      all &= done_c[c];
    }
    if (all || it == k) break;
    for (int32_t i = 0; i < n; i++) /* p = z + beta p */
      for (int c = 0; c < 3; c++)
        if (!done_c[c]) {
          const size_t m = 3 * (size_t)i + c;
          p[m] = z[m] + beta[c] * p[m];
        }
  }
  for (int c = 0; c < 3; c++) /* b = 0: x = 0 (mb_pcg_solve's rule) */
    if (bb[c] == 0)
      for (int32_t i = 0; i < n; i++) X[3 * (size_t)i + c] = 0;
  *iters += it;
done:
  free(r);
  free(z);
  free(p);
  free(q);
  free(dinv);
  return err;
}
