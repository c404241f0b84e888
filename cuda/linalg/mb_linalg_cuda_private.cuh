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

/* y [nrows, ncomp] = A x by the row kernel on raw device arrays (entry
 * order, unfused; each block's column indices and values first staged in
 * shared memory, coalesced), enqueued on the default stream. Errors: MB_ERR_CUDA. */
mb_error mb_la_spmv_rows(int32_t nrows, const int32_t *rowptr, const int32_t *col,
                         const double *val, int ncomp, const double *x, double *y);

/* y = A x on dA by its product rule (rows 1: the row kernel; 2: the row
 * kernel without the shared-memory staging, the same bits, for the
 * benchmark; 0: dA's product). */
mb_error mb_la_spmv(mb_cuda_csr *dA, int rows, int ncomp, const double *x, double *y);

#endif
