/* meshbatch: the linalg layer on the GPU (cuda/linalg/*.cu; builds without
 * CUDA link cuda/linalg/mb_linalg_cuda_stub.c, whose functions return
 * MB_ERR_UNSUPPORTED).
 *
 * The device copy of a pattern (mb_csr.h) and of the adjacency it was built
 * from; operators assembled on the device by the arithmetic of
 * linalg/mb_cotan.h, each entry written once at its slot (no atomics, no
 * sorting of triplets), so the values are the CPU's bits; products by
 * cusparseSpMV / cusparseSpMM (three columns together), or by meshbatch's
 * own row kernel where a partitioned run must give one rank's bits;
 * Jacobi-preconditioned CG in float64 warm-started from the current
 * positions, its dot products by partition/mb_reduce (exact); and sparse
 * Cholesky by cuSOLVER's low-level csrchol on the matrix permuted by
 * METIS_NodeND (analysis once per pattern, factor per matrix, solve per
 * column). csrchol and the cuSPARSE/cuSOLVER "Sp" APIs are deprecated in
 * favour of cuDSS; a cuDSS method would replace mb_cuda_cholesky behind the
 * same calls (docs/architecture.md).
 */
#ifndef MB_LINALG_CUDA_H
#define MB_LINALG_CUDA_H

#include <stdint.h>

#include "mb_csr.h"
#include "mb_error.h"
#include "mb_halo.h"
#include "mb_solver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A pattern and its values on the device, with the adjacency arrays its
 * assembly reads. Not collective. */
typedef struct mb_cuda_csr mb_cuda_csr; /* opaque */

/* Upload A's pattern (values zeroed on the device) and adj's neighbour and
 * opposite-vertex arrays (for assembly) to the current device. A and adj
 * are borrowed for the call only. Errors: MB_ERR_CUDA, MB_ERR_MEMORY. */
mb_error mb_cuda_csr_create(const mb_csr *A, const mb_adjacency *adj, mb_cuda_csr **dA);
void mb_cuda_csr_free(mb_cuda_csr *dA);

/* Assemble on the device, from device positions xyz [ncols, 3] float64:
 * the cotangent Laplacian into dA's values, and (mass non-NULL) the
 * barycentric lumped mass [nrows] into device memory `mass`. Same bits as
 * mb_csr_cotangent_laplacian / mb_mass_barycentric. Errors: MB_ERR_CUDA. */
mb_error mb_cuda_cotangent_laplacian(mb_cuda_csr *dA, const double *xyz, double *mass);

/* Set dA's values to alpha D + beta L where L is the matrix `src` (same
 * pattern; may be dA) and D the diagonal matrix of d [nrows] (device):
 * the system matrices of the flows, e.g. M - dt L. Errors: MB_ERR_CUDA. */
mb_error mb_cuda_csr_combine(mb_cuda_csr *dA, double alpha, const double *d, double beta,
                             const mb_cuda_csr *src);

/* Device PCG of mb_pcg_solve (same contract; B and X device arrays).
 * Collective over comm. */
mb_error mb_cuda_pcg_solve(MPI_Comm comm, mb_halo *halo, mb_cuda_csr *dA, int ncomp,
                           const double *B, double *X, const mb_pcg_opts *opts,
                           mb_solve_stats *stats);

/* Device sparse Cholesky (cuSOLVER csrchol with a METIS_NodeND order). */
typedef struct mb_cuda_cholesky mb_cuda_cholesky; /* opaque */
mb_error mb_cuda_cholesky_create(const mb_csr *A, mb_cuda_cholesky **chol);
mb_error mb_cuda_cholesky_factor(mb_cuda_cholesky *chol, const mb_cuda_csr *dA,
                                 mb_solve_stats *stats);
mb_error mb_cuda_cholesky_solve(mb_cuda_cholesky *chol, int ncomp, const double *B, double *X,
                                mb_solve_stats *stats);
void mb_cuda_cholesky_free(mb_cuda_cholesky *chol);

#ifdef __cplusplus
}
#endif
#endif
