/* meshbatch: the kernels of the CUDA Polylla backend (included by
 * cuda/polylla/mb_polylla.cu only). The rules are those of
 * src/ops/polylla/mb_polylla.h; docs/polylla-gpu.md describes the design.
 *
 * Every kernel runs one thread per triangle, half-edge, frontier half-edge
 * or polygon, in blocks of MB_PL_BLOCK, with int32 ids (the launcher checks
 * that nv and 3 nt fit). Half-edge h = 3 t + k of triangle t runs from
 * V[h] to V[next(h)], V being the oriented triangle array.
 *
 * Figures and errors go to one array of 64-bit device counters (MB_PL_C_*):
 * counts are summed per block (__syncthreads_count) and added once per
 * block; errors keep the smallest triangle id (atomicMin), so the reported
 * triangle does not depend on scheduling.
 */
#ifndef MB_POLYLLA_KERNELS_CUH
#define MB_POLYLLA_KERNELS_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#define MB_PL_BLOCK 256

/* Indices of the device counters. Errors start at MB_PL_NONE (no error). */
enum {
  MB_PL_C_NONFINITE = 0,  /* smallest triangle with a non-finite coordinate */
  MB_PL_C_DEGENERATE,     /* smallest triangle with orient == 0 */
  MB_PL_C_NONMANIFOLD,    /* smallest half-edge of a non-manifold edge */
  MB_PL_C_LOOP,           /* a walk that did not close (cannot happen on valid input) */
  MB_PL_C_TIPS,           /* barrier-edge tips */
  MB_PL_C_REPAIRED,       /* distinct label-phase polygons holding a tip */
  MB_PL_C_FRONTIER_EDGES, /* frontier edges after repair */
  MB_PL_C_FRONTIER_HE,    /* frontier half-edges after repair (= output indices) */
  MB_PL_C_POLYGONS,       /* heads selected (written by cub::DeviceSelect) */
  MB_PL_C_TIE_CYCLE,      /* ties: corners, smallest triangle on a cycle of joins */
  MB_PL_C_LEFT,           /* triangles of the regions left out, queued */
  MB_PL_C_PINCH_LISTED,   /* pinch repair: polygons listed for the host's check */
  MB_PL_C_PINCH_CAND,     /* pinch repair: triangles with three marked corners */
  MB_PL_NCOUNTERS
};
#define MB_PL_NONE 0xffffffffffffffffull

__device__ __forceinline__ int mb_pl_next(int h) { return (h % 3 == 2) ? h - 2 : h + 1; }

/* Add the block's count of true predicates to *counter, once per block.
 * Every thread of the block must call it. */
__device__ __forceinline__ void mb_pl_block_add(unsigned long long *counter, bool pred) {
  const int n = __syncthreads_count(pred ? 1 : 0);
  if (threadIdx.x == 0 && n) atomicAdd(counter, (unsigned long long)n);
}

__global__ void mb_pl_init_counters(unsigned long long *c) {
  const int i = threadIdx.x;
  if (i < MB_PL_NCOUNTERS)
    c[i] = (i == MB_PL_C_NONFINITE || i == MB_PL_C_DEGENERATE || i == MB_PL_C_NONMANIFOLD ||
            i == MB_PL_C_LOOP || i == MB_PL_C_TIE_CYCLE)
               ? MB_PL_NONE
               : 0ull;
}

/* orient(a, b, c) = (xb - xa) (yc - ya) - (yb - ya) (xc - xa), no FMA. */
__device__ __forceinline__ double mb_pl_orient(double2 a, double2 b, double2 c) {
  return __dsub_rn(__dmul_rn(__dsub_rn(b.x, a.x), __dsub_rn(c.y, a.y)),
                   __dmul_rn(__dsub_rn(b.y, a.y), __dsub_rn(c.x, a.x)));
}

/* Orientation (per triangle): CCW in place; a non-finite coordinate, or
 * orient neither < 0 nor > 0, is an error (as the CPU's mb_halfedge_build). */
__global__ void __launch_bounds__(MB_PL_BLOCK)
    mb_pl_orient_kernel(int nt, const double2 *__restrict__ xy, int *__restrict__ V,
                        unsigned long long *c) {
  const int t = blockIdx.x * MB_PL_BLOCK + threadIdx.x;
  if (t >= nt) return;
  const int a = V[3 * t], b = V[3 * t + 1], d = V[3 * t + 2];
  const double2 pa = __ldg(xy + a), pb = __ldg(xy + b), pd = __ldg(xy + d);
  if (!isfinite(pa.x) || !isfinite(pa.y) || !isfinite(pb.x) || !isfinite(pb.y) ||
      !isfinite(pd.x) || !isfinite(pd.y)) {
    atomicMin(&c[MB_PL_C_NONFINITE], (unsigned long long)t);
    return;
  }
  const double o = mb_pl_orient(pa, pb, pd);
  if (o < 0) {
    V[3 * t + 1] = d;
    V[3 * t + 2] = b;
  } else if (!(o > 0)) {
    atomicMin(&c[MB_PL_C_DEGENERATE], (unsigned long long)t);
  }
}

/* Twins, step 1: bucket sizes by the smaller vertex of each half-edge. */
__global__ void __launch_bounds__(MB_PL_BLOCK)
    mb_pl_bucket_count(int nh, const int *__restrict__ V, int *__restrict__ cnt) {
  const int h = blockIdx.x * MB_PL_BLOCK + threadIdx.x;
  if (h >= nh) return;
  const int o = V[h], d = V[mb_pl_next(h)];
  atomicAdd(&cnt[min(o, d)], 1);
}

/* Twins, step 2: scatter (max vertex << 32 | h) into the buckets. start holds
 * the exclusive scan of the counts and ends as the end of each bucket. */
__global__ void __launch_bounds__(MB_PL_BLOCK)
    mb_pl_bucket_fill(int nh, const int *__restrict__ V, int *__restrict__ start,
                      unsigned long long *__restrict__ bucket) {
  const int h = blockIdx.x * MB_PL_BLOCK + threadIdx.x;
  if (h >= nh) return;
  const int o = V[h], d = V[mb_pl_next(h)];
  const int pos = atomicAdd(&start[min(o, d)], 1);
  bucket[pos] = ((unsigned long long)(unsigned)max(o, d) << 32) | (unsigned)h;
}

/* Twins, step 3: each half-edge looks in its bucket for the half-edges on the
 * same vertex pair: exactly zero or one running the other way, none the same
 * way, else the edge is non-manifold. end[b] is the end of bucket b. */
__global__ void __launch_bounds__(MB_PL_BLOCK)
    mb_pl_twin_kernel(int nh, const int *__restrict__ V, const int *__restrict__ end,
                      const unsigned long long *__restrict__ bucket, int *__restrict__ twin,
                      unsigned long long *c) {
  const int h = blockIdx.x * MB_PL_BLOCK + threadIdx.x;
  if (h >= nh) return;
  const int o = V[h], d = V[mb_pl_next(h)];
  const int b = min(o, d);
  const unsigned mx = (unsigned)max(o, d);
  const int lo = b ? __ldg(end + b - 1) : 0, hi = __ldg(end + b);
  int tw = -1, nopp = 0, nsame = 0;
  for (int i = lo; i < hi; i++) {
    const unsigned long long e = __ldg(bucket + i);
    const int g = (int)(unsigned)(e & 0xffffffffull);
    if ((unsigned)(e >> 32) != mx || g == h) continue;
    if (__ldg(V + g) == d) {
      tw = g;
      nopp++;
    } else {
      nsame++;
    }
  }
  if (nopp > 1 || nsame > 0) atomicMin(&c[MB_PL_C_NONMANIFOLD], (unsigned long long)h);
  twin[h] = tw;
}

/* Squared length of edge (u, w) with the vertices in increasing index order,
 * dx * dx + dy * dy as written, no FMA. */
__device__ __forceinline__ double mb_pl_len2(const double2 *__restrict__ xy, int lo, int hi) {
  const double2 p = __ldg(xy + lo), q = __ldg(xy + hi);
  const double dx = __dsub_rn(q.x, p.x), dy = __dsub_rn(q.y, p.y);
  return __dadd_rn(__dmul_rn(dx, dx), __dmul_rn(dy, dy));
}

/* Label, step 1 (per triangle): index k of the edge of largest key
 * (squared length, max vertex, min vertex); with corners, of the first
 * edge of largest squared length (ties: corners). */
__global__ void __launch_bounds__(MB_PL_BLOCK)
    mb_pl_longest_kernel(int nt, const double2 *__restrict__ xy, const int *__restrict__ V,
                         int corners, uint8_t *__restrict__ lng) {
  const int t = blockIdx.x * MB_PL_BLOCK + threadIdx.x;
  if (t >= nt) return;
  const int v[3] = {V[3 * t], V[3 * t + 1], V[3 * t + 2]};
  int best = 0, bhi = 0, blo = 0;
  double bl = 0;
  for (int k = 0; k < 3; k++) {
    const int a = v[k], b = v[k == 2 ? 0 : k + 1];
    const int lo = min(a, b), hi = max(a, b);
    const double l = mb_pl_len2(xy, lo, hi);
    if (k == 0 || l > bl || (!corners && l == bl && (hi > bhi || (hi == bhi && lo > blo)))) {
      best = k;
      bl = l;
      bhi = hi;
      blo = lo;
    }
  }
  lng[t] = (uint8_t)best;
}

/* ties: corners, the cycle check (mb_polylla.h). Each triangle is joined
 * to the one across its longest edge, or to itself where that edge is
 * terminal or on the boundary (a root): a functional graph. Pointer
 * jumping 2^r >= nt steps takes every triangle onto the cycle (or root)
 * of its component, and every cycle member is reached so (the jump is a
 * rotation of the cycle); the marked triangles that are not roots lie on
 * cycles of joins. */
__device__ __forceinline__ int mb_pl_join(int t, const int *__restrict__ twin,
                                          const uint8_t *__restrict__ lng) {
  const int w = twin[3 * t + lng[t]];
  return (w < 0 || lng[w / 3] == w % 3) ? t : w / 3;
}

__global__ void __launch_bounds__(MB_PL_BLOCK)
    mb_pl_join_init(int nt, const int *__restrict__ twin, const uint8_t *__restrict__ lng,
                    int *__restrict__ p) {
  const int t = blockIdx.x * MB_PL_BLOCK + threadIdx.x;
  if (t < nt) p[t] = mb_pl_join(t, twin, lng);
}

__global__ void __launch_bounds__(MB_PL_BLOCK)
    mb_pl_join_jump(int nt, const int *__restrict__ p, int *__restrict__ q) {
  const int t = blockIdx.x * MB_PL_BLOCK + threadIdx.x;
  if (t < nt) q[t] = p[p[t]];
}

__global__ void __launch_bounds__(MB_PL_BLOCK)
    mb_pl_join_mark(int nt, const int *__restrict__ p, uint8_t *__restrict__ mark) {
  const int t = blockIdx.x * MB_PL_BLOCK + threadIdx.x;
  if (t < nt) mark[p[t]] = 1;
}

__global__ void __launch_bounds__(MB_PL_BLOCK)
    mb_pl_join_cycle(int nt, const int *__restrict__ twin, const uint8_t *__restrict__ lng,
                     const uint8_t *__restrict__ mark, unsigned long long *c) {
  const int t = blockIdx.x * MB_PL_BLOCK + threadIdx.x;
  if (t < nt && mark[t] && mb_pl_join(t, twin, lng) != t)
    atomicMin(&c[MB_PL_C_TIE_CYCLE], (unsigned long long)t);
}

/* Label, step 2 (per half-edge): frontier = boundary, or the longest edge of
 * neither triangle. fr = 1 marks label-phase frontier half-edges. */
__global__ void __launch_bounds__(MB_PL_BLOCK)
    mb_pl_frontier_kernel(int nh, const int *__restrict__ twin, const uint8_t *__restrict__ lng,
                          uint8_t *__restrict__ fr) {
  const int h = blockIdx.x * MB_PL_BLOCK + threadIdx.x;
  if (h >= nh) return;
  const int tw = twin[h];
  bool f = tw < 0;
  if (!f) f = __ldg(lng + h / 3) != h % 3 && __ldg(lng + tw / 3) != tw % 3;
  fr[h] = f ? 1 : 0;
}

/* Repair, step 1: frontier edges per vertex, each edge counted once. */
__global__ void __launch_bounds__(MB_PL_BLOCK)
    mb_pl_vertex_frontier_count(int nh, const int *__restrict__ V, const int *__restrict__ twin,
                                const uint8_t *__restrict__ fr, int *__restrict__ cnt) {
  const int h = blockIdx.x * MB_PL_BLOCK + threadIdx.x;
  if (h >= nh || !fr[h]) return;
  const int tw = twin[h];
  if (tw >= 0 && tw < h) return;
  atomicAdd(&cnt[V[h]], 1);
  atomicAdd(&cnt[V[mb_pl_next(h)]], 1);
}

/* Label-phase successor of frontier half-edge h (fr == 1 only, so the marks
 * of value 2 that the repair writes meanwhile are not seen). */
__device__ __forceinline__ int mb_pl_succ_label(int h, const int *__restrict__ twin,
                                                const uint8_t *fr, int cap) {
  int s = mb_pl_next(h);
  for (int i = 0; i < cap && fr[s] != 1; i++) {
    const int tw = twin[s];
    if (tw < 0) return -1;
    s = mb_pl_next(tw);
  }
  return fr[s] == 1 ? s : -1;
}

/* Repair, step 1b (per half-edge): the start of each terminal-edge region's
 * walk: from its seed (the half-edge h < twin(h) of its terminal edge, or
 * its boundary terminal edge) turn clockwise to the first frontier
 * half-edge; one bit per half-edge in `start`. */
__global__ void __launch_bounds__(MB_PL_BLOCK)
    mb_pl_start_kernel(int nh, const int *__restrict__ twin, const uint8_t *__restrict__ lng,
                       const uint8_t *__restrict__ fr, unsigned *__restrict__ start) {
  const int h = blockIdx.x * MB_PL_BLOCK + threadIdx.x;
  if (h >= nh || lng[h / 3] != h % 3) return;
  const int g = twin[h];
  if (g >= 0 && (lng[g / 3] != g % 3 || g < h)) return;
  int e = h;
  for (int i = 0; i < nh && !fr[e]; i++) e = mb_pl_next(twin[e]);
  atomicOr(&start[e >> 5], 1u << (e & 31));
}

__device__ __forceinline__ bool mb_pl_bit(const unsigned *bits, int h) {
  return (bits[h >> 5] >> (h & 31)) & 1u;
}

/* The tip h leaves (h is its label-phase frontier half-edge) is repaired by
 * its region's first tip in walk order from the region's start, which then
 * repairs every tip of the region in that order (mb_polylla.h): the middle
 * edge is counted from the first frontier half-edge clockwise from the
 * tip's last outgoing half-edge, with the middle edges added so far.
 * Regions are disjoint, so leaders never touch the same edges. */
__device__ void mb_pl_repair_region(int h, const int *__restrict__ twin, uint8_t *fr,
                                    const unsigned *__restrict__ start, int nh,
                                    unsigned long long *c) {
  const int g = twin[h]; /* points to the tip */
  int e0 = g, steps = 0;
  while (!mb_pl_bit(start, e0)) {
    e0 = mb_pl_succ_label(e0, twin, fr, nh);
    if (e0 < 0 || ++steps > nh) {
      atomicMin(&c[MB_PL_C_LOOP], (unsigned long long)(h / 3));
      return;
    }
  }
  int first = mb_pl_succ_label(e0, twin, fr, nh);
  while (first != e0 && mb_pl_succ_label(first, twin, fr, nh) != twin[first])
    first = mb_pl_succ_label(first, twin, fr, nh);
  if (first != g) return; /* not the leader */
  int x = e0;
  do {
    x = mb_pl_succ_label(x, twin, fr, nh);
    if (mb_pl_succ_label(x, twin, fr, nh) != twin[x]) continue;
    const int b = twin[x];
    int e = b, last = b, deg = 0, nfront = 0;
    do {
      e = mb_pl_next(twin[e]);
      deg++;
      nfront += fr[e] != 0;
      last = max(last, e);
    } while (e != b);
    if (x == e0 && nfront > 1) continue; /* the start's tip, repaired already */
    e = last;
    while (!fr[e]) e = mb_pl_next(twin[e]);
    const int k = deg - 1, adv = k % 2 == 0 ? k / 2 - 1 : k / 2;
    e = mb_pl_next(twin[e]);
    for (int i = 0; i < adv; i++) e = mb_pl_next(twin[e]);
    if (!fr[e]) {
      fr[e] = 2;
      fr[twin[e]] = 2;
    }
  } while (x != e0);
}

/* Repair, step 2 (per half-edge): a label-phase frontier half-edge h leaving
 * a tip (a vertex with exactly one frontier edge; boundary vertices have at
 * least two) is e0 of that tip. Walk clockwise e_{i+1} = next(twin(e_i))
 * around the tip to find its degree, mark the middle edge e_m,
 * m = (degree - 1 + 1) / 2, with fr = 2 (both half-edges); then walk the
 * label-phase polygon of h to its smallest half-edge and set that bit of
 * `seen`, counting the polygons seen first. */
__global__ void __launch_bounds__(MB_PL_BLOCK)
    mb_pl_repair_kernel(int nh, const int *__restrict__ V, const int *__restrict__ twin,
                        const int *__restrict__ cnt, uint8_t *fr, unsigned *__restrict__ seen,
                        const unsigned *__restrict__ start, const unsigned *__restrict__ left,
                        unsigned long long *c) {
  const int h = blockIdx.x * MB_PL_BLOCK + threadIdx.x;
  const bool tip = h < nh && fr[h] == 1 && __ldg(cnt + V[h]) == 1 &&
                   !(left && mb_pl_bit(left, h / 3)); /* regions left out: not repaired */
  mb_pl_block_add(&c[MB_PL_C_TIPS], tip);
  if (!tip) return;
  /* degree: steps until the walk is back at e0 */
  int deg = 0, e = h;
  do {
    const int tw = twin[e];
    if (tw < 0 || deg >= nh) {
      atomicMin(&c[MB_PL_C_LOOP], (unsigned long long)(h / 3));
      return;
    }
    e = mb_pl_next(tw);
    deg++;
  } while (e != h);
  mb_pl_repair_region(h, twin, fr, start, nh, c);
  /* head of the label-phase polygon through h */
  int mn = h, s = h, steps = 0;
  do {
    s = mb_pl_succ_label(s, twin, fr, nh);
    if (s < 0 || ++steps > nh) {
      atomicMin(&c[MB_PL_C_LOOP], (unsigned long long)(h / 3));
      return;
    }
    mn = min(mn, s);
  } while (s != h);
  const unsigned bit = 1u << (mn & 31);
  const unsigned old = atomicOr(&seen[mn >> 5], bit);
  if (!(old & bit)) atomicAdd(&c[MB_PL_C_REPAIRED], 1ull);
}

/* Traversal, step 1 (per half-edge): successor of each frontier half-edge
 * (-1 for the others); counts frontier edges and half-edges. */
__global__ void __launch_bounds__(MB_PL_BLOCK)
    mb_pl_successor_kernel(int nh, const int *__restrict__ twin, const uint8_t *__restrict__ fr,
                           int *__restrict__ succ, unsigned long long *c) {
  const int h = blockIdx.x * MB_PL_BLOCK + threadIdx.x;
  const bool f = h < nh && fr[h];
  int tw = -1;
  if (h < nh) {
    int s = -1;
    tw = twin[h];
    if (f) {
      s = mb_pl_next(h);
      for (int i = 0; !__ldg(fr + s); i++) {
        const int ts = __ldg(twin + s);
        if (ts < 0 || i >= nh) {
          atomicMin(&c[MB_PL_C_LOOP], (unsigned long long)(h / 3));
          s = -1;
          break;
        }
        s = mb_pl_next(ts);
      }
    }
    succ[h] = s;
  }
  mb_pl_block_add(&c[MB_PL_C_FRONTIER_HE], f);
  mb_pl_block_add(&c[MB_PL_C_FRONTIER_EDGES], f && (tw < 0 || h < tw));
}

/* Traversal, step 2 (per half-edge): a frontier half-edge walks its cycle
 * until it meets a smaller id (not the head) or comes back (the head: its
 * cycle length goes to plen). plen is 0 for every other half-edge. */
__global__ void __launch_bounds__(MB_PL_BLOCK)
    mb_pl_head_kernel(int nh, const int *__restrict__ succ, int *__restrict__ plen,
                      unsigned long long *c) {
  const int h = blockIdx.x * MB_PL_BLOCK + threadIdx.x;
  if (h >= nh) return;
  int len = 0;
  int s = succ[h];
  if (s >= 0) {
    len = 1;
    while (s != h) {
      if (s < h) {
        len = 0;
        break;
      }
      if (len >= nh) {
        atomicMin(&c[MB_PL_C_LOOP], (unsigned long long)(h / 3));
        len = 0;
        break;
      }
      s = __ldg(succ + s);
      len++;
      if (s < 0) {
        atomicMin(&c[MB_PL_C_LOOP], (unsigned long long)(h / 3));
        len = 0;
        break;
      }
    }
  }
  plen[h] = len;
}

/* Predicate of the head selection (cub::DeviceSelect::If over ids); the
 * polygons of regions left out (bits `left` of their triangles, may be
 * NULL) are not selected. */
struct mb_pl_is_head {
  const int *plen;
  const unsigned *left;
  __device__ __forceinline__ bool operator()(int h) const {
    return __ldg(plen + h) > 0 && !(left && mb_pl_bit(left, h / 3));
  }
};

/* Regions left out (mb_polylla_opts.seeds), a breadth-first walk over the
 * label phase's non-frontier edges: queue [nt] lists the triangles reached
 * (each once, claimed by its bit in `left`), *tail their number. Step 0:
 * the seeds. */
__device__ __forceinline__ void mb_pl_left_claim(int t, unsigned *left, int *queue,
                                                 unsigned long long *tail) {
  const unsigned bit = 1u << (t & 31);
  if (!(atomicOr(&left[t >> 5], bit) & bit)) queue[atomicAdd(tail, 1ull)] = t;
}

__global__ void __launch_bounds__(MB_PL_BLOCK)
    mb_pl_left_seed(int ns, const int *__restrict__ seeds, unsigned *left, int *queue,
                    unsigned long long *tail) {
  const int i = blockIdx.x * MB_PL_BLOCK + threadIdx.x;
  if (i < ns) mb_pl_left_claim(seeds[i], left, queue, tail);
}

/* Step k: the triangles across the non-frontier edges of queue [b, e). */
__global__ void __launch_bounds__(MB_PL_BLOCK)
    mb_pl_left_grow(int b, int e, const int *__restrict__ twin, const uint8_t *__restrict__ fr,
                    unsigned *left, int *queue, unsigned long long *tail) {
  const int i = b + blockIdx.x * MB_PL_BLOCK + threadIdx.x;
  if (i >= e) return;
  const int t = queue[i];
  for (int k = 0; k < 3; k++) {
    const int h = 3 * t + k;
    if (fr[h]) continue;
    const int tw = twin[h]; /* a non-frontier edge is interior */
    if (tw >= 0) mb_pl_left_claim(tw / 3, left, queue, tail);
  }
}

/* Length of polygon p: plen of its head (input of the offsets scan). */
struct mb_pl_head_len {
  const int *plen;
  const int *heads;
  __device__ __forceinline__ int operator()(int p) const { return __ldg(plen + __ldg(heads + p)); }
};

/* Traversal, step 3 (per polygon): origins of the half-edges of polygon p
 * from its head, following successors, into out[off[p] ..]. */
__global__ void __launch_bounds__(MB_PL_BLOCK)
    mb_pl_write_kernel(int npoly, const int *__restrict__ heads, const int *__restrict__ off,
                       const int *__restrict__ succ, const int *__restrict__ V,
                       int *__restrict__ out) {
  const int p = blockIdx.x * MB_PL_BLOCK + threadIdx.x;
  if (p >= npoly) return;
  int s = heads[p];
  const int b = off[p], e = off[p + 1];
  for (int i = b; i < e; i++) {
    out[i] = __ldg(V + s);
    s = __ldg(succ + s);
  }
}

/* Pinch repair, the scan of the polygons (mb_polylla.h, "Pinch repair";
 * the CPU's find_pinched): polygon p onto list when it lists a vertex
 * twice, compared pairwise, or has more than MB_PL_PINCH_PAIRWISE vertices
 * (the host checks those: mb_polylla_has_repeat). list in no order. */
#define MB_PL_PINCH_PAIRWISE 64
__global__ void __launch_bounds__(MB_PL_BLOCK)
    mb_pl_pinch_list(int npoly, const int *__restrict__ off, const int *__restrict__ out,
                     int *__restrict__ list, unsigned long long *count) {
  const int p = blockIdx.x * MB_PL_BLOCK + threadIdx.x;
  if (p >= npoly) return;
  const int b = __ldg(off + p), e = __ldg(off + p + 1);
  bool hit = e - b > MB_PL_PINCH_PAIRWISE;
  for (int i = b + 1; i < e && !hit; i++) {
    const int v = __ldg(out + i);
    for (int j = b; j < i; j++)
      if (__ldg(out + j) == v) {
        hit = true;
        break;
      }
  }
  if (hit) list[atomicAdd(count, 1ull)] = p;
}

/* Pinch repair, the scan of the corners (the CPU's pinch_triangles):
 * triangle t onto list when its three corners are marked in in (a bit per
 * vertex). list in no order. */
__global__ void __launch_bounds__(MB_PL_BLOCK)
    mb_pl_pinch_triangles(int nt, const int *__restrict__ V,
                          const unsigned long long *__restrict__ in, int *__restrict__ list,
                          unsigned long long *count) {
  const int t = blockIdx.x * MB_PL_BLOCK + threadIdx.x;
  if (t >= nt) return;
  for (int k = 0; k < 3; k++) {
    const int v = __ldg(V + 3 * t + k);
    if (!(__ldg(in + (v >> 6)) >> (v & 63) & 1ull)) return;
  }
  list[atomicAdd(count, 1ull)] = t;
}

/* First i in a [0, n) (increasing) with a[i] >= key (lower) or > key
 * (upper). */
__device__ __forceinline__ int mb_pl_lower(const int *__restrict__ a, int n, int key) {
  int lo = 0, hi = n;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (__ldg(a + mid) < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
__device__ __forceinline__ int mb_pl_upper(const int *__restrict__ a, int n, int key) {
  int lo = 0, hi = n;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (__ldg(a + mid) <= key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The pinch repair's merge by head on the device (the host's
 * mb_polylla_merge): the npoly polygons (off, out, heads increasing) but
 * the ndrop pinched ones D (increasing; Dpre their index counts' prefix
 * sums), and np pieces (heads ph increasing, indices pidx at Ppre), into
 * off2, out2, heads2. A piece goes before the first kept polygon of a
 * larger head: L [np], the first polygon of all with head >= ph (piece_at).
 * Kept polygon i lands at i - (dropped before i) + (pieces with L <= i). */
__global__ void __launch_bounds__(MB_PL_BLOCK)
    mb_pl_piece_at(int np, const int *__restrict__ heads, int npoly, const int *__restrict__ ph,
                   int *__restrict__ L) {
  const int j = blockIdx.x * MB_PL_BLOCK + threadIdx.x;
  if (j < np) L[j] = mb_pl_lower(heads, npoly, __ldg(ph + j));
}

__global__ void __launch_bounds__(MB_PL_BLOCK)
    mb_pl_merge_kept(int npoly, const int *__restrict__ off, const int *__restrict__ out,
                     const int *__restrict__ heads, int ndrop, const int *__restrict__ D,
                     const int *__restrict__ Dpre, int np, const int *__restrict__ L,
                     const int *__restrict__ Ppre, int *__restrict__ off2, int *__restrict__ out2,
                     int *__restrict__ heads2) {
  const int i = blockIdx.x * MB_PL_BLOCK + threadIdx.x;
  if (i >= npoly) return;
  const int a = mb_pl_lower(D, ndrop, i);
  if (a < ndrop && __ldg(D + a) == i) return; /* pinched: its pieces replace it */
  const int b = mb_pl_upper(L, np, i);
  const int q = i - a + b, b0 = __ldg(off + i), e0 = __ldg(off + i + 1);
  const int x = b0 - __ldg(Dpre + a) + __ldg(Ppre + b);
  off2[q] = x;
  heads2[q] = __ldg(heads + i);
  for (int k = b0; k < e0; k++) out2[x + k - b0] = __ldg(out + k);
}

__global__ void __launch_bounds__(MB_PL_BLOCK)
    mb_pl_merge_pieces(int np, const int *__restrict__ L, const int *__restrict__ off, int ndrop,
                       const int *__restrict__ D, const int *__restrict__ Dpre,
                       const int *__restrict__ Ppre, const int *__restrict__ ph,
                       const int *__restrict__ pidx, int *__restrict__ off2,
                       int *__restrict__ out2, int *__restrict__ heads2) {
  const int j = blockIdx.x * MB_PL_BLOCK + threadIdx.x;
  if (j >= np) return;
  const int l = __ldg(L + j), a = mb_pl_lower(D, ndrop, l);
  const int q = l - a + j, x = __ldg(off + l) - __ldg(Dpre + a) + __ldg(Ppre + j);
  off2[q] = x;
  heads2[q] = __ldg(ph + j);
  for (int k = __ldg(Ppre + j); k < __ldg(Ppre + j + 1); k++)
    out2[x + k - __ldg(Ppre + j)] = __ldg(pidx + k);
}

/* The sizes of the polygons list [n]. */
__global__ void __launch_bounds__(MB_PL_BLOCK)
    mb_pl_list_sizes(int n, const int *__restrict__ list, const int *__restrict__ off,
                     int *__restrict__ size) {
  const int k = blockIdx.x * MB_PL_BLOCK + threadIdx.x;
  if (k < n) size[k] = __ldg(off + __ldg(list + k) + 1) - __ldg(off + __ldg(list + k));
}

/* Gather the lists of the polygons list [n] (their sizes' prefix sums at
 * at [n + 1]) into packed. */
__global__ void __launch_bounds__(MB_PL_BLOCK)
    mb_pl_gather_lists(int n, const int *__restrict__ list, const int *__restrict__ at,
                       const int *__restrict__ off, const int *__restrict__ out,
                       int *__restrict__ packed) {
  const int k = blockIdx.x * MB_PL_BLOCK + threadIdx.x;
  if (k >= n) return;
  const int p = __ldg(list + k), b = __ldg(off + p), e = __ldg(off + p + 1), x = __ldg(at + k);
  for (int i = b; i < e; i++) packed[x + i - b] = __ldg(out + i);
}

#endif
