/* meshbatch: helpers shared by the commands and benchmarks (see mb_args.h). */
#include "mb_args.h"

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mb_error.h"
#include "mb_log.h"

int mb_cli_rank(void) {
  int init = 0, rank = 0;
  if (MPI_Initialized(&init) != MPI_SUCCESS || !init) return 0;
  if (MPI_Comm_rank(MPI_COMM_WORLD, &rank) != MPI_SUCCESS) return 0;
  return rank;
}

int mb_cli_usage_error(const char *cmd, const char *fmt, ...) {
  if (mb_cli_rank() == 0) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "meshbatch %s: %s\nTry 'meshbatch %s --help'.\n", cmd, buf, cmd);
  }
  return MB_EXIT_USAGE;
}

int mb_cli_report(int code) {
  if (mb_cli_rank() == 0) {
    mb_log_error("%s", mb_error_message());
    if (mb_log_get_level() >= MB_LOG_VERBOSE) fprintf(stderr, "%s", mb_error_traceback());
  }
  return code;
}

int mb_cli_same_file(const char *a, const char *b) {
  struct stat sa, sb;
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int mb_cli_report_run(int error) {
  return mb_cli_report(error == MB_ERR_ARG ? MB_EXIT_USAGE : MB_EXIT_FAILED);
}

int mb_cli_parse_int64(const char *s, int64_t *out) {
  char *end;
  long long v = strtoll(s, &end, 10);
  if (!*s || *end) return -1;
  *out = v;
  return 0;
}

int mb_cli_parse_double(const char *s, double *out) {
  char *end;
  double v = strtod(s, &end);
  if (!*s || *end || v != v) return -1;
  *out = v;
  return 0;
}

int mb_cli_log_option(const char *arg) {
  if (!strcmp(arg, "--quiet") || !strcmp(arg, "-q")) {
    mb_log_set_level(MB_LOG_QUIET);
    return 1;
  }
  if (!strcmp(arg, "--verbose") || !strcmp(arg, "-v")) {
    mb_log_set_level(MB_LOG_VERBOSE);
    return 1;
  }
  return 0;
}

int mb_cli_parse_shape(const char *s, int64_t n[3]) {
  long long a, b, c;
  char extra;
  if (sscanf(s, "%lld,%lld,%lld%c", &a, &b, &c, &extra) != 3 || a < 1 || b < 1 || c < 1) return 1;
  n[0] = a;
  n[1] = b;
  n[2] = c;
  return 0;
}
