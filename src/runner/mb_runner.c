/* meshbatch: the job runner (see mb_runner.h). */
#include "mb_runner.h"

#include <dirent.h>
#include <omp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "mb_backend.h"
#include "mb_collection.h"
#include "mb_config.h"
#include "mb_cuda.h"
#include "mb_inputs.h"
#include "mb_log.h"
#include "mb_mpi.h"
#include "mb_domain.h"
#include "mb_meshfile.h"
#include "mb_op.h"
#include "mb_partition.h"

/* What one rank reports about one mesh source, gathered to rank 0. */
typedef struct mesh_result {
  int64_t index;
  int64_t nv, nf;
  int rank;
  int ok;
  double seconds;
  double read_s;         /* of seconds: reading the input (per-mesh runs) */
  char backend[64];
  char message[512];
} mesh_result;

typedef struct rank_state {
  MPI_Comm comm;
  int rank, size;
  const mb_job *job;     /* the job; for an import, a plan with no stages */
  mb_kind import_kind;   /* import: the kind every dataset is converted to, or NONE */
  mb_inputs *inputs;
  mb_backend backend;
  mb_collection_writer *out; /* per-mesh runs on one rank: the output, written mesh by mesh */
  int nkept;
  mb_mesh **kept;        /* otherwise: processed meshes this rank writes at the end */
  int nslabs;
  mb_mesh_slab *slabs;   /* partitioned runs: this rank's rows of every processed mesh */
  int nresults;
  mesh_result *results;  /* one per source this rank took */
  double busy_s;
  double device_s;       /* per-mesh runs: seconds the ops kept this rank's device busy */
  unsigned computed;     /* partitioned runs: MB_COMPUTED_BIT of the precisions the current
                            mesh's stages computed in (mb_op_ctx.computed) */
  double device_total_s; /* the same, summed over the ranks (after report_device_busy) */
  int64_t finished;      /* per-mesh runs: meshes this rank finished (computed or failed) */
  int omp_threads;       /* the main thread's OpenMP team size (the pipeline's compute thread
                            takes one fewer) */
  double setup_s;        /* --timings: backend and inputs */
  double put_s;          /* meshes written into the output as they finished (st->out) */
  double write_s;        /* the output's end: the collective write, or the publication */
  char ckpt[4200];       /* --checkpoint: the folder of finished meshes, "" without */
  int64_t resumed;       /* meshes this rank took from the checkpoint */
  int locked;            /* rank 0 holds OUTPUT.lock */
} rank_state;

/* ------------------------------------------------------------- stopping */

/* SIGTERM (what SLURM sends before the walltime kill, and what mpirun
 * forwards): finish the current mesh, take no other. */
static volatile sig_atomic_t stop_requested;
static void on_sigterm(int sig) {
  (void)sig;
  stop_requested = 1;
}

/* Fault injection for the tests (docs/guide.md, "Checkpoints"):
 * MESHBATCH_FAULT=kill:R:K or term:R:K makes rank R (every rank for -1)
 * kill itself (SIGKILL) or send itself SIGTERM after finishing its K-th
 * mesh. */
static void inject_fault(int rank, int64_t finished) {
  const char *f = getenv("MESHBATCH_FAULT");
  char what[8] = "";
  int r = -1;
  long long after = -1;
  if (!f || sscanf(f, "%7[a-z]:%d:%lld", what, &r, &after) != 3 || (r >= 0 && r != rank) ||
      finished != after)
    return;
  if (!strcmp(what, "kill")) raise(SIGKILL);
  if (!strcmp(what, "term")) raise(SIGTERM);
}

/* ------------------------------------------------------------- assignment */

typedef struct cost_item {
  int64_t index;
  double cost;
} cost_item;

static int by_cost_desc(const void *x, const void *y) {
  const cost_item *a = x, *b = y;
  if (a->cost != b->cost) return a->cost > b->cost ? -1 : 1;
  return (a->index > b->index) - (a->index < b->index);
}

/* Items sorted by decreasing cost, ties by index: the order work is handed out. */
static cost_item *cost_order(int64_t n, const double *cost) {
  cost_item *items = malloc(sizeof *items * (size_t)(n ? n : 1));
  if (!items) return NULL;
  for (int64_t i = 0; i < n; i++) items[i] = (cost_item){i, cost[i]};
  qsort(items, (size_t)n, sizeof *items, by_cost_desc);
  return items;
}

void mb_assign_lpt(int64_t n, const double *cost, int nranks, int *owner) {
  cost_item *items = cost_order(n, cost);
  double *load = calloc((size_t)nranks, sizeof *load);
  if (!items || !load) { /* fall back to round robin: still a valid assignment */
    for (int64_t i = 0; i < n; i++) owner[i] = (int)(i % nranks);
    free(items);
    free(load);
    return;
  }
  for (int64_t k = 0; k < n; k++) {
    int best = 0;
    for (int r = 1; r < nranks; r++)
      if (load[r] < load[best]) best = r;
    owner[items[k].index] = best;
    load[best] += items[k].cost > 0 ? items[k].cost : 1;
  }
  free(items);
  free(load);
}

/* ------------------------------------------------------------- one mesh */

/* Estimated work of a source: its size (I/O) plus every stage's cost. */
static double source_cost(const mb_job *job, double size) {
  double c = size;
  for (int s = 0; s < job->nstages; s++)
    c += job->stages[s].op->cost(0, (int64_t)size, job->stages[s].params);
  return c;
}

/* Provenance: continue the stage numbering of an input that was processed
 * before. computed: the precisions the ops reported (mb_op_ctx.computed). */
static mb_error add_provenance(rank_state *st, mb_mesh *m, double seconds, unsigned computed) {
  const mb_job *job = st->job;
  int first = 0;
  char key[64];
  for (;; first++) {
    snprintf(key, sizeof key, "stage_%d", first);
    if (!mb_attrs_get(&m->attrs, key)) break;
  }
  for (int s = 0; s < job->nstages; s++) {
    char text[1024];
    mb_stage_describe(&job->stages[s], text, sizeof text);
    snprintf(key, sizeof key, "stage_%d", first + s);
    MB_CALL(mb_attrs_set(&m->attrs, key, text));
  }
  MB_CALL(mb_attrs_set(&m->attrs, "meshbatch_version", MESHBATCH_VERSION));
  MB_CALL(mb_attrs_set(&m->attrs, "backend", st->backend.description));
  MB_CALL(mb_attrs_set(&m->attrs, "precision", mb_computed_name(computed)));
  MB_CALL(mb_attrs_setf(&m->attrs, "ranks", "%d", st->size));
  MB_CALL(mb_attrs_setf(&m->attrs, "rank", "%d", st->rank));
  MB_CALL(mb_attrs_setf(&m->attrs, "wall_time_s", "%.6f", seconds));
  MB_CALL(mb_attrs_set(&m->attrs, "job", job->path));
  MB_CALL(mb_attrs_set(&m->attrs, "source", st->inputs->sources[m->index].path));
  return MB_SUCCESS;
}

/* The dataset a job's first stage reads: a mesh file read as a surface
 * becomes the kind asked for where it can (a planar triangulation). */
static mb_error fit_kind(const rank_state *st, mb_mesh *m) {
  const mb_job *job = st->job;
  if (!job->nstages || m->kind == job->stages[0].op->in) return MB_SUCCESS;
  const mb_op_info *op = job->stages[0].op;
  const char *path = st->inputs->sources[m->index].path;
  mb_kind had = m->kind;
  char why[512] = "";
  if (had == MB_KIND_SURFACE) {
    if (mb_mesh_convert_kind(m, op->in, path) == MB_SUCCESS) return MB_SUCCESS;
    snprintf(why, sizeof why, " (%s)", mb_error_message());
  }
  MB_FAIL(MB_ERR_ARG, "%s:%d: stage 0 (%s) reads %s datasets, and %s is a %s dataset%s",
          job->path, job->stages[0].line, op->name, mb_kind_name(op->in), path, mb_kind_name(had),
          why);
}

/* The one stage loop, for a mesh of its own (m, per-mesh runs; d NULL) or
 * a rank's piece of a dataset split over the ranks (d, partitioned runs; m
 * NULL). Consecutive stages of ops that share an entry point run as one
 * group (smoothing keeps its adjacency and device arrays). On a domain the
 * errors are agreed after each group. */
static mb_error run_stages(const rank_state *st, const mb_op_ctx *ctx, mb_mesh **m,
                           mb_domain *d) {
  const mb_job *job = st->job;
  const mb_backend *be = &st->backend;
  for (int k = 0; k < job->nstages;) {
    const mb_op_info *op = job->stages[k].op;
    const mb_op_run_fn run = d ? NULL : mb_op_run_for(op, be);
    const mb_op_run_partitioned_fn part = d ? mb_op_run_partitioned_for(op, be) : NULL;
    MB_CHECK(run || part, MB_ERR_UNSUPPORTED, "%s:%d: %s has no %s%s backend%s", job->path,
             job->stages[k].line, op->name, d ? "partitioned form on the " : "",
             mb_backend_kind_name(be->kind), d ? " (use distribute: per-mesh)" : "");
    int n = 1;
    while (k + n < job->nstages &&
           (d ? mb_op_run_partitioned_for(job->stages[k + n].op, be) == part
              : mb_op_run_for(job->stages[k + n].op, be) == run))
      n++;
    MB_CALL(d ? mb_agree(d->comm, part(ctx, &job->stages[k], n, d))
              : run(ctx, &job->stages[k], n, m));
    k += n;
  }
  return MB_SUCCESS;
}

/* A finished mesh joins the output: written into it at once where the rank
 * writes the output mesh by mesh (then freed), else kept for the collective
 * write at the end. Takes m in every case. */
static mb_error keep_mesh(rank_state *st, mb_mesh *m) {
  if (st->out) {
    const double t0 = mb_wtime();
    mb_error e = mb_collection_writer_put(st->out, m); /* takes m */
    st->put_s += mb_wtime() - t0;
    MB_CALL(e);
    return MB_SUCCESS;
  }
  mb_mesh **k = realloc(st->kept, sizeof *k * (size_t)(st->nkept + 1));
  if (!k) {
    mb_mesh_free(m);
    MB_FAIL(MB_ERR_MEMORY, "out of memory");
  }
  st->kept = k;
  st->kept[st->nkept++] = m;
  return MB_SUCCESS;
}

/* The checkpoint file of source s ("" without --checkpoint). */
static void checkpoint_path(const rank_state *st, int64_t s, char *ck, size_t len) {
  ck[0] = '\0';
  if (st->ckpt[0]) snprintf(ck, len, "%s/%lld.h5", st->ckpt, (long long)s);
}

/* Open a checkpoint file: a collection of one dataset. Collective over comm. */
static mb_error open_checkpoint_mesh(MPI_Comm comm, const char *ck, mb_collection **c) {
  MB_CALL(mb_collection_open(comm, ck, c));
  if (mb_collection_count(*c) == 1) return MB_SUCCESS;
  mb_collection_close(*c);
  *c = NULL;
  MB_FAIL(MB_ERR_FORMAT, "%s: a checkpoint holds one dataset", ck);
}

/* A finished mesh from the checkpoint: the one dataset of ck, as source s. */
static mb_error read_checkpoint(const char *ck, int64_t s, mb_mesh **m) {
  mb_collection *c = NULL;
  MB_CALL(open_checkpoint_mesh(MPI_COMM_SELF, ck, &c));
  mb_error e = mb_collection_read(c, 0, m);
  mb_collection_close(c);
  MB_CALL(e);
  (*m)->index = s;
  return MB_SUCCESS;
}

/* ------------------------------------------------------------- per-mesh pipeline */

/* A per-mesh run is a pipeline of three stages per rank: a compute thread
 * takes the meshes the main thread has read, in turn, and runs their
 * stages (on the GPU, or the CPU's OpenMP threads); meanwhile the rank's
 * main thread reads up to PIPE_AHEAD meshes ahead and writes the meshes
 * computed (checkpoint, output), so that the device is busy while the disk
 * works, and a large read or write beside a small compute does not stall
 * it. The main thread does all HDF5 and MPI calls (the MPI library is
 * initialized for MPI_THREAD_FUNNELED; HDF5 is not thread-safe); the
 * compute thread only runs ops, which use neither for a whole mesh.
 * The pipeline runs on the CUDA backend (on the CPU backend the compute
 * already takes every core); MESHBATCH_PIPELINE=0 or 1 in the environment
 * turns it off or on for either backend. */
typedef struct pending {
  rank_state *st;
  int64_t s;          /* the source, -1 for none */
  int ires;           /* its entry in st->results */
  int compute;        /* 1: read, its stages to run; 0: finished already (resumed or failed) */
  mb_mesh *m;         /* the mesh: read, then computed; NULL where that failed */
  char message[512];  /* why it failed (error messages are per thread) */
  char trace[2048];   /* and the traceback, for -v */
  double t0, compute_s, device_s;
  unsigned computed;  /* the precisions its stages computed in */
  struct pending *next; /* in a queue of the pipeline */
} pending;

static int pipeline_enabled(const rank_state *st) {
  const char *e = getenv("MESHBATCH_PIPELINE");
  if (e && !strcmp(e, "0")) return 0;
  if (e && !strcmp(e, "1")) return 1;
  return st->backend.kind == MB_BACKEND_CUDA;
}

/* The compute stage: the job's stages and the provenance, on the thread
 * that runs it (with the rank's device bound to it on the CUDA backend). */
static void compute_pending(pending *p) {
  rank_state *st = p->st;
  const double t0 = mb_wtime();
  mb_error e = MB_SUCCESS;
  if (st->backend.kind == MB_BACKEND_CUDA) e = mb_cuda_bind_device(st->backend.device);
  const mb_op_ctx ctx = {.backend = &st->backend, .precision = st->job->precision,
                         .halo = st->job->halo, .device_s = &p->device_s,
                         .computed = &p->computed};
  if (!e) e = run_stages(st, &ctx, &p->m, NULL);
  p->compute_s = mb_wtime() - t0;
  if (!e) e = add_provenance(st, p->m, mb_wtime() - p->t0, p->computed);
  if (e) {
    snprintf(p->message, sizeof p->message, "%s", mb_error_message());
    snprintf(p->trace, sizeof p->trace, "%s", mb_error_traceback());
    mb_mesh_free(p->m);
    p->m = NULL;
  }
}

/* The read stage of source s (main thread): a result entry, then the mesh
 * from the checkpoint (finished before: nothing to compute) or from the
 * inputs, converted to the kind the first stage reads. A source that
 * cannot be read is recorded as skipped. */
static mb_error begin_source(rank_state *st, int64_t s, pending *p) {
  memset(p, 0, sizeof *p);
  p->st = st;
  p->s = s;
  mesh_result *r = realloc(st->results, sizeof *r * (size_t)(st->nresults + 1));
  MB_CHECK(r, MB_ERR_MEMORY, "out of memory");
  st->results = r;
  p->ires = st->nresults++;
  mesh_result *res = &r[p->ires];
  memset(res, 0, sizeof *res);
  res->index = s;
  res->rank = st->rank;
  snprintf(res->backend, sizeof res->backend, "%s",
           st->backend.kind == MB_BACKEND_CUDA ? "cuda" : "cpu");
  const mb_source *src = &st->inputs->sources[s];
  p->t0 = mb_wtime();
  char ck[4400];
  checkpoint_path(st, s, ck, sizeof ck);
  if (st->job->resume && ck[0] && access(ck, F_OK) == 0) { /* finished before */
    MB_CALL(read_checkpoint(ck, s, &p->m));
    res->nv = p->m->nv;
    res->nf = p->m->nf;
    snprintf(res->backend, sizeof res->backend, "resumed");
    st->resumed++;
    mb_log(MB_LOG_NORMAL, "[rank %d] %s: from the checkpoint (%s)", st->rank, src->name, ck);
    return MB_SUCCESS;
  }
  mb_error e = mb_inputs_read(st->inputs, s, &p->m);
  if (!e) {
    res->nv = p->m->nv;
    res->nf = p->m->nf;
    if (st->import_kind != MB_KIND_NONE)
      e = mb_mesh_convert_kind(p->m, st->import_kind, src->path);
  }
  if (!e) e = fit_kind(st, p->m);
  res->read_s = mb_wtime() - p->t0;
  if (e) {
    snprintf(p->message, sizeof p->message, "%s", mb_error_message());
    snprintf(p->trace, sizeof p->trace, "%s", mb_error_traceback());
    mb_mesh_free(p->m);
    p->m = NULL;
    return MB_SUCCESS;
  }
  p->compute = 1;
  return MB_SUCCESS;
}

/* A source read but not computed (SIGTERM came): as if never taken. */
static void drop_source(rank_state *st, pending *p) {
  mb_mesh_free(p->m);
  p->m = NULL;
  /* its result entry goes; later entries (meshes taken after it that had
   * nothing to compute, finished already) move down: no pending one
   * refers to them, as meshes read later are dropped first */
  memmove(&st->results[p->ires], &st->results[p->ires + 1],
          sizeof *st->results * (size_t)(st->nresults - p->ires - 1));
  st->nresults--;
  p->s = -1;
}

/* The write stage (main thread): a computed mesh goes to the checkpoint
 * (durable before it counts as finished: written whole, then renamed) and
 * joins the rank's output; a failed one is reported as skipped. */
static mb_error finish_source(rank_state *st, pending *p) {
  if (p->s < 0) return MB_SUCCESS;
  mesh_result *res = &st->results[p->ires];
  const mb_source *src = &st->inputs->sources[p->s];
  const int resumed = !p->compute && p->m;
  if (resumed) {
    res->ok = 1;
    return keep_mesh(st, p->m);
  }
  const double tw = mb_wtime();
  if (p->m) {
    char ck[4400];
    checkpoint_path(st, p->s, ck, sizeof ck);
    if (ck[0]) {
      mb_error ce = mb_collection_write_durable(MPI_COMM_SELF, ck, 1, &p->m, 0, NULL);
      if (ce) {
        mb_mesh_free(p->m);
        return ce;
      }
    }
    res->seconds = res->read_s + p->compute_s;
    MB_CALL(keep_mesh(st, p->m));
    res->ok = 1;
    mb_log(MB_LOG_NORMAL, "[rank %d] %s: %lld vertices, %lld faces, %s, %.3f s", st->rank,
           src->name, (long long)res->nv, (long long)res->nf, res->backend, res->seconds);
  } else {
    res->seconds = res->read_s + p->compute_s;
    snprintf(res->message, sizeof res->message, "%s", p->message);
    mb_log_error("[rank %d] %s: skipped: %s", st->rank, src->name, res->message);
    if (mb_log_get_level() >= MB_LOG_VERBOSE) fprintf(stderr, "%s", p->trace);
  }
  st->busy_s += res->read_s + p->compute_s + (mb_wtime() - tw);
  st->device_s += p->device_s;
  st->finished++;
  inject_fault(st->rank, st->finished);
  return MB_SUCCESS;
}

/* ------------------------------------------------------------- scheduling */

/* The next source this rank takes, or -1: the static schedule's list in
 * turn, or the dynamic schedule's shared counter. */
typedef struct source_iter {
  int64_t n;
  const int *owner;       /* static: the rank of each source */
  const cost_item *order; /* dynamic: sources in decreasing cost */
  MPI_Win win;            /* dynamic: the counter on rank 0 */
  int64_t pos;
} source_iter;

static mb_error next_source(rank_state *st, source_iter *it, int64_t *s) {
  *s = -1;
  if (stop_requested) return MB_SUCCESS;
  if (it->owner) {
    while (it->pos < it->n && it->owner[it->pos] != st->rank) it->pos++;
    if (it->pos < it->n) *s = it->pos++;
    return MB_SUCCESS;
  }
  int64_t one = 1, next = 0;
  MB_CALL_MPI(MPI_Fetch_and_op(&one, &next, MPI_INT64_T, 0, 0, MPI_SUM, it->win));
  MB_CALL_MPI(MPI_Win_flush(0, it->win));
  if (next < it->n) *s = it->order[next].index;
  return MB_SUCCESS;
}

/* Meshes read ahead of the compute: a larger read beside a smaller compute
 * then does not leave the device waiting, at the memory of these meshes. */
enum { PIPE_AHEAD = 2 };

/* The queues between the main thread and the compute thread. */
typedef struct mesh_pipe {
  rank_state *st;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pending *in, *in_tail;   /* read, their stages to run (FIFO) */
  pending *out, *out_tail; /* computed, to be written (FIFO) */
  int nin, busy;           /* queued for the compute; 1 while one computes */
  int quit;                /* no more meshes: the compute thread ends when in is empty */
} mesh_pipe;

static void queue_push(pending **head, pending **tail, pending *p) {
  p->next = NULL;
  if (*tail) (*tail)->next = p; else *head = p;
  *tail = p;
}

static pending *queue_pop(pending **head, pending **tail) {
  pending *p = *head;
  if (p) {
    *head = p->next;
    if (!*head) *tail = NULL;
    p->next = NULL;
  }
  return p;
}

/* The compute thread: the stages of each mesh of the in queue, in turn,
 * into the out queue. Its OpenMP teams leave one core to the main thread,
 * and one more to the output's raw-write thread where the output is
 * written mesh by mesh: a team as large as the machine, with those threads
 * beside it, waits at every barrier for the thread that lost its core
 * (16 cores: a batch's compute took 5 times as long with the reading
 * thread, on the H100 machine; 14 % longer with the writing one, H200). */
static void *compute_thread(void *arg) {
  mesh_pipe *q = arg;
  const int n = q->st->omp_threads - (q->st->out ? 2 : 1);
  omp_set_num_threads(n > 1 ? n : 1);
  pthread_mutex_lock(&q->mu);
  for (;;) {
    while (!q->in && !q->quit) pthread_cond_wait(&q->cv, &q->mu);
    pending *p = queue_pop(&q->in, &q->in_tail);
    if (!p) break;
    q->nin--;
    q->busy = 1;
    pthread_mutex_unlock(&q->mu);
    compute_pending(p);
    pthread_mutex_lock(&q->mu);
    q->busy = 0;
    queue_push(&q->out, &q->out_tail, p);
    pthread_cond_broadcast(&q->cv);
  }
  pthread_mutex_unlock(&q->mu);
  return NULL;
}

/* Write (or, after an error of the rank, free) every computed mesh. */
static mb_error finish_computed(rank_state *st, mesh_pipe *q, mb_error e) {
  pthread_mutex_lock(&q->mu);
  pending *done = q->out;
  q->out = q->out_tail = NULL;
  pthread_mutex_unlock(&q->mu);
  while (done) {
    pending *p = done;
    done = p->next;
    if (!e) e = finish_source(st, p);
    else mb_mesh_free(p->m);
    free(p);
  }
  return e;
}

/* The meshes read but not started (SIGTERM, or an error of the rank): as
 * if never taken, the last read first. */
static void drop_waiting(rank_state *st, mesh_pipe *q) {
  pthread_mutex_lock(&q->mu);
  pending *list = q->in, *rev = NULL;
  q->in = q->in_tail = NULL;
  q->nin = 0;
  pthread_mutex_unlock(&q->mu);
  while (list) {
    pending *p = list;
    list = p->next;
    p->next = rev;
    rev = p;
  }
  while (rev) {
    pending *p = rev;
    rev = p->next;
    drop_source(st, p);
    free(p);
  }
}

/* Read source s and hand it on: to the compute thread, or where there is
 * nothing to compute (resumed, or the read failed) straight to the write. */
static mb_error take_source(rank_state *st, mesh_pipe *q, int64_t s) {
  pending *p = calloc(1, sizeof *p);
  MB_CHECK(p, MB_ERR_MEMORY, "out of memory");
  mb_error e = begin_source(st, s, p);
  if (e || !p->compute) {
    if (!e) e = finish_source(st, p);
    else mb_mesh_free(p->m);
    free(p);
    MB_CALL(e);
    return MB_SUCCESS;
  }
  pthread_mutex_lock(&q->mu);
  queue_push(&q->in, &q->in_tail, p);
  q->nin++;
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
  return MB_SUCCESS;
}

/* The pipeline over this rank's sources (main thread): write what is
 * computed, read ahead while fewer than PIPE_AHEAD wait, else wait for a
 * compute to end. SIGTERM drops the meshes read but not started; an error
 * of the rank itself (not of a mesh) does too, and keeps nothing of the
 * compute in flight. */
static mb_error run_pipeline(rank_state *st, source_iter *it) {
  mesh_pipe q = {.st = st};
  pthread_mutex_init(&q.mu, NULL);
  pthread_cond_init(&q.cv, NULL);
  pthread_t thread;
  int rc = pthread_create(&thread, NULL, compute_thread, &q);
  if (rc) {
    pthread_mutex_destroy(&q.mu);
    pthread_cond_destroy(&q.cv);
    MB_FAIL(MB_ERR_MEMORY, "cannot start the compute thread: %s", strerror(rc));
  }
  mb_error e = MB_SUCCESS;
  int more = 1;
  for (;;) {
    e = finish_computed(st, &q, e);
    if (e || stop_requested) {
      more = 0;
      drop_waiting(st, &q);
    }
    pthread_mutex_lock(&q.mu);
    const int room = q.nin < PIPE_AHEAD, flight = q.nin + q.busy + (q.out != NULL);
    pthread_mutex_unlock(&q.mu);
    if (more && room) {
      int64_t s = -1;
      e = next_source(st, it, &s);
      if (!e && s >= 0) e = take_source(st, &q, s);
      more = !e && s >= 0;
      continue;
    }
    if (!more && !flight) break;
    pthread_mutex_lock(&q.mu);
    while (!q.out && (q.in || q.busy)) pthread_cond_wait(&q.cv, &q.mu);
    pthread_mutex_unlock(&q.mu);
  }
  pthread_mutex_lock(&q.mu);
  q.quit = 1;
  pthread_cond_broadcast(&q.cv);
  pthread_mutex_unlock(&q.mu);
  pthread_join(thread, NULL);
  pthread_mutex_destroy(&q.mu);
  pthread_cond_destroy(&q.cv);
  return e;
}

/* This rank's sources in turn: read, compute, write (the pipeline off). */
static mb_error run_in_turn(rank_state *st, source_iter *it) {
  for (;;) {
    int64_t s = -1;
    MB_CALL(next_source(st, it, &s));
    if (s < 0) return MB_SUCCESS;
    pending p;
    mb_error e = begin_source(st, s, &p);
    if (!e && p.compute) compute_pending(&p);
    if (!e) e = finish_source(st, &p);
    else mb_mesh_free(p.m);
    MB_CALL(e);
  }
}

static mb_error run_sources(rank_state *st, source_iter *it) {
  st->omp_threads = omp_get_max_threads();
  if (!pipeline_enabled(st)) return run_in_turn(st, it);
  if (st->rank == 0)
    mb_log(MB_LOG_VERBOSE, "per-mesh pipeline: each rank reads up to %d meshes ahead and writes "
           "the computed ones while the current one computes", PIPE_AHEAD);
  return run_pipeline(st, it);
}

static mb_error run_static(rank_state *st) {
  int64_t n = st->inputs->nsources;
  double *cost = malloc(sizeof *cost * (size_t)(n ? n : 1));
  int *owner = malloc(sizeof *owner * (size_t)(n ? n : 1));
  if (!cost || !owner) { free(cost); free(owner); MB_FAIL(MB_ERR_MEMORY, "out of memory"); }
  for (int64_t i = 0; i < n; i++) cost[i] = source_cost(st->job, st->inputs->sources[i].cost);
  mb_assign_lpt(n, cost, st->size, owner);
  source_iter it = {.n = n, .owner = owner};
  mb_error e = run_sources(st, &it);
  free(cost);
  free(owner);
  return e;
}

/* A work queue: rank 0 exposes a counter; every rank fetch-and-adds it to
 * take the next mesh in decreasing cost order until the queue is empty. */
static mb_error run_dynamic(rank_state *st) {
  int64_t n = st->inputs->nsources;
  double *cost = malloc(sizeof *cost * (size_t)(n ? n : 1));
  MB_CHECK(cost, MB_ERR_MEMORY, "out of memory");
  for (int64_t i = 0; i < n; i++) cost[i] = source_cost(st->job, st->inputs->sources[i].cost);
  cost_item *order = cost_order(n, cost);
  free(cost);
  MB_CHECK(order, MB_ERR_MEMORY, "out of memory");
  int64_t *counter = NULL;
  source_iter it = {.n = n, .order = order};
  MB_CALL_MPI(MPI_Win_allocate(st->rank == 0 ? (MPI_Aint)sizeof(int64_t) : 0, sizeof(int64_t),
                               MPI_INFO_NULL, st->comm, &counter, &it.win));
  /* a window does not inherit the communicator's handler (mb_mpi.h) */
  MB_CALL_MPI(MPI_Win_set_errhandler(it.win, MPI_ERRORS_RETURN));
  if (st->rank == 0) *counter = 0;
  MB_CALL_MPI(MPI_Barrier(st->comm));
  MB_CALL_MPI(MPI_Win_lock_all(0, it.win));
  mb_error e = run_sources(st, &it);
  MB_CALL_MPI(MPI_Win_unlock_all(it.win));
  MB_CALL_MPI(MPI_Win_free(&it.win));
  free(order);
  return e;
}

/* ------------------------------------------------------------- partitioned */

/* The deepest ghost rows (depth or width) any stage of the job reads. */
static int ghost_depth(const mb_job *job) {
  int depth = 1;
  for (int s = 0; s < job->nstages; s++)
    if (job->stages[s].op->ghost_depth > depth) depth = job->stages[s].op->ghost_depth;
  return depth;
}

/* Whether source s is a dataset of a collection (readable by slabs). */
static int from_collection(const rank_state *st, int64_t s) {
  return st->inputs->sources[s].collection >= 0;
}

/* The domain's reader (mb_domain_source): source s of the inputs. */
typedef struct source_reader {
  const rank_state *st;
  int64_t s;
} source_reader;

static mb_error read_whole(void *ctx, mb_mesh **m) {
  const source_reader *r = ctx;
  MB_CALL(mb_inputs_read(r->st->inputs, r->s, m));
  mb_error e = fit_kind(r->st, *m);
  if (e) {
    mb_mesh_free(*m);
    *m = NULL;
  }
  return e;
}

static mb_error read_info(void *ctx, mb_kind *kind, int64_t *nv, int64_t *nf, int64_t shape[3]) {
  const source_reader *r = ctx;
  const mb_job *job = r->st->job;
  const mb_source *src = &r->st->inputs->sources[r->s];
  MB_CHECK(!src->error[0], MB_ERR_IO, "%s", src->error);
  const mb_mesh_info *info = mb_collection_info(r->st->inputs->collections[src->collection],
                                                src->entry);
  MB_CHECK(info->kind == job->stages[0].op->in, MB_ERR_ARG,
           "%s:%d: stage 0 (%s) reads %s datasets, and %s is a %s dataset", job->path,
           job->stages[0].line, job->stages[0].op->name, mb_kind_name(job->stages[0].op->in),
           src->path, mb_kind_name(info->kind));
  *kind = info->kind;
  *nv = info->nv;
  *nf = info->nf;
  for (int a = 0; a < 3; a++) shape[a] = info->shape[a];
  return MB_SUCCESS;
}

static mb_error read_rows(void *ctx, int64_t v0, int64_t nvrows, int64_t f0, int64_t nfrows,
                          mb_mesh_slab *slab) {
  const source_reader *r = ctx;
  const mb_source *src = &r->st->inputs->sources[r->s];
  return mb_collection_read_slab(r->st->inputs->collections[src->collection], src->entry, v0,
                                 nvrows, f0, nfrows, slab);
}

static mb_error read_block(void *ctx, const int64_t lo[3], const int64_t n[3],
                           mb_mesh_slab *slab) {
  const source_reader *r = ctx;
  const mb_source *src = &r->st->inputs->sources[r->s];
  return mb_collection_read_grid_block(r->st->inputs->collections[src->collection], src->entry,
                                       lo, n, slab);
}

/* One dataset split over all ranks: the domain of the first stage's split
 * (partition/mb_domain.h), the stages on it, and this rank's rows of the
 * result in *slab for the collective write. Collective; errors agreed. */
static mb_error process_partitioned(rank_state *st, int64_t s, mb_mesh_slab *slab,
                                    mb_pass_timing *t) {
  const mb_job *job = st->job;
  source_reader reader = {.st = st, .s = s};
  const mb_domain_source src = {.ctx = &reader, .by_rows = from_collection(st, s),
                                .name = st->inputs->sources[s].path, .read_whole = read_whole,
                                .read_info = read_info, .read_rows = read_rows,
                                .read_block = read_block};
  const mb_domain_spec spec = {.split = mb_op_partitioned(job->stages[0].op),
                               .depth = ghost_depth(job), .partitioner = job->partitioner,
                               .partition_file = job->partition};
  mb_domain *d = NULL;
  MB_CALL(mb_domain_create(st->comm, &spec, &src, &d));
  d->slab.rows->index = s;
  const mb_op_ctx ctx = {.backend = &st->backend, .precision = job->precision, .halo = job->halo,
                         .timing = t, .computed = &st->computed};
  mb_error e = run_stages(st, &ctx, NULL, d);
  if (!e) e = mb_domain_finish(d);
  if (!e) {
    mb_domain_take_slab(d, slab);
    e = mb_domain_report(d, slab->rows->name, t, st->backend.kind == MB_BACKEND_CUDA);
  }
  mb_domain_free(d);
  return e;
}

/* Keep a processed slab for the collective write. */
static mb_error keep_slab(rank_state *st, mb_mesh_slab *slab) {
  mb_mesh_slab *k = realloc(st->slabs, sizeof *k * (size_t)(st->nslabs + 1));
  MB_CHECK(k, MB_ERR_MEMORY, "out of memory");
  st->slabs = k;
  st->slabs[st->nslabs++] = *slab;
  *slab = (mb_mesh_slab){0};
  return MB_SUCCESS;
}

/* This rank's slab of a checkpointed mesh, read back from ck: a block of
 * a grid, else even blocks of vertex and
 * face rows. Collective (it opens the file on every rank). */
static mb_error read_checkpoint_slab(const rank_state *st, const char *ck, int64_t s,
                                     mb_mesh_slab *slab) {
  mb_collection *c = NULL;
  MB_CALL(open_checkpoint_mesh(st->comm, ck, &c));
  const mb_mesh_info *in = mb_collection_info(c, 0);
  int64_t lo[3], n[3], v0, nv, f0, nf;
  mb_error e = mb_domain_rows(st->comm, in->kind, in->nv, in->nf, in->shape, lo, n, &v0, &nv,
                              &f0, &nf);
  if (!e)
    e = in->kind == MB_KIND_GRID3D ? mb_collection_read_grid_block(c, 0, lo, n, slab)
                                   : mb_collection_read_slab(c, 0, v0, nv, f0, nf, slab);
  mb_collection_close(c);
  MB_CALL(e);
  slab->rows->index = s;
  return MB_SUCCESS;
}

static mb_error run_partitioned(rank_state *st) {
  for (int64_t s = 0; s < st->inputs->nsources; s++) {
    mesh_result res = {.index = s, .rank = 0};
    snprintf(res.backend, sizeof res.backend, "%s/%d",
             st->backend.kind == MB_BACKEND_CUDA ? "cuda" : "cpu", st->size);
    mb_mesh_slab slab = {0};
    double t0 = mb_wtime();
    mb_pass_timing t = {0};
    char ck[4400];
    checkpoint_path(st, s, ck, sizeof ck);
    int from_ckpt = st->job->resume && ck[0] && access(ck, F_OK) == 0;
    MB_CALL(mb_all_min_int(st->comm, &from_ckpt)); /* the same choice on every rank */
    if (from_ckpt) { /* finished before: this rank's slab of it, read back */
      mb_error e = mb_agree(st->comm, read_checkpoint_slab(st, ck, s, &slab));
      if (!e) e = keep_slab(st, &slab);
      MB_CALL(e);
      res.ok = 1;
      res.nv = slab.nv;
      res.nf = slab.nf;
      snprintf(res.backend, sizeof res.backend, "resumed");
      st->resumed += st->rank == 0;
      if (st->rank == 0) {
        mesh_result *r = realloc(st->results, sizeof *r * (size_t)(st->nresults + 1));
        MB_CHECK(r, MB_ERR_MEMORY, "out of memory");
        st->results = r;
        st->results[st->nresults++] = res;
        mb_log(MB_LOG_NORMAL, "[rank 0] %s: from the checkpoint (%s)", st->inputs->sources[s].name,
               ck);
      }
      continue;
    }
    int stop = stop_requested; /* every rank stops before the same mesh */
    MB_CALL(mb_all_max_int(st->comm, &stop));
    if (stop) break;
    st->computed = 0;
    mb_error e = process_partitioned(st, s, &slab, &t);
    res.seconds = mb_wtime() - t0;
    res.ok = !e;
    if (!e) {
      res.nv = slab.nv;
      res.nf = slab.nf;
      e = mb_agree(st->comm, add_provenance(st, slab.rows, res.seconds, st->computed));
      if (!e && ck[0]) /* every rank's slab, one collective write, renamed into place */
        e = mb_agree(st->comm, mb_collection_write_durable(st->comm, ck, 0, NULL, 1, &slab));
      if (!e) e = keep_slab(st, &slab);
      res.ok = !e; /* a failure after the compute (agreed) fails the mesh too */
    }
    if (e) snprintf(res.message, sizeof res.message, "%s", mb_error_message());
    if (st->rank == 0) {
      mesh_result *r = realloc(st->results, sizeof *r * (size_t)(st->nresults + 1));
      MB_CHECK(r, MB_ERR_MEMORY, "out of memory");
      st->results = r;
      st->results[st->nresults++] = res;
      if (res.ok)
        mb_log(MB_LOG_NORMAL, "[%d ranks] %s: %lld vertices, %lld faces, %s, %.3f s "
               "(%.3f ms/pass compute, %.3f ms/pass exchange on rank 0)", st->size,
               st->inputs->sources[s].name, (long long)res.nv, (long long)res.nf, res.backend,
               res.seconds,
               t.passes ? 1e3 * t.compute_s / t.passes : 0, t.passes ? 1e3 * t.exchange_s / t.passes : 0);
      else
        mb_log_error("%s: skipped: %s", st->inputs->sources[s].name, res.message);
    }
    mb_mesh_free(slab.rows);
    st->busy_s += mb_wtime() - t0;
    inject_fault(st->rank, st->nslabs);
  }
  return MB_SUCCESS;
}

/* ------------------------------------------------------------- reporting */

static mb_error gather_results(rank_state *st, mesh_result **all, int *nall) {
  int *counts = NULL, *displs = NULL;
  int mine = st->nresults * (int)sizeof(mesh_result);
  if (st->rank == 0) {
    counts = calloc((size_t)st->size, sizeof *counts);
    displs = calloc((size_t)st->size, sizeof *displs);
    MB_CHECK(counts && displs, MB_ERR_MEMORY, "out of memory");
  }
  MB_CALL_MPI_AGREED(st->comm, MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, st->comm));
  int total = 0;
  if (st->rank == 0)
    for (int r = 0; r < st->size; r++) {
      displs[r] = total;
      total += counts[r];
    }
  *nall = total / (int)sizeof(mesh_result);
  *all = st->rank == 0 ? malloc((size_t)(total ? total : 1)) : NULL;
  MB_CHECK(st->rank != 0 || *all, MB_ERR_MEMORY, "out of memory");
  MB_CALL_MPI_AGREED(st->comm, MPI_Gatherv(st->results, mine, MPI_BYTE, *all, counts, displs,
                                           MPI_BYTE, 0, st->comm));
  free(counts);
  free(displs);
  return MB_SUCCESS;
}

static int by_index(const void *x, const void *y) {
  const mesh_result *a = x, *b = y;
  return (a->index > b->index) - (a->index < b->index);
}

static void print_summary(const rank_state *st, mesh_result *all, int nall,
                          const mb_run_summary *sum) {
  qsort(all, (size_t)nall, sizeof *all, by_index);
  mb_log(MB_LOG_NORMAL, "\n%-24s %5s %10s %10s %-8s %9s  %s", "mesh", "rank", "vertices",
         "faces", "backend", "time [s]", "status");
  for (int k = 0; k < nall; k++) {
    const mesh_result *r = &all[k];
    mb_log(MB_LOG_NORMAL, "%-24s %5d %10lld %10lld %-8s %9.3f  %s",
           st->inputs->sources[r->index].name, r->rank, (long long)r->nv, (long long)r->nf,
           r->backend, r->seconds, r->ok ? "ok" : "FAILED");
  }
  mb_log(MB_LOG_NORMAL, "\n%lld meshes, %lld written, %lld failed; wall %.3f s; rank busy "
         "time max %.3f s, mean %.3f s (max/mean %.2f)", (long long)sum->nmeshes,
         (long long)(sum->nmeshes - sum->nfailed), (long long)sum->nfailed, sum->wall_s,
         sum->busy_max_s, sum->busy_mean_s,
         sum->busy_mean_s > 0 ? sum->busy_max_s / sum->busy_mean_s : 1.0);
  for (int k = 0; k < nall; k++)
    if (!all[k].ok)
      mb_log_error("%s (%s): %s", st->inputs->sources[all[k].index].name,
                   st->inputs->sources[all[k].index].path, all[k].message);
}

/* ------------------------------------------------------------- the run */

/* mkdir -p of the folder that will hold path (rank 0). */
static mb_error make_parent_folder(const char *path) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash || slash == dir) return MB_SUCCESS;
  *slash = '\0';
  for (char *p = dir + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      MB_CHECK(mkdir(dir, 0777) == 0 || errno == EEXIST, MB_ERR_IO, "cannot create folder %s: %s",
               dir, strerror(errno));
      *p = '/';
    }
  MB_CHECK(mkdir(dir, 0777) == 0 || errno == EEXIST, MB_ERR_IO, "cannot create folder %s: %s",
           dir, strerror(errno));
  return MB_SUCCESS;
}

/* The folder of output into dir[len] ("." for a bare name); returns the
 * file name part of output. */
static const char *output_folder(const char *output, char *dir, size_t len) {
  snprintf(dir, len, "%s", output);
  char *slash = strrchr(dir, '/');
  const char *base = slash ? output + (slash - dir) + 1 : output;
  if (slash) slash[slash == dir] = '\0'; else snprintf(dir, len, ".");
  return base;
}

/* Every file name the output will need fits its folder's limit (NAME_MAX):
 * OUTPUT's own temporary name and, for each mesh, OUTPUT_STEM.MESH.xdmf
 * under its temporary name (docs/format.md, "XDMF companions"). */
static mb_error check_output_names(const char *output, const mb_inputs *in) {
  char dir[4096];
  const char *base = output_folder(output, dir, sizeof dir);
  long max = pathconf(dir, _PC_NAME_MAX);
  if (max <= 0) max = 255;
  const size_t tmp = strlen(".tmp-") + 20; /* the temporary suffix: .tmp-PID */
  const size_t stem = mb_collection_stem_length(base);
  MB_CHECK(strlen(base) + tmp <= (size_t)max, MB_ERR_ARG,
           "the output name %s is too long: with its temporary suffix it passes the %ld "
           "bytes the folder allows in a file name", base, max);
  for (int64_t k = 0; k < in->nsources; k++) {
    const size_t need = stem + 1 + strlen(in->sources[k].name) + strlen(".xdmf") + tmp;
    MB_CHECK(need <= (size_t)max, MB_ERR_ARG,
             "mesh '%s' (%s): its XDMF file %.*s.%s.xdmf would need %zu bytes of file name, the "
             "folder allows %ld: rename the mesh or shorten the output name",
             in->sources[k].name, in->sources[k].path, (int)stem, base, in->sources[k].name,
             need, max);
  }
  return MB_SUCCESS;
}

/* Before any work (rank 0): the output is a file name, not a folder; the
 * names it needs fit the folder; it is none of the inputs (compared by
 * device and inode, so links and ./ spellings count); and its folder takes
 * a new file (a probe created and removed). */
static mb_error check_output(const char *output, const mb_inputs *in) {
  struct stat so;
  const size_t len = strlen(output);
  MB_CHECK(len > 0 && output[len - 1] != '/' && (stat(output, &so) != 0 || !S_ISDIR(so.st_mode)),
           MB_ERR_ARG, "the output %s is a folder: give the file to write, e.g. %s%sout.h5",
           output, output, len && output[len - 1] == '/' ? "" : "/");
  MB_CALL(check_output_names(output, in));
  if (stat(output, &so) == 0)
    for (int64_t k = 0; k < in->nsources; k++) {
      struct stat si;
      MB_CHECK(stat(in->sources[k].path, &si) != 0 || si.st_dev != so.st_dev ||
                   si.st_ino != so.st_ino,
               MB_ERR_ARG,
               "the output %s is the input %s: the run would replace its own input; choose "
               "another output", output, in->sources[k].path);
    }
  char probe[4200];
  snprintf(probe, sizeof probe, "%s.probe-%ld", output, (long)getpid());
  int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0644);
  MB_CHECK(fd >= 0, MB_ERR_IO, "cannot write the output %s: %s (nothing was computed)", output,
           strerror(errno));
  close(fd);
  unlink(probe);
  return MB_SUCCESS;
}

/* FNV-1a of the job file and the list of sources: what a checkpoint must
 * have been made by to be resumed. */
static uint64_t job_fingerprint(const rank_state *st) {
  uint64_t h = 1469598103934665603ull;
  FILE *f = fopen(st->job->path, "rb");
  for (int c; f && (c = fgetc(f)) != EOF;) h = (h ^ (uint64_t)(unsigned char)c) * 1099511628211ull;
  if (f) fclose(f);
  for (int64_t k = 0; k < st->inputs->nsources; k++)
    for (const char *p = st->inputs->sources[k].path; *p; p++)
      h = (h ^ (uint64_t)(unsigned char)*p) * 1099511628211ull;
  return h;
}

/* Remove the files of a folder (a checkpoint holds no subfolder). */
static void clear_folder(const char *dir) {
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));)
    if (e->d_name[0] != '.') {
      char q[4600];
      snprintf(q, sizeof q, "%s/%s", dir, e->d_name);
      unlink(q);
    }
  if (d) closedir(d);
}

/* Rank 0: the checkpoint folder OUTPUT.ckpt. Without --resume any earlier
 * one is emptied; with it, its fingerprint must be this job's. */
static mb_error open_checkpoint(const rank_state *st, const char *dir) {
  char id[4400], want[64], have[64] = "";
  snprintf(id, sizeof id, "%s/job.id", dir);
  snprintf(want, sizeof want, "%016llx", (unsigned long long)job_fingerprint(st));
  FILE *f = fopen(id, "r");
  if (f) {
    if (!fgets(have, sizeof have, f)) have[0] = '\0';
    fclose(f);
    have[strcspn(have, "\n")] = '\0';
  }
  if (st->job->resume && f)
    MB_CHECK(!strcmp(have, want), MB_ERR_ARG,
             "%s was made by another job or other inputs (fingerprint %s, this job %s): remove "
             "it, or run without --resume to start again", dir, have, want);
  if (st->job->resume && !f)
    mb_log(MB_LOG_NORMAL, "resume: no checkpoint at %s: every mesh is computed", dir);
  if (!st->job->resume) clear_folder(dir); /* a fresh start: no stale mesh may be taken later */
  MB_CHECK(mkdir(dir, 0777) == 0 || errno == EEXIST, MB_ERR_IO, "cannot create %s: %s", dir,
           strerror(errno));
  f = fopen(id, "w");
  MB_CHECK(f && fprintf(f, "%s\n", want) > 0 && fclose(f) == 0, MB_ERR_IO,
           "cannot write %s: %s", id, strerror(errno));
  return MB_SUCCESS;
}

/* Rank 0, after the output is written: the checkpoint is no longer needed. */
static void remove_checkpoint(const char *dir) {
  clear_folder(dir);
  rmdir(dir);
}

/* Rank 0: OUTPUT.lock, created exclusively, says which run writes OUTPUT
 * ("HOST PID"). A lock of a process that no longer runs on this host is
 * stale and taken over; any other refuses the run. Removed at the end. */
static mb_error take_lock(const char *output) {
  char lock[4200], host[256] = "", line[512] = "";
  snprintf(lock, sizeof lock, "%s.lock", output);
  gethostname(host, sizeof host - 1);
  for (int attempt = 0; attempt < 2; attempt++) {
    int fd = open(lock, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0) {
      char mine[400];
      int n = snprintf(mine, sizeof mine, "%s %ld\n", host, (long)getpid());
      const int ok = write(fd, mine, (size_t)n) == n;
      close(fd);
      MB_CHECK(ok, MB_ERR_IO, "cannot write %s: %s", lock, strerror(errno));
      return MB_SUCCESS;
    }
    MB_CHECK(errno == EEXIST, MB_ERR_IO, "cannot create %s: %s (nothing was computed)", lock,
             strerror(errno));
    FILE *f = fopen(lock, "r");
    if (f) {
      if (!fgets(line, sizeof line, f)) line[0] = '\0';
      fclose(f);
    }
    char other[256] = "";
    long pid = 0;
    const int parsed = sscanf(line, "%255s %ld", other, &pid) == 2;
    const int stale = parsed && !strcmp(other, host) && pid > 0 && kill((pid_t)pid, 0) != 0 &&
                      errno == ESRCH;
    MB_CHECK(stale, MB_ERR_IO,
             "%s is being written by another run (%s: host and process id); wait for it, "
             "choose another output, or remove %s if that run is gone",
             output, parsed ? line : "unreadable lock", lock);
    mb_log(MB_LOG_NORMAL, "taking over %s of a run that is gone (%s %ld)", lock, other, pid);
    unlink(lock);
  }
  MB_FAIL(MB_ERR_IO, "cannot take %s", lock);
}

/* Rank 0, holding OUTPUT.lock: remove the OUTPUT.tmp-PID files that runs
 * killed while writing left (a run writing mesh by mesh holds its file
 * from the start); no live run can own one, as each holds the lock. */
static void remove_stale_temporaries(const char *output) {
  char dir[4200];
  const char *base = output_folder(output, dir, sizeof dir);
  char prefix[4300];
  snprintf(prefix, sizeof prefix, "%s.tmp-", base);
  const size_t np = strlen(prefix);
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    const char *tail = e->d_name + np;
    if (strncmp(e->d_name, prefix, np) || !*tail || strspn(tail, "0123456789") != strlen(tail))
      continue;
    char q[4600];
    snprintf(q, sizeof q, "%s/%s", dir, e->d_name);
    if (unlink(q) == 0)
      mb_log(MB_LOG_NORMAL, "removed %s, left by an earlier run that was stopped", q);
  }
  if (d) closedir(d);
}

static void drop_lock(const char *output) {
  char lock[4200];
  snprintf(lock, sizeof lock, "%s.lock", output);
  unlink(lock);
}

/* Whether the output is written mesh by mesh as the meshes finish (inside
 * the per-mesh pipeline) rather than once, collectively, at the end: on
 * one rank, per mesh, unless MESHBATCH_WRITE=end. Over several ranks the
 * file's groups and datasets are created collectively (parallel HDF5),
 * which needs every rank's meshes at once. */
static int writes_per_mesh(const rank_state *st) {
  if (st->size != 1 || st->job->distribute == MB_DISTRIBUTE_PARTITIONED) return 0;
  const char *e = getenv("MESHBATCH_WRITE");
  return !(e && !strcmp(e, "end"));
}

/* The bytes the output will take, as far as the inputs tell before any
 * work: the vertices and face indices of every collection dataset at 8
 * bytes a value, a mesh file's own size; stages that add fields or faces
 * make it larger. Used to refuse a disk without room before starting. */
static double expected_output_bytes(const mb_inputs *in) {
  double bytes = 0;
  for (int64_t k = 0; k < in->nsources; k++) {
    const mb_source *src = &in->sources[k];
    const mb_collection *c = src->collection >= 0 ? in->collections[src->collection] : NULL;
    const mb_mesh_info *info = c ? mb_collection_info(c, src->entry) : NULL;
    struct stat sb;
    if (info)
      bytes += 8.0 * (3.0 * (double)info->nv + (double)info->nidx +
                      (info->triangles ? 0.0 : (double)info->nf + 1.0));
    else if (src->collection < 0 && stat(src->path, &sb) == 0)
      bytes += (double)sb.st_size;
  }
  return bytes;
}

static mb_error setup(rank_state *st) {
  int local_rank;
  MB_CALL(mb_local_rank(st->comm, &local_rank));
  char why[600] = "";
  mb_error e = mb_backend_choose(st->job->backend, local_rank, &st->backend, why, sizeof why);
  MB_CALL(mb_agree(st->comm, e));
  mb_log(st->rank == 0 ? MB_LOG_NORMAL : MB_LOG_VERBOSE, "[rank %d] backend %s: %s", st->rank,
         st->backend.description, why);
  e = mb_inputs_open(st->comm, st->job->ninputs, st->job->inputs, &st->inputs);
  MB_CALL(mb_agree(st->comm, e));
  e = st->rank == 0 ? make_parent_folder(st->job->output) : MB_SUCCESS;
  if (!e && st->rank == 0) e = check_output(st->job->output, st->inputs);
  if (!e && st->rank == 0) e = take_lock(st->job->output);
  if (!e) st->locked = st->rank == 0;
  if (st->locked) remove_stale_temporaries(st->job->output);
  MB_CALL(mb_agree(st->comm, e));
  if (st->job->checkpoint || st->job->resume) {
    snprintf(st->ckpt, sizeof st->ckpt, "%s.ckpt", st->job->output);
    e = st->rank == 0 ? open_checkpoint(st, st->ckpt) : MB_SUCCESS;
    MB_CALL(mb_agree(st->comm, e));
  }
  if (writes_per_mesh(st))
    MB_CALL(mb_collection_writer_begin(st->job->output, expected_output_bytes(st->inputs),
                                       st->job->sync,
                                       &st->out));
  return MB_SUCCESS;
}

/* --timings (after PETSc's -log_view): where the run's time went, summed
 * over meshes, the slowest rank's and the mean; peak host memory per rank
 * (getrusage). Collective; rank 0 prints. */
static mb_error print_timings(const rank_state *st, const mb_run_summary *sum) {
  double read = 0, total = 0;
  for (int i = 0; i < st->nresults; i++) {
    read += st->results[i].read_s;
    total += st->results[i].seconds;
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  enum { N = 7 };
  double mine[N] = {st->setup_s, read, total - read, st->put_s, st->write_s, sum->wall_s,
                    (double)ru.ru_maxrss * 1024.0}, mx[N], mean[N];
  MB_CALL_MPI_AGREED(st->comm, MPI_Reduce(mine, mx, N, MPI_DOUBLE, MPI_MAX, 0, st->comm));
  MB_CALL_MPI_AGREED(st->comm, MPI_Reduce(mine, mean, N, MPI_DOUBLE, MPI_SUM, 0, st->comm));
  if (st->rank != 0) return MB_SUCCESS;
  static const char *const what[N] = {"setup (backend, inputs)", "read", "compute (setup + stages)",
                                      "write (per mesh)", "write (end)", "wall",
                                      "peak host memory"};
  mb_log(MB_LOG_NORMAL, "\ntimings, %d rank%s:%28s %12s", st->size, st->size == 1 ? " " : "s", "max",
         "mean");
  for (int k = 0; k < N; k++) {
    if (k == N - 1)
      mb_log(MB_LOG_NORMAL, "  %-36s %9.1f MB %9.1f MB", what[k], mx[k] / 1e6, mean[k] / st->size / 1e6);
    else
      mb_log(MB_LOG_NORMAL, "  %-36s %10.3f s %10.3f s", what[k], mx[k], mean[k] / st->size);
  }
  return MB_SUCCESS;
}

/* The GPU busy fraction of a per-mesh run on the CUDA backend (rank 0
 * prints it): the device seconds the ops reported (st->device_s) over the
 * seconds every rank spent in its schedule (schedule_s), summed over
 * ranks, and the least and most busy rank. Collective over st->comm. */
static mb_error report_device_busy(rank_state *st, double schedule_s, mb_run_summary *sum) {
  sum->device_busy = sum->device_busy_wall = -1;
  if (st->job->distribute == MB_DISTRIBUTE_PARTITIONED) return MB_SUCCESS;
  int cuda = st->backend.kind == MB_BACKEND_CUDA;
  MB_CALL_MPI_AGREED(st->comm, MPI_Allreduce(MPI_IN_PLACE, &cuda, 1, MPI_INT, MPI_MIN, st->comm));
  if (!cuda) return MB_SUCCESS;
  const double mine[2] = {schedule_s, st->device_s};
  double total[2], busy = schedule_s > 0 ? st->device_s / schedule_s : 0, lo, hi;
  MB_CALL_MPI_AGREED(st->comm, MPI_Allreduce(mine, total, 2, MPI_DOUBLE, MPI_SUM, st->comm));
  MB_CALL_MPI_AGREED(st->comm, MPI_Allreduce(&busy, &lo, 1, MPI_DOUBLE, MPI_MIN, st->comm));
  MB_CALL_MPI_AGREED(st->comm, MPI_Allreduce(&busy, &hi, 1, MPI_DOUBLE, MPI_MAX, st->comm));
  sum->device_busy = total[0] > 0 ? total[1] / total[0] : 0;
  st->device_total_s = total[1];
  if (st->rank == 0)
    mb_log(MB_LOG_NORMAL, "GPU busy: %.1f %% of the time on meshes (%.3f s of %.3f s, over %d "
           "rank%s; least busy rank %.1f %%, most %.1f %%)%s", 100 * sum->device_busy, total[1],
           total[0], st->size, st->size == 1 ? "" : "s", 100 * lo, 100 * hi,
           pipeline_enabled(st) ? "" : "; MESHBATCH_PIPELINE=0: read, compute and write in turn");
  return MB_SUCCESS;
}

static mb_error run(rank_state *st, mb_run_summary *sum) {
  double t0 = mb_wtime();
  stop_requested = 0;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigterm;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  MB_CALL(setup(st));
  st->setup_s = mb_wtime() - t0;
  if (st->rank == 0)
    mb_log(MB_LOG_NORMAL, "meshbatch %s: %lld meshes on %d rank%s, %s", MESHBATCH_VERSION,
           (long long)st->inputs->nsources, st->size, st->size == 1 ? "" : "s",
           st->job->distribute == MB_DISTRIBUTE_PARTITIONED ? "partitioned (every mesh split over all ranks)"
           : st->job->schedule == MB_SCHEDULE_DYNAMIC       ? "per-mesh, dynamic schedule"
                                                            : "per-mesh, static cost-balanced schedule");
  const double tl = mb_wtime();
  mb_error e = st->job->distribute == MB_DISTRIBUTE_PARTITIONED ? run_partitioned(st)
               : st->job->schedule == MB_SCHEDULE_DYNAMIC   ? run_dynamic(st)
                                                            : run_static(st);
  const double schedule_s = mb_wtime() - tl;
  MB_CALL(mb_agree(st->comm, e));
  MB_CALL(report_device_busy(st, schedule_s, sum));
  int stopped = stop_requested;
  MB_CALL_MPI_AGREED(st->comm, MPI_Allreduce(MPI_IN_PLACE, &stopped, 1, MPI_INT, MPI_MAX, st->comm));
  /* meshes finished: per mesh, whole meshes over the ranks; partitioned,
   * the slabs every rank holds of each finished mesh */
  int64_t kept = st->nkept + mb_collection_writer_count(st->out);
  MB_CALL_MPI_AGREED(st->comm, MPI_Allreduce(MPI_IN_PLACE, &kept, 1, MPI_INT64_T, MPI_SUM, st->comm));
  if (st->job->distribute == MB_DISTRIBUTE_PARTITIONED) kept = st->nslabs;
  if (stopped) /* SIGTERM: no output that could pass for a finished one */
    MB_FAIL(MB_ERR_IO, "stopped by SIGTERM with %lld of %lld meshes finished; %s",
            (long long)kept, (long long)st->inputs->nsources,
            st->ckpt[0] ? "they are kept in the checkpoint: run the same command with --resume"
                        : "nothing was written (run with --checkpoint to keep finished meshes)");
  const int nothing = kept == 0 && st->inputs->nsources > 0;
  const double tw = mb_wtime();
  if (!nothing && st->out) { /* written mesh by mesh: number, publish */
    e = mb_collection_writer_finish(st->out);
    st->out = NULL;
    MB_CALL(mb_agree(st->comm, e));
  } else if (!nothing) { /* a job in which every mesh failed leaves any earlier output as it was */
    e = (st->job->sync ? mb_collection_write_durable : mb_collection_write_slabs)(
        st->comm, st->job->output, st->nkept, st->kept, st->nslabs, st->slabs);
    MB_CALL(mb_agree(st->comm, e));
  }
  st->write_s = mb_wtime() - tw;
  if (st->ckpt[0] && st->rank == 0 && !nothing) remove_checkpoint(st->ckpt);
  int64_t resumed = st->resumed;
  MB_CALL_MPI_AGREED(st->comm, MPI_Allreduce(MPI_IN_PLACE, &resumed, 1, MPI_INT64_T, MPI_SUM, st->comm));
  if (st->job->resume && st->rank == 0)
    mb_log(MB_LOG_NORMAL, "resume: %lld meshes taken from the checkpoint, %lld computed",
           (long long)resumed, (long long)(st->inputs->nsources - resumed));

  int64_t failed = 0;
  for (int i = 0; i < st->nresults; i++) failed += !st->results[i].ok;
  MB_CALL_MPI_AGREED(st->comm, MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT64_T, MPI_SUM, st->comm));
  double busy_sum = 0;
  MB_CALL_MPI_AGREED(st->comm, MPI_Allreduce(&st->busy_s, &sum->busy_max_s, 1, MPI_DOUBLE, MPI_MAX, st->comm));
  MB_CALL_MPI_AGREED(st->comm, MPI_Allreduce(&st->busy_s, &busy_sum, 1, MPI_DOUBLE, MPI_SUM, st->comm));
  sum->nmeshes = st->inputs->nsources;
  sum->nfailed = failed;
  sum->busy_mean_s = busy_sum / st->size;
  sum->wall_s = mb_wtime() - t0;
  if (sum->device_busy >= 0) {
    sum->device_busy_wall = sum->wall_s > 0 ? st->device_total_s / (sum->wall_s * st->size) : 0;
    if (st->rank == 0)
      mb_log(MB_LOG_NORMAL, "GPU busy: %.1f %% of the run's wall (%.3f s of %.3f s on each of %d "
             "rank%s: setup, meshes and the output)", 100 * sum->device_busy_wall,
             st->device_total_s / st->size, sum->wall_s, st->size, st->size == 1 ? "" : "s");
  }

  mesh_result *all = NULL;
  int nall = 0;
  MB_CALL(gather_results(st, &all, &nall));
  if (st->rank == 0) {
    print_summary(st, all, nall, sum);
    if (nothing)
      mb_log(MB_LOG_NORMAL, "output: none written, as no mesh succeeded; %s",
             access(st->job->output, F_OK) == 0 ? "the earlier output there is left as it was"
                                                : "nothing was created");
    else
      mb_log(MB_LOG_NORMAL, "output: %s (in ParaView: paraview %.*s.xdmf)", st->job->output,
             (int)mb_collection_stem_length(st->job->output), st->job->output);
  }
  free(all);
  if (st->job->timings) MB_CALL(print_timings(st, sum));
  return MB_SUCCESS;
}

/* Run a job (or an import plan) and free the rank's state. */
static mb_error run_state(rank_state *st, mb_run_summary *summary) {
  MB_CALL_MPI(MPI_Comm_rank(st->comm, &st->rank));
  MB_CALL_MPI(MPI_Comm_size(st->comm, &st->size));
  memset(summary, 0, sizeof *summary);
  mb_error e = run(st, summary);
  mb_collection_writer_abort(st->out); /* not published: stopped, failed, or no mesh finished */
  st->out = NULL;
  if (st->locked) drop_lock(st->job->output);
  for (int i = 0; i < st->nkept; i++) mb_mesh_free(st->kept[i]);
  free(st->kept);
  for (int i = 0; i < st->nslabs; i++) mb_mesh_free(st->slabs[i].rows);
  free(st->slabs);
  free(st->results);
  mb_error ec = mb_inputs_close(st->inputs);
  MB_CALL(e);
  MB_CALL(ec);
  return MB_SUCCESS;
}

mb_error mb_run_job(MPI_Comm comm, const mb_job *job, mb_run_summary *summary) {
  rank_state st = {.comm = comm, .job = job};
  MB_CALL(run_state(&st, summary));
  return MB_SUCCESS;
}

mb_error mb_run_import(MPI_Comm comm, int ninputs, char **inputs, const char *output,
                       mb_kind kind, mb_run_summary *summary) {
  /* The per-mesh schedule and the collective write, with no stages. */
  const mb_job plan = {.path = "import", .ninputs = ninputs, .inputs = inputs,
                       .output = (char *)output, .backend = MB_BACKEND_CPU};
  rank_state st = {.comm = comm, .job = &plan, .import_kind = kind};
  MB_CALL(run_state(&st, summary));
  return MB_SUCCESS;
}
