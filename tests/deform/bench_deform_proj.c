/* Benchmark (not a test: prints figures, asserts nothing about speed): the
 * deform op's planar projection over F random near-planar quads (default
 * 80,000: Roof2's count), one thread, the scalar path
 * (mb_deform_project_planar face by face, as main) against the batched one
 * (mb_deform_project_planar_batch, MB_DEFORM_LANES faces in lockstep),
 * alternating, R rounds of P passes each; prints ns a face per round (CPU
 * time of the process, clock_gettime CLOCK_PROCESS_CPUTIME_ID: other
 * processes' load does not count) and the minimum of each. Checks that
 * both gave the same bits (exit 1 if not).
 * Usage: bench_deform_proj [F [ROUNDS [PASSES [NOISE]]]] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mb_deform.h"
#include "mb_testutil.h"

static double cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
  const long F = argc > 1 ? atol(argv[1]) / MB_DEFORM_LANES * MB_DEFORM_LANES : 80000;
  const int rounds = argc > 2 ? atoi(argv[2]) : 5, passes = argc > 3 ? atoi(argv[3]) : 10;
  const double noise = argc > 4 ? atof(argv[4]) : 0.1;
  if (F < MB_DEFORM_LANES || rounds < 1 || passes < 1) return 2;
  double *q = malloc(sizeof(double) * 12 * (size_t)F), *zs = malloc(sizeof(double) * 12 * (size_t)F),
         *zb = malloc(sizeof(double) * 12 * (size_t)F);
  if (!q || !zs || !zb) return 2;
  uint64_t st = 7;
  for (long f = 0; f < F; f++) /* a unit square, jittered by noise, centred */
    for (int k = 0; k < 4; k++) {
      const double sq[4][2] = {{0, 0}, {1, 0}, {1, 1}, {0, 1}};
      q[12 * f + 3 * k] = sq[k][0] - 0.5 + noise * (mb_test_urand(&st) - 0.5);
      q[12 * f + 3 * k + 1] = sq[k][1] - 0.5 + noise * (mb_test_urand(&st) - 0.5);
      q[12 * f + 3 * k + 2] = noise * (mb_test_urand(&st) - 0.5);
    }
  double best_s = 1e30, best_b = 1e30;
  for (int r = 0; r < rounds; r++) {
    double t0 = cpu_s();
    for (int p = 0; p < passes; p++)
      for (long f = 0; f < F; f++) mb_deform_project_planar(4, &q[12 * f], &zs[12 * f]);
    const double ts = 1e9 * (cpu_s() - t0) / ((double)F * passes);
    t0 = cpu_s();
    for (int p = 0; p < passes; p++)
      for (long f = 0; f < F; f += MB_DEFORM_LANES)
        mb_deform_project_planar_batch(MB_DEFORM_LANES, 4, &q[12 * f], &zb[12 * f]);
    const double tb = 1e9 * (cpu_s() - t0) / ((double)F * passes);
    printf("round %d: scalar %.1f ns, batched (%d lanes) %.1f ns a quad\n", r + 1, ts,
           MB_DEFORM_LANES, tb);
    if (ts < best_s) best_s = ts;
    if (tb < best_b) best_b = tb;
  }
  const int same = !memcmp(zs, zb, sizeof(double) * 12 * (size_t)F);
  printf("%ld quads, noise %g, %d passes a round: min scalar %.1f ns, batched %.1f ns a "
         "quad (%.2fx); same bits: %s\n",
         F, noise, passes, best_s, best_b, best_s / best_b, same ? "yes" : "NO");
  free(q), free(zs), free(zb);
  return same ? 0 : 1;
}
