/* meshbatch: the device reductions in builds without CUDA: refused. */
#include "mb_reduce.h"

#define MB_NO_CUDA_MSG                                                           \
  "this meshbatch was built without the CUDA backend; install the CUDA toolkit " \
  "and reconfigure with -DMESHBATCH_CUDA=ON"

mb_error mb_reduce_device_create(mb_reduce_device **rd) {
  if (rd) *rd = NULL;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

void mb_reduce_device_free(mb_reduce_device *rd) { (void)rd; }

mb_error mb_reduce_device_acc(mb_reduce_device *rd, void *stream, int64_t n, const double *x,
                              const double *y, mb_reduce_acc *acc) {
  (void)rd; (void)stream; (void)n; (void)x; (void)y; (void)acc;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_reduce_dot_device(mb_reduce_device *rd, void *stream, MPI_Comm comm, int64_t n,
                              const double *x, const double *y, double *dot) {
  (void)rd; (void)stream; (void)comm; (void)n; (void)x; (void)y; (void)dot;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_reduce_norm2_device(mb_reduce_device *rd, void *stream, MPI_Comm comm, int64_t n,
                                const double *x, double *norm) {
  (void)rd; (void)stream; (void)comm; (void)n; (void)x; (void)norm;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_reduce_sum_device(mb_reduce_device *rd, void *stream, MPI_Comm comm, int64_t n,
                              const double *x, double *sum) {
  (void)rd; (void)stream; (void)comm; (void)n; (void)x; (void)sum;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_reduce_dot_device_naive(mb_reduce_device *rd, void *stream, int64_t n,
                                    const double *x, const double *y, double *dot) {
  (void)rd; (void)stream; (void)n; (void)x; (void)y; (void)dot;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_reduce_device_upload(int64_t n, const double *host, double **dev) {
  (void)n; (void)host;
  if (dev) *dev = NULL;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

void mb_reduce_device_release(double *dev) { (void)dev; }

mb_error mb_reduce_device_columns(mb_reduce_device *rd, void *stream, int m, int64_t n,
                                  const double *t, int64_t ld, int64_t *acc) {
  (void)rd; (void)stream; (void)m; (void)n; (void)t; (void)ld; (void)acc;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_reduce_device_allreduce(mb_reduce_device *rd, void *stream, MPI_Comm comm, int m,
                                    int64_t *acc) {
  (void)rd; (void)stream; (void)comm; (void)m; (void)acc;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_reduce_device_download(mb_reduce_device *rd, void *stream, int m,
                                   const int64_t *acc, mb_reduce_acc *acc_host) {
  (void)rd; (void)stream; (void)m; (void)acc; (void)acc_host;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}
