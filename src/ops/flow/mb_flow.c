/* meshbatch: implicit fairing and mean-curvature flow on the CPU (see
 * mb_flow.h). One code for a whole mesh and for a rank's piece of a mesh
 * split by vertices: the piece's owned rows are assembled from its 1-ring
 * (ghost positions refreshed by a forward exchange), solved by the
 * distributed PCG, and the area and centroid of `rescale` are exact sums
 * over the owned rows (partition/mb_reduce.h). */
#include "mb_flow.h"
#include "mb_flow_private.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mb_csr.h"
#include "mb_log.h"
#include "mb_mpi.h"
#include "mb_reduce.h"

/* The work arrays of one run. */
typedef struct flow_work {
  mb_csr *A;           /* the system matrix */
  mb_csr *L;           /* the operator (same pattern): K, or L (classic), or L0 */
  double *d;           /* [nrows] D or M */
  double *fixed;       /* [ncols] 1 for a vertex kept in place, else 0 */
  double *B, *X;       /* [nrows, 3], [ncols, 3] */
  mb_cholesky *chol;   /* per mesh, made at the first Cholesky step */
  mb_amg *amg;         /* per mesh, made at the first AMG step, updated after */
} flow_work;

static void work_free(flow_work *w) {
  mb_csr_free(w->A);
  mb_csr_free(w->L);
  free(w->d);
  free(w->fixed);
  free(w->B);
  free(w->X);
  mb_cholesky_free(w->chol);
  mb_amg_free(w->amg);
}

/* Refresh the ghost rows of x [ncols, ncomp] from their owners. */
mb_error mb_flow_refresh(const mb_flow_mesh *fm, int ncomp, double *x) {
  if (!fm->halo) return MB_SUCCESS;
  MB_CALL(mb_halo_forward_begin(fm->halo, MB_HALO_FLOAT64, ncomp, x));
  MB_CALL(mb_halo_forward_end(fm->halo, x));
  return MB_SUCCESS;
}

/* Global id of local vertex i, for messages. */
long long mb_flow_gid(const mb_flow_mesh *fm, int64_t i) {
  return (long long)(fm->global ? fm->global[i] : i);
}

/* The vertices kept in place (mb_flow_private.h): boundary vertices with boundary `fixed`, and
 * every vertex without a neighbour (isolated: its row is the diagonal
 * alone). Ghost flags from their owners. */
mb_error mb_flow_mark_fixed(const mb_flow_params *p, const mb_flow_mesh *fm, double *fixed) {
  const mb_adjacency *adj = fm->adj;
  for (int64_t i = 0; i < fm->nrows; i++)
    fixed[i] = (p->boundary == MB_FLOW_FIXED && adj->on_boundary[i]) ||
                       adj->row[i + 1] == adj->row[i]
                   ? 1.0
                   : 0.0;
  return mb_flow_refresh(fm, 1, fixed);
}

/* The exact total area (sum of the barycentric masses of the owned rows)
 * and, with c non-NULL, the mass-weighted centroid c[3] (= the area-
 * weighted centroid of the triangles). Collective over fm->comm. */
static mb_error area_centroid(const mb_flow_mesh *fm, const double *mass, const double *x,
                              double *area, double *c) {
  const int64_t n = fm->nrows;
  mb_reduce_acc acc[4];
  for (int k = 0; k < 4; k++) mb_reduce_acc_zero(&acc[k]);
  mb_reduce_acc_add(&acc[0], n, mass, NULL);
  double *xc = NULL;
  if (c) {
    MB_CHECK(xc = malloc(sizeof *xc * (size_t)(n ? n : 1)), MB_ERR_MEMORY, "out of memory");
    for (int k = 0; k < 3; k++) {
      for (int64_t i = 0; i < n; i++) xc[i] = x[3 * i + k];
      mb_reduce_acc_add(&acc[1 + k], n, mass, xc);
    }
    free(xc);
  }
  MB_CALL(mb_reduce_acc_allreduce(fm->comm, c ? 4 : 1, acc));
  *area = mb_reduce_acc_value(&acc[0]);
  if (c)
    for (int k = 0; k < 3; k++) c[k] = mb_reduce_acc_value(&acc[1 + k]) / *area;
  return MB_SUCCESS;
}

/* The operator of this step into w->L and the diagonal into w->d. Local
 * checks only (the caller agrees on the result). */
static mb_error assemble_operator(const mb_flow_params *p, const mb_flow_mesh *fm,
                                  flow_work *w, int step) {
  const mb_adjacency *adj = fm->adj;
  if (p->kind == MB_FLOW_FAIRING) {
    if (p->weights == MB_FLOW_UNIFORM) {
      if (step == 0) MB_CALL(mb_csr_uniform_laplacian(adj, w->L));
    } else {
      MB_CALL(mb_csr_cotangent_laplacian(adj, fm->x, w->L));
    }
    for (int64_t i = 0; i < fm->nrows; i++) {
      w->d[i] = -w->L->val[w->L->diag[i]];
      MB_CHECK(w->d[i] > 0 || w->fixed[i] != 0, MB_ERR_NUMERIC,
               "%s: vertex %lld has a weight sum of %g (cotangent weights of its "
               "triangles sum to zero or less); use weights: uniform",
               fm->name, mb_flow_gid(fm, i), w->d[i]);
    }
    return MB_SUCCESS;
  }
  if (p->variant == MB_FLOW_CLASSIC || step == 0)
    MB_CALL(mb_csr_cotangent_laplacian(adj, fm->x, w->L));
  MB_CALL(mb_mass_barycentric(adj, fm->nrows, fm->x, w->d));
  for (int64_t i = 0; i < fm->nrows; i++)
    MB_CHECK(w->d[i] > 0 || w->fixed[i] != 0, MB_ERR_NUMERIC,
             "%s: vertex %lld has zero area around it (its triangles are degenerate)", fm->name,
             mb_flow_gid(fm, i));
  return MB_SUCCESS;
}

/* A = diag(d) - tau L, B = diag(d) x; then the fixed vertices' rows become
 * identity rows with B = x, and their columns move to the right-hand side
 * (entry order, so one rank and N ranks subtract in one order). */
static void assemble_system(const mb_flow_mesh *fm, flow_work *w, double tau) {
  const mb_csr *L = w->L;
  mb_csr *A = w->A;
  const double *x = fm->x;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < fm->nrows; i++) {
    double *b = &w->B[3 * i];
    if (w->fixed[i] != 0) {
      for (int32_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) A->val[k] = 0;
      A->val[A->diag[i]] = 1;
      for (int c = 0; c < 3; c++) b[c] = x[3 * i + c];
      continue;
    }
    for (int c = 0; c < 3; c++) b[c] = w->d[i] * x[3 * i + c];
    for (int32_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
      const int32_t j = A->col[k];
      const double a = k == A->diag[i] ? w->d[i] - tau * L->val[k] : -(tau * L->val[k]);
      if (k != A->diag[i] && w->fixed[j] != 0) {
        for (int c = 0; c < 3; c++) b[c] = b[c] - a * x[3 * j + c];
        A->val[k] = 0;
      } else {
        A->val[k] = a;
      }
    }
  }
}

/* sqrt of a bound of A's condition number (see mb_flow.h): the largest
 * eigenvalue is at most max_i (a_ii + sum_j |a_ij|) (Gershgorin), the
 * smallest at least min_i d_i over the free rows (and 1 where a row is
 * fixed), since -tau K is positive semi-definite. */
double mb_flow_sqrt_kappa(const mb_csr *A, const double *d, const double *fixed) {
  double hi = 0, lo = INFINITY;
  for (int32_t i = 0; i < A->nrows; i++) {
    double r = 0, a = A->val[A->diag[i]];
    for (int32_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
      if (k != A->diag[i]) r += fabs(A->val[k]);
    if (a + r > hi) hi = a + r;
    const double low = fixed[i] != 0 ? 1.0 : d[i];
    if (low < lo) lo = low;
  }
  return lo > 0 ? sqrt(hi / lo) : INFINITY;
}

/* One solve of A X = B (X warm-started from the positions). */
static mb_error solve(const mb_flow_params *p, const mb_flow_mesh *fm, int split, flow_work *w,
                      mb_solve_stats *st) {
  mb_solver_method m = (mb_solver_method)p->solver;
  if (m == MB_SOLVER_AUTO && split) {
    m = MB_SOLVER_PCG;
  } else if (m == MB_SOLVER_AUTO) {
    const double sk = mb_flow_sqrt_kappa(w->A, w->d, w->fixed);
    m = sk <= MB_FLOW_AUTO_SQRT_KAPPA ? MB_SOLVER_PCG : MB_SOLVER_CHOLESKY;
    mb_log(MB_LOG_VERBOSE, "%s: solver auto: sqrt(kappa) bound %.3g %s %g: %s", fm->name, sk,
           m == MB_SOLVER_PCG ? "<=" : ">", MB_FLOW_AUTO_SQRT_KAPPA, mb_solver_method_name(m));
  }
  memcpy(w->X, fm->x, sizeof(double) * 3 * (size_t)fm->ncols);
  memset(st, 0, sizeof *st);
  if (m == MB_SOLVER_PCG) {
    const mb_pcg_opts o = {.rtol = p->tolerance, .max_iter = p->max_iterations};
    MB_CALL(mb_pcg_solve(fm->comm, fm->halo, w->A, 3, w->B, w->X, &o, st));
    st->method = MB_SOLVER_PCG;
    return MB_SUCCESS;
  }
  if (m == MB_SOLVER_AMG) {
    MB_CHECK(!split, MB_ERR_UNSUPPORTED,
             "%s: solver amg runs on a whole mesh only; a split mesh uses pcg", fm->name);
    /* the hierarchy from the first step's matrix; later steps keep its
     * aggregates and prolongators and recompute the coarse matrices */
    const double t0 = mb_wtime();
    const int first = !w->amg;
    if (first) {
      mb_amg_opts ao = mb_amg_opts_default();
      MB_CALL(mb_amg_opts_env(&ao));
      MB_CALL(mb_amg_create(w->A, &ao, &w->amg));
    }
    else MB_CALL(mb_amg_update(w->amg, w->A));
    const double t1 = mb_wtime();
    const mb_pcg_opts o = {p->tolerance, p->max_iterations, w->amg, NULL};
    MB_CALL(mb_pcg_solve(fm->comm, NULL, w->A, 3, w->B, w->X, &o, st));
    st->method = MB_SOLVER_AMG;
    if (first) st->analyze_ms = 1e3 * (t1 - t0);
    else st->factor_ms = 1e3 * (t1 - t0);
    return MB_SUCCESS;
  }
  MB_CHECK(!split, MB_ERR_UNSUPPORTED,
           "%s: solver cholesky runs on a whole mesh only; a split mesh uses pcg", fm->name);
  double t0 = mb_wtime();
  if (!w->chol) MB_CALL(mb_cholesky_create(w->A, &w->chol));
  double t1 = mb_wtime();
  MB_CALL(mb_cholesky_factor(w->chol, w->A));
  double t2 = mb_wtime();
  MB_CALL(mb_cholesky_solve(w->chol, 3, w->B, w->X));
  double t3 = mb_wtime();
  st->method = MB_SOLVER_CHOLESKY;
  st->analyze_ms = 1e3 * (t1 - t0);
  st->factor_ms = 1e3 * (t2 - t1);
  st->solve_ms = 1e3 * (t3 - t2);
  double res[3];
  MB_CALL(mb_residual(fm->comm, fm->halo, w->A, 3, w->B, w->X, res));
  st->residual = fmax(res[0], fmax(res[1], res[2]));
  return MB_SUCCESS;
}

/* Move the centroid to the origin and scale to area a0 (rescale: area). */
static mb_error rescale_area(const mb_flow_mesh *fm, flow_work *w, double a0) {
  MB_CALL(mb_flow_refresh(fm, 3, fm->x));
  MB_CALL(mb_mass_barycentric(fm->adj, fm->nrows, fm->x, w->d));
  double area, c[3];
  MB_CALL(area_centroid(fm, w->d, fm->x, &area, c));
  MB_CHECK(area > 0 && isfinite(area), MB_ERR_NUMERIC,
           "%s: the surface's area became %g; rescale: area cannot restore it", fm->name, area);
  const double s = sqrt(a0 / area);
  for (int64_t i = 0; i < fm->nrows; i++)
    for (int k = 0; k < 3; k++) fm->x[3 * i + k] = (fm->x[3 * i + k] - c[k]) * s;
  return MB_SUCCESS;
}

/* Add "mesh: step S: " before the recorded message of e (a solver error). */
mb_error mb_flow_at_step(const mb_flow_mesh *fm, int step, mb_error e) {
  if (e) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", mb_error_message());
    return mb_error_set(e, __FILE__, __LINE__, __func__, "%s: step %d: %s", fm->name, step + 1,
                        msg);
  }
  return e;
}

/* This process's CPU time (all threads), seconds: beside the wall time in
 * the -v log, for figures on a machine shared with other work. */
static double cpu_seconds(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return 0;
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static mb_error run(const mb_flow_params *p, mb_flow_mesh *fm, mb_flow_report *rep,
                    flow_work *w) {
  const int split = fm->halo != NULL || fm->global != NULL;
  const int64_t nr = fm->nrows, nc = fm->ncols;
  MB_CHECK(fm->adj->opp, MB_ERR_ARG, "%s: the flows need a triangle mesh (this one has polygons)",
           fm->name);
  MB_CALL(mb_csr_pattern(fm->adj, nr, nc, fm->global, &w->A));
  MB_CALL(mb_csr_pattern(fm->adj, nr, nc, fm->global, &w->L));
  MB_CHECK((w->d = malloc(sizeof(double) * (size_t)(nr + 1))) &&
               (w->fixed = malloc(sizeof(double) * (size_t)(nc + 1))) &&
               (w->B = malloc(sizeof(double) * 3 * (size_t)(nr + 1))) &&
               (w->X = malloc(sizeof(double) * 3 * (size_t)(nc + 1))),
           MB_ERR_MEMORY, "%s: out of memory for the flow's arrays", fm->name);
  mb_error e = MB_SUCCESS;
  for (int64_t i = 0; i < 3 * nr && !e; i++)
    if (!isfinite(fm->x[i]))
      e = mb_error_set(MB_ERR_NUMERIC, __FILE__, __LINE__, __func__,
                       "%s: vertex %lld has a non-finite coordinate", fm->name, mb_flow_gid(fm, i / 3));
  MB_CALL(mb_agree(fm->comm, e));
  MB_CALL(mb_flow_refresh(fm, 3, fm->x));
  MB_CALL(mb_flow_mark_fixed(p, fm, w->fixed));
  double a0 = 0;
  if (p->kind == MB_FLOW_MCF && p->rescale == MB_FLOW_RESCALE_AREA) {
    MB_CALL(mb_mass_barycentric(fm->adj, nr, fm->x, w->d));
    MB_CALL(area_centroid(fm, w->d, fm->x, &a0, NULL));
  }
  for (int s = 0; s < p->steps; s++) {
    if (mb_op_should_stop(fm->ctx, s, p->steps)) return mb_op_stopped(fm->ctx);
    const double t0 = mb_wtime(), c0 = cpu_seconds();
    MB_CALL(mb_agree(fm->comm, assemble_operator(p, fm, w, s)));
    assemble_system(fm, w, p->time_step);
    const double t1 = mb_wtime();
    MB_CALL(mb_agree(fm->comm, mb_flow_at_step(fm, s, solve(p, fm, split, w, &rep->step[s]))));
    const double t2 = mb_wtime();
    e = MB_SUCCESS;
    for (int64_t i = 0; i < nr && !e; i++) {
      for (int k = 0; k < 3; k++)
        if (!isfinite(w->X[3 * i + k]))
          e = mb_error_set(MB_ERR_NUMERIC, __FILE__, __LINE__, __func__,
                           "%s: step %d: vertex %lld became non-finite", fm->name, s + 1,
                           mb_flow_gid(fm, i));
      if (w->fixed[i] == 0) memcpy(&fm->x[3 * i], &w->X[3 * i], sizeof(double) * 3);
    }
    MB_CALL(mb_agree(fm->comm, e));
    if (p->kind == MB_FLOW_MCF && p->rescale == MB_FLOW_RESCALE_AREA)
      MB_CALL(mb_agree(fm->comm, rescale_area(fm, w, a0)));
    MB_CALL(mb_flow_refresh(fm, 3, fm->x));
    const double t3 = mb_wtime(), cpu_ms = 1e3 * (cpu_seconds() - c0);
    if (rep->phase)
      rep->phase[s] = (mb_flow_phases){1e3 * (t1 - t0), 1e3 * (t2 - t1), 1e3 * (t3 - t2)};
    const mb_solve_stats *st = &rep->step[s];
    /* Phase times of this rank (wall, ms): assembly of the operator, mass
     * and system; the solve (Cholesky: analysis, first step only, factor,
     * triangular solves; PCG: its iterations); the update, rescale and
     * ghost refresh after it. */
    if (st->method == MB_SOLVER_CHOLESKY)
      mb_log(MB_LOG_VERBOSE,
             "%s: step %d: cholesky, 0 iterations, relative residual %.3g (direct); %.1f ms (cpu "
             "%.1f ms): assembly %.1f, analysis %.1f, factor %.1f, solve %.1f, update %.1f",
             fm->name, s + 1, st->residual, 1e3 * (t3 - t0), cpu_ms, 1e3 * (t1 - t0), st->analyze_ms,
             st->factor_ms, st->solve_ms, 1e3 * (t3 - t2));
    else
      mb_log(MB_LOG_VERBOSE,
             "%s: step %d: %s, %d iterations, relative residual %.3g; %.1f ms (cpu %.1f ms): "
             "assembly %.1f, pcg %.1f, update %.1f",
             fm->name, s + 1, mb_solver_method_name(st->method), st->iterations, st->residual,
             1e3 * (t3 - t0), cpu_ms, 1e3 * (t1 - t0), 1e3 * (t2 - t1), 1e3 * (t3 - t2));
  }
  rep->steps = p->steps;
  return MB_SUCCESS;
}

mb_error mb_flow_run_cpu(const mb_flow_params *p, mb_flow_mesh *fm, mb_flow_report *rep) {
  MB_CHECK(p && fm && rep && rep->step && p->steps >= 1, MB_ERR_ARG, "mb_flow_run_cpu: bad arguments");
  flow_work w = {0};
  mb_error e = run(p, fm, rep, &w);
  work_free(&w);
  return e;
}

void mb_flow_describe(const mb_flow_report *rep, char *buf, size_t len) {
  size_t used = 0;
  if (len) buf[0] = '\0';
  for (int s = 0; s < rep->steps && used + 4 < len; s++) {
    const mb_solve_stats *st = &rep->step[s];
    int w = st->method == MB_SOLVER_PCG || st->method == MB_SOLVER_AMG
                ? snprintf(buf + used, len - used, "%sstep %d: %s rtol %.3g iterations %d residual %.3g",
                           s ? "; " : "", s + 1, mb_solver_method_name(st->method), st->rtol,
                           st->iterations, st->residual)
                : snprintf(buf + used, len - used, "%sstep %d: cholesky residual %.3g", s ? "; " : "",
                           s + 1, st->residual);
    if (w < 0 || (size_t)w >= len - used) {
      if (len >= 4) memcpy(buf + len - 4, "...", 4);
      return;
    }
    used += (size_t)w;
  }
}
