/* meshbatch: small MPI helpers (see mb_mpi.h). */
#include "mb_mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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
