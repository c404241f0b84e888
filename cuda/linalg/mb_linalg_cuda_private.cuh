/* meshbatch: what the linalg layer's CUDA files share (cuda/linalg/*.cu
 * only): the device matrix, the cuSPARSE / cuSOLVER error macros, the row
 * product and a few vector kernels' launch helpers.
 */
#ifndef MB_LINALG_CUDA_PRIVATE_CUH
#define MB_LINALG_CUDA_PRIVATE_CUH

#include <cuda_runtime.h>
#include <cusparse.h>
#include <stdint.h>

#include "mb_cuda_private.cuh"
#include "mb_linalg_cuda.h"
#include "mb_reduce.h"

/* Threads per block of the linalg kernels. */
#define MB_LA_BLOCK 256
/* Most columns solved together (PCG, products). */
#define MB_LA_MAXCOMP 4

static inline unsigned mb_la_grid(int64_t n) {
  return (unsigned)((n + MB_LA_BLOCK - 1) / MB_LA_BLOCK);
}

/* Return MB_ERR_CUDA naming the cuSPARSE call and its status. */
#define MB_CALL_CUSPARSE(expr)                                                 \
  do {                                                                         \
    cusparseStatus_t mb_sp_st_ = (expr);                                       \
    if (mb_sp_st_ != CUSPARSE_STATUS_SUCCESS)                                  \
      return mb_error_set(MB_ERR_CUDA, __FILE__, __LINE__, __func__,           \
                          "cuSPARSE call failed: %s: %s (status %d)", #expr,   \
                          cusparseGetErrorString(mb_sp_st_), (int)mb_sp_st_);  \
  } while (0)

/* Return MB_ERR_CUDA naming the cuSOLVER call and its status. */
#define MB_CALL_CUSOLVER(expr)                                                 \
  do {                                                                         \
    cusolverStatus_t mb_so_st_ = (expr);                                       \
    if (mb_so_st_ != CUSOLVER_STATUS_SUCCESS)                                  \
      return mb_error_set(MB_ERR_CUDA, __FILE__, __LINE__, __func__,           \
                          "cuSOLVER call failed: %s: status %d", #expr, (int)mb_so_st_); \
  } while (0)

struct mb_cuda_halo;

struct mb_cuda_csr {
  int32_t nrows = 0, ncols = 0, nnz = 0;
  mb_dbuf rowptr, col, diag, erow; /* int32: [nrows + 1], [nnz], [nrows], [nnz] row of entry */
  mb_dbuf val;                     /* double [nnz] */
  mb_dbuf opp_ptr, opp;            /* int32 [nnz + 1], [opp_ptr[nnz]]: opposites per entry */
  int has_adj = 0;
  mb_dbuf flag;                    /* int32 [4]: error flags of the kernels (first rows) */
  mb_cuda_product product = MB_CUDA_PRODUCT_ROWS;
  mb_halo_transport transport = MB_HALO_MPI;
  mb_nccl *nccl = nullptr;
  /* cuSPARSE state, made at the first cuSPARSE product and kept: the
   * matrix's descriptor (its arrays never move) and those of the last few
   * dense operands (x, y, columns), so a solver's products make none */
  cusparseHandle_t sp = nullptr;
  cusparseSpMatDescr_t spA = nullptr;
  struct dense_pair {
    const void *x = nullptr;
    void *y = nullptr;
    int ncomp = 0;
    cusparseDnMatDescr_t mx = nullptr, my = nullptr;
    cusparseDnVecDescr_t vx = nullptr, vy = nullptr;
  } dense[4];
  int dense_next = 0;
  mb_dbuf spbuf;
  /* the PCG's status, two pinned host copies and their events (made at the
   * first solve) */
  void *pcg_host = nullptr;
  cudaEvent_t pcg_ev[2] = {nullptr, nullptr};
  /* the device halo of the last partitioned PCG (plan and ncomp it was made for) */
  mb_cuda_halo *halo = nullptr;
  const mb_halo *halo_plan = nullptr;
  int halo_ncomp = 0;
  /* PCG scratch, grown as needed, and the exact reductions' device bins */
  mb_dbuf work;
  mb_reduce_device *rd = nullptr;
  ~mb_cuda_csr();
};

/* What a row product does with s = (A x)_i: set y = s, y = b - s, y += s
 * or y -= s (the vector step after it, fused). */
enum mb_la_mode { MB_LA_SET = 0, MB_LA_RESIDUAL = 1, MB_LA_ADD = 2, MB_LA_MINUS = 3 };

/* Entries of a block's rows staged in shared memory at a time. */
#define MB_LA_STAGE 2048

/* A load of the matrix's arrays: STREAM 1 marks it evict-first in the
 * caches (__ldcs: the matrix streams through once per product, so the
 * vector x it gathers from stays in L2), 0 an ordinary load. */
template <int STREAM, typename T> __device__ __forceinline__ T mb_la_ld(const T *p) {
  if (STREAM) return __ldcs(p);
  return *p;
}

/* What the staged row product does with row i's sums s[NC] = (A x)_i by
 * mode: y = s, y = b - s, y += s or y -= s (y, b [nrows, NC]). Other
 * epilogues (a functor with the same call) fuse other vector steps. */
template <int NC, int MODE> struct mb_la_out {
  const double *__restrict__ b;
  double *__restrict__ y;
  __device__ __forceinline__ void operator()(int64_t i, const double *s) const {
#pragma unroll
    for (int c = 0; c < NC; c++) {
      const int64_t k = i * NC + c;
      if (MODE == MB_LA_SET) y[k] = s[c];
      else if (MODE == MB_LA_RESIDUAL) y[k] = b[k] - s[c];
      else if (MODE == MB_LA_ADD) y[k] = y[k] + s[c];
      else y[k] = y[k] - s[c];
    }
  }
};

/* The staged row product, one thread per row: each block's column indices
 * and values are copied to shared memory by the whole block (coalesced, in
 * chunks of MB_LA_STAGE entries), then each thread sums its row in entry
 * order (the CPU's order: the same bits as mb_csr_spmv) and hands the sums
 * to out (mb_la_out or another epilogue). x [*, NC]. Launch with
 * MB_LA_BLOCK threads, mb_la_grid(nrows) blocks. */
template <int NC, int STREAM, class Out>
__global__ void __launch_bounds__(MB_LA_BLOCK)
    mb_la_rows_staged(int32_t nrows, const int32_t *__restrict__ rowptr,
                      const int32_t *__restrict__ col, const double *__restrict__ val,
                      const double *__restrict__ x, Out out) {
  __shared__ int32_t scol[MB_LA_STAGE];
  __shared__ double sval[MB_LA_STAGE];
  const int32_t r0 = blockIdx.x * MB_LA_BLOCK;
  const int32_t r1 = r0 + MB_LA_BLOCK < nrows ? r0 + MB_LA_BLOCK : nrows;
  const int32_t i = r0 + (int32_t)threadIdx.x;
  const int32_t e0 = rowptr[r0], e1 = rowptr[r1];
  const int32_t kb = i < nrows ? rowptr[i] : 0, ke = i < nrows ? rowptr[i + 1] : 0;
  double s[NC];
#pragma unroll
  for (int c = 0; c < NC; c++) s[c] = 0.0;
  for (int32_t base = e0; base < e1; base += MB_LA_STAGE) {
    const int32_t m = e1 - base < MB_LA_STAGE ? e1 - base : MB_LA_STAGE;
    __syncthreads();
    for (int32_t t = threadIdx.x; t < m; t += MB_LA_BLOCK) {
      scol[t] = mb_la_ld<STREAM>(col + base + t);
      sval[t] = mb_la_ld<STREAM>(val + base + t);
    }
    __syncthreads();
    const int32_t lo = kb > base ? kb : base, hi = ke < base + m ? ke : base + m;
    for (int32_t k = lo; k < hi; k++) {
      const double a = sval[k - base];
      const int64_t j = scol[k - base];
#pragma unroll
      for (int c = 0; c < NC; c++) {
        const double p = a * x[j * NC + c];
        s[c] += p;
      }
    }
  }
  if (i < nrows) out((int64_t)i, s);
}

/* y [nrows, ncomp] = A x by the row kernel on raw device arrays (entry
 * order, unfused; each block's column indices and values first staged in
 * shared memory, coalesced), enqueued on the default stream. Errors: MB_ERR_CUDA. */
mb_error mb_la_spmv_rows(int32_t nrows, const int32_t *rowptr, const int32_t *col,
                         const double *val, int ncomp, const double *x, double *y);

/* y = A x on dA by its product rule (rows 1: the row kernel; 2: the row
 * kernel without the shared-memory staging, 3: staged with ordinary
 * loads of the matrix, the same bits, for the benchmark; 0: dA's
 * product). */
mb_error mb_la_spmv(mb_cuda_csr *dA, int rows, int ncomp, const double *x, double *y);

#endif
