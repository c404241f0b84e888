/* meshbatch: partitioned smoothing with overlapped halo exchange
 * (see mb_smooth_partitioned.h).
 *
 * Every pass is one overlapped step of partition/mb_steps.h; both backends
 * plug their four operations into it: update a range of owned rows, start
 * and finish the exchange of the next positions' owned values into their
 * ghosts, make the next positions current.
 */
#include "mb_smooth_partitioned.h"

#include <stdlib.h>
#include <string.h>

#include "mb_smooth_cuda.h"
#include "mb_log.h"
#include "mb_mpi.h"
#include "mb_steps.h"


/* What a pass of a stage needs besides the backend's arrays. */
typedef struct pass_rule {
  const mb_smooth_stage *st;
  double f; /* lambda or mu */
} pass_rule;

/* The passes of every stage, each one overlapped step (partition/mb_steps.h);
 * the backend's context starts with its pass_rule. */
static mb_error run_passes(const mb_local_domain *d, const mb_smooth_stage *stages, int nstages,
                           const mb_step_ops *ops, pass_rule *rule, mb_pass_timing *t) {
  for (int s = 0; s < nstages; s++) {
    const mb_smooth_stage *st = &stages[s];
    for (int it = 0; it < st->iterations; it++) {
      if (mb_op_should_stop(st->ctx, it, st->iterations)) return mb_op_stopped(st->ctx);
      for (int p = 0; p < (st->method == MB_SMOOTH_TAUBIN ? 2 : 1); p++) {
        *rule = (pass_rule){st, p == 0 ? st->lambda : st->mu};
        MB_CALL(mb_overlapped_step(d, ops, rule, t));
      }
    }
  }
  return MB_SUCCESS;
}

/* ------------------------------------------------------------------ CPU */

typedef struct cpu_ctx {
  pass_rule rule; /* first: run_passes sets it */
  const mb_local_domain *d;
  mb_halo *h;
  double *cur, *next;
} cpu_ctx;

static mb_error cpu_begin(void *c) {
  cpu_ctx *x = c;
  MB_CALL(mb_halo_begin(x->h, x->next));
  return MB_SUCCESS;
}

static mb_error cpu_rows(void *c, int64_t b, int64_t e) {
  cpu_ctx *x = c;
  const mb_smooth_stage *st = x->rule.st;
  mb_smooth_rows_cpu(x->d->adj, b, e, st->weights, st->boundary, x->rule.f, x->cur, x->next);
  return MB_SUCCESS;
}

static mb_error cpu_end(void *c) {
  cpu_ctx *x = c;
  MB_CALL(mb_halo_end(x->h, x->next));
  return MB_SUCCESS;
}

static mb_error cpu_swap(void *c) {
  cpu_ctx *x = c;
  double *t = x->cur;
  x->cur = x->next;
  x->next = t;
  return MB_SUCCESS;
}

mb_error mb_smooth_partitioned_cpu(const mb_local_domain *d, mb_halo *h, const mb_smooth_stage *stages,
                                   int nstages, double *x, mb_pass_timing *timing) {
  mb_pass_timing local = {0};
  for (int s = 0; s < nstages; s++) MB_CALL(mb_smooth_check(&stages[s], d->adj));
  const size_t bytes = sizeof(double) * 3 * (size_t)(d->nowned + d->nghost + 1);
  double *tmp = malloc(bytes);
  MB_CHECK(tmp, MB_ERR_MEMORY, "out of memory for %lld local vertices",
           (long long)(d->nowned + d->nghost));
  static const mb_step_ops ops = {cpu_rows, cpu_begin, cpu_end, cpu_swap};
  cpu_ctx ctx = {.d = d, .h = h, .cur = x, .next = tmp};
  if (!timing) timing = &local;
  const double t0 = mb_wtime();
  mb_error e = run_passes(d, stages, nstages, &ops, &ctx.rule, timing);
  timing->wall_s += mb_wtime() - t0;
  if (!e && ctx.cur != x)
    memcpy(x, ctx.cur, sizeof(double) * 3 * (size_t)(d->nowned + d->nghost));
  free(tmp);
  MB_CALL(e);
  return MB_SUCCESS;
}

/* ------------------------------------------------------------------ CUDA */

typedef struct cuda_ctx {
  pass_rule rule; /* first: run_passes sets it */
  mb_cuda_domain *dev;
  int sync_each;                /* wait for every pass (timing breakdowns) */
  mb_halo_transport transport;  /* the halo's: MPI, NCCL or IPC (mb_halo_choose_transport) */
  mb_nccl *nccl;                /* NCCL's communicator, else NULL */
} cuda_ctx;

/* The device halo engine's forward exchange over the chosen transport
 * (mb_cuda_domain_halo_begin/end): NCCL, IPC: the whole exchange is
 * enqueued on the halo's stream. MPI: the packing is enqueued at begin and
 * the messages go at end, so the interior's rows are enqueued (and run)
 * while the host waits for the packed rows and exchanges them. */
static mb_error cuda_begin(void *c) {
  cuda_ctx *x = c;
  MB_CALL(mb_cuda_domain_halo_begin(x->dev, x->transport, x->nccl));
  return MB_SUCCESS;
}

static mb_error cuda_rows(void *c, int64_t b, int64_t e) {
  cuda_ctx *x = c;
  MB_CALL(mb_cuda_domain_pass(x->dev, b, e, x->rule.st->weights, x->rule.st->boundary, x->rule.f));
  return MB_SUCCESS;
}

static mb_error cuda_end(void *c) {
  cuda_ctx *x = c;
  MB_CALL(mb_cuda_domain_halo_end(x->dev));
  return MB_SUCCESS;
}

/* Where asked (benchmarks' compute / exchange breakdown), wait for the pass
 * so that compute time is measured where it runs; else keep the device's
 * queue full: the host enqueues the next pass while the device finishes
 * this one, and the streams' order does the rest (a host wait per pass
 * cost more than the exchange: 0.25 against 0.20 ms per pass on 4 GPUs,
 * docs/benchmarks.md). */
static mb_error cuda_swap(void *c) {
  cuda_ctx *x = c;
  mb_cuda_domain_swap(x->dev);
  if (x->sync_each) MB_CALL(mb_cuda_domain_sync(x->dev));
  return MB_SUCCESS;
}

/* One trial of the engine's transport choice: n exchanges of the next
 * positions' ghosts (which every pass rewrites) with transport t, each
 * waited for. Collective. */
static mb_error trial_exchanges(void *c, mb_halo_transport t, mb_nccl *nccl, int n) {
  cuda_ctx *x = c;
  x->transport = t;
  x->nccl = t == MB_HALO_NCCL ? nccl : NULL;
  for (int i = 0; i < n; i++) {
    MB_CALL(cuda_begin(x));
    MB_CALL(cuda_end(x));
    MB_CALL(mb_cuda_domain_sync(x->dev));
  }
  return MB_SUCCESS;
}

/* The transport by the halo engine's one rule (mb_halo_choose_transport).
 * Collective; the choice is the same on every rank. */
static mb_error choose_transport(cuda_ctx *x, MPI_Comm comm, mb_halo_transport want,
                                 mb_pass_timing *t) {
  mb_nccl *nccl = NULL;
  mb_halo_transport chosen = MB_HALO_MPI;
  mb_error e = mb_halo_choose_transport(comm, want, "smoothing", trial_exchanges, x, &nccl,
                                        &chosen);
  x->transport = e ? MB_HALO_MPI : chosen;
  x->nccl = x->transport == MB_HALO_NCCL ? nccl : NULL;
  if (!x->nccl) mb_nccl_free(nccl);
  MB_CALL(e);
  t->transport = chosen;
  return MB_SUCCESS;
}

mb_error mb_smooth_partitioned_cuda(const mb_local_domain *d, mb_halo *h, const mb_smooth_stage *stages,
                                    int nstages, mb_precision precision,
                                    mb_halo_transport transport, double *x,
                                    mb_pass_timing *timing) {
  mb_pass_timing local = {0};
  if (!timing) timing = &local;
  for (int s = 0; s < nstages; s++) MB_CALL(mb_smooth_check(&stages[s], d->adj));
  cuda_ctx ctx = {.sync_each = timing->synchronize, .transport = MB_HALO_MPI};
  /* agreed: a rank whose upload failed must not leave the others waiting in
   * the exchange; it also starts the passes of all ranks together */
  mb_error e = mb_cuda_domain_create(d->adj, d->nowned + d->nghost, x, precision, stages, nstages,
                                     h, &ctx.dev);
  e = mb_agree(mb_halo_comm(h), e);
  if (!e) e = choose_transport(&ctx, mb_halo_comm(h), transport, timing);
  static const mb_step_ops ops = {cuda_rows, cuda_begin, cuda_end, cuda_swap};
  const double t0 = mb_wtime();
  if (!e) e = run_passes(d, stages, nstages, &ops, &ctx.rule, timing);
  if (!e) e = mb_cuda_domain_sync(ctx.dev);
  timing->wall_s += mb_wtime() - t0;
  timing->pipelined = !ctx.sync_each;
  if (!e) e = mb_cuda_domain_download(ctx.dev, x);
  mb_cuda_domain_free(ctx.dev);
  mb_nccl_free(ctx.nccl);
  MB_CALL(e);
  return MB_SUCCESS;
}

