/* meshbatch: the smooth room: the taubin and laplacian ops, registered from
 * their parameter tables (see mb_op.h), and their backend entries.
 *
 * Method: G. Taubin, "A signal processing approach to fair surface design",
 * SIGGRAPH 1995, sections 3-4; M. Desbrun et al., "Implicit fairing of
 * irregular meshes", SIGGRAPH 1999, eq. (5) for cotangent weights.
 */
#include "mb_smooth_op.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_alloc.h"
#include "mb_smooth_cuda.h"
#include "mb_distributed.h"
#include "mb_log.h"
#include "mb_mpi.h"
#include "mb_domain.h"
#include "mb_smooth_partitioned.h"

/* ------------------------------------------------------------ backends */

static const char *const locality_names[] = {"sfc", "rcm", "none"};

const char *mb_smooth_locality_name(mb_locality kind) {
  return (unsigned)kind < 3 ? locality_names[kind] : "?";
}

mb_error mb_smooth_locality_parse(const char *name, mb_locality *kind) {
  for (int k = 0; k < 3; k++)
    if (name && !strcmp(name, locality_names[k])) {
      *kind = (mb_locality)k;
      return MB_SUCCESS;
    }
  MB_FAIL(MB_ERR_ARG, "unknown vertex order '%s': use sfc, rcm or none", name ? name : "(null)");
}

mb_error mb_smooth_locality_default(mb_locality *kind) {
  const char *env = getenv("MESHBATCH_LOCALITY");
  *kind = MB_LOCALITY_SFC;
  if (env && *env && mb_smooth_locality_parse(env, kind))
    MB_FAIL(MB_ERR_ARG, "MESHBATCH_LOCALITY='%s': use sfc, rcm or none", env);
  return MB_SUCCESS;
}

unsigned mb_smooth_locality_needs(const mb_smooth_stage *stages, int nstages) {
  unsigned need = 0;
  for (int k = 0; k < nstages; k++) {
    if (stages[k].weights == MB_WEIGHTS_COTANGENT) need |= MB_ADJ_OPPOSITE;
    if (stages[k].boundary != MB_BOUNDARY_FREE) need |= MB_ADJ_BOUNDARY;
  }
  return need;
}

/* Rows of [nv, 3] positions between the mesh order and the order perm
 * (new vertex v is old perm[v]): to[v] = from[perm[v]] (gather), or
 * to[perm[v]] = from[v] (scatter). */
static void gather_rows(int64_t nv, const int64_t *perm, const double *from, double *to) {
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < nv; v++) memcpy(to + 3 * v, from + 3 * perm[v], 3 * sizeof(double));
}

static void scatter_rows(int64_t nv, const int64_t *perm, const double *from, double *to) {
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < nv; v++) memcpy(to + 3 * perm[v], from + 3 * v, 3 * sizeof(double));
}

mb_error mb_smooth_locality_order(const mb_adjacency *adj, const double *xyz, mb_locality kind,
                                  unsigned need, int64_t **perm, mb_adjacency **padj,
                                  double **pxyz, double seconds[2]) {
  const int64_t nv = adj->nv;
  *perm = NULL;
  *padj = NULL;
  *pxyz = NULL;
  if (seconds) seconds[0] = seconds[1] = 0;
  MB_CHECK(kind == MB_LOCALITY_SFC || kind == MB_LOCALITY_RCM || kind == MB_LOCALITY_NONE,
           MB_ERR_ARG, "unknown vertex order %d", (int)kind);
  if (kind == MB_LOCALITY_NONE) return MB_SUCCESS;
  const double t0 = mb_wtime();
  *perm = mb_alloc(sizeof **perm * (size_t)(nv ? nv : 1));
  *pxyz = mb_alloc(sizeof **pxyz * 3 * (size_t)(nv ? nv : 1));
  mb_error e = *perm && *pxyz ? MB_SUCCESS
                              : mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                                             "out of memory for %lld vertices", (long long)nv);
  if (!e) e = kind == MB_LOCALITY_RCM ? mb_adjacency_rcm(adj, *perm)
                                      : mb_adjacency_sfc(nv, xyz, *perm);
  const double t1 = mb_wtime();
  if (!e) e = mb_adjacency_permute_opts(adj, *perm, need, padj);
  if (!e) gather_rows(nv, *perm, xyz, *pxyz);
  if (e) {
    free(*perm);
    free(*pxyz);
    mb_adjacency_free(*padj);
    *perm = NULL;
    *pxyz = NULL;
    *padj = NULL;
    MB_CALL(e);
  }
  if (seconds) {
    seconds[0] = t1 - t0;
    seconds[1] = mb_wtime() - t1;
  }
  return MB_SUCCESS;
}

/* The CUDA backend on the locality order (MESHBATCH_LOCALITY, default the
 * Hilbert order); results put back in mesh order. */
static mb_error cuda_smooth(const mb_adjacency *adj, const mb_smooth_stage *stages, int nstages,
                            mb_precision precision, double *xyz, double *device_s) {
  int64_t *perm;
  mb_adjacency *padj;
  double *pxyz, sec[2];
  mb_locality kind;
  MB_CALL(mb_smooth_locality_default(&kind));
  MB_CALL(mb_smooth_locality_order(adj, xyz, kind, mb_smooth_locality_needs(stages, nstages),
                                   &perm, &padj, &pxyz, sec));
  const double t1 = mb_wtime();
  mb_error e = mb_cuda_smooth(padj ? padj : adj, stages, nstages, precision, pxyz ? pxyz : xyz);
  mb_log(MB_LOG_VERBOSE, "[smooth] %lld vertices: locality order (%s) %.3f s, renumbering "
         "%.3f s, device (upload, passes, download) %.3f s", (long long)adj->nv,
         mb_smooth_locality_name(kind), sec[0], sec[1], mb_wtime() - t1);
  if (device_s) *device_s += mb_wtime() - t1;
  if (!e && perm) scatter_rows(adj->nv, perm, pxyz, xyz);
  free(perm);
  free(pxyz);
  mb_adjacency_free(padj);
  MB_CALL(e);
  return MB_SUCCESS;
}

/* ----------------------------------------- the CUDA path's device build */

mb_error mb_smooth_adjacency_default(int *on_device) {
  const char *env = getenv("MESHBATCH_ADJACENCY");
  *on_device = 1;
  if (!env || !*env || !strcmp(env, "device")) return MB_SUCCESS;
  if (!strcmp(env, "host")) {
    *on_device = 0;
    return MB_SUCCESS;
  }
  MB_FAIL(MB_ERR_ARG, "MESHBATCH_ADJACENCY='%s': use device or host", env);
}

/* Whether the device builder takes this mesh in this order: the Hilbert
 * order or the mesh's own (reverse Cuthill-McKee needs the host
 * adjacency), fewer than 2^31 vertices and 2^30 face indices (its int32
 * indices; mb_cuda_smooth_mesh). */
static int device_build_fits(const mb_mesh *m, mb_locality kind) {
  const int64_t nidx = m->nf > 0 ? m->face_offsets[m->nf] : 0;
  return kind != MB_LOCALITY_RCM && m->nv < INT32_MAX && nidx < INT32_MAX / 2;
}

/* The CUDA backend with the adjacency built on the device from the face
 * list (mb_cuda_smooth_mesh), in the order of MESHBATCH_LOCALITY (sfc or
 * none; the Hilbert order is computed here from the positions), results
 * put back in mesh order. Bitwise the results of the host-built path. */
static mb_error cuda_smooth_mesh(mb_mesh *m, const mb_smooth_stage *stages, int nstages,
                                 mb_precision precision, mb_locality kind, double *device_s) {
  const int64_t nv = m->nv;
  int64_t *perm = NULL;
  double *pxyz = NULL, order_s = 0, gather_s = 0, sec[2] = {0, 0};
  mb_error e = MB_SUCCESS;
  if (kind == MB_LOCALITY_SFC && nv > 0) {
    const double t0 = mb_wtime();
    perm = mb_alloc(sizeof *perm * (size_t)nv);
    pxyz = mb_alloc(sizeof *pxyz * 3 * (size_t)nv);
    if (!perm || !pxyz)
      e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                       "out of memory for the vertex order of %lld vertices", (long long)nv);
    if (!e) e = mb_adjacency_sfc(nv, m->xyz, perm);
    const double t1 = mb_wtime();
    if (!e) gather_rows(nv, perm, m->xyz, pxyz);
    order_s = t1 - t0;
    gather_s = mb_wtime() - t1;
  }
  if (!e) e = mb_cuda_smooth_mesh(m, perm, stages, nstages, precision, pxyz ? pxyz : m->xyz, sec);
  if (!e) {
    if (device_s) *device_s += sec[0] + sec[1];
    mb_log(MB_LOG_VERBOSE, "[smooth] %s: adjacency on the device %.3f s", m->name, sec[0]);
    mb_log(MB_LOG_VERBOSE, "[smooth] %lld vertices: locality order (%s) %.3f s, positions "
           "reordered %.3f s, device (upload, passes, download) %.3f s", (long long)nv,
           mb_smooth_locality_name(kind), order_s, gather_s, sec[1]);
  }
  if (!e && perm) scatter_rows(nv, perm, pxyz, m->xyz);
  free(perm);
  free(pxyz);
  MB_CALL(e);
  return MB_SUCCESS;
}

mb_error mb_smooth_backend_run(const mb_backend *b, const mb_adjacency *adj,
                               const mb_smooth_stage *stages, int nstages, mb_precision precision,
                               double *xyz, double *device_s) {
  if (b->kind == MB_BACKEND_CUDA)
    MB_CALL(cuda_smooth(adj, stages, nstages, precision, xyz, device_s));
  else
    MB_CALL(mb_smooth_cpu(adj, stages, nstages, xyz));
  return MB_SUCCESS;
}

/* ------------------------------------------------------------ entry points */

/* The precision the passes compute in: the job's on the GPU, float64 on the
 * CPU (provenance). */
static void report_precision(const mb_op_ctx *ctx) {
  mb_op_computed(ctx, ctx->backend->kind == MB_BACKEND_CUDA ? ctx->precision
                                                            : MB_PRECISION_FLOAT64);
}

/* The smooth stages of a group, as the room's own struct. */
static mb_error smooth_stages(const mb_stage *stages, int n, mb_smooth_stage **out) {
  MB_CALLOC(*out, n);
  for (int k = 0; k < n; k++) (*out)[k] = *(const mb_smooth_stage *)stages[k].params;
  return MB_SUCCESS;
}

/* The stages of a group with the run's stop query (mb_smooth_stage.ctx). */
static mb_error smooth_stages_ctx(const mb_op_ctx *ctx, const mb_stage *stages, int n,
                                  mb_smooth_stage **out) {
  MB_CALL(smooth_stages(stages, n, out));
  for (int k = 0; k < n; k++) (*out)[k].ctx = ctx;
  return MB_SUCCESS;
}

/* Per mesh: one adjacency for the whole group of stages, positions kept on
 * the device across stages on the CUDA backend. */
static mb_error smooth_run(const mb_op_ctx *ctx, const mb_stage *stages, int n, mb_mesh **mesh) {
  mb_smooth_stage *st = NULL;
  mb_adjacency *adj = NULL;
  mb_error e;
  MB_CALL(smooth_stages_ctx(ctx, stages, n, &st));
  report_precision(ctx);
  /* positions times 2^k for the passes, 2^-k after (mb_smooth.h, "Scale";
   * k = 0 at ordinary scales) */
  double maxabs = 0;
  int k = 0;
  MB_CALL_GOTO(e, done, mb_smooth_maxabs((*mesh)->nv, (*mesh)->xyz, &maxabs));
  k = mb_smooth_scale_exponent(maxabs);
  if (k) {
    mb_log(MB_LOG_VERBOSE, "[smooth] %s: largest coordinate %g: positions scaled by 2^%d for "
           "the passes", (*mesh)->name, maxabs, k);
    MB_CALL_GOTO(e, done, mb_smooth_scale_rows((*mesh)->nv, (*mesh)->xyz, k));
  }
  if (ctx->backend->kind == MB_BACKEND_CUDA) {
    /* the adjacency built on the device from the faces, unless
     * MESHBATCH_ADJACENCY=host, the order is rcm, or the mesh is too large
     * for its int32 indices; out of device memory, the host build */
    int on_device = 0;
    mb_locality kind;
    MB_CALL_GOTO(e, done, mb_smooth_adjacency_default(&on_device));
    MB_CALL_GOTO(e, done, mb_smooth_locality_default(&kind));
    if (on_device && device_build_fits(*mesh, kind)) {
      e = cuda_smooth_mesh(*mesh, st, n, ctx->precision, kind, ctx->device_s);
      if (e != MB_ERR_MEMORY) goto done;
      mb_log(MB_LOG_VERBOSE, "[smooth] %s: the device build ran out of memory (%s); building "
             "the adjacency on the host", (*mesh)->name, mb_error_message());
      mb_error_clear();
    } else if (on_device) {
      mb_log(MB_LOG_VERBOSE, "[smooth] %s: adjacency built on the host (%s)", (*mesh)->name,
             kind == MB_LOCALITY_RCM ? "the rcm order needs it"
                                     : "too large for the device builder's int32 indices");
    }
  }
  unsigned need = 0; /* opposite vertices only for cotangent weights */
  for (int k = 0; k < n; k++)
    if (st[k].weights == MB_WEIGHTS_COTANGENT) need |= MB_ADJ_OPPOSITE;
  const double t0 = mb_wtime();
  MB_CALL_GOTO(e, done, mb_adjacency_build_opts(*mesh, need, &adj));
  mb_log(MB_LOG_VERBOSE, "[smooth] %s: adjacency %.3f s", (*mesh)->name, mb_wtime() - t0);
  for (int k = 0; k < n; k++) MB_CALL_GOTO(e, done, mb_smooth_check(&st[k], adj));
  MB_CALL_GOTO(e, done, mb_smooth_backend_run(ctx->backend, adj, st, n, ctx->precision,
                                              (*mesh)->xyz, ctx->device_s));
done:
  if (k) {
    const mb_error e2 = mb_smooth_scale_rows((*mesh)->nv, (*mesh)->xyz, -k);
    if (!e) e = e2;
  }
  mb_adjacency_free(adj);
  free(st);
  return e;
}

static mb_error smooth_run_partitioned(const mb_op_ctx *ctx, const mb_stage *stages, int n,
                                       mb_domain *domain) {
  mb_distributed_mesh *dm = domain->dm;
  mb_smooth_stage *st = NULL;
  MB_CALL(smooth_stages_ctx(ctx, stages, n, &st));
  report_precision(ctx);
  mb_error e = MB_SUCCESS;
  for (int k = 0; !e && k < n; k++) e = mb_smooth_check(&st[k], dm->domain->adj);
  /* the scale of the whole mesh: the largest coordinate over all ranks
   * (MPI_MAX is exact), so every rank and the one-rank run scale alike */
  const int64_t nlocal = dm->domain->nowned + dm->domain->nghost;
  double maxabs = 0;
  if (!e) e = mb_smooth_maxabs(nlocal, dm->x, &maxabs);
  MB_CALL_GOTO(e, done, mb_agree(dm->comm, e));
  MB_CALL_MPI_AGREED(dm->comm,
                     MPI_Allreduce(MPI_IN_PLACE, &maxabs, 1, MPI_DOUBLE, MPI_MAX, dm->comm));
  const int scale = mb_smooth_scale_exponent(maxabs);
  (void)mb_smooth_scale_rows(nlocal, dm->x, scale); /* finite: |x| <= maxabs, scaled below 1 */
  if (ctx->backend->kind == MB_BACKEND_CUDA)
    e = mb_smooth_partitioned_cuda(dm->domain, dm->halo, st, n, ctx->precision,
                                   ctx->halo, dm->x, ctx->timing);
  else
    e = mb_smooth_partitioned_cpu(dm->domain, dm->halo, st, n, dm->x, ctx->timing);
  {
    const mb_error e2 = mb_smooth_scale_rows(nlocal, dm->x, -scale);
    if (!e) e = e2;
  }
done: /* the runner agrees on the error (mb_runner.c) */
  free(st);
  return e;
}

/* face updates: faces x passes */
static double smooth_cost(int64_t nv, int64_t nf, const void *params) {
  (void)nv;
  return (double)nf * (double)mb_smooth_passes(params);
}

/* ------------------------------------------------------------ parameters */

#define MB_JOB_ITERATIONS_MAX 100000000

static const char *const weights_names[] = {"uniform", "cotangent", "inverse_distance", NULL};
static const char *const boundary_names[] = {"free", "fixed", "boundary_curve", NULL};

#define LAMBDA_PARAM                                                                         \
  {"lambda", MB_PARAM_REAL, offsetof(mb_smooth_stage, lambda), 0, 1, 1, 0, 0, 0.5, NULL,      \
   "first (shrinking) factor of a pass, in (0, 1]"}
#define ITERATIONS_PARAM                                                                     \
  {"iterations", MB_PARAM_INT, offsetof(mb_smooth_stage, iterations), 0,                    \
   MB_JOB_ITERATIONS_MAX, 0, 0, 1, 0, NULL, "number of iterations (required)"}
#define WEIGHTS_PARAM                                                                        \
  {"weights", MB_PARAM_NAME, offsetof(mb_smooth_stage, weights), 0, 0, 0, 0, 0,              \
   MB_WEIGHTS_UNIFORM, weights_names,                                                        \
   "umbrella operator weights: uniform, cotangent (triangles), inverse_distance"}
#define BOUNDARY_PARAM                                                                       \
  {"boundary", MB_PARAM_NAME, offsetof(mb_smooth_stage, boundary), 0, 0, 0, 0, 0,            \
   MB_BOUNDARY_FREE, boundary_names,                                                         \
   "boundary vertices: free, fixed, or boundary_curve (moved along the boundary)"}

static const mb_param taubin_params[] = {
    LAMBDA_PARAM,
    {"mu", MB_PARAM_REAL, offsetof(mb_smooth_stage, mu), -1, 0, 0, 1, 0, -0.53, NULL,
     "second (inflating) factor, in [-1, 0) with mu < -lambda"},
    ITERATIONS_PARAM, WEIGHTS_PARAM, BOUNDARY_PARAM};

static const mb_param laplacian_params[] = {LAMBDA_PARAM, ITERATIONS_PARAM, WEIGHTS_PARAM,
                                            BOUNDARY_PARAM};

static void taubin_init(void *params) { ((mb_smooth_stage *)params)->method = MB_SMOOTH_TAUBIN; }
static void laplacian_init(void *params) {
  ((mb_smooth_stage *)params)->method = MB_SMOOTH_LAPLACIAN;
}

/* Taubin 1995, section 4: mu < -lambda < 0. */
static int taubin_check(const void *params, const unsigned char *given, int *bad, char *msg,
                        size_t len) {
  const mb_smooth_stage *st = params;
  if (st->mu < -st->lambda) return 0;
  if (given[1]) {
    *bad = 1;
    snprintf(msg, len, "value %g must be below -lambda = %g (Taubin 1995, section 4: "
             "mu < -lambda < 0)", st->mu, -st->lambda);
  } else {
    *bad = 0;
    snprintf(msg, len, "value %g needs mu < %g (Taubin 1995, section 4), but the default mu "
             "is %g: give mu", st->lambda, -st->lambda, st->mu);
  }
  return 1;
}

#define SMOOTH_ENTRIES                                                                       \
  .in = MB_KIND_SURFACE, .out = MB_KIND_SURFACE, .params_size = sizeof(mb_smooth_stage),    \
  .cost = smooth_cost, .run = {smooth_run, smooth_run},                                      \
  .split = MB_SPLIT_VERTICES, .ghost_depth = 1,                                             \
  .run_partitioned = {smooth_run_partitioned, smooth_run_partitioned},    \
  .bench = mb_smooth_bench, .room = "smooth"

const mb_op_info mb_op_taubin = {
    .name = "taubin",
    .summary = "Taubin lambda|mu smoothing without shrinkage (one lambda and one mu pass per "
               "iteration)",
    .source = "G. Taubin, A signal processing approach to fair surface design, SIGGRAPH 1995, "
              "sections 3-4",
    .params = taubin_params,
    .nparams = (int)(sizeof taubin_params / sizeof taubin_params[0]),
    .init = taubin_init,
    .check = taubin_check,
    SMOOTH_ENTRIES};

const mb_op_info mb_op_laplacian = {
    .name = "laplacian",
    .summary = "Laplacian smoothing (one lambda pass per iteration)",
    .source = "G. Taubin, SIGGRAPH 1995, section 3 (umbrella operator); M. Desbrun et al., "
              "SIGGRAPH 1999, eq. (5) (cotangent weights)",
    .params = laplacian_params,
    .nparams = (int)(sizeof laplacian_params / sizeof laplacian_params[0]),
    .init = laplacian_init,
    SMOOTH_ENTRIES};
