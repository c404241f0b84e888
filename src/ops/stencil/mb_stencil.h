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
 * reproduce bit for bit (no fused multiply-add; T is float or double):
 *   derivative along axis a at a point, with u[+k] the k-th neighbour:
 *     s = c1 (u[+1] - u[-1]); s = s + c2 (u[+2] - u[-2]);
 *     s = s + c3 (u[+3] - u[-3]); s = s + c4 (u[+4] - u[-4]);
 *     du = s * r, r = (T)(1.0 / h[a]);
 *     c1 = 4/5, c2 = -1/5, c3 = 4/105, c4 = -1/280, each (T)(the double);
 *   second difference along axis a:
 *     s = d0 u[0]; s = s + d1 (u[+1] + u[-1]); ... ; s = s + d4 (u[+4] + u[-4]);
 *     times q_a = (T)(1.0 / (h[a] * h[a]));
 *     d0 = -205/72, d1 = 8/5, d2 = -1/5, d3 = 8/315, d4 = -1/560;
 *   laplacian = (z term + y term) + x term;
 *   heat step: u = u + a * lap(u), a = (T)(alpha * dt);
 *   wave step: u_next = (2 u - u_prev) + b * lap(u), b = (T)(c * c * dt * dt),
 *     2 u computed as u + u.
 * Results do not depend on the number of OpenMP threads.
 */
#ifndef MB_STENCIL_H
#define MB_STENCIL_H

#include <stdint.h>

#include "mb_error.h"

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

/* |symbol| of the 1D second difference at the Nyquist wavenumber:
 * |d0 - 2 d1 + 2 d2 - 2 d3 + 2 d4| = 1.4 * 1.4 * ... = 6.5015873... */
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
 * framed arrays of the same layout (du's frame is left as it is).
 * Not collective. Errors: MB_ERR_ARG (axis, ghost, sizes). */
mb_error mb_stencil_derivative_f64(const mb_stencil_grid *g, int axis, const double *u,
                                   double *du);
mb_error mb_stencil_derivative_f32(const mb_stencil_grid *g, int axis, const float *u, float *du);

/* lap = the 25-point Laplacian of u on the block's points (framed arrays).
 * Not collective. Errors: MB_ERR_ARG. */
mb_error mb_stencil_laplacian_f64(const mb_stencil_grid *g, const double *u, double *lap);
mb_error mb_stencil_laplacian_f32(const mb_stencil_grid *g, const float *u, float *lap);

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
