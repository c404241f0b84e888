/* meshbatch GPU test: the CUDA stencil kernels (cuda/stencil/mb_stencil.cu)
 * against the CPU kernels (src/ops/stencil/mb_stencil.h), bit for bit:
 * derivative along z, y and x, the Laplacian, 10 heat steps and 10 wave
 * steps, periodic and Dirichlet, float64 and float32, on shapes that do not
 * fill the GPU's tiles (13 x 17 x 19, 40 x 33 x 70), one that spans many
 * z chunks (150 x 40 x 36), and rows of 256 and 132 points (several warps
 * along x, the last one partly past the row). Exits 77 (skip) without a CUDA device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_meshes.h"
#include "mb_stencil.h"
#include "mb_testutil.h"
#include "mb_stencil_cuda.h"

static void check_shape(const int64_t n[3], int bc, int f32) {
  const int64_t np = n[0] * n[1] * n[2];
  const size_t w = f32 ? sizeof(float) : sizeof(double);
  double *u = malloc(sizeof *u * (size_t)np);
  void *in = malloc(w * (size_t)np), *cpu = malloc(w * (size_t)np), *gpu = malloc(w * (size_t)np);
  void *prev = malloc(w * (size_t)np), *gprev = malloc(w * (size_t)np), *work = malloc(w * (size_t)np);
  assert_true(u && in && cpu && gpu && prev && gprev && work);
  for (int64_t p = 0; p < np; p++) {
    u[p] = sin(0.013 * (double)p) * cos(0.41 * (double)(p % 31)) + 0.2;
    if (f32) ((float *)in)[p] = (float)u[p];
    else ((double *)in)[p] = u[p];
  }
  mb_stencil_grid g = {.n = {n[0], n[1], n[2]}, .h = {0.3, 0.2, 0.1},
                       .bc = (mb_stencil_boundary)bc, .outside = 0.5};
  char what[128];
  for (int op = 0; op < 4; op++) {
    mb_error e = op < 3 ? (f32 ? mb_stencil_derivative_f32(&g, op, in, cpu)
                               : mb_stencil_derivative_f64(&g, op, in, cpu))
                        : (f32 ? mb_stencil_laplacian_f32(&g, in, cpu)
                               : mb_stencil_laplacian_f64(&g, in, cpu));
    assert_int_equal(e, MB_SUCCESS);
    assert_int_equal(mb_stencil_cuda_apply(&g, op, f32, in, gpu), MB_SUCCESS);
    snprintf(what, sizeof what, "%s op %d", f32 ? "float32" : "float64", op);
    if (memcmp(cpu, gpu, w * (size_t)np)) fail_msg("%s: GPU differs from CPU", what);
  }
  const double alpha = 0.8, dt = 0.5 * mb_stencil_heat_dt_limit(&g, alpha);
  memcpy(cpu, in, w * (size_t)np);
  memcpy(gpu, in, w * (size_t)np);
  assert_int_equal(f32 ? mb_stencil_heat_f32(&g, alpha, dt, 10, cpu, work)
                       : mb_stencil_heat_f64(&g, alpha, dt, 10, cpu, work),
                   MB_SUCCESS);
  assert_int_equal(mb_stencil_cuda_heat(&g, f32, alpha, dt, 10, gpu), MB_SUCCESS);
  if (memcmp(cpu, gpu, w * (size_t)np)) fail_msg("heat: GPU differs from CPU");
  const double c = 1.1, wdt = 0.5 * mb_stencil_wave_dt_limit(&g, c);
  memcpy(cpu, in, w * (size_t)np);
  memcpy(gpu, in, w * (size_t)np);
  memcpy(prev, in, w * (size_t)np);
  memcpy(gprev, in, w * (size_t)np);
  assert_int_equal(f32 ? mb_stencil_wave_f32(&g, c, wdt, 10, prev, cpu, work)
                       : mb_stencil_wave_f64(&g, c, wdt, 10, prev, cpu, work),
                   MB_SUCCESS);
  assert_int_equal(mb_stencil_cuda_wave(&g, f32, c, wdt, 10, gprev, gpu), MB_SUCCESS);
  if (memcmp(cpu, gpu, w * (size_t)np) || memcmp(prev, gprev, w * (size_t)np))
    fail_msg("wave: GPU differs from CPU");
  /* refused beyond the limit, as on the CPU */
  assert_int_equal(mb_stencil_cuda_heat(&g, f32, alpha, 3 * dt, 1, gpu), MB_ERR_ARG);
  mb_test_assert_message_contains("exceeds the stability limit");
  free(u); free(in); free(cpu); free(gpu); free(prev); free(gprev); free(work);
}

static void test_cpu_equal(void **state) {
  (void)state;
  /* rows of 19 and 70 points take the scalar kernels (not whole 16-byte
   * vectors; 70 only in float32), 36, 256 and 132 the vector kernels, 132
   * with a warp past the end of the row */
  const int64_t shapes[][3] = {{13, 17, 19}, {40, 33, 70}, {150, 40, 36}, {9, 30, 256}, {21, 20, 132}};
  for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
    for (int bc = 0; bc < 2; bc++)
      for (int f32 = 0; f32 < 2; f32++) check_shape(shapes[k], bc, f32);
  printf("[ gpu ] stencil: derivative z/y/x, laplacian, heat and wave (10 steps) bitwise "
         "equal to the CPU on 5 shapes, periodic and dirichlet, float64 and float32\n");
}

int main(void) {
  int skip = mb_gpu_skip_unless_device("test_gpu_stencil");
  if (skip) return skip;
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_cpu_equal)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
