/* meshbatch: the polylla op (registration, per-mesh entries, benchmark).
 *
 * Method: S. Salinas-Fernandez, N. Hitschfeld-Kahler, A. Ortiz-Bernardin,
 * H. Si, "POLYLLA: polygonal meshing algorithm based on terminal-edge
 * regions", Engineering with Computers 38 (2022); GPU form after GPolylla
 * (Salinas-Fernandez et al., 2023). The rules are in mb_polylla.h.
 */
#include <stddef.h>
#include <stdlib.h>

#include "mb_log.h"
#include "mb_mpi.h"
#include "mb_op.h"
#include "mb_polylla.h"
#include "mb_domain.h"
#include "mb_polylla_partitioned.h"

/* The keys of a polylla stage (mb_polylla_opts, as the job file gives it). */
typedef struct mb_polylla_params {
  int ties; /* mb_polylla_ties */
} mb_polylla_params;

static const char *const ties_names[] = {"key", "corners", NULL};

static const mb_param polylla_params[] = {
    {"ties", MB_PARAM_NAME, offsetof(mb_polylla_params, ties), 0, 0, 0, 0, 0,
     MB_POLYLLA_TIES_KEY, ties_names,
     "equally long edges: key (larger vertex index wins) or corners (first in corner order, "
     "as the reference code; refuses cycles of ties)"}};

static mb_polylla_opts polylla_opts(const mb_stage *stage) {
  const mb_polylla_params *p = stage->params;
  return (mb_polylla_opts){.ties = (mb_polylla_ties)p->ties};
}

/* Replace the triangulation by its polygon mesh (whose positions may be
 * the triangulation's own array: share_xyz; they go with the polygons). */
static mb_error polylla_replace(mb_mesh **mesh, mb_mesh *poly) {
  if (poly->xyz == (*mesh)->xyz) (*mesh)->xyz = NULL;
  mb_mesh_free(*mesh);
  *mesh = poly;
  return MB_SUCCESS;
}

/* Stages of polylla in a row: the second one would read polygons2d, which
 * the job loader already refuses, so n is 1. Every backend computes in
 * float64 (the job's `precision` is not read). The job's triangulation
 * goes once its polygons exist, so the polygons take its positions
 * instead of a copy (share_xyz), on either backend. */
static mb_error polylla_run_cpu(const mb_op_ctx *ctx, const mb_stage *stages, int n,
                                mb_mesh **mesh) {
  (void)n;
  mb_op_computed(ctx, MB_PRECISION_FLOAT64);
  mb_mesh *poly = NULL;
  mb_polylla_opts o = polylla_opts(&stages[0]);
  o.share_xyz = 1;
  MB_CALL(mb_polylla_cpu(*mesh, &o, &poly, NULL));
  return polylla_replace(mesh, poly);
}

/* The job's triangulation goes once its polygons exist, so the polygons
 * take its positions instead of a copy (share_xyz). The device time
 * (half-edges, label, repair, traversal) and the copies in and out go to
 * the runner's --timings (ctx->device_s, ctx->copy_s); -v prints them per
 * mesh. */
static mb_error polylla_run_cuda(const mb_op_ctx *ctx, const mb_stage *stages, int n,
                                 mb_mesh **mesh) {
  (void)n;
  mb_op_computed(ctx, MB_PRECISION_FLOAT64);
  mb_mesh *poly = NULL;
  mb_polylla_opts o = polylla_opts(&stages[0]);
  o.share_xyz = 1;
  mb_polylla_stats st = {0};
  const double t0 = mb_wtime();
  MB_CALL(mb_polylla_cuda(*mesh, &o, &poly, &st));
  const double call_s = mb_wtime() - t0;
  if (ctx->device_s) *ctx->device_s += 1e-3 * (st.ms_halfedge + st.ms_kernels);
  if (ctx->copy_s) *ctx->copy_s += 1e-3 * (st.ms_copy_in + st.ms_copy_out);
  mb_log(MB_LOG_VERBOSE,
         "polylla '%s' on the GPU: copy in %.1f ms, half-edges %.1f ms, kernels %.1f ms (label "
         "%.1f, repair %.1f, traversal %.1f), copy out %.1f ms, whole call %.1f ms",
         poly->name ? poly->name : "", st.ms_copy_in, st.ms_halfedge, st.ms_kernels,
         st.ms_label, st.ms_repair, st.ms_traversal, st.ms_copy_out, 1e3 * call_s);
  return polylla_replace(mesh, poly);
}

/* Partitioned by triangles (mb_polylla_partitioned.h); the per-rank
 * figures go to rank 0's log. */
static mb_error polylla_run_faces(const mb_op_ctx *ctx, const mb_stage *stages, int n,
                                  mb_domain *d, int cuda) {
  (void)n;
  mb_op_computed(ctx, MB_PRECISION_FLOAT64);
  const mb_polylla_opts o = polylla_opts(&stages[0]);
  mb_polylla_rank_figures fig = {0};
  MB_CALL(mb_polylla_partitioned(d->comm, d->partitioner, &o, cuda, &d->slab, &fig));
  return mb_polylla_figures_report(d->comm, d->slab.rows->name, &fig);
}

static mb_error polylla_run_faces_cpu(const mb_op_ctx *ctx, const mb_stage *stages, int n,
                                      mb_domain *d) {
  return polylla_run_faces(ctx, stages, n, d, 0);
}

static mb_error polylla_run_faces_cuda(const mb_op_ctx *ctx, const mb_stage *stages, int n,
                                       mb_domain *d) {
  return polylla_run_faces(ctx, stages, n, d, 1);
}

/* triangles */
static double polylla_cost(int64_t nv, int64_t nf, const void *params) {
  (void)nv; (void)params;
  return (double)nf;
}

/* ------------------------------------------------------------ registration */

const mb_op_info mb_op_polylla = {
    .name = "polylla",
    .room = "polylla",
    .summary = "Polylla polygonal meshing: one polygon per terminal-edge region, "
               "barrier-edge tips repaired, pinches cut (every polygon simple)",
    .source = "S. Salinas-Fernandez et al., POLYLLA: polygonal meshing algorithm based on "
              "terminal-edge regions, Engineering with Computers 38 (2022), sections 3.1-3.4; "
              "GPolylla (2023)",
    .in = MB_KIND_TRIANGULATION2D,
    .out = MB_KIND_POLYGONS2D,
    .params = polylla_params,
    .nparams = (int)(sizeof polylla_params / sizeof polylla_params[0]),
    .params_size = sizeof(mb_polylla_params),
    .cost = polylla_cost,
    .run = {polylla_run_cpu, polylla_run_cuda},
    .split = MB_SPLIT_FACES,
    .run_partitioned = {polylla_run_faces_cpu, polylla_run_faces_cuda},
    .bench = mb_polylla_bench,
};
