/* meshbatch: the vertex adjacency built on the device (private to the
 * smooth room's .cu files; cuda/smooth/mb_adjacency_cuda.cu).
 *
 * mb_dev_adjacency holds, in int32 device arrays, exactly what
 * mb_adjacency_permute_opts(mb_adjacency_build_opts(mesh, flags), perm,
 * flags) holds on the host in int64 (see src/mb_adjacency.h), in the layout
 * the smoothing kernels read (cuda/smooth/mb_smooth.cu, mb_dev_mesh).
 */
#ifndef MB_ADJACENCY_CUDA_CUH
#define MB_ADJACENCY_CUDA_CUH

#include <stdint.h>

#include "mb_adjacency.h"
#include "mb_cuda_private.cuh"
#include "mb_error.h"
#include "mb_mesh.h"

/* A device adjacency; every buffer frees itself. Arrays a build was not
 * asked for stay empty (null pointers). Shapes:
 *   row [nv + 1], col [nnz]                      int32, always
 *   opp_row [nnz + 1], opp [nopp]                int32, has_opp only
 *   on_boundary [nv] uint8, brow [nv + 1], bcol [nb]   has_bnd only */
struct mb_dev_adjacency {
  int64_t nv = 0, nnz = 0, nopp = 0, nb = 0;
  bool has_opp = false, has_bnd = false;
  mb_dbuf row, col, opp_row, opp, on_boundary, brow, bcol;
};

/* Exchange the allocations of two device buffers (moves a buffer out of
 * one owner into another without a copy). */
static inline void mb_dbuf_swap(mb_dbuf *x, mb_dbuf *y) {
  void *p = x->p;
  size_t n = x->bytes;
  x->p = y->p;
  x->bytes = y->bytes;
  y->p = p;
  y->bytes = n;
}

/* Build on the current device, from the face list of a validated mesh (see
 * mb_mesh_validate; mesh->xyz is not read), the adjacency of the vertices
 * renumbered by perm [nv] (new vertex v is old perm[v]; NULL: the mesh's
 * own order): row/col always, the opposite vertices with MB_ADJ_OPPOSITE in
 * flags on an all-triangle mesh, the boundary arrays with MB_ADJ_BOUNDARY.
 * The arrays equal those of mb_adjacency_permute_opts(
 * mb_adjacency_build_opts(mesh, flags), perm, flags) entry for entry
 * (rows in the new order, each row's neighbours in ascending old index),
 * so smoothing on them is bitwise identical to smoothing on the host
 * build. perm and the mesh are only read; *out (reset first) owns the
 * result. Synchronizes the device. Not collective.
 * Limits: nv < 2^31 and 2 x (sum of face sizes) < 2^31 (int32 indices and
 * CUB's int item counts), else MB_ERR_ARG.
 * Errors: MB_ERR_ARG (limits, perm not a permutation of [0, nv), a face
 * index outside [0, nv), face offsets not increasing), MB_ERR_MEMORY (device
 * memory), MB_ERR_CUDA. Memory: docs/architecture.md, "Device build". */
mb_error mb_dev_adjacency_build(const mb_mesh *mesh, const int64_t *perm, unsigned flags,
                                mb_dev_adjacency *out);

#endif
