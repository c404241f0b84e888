/* LD_PRELOAD shim for cli_test.py publish_undo: the renames with which
 * meshbatch puts an output into place (io/mb_collection_publish.c), seen
 * and broken on request.
 *   MB_SHIM_FAIL_AT=NAME   the exchange or rename onto a file named NAME
 *                          (last path component) fails with EIO
 *   MB_SHIM_NO_EXCHANGE=1  renameat2 fails with ENOSYS (a kernel or file
 *                          system without RENAME_EXCHANGE)
 * Every renameat2 and rename call is printed to stderr ("shim: ..."), and
 * every fsync and fdatasync with the path of its descriptor ("shim: fsync
 * PATH", "shim: fdatasync PATH").
 * Built without sanitizers; forwards all other system calls unchanged. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int fails_at(const char *path) {
  const char *want = getenv("MB_SHIM_FAIL_AT");
  const char *slash = strrchr(path, '/');
  return want && *want && !strcmp(slash ? slash + 1 : path, want);
}

long syscall(long n, ...) {
  static long (*real)(long, ...);
  if (!real) real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
  va_list ap;
  va_start(ap, n);
  long a[6];
  for (int i = 0; i < 6; i++) a[i] = va_arg(ap, long);
  va_end(ap);
  if (n != SYS_renameat2) return real(n, a[0], a[1], a[2], a[3], a[4], a[5]);
  const char *from = (const char *)a[1], *to = (const char *)a[3];
  long r;
  int err = 0;
  if (getenv("MB_SHIM_NO_EXCHANGE")) err = ENOSYS;
  else if (fails_at(to)) err = EIO;
  if (err) {
    errno = err;
    r = -1;
  } else {
    r = real(n, a[0], a[1], a[2], a[3], a[4], a[5]);
    err = r ? errno : 0;
  }
  fprintf(stderr, "shim: renameat2 %s %s flags %ld -> %ld %s\n", from, to, a[4], r,
          err ? strerror(err) : "");
  if (err) errno = err; /* after fprintf */
  return r;
}

int rename(const char *from, const char *to) {
  static int (*real)(const char *, const char *);
  if (!real) real = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
  int r, err = 0;
  if (fails_at(to)) {
    err = EIO;
    r = -1;
  } else {
    r = real(from, to);
    err = r ? errno : 0;
  }
  fprintf(stderr, "shim: rename %s %s -> %d %s\n", from, to, r, err ? strerror(err) : "");
  if (err) errno = err;
  return r;
}

/* Call real (fsync or fdatasync, named what) on fd and print the call. */
static int traced_sync(int (*real)(int), const char *what, int fd) {
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, path, sizeof path - 1);
  path[n > 0 ? n : 0] = '\0';
  const int r = real(fd);
  const int err = errno;
  fprintf(stderr, "shim: %s %s -> %d\n", what, path, r);
  errno = err;
  return r;
}

int fsync(int fd) {
  static int (*real)(int);
  if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  return traced_sync(real, "fsync", fd);
}

int fdatasync(int fd) {
  static int (*real)(int);
  if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
  return traced_sync(real, "fdatasync", fd);
}
