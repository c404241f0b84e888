/* meshbatch command line: shared declarations of the subcommands.
 *
 * Every subcommand is `int mb_cmd_NAME(int argc, char **argv)`, called after
 * MPI_Init with argv[0] = the subcommand name; it returns the process exit
 * code: 0 success, 1 some work failed (reported), 2 usage or job-file error.
 */
#ifndef MB_CLI_H
#define MB_CLI_H

#include <stdint.h>

enum { MB_EXIT_OK = 0, MB_EXIT_FAILED = 1, MB_EXIT_USAGE = 2 };

int mb_cmd_run(int argc, char **argv);
int mb_cmd_import(int argc, char **argv);
int mb_cmd_export(int argc, char **argv);
int mb_cmd_info(int argc, char **argv);
int mb_cmd_generate(int argc, char **argv);
int mb_cmd_bench(int argc, char **argv);
int mb_cmd_partition(int argc, char **argv);
int mb_cmd_compare(int argc, char **argv);

struct mb_partfile;
/* Print a partition's sizes and quality to stdout. */
void mb_cli_print_partition(const struct mb_partfile *part);

/* MPI rank in MPI_COMM_WORLD (0 when MPI is not initialised). */
int mb_cli_rank(void);

/* Print a usage error on rank 0 with a hint to --help; returns MB_EXIT_USAGE. */
int mb_cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Report the recorded mb_error on stderr (message, traceback when verbose)
 * and return `code`. */
int mb_cli_report(int code);

/* Parse a whole decimal integer / finite double; 0 on success, -1 otherwise. */
int mb_cli_parse_int64(const char *s, int64_t *out);
int mb_cli_parse_double(const char *s, double *out);

/* Handle the shared options --quiet, -q, --verbose, -v at argv[*i]: returns 1
 * if consumed (and sets the log level), else 0. */
int mb_cli_log_option(const char *arg);

#endif
