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

/* MPI errors are reported, not fatal. MPI's default error handler,
 * MPI_ERRORS_ARE_FATAL, aborts every rank inside the failing call, before
 * MB_CALL_MPI can see its code; with MPI_ERRORS_RETURN the call returns
 * the code, MB_CALL_MPI turns it into MB_ERR_MPI with file, line and
 * MPI_Error_string's text, and the ranks agree on it (mb_agree) and leave
 * with exit code 1.
 *
 * The rule: the meshbatch command sets MPI_ERRORS_RETURN on MPI_COMM_WORLD
 * and MPI_COMM_SELF right after MPI_Init (mb_mpi_errors_return). Every
 * communicator meshbatch makes from them (MPI_Comm_split_type,
 * MPI_Cart_create, the duplicates HDF5 and ParMETIS make) inherits the
 * handler; windows do not (MPI_Win_allocate gives MPI_ERRORS_ARE_FATAL),
 * so meshbatch sets it on each window it makes. MPI-IO files default to
 * MPI_ERRORS_RETURN. Library entry points that take the caller's
 * communicator (mb_run_job, mb_collection_open, ...) use it as it is and
 * do not duplicate it: a program that embeds meshbatch calls
 * mb_mpi_errors_return on that communicator first to have MPI errors
 * reported; otherwise they stay fatal under MPI's default. */

/* Set MPI_ERRORS_RETURN as comm's error handler (see above). Not
 * collective (local to this rank's handle). Errors: MB_ERR_MPI. */
mb_error mb_mpi_errors_return(MPI_Comm comm);

/* Agree on an error across ranks. Collective over comm: every rank passes
 * its local result; if any rank failed, every rank returns the error code
 * and message of the lowest failing rank, so all ranks leave the same way,
 * and mb_error_agreed() says 1. Two MPI_Allreduce rounds, so a rank whose
 * first one failed still tells the others (agreed MB_ERR_MPI). Errors: the
 * agreed error; MB_ERR_MPI not agreed (mb_error_agreed() 0) when the second
 * round fails on this rank: the ranks are then out of step, and under
 * mb_error_mpi_abort_unagreed(1) (the meshbatch command) the job ends there
 * with MPI_Abort, since no later collective can be trusted to match. */
mb_error mb_agree(MPI_Comm comm, mb_error local);

/* A collective MPI call on comm whose failure every rank must learn of
 * before the next collective: the call, then mb_agree over comm (one more
 * MPI_Allreduce), so that a rank whose call failed and the ranks whose
 * call did not leave the same way, not into different collectives (which
 * hangs). For calls off the hot path (setup, reading, writing, summaries);
 * in loops, keep the error and agree once after the loop. Returns the
 * agreed error from the calling function. */
#define MB_CALL_MPI_AGREED(comm, expr)                                         \
  do {                                                                         \
    int mb_mpi_code_ = (expr);                                                 \
    mb_error mb_mpi_e_ = MB_SUCCESS;                                           \
    if (mb_mpi_code_ != MPI_SUCCESS)                                           \
      mb_mpi_e_ = mb_error_set_mpi(mb_mpi_code_, __FILE__, __LINE__, __func__, #expr); \
    MB_CALL(mb_agree((comm), mb_mpi_e_));                                      \
  } while (0)

/* A barrier that does not spin: an MPI_Ibarrier tested every millisecond,
 * the core left to the ranks that work (for timing one rank alone while
 * the others wait). Collective. Errors: MB_ERR_MPI. */
mb_error mb_idle_barrier(MPI_Comm comm);

/* This rank's index among the ranks of its node (MPI_COMM_TYPE_SHARED),
 * which picks its GPU. Collective over comm. Errors: MB_ERR_MPI. */
mb_error mb_local_rank(MPI_Comm comm, int *local);

/* The same value of an int on every rank: the minimum (all_min) or the
 * maximum over comm, in place. Collective. Errors: MB_ERR_MPI, not agreed
 * (the ranks are out of step after it: mb_error_mpi_failed, which ends the
 * job with MPI_Abort under mb_error_mpi_abort_unagreed(1), the meshbatch
 * command). The rule for every MPI call of meshbatch: a failure is agreed
 * by mb_agree on every rank, or ends the job so (docs/architecture.md,
 * "Errors"). */
mb_error mb_all_min_int(MPI_Comm comm, int *v);
mb_error mb_all_max_int(MPI_Comm comm, int *v);

/* ------------------------------------------------ OpenMP threads per rank */

/* Before MPI_Init, in the meshbatch command's main: a passive OpenMP wait
 * policy unless the user chose one. Idle OpenMP threads that spin (the
 * active policy, and GNU libgomp's default of spinning about 0.3 s before
 * sleeping) take the cores of the other ranks on a node with as many ranks
 * as cores or more: a mesh took 2.1-2.6 s with two spinning threads per
 * rank on two loaded cores, 0.41 s with passive waits. The OpenMP runtime
 * reads OMP_WAIT_POLICY once, when it is loaded (libgomp's constructor, run
 * before main), and no OpenMP call changes it; so where OMP_WAIT_POLICY is
 * unset this sets OMP_WAIT_POLICY=passive and MESHBATCH_OMP_WAIT_DEFAULT=1
 * (what mb_threads_choose reports) and replaces the process by the same
 * program with the same arguments (execv of /proc/self/exe; the process id
 * stays, so mpirun and srun see the same rank): the program's start once
 * more, tens of milliseconds. Where the
 * exec fails the run goes on with the runtime's own policy. argv: main's
 * argv, NULL-terminated, not changed. Not collective; call before MPI_Init
 * and before any OpenMP region; returns only where no exec was made. */
void mb_omp_wait_policy_default(char **argv);

/* The OpenMP threads of each rank, as mb_threads_choose set them. */
typedef struct mb_threads {
  int threads;       /* OpenMP threads per rank (omp_get_max_threads after the choice), >= 1 */
  int user_set;      /* 1: OMP_NUM_THREADS was set by the user and kept */
  int node_ranks;    /* ranks on this rank's node (MPI_COMM_TYPE_SHARED) */
  int node_cores;    /* CPUs the ranks of this node may run on: the union of their
                        affinity masks (sched_getaffinity), >= 1 */
  int node_threads;  /* threads summed over the ranks of this node */
  const char *wait_policy; /* "passive (meshbatch's default)", "OMP_WAIT_POLICY=X (yours)"
                              or "the OpenMP runtime's (OMP_WAIT_POLICY unset)": static */
} mb_threads;

/* Choose the OpenMP threads of each rank: where OMP_NUM_THREADS is unset,
 * the node's cores divided by the ranks on the node (rounded down, at least
 * 1, and at most the CPUs of this rank's own affinity mask, where mpirun
 * binds each rank to a core), set with omp_set_num_threads; where it is
 * set, the user's number is kept. The node is the ranks of comm that share
 * memory (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)); its cores are the
 * union of their affinity masks (so a container's or a batch job's CPU set
 * counts, not the host's). t->node_threads > t->node_cores means the node
 * is oversubscribed (mb_threads_warning). Collective over comm. Errors:
 * MB_ERR_MPI (agreed). */
mb_error mb_threads_choose(MPI_Comm comm, mb_threads *t);

/* Describe the choice in one line ("threads: 1 OpenMP thread per rank
 * (the node's 2 cores / 2 ranks), wait policy passive (meshbatch's
 * default)") into buf of len bytes; and where the threads of the node's
 * ranks exceed its cores because of threads (t->node_threads above both
 * t->node_cores and t->node_ranks: more ranks than cores with one thread
 * each is the user's --oversubscribe, not warned of), a warning sentence
 * into warn of wlen bytes (else warn[0] = 0). Not collective; cannot
 * fail. */
void mb_threads_describe(const mb_threads *t, char *buf, size_t len, char *warn, size_t wlen);

#ifdef __cplusplus
}
#endif
#endif
