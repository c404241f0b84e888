/* meshbatch: durability and publishing of a collection: free space, the
 * XDMF companions, fsync, and putting every file into place at once by
 * exchange or rename (see mb_collection_private.h, docs/format.md). */
#include "mb_collection.h"
#include "mb_collection_private.h"
#include "mb_log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Bytes of the arrays the file will hold (every piece of every mesh):
 * positions, faces and their offsets, the XDMF connectivity, and every
 * field, at 8 bytes a value (float32 fields counted at 8: a bound). */
double mb_coll_estimated_bytes(const mb_wset *w) {
  double b = 0;
  for (int64_t k = 0; k < w->np; k++) {
    const mb_wpiece *p = &w->p[k];
    double fv = 0, ff = 0;
    for (int f = 0; f < p->nfields; f++) fv += p->fields[f].ncomp;
    for (int f = 0; f < p->nface_fields; f++) ff += p->face_fields[f].ncomp;
    const double rows = p->kind == MB_KIND_GRID3D ? (double)p->gn[0] * p->gn[1] * p->gn[2]
                                                  : (double)p->nvrows;
    b += 8.0 * (rows * (3 + fv) + (double)p->nfrows * (1 + ff) + (double)p->nidx +
                (double)p->mixed_len);
  }
  return b;
}

/* The folder of path into dir[len]: "." for a bare name, "/" for "/x". */
static void folder_of(const char *path, char *dir, size_t len) {
  snprintf(dir, len, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) *(slash == dir ? slash + 1 : slash) = '\0';
  else snprintf(dir, len, ".");
}

/* Bytes free to this user in the folder of path (statvfs), -1 where it
 * cannot tell. */
double mb_coll_free_bytes(const char *path) {
  char dir[MB_PATH_MAX];
  folder_of(path, dir, sizeof dir);
  struct statvfs v;
  return statvfs(dir, &v) == 0 ? (double)v.f_bavail * (double)v.f_frsize : -1;
}

int mb_coll_space_check_on(void) {
  const char *e = getenv("MESHBATCH_SPACE_CHECK");
  return !(e && !strcmp(e, "0"));
}

const char *mb_coll_full_note(const char *path) {
  const double avail = mb_coll_free_bytes(path);
  return avail >= 0 && avail < 1e6 ? ": no space left on the disk (or the quota is full)" : "";
}

mb_error mb_coll_close_h5(MPI_Comm comm, hid_t file, const char *tmp, int discard) {
  int rank = 0;
  MB_CALL_MPI(MPI_Comm_rank(comm, &rank));
  /* The flush is a file sync under MPI-IO (MPI_File_sync), too dear for
   * every output (`--sync` asks for it): it is made only where the disk is
   * nearly full, the case it is for. Agreed, since the flush is collective. */
  /* An MPI failure here is reported after the close, which every rank
   * must reach (it is collective). */
  const double avail = rank == 0 ? mb_coll_free_bytes(tmp) : 0;
  int low = rank == 0 && avail >= 0 && avail < MB_COLL_LOW_SPACE;
  const int rc0 = MPI_Bcast(&low, 1, MPI_INT, 0, comm);
  int bad = discard || (low && H5Fflush(file, H5F_SCOPE_LOCAL) < 0);
  const int rc1 = MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm);
  if (rc1 != MPI_SUCCESS) bad = 1;
  /* the file is lost: make room for the close's own metadata writes */
  if (bad && rank == 0 && truncate(tmp, 0) != 0) { /* the close is tried all the same */ }
  herr_t st = H5Fclose(file);
  /* A discarded file whose close failed (its metadata writes met a disk that
   * another process filled again after the truncation) stays open in HDF5,
   * whose termination at MPI_Finalize then crashed closing it (seen with two
   * ranks filling one disk, disk_full_surface_2). A file of one process
   * (comm of size 1) is closed again after room is made once more; a
   * collective close is not retried (the ranks would have to agree). */
  int nranks = 1;
  if (MPI_Comm_size(comm, &nranks) != MPI_SUCCESS) nranks = 0;
  for (int tries = 0; st < 0 && bad && nranks == 1 && tries < 3; tries++) {
    if (truncate(tmp, 0) != 0) { /* the close is tried all the same */ }
    H5E_BEGIN_TRY { st = H5Fclose(file); } H5E_END_TRY;
    if (st < 0 && H5Iis_valid(file) <= 0) break; /* closed after all */
  }
  if (rc0 != MPI_SUCCESS)
    return mb_error_mpi_failed(rc0, __FILE__, __LINE__, __func__,
                               "MPI_Bcast(&low, 1, MPI_INT, 0, comm)");
  if (rc1 != MPI_SUCCESS)
    return mb_error_mpi_failed(rc1, __FILE__, __LINE__, __func__,
                               "MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm)");
  MB_CHECK(discard || (!bad && st >= 0), MB_ERR_IO, "cannot write %s: %s%s", tmp,
           bad ? "flushing the file's metadata failed" : "H5Fclose failed",
           rank == 0 ? mb_coll_full_note(tmp) : "");
  return MB_SUCCESS;
}

/* Refuse to start a file the folder has no room for (statvfs; where it
 * cannot tell, go on): a clear error instead of a failed write. */
mb_error mb_coll_check_space(const char *tmp, double need) {
  char dir[MB_PATH_MAX];
  folder_of(tmp, dir, sizeof dir);
  const double avail = mb_coll_free_bytes(tmp);
  if (avail < 0 || !mb_coll_space_check_on()) return MB_SUCCESS;
  MB_CHECK(avail >= need, MB_ERR_IO,
           "no room for the output in %s: it needs about %.1f MB, %.1f MB are free (the disk "
           "or quota is full); nothing was written", dir, need / 1e6, avail / 1e6);
  return MB_SUCCESS;
}

/* ------------------------------------------------------ write: publishing */

/* path without a trailing ".h5" (the XDMF stem). */
size_t mb_collection_stem_length(const char *path) {
  const size_t n = strlen(path);
  return n > 3 && !strcmp(path + n - 3, ".h5") ? n - 3 : n;
}

static void xdmf_stem(const char *path, char *stem, size_t len) {
  snprintf(stem, len, "%.*s", (int)mb_collection_stem_length(path), path);
}

/* Remove the temporary files of the first n entries of tmps; free them all. */
static void drop_tmps(char **tmps, int64_t n, int64_t total) {
  for (int64_t i = 0; i < total; i++) {
    if (i < n && tmps[i]) unlink(tmps[i]);
    free(tmps[i]);
  }
  free(tmps);
}

/* Final names of the XDMF files: [0] the collection, [1 + i] mesh i. */
static char *xdmf_name(const char *stem, const char *mesh, const char *suffix) {
  size_t len = strlen(stem) + (mesh ? strlen(mesh) + 1 : 0) + strlen(suffix) + 8;
  char *s = malloc(len);
  if (s) snprintf(s, len, "%s%s%s.xdmf%s", stem, mesh ? "." : "", mesh ? mesh : "", suffix);
  return s;
}

/* Write every XDMF file under a temporary name (tmps[i]). Rank 0 only. */
static mb_error write_xdmf_tmps(const char *stem, const char *h5name, const char *suffix,
                                const mb_wset *w, char **tmps, mb_xdmf_mesh *xm) {
  for (int64_t i = 0; i < w->n; i++) xm[i] = w->m[i].x;
  for (int64_t i = 0; i <= w->n; i++) {
    tmps[i] = xdmf_name(stem, i ? xm[i - 1].name : NULL, suffix);
    MB_CHECK(tmps[i], MB_ERR_MEMORY, "out of memory");
    if (i == 0)
      MB_CALL(mb_xdmf_write_collection(tmps[0], h5name, w->n, xm));
    else
      MB_CALL(mb_xdmf_write_mesh(tmps[i], h5name, &xm[i - 1]));
  }
  return MB_SUCCESS;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Whether the file at path is a per-dataset XDMF file of the collection
 * h5name: one of its first 64 KiB names ">h5name:/meshes/" (a data item
 * of that file, as mb_xdmf_write_mesh writes them). */
static int names_collection(const char *path, const char *h5name) {
  enum { HEAD = 65536 };
  FILE *f = fopen(path, "rb");
  char *buf = f ? malloc(HEAD + 1) : NULL;
  if (!buf) {
    if (f) fclose(f);
    return 0;
  }
  const size_t n = fread(buf, 1, HEAD, f);
  fclose(f);
  buf[n] = '\0';
  char key[MB_PATH_MAX + 16];
  snprintf(key, sizeof key, ">%s:/meshes/", h5name);
  const int yes = strstr(buf, key) != NULL;
  free(buf);
  return yes;
}

/* After a publication with XDMF: remove the per-dataset files
 * <stem>.<name>.xdmf that an earlier publication of this collection left
 * for datasets it no longer holds (a file of that form that does not name
 * h5name's datasets is left alone), so that no XDMF file beside the
 * collection names a dataset it lacks. Rank 0; best effort (a file that
 * cannot be read or removed stays, said at verbose level). */
static void drop_stale_xdmf(const char *stem, const char *h5name, const mb_wset *w) {
  if (strpbrk(h5name, "&<>\"'")) return; /* escaped in the XDMF text: not matched here */
  char dir[MB_PATH_MAX];
  folder_of(stem, dir, sizeof dir);
  const char *slash = strrchr(stem, '/');
  const char *base = slash ? slash + 1 : stem;
  const size_t nb = strlen(base);
  const char **names = malloc(sizeof *names * (size_t)(w->n ? w->n : 1));
  DIR *d = names ? opendir(dir) : NULL;
  if (!d) {
    free(names);
    return;
  }
  for (int64_t i = 0; i < w->n; i++) names[i] = w->m[i].x.name;
  qsort(names, (size_t)w->n, sizeof *names, cmp_str);
  char name[MB_PATH_MAX], path[2 * MB_PATH_MAX];
  for (struct dirent *e; (e = readdir(d));) {
    const size_t len = strlen(e->d_name);
    if (len <= nb + 6 || strncmp(e->d_name, base, nb) || e->d_name[nb] != '.' ||
        strcmp(e->d_name + len - 5, ".xdmf"))
      continue;
    snprintf(name, sizeof name, "%.*s", (int)(len - nb - 6), e->d_name + nb + 1);
    const char *key = name;
    if (bsearch(&key, names, (size_t)w->n, sizeof *names, cmp_str)) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || !names_collection(path, h5name)) continue;
    if (unlink(path) == 0)
      mb_log(MB_LOG_VERBOSE, "removed %s: its dataset '%s' is no longer in %s", path, name, h5name);
    else
      mb_log(MB_LOG_VERBOSE, "cannot remove %s (its dataset '%s' is no longer in %s): %s", path,
             name, h5name, strerror(errno));
  }
  closedir(d);
  free(names);
}

/* Swap two names in one step (Linux renameat2 with RENAME_EXCHANGE). Used
 * rather than rename() over an earlier file: ext4 writes out at once the
 * delayed blocks of a file renamed over another (auto_da_alloc: 0.33 s for
 * a 619 MB output), not those of an exchanged one, and the earlier file
 * stays whole at the temporary name, so it needs no hard link. -1 with
 * errno ENOSYS where there is no such call. */
static int exchange(const char *a, const char *b) {
#ifdef SYS_renameat2
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1) /* <linux/fs.h>; glibc declares it only for _GNU_SOURCE */
#endif
  return (int)syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
#else
  (void)a;
  (void)b;
  errno = ENOSYS;
  return -1;
#endif
}

/* The file system or kernel cannot exchange (NFS, Lustre, kernels before
 * 3.15): rename with a hard link instead. Any other errno is a real error. */
static int exchange_unsupported(int err) {
  return err == EINVAL || err == ENOSYS || err == EOPNOTSUPP || err == ENOTSUP;
}

/* One file put into place by publish: its temporary and final names, and
 * how an earlier file at the final name is kept until the end: swapped to
 * the temporary name, or (no exchange there) a hard link at bak. */
typedef struct mb_pub {
  char tmp[MB_PATH_MAX], final[MB_PATH_MAX], bak[MB_PATH_MAX];
  int had;    /* an earlier file stood at final */
  int linked; /* and bak links to it */
  enum { PUB_WAITING, PUB_EXCHANGED, PUB_RENAMED } moved;
} mb_pub;

/* Put back what publish had moved: the earlier files where there were any,
 * nothing new where there were none; remove the temporaries and links. */
static void publish_undo(mb_pub *p, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    if (p[i].moved == PUB_EXCHANGED) {
      /* swap back: the temporary name then holds the new file; should that
       * fail, the earlier file is moved over the new one instead */
      if (exchange(p[i].tmp, p[i].final) == 0 || rename(p[i].tmp, p[i].final) == 0)
        unlink(p[i].tmp);
    } else if (p[i].moved == PUB_RENAMED) {
      if (p[i].linked) rename(p[i].bak, p[i].final);
      else unlink(p[i].final);
    } else {
      unlink(p[i].tmp);
      if (p[i].linked) unlink(p[i].bak);
    }
  }
}

/* Put one file into place: exchanged with the earlier file, or where there
 * is none or the file system cannot exchange, renamed (the earlier file
 * kept by a hard link until the end). */
static mb_error publish_one(const char *path, mb_pub *p, const char *suffix) {
  if (p->had) {
    if (exchange(p->tmp, p->final) == 0) {
      p->moved = PUB_EXCHANGED;
      return MB_SUCCESS;
    }
    MB_CHECK(exchange_unsupported(errno), MB_ERR_IO,
             "cannot publish %s: cannot exchange %s and %s: %s; the earlier output was put "
             "back", path, p->tmp, p->final, strerror(errno));
    snprintf(p->bak, sizeof p->bak, "%s%s.bak", p->final, suffix);
    MB_CHECK(link(p->final, p->bak) == 0, MB_ERR_IO,
             "cannot publish %s: cannot keep the earlier %s while replacing it: %s; the earlier "
             "output was put back", path, p->final, strerror(errno));
    p->linked = 1;
  }
  MB_CHECK(rename(p->tmp, p->final) == 0, MB_ERR_IO,
           "cannot rename %s to %s: %s; the earlier output was put back", p->tmp, p->final,
           strerror(errno));
  p->moved = PUB_RENAMED;
  return MB_SUCCESS;
}

/* fsync a file (or a folder) by name: its data, or its entries, on the disk. */
static mb_error sync_path(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  MB_CHECK(fd >= 0, MB_ERR_IO, "cannot open %s to sync it: %s", path, strerror(errno));
  const int ok = fsync(fd) == 0;
  const int err = errno;
  close(fd);
  MB_CHECK(ok, MB_ERR_IO, "cannot sync %s to the disk: %s", path, strerror(err));
  return MB_SUCCESS;
}

/* The folder of path, synced: renames into it on the disk. */
static mb_error sync_folder(const char *path) {
  char dir[MB_PATH_MAX];
  folder_of(path, dir, sizeof dir);
  MB_CALL(sync_path(dir));
  return MB_SUCCESS;
}

/* Rank 0: write the XDMF companions under temporary names, then put the
 * HDF5 file and the XDMF files into place (docs/format.md, "Writing"):
 * every final name is checked first (a folder or other non-file there
 * stops the publication before anything is moved), each file is exchanged
 * with the earlier one at its name (or renamed, the earlier one kept by a
 * hard link), and if any step fails every earlier file is put back and
 * nothing new stays: the previous output is left whole. durable: every
 * file is synced before the first name changes (the HDF5 file's data
 * already, by write_h5 or the writer), the folder after the last. xdmf 0:
 * the HDF5 file alone. */
mb_error mb_coll_publish(const char *path, const char *tmp, const char *suffix,
                         const mb_wset *w, int durable, int xdmf) {
  char stem[MB_PATH_MAX];
  xdmf_stem(path, stem, sizeof stem);
  const char *slash = strrchr(path, '/');
  const char *h5name = slash ? slash + 1 : path;
  const int64_t total = xdmf ? w->n + 1 : 0; /* XDMF files: the collection's and each mesh's */
  char **tmps = calloc((size_t)total + 1, sizeof *tmps);
  mb_xdmf_mesh *xm = calloc((size_t)total + 1, sizeof *xm);
  mb_pub *p = calloc((size_t)total + 1, sizeof *p);
  if (!tmps || !xm || !p) {
    free(tmps);
    free(xm);
    free(p);
    MB_FAIL(MB_ERR_MEMORY, "out of memory");
  }
  mb_error e = xdmf ? write_xdmf_tmps(stem, h5name, suffix, w, tmps, xm) : MB_SUCCESS;
  free(xm);
  const size_t slen = strlen(suffix);
  snprintf(p[0].tmp, sizeof p[0].tmp, "%s", tmp);
  snprintf(p[0].final, sizeof p[0].final, "%s", path);
  for (int64_t i = 0; i < total; i++) {
    if (!tmps[i]) continue;
    snprintf(p[i + 1].tmp, sizeof p[i + 1].tmp, "%s", tmps[i]);
    snprintf(p[i + 1].final, sizeof p[i + 1].final, "%.*s", (int)(strlen(tmps[i]) - slen), tmps[i]);
  }
  drop_tmps(tmps, e ? total : 0, total); /* names copied; files removed only on failure */
  MB_CALL_GOTO(e, fail, e);
  for (int64_t i = 0; i <= total && !e; i++) { /* what stands at each final name */
    struct stat st;
    if (lstat(p[i].final, &st) != 0) continue;
    if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
      e = mb_error_set(MB_ERR_IO, __FILE__, __LINE__, __func__,
                       "cannot publish %s: %s is in the way (%s, not a file); nothing was "
                       "replaced", path, p[i].final, S_ISDIR(st.st_mode) ? "a folder" : S_ISCHR(st.st_mode) ? "a character device"
                       : S_ISBLK(st.st_mode) ? "a block device" : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : "a special file");
      break;
    }
    p[i].had = 1;
  }
  for (int64_t i = 0; i <= total && !e && durable; i++) e = sync_path(p[i].tmp);
  for (int64_t i = 0; i <= total && !e; i++) e = publish_one(path, &p[i], suffix);
  if (!e && durable) e = sync_folder(path);
fail:
  if (e) {
    publish_undo(p, total + 1);
  } else {
    for (int64_t i = 0; i <= total; i++) { /* the earlier files, now at these names */
      if (p[i].moved == PUB_EXCHANGED) unlink(p[i].tmp);
      if (p[i].linked) unlink(p[i].bak);
    }
    if (xdmf) drop_stale_xdmf(stem, h5name, w);
  }
  free(p);
  if (e) mb_error_trace(__FILE__, __LINE__, __func__);
  return e;
}

/* Rank 0: the folder of path must exist. */
mb_error mb_coll_check_folder(const char *path) {
  char dir[MB_PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash) return MB_SUCCESS;
  if (slash == dir) slash[1] = '\0'; else *slash = '\0';
  struct stat st;
  MB_CHECK(stat(dir, &st) == 0, MB_ERR_IO, "cannot write %s: folder %s: %s", path, dir,
           strerror(errno));
  MB_CHECK(S_ISDIR(st.st_mode), MB_ERR_IO, "cannot write %s: %s is not a folder", path, dir);
  return MB_SUCCESS;
}
