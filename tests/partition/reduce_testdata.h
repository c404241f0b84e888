/* Values for the reduction tests (test_reduce.c, test_gpu_reduce.c): a
 * deterministic function of the global index, so every rank makes its own
 * share without communication, and a permutation and an uneven split of
 * the indices over the ranks. */
#ifndef REDUCE_TESTDATA_H
#define REDUCE_TESTDATA_H

#include <math.h>
#include <stdint.h>

static inline uint64_t td_mix(uint64_t z) { /* splitmix64 */
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* A float64 of either sign, significand random, magnitude 2^(lo..hi). */
static inline double td_value(uint64_t seed, int lo, int hi) {
  const uint64_t r = td_mix(seed);
  const double m = 1.0 + (double)(r >> 11) * 0x1p-53;
  const int e = lo + (int)((r >> 3) % (uint64_t)(hi - lo + 1));
  return (r & 1 ? -1.0 : 1.0) * ldexp(m, e);
}

/* Mixed data, pair (x, y) of global index g: products from about 1e-300
 * to 1e300 of both signs; index pairs (2p, 2p+1) nearly cancel
 * (x[2p+1] = -x[2p], y[2p+1] = y[2p] (1 + u 2^-30)); some zeros and some
 * subnormal products. */
static inline void td_mixed(uint64_t g, double *x, double *y) {
  const uint64_t p = g / 2;
  double a = td_value(3 * p, -499, 499), b = td_value(3 * p + 1, -499, 499);
  if (g % 2) {
    a = -a;
    b = b * (1.0 + ldexp((double)(td_mix(3 * p + 2) >> 40), -54));
  }
  if (g % 1009 == 7) a = 0.0;
  if (g % 997 == 3) {
    a = ldexp(1.0 + (double)(td_mix(g) >> 12) * 0x1p-52, -1040);
    b = ldexp(1.0, -20 - (int)(g % 13)); /* subnormal product */
  }
  *x = a;
  *y = b;
}

/* Exactly cancelling data: x[2p+1] = -x[2p], y equal, so every pair's
 * products cancel, except index `one`, where the pair is (3, 1): the exact
 * dot product is 3. */
static inline void td_cancel(uint64_t g, uint64_t one, double *x, double *y) {
  const uint64_t p = g / 2;
  double a = td_value(5 * p, -499, 499), b = td_value(5 * p + 1, -499, 499);
  if (g % 2) a = -a;
  if (g == one) a = 3.0, b = 1.0;
  *x = a;
  *y = b;
}

/* The multiplier of the permutation of 0 .. n-1 (n < 2^40): the smallest
 * a >= 1000003 mod n coprime to n. */
static inline int64_t td_perm_a(int64_t n) {
  int64_t a = 1000003 % n;
  if (a == 0) a = 1;
  for (;;) {
    int64_t u = a, v = n;
    while (v) {
      int64_t t = u % v;
      u = v;
      v = t;
    }
    if (u == 1) return a;
    a++;
  }
}

/* Global index at position j of the permuted order: (a j + 12345) mod n. */
static inline int64_t td_perm(int64_t j, int64_t a, int64_t n) { return (a * j + 12345) % n; }

/* Uneven split of n positions over size ranks (rank r weighs (r + 1)^2,
 * rank order reversed on odd sizes): rank's positions [*start, *end). */
static inline void td_split(int64_t n, int rank, int size, int64_t *start, int64_t *end) {
  int64_t total = 0, before = 0;
  for (int r = 0; r < size; r++) {
    int64_t w = (int64_t)(r + 1) * (r + 1);
    total += w;
  }
  for (int r = 0; r < size; r++) {
    const int rr = size % 2 ? size - 1 - r : r;
    const int64_t w = (int64_t)(rr + 1) * (rr + 1);
    if (r == rank) {
      *start = n / total * before + (n % total) * before / total;
      *end = n / total * (before + w) + (n % total) * (before + w) / total;
      return;
    }
    before += w;
  }
}

#endif
