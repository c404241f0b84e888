/* meshbatch: the per-mesh checkpoint's own thread (see mb_runner_private.h).
 *
 * A finished mesh is kept for --resume as one record of this rank's
 * append-only checkpoint log, OUTPUT.ckpt/run-G.rank-R.log (io/mb_ckptlog.h;
 * docs/format.md, "Checkpoint log"). The main thread copies the mesh into
 * an encoded record (one memcpy per array, no HDF5; into the buffer of an
 * appended record where one is spare, which costs no page faults) and
 * hands the record over to this thread, which computes its CRC-32s and appends it with
 * write(2). The queue between them is bounded in bytes
 * (MESHBATCH_CKPT_QUEUE_BYTES, default 1 GiB; a record larger than the cap
 * goes alone): the main thread waits while it is full. The buffers of up
 * to a quarter of the cap of appended records are kept for the next
 * records, so a rank holds at most 1.25 times the cap.
 *
 * A record that write(2) returned is in the page cache, which survives the
 * process: after a kill (SIGKILL, a SLURM time limit past its grace, a
 * crash of the program) it is there, whole, for --resume; the records still
 * queued (not yet written) are lost and recomputed. Only a crash of the
 * machine can lose written records, the tail not yet synced; so this thread
 * calls fdatasync on the log at most every MESHBATCH_CKPT_SYNC_SECONDS
 * seconds (default 30; 0, or the run's --sync: as soon as the queue is
 * empty, one sync for the records written together: group commit, as a
 * database's log does: DeWitt et al., "Implementation techniques for main
 * memory database systems", SIGMOD 1984). After a crash of the machine the
 * unsynced tail may be missing, zeroed or torn: every record carries the
 * CRC-32 of its header and of its arrays, and --resume takes only the
 * records whose checks hold (runner_checkpoint_index). A stop (SIGTERM,
 * SIGINT) or a failure writes and syncs every queued record before its
 * message (runner_ckpt_stop with durable 1); a run that ends well writes
 * the queue and syncs nothing: its output is written and the log unlinked.
 *
 * MESHBATCH_CKPT_THREAD=0 appends and syncs each record on the main thread
 * instead (as the HDF5 checkpoints of earlier versions did, for comparison).
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

#include "mb_ckptlog.h"
#include "mb_log.h"
#include "mb_mpi.h"

typedef struct ckpt_item {
  mb_ckptlog_record rec;
  struct ckpt_item *next;
} ckpt_item;

struct runner_ckpt {
  char path[4400];         /* this rank's log */
  int fd;                  /* open for appending */
  int threaded;            /* 0: MESHBATCH_CKPT_THREAD=0, everything on the main thread */
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;       /* work queued, a flush, or quit (the thread waits on it) */
  pthread_cond_t done_cv;  /* a record written, a sync done (the main thread waits on it) */
  ckpt_item *head, *tail;  /* queued, not yet taken by the thread */
  ckpt_item *spare;        /* appended records whose buffers the next ones reuse */
  size_t spare_bytes;      /* their buffers' bytes (at most a quarter of the queue's cap) */
  size_t bytes, cap;       /* the queue's bytes, and its cap */
  int64_t queued, written, synced; /* records handed on / appended / appended and synced */
  int quit;                /* 1: end, after writing the queue (and syncing it if flush) */
  int flush;               /* 1: sync what is written now (a drain, a durable stop) */
  int dir_synced;          /* the folder synced once since the log was created */
  double period;           /* seconds between syncs; 0: as soon as the queue is empty */
  struct timespec last;    /* the last sync (CLOCK_MONOTONIC) */
  int failed;              /* a write or sync failed: message in why */
  char why[9600];
  double write_s;          /* the thread's seconds in CRCs, appends and syncs */
  int64_t syncs;           /* its fdatasync calls */
};

void runner_ckpt_log_path(const char *dir, int gen, int rank, char *path, size_t len) {
  snprintf(path, len, "%s/run-%d.rank-%d.log", dir, gen, rank);
}

static double since(const struct timespec *t) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - t->tv_sec) + 1e-9 * (double)(now.tv_nsec - t->tv_nsec);
}

/* Append rec (sealed here) to the log; 0, or the errno. */
static int append(runner_ckpt *c, mb_ckptlog_record *rec) {
  mb_ckptlog_seal(rec);
  for (size_t done = 0; done < rec->len;) {
    const ssize_t w = write(c->fd, rec->bytes + done, rec->len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return w < 0 ? errno : EIO;
    done += (size_t)w;
  }
  return 0;
}

/* fdatasync the log, and its folder the first time (the log's name); 0, or the errno. */
static int sync_log(runner_ckpt *c, const char **what) {
  *what = c->path;
  if (fdatasync(c->fd) != 0) return errno;
  if (c->dir_synced) return 0;
  char dir[4400];
  snprintf(dir, sizeof dir, "%s", c->path);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = '\0';
  *what = "the checkpoint folder";
  const int fd = open(slash ? dir : ".", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  const int err = fsync(fd) == 0 ? 0 : errno;
  close(fd);
  if (!err) c->dir_synced = 1;
  return err;
}

/* Whether what is written is synced now (the lock held). */
static int sync_due(const runner_ckpt *c) {
  return c->synced < c->written && !c->head &&
         (c->flush || c->period <= 0 || since(&c->last) >= c->period);
}

static void fail_with(runner_ckpt *c, const char *what, const char *path, int err) {
  if (c->failed) return;
  c->failed = 1;
  snprintf(c->why, sizeof c->why, "cannot %s the checkpoint %s: %s", what, path, strerror(err));
}

static void *ckpt_thread(void *arg) {
  runner_ckpt *c = arg;
  pthread_mutex_lock(&c->mu);
  for (;;) {
    while (!c->head && !sync_due(c) && !c->quit) {
      if (c->synced == c->written || c->period <= 0) {
        pthread_cond_wait(&c->cv, &c->mu);
        continue;
      }
      struct timespec until = c->last; /* the next sync's time */
      const double p = c->period;
      until.tv_sec += (time_t)p;
      until.tv_nsec += (long)((p - (double)(time_t)p) * 1e9);
      if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
      }
      pthread_cond_timedwait(&c->cv, &c->mu, &until);
    }
    if (c->head) { /* one record appended */
      ckpt_item *it = c->head;
      c->head = it->next;
      if (!c->head) c->tail = NULL;
      const int failed = c->failed;
      pthread_mutex_unlock(&c->mu);
      const double t0 = mb_wtime();
      const int err = failed ? 0 : append(c, &it->rec); /* after a failure nothing more */
      const double dt = mb_wtime() - t0;
      const size_t len = it->rec.len;
      pthread_mutex_lock(&c->mu);
      const int keep = c->spare_bytes + it->rec.cap <= c->cap / 4;
      if (keep) { /* its buffer for a later record */
        c->spare_bytes += it->rec.cap;
        it->next = c->spare;
        c->spare = it;
      } else { /* freed outside the lock (unmapping a large buffer takes a while) */
        pthread_mutex_unlock(&c->mu);
        mb_ckptlog_record_free(&it->rec);
        free(it);
        pthread_mutex_lock(&c->mu);
      }
      if (err) fail_with(c, "append to", c->path, err);
      c->bytes -= len;
      c->written++;
      c->write_s += dt;
      pthread_cond_broadcast(&c->done_cv);
      continue;
    }
    if (sync_due(c) || (c->quit && c->flush && c->synced < c->written)) {
      const int64_t upto = c->written;
      const int failed = c->failed;
      pthread_mutex_unlock(&c->mu);
      const char *what = "";
      const double t0 = mb_wtime();
      const int err = failed ? 0 : sync_log(c, &what);
      const double dt = mb_wtime() - t0;
      pthread_mutex_lock(&c->mu);
      if (err) fail_with(c, "sync to the disk", what, err);
      clock_gettime(CLOCK_MONOTONIC, &c->last);
      c->synced = upto;
      c->flush = 0;
      c->write_s += dt;
      c->syncs++;
      pthread_cond_broadcast(&c->done_cv);
      continue;
    }
    if (c->quit) break;
  }
  pthread_cond_broadcast(&c->done_cv);
  pthread_mutex_unlock(&c->mu);
  return NULL;
}

/* Whether the checkpoint's appends run on their own thread (unless MESHBATCH_CKPT_THREAD=0). */
static int ckpt_thread_wanted(void) {
  const char *e = getenv("MESHBATCH_CKPT_THREAD");
  return !(e && !strcmp(e, "0"));
}

/* The queue's cap in bytes: MESHBATCH_CKPT_QUEUE_BYTES, default 1 GiB. */
static size_t queue_cap(void) {
  const char *e = getenv("MESHBATCH_CKPT_QUEUE_BYTES");
  const double b = e && *e ? atof(e) : 0;
  return b >= 1 ? (size_t)b : (size_t)1 << 30;
}

mb_error runner_ckpt_start(rank_state *st) {
  if (!st->ckpt[0] || st->job->distribute == MB_DISTRIBUTE_PARTITIONED || st->ck)
    return MB_SUCCESS;
  runner_ckpt *c = calloc(1, sizeof *c);
  MB_CHECK(c, MB_ERR_MEMORY, "out of memory");
  runner_ckpt_log_path(st->ckpt, st->ckpt_gen, st->rank, c->path, sizeof c->path);
  c->fd = open(c->path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0666);
  if (c->fd < 0) {
    const int err = errno;
    free(c);
    MB_FAIL(MB_ERR_IO, "cannot create the checkpoint log %s/run-%d.rank-%d.log: %s", st->ckpt,
            st->ckpt_gen, st->rank, strerror(err));
  }
  c->period = runner_ckpt_sync_seconds(st);
  c->cap = queue_cap();
  c->threaded = ckpt_thread_wanted();
  clock_gettime(CLOCK_MONOTONIC, &c->last);
  st->ck = c;
  if (!c->threaded) return MB_SUCCESS;
  pthread_mutex_init(&c->mu, NULL);
  pthread_condattr_t ca; /* timed waits on the monotonic clock, as c->last */
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&c->cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_cond_init(&c->done_cv, NULL);
  const int rc = pthread_create(&c->thread, NULL, ckpt_thread, c);
  if (rc) {
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    pthread_cond_destroy(&c->done_cv);
    close(c->fd);
    free(c);
    st->ck = NULL;
    MB_FAIL(MB_ERR_MEMORY, "cannot start the checkpoint thread: %s", strerror(rc));
  }
  return MB_SUCCESS;
}

/* The first failure of the thread, as this thread's error. */
static mb_error ckpt_error(runner_ckpt *c) {
  if (c->threaded) pthread_mutex_lock(&c->mu);
  const int failed = c->failed;
  char why[9600];
  snprintf(why, sizeof why, "%s", c->why);
  if (c->threaded) pthread_mutex_unlock(&c->mu);
  MB_CHECK(!failed, MB_ERR_IO, "%s", why);
  return MB_SUCCESS;
}

/* A spare record (its buffer the largest kept), or NULL (the lock held where threaded). */
static ckpt_item *take_spare(runner_ckpt *c) {
  ckpt_item **best = NULL;
  for (ckpt_item **p = &c->spare; *p; p = &(*p)->next)
    if (!best || (*p)->rec.cap > (*best)->rec.cap) best = p;
  ckpt_item *it = best ? *best : NULL;
  if (it) {
    *best = it->next;
    c->spare_bytes -= it->rec.cap;
  }
  return it;
}

mb_error runner_ckpt_put(rank_state *st, mb_mesh *m, int64_t s) {
  runner_ckpt *c = st->ck;
  if (!c) return MB_SUCCESS;
  const double t0 = mb_wtime();
  /* one lock for the thread's failure and a spare buffer: each lock the thread holds costs
   * the main thread a wake-up where the cores are busy */
  if (c->threaded) pthread_mutex_lock(&c->mu);
  const int failed = c->failed;
  ckpt_item *it = failed ? NULL : take_spare(c);
  if (c->threaded) pthread_mutex_unlock(&c->mu);
  if (failed) MB_CALL(ckpt_error(c));
  if (!it) it = calloc(1, sizeof *it);
  MB_CHECK(it, MB_ERR_MEMORY, "out of memory");
  it->next = NULL;
  mb_error e = mb_ckptlog_encode(m, s, &it->rec);
  if (e) {
    mb_ckptlog_record_free(&it->rec);
    free(it);
    MB_CALL(e);
  }
  if (!c->threaded) { /* appended and synced here */
    int err = append(c, &it->rec);
    const char *what = c->path;
    if (!err) err = sync_log(c, &what);
    it->next = c->spare; /* its buffer for the next record */
    c->spare = it;
    c->spare_bytes += it->rec.cap;
    if (err) fail_with(c, err == EIO || err == ENOSPC ? "append to" : "sync to the disk", what, err);
    st->ckpt_s += mb_wtime() - t0;
    MB_CALL(ckpt_error(c));
    return MB_SUCCESS;
  }
  pthread_mutex_lock(&c->mu);
  while (c->bytes && c->bytes + it->rec.len > c->cap && !c->failed) /* the queue is full */
    pthread_cond_wait(&c->done_cv, &c->mu);
  if (c->tail) c->tail->next = it; else c->head = it;
  c->tail = it;
  c->bytes += it->rec.len;
  c->queued++;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  st->ckpt_s += mb_wtime() - t0;
  return MB_SUCCESS;
}

/* Wait until every queued record is appended (durable 0) or appended and
 * synced (durable 1); the seconds go to st->ckpt_wait_s. */
static void wait_for(rank_state *st, runner_ckpt *c, int durable) {
  const double t0 = mb_wtime();
  pthread_mutex_lock(&c->mu);
  if (durable) c->flush = 1;
  pthread_cond_broadcast(&c->cv);
  while (c->written < c->queued || (durable && c->synced < c->queued && !c->failed))
    pthread_cond_wait(&c->done_cv, &c->mu);
  pthread_mutex_unlock(&c->mu);
  st->ckpt_wait_s += mb_wtime() - t0;
}

mb_error runner_ckpt_drain(rank_state *st) {
  runner_ckpt *c = st->ck;
  if (!c || !c->threaded) return MB_SUCCESS;
  wait_for(st, c, 1);
  MB_CALL(ckpt_error(c));
  return MB_SUCCESS;
}

void runner_ckpt_settle(rank_state *st) {
  if (st->ck && st->ck->threaded) wait_for(st, st->ck, 0);
}

mb_error runner_ckpt_stop(rank_state *st, int durable) {
  runner_ckpt *c = st->ck;
  if (!c) return MB_SUCCESS;
  const double t0 = mb_wtime();
  if (c->threaded) {
    pthread_mutex_lock(&c->mu);
    c->quit = 1;
    c->flush = durable;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
  }
  st->ckpt_wait_s += mb_wtime() - t0;
  st->ckpt_sync_s = c->write_s;
  st->ckpt_groups = c->syncs;
  mb_error e = ckpt_error(c);
  if (c->threaded) {
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    pthread_cond_destroy(&c->done_cv);
  }
  close(c->fd);
  while (c->spare) {
    ckpt_item *it = c->spare;
    c->spare = it->next;
    mb_ckptlog_record_free(&it->rec);
    free(it);
  }
  snprintf(st->ckpt_log, sizeof st->ckpt_log, "%s", c->path);
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
