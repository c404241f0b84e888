/* meshbatch: stand-alone GPU smoothing benchmark (not a CTest test).
 *
 *   mb_gpu_bench [--n N] [--shuffle] [--repeats R] [--check]
 *
 * Builds a noisy open triangulated grid of (N+1)^2 vertices (default N = 1448:
 * 2 099 601 vertices, nnz ~ 6 nv), optionally in a random vertex order, and
 * prints mb_cuda_bench_smooth's figures for every weights rule and precision
 * (boundary free, plus uniform with the other boundary rules), as bytes/pass
 * under the byte model of docs/gpu-kernel.md over the median pass time, and
 * that rate as a fraction of the measured device-to-device copy bandwidth.
 * --check also compares one float64 Taubin iteration with the CPU backend.
 * Exits 77 without a CUDA device.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_meshes.h"
#include "mb_smooth_cuda.h"
#include "mb_smooth.h"
#include "mb_testutil.h"

static uint64_t rng(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return *s >> 17;
}

/* Renumber the vertices of m by a random permutation (destroys locality). */
static void shuffle_vertices(mb_mesh *m) {
  int64_t *perm = malloc(sizeof(int64_t) * (size_t)m->nv);
  double *x = malloc(sizeof(double) * 3 * (size_t)m->nv);
  if (!perm || !x) abort();
  for (int64_t i = 0; i < m->nv; i++) perm[i] = i;
  uint64_t s = 12345;
  for (int64_t i = m->nv - 1; i > 0; i--) {
    int64_t j = (int64_t)(rng(&s) % (uint64_t)(i + 1)), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  for (int64_t i = 0; i < m->nv; i++) memcpy(x + 3 * perm[i], m->xyz + 3 * i, 3 * sizeof(double));
  memcpy(m->xyz, x, sizeof(double) * 3 * (size_t)m->nv);
  for (int64_t k = 0; k < m->face_offsets[m->nf]; k++) m->face_indices[k] = perm[m->face_indices[k]];
  free(perm);
  free(x);
}

int main(int argc, char **argv) {
  int n = 1448, shuffle = 0, repeats = 51, check = 0;
  for (int a = 1; a < argc; a++) {
    if (!strcmp(argv[a], "--n") && a + 1 < argc) n = atoi(argv[++a]);
    else if (!strcmp(argv[a], "--shuffle")) shuffle = 1;
    else if (!strcmp(argv[a], "--repeats") && a + 1 < argc) repeats = atoi(argv[++a]);
    else if (!strcmp(argv[a], "--check")) check = 1;
    else {
      fprintf(stderr, "usage: %s [--n N] [--shuffle] [--repeats R] [--check]\n", argv[0]);
      return 2;
    }
  }
  char name[256];
  const int begin = mb_gpu_test_begin("mb_gpu_bench", name, sizeof name);
  if (begin) return begin;
  mb_mesh *m = mb_gpu_mesh_grid(n, 0.1, 7);
  if (shuffle) shuffle_vertices(m);
  mb_adjacency *adj = mb_gpu_adjacency(m);
  printf("device %s; grid nv %lld nnz %lld (%.2f per vertex)%s\n", name, (long long)adj->nv,
         (long long)adj->nnz, (double)adj->nnz / (double)adj->nv,
         shuffle ? ", vertices shuffled" : "");
  if (check) {
    size_t bytes = sizeof(double) * 3 * (size_t)m->nv;
    double *c = malloc(bytes), *g = malloc(bytes);
    memcpy(c, m->xyz, bytes);
    memcpy(g, m->xyz, bytes);
    mb_smooth_stage st = {MB_SMOOTH_TAUBIN, 0.5, -0.53, 1, MB_WEIGHTS_COTANGENT, MB_BOUNDARY_CURVE};
    if (mb_smooth_cpu(adj, &st, 1, c) || mb_cuda_smooth(adj, &st, 1, MB_PRECISION_FLOAT64, g)) {
      fprintf(stderr, "%s\n", mb_error_message());
      return 1;
    }
    double d = 0, am = 0;
    for (size_t k = 0; k < 3 * (size_t)m->nv; k++) {
      d = fmax(d, fabs(c[k] - g[k]));
      am = fmax(am, fabs(c[k]));
    }
    printf("check: 1 cotangent/curve Taubin iteration, float64, max rel diff gpu-cpu %.3e\n",
           d / am);
    free(c);
    free(g);
  }
  struct { mb_weights w; mb_boundary b; } rules[] = {
      {MB_WEIGHTS_UNIFORM, MB_BOUNDARY_FREE},   {MB_WEIGHTS_UNIFORM, MB_BOUNDARY_FIXED},
      {MB_WEIGHTS_UNIFORM, MB_BOUNDARY_CURVE},  {MB_WEIGHTS_INVERSE_DISTANCE, MB_BOUNDARY_FREE},
      {MB_WEIGHTS_COTANGENT, MB_BOUNDARY_FREE},
  };
  printf("%-17s %-6s %-8s %10s %12s %10s %10s %8s\n", "weights", "bound", "prec", "ms/pass",
         "MB/pass", "GB/s", "copy GB/s", "of copy");
  for (size_t r = 0; r < sizeof rules / sizeof rules[0]; r++)
    for (int p = 1; p >= 0; p--) {
      mb_cuda_bench_result res;
      if (mb_cuda_bench_smooth(adj, m->xyz, rules[r].w, rules[r].b, (mb_precision)p, 10, repeats,
                               &res) != MB_SUCCESS) {
        fprintf(stderr, "bench failed: %s\n%s", mb_error_message(), mb_error_traceback());
        return 1;
      }
      double gbs = res.bytes_per_pass / (res.ms_per_pass * 1e-3) / 1e9;
      printf("%-17s %-6s %-8s %10.4f %12.2f %10.1f %10.1f %7.1f%%\n", mb_weights_name(rules[r].w),
             mb_boundary_name(rules[r].b), mb_precision_name((mb_precision)p), res.ms_per_pass,
             res.bytes_per_pass / 1e6, gbs, res.copy_gbs, 100.0 * gbs / res.copy_gbs);
    }
  mb_adjacency_free(adj);
  mb_mesh_free(m);
  return 0;
}
