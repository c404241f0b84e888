/* meshbatch: the umbrella op (registration and entries): the umbrella
 * operator of the positions as the per-vertex field `umbrella` (see
 * mb_umbrella.h). Per mesh on the CPU or the GPU, and on a mesh split by
 * vertices: each rank computes its owned rows from the positions of their
 * 1-ring (ghosts refreshed by a forward exchange first), and the domain
 * writes the field back, so N ranks give the one-rank field bit for bit.
 * It is also the smallest op that computes a field partitioned, and the
 * example of docs/architecture.md "Adding a split kind or a ghost depth".
 */
#include <stdlib.h>

#include "mb_adjacency.h"
#include "mb_domain.h"
#include "mb_op.h"
#include "mb_umbrella.h"

/* No keys. */
typedef struct mb_umbrella_params {
  int unused;
} mb_umbrella_params;

static int on_cuda(const mb_op_ctx *ctx) { return ctx->backend->kind == MB_BACKEND_CUDA; }

/* U on rows [0, nrows) of an adjacency over x [nx, 3], on the backend. */
static mb_error umbrella(const mb_op_ctx *ctx, int64_t nrows, const int64_t *row,
                         const int64_t *col, int64_t nx, const double *x, double *u) {
  mb_op_computed(ctx, MB_PRECISION_FLOAT64);
  if (on_cuda(ctx)) return mb_umbrella_rows_cuda(nrows, row, col, nx, x, u);
  mb_umbrella_rows(nrows, row, col, x, u);
  return MB_SUCCESS;
}

/* Per mesh: the adjacency of the whole mesh, U of every vertex. Stages in
 * a row compute the same field, so one is enough. */
static mb_error umbrella_run(const mb_op_ctx *ctx, const mb_stage *stages, int n,
                             mb_mesh **mesh) {
  (void)stages; (void)n;
  mb_mesh *m = *mesh;
  mb_adjacency *adj = NULL;
  MB_CALL(mb_adjacency_build(m, &adj));
  double *u = malloc(sizeof *u * 3 * (size_t)(m->nv ? m->nv : 1));
  mb_error e = u ? umbrella(ctx, m->nv, adj->row, adj->col, m->nv, m->xyz, u)
                 : mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  if (!e) e = mb_mesh_set_field(m, MB_UMBRELLA_FIELD, 3, u);
  free(u);
  mb_adjacency_free(adj);
  return e;
}

/* Split by vertices: ghosts' positions from their owners, then U of the
 * owned rows (the local adjacency keeps each row's global order). */
static mb_error umbrella_run_partitioned(const mb_op_ctx *ctx, const mb_stage *stages, int n,
                                         mb_domain *d) {
  (void)stages; (void)n;
  mb_distributed_mesh *dm = d->dm;
  const mb_local_domain *loc = dm->domain;
  MB_CALL(mb_halo_begin(dm->halo, dm->x));
  MB_CALL(mb_halo_end(dm->halo, dm->x));
  double *u = NULL;
  MB_CALL(mb_distributed_add_field(dm, MB_UMBRELLA_FIELD, 3, &u));
  MB_CALL(umbrella(ctx, loc->nowned, loc->adj->row, loc->adj->col, loc->nowned + loc->nghost,
                   dm->x, u));
  return MB_SUCCESS;
}

static double umbrella_cost(int64_t nv, int64_t nf, const void *params) {
  (void)params;
  return (double)(nv + nf);
}

/* mb_op_info.grow: the field `umbrella`, 3 components a vertex. */
static void umbrella_grow(const void *params, mb_size_estimate *s) {
  (void)params;
  s->row_values += 3;
}

const mb_op_info mb_op_umbrella = {
    .name = "umbrella",
    .room = "umbrella",
    .summary = "the umbrella operator of the positions (mean of the neighbours minus the "
               "vertex) as the per-vertex field `umbrella`",
    .source = "G. Taubin, A signal processing approach to fair surface design, SIGGRAPH 1995, "
              "section 4, eq. 8 (weights 1/|i*|)",
    .in = MB_KIND_SURFACE,
    .out = MB_KIND_SURFACE,
    .params = NULL,
    .nparams = 0,
    .params_size = sizeof(mb_umbrella_params),
    .cost = umbrella_cost,
    .run = {umbrella_run, umbrella_run},
    .split = MB_SPLIT_VERTICES,
    .ghost_depth = 1,
    .run_partitioned = {umbrella_run_partitioned, umbrella_run_partitioned},
    .grow = umbrella_grow,
};
