/* meshbatch: one block of a grid split over ranks, on this rank's device
 * (mb_stencil_cuda_block in cuda/stencil/mb_stencil_cuda.h).
 *
 * Each step: the halo engine's device exchange (mb_cuda_halo, on the
 * device's urgent stream) packs the block's outermost 4 owned planes of
 * every face shared with another rank with box kernels, sends them (NCCL
 * device to device, or MPI through pinned host buffers, in the block's own
 * precision) and unpacks what arrives into the ghost planes; meanwhile the
 * compute stream fills the faces that need no neighbour (periodic wrap of
 * an uncut axis, the Dirichlet value beyond the grid) and computes the
 * interior box, the points whose stencil does not reach a ghost plane still
 * in flight. The shell around the interior follows once the halo has
 * arrived. The faces are a box plan of the halo engine made from the
 * Cartesian plan for the device frame (mb_cart_plan_frame), so grid faces
 * and mesh halos go through one engine. The boxes split the same per-point
 * arithmetic, so the bits are those of the CPU and of one rank. After the
 * overlapped halo exchange of block-structured GPU codes (e.g. AMReX
 * FillBoundary with CUDA-aware transports). */
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "mb_cart.h"
#include "mb_cuda_halo.h"
#include "mb_halo.h"
#include "mb_log.h"
#include "mb_mpi.h"
#include "mb_nccl.h"
#include "mb_stencil_kernels.cuh"

using namespace mbst;

namespace {

/* How one face of the block gets its ghost planes. */
struct face_plan {
  int axis, side;
  face_mode mode; /* FACE_UNPACK: from a neighbour, through the halo plan; else filled here */
};

template <typename T> struct block {
  const mb_stencil_grid *g = nullptr;
  mb_cart *cart = nullptr;
  frame f;
  mb_dbuf buf[3];
  mb_halo *plan = nullptr;   /* the faces of the device frame (owned) */
  mb_cuda_halo *dh = nullptr; /* its device exchange (owned) */
  size_t halo_len = 0;       /* values sent (= received) per exchange */
  std::vector<face_plan> faces;
  box interior;
  std::vector<box> shell;
  /* the fused step (0: the faces-first step, the earlier one): the axes whose
   * ghost planes the steps' stores fill (wrap_copies), the others' wrap
   * and the Dirichlet faces filled once per buffer */
  int fused = 1, wrap = 0;
  /* the fused step's shell on the halo's urgent stream right after the
   * ghosts arrive (early_shell), its blocks scheduled among the interior's
   * still waiting; faces_done: the compute stream's per-step faces before
   * it; shell_done: the compute stream's wait for it */
  int early_shell = 0;
  cudaEvent_t faces_done = nullptr, shell_done = nullptr;
  cudaStream_t comp = nullptr;
  mb_nccl *nccl = nullptr; /* the plan's (mb_cart.nccl), not owned */
  mb_halo_transport transport = MB_HALO_MPI;
  ~block() {
    mb_cuda_halo_free(dh);
    mb_halo_free(plan);
    if (faces_done) cudaEventDestroy(faces_done);
    if (shell_done) cudaEventDestroy(shell_done);
    if (comp) cudaStreamDestroy(comp);
  }
  T *p(int k) const { return buf[k].template as<T>(); }
};

/* Whether IPC may copy the z faces straight between the blocks' arrays
 * (whole planes, mb_cuda_halo_share_arrays): where IPC may carry them
 * (asked for, or auto) and every rank of the grid is on one node (else
 * auto takes NCCL or MPI, which would carry the planes' edges for
 * nothing), unless the environment variable MB_STENCIL_IPC_DIRECT=0 (a
 * knob for measurements: the staged path's faces, packed and unpacked by
 * kernels, as before). Collective over the grid's communicator (the same
 * answer on every rank). */
static mb_error ipc_direct(const mb_cart *cart, mb_halo_transport want, bool *direct) {
  const char *env = getenv("MB_STENCIL_IPC_DIRECT");
  const bool asked = want == MB_HALO_IPC || want == MB_HALO_AUTO; /* the same on every rank */
  *direct = asked && !(env && !strcmp(env, "0"));
  if (!asked || cart->size == 1) return MB_SUCCESS;
  MPI_Comm node;
  int n = 0;
  MB_CALL_MPI(MPI_Comm_split_type(cart->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  const int rc = MPI_Comm_size(node, &n);
  MPI_Comm_free(&node);
  MB_CALL_MPI(rc);
  int one = *direct && n == cart->size;
  MB_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_INT, MPI_MIN, cart->comm));
  *direct = one != 0;
  return MB_SUCCESS;
}

/* The faces the halo plan carries: those with a neighbour on a cut axis,
 * less the grid's boundary faces of a Dirichlet stage (filled here); with
 * direct (ipc_direct), on slabs, the z faces as whole planes of the frame,
 * so that they go in one copy from this block's array into the
 * neighbour's. */
static unsigned plan_flags(const mb_stencil_grid *g, bool direct) {
  return MB_CART_PLAN_NO_SELF | (g->bc == MB_STENCIL_DIRICHLET ? MB_CART_PLAN_NO_OUTSIDE : 0u) |
         (direct ? MB_CART_PLAN_WHOLE_PLANES : 0u);
}

/* The face modes, the interior box and the shell around it. */
template <typename T> static void plan_faces(block<T> *b) {
  const mb_cart *c = b->cart;
  const unsigned flags = plan_flags(b->g, false); /* (which faces: the same for any shape) */
  int n[3] = {b->f.nz, b->f.ny, b->f.nx}, ilo[3], ihi[3];
  for (int a = 0; a < 3; a++) {
    ilo[a] = 0;
    ihi[a] = n[a];
    for (int s = 0; s < 2; s++) {
      face_plan fp = {a, s, FACE_WRAP};
      const bool at_edge = c->coords[a] == (s == 0 ? 0 : c->dims[a] - 1);
      if (mb_cart_face_exchanged(c, flags, a, s)) {
        fp.mode = FACE_UNPACK;
        if (s == 0) ilo[a] = std::min(G, n[a]);
        else ihi[a] = std::max(ilo[a], n[a] - G);
      } else if (b->g->bc == MB_STENCIL_DIRICHLET && at_edge) fp.mode = FACE_CONST;
      else if (c->dims[a] == 1) fp.mode = c->periodic ? FACE_WRAP : FACE_CONST;
      else fp.mode = FACE_CONST; /* no neighbour: beyond a non-periodic grid */
      b->faces.push_back(fp);
    }
  }
  for (int a = 0; a < 3; a++) {
    b->interior.lo[a] = ilo[a];
    b->interior.n[a] = ihi[a] - ilo[a];
  }
  /* the shell: slabs below and above the interior along z over the whole
   * block, then along y within the interior's z, then along x */
  for (int a = 0; a < 3; a++)
    for (int s = 0; s < 2; s++) {
      box x;
      for (int e = 0; e < 3; e++) {
        x.lo[e] = e < a ? ilo[e] : 0;
        x.n[e] = e < a ? ihi[e] - ilo[e] : n[e];
      }
      x.lo[a] = s == 0 ? 0 : ihi[a];
      x.n[a] = s == 0 ? ilo[a] : n[a] - ihi[a];
      if (!x.empty()) b->shell.push_back(x);
    }
}

/* Whether the ghost planes of face fp of u are filled on the compute
 * stream before each stencil: every face that needs no neighbour in the
 * earlier step; in the fused step only the wrap of an axis the stores do
 * not fill (a block thinner than 4 planes). */
template <typename T> static bool per_step(const block<T> *b, const face_plan &fp) {
  if (fp.mode == FACE_UNPACK) return false;
  if (!b->fused) return true;
  return fp.mode == FACE_WRAP && !(b->wrap & (1 << fp.axis));
}

/* The ghost faces of the block's buffers before the first step (fused
 * step): the Dirichlet faces of every buffer (nothing else writes them),
 * the periodic wrap of u, the op's input (the steps' stores keep it for
 * their outputs). On the compute stream. */
template <typename T> static mb_error prefill(block<T> *b, int nbuf, T *u) {
  for (const face_plan &fp : b->faces) {
    if (fp.mode == FACE_CONST)
      for (int k = 0; k < nbuf; k++)
        MB_CALL(face<T>(b->f, fp.axis, fp.side, fp.mode, (T)b->g->outside, b->p(k), nullptr,
                        b->comp));
    if (fp.mode == FACE_WRAP)
      MB_CALL(face<T>(b->f, fp.axis, fp.side, fp.mode, T(0), u, nullptr, b->comp));
  }
  return MB_SUCCESS;
}

/* Start the halo of u: the engine's forward exchange (pack, and with NCCL
 * send and unpack, on its urgent stream after the compute stream's work so
 * far); the faces filled per step (per_step) on the compute stream. */
template <typename T> static mb_error halo_begin(block<T> *b, T *u) {
  MB_CALL(mb_cuda_halo_begin(b->dh, MB_HALO_FORWARD, u, b->transport, b->nccl));
  for (const face_plan &fp : b->faces)
    if (per_step(b, fp))
      MB_CALL(face<T>(b->f, fp.axis, fp.side, fp.mode, (T)b->g->outside, u, nullptr, b->comp));
  return MB_SUCCESS;
}

/* Finish the halo of u: (MPI) the messages through the host and the
 * unpack; the compute stream waits for the ghosts. */
template <typename T> static mb_error halo_end(block<T> *b, T *u) {
  MB_CALL(mb_cuda_halo_end(b->dh, u));
  return MB_SUCCESS;
}

/* One trial of the halo engine's transport choice: `count` halo exchanges
 * of u with transport t, waited for on the device; count 0 waits for the
 * device's earlier work. */
template <typename T> struct trial_ctx {
  block<T> *b;
  T *u;
};

template <typename T>
static mb_error trial_halo(void *ctx, mb_halo_transport t, mb_nccl *nccl, int count) {
  trial_ctx<T> *x = static_cast<trial_ctx<T> *>(ctx);
  block<T> *b = x->b;
  if (count == 0) {
    MB_CALL_CUDA(cudaDeviceSynchronize());
    return MB_SUCCESS;
  }
  b->transport = t;
  b->nccl = nccl;
  for (int k = 0; k < count; k++) {
    MB_CALL(halo_begin<T>(b, x->u));
    MB_CALL(halo_end<T>(b, x->u));
  }
  MB_CALL_CUDA(cudaStreamSynchronize(b->comp));
  return MB_SUCCESS;
}

/* The transport by the halo engine's one rule (mb_halo_choose_transport,
 * also smoothing's). The plan keeps the NCCL communicator and auto's
 * choice per dtype for its later ops (mb_cart.nccl, .gpu_transport), so
 * auto is measured once per grid. Collective. */
template <typename T> static mb_error choose_transport(block<T> *b, mb_halo_transport want, T *u) {
  mb_cart *c = b->cart;
  int *chosen = &c->gpu_transport[sizeof(T) == 4 ? 0 : 1];
  b->transport = MB_HALO_MPI;
  b->nccl = nullptr;
  if (c->size == 1 || want == MB_HALO_MPI) return MB_SUCCESS;
  if (want == MB_HALO_AUTO && *chosen) { /* the same on every rank */
    b->transport = (mb_halo_transport)*chosen;
    b->nccl = b->transport == MB_HALO_NCCL ? c->nccl : nullptr;
    return MB_SUCCESS;
  }
  trial_ctx<T> ctx = {b, u};
  mb_halo_transport t = MB_HALO_MPI;
  MB_CALL(mb_halo_choose_transport(c->comm, want, "grid block", trial_halo<T>, &ctx, &c->nccl, &t));
  b->transport = t;
  b->nccl = t == MB_HALO_NCCL ? c->nccl : nullptr;
  if (want == MB_HALO_AUTO) *chosen = (int)t;
  if (!c->nccl && want != MB_HALO_IPC && t == MB_HALO_MPI) /* neither NCCL nor IPC */
    c->gpu_transport[0] = c->gpu_transport[1] = MB_HALO_MPI;
  return MB_SUCCESS;
}

template <typename T>
static mb_error block_setup(block<T> *b, const mb_stencil_grid *g, mb_cart *cart, int nbuf,
                            bool fused, bool direct) {
  b->g = g;
  b->cart = cart;
  b->fused = fused;
  b->f = frame_of<T>(g->n);
  const size_t bytes = sizeof(T) * b->f.points();
  MB_CALL_CUDA(cudaStreamCreateWithFlags(&b->comp, cudaStreamNonBlocking));
  for (int k = 0; k < nbuf; k++) { /* on the compute stream: it does not wait for the legacy one */
    MB_CALL(mb_dbuf_alloc(&b->buf[k], bytes, "framed grid block"));
    MB_CALL_CUDA(cudaMemsetAsync(b->buf[k].p, 0, bytes, b->comp));
  }
  plan_faces<T>(b);
  const int n[3] = {b->f.nz, b->f.ny, b->f.nx};
  for (int a = 0; a < 3 && fused; a++)
    if (b->faces[2 * a].mode == FACE_WRAP && b->faces[2 * a + 1].mode == FACE_WRAP && n[a] >= G)
      b->wrap |= 1 << a;
  /* the device frame: owned point (z, y, x) at f.at(z, y, x), rows padded */
  mb_cart_frame fr;
  fr.origin = b->f.at(0, 0, 0);
  fr.stride[0] = b->f.sz;
  fr.stride[1] = b->f.sy;
  fr.stride[2] = 1;
  fr.width = G;
  MB_CALL(mb_cart_plan_frame(cart, &fr, plan_flags(g, direct), &b->plan));
  int nn;
  int64_t nsend, nrecv;
  mb_halo_stats(b->plan, &nn, &nsend, &nrecv);
  b->halo_len = (size_t)nsend;
  MB_CALL(mb_cuda_halo_create(b->plan, 1, (int)sizeof(T), b->comp, &b->dh));
  mb_cuda_halo_set_post_at_end(b->dh, 1); /* the interior overlaps the pack and the copies */
  /* the time levels, for IPC's copies straight into the neighbours' ghost
   * planes: every rank rotates them in step, reads a step's ghosts before
   * the next exchange and writes only the level not exchanged */
  void *levels[3] = {nullptr, nullptr, nullptr};
  for (int k = 0; k < nbuf; k++) levels[k] = b->buf[k].p;
  if (direct) MB_CALL(mb_cuda_halo_share_arrays(b->dh, nbuf, levels));
  const char *env = getenv("MB_STENCIL_SHELL"); /* early (the default) or after */
  b->early_shell = fused && !b->shell.empty() && !(env && !strcmp(env, "after"));
  if (b->early_shell) {
    MB_CALL_CUDA(cudaEventCreateWithFlags(&b->faces_done, cudaEventDisableTiming));
    MB_CALL_CUDA(cudaEventCreateWithFlags(&b->shell_done, cudaEventDisableTiming));
  }
  return MB_SUCCESS;
}

/* Timing events of one step (figures only): on the compute stream the
 * step's start, after the faces, the interior, the wait for the halo and
 * the shell; on the halo stream (mb_cuda_halo_time_next) the pack's start,
 * its end, the transport's end and the unpack's end. */
enum { EV_C0, EV_CF, EV_C1, EV_C2, EV_C3, EV_H0, EV_H1, EV_H2, EV_H3, EV_COUNT };

/* One stencil op from cur into out over the whole block, the halo
 * overlapped with the interior; ev (EV_COUNT events or null) times it.
 * The fused step writes the wrap of b->wrap's axes as it stores (heat and
 * wave only: their outputs are the next step's input) and computes the
 * shell's slabs in one launch; with early_shell that launch goes on the
 * halo's urgent stream after the unpack (and after the compute stream's
 * per-step faces), so its blocks start as soon as the ghosts are there,
 * ahead of the interior's blocks still waiting, instead of after the
 * whole interior; the compute stream waits for it at the step's end. The
 * shell and the interior write disjoint points of out (and their wrap
 * images) and only read cur, so the bits are the same either way. */
template <typename T>
static mb_error step(block<T> *b, int op, T *cur, const T *prev, T *out, T a, cudaEvent_t *ev) {
  const int wrap = b->fused && (op == OP_HEAT || op == OP_WAVE) ? b->wrap : 0;
  if (ev) {
    MB_CALL_CUDA(cudaEventRecord(ev[EV_C0], b->comp));
    void *hev[4] = {ev[EV_H0], ev[EV_H1], ev[EV_H2], ev[EV_H3]};
    mb_cuda_halo_time_next(b->dh, hev);
  }
  MB_CALL(halo_begin<T>(b, cur));
  if (ev) MB_CALL_CUDA(cudaEventRecord(ev[EV_CF], b->comp));
  if (b->early_shell) MB_CALL_CUDA(cudaEventRecord(b->faces_done, b->comp));
  MB_CALL(apply_boxes<T>(op, b->f, &b->interior, 1, b->g->h, cur, prev, out, a, b->comp, wrap));
  if (ev) MB_CALL_CUDA(cudaEventRecord(ev[EV_C1], b->comp));
  MB_CALL(halo_end<T>(b, cur));
  if (b->early_shell) { /* the halo stream: after the unpack (halo_end enqueued MPI's) */
    cudaStream_t hs = (cudaStream_t)mb_cuda_halo_stream(b->dh);
    MB_CALL_CUDA(cudaStreamWaitEvent(hs, b->faces_done, 0));
    MB_CALL(apply_boxes<T>(op, b->f, b->shell.data(), (int)b->shell.size(), b->g->h, cur, prev,
                           out, a, hs, wrap));
    MB_CALL_CUDA(cudaEventRecord(b->shell_done, hs));
    MB_CALL_CUDA(cudaStreamWaitEvent(b->comp, b->shell_done, 0));
  }
  if (ev) MB_CALL_CUDA(cudaEventRecord(ev[EV_C2], b->comp));
  /* the shell on the compute stream (early_shell: it ran on the halo
   * stream, and wait_ms holds what of it was not hidden) */
  if (b->fused && !b->early_shell)
    MB_CALL(apply_boxes<T>(op, b->f, b->shell.data(), (int)b->shell.size(), b->g->h, cur, prev,
                           out, a, b->comp, wrap));
  else if (!b->fused)
    for (const box &x : b->shell)
      MB_CALL(apply_box<T>(op, b->f, x, b->g->h, cur, prev, out, a, b->comp));
  if (ev) MB_CALL_CUDA(cudaEventRecord(ev[EV_C3], b->comp));
  return MB_SUCCESS;
}

/* The figures of the timed steps from their events (EV_COUNT per step),
 * the wall time t_wall (s) of the timed steps and the host's enqueue time
 * t_host (s). */
static mb_error step_figures(const std::vector<cudaEvent_t> &ev, int64_t timed, double t_wall,
                             double t_host, mb_stencil_block_figures *fig) {
  memset(fig, 0, offsetof(mb_stencil_block_figures, halo_bytes));
  if (!timed) return MB_SUCCESS;
  const double per = 1.0 / (double)timed;
  fig->step_ms = 1e3 * t_wall * per;
  fig->host_ms = 1e3 * t_host * per;
  auto ms = [](cudaEvent_t a, cudaEvent_t b, double *acc, double w) {
    float t = 0;
    if (cudaEventElapsedTime(&t, a, b) != cudaSuccess) return false;
    *acc += w * t;
    return true;
  };
  bool ok = true;
  double inside = 0, span = 0;
  for (int64_t s = 0; s < timed && ok; s++) {
    const cudaEvent_t *x = &ev[(size_t)s * EV_COUNT];
    ok = ms(x[EV_C0], x[EV_CF], &fig->fill_ms, per) &&
         ms(x[EV_CF], x[EV_C1], &fig->interior_ms, per) &&
         ms(x[EV_C1], x[EV_C2], &fig->wait_ms, per) &&
         ms(x[EV_C2], x[EV_C3], &fig->shell_ms, per) &&
         ms(x[EV_C0], x[EV_C3], &inside, per) && ms(x[EV_C0], x[EV_H3], &fig->exchange_ms, per) &&
         ms(x[EV_C0], x[EV_H0], &fig->lag_ms, per) && ms(x[EV_H0], x[EV_H1], &fig->pack_ms, per) &&
         ms(x[EV_H1], x[EV_H2], &fig->transport_ms, per) &&
         ms(x[EV_H2], x[EV_H3], &fig->unpack_ms, per);
  }
  if (ok) ok = ms(ev[EV_C0], ev[(size_t)(timed - 1) * EV_COUNT + EV_C3], &span, per);
  MB_CHECK(ok, MB_ERR_CUDA, "stencil step timing failed");
  fig->between_ms = span - inside;
  fig->rest_ms = fig->step_ms - span;
  return MB_SUCCESS;
}

template <typename T>
static mb_error block_t(const mb_stencil_grid *g, mb_cart *cart, mb_halo_transport want, int op,
                        double coef, int64_t nsteps, void *u, void *out,
                        mb_stencil_block_figures *fig, const mb_stencil_cuda_stop *stop) {
  block<T> b;
  const int nbuf = op == 5 ? 3 : 2;
  /* the step: fused unless fig asks for faces-first (MB_STENCIL_STEP_AUTO's
   * rule, mb_stencil_cuda.h) */
  const int want_step = fig ? fig->step : MB_STENCIL_STEP_AUTO;
  const bool fused = want_step != MB_STENCIL_STEP_FACES_FIRST;
  if (fig) fig->fused = fused;
  bool direct = false; /* first: collective, before anything that may fail on one rank */
  MB_CALL(ipc_direct(cart, want, &direct));
  MB_CALL(block_setup<T>(&b, g, cart, nbuf, fused, direct));
  MB_CALL(frame_copy<T>(b.f, b.p(0), u, true, b.comp));
  MB_CALL(prefill<T>(&b, nbuf, b.p(0)));
  MB_CALL(choose_transport<T>(&b, want, b.p(0)));
  if (op <= 3) {
    MB_CALL(step<T>(&b, op, b.p(0), nullptr, b.p(1), T(0), nullptr));
    return frame_copy<T>(b.f, b.p(1), out, false, b.comp);
  }
  if (op == 6) { /* one halo, three derivatives: z overlapped with it, then y and x */
    const size_t n = (size_t)b.f.nz * (size_t)b.f.ny * (size_t)b.f.nx;
    MB_CALL(step<T>(&b, OP_DZ, b.p(0), nullptr, b.p(1), T(0), nullptr));
    MB_CALL(frame_copy<T>(b.f, b.p(1), out, false, b.comp));
    for (int k = 1; k < 3; k++) {
      MB_CALL(apply_box<T>(k == 1 ? OP_DY : OP_DX, b.f, whole(b.f), g->h, b.p(0), nullptr,
                           b.p(1), T(0), b.comp));
      MB_CALL(frame_copy<T>(b.f, b.p(1), static_cast<T *>(out) + k * n, false, b.comp));
    }
    return MB_SUCCESS;
  }
  T *cur = b.p(0), *nxt = b.p(1), *prev = op == 5 ? b.p(2) : nullptr;
  if (op == 5) /* from rest: prev = u + (c dt)^2 / 2 lap(u), a heat step with half the coefficient */
    MB_CALL(step<T>(&b, OP_HEAT, cur, nullptr, prev, (T)(0.5 * coef), nullptr));
  /* stop points at the same steps on every rank: from the whole grid's points */
  stop_points sp;
  MB_CALL(sp.init(stop, (double)cart->n[0] * (double)cart->n[1] * (double)cart->n[2] /
                            (double)cart->size));
  /* timed steps: the first half (rounded up) with the timeline's events,
   * the second half plain (plain_step_ms) */
  const int64_t skip = fig ? std::min<int64_t>(std::max(fig->warmup, 0), nsteps) : 0;
  const int64_t nev = (nsteps - skip + 1) / 2, plain_at = skip + nev;
  std::vector<cudaEvent_t> ev(fig ? (size_t)nev * EV_COUNT : 0);
  for (cudaEvent_t &e : ev) MB_CALL_CUDA(cudaEventCreate(&e));
  double t0 = 0, t_host = 0, t_events = 0, t1 = 0;
  mb_error e = MB_SUCCESS;
  for (int64_t s = 0; s < nsteps && !e; s++) {
    int halt = 0;
    e = sp.at(s, b.comp, &halt);
    if (!e && halt) {
      for (cudaEvent_t &x : ev) cudaEventDestroy(x);
      return sp.stopped(b.comp);
    }
    if (fig && (s == skip || s == plain_at)) {
      if (cudaStreamSynchronize(b.comp) != cudaSuccess)
        e = mb_error_set(MB_ERR_CUDA, __FILE__, __LINE__, __func__, "stencil steps failed");
      const int rc = MPI_Barrier(cart->comm); /* unagreed: ends the job (mb_error.h) */
      if (!e && rc != MPI_SUCCESS)
        e = mb_error_mpi_failed(rc, __FILE__, __LINE__, __func__, "MPI_Barrier(cart->comm)");
      if (s == skip) t0 = MPI_Wtime();
      else {
        t1 = MPI_Wtime();
        t_events = t1 - t0;
      }
    }
    cudaEvent_t *se = fig && s >= skip && s < plain_at ? &ev[(size_t)(s - skip) * EV_COUNT] : nullptr;
    const double h0 = se ? MPI_Wtime() : 0;
    if (!e) e = step<T>(&b, op == 4 ? OP_HEAT : OP_WAVE, cur, prev, nxt, (T)coef, se);
    if (se) t_host += MPI_Wtime() - h0;
    if (op == 4) std::swap(cur, nxt);
    else {
      T *t = prev;
      prev = cur;
      cur = nxt;
      nxt = t;
    }
  }
  if (!e && cudaStreamSynchronize(b.comp) != cudaSuccess)
    e = mb_error_set(MB_ERR_CUDA, __FILE__, __LINE__, __func__, "stencil steps failed on the device");
  if (!e && fig) {
    const double now = MPI_Wtime();
    if (plain_at >= nsteps) t_events = now - t0; /* no plain half */
    e = step_figures(ev, nev, t_events, t_host, fig);
    fig->plain_step_ms = plain_at < nsteps ? 1e3 * (now - t1) / (double)(nsteps - plain_at)
                                           : fig->step_ms;
    fig->halo_bytes = (double)(sizeof(T) * b.halo_len);
    fig->transport = b.halo_len ? (int)b.transport : 0;
  }
  for (cudaEvent_t &x : ev) cudaEventDestroy(x);
  MB_CALL(e);
  return frame_copy<T>(b.f, cur, u, false, b.comp);
}

} // namespace

extern "C" mb_error mb_stencil_cuda_block(const mb_stencil_grid *blk, int f32, struct mb_cart *cart,
                                          int halo, int op, double coef, int64_t nsteps, void *u,
                                          void *out, mb_stencil_block_figures *fig,
                                          const mb_stencil_cuda_stop *stop) {
  MB_CHECK(blk && cart && op >= 0 && op <= 6 && nsteps >= 0 && blk->ghost == 0, MB_ERR_ARG,
           "mb_stencil_cuda_block: bad arguments");
  for (int a = 0; a < 3; a++)
    MB_CHECK(blk->n[a] == cart->nloc[a] && blk->n[a] < (1 << 24), MB_ERR_ARG,
             "mb_stencil_cuda_block: the block's shape is not the plan's");
  const mb_halo_transport want = (mb_halo_transport)halo;
  mb_error e = f32 ? block_t<float>(blk, cart, want, op, coef, nsteps, u, out, fig, stop)
                   : block_t<double>(blk, cart, want, op, coef, nsteps, u, out, fig, stop);
  if (e) (void)cudaGetLastError();
  return e;
}
