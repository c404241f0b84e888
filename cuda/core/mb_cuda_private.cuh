/* meshbatch: private helpers of the CUDA backend (cuda/*.cu only).
 *
 *  - MB_CALL_CUDA / MB_CHECK_LAUNCH: turn a failed CUDA runtime call (or a
 *    failed kernel launch) into MB_ERR_CUDA with the CUDA error name and
 *    string, recorded through mb_error_set like every other meshbatch error;
 *  - mb_dbuf: an owning device buffer, freed when it leaves scope, so that
 *    every return path (errors included) releases device memory;
 *  - mb_ro: a read-only accessor that loads through the non-coherent
 *    (texture/L1) path with __ldg; it is passed where MB_SMOOTH_VERTEX
 *    indexes an input array, so the shared macro needs no CUDA-specific code.
 */
#ifndef MB_CUDA_PRIVATE_CUH
#define MB_CUDA_PRIVATE_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "mb_error.h"

/* Return MB_ERR_CUDA (with the CUDA error text) if a CUDA runtime call fails.
 * The sticky-error state of a failed launch is left to the caller. */
#define MB_CALL_CUDA(expr)                                                     \
  do {                                                                         \
    cudaError_t mb_cuda_err_ = (expr);                                         \
    if (mb_cuda_err_ != cudaSuccess)                                           \
      return mb_error_set(MB_ERR_CUDA, __FILE__, __LINE__, __func__,           \
                          "CUDA call failed: %s: %s (%s)", #expr,              \
                          cudaGetErrorString(mb_cuda_err_),                    \
                          cudaGetErrorName(mb_cuda_err_));                     \
  } while (0)

/* Check the last error after a kernel launch (configuration and launch
 * failures); asynchronous execution errors surface at the next synchronizing
 * call, which is itself wrapped in MB_CALL_CUDA. */
#define MB_CHECK_LAUNCH(what)                                                  \
  do {                                                                         \
    cudaError_t mb_cuda_err_ = cudaGetLastError();                             \
    if (mb_cuda_err_ != cudaSuccess)                                           \
      return mb_error_set(MB_ERR_CUDA, __FILE__, __LINE__, __func__,           \
                          "CUDA kernel launch failed (%s): %s (%s)", (what),   \
                          cudaGetErrorString(mb_cuda_err_),                    \
                          cudaGetErrorName(mb_cuda_err_));                     \
  } while (0)

/* Enqueue on stream one NCCL group of ncclSend/ncclRecv with every halo
 * neighbour: send [rows, ncomp] and recv [rows, ncomp] are device buffers in
 * the halo plan's order (see mb_halo_neighbors). Defined in mb_nccl.cu.
 * Errors: MB_ERR_CUDA (NCCL failure), MB_ERR_UNSUPPORTED (built without NCCL). */
struct mb_nccl;
mb_error mb_nccl_exchange(mb_nccl *nccl, cudaStream_t stream, int ncomp, const double *send,
                          double *recv, int nneighbors, const int *ranks,
                          const int64_t *send_offset, const int64_t *recv_offset);

/* One message of an NCCL group: `bytes` of device memory at buf sent to
 * or received from `peer` (a rank of the communicator). */
struct mb_nccl_msg {
  int peer;
  int send; /* 1 send, 0 receive */
  void *buf;
  size_t bytes;
};

/* Enqueue on stream one NCCL group of the n messages, in their order
 * (messages between two ranks match in the order they are posted).
 * Defined in mb_nccl.cu. Errors: MB_ERR_CUDA (NCCL failure),
 * MB_ERR_UNSUPPORTED (built without NCCL). */
mb_error mb_nccl_group(mb_nccl *nccl, cudaStream_t stream, int n, const mb_nccl_msg *msgs);

/* An owning device allocation (C++ RAII, so early returns free it). */
struct mb_dbuf {
  void *p = nullptr;
  size_t bytes = 0;
  mb_dbuf() = default;
  mb_dbuf(const mb_dbuf &) = delete;
  mb_dbuf &operator=(const mb_dbuf &) = delete;
  ~mb_dbuf() { release(); }
  void release() {
    if (p) cudaFree(p);
    p = nullptr;
    bytes = 0;
  }
  template <typename T> T *as() const { return static_cast<T *>(p); }
};

/* Allocate `bytes` (at least 1) of device memory into b. A failed allocation
 * is MB_ERR_MEMORY (out of device memory) or MB_ERR_CUDA (anything else). */
static inline mb_error mb_dbuf_alloc(mb_dbuf *b, size_t bytes, const char *what) {
  b->release();
  cudaError_t e = cudaMalloc(&b->p, bytes ? bytes : 1);
  if (e != cudaSuccess) {
    b->p = nullptr;
    (void)cudaGetLastError(); /* an allocation failure is not sticky: clear it */
    return mb_error_set(e == cudaErrorMemoryAllocation ? MB_ERR_MEMORY : MB_ERR_CUDA, __FILE__,
                        __LINE__, __func__,
                        "cannot allocate %zu bytes of device memory for %s: %s (%s)", bytes, what,
                        cudaGetErrorString(e), cudaGetErrorName(e));
  }
  b->bytes = bytes;
  return MB_SUCCESS;
}

/* A non-blocking stream of the device's highest priority, for halo
 * exchanges: their pack, NCCL and unpack kernels then take SMs ahead of the
 * waiting blocks of the interior kernel they overlap (without it, a 1024^3
 * heat step on 2 H200s waited for the exchange: 1.62 ms per step against
 * 1.29 ms of interior). Caller destroys *s. */
static inline mb_error mb_stream_create_urgent(cudaStream_t *s) {
  int least = 0, greatest = 0;
  MB_CALL_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  MB_CALL_CUDA(cudaStreamCreateWithPriority(s, cudaStreamNonBlocking, greatest));
  return MB_SUCCESS;
}

/* Read-only global-memory accessor: a[k] loads through __ldg (ld.global.nc).
 * Valid only for data that no thread writes during the kernel. */
template <typename T> struct mb_ro {
  const T *__restrict__ p;
  __device__ __forceinline__ T operator[](int64_t k) const { return __ldg(p + k); }
};

#endif
