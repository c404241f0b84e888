/* meshbatch: partitioned smoothing with overlapped halo exchange
 * (see mb_smooth_partitioned.h). */
#include "mb_smooth_partitioned.h"

#include <stdlib.h>
#include <string.h>

#include "mb_log.h"

/* One pass: exchange of cur overlapped with the interior update. */
static mb_error pass(const mb_local_domain *d, mb_halo *h, const mb_stage *st, double f,
                     double *cur, double *next, mb_pass_timing *t) {
  double t0 = mb_wtime();
  MB_CALL(mb_halo_begin(h, cur));
  double t1 = mb_wtime();
  mb_smooth_rows_cpu(d->adj, 0, d->ninterior, st->weights, st->boundary, f, cur, next);
  double t2 = mb_wtime();
  MB_CALL(mb_halo_end(h, cur));
  double t3 = mb_wtime();
  mb_smooth_rows_cpu(d->adj, d->ninterior, d->nowned, st->weights, st->boundary, f, cur, next);
  double t4 = mb_wtime();
  t->passes++;
  t->exchange_s += (t1 - t0) + (t3 - t2);
  t->compute_s += (t2 - t1) + (t4 - t3);
  return MB_SUCCESS;
}

mb_error mb_smooth_partitioned_cpu(const mb_local_domain *d, mb_halo *h, const mb_stage *stages,
                                   int nstages, double *x, mb_pass_timing *timing) {
  mb_pass_timing local = {0};
  mb_pass_timing *t = timing ? timing : &local;
  for (int s = 0; s < nstages; s++) MB_CALL(mb_stage_check(&stages[s], d->adj));
  const size_t bytes = sizeof(double) * 3 * (size_t)(d->nowned + d->nghost + 1);
  double *tmp = malloc(bytes);
  MB_CHECK(tmp, MB_ERR_MEMORY, "out of memory for %lld local vertices",
           (long long)(d->nowned + d->nghost));
  double *cur = x, *next = tmp;
  mb_error e = MB_SUCCESS;
  for (int s = 0; s < nstages && !e; s++) {
    const mb_stage *st = &stages[s];
    for (int it = 0; it < st->iterations && !e; it++)
      for (int p = 0; p < (st->op == MB_OP_TAUBIN ? 2 : 1) && !e; p++) {
        e = pass(d, h, st, p == 0 ? st->lambda : st->mu, cur, next, t);
        double *swap = cur;
        cur = next;
        next = swap;
      }
  }
  if (!e && cur != x) memcpy(x, cur, sizeof(double) * 3 * (size_t)d->nowned);
  free(tmp);
  MB_CALL(e);
  return MB_SUCCESS;
}
