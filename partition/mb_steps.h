/* meshbatch: the overlapped step loop of partitioned ops.
 *
 * One step of an explicit update on a rank's piece (mb_local.h): the rows
 * next to the halo are updated first, so the owned values the neighbours
 * need are final early; the exchange of those values into the ghosts of the
 * next state then runs while the interior rows are updated; the exchange is
 * finished and the next state becomes current. The loop knows nothing of the
 * op: the op supplies four operations on its own context (CPU arrays, a
 * device domain, any number of values per vertex), as AMReX's FillBoundary
 * and PETSc's VecScatterBegin/End split an exchange around local work.
 */
#ifndef MB_STEPS_H
#define MB_STEPS_H

#include <stdint.h>

#include "mb_distributed.h"
#include "mb_error.h"
#include "mb_local.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mb_step_ops {
  /* Compute the next state of local rows [begin, end) (owned rows). */
  mb_error (*rows)(void *ctx, int64_t begin, int64_t end);
  /* Start sending the next state's owned values to the ranks that ghost them. */
  mb_error (*exchange_begin)(void *ctx);
  /* Wait until the next state's ghosts hold their owners' values. */
  mb_error (*exchange_end)(void *ctx);
  /* Make the next state current. */
  mb_error (*swap)(void *ctx);
} mb_step_ops;

/* One overlapped step on domain d: rows [ninterior, nowned), begin the
 * exchange, rows [0, ninterior), end the exchange, swap. The current
 * state's ghosts must be valid on entry; they are on return. Adds one step
 * and its compute / exchange seconds to *timing. Every rank of the op's
 * halo calls it in step (the exchange is collective in that sense).
 * Errors: those of the op's operations. */
mb_error mb_overlapped_step(const mb_local_domain *d, const mb_step_ops *ops, void *ctx,
                            mb_pass_timing *timing);

#ifdef __cplusplus
}
#endif
#endif
