/* meshbatch: the smooth room's entry points (taubin and laplacian ops).
 *
 * The ops are registered in mb_smooth_op.c from one parameter table each;
 * their per-mesh, partitioned and benchmark entries are declared here for
 * the room's own files and tests.
 */
#ifndef MB_SMOOTH_OP_H
#define MB_SMOOTH_OP_H

#include <stdint.h>

#include "mb_adjacency.h"
#include "mb_error.h"
#include "mb_op.h"
#include "mb_smooth.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Run smoothing stages on xyz [nv, 3] (float64, in place) with a resolved
 * backend: the CPU reference, or the CUDA backend on the reverse
 * Cuthill-McKee order (mb_smooth_locality_order), results put back in mesh
 * order. precision applies to CUDA arithmetic. Not collective.
 * Errors: those of mb_smooth_cpu / mb_cuda_smooth. */
mb_error mb_smooth_backend_run(const mb_backend *backend, const mb_adjacency *adj,
                               const mb_smooth_stage *stages, int nstages,
                               mb_precision precision, double *xyz);

/* The vertex order the CUDA backend works in: reverse Cuthill-McKee
 * (mb_adjacency_rcm), which keeps the neighbours of a vertex close in memory
 * so that the gathers of a pass hit the caches. Returns perm [nv] (new ->
 * old), the permuted adjacency and positions pxyz [nv, 3]; all owned by the
 * caller. Summation order is unchanged (see mb_adjacency_permute). Not
 * collective. Errors: MB_ERR_MEMORY. */
mb_error mb_smooth_locality_order(const mb_adjacency *adj, const double *xyz, int64_t **perm,
                                  mb_adjacency **padj, double **pxyz);

/* `meshbatch bench smooth` (mb_smooth_bench.c); argv[0] = "smooth". */
int mb_smooth_bench(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif
