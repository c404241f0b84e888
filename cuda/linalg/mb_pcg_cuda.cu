/* meshbatch: Jacobi-preconditioned conjugate gradient on the GPU, the
 * columns together (linalg layer; contract: cuda/linalg/mb_linalg_cuda.h).
 *
 * Hestenes & Stiefel, "Methods of conjugate gradients for solving linear
 * systems", J. Res. NBS 49(6), 1952; the preconditioned form as in Saad,
 * "Iterative Methods for Sparse Linear Systems", 2nd ed., algorithm 9.1.
 * Vectors are row-major [rows, ncomp] like B and X. Every dot product is
 * exact: a kernel writes the rounded products of each column contiguously
 * (the terms mb_reduce would form), mb_reduce_device_columns adds them into
 * device accumulators, one per column, and mb_reduce_device_allreduce
 * combines them over the ranks (nothing to do on one rank).
 *
 * The iteration's scalars live on the device: one-thread kernels round the
 * accumulators (the CPU's rounding, mb_reduce_slots_value), form alpha and
 * beta, count the iterations and decide per column whether it runs on, all
 * in a small status record the vector kernels read. The host enqueues
 * iteration k, then waits only for the status of iteration k - 1 (copied to
 * pinned memory behind it), so the device always has the next iteration
 * queued; the host acts when a status shows a failure, a column whose
 * recurrence says converged (the true residual b - A x is then checked, as
 * linalg/mb_pcg.c does, after the device has drained) or no column running.
 * A column that stops waits without changing until the host checks it, so
 * every column takes the CPU's steps in the CPU's order: with the row
 * kernel the iterates are the CPU's bits, on 1 and N ranks. Every decision
 * is taken on reduced values, so every rank takes it in step.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include <chrono>

#include "mb_cuda_halo.h"
#include "mb_linalg_cuda_private.cuh"
#include "mb_reduce.h"
#include "mb_reduce_impl.h"

namespace {

struct colp {
  double a[MB_LA_MAXCOMP];
  int on[MB_LA_MAXCOMP];
};

/* The iteration's scalars and decisions, on the device (and copied to
 * pinned host memory behind every iteration). */
struct pcg_status {
  double rz[MB_LA_MAXCOMP];    /* r'z of the current residual */
  double tol[MB_LA_MAXCOMP];   /* rtol ||b|| */
  double alpha[MB_LA_MAXCOMP], beta[MB_LA_MAXCOMP];
  double fail_value;           /* p'Ap at a failure */
  int32_t run[MB_LA_MAXCOMP];  /* the column takes the next iteration */
  int32_t step[MB_LA_MAXCOMP]; /* x, r, z updated in this iteration */
  int32_t dir[MB_LA_MAXCOMP];  /* p updated in this iteration */
  int32_t check[MB_LA_MAXCOMP]; /* the recurrence says converged: the host checks */
  int32_t it[MB_LA_MAXCOMP];
  int32_t fail, fail_col, fail_it; /* 1 p'Ap not finite, 2 p'Ap <= 0, 3 residual not finite */
  int32_t hold; /* a check is pending: no column steps until the host has done it, so a
                   later failure is found in the CPU's order of columns and iterations */
};

__device__ void stop_all(int nc, pcg_status *st) {
  for (int c = 0; c < nc; c++) st->run[c] = st->step[c] = st->dir[c] = 0;
}

/* The m accumulators acc into shared memory sh, by the whole block (one
 * thread then rounds them from there, not from global memory). */
__device__ void stage_acc(int m, const int64_t *__restrict__ acc, int64_t *sh) {
  for (int k = threadIdx.x; k < m * MB_REDUCE_NSLOTS; k += blockDim.x) sh[k] = acc[k];
  __syncthreads();
}

#define MB_PCG_SCALAR_THREADS 128

/* alpha = r'z / p'Ap of the running columns (acc: nc accumulators of p'Ap);
 * the CPU's checks, in column order. One block; thread 0 decides. */
__global__ void k_alpha(int nc, const int64_t *__restrict__ gacc, pcg_status *st) {
  __shared__ int64_t acc[MB_LA_MAXCOMP * MB_REDUCE_NSLOTS];
  stage_acc(nc, gacc, acc);
  if (threadIdx.x) return;
  if (st->hold) {
    for (int c = 0; c < nc; c++) st->step[c] = 0;
    return;
  }
  for (int c = 0; c < nc; c++) {
    st->step[c] = 0;
    if (!st->run[c]) continue;
    const double pq = mb_reduce_slots_value(acc + (int64_t)c * MB_REDUCE_NSLOTS);
    const int f = !isfinite(pq) ? 1 : !(pq > 0) ? 2 : 0;
    if (f) {
      st->fail = f;
      st->fail_col = c;
      st->fail_it = st->it[c] + 1;
      st->fail_value = pq;
      stop_all(nc, st);
      return;
    }
    st->step[c] = 1;
    st->alpha[c] = st->rz[c] / pq;
  }
}

/* After the update (acc: r'r of the nc columns, then r'z): count the
 * iteration; a column whose ||r|| <= tol stops for the host's check, the
 * others take beta = r'z_new / r'z and run on below the iteration limit.
 * One block; thread 0 decides. */
__global__ void k_beta(int nc, const int64_t *__restrict__ gacc, int max_iter, pcg_status *st) {
  __shared__ int64_t acc[2 * MB_LA_MAXCOMP * MB_REDUCE_NSLOTS];
  stage_acc(2 * nc, gacc, acc);
  if (threadIdx.x) return;
  for (int c = 0; c < nc; c++) st->dir[c] = 0;
  for (int c = 0; c < nc; c++) {
    if (!st->step[c]) continue;
    st->it[c]++;
    const double rr = mb_reduce_slots_value(acc + (int64_t)c * MB_REDUCE_NSLOTS);
    const double rzn = mb_reduce_slots_value(acc + (int64_t)(nc + c) * MB_REDUCE_NSLOTS);
    if (!isfinite(rr) || !isfinite(rzn)) {
      st->fail = 3;
      st->fail_col = c;
      st->fail_it = st->it[c];
      st->fail_value = rr;
      stop_all(nc, st);
      return;
    }
    if (sqrt(rr) <= st->tol[c]) {
      st->check[c] = 1;
      st->run[c] = 0;
      st->hold = 1;
    } else {
      st->dir[c] = 1;
      st->beta[c] = rzn / st->rz[c];
      st->rz[c] = rzn;
      st->run[c] = st->it[c] < max_iter;
    }
  }
}

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

/* Columns stepping (st->step): x += alpha p, r -= alpha q, z = r dinv;
 * terms r r and r z (0 for the others). jacobi 0 (the AMG preconditioner):
 * z and the r z terms are left to k_rz after the V-cycle. */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_update(int32_t n, int nc, const pcg_status *__restrict__ st, const double *__restrict__ p,
             const double *__restrict__ q, const double *__restrict__ dinv,
             double *__restrict__ x, double *__restrict__ r, double *__restrict__ z,
             double *__restrict__ t, int jacobi) {
  const int64_t i = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (i >= n) return;
  const double di = dinv[i];
  for (int c = 0; c < nc; c++) {
    const int64_t k = i * nc + c;
    double rr = 0.0, rz = 0.0;
    if (st->step[c]) {
      const double a = st->alpha[c];
      const double ap = a * p[k], aq = a * q[k];
      x[k] = x[k] + ap;
      const double rk = r[k] - aq;
      r[k] = rk;
      rr = rk * rk;
      if (jacobi) {
        const double zk = rk * di;
        z[k] = zk;
        rz = rk * zk;
      }
    }
    t[(int64_t)c * n + i] = rr;
    if (jacobi) t[(int64_t)(nc + c) * n + i] = rz;
  }
}

/* The r z terms after the V-cycle: t[(nc + c) n + i] = r z in the columns
 * stepping (st non-NULL: st->step) or on (st NULL: on), else 0. */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_rz(int32_t n, int nc, const pcg_status *__restrict__ st, colp on,
         const double *__restrict__ r, const double *__restrict__ z, double *__restrict__ t) {
  const int64_t i = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (i >= n) return;
  for (int c = 0; c < nc; c++) {
    const int64_t k = i * nc + c;
    const int sel = st ? st->step[c] : on.on[c];
    t[(int64_t)(nc + c) * n + i] = sel ? r[k] * z[k] : 0.0;
  }
}

/* Columns with st->dir: p = z + beta p. */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_direction_st(int32_t n, int nc, const pcg_status *__restrict__ st,
                   const double *__restrict__ z, double *__restrict__ p) {
  const int64_t i = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (i >= n) return;
  for (int c = 0; c < nc; c++)
    if (st->dir[c]) {
      const int64_t k = i * nc + c;
      const double bp = st->beta[c] * p[k];
      p[k] = z[k] + bp;
    }
}

/* Columns on: p = z (a restart from the true residual). */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_restart(int32_t n, int nc, colp on, const double *__restrict__ z, double *__restrict__ p) {
  const int64_t i = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (i >= n) return;
  for (int c = 0; c < nc; c++)
    if (on.on[c]) p[i * nc + c] = z[i * nc + c];
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
  const mb_cuda_amg *amg = nullptr; /* NULL: Jacobi */
  int nc;
  int32_t n;
  double *r, *z, *p, *q, *dinv, *t;
  int64_t *acc;        /* device accumulators [3 nc][MB_REDUCE_NSLOTS] */
  pcg_status *st;      /* device status */
  pcg_status *host[2]; /* pinned copies, one per iteration in flight */

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
  /* the m columns of t summed exactly over the ranks into acc, on the device */
  mb_error device_sums(int m) {
    MB_CALL(mb_reduce_device_columns(A->rd, nullptr, m, n, t, n, acc));
    MB_CALL(mb_reduce_device_allreduce(A->rd, nullptr, comm, m, acc));
    return MB_SUCCESS;
  }
  /* out[j] = exact sum over the ranks of the terms column j of t (j < m),
   * on the host (waits for the device) */
  mb_error sums(int m, double *out) {
    MB_CALL(device_sums(m));
    mb_reduce_acc h[3 * MB_LA_MAXCOMP];
    MB_CALL(mb_reduce_device_download(A->rd, nullptr, m, acc, h));
    for (int j = 0; j < m; j++) out[j] = mb_reduce_acc_value(&h[j]);
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
    MB_CALL(sums(2 * nc, v));
    for (int c = 0; c < nc; c++) {
      const double rn = sqrt(v[c]), bn = sqrt(v[nc + c]);
      res[c] = bn > 0 ? rn / bn : rn;
    }
    return MB_SUCCESS;
  }
  /* AMG: z = V-cycle(r) of every column, then the r z terms of the
   * columns selected (st: those stepping; else on). Jacobi: nothing. */
  mb_error precondition(const pcg_status *sel, colp on) {
    if (!amg) return MB_SUCCESS;
    MB_CALL(mb_cuda_amg_apply(amg, nc, r, z));
    if (n) {
      k_rz<<<grid(), MB_LA_BLOCK>>>(n, nc, sel, on, r, z, t);
      MB_CHECK_LAUNCH("PCG r z");
    }
    return MB_SUCCESS;
  }
  /* One iteration, enqueued: q = A p, alpha, the update, beta, the
   * direction; then the status behind it into host[slot] and its event. */
  mb_error iteration(int max_iter, int slot) {
    MB_CALL(product(p));
    if (n) {
      k_terms<<<grid(), MB_LA_BLOCK>>>(n, nc, p, q, t);
      MB_CHECK_LAUNCH("PCG curvature");
    }
    MB_CALL(device_sums(nc));
    k_alpha<<<1, MB_PCG_SCALAR_THREADS>>>(nc, acc, st);
    MB_CHECK_LAUNCH("PCG alpha");
    if (n) {
      k_update<<<grid(), MB_LA_BLOCK>>>(n, nc, st, p, q, dinv, xk, r, z, t, amg == nullptr);
      MB_CHECK_LAUNCH("PCG update");
    }
    MB_CALL(precondition(st, colp{}));
    MB_CALL(device_sums(2 * nc));
    k_beta<<<1, MB_PCG_SCALAR_THREADS>>>(nc, acc, max_iter, st);
    MB_CHECK_LAUNCH("PCG beta");
    if (n) {
      k_direction_st<<<grid(), MB_LA_BLOCK>>>(n, nc, st, z, p);
      MB_CHECK_LAUNCH("PCG direction");
    }
    MB_CALL_CUDA(cudaMemcpyAsync(host[slot], st, sizeof *st, cudaMemcpyDeviceToHost, nullptr));
    MB_CALL_CUDA(cudaEventRecord(A->pcg_ev[slot], nullptr));
    return MB_SUCCESS;
  }
  double *xk = nullptr; /* the iterate X */
};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/* The pinned status copies and their events, made once per matrix. */
mb_error status_buffers(mb_cuda_csr *dA) {
  if (!dA->pcg_host) {
    void *h = nullptr;
    MB_CALL_CUDA(cudaMallocHost(&h, 2 * sizeof(pcg_status)));
    dA->pcg_host = h;
  }
  for (auto &e : dA->pcg_ev)
    if (!e) MB_CALL_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return MB_SUCCESS;
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
  MB_CHECK(!opts->amg, MB_ERR_ARG,
           "mb_cuda_pcg_solve: a host AMG hierarchy (opts->amg) was given; the device PCG takes "
           "its device copy (opts->cuda_amg, mb_cuda_amg_create)");
  MB_CHECK(!opts->cuda_amg || (!halo && dA->ncols == dA->nrows && ncomp <= MB_AMG_MAX_COMP &&
                               mb_cuda_amg_rows(opts->cuda_amg) == dA->nrows),
           MB_ERR_ARG,
           "mb_cuda_pcg_solve: the AMG preconditioner takes one rank's whole matrix (no halo, "
           "%d rows, the hierarchy's %d) and at most %d columns (%d given)",
           dA->nrows, mb_cuda_amg_rows(opts->cuda_amg), MB_AMG_MAX_COMP, ncomp);
  MB_CHECK(halo || dA->ncols == dA->nrows, MB_ERR_ARG,
           "mb_cuda_pcg_solve: a matrix with ghost columns needs a halo plan");
  if (halo) comm = mb_halo_comm(halo);
  *stats = mb_solve_stats{};
  stats->method = opts->cuda_amg ? MB_SOLVER_AMG : MB_SOLVER_PCG;
  stats->rtol = opts->rtol;

  const int nc = ncomp;
  const int32_t n = dA->nrows;
  const size_t rows = (size_t)n * nc, prow = (size_t)dA->ncols * nc;
  /* doubles: r, z, q [rows]; p [prow]; dinv [n]; t [3 nc n]; then the
   * accumulators [3 nc][NSLOTS] int64 and the status */
  const size_t nd = 3 * rows + prow + (size_t)n + 3 * (size_t)nc * n;
  const size_t nacc = 3 * (size_t)nc * MB_REDUCE_NSLOTS;
  const size_t need = 8 * (nd + nacc) + sizeof(pcg_status);
  if (need > dA->work.bytes) MB_CALL(mb_dbuf_alloc(&dA->work, need, "PCG vectors"));
  if (!dA->rd) MB_CALL(mb_reduce_device_create(&dA->rd));
  MB_CALL(status_buffers(dA));
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
  s.amg = opts->cuda_amg;
  s.nc = nc;
  s.n = n;
  s.xk = X;
  double *w = dA->work.as<double>();
  s.r = w;
  s.z = s.r + rows;
  s.q = s.z + rows;
  s.p = s.q + rows;
  s.dinv = s.p + prow;
  s.t = s.dinv + n;
  s.acc = (int64_t *)(w + nd);
  s.st = (pcg_status *)(s.acc + nacc);
  s.host[0] = (pcg_status *)dA->pcg_host;
  s.host[1] = s.host[0] + 1;
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
  double bnorm[MB_LA_MAXCOMP], res[MB_LA_MAXCOMP];
  int active[MB_LA_MAXCOMP];
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
    MB_CALL(s.precondition(nullptr, all));
    MB_CALL(s.sums(3 * nc, v));
  }
  pcg_status cur{};
  colp zero{};
  int zero_cols = 0;
  for (int c = 0; c < nc; c++) {
    bnorm[c] = sqrt(v[2 * nc + c]);
    cur.tol[c] = rtol * bnorm[c];
    const double rn = sqrt(v[c]);
    cur.rz[c] = v[nc + c];
    res[c] = 0;
    active[c] = 0;
    if (bnorm[c] == 0) {
      zero.on[c] = 1; /* the solution is 0 */
      zero_cols = 1;
    } else if (rn <= cur.tol[c]) {
      res[c] = rn / bnorm[c];
    } else {
      active[c] = 1;
    }
    cur.run[c] = active[c] && opts->max_iter > 0;
  }
  if (zero_cols && n) {
    k_zero_cols<<<g, MB_LA_BLOCK>>>(n, nc, zero, X);
    MB_CHECK_LAUNCH("PCG zero columns");
  }
  if (n) MB_CALL_CUDA(cudaMemcpy(s.p, s.z, 8 * rows, cudaMemcpyDeviceToDevice));
  MB_CALL_CUDA(cudaMemcpy(s.st, &cur, sizeof cur, cudaMemcpyHostToDevice));

  /* The iterations: enqueue k, look at the status of k - 1. */
  int running = 0;
  for (int c = 0; c < nc; c++) running |= cur.run[c];
  int have_prev = 0, slot = 0;
  while (running) {
    const mb_error ie = s.iteration(opts->max_iter, slot);
    if (ie) { /* none of the iterations queued may outlive the call */
      (void)cudaDeviceSynchronize();
      return ie;
    }
    int act = 0;
    if (have_prev) {
      MB_CALL_CUDA(cudaEventSynchronize(dA->pcg_ev[slot ^ 1]));
      const pcg_status *prev = s.host[slot ^ 1];
      int any_run = 0, any_check = 0;
      for (int c = 0; c < nc; c++) {
        any_run |= prev->run[c];
        any_check |= prev->check[c];
      }
      act = prev->fail || any_check || !any_run;
    }
    have_prev = 1;
    slot ^= 1;
    if (!act) continue;
    /* Drain the device: the status after the last iteration enqueued. */
    MB_CALL_CUDA(cudaEventSynchronize(dA->pcg_ev[slot ^ 1]));
    cur = *s.host[slot ^ 1];
    have_prev = 0;
    MB_CHECK(cur.fail != 1, MB_ERR_NUMERIC,
             "PCG: a non-finite value at iteration %d of column %d (p'Ap = %g)", cur.fail_it,
             cur.fail_col, cur.fail_value);
    MB_CHECK(cur.fail != 2, MB_ERR_NUMERIC,
             "PCG: the matrix is not positive definite: p'Ap = %g at iteration %d of column "
             "%d", cur.fail_value, cur.fail_it, cur.fail_col);
    MB_CHECK(cur.fail != 3, MB_ERR_NUMERIC,
             "PCG: a non-finite residual at iteration %d of column %d", cur.fail_it,
             cur.fail_col);
    int any_check = 0;
    colp chk{};
    for (int c = 0; c < nc; c++) {
      chk.on[c] = cur.check[c];
      any_check |= cur.check[c];
    }
    if (any_check) {
      /* The recurrence says converged: recompute b - A x for those
       * columns; stop them if it agrees, else restart CG from the true
       * residual. */
      MB_CALL(s.product(X));
      if (n) {
        k_resid<<<g, MB_LA_BLOCK>>>(n, nc, chk, B, s.q, s.dinv, s.r, s.z, s.t);
        MB_CHECK_LAUNCH("PCG check");
      }
      /* Jacobi: k_resid made the r z terms too. AMG: the norms first; the
       * V-cycle (z and r z) only where a column restarts. */
      MB_CALL(s.sums(s.amg ? nc : 2 * nc, v));
      if (s.amg) {
        colp restart{};
        int any_restart = 0;
        for (int c = 0; c < nc; c++)
          if (cur.check[c] && !(sqrt(v[c]) <= cur.tol[c])) restart.on[c] = any_restart = 1;
        if (any_restart) {
          const mb_error pe = s.precondition(nullptr, restart);
          if (pe) {
            (void)cudaDeviceSynchronize();
            return pe;
          }
          MB_CALL(s.sums(2 * nc, v));
        }
      }
      colp restart{};
      int any_restart = 0;
      for (int c = 0; c < nc; c++) {
        if (!cur.check[c]) continue;
        cur.check[c] = 0;
        const double rn = sqrt(v[c]);
        if (rn <= cur.tol[c]) {
          active[c] = 0;
          res[c] = rn / bnorm[c];
        } else {
          restart.on[c] = 1;
          any_restart = 1;
          cur.rz[c] = v[nc + c];
          cur.run[c] = cur.it[c] < opts->max_iter;
        }
      }
      if (any_restart && n) {
        k_restart<<<g, MB_LA_BLOCK>>>(n, nc, restart, s.z, s.p);
        MB_CHECK_LAUNCH("PCG restart");
      }
      cur.hold = 0;
      MB_CALL_CUDA(cudaMemcpy(s.st, &cur, sizeof cur, cudaMemcpyHostToDevice));
    }
    running = 0;
    for (int c = 0; c < nc; c++) running |= cur.run[c];
  }
  for (int c = 0; c < nc; c++)
    if (cur.it[c] > stats->iterations) stats->iterations = cur.it[c];
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
