/* meshbatch fuzzing: what every harness shares. A harness defines
 * mb_fuzz_one(data, size), which feeds the bytes to one reader and must
 * return normally whatever they hold (an error is a normal outcome; a
 * crash, a hang or a sanitizer report is a finding). It is linked either
 * with libFuzzer (-fsanitize=fuzzer, LLVMFuzzerTestOneInput below) or with
 * replay_main.c, which runs saved inputs (corpora and regression inputs)
 * through the same code in every build. */
#ifndef MB_FUZZ_COMMON_H
#define MB_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "mb_error.h"

/* Feed one input to the reader under test. Not collective. */
void mb_fuzz_one(const uint8_t *data, size_t size);

/* Once per process: quiet logging and, built with MB_FUZZ_MPI (the
 * collection harness: HDF5 through MPI-IO), MPI as a singleton. */
void mb_fuzz_init(void);

/* Write bytes to a scratch file of this process whose name ends in
 * `suffix` (".obj", ".node", ...) and return its path (static storage,
 * overwritten by the next call with the same slot 0..3). Aborts if the
 * scratch folder cannot be written: that is the harness's fault. */
const char *mb_fuzz_file(int slot, const char *suffix, const uint8_t *data, size_t size);

#endif
