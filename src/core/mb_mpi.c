/* meshbatch: small MPI helpers (see mb_mpi.h). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "mb_mpi.h"

#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void mb_singleton_defaults(void) {
  static const char *const launched[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK",
                                         "PMI_SIZE", "SLURM_STEP_ID", "MPI_LOCALNRANKS"};
  for (size_t i = 0; i < sizeof launched / sizeof *launched; i++)
    if (getenv(launched[i])) return;
  setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
  setenv("OMPI_MCA_pml", "ob1", 0);
  /* without the daemon there is no session folder for the shared-memory
   * shared file pointers of MPI-IO (unused by HDF5): not the sm component */
  setenv("OMPI_MCA_sharedfp", "^sm", 0);
  /* isolated singletons all use the session folder .../jf.0 of one job
   * family: one that finishes removes it while another starts there
   * (seen in CI: "mkdir /tmp/ompi.HOST.UID/jf.0: No such file or directory",
   * MPI_Init failed); a singleton needs no session folder */
  setenv("OMPI_MCA_orte_create_session_dirs", "0", 0);
}

mb_error mb_mpi_errors_return(MPI_Comm comm) {
  MB_CALL_MPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  return MB_SUCCESS;
}

/* Two rounds of MPI_Allreduce (MINLOC of the failing ranks): a rank whose
 * first round failed tells the others in the second. A rank whose second
 * round failed has no way left to tell them: MB_ERR_MPI, not agreed
 * (mb_error_mpi_failed: the command aborts the job), rather than hide the
 * failure. */
mb_error mb_agree(MPI_Comm comm, mb_error local) {
  enum { NONE = 1 << 30 };
  int rank, in[2], out[2], again[2];
  MB_CALL_MPI(MPI_Comm_rank(comm, &rank));
  in[0] = local ? rank : NONE;
  in[1] = (int)local;
  const int r1 = MPI_Allreduce(in, out, 1, MPI_2INT, MPI_MINLOC, comm);
  if (r1 != MPI_SUCCESS && !local) { /* this rank's own failure, told in round two */
    local = mb_error_set_mpi(r1, __FILE__, __LINE__, __func__, "MPI_Allreduce(agreement, round 1)");
    in[0] = rank;
    in[1] = (int)local;
  }
  const int r2 = MPI_Allreduce(in, again, 1, MPI_2INT, MPI_MINLOC, comm);
  if (r2 != MPI_SUCCESS) /* the others cannot learn of it: not agreed */
    return mb_error_mpi_failed(r2, __FILE__, __LINE__, __func__,
                               "MPI_Allreduce(agreement, round 2)");
  out[0] = again[0];
  out[1] = again[1];
  if (out[0] == NONE) return MB_SUCCESS;
  /* the code and message of the lowest failing rank; every rank calls both
   * broadcasts, and fails (agreed) whatever they return */
  char msg[2048] = "";
  if (rank == out[0]) snprintf(msg, sizeof msg, "%s", mb_error_message());
  int code = local;
  const int b1 = MPI_Bcast(&code, 1, MPI_INT, out[0], comm);
  const int b2 = MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, out[0], comm);
  if (rank != out[0]) {
    if (b1 != MPI_SUCCESS || b2 != MPI_SUCCESS || code == MB_SUCCESS)
      mb_error_set_mpi(b1 != MPI_SUCCESS ? b1 : b2, __FILE__, __LINE__, __func__,
                       "MPI_Bcast(the error of the failing rank)");
    else
      mb_error_set((mb_error)code, __FILE__, __LINE__, __func__, "%s", msg);
  }
  mb_error_set_agreed();
  return rank == out[0] ? local : mb_error_code();
}

mb_error mb_idle_barrier(MPI_Comm comm) {
  MPI_Request req;
  MB_CALL_MPI(MPI_Ibarrier(comm, &req));
  for (;;) {
    int done = 0;
    MB_CALL_MPI(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
    if (done) return MB_SUCCESS;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
}

mb_error mb_local_rank(MPI_Comm comm, int *local) {
  int rank;
  MPI_Comm node;
  MB_CALL_MPI(MPI_Comm_rank(comm, &rank));
  MB_CALL_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  MB_CALL_MPI(MPI_Comm_rank(node, local));
  MB_CALL_MPI(MPI_Comm_free(&node));
  return MB_SUCCESS;
}

mb_error mb_all_min_int(MPI_Comm comm, int *v) {
  MB_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, v, 1, MPI_INT, MPI_MIN, comm));
  return MB_SUCCESS;
}

mb_error mb_all_max_int(MPI_Comm comm, int *v) {
  MB_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, v, 1, MPI_INT, MPI_MAX, comm));
  return MB_SUCCESS;
}

/* ------------------------------------------------ OpenMP threads per rank */

void mb_omp_wait_policy_default(char **argv) {
  const char *v = getenv("OMP_WAIT_POLICY");
  if (v && *v) return; /* the user's, or set before an earlier exec of this one */
  if (setenv("OMP_WAIT_POLICY", "passive", 1) || setenv("MESHBATCH_OMP_WAIT_DEFAULT", "1", 1))
    return;
  execv("/proc/self/exe", argv);
  /* no exec (no /proc): the runtime already read its policy; say so */
  unsetenv("OMP_WAIT_POLICY");
  unsetenv("MESHBATCH_OMP_WAIT_DEFAULT");
}

mb_error mb_threads_choose(MPI_Comm comm, mb_threads *t) {
  memset(t, 0, sizeof *t);
  MPI_Comm node = MPI_COMM_NULL;
  int rank = 0;
  MB_CALL_MPI_AGREED(comm, MPI_Comm_rank(comm, &rank));
  MB_CALL_MPI_AGREED(comm, MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  cpu_set_t mine, all;
  CPU_ZERO(&mine);
  int own = 0;
  if (sched_getaffinity(0, sizeof mine, &mine) == 0) own = CPU_COUNT(&mine);
  if (own < 1) { /* no mask: every online CPU */
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    own = n > 0 ? (int)n : 1;
    for (int c = 0; c < own && c < CPU_SETSIZE; c++) CPU_SET(c, &mine);
  }
  mb_error e = MB_SUCCESS;
  MB_CALL_MPI_GOTO(e, done, MPI_Comm_size(node, &t->node_ranks));
  MB_CALL_MPI_GOTO(e, done, MPI_Allreduce(&mine, &all, (int)sizeof mine, MPI_UNSIGNED_CHAR,
                                          MPI_BOR, node));
  t->node_cores = CPU_COUNT(&all) > 0 ? CPU_COUNT(&all) : 1;
  const char *user = getenv("OMP_NUM_THREADS");
  t->user_set = user && *user;
  if (!t->user_set) {
    int n = t->node_cores / t->node_ranks;
    if (n > own) n = own;
    if (n < 1) n = 1;
    omp_set_num_threads(n);
  }
  t->threads = omp_get_max_threads();
  MB_CALL_MPI_GOTO(e, done, MPI_Allreduce(&t->threads, &t->node_threads, 1, MPI_INT, MPI_SUM, node));
done:
  MPI_Comm_free(&node);
  MB_CALL(mb_agree(comm, e));
  const char *wp = getenv("OMP_WAIT_POLICY");
  static char yours[96];
  if (getenv("MESHBATCH_OMP_WAIT_DEFAULT")) t->wait_policy = "passive (meshbatch's default)";
  else if (wp && *wp) {
    snprintf(yours, sizeof yours, "OMP_WAIT_POLICY=%.40s (yours)", wp);
    t->wait_policy = yours;
  } else {
    t->wait_policy = "the OpenMP runtime's (OMP_WAIT_POLICY unset)";
  }
  return MB_SUCCESS;
}

void mb_threads_describe(const mb_threads *t, char *buf, size_t len, char *warn, size_t wlen) {
  char why[160];
  if (t->user_set)
    snprintf(why, sizeof why, "OMP_NUM_THREADS=%s", getenv("OMP_NUM_THREADS"));
  else
    snprintf(why, sizeof why, "the node's %d core%s / %d rank%s", t->node_cores,
             t->node_cores == 1 ? "" : "s", t->node_ranks, t->node_ranks == 1 ? "" : "s");
  snprintf(buf, len, "threads: %d OpenMP thread%s per rank (%s), wait policy %s", t->threads,
           t->threads == 1 ? "" : "s", why, t->wait_policy ? t->wait_policy : "unknown");
  if (!warn || !wlen) return;
  warn[0] = 0;
  /* more ranks than cores alone is the user's choice (--oversubscribe), one
   * thread each: said in the -v line, not warned of */
  if (t->node_threads > t->node_cores && t->node_threads > t->node_ranks)
    snprintf(warn, wlen,
             "%d rank%s x OpenMP threads = %d threads on a node of %d core%s: oversubscribed, "
             "each thread waits for a core (%s; fewer ranks, or OMP_NUM_THREADS=%d)",
             t->node_ranks, t->node_ranks == 1 ? "" : "s", t->node_threads, t->node_cores,
             t->node_cores == 1 ? "" : "s", why,
             t->node_cores / t->node_ranks > 0 ? t->node_cores / t->node_ranks : 1);
}
