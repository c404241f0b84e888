/* meshbatch: the stencil room's CUDA backend (see
 * cuda/stencil/mb_stencil_cuda.h). Arrays on the device are framed (4 ghost
 * planes per face, mb_stencil.h); the faces are filled by a kernel before
 * each call, then the 2.5D kernel computes the block's points with the
 * arithmetic of mb_stencil.h (no FMA: --fmad=false). */
#include <cuda_runtime.h>

#include <algorithm>
#include <stdio.h>
#include <string.h>
#include <vector>

#include "mb_cuda.h"
#include "mb_cuda_private.cuh"
#include "mb_cart.h"
#include "stencil/mb_stencil_cuda.h"

namespace {

constexpr int TX = 32, TY = 8, G = 4;
enum { OP_DZ = 0, OP_DY = 1, OP_DX = 2, OP_LAP = 3, OP_HEAT = 4, OP_WAVE = 5 };

/* The device frame: rows start G planes early in y and z as on the CPU,
 * but each row is padded so that point x = 0 sits on a 128-byte boundary
 * (xo values into the row, xo >= G) and rows are whole multiples of 128
 * bytes: a warp's 32 consecutive points are then whole cache lines. */
struct frame {
  int nz, ny, nx, xo;
  long long sy, sz; /* strides of y and z in the framed array */
  __host__ __device__ long long at(int z, int y, int x) const {
    return (long long)(z + G) * sz + (long long)(y + G) * sy + (x + xo);
  }
};

template <typename T> static frame frame_of(const mb_stencil_grid *g) {
  frame f;
  const int line = 128 / (int)sizeof(T); /* values per 128 bytes */
  f.nz = (int)g->n[0];
  f.ny = (int)g->n[1];
  f.nx = (int)g->n[2];
  f.xo = line;
  f.sy = ((long long)f.xo + f.nx + G + line - 1) / line * line;
  f.sz = f.sy * (f.ny + 2 * G);
  return f;
}

/* The face ghosts of one axis: 4 planes on each side, periodic wrap or the
 * Dirichlet value. */
template <typename T>
__global__ void fill_faces(frame f, int axis, int periodic, T outside, T *u) {
  const int n[3] = {f.nz, f.ny, f.nx};
  const int b = (axis + 1) % 3, c = (axis + 2) % 3;
  const long long q = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const long long per = (long long)n[b] * n[c];
  if (q >= 2 * G * per) return;
  const int dside = (int)(q / per), side = dside / G, d = dside % G;
  const long long rest = q % per;
  int idx[3], src[3];
  idx[axis] = side == 0 ? -1 - d : n[axis] + d;
  idx[b] = (int)(rest / n[c]);
  idx[c] = (int)(rest % n[c]);
  for (int e = 0; e < 3; e++) src[e] = idx[e];
  src[axis] = ((idx[axis] % n[axis]) + n[axis]) % n[axis];
  u[f.at(idx[0], idx[1], idx[2])] = periodic ? u[f.at(src[0], src[1], src[2])] : outside;
}

/* The 2.5D kernel: OP selects what is computed at each point. Each thread
 * marches along z through a chunk of planes with its column's 9 values
 * around the current plane in registers (the z terms: every value read
 * once); the x and y neighbours of the current plane are read through the
 * L1 cache, which the block's 32 x TY threads share (no shared memory, no
 * barrier). */
template <typename T, int OP>
__global__ void __launch_bounds__(TX *TY)
    stencil25(frame f, int zchunk, const T *__restrict__ u, const T *__restrict__ u_prev,
              T *__restrict__ out, T r0, T r1, T r2, T a) {
  const int x = blockIdx.x * TX + threadIdx.x, y = blockIdx.y * TY + threadIdx.y;
  const int z0 = blockIdx.z * zchunk, z1 = min(z0 + zchunk, f.nz);
  if (x >= f.nx || y >= f.ny) return;
  const bool need_queue = OP == OP_DZ || OP == OP_LAP || OP == OP_HEAT || OP == OP_WAVE;
  const long long sy = f.sy;
  T q[2 * G + 1];
#pragma unroll
  for (int k = 0; k < 2 * G + 1; k++) q[k] = T(0);
  if (need_queue)
#pragma unroll
    for (int k = 0; k < 2 * G; k++) q[k + 1] = __ldg(u + f.at(z0 - G + k, y, x));
  const T c1 = T(4.0 / 5.0), c2 = T(-1.0 / 5.0), c3 = T(4.0 / 105.0), c4 = T(-1.0 / 280.0);
  const T d0 = T(-205.0 / 72.0), d1 = T(8.0 / 5.0), d2 = T(-1.0 / 5.0), d3 = T(8.0 / 315.0),
          d4 = T(-1.0 / 560.0);
  for (int z = z0; z < z1; z++) {
    if (need_queue) {
#pragma unroll
      for (int k = 0; k < 2 * G; k++) q[k] = q[k + 1];
      q[2 * G] = __ldg(u + f.at(z + G, y, x));
    }
    const long long p = f.at(z, y, x);
    const T *v = u + p;
    if (OP == OP_DZ) {
      T s = c1 * (q[G + 1] - q[G - 1]);
      s = s + c2 * (q[G + 2] - q[G - 2]);
      s = s + c3 * (q[G + 3] - q[G - 3]);
      s = s + c4 * (q[G + 4] - q[G - 4]);
      out[p] = s * r0;
    } else if (OP == OP_DY) {
      T s = c1 * (__ldg(v + sy) - __ldg(v - sy));
      s = s + c2 * (__ldg(v + 2 * sy) - __ldg(v - 2 * sy));
      s = s + c3 * (__ldg(v + 3 * sy) - __ldg(v - 3 * sy));
      s = s + c4 * (__ldg(v + 4 * sy) - __ldg(v - 4 * sy));
      out[p] = s * r1;
    } else if (OP == OP_DX) {
      T s = c1 * (__ldg(v + 1) - __ldg(v - 1));
      s = s + c2 * (__ldg(v + 2) - __ldg(v - 2));
      s = s + c3 * (__ldg(v + 3) - __ldg(v - 3));
      s = s + c4 * (__ldg(v + 4) - __ldg(v - 4));
      out[p] = s * r2;
    } else {
      const T c = d0 * q[G];
      T zz = c + d1 * (q[G + 1] + q[G - 1]);
      zz = zz + d2 * (q[G + 2] + q[G - 2]);
      zz = zz + d3 * (q[G + 3] + q[G - 3]);
      zz = zz + d4 * (q[G + 4] + q[G - 4]);
      T yy = c + d1 * (__ldg(v + sy) + __ldg(v - sy));
      yy = yy + d2 * (__ldg(v + 2 * sy) + __ldg(v - 2 * sy));
      yy = yy + d3 * (__ldg(v + 3 * sy) + __ldg(v - 3 * sy));
      yy = yy + d4 * (__ldg(v + 4 * sy) + __ldg(v - 4 * sy));
      T xx = c + d1 * (__ldg(v + 1) + __ldg(v - 1));
      xx = xx + d2 * (__ldg(v + 2) + __ldg(v - 2));
      xx = xx + d3 * (__ldg(v + 3) + __ldg(v - 3));
      xx = xx + d4 * (__ldg(v + 4) + __ldg(v - 4));
      const T lap = (zz * r0 + yy * r1) + xx * r2;
      if (OP == OP_LAP) out[p] = lap;
      else if (OP == OP_HEAT) out[p] = q[G] + a * lap;
      else out[p] = ((q[G] + q[G]) - u_prev[p]) + a * lap;
    }
  }
}

/* The pencil kernels of the NVIDIA blog, for comparison: x, 4 rows of the
 * whole x extent per block; y and z, 32 columns of x and the whole extent
 * along the axis per block, the threads striding along it. */
template <typename T>
__global__ void pencil_dx(frame f, const T *__restrict__ u, T *__restrict__ out, T r) {
  extern __shared__ unsigned char smem_raw[];
  T *s = reinterpret_cast<T *>(smem_raw);
  const int L = f.nx + 2 * G, row = blockIdx.x * blockDim.y + threadIdx.y;
  if (row >= f.ny * f.nz) return;
  const int y = row % f.ny, z = row / f.ny;
  T *sr = s + threadIdx.y * L;
  for (int i = threadIdx.x; i < L; i += blockDim.x) sr[i] = u[f.at(z, y, i - G)];
  __syncthreads();
  const T c1 = T(4.0 / 5.0), c2 = T(-1.0 / 5.0), c3 = T(4.0 / 105.0), c4 = T(-1.0 / 280.0);
  for (int i = threadIdx.x; i < f.nx; i += blockDim.x) {
    const int X = i + G;
    T v = c1 * (sr[X + 1] - sr[X - 1]);
    v = v + c2 * (sr[X + 2] - sr[X - 2]);
    v = v + c3 * (sr[X + 3] - sr[X - 3]);
    v = v + c4 * (sr[X + 4] - sr[X - 4]);
    out[f.at(z, y, i)] = v * r;
  }
}

template <typename T, int AXIS /* 0 z, 1 y */>
__global__ void pencil_dyz(frame f, const T *__restrict__ u, T *__restrict__ out, T r) {
  extern __shared__ unsigned char smem_raw[];
  T *s = reinterpret_cast<T *>(smem_raw); /* [n + 8][32] */
  const int n = AXIS == 0 ? f.nz : f.ny, other = AXIS == 0 ? f.ny : f.nz;
  const int x = blockIdx.x * 32 + threadIdx.x, o = blockIdx.y;
  if (o >= other) return;
  const bool in = x < f.nx;
  for (int k = threadIdx.y; k < n + 2 * G; k += blockDim.y)
    if (in)
      s[k * 32 + threadIdx.x] =
          AXIS == 0 ? u[f.at(k - G, o, x)] : u[f.at(o, k - G, x)];
  __syncthreads();
  if (!in) return;
  const T c1 = T(4.0 / 5.0), c2 = T(-1.0 / 5.0), c3 = T(4.0 / 105.0), c4 = T(-1.0 / 280.0);
  for (int k = threadIdx.y; k < n; k += blockDim.y) {
    const int K = k + G;
    T v = c1 * (s[(K + 1) * 32 + threadIdx.x] - s[(K - 1) * 32 + threadIdx.x]);
    v = v + c2 * (s[(K + 2) * 32 + threadIdx.x] - s[(K - 2) * 32 + threadIdx.x]);
    v = v + c3 * (s[(K + 3) * 32 + threadIdx.x] - s[(K - 3) * 32 + threadIdx.x]);
    v = v + c4 * (s[(K + 4) * 32 + threadIdx.x] - s[(K - 4) * 32 + threadIdx.x]);
    out[AXIS == 0 ? f.at(k, o, x) : f.at(o, k, x)] = v * r;
  }
}

/* ------------------------------------------------------------ host side */

template <typename T> struct dev_grid {
  frame f;
  mb_dbuf a, b, c; /* framed arrays */
  size_t bytes;
};

template <typename T>
static mb_error grid_alloc(const mb_stencil_grid *g, int nbuf, dev_grid<T> *d) {
  MB_CHECK(g->ghost == 0, MB_ERR_ARG, "stencil (cuda): host arrays must be plain (ghost 0)");
  for (int a = 0; a < 3; a++)
    MB_CHECK(g->n[a] >= 1 && g->n[a] < (1 << 24), MB_ERR_ARG,
             "stencil (cuda): grid of %lld x %lld x %lld points out of range",
             (long long)g->n[0], (long long)g->n[1], (long long)g->n[2]);
  d->f = frame_of<T>(g);
  d->bytes = sizeof(T) * (size_t)(d->f.sz * (d->f.nz + 2 * G));
  MB_CALL(mb_dbuf_alloc(&d->a, d->bytes, "framed grid"));
  if (nbuf > 1) MB_CALL(mb_dbuf_alloc(&d->b, d->bytes, "framed grid"));
  if (nbuf > 2) MB_CALL(mb_dbuf_alloc(&d->c, d->bytes, "framed grid"));
  MB_CALL_CUDA(cudaMemset(d->a.p, 0, d->bytes));
  if (nbuf > 1) MB_CALL_CUDA(cudaMemset(d->b.p, 0, d->bytes));
  if (nbuf > 2) MB_CALL_CUDA(cudaMemset(d->c.p, 0, d->bytes));
  return MB_SUCCESS;
}

/* plain host array <-> the block's points of a framed device array */
template <typename T>
static mb_error upload(const frame &f, const void *host, T *dev) {
  cudaMemcpy3DParms p = {};
  p.srcPtr = make_cudaPitchedPtr(const_cast<void *>(host), sizeof(T) * f.nx, f.nx, f.ny);
  p.dstPtr = make_cudaPitchedPtr(dev, sizeof(T) * (size_t)f.sy, (size_t)f.sy,
                                 (size_t)(f.sz / f.sy));
  p.dstPos = make_cudaPos(sizeof(T) * f.xo, G, G);
  p.extent = make_cudaExtent(sizeof(T) * f.nx, f.ny, f.nz);
  p.kind = cudaMemcpyHostToDevice;
  MB_CALL_CUDA(cudaMemcpy3D(&p));
  return MB_SUCCESS;
}

template <typename T>
static mb_error download(const frame &f, const T *dev, void *host) {
  cudaMemcpy3DParms p = {};
  p.srcPtr = make_cudaPitchedPtr(const_cast<T *>(dev), sizeof(T) * (size_t)f.sy, (size_t)f.sy,
                                 (size_t)(f.sz / f.sy));
  p.srcPos = make_cudaPos(sizeof(T) * f.xo, G, G);
  p.dstPtr = make_cudaPitchedPtr(host, sizeof(T) * f.nx, f.nx, f.ny);
  p.extent = make_cudaExtent(sizeof(T) * f.nx, f.ny, f.nz);
  p.kind = cudaMemcpyDeviceToHost;
  MB_CALL_CUDA(cudaMemcpy3D(&p));
  return MB_SUCCESS;
}

template <typename T>
static mb_error fill(const mb_stencil_grid *g, const frame &f, T *u) {
  const int n[3] = {f.nz, f.ny, f.nx};
  for (int axis = 0; axis < 3; axis++) {
    const long long count = 2LL * G * n[(axis + 1) % 3] * n[(axis + 2) % 3];
    fill_faces<T><<<(unsigned)((count + 255) / 256), 256>>>(
        f, axis, g->bc == MB_STENCIL_PERIODIC, (T)g->outside, u);
    MB_CHECK_LAUNCH("stencil ghost faces");
  }
  return MB_SUCCESS;
}

static int zchunk_of(const frame &f) {
  const long long tiles = (long long)((f.nx + TX - 1) / TX) * ((f.ny + TY - 1) / TY);
  int chunk = f.nz; /* enough blocks to fill the device: about 4096 */
  while (chunk > 16 && tiles * ((f.nz + chunk - 1) / chunk) < 4096) chunk /= 2;
  return chunk;
}

template <typename T, int OP>
static mb_error launch25(const mb_stencil_grid *g, const frame &f, const T *u, const T *prev,
                         T *out, T a) {
  const int zc = zchunk_of(f);
  dim3 block(TX, TY), grid((f.nx + TX - 1) / TX, (f.ny + TY - 1) / TY, (f.nz + zc - 1) / zc);
  const bool second = OP >= OP_LAP;
  const T r0 = second ? (T)(1.0 / (g->h[0] * g->h[0])) : (T)(1.0 / g->h[0]);
  const T r1 = second ? (T)(1.0 / (g->h[1] * g->h[1])) : (T)(1.0 / g->h[1]);
  const T r2 = second ? (T)(1.0 / (g->h[2] * g->h[2])) : (T)(1.0 / g->h[2]);
  stencil25<T, OP><<<grid, block>>>(f, zc, u, prev, out, r0, r1, r2, a);
  MB_CHECK_LAUNCH("stencil kernel");
  return MB_SUCCESS;
}

template <typename T>
static mb_error apply_t(const mb_stencil_grid *g, int op, const void *u, void *out) {
  dev_grid<T> d;
  MB_CALL(grid_alloc<T>(g, 2, &d));
  MB_CALL(upload<T>(d.f, u, d.a.template as<T>()));
  MB_CALL(fill<T>(g, d.f, d.a.template as<T>()));
  const T *in = d.a.template as<T>();
  T *res = d.b.template as<T>();
  switch (op) {
  case 0: MB_CALL((launch25<T, OP_DZ>(g, d.f, in, nullptr, res, T(0)))); break;
  case 1: MB_CALL((launch25<T, OP_DY>(g, d.f, in, nullptr, res, T(0)))); break;
  case 2: MB_CALL((launch25<T, OP_DX>(g, d.f, in, nullptr, res, T(0)))); break;
  default: MB_CALL((launch25<T, OP_LAP>(g, d.f, in, nullptr, res, T(0)))); break;
  }
  MB_CALL(download<T>(d.f, res, out));
  return MB_SUCCESS;
}

template <typename T>
static mb_error heat_t(const mb_stencil_grid *g, double alpha, double dt, int64_t nsteps,
                       void *u) {
  dev_grid<T> d;
  MB_CALL(grid_alloc<T>(g, 2, &d));
  MB_CALL(upload<T>(d.f, u, d.a.template as<T>()));
  T *cur = d.a.template as<T>(), *next = d.b.template as<T>();
  const T a = (T)(alpha * dt);
  for (int64_t s = 0; s < nsteps; s++) {
    MB_CALL(fill<T>(g, d.f, cur));
    MB_CALL((launch25<T, OP_HEAT>(g, d.f, cur, nullptr, next, a)));
    std::swap(cur, next);
  }
  MB_CALL(download<T>(d.f, cur, u));
  return MB_SUCCESS;
}

template <typename T>
static mb_error wave_t(const mb_stencil_grid *g, double c, double dt, int64_t nsteps,
                       void *u_prev, void *u) {
  dev_grid<T> d;
  MB_CALL(grid_alloc<T>(g, 3, &d));
  MB_CALL(upload<T>(d.f, u_prev, d.a.template as<T>()));
  MB_CALL(upload<T>(d.f, u, d.b.template as<T>()));
  T *prev = d.a.template as<T>(), *cur = d.b.template as<T>(), *next = d.c.template as<T>();
  const T b = (T)(c * c * dt * dt);
  for (int64_t s = 0; s < nsteps; s++) {
    MB_CALL(fill<T>(g, d.f, cur));
    MB_CALL((launch25<T, OP_WAVE>(g, d.f, cur, prev, next, b)));
    T *t = prev;
    prev = cur;
    cur = next;
    next = t;
  }
  MB_CALL(download<T>(d.f, prev, u_prev));
  MB_CALL(download<T>(d.f, cur, u));
  return MB_SUCCESS;
}

/* ------------------------------------------------ a block of a split grid */

/* Copy a region of points [lo, lo + n) (frame coordinates, -4 .. n + 4)
 * between the device frame and a host frame of the CPU layout. */
template <typename T>
static mb_error region_copy(const frame &f, T *dev, T *host, const int lo[3], const int n[3],
                            int to_host) {
  const size_t hp = sizeof(T) * (size_t)(f.nx + 2 * G);
  cudaPitchedPtr dp = make_cudaPitchedPtr(dev, sizeof(T) * (size_t)f.sy, (size_t)f.sy,
                                          (size_t)(f.sz / f.sy));
  cudaPitchedPtr hq = make_cudaPitchedPtr(host, hp, (size_t)(f.nx + 2 * G), (size_t)(f.ny + 2 * G));
  cudaPos dpos = make_cudaPos(sizeof(T) * (size_t)(lo[2] + f.xo), (size_t)(lo[1] + G),
                              (size_t)(lo[0] + G));
  cudaPos hpos = make_cudaPos(sizeof(T) * (size_t)(lo[2] + G), (size_t)(lo[1] + G),
                              (size_t)(lo[0] + G));
  cudaMemcpy3DParms p = {};
  p.srcPtr = to_host ? dp : hq;
  p.srcPos = to_host ? dpos : hpos;
  p.dstPtr = to_host ? hq : dp;
  p.dstPos = to_host ? hpos : dpos;
  p.extent = make_cudaExtent(sizeof(T) * (size_t)n[2], (size_t)n[1], (size_t)n[0]);
  p.kind = to_host ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice;
  MB_CALL_CUDA(cudaMemcpy3D(&p));
  return MB_SUCCESS;
}

/* Fill the ghost faces of the device frame u: the outer 4 owned planes of
 * each face to the host frame h, the plan's exchange there (then the
 * Dirichlet value beyond the grid), the ghost planes back. */
template <typename T>
static mb_error block_halo(const mb_stencil_grid *g, const frame &f, mb_cart *cart, T *u, T *h) {
  const int n[3] = {f.nz, f.ny, f.nx};
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) {
      const mb_cart_dtype dt = sizeof(T) == 4 ? MB_CART_FLOAT32 : MB_CART_FLOAT64;
      MB_CALL(mb_cart_exchange_begin(cart, dt, h));
      MB_CALL(mb_cart_exchange_end(cart));
      if (g->bc == MB_STENCIL_DIRICHLET) mb_cart_fill_outside(cart, dt, h, g->outside);
    }
    for (int a = 0; a < 3; a++)
      for (int s = 0; s < 2; s++) {
        int lo[3] = {0, 0, 0}, cnt[3] = {n[0], n[1], n[2]};
        cnt[a] = G;
        lo[a] = pass == 0 ? (s == 0 ? 0 : n[a] - G) : (s == 0 ? -G : n[a]);
        MB_CALL(region_copy<T>(f, u, h, lo, cnt, pass == 0));
      }
  }
  return MB_SUCCESS;
}

template <typename T>
static mb_error block_t(const mb_stencil_grid *g, mb_cart *cart, int op, double coef,
                        int64_t nsteps, void *u, void *out) {
  dev_grid<T> d;
  MB_CALL(grid_alloc<T>(g, 3, &d));
  const frame &f = d.f;
  std::vector<T> h((size_t)(f.nx + 2 * G) * (size_t)(f.ny + 2 * G) * (size_t)(f.nz + 2 * G));
  MB_CALL(upload<T>(f, u, d.a.template as<T>()));
  T *cur = d.a.template as<T>(), *nxt = d.b.template as<T>(), *prev = d.c.template as<T>();
  if (op <= 3) {
    MB_CALL(block_halo<T>(g, f, cart, cur, h.data()));
    switch (op) {
    case 0: MB_CALL((launch25<T, OP_DZ>(g, f, cur, nullptr, nxt, T(0)))); break;
    case 1: MB_CALL((launch25<T, OP_DY>(g, f, cur, nullptr, nxt, T(0)))); break;
    case 2: MB_CALL((launch25<T, OP_DX>(g, f, cur, nullptr, nxt, T(0)))); break;
    default: MB_CALL((launch25<T, OP_LAP>(g, f, cur, nullptr, nxt, T(0)))); break;
    }
    MB_CALL(download<T>(f, nxt, out));
    return MB_SUCCESS;
  }
  if (op == 4) {
    for (int64_t s = 0; s < nsteps; s++) {
      MB_CALL(block_halo<T>(g, f, cart, cur, h.data()));
      MB_CALL((launch25<T, OP_HEAT>(g, f, cur, nullptr, nxt, (T)coef)));
      std::swap(cur, nxt);
    }
    MB_CALL(download<T>(f, cur, u));
    return MB_SUCCESS;
  }
  /* wave from rest: prev = u + (c dt)^2 / 2 lap(u), as a heat step with half the coefficient */
  MB_CALL(block_halo<T>(g, f, cart, cur, h.data()));
  MB_CALL((launch25<T, OP_HEAT>(g, f, cur, nullptr, prev, (T)(0.5 * coef))));
  for (int64_t s = 0; s < nsteps; s++) {
    MB_CALL(block_halo<T>(g, f, cart, cur, h.data()));
    MB_CALL((launch25<T, OP_WAVE>(g, f, cur, prev, nxt, (T)coef)));
    T *t = prev;
    prev = cur;
    cur = nxt;
    nxt = t;
  }
  MB_CALL(download<T>(f, cur, u));
  return MB_SUCCESS;
}

/* ------------------------------------------------------------ benchmark */

template <typename T>
static mb_error bench_t(const int64_t n[3], int warmup, int repeats, mb_stencil_bench_result *r) {
  mb_stencil_grid g = {};
  for (int a = 0; a < 3; a++) {
    g.n[a] = n[a];
    g.h[a] = 1.0 / (double)n[a];
  }
  dev_grid<T> d;
  MB_CALL(grid_alloc<T>(&g, 3, &d));
  std::vector<T> host((size_t)(n[0] * n[1] * n[2]));
  for (size_t i = 0; i < host.size(); i++) host[i] = (T)((double)((i * 2654435761u) % 1000) / 1000.0);
  MB_CALL(upload<T>(d.f, host.data(), d.a.template as<T>()));
  MB_CALL(upload<T>(d.f, host.data(), d.c.template as<T>()));
  MB_CALL(fill<T>(&g, d.f, d.a.template as<T>()));
  const T *in = d.a.template as<T>();
  T *out = d.b.template as<T>();
  const frame &f = d.f;
  const size_t sm_x = sizeof(T) * 4 * (size_t)(f.nx + 2 * G);
  const size_t sm_yz = sizeof(T) * 32 * (size_t)(std::max(f.ny, f.nz) + 2 * G);
  MB_CALL_CUDA(cudaFuncSetAttribute(pencil_dyz<T, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)sm_yz));
  MB_CALL_CUDA(cudaFuncSetAttribute(pencil_dyz<T, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)sm_yz));
  cudaEvent_t e0, e1;
  MB_CALL_CUDA(cudaEventCreate(&e0));
  MB_CALL_CUDA(cudaEventCreate(&e1));
  mb_error err = MB_SUCCESS;
  for (int k = 0; k < 8 && !err; k++) {
    std::vector<float> times;
    for (int rep = 0; rep < warmup + repeats && !err; rep++) {
      cudaEventRecord(e0);
      switch (k) {
      case 0: err = launch25<T, OP_DZ>(&g, f, in, nullptr, out, T(0)); break;
      case 1: err = launch25<T, OP_DY>(&g, f, in, nullptr, out, T(0)); break;
      case 2: err = launch25<T, OP_DX>(&g, f, in, nullptr, out, T(0)); break;
      case 3: err = launch25<T, OP_LAP>(&g, f, in, nullptr, out, T(0)); break;
      case 4: err = launch25<T, OP_HEAT>(&g, f, in, nullptr, out, T(1e-6)); break;
      case 5:
        pencil_dyz<T, 0><<<dim3((f.nx + 31) / 32, f.ny), dim3(32, 8), sm_yz>>>(f, in, out, T(n[0]));
        break;
      case 6:
        pencil_dyz<T, 1><<<dim3((f.nx + 31) / 32, f.nz), dim3(32, 8), sm_yz>>>(f, in, out, T(n[1]));
        break;
      default:
        pencil_dx<T><<<(unsigned)((f.ny * f.nz + 3) / 4), dim3(64, 4), sm_x>>>(f, in, out, T(n[2]));
        break;
      }
      if (!err && cudaGetLastError() != cudaSuccess)
        err = mb_error_set(MB_ERR_CUDA, __FILE__, __LINE__, __func__, "benchmark kernel %d failed", k);
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      if (rep >= warmup) times.push_back(ms);
    }
    if (!err) {
      std::sort(times.begin(), times.end());
      r->ms[k] = times[times.size() / 2];
    }
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  MB_CALL(err);
  r->bytes = 2.0 * sizeof(T) * (double)(n[0] * n[1] * n[2]);
  MB_CALL(mb_cuda_copy_bandwidth(d.bytes, &r->copy_gbs));
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) snprintf(r->device, sizeof r->device, "%s", prop.name);
  return MB_SUCCESS;
}

} // namespace

extern "C" mb_error mb_stencil_cuda_apply(const mb_stencil_grid *g, int op, int f32,
                                          const void *u, void *out) {
  MB_CHECK(op >= 0 && op <= 3, MB_ERR_ARG, "stencil (cuda): op %d", op);
  return f32 ? apply_t<float>(g, op, u, out) : apply_t<double>(g, op, u, out);
}

extern "C" mb_error mb_stencil_cuda_heat(const mb_stencil_grid *g, int f32, double alpha,
                                         double dt, int64_t nsteps, void *u) {
  MB_CALL(mb_stencil_check_heat(g, alpha, dt, nsteps));
  return f32 ? heat_t<float>(g, alpha, dt, nsteps, u) : heat_t<double>(g, alpha, dt, nsteps, u);
}

extern "C" mb_error mb_stencil_cuda_wave(const mb_stencil_grid *g, int f32, double c, double dt,
                                         int64_t nsteps, void *u_prev, void *u) {
  MB_CALL(mb_stencil_check_wave(g, c, dt, nsteps));
  return f32 ? wave_t<float>(g, c, dt, nsteps, u_prev, u)
             : wave_t<double>(g, c, dt, nsteps, u_prev, u);
}

extern "C" mb_error mb_stencil_cuda_block(const mb_stencil_grid *blk, int f32, mb_cart *cart,
                                          int op, double coef, int64_t nsteps, void *u,
                                          void *out) {
  MB_CHECK(blk && cart && op >= 0 && op <= 5 && nsteps >= 0, MB_ERR_ARG,
           "mb_stencil_cuda_block: bad arguments");
  mb_error e = f32 ? block_t<float>(blk, cart, op, coef, nsteps, u, out)
                   : block_t<double>(blk, cart, op, coef, nsteps, u, out);
  if (e) (void)cudaGetLastError();
  return e;
}

extern "C" mb_error mb_stencil_cuda_bench(const int64_t n[3], int f32, int warmup, int repeats,
                                          mb_stencil_bench_result *r) {
  MB_CHECK(r && warmup >= 0 && repeats >= 1, MB_ERR_ARG, "mb_stencil_cuda_bench: bad arguments");
  memset(r, 0, sizeof *r);
  return f32 ? bench_t<float>(n, warmup, repeats, r) : bench_t<double>(n, warmup, repeats, r);
}
