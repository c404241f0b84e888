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

#ifdef __cplusplus
}
#endif
#endif
