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

