/* meshbatch: the stencil room's CUDA backend (cuda/stencil/mb_stencil.cu):
 * the kernels of mb_stencil.h on the current device, bit for bit the CPU's
 * (nvcc --fmad=false, the same order of operations), and their benchmark.
 * Builds without CUDA link src/ops/stencil/mb_stencil_cuda_stub.c, whose
 * functions return MB_ERR_UNSUPPORTED saying how to enable the backend.
 *
 * Kernels (cuda/stencil/mb_stencil_kernels.cuh): 2.5D blocking after
 * P. Micikevicius, "3D finite difference computation on GPUs using CUDA"
 * (GPGPU-2, 2009): a block of 32 x 8 threads covers a tile of x and y and
 * marches along z (along y for the y derivative) through a chunk of planes,
 * each thread keeping its column's 9 values around the current plane in
 * registers (every value read once). Each thread owns 1, 2 or 4 points
 * along x (a 16-byte vector; the width per op is the benchmark's best,
 * default_v); x neighbours come from the neighbouring lanes by shuffles,
 * those along the third axis through the L1 cache (a shared-memory tile
 * with one barrier per plane measured slower on the H100). Device rows are
 * padded so that each row's first point is 128-byte aligned. The heat and
 * wave steps fuse the Laplacian and the update. For comparison, the
 * shared-memory pencil kernels of M. Harris, "Finite Difference Methods in
 * CUDA C/C++" (NVIDIA, 2013): a block loads whole pencils along the
 * derivative's axis (4 rows along x; 32 columns along y or z) into shared
 * memory.
 */
#ifndef MB_STENCIL_CUDA_H
#define MB_STENCIL_CUDA_H

#include <stdint.h>

#include "mb_error.h"
#include "mb_stencil.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mb_op_ctx;

/* The stop points of a CUDA time loop (heat, wave; issue 28): ctx is the
 * op's context, whose mb_op_should_stop the loop asks every few steps
 * (about 2^28 point updates apart: 1 to 32 steps, from the grid's points,
 * so the same steps on every rank of a split grid; the host waits there for
 * the device to finish the steps enqueued up to the stop point before, so
 * it runs at most two intervals ahead and the device never idles); done
 * and total place the call's steps in the op's whole loop (the progress
 * line's fraction). A loop told to stop waits for the device and returns
 * mb_op_stopped(ctx)'s error (MB_ERR_IO, "stopped by a signal"). NULL, or
 * ctx NULL: the loop never stops. */
typedef struct mb_stencil_cuda_stop {
  const struct mb_op_ctx *ctx;
  int64_t done;  /* steps of the op's loop done before this call */
  int64_t total; /* steps of the op's whole loop */
} mb_stencil_cuda_stop;

/* op: 0, 1, 2 the derivative along z, y, x; 3 the Laplacian. u and out are
 * host arrays of the grid's points (g->ghost must be 0), float32 when f32.
 * Not collective. Errors: MB_ERR_CUDA, MB_ERR_MEMORY, MB_ERR_ARG. */
mb_error mb_stencil_cuda_apply(const mb_stencil_grid *g, int op, int f32, const void *u,
                               void *out);

/* One fused heat step out = fma((T)coef, lap(u), u) on host arrays of the
 * grid's points (ghost 0), as mb_stencil_heat_step_* (the wave's first
 * step from rest). Not collective; no stability check.
 * Errors: MB_ERR_CUDA, MB_ERR_MEMORY, MB_ERR_ARG. */
mb_error mb_stencil_cuda_heat_step(const mb_stencil_grid *g, int f32, double coef, const void *u,
                                   void *out);

/* nsteps heat steps of u in place (host array, ghost 0), as
 * mb_stencil_heat_*, with the stop points of stop (NULL: none; a stopped
 * call leaves u as it was). Not collective. Errors: as mb_stencil_heat_*,
 * MB_ERR_CUDA, and the stop's (mb_stencil_cuda_stop). */
mb_error mb_stencil_cuda_heat(const mb_stencil_grid *g, int f32, double alpha, double dt,
                              int64_t nsteps, void *u, const mb_stencil_cuda_stop *stop);

/* nsteps leapfrog steps, as mb_stencil_wave_* (host arrays, ghost 0), with
 * the stop points of stop (NULL: none; a stopped call leaves u_prev and u
 * as they were). Not collective. Errors: as mb_stencil_wave_*,
 * MB_ERR_CUDA, and the stop's (mb_stencil_cuda_stop). */
mb_error mb_stencil_cuda_wave(const mb_stencil_grid *g, int f32, double c, double dt,
                              int64_t nsteps, void *u_prev, void *u,
                              const mb_stencil_cuda_stop *stop);

struct mb_cart;

/* The split step of mb_stencil_cuda_block (mb_stencil_block_figures.step):
 *  MB_STENCIL_STEP_AUTO         the default: the fused step;
 *  MB_STENCIL_STEP_FUSED        the periodic ghost planes of the axes the
 *                               block does not cut written by the steps'
 *                               stores (wrap_copies), the shell's slabs in
 *                               one launch;
 *  MB_STENCIL_STEP_FACES_FIRST  the earlier step: every ghost face that
 *                               needs no neighbour filled by face kernels on
 *                               the compute stream before the interior, a
 *                               shell kernel per slab.
 * The default is from the 4-GPU measurements of 2026-11-27
 * (docs/benchmarks.md, "Stencils on 4 GPUs"): split, the fused step was
 * faster in 3 of 4 runs on 4 H200s; on one GPU it was 9 % slower at 1024^3
 * (3.150 against 2.889 ms, H200) until the x images were stored as whole
 * vectors, after which it was 7 % faster (3.600 against 3.858 ms on an H100,
 * same call), so it is the default on one rank too (the whole-grid heat
 * and wave loops likewise). All three give the same bits. */
enum { MB_STENCIL_STEP_AUTO = 0, MB_STENCIL_STEP_FUSED = 1, MB_STENCIL_STEP_FACES_FIRST = 2 };

/* Figures of mb_stencil_cuda_block's time steps (ms per step, means over
 * the timed steps), for `meshbatch bench stencil --distribute partitioned`:
 * a timeline from CUDA events on the two streams of a step, taken over the
 * first half of the timed steps; the second half runs without events and
 * gives plain_step_ms.
 *
 * The compute stream runs, each step: the ghost faces that need no
 * neighbour (fill_ms; none in the fused path but those of an uncut axis
 * thinner than 4 planes), the interior box (interior_ms), the wait for the
 * halo's unpack (wait_ms: the exchange not hidden), the shell (shell_ms;
 * in the fused step the shell runs on the halo stream after the unpack,
 * so shell_ms is 0 and wait_ms holds what of the exchange and the shell
 * the interior did not hide);
 * between_ms is its idle time between one step's shell and the next
 * step's start (the host late with its launches), rest_ms the wall time
 * not on the compute stream's timeline (the start after the barrier, the
 * final synchronisation). fill + interior + wait + shell + between + rest
 * = step_ms. The halo stream (urgent priority) starts when the compute
 * stream has reached the step's start (lag_ms after it: the halo stream
 * still busy), packs (pack_ms), sends and receives (transport_ms: the
 * NCCL group, or MPI through the host) and unpacks (unpack_ms);
 * exchange_ms runs from the step's start to the unpack's end, alongside
 * fill and interior. host_ms: the host's time to enqueue one step. */
typedef struct mb_stencil_block_figures {
  double step_ms;     /* wall time per step of the steps with the timing events (the
                         first half, rounded up, of the timed steps) */
  double plain_step_ms; /* wall time per step of the other half, run without the events
                           (each costs the compute stream a few microseconds): the figure
                           for speed-ups; step_ms where there is no second half */
  double fill_ms;     /* compute stream: ghost faces filled before the interior */
  double interior_ms; /* the interior box's kernel */
  double wait_ms;     /* the compute stream idle after the interior, waiting for the
                         halo: the exchange not hidden behind the interior */
  double shell_ms;    /* the shell's kernel(s), after the halo */
  double between_ms;  /* compute stream idle between a step's end and the next start */
  double rest_ms;     /* wall time outside the compute stream's timeline */
  double lag_ms;      /* halo stream: start of the pack after the step's start */
  double pack_ms, transport_ms, unpack_ms; /* halo stream */
  double exchange_ms; /* the step's start to the ghosts in place */
  double host_ms;     /* host: enqueueing one step */
  double halo_bytes;  /* sent per step by this rank */
  int transport;      /* mb_halo_transport used; 0 when no face travelled */
  int warmup;         /* in: the first `warmup` steps run but are not timed */
  int step;           /* in: the split step, MB_STENCIL_STEP_* (0: auto) */
  int fused;          /* out: 1 the fused step ran, 0 the faces-first step */
} mb_stencil_block_figures;

/* One op on this rank's block of a grid split over the ranks
 * (partition/mb_cart.h): blk describes the block (n = the plan's nloc, the
 * grid's spacing and boundary rule, ghost 0), u its values (plain host
 * array of n[0] x n[1] x n[2] values, float32 when f32, in and out). op
 * 0-2: the derivative along z, y, x into out (same shape as u); 3 the
 * Laplacian into out; 4 nsteps heat steps of u (coef = alpha dt); 5 nsteps
 * wave steps of u from rest (coef = (c dt)^2; out unused); 6 the three
 * derivatives (z, y, x) after one halo exchange, into out[3][n] (n the
 * block's points). The block lives
 * on the current device for the whole call. Each stencil fills the ghost
 * faces shared with other ranks through the halo transport `halo`
 * (mb_halo_transport: MPI through pinned host buffers, NCCL device to
 * device, or auto: NCCL where it is set up and faster in trial exchanges)
 * while the interior is computed, then the shell next to those faces.
 * Dirichlet faces are filled once per buffer. The step is fig's (NULL:
 * MB_STENCIL_STEP_AUTO, fused): fused,
 * the heat and wave steps fill the ghost planes of the periodic axes the
 * block does not cut as they store (the periodic images of the points
 * within 4 planes of those faces), so a step launches nothing on the
 * compute stream before its interior, and the shell's slabs run in one
 * launch; faces-first, face kernels wrap those axes before each interior
 * and a kernel per slab computes the shell. fig (NULL allowed) chooses the
 * step and receives the figures of the heat/wave steps. stop (NULL
 * allowed) gives the heat/wave steps their stop points (mb_stencil_cuda_stop;
 * its ctx's query is collective over its communicator, asked at the same
 * steps on every rank: every rank stops at the same step; u is then left as
 * it was). Collective over the plan's communicator. Same bits as the CPU
 * and as one rank. Errors: MB_ERR_CUDA, MB_ERR_MPI, MB_ERR_MEMORY,
 * MB_ERR_ARG, MB_ERR_UNSUPPORTED (halo NCCL where it cannot be set up), and
 * the stop's. */
mb_error mb_stencil_cuda_block(const mb_stencil_grid *blk, int f32, struct mb_cart *cart, int halo,
                               int op, double coef, int64_t nsteps, void *u, void *out,
                               mb_stencil_block_figures *fig, const mb_stencil_cuda_stop *stop);

/* Figures of `meshbatch bench stencil`: ms per call (median of repeats)
 * of each kernel on one grid on the current device, and the copy
 * bandwidth measured in the same run. */
enum { MB_STENCIL_BENCH_MAX = 24 };
typedef struct mb_stencil_bench_result {
  char device[256];
  int nkernels;
  char name[MB_STENCIL_BENCH_MAX][40];
  double ms[MB_STENCIL_BENCH_MAX];    /* per call */
  double bytes[MB_STENCIL_BENCH_MAX]; /* per call under the byte model: each array
                                         point read once, each output point written once */
  double copy_gbs;                    /* device-to-device copy, (read + write) / time */
} mb_stencil_bench_result;

/* Time the kernels on a periodic grid of n[3] points of float32 or
 * float64 (random values), warmup + repeats calls each: the 2.5D kernels
 * (derivatives, Laplacian, heat and wave steps), their scalar fallbacks and
 * the pencil kernels of the NVIDIA blog. Not collective.
 * Errors: MB_ERR_CUDA, MB_ERR_MEMORY, MB_ERR_ARG, MB_ERR_UNSUPPORTED. */
mb_error mb_stencil_cuda_bench(const int64_t n[3], int f32, int warmup, int repeats,
                               mb_stencil_bench_result *r);

#ifdef __cplusplus
}
#endif
#endif
