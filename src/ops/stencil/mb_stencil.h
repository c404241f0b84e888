/* meshbatch: 8th-order finite-difference stencils on 3D grids (CPU
 * reference kernels of the stencil room).
 *
 * Method: central differences of 8th order, B. Fornberg, "Generation of
 * finite difference formulas on arbitrarily spaced grids", Math. Comp. 51
 * (1988), table 1; the first-derivative form of NVIDIA's "Finite Difference
 * Methods in CUDA C/C++" (M. Harris, 2013).
 *
 * Layout: a block of n[0] x n[1] x n[2] points (z, y, x; x fastest, C
 * order) inside a frame of `ghost` planes (0 or 4) on every side, so arrays
 * hold (n[0] + 2g) x (n[1] + 2g) x (n[2] + 2g) values. With ghost 0 the
 * kernels apply the boundary rule themselves; with ghost 4 they read the
 * ghost planes, which the caller fills (mb_stencil_fill_ghosts for a whole
 * grid, a halo exchange for a block of a grid split over ranks). A star
 * stencil reads no edge or corner of the frame.
 *
 * Boundaries: periodic (indices wrap over the whole grid), or dirichlet:
 * every point beyond the grid has the value `outside`; all points of the
 * grid, including the 4 outer planes, are computed with the same formula.
 *
 * Arithmetic, the contract that every backend and the distributed run
 * reproduce bit for bit. T is float or double; fma(a, b, c) is the fused
 * multiply-add a b + c rounded once (IEEE 754 fusedMultiplyAdd: C's fma and
 * fmaf, CUDA's __fma_rn and __fmaf_rn); no other product is fused. The
 * weights (mb_stencil_weights) are computed in double and rounded to T
 * once; u[+k] is the k-th neighbour along the axis:
 *   derivative along axis a:
 *     s = e1 (u[+1] - u[-1]); s = fma(e2, u[+2] - u[-2], s);
 *     s = fma(e3, u[+3] - u[-3], s); du = fma(e4, u[+4] - u[-4], s);
 *     e_k = (T)(c_k / h[a]), c1 = 4/5, c2 = -1/5, c3 = 4/105, c4 = -1/280;
 *   Laplacian: s = f0 u[0], then for the axes z, y, x in turn and k = 1..4
 *     within each, s = fma(f_k, u[+k] + u[-k], s) (12 fused steps);
 *     f_k = (T)(d_k / h[a]^2), f0 = (T)(d0 (1/hz^2 + 1/hy^2 + 1/hx^2)),
 *     d0 = -205/72, d1 = 8/5, d2 = -1/5, d3 = 8/315, d4 = -1/560;
 *   heat step: u_next = fma(a, lap(u), u), a = (T)(alpha * dt);
 *   wave step: u_next = fma(b, lap(u), (u + u) - u_prev), b = (T)(c^2 dt^2).
 * One rounded chain per point, 13 operations for the Laplacian where the
 * unfused sums took 42: the GPU kernels issue about half the instructions
 * (docs/benchmarks.md). On x86-64 the CPU kernels are built twice, for
 * processors with FMA (hardware FMA, vectorized) and for any x86-64 (C's
 * fma, the same bits), and the loader picks one (target_clones).
 * Results do not depend on the number of OpenMP threads.
 */
#ifndef MB_STENCIL_H
#define MB_STENCIL_H

#include <stdint.h>

#include "mb_error.h"

/* The stencils' radius: points read on each side along an axis, the ghost
 * width of a block of a grid split over ranks (mb_op_info.ghost_depth). */
#define MB_STENCIL_RADIUS 4

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mb_stencil_boundary { MB_STENCIL_PERIODIC = 0, MB_STENCIL_DIRICHLET = 1 } mb_stencil_boundary;

/* A block of a 3D grid: points per axis (z, y, x), spacing per axis (the
 * user's length unit), the rule beyond the whole grid, and the ghost width
 * (0 or 4) of the arrays. */
typedef struct mb_stencil_grid {
  int64_t n[3];
  double h[3];
  mb_stencil_boundary bc;
  double outside;
  int ghost;
} mb_stencil_grid;

/* The stencil weights of a grid's spacing, in double (each backend rounds
 * them to its value type once): first[a][k - 1] = c_k / h[a] of the first
 * derivative along axis a (0 z, 1 y, 2 x), second[a][k - 1] = d_k / h[a]^2
 * of the second difference, center = d0 (1/hz^2 + 1/hy^2 + 1/hx^2) of the
 * Laplacian; the coefficients are those of the contract above (Fornberg
 * 1988, table 1). Units: 1/length and 1/length^2 of the spacing's unit. */
typedef struct mb_stencil_weights {
  double first[3][4], second[3][4], center;
} mb_stencil_weights;

/* The weights of g's spacing. Not collective; no errors (g->h must be
 * positive and finite, as every kernel checks). */
mb_stencil_weights mb_stencil_weights_of(const mb_stencil_grid *g);

/* |symbol| of the 1D second difference at the Nyquist wavenumber:
 * |d0 - 2 d1 + 2 d2 - 2 d3 + 2 d4| = 2048/315 = 6.5015873... */
double mb_stencil_nyquist(void);

/* The largest stable time step of explicit heat steps: the Laplacian's
 * eigenvalues lie in [-lambda, 0], lambda = L (1/h0^2 + 1/h1^2 + 1/h2^2)
 * with L = mb_stencil_nyquist(); forward Euler is stable for
 * alpha dt lambda <= 2, so dt_max = 2 / (alpha lambda). Not collective. */
double mb_stencil_heat_dt_limit(const mb_stencil_grid *g, double alpha);

/* The leapfrog CFL limit of the wave equation: (c dt)^2 lambda <= 4, so
 * dt_max = 2 / (c sqrt(lambda)). Not collective. */
double mb_stencil_wave_dt_limit(const mb_stencil_grid *g, double c);

/* Refuse heat (wave) parameters that are not positive or a time step
 * beyond the stability (CFL) limit, with the limit in the message; the
 * same words on every backend and path. Not collective. Errors: MB_ERR_ARG. */
mb_error mb_stencil_check_heat(const mb_stencil_grid *g, double alpha, double dt, int64_t nsteps);
mb_error mb_stencil_check_wave(const mb_stencil_grid *g, double c, double dt, int64_t nsteps);

/* For ghost == 4 on a whole grid: fill the 4 ghost planes of the 6 faces
 * by the boundary rule (periodic wrap, or `outside`); edges and corners of
 * the frame are left as they are. u: the framed array. Not collective.
 * Errors: MB_ERR_ARG (ghost != 4, a periodic axis shorter than 4 points). */
mb_error mb_stencil_fill_ghosts_f64(const mb_stencil_grid *g, double *u);
mb_error mb_stencil_fill_ghosts_f32(const mb_stencil_grid *g, float *u);

/* du = d u / d axis (0 z, 1 y, 2 x) on the block's points; u and du are
 * framed arrays of the same layout (ghost 4: du's frame is left as it is)
 * or plain ones (ghost 0: a whole grid, the boundary rule applied here);
 * du must not be u. Not collective.
 * Errors: MB_ERR_ARG (axis, ghost, sizes, du = u), MB_ERR_MEMORY (ghost 0). */
mb_error mb_stencil_derivative_f64(const mb_stencil_grid *g, int axis, const double *u,
                                   double *du);
mb_error mb_stencil_derivative_f32(const mb_stencil_grid *g, int axis, const float *u, float *du);

/* lap = the 25-point Laplacian of u on the block's points (framed or
 * plain arrays, as the derivative; lap must not be u). Not collective.
 * Errors: MB_ERR_ARG, MB_ERR_MEMORY (ghost 0). */
mb_error mb_stencil_laplacian_f64(const mb_stencil_grid *g, const double *u, double *lap);
mb_error mb_stencil_laplacian_f32(const mb_stencil_grid *g, const float *u, float *lap);

/* One fused step on the block's points:
 * heat: out = fma(a, lap(u), u), a = (T)(coef) (coef = alpha dt; half of
 * (c dt)^2 gives the wave's first step from rest);
 * wave: out = fma(b, lap(u), (u + u) - prev), b = (T)(coef), coef = (c dt)^2.
 * Framed arrays (ghost 4): the caller has filled u's ghost planes (boundary
 * rule or halo exchange) and out's frame is left as it is; plain arrays
 * (ghost 0): a whole grid, the boundary rule applied here. out must not be
 * u (it may be prev). No stability check (mb_stencil_check_heat/_wave).
 * Not collective. Errors: MB_ERR_ARG, MB_ERR_MEMORY (ghost 0). */
mb_error mb_stencil_heat_step_f64(const mb_stencil_grid *g, double coef, const double *u,
                                  double *out);
mb_error mb_stencil_heat_step_f32(const mb_stencil_grid *g, double coef, const float *u,
                                  float *out);
mb_error mb_stencil_wave_step_f64(const mb_stencil_grid *g, double coef, const double *prev,
                                  const double *u, double *out);
mb_error mb_stencil_wave_step_f32(const mb_stencil_grid *g, double coef, const float *prev,
                                  const float *u, float *out);

/* nsteps explicit heat steps of u in place (framed; with ghost 4 the
 * ghosts are refilled by mb_stencil_fill_ghosts before each step, so u must
 * be a whole grid); work has u's size. Not collective.
 * Errors: MB_ERR_ARG (dt <= 0, nsteps < 0, alpha <= 0, or dt beyond
 * mb_stencil_heat_dt_limit: the message states the limit), MB_ERR_MEMORY. */
mb_error mb_stencil_heat_f64(const mb_stencil_grid *g, double alpha, double dt, int64_t nsteps,
                             double *u, double *work);
mb_error mb_stencil_heat_f32(const mb_stencil_grid *g, double alpha, double dt, int64_t nsteps,
                             float *u, float *work);

/* nsteps leapfrog steps of the wave equation: on return u holds the last
 * step and u_prev the one before (both framed, whole grid); work has u's
 * size. Not collective. Errors: MB_ERR_ARG (dt beyond
 * mb_stencil_wave_dt_limit, stating it; c <= 0; dt <= 0; nsteps < 0),
 * MB_ERR_MEMORY. */
mb_error mb_stencil_wave_f64(const mb_stencil_grid *g, double c, double dt, int64_t nsteps,
                             double *u_prev, double *u, double *work);
mb_error mb_stencil_wave_f32(const mb_stencil_grid *g, double c, double dt, int64_t nsteps,
                             float *u_prev, float *u, float *work);

#ifdef __cplusplus
}
#endif
#endif
