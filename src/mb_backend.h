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

#include "mb_adjacency.h"
#include "mb_error.h"
#include "mb_job.h"
#include "mb_smooth.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mb_backend {
  mb_backend_kind kind;    /* MB_BACKEND_CPU or MB_BACKEND_CUDA, never AUTO */
  int device;              /* CUDA device index, -1 for the CPU */
  char description[256];   /* "cpu (2 OpenMP threads)", "cuda device 0 (NVIDIA H100)" */
} mb_backend;

/* Resolve a requested backend for this rank. local_rank is the rank within
 * its node (it picks the GPU: local_rank mod device count). For `auto`, the
 * reason for the choice is written to why[why_len]. Not collective.
 * Errors: MB_ERR_UNSUPPORTED (cuda asked for but not compiled or no device). */
mb_error mb_backend_choose(mb_backend_kind requested, int local_rank, mb_backend *backend,
                           char *why, size_t why_len);

/* Run smoothing stages on xyz [nv, 3] (float64, in place) with the backend.
 * precision applies to CUDA arithmetic; the CPU always computes in float64.
 * Not collective. Errors: those of mb_smooth_cpu / mb_cuda_smooth. */
mb_error mb_backend_smooth(const mb_backend *backend, const mb_adjacency *adj,
                           const mb_stage *stages, int nstages, mb_precision precision,
                           double *xyz);

/* The vertex order the CUDA backend works in: reverse Cuthill-McKee
 * (mb_adjacency_rcm), which keeps the neighbours of a vertex close in memory
 * so that the gathers of a pass hit the caches. Returns perm [nv] (new ->
 * old), the permuted adjacency and positions pxyz [nv, 3]; all owned by the
 * caller. Summation order is unchanged (see mb_adjacency_permute). Not
 * collective. Errors: MB_ERR_MEMORY. */
mb_error mb_backend_locality_order(const mb_adjacency *adj, const double *xyz, int64_t **perm,
                                   mb_adjacency **padj, double **pxyz);

#ifdef __cplusplus
}
#endif
#endif
