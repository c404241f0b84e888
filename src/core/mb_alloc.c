/* meshbatch: large arrays on transparent huge pages (see mb_alloc.h). */
#include "mb_alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

/* Advise huge pages for the whole pages inside [p, p + bytes). Large
 * blocks come from mmap in the C library, so the range lies inside one
 * anonymous mapping; the kernel backs each 2 MiB-aligned part of it with a
 * huge page on its first touch. Failures are ignored: it is a hint. */
static void advise_huge(void *p, size_t bytes) {
#ifdef MADV_HUGEPAGE
  if (!p || bytes < MB_ALLOC_HUGE_MIN) return;
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  const uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1);
  const uintptr_t hi = ((uintptr_t)p + bytes) & ~(page - 1);
  if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

void *mb_alloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  advise_huge(p, bytes);
  return p;
}

/* A large block is advised before it is zeroed, so that the zeroing
 * itself faults in huge pages (calloc may clear a reused block first). */
void *mb_zalloc(size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) return NULL;
  const size_t bytes = n * size;
  if (bytes < MB_ALLOC_HUGE_MIN) return calloc(n ? n : 1, size ? size : 1);
  void *p = mb_alloc(bytes);
  if (p) memset(p, 0, bytes);
  return p;
}

double mb_rss_mb(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return 0;
  long long size = 0, resident = 0;
  const int got = fscanf(f, "%lld %lld", &size, &resident);
  fclose(f);
  const long page = sysconf(_SC_PAGESIZE);
  return got == 2 && page > 0 ? (double)resident * (double)page / 1048576.0 : 0;
}

static double rss_start_mb = 0;

void mb_rss_mark_start(void) { rss_start_mb = mb_rss_mb(); }

double mb_rss_start_mb(void) { return rss_start_mb; }

double mb_rss_peak_mb(void) {
  struct rusage ru;
  return getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss / 1024.0 : 0; /* KiB */
}
