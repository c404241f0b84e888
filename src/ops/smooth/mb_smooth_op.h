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
 * backend: the CPU reference, or the CUDA backend on the vertex order of
 * mb_smooth_locality_default (mb_smooth_locality_order), results put back
 * in mesh order. precision applies to CUDA arithmetic. Not collective.
 * device_s (may be NULL): the CUDA backend adds the seconds of its device
 * work (upload, passes, download). Errors: those of mb_smooth_cpu /
 * mb_cuda_smooth, MB_ERR_ARG for a bad MESHBATCH_LOCALITY. */
mb_error mb_smooth_backend_run(const mb_backend *backend, const mb_adjacency *adj,
                               const mb_smooth_stage *stages, int nstages,
                               mb_precision precision, double *xyz, double *device_s);

/* The vertex orders the CUDA backend can work in. */
typedef enum mb_locality {
  MB_LOCALITY_SFC = 0,  /* Hilbert curve of the positions (mb_adjacency_sfc): parallel, default */
  MB_LOCALITY_RCM = 1,  /* reverse Cuthill-McKee (mb_adjacency_rcm): serial */
  MB_LOCALITY_NONE = 2  /* the mesh's own order, no renumbered copy */
} mb_locality;

/* "sfc", "rcm", "none" ("?" out of range). */
const char *mb_smooth_locality_name(mb_locality kind);

/* kind from one of those names. Errors: MB_ERR_ARG (another name). */
mb_error mb_smooth_locality_parse(const char *name, mb_locality *kind);

/* The order the CUDA backend uses: MESHBATCH_LOCALITY=sfc|rcm|none from the
 * environment (to compare the kernel under each order), else sfc.
 * Errors: MB_ERR_ARG (another value). */
mb_error mb_smooth_locality_default(mb_locality *kind);

/* The arrays a renumbered adjacency needs for these stages: MB_ADJ_OPPOSITE
 * for cotangent weights, MB_ADJ_BOUNDARY for a rule other than free. */
unsigned mb_smooth_locality_needs(const mb_smooth_stage *stages, int nstages);

/* The vertex order the CUDA backend works in, which keeps the neighbours of
 * a vertex close in memory so that the gathers of a pass hit the caches:
 * perm [nv] (new -> old) by kind, the adjacency renumbered with the arrays
 * in need (mb_adjacency_permute_opts) and the positions pxyz [nv, 3]; all
 * owned by the caller. For MB_LOCALITY_NONE all three are NULL: use adj and
 * xyz as they are. seconds (may be NULL) receives the order's and the
 * renumbering's wall times. Summation order is unchanged whatever the order
 * (see mb_adjacency_permute): results are bitwise identical. Not
 * collective. Errors: MB_ERR_MEMORY, MB_ERR_ARG (a bad kind). */
mb_error mb_smooth_locality_order(const mb_adjacency *adj, const double *xyz, mb_locality kind,
                                  unsigned need, int64_t **perm, mb_adjacency **padj,
                                  double **pxyz, double seconds[2]);

/* Where a per-mesh job on the CUDA backend builds the vertex adjacency:
 * MESHBATCH_ADJACENCY=device (the default: from the face list on the GPU,
 * mb_cuda_smooth_mesh; no host adjacency is made) or host (the host build
 * and its renumbered copy, mb_adjacency_build_opts and
 * mb_smooth_locality_order: the reference, for comparisons). The host
 * build is also used for the rcm order, for meshes past the device
 * builder's int32 limits, and when the device build runs out of device
 * memory. *on_device receives 1 for device, 0 for host. Not collective.
 * Errors: MB_ERR_ARG (another value). */
mb_error mb_smooth_adjacency_default(int *on_device);

/* `meshbatch bench smooth` (mb_smooth_bench.c); argv[0] = "smooth". */
int mb_smooth_bench(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif
