/* meshbatch: sparse symmetric positive definite solves, one interface for
 * every backend (linalg layer). The solver ops (implicit fairing, mean-
 * curvature flow, then Willmore flow and constrained deformation) solve
 *     A X = B,   A [n, n] SPD (mb_csr), X and B [n, 3] (three coordinates
 *                together, row-major)
 * once or more per step, with A's pattern fixed for a mesh and its values
 * new at every step.
 *
 * Methods (mb_solver_method), each with its stopping rule:
 *   MB_SOLVER_CHOLESKY  sparse Cholesky, direct. CPU: CHOLMOD (Chen, Davis,
 *                       Hager, Rajamanickam, ACM TOMS 35(3), 2008): symbolic
 *                       analysis once per pattern (cholmod_analyze, its
 *                       fill-reducing order), numeric factorization per
 *                       matrix, solve per right-hand side. GPU: cuSOLVER's
 *                       low-level csrchol (analysis once per pattern, factor
 *                       per matrix, solve per column), on the matrix permuted
 *                       by METIS_NodeND nested dissection (csrchol does no
 *                       ordering of its own). One rank's whole matrix only.
 *                       Residual not iterated on; reported after the solve.
 *   MB_SOLVER_PCG       conjugate gradient (Hestenes & Stiefel 1952) with the
 *                       Jacobi preconditioner, the three columns advanced
 *                       together (each its own alpha and beta), warm-started
 *                       from X on entry, stopped per column when
 *                       ||b - A x||_2 <= rtol ||b||_2 (recomputed residual
 *                       norm, not the recurrence's, at the end), dot
 *                       products exact (partition/mb_reduce.h), so the
 *                       iterates are the same bits on 1 and N ranks.
 *                       Distributed: rows are a rank's owned vertices, a
 *                       forward halo exchange of the search directions
 *                       before each product.
 *   MB_SOLVER_AMG       the same CG on one rank's whole matrix, preconditioned
 *                       by one V-cycle of smoothed-aggregation AMG (Vanek,
 *                       Mandel, Brezina, Computing 56, 1996; linalg/mb_amg.h)
 *                       instead of Jacobi: the hierarchy set up once per
 *                       pattern, its Galerkin products and coarse factor
 *                       recomputed per matrix; iterations about independent
 *                       of the time step and the mesh size. Same stopping
 *                       rule as PCG. CPU (mb_pcg_solve) and GPU
 *                       (mb_cuda_pcg_solve with mb_cuda_amg_*: the host
 *                       builds the hierarchy, the device updates and
 *                       applies it).
 *   MB_SOLVER_AUTO      the op's rule (written where the op documents it).
 * CUDA versions: cuda/linalg/mb_linalg_cuda.h. A cuDSS back end would be a
 * third method behind this interface.
 */
#ifndef MB_SOLVER_H
#define MB_SOLVER_H

#include <stdint.h>

#include "mb_amg.h"
#include "mb_csr.h"
#include "mb_error.h"
#include "mb_halo.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mb_cuda_amg;

typedef enum mb_solver_method {
  MB_SOLVER_AUTO = 0,
  MB_SOLVER_CHOLESKY = 1,
  MB_SOLVER_PCG = 2,
  MB_SOLVER_AMG = 3
} mb_solver_method;

/* "auto", "cholesky", "pcg", "amg"; NULL for an unknown value. */
const char *mb_solver_method_name(mb_solver_method m);

/* What a solve did, for the provenance and `-v`. */
typedef struct mb_solve_stats {
  mb_solver_method method; /* the one that ran */
  int iterations;          /* PCG: the most of the three columns; Cholesky: 0 */
  double rtol;             /* the tolerance asked (PCG) */
  double residual;         /* max over columns of ||b - A x||_2 / ||b||_2 after the solve */
  double analyze_ms, factor_ms, solve_ms; /* wall time of each phase in this call
                                             (analysis 0 when reused) */
} mb_solve_stats;

/* CPU sparse Cholesky (CHOLMOD). Collective: no (one rank's matrix). */
typedef struct mb_cholesky mb_cholesky; /* opaque */

/* Analyse A's pattern (its values are not read). The factor object keeps
 * the symbolic analysis for later mb_cholesky_factor calls on matrices of
 * the same pattern. Errors: MB_ERR_ARG (A not square), MB_ERR_MEMORY,
 * MB_ERR_UNSUPPORTED (CHOLMOD failed, its status named). */
mb_error mb_cholesky_create(const mb_csr *A, mb_cholesky **chol);
/* Factor A (same pattern as at creation; values new). Errors: MB_ERR_NUMERIC
 * (not positive definite, singular included: the row where it failed; a
 * non-finite value), MB_ERR_ARG (another pattern), MB_ERR_MEMORY. */
mb_error mb_cholesky_factor(mb_cholesky *chol, const mb_csr *A);
/* Solve A X = B for ncomp columns (row-major [n, ncomp]); X may be B.
 * Errors: MB_ERR_ARG (not factored), MB_ERR_NUMERIC (non-finite B),
 * MB_ERR_MEMORY. */
mb_error mb_cholesky_solve(mb_cholesky *chol, int ncomp, const double *B, double *X);
void mb_cholesky_free(mb_cholesky *chol);

/* The relative residuals of A X = B, per column: res [ncomp] =
 * ||b_c - A x_c||_2 / ||b_c||_2 (||b_c - A x_c||_2 where b_c = 0), over
 * all ranks' owned rows, norms exact (mb_reduce), so the same bits on
 * every rank and every rank count. X [ncols, ncomp]: its ghost rows are
 * refreshed first by a forward exchange through halo (NULL on one rank);
 * B [nrows, ncomp]. For the Cholesky path's report (MPI_COMM_SELF, NULL).
 * Collective over comm. Errors: MB_ERR_MPI, MB_ERR_MEMORY, MB_ERR_ARG. */
mb_error mb_residual(MPI_Comm comm, mb_halo *halo, const mb_csr *A, int ncomp, const double *B,
                     double *X, double *res);

/* PCG options. */
typedef struct mb_pcg_opts {
  double rtol;    /* relative residual per column, e.g. 1e-10 */
  int max_iter;   /* iteration limit, e.g. 10000 */
  const mb_amg *amg; /* NULL: Jacobi. Else the preconditioner z = B^-1 r is one
                        V-cycle of this hierarchy (mb_amg.h), built from (or
                        updated to) the values of A: one rank only (halo NULL,
                        at most MB_AMG_MAX_COMP columns); stats->method is then
                        MB_SOLVER_AMG. The CPU's mb_pcg_solve only (the
                        CUDA PCG refuses it). */
  const struct mb_cuda_amg *cuda_amg; /* the CUDA PCG's: NULL, Jacobi; else the
                        device V-cycle of this hierarchy (mb_cuda_amg_*,
                        cuda/linalg/mb_linalg_cuda.h), updated to A's values;
                        the CPU PCG refuses it. */
} mb_pcg_opts;

/* Solve A X = B by Jacobi-preconditioned CG (or AMG-preconditioned:
 * opts->amg) for ncomp columns, X warm start
 * on entry and solution on exit ([ncols, ncomp] with room for the ghost
 * rows, which hold their owners' solution on exit; B [nrows, ncomp]).
 * halo: NULL on one rank; else the forward exchange plan of A's columns
 * (owned rows, then ghosts, as mb_halo_create numbers them) with which the
 * ghost values of X and of the search directions are refreshed before each
 * product (any plan's ncomp: the exchange passes ncomp). comm: the
 * communicator the dot products reduce over (MPI_COMM_SELF on one rank).
 * Collective over comm.
 * Method (linalg/mb_pcg.c; the GPU's the same, so the same bits): per
 * column, r = b - A x, z = r * dinv (dinv_i = 1 / a_ii), p = z; each
 * iteration q = A p, alpha = (r.z) / (p.q), x += alpha p, r -= alpha q,
 * z = r * dinv,
 * beta = (r.z)_new / (r.z), p = z + beta p. With opts->amg, every
 * z = r * dinv above is z = mb_amg_apply(r) of all ncomp columns instead
 * (the Jacobi path is unchanged bit for bit). Two allreduces an iteration:
 * p.q of every column, then r.r and r.z of every column together. A
 * column stops when sqrt(r.r) <= rtol ||b||; its residual is then
 * recomputed as b - A x and, if that is above rtol ||b||, CG restarts from
 * it (the iteration count goes on). A column with b = 0 gets x = 0.
 * stats: iterations the most of any column, residual the largest
 * recomputed relative residual (also on failure).
 * Errors: MB_ERR_NUMERIC (a column did not reach rtol within max_iter:
 * the message and stats hold the residual reached and the limit; a
 * non-positive diagonal or curvature p'Ap, i.e. A not SPD; a non-finite
 * value in A, B or X or during the iteration; those of mb_amg_apply),
 * MB_ERR_ARG (also: opts->amg with a halo or ghost columns, more than
 * MB_AMG_MAX_COMP columns, or a hierarchy of another size), MB_ERR_MPI,
 * MB_ERR_MEMORY. Every rank returns the same error: decisions are taken on
 * reduced values only. */
mb_error mb_pcg_solve(MPI_Comm comm, mb_halo *halo, const mb_csr *A, int ncomp, const double *B,
                      double *X, const mb_pcg_opts *opts, mb_solve_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
