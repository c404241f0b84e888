/* meshbatch: the per-mesh checkpoint's own thread (see mb_runner_private.h).
 *
 * A finished mesh is kept for --resume as OUTPUT.ckpt/S.h5, a collection of
 * one dataset that must be on the disk whole before it takes that name (a
 * crash of the machine must not leave a name --resume trusts over data that
 * never reached the disk). Made durable on the main thread, each mesh cost
 * two fsyncs and a rename on the critical path (14.8 s of a 39.4 s batch of
 * 1,000 meshes on one H100, docs/benchmarks.md). Now the main thread only
 * writes the file through HDF5 into the page cache as S.part (HDF5 is not
 * thread-safe, so the HDF5 write stays on the main thread), and hands its
 * name to this thread, which does the durable part, a group at a time
 * (group commit, as a database's log does: DeWitt et al., "Implementation
 * techniques for main memory database systems", SIGMOD 1984):
 *
 *   for every S.part of the group: fsync(S.part), rename(S.part, S.h5);
 *   then one fsync of the folder for the whole group.
 *
 * A group is whatever queued while the previous group synced, so under load
 * the folder is synced once per group instead of once per mesh, and the
 * file syncs overlap the compute and the next reads. What --resume recovers:
 * after a stop (SIGTERM, SIGINT), a failed run, or the end of the schedule,
 * the runner waits for the queue (runner_ckpt_drain): every finished mesh
 * is recovered. After a SIGKILL of the process, the meshes whose S.part was
 * not yet renamed are computed again (at most the group in flight and those
 * queued behind it, a fraction of a second of meshes); after a crash of the
 * machine, also those renamed after the folder's last sync. A mesh named
 * S.h5 is always whole.
 */
#include "mb_runner_private.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
  int quit;                /* 1: end once the queue is empty */
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

static void *ckpt_thread(void *arg) {
  runner_ckpt *c = arg;
  pthread_mutex_lock(&c->mu);
  for (;;) {
    while (!c->head && !c->quit) pthread_cond_wait(&c->cv, &c->mu);
    if (!c->head) break;
    ckpt_item *group = c->head; /* everything queued: one group */
    int64_t n = 0;
    for (ckpt_item *it = group; it; it = it->next) n++;
    c->head = c->tail = NULL;
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
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
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
  ckpt_item *it = e ? NULL : malloc(sizeof *it);
  if (!e && !it) e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  if (it) {
    *it = (ckpt_item){.s = s};
    pthread_mutex_lock(&c->mu);
    if (c->tail) c->tail->next = it; else c->head = it;
    c->tail = it;
    c->queued++;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
  }
  st->ckpt_s += mb_wtime() - t0;
  MB_CALL(e);
  return MB_SUCCESS;
}

mb_error runner_ckpt_drain(rank_state *st) {
  runner_ckpt *c = st->ck;
  if (!c) return MB_SUCCESS;
  const double t0 = mb_wtime();
  pthread_mutex_lock(&c->mu);
  while (c->done < c->queued) pthread_cond_wait(&c->idle_cv, &c->mu);
  pthread_mutex_unlock(&c->mu);
  st->ckpt_wait_s += mb_wtime() - t0;
  MB_CALL(ckpt_error(c));
  return MB_SUCCESS;
}

mb_error runner_ckpt_stop(rank_state *st) {
  runner_ckpt *c = st->ck;
  if (!c) return MB_SUCCESS;
  const double t0 = mb_wtime();
  pthread_mutex_lock(&c->mu);
  c->quit = 1;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  pthread_join(c->thread, NULL);
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
