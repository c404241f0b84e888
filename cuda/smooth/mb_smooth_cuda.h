/* meshbatch: the smooth room's CUDA launchers (cuda/smooth/mb_smooth.cu):
 * per-mesh smoothing, its benchmark, and a rank's piece of a partitioned
 * mesh on the device (mb_cuda_domain). Builds without CUDA link
 * cuda/smooth/mb_smooth_cuda_stub.c, whose functions return
 * MB_ERR_UNSUPPORTED saying how to enable the backend.
 */
#ifndef MB_SMOOTH_CUDA_H
#define MB_SMOOTH_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "mb_adjacency.h"
#include "mb_cuda.h"
#include "mb_error.h"
#include "mb_halo.h"
#include "mb_mesh.h"
#include "mb_nccl.h"
#include "mb_smooth.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Run all stages on the current device. The adjacency is uploaded once,
 * positions xyz [nv, 3] float64 are uploaded once, converted to the working
 * precision, kept on the device across all passes and stages, and copied back
 * once at the end. Not collective.
 * Errors: MB_ERR_CUDA, MB_ERR_MEMORY, MB_ERR_ARG (unsupported rule). */
mb_error mb_cuda_smooth(const mb_adjacency *adj, const mb_smooth_stage *stages, int nstages,
                        mb_precision precision, double *xyz);

/* Run all stages on the current device with the vertex adjacency built on
 * the device from the mesh's face list (cuda/smooth/mb_adjacency_cuda.cu,
 * CUB sorts), in the vertex order perm [nv] (new vertex v is old perm[v];
 * NULL: the mesh's own order): no host adjacency is made. xyz [nv, 3]
 * float64 holds the positions in that order (row v = mesh vertex perm[v];
 * mesh->xyz is not read) and receives the results in place. The adjacency
 * equals mb_adjacency_permute_opts(mb_adjacency_build_opts(mesh, ...),
 * perm, ...) entry for entry, so results are bitwise those of
 * mb_cuda_smooth on that host adjacency. Only the arrays the stages read
 * are built (opposite vertices for cotangent weights, boundary arrays for
 * a rule other than free). seconds [2] (may be NULL) receives the wall
 * times of the device build (upload of faces and order included) and of
 * the rest (positions' upload, passes, download). With no pass to make,
 * xyz is left as it is and nothing is built. The mesh must be validated
 * (mb_mesh_validate). Not collective.
 * Limits: nv < 2^31 and fewer than 2^30 face indices (MB_ERR_ARG).
 * Errors: MB_ERR_ARG (a rule, cotangent weights on polygons, limits, perm
 * not a permutation), MB_ERR_MEMORY (device), MB_ERR_CUDA. */
mb_error mb_cuda_smooth_mesh(const mb_mesh *mesh, const int64_t *perm,
                             const mb_smooth_stage *stages, int nstages, mb_precision precision,
                             double *xyz, double seconds[2]);

/* The adjacency built on the current device from the face list of a
 * validated mesh in the vertex order perm [nv] (NULL: the mesh's own
 * order), downloaded to the host in int64 (for tests and comparisons with
 * the host build): row/col always; opp_row/opp with MB_ADJ_OPPOSITE in
 * flags on an all-triangle mesh (else NULL); on_boundary/brow/bcol with
 * MB_ADJ_BOUNDARY (else NULL). Every array equals, entry for entry, that
 * of mb_adjacency_permute_opts(mb_adjacency_build_opts(mesh, flags), perm,
 * flags), or of mb_adjacency_build_opts(mesh, flags) for perm NULL. perm
 * and the mesh are only read; *adj is owned by the caller
 * (mb_adjacency_free). Not collective.
 * Limits: nv < 2^31 and fewer than 2^30 face indices (MB_ERR_ARG).
 * Errors: MB_ERR_ARG (limits, perm not a permutation of [0, nv), a face
 * index out of range), MB_ERR_MEMORY, MB_ERR_CUDA; MB_ERR_UNSUPPORTED in a
 * build without CUDA. */
mb_error mb_cuda_adjacency_build(const mb_mesh *mesh, const int64_t *perm, unsigned flags,
                                 mb_adjacency **adj);

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

/* ------------------------------------------------------------------------
 * A rank's piece of a partitioned mesh on the device (distribute:
 * partitioned). The owned rows of the local adjacency (see
 * partition/mb_local.h) are updated in row ranges so that the interior can
 * run while the halo exchange is in flight; ghosts are refreshed by the
 * device halo engine's forward exchange (cuda/partition/mb_cuda_halo.h,
 * mb_cuda_halo_begin/end) over the transport the caller names: MPI through
 * pinned host buffers, NCCL or IPC GPU to GPU. All launches go to the
 * domain's own stream, in order.
 */
typedef struct mb_cuda_domain mb_cuda_domain;

/* Upload a piece: adj with nowned rows and columns < nlocal, positions xyz
 * [nlocal, 3] (owned then ghosts), the stages it will run (to upload only
 * the arrays their rules need), and the device halo of the plan (3 values
 * per vertex, partition's mb_cuda_halo; the plan is borrowed and must
 * outlive the domain). Arrays are copied. Not collective.
 * Errors: MB_ERR_ARG, MB_ERR_MEMORY, MB_ERR_CUDA. */
mb_error mb_cuda_domain_create(const mb_adjacency *adj, int64_t nlocal, const double *xyz,
                               mb_precision precision, const mb_smooth_stage *stages, int nstages,
                               const mb_halo *plan, mb_cuda_domain **domain);

/* Begin the forward exchange of the next positions' halo (owned rows ->
 * the neighbours' ghosts, 3 values per vertex in the working precision,
 * staged in float64: exact for float32) along the plan, after the rows
 * enqueued so far (those next to the halo), through the halo engine's
 * mb_cuda_halo_begin with `transport`: MB_HALO_MPI (the pack and the copy
 * to the pinned host buffer are enqueued; the messages go in
 * mb_cuda_domain_halo_end, so the interior's rows run meanwhile),
 * MB_HALO_NCCL with `nccl` (borrowed; from mb_halo_choose_transport or
 * mb_nccl_create), or MB_HALO_IPC (`nccl` unused; the first IPC exchange
 * sets it up, collectively over the plan's communicator, and fails on every
 * rank with MB_ERR_UNSUPPORTED where a neighbour is on another node or two
 * GPUs have no peer access). Every rank of the plan calls it in step; one
 * exchange at a time. Errors: MB_ERR_ARG (an exchange in flight, NCCL
 * without a communicator, MB_HALO_AUTO), MB_ERR_CUDA, MB_ERR_MPI,
 * MB_ERR_MEMORY, MB_ERR_UNSUPPORTED. */
mb_error mb_cuda_domain_halo_begin(mb_cuda_domain *domain, mb_halo_transport transport,
                                   mb_nccl *nccl);

/* End the exchange begun by mb_cuda_domain_halo_begin (its transport):
 * MPI waits for the packed rows, posts and waits for the messages and
 * enqueues the unpack; every transport then orders the domain's stream
 * after the ghosts are filled (no host wait with NCCL or IPC). Every rank
 * of the plan calls it in step. Errors: MB_ERR_ARG (no exchange in flight),
 * MB_ERR_CUDA, MB_ERR_MPI. */
mb_error mb_cuda_domain_halo_end(mb_cuda_domain *domain);

/* Enqueue the update of owned rows [begin, end) from the current positions
 * into the next ones (Taubin 1995, eq. 4-5). Errors: MB_ERR_ARG, MB_ERR_CUDA. */
mb_error mb_cuda_domain_pass(mb_cuda_domain *domain, int64_t begin, int64_t end,
                             mb_weights weights, mb_boundary boundary, double factor);

/* Make the next positions current (after all rows of a pass are enqueued). */
void mb_cuda_domain_swap(mb_cuda_domain *domain);

/* Wait for the domain's stream. Errors: MB_ERR_CUDA. */
mb_error mb_cuda_domain_sync(mb_cuda_domain *domain);

/* Wait, then copy the owned rows of the current positions to xyz [nowned, 3]
 * float64. Errors: MB_ERR_CUDA, MB_ERR_MEMORY. */
mb_error mb_cuda_domain_download(mb_cuda_domain *domain, double *xyz);

/* Free a domain (device and pinned memory); NULL allowed. */
void mb_cuda_domain_free(mb_cuda_domain *domain);

#ifdef __cplusplus
}
#endif
#endif
