/* meshbatch: the deform op's planar projection (Kaspar & Deng, section
 * 2.2.2.1) for MB_DEFORM_LANES faces of one size in lockstep, on the CPU
 * only (the device runs one face a thread: cuda/deform/mb_deform_face.h).
 * The scalar path (mb_dface_project_planar) is one long dependency chain a
 * face (centring, the 3x3 scatter matrix, Newton on the scaled
 * characteristic cubic, the longest cross product, a division and a square
 * root, the projection): about 300 cycles a quad, bound by latency. Here
 * each step runs over the lanes (one face a lane, the points transposed to
 * [point][coordinate][lane]) so the faces' chains overlap, and the
 * compiler may pack lanes into SIMD doubles. Each lane does exactly the
 * scalar path's operations in its order (the same expressions, the build's
 * -ffp-contract=off for both; elementwise SIMD rounds as scalar): Newton
 * runs while any lane goes on, a lane that stopped keeps its value; a lane
 * whose smallest eigenvalue is not well separated takes the scalar Jacobi
 * solver (mb_dface_eigen3). So every face's z is the same bits as
 * mb_deform_project_planar's (tests/deform/test_deform_batch.c asserts
 * it). */
#include "mb_deform.h"
#include "mb_deform_face.h"

enum { L = MB_DEFORM_LANES };

/* The unit normals nrm [3][L] of the lanes' scatter matrices S [6][L]
 * (upper triangle: 00, 01, 02, 11, 12, 22): mb_dface_smallest_newton per
 * lane, mb_dface_eigen3 where it returns 0 (as mb_dface_best_normal). */
static void lanes_normal(double S[6][L], double nrm[3][L]) {
  double a[L], b[L], c[L], d[L], e[L], f[L], c2[L], c1[L], c0[L], lam[L], last[L];
  int act[L], ok[L];
  for (int l = 0; l < L; l++) {
    const double tr = S[0][l] + S[3][l] + S[5][l];
    ok[l] = act[l] = tr > 0 && tr < INFINITY;
    const double s = 1 / tr;
    a[l] = S[0][l] * s, b[l] = S[3][l] * s, c[l] = S[5][l] * s, d[l] = S[1][l] * s,
    e[l] = S[4][l] * s, f[l] = S[2][l] * s;
    c2[l] = a[l] + b[l] + c[l];
    c1[l] = (a[l] * b[l] - d[l] * d[l]) + (a[l] * c[l] - f[l] * f[l]) +
            (b[l] * c[l] - e[l] * e[l]);
    c0[l] = a[l] * (b[l] * c[l] - e[l] * e[l]) - d[l] * (d[l] * c[l] - e[l] * f[l]) +
            f[l] * (d[l] * e[l] - b[l] * f[l]);
    lam[l] = 0;
    last[l] = INFINITY;
  }
  /* mb_dface_smallest_newton's loop, masked: a lane goes on while its
   * scalar loop would (the same three tests, the same step count cap) */
  for (int it = 0; it < MB_DFACE_NEWTON_MAX; it++) {
    int any = 0;
    for (int l = 0; l < L; l++) {
      const double x = lam[l];
      const double fx = ((x - c2[l]) * x + c1[l]) * x - c0[l];
      const double df = (3 * x - 2 * c2[l]) * x + c1[l], d2 = 2 * c2[l] - 6 * x;
      const double step = fx / df, size = fabs(step);
      const int go = act[l] && df > 0 && size < last[l];
      if (go) {
        last[l] = size;
        lam[l] = x - step;
      }
      act[l] = go && !(size * size * d2 <= 1e-17 * df);
      any |= act[l];
    }
    if (!any) break;
  }
  /* mb_dface_longest_cross per lane, then the separation test */
  for (int l = 0; l < L; l++) {
    double best[3];
    const double bn = mb_dface_longest_cross(a[l], b[l], c[l], d[l], e[l], f[l], lam[l], best);
    ok[l] = ok[l] && bn > 1e-8;
    if (ok[l]) {
      const double len = sqrt(bn);
      for (int k = 0; k < 3; k++) nrm[k][l] = best[k] / len;
    }
  }
  for (int l = 0; l < L; l++) {
    if (ok[l]) continue;
    const double M[9] = {S[0][l], S[1][l], S[2][l], S[1][l], S[3][l],
                         S[4][l], S[2][l], S[4][l], S[5][l]};
    double w[3], V[9];
    mb_dface_eigen3(M, w, V);
    for (int r = 0; r < 3; r++) nrm[r][l] = V[3 * r];
  }
}

void mb_deform_project_planar_batch(int m, int n, const double *q, double *z) {
  if (m != L || n > MB_DEFORM_BATCH_NMAX) {
    for (int l = 0; l < m; l++) mb_dface_project_planar(n, q + 3 * n * l, z + 3 * n * l);
    return;
  }
  double p[MB_DEFORM_BATCH_NMAX][3][L], c[3][L], S[6][L], nrm[3][L];
  for (int l = 0; l < L; l++)
    for (int k = 0; k < n; k++)
      for (int d = 0; d < 3; d++) p[k][d][l] = q[3 * (n * l + k) + d];
  /* mb_dface_centroid */
  for (int d = 0; d < 3; d++)
    for (int l = 0; l < L; l++) c[d][l] = 0;
  for (int k = 0; k < n; k++)
    for (int d = 0; d < 3; d++)
      for (int l = 0; l < L; l++) c[d][l] += p[k][d][l];
  for (int d = 0; d < 3; d++)
    for (int l = 0; l < L; l++) c[d][l] /= n;
  /* mb_dface_best_normal's scatter matrix, upper triangle */
  for (int j = 0; j < 6; j++)
    for (int l = 0; l < L; l++) S[j][l] = 0;
  for (int k = 0; k < n; k++) {
    double e[3][L];
    for (int d = 0; d < 3; d++)
      for (int l = 0; l < L; l++) e[d][l] = p[k][d][l] - c[d][l];
    for (int r = 0, j = 0; r < 3; r++)
      for (int s = r; s < 3; s++, j++)
        for (int l = 0; l < L; l++) S[j][l] += e[r][l] * e[s][l];
  }
  lanes_normal(S, nrm);
  /* mb_dface_project_planar's projection onto the plane */
  for (int k = 0; k < n; k++) {
    double h[L];
    for (int l = 0; l < L; l++)
      h[l] = (p[k][0][l] - c[0][l]) * nrm[0][l] + (p[k][1][l] - c[1][l]) * nrm[1][l] +
             (p[k][2][l] - c[2][l]) * nrm[2][l];
    for (int l = 0; l < L; l++)
      for (int d = 0; d < 3; d++) z[3 * (n * l + k) + d] = p[k][d][l] - h[l] * nrm[d][l];
  }
}
