/* meshbatch: the CPU reference backend for Laplacian and Taubin smoothing
 * (see mb_smooth.h for the method and its sources).
 *
 * The arithmetic of one vertex update is written once, in
 * mb_smooth_vertex.h, and shared with the CUDA kernels, so both backends
 * perform the same operations in the same order.
 */
#include "mb_smooth.h"

#include <math.h>
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

mb_error mb_smooth_maxabs(int64_t n, const double *xyz, double *maxabs) {
  double m = 0;
  int64_t bad = -1;
  for (int64_t k = 0; k < 3 * n; k++) {
    const double a = fabs(xyz[k]);
    if (!isfinite(a)) {
      bad = k / 3;
      break;
    }
    if (a > m) m = a;
  }
  MB_CHECK(bad < 0, MB_ERR_NUMERIC,
           "vertex %lld has a non-finite coordinate (%g, %g, %g): smoothing needs finite "
           "positions", (long long)bad, xyz[3 * bad], xyz[3 * bad + 1], xyz[3 * bad + 2]);
  *maxabs = m;
  return MB_SUCCESS;
}

int mb_smooth_scale_exponent(double maxabs) {
  if (!(maxabs > 0) || !isfinite(maxabs)) return 0;
  int e;
  (void)frexp(maxabs, &e);
  return e >= MB_SMOOTH_SCALE_MIN_EXP && e <= MB_SMOOTH_SCALE_MAX_EXP ? 0 : -e;
}

mb_error mb_smooth_scale_rows(int64_t n, double *xyz, int k) {
  if (k == 0) return MB_SUCCESS;
  int64_t bad = -1;
  for (int64_t r = 0; r < 3 * n; r++) {
    xyz[r] = ldexp(xyz[r], k);
    if (bad < 0 && !isfinite(xyz[r])) bad = r / 3;
  }
  MB_CHECK(bad < 0, MB_ERR_NUMERIC,
           "vertex %lld: the smoothed position overflows double precision when scaled back "
           "by 2^%d (the mesh's coordinates are too close to the largest double)",
           (long long)bad, k);
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
