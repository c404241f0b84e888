/* meshbatch: backend selection and dispatch (see mb_backend.h). */
#include "mb_backend.h"

#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mb_cuda.h"

static mb_error choose_cpu(mb_backend *b) {
  b->kind = MB_BACKEND_CPU;
  b->device = -1;
  const int threads = omp_get_max_threads();
  snprintf(b->description, sizeof b->description, "cpu (%d OpenMP thread%s)", threads,
           threads == 1 ? "" : "s");
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


/* ------------------------------------------------- the device chosen on a thread */

struct mb_backend_init {
  pthread_t thread;
  mb_backend_kind requested;
  int local_rank;
  mb_backend backend;  /* what the thread chose */
  char why[600];       /* its reason */
  mb_error e;          /* its error, and the message (errors are per thread) */
  char message[2048];
  double seconds;      /* the thread's time */
};

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *choose_thread(void *arg) {
  mb_backend_init *in = arg;
  const double t0 = now_s();
  in->e = mb_backend_choose(in->requested, in->local_rank, &in->backend, in->why, sizeof in->why);
  if (in->e) snprintf(in->message, sizeof in->message, "%s", mb_error_message());
  in->seconds = now_s() - t0;
  return NULL;
}

/* MESHBATCH_DEVICE_INIT=sync: the device chosen on the caller's thread, as before the thread. */
static int init_on_thread(void) {
  const char *v = getenv("MESHBATCH_DEVICE_INIT");
  return !(v && !strcmp(v, "sync"));
}

mb_error mb_backend_choose_begin(mb_backend_kind requested, int local_rank, mb_backend *backend,
                                 char *why, size_t why_len, mb_backend_init **init) {
  MB_CHECK(backend && init, MB_ERR_ARG, "mb_backend_choose_begin: NULL argument");
  *init = NULL;
  if (requested != MB_BACKEND_CUDA || !mb_cuda_compiled() || !init_on_thread())
    return mb_backend_choose(requested, local_rank, backend, why, why_len);
  mb_backend_init *in = calloc(1, sizeof *in);
  MB_CHECK(in, MB_ERR_MEMORY, "out of memory");
  in->requested = requested;
  in->local_rank = local_rank;
  const int rc = pthread_create(&in->thread, NULL, choose_thread, in);
  if (rc) { /* no thread: chosen here */
    free(in);
    return mb_backend_choose(requested, local_rank, backend, why, why_len);
  }
  backend->kind = MB_BACKEND_CUDA;
  backend->device = -1;
  snprintf(backend->description, sizeof backend->description, "cuda (device being initialised)");
  if (why && why_len) snprintf(why, why_len, "the job asks for the cuda backend");
  *init = in;
  return MB_SUCCESS;
}

mb_error mb_backend_choose_end(mb_backend_init *init, mb_backend *backend, char *why,
                               size_t why_len, double *init_s, double *wait_s) {
  if (init_s) *init_s = 0;
  if (wait_s) *wait_s = 0;
  if (!init) return MB_SUCCESS;
  const double t0 = now_s();
  pthread_join(init->thread, NULL);
  if (wait_s) *wait_s = now_s() - t0;
  if (init_s) *init_s = init->seconds;
  mb_error e = init->e;
  if (!backend) { /* dropped: a run that failed before it needed the device */
    free(init);
    return MB_SUCCESS;
  }
  if (e) {
    e = mb_error_set(e, __FILE__, __LINE__, __func__, "%s", init->message);
  } else {
    *backend = init->backend;
    if (why && why_len) snprintf(why, why_len, "%s", init->why);
    e = mb_cuda_bind_device(init->backend.device); /* current here too, as the choice made it */
  }
  free(init);
  return e;
}
