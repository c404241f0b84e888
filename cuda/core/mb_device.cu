/* meshbatch: CUDA devices (see mb_cuda.h). */
#include <cuda_runtime.h>
#include <stdio.h>

#include <algorithm>
#include <vector>

#include "mb_cuda.h"
#include "mb_cuda_private.cuh"

extern "C" int mb_cuda_compiled(void) { return 1; }

extern "C" int mb_cuda_device_count(char *why, size_t why_len) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    if (why && why_len)
      snprintf(why, why_len, "cudaGetDeviceCount failed: %s (%s)", cudaGetErrorString(e),
               cudaGetErrorName(e));
    return 0;
  }
  if (n <= 0) {
    if (why && why_len) snprintf(why, why_len, "no CUDA device found");
    return 0;
  }
  if (why && why_len) why[0] = '\0';
  return n;
}

extern "C" mb_error mb_cuda_select_device(int local_rank, int *device, char *name,
                                          size_t name_len) {
  char why[256];
  const int n = mb_cuda_device_count(why, sizeof why);
  MB_CHECK(n > 0, MB_ERR_UNSUPPORTED, "no usable CUDA device: %s", why);
  const int dev = ((local_rank % n) + n) % n;
  MB_CALL_CUDA(cudaSetDevice(dev));
  cudaDeviceProp prop;
  MB_CALL_CUDA(cudaGetDeviceProperties(&prop, dev));
  if (device) *device = dev;
  if (name && name_len) snprintf(name, name_len, "%s", prop.name);
  return MB_SUCCESS;
}

extern "C" mb_error mb_cuda_bind_device(int device) {
  MB_CALL_CUDA(cudaSetDevice(device));
  return MB_SUCCESS;
}

extern "C" mb_error mb_cuda_copy_bandwidth(size_t max_bytes, double *gbs) {
  size_t bytes = max_bytes;
  mb_dbuf a, b;
  for (;;) {
    cudaError_t ea = cudaMalloc(&a.p, bytes);
    cudaError_t eb = ea == cudaSuccess ? cudaMalloc(&b.p, bytes) : ea;
    if (ea == cudaSuccess && eb == cudaSuccess) break;
    (void)cudaGetLastError();
    a.release();
    b.release();
    MB_CHECK(bytes > max_bytes / 8, MB_ERR_MEMORY,
             "cannot allocate 2 x %zu bytes for the copy benchmark: %s", bytes,
             cudaGetErrorString(ea != cudaSuccess ? ea : eb));
    bytes /= 2;
  }
  MB_CALL_CUDA(cudaMemset(a.p, 0x5a, bytes)); /* not zeros: real data */
  MB_CALL_CUDA(cudaMemset(b.p, 0x3c, bytes));
  const int warm = 2, reps = 9;
  for (int k = 0; k < warm; k++) MB_CALL_CUDA(cudaMemcpy(b.p, a.p, bytes, cudaMemcpyDeviceToDevice));
  std::vector<cudaEvent_t> ev((size_t)reps + 1, nullptr);
  struct guard {
    std::vector<cudaEvent_t> &v;
    ~guard() {
      for (cudaEvent_t e : v)
        if (e) cudaEventDestroy(e);
    }
  } g{ev};
  for (auto &e : ev) MB_CALL_CUDA(cudaEventCreate(&e));
  MB_CALL_CUDA(cudaEventRecord(ev[0]));
  for (int k = 0; k < reps; k++) {
    if (k % 2) MB_CALL_CUDA(cudaMemcpyAsync(a.p, b.p, bytes, cudaMemcpyDeviceToDevice));
    else MB_CALL_CUDA(cudaMemcpyAsync(b.p, a.p, bytes, cudaMemcpyDeviceToDevice));
    MB_CALL_CUDA(cudaEventRecord(ev[(size_t)k + 1]));
  }
  MB_CALL_CUDA(cudaEventSynchronize(ev[(size_t)reps]));
  std::vector<float> ms((size_t)reps);
  for (int k = 0; k < reps; k++)
    MB_CALL_CUDA(cudaEventElapsedTime(&ms[(size_t)k], ev[(size_t)k], ev[(size_t)k + 1]));
  std::sort(ms.begin(), ms.end());
  const double t = ms[(size_t)reps / 2];
  MB_CHECK(t > 0, MB_ERR_CUDA, "copy benchmark measured no time");
  *gbs = 2.0 * (double)bytes / (t * 1e-3) / 1e9;
  return MB_SUCCESS;
}
