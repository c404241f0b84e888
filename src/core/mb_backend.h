/* meshbatch: the backend table (CPU reference, CUDA).
 *
 * In the manner of libCEED's resource strings, a job asks for a backend by
 * name (auto | cpu | cuda); mb_backend_choose resolves it once per rank and
 * says why. Backends are listed in one table in mb_backend.c; a backend that
 * was not compiled is still listed and says how to enable it.
 */
#ifndef MB_BACKEND_H
#define MB_BACKEND_H

#include <stddef.h>

#include "mb_error.h"
#include "mb_op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* mb_backend (the resolved backend of a rank) is defined in mb_op.h. */

/* Resolve a requested backend for this rank. local_rank is the rank within
 * its node (it picks the GPU: local_rank mod device count). For `auto`, the
 * reason for the choice is written to why[why_len]. Not collective.
 * Errors: MB_ERR_UNSUPPORTED (cuda asked for but not compiled or no device). */
mb_error mb_backend_choose(mb_backend_kind requested, int local_rank, mb_backend *backend,
                           char *why, size_t why_len);

/* A device being chosen on a thread of its own (mb_backend_choose_begin). */
typedef struct mb_backend_init mb_backend_init;

/* Begin resolving a requested backend for this rank; mb_backend_choose_end
 * finishes it. For `cuda` in a build with the CUDA backend, the device's
 * initialisation (the device count, cudaSetDevice and the first runtime
 * call, which create the CUDA context: 0.2-0.3 s on an H100) runs on a
 * thread of its own, so that the caller reads its input meanwhile;
 * *backend is then {MB_BACKEND_CUDA, device -1, "cuda (device being
 * initialised)"} until the end, and *init the handle the end takes. Every
 * other request (cpu, auto, which must know its kind at once), a build
 * without CUDA, MESHBATCH_DEVICE_INIT=sync in the environment, or a thread
 * that cannot start: resolved here as mb_backend_choose does, *init NULL.
 * why[why_len] as for mb_backend_choose (the thread's own reason replaces
 * it at the end). A CUDA call of another thread before the end would
 * wait for the context or make one on device 0: the device's users call
 * the end first. Not collective. Errors: MB_ERR_ARG (NULL backend
 * or init), MB_ERR_MEMORY, and mb_backend_choose's where resolved here; the
 * thread's own errors come from mb_backend_choose_end. */
mb_error mb_backend_choose_begin(mb_backend_kind requested, int local_rank, mb_backend *backend,
                                 char *why, size_t why_len, mb_backend_init **init);

/* Wait for the device's initialisation begun by mb_backend_choose_begin
 * and take its result: *backend the device chosen (as mb_backend_choose
 * fills it), why[why_len] its reason, the device made current for the
 * calling thread as well; init is freed (NULL: nothing to wait for,
 * MB_SUCCESS). *init_s (may be NULL): the seconds the initialisation took
 * on its thread; *wait_s (may be NULL): the seconds this call waited for
 * it (both 0 for NULL init). Call it once per handle, before the first CUDA
 * call of the caller's threads. Not collective. Errors: the thread's, with
 * its message (MB_ERR_UNSUPPORTED: no device or no CUDA; MB_ERR_CUDA:
 * cudaSetDevice or the first runtime call failed); *backend is then left
 * as the begin set it. backend NULL drops the result (a run that failed
 * before it needed the device): waits, frees init, sets no error,
 * MB_SUCCESS. */
mb_error mb_backend_choose_end(mb_backend_init *init, mb_backend *backend, char *why,
                               size_t why_len, double *init_s, double *wait_s);

#ifdef __cplusplus
}
#endif
#endif
