/* meshbatch GPU tests of the linalg layer: a CSR pattern and the operator
 * assembly written here on the CPU, from the rules in linalg/mb_csr.h and
 * cuda/linalg/mb_linalg_cuda.h, as the reference the device assembly must
 * equal bit for bit (and the CPU layer's mb_csr_cotangent_laplacian /
 * mb_mass_barycentric must equal too), and device-array helpers. Not
 * collective; failures fail the current cmocka test.
 */
#ifndef GPU_LINALG_REF_H
#define GPU_LINALG_REF_H

#include <stddef.h>
#include <stdint.h>

#include "mb_adjacency.h"
#include "mb_csr.h"

/* The pattern of mb_csr_pattern: rows [0, nrows) of adj, each the diagonal
 * and adj's neighbours in global-id order (global [ncols], NULL: local =
 * global), edge[] naming adj's directed edges. Free with gl_csr_free. */
mb_csr *gl_csr_pattern(const mb_adjacency *adj, int64_t nrows, int64_t ncols,
                       const int64_t *global);
void gl_csr_free(mb_csr *A);

/* Cotangent Laplacian into A's values and barycentric mass [nrows] (may be
 * NULL), from xyz [ncols, 3], in the documented order. */
void gl_cotangent(const mb_adjacency *adj, const double *xyz, mb_csr *A, double *mass);

/* y [nrows, ncomp] = A x, each row in entry order, unfused. */
void gl_spmv(const mb_csr *A, int ncomp, const double *x, double *y);

/* Device arrays (cudaMalloc / cudaMemcpy; fail the test on error). */
double *gl_dev_upload(const double *h, size_t n);
double *gl_dev_alloc(size_t n);
void gl_dev_download(double *h, const double *d, size_t n);
void gl_dev_free(double *d);

#endif
