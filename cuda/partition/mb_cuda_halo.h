/* meshbatch: a halo plan's exchange for values kept on the GPU (partition
 * layer, cuda/mb_cuda_halo.cu).
 *
 * A device array x holds `ncomp` values per local vertex (float32 or
 * float64; owned rows, then ghosts, see mb_local.h). Packing gathers the
 * owned rows the neighbours need (mb_halo_send_indices) into a float64
 * buffer; unpacking scatters received float64 values into the ghost rows
 * (mb_halo_recv_indices), exactly for float32 ghosts of float32 owners.
 * Three transports: MPI, through pinned host buffers that mb_halo_post/
 * mb_halo_wait send (the MPI need not be CUDA-aware); NCCL, device to device
 * on a second stream that waits for the rows next to the halo and lets the
 * caller's stream update the interior meanwhile; or IPC, for ranks of one
 * node, the same on the second stream but the packed rows moved by the copy
 * engines (no SM) straight into the neighbours' receive buffers, mapped with
 * CUDA IPC, and announced by stream memory operations (the argument for its
 * synchronisation is in mb_cuda_halo.cu). Any op and any ncomp.
 * mb_cuda_halo_begin/end are the engine's forward and reverse exchanges of
 * device arrays over either transport, on the device's urgent stream.
 *
 * A box plan (mb_halo_create_boxes: a grid's faces, mb_cart_plan_frame)
 * needs no index list on the device: box kernels pack and unpack each box
 * (32-bit index arithmetic within a plane, as the stencils' face kernels),
 * and the values are staged, copied and sent in the array's own precision
 * (float32 grids move 4 bytes per value, on the wire too), one message per
 * neighbour and direction over MPI or NCCL. Index plans (mesh halos) are
 * staged in float64 as described above.
 * Builds without CUDA link partition/mb_cuda_halo_cuda_stub.c.
 */
#ifndef MB_CUDA_HALO_H
#define MB_CUDA_HALO_H

#include <stdint.h>

#include "mb_error.h"
#include "mb_halo.h"
#include "mb_nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mb_cuda_halo mb_cuda_halo; /* opaque */

/* Device buffers and index lists for exchanging `ncomp` values per vertex
 * of a device array of real_bytes-wide reals (4: float32, 8: float64)
 * along `plan`, enqueued on `stream` (a cudaStream_t, the caller's; NULL
 * for the default stream). The plan is borrowed and must outlive the halo.
 * Not collective. Errors: MB_ERR_ARG, MB_ERR_MEMORY, MB_ERR_CUDA. */
mb_error mb_cuda_halo_create(const mb_halo *plan, int ncomp, int real_bytes, void *stream,
                             mb_cuda_halo **halo);

/* MPI transport of mb_cuda_halo_begin/end: with at_end 1, begin only
 * enqueues the pack and the copy to the host on the urgent stream and
 * returns at once (the host does not wait before the caller enqueues its
 * overlapping work); end waits for them, posts the messages, waits and
 * unpacks. With 0 (the default) begin waits for the copy and posts. The
 * stencils' grid blocks and the partitioned smoothing's domain use 1
 * (their interior kernels then overlap the pack and the copies). Not
 * collective. */
void mb_cuda_halo_set_post_at_end(mb_cuda_halo *halo, int at_end);

/* The halo's urgent stream (a cudaStream_t, owned by the halo), on which
 * its pack, copies, messages (NCCL) and unpack run: for the caller's
 * timing events. Not collective. */
void *mb_cuda_halo_stream(mb_cuda_halo *halo);

/* Timing events for the next mb_cuda_halo_begin/end pair only (figures;
 * ev NULL: none): ev[0..3] are the caller's cudaEvent_t (made with timing,
 * owned by the caller), recorded on the halo's stream when its wait for the
 * caller's stream is over (the pack starts), after the pack, after the
 * transport (NCCL: the send/receive group; IPC: the copies to the
 * neighbours and the waits for theirs; MPI: the copy to the host, the
 * messages and the copy back) and after the unpack (or reverse sums), so
 * that a caller can take an exchange's time apart. Not collective. */
void mb_cuda_halo_time_next(mb_cuda_halo *halo, void *const ev[4]);

/* The halo engine's exchanges of device array x along the plan (see
 * mb_halo.h): forward (owned rows -> ghosts) or reverse (ghost rows summed
 * into their owned rows in the engine's fixed order: ascending neighbour
 * rank, then plan order, one addition in the array's precision each), of
 * the halo's ncomp values per row. begin: after the work enqueued so far on
 * the caller's stream, a stream of the device's highest priority (created
 * at the first call) gathers the rows that leave; with MPI it copies them
 * to pinned host buffers, waits and posts the messages (mb_halo_post, values
 * as float64: exact for float32 arrays); with NCCL (`nccl`, from
 * mb_halo_choose_transport or mb_nccl_create) it enqueues the device-to-
 * device exchange and the unpack (forward) or sums (reverse) at once; with
 * IPC (`nccl` unused) the same, by copies into the neighbours' receive
 * buffers (double-buffered by the exchange's parity) and 32-bit flags
 * (cuStreamWriteValue32 / cuStreamWaitValue32). The first IPC exchange of
 * a halo sets IPC up: collective over the plan's communicator (as begin
 * is), it allocates and exports the receive buffers, swaps the
 * cudaIpcMemHandle_t with the neighbours over MPI and maps theirs; agreed:
 * where a neighbour is on another node (MPI_COMM_TYPE_SHARED), two GPUs
 * have no peer access or the device has no stream memory operations, every
 * rank gets MB_ERR_UNSUPPORTED, and the halo refuses IPC from then on.
 * end: (MPI) waits for the messages and enqueues the copy to the device and
 * the unpack or sums on that stream; then the caller's stream waits for them
 * (no host wait with NCCL). Between begin and end the caller's stream may
 * run work that neither reads the ghost rows (forward) nor writes rows that
 * the exchange reads or writes. Every rank of the plan calls both in step.
 * Errors: MB_ERR_ARG (an exchange in flight, end without begin, NCCL
 * without a communicator, IPC between ranks whose plans disagree),
 * MB_ERR_CUDA, MB_ERR_MPI, MB_ERR_MEMORY, MB_ERR_UNSUPPORTED (NCCL in a
 * build without it; IPC where it cannot be had). */
mb_error mb_cuda_halo_begin(mb_cuda_halo *halo, mb_halo_dir dir, const void *x,
                            mb_halo_transport transport, mb_nccl *nccl);
mb_error mb_cuda_halo_end(mb_cuda_halo *halo, void *x);

/* The most arrays mb_cuda_halo_share_arrays takes. */
enum { MB_CUDA_HALO_MAX_ARRAYS = 4 };

/* The caller's device arrays that this halo's IPC exchanges may write
 * straight into: the n arrays (n <= MB_CUDA_HALO_MAX_ARRAYS, device
 * memory of this rank's GPU from cudaMalloc, any offset into its
 * allocation; borrowed, they must outlive the halo) that mb_cuda_halo_begin
 * and _end will be given, such as a grid block's time levels. Every rank
 * of the plan shares the same count, and every exchange passes the array
 * of the same index on every rank (the ranks rotate their time levels in
 * step); an exchange of an array not shared goes through the stages as
 * before. At the first IPC exchange (the collective setup) each rank
 * exports its arrays and maps its neighbours'; from then on a forward
 * exchange of a shared array moves each box that is one contiguous run of
 * rows on both sides (the sender's send box and the neighbour's matching
 * receive box, with the same rows: mb_cart_plan_frame's
 * MB_CART_PLAN_WHOLE_PLANES faces) by one copy of the copy engines from
 * this rank's array into the neighbour's ghost rows: no pack, stage or
 * unpack, a third of the device memory traffic of the staged path (whose
 * pack and unpack kernels also take SMs from the caller's interior). The
 * neighbour's flag follows the copies as before. The argument in
 * mb_cuda_halo.cu ("IPC transport", (7)) covers the copies into the
 * neighbour's array given what the caller does anyway: it reads the ghost
 * rows an exchange filled before it begins the next exchange (on its
 * stream, or ordered before it), and it writes an exchanged array's
 * owned rows only after the exchange's end. After the direct halo exchanges
 * of multi-GPU stencil codes (e.g. NVIDIA's multi-GPU Jacobi examples,
 * cudaMemcpyPeerAsync of contiguous halo rows). Call before the first IPC
 * exchange. Not collective. Errors: MB_ERR_ARG (n out of range, a null
 * array, or after the IPC setup). */
mb_error mb_cuda_halo_share_arrays(mb_cuda_halo *halo, int n, void *const *arrays);

/* Free the halo (IPC: after its stream's copies into the neighbours, the
 * mappings closed, the receive buffers freed); NULL allowed. Not
 * collective: with IPC, every rank frees its halo after its last exchange
 * has been waited for on the caller's stream (which mb_cuda_halo_end
 * orders), so no neighbour writes into freed buffers. */
void mb_cuda_halo_free(mb_cuda_halo *halo);

#ifdef __cplusplus
}
#endif
#endif
