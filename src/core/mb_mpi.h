/* meshbatch: small MPI helpers shared by the runner and the partition code. */
#ifndef MB_MPI_H
#define MB_MPI_H

#include <mpi.h>

#include "mb_error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Before MPI_Init: where no launcher started this process (none of the
 * variables that mpirun, srun or PMIx set is present), it runs as an MPI
 * singleton, one rank alone. Open MPI then starts a helper daemon and
 * probes its network transports, about 0.45 s of every run on a small
 * machine; for one rank neither is of use. This sets, only where the user
 * has not set them, OMPI_MCA_ess_singleton_isolated=1 (no daemon; such a
 * process cannot MPI_Comm_spawn, which meshbatch never does) and
 * OMPI_MCA_pml=ob1 (shared-memory and self transports), and
 * OMPI_MCA_sharedfp=^sm (MPI-IO's shared-memory file pointers want the
 * daemon's session folder; HDF5 does not use them): 0.05 s. And
 * OMPI_MCA_orte_create_session_dirs=0: isolated singletons share one
 * session folder, which one that finishes removes under one that starts
 * (MPI_Init failed in CI when two ran at once). Other MPI libraries ignore
 * these variables. Not collective; call before MPI_Init. */
void mb_singleton_defaults(void);

/* Agree on an error across ranks. Collective over comm: every rank passes
 * its local result; if any rank failed, every rank returns the error code
 * and message of the lowest failing rank, so all ranks leave the same way.
 * Errors: the agreed error, MB_ERR_MPI. */
mb_error mb_agree(MPI_Comm comm, mb_error local);

/* A barrier that does not spin: an MPI_Ibarrier tested every millisecond,
 * the core left to the ranks that work (for timing one rank alone while
 * the others wait). Collective. Errors: MB_ERR_MPI. */
mb_error mb_idle_barrier(MPI_Comm comm);

/* This rank's index among the ranks of its node (MPI_COMM_TYPE_SHARED),
 * which picks its GPU. Collective over comm. Errors: MB_ERR_MPI. */
mb_error mb_local_rank(MPI_Comm comm, int *local);

/* The same value of an int on every rank: the minimum (all_min) or the
 * maximum over comm, in place. Collective. Errors: MB_ERR_MPI. */
mb_error mb_all_min_int(MPI_Comm comm, int *v);
mb_error mb_all_max_int(MPI_Comm comm, int *v);

#ifdef __cplusplus
}
#endif
#endif
