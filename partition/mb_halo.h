/* meshbatch: halo plans, in the spirit of PETSc's star forest (PetscSF).
 *
 * A rank's local vertices are its owned vertices [0, nowned) followed by its
 * ghosts [nowned, nowned + nghost). Every ghost is a leaf pointing to its
 * root, the owned copy on another rank. mb_halo_create learns, from each
 * ghost's global id and owner rank, which owned values every rank must send
 * to whom; an exchange (a broadcast, root -> leaf) then copies owner values
 * into the ghosts. The plan knows nothing about meshes or smoothing: any job
 * that keeps per-vertex values (ncomp doubles) with ghosts can use it.
 *
 * An exchange is split in two so work can overlap the messages:
 *   mb_halo_begin(h, x)   pack owned values, post receives and sends
 *   ...update vertices that need no ghost value...
 *   mb_halo_end(h, x)     wait, unpack into the ghosts
 * Messages are staged through host buffers (the MPI need not be CUDA-aware).
 */
#ifndef MB_HALO_H
#define MB_HALO_H

#include <mpi.h>
#include <stdint.h>

#include "mb_error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How the halo travels between GPUs: MPI through pinned host buffers, NCCL
 * device to device, or auto: NCCL where it can be set up (one GPU per rank)
 * and a trial of exchanges at the start finds it faster on the slowest rank. */
typedef enum mb_halo_transport {
  MB_HALO_AUTO = 0,
  MB_HALO_MPI = 1,
  MB_HALO_NCCL = 2
} mb_halo_transport;

const char *mb_halo_transport_name(mb_halo_transport t);

typedef struct mb_halo mb_halo; /* opaque */

/* Build a plan. Collective over comm.
 *   owned_global [nowned]  global ids of the owned vertices, local order
 *   ghost_global [nghost]  global ids of the ghosts, local order
 *   ghost_owner  [nghost]  rank that owns each ghost (!= this rank)
 *   ncomp                  values per vertex exchanged (3 for positions)
 * Arrays are borrowed (copied where kept). Errors: MB_ERR_ARG (a ghost's
 * global id is not owned by the rank named), MB_ERR_MPI, MB_ERR_MEMORY. */
mb_error mb_halo_create(MPI_Comm comm, int64_t nowned, const int64_t *owned_global,
                        int64_t nghost, const int64_t *ghost_global, const int *ghost_owner,
                        int ncomp, mb_halo **halo);

/* Start an exchange of x [(nowned + nghost) * ncomp]: owned values are read
 * now; ghost values must not be read until mb_halo_end. Not collective in the
 * MPI sense, but every rank of the plan must call begin/end in step.
 * Errors: MB_ERR_MPI. */
mb_error mb_halo_begin(mb_halo *halo, const double *x);

/* Finish the exchange: ghosts of x hold their owners' values. Errors: MB_ERR_MPI. */
mb_error mb_halo_end(mb_halo *halo, double *x);

/* The same exchange on buffers the caller packs and unpacks (for instance
 * pinned buffers filled by GPU kernels): sendbuf [nsend * ncomp] holds the
 * values of the owned rows mb_halo_send_indices lists, in that order;
 * recvbuf [nrecv * ncomp] receives the values of the ghost rows
 * mb_halo_recv_indices lists. Both stay in use until mb_halo_end_packed.
 * Errors: MB_ERR_MPI. */
mb_error mb_halo_begin_packed(mb_halo *halo, const double *sendbuf, double *recvbuf);
mb_error mb_halo_end_packed(mb_halo *halo);

/* Local rows this rank packs (owned) and fills (ghosts), in buffer order;
 * the arrays belong to the plan. */
void mb_halo_send_indices(const mb_halo *halo, int64_t *n, const int64_t **idx);
void mb_halo_recv_indices(const mb_halo *halo, int64_t *n, const int64_t **idx);

/* The neighbours of this rank and, for each, its rows of the packed
 * buffers: neighbour k = ranks[k] gets send rows [send_offset[k],
 * send_offset[k+1]) and fills recv rows [recv_offset[k], recv_offset[k+1])
 * (rows of ncomp values, in the order of mb_halo_send/recv_indices). For
 * transports other than MPI (NCCL). Arrays belong to the plan. Not collective. */
void mb_halo_neighbors(const mb_halo *halo, int *nneighbors, const int **ranks,
                       const int64_t **send_offset, const int64_t **recv_offset);

/* The communicator of the plan (borrowed). */
MPI_Comm mb_halo_comm(const mb_halo *halo);

/* Halo statistics of this rank: neighbour ranks, values sent and received
 * per exchange (vertices, not bytes). */
void mb_halo_stats(const mb_halo *halo, int *nneighbors, int64_t *nsend, int64_t *nrecv);

/* Free the plan; NULL allowed. Not collective. */
void mb_halo_free(mb_halo *halo);

#ifdef __cplusplus
}
#endif
#endif
