/* meshbatch: the op willmore_flow (registration, keys, entry; the method is
 * in mb_willmore.h). Per mesh, on the CPU (mb_willmore_run_cpu) or, with
 * backend: cuda, on the rank's GPU (mb_willmore_run_cuda,
 * cuda/willmore/). It has no partitioned form (distribute: partitioned is
 * refused by the runner). Each stage records its steps in the provenance as
 * `stage_N_willmore` (N: the stage's provenance number) and in `-v`
 * output. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_adjacency.h"
#include "mb_op.h"
#include "mb_willmore.h"

/* The provenance key of a stage: stage_N_willmore with N counted as the
 * runner counts stage_N (after an input's earlier stages). */
static mb_error record(mb_attrs *attrs, const mb_stage *stage, const mb_willmore_report *rep) {
  int first = 0;
  char key[64];
  for (;; first++) {
    snprintf(key, sizeof key, "stage_%d", first);
    if (!mb_attrs_get(attrs, key)) break;
  }
  snprintf(key, sizeof key, "stage_%d_willmore", first + stage->index);
  const size_t len = 256 + 320 * (size_t)rep->steps;
  char *text = malloc(len);
  MB_CHECK(text, MB_ERR_MEMORY, "out of memory for the provenance");
  mb_willmore_describe(rep, text, len);
  mb_error e = mb_attrs_set(attrs, key, text);
  free(text);
  return e;
}

static mb_error willmore_run(const mb_op_ctx *ctx, const mb_stage *stages, int n,
                             mb_mesh **mesh) {
  mb_mesh *m = *mesh;
  MB_CHECK(mb_mesh_is_triangles(m), MB_ERR_ARG,
           "%s: willmore_flow needs a triangle mesh (this one has polygons)", m->name);
  mb_adjacency *adj = NULL;
  MB_CALL(mb_adjacency_build(m, &adj));
  mb_willmore_mesh wm = {m->nv, m->nf, m->face_indices, adj, m->xyz, m->name, ctx};
  mb_error e = MB_SUCCESS;
  for (int s = 0; s < n && !e; s++) {
    const mb_willmore_params *p = stages[s].params;
    mb_willmore_report rep = {.step = calloc((size_t)p->steps, sizeof(mb_willmore_step))};
    if (!rep.step) {
      e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "%s: out of memory",
                       m->name);
      break;
    }
    mb_op_computed(ctx, MB_PRECISION_FLOAT64);
    e = ctx->backend->kind == MB_BACKEND_CUDA ? mb_willmore_run_cuda(p, &wm, &rep)
                                              : mb_willmore_run_cpu(p, &wm, &rep);
    if (!e) e = record(&m->attrs, &stages[s], &rep);
    free(rep.step);
  }
  mb_adjacency_free(adj);
  MB_CALL(e);
  return MB_SUCCESS;
}

/* Per step: the Dirac factor of 4 nv rows (about 16x the Laplacian's
 * entries), a few solves, the Laplacian's factor and solve. */
int mb_willmore_bench(int argc, char **argv); /* mb_willmore_bench.c */

static double willmore_cost(int64_t nv, int64_t nf, const void *params) {
  const mb_willmore_params *p = params;
  return 400.0 * (double)(nv + nf) * (double)p->steps;
}

static const char *const solver_names[] = {"auto", "cholesky", "iterative", NULL};

static const mb_param willmore_params[] = {
    {"time_step", MB_PARAM_REAL, offsetof(mb_willmore_params, time_step), 0, 1e300, 1, 0, 1, 0,
     NULL,
     "tau > 0 (required; dimensionless): curvature change rho = -tau H per step (about "
     "0.05 to 0.5)"},
    {"steps", MB_PARAM_INT, offsetof(mb_willmore_params, steps), 1, 100000000, 0, 0, 0, 1, NULL,
     "number of time steps"},
    {"tolerance", MB_PARAM_REAL, offsetof(mb_willmore_params, tolerance), 0, 1, 1, 1, 0, 1e-10,
     NULL, "inverse iteration: eigen-residual relative to the largest diagonal, in (0, 1)"},
    {"max_iterations", MB_PARAM_INT, offsetof(mb_willmore_params, max_iterations), 1, 100000,
     0, 0, 0, 100, NULL, "inverse iteration: solves per step at most (then an error)"},
    {"solver", MB_PARAM_NAME, offsetof(mb_willmore_params, solver), 0, 0, 0, 0, 0,
     MB_WILLMORE_AUTO, solver_names,
     "cholesky (factor per step), iterative (AMG-preconditioned PCG), or auto (iterative "
     "on cuda; on cpu from 50000 vertices)"},
};

const mb_op_info mb_op_willmore_flow = {
    .name = "willmore_flow",
    .room = "willmore",
    .summary = "conformal Willmore flow by spin transformations: curvature change, Dirac "
               "eigenvector and Poisson solve per step (closed surfaces; triangle angles "
               "kept)",
    .source = "K. Crane, U. Pinkall, P. Schroeder, Robust fairing via conformal curvature "
              "flow, SIGGRAPH 2013; Spin transformations of discrete surfaces, SIGGRAPH 2011",
    .in = MB_KIND_SURFACE,
    .out = MB_KIND_SURFACE,
    .params = willmore_params,
    .nparams = (int)(sizeof willmore_params / sizeof willmore_params[0]),
    .params_size = sizeof(mb_willmore_params),
    .cost = willmore_cost,
    .run = {willmore_run, willmore_run}, /* the backend is chosen in willmore_run */
    .bench = mb_willmore_bench,
};
