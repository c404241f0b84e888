/* The batched planar projection (mb_deform_project_planar_batch,
 * src/ops/deform/mb_deform_proj_batch.c: MB_DEFORM_LANES faces of one size
 * in lockstep) against the scalar path (mb_deform_project_planar) face by
 * face: every output coordinate the same bits (memcmp). Faces of 3-12
 * points and of MB_DEFORM_BATCH_NMAX (batched) and one more (the scalar
 * path face by face), 4,000 batches a size, each lane drawn from its own
 * class so the lanes' Newton iterations stop at different steps:
 * perturbed regular n-gons (noise 0.3, 0.05, 1e-6, 1e-12, 0: random to
 * near-planar), points uniform in a cube (eigenvalues close together),
 * thin n-gons (aspect 1:10 to 1:100), and degenerate faces that take the
 * Jacobi fallback (collinear points, all points at one spot, a zero face,
 * a regular polygon with a point far out of plane). Also z = q (in place)
 * and m below MB_DEFORM_LANES. Asserts that the fallback and the Newton
 * path both ran in some lane (mb_dface_smallest_newton on the lane's
 * scatter matrix). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mb_deform.h"
#include "mb_deform_face.h"
#include "mb_testutil.h"

enum { CLASSES = 12, NPTS = MB_DEFORM_BATCH_NMAX + 1 };

static uint64_t rng_state = 262626;
static double urand(void) { return mb_test_urand(&rng_state); }

/* Face of n points of class kind into q [n, 3]. */
static void make_face(int n, int kind, double *q) {
  static const double noise[6] = {0.3, 0.05, 1e-6, 1e-12, 0, 1e-4};
  const double s = 0.5 + urand(), ax = 2 * M_PI * urand(), ay = 2 * M_PI * urand();
  const double thin = kind == 6 ? 0.01 + 0.09 * urand() : 1.0;
  for (int k = 0; k < n; k++) {
    double p[3];
    const double th = 2 * M_PI * k / n;
    if (kind <= 4 || kind == 6) {
      const double e = kind == 6 ? noise[5] : noise[kind];
      p[0] = s * cos(th) + e * (urand() - 0.5);
      p[1] = thin * s * sin(th) + e * (urand() - 0.5);
      p[2] = e * (urand() - 0.5);
    } else if (kind == 5) { /* uniform in a cube */
      for (int d = 0; d < 3; d++) p[d] = 2 * urand() - 1;
    } else if (kind == 7) { /* collinear */
      p[0] = s * (urand() - 0.5), p[1] = 0, p[2] = 0;
    } else if (kind == 8) { /* all at one spot */
      p[0] = p[1] = p[2] = 0.25;
    } else if (kind == 9) { /* a zero face */
      p[0] = p[1] = p[2] = 0;
    } else if (kind == 10) { /* one point far out of the plane */
      p[0] = s * cos(th), p[1] = s * sin(th), p[2] = k == 0 ? 1e3 : 0;
    } else { /* a large, offset near-planar face */
      p[0] = 1e4 * cos(th) + 1e4, p[1] = 1e4 * sin(th), p[2] = 1e-3 * (urand() - 0.5);
    }
    if (kind >= 7 && kind <= 9) { /* no rotation: the degenerate cases exact */
      for (int d = 0; d < 3; d++) q[3 * k + d] = p[d];
      continue;
    }
    const double r1[3] = {p[0], cos(ax) * p[1] - sin(ax) * p[2], sin(ax) * p[1] + cos(ax) * p[2]};
    q[3 * k] = cos(ay) * r1[0] + sin(ay) * r1[2] + 0.7;
    q[3 * k + 1] = r1[1] - 0.2;
    q[3 * k + 2] = -sin(ay) * r1[0] + cos(ay) * r1[2] + 0.1;
  }
}

/* Whether the scalar path takes Newton's normal (1) or Jacobi's (0) for q. */
static int takes_newton(int n, const double *q) {
  double c[3], S[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0}, nrm[3];
  mb_dface_centroid(n, q, c);
  for (int k = 0; k < n; k++) {
    const double e[3] = {q[3 * k] - c[0], q[3 * k + 1] - c[1], q[3 * k + 2] - c[2]};
    for (int r = 0; r < 3; r++)
      for (int s = r; s < 3; s++) S[3 * r + s] += e[r] * e[s];
  }
  S[3] = S[1], S[6] = S[2], S[7] = S[5];
  return mb_dface_smallest_newton(S, nrm);
}

static void test_batch_bitwise(void **state) {
  (void)state;
  enum { L = MB_DEFORM_LANES, BATCHES = 4000 };
  static double q[L * NPTS * 3], zs[L * NPTS * 3], zb[L * NPTS * 3], zi[L * NPTS * 3];
  long newton = 0, jacobi = 0, faces = 0;
  int sizes[12], ns = 0;
  for (int n = 3; n <= 12; n++) sizes[ns++] = n;
  sizes[ns++] = MB_DEFORM_BATCH_NMAX;
  sizes[ns++] = MB_DEFORM_BATCH_NMAX + 1;
  for (int si = 0; si < ns; si++) {
    const int n = sizes[si];
    for (int b = 0; b < BATCHES; b++) {
      for (int l = 0; l < L; l++) {
        const int kind = (int)(urand() * CLASSES) % CLASSES;
        make_face(n, kind, &q[3 * n * l]);
        if (takes_newton(n, &q[3 * n * l])) newton++;
        else jacobi++;
        mb_deform_project_planar(n, &q[3 * n * l], &zs[3 * n * l]);
      }
      faces += L;
      mb_deform_project_planar_batch(L, n, q, zb);
      if (memcmp(zs, zb, sizeof(double) * 3 * (size_t)(n * L)) != 0)
        fail_msg("n %d batch %d: the batched projection differs from the scalar one", n, b);
      memcpy(zi, q, sizeof(double) * 3 * (size_t)(n * L)); /* in place: z = q */
      mb_deform_project_planar_batch(L, n, zi, zi);
      if (memcmp(zs, zi, sizeof(double) * 3 * (size_t)(n * L)) != 0)
        fail_msg("n %d batch %d: the in-place batched projection differs", n, b);
      const int m = 1 + b % (L - 1); /* fewer faces than lanes: face by face */
      mb_deform_project_planar_batch(m, n, q, zb);
      if (memcmp(zs, zb, sizeof(double) * 3 * (size_t)(n * m)) != 0)
        fail_msg("n %d batch %d: %d faces (fewer than the lanes) differ", n, b, m);
    }
  }
  printf("batched == scalar bitwise over %ld faces (%ld by Newton, %ld by the Jacobi "
         "fallback)\n", faces, newton, jacobi);
  assert_true(newton > faces / 2);
  assert_true(jacobi > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_batch_bitwise)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
