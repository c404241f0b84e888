/* meshbatch: sparse Cholesky on the CPU through CHOLMOD (mb_solver.h).
 *
 * CHOLMOD (Chen, Davis, Hager, Rajamanickam, ACM TOMS 35(3), 2008) is
 * given the upper triangle of A as a symmetric (stype = 1) compressed-
 * column matrix: for a symmetric matrix, CSR row i is CSC column i, and the
 * entries of column i with row index <= i are its upper part. The symbolic
 * analysis (cholmod_analyze: fill-reducing order, elimination tree,
 * supernodes) runs once per pattern; each mb_cholesky_factor copies the
 * new values into the same structure and runs cholmod_factorize, as
 * Kazhdan's ConformalizedMCF does. The factor is LL' (final_ll), so a
 * pivot <= 0 stops it with CHOLMOD_NOT_POSDEF and the column is reported.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cholmod.h>

#include "mb_solver.h"

struct mb_cholesky {
  cholmod_common c;
  int started;
  int32_t n;
  int32_t nnz;         /* of A (the pattern checked at factor time) */
  cholmod_sparse *U;   /* upper triangle, CSC */
  int32_t *src;        /* [U->nzmax] position in A->val of each entry of U */
  cholmod_factor *L;
  int factored;
};

void mb_cholesky_free(mb_cholesky *ch) {
  if (!ch) return;
  if (ch->started) {
    if (ch->L) cholmod_free_factor(&ch->L, &ch->c);
    if (ch->U) cholmod_free_sparse(&ch->U, &ch->c);
    cholmod_finish(&ch->c);
  }
  free(ch->src);
  free(ch);
}

static const char *cholmod_status_text(int status) {
  switch (status) {
  case CHOLMOD_OK: return "ok";
  case CHOLMOD_NOT_INSTALLED: return "method not installed";
  case CHOLMOD_OUT_OF_MEMORY: return "out of memory";
  case CHOLMOD_TOO_LARGE: return "integer overflow";
  case CHOLMOD_INVALID: return "invalid input";
  case CHOLMOD_GPU_PROBLEM: return "GPU problem";
  case CHOLMOD_NOT_POSDEF: return "not positive definite";
  case CHOLMOD_DSMALL: return "diagonal entry tiny";
  }
  return "unknown status";
}

mb_error mb_cholesky_create(const mb_csr *A, mb_cholesky **out) {
  MB_CHECK(A && out, MB_ERR_ARG, "mb_cholesky_create: NULL argument");
  *out = NULL;
  MB_CHECK(A->nrows == A->ncols, MB_ERR_ARG,
           "mb_cholesky_create: the matrix is not square (%d rows, %d columns): Cholesky "
           "factors one rank's whole matrix",
           A->nrows, A->ncols);
  mb_cholesky *ch;
  MB_CALLOC(ch, 1);
  ch->n = A->nrows;
  ch->nnz = A->nnz;
  cholmod_start(&ch->c);
  ch->started = 1;
  ch->c.print = 0;     /* errors are reported through mb_error */
  ch->c.final_ll = 1;  /* LL': a pivot <= 0 is "not positive definite" */
  ch->c.quick_return_if_not_posdef = 1;

  int64_t nu = 0;
  for (int32_t i = 0; i < A->nrows; i++)
    for (int32_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++)
      if (A->col[e] <= i) nu++;
  mb_error err = MB_SUCCESS;
  ch->U = cholmod_allocate_sparse((size_t)A->nrows, (size_t)A->nrows, (size_t)(nu ? nu : 1),
                                  1 /* sorted */, 1 /* packed */, 1 /* upper */, CHOLMOD_REAL,
                                  &ch->c);
  ch->src = mb_zalloc(nu ? (size_t)nu : 1, sizeof(int32_t));
  MB_CHECK_GOTO(err, fail, ch->U && ch->src, MB_ERR_MEMORY,
                "Cholesky: out of memory for the upper triangle (%lld entries)", (long long)nu);
  {
    int *Up = ch->U->p, *Ui = ch->U->i;
    int64_t q = 0;
    Up[0] = 0;
    int sorted = 1;
    for (int32_t i = 0; i < A->nrows; i++) {
      int32_t prev = -1;
      for (int32_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++)
        if (A->col[e] <= i) {
          if (A->col[e] <= prev) sorted = 0;
          prev = A->col[e];
          Ui[q] = A->col[e];
          ch->src[q++] = e;
        }
      Up[i + 1] = (int)q;
    }
    ch->U->sorted = sorted;
  }
  ch->L = cholmod_analyze(ch->U, &ch->c);
  MB_CHECK_GOTO(err, fail, ch->L && ch->c.status >= CHOLMOD_OK, MB_ERR_UNSUPPORTED,
                "Cholesky: CHOLMOD's analysis of a %d-row matrix failed: %s (status %d)",
                A->nrows, cholmod_status_text(ch->c.status), ch->c.status);
  *out = ch;
  return MB_SUCCESS;
fail:
  mb_cholesky_free(ch);
  return err;
}

mb_error mb_cholesky_factor(mb_cholesky *ch, const mb_csr *A) {
  MB_CHECK(ch && A, MB_ERR_ARG, "mb_cholesky_factor: NULL argument");
  MB_CHECK(A->nrows == ch->n && A->nnz == ch->nnz, MB_ERR_ARG,
           "mb_cholesky_factor: the matrix's pattern is not the one analysed");
  ch->factored = 0;
  double *Ux = ch->U->x;
  const int64_t nu = ((int *)ch->U->p)[ch->n];
  int64_t bad = -1;
  for (int64_t q = 0; q < nu; q++) {
    Ux[q] = A->val[ch->src[q]];
    if (!isfinite(Ux[q]) && bad < 0) bad = q;
  }
  if (bad >= 0) {
    /* the row of entry `bad`: its column in U */
    int32_t col = 0;
    while (((int *)ch->U->p)[col + 1] <= bad) col++;
    MB_FAIL(MB_ERR_NUMERIC, "Cholesky: the matrix has a non-finite value in row %d", col);
  }
  int ok = cholmod_factorize(ch->U, ch->L, &ch->c);
  if (ch->c.status == CHOLMOD_NOT_POSDEF || (ok && ch->L->minor < (size_t)ch->n)) {
    const size_t minor = ch->L->minor;
    /* the failing column in A's numbering (the factor's is permuted) */
    const int *perm = ch->L->Perm;
    long col = (perm && minor < (size_t)ch->n) ? (long)perm[minor] : (long)minor;
    MB_FAIL(MB_ERR_NUMERIC,
            "Cholesky: the matrix is not positive definite (singular or indefinite): the "
            "factorization failed at row %ld (pivot %zu of %d); a degenerate triangle, or a "
            "component without a fixed vertex where one is needed?",
            col, minor, ch->n);
  }
  MB_CHECK(ok && ch->c.status >= CHOLMOD_OK, ch->c.status == CHOLMOD_OUT_OF_MEMORY
                                                  ? MB_ERR_MEMORY
                                                  : MB_ERR_UNSUPPORTED,
           "Cholesky: CHOLMOD's factorization failed: %s (status %d)",
           cholmod_status_text(ch->c.status), ch->c.status);
  ch->factored = 1;
  return MB_SUCCESS;
}

mb_error mb_cholesky_solve(mb_cholesky *ch, int ncomp, const double *B, double *X) {
  MB_CHECK(ch && ncomp >= 1 && (B || ch->n == 0) && (X || ch->n == 0), MB_ERR_ARG,
           "mb_cholesky_solve: bad argument");
  MB_CHECK(ch->factored, MB_ERR_ARG,
           "mb_cholesky_solve: no factor (mb_cholesky_factor did not succeed)");
  const int32_t n = ch->n;
  for (int64_t q = 0; q < (int64_t)n * ncomp; q++)
    MB_CHECK(isfinite(B[q]), MB_ERR_NUMERIC,
             "Cholesky: the right-hand side has a non-finite value in row %lld",
             (long long)(q / ncomp));
  cholmod_dense *b = cholmod_allocate_dense((size_t)n, (size_t)ncomp, (size_t)n, CHOLMOD_REAL,
                                            &ch->c);
  MB_CHECK(b, MB_ERR_MEMORY, "Cholesky: out of memory for %d right-hand sides", ncomp);
  double *bx = b->x;
  for (int32_t i = 0; i < n; i++)
    for (int c = 0; c < ncomp; c++) bx[(size_t)c * n + i] = B[(size_t)i * ncomp + c];
  cholmod_dense *x = cholmod_solve(CHOLMOD_A, ch->L, b, &ch->c);
  cholmod_free_dense(&b, &ch->c);
  MB_CHECK(x, ch->c.status == CHOLMOD_OUT_OF_MEMORY ? MB_ERR_MEMORY : MB_ERR_UNSUPPORTED,
           "Cholesky: CHOLMOD's solve failed: %s (status %d)", cholmod_status_text(ch->c.status),
           ch->c.status);
  const double *xx = x->x;
  for (int32_t i = 0; i < n; i++)
    for (int c = 0; c < ncomp; c++) X[(size_t)i * ncomp + c] = xx[(size_t)c * n + i];
  cholmod_free_dense(&x, &ch->c);
  return MB_SUCCESS;
}
