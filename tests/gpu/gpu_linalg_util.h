/* meshbatch GPU tests of the linalg layer: device arrays of float64
 * (cudaMalloc / cudaMemcpy), failing the current cmocka test on error; in
 * builds without CUDA they fail (the tests skip before calling them).
 * Not collective. */
#ifndef GPU_LINALG_UTIL_H
#define GPU_LINALG_UTIL_H

#include <stddef.h>

double *gl_dev_upload(const double *h, size_t n);
double *gl_dev_alloc(size_t n);
void gl_dev_download(double *h, const double *d, size_t n);
void gl_dev_free(double *d);

#endif
