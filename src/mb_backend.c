/* meshbatch: backend selection and dispatch (see mb_backend.h). */
#include "mb_backend.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_cuda.h"

static mb_error choose_cpu(mb_backend *b) {
  b->kind = MB_BACKEND_CPU;
  b->device = -1;
  snprintf(b->description, sizeof b->description, "cpu (%d OpenMP threads)",
           omp_get_max_threads());
  return MB_SUCCESS;
}

static mb_error choose_cuda(int local_rank, mb_backend *b) {
  char name[200] = "";
  MB_CALL(mb_cuda_select_device(local_rank, &b->device, name, sizeof name));
  b->kind = MB_BACKEND_CUDA;
  snprintf(b->description, sizeof b->description, "cuda device %d (%s)", b->device, name);
  return MB_SUCCESS;
}

mb_error mb_backend_choose(mb_backend_kind requested, int local_rank, mb_backend *b,
                           char *why, size_t why_len) {
  char reason[512] = "";
  switch (requested) {
  case MB_BACKEND_CPU:
    snprintf(why, why_len, "the job asks for the cpu backend");
    return choose_cpu(b);
  case MB_BACKEND_CUDA:
    MB_CHECK(mb_cuda_device_count(reason, sizeof reason) > 0, MB_ERR_UNSUPPORTED,
             "backend: cuda was requested but no CUDA device can be used: %s", reason);
    snprintf(why, why_len, "the job asks for the cuda backend");
    MB_CALL(choose_cuda(local_rank, b));
    return MB_SUCCESS;
  case MB_BACKEND_AUTO:
    break;
  }
  int n = mb_cuda_device_count(reason, sizeof reason);
  if (n > 0 && choose_cuda(local_rank, b) == MB_SUCCESS) {
    snprintf(why, why_len, "auto: %d CUDA device%s visible", n, n == 1 ? "" : "s");
    return MB_SUCCESS;
  }
  snprintf(why, why_len, "auto: no usable CUDA device (%s)",
           n > 0 ? mb_error_message() : reason);
  return choose_cpu(b);
}

mb_error mb_backend_locality_order(const mb_adjacency *adj, const double *xyz, int64_t **perm,
                                   mb_adjacency **padj, double **pxyz) {
  const int64_t nv = adj->nv;
  *padj = NULL;
  *perm = malloc(sizeof **perm * (size_t)(nv ? nv : 1));
  *pxyz = malloc(sizeof **pxyz * 3 * (size_t)(nv ? nv : 1));
  mb_error e = *perm && *pxyz ? MB_SUCCESS
                              : mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                                             "out of memory for %lld vertices", (long long)nv);
  if (!e) e = mb_adjacency_rcm(adj, *perm);
  if (!e) e = mb_adjacency_permute(adj, *perm, padj);
  for (int64_t v = 0; !e && v < nv; v++) memcpy(*pxyz + 3 * v, xyz + 3 * (*perm)[v], 3 * sizeof(double));
  if (e) {
    free(*perm);
    free(*pxyz);
    mb_adjacency_free(*padj);
    *perm = NULL;
    *pxyz = NULL;
    *padj = NULL;
    MB_CALL(e);
  }
  return MB_SUCCESS;
}

/* The CUDA backend on the locality order; results put back in mesh order. */
static mb_error cuda_smooth(const mb_adjacency *adj, const mb_stage *stages, int nstages,
                            mb_precision precision, double *xyz) {
  int64_t *perm;
  mb_adjacency *padj;
  double *pxyz;
  MB_CALL(mb_backend_locality_order(adj, xyz, &perm, &padj, &pxyz));
  mb_error e = mb_cuda_smooth(padj, stages, nstages, precision, pxyz);
  for (int64_t v = 0; !e && v < adj->nv; v++) memcpy(xyz + 3 * perm[v], pxyz + 3 * v, 3 * sizeof(double));
  free(perm);
  free(pxyz);
  mb_adjacency_free(padj);
  MB_CALL(e);
  return MB_SUCCESS;
}

mb_error mb_backend_smooth(const mb_backend *b, const mb_adjacency *adj, const mb_stage *stages,
                           int nstages, mb_precision precision, double *xyz) {
  if (b->kind == MB_BACKEND_CUDA)
    MB_CALL(cuda_smooth(adj, stages, nstages, precision, xyz));
  else
    MB_CALL(mb_smooth_cpu(adj, stages, nstages, xyz));
  return MB_SUCCESS;
}
