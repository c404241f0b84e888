/* meshbatch: halo exchange of device arrays (see mb_cuda_halo.h): the
 * engine, its pack and unpack kernels, the MPI and NCCL transports; the IPC
 * transport is mb_cuda_halo_ipc.cu, the state both share
 * mb_cuda_halo_impl.cuh. */
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
#include "mb_cuda_halo_impl.cuh"
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

} // namespace

namespace mb_halo_dev {

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

} // namespace mb_halo_dev

namespace {

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

using namespace mb_halo_dev;

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


extern "C" void mb_cuda_halo_free(mb_cuda_halo *h) { delete h; }
