/* meshbatch: Jacobi-preconditioned conjugate gradient of several columns
 * together, one code for one rank and N ranks (mb_solver.h); on one rank
 * optionally preconditioned by an AMG V-cycle (mb_amg.h) instead.
 *
 * Hestenes & Stiefel, "Methods of conjugate gradients for solving linear
 * systems", J. Res. NBS 49(6), 1952; the preconditioned form as in Saad,
 * "Iterative methods for sparse linear systems", 2nd ed., algorithm 9.1.
 *
 * Why N ranks give one rank's bits: every vector update is per row (the
 * owned rows of a rank are rows of the whole matrix, with the same entries
 * in the same order, mb_csr.h), the ghost values of a product's input come
 * from their owners by a forward exchange before the product, and every
 * dot product is exact (partition/mb_reduce.h), so alpha and beta are the
 * same bits everywhere. Every decision (converged, restart, error) is taken
 * on reduced values, so every rank takes it in step.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mb_reduce.h"
#include "mb_solver.h"

/* At most this many columns solved together. */
#define PCG_MAXCOMP 16
/* Rows below which the vector loops run on one thread: an OpenMP team
 * costs more than the loop there, most of all on a loaded machine (each
 * of the ~10 loops of an iteration waits for every thread). Per-row
 * arithmetic, so the bits do not depend on it. */
#define PCG_OMP_MIN_ROWS 32768

static mb_error exchange(mb_halo *halo, int nc, double *x) {
  if (!halo) return MB_SUCCESS;
  MB_CALL(mb_halo_forward_begin(halo, MB_HALO_FLOAT64, nc, x));
  MB_CALL(mb_halo_forward_end(halo, x));
  return MB_SUCCESS;
}

/* acc[c] += sum_i x[i, c] * y[i, c] for the columns with use[c] (use NULL:
 * all), x and y [n, nc] row-major; each product rounded once, as
 * mb_reduce_acc_add forms it. tmp [n]. */
static void dots(int64_t n, int nc, const double *x, const double *y, const int *use,
                 double *tmp, mb_reduce_acc *acc) {
  for (int c = 0; c < nc; c++) {
    if (use && !use[c]) continue;
#pragma omp parallel for schedule(static) if (n >= PCG_OMP_MIN_ROWS)
    for (int64_t i = 0; i < n; i++) tmp[i] = x[i * nc + c] * y[i * nc + c];
    mb_reduce_acc_add(&acc[c], n, tmp, NULL);
  }
}

mb_error mb_residual(MPI_Comm comm, mb_halo *halo, const mb_csr *A, int nc, const double *B,
                     double *X, double *res) {
  MB_CHECK(A && res && nc >= 1 && nc <= PCG_MAXCOMP && (A->nrows == 0 || (B && X)), MB_ERR_ARG,
           "mb_residual: bad argument");
  const int64_t n = A->nrows;
  mb_error err = MB_SUCCESS;
  double *r = mb_alloc((n > 0 ? (size_t)n * nc : 1) * sizeof(double));
  double *tmp = mb_alloc((n ? (size_t)n : 1) * sizeof(double));
  mb_reduce_acc *acc = mb_zalloc(2 * (size_t)nc, sizeof(mb_reduce_acc));
  MB_CHECK_GOTO(err, done, r && tmp && acc, MB_ERR_MEMORY, "out of memory for a residual");
  MB_CALL_GOTO(err, done, exchange(halo, nc, X));
  mb_csr_spmv(A, nc, X, r);
#pragma omp parallel for schedule(static) if (n >= PCG_OMP_MIN_ROWS)
  for (int64_t q = 0; q < n * nc; q++) r[q] = B[q] - r[q];
  for (int c = 0; c < 2 * nc; c++) mb_reduce_acc_zero(&acc[c]);
  dots(n, nc, r, r, NULL, tmp, acc);
  dots(n, nc, B, B, NULL, tmp, acc + nc);
  MB_CALL_GOTO(err, done, mb_reduce_acc_allreduce(comm, 2 * nc, acc));
  for (int c = 0; c < nc; c++) {
    const double rn = sqrt(mb_reduce_acc_value(&acc[c]));
    const double bn = sqrt(mb_reduce_acc_value(&acc[nc + c]));
    res[c] = bn > 0 ? rn / bn : rn;
  }
done:
  free(r);
  free(tmp);
  free(acc);
  return err;
}

mb_error mb_pcg_solve(MPI_Comm comm, mb_halo *halo, const mb_csr *A, int nc, const double *B,
                      double *X, const mb_pcg_opts *opts, mb_solve_stats *stats) {
  MB_CHECK(A && opts && stats, MB_ERR_ARG, "mb_pcg_solve: NULL argument");
  MB_CHECK(nc >= 1 && nc <= PCG_MAXCOMP, MB_ERR_ARG,
           "mb_pcg_solve: %d columns (1 to %d are solved together)", nc, PCG_MAXCOMP);
  MB_CHECK(A->nrows == 0 || (B && X), MB_ERR_ARG, "mb_pcg_solve: NULL B or X");
  MB_CHECK(opts->rtol > 0 && isfinite(opts->rtol) && opts->max_iter >= 0, MB_ERR_ARG,
           "mb_pcg_solve: rtol %g must be positive and finite, max_iter %d not negative",
           opts->rtol, opts->max_iter);
  MB_CHECK(halo || A->ncols == A->nrows, MB_ERR_ARG,
           "mb_pcg_solve: a matrix with ghost columns needs a halo plan");
  const mb_amg *amg = opts->amg;
  MB_CHECK(!opts->cuda_amg, MB_ERR_ARG,
           "mb_pcg_solve: a device AMG hierarchy (opts->cuda_amg) was given to the CPU PCG");
  MB_CHECK(!amg || (!halo && A->ncols == A->nrows && nc <= MB_AMG_MAX_COMP &&
                    mb_amg_rows(amg) == A->nrows),
           MB_ERR_ARG,
           "mb_pcg_solve: the AMG preconditioner takes one rank's whole matrix (no halo, %d "
           "rows as its hierarchy's %d) and at most %d columns (%d given)",
           A->nrows, mb_amg_rows(amg), MB_AMG_MAX_COMP, nc);
  memset(stats, 0, sizeof(*stats));
  stats->method = amg ? MB_SOLVER_AMG : MB_SOLVER_PCG;
  stats->rtol = opts->rtol;
  const double t0 = MPI_Wtime();

  const int64_t n = A->nrows, m = A->ncols;
  const double rtol = opts->rtol;
  mb_error err = MB_SUCCESS;
  const size_t nn = (size_t)(n ? n : 1) * nc, mm = (size_t)(m ? m : 1) * nc;
  double *dinv = mb_alloc((size_t)(n ? n : 1) * sizeof(double));
  double *r = mb_alloc(nn * sizeof(double)), *z = mb_alloc(nn * sizeof(double));
  double *q = mb_alloc(nn * sizeof(double)), *p = mb_zalloc(mm, sizeof(double));
  double *tmp = mb_alloc((size_t)(n ? n : 1) * sizeof(double));
  mb_reduce_acc *acc = mb_zalloc(3 * (size_t)nc, sizeof(mb_reduce_acc));
  MB_CHECK_GOTO(err, done, dinv && r && z && q && p && tmp && acc, MB_ERR_MEMORY,
                "PCG: out of memory for %lld rows of %d columns", (long long)n, nc);

  /* Inputs: A finite with a positive diagonal (an SPD matrix has one),
   * B and the owned rows of X finite. Agreed over the ranks. */
  {
    int flag[3] = {0, 0, 0};
    int64_t where[3] = {-1, -1, -1};
    for (int32_t e = 0; e < A->nnz; e++)
      if (!isfinite(A->val[e])) {
        flag[0] = 1;
        break;
      }
    for (int64_t i = 0; i < n; i++) {
      const double d = A->val[A->diag[i]];
      if (!(d > 0) && isfinite(d)) {
        flag[1] = 1;
        where[1] = i;
        break;
      }
    }
    for (int64_t k = 0; k < n * nc; k++)
      if (!isfinite(B[k]) || !isfinite(X[k])) {
        flag[2] = 1;
        where[2] = k / nc;
        break;
      }
    int any[3];
    MB_CALL_MPI_GOTO(err, done, MPI_Allreduce(flag, any, 3, MPI_INT, MPI_MAX, comm));
    MB_CHECK_GOTO(err, done, !any[0], MB_ERR_NUMERIC, "PCG: the matrix has a non-finite value");
    MB_CHECK_GOTO(err, done, !any[1], MB_ERR_NUMERIC,
                  "PCG: the matrix is not positive definite: a diagonal entry <= 0 (local row "
                  "%lld of this rank; -1: another rank's)",
                  (long long)where[1]);
    MB_CHECK_GOTO(err, done, !any[2], MB_ERR_NUMERIC,
                  "PCG: a non-finite value in the right-hand side or the start (local row "
                  "%lld of this rank; -1: another rank's)",
                  (long long)where[2]);
  }
#pragma omp parallel for schedule(static) if (n >= PCG_OMP_MIN_ROWS)
  for (int64_t i = 0; i < n; i++) dinv[i] = 1.0 / A->val[A->diag[i]];

  double bnorm[PCG_MAXCOMP], tol[PCG_MAXCOMP], rz[PCG_MAXCOMP], res[PCG_MAXCOMP];
  double alpha[PCG_MAXCOMP], beta[PCG_MAXCOMP];
  int active[PCG_MAXCOMP], run[PCG_MAXCOMP], check[PCG_MAXCOMP], it[PCG_MAXCOMP];

  /* r = b - A x, z = D^-1 r; ||b||, ||r||, r.z in one allreduce. */
  MB_CALL_GOTO(err, done, exchange(halo, nc, X));
  mb_csr_spmv(A, nc, X, q);
#pragma omp parallel for schedule(static) if (n >= PCG_OMP_MIN_ROWS)
  for (int64_t k = 0; k < n * nc; k++) {
    r[k] = B[k] - q[k];
    if (!amg) z[k] = r[k] * dinv[k / nc];
  }
  if (amg) MB_CALL_GOTO(err, done, mb_amg_apply(amg, nc, r, z));
  for (int c = 0; c < 3 * nc; c++) mb_reduce_acc_zero(&acc[c]);
  dots(n, nc, B, B, NULL, tmp, acc);
  dots(n, nc, r, r, NULL, tmp, acc + nc);
  dots(n, nc, r, z, NULL, tmp, acc + 2 * nc);
  MB_CALL_GOTO(err, done, mb_reduce_acc_allreduce(comm, 3 * nc, acc));
  int zero_cols = 0;
  for (int c = 0; c < nc; c++) {
    bnorm[c] = sqrt(mb_reduce_acc_value(&acc[c]));
    tol[c] = rtol * bnorm[c];
    const double rn = sqrt(mb_reduce_acc_value(&acc[nc + c]));
    rz[c] = mb_reduce_acc_value(&acc[2 * nc + c]);
    it[c] = 0;
    res[c] = 0;
    active[c] = 0;
    if (bnorm[c] == 0) {
      zero_cols = 1; /* the solution is 0 */
    } else if (rn <= tol[c]) {
      res[c] = rn / bnorm[c];
    } else {
      active[c] = 1;
    }
  }
  if (zero_cols) {
    for (int c = 0; c < nc; c++)
      if (bnorm[c] == 0)
        for (int64_t i = 0; i < n; i++) X[i * nc + c] = 0.0;
  }
  memcpy(p, z, (size_t)n * nc * sizeof(double));

  for (;;) {
    int any = 0;
    for (int c = 0; c < nc; c++) {
      run[c] = active[c] && it[c] < opts->max_iter;
      check[c] = 0;
      any |= run[c];
    }
    if (!any) break;
    /* q = A p, alpha = r.z / p.q */
    MB_CALL_GOTO(err, done, exchange(halo, nc, p));
    mb_csr_spmv(A, nc, p, q);
    for (int c = 0; c < nc; c++) mb_reduce_acc_zero(&acc[c]);
    dots(n, nc, p, q, run, tmp, acc);
    MB_CALL_GOTO(err, done, mb_reduce_acc_allreduce(comm, nc, acc));
    for (int c = 0; c < nc; c++) {
      if (!run[c]) continue;
      const double pq = mb_reduce_acc_value(&acc[c]);
      MB_CHECK_GOTO(err, done, isfinite(pq), MB_ERR_NUMERIC,
                    "PCG: a non-finite value at iteration %d of column %d (p'Ap = %g)",
                    it[c] + 1, c, pq);
      MB_CHECK_GOTO(err, done, pq > 0, MB_ERR_NUMERIC,
                    "PCG: the matrix is not positive definite: p'Ap = %g at iteration %d of "
                    "column %d",
                    pq, it[c] + 1, c);
      alpha[c] = rz[c] / pq;
    }
    /* x += alpha p, r -= alpha q, z = D^-1 r (or the V-cycle's B^-1 r) */
#pragma omp parallel for schedule(static) if (n >= PCG_OMP_MIN_ROWS)
    for (int64_t i = 0; i < n; i++)
      for (int c = 0; c < nc; c++) {
        if (!run[c]) continue;
        const int64_t k = i * nc + c;
        X[k] += alpha[c] * p[k];
        r[k] -= alpha[c] * q[k];
        if (!amg) z[k] = r[k] * dinv[i];
      }
    /* every column (those stopped are not read again) */
    if (amg) MB_CALL_GOTO(err, done, mb_amg_apply(amg, nc, r, z));
    for (int c = 0; c < 2 * nc; c++) mb_reduce_acc_zero(&acc[c]);
    dots(n, nc, r, r, run, tmp, acc);
    dots(n, nc, r, z, run, tmp, acc + nc);
    MB_CALL_GOTO(err, done, mb_reduce_acc_allreduce(comm, 2 * nc, acc));
    int any_check = 0;
    for (int c = 0; c < nc; c++) {
      if (!run[c]) continue;
      it[c]++;
      const double rr = mb_reduce_acc_value(&acc[c]), rzn = mb_reduce_acc_value(&acc[nc + c]);
      MB_CHECK_GOTO(err, done, isfinite(rr) && isfinite(rzn), MB_ERR_NUMERIC,
                    "PCG: a non-finite residual at iteration %d of column %d", it[c], c);
      if (sqrt(rr) <= tol[c]) {
        check[c] = 1;
        any_check = 1;
      } else {
        beta[c] = rzn / rz[c];
        rz[c] = rzn;
      }
    }
    /* p = z + beta p */
#pragma omp parallel for schedule(static) if (n >= PCG_OMP_MIN_ROWS)
    for (int64_t i = 0; i < n; i++)
      for (int c = 0; c < nc; c++) {
        if (!run[c] || check[c]) continue;
        const int64_t k = i * nc + c;
        p[k] = z[k] + beta[c] * p[k];
      }
    if (!any_check) continue;
    /* The recurrence says converged: recompute b - A x for those columns;
     * stop them if it agrees, else restart CG from the true residual. */
    MB_CALL_GOTO(err, done, exchange(halo, nc, X));
    mb_csr_spmv(A, nc, X, q);
#pragma omp parallel for schedule(static) if (n >= PCG_OMP_MIN_ROWS)
    for (int64_t i = 0; i < n; i++)
      for (int c = 0; c < nc; c++) {
        if (!check[c]) continue;
        const int64_t k = i * nc + c;
        r[k] = B[k] - q[k];
        if (!amg) z[k] = r[k] * dinv[i];
      }
    /* AMG: every column; a running column's z is recomputed from its r
     * before it is read again */
    if (amg) MB_CALL_GOTO(err, done, mb_amg_apply(amg, nc, r, z));
    for (int c = 0; c < 2 * nc; c++) mb_reduce_acc_zero(&acc[c]);
    dots(n, nc, r, r, check, tmp, acc);
    dots(n, nc, r, z, check, tmp, acc + nc);
    MB_CALL_GOTO(err, done, mb_reduce_acc_allreduce(comm, 2 * nc, acc));
    int restart[PCG_MAXCOMP] = {0};
    for (int c = 0; c < nc; c++) {
      if (!check[c]) continue;
      const double rn = sqrt(mb_reduce_acc_value(&acc[c]));
      if (rn <= tol[c]) {
        active[c] = 0;
        res[c] = rn / bnorm[c];
      } else {
        restart[c] = 1;
        rz[c] = mb_reduce_acc_value(&acc[nc + c]);
      }
    }
#pragma omp parallel for schedule(static) if (n >= PCG_OMP_MIN_ROWS)
    for (int64_t i = 0; i < n; i++)
      for (int c = 0; c < nc; c++)
        if (restart[c]) p[i * nc + c] = z[i * nc + c];
  }

  for (int c = 0; c < nc; c++) {
    if (it[c] > stats->iterations) stats->iterations = it[c];
  }
  int failed = -1;
  for (int c = 0; c < nc; c++)
    if (active[c]) {
      failed = c;
      break;
    }
  if (failed >= 0) {
    /* the residuals reached, for the message and the stats */
    double fres[PCG_MAXCOMP];
    MB_CALL_GOTO(err, done, mb_residual(comm, halo, A, nc, B, X, fres));
    double worst = 0;
    for (int c = 0; c < nc; c++) worst = fres[c] > worst ? fres[c] : worst;
    stats->residual = worst;
    stats->solve_ms = 1e3 * (MPI_Wtime() - t0);
    MB_CHECK_GOTO(err, done, 0, MB_ERR_NUMERIC,
            "PCG did not converge: column %d reached a relative residual of %.3e, above the "
            "tolerance %.3e, in the iteration limit of %d",
            failed, fres[failed], rtol, opts->max_iter);
  }
  /* ghosts of X hold their owners' solution */
  MB_CALL_GOTO(err, done, exchange(halo, nc, X));
  for (int c = 0; c < nc; c++) stats->residual = res[c] > stats->residual ? res[c] : stats->residual;
  stats->solve_ms = 1e3 * (MPI_Wtime() - t0);
done:
  free(dinv);
  free(r);
  free(z);
  free(q);
  free(p);
  free(tmp);
  free(acc);
  return err;
}
