/* meshbatch: reproducible reductions of device arrays (partition layer;
 * method and API: partition/mb_reduce.h).
 *
 * One kernel reads the terms (grid-stride, four pairs of loads in flight per
 * thread), splits each with the CPU's own code (partition/mb_reduce_impl.h)
 * into the thread's register window, and adds a window to the block's bins
 * in shared memory (int64 atomics) only when a term leaves it; at the end
 * each block adds its nonzero bins to the global bins with int64 atomics.
 * Integer atomics are exact, so their order does not matter. A launch takes
 * at most 2^28 terms; between launches one thread propagates the carries.
 * The 71 bins come back through a pinned host buffer and are added to the
 * caller's accumulator: the rest (MPI, rounding) is the CPU's code. The
 * device-resident sums (mb_reduce_device_columns) run the same kernel over
 * several columns at once (one grid row a column) and leave the bins on the
 * device, where the solver's kernels round them with the CPU's rounding.
 */
#include <cuda_runtime.h>
#include <math.h>

#include <new>

#include "mb_cuda_private.cuh"
#include "mb_reduce.h"
#include "mb_reduce_impl.h"

#define MB_REDUCE_THREADS 256

struct mb_reduce_device {
  mb_dbuf bins;          /* MB_REDUCE_NSLOTS int64, then one double (naive sum) */
  int64_t *host = nullptr; /* pinned, MB_REDUCE_NSLOTS int64 + one double */
  int blocks = 0;        /* blocks of a launch: one full wave on the device */
  int device = 0;
};

typedef unsigned long long ull;

/* Add a window's 4 bins to shared bins (two's complement: signed adds). */
__device__ __forceinline__ void flush4(ull *sb, int base, int64_t a, int64_t b, int64_t c,
                                       int64_t d) {
  if (a) atomicAdd(sb + base, (ull)a);
  if (b) atomicAdd(sb + base + 1, (ull)b);
  if (c) atomicAdd(sb + base + 2, (ull)c);
  if (d) atomicAdd(sb + base + 3, (ull)d);
}

__device__ __forceinline__ void add_term(ull *sb, mb_reduce_win *w, double t) {
  int64_t out[4];
  int ob = 0;
  if (mb_reduce_win_add(w, t, out, &ob)) flush4(sb, ob, out[0], out[1], out[2], out[3]);
}

/* mode 0: x[i]*y[i]; 1: x[i]. Grid row blockIdx.y sums column blockIdx.y:
 * the terms at x + blockIdx.y ld (and y + blockIdx.y ld) into the bins
 * gbins + blockIdx.y MB_REDUCE_NSLOTS (one row: ld unused). */
__global__ void __launch_bounds__(MB_REDUCE_THREADS)
    reduce_kernel(int64_t n, const double *__restrict__ x, const double *__restrict__ y,
                  int mode, int64_t ld, ull *__restrict__ gbins) {
  __shared__ ull sb[MB_REDUCE_NSLOTS];
  for (int i = threadIdx.x; i < MB_REDUCE_NSLOTS; i += blockDim.x) sb[i] = 0;
  __syncthreads();
  x += (int64_t)blockIdx.y * ld;
  if (y) y += (int64_t)blockIdx.y * ld;
  gbins += (int64_t)blockIdx.y * MB_REDUCE_NSLOTS;
  mb_reduce_win w;
  mb_reduce_win_init(&w);
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    double t[4];
    if (mode == 0) {
      double a[4], b[4];
#pragma unroll
      for (int u = 0; u < 4; u++) {
        a[u] = __ldg(x + i + u * stride);
        b[u] = __ldg(y + i + u * stride);
      }
#pragma unroll
      for (int u = 0; u < 4; u++) t[u] = __dmul_rn(a[u], b[u]); /* never fused */
    } else {
#pragma unroll
      for (int u = 0; u < 4; u++) t[u] = __ldg(x + i + u * stride);
    }
#pragma unroll
    for (int u = 0; u < 4; u++) add_term(sb, &w, t[u]);
  }
  for (; i < n; i += stride)
    add_term(sb, &w, mode == 0 ? __dmul_rn(__ldg(x + i), __ldg(y + i)) : __ldg(x + i));
  if (w.base >= 0) flush4(sb, w.base, w.r0, w.r1, w.r2, w.r3);
  if (w.n_nan) atomicAdd(sb + MB_REDUCE_NBINS, (ull)w.n_nan);
  if (w.n_pinf) atomicAdd(sb + MB_REDUCE_NBINS + 1, (ull)w.n_pinf);
  if (w.n_ninf) atomicAdd(sb + MB_REDUCE_NBINS + 2, (ull)w.n_ninf);
  __syncthreads();
  for (int k = threadIdx.x; k < MB_REDUCE_NSLOTS; k += blockDim.x)
    if (sb[k]) atomicAdd(gbins + k, sb[k]);
}

/* Carries of the global bins between launches (the CPU's rule; one thread
 * per accumulator of `stride` slots). */
__global__ void carry_kernel(int64_t *b, int m, int stride) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < m) mb_reduce_normalise(b + (int64_t)j * stride);
}

/* The naive sum: a float64 per thread, a tree per block, atomics across blocks. */
__global__ void __launch_bounds__(MB_REDUCE_THREADS)
    naive_kernel(int64_t n, const double *__restrict__ x, const double *__restrict__ y,
                 double *out) {
  __shared__ double part[MB_REDUCE_THREADS / 32];
  double s = 0;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    s += __dmul_rn(__ldg(x + i), __ldg(y + i));
  for (int o = 16; o; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    s = threadIdx.x < MB_REDUCE_THREADS / 32 ? part[threadIdx.x] : 0;
    for (int o = 16; o; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if (threadIdx.x == 0) atomicAdd(out, s);
  }
}

extern "C" mb_error mb_reduce_device_create(mb_reduce_device **rd) {
  MB_CHECK(rd, MB_ERR_ARG, "mb_reduce_device_create: rd is NULL");
  *rd = nullptr;
  mb_reduce_device *r = new (std::nothrow) mb_reduce_device;
  MB_CHECK(r, MB_ERR_MEMORY, "out of memory for the reduction scratch");
  mb_error e = MB_SUCCESS;
  int sms = 0;
  cudaError_t ce = cudaGetDevice(&r->device);
  if (ce == cudaSuccess) ce = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, r->device);
  int per_sm = 0; /* one wave of blocks: the grid-stride loop gives each the same work */
  if (ce == cudaSuccess)
    ce = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reduce_kernel, MB_REDUCE_THREADS, 0);
  if (ce == cudaSuccess) ce = cudaMallocHost((void **)&r->host, (MB_REDUCE_NSLOTS + 1) * 8);
  if (ce != cudaSuccess) {
    r->host = nullptr;
    e = mb_error_set(MB_ERR_CUDA, __FILE__, __LINE__, __func__,
                     "cannot set up the reduction scratch: %s (%s)", cudaGetErrorString(ce),
                     cudaGetErrorName(ce));
  }
  if (!e) e = mb_dbuf_alloc(&r->bins, (MB_REDUCE_NSLOTS + 1) * 8, "reduction bins");
  if (e) {
    mb_reduce_device_free(r);
    return e;
  }
  r->blocks = (sms > 0 ? sms : 1) * (per_sm > 0 ? per_sm : 1);
  *rd = r;
  return MB_SUCCESS;
}

extern "C" void mb_reduce_device_free(mb_reduce_device *rd) {
  if (!rd) return;
  if (rd->host) cudaFreeHost(rd->host);
  delete rd;
}

extern "C" mb_error mb_reduce_device_acc(mb_reduce_device *rd, void *stream, int64_t n,
                                         const double *x, const double *y, mb_reduce_acc *acc) {
  MB_CHECK(rd && acc && n >= 0 && (n == 0 || x), MB_ERR_ARG,
           "mb_reduce_device_acc: n = %lld values, x %s", (long long)n, x ? "given" : "NULL");
  cudaStream_t s = (cudaStream_t)stream;
  ull *g = rd->bins.as<ull>();
  MB_CALL_CUDA(cudaMemsetAsync(g, 0, MB_REDUCE_NSLOTS * 8, s));
  for (int64_t c = 0; c < n; c += MB_REDUCE_CHUNK) {
    const int64_t m = n - c < MB_REDUCE_CHUNK ? n - c : MB_REDUCE_CHUNK;
    int64_t need = (m + MB_REDUCE_THREADS - 1) / MB_REDUCE_THREADS;
    const int blocks = need < rd->blocks ? (int)need : rd->blocks;
    reduce_kernel<<<blocks, MB_REDUCE_THREADS, 0, s>>>(m, x + c, y ? y + c : nullptr,
                                                       y ? 0 : 1, 0, g);
    MB_CHECK_LAUNCH("reproducible reduction");
    if (c + MB_REDUCE_CHUNK < n) {
      carry_kernel<<<1, 1, 0, s>>>((int64_t *)g, 1, MB_REDUCE_NSLOTS);
      MB_CHECK_LAUNCH("reduction carries");
    }
  }
  MB_CALL_CUDA(cudaMemcpyAsync(rd->host, g, MB_REDUCE_NSLOTS * 8, cudaMemcpyDeviceToHost, s));
  MB_CALL_CUDA(cudaStreamSynchronize(s));
  mb_reduce_acc_add_slots(acc, rd->host);
  return MB_SUCCESS;
}

extern "C" mb_error mb_reduce_device_columns(mb_reduce_device *rd, void *stream, int m,
                                             int64_t n, const double *t, int64_t ld,
                                             int64_t *acc) {
  MB_CHECK(rd && acc && m >= 1 && m <= 64 && n >= 0 && ld >= n && (n == 0 || t), MB_ERR_ARG,
           "mb_reduce_device_columns: %d columns of %lld terms (ld %lld)", m, (long long)n,
           (long long)ld);
  cudaStream_t s = (cudaStream_t)stream;
  MB_CALL_CUDA(cudaMemsetAsync(acc, 0, (size_t)m * MB_REDUCE_NSLOTS * 8, s));
  for (int64_t c = 0; c < n; c += MB_REDUCE_CHUNK) {
    const int64_t k = n - c < MB_REDUCE_CHUNK ? n - c : MB_REDUCE_CHUNK;
    const int64_t need = (k + MB_REDUCE_THREADS - 1) / MB_REDUCE_THREADS;
    int per = rd->blocks / m; /* one wave over all the columns */
    if (per < 1) per = 1;
    const dim3 grid(need < per ? (unsigned)need : (unsigned)per, (unsigned)m);
    reduce_kernel<<<grid, MB_REDUCE_THREADS, 0, s>>>(k, t + c, nullptr, 1, ld, (ull *)acc);
    MB_CHECK_LAUNCH("reproducible column sums");
    if (c + MB_REDUCE_CHUNK < n) {
      carry_kernel<<<(m + 63) / 64, 64, 0, s>>>(acc, m, MB_REDUCE_NSLOTS);
      MB_CHECK_LAUNCH("reduction carries");
    }
  }
  return MB_SUCCESS;
}

extern "C" mb_error mb_reduce_device_download(mb_reduce_device *rd, void *stream, int m,
                                              const int64_t *acc, mb_reduce_acc *acc_host) {
  MB_CHECK(rd && acc && acc_host && m >= 1, MB_ERR_ARG, "mb_reduce_device_download: bad arguments");
  cudaStream_t s = (cudaStream_t)stream;
  MB_CALL_CUDA(cudaMemcpyAsync(acc_host, acc, (size_t)m * sizeof(mb_reduce_acc),
                               cudaMemcpyDeviceToHost, s));
  MB_CALL_CUDA(cudaStreamSynchronize(s));
  return MB_SUCCESS;
}

extern "C" mb_error mb_reduce_device_allreduce(mb_reduce_device *rd, void *stream, MPI_Comm comm,
                                               int m, int64_t *acc) {
  MB_CHECK(rd && acc && m >= 1 && m <= 64, MB_ERR_ARG,
           "mb_reduce_device_allreduce: %d accumulators", m);
  int size = 1;
  MB_CALL_MPI(MPI_Comm_size(comm, &size));
  if (size == 1) return MB_SUCCESS;
  mb_reduce_acc h[64];
  MB_CALL(mb_reduce_device_download(rd, stream, m, acc, h));
  MB_CALL(mb_reduce_acc_allreduce(comm, m, h));
  MB_CALL_CUDA(cudaMemcpyAsync(acc, h, (size_t)m * sizeof(mb_reduce_acc), cudaMemcpyHostToDevice,
                               (cudaStream_t)stream));
  MB_CALL_CUDA(cudaStreamSynchronize((cudaStream_t)stream)); /* h is on this stack */
  return MB_SUCCESS;
}

static mb_error reduce_device(mb_reduce_device *rd, void *stream, MPI_Comm comm, int64_t n,
                              const double *x, const double *y, double *out) {
  MB_CHECK(out, MB_ERR_ARG, "device reduction: result pointer is NULL");
  mb_reduce_acc acc;
  mb_reduce_acc_zero(&acc);
  MB_CALL(mb_reduce_device_acc(rd, stream, n, x, y, &acc));
  MB_CALL(mb_reduce_acc_allreduce(comm, 1, &acc));
  *out = mb_reduce_acc_value(&acc);
  return MB_SUCCESS;
}

extern "C" mb_error mb_reduce_dot_device(mb_reduce_device *rd, void *stream, MPI_Comm comm,
                                         int64_t n, const double *x, const double *y,
                                         double *dot) {
  MB_CHECK(n == 0 || y, MB_ERR_ARG, "mb_reduce_dot_device: y is NULL");
  MB_CALL(reduce_device(rd, stream, comm, n, x, n ? y : nullptr, dot));
  return MB_SUCCESS;
}

extern "C" mb_error mb_reduce_norm2_device(mb_reduce_device *rd, void *stream, MPI_Comm comm,
                                           int64_t n, const double *x, double *norm) {
  double s = 0;
  MB_CHECK(norm, MB_ERR_ARG, "mb_reduce_norm2_device: norm is NULL");
  MB_CALL(reduce_device(rd, stream, comm, n, x, n ? x : nullptr, &s));
  *norm = sqrt(s);
  return MB_SUCCESS;
}

extern "C" mb_error mb_reduce_sum_device(mb_reduce_device *rd, void *stream, MPI_Comm comm,
                                         int64_t n, const double *x, double *sum) {
  MB_CALL(reduce_device(rd, stream, comm, n, x, nullptr, sum));
  return MB_SUCCESS;
}

extern "C" mb_error mb_reduce_dot_device_naive(mb_reduce_device *rd, void *stream, int64_t n,
                                               const double *x, const double *y, double *dot) {
  MB_CHECK(rd && dot && n >= 0 && (n == 0 || (x && y)), MB_ERR_ARG,
           "mb_reduce_dot_device_naive: bad arguments (n = %lld)", (long long)n);
  cudaStream_t s = (cudaStream_t)stream;
  double *o = (double *)(rd->bins.as<int64_t>() + MB_REDUCE_NSLOTS);
  MB_CALL_CUDA(cudaMemsetAsync(o, 0, 8, s));
  if (n > 0) {
    int64_t need = (n + MB_REDUCE_THREADS - 1) / MB_REDUCE_THREADS;
    const int blocks = need < rd->blocks ? (int)need : rd->blocks;
    naive_kernel<<<blocks, MB_REDUCE_THREADS, 0, s>>>(n, x, y, o);
    MB_CHECK_LAUNCH("naive dot product");
  }
  double *h = (double *)(rd->host + MB_REDUCE_NSLOTS);
  MB_CALL_CUDA(cudaMemcpyAsync(h, o, 8, cudaMemcpyDeviceToHost, s));
  MB_CALL_CUDA(cudaStreamSynchronize(s));
  *dot = *h;
  return MB_SUCCESS;
}

extern "C" mb_error mb_reduce_device_upload(int64_t n, const double *host, double **dev) {
  MB_CHECK(dev && n >= 0 && (n == 0 || host), MB_ERR_ARG, "mb_reduce_device_upload: bad arguments");
  *dev = nullptr;
  mb_dbuf b;
  MB_CALL(mb_dbuf_alloc(&b, (size_t)n * 8, "reduction test values"));
  if (n) MB_CALL_CUDA(cudaMemcpy(b.p, host, (size_t)n * 8, cudaMemcpyHostToDevice));
  *dev = b.as<double>();
  b.p = nullptr; /* handed to the caller */
  return MB_SUCCESS;
}

extern "C" void mb_reduce_device_release(double *dev) {
  if (dev) cudaFree(dev);
}
