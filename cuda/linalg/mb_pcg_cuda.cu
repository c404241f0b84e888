/* meshbatch: Jacobi-preconditioned conjugate gradient on the GPU, the
 * columns together (linalg layer; contract: cuda/linalg/mb_linalg_cuda.h).
 *
 * Hestenes & Stiefel, "Methods of conjugate gradients for solving linear
 * systems", J. Res. NBS 49(6), 1952; the preconditioned form as in Saad,
 * "Iterative Methods for Sparse Linear Systems", 2nd ed., algorithm 9.1.
 * Vectors are row-major [rows, ncomp] like B and X. Every dot product is
 * exact: a kernel writes the rounded products of each column contiguously
 * (the terms mb_reduce would form), mb_reduce_device_acc adds them into one
 * accumulator per column, and one mb_reduce_acc_allreduce combines the
 * 2 ncomp accumulators of an iteration over the ranks. alpha and beta are
 * computed on the host from the rounded dots, the same on every rank, and
 * passed to the vector kernels, which do per row what linalg/mb_pcg.c does
 * (unfused), step for step: with the row kernel the iterates are the CPU's
 * bits, on 1 and N ranks. Every decision is taken on reduced values, so
 * every rank takes it in step.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include <chrono>

#include "mb_cuda_halo.h"
#include "mb_linalg_cuda_private.cuh"
#include "mb_reduce.h"

namespace {

struct colp {
  double a[MB_LA_MAXCOMP];
  int on[MB_LA_MAXCOMP];
};

/* Input checks, first rows into flag: [0] a non-finite matrix value
 * (entries), [1] a diagonal <= 0 (finite), [2] a non-finite B or X (owned
 * rows); and dinv[i] = 1 / a_ii. */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_check(int32_t n, int nc, int32_t nnz, const int32_t *__restrict__ diag,
            const double *__restrict__ val, const double *__restrict__ B,
            const double *__restrict__ X, double *__restrict__ dinv, int32_t *__restrict__ flag) {
  const int64_t i = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (i < nnz && !isfinite(val[i])) atomicMin(flag, (int32_t)i);
  if (i >= n) return;
  const double d = val[diag[i]];
  if (!(d > 0.0) && isfinite(d)) atomicMin(flag + 1, (int32_t)i);
  dinv[i] = 1.0 / d;
  for (int c = 0; c < nc; c++)
    if (!isfinite(B[i * nc + c]) || !isfinite(X[i * nc + c])) {
      atomicMin(flag + 2, (int32_t)i);
      break;
    }
}

/* t[c n + i] = a[i nc + c] * b[i nc + c] (rounded products, per column contiguous). */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_terms(int32_t n, int nc, const double *__restrict__ a, const double *__restrict__ b,
            double *__restrict__ t) {
  const int64_t i = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (i >= n) return;
  for (int c = 0; c < nc; c++) {
    const double p = a[i * nc + c] * b[i * nc + c];
    t[(int64_t)c * n + i] = p;
  }
}

/* Columns on: r = b - q, z = r dinv;
 * terms: t[c n + i] = r r, t[(nc + c) n + i] = r z (0 for the others). */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_resid(int32_t n, int nc, colp on, const double *__restrict__ b,
            const double *__restrict__ q, const double *__restrict__ dinv,
            double *__restrict__ r, double *__restrict__ z, double *__restrict__ t) {
  const int64_t i = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (i >= n) return;
  const double di = dinv[i];
  for (int c = 0; c < nc; c++) {
    const int64_t k = i * nc + c;
    double rr = 0.0, rz = 0.0;
    if (on.on[c]) {
      const double rk = b[k] - q[k];
      const double zk = rk * di;
      r[k] = rk;
      z[k] = zk;
      rr = rk * rk;
      rz = rk * zk;
    }
    t[(int64_t)c * n + i] = rr;
    t[(int64_t)(nc + c) * n + i] = rz;
  }
}

/* Columns on: x += alpha p, r -= alpha q, z = r dinv; terms r r and r z
 * (0 for the others). */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_update(int32_t n, int nc, colp al, const double *__restrict__ p,
             const double *__restrict__ q, const double *__restrict__ dinv,
             double *__restrict__ x, double *__restrict__ r, double *__restrict__ z,
             double *__restrict__ t) {
  const int64_t i = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (i >= n) return;
  const double di = dinv[i];
  for (int c = 0; c < nc; c++) {
    const int64_t k = i * nc + c;
    double rr = 0.0, rz = 0.0;
    if (al.on[c]) {
      const double a = al.a[c];
      const double ap = a * p[k], aq = a * q[k];
      x[k] = x[k] + ap;
      const double rk = r[k] - aq;
      const double zk = rk * di;
      r[k] = rk;
      z[k] = zk;
      rr = rk * rk;
      rz = rk * zk;
    }
    t[(int64_t)c * n + i] = rr;
    t[(int64_t)(nc + c) * n + i] = rz;
  }
}

/* Columns on: p = z + beta p (beta 0 and on: p = z, exactly). */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_direction(int32_t n, int nc, colp be, int copy, const double *__restrict__ z,
                double *__restrict__ p) {
  const int64_t i = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (i >= n) return;
  for (int c = 0; c < nc; c++)
    if (be.on[c]) {
      const int64_t k = i * nc + c;
      if (copy) {
        p[k] = z[k];
      } else {
        const double bp = be.a[c] * p[k];
        p[k] = z[k] + bp;
      }
    }
}

/* x = 0 in the columns on (b = 0), owned rows. */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_zero_cols(int32_t n, int nc, colp on, double *__restrict__ x) {
  const int64_t i = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (i >= n) return;
  for (int c = 0; c < nc; c++)
    if (on.on[c]) x[i * nc + c] = 0.0;
}

/* The solve's state: the matrix, its halo, the scratch. */
struct pcg {
  MPI_Comm comm;
  mb_cuda_csr *A;
  mb_cuda_halo *halo; /* NULL on one rank */
  int nc;
  int32_t n;
  double *r, *z, *p, *q, *dinv, *t;
  mb_reduce_acc acc[3 * MB_LA_MAXCOMP];

  unsigned grid() const { return mb_la_grid(n); }
  /* forward exchange of the ghosts of v [ncols, nc] (halo only) */
  mb_error exchange(double *v) {
    if (!halo) return MB_SUCCESS;
    MB_CALL(mb_cuda_halo_begin(halo, MB_HALO_FORWARD, v, A->transport, A->nccl));
    MB_CALL(mb_cuda_halo_end(halo, v));
    return MB_SUCCESS;
  }
  /* q = A v after v's ghosts are refreshed */
  mb_error product(double *v) {
    MB_CALL(exchange(v));
    MB_CALL(mb_la_spmv(A, halo != nullptr, nc, v, q));
    return MB_SUCCESS;
  }
  /* out[j] = exact sum over the ranks of the terms column j of t (j < m),
   * for the columns with use[j % nc] (use NULL: all; the others 0); one
   * allreduce */
  mb_error sums(int m, const int *use, double *out) {
    for (int j = 0; j < m; j++) {
      mb_reduce_acc_zero(&acc[j]);
      if (use && !use[j % nc]) continue;
      MB_CALL(mb_reduce_device_acc(A->rd, NULL, n, t + (int64_t)j * n, NULL, &acc[j]));
    }
    MB_CALL(mb_reduce_acc_allreduce(comm, m, acc));
    for (int j = 0; j < m; j++) out[j] = mb_reduce_acc_value(&acc[j]);
    return MB_SUCCESS;
  }
  /* res[c] = ||b - A x|| / ||b|| (||b - A x|| where b = 0) of every column;
   * r and z are overwritten. */
  mb_error residuals(const double *B, double *X, double *res) {
    colp all{};
    for (int c = 0; c < nc; c++) all.on[c] = 1;
    MB_CALL(product(X));
    double v[3 * MB_LA_MAXCOMP];
    if (n) {
      k_resid<<<grid(), MB_LA_BLOCK>>>(n, nc, all, B, q, dinv, r, z, t);
      MB_CHECK_LAUNCH("PCG residual");
      k_terms<<<grid(), MB_LA_BLOCK>>>(n, nc, B, B, t + (int64_t)nc * n);
      MB_CHECK_LAUNCH("PCG norms");
    }
    MB_CALL(sums(2 * nc, NULL, v));
    for (int c = 0; c < nc; c++) {
      const double rn = sqrt(v[c]), bn = sqrt(v[nc + c]);
      res[c] = bn > 0 ? rn / bn : rn;
    }
    return MB_SUCCESS;
  }
};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

extern "C" mb_error mb_cuda_pcg_solve(MPI_Comm comm, mb_halo *halo, mb_cuda_csr *dA, int ncomp,
                                      const double *B, double *X, const mb_pcg_opts *opts,
                                      mb_solve_stats *stats) {
  const auto t0 = std::chrono::steady_clock::now();
  MB_CHECK(dA && opts && stats, MB_ERR_ARG, "mb_cuda_pcg_solve: NULL argument");
  MB_CHECK(ncomp >= 1 && ncomp <= MB_LA_MAXCOMP, MB_ERR_ARG,
           "mb_cuda_pcg_solve: %d columns (1 to %d are solved together)", ncomp,
           MB_LA_MAXCOMP);
  MB_CHECK(opts->rtol > 0 && isfinite(opts->rtol) && opts->max_iter >= 0, MB_ERR_ARG,
           "mb_cuda_pcg_solve: rtol %g must be positive and finite, max_iter %d not negative",
           opts->rtol, opts->max_iter);
  MB_CHECK((B && X) || !dA->nrows, MB_ERR_ARG, "mb_cuda_pcg_solve: NULL B or X");
  MB_CHECK(halo || dA->ncols == dA->nrows, MB_ERR_ARG,
           "mb_cuda_pcg_solve: a matrix with ghost columns needs a halo plan");
  if (halo) comm = mb_halo_comm(halo);
  *stats = mb_solve_stats{};
  stats->method = MB_SOLVER_PCG;
  stats->rtol = opts->rtol;

  const int nc = ncomp;
  const int32_t n = dA->nrows;
  const size_t rows = (size_t)n * nc, prow = (size_t)dA->ncols * nc;
  /* r, z, q [rows]; p [prow]; dinv [n]; t [3 nc n] */
  const size_t need = 8 * (3 * rows + prow + (size_t)n + 3 * (size_t)nc * n);
  if (need > dA->work.bytes) MB_CALL(mb_dbuf_alloc(&dA->work, need, "PCG vectors"));
  if (!dA->rd) MB_CALL(mb_reduce_device_create(&dA->rd));
  if (halo && (dA->halo_plan != halo || dA->halo_ncomp != nc)) {
    if (dA->halo) mb_cuda_halo_free(dA->halo);
    dA->halo = nullptr;
    dA->halo_plan = nullptr;
    MB_CALL(mb_cuda_halo_create(halo, nc, 8, NULL, &dA->halo));
    dA->halo_plan = halo;
    dA->halo_ncomp = nc;
  }
  pcg s;
  s.comm = comm;
  s.A = dA;
  s.halo = halo ? dA->halo : nullptr;
  s.nc = nc;
  s.n = n;
  double *w = dA->work.as<double>();
  s.r = w;
  s.z = s.r + rows;
  s.q = s.z + rows;
  s.p = s.q + rows;
  s.dinv = s.p + prow;
  s.t = s.dinv + n;
  const unsigned g = s.grid();
  const double rtol = opts->rtol;

  /* Inputs: A finite with a positive diagonal, B and X's owned rows
   * finite; agreed over the ranks. dinv = 1 / diag. */
  {
    int32_t bad[3] = {INT32_MAX, INT32_MAX, INT32_MAX};
    if (n) {
      MB_CALL_CUDA(cudaMemcpy(dA->flag.p, bad, sizeof bad, cudaMemcpyHostToDevice));
      k_check<<<mb_la_grid(n > dA->nnz ? n : dA->nnz), MB_LA_BLOCK>>>(
          n, nc, dA->nnz, dA->diag.as<int32_t>(), dA->val.as<double>(), B, X, s.dinv,
          dA->flag.as<int32_t>());
      MB_CHECK_LAUNCH("PCG input check");
      MB_CALL_CUDA(cudaMemcpy(bad, dA->flag.p, sizeof bad, cudaMemcpyDeviceToHost));
    }
    int flag[3], any[3];
    for (int j = 0; j < 3; j++) flag[j] = bad[j] != INT32_MAX;
    MB_CALL_MPI(MPI_Allreduce(flag, any, 3, MPI_INT, MPI_MAX, comm));
    MB_CHECK(!any[0], MB_ERR_NUMERIC, "PCG: the matrix has a non-finite value");
    MB_CHECK(!any[1], MB_ERR_NUMERIC,
             "PCG: the matrix is not positive definite: a diagonal entry <= 0 (local row %d of "
             "this rank; -1: another rank's)", flag[1] ? (int)bad[1] : -1);
    MB_CHECK(!any[2], MB_ERR_NUMERIC,
             "PCG: a non-finite value in the right-hand side or the start (local row %d of "
             "this rank; -1: another rank's)", flag[2] ? (int)bad[2] : -1);
  }

  /* r = b - A x, z = dinv r; ||b||, ||r||, r.z in one allreduce */
  double bnorm[MB_LA_MAXCOMP], tol[MB_LA_MAXCOMP], rz[MB_LA_MAXCOMP], res[MB_LA_MAXCOMP];
  int active[MB_LA_MAXCOMP], run[MB_LA_MAXCOMP], check[MB_LA_MAXCOMP], it[MB_LA_MAXCOMP];
  double v[3 * MB_LA_MAXCOMP];
  {
    colp all{};
    for (int c = 0; c < nc; c++) all.on[c] = 1;
    MB_CALL(s.product(X));
    if (n) {
      /* t: [r r | r z | b b] */
      k_resid<<<g, MB_LA_BLOCK>>>(n, nc, all, B, s.q, s.dinv, s.r, s.z, s.t);
      MB_CHECK_LAUNCH("PCG start");
      k_terms<<<g, MB_LA_BLOCK>>>(n, nc, B, B, s.t + 2 * (int64_t)nc * n);
      MB_CHECK_LAUNCH("PCG norms");
    }
    MB_CALL(s.sums(3 * nc, NULL, v));
  }
  colp zero{};
  int zero_cols = 0;
  for (int c = 0; c < nc; c++) {
    bnorm[c] = sqrt(v[2 * nc + c]);
    tol[c] = rtol * bnorm[c];
    const double rn = sqrt(v[c]);
    rz[c] = v[nc + c];
    it[c] = 0;
    res[c] = 0;
    active[c] = 0;
    if (bnorm[c] == 0) {
      zero.on[c] = 1; /* the solution is 0 */
      zero_cols = 1;
    } else if (rn <= tol[c]) {
      res[c] = rn / bnorm[c];
    } else {
      active[c] = 1;
    }
  }
  if (zero_cols && n) {
    k_zero_cols<<<g, MB_LA_BLOCK>>>(n, nc, zero, X);
    MB_CHECK_LAUNCH("PCG zero columns");
  }
  if (n) MB_CALL_CUDA(cudaMemcpy(s.p, s.z, 8 * rows, cudaMemcpyDeviceToDevice));

  for (;;) {
    int any = 0;
    for (int c = 0; c < nc; c++) {
      run[c] = active[c] && it[c] < opts->max_iter;
      check[c] = 0;
      any |= run[c];
    }
    if (!any) break;
    /* q = A p, alpha = r.z / p.q */
    MB_CALL(s.product(s.p));
    if (n) {
      k_terms<<<g, MB_LA_BLOCK>>>(n, nc, s.p, s.q, s.t);
      MB_CHECK_LAUNCH("PCG curvature");
    }
    MB_CALL(s.sums(nc, run, v));
    colp al{};
    for (int c = 0; c < nc; c++) {
      if (!run[c]) continue;
      const double pq = v[c];
      MB_CHECK(isfinite(pq), MB_ERR_NUMERIC,
               "PCG: a non-finite value at iteration %d of column %d (p'Ap = %g)", it[c] + 1, c,
               pq);
      MB_CHECK(pq > 0, MB_ERR_NUMERIC,
               "PCG: the matrix is not positive definite: p'Ap = %g at iteration %d of column "
               "%d", pq, it[c] + 1, c);
      al.on[c] = 1;
      al.a[c] = rz[c] / pq;
    }
    /* x += alpha p, r -= alpha q, z = dinv r; r.r and r.z */
    if (n) {
      k_update<<<g, MB_LA_BLOCK>>>(n, nc, al, s.p, s.q, s.dinv, X, s.r, s.z, s.t);
      MB_CHECK_LAUNCH("PCG update");
    }
    MB_CALL(s.sums(2 * nc, run, v));
    int any_check = 0;
    colp be{};
    for (int c = 0; c < nc; c++) {
      if (!run[c]) continue;
      it[c]++;
      const double rr = v[c], rzn = v[nc + c];
      MB_CHECK(isfinite(rr) && isfinite(rzn), MB_ERR_NUMERIC,
               "PCG: a non-finite residual at iteration %d of column %d", it[c], c);
      if (sqrt(rr) <= tol[c]) {
        check[c] = 1;
        any_check = 1;
      } else {
        be.on[c] = 1;
        be.a[c] = rzn / rz[c];
        rz[c] = rzn;
      }
    }
    /* p = z + beta p */
    if (n) {
      k_direction<<<g, MB_LA_BLOCK>>>(n, nc, be, 0, s.z, s.p);
      MB_CHECK_LAUNCH("PCG direction");
    }
    if (!any_check) continue;
    /* The recurrence says converged: recompute b - A x for those columns;
     * stop them if it agrees, else restart CG from the true residual. */
    colp chk{};
    for (int c = 0; c < nc; c++) chk.on[c] = check[c];
    MB_CALL(s.product(X));
    if (n) {
      k_resid<<<g, MB_LA_BLOCK>>>(n, nc, chk, B, s.q, s.dinv, s.r, s.z, s.t);
      MB_CHECK_LAUNCH("PCG check");
    }
    MB_CALL(s.sums(2 * nc, check, v));
    colp restart{};
    int any_restart = 0;
    for (int c = 0; c < nc; c++) {
      if (!check[c]) continue;
      const double rn = sqrt(v[c]);
      if (rn <= tol[c]) {
        active[c] = 0;
        res[c] = rn / bnorm[c];
      } else {
        restart.on[c] = 1;
        any_restart = 1;
        rz[c] = v[nc + c];
      }
    }
    if (any_restart && n) {
      k_direction<<<g, MB_LA_BLOCK>>>(n, nc, restart, 1, s.z, s.p);
      MB_CHECK_LAUNCH("PCG restart");
    }
  }
  for (int c = 0; c < nc; c++)
    if (it[c] > stats->iterations) stats->iterations = it[c];
  int failed = -1;
  for (int c = 0; c < nc && failed < 0; c++)
    if (active[c]) failed = c;
  if (failed >= 0) {
    /* the residuals reached, for the message and the stats */
    double fres[MB_LA_MAXCOMP];
    MB_CALL(s.residuals(B, X, fres));
    double worst = 0;
    for (int c = 0; c < nc; c++) worst = fres[c] > worst ? fres[c] : worst;
    stats->residual = worst;
    stats->solve_ms = ms_since(t0);
    MB_FAIL(MB_ERR_NUMERIC,
            "PCG did not converge: column %d reached a relative residual of %.3e, above the "
            "tolerance %.3e, in the iteration limit of %d",
            failed, fres[failed], rtol, opts->max_iter);
  }
  /* ghosts of X hold their owners' solution */
  MB_CALL(s.exchange(X));
  MB_CALL_CUDA(cudaDeviceSynchronize());
  for (int c = 0; c < nc; c++) stats->residual = res[c] > stats->residual ? res[c] : stats->residual;
  stats->solve_ms = ms_since(t0);
  return MB_SUCCESS;
}
