/* meshbatch: names of the smoothing enumerations, as written in job files
 * and provenance (see mb_smooth.h), and mb_smooth_passes. */
#include "mb_smooth.h"

const char *mb_smooth_method_name(mb_smooth_method op) {
  switch (op) {
  case MB_SMOOTH_TAUBIN: return "taubin";
  case MB_SMOOTH_LAPLACIAN: return "laplacian";
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


int64_t mb_smooth_passes(const mb_smooth_stage *stage) {
  if (!stage || stage->iterations <= 0) return 0;
  int64_t per_iteration = stage->method == MB_SMOOTH_TAUBIN ? 2 : 1;
  return per_iteration * (int64_t)stage->iterations;
}
