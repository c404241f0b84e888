/* meshbatch: the device halo in builds without CUDA: refused. */
#include "mb_cuda_halo.h"

#define MB_NO_CUDA_MSG                                                           \
  "this meshbatch was built without the CUDA backend; install the CUDA toolkit " \
  "and reconfigure with -DMESHBATCH_CUDA=ON"

mb_error mb_cuda_halo_create(const mb_halo *plan, int ncomp, int real_bytes, void *stream,
                             mb_cuda_halo **halo) {
  (void)plan; (void)ncomp; (void)real_bytes; (void)stream; (void)halo;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

void mb_cuda_halo_set_post_at_end(mb_cuda_halo *halo, int at_end) {
  (void)halo; (void)at_end;
}

void mb_cuda_halo_time_next(mb_cuda_halo *halo, void *const ev[4]) {
  (void)halo; (void)ev;
}

void *mb_cuda_halo_stream(mb_cuda_halo *halo) {
  (void)halo;
  return NULL;
}

mb_error mb_cuda_halo_begin(mb_cuda_halo *halo, mb_halo_dir dir, const void *x,
                            mb_halo_transport transport, mb_nccl *nccl) {
  (void)halo; (void)dir; (void)x; (void)transport; (void)nccl;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_cuda_halo_end(mb_cuda_halo *halo, void *x) {
  (void)halo; (void)x;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_cuda_halo_share_arrays(mb_cuda_halo *halo, int n, void *const *arrays) {
  (void)halo; (void)n; (void)arrays;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

void mb_cuda_halo_free(mb_cuda_halo *halo) { (void)halo; }
