/* meshbatch: CPU reference kernels of the stencil room (see mb_stencil.h).
 * OpenMP over (z, y) rows, inner x loops the compiler vectorizes; every
 * point's arithmetic is fixed (mb_stencil.h), so results do not depend on
 * the thread count. The sweeps use C's fma; on x86-64 each is built twice
 * (MB_STENCIL_CLONES: for processors with FMA, where fma is one vectorized
 * instruction, and for any x86-64, where it is the C library's correctly
 * rounded fma), and the loader picks the clone for the processor. The plain (ghost 0) entry points copy the grid into a
 * framed array with its ghost faces filled by the boundary rule and run the
 * framed kernels, so both paths give the same bits. */
#include "mb_stencil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* 1.4 ... : |d0 - 2 d1 + 2 d2 - 2 d3 + 2 d4| with the coefficients of the
 * second difference (mb_stencil.h). */
double mb_stencil_nyquist(void) {
  const double d0 = -205.0 / 72.0, d1 = 8.0 / 5.0, d2 = -1.0 / 5.0, d3 = 8.0 / 315.0,
               d4 = -1.0 / 560.0;
  return fabs(d0 - 2 * d1 + 2 * d2 - 2 * d3 + 2 * d4);
}

mb_stencil_weights mb_stencil_weights_of(const mb_stencil_grid *g) {
  static const double c[4] = {4.0 / 5.0, -1.0 / 5.0, 4.0 / 105.0, -1.0 / 280.0};
  static const double d[5] = {-205.0 / 72.0, 8.0 / 5.0, -1.0 / 5.0, 8.0 / 315.0, -1.0 / 560.0};
  mb_stencil_weights w;
  double q[3];
  for (int a = 0; a < 3; a++) {
    q[a] = 1.0 / (g->h[a] * g->h[a]);
    for (int k = 0; k < 4; k++) {
      w.first[a][k] = c[k] / g->h[a];
      w.second[a][k] = d[k + 1] * q[a];
    }
  }
  w.center = d[0] * (q[0] + q[1] + q[2]);
  return w;
}

static double lambda_max(const mb_stencil_grid *g) {
  return mb_stencil_nyquist() *
         (1 / (g->h[0] * g->h[0]) + 1 / (g->h[1] * g->h[1]) + 1 / (g->h[2] * g->h[2]));
}

double mb_stencil_heat_dt_limit(const mb_stencil_grid *g, double alpha) {
  return 2 / (alpha * lambda_max(g));
}

double mb_stencil_wave_dt_limit(const mb_stencil_grid *g, double c) {
  return 2 / (c * sqrt(lambda_max(g)));
}

/* Sizes and spacing; L receives the framed sizes (n + 8 per axis). whole:
 * the kernel needs the whole grid when framed (it fills the ghosts). */
static mb_error check_grid(const mb_stencil_grid *g, int whole, int64_t L[3]) {
  MB_CHECK(g && (g->ghost == 0 || g->ghost == 4), MB_ERR_ARG, "stencil: ghost width must be 0 or 4");
  (void)whole;
  for (int a = 0; a < 3; a++) {
    MB_CHECK(g->n[a] >= 1 && isfinite(g->h[a]) && g->h[a] > 0, MB_ERR_ARG,
             "stencil: grid of %lld x %lld x %lld points with spacing %g %g %g",
             (long long)g->n[0], (long long)g->n[1], (long long)g->n[2], g->h[0], g->h[1],
             g->h[2]);
    L[a] = g->n[a] + 8;
  }
  return MB_SUCCESS;
}

mb_error mb_stencil_check_heat(const mb_stencil_grid *g, double alpha, double dt, int64_t nsteps) {
  MB_CHECK(alpha > 0 && isfinite(alpha), MB_ERR_ARG, "heat: alpha must be positive (got %g)", alpha);
  MB_CHECK(dt > 0 && isfinite(dt), MB_ERR_ARG, "heat: dt must be positive (got %g)", dt);
  MB_CHECK(nsteps >= 0, MB_ERR_ARG, "heat: negative number of steps (%lld)", (long long)nsteps);
  const double limit = mb_stencil_heat_dt_limit(g, alpha);
  MB_CHECK(dt <= limit, MB_ERR_ARG,
           "heat: time step %g exceeds the stability limit %.6g of explicit steps (alpha %g, "
           "spacing %g %g %g: dt <= 2 / (alpha * 6.5016 * (1/hz^2 + 1/hy^2 + 1/hx^2)))",
           dt, limit, alpha, g->h[0], g->h[1], g->h[2]);
  return MB_SUCCESS;
}

mb_error mb_stencil_check_wave(const mb_stencil_grid *g, double c, double dt, int64_t nsteps) {
  MB_CHECK(c > 0 && isfinite(c), MB_ERR_ARG, "wave: c must be positive (got %g)", c);
  MB_CHECK(dt > 0 && isfinite(dt), MB_ERR_ARG, "wave: dt must be positive (got %g)", dt);
  MB_CHECK(nsteps >= 0, MB_ERR_ARG, "wave: negative number of steps (%lld)", (long long)nsteps);
  const double limit = mb_stencil_wave_dt_limit(g, c);
  MB_CHECK(dt <= limit, MB_ERR_ARG,
           "wave: time step %g exceeds the CFL limit %.6g of leapfrog steps (c %g, spacing %g "
           "%g %g: dt <= 2 / (c * sqrt(6.5016 * (1/hz^2 + 1/hy^2 + 1/hx^2))))",
           dt, limit, c, g->h[0], g->h[1], g->h[2]);
  return MB_SUCCESS;
}

/* A per-point function inlined into every clone's loop, so that it vectorizes. */
#if defined(__GNUC__)
#define MB_STENCIL_INLINE static inline __attribute__((always_inline))
#else
#define MB_STENCIL_INLINE static inline
#endif

/* What a sweep over a block writes at a point: the first derivative along
 * z, y or x, or from its Laplacian, the Laplacian, a heat or a wave step. */
enum { SWEEP_DZ, SWEEP_DY, SWEEP_DX, SWEEP_LAP, SWEEP_HEAT, SWEEP_WAVE };

/* The sweeps built for processors with FMA (and so AVX) and for any x86-64,
 * where the compiler can clone functions (GCC and clang on x86-64 with
 * ifunc). The clone is chosen by the feature, not by "arch=haswell", which
 * the resolver matches by processor model: an AMD EPYC with FMA took the
 * generic clone, 3x slower. */
#if !defined(MB_STENCIL_NO_CLONES) && defined(__x86_64__) && defined(__ELF__) && \
    ((defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 8) || \
     (defined(__clang__) && __clang_major__ >= 14))
#define MB_STENCIL_CLONES __attribute__((target_clones("fma", "default")))
#else
#define MB_STENCIL_CLONES
#endif

#define T double
#define SFX f64
#define FMA fma
#include "mb_stencil_tmpl.h"
#undef T
#undef SFX
#undef FMA

#define T float
#define SFX f32
#define FMA fmaf
#include "mb_stencil_tmpl.h"
#undef T
#undef SFX
#undef FMA
