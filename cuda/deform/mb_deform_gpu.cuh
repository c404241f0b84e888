/* meshbatch: the deform room's host-side device state, shared by its CUDA
 * files (mb_deform.cu: the pool, the setup and the run; mb_deform_cg.cu:
 * the room's CG, its kernels and the iteration's CUDA graph;
 * mb_deform_frame.cu: the persistent cooperative frame). Private to
 * cuda/deform/; the entry points are mb_deform_cuda.h's. */
#ifndef MB_DEFORM_GPU_CUH
#define MB_DEFORM_GPU_CUH

#include <cuda_runtime.h>

#include <vector>

#include "mb_csr.h"
#include "mb_cuda_private.cuh"
#include "mb_deform.h"
#include "mb_deform_dev.cuh"
#include "mb_deform_private.h"
#include "mb_linalg_cuda.h"
namespace mbd {

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
  mb_dbuf prof; /* the persistent frame's profile (MB_DEFORM_FRAME_PROFILE), cumulative */
  mb_dbuf cr[2], cw[2], cq[2], cp, cdinv, cpart, cst; /* the room's CG (cgv_t) */
  /* H for the room's CG: CSR rows (lengths), SELL-32 slices, columns,
   * diagonal positions, values at c and their two parts (base, face) */
  mb_dbuf hrow, hsptr, hcol, hdiag, hval, hbase, hface;
  cudaStream_t capture = nullptr; /* graphs are captured on it */
  cudaGraphExec_t iter = nullptr; /* a whole capped iteration (iterate_graph) */
  cudaEvent_t ev[2] = {nullptr, nullptr}; /* around a group of launches (rep->device_ms) */
  /* pinned staging of a run's uploads (upload(): asynchronous copies on
   * the stream `up`), grown only; stage_used: bytes taken by this run */
  char *stage = nullptr;
  size_t stage_bytes = 0, stage_used = 0;
  /* the uploads' stream: the default stream for the run's pool (the_pool);
   * a non-blocking stream of its own for a pool a preparing thread uploads
   * into ahead of the run (ahead_take), `ready` recorded on it after them */
  cudaStream_t up = nullptr;
  cudaEvent_t ready = nullptr;
  ~pool_t() {
    if (up) cudaStreamSynchronize(up);
    if (stage) cudaFreeHost(stage);
    if (ready) cudaEventDestroy(ready);
    if (up) cudaStreamDestroy(up);
    for (int k = 0; k < 2; k++)
      if (ev[k]) cudaEventDestroy(ev[k]);
    if (iter) cudaGraphExecDestroy(iter);
    if (capture) cudaStreamDestroy(capture);
  }
};
/* The process's pool for runs that upload themselves (mb_deform.cu; NULL
 * before the first run). */
extern pool_t *the_pool;

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
  int uploaded = 0;      /* upload_all has enqueued on d->up, a pool of ahead_take's */
  int handles_moved = 0; /* prepare_host: a hard handle was not at its target */
  double l = 1;          /* prepare_host: the mean edge length */
  double t_frame = 0; /* mb_wtime() at the frame's end (the final residuals read) */
  int no_persist = 1;     /* the options' persistent <= 0 (auto, no): the graphs only */
  int persist_failed = 0; /* the persistent frame cannot run here (frame_batch) */
  int persist_used = 0;   /* batches run by the persistent frame this run */
  int persist_grid = 0;   /* its blocks (of BLOCK threads), 0 until decided */
  int kcols = 3;          /* the room's CG's columns a thread (tile_rowcol): 3 or 1 */
  int tw = 8;             /* the warps of its row tiles (tile_rowcol): 8, 10 or 16 (tile_warps) */
  ~deform_gpu() {
    if (chunk) cudaGraphExecDestroy(chunk);
    mb_deform_system_free(&sys);
    mb_cuda_csr_free(dH);
    mb_cuda_cholesky_free(chol);
  }
};

/* The room's CG's tile shapes the kernels are built for: K columns a
 * thread (tile_rowcol), W warps a tile (a graph kernel's block, a row tile
 * of the persistent frame). */
template <int K, int W> struct tile_shape {
  static constexpr int k = K, w = W, threads = 32 * W;
};

/* fn(tile_shape<K, W>{}) at g's shape (kcols, tw): the one place where
 * a run's shape picks the kernels' instances. */
template <class Fn> inline void with_tile(const deform_gpu *g, Fn &&fn) {
  if (g->kcols == 1) {
    if (g->tw == 16) fn(tile_shape<1, 16>{});
    else if (g->tw == 10) fn(tile_shape<1, 10>{});
    else fn(tile_shape<1, 8>{});
  } else {
    if (g->tw == 16) fn(tile_shape<3, 16>{});
    else if (g->tw == 10) fn(tile_shape<3, 10>{});
    else fn(tile_shape<3, 8>{});
  }
}

/* Whether tw is a row tile's warps the kernels are built for. */
inline bool tile_warps_ok(int tw) { return tw == 8 || tw == 10 || tw == 16; }

/* The warps of the room's CG's row tiles for n rows at k columns a thread
 * on a device of sms SMs: 8, 10 or 16, whichever puts fewest warps on the
 * busiest SM where the tiles are dealt round the SMs (ceil(tiles / sms)
 * tiles, of tw warps each), then the fewest tiles (fewer blocks to sync
 * and partial sums to add, the same warps at work). (Measured, one H100, 2026-11-28:
 * Roof2, 80,656 rows a thread a row, 2,521 warps: tiles of 8 warps put 3
 * on 52 SMs (24 warps), of 10 warps 2 on every SM but 11 (20 warps): the
 * graphs 5.9 -> 5.5 ms, the persistent frame 6.9 -> 5.5 ms; Roof1 at three
 * threads a row, 1,944 warps: 16 warps against 20, and 8 was the faster,
 * 2.2 against 2.3-2.4 ms; docs/benchmarks.md, "The deform CG's tile
 * shape".) */
inline int tile_warps(int k, int64_t n, int sms) {
  if (sms < 1) return 8;
  const int64_t warps = (k == 3 ? 1 : 3) * ((n + SELL_C - 1) / SELL_C);
  int best = 8;
  int64_t least = -1;
  for (int tw : {8, 10, 16}) { /* ascending: a tie goes to the larger tiles */
    const int64_t tiles = (warps + tw - 1) / tw, busiest = (tiles + sms - 1) / sms * tw;
    if (least < 0 || busiest <= least) {
      least = busiest;
      best = tw;
    }
  }
  return best;
}

/* H's device arrays in the room's CG (SELL-32), borrowed from the pool. */
inline sell_t hmat(const deform_gpu *g) { return sell_t{g->rowptr, g->sptr, g->col, g->val}; }

/* The room's CG's vectors, borrowed from the pool. */
inline cgv_t cg_vectors(const deform_gpu *g) {
  pool_t *d = g->d;
  return cgv_t{{d->cr[0].as<double>(), d->cr[1].as<double>()},
               {d->cw[0].as<double>(), d->cw[1].as<double>()},
               {d->cq[0].as<double>(), d->cq[1].as<double>()},
               d->cp.as<double>(), d->X.as<double>(), d->cdinv.as<double>()};
}

/* mb_deform.cu. grow: b holds at least `bytes` (at least 1) of device
 * memory, reallocated only where it holds fewer (its contents are then
 * lost); errors those of mb_dbuf_alloc. room_cg: whether the room's CG
 * solves (else the linalg PCG or csrchol). enqueue_project (k_project:
 * the faces' local step, c and al from d->prm, the maxima into d->ctl)
 * and enqueue_dual (hard, k_dual) on stream s; launch errors are the
 * caller's to check. */
mb_error grow(mb_dbuf *b, size_t bytes, const char *what);
bool room_cg(const deform_gpu *g);
void enqueue_project(deform_gpu *g, cudaStream_t s, int planar, int hard);
void enqueue_dual(deform_gpu *g, cudaStream_t s);

/* mb_deform_cg.cu: the room's CG (each function says its contract there). */
mb_error build_sell(deform_gpu *g);
mb_error cg_values(deform_gpu *g, double c);
void enqueue_rhs_cg(deform_gpu *g, cudaStream_t s, int hard);
void enqueue_cg_start(deform_gpu *g, cudaStream_t s);
void enqueue_cg_steps(deform_gpu *g, cudaStream_t s, int len);
mb_error device_cg(deform_gpu *g, long long *iters);
void enqueue_iteration(deform_gpu *g, cudaStream_t s, int planar, int hard, double l);
void capture_iteration(deform_gpu *g, int planar, int hard, double l);
mb_error iterate_graph(deform_gpu *g, int planar, int hard, double l);

/* mb_deform_frame.cu: bn (1 .. BATCH) soft iterations of the capped CG
 * path in one persistent cooperative launch on the default stream, the
 * same records in d->bt as bn launches of the iteration's graph (the same
 * bits). *ran: 1 where it was launched; 0 where the persistent frame does
 * not apply or cannot run on this device or shape (g->persist_failed is
 * then set, and the caller launches the graphs). Errors: MB_ERR_CUDA. */
mb_error frame_batch(deform_gpu *g, int planar, int bn, double l, int *ran);

} // namespace mbd
#endif
