/* meshbatch: sparse matrices with values, and the mesh operators assembled
 * into them (linalg layer, between partition and the ops).
 *
 * A matrix is CSR with 32-bit indices and float64 values. Its pattern is
 * built once per mesh from the vertex adjacency (mb_adjacency.h): row i
 * holds the diagonal and the edge neighbours of vertex i; the values are
 * assembled into the pattern as often as the op needs (every step of a
 * flow). Within a row, entries follow the neighbours' GLOBAL ids
 * ascending, the diagonal at its own global id's place, so that a row's
 * sum runs in one order on one rank and on N ranks (mb_local.h keeps that
 * order in a rank's local adjacency) and the results agree bit for bit.
 *
 * Operators (Desbrun, Meyer, Schroeder, Barr, "Implicit fairing of
 * irregular meshes using diffusion and curvature flow", SIGGRAPH 1999;
 * Pinkall & Polthier 1993 for the cotangent formula; Meyer, Desbrun,
 * Schroeder, Barr 2003 for the mass matrices):
 *   cotangent Laplacian L:  L_ij = (cot a_ij + cot b_ij) / 2 for an edge ij
 *                           (a, b the angles opposite the edge; one term
 *                           on a boundary edge), L_ii = -sum_j L_ij.
 *                           Negative semi-definite, symmetric, L 1 = 0
 *                           (libigl's cotmatrix convention).
 *   uniform (umbrella) K:   K_ij = 1 for an edge, K_ii = -degree.
 *   lumped mass M:          barycentric: M_ii = sum over the triangles
 *                           around i of area / 3 (libigl's
 *                           MASSMATRIX_TYPE_BARYCENTRIC); sums to the area.
 * Every value is gathered, not scattered: an entry is computed from its
 * edge's opposite vertices and a diagonal from its row, each by one
 * thread, in a fixed order, so the CPU, the GPU and N ranks compute the
 * same bits (no atomics; the GPU writes each entry once at its slot).
 * The arithmetic is written once for C and CUDA in linalg/mb_cotan.h.
 */
#ifndef MB_CSR_H
#define MB_CSR_H

#include <stdint.h>

#include "mb_adjacency.h"
#include "mb_error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A CSR matrix of float64 values (host memory). Rows are a rank's owned
 * vertices (all vertices on one rank); columns are local vertex indices,
 * owned then ghost (ncols >= nrows; = nrows on one rank). */
typedef struct mb_csr {
  int32_t nrows, ncols;
  int32_t nnz;
  int32_t *rowptr; /* [nrows + 1] (owned) */
  int32_t *col;    /* [nnz] local column, in global-id order within a row (owned) */
  int32_t *diag;   /* [nrows] position of row i's diagonal entry in col/val (owned) */
  int32_t *edge;   /* [nnz] for an off-diagonal entry, its directed edge in the
                      adjacency the pattern was built from (adj.col / adj.opp_row
                      index); -1 on the diagonal (owned) */
  double *val;     /* [nnz] values (owned) */
} mb_csr;

/* The pattern of the vertex operators of a mesh: rows [0, nrows) of adj
 * (nrows <= adj->nv; adj->nv on one rank, the owned vertices on a rank of
 * a partitioned mesh), each the diagonal plus adj's neighbours, with
 * ncols columns (every index adj's rows name is < ncols). global [ncols]
 * gives each local vertex's global id (where the diagonal goes in its
 * row), or NULL when local = global (one rank). Values are zeroed. The
 * result is owned by the caller (mb_csr_free). Not collective.
 * Errors: MB_ERR_ARG (more than 2^31 - 1 entries, rows or columns),
 * MB_ERR_MEMORY. Cost: O(nnz). */
mb_error mb_csr_pattern(const mb_adjacency *adj, int64_t nrows, int64_t ncols,
                        const int64_t *global, mb_csr **A);

/* Free a matrix; NULL allowed. */
void mb_csr_free(mb_csr *A);

/* y[nrows, ncomp] = A x[ncols, ncomp] (row-major, ncomp values per row):
 * per row and component s = 0.0, then s += a_ij x_j in entry order, each
 * product rounded then added (never fused). OpenMP over rows. Not
 * collective. */
void mb_csr_spmv(const mb_csr *A, int ncomp, const double *x, double *y);

/* Assemble the cotangent Laplacian of the triangle mesh with positions
 * xyz [ncols, 3] (length unit of the input; values are dimensionless)
 * into A's pattern, built from adj with MB_ADJ_OPPOSITE. A degenerate
 * triangle (zero area) contributes 0 to its edges' cotangents. Order (the
 * GPU's too): an off-diagonal entry of edge k = (i, j) is 0.5 * w, where
 * w = 0.0, then w += MB_COT_AT(i, j, o) for the opposite vertices o of k
 * in adj's order; the diagonal is -(s), s = 0.0, then s += each
 * off-diagonal value of the row in entry order. L_ij and L_ji are the
 * same bits (the cotangent is symmetric in i, j bit for bit). Not
 * collective. Errors: MB_ERR_ARG (adj without opposite vertices, A not of
 * adj's pattern), MB_ERR_NUMERIC (a non-finite value, naming the local
 * row). */
mb_error mb_csr_cotangent_laplacian(const mb_adjacency *adj, const double *xyz, mb_csr *A);

/* Assemble the uniform Laplacian (umbrella operator, unnormalized: K_ij = 1,
 * K_ii = -degree) into A's pattern. Not collective. Errors: none beyond
 * MB_ERR_ARG. */
mb_error mb_csr_uniform_laplacian(const mb_adjacency *adj, mb_csr *A);

/* The lumped barycentric mass of rows [0, nrows) of adj (triangles, with
 * opposite vertices), positions xyz [at least every local vertex adj
 * names, 3]: mass [nrows] = sum over the triangles around each vertex of
 * area / 3 (length unit squared). Order (the GPU's too): for row i,
 * s = 0.0; for each entry k = (i, j) of adj's row in order, for each
 * opposite vertex o of k in order, the triangle is counted from the first
 * of its two edges ij, io in the row (k before o's entry), s +=
 * MB_TRIANGLE_AREA2(i, j, o); then mass_i = s / 6. Not collective.
 * Errors: MB_ERR_ARG, MB_ERR_NUMERIC (non-finite, naming the local row). */
mb_error mb_mass_barycentric(const mb_adjacency *adj, int64_t nrows, const double *xyz,
                             double *mass);

/* Set A's values to alpha D + beta S, S = src (same pattern; src may be
 * A) and D = diag(d), d [nrows]: the system matrices of the flows, e.g.
 * M - dt L with alpha = 1, d = mass, beta = -dt. Off-diagonal entries are
 * beta * s_ij, diagonals alpha * d_i + beta * s_ii (each product rounded,
 * then one addition; the GPU's mb_cuda_csr_combine the same). Not
 * collective. Errors: MB_ERR_ARG (patterns differ, NULL). */
mb_error mb_csr_combine(mb_csr *A, double alpha, const double *d, double beta, const mb_csr *src);

#ifdef __cplusplus
}
#endif
#endif
