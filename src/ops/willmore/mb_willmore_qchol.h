/* meshbatch: sparse Cholesky factor of a quaternion-Hermitian matrix on
 * the vertex pattern, for willmore_flow's inverse iteration on the CPU
 * (the willmore room's private header; mb_willmore.h step 3).
 *
 * The Dirac operator D - rho of mb_willmore.h is stored as a real 4nv x
 * 4nv matrix whose 4x4 blocks are left-multiplication matrices of
 * quaternions; read as an nv x nv matrix A of quaternions it is Hermitian
 * (A_ji = conj(A_ij), the diagonal real) and, shifted by sigma > 0,
 * positive definite. Such a matrix has a Cholesky factor A = L L^* with L
 * lower triangular, quaternion entries below the diagonal and a real
 * positive diagonal (the quaternions are a division ring: the real
 * algorithm goes through with products kept in order and conj() for the
 * transpose). Factoring on the nv-vertex pattern costs a quaternion
 * product (16 multiplications) where the real 4nv x 4nv factor spends a
 * 4x4 block product (64), and its fill-reducing order and symbolic
 * analysis are of an nv-row graph.
 *
 * Method: the up-looking sparse Cholesky (row k of L by a sparse
 * triangular solve whose pattern is the reach of row k's entries in the
 * elimination tree), as in T. A. Davis, "Direct Methods for Sparse Linear
 * Systems", SIAM 2006, ch. 4 (cs_chol, cs_ereach, cs_etree), on quaternion
 * entries; the fill-reducing order is CHOLMOD's AMD on the vertex graph
 * (Amestoy, Davis, Duff, SIAM J. Matrix Anal. Appl. 17(4), 1996),
 * postordered, computed once per mesh. The up-looking algorithm's
 * arithmetic per entry is fixed by the order and the pattern, so the
 * factor is the same bits on every run.
 */
#ifndef MB_WILLMORE_QCHOL_H
#define MB_WILLMORE_QCHOL_H

#include <stdint.h>

#include "mb_csr.h"
#include "mb_error.h"

typedef struct mb_willmore_qchol mb_willmore_qchol; /* opaque */

/* The order and the symbolic factor of D (a real 4nv x 4nv mb_csr made by
 * mb_willmore_dirac_pattern: 4x4 blocks on a symmetric vertex pattern with
 * its diagonal, sorted columns; values not read). *out owned by the caller
 * (mb_willmore_qchol_free). Not collective. Errors: MB_ERR_ARG (D not of
 * 4x4 blocks), MB_ERR_UNSUPPORTED (CHOLMOD's ordering failed),
 * MB_ERR_MEMORY. */
mb_error mb_willmore_qchol_create(const mb_csr *D, mb_willmore_qchol **out);

/* Factor A + sigma I, A the quaternion matrix of D's values (the pattern
 * of creation; block (i, j)'s first row [a, -b, -c, -d] read as the
 * quaternion a + b i + c j + d k, the upper triangle of the permuted
 * matrix read). sigma (the same unit as D's entries) is added to the
 * diagonal. Not collective. Errors: MB_ERR_NUMERIC (a pivot <= 0 or not
 * finite: not positive definite, or a non-finite value; the vertex
 * named). */
mb_error mb_willmore_qchol_factor(mb_willmore_qchol *q, const mb_csr *D, double sigma);

/* Solve (A + sigma I) x = b with the last factor: b, x [nv, 4] (the
 * quaternion of vertex i in entries 4i..4i+3, real part first, as D's rows
 * are numbered); x may be b. Not collective. Errors: MB_ERR_ARG (no
 * factor). */
mb_error mb_willmore_qchol_solve(mb_willmore_qchol *q, const double *b, double *x);

/* Entries of L below its diagonal (quaternions), for reports. */
int64_t mb_willmore_qchol_nnz(const mb_willmore_qchol *q);

/* Free; NULL allowed. */
void mb_willmore_qchol_free(mb_willmore_qchol *q);

#endif
