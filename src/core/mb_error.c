/* meshbatch: thread-local error message and traceback (see mb_error.h). */
#include "mb_error.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/statvfs.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum { MB_MSG_LEN = 2048, MB_TRACE_LEN = 4096 };

static _Thread_local char mb_msg[MB_MSG_LEN];
static _Thread_local char mb_trace[MB_TRACE_LEN];
static _Thread_local mb_error mb_code;
static _Thread_local int mb_agreed;

const char *mb_error_name(mb_error e) {
  switch (e) {
  case MB_SUCCESS: return "success";
  case MB_ERR_ARG: return "invalid argument";
  case MB_ERR_MEMORY: return "out of memory";
  case MB_ERR_IO: return "I/O error";
  case MB_ERR_FORMAT: return "format error";
  case MB_ERR_JOB: return "job file error";
  case MB_ERR_HDF5: return "HDF5 error";
  case MB_ERR_MPI: return "MPI error";
  case MB_ERR_CUDA: return "CUDA error";
  case MB_ERR_UNSUPPORTED: return "unsupported";
  case MB_ERR_NUMERIC: return "numerical error";
  }
  return "unknown error";
}

static void trace_append(const char *file, int line, const char *func) {
  size_t used = strlen(mb_trace);
  if (used + 1 >= sizeof mb_trace) return;
  const char *base = strrchr(file, '/');
  snprintf(mb_trace + used, sizeof mb_trace - used, "  at %s (%s:%d)\n", func,
           base ? base + 1 : file, line);
}

mb_error mb_error_set(mb_error e, const char *file, int line, const char *func,
                      const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(mb_msg, sizeof mb_msg, fmt, ap);
  va_end(ap);
  mb_trace[0] = '\0';
  mb_code = e;
  mb_agreed = 0;
  trace_append(file, line, func);
  return e;
}

mb_error mb_error_set_mpi(int code, const char *file, int line, const char *func,
                          const char *expr) {
  char text[MPI_MAX_ERROR_STRING + 1] = "";
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS || len <= 0)
    snprintf(text, sizeof text, "unknown MPI error code");
  text[len > 0 && len < (int)sizeof text ? len : (int)sizeof text - 1] = '\0';
  return mb_error_set(MB_ERR_MPI, file, line, func, "MPI call failed at %s:%d: %s: %s (code %d)",
                      file, line, expr, text, code);
}

static int mb_abort_unagreed; /* process-wide, set once after MPI_Init */

void mb_error_mpi_abort_unagreed(int on) { mb_abort_unagreed = on; }

mb_error mb_error_mpi_failed(int code, const char *file, int line, const char *func,
                             const char *expr) {
  const mb_error e = mb_error_set_mpi(code, file, line, func, expr);
  if (!mb_abort_unagreed) return e;
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  fprintf(stderr, "meshbatch: error: [rank %d] %s\n%smeshbatch: the other ranks cannot learn of "
          "this error: aborting the job\n", rank, mb_error_message(), mb_error_traceback());
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  return e;
}

void mb_error_trace(const char *file, int line, const char *func) {
  trace_append(file, line, func);
}

const char *mb_error_message(void) { return mb_msg; }
const char *mb_error_traceback(void) { return mb_trace; }

mb_error mb_error_code(void) { return mb_code; }
int mb_error_agreed(void) { return mb_agreed; }
void mb_error_set_agreed(void) { mb_agreed = 1; }

void mb_error_clear(void) {
  mb_msg[0] = '\0';
  mb_trace[0] = '\0';
  mb_code = MB_SUCCESS;
  mb_agreed = 0;
}

const char *mb_create_reason(const char *path) {
  int made = 1, fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0 && errno == EEXIST) { /* left by the failed create: can it be written? */
    made = 0;
    fd = open(path, O_WRONLY);
  }
  if (fd < 0) return strerror(errno);
  close(fd);
  if (made) unlink(path);
  /* a full disk still takes an empty file (an inode), not the library's
   * first blocks: say so where the folder has almost no room left */
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) *(slash == dir ? slash + 1 : slash) = '\0';
  else snprintf(dir, sizeof dir, ".");
  struct statvfs v;
  if (statvfs(dir, &v) == 0 && (double)v.f_bavail * (double)v.f_frsize < 1e6)
    return "no space left on the disk (or the quota is full)";
  return "the folder takes the file, but the library could not create it (for MPI-IO: a file "
         "system without MPI-IO support, or a launcher problem)";
}
