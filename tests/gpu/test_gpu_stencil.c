/* meshbatch GPU test: the CUDA stencil kernels (cuda/stencil/mb_stencil.cu)
 * against the CPU kernels (src/ops/stencil/mb_stencil.h), bit for bit:
 * derivative along z, y and x, the Laplacian, 10 heat steps and 10 wave
 * steps, periodic and Dirichlet, float64 and float32, on shapes that do not
 * fill the GPU's tiles (13 x 17 x 19, 40 x 33 x 70), one that spans many
 * z chunks (150 x 40 x 36), and rows of 256 and 132 points (several warps
 * along x, the last one partly past the row). The stop points of the heat
 * and wave loops (mb_stencil_cuda_stop): asked but not stopping, the same
 * bits; with the signal's flag set, the loop stops at its first stop point
 * with the stop's error, the arrays left as they were. Exits 77 (skip)
 * without a CUDA device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_meshes.h"
#include <signal.h>

#include "mb_op.h"
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
  assert_int_equal(mb_stencil_cuda_heat(&g, f32, alpha, dt, 10, gpu, NULL), MB_SUCCESS);
  if (memcmp(cpu, gpu, w * (size_t)np)) fail_msg("heat: GPU differs from CPU");
  const double c = 1.1, wdt = 0.5 * mb_stencil_wave_dt_limit(&g, c);
  memcpy(cpu, in, w * (size_t)np);
  memcpy(gpu, in, w * (size_t)np);
  memcpy(prev, in, w * (size_t)np);
  memcpy(gprev, in, w * (size_t)np);
  assert_int_equal(f32 ? mb_stencil_wave_f32(&g, c, wdt, 10, prev, cpu, work)
                       : mb_stencil_wave_f64(&g, c, wdt, 10, prev, cpu, work),
                   MB_SUCCESS);
  assert_int_equal(mb_stencil_cuda_wave(&g, f32, c, wdt, 10, gprev, gpu, NULL), MB_SUCCESS);
  if (memcmp(cpu, gpu, w * (size_t)np) || memcmp(prev, gprev, w * (size_t)np))
    fail_msg("wave: GPU differs from CPU");
  /* refused beyond the limit, as on the CPU */
  assert_int_equal(mb_stencil_cuda_heat(&g, f32, alpha, 3 * dt, 1, gpu, NULL), MB_ERR_ARG);
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

/* 100 heat and 100 wave steps of a 40 x 33 x 70 grid (stop points every 32
 * steps) with a stop query: flag 0, the CPU's bits; flag 1, stopped at
 * step 32 with "stopped by a signal", u and u_prev unchanged. */
static void test_stop_points(void **state) {
  (void)state;
  const int64_t n[3] = {40, 33, 70}, np = n[0] * n[1] * n[2];
  double *in = malloc(sizeof *in * (size_t)np), *cpu = malloc(sizeof *cpu * (size_t)np);
  double *gpu = malloc(sizeof *gpu * (size_t)np), *work = malloc(sizeof *work * (size_t)np);
  double *prev = malloc(sizeof *prev * (size_t)np), *gprev = malloc(sizeof *gprev * (size_t)np);
  assert_true(in && cpu && gpu && work && prev && gprev);
  for (int64_t p = 0; p < np; p++) in[p] = sin(0.017 * (double)p) + 0.1 * cos(0.3 * (double)(p % 23));
  const mb_stencil_grid g = {.n = {n[0], n[1], n[2]}, .h = {0.3, 0.2, 0.1}, .bc = MB_STENCIL_PERIODIC};
  volatile sig_atomic_t flag = 0;
  for (int set = 0; set < 2; set++) {
    flag = set;
    mb_op_stop st = {.flag = &flag, .comm = MPI_COMM_NULL, .name = "g", .interval_s = 1e9};
    const mb_op_ctx ctx = {.stop = &st};
    const mb_stencil_cuda_stop cs = {.ctx = &ctx, .done = 0, .total = 100};
    const double alpha = 0.8, dt = 0.5 * mb_stencil_heat_dt_limit(&g, alpha);
    memcpy(cpu, in, sizeof *in * (size_t)np);
    memcpy(gpu, in, sizeof *in * (size_t)np);
    assert_int_equal(mb_stencil_heat_f64(&g, alpha, dt, 100, cpu, work), MB_SUCCESS);
    mb_error e = mb_stencil_cuda_heat(&g, 0, alpha, dt, 100, gpu, &cs);
    if (set) {
      assert_int_equal(e, MB_ERR_IO);
      mb_test_assert_message_contains("stopped by a signal");
      assert_int_equal(st.stopped, 1);
      assert_int_equal(st.last_done, 32); /* the first stop point */
      if (memcmp(gpu, in, sizeof *in * (size_t)np)) fail_msg("stopped heat: u changed");
    } else {
      assert_int_equal(e, MB_SUCCESS);
      if (memcmp(cpu, gpu, sizeof *in * (size_t)np)) fail_msg("heat with stop points: not the CPU's bits");
    }
    mb_op_stop st2 = {.flag = &flag, .comm = MPI_COMM_NULL, .name = "g", .interval_s = 1e9};
    const mb_op_ctx ctx2 = {.stop = &st2};
    const mb_stencil_cuda_stop cs2 = {.ctx = &ctx2, .done = 0, .total = 100};
    const double c = 1.1, wdt = 0.5 * mb_stencil_wave_dt_limit(&g, c);
    memcpy(cpu, in, sizeof *in * (size_t)np);
    memcpy(gpu, in, sizeof *in * (size_t)np);
    memcpy(prev, in, sizeof *in * (size_t)np);
    memcpy(gprev, in, sizeof *in * (size_t)np);
    assert_int_equal(mb_stencil_wave_f64(&g, c, wdt, 100, prev, cpu, work), MB_SUCCESS);
    e = mb_stencil_cuda_wave(&g, 0, c, wdt, 100, gprev, gpu, &cs2);
    if (set) {
      assert_int_equal(e, MB_ERR_IO);
      mb_test_assert_message_contains("stopped by a signal");
      assert_int_equal(st2.last_done, 32);
      if (memcmp(gpu, in, sizeof *in * (size_t)np) || memcmp(gprev, in, sizeof *in * (size_t)np))
        fail_msg("stopped wave: u or u_prev changed");
    } else {
      assert_int_equal(e, MB_SUCCESS);
      if (memcmp(cpu, gpu, sizeof *in * (size_t)np) || memcmp(prev, gprev, sizeof *in * (size_t)np))
        fail_msg("wave with stop points: not the CPU's bits");
    }
    mb_error_clear();
  }
  printf("[ gpu ] stencil: heat and wave with stop points: the CPU's bits; flagged, stopped at "
         "step 32 with the arrays unchanged\n");
  free(in); free(cpu); free(gpu); free(work); free(prev); free(gprev);
}

int main(void) {
  int skip = mb_gpu_skip_unless_device("test_gpu_stencil");
  if (skip) return skip;
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_cpu_equal),
                                     cmocka_unit_test(test_stop_points)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
