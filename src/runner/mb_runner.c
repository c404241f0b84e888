/* meshbatch: the job runner (see mb_runner.h): the run itself (setup, the
 * schedule chosen, the output's end), stopping on SIGTERM, provenance, the
 * one stage loop, reporting and the summary. The per-mesh schedules and
 * pipeline are in mb_runner_permesh.c, partitioned driving in
 * mb_runner_partitioned.c, the output, checkpoint and lock in
 * mb_runner_output.c (shared types: mb_runner_private.h). */
#include "mb_runner_private.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mb_alloc.h"
#include "mb_collection.h"
#include "mb_config.h"
#include "mb_log.h"
#include "mb_meshfile.h"
#include "mb_mpi.h"

/* ------------------------------------------------------------- stopping */

/* SIGTERM or SIGINT (what SLURM sends before the walltime kill, what a
 * user's Ctrl-C sends, and what mpirun forwards to every rank before it
 * SIGKILLs them about a second later, Open MPI's odls_base_sigkill_timeout):
 * take no other mesh, and stop the ops' long loops at their next stop point
 * (mb_op_should_stop); the flag holds the signal's number. */
static volatile sig_atomic_t stop_requested;
static struct timespec stop_time; /* when the first signal came (CLOCK_MONOTONIC) */
static void on_stop_signal(int sig) {
  if (!stop_requested) clock_gettime(CLOCK_MONOTONIC, &stop_time); /* async-signal-safe */
  stop_requested = sig;
}

/* Seconds since the stop signal came on this rank. */
static double since_stop(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - stop_time.tv_sec) + 1e-9 * (double)(now.tv_nsec - stop_time.tv_nsec);
}

int runner_stop_requested(void) { return stop_requested; }

volatile const sig_atomic_t *runner_stop_flag(void) { return &stop_requested; }

/* The stop and progress state of one mesh's stages (mb_op_stop): rank 0
 * prints progress unless quiet, every MESHBATCH_PROGRESS_S seconds (5). */
void runner_stop_init(const rank_state *st, mb_op_stop *stop, MPI_Comm comm, const char *name) {
  memset(stop, 0, sizeof *stop);
  stop->flag = &stop_requested;
  stop->comm = comm;
  stop->name = name;
  stop->progress = st->rank == 0 && mb_log_get_level() >= MB_LOG_NORMAL;
  const char *e = getenv("MESHBATCH_PROGRESS_S");
  stop->interval_s = e ? atof(e) : 5.0;
  if (!(stop->interval_s > 0)) stop->interval_s = 5.0;
}

/* Fault injection for the tests (docs/guide.md, "Checkpoints"):
 * MESHBATCH_FAULT=kill:R:K or term:R:K makes rank R (every rank for -1)
 * kill itself (SIGKILL) or send itself SIGTERM after finishing its K-th
 * mesh; synckill:R:K kills it once the K meshes are durable (as after a
 * sync period), kill once their records are appended to its log, unsynced
 * (a kill within the sync period; the records still queued are lost on a
 * real kill, so the tests wait for the appends to be deterministic). */
void runner_inject_fault(rank_state *st, int64_t finished) {
  const char *f = getenv("MESHBATCH_FAULT");
  char what[12] = "";
  int r = -1;
  long long after = -1;
  if (!f || sscanf(f, "%11[a-z]:%d:%lld", what, &r, &after) != 3 || (r >= 0 && r != st->rank) ||
      finished != after)
    return;
  if (!strcmp(what, "synckill")) { /* the K meshes durable, as after a commit */
    (void)runner_ckpt_drain(st);
    raise(SIGKILL);
  }
  if (!strcmp(what, "kill")) { /* the records appended: the page cache holds them */
    runner_ckpt_settle(st);
    raise(SIGKILL);
  }
  if (!strcmp(what, "term")) raise(SIGTERM);
}

/* ------------------------------------------------------------- one mesh */

/* Provenance: continue the stage numbering of an input that was processed
 * before. computed: the precisions the ops reported (mb_op_ctx.computed). */
mb_error runner_add_provenance(rank_state *st, mb_mesh *m, double seconds, unsigned computed) {
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
mb_error runner_fit_kind(const rank_state *st, mb_mesh *m) {
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
mb_error runner_run_stages(const rank_state *st, const mb_op_ctx *ctx, mb_mesh **m,
                                  mb_domain *d) {
  const mb_job *job = st->job;
  const mb_backend *be = &st->backend;
  mb_op_ctx c = *ctx; /* ctx->prepared goes to the first run only */
  for (int k = 0; k < job->nstages;) {
    const mb_op_info *op = job->stages[k].op;
    const mb_op_run_fn run = d ? NULL : mb_op_run_for(op, be);
    const mb_op_run_partitioned_fn part = d ? mb_op_run_partitioned_for(op, be) : NULL;
    if (!run && !part) {
      runner_prepared_free(st, c.prepared);
      MB_FAIL(MB_ERR_UNSUPPORTED, "%s:%d: %s has no %s%s backend%s", job->path,
              job->stages[k].line, op->name, d ? "partitioned form on the " : "",
              mb_backend_kind_name(be->kind), d ? " (use distribute: per-mesh)" : "");
    }
    int n = 1;
    while (k + n < job->nstages &&
           (d ? mb_op_run_partitioned_for(job->stages[k + n].op, be) == part
              : mb_op_run_for(job->stages[k + n].op, be) == run))
      n++;
    const mb_error e = d ? mb_agree(d->comm, part(&c, &job->stages[k], n, d))
                         : run(&c, &job->stages[k], n, m);
    c.prepared = NULL; /* the run took it over */
    MB_CALL(e);
    k += n;
  }
  return MB_SUCCESS;
}

void runner_prepared_free(const rank_state *st, void *prepared) {
  if (prepared) st->job->stages[0].op->prepared_free(prepared);
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

/* Failed meshes the recap at the end of a run lists; the rest are counted. */
enum { MB_RECAP_MAX = 20 };

/* Rank 0, at the end of a run with failures: the recap on stderr (always,
 * --quiet too). Each error was printed whole as it happened (a log tailed
 * live has it); the recap is the list at the end of a long log, not a
 * repeat: "meshbatch: 2 of 1000 meshes failed:", then one line per failed
 * mesh in input order, "  NAME (FILE): " and the first line of its error
 * (the file: the one place some errors name it), the first MB_RECAP_MAX of
 * them, then "... and N more; see above". */
static void print_failed(const rank_state *st, const mesh_result *all, int nall,
                         const mb_run_summary *sum) {
  if (sum->nfailed <= 0) return;
  fflush(stdout); /* after the summary table, in a log that merges both */
  fprintf(stderr, "meshbatch: %lld of %lld %s failed:\n", (long long)sum->nfailed,
          (long long)sum->nmeshes, mb_plural(sum->nmeshes, "mesh", "meshes"));
  int64_t shown = 0;
  for (int k = 0; k < nall && shown < MB_RECAP_MAX; k++) {
    if (all[k].ok) continue;
    const mb_source *src = &st->inputs->sources[all[k].index];
    const char *msg = all[k].message;
    fprintf(stderr, "  %s (%s): %.*s\n", src->name, src->path, (int)strcspn(msg, "\n"), msg);
    shown++;
  }
  if (sum->nfailed > shown)
    fprintf(stderr, "  ... and %lld more; see above\n", (long long)(sum->nfailed - shown));
  fflush(stderr);
}

static void print_summary(const rank_state *st, mesh_result *all, int nall,
                          const mb_run_summary *sum) {
  qsort(all, (size_t)nall, sizeof *all, by_index);
  mb_log(MB_LOG_NORMAL, "\n%-24s %5s %10s %10s %-8s %9s  %s", "mesh", "rank", "vertices",
         "faces", "backend", "time [s]", "status");
  for (int k = 0; k < nall; k++) {
    const mesh_result *r = &all[k];
    char faces[32] = "-"; /* a grid has points, no faces (nf -1) */
    if (r->nf >= 0) snprintf(faces, sizeof faces, "%lld", (long long)r->nf);
    mb_log(MB_LOG_NORMAL, "%-24s %5d %10lld %10s %-8s %9.3f  %s",
           st->inputs->sources[r->index].name, r->rank, (long long)r->nv, faces,
           r->backend, r->seconds, r->ok ? "ok" : "FAILED");
  }
  mb_log(MB_LOG_NORMAL, "\n%lld %s, %lld written, %lld failed; wall %.3f s; rank busy "
         "time max %.3f s, mean %.3f s (max/mean %.2f)", (long long)sum->nmeshes,
         mb_plural(sum->nmeshes, "mesh", "meshes"), (long long)(sum->nmeshes - sum->nfailed),
         (long long)sum->nfailed, sum->wall_s, sum->busy_max_s, sum->busy_mean_s,
         sum->busy_mean_s > 0 ? sum->busy_max_s / sum->busy_mean_s : 1.0);
  print_failed(st, all, nall, sum);
}

/* ------------------------------------------------------------- the run */

mb_error runner_device_ready(rank_state *st) {
  if (!st->device_init) return MB_SUCCESS;
  char why[600] = "";
  double wait = 0;
  mb_error e = mb_backend_choose_end(st->device_init, &st->backend, why, sizeof why,
                                     &st->device_init_s, &wait);
  st->device_init = NULL;
  st->device_wait_s += wait;
  MB_CALL(e);
  mb_log(st->rank == 0 ? MB_LOG_NORMAL : MB_LOG_VERBOSE, "[rank %d] backend %s: %s (initialised "
         "in %.3f s beside the setup and the read, %.3f s waited for)", st->rank,
         st->backend.description, why, st->device_init_s, wait);
  return MB_SUCCESS;
}

/* The run's setup on every rank (--timings splits its seconds into
 * st->setup_part_s: backend, inputs, output checks and lock, checkpoint
 * folder, output file and writer rank). Collective; errors agreed. */
static mb_error setup(rank_state *st) {
  double t = mb_wtime();
#define SETUP_PART(i) (st->setup_part_s[i] = mb_wtime() - t, t = mb_wtime())
  int local_rank;
  MB_CALL(mb_local_rank(st->comm, &local_rank));
  char why[600] = "";
  /* cuda: the device's initialisation (the CUDA context) on its own thread,
   * beside the rest of the setup and the first read (runner_device_ready) */
  mb_error e = mb_backend_choose_begin(st->job->backend, local_rank, &st->backend, why, sizeof why,
                                       &st->device_init);
  MB_CALL(mb_agree(st->comm, e));
  if (!st->device_init) /* an import (no stages) computes nothing: its backend only with -v */
    mb_log(st->rank == 0 && st->job->nstages ? MB_LOG_NORMAL : MB_LOG_VERBOSE,
           "[rank %d] backend %s: %s", st->rank, st->backend.description, why);
  SETUP_PART(0);
  /* a named input that does not exist, a glob that matches nothing: a job
   * error before any work, naming the job file's line (rank 0 looks) */
  e = mb_inputs_open_from(st->comm, st->job->ninputs, st->job->inputs,
                          (const char *const *)st->job->input_origins, &st->inputs);
  MB_CALL(mb_agree(st->comm, e));
  SETUP_PART(1);
  e = st->rank == 0 ? runner_check_grids(st) : MB_SUCCESS; /* a job error: nothing made */
  if (!e && st->rank == 0) e = runner_make_parent_folder(st->job->output);
  if (!e && st->rank == 0) e = runner_check_output(st->job->output, st->inputs);
  if (!e && st->rank == 0) e = runner_check_size(st);
  if (!e && st->rank == 0) e = runner_take_lock(st->job->output);
  if (!e) st->locked = st->rank == 0;
  if (st->locked) runner_remove_stale_temporaries(st->job->output);
  MB_CALL(mb_agree(st->comm, e));
  SETUP_PART(2);
  /* the checkpoint: asked for (--checkpoint, --resume), or by default for a
   * job over several meshes, unless --no-checkpoint (job->checkpoint -1) */
  if (st->job->checkpoint > 0 || st->job->resume ||
      (st->job->checkpoint == 0 && st->job->nstages > 0 && st->inputs->nsources > 1)) {
    snprintf(st->ckpt, sizeof st->ckpt, "%s.ckpt", st->job->output);
    e = st->rank == 0 ? runner_open_checkpoint(st, st->ckpt, &st->ckpt_gen) : MB_SUCCESS;
    MB_CALL(mb_agree(st->comm, e));
    MB_CALL_MPI_AGREED(st->comm, MPI_Bcast(&st->ckpt_gen, 1, MPI_INT, 0, st->comm));
    if (st->job->resume && st->job->distribute != MB_DISTRIBUTE_PARTITIONED)
      MB_CALL(mb_agree(st->comm, runner_checkpoint_index(st))); /* the earlier runs' records */
    MB_CALL(mb_agree(st->comm, runner_ckpt_start(st))); /* per mesh: its log and thread */
  }
  SETUP_PART(3);
  if (runner_writes_per_mesh(st)) { /* rank 0 holds the output; the others write through it */
    e = st->rank == 0 ? mb_collection_writer_begin(st->job->output,
                                                   runner_expected_output_bytes(st),
                                                   st->job->sync, &st->out)
                      : MB_SUCCESS;
    MB_CALL(mb_agree(st->comm, e));
    if (st->size > 1) MB_CALL(runner_writer_open(st));
  }
  SETUP_PART(4);
#undef SETUP_PART
  return MB_SUCCESS;
}

/* --timings (after PETSc's -log_view): where the run's time went, summed
 * over meshes, the slowest rank's and the mean; peak host memory per rank
 * (mb_rss_peak_mb). The rows not indented are the main thread's and add up to
 * the wall on each rank: setup, the schedule's phases (read, the wait for
 * the device's initialisation, compute or, in the pipeline, the wait for
 * the compute thread, write, checkpoint,
 * the waits at the schedule's end), the per-mesh host work between those
 * phases (the schedule's time no phase took: result records, the queues,
 * the per-mesh log line, the shared counter), the output's end, the
 * checkpoint's removal, and the rest of the run after it (the agreements
 * on counts and busy times). Indented
 * rows are inside another or on another thread. Collective; rank 0 prints. */
static mb_error print_timings(const rank_state *st, const mb_run_summary *sum) {
  double read = 0, total = 0;
  for (int i = 0; i < st->nresults; i++) {
    read += st->results[i].read_s;
    total += st->results[i].seconds;
  }
  const double compute = total - read;
  /* the main thread's phases inside the schedule; the rest of it is host work between them */
  const double phases = read + st->device_wait_s + (st->pipelined ? st->pipe_wait_s : compute) +
                        st->put_s + st->ckpt_s + st->ckpt_wait_s + st->wait_s;
  const double between = st->schedule_s - phases;
  const double after = sum->wall_s - st->setup_s - st->schedule_s - st->write_s - st->ckpt_rm_s;
  /* the rows in print order; HIDE: printed only where they happened (> 0 on some rank) */
  enum { SETUP, BACKEND, INPUTS, CHECKS, CKDIR, OUTFILE, READ, DEVWAIT, DEVINIT, COMPUTE, DEVICE,
         COPIES, PIPEWAIT, IDLE, PREPARE, PUT, CKPT, CKSYNC, CKGROUPS, CKWAIT, WAIT, BETWEEN,
         WRITE, CKRM, AFTER, WALL, RSS, N };
  static const struct { const char *what; int hide; } row[N] = {
      [SETUP] = {"setup (backend, inputs)", 0}, [BACKEND] = {"  backend (device)", 1},
      [INPUTS] = {"  inputs (collections opened)", 1}, [CHECKS] = {"  output checks, lock", 1},
      [CKDIR] = {"  checkpoint folder", 1}, [OUTFILE] = {"  output file, writer rank", 1},
      [READ] = {"read", 0}, [DEVWAIT] = {"wait (device initialisation)", 1},
      [DEVINIT] = {"  device initialisation (own thread)", 1},
      [COMPUTE] = {"compute (setup + stages)", 0}, [DEVICE] = {"  device (ops' report)", 1},
      [COPIES] = {"  host-device copies (ops)", 1}, [PIPEWAIT] = {"  main thread waiting for it", 1},
      [IDLE] = {"  it waiting for its next mesh", 1},
      [PREPARE] = {"  prepares, ahead (own thread)", 1},
      [PUT] = {"write (per mesh)", 0}, [CKPT] = {"checkpoint (per mesh)", 0},
      [CKSYNC] = {"  its appends, syncs (own thread)", 1}, [CKGROUPS] = {"  its syncs (fdatasync)", 1},
      [CKWAIT] = {"wait (checkpoint, end)", 1}, [WAIT] = {"wait (writer rank, end)", 0},
      [BETWEEN] = {"host work between phases", 0}, [WRITE] = {"write (end)", 0},
      [CKRM] = {"checkpoint removed (end)", 0}, [AFTER] = {"after the output (summary)", 0},
      [WALL] = {"wall", 0}, [RSS] = {"peak host memory", 0}};
  double mine[N] = {
      [SETUP] = st->setup_s, [BACKEND] = st->setup_part_s[0], [INPUTS] = st->setup_part_s[1],
      [CHECKS] = st->setup_part_s[2], [CKDIR] = st->setup_part_s[3],
      [OUTFILE] = st->setup_part_s[4], [READ] = read, [DEVWAIT] = st->device_wait_s,
      [DEVINIT] = st->device_init_s, [COMPUTE] = compute, [DEVICE] = st->device_s,
      [COPIES] = st->copy_s, [PIPEWAIT] = st->pipelined ? st->pipe_wait_s : 0,
      [IDLE] = st->pipelined ? st->compute_idle_s : 0, [PREPARE] = st->prepare_s,
      [PUT] = st->put_s,
      [CKPT] = st->ckpt_s, [CKSYNC] = st->ckpt_sync_s, [CKGROUPS] = (double)st->ckpt_groups,
      [CKWAIT] = st->ckpt_wait_s, [WAIT] = st->wait_s, [BETWEEN] = between > 0 ? between : 0,
      [WRITE] = st->write_s, [CKRM] = st->ckpt_rm_s, [AFTER] = after > 0 ? after : 0,
      [WALL] = sum->wall_s, [RSS] = mb_rss_peak_mb() * 1048576.0};
  double mx[N], mean[N];
  MB_CALL_MPI_AGREED(st->comm, MPI_Reduce(mine, mx, N, MPI_DOUBLE, MPI_MAX, 0, st->comm));
  MB_CALL_MPI_AGREED(st->comm, MPI_Reduce(mine, mean, N, MPI_DOUBLE, MPI_SUM, 0, st->comm));
  if (st->rank != 0) return MB_SUCCESS;
  mb_log(MB_LOG_QUIET, "\ntimings, %d rank%s:%28s %12s", st->size, st->size == 1 ? " " : "s", "max",
         "mean");
  for (int k = 0; k < N; k++) {
    if (row[k].hide && mx[k] <= 0) continue;
    if (k == RSS)
      mb_log(MB_LOG_QUIET, "  %-36s %9.1f MB %9.1f MB", row[k].what, mx[k] / 1e6,
             mean[k] / st->size / 1e6);
    else if (k == CKGROUPS)
      mb_log(MB_LOG_QUIET, "  %-36s %10.0f   %10.1f", row[k].what, mx[k], mean[k] / st->size);
    else
      mb_log(MB_LOG_QUIET, "  %-36s %10.3f s %10.3f s", row[k].what, mx[k], mean[k] / st->size);
  }
  if (st->pipelined)
    mb_log(MB_LOG_QUIET, "  (in the pipeline the main thread waits for the compute thread, "
           "which reads nothing and writes nothing: setup, read, the waits for the device and "
           "for it, write, checkpoint, the waits, the host work between phases, write (end), "
           "checkpoint removed and after the output add up to the wall of each rank)");
  else
    mb_log(MB_LOG_QUIET, "  (setup, read, the wait for the device, compute, write, checkpoint, "
           "the waits, the host work between phases, write (end), checkpoint removed and after "
           "the output add up to the wall of each rank)");
  if (mx[DEVINIT] > 0)
    mb_log(MB_LOG_QUIET, "  (the device's initialisation ran on its own thread beside the setup "
           "and the read; what it took beyond them is the wait for it)");
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
           runner_pipeline_enabled(st) ? "" : "; MESHBATCH_PIPELINE=0: read, compute and write in turn");
  return MB_SUCCESS;
}

/* The program as it was started (for the command that resumes). */
static void program_name(char *buf, size_t len) {
  snprintf(buf, len, "meshbatch");
  FILE *f = fopen("/proc/self/cmdline", "rb");
  if (!f) return;
  size_t n = fread(buf, 1, len - 1, f);
  fclose(f);
  buf[n] = '\0';
  if (!buf[0]) snprintf(buf, len, "meshbatch");
}

/* A word of a shell command, quoted where it needs to be. */
static void shell_word(char *out, size_t len, const char *w) {
  if (strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:+,@") ==
      strlen(w))
    snprintf(out, len, "%s", w);
  else
    snprintf(out, len, "'%s'", w); /* a path with a ' in it is left to the user */
}

/* Rank 0, after a stop: one line (stderr) saying what was kept and the
 * exact command that goes on (the launcher as this run's, when over ranks). */
static void print_stopped(const rank_state *st, int sig, int64_t ok, int64_t finished) {
  char prog[1024], job[4200], launcher[128] = "";
  program_name(prog, sizeof prog);
  char qprog[1100];
  shell_word(qprog, sizeof qprog, prog);
  shell_word(job, sizeof job, st->job->path);
  if (st->size > 1)
    snprintf(launcher, sizeof launcher, "%s %d ",
             getenv("OMPI_COMM_WORLD_SIZE") || !getenv("SLURM_STEP_ID") ? "mpirun -np" : "srun -n",
             st->size);
  const char *name = sig == SIGINT ? "SIGINT" : "SIGTERM";
  const int64_t n = st->inputs->nsources;
  char after[64] = "on another rank"; /* rank 0's own delay, where it got the signal */
  if (stop_requested) snprintf(after, sizeof after, "%.2f s after it came", since_stop());
  if (!st->job->nstages) { /* an import: nothing kept, done again as a whole */
    fprintf(stderr, "meshbatch: stopped by %s (%s): %lld of %lld %s read; the collection %s "
            "is not written: run the import again\n", name, after, (long long)finished,
            (long long)n, mb_plural(n, "file", "files"), st->job->output);
    fflush(stderr);
    return;
  }
  char what[4400];
  if (st->ckpt[0] && ok > 0)
    snprintf(what, sizeof what, ", kept in %s/", st->ckpt);
  else
    snprintf(what, sizeof what, "%s", ok > 0 ? ", none kept (--no-checkpoint)" : "");
  fprintf(stderr, "meshbatch: stopped by %s (%s): %lld of %lld %s "
          "finished%s; the output %s is not written, and a mesh stopped in the middle starts "
          "again from its beginning. To go on, run: %s%s run %s%s%s\n", name, after,
          (long long)finished, (long long)n, mb_plural(n, "mesh", "meshes"), what, st->job->output,
          launcher, qprog, job, st->ckpt[0] && ok > 0 ? " --resume" : "",
          st->job->sync ? " --sync" : "");
  fflush(stderr);
}

static mb_error run(rank_state *st, mb_run_summary *sum) {
  double t0 = mb_wtime();
  stop_requested = 0;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  MB_CALL(setup(st));
  st->setup_s = mb_wtime() - t0;
  if (st->rank == 0)
    mb_log(MB_LOG_NORMAL, "meshbatch %s: %lld %s on %d rank%s, %s", MESHBATCH_VERSION,
           (long long)st->inputs->nsources, mb_plural(st->inputs->nsources, "mesh", "meshes"),
           st->size, st->size == 1 ? "" : "s",
           st->job->distribute == MB_DISTRIBUTE_PARTITIONED ? "partitioned (every mesh split over all ranks)"
           : st->job->schedule == MB_SCHEDULE_DYNAMIC       ? "per-mesh, dynamic schedule"
                                                            : "per-mesh, static cost-balanced schedule");
  const double tl = mb_wtime();
  mb_error e = st->job->distribute == MB_DISTRIBUTE_PARTITIONED ? runner_run_partitioned(st)
               : st->job->schedule == MB_SCHEDULE_DYNAMIC   ? runner_run_dynamic(st)
                                                            : runner_run_static(st);
  if (!e) e = runner_device_ready(st); /* a rank that computed nothing: its device too */
  e = runner_writer_drain(st, e); /* every mesh handed to the writer rank written */
  /* a stop's note or a failure's --resume rely on the checkpoint: every finished mesh
   * durable first (the thread's last group), on every rank where any rank stopped or
   * failed (a signal may reach one rank only); a schedule that ended well everywhere goes
   * on to the output, which makes the checkpoint needless: its files stay unsynced */
  int durable = e || stop_requested;
  const int rc = MPI_Allreduce(MPI_IN_PLACE, &durable, 1, MPI_INT, MPI_MAX, st->comm);
  if (rc != MPI_SUCCESS) { /* reported, agreed below; the queue committed for --resume */
    durable = 1;
    if (!e)
      e = mb_error_mpi_failed(rc, __FILE__, __LINE__, __func__,
                              "MPI_Allreduce(MPI_IN_PLACE, &durable, 1, MPI_INT, MPI_MAX, st->comm)");
  }
  const mb_error ce = runner_ckpt_stop(st, durable);
  runner_checkpoint_index_free(st); /* nothing more is taken from the earlier logs */
  if (!e) e = ce;
  const double schedule_s = mb_wtime() - tl;
  st->schedule_s = schedule_s;
  MB_CALL(mb_agree(st->comm, e));
  MB_CALL(report_device_busy(st, schedule_s, sum));
  int stopped = stop_requested;
  MB_CALL_MPI_AGREED(st->comm, MPI_Allreduce(MPI_IN_PLACE, &stopped, 1, MPI_INT, MPI_MAX, st->comm));
  /* meshes finished: per mesh, whole meshes over the ranks; partitioned,
   * the slabs every rank holds of each finished mesh */
  int64_t kept = st->nkept + mb_collection_writer_count(st->out);
  MB_CALL_MPI_AGREED(st->comm, MPI_Allreduce(MPI_IN_PLACE, &kept, 1, MPI_INT64_T, MPI_SUM, st->comm));
  if (st->job->distribute == MB_DISTRIBUTE_PARTITIONED) kept = st->nslabs;
  /* the sources done (written or failed; one entry each, rank 0's in
   * partitioned runs): a stop after the last one changes nothing */
  int64_t done[2] = {st->nresults, 0};
  for (int i = 0; i < st->nresults; i++) done[1] += st->results[i].ok;
  MB_CALL_MPI_AGREED(st->comm, MPI_Allreduce(MPI_IN_PLACE, done, 2, MPI_INT64_T, MPI_SUM, st->comm));
  if (stopped && done[0] < st->inputs->nsources) { /* no output that could pass for a whole one */
    if (st->rank == 0) print_stopped(st, stopped, done[1], done[0]);
    sum->stopped = stopped;
    sum->nmeshes = st->inputs->nsources;
    sum->wall_s = mb_wtime() - t0;
    return MB_SUCCESS;
  }
  if (stopped && st->rank == 0)
    mb_log(MB_LOG_NORMAL, "%s came after the last mesh: the output is written",
           stopped == SIGINT ? "SIGINT" : "SIGTERM");
  const int nothing = kept == 0 && st->inputs->nsources > 0;
  const double tw = mb_wtime();
  if (!nothing && runner_writes_per_mesh(st)) { /* written mesh by mesh: number, publish */
    e = st->out ? mb_collection_writer_finish(st->out) : MB_SUCCESS;
    st->out = NULL;
    MB_CALL(mb_agree(st->comm, e));
  } else if (!nothing) { /* a job in which every mesh failed leaves any earlier output as it was */
    e = (st->job->sync ? mb_collection_write_durable : mb_collection_write_slabs)(
        st->comm, st->job->output, st->nkept, st->kept, st->nslabs, st->slabs);
    MB_CALL(mb_agree(st->comm, e));
  }
  st->write_s = mb_wtime() - tw;
  const double tr = mb_wtime();
  if (st->ckpt[0] && !nothing) { /* each rank its own meshes' files, then rank 0 the folder */
    if (st->job->distribute != MB_DISTRIBUTE_PARTITIONED) {
      runner_remove_own_checkpoint(st);
      MB_CALL_MPI_AGREED(st->comm, MPI_Barrier(st->comm));
    }
    if (st->rank == 0) runner_remove_checkpoint(st->ckpt);
  }
  st->ckpt_rm_s = mb_wtime() - tr;
  int64_t resumed = st->resumed;
  MB_CALL_MPI_AGREED(st->comm, MPI_Allreduce(MPI_IN_PLACE, &resumed, 1, MPI_INT64_T, MPI_SUM, st->comm));
  if (st->job->resume && st->rank == 0)
    mb_log(MB_LOG_NORMAL, "resume: %lld %s taken from the checkpoint, %lld computed",
           (long long)resumed, mb_plural(resumed, "mesh", "meshes"),
           (long long)(st->inputs->nsources - resumed));

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
  if (st->job->distribute != MB_DISTRIBUTE_PARTITIONED) MB_CALL(runner_writer_report(st));
  if (st->job->timings) MB_CALL(print_timings(st, sum));
  return MB_SUCCESS;
}

/* Run a job (or an import plan) and free the rank's state. */
static mb_error run_state(rank_state *st, mb_run_summary *summary) {
  MB_CALL_MPI(MPI_Comm_rank(st->comm, &st->rank));
  MB_CALL_MPI(MPI_Comm_size(st->comm, &st->size));
  memset(summary, 0, sizeof *summary);
  mb_error e = run(st, summary);
  /* a run that failed before its device was needed: the initialisation waited for, dropped */
  (void)mb_backend_choose_end(st->device_init, NULL, NULL, 0, NULL, NULL);
  st->device_init = NULL;
  (void)runner_ckpt_stop(st, 1); /* a run that failed before the schedule's end: queue durable */
  runner_checkpoint_index_free(st);
  /* a run that failed (not stopped): the default checkpoint goes, as the run leaves nothing;
   * one asked for (--checkpoint, --resume) stays, with a note (not another job's: ARG) */
  if (e && e != MB_ERR_ARG && st->ckpt[0] && st->rank == 0)
    runner_checkpoint_after_failure(st->ckpt, st->job->checkpoint > 0 || st->job->resume);
  mb_collection_writer_abort(st->out); /* not published: stopped, failed, or no mesh finished */
  st->out = NULL;
  runner_writer_close(st);
  if (st->locked) runner_drop_lock(st->job->output);
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
