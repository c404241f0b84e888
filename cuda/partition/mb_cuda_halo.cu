/* meshbatch: halo exchange of device arrays (see mb_cuda_halo.h). */
#include <cuda.h> /* driver types of the stream memory operations (no libcuda link) */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <new>
#include <utility>
#include <vector>

#include "mb_cuda_halo.h"
#include "mb_cuda_private.cuh"
#include "mb_mpi.h"

namespace {

constexpr int BLOCK = 256;

unsigned grid_of(int64_t n) { return (unsigned)((n + BLOCK - 1) / BLOCK); }

/* out[c + ncomp q] = x[c + ncomp idx[q]] as float64: owned values a neighbour needs. */
template <typename T>
__global__ void __launch_bounds__(BLOCK)
    pack_kernel(int64_t n, int ncomp, const int32_t *__restrict__ idx, const T *__restrict__ x,
                double *__restrict__ out) {
  const int64_t k = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  if (k < n * ncomp) out[k] = (double)x[(int64_t)ncomp * idx[k / ncomp] + k % ncomp];
}

/* x[c + ncomp idx[q]] = in[c + ncomp q]: ghost values from their owners. */
template <typename T>
__global__ void __launch_bounds__(BLOCK)
    unpack_kernel(int64_t n, int ncomp, const int32_t *__restrict__ idx,
                  const double *__restrict__ in, T *__restrict__ x) {
  const int64_t k = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  if (k < n * ncomp) x[(int64_t)ncomp * idx[k / ncomp] + k % ncomp] = (T)in[k];
}

/* x[c + ncomp row[u]] += in[c + ncomp q[j]] for j in [start[u], start[u+1]),
 * in ascending j, one addition in T each: the reverse exchange's sums in the
 * engine's fixed order (ascending neighbour rank, then plan order), one
 * thread per owned row and component, so no two threads touch one value. */
template <typename T>
__global__ void __launch_bounds__(BLOCK)
    add_kernel(int64_t nrows, int ncomp, const int32_t *__restrict__ row,
               const int32_t *__restrict__ start, const int32_t *__restrict__ q,
               const double *__restrict__ in, T *__restrict__ x) {
  const int64_t k = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  if (k >= nrows * ncomp) return;
  const int64_t u = k / ncomp, c = k % ncomp, at = (int64_t)ncomp * row[u] + c;
  T acc = x[at];
  for (int32_t j = start[u]; j < start[u + 1]; j++) acc = acc + (T)in[(int64_t)ncomp * q[j] + c];
  x[at] = acc;
}

/* Box kernels: one box of rows (mb_halo_box) <-> buf, values of the
 * array's own type T, buffer position q = ((k n1 + j) n2 + i) ncomp + c.
 * A grid row (blockIdx.y) per k, 32-bit index arithmetic within it (64-bit
 * divisions per value cost about as much as a stencil step's interior on a
 * split 1024^3 grid); NC = 1 fixes ncomp at 1 (grid faces), NC = 0 reads
 * it from ncomp. mode: BOX_PACK x -> buf, BOX_UNPACK buf -> x, BOX_ADD
 * x += buf (rows of one box are distinct: no two threads touch one value). */
enum box_mode { BOX_PACK, BOX_UNPACK, BOX_ADD };

template <typename T, int NC, int MODE>
__global__ void __launch_bounds__(BLOCK)
    box_kernel(mb_halo_box b, int ncomp_rt, T *__restrict__ x, T *__restrict__ buf) {
  const unsigned ncomp = NC ? (unsigned)NC : (unsigned)ncomp_rt;
  const unsigned r = blockIdx.x * BLOCK + threadIdx.x;
  const unsigned inner = (unsigned)b.n[1] * (unsigned)b.n[2];
  if (r >= inner * ncomp) return;
  const unsigned c = NC == 1 ? 0u : r % ncomp, p = NC == 1 ? r : r / ncomp;
  const unsigned i = p % (unsigned)b.n[2], j = p / (unsigned)b.n[2];
  const int64_t k = blockIdx.y;
  const int64_t row = b.start + k * b.stride[0] + (int64_t)j * b.stride[1] + (int64_t)i * b.stride[2];
  const int64_t at = row * (int64_t)ncomp + c, q = k * (int64_t)inner * ncomp + r;
  if (MODE == BOX_PACK) buf[q] = x[at];
  else if (MODE == BOX_UNPACK) x[at] = buf[q];
  else x[at] = x[at] + buf[q];
}

template <typename T, int MODE>
mb_error launch_box(const mb_halo_box &b, int ncomp, T *x, T *buf, cudaStream_t s) {
  const int64_t inner = b.n[1] * b.n[2] * ncomp;
  if (!inner || !b.n[0]) return MB_SUCCESS;
  MB_CHECK(b.n[0] <= 65535 && inner < (1ll << 31), MB_ERR_UNSUPPORTED,
           "halo box of %lld x %lld x %lld rows of %d values is beyond the box kernel's grid",
           (long long)b.n[0], (long long)b.n[1], (long long)b.n[2], ncomp);
  const dim3 grid((unsigned)((inner + BLOCK - 1) / BLOCK), (unsigned)b.n[0]);
  if (ncomp == 1) box_kernel<T, 1, MODE><<<grid, BLOCK, 0, s>>>(b, 1, x, buf);
  else box_kernel<T, 0, MODE><<<grid, BLOCK, 0, s>>>(b, ncomp, x, buf);
  MB_CHECK_LAUNCH(MODE == BOX_PACK ? "halo box pack" : MODE == BOX_UNPACK ? "halo box unpack"
                                                                          : "halo box add");
  return MB_SUCCESS;
}

/* Every box of one side of a box plan, in order, between x and the packed
 * buffer buf (values of T). The boxes run one after another on s, so the
 * sums of BOX_ADD follow the engine's fixed order. */
template <typename T, int MODE>
mb_error launch_boxes(int64_t nboxes, const mb_halo_box *boxes, int ncomp, T *x, T *buf,
                      cudaStream_t s, const char *skip = nullptr) {
  int64_t q = 0;
  for (int64_t b = 0; b < nboxes; b++) {
    if (!skip || !skip[b]) MB_CALL((launch_box<T, MODE>(boxes[b], ncomp, x, buf + q * ncomp, s)));
    q += mb_halo_box_rows(&boxes[b]);
  }
  return MB_SUCCESS;
}

/* Whether box b can move by one strided copy of the copy engines
 * (cudaMemcpy3DAsync) between the array and a packed buffer: its innermost
 * extent contiguous (stride 1) and its two outer strides a pitched 3D
 * layout (the outermost stride a whole number of middle strides, at least
 * n[1] of them). */
bool box_by_copies(const mb_halo_box &b) {
  if (!b.n[0] || !b.n[1] || !b.n[2]) return false;
  if (b.n[2] > 1 && b.stride[2] != 1) return false;
  if (b.n[1] > 1 && b.stride[1] < b.n[2]) return false;
  if (b.n[0] > 1) {
    const int64_t mid = b.n[1] > 1 ? b.stride[1] : b.stride[0];
    if (mid <= 0 || b.stride[0] % mid || b.stride[0] / mid < b.n[1] ||
        (b.n[1] == 1 && b.stride[0] < b.n[2]))
      return false;
  }
  return true;
}

/* Whether box b's rows are one contiguous run from b.start (C order, no
 * gap): such a box moves by one plain copy. */
bool box_contiguous(const mb_halo_box &b) {
  int64_t next = 1;
  for (int a = 2; a >= 0; a--) {
    if (b.n[a] > 1 && b.stride[a] != next) return false;
    next *= b.n[a];
  }
  return true;
}

/* Enqueue on s one strided copy of the copy engines between box b of the
 * array at x (rows of `row` bytes) and its packed rows at buf (C order:
 * ((k n1 + j) n2 + i)); to_buf: array -> buf, else buf -> array. x and
 * buf may be on different devices (UVA: a neighbour's mapped buffer).
 * box_by_copies(b) must hold. */
cudaError_t copy_box(const mb_halo_box &b, size_t row, char *x, char *buf, bool to_buf,
                     cudaStream_t s) {
  const size_t w = (size_t)b.n[2] * row;
  size_t pitch = w, ysize = (size_t)b.n[1];
  if (b.n[1] > 1) {
    pitch = (size_t)b.stride[1] * row;
    if (b.n[0] > 1) ysize = (size_t)(b.stride[0] / b.stride[1]);
  } else if (b.n[0] > 1) {
    pitch = (size_t)b.stride[0] * row;
    ysize = 1;
  }
  cudaMemcpy3DParms p;
  memset(&p, 0, sizeof p);
  const cudaPitchedPtr arr = make_cudaPitchedPtr(x + (size_t)b.start * row, pitch, w, ysize);
  const cudaPitchedPtr packed = make_cudaPitchedPtr(buf, w, w, (size_t)b.n[1]);
  p.srcPtr = to_buf ? arr : packed;
  p.dstPtr = to_buf ? packed : arr;
  p.extent = make_cudaExtent(w, (size_t)b.n[1], (size_t)b.n[0]);
  p.kind = cudaMemcpyDefault;
  return cudaMemcpy3DAsync(&p, s);
}

__global__ void narrow_kernel(int64_t n, const int64_t *__restrict__ src, int32_t *__restrict__ dst) {
  const int64_t k = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  if (k < n) dst[k] = (int32_t)src[k];
}

mb_error upload_i32(mb_dbuf *dst, const int64_t *src, int64_t n, cudaStream_t stream,
                    const char *what) {
  MB_CALL(mb_dbuf_alloc(dst, sizeof(int32_t) * (size_t)n, what));
  if (n == 0) return MB_SUCCESS;
  mb_dbuf stage;
  MB_CALL(mb_dbuf_alloc(&stage, sizeof(int64_t) * (size_t)n, what));
  MB_CALL_CUDA(cudaMemcpyAsync(stage.p, src, sizeof(int64_t) * (size_t)n, cudaMemcpyHostToDevice,
                               stream));
  narrow_kernel<<<grid_of(n), BLOCK, 0, stream>>>(n, stage.as<int64_t>(), dst->as<int32_t>());
  MB_CHECK_LAUNCH(what);
  MB_CALL_CUDA(cudaStreamSynchronize(stream)); /* before the staging buffer is freed */
  return MB_SUCCESS;
}

} // namespace

struct mb_cuda_halo {
  const mb_halo *plan = nullptr;
  int ncomp = 3, real_bytes = 8;
  /* a box plan: boxes packed by box kernels, values staged and sent in the
   * array's own precision (elem = real_bytes); else index lists, values
   * staged as float64 (elem = 8) */
  int boxed = 0, elem = 8;
  int64_t nbox[2] = {0, 0};
  const mb_halo_box *box[2] = {nullptr, nullptr};
  const int64_t *boff[2] = {nullptr, nullptr}; /* the boxes of neighbour k: [boff[k], boff[k+1]) */
  /* MPI: post the messages at end (begin only enqueues the pack and the
   * copy to the host), mb_cuda_halo_set_post_at_end */
  int post_at_end = 0, posted = 0;
  int64_t nsend = 0, nrecv = 0;
  mb_dbuf send_idx, recv_idx, send_stage, recv_stage;
  void *host_send = nullptr, *host_recv = nullptr; /* pinned, elem bytes per value */
  cudaStream_t stream = nullptr;                     /* the caller's */
  cudaStream_t halo_stream = nullptr;                /* urgent: every exchange's kernels */
  cudaEvent_t rows_done = nullptr, halo_done = nullptr;
  /* the engine's exchanges (mb_cuda_halo_begin/end): the owned rows that
   * receive reverse contributions (CSR: rev_row[u] gets the send-buffer rows
   * rev_q[rev_start[u] .. rev_start[u+1]), ascending), and the exchange in
   * flight: 0 none, else 1 + its mb_halo_dir; its transport */
  int64_t rev_nrows = -1;
  mb_dbuf rev_row, rev_start, rev_q;
  int inflight = 0;
  mb_halo_transport transport = MB_HALO_MPI;
  /* IPC transport (ipc_setup, at the first IPC exchange): 0 not set up, 1
   * ready, -1 refused (agreed over the plan's communicator). ipc_area is
   * this rank's exported device memory: ipc_flag_bytes of uint32 flags
   * (one per neighbour slot: the count of exchanges whose rows that
   * neighbour has delivered), then two parities of ipc_parity_bytes each,
   * every parity holding nrecv forward rows (recv_stage's layout) then
   * nsend reverse rows (send_stage's layout). peer[k]: where neighbour slot
   * k's area is mapped here and where this rank's rows and flag go in it.
   * ipc_seq counts the IPC exchanges of this halo (every rank of the plan
   * counts the same: exchanges are made in step). */
  struct ipc_peer {
    char *base = nullptr;     /* the neighbour's ipc_area, mapped (or ours, for ourselves) */
    int opened = 0;           /* base came from cudaIpcOpenMemHandle in this slot */
    int64_t fwd_off[2] = {0, 0}, rev_off[2] = {0, 0}, flag_off = 0; /* bytes into base */
    /* the neighbour's shared arrays, mapped (ours, for ourselves), and the
     * allocations this slot opened for them (closed at release) */
    char *array[MB_CUDA_HALO_MAX_ARRAYS] = {};
    std::vector<char *> array_opened;
    std::vector<int64_t> rstart; /* the neighbour's receive boxes of this slot: their first rows */
  };
  int ipc = 0;
  uint32_t ipc_seq = 0;
  /* IPC, box plans, forward: the boxes (send side 0, receive side 1) that
   * the copy engines move straight between the array and the neighbour's
   * area (copy_box), with no pack or unpack kernel; the others go through
   * the stages and the box kernels. Empty: every box by kernels. */
  std::vector<char> by_copies[2];
  /* The caller's arrays shared for direct copies (mb_cuda_halo_share_arrays)
   * and, from the IPC setup, the masks of a forward exchange of one of them
   * (send side 0, receive side 1): 2 where a box moves straight from the
   * sender's array into the receiver's (both contiguous, the same rows),
   * else by_copies' 1 or 0; empty where no box moves so. */
  int narrays = 0;
  void *arrays[MB_CUDA_HALO_MAX_ARRAYS] = {};
  std::vector<char> direct[2];
  char *ipc_area = nullptr;
  size_t ipc_flag_bytes = 0, ipc_parity_bytes = 0;
  std::vector<ipc_peer> peer;
  void ipc_release() {
    if (halo_stream && ipc_area) cudaStreamSynchronize(halo_stream); /* our copies into peers */
    for (ipc_peer &q : peer) {
      if (q.opened) cudaIpcCloseMemHandle(q.base);
      for (char *a : q.array_opened) cudaIpcCloseMemHandle(a);
    }
    peer.clear();
    if (ipc_area) cudaFree(ipc_area);
    ipc_area = nullptr;
  }
  /* the timing events of the next exchange (mb_cuda_halo_time_next), or none */
  cudaEvent_t tev[4] = {nullptr, nullptr, nullptr, nullptr};
  int timed = 0;
  /* record timing event k on the halo stream where the next exchange is timed */
  cudaError_t mark(int k) { return timed ? cudaEventRecord(tev[k], halo_stream) : cudaSuccess; }
  ~mb_cuda_halo() {
    ipc_release();
    if (host_send) cudaFreeHost(host_send);
    if (host_recv) cudaFreeHost(host_recv);
    if (halo_done) cudaEventDestroy(halo_done);
    if (rows_done) cudaEventDestroy(rows_done);
    if (halo_stream) cudaStreamDestroy(halo_stream);
  }
};

static mb_error halo_setup(mb_cuda_halo *h) {
  h->boxed = mb_halo_send_boxes(h->plan, &h->nbox[0], &h->box[0], &h->boff[0]);
  (void)mb_halo_recv_boxes(h->plan, &h->nbox[1], &h->box[1], &h->boff[1]);
  if (h->boxed) {
    int nn;
    const int *ranks;
    const int64_t *soff, *roff;
    mb_halo_neighbors(h->plan, &nn, &ranks, &soff, &roff);
    h->nsend = soff[nn];
    h->nrecv = roff[nn];
    h->elem = h->real_bytes;
  } else {
    const int64_t *send_idx, *recv_idx;
    mb_halo_send_indices(h->plan, &h->nsend, &send_idx);
    mb_halo_recv_indices(h->plan, &h->nrecv, &recv_idx);
    MB_CHECK(h->nsend < INT32_MAX && h->nrecv < INT32_MAX, MB_ERR_ARG,
             "halo of %lld / %lld rows: the device indexes with int32", (long long)h->nsend,
             (long long)h->nrecv);
    MB_CALL(upload_i32(&h->send_idx, send_idx, h->nsend, h->stream, "halo send indices"));
    MB_CALL(upload_i32(&h->recv_idx, recv_idx, h->nrecv, h->stream, "halo receive indices"));
    h->elem = 8;
  }
  const size_t row = (size_t)h->elem * (size_t)h->ncomp;
  MB_CALL(mb_dbuf_alloc(&h->send_stage, row * (size_t)h->nsend, "halo send buffer"));
  MB_CALL(mb_dbuf_alloc(&h->recv_stage, row * (size_t)h->nrecv, "halo receive buffer"));
  MB_CALL_CUDA(cudaMallocHost(&h->host_send, row * (size_t)(h->nsend + 1)));
  MB_CALL_CUDA(cudaMallocHost(&h->host_recv, row * (size_t)(h->nrecv + 1)));
  MB_CALL(mb_stream_create_urgent(&h->halo_stream));
  MB_CALL_CUDA(cudaEventCreateWithFlags(&h->rows_done, cudaEventDisableTiming));
  MB_CALL_CUDA(cudaEventCreateWithFlags(&h->halo_done, cudaEventDisableTiming));
  return MB_SUCCESS;
}

extern "C" mb_error mb_cuda_halo_create(const mb_halo *plan, int ncomp, int real_bytes,
                                        void *stream, mb_cuda_halo **out) {
  MB_CHECK(plan && out && ncomp > 0 && (real_bytes == 4 || real_bytes == 8), MB_ERR_ARG,
           "mb_cuda_halo_create: bad argument (ncomp %d, real_bytes %d)", ncomp, real_bytes);
  mb_cuda_halo *h = new (std::nothrow) mb_cuda_halo;
  MB_CHECK(h, MB_ERR_MEMORY, "out of memory");
  h->plan = plan;
  h->ncomp = ncomp;
  h->real_bytes = real_bytes;
  h->stream = (cudaStream_t)stream;
  mb_error e = halo_setup(h);
  if (e) {
    delete h;
    MB_CALL(e);
  }
  *out = h;
  return MB_SUCCESS;
}

extern "C" void mb_cuda_halo_set_post_at_end(mb_cuda_halo *h, int at_end) {
  h->post_at_end = at_end != 0;
}

extern "C" void *mb_cuda_halo_stream(mb_cuda_halo *h) { return (void *)h->halo_stream; }

extern "C" void mb_cuda_halo_time_next(mb_cuda_halo *h, void *const ev[4]) {
  h->timed = ev != nullptr;
  for (int k = 0; k < 4; k++) h->tev[k] = ev ? (cudaEvent_t)ev[k] : nullptr;
}

/* One side of a box plan (0: send boxes, 1: receive boxes) between x and
 * the rows of that side in `stage` (NULL: the side's device stage; the IPC
 * transport passes its receive buffer, laid out as the stage). */
template <int MODE>
static mb_error enqueue_boxes(mb_cuda_halo *h, int side, const void *x, cudaStream_t s,
                              void *stage = nullptr, const char *skip = nullptr) {
  if (!stage) stage = side ? h->recv_stage.p : h->send_stage.p;
  if (h->real_bytes == 4)
    MB_CALL((launch_boxes<float, MODE>(h->nbox[side], h->box[side], h->ncomp, (float *)x,
                                       (float *)stage, s, skip)));
  else
    MB_CALL((launch_boxes<double, MODE>(h->nbox[side], h->box[side], h->ncomp, (double *)x,
                                        (double *)stage, s, skip)));
  return MB_SUCCESS;
}

/* The IPC forward exchange's box masks (by_copies), at its setup. By
 * default every box goes through the stages and the box kernels; with the
 * environment variable MB_HALO_IPC_PACK=copies, every box that
 * box_by_copies accepts moves by the copy engines instead (no pack or
 * unpack kernel). Measured on 4 H200s (docs/benchmarks.md, "The stencil's
 * shell on the halo stream"): strong 1024^3 heat 3.61-3.62x with copies
 * against 3.65x with the kernels, the interior slower (0.830 against 0.815
 * ms) and the unpack's copy slower than its kernel (0.14 against 0.11
 * ms), so the kernels stay the default and the copies a choice for
 * measurements (the *_copies tests run them). */
static void ipc_choose_copies(mb_cuda_halo *h) {
  const char *env = getenv("MB_HALO_IPC_PACK");
  const bool copies = env && !strcmp(env, "copies");
  for (int side = 0; side < 2; side++) {
    h->by_copies[side].assign(h->boxed && copies ? (size_t)h->nbox[side] : 0, 0);
    for (size_t b = 0; b < h->by_copies[side].size(); b++)
      h->by_copies[side][b] = box_by_copies(h->box[side][b]);
    /* the shared arrays' masks: ipc_open left 1 on the direct boxes */
    std::vector<char> &d = h->direct[side];
    if (std::find(d.begin(), d.end(), 1) == d.end()) {
      d.clear();
      continue;
    }
    for (size_t b = 0; b < d.size(); b++)
      d[b] = d[b] ? 2 : h->by_copies[side].empty() ? 0 : h->by_copies[side][b];
  }
}

/* Which of the shared arrays x is (mb_cuda_halo_share_arrays), or -1. */
static int shared_index(const mb_cuda_halo *h, const void *x) {
  for (int a = 0; a < h->narrays; a++)
    if (h->arrays[a] == x) return a;
  return -1;
}

/* The mask of side (0 send, 1 receive) of an IPC forward exchange of x:
 * per box 2 straight between the arrays (x shared), 1 by copies through
 * the stage, 0 by the box kernels; NULL where every box takes the kernels. */
static const char *copies_mask(const mb_cuda_halo *h, int side, mb_halo_transport t,
                               mb_halo_dir dir, const void *x) {
  if (t != MB_HALO_IPC || dir != MB_HALO_FORWARD) return nullptr;
  if (!h->direct[side].empty() && shared_index(h, x) >= 0) return h->direct[side].data();
  if (h->by_copies[side].empty()) return nullptr;
  return h->by_copies[side].data();
}

static mb_error enqueue_pack(mb_cuda_halo *h, const void *x, cudaStream_t s,
                             const char *skip = nullptr) {
  if (h->boxed) return enqueue_boxes<BOX_PACK>(h, 0, x, s, nullptr, skip);
  const int64_t n = h->nsend * h->ncomp;
  if (h->real_bytes == 4)
    pack_kernel<float><<<grid_of(n), BLOCK, 0, s>>>(h->nsend, h->ncomp, h->send_idx.as<int32_t>(),
                                                     (const float *)x, h->send_stage.as<double>());
  else
    pack_kernel<double><<<grid_of(n), BLOCK, 0, s>>>(h->nsend, h->ncomp, h->send_idx.as<int32_t>(),
                                                      (const double *)x, h->send_stage.as<double>());
  MB_CHECK_LAUNCH("halo pack");
  return MB_SUCCESS;
}

/* The ghost rows of x from the received rows `in` (NULL: recv_stage);
 * boxes of skip (a box plan's receive mask, or NULL) left out. */
static mb_error enqueue_unpack(mb_cuda_halo *h, void *x, cudaStream_t s, void *in = nullptr,
                               const char *skip = nullptr) {
  if (h->boxed) return enqueue_boxes<BOX_UNPACK>(h, 1, x, s, in, skip);
  const int64_t n = h->nrecv * h->ncomp;
  const double *rows = in ? (const double *)in : h->recv_stage.as<double>();
  if (h->real_bytes == 4)
    unpack_kernel<float><<<grid_of(n), BLOCK, 0, s>>>(h->nrecv, h->ncomp, h->recv_idx.as<int32_t>(),
                                                       rows, (float *)x);
  else
    unpack_kernel<double><<<grid_of(n), BLOCK, 0, s>>>(h->nrecv, h->ncomp, h->recv_idx.as<int32_t>(),
                                                        rows, (double *)x);
  MB_CHECK_LAUNCH("halo unpack");
  return MB_SUCCESS;
}

/* Enqueue on the halo stream the NCCL exchange of direction dir between
 * the device stages: forward send_stage -> neighbours -> recv_stage,
 * reverse the other way round. Index plans move float64 values
 * (mb_nccl_exchange); box plans one message of the array's own precision
 * per neighbour and direction, carrying its boxes in plan order. */
static mb_error nccl_exchange(mb_cuda_halo *h, mb_nccl *nccl, mb_halo_dir dir) {
  int nn;
  const int *ranks;
  const int64_t *soff, *roff;
  mb_halo_neighbors(h->plan, &nn, &ranks, &soff, &roff);
  const bool fwd = dir == MB_HALO_FORWARD;
  char *out = (char *)(fwd ? h->send_stage.p : h->recv_stage.p);
  char *in = (char *)(fwd ? h->recv_stage.p : h->send_stage.p);
  const int64_t *out_off = fwd ? soff : roff, *in_off = fwd ? roff : soff;
  if (!h->boxed) {
    MB_CALL(mb_nccl_exchange(nccl, h->halo_stream, h->ncomp, (const double *)out, (double *)in, nn,
                             ranks, out_off, in_off));
    return MB_SUCCESS;
  }
  const size_t row = (size_t)h->elem * (size_t)h->ncomp;
  std::vector<mb_nccl_msg> m;
  m.reserve(2 * (size_t)nn);
  for (int k = 0; k < nn; k++) {
    m.push_back({ranks[k], 1, out + row * (size_t)out_off[k],
                 row * (size_t)(out_off[k + 1] - out_off[k])});
    m.push_back({ranks[k], 0, in + row * (size_t)in_off[k],
                 row * (size_t)(in_off[k + 1] - in_off[k])});
  }
  MB_CALL(mb_nccl_group(nccl, h->halo_stream, (int)m.size(), m.data()));
  return MB_SUCCESS;
}

/* Copy a host int32 array to a new device buffer (synchronously). */
static mb_error upload_plain(mb_dbuf *dst, const std::vector<int32_t> &v, const char *what) {
  MB_CALL(mb_dbuf_alloc(dst, sizeof(int32_t) * v.size(), what));
  if (!v.empty())
    MB_CALL_CUDA(cudaMemcpy(dst->p, v.data(), sizeof(int32_t) * v.size(), cudaMemcpyHostToDevice));
  return MB_SUCCESS;
}

/* The reverse sums' CSR, made at the first reverse exchange. */
static mb_error reverse_setup(mb_cuda_halo *h) {
  if (h->rev_nrows >= 0) return MB_SUCCESS;
  int64_t n;
  const int64_t *idx;
  mb_halo_send_indices(h->plan, &n, &idx);
  std::vector<std::pair<int64_t, int32_t>> by_row((size_t)n);
  for (int64_t q = 0; q < n; q++) by_row[(size_t)q] = {idx[q], (int32_t)q};
  std::sort(by_row.begin(), by_row.end()); /* by row, then ascending q */
  std::vector<int32_t> row, start, qs((size_t)n);
  for (size_t j = 0; j < by_row.size(); j++) {
    if (j == 0 || by_row[j].first != by_row[j - 1].first) {
      row.push_back((int32_t)by_row[j].first);
      start.push_back((int32_t)j);
    }
    qs[j] = by_row[j].second;
  }
  start.push_back((int32_t)n);
  MB_CALL(upload_plain(&h->rev_row, row, "halo reverse rows"));
  MB_CALL(upload_plain(&h->rev_start, start, "halo reverse row starts"));
  MB_CALL(upload_plain(&h->rev_q, qs, "halo reverse contributions"));
  h->rev_nrows = (int64_t)row.size();
  return MB_SUCCESS;
}

/* Enqueue on s the gather of the rows that leave in direction dir into
 * their device stage (forward: owned rows into send_stage; reverse: ghost
 * rows into recv_stage). */
static mb_error enqueue_out(mb_cuda_halo *h, mb_halo_dir dir, const void *x, cudaStream_t s,
                           const char *skip = nullptr) {
  if (dir == MB_HALO_FORWARD) {
    if (h->nsend) MB_CALL(enqueue_pack(h, x, s, skip));
    return MB_SUCCESS;
  }
  if (!h->nrecv) return MB_SUCCESS;
  if (h->boxed) return enqueue_boxes<BOX_PACK>(h, 1, x, s);
  const int64_t n = h->nrecv * h->ncomp;
  if (h->real_bytes == 4)
    pack_kernel<float><<<grid_of(n), BLOCK, 0, s>>>(h->nrecv, h->ncomp, h->recv_idx.as<int32_t>(),
                                                     (const float *)x, h->recv_stage.as<double>());
  else
    pack_kernel<double><<<grid_of(n), BLOCK, 0, s>>>(h->nrecv, h->ncomp, h->recv_idx.as<int32_t>(),
                                                      (const double *)x, h->recv_stage.as<double>());
  MB_CHECK_LAUNCH("halo reverse pack");
  return MB_SUCCESS;
}

/* Enqueue on s what arrived in direction dir into x (forward: scatter into
 * the ghost rows; reverse: add into the owned rows in the fixed order: a
 * box plan adds its send boxes one after another on s, each box's rows
 * being distinct; an index plan runs the CSR of owned rows). The rows
 * arrived in `in`, laid out as the direction's incoming stage (NULL: that
 * stage, recv_stage forward, send_stage reverse). Forward, the boxes of
 * skip (the IPC receive mask, copies_mask, or NULL) marked 1 come by the
 * copy engines from `in` instead of the unpack kernels, those marked 2
 * arrived in place. */
static mb_error enqueue_in(mb_cuda_halo *h, mb_halo_dir dir, void *x, cudaStream_t s,
                           void *in = nullptr, const char *skip = nullptr) {
  if (dir == MB_HALO_FORWARD) {
    if (!h->nrecv) return MB_SUCCESS;
    MB_CALL(enqueue_unpack(h, x, s, in, skip));
    if (!skip) return MB_SUCCESS;
    const size_t row = (size_t)h->elem * (size_t)h->ncomp;
    int64_t q = 0;
    for (int64_t b = 0; b < h->nbox[1]; b++) {
      if (skip[b] == 1) /* (2: the neighbour's copy put it in place) */
        MB_CALL_CUDA(copy_box(h->box[1][b], row, (char *)x, (char *)in + row * (size_t)q, false, s));
      q += mb_halo_box_rows(&h->box[1][b]);
    }
    return MB_SUCCESS;
  }
  if (h->boxed) return enqueue_boxes<BOX_ADD>(h, 0, x, s, in);
  if (!h->rev_nrows) return MB_SUCCESS;
  const int64_t n = h->rev_nrows * h->ncomp;
  const double *rows = in ? (const double *)in : h->send_stage.as<double>();
  if (h->real_bytes == 4)
    add_kernel<float><<<grid_of(n), BLOCK, 0, s>>>(
        h->rev_nrows, h->ncomp, h->rev_row.as<int32_t>(), h->rev_start.as<int32_t>(),
        h->rev_q.as<int32_t>(), rows, (float *)x);
  else
    add_kernel<double><<<grid_of(n), BLOCK, 0, s>>>(
        h->rev_nrows, h->ncomp, h->rev_row.as<int32_t>(), h->rev_start.as<int32_t>(),
        h->rev_q.as<int32_t>(), rows, (double *)x);
  MB_CHECK_LAUNCH("halo reverse add");
  return MB_SUCCESS;
}

/* MPI: the host buffers and dtype of direction dir (forward: owned rows
 * leave from host_send, ghosts arrive in host_recv; reverse: the other way
 * round), and the post of the messages. */
static mb_error mpi_post(mb_cuda_halo *h, mb_halo_dir dir) {
  void *out = dir == MB_HALO_FORWARD ? h->host_send : h->host_recv;
  void *in = dir == MB_HALO_FORWARD ? h->host_recv : h->host_send;
  const mb_halo_dtype dt = h->elem == 4 ? MB_HALO_FLOAT32 : MB_HALO_FLOAT64;
  MB_CALL(mb_halo_post((mb_halo *)h->plan, dir, dt, h->ncomp, out, in));
  h->posted = 1;
  return MB_SUCCESS;
}

/* ------------------------------------------------------------ IPC transport
 *
 * For ranks of one node: the halo's rows move GPU to GPU by the copy
 * engines, not by kernels, so the interior's kernels on the caller's stream
 * keep every SM (NCCL's send/receive kernels take some). Each rank exports
 * one device allocation (ipc_area, see the struct) with CUDA IPC; its
 * neighbours map it (cudaIpcOpenMemHandle) at the first IPC exchange. Each
 * exchange n (n = ipc_seq; parity p = n % 2) is, on the halo's urgent
 * stream after the caller's stream's work so far:
 *   pack -> for each neighbour: cudaMemcpyAsync of its rows into the
 *   neighbour's area, parity p, then cuStreamWriteValue32(the neighbour's
 *   flag for us := n + 1) -> for each neighbour: cuStreamWaitValue32(our
 *   flag for it >= n + 1) -> unpack (or reverse sums) straight from our
 *   area, parity p.
 *
 * Why this is correct:
 *  (1) Rows before flag. The flag write follows the copy in the sender's
 *      stream, so it starts after the copy has completed, and the default
 *      write (the v2 API has no CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)
 *      fences the stream's earlier writes before the flag is written, as
 *      __threadfence_system does for a thread. The receiver's unpack follows
 *      its wait in its stream, so it reads rows that the flag announced.
 *  (2) Flags only grow. Exchange n writes n + 1; a wait for n + 1 is never
 *      met by an older exchange's value. GEQ compares cyclically, so the
 *      32-bit count may wrap (ranks are never 2^31 exchanges apart).
 *  (3) Back-pressure without acknowledgements. Rank A copies exchange n + 2
 *      into B's parity p only after A's stream has passed its wait of
 *      exchange n + 1 for B's flag (the exchanges are enqueued in order on
 *      A's one halo stream). B's stream writes that flag value (n + 2) in
 *      exchange n + 1, which B's stream runs after its unpack of exchange n
 *      (B's order: wait n, unpack n, pack n + 1, copies and flags n + 1). So
 *      B has finished reading parity p before A overwrites it; exchange
 *      n + 1 goes to the other parity. This holds for every use of the
 *      engine (forward and reverse share the count and the parities) because
 *      every neighbour slot writes its flag every exchange, with rows or
 *      without, and the plan's neighbour lists are symmetric: slot k of A
 *      for B pairs with slot m of B for A (the i-th occurrence of B among A's
 *      neighbours with the i-th of A among B's, as NCCL and MPI pair
 *      messages), and setup checks that the row counts of the pair agree.
 *  (4) No deadlock: a rank enqueues all its copies and flag writes before
 *      any wait, and no copy waits for anything remote.
 *  (5) The send stage: the pack of exchange n + 1 follows the copies of n
 *      on the same stream.
 *  (6) Freeing: the caller's stream waited (halo_done) for every
 *      neighbour's flag of the last exchange, so no neighbour writes into
 *      our area any more; our copies into theirs are waited for
 *      (ipc_release) before the mappings are closed.
 *  (7) Copies into a neighbour's array (mb_cuda_halo_share_arrays: the
 *      boxes marked 2 go from x straight into the ghost rows of B's array
 *      of the same index, in place of the copy into B's area). A's copy of
 *      exchange n runs after A's wait of exchange n - 1 for B's flag (the
 *      halo stream's order), which B's stream writes after the work B's
 *      caller had enqueued before B began exchange n - 1. B reads the
 *      ghost rows an exchange filled before it begins the next exchange
 *      (the caller's part of the contract), so every read of those rows
 *      from exchange n - 1 or earlier is done before A's copy of n writes
 *      them; the reads of exchange n follow B's wait for A's flag of n,
 *      which A writes after the copy (1). A's source rows: A's caller
 *      writes x's owned rows only after the exchange's end, whose
 *      halo_done follows the copies. No pack, stage or unpack touches these
 *      boxes, and B's unpack leaves them out, so nothing else writes the
 *      rows the copy writes.
 * Setup is collective over the plan's communicator (at the first IPC
 * exchange: mb_cuda_halo_begin is called by every rank in step) and agreed:
 * a neighbour on another node, no peer access between two GPUs, or no
 * stream memory operations refuse IPC on every rank (MB_ERR_UNSUPPORTED).
 */

/* The driver's stream memory operations, through the runtime's entry point
 * query, so that meshbatch does not link libcuda (builds run on machines
 * without a driver). */
typedef CUresult (*mb_value32_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
static mb_value32_fn g_write_value32, g_wait_value32;

static mb_error driver_symbol(const char *name, void **fn) {
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t e = cudaGetDriverEntryPointByVersion(name, fn, 12000, cudaEnableDefault, &q);
  if (e != cudaSuccess) (void)cudaGetLastError();
  MB_CHECK(e == cudaSuccess && q == cudaDriverEntryPointSuccess && *fn, MB_ERR_UNSUPPORTED,
           "halo transport ipc: the CUDA driver offers no %s (%s)", name, cudaGetErrorString(e));
  return MB_SUCCESS;
}

/* The stream memory operations (cuStreamWriteValue32, cuStreamWaitValue32),
 * or MB_ERR_UNSUPPORTED. The lookup at version 12000 returns CUDA 12's
 * entry points (the _v2 functions), which every device of compute
 * capability 7.0 or more supports without a device attribute to ask: the
 * attribute CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1 describes the
 * legacy functions and reads 0 on an H100 with driver 580 (measured
 * 2026-11-27). A failure of the operations themselves is reported by the
 * exchange (MB_CALL_CU). */
static mb_error stream_mem_ops(int device) {
  (void)device;
  void *wr = nullptr, *wt = nullptr;
  MB_CALL(driver_symbol("cuStreamWriteValue32", &wr));
  MB_CALL(driver_symbol("cuStreamWaitValue32", &wt));
  g_write_value32 = (mb_value32_fn)wr;
  g_wait_value32 = (mb_value32_fn)wt;
  return MB_SUCCESS;
}


#define MB_CALL_CU(expr, what)                                                              \
  do {                                                                                      \
    const CUresult mb_cu_rc_ = (expr);                                                      \
    MB_CHECK(mb_cu_rc_ == CUDA_SUCCESS, MB_ERR_CUDA, "halo transport ipc: %s failed (CUresult %d)", \
             what, (int)mb_cu_rc_);                                                         \
  } while (0)

/* What a rank tells the neighbour of one slot: its exported area, where the
 * neighbour's rows go in it (bytes from its base, per parity; forward and
 * reverse), the neighbour's flag, the row counts it expects, its GPU. */
/* The boxes of one slot a message carries (a Cartesian plan has at most 6
 * faces; a slot with more takes no direct copies). */
constexpr int IPC_SLOT_BOXES = 6;

struct ipc_msg {
  cudaIpcMemHandle_t handle;
  int64_t fwd_off[2], rev_off[2], flag_off, fwd_rows, rev_rows;
  char bus[32];
  /* the shared arrays (0 where none, or where one could not be exported):
   * their allocations' handles and each array's offset in bytes into its
   * allocation; this slot's send and receive boxes (-1 where more than
   * IPC_SLOT_BOXES) */
  int narrays, nsbox, nrbox;
  cudaIpcMemHandle_t ahandle[MB_CUDA_HALO_MAX_ARRAYS];
  int64_t aoff[MB_CUDA_HALO_MAX_ARRAYS];
  mb_halo_box sbox[IPC_SLOT_BOXES], rbox[IPC_SLOT_BOXES];
};

static size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

/* The allocation holding device pointer p (cuMemGetAddressRange, looked up
 * as the stream operations are): its base, for cudaIpcGetMemHandle, which
 * exports whole allocations. */
typedef CUresult (*mb_range_fn)(CUdeviceptr *, size_t *, CUdeviceptr);

static mb_error allocation_base(const void *p, char **base) {
  void *fn = nullptr;
  MB_CALL(driver_symbol("cuMemGetAddressRange", &fn));
  CUdeviceptr b = 0;
  size_t n = 0;
  const CUresult rc = ((mb_range_fn)fn)(&b, &n, (CUdeviceptr)p);
  MB_CHECK(rc == CUDA_SUCCESS, MB_ERR_CUDA,
           "halo transport ipc: a shared array is not device memory of this GPU (CUresult %d)",
           (int)rc);
  *base = (char *)b;
  return MB_SUCCESS;
}

/* The shared arrays into m; where one cannot be exported, none (narrays 0
 * in m and in h): the exchanges then stage every box, both sides of every
 * slot deciding alike from the two counts. Not collective. */
static void export_arrays(mb_cuda_halo *h, ipc_msg *m) {
  m->narrays = 0;
  for (int a = 0; a < h->narrays; a++) {
    char *base = nullptr;
    if (allocation_base(h->arrays[a], &base) ||
        cudaIpcGetMemHandle(&m->ahandle[a], base) != cudaSuccess) {
      (void)cudaGetLastError();
      mb_error_clear();
      h->narrays = 0; /* shared with nobody: our side decides as the neighbours' */
      return;
    }
    m->aoff[a] = (int64_t)((char *)h->arrays[a] - base);
  }
  m->narrays = h->narrays;
}

/* Whether every neighbour is on this rank's node (MPI_COMM_TYPE_SHARED).
 * Collective over comm. */
static mb_error neighbours_on_node(MPI_Comm comm, int nn, const int *ranks, int *off_node) {
  MPI_Comm node;
  MB_CALL_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  MPI_Group all, mine;
  std::vector<int> there((size_t)nn + 1);
  int rc = MPI_Comm_group(comm, &all);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_group(node, &mine);
  if (rc == MPI_SUCCESS && nn) rc = MPI_Group_translate_ranks(all, nn, ranks, mine, there.data());
  *off_node = -1;
  for (int k = 0; rc == MPI_SUCCESS && k < nn && *off_node < 0; k++)
    if (there[(size_t)k] == MPI_UNDEFINED) *off_node = ranks[k];
  if (rc == MPI_SUCCESS) {
    MPI_Group_free(&all);
    MPI_Group_free(&mine);
  }
  MPI_Comm_free(&node);
  MB_CHECK(rc == MPI_SUCCESS, MB_ERR_MPI, "halo transport ipc: MPI groups failed (%d)", rc);
  return MB_SUCCESS;
}

/* This rank's part of the setup before the neighbours' handles: the stream
 * memory operations, its exported area (flags zeroed) and its messages.
 * Not collective. */
static mb_error ipc_prepare(mb_cuda_halo *h, int off_node, std::vector<ipc_msg> *mine) {
  MB_CHECK(off_node < 0, MB_ERR_UNSUPPORTED,
           "halo transport ipc: neighbour rank %d is on another node (ipc joins the GPUs of one "
           "node; use nccl or mpi)", off_node);
  int device = 0;
  MB_CALL_CUDA(cudaGetDevice(&device));
  MB_CALL(stream_mem_ops(device));
  int nn;
  const int *ranks;
  const int64_t *soff, *roff;
  mb_halo_neighbors(h->plan, &nn, &ranks, &soff, &roff);
  const size_t row = (size_t)h->elem * (size_t)h->ncomp;
  h->ipc_flag_bytes = round_up(sizeof(uint32_t) * (size_t)(nn ? nn : 1), 256);
  h->ipc_parity_bytes = round_up(row * (size_t)(h->nrecv + h->nsend), 256);
  const size_t bytes = h->ipc_flag_bytes + 2 * h->ipc_parity_bytes;
  const cudaError_t e = cudaMalloc((void **)&h->ipc_area, bytes);
  if (e != cudaSuccess) {
    h->ipc_area = nullptr;
    (void)cudaGetLastError();
    MB_FAIL(e == cudaErrorMemoryAllocation ? MB_ERR_MEMORY : MB_ERR_CUDA,
            "halo transport ipc: cannot allocate %zu bytes of receive buffers: %s", bytes,
            cudaGetErrorString(e));
  }
  MB_CALL_CUDA(cudaMemsetAsync(h->ipc_area, 0, h->ipc_flag_bytes, h->halo_stream));
  MB_CALL_CUDA(cudaStreamSynchronize(h->halo_stream)); /* zero before any neighbour can write */
  ipc_msg m;
  memset(&m, 0, sizeof m);
  MB_CALL_CUDA(cudaIpcGetMemHandle(&m.handle, h->ipc_area));
  MB_CALL_CUDA(cudaDeviceGetPCIBusId(m.bus, (int)sizeof m.bus, device));
  export_arrays(h, &m);
  mine->assign((size_t)nn, m);
  for (int k = 0; k < nn; k++) {
    ipc_msg &x = (*mine)[(size_t)k];
    int *nb[2] = {&x.nsbox, &x.nrbox};
    mb_halo_box *to[2] = {x.sbox, x.rbox};
    for (int side = 0; side < 2; side++) {
      const int64_t b0 = h->boxed ? h->boff[side][k] : 0, b1 = h->boxed ? h->boff[side][k + 1] : 0;
      *nb[side] = b1 - b0 <= IPC_SLOT_BOXES ? (int)(b1 - b0) : -1;
      for (int64_t b = b0; *nb[side] > 0 && b < b1; b++) to[side][b - b0] = h->box[side][b];
    }
    for (int p = 0; p < 2; p++) {
      const int64_t base = (int64_t)(h->ipc_flag_bytes + (size_t)p * h->ipc_parity_bytes);
      x.fwd_off[p] = base + (int64_t)row * roff[k];
      x.rev_off[p] = base + (int64_t)row * (h->nrecv + soff[k]);
    }
    x.flag_off = (int64_t)(sizeof(uint32_t) * (size_t)k);
    x.fwd_rows = roff[k + 1] - roff[k];
    x.rev_rows = soff[k + 1] - soff[k];
  }
  return MB_SUCCESS;
}

/* Which boxes of slot k move straight between the arrays (h->direct[side]
 * set to 1), from both ranks' boxes: the same decision on both sides of
 * the slot, since each side pairs its send box b with the other's receive
 * box b and its receive box b with the other's send box b. */
static void direct_boxes(mb_cuda_halo *h, int k, const ipc_msg &m, mb_cuda_halo::ipc_peer *q) {
  if (!h->boxed || !h->narrays || m.narrays != h->narrays) return;
  const mb_halo_box *theirs[2] = {m.rbox, m.sbox}; /* paired with our send, receive boxes */
  const int ntheirs[2] = {m.nrbox, m.nsbox};
  for (int side = 0; side < 2; side++) {
    const int64_t b0 = h->boff[side][k], nb = h->boff[side][k + 1] - b0;
    if (ntheirs[side] != nb) continue;
    for (int64_t b = 0; b < nb; b++) {
      const mb_halo_box &x = h->box[side][b0 + b], &y = theirs[side][b];
      h->direct[side][(size_t)(b0 + b)] = box_contiguous(x) && box_contiguous(y) &&
                                          mb_halo_box_rows(&x) == mb_halo_box_rows(&y);
    }
  }
  for (int b = 0; b < m.nrbox; b++) q->rstart.push_back(m.rbox[b].start);
}

/* Map slot k's neighbour's shared arrays (ours where it is this rank; those
 * of an earlier slot of the same rank; an allocation met before in this
 * slot once). Not collective. */
static mb_error open_arrays(mb_cuda_halo *h, int k, const std::vector<ipc_msg> &theirs, int me) {
  int nn;
  const int *ranks;
  const int64_t *soff, *roff;
  mb_halo_neighbors(h->plan, &nn, &ranks, &soff, &roff);
  const ipc_msg &m = theirs[(size_t)k];
  mb_cuda_halo::ipc_peer &q = h->peer[(size_t)k];
  if (!h->narrays || m.narrays != h->narrays) return MB_SUCCESS;
  if (ranks[k] == me) {
    for (int a = 0; a < h->narrays; a++) q.array[a] = (char *)h->arrays[a];
    return MB_SUCCESS;
  }
  for (int j = 0; j < k; j++)
    if (ranks[j] == ranks[k]) {
      for (int a = 0; a < h->narrays; a++) q.array[a] = h->peer[(size_t)j].array[a];
      return MB_SUCCESS;
    }
  std::vector<char *> base((size_t)h->narrays, nullptr);
  for (int a = 0; a < h->narrays; a++) {
    for (int b = 0; b < a && !base[(size_t)a]; b++)
      if (!memcmp(&m.ahandle[a], &m.ahandle[b], sizeof m.ahandle[a])) base[(size_t)a] = base[(size_t)b];
    if (!base[(size_t)a]) {
      void *p = nullptr;
      const cudaError_t e = cudaIpcOpenMemHandle(&p, m.ahandle[a], cudaIpcMemLazyEnablePeerAccess);
      if (e != cudaSuccess) (void)cudaGetLastError();
      MB_CHECK(e == cudaSuccess, MB_ERR_UNSUPPORTED,
               "halo transport ipc: rank %d cannot map the shared arrays of rank %d: %s", me,
               ranks[k], cudaGetErrorString(e));
      base[(size_t)a] = (char *)p;
      q.array_opened.push_back((char *)p);
    }
    q.array[a] = base[(size_t)a] + m.aoff[a];
  }
  return MB_SUCCESS;
}

/* Map the neighbours' areas from their messages. Not collective. */
static mb_error ipc_open(mb_cuda_halo *h, const std::vector<ipc_msg> &theirs, int me) {
  int nn;
  const int *ranks;
  const int64_t *soff, *roff;
  mb_halo_neighbors(h->plan, &nn, &ranks, &soff, &roff);
  int device = 0;
  MB_CALL_CUDA(cudaGetDevice(&device));
  h->peer.assign((size_t)nn, mb_cuda_halo::ipc_peer());
  for (int side = 0; side < 2; side++) h->direct[side].assign((size_t)h->nbox[side], 0);
  for (int k = 0; k < nn; k++) {
    const ipc_msg &m = theirs[(size_t)k];
    mb_cuda_halo::ipc_peer &q = h->peer[(size_t)k];
    direct_boxes(h, k, m, &q);
    MB_CHECK(m.fwd_rows == soff[k + 1] - soff[k] && m.rev_rows == roff[k + 1] - roff[k], MB_ERR_ARG,
             "halo transport ipc: the plans of ranks %d and %d disagree (%lld/%lld rows against "
             "%lld/%lld)", me, ranks[k], (long long)(soff[k + 1] - soff[k]),
             (long long)(roff[k + 1] - roff[k]), (long long)m.fwd_rows, (long long)m.rev_rows);
    for (int p = 0; p < 2; p++) {
      q.fwd_off[p] = m.fwd_off[p];
      q.rev_off[p] = m.rev_off[p];
    }
    q.flag_off = m.flag_off;
    if (ranks[k] == me) { /* a periodic grid's wrap onto ourselves */
      q.base = h->ipc_area;
      continue;
    }
    for (int j = 0; j < k && !q.base; j++) /* the area of a rank met in an earlier slot */
      if (ranks[j] == ranks[k]) q.base = h->peer[(size_t)j].base;
    if (q.base) continue;
    int other = -1, can = 1;
    if (cudaDeviceGetByPCIBusId(&other, m.bus) != cudaSuccess) {
      (void)cudaGetLastError(); /* not visible here: cudaIpcOpenMemHandle decides */
      other = -1;
    }
    if (other >= 0 && other != device) MB_CALL_CUDA(cudaDeviceCanAccessPeer(&can, device, other));
    MB_CHECK(can, MB_ERR_UNSUPPORTED,
             "halo transport ipc: GPU %d of rank %d cannot access GPU %s of rank %d (no peer "
             "access; use nccl or mpi)", device, me, m.bus, ranks[k]);
    void *p = nullptr;
    const cudaError_t e = cudaIpcOpenMemHandle(&p, m.handle, cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess) (void)cudaGetLastError();
    MB_CHECK(e == cudaSuccess, MB_ERR_UNSUPPORTED,
             "halo transport ipc: rank %d cannot map the buffers of rank %d (GPU %s): %s", me,
             ranks[k], m.bus, cudaGetErrorString(e));
    q.base = (char *)p;
    q.opened = 1;
  }
  for (int k = 0; k < nn; k++) MB_CALL(open_arrays(h, k, theirs, me));
  return MB_SUCCESS;
}

/* The IPC transport's setup at the first IPC exchange of the halo: the
 * exported area, the handles swapped with every neighbour (one message each
 * way per slot, the slot's occurrence of that rank as the tag), the
 * neighbours' areas mapped. Collective over the plan's communicator and
 * agreed: on failure every rank returns the error (MB_ERR_UNSUPPORTED for
 * what cannot be had) and the halo refuses IPC from then on. */
static mb_error ipc_setup(mb_cuda_halo *h) {
  MB_CHECK(h->ipc >= 0, MB_ERR_UNSUPPORTED,
           "halo transport ipc was refused for this halo at its first exchange");
  if (h->ipc > 0) return MB_SUCCESS;
  const MPI_Comm comm = mb_halo_comm(h->plan);
  int me;
  MB_CALL_MPI(MPI_Comm_rank(comm, &me));
  int nn;
  const int *ranks;
  const int64_t *soff, *roff;
  mb_halo_neighbors(h->plan, &nn, &ranks, &soff, &roff);
  int off_node = -1;
  mb_error e = neighbours_on_node(comm, nn, ranks, &off_node);
  std::vector<ipc_msg> mine, theirs((size_t)nn);
  if (!e) e = ipc_prepare(h, off_node, &mine);
  e = mb_agree(comm, e);
  if (!e) {
    enum { TAG = 0x1bc0 };
    std::vector<MPI_Request> req(2 * (size_t)nn, MPI_REQUEST_NULL);
    int rc = MPI_SUCCESS;
    for (int k = 0; k < nn && rc == MPI_SUCCESS; k++) {
      int ord = 0;
      for (int j = 0; j < k; j++) ord += ranks[j] == ranks[k];
      rc = MPI_Irecv(&theirs[(size_t)k], (int)sizeof(ipc_msg), MPI_BYTE, ranks[k], TAG + ord, comm,
                     &req[2 * (size_t)k]);
      if (rc == MPI_SUCCESS)
        rc = MPI_Isend(&mine[(size_t)k], (int)sizeof(ipc_msg), MPI_BYTE, ranks[k], TAG + ord, comm,
                       &req[2 * (size_t)k + 1]);
    }
    if (rc == MPI_SUCCESS) rc = MPI_Waitall((int)req.size(), req.data(), MPI_STATUSES_IGNORE);
    e = rc == MPI_SUCCESS ? MB_SUCCESS
                          : mb_error_mpi_failed(rc, __FILE__, __LINE__, __func__,
                                                "halo transport ipc: handle exchange");
    if (!e) e = ipc_open(h, theirs, me);
    e = mb_agree(comm, e);
  }
  if (e) {
    h->ipc_release();
    h->ipc = -1;
    return e;
  }
  h->ipc = 1;
  ipc_choose_copies(h);
  return MB_SUCCESS;
}

/* Enqueue on s the copies of neighbour k's outgoing rows [out_off[k],
 * out_off[k+1]) to dst (laid out as our outgoing stage from out_off[k]):
 * from the stage `out` in runs of boxes packed there, the boxes of mask
 * (forward box plans: copies_mask) marked 1 straight from the array x, and
 * those marked 2 from x into the neighbour's array `arr` (its shared array
 * of x's index) at the neighbour's receive box (q.rstart). */
static mb_error ipc_copy_rows(const mb_cuda_halo *h, int k, const int64_t *out_off,
                              const char *out, const char *mask, const void *x, char *dst,
                              char *arr, cudaStream_t s) {
  const size_t row = (size_t)h->elem * (size_t)h->ncomp;
  const int64_t r0 = out_off[k], r1 = out_off[k + 1];
  if (!mask) {
    if (r1 > r0)
      MB_CALL_CUDA(cudaMemcpyAsync(dst, out + row * (size_t)r0, row * (size_t)(r1 - r0),
                                   cudaMemcpyDefault, s));
    return MB_SUCCESS;
  }
  int64_t q = r0, run = r0; /* q: the box's first row; [run, q): staged rows not yet copied */
  for (int64_t b = h->boff[0][k]; b <= h->boff[0][k + 1]; b++) {
    const bool end = b == h->boff[0][k + 1];
    if ((end || mask[b]) && q > run)
      MB_CALL_CUDA(cudaMemcpyAsync(dst + row * (size_t)(run - r0), out + row * (size_t)run,
                                   row * (size_t)(q - run), cudaMemcpyDefault, s));
    if (end) break;
    const int64_t n = mb_halo_box_rows(&h->box[0][b]);
    if (mask[b] == 2)
      MB_CALL_CUDA(cudaMemcpyAsync(
          arr + row * (size_t)h->peer[(size_t)k].rstart[(size_t)(b - h->boff[0][k])],
          (const char *)x + row * (size_t)h->box[0][b].start, row * (size_t)n, cudaMemcpyDefault, s));
    else if (mask[b])
      MB_CALL_CUDA(copy_box(h->box[0][b], row, (char *)x, dst + row * (size_t)(q - r0), true, s));
    if (mask[b]) run = q + n;
    q += n;
  }
  return MB_SUCCESS;
}

/* Enqueue on the halo stream the IPC exchange of direction dir (the rows
 * packed in the outgoing stage: send_stage forward, recv_stage reverse;
 * forward, the boxes of by_copies[0] straight from x) up to the waits for
 * every neighbour's rows; *in: where they arrived, laid out as the
 * incoming stage. See the argument above. */
static mb_error ipc_exchange(mb_cuda_halo *h, mb_halo_dir dir, const void *x, void **in) {
  int nn;
  const int *ranks;
  const int64_t *soff, *roff;
  mb_halo_neighbors(h->plan, &nn, &ranks, &soff, &roff);
  const bool fwd = dir == MB_HALO_FORWARD;
  const int p = (int)(h->ipc_seq & 1u);
  const cuuint32_t v = h->ipc_seq + 1u;
  const char *out = (const char *)(fwd ? h->send_stage.p : h->recv_stage.p);
  const int64_t *out_off = fwd ? soff : roff;
  const size_t row = (size_t)h->elem * (size_t)h->ncomp;
  const CUstream s = (CUstream)h->halo_stream;
  const char *mask = copies_mask(h, 0, MB_HALO_IPC, dir, x);
  const int ax = shared_index(h, x);
  for (int k = 0; k < nn; k++) {
    const mb_cuda_halo::ipc_peer &q = h->peer[(size_t)k];
    MB_CALL(ipc_copy_rows(h, k, out_off, out, mask, x, q.base + (fwd ? q.fwd_off[p] : q.rev_off[p]),
                          ax >= 0 ? q.array[ax] : nullptr, h->halo_stream));
    MB_CALL_CU(g_write_value32(s, (CUdeviceptr)(q.base + q.flag_off), v, 0),
               "cuStreamWriteValue32 (a neighbour's flag)");
  }
  for (int k = 0; k < nn; k++)
    MB_CALL_CU(g_wait_value32(s, (CUdeviceptr)(h->ipc_area + sizeof(uint32_t) * (size_t)k), v,
                              CU_STREAM_WAIT_VALUE_GEQ),
               "cuStreamWaitValue32 (our flag for a neighbour)");
  *in = h->ipc_area + h->ipc_flag_bytes + (size_t)p * h->ipc_parity_bytes +
        (fwd ? 0 : row * (size_t)h->nrecv);
  h->ipc_seq++;
  return MB_SUCCESS;
}

extern "C" mb_error mb_cuda_halo_begin(mb_cuda_halo *h, mb_halo_dir dir, const void *x,
                                       mb_halo_transport transport, mb_nccl *nccl) {
  MB_CHECK(!h->inflight, MB_ERR_ARG, "a device halo exchange is already in flight");
  MB_CHECK(transport == MB_HALO_MPI || transport == MB_HALO_IPC ||
               (transport == MB_HALO_NCCL && nccl),
           MB_ERR_ARG, "mb_cuda_halo_begin: transport %s%s", mb_halo_transport_name(transport),
           transport == MB_HALO_NCCL ? " without an NCCL communicator" : " (choose one first)");
  if (transport == MB_HALO_IPC) MB_CALL(ipc_setup(h)); /* collective at the first */
  const char *send_copies = copies_mask(h, 0, transport, dir, x),
             *recv_copies = copies_mask(h, 1, transport, dir, x);
  if (dir == MB_HALO_REVERSE && !h->boxed) MB_CALL(reverse_setup(h));
  MB_CALL_CUDA(cudaEventRecord(h->rows_done, h->stream)); /* x as the caller's stream left it */
  MB_CALL_CUDA(cudaStreamWaitEvent(h->halo_stream, h->rows_done, 0));
  MB_CALL_CUDA(h->mark(0));
  MB_CALL(enqueue_out(h, dir, x, h->halo_stream, send_copies));
  MB_CALL_CUDA(h->mark(1));
  const size_t row = (size_t)h->elem * (size_t)h->ncomp;
  h->posted = 0;
  if (transport != MB_HALO_MPI) {
    void *in = nullptr; /* IPC: the rows arrived in our exported area */
    if (transport == MB_HALO_NCCL) MB_CALL(nccl_exchange(h, nccl, dir));
    else MB_CALL(ipc_exchange(h, dir, x, &in));
    MB_CALL_CUDA(h->mark(2));
    MB_CALL(enqueue_in(h, dir, (void *)x, h->halo_stream, in, recv_copies));
    MB_CALL_CUDA(h->mark(3));
    h->timed = 0;
    MB_CALL_CUDA(cudaEventRecord(h->halo_done, h->halo_stream));
  } else {
    void *out = dir == MB_HALO_FORWARD ? h->host_send : h->host_recv;
    const mb_dbuf &stage = dir == MB_HALO_FORWARD ? h->send_stage : h->recv_stage;
    const int64_t nout = dir == MB_HALO_FORWARD ? h->nsend : h->nrecv;
    if (nout)
      MB_CALL_CUDA(cudaMemcpyAsync(out, stage.p, row * (size_t)nout, cudaMemcpyDeviceToHost,
                                   h->halo_stream));
    if (!h->post_at_end) {
      MB_CALL_CUDA(cudaStreamSynchronize(h->halo_stream));
      MB_CALL(mpi_post(h, dir));
    }
  }
  h->inflight = 1 + (int)dir;
  h->transport = transport;
  return MB_SUCCESS;
}

extern "C" mb_error mb_cuda_halo_end(mb_cuda_halo *h, void *x) {
  MB_CHECK(h->inflight, MB_ERR_ARG, "no device halo exchange in flight");
  const mb_halo_dir dir = (mb_halo_dir)(h->inflight - 1);
  h->inflight = 0;
  if (h->transport == MB_HALO_MPI) {
    if (!h->posted) { /* post_at_end: the pack and the copy to the host first (and the
                         previous exchange's copy from the host, before it is overwritten) */
      if (h->nsend || h->nrecv) MB_CALL_CUDA(cudaStreamSynchronize(h->halo_stream));
      MB_CALL(mpi_post(h, dir));
    }
    h->posted = 0;
    MB_CALL(mb_halo_wait((mb_halo *)h->plan));
    const void *in = dir == MB_HALO_FORWARD ? h->host_recv : h->host_send;
    const mb_dbuf &stage = dir == MB_HALO_FORWARD ? h->recv_stage : h->send_stage;
    const int64_t nin = dir == MB_HALO_FORWARD ? h->nrecv : h->nsend;
    if (nin)
      MB_CALL_CUDA(cudaMemcpyAsync(stage.p, in, (size_t)h->elem * (size_t)h->ncomp * (size_t)nin,
                                   cudaMemcpyHostToDevice, h->halo_stream));
    MB_CALL_CUDA(h->mark(2));
    MB_CALL(enqueue_in(h, dir, x, h->halo_stream));
    MB_CALL_CUDA(h->mark(3));
    h->timed = 0;
    MB_CALL_CUDA(cudaEventRecord(h->halo_done, h->halo_stream));
  }
  MB_CALL_CUDA(cudaStreamWaitEvent(h->stream, h->halo_done, 0));
  return MB_SUCCESS;
}

extern "C" mb_error mb_cuda_halo_share_arrays(mb_cuda_halo *h, int n, void *const *arrays) {
  MB_CHECK(h && n >= 0 && n <= MB_CUDA_HALO_MAX_ARRAYS && (n == 0 || arrays), MB_ERR_ARG,
           "mb_cuda_halo_share_arrays: %d arrays (at most %d)", n, (int)MB_CUDA_HALO_MAX_ARRAYS);
  MB_CHECK(h->ipc == 0, MB_ERR_ARG,
           "mb_cuda_halo_share_arrays: called after the halo's first IPC exchange");
  for (int a = 0; a < n; a++) {
    MB_CHECK(arrays[a], MB_ERR_ARG, "mb_cuda_halo_share_arrays: array %d is NULL", a);
    h->arrays[a] = arrays[a];
  }
  h->narrays = n;
  return MB_SUCCESS;
}

extern "C" void mb_cuda_halo_free(mb_cuda_halo *h) { delete h; }
