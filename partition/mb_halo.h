/* meshbatch: the halo engine, in the spirit of PETSc's star forest (PetscSF).
 *
 * A rank's local rows are its owned rows (the roots) and its ghost rows (the
 * leaves); every ghost row stands for an owned row of another rank (or of
 * this rank, across a periodic axis that is not cut). A plan lists, per
 * neighbour rank, the owned rows this rank sends to it and the ghost rows it
 * fills from it, in an order both sides agree on. One engine serves every
 * split: a mesh's vertex (or triangle) halo is a plan built from each
 * ghost's global id and owner (mb_halo_create); a Cartesian grid's face halo
 * is a plan built from boxes per neighbour (mb_halo_create_boxes, which
 * mb_cart_plan uses): a box is a 3D strided block of rows (start, extents,
 * strides in rows), so the host and the device pack a face with a loop or
 * a kernel over the box, without an index list, in the array's own
 * precision (after PetscSF's pack optimisation, which detects that a
 * neighbour's index list is a 3D strided box and packs it as one). A plan
 * may also be built from explicit index lists (mb_halo_create_lists).
 *
 * Two exchanges, each of any number of components per row (ncomp >= 1) and
 * either precision (MB_HALO_FLOAT64, MB_HALO_FLOAT32):
 *   forward  (owner -> ghosts, PetscSF broadcast): every ghost row gets its
 *            owner's value;
 *   reverse  (ghosts -> owner, PetscSF reduce with MPI_SUM): every owned row
 *            gets the values of its ghost copies added to it, in a fixed
 *            order whatever the order messages arrive in: the owned row's
 *            own value first, then the contributions of the neighbours in
 *            ascending rank, and within one neighbour in plan order. Ghost
 *            rows are left as they were.
 * Each is split in two so that work overlaps the messages:
 *   mb_halo_forward_begin(h, dt, ncomp, x)   pack owned rows, post messages
 *   ...update rows that need no ghost value...
 *   mb_halo_forward_end(h, x)                wait, unpack into the ghosts
 * (mb_halo_reverse_begin/end alike). Host messages are staged through
 * buffers of the plan (the MPI need not be CUDA-aware). Device arrays use
 * the same plan through mb_cuda_halo (cuda/mb_cuda_halo.cu): MPI through
 * pinned host buffers, or NCCL device to device, the exchange's kernels on
 * the device's highest-priority stream.
 *
 * The GPU transport is chosen in one place for every op,
 * mb_halo_choose_transport, whose rule is written there.
 */
#ifndef MB_HALO_H
#define MB_HALO_H

#include <mpi.h>
#include <stdint.h>

#include "mb_error.h"
#include "mb_op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* mb_halo_transport (the job key `halo`) is defined with the other job
 * settings in src/core/mb_op.h. */

const char *mb_halo_transport_name(mb_halo_transport t);

/* The precision of the values an exchange moves (same values as mb_cart_dtype). */
typedef enum mb_halo_dtype { MB_HALO_FLOAT64 = 0, MB_HALO_FLOAT32 = 1 } mb_halo_dtype;

/* The direction of an exchange: forward (owner -> ghosts) or reverse
 * (ghost contributions summed into their owners). */
typedef enum mb_halo_dir { MB_HALO_FORWARD = 0, MB_HALO_REVERSE = 1 } mb_halo_dir;

typedef struct mb_halo mb_halo; /* opaque */

/* An NCCL communicator (mb_nccl.h, partition layer); only passed through here. */
typedef struct mb_nccl mb_nccl;

/* Build a plan from ghost owners. Collective over comm.
 *   owned_global [nowned]  global ids of the owned vertices, local order
 *   ghost_global [nghost]  global ids of the ghosts, local order
 *   ghost_owner  [nghost]  rank that owns each ghost (!= this rank)
 *   ncomp                  values per vertex of mb_halo_begin/end (3 for positions)
 * Owned rows are local rows [0, nowned), ghosts [nowned, nowned + nghost).
 * Neighbours are in ascending rank; a neighbour's rows in the order of its
 * ghosts. Arrays are borrowed (copied where kept). Errors: MB_ERR_ARG (a
 * ghost's global id is not owned by the rank named), MB_ERR_MPI, MB_ERR_MEMORY. */
mb_error mb_halo_create(MPI_Comm comm, int64_t nowned, const int64_t *owned_global,
                        int64_t nghost, const int64_t *ghost_global, const int *ghost_owner,
                        int ncomp, mb_halo **halo);

/* Build a plan from explicit index lists: this rank exchanges with
 * nneighbors ranks ranks[k] (ascending, distinct; this rank itself is
 * allowed, for a periodic axis it does not share), sends to neighbour k the
 * owned rows send_index[send_offset[k] .. send_offset[k+1]) and fills from
 * it the ghost rows recv_index[recv_offset[k] .. recv_offset[k+1]) (local
 * row numbers; send_offset and recv_offset have nneighbors + 1 entries, the
 * first 0). What rank A sends to B must be, row for row, what B receives
 * from A: the lists are not checked against each other here (a length
 * mismatch fails at the exchange, MB_ERR_MPI). `ncomp` is the default of
 * mb_halo_begin/end. Arrays are copied. Not collective.
 * Errors: MB_ERR_ARG (ranks not ascending, negative indices or decreasing
 * offsets), MB_ERR_MEMORY. */
mb_error mb_halo_create_lists(MPI_Comm comm, int nneighbors, const int *ranks,
                              const int64_t *send_offset, const int64_t *send_index,
                              const int64_t *recv_offset, const int64_t *recv_index, int ncomp,
                              mb_halo **halo);

/* A box of rows: the rows start + k stride[0] + j stride[1] + i stride[2]
 * for k < n[0], j < n[1], i < n[2], in that (C) order, k outermost; the
 * rows of one box are distinct (strides and extents of a strided 3D block,
 * e.g. a face of a framed grid: strides of z, y, x in rows). */
typedef struct mb_halo_box {
  int64_t start;     /* local row of the box's first point (k = j = i = 0) */
  int64_t n[3];      /* extents, outermost first (>= 0) */
  int64_t stride[3]; /* rows between neighbouring points along each extent (>= 0) */
} mb_halo_box;

/* Rows of a box: n[0] n[1] n[2]. */
int64_t mb_halo_box_rows(const mb_halo_box *box);

/* Build a plan from boxes: this rank exchanges with nneighbors ranks
 * ranks[k] (ascending, distinct; this rank itself is allowed, for a
 * periodic axis it does not cut), sends to neighbour k the owned rows of
 * the boxes send_boxes[send_box_offset[k] .. send_box_offset[k+1]) and
 * fills from it the ghost rows of recv_boxes[recv_box_offset[k] ..
 * recv_box_offset[k+1]), each box in its C order, the boxes in list order
 * (offsets have nneighbors + 1 entries, the first 0). One message per
 * neighbour and direction carries all of its boxes, so where one rank is
 * the neighbour on several faces (two blocks along a periodic axis) every
 * face lands where the plan's order puts it, over MPI and NCCL alike. What
 * rank A sends to B must be, row for row, what B receives from A (not
 * checked here; a length mismatch fails at the exchange, MB_ERR_MPI).
 * `ncomp` is the default of mb_halo_begin/end. Arrays are copied. Not
 * collective. The plan's index lists (mb_halo_send/recv_indices) are
 * expanded from the boxes only when asked for; the host exchanges and
 * mb_cuda_halo pack boxes directly.
 * Errors: MB_ERR_ARG (ranks not ascending, a negative start, extent or
 * stride, decreasing offsets), MB_ERR_MEMORY. */
mb_error mb_halo_create_boxes(MPI_Comm comm, int nneighbors, const int *ranks,
                              const int64_t *send_box_offset, const mb_halo_box *send_boxes,
                              const int64_t *recv_box_offset, const mb_halo_box *recv_boxes,
                              int ncomp, mb_halo **halo);

/* The boxes of a box plan (mb_halo_create_boxes): *nboxes boxes, those of
 * neighbour k (k-th of mb_halo_neighbors) are boxes[box_offset[k] ..
 * box_offset[k+1]), and their rows, in order, are the neighbour's rows of
 * the packed buffers. Returns 0 (and NULLs) for a plan of index lists.
 * Arrays belong to the plan. Not collective. */
int mb_halo_send_boxes(const mb_halo *halo, int64_t *nboxes, const mb_halo_box **boxes,
                       const int64_t **box_offset);
int mb_halo_recv_boxes(const mb_halo *halo, int64_t *nboxes, const mb_halo_box **boxes,
                       const int64_t **box_offset);

/* Forward exchange (owner -> ghosts) of x: local rows of `ncomp` values of
 * precision dt (row r at x + r * ncomp; x covers every row the plan names).
 * begin reads the owned rows to send; the ghost rows must not be read until
 * end, which writes them. Every rank of the plan calls begin and end in step
 * (not collective in the MPI sense). One exchange per plan at a time.
 * Errors: MB_ERR_ARG (ncomp < 1, an exchange in flight, end without its
 * begin), MB_ERR_MPI, MB_ERR_MEMORY (buffers grow to the largest exchange). */
mb_error mb_halo_forward_begin(mb_halo *halo, mb_halo_dtype dt, int ncomp, const void *x);
mb_error mb_halo_forward_end(mb_halo *halo, void *x);

/* Reverse exchange (ghost contributions summed into their owners, PetscSF
 * reduce with MPI_SUM) of x, as above: begin reads the ghost rows to send;
 * end adds to each owned row the values of its ghost copies, one addition
 * in dt's precision each, in a fixed order: ascending neighbour rank, then
 * plan order (for a mesh plan: the order of that neighbour's ghosts), so
 * the sums do not depend on the order messages arrive in. Owned rows must
 * not change between begin and end; ghost rows are left unchanged.
 * Errors: as the forward exchange. */
mb_error mb_halo_reverse_begin(mb_halo *halo, mb_halo_dtype dt, int ncomp, const void *x);
mb_error mb_halo_reverse_end(mb_halo *halo, void *x);

/* Post the messages of an exchange of buffers the caller packs and unpacks
 * (e.g. pinned buffers a GPU fills), `ncomp` values of dt per row. Forward:
 * sendbuf holds the rows mb_halo_send_indices lists, in that order, and
 * recvbuf receives those of mb_halo_recv_indices. Reverse: the other way
 * round (sendbuf in the order of the receive indices, recvbuf in that of
 * the send indices; the caller adds recvbuf row q into owned row
 * send_index[q] in ascending q, which is the engine's fixed order). Both
 * stay in use until mb_halo_wait. Every rank of the plan calls it in step.
 * Errors: MB_ERR_ARG (an exchange in flight), MB_ERR_MPI. */
mb_error mb_halo_post(mb_halo *halo, mb_halo_dir dir, mb_halo_dtype dt, int ncomp,
                      const void *sendbuf, void *recvbuf);
/* Wait for the messages of mb_halo_post. Errors: MB_ERR_ARG (nothing
 * posted), MB_ERR_MPI. */
mb_error mb_halo_wait(mb_halo *halo);

/* The forward exchange of float64 x [(nowned + nghost) * ncomp] with the
 * plan's ncomp (mb_halo_forward_begin/end with MB_HALO_FLOAT64): owned
 * values are read now; ghost values must not be read until mb_halo_end.
 * Every rank of the plan calls begin/end in step.
 * Errors: MB_ERR_MPI, MB_ERR_ARG, MB_ERR_MEMORY. */
mb_error mb_halo_begin(mb_halo *halo, const double *x);

/* Finish the exchange: ghosts of x hold their owners' values. Errors: MB_ERR_MPI. */
mb_error mb_halo_end(mb_halo *halo, double *x);

/* Local rows this rank packs (owned) and fills (ghosts), in buffer order;
 * the arrays belong to the plan. A box plan expands them from its boxes at
 * the first call (and keeps them); where that memory cannot be had, *idx
 * is NULL and *n 0, with the error recorded (mb_error_message). */
void mb_halo_send_indices(const mb_halo *halo, int64_t *n, const int64_t **idx);
void mb_halo_recv_indices(const mb_halo *halo, int64_t *n, const int64_t **idx);

/* The neighbours of this rank and, for each, its rows of the packed
 * buffers: neighbour k = ranks[k] gets send rows [send_offset[k],
 * send_offset[k+1]) and fills recv rows [recv_offset[k], recv_offset[k+1])
 * (rows of ncomp values, in the order of mb_halo_send/recv_indices). For
 * transports other than MPI (NCCL). Arrays belong to the plan. Not collective. */
void mb_halo_neighbors(const mb_halo *halo, int *nneighbors, const int **ranks,
                       const int64_t **send_offset, const int64_t **recv_offset);

/* The communicator of the plan (borrowed). */
MPI_Comm mb_halo_comm(const mb_halo *halo);

/* The plan's default ncomp (that of mb_halo_begin/end). */
int mb_halo_ncomp(const mb_halo *halo);

/* Halo statistics of this rank: neighbour ranks, values sent and received
 * per exchange (vertices, not bytes). */
void mb_halo_stats(const mb_halo *halo, int *nneighbors, int64_t *nsend, int64_t *nrecv);

/* One trial of a GPU halo transport, the op's: run n whole exchanges with
 * transport t (nccl: the NCCL communicator when t is MB_HALO_NCCL, else
 * NULL; MB_HALO_IPC: the op's device halo sets IPC up at its first) and return when they are done on the device; n = 0 only waits for
 * the device's earlier work. Every rank calls it in step. */
typedef mb_error (*mb_halo_trial_fn)(void *ctx, mb_halo_transport t, mb_nccl *nccl, int n);

/* Trial exchanges per transport of `auto` (see mb_halo_choose_transport). */
enum { MB_HALO_AUTO_TRIALS = 10 };

/* Choose the GPU halo transport of an op's exchanges: the one rule of every
 * op (smoothing, stencils). Collective over comm; the choice is the same on
 * every rank:
 *  - MPI when asked, or when comm has one rank (no neighbour to reach);
 *  - `ipc`: one untimed exchange with IPC (trial n = 1, nccl NULL), which
 *    sets the transport up on the op's device halo (collective, agreed);
 *    its error, MB_ERR_UNSUPPORTED where a neighbour is on another node or
 *    two GPUs have no peer access, is returned; `ipc` is then chosen;
 *  - otherwise an NCCL communicator over comm is made in *nccl (unless one
 *    is there already; the caller frees it with mb_nccl_free whatever the
 *    choice). Where it cannot be made (a build without NCCL, two ranks on
 *    one GPU), `nccl` fails with that error and `auto` goes on without it;
 *  - NCCL connects peers at their first exchange: one untimed exchange with
 *    NCCL (trial n = 1); `nccl` is then chosen;
 *  - `auto`: one untimed exchange with IPC (its setup; an error, agreed
 *    over comm, leaves IPC out: another node, no peer access, a build
 *    without CUDA); with neither NCCL nor IPC, MPI with no trial. Else
 *    MB_HALO_AUTO_TRIALS (10) exchanges with NCCL (if had), then as many
 *    with MPI, then with IPC (if had), each set timed (MPI_Wtime) from a
 *    barrier after the device's earlier work, the slowest rank's time
 *    (MPI_MAX) compared: the fastest, a tie keeping MPI before NCCL before
 *    IPC. (A halo that tried IPC keeps its receive buffers whatever the
 *    choice.)
 * `what` names the op in the verbose log line. The caller keeps the choice
 * for the plan's later exchanges, so auto is measured once per plan.
 * Errors: those of mb_nccl_create (for `nccl`), of the trial, MB_ERR_MPI. */
mb_error mb_halo_choose_transport(MPI_Comm comm, mb_halo_transport want, const char *what,
                                  mb_halo_trial_fn trial, void *ctx, mb_nccl **nccl,
                                  mb_halo_transport *chosen);

/* Free the plan; NULL allowed. Not collective. */
void mb_halo_free(mb_halo *halo);

#ifdef __cplusplus
}
#endif
#endif
