/* meshbatch: names of the job enumerations, as written in job files (see mb_job.h). */
#include "mb_job.h"

const char *mb_distribute_name(mb_distribute d) {
  switch (d) {
  case MB_DISTRIBUTE_PER_MESH: return "per-mesh";
  case MB_DISTRIBUTE_PARTITIONED: return "partitioned";
  }
  return "unknown";
}

const char *mb_partitioner_name(mb_partitioner p) {
  switch (p) {
  case MB_PARTITIONER_METIS: return "metis";
  case MB_PARTITIONER_PARMETIS: return "parmetis";
  case MB_PARTITIONER_BLOCKS: return "blocks";
  }
  return "unknown";
}


