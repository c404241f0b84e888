/* meshbatch: the overlapped step loop (see mb_steps.h). */
#include "mb_steps.h"

#include "mb_log.h"

mb_error mb_overlapped_step(const mb_local_domain *d, const mb_step_ops *ops, void *ctx,
                            mb_pass_timing *t) {
  double t0 = mb_wtime();
  MB_CALL(ops->rows(ctx, d->ninterior, d->nowned));
  double t1 = mb_wtime();
  MB_CALL(ops->exchange_begin(ctx));
  double t2 = mb_wtime();
  MB_CALL(ops->rows(ctx, 0, d->ninterior));
  double t3 = mb_wtime();
  MB_CALL(ops->exchange_end(ctx));
  MB_CALL(ops->swap(ctx));
  double t4 = mb_wtime();
  t->passes++;
  t->compute_s += (t1 - t0) + (t3 - t2);
  t->exchange_s += (t2 - t1) + (t4 - t3);
  return MB_SUCCESS;
}
