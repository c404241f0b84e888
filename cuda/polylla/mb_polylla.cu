/* meshbatch: the CUDA backend of Polylla (mb_polylla_cuda, declared in
 * src/ops/polylla/mb_polylla.h, and mb_polylla_cuda_bench, declared in
 * cuda/polylla/mb_polylla_cuda.h). The kernels are in mb_polylla_kernels.cuh;
 * this file launches them and moves the arrays. docs/polylla-gpu.md has the
 * design, the memory per triangle and the measured figures. It stays one
 * file (about 1,150 lines): one run's steps (copy in, the kernels' phases,
 * the pinch repair, copy out) share its device buffers, pinned pipe and
 * stream, whose order of destruction is stated once in mb_pl_cuda_run.
 * The pinch repair (mb_pl_pinches) scans and merges on the device around
 * the host's cut (mb_polylla_pinch_pieces, the CPU backend's code).
 *
 * Method: Salinas-Fernandez et al., POLYLLA (2022) and GPolylla (2023): one
 * thread per triangle or half-edge for the labels, CUB for the scans and the
 * compaction. The rules, and the canonical output that makes this backend
 * bitwise identical to mb_polylla_cpu, are those of mb_polylla.h.
 *
 * Host side: the input is converted while it is copied (triangles narrowed
 * to int32 with a range check, positions cut to x, y) by a few host threads,
 * each filling its own pinned slot and queueing its copy on the one stream of
 * the run; the output comes back the same way (int32 widened to the int64 of
 * mb_mesh, into arrays on huge pages: mb_alloc). The output's positions are
 * the input's own array where the caller allows it (mb_polylla_opts.share_xyz,
 * as a job does), else a copy made by host threads while the device computes.
 */
#include <cuda_runtime.h>

#include <cub/cub.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <utility>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <thread>
#include <vector>

#include "mb_alloc.h"
#include "mb_cuda.h"
#include "mb_cuda_private.cuh"
#include "mb_polylla.h"
#include "mb_polylla_cuda.h"
#include "mb_polylla_kernels.cuh"

static unsigned mb_pl_grid(int64_t n) {
  return (unsigned)((n + MB_PL_BLOCK - 1) / MB_PL_BLOCK);
}

static double mb_pl_now_ms(void) {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

/* ------------------------------------------------------------ host threads */

/* Run f(w) for w in [0, n) on n threads (the caller's thread is w = 0). If a
 * thread cannot be started, its share runs on the caller's thread. */
template <typename F> static void mb_pl_threads(int n, F f) {
  std::vector<std::thread> th;
  std::vector<int> inline_w;
  for (int w = 1; w < n; w++) {
    try {
      th.emplace_back(f, w);
    } catch (...) {
      inline_w.push_back(w);
    }
  }
  f(0);
  for (int w : inline_w) f(w);
  for (auto &t : th) t.join();
}

static int mb_pl_nthreads(void) {
  const unsigned hw = std::thread::hardware_concurrency();
  return (int)std::min(16u, std::max(2u, hw));
}

/* The process's pool of pinned slots: pinning costs 40-60 ms per 64 MiB
 * (docs/polylla-gpu.md), which a job would pay for every mesh, so one pool
 * is kept for the process's life (the driver releases it at exit), grown to
 * the largest run's need (at most 16 slots of 4 MiB) and lent to one run at
 * a time; a run that finds it lent pins slots of its own. Portable: pinned
 * for every device's context. */
static std::mutex mb_pl_pool_mu;
static char *mb_pl_pool = nullptr;
static size_t mb_pl_pool_bytes = 0;

/* Pinned host slots (the pool's, or owned) and events, one per host thread.
 * The stream must be drained before this goes (the slots return to the pool). */
struct mb_pl_pipe {
  int nw = 0;
  size_t slot = 0;  /* bytes per slot */
  char *pinned = nullptr;
  std::vector<cudaEvent_t> ev;
  cudaStream_t s = nullptr;
  int dev = 0;
  std::unique_lock<std::mutex> pool; /* held while the pool's slots are this run's */
  ~mb_pl_pipe() {
    for (cudaEvent_t e : ev)
      if (e) cudaEventDestroy(e);
    if (pinned && !pool.owns_lock()) cudaFreeHost(pinned);
  }
};

/* Slots of at most 4 MiB, smaller where the largest transfer (max_bytes)
 * needs less: pinning costs time in proportion to its size, so a small mesh
 * must not pay for a large pool. */
static mb_error mb_pl_pipe_create(mb_pl_pipe *p, cudaStream_t s, size_t max_bytes) {
  p->nw = mb_pl_nthreads();
  const size_t per = (max_bytes + (size_t)p->nw - 1) / (size_t)p->nw;
  const size_t unit = (size_t)64 << 10;
  p->slot = std::min((size_t)4 << 20, std::max(unit, (per + unit - 1) / unit * unit));
  p->s = s;
  MB_CALL_CUDA(cudaGetDevice(&p->dev));
  const size_t need = p->slot * (size_t)p->nw;
  std::unique_lock<std::mutex> lk(mb_pl_pool_mu, std::try_to_lock);
  if (lk.owns_lock()) {
    if (mb_pl_pool_bytes < need) {
      if (mb_pl_pool) (void)cudaFreeHost(mb_pl_pool);
      mb_pl_pool = nullptr;
      mb_pl_pool_bytes = 0;
      MB_CALL_CUDA(cudaHostAlloc((void **)&mb_pl_pool, need, cudaHostAllocPortable));
      mb_pl_pool_bytes = need;
    }
    p->pinned = mb_pl_pool;
    p->pool = std::move(lk);
  } else {
    MB_CALL_CUDA(cudaHostAlloc((void **)&p->pinned, need, cudaHostAllocDefault));
  }
  p->ev.assign((size_t)p->nw, nullptr);
  for (int w = 0; w < p->nw; w++)
    MB_CALL_CUDA(cudaEventCreateWithFlags(&p->ev[(size_t)w], cudaEventDisableTiming));
  return MB_SUCCESS;
}

/* Upload n items of `isz` bytes to dst: chunks of a slot, thread w fills
 * chunks w, w + nw, ... with conv(slot, begin, end) and queues their copies
 * on the stream. conv returns false to stop (a bad input; it records why). */
template <typename Conv>
static mb_error mb_pl_upload(mb_pl_pipe *p, void *dst, int64_t n, size_t isz, Conv conv,
                             const char *what) {
  const int64_t per = (int64_t)(p->slot / isz);
  const int64_t nchunks = (n + per - 1) / per;
  std::vector<cudaError_t> err((size_t)p->nw, cudaSuccess);
  mb_pl_threads(p->nw, [&](int w) {
    cudaError_t e = cudaSetDevice(p->dev);
    char *slot = p->pinned + (size_t)w * p->slot;
    bool first = true;
    for (int64_t c = w; c < nchunks && e == cudaSuccess; c += p->nw) {
      if (!first) e = cudaEventSynchronize(p->ev[(size_t)w]);
      if (e != cudaSuccess) break;
      first = false;
      const int64_t b = c * per, en = std::min(n, b + per);
      if (!conv(slot, b, en)) break;
      e = cudaMemcpyAsync((char *)dst + (size_t)b * isz, slot, (size_t)(en - b) * isz,
                          cudaMemcpyHostToDevice, p->s);
      if (e == cudaSuccess) e = cudaEventRecord(p->ev[(size_t)w], p->s);
    }
    if (e == cudaSuccess && !first) e = cudaEventSynchronize(p->ev[(size_t)w]);
    err[(size_t)w] = e;
  });
  for (cudaError_t e : err)
    MB_CHECK(e == cudaSuccess, MB_ERR_CUDA, "CUDA copy of the %s failed: %s (%s)", what,
             cudaGetErrorString(e), cudaGetErrorName(e));
  return MB_SUCCESS;
}

/* Download n items of `isz` bytes from src, chunk by chunk as above, each
 * chunk handed to conv(slot, begin, end) once it is in the slot. */
template <typename Conv>
static mb_error mb_pl_download(mb_pl_pipe *p, const void *src, int64_t n, size_t isz, Conv conv,
                               const char *what) {
  const int64_t per = (int64_t)(p->slot / isz);
  const int64_t nchunks = (n + per - 1) / per;
  std::vector<cudaError_t> err((size_t)p->nw, cudaSuccess);
  mb_pl_threads(p->nw, [&](int w) {
    cudaError_t e = cudaSetDevice(p->dev);
    char *slot = p->pinned + (size_t)w * p->slot;
    for (int64_t c = w; c < nchunks && e == cudaSuccess; c += p->nw) {
      const int64_t b = c * per, en = std::min(n, b + per);
      e = cudaMemcpyAsync(slot, (const char *)src + (size_t)b * isz, (size_t)(en - b) * isz,
                          cudaMemcpyDeviceToHost, p->s);
      if (e == cudaSuccess) e = cudaEventRecord(p->ev[(size_t)w], p->s);
      if (e == cudaSuccess) e = cudaEventSynchronize(p->ev[(size_t)w]);
      if (e == cudaSuccess) conv(slot, b, en);
    }
    err[(size_t)w] = e;
  });
  for (cudaError_t e : err)
    MB_CHECK(e == cudaSuccess, MB_ERR_CUDA, "CUDA copy of the %s failed: %s (%s)", what,
             cudaGetErrorString(e), cudaGetErrorName(e));
  return MB_SUCCESS;
}

/* Owning host allocation (malloc, freed unless released). */
struct mb_pl_hbuf {
  void *p = nullptr;
  ~mb_pl_hbuf() { free(p); }
  void *release() {
    void *q = p;
    p = nullptr;
    return q;
  }
};

/* Owning stream and timing events of one run. */
struct mb_pl_run {
  cudaStream_t s = nullptr;
  cudaEvent_t ev[7] = {};
  std::thread xyz_copy; /* copies the positions into the output meanwhile */
  ~mb_pl_run() {
    if (xyz_copy.joinable()) xyz_copy.join();
    for (cudaEvent_t e : ev)
      if (e) cudaEventDestroy(e);
    if (s) {
      cudaStreamSynchronize(s); /* nothing queued may outlive the buffers */
      cudaStreamDestroy(s);
    }
  }
};

static const int64_t MB_PL_I32_MAX = 2147483647;

/* The device arrays of one run (freed on every path). */
struct mb_pl_dev {
  mb_dbuf xy, V, twin, fr, lng, cnt, start, bucket, out, off, counters, temp;
  mb_dbuf start_bits; /* repair: where each region's walk starts, a bit per half-edge */
  mb_dbuf left, queue; /* regions left out: a bit per triangle, the triangles reached */
  mb_dbuf pl, pk;      /* pinch repair: the listed polygons' sizes and lists; the merge's inputs */
  mb_dbuf off2, out2, heads2; /* the polygons after the pinch repair */
};

/* Make sure the CUB temporary buffer holds `bytes`. */
static mb_error mb_pl_temp(mb_pl_dev *d, size_t bytes) {
  if (d->temp.bytes >= bytes && d->temp.p) return MB_SUCCESS;
  MB_CALL(mb_dbuf_alloc(&d->temp, bytes, "CUB temporary storage"));
  return MB_SUCCESS;
}

static float mb_pl_elapsed(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  if (cudaEventElapsedTime(&ms, a, b) != cudaSuccess) {
    (void)cudaGetLastError();
    ms = 0;
  }
  return ms;
}

/* Allocate the device arrays of a run of nv vertices and nt triangles. */
static mb_error mb_pl_dev_alloc(mb_pl_dev *dp, int64_t nv, int64_t nt) {
  mb_pl_dev &d = *dp;
  const int nh = (int)(3 * nt);
  MB_CALL(mb_dbuf_alloc(&d.counters, sizeof(unsigned long long) * MB_PL_NCOUNTERS, "counters"));
  MB_CALL(mb_dbuf_alloc(&d.xy, sizeof(double2) * (size_t)nv, "positions"));
  MB_CALL(mb_dbuf_alloc(&d.V, sizeof(int) * (size_t)nh, "triangles"));
  MB_CALL(mb_dbuf_alloc(&d.twin, sizeof(int) * (size_t)nh, "twins"));
  MB_CALL(mb_dbuf_alloc(&d.fr, (size_t)nh, "frontier flags"));
  MB_CALL(mb_dbuf_alloc(&d.lng, (size_t)nt, "longest edges"));
  MB_CALL(mb_dbuf_alloc(&d.cnt, sizeof(int) * (size_t)nv, "vertex counts"));
  MB_CALL(mb_dbuf_alloc(&d.start, sizeof(int) * (size_t)nv, "bucket starts"));
  MB_CALL(mb_dbuf_alloc(&d.bucket, sizeof(unsigned long long) * (size_t)nh, "buckets"));
  MB_CALL(mb_dbuf_alloc(&d.out, sizeof(int) * (size_t)nh, "polygon vertices"));
  MB_CALL(mb_dbuf_alloc(&d.start_bits, sizeof(unsigned) * ((size_t)nh / 32 + 1), "region starts"));
  /* cycles have >= 2 half-edges (succ(h) leaves the vertex h points to) */
  MB_CALL(mb_dbuf_alloc(&d.off, sizeof(int) * ((size_t)nh / 2 + 2), "polygon offsets"));
  return MB_SUCCESS;
}

/* Half-edges on the device: orientation, twins by a counting sort on the
 * smaller vertex; the error counters come back in hc (the stream is synced). */
static mb_error mb_pl_halfedges(mb_pl_dev *dp, cudaStream_t s, int64_t nv, int64_t nt,
                                unsigned long long *hc) {
  mb_pl_dev &d = *dp;
  const int nh = (int)(3 * nt);
  unsigned long long *dc = d.counters.as<unsigned long long>();
  int *V = d.V.as<int>(), *twin = d.twin.as<int>(), *cnt = d.cnt.as<int>();
  int *start = d.start.as<int>();
  const double2 *xy = d.xy.as<double2>();
  /* ---- half-edges: orientation, twins */
  mb_pl_init_counters<<<1, 32, 0, s>>>(dc);
  MB_CHECK_LAUNCH("counters");
  mb_pl_orient_kernel<<<mb_pl_grid(nt), MB_PL_BLOCK, 0, s>>>((int)nt, xy, V, dc);
  MB_CHECK_LAUNCH("orientation");
  MB_CALL_CUDA(cudaMemsetAsync(cnt, 0, sizeof(int) * (size_t)nv, s));
  mb_pl_bucket_count<<<mb_pl_grid(nh), MB_PL_BLOCK, 0, s>>>(nh, V, cnt);
  MB_CHECK_LAUNCH("bucket count");
  size_t tb = 0;
  MB_CALL_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, tb, cnt, start, (int)nv, s));
  MB_CALL(mb_pl_temp(dp, tb));
  MB_CALL_CUDA(cub::DeviceScan::ExclusiveSum(d.temp.p, tb, cnt, start, (int)nv, s));
  mb_pl_bucket_fill<<<mb_pl_grid(nh), MB_PL_BLOCK, 0, s>>>(nh, V, start,
                                                           d.bucket.as<unsigned long long>());
  MB_CHECK_LAUNCH("bucket fill");
  mb_pl_twin_kernel<<<mb_pl_grid(nh), MB_PL_BLOCK, 0, s>>>(
      nh, V, start, d.bucket.as<unsigned long long>(), twin, dc);
  MB_CHECK_LAUNCH("twins");
  MB_CALL_CUDA(cudaMemcpyAsync(hc, dc, sizeof(unsigned long long) * MB_PL_NCOUNTERS, cudaMemcpyDeviceToHost, s));
  MB_CALL_CUDA(cudaStreamSynchronize(s));
  return MB_SUCCESS;
}

/* Label, repair and traversal on the device, with events ev[0..3] around
 * the phases; the counters come back in hc, the polygons in d->off
 * [npoly + 1] and d->out [nidx]. */
/* ties: corners: refuse a cycle of joins (mb_pl_join_*), with the CPU's
 * words. Uses the dead buckets; syncs the stream. */
static mb_error mb_pl_tie_cycles(mb_pl_dev *dp, cudaStream_t s, int64_t nt,
                                 unsigned long long *hc, const char *name) {
  mb_pl_dev &d = *dp;
  const int *twin = d.twin.as<int>();
  const uint8_t *lng = d.lng.as<uint8_t>();
  unsigned long long *dc = d.counters.as<unsigned long long>();
  int *p = d.bucket.as<int>(), *q = p + nt; /* 2 nt ints + nt bytes of the 24 nt B */
  uint8_t *mark = (uint8_t *)(q + nt);
  mb_pl_join_init<<<mb_pl_grid(nt), MB_PL_BLOCK, 0, s>>>((int)nt, twin, lng, p);
  MB_CHECK_LAUNCH("joins");
  for (int64_t reach = 1; reach < nt; reach *= 2) {
    mb_pl_join_jump<<<mb_pl_grid(nt), MB_PL_BLOCK, 0, s>>>((int)nt, p, q);
    MB_CHECK_LAUNCH("pointer jumping");
    std::swap(p, q);
  }
  MB_CALL_CUDA(cudaMemsetAsync(mark, 0, (size_t)nt, s));
  mb_pl_join_mark<<<mb_pl_grid(nt), MB_PL_BLOCK, 0, s>>>((int)nt, p, mark);
  MB_CHECK_LAUNCH("cycle marks");
  mb_pl_join_cycle<<<mb_pl_grid(nt), MB_PL_BLOCK, 0, s>>>((int)nt, twin, lng, mark, dc);
  MB_CHECK_LAUNCH("cycles of joins");
  MB_CALL_CUDA(cudaMemcpyAsync(hc, dc, sizeof(unsigned long long) * MB_PL_NCOUNTERS,
                               cudaMemcpyDeviceToHost, s));
  MB_CALL_CUDA(cudaStreamSynchronize(s));
  MB_CHECK(hc[MB_PL_C_TIE_CYCLE] == MB_PL_NONE, MB_ERR_FORMAT, MB_POLYLLA_TIE_CYCLE_MSG, name,
           (long long)hc[MB_PL_C_TIE_CYCLE]);
  return MB_SUCCESS;
}

/* Regions left out (mb_polylla_opts.seeds): a bit per triangle in d->left
 * and the triangles in d->queue [*nleft], by a breadth-first walk from the
 * seeds over the label phase's non-frontier edges, a launch per step (the
 * regions are small; each step's size comes back to the host). */
static mb_error mb_pl_left_out(mb_pl_dev *dp, cudaStream_t s, int64_t nt, const int64_t *seeds,
                               int64_t nseeds, int64_t *nleft) {
  mb_pl_dev &d = *dp;
  for (int64_t i = 0; i < nseeds; i++)
    MB_CHECK(seeds[i] >= 0 && seeds[i] < nt, MB_ERR_ARG,
             "seed triangle %lld out of range (%lld triangles)", (long long)seeds[i],
             (long long)nt);
  const size_t nw = (size_t)nt / 32 + 1;
  MB_CALL(mb_dbuf_alloc(&d.left, sizeof(unsigned) * nw, "regions left out"));
  MB_CALL(mb_dbuf_alloc(&d.queue, sizeof(int) * (size_t)std::max<int64_t>(nt, nseeds),
                        "triangles left out"));
  unsigned *left = d.left.as<unsigned>();
  int *queue = d.queue.as<int>();
  unsigned long long *tail = d.counters.as<unsigned long long>() + MB_PL_C_LEFT;
  MB_CALL_CUDA(cudaMemsetAsync(left, 0, sizeof(unsigned) * nw, s));
  /* the seeds, as 32-bit rows, at the back of the queue until claimed */
  std::vector<int> h((size_t)nseeds);
  for (int64_t i = 0; i < nseeds; i++) h[(size_t)i] = (int)seeds[i];
  MB_CALL(mb_pl_temp(dp, sizeof(int) * (size_t)nseeds));
  int *sd = (int *)d.temp.p;
  MB_CALL_CUDA(cudaMemcpyAsync(sd, h.data(), sizeof(int) * (size_t)nseeds,
                               cudaMemcpyHostToDevice, s));
  mb_pl_left_seed<<<mb_pl_grid(nseeds), MB_PL_BLOCK, 0, s>>>((int)nseeds, sd, left, queue, tail);
  MB_CHECK_LAUNCH("seeds of the regions left out");
  unsigned long long b = 0, e = 0;
  MB_CALL_CUDA(cudaMemcpyAsync(&e, tail, sizeof e, cudaMemcpyDeviceToHost, s));
  MB_CALL_CUDA(cudaStreamSynchronize(s));
  while (b < e) {
    mb_pl_left_grow<<<mb_pl_grid((int64_t)(e - b)), MB_PL_BLOCK, 0, s>>>(
        (int)b, (int)e, d.twin.as<int>(), d.fr.as<uint8_t>(), left, queue, tail);
    MB_CHECK_LAUNCH("regions left out");
    b = e;
    MB_CALL_CUDA(cudaMemcpyAsync(&e, tail, sizeof e, cudaMemcpyDeviceToHost, s));
    MB_CALL_CUDA(cudaStreamSynchronize(s));
  }
  *nleft = (int64_t)e;
  return MB_SUCCESS;
}

static mb_error mb_pl_polygons(mb_pl_dev *dp, cudaStream_t s, int64_t nv, int64_t nt,
                               mb_polylla_ties ties, const int64_t *seeds, int64_t nseeds,
                               cudaEvent_t *ev, unsigned long long *hc, const char *name,
                               int *npoly_out, int64_t *nidx_out, int64_t *nleft) {
  mb_pl_dev &d = *dp;
  const int nh = (int)(3 * nt);
  unsigned long long *dc = d.counters.as<unsigned long long>();
  int *V = d.V.as<int>(), *twin = d.twin.as<int>(), *cnt = d.cnt.as<int>();
  uint8_t *fr = d.fr.as<uint8_t>(), *lng = d.lng.as<uint8_t>();
  const double2 *xy = d.xy.as<double2>();
  int *succ = d.bucket.as<int>(), *plen = d.bucket.as<int>() + nh;
  int *heads = d.twin.as<int>(); /* the twins are dead once the successors exist */
  int *out = d.out.as<int>(), *off = d.off.as<int>();
  size_t tb = 0;
  /* ---- label */
  MB_CALL_CUDA(cudaEventRecord(ev[0], s)); /* the check above is not device time */
  const int corners = ties == MB_POLYLLA_TIES_CORNERS;
  mb_pl_longest_kernel<<<mb_pl_grid(nt), MB_PL_BLOCK, 0, s>>>((int)nt, xy, V, corners, lng);
  MB_CHECK_LAUNCH("longest edges");
  if (corners) MB_CALL(mb_pl_tie_cycles(dp, s, nt, hc, name));
  mb_pl_frontier_kernel<<<mb_pl_grid(nh), MB_PL_BLOCK, 0, s>>>(nh, twin, lng, fr);
  MB_CHECK_LAUNCH("frontier edges");
  *nleft = 0;
  if (nseeds > 0) MB_CALL(mb_pl_left_out(dp, s, nt, seeds, nseeds, nleft));
  const unsigned *left = nseeds > 0 ? d.left.as<unsigned>() : nullptr;
  MB_CALL_CUDA(cudaEventRecord(ev[1], s));

  /* ---- repair */
  unsigned *seen = d.bucket.as<unsigned>(); /* nh bits; the buckets are dead */
  MB_CALL_CUDA(cudaMemsetAsync(cnt, 0, sizeof(int) * (size_t)nv, s));
  MB_CALL_CUDA(cudaMemsetAsync(seen, 0, sizeof(unsigned) * ((size_t)nh / 32 + 1), s));
  mb_pl_vertex_frontier_count<<<mb_pl_grid(nh), MB_PL_BLOCK, 0, s>>>(nh, V, twin, fr, cnt);
  MB_CHECK_LAUNCH("frontier edges per vertex");
  unsigned *start = d.start_bits.as<unsigned>();
  MB_CALL_CUDA(cudaMemsetAsync(start, 0, sizeof(unsigned) * ((size_t)nh / 32 + 1), s));
  mb_pl_start_kernel<<<mb_pl_grid(nh), MB_PL_BLOCK, 0, s>>>(nh, twin, lng, fr, start);
  MB_CHECK_LAUNCH("region starts");
  mb_pl_repair_kernel<<<mb_pl_grid(nh), MB_PL_BLOCK, 0, s>>>(nh, V, twin, cnt, fr, seen, start,
                                                             left, dc);
  MB_CHECK_LAUNCH("barrier-edge tips");
  MB_CALL_CUDA(cudaEventRecord(ev[2], s));

  /* ---- traversal */
  mb_pl_successor_kernel<<<mb_pl_grid(nh), MB_PL_BLOCK, 0, s>>>(nh, twin, fr, succ, dc);
  MB_CHECK_LAUNCH("successors");
  mb_pl_head_kernel<<<mb_pl_grid(nh), MB_PL_BLOCK, 0, s>>>(nh, succ, plen, dc);
  MB_CHECK_LAUNCH("heads");
  thrust::counting_iterator<int> ids(0);
  tb = 0;
  MB_CALL_CUDA(cub::DeviceSelect::If(nullptr, tb, ids, heads, dc + MB_PL_C_POLYGONS, nh,
                                     mb_pl_is_head{plen, left}, s));
  MB_CALL(mb_pl_temp(dp, tb));
  MB_CALL_CUDA(cub::DeviceSelect::If(d.temp.p, tb, ids, heads, dc + MB_PL_C_POLYGONS, nh,
                                     mb_pl_is_head{plen, left}, s));
  MB_CALL_CUDA(cudaMemcpyAsync(hc, dc, sizeof(unsigned long long) * MB_PL_NCOUNTERS, cudaMemcpyDeviceToHost, s));
  MB_CALL_CUDA(cudaStreamSynchronize(s));
  MB_CHECK(hc[MB_PL_C_LOOP] == MB_PL_NONE, MB_ERR_FORMAT,
           "mesh '%s': a walk around triangle %lld (0-based) did not close; not a planar "
           "manifold triangulation",
           name, (long long)hc[MB_PL_C_LOOP]);
  const int npoly = *npoly_out = (int)hc[MB_PL_C_POLYGONS];
  *nidx_out = (int64_t)hc[MB_PL_C_FRONTIER_HE];
  MB_CALL_CUDA(cudaMemsetAsync(off, 0, sizeof(int), s));
  if (npoly > 0) {
    auto lens = thrust::make_transform_iterator(thrust::counting_iterator<int>(0),
                                                mb_pl_head_len{plen, heads});
    tb = 0;
    MB_CALL_CUDA(cub::DeviceScan::InclusiveSum(nullptr, tb, lens, off + 1, npoly, s));
    MB_CALL(mb_pl_temp(dp, tb));
    MB_CALL_CUDA(cub::DeviceScan::InclusiveSum(d.temp.p, tb, lens, off + 1, npoly, s));
    mb_pl_write_kernel<<<mb_pl_grid(npoly), MB_PL_BLOCK, 0, s>>>(npoly, heads, off, succ, V,
                                                                  out);
    MB_CHECK_LAUNCH("polygons");
  }
  if (left) { /* the vertices of the polygons kept */
    int n = 0;
    MB_CALL_CUDA(cudaMemcpyAsync(&n, off + npoly, sizeof n, cudaMemcpyDeviceToHost, s));
    MB_CALL_CUDA(cudaStreamSynchronize(s));
    *nidx_out = n;
  }
  MB_CALL_CUDA(cudaEventRecord(ev[3], s));

  return MB_SUCCESS;
}

/* Copy n ints from the host to the device (pageable: staged before the
 * call returns). */
static mb_error mb_pl_put(int *dst, const std::vector<int> &src, cudaStream_t s) {
  if (!src.empty())
    MB_CALL_CUDA(cudaMemcpyAsync(dst, src.data(), sizeof(int) * src.size(),
                                 cudaMemcpyHostToDevice, s));
  return MB_SUCCESS;
}

/* n ints from the device (the stream synchronised). */
static mb_error mb_pl_get(std::vector<int> &dst, const int *src, size_t n, cudaStream_t s) {
  dst.resize(n);
  if (n) MB_CALL_CUDA(cudaMemcpyAsync(dst.data(), src, sizeof(int) * n, cudaMemcpyDeviceToHost, s));
  MB_CALL_CUDA(cudaStreamSynchronize(s));
  return MB_SUCCESS;
}

/* The pinch repair's scan of the corners on the device (mb_polylla_corners_fn):
 * the vertices' bits up, the triangles (V: the oriented corners, the same
 * set) with three marked corners back, sorted. */
struct mb_pl_corners_src {
  mb_pl_dev *d;
  cudaStream_t s;
  int64_t nt;
};
static mb_error mb_pl_corners(void *ctx, const uint64_t *in, int64_t nwords, int64_t **cand,
                              int64_t *ncand) {
  const mb_pl_corners_src *c = (const mb_pl_corners_src *)ctx;
  *cand = nullptr;
  *ncand = 0;
  if (sizeof(uint64_t) * (size_t)nwords + sizeof(int) * (size_t)c->nt > c->d->bucket.bytes)
    return MB_ERR_UNSUPPORTED; /* the host scans */
  unsigned long long *din = c->d->bucket.as<unsigned long long>();
  int *list = (int *)(din + nwords);
  unsigned long long *count = c->d->counters.as<unsigned long long>() + MB_PL_C_PINCH_CAND;
  MB_CALL_CUDA(cudaMemcpyAsync(din, in, sizeof(uint64_t) * (size_t)nwords, cudaMemcpyHostToDevice,
                               c->s));
  MB_CALL_CUDA(cudaMemsetAsync(count, 0, sizeof *count, c->s));
  mb_pl_pinch_triangles<<<mb_pl_grid(c->nt), MB_PL_BLOCK, 0, c->s>>>((int)c->nt, c->d->V.as<int>(),
                                                                      din, list, count);
  MB_CHECK_LAUNCH("the pinch repair's scan of the corners");
  unsigned long long n = 0;
  MB_CALL_CUDA(cudaMemcpyAsync(&n, count, sizeof n, cudaMemcpyDeviceToHost, c->s));
  MB_CALL_CUDA(cudaStreamSynchronize(c->s));
  std::vector<int> l;
  MB_CALL(mb_pl_get(l, list, (size_t)n, c->s));
  std::sort(l.begin(), l.end());
  int64_t *r = (int64_t *)malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  MB_CHECK(r, MB_ERR_MEMORY, "out of memory for %llu triangles", n);
  for (size_t i = 0; i < (size_t)n; i++) r[i] = l[i];
  *cand = r;
  *ncand = (int64_t)n;
  return MB_SUCCESS;
}

/* The pinch repair (mb_polylla.h, "Pinch repair") of the device's polygons
 * (*npoly, *nidx; *off, *out, *heads device arrays, heads increasing):
 * the device lists the polygons with a repeated vertex (pairwise up to
 * MB_PL_PINCH_PAIRWISE vertices; longer ones are listed and checked here
 * by the CPU backend's check, mb_polylla_has_repeat) and gathers their lists; the host cuts them
 * (mb_polylla_pinch_pieces, its corner scan on the device) and the device
 * merges the pieces by head into new arrays (d->off2, out2, heads2), which
 * the pointers then name. *nsplit: the cuts (0: nothing changed). */
static mb_error mb_pl_pinches(mb_pl_dev *dp, cudaStream_t s, const mb_mesh *tri,
                              const mb_polylla_ids *ids, int64_t nt, int *npoly, int64_t *nidx,
                              int **off, int **out, int **heads, int64_t *nsplit) {
  mb_pl_dev &d = *dp;
  *nsplit = 0;
  unsigned long long *count = d.counters.as<unsigned long long>() + MB_PL_C_PINCH_LISTED;
  int *listed = d.bucket.as<int>(); /* the buckets are dead: npoly ints of their 24 nt bytes */
  MB_CALL_CUDA(cudaMemsetAsync(count, 0, sizeof *count, s));
  if (*npoly > 0) {
    mb_pl_pinch_list<<<mb_pl_grid(*npoly), MB_PL_BLOCK, 0, s>>>(*npoly, *off, *out, listed, count);
    MB_CHECK_LAUNCH("the pinch repair's scan of the polygons");
  }
  unsigned long long nl = 0;
  MB_CALL_CUDA(cudaMemcpyAsync(&nl, count, sizeof nl, cudaMemcpyDeviceToHost, s));
  MB_CALL_CUDA(cudaStreamSynchronize(s));
  if (!nl) return MB_SUCCESS;
  /* the listed polygons, increasing, and their lists */
  const int n = (int)nl;
  std::vector<int> l, size, pk;
  MB_CALL(mb_pl_get(l, listed, (size_t)n, s));
  std::sort(l.begin(), l.end());
  MB_CALL(mb_dbuf_alloc(&d.pl, sizeof(int) * (2 * (size_t)n + 1), "the listed polygons"));
  int *dl = d.pl.as<int>(), *dat = dl + n;
  MB_CALL(mb_pl_put(dl, l, s));
  mb_pl_list_sizes<<<mb_pl_grid(n), MB_PL_BLOCK, 0, s>>>(n, dl, *off, dat);
  MB_CHECK_LAUNCH("the listed polygons' sizes");
  MB_CALL(mb_pl_get(size, dat, (size_t)n, s));
  std::vector<int> at((size_t)n + 1, 0);
  for (int k = 0; k < n; k++) at[(size_t)k + 1] = at[(size_t)k] + size[(size_t)k];
  MB_CALL(mb_pl_put(dat, at, s));
  MB_CALL(mb_dbuf_alloc(&d.pk, sizeof(int) * (size_t)std::max(at[(size_t)n], 1), "their lists"));
  mb_pl_gather_lists<<<mb_pl_grid(n), MB_PL_BLOCK, 0, s>>>(n, dl, dat, *off, *out, d.pk.as<int>());
  MB_CHECK_LAUNCH("the listed polygons' lists");
  MB_CALL(mb_pl_get(pk, d.pk.as<int>(), (size_t)at[(size_t)n], s));
  /* the pinched among them (a vertex twice), their lists as the repair's input */
  std::vector<int64_t> pin, pin_off(1, 0), pin_idx;
  struct scratch_guard {
    int64_t *p = nullptr, cap = 0;
    ~scratch_guard() { free(p); }
  } sc; /* mb_polylla_has_repeat's sorted copy */
  for (int k = 0; k < n; k++) {
    const size_t b = pin_idx.size();
    pin_idx.insert(pin_idx.end(), pk.begin() + at[(size_t)k], pk.begin() + at[(size_t)k + 1]);
    const int r = mb_polylla_has_repeat(pin_idx.data() + b, (int64_t)(pin_idx.size() - b), &sc.p,
                                        &sc.cap);
    MB_CHECK(r >= 0, MB_ERR_MEMORY, "out of memory for the pinch repair's check");
    if (!r) {
      pin_idx.resize(b);
      continue;
    }
    pin.push_back(l[(size_t)k]);
    pin_off.push_back((int64_t)pin_idx.size());
  }
  if (pin.empty()) return MB_SUCCESS;
  const int ndrop = (int)pin.size();
  mb_pl_corners_src cs{dp, s, nt};
  mb_polylla_pieces pc = {};
  MB_CALL(mb_polylla_pinch_pieces(tri, ids, ndrop, pin.data(), pin_off.data(), pin_idx.data(),
                                  mb_pl_corners, &cs, &pc));
  struct pieces_guard {
    mb_polylla_pieces *p;
    ~pieces_guard() { mb_polylla_pieces_free(p); }
  } guard{&pc};
  /* the merge's inputs: D, Dpre, ph, Ppre, pidx, then L */
  const int np = (int)pc.n;
  std::vector<int> in;
  in.reserve((size_t)(2 * ndrop + 2 * np + 2) + (size_t)pc.off[np]);
  for (int k = 0; k < ndrop; k++) in.push_back((int)pin[(size_t)k]);
  for (int k = 0; k <= ndrop; k++) in.push_back((int)pin_off[(size_t)k]);
  for (int j = 0; j < np; j++) in.push_back((int)pc.heads[j]);
  for (int j = 0; j <= np; j++) in.push_back((int)pc.off[j]);
  for (int64_t k = 0; k < pc.off[np]; k++) in.push_back((int)pc.idx[k]);
  MB_CALL(mb_dbuf_alloc(&d.pl, sizeof(int) * (in.size() + (size_t)np + 1), "the pieces"));
  int *D = d.pl.as<int>(), *Dpre = D + ndrop, *ph = Dpre + ndrop + 1, *Ppre = ph + np,
      *pidx = Ppre + np + 1, *L = pidx + pc.off[np];
  MB_CALL(mb_pl_put(D, in, s));
  const int64_t npoly2 = *npoly - ndrop + np;
  const int64_t nidx2 = *nidx - pin_off[(size_t)ndrop] + pc.off[np];
  MB_CHECK(nidx2 <= MB_PL_I32_MAX, MB_ERR_ARG,
           "mesh '%s': %lld polygon vertices after the pinch repair, more than 32-bit ids hold",
           tri->name ? tri->name : "", (long long)nidx2);
  MB_CALL(mb_dbuf_alloc(&d.off2, sizeof(int) * ((size_t)npoly2 + 1), "polygon offsets"));
  MB_CALL(mb_dbuf_alloc(&d.out2, sizeof(int) * (size_t)std::max<int64_t>(nidx2, 1),
                        "polygon vertices"));
  MB_CALL(mb_dbuf_alloc(&d.heads2, sizeof(int) * (size_t)std::max<int64_t>(npoly2, 1), "polygon heads"));
  int *off2 = d.off2.as<int>(), *out2 = d.out2.as<int>(), *heads2 = d.heads2.as<int>();
  mb_pl_piece_at<<<mb_pl_grid(np), MB_PL_BLOCK, 0, s>>>(np, *heads, *npoly, ph, L);
  MB_CHECK_LAUNCH("the pieces' places");
  mb_pl_merge_kept<<<mb_pl_grid(*npoly), MB_PL_BLOCK, 0, s>>>(
      *npoly, *off, *out, *heads, ndrop, D, Dpre, np, L, Ppre, off2, out2, heads2);
  MB_CHECK_LAUNCH("the merge of the kept polygons");
  mb_pl_merge_pieces<<<mb_pl_grid(np), MB_PL_BLOCK, 0, s>>>(np, L, *off, ndrop, D, Dpre, Ppre, ph,
                                                            pidx, off2, out2, heads2);
  MB_CHECK_LAUNCH("the merge of the pieces");
  const std::vector<int> end(1, (int)nidx2);
  MB_CALL(mb_pl_put(off2 + npoly2, end, s));
  MB_CALL_CUDA(cudaStreamSynchronize(s)); /* the host vectors go */
  *npoly = (int)npoly2;
  *nidx = nidx2;
  *off = off2;
  *out = out2;
  *heads = heads2;
  *nsplit = pc.nsplit;
  return MB_SUCCESS;
}

/* Counts and phase times of a run: events ev[0..6] around copy in,
 * half-edges, (check), label, repair, traversal; copy out in host ms.
 * ms_total is left to the caller. */
static void mb_pl_fill_stats(mb_polylla_stats *st, int64_t nt, int64_t npoly,
                             const unsigned long long *hc, const cudaEvent_t *ev,
                             double ms_copy_out) {
  memset(st, 0, sizeof *st);
  st->triangles = nt;
  st->polygons = npoly;
  st->frontier_edges = (int64_t)hc[MB_PL_C_FRONTIER_EDGES];
  st->barrier_edge_tips = (int64_t)hc[MB_PL_C_TIPS];
  st->polygons_repaired = (int64_t)hc[MB_PL_C_REPAIRED];
  st->ms_copy_in = mb_pl_elapsed(ev[0], ev[1]);
  st->ms_halfedge = mb_pl_elapsed(ev[1], ev[2]);
  st->ms_label = mb_pl_elapsed(ev[3], ev[4]);
  st->ms_repair = mb_pl_elapsed(ev[4], ev[5]);
  st->ms_traversal = mb_pl_elapsed(ev[5], ev[6]);
  st->ms_copy_out = ms_copy_out;
  st->ms_kernels = st->ms_label + st->ms_repair + st->ms_traversal;
  /* each boundary edge has one frontier half-edge, every other two */
  st->boundary_edges =
      2 * (int64_t)hc[MB_PL_C_FRONTIER_EDGES] - (int64_t)hc[MB_PL_C_FRONTIER_HE];
}

/* The pipeline; *poly is set only on success. */
static mb_error mb_pl_cuda_run(const mb_mesh *tri, const mb_polylla_opts &o, mb_mesh **poly,
                               mb_polylla_stats *st) {
  const double t0 = mb_pl_now_ms();
  const mb_polylla_ties ties = o.ties;
  int64_t **heads = o.heads;
  const int share_xyz = o.share_xyz;
  /* a rank's rows of a larger mesh (o.ids): nv counts the rows and the
   * ghosts, numbered in the order of their ids */
  const mb_polylla_ids *ids = o.ids;
  const int64_t nrows = tri->nv, nv = nrows + (ids ? ids->nghost : 0), nt = tri->nf;
  const int64_t nb = ids ? mb_polylla_ids_below(ids) : 0;
  auto local_id = [&](int64_t g) { return ids ? mb_polylla_ids_local(ids, nb, nrows, g) : g; };
  auto pos = [&](int64_t l) {
    return ids ? mb_polylla_ids_xyz(ids, nb, nrows, tri->xyz, l) : tri->xyz + 3 * l;
  };
  const int nh = (int)(3 * nt);

  /* Declaration order is destruction order reversed: the stream is drained
   * (sync_guard) before the pinned and device buffers go, and the position
   * copy thread is joined (run) before its destination (oxyz) is freed. */
  mb_pl_hbuf oxyz, hoff, hidx, hcount;
  mb_pl_run run;
  MB_CALL_CUDA(cudaStreamCreateWithFlags(&run.s, cudaStreamNonBlocking));
  for (auto &e : run.ev) MB_CALL_CUDA(cudaEventCreate(&e));
  cudaStream_t s = run.s;
  MB_CALL_CUDA(cudaEventRecord(run.ev[0], s)); /* copy in counts the allocations */

  mb_pl_dev d;
  mb_pl_pipe pipe;
  struct sync_guard {
    cudaStream_t s;
    ~sync_guard() { cudaStreamSynchronize(s); }
  } drain{s};
  MB_CALL(mb_pl_dev_alloc(&d, nv, nt));
  int *V = d.V.as<int>();
  int *out = d.out.as<int>(), *off = d.off.as<int>(); /* the polygons, after mb_pl_polygons */

  /* ---- copy in: x, y and the triangles (int32, range-checked) */
  const double t_alloc = mb_pl_now_ms();
  MB_CALL(mb_pl_pipe_create(&pipe, s, std::max(sizeof(double2) * (size_t)nv, sizeof(int) * (size_t)nh)));
  const double *xyz = tri->xyz;
  MB_CALL(mb_pl_upload(
      &pipe, d.xy.p, nv, sizeof(double2),
      [&](char *slot, int64_t b, int64_t e) {
        double *o = (double *)slot;
        if (ids) {
          for (int64_t i = b; i < e; i++) {
            const double *p = pos(i);
            o[2 * (i - b)] = p[0];
            o[2 * (i - b) + 1] = p[1];
          }
          return true;
        }
        for (int64_t i = b; i < e; i++) {
          o[2 * (i - b)] = xyz[3 * i];
          o[2 * (i - b) + 1] = xyz[3 * i + 1];
        }
        return true;
      },
      "positions"));
  const double t_pinned = mb_pl_now_ms();
  std::atomic<int64_t> bad_tri(INT64_MAX);
  const int64_t *fi = tri->face_indices;
  MB_CALL(mb_pl_upload(
      &pipe, d.V.p, nh, sizeof(int),
      [&](char *slot, int64_t b, int64_t e) {
        int *o = (int *)slot;
        bool ok = true;
        for (int64_t i = b; i < e; i++) {
          const int64_t v = local_id(fi[i]);
          ok &= v >= 0 && v < nv;
          o[i - b] = (int)v;
        }
        if (ok) return true;
        for (int64_t i = b; i < e; i++)
          if (local_id(fi[i]) < 0 || local_id(fi[i]) >= nv) {
            int64_t cur = bad_tri.load();
            while (i / 3 < cur && !bad_tri.compare_exchange_weak(cur, i / 3)) {
            }
            break;
          }
        return false;
      },
      "triangles"));
  const char *name = tri->name ? tri->name : "";
  if (bad_tri.load() != INT64_MAX) {
    const int64_t t = bad_tri.load();
    const int64_t *v = fi + 3 * t;
    MB_FAIL(MB_ERR_FORMAT,
            "mesh '%s': triangle %lld (0-based) has a vertex index out of range "
            "(%lld %lld %lld; %lld vertices)",
            name, (long long)t, (long long)v[0], (long long)v[1], (long long)v[2], (long long)nv);
  }
  const double t_up = mb_pl_now_ms();
  MB_CALL_CUDA(cudaEventRecord(run.ev[1], s));

  /* The output's copy of the positions, on host threads while the device
   * works; none where the output shares the input's (share_xyz). */
  if (!share_xyz) {
    oxyz.p = mb_alloc(sizeof(double) * 3 * (size_t)(nrows ? nrows : 1));
    MB_CHECK(oxyz.p, MB_ERR_MEMORY, "out of memory for the positions of %lld vertices",
             (long long)nv);
    double *dst = (double *)oxyz.p;
    const int nw = std::max(1, pipe.nw / 2);
    try {
      run.xyz_copy = std::thread([=]() {
        mb_pl_threads(nw, [&](int w) {
          const int64_t b = 3 * nrows * w / nw, e = 3 * nrows * (w + 1) / nw;
          memcpy(dst + b, xyz + b, sizeof(double) * (size_t)(e - b));
        });
      });
    } catch (...) {
      memcpy(dst, xyz, sizeof(double) * 3 * (size_t)nrows);
    }
  }

  unsigned long long hc[MB_PL_NCOUNTERS];
  MB_CALL(mb_pl_halfedges(&d, s, nv, nt, hc));
  MB_CALL_CUDA(cudaEventRecord(run.ev[2], s));
  /* The CPU's messages and precedence (mb_halfedge_build): out of range
   * (above), non-finite, degenerate, then non-manifold; each the first in
   * triangle order (half-edge order for edges). */
  if (hc[MB_PL_C_NONFINITE] != MB_PL_NONE) {
    const int64_t t = (int64_t)hc[MB_PL_C_NONFINITE];
    const int64_t *v = fi + 3 * t;
    MB_FAIL(MB_ERR_FORMAT,
            "mesh '%s': triangle %lld (0-based) has a vertex with a non-finite coordinate "
            "(vertices %lld %lld %lld)",
            name, (long long)t, (long long)v[0], (long long)v[1], (long long)v[2]);
  }
  if (hc[MB_PL_C_DEGENERATE] != MB_PL_NONE) {
    const int64_t t = (int64_t)hc[MB_PL_C_DEGENERATE];
    const long long a = (long long)fi[3 * t], b = (long long)fi[3 * t + 1],
                    c = (long long)fi[3 * t + 2];
    MB_FAIL(MB_ERR_FORMAT,
            "mesh '%s': triangle %lld (0-based) is degenerate: zero area (collinear or "
            "repeated vertices %lld (%.17g, %.17g), %lld (%.17g, %.17g), %lld (%.17g, %.17g))",
            name, (long long)t, a, pos(local_id(a))[0], pos(local_id(a))[1], b,
            pos(local_id(b))[0], pos(local_id(b))[1], c, pos(local_id(c))[0],
            pos(local_id(c))[1]);
  }
  if (hc[MB_PL_C_NONMANIFOLD] != MB_PL_NONE) {
    const int64_t h = (int64_t)hc[MB_PL_C_NONMANIFOLD];
    int ends[2];
    MB_CALL_CUDA(cudaMemcpy(&ends[0], V + h, sizeof(int), cudaMemcpyDeviceToHost));
    MB_CALL_CUDA(cudaMemcpy(&ends[1], V + (h % 3 == 2 ? h - 2 : h + 1), sizeof(int),
                            cudaMemcpyDeviceToHost));
    auto id_of = [&](int l) { return ids ? mb_polylla_ids_global(ids, nb, nrows, l) : (int64_t)l; };
    const int64_t u = id_of(std::min(ends[0], ends[1])), w = id_of(std::max(ends[0], ends[1]));
    /* the triangles on edge (u, w), in order: the CPU's bucket run */
    long long tris[8];
    int n = 0, total = 0;
    for (int64_t t = 0; t < nt; t++) {
      const int64_t *v = fi + 3 * t;
      const bool hu = v[0] == u || v[1] == u || v[2] == u, hw = v[0] == w || v[1] == w || v[2] == w;
      if (!hu || !hw) continue;
      if (n < 8) tris[n++] = (long long)t;
      total++;
    }
    if (total == 2)
      MB_FAIL(MB_ERR_FORMAT,
              "mesh '%s': triangle %lld (0-based) and triangle %lld both use edge (%lld, %lld) "
              "in the same direction after counter-clockwise orientation (overlapping "
              "triangles); not a planar manifold triangulation",
              name, tris[0], tris[1], (long long)u, (long long)w);
    char list[160] = "";
    size_t len = 0;
    for (int i = 0; i < n && len < sizeof list - 24; i++)
      len += (size_t)snprintf(list + len, sizeof list - len, "%s%lld", i ? ", " : "", tris[i]);
    MB_FAIL(MB_ERR_FORMAT,
            "mesh '%s': triangle %lld (0-based): edge (%lld, %lld) is shared by %d triangles "
            "(%s%s); not a planar manifold triangulation",
            name, n ? tris[0] : -1ll, (long long)u, (long long)w, total, list,
            total > n ? ", ..." : "");
  }

  int npoly = 0;
  int64_t nidx = 0, nleft = 0;
  MB_CALL(mb_pl_polygons(&d, s, nv, nt, ties, o.seeds, o.nseeds, run.ev + 3, hc, name, &npoly,
                         &nidx, &nleft));
  /* every polygon simple: the pinch repair, cut on the host, merged on
   * the device before the copy out */
  int *pheads = d.twin.as<int>(); /* the selected heads (the twins are dead by now) */
  int64_t nsplit = 0;
  const double tp0 = mb_pl_now_ms();
  MB_CALL(mb_pl_pinches(&d, s, tri, ids, nt, &npoly, &nidx, &off, &out, &pheads, &nsplit));
  const double tp1 = mb_pl_now_ms();

  /* ---- copy out into a new mesh: int32 through the pinned slots, widened
   * to the int64 of mb_mesh by the host threads as each chunk lands, into
   * arrays on huge pages (mb_alloc: a fault per 2 MiB, not per 4 KiB) */
  hoff.p = mb_alloc(sizeof(int64_t) * ((size_t)npoly + 1));
  hidx.p = mb_alloc(sizeof(int64_t) * (size_t)(nidx ? nidx : 1));
  hcount.p = mb_alloc(sizeof(double) * (size_t)(npoly ? npoly : 1));
  MB_CHECK(hoff.p && hidx.p && hcount.p, MB_ERR_MEMORY,
           "out of memory for %lld polygons with %lld vertex indices", (long long)npoly,
           (long long)nidx);
  int64_t *o64 = (int64_t *)hoff.p, *i64 = (int64_t *)hidx.p;
  double *vc = (double *)hcount.p;
  const double tc0 = mb_pl_now_ms();
  MB_CALL(mb_pl_download(
      &pipe, off, (int64_t)npoly + 1, sizeof(int),
      [&](char *slot, int64_t b, int64_t e) {
        const int *in = (const int *)slot;
        for (int64_t i = b; i < e; i++) o64[i] = in[i - b];
      },
      "polygon offsets"));
  MB_CALL(mb_pl_download(
      &pipe, out, nidx, sizeof(int),
      [&](char *slot, int64_t b, int64_t e) {
        const int *in = (const int *)slot;
        if (ids)
          for (int64_t i = b; i < e; i++) i64[i] = mb_polylla_ids_global(ids, nb, nrows, in[i - b]);
        else
          for (int64_t i = b; i < e; i++) i64[i] = in[i - b];
      },
      "polygon vertices"));
  mb_pl_threads(pipe.nw, [&](int w) {
    const int64_t b = (int64_t)npoly * w / pipe.nw, e = (int64_t)npoly * (w + 1) / pipe.nw;
    for (int64_t p = b; p < e; p++) vc[p] = (double)(o64[p + 1] - o64[p]);
  });
  const double t_dl = mb_pl_now_ms();
  MB_CHECK(o64[npoly] == nidx, MB_ERR_CUDA,
           "internal error: %lld polygon vertices for %lld frontier half-edges",
           (long long)o64[npoly], (long long)nidx);
  /* the selected heads, where asked for (mb_polylla_opts.heads) */
  if (heads) {
    int64_t *hd = (int64_t *)mb_alloc(sizeof(int64_t) * ((size_t)npoly + 1));
    MB_CHECK(hd, MB_ERR_MEMORY, "out of memory for %d polygon heads", npoly);
    const mb_error de = mb_pl_download(
        &pipe, pheads, (int64_t)npoly, sizeof(int),
        [&](char *slot, int64_t b, int64_t en) {
          const int *in = (const int *)slot;
          for (int64_t i = b; i < en; i++) hd[i] = in[i - b];
        },
        "polygon heads");
    if (de) free(hd);
    MB_CALL(de);
    *heads = hd;
  }
  if (run.xyz_copy.joinable()) run.xyz_copy.join();
  const double tc1 = mb_pl_now_ms();
  if (getenv("MB_POLYLLA_TRACE"))
    fprintf(stderr,
            "mb_polylla_cuda trace: device alloc %.2f ms, pinned %.2f ms (%d x %zu B), upload "
            "%.2f ms; download+widen %.2f ms, vertex_count+join %.2f ms\n",
            t_alloc - t0, t_pinned - t_alloc, pipe.nw, pipe.slot, t_up - t_pinned, t_dl - tc0,
            tc1 - t_dl);

  mb_mesh *m = nullptr;
  MB_CALL(mb_mesh_create(tri->name ? tri->name : "", 0, 0, 0, &m));
  free(m->xyz);
  free(m->face_offsets);
  free(m->face_indices);
  m->kind = MB_KIND_POLYGONS2D;
  m->index = tri->index;
  m->nv = nrows; /* the rows (with o.ids, the ghosts are not the output's) */
  /* shared positions stay the input's on every error path */
  auto drop = [&](mb_mesh *x) {
    if (x && share_xyz && x->xyz == tri->xyz) x->xyz = nullptr;
    mb_mesh_free(x);
  };
  m->xyz = share_xyz ? (double *)tri->xyz : (double *)oxyz.release();
  m->nf = npoly;
  m->face_offsets = (int64_t *)hoff.release();
  m->face_indices = (int64_t *)hidx.release();
  mb_field *ff = (mb_field *)calloc(1, sizeof(mb_field));
  char *fname = mb_strdup("vertex_count");
  if (!ff || !fname) {
    free(ff);
    free(fname);
    drop(m);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for the vertex_count field");
  }
  ff->name = fname;
  ff->ncomp = 1;
  ff->data = (double *)hcount.release();
  m->face_fields = ff;
  m->nface_fields = 1;
  mb_error e = mb_attrs_setf(&m->attrs, "polygons", "%lld", (long long)npoly);
  if (!e) e = mb_attrs_setf(&m->attrs, "frontier_edges", "%lld",
                            (long long)hc[MB_PL_C_FRONTIER_EDGES] + (long long)nsplit);
  if (!e) e = mb_attrs_setf(&m->attrs, "barrier_edge_tips", "%lld", (long long)hc[MB_PL_C_TIPS]);
  if (!e) e = mb_attrs_setf(&m->attrs, "polygons_repaired", "%lld",
                            (long long)hc[MB_PL_C_REPAIRED]);
  if (!e) e = mb_attrs_setf(&m->attrs, "pinches_split", "%lld", (long long)nsplit);
  if (e) {
    drop(m);
    MB_CALL(e);
  }

  if (st) {
    mb_pl_fill_stats(st, nt, npoly, hc, run.ev, tc1 - tc0);
    st->frontier_edges += nsplit;
    st->pinches_split = nsplit;
  }
  if (o.left_out) { /* the triangles of the regions left out, sorted */
    int64_t *l = (int64_t *)malloc(sizeof(int64_t) * (size_t)(nleft ? nleft : 1));
    std::vector<int> q((size_t)nleft);
    if (nleft && l)
      MB_CALL_CUDA(cudaMemcpy(q.data(), d.queue.p, sizeof(int) * (size_t)nleft,
                              cudaMemcpyDeviceToHost));
    if (!l) {
      drop(m);
      MB_FAIL(MB_ERR_MEMORY, "out of memory for %lld triangles left out", (long long)nleft);
    }
    std::sort(q.begin(), q.end());
    for (int64_t i = 0; i < nleft; i++) l[i] = q[(size_t)i];
    *o.left_out = l;
    if (o.nleft_out) *o.nleft_out = nleft;
  }
  if (getenv("MB_POLYLLA_TRACE"))
    fprintf(stderr,
            "mb_polylla_cuda trace: half-edges to polygons (device) %.2f ms, pinch repair %.2f "
            "ms (%lld cuts), output mesh and left-out %.2f ms, whole call %.2f ms\n",
            tp0 - t_up, tp1 - tp0, (long long)nsplit, mb_pl_now_ms() - tc1, mb_pl_now_ms() - t0);
  if (st) st->ms_total = mb_pl_now_ms() - t0;
  *poly = m;
  return MB_SUCCESS;
}

/* ----------------------------------------------------------- C interface */

extern "C" mb_error mb_polylla_cuda(const mb_mesh *tri, const mb_polylla_opts *opts,
                                    mb_mesh **poly, mb_polylla_stats *stats) {
  MB_CHECK(tri && poly, MB_ERR_ARG, "mb_polylla_cuda: NULL argument");
  *poly = nullptr;
  /* The CPU's argument checks, in its order and words (mb_polylla_cpu,
   * mb_halfedge_build). */
  const char *name = tri->name ? tri->name : "";
  MB_CHECK(tri->kind == MB_KIND_TRIANGULATION2D, MB_ERR_ARG,
           "mesh '%s' is of kind %s; Polylla needs a triangulation2d (every face a triangle)",
           name, mb_kind_name(tri->kind));
  const int64_t nf = tri->nf, nv = tri->nv + (opts && opts->ids ? opts->ids->nghost : 0);
  MB_CHECK(nf > 0 && nv > 0, MB_ERR_ARG, "mesh '%s' has no triangles (%lld faces, %lld vertices)",
           name, (long long)nf, (long long)nv);
  MB_CHECK(nf <= MB_PL_I32_MAX / 3 && nv <= MB_PL_I32_MAX, MB_ERR_ARG,
           "mesh '%s' is too large for 32-bit half-edge ids (%lld triangles, %lld vertices; "
           "at most %d triangles)",
           name, (long long)nf, (long long)nv, (int)(MB_PL_I32_MAX / 3));
  MB_CHECK(tri->xyz && tri->face_offsets && tri->face_indices, MB_ERR_ARG,
           "mesh '%s' has no arrays", name);
  const int64_t *fo = tri->face_offsets;
  std::atomic<int64_t> bad(INT64_MAX); /* the first face that is no triangle */
  const int nw = nf < (1 << 20) ? 1 : mb_pl_nthreads();
  mb_pl_threads(nw, [&](int w) {
    for (int64_t f = nf * w / nw, e = nf * (w + 1) / nw; f < e; f++)
      if (fo[f] != 3 * f || fo[f + 1] != 3 * f + 3) {
        int64_t cur = bad.load();
        while (f < cur && !bad.compare_exchange_weak(cur, f)) {
        }
        break;
      }
  });
  const int64_t f = bad.load();
  MB_CHECK(f == INT64_MAX, MB_ERR_ARG,
           "mesh '%s': face %lld (0-based) has %lld vertices; Polylla needs a triangulation "
           "(every face a triangle)",
           name, (long long)f, f == INT64_MAX ? 0ll : (long long)(fo[f + 1] - fo[f]));
  mb_polylla_opts o = opts ? *opts : mb_polylla_opts{};
  if (o.left_out) *o.left_out = nullptr;
  mb_error e = mb_pl_cuda_run(tri, o, poly, stats);
  if (e != MB_SUCCESS) {
    mb_error_trace(__FILE__, __LINE__, __func__);
    (void)cudaGetLastError(); /* leave no sticky launch error behind */
  }
  return e;
}

/* Median of v (sorted in place); v non-empty. */
static double mb_pl_median(std::vector<double> &v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The median of each time of runs (counts from the first run). */
static mb_polylla_stats mb_pl_median_stats(const std::vector<mb_polylla_stats> &runs) {
  mb_polylla_stats m = runs[0];
  double mb_polylla_stats::*f[] = {&mb_polylla_stats::ms_copy_in,  &mb_polylla_stats::ms_halfedge,
                                   &mb_polylla_stats::ms_label,    &mb_polylla_stats::ms_repair,
                                   &mb_polylla_stats::ms_traversal, &mb_polylla_stats::ms_copy_out,
                                   &mb_polylla_stats::ms_kernels,  &mb_polylla_stats::ms_total};
  for (auto p : f) {
    std::vector<double> v;
    for (const auto &r : runs) v.push_back(r.*p);
    m.*p = mb_pl_median(v);
  }
  return m;
}

extern "C" mb_error mb_polylla_cuda_bench(const mb_mesh *tri, int warmup, int repeats,
                                          mb_polylla_stats *median, double *copy_gbs) {
  MB_CHECK(tri && median && copy_gbs, MB_ERR_ARG, "mb_polylla_cuda_bench: NULL argument");
  MB_CHECK(warmup >= 0 && repeats >= 1, MB_ERR_ARG,
           "mb_polylla_cuda_bench: need warmup >= 0 and repeats >= 1 (got %d, %d)", warmup,
           repeats);
  std::vector<mb_polylla_stats> runs;
  for (int r = 0; r < warmup + repeats; r++) {
    mb_mesh *poly = nullptr;
    mb_polylla_stats st;
    mb_polylla_opts o = {};
    o.share_xyz = 1; /* as a job runs it */
    MB_CALL(mb_polylla_cuda(tri, &o, &poly, &st));
    if (poly->xyz == tri->xyz) poly->xyz = nullptr; /* tri's */
    mb_mesh_free(poly);
    if (r >= warmup) runs.push_back(st);
  }
  *median = mb_pl_median_stats(runs);
  MB_CALL(mb_cuda_copy_bandwidth((size_t)1 << 30, copy_gbs));
  return MB_SUCCESS;
}

/* Page-locked host memory, freed on every path. */
struct mb_pl_pinned {
  void *p = nullptr;
  ~mb_pl_pinned() {
    if (p) cudaFreeHost(p);
  }
};

/* One run of the pinned-array path (see mb_polylla_cuda_bench_pinned). */
static mb_error mb_pl_pinned_run(int64_t nv, int64_t nt, const void *hxy, const void *htri,
                                 int *hoff, int *hout, mb_polylla_stats *st, int *npoly,
                                 int64_t *nidx) {
  mb_pl_run run;
  MB_CALL_CUDA(cudaStreamCreateWithFlags(&run.s, cudaStreamNonBlocking));
  for (auto &e : run.ev) MB_CALL_CUDA(cudaEventCreate(&e));
  cudaStream_t s = run.s;
  MB_CALL_CUDA(cudaEventRecord(run.ev[0], s));
  mb_pl_dev d;
  struct sync_guard {
    cudaStream_t s;
    ~sync_guard() { cudaStreamSynchronize(s); }
  } drain{s};
  MB_CALL(mb_pl_dev_alloc(&d, nv, nt));
  MB_CALL_CUDA(cudaMemcpyAsync(d.xy.p, hxy, sizeof(double2) * (size_t)nv, cudaMemcpyHostToDevice, s));
  MB_CALL_CUDA(cudaMemcpyAsync(d.V.p, htri, sizeof(int) * 3 * (size_t)nt, cudaMemcpyHostToDevice, s));
  MB_CALL_CUDA(cudaEventRecord(run.ev[1], s));
  unsigned long long hc[MB_PL_NCOUNTERS];
  MB_CALL(mb_pl_halfedges(&d, s, nv, nt, hc));
  MB_CALL_CUDA(cudaEventRecord(run.ev[2], s));
  MB_CHECK(hc[MB_PL_C_NONFINITE] == MB_PL_NONE && hc[MB_PL_C_DEGENERATE] == MB_PL_NONE &&
               hc[MB_PL_C_NONMANIFOLD] == MB_PL_NONE,
           MB_ERR_FORMAT, "not a valid planar triangulation (see mb_polylla_cuda for details)");
  int64_t nleft = 0;
  MB_CALL(mb_pl_polygons(&d, s, nv, nt, MB_POLYLLA_TIES_KEY, nullptr, 0, run.ev + 3, hc, "pinned",
                         npoly, nidx, &nleft));
  const double tc0 = mb_pl_now_ms();
  MB_CALL_CUDA(cudaMemcpyAsync(hoff, d.off.p, sizeof(int) * ((size_t)*npoly + 1),
                               cudaMemcpyDeviceToHost, s));
  MB_CALL_CUDA(cudaMemcpyAsync(hout, d.out.p, sizeof(int) * (size_t)*nidx, cudaMemcpyDeviceToHost, s));
  MB_CALL_CUDA(cudaStreamSynchronize(s));
  const double tc1 = mb_pl_now_ms();
  mb_pl_fill_stats(st, nt, *npoly, hc, run.ev, tc1 - tc0);
  st->ms_total = 0; /* set by the caller after the device arrays are freed */
  return MB_SUCCESS;
}

extern "C" mb_error mb_polylla_cuda_bench_pinned(const mb_mesh *tri, int warmup, int repeats,
                                                 mb_polylla_stats *median) {
  MB_CHECK(tri && median && warmup >= 0 && repeats >= 1, MB_ERR_ARG,
           "mb_polylla_cuda_bench_pinned: bad argument");
  mb_mesh *ref = nullptr;
  mb_polylla_stats rst;
  MB_CALL(mb_polylla_cuda(tri, NULL, &ref, &rst)); /* the checks, and the polygons to match */
  struct mesh_guard {
    mb_mesh *m;
    ~mesh_guard() { mb_mesh_free(m); }
  } g{ref};
  const int64_t nv = tri->nv, nt = tri->nf, nh = 3 * nt;
  mb_pl_pinned hxy, htri, hoff, hout;
  MB_CALL_CUDA(cudaMallocHost(&hxy.p, sizeof(double) * 2 * (size_t)nv));
  MB_CALL_CUDA(cudaMallocHost(&htri.p, sizeof(int) * (size_t)nh));
  MB_CALL_CUDA(cudaMallocHost(&hoff.p, sizeof(int) * ((size_t)nh / 2 + 2)));
  MB_CALL_CUDA(cudaMallocHost(&hout.p, sizeof(int) * (size_t)nh));
  double *xy = (double *)hxy.p;
  int *t32 = (int *)htri.p;
  for (int64_t i = 0; i < nv; i++) {
    xy[2 * i] = tri->xyz[3 * i];
    xy[2 * i + 1] = tri->xyz[3 * i + 1];
  }
  for (int64_t k = 0; k < nh; k++) t32[k] = (int)tri->face_indices[k];
  std::vector<mb_polylla_stats> runs;
  int npoly = 0;
  int64_t nidx = 0;
  for (int r = 0; r < warmup + repeats; r++) {
    mb_polylla_stats st;
    const double t0 = mb_pl_now_ms();
    MB_CALL(mb_pl_pinned_run(nv, nt, hxy.p, htri.p, (int *)hoff.p, (int *)hout.p, &st, &npoly,
                             &nidx));
    st.ms_total = mb_pl_now_ms() - t0; /* device arrays freed too */
    if (r >= warmup) runs.push_back(st);
  }
  *median = mb_pl_median_stats(runs);
  /* the kernels' polygons are the output where no polygon is pinched; the
   * host's pinch repair (mb_polylla_split_pinches) is not in this path */
  median->pinches_split = rst.pinches_split;
  if (rst.pinches_split) return MB_SUCCESS;
  const int *o = (const int *)hoff.p, *v = (const int *)hout.p;
  bool same = npoly == ref->nf && nidx == ref->face_offsets[ref->nf];
  for (int64_t p = 0; same && p <= npoly; p++) same = o[p] == ref->face_offsets[p];
  for (int64_t k = 0; same && k < nidx; k++) same = v[k] == ref->face_indices[k];
  MB_CHECK(same, MB_ERR_CUDA, "the pinned-array path gave other polygons than mb_polylla_cuda");
  return MB_SUCCESS;
}
