/* meshbatch: the per-mesh checkpoint's own thread (see mb_runner_private.h).
 *
 * A finished mesh is kept for --resume in OUTPUT.ckpt/. The main thread
 * writes it through HDF5 (not thread-safe, so the write stays there) into
 * the page cache as S.part: written under a temporary name and renamed
 * once closed, so S.part is always whole for the kernel. The page cache
 * survives the process: after a kill (SIGKILL, a SLURM time limit past its
 * grace, a crash of the program) S.part is there, whole, and --resume on
 * the same machine and boot takes it (runner_open_checkpoint). Only a crash
 * of the machine can lose it, or leave it empty or partial; so this thread
 * makes the S.part files durable at most every MESHBATCH_CKPT_SYNC_SECONDS
 * seconds (default 30; 0, or the run's --sync: every group, as soon as the
 * files come), a group at a time (group commit, as a database's log does:
 * DeWitt et al., "Implementation techniques for main memory database
 * systems", SIGMOD 1984):
 *
 *   for every S.part of the group: fsync(S.part), rename(S.part, S.h5);
 *   then one fsync of the folder for the whole group.
 *
 * S.h5 is durable; after a reboot, or on another host, --resume trusts only
 * S.h5 (the S.part files are removed first). A stop (SIGTERM, SIGINT) or a
 * failure commits every queued file before its message (runner_ckpt_stop
 * with durable 1); a run that ends well commits nothing more: its output is
 * written and its checkpoint removed, and unsynced files are cheap to free
 * (about 0.1 ms a file, against 2-3 ms for a synced one: docs/benchmarks.md,
 * "Per-mesh batches on 4 GPUs, round 2").
 */
#include "mb_runner_private.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mb_log.h"
#include "mb_mpi.h"

typedef struct ckpt_item {
  int64_t s; /* the source */
  struct ckpt_item *next;
} ckpt_item;

struct runner_ckpt {
  char dir[4200];          /* OUTPUT.ckpt */
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;       /* work queued, or quit (the thread waits on it) */
  pthread_cond_t idle_cv;  /* a group done (the drain waits on it) */
  ckpt_item *head, *tail;  /* queued, not yet taken by the thread */
  int64_t queued, done;    /* meshes handed on / made durable (or failed) */
  int quit;                /* 1: end (committing the queue if flush) */
  int flush;               /* 1: commit the queue now (a drain, a durable stop) */
  double period;           /* seconds between commits; 0: every group as it comes */
  struct timespec last;    /* the last commit (CLOCK_MONOTONIC) */
  int failed;              /* a sync or rename failed: message in why */
  char why[9600];
  double sync_s;           /* the thread's seconds in fsync and rename */
  int64_t groups;          /* folder syncs (one per group) */
};

void runner_ckpt_paths(const char *dir, int64_t s, char *part, char *final, size_t len) {
  snprintf(part, len, "%s/%lld.part", dir, (long long)s);
  snprintf(final, len, "%s/%lld.h5", dir, (long long)s);
}

/* fsync a file or folder by name; 0, or the errno. */
static int sync_name(const char *path) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  const int err = fsync(fd) == 0 ? 0 : errno;
  close(fd);
  return err;
}

/* One group: each file synced and renamed to its trusted name, then the folder synced. */
static void commit_group(runner_ckpt *c, ckpt_item *group, char *why, size_t len, int *failed) {
  int n = 0;
  for (ckpt_item *it = group; it && !*failed; it = it->next, n++) {
    char part[4400], final[4400];
    runner_ckpt_paths(c->dir, it->s, part, final, sizeof part);
    int err = sync_name(part);
    if (err) {
      snprintf(why, len, "cannot sync the checkpoint %s to the disk: %s", part, strerror(err));
      *failed = 1;
    } else if (rename(part, final) != 0) {
      snprintf(why, len, "cannot rename the checkpoint %s to %s: %s", part, final,
               strerror(errno));
      *failed = 1;
    }
  }
  if (n && !*failed) {
    const int err = sync_name(c->dir);
    if (err) {
      snprintf(why, len, "cannot sync the checkpoint folder %s to the disk: %s", c->dir,
               strerror(err));
      *failed = 1;
    }
  }
}

static double since(const struct timespec *t) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - t->tv_sec) + 1e-9 * (double)(now.tv_nsec - t->tv_nsec);
}

/* Whether the queue is committed now (the lock held). */
static int commit_due(const runner_ckpt *c) {
  return c->head && (c->flush || c->period <= 0 || since(&c->last) >= c->period);
}

static void *ckpt_thread(void *arg) {
  runner_ckpt *c = arg;
  pthread_mutex_lock(&c->mu);
  for (;;) {
    while (!commit_due(c) && !c->quit) {
      if (!c->head) {
        pthread_cond_wait(&c->cv, &c->mu);
        continue;
      }
      struct timespec until = c->last; /* the next commit's time */
      const double p = c->period;
      until.tv_sec += (time_t)p;
      until.tv_nsec += (long)((p - (double)(time_t)p) * 1e9);
      if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
      }
      pthread_cond_timedwait(&c->cv, &c->mu, &until);
    }
    if (!commit_due(c)) break; /* quit, nothing to commit (or not asked to) */
    ckpt_item *group = c->head; /* everything queued: one group */
    int64_t n = 0;
    for (ckpt_item *it = group; it; it = it->next) n++;
    c->head = c->tail = NULL;
    c->flush = 0;
    const int was_failed = c->failed;
    pthread_mutex_unlock(&c->mu);
    char why[9600] = "";
    int failed = was_failed; /* after a failure nothing more is trusted */
    const double t0 = mb_wtime();
    commit_group(c, group, why, sizeof why, &failed);
    const double dt = mb_wtime() - t0;
    while (group) {
      ckpt_item *it = group;
      group = it->next;
      free(it);
    }
    pthread_mutex_lock(&c->mu);
    clock_gettime(CLOCK_MONOTONIC, &c->last);
    if (failed && !c->failed) {
      c->failed = 1;
      snprintf(c->why, sizeof c->why, "%s", why);
    }
    c->sync_s += dt;
    c->groups++;
    c->done += n;
    pthread_cond_broadcast(&c->idle_cv);
  }
  pthread_cond_broadcast(&c->idle_cv);
  pthread_mutex_unlock(&c->mu);
  return NULL;
}

/* Whether the checkpoint's syncs run on their own thread: per-mesh runs
 * with a checkpoint, unless MESHBATCH_CKPT_THREAD=0 (each mesh made durable
 * on the main thread, as before, for comparison). */
static int ckpt_thread_wanted(const rank_state *st) {
  const char *e = getenv("MESHBATCH_CKPT_THREAD");
  return st->ckpt[0] && st->job->distribute != MB_DISTRIBUTE_PARTITIONED &&
         !(e && !strcmp(e, "0"));
}

mb_error runner_ckpt_start(rank_state *st) {
  if (!ckpt_thread_wanted(st) || st->ck) return MB_SUCCESS;
  runner_ckpt *c = calloc(1, sizeof *c);
  MB_CHECK(c, MB_ERR_MEMORY, "out of memory");
  snprintf(c->dir, sizeof c->dir, "%s", st->ckpt);
  c->period = runner_ckpt_sync_seconds(st);
  clock_gettime(CLOCK_MONOTONIC, &c->last);
  pthread_mutex_init(&c->mu, NULL);
  pthread_condattr_t ca; /* timed waits on the monotonic clock, as c->last */
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&c->cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_cond_init(&c->idle_cv, NULL);
  const int rc = pthread_create(&c->thread, NULL, ckpt_thread, c);
  if (rc) {
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    pthread_cond_destroy(&c->idle_cv);
    free(c);
    MB_FAIL(MB_ERR_MEMORY, "cannot start the checkpoint thread: %s", strerror(rc));
  }
  st->ck = c;
  return MB_SUCCESS;
}

/* The first failure of the thread, as this thread's error. */
static mb_error ckpt_error(runner_ckpt *c) {
  pthread_mutex_lock(&c->mu);
  const int failed = c->failed;
  char why[9600];
  snprintf(why, sizeof why, "%s", c->why);
  pthread_mutex_unlock(&c->mu);
  MB_CHECK(!failed, MB_ERR_IO, "%s", why);
  return MB_SUCCESS;
}

/* Queue source s's S.part for the thread's next commit. Errors: MB_ERR_MEMORY. */
static mb_error enqueue(runner_ckpt *c, int64_t s) {
  ckpt_item *it = malloc(sizeof *it);
  MB_CHECK(it, MB_ERR_MEMORY, "out of memory");
  *it = (ckpt_item){.s = s};
  pthread_mutex_lock(&c->mu);
  if (c->tail) c->tail->next = it; else c->head = it;
  c->tail = it;
  c->queued++;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  return MB_SUCCESS;
}

mb_error runner_ckpt_put(rank_state *st, mb_mesh *m, int64_t s) {
  char part[4400], final[4400];
  const double t0 = mb_wtime();
  mb_error e = MB_SUCCESS;
  if (!st->ck) { /* durable here: synced, renamed, the folder synced */
    runner_checkpoint_path(st, s, final, sizeof final);
    e = mb_collection_write_checkpoint(MPI_COMM_SELF, final, 1, &m, 0, NULL);
    st->ckpt_s += mb_wtime() - t0;
    MB_CALL(e);
    return MB_SUCCESS;
  }
  runner_ckpt *c = st->ck;
  MB_CALL(ckpt_error(c));
  runner_ckpt_paths(c->dir, s, part, final, sizeof part);
  e = mb_collection_write_checkpoint_unsynced(MPI_COMM_SELF, part, 1, &m);
  if (!e) e = enqueue(c, s);
  st->ckpt_s += mb_wtime() - t0;
  MB_CALL(e);
  return MB_SUCCESS;
}

mb_error runner_ckpt_adopt(rank_state *st, int64_t s) {
  if (!st->ck) return MB_SUCCESS;
  MB_CALL(enqueue(st->ck, s));
  return MB_SUCCESS;
}

mb_error runner_ckpt_drain(rank_state *st) {
  runner_ckpt *c = st->ck;
  if (!c) return MB_SUCCESS;
  const double t0 = mb_wtime();
  pthread_mutex_lock(&c->mu);
  c->flush = 1;
  pthread_cond_broadcast(&c->cv);
  while (c->done < c->queued) pthread_cond_wait(&c->idle_cv, &c->mu);
  c->flush = 0; /* nothing queued is left */
  pthread_mutex_unlock(&c->mu);
  st->ckpt_wait_s += mb_wtime() - t0;
  MB_CALL(ckpt_error(c));
  return MB_SUCCESS;
}

mb_error runner_ckpt_stop(rank_state *st, int durable) {
  runner_ckpt *c = st->ck;
  if (!c) return MB_SUCCESS;
  const double t0 = mb_wtime();
  pthread_mutex_lock(&c->mu);
  c->quit = 1;
  c->flush = durable;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  pthread_join(c->thread, NULL);
  while (c->head) { /* not committed (durable 0): whole S.part files, for a kill */
    ckpt_item *it = c->head;
    c->head = it->next;
    free(it);
  }
  st->ckpt_wait_s += mb_wtime() - t0;
  st->ckpt_sync_s = c->sync_s;
  st->ckpt_groups = c->groups;
  mb_error e = ckpt_error(c);
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
  pthread_cond_destroy(&c->idle_cv);
  free(c);
  st->ck = NULL;
  MB_CALL(e);
  return MB_SUCCESS;
}

double runner_ckpt_sync_seconds(const rank_state *st) {
  if (st->job->sync) return 0;
  const char *e = getenv("MESHBATCH_CKPT_SYNC_SECONDS");
  const double t = e && *e ? atof(e) : 30;
  return t > 0 ? t : 0;
}
