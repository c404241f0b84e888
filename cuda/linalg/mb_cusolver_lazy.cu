/* meshbatch: cuSOLVER loaded on first use.
 *
 * libcusolver needs libcublas and libcublasLt, whose load and constructors
 * cost every process about half a second of CPU time (measured on a 2-core
 * machine: `meshbatch --help` 1.45 s wall linked against them, 0.10 s
 * without), although most runs never factor a matrix on the device: only
 * the Cholesky paths (csrchol) and the device AMG's coarsest level (potrf,
 * potri) call cuSOLVER. So meshbatch does not link cuSOLVER: the functions
 * it calls are defined here with cuSOLVER's own names and prototypes, and
 * each looks up the library's symbol with dlopen/dlsym on its first call.
 * Callers include the cuSOLVER headers and call these as they would call
 * the library. Where the library cannot be loaded the functions return
 * CUSOLVER_STATUS_NOT_INITIALIZED, which the callers' cuSOLVER error
 * checks report, and the loader's message is logged once.
 *
 * The soname is the one CMake found beside the toolkit's other libraries
 * (MB_CUSOLVER_SONAME, e.g. libcusolver.so.12). Thread-safe: dlopen and
 * dlsym are, and a pointer looked up twice is the same pointer. */
#include <cusolverDn.h>
#include <cusolverSp.h>
#include <cusolverSp_LOWLEVEL_PREVIEW.h>
#include <dlfcn.h>

#include <atomic>

#include "mb_log.h"

#ifndef MB_CUSOLVER_SONAME
#define MB_CUSOLVER_SONAME "libcusolver.so"
#endif

namespace {

void *library() {
  static std::atomic<void *> handle{nullptr};
  static std::atomic<bool> reported{false};
  void *h = handle.load(std::memory_order_acquire);
  if (h) return h;
  h = dlopen(MB_CUSOLVER_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    if (!reported.exchange(true))
      mb_log_error("cuSOLVER could not be loaded (%s): %s", MB_CUSOLVER_SONAME, dlerror());
    return nullptr;
  }
  void *expected = nullptr;
  if (!handle.compare_exchange_strong(expected, h)) { /* another thread won: same library */
    dlclose(h);
    h = expected;
  }
  return h;
}

template <typename F> F symbol(const char *name) {
  void *h = library();
  return h ? reinterpret_cast<F>(dlsym(h, name)) : nullptr;
}

} // namespace

/* One definition per cuSOLVER function meshbatch calls: the same name and
 * parameters; the library's function is looked up once and called. */
#define MB_CUSOLVER_LAZY(name, params, args)                                                   \
  cusolverStatus_t CUSOLVERAPI name params {                                                   \
    using fn = cusolverStatus_t(CUSOLVERAPI *) params;                                         \
    static fn f = symbol<fn>(#name);                                                           \
    return f ? f args : CUSOLVER_STATUS_NOT_INITIALIZED;                                       \
  }

/* dense (the device AMG's coarsest level) */
MB_CUSOLVER_LAZY(cusolverDnCreate, (cusolverDnHandle_t * handle), (handle))
MB_CUSOLVER_LAZY(cusolverDnDestroy, (cusolverDnHandle_t handle), (handle))
MB_CUSOLVER_LAZY(cusolverDnDpotrf_bufferSize,
                 (cusolverDnHandle_t handle, cublasFillMode_t uplo, int n, double *A, int lda,
                  int *Lwork),
                 (handle, uplo, n, A, lda, Lwork))
MB_CUSOLVER_LAZY(cusolverDnDpotrf,
                 (cusolverDnHandle_t handle, cublasFillMode_t uplo, int n, double *A, int lda,
                  double *Workspace, int Lwork, int *devInfo),
                 (handle, uplo, n, A, lda, Workspace, Lwork, devInfo))
MB_CUSOLVER_LAZY(cusolverDnDpotri_bufferSize,
                 (cusolverDnHandle_t handle, cublasFillMode_t uplo, int n, double *A, int lda,
                  int *lwork),
                 (handle, uplo, n, A, lda, lwork))
MB_CUSOLVER_LAZY(cusolverDnDpotri,
                 (cusolverDnHandle_t handle, cublasFillMode_t uplo, int n, double *A, int lda,
                  double *work, int lwork, int *devInfo),
                 (handle, uplo, n, A, lda, work, lwork, devInfo))

/* sparse: the low-level csrchol API and the high-level csrlsvchol */
MB_CUSOLVER_LAZY(cusolverSpCreate, (cusolverSpHandle_t * handle), (handle))
MB_CUSOLVER_LAZY(cusolverSpDestroy, (cusolverSpHandle_t handle), (handle))
MB_CUSOLVER_LAZY(cusolverSpCreateCsrcholInfo, (csrcholInfo_t * info), (info))
MB_CUSOLVER_LAZY(cusolverSpDestroyCsrcholInfo, (csrcholInfo_t info), (info))
MB_CUSOLVER_LAZY(cusolverSpXcsrcholAnalysis,
                 (cusolverSpHandle_t handle, int n, int nnzA, const cusparseMatDescr_t descrA,
                  const int *csrRowPtrA, const int *csrColIndA, csrcholInfo_t info),
                 (handle, n, nnzA, descrA, csrRowPtrA, csrColIndA, info))
MB_CUSOLVER_LAZY(cusolverSpDcsrcholBufferInfo,
                 (cusolverSpHandle_t handle, int n, int nnzA, const cusparseMatDescr_t descrA,
                  const double *csrValA, const int *csrRowPtrA, const int *csrColIndA,
                  csrcholInfo_t info, size_t *internalDataInBytes, size_t *workspaceInBytes),
                 (handle, n, nnzA, descrA, csrValA, csrRowPtrA, csrColIndA, info,
                  internalDataInBytes, workspaceInBytes))
MB_CUSOLVER_LAZY(cusolverSpDcsrcholFactor,
                 (cusolverSpHandle_t handle, int n, int nnzA, const cusparseMatDescr_t descrA,
                  const double *csrValA, const int *csrRowPtrA, const int *csrColIndA,
                  csrcholInfo_t info, void *pBuffer),
                 (handle, n, nnzA, descrA, csrValA, csrRowPtrA, csrColIndA, info, pBuffer))
MB_CUSOLVER_LAZY(cusolverSpDcsrcholZeroPivot,
                 (cusolverSpHandle_t handle, csrcholInfo_t info, double tol, int *position),
                 (handle, info, tol, position))
MB_CUSOLVER_LAZY(cusolverSpDcsrcholSolve,
                 (cusolverSpHandle_t handle, int n, const double *b, double *x,
                  csrcholInfo_t info, void *pBuffer),
                 (handle, n, b, x, info, pBuffer))
MB_CUSOLVER_LAZY(cusolverSpDcsrlsvchol,
                 (cusolverSpHandle_t handle, int m, int nnz, const cusparseMatDescr_t descrA,
                  const double *csrVal, const int *csrRowPtr, const int *csrColInd,
                  const double *b, double tol, int reorder, double *x, int *singularity),
                 (handle, m, nnz, descrA, csrVal, csrRowPtr, csrColInd, b, tol, reorder, x,
                  singularity))
