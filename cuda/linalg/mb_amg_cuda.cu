/* meshbatch: the smoothed-aggregation AMG V-cycle on the GPU (linalg
 * layer; contract: cuda/linalg/mb_linalg_cuda.h, method: linalg/mb_amg.h,
 * Vanek, Mandel, Brezina, Computing 56, 1996).
 *
 * The hierarchy's structure (aggregates, prolongators P and R = P^T, the
 * patterns of A P and of the Galerkin products) is made once per pattern
 * on the host by mb_amg_create and uploaded. Per matrix, on the device:
 *   - the numeric products A_l P_l and R_l (A_l P_l) on their fixed
 *     patterns, each entry summed in the host's order (the left factor's
 *     row entries, then the right factor's), so the coarse matrices are
 *     the host's bits: one thread per row where rows are short, else 4 to
 *     32 threads per row, each computing whole entries (a thread per row
 *     of the few long rows of the coarse levels took 10 ms on 550 rows);
 *     then the lower triangle copied from the upper (the host's
 *     symmetrisation);
 *   - each level's D^-1 and its Gershgorin bound rho (the maximum taken
 *     per block, then one atomic per block; one download of all levels'
 *     bounds, from which the host forms the Chebyshev coefficients,
 *     mb_amg_chebyshev);
 *   - the coarsest matrix (at most max_coarse rows) densified, factored
 *     (cusolverDnDpotrf) and inverted (cusolverDnDpotri), so that each
 *     cycle's coarse solve is one dense product instead of two triangular
 *     solves of little parallelism.
 * The cycle (mb_cuda_amg_apply) is the host's (linalg/mb_amg.c): Chebyshev
 * smoothing before and after the coarse correction, the products by the
 * staged row kernel on the finest level (mb_la_rows_staged, its epilogue
 * fused with the vector step after it; the degree-2 smoothing from zero
 * is one product) and by 4 to 32 threads per row on the coarse ones. The
 * cycle's ~40 kernels are captured once per update as a CUDA graph and
 * replayed on the default stream with no host synchronisation, so the
 * PCG can queue it inside its iterations (the graph saved 1-1.5 ms of a
 * 40 ms step on the H100: the coarse levels' kernels are short).
 */
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <chrono>
#include <vector>

#include "mb_amg.h"
#include "mb_linalg_cuda_private.cuh"


namespace {

/* A host CSR matrix's copy on the device. */
struct dcsr {
  int32_t nrows = 0, ncols = 0, nnz = 0;
  mb_dbuf rowptr, col, val;
  const int32_t *rp() const { return rowptr.as<int32_t>(); }
  const int32_t *cl() const { return col.as<int32_t>(); }
  double *v() const { return val.as<double>(); }
};

mb_error upload(const mb_csr *h, dcsr *d, const char *what) {
  d->nrows = h->nrows;
  d->ncols = h->ncols;
  d->nnz = h->nnz;
  const size_t nz = (size_t)(h->nnz ? h->nnz : 1);
  MB_CALL(mb_dbuf_alloc(&d->rowptr, sizeof(int32_t) * ((size_t)h->nrows + 1), what));
  MB_CALL(mb_dbuf_alloc(&d->col, sizeof(int32_t) * nz, what));
  MB_CALL(mb_dbuf_alloc(&d->val, sizeof(double) * nz, what));
  MB_CALL_CUDA(cudaMemcpy(d->rowptr.p, h->rowptr, sizeof(int32_t) * ((size_t)h->nrows + 1),
                          cudaMemcpyHostToDevice));
  MB_CALL_CUDA(cudaMemcpy(d->col.p, h->col, sizeof(int32_t) * (size_t)h->nnz,
                          cudaMemcpyHostToDevice));
  MB_CALL_CUDA(cudaMemcpy(d->val.p, h->val, sizeof(double) * (size_t)h->nnz,
                          cudaMemcpyHostToDevice));
  return MB_SUCCESS;
}

/* Per level, what the device writes at each update and the host reads. */
struct level_info {
  unsigned long long rho; /* bits of the Gershgorin bound (non-negative) */
  int32_t bad;            /* first row with a diagonal <= 0 or a non-finite sum */
  int32_t pad;
};

/* A matrix of the cycle on the device and its threads per row. */
struct op_matrix {
  int32_t n = 0;
  const int32_t *rp = nullptr, *cl = nullptr;
  const double *v = nullptr;
  int lanes = 1;
};

struct glevel {
  int32_t n = 0;
  /* the level's matrix: the finest level's arrays are the PCG matrix's
   * (borrowed), the coarse levels' are A (owned) */
  const int32_t *rowptr = nullptr, *col = nullptr, *diag = nullptr;
  const double *val = nullptr;
  dcsr A, P, R, AP;
  mb_dbuf diagbuf, sym;
  mb_dbuf dinv, x, b, r, q, d; /* [n], then work [n, MB_AMG_MAX_COMP] */
  op_matrix opA, opR, opP;     /* the products of the cycle */
  double d0 = 0, c1[4] = {0, 0, 0, 0}, c2[4] = {0, 0, 0, 0};
};

/* C = A B on C's fixed pattern (columns ascending within C's rows): one
 * thread per row, the host's order of sums (linalg/mb_amg.c,
 * spgemm_numeric). */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_product(int32_t m, const int32_t *__restrict__ arow, const int32_t *__restrict__ acol,
              const double *__restrict__ aval, const int32_t *__restrict__ brow,
              const int32_t *__restrict__ bcol, const double *__restrict__ bval,
              const int32_t *__restrict__ crow, const int32_t *__restrict__ ccol,
              double *__restrict__ cval) {
  const int32_t i = blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (i >= m) return;
  const int32_t c0 = crow[i], c1 = crow[i + 1];
  for (int32_t e = c0; e < c1; e++) cval[e] = 0.0;
  for (int32_t e = arow[i]; e < arow[i + 1]; e++) {
    const double a = aval[e];
    const int32_t k = acol[e];
    for (int32_t f = brow[k]; f < brow[k + 1]; f++) {
      const int32_t j = bcol[f];
      int32_t lo = c0, hi = c1;
      while (lo < hi) {
        const int32_t mid = lo + (hi - lo) / 2;
        if (ccol[mid] < j) lo = mid + 1;
        else hi = mid;
      }
      const double t = a * bval[f];
      cval[lo] = cval[lo] + t;
    }
  }
}

/* The same product with LANES threads per row of C, for long rows: lane l
 * computes C's entries l, l + LANES, ... of the row, each as the sum over
 * A's row entries in order of a_ik b_kj (b_kj found by bisection in B's
 * row k; a term is absent where B's row has no column j). That is each
 * entry's order of terms in the host's loop, so the same bits. */
template <int LANES>
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_product_lanes(int32_t m, const int32_t *__restrict__ arow, const int32_t *__restrict__ acol,
                    const double *__restrict__ aval, const int32_t *__restrict__ brow,
                    const int32_t *__restrict__ bcol, const double *__restrict__ bval,
                    const int32_t *__restrict__ crow, const int32_t *__restrict__ ccol,
                    double *__restrict__ cval) {
  const int64_t t = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  const int64_t i = t / LANES;
  const int lane = (int)(t % LANES);
  if (i >= m) return;
  const int32_t a0 = arow[i], a1 = arow[i + 1];
  for (int32_t c = crow[i] + lane; c < crow[i + 1]; c += LANES) {
    const int32_t j = ccol[c];
    double s = 0.0;
    for (int32_t e = a0; e < a1; e++) {
      const int32_t k = acol[e];
      int32_t lo = brow[k], hi = brow[k + 1];
      while (lo < hi) {
        const int32_t mid = lo + (hi - lo) / 2;
        if (bcol[mid] < j) lo = mid + 1;
        else hi = mid;
      }
      if (lo < brow[k + 1] && bcol[lo] == j) {
        const double p = aval[e] * bval[lo];
        s = s + p;
      }
    }
    cval[c] = s;
  }
}

/* The lower triangle from the upper (sym: each entry's transpose). */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_symmetrise(int32_t n, const int32_t *__restrict__ rowptr, const int32_t *__restrict__ col,
                 const int32_t *__restrict__ sym, double *__restrict__ val) {
  const int32_t i = blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (i >= n) return;
  for (int32_t e = rowptr[i]; e < rowptr[i + 1]; e++)
    if (col[e] > i) val[sym[e]] = val[e];
}

/* dinv = 1 / a_ii and the bound max_i sum_j |a_ij| / a_ii (entry order,
 * as the host's level_values); the first bad row. The bound's maximum is
 * taken in the block first (a warp shuffle, then shared memory), then one
 * atomic per block: a maximum in any order is the same value. */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_level_diag(int32_t n, const int32_t *__restrict__ rowptr, const int32_t *__restrict__ diag,
                 const double *__restrict__ val, double *__restrict__ dinv,
                 level_info *__restrict__ info) {
  __shared__ unsigned long long wmax[MB_LA_BLOCK / 32];
  const int32_t i = blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  unsigned long long g = 0; /* bits of a non-negative double order as the value */
  if (i < n) {
    const double a = val[diag[i]];
    double s = 0.0;
    for (int32_t e = rowptr[i]; e < rowptr[i + 1]; e++) s += fabs(val[e]);
    if (!(a > 0) || !isfinite(s)) {
      atomicMin(&info->bad, i);
    } else {
      dinv[i] = 1.0 / a;
      g = (unsigned long long)__double_as_longlong(s / a);
    }
  }
  for (int off = 16; off; off >>= 1) {
    const unsigned long long o = __shfl_xor_sync(0xffffffffu, g, off);
    g = o > g ? o : g;
  }
  if ((threadIdx.x & 31) == 0) wmax[threadIdx.x / 32] = g;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < MB_LA_BLOCK / 32; w++) g = wmax[w] > g ? wmax[w] : g;
    if (g) atomicMax(&info->rho, g);
  }
}

/* The coarsest matrix into dense [n, n] (zeroed before). */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_densify(int32_t n, const int32_t *__restrict__ rowptr, const int32_t *__restrict__ col,
              const double *__restrict__ val, double *__restrict__ dense) {
  const int32_t i = blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (i >= n) return;
  for (int32_t e = rowptr[i]; e < rowptr[i + 1]; e++) dense[(int64_t)col[e] * n + i] = val[e];
}

/* The upper triangle of a column-major [n, n] from its lower one. */
__global__ void __launch_bounds__(MB_LA_BLOCK) k_fill_upper(int32_t n, double *__restrict__ a) {
  const int64_t k = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (k >= (int64_t)n * n) return;
  const int32_t i = (int32_t)(k % n), j = (int32_t)(k / n);
  if (i < j) a[k] = a[(int64_t)i * n + j];
}

/* y [n, nc] = inv x, inv symmetric [n, n]: one warp per row, the lanes'
 * partial sums in a fixed order then a fixed butterfly. */
template <int NC>
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_dense_apply(int32_t n, const double *__restrict__ inv, const double *__restrict__ x,
                  double *__restrict__ y) {
  const int64_t w = ((int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  if (w >= n) return;
  const double *row = inv + w * n; /* column w = row w */
  double s[NC];
  for (int c = 0; c < NC; c++) s[c] = 0.0;
  for (int32_t j = lane; j < n; j += 32) {
    const double a = row[j];
    for (int c = 0; c < NC; c++) {
      const double t = a * x[(int64_t)j * NC + c];
      s[c] = s[c] + t;
    }
  }
  for (int off = 16; off; off >>= 1)
    for (int c = 0; c < NC; c++) s[c] = s[c] + __shfl_xor_sync(0xffffffffu, s[c], off);
  if (lane == 0)
    for (int c = 0; c < NC; c++) y[w * NC + c] = s[c];
}

/* Chebyshev smoothing's vector steps (linalg/mb_amg.c, smooth), m = n nc. */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_cheb_zero(int64_t m, int nc, const double *__restrict__ b, const double *__restrict__ dinv,
                double d0, double *__restrict__ r, double *__restrict__ d,
                double *__restrict__ x) {
  const int64_t k = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (k >= m) return;
  const double bk = b[k], dk = (dinv[k / nc] * bk) * d0;
  r[k] = bk;
  d[k] = dk;
  x[k] = dk;
}

/* After r = b - A x (op_residual): d = dinv r d0, x += d. */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_cheb_first(int64_t m, int nc, const double *__restrict__ r, const double *__restrict__ dinv,
                 double d0, double *__restrict__ d, double *__restrict__ x) {
  const int64_t k = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (k >= m) return;
  const double dk = (dinv[k / nc] * r[k]) * d0;
  d[k] = dk;
  x[k] = x[k] + dk;
}

/* After r -= A d (op_minus): d = c1 d + c2 dinv r, x += d. */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_cheb_step(int64_t m, int nc, const double *__restrict__ r, const double *__restrict__ dinv,
                double c1, double c2, double *__restrict__ d, double *__restrict__ x) {
  const int64_t k = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (k >= m) return;
  const double a = c1 * d[k], b = c2 * (dinv[k / nc] * r[k]);
  const double dk = a + b;
  d[k] = dk;
  x[k] = x[k] + dk;
}

/* Degree-2 Chebyshev smoothing from x = 0 in one product (the host's
 * smooth with zero start, its steps in its order): with d = d0 D^-1 b
 * (k_cheb_d), r = b - A d, then d' = c1 d + c2 D^-1 r and x = d + d'. */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_cheb_d(int64_t m, int nc, const double *__restrict__ b, const double *__restrict__ dinv,
             double d0, double *__restrict__ d) {
  const int64_t k = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (k >= m) return;
  d[k] = (dinv[k / nc] * b[k]) * d0;
}

template <int NC> struct cheb_zero_out {
  const double *__restrict__ b, *__restrict__ dinv, *__restrict__ d;
  double c1, c2;
  double *__restrict__ x;
  __device__ __forceinline__ void operator()(int64_t i, const double *s) const {
#pragma unroll
    for (int c = 0; c < NC; c++) {
      const int64_t k = i * NC + c;
      const double r = b[k] - s[c];
      const double a = c1 * d[k], e = c2 * (dinv[i] * r);
      const double dk = a + e;
      x[k] = d[k] + dk;
    }
  }
};

/* What a product does with s = (M x)_i (mb_la_mode). */
enum op_mode { OP_SET = MB_LA_SET, OP_RESIDUAL = MB_LA_RESIDUAL, OP_ADD = MB_LA_ADD,
               OP_MINUS = MB_LA_MINUS };

/* The products of the cycle, M [n, *] CSR times x [*, NC]: LANES threads
 * per row (1: the staged row kernel, mb_la_rows_staged, entry order, the
 * host's bits; 4 to 32 for the
 * coarse levels' and R's longer rows: lane l sums entries l, l + LANES,
 * ..., then a fixed butterfly), the result combined with y (and b) by
 * MODE in the same kernel. */
template <int NC, int LANES, int MODE>
__global__ void __launch_bounds__(MB_LA_BLOCK)
    k_op(int32_t n, const int32_t *__restrict__ rowptr, const int32_t *__restrict__ col,
         const double *__restrict__ val, const double *__restrict__ x,
         const double *__restrict__ b, double *__restrict__ y) {
  const int64_t t = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  const int64_t i = t / LANES;
  const int lane = (int)(t % LANES);
  double s[NC];
  for (int c = 0; c < NC; c++) s[c] = 0.0;
  if (i < n)
    for (int32_t e = rowptr[i] + lane; e < rowptr[i + 1]; e += LANES) {
      const double a = val[e];
      const int64_t j = col[e];
      for (int c = 0; c < NC; c++) {
        const double p = a * x[j * NC + c];
        s[c] = s[c] + p;
      }
    }
  if (LANES > 1)
    for (int off = LANES / 2; off; off >>= 1)
      for (int c = 0; c < NC; c++) s[c] = s[c] + __shfl_xor_sync(0xffffffffu, s[c], off);
  if (i >= n || lane) return;
  for (int c = 0; c < NC; c++) {
    const int64_t k = i * NC + c;
    if (MODE == OP_SET) y[k] = s[c];
    else if (MODE == OP_RESIDUAL) y[k] = b[k] - s[c];
    else if (MODE == OP_ADD) y[k] = y[k] + s[c];
    else y[k] = y[k] - s[c];
  }
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

template <int NC, int LANES>
void launch_op(int mode, int32_t n, const int32_t *rp, const int32_t *cl, const double *v,
               const double *x, const double *b, double *y, cudaStream_t st) {
  const unsigned g = mb_la_grid((int64_t)n * LANES);
  if constexpr (LANES == 1) {
    switch (mode) {
#define MB_AMG_STAGED(MODE)                                                                    \
  mb_la_rows_staged<NC, 1><<<g, MB_LA_BLOCK, 0, st>>>(n, rp, cl, v, x,                         \
                                                      mb_la_out<NC, MODE>{b, y})
    case OP_SET: MB_AMG_STAGED(MB_LA_SET); break;
    case OP_RESIDUAL: MB_AMG_STAGED(MB_LA_RESIDUAL); break;
    case OP_ADD: MB_AMG_STAGED(MB_LA_ADD); break;
    default: MB_AMG_STAGED(MB_LA_MINUS); break;
#undef MB_AMG_STAGED
    }
  } else {
    switch (mode) {
    case OP_SET: k_op<NC, LANES, OP_SET><<<g, MB_LA_BLOCK, 0, st>>>(n, rp, cl, v, x, b, y); break;
    case OP_RESIDUAL:
      k_op<NC, LANES, OP_RESIDUAL><<<g, MB_LA_BLOCK, 0, st>>>(n, rp, cl, v, x, b, y);
      break;
    case OP_ADD: k_op<NC, LANES, OP_ADD><<<g, MB_LA_BLOCK, 0, st>>>(n, rp, cl, v, x, b, y); break;
    default: k_op<NC, LANES, OP_MINUS><<<g, MB_LA_BLOCK, 0, st>>>(n, rp, cl, v, x, b, y); break;
    }
  }
}

template <int NC>
void launch_op_nc(int lanes, int mode, int32_t n, const int32_t *rp, const int32_t *cl,
                  const double *v, const double *x, const double *b, double *y, cudaStream_t st) {
  switch (lanes) {
  case 1: launch_op<NC, 1>(mode, n, rp, cl, v, x, b, y, st); break;
  case 4: launch_op<NC, 4>(mode, n, rp, cl, v, x, b, y, st); break;
  case 8: launch_op<NC, 8>(mode, n, rp, cl, v, x, b, y, st); break;
  case 16: launch_op<NC, 16>(mode, n, rp, cl, v, x, b, y, st); break;
  default: launch_op<NC, 32>(mode, n, rp, cl, v, x, b, y, st); break;
  }
}

/* Threads per row for a matrix of nnz entries in n rows: one where rows
 * are short (the finest level, whose products keep the host's order),
 * else about half the mean row length, a power of two up to a warp. */
int lanes_for(int32_t n, int64_t nnz, int finest) {
  if (finest || n <= 0) return 1;
  const double mean = (double)nnz / (double)n;
  return mean < 6 ? 1 : mean < 12 ? 4 : mean < 24 ? 8 : mean < 48 ? 16 : 32;
}

mb_error apply_op(const op_matrix &M, int mode, int nc, const double *x, const double *b,
                  double *y, cudaStream_t st) {
  if (M.n <= 0) return MB_SUCCESS;
  switch (nc) {
  case 1: launch_op_nc<1>(M.lanes, mode, M.n, M.rp, M.cl, M.v, x, b, y, st); break;
  case 2: launch_op_nc<2>(M.lanes, mode, M.n, M.rp, M.cl, M.v, x, b, y, st); break;
  case 3: launch_op_nc<3>(M.lanes, mode, M.n, M.rp, M.cl, M.v, x, b, y, st); break;
  default: launch_op_nc<4>(M.lanes, mode, M.n, M.rp, M.cl, M.v, x, b, y, st); break;
  }
  MB_CHECK_LAUNCH("AMG product");
  return MB_SUCCESS;
}

} // namespace

struct mb_cuda_amg {
  int nlev = 0, degree = 2;
  int32_t nnz0 = 0;
  glevel lev[MB_AMG_MAX_LEVELS];
  mb_dbuf dense;   /* the coarsest level's inverse, column-major [nco, nco] */
  mb_dbuf info;    /* level_info [nlev], then the potrf/potri info (int32) */
  mb_dbuf dnwork;  /* cuSOLVER's workspace */
  int dnwork_len = 0;
  cusolverDnHandle_t dn = nullptr;
  int usable = 0;
  double update_ms = 0;
  /* The cycle as CUDA graphs (made at the first apply after an update for
   * the r, z and columns of that call; replayed while they recur; two kept,
   * so a caller alternating two solves, e.g. 4 columns then 3, captures
   * each once per update), and the stream the cycle's kernels are enqueued
   * on: the capture stream while a graph is made, else the default stream. */
  static constexpr int NGRAPH = 2;
  mutable cudaStream_t cur = nullptr, capture = nullptr;
  mutable cudaGraphExec_t exec[NGRAPH] = {};
  mutable const double *graph_r[NGRAPH] = {};
  mutable double *graph_z[NGRAPH] = {};
  mutable int graph_nc[NGRAPH] = {};
  mutable int graph_next = 0;
  void drop_graph() const {
    for (int i = 0; i < NGRAPH; i++) {
      if (exec[i]) cudaGraphExecDestroy(exec[i]);
      exec[i] = nullptr;
      graph_r[i] = nullptr;
      graph_z[i] = nullptr;
      graph_nc[i] = 0;
    }
    graph_next = 0;
  }
  ~mb_cuda_amg() {
    drop_graph();
    if (capture) cudaStreamDestroy(capture);
    if (dn) cusolverDnDestroy(dn);
  }
};

namespace {

mb_error alloc_work(glevel *L, const char *what) {
  const size_t n = (size_t)(L->n ? L->n : 1), nn = n * MB_AMG_MAX_COMP;
  MB_CALL(mb_dbuf_alloc(&L->dinv, sizeof(double) * n, what));
  mb_dbuf *w[] = {&L->x, &L->b, &L->r, &L->q, &L->d};
  for (mb_dbuf *b : w) MB_CALL(mb_dbuf_alloc(b, sizeof(double) * nn, what));
  return MB_SUCCESS;
}

mb_error create(const mb_amg *h, mb_cuda_csr *dA, mb_cuda_amg *g) {
  mb_amg_opts o;
  g->nlev = mb_amg_levels(h, &o);
  g->degree = o.degree;
  int32_t nr = 0, nc = 0, nnz = 0;
  mb_cuda_csr_shape(dA, &nr, &nc, &nnz);
  mb_amg_level_view v0;
  MB_CALL(mb_amg_level(h, 0, &v0));
  MB_CHECK(nr == nc && nr == v0.A->nrows && nnz == v0.A->nnz, MB_ERR_ARG,
           "mb_cuda_amg_create: the device matrix (%d x %d, %d entries) is not the hierarchy's "
           "(%d rows, %d entries)",
           nr, nc, nnz, v0.A->nrows, v0.A->nnz);
  g->nnz0 = nnz;
  for (int l = 0; l < g->nlev; l++) {
    mb_amg_level_view v;
    MB_CALL(mb_amg_level(h, l, &v));
    glevel *L = &g->lev[l];
    L->n = v.A->nrows;
    if (l == 0) {
      double *val = nullptr;
      const int32_t *rp = nullptr, *cl = nullptr, *dd = nullptr;
      mb_cuda_csr_arrays(dA, &rp, &cl, &dd, &val);
      L->rowptr = rp;
      L->col = cl;
      L->diag = dd;
      L->val = val;
    } else {
      MB_CALL(upload(v.A, &L->A, "AMG level matrix"));
      MB_CALL(mb_dbuf_alloc(&L->diagbuf, sizeof(int32_t) * (size_t)(L->n ? L->n : 1),
                            "AMG level diagonal"));
      MB_CALL_CUDA(cudaMemcpy(L->diagbuf.p, v.A->diag, sizeof(int32_t) * (size_t)L->n,
                              cudaMemcpyHostToDevice));
      MB_CALL(mb_dbuf_alloc(&L->sym, sizeof(int32_t) * (size_t)(v.A->nnz ? v.A->nnz : 1),
                            "AMG transpose map"));
      MB_CALL_CUDA(cudaMemcpy(L->sym.p, v.sym, sizeof(int32_t) * (size_t)v.A->nnz,
                              cudaMemcpyHostToDevice));
      L->rowptr = L->A.rp();
      L->col = L->A.cl();
      L->diag = L->diagbuf.as<int32_t>();
      L->val = L->A.v();
    }
    if (v.P) {
      MB_CALL(upload(v.P, &L->P, "AMG prolongator"));
      MB_CALL(upload(v.R, &L->R, "AMG restriction"));
      MB_CALL(upload(v.AP, &L->AP, "AMG product A P"));
    }
    MB_CALL(alloc_work(L, "AMG level vectors"));
    L->opA = op_matrix{L->n, L->rowptr, L->col, L->val,
                       lanes_for(L->n, v.A->nnz, l == 0)};
    if (v.P) {
      L->opR = op_matrix{L->R.nrows, L->R.rp(), L->R.cl(), L->R.v(),
                         lanes_for(L->R.nrows, L->R.nnz, 0)};
      L->opP = op_matrix{L->P.nrows, L->P.rp(), L->P.cl(), L->P.v(),
                         lanes_for(L->P.nrows, L->P.nnz, 0)};
    }
  }
  const int32_t nco = g->lev[g->nlev - 1].n;
  MB_CALL(mb_dbuf_alloc(&g->dense, sizeof(double) * (size_t)nco * (size_t)nco,
                        "AMG coarse inverse"));
  MB_CALL(mb_dbuf_alloc(&g->info, sizeof(level_info) * (size_t)(g->nlev + 1), "AMG level info"));
  if (!g->dn) MB_CALL_CUSOLVER(cusolverDnCreate(&g->dn));
  int l1 = 0, l2 = 0;
  MB_CALL_CUSOLVER(cusolverDnDpotrf_bufferSize(g->dn, CUBLAS_FILL_MODE_LOWER, nco,
                                                  g->dense.as<double>(), nco, &l1));
  MB_CALL_CUSOLVER(cusolverDnDpotri_bufferSize(g->dn, CUBLAS_FILL_MODE_LOWER, nco,
                                                  g->dense.as<double>(), nco, &l2));
  g->dnwork_len = l1 > l2 ? l1 : l2;
  MB_CALL(mb_dbuf_alloc(&g->dnwork, sizeof(double) * (size_t)(g->dnwork_len ? g->dnwork_len : 1),
                        "AMG coarse factor workspace"));
  return MB_SUCCESS;
}

/* C = A B (m rows) on C's pattern: one thread per row where C's rows are
 * short, else 4 to 32 lanes per row (lanes_for). The same bits either way. */
mb_error product(int32_t m, const int32_t *arow, const int32_t *acol, const double *aval,
                 const dcsr &B, const dcsr &C, const char *what) {
  if (m <= 0) return MB_SUCCESS;
  const int lanes = lanes_for(m, C.nnz, 0);
  const unsigned g = mb_la_grid((int64_t)m * lanes);
#define MB_AMG_PRODUCT_ARGS m, arow, acol, aval, B.rp(), B.cl(), B.v(), C.rp(), C.cl(), C.v()
  switch (lanes) {
  case 1: k_product<<<g, MB_LA_BLOCK>>>(MB_AMG_PRODUCT_ARGS); break;
  case 4: k_product_lanes<4><<<g, MB_LA_BLOCK>>>(MB_AMG_PRODUCT_ARGS); break;
  case 8: k_product_lanes<8><<<g, MB_LA_BLOCK>>>(MB_AMG_PRODUCT_ARGS); break;
  case 16: k_product_lanes<16><<<g, MB_LA_BLOCK>>>(MB_AMG_PRODUCT_ARGS); break;
  default: k_product_lanes<32><<<g, MB_LA_BLOCK>>>(MB_AMG_PRODUCT_ARGS); break;
  }
#undef MB_AMG_PRODUCT_ARGS
  MB_CHECK_LAUNCH(what);
  return MB_SUCCESS;
}

mb_error update(mb_cuda_amg *g, const mb_cuda_csr *dA) {
  int32_t nr = 0, nc = 0, nnz = 0;
  mb_cuda_csr_shape(dA, &nr, &nc, &nnz);
  MB_CHECK(nr == g->lev[0].n && nnz == g->nnz0, MB_ERR_ARG,
           "mb_cuda_amg_update: the matrix is not the one the hierarchy was built for");
  {
    const int32_t *rp = nullptr, *cl = nullptr, *dd = nullptr;
    double *val = nullptr;
    mb_cuda_csr_arrays(const_cast<mb_cuda_csr *>(dA), &rp, &cl, &dd, &val);
    MB_CHECK(val == g->lev[0].val, MB_ERR_ARG,
             "mb_cuda_amg_update: the matrix is not the one the hierarchy was built for");
  }
  std::vector<level_info> init((size_t)g->nlev + 1);
  for (auto &x : init) x = level_info{0ull, INT32_MAX, 0};
  MB_CALL_CUDA(cudaMemcpyAsync(g->info.p, init.data(), sizeof(level_info) * init.size(),
                               cudaMemcpyHostToDevice, nullptr));
  level_info *info = g->info.as<level_info>();
  for (int l = 0; l < g->nlev; l++) {
    glevel *L = &g->lev[l];
    if (l > 0) { /* A_l = R (A_{l-1} P) on fixed patterns, then symmetric */
      glevel *F = &g->lev[l - 1];
      MB_CALL(product(F->n, F->rowptr, F->col, F->val, F->P, F->AP, "AMG product A P"));
      MB_CALL(product(L->n, F->R.rp(), F->R.cl(), F->R.v(), F->AP, L->A, "AMG Galerkin product"));
      k_symmetrise<<<mb_la_grid(L->n), MB_LA_BLOCK>>>(L->n, L->A.rp(), L->A.cl(),
                                                      L->sym.as<int32_t>(), L->A.v());
      MB_CHECK_LAUNCH("AMG symmetrise");
    }
    k_level_diag<<<mb_la_grid(L->n), MB_LA_BLOCK>>>(L->n, L->rowptr, L->diag, L->val,
                                                    L->dinv.as<double>(), info + l);
    MB_CHECK_LAUNCH("AMG level diagonal");
    }
  /* the coarsest level: dense, factored, inverted */
  glevel *C = &g->lev[g->nlev - 1];
  const int32_t nco = C->n;
  double *dense = g->dense.as<double>();
  int *dninfo = (int *)(info + g->nlev);
  MB_CALL_CUDA(cudaMemsetAsync(dense, 0, sizeof(double) * (size_t)nco * nco, nullptr));
  k_densify<<<mb_la_grid(nco), MB_LA_BLOCK>>>(nco, C->rowptr, C->col, C->val, dense);
  MB_CHECK_LAUNCH("AMG coarse matrix");
  MB_CALL_CUSOLVER(cusolverDnDpotrf(g->dn, CUBLAS_FILL_MODE_LOWER, nco, dense, nco,
                                       g->dnwork.as<double>(), g->dnwork_len, dninfo));
  std::vector<level_info> got((size_t)g->nlev + 1);
  MB_CALL_CUDA(cudaMemcpy(got.data(), g->info.p, sizeof(level_info) * got.size(),
                          cudaMemcpyDeviceToHost));
  for (int l = 0; l < g->nlev; l++)
    if (got[(size_t)l].bad != INT32_MAX) {
      if (l == 0)
        MB_FAIL(MB_ERR_NUMERIC,
                "AMG: row %d has a diagonal entry <= 0 or a non-finite value: the matrix is not "
                "symmetric positive definite",
                got[0].bad);
      MB_FAIL(MB_ERR_NUMERIC,
              "AMG: row %d of level %d (a Galerkin product) has a diagonal entry <= 0 or a "
              "non-finite value: the matrix is not positive definite",
              got[(size_t)l].bad, l);
    }
  int potrf_info = 0;
  memcpy(&potrf_info, &got[(size_t)g->nlev], sizeof potrf_info);
  MB_CHECK(potrf_info == 0, MB_ERR_NUMERIC,
           "AMG: the coarsest level's matrix (%d rows) is not positive definite (cuSOLVER potrf "
           "info %d)",
           nco, potrf_info);
  MB_CALL_CUSOLVER(cusolverDnDpotri(g->dn, CUBLAS_FILL_MODE_LOWER, nco, dense, nco,
                                       g->dnwork.as<double>(), g->dnwork_len, dninfo));
  k_fill_upper<<<mb_la_grid((int64_t)nco * nco), MB_LA_BLOCK>>>(nco, dense);
  MB_CHECK_LAUNCH("AMG coarse inverse");
  for (int l = 0; l < g->nlev; l++) {
    double rho;
    memcpy(&rho, &got[(size_t)l].rho, sizeof rho);
    mb_amg_chebyshev(rho, g->degree, &g->lev[l].d0, g->lev[l].c1, g->lev[l].c2);
  }
  return MB_SUCCESS;
}

/* x += S (b - A x) on level L (zero: x = 0 on entry), nc columns: the
 * host's smooth (linalg/mb_amg.c), its products fused with the vector
 * step that follows them. */
mb_error smooth(const mb_cuda_amg *g, const glevel *L, int nc, const double *b, double *x,
                int zero) {
  const int64_t m = (int64_t)L->n * nc;
  const unsigned grid = mb_la_grid(m);
  double *r = L->r.as<double>(), *d = L->d.as<double>();
  const double *dinv = L->dinv.as<double>();
  if (zero && g->degree == 2 && L->opA.lanes == 1) { /* one product, fused */
    k_cheb_d<<<grid, MB_LA_BLOCK, 0, g->cur>>>(m, nc, b, dinv, L->d0, d);
    MB_CHECK_LAUNCH("AMG smoother");
    const unsigned gr = mb_la_grid(L->n);
    const op_matrix &A = L->opA;
    switch (nc) {
#define MB_AMG_CASE(NC)                                                                        \
  case NC:                                                                                     \
    mb_la_rows_staged<NC, 1><<<gr, MB_LA_BLOCK, 0, g->cur>>>(                                  \
        A.n, A.rp, A.cl, A.v, d, cheb_zero_out<NC>{b, dinv, d, L->c1[1], L->c2[1], x});        \
    break;
      MB_AMG_CASE(1) MB_AMG_CASE(2) MB_AMG_CASE(3) MB_AMG_CASE(4)
#undef MB_AMG_CASE
    }
    MB_CHECK_LAUNCH("AMG smoother");
    return MB_SUCCESS;
  }
  if (zero) {
    k_cheb_zero<<<grid, MB_LA_BLOCK, 0, g->cur>>>(m, nc, b, dinv, L->d0, r, d, x);
  } else {
    MB_CALL(apply_op(L->opA, OP_RESIDUAL, nc, x, b, r, g->cur));
    k_cheb_first<<<grid, MB_LA_BLOCK, 0, g->cur>>>(m, nc, r, dinv, L->d0, d, x);
  }
  MB_CHECK_LAUNCH("AMG smoother");
  for (int s = 1; s < g->degree; s++) {
    MB_CALL(apply_op(L->opA, OP_MINUS, nc, d, nullptr, r, g->cur));
    k_cheb_step<<<grid, MB_LA_BLOCK, 0, g->cur>>>(m, nc, r, dinv, L->c1[s], L->c2[s], d, x);
    MB_CHECK_LAUNCH("AMG smoother");
  }
  return MB_SUCCESS;
}

mb_error coarse_solve(const mb_cuda_amg *g, int nc, const double *b, double *x) {
  const int32_t n = g->lev[g->nlev - 1].n;
  const unsigned grid = mb_la_grid((int64_t)n * 32);
  const double *inv = g->dense.as<double>();
  switch (nc) {
  case 1: k_dense_apply<1><<<grid, MB_LA_BLOCK, 0, g->cur>>>(n, inv, b, x); break;
  case 2: k_dense_apply<2><<<grid, MB_LA_BLOCK, 0, g->cur>>>(n, inv, b, x); break;
  case 3: k_dense_apply<3><<<grid, MB_LA_BLOCK, 0, g->cur>>>(n, inv, b, x); break;
  default: k_dense_apply<4><<<grid, MB_LA_BLOCK, 0, g->cur>>>(n, inv, b, x); break;
  }
  MB_CHECK_LAUNCH("AMG coarse solve");
  return MB_SUCCESS;
}

mb_error vcycle(const mb_cuda_amg *g, int l, int nc, const double *b, double *x) {
  if (l == g->nlev - 1) return coarse_solve(g, nc, b, x);
  const glevel *L = &g->lev[l], *C = &g->lev[l + 1];
  double *r = L->r.as<double>();
  MB_CALL(smooth(g, L, nc, b, x, 1));
  /* the coarse correction: x += P A_c^-1 R (b - A x) */
  MB_CALL(apply_op(L->opA, OP_RESIDUAL, nc, x, b, r, g->cur));
  MB_CALL(apply_op(L->opR, OP_SET, nc, r, nullptr, C->b.as<double>(), g->cur));
  MB_CALL(vcycle(g, l + 1, nc, C->b.as<double>(), C->x.as<double>()));
  MB_CALL(apply_op(L->opP, OP_ADD, nc, C->x.as<double>(), nullptr, x, g->cur));
  return smooth(g, L, nc, b, x, 0);
}

} // namespace

extern "C" mb_error mb_cuda_amg_create(const mb_amg *amg, mb_cuda_csr *dA, mb_cuda_amg **out) {
  MB_CHECK(amg && dA && out, MB_ERR_ARG, "mb_cuda_amg_create: NULL argument");
  *out = nullptr;
  mb_cuda_amg *g = new (std::nothrow) mb_cuda_amg;
  MB_CHECK(g, MB_ERR_MEMORY, "mb_cuda_amg_create: out of memory");
  const mb_error e = create(amg, dA, g);
  if (e) {
    delete g;
    return e;
  }
  *out = g;
  return MB_SUCCESS;
}

extern "C" mb_error mb_cuda_amg_update(mb_cuda_amg *g, const mb_cuda_csr *dA) {
  MB_CHECK(g && dA, MB_ERR_ARG, "mb_cuda_amg_update: NULL argument");
  const auto t0 = std::chrono::steady_clock::now();
  g->usable = 0;
  g->drop_graph(); /* the cycle's coefficients change */
  MB_CALL(update(g, dA));
  g->usable = 1;
  g->update_ms = ms_since(t0);
  return MB_SUCCESS;
}

extern "C" mb_error mb_cuda_amg_apply(const mb_cuda_amg *g, int ncomp, const double *r,
                                      double *z) {
  MB_CHECK(g && r && z && r != z, MB_ERR_ARG, "mb_cuda_amg_apply: NULL or aliased argument");
  MB_CHECK(ncomp >= 1 && ncomp <= MB_AMG_MAX_COMP, MB_ERR_ARG,
           "mb_cuda_amg_apply: %d columns (1 to %d are applied together)", ncomp,
           MB_AMG_MAX_COMP);
  MB_CHECK(g->usable, MB_ERR_ARG,
           "mb_cuda_amg_apply: the hierarchy is not usable (no successful update yet)");
  int k = 0;
  while (k < mb_cuda_amg::NGRAPH &&
         !(g->exec[k] && g->graph_r[k] == r && g->graph_z[k] == z && g->graph_nc[k] == ncomp))
    k++;
  if (k == mb_cuda_amg::NGRAPH) { /* not captured yet: into the next slot */
    k = g->graph_next;
    g->graph_next = (k + 1) % mb_cuda_amg::NGRAPH;
    if (g->exec[k]) cudaGraphExecDestroy(g->exec[k]);
    g->exec[k] = nullptr;
    if (!g->capture)
      MB_CALL_CUDA(cudaStreamCreateWithFlags(&g->capture, cudaStreamNonBlocking));
    MB_CALL_CUDA(cudaStreamBeginCapture(g->capture, cudaStreamCaptureModeThreadLocal));
    g->cur = g->capture;
    const mb_error e = vcycle(g, 0, ncomp, r, z);
    g->cur = nullptr;
    cudaGraph_t graph = nullptr;
    const cudaError_t ce = cudaStreamEndCapture(g->capture, &graph);
    if (e || ce != cudaSuccess) {
      if (graph) cudaGraphDestroy(graph);
      MB_CALL(e);
      MB_CALL_CUDA(ce);
    }
    const cudaError_t ie = cudaGraphInstantiate(&g->exec[k], graph, 0);
    cudaGraphDestroy(graph);
    if (ie != cudaSuccess) g->exec[k] = nullptr;
    MB_CALL_CUDA(ie);
    g->graph_r[k] = r;
    g->graph_z[k] = z;
    g->graph_nc[k] = ncomp;
  }
  MB_CALL_CUDA(cudaGraphLaunch(g->exec[k], nullptr));
  return MB_SUCCESS;
}

extern "C" int32_t mb_cuda_amg_rows(const mb_cuda_amg *g) { return g ? g->lev[0].n : 0; }

extern "C" double mb_cuda_amg_update_ms(const mb_cuda_amg *g) { return g ? g->update_ms : 0; }

extern "C" void mb_cuda_amg_free(mb_cuda_amg *g) { delete g; }
