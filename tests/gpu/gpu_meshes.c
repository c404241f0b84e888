/* meshbatch GPU tests: meshes built in code (see gpu_meshes.h). */
#include "gpu_meshes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_cuda.h"
#include "mb_testutil.h"

/* Uniform in [-1, 1) from a 64-bit LCG (Knuth's MMIX constants). */
static double lcg_sym(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(*s >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

static mb_mesh *validated(mb_mesh *m) {
  if (mb_mesh_validate(m, m->name) != MB_SUCCESS) fail_msg("%s", mb_error_message());
  return m;
}

mb_mesh *mb_gpu_mesh_grid(int n, double noise, uint64_t seed) {
  const int64_t nv = (int64_t)(n + 1) * (n + 1), nf = 2 * (int64_t)n * n;
  double *xyz = malloc(sizeof(double) * 3 * (size_t)nv);
  int64_t *tri = malloc(sizeof(int64_t) * 3 * (size_t)nf);
  assert_non_null(xyz);
  assert_non_null(tri);
  const double h = 2.0 / n;
  for (int j = 0; j <= n; j++)
    for (int i = 0; i <= n; i++) {
      double *p = xyz + 3 * ((int64_t)j * (n + 1) + i);
      p[0] = -1.0 + i * h + noise * h * lcg_sym(&seed);
      p[1] = -1.0 + j * h + noise * h * lcg_sym(&seed);
      p[2] = 0.2 * sin(2.0 * p[0]) * cos(1.5 * p[1]) + noise * h * lcg_sym(&seed);
    }
  int64_t f = 0;
  for (int j = 0; j < n; j++)
    for (int i = 0; i < n; i++) {
      int64_t a = (int64_t)j * (n + 1) + i, b = a + 1, c = a + (n + 1), d = c + 1;
      int64_t *t = tri + 3 * f;
      if ((i + j) % 2 == 0) {
        t[0] = a; t[1] = b; t[2] = d; t[3] = a; t[4] = d; t[5] = c;
      } else {
        t[0] = a; t[1] = b; t[2] = c; t[3] = b; t[4] = d; t[5] = c;
      }
      f += 2;
    }
  mb_mesh *m = mb_test_mesh_triangles("grid", nv, xyz, nf, tri);
  free(xyz);
  free(tri);
  return validated(m);
}

mb_mesh *mb_gpu_mesh_octasphere(int levels, double noise, uint64_t seed) {
  int64_t nv_max = 6, nf = 8;
  for (int l = 0; l < levels; l++) nv_max += nf * 3 / 2, nf *= 4;
  double *xyz = calloc((size_t)nv_max * 3, sizeof(double));
  int64_t *tri = malloc(sizeof(int64_t) * 3 * (size_t)nf);
  int64_t *nxt = malloc(sizeof(int64_t) * 3 * (size_t)nf);
  int64_t *mid = malloc(sizeof(int64_t) * (size_t)nv_max * (size_t)nv_max); /* small meshes only */
  assert_true(xyz && tri && nxt && mid);
  static const double v0[6][3] = {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1}};
  static const int64_t f0[8][3] = {{0, 2, 4}, {2, 1, 4}, {1, 3, 4}, {3, 0, 4},
                                   {2, 0, 5}, {1, 2, 5}, {3, 1, 5}, {0, 3, 5}};
  memcpy(xyz, v0, sizeof v0);
  memcpy(tri, f0, sizeof f0);
  int64_t nv = 6, cur = 8;
  for (int l = 0; l < levels; l++) {
    for (int64_t k = 0; k < nv_max * nv_max; k++) mid[k] = -1;
    for (int64_t f = 0; f < cur; f++) {
      int64_t v[3] = {tri[3 * f], tri[3 * f + 1], tri[3 * f + 2]}, e[3];
      for (int s = 0; s < 3; s++) {
        int64_t a = v[s], b = v[(s + 1) % 3];
        int64_t lo = a < b ? a : b, hi = a < b ? b : a;
        if (mid[lo * nv_max + hi] < 0) {
          for (int c = 0; c < 3; c++) xyz[3 * nv + c] = 0.5 * (xyz[3 * a + c] + xyz[3 * b + c]);
          mid[lo * nv_max + hi] = nv++;
        }
        e[s] = mid[lo * nv_max + hi]; /* e[s] is the midpoint of v[s] v[s+1] */
      }
      int64_t *t = nxt + 12 * f;
      t[0] = v[0]; t[1] = e[0]; t[2] = e[2];
      t[3] = e[0]; t[4] = v[1]; t[5] = e[1];
      t[6] = e[2]; t[7] = e[1]; t[8] = v[2];
      t[9] = e[0]; t[10] = e[1]; t[11] = e[2];
    }
    cur *= 4;
    memcpy(tri, nxt, sizeof(int64_t) * 3 * (size_t)cur);
  }
  for (int64_t i = 0; i < nv; i++) {
    double *p = xyz + 3 * i;
    double r = sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
    double s = (1.0 + noise * lcg_sym(&seed)) / r;
    p[0] *= s; p[1] *= s; p[2] *= s;
  }
  mb_mesh *m = mb_test_mesh_triangles("octasphere", nv, xyz, cur, tri);
  free(xyz);
  free(tri);
  free(nxt);
  free(mid);
  return validated(m);
}

mb_mesh *mb_gpu_mesh_awkward(void) {
  /* Component 1 (vertices 0..4): edge (0, 1) shared by three triangles. */
  /* Component 2 (vertices 5..20): a 4 x 4 noisy grid patch, shifted. */
  /* Vertex 21: isolated. Vertices 22..24: a collinear (degenerate) triangle
   * glued to the patch through vertex 5 (shares a vertex, not an edge). */
  enum { NV = 25 };
  double xyz[3 * NV];
  uint64_t seed = 99;
  const double c1[5][3] = {{0, 0, 0}, {1, 0, 0}, {0.5, 0.9, 0.1}, {0.4, -0.8, 0.2}, {0.6, 0.1, 0.9}};
  memcpy(xyz, c1, sizeof c1);
  for (int j = 0; j < 4; j++)
    for (int i = 0; i < 4; i++) {
      double *p = xyz + 3 * (5 + 4 * j + i);
      p[0] = 3.0 + 0.5 * i + 0.05 * lcg_sym(&seed);
      p[1] = -1.0 + 0.5 * j + 0.05 * lcg_sym(&seed);
      p[2] = 0.1 * lcg_sym(&seed);
    }
  xyz[3 * 21] = -2.0; xyz[3 * 21 + 1] = 1.5; xyz[3 * 21 + 2] = 0.25;
  const double c3[3][3] = {{2.0, -2.0, 0.0}, {2.5, -2.0, 0.0}, {3.0, -2.0, 0.0}};
  memcpy(xyz + 3 * 22, c3, sizeof c3);
  int64_t tri[3 * 32];
  int64_t nf = 0;
  const int64_t fan[3][3] = {{0, 1, 2}, {1, 0, 3}, {0, 1, 4}};
  for (int k = 0; k < 3; k++, nf++) memcpy(tri + 3 * nf, fan[k], sizeof fan[k]);
  for (int j = 0; j < 3; j++)
    for (int i = 0; i < 3; i++) {
      int64_t a = 5 + 4 * j + i, b = a + 1, c = a + 4, d = c + 1;
      int64_t t[6] = {a, b, d, a, d, c};
      memcpy(tri + 3 * nf, t, sizeof t);
      nf += 2;
    }
  const int64_t deg[2][3] = {{22, 23, 24}, {5, 22, 23}};
  for (int k = 0; k < 2; k++, nf++) memcpy(tri + 3 * nf, deg[k], sizeof deg[k]);
  return validated(mb_test_mesh_triangles("awkward", NV, xyz, nf, tri));
}

mb_mesh *mb_gpu_mesh_quads(int n, double noise, uint64_t seed) {
  const int64_t nv = (int64_t)(n + 1) * (n + 1), nf = (int64_t)n * n;
  mb_mesh *m = NULL;
  assert_int_equal(mb_mesh_create("quads", nv, nf, 4 * nf, &m), MB_SUCCESS);
  const double h = 2.0 / n;
  for (int j = 0; j <= n; j++)
    for (int i = 0; i <= n; i++) {
      double *p = m->xyz + 3 * ((int64_t)j * (n + 1) + i);
      p[0] = -1.0 + i * h + noise * h * lcg_sym(&seed);
      p[1] = -1.0 + j * h + noise * h * lcg_sym(&seed);
      p[2] = 0.3 * p[0] * p[1] + noise * h * lcg_sym(&seed);
    }
  int64_t f = 0;
  for (int j = 0; j < n; j++)
    for (int i = 0; i < n; i++, f++) {
      int64_t a = (int64_t)j * (n + 1) + i;
      m->face_offsets[f] = 4 * f;
      m->face_indices[4 * f] = a;
      m->face_indices[4 * f + 1] = a + 1;
      m->face_indices[4 * f + 2] = a + n + 2;
      m->face_indices[4 * f + 3] = a + n + 1;
    }
  m->face_offsets[nf] = 4 * nf;
  return validated(m);
}

mb_adjacency *mb_gpu_adjacency(const mb_mesh *mesh) {
  mb_adjacency *adj = NULL;
  if (mb_adjacency_build(mesh, &adj) != MB_SUCCESS) fail_msg("%s", mb_error_message());
  return adj;
}

int mb_gpu_skip_unless_device(const char *test_name) {
  char why[512] = "";
  int n = mb_cuda_device_count(why, sizeof why);
  if (n > 0) return 0;
  printf("%s: skipped, no usable CUDA device (%s; CUDA backend compiled: %s)\n", test_name, why,
         mb_cuda_compiled() ? "yes" : "no");
  return MB_TEST_SKIP;
}

int mb_gpu_test_begin(const char *test_name, char *name, size_t len) {
  const int skip = mb_gpu_skip_unless_device(test_name);
  if (skip) return skip;
  char own[256] = "";
  int dev = -1;
  if (mb_cuda_select_device(0, &dev, own, sizeof own) != MB_SUCCESS) {
    fprintf(stderr, "%s: mb_cuda_select_device: %s\n", test_name, mb_error_message());
    return 1;
  }
  printf("[ gpu ] device %d: %s\n", dev, own);
  if (name && len) snprintf(name, len, "%s", own);
  return 0;
}

mb_smooth_stage mb_gpu_stage(mb_smooth_method method, mb_weights weights, mb_boundary boundary,
                             int iterations) {
  mb_smooth_stage s;
  memset(&s, 0, sizeof s);
  s.method = method;
  s.lambda = 0.5;
  s.mu = -0.53;
  s.iterations = iterations;
  s.weights = weights;
  s.boundary = boundary;
  return s;
}
