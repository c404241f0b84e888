/* meshbatch GPU test: mb_cuda_smooth against the CPU reference mb_smooth_cpu
 * for every weights rule x boundary rule x operator x precision, on meshes
 * built in code (open grid, closed sphere, non-manifold/isolated/two
 * components, quads) and on spot.obj (../shared/data/meshes, else the
 * source tree's data/meshes; 77 where neither is present, failed where it
 * does not read).
 *
 * Acceptance: float64 max |gpu - cpu| / max |cpu| <= 1e-12 (the kernels
 * expand the CPU's MB_SMOOTH_VERTEX with --fmad=false, so equality is
 * expected); float32: max |gpu - cpu| <= 1e-5 of the bounding-box diagonal
 * after 100 iterations (Taubin: lambda 0.5, mu -0.53; Laplacian: lambda 0.5)
 * for uniform and inverse-distance weights; for every rule, the float32 GPU
 * result also matches the CPU's float32 expansion of the same macro (1e-6 of
 * the diagonal; 1e-5 for inverse distance, where C rounds sqrt + 1e-12 and the
 * division in double). Cotangent float32-vs-float64 drift is printed, not
 * enforced: see allow_f32_drift. Set MB_GPU_DIAG=1 to print every float32
 * case with its drift after 1, 3, 10 and 30 iterations.
 * Exits 77 (skip) without a CUDA device or without the CUDA backend.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_meshes.h"
#include "mb_smooth_cuda.h"
#include "mb_smooth.h"
#include "mb_smooth_vertex.h"
#include "mb_testutil.h"
#include "mb_meshfile.h"

static const mb_weights k_weights[] = {MB_WEIGHTS_UNIFORM, MB_WEIGHTS_COTANGENT,
                                       MB_WEIGHTS_INVERSE_DISTANCE};
static const mb_boundary k_bounds[] = {MB_BOUNDARY_FREE, MB_BOUNDARY_FIXED, MB_BOUNDARY_CURVE};
static const mb_smooth_method k_ops[] = {MB_SMOOTH_TAUBIN, MB_SMOOTH_LAPLACIAN};
static const mb_precision k_precs[] = {MB_PRECISION_FLOAT64, MB_PRECISION_FLOAT32};

#define MB_F64_REL_TOL 1e-12
#define MB_F32_DIAG_TOL 1e-5
#define MB_F32_SAME_TOL 1e-6

/* 1 if a stage with passes uses weights rule w. */
static int uses_weights(const mb_smooth_stage *st, int nst, mb_weights w) {
  for (int s = 0; s < nst; s++)
    if (st[s].weights == w && st[s].iterations > 0) return 1;
  return 0;
}

/* Whether a float32 result may drift from float64 beyond MB_F32_DIAG_TOL.
 * Cotangent-weighted flows are ill-conditioned on these meshes: free
 * boundaries and Laplacian shrinking produce near-degenerate triangles whose
 * clamped cotangent weights amplify rounding (float32 vs float64 reaches
 * 1e-1 of the diagonal after 100 iterations, 1e-7 after 10; the CPU's own
 * float32 expansion drifts identically). For those the test requires the
 * GPU to match the CPU's float32 arithmetic instead (MB_F32_SAME_TOL) and
 * prints the drift. Uniform and inverse-distance weights keep the 1e-5 bound. */
static int allow_f32_drift(const mb_smooth_stage *st, int nst) {
  return uses_weights(st, nst, MB_WEIGHTS_COTANGENT);
}


/* The CPU in float32: MB_SMOOTH_VERTEX expanded with T = float, the same
 * operations the float32 kernels perform (sqrt of a float is rounded to
 * float either way; inverse-distance weights may differ in the last bit,
 * since C evaluates sqrt(float) + 1e-12 and 1 / that in double). */
static void smooth_cpu_f32(const mb_adjacency *adj, const mb_smooth_stage *st, int nst, double *xyz) {
  const size_t n = 3 * (size_t)adj->nv;
  float *a = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n);
  assert_true(a && b);
  for (size_t k = 0; k < n; k++) a[k] = (float)xyz[k];
  for (int s = 0; s < nst; s++)
    for (int it = 0; it < st[s].iterations; it++)
      for (int p = 0; p < (st[s].method == MB_SMOOTH_TAUBIN ? 2 : 1); p++) {
        const float f = (float)(p == 0 ? st[s].lambda : st[s].mu);
        const mb_weights w = st[s].weights;
        const mb_boundary bd = st[s].boundary;
        for (int64_t i = 0; i < adj->nv; i++)
          MB_SMOOTH_VERTEX(float, i, adj->row, adj->col, adj->opp_row, adj->opp, adj->on_boundary,
                           adj->brow, adj->bcol, w, bd, f, a, b);
        float *t = a;
        a = b;
        b = t;
      }
  for (size_t k = 0; k < n; k++) xyz[k] = a[k];
  free(a);
  free(b);
}

/* max |a - b| over n values. */
static double max_diff(const double *a, const double *b, size_t n) {
  double d = 0;
  for (size_t k = 0; k < n; k++) d = fmax(d, fabs(a[k] - b[k]));
  return d;
}

/* Run stages on the CPU (float64) and the GPU (prec) from the same start and
 * check the agreement; returns the measured error (relative for float64,
 * over the diagonal for float32). For float32 also checks the GPU against the
 * CPU's float32 expansion of the same macro (*same, over the diagonal). */
static double compare(const char *label, const mb_mesh *mesh, const mb_adjacency *adj,
                      const mb_smooth_stage *st, int nst, mb_precision prec, double *same) {
  const size_t n = 3 * (size_t)mesh->nv;
  double *cpu = malloc(sizeof(double) * n), *gpu = malloc(sizeof(double) * n);
  assert_true(cpu && gpu);
  memcpy(cpu, mesh->xyz, sizeof(double) * n);
  memcpy(gpu, mesh->xyz, sizeof(double) * n);
  if (mb_smooth_cpu(adj, st, nst, cpu) != MB_SUCCESS) fail_msg("cpu: %s", mb_error_message());
  if (mb_cuda_smooth(adj, st, nst, prec, gpu) != MB_SUCCESS)
    fail_msg("%s: mb_cuda_smooth failed: %s\n%s", label, mb_error_message(),
             mb_error_traceback());
  double amax = 0;
  for (size_t k = 0; k < n; k++) {
    if (!isfinite(gpu[k])) fail_msg("%s: non-finite GPU coordinate at %zu", label, k);
    if (!isfinite(cpu[k])) fail_msg("%s: non-finite CPU coordinate at %zu", label, k);
    amax = fmax(amax, fabs(cpu[k]));
  }
  const double dmax = max_diff(gpu, cpu, n), diag = mb_mesh_bbox_diagonal(mesh);
  double err;
  if (prec == MB_PRECISION_FLOAT64) {
    err = amax > 0 ? dmax / amax : dmax;
    if (!(err <= MB_F64_REL_TOL))
      fail_msg("%s: float64 relative difference %.3e > %.0e", label, err, MB_F64_REL_TOL);
  } else {
    memcpy(cpu, mesh->xyz, sizeof(double) * n);
    smooth_cpu_f32(adj, st, nst, cpu);
    *same = max_diff(gpu, cpu, n) / diag;
    const double same_tol =
        uses_weights(st, nst, MB_WEIGHTS_INVERSE_DISTANCE) ? MB_F32_DIAG_TOL : MB_F32_SAME_TOL;
    if (!(*same <= same_tol))
      fail_msg("%s: float32 GPU and float32 CPU differ by %.3e of the diagonal > %.0e", label,
               *same, same_tol);
    err = dmax / diag;
    if (!(err <= MB_F32_DIAG_TOL) && !allow_f32_drift(st, nst))
      fail_msg("%s: float32 difference %.3e of the diagonal > %.0e", label, err, MB_F32_DIAG_TOL);
  }
  free(cpu);
  free(gpu);
  return err;
}

/* Every rule combination on one mesh (cotangent only where it has triangles). */
static void all_rules(const mb_mesh *mesh) {
  mb_adjacency *adj = mb_gpu_adjacency(mesh);
  double worst[2] = {0, 0}, worst_same = 0, cot_drift = 0;
  int ncase = 0;
  for (size_t w = 0; w < 3; w++)
    for (size_t b = 0; b < 3; b++)
      for (size_t o = 0; o < 2; o++)
        for (size_t p = 0; p < 2; p++) {
          if (k_weights[w] == MB_WEIGHTS_COTANGENT && !adj->opp) continue;
          mb_smooth_stage st = mb_gpu_stage(k_ops[o], k_weights[w], k_bounds[b], 100);
          char label[160];
          snprintf(label, sizeof label, "%s/%s/%s/%s/%s", mesh->name, mb_weights_name(st.weights),
                   mb_boundary_name(st.boundary), mb_smooth_method_name(st.method),
                   mb_precision_name(k_precs[p]));
          double same = 0, e = compare(label, mesh, adj, &st, 1, k_precs[p], &same);
          if (k_weights[w] == MB_WEIGHTS_COTANGENT && k_precs[p] == MB_PRECISION_FLOAT32)
            cot_drift = fmax(cot_drift, e);
          else if (e > worst[p])
            worst[p] = e;
          if (same > worst_same) worst_same = same;
          if (getenv("MB_GPU_DIAG") && k_precs[p] == MB_PRECISION_FLOAT32) {
            printf("  %-50s f32-f64 %.2e  gpu-cpu32 %.2e |", label, e, same);
            const int its[] = {1, 3, 10, 30};
            for (int q = 0; q < 4; q++) {
              mb_smooth_stage s2 = st;
              s2.iterations = its[q];
              double sm;
              printf(" %d:%.1e", its[q], compare(label, mesh, adj, &s2, 1, k_precs[p], &sm));
            }
            printf("\n");
          }
          ncase++;
        }
  printf("[ gpu ] %-10s nv %6lld, %2d cases; worst: float64 rel %.1e; float32/diag %.1e, "
         "cotangent float32/diag %.1e (reported only); float32 GPU vs CPU float32/diag %.1e\n",
         mesh->name, (long long)mesh->nv, ncase, worst[0], worst[1], cot_drift, worst_same);
  mb_adjacency_free(adj);
}

static void test_grid(void **state) {
  (void)state;
  mb_mesh *m = mb_gpu_mesh_grid(14, 0.15, 1);
  all_rules(m);
  mb_mesh_free(m);
}

static void test_octasphere(void **state) {
  (void)state;
  mb_mesh *m = mb_gpu_mesh_octasphere(3, 0.03, 2);
  all_rules(m);
  mb_mesh_free(m);
}

static void test_awkward(void **state) {
  (void)state;
  mb_mesh *m = mb_gpu_mesh_awkward();
  all_rules(m);
  mb_mesh_free(m);
}

static void test_quads(void **state) {
  (void)state;
  mb_mesh *m = mb_gpu_mesh_quads(10, 0.1, 3);
  all_rules(m);
  /* cotangent needs triangles: same MB_ERR_ARG as the CPU */
  mb_adjacency *adj = mb_gpu_adjacency(m);
  mb_smooth_stage st = mb_gpu_stage(MB_SMOOTH_TAUBIN, MB_WEIGHTS_COTANGENT, MB_BOUNDARY_FREE, 1);
  assert_int_equal(mb_cuda_smooth(adj, &st, 1, MB_PRECISION_FLOAT32, m->xyz), MB_ERR_ARG);
  mb_test_assert_message_contains("cotangent");
  mb_adjacency_free(adj);
  mb_mesh_free(m);
}

/* Several stages in one call: positions stay on the device across stages
 * with odd and even pass counts. */
static void test_multistage(void **state) {
  (void)state;
  mb_mesh *m = mb_gpu_mesh_grid(20, 0.2, 4);
  mb_adjacency *adj = mb_gpu_adjacency(m);
  mb_smooth_stage st[4] = {mb_gpu_stage(MB_SMOOTH_LAPLACIAN, MB_WEIGHTS_UNIFORM, MB_BOUNDARY_FIXED, 3),
                    mb_gpu_stage(MB_SMOOTH_TAUBIN, MB_WEIGHTS_COTANGENT, MB_BOUNDARY_CURVE, 4),
                    mb_gpu_stage(MB_SMOOTH_TAUBIN, MB_WEIGHTS_UNIFORM, MB_BOUNDARY_FREE, 0),
                    mb_gpu_stage(MB_SMOOTH_LAPLACIAN, MB_WEIGHTS_INVERSE_DISTANCE, MB_BOUNDARY_FREE, 5)};
  double same;
  for (size_t p = 0; p < 2; p++) compare("grid/multistage", m, adj, st, 4, k_precs[p], &same);
  mb_adjacency_free(adj);
  mb_mesh_free(m);
}

/* No passes: xyz comes back bit for bit, also for float32. */
static void test_zero_iterations(void **state) {
  (void)state;
  mb_mesh *m = mb_gpu_mesh_octasphere(2, 0.05, 5);
  mb_adjacency *adj = mb_gpu_adjacency(m);
  mb_smooth_stage st = mb_gpu_stage(MB_SMOOTH_TAUBIN, MB_WEIGHTS_UNIFORM, MB_BOUNDARY_FREE, 0);
  double *x = malloc(sizeof(double) * 3 * (size_t)m->nv);
  assert_non_null(x);
  memcpy(x, m->xyz, sizeof(double) * 3 * (size_t)m->nv);
  assert_int_equal(mb_cuda_smooth(adj, &st, 1, MB_PRECISION_FLOAT32, x), MB_SUCCESS);
  assert_memory_equal(x, m->xyz, sizeof(double) * 3 * (size_t)m->nv);
  assert_int_equal(mb_cuda_smooth(adj, NULL, 0, MB_PRECISION_FLOAT64, x), MB_SUCCESS);
  assert_memory_equal(x, m->xyz, sizeof(double) * 3 * (size_t)m->nv);
  free(x);
  mb_adjacency_free(adj);
  mb_mesh_free(m);
}

/* Argument errors, caught before any device work. */
static void test_errors(void **state) {
  (void)state;
  mb_mesh *m = mb_gpu_mesh_grid(4, 0.1, 6);
  mb_adjacency *adj = mb_gpu_adjacency(m);
  mb_smooth_stage st = mb_gpu_stage(MB_SMOOTH_TAUBIN, MB_WEIGHTS_UNIFORM, MB_BOUNDARY_FREE, 1);
  st.weights = (mb_weights)7;
  assert_int_equal(mb_cuda_smooth(adj, &st, 1, MB_PRECISION_FLOAT64, m->xyz), MB_ERR_ARG);
  st.weights = MB_WEIGHTS_UNIFORM;
  st.boundary = (mb_boundary)9;
  assert_int_equal(mb_cuda_smooth(adj, &st, 1, MB_PRECISION_FLOAT64, m->xyz), MB_ERR_ARG);
  st.boundary = MB_BOUNDARY_FREE;
  assert_int_equal(mb_cuda_smooth(adj, &st, 1, (mb_precision)3, m->xyz), MB_ERR_ARG);
  /* int32 indexing limit: a fake adjacency claiming 2^31 vertices (its
   * arrays are never read: the size check comes first) */
  mb_adjacency big = *adj;
  big.nv = (int64_t)1 << 31;
  assert_int_equal(mb_cuda_smooth(&big, &st, 1, MB_PRECISION_FLOAT32, m->xyz), MB_ERR_ARG);
  mb_test_assert_message_contains("2^31");
  big = *adj;
  big.nnz = (int64_t)1 << 31;
  assert_int_equal(mb_cuda_smooth(&big, &st, 1, MB_PRECISION_FLOAT32, m->xyz), MB_ERR_ARG);
  mb_test_assert_message_contains("2^31");
  mb_adjacency_free(adj);
  mb_mesh_free(m);
}

static int spot_absent; /* the program then exits 77 once the other cases passed */

/* spot.obj from ../shared/data, else the source tree's data/meshes: it must
 * read; where neither copy is present the case is skipped, saying so. */
static void test_spot(void **state) {
  (void)state;
  char buf[4096];
  const char *path = mb_test_data_path("meshes/spot.obj", buf, sizeof buf);
  const char *src = getenv("MESHBATCH_SOURCE_DIR");
  FILE *f = NULL;
  if (!path && src && *src) {
    snprintf(buf, sizeof buf, "%s/data/meshes/spot.obj", src);
    if ((f = fopen(buf, "rb"))) path = buf;
  }
  if (f) fclose(f);
  if (!path) {
    printf("[ gpu ] spot.obj: neither $MESHBATCH_DATA_DIR/meshes nor $MESHBATCH_SOURCE_DIR/data/"
           "meshes holds it: case skipped\n");
    spot_absent = 1;
    skip();
  }
  mb_mesh *m = NULL;
  if (mb_meshfile_read(path, &m) != MB_SUCCESS)
    fail_msg("spot.obj: %s does not read: %s", path, mb_error_message());
  all_rules(m);
  mb_mesh_free(m);
}

int main(void) {
  const int begin = mb_gpu_test_begin("gpu_smooth", NULL, 0);
  if (begin) return begin;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_grid),      cmocka_unit_test(test_octasphere),
      cmocka_unit_test(test_awkward),   cmocka_unit_test(test_quads),
      cmocka_unit_test(test_multistage), cmocka_unit_test(test_zero_iterations),
      cmocka_unit_test(test_errors),    cmocka_unit_test(test_spot),
  };
  const int failed = cmocka_run_group_tests(tests, NULL, NULL);
  if (!failed && spot_absent) {
    printf("SKIP: spot.obj is absent (the other cases passed)\n");
    return 77;
  }
  return failed;
}
