/* meshbatch: the ops implicit_fairing and mean_curvature_flow (registration,
 * keys and entries; the method is in mb_flow.h). Per mesh on the CPU or the
 * GPU, and on a mesh split by vertices (ghost depth 1: a row of the
 * cotangent Laplacian and of the mass matrix reads the triangles around
 * its vertex). Each stage records its solves in the provenance as
 * `stage_N_solve` (N: the stage's provenance number) and in `-v` output. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_adjacency.h"
#include "mb_domain.h"
#include "mb_flow.h"
#include "mb_op.h"

static int on_cuda(const mb_op_ctx *ctx) { return ctx->backend->kind == MB_BACKEND_CUDA; }

/* The provenance key of a stage: stage_N_solve with N counted as the
 * runner counts stage_N (after an input's earlier stages). */
static mb_error record(mb_attrs *attrs, const mb_stage *stage, const mb_flow_report *rep) {
  int first = 0;
  char key[64];
  for (;; first++) {
    snprintf(key, sizeof key, "stage_%d", first);
    if (!mb_attrs_get(attrs, key)) break;
  }
  snprintf(key, sizeof key, "stage_%d_solve", first + stage->index);
  char text[8192];
  mb_flow_describe(rep, text, sizeof text);
  return mb_attrs_set(attrs, key, text);
}

/* The stages [0, n) on one mesh or one rank's piece. */
static mb_error run_stages(const mb_op_ctx *ctx, const mb_stage *stages, int n, mb_flow_mesh *fm,
                           mb_attrs *attrs) {
  for (int s = 0; s < n; s++) {
    const mb_flow_params *p = stages[s].params;
    mb_flow_report rep = {0, calloc((size_t)p->steps, sizeof(mb_solve_stats)), NULL};
    MB_CHECK(rep.step, MB_ERR_MEMORY, "%s: out of memory", fm->name);
    mb_op_computed(ctx, MB_PRECISION_FLOAT64);
    mb_error e = on_cuda(ctx) ? mb_flow_run_cuda(p, fm, &rep) : mb_flow_run_cpu(p, fm, &rep);
    if (!e) e = record(attrs, &stages[s], &rep);
    free(rep.step);
    MB_CALL(e);
  }
  return MB_SUCCESS;
}

static mb_error flow_run(const mb_op_ctx *ctx, const mb_stage *stages, int n, mb_mesh **mesh) {
  mb_mesh *m = *mesh;
  mb_adjacency *adj = NULL;
  MB_CALL(mb_adjacency_build(m, &adj));
  mb_flow_mesh fm = {MPI_COMM_SELF, NULL, adj, m->nv, m->nv, NULL, m->xyz, m->name, ctx};
  mb_error e = run_stages(ctx, stages, n, &fm, &m->attrs);
  mb_adjacency_free(adj);
  return e;
}

/* Split by vertices: the owned rows, their ghosts (depth 1) and the halo. */
static mb_error flow_run_partitioned(const mb_op_ctx *ctx, const mb_stage *stages, int n,
                                     mb_domain *d) {
  mb_distributed_mesh *dm = d->dm;
  const mb_local_domain *loc = dm->domain;
  mb_flow_mesh fm = {d->comm,       dm->halo,    loc->adj, loc->nowned, loc->nowned + loc->nghost,
                     loc->global, dm->x,       d->slab.rows->name, ctx};
  return run_stages(ctx, stages, n, &fm, &d->slab.rows->attrs);
}

static double flow_cost(int64_t nv, int64_t nf, const void *params) {
  const mb_flow_params *p = params;
  return 50.0 * (double)(nv + nf) * (double)p->steps; /* about 50 PCG iterations a step */
}

/* ------------------------------------------------------------ parameters */

static const char *const weights_names[] = {"uniform", "cotangent", NULL};
static const char *const variant_names[] = {"conformalized", "classic", NULL};
static const char *const boundary_names[] = {"free", "fixed", NULL};
static const char *const rescale_names[] = {"none", "area", NULL};
static const char *const solver_names[] = {"auto", "cholesky", "pcg", "amg", NULL};

#define TIME_STEP_PARAM(doc)                                                                  \
  {"time_step", MB_PARAM_REAL, offsetof(mb_flow_params, time_step), 0, 1e300, 1, 0, 1, 0,     \
   NULL, doc}
#define COMMON_PARAMS                                                                         \
  {"steps", MB_PARAM_INT, offsetof(mb_flow_params, steps), 1, 100000000, 0, 0, 0, 1, NULL,    \
   "number of time steps"},                                                                   \
  {"boundary", MB_PARAM_NAME, offsetof(mb_flow_params, boundary), 0, 0, 0, 0, 0,              \
   MB_FLOW_FREE, boundary_names, "boundary vertices: free, or fixed (kept in place)"},        \
  {"solver", MB_PARAM_NAME, offsetof(mb_flow_params, solver), 0, 0, 0, 0, 0, MB_SOLVER_AUTO, \
   solver_names,                                                                              \
   "auto (see the guide), cholesky (whole meshes), pcg, or amg (whole meshes)"}, \
  {"tolerance", MB_PARAM_REAL, offsetof(mb_flow_params, tolerance), 0, 1, 1, 1, 0, 1e-10,      \
   NULL, "PCG: relative residual per coordinate, in (0, 1)"},                                  \
  {"max_iterations", MB_PARAM_INT, offsetof(mb_flow_params, max_iterations), 1, 100000000,    \
   0, 0, 0, 10000, NULL, "PCG: iteration limit per step"}

static const mb_param fairing_params[] = {
    TIME_STEP_PARAM("lambda dt of the diffusion, > 0 (required; dimensionless)"),
    {"weights", MB_PARAM_NAME, offsetof(mb_flow_params, weights), 0, 0, 0, 0, 0, MB_FLOW_UNIFORM,
     weights_names, "umbrella operator weights: uniform or cotangent"},
    COMMON_PARAMS};

static const mb_param mcf_params[] = {
    TIME_STEP_PARAM("dt of the flow, > 0 (required; length unit squared)"),
    {"variant", MB_PARAM_NAME, offsetof(mb_flow_params, variant), 0, 0, 0, 0, 0,
     MB_FLOW_CONFORMALIZED, variant_names,
     "conformalized (Laplacian of the input, Kazhdan et al. 2012) or classic (of each step)"},
    {"rescale", MB_PARAM_NAME, offsetof(mb_flow_params, rescale), 0, 0, 0, 0, 0,
     MB_FLOW_RESCALE_NONE, rescale_names,
     "none, or area: recentre and rescale to the input's area after each step"},
    COMMON_PARAMS};

static void fairing_init(void *params) { ((mb_flow_params *)params)->kind = MB_FLOW_FAIRING; }
static void mcf_init(void *params) { ((mb_flow_params *)params)->kind = MB_FLOW_MCF; }

/* rescale: area moves every vertex, so it cannot keep a boundary fixed. */
static int mcf_check(const void *params, const unsigned char *given, int *bad, char *msg,
                     size_t len) {
  const mb_flow_params *p = params;
  (void)given;
  if (!(p->rescale == MB_FLOW_RESCALE_AREA && p->boundary == MB_FLOW_FIXED)) return 0;
  *bad = 2; /* rescale */
  snprintf(msg, len, "rescale: area moves every vertex, and boundary: fixed keeps the boundary "
           "in place: choose one");
  return 1;
}

int mb_flow_bench(int argc, char **argv); /* mb_flow_bench.c */

#define FLOW_ENTRIES                                                                          \
  .bench = mb_flow_bench, .room = "flow", .in = MB_KIND_SURFACE, .out = MB_KIND_SURFACE,                              \
  .params_size = sizeof(mb_flow_params), .cost = flow_cost, .run = {flow_run, flow_run},      \
  .split = MB_SPLIT_VERTICES, .ghost_depth = 1,                                               \
  .run_partitioned = {flow_run_partitioned, flow_run_partitioned}

const mb_op_info mb_op_implicit_fairing = {
    .name = "implicit_fairing",
    .summary = "implicit fairing: backward Euler of the umbrella-operator diffusion, one sparse "
               "solve per step (large time steps)",
    .source = "M. Desbrun, M. Meyer, P. Schroeder, A. H. Barr, Implicit fairing of irregular "
              "meshes using diffusion and curvature flow, SIGGRAPH 1999, section 4",
    .params = fairing_params,
    .nparams = (int)(sizeof fairing_params / sizeof fairing_params[0]),
    .init = fairing_init,
    FLOW_ENTRIES};

const mb_op_info mb_op_mean_curvature_flow = {
    .name = "mean_curvature_flow",
    .summary = "mean-curvature flow, backward Euler with the cotangent Laplacian and the "
               "lumped mass matrix (classic or conformalized)",
    .source = "M. Desbrun et al., SIGGRAPH 1999, section 5; M. Kazhdan, J. Solomon, "
              "M. Ben-Chen, Can mean-curvature flow be modified to be non-singular?, SGP 2012",
    .params = mcf_params,
    .nparams = (int)(sizeof mcf_params / sizeof mcf_params[0]),
    .init = mcf_init,
    .check = mcf_check,
    FLOW_ENTRIES};
