/* meshbatch: smoothing of one mesh split over ranks (distribute: partitioned).
 *
 * Every pass updates the owned vertices next to the halo first, starts the
 * exchange of the new values the neighbours need, updates the interior
 * owned vertices while messages fly, and finishes the exchange into the
 * ghosts (see partition/mb_halo.h and partition/mb_local.h). The arithmetic is the CPU reference's, in the
 * global neighbour order, so the result is bitwise identical to one rank.
 */
#ifndef MB_SMOOTH_PARTITIONED_H
#define MB_SMOOTH_PARTITIONED_H

#include <mpi.h>

#include "mb_error.h"
#include "mb_distributed.h"
#include "mb_halo.h"
#include "mb_local.h"
#include "mb_smooth.h"

#ifdef __cplusplus
extern "C" {
#endif


/* Run all stages on this rank's piece. x [(nowned + nghost) * 3] holds the
 * local positions, ghosts included (valid on entry); on return all rows are
 * smoothed. Collective over the halo's communicator: every rank of the
 * plan calls it with the same stages. timing may be NULL.
 * Errors: MB_ERR_ARG (rule unsupported for the mesh), MB_ERR_MPI, MB_ERR_MEMORY. */
mb_error mb_smooth_partitioned_cpu(const mb_local_domain *domain, mb_halo *halo,
                                   const mb_smooth_stage *stages, int nstages, double *x,
                                   mb_pass_timing *timing);

/* The same on the current CUDA device (mb_cuda_domain): positions stay on
 * the device in the working precision; per pass, owned values the
 * neighbours need are packed on the device into a pinned host buffer, sent
 * with MPI while the interior kernel runs, and the received ghost values
 * are scattered on the device before the rows next to the halo are
 * updated; or, with the NCCL transport (see mb_halo_transport), packed,
 * exchanged and scattered GPU to GPU on a second stream; with IPC the
 * same, the rows moved by the copy engines between the GPUs of one node.
 * MB_HALO_NCCL fails (MB_ERR_UNSUPPORTED) where NCCL cannot be used,
 * MB_HALO_IPC where a neighbour is on another node or two GPUs have no
 * peer access; MB_HALO_AUTO takes the fastest in trial exchanges of those
 * that can be had (mb_halo_choose_transport). In float64 the result equals the CPU's bit for bit (same
 * per-vertex arithmetic); in float32 ghosts carry the owners' float values
 * exactly. On return the owned rows of x hold the result in float64.
 * Collective over the halo's communicator.
 * Errors: MB_ERR_ARG, MB_ERR_MPI, MB_ERR_CUDA, MB_ERR_MEMORY, MB_ERR_UNSUPPORTED. */
mb_error mb_smooth_partitioned_cuda(const mb_local_domain *domain, mb_halo *halo,
                                    const mb_smooth_stage *stages, int nstages, mb_precision precision,
                                    mb_halo_transport transport, double *x,
                                    mb_pass_timing *timing);

#ifdef __cplusplus
}
#endif
#endif
