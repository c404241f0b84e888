/* meshbatch: the GPU linalg layer in builds without CUDA
 * (cuda/linalg/mb_linalg_cuda.h): every entry point is refused with
 * MB_ERR_UNSUPPORTED, the free functions accept anything. */
#include "mb_linalg_cuda.h"

#define MB_NO_CUDA_MSG                                                           \
  "this meshbatch was built without the CUDA backend; install the CUDA toolkit " \
  "and reconfigure with -DMESHBATCH_CUDA=ON"

mb_error mb_cuda_csr_create(const mb_csr *A, const mb_adjacency *adj, mb_cuda_csr **dA) {
  (void)A; (void)adj;
  if (dA) *dA = NULL;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

void mb_cuda_csr_free(mb_cuda_csr *dA) { (void)dA; }

void mb_cuda_csr_shape(const mb_cuda_csr *dA, int32_t *nrows, int32_t *ncols, int32_t *nnz) {
  (void)dA;
  if (nrows) *nrows = 0;
  if (ncols) *ncols = 0;
  if (nnz) *nnz = 0;
}

void mb_cuda_csr_arrays(mb_cuda_csr *dA, const int32_t **rowptr, const int32_t **col,
                        const int32_t **diag, double **val) {
  (void)dA;
  if (rowptr) *rowptr = NULL;
  if (col) *col = NULL;
  if (diag) *diag = NULL;
  if (val) *val = NULL;
}

mb_error mb_cuda_csr_download(const mb_cuda_csr *dA, double *val) {
  (void)dA; (void)val;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_cuda_csr_upload(mb_cuda_csr *dA, const double *val) {
  (void)dA; (void)val;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

void mb_cuda_csr_set_product(mb_cuda_csr *dA, mb_cuda_product p) { (void)dA; (void)p; }

void mb_cuda_csr_set_halo_transport(mb_cuda_csr *dA, mb_halo_transport t, mb_nccl *nccl) {
  (void)dA; (void)t; (void)nccl;
}

mb_error mb_cuda_cotangent_laplacian(mb_cuda_csr *dA, const double *xyz, double *mass) {
  (void)dA; (void)xyz; (void)mass;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_cuda_csr_combine(mb_cuda_csr *dA, double alpha, const double *d, double beta,
                             const mb_cuda_csr *src) {
  (void)dA; (void)alpha; (void)d; (void)beta; (void)src;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_cuda_csr_spmv(mb_cuda_csr *dA, int rows, int ncomp, const double *x, double *y) {
  (void)dA; (void)rows; (void)ncomp; (void)x; (void)y;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_cuda_pcg_solve(MPI_Comm comm, mb_halo *halo, mb_cuda_csr *dA, int ncomp,
                           const double *B, double *X, const mb_pcg_opts *opts,
                           mb_solve_stats *stats) {
  (void)comm; (void)halo; (void)dA; (void)ncomp; (void)B; (void)X; (void)opts; (void)stats;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_cuda_cholesky_create(const mb_csr *A, mb_cuda_cholesky **chol) {
  (void)A;
  if (chol) *chol = NULL;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_cuda_cholesky_factor(mb_cuda_cholesky *chol, const mb_cuda_csr *dA,
                                 mb_solve_stats *stats) {
  (void)chol; (void)dA; (void)stats;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_cuda_cholesky_solve(mb_cuda_cholesky *chol, int ncomp, const double *B, double *X,
                                mb_solve_stats *stats) {
  (void)chol; (void)ncomp; (void)B; (void)X; (void)stats;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

void mb_cuda_cholesky_free(mb_cuda_cholesky *chol) { (void)chol; }

mb_error mb_cuda_csr_time_spmv(mb_cuda_csr *dA, int rows, int ncomp, int repeats, double *ms,
                               double *bytes) {
  (void)dA; (void)rows; (void)ncomp; (void)repeats; (void)ms; (void)bytes;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_cuda_amg_create(const mb_amg *amg, mb_cuda_csr *dA, mb_cuda_amg **out) {
  (void)amg; (void)dA;
  if (out) *out = NULL;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_cuda_amg_update(mb_cuda_amg *g, const mb_cuda_csr *dA) {
  (void)g; (void)dA;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

mb_error mb_cuda_amg_apply(const mb_cuda_amg *g, int ncomp, const double *r, double *z) {
  (void)g; (void)ncomp; (void)r; (void)z;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

int32_t mb_cuda_amg_rows(const mb_cuda_amg *g) { (void)g; return 0; }
double mb_cuda_amg_update_ms(const mb_cuda_amg *g) { (void)g; return 0; }
void mb_cuda_amg_free(mb_cuda_amg *g) { (void)g; }
