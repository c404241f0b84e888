/* meshbatch: CSR pattern from the vertex adjacency, products, and the
 * assembly of the mesh operators (see mb_csr.h for the conventions and the
 * fixed orders that make 1 rank, N ranks and the GPU give the same bits). */
#include "mb_csr.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "mb_cotan.h"

void mb_csr_free(mb_csr *A) {
  if (!A) return;
  free(A->rowptr);
  free(A->col);
  free(A->diag);
  free(A->edge);
  free(A->val);
  free(A);
}

static mb_error csr_alloc(int32_t nrows, int32_t ncols, int32_t nnz, mb_csr **out) {
  mb_csr *A;
  MB_CALLOC(A, 1);
  A->nrows = nrows;
  A->ncols = ncols;
  A->nnz = nnz;
  A->rowptr = mb_zalloc((size_t)nrows + 1, sizeof(int32_t));
  A->col = mb_zalloc(nnz ? (size_t)nnz : 1, sizeof(int32_t));
  A->diag = mb_zalloc(nrows ? (size_t)nrows : 1, sizeof(int32_t));
  A->edge = mb_zalloc(nnz ? (size_t)nnz : 1, sizeof(int32_t));
  A->val = mb_zalloc(nnz ? (size_t)nnz : 1, sizeof(double));
  if (!A->rowptr || !A->col || !A->diag || !A->edge || !A->val) {
    mb_csr_free(A);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for a CSR matrix of %d rows and %d entries", nrows,
            nnz);
  }
  *out = A;
  return MB_SUCCESS;
}

mb_error mb_csr_pattern(const mb_adjacency *adj, int64_t nrows, int64_t ncols,
                        const int64_t *global, mb_csr **out) {
  MB_CHECK(adj && out, MB_ERR_ARG, "mb_csr_pattern: NULL argument");
  *out = NULL;
  MB_CHECK(nrows >= 0 && nrows <= adj->nv, MB_ERR_ARG,
           "mb_csr_pattern: %lld rows asked of an adjacency of %lld", (long long)nrows,
           (long long)adj->nv);
  MB_CHECK(ncols >= nrows, MB_ERR_ARG, "mb_csr_pattern: %lld columns for %lld rows",
           (long long)ncols, (long long)nrows);
  MB_CHECK(ncols <= INT32_MAX, MB_ERR_ARG,
           "mb_csr_pattern: %lld columns exceed the 32-bit indices of a CSR matrix",
           (long long)ncols);
  int64_t nnz = nrows + (adj->row[nrows] - adj->row[0]);
  MB_CHECK(nnz <= INT32_MAX, MB_ERR_ARG,
           "mb_csr_pattern: %lld entries exceed the 32-bit indices of a CSR matrix",
           (long long)nnz);
  mb_csr *A;
  MB_CALL(csr_alloc((int32_t)nrows, (int32_t)ncols, (int32_t)nnz, &A));
  A->rowptr[0] = 0;
  for (int64_t i = 0; i < nrows; i++)
    A->rowptr[i + 1] = A->rowptr[i] + 1 + (int32_t)(adj->row[i + 1] - adj->row[i]);
  int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad)
  for (int64_t i = 0; i < nrows; i++) {
    int64_t gi = global ? global[i] : i;
    int32_t e = A->rowptr[i];
    int placed = 0;
    for (int64_t k = adj->row[i]; k < adj->row[i + 1]; k++) {
      int64_t j = adj->col[k];
      if (j < 0 || j >= ncols) bad = 1;
      int64_t gj = (global && j >= 0 && j < ncols) ? global[j] : j;
      if (!placed && gi < gj) {
        A->col[e] = (int32_t)i;
        A->edge[e] = -1;
        A->diag[i] = e++;
        placed = 1;
      }
      A->col[e] = (int32_t)j;
      A->edge[e] = (int32_t)k;
      e++;
    }
    if (!placed) {
      A->col[e] = (int32_t)i;
      A->edge[e] = -1;
      A->diag[i] = e;
    }
  }
  if (bad) {
    mb_csr_free(A);
    MB_FAIL(MB_ERR_ARG, "mb_csr_pattern: the adjacency names a column outside [0, %lld)",
            (long long)ncols);
  }
  *out = A;
  return MB_SUCCESS;
}

/* Rows below which the product runs on one thread (an OpenMP team costs
 * more than the product there; each row's sum is the same either way). */
#define SPMV_OMP_MIN_ROWS 32768

void mb_csr_spmv(const mb_csr *A, int ncomp, const double *x, double *y) {
  const int32_t n = A->nrows;
  if (ncomp == 3) {
#pragma omp parallel for schedule(static) if (n >= SPMV_OMP_MIN_ROWS)
    for (int32_t i = 0; i < n; i++) {
      double s0 = 0.0, s1 = 0.0, s2 = 0.0;
      for (int32_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++) {
        const double a = A->val[e];
        const double *xj = x + 3 * (size_t)A->col[e];
        s0 += a * xj[0];
        s1 += a * xj[1];
        s2 += a * xj[2];
      }
      y[3 * (size_t)i] = s0;
      y[3 * (size_t)i + 1] = s1;
      y[3 * (size_t)i + 2] = s2;
    }
    return;
  }
#pragma omp parallel for schedule(static) if (n >= SPMV_OMP_MIN_ROWS)
  for (int32_t i = 0; i < n; i++) {
    for (int c = 0; c < ncomp; c++) {
      double s = 0.0;
      for (int32_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++)
        s += A->val[e] * x[(size_t)A->col[e] * ncomp + c];
      y[(size_t)i * ncomp + c] = s;
    }
  }
}

static mb_error check_pattern(const mb_adjacency *adj, const mb_csr *A, const char *what) {
  MB_CHECK(adj && A, MB_ERR_ARG, "%s: NULL argument", what);
  MB_CHECK(A->nrows <= adj->nv, MB_ERR_ARG, "%s: the matrix has more rows than the adjacency",
           what);
  MB_CHECK(A->nnz == A->nrows + (int64_t)(adj->row[A->nrows] - adj->row[0]), MB_ERR_ARG,
           "%s: the matrix's pattern was not built from this adjacency", what);
  return MB_SUCCESS;
}

/* Row i's diagonal: minus the sum of its off-diagonal values in entry order. */
static inline double minus_offdiag_sum(const mb_csr *A, int32_t i) {
  double s = 0.0;
  for (int32_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++)
    if (e != A->diag[i]) s += A->val[e];
  return -s;
}

mb_error mb_csr_cotangent_laplacian(const mb_adjacency *adj, const double *xyz, mb_csr *A) {
  MB_CALL(check_pattern(adj, A, "mb_csr_cotangent_laplacian"));
  MB_CHECK(adj->opp_row && adj->opp, MB_ERR_ARG,
           "mb_csr_cotangent_laplacian: the adjacency has no opposite vertices (build it with "
           "MB_ADJ_OPPOSITE from a triangle mesh)");
  MB_CHECK(xyz || A->nrows == 0, MB_ERR_ARG, "mb_csr_cotangent_laplacian: NULL positions");
  const int32_t n = A->nrows;
  int32_t badrow = INT32_MAX;
#pragma omp parallel for schedule(static) reduction(min : badrow)
  for (int32_t i = 0; i < n; i++) {
    for (int32_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++) {
      if (e == A->diag[i]) continue;
      const int64_t k = A->edge[e], j = A->col[e];
      double w = 0.0;
      for (int64_t t = adj->opp_row[k]; t < adj->opp_row[k + 1]; t++) {
        const int64_t o = adj->opp[t];
        double c;
        MB_COT_AT(double, xyz, i, j, o, c);
        w += c;
      }
      A->val[e] = 0.5 * w;
    }
    const double d = minus_offdiag_sum(A, i);
    A->val[A->diag[i]] = d;
    /* MB_COT_AT gives 0 for a NaN triangle (as for a degenerate one): the
     * row's positions (its own and its neighbours', which include every
     * opposite vertex) are checked here */
    int finite = isfinite(d);
    for (int32_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++) {
      const double *p = xyz + 3 * (size_t)A->col[e];
      finite &= isfinite(p[0]) && isfinite(p[1]) && isfinite(p[2]);
    }
    if (!finite && i < badrow) badrow = i;
  }
  MB_CHECK(badrow == INT32_MAX, MB_ERR_NUMERIC,
           "cotangent Laplacian: non-finite value in row %d (local vertex): non-finite "
           "coordinates or a degenerate triangle",
           (int)badrow);
  return MB_SUCCESS;
}

mb_error mb_csr_uniform_laplacian(const mb_adjacency *adj, mb_csr *A) {
  MB_CALL(check_pattern(adj, A, "mb_csr_uniform_laplacian"));
  const int32_t n = A->nrows;
#pragma omp parallel for schedule(static)
  for (int32_t i = 0; i < n; i++) {
    for (int32_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++) A->val[e] = 1.0;
    A->val[A->diag[i]] = -(double)(A->rowptr[i + 1] - A->rowptr[i] - 1);
  }
  return MB_SUCCESS;
}

mb_error mb_mass_barycentric(const mb_adjacency *adj, int64_t nrows, const double *xyz,
                             double *mass) {
  MB_CHECK(adj && (mass || nrows == 0) && (xyz || nrows == 0), MB_ERR_ARG,
           "mb_mass_barycentric: NULL argument");
  MB_CHECK(nrows >= 0 && nrows <= adj->nv, MB_ERR_ARG,
           "mb_mass_barycentric: %lld rows asked of an adjacency of %lld", (long long)nrows,
           (long long)adj->nv);
  MB_CHECK(adj->opp_row && adj->opp, MB_ERR_ARG,
           "mb_mass_barycentric: the adjacency has no opposite vertices (build it with "
           "MB_ADJ_OPPOSITE from a triangle mesh)");
  int64_t badrow = INT64_MAX;
#pragma omp parallel for schedule(static) reduction(min : badrow)
  for (int64_t i = 0; i < nrows; i++) {
    const int64_t r0 = adj->row[i], r1 = adj->row[i + 1];
    double s = 0.0;
    for (int64_t k = r0; k < r1; k++) {
      const int64_t j = adj->col[k];
      for (int64_t t = adj->opp_row[k]; t < adj->opp_row[k + 1]; t++) {
        const int64_t o = adj->opp[t];
        /* Triangle (i, j, o) is met from edge ij and from edge io: count it
         * from the one of its two edges that comes first in row i. */
        int64_t ko = r1;
        for (int64_t q = r0; q < r1; q++)
          if (adj->col[q] == o) {
            ko = q;
            break;
          }
        if (k > ko) continue;
        double a2;
        MB_TRIANGLE_AREA2(double, xyz, i, j, o, a2);
        s += a2;
      }
    }
    mass[i] = s / 6.0;
    if (!isfinite(mass[i]) && i < badrow) badrow = i;
  }
  MB_CHECK(badrow == INT64_MAX, MB_ERR_NUMERIC,
           "lumped mass: non-finite value in row %lld (local vertex): non-finite coordinates",
           (long long)badrow);
  return MB_SUCCESS;
}

mb_error mb_csr_combine(mb_csr *A, double alpha, const double *d, double beta, const mb_csr *src) {
  MB_CHECK(A && src && (d || A->nrows == 0), MB_ERR_ARG, "mb_csr_combine: NULL argument");
  MB_CHECK(A->nrows == src->nrows && A->nnz == src->nnz, MB_ERR_ARG,
           "mb_csr_combine: the matrices have different patterns");
  const int32_t n = A->nrows;
#pragma omp parallel for schedule(static)
  for (int32_t i = 0; i < n; i++) {
    for (int32_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++) {
      const double b = beta * src->val[e];
      A->val[e] = e == A->diag[i] ? alpha * d[i] + b : b;
    }
  }
  return MB_SUCCESS;
}
