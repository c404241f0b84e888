/* meshbatch: the linalg layer on the GPU (the .cu files of cuda/linalg; builds without
 * CUDA link cuda/linalg/mb_linalg_cuda_stub.c, whose functions return
 * MB_ERR_UNSUPPORTED).
 *
 * The device copy of a pattern (mb_csr.h) and of the adjacency it was built
 * from; operators assembled on the device by the arithmetic of
 * linalg/mb_cotan.h, each entry written once at its slot (no atomics, no
 * sorting of triplets), so the values are the CPU's bits; Jacobi-
 * preconditioned CG in float64 warm-started from the current positions, its
 * dot products by partition/mb_reduce (exact); and sparse Cholesky by
 * cuSOLVER's low-level csrchol on the matrix permuted by METIS_NodeND
 * (analysis once per pattern, factor per matrix, solve per column).
 * csrchol and the cuSOLVER "Sp" APIs are deprecated in favour of cuDSS; a
 * cuDSS method would replace mb_cuda_cholesky behind the same calls
 * (docs/architecture.md).
 *
 * Products A x (mb_cuda_csr_spmv and every PCG iteration), two kinds:
 *   MB_CUDA_PRODUCT_CUSPARSE  cusparseSpMV (one column) or cusparseSpMM (the
 *                             columns together, row-major dense operands);
 *                             the library's summation order, which is its
 *                             own and may change between versions, so its
 *                             bits are not those of the CPU nor of N ranks.
 *                             On one rank where mb_cuda_csr_set_product asks
 *                             for it. Slower on the flows' matrices: three
 *                             row-major columns on igea at 1 M vertices
 *                             took 0.46 ms against the row kernel's 0.094 ms
 *                             (H100, docs/benchmarks.md).
 *   MB_CUDA_PRODUCT_ROWS      meshbatch's row kernel (the default): one
 *                             thread per row, y_i = sum_k val[k] x[col[k]]
 *                             in entry order (global-id order, mb_csr.h),
 *                             one rounded product and one rounded add per
 *                             entry, never fused: the bits of mb_csr_spmv
 *                             on the CPU and the same on 1 and N ranks.
 *                             Always used where a halo is given
 *                             (partitioned runs).
 *
 * The entry points are not collective except mb_cuda_pcg_solve. Device
 * arrays are on the device current at mb_cuda_csr_create; work goes to the
 * default stream and every call returns after its work is done.
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

/* Upload A's pattern (rowptr, col, diag, edge; values zeroed on the
 * device) and, per off-diagonal entry, the opposite vertices of its edge in
 * adj (adj->opp_row/opp, in adj's face order; what the assembly gathers
 * from) to the current device. adj is the adjacency A was built from (with
 * MB_ADJ_OPPOSITE; rows [0, A->nrows) are read); NULL uploads the pattern
 * only (no cotangent assembly then: mb_cuda_cotangent_laplacian returns
 * MB_ERR_ARG). A and adj are borrowed for the call only; *dA is owned by
 * the caller (mb_cuda_csr_free). Memory on the device: 4 (nrows + 1) + 16
 * nnz + 4 nrows bytes of pattern, 4 (nnz + 1) + 4 (opposites) of adjacency.
 * Errors: MB_ERR_ARG (NULL arguments, adj without opposite vertices, a
 * pattern that does not match adj, more than 2^31 - 1 opposites),
 * MB_ERR_MEMORY, MB_ERR_CUDA. */
mb_error mb_cuda_csr_create(const mb_csr *A, const mb_adjacency *adj, mb_cuda_csr **dA);
void mb_cuda_csr_free(mb_cuda_csr *dA);

/* Rows (owned vertices), columns (owned then ghost) and entries of dA. */
void mb_cuda_csr_shape(const mb_cuda_csr *dA, int32_t *nrows, int32_t *ncols, int32_t *nnz);

/* dA's device arrays (any output may be NULL): rowptr [nrows + 1], col
 * [nnz], diag [nrows] (int32) and val [nnz] (float64), owned by dA, for an
 * op's own kernels on the same pattern (e.g. the flows' elimination of
 * fixed vertices). Not collective; cannot fail. */
void mb_cuda_csr_arrays(mb_cuda_csr *dA, const int32_t **rowptr, const int32_t **col,
                        const int32_t **diag, double **val);

/* Copy dA's values to the host array val [nnz] (float64, in A's entry
 * order): tests, and ops that keep a host copy. Errors: MB_ERR_CUDA. */
mb_error mb_cuda_csr_download(const mb_cuda_csr *dA, double *val);

/* Copy the host values val [nnz] into dA (e.g. a matrix assembled on the
 * CPU). Errors: MB_ERR_CUDA. */
mb_error mb_cuda_csr_upload(mb_cuda_csr *dA, const double *val);

/* The product mb_cuda_csr_spmv and mb_cuda_pcg_solve use on one rank (see
 * above); with a halo the row kernel is always used. Default ROWS. */
typedef enum mb_cuda_product {
  MB_CUDA_PRODUCT_CUSPARSE = 0,
  MB_CUDA_PRODUCT_ROWS = 1
} mb_cuda_product;
void mb_cuda_csr_set_product(mb_cuda_csr *dA, mb_cuda_product p);

/* The GPU halo transport of mb_cuda_pcg_solve's forward exchanges
 * (MB_HALO_MPI by default; MB_HALO_NCCL with the communicator nccl,
 * borrowed, from mb_halo_choose_transport). Not collective. */
void mb_cuda_csr_set_halo_transport(mb_cuda_csr *dA, mb_halo_transport t, mb_nccl *nccl);

/* Assemble on the device, from device positions xyz [ncols, 3] float64
 * (owned then ghost vertices, length unit of the input):
 *   the cotangent Laplacian into dA's values (dimensionless): per
 *     off-diagonal entry (i, j), w = 0.0, w += MB_COT_AT(x, i, j, o) for
 *     the opposite vertices o of edge (i, j) in the adjacency's order,
 *     L_ij = 0.5 w; per row, s = 0.0, s += L_ij over the row's off-diagonal
 *     entries in entry order, L_ii = -s;
 *   and (mass non-NULL, device array [nrows]) the barycentric lumped mass
 *     (length unit squared): per row i, s = 0.0, and for each off-diagonal
 *     entry (i, j) in entry order and each opposite vertex o of its edge in
 *     order, where j's entry comes before o's (each triangle once, from the
 *     first of its two edges in the row), s += MB_TRIANGLE_AREA2(x, i, j, o);
 *     mass_i = s / 6.
 * One thread per entry (Laplacian) and per row (diagonal, mass): the
 * operations and order of mb_csr_cotangent_laplacian and
 * mb_mass_barycentric (linalg/mb_csr.h), so the same bits, on 1 and N
 * ranks (tests/gpu/test_gpu_linalg.c, test_gpu_linalg_mpi.c check both).
 * Errors: MB_ERR_ARG (dA created without adjacency), MB_ERR_NUMERIC (a row
 * whose own or neighbours' positions are not finite, or whose mass is not:
 * the first such local row named), MB_ERR_CUDA. */
mb_error mb_cuda_cotangent_laplacian(mb_cuda_csr *dA, const double *xyz, double *mass);

/* Set dA's values to alpha D + beta L where L is the matrix `src` (same
 * pattern; may be dA) and D the diagonal matrix of d [nrows] (device):
 * the system matrices of the flows, e.g. M - dt L (alpha 1, d the mass,
 * beta -dt). Off-diagonal entries beta * L_ij; diagonal entries
 * alpha * d_i + beta * L_ii (two rounded products, one rounded add).
 * Errors: MB_ERR_ARG (patterns of different sizes), MB_ERR_CUDA. */
mb_error mb_cuda_csr_combine(mb_cuda_csr *dA, double alpha, const double *d, double beta,
                             const mb_cuda_csr *src);

/* y [nrows, ncomp] = A x [ncols, ncomp] (device arrays, row-major, 1 <= ncomp
 * <= 4; x's ghost rows must be current), by dA's product (see above; the row
 * kernel where rows is 1, whatever dA's setting; 2: the row kernel without
 * its shared-memory staging, the same bits). Errors: MB_ERR_ARG,
 * MB_ERR_CUDA (cuSPARSE's status named). */
mb_error mb_cuda_csr_spmv(mb_cuda_csr *dA, int rows, int ncomp, const double *x, double *y);

/* For benchmarks: time `repeats` products y = A x of ncomp columns (1 to
 * 4; x and y device scratch made here, x filled with ones) by the row
 * kernel (rows 1; each block's entries staged in shared memory, the
 * matrix read with evict-first loads), the row kernel without that
 * staging (rows 2; the same bits), staged with ordinary loads (rows 3;
 * the same bits) or dA's product (rows 0), after one untimed product; *ms
 * the median ms per product (CUDA events), *bytes the product's byte
 * model: values 8 nnz + columns 4 nnz + row pointers 4 (nrows + 1) + x
 * read once 8 ncomp ncols + y written 8 ncomp nrows. Not collective.
 * Errors: MB_ERR_ARG, MB_ERR_MEMORY, MB_ERR_CUDA, MB_ERR_UNSUPPORTED. */
mb_error mb_cuda_csr_time_spmv(mb_cuda_csr *dA, int rows, int ncomp, int repeats, double *ms,
                               double *bytes);

/* Device PCG of mb_pcg_solve: the same contract (B [nrows, ncomp] and X
 * [ncols, ncomp] device arrays, row-major, 1 <= ncomp <= 4) and the same
 * method, step for step (linalg/mb_solver.h: Jacobi z = r * dinv, dinv_i =
 * 1 / a_ii; the columns advanced together, each with its own alpha and
 * beta and iteration count; two reductions an iteration, p.q, then r.r and
 * r.z, each one MPI_Allreduce of exact accumulators; a column stops when
 * sqrt(r.r) <= rtol ||b||, its residual b - A x is then recomputed and CG
 * restarts from it where it is above; b = 0 gives x = 0). Every vector
 * update is per row and unfused and every dot product exact, so with the
 * row kernel the iterates are the bits of the CPU's mb_pcg_solve, on 1 and
 * N ranks; with cuSPARSE's product they agree to rounding. halo: each
 * product's input (X at the start and at each check, the search
 * directions) gets its ghost rows by a forward exchange through
 * mb_cuda_halo_begin/end with dA's transport; X's ghost rows hold their
 * owners' solution on exit. stats: method PCG, iterations (the most of any
 * column), rtol, residual (the largest recomputed relative residual, also
 * on failure), solve_ms (the whole call; analyze_ms and factor_ms 0).
 * Collective over comm (the halo's communicator when halo is non-NULL).
 * Errors: MB_ERR_ARG (ncomp, NULL, rtol not positive and finite, max_iter
 * < 0, ghost columns without a halo), MB_ERR_NUMERIC (a column did not
 * reach rtol in max_iter iterations: the message gives the residual
 * reached and the limit; a diagonal entry <= 0 or a curvature p'Ap <= 0: A
 * not SPD; a non-finite value in A, B, X or during the iteration; every
 * rank returns the same error), MB_ERR_CUDA, MB_ERR_MPI, MB_ERR_MEMORY. */
mb_error mb_cuda_pcg_solve(MPI_Comm comm, mb_halo *halo, mb_cuda_csr *dA, int ncomp,
                           const double *B, double *X, const mb_pcg_opts *opts,
                           mb_solve_stats *stats);

/* Device smoothed-aggregation AMG (linalg/mb_amg.h's method and cycle,
 * cuda/linalg/mb_amg_cuda.cu), the preconditioner of mb_cuda_pcg_solve
 * with opts->cuda_amg. One rank's whole matrix. Not collective. */
typedef struct mb_cuda_amg mb_cuda_amg; /* opaque */

/* Upload the hierarchy amg (built on the host by mb_amg_create from the
 * values of the matrix dA holds, or any matrix of dA's pattern) for the
 * device matrix dA (square, the pattern amg was built from). dA's arrays
 * are borrowed (the finest level is dA): dA must outlive *out and keep its
 * pattern. amg is read, not kept (free it after). Call mb_cuda_amg_update
 * before the first apply. *out owned by the caller (mb_cuda_amg_free).
 * Errors: MB_ERR_ARG (NULL, another shape), MB_ERR_MEMORY, MB_ERR_CUDA. */
mb_error mb_cuda_amg_create(const mb_amg *amg, mb_cuda_csr *dA, mb_cuda_amg **out);

/* New values of dA (the same matrix object as at creation): the Galerkin
 * products on their fixed patterns (the host's bits), D^-1 and the
 * smoothers' Chebyshev bounds of every level (one small download), and
 * the coarsest level's dense inverse (cuSOLVER potrf + potri). Waits for
 * the device once. Errors: MB_ERR_ARG (another matrix), MB_ERR_NUMERIC (a
 * level's diagonal <= 0 or non-finite, the row and level named; the
 * coarsest matrix not positive definite), MB_ERR_CUDA. Until an update
 * succeeds the hierarchy is not usable. */
mb_error mb_cuda_amg_update(mb_cuda_amg *g, const mb_cuda_csr *dA);

/* z = B^-1 r by one V-cycle (the host's mb_amg_apply: Chebyshev smoothing
 * before and after the coarse correction, the coarsest level by its dense
 * inverse) for 1 <= ncomp <= MB_AMG_MAX_COMP columns; r and z device
 * arrays [n, ncomp] row-major, not aliased. Enqueued on the default
 * stream as a CUDA graph (captured at the first apply after an update for
 * these r, z and ncomp; the graphs of the last two such triples are kept,
 * others recaptured), no host
 * synchronisation; one apply at a time per hierarchy. Not collective.
 * Errors: MB_ERR_ARG (NULL, ncomp, not usable), MB_ERR_CUDA. */
mb_error mb_cuda_amg_apply(const mb_cuda_amg *g, int ncomp, const double *r, double *z);

/* Rows of the finest level; the wall time (ms) of the last update. */
int32_t mb_cuda_amg_rows(const mb_cuda_amg *g);
double mb_cuda_amg_update_ms(const mb_cuda_amg *g);
void mb_cuda_amg_free(mb_cuda_amg *g);

/* Device sparse Cholesky: cuSOLVER's low-level csrchol (cusolverSpXcsrchol-
 * Analysis, cusolverSpDcsrcholBufferInfo, cusolverSpDcsrcholFactor,
 * cusolverSpDcsrcholZeroPivot, cusolverSpDcsrcholSolve) on P A P^T, P the
 * METIS_NodeND nested-dissection order of A's graph (Karypis & Kumar, SIAM
 * J. Sci. Comput. 20(1), 1998); csrchol does no ordering of its own. One
 * rank's whole matrix (nrows = ncols). Not cusolverSpDcsrlsvchol, which
 * analyses again at every call. Not collective. */
typedef struct mb_cuda_cholesky mb_cuda_cholesky; /* opaque */

/* Order (METIS_NodeND, host) and analyse (csrchol, device) A's pattern;
 * its values are not read. A is borrowed for the call; *chol is owned by
 * the caller (mb_cuda_cholesky_free). The analysis time is reported as
 * analyze_ms by the first mb_cuda_cholesky_factor. Errors: MB_ERR_ARG (A
 * not square: a partitioned pattern), MB_ERR_MEMORY, MB_ERR_UNSUPPORTED
 * (METIS failed), MB_ERR_CUDA (a cuSOLVER call failed: the call named). */
mb_error mb_cuda_cholesky_create(const mb_csr *A, mb_cuda_cholesky **chol);

/* Factor the matrix of dA (values on the device; the pattern A of
 * mb_cuda_cholesky_create): gather its values into the permuted pattern,
 * factor, check for a zero pivot. stats (may be NULL): method CHOLESKY,
 * iterations 0, analyze_ms (the analysis, on the first factor only),
 * factor_ms; residual and solve_ms are set by the solve. dA is borrowed
 * until the next factor (the solve's residual reads it). Errors: MB_ERR_ARG
 * (a different pattern), MB_ERR_NUMERIC (a zero or non-positive pivot, or a
 * non-finite value: A not SPD; the row named, in A's numbering),
 * MB_ERR_CUDA. */
mb_error mb_cuda_cholesky_factor(mb_cuda_cholesky *chol, const mb_cuda_csr *dA,
                                 mb_solve_stats *stats);

/* Solve A X = B for ncomp >= 1 columns (device arrays [n, ncomp] row-major;
 * X may be B), one csrchol solve per column on the permuted vectors; then
 * stats->residual = max over columns of ||b - A x||_2 / ||b||_2 (exact
 * norms, the row kernel on the factored matrix) and stats->solve_ms.
 * Errors: MB_ERR_ARG (not factored, ncomp < 1), MB_ERR_NUMERIC (a
 * non-finite solution: A not SPD), MB_ERR_CUDA. */
mb_error mb_cuda_cholesky_solve(mb_cuda_cholesky *chol, int ncomp, const double *B, double *X,
                                mb_solve_stats *stats);
void mb_cuda_cholesky_free(mb_cuda_cholesky *chol);

#ifdef __cplusplus
}
#endif
#endif
