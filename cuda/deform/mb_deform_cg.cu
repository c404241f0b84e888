/* meshbatch: the deform room's CG on the device (the room's CG):
 * Jacobi-preconditioned CG of the three columns together (H is shared: one pass over its rows serves x, y and z, the vectors
 * [n, 3] row-major) with no host round trip inside a chunk of iterations:
 * every scalar (alpha, beta, the column's stop) lives on the device, each
 * dot product is a fixed-order two-pass sum (per-block partials, then the
 * grid's last block to finish sums them in block order and takes the
 * scalars: no single-block kernel; the same bits on every run), and a
 * column that has stopped is skipped by every kernel. Two kernels a CG
 * iteration:
 *   k_cg_spmv    p = z + beta p (z on the first iteration) into the other
 *                of two direction buffers (cp, cp2; st->par says which),
 *                q = H p with each neighbour's p formed on the fly from z
 *                and the old direction (the same expression, so the same
 *                bits as the stored one), partials p.q; the last block
 *                takes alpha;
 *   k_cg_update  x += alpha p, r -= alpha q, z = dinv r, partials r.z and
 *                r.r; the last block takes each column's stop or beta and
 *                the cap, and flips st->par.
 * The start (r = b - H x, z, the sums r.z, r.r, b.b and the stops) is
 * fused into the right-hand side's kernel (k_rhs_cg), and the b = 0
 * columns' rule and the report into k_take. The arithmetic and the
 * summation order are those of the three-kernel form this replaced
 * (product, update, direction), so the iterates are its very bits. A
 * chunk is captured as a CUDA graph and launched whole; the host reads
 * the state once per chunk (uncapped) or never (capped: cg_iterations).
 * The method of mb_pcg_solve (z = r / a_ii, a column stops when sqrt(r.r)
 * <= rtol ||b||, b = 0 gives x = 0) without its recomputed-residual
 * restart and with rounded (not exact) dot products, so its iterates
 * agree with the CPU's to rounding only.
 * This file: its kernels, H's SELL-32 layout (build_sell), the enqueueing,
 * the uncapped solve's chunk graph and the capped iteration's CUDA graph
 * (batched reads); the persistent frame that runs a batch of soft
 * iterations in one launch is mb_deform_frame.cu; the row and face
 * arithmetic shared by both is mb_deform_dev.cuh.
 * Bytes a kernel moves (this file's and mb_deform.cu's) and its time at 3
 * TB/s (HBM; H and the vectors of Roof2, about 30 MB, fit the H100's 50 MB
 * L2, so repeated passes may do better), Roof2: n = 80,656 rows, 80,089 faces (quads: 320 k slots), H
 * with about 13 entries a row on a quad grid (K^T K's 13-point stencil,
 * the faces' diagonals inside it; up to about 25 on Polylla layouts),
 * SELL-32 padding a few per cent on a grid; a vector [n, 3] is 1.94 MB:
 *   k_cg_spmv    H (12 B an entry: 12.6 MB) + rowptr 0.3 + z and the old
 *                direction gathered (3.9) + the new direction and q
 *                written (3.9): 20.7 MB, 6.9 us;
 *   k_cg_update  p, q, x, r, dinv read (8.4 MB), x, r, z written (5.8):
 *                14.2 MB, 4.7 us;
 *   so a CG step about 35 MB, 11.6 us, plus two last-block finishes
 *   (316 blocks' 72 B partials, one L2 round trip a thread, then one
 *   block sum) and two graph nodes' launch gaps: about 15 us expected
 *   (measured before this round: 44 us; after it 29 us at Roof2). What
 *   the count misses (ptxas -v, sm_90: k_cg_spmv 47 registers,
 *   k_cg_update 44, k_rhs_cg 56, k_cg_update_take
 *   48, 353-577 B of shared memory a block, no spills): Roof2 has only
 *   80,656 rows, one thread a row, 316 blocks over the H100's 132 SMs,
 *   so 2-3 blocks (512-768 threads, a quarter to a third of an SM's 2,048)
 *   an SM: the products are latency-bound, not bandwidth-bound (each of a
 *   row's ~13 entries is a column load and then the gathers of z and the
 *   old direction, 4 entries in flight by the unroll), and the last
 *   block's finish (316 partial records read, one block sum) and the
 *   node's launch gap come after the body serially in each of the two
 *   kernels. Hence (issue 26, round 2): each kernel sums only the values
 *   it needs (3, 6 or 9) by warp shuffles and one shared step (one
 *   barrier, block_parts), the last block's finish likewise, the CG's
 *   scalars read once a block (block_state); and (fifteenth session)
 *   each row's loads before its stores (update_row, take_row, spmv_row,
 *   rhs_cg_row: one memory round trip a row, not one a column) and the
 *   finish's records two a round (finish_parts). (A thread per row and
 *   column, and 4 threads a row, were tried as run-time choices of the
 *   product and removed, docs/benchmarks.md.) The grid-wide sync in place
 *   of the kernel boundaries (mb_deform_frame.cu, --persistent yes)
 *   measured slower at Roof2.
 *   k_project    face indices 32 B, positions gathered 96 B, z
 *                written 96 B (soft; q too, hard), the face mean 24 B a
 *                quad face: 19.8 MB, 6.6 us (plus the float64 3x3
 *                eigen-solves; the positions are read a second time
 *                after the normal, from L1: mb_deform_dev.cuh's
 *                project_face; before the fixed-size path, q written
 *                too and q and z re-read: 27.5 MB by this count, 116 MB
 *                of L2 traffic by Nsight Compute);
 *   k_rhs_cg     slot and face indices 64 B, y and the face means
 *                gathered 192 B, r0 - g0, gF, pin, x 80 B, H x (156 B
 *                + x gathered), X, r, z written 72 B a row: about 46 MB,
 *                15 us;
 *   the take     X, x, pin read, x written: 6.5 MB, 2.2 us (in the last
 *                update's kernel);
 *   k_assemble   (once per penalty value) base, face read, val written:
 *                3 x 8 B an entry, 30 MB, 10 us (was a host assembly and
 *                a 16 MB pageable upload inside the frame);
 *   so a soft iteration at k = 3 about 26 + 3 x 11.6 = 61 us of traffic,
 *   with 8 nodes' gaps and 4 finishes about 80 us: about 4 ms a 50-
 *   iteration frame (the goal 5 ms; to be measured).
 * H's layout, decided by those bytes: SELL-32 assembled, one thread a row
 * (same sums, same bits as the CSR row loop, coalesced). Not matrix-free
 * (D, then K^T (K p) as two products of the graph Laplacian, then the
 * faces' centring sum_f A_f^T A_f p): its bytes are fewer (K's columns
 * only, about 28 B a row a product, + the intermediate K p and the face
 * means, about 150 B a row against 156 B for SELL at 13 entries and 300
 * B at 25), but each of its three parts needs the previous one
 * complete (grid-wide), so 2 more kernels a CG step, each with a launch
 * gap and its own pass over the vectors: more time than the bytes save at
 * this size, and the products' sums would no longer be the CPU's row sums
 * over H (the CPU k-step CG agreement to 1e-13 relies on it). Not a warp
 * (or 8 lanes) a row either: 13 entries a row leave most lanes of a warp
 * idle, and a row's sum would change its order. */
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <vector>

#include "mb_deform_gpu.cuh"
#include "mb_log.h"

namespace mbd {

/* H's values at c in the sliced layout: val = base + c face (the CPU's
 * assemble_H: the pinned entries' base holds the identity's 1 or 0 and
 * their face 0, so they come out 1.0 and 0.0 exactly; the padding 0).
 * One thread per stored entry: 3 x 8 B an entry. */
__global__ void __launch_bounds__(BLOCK)
k_assemble(int64_t ns, const double *__restrict__ base, const double *__restrict__ face,
           double c, double *__restrict__ val) {
  const int64_t e = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  if (e < ns) val[e] = base[e] + c * face[e];
}

/* dinv = 1 / H_ii (diag [n]: the diagonal's positions in val); a diagonal
 * entry <= 0 or not finite flags a breakdown in st. */
__global__ void __launch_bounds__(BLOCK)
k_cg_dinv(int32_t n, const int64_t *__restrict__ diag, const double *__restrict__ val,
          double *__restrict__ dinv, cg_t *st) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  const double a = val[diag[i]];
  if (!(a > 0) || !isfinite(a)) st->bad = 1;
  dinv[i] = 1.0 / a;
}

/* The right-hand side (rhs_row, c = prm[0]), the warm start X = x and the
 * CG's start (rhs_cg_row: r into the vectors' set 0); the grid's last
 * block takes the sums, the columns' stops and the cap maxit
 * (rhs_cg_finish). */
__global__ void __launch_bounds__(BLOCK)
k_rhs_cg(int32_t n, const int32_t *__restrict__ vf_row, const int64_t *__restrict__ vf_slot,
         const int64_t *__restrict__ vf_face, const double *__restrict__ y,
         const double *__restrict__ ym, const double *__restrict__ rg,
         const double *__restrict__ gF, const double *__restrict__ pin,
         const double *__restrict__ prm, const double *__restrict__ x, double *__restrict__ X,
         sell_t H, const double *__restrict__ dinv, double *__restrict__ r,
         double *__restrict__ part, double rtol, int maxit, cg_t *st) {
  __shared__ double sh[9 * WARPS];
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  double v[9];
  rhs_cg_row(i, n, vf_row, vf_slot, vf_face, y, ym, rg, gF, pin, prm[0], x, X, H, dinv, r, v);
  block_parts<9>(v, blockIdx.x, gridDim.x, part, sh);
  if (!last_block(&st->ticket)) return;
  double s[9];
  finish_parts<9>((int)gridDim.x, part, s, sh);
  if (threadIdx.x == 0) rhs_cg_finish(s, rtol, maxit, st);
}

/* The CG's start product w0 = H z0 (w0_row) for the columns still running;
 * partials z0.w0 [3, blocks]; the grid's last block takes the first alpha
 * (w0_finish). The scalars from the block's shared copy of st. */
__global__ void __launch_bounds__(BLOCK)
k_cg_w0(int32_t n, sell_t H, cgv_t v, double *__restrict__ part, cg_t *st) {
  __shared__ double sh[3 * WARPS];
  const cg_t &cs = *block_state(st);
  if (cs.all_done) return; /* uniform over the grid */
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  double t[3];
  w0_row(i, n, H, v, &cs, t);
  block_parts<3>(t, blockIdx.x, gridDim.x, part, sh);
  if (!last_block(&st->ticket)) return;
  double s[3];
  finish_parts<3>((int)gridDim.x, part, s, sh);
  if (threadIdx.x == 0) w0_finish(s, st);
}

/* One CG step (cg_step_row: the direction, the iterate, the residual and
 * the next product in one pass over the rows); partials [9, blocks]; the
 * grid's last block takes each column's stop or its next beta and alpha,
 * the cap, and flips the vectors' sets (cg_step_finish). */
__global__ void __launch_bounds__(BLOCK)
k_cg_step(int32_t n, sell_t H, cgv_t v, double *__restrict__ part, double rtol, cg_t *st) {
  __shared__ double sh[9 * WARPS];
  const cg_t &cs = *block_state(st);
  if (cs.all_done) return;
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  double t[9];
  cg_step_row(i, n, H, v, &cs, t);
  block_parts<9>(t, blockIdx.x, gridDim.x, part, sh);
  if (!last_block(&st->ticket)) return;
  double s[9];
  finish_parts<9>((int)gridDim.x, part, s, sh);
  if (threadIdx.x == 0) cg_step_finish(s, rtol, st);
}

/* The capped CG's last step and the take in one kernel: cg_last_row where
 * the CG still runs (uniform), then k_take's row on the same thread (it
 * reads the X it has just written), one ticket (st->ticket); the grid's
 * last block counts the step (if it ran), then reports the CG's count and
 * breakdown into ctl and, batched, records the iteration (take_record). */
__global__ void __launch_bounds__(BLOCK)
k_cg_last_take(int32_t n, cgv_t v, cg_t *st, const double *__restrict__ pin,
               double *__restrict__ x, int soft, double l, double tol, ctl_t *ctl,
               batch_t *bt) {
  const cg_t &cs = *block_state(st);
  const int running = !cs.all_done; /* uniform: read before any block's last block */
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (running) cg_last_row(i, n, v, &cs);
  const int skip = take_skip(soft, l, tol, ctl, bt);
  if (!skip) max_bits(&ctl->moved, take_row(i, n, 0, v.X, pin, x, &cs, ctl));
  if (!last_block(&st->ticket) || threadIdx.x != 0) return;
  if (running) cg_last_finish(st);
  if (bt) take_record(l, tol, st->bad, st->iters, ctl, bt);
  else {
    ctl->cg_iters = st->iters;
    ctl->cg_bad = st->bad;
  }
}

/* H's values at c (k_assemble from the SELL-32 parts) and the Jacobi
 * diagonal dinv (k_cg_dinv, the CG's state cleared; a diagonal entry <= 0
 * or not finite flags a breakdown) on the default stream: the room's CG's
 * part of a factorization, once per penalty value. Errors: MB_ERR_CUDA. */
mb_error cg_values(deform_gpu *g, double c) {
  if (g->nsell) {
    k_assemble<<<blocks(g->nsell), BLOCK>>>(g->nsell, g->d->hbase.as<double>(),
                                            g->d->hface.as<double>(), c, g->val);
    MB_CHECK_LAUNCH("deform system values");
  }
  if (g->dm->nv) {
    MB_CALL_CUDA(cudaMemset(g->d->cst.p, 0, sizeof(cg_t)));
    k_cg_dinv<<<blocks(g->dm->nv), BLOCK>>>((int32_t)g->dm->nv, g->sdiag, g->val,
                                            g->d->cdinv.as<double>(), g->d->cst.as<cg_t>());
    MB_CHECK_LAUNCH("deform CG diagonal");
  }
  return MB_SUCCESS;
}

/* H's pattern in SELL-32 (see sell_row) with its two parts, base = D +
 * w_fair K^T K and face = sum_f A_f^T A_f, in that layout, the pinned
 * rows and columns as assemble_H sets them (base the identity's entry,
 * face 0), on the host into g->s_* (uploaded by upload_sell); g->nsell set.
 * Once per mesh (the values at each c are k_assemble's). Host only.
 * Errors: MB_ERR_ARG (more than 2^31 rows), MB_ERR_MEMORY. */
mb_error build_sell(deform_gpu *g) {
  const mb_csr *H = g->sys.H;
  const int64_t n = H->nrows, nsl = (n + SELL_C - 1) / SELL_C;
  MB_CHECK(n < INT32_MAX, MB_ERR_ARG, "%s: too many vertices for the device CG", g->dm->name);
  std::vector<int64_t> &sptr = g->s_ptr, &dpos = g->s_dpos;
  sptr.assign((size_t)nsl + 1, 0);
  dpos.assign((size_t)n, 0);
  for (int64_t sl = 0; sl < nsl; sl++) {
    int w = 0;
    for (int64_t i = SELL_C * sl; i < n && i < SELL_C * (sl + 1); i++)
      w = H->rowptr[i + 1] - H->rowptr[i] > w ? H->rowptr[i + 1] - H->rowptr[i] : w;
    sptr[(size_t)sl + 1] = sptr[(size_t)sl] + (int64_t)SELL_C * w;
  }
  const int64_t ns = sptr[(size_t)nsl];
  std::vector<int32_t> &col = g->s_col;
  std::vector<double> &base = g->s_base, &face = g->s_face;
  col.assign((size_t)ns, 0);
  base.assign((size_t)ns, 0.0);
  face.assign((size_t)ns, 0.0);
  const double *pin = g->pin.data();
  for (int64_t i = 0; i < n; i++)
    for (int32_t e = H->rowptr[i]; e < H->rowptr[i + 1]; e++) {
      const int32_t j = H->col[e];
      const int64_t at = sptr[(size_t)(i / SELL_C)] + (i % SELL_C) +
                         (int64_t)SELL_C * (e - H->rowptr[i]);
      col[(size_t)at] = j;
      if (pin[i] != 0 || pin[j] != 0) {
        base[(size_t)at] = i == j ? 1.0 : 0.0;
        face[(size_t)at] = 0.0;
      } else {
        base[(size_t)at] = g->base[(size_t)e];
        face[(size_t)at] = g->sys.face ? g->sys.face[e] : 0.0;
      }
      if (e == H->diag[i]) dpos[(size_t)i] = at;
    }
  g->nsell = ns;
  return MB_SUCCESS;
}

/* Enqueue the right-hand side with the room's CG's start (k_rhs_cg: b and
 * X = x from d->x, the projections' y and the face means) on stream s;
 * c from d->prm. */
void enqueue_rhs_cg(deform_gpu *g, cudaStream_t s, int hard) {
  pool_t *d = g->d;
  const int32_t n = (int32_t)g->dm->nv;
  k_rhs_cg<<<blocks(n), BLOCK, 0, s>>>(
      n, d->vf_row.as<int32_t>(), d->vf_slot.as<int64_t>(), d->vf_face.as<int64_t>(),
      hard ? d->q.as<double>() : d->z.as<double>(), d->ym.as<double>(), d->rgd.as<double>(),
      d->gFd.as<double>(), d->pind.as<double>(), d->prm.as<double>(), d->x.as<double>(),
      d->X.as<double>(), hmat(g), d->cdinv.as<double>(), d->cr[0].as<double>(),
      d->cpart.as<double>(), MB_DEFORM_PCG_RTOL, g->p->cg_iterations,
      d->cst.as<cg_t>());
}

/* Enqueue the CG's start product (k_cg_w0) on stream s, after
 * enqueue_rhs_cg. */
void enqueue_cg_start(deform_gpu *g, cudaStream_t s) {
  const int32_t n = (int32_t)g->dm->nv;
  k_cg_w0<<<blocks(n), BLOCK, 0, s>>>(n, hmat(g), cg_vectors(g), g->d->cpart.as<double>(),
                                      g->d->cst.as<cg_t>());
}

/* Enqueue len steps of the room's CG (one kernel each) on stream s,
 * solving into d->X, after enqueue_cg_start. */
void enqueue_cg_steps(deform_gpu *g, cudaStream_t s, int len) {
  const int32_t n = (int32_t)g->dm->nv;
  const cgv_t v = cg_vectors(g);
  for (int j = 0; j < len; j++)
    k_cg_step<<<blocks(n), BLOCK, 0, s>>>(n, hmat(g), v, g->d->cpart.as<double>(),
                                          MB_DEFORM_PCG_RTOL, g->d->cst.as<cg_t>());
}

/* The room's CG of H X = b after enqueue_rhs_cg (which started it, X = x
 * warm); *iters += its iterations. Capped (cg_iterations k >= 1: at most
 * k iterations, the CPU's mb_deform_cg): k iterations enqueued with no
 * read; k_take leaves the iterations and a breakdown in ctl, which the
 * iteration's one read of the maxima brings back (*iters is then added
 * there, not here). Uncapped: to MB_DEFORM_PCG_RTOL in chunks of CG_CHUNK
 * iterations (a CUDA graph captured once per run; kernel by kernel where
 * capture fails), the state read once per chunk. The b = 0 columns' rule
 * is k_take's. Errors: MB_ERR_NUMERIC (a breakdown: H not positive
 * definite or a non-finite value; no convergence in 100,000 iterations),
 * MB_ERR_CUDA. */
mb_error device_cg(deform_gpu *g, long long *iters) {
  if (g->dm->nv == 0) return MB_SUCCESS;
  const int cap = g->p->cg_iterations;
  enqueue_cg_start(g, nullptr);
  if (cap > 0) { /* no read: the cap ends it */
    enqueue_cg_steps(g, nullptr, cap);
    MB_CHECK_LAUNCH("deform CG iterations");
    return MB_SUCCESS;
  }
  if (!g->chunk && !g->chunk_failed) {
    cudaGraph_t graph = nullptr;
    cudaError_t ce = g->d->capture ? cudaSuccess
                                   : cudaStreamCreateWithFlags(&g->d->capture,
                                                               cudaStreamNonBlocking);
    if (ce == cudaSuccess)
      ce = cudaStreamBeginCapture(g->d->capture, cudaStreamCaptureModeThreadLocal);
    if (ce == cudaSuccess) {
      enqueue_cg_steps(g, g->d->capture, CG_CHUNK);
      ce = cudaStreamEndCapture(g->d->capture, &graph);
    }
    if (ce == cudaSuccess) ce = cudaGraphInstantiate(&g->chunk, graph, 0);
    if (graph) cudaGraphDestroy(graph);
    if (ce != cudaSuccess) {
      (void)cudaGetLastError();
      g->chunk = nullptr;
      g->chunk_failed = 1;
      mb_log(MB_LOG_VERBOSE, "%s: the device CG's graph could not be captured (%s); its "
             "kernels are launched one by one", g->dm->name, cudaGetErrorString(ce));
    }
  }
  cg_t h{};
  const double rtol = MB_DEFORM_PCG_RTOL;
  for (;;) {
    if (g->chunk) MB_CALL_CUDA(cudaGraphLaunch(g->chunk, nullptr));
    else enqueue_cg_steps(g, nullptr, CG_CHUNK);
    MB_CHECK_LAUNCH("deform CG iterations");
    MB_CALL_CUDA(cudaMemcpy(&h, g->d->cst.p, sizeof h, cudaMemcpyDeviceToHost));
    if (h.bad)
      MB_FAIL(MB_ERR_NUMERIC, "%s: the device CG broke down (a diagonal entry or a curvature "
              "p'Ap <= 0, or a non-finite value: the system matrix is not positive definite)",
              g->dm->name);
    if (h.all_done) break;
    if (h.iters >= 100000) {
      double worst = 0;
      for (int c = 0; c < 3; c++)
        if (!h.done[c]) worst = fmax(worst, sqrt(h.rr[c] / h.bb[c]));
      MB_FAIL(MB_ERR_NUMERIC, "%s: the device CG reached relative residual %.3g, not %g, in "
              "%d iterations", g->dm->name, worst, rtol, h.iters);
    }
  }
  *iters += h.iters;
  return MB_SUCCESS;
}

/* One whole local-global iteration of the capped device CG path (solver
 * pcg, cg_iterations k >= 1) on stream s, with no host decision inside:
 * the maxima cleared (not batched: there the take's last block clears
 * them), k_project, k_rhs_cg (the right-hand side and the CG's start),
 * k_cg_w0 (the start's product), k - 1 CG steps (k_cg_step, one kernel
 * each) and the last (k_cg_last_take: X only, with the take, the CG's
 * report and, batched, the halt) and (hard) k_dual: 3 + k kernels, 4 + k
 * hard;
 * c and al are read from d->prm. Launch errors are the caller's to check
 * (none is checked inside a capture). */
void enqueue_iteration(deform_gpu *g, cudaStream_t s, int planar, int hard, double l) {
  const mb_deform_params *p = g->p;
  pool_t *d = g->d;
  const int64_t nv = g->dm->nv;
  double *dx = d->x.as<double>();
  ctl_t *ctl = d->ctl.as<ctl_t>();
  batch_t *bt = g->batched ? d->bt.as<batch_t>() : nullptr;
  if (!bt) cudaMemsetAsync(ctl, 0, sizeof(ctl_t), s);
  enqueue_project(g, s, planar, hard);
  if (nv == 0) return;
  enqueue_rhs_cg(g, s, hard);
  enqueue_cg_start(g, s);
  /* k - 1 CG steps, then the last one (X only) fused with the take */
  enqueue_cg_steps(g, s, p->cg_iterations - 1);
  k_cg_last_take<<<blocks(nv), BLOCK, 0, s>>>((int32_t)nv, cg_vectors(g), d->cst.as<cg_t>(),
                                              d->pind.as<double>(), dx, !hard, l, p->tolerance,
                                              ctl, bt);
  if (hard) enqueue_dual(g, s);
}

/* enqueue_iteration as one CUDA graph, captured once per run before the
 * iterations (its arguments are fixed for the run: the same buffers, c and
 * al read from the device) into the pool's executable graph (updated in
 * place where the last run's has the same shape, else instantiated anew);
 * where capture fails, g->iter_failed (the iterations are then enqueued
 * kernel by kernel). Cannot fail. */
void capture_iteration(deform_gpu *g, int planar, int hard, double l) {
  pool_t *d = g->d;
  if (!g->iter_ready && !g->iter_failed) {
    cudaGraph_t graph = nullptr;
    cudaError_t ce = d->capture ? cudaSuccess
                                : cudaStreamCreateWithFlags(&d->capture, cudaStreamNonBlocking);
    if (ce == cudaSuccess)
      ce = cudaStreamBeginCapture(d->capture, cudaStreamCaptureModeThreadLocal);
    if (ce == cudaSuccess) {
      enqueue_iteration(g, d->capture, planar, hard, l);
      ce = cudaStreamEndCapture(d->capture, &graph);
    }
    if (ce == cudaSuccess && d->iter) { /* the pool's graph, updated in place if it can be */
      cudaGraphExecUpdateResultInfo info;
      if (cudaGraphExecUpdate(d->iter, graph, &info) != cudaSuccess) {
        (void)cudaGetLastError();
        cudaGraphExecDestroy(d->iter);
        d->iter = nullptr;
      }
    }
    if (ce == cudaSuccess && !d->iter) ce = cudaGraphInstantiate(&d->iter, graph, 0);
    if (graph) cudaGraphDestroy(graph);
    if (ce != cudaSuccess) {
      (void)cudaGetLastError();
      if (d->iter) cudaGraphExecDestroy(d->iter);
      d->iter = nullptr;
      g->iter_failed = 1;
      mb_log(MB_LOG_VERBOSE, "%s: the iteration's graph could not be captured (%s); its "
             "kernels are launched one by one", g->dm->name, cudaGetErrorString(ce));
    } else {
      g->iter_ready = 1;
    }
  }
}

/* One iteration: the captured graph launched on the default stream (after
 * the scalars' copy), or kernel by kernel where capture failed.
 * Errors: MB_ERR_CUDA. */
mb_error iterate_graph(deform_gpu *g, int planar, int hard, double l) {
  capture_iteration(g, planar, hard, l); /* done before the iterations: a no-op here */
  if (g->iter_ready) MB_CALL_CUDA(cudaGraphLaunch(g->d->iter, nullptr));
  else enqueue_iteration(g, nullptr, planar, hard, l);
  MB_CHECK_LAUNCH("deform iteration");
  return MB_SUCCESS;
}

} // namespace mbd
