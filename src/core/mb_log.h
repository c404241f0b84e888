/* meshbatch: progress and diagnostic output.
 *
 * Three levels: quiet (errors only), normal (progress lines and summaries),
 * verbose (also details such as backend choice and timings of phases).
 * Messages go to stdout (progress) or stderr (errors and warnings), flushed
 * line by line so that output of several MPI ranks interleaves by line.
 */
#ifndef MB_LOG_H
#define MB_LOG_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mb_log_level { MB_LOG_QUIET = 0, MB_LOG_NORMAL = 1, MB_LOG_VERBOSE = 2 } mb_log_level;

/* Set/get the process-wide level (default MB_LOG_NORMAL). Not collective. */
void mb_log_set_level(mb_log_level level);
mb_log_level mb_log_get_level(void);

/* Print a line to stdout when the level is at least `level`. */
void mb_log(mb_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Print "meshbatch: error: ..." to stderr (always). */
void mb_log_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Print "meshbatch: warning: ..." to stderr unless quiet. */
void mb_log_warning(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* The noun to print after a count: `one` where n is 1, else `many`
 * ("%lld %s", n, mb_plural(n, "mesh", "meshes"): "1 mesh", "0 meshes",
 * "2 meshes"). Not collective. */
const char *mb_plural(long long n, const char *one, const char *many);

/* Monotonic wall clock in seconds. */
double mb_wtime(void);

#ifdef __cplusplus
}
#endif
#endif
