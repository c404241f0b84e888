/* meshbatch: the CUDA devices (core layer): is the backend compiled, how
 * many devices, which one a rank uses. The ops' launchers are declared in
 * cuda/<room>/ (e.g. cuda/smooth/mb_smooth_cuda.h).
 *
 * When meshbatch is built without CUDA, src/mb_cuda_stub.c provides these
 * functions: mb_cuda_device_count() returns 0 and mb_cuda_select_device
 * returns MB_ERR_UNSUPPORTED with a message saying how to enable the backend.
 */
#ifndef MB_CUDA_H
#define MB_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "mb_error.h"

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

/* Make device (an index from mb_cuda_select_device) current for the
 * calling thread: a thread other than the one that selected the device
 * (the per-mesh pipeline's compute thread) calls it before any CUDA work.
 * Not collective. Errors: MB_ERR_UNSUPPORTED (no CUDA), MB_ERR_CUDA. */
mb_error mb_cuda_bind_device(int device);

/* Device-to-device copy bandwidth of the current device, (bytes read +
 * bytes written) / time in GB/s (1e9 bytes), the yardstick of every GPU
 * benchmark: two buffers of max_bytes (halved down to max_bytes / 8 where
 * the device cannot hold two), 2 untimed copies, median of 9 timed ones
 * (CUDA events). Not collective. Errors: MB_ERR_MEMORY, MB_ERR_CUDA,
 * MB_ERR_UNSUPPORTED (no CUDA). */
mb_error mb_cuda_copy_bandwidth(size_t max_bytes, double *gbs);

#ifdef __cplusplus
}
#endif
#endif
