/* meshbatch: allocation of large arrays (meshes, adjacency, buffers).
 *
 * Every new page of a large array costs a page fault when it is first
 * touched; on virtual machines a fault costs several microseconds, and a
 * mesh of 2 M vertices touches about 100 000 pages of 4 KiB. These
 * functions allocate with the C library and advise the kernel to back
 * arrays of MB_ALLOC_HUGE_MIN bytes or more with transparent huge pages
 * (madvise(MADV_HUGEPAGE): 2 MiB per fault on x86-64), where the kernel
 * has them in "madvise" or "always" mode. The memory is released with
 * free(); the advice is only a hint and never an error. Beside them, the
 * process's resident memory (now, at the program's start, its peak) for
 * the reports that state what a run holds.
 */
#ifndef MB_ALLOC_H
#define MB_ALLOC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Arrays from this size on are advised to use huge pages (bytes). */
#define MB_ALLOC_HUGE_MIN ((size_t)4 << 20)

/* malloc(bytes) with the huge-page advice for large sizes. Not collective;
 * thread-safe. Returns NULL when out of memory (bytes == 0 gives a valid
 * pointer to at least one byte). The caller owns the memory: free(). */
void *mb_alloc(size_t bytes);

/* calloc(n, size) with the same advice: n x size zeroed bytes, NULL when
 * out of memory or when n x size overflows. The caller frees it. */
void *mb_zalloc(size_t n, size_t size);

/* The process's resident memory now, in MB (2^20 bytes, as every memory
 * figure meshbatch prints; /proc/self/statm's resident pages), or 0 where
 * the system does not say. Not collective; thread-safe. */
double mb_rss_mb(void);

/* Records the process's resident memory now as its start (mb_rss_mb):
 * called once by the program after MPI's initialisation, before any mesh
 * is read, so that a report can state the memory a run added (its peak
 * less this). Not collective; call before threads start. */
void mb_rss_mark_start(void);

/* The resident memory recorded by mb_rss_mark_start, MB; 0 if never
 * recorded. Not collective. */
double mb_rss_start_mb(void);

/* The process's peak resident memory so far, MB (2^20 bytes; getrusage's
 * ru_maxrss), or 0 where the system does not say. Not collective. */
double mb_rss_peak_mb(void);

#ifdef __cplusplus
}
#endif
#endif
