/* The deform room's device local step (project_face, cuda/deform/
 * mb_deform_dev.cuh: the body of k_project and of the persistent frame)
 * face by face against the CPU's projections (mb_deform_project_planar and
 * _regular, src/ops/deform/mb_deform_proj.c) and the CPU's formulas for the
 * rest of the step (the centring, the hard mode's over-relaxation, the
 * residual |q - z|, the face means), on the first CUDA device; exits 77
 * (skipped, with the reason) where there is none. Faces of 3 and 4 points
 * take the planar fixed-size path (points in registers), others the
 * general path: 6,000 faces of 3 to 9 points (mostly 3 and 4, mixed in
 * warps), random, near-planar (noise 1e-6 and 1e-12), planar, collinear
 * and coincident (the Jacobi fallback of the normal), in soft and hard
 * mode (al 1 and 1.5). Planar: z, the residual, the face means and (hard)
 * q = y bitwise the CPU's (the header's claim: the same bits on both;
 * this test's device code is built with --fmad=false and its host code
 * with -ffp-contract=off, as the library); in soft mode the fixed-size
 * path leaves q unwritten (its sentinel bits kept). Regular (the general
 * path only): within 1e-14 of the face's size (the device's cos and sin
 * may differ from the host's libm in the last bit). */
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <vector>

#include "mb_deform.h"
extern "C" {
#include "mb_testutil.h"
}
#include "mb_deform_dev.cuh"

namespace {

/* One thread a face: project_face (what k_project and k_frame run), its
 * residual into worst [nf]. */
__global__ void k_step(int64_t nf, const int64_t *fo, const int64_t *fi, const double *x,
                       const double *u, double *q, double *z, double *ym, int planar, int hard,
                       double al, double *worst) {
  const int64_t f = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (f < nf) worst[f] = mbd::project_face(f, fo, fi, x, u, q, z, ym, planar, hard, al);
}

struct faces {
  std::vector<int64_t> fo, fi;
  std::vector<double> x, u;
};

/* n points of one face (kind 0 random, 1 near-planar noise 1e-6, 2
 * near-planar 1e-12, 3 planar, 4 collinear, 5 coincident) appended to F,
 * each its own vertices, in a shuffled vertex order. */
void add_face(faces &F, int n, int kind, uint64_t *rs) {
  const int64_t v0 = (int64_t)F.x.size() / 3, s0 = (int64_t)F.fi.size();
  const double off[3] = {10 * mb_test_urand(rs) - 5, 10 * mb_test_urand(rs) - 5,
                         10 * mb_test_urand(rs) - 5};
  const double noise = kind == 1 ? 1e-6 : kind == 2 ? 1e-12 : 0;
  for (int k = 0; k < n; k++) {
    double p[3];
    const double a = 2 * M_PI * (k + 0.3 * mb_test_urand(rs)) / n, r = 0.5 + mb_test_urand(rs);
    if (kind == 0) {
      for (int d = 0; d < 3; d++) p[d] = mb_test_urand(rs) - 0.5;
    } else if (kind == 4) {
      const double t = mb_test_urand(rs);
      p[0] = t, p[1] = 2 * t, p[2] = -t;
    } else if (kind == 5) {
      p[0] = p[1] = p[2] = 0.25;
    } else {
      p[0] = r * cos(a), p[1] = r * sin(a), p[2] = 0.3 * p[0] - 0.2 * p[1];
      p[2] += noise * (mb_test_urand(rs) - 0.5);
    }
    for (int d = 0; d < 3; d++) F.x.push_back(off[d] + p[d]);
  }
  for (int k = 0; k < n; k++) F.fi.push_back(v0 + k);
  for (int k = n - 1; k > 0; k--) { /* shuffled slots */
    const int j = (int)(mb_test_urand(rs) * (k + 1));
    const int64_t t = F.fi[s0 + k];
    F.fi[s0 + k] = F.fi[s0 + j];
    F.fi[s0 + j] = t;
  }
  for (int k = 0; k < 3 * n; k++) F.u.push_back(1e-3 * (mb_test_urand(rs) - 0.5));
  F.fo.push_back((int64_t)F.fi.size());
}

/* The CPU's local step of face f (mb_deform.c's formulas: the centred
 * slots, the projection, the largest |q - z|, hard h = al z + (1 - al) (q -
 * u) into z and y = h - u into q, the mean of y) into q, z [n, 3], ym [3]. */
double cpu_step(const faces &F, int64_t f, int planar, int hard, double al, double *q, double *z,
                double ym[3]) {
  const int64_t s0 = F.fo[f], s1 = F.fo[f + 1];
  const int n = (int)(s1 - s0);
  double c[3] = {0, 0, 0}, worst = 0, m[3] = {0, 0, 0};
  for (int64_t s = s0; s < s1; s++)
    for (int d = 0; d < 3; d++) c[d] += F.x[3 * F.fi[s] + d];
  for (int d = 0; d < 3; d++) c[d] /= (double)n;
  for (int k = 0; k < n; k++)
    for (int d = 0; d < 3; d++)
      q[3 * k + d] = (F.x[3 * F.fi[s0 + k] + d] - c[d]) + (hard ? F.u[3 * (s0 + k) + d] : 0.0);
  if (planar) mb_deform_project_planar(n, q, z);
  else mb_deform_project_regular(n, q, z);
  for (int k = 0; k < n; k++) {
    const double dx = q[3 * k] - z[3 * k], dy = q[3 * k + 1] - z[3 * k + 1],
                 dz = q[3 * k + 2] - z[3 * k + 2];
    const double r = sqrt(dx * dx + dy * dy + dz * dz);
    if (r > worst) worst = r;
  }
  for (int k = 0; k < 3 * n; k++) {
    if (hard) {
      const double uk = F.u[3 * s0 + k];
      z[k] = al * z[k] + (1.0 - al) * (q[k] - uk);
      q[k] = z[k] - uk;
    }
    m[k % 3] += hard ? q[k] : z[k];
  }
  for (int d = 0; d < 3; d++) ym[d] = m[d] / (double)n;
  return worst;
}

template <class T> T *upload(const std::vector<T> &h) {
  T *d = nullptr;
  assert_int_equal(cudaMalloc((void **)&d, sizeof(T) * (h.size() ? h.size() : 1)), cudaSuccess);
  if (h.size())
    assert_int_equal(cudaMemcpy(d, h.data(), sizeof(T) * h.size(), cudaMemcpyHostToDevice),
                     cudaSuccess);
  return d;
}

template <class T> std::vector<T> download(const T *d, size_t n) {
  std::vector<T> h(n);
  if (n) assert_int_equal(cudaMemcpy(h.data(), d, sizeof(T) * n, cudaMemcpyDeviceToHost),
                          cudaSuccess);
  return h;
}

void test_local_step(void **state) {
  (void)state;
  faces F;
  F.fo.push_back(0);
  uint64_t rs = 2026;
  const int sizes[10] = {4, 4, 4, 3, 3, 4, 5, 6, 8, 9};
  int fixed_faces = 0;
  std::vector<int> kinds;
  for (int t = 0; t < 6000; t++) {
    const int n = sizes[(int)(mb_test_urand(&rs) * 10)];
    const int kind = t % 97 == 5 ? 4 : t % 89 == 7 ? 5 : t % 4; /* collinear, coincident rarely */
    add_face(F, n, kind, &rs);
    kinds.push_back(kind);
    fixed_faces += n == 3 || n == 4;
  }
  const int64_t nf = (int64_t)F.fo.size() - 1, ni = (int64_t)F.fi.size();
  int64_t *dfo = upload(F.fo), *dfi = upload(F.fi);
  double *dx = upload(F.x), *du = upload(F.u);
  double *dq = nullptr, *dz = nullptr, *dym = nullptr, *dw = nullptr;
  assert_int_equal(cudaMalloc((void **)&dq, sizeof(double) * 3 * ni), cudaSuccess);
  assert_int_equal(cudaMalloc((void **)&dz, sizeof(double) * 3 * ni), cudaSuccess);
  assert_int_equal(cudaMalloc((void **)&dym, sizeof(double) * 3 * nf), cudaSuccess);
  assert_int_equal(cudaMalloc((void **)&dw, sizeof(double) * nf), cudaSuccess);
  const double sentinel = -1234.5;
  const std::vector<double> fill(3 * (size_t)ni, sentinel);
  for (int planar = 1; planar >= 0; planar--)
    for (int run = 0; run < 3; run++) {
      const int hard = run > 0;
      const double al = run == 2 ? MB_DEFORM_RELAX : 1.0;
      assert_int_equal(cudaMemcpy(dq, fill.data(), sizeof(double) * 3 * ni,
                                  cudaMemcpyHostToDevice), cudaSuccess);
      k_step<<<(unsigned)((nf + 127) / 128), 128>>>(nf, dfo, dfi, dx, du, dq, dz, dym, planar,
                                                    hard, al, dw);
      assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
      const std::vector<double> q = download(dq, 3 * ni), z = download(dz, 3 * ni),
                                ym = download(dym, 3 * nf), w = download(dw, nf);
      int64_t differ = 0, unwritten = 0, small_slots = 0, ill = 0;
      double worst_dev = 0;
      for (int64_t f = 0; f < nf; f++) {
        const int64_t s0 = F.fo[f];
        const int n = (int)(F.fo[f + 1] - s0);
        std::vector<double> qc(3 * n), zc(3 * n);
        double ymc[3];
        const double wc = cpu_step(F, f, planar, hard, al, qc.data(), zc.data(), ymc);
        const int small = planar && (n == 3 || n == 4);
        if (planar) {
          int same = memcmp(&z[3 * s0], zc.data(), sizeof(double) * 3 * n) == 0 &&
                     memcmp(&w[f], &wc, sizeof wc) == 0 &&
                     memcmp(&ym[3 * f], ymc, sizeof ymc) == 0;
          if (hard) same = same && memcmp(&q[3 * s0], qc.data(), sizeof(double) * 3 * n) == 0;
          differ += !same;
        } else {
          double size = 0, e = fabs(w[f] - wc);
          for (int k = 0; k < 3 * n; k++) {
            size = fmax(size, fabs(qc[k]));
            e = fmax(e, fabs(z[3 * s0 + k] - zc[k]));
            if (hard) e = fmax(e, fabs(q[3 * s0 + k] - qc[k]));
          }
          for (int d = 0; d < 3; d++) e = fmax(e, fabs(ym[3 * f + d] - ymc[d]));
          /* a collinear or coincident face has no plane: the regular n-gon's
           * turn about it is free, and the device's and the host's rounding
           * may pick different (equally good) ones; their outputs must be
           * finite, the rest agree to the bound */
          if (kinds[(size_t)f] >= 4) {
            ill++;
            for (int k = 0; k < 3 * n; k++) assert_true(isfinite(z[3 * s0 + k]));
          } else worst_dev = fmax(worst_dev, e / fmax(size, 1e-300));
        }
        small_slots += small ? 3 * n : 0;
        for (int k = 0; k < 3 * n; k++) unwritten += memcmp(&q[3 * s0 + k], &sentinel, 8) == 0;
      }
      printf("%s, %s (al %g): %lld faces (%d of 3 or 4 points): %s; q unwritten at %lld "
             "slots\n",
             planar ? "planar" : "regular", hard ? "hard" : "soft", al, (long long)nf,
             fixed_faces,
             planar ? (differ ? "faces DIFFER from the CPU's bits" : "every face the CPU's bits")
                    : "regular within the bound",
             (long long)unwritten);
      if (planar) {
        if (differ) fail_msg("%lld faces differ from the CPU's bits", (long long)differ);
      } else {
        printf("regular: largest difference %.3g of the face's size (%lld collinear or "
               "coincident faces: finite only)\n", worst_dev, (long long)ill);
        assert_true(worst_dev <= 1e-13);
      }
      /* q: every slot written in hard mode (y), in soft mode all but the
       * fixed-size path's (the general path's scratch) */
      assert_true(hard ? unwritten == 0 : unwritten == small_slots);
      assert_true(!planar || small_slots > 0);
    }
  cudaFree(dfo);
  cudaFree(dfi);
  cudaFree(dx);
  cudaFree(du);
  cudaFree(dq);
  cudaFree(dz);
  cudaFree(dym);
  cudaFree(dw);
}

} // namespace

int main(void) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count < 1) {
    printf("test_gpu_deform_proj: skipped, no usable CUDA device (%s)\n",
           e != cudaSuccess ? cudaGetErrorString(e) : "none");
    return MB_TEST_SKIP;
  }
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_local_step)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
