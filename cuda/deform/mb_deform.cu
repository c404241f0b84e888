/* meshbatch: the deform op on the GPU (see src/ops/deform/mb_deform.h for
 * the method and mb_deform_cuda.h for the contract).
 *
 * Over 1,000 lines (about 1,190) for now: the three solvers (the room's CG,
 * the linalg PCG, csrchol) share the device state and the iteration's
 * kernels; the room's CG (kernels, graph capture, batched reads) is the part
 * to move into a file of its own next.
 *
 * Host, once per mesh: the checks of the CPU solver (the same order and
 * messages), the system's pattern and parts by the CPU's own functions
 * (mb_deform_private.h), the weights, targets, pinned vertices, the mean
 * edge length and the constant parts of the right-hand side (r0 - g0 and
 * gF, mirrored from mb_deform.c's run()); per penalty value c the matrix H
 * (mb_deform_system_matrix) uploaded into a device CSR and, for solver
 * cholesky, factored by csrchol (cuda/linalg; METIS order and analysis once).
 *
 * Device, per iteration (the positions stay there):
 *   k_project  one thread per face over faces of mixed sizes by the face
 *              offsets (the chapter's offset-array scheme): the centred
 *              coordinates (+ the scaled duals, hard), the projection
 *              (mb_deform_face.h: the CPU's float64 formulas), the
 *              largest |q - z|, the over-relaxation (hard) and the face
 *              means of y (the A_f^T gather's second term);
 *   k_rhs      one thread per vertex: b = (r0 - g0) + c (sum_f A_f^T y_f -
 *              gF), pinned rows b = x; the warm start X = x;
 *   the solve  pcg: this room's CG (below: no host round trip inside a
 *              chunk of iterations; the default), or with opts->linalg_cg
 *              the linalg layer's device CG (Jacobi, the row-kernel
 *              product: the CPU PCG's method step for step, its checks on
 *              the host), the three columns together, warm-started from
 *              the last iterate, to MB_DEFORM_PCG_RTOL; with cg_iterations
 *              k >= 1 the room's CG stopped after k iterations (the CPU's
 *              mb_deform_cg), its count and breakdown flag left in the
 *              iteration's maxima (k_cg_report), so an iteration reads the
 *              device once; cholesky: csrchol's triangular solves;
 *   k_take     one thread per vertex: x = X for free vertices, the largest
 *              move and a non-finite flag (soft: skipped when the
 *              projection found the residual within the tolerance, where
 *              the CPU stops before its solve);
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
 * CG steps included) is one CUDA graph captured once per run
 * (iterate_graph), its two scalars c and al copied to the device before
 * each launch, so an iteration costs one graph launch and one read; soft
 * runs without a history launch BATCH (5) such graphs a read: k_halt
 * records each iteration's maxima and stops the device applying solutions
 * where the host's soft rules stop, which then replay the records.
 * Not done (open): batches in hard mode (the device would have to take the
 * residual check and the over-relaxation switch itself, and the host the
 * mu windows at batch ends), and device buffers pooled across the meshes
 * of a rank (each mesh allocates its own). The final residuals, the per-face planarity and
 * the handle error are computed on the host from the downloaded positions
 * by mb_deform_proj.c's functions, the CPU's very numbers. */
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "mb_csr.h"
#include "mb_cuda_private.cuh"
#include "mb_deform.h"
#include "mb_deform_cuda.h"
#include "mb_deform_face.h"
#include "mb_deform_private.h"
#include "mb_linalg_cuda.h"
#include "mb_log.h"
#include "mb_mpi.h"
#include "mb_op.h"
#include "mb_solver.h"

namespace {

constexpr int BLOCK = 256;
unsigned blocks(int64_t n) { return (unsigned)((n + BLOCK - 1) / BLOCK); }

/* The maxima an iteration reads back (float64 bits of values >= 0, whose
 * integer order is their order; a NaN's bits are above every number). */
struct ctl_t {
  unsigned long long dist;  /* max over slots of |q - P(q)| (k_project) */
  unsigned long long moved; /* max over free coordinates of |X - x| (k_take) */
  unsigned long long prim;  /* max |A p - h| (k_dual) */
  unsigned long long res;   /* the constraint's residual (k_resid) */
  int nonfinite;            /* k_take saw a non-finite X */
  int cg_bad;               /* the capped device CG broke down (k_cg_report) */
  long long cg_iters;       /* its iterations this solve (k_cg_report) */
};

/* Soft runs of the capped CG path read the device once per BATCH
 * iterations: each iteration's maxima are kept (k_halt), and the device
 * itself stops applying solutions at the iteration where the host's rules
 * stop (halt), so the iterations launched past it leave x as it was. */
constexpr int BATCH = 5;
struct batch_t {
  int halt;            /* set by k_halt: the host's soft rules stop at this iteration */
  int count;           /* iterations recorded since the host cleared it */
  ctl_t hist[BATCH];   /* their maxima, in order */
};

/* Warp maximum, then one atomic per warp. */
__device__ inline void max_bits(unsigned long long *a, double v) {
  unsigned long long b = (unsigned long long)__double_as_longlong(v);
  if (v == 0) b = 0ull; /* -0.0 as +0.0 */
  for (int o = 16; o > 0; o >>= 1) {
    const unsigned long long t = __shfl_down_sync(0xffffffffu, b, o);
    b = t > b ? t : b;
  }
  if ((threadIdx.x & 31) == 0 && b) atomicMax(a, b);
}

double from_bits(unsigned long long b) {
  double v;
  memcpy(&v, &b, sizeof v);
  return v;
}

/* The centred coordinates of face f's slots of x (+ u) into q (the CPU's
 * centred()). */
__device__ inline void centre_face(int64_t s0, int64_t s1, const int64_t *__restrict__ fi,
                                   const double *__restrict__ x, const double *__restrict__ u,
                                   double *__restrict__ q) {
  double c[3] = {0, 0, 0};
  for (int64_t s = s0; s < s1; s++)
    for (int d = 0; d < 3; d++) c[d] += x[3 * fi[s] + d];
  for (int d = 0; d < 3; d++) c[d] /= (double)(s1 - s0);
  for (int64_t s = s0; s < s1; s++)
    for (int d = 0; d < 3; d++) q[3 * s + d] = (x[3 * fi[s] + d] - c[d]) + (u ? u[3 * s + d] : 0.0);
}

/* The local step: q = A_f x (+ u), z = P_f(q), the largest |q - z|; hard:
 * h = al z + (1 - al) (q - u) into z (al = prm[1]) and y = h - u into q; the face means of
 * y (soft: z; hard: q) into ym [nf, 3]. Threads past nf still take part in
 * the warp maximum. */
__global__ void __launch_bounds__(BLOCK)
k_project(int64_t nf, const int64_t *__restrict__ fo, const int64_t *__restrict__ fi,
          const double *__restrict__ x, const double *__restrict__ u, double *__restrict__ q,
          double *__restrict__ z, double *__restrict__ ym, int planar, int hard,
          const double *__restrict__ prm, ctl_t *ctl) {
  const int64_t f = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  const double al = prm[1];
  double worst = 0;
  if (f < nf) {
    const int64_t s0 = fo[f], s1 = fo[f + 1];
    const int n = (int)(s1 - s0);
    centre_face(s0, s1, fi, x, hard ? u : nullptr, q);
    double *qf = q + 3 * s0, *zf = z + 3 * s0;
    if (planar) mb_dface_project_planar(n, qf, zf);
    else mb_dface_project_regular(n, qf, zf);
    for (int k = 0; k < n; k++) {
      const double dx = qf[3 * k] - zf[3 * k], dy = qf[3 * k + 1] - zf[3 * k + 1],
                   dz = qf[3 * k + 2] - zf[3 * k + 2];
      const double r = sqrt(dx * dx + dy * dy + dz * dz);
      if (r > worst) worst = r;
    }
    if (hard)
      for (int64_t s = 3 * s0; s < 3 * s1; s++) {
        const double ap = q[s] - u[s];
        z[s] = al * z[s] + (1.0 - al) * ap;
        q[s] = z[s] - u[s];
      }
    const double *y = hard ? q : z;
    double m[3] = {0, 0, 0};
    for (int64_t s = s0; s < s1; s++)
      for (int d = 0; d < 3; d++) m[d] += y[3 * s + d];
    for (int d = 0; d < 3; d++) ym[3 * f + d] = m[d] / (double)n;
  }
  max_bits(&ctl->dist, worst);
}

/* b = (r0 - g0) + c (sum_f A_f^T y_f - gF) (c = prm[0]) on free rows (the gather in slot
 * order, as the CPU's gather_At), b = x on pinned rows; X = x. */
__global__ void __launch_bounds__(BLOCK)
k_rhs(int64_t nv, const int32_t *__restrict__ vf_row, const int64_t *__restrict__ vf_slot,
      const int64_t *__restrict__ slot_face, const double *__restrict__ y,
      const double *__restrict__ ym, const double *__restrict__ rg,
      const double *__restrict__ gF, const double *__restrict__ pin,
      const double *__restrict__ prm, const double *__restrict__ x, double *__restrict__ b,
      double *__restrict__ X) {
  const int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  if (i >= nv) return;
  const double c = prm[0];
  double acc[3] = {0, 0, 0};
  for (int32_t a = vf_row[i]; a < vf_row[i + 1]; a++) {
    const int64_t s = vf_slot[a], f = slot_face[s];
    for (int d = 0; d < 3; d++) acc[d] += y[3 * s + d] - ym[3 * f + d];
  }
  for (int d = 0; d < 3; d++) {
    const int64_t k = 3 * i + d;
    b[k] = pin[i] != 0 ? x[k] : rg[k] + c * (acc[d] - gF[k]);
    X[k] = x[k];
  }
}

/* x = X on free vertices; the largest move; a non-finite X flagged. Soft
 * (tol_l > 0): nothing where the projection's residual dist / l <= tol (the
 * CPU stops before its solve then). */
__global__ void __launch_bounds__(BLOCK)
k_take(int64_t nv, const double *__restrict__ X, const double *__restrict__ pin,
       double *__restrict__ x, int soft, double l, double tol, ctl_t *ctl,
       const batch_t *bt) {
  const int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
  if (bt && bt->halt) return; /* batched: an earlier iteration stopped (uniform) */
  if (soft) {
    const double dist = __longlong_as_double((long long)ctl->dist);
    if (dist / l <= tol) return; /* uniform over the grid */
  }
  double moved = 0;
  if (i < nv && pin[i] == 0) {
    for (int d = 0; d < 3; d++) {
      const double xn = X[3 * i + d];
      if (!isfinite(xn)) ctl->nonfinite = 1;
      const double dx = fabs(xn - x[3 * i + d]);
      if (dx > moved) moved = dx;
      x[3 * i + d] = xn;
    }
  }
  max_bits(&ctl->moved, moved);
}

/* Batched soft runs: the iteration's maxima into bt->hist, and halt where
 * the host's soft rules (run()) stop: the residual within the tolerance,
 * a breakdown of the CG, a non-finite position, or no vertex moved more
 * than tol * l; the same comparisons of the same numbers as the host's. */
__global__ void k_halt(const ctl_t *ctl, double l, double tol, batch_t *bt) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  const ctl_t c = *ctl;
  const int k = bt->count;
  if (k < BATCH) bt->hist[k] = c;
  bt->count = k + 1;
  const double dist = __longlong_as_double((long long)c.dist);
  const double moved = __longlong_as_double((long long)c.moved);
  if (dist / l <= tol || c.cg_bad || c.nonfinite || !isfinite(moved) || moved <= tol * l)
    bt->halt = 1;
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

/* ------------------------------------------------------------ device CG
 * (mb_deform_cuda_opts.device_cg): Jacobi-preconditioned CG of the three
 * columns together with no host round trip inside a chunk of
 * MB_DEFORM_CG_CHUNK iterations: every scalar (alpha, beta, the column's
 * stop) lives on the device, each dot product is a fixed-order two-pass
 * sum (per-block partials, then the grid's last block to finish sums them
 * in block order and takes the scalars: no single-block kernel; the same
 * bits on every run), and a column that has stopped is skipped by every
 * kernel. A chunk (3 kernels an iteration: product with alpha, update
 * with beta and the stop, direction) is captured once per run as a CUDA
 * graph and launched whole; the host reads the state once per chunk
 * (uncapped) or never (capped: cg_iterations). The method of mb_pcg_solve (z = r / a_ii, a
 * column stops when sqrt(r.r) <= rtol ||b||, b = 0 gives x = 0) without
 * its recomputed-residual restart and with rounded (not exact) dot
 * products, so its iterates agree with the CPU's to rounding only. */
constexpr int CG_CHUNK = 8;
/* The capped CG's graph: up to this many iterations (3 kernels each). */
constexpr int CG_CHUNK_MAX = 32;

struct cg_t {
  double rz[3], bb[3], alpha[3], beta[3], rr[3];
  int done[3], all_done, bad, iters, maxit; /* maxit: the cap (cg_iterations), 0 none */
  unsigned ticket; /* blocks of a product or update done (last_block), 0 between kernels */
};

/* The block's sum of v at thread 0 (tree order, fixed). sh [BLOCK]. */
__device__ inline double block_sum(double v, double *sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int o = BLOCK / 2; o > 0; o >>= 1) {
    if ((int)threadIdx.x < o) sh[threadIdx.x] = sh[threadIdx.x] + sh[threadIdx.x + o];
    __syncthreads();
  }
  const double r = sh[0];
  __syncthreads();
  return r;
}

/* part[blk, 9]: per block and column c the values a (3 c), b (3 c + 1), e (3 c + 2). */
__device__ inline void block_parts(const double v[9], double *part, double *sh) {
  for (int k = 0; k < 9; k++) {
    const double t = block_sum(v[k], sh);
    if (threadIdx.x == 0) part[9 * blockIdx.x + k] = t;
  }
}

/* sums[9] = the partials of nblk blocks, summed in a fixed order (one block). */
__device__ inline void finish_parts(int nblk, const double *part, double sums[9], double *sh) {
  for (int k = 0; k < 9; k++) {
    double v = 0;
    for (int b = threadIdx.x; b < nblk; b += BLOCK) v += __ldcg(&part[9 * b + k]);
    sums[k] = block_sum(v, sh);
  }
}

/* Whether this block is the grid's last to have written its partials (the
 * same answer in all its threads): thread 0 fences the block's partials
 * (written by thread 0 in block_parts), then takes a ticket; the last
 * ticket's block resets the counter and may read every block's partials
 * (finish_parts reads them past L1). The sums are then the same fixed-order
 * sums whichever block is last. */
__device__ inline bool last_block(unsigned *ticket) {
  __shared__ bool last;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    const unsigned t = atomicAdd(ticket, 1u);
    last = t == gridDim.x - 1;
    if (last) atomicExch(ticket, 0u);
  }
  __syncthreads();
  return last;
}

__global__ void __launch_bounds__(BLOCK)
k_cg_dinv(int32_t n, const int32_t *__restrict__ diag, const double *__restrict__ val,
          double *__restrict__ dinv, cg_t *st) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  const double a = val[diag[i]];
  if (!(a > 0) || !isfinite(a)) st->bad = 1;
  dinv[i] = 1.0 / a;
}

/* r = b - A x, z = dinv r, p = z; partials r.z, r.r, b.b per column. */
__global__ void __launch_bounds__(BLOCK)
k_cg_init(int32_t n, const int32_t *__restrict__ rowptr, const int32_t *__restrict__ col,
          const double *__restrict__ val, const double *__restrict__ dinv,
          const double *__restrict__ b, const double *__restrict__ x, double *__restrict__ r,
          double *__restrict__ z, double *__restrict__ p, double *__restrict__ part) {
  __shared__ double sh[BLOCK];
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  double v[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  if (i < n) {
    double ax[3] = {0, 0, 0};
    for (int32_t k = rowptr[i]; k < rowptr[i + 1]; k++)
      for (int c = 0; c < 3; c++) ax[c] += val[k] * x[3 * col[k] + c];
    for (int c = 0; c < 3; c++) {
      const double ri = b[3 * i + c] - ax[c], zi = dinv[i] * ri;
      r[3 * i + c] = ri;
      z[3 * i + c] = zi;
      p[3 * i + c] = zi;
      v[3 * c] = ri * zi;
      v[3 * c + 1] = ri * ri;
      v[3 * c + 2] = b[3 * i + c] * b[3 * i + c];
    }
  }
  block_parts(v, part, sh);
}

__global__ void __launch_bounds__(BLOCK)
k_cg_start(int nblk, const double *__restrict__ part, double rtol, int maxit, cg_t *st) {
  __shared__ double sh[BLOCK];
  double s[9];
  finish_parts(nblk, part, s, sh);
  if (threadIdx.x != 0) return;
  int all = 1;
  for (int c = 0; c < 3; c++) {
    st->rz[c] = s[3 * c];
    st->rr[c] = s[3 * c + 1];
    st->bb[c] = s[3 * c + 2];
    st->done[c] = st->bb[c] == 0 || sqrt(st->rr[c]) <= rtol * sqrt(st->bb[c]);
    if (!isfinite(st->rr[c]) || !isfinite(st->bb[c])) st->bad = 1;
    all &= st->done[c];
  }
  st->iters = 0;
  st->maxit = maxit;
  st->all_done = all || st->bad;
}

/* q = A p for the columns still running; partials p.q; the grid's last
 * block then takes alpha = r.z / p.q (a breakdown where p.q <= 0). */
__global__ void __launch_bounds__(BLOCK)
k_cg_spmv(int32_t n, const int32_t *__restrict__ rowptr, const int32_t *__restrict__ col,
          const double *__restrict__ val, const double *__restrict__ p, double *__restrict__ q,
          double *__restrict__ part, cg_t *st) {
  __shared__ double sh[BLOCK];
  if (st->all_done) return; /* uniform over the grid */
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  const int run[3] = {!st->done[0], !st->done[1], !st->done[2]};
  double v[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  if (i < n) {
    double aq[3] = {0, 0, 0};
    for (int32_t k = rowptr[i]; k < rowptr[i + 1]; k++)
      for (int c = 0; c < 3; c++)
        if (run[c]) aq[c] += val[k] * p[3 * col[k] + c];
    for (int c = 0; c < 3; c++)
      if (run[c]) {
        q[3 * i + c] = aq[c];
        v[3 * c] = p[3 * i + c] * aq[c];
      }
  }
  block_parts(v, part, sh);
  if (!last_block(&st->ticket)) return;
  double s[9];
  finish_parts((int)gridDim.x, part, s, sh);
  if (threadIdx.x != 0) return;
  for (int c = 0; c < 3; c++)
    if (!st->done[c]) {
      if (!(s[3 * c] > 0) || !isfinite(s[3 * c])) st->bad = 1; /* p'Ap <= 0: not SPD */
      st->alpha[c] = st->rz[c] / s[3 * c];
    }
  if (st->bad) st->all_done = 1;
}

/* x += alpha p, r -= alpha q, z = dinv r; partials r.z and r.r; the grid's
 * last block then takes each column's stop or beta (and the cap). */
__global__ void __launch_bounds__(BLOCK)
k_cg_update(int32_t n, const double *__restrict__ dinv, const double *__restrict__ p,
            const double *__restrict__ q, double *__restrict__ x, double *__restrict__ r,
            double *__restrict__ z, double *__restrict__ part, double rtol, cg_t *st) {
  __shared__ double sh[BLOCK];
  if (st->all_done) return;
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  double v[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  if (i < n)
    for (int c = 0; c < 3; c++)
      if (!st->done[c]) {
        const double a = st->alpha[c];
        const int64_t k = 3 * (int64_t)i + c;
        x[k] = x[k] + a * p[k];
        const double ri = r[k] - a * q[k], zi = dinv[i] * ri;
        r[k] = ri;
        z[k] = zi;
        v[3 * c] = ri * zi;
        v[3 * c + 1] = ri * ri;
      }
  block_parts(v, part, sh);
  if (!last_block(&st->ticket)) return;
  double s[9];
  finish_parts((int)gridDim.x, part, s, sh);
  if (threadIdx.x != 0) return;
  int all = 1;
  st->iters++;
  for (int c = 0; c < 3; c++) {
    if (!st->done[c]) {
      const double rz = s[3 * c], rr = s[3 * c + 1];
      if (!isfinite(rr) || !isfinite(rz)) st->bad = 1;
      st->rr[c] = rr;
      if (sqrt(rr) <= rtol * sqrt(st->bb[c])) st->done[c] = 1;
      else {
        st->beta[c] = rz / st->rz[c];
        st->rz[c] = rz;
      }
    }
    all &= st->done[c];
  }
  st->all_done = all || st->bad || (st->maxit > 0 && st->iters >= st->maxit);
}

/* p = z + beta p for the columns still running. */
__global__ void __launch_bounds__(BLOCK)
k_cg_dir(int32_t n, const double *__restrict__ z, double *__restrict__ p, const cg_t *st) {
  if (st->all_done) return;
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  for (int c = 0; c < 3; c++)
    if (!st->done[c]) {
      const int64_t k = 3 * (int64_t)i + c;
      p[k] = z[k] + st->beta[c] * p[k];
    }
}

/* b = 0 columns: x = 0 (mb_pcg_solve's rule). */
__global__ void k_cg_zero(int32_t n, double *__restrict__ x, const cg_t *st) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  for (int c = 0; c < 3; c++)
    if (st->bb[c] == 0) x[3 * (int64_t)i + c] = 0;
}

/* The capped CG's iterations and breakdown into the iteration's maxima (read
 * with them: no read of its own). */
__global__ void k_cg_report(const cg_t *st, ctl_t *ctl) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  ctl->cg_iters = st->iters;
  ctl->cg_bad = st->bad;
}

/* Everything one run holds. */
struct deform_gpu {
  const mb_deform_params *p = nullptr;
  mb_deform_mesh *dm = nullptr;
  mb_deform_report *rep = nullptr;
  int sync = 0, device_cg = 0;
  mb_deform_system sys{};
  std::vector<double> d, t, pin, base, rg, gF, p0, scratch;
  mb_cuda_csr *dH = nullptr;
  mb_cuda_cholesky *chol = nullptr;
  mb_dbuf fo, fi, vf_row, vf_slot, slot_face, x, X, b, rgd, gFd, pind, q, z, u, ym, ctl;
  mb_dbuf cr, cz, cp, cq, cdinv, cpart, cst; /* device CG */
  mb_dbuf prm;        /* [2] the iteration's c and al (k_rhs, k_project) */
  double hprm[2] = {0, 0}; /* their host copy (staged by cudaMemcpyAsync) */
  cudaGraphExec_t iter = nullptr; /* a whole capped iteration (iterate_graph) */
  int iter_failed = 0;
  int batched = 0;    /* soft, capped, pipelined, no history: BATCH iterations a read */
  mb_dbuf bt;         /* batch_t (batched) */
  batch_t hbt{};      /* its host copy */
  const int32_t *rowptr = nullptr, *col = nullptr, *diag = nullptr;
  double *val = nullptr; /* dH's device arrays */
  cudaStream_t capture = nullptr; /* the device CG's chunk, captured once per run */
  cudaGraphExec_t chunk = nullptr;
  int chunk_failed = 0;           /* capture failed: launched kernel by kernel */
  ctl_t hctl{}; /* the host copy (pageable: pinning costs more per mesh than it saves) */
  ~deform_gpu() {
    if (chunk) cudaGraphExecDestroy(chunk);
    if (iter) cudaGraphExecDestroy(iter);
    if (capture) cudaStreamDestroy(capture);
    mb_deform_system_free(&sys);
    mb_cuda_csr_free(dH);
    mb_cuda_cholesky_free(chol);
  }
};

/* y [nv, 3] = S x over H's pattern for values v [nnz], only columns with
 * pin = want (want < 0: every column): mb_deform.c's spmv_part. */
void spmv_part(const mb_csr *H, const double *v, const double *pin, int want, const double *x,
               double *y) {
  for (int32_t i = 0; i < H->nrows; i++) {
    double s[3] = {0, 0, 0};
    for (int32_t e = H->rowptr[i]; e < H->rowptr[i + 1]; e++) {
      const int32_t j = H->col[e];
      if (want >= 0 && (pin[j] != 0) != want) continue;
      for (int d = 0; d < 3; d++) s[d] += v[e] * x[3 * j + d];
    }
    for (int d = 0; d < 3; d++) y[3 * i + d] = s[d];
  }
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

double handle_error(const mb_deform_mesh *dm, const double *x) {
  double worst = 0;
  if (!dm->target) return 0;
  for (int64_t i = 0; i < dm->nv; i++) {
    if (isnan(dm->target[3 * i])) continue;
    double r2 = 0;
    for (int d = 0; d < 3; d++)
      r2 += (x[3 * i + d] - dm->target[3 * i + d]) * (x[3 * i + d] - dm->target[3 * i + d]);
    if (sqrt(r2) > worst) worst = sqrt(r2);
  }
  return worst;
}

/* Wait for the device where phases are asked for; the wall clock (s). */
mb_error mark(const deform_gpu *g, double *t) {
  if (g->sync) MB_CALL_CUDA(cudaDeviceSynchronize());
  *t = mb_wtime();
  return MB_SUCCESS;
}

template <typename T> mb_error upload(mb_dbuf *b, const T *h, size_t n, const char *what) {
  MB_CALL(mb_dbuf_alloc(b, sizeof(T) * (n ? n : 1), what));
  if (n) MB_CALL_CUDA(cudaMemcpy(b->p, h, sizeof(T) * n, cudaMemcpyHostToDevice));
  return MB_SUCCESS;
}

/* H at c on the host, uploaded; factored (cholesky). */
mb_error factor(deform_gpu *g, double c) {
  mb_deform_system_matrix(&g->sys, g->base.data(), g->pin.data(), c);
  g->rep->mu = c;
  MB_CALL(mb_cuda_csr_upload(g->dH, g->sys.H->val));
  if (g->p->solver == MB_DEFORM_PCG && g->device_cg && g->dm->nv) {
    MB_CALL_CUDA(cudaMemset(g->cst.p, 0, sizeof(cg_t)));
    k_cg_dinv<<<blocks(g->dm->nv), BLOCK>>>((int32_t)g->dm->nv, g->diag, g->val,
                                            g->cdinv.as<double>(), g->cst.as<cg_t>());
    MB_CHECK_LAUNCH("deform CG diagonal");
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

/* The host setup of mb_deform.c's run() and the uploads. *handles_moved:
 * a hard handle was not at its target. */
mb_error setup(deform_gpu *g, int *handles_moved, double *l_out) {
  const mb_deform_params *p = g->p;
  mb_deform_mesh *dm = g->dm;
  mb_deform_report *rep = g->rep;
  const int64_t nv = dm->nv;
  const int hard = p->hard != 0;
  double *x = dm->x;
  for (int64_t i = 0; i < 3 * nv; i++)
    MB_CHECK(isfinite(x[i]), MB_ERR_NUMERIC, "%s: vertex %lld has a non-finite coordinate",
             dm->name, (long long)(i / 3));
  MB_CALL(mb_deform_system_build(dm, p->w_fair > 0, &g->sys));
  const mb_csr *H = g->sys.H;
  const size_t n3 = 3 * (size_t)nv;
  g->d.assign((size_t)nv, 0.0);
  g->t.assign(n3, 0.0);
  g->pin.assign((size_t)nv, 0.0);
  g->p0.assign(x, x + n3);
  const double *p0 = g->p0.data();
  rep->handles = rep->pinned = 0;
  *handles_moved = 0;
  for (int64_t i = 0; i < nv; i++) {
    const double *tg = dm->target ? &dm->target[3 * i] : NULL;
    const int nan = tg ? isnan(tg[0]) + isnan(tg[1]) + isnan(tg[2]) : 3;
    if (nan != 3 && (nan != 0 || !isfinite(tg[0]) || !isfinite(tg[1]) || !isfinite(tg[2])))
      MB_FAIL(MB_ERR_NUMERIC,
              "%s: handle target of vertex %lld is (%g, %g, %g): a handle needs three finite "
              "coordinates (NaN in all three marks a free vertex)",
              dm->name, (long long)i, tg[0], tg[1], tg[2]);
    const int handle = nan == 0;
    rep->handles += handle;
    g->d[i] = handle ? p->w_handle : p->w_close;
    for (int d = 0; d < 3; d++) g->t[3 * i + d] = handle ? tg[d] : x[3 * i + d];
    if ((handle && hard) || (p->fix_boundary && dm->adj->on_boundary[i])) {
      g->pin[i] = 1;
      rep->pinned++;
      if (handle && hard)
        for (int d = 0; d < 3; d++) {
          *handles_moved |= x[3 * i + d] != tg[d];
          x[3 * i + d] = tg[d];
        }
    }
  }
  double lsum = 0;
  int64_t ne = 0;
  for (int64_t i = 0; i < nv; i++)
    for (int64_t a = dm->adj->row[i]; a < dm->adj->row[i + 1]; a++) {
      const int64_t j = dm->adj->col[a];
      if (j <= i) continue;
      double r2 = 0;
      for (int d = 0; d < 3; d++)
        r2 += (p0[3 * i + d] - p0[3 * j + d]) * (p0[3 * i + d] - p0[3 * j + d]);
      lsum += sqrt(r2);
      ne++;
    }
  const double l = ne && lsum > 0 ? lsum / (double)ne : 1.0;
  rep->edge_length = l;
  *l_out = l;
  /* base = D + w_fair K^T K; r0 = D t + w_fair K^T K p0; g0, gF: pinned columns */
  g->base.assign((size_t)H->nnz, 0.0);
  for (int32_t i = 0; i < H->nrows; i++)
    for (int32_t e = H->rowptr[i]; e < H->rowptr[i + 1]; e++)
      g->base[e] = (e == H->diag[i] ? g->d[i] : 0.0) + p->w_fair * g->sys.KtK[e];
  std::vector<double> r0(n3), g0(n3);
  g->gF.assign(n3, 0.0);
  spmv_part(H, g->sys.KtK, g->pin.data(), -1, p0, r0.data());
  for (int64_t i = 0; i < nv; i++)
    for (int d = 0; d < 3; d++)
      r0[3 * i + d] = g->d[i] * g->t[3 * i + d] + p->w_fair * r0[3 * i + d];
  spmv_part(H, g->base.data(), g->pin.data(), 1, x, g0.data());
  spmv_part(H, g->sys.face, g->pin.data(), 1, x, g->gF.data());
  g->rg.assign(n3, 0.0);
  for (size_t k = 0; k < n3; k++) g->rg[k] = r0[k] - g0[k];
  g->scratch.assign(3 * (size_t)g->sys.nidx, 0.0);

  /* the device */
  const size_t ni = (size_t)g->sys.nidx, nf = (size_t)dm->nf;
  MB_CALL(upload(&g->fo, dm->face_offsets, nf + 1, "deform face offsets"));
  MB_CALL(upload(&g->fi, dm->face_indices, ni, "deform face indices"));
  MB_CALL(upload(&g->vf_row, g->sys.vf_row, (size_t)nv + 1, "deform vertex slots"));
  MB_CALL(upload(&g->vf_slot, g->sys.vf_slot, ni, "deform vertex slots"));
  MB_CALL(upload(&g->slot_face, g->sys.slot_face, ni, "deform slot faces"));
  MB_CALL(upload(&g->x, x, n3, "deform positions"));
  MB_CALL(upload(&g->rgd, g->rg.data(), n3, "deform right-hand side part"));
  MB_CALL(upload(&g->gFd, g->gF.data(), n3, "deform right-hand side part"));
  MB_CALL(upload(&g->pind, g->pin.data(), (size_t)nv, "deform pinned flags"));
  MB_CALL(mb_dbuf_alloc(&g->X, sizeof(double) * (n3 ? n3 : 1), "deform solution"));
  MB_CALL(mb_dbuf_alloc(&g->b, sizeof(double) * (n3 ? n3 : 1), "deform right-hand side"));
  MB_CALL(mb_dbuf_alloc(&g->q, sizeof(double) * 3 * (ni ? ni : 1), "deform centred slots"));
  MB_CALL(mb_dbuf_alloc(&g->z, sizeof(double) * 3 * (ni ? ni : 1), "deform projections"));
  MB_CALL(mb_dbuf_alloc(&g->u, sizeof(double) * 3 * (ni ? ni : 1), "deform duals"));
  MB_CALL(mb_dbuf_alloc(&g->ym, sizeof(double) * 3 * (nf ? nf : 1), "deform face means"));
  MB_CALL(mb_dbuf_alloc(&g->ctl, sizeof(ctl_t), "deform maxima"));
  MB_CALL(mb_dbuf_alloc(&g->prm, 2 * sizeof(double), "deform iteration scalars"));
  MB_CALL_CUDA(cudaMemset(g->u.p, 0, g->u.bytes));
  MB_CALL(mb_cuda_csr_create(H, nullptr, &g->dH));
  mb_cuda_csr_set_product(g->dH, MB_CUDA_PRODUCT_ROWS);
  mb_cuda_csr_arrays(g->dH, &g->rowptr, &g->col, &g->diag, &g->val);
  if (p->solver == MB_DEFORM_PCG && g->device_cg) {
    const size_t nb = blocks(nv) + 1;
    MB_CALL(mb_dbuf_alloc(&g->cr, sizeof(double) * (n3 ? n3 : 1), "deform CG residual"));
    MB_CALL(mb_dbuf_alloc(&g->cz, sizeof(double) * (n3 ? n3 : 1), "deform CG preconditioned"));
    MB_CALL(mb_dbuf_alloc(&g->cp, sizeof(double) * (n3 ? n3 : 1), "deform CG direction"));
    MB_CALL(mb_dbuf_alloc(&g->cq, sizeof(double) * (n3 ? n3 : 1), "deform CG product"));
    MB_CALL(mb_dbuf_alloc(&g->cdinv, sizeof(double) * ((size_t)nv + 1), "deform CG diagonal"));
    MB_CALL(mb_dbuf_alloc(&g->cpart, sizeof(double) * 9 * nb, "deform CG partial sums"));
    MB_CALL(mb_dbuf_alloc(&g->cst, sizeof(cg_t), "deform CG state"));
  }
  if (p->solver == MB_DEFORM_CHOLESKY) MB_CALL(mb_cuda_cholesky_create(H, &g->chol));
  return MB_SUCCESS;
}

/* The device CG (above) of H X = B, warm-started from X; *iters += its
 * iterations. Capped (cg_iterations k >= 1: at most k iterations, the CPU's
 * mb_deform_cg): the chunk is min(k, MB_DEFORM_CG_CHUNK_MAX) iterations,
 * launched ceil(k / chunk) times with no read; k_cg_report leaves the
 * iterations and a breakdown in ctl, which the iteration's one read of
 * the maxima brings back (*iters is then added there, not here).
 * Uncapped: to MB_DEFORM_PCG_RTOL, the state read once per chunk.
 * Errors: MB_ERR_NUMERIC (a breakdown: H not positive definite or a
 * non-finite value; no convergence in 100,000 iterations), MB_ERR_CUDA. */
mb_error device_cg(deform_gpu *g, const double *B, double *X, long long *iters) {
  const int32_t n = (int32_t)g->dm->nv;
  if (n == 0) return MB_SUCCESS;
  const int nb = (int)blocks(n);
  double *r = g->cr.as<double>(), *z = g->cz.as<double>(), *pp = g->cp.as<double>(),
         *q = g->cq.as<double>(), *dinv = g->cdinv.as<double>(), *part = g->cpart.as<double>();
  cg_t *st = g->cst.as<cg_t>();
  const double rtol = MB_DEFORM_PCG_RTOL;
  const int cap = g->p->cg_iterations;
  const int len = cap > 0 ? (cap < CG_CHUNK_MAX ? cap : CG_CHUNK_MAX) : CG_CHUNK;
  k_cg_init<<<nb, BLOCK>>>(n, g->rowptr, g->col, g->val, dinv, B, X, r, z, pp, part);
  k_cg_start<<<1, BLOCK>>>(nb, part, rtol, cap, st);
  MB_CHECK_LAUNCH("deform CG start");
  /* len iterations, 3 kernels each, on stream s */
  auto chunk = [&](cudaStream_t s) {
    for (int j = 0; j < len; j++) {
      k_cg_spmv<<<nb, BLOCK, 0, s>>>(n, g->rowptr, g->col, g->val, pp, q, part, st);
      k_cg_update<<<nb, BLOCK, 0, s>>>(n, dinv, pp, q, X, r, z, part, rtol, st);
      k_cg_dir<<<nb, BLOCK, 0, s>>>(n, z, pp, st);
    }
  };
  /* captured once per run as a CUDA graph (its arguments are fixed: the
   * same B and X buffers at every solve), launched on the default stream
   * as cuda/linalg's AMG cycle is; where capture fails, kernel by kernel */
  if (!g->chunk && !g->chunk_failed) {
    cudaGraph_t graph = nullptr;
    cudaError_t ce = g->capture ? cudaSuccess
                                : cudaStreamCreateWithFlags(&g->capture, cudaStreamNonBlocking);
    if (ce == cudaSuccess) ce = cudaStreamBeginCapture(g->capture, cudaStreamCaptureModeThreadLocal);
    if (ce == cudaSuccess) {
      chunk(g->capture);
      ce = cudaStreamEndCapture(g->capture, &graph);
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
  if (cap > 0) { /* no read: the cap ends it */
    for (int done = 0; done < cap; done += len) {
      if (g->chunk) MB_CALL_CUDA(cudaGraphLaunch(g->chunk, nullptr));
      else chunk(nullptr);
      MB_CHECK_LAUNCH("deform CG iterations");
    }
    k_cg_zero<<<nb, BLOCK>>>(n, X, st);
    k_cg_report<<<1, 32>>>(st, g->ctl.as<ctl_t>());
    MB_CHECK_LAUNCH("deform CG zero columns");
    return MB_SUCCESS;
  }
  cg_t h{};
  for (;;) {
    if (g->chunk) MB_CALL_CUDA(cudaGraphLaunch(g->chunk, nullptr));
    else chunk(nullptr);
    MB_CHECK_LAUNCH("deform CG iterations");
    MB_CALL_CUDA(cudaMemcpy(&h, st, sizeof h, cudaMemcpyDeviceToHost));
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
  k_cg_zero<<<nb, BLOCK>>>(n, X, st);
  MB_CHECK_LAUNCH("deform CG zero columns");
  *iters += h.iters;
  return MB_SUCCESS;
}

/* One whole local-global iteration of the capped device CG path (solver
 * pcg, cg_iterations k >= 1) on stream s, with no host decision inside:
 * the maxima cleared, k_project, k_rhs, the k-step CG (k_cg_init,
 * k_cg_start, k iterations rounded up to the chunk, k_cg_zero,
 * k_cg_report), k_take and (hard) k_dual; c and al are read from g->prm.
 * Launch errors are the caller's to check (none is checked inside a
 * capture). */
void enqueue_iteration(deform_gpu *g, cudaStream_t s, int planar, int hard, double l) {
  const mb_deform_params *p = g->p;
  const int64_t nv = g->dm->nv, nf = g->dm->nf;
  const int64_t *fo = g->fo.as<int64_t>(), *fi = g->fi.as<int64_t>();
  double *dx = g->x.as<double>(), *dX = g->X.as<double>(), *db = g->b.as<double>();
  double *dq = g->q.as<double>(), *dz = g->z.as<double>(), *du = g->u.as<double>();
  const double *prm = g->prm.as<double>();
  ctl_t *ctl = g->ctl.as<ctl_t>();
  cudaMemsetAsync(ctl, 0, sizeof(ctl_t), s);
  if (nf)
    k_project<<<blocks(nf), BLOCK, 0, s>>>(nf, fo, fi, dx, du, dq, dz, g->ym.as<double>(),
                                           planar, hard, prm, ctl);
  if (nv == 0) return;
  k_rhs<<<blocks(nv), BLOCK, 0, s>>>(nv, g->vf_row.as<int32_t>(), g->vf_slot.as<int64_t>(),
                                     g->slot_face.as<int64_t>(), hard ? dq : dz,
                                     g->ym.as<double>(), g->rgd.as<double>(),
                                     g->gFd.as<double>(), g->pind.as<double>(), prm, dx, db, dX);
  const int32_t n = (int32_t)nv;
  const int nb = (int)blocks(n);
  double *r = g->cr.as<double>(), *z = g->cz.as<double>(), *pp = g->cp.as<double>(),
         *q = g->cq.as<double>(), *dinv = g->cdinv.as<double>(), *part = g->cpart.as<double>();
  cg_t *st = g->cst.as<cg_t>();
  const double rtol = MB_DEFORM_PCG_RTOL;
  const int cap = p->cg_iterations;
  const int len = cap < CG_CHUNK_MAX ? cap : CG_CHUNK_MAX;
  k_cg_init<<<nb, BLOCK, 0, s>>>(n, g->rowptr, g->col, g->val, dinv, db, dX, r, z, pp, part);
  k_cg_start<<<1, BLOCK, 0, s>>>(nb, part, rtol, cap, st);
  for (int done = 0; done < cap; done += len)
    for (int j = 0; j < len; j++) {
      k_cg_spmv<<<nb, BLOCK, 0, s>>>(n, g->rowptr, g->col, g->val, pp, q, part, st);
      k_cg_update<<<nb, BLOCK, 0, s>>>(n, dinv, pp, q, dX, r, z, part, rtol, st);
      k_cg_dir<<<nb, BLOCK, 0, s>>>(n, z, pp, st);
    }
  k_cg_zero<<<nb, BLOCK, 0, s>>>(n, dX, st);
  k_cg_report<<<1, 32, 0, s>>>(st, ctl);
  batch_t *bt = g->batched ? g->bt.as<batch_t>() : nullptr;
  k_take<<<blocks(nv), BLOCK, 0, s>>>(nv, dX, g->pind.as<double>(), dx, !hard, l, p->tolerance,
                                      ctl, bt);
  if (hard && nf) k_dual<<<blocks(nf), BLOCK, 0, s>>>(nf, fo, fi, dx, dz, du, ctl);
  if (bt) k_halt<<<1, 32, 0, s>>>(ctl, l, p->tolerance, bt);
}

/* enqueue_iteration as one CUDA graph, captured at the first call of a run
 * (its arguments are fixed for the run: the same buffers, c and al read
 * from the device) and launched on the default stream after the scalars'
 * copy; where capture fails, enqueued kernel by kernel. Errors: MB_ERR_CUDA. */
mb_error iterate_graph(deform_gpu *g, int planar, int hard, double l) {
  if (!g->iter && !g->iter_failed) {
    cudaGraph_t graph = nullptr;
    cudaError_t ce = g->capture ? cudaSuccess
                                : cudaStreamCreateWithFlags(&g->capture, cudaStreamNonBlocking);
    if (ce == cudaSuccess) ce = cudaStreamBeginCapture(g->capture, cudaStreamCaptureModeThreadLocal);
    if (ce == cudaSuccess) {
      enqueue_iteration(g, g->capture, planar, hard, l);
      ce = cudaStreamEndCapture(g->capture, &graph);
    }
    if (ce == cudaSuccess) ce = cudaGraphInstantiate(&g->iter, graph, 0);
    if (graph) cudaGraphDestroy(graph);
    if (ce != cudaSuccess) {
      (void)cudaGetLastError();
      g->iter = nullptr;
      g->iter_failed = 1;
      mb_log(MB_LOG_VERBOSE, "%s: the iteration's graph could not be captured (%s); its "
             "kernels are launched one by one", g->dm->name, cudaGetErrorString(ce));
    }
  }
  if (g->iter) MB_CALL_CUDA(cudaGraphLaunch(g->iter, nullptr));
  else enqueue_iteration(g, nullptr, planar, hard, l);
  MB_CHECK_LAUNCH("deform iteration");
  return MB_SUCCESS;
}

mb_error read_ctl(deform_gpu *g) {
  MB_CALL_CUDA(cudaMemcpy(&g->hctl, g->ctl.p, sizeof(ctl_t), cudaMemcpyDeviceToHost));
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
  int handles_moved = 0;
  double l = 1;
  MB_CALL(setup(g, &handles_moved, &l));
  rep->analyze_ms += 1e3 * (mb_wtime() - ts);

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

  const int64_t *fo = g->fo.as<int64_t>(), *fi = g->fi.as<int64_t>();
  double *dx = g->x.as<double>(), *dX = g->X.as<double>(), *db = g->b.as<double>();
  double *dq = g->q.as<double>(), *dz = g->z.as<double>(), *du = g->u.as<double>();
  ctl_t *ctl = g->ctl.as<ctl_t>();
  /* the capped device CG, pipelined: each iteration one graph, one read */
  const int whole = p->solver == MB_DEFORM_PCG && g->device_cg && p->cg_iterations > 0 &&
                    !g->sync && nv > 0;
  /* and soft without a history: BATCH iterations launched a read (c and al
   * are constant in soft mode) */
  g->batched = whole && !hard && !rep->history && BATCH > 1;
  if (g->batched) {
    MB_CALL(mb_dbuf_alloc(&g->bt, sizeof(batch_t), "deform batch maxima"));
    MB_CALL_CUDA(cudaMemset(g->bt.p, 0, sizeof(batch_t)));
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
        MB_CALL_CUDA(cudaMemcpyAsync(g->prm.p, g->hprm, sizeof g->hprm, cudaMemcpyHostToDevice,
                                     nullptr));
        MB_CALL_CUDA(cudaMemsetAsync(&g->bt.as<batch_t>()->count, 0, sizeof(int), nullptr));
        for (int j = 0; j < bn && !err; j++) err = iterate_graph(g, planar, hard, l);
        if (err) break;
        MB_CALL_CUDA(cudaMemcpy(&g->hbt, g->bt.p, sizeof(batch_t), cudaMemcpyDeviceToHost));
        MB_CHECK(g->hbt.count == bn, MB_ERR_CUDA,
                 "%s: the device recorded %d of a batch of %d iterations", dm->name,
                 g->hbt.count, bn);
      }
      g->hctl = g->hbt.hist[bi++];
      t1 = t0; /* the batch counts as the solve of its first iteration */
      t2 = mb_wtime();
    } else {
      MB_CALL_CUDA(cudaMemcpyAsync(g->prm.p, g->hprm, sizeof g->hprm, cudaMemcpyHostToDevice,
                                   nullptr));
      if (whole) { /* the capped CG path: one graph, no phase marks */
        err = iterate_graph(g, planar, hard, l);
        if (err) break;
        t1 = t0; /* the whole iteration counts as the solve (t2 after the read) */
        t2 = t0;
      } else {
        MB_CALL_CUDA(cudaMemsetAsync(ctl, 0, sizeof(ctl_t), nullptr));
        if (nf) {
          k_project<<<blocks(nf), BLOCK>>>(nf, fo, fi, dx, du, dq, dz, g->ym.as<double>(), planar,
                                           hard, g->prm.as<double>(), ctl);
          MB_CHECK_LAUNCH("deform projections");
        }
        MB_CALL(mark(g, &t1));
        if (nv) {
          k_rhs<<<blocks(nv), BLOCK>>>(nv, g->vf_row.as<int32_t>(), g->vf_slot.as<int64_t>(),
                                       g->slot_face.as<int64_t>(), hard ? dq : dz,
                                       g->ym.as<double>(), g->rgd.as<double>(), g->gFd.as<double>(),
                                       g->pind.as<double>(), g->prm.as<double>(), dx, db, dX);
          MB_CHECK_LAUNCH("deform right-hand side");
        }
        mb_solve_stats st{};
        if (p->solver == MB_DEFORM_PCG && g->device_cg) {
          err = device_cg(g, db, dX, &rep->pcg_iterations);
        } else if (p->solver == MB_DEFORM_PCG) {
          mb_pcg_opts o{};
          o.rtol = MB_DEFORM_PCG_RTOL;
          o.max_iter = 100000;
          err = mb_cuda_pcg_solve(MPI_COMM_SELF, nullptr, g->dH, 3, db, dX, &o, &st);
          rep->pcg_iterations += st.iterations;
        } else {
          err = mb_cuda_cholesky_solve(g->chol, 3, db, dX, &st);
        }
        if (err) break;
        if (nv) {
          k_take<<<blocks(nv), BLOCK>>>(nv, dX, g->pind.as<double>(), dx, !hard, l, p->tolerance,
                                        ctl, nullptr);
          MB_CHECK_LAUNCH("deform take solution");
        }
        MB_CALL(mark(g, &t2));
        if (hard && nf) {
          k_dual<<<blocks(nf), BLOCK>>>(nf, fo, fi, dx, dz, du, ctl);
          MB_CHECK_LAUNCH("deform dual update");
        }
      }
      MB_CALL(read_ctl(g));
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
  MB_CALL_CUDA(cudaMemcpy(x, dx, sizeof(double) * 3 * (size_t)nv, cudaMemcpyDeviceToHost));
  host_residuals(dm, x, g->scratch, &plan, &reg, rep->face_planarity);
  if (rep->face_planarity)
    for (int64_t f = 0; f < nf; f++) rep->face_planarity[f] /= l;
  res = which == MB_DEFORM_REGULAR ? reg : plan;
  if (rep->history) rep->history[rep->iterations] = res / l;
  rep->planarity = plan / l;
  rep->regularity = reg / l;
  rep->handle_error = handle_error(dm, x);
  if (hard && !rep->converged)
    MB_FAIL(MB_ERR_NUMERIC,
            "%s: the hard %s constraints were not met: residual %.3g (tolerance %g) after %d "
            "iterations, mu %g; handle error %.3g (the handles may admit no %s mesh)",
            dm->name, which == MB_DEFORM_PLANAR ? "planar" : "regular", res / l, p->tolerance,
            rep->iterations, c, rep->handle_error,
            which == MB_DEFORM_PLANAR ? "planar" : "regular");
  return MB_SUCCESS;
}

} // namespace

extern "C" mb_error mb_deform_run_cuda(const mb_deform_params *p, mb_deform_mesh *dm,
                                       mb_deform_report *rep, const mb_deform_cuda_opts *o) {
  MB_CHECK(p && dm && rep && dm->x && dm->adj && dm->face_offsets && dm->face_indices &&
               p->iterations >= 1,
           MB_ERR_ARG, "mb_deform_run_cuda: bad arguments");
  double *history = rep->history, *en = rep->energy, *fp = rep->face_planarity;
  memset(rep, 0, sizeof *rep);
  rep->history = history;
  rep->energy = en;
  rep->face_planarity = fp;
  mb_error e;
  mb_deform_params q = *p; /* solver auto: pcg on the device */
  if (q.solver == MB_DEFORM_AUTO) q.solver = MB_DEFORM_PCG;
  {
    deform_gpu g;
    g.p = &q;
    g.dm = dm;
    g.rep = rep;
    g.sync = o && o->sync_phases;
    g.device_cg = !(o && o->linalg_cg) || q.cg_iterations > 0;
    e = run(&g);
  }
  if (e) (void)cudaGetLastError();
  return e;
}
