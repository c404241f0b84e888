/* The device's per-face math (cuda/deform/mb_deform_face.h, compiled here
 * as plain C on the host) against the CPU's (src/ops/deform/
 * mb_deform_proj.c): on 200,000 random faces of 3 to 24 vertices (general,
 * nearly planar to 1e-9, exactly planar, all points at one spot, regular
 * n-gons with noise) the planar and regular projections and both
 * residuals are the same bits. The header mirrors the CPU's formulas
 * operation for operation; this test keeps the two in step (on the device
 * only sqrt, acos, cos and sin may round differently). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mb_deform.h"
#include "mb_deform_face.h"
#include "mb_testutil.h"

static uint64_t rng = 0x2545F4914F6CDD1DULL;
static double urand(void) { /* splitmix64 -> [0, 1) */
  uint64_t z = (rng += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
}

static void test_mirror(void **state) {
  (void)state;
  long differ = 0, total = 0;
  for (int t = 0; t < 200000; t++) {
    const int n = 3 + (int)(urand() * 22), kind = t % 5;
    double q[3 * 24], z1[3 * 24], z2[3 * 24];
    for (int k = 0; k < n; k++)
      for (int d = 0; d < 3; d++) {
        double r = urand() - 0.5;
        if (kind == 1 && d == 2) r *= 1e-9;
        if (kind == 2 && d == 2) r = 0.25;
        if (kind == 3) r = d + 0.5;
        if (kind == 4) r = (d == 0 ? cos(2 * M_PI * k / n) : d == 1 ? sin(2 * M_PI * k / n) : 0) +
                           1e-3 * r;
        q[3 * k + d] = r;
      }
    mb_deform_project_planar(n, q, z1);
    mb_dface_project_planar(n, q, z2);
    differ += memcmp(z1, z2, sizeof(double) * 3 * (size_t)n) != 0;
    mb_deform_project_regular(n, q, z1);
    mb_dface_project_regular(n, q, z2);
    differ += memcmp(z1, z2, sizeof(double) * 3 * (size_t)n) != 0;
    double a = mb_deform_planarity(n, q), b = mb_dface_planarity(n, q);
    differ += memcmp(&a, &b, sizeof a) != 0;
    a = mb_deform_regularity(n, q);
    b = mb_dface_regularity(n, q);
    differ += memcmp(&a, &b, sizeof a) != 0;
    double S[9], w1[3], w2[3], V1[9], V2[9];
    for (int k = 0; k < 9; k++) S[k] = q[k % 3 * 3 + k / 3] + q[k];
    mb_deform_eigen3(S, w1, V1);
    mb_dface_eigen3(S, w2, V2);
    differ += memcmp(w1, w2, sizeof w1) != 0 || memcmp(V1, V2, sizeof V1) != 0;
    total += 5;
  }
  printf("%ld of %ld results differ in bits\n", differ, total);
  assert_int_equal(differ, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_mirror)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
