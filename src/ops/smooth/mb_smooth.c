/* meshbatch: the CPU reference backend for Laplacian and Taubin smoothing
 * (see mb_smooth.h for the method and its sources).
 *
 * The arithmetic of one vertex update is written once, in
 * mb_smooth_vertex.h, and shared with the CUDA kernels, so both backends
 * perform the same operations in the same order.
 */
#include "mb_smooth.h"

#include <stdlib.h>
#include <string.h>

#include "mb_smooth_vertex.h"

mb_error mb_smooth_check(const mb_smooth_stage *s, const mb_adjacency *adj) {
  MB_CHECK(s->iterations >= 0, MB_ERR_ARG, "iterations must be >= 0 (got %d)", s->iterations);
  MB_CHECK(s->weights != MB_WEIGHTS_COTANGENT || adj->opp, MB_ERR_ARG,
           "cotangent weights need a triangle mesh; this mesh has polygons "
           "(use uniform or inverse_distance weights)");
  return MB_SUCCESS;
}

void mb_smooth_pass_cpu(const mb_adjacency *adj, mb_weights weights, mb_boundary boundary,
                        double factor, const double *xin, double *xout) {
  mb_smooth_rows_cpu(adj, 0, adj->nv, weights, boundary, factor, xin, xout);
}

void mb_smooth_rows_cpu(const mb_adjacency *adj, int64_t begin, int64_t end, mb_weights weights,
                        mb_boundary boundary, double factor, const double *xin, double *xout) {
#pragma omp parallel for schedule(static)
  for (int64_t i = begin; i < end; i++)
    MB_SMOOTH_VERTEX(double, i, adj->row, adj->col, adj->opp_row, adj->opp, adj->on_boundary,
                     adj->brow, adj->bcol, weights, boundary, factor, xin, xout);
}

mb_error mb_smooth_cpu(const mb_adjacency *adj, const mb_smooth_stage *stages, int nstages,
                       double *xyz) {
  for (int s = 0; s < nstages; s++) MB_CALL(mb_smooth_check(&stages[s], adj));
  const size_t bytes = sizeof(double) * 3 * (size_t)(adj->nv ? adj->nv : 1);
  double *tmp = mb_alloc(bytes);
  MB_CHECK(tmp, MB_ERR_MEMORY, "out of memory for %lld vertices", (long long)adj->nv);
  double *cur = xyz, *next = tmp;
  for (int s = 0; s < nstages; s++) {
    const mb_smooth_stage *st = &stages[s];
    for (int it = 0; it < st->iterations; it++) {
      if (mb_op_should_stop(st->ctx, it, st->iterations)) {
        free(tmp);
        return mb_op_stopped(st->ctx);
      }
      int npass = st->method == MB_SMOOTH_TAUBIN ? 2 : 1;
      for (int p = 0; p < npass; p++) {
        double f = p == 0 ? st->lambda : st->mu;
        mb_smooth_pass_cpu(adj, st->weights, st->boundary, f, cur, next);
        double *t = cur;
        cur = next;
        next = t;
      }
    }
  }
  if (cur != xyz) memcpy(xyz, cur, bytes);
  free(tmp);
  return MB_SUCCESS;
}
