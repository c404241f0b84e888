/* meshbatch GPU tests of the linalg layer: device arrays (gpu_linalg_util.h). */
#include "gpu_linalg_util.h"

#include "mb_config.h"
#include "mb_testutil.h"

#if MESHBATCH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#if MESHBATCH_HAVE_CUDA
double *gl_dev_alloc(size_t n) {
  void *d = NULL;
  if (cudaMalloc(&d, n ? 8 * n : 8) != cudaSuccess) fail_msg("cudaMalloc of %zu doubles", n);
  return d;
}
double *gl_dev_upload(const double *h, size_t n) {
  double *d = gl_dev_alloc(n);
  if (n && cudaMemcpy(d, h, 8 * n, cudaMemcpyHostToDevice) != cudaSuccess)
    fail_msg("cudaMemcpy to the device");
  return d;
}
void gl_dev_download(double *h, const double *d, size_t n) {
  if (n && cudaMemcpy(h, d, 8 * n, cudaMemcpyDeviceToHost) != cudaSuccess)
    fail_msg("cudaMemcpy from the device");
}
void gl_dev_free(double *d) {
  if (d) cudaFree(d);
}
#else
double *gl_dev_alloc(size_t n) {
  (void)n;
  fail_msg("built without CUDA");
  return NULL;
}
double *gl_dev_upload(const double *h, size_t n) {
  (void)h;
  return gl_dev_alloc(n);
}
void gl_dev_download(double *h, const double *d, size_t n) {
  (void)h; (void)d; (void)n;
  fail_msg("built without CUDA");
}
void gl_dev_free(double *d) { (void)d; }
#endif
