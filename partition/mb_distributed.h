/* meshbatch: one mesh distributed over the ranks of a communicator.
 *
 * Ties the pieces of partition/ together: a vertex partition (given, or
 * METIS on rank 0, broadcast), each rank's owned/ghost numbering in a
 * locality order (mb_local.h), the halo plan between the ranks (mb_halo.h),
 * and the local positions. Any job that updates per-vertex values with a
 * 1-ring stencil can run on it: update owned rows, exchange, repeat
 * (docs/architecture.md, "Partitioned runs").
 */
#ifndef MB_DISTRIBUTED_H
#define MB_DISTRIBUTED_H

#include <mpi.h>
#include <stdint.h>

#include "mb_adjacency.h"
#include "mb_error.h"
#include "mb_halo.h"
#include "mb_local.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mb_distributed_mesh {
  MPI_Comm comm;            /* borrowed */
  int rank, size;
  int64_t nv;               /* vertices of the whole mesh */
  int32_t *part;            /* [nv] part (= owning rank) of every vertex (owned) */
  mb_local_domain *domain;  /* this rank's owned and ghost vertices (owned) */
  mb_halo *halo;            /* owner -> ghost exchange of 3 doubles per vertex (owned) */
  double *x;                /* [(nowned + nghost) * 3] local positions (owned) */
} mb_distributed_mesh;

/* Distribute a mesh that every rank holds (global adjacency and positions
 * xyz [nv, 3] on every rank). part [nv] gives the owning rank of every
 * vertex (read on rank 0 only), or NULL for METIS k-way with one part per
 * rank. Collective over comm. Errors (agreed on every rank): MB_ERR_ARG,
 * MB_ERR_MEMORY, MB_ERR_MPI, MB_ERR_UNSUPPORTED (METIS failure). */
mb_error mb_distributed_create(MPI_Comm comm, const mb_adjacency *global, const double *xyz,
                               const int32_t *part, mb_distributed_mesh **dm);

/* Gather the owned positions of every rank into xyz [nv, 3] on rank 0 in
 * global vertex order (other ranks may pass NULL). Collective. Errors: MB_ERR_MPI,
 * MB_ERR_MEMORY. */
mb_error mb_distributed_gather(const mb_distributed_mesh *dm, double *xyz);

/* Free; NULL allowed. Not collective. */
void mb_distributed_free(mb_distributed_mesh *dm);

#ifdef __cplusplus
}
#endif
#endif
