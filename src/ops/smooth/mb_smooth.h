/* meshbatch: Laplacian and Taubin lambda|mu smoothing, the shared definitions.
 *
 * Method: G. Taubin, "A signal processing approach to fair surface design",
 * SIGGRAPH 1995, sections 3-4 (umbrella operator, lambda|mu passes), and
 * M. Desbrun et al., "Implicit fairing of irregular meshes", SIGGRAPH 1999,
 * eq. (5) for the cotangent weights used explicitly here.
 *
 * One pass with factor f is a simultaneous (Jacobi) update from the previous
 * positions p:   p'_i = p_i + f * (sum_j w_ij p_j / sum_j w_ij - p_i)
 * over the distinct edge neighbours j of i, in ascending j (the summation
 * order is fixed, so every backend and rank count adds in the same order).
 * A Taubin iteration is one lambda pass followed by one mu pass; a Laplacian
 * iteration is a lambda pass alone. docs/guide.md documents the rules.
 */
#ifndef MB_SMOOTH_H
#define MB_SMOOTH_H

#include <stdint.h>

#include "mb_adjacency.h"
#include "mb_error.h"
#include "mb_op.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mb_smooth_method { MB_SMOOTH_TAUBIN = 0, MB_SMOOTH_LAPLACIAN = 1 } mb_smooth_method;

typedef enum mb_weights {
  MB_WEIGHTS_UNIFORM = 0,          /* w_ij = 1: Taubin's umbrella operator */
  MB_WEIGHTS_COTANGENT = 1,        /* w_ij = max((cot a_ij + cot b_ij) / 2, 0) */
  MB_WEIGHTS_INVERSE_DISTANCE = 2  /* w_ij = 1 / (|p_i - p_j| + 1e-12) */
} mb_weights;

typedef enum mb_boundary {
  MB_BOUNDARY_FREE = 0,   /* boundary vertices move like any other */
  MB_BOUNDARY_FIXED = 1,  /* boundary vertices never move */
  MB_BOUNDARY_CURVE = 2   /* boundary vertices average along boundary edges only */
} mb_boundary;


/* The parameters of one smoothing stage (the taubin and laplacian ops). */
typedef struct mb_smooth_stage {
  mb_smooth_method method;
  double lambda;       /* first (shrinking) factor, 0 < lambda < 1 typically */
  double mu;           /* second (inflating) factor, Taubin only, mu < -lambda */
  int iterations;      /* >= 0 */
  mb_weights weights;
  mb_boundary boundary;
  const struct mb_op_ctx *ctx; /* the run's stop query and progress (mb_op_should_stop),
                                  read every iteration; NULL: never stops (not a job key) */
} mb_smooth_stage;

/* Added to |p_i - p_j| in inverse-distance weights, so coincident points
 * give a large finite weight rather than a division by zero. */
#define MB_INVERSE_DISTANCE_EPS 1e-12

/* Names used in job files and provenance ("uniform", "fixed", "taubin", ...). */
const char *mb_smooth_method_name(mb_smooth_method op);
const char *mb_weights_name(mb_weights w);
const char *mb_boundary_name(mb_boundary b);

/* Number of passes a stage makes (2 per Taubin iteration, 1 per Laplacian). */
int64_t mb_smooth_passes(const mb_smooth_stage *stage);

/* Check that a mesh/stage pair is supported (cotangent weights need a
 * triangle mesh, i.e. adj->opp != NULL). Not collective.
 * Errors: MB_ERR_ARG with a message naming the rule. */
mb_error mb_smooth_check(const mb_smooth_stage *stage, const mb_adjacency *adj);

/* One CPU pass (OpenMP over vertices). xin and xout are [nv, 3] float64 and
 * must not alias. Not collective. Source: Taubin 1995, eq. (4)-(5). */
void mb_smooth_pass_cpu(const mb_adjacency *adj, mb_weights weights,
                        mb_boundary boundary, double factor, const double *xin,
                        double *xout);

/* The same pass restricted to rows [begin, end) of adj: only those vertices
 * of xout are written; xin may have more rows than adj (ghosts). */
void mb_smooth_rows_cpu(const mb_adjacency *adj, int64_t begin, int64_t end, mb_weights weights,
                        mb_boundary boundary, double factor, const double *xin, double *xout);

/* ---- Scale: power-of-two rescaling of the positions for extreme scales.
 *
 * Squared lengths and cross products overflow above about 1e154 and
 * underflow below about 1e-154, so that cotangent and inverse-distance
 * weights became 0 (vertices silently unchanged), and the 1e-12 added to
 * inverse distances swamped the distances of tiny meshes. The smoothing ops
 * therefore multiply the positions by 2^k before the passes and by 2^-k
 * after them. A power of two changes no bits (every operation of a pass is
 * homogeneous of degree 1, or 0 for the cotangents, so uniform and
 * cotangent results are exactly 2^-k times the scaled ones, and inverse
 * distances measure their 1e-12 in units of 2^-k). k = 0 for every mesh
 * whose largest absolute coordinate lies in [2^-17, 2^16) (about 7.6e-6
 * to 65536): such meshes give the same bits as before. Otherwise k = -e
 * where maxabs = m 2^e, m in [0.5, 1) (frexp), so the scaled positions lie
 * in (-1, 1). */

/* The exponent window within which the scale is 1: MB_SMOOTH_SCALE_MIN_EXP
 * <= e <= MB_SMOOTH_SCALE_MAX_EXP for maxabs = m 2^e, m in [0.5, 1). */
#define MB_SMOOTH_SCALE_MIN_EXP (-16)
#define MB_SMOOTH_SCALE_MAX_EXP 16

/* The largest absolute coordinate of xyz [n, 3] (float64) into *maxabs (0
 * for n = 0). Not collective. Errors: MB_ERR_NUMERIC naming the first
 * vertex (0-based row) with a NaN or infinite coordinate. */
mb_error mb_smooth_maxabs(int64_t n, const double *xyz, double *maxabs);

/* The power-of-two exponent k by which positions whose largest absolute
 * coordinate is maxabs (finite, >= 0) are multiplied before the passes
 * (see above); 0 within the window. Not collective; pure. */
int mb_smooth_scale_exponent(double maxabs);

/* xyz [n, 3] (float64) times 2^k in place (ldexp: exact unless a result
 * leaves the normal range). Not collective. Errors: MB_ERR_NUMERIC if a
 * result is not finite (the smoothed positions overflow when scaled back),
 * naming the row. */
mb_error mb_smooth_scale_rows(int64_t n, double *xyz, int k);

/* Run all stages on the CPU, updating xyz [nv, 3] in place, on the
 * positions as given (the ops apply the power-of-two scale above first;
 * callers of this function at extreme scales should too). Not collective.
 * Errors: MB_ERR_ARG (unsupported rule), MB_ERR_MEMORY. */
mb_error mb_smooth_cpu(const mb_adjacency *adj, const mb_smooth_stage *stages, int nstages,
                       double *xyz);

#ifdef __cplusplus
}
#endif
#endif
