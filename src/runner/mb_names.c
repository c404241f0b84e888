/* meshbatch: names of the job enumerations, as written in job files (see mb_job.h). */
#include "mb_job.h"

const char *mb_distribute_name(mb_distribute d) {
  switch (d) {
  case MB_DISTRIBUTE_PER_MESH: return "per-mesh";
  case MB_DISTRIBUTE_PARTITIONED: return "partitioned";
  }
  return "unknown";
}
