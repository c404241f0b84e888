/* meshbatch: device matrices and the operator assembly on the GPU (linalg
 * layer; API and arithmetic: cuda/linalg/mb_linalg_cuda.h).
 *
 * Assembly gathers: one thread per off-diagonal entry computes its
 * cotangent weight from its edge's opposite vertices (MB_COT_AT of
 * linalg/mb_cotan.h, compiled with --fmad=false) and writes it once at its
 * slot; then one thread per row sums its off-diagonal entries in entry order
 * into the diagonal and its triangles' areas into the mass. No atomics, no
 * triplet sort: the order of every sum is fixed by the pattern, which is
 * why the bits are the CPU's and the same on N ranks.
 */
#include <cuda_runtime.h>
#include <cusparse.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <new>
#include <algorithm>
#include <vector>

#include "mb_cotan.h"
#include "mb_cuda_halo.h"
#include "mb_linalg_cuda_private.cuh"

/* ------------------------------------------------------------------ kernels */

/* Off-diagonal entries of the cotangent Laplacian: val[k] = 0.5 w, w = 0.0
 * plus the cotangents at the opposite vertices of the entry's edge in the
 * adjacency's order. */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    mb_la_cot_entries(int32_t nnz, const int32_t *__restrict__ erow,
                      const int32_t *__restrict__ col, const int32_t *__restrict__ opp_ptr,
                      const int32_t *__restrict__ opp, const double *__restrict__ xyz,
                      double *__restrict__ val) {
  const int64_t k = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (k >= nnz) return;
  const int32_t b = opp_ptr[k], e = opp_ptr[k + 1];
  const int32_t i = erow[k], j = col[k];
  if (j == i) return; /* the diagonal: the row kernel writes it */
  double s = 0.0;
  for (int32_t t = b; t < e; t++) {
    const int32_t o = opp[t];
    double c;
    MB_COT_AT(double, xyz, i, j, o, c);
    s += c;
  }
  val[k] = 0.5 * s;
}

/* Per row: L_ii = -(sum of the off-diagonal entries in entry order), and
 * the first row whose own or neighbours' positions are not finite into
 * flag[0] (MB_COT_AT gives 0 for a NaN triangle, as for a degenerate one,
 * so the values alone would not show it); with mass, the barycentric mass
 * (each triangle once, from the first of its two edges ij, io in the row;
 * areas summed, then / 6) and the first row whose mass is not finite into
 * flag[1]. */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    mb_la_cot_rows(int32_t nrows, const int32_t *__restrict__ rowptr,
                   const int32_t *__restrict__ col, const int32_t *__restrict__ diag,
                   const int32_t *__restrict__ opp_ptr, const int32_t *__restrict__ opp,
                   const double *__restrict__ xyz, double *__restrict__ val,
                   double *__restrict__ mass, int32_t *__restrict__ flag) {
  const int64_t i = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (i >= nrows) return;
  const int32_t b = rowptr[i], e = rowptr[i + 1], d = diag[i];
  double s = 0.0;
  for (int32_t k = b; k < e; k++)
    if (k != d) s += val[k];
  const double lii = -s;
  val[d] = lii;
  int finite = isfinite(lii);
  for (int32_t k = b; k < e; k++) {
    const double *p = xyz + 3 * (int64_t)col[k];
    finite &= isfinite(p[0]) && isfinite(p[1]) && isfinite(p[2]);
  }
  if (!finite) atomicMin(flag, (int32_t)i);
  if (!mass) return;
  double m = 0.0;
  for (int32_t k = b; k < e; k++) {
    if (k == d) continue;
    const int32_t j = col[k];
    for (int32_t t = opp_ptr[k]; t < opp_ptr[k + 1]; t++) {
      const int32_t o = opp[t];
      int32_t po = e; /* o's entry in the row (never absent in a triangle mesh) */
      for (int32_t q = b; q < e; q++)
        if (col[q] == o) {
          po = q;
          break;
        }
      if (k > po) continue; /* counted from o's entry */
      double a2;
      MB_TRIANGLE_AREA2(double, xyz, i, j, o, a2);
      m += a2;
    }
  }
  const double mi = m / 6.0;
  mass[i] = mi;
  if (!isfinite(mi)) atomicMin(flag + 1, (int32_t)i);
}

/* val[k] = beta src[k], and alpha d_i + beta src[k] on the diagonal. */
__global__ void __launch_bounds__(MB_LA_BLOCK)
    mb_la_combine(int32_t nnz, const int32_t *__restrict__ erow, const int32_t *__restrict__ diag,
                  double alpha, const double *__restrict__ d, double beta,
                  const double *src, double *val) {
  const int64_t k = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (k >= nnz) return;
  const int32_t i = erow[k];
  const double v = beta * src[k];
  if (diag[i] == (int32_t)k) {
    const double a = alpha * d[i];
    val[k] = a + v;
  } else {
    val[k] = v;
  }
}

/* y_i = sum_k val[k] x[col[k]] per column, in entry order, unfused. */
template <int NC>
__global__ void __launch_bounds__(MB_LA_BLOCK)
    mb_la_rows_kernel(int32_t nrows, const int32_t *__restrict__ rowptr,
                      const int32_t *__restrict__ col, const double *__restrict__ val,
                      const double *__restrict__ x, double *__restrict__ y) {
  const int64_t i = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (i >= nrows) return;
  double s[NC];
#pragma unroll
  for (int c = 0; c < NC; c++) s[c] = 0.0;
  for (int32_t k = rowptr[i]; k < rowptr[i + 1]; k++) {
    const double a = val[k];
    const int64_t j = col[k];
#pragma unroll
    for (int c = 0; c < NC; c++) {
      const double p = a * x[j * NC + c];
      s[c] += p;
    }
  }
#pragma unroll
  for (int c = 0; c < NC; c++) y[i * NC + c] = s[c];
}

/* ------------------------------------------------------------------ helpers */

static void destroy_dense(mb_cuda_csr::dense_pair *d) {
  if (d->mx) cusparseDestroyDnMat(d->mx);
  if (d->my) cusparseDestroyDnMat(d->my);
  if (d->vx) cusparseDestroyDnVec(d->vx);
  if (d->vy) cusparseDestroyDnVec(d->vy);
  *d = mb_cuda_csr::dense_pair{};
}

mb_cuda_csr::~mb_cuda_csr() {
  for (auto &d : dense) destroy_dense(&d);
  if (spA) cusparseDestroySpMat(spA);
  if (sp) cusparseDestroy(sp);
  if (pcg_host) cudaFreeHost(pcg_host);
  for (auto &e : pcg_ev)
    if (e) cudaEventDestroy(e);
  if (halo) mb_cuda_halo_free(halo);
  mb_reduce_device_free(rd);
}

template <int STREAM>
static mb_error spmv_staged(int32_t nrows, const int32_t *rowptr, const int32_t *col,
                            const double *val, int ncomp, const double *x, double *y) {
  if (nrows <= 0) return MB_SUCCESS;
  const unsigned g = mb_la_grid(nrows);
  switch (ncomp) {
#define MB_LA_CASE(NC)                                                                         \
  case NC:                                                                                     \
    mb_la_rows_staged<NC, STREAM><<<g, MB_LA_BLOCK>>>(nrows, rowptr, col, val, x,              \
                                                      mb_la_out<NC, MB_LA_SET>{nullptr, y});   \
    break;
    MB_LA_CASE(1) MB_LA_CASE(2) MB_LA_CASE(3) MB_LA_CASE(4)
#undef MB_LA_CASE
  default: MB_FAIL(MB_ERR_ARG, "row product of %d columns: 1 to %d", ncomp, MB_LA_MAXCOMP);
  }
  MB_CHECK_LAUNCH("staged row product");
  return MB_SUCCESS;
}

mb_error mb_la_spmv_rows(int32_t nrows, const int32_t *rowptr, const int32_t *col,
                         const double *val, int ncomp, const double *x, double *y) {
  return spmv_staged<1>(nrows, rowptr, col, val, ncomp, x, y);
}

static mb_error mb_la_spmv_plain(int32_t nrows, const int32_t *rowptr, const int32_t *col,
                                 const double *val, int ncomp, const double *x, double *y) {
  if (nrows <= 0) return MB_SUCCESS;
  const unsigned g = mb_la_grid(nrows);
  switch (ncomp) {
  case 1: mb_la_rows_kernel<1><<<g, MB_LA_BLOCK>>>(nrows, rowptr, col, val, x, y); break;
  case 2: mb_la_rows_kernel<2><<<g, MB_LA_BLOCK>>>(nrows, rowptr, col, val, x, y); break;
  case 3: mb_la_rows_kernel<3><<<g, MB_LA_BLOCK>>>(nrows, rowptr, col, val, x, y); break;
  case 4: mb_la_rows_kernel<4><<<g, MB_LA_BLOCK>>>(nrows, rowptr, col, val, x, y); break;
  default: MB_FAIL(MB_ERR_ARG, "row product of %d columns: 1 to %d", ncomp, MB_LA_MAXCOMP);
  }
  MB_CHECK_LAUNCH("row product");
  return MB_SUCCESS;
}

/* The dense descriptors of (x, y, ncomp), made once and kept in a small
 * ring; a new pair evicts the oldest. */
static mb_error dense_for(mb_cuda_csr *dA, int ncomp, const double *x, double *y,
                          mb_cuda_csr::dense_pair **out) {
  for (auto &d : dA->dense)
    if (d.x == x && d.y == y && d.ncomp == ncomp && (d.mx || d.vx)) {
      *out = &d;
      return MB_SUCCESS;
    }
  mb_cuda_csr::dense_pair *d = &dA->dense[dA->dense_next];
  dA->dense_next = (dA->dense_next + 1) % (int)(sizeof dA->dense / sizeof dA->dense[0]);
  destroy_dense(d);
  if (ncomp == 1) {
    MB_CALL_CUSPARSE(cusparseCreateDnVec(&d->vx, dA->ncols, (void *)x, CUDA_R_64F));
    MB_CALL_CUSPARSE(cusparseCreateDnVec(&d->vy, dA->nrows, y, CUDA_R_64F));
  } else {
    MB_CALL_CUSPARSE(cusparseCreateDnMat(&d->mx, dA->ncols, ncomp, ncomp, (void *)x, CUDA_R_64F,
                                         CUSPARSE_ORDER_ROW));
    MB_CALL_CUSPARSE(cusparseCreateDnMat(&d->my, dA->nrows, ncomp, ncomp, y, CUDA_R_64F,
                                         CUSPARSE_ORDER_ROW));
  }
  d->x = x;
  d->y = y;
  d->ncomp = ncomp;
  *out = d;
  return MB_SUCCESS;
}

static mb_error mb_la_spmv_cusparse(mb_cuda_csr *dA, int ncomp, const double *x, double *y) {
  if (!dA->sp) MB_CALL_CUSPARSE(cusparseCreate(&dA->sp));
  if (!dA->spA)
    MB_CALL_CUSPARSE(cusparseCreateCsr(&dA->spA, dA->nrows, dA->ncols, dA->nnz, dA->rowptr.p,
                                       dA->col.p, dA->val.p, CUSPARSE_INDEX_32I,
                                       CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
  mb_cuda_csr::dense_pair *D = nullptr;
  MB_CALL(dense_for(dA, ncomp, x, y, &D));
  const double one = 1.0, zero = 0.0;
  size_t need = 0;
  if (ncomp == 1)
    MB_CALL_CUSPARSE(cusparseSpMV_bufferSize(dA->sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &one,
                                             dA->spA, D->vx, &zero, D->vy, CUDA_R_64F,
                                             CUSPARSE_SPMV_ALG_DEFAULT, &need));
  else
    MB_CALL_CUSPARSE(cusparseSpMM_bufferSize(
        dA->sp, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, dA->spA,
        D->mx, &zero, D->my, CUDA_R_64F, CUSPARSE_SPMM_ALG_DEFAULT, &need));
  if (need > dA->spbuf.bytes) MB_CALL(mb_dbuf_alloc(&dA->spbuf, need, "cuSPARSE product buffer"));
  if (ncomp == 1)
    MB_CALL_CUSPARSE(cusparseSpMV(dA->sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, dA->spA, D->vx,
                                  &zero, D->vy, CUDA_R_64F, CUSPARSE_SPMV_ALG_DEFAULT,
                                  dA->spbuf.p));
  else
    MB_CALL_CUSPARSE(cusparseSpMM(dA->sp, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                  CUSPARSE_OPERATION_NON_TRANSPOSE, &one, dA->spA, D->mx, &zero,
                                  D->my, CUDA_R_64F, CUSPARSE_SPMM_ALG_DEFAULT, dA->spbuf.p));
  return MB_SUCCESS;
}

mb_error mb_la_spmv(mb_cuda_csr *dA, int rows, int ncomp, const double *x, double *y) {
  MB_CHECK(ncomp >= 1 && ncomp <= MB_LA_MAXCOMP, MB_ERR_ARG, "product of %d columns: 1 to %d",
           ncomp, MB_LA_MAXCOMP);
  if (dA->nrows == 0) return MB_SUCCESS;
  if (rows == 3)
    return spmv_staged<0>(dA->nrows, dA->rowptr.as<int32_t>(), dA->col.as<int32_t>(),
                          dA->val.as<double>(), ncomp, x, y);
  if (rows == 2)
    return mb_la_spmv_plain(dA->nrows, dA->rowptr.as<int32_t>(), dA->col.as<int32_t>(),
                             dA->val.as<double>(), ncomp, x, y);
  if (rows || dA->product == MB_CUDA_PRODUCT_ROWS)
    return mb_la_spmv_rows(dA->nrows, dA->rowptr.as<int32_t>(), dA->col.as<int32_t>(),
                           dA->val.as<double>(), ncomp, x, y);
  return mb_la_spmv_cusparse(dA, ncomp, x, y);
}

/* ------------------------------------------------------------------ API */

extern "C" mb_error mb_cuda_csr_create(const mb_csr *A, const mb_adjacency *adj,
                                       mb_cuda_csr **dA) {
  MB_CHECK(A && dA, MB_ERR_ARG, "mb_cuda_csr_create: NULL argument");
  *dA = nullptr;
  MB_CHECK(A->nrows >= 0 && A->ncols >= A->nrows && A->nnz >= 0, MB_ERR_ARG,
           "mb_cuda_csr_create: bad shape %d x %d, %d entries", A->nrows, A->ncols, A->nnz);
  const int32_t n = A->nrows, nnz = A->nnz;
  std::vector<int32_t> erow((size_t)nnz), optr((size_t)nnz + 1, 0), opp;
  for (int32_t i = 0; i < n; i++)
    for (int32_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) erow[(size_t)k] = i;
  if (adj) {
    MB_CHECK(adj->opp_row && adj->opp, MB_ERR_ARG,
             "mb_cuda_csr_create: the adjacency has no opposite vertices (build it with "
             "MB_ADJ_OPPOSITE from a triangle mesh)");
    MB_CHECK(adj->nv >= n, MB_ERR_ARG, "mb_cuda_csr_create: adjacency of %lld rows for %d",
             (long long)adj->nv, n);
    for (int32_t i = 0; i < n; i++)
      for (int32_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
        const int32_t ed = A->edge[k];
        int64_t cnt = 0;
        if (ed >= 0) {
          MB_CHECK(ed >= adj->row[i] && ed < adj->row[i + 1] && adj->col[ed] == A->col[k],
                   MB_ERR_ARG,
                   "mb_cuda_csr_create: entry %d of row %d names edge %d, not an edge of that "
                   "row to column %d in the adjacency", k, i, ed, A->col[k]);
          cnt = adj->opp_row[ed + 1] - adj->opp_row[ed];
          for (int64_t t = adj->opp_row[ed]; t < adj->opp_row[ed + 1]; t++)
            opp.push_back((int32_t)adj->opp[t]);
        }
        MB_CHECK((int64_t)optr[(size_t)k] + cnt <= INT32_MAX, MB_ERR_ARG,
                 "mb_cuda_csr_create: more than 2^31 - 1 opposite vertices");
        optr[(size_t)k + 1] = optr[(size_t)k] + (int32_t)cnt;
      }
  }
  mb_cuda_csr *d = new (std::nothrow) mb_cuda_csr;
  MB_CHECK(d, MB_ERR_MEMORY, "out of memory for a device matrix");
  mb_error err = MB_SUCCESS;
  d->nrows = n;
  d->ncols = A->ncols;
  d->nnz = nnz;
  d->has_adj = adj != nullptr;
  struct up {
    mb_dbuf *b;
    const void *h;
    size_t bytes;
    const char *what;
  } ups[] = {{&d->rowptr, A->rowptr, 4 * ((size_t)n + 1), "matrix row pointers"},
             {&d->col, A->col, 4 * (size_t)nnz, "matrix columns"},
             {&d->diag, A->diag, 4 * (size_t)n, "matrix diagonal positions"},
             {&d->erow, erow.data(), 4 * (size_t)nnz, "matrix entry rows"},
             {&d->opp_ptr, optr.data(), 4 * ((size_t)nnz + 1), "entry opposite pointers"},
             {&d->opp, opp.data(), 4 * opp.size(), "entry opposite vertices"}};
  for (auto &u : ups) {
    MB_CALL_GOTO(err, fail, mb_dbuf_alloc(u.b, u.bytes, u.what));
    if (u.bytes && u.h) {
      cudaError_t ce = cudaMemcpy(u.b->p, u.h, u.bytes, cudaMemcpyHostToDevice);
      MB_CHECK_GOTO(err, fail, ce == cudaSuccess, MB_ERR_CUDA, "cudaMemcpy of %s: %s", u.what,
                    cudaGetErrorString(ce));
    }
  }
  MB_CALL_GOTO(err, fail, mb_dbuf_alloc(&d->val, 8 * (size_t)nnz, "matrix values"));
  MB_CALL_GOTO(err, fail, mb_dbuf_alloc(&d->flag, 4 * sizeof(int32_t), "error flags"));
  {
    cudaError_t ce = cudaMemset(d->val.p, 0, 8 * (size_t)nnz);
    MB_CHECK_GOTO(err, fail, ce == cudaSuccess, MB_ERR_CUDA, "cudaMemset of values: %s",
                  cudaGetErrorString(ce));
  }
  *dA = d;
  return MB_SUCCESS;
fail:
  delete d;
  return err;
}

extern "C" void mb_cuda_csr_free(mb_cuda_csr *dA) { delete dA; }

extern "C" void mb_cuda_csr_shape(const mb_cuda_csr *dA, int32_t *nrows, int32_t *ncols,
                                  int32_t *nnz) {
  if (nrows) *nrows = dA ? dA->nrows : 0;
  if (ncols) *ncols = dA ? dA->ncols : 0;
  if (nnz) *nnz = dA ? dA->nnz : 0;
}

extern "C" void mb_cuda_csr_arrays(mb_cuda_csr *dA, const int32_t **rowptr, const int32_t **col,
                                   const int32_t **diag, double **val) {
  if (rowptr) *rowptr = dA ? dA->rowptr.as<int32_t>() : nullptr;
  if (col) *col = dA ? dA->col.as<int32_t>() : nullptr;
  if (diag) *diag = dA ? dA->diag.as<int32_t>() : nullptr;
  if (val) *val = dA ? dA->val.as<double>() : nullptr;
}

extern "C" mb_error mb_cuda_csr_download(const mb_cuda_csr *dA, double *val) {
  MB_CHECK(dA && (val || !dA->nnz), MB_ERR_ARG, "mb_cuda_csr_download: NULL argument");
  MB_CALL_CUDA(cudaMemcpy(val, dA->val.p, 8 * (size_t)dA->nnz, cudaMemcpyDeviceToHost));
  return MB_SUCCESS;
}

extern "C" mb_error mb_cuda_csr_upload(mb_cuda_csr *dA, const double *val) {
  MB_CHECK(dA && (val || !dA->nnz), MB_ERR_ARG, "mb_cuda_csr_upload: NULL argument");
  MB_CALL_CUDA(cudaMemcpy(dA->val.p, val, 8 * (size_t)dA->nnz, cudaMemcpyHostToDevice));
  return MB_SUCCESS;
}

extern "C" void mb_cuda_csr_set_product(mb_cuda_csr *dA, mb_cuda_product p) {
  if (dA) dA->product = p;
}

extern "C" void mb_cuda_csr_set_halo_transport(mb_cuda_csr *dA, mb_halo_transport t,
                                               mb_nccl *nccl) {
  if (!dA) return;
  dA->transport = t;
  dA->nccl = nccl;
}

extern "C" mb_error mb_cuda_cotangent_laplacian(mb_cuda_csr *dA, const double *xyz,
                                                double *mass) {
  MB_CHECK(dA && (xyz || !dA->ncols), MB_ERR_ARG, "mb_cuda_cotangent_laplacian: NULL argument");
  MB_CHECK(dA->has_adj, MB_ERR_ARG,
           "mb_cuda_cotangent_laplacian: the device matrix was made without its adjacency");
  if (dA->nrows == 0) return MB_SUCCESS;
  const int32_t none[2] = {INT32_MAX, INT32_MAX};
  MB_CALL_CUDA(cudaMemcpy(dA->flag.p, none, sizeof none, cudaMemcpyHostToDevice));
  mb_la_cot_entries<<<mb_la_grid(dA->nnz), MB_LA_BLOCK>>>(
      dA->nnz, dA->erow.as<int32_t>(), dA->col.as<int32_t>(), dA->opp_ptr.as<int32_t>(),
      dA->opp.as<int32_t>(), xyz, dA->val.as<double>());
  MB_CHECK_LAUNCH("cotangent entries");
  mb_la_cot_rows<<<mb_la_grid(dA->nrows), MB_LA_BLOCK>>>(
      dA->nrows, dA->rowptr.as<int32_t>(), dA->col.as<int32_t>(), dA->diag.as<int32_t>(),
      dA->opp_ptr.as<int32_t>(), dA->opp.as<int32_t>(), xyz, dA->val.as<double>(), mass,
      dA->flag.as<int32_t>());
  MB_CHECK_LAUNCH("cotangent rows");
  int32_t bad[2] = {INT32_MAX, INT32_MAX};
  MB_CALL_CUDA(cudaMemcpy(bad, dA->flag.p, sizeof bad, cudaMemcpyDeviceToHost));
  MB_CHECK(bad[0] == INT32_MAX, MB_ERR_NUMERIC,
           "cotangent Laplacian: non-finite value in row %d (local vertex): non-finite "
           "coordinates", (int)bad[0]);
  MB_CHECK(bad[1] == INT32_MAX, MB_ERR_NUMERIC,
           "lumped mass: non-finite value in row %d (local vertex): non-finite coordinates",
           (int)bad[1]);
  return MB_SUCCESS;
}

extern "C" mb_error mb_cuda_csr_combine(mb_cuda_csr *dA, double alpha, const double *d,
                                        double beta, const mb_cuda_csr *src) {
  MB_CHECK(dA && src && (d || !dA->nrows), MB_ERR_ARG, "mb_cuda_csr_combine: NULL argument");
  MB_CHECK(dA->nrows == src->nrows && dA->nnz == src->nnz, MB_ERR_ARG,
           "mb_cuda_csr_combine: patterns differ (%d rows, %d entries against %d, %d)",
           dA->nrows, dA->nnz, src->nrows, src->nnz);
  if (dA->nnz == 0) return MB_SUCCESS;
  mb_la_combine<<<mb_la_grid(dA->nnz), MB_LA_BLOCK>>>(
      dA->nnz, dA->erow.as<int32_t>(), dA->diag.as<int32_t>(), alpha, d, beta,
      src->val.as<double>(), dA->val.as<double>());
  MB_CHECK_LAUNCH("combine");
  MB_CALL_CUDA(cudaDeviceSynchronize());
  return MB_SUCCESS;
}

extern "C" mb_error mb_cuda_csr_spmv(mb_cuda_csr *dA, int rows, int ncomp, const double *x,
                                     double *y) {
  MB_CHECK(dA && (x || !dA->ncols) && (y || !dA->nrows), MB_ERR_ARG,
           "mb_cuda_csr_spmv: NULL argument");
  MB_CALL(mb_la_spmv(dA, rows, ncomp, x, y));
  MB_CALL_CUDA(cudaDeviceSynchronize());
  return MB_SUCCESS;
}

namespace {
__global__ void fill_ones(int64_t n, double *x) {
  const int64_t i = (int64_t)blockIdx.x * MB_LA_BLOCK + threadIdx.x;
  if (i < n) x[i] = 1.0;
}
} // namespace

extern "C" mb_error mb_cuda_csr_time_spmv(mb_cuda_csr *dA, int rows, int ncomp, int repeats,
                                          double *ms, double *bytes) {
  MB_CHECK(dA && ms && bytes && repeats >= 1 && ncomp >= 1 && ncomp <= MB_LA_MAXCOMP, MB_ERR_ARG,
           "mb_cuda_csr_time_spmv: bad arguments (%d columns, %d repeats)", ncomp, repeats);
  const int64_t nx = (int64_t)dA->ncols * ncomp, ny = (int64_t)dA->nrows * ncomp;
  mb_dbuf x, y;
  MB_CALL(mb_dbuf_alloc(&x, 8 * (size_t)(nx + 1), "benchmark vector"));
  MB_CALL(mb_dbuf_alloc(&y, 8 * (size_t)(ny + 1), "benchmark vector"));
  if (nx) {
    fill_ones<<<mb_la_grid(nx), MB_LA_BLOCK>>>(nx, x.as<double>());
    MB_CHECK_LAUNCH("benchmark fill");
  }
  MB_CALL(mb_la_spmv(dA, rows, ncomp, x.as<double>(), y.as<double>()));
  std::vector<double> t((size_t)repeats);
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  mb_error err = MB_SUCCESS;
  if (cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess)
    err = mb_error_set(MB_ERR_CUDA, __FILE__, __LINE__, __func__, "cannot create CUDA events");
  for (int r = 0; r < repeats && !err; r++) {
    float f = 0;
    cudaEventRecord(e0);
    err = mb_la_spmv(dA, rows, ncomp, x.as<double>(), y.as<double>());
    cudaEventRecord(e1);
    if (!err && (cudaEventSynchronize(e1) != cudaSuccess || cudaEventElapsedTime(&f, e0, e1) != cudaSuccess))
      err = mb_error_set(MB_ERR_CUDA, __FILE__, __LINE__, __func__, "timing a product failed");
    t[(size_t)r] = f;
  }
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
  MB_CALL(err);
  std::sort(t.begin(), t.end());
  *ms = t[(size_t)repeats / 2];
  *bytes = 12.0 * (double)dA->nnz + 4.0 * ((double)dA->nrows + 1) + 8.0 * (double)nx +
           8.0 * (double)ny;
  return MB_SUCCESS;
}
