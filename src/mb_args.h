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
