/* meshbatch: sparse Cholesky on the GPU through cuSOLVER's low-level
 * csrchol API (linalg layer; contract: cuda/linalg/mb_linalg_cuda.h).
 *
 * csrchol does no fill-reducing ordering of its own: it factors the matrix
 * as numbered, and in natural mesh order the elimination tree is long and
 * the factorization runs nearly sequentially. So the pattern is permuted
 * once by METIS_NodeND (nested dissection; Karypis & Kumar, SIAM J. Sci.
 * Comput. 20(1), 1998) into P A P^T, analysed once (cusolverSpXcsrchol-
 * Analysis: the symbolic factorization), and each new matrix's values are
 * gathered into the permuted slots (one read per entry, the source slots
 * precomputed), factored (cusolverSpDcsrcholFactor) and checked for a zero
 * pivot; each right-hand side column is permuted, solved
 * (cusolverSpDcsrcholSolve) and permuted back. cusolverSpDcsrlsvchol is not
 * used: it repeats the analysis at every call.
 *
 * csrchol and the whole cuSOLVER Sp API are marked deprecated in CUDA 13 in
 * favour of cuDSS, which this build cannot assume; the warnings are
 * silenced here only (DISABLE_CUSOLVER_DEPRECATED before cuSOLVER's
 * headers), and a cuDSS method would replace this file behind the same
 * entry points.
 */
#define DISABLE_CUSOLVER_DEPRECATED 1
#include <cuda_runtime.h>
#include <cusolverSp.h>
#include <cusolverSp_LOWLEVEL_PREVIEW.h>
#include <cusparse.h>
#include <math.h>
#include <metis.h>
#include <stdint.h>

#include <algorithm>
#include <chrono>
#include <new>
#include <utility>
#include <vector>

#include "mb_linalg_cuda_private.cuh"
#include "mb_reduce.h"


struct mb_cuda_cholesky {
  int32_t n = 0, nnz = 0;
  mb_dbuf rowptr, col, src, perm; /* int32: permuted pattern, source slot per entry, new -> old */
  mb_dbuf val, bp, xp, r, flag;   /* permuted values [nnz]; b, x, residual [n]; flag int32 */
  mb_dbuf buf;                    /* csrchol workspace */
  cusolverSpHandle_t h = nullptr;
  cusparseMatDescr_t descr = nullptr;
  csrcholInfo_t info = nullptr;
  mb_reduce_device *rd = nullptr;
  double analyze_ms = 0;
  int analysis_reported = 0, factored = 0;
  ~mb_cuda_cholesky() {
    if (info) cusolverSpDestroyCsrcholInfo(info);
    if (descr) cusparseDestroyMatDescr(descr);
    if (h) cusolverSpDestroy(h);
    mb_reduce_device_free(rd);
  }
};

namespace {

using clk = std::chrono::steady_clock;
double ms_since(clk::time_point t0) {
  return std::chrono::duration<double, std::milli>(clk::now() - t0).count();
}

/* vp[k] = v[src[k]]: A's values into the permuted slots. */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_gather_vals(int32_t nnz, const int32_t *__restrict__ src, const double *__restrict__ v,
                  double *__restrict__ vp) {
  const int64_t k = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (k < nnz) vp[k] = v[src[k]];
}

/* The first row (A's numbering) whose diagonal is not positive and finite
 * into *flag. */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_check_diag(int32_t n, const int32_t *__restrict__ perm, const int32_t *__restrict__ diag,
                 const double *__restrict__ v, int32_t *__restrict__ flag) {
  const int64_t i = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (i >= n) return;
  const double d = v[diag[perm[i]]];
  if (!(d > 0.0) || !isfinite(d)) atomicMin(flag, perm[i]);
}

/* y[i] = x[perm[i] nc + c] */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_gather_col(int32_t n, int nc, int c, const int32_t *__restrict__ perm,
                 const double *__restrict__ x, double *__restrict__ y) {
  const int64_t i = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (i < n) y[i] = x[(int64_t)perm[i] * nc + c];
}

/* x[perm[i] nc + c] = y[i] */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_scatter_col(int32_t n, int nc, int c, const int32_t *__restrict__ perm,
                  const double *__restrict__ y, double *__restrict__ x) {
  const int64_t i = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (i < n) x[(int64_t)perm[i] * nc + c] = y[i];
}

/* r = b - r (r holds A x on entry) */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_sub(int32_t n, const double *__restrict__ b, double *__restrict__ r) {
  const int64_t i = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (i < n) r[i] = b[i] - r[i];
}

mb_error upload(mb_dbuf *b, const void *h, size_t bytes, const char *what) {
  MB_CALL(mb_dbuf_alloc(b, bytes, what));
  if (bytes) MB_CALL_CUDA(cudaMemcpy(b->p, h, bytes, cudaMemcpyHostToDevice));
  return MB_SUCCESS;
}

/* sqrt of the exact sum of squares of device x[n] (this device only). */
mb_error norm2(mb_reduce_device *rd, int32_t n, const double *x, double *out) {
  mb_reduce_acc acc;
  mb_reduce_acc_zero(&acc);
  MB_CALL(mb_reduce_device_acc(rd, NULL, n, x, x, &acc));
  *out = sqrt(mb_reduce_acc_value(&acc));
  return MB_SUCCESS;
}

/* The order and the permuted pattern; the analysis. */
mb_error setup(const mb_csr *A, mb_cuda_cholesky *ch) {
  const int32_t n = A->nrows, nnz = A->nnz;
  ch->n = n;
  ch->nnz = nnz;
  /* METIS_NodeND on A's graph (no self loops) */
  std::vector<idx_t> xadj((size_t)n + 1, 0), adjncy, perm((size_t)n), iperm((size_t)n);
  adjncy.reserve((size_t)nnz);
  for (int32_t i = 0; i < n; i++) {
    for (int32_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
      if (A->col[k] != i) adjncy.push_back((idx_t)A->col[k]);
    xadj[(size_t)i + 1] = (idx_t)adjncy.size();
  }
  if (n > 0) {
    idx_t options[METIS_NOPTIONS], nv = n;
    METIS_SetDefaultOptions(options);
    options[METIS_OPTION_NUMBERING] = 0;
    const int st = METIS_NodeND(&nv, xadj.data(), adjncy.data(), NULL, options, perm.data(),
                                iperm.data());
    MB_CHECK(st == METIS_OK, MB_ERR_UNSUPPORTED,
             "METIS_NodeND failed (status %d) ordering a %d-row matrix", st, n);
  }
  /* row i of P A P^T is row perm[i] of A; its columns iperm[col], ascending */
  std::vector<int32_t> prow((size_t)n + 1, 0), pcol((size_t)nnz), psrc((size_t)nnz),
      hperm((size_t)n);
  std::vector<std::pair<int32_t, int32_t>> rowbuf;
  for (int32_t i = 0; i < n; i++) {
    const int32_t r = (int32_t)perm[(size_t)i];
    hperm[(size_t)i] = r;
    rowbuf.clear();
    for (int32_t k = A->rowptr[r]; k < A->rowptr[r + 1]; k++)
      rowbuf.emplace_back((int32_t)iperm[(size_t)A->col[k]], k);
    std::sort(rowbuf.begin(), rowbuf.end());
    int32_t o = prow[(size_t)i];
    for (auto &e : rowbuf) {
      pcol[(size_t)o] = e.first;
      psrc[(size_t)o] = e.second;
      o++;
    }
    prow[(size_t)i + 1] = o;
  }
  MB_CALL(upload(&ch->rowptr, prow.data(), 4 * ((size_t)n + 1), "Cholesky row pointers"));
  MB_CALL(upload(&ch->col, pcol.data(), 4 * (size_t)nnz, "Cholesky columns"));
  MB_CALL(upload(&ch->src, psrc.data(), 4 * (size_t)nnz, "Cholesky source slots"));
  MB_CALL(upload(&ch->perm, hperm.data(), 4 * (size_t)n, "Cholesky order"));
  MB_CALL(mb_dbuf_alloc(&ch->val, 8 * (size_t)nnz, "Cholesky values"));
  MB_CALL(mb_dbuf_alloc(&ch->bp, 8 * (size_t)n, "Cholesky right-hand side"));
  MB_CALL(mb_dbuf_alloc(&ch->xp, 8 * (size_t)n, "Cholesky solution"));
  MB_CALL(mb_dbuf_alloc(&ch->r, 8 * (size_t)n, "Cholesky residual"));
  MB_CALL(mb_dbuf_alloc(&ch->flag, sizeof(int32_t), "Cholesky flag"));
  MB_CALL(mb_reduce_device_create(&ch->rd));
  /* symbolic analysis, once for the pattern */
  MB_CALL_CUSOLVER(cusolverSpCreate(&ch->h));
  MB_CALL_CUSPARSE(cusparseCreateMatDescr(&ch->descr));
  MB_CALL_CUSPARSE(cusparseSetMatType(ch->descr, CUSPARSE_MATRIX_TYPE_GENERAL));
  MB_CALL_CUSPARSE(cusparseSetMatIndexBase(ch->descr, CUSPARSE_INDEX_BASE_ZERO));
  MB_CALL_CUSOLVER(cusolverSpCreateCsrcholInfo(&ch->info));
  if (n > 0) {
    MB_CALL_CUDA(cudaDeviceSynchronize());
    const auto t0 = clk::now();
    MB_CALL_CUSOLVER(cusolverSpXcsrcholAnalysis(ch->h, n, nnz, ch->descr,
                                                ch->rowptr.as<int32_t>(), ch->col.as<int32_t>(),
                                                ch->info));
    MB_CALL_CUDA(cudaDeviceSynchronize());
    ch->analyze_ms = ms_since(t0);
  }
  return MB_SUCCESS;
}

} // namespace

extern "C" mb_error mb_cuda_cholesky_create(const mb_csr *A, mb_cuda_cholesky **chol) {
  MB_CHECK(A && chol, MB_ERR_ARG, "mb_cuda_cholesky_create: NULL argument");
  *chol = nullptr;
  MB_CHECK(A->nrows == A->ncols && A->nrows >= 0, MB_ERR_ARG,
           "sparse Cholesky on the GPU needs one rank's whole square matrix, not %d x %d "
           "(a partitioned pattern: use PCG)", A->nrows, A->ncols);
  mb_cuda_cholesky *ch = new (std::nothrow) mb_cuda_cholesky;
  MB_CHECK(ch, MB_ERR_MEMORY, "out of memory for a Cholesky factor");
  mb_error err = setup(A, ch);
  if (err != MB_SUCCESS) {
    mb_error_trace(__FILE__, __LINE__, __func__);
    delete ch;
    return err;
  }
  *chol = ch;
  return MB_SUCCESS;
}

extern "C" mb_error mb_cuda_cholesky_factor(mb_cuda_cholesky *ch, const mb_cuda_csr *dA,
                                            mb_solve_stats *stats) {
  MB_CHECK(ch && dA, MB_ERR_ARG, "mb_cuda_cholesky_factor: NULL argument");
  MB_CHECK(dA->nrows == ch->n && dA->ncols == ch->n && dA->nnz == ch->nnz, MB_ERR_ARG,
           "mb_cuda_cholesky_factor: a %d x %d matrix of %d entries for a factor of %d rows "
           "and %d entries", dA->nrows, dA->ncols, dA->nnz, ch->n, ch->nnz);
  ch->factored = 0;
  if (stats) {
    *stats = mb_solve_stats{};
    stats->method = MB_SOLVER_CHOLESKY;
    stats->analyze_ms = ch->analysis_reported ? 0.0 : ch->analyze_ms;
  }
  ch->analysis_reported = 1;
  const int32_t n = ch->n, nnz = ch->nnz;
  if (n == 0) {
    ch->factored = 1;
    return MB_SUCCESS;
  }
  MB_CALL_CUDA(cudaDeviceSynchronize());
  const auto t0 = clk::now();
  /* a diagonal that is not positive: not SPD, said plainly before csrchol */
  const int32_t none = INT32_MAX;
  int32_t bad = none;
  MB_CALL_CUDA(cudaMemcpy(ch->flag.p, &none, sizeof none, cudaMemcpyHostToDevice));
  k_check_diag<<<mb_la_grid(n), MB_LA_BLOCK>>>(n, ch->perm.as<int32_t>(), dA->diag.as<int32_t>(),
                                               dA->val.as<double>(), ch->flag.as<int32_t>());
  MB_CHECK_LAUNCH("Cholesky diagonal check");
  MB_CALL_CUDA(cudaMemcpy(&bad, ch->flag.p, sizeof bad, cudaMemcpyDeviceToHost));
  MB_CHECK(bad == none, MB_ERR_NUMERIC,
           "sparse Cholesky: the matrix is not positive definite: the diagonal entry of row %d "
           "is not a positive finite number", bad);
  k_gather_vals<<<mb_la_grid(nnz), MB_LA_BLOCK>>>(nnz, ch->src.as<int32_t>(),
                                                  dA->val.as<double>(), ch->val.as<double>());
  MB_CHECK_LAUNCH("Cholesky value gather");
  if (!ch->buf.p) {
    size_t internal = 0, work = 0;
    MB_CALL_CUSOLVER(cusolverSpDcsrcholBufferInfo(ch->h, n, nnz, ch->descr, ch->val.as<double>(),
                                                  ch->rowptr.as<int32_t>(),
                                                  ch->col.as<int32_t>(), ch->info, &internal,
                                                  &work));
    MB_CALL(mb_dbuf_alloc(&ch->buf, work, "csrchol workspace"));
  }
  MB_CALL_CUSOLVER(cusolverSpDcsrcholFactor(ch->h, n, nnz, ch->descr, ch->val.as<double>(),
                                            ch->rowptr.as<int32_t>(), ch->col.as<int32_t>(),
                                            ch->info, ch->buf.p));
  int pos = -1;
  MB_CALL_CUSOLVER(cusolverSpDcsrcholZeroPivot(ch->h, ch->info, 0.0, &pos));
  MB_CALL_CUDA(cudaDeviceSynchronize());
  if (pos >= 0) {
    int32_t orig = -1;
    MB_CALL_CUDA(cudaMemcpy(&orig, ch->perm.as<int32_t>() + pos, sizeof orig,
                            cudaMemcpyDeviceToHost));
    MB_FAIL(MB_ERR_NUMERIC,
            "sparse Cholesky: the matrix is not positive definite: zero pivot at row %d",
            orig);
  }
  if (stats) stats->factor_ms = ms_since(t0);
  ch->factored = 1;
  return MB_SUCCESS;
}

extern "C" mb_error mb_cuda_cholesky_solve(mb_cuda_cholesky *ch, int ncomp, const double *B,
                                           double *X, mb_solve_stats *stats) {
  MB_CHECK(ch && ncomp >= 1, MB_ERR_ARG, "mb_cuda_cholesky_solve: NULL factor or %d columns",
           ncomp);
  MB_CHECK(ch->factored, MB_ERR_ARG,
           "mb_cuda_cholesky_solve: not factored (mb_cuda_cholesky_factor failed or was not "
           "called)");
  const int32_t n = ch->n;
  MB_CHECK((B && X) || !n, MB_ERR_ARG, "mb_cuda_cholesky_solve: NULL vector");
  MB_CALL_CUDA(cudaDeviceSynchronize());
  const auto t0 = clk::now();
  double worst = 0;
  const unsigned g = mb_la_grid(n);
  for (int c = 0; c < ncomp && n; c++) {
    k_gather_col<<<g, MB_LA_BLOCK>>>(n, ncomp, c, ch->perm.as<int32_t>(), B, ch->bp.as<double>());
    MB_CHECK_LAUNCH("Cholesky column gather");
    MB_CALL_CUSOLVER(cusolverSpDcsrcholSolve(ch->h, n, ch->bp.as<double>(), ch->xp.as<double>(),
                                             ch->info, ch->buf.p));
    /* residual of the permuted system: the same norms as the original's */
    MB_CALL(mb_la_spmv_rows(n, ch->rowptr.as<int32_t>(), ch->col.as<int32_t>(),
                            ch->val.as<double>(), 1, ch->xp.as<double>(), ch->r.as<double>()));
    k_sub<<<g, MB_LA_BLOCK>>>(n, ch->bp.as<double>(), ch->r.as<double>());
    MB_CHECK_LAUNCH("Cholesky residual");
    double rn = 0, bn = 0;
    MB_CALL(norm2(ch->rd, n, ch->r.as<double>(), &rn));
    MB_CALL(norm2(ch->rd, n, ch->bp.as<double>(), &bn));
    MB_CHECK(isfinite(rn) && isfinite(bn), MB_ERR_NUMERIC,
             "sparse Cholesky: column %d's solution is not finite (the matrix is not positive "
             "definite, or the right-hand side is not finite)", c);
    const double rel = bn > 0 ? rn / bn : rn;
    worst = rel > worst ? rel : worst;
    k_scatter_col<<<g, MB_LA_BLOCK>>>(n, ncomp, c, ch->perm.as<int32_t>(), ch->xp.as<double>(), X);
    MB_CHECK_LAUNCH("Cholesky column scatter");
  }
  MB_CALL_CUDA(cudaDeviceSynchronize());
  if (stats) {
    stats->method = MB_SOLVER_CHOLESKY;
    stats->residual = worst;
    stats->solve_ms = ms_since(t0);
  }
  return MB_SUCCESS;
}

extern "C" void mb_cuda_cholesky_free(mb_cuda_cholesky *chol) { delete chol; }
