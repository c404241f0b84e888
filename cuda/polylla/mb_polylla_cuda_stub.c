/* meshbatch: the CUDA Polylla backend's stand-in for builds without CUDA
 * (CMake compiles the *_cuda_stub.c files of src/ops/<op>/ only when CUDA is off). */
#include "mb_polylla.h"
#include "mb_polylla_cuda.h"

#define MB_POLYLLA_NO_CUDA_MSG                                                      \
  "this meshbatch was built without the CUDA backend, so Polylla runs on the CPU " \
  "only; rebuild with -DMESHBATCH_CUDA=ON on a machine with nvcc (the CUDA toolkit)"

mb_error mb_polylla_cuda(const mb_mesh *tri, const mb_polylla_opts *opts, mb_mesh **poly,
                         mb_polylla_stats *stats) {
  (void)tri; (void)opts; (void)stats;
  if (poly) *poly = NULL;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_POLYLLA_NO_CUDA_MSG);
}

mb_error mb_polylla_cuda_bench(const mb_mesh *tri, int warmup, int repeats,
                               mb_polylla_stats *median, double *copy_gbs) {
  (void)tri; (void)warmup; (void)repeats; (void)median; (void)copy_gbs;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_POLYLLA_NO_CUDA_MSG);
}

mb_error mb_polylla_cuda_bench_pinned(const mb_mesh *tri, int warmup, int repeats,
                                      mb_polylla_stats *median) {
  (void)tri; (void)warmup; (void)repeats; (void)median;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_POLYLLA_NO_CUDA_MSG);
}
