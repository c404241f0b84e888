/* meshbatch: names of the job and smoothing enumerations, as written in job
 * files and provenance (see mb_job.h, mb_smooth.h), and mb_stage_passes. */
#include "mb_job.h"
#include "mb_smooth.h"

const char *mb_op_name(mb_op op) {
  switch (op) {
  case MB_OP_TAUBIN: return "taubin";
  case MB_OP_LAPLACIAN: return "laplacian";
  }
  return "unknown";
}

const char *mb_weights_name(mb_weights w) {
  switch (w) {
  case MB_WEIGHTS_UNIFORM: return "uniform";
  case MB_WEIGHTS_COTANGENT: return "cotangent";
  case MB_WEIGHTS_INVERSE_DISTANCE: return "inverse_distance";
  }
  return "unknown";
}

const char *mb_boundary_name(mb_boundary b) {
  switch (b) {
  case MB_BOUNDARY_FREE: return "free";
  case MB_BOUNDARY_FIXED: return "fixed";
  case MB_BOUNDARY_CURVE: return "boundary_curve";
  }
  return "unknown";
}

const char *mb_precision_name(mb_precision p) {
  switch (p) {
  case MB_PRECISION_FLOAT64: return "float64";
  case MB_PRECISION_FLOAT32: return "float32";
  }
  return "unknown";
}

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
  }
  return "unknown";
}

const char *mb_backend_kind_name(mb_backend_kind b) {
  switch (b) {
  case MB_BACKEND_AUTO: return "auto";
  case MB_BACKEND_CPU: return "cpu";
  case MB_BACKEND_CUDA: return "cuda";
  }
  return "unknown";
}

int64_t mb_stage_passes(const mb_stage *stage) {
  if (!stage || stage->iterations <= 0) return 0;
  int64_t per_iteration = stage->op == MB_OP_TAUBIN ? 2 : 1;
  return per_iteration * (int64_t)stage->iterations;
}
