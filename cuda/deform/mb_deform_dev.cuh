/* meshbatch: the deform room's device code shared by its CUDA files
 * (mb_deform.cu: the iteration's kernels and the run; mb_deform_cg.cu: the
 * room's CG and the iteration's CUDA graph; mb_deform_frame.cu: the
 * persistent cooperative frame): the launch shape, the maxima an iteration
 * reads back, the CG's state, and every row's and face's arithmetic as
 * __device__ functions, so that the kernel-per-phase path and the
 * persistent kernel run the very same expressions (the same bits).
 * Private to cuda/deform/; no host entry points (mb_deform_cuda.h). Buffers
 * written during a frame are passed without __restrict__ to the helpers
 * below: the persistent kernel reads them after a grid-wide sync, which a
 * read-only (non-coherent) load would not honour. */
#ifndef MB_DEFORM_DEV_CUH
#define MB_DEFORM_DEV_CUH

#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "mb_deform_face.h"

namespace mbd {

constexpr int BLOCK = 256;
inline unsigned blocks(int64_t n) { return (unsigned)((n + BLOCK - 1) / BLOCK); }

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
/* 50: one launch and one read a 50-iteration frame (the chapter's M_max);
 * at most 49 run past a stop. Measured (one H100, 2026-11-28): Roof1's
 * persistent frame 2.2 -> 2.1 ms against 25 (device time 2.00 -> 1.99
 * ms: the second batch's read and launch were the host's); Roof2 5.5 ms
 * either way. */
constexpr int BATCH = 50;
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

inline double from_bits(unsigned long long b) {
  double v;
  memcpy(&v, &b, sizeof v);
  return v;
}

/* The centroid c [3] of a face's n slots s0 .. s0 + n - 1 of x [nv, 3]. N
 * > 0: n is the compile-time N (loops unrolled); N = 0: n at run time. */
template <int N>
__device__ inline void slot_centroid(int64_t s0, int n, const int64_t *__restrict__ fi,
                                     const double *x, double c[3]) {
  if (N > 0) n = N;
  c[0] = c[1] = c[2] = 0;
  for (int k = 0; k < n; k++)
    for (int d = 0; d < 3; d++) c[d] += x[3 * fi[s0 + k] + d];
  for (int d = 0; d < 3; d++) c[d] /= (double)n;
}

/* The face's slots of x centred on c (slot_centroid) (+ u [nidx, 3], where
 * non-NULL) into qf [n, 3] (the face's own rows: q + 3 s0 of the slot
 * array, or a register array): the CPU's centred(). N as slot_centroid's
 * (N > 0: qf's subscripts constants, so a local qf stays in registers). */
template <int N>
__device__ inline void slot_centred(int64_t s0, int n, const int64_t *__restrict__ fi,
                                    const double *x, const double *u, const double c[3],
                                    double *qf) {
  if (N > 0) n = N;
  for (int k = 0; k < n; k++)
    for (int d = 0; d < 3; d++)
      qf[3 * k + d] = (x[3 * fi[s0 + k] + d] - c[d]) + (u ? u[3 * (s0 + k) + d] : 0.0);
}

/* The centred coordinates of face f's slots of x (+ u) into q [nidx, 3]
 * (k_resid's and k_final's scratch, the general projection's). */
__device__ inline void centre_face(int64_t s0, int64_t s1, const int64_t *__restrict__ fi,
                                   const double *x, const double *u, double *q) {
  double c[3];
  slot_centroid<0>(s0, (int)(s1 - s0), fi, x, c);
  slot_centred<0>(s0, (int)(s1 - s0), fi, x, u, c, q + 3 * s0);
}

/* p itself, to the compiler an unknown pointer: loads through it are new
 * loads (L1 hits), not values it would keep in registers meanwhile. */
template <class T> __device__ inline T *reread(T *p) {
  asm("" : "+l"(p));
  return p;
}

/* The end of the local step at one point: qk, zk [3] its centred
 * coordinates and projection, s = 3 slot; the largest |q - z| into worst;
 * hard: h = al z + (1 - al) (q - u) into z, y = h - u into q; soft: y = z
 * (into z where wz); y added to the face's sum m [3]. */
__device__ inline void finish_point(int64_t s, const double *qk, const double *zk,
                                    const double *u, double *q, double *z, int hard, double al,
                                    int wz, double *worst, double m[3]) {
  const double dx = qk[0] - zk[0], dy = qk[1] - zk[1], dz = qk[2] - zk[2];
  const double r = sqrt(dx * dx + dy * dy + dz * dz);
  if (r > *worst) *worst = r;
  for (int d = 0; d < 3; d++) {
    double y = zk[d];
    if (hard) {
      const double ap = qk[d] - u[s + d];
      const double h = al * zk[d] + (1.0 - al) * ap;
      z[s + d] = h;
      y = h - u[s + d];
      q[s + d] = y;
    } else if (wz) {
      z[s + d] = y;
    }
    m[d] += y;
  }
}

/* A face of n = 3 or 4 points (quad grids, Polylla's triangles and
 * quads) for project_face's fixed-size path: cx the slots' centroid, p
 * [12] the centred points (n rows; a caller's local array: every
 * subscript below is a constant, the loops unrolled at n = 3 and at 4, so
 * p stays in registers), c their centroid and, where S is non-NULL, their
 * scatter matrix S [9] about c: mb_dface_project_planar's first steps. */
__device__ inline void small_points(int64_t s0, int n, const int64_t *__restrict__ fi,
                                    const double *x, const double *u, double cx[3],
                                    double p[12], double c[3], double *S) {
  if (n == 4) {
    slot_centroid<4>(s0, 4, fi, x, cx);
    slot_centred<4>(s0, 4, fi, x, u, cx, p);
    mb_dface_centroid(4, p, c);
    if (S) mb_dface_scatter(4, p, c, S);
  } else {
    slot_centroid<3>(s0, 3, fi, x, cx);
    slot_centred<3>(s0, 3, fi, x, u, cx, p);
    mb_dface_centroid(3, p, c);
    if (S) mb_dface_scatter(3, p, c, S);
  }
}

/* The local step of face f: q = A_f x (+ u), z = P_f(q); hard: h = al z +
 * (1 - al) (q - u) into z and y = h - u into q; the face mean of y (soft:
 * z; hard: q) into ym [nf, 3]; returns the face's largest |q - z| (the
 * soft residual). fo [nf + 1], fi [nidx]: the faces' slots; x [nv, 3];
 * u, q, z [nidx, 3] (u: NULL soft). k_project's and the persistent
 * frame's body (the CPU's float64 formulas, mb_deform_face.h:
 * mb_dface_project_planar's steps, or mb_dface_project_regular). Planar
 * faces of 3 and 4 points take the fixed-size path (small_points): no
 * local memory, the points in registers, centred again from x (L1) after
 * the normal so that they are not held across the eigen-solve, each
 * point's z written once, q only in hard mode (where it is y: soft, nothing
 * reads q; k_resid and k_final use it as their own scratch). Other faces
 * take the general path, the face's rows of q and z as scratch (q written
 * in soft mode too). One normal computation (Newton, else Jacobi) serves
 * both paths, so the kernel holds one copy of it. The same expressions on
 * the same values in the same order on every path: the same bits. */
__device__ inline double project_face(int64_t f, const int64_t *__restrict__ fo,
                                      const int64_t *__restrict__ fi, const double *x,
                                      const double *u, double *q, double *z, double *ym,
                                      int planar, int hard, double al) {
  const int64_t s0 = fo[f];
  const int n = (int)(fo[f + 1] - s0);
  const int small = planar && (n == 3 || n == 4);
  const double *uc = hard ? u : nullptr;
  double *qf = q + 3 * s0, *zf = z + 3 * s0;
  double worst = 0, m[3] = {0, 0, 0}, p[12], c[3], nrm[3], cx[3];
  if (!planar) {
    slot_centroid<0>(s0, n, fi, x, cx);
    slot_centred<0>(s0, n, fi, x, uc, cx, qf);
    mb_dface_project_regular(n, qf, zf);
  } else {
    double S[9];
    if (small) {
      small_points(s0, n, fi, x, uc, cx, p, c, S);
    } else {
      slot_centroid<0>(s0, n, fi, x, cx);
      slot_centred<0>(s0, n, fi, x, uc, cx, qf);
      mb_dface_centroid(n, qf, c);
      mb_dface_scatter(n, qf, c, S);
    }
    mb_dface_plane_normal(S, nrm);
  }
  if (small) {
    small_points(s0, n, reread(fi), reread(x), hard ? reread(u) : nullptr, cx, p, c, nullptr);
#pragma unroll
    for (int k = 0; k < 4; k++)
      if (k < n) {
        double zk[3];
        mb_dface_plane_point(p + 3 * k, c, nrm, zk);
        finish_point(3 * (s0 + k), p + 3 * k, zk, u, q, z, hard, al, 1, &worst, m);
      }
  } else {
    for (int k = 0; k < n; k++) {
      if (planar) mb_dface_plane_point(qf + 3 * k, c, nrm, zf + 3 * k);
      finish_point(3 * (s0 + k), qf + 3 * k, zf + 3 * k, u, q, z, hard, al, 0, &worst, m);
    }
  }
  for (int d = 0; d < 3; d++) ym[3 * f + d] = m[d] / (double)n;
  return worst;
}

/* Row i of the right-hand side, columns c0 <= d < c1: b = (r0 - g0) + c
 * (sum_f A_f^T y_f - gF) on a free row (the gather in slot order, as the
 * CPU's gather_At), b = x on a pinned row; into bi[d - c0]. vf_face
 * [nidx]: the face of each of vf_slot's entries (slot_face[vf_slot[a]],
 * made once per mesh), so the slot's and the face's index are two
 * independent loads, not a chain. k_rhs takes the three columns, the
 * room's CG one a thread (tile_rowcol): each column's sum is the same
 * terms in the same order either way. */
__device__ inline void rhs_row(int64_t i, int c0, int c1, const int32_t *__restrict__ vf_row,
                               const int64_t *__restrict__ vf_slot,
                               const int64_t *__restrict__ vf_face, const double *y,
                               const double *ym, const double *__restrict__ rg,
                               const double *__restrict__ gF, const double *__restrict__ pin,
                               double c, const double *x, double *bi) {
  double acc[3] = {0, 0, 0};
  for (int32_t a = vf_row[i]; a < vf_row[i + 1]; a++) {
    const int64_t s = vf_slot[a], f = vf_face[a];
    for (int d = c0; d < c1; d++) acc[d - c0] += y[3 * s + d] - ym[3 * f + d];
  }
  for (int d = c0; d < c1; d++) {
    const int64_t k = 3 * i + d;
    bi[d - c0] = pin[i] != 0 ? x[k] : rg[k] + c * (acc[d - c0] - gF[k]);
  }
}

/* The uncapped room's CG reads its state once per CG_CHUNK iterations. */
constexpr int CG_CHUNK = 8;

/* The room's CG's state (mb_deform_cg.cu), per column c of the three: the
 * sums r.z, b.b, r.r, the steps alpha and beta, the stop; on the device
 * (the graph path) or, the same bits, in each block's shared memory (the
 * persistent frame, written back at its end). */
struct cg_t {
  double rz[3], bb[3], alpha[3], beta[3], rr[3];
  double tol[3]; /* each column's stop: rtol ||b|| (rhs_cg_finish) */
  int done[3], all_done, bad, iters, maxit; /* maxit: the cap (cg_iterations), 0 none */
  int par;   /* the step reads the vectors' set par and writes the other (cgv_t) */
  int first; /* 1 before the first step of a solve: p = z, q = w */
  unsigned ticket; /* blocks of a product or update done (last_block), 0 between kernels */
};

static_assert(BLOCK % 32 == 0, "whole warps");

/* The warp's sums of v[0 .. N-1] (N: the values a kernel needs: 3 for the
 * product's p.q, 6 for the update's r.z and r.r, 9 for the start's r.z,
 * r.r and b.b) into sh[w N + k] by lane 0 of warp slot w: five shuffle
 * levels, lane t adding lane t + o for o = 16 .. 1 (a fixed tree: the
 * same bits on every run). No barrier; the caller's __syncthreads makes
 * sh readable. */
template <int N>
__device__ inline void warp_sums(const double v[N], int w, double *sh) {
  double t[N];
  for (int k = 0; k < N; k++) t[k] = v[k];
  for (int o = 16; o > 0; o >>= 1)
    for (int k = 0; k < N; k++) t[k] = t[k] + __shfl_down_sync(0xffffffffu, t[k], o);
  if ((threadIdx.x & 31) == 0)
    for (int k = 0; k < N; k++) sh[w * N + k] = t[k];
}

/* Sum k of the block's W warp sums in sh (warp_sums), in warp order
 * (fixed). */
template <int N, int W>
__device__ inline double warps_total(const double *sh, int k) {
  double s = sh[k];
  for (int w = 1; w < W; w++) s = s + sh[w * N + k];
  return s;
}

/* The block's sums of its threads' values (K columns a thread,
 * tile_rowcol: M values of each of its columns, v[M j + m] for its column
 * c0 + j) into the record of tile blk in part [3 M, nblk], value m of
 * column c at part[(c M + m) nblk + blk] (structure of arrays, so that a
 * warp's loads of one component of 32 tiles' records in finish_parts are
 * one coalesced 256 B access, not 32 records' scattered sectors;
 * measured, 2026-11-28: with every block of the persistent frame reading
 * every record, interleaved [nblk, N] records made the L2 serve up to N
 * times the sectors, on the same few lines, and a 6- or 9-value sum took
 * 4-9 us at Roof1 against 1-1.6 us for 3 values), each in a fixed order:
 * the warp's shuffle tree (warp_sums), then, by thread c M + m, the
 * block's warps holding column c in warp order (K = 3: every warp; K = 1:
 * the warps of column c) (one barrier; W K M doubles of shared memory,
 * sh [W K M]; W the block's warps); blk: the tile the block's threads held (blockIdx.x in
 * a kernel, the tile of a grid-stride loop in the persistent frame: the
 * same record either way, so the same bits), nblk the records (the grid's
 * blocks, the frame's tiles). The caller syncs before sh is written again
 * (last_block does). */
template <int K, int M, int W>
__device__ inline void block_parts(const double v[K * M], int64_t blk, int64_t nblk,
                                   double *part, double *sh) {
  warp_sums<K * M>(v, (int)(threadIdx.x >> 5), sh);
  __syncthreads();
  if ((int)threadIdx.x < 3 * M) {
    const int c = (int)threadIdx.x / M, m = (int)threadIdx.x % M;
    double s = 0;
    for (int w = 0; w < W; w++)
      if (K == 3) s = s + sh[w * 3 * M + c * M + m];
      else if ((blk * W + w) % 3 == c) s = s + sh[w * M + m];
    part[threadIdx.x * nblk + blk] = s;
  }
}

/* tot[N] (shared memory, written by threads k < N: warp 0) = the block's
 * sums of each thread's acc[N]: the warp tree (warp_sums), one barrier,
 * then the warps in order, value k by thread k (the finishes' last step).
 * The readers in warp 0 __syncwarp first. */
template <int N, int W>
__device__ inline void block_totals(const double acc[N], double *tot, double *sh) {
  static_assert(N <= 32, "the totals in warp 0");
  warp_sums<N>(acc, (int)(threadIdx.x >> 5), sh);
  __syncthreads();
  if ((int)threadIdx.x < N) tot[threadIdx.x] = warps_total<N, W>(sh, (int)threadIdx.x);
}

/* tot[N] (shared memory, block_totals) = the partials part [N, nblk] of nblk blocks
 * (block_parts' layout), summed in a fixed order (one block; its first
 * BLOCK threads): thread t sums records t, t + BLOCK, ... (the N loads of
 * two records in flight together, past L1: written by other blocks), then
 * block_parts' warp tree and warp order. One barrier (two for N > 6);
 * sh [W N], W the block's warps; the caller syncs before sh is written again. More than 6
 * values are summed as the first 6, then the rest (the same additions on
 * each value, so the same bits): measured, 2026-11-28, one H100, the
 * persistent frame at Roof1, the start's 9 values in one pass took 6.1 us
 * against 1.9 us as 6 + 3 (the frame 3.3 -> 3.0-3.1 ms; why one pass of 9
 * is slow was not found: not the loads, nor local memory, by the
 * frame's profile and Nsight Compute). */
template <int N, int W>
__device__ inline void finish_pass(int nblk, const double *part, double *tot, double *sh) {
  constexpr int T = 32 * W; /* the block's threads */
  double acc[N];
  for (int k = 0; k < N; k++) acc[k] = 0;
  /* two records a round, both loaded before either is added (Roof2's 316
   * blocks: one round trip, not two); the same additions in the same order */
  for (int b = threadIdx.x; b < nblk; b += 2 * T) {
    const bool two = b + T < nblk;
    double t[N], t2[N];
    for (int k = 0; k < N; k++) t[k] = __ldcg(&part[(int64_t)k * nblk + b]);
    for (int k = 0; k < N; k++) t2[k] = two ? __ldcg(&part[(int64_t)k * nblk + b + T]) : 0.0;
    for (int k = 0; k < N; k++) acc[k] += t[k];
    if (two)
      for (int k = 0; k < N; k++) acc[k] += t2[k];
  }
  block_totals<N, W>(acc, tot, sh);
}

/* finish_pass with at most one record a thread (nblk <= BLOCK: Roof1's
 * 81 records), all N values in one pass: the N loads in flight together
 * in N registers (the two-record loop holds 3 N), acc = 0 + t as there
 * (the same bits). */
template <int N, int W>
__device__ inline void finish_one(int nblk, const double *part, double *tot, double *sh) {
  double acc[N];
  const bool on = (int)threadIdx.x < nblk;
  for (int k = 0; k < N; k++) acc[k] = on ? __ldcg(&part[(int64_t)k * nblk + threadIdx.x]) : 0.0;
  for (int k = 0; k < N; k++) acc[k] = 0.0 + acc[k]; /* finish_pass's first addition */
  block_totals<N, W>(acc, tot, sh);
}

/* The grid's sums by a block of W warps: finish_one where nblk <= its
 * threads, else finish_pass in passes of at most 6 values (see
 * finish_pass). */
template <int N, int W>
__device__ inline void finish_parts(int nblk, const double *part, double *tot, double *sh) {
  if (nblk <= 32 * W) {
    finish_one<N, W>(nblk, part, tot, sh);
  } else if constexpr (N > 6) {
    finish_pass<6, W>(nblk, part, tot, sh);
    finish_pass<N - 6, W>(nblk, part + (int64_t)6 * nblk, tot + 6, sh + 6 * W);
  } else {
    finish_pass<N, W>(nblk, part, tot, sh);
  }
}

/* finish_parts into tot [N] (shared), then warp 0 synchronised to read
 * them: the common start of the CG's finishes (rhs_cg_finish, w0_finish,
 * cg_step_finish run in warp 0) in the graph kernels' last block (the
 * persistent frame's grid_sums does the same, flipping its buffer between). */
template <int N, int W>
__device__ inline void finish_sums(int nblk, const double *part, double *tot, double *sh) {
  finish_parts<N, W>(nblk, part, tot, sh);
  if (threadIdx.x < 32) __syncwarp();
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

/* H in the room's CG: sliced ELLPACK with slices of C = 32 rows (SELL-32,
 * rows not sorted: a mesh's rows are nearly equally long), built from the
 * CSR pattern once per mesh (slices()): slice s holds rows 32 s .. 32 s
 * + 31 in w_s columns, w_s its longest row, stored column-major from
 * sptr[s] (entry k of row i at sptr[i / 32] + 32 k + i % 32), a row's
 * entries in the CSR's (ascending column) order and its length from the
 * CSR's rowptr; the padding is never read. One thread per row (and, at
 * three threads a row, per column: tile_rowcol), so each row's sum has
 * the same terms in the same order (the same bits as the CSR row loop),
 * but a warp's 32 loads of entry k are one
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

/* The SELL-32 product of row i with K columns c0 .. c0 + K - 1 (those
 * with run[j]; K = 1 runs): acc[j] = the sum of H_ij v(j, c0 + j) over
 * the row's entries in the stored (CSR column) order (V has at(row,
 * column, j): j the thread's column index), the columns in one pass over
 * the entries. The one row product of the room's
 * CG: H x for the start (x_cols), H z0 (z0_cols) and a step's H z'
 * (znext_cols, z' formed on the fly), in k_rhs_cg, k_cg_w0, k_cg_step and
 * the persistent frame alike. */
template <int K, class V>
__device__ inline void sell_cols(int32_t i, int c0, const int run[K],
                                 const int32_t *__restrict__ rowptr,
                                 const int64_t *__restrict__ sptr,
                                 const int32_t *__restrict__ col,
                                 const double *__restrict__ val, const V &v, double acc[K]) {
  int len;
  const int64_t e0 = sell_row(i, sptr, rowptr, &len);
  for (int j = 0; j < K; j++) acc[j] = 0;
#pragma unroll 4 /* 8 and 16 measured slower (2026-11-28, H100: Roof1 2.2 -> 2.3, 2.7 ms) */
  for (int k = 0; k < len; k++) {
    const int64_t e = e0 + (int64_t)SELL_C * k;
    const double a = val[e];
    const int64_t jc = col[e];
    for (int j = 0; j < K; j++)
      if (K == 1 || run[j]) acc[j] += a * v.at(jc, c0 + j, j);
  }
}

/* The room's CG's threads: K columns (coordinates) a thread, chosen per
 * mesh (mb_deform_cuda_opts.row_threads), in row tiles of TW warps (a
 * graph kernel's block, a row tile of the persistent frame; 8, 10 or 16,
 * chosen per mesh: mb_deform_gpu.cuh, tile_warps): K = 3, a thread a row (its
 * three columns in one pass over its entries: warp W = t TW + w of
 * row tile t takes SELL-32 slice W, lane l its row 32 W + l), or K = 1, a
 * thread a row and column (warp W takes column W % 3 of slice W / 3, lane
 * l its row 32 (W / 3) + l: a row's three columns are three warps,
 * adjacent, mostly in one block, so H's entries of a slice come from L2
 * once). Either way a warp's loads of a slice's entry are coalesced; K = 1
 * has three times the threads, each with a third of a row's chain of
 * dependent loads and arithmetic (measured, 2026-11-28, one H100: Roof1's
 * persistent frame at K = 3, 81 blocks, 8 warps an SM, issued an
 * instruction every 15.8 cycles a warp, latency-bound, a CG step's product
 * 59 instructions an entry; K = 1 took Roof1's frame from 2.9 to 2.6 ms
 * but Roof2's graphs from 5.9 to 6.7 ms: docs/benchmarks.md). A stopped
 * column's K = 1 warps skip their rows whole. t: blockIdx.x in a kernel,
 * the tile of a grid-stride loop in the persistent frame. */
struct rowcol {
  int32_t i; /* the row (>= n past the last: the row functions do nothing) */
  int c;     /* its first column: 0 (K = 3) or the thread's (K = 1) */
};
template <int K, int TW> __device__ inline rowcol tile_rowcol(int64_t t) {
  static_assert(K == 1 || K == 3, "a column or all three");
  const int64_t W = t * TW + (threadIdx.x >> 5);
  const int lane = (int)(threadIdx.x & 31);
  if (K == 3) return rowcol{(int32_t)(W * SELL_C + lane), 0};
  return rowcol{(int32_t)((W / 3) * SELL_C + lane), (int)(W % 3)};
}

/* The row tiles (blocks of tw warps) of n rows at K columns a thread. */
inline int64_t row_tiles(int K, int tw, int64_t n) {
  const int64_t warps = (K == 3 ? 1 : 3) * ((n + SELL_C - 1) / SELL_C);
  return (warps + tw - 1) / tw;
}

/* The columns of x [n, 3]. */
struct x_cols {
  const double *x;
  __device__ double at(int64_t j, int c, int) const { return x[3 * j + c]; }
};

/* The CG's vectors [n, 3] (device arrays, borrowed): the residual r, the
 * product w = H z of the preconditioned residual z = dinv r, and the
 * recurrence q = H p, each in two buffers (the step reads set st->par and
 * writes the other: a row's neighbours read the old values while it
 * writes the new), the direction p (a row's own: in place) and the
 * iterate X; dinv [n] the Jacobi diagonal's inverse. */
struct cgv_t {
  double *r[2], *w[2], *q[2], *p, *X;
  const double *dinv;
  /* set k's buffers (selected, not indexed: a run-time subscript of a
   * kernel parameter's array would copy it to local memory) */
  __device__ double *rs(int k) const { return k ? r[1] : r[0]; }
  __device__ double *ws(int k) const { return k ? w[1] : w[0]; }
  __device__ double *qs(int k) const { return k ? q[1] : q[0]; }
};

/* The preconditioned residual z0 = dinv r0 of the start at row j (the w0
 * product's neighbours). */
struct z0_cols {
  const double *r, *dinv;
  __device__ double at(int64_t j, int c, int = 0) const { return dinv[j] * r[3 * j + c]; }
};

/* A step's new preconditioned residual at row j, formed from j's old
 * values as row j forms its own (cg_next: q = w + beta qold, or w first;
 * r' = r - alpha q; z' = dinv r'): the same expression, the same bits. */
__device__ inline double cg_next_z(int first, double alpha, double beta, double dj,
                                   double r, double w, double qold, double *qn, double *rn) {
  const double q = first ? w : w + beta * qold;
  const double rr = r - alpha * q;
  if (qn) *qn = q;
  if (rn) *rn = rr;
  return dj * rr;
}

/* The step's z' of the thread's running columns at row j (the product's
 * neighbours); alpha[jj], beta[jj] of its column jj (the thread's own
 * index: a constant once unrolled, so they stay in registers). */
template <int K> struct znext_cols {
  const double *r, *w, *qold, *dinv;
  int first;
  double alpha[K], beta[K];
  __device__ double at(int64_t j, int c, int jj) const {
    const int64_t k = 3 * j + c;
    return cg_next_z(first, alpha[jj], beta[jj], dinv[j], r[k], w[k], first ? 0.0 : qold[k],
                     nullptr, nullptr);
  }
};

/* The H buffers of the room's CG (SELL-32; device arrays, borrowed). */
struct sell_t {
  const int32_t *rowptr; /* [n + 1] the CSR's rows (lengths) */
  const int64_t *sptr;   /* [n / 32 + 1] slice starts */
  const int32_t *col;    /* [stored] columns */
  const double *val;     /* [stored] values at c */
};

/* Row i < n of k_rhs_cg, columns c0 .. c0 + K - 1 (rc): b (rhs_row, c),
 * X = x and the CG's start r = b - H x into r (the step's set 0), z =
 * dinv r; v[3 j] = r.z, v[3 j + 1] = r.r, v[3 j + 2] = b.b of column c0 +
 * j (all 0 past n). */
template <int K>
__device__ inline void rhs_cg_row(rowcol rc, int32_t n, const int32_t *__restrict__ vf_row,
                                  const int64_t *__restrict__ vf_slot,
                                  const int64_t *__restrict__ vf_face, const double *y,
                                  const double *ym, const double *__restrict__ rg,
                                  const double *__restrict__ gF, const double *__restrict__ pin,
                                  double c, const double *x, double *X, const sell_t &H,
                                  const double *__restrict__ dinv, double *r, double v[3 * K]) {
  const int32_t i = rc.i;
  for (int k = 0; k < 3 * K; k++) v[k] = 0;
  if (i >= n) return;
  int all[K];
  double bi[K], ax[K], xi[K];
  for (int j = 0; j < K; j++) all[j] = 1;
  rhs_row(i, rc.c, rc.c + K, vf_row, vf_slot, vf_face, y, ym, rg, gF, pin, c, x, bi);
  sell_cols<K>(i, rc.c, all, H.rowptr, H.sptr, H.col, H.val, x_cols{x}, ax);
  for (int j = 0; j < K; j++) xi[j] = x[3 * i + rc.c + j]; /* loads before stores */
  for (int j = 0; j < K; j++) {
    const int64_t k = 3 * (int64_t)i + rc.c + j;
    const double ri = bi[j] - ax[j], zi = dinv[i] * ri;
    X[k] = xi[j];
    r[k] = ri;
    v[3 * j] = ri * zi;
    v[3 * j + 1] = ri * ri;
    v[3 * j + 2] = bi[j] * bi[j];
  }
}

/* The finishes below run in warp 0 of a block (every one of its
 * threads calls them, after the sums' tot [9] in shared memory,
 * finish_parts): thread c < 3 takes column c from its values tot[3 c ..
 * 3 c + 2] (tot[c] for the start's product), the columns' serial chains
 * of divisions and square roots side by side, then (__syncwarp: the
 * columns' writes seen) thread 0 the common part. Measured before
 * (2026-11-28, one H100, Roof1's frame): thread 0 alone took the three
 * columns one after the other. */

/* The CG's start from the sums of rhs_cg_row (column c's r.z, r.r, b.b):
 * each column's stop tolerance rtol ||b|| and stop (b = 0 or sqrt(r.r) <=
 * rtol ||b||); then the cap maxit, the counts reset (a breakdown flagged
 * by k_cg_dinv stays). */
__device__ inline void rhs_cg_finish(const double *tot, double rtol, int maxit, cg_t *st) {
  const int c = (int)threadIdx.x;
  if (c < 3) {
    st->rz[c] = tot[3 * c];
    st->rr[c] = tot[3 * c + 1];
    st->bb[c] = tot[3 * c + 2];
    st->tol[c] = rtol * sqrt(st->bb[c]);
    st->done[c] = st->bb[c] == 0 || sqrt(st->rr[c]) <= st->tol[c];
    if (!isfinite(st->rr[c]) || !isfinite(st->bb[c])) st->bad = 1;
  }
  __syncwarp();
  if (c == 0) {
    st->iters = 0;
    st->maxit = maxit;
    st->par = 0;
    st->first = 1;
    st->all_done = (st->done[0] && st->done[1] && st->done[2]) || st->bad;
  }
}

/* The CG (Chronopoulos and Gear, "s-step iterative methods for symmetric
 * linear systems", J. Comput. Appl. Math. 25, 1989; the preconditioned form
 * as in Ghysels and Vanroose, "Hiding global synchronization latency in
 * the preconditioned conjugate gradient algorithm", Parallel Comput. 40,
 * 2014, Alg. 2): the PCG's iterates (in exact arithmetic) with one grid-wide
 * reduction a step instead of two. With z = dinv r and w = H z kept, and
 * rho = r.z, delta = z.w of the step's start:
 *   beta = rho / rho_old (0 first), alpha = rho / (delta - beta rho /
 *   alpha_old) (rho / delta first: p.Hp by the recurrences);
 *   p = z + beta p, q = w + beta q (= H p), X += alpha p, r -= alpha q,
 *   z = dinv r, w = H z, and the sums rho, delta, r.r of the new r, z, w.
 * A row's w needs its neighbours' new z: formed on the fly from their old
 * r, w and q (znext_cols, the same expression: the same bits), so a step
 * is one pass over the rows (cg_step_row) and one reduction; the start's w
 * = H z0 is a pass of its own (w0_row). The columns' stops are the PCG's
 * (sqrt(r.r) <= rtol ||b||, b = 0 columns stop at once); a capped solve's
 * last step takes X only (cg_last_row). Each row function below takes a
 * thread's row and K columns (rowcol, tile_rowcol). */

/* Row i of the start's product, columns c0 .. c0 + K - 1 (rc): w0 = H z0
 * (z0 = dinv r0, r0 in the step's set 0) into w[0] where the column runs;
 * v[j] = z0.w0 of column c0 + j (0 where it stopped or past n). */
template <int K>
__device__ inline void w0_row(rowcol rc, int32_t n, const sell_t &H, const cgv_t &g,
                              const cg_t *st, double v[K]) {
  const int32_t i = rc.i;
  int run[K], any = 0;
  for (int j = 0; j < K; j++) {
    v[j] = 0;
    run[j] = !st->done[rc.c + j];
    any |= run[j];
  }
  if (i >= n || !any) return;
  const z0_cols z{g.r[0], g.dinv};
  double aw[K], zi[K];
  sell_cols<K>(i, rc.c, run, H.rowptr, H.sptr, H.col, H.val, z, aw);
  for (int j = 0; j < K; j++)
    if (run[j]) zi[j] = z.at(i, rc.c + j); /* the row's loads before its stores */
  for (int j = 0; j < K; j++)
    if (run[j]) {
      g.w[0][3 * i + rc.c + j] = aw[j];
      v[j] = zi[j] * aw[j];
    }
}

/* The start's product's end (warp 0; see rhs_cg_finish): delta = z0.w0
 * of each running column (tot[c]), alpha = rho / delta; a breakdown where
 * delta <= 0 or is not finite ends the solve. */
__device__ inline void w0_finish(const double *tot, cg_t *st) {
  const int c = (int)threadIdx.x;
  if (c < 3 && !st->done[c]) {
    if (!(tot[c] > 0) || !isfinite(tot[c])) st->bad = 1; /* z'Hz <= 0: not SPD */
    st->alpha[c] = st->rz[c] / tot[c];
    st->beta[c] = 0;
  }
  __syncwarp();
  if (c == 0 && st->bad) st->all_done = 1;
}

/* Row i of a CG step (see above), columns c0 .. c0 + K - 1 (rc) where
 * they run: p, q (into the other set), X, r' (other set), z' = dinv r',
 * w' = H z' (other set); v[3 j] = r'.z', v[3 j + 1] = r'.r', v[3 j + 2] =
 * z'.w' of column c0 + j (0 where it stopped or past n). Every load of
 * the row before its stores (the buffers are not __restrict__: the
 * persistent frame's coherent loads; a store first would order the next
 * column's loads after it). */
template <int K>
__device__ inline void cg_step_row(rowcol rc, int32_t n, const sell_t &H, const cgv_t &g,
                                   const cg_t *st, double v[3 * K]) {
  const int32_t i = rc.i;
  int run[K], any = 0;
  for (int j = 0; j < K; j++) {
    v[3 * j] = v[3 * j + 1] = v[3 * j + 2] = 0;
    run[j] = !st->done[rc.c + j];
    any |= run[j];
  }
  if (i >= n || !any) return;
  const int par = st->par, nx = par ^ 1, first = st->first;
  double aw[K], rc_[K], wc[K], qc[K], pc[K], xc[K];
  znext_cols<K> zn{g.rs(par), g.ws(par), g.qs(par), g.dinv, first, {}, {}};
  for (int j = 0; j < K; j++) {
    zn.alpha[j] = st->alpha[rc.c + j];
    zn.beta[j] = st->beta[rc.c + j];
  }
  sell_cols<K>(i, rc.c, run, H.rowptr, H.sptr, H.col, H.val, zn, aw);
  const int64_t k0 = 3 * (int64_t)i + rc.c;
  const double di = g.dinv[i];
#pragma unroll
  for (int j = 0; j < K; j++) {
    rc_[j] = wc[j] = qc[j] = pc[j] = xc[j] = 0;
    if (run[j]) {
      rc_[j] = g.rs(par)[k0 + j];
      wc[j] = g.ws(par)[k0 + j];
      if (!first) {
        qc[j] = g.qs(par)[k0 + j];
        pc[j] = g.p[k0 + j];
      }
      xc[j] = g.X[k0 + j];
    }
  }
#pragma unroll
  for (int j = 0; j < K; j++)
    if (run[j]) {
      const double a = zn.alpha[j], b = zn.beta[j];
      const double zi = di * rc_[j];
      const double pi = first ? zi : zi + b * pc[j];
      double qn, rn;
      const double zn_i = cg_next_z(first, a, b, di, rc_[j], wc[j], qc[j], &qn, &rn);
      g.p[k0 + j] = pi;
      g.qs(nx)[k0 + j] = qn;
      g.X[k0 + j] = xc[j] + a * pi;
      g.rs(nx)[k0 + j] = rn;
      g.ws(nx)[k0 + j] = aw[j];
      v[3 * j] = rn * zn_i;
      v[3 * j + 1] = rn * rn;
      v[3 * j + 2] = zn_i * aw[j];
    }
}

/* A CG step's end (warp 0; see rhs_cg_finish; column c's r'.z', r'.r',
 * z'.w' at tot[3 c ..]): each running column's stop (sqrt(r'.r') within
 * its tolerance), else (below the cap) beta and alpha for the next step (a
 * breakdown where the curvature delta - beta rho / alpha_old <= 0 or a
 * value is not finite); then the count, the sets flipped, the cap. */
__device__ inline void cg_step_finish(const double *tot, cg_t *st) {
  const int c = (int)threadIdx.x;
  if (c < 3 && !st->done[c]) {
    /* at the cap no next step runs: its alpha is not taken (a curvature of
     * a step that never runs must not flag a breakdown) */
    const int capped = st->maxit > 0 && st->iters + 1 >= st->maxit;
    const double rz = tot[3 * c], rr = tot[3 * c + 1], zw = tot[3 * c + 2];
    if (!isfinite(rr) || !isfinite(rz) || !isfinite(zw)) st->bad = 1;
    st->rr[c] = rr;
    if (sqrt(rr) <= st->tol[c]) st->done[c] = 1;
    else if (!capped) {
      const double beta = rz / st->rz[c];
      const double curv = zw - beta * rz / st->alpha[c];
      if (!(curv > 0) || !isfinite(curv)) st->bad = 1; /* p'Hp <= 0: not SPD */
      st->beta[c] = beta;
      st->alpha[c] = rz / curv;
      st->rz[c] = rz;
    }
  }
  __syncwarp();
  if (c == 0) {
    st->iters++;
    st->par ^= 1;
    st->first = 0;
    st->all_done = (st->done[0] && st->done[1] && st->done[2]) || st->bad ||
                   (st->maxit > 0 && st->iters >= st->maxit);
  }
}

/* Row i of a capped solve's last step, columns c0 .. c0 + K - 1 (rc)
 * where they run: p = z + beta p (z first) and X += alpha p (the step's
 * r, w and sums are not needed: the cap ends the solve). */
template <int K>
__device__ inline void cg_last_row(rowcol rc, int32_t n, const cgv_t &g, const cg_t *st) {
  const int32_t i = rc.i;
  if (i >= n) return;
  const int first = st->first;
  const int64_t k0 = 3 * (int64_t)i + rc.c;
  const double di = g.dinv[i];
  double r[K], pc[K], xc[K];
#pragma unroll
  for (int j = 0; j < K; j++) {
    r[j] = pc[j] = xc[j] = 0;
    if (!st->done[rc.c + j]) {
      r[j] = g.rs(st->par)[k0 + j];
      if (!first) pc[j] = g.p[k0 + j];
      xc[j] = g.X[k0 + j];
    }
  }
#pragma unroll
  for (int j = 0; j < K; j++)
    if (!st->done[rc.c + j]) {
      const double zi = di * r[j];
      const double pi = first ? zi : zi + st->beta[rc.c + j] * pc[j];
      g.X[k0 + j] = xc[j] + st->alpha[rc.c + j] * pi;
    }
}

/* The last step's end (one thread): the count and the cap. */
__device__ inline void cg_last_finish(cg_t *st) {
  st->iters++;
  st->first = 0;
  st->all_done = 1;
}

/* The CG's state st copied into the block's shared copy by its first
 * sizeof(cg_t) / 4 threads, then a barrier (every thread of the block
 * calls it, once a kernel); returns the copy: the kernels' rows read the
 * scalars (alpha, beta, the stops, first, par) there, one global load
 * each a block instead of one a thread. */
__device__ inline const cg_t *block_state(const cg_t *st) {
  static_assert(sizeof(cg_t) % 4 == 0 && sizeof(cg_t) / 4 <= BLOCK, "cg_t in 4-byte words");
  __shared__ cg_t cs;
  if (threadIdx.x < sizeof(cg_t) / 4)
    reinterpret_cast<int *>(&cs)[threadIdx.x] = reinterpret_cast<const int *>(st)[threadIdx.x];
  __syncthreads();
  return &cs;
}

/* Row i of the take, columns c0 <= d < c1 (k_take: all three; the room's
 * CG: a thread's column): x = X on a free vertex (st non-NULL: the room's
 * CG, whose b = 0 columns give 0, mb_pcg_solve's rule), unless skip;
 * returns the largest move of those coordinates, flags a non-finite X in
 * ctl. */
__device__ inline double take_row(int64_t i, int c0, int c1, int64_t nv, int skip,
                                  const double *X, const double *__restrict__ pin, double *x,
                                  const cg_t *st, ctl_t *ctl) {
  double moved = 0, Xi[3], xi[3];
  if (skip || i >= nv || pin[i] != 0) return 0;
  for (int d = c0; d < c1; d++) { /* the row's loads before its stores (cg_step_row) */
    Xi[d - c0] = X[3 * i + d];
    xi[d - c0] = x[3 * i + d];
  }
  for (int d = c0; d < c1; d++) {
    const double xn = st && st->bb[d] == 0 ? 0.0 : Xi[d - c0];
    if (!isfinite(xn)) atomicOr(&ctl->nonfinite, 1);
    const double dx = fabs(xn - xi[d - c0]);
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
  int skip = bt ? __ldcg(&bt->halt) : 0; /* past L1: another block's writes (the frame) */
  if (soft) {
    const double dist = __longlong_as_double((long long)__ldcg(&ctl->dist));
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

} // namespace mbd
#endif
