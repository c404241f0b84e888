/* meshbatch: the CUDA backend of Laplacian and Taubin smoothing (kernels and
 * the extern "C" launchers declared in cuda/mb_cuda.h; no program logic).
 *
 * Method: G. Taubin, "A signal processing approach to fair surface design",
 * SIGGRAPH 1995, eq. (4)-(5); cotangent weights after Desbrun et al. 1999,
 * eq. (5). The per-vertex arithmetic is MB_SMOOTH_VERTEX (src/mb_smooth_vertex.h),
 * the same macro the CPU backend expands, compiled with --fmad=false, so the
 * float64 path performs the CPU's operations in the CPU's order.
 *
 * Design (docs/gpu-kernel.md): one thread per vertex, blocks of 256; the
 * kernel is a template over the real type T (double or float), the weights
 * rule and the boundary rule, so each of the 18 variants compiles only the
 * code it needs (the float32 uniform/free kernel reads row, col and the
 * positions and nothing else). The CSR arrays are narrowed to int32 on the
 * device; positions live in two device buffers of the working precision that
 * the passes ping-pong between, for all stages, and go back to float64 once.
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <new>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <vector>

#include "mb_adjacency_cuda.cuh"
#include "mb_cuda_halo.h"
#include "mb_log.h"
#include "mb_smooth_cuda.h"
#include "mb_cuda_private.cuh"
#include "mb_smooth_vertex.h"

/* Threads per block of every kernel here (launch bounds and launches). */
#define MB_CUDA_BLOCK 256

/* ------------------------------------------------------------------ kernels */

/* One smoothing pass over rows [begin, end): xout[i] = update of vertex i
 * from xin (Taubin 1995, eq. 4). W and B are mb_weights and mb_boundary as compile-time constants;
 * arrays a rule does not use may be null. xin and xout must not alias. */
template <typename T, int W, int B>
__global__ void __launch_bounds__(MB_CUDA_BLOCK)
    mb_smooth_pass_kernel(int64_t begin, int64_t end, const int32_t *__restrict__ row,
                          const int32_t *__restrict__ col, const int32_t *__restrict__ opp_row,
                          const int32_t *__restrict__ opp, const uint8_t *__restrict__ on_boundary,
                          const int32_t *__restrict__ brow, const int32_t *__restrict__ bcol,
                          T f, const T *__restrict__ xin, T *__restrict__ xout) {
  const int64_t i = begin + (int64_t)blockIdx.x * MB_CUDA_BLOCK + threadIdx.x;
  if (i >= end) return;
  /* Input arrays are read-only for the whole launch: loads through the
   * non-coherent path. row[i + 1] is re-read in the macro's loop test, so
   * row goes through a plain const __restrict__ pointer that the compiler
   * may keep in a register (and still load with ld.global.nc). */
  const mb_ro<int32_t> c{col}, orow{opp_row}, o{opp}, br{brow}, bc{bcol};
  const mb_ro<uint8_t> ob{on_boundary};
  const mb_ro<T> x{xin};
  MB_SMOOTH_VERTEX(T, i, row, c, orow, o, ob, br, bc, (mb_weights)W, (mb_boundary)B, f, x, xout);
}

/* dst[k] = (int32_t)src[k]; the caller has checked that every value fits. */
__global__ void __launch_bounds__(MB_CUDA_BLOCK)
    mb_narrow_kernel(int64_t n, const int64_t *__restrict__ src, int32_t *__restrict__ dst) {
  const int64_t k = (int64_t)blockIdx.x * MB_CUDA_BLOCK + threadIdx.x;
  if (k < n) dst[k] = (int32_t)src[k];
}

/* dst[k] = (To)src[k] (float64 <-> float32, round to nearest). */
template <typename To, typename From>
__global__ void __launch_bounds__(MB_CUDA_BLOCK)
    mb_convert_kernel(int64_t n, const From *__restrict__ src, To *__restrict__ dst) {
  const int64_t k = (int64_t)blockIdx.x * MB_CUDA_BLOCK + threadIdx.x;
  if (k < n) dst[k] = (To)src[k];
}

static unsigned mb_grid(int64_t n) {
  return (unsigned)((n + MB_CUDA_BLOCK - 1) / MB_CUDA_BLOCK);
}

/* ------------------------------------------------------------ device state */

/* What one run needs on the device. Buffers free themselves. */
struct mb_dev_mesh {
  int64_t nv = 0, nnz = 0, nopp = 0, nb = 0; /* nv: adjacency rows */
  int64_t nlocal = 0;                          /* position rows (nv + ghosts) */
  mb_dbuf row, col, opp_row, opp, on_boundary, brow, bcol; /* int32 / uint8 */
  mb_dbuf x[2];                                              /* ping-pong positions, type T */
  int cur = 0;                                               /* x[cur] holds the positions */
};

static const int64_t MB_I32_MAX = 2147483647;

/* Validate the sizes the int32 device arrays depend on. */
static mb_error mb_cuda_check_sizes(const mb_adjacency *adj, bool need_opp, bool need_bnd) {
  MB_CHECK(adj, MB_ERR_ARG, "adjacency is NULL");
  MB_CHECK(adj->nv >= 0 && adj->nnz >= 0, MB_ERR_ARG, "negative sizes (nv %lld, nnz %lld)",
           (long long)adj->nv, (long long)adj->nnz);
  MB_CHECK(adj->nv < MB_I32_MAX && adj->nnz < MB_I32_MAX, MB_ERR_ARG,
           "the CUDA backend indexes with int32: nv (%lld) and nnz (%lld) must be < 2^31",
           (long long)adj->nv, (long long)adj->nnz);
  if (adj->nv == 0) return MB_SUCCESS;
  MB_CHECK(adj->row && adj->col, MB_ERR_ARG, "adjacency has no row/col arrays");
  if (need_opp) {
    MB_CHECK(adj->opp_row && adj->opp, MB_ERR_ARG,
             "cotangent weights need a triangle mesh; this mesh has polygons "
             "(use uniform or inverse_distance weights)");
    MB_CHECK(adj->opp_row[adj->nnz] >= 0 && adj->opp_row[adj->nnz] < MB_I32_MAX, MB_ERR_ARG,
             "the CUDA backend indexes with int32: %lld opposite vertices must be < 2^31",
             (long long)adj->opp_row[adj->nnz]);
  }
  if (need_bnd) {
    MB_CHECK(adj->on_boundary && adj->brow && adj->bcol, MB_ERR_ARG,
             "adjacency has no boundary arrays");
    MB_CHECK(adj->brow[adj->nv] >= 0 && adj->brow[adj->nv] < MB_I32_MAX, MB_ERR_ARG,
             "the CUDA backend indexes with int32: %lld boundary entries must be < 2^31",
             (long long)adj->brow[adj->nv]);
  }
  return MB_SUCCESS;
}

/* Upload an int64 host array of n entries as int32 through the staging buffer. */
static mb_error mb_upload_i32(mb_dbuf *dst, const int64_t *src, int64_t n, mb_dbuf *stage,
                              const char *what) {
  MB_CALL(mb_dbuf_alloc(dst, sizeof(int32_t) * (size_t)n, what));
  if (n == 0) return MB_SUCCESS;
  MB_CALL_CUDA(cudaMemcpy(stage->p, src, sizeof(int64_t) * (size_t)n, cudaMemcpyHostToDevice));
  mb_narrow_kernel<<<mb_grid(n), MB_CUDA_BLOCK>>>(n, stage->as<int64_t>(), dst->as<int32_t>());
  MB_CHECK_LAUNCH(what);
  return MB_SUCCESS;
}

/* Upload the positions xyz [nlocal, 3] (float64) into both position
 * buffers of d, converted to T on the device; stage: a device buffer of at
 * least 8 x 3 nlocal bytes (the float32 path copies through it). Enqueued
 * on the default stream; the caller synchronizes before stage is freed. */
template <typename T>
static mb_error mb_dev_upload_positions(mb_dev_mesh *d, int64_t nlocal, const double *xyz,
                                        mb_dbuf *stage) {
  d->nlocal = nlocal;
  const size_t xbytes = sizeof(T) * 3 * (size_t)nlocal;
  MB_CALL(mb_dbuf_alloc(&d->x[0], xbytes, "positions"));
  MB_CALL(mb_dbuf_alloc(&d->x[1], xbytes, "positions"));
  d->cur = 0;
  if (nlocal > 0 && sizeof(T) == sizeof(double)) {
    MB_CALL_CUDA(cudaMemcpy(d->x[0].p, xyz, xbytes, cudaMemcpyHostToDevice));
    MB_CALL_CUDA(cudaMemcpy(d->x[1].p, xyz, xbytes, cudaMemcpyHostToDevice));
  } else if (nlocal > 0) {
    MB_CALL_CUDA(cudaMemcpy(stage->p, xyz, sizeof(double) * 3 * (size_t)nlocal,
                            cudaMemcpyHostToDevice));
    for (int k = 0; k < 2; k++) /* both buffers: ghosts are read from either */
      mb_convert_kernel<T, double><<<mb_grid(3 * nlocal), MB_CUDA_BLOCK>>>(
          3 * nlocal, stage->as<double>(), d->x[k].as<T>());
    MB_CHECK_LAUNCH("positions to working precision");
  }
  return MB_SUCCESS;
}

/* Upload the adjacency (int32) and the positions xyz [nlocal, 3] (converted
 * to T on the device) into d; nlocal >= adj->nv (rows past nv are ghosts).
 * opp arrays only if need_opp, boundary arrays only if need_bnd. */
template <typename T>
static mb_error mb_dev_upload(mb_dev_mesh *d, const mb_adjacency *adj, int64_t nlocal,
                              const double *xyz, bool need_opp, bool need_bnd) {
  const int64_t nv = adj->nv, nnz = adj->nnz;
  d->nv = nv;
  d->nlocal = nlocal;
  d->nnz = nnz;
  d->nopp = need_opp ? adj->opp_row[nnz] : 0;
  d->nb = need_bnd ? adj->brow[nv] : 0;
  /* Staging buffer: the largest int64 array, or the float64 positions. */
  int64_t smax = std::max<int64_t>(nv + 1, nnz);
  if (need_opp) smax = std::max<int64_t>(smax, std::max<int64_t>(nnz + 1, d->nopp));
  if (need_bnd) smax = std::max<int64_t>(smax, d->nb);
  smax = std::max<int64_t>(smax, 3 * nlocal); /* 8-byte elements either way */
  mb_dbuf stage;
  MB_CALL(mb_dbuf_alloc(&stage, sizeof(int64_t) * (size_t)smax, "staging"));

  MB_CALL(mb_upload_i32(&d->row, adj->row, nv + 1, &stage, "row offsets"));
  MB_CALL(mb_upload_i32(&d->col, adj->col, nnz, &stage, "column indices"));
  if (need_opp) {
    MB_CALL(mb_upload_i32(&d->opp_row, adj->opp_row, nnz + 1, &stage, "opposite-vertex offsets"));
    MB_CALL(mb_upload_i32(&d->opp, adj->opp, d->nopp, &stage, "opposite vertices"));
  }
  if (need_bnd) {
    MB_CALL(mb_dbuf_alloc(&d->on_boundary, (size_t)nv, "boundary flags"));
    MB_CALL_CUDA(cudaMemcpy(d->on_boundary.p, adj->on_boundary, (size_t)nv,
                            cudaMemcpyHostToDevice));
    MB_CALL(mb_upload_i32(&d->brow, adj->brow, nv + 1, &stage, "boundary offsets"));
    MB_CALL(mb_upload_i32(&d->bcol, adj->bcol, d->nb, &stage, "boundary neighbours"));
  }
  MB_CALL(mb_dev_upload_positions<T>(d, nlocal, xyz, &stage));
  /* Wait before `stage` is freed (cudaFree synchronizes too; be explicit). */
  MB_CALL_CUDA(cudaDeviceSynchronize());
  return MB_SUCCESS;
}

/* Take the arrays of a device adjacency into d (no copy; a is left empty
 * of them) and upload the positions xyz [nv, 3] in its vertex order. */
template <typename T>
static mb_error mb_dev_adopt(mb_dev_mesh *d, mb_dev_adjacency *a, const double *xyz) {
  d->nv = a->nv;
  d->nnz = a->nnz;
  d->nopp = a->has_opp ? a->nopp : 0;
  d->nb = a->has_bnd ? a->nb : 0;
  mb_dbuf_swap(&d->row, &a->row);
  mb_dbuf_swap(&d->col, &a->col);
  mb_dbuf_swap(&d->opp_row, &a->opp_row);
  mb_dbuf_swap(&d->opp, &a->opp);
  mb_dbuf_swap(&d->on_boundary, &a->on_boundary);
  mb_dbuf_swap(&d->brow, &a->brow);
  mb_dbuf_swap(&d->bcol, &a->bcol);
  mb_dbuf stage;
  if (sizeof(T) != sizeof(double))
    MB_CALL(mb_dbuf_alloc(&stage, sizeof(double) * 3 * (size_t)a->nv, "staging"));
  MB_CALL(mb_dev_upload_positions<T>(d, a->nv, xyz, &stage));
  MB_CALL_CUDA(cudaDeviceSynchronize()); /* before `stage` is freed */
  return MB_SUCCESS;
}

/* Copy the positions x[cur] back to xyz [nv, 3] float64. */
template <typename T> static mb_error mb_dev_download(mb_dev_mesh *d, double *xyz) {
  const int64_t n = 3 * d->nv;
  if (n == 0) return MB_SUCCESS;
  if (sizeof(T) == sizeof(double)) {
    MB_CALL_CUDA(cudaMemcpy(xyz, d->x[d->cur].p, sizeof(double) * (size_t)n,
                            cudaMemcpyDeviceToHost));
    return MB_SUCCESS;
  }
  mb_dbuf out;
  MB_CALL(mb_dbuf_alloc(&out, sizeof(double) * (size_t)n, "float64 positions"));
  mb_convert_kernel<double, T>
      <<<mb_grid(n), MB_CUDA_BLOCK>>>(n, d->x[d->cur].as<T>(), out.as<double>());
  MB_CHECK_LAUNCH("positions to float64");
  MB_CALL_CUDA(cudaMemcpy(xyz, out.p, sizeof(double) * (size_t)n, cudaMemcpyDeviceToHost));
  return MB_SUCCESS;
}

template <typename T, int W, int B>
static void mb_launch_wb(const mb_dev_mesh *d, int64_t begin, int64_t end, T f, const T *xin,
                         T *xout, cudaStream_t s) {
  mb_smooth_pass_kernel<T, W, B><<<mb_grid(end - begin), MB_CUDA_BLOCK, 0, s>>>(
      begin, end, d->row.as<int32_t>(), d->col.as<int32_t>(), d->opp_row.as<int32_t>(),
      d->opp.as<int32_t>(), d->on_boundary.as<uint8_t>(), d->brow.as<int32_t>(),
      d->bcol.as<int32_t>(), f, xin, xout);
}

template <typename T, int W>
static void mb_launch_w(const mb_dev_mesh *d, int64_t begin, int64_t end, mb_boundary b, T f,
                        const T *xin, T *xout, cudaStream_t s) {
  switch (b) {
  case MB_BOUNDARY_FREE: mb_launch_wb<T, W, MB_BOUNDARY_FREE>(d, begin, end, f, xin, xout, s); break;
  case MB_BOUNDARY_FIXED: mb_launch_wb<T, W, MB_BOUNDARY_FIXED>(d, begin, end, f, xin, xout, s); break;
  case MB_BOUNDARY_CURVE: mb_launch_wb<T, W, MB_BOUNDARY_CURVE>(d, begin, end, f, xin, xout, s); break;
  }
}

/* Enqueue the update of rows [begin, end) from x[cur] into x[1 - cur]
 * (cur is not flipped). The rules must have been validated (mb_rules_valid). */
template <typename T>
static mb_error mb_dev_pass_rows(mb_dev_mesh *d, int64_t begin, int64_t end, mb_weights w,
                                 mb_boundary b, double factor, cudaStream_t s) {
  if (end <= begin) return MB_SUCCESS;
  const T f = (T)factor;
  const T *xin = d->x[d->cur].as<T>();
  T *xout = d->x[1 - d->cur].as<T>();
  switch (w) {
  case MB_WEIGHTS_UNIFORM: mb_launch_w<T, MB_WEIGHTS_UNIFORM>(d, begin, end, b, f, xin, xout, s); break;
  case MB_WEIGHTS_COTANGENT: mb_launch_w<T, MB_WEIGHTS_COTANGENT>(d, begin, end, b, f, xin, xout, s); break;
  case MB_WEIGHTS_INVERSE_DISTANCE:
    mb_launch_w<T, MB_WEIGHTS_INVERSE_DISTANCE>(d, begin, end, b, f, xin, xout, s);
    break;
  }
  MB_CHECK_LAUNCH("smoothing pass");
  return MB_SUCCESS;
}

/* Enqueue one whole pass x[cur] -> x[1 - cur] with factor f and flip cur. */
template <typename T>
static mb_error mb_dev_pass(mb_dev_mesh *d, mb_weights w, mb_boundary b, double factor,
                            cudaStream_t s) {
  MB_CALL(mb_dev_pass_rows<T>(d, 0, d->nv, w, b, factor, s));
  d->cur = 1 - d->cur;
  return MB_SUCCESS;
}

static mb_error mb_rules_valid(mb_weights w, mb_boundary b) {
  MB_CHECK(w == MB_WEIGHTS_UNIFORM || w == MB_WEIGHTS_COTANGENT ||
               w == MB_WEIGHTS_INVERSE_DISTANCE,
           MB_ERR_ARG, "unsupported weights rule %d", (int)w);
  MB_CHECK(b == MB_BOUNDARY_FREE || b == MB_BOUNDARY_FIXED || b == MB_BOUNDARY_CURVE, MB_ERR_ARG,
           "unsupported boundary rule %d", (int)b);
  return MB_SUCCESS;
}

/* Run every pass of the stages on d, then copy the positions back to xyz. */
template <typename T>
static mb_error mb_dev_run_stages(mb_dev_mesh *d, const mb_smooth_stage *stages, int nstages,
                                  double *xyz) {
  for (int s = 0; s < nstages; s++) {
    const mb_smooth_stage *st = &stages[s];
    for (int it = 0; it < st->iterations; it++) {
      if (mb_op_should_stop(st->ctx, it, st->iterations)) return mb_op_stopped(st->ctx);
      MB_CALL(mb_dev_pass<T>(d, st->weights, st->boundary, st->lambda, 0));
      if (st->method == MB_SMOOTH_TAUBIN) MB_CALL(mb_dev_pass<T>(d, st->weights, st->boundary, st->mu, 0));
    }
  }
  MB_CALL_CUDA(cudaDeviceSynchronize()); /* execution errors of the passes surface here */
  MB_CALL(mb_dev_download<T>(d, xyz));
  return MB_SUCCESS;
}

template <typename T>
static mb_error mb_cuda_smooth_t(const mb_adjacency *adj, const mb_smooth_stage *stages, int nstages,
                                 double *xyz, bool need_opp, bool need_bnd) {
  mb_dev_mesh d;
  MB_CALL(mb_dev_upload<T>(&d, adj, adj->nv, xyz, need_opp, need_bnd));
  MB_CALL(mb_dev_run_stages<T>(&d, stages, nstages, xyz));
  return MB_SUCCESS;
}

/* ----------------------------------------------------------- C interface */

extern "C" mb_error mb_cuda_smooth(const mb_adjacency *adj, const mb_smooth_stage *stages, int nstages,
                                   mb_precision precision, double *xyz) {
  MB_CHECK(adj, MB_ERR_ARG, "adjacency is NULL");
  MB_CHECK(nstages >= 0 && (nstages == 0 || stages), MB_ERR_ARG, "bad stage list (%d stages)",
           nstages);
  MB_CHECK(precision == MB_PRECISION_FLOAT64 || precision == MB_PRECISION_FLOAT32, MB_ERR_ARG,
           "unsupported precision %d", (int)precision);
  bool need_opp = false, need_bnd = false;
  int64_t passes = 0;
  for (int s = 0; s < nstages; s++) {
    const mb_smooth_stage *st = &stages[s];
    MB_CALL(mb_rules_valid(st->weights, st->boundary));
    MB_CHECK(st->method == MB_SMOOTH_TAUBIN || st->method == MB_SMOOTH_LAPLACIAN, MB_ERR_ARG,
             "unsupported smoothing operator %d", (int)st->method);
    MB_CALL(mb_smooth_check(st, adj));
    if (st->iterations == 0) continue;
    passes += mb_smooth_passes(st);
    need_opp |= st->weights == MB_WEIGHTS_COTANGENT;
    need_bnd |= st->boundary != MB_BOUNDARY_FREE;
  }
  MB_CALL(mb_cuda_check_sizes(adj, need_opp, need_bnd));
  /* Nothing to do: leave xyz bit for bit as it is (no float32 round trip). */
  if (passes == 0 || adj->nv == 0) return MB_SUCCESS;
  MB_CHECK(xyz, MB_ERR_ARG, "positions are NULL");
  if (precision == MB_PRECISION_FLOAT64)
    MB_CALL(mb_cuda_smooth_t<double>(adj, stages, nstages, xyz, need_opp, need_bnd));
  else
    MB_CALL(mb_cuda_smooth_t<float>(adj, stages, nstages, xyz, need_opp, need_bnd));
  return MB_SUCCESS;
}

/* The stage checks of mb_cuda_smooth for a mesh without a host adjacency
 * (mb_smooth_check's rules: iterations >= 0, cotangent weights only on a
 * triangle mesh, with its messages); the passes to make and the arrays
 * they read. */
static mb_error mb_stages_check_mesh(const mb_mesh *mesh, const mb_smooth_stage *stages,
                                     int nstages, int64_t *passes, bool *need_opp,
                                     bool *need_bnd) {
  *passes = 0;
  *need_opp = *need_bnd = false;
  const bool tri = mb_mesh_is_triangles(mesh) != 0;
  for (int s = 0; s < nstages; s++) {
    const mb_smooth_stage *st = &stages[s];
    MB_CALL(mb_rules_valid(st->weights, st->boundary));
    MB_CHECK(st->method == MB_SMOOTH_TAUBIN || st->method == MB_SMOOTH_LAPLACIAN, MB_ERR_ARG,
             "unsupported smoothing operator %d", (int)st->method);
    MB_CHECK(st->iterations >= 0, MB_ERR_ARG, "iterations must be >= 0 (got %d)",
             st->iterations);
    MB_CHECK(st->weights != MB_WEIGHTS_COTANGENT || tri, MB_ERR_ARG,
             "cotangent weights need a triangle mesh; this mesh has polygons "
             "(use uniform or inverse_distance weights)");
    if (st->iterations == 0) continue;
    *passes += mb_smooth_passes(st);
    *need_opp = *need_opp || st->weights == MB_WEIGHTS_COTANGENT;
    *need_bnd = *need_bnd || st->boundary != MB_BOUNDARY_FREE;
  }
  return MB_SUCCESS;
}

template <typename T>
static mb_error mb_cuda_smooth_mesh_t(mb_dev_adjacency *a, const mb_smooth_stage *stages,
                                      int nstages, double *xyz) {
  mb_dev_mesh d;
  MB_CALL(mb_dev_adopt<T>(&d, a, xyz));
  MB_CALL(mb_dev_run_stages<T>(&d, stages, nstages, xyz));
  return MB_SUCCESS;
}

extern "C" mb_error mb_cuda_smooth_mesh(const mb_mesh *mesh, const int64_t *perm,
                                        const mb_smooth_stage *stages, int nstages,
                                        mb_precision precision, double *xyz,
                                        double seconds[2]) {
  if (seconds) seconds[0] = seconds[1] = 0;
  MB_CHECK(mesh, MB_ERR_ARG, "mesh is NULL");
  MB_CHECK(nstages >= 0 && (nstages == 0 || stages), MB_ERR_ARG, "bad stage list (%d stages)",
           nstages);
  MB_CHECK(precision == MB_PRECISION_FLOAT64 || precision == MB_PRECISION_FLOAT32, MB_ERR_ARG,
           "unsupported precision %d", (int)precision);
  int64_t passes = 0;
  bool need_opp = false, need_bnd = false;
  MB_CALL(mb_stages_check_mesh(mesh, stages, nstages, &passes, &need_opp, &need_bnd));
  /* Nothing to do: leave xyz bit for bit as it is (no float32 round trip). */
  if (passes == 0 || mesh->nv == 0) return MB_SUCCESS;
  MB_CHECK(xyz, MB_ERR_ARG, "positions are NULL");
  const double t0 = mb_wtime();
  mb_dev_adjacency a;
  MB_CALL(mb_dev_adjacency_build(mesh, perm,
                                 (need_opp ? MB_ADJ_OPPOSITE : 0u) |
                                     (need_bnd ? MB_ADJ_BOUNDARY : 0u),
                                 &a)); /* ends with a device synchronization */
  MB_CHECK(!need_opp || a.has_opp, MB_ERR_ARG,
           "cotangent weights need a triangle mesh; this mesh has polygons "
           "(use uniform or inverse_distance weights)");
  const double t1 = mb_wtime();
  if (precision == MB_PRECISION_FLOAT64)
    MB_CALL(mb_cuda_smooth_mesh_t<double>(&a, stages, nstages, xyz));
  else
    MB_CALL(mb_cuda_smooth_mesh_t<float>(&a, stages, nstages, xyz));
  if (seconds) {
    seconds[0] = t1 - t0;
    seconds[1] = mb_wtime() - t1;
  }
  return MB_SUCCESS;
}

/* --------------------------------------------------------------- benchmark */

/* Median of v (sorted in place); v non-empty. */
static double mb_median(std::vector<float> &v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * ((double)v[n / 2 - 1] + (double)v[n / 2]);
}

/* Owning CUDA events (destroyed on every path). */
struct mb_events {
  std::vector<cudaEvent_t> ev;
  ~mb_events() {
    for (cudaEvent_t e : ev)
      if (e) cudaEventDestroy(e);
  }
};

static mb_error mb_events_create(mb_events *e, int n) {
  e->ev.assign((size_t)n, nullptr);
  for (int k = 0; k < n; k++) MB_CALL_CUDA(cudaEventCreate(&e->ev[(size_t)k]));
  return MB_SUCCESS;
}

/* Bytes one pass of rule (w, b) moves under the byte model of
 * docs/gpu-kernel.md: every array the pass touches, read or written once. */
static double mb_bytes_per_pass(const mb_dev_mesh *d, mb_weights w, mb_boundary b, size_t real) {
  double bytes = 4.0 * (double)(d->nv + 1) + 4.0 * (double)d->nnz  /* row, col */
                 + 2.0 * (double)real * 3.0 * (double)d->nv;       /* xin read, xout written */
  if (w == MB_WEIGHTS_COTANGENT) bytes += 4.0 * (double)(d->nnz + 1) + 4.0 * (double)d->nopp;
  if (b != MB_BOUNDARY_FREE) bytes += 1.0 * (double)d->nv;          /* on_boundary */
  if (b == MB_BOUNDARY_CURVE) bytes += 4.0 * (double)(d->nv + 1) + 4.0 * (double)d->nb;
  return bytes;
}

template <typename T>
static mb_error mb_cuda_bench_t(const mb_adjacency *adj, const double *xyz, mb_weights w,
                                mb_boundary b, int warmup, int repeats,
                                mb_cuda_bench_result *r) {
  const bool need_opp = w == MB_WEIGHTS_COTANGENT, need_bnd = b != MB_BOUNDARY_FREE;
  mb_dev_mesh d;
  MB_CALL(mb_dev_upload<T>(&d, adj, adj->nv, xyz, need_opp, need_bnd));
  /* Alternate Taubin's lambda and mu so repeated passes neither shrink the
   * mesh to a point nor blow it up. */
  const double lambda = 0.5, mu = -0.53;
  int np = 0;
  for (int k = 0; k < warmup; k++, np++)
    MB_CALL(mb_dev_pass<T>(&d, w, b, np % 2 ? mu : lambda, 0));
  mb_events e;
  MB_CALL(mb_events_create(&e, repeats + 1));
  MB_CALL_CUDA(cudaEventRecord(e.ev[0]));
  for (int k = 0; k < repeats; k++, np++) {
    MB_CALL(mb_dev_pass<T>(&d, w, b, np % 2 ? mu : lambda, 0));
    MB_CALL_CUDA(cudaEventRecord(e.ev[(size_t)k + 1]));
  }
  MB_CALL_CUDA(cudaEventSynchronize(e.ev[(size_t)repeats]));
  MB_CALL_CUDA(cudaDeviceSynchronize());
  std::vector<float> ms((size_t)repeats);
  for (int k = 0; k < repeats; k++)
    MB_CALL_CUDA(cudaEventElapsedTime(&ms[(size_t)k], e.ev[(size_t)k], e.ev[(size_t)k + 1]));
  r->ms_per_pass = mb_median(ms);
  r->bytes_per_pass = mb_bytes_per_pass(&d, w, b, sizeof(T));
  return MB_SUCCESS;
}

extern "C" mb_error mb_cuda_bench_smooth(const mb_adjacency *adj, const double *xyz,
                                         mb_weights weights, mb_boundary boundary,
                                         mb_precision precision, int warmup, int repeats,
                                         mb_cuda_bench_result *result) {
  MB_CHECK(adj && xyz && result, MB_ERR_ARG, "NULL argument to mb_cuda_bench_smooth");
  MB_CHECK(warmup >= 0 && repeats >= 1, MB_ERR_ARG,
           "warmup must be >= 0 and repeats >= 1 (got %d, %d)", warmup, repeats);
  MB_CHECK(precision == MB_PRECISION_FLOAT64 || precision == MB_PRECISION_FLOAT32, MB_ERR_ARG,
           "unsupported precision %d", (int)precision);
  MB_CALL(mb_rules_valid(weights, boundary));
  MB_CHECK(adj->nv > 0, MB_ERR_ARG, "cannot benchmark an empty mesh");
  mb_smooth_stage st;
  memset(&st, 0, sizeof st);
  st.method = MB_SMOOTH_LAPLACIAN;
  st.iterations = 1;
  st.weights = weights;
  st.boundary = boundary;
  MB_CALL(mb_smooth_check(&st, adj));
  MB_CALL(mb_cuda_check_sizes(adj, weights == MB_WEIGHTS_COTANGENT,
                              boundary != MB_BOUNDARY_FREE));
  memset(result, 0, sizeof *result);
  int dev = 0;
  MB_CALL_CUDA(cudaGetDevice(&dev));
  cudaDeviceProp prop;
  MB_CALL_CUDA(cudaGetDeviceProperties(&prop, dev));
  snprintf(result->device, sizeof result->device, "%s", prop.name);
  if (precision == MB_PRECISION_FLOAT64)
    MB_CALL(mb_cuda_bench_t<double>(adj, xyz, weights, boundary, warmup, repeats, result));
  else
    MB_CALL(mb_cuda_bench_t<float>(adj, xyz, weights, boundary, warmup, repeats, result));
  MB_CALL(mb_cuda_copy_bandwidth((size_t)512 << 20, &result->copy_gbs));
  return MB_SUCCESS;
}

/* ------------------------------------------------------ partitioned domains */

struct mb_cuda_domain {
  mb_precision precision = MB_PRECISION_FLOAT64;
  mb_dev_mesh d;
  cudaStream_t stream = nullptr;
  mb_cuda_halo *halo = nullptr; /* 3 values per vertex, of the working precision */
  ~mb_cuda_domain() {
    mb_cuda_halo_free(halo);
    if (stream) cudaStreamDestroy(stream);
  }
};

static mb_error mb_domain_setup(mb_cuda_domain *c, const mb_adjacency *adj, int64_t nlocal,
                                const double *xyz, bool need_opp, bool need_bnd,
                                const mb_halo *plan) {
  MB_CHECK(nlocal >= adj->nv && nlocal < MB_I32_MAX, MB_ERR_ARG,
           "local vertices (%lld) must be >= owned rows (%lld) and < 2^31", (long long)nlocal,
           (long long)adj->nv);
  MB_CALL(mb_cuda_check_sizes(adj, need_opp, need_bnd));
  if (c->precision == MB_PRECISION_FLOAT32)
    MB_CALL(mb_dev_upload<float>(&c->d, adj, nlocal, xyz, need_opp, need_bnd));
  else
    MB_CALL(mb_dev_upload<double>(&c->d, adj, nlocal, xyz, need_opp, need_bnd));
  MB_CALL_CUDA(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
  MB_CALL(mb_cuda_halo_create(plan, 3, c->precision == MB_PRECISION_FLOAT32 ? 4 : 8, c->stream,
                              &c->halo));
  /* MPI: begin only enqueues the pack and the copy to the host, end waits
   * for them and posts, so the interior's rows are enqueued (and run) while
   * the host waits and exchanges */
  mb_cuda_halo_set_post_at_end(c->halo, 1);
  MB_CALL_CUDA(cudaDeviceSynchronize());
  return MB_SUCCESS;
}

extern "C" mb_error mb_cuda_domain_create(const mb_adjacency *adj, int64_t nlocal,
                                          const double *xyz, mb_precision precision,
                                          const mb_smooth_stage *stages, int nstages,
                                          const mb_halo *plan, mb_cuda_domain **domain) {
  MB_CHECK(adj && plan && domain && (nlocal == 0 || xyz), MB_ERR_ARG,
           "mb_cuda_domain_create: NULL argument");
  bool need_opp = false, need_bnd = false;
  for (int s = 0; s < nstages; s++) {
    MB_CALL(mb_rules_valid(stages[s].weights, stages[s].boundary));
    need_opp = need_opp || stages[s].weights == MB_WEIGHTS_COTANGENT;
    need_bnd = need_bnd || stages[s].boundary != MB_BOUNDARY_FREE;
  }
  mb_cuda_domain *c = new (std::nothrow) mb_cuda_domain;
  MB_CHECK(c, MB_ERR_MEMORY, "out of memory");
  c->precision = precision;
  mb_error e = mb_domain_setup(c, adj, nlocal, xyz, need_opp, need_bnd, plan);
  if (e) {
    delete c;
    MB_CALL(e);
  }
  *domain = c;
  return MB_SUCCESS;
}

/* The positions being computed (their ghosts are what an exchange fills). */
static void *mb_domain_next(mb_cuda_domain *c) { return c->d.x[1 - c->d.cur].p; }

extern "C" mb_error mb_cuda_domain_halo_begin(mb_cuda_domain *c, mb_halo_transport transport,
                                              mb_nccl *nccl) {
  MB_CALL(mb_cuda_halo_begin(c->halo, MB_HALO_FORWARD, mb_domain_next(c), transport, nccl));
  return MB_SUCCESS;
}

extern "C" mb_error mb_cuda_domain_halo_end(mb_cuda_domain *c) {
  MB_CALL(mb_cuda_halo_end(c->halo, mb_domain_next(c)));
  return MB_SUCCESS;
}

extern "C" mb_error mb_cuda_domain_pass(mb_cuda_domain *c, int64_t begin, int64_t end,
                                        mb_weights weights, mb_boundary boundary, double factor) {
  MB_CHECK(begin >= 0 && end <= c->d.nv, MB_ERR_ARG, "rows [%lld, %lld) outside [0, %lld)",
           (long long)begin, (long long)end, (long long)c->d.nv);
  if (c->precision == MB_PRECISION_FLOAT32)
    MB_CALL(mb_dev_pass_rows<float>(&c->d, begin, end, weights, boundary, factor, c->stream));
  else
    MB_CALL(mb_dev_pass_rows<double>(&c->d, begin, end, weights, boundary, factor, c->stream));
  return MB_SUCCESS;
}

extern "C" void mb_cuda_domain_swap(mb_cuda_domain *c) { c->d.cur = 1 - c->d.cur; }

extern "C" mb_error mb_cuda_domain_sync(mb_cuda_domain *c) {
  MB_CALL_CUDA(cudaStreamSynchronize(c->stream));
  return MB_SUCCESS;
}

extern "C" mb_error mb_cuda_domain_download(mb_cuda_domain *c, double *xyz) {
  MB_CALL_CUDA(cudaStreamSynchronize(c->stream));
  if (c->precision == MB_PRECISION_FLOAT32)
    MB_CALL(mb_dev_download<float>(&c->d, xyz));
  else
    MB_CALL(mb_dev_download<double>(&c->d, xyz));
  return MB_SUCCESS;
}

extern "C" void mb_cuda_domain_free(mb_cuda_domain *c) { delete c; }
