/* meshbatch: the stencil room's CUDA backend for whole grids and its
 * benchmark (see cuda/stencil/mb_stencil_cuda.h). The kernels are in
 * mb_stencil_kernels.cuh; a block of a split grid is in mb_stencil_block.cu. */
#include <cuda_runtime.h>

#include <algorithm>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <vector>

#include "mb_cuda.h"
#include "mb_stencil_kernels.cuh"

using namespace mbst;

namespace {

/* The framed arrays of one grid on the device. */
template <typename T> struct dev_grid {
  frame f;
  mb_dbuf buf[3];
  size_t bytes;
  T *p(int k) const { return buf[k].template as<T>(); }
};

template <typename T> static mb_error grid_alloc(const int64_t n[3], int nbuf, dev_grid<T> *d) {
  for (int a = 0; a < 3; a++)
    MB_CHECK(n[a] >= 1 && n[a] < (1 << 24), MB_ERR_ARG,
             "stencil (cuda): grid of %lld x %lld x %lld points out of range", (long long)n[0],
             (long long)n[1], (long long)n[2]);
  d->f = frame_of<T>(n);
  d->bytes = sizeof(T) * d->f.points();
  for (int k = 0; k < nbuf; k++) {
    MB_CALL(mb_dbuf_alloc(&d->buf[k], d->bytes, "framed grid"));
    MB_CALL_CUDA(cudaMemset(d->buf[k].p, 0, d->bytes));
  }
  return MB_SUCCESS;
}

/* The ghost faces of a whole grid: periodic wrap or the Dirichlet value. */
template <typename T>
static mb_error fill(const mb_stencil_grid *g, const frame &f, T *u, cudaStream_t st = 0) {
  for (int axis = 0; axis < 3; axis++)
    for (int side = 0; side < 2; side++)
      MB_CALL(face<T>(f, axis, side, g->bc == MB_STENCIL_PERIODIC ? FACE_WRAP : FACE_CONST,
                      (T)g->outside, u, nullptr, st));
  return MB_SUCCESS;
}

/* The ghost faces of a time loop's buffers before its first step, and
 * whether a step needs them filled again (*each_step): periodic, the input
 * u is wrapped once and the steps' stores wrap their outputs (wrap_copies;
 * *wrap = every axis), unless an axis is thinner than 4 planes; Dirichlet,
 * the value once in every buffer (nothing else writes those planes). The
 * stores' wrap is the fused step of MB_STENCIL_STEP_AUTO (mb_stencil_cuda.h:
 * faster on one GPU since the x images are stored as vectors). */
template <typename T>
static mb_error loop_faces(const mb_stencil_grid *g, dev_grid<T> *d, int nbuf, T *u, int *wrap,
                           bool *each_step) {
  *wrap = 0;
  *each_step = false;
  if (g->bc == MB_STENCIL_PERIODIC) {
    MB_CALL(fill<T>(g, d->f, u));
    if (d->f.nz >= G && d->f.ny >= G && d->f.nx >= G) *wrap = 7;
    else *each_step = true;
    return MB_SUCCESS;
  }
  for (int k = 0; k < nbuf; k++) MB_CALL(fill<T>(g, d->f, d->p(k)));
  return MB_SUCCESS;
}

template <typename T>
static mb_error apply_t(const mb_stencil_grid *g, int op, T a, const void *u, void *out) {
  MB_CHECK(g->ghost == 0, MB_ERR_ARG, "stencil (cuda): host arrays must be plain (ghost 0)");
  dev_grid<T> d;
  MB_CALL(grid_alloc<T>(g->n, 2, &d));
  MB_CALL(frame_copy<T>(d.f, d.p(0), const_cast<void *>(u), true, 0));
  MB_CALL(fill<T>(g, d.f, d.p(0)));
  MB_CALL(apply_box<T>(op, d.f, whole(d.f), g->h, d.p(0), nullptr, d.p(1), a, 0));
  return frame_copy<T>(d.f, d.p(1), out, false, 0);
}

template <typename T>
static mb_error heat_t(const mb_stencil_grid *g, double alpha, double dt, int64_t nsteps,
                       void *u, const mb_stencil_cuda_stop *stop) {
  MB_CHECK(g->ghost == 0, MB_ERR_ARG, "stencil (cuda): host arrays must be plain (ghost 0)");
  dev_grid<T> d;
  MB_CALL(grid_alloc<T>(g->n, 2, &d));
  MB_CALL(frame_copy<T>(d.f, d.p(0), u, true, 0));
  stop_points sp;
  MB_CALL(sp.init(stop, (double)g->n[0] * (double)g->n[1] * (double)g->n[2]));
  T *cur = d.p(0), *next = d.p(1);
  int wrap;
  bool each_step;
  MB_CALL(loop_faces<T>(g, &d, 2, cur, &wrap, &each_step));
  const box all = whole(d.f);
  for (int64_t s = 0; s < nsteps; s++) {
    int halt;
    MB_CALL(sp.at(s, 0, &halt));
    if (halt) return sp.stopped(0);
    if (each_step) MB_CALL(fill<T>(g, d.f, cur));
    MB_CALL(apply_boxes<T>(OP_HEAT, d.f, &all, 1, g->h, cur, nullptr, next, (T)(alpha * dt), 0,
                           wrap));
    std::swap(cur, next);
  }
  return frame_copy<T>(d.f, cur, u, false, 0);
}

template <typename T>
static mb_error wave_t(const mb_stencil_grid *g, double c, double dt, int64_t nsteps,
                       void *u_prev, void *u, const mb_stencil_cuda_stop *stop) {
  MB_CHECK(g->ghost == 0, MB_ERR_ARG, "stencil (cuda): host arrays must be plain (ghost 0)");
  dev_grid<T> d;
  MB_CALL(grid_alloc<T>(g->n, 3, &d));
  MB_CALL(frame_copy<T>(d.f, d.p(0), u_prev, true, 0));
  MB_CALL(frame_copy<T>(d.f, d.p(1), u, true, 0));
  T *prev = d.p(0), *cur = d.p(1), *next = d.p(2);
  const T b = (T)(c * c * dt * dt);
  stop_points sp;
  MB_CALL(sp.init(stop, (double)g->n[0] * (double)g->n[1] * (double)g->n[2]));
  int wrap;
  bool each_step;
  MB_CALL(loop_faces<T>(g, &d, 3, cur, &wrap, &each_step));
  const box all = whole(d.f);
  for (int64_t s = 0; s < nsteps; s++) {
    int halt;
    MB_CALL(sp.at(s, 0, &halt));
    if (halt) return sp.stopped(0);
    if (each_step) MB_CALL(fill<T>(g, d.f, cur));
    MB_CALL(apply_boxes<T>(OP_WAVE, d.f, &all, 1, g->h, cur, prev, next, b, 0, wrap));
    T *t = prev;
    prev = cur;
    cur = next;
    next = t;
  }
  MB_CALL(frame_copy<T>(d.f, prev, u_prev, false, 0));
  return frame_copy<T>(d.f, cur, u, false, 0);
}

/* ------------------------------------------------------------ benchmark */

/* The pencil kernels of the NVIDIA blog, for comparison: x, 4 rows of the
 * whole x extent per block; y and z, 32 columns of x and the whole extent
 * along the axis per block, the threads striding along it. */
template <typename T>
__global__ void pencil_dx(frame f, const T *__restrict__ u, T *__restrict__ out,
                          const weights<T> wt) {
  extern __shared__ unsigned char smem_raw[];
  T *s = reinterpret_cast<T *>(smem_raw);
  const int L = f.nx + 2 * G, row = blockIdx.x * blockDim.y + threadIdx.y;
  if (row >= f.ny * f.nz) return;
  const int y = row % f.ny, z = row / f.ny;
  T *sr = s + threadIdx.y * L;
  for (int i = threadIdx.x; i < L; i += blockDim.x) sr[i] = u[f.at(z, y, i - G)];
  __syncthreads();
  for (int i = threadIdx.x; i < f.nx; i += blockDim.x) out[f.at(z, y, i)] = d1of(sr + i, wt.e[2]);
}

template <typename T, int AXIS /* 0 z, 1 y */>
__global__ void pencil_dyz(frame f, const T *__restrict__ u, T *__restrict__ out,
                           const weights<T> wt) {
  extern __shared__ unsigned char smem_raw[];
  T *s = reinterpret_cast<T *>(smem_raw); /* [n + 8][32] */
  const int n = AXIS == 0 ? f.nz : f.ny, other = AXIS == 0 ? f.ny : f.nz;
  const int x = blockIdx.x * 32 + threadIdx.x, o = blockIdx.y;
  if (o >= other) return;
  const bool in = x < f.nx;
  for (int k = threadIdx.y; k < n + 2 * G; k += blockDim.y)
    if (in) s[k * 32 + threadIdx.x] = AXIS == 0 ? u[f.at(k - G, o, x)] : u[f.at(o, k - G, x)];
  __syncthreads();
  if (!in) return;
  for (int k = threadIdx.y; k < n; k += blockDim.y) {
    T w[2 * G + 1];
    for (int j = 0; j < 2 * G + 1; j++) w[j] = s[(k + j) * 32 + threadIdx.x];
    out[AXIS == 0 ? f.at(k, o, x) : f.at(o, k, x)] = d1of(w, wt.e[AXIS]);
  }
}

/* The benchmark's rows: the op and its points per thread along x (0: the
 * default, default_v; rows of other widths are printed where they differ
 * from the default), whether the TMA kernel may run it (where the device
 * has it; "registers": the marching kernel, for comparison), or a pencil
 * kernel (PENCIL + axis). */
enum { PENCIL = 100 };
struct bench_row {
  const char *name;
  int op, v;
  bool tma;
};
static const bench_row bench_rows[] = {
    {"derivative z (2.5D)", OP_DZ, 0, true},
    {"derivative y (2.5D)", OP_DY, 0, true},
    {"derivative x (2.5D)", OP_DX, 0, true},
    {"laplacian (2.5D)", OP_LAP, 0, true},
    {"heat step (fused)", OP_HEAT, 0, true},
    {"wave step (fused)", OP_WAVE, 0, true},
    {"laplacian (registers)", OP_LAP, 0, false},
    {"wave step (registers)", OP_WAVE, 0, false},
    {"derivative z (V=1)", OP_DZ, 1, true},
    {"derivative z (V=2)", OP_DZ, 2, true},
    {"derivative z (V=4)", OP_DZ, 4, true},
    {"derivative y (V=1)", OP_DY, 1, true},
    {"derivative y (V=2)", OP_DY, 2, true},
    {"derivative y (V=4)", OP_DY, 4, true},
    {"derivative x (V=1)", OP_DX, 1, true},
    {"derivative x (V=2)", OP_DX, 2, true},
    {"derivative x (V=4)", OP_DX, 4, true},
    {"laplacian (V=1)", OP_LAP, 1, true},
    {"laplacian (V=2)", OP_LAP, 2, true},
    {"laplacian (V=4)", OP_LAP, 4, true},
    {"derivative z (pencils)", PENCIL + 0, 0, true},
    {"derivative y (pencils)", PENCIL + 1, 0, true},
    {"derivative x (pencils)", PENCIL + 2, 0, true}};

template <typename T>
static mb_error bench_t(const int64_t n[3], int warmup, int repeats, mb_stencil_bench_result *r) {
  mb_stencil_grid g = {};
  for (int a = 0; a < 3; a++) {
    g.n[a] = n[a];
    g.h[a] = 1.0 / (double)n[a];
  }
  dev_grid<T> d;
  MB_CALL(grid_alloc<T>(n, 3, &d));
  std::vector<T> host((size_t)(n[0] * n[1] * n[2]));
  for (size_t i = 0; i < host.size(); i++) host[i] = (T)((double)((i * 2654435761u) % 1000) / 1000.0);
  MB_CALL(frame_copy<T>(d.f, d.p(0), host.data(), true, 0));
  MB_CALL(frame_copy<T>(d.f, d.p(2), host.data(), true, 0));
  MB_CALL(fill<T>(&g, d.f, d.p(0)));
  const T *in = d.p(0), *prev = d.p(2);
  T *out = d.p(1);
  const frame &f = d.f;
  const box all = whole(f);
  const weights<T> wt = weights_of<T>(g.h);
  const size_t sm_x = sizeof(T) * 4 * (size_t)(f.nx + 2 * G);
  const size_t sm_yz = sizeof(T) * 32 * (size_t)(std::max(f.ny, f.nz) + 2 * G);
  MB_CALL_CUDA(cudaFuncSetAttribute(pencil_dyz<T, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)sm_yz));
  MB_CALL_CUDA(cudaFuncSetAttribute(pencil_dyz<T, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)sm_yz));
  MB_CALL_CUDA(cudaFuncSetAttribute(pencil_dx<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)sm_x));
  cudaEvent_t e0, e1;
  MB_CALL_CUDA(cudaEventCreate(&e0));
  MB_CALL_CUDA(cudaEventCreate(&e1));
  mb_error err = MB_SUCCESS;
  const double points = (double)(n[0] * n[1] * n[2]);
  const int nrows = (int)(sizeof bench_rows / sizeof bench_rows[0]);
  static_assert(sizeof bench_rows / sizeof bench_rows[0] <= MB_STENCIL_BENCH_MAX, "bench rows");
  for (int k = 0; k < nrows && !err; k++) {
    const bench_row &row = bench_rows[k];
    if (row.op < PENCIL && row.v && (row.v > vwidth<T>() || row.v == default_v<T>(row.op)))
      continue; /* a width the type lacks, or the default row again */
    if (!row.tma && !tma_available()) continue; /* the default rows ran the same kernel */
    const int i = r->nkernels++;
    snprintf(r->name[i], sizeof r->name[i], "%s", row.name);
    r->bytes[i] = (row.op == OP_WAVE ? 3.0 : 2.0) * sizeof(T) * points;
    std::vector<float> times;
    for (int rep = 0; rep < warmup + repeats && !err; rep++) {
      if (cudaEventRecord(e0) != cudaSuccess)
        err = mb_error_set(MB_ERR_CUDA, __FILE__, __LINE__, __func__, "benchmark timing failed");
      if (row.op < PENCIL)
        err = apply_box<T>(row.op, f, all, g.h, in, row.op == OP_WAVE ? prev : nullptr, out,
                           T(row.op >= OP_HEAT ? 1e-7 : 0), 0, row.v, row.tma);
      else if (row.op == PENCIL + 0)
        pencil_dyz<T, 0><<<dim3((f.nx + 31) / 32, f.ny), dim3(32, 8), sm_yz>>>(f, in, out, wt);
      else if (row.op == PENCIL + 1)
        pencil_dyz<T, 1><<<dim3((f.nx + 31) / 32, f.nz), dim3(32, 8), sm_yz>>>(f, in, out, wt);
      else
        pencil_dx<T><<<(unsigned)((f.ny * f.nz + 3) / 4), dim3(64, 4), sm_x>>>(f, in, out, wt);
      if (!err && cudaGetLastError() != cudaSuccess)
        err = mb_error_set(MB_ERR_CUDA, __FILE__, __LINE__, __func__, "benchmark kernel '%s' failed",
                           row.name);
      float ms = 0;
      if (!err && (cudaEventRecord(e1) != cudaSuccess || cudaEventSynchronize(e1) != cudaSuccess ||
                   cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess))
        err = mb_error_set(MB_ERR_CUDA, __FILE__, __LINE__, __func__,
                           "benchmark kernel '%s' failed on the device", row.name);
      if (rep >= warmup) times.push_back(ms);
    }
    if (!err) {
      std::sort(times.begin(), times.end());
      r->ms[r->nkernels - 1] = times[times.size() / 2];
    }
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  MB_CALL(err);
  MB_CALL(mb_cuda_copy_bandwidth(d.bytes, &r->copy_gbs));
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
    snprintf(r->device, sizeof r->device, "%s", prop.name);
  return MB_SUCCESS;
}

} // namespace

extern "C" mb_error mb_stencil_cuda_apply(const mb_stencil_grid *g, int op, int f32,
                                          const void *u, void *out) {
  MB_CHECK(op >= 0 && op <= 3, MB_ERR_ARG, "stencil (cuda): op %d", op);
  return f32 ? apply_t<float>(g, op, 0.0f, u, out) : apply_t<double>(g, op, 0.0, u, out);
}

extern "C" mb_error mb_stencil_cuda_heat_step(const mb_stencil_grid *g, int f32, double coef,
                                              const void *u, void *out) {
  MB_CHECK(u != out, MB_ERR_ARG, "heat step (cuda): the output must not be the input");
  return f32 ? apply_t<float>(g, OP_HEAT, (float)coef, u, out)
             : apply_t<double>(g, OP_HEAT, coef, u, out);
}

extern "C" mb_error mb_stencil_cuda_heat(const mb_stencil_grid *g, int f32, double alpha,
                                         double dt, int64_t nsteps, void *u,
                                         const mb_stencil_cuda_stop *stop) {
  MB_CALL(mb_stencil_check_heat(g, alpha, dt, nsteps));
  return f32 ? heat_t<float>(g, alpha, dt, nsteps, u, stop)
             : heat_t<double>(g, alpha, dt, nsteps, u, stop);
}

extern "C" mb_error mb_stencil_cuda_wave(const mb_stencil_grid *g, int f32, double c, double dt,
                                         int64_t nsteps, void *u_prev, void *u,
                                         const mb_stencil_cuda_stop *stop) {
  MB_CALL(mb_stencil_check_wave(g, c, dt, nsteps));
  return f32 ? wave_t<float>(g, c, dt, nsteps, u_prev, u, stop)
             : wave_t<double>(g, c, dt, nsteps, u_prev, u, stop);
}

extern "C" mb_error mb_stencil_cuda_bench(const int64_t n[3], int f32, int warmup, int repeats,
                                          mb_stencil_bench_result *r) {
  MB_CHECK(r && warmup >= 0 && repeats >= 1, MB_ERR_ARG, "mb_stencil_cuda_bench: bad arguments");
  memset(r, 0, sizeof *r);
  return f32 ? bench_t<float>(n, warmup, repeats, r) : bench_t<double>(n, warmup, repeats, r);
}
