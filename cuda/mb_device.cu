/* meshbatch: CUDA devices (see mb_cuda.h). */
#include <cuda_runtime.h>
#include <stdio.h>

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

