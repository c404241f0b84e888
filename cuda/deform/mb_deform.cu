/* meshbatch: the deform op on the GPU (see src/ops/deform/mb_deform.h for
 * the method and mb_deform_cuda.h for the contract).
 *
 * Over 1,000 lines (about 1,800) for now: the three solvers (the room's CG,
 * the linalg PCG, csrchol) share the device state and the iteration's
 * kernels; the room's CG (kernels, graph capture, batched reads) is the part
 * to move into a file of its own next.
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
 *              means of y (the A_f^T gather's second term);
 *   k_rhs      one thread per vertex: b = (r0 - g0) + c (sum_f A_f^T y_f -
 *              gF), pinned rows b = x; the warm start X = x (k_rhs_cg for
 *              the room's CG: the same, with the CG's start fused in);
 *   the solve  pcg: this room's CG (below: 2 kernels a CG iteration, no
 *              host round trip inside a chunk of iterations; the
 *              default), or with opts->linalg_cg the linalg layer's device
 *              CG (Jacobi, the row-kernel product: the CPU PCG's method
 *              step for step, its checks on the host), the three columns
 *              together, warm-started from the last iterate, to
 *              MB_DEFORM_PCG_RTOL; with cg_iterations k >= 1 the room's CG
 *              stopped after k iterations (the CPU's mb_deform_cg), its
 *              count and breakdown flag left in the iteration's maxima
 *              by k_take, so an iteration reads the device once;
 *              cholesky: csrchol's triangular solves;
 *   k_take     one thread per vertex (in the capped CG's graph fused into
 *              its last update: k_cg_update_take): x = X for free
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
 * CG steps included, the last update fused with the take: 2 + 2 k
 * kernels soft) is one CUDA graph captured once
 * per run into the pool's executable graph (updated in place from mesh to
 * mesh where the shape is the same), its two scalars c and al copied to
 * the device before each launch, so an iteration costs one graph launch
 * and one read; soft runs without a history launch BATCH (25) such graphs
 * a read: k_take records each iteration's maxima and stops the device
 * applying solutions where the host's soft rules stop, which then replay
 * the records.
 * The frame's end is on the device too: k_final computes every face's
 * planarity and regularity and the handle error (mb_deform_face.h, the
 * CPU's formulas: the host's figures to rounding) and one small read
 * brings their maxima; the positions (and each face's planarity, where
 * asked for) are downloaded after the frame (rep->finish_ms).
 * Bytes a kernel moves and its time at 3 TB/s (HBM; H and the vectors of
 * Roof2, about 30 MB, fit the H100's 50 MB L2, so repeated passes may do
 * better), Roof2: n = 80,656 rows, 80,089 faces (quads: 320 k slots), H
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
 *   the count misses (ptxas -v, sm_90: k_cg_spmv 48 registers,
 *   k_cg_update 46, k_rhs_cg 48, each 18.4 KB of shared memory a block,
 *   no spills; so 5 blocks of 256 an SM could run): Roof2 has only
 *   80,656 rows, one thread a row, 316 blocks over the H100's 132 SMs,
 *   so 2-3 blocks (512-768 threads, a quarter to a third of an SM's 2,048)
 *   an SM: the products are latency-bound, not bandwidth-bound (each of a
 *   row's ~13 entries is a column load and then the gathers of z and the
 *   old direction, 4 entries in flight by the unroll), and the last
 *   block's finish (316 partial records read, one block sum) and the
 *   node's launch gap come after the body serially in each of the two
 *   kernels. Candidates, not done (each to be measured): a thread per
 *   (row, column) (3x the threads, the same row sums; the dot products'
 *   block partials would then need the same summation tree to keep their
 *   bits), a deeper unroll, and one kernel a CG step (grid-wide sync).
 *   k_project    face indices 32 B, positions gathered 96 B, q and z
 *                written 192 B, the face mean 24 B a quad face: 27.5
 *                MB, 9.2 us (plus the float64 3x3 eigen-solves);
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
 * idle, and a row's sum would change its order.
 * Not done (open): batches in hard mode (the device would have to take the
 * residual check and the over-relaxation switch itself, and the host the
 * mu windows at batch ends); the projection and the right-hand side in
 * one kernel (a vertex's row gathers the projections of all its faces: a
 * grid-wide dependency, as the take before the next projection); the dual
 * update fused with the next projection (the host's choice of the
 * over-relaxation and of mu, with the duals' rescaling, comes between
 * them); one cooperative kernel a CG step or a solve. */
#include <cuda_runtime.h>

#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mutex>
#include <new>
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
  unsigned long long plan;  /* the run's end (k_final): max planarity over faces */
  unsigned long long reg;   /* max regularity over faces */
  unsigned long long herr;  /* max distance of a handle from its target */
  int nonfinite;            /* k_take saw a non-finite X */
  int cg_bad;               /* the capped device CG broke down (k_take's report) */
  long long cg_iters;       /* its iterations this solve (k_take's report) */
};

/* Soft runs of the capped CG path read the device once per BATCH
 * iterations: each iteration's maxima are kept (k_take), and the device
 * itself stops applying solutions at the iteration where the host's rules
 * stop (halt), so the iterations launched past it leave x as it was. */
constexpr int BATCH = 25; /* 2 reads a 50-iteration frame; at most 24 run past a stop */
struct batch_t {
  int halt;            /* set by k_take's last block: the host's soft rules stop here */
  int count;           /* iterations recorded since the host cleared it */
  unsigned ticket;     /* k_take's blocks done (last_block), 0 between kernels */
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

/* Row i of the right-hand side: b = (r0 - g0) + c (sum_f A_f^T y_f - gF)
 * on a free row (the gather in slot order, as the CPU's gather_At), b = x
 * on a pinned row; into bi [3]. vf_face [nidx]: the face of each of
 * vf_slot's entries (slot_face[vf_slot[a]], made once per mesh), so the
 * slot's and the face's index are two independent loads, not a chain. */
__device__ inline void rhs_row(int64_t i, const int32_t *__restrict__ vf_row,
                               const int64_t *__restrict__ vf_slot,
                               const int64_t *__restrict__ vf_face, const double *__restrict__ y,
                               const double *__restrict__ ym, const double *__restrict__ rg,
                               const double *__restrict__ gF, const double *__restrict__ pin,
                               double c, const double *__restrict__ x, double bi[3]) {
  double acc[3] = {0, 0, 0};
  for (int32_t a = vf_row[i]; a < vf_row[i + 1]; a++) {
    const int64_t s = vf_slot[a], f = vf_face[a];
    for (int d = 0; d < 3; d++) acc[d] += y[3 * s + d] - ym[3 * f + d];
  }
  for (int d = 0; d < 3; d++) {
    const int64_t k = 3 * i + d;
    bi[d] = pin[i] != 0 ? x[k] : rg[k] + c * (acc[d] - gF[k]);
  }
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
  rhs_row(i, vf_row, vf_slot, vf_face, y, ym, rg, gF, pin, prm[0], x, bi);
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

/* ------------------------------------------------------------ device CG
 * (the room's CG): Jacobi-preconditioned CG of the three columns together
 * (H is shared: one pass over its rows serves x, y and z, the vectors
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
 * agree with the CPU's to rounding only. */
constexpr int CG_CHUNK = 8;

struct cg_t {
  double rz[3], bb[3], alpha[3], beta[3], rr[3];
  int done[3], all_done, bad, iters, maxit; /* maxit: the cap (cg_iterations), 0 none */
  int par;   /* the direction of this iteration goes to cp2 (0) or cp (1) */
  int first; /* 1 before the first iteration of a solve: p = z */
  unsigned ticket; /* blocks of a product or update done (last_block), 0 between kernels */
};

/* The block's sums of v[0..8] at every thread (each in the tree order of
 * one sum: fixed): sh[t] += sh[t + o] for o = BLOCK/2 .. 1. The levels
 * o >= 32 in shared memory (3 barriers at BLOCK 256), the last five (o =
 * 16 .. 1, inside warp 0) by __shfl_down_sync, which adds lane t + o to
 * lane t: the same pairs in the same order as the shared tree, so the
 * same bits, with 5 barriers and 45 shared round trips fewer. sh [9 BLOCK]. */
__device__ inline void block_sum9(double v[9], double *sh) {
  static_assert(BLOCK >= 64 && (BLOCK & (BLOCK - 1)) == 0, "block_sum9: BLOCK a power of 2");
  for (int k = 0; k < 9; k++) sh[k * BLOCK + threadIdx.x] = v[k];
  __syncthreads();
  for (int o = BLOCK / 2; o >= 32; o >>= 1) {
    if ((int)threadIdx.x < o)
      for (int k = 0; k < 9; k++)
        sh[k * BLOCK + threadIdx.x] = sh[k * BLOCK + threadIdx.x] + sh[k * BLOCK + threadIdx.x + o];
    __syncthreads();
  }
  if (threadIdx.x < 32) {
    double t[9];
    for (int k = 0; k < 9; k++) t[k] = sh[k * BLOCK + threadIdx.x];
    for (int o = 16; o > 0; o >>= 1)
      for (int k = 0; k < 9; k++) t[k] = t[k] + __shfl_down_sync(0xffffffffu, t[k], o);
    if (threadIdx.x == 0)
      for (int k = 0; k < 9; k++) sh[k * BLOCK] = t[k];
  }
  __syncthreads();
  for (int k = 0; k < 9; k++) v[k] = sh[k * BLOCK];
  __syncthreads();
}

/* part[blk, 9]: per block and column c the values a (3 c), b (3 c + 1), e (3 c + 2). */
__device__ inline void block_parts(const double v[9], double *part, double *sh) {
  double t[9];
  for (int k = 0; k < 9; k++) t[k] = v[k];
  block_sum9(t, sh);
  if (threadIdx.x == 0)
    for (int k = 0; k < 9; k++) part[9 * blockIdx.x + k] = t[k];
}

/* sums[9] = the partials of nblk blocks, summed in a fixed order (one
 * block): thread t sums blocks t, t + BLOCK, ... of each of the 9 sums,
 * then block_sum9. The loop over blocks is the outer one, so a thread's 9
 * loads of one block's record (72 B) are in flight together: one L2 round
 * trip per record, not 9 dependent ones (the same sums in the same order
 * as the former k-outer loop, so the same bits). */
__device__ inline void finish_parts(int nblk, const double *part, double sums[9], double *sh) {
  for (int k = 0; k < 9; k++) sums[k] = 0;
  for (int b = threadIdx.x; b < nblk; b += BLOCK) {
    double t[9];
    for (int k = 0; k < 9; k++) t[k] = __ldcg(&part[9 * b + k]);
    for (int k = 0; k < 9; k++) sums[k] += t[k];
  }
  block_sum9(sums, sh);
}

/* Whether this block is the grid's last to have written its partials (the
 * same answer in all its threads): thread 0 fences the block's writes
 * (partials, atomics, flags), then takes a ticket; the last ticket's block
 * resets the counter and may read every block's writes (past L1: __ldcg).
 * The sums are then the same fixed-order sums whichever block is last. */
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

__global__ void __launch_bounds__(BLOCK)
k_cg_dinv(int32_t n, const int64_t *__restrict__ diag, const double *__restrict__ val,
          double *__restrict__ dinv, cg_t *st) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  const double a = val[diag[i]];
  if (!(a > 0) || !isfinite(a)) st->bad = 1;
  dinv[i] = 1.0 / a;
}

/* H in the room's CG: sliced ELLPACK with slices of C = 32 rows (SELL-32,
 * rows not sorted: a mesh's rows are nearly equally long), built from the
 * CSR pattern once per mesh (slices()): slice s holds rows 32 s .. 32 s
 * + 31 in w_s columns, w_s its longest row, stored column-major from
 * sptr[s] (entry k of row i at sptr[i / 32] + 32 k + i % 32), a row's
 * entries in the CSR's (ascending column) order and its length from the
 * CSR's rowptr; the padding is never read. One thread per row, as before,
 * so each row's sum has the same terms in the same order (the same bits
 * as the CSR row loop), but a warp's 32 loads of entry k are one
 * coalesced 256 B (values) and 128 B (columns) access instead of 32
 * scattered ones, and the loads of successive entries do not depend on
 * each other (unrolled: several in flight a thread). */
constexpr int SELL_C = 32;
static_assert(BLOCK % SELL_C == 0, "a block holds whole slices");

/* The start of row i's first entry and its length. */
__device__ inline int64_t sell_row(int32_t i, const int64_t *__restrict__ sptr,
                                   const int32_t *__restrict__ rowptr, int *len) {
  *len = rowptr[i + 1] - rowptr[i];
  return sptr[i / SELL_C] + (i % SELL_C);
}

/* The right-hand side (rhs_row, c = prm[0]), the warm start X = x and the
 * CG's start: r = b - H x, z = dinv r, partials r.z, r.r, b.b per column;
 * the grid's last block takes the sums, the columns' stops (b = 0 or
 * sqrt(r.r) <= rtol ||b||), the cap maxit and resets the counts (a
 * breakdown flagged by k_cg_dinv stays). */
__global__ void __launch_bounds__(BLOCK)
k_rhs_cg(int32_t n, const int32_t *__restrict__ vf_row, const int64_t *__restrict__ vf_slot,
         const int64_t *__restrict__ vf_face, const double *__restrict__ y,
         const double *__restrict__ ym, const double *__restrict__ rg,
         const double *__restrict__ gF, const double *__restrict__ pin,
         const double *__restrict__ prm, const double *__restrict__ x, double *__restrict__ X,
         const int32_t *__restrict__ rowptr, const int64_t *__restrict__ sptr,
         const int32_t *__restrict__ col, const double *__restrict__ val,
         const double *__restrict__ dinv, double *__restrict__ r, double *__restrict__ z,
         double *__restrict__ part, double rtol, int maxit, cg_t *st) {
  __shared__ double sh[9 * BLOCK];
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  double v[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  if (i < n) {
    double bi[3];
    rhs_row(i, vf_row, vf_slot, vf_face, y, ym, rg, gF, pin, prm[0], x, bi);
    double ax[3] = {0, 0, 0};
    int len;
    const int64_t e0 = sell_row(i, sptr, rowptr, &len);
#pragma unroll 4
    for (int k = 0; k < len; k++) {
      const int64_t e = e0 + (int64_t)SELL_C * k;
      const double a = val[e];
      const int64_t j = col[e];
      for (int c = 0; c < 3; c++) ax[c] += a * x[3 * j + c];
    }
    for (int c = 0; c < 3; c++) {
      const double ri = bi[c] - ax[c], zi = dinv[i] * ri;
      X[3 * i + c] = x[3 * i + c];
      r[3 * i + c] = ri;
      z[3 * i + c] = zi;
      v[3 * c] = ri * zi;
      v[3 * c + 1] = ri * ri;
      v[3 * c + 2] = bi[c] * bi[c];
    }
  }
  block_parts(v, part, sh);
  if (!last_block(&st->ticket)) return;
  double s[9];
  finish_parts((int)gridDim.x, part, s, sh);
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
  st->par = 0;
  st->first = 1;
  st->all_done = all || st->bad;
}

/* The direction (z + beta pold, or z first) of a running column at row j. */
__device__ inline double dir(int first, double beta, const double *__restrict__ z,
                             const double *__restrict__ pold, int64_t k) {
  return first ? z[k] : z[k] + beta * pold[k];
}

/* p = z + beta pold into pnew (pold, pnew: cp2 and cp by st->par), q = H p
 * for the columns still running; partials p.q; the grid's last block
 * then takes alpha = r.z / p.q (a breakdown where p.q <= 0). */
__global__ void __launch_bounds__(BLOCK)
k_cg_spmv(int32_t n, const int32_t *__restrict__ rowptr, const int64_t *__restrict__ sptr,
          const int32_t *__restrict__ col, const double *__restrict__ val, const double *__restrict__ z, double *cp, double *cp2,
          double *__restrict__ q, double *__restrict__ part, cg_t *st) {
  __shared__ double sh[9 * BLOCK];
  if (st->all_done) return; /* uniform over the grid */
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  const int par = st->par, first = st->first;
  const double *__restrict__ pold = par ? cp2 : cp;
  double *__restrict__ pnew = par ? cp : cp2;
  const int run[3] = {!st->done[0], !st->done[1], !st->done[2]};
  const double beta[3] = {st->beta[0], st->beta[1], st->beta[2]};
  double v[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  if (i < n) {
    double aq[3] = {0, 0, 0};
    int len;
    const int64_t e0 = sell_row(i, sptr, rowptr, &len);
#pragma unroll 4
    for (int k = 0; k < len; k++) {
      const int64_t e = e0 + (int64_t)SELL_C * k;
      const double a = val[e];
      const int64_t j = col[e];
      for (int c = 0; c < 3; c++)
        if (run[c]) aq[c] += a * dir(first, beta[c], z, pold, 3 * j + c);
    }
    for (int c = 0; c < 3; c++)
      if (run[c]) {
        const double pi = dir(first, beta[c], z, pold, 3 * (int64_t)i + c);
        pnew[3 * i + c] = pi;
        q[3 * i + c] = aq[c];
        v[3 * c] = pi * aq[c];
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

/* Row i of the CG update: x += alpha p, r -= alpha q, z = dinv r for the
 * running columns; v[3 c] = r.z and v[3 c + 1] = r.r of column c (the
 * rest 0). */
__device__ inline void update_row(int32_t i, int32_t n, const double *__restrict__ dinv,
                                  const double *__restrict__ p, const double *__restrict__ q,
                                  double *__restrict__ x, double *__restrict__ r,
                                  double *__restrict__ z, const cg_t *st, double v[9]) {
  for (int k = 0; k < 9; k++) v[k] = 0;
  if (i >= n) return;
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
}

/* The last block's end of a CG update (thread 0, the sums s of all
 * blocks): each column's stop or beta, the cap, the flip of the direction
 * buffers. */
__device__ inline void update_finish(const double s[9], double rtol, cg_t *st) {
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
  st->par ^= 1;
  st->first = 0;
  st->all_done = all || st->bad || (st->maxit > 0 && st->iters >= st->maxit);
}

/* x += alpha p, r -= alpha q, z = dinv r (p: k_cg_spmv's pnew); partials
 * r.z and r.r; the grid's last block then takes each column's stop or
 * beta (and the cap) and flips the direction buffers. */
__global__ void __launch_bounds__(BLOCK)
k_cg_update(int32_t n, const double *__restrict__ dinv, const double *cp, const double *cp2,
            const double *__restrict__ q, double *__restrict__ x, double *__restrict__ r,
            double *__restrict__ z, double *__restrict__ part, double rtol, cg_t *st) {
  __shared__ double sh[9 * BLOCK];
  if (st->all_done) return;
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  double v[9];
  update_row(i, n, dinv, st->par ? cp : cp2, q, x, r, z, st, v);
  block_parts(v, part, sh);
  if (!last_block(&st->ticket)) return;
  double s[9];
  finish_parts((int)gridDim.x, part, s, sh);
  if (threadIdx.x != 0) return;
  update_finish(s, rtol, st);
}

/* Row i of the take: x = X on a free vertex (st non-NULL: the room's CG,
 * whose b = 0 columns give 0, mb_pcg_solve's rule), unless skip; returns
 * the largest move of its coordinates, flags a non-finite X in ctl. */
__device__ inline double take_row(int64_t i, int64_t nv, int skip, const double *X,
                                  const double *__restrict__ pin, double *x, const cg_t *st,
                                  ctl_t *ctl) {
  double moved = 0;
  if (skip || i >= nv || pin[i] != 0) return 0;
  for (int d = 0; d < 3; d++) {
    const double xn = st && st->bb[d] == 0 ? 0.0 : X[3 * i + d];
    if (!isfinite(xn)) atomicOr(&ctl->nonfinite, 1);
    const double dx = fabs(xn - x[3 * i + d]);
    if (dx > moved) moved = dx;
    x[3 * i + d] = xn;
  }
  return moved;
}

/* Whether the take is skipped (uniform over the grid): batched and an
 * earlier iteration halted, or soft and the projection found the residual
 * dist / l within the tolerance (the CPU stops before its solve then). */
__device__ inline int take_skip(int soft, double l, double tol, const ctl_t *ctl,
                                const batch_t *bt) {
  int skip = bt ? bt->halt : 0;
  if (soft) {
    const double dist = __longlong_as_double((long long)ctl->dist);
    if (dist / l <= tol) skip = 1;
  }
  return skip;
}

/* Batched (thread 0 of the grid's last block, after every block's atomics
 * on ctl): the iteration's maxima (its CG's count and breakdown given)
 * into bt->hist, the halt where the host's soft rules (run()) stop (the
 * residual within the tolerance, a breakdown of the CG, a non-finite
 * position, or no vertex moved more than tol * l: the same comparisons
 * of the same numbers as the host's), ctl cleared for the next iteration. */
__device__ inline void take_record(double l, double tol, int cg_bad, long long cg_iters,
                                   ctl_t *ctl, batch_t *bt) {
  ctl_t c;
  c.dist = __ldcg(&ctl->dist);
  c.moved = __ldcg(&ctl->moved);
  c.prim = __ldcg(&ctl->prim);
  c.res = __ldcg(&ctl->res);
  c.plan = c.reg = c.herr = 0;
  c.nonfinite = __ldcg(&ctl->nonfinite);
  c.cg_bad = cg_bad;
  c.cg_iters = cg_iters;
  const int k = bt->count;
  if (k < BATCH) bt->hist[k] = c;
  bt->count = k + 1;
  const double dist = __longlong_as_double((long long)c.dist);
  const double moved = __longlong_as_double((long long)c.moved);
  if (dist / l <= tol || c.cg_bad || c.nonfinite || !isfinite(moved) || moved <= tol * l)
    bt->halt = 1;
  ctl->dist = ctl->moved = ctl->prim = ctl->res = 0;
  ctl->nonfinite = ctl->cg_bad = 0;
  ctl->cg_iters = 0;
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
  if (!skip) max_bits(&ctl->moved, take_row(i, nv, 0, X, pin, x, st, ctl));
  if (st && blockIdx.x == 0 && threadIdx.x == 0) {
    ctl->cg_iters = st->iters;
    ctl->cg_bad = st->bad;
  }
  if (!bt || !last_block(&bt->ticket) || threadIdx.x != 0) return;
  take_record(l, tol, __ldcg(&ctl->cg_bad), __ldcg(&ctl->cg_iters), ctl, bt);
}

/* The capped CG's last iteration and the take in one kernel (one node an
 * iteration fewer): k_cg_update's rows where the CG still runs (uniform),
 * then k_take's row on the same thread (it reads the X it has just
 * written), one ticket (st->ticket) for both; the grid's last block
 * finishes the CG's sums (if it ran), then reports its count and
 * breakdown into ctl and, batched, records the iteration (take_record).
 * The same arithmetic as the two kernels, so the same bits. */
__global__ void __launch_bounds__(BLOCK)
k_cg_update_take(int32_t n, const double *__restrict__ dinv, const double *cp,
                 const double *cp2, const double *__restrict__ q, double *__restrict__ X,
                 double *__restrict__ r, double *__restrict__ z, double *__restrict__ part,
                 double rtol, cg_t *st, const double *__restrict__ pin, double *__restrict__ x,
                 int soft, double l, double tol, ctl_t *ctl, batch_t *bt) {
  __shared__ double sh[9 * BLOCK];
  const int running = !st->all_done; /* uniform: read before any block's last block */
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (running) {
    double v[9];
    update_row(i, n, dinv, st->par ? cp : cp2, q, X, r, z, st, v);
    block_parts(v, part, sh);
  }
  const int skip = take_skip(soft, l, tol, ctl, bt);
  if (!skip) max_bits(&ctl->moved, take_row(i, n, 0, X, pin, x, st, ctl));
  if (!last_block(&st->ticket)) return;
  if (running) {
    double s[9];
    finish_parts((int)gridDim.x, part, s, sh);
    if (threadIdx.x == 0) update_finish(s, rtol, st);
  }
  if (threadIdx.x != 0) return;
  if (bt) take_record(l, tol, st->bad, st->iters, ctl, bt);
  else {
    ctl->cg_iters = st->iters;
    ctl->cg_bad = st->bad;
  }
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

/* The device buffers of this process's runs (one rank, one device), kept
 * from mesh to mesh and grown, never shrunk (grow()): a batch of meshes
 * allocates only where a mesh needs more than every mesh before it, and
 * frees nothing between meshes; with the capped iteration's graph, updated
 * in place (cudaGraphExecUpdate) where the next mesh's has the same shape.
 * Freed by mb_deform_cuda_release, or by a run on another device. */
struct pool_t {
  int device = -1;
  mb_dbuf fo, fi, vf_row, vf_slot, vf_face, x, X, b, rgd, gFd, pind, q, z, u, ym, ctl;
  mb_dbuf prm;  /* [2] the iteration's c and al (k_rhs, k_project) */
  mb_dbuf tgt;  /* [nv, 3] the handles' targets (NaN rows free), k_final */
  mb_dbuf fres; /* [nf] each face's final planarity (rep->face_planarity) */
  mb_dbuf bt;   /* batch_t (batched) */
  mb_dbuf cr, cz, cp, cp2, cq, cdinv, cpart, cst; /* the room's CG */
  /* H for the room's CG: CSR rows (lengths), SELL-32 slices, columns,
   * diagonal positions, values at c and their two parts (base, face) */
  mb_dbuf hrow, hsptr, hcol, hdiag, hval, hbase, hface;
  cudaStream_t capture = nullptr; /* graphs are captured on it */
  cudaGraphExec_t iter = nullptr; /* a whole capped iteration (iterate_graph) */
  cudaEvent_t ev[2] = {nullptr, nullptr}; /* around a group of launches (rep->device_ms) */
  /* pinned staging of a run's uploads (upload(): asynchronous copies on
   * the default stream), grown only; stage_used: bytes taken by this run */
  char *stage = nullptr;
  size_t stage_bytes = 0, stage_used = 0;
  ~pool_t() {
    if (stage) cudaFreeHost(stage);
    for (int k = 0; k < 2; k++)
      if (ev[k]) cudaEventDestroy(ev[k]);
    if (iter) cudaGraphExecDestroy(iter);
    if (capture) cudaStreamDestroy(capture);
  }
};
pool_t *the_pool = nullptr;

/* b holds at least `bytes` (at least 1) of device memory: reallocated only
 * where it holds fewer (its contents are then lost). Errors: those of
 * mb_dbuf_alloc. */
mb_error grow(mb_dbuf *b, size_t bytes, const char *what) {
  if (!bytes) bytes = 1;
  if (b->p && b->bytes >= bytes) return MB_SUCCESS;
  return mb_dbuf_alloc(b, bytes, what);
}

/* The host allocator's policy for a batch of meshes, set once per process
 * (glibc only): freed memory kept for reuse up to 128 MB at the heap's top
 * (M_TRIM_THRESHOLD) and blocks up to 32 MB from the heap rather than
 * fresh mmaps (M_MMAP_THRESHOLD, glibc's own dynamic ceiling), so each
 * mesh's host setup (pattern, parts, SELL-32 arrays: a few MB for a
 * layout of 1-5 k vertices) reuses the pages of the mesh before instead
 * of faulting in new zeroed ones. Measured on the 2-core development VM
 * (its page faults are costly): the host setup of 1-5 k vertex layouts
 * 9.4 -> 1.5 ms a layout, bitwise the same results. Cannot fail (mallopt's
 * refusal keeps glibc's defaults). */
void malloc_policy(void) {
#ifdef __GLIBC__
  static std::once_flag once;
  std::call_once(once, [] {
    (void)mallopt(M_MMAP_THRESHOLD, 32 << 20);
    (void)mallopt(M_TRIM_THRESHOLD, 128 << 20);
  });
#endif
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
    malloc_policy();
    the_pool = new (std::nothrow) pool_t;
    MB_CHECK(the_pool, MB_ERR_MEMORY, "deform: out of memory");
    the_pool->device = dev;
  }
  *out = the_pool;
  return MB_SUCCESS;
}

/* Everything one run holds (the device buffers in d, the pool). */
struct deform_gpu {
  const mb_deform_params *p = nullptr;
  mb_deform_mesh *dm = nullptr;
  mb_deform_report *rep = nullptr;
  pool_t *d = nullptr;
  int sync = 0, device_cg = 0;
  mb_deform_system sys{};
  std::vector<double> d_, t, pin, base, rg, gF, p0, scratch;
  mb_cuda_csr *dH = nullptr; /* the linalg PCG and csrchol only */
  mb_cuda_cholesky *chol = nullptr;
  double hprm[2] = {0, 0}; /* c and al, staged by cudaMemcpyAsync to d->prm */
  int iter_ready = 0;      /* d->iter holds this run's iteration */
  int iter_failed = 0;
  int batched = 0;    /* soft, capped, pipelined, no history: BATCH iterations a read */
  batch_t hbt{};      /* the host copy of d->bt */
  const int32_t *rowptr = nullptr, *col = nullptr, *diag = nullptr;
  double *val = nullptr; /* H's device arrays (d->h* in SELL-32, or dH's CSR) */
  const int64_t *sptr = nullptr, *sdiag = nullptr; /* the room's CG: slices, diagonal */
  int64_t nsell = 0;                               /* its stored entries (padding included) */
  cudaGraphExec_t chunk = nullptr; /* the uncapped device CG's chunk, once per run */
  int chunk_failed = 0;           /* capture failed: launched kernel by kernel */
  ctl_t hctl{}; /* the host copy (pageable: pinning costs more per mesh than it saves) */
  /* prepare_host's results (host only, no device call), uploaded by
   * upload_all: the face of each vertex slot entry; H in SELL-32 (the room's
   * CG: slices, columns, diagonal positions, base and face parts) */
  std::vector<int64_t> vff, s_ptr, s_dpos;
  std::vector<int32_t> s_col;
  std::vector<double> s_base, s_face;
  int prepared = 0;      /* prepare_host has run (mb_deform_cuda_prepare) */
  int handles_moved = 0; /* prepare_host: a hard handle was not at its target */
  double l = 1;          /* prepare_host: the mean edge length */
  double t_frame = 0; /* mb_wtime() at the frame's end (the final residuals read) */
  ~deform_gpu() {
    if (chunk) cudaGraphExecDestroy(chunk);
    mb_deform_system_free(&sys);
    mb_cuda_csr_free(dH);
    mb_cuda_cholesky_free(chol);
  }
};

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

/* h [n] into the pooled b (grown where needed): copied into the pool's
 * pinned staging (the_pool's, grown only, from offset stage_used) and
 * sent by cudaMemcpyAsync on the default stream, so the host does not wait
 * for each upload (h may be freed on return; the kernels after it on the
 * stream see the data). Where the staging is full, the device is waited
 * for (the pending copies read it) and a larger one allocated.
 * stage_begin() before a run's first upload. Errors: MB_ERR_CUDA,
 * MB_ERR_MEMORY. */
template <typename T> mb_error upload(mb_dbuf *b, const T *h, size_t n, const char *what) {
  MB_CALL(grow(b, sizeof(T) * n, what));
  if (!n) return MB_SUCCESS;
  pool_t *d = the_pool;
  const size_t bytes = sizeof(T) * n, need = (bytes + 255) / 256 * 256;
  if (d->stage_used + need > d->stage_bytes) {
    MB_CALL_CUDA(cudaDeviceSynchronize()); /* the pending copies from the staging */
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
  MB_CALL_CUDA(cudaMemcpyAsync(b->p, at, bytes, cudaMemcpyHostToDevice, nullptr));
  return MB_SUCCESS;
}

/* A run's uploads start: the staging reused from its beginning once the
 * device has finished the copies still reading it (a run that failed
 * part-way). Errors: MB_ERR_CUDA. */
mb_error stage_begin(void) {
  if (the_pool->stage_used) MB_CALL_CUDA(cudaStreamSynchronize(nullptr));
  the_pool->stage_used = 0;
  return MB_SUCCESS;
}

/* Whether the room's CG solves (else the linalg PCG or csrchol). */
bool room_cg(const deform_gpu *g) { return g->p->solver == MB_DEFORM_PCG && g->device_cg; }

/* H at c on the host, uploaded; factored (cholesky). */
mb_error factor(deform_gpu *g, double c) {
  g->rep->mu = c;
  if (room_cg(g)) { /* on the device from the parts uploaded once (setup) */
    if (g->nsell) {
      k_assemble<<<blocks(g->nsell), BLOCK>>>(g->nsell, g->d->hbase.as<double>(),
                                              g->d->hface.as<double>(), c, g->val);
      MB_CHECK_LAUNCH("deform system values");
    }
  } else {
    mb_deform_system_matrix(&g->sys, g->base.data(), g->pin.data(), c);
    MB_CALL(mb_cuda_csr_upload(g->dH, g->sys.H->val));
  }
  if (g->p->solver == MB_DEFORM_PCG && g->device_cg && g->dm->nv) {
    MB_CALL_CUDA(cudaMemset(g->d->cst.p, 0, sizeof(cg_t)));
    k_cg_dinv<<<blocks(g->dm->nv), BLOCK>>>((int32_t)g->dm->nv, g->sdiag, g->val,
                                            g->d->cdinv.as<double>(), g->d->cst.as<cg_t>());
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

/* build_sell's arrays uploaded into the pool (hsptr, hcol, hdiag, hbase,
 * hface; hval grown). Errors: MB_ERR_MEMORY, MB_ERR_CUDA. */
mb_error upload_sell(deform_gpu *g) {
  MB_CALL(upload(&g->d->hsptr, g->s_ptr.data(), g->s_ptr.size(), "deform system slices"));
  MB_CALL(upload(&g->d->hcol, g->s_col.data(), g->s_col.size(), "deform system columns"));
  MB_CALL(upload(&g->d->hdiag, g->s_dpos.data(), g->s_dpos.size(), "deform system diagonal"));
  MB_CALL(upload(&g->d->hbase, g->s_base.data(), g->s_base.size(), "deform system values"));
  MB_CALL(upload(&g->d->hface, g->s_face.data(), g->s_face.size(), "deform system values"));
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

/* prepare_host (unless done) and the uploads into the pool.
 * Errors: those of prepare_host, MB_ERR_CUDA, MB_ERR_MEMORY. */
mb_error setup(deform_gpu *g) {
  if (!g->prepared) MB_CALL(prepare_host(g));
  const mb_deform_params *p = g->p;
  mb_deform_mesh *dm = g->dm;
  mb_deform_report *rep = g->rep;
  const int64_t nv = dm->nv;
  double *x = dm->x;
  const mb_csr *H = g->sys.H;
  const size_t n3 = 3 * (size_t)nv;
  /* the device (asynchronous uploads through the pinned staging) */
  MB_CALL(stage_begin());
  const size_t ni = (size_t)g->sys.nidx, nf = (size_t)dm->nf;
  MB_CALL(upload(&g->d->fo, dm->face_offsets, nf + 1, "deform face offsets"));
  MB_CALL(upload(&g->d->fi, dm->face_indices, ni, "deform face indices"));
  MB_CALL(upload(&g->d->vf_row, g->sys.vf_row, (size_t)nv + 1, "deform vertex slots"));
  MB_CALL(upload(&g->d->vf_slot, g->sys.vf_slot, ni, "deform vertex slots"));
  MB_CALL(upload(&g->d->vf_face, g->vff.data(), ni, "deform slot faces"));
  MB_CALL(upload(&g->d->x, x, n3, "deform positions"));
  MB_CALL(upload(&g->d->rgd, g->rg.data(), n3, "deform right-hand side part"));
  MB_CALL(upload(&g->d->gFd, g->gF.data(), n3, "deform right-hand side part"));
  MB_CALL(upload(&g->d->pind, g->pin.data(), (size_t)nv, "deform pinned flags"));
  MB_CALL(grow(&g->d->X, sizeof(double) * n3, "deform solution"));
  MB_CALL(grow(&g->d->b, sizeof(double) * n3, "deform right-hand side"));
  MB_CALL(grow(&g->d->q, sizeof(double) * 3 * ni, "deform centred slots"));
  MB_CALL(grow(&g->d->z, sizeof(double) * 3 * ni, "deform projections"));
  MB_CALL(grow(&g->d->u, sizeof(double) * 3 * ni, "deform duals"));
  MB_CALL(grow(&g->d->ym, sizeof(double) * 3 * nf, "deform face means"));
  MB_CALL(grow(&g->d->ctl, sizeof(ctl_t), "deform maxima"));
  MB_CALL(grow(&g->d->prm, 2 * sizeof(double), "deform iteration scalars"));
  MB_CALL(grow(&g->d->bt, sizeof(batch_t), "deform batch maxima"));
  if (rep->face_planarity) MB_CALL(grow(&g->d->fres, sizeof(double) * nf, "deform face residuals"));
  if (dm->target && rep->handles) MB_CALL(upload(&g->d->tgt, dm->target, n3, "deform targets"));
  MB_CALL_CUDA(cudaMemset(g->d->u.p, 0, sizeof(double) * 3 * ni));
  MB_CALL_CUDA(cudaMemset(g->d->ctl.p, 0, sizeof(ctl_t)));
  if (room_cg(g)) { /* H's pattern and parts into the pool (values by factor()) */
    const size_t nb = blocks(nv) + 1;
    MB_CALL(upload(&g->d->hrow, H->rowptr, (size_t)nv + 1, "deform system rows"));
    MB_CALL(upload_sell(g));
    g->rowptr = g->d->hrow.as<int32_t>();
    g->col = g->d->hcol.as<int32_t>();
    g->sptr = g->d->hsptr.as<int64_t>();
    g->sdiag = g->d->hdiag.as<int64_t>();
    g->val = g->d->hval.as<double>();
    MB_CALL(grow(&g->d->cr, sizeof(double) * n3, "deform CG residual"));
    MB_CALL(grow(&g->d->cz, sizeof(double) * n3, "deform CG preconditioned"));
    MB_CALL(grow(&g->d->cp, sizeof(double) * n3, "deform CG direction"));
    MB_CALL(grow(&g->d->cp2, sizeof(double) * n3, "deform CG direction"));
    MB_CALL(grow(&g->d->cq, sizeof(double) * n3, "deform CG product"));
    MB_CALL(grow(&g->d->cdinv, sizeof(double) * ((size_t)nv + 1), "deform CG diagonal"));
    MB_CALL(grow(&g->d->cpart, sizeof(double) * 9 * nb, "deform CG partial sums"));
    MB_CALL(grow(&g->d->cst, sizeof(cg_t), "deform CG state"));
  } else {
    MB_CALL(mb_cuda_csr_create(H, nullptr, &g->dH));
    mb_cuda_csr_set_product(g->dH, MB_CUDA_PRODUCT_ROWS);
    mb_cuda_csr_arrays(g->dH, &g->rowptr, &g->col, &g->diag, &g->val);
  }
  if (p->solver == MB_DEFORM_CHOLESKY) MB_CALL(mb_cuda_cholesky_create(H, &g->chol));
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
      d->X.as<double>(), g->rowptr, g->sptr, g->col, g->val, d->cdinv.as<double>(),
      d->cr.as<double>(),
      d->cz.as<double>(), d->cpart.as<double>(), MB_DEFORM_PCG_RTOL, g->p->cg_iterations,
      d->cst.as<cg_t>());
}

/* Enqueue len iterations of the room's CG (2 kernels each) on stream s,
 * solving into d->X. */
void enqueue_cg_steps(deform_gpu *g, cudaStream_t s, int len) {
  pool_t *d = g->d;
  const int32_t n = (int32_t)g->dm->nv;
  const int nb = (int)blocks(n);
  double *r = d->cr.as<double>(), *z = d->cz.as<double>(), *cp = d->cp.as<double>(),
         *cp2 = d->cp2.as<double>(), *q = d->cq.as<double>(), *dinv = d->cdinv.as<double>(),
         *part = d->cpart.as<double>(), *X = d->X.as<double>();
  cg_t *st = d->cst.as<cg_t>();
  for (int j = 0; j < len; j++) {
    k_cg_spmv<<<nb, BLOCK, 0, s>>>(n, g->rowptr, g->sptr, g->col, g->val, z, cp, cp2, q, part,
                                   st);
    k_cg_update<<<nb, BLOCK, 0, s>>>(n, dinv, cp, cp2, q, X, r, z, part, MB_DEFORM_PCG_RTOL, st);
  }
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
 * the k CG iterations (2 kernels each; the last update is
 * k_cg_update_take: the take with the CG's report and, batched, the
 * halt) and (hard) k_dual: 2 + 2 k kernels, 3 + 2 k hard;
 * c and al are read from d->prm. Launch errors are the caller's to check
 * (none is checked inside a capture). */
void enqueue_iteration(deform_gpu *g, cudaStream_t s, int planar, int hard, double l) {
  const mb_deform_params *p = g->p;
  pool_t *d = g->d;
  const int64_t nv = g->dm->nv, nf = g->dm->nf;
  const int64_t *fo = d->fo.as<int64_t>(), *fi = d->fi.as<int64_t>();
  double *dx = d->x.as<double>(), *dz = d->z.as<double>(), *du = d->u.as<double>();
  ctl_t *ctl = d->ctl.as<ctl_t>();
  batch_t *bt = g->batched ? d->bt.as<batch_t>() : nullptr;
  if (!bt) cudaMemsetAsync(ctl, 0, sizeof(ctl_t), s);
  if (nf)
    k_project<<<blocks(nf), BLOCK, 0, s>>>(nf, fo, fi, dx, du, d->q.as<double>(), dz,
                                           d->ym.as<double>(), planar, hard, d->prm.as<double>(),
                                           ctl);
  if (nv == 0) return;
  enqueue_rhs_cg(g, s, hard);
  /* k - 1 CG steps, then the last one's product and its update fused with the take */
  enqueue_cg_steps(g, s, p->cg_iterations - 1);
  {
    const int32_t n = (int32_t)nv;
    double *z = d->cz.as<double>(), *cp = d->cp.as<double>(), *cp2 = d->cp2.as<double>(),
           *q = d->cq.as<double>(), *part = d->cpart.as<double>();
    cg_t *st = d->cst.as<cg_t>();
    k_cg_spmv<<<blocks(n), BLOCK, 0, s>>>(n, g->rowptr, g->sptr, g->col, g->val, z, cp, cp2, q,
                                          part, st);
    k_cg_update_take<<<blocks(n), BLOCK, 0, s>>>(
        n, d->cdinv.as<double>(), cp, cp2, q, d->X.as<double>(), d->cr.as<double>(), z, part,
        MB_DEFORM_PCG_RTOL, st, d->pind.as<double>(), dx, !hard, l, p->tolerance, ctl, bt);
  }
  if (hard && nf) k_dual<<<blocks(nf), BLOCK, 0, s>>>(nf, fo, fi, dx, dz, du, ctl);
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
  if (whole && !rep->converged) { /* the iteration's graph: once per mesh, with the setup */
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
        for (int j = 0; j < bn && !err; j++) err = iterate_graph(g, planar, hard, l);
        if (err) break;
        MB_CALL(dev_end(g));
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

} // namespace

/* A mesh's host setup done ahead (mb_deform_cuda.h). */
struct mb_deform_cuda_prep {
  mb_deform_params q{}; /* p, solver auto resolved to pcg */
  deform_gpu g;         /* the host part (prepare_host), no device state yet */
  mb_deform_report r{}; /* what mb_deform_setup reported (handles, pinned, edge_length) */
  double ms = 0;        /* prepare_host's wall time */
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
  pool_t *d = nullptr;
  e = pool(&d);
  if (!e) {
    deform_gpu &g = prep->g;
    g.rep = rep;
    g.d = d;
    e = run(&g);
    t_frame = g.t_frame;
  }
  rep->analyze_ms += prep->ms;
  if (t_frame > 0) rep->finish_ms = 1e3 * (mb_wtime() - t_frame);
  if (e) (void)cudaGetLastError();
  return e;
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
  malloc_policy();
  mb_deform_cuda_prep *prep = new (std::nothrow) mb_deform_cuda_prep;
  MB_CHECK(prep, MB_ERR_MEMORY, "deform: out of memory");
  prep_init(prep, p, dm, o);
  const double t0 = mb_wtime();
  const mb_error e = prepare_host(&prep->g);
  prep->ms = 1e3 * (mb_wtime() - t0);
  if (e) {
    delete prep;
    return e;
  }
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
}
