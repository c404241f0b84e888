/* meshbatch fuzzing: shared harness code (see fuzz_common.h). */
#include "fuzz_common.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mb_log.h"
#include "mb_mpi.h"

void mb_fuzz_init(void) {
  static int done = 0;
  if (done) return;
  done = 1;
#ifdef MB_FUZZ_MPI /* only the collection reader needs MPI (MPI-IO) */
  int init = 0;
  MPI_Initialized(&init);
  if (!init) {
    int argc = 0;
    char **argv = NULL;
    mb_singleton_defaults();
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) abort();
  }
#endif
  mb_log_set_level(MB_LOG_QUIET);
}

const char *mb_fuzz_file(int slot, const char *suffix, const uint8_t *data, size_t size) {
  static char paths[4][512];
  const char *dir = getenv("MB_FUZZ_SCRATCH"); /* a tmpfs (/dev/shm) is fastest */
  if (!dir) dir = getenv("TMPDIR");
  if (!dir) dir = "/tmp";
  snprintf(paths[slot], sizeof paths[slot], "%s/mb_fuzz_%ld_%d%s", dir, (long)getpid(), slot,
           suffix);
  FILE *f = fopen(paths[slot], "wb");
  if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
    fprintf(stderr, "fuzz harness: cannot write %s\n", paths[slot]);
    abort();
  }
  return paths[slot];
}

#ifdef MB_FUZZ_LIBFUZZER
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  mb_fuzz_init();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mb_fuzz_one(data, size);
  mb_error_clear();
  return 0;
}
#endif
