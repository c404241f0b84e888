/* meshbatch: the device halo's state (struct mb_cuda_halo) and the
 * functions its two files share: cuda/partition/mb_cuda_halo.cu (the
 * engine, the box kernels, the MPI and NCCL transports) and
 * mb_cuda_halo_ipc.cu (the IPC transport). Private to those files; the
 * interface is mb_cuda_halo.h. */
#ifndef MB_CUDA_HALO_IMPL_CUH
#define MB_CUDA_HALO_IMPL_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include <vector>

#include "mb_cuda_halo.h"
#include "mb_cuda_private.cuh"

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

namespace mb_halo_dev {

/* Whether box b can move by one strided copy of the copy engines between
 * the array and a packed buffer (copy_box). Not collective. */
bool box_by_copies(const mb_halo_box &b);

/* Whether box b's rows are one contiguous run from b.start. */
bool box_contiguous(const mb_halo_box &b);

/* Enqueue on s one strided copy between box b of the array at x (rows of
 * `row` bytes) and its packed rows at buf; to_buf: array -> buf.
 * box_by_copies(b) must hold. */
cudaError_t copy_box(const mb_halo_box &b, size_t row, char *x, char *buf, bool to_buf,
                     cudaStream_t s);

/* The IPC transport (mb_cuda_halo_ipc.cu). ipc_setup: at the first IPC
 * exchange, collective over the plan's communicator and agreed
 * (MB_ERR_UNSUPPORTED where IPC cannot be had, MB_ERR_ARG where the
 * ranks' plans disagree). ipc_exchange: enqueue on the halo stream the
 * copies into the neighbours and the waits for theirs; *in: where the
 * rows arrived (the incoming stage's layout). copies_mask: the per-box
 * mask of side (0 send, 1 receive) of an exchange of x (2 straight between
 * the shared arrays, 1 by copies through the stage, 0 the box kernels), or
 * NULL where every box takes the kernels. */
mb_error ipc_setup(mb_cuda_halo *h);
mb_error ipc_exchange(mb_cuda_halo *h, mb_halo_dir dir, const void *x, void **in);
const char *copies_mask(const mb_cuda_halo *h, int side, mb_halo_transport t, mb_halo_dir dir,
                        const void *x);

} // namespace mb_halo_dev

#endif
