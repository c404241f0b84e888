/* meshbatch GPU tests of the linalg layer: the CPU reference (see
 * gpu_linalg_ref.h). Compiled with -ffp-contract=off like the library. */
#include "gpu_linalg_ref.h"

#include <stdlib.h>
#include <string.h>

#include "mb_config.h"
#include "mb_cotan.h"
#include "mb_testutil.h"

#if MESHBATCH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

mb_csr *gl_csr_pattern(const mb_adjacency *adj, int64_t nrows, int64_t ncols,
                       const int64_t *global) {
  mb_csr *A = calloc(1, sizeof *A);
  assert_non_null(A);
  A->nrows = (int32_t)nrows;
  A->ncols = (int32_t)ncols;
  int64_t nnz = 0;
  for (int64_t i = 0; i < nrows; i++) nnz += adj->row[i + 1] - adj->row[i] + 1;
  A->nnz = (int32_t)nnz;
  A->rowptr = calloc((size_t)nrows + 1, sizeof *A->rowptr);
  A->col = calloc((size_t)nnz + 1, sizeof *A->col);
  A->diag = calloc((size_t)nrows + 1, sizeof *A->diag);
  A->edge = calloc((size_t)nnz + 1, sizeof *A->edge);
  A->val = calloc((size_t)nnz + 1, sizeof *A->val);
  assert_true(A->rowptr && A->col && A->diag && A->edge && A->val);
  int32_t k = 0;
  for (int64_t i = 0; i < nrows; i++) {
    A->rowptr[i] = k;
    const int64_t gi = global ? global[i] : i;
    int placed = 0;
    for (int64_t e = adj->row[i]; e < adj->row[i + 1]; e++) {
      const int64_t j = adj->col[e], gj = global ? global[j] : j;
      if (!placed && gj > gi) {
        A->diag[i] = k;
        A->col[k] = (int32_t)i;
        A->edge[k++] = -1;
        placed = 1;
      }
      A->col[k] = (int32_t)j;
      A->edge[k++] = (int32_t)e;
    }
    if (!placed) {
      A->diag[i] = k;
      A->col[k] = (int32_t)i;
      A->edge[k++] = -1;
    }
  }
  A->rowptr[nrows] = k;
  return A;
}

void gl_csr_free(mb_csr *A) {
  if (!A) return;
  free(A->rowptr);
  free(A->col);
  free(A->diag);
  free(A->edge);
  free(A->val);
  free(A);
}

void gl_cotangent(const mb_adjacency *adj, const double *xyz, mb_csr *A, double *mass) {
  for (int32_t i = 0; i < A->nrows; i++)
    for (int32_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
      const int32_t e = A->edge[k];
      if (e < 0) continue;
      const int64_t j = A->col[k];
      double s = 0.0;
      for (int64_t t = adj->opp_row[e]; t < adj->opp_row[e + 1]; t++) {
        const int64_t o = adj->opp[t];
        double c;
        MB_COT_AT(double, xyz, i, j, o, c);
        s += c;
      }
      A->val[k] = s / 2.0;
    }
  for (int32_t i = 0; i < A->nrows; i++) {
    double s = 0.0, m = 0.0;
    for (int32_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
      if (k != A->diag[i]) s += A->val[k];
    A->val[A->diag[i]] = -s;
    if (!mass) continue;
    for (int32_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
      const int32_t e = A->edge[k];
      if (e < 0) continue;
      const int64_t j = A->col[k];
      for (int64_t t = adj->opp_row[e]; t < adj->opp_row[e + 1]; t++) {
        const int64_t o = adj->opp[t];
        int32_t po = -1;
        for (int32_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++)
          if (A->col[q] == o) {
            po = q;
            break;
          }
        if (po <= k) continue;
        double a2;
        MB_TRIANGLE_AREA2(double, xyz, i, j, o, a2);
        m += a2 / 6.0;
      }
    }
    mass[i] = m;
  }
}

void gl_spmv(const mb_csr *A, int ncomp, const double *x, double *y) {
  for (int32_t i = 0; i < A->nrows; i++)
    for (int c = 0; c < ncomp; c++) {
      double s = 0.0;
      for (int32_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
        const double p = A->val[k] * x[(size_t)A->col[k] * ncomp + c];
        s += p;
      }
      y[(size_t)i * ncomp + c] = s;
    }
}

#if MESHBATCH_HAVE_CUDA
double *gl_dev_alloc(size_t n) {
  void *d = NULL;
  if (cudaMalloc(&d, n ? 8 * n : 8) != cudaSuccess) fail_msg("cudaMalloc of %zu doubles", n);
  return d;
}
double *gl_dev_upload(const double *h, size_t n) {
  double *d = gl_dev_alloc(n);
  if (n && cudaMemcpy(d, h, 8 * n, cudaMemcpyHostToDevice) != cudaSuccess)
    fail_msg("cudaMemcpy to the device");
  return d;
}
void gl_dev_download(double *h, const double *d, size_t n) {
  if (n && cudaMemcpy(h, d, 8 * n, cudaMemcpyDeviceToHost) != cudaSuccess)
    fail_msg("cudaMemcpy from the device");
}
void gl_dev_free(double *d) {
  if (d) cudaFree(d);
}
#else
double *gl_dev_alloc(size_t n) {
  (void)n;
  fail_msg("built without CUDA");
  return NULL;
}
double *gl_dev_upload(const double *h, size_t n) {
  (void)h;
  return gl_dev_alloc(n);
}
void gl_dev_download(double *h, const double *d, size_t n) {
  (void)h; (void)d; (void)n;
  fail_msg("built without CUDA");
}
void gl_dev_free(double *d) { (void)d; }
#endif
