/* meshbatch: the deform op on the GPU (see src/ops/deform/mb_deform.h for
 * the method and mb_deform_cuda.h for the contract).
 *
 * The room's CUDA files: this one (the iteration's face and vertex
 * kernels, the device pool, the setup, the run and the entry points);
 * mb_deform_cg.cu (the room's CG: its kernels, H's SELL-32 layout, the
 * chunk and iteration CUDA graphs, with the kernels' byte counts);
 * mb_deform_frame.cu (the persistent cooperative frame: a batch of soft
 * capped iterations in one launch); mb_deform_dev.cuh (the row and face
 * arithmetic all of them share, so every path has the same bits) and
 * mb_deform_gpu.cuh (the pool and the run's state). This file is
 * longer than the house's 1,000 lines (about 1,100) since the pools
 * preparing threads upload into joined it (2026-11-29): the pools, the
 * uploads and the run's host loop share one state; the pools and uploads
 * are the part to move into a file of their own if it grows further.
 *
 * Host, once per mesh: the checks of the CPU solver (the same order and
 * messages), the system's pattern and parts by the CPU's own functions
 * (mb_deform_private.h), the weights, targets, pinned vertices, the mean
 * edge length and the constant parts of the right-hand side (r0 - g0 and
 * gF: mb_deform_setup, shared with mb_deform.c's run()); per penalty value c the matrix H
 * (the room's CG: its pattern and its two parts base and face uploaded
 * once in the SELL-32 layout, k_assemble forming base + c face on the
 * device, no host assembly or upload at c; else mb_deform_system_matrix
 * on the host, uploaded into a linalg device CSR and, for solver cholesky,
 * factored by csrchol, METIS order and analysis once). The device buffers
 * live in a pool kept from mesh to mesh (pool_t: grown, never shrunk), so
 * a batch of meshes on a rank does no per-mesh cudaMalloc or cudaFree; the
 * uploads go through the pool's pinned staging, asynchronously.
 * The host part (prepare_host: no CUDA call) can run ahead on another
 * thread (mb_deform_cuda_prepare), so a batch is a two-stage pipeline:
 * mesh i+1's host setup while mesh i's frame runs on the device (`bench
 * deform --batch`); the device work, and so the results, are unchanged.
 *
 * Device, per iteration (the positions stay there):
 *   k_project  one thread per face over faces of mixed sizes by the face
 *              offsets (the chapter's offset-array scheme): the centred
 *              coordinates (+ the scaled duals, hard), the projection
 *              (mb_deform_face.h: the CPU's float64 formulas), the
 *              largest |q - z|, the over-relaxation (hard) and the face
 *              means of y (the A_f^T gather's second term); planar faces
 *              of 3 and 4 points with their points in registers (no
 *              local memory; q not written in soft mode), others through
 *              the face's rows of q and z (mb_deform_dev.cuh's
 *              project_face);
 *   k_rhs      one thread per vertex: b = (r0 - g0) + c (sum_f A_f^T y_f -
 *              gF), pinned rows b = x; the warm start X = x (k_rhs_cg for
 *              the room's CG: the same, with the CG's start fused in);
 *   the solve  pcg: this room's CG (mb_deform_cg.cu: 2 kernels a CG
 *              iteration, no host round trip inside a chunk of
 *              iterations; the default), or with opts->linalg_cg the linalg layer's device
 *              CG (Jacobi, the row-kernel product: the CPU PCG's method
 *              step for step, its checks on the host), the three columns
 *              together, warm-started from the last iterate, to
 *              MB_DEFORM_PCG_RTOL; with cg_iterations k >= 1 the room's CG
 *              stopped after k iterations (the CPU's mb_deform_cg), its
 *              count and breakdown flag left in the iteration's maxima
 *              by k_take, so an iteration reads the device once;
 *              cholesky: csrchol's triangular solves;
 *   k_take     one thread per vertex (in the capped CG's graph fused into
 *              its last step: k_cg_last_take): x = X for free
 *              vertices, the largest move and a non-finite flag (soft: skipped when the
 *              projection found the residual within the tolerance, where
 *              the CPU stops before its solve); batched, its last block
 *              records the maxima and halts where the host's rules stop;
 *   k_dual     (hard) one thread per face: u += A_f p - h, the primal residual;
 *   k_resid    (hard, near convergence, at the cap, or for the history) one
 *              thread per face: the constraint's residual.
 * Jacobi, not the device AMG (chosen without measuring, by this
 * argument): in soft mode and at the first penalties H = D + w_fair K^T K
 * + c sum_f A_f^T A_f has every eigenvalue >= w_close = 1 (D) and <=
 * w_handle + w_fair (2 deg)^2 + c (faces at a vertex) (Gershgorin; the
 * defaults: about 100 + 6.4 + 40), so its condition number (at most
 * about 150, less after the Jacobi scaling of the handle rows) does not
 * grow with the mesh, and Jacobi CG gains a decade in at most about 14
 * iterations at any size (the bound for sqrt(150); Roof1 and Roof2 both
 * took about 55 to 1e-12 from the warm start); AMG's size-independence
 * buys nothing there, its V-cycle costs several products and tens of
 * launches per application and its hierarchy a host setup at every
 * penalty value; so both backends run one method, as the chapter's GPU
 * solver. (At the hard mode's later penalties, c up to 10^7 w_constraint,
 * the condition grows with c and AMG may pay: not measured.)
 * Each iteration ends with one small read of the maxima (the stopping
 * rules need them); the linalg PCG reads its state every CG iteration, the
 * room's CG uncapped once per 8, capped (cg_iterations) never: then, unless
 * phases are synchronised, the whole iteration (k_project to k_dual, the k
 * CG steps included, the last step fused with the take: 3 + k
 * kernels soft, mb_deform_cg.cu) is one CUDA graph captured once
 * per run into the pool's executable graph (updated in place from mesh to
 * mesh where the shape is the same), its two scalars c and al copied to
 * the device before each launch, so an iteration costs one graph launch
 * and one read; soft runs without a history launch BATCH (50) such graphs
 * a read: k_take records each iteration's maxima and stops the device
 * applying solutions where the host's soft rules stop, which then replay
 * the records. Those batches, where the device allows, are each one
 * launch of the persistent frame where asked for (mb_deform_cuda_opts
 * .persistent 1; mb_deform_frame.cu: grid-wide syncs in place of the
 * graph's 3 + k kernel boundaries, the same records and bits; measured
 * slower than the graphs on an H100 at Roof2 (80 k rows), faster at Roof1
 * (20 k) and in a batch of 1-5 k vertex layouts, docs/benchmarks.md, so
 * auto takes it up to MB_DEFORM_PERSISTENT_ROWS vertices).
 * The frame's end is on the device too: k_final computes every face's
 * planarity and regularity and the handle error (mb_deform_face.h, the
 * CPU's formulas: the host's figures to rounding) and one small read
 * brings their maxima; the positions (and each face's planarity, where
 * asked for) are downloaded after the frame (rep->finish_ms).
 * The kernels' byte counts and the choice of H's layout (SELL-32): the
 * header of mb_deform_cg.cu.
 * Not done (open): batches in hard mode (the device would have to take the
 * residual check and the over-relaxation switch itself, and the host the
 * mu windows at batch ends); the projection and the right-hand side in
 * one kernel (a vertex's row gathers the projections of all its faces: a
 * grid-wide dependency, as the take before the next projection: one sync
 * apart in the persistent frame); the dual update fused with the next
 * projection (the host's choice of the over-relaxation and of mu, with the
 * duals' rescaling, comes between them); the persistent frame for hard
 * mode and for the uncapped CG. */
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mutex>
#include <sched.h>
#include <new>
#include <vector>

#include "mb_csr.h"
#include "mb_cuda_private.cuh"
#include "mb_deform.h"
#include "mb_deform_cuda.h"
#include "mb_deform_face.h"
#include "mb_deform_gpu.cuh"
#include "mb_deform_private.h"
#include "mb_linalg_cuda.h"
#include "mb_log.h"
#include "mb_mpi.h"
#include "mb_op.h"
#include "mb_solver.h"

namespace mbd {

/* The local step of each face (project_face; al = prm[1]), the largest
 * |q - z| into ctl->dist. Threads past nf still take part in the warp
 * maximum. At most 80 registers (3 blocks an SM: Roof2's 313 face blocks
 * co-resident in one wave on an H100's 132 SMs; ptxas -v, sm_90: 80, no
 * spills, 88 B of stack: the regular projection's cos and sin, whose
 * large-argument reduction never runs for angles in [0, 2 pi)). */
__global__ void __launch_bounds__(BLOCK, 3)
k_project(int64_t nf, const int64_t *__restrict__ fo, const int64_t *__restrict__ fi,
          const double *__restrict__ x, const double *__restrict__ u, double *__restrict__ q,
          double *__restrict__ z, double *__restrict__ ym, int planar, int hard,
          const double *__restrict__ prm, ctl_t *ctl) {
  const int64_t f = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  const double worst = f < nf ? project_face(f, fo, fi, x, u, q, z, ym, planar, hard, prm[1]) : 0;
  max_bits(&ctl->dist, worst);
}

/* b (rhs_row, c = prm[0]) and X = x: the solvers other than the room's CG
 * (which takes k_rhs_cg). */
__global__ void __launch_bounds__(BLOCK)
k_rhs(int64_t nv, const int32_t *__restrict__ vf_row, const int64_t *__restrict__ vf_slot,
      const int64_t *__restrict__ vf_face, const double *__restrict__ y,
      const double *__restrict__ ym, const double *__restrict__ rg,
      const double *__restrict__ gF, const double *__restrict__ pin,
      const double *__restrict__ prm, const double *__restrict__ x, double *__restrict__ b,
      double *__restrict__ X) {
  const int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  if (i >= nv) return;
  double bi[3];
  rhs_row(i, 0, 3, vf_row, vf_slot, vf_face, y, ym, rg, gF, pin, prm[0], x, bi);
  for (int d = 0; d < 3; d++) {
    b[3 * i + d] = bi[d];
    X[3 * i + d] = x[3 * i + d];
  }
}

/* Hard: u += A_f p - h per slot; the largest |A_f p - h|. */
__global__ void __launch_bounds__(BLOCK)
k_dual(int64_t nf, const int64_t *__restrict__ fo, const int64_t *__restrict__ fi,
       const double *__restrict__ x, const double *__restrict__ h, double *__restrict__ u,
       ctl_t *ctl) {
  const int64_t f = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  double prim = 0;
  if (f < nf) {
    const int64_t s0 = fo[f], s1 = fo[f + 1];
    double c[3] = {0, 0, 0};
    for (int64_t s = s0; s < s1; s++)
      for (int d = 0; d < 3; d++) c[d] += x[3 * fi[s] + d];
    for (int d = 0; d < 3; d++) c[d] /= (double)(s1 - s0);
    for (int64_t s = s0; s < s1; s++)
      for (int d = 0; d < 3; d++) {
        const double r = ((x[3 * fi[s] + d] - c[d]) + 0.0) - h[3 * s + d];
        u[3 * s + d] += r;
        if (fabs(r) > prim) prim = fabs(r);
      }
  }
  max_bits(&ctl->prim, prim);
}

/* The constraint's residual of x (the CPU's residuals() for one constraint). */
__global__ void __launch_bounds__(BLOCK)
k_resid(int64_t nf, const int64_t *__restrict__ fo, const int64_t *__restrict__ fi,
        const double *__restrict__ x, double *__restrict__ q, int planar, ctl_t *ctl) {
  const int64_t f = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  double r = 0;
  if (f < nf) {
    const int64_t s0 = fo[f], s1 = fo[f + 1];
    centre_face(s0, s1, fi, x, nullptr, q);
    r = planar ? mb_dface_planarity((int)(s1 - s0), q + 3 * s0)
               : mb_dface_regularity((int)(s1 - s0), q + 3 * s0);
  }
  max_bits(&ctl->res, r);
}

__global__ void k_scale(int64_t n, double s, double *__restrict__ u) {
  const int64_t k = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  if (k < n) u[k] *= s;
}

/* x = X on free vertices (take_row); the largest move; st's iterations
 * and breakdown into ctl (block 0). Soft (tol_l > 0): nothing where the
 * projection's residual dist / l <= tol. Batched (bt): nothing once an
 * earlier iteration halted; the grid's last block records the
 * iteration's maxima (take_record). */
__global__ void __launch_bounds__(BLOCK)
k_take(int64_t nv, const double *__restrict__ X, const double *__restrict__ pin,
       double *__restrict__ x, int soft, double l, double tol, ctl_t *ctl, batch_t *bt,
       const cg_t *st) {
  const int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  const int skip = take_skip(soft, l, tol, ctl, bt);
  if (!skip) max_bits(&ctl->moved, take_row(i, 0, 3, nv, 0, X, pin, x, st, ctl));
  if (st && blockIdx.x == 0 && threadIdx.x == 0) {
    ctl->cg_iters = st->iters;
    ctl->cg_bad = st->bad;
  }
  if (!bt || !last_block(&bt->ticket) || threadIdx.x != 0) return;
  take_record(l, tol, __ldcg(&ctl->cg_bad), __ldcg(&ctl->cg_iters), ctl, bt);
}

/* The run's end: each face's planarity (into fres [nf] where non-NULL) and
 * regularity of x (the CPU's residuals(), centred coordinates in q), their
 * maxima, and the largest distance of a handle (tgt [nv, 3], NaN rows
 * free; NULL: none) from its target, into ctl->plan, reg and herr (ctl's
 * three cleared before). One thread per face and per vertex. */
__global__ void __launch_bounds__(BLOCK)
k_final(int64_t nf, int64_t nv, const int64_t *__restrict__ fo, const int64_t *__restrict__ fi,
        const double *__restrict__ x, double *__restrict__ q, const double *__restrict__ tgt,
        double *__restrict__ fres, ctl_t *ctl) {
  const int64_t t = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  double pl = 0, rg = 0, he = 0;
  if (t < nf) {
    const int64_t s0 = fo[t], s1 = fo[t + 1];
    const int n = (int)(s1 - s0);
    centre_face(s0, s1, fi, x, nullptr, q);
    pl = mb_dface_planarity(n, q + 3 * s0);
    rg = mb_dface_regularity(n, q + 3 * s0);
    if (fres) fres[t] = pl;
  }
  if (tgt && t < nv && !isnan(tgt[3 * t])) {
    double r2 = 0;
    for (int d = 0; d < 3; d++)
      r2 += (x[3 * t + d] - tgt[3 * t + d]) * (x[3 * t + d] - tgt[3 * t + d]);
    he = sqrt(r2);
  }
  max_bits(&ctl->plan, pl);
  max_bits(&ctl->reg, rg);
  max_bits(&ctl->herr, he);
}

pool_t *the_pool = nullptr;

/* b holds at least `bytes` (at least 1) of device memory: reallocated only
 * where it holds fewer (its contents are then lost). Errors: those of
 * mb_dbuf_alloc. */
mb_error grow(mb_dbuf *b, size_t bytes, const char *what) {
  if (!bytes) bytes = 1;
  if (b->p && b->bytes >= bytes) return MB_SUCCESS;
  return mb_dbuf_alloc(b, bytes, what);
}

/* The pool of the current device (a new one where there is none or the
 * last run used another device). Errors: MB_ERR_CUDA, MB_ERR_MEMORY. */
mb_error pool(pool_t **out) {
  int dev = -1;
  MB_CALL_CUDA(cudaGetDevice(&dev));
  if (the_pool && the_pool->device != dev) {
    delete the_pool;
    the_pool = nullptr;
  }
  if (!the_pool) {
    the_pool = new (std::nothrow) pool_t;
    MB_CHECK(the_pool, MB_ERR_MEMORY, "deform: out of memory");
    the_pool->device = dev;
  }
  *out = the_pool;
  return MB_SUCCESS;
}

/* The residuals of x on the host by mb_deform_proj.c (max over faces,
 * length unit): planarity, regularity; each face's planarity into fres
 * (may be NULL). */
void host_residuals(const mb_deform_mesh *dm, const double *x, std::vector<double> &q,
                    double *plan, double *reg, double *fres) {
  const int64_t *fo = dm->face_offsets, *fi = dm->face_indices;
  double pm = 0, rm = 0;
  for (int64_t f = 0; f < dm->nf; f++) {
    const int64_t s0 = fo[f], s1 = fo[f + 1];
    const int n = (int)(s1 - s0);
    double c[3] = {0, 0, 0};
    for (int64_t s = s0; s < s1; s++)
      for (int d = 0; d < 3; d++) c[d] += x[3 * fi[s] + d];
    for (int d = 0; d < 3; d++) c[d] /= (double)n;
    for (int64_t s = s0; s < s1; s++)
      for (int d = 0; d < 3; d++) q[3 * s + d] = (x[3 * fi[s] + d] - c[d]) + 0.0;
    const double a = mb_deform_planarity(n, &q[3 * s0]);
    const double r = mb_deform_regularity(n, &q[3 * s0]);
    if (fres) fres[f] = a;
    if (a > pm) pm = a;
    if (r > rm) rm = r;
  }
  *plan = pm;
  *reg = rm;
}

/* Wait for the device where phases are asked for; the wall clock (s). */
mb_error mark(const deform_gpu *g, double *t) {
  if (g->sync) MB_CALL_CUDA(cudaDeviceSynchronize());
  *t = mb_wtime();
  return MB_SUCCESS;
}

/* h [n] into b, a buffer of the pool d (grown where needed): copied into
 * d's pinned staging (grown only, from offset stage_used) and sent by
 * cudaMemcpyAsync on d->up, so the host does not wait for each upload (h
 * may be freed on return; the work after it on that stream, or waiting for
 * d->ready, sees the data). Where the staging is full, d->up is waited for
 * (the pending copies read it) and a larger one allocated. stage_begin(d)
 * before a run's first upload. Errors: MB_ERR_CUDA, MB_ERR_MEMORY. */
template <typename T>
mb_error upload(pool_t *d, mb_dbuf *b, const T *h, size_t n, const char *what) {
  MB_CALL(grow(b, sizeof(T) * n, what));
  if (!n) return MB_SUCCESS;
  const size_t bytes = sizeof(T) * n, need = (bytes + 255) / 256 * 256;
  if (d->stage_used + need > d->stage_bytes) {
    MB_CALL_CUDA(cudaStreamSynchronize(d->up)); /* the pending copies from the staging */
    d->stage_used = 0;
    if (need > d->stage_bytes) {
      size_t nb = d->stage_bytes ? 2 * d->stage_bytes : (size_t)1 << 22;
      while (nb < need) nb *= 2;
      if (d->stage) MB_CALL_CUDA(cudaFreeHost(d->stage));
      d->stage = nullptr;
      d->stage_bytes = 0;
      MB_CALL_CUDA(cudaMallocHost((void **)&d->stage, nb));
      d->stage_bytes = nb;
    }
  }
  char *at = d->stage + d->stage_used;
  memcpy(at, h, bytes);
  d->stage_used += need;
  MB_CALL_CUDA(cudaMemcpyAsync(b->p, at, bytes, cudaMemcpyHostToDevice, d->up));
  return MB_SUCCESS;
}

/* Wait for ev by polling it (cudaEventQuery, the core yielded between
 * queries) rather than in a blocking call: a blocking cudaMemcpy from the
 * device holds the runtime's lock until the frame ends, and the preparing
 * threads' uploads (upload_ahead) then waited behind it (1,000 layouts:
 * 1.45-1.76 ms a mesh against 0.29-0.34 ms polled). Errors: MB_ERR_CUDA. */
mb_error wait_polled(cudaEvent_t ev) {
  cudaError_t q;
  while ((q = cudaEventQuery(ev)) == cudaErrorNotReady) sched_yield();
  MB_CALL_CUDA(q);
  return MB_SUCCESS;
}

/* A run's uploads into d start: the staging reused from its beginning once
 * the device has finished the copies still reading it (a run that failed
 * part-way). Errors: MB_ERR_CUDA. */
mb_error stage_begin(pool_t *d) {
  if (d->stage_used) MB_CALL_CUDA(cudaStreamSynchronize(d->up));
  d->stage_used = 0;
  return MB_SUCCESS;
}

/* Pools that preparing threads upload into ahead of the runs (at most
 * AHEAD_POOLS held at once: the run's pool and these bound the device
 * memory to a few meshes' worth), each with a non-blocking stream of its
 * own so that its copies overlap the frame running on the default stream.
 * Meshes above AHEAD_ROWS vertices are uploaded by their run as before:
 * their frames are long beside the uploads, and their buffers large. */
constexpr int AHEAD_POOLS = 4;
constexpr int64_t AHEAD_ROWS = 40000;

/* AHEAD_POOLS, or MB_DEFORM_AHEAD_POOLS (0-16; 0: every run uploads
 * itself), a measuring knob. */
int ahead_cap(void) {
  static const int cap = [] {
    const char *e = getenv("MB_DEFORM_AHEAD_POOLS");
    const int n = e && *e ? atoi(e) : AHEAD_POOLS;
    return n < 0 ? 0 : n > 16 ? 16 : n;
  }();
  return cap;
}
std::mutex ahead_mu;
std::vector<pool_t *> ahead_free; /* given back, for the next take */
int ahead_held = 0;

/* A pool of the current device for a preparing thread's uploads, or
 * nullptr (AHEAD_POOLS are held, or its stream cannot be made: the run
 * uploads then). Thread-safe. */
pool_t *ahead_take(void) {
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  pool_t *d = nullptr;
  {
    std::lock_guard<std::mutex> lock(ahead_mu);
    if (ahead_held >= ahead_cap()) return nullptr;
    while (!ahead_free.empty() && !d) {
      d = ahead_free.back();
      ahead_free.pop_back();
      if (d->device != dev) { /* another device's: freed (no work of its own is pending) */
        delete d;
        d = nullptr;
      }
    }
    ahead_held++;
  }
  if (!d) {
    d = new (std::nothrow) pool_t;
    if (d) {
      d->device = dev;
      if (cudaStreamCreateWithFlags(&d->up, cudaStreamNonBlocking) != cudaSuccess ||
          cudaEventCreateWithFlags(&d->ready, cudaEventDisableTiming) != cudaSuccess) {
        (void)cudaGetLastError();
        delete d;
        d = nullptr;
      }
    }
    if (!d) {
      std::lock_guard<std::mutex> lock(ahead_mu);
      ahead_held--;
    }
  }
  return d;
}

/* d (of ahead_take) back to the free pools once its stream's work is done
 * (nullptr: no-op). Thread-safe; cannot fail (a failed wait frees d). */
void ahead_give(pool_t *d) {
  if (!d) return;
  const bool ok = cudaStreamSynchronize(d->up) == cudaSuccess;
  if (!ok) (void)cudaGetLastError();
  std::lock_guard<std::mutex> lock(ahead_mu);
  ahead_held--;
  if (ok) ahead_free.push_back(d);
  else delete d;
}

/* Whether the room's CG solves (else the linalg PCG or csrchol). */
bool room_cg(const deform_gpu *g) { return g->p->solver == MB_DEFORM_PCG && g->device_cg; }

/* k_project on stream s (mb_deform_gpu.cuh). */
void enqueue_project(deform_gpu *g, cudaStream_t s, int planar, int hard) {
  pool_t *d = g->d;
  const int64_t nf = g->dm->nf;
  if (nf)
    k_project<<<blocks(nf), BLOCK, 0, s>>>(nf, d->fo.as<int64_t>(), d->fi.as<int64_t>(),
                                           d->x.as<double>(), d->u.as<double>(),
                                           d->q.as<double>(), d->z.as<double>(),
                                           d->ym.as<double>(), planar, hard,
                                           d->prm.as<double>(), d->ctl.as<ctl_t>());
}

/* k_dual on stream s (mb_deform_gpu.cuh). */
void enqueue_dual(deform_gpu *g, cudaStream_t s) {
  pool_t *d = g->d;
  const int64_t nf = g->dm->nf;
  if (nf)
    k_dual<<<blocks(nf), BLOCK, 0, s>>>(nf, d->fo.as<int64_t>(), d->fi.as<int64_t>(),
                                        d->x.as<double>(), d->z.as<double>(), d->u.as<double>(),
                                        d->ctl.as<ctl_t>());
}

/* H at c on the host, uploaded; factored (cholesky). */
mb_error factor(deform_gpu *g, double c) {
  g->rep->mu = c;
  if (room_cg(g)) /* on the device from the parts uploaded once (setup) */
    MB_CALL(cg_values(g, c));
  else {
    mb_deform_system_matrix(&g->sys, g->base.data(), g->pin.data(), c);
    MB_CALL(mb_cuda_csr_upload(g->dH, g->sys.H->val));
  }
  if (g->p->solver == MB_DEFORM_PCG) return MB_SUCCESS;
  const double t0 = mb_wtime();
  mb_solve_stats st{};
  mb_error e = mb_cuda_cholesky_factor(g->chol, g->dH, &st);
  if (e) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", mb_error_message());
    return mb_error_set(e, __FILE__, __LINE__, __func__, "%s: the system matrix at weight %g: %s",
                        g->dm->name, c, msg);
  }
  /* csrchol's analysis ran in setup (mb_cuda_cholesky_create), whose wall
   * time is already the report's analysis: st.analyze_ms not added again */
  g->rep->factor_ms += 1e3 * (mb_wtime() - t0);
  g->rep->factorizations++;
  return MB_SUCCESS;
}

/* build_sell's arrays uploaded into the pool (hsptr, hcol, hdiag, hbase,
 * hface; hval grown). Errors: MB_ERR_MEMORY, MB_ERR_CUDA. */
mb_error upload_sell(deform_gpu *g) {
  pool_t *d = g->d;
  MB_CALL(upload(d, &d->hsptr, g->s_ptr.data(), g->s_ptr.size(), "deform system slices"));
  MB_CALL(upload(d, &d->hcol, g->s_col.data(), g->s_col.size(), "deform system columns"));
  MB_CALL(upload(d, &d->hdiag, g->s_dpos.data(), g->s_dpos.size(), "deform system diagonal"));
  MB_CALL(upload(d, &d->hbase, g->s_base.data(), g->s_base.size(), "deform system values"));
  MB_CALL(upload(d, &d->hface, g->s_face.data(), g->s_face.size(), "deform system values"));
  MB_CALL(grow(&g->d->hval, sizeof(double) * (size_t)g->nsell, "deform system values"));
  return MB_SUCCESS;
}

/* The host setup of mb_deform.c's run(), host only (no CUDA call, so it
 * may run on another thread while the device works on another mesh: the
 * batch pipeline of mb_deform_cuda_prepare): the checks, the system's parts,
 * mb_deform_setup (into g->rep: handles, pinned, edge_length), the slot
 * faces and, for the room's CG, H in SELL-32; g->handles_moved and g->l
 * set. Errors: those of mb_deform_system_build and mb_deform_setup,
 * MB_ERR_NUMERIC (a non-finite position), MB_ERR_ARG, MB_ERR_MEMORY. */
mb_error prepare_host(deform_gpu *g) {
  const mb_deform_params *p = g->p;
  mb_deform_mesh *dm = g->dm;
  mb_deform_report *rep = g->rep;
  const int64_t nv = dm->nv;
  double *x = dm->x;
  for (int64_t i = 0; i < 3 * nv; i++)
    MB_CHECK(isfinite(x[i]), MB_ERR_NUMERIC, "%s: vertex %lld has a non-finite coordinate",
             dm->name, (long long)(i / 3));
  MB_CALL(mb_deform_system_build(dm, p->w_fair > 0, &g->sys));
  const mb_csr *H = g->sys.H;
  const size_t n3 = 3 * (size_t)nv;
  g->d_.assign((size_t)nv, 0.0);
  g->t.assign(n3, 0.0);
  g->pin.assign((size_t)nv, 0.0);
  g->p0.assign(n3, 0.0);
  g->base.assign((size_t)H->nnz, 0.0);
  g->gF.assign(n3, 0.0);
  std::vector<double> r0(n3), g0(n3);
  MB_CALL(mb_deform_setup(p, dm, H, g->sys.KtK, g->sys.face, g->d_.data(), g->t.data(),
                          g->pin.data(), g->p0.data(), g->base.data(), r0.data(), g0.data(),
                          g->gF.data(), rep, &g->handles_moved, &g->l));
  g->rg.assign(n3, 0.0);
  for (size_t k = 0; k < n3; k++) g->rg[k] = r0[k] - g0[k];
  g->scratch.assign(3 * (size_t)g->sys.nidx, 0.0);

  const size_t ni = (size_t)g->sys.nidx;
  g->vff.resize(ni); /* the face of each vertex slot entry (rhs_row) */
  for (size_t a = 0; a < ni; a++) g->vff[a] = g->sys.slot_face[g->sys.vf_slot[a]];
  if (room_cg(g)) MB_CALL(build_sell(g));
  g->prepared = 1;
  return MB_SUCCESS;
}

/* The mesh's arrays and the run's buffers in the pool g->d: the uploads
 * (asynchronous, on d->up through its staging), the buffers grown, the
 * duals and maxima zeroed there too; for the room's CG, H's pattern and
 * parts and the CG's vectors (g->rowptr, col, sptr, sdiag, val set). After
 * prepare_host; on the run's thread (the_pool, the default stream) or on a
 * preparing thread (a pool of ahead_take, while another mesh's frame runs).
 * Errors: MB_ERR_CUDA, MB_ERR_MEMORY. */
mb_error upload_all(deform_gpu *g) {
  mb_deform_mesh *dm = g->dm;
  pool_t *d = g->d;
  const int64_t nv = dm->nv;
  const mb_csr *H = g->sys.H;
  const size_t n3 = 3 * (size_t)nv;
  MB_CALL(stage_begin(d));
  const size_t ni = (size_t)g->sys.nidx, nf = (size_t)dm->nf;
  MB_CALL(upload(d, &d->fo, dm->face_offsets, nf + 1, "deform face offsets"));
  MB_CALL(upload(d, &d->fi, dm->face_indices, ni, "deform face indices"));
  MB_CALL(upload(d, &d->vf_row, g->sys.vf_row, (size_t)nv + 1, "deform vertex slots"));
  MB_CALL(upload(d, &d->vf_slot, g->sys.vf_slot, ni, "deform vertex slots"));
  MB_CALL(upload(d, &d->vf_face, g->vff.data(), ni, "deform slot faces"));
  MB_CALL(upload(d, &d->x, dm->x, n3, "deform positions"));
  MB_CALL(upload(d, &d->rgd, g->rg.data(), n3, "deform right-hand side part"));
  MB_CALL(upload(d, &d->gFd, g->gF.data(), n3, "deform right-hand side part"));
  MB_CALL(upload(d, &d->pind, g->pin.data(), (size_t)nv, "deform pinned flags"));
  MB_CALL(grow(&d->X, sizeof(double) * n3, "deform solution"));
  MB_CALL(grow(&d->b, sizeof(double) * n3, "deform right-hand side"));
  MB_CALL(grow(&d->q, sizeof(double) * 3 * ni, "deform centred slots"));
  MB_CALL(grow(&d->z, sizeof(double) * 3 * ni, "deform projections"));
  MB_CALL(grow(&d->u, sizeof(double) * 3 * ni, "deform duals"));
  MB_CALL(grow(&d->ym, sizeof(double) * 3 * nf, "deform face means"));
  /* [2]: the persistent frame alternates them by iteration (mb_deform_frame.cu) */
  MB_CALL(grow(&d->ctl, 2 * sizeof(ctl_t), "deform maxima"));
  MB_CALL(grow(&d->prm, 2 * sizeof(double), "deform iteration scalars"));
  MB_CALL(grow(&d->bt, sizeof(batch_t), "deform batch maxima"));
  /* (whether the run asks for each face's planarity is known at the run) */
  MB_CALL(grow(&d->fres, sizeof(double) * nf, "deform face residuals"));
  if (dm->target && g->rep->handles)
    MB_CALL(upload(d, &d->tgt, dm->target, n3, "deform targets"));
  MB_CALL_CUDA(cudaMemsetAsync(d->u.p, 0, sizeof(double) * 3 * ni, d->up));
  MB_CALL_CUDA(cudaMemsetAsync(d->ctl.p, 0, 2 * sizeof(ctl_t), d->up));
  if (room_cg(g)) { /* H's pattern and parts into the pool (values by factor()) */
    const size_t nb = row_tiles(g->kcols, g->tw, nv) + 1;
    MB_CALL(upload(d, &d->hrow, H->rowptr, (size_t)nv + 1, "deform system rows"));
    MB_CALL(upload_sell(g));
    g->rowptr = d->hrow.as<int32_t>();
    g->col = d->hcol.as<int32_t>();
    g->sptr = d->hsptr.as<int64_t>();
    g->sdiag = d->hdiag.as<int64_t>();
    g->val = d->hval.as<double>();
    for (int k = 0; k < 2; k++) {
      MB_CALL(grow(&d->cr[k], sizeof(double) * n3, "deform CG residual"));
      MB_CALL(grow(&d->cw[k], sizeof(double) * n3, "deform CG preconditioned product"));
      MB_CALL(grow(&d->cq[k], sizeof(double) * n3, "deform CG product"));
    }
    MB_CALL(grow(&d->cp, sizeof(double) * n3, "deform CG direction"));
    MB_CALL(grow(&d->cdinv, sizeof(double) * ((size_t)nv + 1), "deform CG diagonal"));
    /* [2, 9, nb]: the persistent frame alternates the two by phase; the
     * graphs' kernels use [N <= 9, blocks] (block_parts' layout) */
    MB_CALL(grow(&d->cpart, sizeof(double) * 2 * 9 * nb, "deform CG partial sums"));
    MB_CALL(grow(&d->cst, sizeof(cg_t), "deform CG state"));
  }
  return MB_SUCCESS;
}

/* prepare_host and upload_all unless done ahead, the linalg's matrix or
 * csrchol's analysis where asked for; the uploads done before the frame.
 * Errors: those of prepare_host and upload_all, MB_ERR_CUDA, MB_ERR_MEMORY. */
mb_error setup(deform_gpu *g) {
  if (!g->prepared) MB_CALL(prepare_host(g));
  const mb_csr *H = g->sys.H;
  if (!room_cg(g)) {
    MB_CALL(mb_cuda_csr_create(H, nullptr, &g->dH));
    mb_cuda_csr_set_product(g->dH, MB_CUDA_PRODUCT_ROWS);
    mb_cuda_csr_arrays(g->dH, &g->rowptr, &g->col, &g->diag, &g->val);
  }
  if (g->p->solver == MB_DEFORM_CHOLESKY) MB_CALL(mb_cuda_cholesky_create(H, &g->chol));
  if (g->uploaded) { /* by a preparing thread on its pool's stream: the work waits for it */
    MB_CALL_CUDA(cudaStreamWaitEvent(nullptr, g->d->ready, 0));
    return MB_SUCCESS;
  }
  MB_CALL(upload_all(g));
  /* the uploads done before the frame starts: the setup (rep->analyze_ms)
   * puts the mesh on the device, the frame is its iterations (an
   * interactive frame's work: the mesh stays on the device between frames).
   * Before, the uploads' tail ran into the frame: Roof2's persistent frame
   * 4.91-4.95 -> 4.79-4.81 ms with this wait, the device's time in it the
   * same (one H200, 2026-11-28, docs/benchmarks.md, "The deform frame's
   * clock and the batch's preparing threads"). */
  MB_CALL_CUDA(cudaStreamSynchronize(nullptr));
  return MB_SUCCESS;
}

/* The device's time on a group of launches enqueued on the default stream
 * between dev_begin and dev_end (the events' elapsed time, read once the
 * stream has reached the end, i.e. after the group's read), added to
 * rep->device_ms. Errors: MB_ERR_CUDA. */
mb_error dev_begin(deform_gpu *g) {
  for (int k = 0; k < 2; k++)
    if (!g->d->ev[k]) MB_CALL_CUDA(cudaEventCreate(&g->d->ev[k]));
  MB_CALL_CUDA(cudaEventRecord(g->d->ev[0], nullptr));
  return MB_SUCCESS;
}
mb_error dev_end(deform_gpu *g) {
  MB_CALL_CUDA(cudaEventRecord(g->d->ev[1], nullptr));
  return MB_SUCCESS;
}
mb_error dev_add(deform_gpu *g) {
  float ms = 0;
  MB_CALL_CUDA(cudaEventSynchronize(g->d->ev[1]));
  MB_CALL_CUDA(cudaEventElapsedTime(&ms, g->d->ev[0], g->d->ev[1]));
  g->rep->device_ms += ms;
  return MB_SUCCESS;
}

mb_error read_ctl(deform_gpu *g) {
  MB_CALL_CUDA(cudaMemcpy(&g->hctl, g->d->ctl.p, sizeof(ctl_t), cudaMemcpyDeviceToHost));
  return MB_SUCCESS;
}

mb_error run(deform_gpu *g) {
  const mb_deform_params *p = g->p;
  mb_deform_mesh *dm = g->dm;
  mb_deform_report *rep = g->rep;
  const int hard = p->hard != 0, planar = p->constraint != MB_DEFORM_REGULAR;
  const int64_t nv = dm->nv, nf = dm->nf;
  double *x = dm->x;
  const double ts = mb_wtime();
  MB_CALL(setup(g));
  rep->analyze_ms += 1e3 * (mb_wtime() - ts);
  const int handles_moved = g->handles_moved;
  const double l = g->l;

  const int which = p->constraint;
  double res = INFINITY, plan = 0, reg = 0;
  if (hard || rep->history) {
    host_residuals(dm, x, g->scratch, &plan, &reg, nullptr);
    res = which == MB_DEFORM_REGULAR ? reg : plan;
  }
  if (rep->history) rep->history[0] = res / l;
  if (rep->energy) rep->energy[0] = NAN;
  rep->iterations = 0;
  rep->converged = 0;
  int mu_k = 0, at_mu = 0;
  double c = p->w_constraint, prim_ref = INFINITY, prim_last = INFINITY;
  if (hard && !handles_moved && res / l <= p->tolerance) rep->converged = 1;
  else MB_CALL(factor(g, c));

  const int64_t *fo = g->d->fo.as<int64_t>(), *fi = g->d->fi.as<int64_t>();
  double *dx = g->d->x.as<double>(), *dX = g->d->X.as<double>(), *db = g->d->b.as<double>();
  double *dq = g->d->q.as<double>(), *dz = g->d->z.as<double>(), *du = g->d->u.as<double>();
  ctl_t *ctl = g->d->ctl.as<ctl_t>();
  /* the capped device CG, pipelined: each iteration one graph, one read */
  const int whole = p->solver == MB_DEFORM_PCG && g->device_cg && p->cg_iterations > 0 &&
                    !g->sync && nv > 0;
  /* and soft without a history: BATCH iterations launched a read (c and al
   * are constant in soft mode) */
  g->batched = whole && !hard && !rep->history && BATCH > 1;
  if (g->batched) MB_CALL_CUDA(cudaMemset(g->d->bt.p, 0, sizeof(batch_t)));
  /* the iteration's graph: once per mesh, with the setup (batched runs that
   * the persistent frame takes capture it only if that cannot run) */
  if (whole && !rep->converged && (!g->batched || g->no_persist || g->persist_failed)) {
    const double tc = mb_wtime();
    capture_iteration(g, planar, hard, l);
    rep->analyze_ms += 1e3 * (mb_wtime() - tc);
  }
  int bi = 0, bn = 0; /* batched: the next recorded iteration to take, the batch's size */
  mb_error err = MB_SUCCESS;
  for (int it = 0; it < p->iterations && !rep->converged; it++) {
    if (mb_op_should_stop(dm->ctx, it, p->iterations)) return mb_op_stopped(dm->ctx);
    double t0, t1, t2, t3;
    MB_CALL(mark(g, &t0));
    const double al = hard && prim_last <= MB_DEFORM_RELAX_BELOW * l ? MB_DEFORM_RELAX : 1.0;
    g->hprm[0] = c;
    g->hprm[1] = al;
    if (g->batched) { /* the host's rules below replay the recorded maxima */
      if (bi == bn) { /* a new batch: launched whole, then one read */
        bn = p->iterations - it < BATCH ? p->iterations - it : BATCH;
        bi = 0;
        MB_CALL_CUDA(cudaMemcpyAsync(g->d->prm.p, g->hprm, sizeof g->hprm, cudaMemcpyHostToDevice,
                                     nullptr));
        MB_CALL_CUDA(cudaMemsetAsync(&g->d->bt.as<batch_t>()->count, 0, sizeof(int), nullptr));
        MB_CALL(dev_begin(g));
        int ran = 0; /* the persistent frame (one launch), else bn graph launches */
        if (!g->no_persist && !g->persist_failed) err = frame_batch(g, planar, bn, l, &ran);
        if (ran) g->persist_used++;
        for (int j = 0; j < bn && !err && !ran; j++) err = iterate_graph(g, planar, hard, l);
        if (err) break;
        MB_CALL(dev_end(g));
        MB_CALL(wait_polled(g->d->ev[1]));
        MB_CALL_CUDA(cudaMemcpy(&g->hbt, g->d->bt.p, sizeof(batch_t), cudaMemcpyDeviceToHost));
        MB_CALL(dev_add(g));
        MB_CHECK(g->hbt.count == bn, MB_ERR_CUDA,
                 "%s: the device recorded %d of a batch of %d iterations", dm->name,
                 g->hbt.count, bn);
      }
      g->hctl = g->hbt.hist[bi++];
      t1 = t0; /* the batch counts as the solve of its first iteration */
      t2 = mb_wtime();
    } else {
      MB_CALL_CUDA(cudaMemcpyAsync(g->d->prm.p, g->hprm, sizeof g->hprm, cudaMemcpyHostToDevice,
                                   nullptr));
      MB_CALL(dev_begin(g));
      if (whole) { /* the capped CG path: one graph, no phase marks */
        err = iterate_graph(g, planar, hard, l);
        if (err) break;
        t1 = t0; /* the whole iteration counts as the solve (t2 after the read) */
        t2 = t0;
      } else {
        MB_CALL_CUDA(cudaMemsetAsync(ctl, 0, sizeof(ctl_t), nullptr));
        if (nf) {
          k_project<<<blocks(nf), BLOCK>>>(nf, fo, fi, dx, du, dq, dz, g->d->ym.as<double>(),
                                           planar, hard, g->d->prm.as<double>(), ctl);
          MB_CHECK_LAUNCH("deform projections");
        }
        MB_CALL(mark(g, &t1));
        mb_solve_stats st{};
        if (room_cg(g)) {
          if (nv) {
            enqueue_rhs_cg(g, nullptr, hard);
            MB_CHECK_LAUNCH("deform right-hand side");
          }
          err = device_cg(g, &rep->pcg_iterations);
        } else {
          if (nv) {
            k_rhs<<<blocks(nv), BLOCK>>>(nv, g->d->vf_row.as<int32_t>(),
                                         g->d->vf_slot.as<int64_t>(),
                                         g->d->vf_face.as<int64_t>(), hard ? dq : dz,
                                         g->d->ym.as<double>(), g->d->rgd.as<double>(),
                                         g->d->gFd.as<double>(), g->d->pind.as<double>(),
                                         g->d->prm.as<double>(), dx, db, dX);
            MB_CHECK_LAUNCH("deform right-hand side");
          }
          if (p->solver == MB_DEFORM_PCG) {
            mb_pcg_opts o{};
            o.rtol = MB_DEFORM_PCG_RTOL;
            o.max_iter = 100000;
            err = mb_cuda_pcg_solve(MPI_COMM_SELF, nullptr, g->dH, 3, db, dX, &o, &st);
            rep->pcg_iterations += st.iterations;
          } else {
            err = mb_cuda_cholesky_solve(g->chol, 3, db, dX, &st);
          }
        }
        if (err) break;
        if (nv) {
          k_take<<<blocks(nv), BLOCK>>>(nv, dX, g->d->pind.as<double>(), dx, !hard, l,
                                        p->tolerance, ctl, nullptr,
                                        room_cg(g) ? g->d->cst.as<cg_t>() : nullptr);
          MB_CHECK_LAUNCH("deform take solution");
        }
        MB_CALL(mark(g, &t2));
        if (hard && nf) {
          k_dual<<<blocks(nf), BLOCK>>>(nf, fo, fi, dx, dz, du, ctl);
          MB_CHECK_LAUNCH("deform dual update");
        }
      }
      MB_CALL(dev_end(g));
      MB_CALL(read_ctl(g));
      MB_CALL(dev_add(g));
      if (whole) t2 = mb_wtime();
    }
    const ctl_t h = g->hctl;
    if (!hard) { /* the projection of p measured p's residual */
      res = from_bits(h.dist);
      if (rep->history) rep->history[it] = res / l;
      if (res / l <= p->tolerance) { /* k_take left x as it was */
        rep->converged = 1;
        rep->project_ms += 1e3 * (t1 - t0);
        break;
      }
    }
    /* the capped CG's count and breakdown (the CPU's solve is behind the soft stop) */
    if (p->solver == MB_DEFORM_PCG && g->device_cg && p->cg_iterations > 0) {
      rep->pcg_iterations += h.cg_iters;
      if (h.cg_bad) {
        err = mb_error_set(MB_ERR_NUMERIC, __FILE__, __LINE__, __func__,
                           "%s: the device CG broke down (a diagonal entry or a curvature p'Ap "
                           "<= 0, or a non-finite value: the system matrix is not positive "
                           "definite)", dm->name);
        break;
      }
    }
    const double moved = from_bits(h.moved);
    if (h.nonfinite || !isfinite(moved)) {
      err = mb_error_set(MB_ERR_NUMERIC, __FILE__, __LINE__, __func__,
                         "%s: iteration %d: a position became non-finite", dm->name, it + 1);
      break;
    }
    rep->iterations = it + 1;
    if (hard) {
      const double prim = from_bits(h.prim);
      prim_last = prim;
      if (++at_mu == 1) prim_ref = prim;
      if (at_mu > MB_DEFORM_MU_WINDOW) {
        if (prim > 0.5 * prim_ref && mu_k + 1 < MB_DEFORM_MU_STEPS) {
          const double cn = c * 10.0;
          const int64_t n3 = 3 * g->sys.nidx;
          if (n3) {
            k_scale<<<blocks(n3), BLOCK>>>(n3, c / cn, du);
            MB_CHECK_LAUNCH("deform dual rescale");
          }
          c = cn;
          mu_k++;
          double tu;
          MB_CALL(mark(g, &tu));
          rep->update_ms += 1e3 * (tu - t2);
          const double tf = mb_wtime();
          err = factor(g, c);
          if (err) break;
          t2 += mb_wtime() - tf;
        }
        at_mu = 0;
      }
      if (prim <= 10 * p->tolerance * l || it + 1 == p->iterations || rep->history) {
        if (nf) {
          k_resid<<<blocks(nf), BLOCK>>>(nf, fo, fi, dx, dq, planar, ctl);
          MB_CHECK_LAUNCH("deform residual");
        }
        MB_CALL(read_ctl(g));
        res = from_bits(g->hctl.res);
        if (rep->history) rep->history[it + 1] = res / l;
        if (res / l <= p->tolerance) rep->converged = 1;
      }
    } else {
      if (rep->energy) rep->energy[it + 1] = NAN;
      if (moved <= p->tolerance * l) rep->converged = 1;
    }
    MB_CALL(mark(g, &t3));
    rep->project_ms += 1e3 * (t1 - t0);
    rep->solve_ms += 1e3 * (t2 - t1);
    rep->update_ms += 1e3 * (t3 - t2);
  }
  MB_CALL(err);
  rep->persistent = g->persist_used > 0;
  /* the frame's end on the device: the final residuals and the handle
   * error (the CPU's formulas, mb_deform_face.h), one small read */
  MB_CALL_CUDA(cudaMemsetAsync(ctl, 0, sizeof(ctl_t), nullptr));
  const int64_t nt = nf > nv ? nf : nv;
  double *fres = rep->face_planarity && nf ? g->d->fres.as<double>() : nullptr;
  if (nt) {
    MB_CALL(dev_begin(g));
    k_final<<<blocks(nt), BLOCK>>>(nf, nv, fo, fi, dx, dq,
                                   dm->target && rep->handles ? g->d->tgt.as<double>() : nullptr,
                                   fres, ctl);
    MB_CHECK_LAUNCH("deform final residuals");
    MB_CALL(dev_end(g));
  }
  MB_CALL(read_ctl(g));
  if (nt) MB_CALL(dev_add(g));
  g->t_frame = mb_wtime();
  plan = from_bits(g->hctl.plan);
  reg = from_bits(g->hctl.reg);
  res = which == MB_DEFORM_REGULAR ? reg : plan;
  if (rep->history) rep->history[rep->iterations] = res / l;
  rep->planarity = plan / l;
  rep->regularity = reg / l;
  rep->handle_error = from_bits(g->hctl.herr);
  /* after the frame: the positions (and each face's planarity) */
  MB_CALL_CUDA(cudaMemcpy(x, dx, sizeof(double) * 3 * (size_t)nv, cudaMemcpyDeviceToHost));
  if (fres) {
    MB_CALL_CUDA(cudaMemcpy(rep->face_planarity, fres, sizeof(double) * (size_t)nf,
                            cudaMemcpyDeviceToHost));
    for (int64_t f = 0; f < nf; f++) rep->face_planarity[f] /= l;
  }
  if (hard && !rep->converged)
    MB_FAIL(MB_ERR_NUMERIC,
            "%s: the hard %s constraints were not met: residual %.3g (tolerance %g) after %d "
            "iterations, mu %g; handle error %.3g (the handles may admit no %s mesh)",
            dm->name, which == MB_DEFORM_PLANAR ? "planar" : "regular", res / l, p->tolerance,
            rep->iterations, c, rep->handle_error,
            which == MB_DEFORM_PLANAR ? "planar" : "regular");
  return MB_SUCCESS;
}

} // namespace mbd

using namespace mbd;

/* A mesh's host setup done ahead (mb_deform_cuda.h). */
struct mb_deform_cuda_prep {
  mb_deform_params q{}; /* p, solver auto resolved to pcg */
  deform_gpu g;         /* the host part (prepare_host); g.uploaded: also its uploads, into g.d */
  mb_deform_report r{}; /* what mb_deform_setup reported (handles, pinned, edge_length) */
  double ms = 0;        /* prepare_host's and the uploads' wall time */
  ~mb_deform_cuda_prep() { /* not run: the uploads' pool back */
    if (g.uploaded) ahead_give(g.d);
  }
};

namespace {
/* The run of an already prepared mesh (or, prep->g.prepared 0, the whole
 * run): rep as mb_deform_run_cuda fills it. */
mb_error run_prepared(mb_deform_cuda_prep *prep, mb_deform_report *rep) {
  double *history = rep->history, *en = rep->energy, *fp = rep->face_planarity;
  *rep = prep->r; /* zero but for mb_deform_setup's fields where prepared */
  rep->history = history;
  rep->energy = en;
  rep->face_planarity = fp;
  mb_error e;
  double t_frame = 0;
  deform_gpu &g = prep->g;
  pool_t *d = g.d; /* uploaded ahead into it, else the run's pool */
  e = g.uploaded ? MB_SUCCESS : pool(&d);
  if (!e) {
    g.rep = rep;
    g.d = d;
    e = run(&g);
    t_frame = g.t_frame;
  }
  if (g.uploaded) { /* the run has waited for its work (the downloads) */
    ahead_give(g.d);
    g.uploaded = 0;
    g.d = nullptr;
  }
  rep->analyze_ms += prep->ms;
  if (t_frame > 0) rep->finish_ms = 1e3 * (mb_wtime() - t_frame);
  if (e) (void)cudaGetLastError();
  return e;
}

/* A small mesh's uploads on this (preparing) thread, into a pool of its
 * own, while the device runs another mesh's frame: the run then only waits
 * for them (g->uploaded), so the device is not idle through them (a job of
 * 1,000 layouts of 1-5 k vertices: 0.20-0.22 ms a mesh on the run's thread
 * before this; docs/benchmarks.md, "The deform job's uploads ahead").
 * Only for the room's CG and up to AHEAD_ROWS vertices; where no pool is
 * free or an upload fails, nothing is kept (the error cleared) and the run
 * uploads itself. Cannot fail. */
void upload_ahead(deform_gpu *g) {
  if (!room_cg(g) || g->dm->nv > AHEAD_ROWS) return;
  pool_t *d = ahead_take();
  if (!d) return;
  g->d = d;
  if (upload_all(g) == MB_SUCCESS && cudaEventRecord(d->ready, d->up) == cudaSuccess) {
    g->uploaded = 1;
    return;
  }
  (void)cudaGetLastError();
  mb_error_clear();
  g->d = nullptr;
  ahead_give(d);
}

/* prep's fields from p, dm and o (no setup yet). */
void prep_init(mb_deform_cuda_prep *prep, const mb_deform_params *p, mb_deform_mesh *dm,
               const mb_deform_cuda_opts *o) {
  prep->q = *p; /* solver auto: pcg on the device */
  if (prep->q.solver == MB_DEFORM_AUTO) prep->q.solver = MB_DEFORM_PCG;
  prep->g.p = &prep->q;
  prep->g.dm = dm;
  prep->g.rep = &prep->r;
  prep->g.sync = o && o->sync_phases;
  prep->g.device_cg = !(o && o->linalg_cg) || prep->q.cg_iterations > 0;
  /* auto (0): the persistent frame for meshes up to MB_DEFORM_PERSISTENT_ROWS
   * vertices, where it was measured faster than the graphs, else the graphs */
  const int pers = o ? o->persistent : 0;
  prep->g.no_persist = pers < 0 || (pers == 0 && dm->nv > MB_DEFORM_PERSISTENT_ROWS);
  /* the room's CG's threads a row: 3 (a column each) up to
   * MB_DEFORM_SPLIT_ROWS vertices where auto, else 1 (tile_rowcol) */
  const int rt = o ? o->row_threads : 0;
  prep->g.kcols = rt == 3 || (rt == 0 && dm->nv <= MB_DEFORM_SPLIT_ROWS) ? 1 : 3;
  /* the warps of its row tiles: as asked, else by the device's SMs (none
   * known: tile_warps' default) */
  const int tw = o ? o->tile_warps : 0;
  if (tile_warps_ok(tw)) {
    prep->g.tw = tw;
  } else {
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
      (void)cudaGetLastError();
      sms = 0;
    }
    prep->g.tw = tile_warps(prep->g.kcols, dm->nv, sms);
  }
  mb_log(MB_LOG_VERBOSE, "%s: the device CG: %d thread%s a row, row tiles of %d warps", dm->name,
         prep->g.kcols == 1 ? 3 : 1, prep->g.kcols == 1 ? "s" : "", prep->g.tw);
}
} // namespace

extern "C" mb_error mb_deform_run_cuda(const mb_deform_params *p, mb_deform_mesh *dm,
                                       mb_deform_report *rep, const mb_deform_cuda_opts *o) {
  MB_CHECK(p && dm && rep && dm->x && dm->adj && dm->face_offsets && dm->face_indices &&
               p->iterations >= 1,
           MB_ERR_ARG, "mb_deform_run_cuda: bad arguments");
  mb_deform_cuda_prep prep;
  prep_init(&prep, p, dm, o);
  return run_prepared(&prep, rep); /* prepare_host inside, after the pool: as before */
}

extern "C" mb_error mb_deform_cuda_prepare(const mb_deform_params *p, mb_deform_mesh *dm,
                                           const mb_deform_cuda_opts *o,
                                           mb_deform_cuda_prep **out) {
  MB_CHECK(out, MB_ERR_ARG, "mb_deform_cuda_prepare: bad arguments");
  *out = nullptr;
  MB_CHECK(p && dm && dm->x && dm->adj && dm->face_offsets && dm->face_indices &&
               p->iterations >= 1,
           MB_ERR_ARG, "mb_deform_cuda_prepare: bad arguments");
  mb_deform_cuda_prep *prep = new (std::nothrow) mb_deform_cuda_prep;
  MB_CHECK(prep, MB_ERR_MEMORY, "deform: out of memory");
  prep_init(prep, p, dm, o);
  const double t0 = mb_wtime();
  const mb_error e = prepare_host(&prep->g);
  if (e) {
    delete prep;
    return e;
  }
  upload_ahead(&prep->g);
  prep->ms = 1e3 * (mb_wtime() - t0);
  *out = prep;
  return MB_SUCCESS;
}

extern "C" mb_error mb_deform_run_cuda_prepared(mb_deform_cuda_prep *prep, mb_deform_report *rep) {
  MB_CHECK(prep && rep, MB_ERR_ARG, "mb_deform_run_cuda_prepared: bad arguments");
  const mb_error e = run_prepared(prep, rep);
  delete prep;
  return e;
}

extern "C" void mb_deform_cuda_prep_free(mb_deform_cuda_prep *prep) { delete prep; }

extern "C" void mb_deform_cuda_release(void) {
  delete the_pool;
  the_pool = nullptr;
  std::lock_guard<std::mutex> lock(ahead_mu);
  for (pool_t *d : ahead_free) delete d;
  ahead_free.clear();
}

