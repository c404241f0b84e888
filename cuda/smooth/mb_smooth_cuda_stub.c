/* meshbatch: the smooth room's CUDA launchers in builds without CUDA.
 * Every entry point says the backend is absent and how to enable it. */
#include <stdio.h>

#include "mb_smooth_cuda.h"

#define MB_NO_CUDA_MSG                                                           \
  "this meshbatch was built without the CUDA backend; install the CUDA toolkit " \
  "and reconfigure with -DMESHBATCH_CUDA=ON"

mb_error mb_cuda_smooth(const mb_adjacency *adj, const mb_smooth_stage *stages, int nstages,
                        mb_precision precision, double *xyz) {
  (void)adj; (void)stages; (void)nstages; (void)precision; (void)xyz;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_cuda_smooth_mesh(const mb_mesh *mesh, const int64_t *perm,
                             const mb_smooth_stage *stages, int nstages, mb_precision precision,
                             double *xyz, double seconds[2]) {
  (void)mesh; (void)perm; (void)stages; (void)nstages; (void)precision; (void)xyz;
  if (seconds) seconds[0] = seconds[1] = 0;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_cuda_adjacency_build(const mb_mesh *mesh, const int64_t *perm, unsigned flags,
                                 mb_adjacency **adj) {
  (void)mesh; (void)perm; (void)flags;
  if (adj) *adj = NULL;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_cuda_bench_smooth(const mb_adjacency *adj, const double *xyz, mb_weights weights,
                              mb_boundary boundary, mb_precision precision, int warmup,
                              int repeats, mb_cuda_bench_result *result) {
  (void)adj; (void)xyz; (void)weights; (void)boundary; (void)precision; (void)warmup;
  (void)repeats; (void)result;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_cuda_domain_create(const mb_adjacency *adj, int64_t nlocal, const double *xyz,
                               mb_precision precision, const mb_smooth_stage *stages, int nstages,
                               const mb_halo *plan, mb_cuda_domain **domain) {
  (void)adj; (void)nlocal; (void)xyz; (void)precision; (void)stages; (void)nstages;
  (void)plan; (void)domain;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_cuda_domain_halo_begin(mb_cuda_domain *domain, mb_halo_transport transport,
                                   mb_nccl *nccl) {
  (void)domain; (void)transport; (void)nccl;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_cuda_domain_halo_end(mb_cuda_domain *domain) {
  (void)domain;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_cuda_domain_pass(mb_cuda_domain *domain, int64_t begin, int64_t end,
                             mb_weights weights, mb_boundary boundary, double factor) {
  (void)domain; (void)begin; (void)end; (void)weights; (void)boundary; (void)factor;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

void mb_cuda_domain_swap(mb_cuda_domain *domain) { (void)domain; }

mb_error mb_cuda_domain_sync(mb_cuda_domain *domain) {
  (void)domain;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_cuda_domain_download(mb_cuda_domain *domain, double *xyz) {
  (void)domain; (void)xyz;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

void mb_cuda_domain_free(mb_cuda_domain *domain) { (void)domain; }
