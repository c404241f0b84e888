/* meshbatch: the deform room's persistent frame: a batch of soft
 * local-global iterations of the capped CG path (solver pcg,
 * cg_iterations k >= 1, soft, no history, phases not synchronised: the
 * benchmark's configuration and the interactive frame) in one cooperative
 * launch (cudaLaunchCooperativeKernel), grid-wide syncs (cooperative
 * groups, grid.sync()) in place of the kernel boundaries of the
 * iteration's CUDA graph (mb_deform_cg.cu).
 *
 * The grid: a row tile's threads a block (32 TW: TW the mesh's warps a
 * tile, 8, 10 or 16, mb_deform_gpu.cuh's tile_warps), as many blocks as can be
 * co-resident (SMs x the occupancy's blocks an SM), then evened out: with
 * T row tiles (row_tiles: the kernels' tile_rowcol at the mesh's columns
 * a thread K and TW) or face tiles of a block's threads, the larger
 * count, and G co-resident blocks, ceil(T / ceil(T / G)) blocks, so
 * every block takes the same number of tiles. ptxas -v (sm_90, nvcc 13):
 * k_frame<K, TW> with __launch_bounds__(32 TW, frame_min_blocks(TW)):
 * at TW = 8, 2 blocks an SM, 128 registers, 88-104 B of stack, no spills
 * (K = 3) or 16 B (K = 1); at TW = 10, 2 blocks, 96 registers, spills of
 * 84 B (K = 3) and 148 B (K = 1); at TW = 16, one block an SM, 128
 * registers, as at 8; so 264 (or 132) co-resident on an H100's 132 SMs:
 * Roof1 (20,736 rows, three threads a row: 243 row tiles at TW = 8, 122
 * at 16, auto's) runs a tile a block, the graph's kernels' shape; Roof2 (80,656 rows, a thread a row,
 * TW = 10: 253 tiles) too (at TW = 8 its 316 tiles took 158 blocks of 2
 * tiles: 7.0 ms a frame against 5.6 at 10; one H100, 2026-11-28,
 * docs/benchmarks.md, "The deform CG's tile shape"). (With 3 blocks an SM, 80 registers, the projection spilled and
 * Roof1's frame took 4.0-4.1 ms against 3.7 ms with 2: one H100,
 * 2026-11-27, docs/benchmarks.md, "Fifteenth session".) The environment
 * variable MB_DEFORM_FRAME_TILES=N (a tuning knob for measurements, 1 to
 * 64) makes every block take at least N tiles (fewer blocks: cheaper
 * syncs, less parallelism in each phase; measured at Roof1, 2026-11-28:
 * 2.2 ms at 1, 2.7 at 2, 3.4 at 3); `-v` logs the grid taken. Faces in
 * a contiguous run a block (every block a share), rows by a grid-stride
 * loop over row tiles: tile t's threads are block t's of the graph's
 * kernels, so each tile's dot product partial is block t's record
 * (block_parts), bit for bit.
 * Run where asked for (mb_deform_cuda_opts.persistent 1, bench
 * --persistent yes) and by auto for meshes of at most
 * MB_DEFORM_PERSISTENT_ROWS vertices; at Roof2 as fast as the graphs on
 * an H100 with tiles of 10 warps (2026-11-28: 5.6 against 5.5-5.6 ms a
 * frame; 7.0 against 5.8 with tiles of 8).
 *
 * An iteration, with the syncs it needs (k CG steps):
 *   projection   each face (project_face): z (q only as the general
 *                path's scratch), the face means, the largest |q - z|
 *                (atomic, into ctl[it & 1]);                        sync 1
 *   rhs + start  each row (rhs_cg_row): b, X = x, r = b - H x, z, the
 *                partials r.z, r.r, b.b;                            sync 2
 *                every block sums the tiles' partials in the same
 *                fixed order (finish_parts) and takes the CG's start
 *                (rhs_cg_finish) in its own shared copy of the CG's
 *                state: the same bits in every block, so no second sync
 *                and no block waits for a "last block";
 *   start        each row's w0 = H z0 (w0_row, partials z0.w0), sync,
 *                the first alpha in every block (w0_finish);       sync 3
 *   k - 1 steps  each row's direction, iterate, residual and next
 *                product (cg_step_row, partials r.z, r.r, z.w), sync,
 *                the stops or the next beta and alpha in every block
 *                (cg_step_finish; mb_deform_dev.cuh, "The CG": one
 *                reduction a step); a solve that stopped skips them (the
 *                state is the same everywhere, so a skipped sync is
 *                skipped by every block);                      k - 1 syncs
 *   last step    X += alpha p (cg_last_row) with the take on the same
 *                thread (take_row, the move's maximum into ctl), its sync
 *                before the next projection reads x;                 1 sync
 *   record       block 0 records the iteration (take_record: the maxima,
 *                the CG's count and breakdown, the halt where the host's
 *                soft rules stop) and clears ctl[it & 1]: the next
 *                iteration uses the other ctl, so no sync is needed
 *                before its projection.
 * So 3 + k grid syncs an iteration (6 at k = 3; 2 + 2 k with the two
 * reductions a step of the PCG before), against 3 + k kernels (graph
 * nodes), each with its launch gap and its grid's last-block finish after
 * the body. The partial sums alternate between two buffers by phase (a
 * block may write the next phase's partials while another still reads
 * this phase's: the sync between guarantees that the buffer it writes was
 * read by all). The data written during a frame are read with coherent
 * loads (no __restrict__ on them: mb_deform_dev.cuh).
 * The arithmetic and the summation order are the graph path's (the same
 * __device__ functions), so the positions, the records and the reports
 * are bitwise those of the graph path (tests/deform/test_gpu_deform.c,
 * test_persistent_frame), and a run repeats bit for bit.
 *
 * Measured (2026-11-28, one H100, Roof1 at k = 3, 81 blocks): the
 * environment variable MB_DEFORM_FRAME_PROFILE=1 (a measuring knob) has
 * block 0's thread 0 add each segment's clock64() cycles (an iteration's
 * work, sync and sums of each phase) into a device array and prints the
 * us an iteration of each on stderr after each batch (the device
 * synchronised). With the PCG's two reductions a step and the partial
 * sums stored [tiles, N]: 72 us an iteration, of which the sums 25 us (a
 * 6-value sum 5 us, the start's 9-value sum 6.7 us, a 3-value sum 1.1 us),
 * the syncs 11 us (1.2-2.0 each), the work 35 us (projection 6.9,
 * right-hand side 4.6, a product 5.0, an update 2.5); with the sums
 * stored [N, tiles] (coalesced) and at most 6 values a pass: 57-61 us;
 * with one reduction a step: 54 us (projection 7.6 + sync 1.8, right-hand
 * side 4.4 + 1.5 + sums 2.0, w0 3.0 + 0.9 + 1.1, a step 9.0-9.6 + 1.7-2.0
 * + 2.9, the last step 2.1 + 1.1); docs/benchmarks.md, "The deform
 * frame's sums and the one-reduction CG". With three threads a row (243
 * blocks), the finishes column-parallel and the faces spread: 40.4 us
 * (projection 5.5 + 2.0, right-hand side 3.6 + 2.5 + 2.1, w0 2.3 + 1.7 +
 * 1.5, a step 3.2-3.3 + 2.5-2.7 + 2.1, the last step 1.4 + 2.0);
 * docs/benchmarks.md, "The deform CG a thread a row and column".
 *
 * Where it does not run: the device lacks cooperative launch, the kernel
 * cannot be resident (occupancy 0), or the launch fails (another context
 * holds SMs: cudaErrorCooperativeLaunchTooLarge): frame_batch reports
 * *ran 0 and the run launches the graphs for the rest of the run; hard
 * mode, uncapped CG, a history and synchronised phases never come here. */
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "mb_deform_gpu.cuh"
#include "mb_log.h"

namespace mbd {

/* The blocks an SM the frame's register budget is set for at W warps a
 * block (__launch_bounds__: at most 65536 / (2 x 256) = 128 registers a
 * thread at W = 8, 102 at 10, 128 at 16 with one block an SM; see
 * above). */
constexpr int frame_min_blocks(int W) { return W >= 16 ? 1 : 2; }

/* A batch's arguments (device pointers borrowed from the pool; the arrays'
 * shapes as in mb_deform_gpu.cuh's pool_t). */
struct frame_args {
  int32_t n;          /* rows (vertices) */
  int64_t nf;         /* faces */
  int planar;         /* the constraint: planar (1) or regular (0) */
  int iters;          /* iterations of this batch (1 .. BATCH) */
  int64_t ntiles;     /* row tiles: row_tiles(K, TW, n) */
  int maxit;          /* the CG's cap k >= 1 */
  double l, tol, rtol; /* the mean edge length, the tolerance, the CG's rtol */
  const int64_t *fo, *fi;   /* [nf + 1], [nidx] the faces' slots */
  double *x, *q, *z, *ym;   /* [n, 3] positions; [nidx, 3] centred, projected; [nf, 3] means */
  const int32_t *vf_row;    /* [n + 1] each vertex's slot entries */
  const int64_t *vf_slot, *vf_face; /* [nidx] their slots and faces */
  const double *rg, *gF, *pin, *prm; /* [n, 3], [n, 3], [n], [2] (c, al) */
  sell_t H;                 /* H at c, SELL-32 */
  cgv_t cg;                 /* the CG's vectors, X and dinv */
  double *part;             /* [2, 9, ntiles] the partial sums ([N, ntiles] used, N = 9
                               or 3 by phase), alternating by phase */
  cg_t *st;                 /* the CG's state: read at the start, written at the end */
  ctl_t *ctl;               /* [2] the maxima, alternating by iteration */
  batch_t *bt;              /* the batch's records and halt */
  unsigned long long *prof; /* [PROF_SLOTS] block 0's segment times (MB_DEFORM_FRAME_PROFILE), or NULL */
};

/* The profile's slots (a measuring knob, MB_DEFORM_FRAME_PROFILE=1: block
 * 0's thread 0 adds each segment's clock64() cycles into its slot; the last
 * three: the frame's cycles, its globaltimer ns and its iterations).
 * Segments of an iteration in order: the projection's work, its sync;
 * the right-hand side's work, its sync, its sums; the start's product's
 * work, sync and sums; each CG step's work, sync and sums; the last step's
 * (with the take) work and sync. */
constexpr int PROF_SLOTS = 64;

/* Block 0's clock at a segment's end into prof[(*seg)++] (no-op without a
 * profile). */
__device__ inline void prof_stamp(unsigned long long *prof, long long *last, int *seg) {
  if (!prof || blockIdx.x != 0 || threadIdx.x != 0) return;
  const long long t = clock64();
  if (*seg < PROF_SLOTS - 3) prof[*seg] += (unsigned long long)(t - *last);
  (*seg)++;
  *last = t;
}

__device__ inline unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/* Every block's sums tot [N] (shared; warp 0 synchronised to read them)
 * of the partials [N, ntiles] of buffer pb (finish_parts: the fixed
 * order, the same bits in every block); pb flipped. The caller syncs
 * before sh is written again. */
template <int N, int W>
__device__ inline void grid_sums(const frame_args &a, int &pb, double *tot, double *sh) {
  finish_parts<N, W>((int)a.ntiles, a.part + (int64_t)pb * 9 * a.ntiles, tot, sh);
  pb ^= 1;
  if (threadIdx.x < 32) __syncwarp(); /* tot written by warp 0, read there */
}

/* a.iters soft iterations (see the header): the same work, records and
 * bits as as many launches of the capped iteration's graph (batched). */
template <int K, int W>
__global__ void __launch_bounds__(32 * W, frame_min_blocks(W)) k_frame(frame_args a) {
  cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  __shared__ double sh[9 * W];
  __shared__ cg_t cs; /* the CG's state: the same in every block */
  if (threadIdx.x == 0) cs = *a.st;
  __syncthreads();
  const int64_t fpb = (a.nf + gridDim.x - 1) / gridDim.x; /* faces a block */
  const int64_t p9 = 9 * a.ntiles;
  const double c = a.prm[0];
  int pb = 0;
  __shared__ double tot[9]; /* the grid's sums (grid_sums) */
  double v[3 * K]; /* a thread's values (its columns'): the first K in the start's product */
  long long t0 = clock64(), tlast = t0;
  const unsigned long long ns0 = a.prof ? global_ns() : 0;
  for (int it = 0; it < a.iters; it++) {
    int seg = 0;
    ctl_t *ctl = a.ctl + (it & 1);
    /* the projection: each block a contiguous run of fpb faces, so that
     * the faces spread over every block (a face a thread) rather than
     * filling the first blocks' threads (with three threads a row the grid
     * has three times the threads there are faces) */
    double worst = 0;
    for (int64_t k = threadIdx.x; k < fpb; k += 32 * W) {
      const int64_t f = blockIdx.x * fpb + k;
      if (f >= a.nf) break;
      const double w = project_face(f, a.fo, a.fi, a.x, nullptr, a.q, a.z, a.ym, a.planar, 0, 1.0);
      if (w > worst) worst = w;
    }
    max_bits(&ctl->dist, worst);
    prof_stamp(a.prof, &tlast, &seg);
    grid.sync();
    prof_stamp(a.prof, &tlast, &seg);
    /* the right-hand side and the CG's start */
    for (int64_t t = blockIdx.x; t < a.ntiles; t += gridDim.x) {
      rhs_cg_row<K>(tile_rowcol<K, W>(t), a.n, a.vf_row, a.vf_slot, a.vf_face, a.z, a.ym, a.rg,
                    a.gF, a.pin, c, a.x, a.cg.X, a.H, a.cg.dinv, a.cg.r[0], v);
      block_parts<K, 3, W>(v, t, a.ntiles, a.part + pb * p9, sh);
      __syncthreads(); /* sh read by block_parts' totals before the next tile's */
    }
    prof_stamp(a.prof, &tlast, &seg);
    grid.sync();
    prof_stamp(a.prof, &tlast, &seg);
    grid_sums<9, W>(a, pb, tot, sh);
    if (threadIdx.x < 32) rhs_cg_finish(tot, a.rtol, a.maxit, &cs);
    __syncthreads();
    prof_stamp(a.prof, &tlast, &seg);
    /* the start's product w0 = H z0 and the first alpha */
    if (!cs.all_done) {
      for (int64_t t = blockIdx.x; t < a.ntiles; t += gridDim.x) {
        w0_row<K>(tile_rowcol<K, W>(t), a.n, a.H, a.cg, &cs, v);
        block_parts<K, 1, W>(v, t, a.ntiles, a.part + pb * p9, sh);
        __syncthreads();
      }
      prof_stamp(a.prof, &tlast, &seg);
      grid.sync();
      prof_stamp(a.prof, &tlast, &seg);
      grid_sums<3, W>(a, pb, tot, sh);
      if (threadIdx.x < 32) w0_finish(tot, &cs);
      __syncthreads();
      prof_stamp(a.prof, &tlast, &seg);
    }
    /* k - 1 steps, each one pass and one sum (uniform skips: the state is
     * the same in every block) */
    for (int step = 0; step + 1 < a.maxit && !cs.all_done; step++) {
      for (int64_t t = blockIdx.x; t < a.ntiles; t += gridDim.x) {
        cg_step_row<K>(tile_rowcol<K, W>(t), a.n, a.H, a.cg, &cs, v);
        block_parts<K, 3, W>(v, t, a.ntiles, a.part + pb * p9, sh);
        __syncthreads();
      }
      prof_stamp(a.prof, &tlast, &seg);
      grid.sync();
      prof_stamp(a.prof, &tlast, &seg);
      grid_sums<9, W>(a, pb, tot, sh);
      if (threadIdx.x < 32) cg_step_finish(tot, &cs);
      __syncthreads();
      prof_stamp(a.prof, &tlast, &seg);
    }
    /* the last step (X only) with the take on the same thread, its sync
     * before the next iteration's projection reads x */
    const int running = !cs.all_done;
    const int skip = take_skip(1, a.l, a.tol, ctl, a.bt);
    double moved = 0;
    for (int64_t t = blockIdx.x; t < a.ntiles; t += gridDim.x) {
      const rowcol rc = tile_rowcol<K, W>(t);
      if (running) cg_last_row<K>(rc, a.n, a.cg, &cs);
      if (!skip) {
        const double m = take_row(rc.i, rc.c, rc.c + K, a.n, 0, a.cg.X, a.pin, a.x, &cs, ctl);
        if (m > moved) moved = m;
      }
    }
    max_bits(&ctl->moved, moved);
    prof_stamp(a.prof, &tlast, &seg);
    grid.sync();
    prof_stamp(a.prof, &tlast, &seg);
    if (threadIdx.x == 0 && running) cg_last_finish(&cs);
    __syncthreads();
    if (blockIdx.x == 0 && threadIdx.x == 0) take_record(a.l, a.tol, cs.bad, cs.iters, ctl, a.bt);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    cs.ticket = 0;
    *a.st = cs;
    if (a.prof) {
      a.prof[PROF_SLOTS - 3] += (unsigned long long)(clock64() - t0);
      a.prof[PROF_SLOTS - 2] += global_ns() - ns0;
      a.prof[PROF_SLOTS - 1] += (unsigned long long)a.iters;
    }
  }
}

/* The frame's kernel for g's tile shape (with_tile) and its threads a
 * block (*threads). */
static void (*frame_kernel(const deform_gpu *g, int *threads))(frame_args) {
  void (*k)(frame_args) = nullptr;
  with_tile(g, [&](auto t) {
    using T = decltype(t);
    k = k_frame<T::k, T::w>;
    *threads = T::threads;
  });
  return k;
}

/* The grid of the persistent frame for g's mesh (see the header), 0 where
 * it cannot run (reason into why). */
int frame_grid(const deform_gpu *g, char *why, size_t nwhy) {
  int dev = -1, coop = 0, sms = 0, per = 0, threads = 0;
  void (*kernel)(frame_args) = frame_kernel(g, &threads);
  cudaError_t ce = cudaGetDevice(&dev);
  if (ce == cudaSuccess) ce = cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev);
  if (ce == cudaSuccess) ce = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (ce == cudaSuccess)
    ce = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kernel, threads, 0);
  if (ce != cudaSuccess) {
    (void)cudaGetLastError();
    snprintf(why, nwhy, "%s", cudaGetErrorString(ce));
    return 0;
  }
  if (!coop || per < 1 || sms < 1) {
    snprintf(why, nwhy, "%s", !coop ? "no cooperative launch on this device"
                                    : "the kernel cannot be resident");
    return 0;
  }
  const int64_t rows = row_tiles(g->kcols, g->tw, g->dm->nv);
  const int64_t faces = (g->dm->nf + threads - 1) / threads;
  const int64_t tiles = rows > faces ? rows : faces;
  const int64_t cap = (int64_t)sms * per;
  int64_t rounds = (tiles + cap - 1) / cap;
  const char *env = getenv("MB_DEFORM_FRAME_TILES"); /* a tuning knob: tiles a block, at least */
  const long want = env ? strtol(env, nullptr, 10) : 0;
  if (want > rounds && want <= 64) rounds = want;
  const int grid = (int)((tiles + rounds - 1) / rounds);
  mb_log(MB_LOG_VERBOSE, "%s: the persistent frame: %d blocks of %d threads (%lld tiles, %lld "
         "a block at most; %d blocks an SM co-resident on %d SMs)", g->dm->name, grid, threads,
         (long long)tiles, (long long)rounds, per, sms);
  return grid;
}

/* The profile so far (MB_DEFORM_FRAME_PROFILE), one line on stderr: us an
 * iteration of each segment (block 0's clock, scaled by the frame's
 * globaltimer ns a cycle). Synchronises the device. */
static void print_profile(pool_t *d, int maxit) {
  unsigned long long h[PROF_SLOTS];
  if (cudaMemcpy(h, d->prof.p, sizeof h, cudaMemcpyDeviceToHost) != cudaSuccess) return;
  const double it = (double)h[PROF_SLOTS - 1], nspc = (double)h[PROF_SLOTS - 2] / (double)h[PROF_SLOTS - 3];
  if (!(it > 0)) return;
  static const char *part[3] = {"work", "sync", "sums"};
  char line[2048];
  int o = snprintf(line, sizeof line, "frame profile (%.0f iterations, %.3f us an iteration, us):",
                   it, 1e-3 * (double)h[PROF_SLOTS - 2] / it);
  for (int k = 0; k < PROF_SLOTS - 3 && o < (int)sizeof line - 64; k++) {
    if (!h[k]) continue;
    char name[24];
    const int steps = maxit - 1; /* 3 segments each after the w0 product's */
    if (k < 2) snprintf(name, sizeof name, "proj.%s", part[k]);
    else if (k < 5) snprintf(name, sizeof name, "rhs.%s", part[k - 2]);
    else if (k < 8) snprintf(name, sizeof name, "w0.%s", part[k - 5]);
    else if (k < 8 + 3 * steps) snprintf(name, sizeof name, "step%d.%s", (k - 8) / 3, part[(k - 8) % 3]);
    else snprintf(name, sizeof name, "last.%s", part[(k - 8 - 3 * steps) % 3]);
    o += snprintf(line + o, sizeof line - (size_t)o, " %s %.2f", name,
                  1e-3 * (double)h[k] * nspc / it);
  }
  fprintf(stderr, "%s\n", line);
}

mb_error frame_batch(deform_gpu *g, int planar, int bn, double l, int *ran) {
  *ran = 0;
  if (g->persist_failed || !g->batched || bn < 1 || bn > BATCH) return MB_SUCCESS;
  char why[160] = "";
  if (!g->persist_grid) g->persist_grid = frame_grid(g, why, sizeof why);
  cudaError_t ce = cudaSuccess;
  if (g->persist_grid > 0) {
    pool_t *d = g->d;
    frame_args a;
    a.n = (int32_t)g->dm->nv;
    a.nf = g->dm->nf;
    a.planar = planar;
    a.iters = bn;
    a.ntiles = row_tiles(g->kcols, g->tw, g->dm->nv);
    a.maxit = g->p->cg_iterations;
    a.l = l;
    a.tol = g->p->tolerance;
    a.rtol = MB_DEFORM_PCG_RTOL;
    a.fo = d->fo.as<int64_t>();
    a.fi = d->fi.as<int64_t>();
    a.x = d->x.as<double>();
    a.q = d->q.as<double>();
    a.z = d->z.as<double>();
    a.ym = d->ym.as<double>();
    a.vf_row = d->vf_row.as<int32_t>();
    a.vf_slot = d->vf_slot.as<int64_t>();
    a.vf_face = d->vf_face.as<int64_t>();
    a.rg = d->rgd.as<double>();
    a.gF = d->gFd.as<double>();
    a.pin = d->pind.as<double>();
    a.prm = d->prm.as<double>();
    a.H = hmat(g);
    a.cg = cg_vectors(g);
    a.part = d->cpart.as<double>();
    a.st = d->cst.as<cg_t>();
    a.ctl = d->ctl.as<ctl_t>();
    a.bt = d->bt.as<batch_t>();
    a.prof = nullptr;
    const int profile = getenv("MB_DEFORM_FRAME_PROFILE") != nullptr;
    if (profile) {
      if (!d->prof.p) {
        MB_CALL(grow(&d->prof, PROF_SLOTS * sizeof(unsigned long long), "frame profile"));
        MB_CALL_CUDA(cudaMemset(d->prof.p, 0, PROF_SLOTS * sizeof(unsigned long long)));
      }
      a.prof = d->prof.as<unsigned long long>();
    }
    void *args[] = {&a};
    int threads = 0;
    void (*kernel)(frame_args) = frame_kernel(g, &threads);
    ce = cudaLaunchCooperativeKernel((const void *)kernel, dim3((unsigned)g->persist_grid),
                                     dim3((unsigned)threads), args, 0, nullptr);
    if (ce == cudaSuccess) {
      *ran = 1;
      if (profile) print_profile(d, a.maxit);
      return MB_SUCCESS;
    }
    (void)cudaGetLastError();
    snprintf(why, sizeof why, "%s", cudaGetErrorString(ce));
  }
  g->persist_failed = 1;
  mb_log(MB_LOG_VERBOSE, "%s: the persistent frame cannot run (%s); the iterations run as CUDA "
         "graphs", g->dm->name, why);
  return MB_SUCCESS;
}

} // namespace mbd
