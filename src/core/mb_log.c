/* meshbatch: progress and diagnostic output (see mb_log.h). */
#include "mb_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static mb_log_level mb_level = MB_LOG_NORMAL;

void mb_log_set_level(mb_log_level level) { mb_level = level; }
mb_log_level mb_log_get_level(void) { return mb_level; }

static void vline(FILE *f, const char *prefix, const char *fmt, va_list ap) {
  char buf[4096];
  vsnprintf(buf, sizeof buf, fmt, ap);
  fprintf(f, "%s%s\n", prefix, buf);
  fflush(f);
}

void mb_log(mb_log_level level, const char *fmt, ...) {
  if (mb_level < level) return;
  va_list ap;
  va_start(ap, fmt);
  vline(stdout, "", fmt, ap);
  va_end(ap);
}

void mb_log_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vline(stderr, "meshbatch: error: ", fmt, ap);
  va_end(ap);
}

void mb_log_warning(const char *fmt, ...) {
  if (mb_level == MB_LOG_QUIET) return;
  va_list ap;
  va_start(ap, fmt);
  vline(stderr, "meshbatch: warning: ", fmt, ap);
  va_end(ap);
}

const char *mb_plural(long long n, const char *one, const char *many) {
  return n == 1 ? one : many;
}

double mb_wtime(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
