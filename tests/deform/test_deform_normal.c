/* The planar projection's normal (cuda/deform/mb_deform_face.h,
 * mb_dface_best_normal: the smallest eigenpair of a face's 3x3 scatter
 * matrix by Newton's method on the characteristic cubic and a cross
 * product, the Jacobi solver where the smallest eigenvalue is not well
 * separated) against the trigonometric closed form it replaced (Smith
 * 1961, as the header had it until 2026-11-27: acos and cos, reproduced
 * below as the reference to beat, with the header's cross product) and
 * against a long-double Jacobi solution. Faces of 3-12 vertices, 20,000 per class: perturbed regular
 * n-gons (noise 0.3, 0.05, 1e-6: random to near-planar), points uniform in
 * a cube (eigenvalues close together), thin near-planar n-gons (aspect
 * 1:10 to 1:100). Per class it asserts, over every face, that the new
 * normal's largest eigen residual ||S v - (v'Sv) v|| / ||S||_F and its
 * largest angle to the long-double eigenvector are at most the closed
 * form's (plus 1e-16: rounding) and below fixed bounds (1e-15 both on the
 * n-gons, 1e-13 and 1e-11 in the cube, 1e-15 and 1e-11 on thin n-gons),
 * and its largest |v'v - 1| below 4e-15 (a few units of rounding either
 * way). It prints both methods' figures. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "mb_deform_face.h"
#include "mb_testutil.h"

static uint64_t rng_state = 424242;
static double urand(void) { return mb_test_urand(&rng_state); }

/* The replaced closed form: lambda = q + 2 p cos(acos(r) / 3 + 2 pi / 3)
 * of the shifted, scaled matrix, then the longest cross product of two
 * rows of S - lambda I; 0 where not separated (1e-8 p2^2). */
static int closed_form(const double S[9], double nrm[3]) {
  const double a = S[0], b = S[4], c = S[8], d = S[1], e = S[5], f = S[2];
  const double q = (a + b + c) / 3;
  const double p2 = (a - q) * (a - q) + (b - q) * (b - q) + (c - q) * (c - q) +
                    2 * (d * d + e * e + f * f);
  const double p = sqrt(p2 / 6);
  if (!(p > 0)) return 0;
  const double A = (a - q) / p, B = (b - q) / p, C = (c - q) / p, D = d / p, E = e / p,
               F = f / p;
  double r = 0.5 * (A * (B * C - E * E) - D * (D * C - E * F) + F * (D * E - B * F));
  r = r < -1 ? -1 : r > 1 ? 1 : r;
  const double lam = q + 2 * p * cos(acos(r) / 3 + 2.0 * M_PI / 3.0);
  double best[3];
  const double bn = mb_dface_longest_cross(a, b, c, d, e, f, lam, best);
  if (!(bn > 1e-8 * (p2 * p2))) return 0;
  for (int k = 0; k < 3; k++) nrm[k] = best[k] / sqrt(bn);
  return 1;
}

static void old_normal(const double S[9], double nrm[3]) {
  if (closed_form(S, nrm)) return;
  double w[3], V[9];
  mb_dface_eigen3(S, w, V);
  for (int r = 0; r < 3; r++) nrm[r] = V[3 * r];
}

/* The smallest eigenvalue's eigenvector of S by cyclic Jacobi in long
 * double (the reference). */
static void ref_normal(const double S[9], long double v[3]) {
  long double a[3][3], V[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 3; c++) a[r][c] = S[3 * r + c];
  for (int sweep = 0; sweep < 100; sweep++) {
    if (fabsl(a[0][1]) + fabsl(a[0][2]) + fabsl(a[1][2]) == 0) break;
    for (int p = 0; p < 2; p++)
      for (int q = p + 1; q < 3; q++) {
        if (a[p][q] == 0) continue;
        const long double th = (a[q][q] - a[p][p]) / (2 * a[p][q]);
        const long double t = (th >= 0 ? 1.0L : -1.0L) / (fabsl(th) + sqrtl(th * th + 1));
        const long double c = 1 / sqrtl(t * t + 1), s = t * c;
        for (int k = 0; k < 3; k++) {
          const long double x = a[k][p], y = a[k][q];
          a[k][p] = c * x - s * y;
          a[k][q] = s * x + c * y;
        }
        for (int k = 0; k < 3; k++) {
          const long double x = a[p][k], y = a[q][k];
          a[p][k] = c * x - s * y;
          a[q][k] = s * x + c * y;
        }
        for (int k = 0; k < 3; k++) {
          const long double x = V[k][p], y = V[k][q];
          V[k][p] = c * x - s * y;
          V[k][q] = s * x + c * y;
        }
      }
  }
  int m = 0;
  for (int k = 1; k < 3; k++)
    if (a[k][k] < a[m][m]) m = k;
  for (int r = 0; r < 3; r++) v[r] = V[r][m];
}

/* A face of n points of class kind (see the top), rotated and shifted. */
static void make_face(int n, int kind, double *q) {
  static const double noise[5] = {0.3, 0.05, 1e-6, 0, 1e-4};
  const double s = 0.5 + urand(), ax = 2 * M_PI * urand(), ay = 2 * M_PI * urand();
  const double thin = kind == 4 ? 0.01 + 0.09 * urand() : 1.0;
  for (int k = 0; k < n; k++) {
    if (kind == 3) {
      for (int d = 0; d < 3; d++) q[3 * k + d] = 2 * urand() - 1;
      continue;
    }
    const double th = 2 * M_PI * k / n, e = noise[kind];
    const double p[3] = {s * cos(th) + e * (urand() - 0.5),
                         thin * s * sin(th) + e * (urand() - 0.5), e * (urand() - 0.5)};
    const double r1[3] = {p[0], cos(ax) * p[1] - sin(ax) * p[2], sin(ax) * p[1] + cos(ax) * p[2]};
    q[3 * k] = cos(ay) * r1[0] + sin(ay) * r1[2] + 0.7;
    q[3 * k + 1] = r1[1] - 0.2;
    q[3 * k + 2] = -sin(ay) * r1[0] + cos(ay) * r1[2] + 0.1;
  }
}

/* The residual, the angle to the reference and |v'v - 1| of v for S. */
static void measure(const double S[9], const double v[3], const long double ref[3],
                    double out[3]) {
  double Sv[3], lam = 0, fro = 0, r2 = 0;
  for (int r = 0; r < 3; r++) {
    Sv[r] = 0;
    for (int c = 0; c < 3; c++) {
      Sv[r] += S[3 * r + c] * v[c];
      fro += S[3 * r + c] * S[3 * r + c];
    }
  }
  for (int r = 0; r < 3; r++) lam += v[r] * Sv[r];
  for (int r = 0; r < 3; r++) r2 += (Sv[r] - lam * v[r]) * (Sv[r] - lam * v[r]);
  out[0] = sqrt(r2 / fro);
  const long double x[3] = {ref[1] * v[2] - ref[2] * v[1], ref[2] * v[0] - ref[0] * v[2],
                            ref[0] * v[1] - ref[1] * v[0]};
  out[1] = (double)sqrtl(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
  out[2] = fabs(v[0] * v[0] + v[1] * v[1] + v[2] * v[2] - 1);
}

static void test_normal_accuracy(void **state) {
  (void)state;
  static const char *name[5] = {"n-gons, noise 0.3", "n-gons, noise 0.05",
                                "n-gons, noise 1e-6", "uniform in a cube",
                                "thin n-gons, noise 1e-4"};
  static const double bound_res[5] = {1e-15, 1e-15, 1e-15, 1e-13, 1e-15};
  static const double bound_ang[5] = {1e-15, 1e-15, 1e-15, 1e-11, 1e-11};
  for (int kind = 0; kind < 5; kind++) {
    double worst_new[3] = {0, 0, 0}, worst_old[3] = {0, 0, 0};
    for (int rep = 0; rep < 20000; rep++) {
      const int n = 3 + rep % 10;
      double q[36], c[3], S[9] = {0}, vn[3], vo[3], mn[3], mo[3];
      make_face(n, kind, q);
      mb_dface_centroid(n, q, c);
      for (int k = 0; k < n; k++)
        for (int r = 0; r < 3; r++)
          for (int s = 0; s < 3; s++) S[3 * r + s] += (q[3 * k + r] - c[r]) * (q[3 * k + s] - c[s]);
      mb_dface_best_normal(n, q, c, vn);
      old_normal(S, vo);
      long double ref[3];
      ref_normal(S, ref);
      measure(S, vn, ref, mn);
      measure(S, vo, ref, mo);
      for (int k = 0; k < 3; k++) {
        worst_new[k] = fmax(worst_new[k], mn[k]);
        worst_old[k] = fmax(worst_old[k], mo[k]);
      }
    }
    printf("%-24s residual %.2e (closed form %.2e), angle %.2e (%.2e), |v'v - 1| %.2e (%.2e)\n",
           name[kind], worst_new[0], worst_old[0], worst_new[1], worst_old[1], worst_new[2],
           worst_old[2]);
    if (!(worst_new[0] <= worst_old[0] + 1e-16 && worst_new[0] <= bound_res[kind]))
      fail_msg("%s: eigen residual %.3g (closed form %.3g, bound %.3g)", name[kind],
               worst_new[0], worst_old[0], bound_res[kind]);
    if (!(worst_new[1] <= worst_old[1] + 1e-16 && worst_new[1] <= bound_ang[kind]))
      fail_msg("%s: angle to the long-double eigenvector %.3g (closed form %.3g, bound %.3g)",
               name[kind], worst_new[1], worst_old[1], bound_ang[kind]);
    if (!(worst_new[2] <= 4e-15))
      fail_msg("%s: |v'v - 1| %.3g (closed form %.3g)", name[kind], worst_new[2], worst_old[2]);
  }
}

/* The degenerate faces take the Jacobi path or stay exact: coincident
 * points (zero matrix), collinear points, a triangle (exactly planar: its
 * own projection), a square in a coordinate plane (normal exact). */
static void test_normal_degenerate(void **state) {
  (void)state;
  double S0[9] = {0}, v[3];
  assert_int_equal(mb_dface_smallest_newton(S0, v), 0);
  double line[12] = {0, 0, 0, 1, 1, 0, 2, 2, 0, 3, 3, 0}, c[3], z[12];
  mb_dface_centroid(4, line, c);
  mb_dface_best_normal(4, line, c, v);
  assert_true(fabs(v[0] + v[1]) <= 1e-15);
  assert_true(fabs(v[0] * v[0] + v[1] * v[1] + v[2] * v[2] - 1) <= 1e-15);
  const double tri[9] = {0.3, -1, 2, 1.7, 0.25, 0.5, -0.4, 1.1, 0.9};
  mb_dface_project_planar(3, tri, z);
  for (int k = 0; k < 9; k++) assert_true(fabs(z[k] - tri[k]) <= 1e-15);
  const double sq[12] = {1, 1, 2, -1, 1, 2, -1, -1, 2, 1, -1, 2};
  mb_dface_centroid(4, sq, c);
  mb_dface_best_normal(4, sq, c, v);
  assert_true(v[0] == 0 && v[1] == 0 && fabs(v[2]) == 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_normal_accuracy),
                                     cmocka_unit_test(test_normal_degenerate)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
