/* meshbatch: the device halo's IPC transport (see mb_cuda_halo.h and
 * the argument below; the engine is mb_cuda_halo.cu, the shared state
 * mb_cuda_halo_impl.cuh). */
#include <cuda.h> /* driver types of the stream memory operations (no libcuda link) */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "mb_cuda_halo.h"
#include "mb_cuda_halo_impl.cuh"
#include "mb_cuda_private.cuh"
#include "mb_mpi.h"

namespace mb_halo_dev {

/* The IPC forward exchange's box masks (by_copies), at its setup. By
 * default every box goes through the stages and the box kernels; with the
 * environment variable MB_HALO_IPC_PACK=copies, every box that
 * box_by_copies accepts moves by the copy engines instead (no pack or
 * unpack kernel). Measured on 4 H200s (docs/benchmarks.md, "The stencil's
 * shell on the halo stream"): strong 1024^3 heat 3.61-3.62x with copies
 * against 3.65x with the kernels, the interior slower (0.830 against 0.815
 * ms) and the unpack's copy slower than its kernel (0.14 against 0.11
 * ms), so the kernels stay the default and the copies a choice for
 * measurements (the *_copies tests run them). A box contiguous on both
 * sides, of a shared array (mb_cuda_halo_share_arrays), goes straight
 * into the neighbour's array instead (2): one plain copy, no stage, pack
 * or unpack; measured on 2 H200s (docs/benchmarks.md, "Twenty-fourth
 * session"): strong 1024^3 heat on whole z planes 2.02-2.03x against
 * 1.97-1.98x staged, the interior 1.504 against 1.537 ms. */
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
const char *copies_mask(const mb_cuda_halo *h, int side, mb_halo_transport t,
                               mb_halo_dir dir, const void *x) {
  if (t != MB_HALO_IPC || dir != MB_HALO_FORWARD) return nullptr;
  if (!h->direct[side].empty() && shared_index(h, x) >= 0) return h->direct[side].data();
  if (h->by_copies[side].empty()) return nullptr;
  return h->by_copies[side].data();
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
mb_error ipc_setup(mb_cuda_halo *h) {
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
mb_error ipc_exchange(mb_cuda_halo *h, mb_halo_dir dir, const void *x, void **in) {
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

} // namespace mb_halo_dev

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
