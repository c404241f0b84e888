/* meshbatch fuzzing: YAML job files (mb_job_load: libcyaml, then every
 * stage's parameter table). */
#include "fuzz_common.h"

#include "mb_job.h"

void mb_fuzz_one(const uint8_t *data, size_t size) {
  mb_job *j = NULL;
  if (mb_job_load(mb_fuzz_file(0, ".yaml", data, size), &j) == MB_SUCCESS) mb_job_free(j);
}
