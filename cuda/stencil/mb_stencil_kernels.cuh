/* meshbatch: the stencil room's CUDA kernels (cuda/stencil/*.cu only).
 *
 * Arrays on the device are framed: 4 ghost planes on every face, as on the
 * CPU (mb_stencil.h), with rows padded so that point x = 0 sits on a
 * 128-byte boundary and every row is a whole number of 128-byte lines. The
 * kernels compute the points of a box of the block with the arithmetic of
 * mb_stencil.h (its fused multiply-adds written out, __fma_rn; the compiler
 * fuses nothing else: --fmad=false), so any split of the block into boxes
 * gives the same bits; the split-grid path computes the interior box while
 * the halo travels, then the boundary shell (mb_stencil_block.cu).
 *
 * The marching kernel (2.5D blocking, P. Micikevicius, "3D finite
 * difference computation on GPUs using CUDA", GPGPU-2, 2009): each thread
 * owns V consecutive points along x (V = 1, 2 or 4: up to one 16-byte
 * vector) and marches along z (or y for the y derivative) through a chunk
 * of planes with the 9 values of its column around the current plane in
 * registers (the marched axis's terms; every value read once). With V > 1
 * the x neighbours come from the warp's neighbouring lanes by shuffles (the
 * lanes at the warp's ends load the 4 values beyond), with V = 1 through
 * L1; the neighbours along the third axis through the L1 cache shared by
 * the block. default_v gives each op's width.
 *
 * The TMA kernel (tile_tma, in mb_stencil_tma.cuh, included below the
 * marching kernel's launch; compute capability 9.0 and later) runs the
 * Laplacian and the steps: the same march along z with the column's 9
 * values in registers, but each plane's tile with its halo is brought into
 * a ring of shared-memory slots by the tensor memory accelerator a few
 * planes ahead, and the y and x neighbours are read from there (0.83 of the
 * copy bandwidth against the marching kernel's 0.69 on the H100,
 * docs/benchmarks.md). The derivatives stay on the marching kernel.
 */
#ifndef MB_STENCIL_KERNELS_CUH
#define MB_STENCIL_KERNELS_CUH

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <stdint.h>
#include <type_traits>
#include <algorithm>
#include <stdio.h>
#include <stdlib.h>

#include "mb_cuda_private.cuh"
#include "mb_op.h"
#include "mb_stencil_cuda.h"

namespace mbst {

/* Steps between the stop points of a time loop over `points` grid points
 * (a split grid: the whole grid's points over the ranks, the same on every
 * rank): about 2^28 point updates (milliseconds on a GPU), 1 to 32 steps;
 * a query costs microseconds, so nothing measurable. */
inline int64_t stop_every(double points) {
  const double k = (double)(1 << 28) / (points > 1 ? points : 1);
  return k >= 32 ? 32 : k <= 1 ? 1 : (int64_t)k;
}

/* The stop points of a time loop on a stream (mb_stencil_cuda_stop): at
 * step s > 0, a multiple of `every`, an event is recorded, the host waits
 * for the one of the stop point before (the device keeps the steps since
 * queued, so it does not idle; the host runs at most two intervals ahead)
 * and asks mb_op_should_stop. */
struct stop_points {
  const mb_stencil_cuda_stop *stop = nullptr;
  int64_t every = 1;
  cudaEvent_t ev[2] = {nullptr, nullptr};
  int k = 0;
  stop_points() = default;
  stop_points(const stop_points &) = delete;
  stop_points &operator=(const stop_points &) = delete;
  ~stop_points() {
    for (cudaEvent_t e : ev)
      if (e) cudaEventDestroy(e);
  }
  mb_error init(const mb_stencil_cuda_stop *s, double points) {
    stop = s && s->ctx ? s : nullptr;
    every = stop_every(points);
    if (stop)
      for (cudaEvent_t &e : ev) MB_CALL_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return MB_SUCCESS;
  }
  /* Before step s, on stream st: *halt = 1 where the loop must stop now
   * (every rank of a split grid at the same step). */
  mb_error at(int64_t s, cudaStream_t st, int *halt) {
    *halt = 0;
    if (!stop || s <= 0 || s % every) return MB_SUCCESS;
    MB_CALL_CUDA(cudaEventRecord(ev[k], st));
    k ^= 1;
    if (s > every) MB_CALL_CUDA(cudaEventSynchronize(ev[k]));
    *halt = mb_op_should_stop(stop->ctx, (double)(stop->done + s), (double)stop->total);
    return MB_SUCCESS;
  }
  /* The error of a stopped loop, after the device finished what st holds. */
  mb_error stopped(cudaStream_t st) const {
    (void)cudaStreamSynchronize(st);
    return mb_op_stopped(stop->ctx);
  }
};

constexpr int G = 4;   /* ghost planes per face: the stencil's half-width */
constexpr int TX = 32; /* threads of a block along x: one warp */
enum op_t { OP_DZ = 0, OP_DY = 1, OP_DX = 2, OP_LAP = 3, OP_HEAT = 4, OP_WAVE = 5 };

/* The device frame of a block of n (z, y, x) points. */
struct frame {
  int nz, ny, nx, xo;  /* points per axis; offset of x = 0 in a row (>= G) */
  long long sy, sz;    /* strides of y and z in the framed array */
  __host__ __device__ long long at(int z, int y, int x) const {
    return (long long)(z + G) * sz + (long long)(y + G) * sy + (x + xo);
  }
  __host__ __device__ size_t points() const { return (size_t)(sz * (nz + 2 * G)); }
};

template <typename T> inline frame frame_of(const int64_t n[3]) {
  frame f;
  const int line = 128 / (int)sizeof(T); /* values per 128 bytes */
  f.nz = (int)n[0];
  f.ny = (int)n[1];
  f.nx = (int)n[2];
  f.xo = line;
  f.sy = ((long long)f.xo + f.nx + G + line - 1) / line * line;
  f.sz = f.sy * (f.ny + 2 * G);
  return f;
}

/* A box of points [lo, lo + n) of the block, per axis (z, y, x). */
struct box {
  int lo[3], n[3];
  bool empty() const { return n[0] <= 0 || n[1] <= 0 || n[2] <= 0; }
};

inline box whole(const frame &f) { return box{{0, 0, 0}, {f.nz, f.ny, f.nx}}; }

/* Up to 6 boxes computed by one launch of the TMA kernel (a split step's
 * shell: one launch for its slabs instead of one each): box k takes the
 * blocks [first[k], first[k + 1]) of the launch's one-dimensional grid,
 * gx[k] x gy[k] tiles per chunk of chunk[k] planes, x fastest, then y,
 * then the chunks (the order of a single box's three-dimensional grid). */
constexpr int MAX_BOXES = 6;
struct box_set {
  int count;
  box b[MAX_BOXES];
  int chunk[MAX_BOXES], gx[MAX_BOXES], gy[MAX_BOXES], first[MAX_BOXES + 1];
};

/* ------------------------------------------------------------ faces */

/* What a face kernel does with the G planes of one face (axis, side) of
 * the block; the planes' other two extents are the block's. Buffers hold
 * the face's points in C order (z, y, x). */
enum face_mode {
  FACE_PACK,   /* the block's outermost G owned planes -> buf */
  FACE_UNPACK, /* buf -> the G ghost planes */
  FACE_WRAP,   /* ghost planes <- the owned planes across the block (periodic, uncut axis) */
  FACE_CONST   /* ghost planes <- value (Dirichlet) */
};

template <typename T>
__global__ void face_kernel(frame f, int axis, int side, int mode, T value, T *u, T *buf) {
  const int n[3] = {f.nz, f.ny, f.nx};
  int cnt[3] = {n[0], n[1], n[2]};
  cnt[axis] = G;
  /* a plane (z) per grid row, 32-bit index arithmetic within it (64-bit
   * divisions per point cost about as much as the step's interior on a
   * split 1024^3 grid) */
  const unsigned r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= (unsigned)cnt[1] * (unsigned)cnt[2]) return;
  int i[3];
  i[2] = (int)(r % (unsigned)cnt[2]);
  i[1] = (int)(r / (unsigned)cnt[2]);
  i[0] = (int)blockIdx.y;
  const long long q = (long long)i[0] * cnt[1] * cnt[2] + r; /* the point's place in buf */
  const int d = i[axis];
  int ghost[3] = {i[0], i[1], i[2]};
  ghost[axis] = side == 0 ? d - G : n[axis] + d;
  if (mode == FACE_PACK) {
    int own[3] = {i[0], i[1], i[2]};
    own[axis] = side == 0 ? d : n[axis] - G + d;
    buf[q] = u[f.at(own[0], own[1], own[2])];
    return;
  }
  const long long g = f.at(ghost[0], ghost[1], ghost[2]);
  if (mode == FACE_UNPACK) u[g] = buf[q];
  else if (mode == FACE_CONST) u[g] = value;
  else {
    int src[3] = {ghost[0], ghost[1], ghost[2]};
    src[axis] = ((ghost[axis] % n[axis]) + n[axis]) % n[axis];
    u[g] = u[f.at(src[0], src[1], src[2])];
  }
}

/* face_kernel's work on an x face, a thread per row (z, y) of the block:
 * the row's G ghost (or owned) values moved as 16-byte vectors (G = 4
 * floats or 2 x 2 doubles) instead of a thread per point, whose warps each
 * touched 8 rows 16 bytes at a time (the x faces' wrap was most of the
 * 0.118 ms the faces took per split 1024^3 step on an H200, 4 x 1 x 1
 * slabs). Same values as face_kernel (a copy is exact). Needs the row's
 * ghost and owned x ends and buf 16-byte aligned (face() checks). */
template <typename T>
__global__ void face_x_rows(frame f, int side, int mode, T value, T *u, T *buf) {
  constexpr int V = 16 / (int)sizeof(T);
  using W = typename std::conditional<sizeof(T) == 4, float4, double2>::type;
  const int y = (int)(blockIdx.x * blockDim.x + threadIdx.x), z = (int)blockIdx.y;
  if (y >= f.ny) return;
  const long long row = f.at(z, y, 0);
  const long long ghost = row + (side == 0 ? -G : f.nx);
  W *b = buf ? reinterpret_cast<W *>(buf + ((long long)z * f.ny + y) * G) : nullptr;
#pragma unroll
  for (int k = 0; k < G / V; k++) {
    W *g = reinterpret_cast<W *>(u + ghost) + k;
    if (mode == FACE_PACK) {
      b[k] = reinterpret_cast<const W *>(u + row + (side == 0 ? 0 : f.nx - G))[k];
    } else if (mode == FACE_UNPACK) {
      *g = b[k];
    } else if (mode == FACE_CONST) {
      W w;
      T *d = reinterpret_cast<T *>(&w);
#pragma unroll
      for (int c = 0; c < V; c++) d[c] = value;
      *g = w;
    } else { /* FACE_WRAP: the owned values across the row */
      *g = reinterpret_cast<const W *>(u + row + (side == 0 ? f.nx - G : 0))[k];
    }
  }
}

inline long long face_points(const frame &f, int axis) {
  const long long n[3] = {f.nz, f.ny, f.nx};
  return (long long)G * n[(axis + 1) % 3] * n[(axis + 2) % 3];
}

template <typename T>
inline mb_error face(const frame &f, int axis, int side, face_mode mode, T value, T *u, T *buf,
                     cudaStream_t s) {
  const long long count = face_points(f, axis);
  if (count == 0) return MB_SUCCESS;
  const size_t W = 16; /* face_x_rows' vector */
  if (axis == 2 && G * sizeof(T) % W == 0 && f.nx >= G &&
      ((size_t)f.xo - G) * sizeof(T) % W == 0 && ((size_t)f.xo + f.nx) * sizeof(T) % W == 0 &&
      f.sy * sizeof(T) % W == 0 && (uintptr_t)u % W == 0 && (uintptr_t)buf % W == 0 &&
      f.nz <= 65535) {
    face_x_rows<T><<<dim3((unsigned)((f.ny + 127) / 128), (unsigned)f.nz), 128, 0, s>>>(
        f, side, (int)mode, value, u, buf);
    MB_CHECK_LAUNCH("stencil ghost face (x rows)");
    return MB_SUCCESS;
  }
  const int n[3] = {f.nz, f.ny, f.nx};
  const int nz = axis == 0 ? G : n[0];
  const long long plane = count / nz; /* points of the face in one z plane */
  MB_CHECK(nz <= 65535 && plane < (1ll << 31), MB_ERR_UNSUPPORTED,
           "stencil (cuda): a block of %d x %d x %d is beyond the face kernel's grid", f.nz, f.ny,
           f.nx);
  face_kernel<T><<<dim3((unsigned)((plane + 255) / 256), (unsigned)nz), 256, 0, s>>>(
      f, axis, side, (int)mode, value, u, buf);
  MB_CHECK_LAUNCH("stencil ghost face");
  return MB_SUCCESS;
}

/* ------------------------------------------------------------ vectors */

template <typename T, int V> struct vec;
template <> struct vec<float, 4> { using t = float4; };
template <> struct vec<float, 2> { using t = float2; };
template <> struct vec<double, 2> { using t = double2; };
template <typename T> struct vec<T, 1> { using t = T; };

template <typename T, int V> struct vals {
  T c[V];
};

template <typename T, int V> __device__ __forceinline__ vals<T, V> ld(const T *p) {
  using W = typename vec<T, V>::t;
  const W w = __ldg(reinterpret_cast<const W *>(p));
  vals<T, V> r;
  const T *s = reinterpret_cast<const T *>(&w);
#pragma unroll
  for (int k = 0; k < V; k++) r.c[k] = s[k];
  return r;
}

template <typename T, int V> __device__ __forceinline__ void st(T *p, const vals<T, V> &v) {
  using W = typename vec<T, V>::t;
  W w;
  T *d = reinterpret_cast<T *>(&w);
#pragma unroll
  for (int k = 0; k < V; k++) d[k] = v.c[k];
  *reinterpret_cast<W *>(p) = w;
}

/* Axes whose ghost planes a step's stores fill as they go (bit a: axis a,
 * z = 1, y = 2, x = 4): the periodic axes a block does not cut. Each point
 * within G of such a face is also stored at its periodic image in the
 * ghost planes across the block (what the face kernel's FACE_WRAP copies
 * before the next step), so the next step needs no face kernel before its
 * interior. Needs n >= G along the axis (each ghost point then has one
 * image); the bits are the same, a copy being exact. */
template <typename T, int V>
__device__ __forceinline__ void wrap_copies(const frame &f, int wrap, T *o, const vals<T, V> &r,
                                            int z, int y, int x) {
  if (wrap & 1) {
    if (z < G) st<T, V>(o + f.nz * f.sz, r);
    if (z >= f.nz - G) st<T, V>(o - f.nz * f.sz, r);
  }
  if (wrap & 2) {
    if (y < G) st<T, V>(o + f.ny * f.sy, r);
    if (y >= f.ny - G) st<T, V>(o - f.ny * f.sy, r);
  }
  if (wrap & 4) {
    if (V > 1 && G % V == 0 && f.nx % V == 0 && x % V == 0) {
      /* x a multiple of V: the vector lies wholly within G of the face
       * or wholly outside, and its image is as aligned as it */
      if (x < G) st<T, V>(o + f.nx, r);
      if (x >= f.nx - G) st<T, V>(o - f.nx, r);
    } else {
#pragma unroll
      for (int c = 0; c < V; c++) {
        if (x + c < G) o[c + f.nx] = r.c[c];
        if (x + c >= f.nx - G) o[c - f.nx] = r.c[c];
      }
    }
  }
}

/* A hint to bring the 128-byte line of p into L2 (no register, no wait). */
__device__ __forceinline__ void prefetch_l2(const void *p) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

/* The fused multiply-add of the contract (mb_stencil.h): a b + c rounded once. */
__device__ __forceinline__ float fmx(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ __forceinline__ double fmx(double a, double b, double c) { return __fma_rn(a, b, c); }

/* The stencil weights of a grid in T (mb_stencil_weights_of, rounded once):
 * e[a][k - 1] of the first derivative along axis a, f[a][k - 1] and f0 of
 * the Laplacian. */
template <typename T> struct weights {
  T e[3][4], f[3][4], f0;
};

template <typename T> inline weights<T> weights_of(const double h[3]) {
  mb_stencil_grid g = {};
  for (int a = 0; a < 3; a++) g.h[a] = h[a];
  const mb_stencil_weights w = mb_stencil_weights_of(&g);
  weights<T> t;
  for (int a = 0; a < 3; a++)
    for (int k = 0; k < 4; k++) {
      t.e[a][k] = (T)w.first[a][k];
      t.f[a][k] = (T)w.second[a][k];
    }
  t.f0 = (T)w.center;
  return t;
}

/* first derivative from the 9 values w[0..8] around w[4], weights e[0..3] */
template <typename T> __device__ __forceinline__ T d1of(const T *w, const T *e) {
  T s = e[0] * (w[5] - w[3]);
  s = fmx(e[1], w[6] - w[2], s);
  s = fmx(e[2], w[7] - w[1], s);
  return fmx(e[3], w[8] - w[0], s);
}

/* s + the second-difference terms along one axis from the 9 values around
 * w[4], weights f[0..3] (k = 1..4 in turn) */
template <typename T> __device__ __forceinline__ T d2add(const T *w, const T *f, T s) {
  s = fmx(f[0], w[5] + w[3], s);
  s = fmx(f[1], w[6] + w[2], s);
  s = fmx(f[2], w[7] + w[1], s);
  return fmx(f[3], w[8] + w[0], s);
}

/* ------------------------------------------------------------ marching kernel */

/* The x derivative of U planes of one row, from p (march's OP_DX): the
 * loads of all U planes are issued before the first shuffle, so a thread
 * has U vectors in flight (nothing is carried from plane to plane, and a
 * plane-by-plane loop kept one in flight: 0.82 of copy in float32 against
 * the z derivative's 0.90). V > 1: the x neighbours from the warp's
 * neighbouring lanes, the lanes at its ends loading the G values beyond;
 * V = 1: the 2 G + 1 values through L1. */
template <typename T, int V, int U>
__device__ __forceinline__ void dx_planes(const frame &f, const T *__restrict__ u,
                                          T *__restrict__ out, long long p, long long sm,
                                          int lane, int x, bool loads, bool active, const T *e) {
  if constexpr (V == 1) {
    T xl[U][2 * G + 1];
#pragma unroll
    for (int k = 0; k < U; k++)
#pragma unroll
      for (int t = 0; t < 2 * G + 1; t++) xl[k][t] = __ldg(u + p + k * sm + t - G);
#pragma unroll
    for (int k = 0; k < U; k++) {
      vals<T, 1> r;
      r.c[0] = d1of(xl[k], e);
      st<T, 1>(out + p + k * sm, r);
    }
  } else {
    constexpr int K = G / V; /* vectors on each side */
    vals<T, V> mid[U] = {}, edge[U][K] = {};
#pragma unroll
    for (int k = 0; k < U; k++) {
      if (loads) mid[k] = ld<T, V>(u + p + k * sm);
#pragma unroll
      for (int j = 1; j <= K; j++) {
        if (lane < j) edge[k][j - 1] = ld<T, V>(u + p + k * sm - j * V);
        else if (lane >= TX - j && x + j * V + V <= f.nx + G)
          edge[k][j - 1] = ld<T, V>(u + p + k * sm + j * V);
      }
    }
#pragma unroll
    for (int k = 0; k < U; k++) {
      T xl[V + 2 * G]; /* xl[G + c] is point x + c */
#pragma unroll
      for (int c = 0; c < V; c++) xl[G + c] = mid[k].c[c];
#pragma unroll
      for (int j = 1; j <= K; j++) {
        vals<T, V> left, right;
#pragma unroll
        for (int c = 0; c < V; c++) {
          left.c[c] = __shfl_up_sync(0xffffffffu, mid[k].c[c], j);
          right.c[c] = __shfl_down_sync(0xffffffffu, mid[k].c[c], j);
        }
        if (lane < j) left = edge[k][j - 1];
        else if (lane >= TX - j && x + j * V + V <= f.nx + G) right = edge[k][j - 1];
#pragma unroll
        for (int c = 0; c < V; c++) {
          xl[G - j * V + c] = left.c[c];
          xl[G + (j - 1) * V + V + c] = right.c[c];
        }
      }
      vals<T, V> r;
#pragma unroll
      for (int c = 0; c < V; c++) r.c[c] = d1of(xl + c, e);
      if (active) st<T, V>(out + p + k * sm, r);
    }
  }
}

/* Planes of the x derivative whose loads are issued together (dx_planes):
 * 4 (0.88 of copy in float32 and 0.89 in float64 on the H100, against
 * 0.87 and 0.85 plane by plane; 8 spilled registers in float64). */
constexpr int DX_PLANES = 4;

/* OP at the points of box b. MARCH = 0: threads march along z (y is the
 * block's second axis); MARCH = 1 (the y derivative only): along y (z is
 * the second axis). The x neighbours: shuffles where V > 1, loads where
 * V = 1. */
/* Blocks of up to 512 threads (tuning_of). Holding the Laplacian's (95-110
 * registers, a quarter of the warps resident) to 3 or 4 blocks of 256 per
 * SM spilled and ran at a third to a half of the speed on the H100, so
 * registers are not bounded further. */
template <typename T, int V, int OP, int MARCH, int U = 1>
__global__ void __launch_bounds__(TX * 16)
    march(frame f, box b, int chunk, const T *__restrict__ u, const T *__restrict__ u_prev,
          T *__restrict__ out, const weights<T> wt, T a, int pf, int wrap) {
  const int lane = threadIdx.x;
  const int x = b.lo[2] + (blockIdx.x * TX + lane) * V;
  const int o = b.lo[1 - MARCH] + blockIdx.y * blockDim.y + threadIdx.y; /* y, or z */
  if (o >= b.lo[1 - MARCH] + b.n[1 - MARCH]) return; /* the whole warp */
  const int m0 = b.lo[MARCH] + blockIdx.z * chunk;
  const int m1 = min(m0 + chunk, b.lo[MARCH] + b.n[MARCH]);
  /* Lanes past the box return at once where no shuffle needs them (then
   * loads and stores carry no predicate, which the compiler's unrolled
   * march prefers); with shuffles they stay, loading where their vector
   * lies in the row, storing nothing. */
  constexpr bool shuffles = V > 1 && OP != OP_DZ && OP != OP_DY;
  if (!shuffles && x >= b.lo[2] + b.n[2]) return;
  const bool active = !shuffles || x < b.lo[2] + b.n[2];
  const bool loads = !shuffles || x + V <= f.nx + G; /* this thread's vector lies in the row */
  const long long sm = MARCH == 0 ? f.sz : f.sy; /* stride of the marched axis */
  const long long so = MARCH == 0 ? f.sy : f.sz; /* stride of the other axis */
  const long long base = MARCH == 0 ? f.at(m0, o, x) : f.at(o, m0, x);
  if constexpr (OP == OP_DX) { /* no queue: U planes at a time */
    int m = m0;
    for (; m + U <= m1; m += U)
      dx_planes<T, V, U>(f, u, out, base + (long long)(m - m0) * sm, sm, lane, x, loads, active,
                         wt.e[2]);
    for (; m < m1; m++)
      dx_planes<T, V, 1>(f, u, out, base + (long long)(m - m0) * sm, sm, lane, x, loads, active,
                         wt.e[2]);
    return;
  }
  /* No condition that changes from plane to plane guards the loads, so
   * that the compiler can unroll the march and issue several planes' loads
   * at once (a per-plane guard, as for an explicit prefetch, measured 0.67
   * of the copy bandwidth for the z derivative against 0.87 without). */
  vals<T, V> q[2 * G + 1];
  if (loads)
#pragma unroll
    for (int k = 0; k < 2 * G; k++) q[k + 1] = ld<T, V>(u + base + (k - G) * sm);
  for (int m = m0; m < m1; m++) {
    const long long p = base + (long long)(m - m0) * sm;
#pragma unroll
    for (int k = 0; k < 2 * G; k++) q[k] = q[k + 1];
    if (loads) q[2 * G] = ld<T, V>(u + p + G * sm);
    if (pf) /* the plane pf beyond the queue's into L2, clamped to the array */
      prefetch_l2(u + min(p + (G + pf) * sm, (long long)f.points() - 1));
    vals<T, V> res;
    if (OP == OP_DZ || OP == OP_DY) {
#pragma unroll
      for (int c = 0; c < V; c++) {
        T w[2 * G + 1];
#pragma unroll
        for (int k = 0; k < 2 * G + 1; k++) w[k] = q[k].c[c];
        res.c[c] = d1of(w, wt.e[OP == OP_DZ ? 0 : 1]);
      }
    } else {
      /* the x line around this thread's points: xl[G + c] is point x + c */
      T xl[V + 2 * G];
      if (V == 1) {
#pragma unroll
        for (int k = 0; k < 2 * G + 1; k++) xl[k] = loads ? __ldg(u + p + k - G) : T(0);
      } else {
        const vals<T, V> mine = q[G];
#pragma unroll
        for (int c = 0; c < V; c++) xl[G + c] = mine.c[c];
        constexpr int K = G / V; /* vectors on each side */
#pragma unroll
        for (int j = 1; j <= K; j++) {
          vals<T, V> left, right;
#pragma unroll
          for (int c = 0; c < V; c++) {
            left.c[c] = __shfl_up_sync(0xffffffffu, mine.c[c], j);
            right.c[c] = __shfl_down_sync(0xffffffffu, mine.c[c], j);
          }
          if (lane < j) left = ld<T, V>(u + p - j * V);
          if (lane >= TX - j && x + j * V + V <= f.nx + G) right = ld<T, V>(u + p + j * V);
#pragma unroll
          for (int c = 0; c < V; c++) {
            xl[G - j * V + c] = left.c[c];
            xl[G + (j - 1) * V + V + c] = right.c[c];
          }
        }
      }
      {
        vals<T, V> oth[2 * G + 1], prev = {}; /* along the other axis (y); the wave's u_prev */
        if (OP == OP_WAVE && active) prev = ld<T, V>(u_prev + p);
        if (active)
#pragma unroll
          for (int k = 0; k < 2 * G + 1; k++)
            if (k != G) oth[k] = ld<T, V>(u + p + (k - G) * so);
#pragma unroll
        for (int c = 0; c < V; c++) {
          T wz[2 * G + 1], wy[2 * G + 1];
#pragma unroll
          for (int k = 0; k < 2 * G + 1; k++) {
            wz[k] = q[k].c[c];
            wy[k] = k == G ? q[G].c[c] : oth[k].c[c];
          }
          /* the CPU's chain: f0 u, then the z, y and x terms */
          T lap = wt.f0 * q[G].c[c];
          lap = d2add(wz, wt.f[0], lap);
          lap = d2add(wy, wt.f[1], lap);
          lap = d2add(xl + c, wt.f[2], lap);
          if (OP == OP_LAP) res.c[c] = lap;
          else if (OP == OP_HEAT) res.c[c] = fmx(a, lap, q[G].c[c]);
          else res.c[c] = fmx(a, lap, (q[G].c[c] + q[G].c[c]) - prev.c[c]);
        }
      }
    }
    if (active) st<T, V>(out + p, res);
    if ((OP == OP_HEAT || OP == OP_WAVE) && wrap && active)
      wrap_copies(f, wrap, out + p, res, m, o, x);
  }
}

/* The vector width of T's kernels: 16 bytes (4 float, 2 double). */
template <typename T> constexpr int vwidth() { return 16 / (int)sizeof(T); }

/* Planes per block along the marched axis: enough blocks to fill the
 * device several times over (about 4096; on the H100 more, shorter blocks
 * beat one wave of long ones), at least 16 planes where the box allows. */
inline int chunk_of(const box &b, int march, int V, int ty) {
  const long long tiles =
      (long long)((b.n[2] + TX * V - 1) / (TX * V)) * ((b.n[1 - march] + ty - 1) / ty);
  int chunk = std::max(b.n[march], 1);
  while (chunk > 16 && tiles * ((b.n[march] + chunk - 1) / chunk) < 4096) chunk /= 2;
  return chunk;
}

/* The launch shape of an op: threads per block along the second axis
 * (4, 8 or 16), planes per block (0: chunk_of) and the distance in planes
 * beyond the register queue at which each thread asks L2 for its next
 * line (0: none). The defaults come from `meshbatch bench stencil` on the
 * H100 (docs/benchmarks.md): the derivatives 8 rows and no prefetch; the
 * Laplacian and the steps 16 rows (half the y halo per row of a block of
 * 8) and a prefetch 2 planes ahead (0.59-0.64 -> 0.71 of copy in float32).
 * MB_STENCIL_TUNE="TY,CHUNK[,PF]" in the environment sets one shape for
 * every op, for tuning runs of the benchmark (scripts/gpu-stencil-tune.sh);
 * the bits do not depend on the shape. Tried and measured slower: the
 * queue's next plane loaded a plane ahead into registers (0.57), registers
 * bounded for 3 blocks per SM (spills: 0.26-0.40). */
struct tuning {
  int ty, chunk, pf;
};
inline const tuning *tuning_env() {
  static const tuning t = [] {
    tuning x = {0, 0, 0};
    const char *e = getenv("MB_STENCIL_TUNE");
    int ty = 0, chunk = 0, pf = 0;
    const int got = e ? sscanf(e, "%d,%d,%d", &ty, &chunk, &pf) : 0;
    if (got >= 2 && (ty == 4 || ty == 8 || ty == 16) && chunk >= 0 && pf >= 0 && pf <= 64)
      x = tuning{ty, chunk, got == 3 ? pf : 0};
    return x;
  }();
  return t.ty ? &t : nullptr;
}
inline tuning tuning_of(int op) {
  if (const tuning *t = tuning_env()) return *t;
  return op >= OP_LAP ? tuning{16, 0, 2} : tuning{8, 0, 0};
}

template <typename T, int V, int OP, int MARCH>
inline mb_error launch_march(const frame &f, const box &b, const weights<T> &w, const T *u,
                             const T *prev, T *out, T a, cudaStream_t st, int wrap) {
  const tuning tn = tuning_of(OP);
  const int ty = tn.ty;
  const int chunk = tn.chunk > 0 ? std::min(tn.chunk, std::max(b.n[MARCH], 1))
                                 : chunk_of(b, MARCH, V, ty);
  dim3 block(TX, ty), grid((b.n[2] + TX * V - 1) / (TX * V), (b.n[1 - MARCH] + ty - 1) / ty,
                           (b.n[MARCH] + chunk - 1) / chunk);
  if constexpr (OP == OP_DX)
    march<T, V, OP, MARCH, DX_PLANES><<<grid, block, 0, st>>>(f, b, chunk, u, prev, out, w, a, 0,
                                                                0);
  else
    march<T, V, OP, MARCH><<<grid, block, 0, st>>>(f, b, chunk, u, prev, out, w, a, tn.pf, wrap);
  MB_CHECK_LAUNCH("stencil kernel");
  return MB_SUCCESS;
}

#include "mb_stencil_tma.cuh"

/* op at the nb boxes of bx with V points per thread along x: the TMA
 * kernel for the Laplacian and the steps where tma is set (and V > 1), all
 * boxes in one launch; else the marching kernel, a launch per box. (A TMA
 * x derivative measured 0.75 of copy in float32 against the marching
 * kernel's 0.81.) wrap: wrap_copies' axes (the steps only). */
template <typename T, int V>
inline mb_error launch_op(int op, const frame &f, const box *bx, int nb, const weights<T> &s,
                          const T *u, const T *prev, T *out, T a, cudaStream_t st, bool tma,
                          int wrap) {
  tma = tma && V > 1;
  if (tma && op >= OP_LAP) {
    if (op == OP_LAP) return launch_tma<T, V, OP_LAP>(f, bx, nb, s, u, prev, out, a, st, 0);
    if (op == OP_HEAT) return launch_tma<T, V, OP_HEAT>(f, bx, nb, s, u, prev, out, a, st, wrap);
    return launch_tma<T, V, OP_WAVE>(f, bx, nb, s, u, prev, out, a, st, wrap);
  }
  for (int k = 0; k < nb; k++) {
    const box &b = bx[k];
    switch (op) {
    case OP_DZ: MB_CALL((launch_march<T, V, OP_DZ, 0>(f, b, s, u, prev, out, a, st, 0))); break;
    case OP_DY: MB_CALL((launch_march<T, V, OP_DY, 1>(f, b, s, u, prev, out, a, st, 0))); break;
    case OP_DX: MB_CALL((launch_march<T, V, OP_DX, 0>(f, b, s, u, prev, out, a, st, 0))); break;
    case OP_LAP: MB_CALL((launch_march<T, V, OP_LAP, 0>(f, b, s, u, prev, out, a, st, 0))); break;
    case OP_HEAT:
      MB_CALL((launch_march<T, V, OP_HEAT, 0>(f, b, s, u, prev, out, a, st, wrap)));
      break;
    default: MB_CALL((launch_march<T, V, OP_WAVE, 0>(f, b, s, u, prev, out, a, st, wrap)));
    }
  }
  return MB_SUCCESS;
}

/* The points per thread along x of each op, after `meshbatch bench
 * stencil` on the H100 (docs/benchmarks.md): 16-byte vectors, except
 * scalar float32 derivatives along z and y (they need no x neighbours, and
 * more threads keep more loads in flight). */
template <typename T> inline int default_v(int op) {
  if (sizeof(T) == 4) return op == OP_DZ || op == OP_DY ? 1 : 4;
  return 2;
}

/* op (OP_*) at the points of the nb boxes of bx (up to MAX_BOXES; empty
 * ones skipped) of u into out, on stream st. a: the heat/wave coefficient
 * (alpha dt, (c dt)^2); prev: the wave's previous step. wrap: the axes
 * whose ghost planes the steps' stores fill (wrap_copies; 0 none). v: the
 * points per thread along x (0: default_v; the benchmark compares the
 * others); boxes whose rows are not whole vectors take v = 1. tma: the TMA
 * kernel where the device has it (tma_available), the boxes then in one
 * launch; the benchmark also times the marching kernel (false). */
template <typename T>
inline mb_error apply_boxes(int op, const frame &f, const box *bx, int nb, const double h[3],
                            const T *u, const T *prev, T *out, T a, cudaStream_t st, int wrap,
                            int v = 0, bool tma = true) {
  MB_CHECK(nb >= 0 && nb <= MAX_BOXES, MB_ERR_ARG, "stencil (cuda): %d boxes in one call", nb);
  box keep[MAX_BOXES];
  int n = 0;
  if (v <= 0 || v > vwidth<T>()) v = default_v<T>(op);
  for (int k = 0; k < nb; k++)
    if (!bx[k].empty()) {
      keep[n++] = bx[k];
      if (bx[k].lo[2] % v || bx[k].n[2] % v) v = 1;
    }
  if (!n) return MB_SUCCESS;
  const weights<T> s = weights_of<T>(h);
  if (f.nx % v) v = 1;
  tma = tma && tma_available();
  if (v == 4)
    return launch_op<T, 16 / sizeof(T) == 4 ? 4 : 1>(op, f, keep, n, s, u, prev, out, a, st, tma,
                                                     wrap);
  if (v == 2) return launch_op<T, 2>(op, f, keep, n, s, u, prev, out, a, st, tma, wrap);
  return launch_op<T, 1>(op, f, keep, n, s, u, prev, out, a, st, tma, wrap);
}

/* op at the points of box b (apply_boxes with one box, no wrap). */
template <typename T>
inline mb_error apply_box(int op, const frame &f, const box &b, const double h[3], const T *u,
                          const T *prev, T *out, T a, cudaStream_t st, int v = 0,
                          bool tma = true) {
  return apply_boxes<T>(op, f, &b, 1, h, u, prev, out, a, st, 0, v, tma);
}

/* ------------------------------------------------------------ host copies */

/* plain host array of the block's points <-> the framed device array */
template <typename T>
inline mb_error frame_copy(const frame &f, T *dev, void *host, bool to_device, cudaStream_t st) {
  cudaMemcpy3DParms p = {};
  cudaPitchedPtr h = make_cudaPitchedPtr(host, sizeof(T) * f.nx, f.nx, f.ny);
  cudaPitchedPtr d =
      make_cudaPitchedPtr(dev, sizeof(T) * (size_t)f.sy, (size_t)f.sy, (size_t)(f.sz / f.sy));
  cudaPos pos = make_cudaPos(sizeof(T) * f.xo, G, G);
  if (to_device) {
    p.srcPtr = h;
    p.dstPtr = d;
    p.dstPos = pos;
  } else {
    p.srcPtr = d;
    p.srcPos = pos;
    p.dstPtr = h;
  }
  p.extent = make_cudaExtent(sizeof(T) * f.nx, f.ny, f.nz);
  p.kind = to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  MB_CALL_CUDA(cudaMemcpy3DAsync(&p, st));
  MB_CALL_CUDA(cudaStreamSynchronize(st));
  return MB_SUCCESS;
}

} // namespace mbst

#endif
