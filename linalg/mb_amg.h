/* meshbatch: smoothed-aggregation algebraic multigrid, a preconditioner
 * for the conjugate gradient of one rank's whole SPD matrix (linalg layer;
 * mb_pcg_opts.amg, mb_solver.h).
 *
 * Method: Vanek, Mandel, Brezina, "Algebraic multigrid by smoothed
 * aggregation for second and fourth order elliptic problems", Computing
 * 56, 1996:
 *   strength   j is strongly connected to i when a_ij != 0 and
 *              |a_ij| >= theta sqrt(a_ii a_jj) (theta 0: every entry
 *              that is not zero);
 *   aggregates greedy, in three passes in row order (so deterministic):
 *              1. a vertex whose strong neighbours are all free starts an
 *              aggregate of itself and them; 2. a free vertex joins the
 *              aggregate of its first strong neighbour (entry order) made
 *              in pass 1; 3. a vertex still free starts an aggregate of
 *              itself and its free strong neighbours. A vertex without a
 *              strong neighbour (an identity row, e.g. a fixed vertex the
 *              flows eliminated) is in no aggregate: the smoother alone
 *              treats it;
 *   P0         piecewise constant (1 in the row of each aggregated vertex,
 *              the column of its aggregate): the constants, the near-
 *              kernel of the Laplacian part of M - dt L;
 *   P          (I - omega D^-1 A) P0, omega = (4/3) / rho, rho the
 *              Gershgorin bound max_i sum_j |a_ij| / a_ii of the spectral
 *              radius of D^-1 A (D = diag(A));
 *   A_c        P^T A P (Galerkin), computed as R (A P) with R = P^T,
 *              each entry summed in a fixed order, then made symmetric
 *              bit for bit (the lower triangle copied from the upper);
 *   levels     until a level has <= max_coarse rows, max_levels levels, or
 *              the coarsening stalls (more than 0.9 of the rows left); the
 *              coarsest level is factored by CHOLMOD (mb_cholesky_*).
 * Cycle (mb_amg_apply): one V-cycle from a zero start, Chebyshev
 * smoothing of degree `degree` on D^-1 A over [rho / 30, rho] before and
 * after the coarse correction (the same polynomial, so the post-smoother
 * is the pre-smoother's adjoint and the V-cycle is a symmetric positive
 * definite operator, valid inside CG); the coarsest level solved exactly.
 *
 * Setup and values: mb_amg_create builds the aggregates and P from A's
 * pattern and values once; mb_amg_update takes new values on the same
 * pattern and recomputes the Galerkin products, the diagonals, the
 * smoothers' bounds and the coarse factor, keeping P (the flows' systems
 * change a little per step). The cycle is made of CSR products
 * (mb_csr_spmv), vector updates and one direct solve, so a GPU port
 * needs SpMV/SpGEMM and a factor only.
 *
 * Determinism: every sum is a row's, in entry order; no float reduction
 * crosses rows or threads; so the same bits for any number of OpenMP
 * threads. Nothing here is collective: one rank's whole matrix
 * (nrows == ncols).
 */
#ifndef MB_AMG_H
#define MB_AMG_H

#include <stdint.h>

#include "mb_csr.h"
#include "mb_error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* At most this many levels, and this many columns per apply. */
#define MB_AMG_MAX_LEVELS 16
#define MB_AMG_MAX_COMP 4

/* Setup options (mb_amg_opts_default gives the defaults). */
typedef struct mb_amg_opts {
  double theta;   /* strength threshold in [0, 1); default 0.08 */
  int max_levels; /* 1..MB_AMG_MAX_LEVELS; default 10 */
  int max_coarse; /* rows of a level that is factored directly; default 2000 */
  int degree;     /* Chebyshev smoother degree 1..4 (1: damped Jacobi); default 2 */
} mb_amg_opts;

/* What a hierarchy is made of. */
typedef struct mb_amg_stats {
  int levels;                       /* 1 (the matrix factored directly) or more */
  int32_t rows[MB_AMG_MAX_LEVELS];  /* rows of each level, finest first */
  int64_t nnz[MB_AMG_MAX_LEVELS];   /* entries of each level's matrix */
  double operator_complexity;       /* sum of the levels' entries / the finest's */
  double setup_ms;                  /* wall time of the last create or update */
} mb_amg_stats;

typedef struct mb_amg mb_amg; /* opaque */

/* The defaults above. Not collective. */
mb_amg_opts mb_amg_opts_default(void);

/* The options of *o overridden by the environment variable MESHBATCH_AMG,
 * a comma-separated list of key=value with keys theta, max_levels,
 * max_coarse, degree (e.g. "max_coarse=500,degree=3"), for tuning runs,
 * as PETSc's options database does for its preconditioners; unset or
 * empty: *o unchanged. The values are range-checked by mb_amg_create.
 * Not collective. Errors: MB_ERR_ARG (an unknown key or a malformed
 * value, named; *o unchanged). */
mb_error mb_amg_opts_env(mb_amg_opts *o);

/* Build the hierarchy of A (square: one rank's whole matrix, nrows ==
 * ncols >= 1; symmetric, positive diagonal), its pattern and values
 * read, not kept (*amg holds its own copy). opts NULL: the defaults.
 * *amg is owned by the caller (mb_amg_free); NULL on error. Not
 * collective. Cost: a few sparse products of A's size; the coarse
 * factorization. Errors: MB_ERR_ARG (NULL, not square, empty, options
 * out of range), MB_ERR_NUMERIC (a diagonal entry <= 0 or a non-finite
 * value: the row named; the coarse matrix not positive definite),
 * MB_ERR_MEMORY, MB_ERR_UNSUPPORTED (CHOLMOD failed). */
mb_error mb_amg_create(const mb_csr *A, const mb_amg_opts *opts, mb_amg **amg);

/* New values of the matrix the hierarchy was built from (the same pattern:
 * rows, columns and entries): the Galerkin products, diagonals, smoother
 * bounds and the coarse factor are recomputed; the aggregates and P are
 * kept. Not collective. Errors: MB_ERR_ARG (NULL, another pattern),
 * MB_ERR_NUMERIC (as mb_amg_create), MB_ERR_MEMORY. On error the
 * hierarchy is not usable until an update succeeds. */
mb_error mb_amg_update(mb_amg *amg, const mb_csr *A);

/* z = B^-1 r by one V-cycle for ncomp columns (1..MB_AMG_MAX_COMP),
 * r and z [n, ncomp] row-major (n the matrix's rows; z may not alias r).
 * B is symmetric positive definite: a preconditioner for CG. The same
 * bits for any number of OpenMP threads. One apply at a time per
 * hierarchy (its work vectors are inside it). Not collective. Errors:
 * MB_ERR_ARG (NULL, ncomp out of range, not usable after a failed
 * update), MB_ERR_NUMERIC (a non-finite value from the coarse solve). */
mb_error mb_amg_apply(const mb_amg *amg, int ncomp, const double *r, double *z);

/* Rows of the finest level (the matrix's). Not collective. */
int32_t mb_amg_rows(const mb_amg *amg);

/* The hierarchy's levels, rows, entries, operator complexity. Not
 * collective. Errors: MB_ERR_ARG (NULL). */
mb_error mb_amg_get_stats(const mb_amg *amg, mb_amg_stats *stats);

/* One level of a hierarchy, for a port of the cycle to another device
 * (cuda/linalg/mb_amg_cuda.cu): pointers into the hierarchy, valid until
 * it is freed; not to be changed. A [n, n] the level's matrix (on the
 * finest level a copy of the matrix given); towards the next level
 * (NULL on the coarsest) P [n, n_next] the prolongator, R = P^T and AP =
 * A P, whose patterns are those of the numeric products of mb_amg_update;
 * sym [A->nnz] on the coarse levels (NULL on the finest): the position of
 * each entry's transpose, by which the Galerkin product is made symmetric
 * bit for bit. Columns ascend within the rows of P, R, AP and the coarse
 * levels' A. */
typedef struct mb_amg_level_view {
  const mb_csr *A, *P, *R, *AP;
  const int32_t *sym;
} mb_amg_level_view;

/* The number of levels (>= 1) and the options the hierarchy was built
 * with; level l's view (0 <= l < levels). Not collective. Errors of
 * mb_amg_level: MB_ERR_ARG (NULL, l out of range). */
int mb_amg_levels(const mb_amg *amg, mb_amg_opts *opts);
mb_error mb_amg_level(const mb_amg *amg, int l, mb_amg_level_view *view);

/* The smoother's coefficients for a level whose bound of the spectral
 * radius of D^-1 A is rho (> 0): Chebyshev semi-iteration of `degree`
 * steps on [rho / 30, rho] (Saad, "Iterative methods for sparse linear
 * systems", 2nd ed., algorithm 12.1, preconditioned by D): d0 = 1 /
 * theta the first step's factor, c1[k] and c2[k] (1 <= k < degree) the
 * recurrence's d_k = c1[k] d_{k-1} + c2[k] D^-1 r_k. The same for every
 * backend. Not collective. */
void mb_amg_chebyshev(double rho, int degree, double *d0, double c1[4], double c2[4]);

/* Free the hierarchy; NULL allowed. Not collective. */
void mb_amg_free(mb_amg *amg);

#ifdef __cplusplus
}
#endif
#endif
