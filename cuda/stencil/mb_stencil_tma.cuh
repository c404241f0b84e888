/* meshbatch: the stencil room's TMA kernel and its launch (included by
 * mb_stencil_kernels.cuh, after the marching kernel and the launch shapes,
 * inside namespace mbst; cuda/stencil/*.cu only): tile_tma, the driver's
 * tensor-map encoder, the tensor maps cached per array, frame and box, and
 * launch_tma, which computes a set of up to MAX_BOXES boxes in one launch. */
#ifndef MB_STENCIL_TMA_CUH
#define MB_STENCIL_TMA_CUH

/* ------------------------------------------------------------ TMA kernel */

/* The Laplacian and the steps on devices of compute capability 9.0 (2.5D
 * blocking, Micikevicius 2009, section 3, with the planes brought by the
 * tensor memory accelerator, TMA). A block of TY warps covers a tile of TY
 * rows of W = 32 V points and marches along z through a chunk of planes.
 * Each plane's tile is copied into a ring of S shared slots by
 * cp.async.bulk.tensor instructions of one thread, S - G - 1 planes before
 * it is needed: its TY rows with the G halo rows above and below (SR = TY
 * + 2 G rows of W points: whole 128-byte lines), and the G side columns
 * left and right of its own TY rows (narrow boxes, read from L2 by 32-byte
 * sectors; the corners a star stencil does not use are not copied). Each
 * slot has its mbarrier, and the block waits at one __syncthreads per
 * plane before the slot it has read is filled again. The copies in flight
 * hold no registers, so a block keeps 2 to 4 planes of its tile (12 KB
 * each in float32) on the way, which is what the memory's latency asks
 * (Little's law); the register version (march) keeps one vector per
 * thread. Each thread keeps the 9 values of its column in a ring of
 * registers (the z terms), reading plane m + G's centre from its slot, and
 * takes the y and x neighbours of plane m from plane m's slot; the march
 * is unrolled by 9, so no value moves between registers. The arithmetic
 * is the chain of mb_stencil.h, as in march, so the bits are the same.
 */
constexpr int TMA_TY = 16; /* rows of a tile */

/* Slots of the ring: planes m .. m + S - 1, so the copies run S - G - 1
 * planes ahead. 9 for the Laplacian and the heat step (4 ahead; it also
 * makes the slot of each step of the 9-fold unrolled march a constant),
 * 7 for the wave step, whose u_prev stream gained nothing from more. */
__host__ __device__ constexpr int tma_slots(int op) { return op == OP_WAVE ? 7 : 9; }

__device__ __forceinline__ unsigned smem_addr(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ bool mbar_done(unsigned bar, unsigned parity) {
  unsigned ok;
  asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; "
               "selp.u32 %0, 1, 0, p; }"
               : "=r"(ok)
               : "r"(bar), "r"(parity)
               : "memory");
  return ok != 0;
}
__device__ __forceinline__ void mbar_wait(const unsigned long long *bar, unsigned parity) {
  while (!mbar_done(smem_addr(bar), parity)) {
  }
}

template <typename T, int V, int OP>
__global__ void __launch_bounds__(TX * TMA_TY)
    tile_tma(const __grid_constant__ CUtensorMap tm, const __grid_constant__ CUtensorMap ts,
             frame f, const box_set bs, int wrap, const T *__restrict__ u,
             const T *__restrict__ u_prev, T *__restrict__ out, const weights<T> wt, T a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  static_assert(OP == OP_LAP || OP == OP_HEAT || OP == OP_WAVE, "the Laplacian and the steps");
  constexpr int S = tma_slots(OP), Q = 2 * G + 1;
  /* a slot: SR rows of W points, then G side columns left and right of
   * the tile's TY rows */
  constexpr int W = TX * V, SR = TMA_TY + 2 * G, SLOT = SR * W + 2 * TMA_TY * G;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T *s = reinterpret_cast<T *>(smem_raw);
  __shared__ __align__(8) unsigned long long bar[S];
  const int lane = threadIdx.x, ty = threadIdx.y;
  const bool leader = lane == 0 && ty == 0;
  /* this block's box of the set, and its tile and chunk there */
  int kb = 0;
  while (kb + 1 < bs.count && (int)blockIdx.x >= bs.first[kb + 1]) kb++;
  const box b = bs.b[kb];
  const int chunk = bs.chunk[kb], rel = (int)blockIdx.x - bs.first[kb];
  const int bx = rel % bs.gx[kb], by = rel / bs.gx[kb] % bs.gy[kb];
  const int bz = rel / (bs.gx[kb] * bs.gy[kb]);
  const int x0 = b.lo[2] + bx * W, x = x0 + lane * V;
  const int y0 = b.lo[1] + by * TMA_TY, y = y0 + ty;
  const int m0 = b.lo[0] + bz * chunk;
  const int n = min(chunk, b.lo[0] + b.n[0] - m0); /* planes of this block */
  const int fetch = n + G;                          /* planes m0 .. m0 + n - 1 + G */
  /* own: the column lies in the array (its z values are loaded) */
  const bool own = x + V <= f.nx + G && y < b.lo[1] + b.n[1] + G;
  const bool active = x < b.lo[2] + b.n[2] && y < b.lo[1] + b.n[1];
  if (leader) {
#pragma unroll
    for (int k = 0; k < S; k++)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(&bar[k])) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  /* Plane m0 + k into slot k % S (the leader, once the slot is free): the
   * tile's rows and its side columns; the boxes' corners in the tensor's
   * (x, row, plane) coordinates of the framed array. */
  auto issue = [&](int k) {
    const unsigned mb = smem_addr(&bar[k % S]);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(mb),
                 "r"((unsigned)(SLOT * sizeof(T)))
                 : "memory");
    T *slot = s + (k % S) * SLOT;
    auto copy = [&](const CUtensorMap *map, T *dst, int cx, int cy) {
      asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::"
                   "bytes [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(smem_addr(dst)),
                   "l"(map), "r"(cx), "r"(cy), "r"(m0 + k + G), "r"(mb)
                   : "memory");
    };
    copy(&tm, slot, f.xo + x0, y0);
    copy(&ts, slot + SR * W, f.xo + x0 - G, y0 + G);
    copy(&ts, slot + SR * W + TMA_TY * G, f.xo + x0 + W, y0 + G);
  };
  if (leader)
    for (int k = 0; k < min(S, fetch); k++) issue(k);
  const long long sm = f.sz, p0 = f.at(m0, y, x);
  const T *pv = u_prev + p0;
  T *o = out + p0;
  const int mine = (ty + G) * W + lane * V; /* this thread's point in a slot */
  vals<T, V> q[Q], pn = {};
  if (own)
#pragma unroll
    for (int k = 0; k < 2 * G; k++) q[k] = ld<T, V>(u + p0 + (k - G) * sm);
  if (OP == OP_WAVE && active) pn = ld<T, V>(pv);
  for (int i0 = 0; i0 < n; i0 += Q) {
#pragma unroll
    for (int r = 0; r < Q; r++) {
      const int i = i0 + r;
      if (i >= n) break;
      const int cur = i % S;
      mbar_wait(&bar[cur], (unsigned)(i / S) & 1u);
      const T *t = s + cur * SLOT;
      const int ahead = (i + G) % S;
      mbar_wait(&bar[ahead], (unsigned)((i + G) / S) & 1u);
      /* the ring: value k of the column (plane m - G + k) is q[(r + k) % Q] */
      q[(r + 2 * G) % Q] = *reinterpret_cast<const vals<T, V> *>(s + ahead * SLOT + mine);
      const vals<T, V> prev = pn;
      if (OP == OP_WAVE && active && i + 1 < n) pn = ld<T, V>(pv + sm);
      const vals<T, V> mid = q[(r + G) % Q];
      /* the x line around this thread's points (xl[G + c] is point x + c):
       * G neighbours on each side from the row or, past the tile, from the
       * side columns */
      T xl[V + 2 * G];
      {
        const T *row = t + (ty + G) * W, *left = t + SR * W + ty * G;
        const T *right = left + TMA_TY * G;
#pragma unroll
        for (int cc = 0; cc < V; cc++) xl[G + cc] = mid.c[cc];
#pragma unroll
        for (int j = 1; j <= G / V; j++) {
          const int pl = (lane - j) * V, pr = (lane + j) * V;
          const vals<T, V> l =
              *reinterpret_cast<const vals<T, V> *>(pl >= 0 ? row + pl : left + pl + G);
          const vals<T, V> rr =
              *reinterpret_cast<const vals<T, V> *>(pr < W ? row + pr : right + pr - W);
#pragma unroll
          for (int cc = 0; cc < V; cc++) {
            xl[G - j * V + cc] = l.c[cc];
            xl[G + (j - 1) * V + V + cc] = rr.c[cc];
          }
        }
      }
      vals<T, V> res;
#pragma unroll
      for (int cc = 0; cc < V; cc++) {
        T wz[Q], wy[Q];
#pragma unroll
        for (int k = 0; k < Q; k++) {
          wz[k] = q[(r + k) % Q].c[cc];
          wy[k] = t[mine - (G - k) * W + cc];
        }
        /* the CPU's chain: f0 u, then the z, y and x terms */
        T lap = wt.f0 * mid.c[cc];
        lap = d2add(wz, wt.f[0], lap);
        lap = d2add(wy, wt.f[1], lap);
        lap = d2add(xl + cc, wt.f[2], lap);
        if (OP == OP_LAP) res.c[cc] = lap;
        else if (OP == OP_HEAT) res.c[cc] = fmx(a, lap, mid.c[cc]);
        else res.c[cc] = fmx(a, lap, (mid.c[cc] + mid.c[cc]) - prev.c[cc]);
      }
      if (active) st<T, V>(o, res);
      if (OP != OP_LAP && wrap && active) wrap_copies(f, wrap, o, res, m0 + i, y, x);
      o += sm;
      pv += sm;
      __syncthreads(); /* slot cur has been read by all: fill it again */
      if (leader && i + S < fetch) issue(i + S);
    }
  }
#endif
}

/* ------------------------------------------------------------ TMA launch */

/* cuTensorMapEncodeTiled from the driver (through the runtime, so that
 * nothing links libcuda), or null where the driver lacks it. */
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void *p = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      p = nullptr;
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

/* Whether the TMA kernel can run here: a device of compute capability
 * 9.0 or more (the build's code for it included) and the driver's
 * encoder. */
inline bool tma_available() {
  static const bool t = [] {
    int dev = 0, major = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess)
      return false;
    return major >= 9 && tensor_map_encoder() != nullptr;
  }();
  return t;
}

/* Planes per block of the TMA kernel (MB_STENCIL_TUNE's CHUNK overrides
 * it): 96. On the H100 at 512^3, float32, chunks of 16 to 96 planes ran at
 * 0.83-0.84 of copy, 112-160 at 0.80-0.81 and 128 at 0.78 (the halo
 * planes of a chunk are read again by the next, but the blocks of
 * neighbouring chunks run at the same time and find them in L2); float64
 * 0.83 from 80 to 160, 0.79 at 32. Blocks taken z first (neighbouring
 * chunks of one tile together) ran at 0.63-0.71: the y halo rows shared by
 * the tiles of one plane then come from DRAM twice. */
constexpr int TMA_CHUNK = 96;

/* A tensor map of the framed array u as (x, row, plane) with boxes of
 * bx x by x 1 points. No L2 promotion: the Laplacian ran at 0.86 of copy
 * in float32 on the H100 without it, 0.84 with 256-byte and 0.83 with
 * 128-byte promotion (float64 0.83 in all three); an L2 evict-first
 * policy on the stores gained nothing.
 * The maps are cached per host thread, keyed by everything the encoding
 * reads (the array's address, element size, frame and box), so a step's
 * launches (up to 14 per split step) encode each map once per array and
 * frame instead of at every launch; an entry can never be stale: the same
 * key encodes the same map. Sixteen entries, replaced round robin. */
struct tensor_map_key {
  const void *u;
  long long sy, sz;
  int ny, nz, bx, by, esize;
  bool operator==(const tensor_map_key &o) const {
    return u == o.u && sy == o.sy && sz == o.sz && ny == o.ny && nz == o.nz && bx == o.bx &&
           by == o.by && esize == o.esize;
  }
};
constexpr int TENSOR_MAP_CACHE = 16;

template <typename T>
inline mb_error tensor_map(const frame &f, const T *u, int bx, int by, CUtensorMap *tm) {
  thread_local tensor_map_key keys[TENSOR_MAP_CACHE] = {};
  thread_local CUtensorMap maps[TENSOR_MAP_CACHE];
  thread_local int next = 0;
  const tensor_map_key key = {u, f.sy, f.sz, f.ny, f.nz, bx, by, (int)sizeof(T)};
  for (int i = 0; i < TENSOR_MAP_CACHE; i++)
    if (keys[i].u && keys[i] == key) {
      *tm = maps[i];
      return MB_SUCCESS;
    }
  const cuuint64_t dim[3] = {(cuuint64_t)f.sy, (cuuint64_t)f.ny + 2 * G, (cuuint64_t)f.nz + 2 * G};
  const cuuint64_t stride[2] = {sizeof(T) * (cuuint64_t)f.sy, sizeof(T) * (cuuint64_t)f.sz};
  const cuuint32_t boxdim[3] = {(cuuint32_t)bx, (cuuint32_t)by, 1}, estride[3] = {1, 1, 1};
  const CUresult cr = tensor_map_encoder()(
      tm, sizeof(T) == 4 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : CU_TENSOR_MAP_DATA_TYPE_FLOAT64, 3,
      const_cast<T *>(u), dim, stride, boxdim, estride, CU_TENSOR_MAP_INTERLEAVE_NONE,
      CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  MB_CHECK(cr == CUDA_SUCCESS, MB_ERR_CUDA,
           "stencil (cuda): tensor map of a %d x %d x %d block failed (CUresult %d)", f.nz, f.ny,
           f.nx, (int)cr);
  keys[next] = key;
  maps[next] = *tm;
  next = (next + 1) % TENSOR_MAP_CACHE;
  return MB_SUCCESS;
}

/* The chunk of planes per block of box b in the TMA kernel: TMA_CHUNK
 * (MB_STENCIL_TUNE's CHUNK overrides it), or with `spread` (a shell's
 * slabs, launched together) halved down to 16 until the box has 1024
 * blocks, so that a thin slab's blocks do not march 96 planes each while
 * the device idles (the bits do not depend on the chunk). */
inline int tma_chunk(const box &b, int op, int V, bool spread) {
  const tuning tn = tuning_of(op);
  int chunk = std::min(tn.chunk > 0 ? tn.chunk : TMA_CHUNK, std::max(b.n[0], 1));
  const long long tiles =
      (long long)((b.n[2] + TX * V - 1) / (TX * V)) * ((b.n[1] + TMA_TY - 1) / TMA_TY);
  while (spread && !tn.chunk && chunk > 16 && tiles * ((b.n[0] + chunk - 1) / chunk) < 1024)
    chunk /= 2;
  return chunk;
}

/* The TMA kernel for op (OP_LAP, OP_HEAT, OP_WAVE) at the nb boxes of bx
 * (1 to MAX_BOXES, none empty) in one launch; wrap: wrap_copies' axes.
 * The tensor maps (the tile's rows, its side columns) come from
 * tensor_map's cache. */
template <typename T, int V, int OP>
inline mb_error launch_tma(const frame &f, const box *bx, int nb, const weights<T> &w, const T *u,
                           const T *prev, T *out, T a, cudaStream_t st, int wrap) {
  constexpr int W = TX * V, SR = TMA_TY + 2 * G;
  const size_t smem = sizeof(T) * ((size_t)SR * W + 2 * TMA_TY * G) * tma_slots(OP);
  static bool sized = false; /* the shared-memory attribute, once per kernel */
  if (!sized) {
    MB_CALL_CUDA(cudaFuncSetAttribute(tile_tma<T, V, OP>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    sized = true;
  }
  box_set bs = {};
  bs.count = nb;
  long long blocks = 0;
  for (int k = 0; k < nb; k++) {
    const box &b = bx[k];
    bs.b[k] = b;
    bs.chunk[k] = tma_chunk(b, OP, V, nb > 1);
    bs.gx[k] = (b.n[2] + W - 1) / W;
    bs.gy[k] = (b.n[1] + TMA_TY - 1) / TMA_TY;
    bs.first[k] = (int)blocks;
    blocks += (long long)bs.gx[k] * bs.gy[k] * ((b.n[0] + bs.chunk[k] - 1) / bs.chunk[k]);
  }
  MB_CHECK(blocks < (1ll << 31), MB_ERR_UNSUPPORTED,
           "stencil (cuda): a block of %d x %d x %d is beyond the TMA kernel's grid", f.nz, f.ny,
           f.nx);
  bs.first[nb] = (int)blocks;
  CUtensorMap tm, ts;
  MB_CALL(tensor_map<T>(f, u, W, SR, &tm));
  MB_CALL(tensor_map<T>(f, u, G, TMA_TY, &ts));
  tile_tma<T, V, OP>
      <<<(unsigned)blocks, dim3(TX, TMA_TY), smem, st>>>(tm, ts, f, bs, wrap, u, prev, out, w, a);
  MB_CHECK_LAUNCH("stencil kernel (TMA)");
  return MB_SUCCESS;
}

#endif
