/* meshbatch: the deform room's CG on the device (the room's CG):
 * Jacobi-preconditioned CG of the three columns together (H is shared: one
 * pass over its rows serves x, y and z, the vectors [n, 3] row-major) with
 * no host round trip inside a chunk of steps: every scalar (alpha, beta,
 * the column's stop) lives on the device, each dot product is a fixed-order
 * two-pass sum (per-block partials [N, blocks], then the grid's last block
 * to finish sums them in block order and takes the scalars: no
 * single-block kernel; the same bits on every run), and a column that has
 * stopped is skipped by every kernel.
 *
 * The method: Chronopoulos and Gear's CG (mb_deform_dev.cuh, "The CG"):
 * one reduction a step, so one kernel a step:
 *   k_rhs_cg        the right-hand side, X = x, r0 = b - H x into the
 *                   vectors' set 0, the sums r.z, r.r, b.b; the last
 *                   block takes the stops and the cap (rhs_cg_finish);
 *   k_cg_w0         w0 = H z0 (z0 = dinv r0 formed on the fly), the sums
 *                   z0.w0; the last block takes the first alpha;
 *   k_cg_step       p = z + beta p, q = w + beta q, X += alpha p, r' = r -
 *                   alpha q, z' = dinv r', w' = H z' (each neighbour's z'
 *                   formed from its old r, w, q: the same expression as its
 *                   own row's, so the same bits), the sums r'.z', r'.r',
 *                   z'.w'; the last block takes the stops or the next beta
 *                   and alpha (its curvature z'.w' - beta rho / alpha_old
 *                   <= 0: a breakdown) and flips the sets (st->par);
 *   k_cg_last_take  a capped solve's last step (X += alpha p only) with
 *                   the take (k_take's row on the same thread), the report
 *                   and, batched, the iteration's record.
 * So a capped soft iteration is 3 + k kernels (k_project, k_rhs_cg, k_cg_w0,
 * k - 1 steps, the last with the take), 4 + k hard (k_dual); the standard
 * PCG this replaced took 2 + 2 k (a product kernel, then an update kernel,
 * a step: two reductions). Measured (one H100, 2026-11-28, bench deform
 * --cg-iterations 3, median frame): Roof2 graphs 6.5-6.6 -> 6.0-6.1 ms,
 * Roof1 graphs 4.2-4.3 -> 3.5 ms, Roof1 persistent frame 3.0-3.3 -> 2.9-3.0
 * ms. A step gathers more than a product did (each neighbour's r, w, q and
 * dinv, 10 values, against z and the old direction, 6) and writes p, q, X,
 * r and w (15 values a row, as the product and the update together did).
 * The iterates are the CPU's PCG's (mb_deform_cg.c, mb_pcg_solve: z = r /
 * a_ii, a column stops when sqrt(r.r) <= rtol ||b||, b = 0 gives x = 0) in
 * exact arithmetic, not bit for bit: the recurrences round differently
 * (deform_gpu, test_fused_cg: 10 CG iterations within 1e-13 of the box of
 * the CPU's). A chunk of steps is captured as a CUDA graph and launched
 * whole; the host reads the state once per chunk (uncapped) or never
 * (capped: cg_iterations).
 *
 * This file: its kernels, H's SELL-32 layout (build_sell), the enqueueing,
 * the uncapped solve's chunk graph and the capped iteration's CUDA graph
 * (batched reads); the persistent frame that runs a batch of soft
 * iterations in one launch is mb_deform_frame.cu; the row and face
 * arithmetic shared by both is mb_deform_dev.cuh.
 *
 * H's layout: SELL-32 assembled, one thread a row and column or a row
 * (tile_rowcol; either way the CSR row loop's terms in its order,
 * coalesced), chosen over a matrix-free product (D,
 * then K^T (K p) as two products of the graph Laplacian, then the faces'
 * centring): fewer bytes (about 150 B a row against 156 B for SELL at 13
 * entries and 300 B at 25), but each of its three parts needs the previous
 * one complete (grid-wide), so 2 more kernels a step, each with a launch
 * gap and its own pass over the vectors. Not a warp (or 8 lanes) a row
 * either: 13 entries a row leave most lanes of a warp idle. The product's
 * rows are latency-bound at these sizes (Roof2: 80,656 rows, 316 blocks of
 * 256 over 132 SMs; Roof1 81 blocks a thread a row): hence three threads
 * a row (a column each) on meshes up to MB_DEFORM_SPLIT_ROWS vertices
 * (Roof1: 243 blocks; 2026-11-28, one H100: a CG step's work in the
 * persistent frame 9.3 -> 3.3 us; at Roof2 the graphs took 6.7 against
 * 5.9 ms, so a thread a row there), each row's loads before its stores
 * (one memory round trip a row), the scalars read once a block
 * (block_state), the sums by warp shuffles and one shared step
 * (block_parts), the finish loading two records a round and taking the
 * columns' scalars side by side in warp 0. (4 threads a row and blocks of
 * 128 threads were measured and not kept: docs/benchmarks.md.) */
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
template <int K, int W>
__global__ void __launch_bounds__(32 * W)
k_rhs_cg(int32_t n, const int32_t *__restrict__ vf_row, const int64_t *__restrict__ vf_slot,
         const int64_t *__restrict__ vf_face, const double *__restrict__ y,
         const double *__restrict__ ym, const double *__restrict__ rg,
         const double *__restrict__ gF, const double *__restrict__ pin,
         const double *__restrict__ prm, const double *__restrict__ x, double *__restrict__ X,
         sell_t H, const double *__restrict__ dinv, double *__restrict__ r,
         double *__restrict__ part, double rtol, int maxit, cg_t *st) {
  __shared__ double sh[9 * W];
  double v[3 * K];
  rhs_cg_row<K>(tile_rowcol<K, W>(blockIdx.x), n, vf_row, vf_slot, vf_face, y, ym, rg, gF, pin,
                prm[0], x, X, H, dinv, r, v);
  block_parts<K, 3, W>(v, blockIdx.x, gridDim.x, part, sh);
  if (!last_block(&st->ticket)) return;
  __shared__ double tot[9];
  finish_sums<9, W>((int)gridDim.x, part, tot, sh);
  if (threadIdx.x < 32) rhs_cg_finish(tot, rtol, maxit, st);
}

/* The CG's start product w0 = H z0 (w0_row) for the columns still running;
 * partials z0.w0 [3, blocks]; the grid's last block takes the first alpha
 * (w0_finish). The scalars from the block's shared copy of st. */
template <int K, int W>
__global__ void __launch_bounds__(32 * W)
k_cg_w0(int32_t n, sell_t H, cgv_t v, double *__restrict__ part, cg_t *st) {
  __shared__ double sh[3 * W];
  const cg_t &cs = *block_state(st);
  if (cs.all_done) return; /* uniform over the grid */
  double t[K];
  w0_row<K>(tile_rowcol<K, W>(blockIdx.x), n, H, v, &cs, t);
  block_parts<K, 1, W>(t, blockIdx.x, gridDim.x, part, sh);
  if (!last_block(&st->ticket)) return;
  __shared__ double tot[3];
  finish_sums<3, W>((int)gridDim.x, part, tot, sh);
  if (threadIdx.x < 32) w0_finish(tot, st);
}

/* One CG step (cg_step_row: the direction, the iterate, the residual and
 * the next product in one pass over the rows); partials [9, blocks]; the
 * grid's last block takes each column's stop or its next beta and alpha,
 * the cap, and flips the vectors' sets (cg_step_finish). */
template <int K, int W>
__global__ void __launch_bounds__(32 * W)
k_cg_step(int32_t n, sell_t H, cgv_t v, double *__restrict__ part, cg_t *st) {
  __shared__ double sh[9 * W];
  const cg_t &cs = *block_state(st);
  if (cs.all_done) return;
  double t[3 * K];
  cg_step_row<K>(tile_rowcol<K, W>(blockIdx.x), n, H, v, &cs, t);
  block_parts<K, 3, W>(t, blockIdx.x, gridDim.x, part, sh);
  if (!last_block(&st->ticket)) return;
  __shared__ double tot[9];
  finish_sums<9, W>((int)gridDim.x, part, tot, sh);
  if (threadIdx.x < 32) cg_step_finish(tot, st);
}

/* The capped CG's last step and the take in one kernel: cg_last_row where
 * the CG still runs (uniform), then k_take's row on the same thread (it
 * reads the X it has just written), one ticket (st->ticket); the grid's
 * last block counts the step (if it ran), then reports the CG's count and
 * breakdown into ctl and, batched, records the iteration (take_record). */
template <int K, int W>
__global__ void __launch_bounds__(32 * W)
k_cg_last_take(int32_t n, cgv_t v, cg_t *st, const double *__restrict__ pin,
               double *__restrict__ x, int soft, double l, double tol, ctl_t *ctl,
               batch_t *bt) {
  const cg_t &cs = *block_state(st);
  const int running = !cs.all_done; /* uniform: read before any block's last block */
  const rowcol rc = tile_rowcol<K, W>(blockIdx.x);
  if (running) cg_last_row<K>(rc, n, v, &cs);
  const int skip = take_skip(soft, l, tol, ctl, bt);
  if (!skip) max_bits(&ctl->moved, take_row(rc.i, rc.c, rc.c + K, n, 0, v.X, pin, x, &cs, ctl));
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
  with_tile(g, [&](auto t) {
    using T = decltype(t);
    k_rhs_cg<T::k, T::w><<<row_tiles(T::k, T::w, n), T::threads, 0, s>>>(
        n, d->vf_row.as<int32_t>(), d->vf_slot.as<int64_t>(), d->vf_face.as<int64_t>(),
        hard ? d->q.as<double>() : d->z.as<double>(), d->ym.as<double>(), d->rgd.as<double>(),
        d->gFd.as<double>(), d->pind.as<double>(), d->prm.as<double>(), d->x.as<double>(),
        d->X.as<double>(), hmat(g), d->cdinv.as<double>(), d->cr[0].as<double>(),
        d->cpart.as<double>(), MB_DEFORM_PCG_RTOL, g->p->cg_iterations, d->cst.as<cg_t>());
  });
}

/* Enqueue the CG's start product (k_cg_w0) on stream s, after
 * enqueue_rhs_cg. */
void enqueue_cg_start(deform_gpu *g, cudaStream_t s) {
  const int32_t n = (int32_t)g->dm->nv;
  with_tile(g, [&](auto t) {
    using T = decltype(t);
    k_cg_w0<T::k, T::w><<<row_tiles(T::k, T::w, n), T::threads, 0, s>>>(
        n, hmat(g), cg_vectors(g), g->d->cpart.as<double>(), g->d->cst.as<cg_t>());
  });
}

/* Enqueue len steps of the room's CG (one kernel each) on stream s,
 * solving into d->X, after enqueue_cg_start. */
void enqueue_cg_steps(deform_gpu *g, cudaStream_t s, int len) {
  const int32_t n = (int32_t)g->dm->nv;
  const cgv_t v = cg_vectors(g);
  with_tile(g, [&](auto t) {
    using T = decltype(t);
    for (int j = 0; j < len; j++)
      k_cg_step<T::k, T::w><<<row_tiles(T::k, T::w, n), T::threads, 0, s>>>(
          n, hmat(g), v, g->d->cpart.as<double>(), g->d->cst.as<cg_t>());
  });
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
  with_tile(g, [&](auto t) {
    using T = decltype(t);
    k_cg_last_take<T::k, T::w><<<row_tiles(T::k, T::w, nv), T::threads, 0, s>>>(
        (int32_t)nv, cg_vectors(g), d->cst.as<cg_t>(), d->pind.as<double>(), dx, !hard, l,
        p->tolerance, ctl, bt);
  });
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
