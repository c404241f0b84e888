/* meshbatch: the deform op's per-face math, one text for the CPU and the
 * device: the projections and residuals behind mb_deform.h's
 * mb_deform_project_planar, _regular, mb_deform_planarity, _regularity
 * and mb_deform_eigen3 (src/ops/deform/mb_deform_proj.c calls these) and
 * the device's kernels (cuda/deform/mb_deform.cu). float64; the CPU is
 * built with -ffp-contract=off and the device with --fmad=false, so
 * products and sums round alike (and sqrt and division are correctly
 * rounded on both): the planar projection gives the same bits on both,
 * only the regular projection's cos and sin may differ from the host's
 * libm in the last bit. Plain C17
 * (static inline; __host__ __device__ under nvcc). A face is its n points
 * q [n, 3] (row-major, the slots of the face in order), length unit of
 * the input. See mb_deform.h for the method (Kaspar & Deng, section
 * 2.2.2.1). Not collective; none fails. */
#ifndef MB_DEFORM_FACE_H
#define MB_DEFORM_FACE_H

#include <math.h>

#ifdef __CUDACC__
#define MB_DFACE static inline __host__ __device__
#else
#define MB_DFACE static inline
#endif

/* mb_deform_eigen3: cyclic Jacobi rotations (Golub & Van Loan, Alg. 8.4.1). */
MB_DFACE void mb_dface_eigen3(const double S[9], double w[3], double V[9]) {
  double a[3][3], v[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 3; c++) a[r][c] = 0.5 * (S[3 * r + c] + S[3 * c + r]);
  for (int sweep = 0; sweep < 64; sweep++) {
    const double off = fabs(a[0][1]) + fabs(a[0][2]) + fabs(a[1][2]);
    const double scale = fabs(a[0][0]) + fabs(a[1][1]) + fabs(a[2][2]);
    if (off <= 1e-300 || off <= 1e-17 * scale) break;
    for (int p = 0; p < 2; p++)
      for (int q = p + 1; q < 3; q++) {
        if (a[p][q] == 0) continue;
        const double theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1));
        const double c = 1 / sqrt(t * t + 1), s = t * c;
        for (int k = 0; k < 3; k++) {
          const double akp = a[k][p], akq = a[k][q];
          a[k][p] = c * akp - s * akq;
          a[k][q] = s * akp + c * akq;
        }
        for (int k = 0; k < 3; k++) {
          const double apk = a[p][k], aqk = a[q][k];
          a[p][k] = c * apk - s * aqk;
          a[q][k] = s * apk + c * aqk;
        }
        for (int k = 0; k < 3; k++) {
          const double vkp = v[k][p], vkq = v[k][q];
          v[k][p] = c * vkp - s * vkq;
          v[k][q] = s * vkp + c * vkq;
        }
      }
  }
  /* ascending eigenvalues: the diagonal and v's columns swapped together
   * (no index array: every subscript is a constant once the loops are
   * unrolled, so a device keeps a and v in registers, not local memory) */
  double dg[3] = {a[0][0], a[1][1], a[2][2]};
  for (int i = 0; i < 3; i++)
    for (int j = i + 1; j < 3; j++)
      if (dg[j] < dg[i]) {
        const double t = dg[i];
        dg[i] = dg[j];
        dg[j] = t;
        for (int r = 0; r < 3; r++) {
          const double vt = v[r][i];
          v[r][i] = v[r][j];
          v[r][j] = vt;
        }
      }
  for (int k = 0; k < 3; k++) {
    w[k] = dg[k];
    for (int r = 0; r < 3; r++) V[3 * r + k] = v[r][k];
  }
}

MB_DFACE void mb_dface_centroid(int n, const double *q, double c[3]) {
  c[0] = c[1] = c[2] = 0;
  for (int k = 0; k < n; k++)
    for (int d = 0; d < 3; d++) c[d] += q[3 * k + d];
  for (int d = 0; d < 3; d++) c[d] /= n;
}

/* The longest cross product of two rows of M - lam I into best [3], for
 * the symmetric M = [[a, d, f], [d, b, e], [f, e, c]]; returns its squared
 * length (0: every product 0 or NaN, best then 0). For lam an eigenvalue
 * of M, best is a column of adj(M - lam I): along the eigenvector where
 * lam is simple. */
MB_DFACE double mb_dface_longest_cross(double a, double b, double c, double d, double e,
                                       double f, double lam, double best[3]) {
  const double r0[3] = {a - lam, d, f}, r1[3] = {d, b - lam, e}, r2[3] = {f, e, c - lam};
  const double *rows[3][2] = {{r0, r1}, {r0, r2}, {r1, r2}};
  double bn = 0;
  best[0] = best[1] = best[2] = 0;
  for (int k = 0; k < 3; k++) {
    const double *u = rows[k][0], *v = rows[k][1];
    const double x[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2],
                         u[0] * v[1] - u[1] * v[0]};
    const double m = x[0] * x[0] + x[1] * x[1] + x[2] * x[2];
    if (m > bn) {
      bn = m;
      best[0] = x[0], best[1] = x[1], best[2] = x[2];
    }
  }
  return bn;
}

/* The unit eigenvector nrm of the smallest eigenvalue of the symmetric
 * positive semidefinite S [3, 3] (a face's scatter matrix), without
 * trigonometry: S scaled by 1 / trace, the smallest root lambda of the
 * characteristic polynomial f(x) = det(x I - S) = x^3 - c2 x^2 + c1 x - c0
 * by Newton's method from x = 0 (below the smallest root, f is increasing
 * and concave there since the roots are real and the smallest is below the
 * mean c2 / 3, so the iterates rise monotonically onto it; Householder,
 * The Numerical Treatment of a Single Nonlinear Equation, 1970, sec. 4.1;
 * a first step below 0 where rounding made c0 < 0 is followed by a rise the
 * same way), stopped once the error left, bounded by |f''| step^2 / (2 f')
 * (Newton's error after a step, both derivatives at the step's start), is
 * at most 5e-18 of the trace (below the rounding of lambda), or before a
 * step whose size no longer falls (the rounding floor), or after
 * MB_DFACE_NEWTON_MAX steps; then nrm as the longest cross
 * product of two rows of S - lambda I (the rows span the plane orthogonal
 * to a simple eigenvalue's eigenvector; that product is the corresponding
 * column of adj(S - lambda I) = (l2 - lambda)(l3 - lambda) v v^T). Returns
 * 0 where the smallest eigenvalue is not well separated (the longest
 * product below 1e-8 of trace^4, i.e. (l2 - l1)(l3 - l1) below about
 * 1.7e-4 trace^2: a repeated smallest eigenvalue, collinear or coincident
 * points, a zero or non-finite S): the caller then takes the Jacobi
 * solver. Only + - * / and sqrt, correctly rounded on the host and the
 * device alike: the same bits on both. */
#define MB_DFACE_NEWTON_MAX 40
MB_DFACE int mb_dface_smallest_newton(const double S[9], double nrm[3]) {
  const double tr = S[0] + S[4] + S[8];
  if (!(tr > 0) || !(tr < INFINITY)) return 0;
  const double s = 1 / tr;
  const double a = S[0] * s, b = S[4] * s, c = S[8] * s, d = S[1] * s, e = S[5] * s,
               f = S[2] * s;
  const double c2 = a + b + c;
  const double c1 = (a * b - d * d) + (a * c - f * f) + (b * c - e * e);
  const double c0 = a * (b * c - e * e) - d * (d * c - e * f) + f * (d * e - b * f);
  double lam = 0, last = INFINITY;
  for (int it = 0; it < MB_DFACE_NEWTON_MAX; it++) {
    const double fx = ((lam - c2) * lam + c1) * lam - c0;
    const double df = (3 * lam - 2 * c2) * lam + c1, d2 = 2 * c2 - 6 * lam; /* -f'' > 0 */
    if (!(df > 0)) break; /* a double root at lam (the test below then fails) */
    const double step = fx / df, size = fabs(step);
    if (!(size < last)) break; /* no longer falling: rounding's floor */
    last = size;
    lam -= step;
    /* the error left after this step is at most |f''| step^2 / (2 f'), all
     * at the step's start (f' falls and |f''| falls towards the root) */
    if (size * size * d2 <= 1e-17 * df) break;
  }
  double best[3];
  const double bn = mb_dface_longest_cross(a, b, c, d, e, f, lam, best);
  if (!(bn > 1e-8)) return 0;
  const double len = sqrt(bn);
  for (int k = 0; k < 3; k++) nrm[k] = best[k] / len;
  return 1;
}

/* The scatter matrix S [3, 3] of the n points q about c (the upper
 * triangle summed point by point, then mirrored). */
MB_DFACE void mb_dface_scatter(int n, const double *q, const double c[3], double S[9]) {
  for (int k = 0; k < 9; k++) S[k] = 0;
  for (int k = 0; k < n; k++) {
    const double e[3] = {q[3 * k] - c[0], q[3 * k + 1] - c[1], q[3 * k + 2] - c[2]};
    for (int r = 0; r < 3; r++)
      for (int s = r; s < 3; s++) S[3 * r + s] += e[r] * e[s];
  }
  S[3] = S[1];
  S[6] = S[2];
  S[7] = S[5];
}

/* The best plane's unit normal nrm from the scatter matrix S: Newton's
 * smallest eigenvector, else (not well separated) Jacobi's. */
MB_DFACE void mb_dface_plane_normal(const double S[9], double nrm[3]) {
  if (mb_dface_smallest_newton(S, nrm)) return;
  double w[3], V[9];
  mb_dface_eigen3(S, w, V);
  for (int r = 0; r < 3; r++) nrm[r] = V[3 * r];
}

MB_DFACE void mb_dface_best_normal(int n, const double *q, const double c[3], double nrm[3]) {
  double S[9];
  mb_dface_scatter(n, q, c, S);
  mb_dface_plane_normal(S, nrm);
}

/* One point q [3] projected onto the plane through c with the unit normal
 * nrm: z = q - ((q - c) . nrm) nrm into z [3] (z may be q). */
MB_DFACE void mb_dface_plane_point(const double *q, const double c[3], const double nrm[3],
                                   double *z) {
  const double h = (q[0] - c[0]) * nrm[0] + (q[1] - c[1]) * nrm[1] + (q[2] - c[2]) * nrm[2];
  for (int d = 0; d < 3; d++) z[d] = q[d] - h * nrm[d];
}

/* mb_deform_project_planar; z may be q. */
MB_DFACE void mb_dface_project_planar(int n, const double *q, double *z) {
  double c[3], nrm[3];
  mb_dface_centroid(n, q, c);
  mb_dface_best_normal(n, q, c, nrm);
  for (int k = 0; k < n; k++) mb_dface_plane_point(q + 3 * k, c, nrm, z + 3 * k);
}

/* mb_deform_planarity: max distance of a point from the best plane. */
MB_DFACE double mb_dface_planarity(int n, const double *q) {
  double c[3], nrm[3], worst = 0;
  mb_dface_centroid(n, q, c);
  mb_dface_best_normal(n, q, c, nrm);
  for (int k = 0; k < n; k++) {
    const double h = (q[3 * k] - c[0]) * nrm[0] + (q[3 * k + 1] - c[1]) * nrm[1] +
                     (q[3 * k + 2] - c[2]) * nrm[2];
    if (fabs(h) > worst) worst = fabs(h);
  }
  return worst;
}

MB_DFACE double mb_dface_dot3(const double *a, const double *b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

MB_DFACE void mb_dface_orthogonal(const double u[3], double o[3]) {
  int k = 0;
  if (fabs(u[1]) < fabs(u[k])) k = 1;
  if (fabs(u[2]) < fabs(u[k])) k = 2;
  double e[3] = {0, 0, 0};
  e[k] = 1;
  const double d = mb_dface_dot3(e, u);
  for (int i = 0; i < 3; i++) o[i] = e[i] - d * u[i];
  const double len = sqrt(mb_dface_dot3(o, o));
  for (int i = 0; i < 3; i++) o[i] /= len;
}

/* The regular n-gon's template point k: (cos, sin) of 2 pi k / n. On the
 * host the fit keeps them for faces of up to MB_DFACE_CS_KEEP vertices in
 * cs [2 MB_DFACE_CS_KEEP] (kept: cs[2k], cs[2k + 1]) and the projection
 * and the residual read them there: one sincos a point instead of two (the
 * same values, the same bits); on the device (MB_DFACE_CS_KEEP 0) each
 * loop computes them, as before, without the local array. */
#ifdef __CUDA_ARCH__
#define MB_DFACE_CS_KEEP 0
#else
#define MB_DFACE_CS_KEEP 16
#endif
MB_DFACE void mb_dface_template(int n, int k, const double *cs, double *ck, double *sk) {
  if (n <= MB_DFACE_CS_KEEP) {
    *ck = cs[2 * k];
    *sk = cs[2 * k + 1];
    return;
  }
  const double th = 2.0 * M_PI * (double)k / (double)n;
  *ck = cos(th);
  *sk = sin(th);
}

/* regular_fit of mb_deform_proj.c: sE [3, 2] and the centroid c; cs as
 * mb_dface_template's (filled here where n <= MB_DFACE_CS_KEEP). */
MB_DFACE void mb_dface_regular_fit(int n, const double *q, double c[3], double sE[6],
                                   double *cs) {
  mb_dface_centroid(n, q, c);
  double a[3] = {0, 0, 0}, b[3] = {0, 0, 0};
  for (int k = 0; k < n; k++) {
    const double th = 2.0 * M_PI * (double)k / (double)n;
    const double ck = cos(th), sk = sin(th);
    if (n <= MB_DFACE_CS_KEEP) {
      cs[2 * k] = ck;
      cs[2 * k + 1] = sk;
    }
    for (int d = 0; d < 3; d++) {
      const double e = q[3 * k + d] - c[d];
      a[d] += ck * e;
      b[d] += sk * e;
    }
  }
  const double aa = mb_dface_dot3(a, a), bb = mb_dface_dot3(b, b), ab = mb_dface_dot3(a, b);
  const double x[3] = {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                       a[0] * b[1] - a[1] * b[0]};
  const double delta = sqrt(mb_dface_dot3(x, x)), tr = aa + bb;
  for (int k = 0; k < 6; k++) sE[k] = 0;
  if (!(tr > 0)) return;
  if (delta > 1e-12 * tr) {
    const double m00 = bb + delta, m01 = -ab, m11 = aa + delta;
    for (int d = 0; d < 3; d++) {
      sE[2 * d] = (a[d] * m00 + b[d] * m01) / ((double)n * delta);
      sE[2 * d + 1] = (a[d] * m01 + b[d] * m11) / ((double)n * delta);
    }
    return;
  }
  double v[2];
  if (aa >= bb) {
    const double l = sqrt(aa * aa + ab * ab);
    v[0] = aa / l;
    v[1] = ab / l;
  } else {
    const double l = sqrt(ab * ab + bb * bb);
    v[0] = ab / l;
    v[1] = bb / l;
  }
  double u[3];
  for (int d = 0; d < 3; d++) u[d] = a[d] * v[0] + b[d] * v[1];
  const double sigma = sqrt(mb_dface_dot3(u, u));
  if (!(sigma > 0)) return;
  for (int d = 0; d < 3; d++) u[d] /= sigma;
  double up[3];
  mb_dface_orthogonal(u, up);
  const double vp[2] = {-v[1], v[0]}, s = sigma / (double)n;
  for (int d = 0; d < 3; d++) {
    sE[2 * d] = s * (u[d] * v[0] + up[d] * vp[0]);
    sE[2 * d + 1] = s * (u[d] * v[1] + up[d] * vp[1]);
  }
}

/* mb_deform_project_regular; z may be q (the fit reads q first). */
MB_DFACE void mb_dface_project_regular(int n, const double *q, double *z) {
  double c[3], sE[6], cs[2 * MB_DFACE_CS_KEEP + 2];
  mb_dface_regular_fit(n, q, c, sE, cs);
  for (int k = 0; k < n; k++) {
    double ck, sk;
    mb_dface_template(n, k, cs, &ck, &sk);
    for (int d = 0; d < 3; d++) z[3 * k + d] = c[d] + (sE[2 * d] * ck + sE[2 * d + 1] * sk);
  }
}

/* mb_deform_regularity: max distance of a point from the regular projection. */
MB_DFACE double mb_dface_regularity(int n, const double *q) {
  double c[3], sE[6], cs[2 * MB_DFACE_CS_KEEP + 2], worst = 0;
  mb_dface_regular_fit(n, q, c, sE, cs);
  for (int k = 0; k < n; k++) {
    double ck, sk;
    mb_dface_template(n, k, cs, &ck, &sk);
    double r2 = 0;
    for (int d = 0; d < 3; d++) {
      const double e = q[3 * k + d] - (c[d] + (sE[2 * d] * ck + sE[2 * d + 1] * sk));
      r2 += e * e;
    }
    if (sqrt(r2) > worst) worst = sqrt(r2);
  }
  return worst;
}

#endif
