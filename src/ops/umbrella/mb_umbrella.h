/* meshbatch: the umbrella operator of a mesh's positions, as a per-vertex
 * field (the umbrella room).
 *
 * Method: the umbrella operator, the uniform graph Laplacian of the
 * positions, G. Taubin, "A signal processing approach to fair surface
 * design", SIGGRAPH 1995, section 4 (eq. 8 with weights 1 / |i*|):
 *     U(x_i) = (1 / |i*|) * sum over neighbours j of i of (x_j - x_i),
 * the neighbours j in ascending (global) vertex index, each difference
 * added in that order and the sum divided by the neighbour count, in
 * float64 with no fused multiply-add. Every backend and every split of
 * the mesh over ranks adds the same numbers in the same order, so the
 * field is bitwise the same everywhere. An isolated vertex gets 0.
 * Units: the positions' length unit.
 */
#ifndef MB_UMBRELLA_H
#define MB_UMBRELLA_H

#include <stdint.h>

#include "mb_error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The name of the field the op writes ([nv, 3] float64). */
#define MB_UMBRELLA_FIELD "umbrella"

/* U of rows [0, nrows): row [nrows + 1] and col [row[nrows]] give each
 * row's neighbours (indices into x, ascending global index within a row),
 * x [nx, 3] the positions (nx >= nrows: owned rows first, ghosts after),
 * u [nrows, 3] receives U. Not collective; OpenMP over rows. No errors. */
void mb_umbrella_rows(int64_t nrows, const int64_t *row, const int64_t *col, const double *x,
                      double *u);

/* The same on the current CUDA device (cuda/umbrella/mb_umbrella.cu): the
 * host arrays are uploaded, one thread computes a row with the same
 * operations in the same order, u is copied back. nx: rows of x. Not
 * collective. Errors: MB_ERR_CUDA, MB_ERR_UNSUPPORTED (built without CUDA). */
mb_error mb_umbrella_rows_cuda(int64_t nrows, const int64_t *row, const int64_t *col, int64_t nx,
                               const double *x, double *u);

#ifdef __cplusplus
}
#endif
#endif
