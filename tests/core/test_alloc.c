/* meshbatch test: large arrays (src/core/mb_alloc.h): sizes, zeroing of reused
 * memory, overflow, and the huge-page
 * advice seen by the kernel (the "hg" flag in /proc/self/smaps, where transparent huge
 * pages are offered in "madvise" or "always" mode). */
#include "mb_testutil.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_alloc.h"

static void test_zalloc_zeroes_reused_memory(void **state) {
  (void)state;
  const size_t n = 3 * MB_ALLOC_HUGE_MIN; /* past the advice threshold */
  for (int round = 0; round < 3; round++) {
    unsigned char *p = mb_zalloc(n, 1);
    assert_non_null(p);
    for (size_t i = 0; i < n; i += 4093) assert_int_equal(p[i], 0);
    assert_int_equal(p[n - 1], 0);
    memset(p, 0xab, n); /* dirty it for the next round's block */
    free(p);
  }
  unsigned char *small = mb_zalloc(10, 3);
  assert_non_null(small);
  for (int i = 0; i < 30; i++) assert_int_equal(small[i], 0);
  free(small);
}

static void test_zero_sizes_and_overflow(void **state) {
  (void)state;
  void *p = mb_alloc(0), *q = mb_zalloc(0, 8);
  assert_non_null(p);
  assert_non_null(q);
  free(p);
  free(q);
  assert_null(mb_zalloc(SIZE_MAX / 2, 4));
}

/* In the mapping that holds p (/proc/self/smaps): *kb, the kilobytes of
 * anonymous huge pages, and *advised, whether the mapping carries the
 * kernel's "hg" flag (madvise(MADV_HUGEPAGE) took). 0, or -1 when smaps
 * cannot be read or holds no such mapping. */
static int smaps_at(const void *p, long *kb, int *advised) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return -1;
  char line[1024];
  int inside = 0, found = 0;
  *kb = -1;
  *advised = 0;
  while (fgets(line, sizeof line, f)) {
    uintptr_t lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      if (inside) break; /* past the mapping */
      inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
      found |= inside;
      continue;
    }
    if (!inside) continue;
    long v;
    if (sscanf(line, "AnonHugePages: %ld kB", &v) == 1) *kb = v;
    if (!strncmp(line, "VmFlags:", 8)) {
      for (char *t = strtok(line + 8, " \n"); t; t = strtok(NULL, " \n"))
        if (!strcmp(t, "hg")) *advised = 1;
    }
  }
  fclose(f);
  return found ? 0 : -1;
}

/* What holds everywhere: the large block is usable and aligned for any
 * type, and the advice reaches the kernel (the mapping's "hg" flag) where
 * it offers transparent huge pages. Whether the kernel has a free huge
 * page at this moment is its business (fragmented memory): printed, not
 * asserted. Only the flag check needs transparent huge pages ("madvise" or
 * "always" in /sys/kernel/mm/transparent_hugepage/enabled); without them
 * it is skipped, saying why. */
static void test_huge_pages_advised(void **state) {
  (void)state;
  const size_t n = 8 * MB_ALLOC_HUGE_MIN;
  char *p = mb_alloc(n);
  assert_non_null(p);
  assert_int_equal((uintptr_t)p % _Alignof(max_align_t), 0);
  for (size_t i = 0; i < n; i += 4096) p[i] = (char)(i >> 12);
  p[n - 1] = 7;
  for (size_t i = 0; i < n; i += 4096) assert_int_equal(p[i], (char)(i >> 12));
  assert_int_equal(p[n - 1], 7);
  char mode[128] = "";
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (f) {
    if (!fgets(mode, sizeof mode, f)) mode[0] = 0;
    fclose(f);
  }
  if (!strstr(mode, "[madvise]") && !strstr(mode, "[always]")) {
    printf("transparent huge pages not offered here (%s): the advice is not checked\n",
           mode[0] ? mode : "no /sys/kernel/mm/transparent_hugepage");
    free(p);
    skip();
  }
  long kb;
  int advised;
  const int found = smaps_at(p + n / 2, &kb, &advised);
  printf("%zu MiB block: advised %d, %ld kB in huge pages now (kernel mode %s)", n >> 20,
         advised, kb, mode);
  assert_int_equal(found, 0);   /* /proc/self/smaps lists the block's mapping */
  assert_int_equal(advised, 1); /* madvise(MADV_HUGEPAGE) took on it */
  free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_zalloc_zeroes_reused_memory),
      cmocka_unit_test(test_zero_sizes_and_overflow),
      cmocka_unit_test(test_huge_pages_advised),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
