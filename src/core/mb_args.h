/* meshbatch: small helpers shared by the commands and the ops' benchmarks
 * (exit codes, usage errors, number parsing, the log options).
 *
 * A command or benchmark is `int f(int argc, char **argv)`, called after
 * MPI_Init with argv[0] = its name; it returns the process exit code:
 * 0 success, 1 some work failed (reported), 2 usage or job-file error.
 */
#ifndef MB_ARGS_H
#define MB_ARGS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { MB_EXIT_OK = 0, MB_EXIT_FAILED = 1, MB_EXIT_USAGE = 2 };

/* MPI rank in MPI_COMM_WORLD (0 when MPI is not initialised). Not collective. */
int mb_cli_rank(void);

/* Print a usage error on rank 0 with a hint to `meshbatch CMD --help`;
 * returns MB_EXIT_USAGE. Not collective. */
int mb_cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Report the recorded mb_error on stderr of rank 0 (message, traceback when
 * verbose) and return `code`. Not collective. */
int mb_cli_report(int code);

/* 1 if paths a and b name the same existing file (same device and inode,
 * however spelled: links, ./, ..), else 0. Not collective. */
int mb_cli_same_file(const char *a, const char *b);

/* The exit code of a failed run of the runner (mb_run_job, mb_run_import):
 * MB_EXIT_USAGE for an invalid argument (an output that is an input or a
 * folder, a name too long, another job's checkpoint), MB_EXIT_FAILED for
 * the rest. Reports the recorded error like mb_cli_report. */
int mb_cli_report_run(int error);

/* Parse a whole decimal integer / finite double; 0 on success, -1 otherwise. */
int mb_cli_parse_int64(const char *s, int64_t *out);
int mb_cli_parse_double(const char *s, double *out);
/* "NZ,NY,NX" (each >= 1) into n[3]; 0 on success, 1 otherwise. */
int mb_cli_parse_shape(const char *s, int64_t n[3]);

/* Handle the shared options --quiet, -q, --verbose, -v: returns 1 if arg
 * was one of them (and sets the log level), else 0. */
int mb_cli_log_option(const char *arg);

#ifdef __cplusplus
}
#endif
#endif
