/* meshbatch: what the generators' files share (io/mb_generate*.c),
 * private to io/. */
#ifndef MB_GENERATE_PRIVATE_H
#define MB_GENERATE_PRIVATE_H

#include <stdint.h>

/* splitmix64 (S. Vigna's finaliser of Steele, Lea and Flood's SplitMix,
 * OOPSLA 2014): a small, well-mixed deterministic generator; advances
 * *state. Not thread-safe on one state. */
static inline uint64_t mb_splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

#endif
