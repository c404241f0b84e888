/* meshbatch: the CUDA stencil backend's stand-in for builds without CUDA
 * (CMake compiles the *_cuda_stub.c files of src/ops/<op>/ only when CUDA is off). */
#include "mb_stencil_cuda.h"

#define MB_STENCIL_NO_CUDA_MSG                                                       \
  "this meshbatch was built without the CUDA backend, so the stencil ops run on the " \
  "CPU only; rebuild with -DMESHBATCH_CUDA=ON on a machine with nvcc (the CUDA toolkit)"

mb_error mb_stencil_cuda_apply(const mb_stencil_grid *g, int op, int f32, const void *u,
                               void *out) {
  (void)g; (void)op; (void)f32; (void)u; (void)out;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_STENCIL_NO_CUDA_MSG);
}

mb_error mb_stencil_cuda_heat_step(const mb_stencil_grid *g, int f32, double coef, const void *u,
                                   void *out) {
  (void)g; (void)f32; (void)coef; (void)u; (void)out;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_STENCIL_NO_CUDA_MSG);
}

mb_error mb_stencil_cuda_heat(const mb_stencil_grid *g, int f32, double alpha, double dt,
                              int64_t nsteps, void *u, const mb_stencil_cuda_stop *stop) {
  (void)g; (void)f32; (void)alpha; (void)dt; (void)nsteps; (void)u; (void)stop;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_STENCIL_NO_CUDA_MSG);
}

mb_error mb_stencil_cuda_wave(const mb_stencil_grid *g, int f32, double c, double dt,
                              int64_t nsteps, void *u_prev, void *u,
                              const mb_stencil_cuda_stop *stop) {
  (void)g; (void)f32; (void)c; (void)dt; (void)nsteps; (void)u_prev; (void)u; (void)stop;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_STENCIL_NO_CUDA_MSG);
}

mb_error mb_stencil_cuda_block(const mb_stencil_grid *blk, int f32, struct mb_cart *cart, int halo,
                               int op, double coef, int64_t nsteps, void *u, void *out,
                               mb_stencil_block_figures *fig, const mb_stencil_cuda_stop *stop) {
  (void)blk; (void)f32; (void)cart; (void)halo; (void)op; (void)coef; (void)nsteps; (void)u;
  (void)out; (void)fig; (void)stop;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_STENCIL_NO_CUDA_MSG);
}

mb_error mb_stencil_cuda_bench(const int64_t n[3], int f32, int warmup, int repeats,
                               mb_stencil_bench_result *r) {
  (void)n; (void)f32; (void)warmup; (void)repeats; (void)r;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_STENCIL_NO_CUDA_MSG);
}
