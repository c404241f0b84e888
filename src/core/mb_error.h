/* meshbatch: error codes and the MB_CALL / MB_CHECK propagation macros.
 *
 * Every fallible function returns an mb_error. The first failure records a
 * message (with file, line and function) in a thread-local buffer; each
 * MB_CALL that passes the error upward appends one traceback line, in the
 * manner of PETSc's PetscCall. mb_error_message() returns the whole text.
 */
#ifndef MB_ERROR_H
#define MB_ERROR_H

#include <stdarg.h>

#include "mb_alloc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mb_error {
  MB_SUCCESS = 0,
  MB_ERR_ARG,         /* invalid argument (programming error or bad option) */
  MB_ERR_MEMORY,      /* allocation failed */
  MB_ERR_IO,          /* file missing, unreadable or unwritable */
  MB_ERR_FORMAT,      /* malformed input data (mesh file, collection, ...) */
  MB_ERR_JOB,         /* job file invalid */
  MB_ERR_HDF5,        /* an HDF5 call failed */
  MB_ERR_MPI,         /* an MPI call failed */
  MB_ERR_CUDA,        /* a CUDA call failed */
  MB_ERR_UNSUPPORTED, /* feature not compiled in or not available here */
  MB_ERR_NUMERIC      /* NaN/Inf or other numerical breakdown */
} mb_error;

/* Short name of an error code ("format error", ...). Not collective. */
const char *mb_error_name(mb_error e);

/* Record a new error: clears any earlier message, then stores
 * "MESSAGE" and a first traceback line "  at func (file:line)".
 * Not collective; thread-local. Returns e, so it can be returned directly. */
mb_error mb_error_set(mb_error e, const char *file, int line, const char *func,
                      const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* Append one traceback line for an error passing through func. Not collective. */
void mb_error_trace(const char *file, int line, const char *func);

/* The message of the last recorded error (without traceback), or "" if none. */
const char *mb_error_message(void);

/* The traceback lines of the last recorded error, or "". */
const char *mb_error_traceback(void);

/* Why the file path cannot be created, for a message after a library
 * (HDF5, MPI-IO) failed to create it: the system's reason for a plain
 * open(2) (strerror text), or, where that works (the probe file is then
 * removed again), "no space left on the disk ..." where the folder has
 * under 1 MB free (a full disk takes an empty file but not the library's
 * first blocks), else a sentence saying that the folder takes files but the
 * library refused. Not collective; the text is static or strerror's. */
const char *mb_create_reason(const char *path);

/* The code of the last recorded error (MB_SUCCESS if none). Not collective. */
mb_error mb_error_code(void);

/* Whether the last recorded error was agreed across the ranks (mb_agree
 * returned it), so that every rank leaves the same way; 0 for an error
 * one rank met alone. mb_error_set clears it. Not collective. */
int mb_error_agreed(void);

/* Note that the last recorded error is agreed (called by mb_agree). */
void mb_error_set_agreed(void);

/* Forget the recorded error. Not collective. */
void mb_error_clear(void);

/* Return err with a formatted message if cond is false. */
#define MB_CHECK(cond, err, ...)                                               \
  do {                                                                         \
    if (!(cond))                                                               \
      return mb_error_set((err), __FILE__, __LINE__, __func__, __VA_ARGS__);   \
  } while (0)

/* Return an error immediately with a formatted message. */
#define MB_FAIL(err, ...) return mb_error_set((err), __FILE__, __LINE__, __func__, __VA_ARGS__)

/* Call a function returning mb_error; on failure add a traceback line and return it. */
#define MB_CALL(expr)                                                          \
  do {                                                                         \
    mb_error mb_call_err_ = (expr);                                            \
    if (mb_call_err_ != MB_SUCCESS) {                                          \
      mb_error_trace(__FILE__, __LINE__, __func__);                            \
      return mb_call_err_;                                                     \
    }                                                                          \
  } while (0)

/* Like MB_CALL, but jumps to a cleanup label after storing the error in `ierr`. */
#define MB_CALL_GOTO(ierr, label, expr)                                        \
  do {                                                                         \
    (ierr) = (expr);                                                           \
    if ((ierr) != MB_SUCCESS) {                                                \
      mb_error_trace(__FILE__, __LINE__, __func__);                            \
      goto label;                                                              \
    }                                                                          \
  } while (0)

/* Allocate n elements of *ptr's type (zeroed); MB_ERR_MEMORY on failure. */
#define MB_CALLOC(ptr, n)                                                      \
  do {                                                                         \
    size_t mb_n_ = (size_t)(n);                                                \
    (ptr) = mb_zalloc(mb_n_ ? mb_n_ : 1, sizeof(*(ptr)));                      \
    if (!(ptr))                                                                \
      return mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,         \
                          "out of memory allocating %zu elements", mb_n_);     \
  } while (0)

/* Record an MPI error: MB_ERR_MPI with the message "MPI call failed at
 * FILE:LINE: EXPR: TEXT (code N)", TEXT being MPI_Error_string's for code
 * (or "unknown MPI error code" where MPI cannot say). What MB_CALL_MPI
 * calls; the checks only run where the communicator's error handler is
 * MPI_ERRORS_RETURN (see mb_mpi.h). Not collective. Returns MB_ERR_MPI. */
mb_error mb_error_set_mpi(int code, const char *file, int line, const char *func,
                          const char *expr);

/* An MPI call failed and no agreement follows (MB_CALL_MPI): records the
 * error as mb_error_set_mpi does; where mb_error_mpi_abort_unagreed(1) was
 * called (the meshbatch command does), the other ranks may wait in a
 * collective this rank will not enter, so it prints the message
 * ("meshbatch: error: [rank R] MPI call failed at FILE:LINE: ...") and
 * ends the job with MPI_Abort(MPI_COMM_WORLD, 1) rather than hang. Not
 * collective. Returns MB_ERR_MPI (when it returns). */
mb_error mb_error_mpi_failed(int code, const char *file, int line, const char *func,
                             const char *expr);

/* Whether mb_error_mpi_failed ends the job (on != 0) or returns the error
 * (0, the default, for programs that embed meshbatch). Not collective;
 * process-wide; set once after MPI_Init. */
void mb_error_mpi_abort_unagreed(int on);

/* MPI call wrapper: converts a non-MPI_SUCCESS code into MB_ERR_MPI with
 * file, line, the call and MPI's error text (mb_error_mpi_failed: it ends
 * the job where the command asked so). For a collective whose failure the
 * other ranks must learn of, MB_CALL_MPI_AGREED (mb_mpi.h). */
#define MB_CALL_MPI(expr)                                                      \
  do {                                                                         \
    int mb_mpi_err_ = (expr);                                                  \
    if (mb_mpi_err_ != 0 /* MPI_SUCCESS */)                                    \
      return mb_error_mpi_failed(mb_mpi_err_, __FILE__, __LINE__, __func__, #expr); \
  } while (0)

/* Like MB_CHECK and MB_CALL_MPI, but store the error in `ierr` and jump to
 * a cleanup label. */
#define MB_CHECK_GOTO(ierr, label, cond, err, ...)                             \
  do {                                                                         \
    if (!(cond)) {                                                             \
      (ierr) = mb_error_set((err), __FILE__, __LINE__, __func__, __VA_ARGS__); \
      goto label;                                                              \
    }                                                                          \
  } while (0)

#define MB_CALL_MPI_GOTO(ierr, label, expr)                                    \
  do {                                                                         \
    int mb_mpi_err_ = (expr);                                                  \
    if (mb_mpi_err_ != 0 /* MPI_SUCCESS */) {                                  \
      (ierr) = mb_error_mpi_failed(mb_mpi_err_, __FILE__, __LINE__, __func__, #expr); \
      goto label;                                                              \
    }                                                                          \
  } while (0)

/* HDF5 call wrapper: a negative return value becomes MB_ERR_HDF5. */
#define MB_CALL_H5(expr)                                                       \
  do {                                                                         \
    if ((long long)(expr) < 0)                                                 \
      return mb_error_set(MB_ERR_HDF5, __FILE__, __LINE__, __func__,           \
                          "HDF5 call failed: %s", #expr);                      \
  } while (0)

#ifdef __cplusplus
}
#endif
#endif
