/* meshbatch: the runner's output (see mb_runner.h): the checks before any
 * work, the lock, stale temporaries, the checkpoint folder and its files
 * (resume), and the finished meshes and slabs kept for the output. */
#include "mb_runner_private.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "mb_ckptlog.h"
#include "mb_collection.h"
#include "mb_meshfile.h"
#include "mb_log.h"
#include "mb_mpi.h"

/* ------------------------------------------------------------- finished meshes */

/* A finished mesh joins the output: written into it at once where the
 * output is written mesh by mesh (rank 0 puts it, another rank hands it to
 * rank 0, the writer rank; then freed), else kept for the collective write
 * at the end. Takes m in every case. */
mb_error runner_keep_mesh(rank_state *st, mb_mesh *m) {
  if (st->out) {
    const double t0 = mb_wtime();
    mb_error e = mb_collection_writer_put(st->out, m); /* takes m */
    st->put_s += mb_wtime() - t0;
    MB_CALL(e);
    MB_CALL(runner_writer_poll(st));
    return MB_SUCCESS;
  }
  if (st->wr) {
    MB_CALL(runner_writer_put(st, m)); /* takes m */
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
void runner_checkpoint_path(const rank_state *st, int64_t s, char *ck, size_t len) {
  ck[0] = '\0';
  if (st->ckpt[0]) snprintf(ck, len, "%s/%lld.h5", st->ckpt, (long long)s);
}

/* Open a checkpoint file: a collection of one dataset. Collective over comm. */
mb_error runner_open_checkpoint_mesh(MPI_Comm comm, const char *ck, mb_collection **c) {
  MB_CALL(mb_collection_open(comm, ck, c));
  if (mb_collection_count(*c) == 1) return MB_SUCCESS;
  mb_collection_close(*c);
  *c = NULL;
  MB_FAIL(MB_ERR_FORMAT, "%s: a checkpoint holds one dataset", ck);
}

/* Keep a processed slab for the collective write. */
mb_error runner_keep_slab(rank_state *st, mb_mesh_slab *slab) {
  mb_mesh_slab *k = realloc(st->slabs, sizeof *k * (size_t)(st->nslabs + 1));
  MB_CHECK(k, MB_ERR_MEMORY, "out of memory");
  st->slabs = k;
  st->slabs[st->nslabs++] = *slab;
  *slab = (mb_mesh_slab){0};
  return MB_SUCCESS;
}

/* ------------------------------------------------------------- output, lock, checkpoint */

/* mkdir -p of the folder that will hold path (rank 0). */
mb_error runner_make_parent_folder(const char *path) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  /* "o.h5/" names a folder: runner_check_output refuses it, nothing is made first */
  if (!slash || slash == dir || !slash[1]) return MB_SUCCESS;
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
mb_error runner_check_output(const char *output, const mb_inputs *in) {
  struct stat so;
  const size_t len = strlen(output);
  MB_CHECK(len > 0 && output[len - 1] != '/' && (stat(output, &so) != 0 || !S_ISDIR(so.st_mode)),
           MB_ERR_ARG, "the output %s is a folder: give the file to write, e.g. %s%sout.h5",
           output, output, len && output[len - 1] == '/' ? "" : "/");
  MB_CHECK(stat(output, &so) != 0 || S_ISREG(so.st_mode), MB_ERR_ARG,
           "the output %s is %s, not a file: meshbatch writes the output beside it under a "
           "temporary name and renames it there; give the path of a file, e.g. out.h5", output,
           S_ISCHR(so.st_mode) ? "a character device" : S_ISBLK(so.st_mode) ? "a block device"
           : S_ISFIFO(so.st_mode) ? "a FIFO" : S_ISSOCK(so.st_mode) ? "a socket" : "special");
  const mb_meshfile_format fmt = mb_meshfile_format_of(output);
  MB_CHECK(fmt == MB_MESHFILE_UNKNOWN, MB_ERR_ARG,
           "the output %s names a mesh file, but `meshbatch run` writes an HDF5 collection: name "
           "it %.*s.h5, and `meshbatch export` the result to %s", output,
           (int)(strrchr(output, '.') ? strrchr(output, '.') - output : (long)strlen(output)),
           output, strrchr(output, '.') ? strrchr(output, '.') + 1 : "another format");
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

/* The first line of a checkpoint's job.id; what follows it is the list of
 * what the checkpointed meshes depend on (job_identity). */
static const char ckpt_magic[] = "meshbatch checkpoint 2";

/* Append a line to a growing text (NULL after an allocation failure). */
static char *append_line(char *text, size_t *len, const char *line) {
  if (!text) return NULL;
  const size_t n = strlen(line);
  char *t = realloc(text, *len + n + 2);
  if (!t) {
    free(text);
    return NULL;
  }
  memcpy(t + *len, line, n);
  t[*len + n] = '\n';
  t[*len + n + 1] = '\0';
  *len += n + 1;
  return t;
}

/* What the meshes of a checkpoint depend on, one line each: every source
 * (its file's real path, size and modification time, and the mesh's name
 * in it), the distribution, the GPU working precision, and every stage
 * with all its values (defaults included). Not the job file's text: a
 * comment, the keys' order or formatting change nothing. Caller frees;
 * NULL when out of memory. */
static char *job_identity(const rank_state *st) {
  size_t len = 0;
  char *text = calloc(1, 1);
  char line[9000];
  for (int64_t k = 0; k < st->inputs->nsources; k++) {
    const mb_source *src = &st->inputs->sources[k];
    char real[4096];
    struct stat sb;
    if (!realpath(src->path, real)) snprintf(real, sizeof real, "%s", src->path);
    if (stat(real, &sb) != 0) memset(&sb, 0, sizeof sb);
    snprintf(line, sizeof line, "input %lld: %s in %s (%lld bytes, modified %lld.%09ld)",
             (long long)k, src->name, real, (long long)sb.st_size, (long long)sb.st_mtim.tv_sec,
             sb.st_mtim.tv_nsec);
    text = append_line(text, &len, line);
  }
  snprintf(line, sizeof line, "distribute: %s", mb_distribute_name(st->job->distribute));
  text = append_line(text, &len, line);
  snprintf(line, sizeof line, "precision: %s", mb_precision_name(st->job->precision));
  text = append_line(text, &len, line);
  for (int s = 0; s < st->job->nstages; s++) {
    char d[8000];
    mb_stage_describe(&st->job->stages[s], d, sizeof d);
    snprintf(line, sizeof line, "stage %d: %s", s, d);
    text = append_line(text, &len, line);
  }
  return text;
}

/* The next line of *p into line[len] (without its newline); 0 at the end. */
static int next_line(const char **p, char *line, size_t len) {
  if (!*p || !**p) return 0;
  const char *nl = strchr(*p, '\n');
  const size_t n = nl ? (size_t)(nl - *p) : strlen(*p);
  snprintf(line, len, "%.*s", (int)(n < len ? n : len - 1), *p);
  *p += n + (nl != NULL);
  return 1;
}

/* What differs between a checkpoint's line had and this job's line now,
 * into why[len]: for a stage of the same op, the first key whose value
 * changed ("stage 0 (taubin): iterations was 10, is 20 now"). */
static void explain_change(const char *had, const char *now, char *why, size_t len) {
  int sa = -1, sb = -1, na = 0, nb = 0;
  char opa[64] = "", opb[64] = "";
  if (sscanf(had, "stage %d: %63s %n", &sa, opa, &na) == 2 &&
      sscanf(now, "stage %d: %63s %n", &sb, opb, &nb) == 2 && sa == sb) {
    if (strcmp(opa, opb)) {
      snprintf(why, len, "stage %d was %s, is %s now", sa, opa, opb);
      return;
    }
    const char *pa = had + na, *pb = now + nb;
    for (;;) { /* the same op: the same keys in the same order */
      char ka[128], kb[128];
      int ra = 0, rb = 0;
      if (sscanf(pa, "%127s%n", ka, &ra) != 1 || sscanf(pb, "%127s%n", kb, &rb) != 1) break;
      if (strcmp(ka, kb)) {
        char *ea = strchr(ka, '='), *eb = strchr(kb, '=');
        if (ea && eb) {
          *ea = *eb = '\0';
          if (!strcmp(ka, kb)) {
            snprintf(why, len, "stage %d (%s): %s was %s, is %s now", sa, opa, ka, ea + 1, eb + 1);
            return;
          }
        }
        break;
      }
      pa += ra;
      pb += rb;
    }
  }
  snprintf(why, len, "it was made with '%s', this job has '%s'", had, now);
}

/* Compare a checkpoint's job.id text with this job's identity: "" where
 * they agree, else what changed into why[len]. */
static void compare_identity(const char *have, const char *want, char *why, size_t len) {
  why[0] = '\0';
  char a[9000], b[9000];
  if (!next_line(&have, a, sizeof a) || strcmp(a, ckpt_magic)) {
    snprintf(why, len, "it was made by an earlier version of meshbatch");
    return;
  }
  for (;;) {
    const int ha = next_line(&have, a, sizeof a), hb = next_line(&want, b, sizeof b);
    if (!ha && !hb) return;
    if (ha && hb && !strcmp(a, b)) continue;
    if (ha && hb) explain_change(a, b, why, len);
    else if (ha) snprintf(why, len, "it was made with '%s', which this job has not", a);
    else snprintf(why, len, "this job has '%s', which it was not made with", b);
    return;
  }
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

/* The generation G of a log file's name run-G.rank-R.log, else -1. */
static int log_generation(const char *name) {
  int g = -1, r = -1, len = 0;
  if (sscanf(name, "run-%d.rank-%d.log%n", &g, &r, &len) != 2 || name[len] || g < 0 || r < 0)
    return -1;
  return g;
}

/* --resume: the logs of the earlier runs, synced (a kill leaves their tail in the page cache
 * only: from now on this run's syncs cover them too); the highest generation, or 0. */
static int sync_earlier_logs(const char *dir) {
  int gen = 0;
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    const int g = log_generation(e->d_name);
    if (g < 0) continue;
    if (g > gen) gen = g;
    char q[4600];
    snprintf(q, sizeof q, "%s/%s", dir, e->d_name);
    const int fd = open(q, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      (void)fdatasync(fd);
      close(fd);
    }
  }
  if (d) closedir(d);
  return gen;
}

/* Rank 0: the checkpoint folder OUTPUT.ckpt. Without --resume any earlier
 * one is emptied; with it, the list of what its meshes depend on
 * (job.id, job_identity) must be this job's, else the run is refused with
 * what changed. */
mb_error runner_open_checkpoint(const rank_state *st, const char *dir, int *gen) {
  char id[4400];
  snprintf(id, sizeof id, "%s/job.id", dir);
  char *want = job_identity(st), *have = NULL;
  MB_CHECK(want, MB_ERR_MEMORY, "out of memory");
  FILE *f = fopen(id, "r");
  if (f) {
    size_t len = 0;
    have = calloc(1, 1);
    char buf[4096];
    for (size_t n; have && (n = fread(buf, 1, sizeof buf, f)) > 0;) {
      char *h = realloc(have, len + n + 1);
      if (!h) {
        free(have);
        have = NULL;
        break;
      }
      have = h;
      memcpy(have + len, buf, n);
      len += n;
      have[len] = '\0';
    }
    fclose(f);
    if (!have) free(want);
    MB_CHECK(have, MB_ERR_MEMORY, "out of memory");
  }
  if (st->job->resume && have) {
    char why[20000];
    compare_identity(have, want, why, sizeof why);
    if (why[0]) {
      free(have);
      free(want);
      MB_FAIL(MB_ERR_ARG, "%s was made by another job or other inputs: %s; remove it, or run "
              "without --resume to start again", dir, why);
    }
  }
  free(have);
  *gen = 1;
  if (st->job->resume && f) *gen = sync_earlier_logs(dir) + 1;
  if (st->job->resume && !f)
    mb_log(MB_LOG_NORMAL, "resume: no checkpoint at %s: every mesh is computed", dir);
  if (!st->job->resume) clear_folder(dir); /* a fresh start: no stale mesh may be taken later */
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    free(want);
    MB_FAIL(MB_ERR_IO, "cannot create %s: %s", dir, strerror(errno));
  }
  f = fopen(id, "w");
  int ok = f && fprintf(f, "%s\n%s", ckpt_magic, want) > 0;
  const int closed = f && fclose(f) == 0;
  free(want);
  MB_CHECK(ok && closed, MB_ERR_IO, "cannot write %s: %s", id, strerror(errno));
  return MB_SUCCESS;
}

/* Sync what is left unsynced in dir (a failure after a schedule that ended
 * well: the ranks' threads ended without a sync): every log, then the
 * folder. The finished meshes in it: the records whose headers hold, and
 * the S.h5 of partitioned runs. */
static int64_t commit_logs(const char *dir, int sync) {
  DIR *d = opendir(dir);
  int64_t meshes = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    const size_t n = strlen(e->d_name);
    meshes += n > 3 && !strcmp(e->d_name + n - 3, ".h5");
    if (log_generation(e->d_name) < 0) continue;
    char q[4600];
    snprintf(q, sizeof q, "%s/%s", dir, e->d_name);
    const int fd = open(q, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    if (sync) (void)fdatasync(fd);
    mb_ckptlog_entry *ent = NULL;
    int64_t k = 0;
    uint64_t torn = 0;
    if (mb_ckptlog_scan(fd, q, 0, &ent, &k, &torn) == MB_SUCCESS) meshes += k;
    free(ent);
    close(fd);
  }
  if (d) closedir(d);
  const int fd = sync ? open(dir, O_RDONLY | O_CLOEXEC) : -1;
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
  return meshes;
}

/* Rank 0, after a failed run: the finished meshes stay for --resume. */
void runner_checkpoint_after_failure(const char *dir, int keep) {
  DIR *d = opendir(dir);
  if (!d) return;
  closedir(d);
  const int64_t meshes = commit_logs(dir, keep);
  if (!meshes || !keep) {
    runner_remove_checkpoint(dir);
    return;
  }
  fprintf(stderr, "meshbatch: note: the %lld %s finished %s kept in %s/: once the cause "
          "is fixed, run the same command with --resume to compute only the rest\n",
          (long long)meshes, mb_plural(meshes, "mesh", "meshes"), mb_plural(meshes, "is", "are"),
          dir);
  fflush(stderr);
}

/* Every rank, after the output is written: its own log (one unlink; a
 * synced log's blocks cost more to free than an unsynced one's). */
void runner_remove_own_checkpoint(const rank_state *st) {
  if (st->ckpt_log[0]) unlink(st->ckpt_log);
}

/* ------------------------------------------------------------- --resume: the logs' records */

struct runner_ckpt_index {
  int nfiles;
  int *fds;
  char **paths;
  int64_t n;
  mb_ckptlog_entry *e;   /* sorted by source, then file */
};

static int by_source(const void *a, const void *b) {
  const mb_ckptlog_entry *x = a, *y = b;
  if (x->source != y->source) return x->source < y->source ? -1 : 1;
  return (x->file > y->file) - (x->file < y->file);
}

mb_error runner_checkpoint_index(rank_state *st) {
  runner_ckpt_index *ix = calloc(1, sizeof *ix);
  MB_CHECK(ix, MB_ERR_MEMORY, "out of memory");
  st->ckidx = ix;
  DIR *d = opendir(st->ckpt);
  mb_error e = MB_SUCCESS;
  for (struct dirent *de; !e && d && (de = readdir(d));) {
    const int g = log_generation(de->d_name);
    if (g < 0 || g >= st->ckpt_gen) continue;
    char q[4600];
    snprintf(q, sizeof q, "%s/%s", st->ckpt, de->d_name);
    const int fd = open(q, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue; /* removed meanwhile: its meshes are computed */
    int *fds = realloc(ix->fds, sizeof *fds * (size_t)(ix->nfiles + 1));
    char **paths = fds ? realloc(ix->paths, sizeof *paths * (size_t)(ix->nfiles + 1)) : NULL;
    if (fds) ix->fds = fds;
    if (paths) ix->paths = paths;
    char *pq = paths ? mb_strdup(q) : NULL;
    if (!pq) {
      close(fd);
      e = MB_ERR_MEMORY;
      break;
    }
    ix->fds[ix->nfiles] = fd;
    ix->paths[ix->nfiles] = pq;
    uint64_t torn = 0;
    e = mb_ckptlog_scan(fd, q, ix->nfiles++, &ix->e, &ix->n, &torn);
    if (!e && torn && st->rank == 0)
      mb_log(MB_LOG_NORMAL, "resume: %s: %llu bytes of torn or damaged records skipped (a "
             "record cut short by a kill or a crash of the machine; its meshes are computed)",
             q, (unsigned long long)torn);
  }
  if (d) closedir(d);
  if (e == MB_ERR_MEMORY) MB_FAIL(MB_ERR_MEMORY, "out of memory");
  MB_CALL(e);
  if (ix->n) qsort(ix->e, (size_t)ix->n, sizeof *ix->e, by_source);
  return MB_SUCCESS;
}

int runner_checkpoint_take(rank_state *st, int64_t s, const char *name, mb_mesh **m) {
  const runner_ckpt_index *ix = st->ckidx;
  if (!ix || !ix->n) return 0;
  int64_t lo = 0, hi = ix->n; /* the first entry of source s */
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (ix->e[mid].source < s) lo = mid + 1; else hi = mid;
  }
  for (int64_t k = lo; k < ix->n && ix->e[k].source == s; k++) {
    const mb_ckptlog_entry *en = &ix->e[k];
    if (mb_ckptlog_read(ix->fds[en->file], ix->paths[en->file], en, m) == MB_SUCCESS) {
      (*m)->index = s;
      return 1;
    }
    mb_log_warning("[rank %d] %s: not taken from the checkpoint, computed again: %s", st->rank,
                   name, mb_error_message());
  }
  return 0;
}

void runner_checkpoint_index_free(rank_state *st) {
  runner_ckpt_index *ix = st->ckidx;
  if (!ix) return;
  for (int i = 0; i < ix->nfiles; i++) {
    close(ix->fds[i]);
    free(ix->paths[i]);
  }
  free(ix->fds);
  free(ix->paths);
  free(ix->e);
  free(ix);
  st->ckidx = NULL;
}

/* Rank 0, after the output is written: the checkpoint is no longer needed. */
void runner_remove_checkpoint(const char *dir) {
  clear_folder(dir);
  rmdir(dir);
}

/* Rank 0: OUTPUT.lock, held for the run's life by a write lock of the
 * kernel (fcntl F_SETLK, which NFS keeps too), says which run writes OUTPUT
 * ("HOST PID"). The kernel drops the lock when its process ends, however
 * it ends (a SIGKILL, a crash; a dead process that its parent has not
 * reaped yet holds none), so a lock file that is there but not locked is
 * a gone run's and is taken over at once; a locked one refuses the run.
 * The descriptor stays open until runner_drop_lock. */
static int lock_fd = -1;

mb_error runner_take_lock(const char *output) {
  char lock[4200], host[256] = "", line[512] = "";
  snprintf(lock, sizeof lock, "%s.lock", output);
  gethostname(host, sizeof host - 1);
  for (int attempt = 0; attempt < 20; attempt++) {
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    MB_CHECK(fd >= 0, MB_ERR_IO, "cannot create %s: %s (nothing was computed)", lock,
             strerror(errno));
    const ssize_t got = pread(fd, line, sizeof line - 1, 0);
    line[got > 0 ? got : 0] = '\0';
    line[strcspn(line, "\n")] = '\0';
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (fcntl(fd, F_SETLK, &fl) != 0) {
      const int err = errno;
      close(fd);
      MB_CHECK(err == EACCES || err == EAGAIN, MB_ERR_IO, "cannot lock %s: %s (nothing was "
               "computed)", lock, strerror(err));
      MB_FAIL(MB_ERR_IO,
              "%s is being written by another run (%s: host and process id); wait for it, "
              "or choose another output", output, line[0] ? line : "its lock names no process");
    }
    struct stat a, b; /* still the file of that name (not removed by its last holder) */
    if (fstat(fd, &a) != 0 || stat(lock, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
      close(fd);
      continue;
    }
    if (pread(fd, line, sizeof line - 1, 0) > 0 && line[0] && line[0] != '\n') {
      line[strcspn(line, "\n")] = '\0';
      mb_log(MB_LOG_NORMAL, "taking over %s of a run that is gone (%s)", lock, line);
    }
    char mine[400];
    const int n = snprintf(mine, sizeof mine, "%s %ld\n", host, (long)getpid());
    const int ok = ftruncate(fd, 0) == 0 && pwrite(fd, mine, (size_t)n, 0) == n;
    if (!ok) {
      const int err = errno;
      close(fd);
      MB_FAIL(MB_ERR_IO, "cannot write %s: %s", lock, strerror(err));
    }
    lock_fd = fd;
    return MB_SUCCESS;
  }
  MB_FAIL(MB_ERR_IO, "cannot take %s: it is removed and made again by other runs", lock);
}

/* Rank 0, holding OUTPUT.lock: remove the OUTPUT.tmp-PID files that runs
 * killed while writing left (a run writing mesh by mesh holds its file
 * from the start); no live run can own one, as each holds the lock. */
void runner_remove_stale_temporaries(const char *output) {
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

/* Removed while still locked, then closed (a run that opened the old
 * file meanwhile finds it gone and makes a new one). */
void runner_drop_lock(const char *output) {
  char lock[4200];
  snprintf(lock, sizeof lock, "%s.lock", output);
  unlink(lock);
  if (lock_fd >= 0) close(lock_fd);
  lock_fd = -1;
}

/* Whether the output is written mesh by mesh as the meshes finish (inside
 * the per-mesh pipeline) rather than once, collectively, at the end: per
 * mesh, unless MESHBATCH_WRITE=end. Over several ranks rank 0 makes every
 * mesh's groups and datasets (parallel HDF5 makes metadata collectively,
 * so one process holds the file) and the others write their meshes'
 * values at the offsets it hands out (mb_runner_writer.c). */
int runner_writes_per_mesh(const rank_state *st) {
  if (st->job->distribute == MB_DISTRIBUTE_PARTITIONED) return 0;
  const char *e = getenv("MESHBATCH_WRITE");
  return !(e && !strcmp(e, "end"));
}

/* The estimated size of source k after the job's stages (mb_op_info.grow):
 * from its collection's declared sizes, or for a mesh file its size in
 * bytes (counted as rows of 24 bytes). *bytes: its output; *in_bytes: its
 * input. Corrupt datasets (declared sizes the file does not back) count 0:
 * they fail when read. */
static void source_estimate(const rank_state *st, int64_t k, double *bytes, double *in_bytes) {
  const mb_source *src = &st->inputs->sources[k];
  const mb_collection *c = src->collection >= 0 ? st->inputs->collections[src->collection] : NULL;
  const mb_mesh_info *info = c ? mb_collection_info(c, src->entry) : NULL;
  mb_size_estimate s = {0};
  double pos = 3; /* position values per row: 2 planar, none for a grid */
  struct stat sb;
  if (info) {
    s = (mb_size_estimate){(double)info->nv, (double)info->nf, (double)info->nidx,
                           (double)info->nvalues, (double)info->nface_values};
    pos = info->kind == MB_KIND_GRID3D ? 0 : info->kind == MB_KIND_SURFACE ? 3 : 2;
    if (!info->triangles) s.nidx += s.faces + 1; /* the offsets */
  } else if (src->collection < 0 && stat(src->path, &sb) == 0) {
    s.rows = (double)sb.st_size / 24.0;
  }
  const double before = 8.0 * (s.rows * (pos + s.row_values) + s.faces * s.face_values + s.nidx);
  for (int i = 0; i < st->job->nstages; i++)
    if (st->job->stages[i].op->grow) st->job->stages[i].op->grow(st->job->stages[i].params, &s);
  *in_bytes = before;
  *bytes = 8.0 * (s.rows * (pos + s.row_values) + s.faces * s.face_values + s.nidx);
}

double runner_expected_output_bytes(const rank_state *st) {
  double bytes = 0;
  for (int64_t k = 0; k < st->inputs->nsources; k++) {
    double out, in;
    source_estimate(st, k, &out, &in);
    bytes += out;
  }
  return bytes;
}

/* The memory limit: MESHBATCH_MEMORY_LIMIT (bytes; a number with an
 * optional k, M, G or T of powers of 1024), else MemAvailable of
 * /proc/meminfo; -1 where neither tells. *what names it for messages. */
static double memory_limit(const char **what) {
  const char *env = getenv("MESHBATCH_MEMORY_LIMIT");
  if (env && *env) {
    char *end;
    double v = strtod(env, &end);
    const char *units = "kMGT", *u = *end ? strchr(units, *end) : NULL;
    if (u) v *= (double)(1ull << (10 * (u - units + 1)));
    *what = "MESHBATCH_MEMORY_LIMIT";
    if (v > 0) return v;
  }
  *what = "MemAvailable of /proc/meminfo";
  FILE *fp = fopen("/proc/meminfo", "r");
  if (!fp) return -1;
  char line[256];
  double kb = -1;
  while (fgets(line, sizeof line, fp))
    if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
  fclose(fp);
  return kb > 0 ? kb * 1024.0 : -1;
}

mb_error runner_check_size(const rank_state *st) {
  double total = 0, worst = 0;
  int64_t wk = -1;
  for (int64_t k = 0; k < st->inputs->nsources; k++) {
    double out, in;
    source_estimate(st, k, &out, &in);
    total += out;
    /* a mesh in memory holds at least its larger form (the output holds the input's
     * arrays and what the stages add; work arrays come on top): refused only where
     * even that passes the limit */
    const double held = out > in ? out : in;
    if (held > worst) worst = held, wk = k;
  }
  char dir[4096];
  output_folder(st->job->output, dir, sizeof dir);
  struct statvfs v;
  const double avail = statvfs(dir, &v) == 0 ? (double)v.f_bavail * (double)v.f_frsize : -1;
  const char *knob = getenv("MESHBATCH_SPACE_CHECK"); /* "0": skipped, as in io's checks */
  MB_CHECK(avail < 0 || total <= avail || (knob && !strcmp(knob, "0")), MB_ERR_IO,
           "no room for the output %s: the job's stages would write about %.4g MB (their fields "
           "and time series counted), %.4g MB are free in %s: no space for it; nothing was "
           "computed",
           st->job->output, total / 1e6, avail / 1e6, dir);
  const char *what = "";
  const double limit = memory_limit(&what);
  const int split = st->job->distribute == MB_DISTRIBUTE_PARTITIONED;
  const double need = split ? worst / st->size : worst;
  MB_CHECK(limit < 0 || wk < 0 || need <= limit, MB_ERR_MEMORY,
           "mesh '%s' (%s) would need at least %.4g MB of memory%s (its fields and time series "
           "counted), more than the %.4g MB of %s; nothing was computed",
           st->inputs->sources[wk].name, st->inputs->sources[wk].path, need / 1e6,
           split ? " on each rank" : "", limit / 1e6, what);
  return MB_SUCCESS;
}

mb_error runner_check_grids(const rank_state *st) {
  for (int64_t k = 0; k < st->inputs->nsources; k++) {
    const mb_source *src = &st->inputs->sources[k];
    const mb_collection *c = src->collection >= 0 ? st->inputs->collections[src->collection] : NULL;
    const mb_mesh_info *info = c ? mb_collection_info(c, src->entry) : NULL;
    if (!info || info->kind != MB_KIND_GRID3D || info->problem[0]) continue;
    for (int i = 0; i < st->job->nstages; i++) {
      const mb_stage *stage = &st->job->stages[i];
      if (stage->op->check_spacing)
        MB_CALL(stage->op->check_spacing(stage, src->name, info->spacing));
    }
  }
  return MB_SUCCESS;
}
