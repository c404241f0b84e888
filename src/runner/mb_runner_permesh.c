/* meshbatch: the runner's per-mesh distribution (see mb_runner.h): the
 * assignment of datasets to ranks (LPT, static and dynamic schedules) and
 * the pipeline of each rank (read ahead, compute thread, write). */
#include "mb_runner_private.h"

#include <omp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mb_collection.h"
#include "mb_cuda.h"
#include "mb_log.h"
#include "mb_meshfile.h"
#include "mb_mpi.h"

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

/* LPT with the writer rank's share: every item placed on a rank other than
 * 0 also adds writer_cost to rank 0's load (the metadata rank 0 makes for
 * it), so rank 0 takes less compute in proportion. writer_cost 0: plain LPT. */
static void assign_lpt_writer(int64_t n, const double *cost, int nranks, double writer_cost,
                              int *owner) {
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
    if (best != 0) load[0] += writer_cost;
  }
  free(items);
  free(load);
}

void mb_assign_lpt(int64_t n, const double *cost, int nranks, int *owner) {
  assign_lpt_writer(n, cost, nranks, 0.0, owner);
}

/* Estimated work of a source: its size (I/O) plus every stage's cost. */
static double source_cost(const mb_job *job, double size) {
  double c = size;
  for (int s = 0; s < job->nstages; s++)
    c += job->stages[s].op->cost(0, (int64_t)size, job->stages[s].params);
  return c;
}

/* ------------------------------------------------------------- per-mesh pipeline */

/* A per-mesh run is a pipeline of three stages per rank: a compute thread
 * takes the meshes the main thread has read, in turn, and runs their
 * stages (on the GPU, or the CPU's OpenMP threads); meanwhile the rank's
 * main thread reads up to PIPE_AHEAD meshes ahead and writes the meshes
 * computed (checkpoint, output), so that the device is busy while the disk
 * works, and a large read or write beside a small compute does not stall
 * it. Where the job's first stage has a prepare on the backend
 * (mb_op_info.prepare: host setup, such as deform's system), a fourth
 * stage sits between the read and the compute: preparing threads
 * (MESHBATCH_PREPARE_THREADS, default 2) run it on the meshes read, while
 * the compute thread runs the mesh before, so that the device does not
 * wait for the host's setup; the compute still takes the meshes in the
 * order read. The main thread does all HDF5 and MPI calls (the MPI library is
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
  double t0, compute_s, device_s, copy_s;
  unsigned computed;  /* the precisions its stages computed in */
  mb_op_stop stop;    /* the stop query of its stages (mb_op_should_stop) */
  void *prepared;     /* the first stage's prepare's result (NULL: none), for its run */
  int prep;           /* in the pipeline's queue: 0 to prepare, 1 being prepared, 2 ready */
  int stopped;        /* 1: a signal stopped its stages in the middle (not finished) */
  struct pending *next; /* in a queue of the pipeline */
} pending;

int runner_pipeline_enabled(const rank_state *st) {
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
  runner_stop_init(st, &p->stop, MPI_COMM_NULL, st->inputs->sources[p->s].name);
  const mb_op_ctx ctx = {.backend = &st->backend, .precision = st->job->precision,
                         .halo = st->job->halo, .device_s = &p->device_s,
                         .copy_s = &p->copy_s,
                         .computed = &p->computed, .stop = &p->stop, .prepared = p->prepared};
  p->prepared = NULL; /* runner_run_stages consumes it */
  if (!e) e = runner_run_stages(st, &ctx, &p->m, NULL);
  else runner_prepared_free(st, ctx.prepared);
  p->stopped = e && p->stop.stopped; /* dropped by finish_source, not a failure */
  p->compute_s = mb_wtime() - t0;
  if (!e) e = runner_add_provenance(st, p->m, mb_wtime() - p->t0, p->computed);
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
  if (st->job->resume && runner_checkpoint_take(st, s, src->name, &p->m)) { /* finished before */
    res->nv = p->m->nv;
    res->nf = p->m->nf;
    snprintf(res->backend, sizeof res->backend, "resumed");
    st->resumed++;
    mb_log(MB_LOG_NORMAL, "[rank %d] %s: from the checkpoint (%s)", st->rank, src->name,
           st->ckpt);
    return MB_SUCCESS;
  }
  mb_error e = mb_inputs_read(st->inputs, s, &p->m);
  if (!e) {
    res->nv = p->m->nv;
    res->nf = p->m->nf;
    if (st->import_kind != MB_KIND_NONE)
      e = mb_mesh_convert_kind(p->m, st->import_kind, src->path);
  }
  if (!e) e = runner_fit_kind(st, p->m);
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

/* A source read but not computed (SIGTERM came): as if never taken. Its
 * result entry is marked (index -1) and removed once the schedule ends
 * (compact_results): the meshes in flight keep their entries' places, in
 * whatever order they are dropped. */
static void drop_source(rank_state *st, pending *p) {
  runner_prepared_free(st, p->prepared);
  p->prepared = NULL;
  mb_mesh_free(p->m);
  p->m = NULL;
  st->results[p->ires].index = -1;
  p->s = -1;
}

/* The result entries of the sources dropped (drop_source) removed, the
 * others kept in order; after the schedule, with no mesh in flight. */
static void compact_results(rank_state *st) {
  int k = 0;
  for (int i = 0; i < st->nresults; i++)
    if (st->results[i].index >= 0) st->results[k++] = st->results[i];
  st->nresults = k;
}

/* The write stage (main thread): a computed mesh goes to the checkpoint
 * (a record of this rank's log, appended by the checkpoint's thread) and
 * joins the rank's output; a failed one is reported as skipped. */
static mb_error finish_source(rank_state *st, pending *p) {
  if (p->s < 0) return MB_SUCCESS;
  if (p->stopped) { /* a signal stopped it in the middle: as if never taken */
    drop_source(st, p);
    return MB_SUCCESS;
  }
  mesh_result *res = &st->results[p->ires];
  const mb_source *src = &st->inputs->sources[p->s];
  const int resumed = !p->compute && p->m;
  if (resumed) {
    res->ok = 1;
    return runner_keep_mesh(st, p->m);
  }
  const double tw = mb_wtime();
  if (p->m) {
    if (st->ckpt[0]) { /* kept for --resume (appended and synced by the checkpoint's thread) */
      mb_error ce = runner_ckpt_put(st, p->m, p->s);
      if (ce) {
        mb_mesh_free(p->m);
        return ce;
      }
    }
    res->seconds = res->read_s + p->compute_s;
    const int grid = p->m->kind == MB_KIND_GRID3D;
    if (grid) res->nf = -1;
    MB_CALL(runner_keep_mesh(st, p->m));
    res->ok = 1;
    if (grid)
      mb_log(MB_LOG_NORMAL, "[rank %d] %s: %lld points, %s, %.3f s", st->rank, src->name,
             (long long)res->nv, res->backend, res->seconds);
    else
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
  st->copy_s += p->copy_s;
  st->finished++;
  runner_inject_fault(st, st->finished);
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
  MB_CALL(runner_writer_poll(st)); /* the writer rank serves, the others write */
  if (runner_stop_requested()) return MB_SUCCESS;
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

/* While the compute thread runs, the main thread serves the writer rank's
 * exchange (several ranks writing mesh by mesh) this often: 1 ms. */
#define WRITER_POLL_NS 1000000L

/* The queues between the main thread, the preparing threads (where there
 * are any) and the compute thread. */
typedef struct mesh_pipe {
  rank_state *st;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  mb_op_prepare_fn prepare;      /* the first stage's prepare, NULL: no preparing threads */
  int nprep;                     /* preparing threads running */
  pending *in, *in_tail;         /* read, in order: prepared (pending.prep), then computed */
  pending *out, *out_tail;       /* computed, to be written (FIFO) */
  int nin;                       /* read and not yet computing (in's length) */
  int preparing, busy;           /* meshes being prepared; 1 while one computes */
  int quit;                      /* no more meshes: the threads end when their work is done */
  int draining;                  /* SIGTERM or an error: no new prepare starts */
  double idle_s;                 /* the compute thread's waits for its next mesh */
  double prepare_s;              /* the preparing threads' prepares */
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
static int compute_threads(const rank_state *st) {
  const int n = st->omp_threads - (st->out ? 2 : 1);
  return n > 1 ? n : 1;
}

/* The next mesh in read order can be computed: read, and prepared where
 * the first stage prepares. */
static int computable(const mesh_pipe *q) {
  return q->in && (!q->nprep || q->in->prep == 2);
}

static void *compute_thread(void *arg) {
  mesh_pipe *q = arg;
  omp_set_num_threads(compute_threads(q->st));
  pthread_mutex_lock(&q->mu);
  for (;;) {
    const double tw = mb_wtime();
    while (!computable(q) && !(q->quit && !q->in)) pthread_cond_wait(&q->cv, &q->mu);
    if (!q->in) break;
    pending *p = queue_pop(&q->in, &q->in_tail);
    q->idle_s += mb_wtime() - tw; /* a wait that ended with a mesh (not the end's) */
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

/* The first mesh read that no preparing thread has taken, or NULL (none
 * while the queue is being dropped). */
static pending *to_prepare(const mesh_pipe *q) {
  if (q->draining) return NULL;
  pending *p = q->in;
  while (p && p->prep) p = p->next;
  return p;
}

/* A preparing thread: the first stage's prepare on the meshes read, each
 * taken by one thread, the first read first; the mesh stays in its place
 * in the queue, marked ready. On the CUDA backend its OpenMP teams are the
 * compute thread's size divided among the preparing threads (they
 * alternate with the compute more than they overlap it: the compute waits
 * for the device); on the CPU backend, one thread. A
 * prepare that fails leaves nothing: its error is cleared (this thread's)
 * and the run does the whole work, reporting it. */
static void *prepare_thread(void *arg) {
  mesh_pipe *q = arg;
  rank_state *st = q->st;
  int bound = 0;
  pthread_mutex_lock(&q->mu); /* nprep final: the main thread held the lock while starting us */
  /* on the CPU backend the compute takes the cores: one thread a prepare */
  const int team = st->backend.kind == MB_BACKEND_CUDA ? compute_threads(st) / q->nprep : 1;
  omp_set_num_threads(team > 1 ? team : 1);
  for (;;) {
    pending *p;
    while (!(p = to_prepare(q)) && !q->quit && !q->draining) pthread_cond_wait(&q->cv, &q->mu);
    if (!p) break;
    p->prep = 1;
    q->preparing++;
    pthread_mutex_unlock(&q->mu);
    /* the rank's device (resolved before the first mesh was queued) current
     * here too, for the prepares' queries of its properties (they enqueue
     * no work); a failure is the compute's to report */
    if (!bound++ && st->backend.kind == MB_BACKEND_CUDA && mb_cuda_bind_device(st->backend.device))
      mb_error_clear();
    const double t0 = mb_wtime();
    if (q->prepare(&st->job->stages[0], p->m, &p->prepared)) {
      mb_error_clear();
      p->prepared = NULL;
    }
    const double dt = mb_wtime() - t0;
    pthread_mutex_lock(&q->mu);
    q->prepare_s += dt;
    q->preparing--;
    p->prep = 2;
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
 * if never taken, the last read first (after those being prepared are
 * ready: a few milliseconds of host setup). */
static void drop_waiting(rank_state *st, mesh_pipe *q) {
  pthread_mutex_lock(&q->mu);
  q->draining = 1; /* the prepares running end; no other starts */
  while (q->preparing) pthread_cond_wait(&q->cv, &q->mu);
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
  e = runner_device_ready(st); /* the first mesh read beside the device's initialisation */
  if (e) {
    drop_source(st, p);
    free(p);
    MB_CALL(e);
  }
  pthread_mutex_lock(&q->mu);
  queue_push(&q->in, &q->in_tail, p);
  q->nin++;
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
  return MB_SUCCESS;
}

/* MESHBATCH_PREPARE_THREADS: the preparing threads of a rank's pipeline,
 * 0 (none: the compute thread prepares nothing ahead, the run does it) to
 * MAX_PREPARE_THREADS; unset or bad, 2: with one, a deform job of
 * 1,000 small layouts left the compute thread waiting 0.19-0.25 s for
 * prepared meshes, with two 0.02-0.03 s, with four 0.002-0.007 s, the
 * walls within the runs' spread (one H200, docs/benchmarks.md, "The
 * runner prepares the next mesh"). */
enum { MAX_PREPARE_THREADS = 8 };
static int prepare_threads(void) {
  const char *e = getenv("MESHBATCH_PREPARE_THREADS");
  char *end = NULL;
  const long n = e && *e ? strtol(e, &end, 10) : 2;
  if (e && *e && (*end || n < 0)) return 2;
  return n > MAX_PREPARE_THREADS ? MAX_PREPARE_THREADS : (int)n;
}

/* The pipeline over this rank's sources (main thread): write what is
 * computed, read ahead while fewer than PIPE_AHEAD wait, else wait for a
 * compute to end. SIGTERM drops the meshes read but not started; an error
 * of the rank itself (not of a mesh) does too, and keeps nothing of the
 * compute in flight. */
static mb_error run_pipeline(rank_state *st, source_iter *it) {
  mesh_pipe q = {.st = st, .prepare = mb_op_prepare_for(st->job->stages[0].op, &st->backend)};
  pthread_mutex_init(&q.mu, NULL);
  pthread_cond_init(&q.cv, NULL);
  pthread_t thread, preparer[MAX_PREPARE_THREADS];
  const int want = q.prepare ? prepare_threads() : 0;
  pthread_mutex_lock(&q.mu); /* nprep is read by the threads: final before they look */
  while (q.nprep < want && !pthread_create(&preparer[q.nprep], NULL, prepare_thread, &q)) q.nprep++;
  pthread_mutex_unlock(&q.mu); /* none started: the compute takes the meshes as read */
  if (st->rank == 0)
    mb_log(MB_LOG_VERBOSE, "per-mesh pipeline: each rank reads up to %d %s ahead%s and "
           "writes the computed ones while the current one computes",
           PIPE_AHEAD + (q.nprep > 1 ? q.nprep - 1 : 0),
           mb_plural(PIPE_AHEAD + (q.nprep > 1 ? q.nprep - 1 : 0), "mesh", "meshes"),
           q.nprep == 0   ? ""
           : q.nprep == 1 ? ", prepares them on a thread of their own (the first stage's host setup)"
                          : ", prepares them on threads of their own (the first stage's host setup)");
  int rc = pthread_create(&thread, NULL, compute_thread, &q);
  if (rc) {
    pthread_mutex_lock(&q.mu);
    q.quit = 1;
    pthread_cond_broadcast(&q.cv);
    pthread_mutex_unlock(&q.mu);
    for (int k = 0; k < q.nprep; k++) pthread_join(preparer[k], NULL);
    pthread_mutex_destroy(&q.mu);
    pthread_cond_destroy(&q.cv);
    MB_FAIL(MB_ERR_MEMORY, "cannot start the compute thread: %s", strerror(rc));
  }
  mb_error e = MB_SUCCESS;
  int more = 1;
  for (;;) {
    e = finish_computed(st, &q, e);
    if (e || runner_stop_requested()) {
      more = 0;
      drop_waiting(st, &q);
    }
    pthread_mutex_lock(&q.mu);
    const int room = q.nin < PIPE_AHEAD + (q.nprep > 1 ? q.nprep - 1 : 0);
    const int flight = q.nin + q.busy + (q.out != NULL);
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
    while (!q.out && (q.nin || q.busy)) {
      const double tq = mb_wtime();
      if (!st->wr) {
        pthread_cond_wait(&q.cv, &q.mu);
        st->pipe_wait_s += mb_wtime() - tq;
        continue;
      }
      /* several ranks: serve the writer's exchange while the mesh computes */
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_nsec += WRITER_POLL_NS;
      if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
      }
      pthread_cond_timedwait(&q.cv, &q.mu, &until);
      st->pipe_wait_s += mb_wtime() - tq;
      pthread_mutex_unlock(&q.mu);
      if (!e) e = runner_writer_poll(st);
      pthread_mutex_lock(&q.mu);
    }
    pthread_mutex_unlock(&q.mu);
  }
  pthread_mutex_lock(&q.mu);
  q.quit = 1;
  pthread_cond_broadcast(&q.cv);
  pthread_mutex_unlock(&q.mu);
  pthread_join(thread, NULL);
  for (int k = 0; k < q.nprep; k++) pthread_join(preparer[k], NULL);
  st->compute_idle_s += q.idle_s;
  st->prepare_s += q.prepare_s;
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
    if (!e && p.compute) {
      e = runner_device_ready(st); /* the first mesh read beside the device's initialisation */
      if (e) drop_source(st, &p);
    }
    if (!e && p.compute) compute_pending(&p);
    if (!e) e = finish_source(st, &p);
    else mb_mesh_free(p.m);
    MB_CALL(e);
  }
}

static mb_error run_sources(rank_state *st, source_iter *it) {
  st->omp_threads = omp_get_max_threads();
  st->pipelined = runner_pipeline_enabled(st);
  mb_error e;
  if (!st->pipelined) e = run_in_turn(st, it);
  else e = run_pipeline(st, it);
  compact_results(st);
  return e;
}

/* The writer rank's share (several ranks writing mesh by mesh): the cost,
 * in the units of source_cost, of the metadata rank 0 makes for one mesh
 * of another rank, as MESHBATCH_WRITER_SHARE times the mean cost of a
 * mesh; unset, 0 on every backend: a share of 0.05 on the CUDA backend made
 * rank 0 finish early and wait 2.4 s for the others (4 H200s, 1,000 meshes;
 * 0.8 s at share 0: docs/benchmarks.md, "Per-mesh batches on 4 GPUs, round
 * 2"). The same on every rank (the environment is), so the assignment
 * stays deterministic; 0 without the writer rank. Not collective. Errors:
 * none (MB_SUCCESS). */
static mb_error writer_cost(const rank_state *st, int64_t n, const double *cost, double *wc) {
  *wc = 0;
  if (st->size < 2 || n < 1 || !runner_writes_per_mesh(st)) return MB_SUCCESS;
  const char *e = getenv("MESHBATCH_WRITER_SHARE");
  const double share = e && *e ? atof(e) : 0;
  if (!(share > 0)) return MB_SUCCESS;
  double mean = 0;
  for (int64_t i = 0; i < n; i++) mean += cost[i];
  *wc = share * mean / (double)n;
  return MB_SUCCESS;
}

mb_error runner_run_static(rank_state *st) {
  int64_t n = st->inputs->nsources;
  double *cost = malloc(sizeof *cost * (size_t)(n ? n : 1));
  int *owner = malloc(sizeof *owner * (size_t)(n ? n : 1));
  if (!cost || !owner) { free(cost); free(owner); MB_FAIL(MB_ERR_MEMORY, "out of memory"); }
  for (int64_t i = 0; i < n; i++) cost[i] = source_cost(st->job, st->inputs->sources[i].cost);
  double wc = 0;
  mb_error e = writer_cost(st, n, cost, &wc);
  if (e) {
    free(cost);
    free(owner);
    return e;
  }
  assign_lpt_writer(n, cost, st->size, wc, owner);
  source_iter it = {.n = n, .owner = owner};
  e = run_sources(st, &it);
  free(cost);
  free(owner);
  return e;
}

/* A work queue: rank 0 exposes a counter; every rank fetch-and-adds it to
 * take the next mesh in decreasing cost order until the queue is empty. */
mb_error runner_run_dynamic(rank_state *st) {
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
