/* meshbatch: what the runner's files share (not installed; the public API
 * is mb_runner.h). The runner is split by concern:
 *   mb_runner.c             the run (setup, schedule, output's end), SIGTERM,
 *                           provenance, the one stage loop, the summary;
 *   mb_runner_permesh.c     per-mesh assignment (LPT, static and dynamic
 *                           schedules) and the read/compute/write pipeline;
 *   mb_runner_partitioned.c every dataset split over the ranks (the domain's
 *                           reader, the stages on it, its checkpoint slabs);
 *   mb_runner_output.c      output checks, lock, stale temporaries, the
 *                           checkpoint folder and files, finished meshes kept;
 *   mb_runner_writer.c      per-mesh runs on several ranks: the writer rank
 *                           (rank 0) makes each mesh's metadata, the others
 *                           write its values at the offsets it hands out;
 *   mb_runner_ckpt.c        per-mesh runs: the checkpoint's own thread (each
 *                           rank's append-only log of finished meshes, its syncs).
 * None of these functions is collective unless its comment says so; each
 * that returns mb_error reports through mb_error.h's message. */
#ifndef MB_RUNNER_PRIVATE_H
#define MB_RUNNER_PRIVATE_H

#include <mpi.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "mb_backend.h"
#include "mb_collection.h"
#include "mb_domain.h"
#include "mb_error.h"
#include "mb_inputs.h"
#include "mb_job.h"
#include "mb_mesh.h"
#include "mb_op.h"
#include "mb_runner.h"

/* What one rank reports about one mesh source, gathered to rank 0. */
typedef struct mesh_result {
  int64_t index;
  int64_t nv, nf;        /* nf -1: a grid (points, no faces) */
  int rank;
  int ok;
  double seconds;
  double read_s;         /* of seconds: reading the input (per-mesh runs) */
  char backend[64];
  char message[512];
} mesh_result;

typedef struct runner_writer runner_writer; /* mb_runner_writer.c */
typedef struct runner_ckpt runner_ckpt;     /* mb_runner_ckpt.c */
typedef struct runner_ckpt_index runner_ckpt_index; /* mb_runner_output.c */

typedef struct rank_state {
  MPI_Comm comm;
  int rank, size;
  const mb_job *job;     /* the job; for an import, a plan with no stages */
  mb_kind import_kind;   /* import: the kind every dataset is converted to, or NONE */
  mb_inputs *inputs;
  mb_backend backend;
  mb_backend_init *device_init; /* the CUDA device being initialised on its own thread
                                   (mb_backend_choose_begin), NULL once ready or on the CPU */
  double device_init_s;  /* --timings: that thread's seconds (beside setup and the read) */
  double device_wait_s;  /* --timings: the main thread waiting for it (runner_device_ready) */
  mb_collection_writer *out; /* per-mesh runs, rank 0: the output, written mesh by mesh */
  runner_writer *wr;     /* per-mesh runs on several ranks: the writer rank's exchange */
  int nkept;
  mb_mesh **kept;        /* otherwise: processed meshes this rank writes at the end */
  int nslabs;
  mb_mesh_slab *slabs;   /* partitioned runs: this rank's rows of every processed mesh */
  int nresults;
  mesh_result *results;  /* one per source this rank took */
  double busy_s;
  double device_s;       /* per-mesh runs: seconds the ops kept this rank's device busy */
  double copy_s;         /* per-mesh runs: seconds of the ops' host-device copies reported
                            apart (--timings; Polylla) */
  unsigned computed;     /* partitioned runs: MB_COMPUTED_BIT of the precisions the current
                            mesh's stages computed in (mb_op_ctx.computed) */
  double device_total_s; /* the same, summed over the ranks (after report_device_busy) */
  int64_t finished;      /* per-mesh runs: meshes this rank finished (computed or failed) */
  int omp_threads;       /* the main thread's OpenMP team size (the pipeline's compute thread
                            takes one fewer) */
  double setup_s;        /* --timings: backend and inputs */
  double setup_part_s[5]; /* of setup_s: backend, inputs, output checks and lock, checkpoint
                             folder, output file and writer rank */
  double put_s;          /* meshes written into the output as they finished (st->out, st->wr:
                            on rank 0 the other ranks' metadata too, elsewhere their pwrites) */
  double ckpt_s;         /* per-mesh runs: the checkpoint of finished meshes on the main thread
                            (the record's copy and the wait for room in the queue; with
                            MESHBATCH_CKPT_THREAD=0 the append and its sync too) */
  runner_ckpt *ck;       /* per-mesh runs with a checkpoint: this rank's log and its thread */
  int ckpt_gen;          /* the generation G of this run's logs, run-G.rank-R.log (earlier
                            runs': lower G) */
  char ckpt_log[4400];   /* per-mesh runs: this rank's log, once st->ck is stopped */
  runner_ckpt_index *ckidx; /* --resume, per mesh: the earlier runs' records, by source */
  double ckpt_wait_s;    /* the main thread waiting for that thread (a stop, a fault, the end) */
  double ckpt_sync_s;    /* that thread's seconds in CRCs, appends and syncs (off the critical
                            path) */
  int64_t ckpt_groups;   /* its syncs (fdatasync of the log, one per group of records) */
  double ckpt_rm_s;      /* rank 0, after the output is written: removing the checkpoint */
  int pipelined;         /* per-mesh runs: the pipeline ran (compute on its own thread) */
  double pipe_wait_s;    /* the pipeline's main thread waiting for the compute thread */
  double compute_idle_s; /* the pipeline's compute thread waiting for its next mesh */
  double prepare_s;      /* the pipeline's preparing thread in the ops' prepares */
  double schedule_s;     /* the schedule on this rank (between setup and the output's end) */
  double wait_s;         /* st->wr: at the schedule's end, waiting for the writer rank (other
                            ranks) or for the other ranks to finish (rank 0) */
  double write_s;        /* the output's end: the collective write, or the publication */
  char ckpt[4200];       /* --checkpoint: the folder of finished meshes, "" without */
  int64_t resumed;       /* meshes this rank took from the checkpoint */
  int locked;            /* rank 0 holds OUTPUT.lock */
} rank_state;

/* ------------------------------------------------------------- mb_runner.c */

/* The signal (SIGTERM, SIGINT) that came during the run, else 0: take no
 * other mesh; the ops stop at their next stop point (mb_op_should_stop). */
int runner_stop_requested(void);
/* The flag the signal handler sets (for mb_op_stop.flag). */
volatile const sig_atomic_t *runner_stop_flag(void);
/* *stop for one mesh's stages: the flag, comm (partitioned: the domain's,
 * else MPI_COMM_NULL), progress lines on rank 0 unless quiet, every
 * MESHBATCH_PROGRESS_S seconds (default 5), naming name. Not collective. */
void runner_stop_init(const rank_state *st, mb_op_stop *stop, MPI_Comm comm, const char *name);
/* Test fault MESHBATCH_FAULT=kill|synckill|term:R:K: rank R kills or SIGTERMs itself after
 * its K-th mesh; kill with the finished meshes' checkpoint files written, unsynced (a kill
 * within the sync period), synckill once the checkpoint's thread has made them durable
 * (runner_ckpt_drain: a kill after a commit). */
void runner_inject_fault(rank_state *st, int64_t finished);
/* Provenance attributes of m (stage_N, backend, precision from computed, ranks, wall seconds). */
mb_error runner_add_provenance(rank_state *st, mb_mesh *m, double seconds, unsigned computed);
/* Wait for the rank's device where its initialisation runs on its own
 * thread (st->device_init; nothing to do without one): st->backend
 * resolved, the device current on the calling thread, the backend's log
 * line, the wait in st->device_wait_s. The per-mesh schedules call it
 * before the first mesh goes to its stages, the partitioned one before
 * the first mesh; the run calls it after the schedule and at its end (a
 * rank without meshes, a setup that failed). Not collective; the error of
 * the initialisation (MB_ERR_UNSUPPORTED: no device; MB_ERR_CUDA) is the
 * rank's, agreed where the schedule's errors are. */
mb_error runner_device_ready(rank_state *st);
/* Convert m to the kind stage 0 reads where it can; MB_ERR_ARG where it cannot. */
mb_error runner_fit_kind(const rank_state *st, mb_mesh *m);
/* The one stage loop: on *m (per mesh, d NULL) or on domain d (partitioned, collective,
 * errors agreed). ctx->prepared (per mesh: the first stage's mb_op_info.prepare) is handed
 * to the run of the first stages, or freed where none runs: consumed either way. */
mb_error runner_run_stages(const rank_state *st, const mb_op_ctx *ctx, mb_mesh **m,
                           mb_domain *d);
/* Free what the job's first stage's prepare made (NULL: nothing). Cannot fail. */
void runner_prepared_free(const rank_state *st, void *prepared);

/* ------------------------------------------------------------- mb_runner_permesh.c */

/* Whether the per-mesh pipeline runs (CUDA backend, or MESHBATCH_PIPELINE=0/1). */
int runner_pipeline_enabled(const rank_state *st);
/* Per-mesh run, static LPT schedule: this rank's sources through the pipeline. Collective. */
mb_error runner_run_static(rank_state *st);
/* Per-mesh run, dynamic schedule: a shared counter on rank 0 (MPI window). Collective. */
mb_error runner_run_dynamic(rank_state *st);

/* ------------------------------------------------------------- mb_runner_writer.c */

/* Per-mesh runs on several ranks writing mesh by mesh: st->wr, after rank
 * 0's st->out is begun (the temporary file's name is sent to the others,
 * which open it). Collective; errors agreed. */
mb_error runner_writer_open(rank_state *st);
/* A rank other than 0: hand finished mesh m on to the writer rank (its
 * description, or m whole); its values are written once the extents come
 * back (runner_writer_poll, _drain). Takes m. Not blocking. Errors:
 * those of mb_collection_describe (a mesh that fails the output's checks),
 * MB_ERR_MPI, MB_ERR_MEMORY. */
mb_error runner_writer_put(rank_state *st, mb_mesh *m);
/* Progress without blocking (the main thread, between meshes and while
 * the compute thread runs): rank 0 serves the requests that came, the
 * others write the meshes whose extents came. Errors: MB_ERR_MPI (the
 * writes' own errors are kept for the drain). */
mb_error runner_writer_poll(rank_state *st);
/* The end of the schedule, on every rank (e: this rank's outcome so far):
 * the others finish their writes (synced under --sync), close the file and
 * say done; rank 0 serves until every rank has. Returns e, else the first
 * error of this rank's writes (rank 0: or MB_ERR_IO where another rank's
 * failed). No-op (returns e) without st->wr. Not collective, but every
 * rank must call it before the next collective call. */
mb_error runner_writer_drain(rank_state *st, mb_error e);
/* Free st->wr (its communicator: every rank calls it). */
void runner_writer_close(rank_state *st);
/* With -v or --timings, rank 0 prints each rank's busy, write and wait
 * seconds and the meshes it handed on or served. Collective. */
mb_error runner_writer_report(const rank_state *st);

/* ------------------------------------------------------------- mb_runner_ckpt.c */

/* The log of rank `rank` in generation gen of checkpoint folder dir
 * ("DIR/run-G.rank-R.log") into path[len]. Not collective. */
void runner_ckpt_log_path(const char *dir, int gen, int rank, char *path, size_t len);
/* Per-mesh runs with a checkpoint (st->ckpt set): create this rank's log
 * (st->ckpt_gen) and start st->ck, the thread that appends finished meshes
 * to it and syncs it (unless MESHBATCH_CKPT_THREAD=0: both on the main
 * thread). No-op otherwise. Not collective. Errors: MB_ERR_IO (the log
 * cannot be created), MB_ERR_MEMORY (no thread). */
mb_error runner_ckpt_start(rank_state *st);
/* Keep finished mesh m (borrowed, unchanged; source s) in the checkpoint:
 * copied into a record (io/mb_ckptlog.h) and queued for the thread, which
 * appends it and syncs it at its next sync (runner_ckpt_sync_seconds); the
 * main thread waits while the queue holds MESHBATCH_CKPT_QUEUE_BYTES
 * (default 1 GiB). With MESHBATCH_CKPT_THREAD=0 appended and synced here.
 * No-op without st->ck. Main thread only. Errors: MB_ERR_IO where the
 * thread failed to append or sync an earlier one, MB_ERR_MEMORY. */
mb_error runner_ckpt_put(rank_state *st, mb_mesh *m, int64_t s);
/* Wait until every queued record is appended and synced (now, whatever
 * the period). No-op without st->ck. Errors: MB_ERR_IO (an append or sync
 * of the thread failed: the message names the log). */
mb_error runner_ckpt_drain(rank_state *st);
/* Wait until every queued record is appended, not synced (the page cache
 * holds it: a kill after it loses none; MESHBATCH_FAULT=kill). */
void runner_ckpt_settle(rank_state *st);
/* End the thread and free st->ck (its seconds and syncs kept in st, its
 * log's path in st->ckpt_log). Every queued record is appended first;
 * durable 1 (a stop, a failure): and synced; 0 (the schedule ended well,
 * the output comes next): not synced (the output's end unlinks the log,
 * runner_checkpoint_after_failure syncs it where it fails). No-op without
 * st->ck. Errors: as runner_ckpt_drain. */
mb_error runner_ckpt_stop(rank_state *st, int durable);
/* Seconds between the thread's syncs: 0 under --sync (as soon as the
 * queue is empty), else MESHBATCH_CKPT_SYNC_SECONDS (default 30; 0 or
 * less: 0). A machine crash loses at most the records of that many
 * seconds, detected by their CRC-32; a kill loses only the records still
 * queued (docs/guide.md, "Long batches"). Not collective. */
double runner_ckpt_sync_seconds(const rank_state *st);

/* ------------------------------------------------------------- mb_runner_partitioned.c */

/* Partitioned run: every source split over all ranks, slabs kept for the write. Collective. */
mb_error runner_run_partitioned(rank_state *st);

/* ------------------------------------------------------------- mb_runner_output.c */

/* A finished mesh joins the output (written now, or kept for the end); takes m in every case. */
mb_error runner_keep_mesh(rank_state *st, mb_mesh *m);
/* Keep a processed slab for the collective write; takes slab's rows (*slab zeroed). */
mb_error runner_keep_slab(rank_state *st, mb_mesh_slab *slab);
/* Partitioned runs: the checkpoint file of source s into ck[len] ("" without --checkpoint). */
void runner_checkpoint_path(const rank_state *st, int64_t s, char *ck, size_t len);
/* Open checkpoint file ck, a collection of one dataset, into *c. Collective over comm. */
mb_error runner_open_checkpoint_mesh(MPI_Comm comm, const char *ck, mb_collection **c);
/* mkdir -p of the folder that will hold path (rank 0). */
mb_error runner_make_parent_folder(const char *path);
/* Rank 0, before any work: output is a writable file, not a folder nor an input; names fit. */
mb_error runner_check_output(const char *output, const mb_inputs *in);
/* Rank 0: OUTPUT.lock held by a kernel write lock (fcntl) for the run's life; a lock file
 * no process holds (a run that is gone, even an unreaped zombie) is taken over. */
mb_error runner_take_lock(const char *output);
/* Rank 0, holding the lock: remove OUTPUT.tmp-PID files of stopped runs. */
void runner_remove_stale_temporaries(const char *output);
/* Rank 0: remove OUTPUT.lock and release its kernel lock. */
void runner_drop_lock(const char *output);
/* Rank 0: the checkpoint folder dir, emptied (fresh run) or checked by fingerprint (--resume);
 * *gen: this run's log generation (1, or on --resume one above the earlier logs', which are
 * synced here: a kill left their tail in the page cache). Errors: MB_ERR_ARG (another job's
 * checkpoint), MB_ERR_IO, MB_ERR_MEMORY. */
mb_error runner_open_checkpoint(const rank_state *st, const char *dir, int *gen);
/* --resume, per mesh, every rank (not collective): index the records of every earlier log of
 * st->ckpt (any number of ranks wrote them) whose headers hold, into st->ckidx; torn or
 * damaged bytes are skipped (rank 0 says how many). Errors: MB_ERR_IO, MB_ERR_MEMORY. */
mb_error runner_checkpoint_index(rank_state *st);
/* Source s (named name in messages) from the checkpoint into *m (caller frees): 1 where a
 * record of it passes its CRC-32 checks, else 0 (none, or a damaged one: a warning, and the
 * mesh is computed again). */
int runner_checkpoint_take(rank_state *st, int64_t s, const char *name, mb_mesh **m);
/* Free st->ckidx (NULL allowed). */
void runner_checkpoint_index_free(rank_state *st);
/* Rank 0, after a run that failed: a checkpoint dir asked for (keep) with finished meshes is
 * made durable (every log synced, the folder synced), kept, and a note (stderr) says how to
 * go on (--resume); the default one, or one without any mesh, is removed. */
void runner_checkpoint_after_failure(const char *dir, int keep);
/* Every rank, after the output is written (before rank 0 removes the
 * folder): unlink this rank's log (st->ckpt_log). */
void runner_remove_own_checkpoint(const rank_state *st);
/* Rank 0, after the output is written: remove the checkpoint folder dir. */
void runner_remove_checkpoint(const char *dir);
/* Whether the output is written mesh by mesh as they finish (per mesh, not MESHBATCH_WRITE=end;
 * on several ranks through the writer rank, mb_runner_writer.c). */
int runner_writes_per_mesh(const rank_state *st);
/* The bytes the output will take as far as the inputs and the stages tell
 * (every op's mb_op_info.grow: added fields, time series), a bound. */
double runner_expected_output_bytes(const rank_state *st);
/* Rank 0, before any work: refuse an output larger than the free disk of its
 * folder (statvfs) or a mesh needing more memory than MESHBATCH_MEMORY_LIMIT
 * (bytes) or, unset, the node's MemAvailable; the message gives the figures. */
mb_error runner_check_size(const rank_state *st);
/* Rank 0, before any work: every stage's mb_op_info.check_spacing (heat's
 * and wave's stability limits) on every grid3d dataset of the inputs'
 * collections (their spacing is declared); MB_ERR_ARG, a job error with
 * the stage's file and line, at the first grid that breaks one. Mesh files
 * are checked by the op when read. */
mb_error runner_check_grids(const rank_state *st);

#endif
