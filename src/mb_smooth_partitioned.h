/* meshbatch: smoothing of one mesh split over ranks (distribute: partitioned).
 *
 * Every pass starts the halo exchange of the current positions, updates the
 * interior owned vertices while messages fly, finishes the exchange, then
 * updates the owned vertices next to the halo (see partition/mb_halo.h and
 * partition/mb_local.h). The arithmetic is the CPU reference's, in the
 * global neighbour order, so the result is bitwise identical to one rank.
 */
#ifndef MB_SMOOTH_PARTITIONED_H
#define MB_SMOOTH_PARTITIONED_H

#include <mpi.h>

#include "mb_error.h"
#include "mb_halo.h"
#include "mb_local.h"
#include "mb_smooth.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Time spent per part of the passes on this rank, seconds. */
typedef struct mb_pass_timing {
  int64_t passes;
  double compute_s;    /* interior + halo-adjacent updates */
  double exchange_s;   /* packing, posting and waiting (not hidden by the interior work) */
} mb_pass_timing;

/* Run all stages on this rank's piece. x [(nowned + nghost) * 3] holds the
 * local positions (ghosts may be stale on entry); on return the owned rows
 * are smoothed. Collective over the halo's communicator: every rank of the
 * plan calls it with the same stages. timing may be NULL.
 * Errors: MB_ERR_ARG (rule unsupported for the mesh), MB_ERR_MPI, MB_ERR_MEMORY. */
mb_error mb_smooth_partitioned_cpu(const mb_local_domain *domain, mb_halo *halo,
                                   const mb_stage *stages, int nstages, double *x,
                                   mb_pass_timing *timing);

#ifdef __cplusplus
}
#endif
#endif
