/* meshbatch: conformal Willmore flow by spin transformations on the GPU
 * (the willmore room's CUDA backend; the method, its sources [CPS11,
 * CPS13] and conventions are in src/ops/willmore/mb_willmore.h). One whole
 * mesh on the current device, float64 throughout, the positions kept on
 * the device for every step. The steps are the CPU's (mb_willmore.c) in
 * the CPU's order of operations; the sums are partition/mb_reduce's exact
 * device sums (the CPU sums in order, so the last bits may differ) and
 * D - rho is assembled with float64 atomics (the order of a slot's adds
 * varies): the result agrees with the CPU's to rounding, not bit for bit
 * (tests/willmore: 1e-8 of the bounding box after 10 steps).
 *
 * Once per mesh: the checks (host, mb_willmore_check), the Laplacian's and
 * the Dirac operator's patterns and the triangles' block positions (host,
 * uploaded), each vertex's triangles in triangle order (for the normals),
 * and the device Cholesky's order and analysis of both patterns
 * (cuda/linalg: METIS_NodeND and csrchol).
 * Per step (CPS13 section 5, CPS11 sections 4-5):
 *   1. normals, H = -(L x).N / (2 M), rho = -tau H, its projection onto
 *      {1, N_x, N_y, N_z} orthonormalised in the mass inner product
 *      (modified Gram-Schmidt twice, projection twice; every inner product
 *      an exact device sum);
 *   2. D - rho: one thread per triangle adds its nine 4x4 blocks at their
 *      precomputed positions; sigma = 1e-12 max diagonal (one download);
 *   3. inverse iteration from the constant 1: (D - rho + sigma I) factored
 *      once, per iteration one solve, the norm, the Rayleigh quotient and
 *      the residual as device-resident exact sums, their three values
 *      downloaded together (one download per iteration); then the right
 *      quaternion factor that makes lambda's mean real and positive;
 *   4. the transformed edges' divergence, -L with vertex 0 pinned, its
 *      factor and solve; recentre to the input's area-weighted centroid
 *      and rescale to its area; the next L and mass, the energy and the
 *      distortions (the largest by an atomic maximum of the bits of
 *      positive float64, the mean by exact sums).
 * Solver iterative (mb_willmore.h, Solvers): no Cholesky analysis, no
 * shifted copy of D. Per mesh one AMG hierarchy of the pinned Poisson
 * matrix (built on the host from the first step's values, linalg/mb_amg.h),
 * per step its device update (cuda/linalg, mb_cuda_amg_update) in the
 * assembly phase; step 3's solves by this file's PCG on the 4n system
 * (inner_pcg: D's row-kernel product plus sigma, the V-cycle on [n, 4],
 * exact device sums, one download of three numbers per iteration); step
 * 4 by mb_cuda_pcg_solve with the same hierarchy, warm-started.
 *
 * Over 1,000 lines (about 1,140) for now: both solvers share the step's
 * kernels and the device state (wm_gpu); the iterative eigen solve's
 * kernels and loop are the part to move into a file of their own next. */
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "mb_cotan.h"
#include "mb_csr.h"
#include "mb_cuda_private.cuh"
#include "mb_linalg_cuda.h"
#include "mb_log.h"
#include "mb_op.h"
#include "mb_reduce.h"
#include "mb_reduce_impl.h"
#include "mb_willmore.h"
#include "mb_quaternion.h"

namespace {

constexpr int BLOCK = 256;
constexpr int32_t NONE = 0x7fffffff; /* "no row flagged" in a check */
unsigned blocks(int64_t n) { return (unsigned)((n + BLOCK - 1) / BLOCK); }

/* Area-weighted unit vertex normals: vertex i's triangles vf[vf_row[i] ..]
 * in triangle order (the CPU's order of adds); bad: the first vertex
 * without a normal. */
__global__ void k_normals(int32_t n, const int32_t *__restrict__ vf_row,
                          const int32_t *__restrict__ vf, const int64_t *__restrict__ tri,
                          const double *__restrict__ x, double *__restrict__ N,
                          int32_t *__restrict__ bad) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  double s0 = 0.0, s1 = 0.0, s2 = 0.0;
  for (int32_t k = vf_row[i]; k < vf_row[i + 1]; k++) {
    const int64_t *t = tri + 3 * (int64_t)vf[k];
    double u[3], v[3];
    for (int c = 0; c < 3; c++) {
      u[c] = x[3 * t[1] + c] - x[3 * t[0] + c];
      v[c] = x[3 * t[2] + c] - x[3 * t[0] + c];
    }
    s0 += u[1] * v[2] - u[2] * v[1];
    s1 += u[2] * v[0] - u[0] * v[2];
    s2 += u[0] * v[1] - u[1] * v[0];
  }
  double l = 0.0;
  l += s0 * s0;
  l += s1 * s1;
  l += s2 * s2;
  l = sqrt(l);
  if (!(l > 0 && isfinite(l))) atomicMin(bad, i);
  N[3 * i] = s0 / l;
  N[3 * i + 1] = s1 / l;
  N[3 * i + 2] = s2 / l;
}

/* H_i = -(L x)_i . N_i / (2 M_i), rho_i = -tau H_i (step 1). */
__global__ void k_curvature(int32_t n, double tau, const double *__restrict__ y,
                            const double *__restrict__ N, const double *__restrict__ mass,
                            double *__restrict__ rho) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  const double *a = y + 3 * i, *b = N + 3 * i;
  const double H = -(a[0] * b[0] + a[1] * b[1] + a[2] * b[2]) / (2.0 * mass[i]);
  rho[i] = -tau * H;
}

/* u [4, n]: rows 1, N_x, N_y, N_z (the basis before orthonormalisation). */
__global__ void k_basis(int32_t n, const double *__restrict__ N, double *__restrict__ u) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  u[i] = 1.0;
  for (int k = 0; k < 3; k++) u[(int64_t)(k + 1) * n + i] = N[3 * i + k];
}

/* t = m a (the first factor of the terms m_i a_i b_i, in the CPU's order). */
__global__ void k_mul(int64_t n, const double *__restrict__ m, const double *__restrict__ a,
                      double *__restrict__ t) {
  const int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) t[i] = m[i] * a[i];
}

/* a -= c b. */
__global__ void k_axpy(int64_t n, double c, const double *__restrict__ b, double *__restrict__ a) {
  const int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) a[i] -= c * b[i];
}

/* a /= c. */
__global__ void k_div(int64_t n, double c, double *__restrict__ a) {
  const int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) a[i] /= c;
}

/* Step 2: triangle f's nine blocks of D - rho added at their positions
 * (mb_willmore_dirac_assemble's arithmetic); bad: the first triangle of
 * zero or non-finite area. */
__global__ void k_dirac(int64_t nf, const int64_t *__restrict__ tri, const double *__restrict__ x,
                        const double *__restrict__ rho, const int32_t *__restrict__ slot,
                        const int32_t *__restrict__ rowlen, double *__restrict__ val,
                        int32_t *__restrict__ bad) {
  const int64_t f = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  if (f >= nf) return;
  const int64_t *t = tri + 3 * f;
  double a2;
  MB_TRIANGLE_AREA2(double, x, t[0], t[1], t[2], a2);
  const double A = 0.5 * a2;
  if (!(A > 0 && isfinite(A))) {
    atomicMin(bad, (int32_t)f);
    return;
  }
  double e[3][4];
  for (int a = 0; a < 3; a++) {
    const int64_t p = t[(a + 1) % 3], q = t[(a + 2) % 3]; /* e_a = x_q - x_p */
    e[a][0] = 0.0;
    for (int k = 0; k < 3; k++) e[a][k + 1] = x[3 * q + k] - x[3 * p + k];
  }
  const double r[3] = {rho[t[0]], rho[t[1]], rho[t[2]]};
  const double ca = -1.0 / (4.0 * A), cb = 1.0 / 6.0, cc = A / 9.0;
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++) {
      double q[4];
      mb_qmul(e[a], e[b], q);
      for (int k = 0; k < 4; k++) q[k] = ca * q[k];
      for (int k = 1; k < 4; k++) q[k] = q[k] + cb * (r[a] * e[b][k] - r[b] * e[a][k]);
      q[0] = q[0] + r[a] * r[b] * cc;
      /* the left-multiplication matrix of q (mb_willmore.c's add_block) */
      const int32_t w = 4 * rowlen[t[a]];
      double *r0 = val + slot[9 * f + 3 * a + b], *r1 = r0 + w, *r2 = r1 + w, *r3 = r2 + w;
      atomicAdd(r0 + 0, q[0]), atomicAdd(r0 + 1, -q[1]), atomicAdd(r0 + 2, -q[2]),
          atomicAdd(r0 + 3, -q[3]);
      atomicAdd(r1 + 0, q[1]), atomicAdd(r1 + 1, q[0]), atomicAdd(r1 + 2, -q[3]),
          atomicAdd(r1 + 3, q[2]);
      atomicAdd(r2 + 0, q[2]), atomicAdd(r2 + 1, q[3]), atomicAdd(r2 + 2, q[0]),
          atomicAdd(r2 + 3, -q[1]);
      atomicAdd(r3 + 0, q[3]), atomicAdd(r3 + 1, -q[2]), atomicAdd(r3 + 2, q[1]),
          atomicAdd(r3 + 3, q[0]);
    }
}

/* The largest positive diagonal entry, as the bits of a positive float64
 * (their integer order is their order; NaN and entries <= 0 are skipped,
 * as the CPU's fmax from 0 skips them). */
__global__ void k_diag_max(int32_t m, const int32_t *__restrict__ diag,
                           const double *__restrict__ val, unsigned long long *__restrict__ mx) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= m) return;
  const double v = val[diag[i]];
  if (v > 0) atomicMax(mx, (unsigned long long)__double_as_longlong(v));
}

/* S's diagonal += sigma (S holds a copy of D's values). */
__global__ void k_shift(int32_t m, const int32_t *__restrict__ diag, double sigma,
                        double *__restrict__ val) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < m) val[diag[i]] += sigma;
}

/* lambda: 1 on every real component divided by nl, the 2-norm of that
 * vector (sqrt(n)): the CPU's start. */
__global__ void k_lambda0(int32_t m, double nl, double *__restrict__ l) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < m) l[i] = i % 4 == 0 ? 1.0 / nl : 0.0;
}

/* t = a b. */
__global__ void k_prod(int64_t n, const double *__restrict__ a, const double *__restrict__ b,
                       double *__restrict__ t) {
  const int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) t[i] = a[i] * b[i];
}

/* out = the value of the device accumulator acc, or its square root. */
__global__ void k_value(const int64_t *__restrict__ acc, int root, double *__restrict__ out) {
  const double v = mb_reduce_slots_value(acc);
  *out = root ? sqrt(v) : v;
}

/* lambda = y / *nl. */
__global__ void k_normalise(int32_t m, const double *__restrict__ nl, const double *__restrict__ y,
                            double *__restrict__ l) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < m) l[i] = y[i] / *nl;
}

/* y -= g lambda, t = y y (the residual's terms). */
__global__ void k_residual(int32_t m, const double *__restrict__ g, const double *__restrict__ l,
                           double *__restrict__ y, double *__restrict__ t) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= m) return;
  y[i] -= *g * l[i];
  t[i] = y[i] * y[i];
}

/* t [4, n] = lambda [n, 4] transposed (for the sums of its components). */
__global__ void k_components(int32_t n, const double *__restrict__ l, double *__restrict__ t) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  for (int k = 0; k < 4; k++) t[(int64_t)k * n + i] = l[4 * i + k];
}

/* lambda_i = lambda_i q. */
__global__ void k_right(int32_t n, double q0, double q1, double q2, double q3,
                        double *__restrict__ l) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  const double q[4] = {q0, q1, q2, q3};
  double r[4];
  mb_qmul(l + 4 * i, q, r);
  for (int k = 0; k < 4; k++) l[4 * i + k] = r[k];
}

/* ---- the iterative solver's inverse iteration (mb_willmore_dirac_eigen_pcg):
 * conjugate gradient on (D + sigma I) y = lambda, preconditioned by the
 * pinned Poisson matrix's device V-cycle on the [n, 4] view; its scalars
 * stay on the device, sc[SC_*]. */
enum { SC_NORM = 0, SC_RAYLEIGH = 1, SC_RESIDUAL = 2, SC_RZ = 3, SC_ALPHA = 4, SC_RR = 5,
       SC_YY = 6, SC_PQ = 7, SC_N = 8 };

/* y = lambda / (gamma + sigma), gamma = sc[SC_RAYLEIGH]: the warm start. */
__global__ void k_warm(int32_t m, double sigma, const double *__restrict__ sc,
                       const double *__restrict__ l, double *__restrict__ y) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < m) y[i] = l[i] / (sc[SC_RAYLEIGH] + sigma);
}

/* r = b - (q + sigma y) (q = D y). */
__global__ void k_start(int32_t m, double sigma, const double *__restrict__ b,
                        const double *__restrict__ q, const double *__restrict__ y,
                        double *__restrict__ r) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < m) r[i] = b[i] - (q[i] + sigma * y[i]);
}

/* alpha = rz / pq (pq the accumulator), pq kept for the host's check;
 * alpha 0 where pq is not > 0 (the host then fails on pq, except after the
 * iteration that converged, whose successor it never reads: no NaN there). */
__global__ void k_alpha(const int64_t *__restrict__ acc, double *__restrict__ sc) {
  const double pq = mb_reduce_slots_value(acc);
  sc[SC_ALPHA] = pq > 0 ? sc[SC_RZ] / pq : 0.0;
  sc[SC_PQ] = pq;
}

/* y += alpha p, r -= alpha q. */
__global__ void k_update(int32_t m, const double *__restrict__ sc, const double *__restrict__ p,
                         const double *__restrict__ q, double *__restrict__ y,
                         double *__restrict__ r) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= m) return;
  const double alpha = sc[SC_ALPHA];
  y[i] = y[i] + alpha * p[i];
  r[i] = r[i] - alpha * q[i];
}

/* t [3, m]: r r, y y, r z (the terms of the iteration's one 3-column sum). */
__global__ void k_terms(int32_t m, const double *__restrict__ r, const double *__restrict__ z,
                        const double *__restrict__ y, double *__restrict__ t) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= m) return;
  const double ri = r[i], yi = y[i];
  t[i] = ri * ri;
  t[(int64_t)m + i] = yi * yi;
  t[2 * (int64_t)m + i] = ri * z[i];
}

/* From the 3 accumulators (r r, y y, r z): sc[SC_RR], sc[SC_YY], rz, and
 * beta = rz / rz_old (0 where first), kept in the alpha slot for
 * k_direction (k_alpha overwrites it after). */
__global__ void k_rz(const int64_t *__restrict__ acc, int first, double *__restrict__ sc) {
  sc[SC_RR] = mb_reduce_slots_value(acc);
  sc[SC_YY] = mb_reduce_slots_value(acc + MB_REDUCE_NSLOTS);
  const double rz = mb_reduce_slots_value(acc + 2 * MB_REDUCE_NSLOTS);
  sc[SC_ALPHA] = first || sc[SC_RZ] == 0.0 ? 0.0 : rz / sc[SC_RZ];
  sc[SC_RZ] = rz;
}

/* Q [nnz of L, 4]: each block's quaternion, the first column of its 4x4
 * left-multiplication block in D's values (rows 4 len apart). */
__global__ void k_quat(int32_t n, const int32_t *__restrict__ rowptr,
                       const double *__restrict__ val, double *__restrict__ Q) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  const int32_t r0 = rowptr[i], len = rowptr[i + 1] - r0, w = 4 * len;
  for (int32_t e = r0; e < r0 + len; e++) {
    const int64_t s = 16 * (int64_t)r0 + 4 * (int64_t)(e - r0);
    Q[4 * (int64_t)e] = val[s];
    Q[4 * (int64_t)e + 1] = val[s + w];
    Q[4 * (int64_t)e + 2] = val[s + 2 * w];
    Q[4 * (int64_t)e + 3] = val[s + 3 * w];
  }
}

/* y = D x from the quaternions: per vertex row, its 4 rows' sums over the
 * blocks in entry order and each block's 4 columns in order (the CSR row
 * kernel's terms and order: the entries are +-a, +-b, +-c, +-d exactly);
 * t non-NULL: y = (D + sigma I) x (the shift added after the row's sum, as
 * the CPU's shifted_product does) and t = x y, the terms of x'(D + sigma I)x. */
__global__ void k_qspmv(int32_t n, const int32_t *__restrict__ rowptr,
                        const int32_t *__restrict__ col, const double *__restrict__ Q,
                        const double *__restrict__ x, double *__restrict__ y, double sigma,
                        double *__restrict__ t) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  for (int32_t e = rowptr[i]; e < rowptr[i + 1]; e++) {
    const double a = Q[4 * (int64_t)e], b = Q[4 * (int64_t)e + 1], c = Q[4 * (int64_t)e + 2],
                 d = Q[4 * (int64_t)e + 3];
    const double *v = x + 4 * (int64_t)col[e];
    const double x0 = v[0], x1 = v[1], x2 = v[2], x3 = v[3];
    s0 += a * x0;
    s0 += (-b) * x1;
    s0 += (-c) * x2;
    s0 += (-d) * x3;
    s1 += b * x0;
    s1 += a * x1;
    s1 += (-d) * x2;
    s1 += c * x3;
    s2 += c * x0;
    s2 += d * x1;
    s2 += a * x2;
    s2 += (-b) * x3;
    s3 += d * x0;
    s3 += (-c) * x1;
    s3 += b * x2;
    s3 += a * x3;
  }
  const int64_t o = 4 * (int64_t)i;
  if (t) {
    const double x0 = x[o], x1 = x[o + 1], x2 = x[o + 2], x3 = x[o + 3];
    s0 = s0 + sigma * x0;
    s1 = s1 + sigma * x1;
    s2 = s2 + sigma * x2;
    s3 = s3 + sigma * x3;
    t[o] = x0 * s0;
    t[o + 1] = x1 * s1;
    t[o + 2] = x2 * s2;
    t[o + 3] = x3 * s3;
  }
  y[o] = s0;
  y[o + 1] = s1;
  y[o + 2] = s2;
  y[o + 3] = s3;
}

__global__ void k_direction(int32_t m, const double *__restrict__ sc,
                            const double *__restrict__ z, double *__restrict__ p) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < m) p[i] = z[i] + sc[SC_ALPHA] * p[i];
}

/* xn = (x - x_0) / n: the Poisson solve's warm start. */
__global__ void k_poisson_start(int32_t n, const double *__restrict__ x, double *__restrict__ xn) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  for (int k = 0; k < 3; k++) xn[3 * i + k] = (x[3 * i + k] - x[k]) / (double)n;
}

/* P = -L with vertex 0's row and column the identity's. */
__global__ void k_pinned(int32_t n, const int32_t *__restrict__ rowptr,
                         const int32_t *__restrict__ col, const double *__restrict__ L,
                         double *__restrict__ P) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  for (int32_t e = rowptr[i]; e < rowptr[i + 1]; e++) {
    const int32_t j = col[e];
    P[e] = i == 0 || j == 0 ? (i == j ? 1.0 : 0.0) : -L[e];
  }
}

/* Step 4: b_i = -sum_j L_ij e~_ij (0 at the pinned vertex 0), the CPU's
 * spin_positions row by row. */
__global__ void k_edges(int32_t n, const int32_t *__restrict__ rowptr,
                        const int32_t *__restrict__ col, const int32_t *__restrict__ diag,
                        const double *__restrict__ L, const double *__restrict__ x,
                        const double *__restrict__ l, double *__restrict__ b) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  double s[3] = {0.0, 0.0, 0.0};
  for (int32_t e = rowptr[i]; e < rowptr[i + 1]; e++) {
    const int32_t j = col[e];
    if (e == diag[i]) continue;
    const double ed[4] = {0.0, x[3 * j] - x[3 * i], x[3 * j + 1] - x[3 * i + 1],
                          x[3 * j + 2] - x[3 * i + 2]};
    double t1[4], t2[4], t3[4], t4[4];
    mb_qsandwich(l + 4 * i, ed, l + 4 * i, t1);
    mb_qsandwich(l + 4 * i, ed, l + 4 * j, t2);
    mb_qsandwich(l + 4 * j, ed, l + 4 * i, t3);
    mb_qsandwich(l + 4 * j, ed, l + 4 * j, t4);
    for (int k = 0; k < 3; k++) {
      const double et = t1[k + 1] / 3.0 + t2[k + 1] / 6.0 + t3[k + 1] / 6.0 + t4[k + 1] / 3.0;
      s[k] += L[e] * et;
    }
  }
  for (int k = 0; k < 3; k++) b[3 * i + k] = i == 0 ? 0.0 : -s[k];
}

/* bad: the first vertex with a non-finite coordinate. */
__global__ void k_finite(int32_t n, const double *__restrict__ x, int32_t *__restrict__ bad) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n && !(isfinite(x[3 * i]) && isfinite(x[3 * i + 1]) && isfinite(x[3 * i + 2])))
    atomicMin(bad, i);
}

/* bad: the first vertex whose mass is not > 0 and finite. */
__global__ void k_mass_check(int32_t n, const double *__restrict__ m, int32_t *__restrict__ bad) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n && !(m[i] > 0 && isfinite(m[i]))) atomicMin(bad, i);
}

/* One coordinate of x [n, 3] into t [n]. */
__global__ void k_coordinate(int32_t n, int c, const double *__restrict__ x, double *__restrict__ t) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) t[i] = x[3 * i + c];
}

/* x = c0 + (xn - c) s (recentre and rescale). */
__global__ void k_place(int32_t n, const double *__restrict__ xn, double c0, double c1, double c2,
                        double d0, double d1, double d2, double s, double *__restrict__ x) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  x[3 * i] = c0 + (xn[3 * i] - d0) * s;
  x[3 * i + 1] = c1 + (xn[3 * i + 1] - d1) * s;
  x[3 * i + 2] = c2 + (xn[3 * i + 2] - d2) * s;
}

/* The energy's terms |(L x)_i|^2 / (4 M_i). */
__global__ void k_energy(int32_t n, const double *__restrict__ y, const double *__restrict__ m,
                         double *__restrict__ t) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  const double *a = y + 3 * i;
  t[i] = (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]) / (4.0 * m[i]);
}

/* mb_willmore.c's gram: the Gram matrix of a triangle's edges; twice its area. */
__device__ double gram(const double *x, const int64_t *t, double *g) {
  double u[3], v[3];
  for (int k = 0; k < 3; k++) {
    u[k] = x[3 * t[1] + k] - x[3 * t[0] + k];
    v[k] = x[3 * t[2] + k] - x[3 * t[0] + k];
  }
  g[0] = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];
  g[1] = u[0] * v[0] + u[1] * v[1] + u[2] * v[2];
  g[2] = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
  const double c0 = u[1] * v[2] - u[2] * v[1], c1 = u[2] * v[0] - u[0] * v[2],
               c2 = u[0] * v[1] - u[1] * v[0];
  return sqrt(c0 * c0 + c1 * c1 + c2 * c2);
}

/* Per triangle, mb_willmore_distortion's K = sigma_1 / sigma_2 of the map
 * x0 -> x: tk = A0 K, ta = A0 (A0 the area in x0), mx the largest K (bits). */
__global__ void k_distortion(int64_t nf, const int64_t *__restrict__ tri,
                             const double *__restrict__ x0, const double *__restrict__ x,
                             double *__restrict__ tk, double *__restrict__ ta,
                             unsigned long long *__restrict__ mx) {
  const int64_t f = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  if (f >= nf) return;
  double g0[3], g[3];
  const double a0 = gram(x0, tri + 3 * f, g0), a = gram(x, tri + 3 * f, g);
  const double d0 = a0 * a0, d = a * a;
  const double t = g0[0] * g[2] + g0[2] * g[0] - 2.0 * g0[1] * g[1];
  double k = INFINITY;
  if (d0 > 0 && d > 0) {
    const double s = fmax(t / sqrt(d0 * d), 2.0);
    k = 0.5 * (s + sqrt(fmax(s * s - 4.0, 0.0)));
  }
  if (k > 0) atomicMax(mx, (unsigned long long)__double_as_longlong(k));
  tk[f] = 0.5 * a0 * k;
  ta[f] = 0.5 * a0;
}

/* Everything one run holds on the device and the host. */
struct wm_gpu {
  const mb_willmore_params *p = nullptr;
  mb_willmore_mesh *wm = nullptr;
  int32_t n = 0, m = 0; /* vertices, rows of D (4 n) */
  int64_t nf = 0;
  mb_csr *Lh = nullptr, *Dh = nullptr; /* host patterns */
  mb_cuda_csr *dL = nullptr, *dP = nullptr, *dD = nullptr, *dS = nullptr;
  mb_cuda_cholesky *dchol = nullptr, *pchol = nullptr; /* solver cholesky */
  mb_cuda_amg *amg = nullptr;  /* solver iterative: the pinned Poisson matrix's hierarchy */
  int iterative = 0;
  mb_reduce_device *rd = nullptr;
  const int32_t *rowptr = nullptr, *col = nullptr, *diag = nullptr; /* dL's */
  double *lval = nullptr, *pval = nullptr, *dval = nullptr, *sval = nullptr;
  const int32_t *ddiag = nullptr, *sdiag = nullptr;
  mb_dbuf tri, vf_row, vf, slot, rowlen;
  mb_dbuf x, x0, xs, xn, N, y, mass, rho, u, lambda, ly, b, t, t2, bad, umax, acc, sc;
  mb_dbuf cr, cz, cp, cq; /* solver iterative: the inner PCG's vectors [4 n] */
  mb_dbuf Q;              /* solver iterative: D's blocks as quaternions [nnz of L, 4] */
  double *hpin = nullptr; /* solver iterative: pinned [2, 3], the PCG's checks */
  cudaEvent_t ev[2] = {nullptr, nullptr};
  ~wm_gpu() {
    mb_csr_free(Lh);
    mb_csr_free(Dh);
    mb_cuda_csr_free(dL);
    mb_cuda_csr_free(dP);
    mb_cuda_csr_free(dD);
    mb_cuda_csr_free(dS);
    mb_cuda_cholesky_free(dchol);
    mb_cuda_cholesky_free(pchol);
    mb_cuda_amg_free(amg);
    mb_reduce_device_free(rd);
    if (hpin) cudaFreeHost(hpin);
    for (cudaEvent_t e : ev)
      if (e) cudaEventDestroy(e);
  }
  double *d(mb_dbuf &bf) { return bf.as<double>(); }
};

/* The first flagged index (NONE if none), reset for the next check. */
mb_error take_bad(wm_gpu *g, int32_t *first) {
  MB_CALL_CUDA(cudaMemcpy(first, g->bad.p, sizeof(int32_t), cudaMemcpyDeviceToHost));
  const int32_t none = NONE;
  MB_CALL_CUDA(cudaMemcpy(g->bad.p, &none, sizeof(int32_t), cudaMemcpyHostToDevice));
  return MB_SUCCESS;
}

/* Exact sum of x[i] y[i] (y NULL: x[i]) over n device values. */
mb_error dsum(wm_gpu *g, int64_t n, const double *x, const double *y, double *out) {
  mb_reduce_acc acc;
  mb_reduce_acc_zero(&acc);
  MB_CALL(mb_reduce_device_acc(g->rd, nullptr, n, x, y, &acc));
  *out = mb_reduce_acc_value(&acc);
  return MB_SUCCESS;
}

/* <a, b>_M = sum_i M_i a_i b_i. */
mb_error dot_m(wm_gpu *g, const double *a, const double *b, double *out) {
  k_mul<<<blocks(g->n), BLOCK>>>(g->n, g->d(g->mass), a, g->d(g->t));
  MB_CHECK_LAUNCH("willmore mass product");
  return dsum(g, g->n, g->d(g->t), b, out);
}

/* Host copies made once per mesh: patterns, block positions, each vertex's
 * triangles; the device's analyses. */
mb_error setup(wm_gpu *g) {
  mb_willmore_mesh *wm = g->wm;
  MB_CHECK(wm->nv <= INT32_MAX / 4 && wm->nf <= INT32_MAX, MB_ERR_ARG,
           "%s: %lld vertices, %lld triangles: above the GPU backend's 32-bit indices",
           wm->name, (long long)wm->nv, (long long)wm->nf);
  g->n = (int32_t)wm->nv;
  g->m = 4 * g->n;
  g->nf = wm->nf;
  const size_t n = (size_t)g->n, nf = (size_t)g->nf;
  MB_CALL(mb_csr_pattern(wm->adj, wm->nv, wm->nv, NULL, &g->Lh));
  std::vector<int32_t> slot(9 * nf), rowlen(n), vf_row(n + 1, 0), vf(3 * nf);
  MB_CALL(mb_willmore_dirac_pattern(wm->adj, wm->nf, wm->tri, &g->Dh, slot.data(),
                                    rowlen.data()));
  for (size_t f = 0; f < nf; f++)
    for (int a = 0; a < 3; a++) vf_row[(size_t)wm->tri[3 * f + a] + 1]++;
  for (size_t i = 0; i < n; i++) vf_row[i + 1] += vf_row[i];
  {
    std::vector<int32_t> fill(vf_row.begin(), vf_row.end() - 1);
    for (size_t f = 0; f < nf; f++) /* triangle order: the CPU's order of adds */
      for (int a = 0; a < 3; a++) vf[(size_t)fill[(size_t)wm->tri[3 * f + a]]++] = (int32_t)f;
  }
  MB_CALL(mb_cuda_csr_create(g->Lh, wm->adj, &g->dL));
  MB_CALL(mb_cuda_csr_create(g->Lh, nullptr, &g->dP));
  MB_CALL(mb_cuda_csr_create(g->Dh, nullptr, &g->dD));
  mb_cuda_csr_set_product(g->dL, MB_CUDA_PRODUCT_ROWS);
  mb_cuda_csr_set_product(g->dD, MB_CUDA_PRODUCT_ROWS);
  mb_cuda_csr_arrays(g->dL, &g->rowptr, &g->col, &g->diag, &g->lval);
  mb_cuda_csr_arrays(g->dP, nullptr, nullptr, nullptr, &g->pval);
  mb_cuda_csr_arrays(g->dD, nullptr, nullptr, &g->ddiag, &g->dval);
  g->iterative = mb_willmore_solver_for(g->p->solver, wm->nv, 1) == MB_WILLMORE_ITERATIVE;
  if (!g->iterative) { /* the shifted copy and both devices' Cholesky analyses */
    MB_CALL(mb_cuda_csr_create(g->Dh, nullptr, &g->dS));
    mb_cuda_csr_arrays(g->dS, nullptr, nullptr, &g->sdiag, &g->sval);
    MB_CALL(mb_cuda_cholesky_create(g->Dh, &g->dchol));
    MB_CALL(mb_cuda_cholesky_create(g->Lh, &g->pchol));
  } else {
    for (mb_dbuf *bf : {&g->cr, &g->cz, &g->cp, &g->cq})
      MB_CALL(mb_dbuf_alloc(bf, sizeof(double) * 4 * n, "willmore PCG vectors"));
    MB_CALL(mb_dbuf_alloc(&g->Q, sizeof(double) * 4 * (size_t)g->Lh->nnz,
                          "willmore Dirac quaternions"));
    MB_CALL_CUDA(cudaMallocHost((void **)&g->hpin, 6 * sizeof(double)));
    for (cudaEvent_t &e : g->ev) MB_CALL_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  MB_CALL(mb_reduce_device_create(&g->rd));
  /* t holds 3 m terms (the inner PCG's 3-column sum) */
  const size_t tn = 3 * (size_t)g->m > nf ? 3 * (size_t)g->m : nf;
  struct {
    mb_dbuf *b;
    size_t bytes;
    const char *what;
  } bufs[] = {
      {&g->tri, sizeof(int64_t) * 3 * nf, "willmore triangles"},
      {&g->vf_row, sizeof(int32_t) * (n + 1), "willmore vertex triangles"},
      {&g->vf, sizeof(int32_t) * 3 * nf, "willmore vertex triangles"},
      {&g->slot, sizeof(int32_t) * 9 * nf, "willmore block positions"},
      {&g->rowlen, sizeof(int32_t) * n, "willmore row lengths"},
      {&g->x, sizeof(double) * 3 * n, "willmore positions"},
      {&g->x0, sizeof(double) * 3 * n, "willmore stage input"},
      {&g->xs, sizeof(double) * 3 * n, "willmore step input"},
      {&g->xn, sizeof(double) * 3 * n, "willmore new positions"},
      {&g->N, sizeof(double) * 3 * n, "willmore normals"},
      {&g->y, sizeof(double) * 3 * n, "willmore products"},
      {&g->mass, sizeof(double) * n, "willmore mass"},
      {&g->rho, sizeof(double) * n, "willmore curvature change"},
      {&g->u, sizeof(double) * 4 * n, "willmore constraint basis"},
      {&g->lambda, sizeof(double) * 4 * n, "willmore eigenvector"},
      {&g->ly, sizeof(double) * 4 * n, "willmore iterate"},
      {&g->b, sizeof(double) * 3 * n, "willmore right-hand side"},
      {&g->t, sizeof(double) * tn, "willmore terms"},
      {&g->t2, sizeof(double) * tn, "willmore terms"},
      {&g->bad, sizeof(int32_t), "willmore checks"},
      {&g->umax, sizeof(unsigned long long), "willmore maximum"},
      {&g->acc, sizeof(int64_t) * 6 * MB_REDUCE_NSLOTS, "willmore sums"},
      {&g->sc, sizeof(double) * SC_N, "willmore scalars"},
  };
  for (auto &bf : bufs) MB_CALL(mb_dbuf_alloc(bf.b, bf.bytes, bf.what));
  MB_CALL_CUDA(cudaMemcpy(g->tri.p, wm->tri, sizeof(int64_t) * 3 * nf, cudaMemcpyHostToDevice));
  MB_CALL_CUDA(cudaMemcpy(g->vf_row.p, vf_row.data(), sizeof(int32_t) * (n + 1),
                          cudaMemcpyHostToDevice));
  MB_CALL_CUDA(cudaMemcpy(g->vf.p, vf.data(), sizeof(int32_t) * 3 * nf, cudaMemcpyHostToDevice));
  MB_CALL_CUDA(cudaMemcpy(g->slot.p, slot.data(), sizeof(int32_t) * 9 * nf,
                          cudaMemcpyHostToDevice));
  MB_CALL_CUDA(cudaMemcpy(g->rowlen.p, rowlen.data(), sizeof(int32_t) * n,
                          cudaMemcpyHostToDevice));
  MB_CALL_CUDA(cudaMemcpy(g->x.p, wm->x, sizeof(double) * 3 * n, cudaMemcpyHostToDevice));
  MB_CALL_CUDA(cudaMemcpy(g->x0.p, wm->x, sizeof(double) * 3 * n, cudaMemcpyHostToDevice));
  int32_t none;
  MB_CALL(take_bad(g, &none));
  return MB_SUCCESS;
}

/* L and the mass of the current positions (checked), and the energy. */
mb_error measure(wm_gpu *g, double *energy) {
  MB_CALL(mb_cuda_cotangent_laplacian(g->dL, g->d(g->x), g->d(g->mass)));
  k_mass_check<<<blocks(g->n), BLOCK>>>(g->n, g->d(g->mass), g->bad.as<int32_t>());
  MB_CHECK_LAUNCH("willmore mass check");
  int32_t bad;
  MB_CALL(take_bad(g, &bad));
  MB_CHECK(bad == NONE, MB_ERR_NUMERIC, "%s: vertex %d has zero area around it", g->wm->name,
           bad);
  MB_CALL(mb_cuda_csr_spmv(g->dL, 1, 3, g->d(g->x), g->d(g->y)));
  k_energy<<<blocks(g->n), BLOCK>>>(g->n, g->d(g->y), g->d(g->mass), g->d(g->t));
  MB_CHECK_LAUNCH("willmore energy");
  MB_CALL(dsum(g, g->n, g->d(g->t), nullptr, energy));
  MB_CHECK(isfinite(*energy), MB_ERR_NUMERIC, "%s: the Willmore energy is %g", g->wm->name,
           *energy);
  return MB_SUCCESS;
}

/* Total area (sum of the masses) and area-weighted centroid c of x. */
mb_error area_centroid(wm_gpu *g, const double *x, double *area, double *c) {
  MB_CALL(dsum(g, g->n, g->d(g->mass), nullptr, area));
  for (int k = 0; k < 3; k++) {
    k_coordinate<<<blocks(g->n), BLOCK>>>(g->n, k, x, g->d(g->t));
    MB_CHECK_LAUNCH("willmore coordinate");
    MB_CALL(dsum(g, g->n, g->d(g->mass), g->d(g->t), &c[k]));
    c[k] /= *area;
  }
  return MB_SUCCESS;
}

/* Step 1: rho = -tau H projected (dL and mass are of the current x). */
mb_error curvature(wm_gpu *g, mb_willmore_step *st) {
  const int32_t n = g->n;
  k_normals<<<blocks(n), BLOCK>>>(n, g->vf_row.as<int32_t>(), g->vf.as<int32_t>(),
                                  g->tri.as<int64_t>(), g->d(g->x), g->d(g->N),
                                  g->bad.as<int32_t>());
  MB_CHECK_LAUNCH("willmore normals");
  int32_t bad;
  MB_CALL(take_bad(g, &bad));
  MB_CHECK(bad == NONE, MB_ERR_NUMERIC, "%s: vertex %d has no normal", g->wm->name, bad);
  MB_CALL(mb_cuda_csr_spmv(g->dL, 1, 3, g->d(g->x), g->d(g->y)));
  k_curvature<<<blocks(n), BLOCK>>>(n, g->p->time_step, g->d(g->y), g->d(g->N), g->d(g->mass),
                                    g->d(g->rho));
  MB_CHECK_LAUNCH("willmore curvature");
  /* the basis, orthonormalised as mb_willmore_basis does */
  double *u = g->d(g->u);
  k_basis<<<blocks(n), BLOCK>>>(n, g->d(g->N), u);
  MB_CHECK_LAUNCH("willmore basis");
  for (int k = 0; k < 4; k++) {
    double *uk = u + (int64_t)k * n, n0, nk;
    MB_CALL(dot_m(g, uk, uk, &n0));
    n0 = sqrt(n0);
    for (int pass = 0; pass < 2; pass++)
      for (int l = 0; l < k; l++) {
        const double *ul = u + (int64_t)l * n;
        double c;
        MB_CALL(dot_m(g, uk, ul, &c));
        k_axpy<<<blocks(n), BLOCK>>>(n, c, ul, uk);
        MB_CHECK_LAUNCH("willmore orthogonalisation");
      }
    MB_CALL(dot_m(g, uk, uk, &nk));
    nk = sqrt(nk);
    if (!(nk > 1e-10 * n0) || !isfinite(nk)) { /* dependent: dropped */
      MB_CALL_CUDA(cudaMemset(uk, 0, sizeof(double) * (size_t)n));
      continue;
    }
    k_div<<<blocks(n), BLOCK>>>(n, nk, uk);
    MB_CHECK_LAUNCH("willmore normalisation");
  }
  double *rho = g->d(g->rho);
  for (int pass = 0; pass < 2; pass++)
    for (int k = 0; k < 4; k++) {
      const double *uk = u + (int64_t)k * n;
      double c;
      MB_CALL(dot_m(g, rho, uk, &c));
      k_axpy<<<blocks(n), BLOCK>>>(n, c, uk, rho);
      MB_CHECK_LAUNCH("willmore projection");
    }
  double r2;
  MB_CALL(dot_m(g, rho, rho, &r2));
  st->rho_norm = sqrt(r2);
  return MB_SUCCESS;
}

/* Step 2: D - rho into dD; S = D + sigma I into dS; *dmax its largest diagonal. */
mb_error assemble(wm_gpu *g, double *dmax) {
  int32_t nnz = 0;
  mb_cuda_csr_shape(g->dD, nullptr, nullptr, &nnz);
  MB_CALL_CUDA(cudaMemset(g->dval, 0, sizeof(double) * (size_t)nnz));
  if (g->nf) {
    k_dirac<<<blocks(g->nf), BLOCK>>>(g->nf, g->tri.as<int64_t>(), g->d(g->x), g->d(g->rho),
                                      g->slot.as<int32_t>(), g->rowlen.as<int32_t>(), g->dval,
                                      g->bad.as<int32_t>());
    MB_CHECK_LAUNCH("willmore Dirac assembly");
  }
  int32_t bad;
  MB_CALL(take_bad(g, &bad));
  MB_CHECK(bad == NONE, MB_ERR_NUMERIC, "Dirac operator: triangle %d has zero or non-finite area",
           bad);
  const unsigned long long zero = 0ull;
  unsigned long long bits = 0ull;
  MB_CALL_CUDA(cudaMemcpy(g->umax.p, &zero, sizeof zero, cudaMemcpyHostToDevice));
  k_diag_max<<<blocks(g->m), BLOCK>>>(g->m, g->ddiag, g->dval, g->umax.as<unsigned long long>());
  MB_CHECK_LAUNCH("willmore diagonal maximum");
  MB_CALL_CUDA(cudaMemcpy(&bits, g->umax.p, sizeof bits, cudaMemcpyDeviceToHost));
  memcpy(dmax, &bits, sizeof *dmax);
  MB_CHECK(*dmax > 0 && isfinite(*dmax), MB_ERR_NUMERIC,
           "Dirac operator: largest diagonal entry %g", *dmax);
  k_pinned<<<blocks(g->n), BLOCK>>>(g->n, g->rowptr, g->col, g->lval, g->pval);
  MB_CHECK_LAUNCH("willmore pinned Poisson matrix");
  if (g->iterative) {
    k_quat<<<blocks(g->n), BLOCK>>>(g->n, g->rowptr, g->dval, g->d(g->Q));
    MB_CHECK_LAUNCH("willmore Dirac quaternions");
    if (!g->amg) { /* the hierarchy's structure from the first step's matrix, on the host */
      MB_CALL(mb_cuda_csr_download(g->dP, g->Lh->val));
      mb_amg *h = nullptr;
      mb_amg_opts ao = mb_amg_opts_default();
      MB_CALL(mb_amg_opts_env(&ao));
      MB_CALL(mb_amg_create(g->Lh, &ao, &h));
      const mb_error e = mb_cuda_amg_create(h, g->dP, &g->amg);
      mb_amg_free(h);
      MB_CALL(e);
    }
    MB_CALL(mb_cuda_amg_update(g->amg, g->dP));
    return MB_SUCCESS;
  }
  MB_CALL_CUDA(cudaMemcpy(g->sval, g->dval, sizeof(double) * (size_t)nnz,
                          cudaMemcpyDeviceToDevice));
  k_shift<<<blocks(g->m), BLOCK>>>(g->m, g->sdiag, 1e-12 * *dmax, g->sval);
  MB_CHECK_LAUNCH("willmore shift");
  return MB_SUCCESS;
}

/* The inner solves' stopping test relative to the eigen tolerance and their
 * iteration limit: mb_willmore.c's (mb_willmore_dirac_eigen_pcg). */
constexpr double INNER_RTOL = 1e-1;
constexpr int INNER_MAXIT = 2000;

/* q = D x by the quaternions Q (4 doubles a block instead of 16 and one
 * column index: the product reads about a sixth of the CSR's bytes). */
mb_error qspmv(wm_gpu *g, const double *x, double *q) {
  k_qspmv<<<blocks(g->n), BLOCK>>>(g->n, g->rowptr, g->col, g->d(g->Q), x, q, 0.0, nullptr);
  MB_CHECK_LAUNCH("willmore quaternion product");
  return MB_SUCCESS;
}

/* q = (D + sigma I) x and t = x q (the terms of x'(D + sigma I)x), one pass. */
mb_error qspmv_shifted(wm_gpu *g, double sigma, const double *x, double *q, double *t) {
  k_qspmv<<<blocks(g->n), BLOCK>>>(g->n, g->rowptr, g->col, g->d(g->Q), x, q, sigma, t);
  MB_CHECK_LAUNCH("willmore shifted quaternion product");
  return MB_SUCCESS;
}

/* (D + sigma I) y = b by CG preconditioned by the V-cycle on [n, 4], y warm
 * start on entry (mb_willmore.c's inner_pcg; the same iterates to rounding,
 * its steps rearranged so that the device never waits for the host):
 * stops when ||b - A y|| <= eta ||y||. An iteration: the shifted product
 * with its p'Ap terms (one kernel), one exact sum (p'Ap), alpha, the
 * update, the V-cycle, one exact sum of three columns (r r, y y, r z),
 * beta and the direction, enqueued without
 * synchronisation; its three numbers (r r, y y, p'Ap) are copied to pinned
 * host memory behind an event, and the host reads iteration k's while
 * iteration k + 1 runs (so one iteration more than the CPU's is done; the
 * residual is then recomputed, and CG restarts from it where it is above,
 * as on the CPU). */
mb_error inner_pcg(wm_gpu *g, double sigma, const double *b, double *y, double eta, int *its) {
  const int32_t m = g->m;
  double *r = g->d(g->cr), *z = g->d(g->cz), *pp = g->d(g->cp), *q = g->d(g->cq);
  double *t = g->d(g->t), *sc = g->d(g->sc);
  int64_t *acc1 = g->acc.as<int64_t>();                        /* p'Ap */
  int64_t *acc3 = g->acc.as<int64_t>() + 3 * MB_REDUCE_NSLOTS; /* r r, y y, r z */
  int k = 0;
  double h[3] = {INFINITY, 0.0, 1.0};
  for (int restart = 0;; restart++) {
    MB_CALL(qspmv(g, y, q));
    k_start<<<blocks(m), BLOCK>>>(m, sigma, b, q, y, r);
    MB_CHECK_LAUNCH("willmore PCG residual");
    MB_CALL(mb_cuda_amg_apply(g->amg, 4, r, z));
    k_terms<<<blocks(m), BLOCK>>>(m, r, z, y, t);
    MB_CHECK_LAUNCH("willmore PCG terms");
    MB_CALL(mb_reduce_device_columns(g->rd, nullptr, 3, m, t, m, acc3));
    k_rz<<<1, 1>>>(acc3, 1, sc);
    MB_CHECK_LAUNCH("willmore PCG rz");
    MB_CALL_CUDA(cudaMemcpy(h, sc + SC_RR, 2 * sizeof(double), cudaMemcpyDeviceToHost));
    if (sqrt(h[0]) <= eta * sqrt(h[1])) return MB_SUCCESS;
    MB_CHECK(restart < 3, MB_ERR_NUMERIC,
             "inverse iteration: a PCG solve's recomputed residual %.3g stays above %.3g",
             sqrt(h[0]), eta * sqrt(h[1]));
    MB_CALL_CUDA(cudaMemcpy(pp, z, sizeof(double) * (size_t)m, cudaMemcpyDeviceToDevice));
    for (int pass = 0;; pass++) {
      MB_CHECK(k < INNER_MAXIT, MB_ERR_NUMERIC,
               "inverse iteration: a PCG solve did not converge in %d iterations (residual "
               "%.3g, asked %.3g)",
               INNER_MAXIT, sqrt(h[0]), eta * sqrt(h[1]));
      MB_CALL(qspmv_shifted(g, sigma, pp, q, t));
      MB_CALL(mb_reduce_device_columns(g->rd, nullptr, 1, m, t, m, acc1));
      k_alpha<<<1, 1>>>(acc1, sc);
      MB_CHECK_LAUNCH("willmore PCG alpha");
      k_update<<<blocks(m), BLOCK>>>(m, sc, pp, q, y, r);
      MB_CHECK_LAUNCH("willmore PCG update");
      MB_CALL(mb_cuda_amg_apply(g->amg, 4, r, z));
      k_terms<<<blocks(m), BLOCK>>>(m, r, z, y, t);
      MB_CHECK_LAUNCH("willmore PCG terms");
      MB_CALL(mb_reduce_device_columns(g->rd, nullptr, 3, m, t, m, acc3));
      k_rz<<<1, 1>>>(acc3, 0, sc);
      MB_CHECK_LAUNCH("willmore PCG beta");
      k_direction<<<blocks(m), BLOCK>>>(m, sc, z, pp);
      MB_CHECK_LAUNCH("willmore PCG direction");
      double *hp = g->hpin + 3 * (pass & 1);
      MB_CALL_CUDA(cudaMemcpyAsync(hp, sc + SC_RR, 3 * sizeof(double), cudaMemcpyDeviceToHost,
                                   0));
      MB_CALL_CUDA(cudaEventRecord(g->ev[pass & 1], 0));
      k++;
      (*its)++;
      if (pass == 0) continue;
      /* the previous iteration's numbers, read while this one runs */
      MB_CALL_CUDA(cudaEventSynchronize(g->ev[(pass - 1) & 1]));
      memcpy(h, g->hpin + 3 * ((pass - 1) & 1), sizeof h);
      MB_CHECK(h[2] > 0 && isfinite(h[2]), MB_ERR_NUMERIC,
               "inverse iteration: PCG curvature p'Ap = %g (the shifted operator is not "
               "positive definite)",
               h[2]);
      if (sqrt(h[0]) <= eta * sqrt(h[1])) break; /* then recomputed above */
    }
  }
}

/* Step 3: lambda by inverse iteration (mb_willmore_dirac_eigen's method;
 * solver iterative: mb_willmore_dirac_eigen_pcg's). */
mb_error eigen(wm_gpu *g, double dmax, mb_willmore_step *st) {
  const mb_willmore_params *p = g->p;
  const int32_t m = g->m, n = g->n;
  double *l = g->d(g->lambda), *y = g->d(g->ly), *t = g->d(g->t), *sc = g->d(g->sc);
  int64_t *acc = g->acc.as<int64_t>();
  const double sigma = 1e-12 * dmax;
  mb_solve_stats ss;
  memset(&ss, 0, sizeof ss);
  if (!g->iterative) MB_CALL(mb_cuda_cholesky_factor(g->dchol, g->dS, &ss));
  k_lambda0<<<blocks(m), BLOCK>>>(m, sqrt((double)n), l);
  MB_CHECK_LAUNCH("willmore start vector");
  st->iterations = 0;
  st->inner_iterations = 0;
  st->residual = INFINITY;
  st->eigenvalue = NAN;
  double gamma = 0.0;
  if (g->iterative) { /* the start's Rayleigh quotient: the first warm start */
    MB_CALL(qspmv(g, l, y));
    k_prod<<<blocks(m), BLOCK>>>(m, l, y, t);
    MB_CHECK_LAUNCH("willmore Rayleigh terms");
    MB_CALL(mb_reduce_device_columns(g->rd, nullptr, 1, m, t, m, acc + MB_REDUCE_NSLOTS));
    k_value<<<1, 1>>>(acc + MB_REDUCE_NSLOTS, 0, sc + SC_RAYLEIGH);
    MB_CHECK_LAUNCH("willmore Rayleigh quotient");
    MB_CALL_CUDA(cudaMemcpy(&gamma, sc + SC_RAYLEIGH, sizeof gamma, cudaMemcpyDeviceToHost));
  }
  for (int it = 1; it <= p->max_iterations; it++) {
    if (g->iterative) {
      MB_CHECK(gamma + sigma > 0 && isfinite(gamma + sigma), MB_ERR_NUMERIC,
               "inverse iteration: Rayleigh quotient %g (the operator is not positive "
               "semi-definite)",
               gamma);
      k_warm<<<blocks(m), BLOCK>>>(m, sigma, sc, l, y);
      MB_CHECK_LAUNCH("willmore warm start");
      MB_CALL(inner_pcg(g, sigma, l, y, INNER_RTOL * p->tolerance * dmax,
                        &st->inner_iterations));
    } else {
      MB_CALL(mb_cuda_cholesky_solve(g->dchol, 1, l, y, &ss));
    }
    k_prod<<<blocks(m), BLOCK>>>(m, y, y, t);
    MB_CHECK_LAUNCH("willmore norm terms");
    MB_CALL(mb_reduce_device_columns(g->rd, nullptr, 1, m, t, m, acc));
    k_value<<<1, 1>>>(acc, 1, sc);
    MB_CHECK_LAUNCH("willmore norm");
    k_normalise<<<blocks(m), BLOCK>>>(m, sc, y, l);
    MB_CHECK_LAUNCH("willmore normalise");
    MB_CALL(g->iterative ? qspmv(g, l, y) : mb_cuda_csr_spmv(g->dD, 1, 1, l, y));
    k_prod<<<blocks(m), BLOCK>>>(m, l, y, t);
    MB_CHECK_LAUNCH("willmore Rayleigh terms");
    MB_CALL(mb_reduce_device_columns(g->rd, nullptr, 1, m, t, m, acc + MB_REDUCE_NSLOTS));
    k_value<<<1, 1>>>(acc + MB_REDUCE_NSLOTS, 0, sc + 1);
    MB_CHECK_LAUNCH("willmore Rayleigh quotient");
    k_residual<<<blocks(m), BLOCK>>>(m, sc + 1, l, y, t);
    MB_CHECK_LAUNCH("willmore residual terms");
    MB_CALL(mb_reduce_device_columns(g->rd, nullptr, 1, m, t, m, acc + 2 * MB_REDUCE_NSLOTS));
    k_value<<<1, 1>>>(acc + 2 * MB_REDUCE_NSLOTS, 1, sc + 2);
    MB_CHECK_LAUNCH("willmore residual");
    double h[3]; /* the iteration's one download: norm, eigenvalue, residual norm */
    MB_CALL_CUDA(cudaMemcpy(h, sc, sizeof h, cudaMemcpyDeviceToHost));
    MB_CHECK(h[0] > 0 && isfinite(h[0]), MB_ERR_NUMERIC,
             "inverse iteration: the iterate's norm became %g", h[0]);
    st->eigenvalue = h[1];
    gamma = h[1];
    st->residual = h[2] / dmax;
    st->iterations = it;
    if (st->residual <= p->tolerance) {
      /* the right quaternion factor that makes lambda's mean real and positive */
      k_components<<<blocks(n), BLOCK>>>(n, l, t);
      MB_CHECK_LAUNCH("willmore components");
      MB_CALL(mb_reduce_device_columns(g->rd, nullptr, 4, n, t, n, acc));
      mb_reduce_acc hacc[4];
      MB_CALL(mb_reduce_device_download(g->rd, nullptr, 4, acc, hacc));
      double mq[4], mn = 0.0;
      for (int k = 0; k < 4; k++) mq[k] = mb_reduce_acc_value(&hacc[k]);
      for (int k = 0; k < 4; k++) mn += mq[k] * mq[k];
      mn = sqrt(mn);
      if (mn > 0) {
        k_right<<<blocks(n), BLOCK>>>(n, mq[0] / mn, -mq[1] / mn, -mq[2] / mn, -mq[3] / mn, l);
        MB_CHECK_LAUNCH("willmore rotation");
      }
      return MB_SUCCESS;
    }
  }
  MB_FAIL(MB_ERR_NUMERIC,
          "inverse iteration did not converge: residual %.3g after %d solves (tolerance %.3g, "
          "max_iterations %d)",
          st->residual, p->max_iterations, p->tolerance, p->max_iterations);
}

/* The Poisson solve's PCG (solver iterative): mb_willmore.c's limit; its
 * tolerance is mb_willmore_poisson_rtol. */
constexpr int POISSON_MAXIT = 2000;

/* Step 4: the new positions into xn (pinned Poisson solve; P made in assemble). */
mb_error positions(wm_gpu *g, mb_willmore_step *st) {
  k_edges<<<blocks(g->n), BLOCK>>>(g->n, g->rowptr, g->col, g->diag, g->lval, g->d(g->x),
                                   g->d(g->lambda), g->d(g->b));
  MB_CHECK_LAUNCH("willmore edges");
  mb_solve_stats ss;
  memset(&ss, 0, sizeof ss);
  if (g->iterative) {
    k_poisson_start<<<blocks(g->n), BLOCK>>>(g->n, g->d(g->x), g->d(g->xn));
    MB_CHECK_LAUNCH("willmore Poisson warm start");
    const mb_pcg_opts o = {mb_willmore_poisson_rtol(g->n), POISSON_MAXIT, nullptr, g->amg};
    MB_CALL(mb_cuda_pcg_solve(MPI_COMM_SELF, nullptr, g->dP, 3, g->d(g->b), g->d(g->xn), &o,
                              &ss));
    st->poisson_iterations = ss.iterations;
  } else {
    MB_CALL(mb_cuda_cholesky_factor(g->pchol, g->dP, &ss));
    MB_CALL(mb_cuda_cholesky_solve(g->pchol, 3, g->d(g->b), g->d(g->xn), &ss));
  }
  st->poisson_residual = ss.residual;
  return MB_SUCCESS;
}

/* Recentre, rescale, measure (the CPU's end of one_step). */
mb_error finish(wm_gpu *g, double a0, const double *c0, mb_willmore_step *st) {
  const int32_t n = g->n;
  k_finite<<<blocks(n), BLOCK>>>(n, g->d(g->xn), g->bad.as<int32_t>());
  MB_CHECK_LAUNCH("willmore finite check");
  int32_t bad;
  MB_CALL(take_bad(g, &bad));
  MB_CHECK(bad == NONE, MB_ERR_NUMERIC, "vertex %d became non-finite", bad);
  /* the mass of the new positions (dL's values are overwritten, and made
   * again of the placed positions by measure) */
  MB_CALL(mb_cuda_cotangent_laplacian(g->dL, g->d(g->xn), g->d(g->mass)));
  double a, c[3];
  MB_CALL(area_centroid(g, g->d(g->xn), &a, c));
  MB_CHECK(a > 0 && isfinite(a), MB_ERR_NUMERIC, "the surface's area became %g", a);
  const double s = sqrt(a0 / a);
  k_place<<<blocks(n), BLOCK>>>(n, g->d(g->xn), c0[0], c0[1], c0[2], c[0], c[1], c[2], s,
                                g->d(g->x));
  MB_CHECK_LAUNCH("willmore recentre and rescale");
  MB_CALL(measure(g, &st->energy));
  const double *from[2] = {g->d(g->xs), g->d(g->x0)};
  double *mx[2] = {&st->qc_max, &st->qc_total_max}, *mean[2] = {&st->qc_mean, &st->qc_total_mean};
  for (int k = 0; k < 2; k++) {
    const unsigned long long zero = 0ull;
    unsigned long long bits = 0ull;
    MB_CALL_CUDA(cudaMemcpy(g->umax.p, &zero, sizeof zero, cudaMemcpyHostToDevice));
    if (g->nf) {
      k_distortion<<<blocks(g->nf), BLOCK>>>(g->nf, g->tri.as<int64_t>(), from[k], g->d(g->x),
                                             g->d(g->t), g->d(g->t2),
                                             g->umax.as<unsigned long long>());
      MB_CHECK_LAUNCH("willmore distortion");
    }
    MB_CALL_CUDA(cudaMemcpy(&bits, g->umax.p, sizeof bits, cudaMemcpyDeviceToHost));
    double kmax, sum, wsum;
    memcpy(&kmax, &bits, sizeof kmax);
    MB_CALL(dsum(g, g->nf, g->d(g->t), nullptr, &sum));
    MB_CALL(dsum(g, g->nf, g->d(g->t2), nullptr, &wsum));
    *mx[k] = kmax;
    *mean[k] = wsum > 0 ? sum / wsum : INFINITY;
  }
  return MB_SUCCESS;
}

/* Wait for the device, then the wall clock (s). */
mb_error mark(double *t) {
  MB_CALL_CUDA(cudaDeviceSynchronize());
  *t = mb_wtime();
  return MB_SUCCESS;
}

mb_error one_step(wm_gpu *g, double a0, const double *c0, mb_willmore_step *st) {
  double t[5];
  MB_CALL(mark(&t[0]));
  MB_CALL_CUDA(cudaMemcpy(g->xs.p, g->x.p, sizeof(double) * 3 * (size_t)g->n,
                          cudaMemcpyDeviceToDevice));
  MB_CALL(curvature(g, st));
  double dmax;
  st->iterative = g->iterative;
  MB_CALL(assemble(g, &dmax));
  MB_CALL(mark(&t[1]));
  MB_CALL(eigen(g, dmax, st));
  MB_CALL(mark(&t[2]));
  MB_CALL(positions(g, st));
  MB_CALL(mark(&t[3]));
  MB_CALL(finish(g, a0, c0, st));
  MB_CALL(mark(&t[4]));
  st->assemble_ms = 1e3 * (t[1] - t[0]);
  st->eigen_ms = 1e3 * (t[2] - t[1]);
  st->poisson_ms = 1e3 * (t[3] - t[2]);
  st->finish_ms = 1e3 * (t[4] - t[3]);
  return MB_SUCCESS;
}

/* Add "MESH: step S: " before the recorded message of e (as the CPU does). */
mb_error at_step(const mb_willmore_mesh *wm, int s, mb_error e) {
  if (!e) return e;
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", mb_error_message());
  return mb_error_set(e, __FILE__, __LINE__, __func__, "%s: step %d: %s", wm->name, s + 1, msg);
}

mb_error run(wm_gpu *g, mb_willmore_report *rep) {
  const mb_willmore_params *p = g->p;
  mb_willmore_mesh *wm = g->wm;
  const double t0 = mb_wtime();
  MB_CALL(mb_willmore_check(p, wm));
  MB_CALL(setup(g));
  MB_CALL(measure(g, &rep->energy0));
  double a0, c0[3];
  MB_CALL(area_centroid(g, g->d(g->x), &a0, c0));
  rep->steps = 0;
  rep->setup_ms = 1e3 * (mb_wtime() - t0);
  for (int s = 0; s < p->steps; s++) {
    if (mb_op_should_stop(wm->ctx, s, p->steps)) return mb_op_stopped(wm->ctx);
    mb_willmore_step *st = &rep->step[s];
    memset(st, 0, sizeof *st);
    MB_CALL(at_step(wm, s, one_step(g, a0, c0, st)));
    rep->steps = s + 1;
    mb_willmore_log_step(wm->name, s, st);
  }
  MB_CALL_CUDA(cudaMemcpy(wm->x, g->x.p, sizeof(double) * 3 * (size_t)g->n,
                          cudaMemcpyDeviceToHost));
  return MB_SUCCESS;
}

} // namespace

extern "C" mb_error mb_willmore_run_cuda(const mb_willmore_params *p, mb_willmore_mesh *wm,
                                         mb_willmore_report *rep) {
  MB_CHECK(p && wm && wm->adj && wm->x && rep && rep->step && p->steps >= 1, MB_ERR_ARG,
           "mb_willmore_run_cuda: bad arguments");
  mb_error e;
  {
    wm_gpu g;
    g.p = p;
    g.wm = wm;
    e = run(&g, rep);
  }
  if (e) (void)cudaGetLastError();
  return e;
}
