/* meshbatch: the term splitting of the reproducible reductions, one source
 * for the CPU (partition/mb_reduce.c) and the GPU
 * (cuda/partition/mb_reduce.cu), so both add the same integers. Private to
 * the two; see mb_reduce.h for the method.
 *
 * A finite float64 t = m * 2^(s - 1074) with an integer significand
 * m < 2^53 and s = max(biased exponent - 1, 0) in [0, 2045]. With
 * k = s / 32 and o = s % 32, m * 2^o = c0 + c1 * 2^32 + c2 * 2^64 where
 * 0 <= c0 < 2^32, 0 <= c1 < 2^33, 0 <= c2 < 2^21: t adds c0, c1, c2 (negated
 * for t < 0) to bins k, k+1, k+2.
 *
 * The CPU adds the pieces straight to the bins (mb_reduce.c). A GPU
 * thread keeps a window of 4 consecutive bins in registers; a term whose
 * k is the window's base or base + 1 is added there, any other term (or the
 * 2^28-th term of a window) hands the window's contents back to be added
 * to the bins, and starts a new window at its k. Each register then holds
 * less than 2^28 * 2^33 = 2^61 in magnitude.
 */
#ifndef MB_REDUCE_IMPL_H
#define MB_REDUCE_IMPL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "mb_reduce.h"

#ifdef __CUDACC__
#define MB_REDUCE_HD static __host__ __device__ __forceinline__
#else
#define MB_REDUCE_HD static inline
#endif

/* Terms a window, a thread's bins between carries, or one GPU launch take
 * at most: 2^28 terms of less than 2^33 each stay below 2^61. */
#define MB_REDUCE_CHUNK ((int64_t)1 << 28)

enum { MB_REDUCE_ZERO = 0, MB_REDUCE_FINITE = 1, MB_REDUCE_NAN = 2, MB_REDUCE_PINF = 3,
       MB_REDUCE_NINF = 4 };

/* Split t into its bin k and the pieces c[0..2] (signed). Returns one of
 * the MB_REDUCE_* kinds; k and c are set only for MB_REDUCE_FINITE. */
MB_REDUCE_HD int mb_reduce_split(double t, int *k, int64_t *c0, int64_t *c1, int64_t *c2) {
  uint64_t b;
#ifdef __CUDA_ARCH__
  b = (uint64_t)__double_as_longlong(t);
#else
  memcpy(&b, &t, sizeof b);
#endif
  const int e = (int)((b >> 52) & 0x7ff);
  const uint64_t f = b & (((uint64_t)1 << 52) - 1);
  const int neg = (int)(b >> 63);
  if (e == 0x7ff) return f ? MB_REDUCE_NAN : (neg ? MB_REDUCE_NINF : MB_REDUCE_PINF);
  if (e == 0 && f == 0) return MB_REDUCE_ZERO;
  const uint64_t m = e ? (f | ((uint64_t)1 << 52)) : f;
  const int s = e ? e - 1 : 0, o = s & 31;
  const uint64_t lo = (m & 0xffffffffu) << o, hi = (m >> 32) << o;
  int64_t p0 = (int64_t)(lo & 0xffffffffu);
  int64_t p1 = (int64_t)((lo >> 32) + (hi & 0xffffffffu));
  int64_t p2 = (int64_t)(hi >> 32);
  const int64_t sg = -(int64_t)neg; /* 0 or -1: negate without a branch on the sign */
  p0 = (p0 ^ sg) - sg;
  p1 = (p1 ^ sg) - sg;
  p2 = (p2 ^ sg) - sg;
  *k = s >> 5;
  *c0 = p0;
  *c1 = p1;
  *c2 = p2;
  return MB_REDUCE_FINITE;
}

/* A thread's register window: bins base .. base + 3, the number of terms
 * in it, and the counts of NaN, +Inf and -Inf terms. */
typedef struct mb_reduce_win {
  int64_t r0, r1, r2, r3;
  int64_t count;
  int64_t n_nan, n_pinf, n_ninf; /* separate fields, not an array: all stay in registers */
  int base; /* -8: empty (no k equals it or it + 1) */
} mb_reduce_win;

MB_REDUCE_HD void mb_reduce_win_init(mb_reduce_win *w) {
  w->r0 = w->r1 = w->r2 = w->r3 = 0;
  w->count = 0;
  w->n_nan = w->n_pinf = w->n_ninf = 0;
  w->base = -8;
}

/* Add term t to the window. Returns 1 when the window had to move: then
 * out[0..3] hold the old window's bins *obase .. *obase + 3, which the
 * caller adds to its bins; else 0. */
MB_REDUCE_HD int mb_reduce_win_add(mb_reduce_win *w, double t, int64_t out[4], int *obase) {
  int k = 0;
  int64_t c0 = 0, c1 = 0, c2 = 0;
  const int kind = mb_reduce_split(t, &k, &c0, &c1, &c2);
  if (kind == MB_REDUCE_ZERO) return 0;
  if (kind != MB_REDUCE_FINITE) {
    w->n_nan += kind == MB_REDUCE_NAN;
    w->n_pinf += kind == MB_REDUCE_PINF;
    w->n_ninf += kind == MB_REDUCE_NINF;
    return 0;
  }
  if (w->count < MB_REDUCE_CHUNK) {
    if (k == w->base) {
      w->r0 += c0;
      w->r1 += c1;
      w->r2 += c2;
      w->count++;
      return 0;
    }
    if (k == w->base + 1) {
      w->r1 += c0;
      w->r2 += c1;
      w->r3 += c2;
      w->count++;
      return 0;
    }
  }
  const int moved = w->base >= 0;
  out[0] = w->r0;
  out[1] = w->r1;
  out[2] = w->r2;
  out[3] = w->r3;
  *obase = w->base;
  w->base = k;
  w->r0 = c0;
  w->r1 = c1;
  w->r2 = c2;
  w->r3 = 0;
  w->count = 1;
  return moved;
}

/* Propagate carries: bins 0 .. NBINS-2 end in [0, 2^32), the top bin holds
 * the signed rest. The value is unchanged. Bins must stay below 2^62 in
 * magnitude on entry. */
MB_REDUCE_HD void mb_reduce_normalise(int64_t *b) {
  for (int i = 0; i < MB_REDUCE_NBINS - 1; i++) {
    const int64_t lo = (int64_t)((uint64_t)b[i] & 0xffffffffu);
    const int64_t carry = (b[i] - lo) / ((int64_t)1 << 32); /* exact: b - lo is a multiple */
    b[i] = lo;
    b[i + 1] += carry;
  }
}

/* Number of significant bits of v > 0. */
MB_REDUCE_HD int mb_reduce_bit_length(uint64_t v) {
  int n = 0;
  while (v) {
    n++;
    v >>= 1;
  }
  return n;
}

/* The value of the slots s[MB_REDUCE_NSLOTS] (an accumulator's) rounded to
 * the nearest float64, ties to even, with mb_reduce.h's rule for special
 * values: the one rounding of the CPU (mb_reduce_acc_value) and of the
 * device-resident reductions (mb_reduce_device_columns), so both give the
 * same bits. */
MB_REDUCE_HD double mb_reduce_slots_value(const int64_t *s) {
  const int64_t n_nan = s[MB_REDUCE_NBINS], n_pinf = s[MB_REDUCE_NBINS + 1],
                n_ninf = s[MB_REDUCE_NBINS + 2];
  if (n_nan || (n_pinf && n_ninf)) return NAN;
  if (n_pinf) return INFINITY;
  if (n_ninf) return -INFINITY;
  int64_t d[MB_REDUCE_NBINS];
  for (int i = 0; i < MB_REDUCE_NBINS; i++) d[i] = s[i];
  mb_reduce_normalise(d);
  const int neg = d[MB_REDUCE_NBINS - 1] < 0; /* lower bins are >= 0 and below one unit of it */
  if (neg) {
    for (int i = 0; i < MB_REDUCE_NBINS; i++) d[i] = -d[i];
    mb_reduce_normalise(d);
  }
  /* now 0 <= d[i] < 2^32 for every i (|sum| < 2^78 DBL_MAX), value = sum d[i] 2^(32 i - 1074) */
  int t = MB_REDUCE_NBINS - 1;
  while (t >= 0 && d[t] == 0) t--;
  if (t < 0) return 0.0; /* exact zero: +0 */
  const uint64_t dt = (uint64_t)d[t], d1 = t >= 1 ? (uint64_t)d[t - 1] : 0,
                 d2 = t >= 2 ? (uint64_t)d[t - 2] : 0;
  const int lt = mb_reduce_bit_length(dt), L = 32 * t + lt; /* bits of N = value * 2^1074 */
  double r;
  if (L <= 53) { /* N < 2^53, t <= 1: N * 2^-1074 is a float64 as it stands */
    const uint64_t N = t == 1 ? (dt << 32) | d1 : dt;
    r = ldexp((double)N, -1074);
  } else { /* round N to 53 bits: q, the rounding bit, and whether anything below is set */
    const uint64_t hi = (dt << 32) | d1; /* lt + 32 bits */
    uint64_t top54;
    int sticky;
    if (lt + 32 >= 54) {
      const int sh = lt + 32 - 54;
      top54 = hi >> sh;
      sticky = (hi & (((uint64_t)1 << sh) - 1)) != 0 || d2 != 0;
    } else {
      const int sh = 54 - (lt + 32); /* 1 .. 21 */
      top54 = (hi << sh) | (d2 >> (32 - sh));
      sticky = (d2 & (((uint64_t)1 << (32 - sh)) - 1)) != 0;
    }
    for (int i = t - 3; i >= 0 && !sticky; i--) sticky = d[i] != 0;
    uint64_t q = top54 >> 1;
    if ((top54 & 1) && (sticky || (q & 1))) q++; /* nearest, ties to even; q <= 2^53 exact */
    r = ldexp((double)q, L - 53 - 1074);         /* exact, or Inf past DBL_MAX */
  }
  return neg ? -r : r;
}

/* Internal (mb_reduce.c): add slots s[MB_REDUCE_NSLOTS] (each below 2^62
 * in magnitude) to acc and propagate the carries. */
#ifdef __cplusplus
extern "C" {
#endif
void mb_reduce_acc_add_slots(mb_reduce_acc *acc, const int64_t *s);

/* Internal (mb_reduce.c), for the tests: mb_reduce_acc_add by the GPU's
 * register-window method, serial on the CPU. */
void mb_reduce_acc_add_windowed(mb_reduce_acc *acc, int64_t n, const double *x, const double *y);
#ifdef __cplusplus
}
#endif

#endif
