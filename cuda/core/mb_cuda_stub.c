/* meshbatch: the CUDA backend's stand-in for builds without CUDA.
 * Every entry point says the backend is absent and how to enable it. */
#include <stdio.h>

#include "mb_cuda.h"

#define MB_NO_CUDA_MSG                                                           \
  "this meshbatch was built without the CUDA backend; install the CUDA toolkit " \
  "and reconfigure with -DMESHBATCH_CUDA=ON"

int mb_cuda_compiled(void) { return 0; }

int mb_cuda_device_count(char *why, size_t why_len) {
  if (why && why_len) snprintf(why, why_len, "%s", MB_NO_CUDA_MSG);
  return 0;
}

mb_error mb_cuda_select_device(int local_rank, int *device, char *name, size_t name_len) {
  (void)local_rank; (void)device; (void)name; (void)name_len;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_cuda_bind_device(int device) {
  (void)device;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_cuda_copy_bandwidth(size_t max_bytes, double *gbs) {
  (void)max_bytes; (void)gbs;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}
