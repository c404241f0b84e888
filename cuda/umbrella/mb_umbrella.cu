/* meshbatch: the umbrella operator on the GPU (see
 * src/ops/umbrella/mb_umbrella.h): one thread per row, the neighbours'
 * differences added in the row's order and divided by the row's length,
 * as the CPU does (compiled with --fmad=false: no contraction). */
#include <cuda_runtime.h>

#include "mb_cuda_private.cuh"
#include "mb_umbrella.h"

__global__ void umbrella_kernel(int64_t nrows, const int64_t *__restrict__ row,
                                const int64_t *__restrict__ col, const double *__restrict__ x,
                                double *__restrict__ u) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= nrows) return;
  double s0 = 0.0, s1 = 0.0, s2 = 0.0;
  const double xi0 = x[3 * i], xi1 = x[3 * i + 1], xi2 = x[3 * i + 2];
  for (int64_t k = row[i]; k < row[i + 1]; k++) {
    const int64_t j = col[k];
    s0 += x[3 * j] - xi0;
    s1 += x[3 * j + 1] - xi1;
    s2 += x[3 * j + 2] - xi2;
  }
  const int64_t deg = row[i + 1] - row[i];
  u[3 * i] = deg ? s0 / (double)deg : 0.0;
  u[3 * i + 1] = deg ? s1 / (double)deg : 0.0;
  u[3 * i + 2] = deg ? s2 / (double)deg : 0.0;
}

/* Device copies of the arrays (freed by the caller, also after a failure). */
struct umbrella_buffers {
  int64_t *row, *col;
  double *x, *u;
};

static mb_error umbrella_on_device(umbrella_buffers *b, int64_t nrows, const int64_t *row,
                                   const int64_t *col, int64_t nx, const double *x, double *u) {
  const int64_t nnz = row[nrows];
  MB_CALL_CUDA(cudaMalloc((void **)&b->row, sizeof(int64_t) * (size_t)(nrows + 1)));
  MB_CALL_CUDA(cudaMalloc((void **)&b->col, sizeof(int64_t) * (size_t)(nnz ? nnz : 1)));
  MB_CALL_CUDA(cudaMalloc((void **)&b->x, sizeof(double) * 3 * (size_t)nx));
  MB_CALL_CUDA(cudaMalloc((void **)&b->u, sizeof(double) * 3 * (size_t)nrows));
  MB_CALL_CUDA(cudaMemcpy(b->row, row, sizeof(int64_t) * (size_t)(nrows + 1),
                          cudaMemcpyHostToDevice));
  MB_CALL_CUDA(cudaMemcpy(b->col, col, sizeof(int64_t) * (size_t)nnz, cudaMemcpyHostToDevice));
  MB_CALL_CUDA(cudaMemcpy(b->x, x, sizeof(double) * 3 * (size_t)nx, cudaMemcpyHostToDevice));
  umbrella_kernel<<<(unsigned)((nrows + 255) / 256), 256>>>(nrows, b->row, b->col, b->x, b->u);
  MB_CHECK_LAUNCH("umbrella");
  MB_CALL_CUDA(cudaMemcpy(u, b->u, sizeof(double) * 3 * (size_t)nrows, cudaMemcpyDeviceToHost));
  return MB_SUCCESS;
}

extern "C" mb_error mb_umbrella_rows_cuda(int64_t nrows, const int64_t *row, const int64_t *col,
                                          int64_t nx, const double *x, double *u) {
  if (nrows == 0) return MB_SUCCESS;
  umbrella_buffers b = {};
  const mb_error e = umbrella_on_device(&b, nrows, row, col, nx, x, u);
  cudaFree(b.row);
  cudaFree(b.col);
  cudaFree(b.x);
  cudaFree(b.u);
  return e;
}
