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

#include "mb_collection.h"
#include "mb_meshfile.h"
#include "mb_log.h"
#include "mb_mpi.h"

/* ------------------------------------------------------------- finished meshes */

/* A finished mesh joins the output: written into it at once where the rank
 * writes the output mesh by mesh (then freed), else kept for the collective
 * write at the end. Takes m in every case. */
mb_error runner_keep_mesh(rank_state *st, mb_mesh *m) {
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

/* A finished mesh from the checkpoint: the one dataset of ck, as source s. */
mb_error runner_read_checkpoint(const char *ck, int64_t s, mb_mesh **m) {
  mb_collection *c = NULL;
  MB_CALL(runner_open_checkpoint_mesh(MPI_COMM_SELF, ck, &c));
  mb_error e = mb_collection_read(c, 0, m);
  mb_collection_close(c);
  MB_CALL(e);
  (*m)->index = s;
  return MB_SUCCESS;
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
mb_error runner_open_checkpoint(const rank_state *st, const char *dir) {
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
void runner_remove_checkpoint(const char *dir) {
  clear_folder(dir);
  rmdir(dir);
}

/* Rank 0: OUTPUT.lock, created exclusively, says which run writes OUTPUT
 * ("HOST PID"). A lock of a process that no longer runs on this host is
 * stale and taken over; any other refuses the run. Removed at the end. */
mb_error runner_take_lock(const char *output) {
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

void runner_drop_lock(const char *output) {
  char lock[4200];
  snprintf(lock, sizeof lock, "%s.lock", output);
  unlink(lock);
}

/* Whether the output is written mesh by mesh as the meshes finish (inside
 * the per-mesh pipeline) rather than once, collectively, at the end: on
 * one rank, per mesh, unless MESHBATCH_WRITE=end. Over several ranks the
 * file's groups and datasets are created collectively (parallel HDF5),
 * which needs every rank's meshes at once. */
int runner_writes_per_mesh(const rank_state *st) {
  if (st->size != 1 || st->job->distribute == MB_DISTRIBUTE_PARTITIONED) return 0;
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
