/* meshbatch: the update of one vertex in one smoothing pass, shared by the
 * CPU backend (src/mb_smooth.c) and the CUDA kernels (cuda/mb_smooth.cu).
 *
 * Written as a macro over the real type T (double or float) so that C and
 * CUDA compile the same operations in the same order. Arguments:
 *   i          vertex index (int64_t)
 *   row, col   adjacency CSR (mb_adjacency.row/.col), int64_t or int32_t
 *   opp_row, opp   opposite vertices per directed edge (cotangent only)
 *   on_boundary, brow, bcol   boundary flags and boundary-edge CSR
 *   weights, boundary   mb_weights, mb_boundary of the stage
 *   f          the pass factor (lambda or mu), type T
 *   xin, xout  [nv, 3] positions of type T, read and written
 *
 * The pass (Taubin 1995, eq. 4-5): p'_i = p_i + f (sum_j w_ij p_j / sum_j w_ij - p_i),
 * neighbours j in ascending order. Weights:
 *   uniform           w = 1
 *   inverse_distance  w = 1 / (|p_i - p_j| + 1e-12)
 *   cotangent         w = max(0.5 * sum over faces of cot(angle opposite ij), 0);
 *                     a degenerate face (zero cross product) contributes 0
 *                     (Desbrun et al. 1999, eq. 5; Pinkall & Polthier 1993)
 * A vertex whose weight sum is not positive does not move (isolated vertices
 * included). boundary fixed: boundary vertices do not move; boundary curve:
 * a boundary vertex moves towards (p_i + sum_b p_b) / (1 + #b) over its
 * boundary-edge neighbours b.
 */
#ifndef MB_SMOOTH_VERTEX_H
#define MB_SMOOTH_VERTEX_H

#include <math.h>

#include "mb_cotan.h" /* MB_COT_AT, shared with the linalg layer's assembly */

#define MB_SMOOTH_VERTEX(T, i, row, col, opp_row, opp, on_boundary, brow, bcol, \
                         weights, boundary, f, xin, xout)                     \
  do {                                                                         \
    const T px_ = xin[3 * (i)], py_ = xin[3 * (i) + 1], pz_ = xin[3 * (i) + 2]; \
    T sx_ = 0, sy_ = 0, sz_ = 0, sw_ = 0;                                      \
    if ((boundary) != MB_BOUNDARY_FREE && on_boundary[i]) {                    \
      if ((boundary) == MB_BOUNDARY_CURVE) {                                   \
        sx_ = px_; sy_ = py_; sz_ = pz_; sw_ = 1;                              \
        for (int64_t k_ = brow[i]; k_ < brow[(i) + 1]; k_++) {                \
          int64_t j_ = bcol[k_];                                               \
          sx_ += xin[3 * j_]; sy_ += xin[3 * j_ + 1]; sz_ += xin[3 * j_ + 2];  \
          sw_ += 1;                                                            \
        }                                                                      \
      }                                                                        \
    } else {                                                                   \
      for (int64_t k_ = row[i]; k_ < row[(i) + 1]; k_++) {                    \
        int64_t j_ = col[k_];                                                  \
        const T qx_ = xin[3 * j_], qy_ = xin[3 * j_ + 1], qz_ = xin[3 * j_ + 2]; \
        T w_ = 1;                                                              \
        if ((weights) == MB_WEIGHTS_INVERSE_DISTANCE) {                        \
          T dx_ = qx_ - px_, dy_ = qy_ - py_, dz_ = qz_ - pz_;                 \
          w_ = (T)1 / (sqrt(dx_ * dx_ + dy_ * dy_ + dz_ * dz_) + (T)1e-12);   \
        } else if ((weights) == MB_WEIGHTS_COTANGENT) {                        \
          T cs_ = 0;                                                           \
          for (int64_t q_ = opp_row[k_]; q_ < opp_row[k_ + 1]; q_++) {        \
            T c1_;                                                             \
            int64_t o_ = opp[q_];                                              \
            MB_COT_AT(T, xin, (i), j_, o_, c1_);                               \
            cs_ += c1_;                                                        \
          }                                                                    \
          w_ = (T)0.5 * cs_;                                                   \
          if (!(w_ > (T)0)) w_ = 0;                                            \
        }                                                                      \
        sx_ += w_ * qx_; sy_ += w_ * qy_; sz_ += w_ * qz_;                     \
        sw_ += w_;                                                             \
      }                                                                        \
    }                                                                          \
    if (sw_ > (T)0) {                                                          \
      xout[3 * (i)] = px_ + (f) * (sx_ / sw_ - px_);                           \
      xout[3 * (i) + 1] = py_ + (f) * (sy_ / sw_ - py_);                       \
      xout[3 * (i) + 2] = pz_ + (f) * (sz_ / sw_ - pz_);                       \
    } else {                                                                   \
      xout[3 * (i)] = px_; xout[3 * (i) + 1] = py_; xout[3 * (i) + 2] = pz_;   \
    }                                                                          \
  } while (0)

#endif
