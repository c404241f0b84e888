/* meshbatch GPU test: device selection and mb_cuda_bench_smooth on a small
 * mesh return sane figures (positive times, the documented byte model,
 * a plausible copy bandwidth); argument errors. Exits 77 (skip) without a
 * CUDA device or without the CUDA backend.
 */
#include <stdio.h>
#include <string.h>

#include "gpu_meshes.h"
#include "mb_smooth_cuda.h"
#include "mb_testutil.h"

static void test_select_device(void **state) {
  (void)state;
  assert_int_equal(mb_cuda_compiled(), 1);
  char why[256] = "x";
  int n = mb_cuda_device_count(why, sizeof why);
  assert_true(n > 0);
  assert_string_equal(why, "");
  const int ranks[] = {0, 1, 7, n, -1};
  for (size_t k = 0; k < sizeof ranks / sizeof ranks[0]; k++) {
    int dev = -1;
    char name[256] = "";
    assert_int_equal(mb_cuda_select_device(ranks[k], &dev, name, sizeof name), MB_SUCCESS);
    assert_true(dev >= 0 && dev < n);
    assert_int_equal(dev, ((ranks[k] % n) + n) % n);
    assert_true(strlen(name) > 0);
  }
  assert_int_equal(mb_cuda_select_device(0, NULL, NULL, 0), MB_SUCCESS);
}

/* Expected bytes per pass under the byte model of docs/gpu-kernel.md. */
static double model_bytes(const mb_adjacency *a, mb_weights w, mb_boundary b, double real) {
  double x = 4.0 * (a->nv + 1) + 4.0 * a->nnz + 2.0 * real * 3.0 * a->nv;
  if (w == MB_WEIGHTS_COTANGENT) x += 4.0 * (a->nnz + 1) + 4.0 * a->opp_row[a->nnz];
  if (b != MB_BOUNDARY_FREE) x += 1.0 * a->nv;
  if (b == MB_BOUNDARY_CURVE) x += 4.0 * (a->nv + 1) + 4.0 * a->brow[a->nv];
  return x;
}

static void test_bench_small(void **state) {
  (void)state;
  mb_mesh *m = mb_gpu_mesh_grid(99, 0.1, 11); /* 10 000 vertices */
  mb_adjacency *adj = mb_gpu_adjacency(m);
  const mb_weights ws[] = {MB_WEIGHTS_UNIFORM, MB_WEIGHTS_COTANGENT, MB_WEIGHTS_INVERSE_DISTANCE};
  const mb_boundary bs[] = {MB_BOUNDARY_FREE, MB_BOUNDARY_CURVE};
  const mb_precision ps[] = {MB_PRECISION_FLOAT32, MB_PRECISION_FLOAT64};
  for (size_t w = 0; w < 3; w++)
    for (size_t b = 0; b < 2; b++)
      for (size_t p = 0; p < 2; p++) {
        mb_cuda_bench_result r;
        memset(&r, 0xff, sizeof r);
        mb_error e = mb_cuda_bench_smooth(adj, m->xyz, ws[w], bs[b], ps[p], 3, 11, &r);
        if (e != MB_SUCCESS) fail_msg("bench: %s\n%s", mb_error_message(), mb_error_traceback());
        const double real = ps[p] == MB_PRECISION_FLOAT32 ? 4.0 : 8.0;
        printf("[ gpu ] %s %s/%s/%s: %.4f ms/pass, %.0f bytes/pass, %.1f GB/s; copy %.1f GB/s\n",
               r.device, mb_weights_name(ws[w]), mb_boundary_name(bs[b]),
               mb_precision_name(ps[p]), r.ms_per_pass, r.bytes_per_pass,
               r.bytes_per_pass / (r.ms_per_pass * 1e-3) / 1e9, r.copy_gbs);
        assert_true(strlen(r.device) > 0 && strlen(r.device) < sizeof r.device);
        assert_true(r.ms_per_pass > 0 && r.ms_per_pass < 100.0);
        assert_true(r.bytes_per_pass == model_bytes(adj, ws[w], bs[b], real));
        assert_true(r.copy_gbs > 10.0 && r.copy_gbs < 100000.0);
      }
  /* the positions are an input only */
  mb_mesh *fresh = mb_gpu_mesh_grid(99, 0.1, 11);
  assert_memory_equal(fresh->xyz, m->xyz, sizeof(double) * 3 * (size_t)m->nv);
  mb_mesh_free(fresh);
  mb_adjacency_free(adj);
  mb_mesh_free(m);
}

static void test_bench_errors(void **state) {
  (void)state;
  mb_mesh *q = mb_gpu_mesh_quads(6, 0.1, 12);
  mb_adjacency *adj = mb_gpu_adjacency(q);
  mb_cuda_bench_result r;
  assert_int_equal(mb_cuda_bench_smooth(adj, q->xyz, MB_WEIGHTS_COTANGENT, MB_BOUNDARY_FREE,
                                        MB_PRECISION_FLOAT32, 1, 3, &r),
                   MB_ERR_ARG);
  assert_int_equal(mb_cuda_bench_smooth(adj, q->xyz, MB_WEIGHTS_UNIFORM, MB_BOUNDARY_FREE,
                                        MB_PRECISION_FLOAT32, 1, 0, &r),
                   MB_ERR_ARG);
  assert_int_equal(mb_cuda_bench_smooth(adj, q->xyz, MB_WEIGHTS_UNIFORM, (mb_boundary)5,
                                        MB_PRECISION_FLOAT32, 1, 3, &r),
                   MB_ERR_ARG);
  assert_int_equal(mb_cuda_bench_smooth(adj, q->xyz, MB_WEIGHTS_UNIFORM, MB_BOUNDARY_FREE,
                                        MB_PRECISION_FLOAT32, 1, 3, NULL),
                   MB_ERR_ARG);
  mb_adjacency_free(adj);
  mb_mesh_free(q);
}

int main(void) {
  int skip = mb_gpu_skip_unless_device("gpu_bench");
  if (skip) return skip;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_select_device),
      cmocka_unit_test(test_bench_small),
      cmocka_unit_test(test_bench_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
