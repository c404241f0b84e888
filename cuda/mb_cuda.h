/* meshbatch: the CUDA backend's C interface (launchers in the cuda/ folder).
 *
 * When meshbatch is built without CUDA, src/mb_cuda_stub.c provides these
 * functions: mb_cuda_device_count() returns 0 and the others return
 * MB_ERR_UNSUPPORTED with a message saying how to enable the backend.
 */
#ifndef MB_CUDA_H
#define MB_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "mb_adjacency.h"
#include "mb_error.h"
#include "mb_smooth.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 if this build contains the CUDA backend, else 0. */
int mb_cuda_compiled(void);

/* Number of usable CUDA devices (0 when no driver or no device). If why is
 * not NULL, a reason is written there when the count is 0. Not collective. */
int mb_cuda_device_count(char *why, size_t why_len);

/* Make device (local_rank mod count) current for this thread and write its
 * name to name[name_len]. Not collective.
 * Errors: MB_ERR_UNSUPPORTED (no device), MB_ERR_CUDA. */
mb_error mb_cuda_select_device(int local_rank, int *device, char *name, size_t name_len);

/* Run all stages on the current device. The adjacency is uploaded once,
 * positions xyz [nv, 3] float64 are uploaded once, converted to the working
 * precision, kept on the device across all passes and stages, and copied back
 * once at the end. Not collective.
 * Errors: MB_ERR_CUDA, MB_ERR_MEMORY, MB_ERR_ARG (unsupported rule). */
mb_error mb_cuda_smooth(const mb_adjacency *adj, const mb_stage *stages, int nstages,
                        mb_precision precision, double *xyz);

/* Figures printed by `meshbatch bench smooth` for the CUDA backend. */
typedef struct mb_cuda_bench_result {
  char device[256];
  double ms_per_pass;        /* median over repeats */
  double bytes_per_pass;     /* under the documented byte model */
  double copy_gbs;           /* device-to-device copy bandwidth, (read+write) / time */
} mb_cuda_bench_result;

/* Time single smoothing passes of one rule on the current device: `warmup`
 * untimed passes, then `repeats` timed passes (CUDA events); report the
 * median and the copy bandwidth measured in the same call. Not collective.
 * Errors: MB_ERR_CUDA, MB_ERR_MEMORY, MB_ERR_ARG. */
mb_error mb_cuda_bench_smooth(const mb_adjacency *adj, const double *xyz, mb_weights weights,
                              mb_boundary boundary, mb_precision precision, int warmup,
                              int repeats, mb_cuda_bench_result *result);

#ifdef __cplusplus
}
#endif
#endif
