/* meshbatch: the triangle arithmetic of the cotangent operators, written
 * once as macros over the real type T (double or float) so that C and CUDA
 * compile the same operations in the same order (bitwise equal results on
 * the CPU and the GPU, with -ffp-contract=off and --fmad=false). Used by
 * the smoothing rule (src/ops/smooth/mb_smooth_vertex.h), the operator
 * assembly (linalg/mb_csr.c, cuda/linalg) and the solver ops.
 *
 * Positions are xyz [*, 3] row-major; i, j, o are vertex indices.
 * Pinkall & Polthier, "Computing discrete minimal surfaces and their
 * conjugates", Experiment. Math. 2(1), 1993; Desbrun, Meyer, Schroeder,
 * Barr, SIGGRAPH 1999, eq. (5); Meyer, Desbrun, Schroeder, Barr,
 * "Discrete differential-geometry operators for triangulated
 * 2-manifolds", VisMath 2002, section 3.
 */
#ifndef MB_COTAN_H
#define MB_COTAN_H

#include <math.h>

/* cot of the angle at o between (p_i - p_o) and (p_j - p_o), as
 * dot / |cross|; 0 if the triangle is degenerate (zero cross product). */
#define MB_COT_AT(T, xin, i, j, o, out)                                         \
  do {                                                                         \
    T ax_ = xin[3 * (i)] - xin[3 * (o)], ay_ = xin[3 * (i) + 1] - xin[3 * (o) + 1], \
      az_ = xin[3 * (i) + 2] - xin[3 * (o) + 2];                               \
    T bx_ = xin[3 * (j)] - xin[3 * (o)], by_ = xin[3 * (j) + 1] - xin[3 * (o) + 1], \
      bz_ = xin[3 * (j) + 2] - xin[3 * (o) + 2];                               \
    T d_ = ax_ * bx_ + ay_ * by_ + az_ * bz_;                                  \
    T cx_ = ay_ * bz_ - az_ * by_, cy_ = az_ * bx_ - ax_ * bz_,                \
      cz_ = ax_ * by_ - ay_ * bx_;                                             \
    T c_ = sqrt(cx_ * cx_ + cy_ * cy_ + cz_ * cz_);                            \
    (out) = c_ > (T)0 ? d_ / c_ : (T)0;                                        \
  } while (0)

/* Twice the area of triangle (i, j, o): |(p_j - p_i) x (p_o - p_i)|. */
#define MB_TRIANGLE_AREA2(T, xin, i, j, o, out)                                 \
  do {                                                                         \
    T ax_ = xin[3 * (j)] - xin[3 * (i)], ay_ = xin[3 * (j) + 1] - xin[3 * (i) + 1], \
      az_ = xin[3 * (j) + 2] - xin[3 * (i) + 2];                               \
    T bx_ = xin[3 * (o)] - xin[3 * (i)], by_ = xin[3 * (o) + 1] - xin[3 * (i) + 1], \
      bz_ = xin[3 * (o) + 2] - xin[3 * (i) + 2];                               \
    T cx_ = ay_ * bz_ - az_ * by_, cy_ = az_ * bx_ - ax_ * bz_,                \
      cz_ = ax_ * by_ - ay_ * bx_;                                             \
    (out) = sqrt(cx_ * cx_ + cy_ * cy_ + cz_ * cz_);                           \
  } while (0)

#endif
