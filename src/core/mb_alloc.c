/* meshbatch: large arrays on transparent huge pages (see mb_alloc.h). */
#include "mb_alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

void *mb_realloc(void *p, size_t bytes) {
  void *q = realloc(p, bytes ? bytes : 1);
  advise_huge(q, bytes);
  return q;
}
