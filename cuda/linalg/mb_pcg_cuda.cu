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
 * passed to the vector kernels, which do per row what the CPU would do
 * (unfused), so the iterates are the same bits on 1 and N ranks when the
 * product is the row kernel.
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

/* dv[i] = A_ii; the first row whose diagonal is not > 0 and finite into *flag. */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_diag(int32_t n, const int32_t *__restrict__ diag, const double *__restrict__ val,
           double *__restrict__ dv, int32_t *__restrict__ flag) {
  const int64_t i = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (i >= n) return;
  const double d = val[diag[i]];
  dv[i] = d;
  if (!(d > 0.0) || !isfinite(d)) atomicMin(flag, (int32_t)i);
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

/* r = b - q */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_resid(int64_t m, const double *__restrict__ b, const double *__restrict__ q,
            double *__restrict__ r) {
  const int64_t k = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (k < m) r[k] = b[k] - q[k];
}

/* Columns on: z = r / d, p = z, and the terms r z and r r (0 for the others). */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_restart(int32_t n, int nc, colp on, const double *__restrict__ r,
              const double *__restrict__ dv, double *__restrict__ z, double *__restrict__ p,
              double *__restrict__ t) {
  const int64_t i = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (i >= n) return;
  const double d = dv[i];
  for (int c = 0; c < nc; c++) {
    const int64_t k = i * nc + c;
    if (on.on[c]) {
      const double zz = r[k] / d;
      z[k] = zz;
      p[k] = zz;
    }
    double rz = 0.0, rr = 0.0; /* columns off: z may never have been written */
    if (on.on[c]) {
      rz = r[k] * z[k];
      rr = r[k] * r[k];
    }
    t[(int64_t)c * n + i] = rz;
    t[(int64_t)(nc + c) * n + i] = rr;
  }
}

/* Columns on: x += alpha p, r -= alpha q, z = r / d, and the terms r z, r r
 * (0 for the others). */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_update(int32_t n, int nc, colp al, const double *__restrict__ p,
             const double *__restrict__ q, const double *__restrict__ dv, double *__restrict__ x,
             double *__restrict__ r, double *__restrict__ z, double *__restrict__ t) {
  const int64_t i = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (i >= n) return;
  const double d = dv[i];
  for (int c = 0; c < nc; c++) {
    const int64_t k = i * nc + c;
    if (al.on[c]) {
      const double a = al.a[c];
      const double ap = a * p[k], aq = a * q[k];
      x[k] = x[k] + ap;
      const double rk = r[k] - aq;
      r[k] = rk;
      z[k] = rk / d;
    }
    double rz = 0.0, rr = 0.0; /* columns off: z may never have been written */
    if (al.on[c]) {
      rz = r[k] * z[k];
      rr = r[k] * r[k];
    }
    t[(int64_t)c * n + i] = rz;
    t[(int64_t)(nc + c) * n + i] = rr;
  }
}

/* Columns on: p = z + beta p. */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_direction(int32_t n, int nc, colp be, const double *__restrict__ z, double *__restrict__ p) {
  const int64_t i = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (i >= n) return;
  for (int c = 0; c < nc; c++)
    if (be.on[c]) {
      const int64_t k = i * nc + c;
      const double bp = be.a[c] * p[k];
      p[k] = z[k] + bp;
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
  double *r, *z, *p, *q, *dv, *t;
  mb_reduce_acc acc[2 * MB_LA_MAXCOMP];

  /* forward exchange of the ghosts of v [ncols, nc] (halo only) */
  mb_error exchange(double *v) {
    if (!halo) return MB_SUCCESS;
    MB_CALL(mb_cuda_halo_begin(halo, MB_HALO_FORWARD, v, A->transport, A->nccl));
    MB_CALL(mb_cuda_halo_end(halo, v));
    return MB_SUCCESS;
  }
  /* the exact sums of the m columns of terms t, over the ranks, into out[m] */
  mb_error sums(int m, double *out) {
    for (int c = 0; c < m; c++) {
      mb_reduce_acc_zero(&acc[c]);
      MB_CALL(mb_reduce_device_acc(A->rd, NULL, n, t + (int64_t)c * n, NULL, &acc[c]));
    }
    MB_CALL(mb_reduce_acc_allreduce(comm, m, acc));
    for (int c = 0; c < m; c++) out[c] = mb_reduce_acc_value(&acc[c]);
    return MB_SUCCESS;
  }
  /* r = b - A x (x's ghosts refreshed first) */
  mb_error residual(const double *b, double *x) {
    MB_CALL(exchange(x));
    MB_CALL(mb_la_spmv(A, halo != nullptr, nc, x, q));
    if (n) {
      k_resid<<<mb_la_grid((int64_t)n * nc), MB_LA_BLOCK>>>((int64_t)n * nc, b, q, r);
      MB_CHECK_LAUNCH("PCG residual");
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
           "mb_cuda_pcg_solve: %d columns (1 to %d)", ncomp, MB_LA_MAXCOMP);
  MB_CHECK(opts->rtol > 0 && isfinite(opts->rtol) && opts->max_iter >= 1, MB_ERR_ARG,
           "mb_cuda_pcg_solve: rtol %g and max_iter %d (need rtol > 0, max_iter >= 1)",
           opts->rtol, opts->max_iter);
  MB_CHECK((B && X) || !dA->nrows, MB_ERR_ARG, "mb_cuda_pcg_solve: NULL vector");
  MB_CHECK(halo || dA->ncols == dA->nrows, MB_ERR_ARG,
           "mb_cuda_pcg_solve: %d columns for %d rows without a halo plan", dA->ncols,
           dA->nrows);
  if (halo) comm = mb_halo_comm(halo);
  *stats = mb_solve_stats{};
  stats->method = MB_SOLVER_PCG;
  stats->rtol = opts->rtol;

  const int nc = ncomp;
  const int32_t n = dA->nrows;
  const size_t rows = (size_t)n * nc, prow = (size_t)dA->ncols * nc;
  /* r, z, q [rows]; p [prow]; dv [n]; t [2 nc n] */
  const size_t need = 8 * (3 * rows + prow + (size_t)n + 2 * (size_t)nc * n);
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
  s.dv = s.p + prow;
  s.t = s.dv + n;
  const unsigned g = mb_la_grid(n);

  /* Jacobi: the diagonal, positive and finite on every rank */
  const int32_t none = INT32_MAX;
  int32_t bad = none;
  if (n) {
    MB_CALL_CUDA(cudaMemcpy(dA->flag.p, &none, sizeof none, cudaMemcpyHostToDevice));
    k_diag<<<g, MB_LA_BLOCK>>>(n, dA->diag.as<int32_t>(), dA->val.as<double>(), s.dv,
                               dA->flag.as<int32_t>());
    MB_CHECK_LAUNCH("PCG diagonal");
    MB_CALL_CUDA(cudaMemcpy(&bad, dA->flag.p, sizeof bad, cudaMemcpyDeviceToHost));
  }
  int anybad = bad != none, allbad = 0;
  MB_CALL_MPI(MPI_Allreduce(&anybad, &allbad, 1, MPI_INT, MPI_MAX, comm));
  if (allbad) {
    if (anybad)
      MB_FAIL(MB_ERR_NUMERIC,
              "PCG: the matrix is not positive definite: diagonal entry of row %d is not a "
              "positive finite number", bad);
    MB_FAIL(MB_ERR_NUMERIC,
            "PCG: the matrix is not positive definite: a diagonal entry on another rank is "
            "not a positive finite number");
  }

  /* norms of the right-hand sides */
  double bn[MB_LA_MAXCOMP], tmp[2 * MB_LA_MAXCOMP];
  if (n) {
    k_terms<<<g, MB_LA_BLOCK>>>(n, nc, B, B, s.t);
    MB_CHECK_LAUNCH("PCG norms");
  }
  MB_CALL(s.sums(nc, tmp));
  colp zero{};
  int nzero = 0;
  for (int c = 0; c < nc; c++) {
    bn[c] = sqrt(tmp[c]);
    MB_CHECK(isfinite(bn[c]), MB_ERR_NUMERIC,
             "PCG: right-hand side column %d holds a non-finite value", c);
    zero.on[c] = bn[c] == 0.0;
    nzero += zero.on[c];
  }
  if (nzero && n) {
    k_zero_cols<<<g, MB_LA_BLOCK>>>(n, nc, zero, X);
    MB_CHECK_LAUNCH("PCG zero columns");
  }

  /* r = b - A x0; true residuals decide which columns run */
  const double rtol = opts->rtol;
  int it = 0;
  double res[MB_LA_MAXCOMP] = {0};
  for (;;) {
    MB_CALL(s.residual(B, X));
    if (n) {
      k_terms<<<g, MB_LA_BLOCK>>>(n, nc, s.r, s.r, s.t);
      MB_CHECK_LAUNCH("PCG residual norms");
    }
    MB_CALL(s.sums(nc, tmp));
    colp on{};
    int active = 0;
    for (int c = 0; c < nc; c++) {
      res[c] = zero.on[c] ? 0.0 : sqrt(tmp[c]) / bn[c];
      MB_CHECK(isfinite(res[c]), MB_ERR_NUMERIC,
               "PCG: column %d's residual is not finite (non-finite start or matrix)", c);
      on.on[c] = res[c] > rtol;
      active += on.on[c];
    }
    if (!active) break;
    if (it >= opts->max_iter) {
      double worst = 0;
      for (int c = 0; c < nc; c++) worst = res[c] > worst ? res[c] : worst;
      stats->iterations = it;
      stats->residual = worst;
      stats->solve_ms = ms_since(t0);
      MB_FAIL(MB_ERR_NUMERIC,
              "PCG did not converge: relative residual %.3e after %d iterations (the limit), "
              "tolerance %.3e", worst, it, rtol);
    }
    /* (re)start the active columns from their true residual */
    double rz[MB_LA_MAXCOMP];
    if (n) {
      k_restart<<<g, MB_LA_BLOCK>>>(n, nc, on, s.r, s.dv, s.z, s.p, s.t);
      MB_CHECK_LAUNCH("PCG restart");
    }
    MB_CALL(s.sums(2 * nc, tmp));
    for (int c = 0; c < nc; c++) rz[c] = tmp[c];
    while (active && it < opts->max_iter) {
      MB_CALL(s.exchange(s.p));
      MB_CALL(mb_la_spmv(dA, halo != nullptr, nc, s.p, s.q));
      if (n) {
        k_terms<<<g, MB_LA_BLOCK>>>(n, nc, s.p, s.q, s.t);
        MB_CHECK_LAUNCH("PCG curvature");
      }
      double pq[MB_LA_MAXCOMP];
      MB_CALL(s.sums(nc, pq));
      colp al{};
      for (int c = 0; c < nc; c++) {
        if (!on.on[c]) continue;
        MB_CHECK(pq[c] > 0.0 && isfinite(pq[c]) && isfinite(rz[c]), MB_ERR_NUMERIC,
                 "PCG: the matrix is not positive definite (column %d: p'Ap = %g at iteration "
                 "%d)", c, pq[c], it + 1);
        al.on[c] = 1;
        al.a[c] = rz[c] / pq[c];
      }
      if (n) {
        k_update<<<g, MB_LA_BLOCK>>>(n, nc, al, s.p, s.q, s.dv, X, s.r, s.z, s.t);
        MB_CHECK_LAUNCH("PCG update");
      }
      MB_CALL(s.sums(2 * nc, tmp));
      it++;
      colp be{};
      for (int c = 0; c < nc; c++) {
        if (!on.on[c]) continue;
        const double rn = sqrt(tmp[nc + c]);
        MB_CHECK(isfinite(rn), MB_ERR_NUMERIC, "PCG: column %d's residual is not finite", c);
        if (rn <= rtol * bn[c]) {
          on.on[c] = 0;
          active--;
          continue;
        }
        be.on[c] = 1;
        be.a[c] = tmp[c] / rz[c];
        rz[c] = tmp[c];
      }
      if (active && n) {
        k_direction<<<g, MB_LA_BLOCK>>>(n, nc, be, s.z, s.p);
        MB_CHECK_LAUNCH("PCG direction");
      }
    }
  }
  /* ghosts of the solution current, as on entry */
  MB_CALL(s.exchange(X));
  MB_CALL_CUDA(cudaDeviceSynchronize());
  double worst = 0;
  for (int c = 0; c < nc; c++) worst = res[c] > worst ? res[c] : worst;
  stats->iterations = it;
  stats->residual = worst;
  stats->solve_ms = ms_since(t0);
  return MB_SUCCESS;
}
