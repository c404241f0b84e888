/* meshbatch: the job runner.
 *
 * Per-mesh distribution: the job's dataset sources are assigned to ranks
 * (static: longest-processing-time-first on the estimated cost, the size of
 * the source plus each stage's mb_op_info.cost, the same deterministic
 * assignment on every rank; dynamic: a shared counter in an MPI window hands
 * out datasets in decreasing cost), each rank reads its datasets, runs the
 * stages through the op registry and keeps the results, then all ranks
 * write one output collection together. Partitioned distribution splits
 * every dataset over all ranks and runs the ops' partitioned entries. A
 * dataset that fails (bad input, wrong kind, unsupported rule, device error)
 * is reported and skipped; the others are still written.
 */
#ifndef MB_RUNNER_H
#define MB_RUNNER_H

#include <mpi.h>
#include <stdint.h>

#include "mb_error.h"
#include "mb_job.h"
#include "mb_mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mb_run_summary {
  int64_t nmeshes;     /* mesh sources in the job */
  int64_t nfailed;     /* sources that failed (not written) */
  double wall_s;       /* whole run, including I/O */
  double busy_max_s;   /* max over ranks of time spent on meshes */
  double busy_mean_s;  /* mean over ranks */
  double device_busy;  /* per-mesh runs on the CUDA backend: the seconds the ops kept the
                          devices busy over the seconds the ranks spent on their meshes
                          (summed over ranks); -1 otherwise */
  double device_busy_wall; /* the same device seconds over the whole run's wall (setup and
                              the output's end included) times the ranks; -1 otherwise */
  int stopped;         /* the signal (SIGTERM, SIGINT) that stopped the run before its
                          last mesh finished (no output written; the finished meshes kept
                          in the checkpoint), else 0 */
} mb_run_summary;

/* Run a job. Collective over comm. Prints one progress line per finished
 * mesh and a summary table (rank 0), at the current mb_log level. Returns
 * MB_SUCCESS when the job ran to the end, even if some meshes failed (see
 * summary->nfailed). Errors (the whole job stopped, no output written):
 * MB_ERR_ARG (inputs: glob without match, duplicate names), MB_ERR_UNSUPPORTED
 * (backend cuda unavailable), MB_ERR_IO/MB_ERR_HDF5 (output not writable),
 * MB_ERR_MPI. The error is reported identically on every rank. */
mb_error mb_run_job(MPI_Comm comm, const mb_job *job, mb_run_summary *summary);

/* Import mesh files (OBJ, OFF, PLY, Triangle .node/.ele; globs allowed)
 * into one collection at `output`, with the per-mesh schedule and the
 * collective write of mb_run_job but no stages. kind: MB_KIND_NONE keeps
 * each file's kind as read (Triangle files are triangulation2d, the others
 * surface); another kind converts every dataset (mb_mesh_convert_kind), and
 * a file that cannot be converted is reported and skipped. Collective over
 * comm. Errors: as mb_run_job. */
mb_error mb_run_import(MPI_Comm comm, int ninputs, char **inputs, const char *output,
                       mb_kind kind, mb_run_summary *summary);

/* Static assignment of n items with costs cost[n] to nranks ranks by LPT
 * (largest first to the least-loaded rank; ties to the lower index and
 * rank). owner[n] receives the rank of each item. Not collective. */
void mb_assign_lpt(int64_t n, const double *cost, int nranks, int *owner);

#ifdef __cplusplus
}
#endif
#endif
