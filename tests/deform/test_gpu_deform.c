/* The deform op's CUDA backend (cuda/deform/mb_deform_cuda.h) against its
 * CPU solver (src/ops/deform/mb_deform.h), on the first CUDA device; exits
 * 77 (skipped, with the reason) where there is none:
 *  - a lifted 20 x 20 quad grid (dome, 13 handles): soft planar (50
 *    iterations) and hard planar (to 1e-10), each with solver cholesky, pcg
 *    (the linalg layer's device PCG) and pcg by the room's device CG; hard
 *    regular on a 6 x 6 saddle without handles; a flat 10 x 10 grid (a
 *    zero right-hand side column) in soft planar with each solver;
 *  - a lifted Polylla mesh (300 random points, faces of 3 to 20-odd
 *    vertices, on a dome of height 0.01): hard planar without handles to
 *    1e-10 (cholesky, and the device CG), and soft planar (both PCGs);
 *  - solver auto without cg_iterations (the op's default: cholesky on the
 *    CPU, the device CG on CUDA), soft planar 50 iterations and hard
 *    planar on the quad grid;
 *  - inexact inner solves (solver pcg, cg_iterations 8: at most 8 CG
 *    iterations per iteration, the CPU's mb_deform_cg against the device
 *    CG, one method): soft planar 50 iterations, soft planar to 1e-7 (a
 *    stop inside the device's batch of 50 iterations: the same iteration
 *    count) and hard planar to 1e-10 on the quad grid, the flat grid, hard
 *    planar on the Polylla mesh;
 *  each: the CUDA positions within 1e-8 of the bounding box's diagonal of
 *  the CPU's with the same keys (a capped soft run with cg_iterations is
 *  not compared with cholesky: it stops at another iterate; converged
 *  runs are, in the CPU test deform_unit), the same convergence flag, the hard runs' planarity or
 *  regularity <= 1e-8 (recomputed here face by face), the handles exactly at
 *  their targets (hard);
 *  - the device's final residuals, each face's planarity and the handle
 *    error equal the host's on the same positions (to rounding);
 *  - the fused device CG (2 kernels a CG iteration) against the CPU's
 *    k-step CG within 1e-13 of the box after 10 CG iterations (the soft
 *    runs by the CUDA graphs, the default); runs repeat bit for bit
 *    across the pooled buffers' growth and graph updates;
 *  - the persistent frame (a batch of soft iterations in one cooperative
 *    launch, persistent 1) gives the CUDA graphs' positions and reports
 *    bitwise (a dome, k = 3 and 8, a stop inside a batch, a Roof1-size
 *    layout), and repeat bit for bit;
 *  - the batch pipeline (layout k+1 prepared on a second thread during
 *    layout k's run) gives every layout's outputs bitwise as single runs;
 *  - bad inputs give the CPU's error codes and messages: a face with a
 *    repeated vertex, four pinned non-coplanar corners of a quad (hard: the
 *    residual reached), a target with one NaN component, a non-finite
 *    position, a vertex index past the count. */
#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_adjacency.h"
#include "mb_cuda.h"
#include "mb_deform.h"
#include "mb_deform_cuda.h"
#include "mb_generate.h"
#include "mb_polylla.h"
#include "mb_testutil.h"

typedef struct case_mesh {
  mb_mesh *m;
  mb_adjacency *adj;
  double *target; /* the field `handle`, copied, or NULL */
} case_mesh;

static case_mesh panels(int64_t nv, int shape, double height, int interior, double lift) {
  case_mesh c = {0};
  assert_int_equal(mb_generate_panels(nv, shape, height, interior, lift, &c.m), MB_SUCCESS);
  assert_int_equal(mb_adjacency_build_opts(c.m, 0, &c.adj), MB_SUCCESS);
  const int k = mb_mesh_field_index(c.m, "handle");
  assert_true(k >= 0);
  c.target = malloc(sizeof(double) * 3 * (size_t)c.m->nv);
  memcpy(c.target, c.m->fields[k].data, sizeof(double) * 3 * (size_t)c.m->nv);
  return c;
}

/* Polylla's polygons of the Delaunay triangulation of 300 random points,
 * lifted onto z = 0.01 (sqrt(4 - x^2 - y^2) - sqrt 2) / (2 - sqrt 2) over
 * [-1, 1]^2 (deform_test.py's polylla case); no handles. */
static case_mesh polylla(void) {
  case_mesh c = {0};
  mb_mesh *tri = NULL;
  assert_int_equal(mb_generate_delaunay(300, 3, 0, &tri), MB_SUCCESS);
  assert_int_equal(mb_polylla_cpu(tri, NULL, &c.m, NULL), MB_SUCCESS);
  mb_mesh_free(tri);
  for (int64_t i = 0; i < c.m->nv; i++) {
    double *p = &c.m->xyz[3 * i];
    const double x = 2 * p[0] - 1, y = 2 * p[1] - 1;
    p[0] = x;
    p[1] = y;
    p[2] = 0.01 * (sqrt(4 - x * x - y * y) - sqrt(2.0)) / (2 - sqrt(2.0));
  }
  int64_t most = 0;
  for (int64_t f = 0; f < c.m->nf; f++)
    if (c.m->face_offsets[f + 1] - c.m->face_offsets[f] > most)
      most = c.m->face_offsets[f + 1] - c.m->face_offsets[f];
  printf("polylla: %lld vertices, %lld faces, the largest of %lld vertices\n",
         (long long)c.m->nv, (long long)c.m->nf, (long long)most);
  assert_true(most >= 5);
  assert_int_equal(mb_adjacency_build_opts(c.m, 0, &c.adj), MB_SUCCESS);
  return c;
}

static void case_free(case_mesh *c) {
  mb_adjacency_free(c->adj);
  mb_mesh_free(c->m);
  free(c->target);
}

static mb_deform_params params(int constraint, int hard, int iterations, double tol,
                               int solver) {
  mb_deform_params p = {0};
  p.constraint = constraint;
  p.hard = hard;
  p.iterations = iterations;
  p.tolerance = tol;
  p.w_handle = 100;
  p.w_close = 1;
  p.w_fair = 0.1;
  p.w_constraint = 10;
  p.solver = solver;
  return p;
}

/* The largest face residual of positions x, recomputed here, / l. */
static double max_residual(const mb_mesh *m, const double *x, int constraint, double l) {
  double worst = 0, q[3 * 64];
  for (int64_t f = 0; f < m->nf; f++) {
    const int n = (int)(m->face_offsets[f + 1] - m->face_offsets[f]);
    assert_true(n <= 64);
    for (int k = 0; k < n; k++)
      for (int d = 0; d < 3; d++) q[3 * k + d] = x[3 * m->face_indices[m->face_offsets[f] + k] + d];
    const double r =
        constraint == MB_DEFORM_PLANAR ? mb_deform_planarity(n, q) : mb_deform_regularity(n, q);
    if (r > worst) worst = r;
  }
  return worst / l;
}

/* The run's end as the host computes it (the CPU solver's residuals(): each
 * face centred at its centroid, mb_deform_proj.c) on positions x: the
 * largest planarity and regularity / l, each face's planarity / l into
 * fp [nf], the largest distance of a handle from its target. */
static void host_end(const mb_mesh *m, const double *x, const double *target, double l,
                     double *plan, double *reg, double *fp, double *herr) {
  double q[3 * 64];
  *plan = *reg = *herr = 0;
  for (int64_t f = 0; f < m->nf; f++) {
    const int64_t s0 = m->face_offsets[f];
    const int n = (int)(m->face_offsets[f + 1] - s0);
    assert_true(n <= 64);
    double c[3] = {0, 0, 0};
    for (int k = 0; k < n; k++)
      for (int d = 0; d < 3; d++) c[d] += x[3 * m->face_indices[s0 + k] + d];
    for (int d = 0; d < 3; d++) c[d] /= (double)n;
    for (int k = 0; k < n; k++)
      for (int d = 0; d < 3; d++) q[3 * k + d] = (x[3 * m->face_indices[s0 + k] + d] - c[d]) + 0.0;
    const double a = mb_deform_planarity(n, q) / l, r = mb_deform_regularity(n, q) / l;
    fp[f] = a;
    *plan = fmax(*plan, a);
    *reg = fmax(*reg, r);
  }
  for (int64_t i = 0; target && i < m->nv; i++) {
    if (isnan(target[3 * i])) continue;
    double r2 = 0;
    for (int d = 0; d < 3; d++)
      r2 += (x[3 * i + d] - target[3 * i + d]) * (x[3 * i + d] - target[3 * i + d]);
    *herr = fmax(*herr, sqrt(r2));
  }
}

/* a and b equal to rounding: the same float64 formulas on the device and
 * the host, only libm's cos and sin (the regular projection) may differ in the last bit
 * (the residuals are in units of l, of coordinates of order 1 to 100). */
static void same_figure(const char *what, const char *which, double dev, double host) {
  if (!(fabs(dev - host) <= 1e-12 * fabs(host) + 1e-13))
    fail_msg("%s: %s on the device %.17g, on the host %.17g", what, which, dev, host);
}

/* Run p on c from its input on the CPU and on the GPU (device_cg: the
 * room's CG for solver pcg); compare. The device's final residuals and
 * handle error (computed there at the frame's end) against the host's on
 * the same positions. */
static void compare(const char *what, case_mesh *c, int with_handles, const mb_deform_params *p,
                    int device_cg) {
  const int64_t nv = c->m->nv;
  const size_t bytes = sizeof(double) * 3 * (size_t)nv;
  double *xc = malloc(bytes), *xg = malloc(bytes);
  memcpy(xc, c->m->xyz, bytes);
  memcpy(xg, c->m->xyz, bytes);
  const double *target = with_handles ? c->target : NULL;
  mb_deform_mesh dc = {c->m->name, nv, c->m->nf, xc, c->m->face_offsets, c->m->face_indices,
                       c->adj, target, NULL};
  mb_deform_mesh dg = dc;
  dg.x = xg;
  mb_deform_report rc = {0}, rg = {0};
  double *fp = calloc((size_t)c->m->nf, sizeof *fp);
  rg.face_planarity = fp;
  mb_error ec = mb_deform_run_cpu(p, &dc, &rc);
  if (ec) fail_msg("%s: CPU: %s", what, mb_error_message());
  const mb_deform_cuda_opts co = {0, !device_cg};
  mb_error eg = mb_deform_run_cuda(p, &dg, &rg, &co);
  if (eg) fail_msg("%s: CUDA: %s", what, mb_error_message());
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  double dev = 0;
  for (int64_t i = 0; i < nv; i++)
    for (int d = 0; d < 3; d++) {
      lo[d] = fmin(lo[d], xc[3 * i + d]);
      hi[d] = fmax(hi[d], xc[3 * i + d]);
      const double e = fabs(xg[3 * i + d] - xc[3 * i + d]);
      if (!(e <= dev)) dev = e;
    }
  const double box = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                          (hi[2] - lo[2]) * (hi[2] - lo[2]));
  const double res = max_residual(c->m, xg, p->constraint, rg.edge_length);
  double fpmax = 0;
  for (int64_t f = 0; f < c->m->nf; f++) fpmax = fmax(fpmax, fp[f]);
  printf("%s (%s): CPU %d iterations, converged %d, residual %.3g; CUDA %d iterations, "
         "converged %d, residual %.3g (recomputed %.3g), %d factorizations, %lld CG "
         "iterations; max distance %.3g = %.3g of the box %.3g\n",
         what,
         p->solver == MB_DEFORM_PCG    ? (device_cg ? "pcg, device CG" : "pcg")
         : p->solver == MB_DEFORM_AUTO ? "auto: cholesky against the device CG"
                                       : "cholesky",
         rc.iterations, rc.converged,
         p->constraint == MB_DEFORM_PLANAR ? rc.planarity : rc.regularity, rg.iterations,
         rg.converged, p->constraint == MB_DEFORM_PLANAR ? rg.planarity : rg.regularity, res,
         rg.factorizations, rg.pcg_iterations, dev, dev / box, box);
  assert_true(box > 0);
  if (!(dev <= 1e-8 * box)) fail_msg("%s: CUDA is %.3g from the CPU (box %.3g)", what, dev, box);
  assert_int_equal(rg.converged, rc.converged);
  assert_int_equal(rg.handles, rc.handles);
  assert_int_equal(rg.pinned, rc.pinned);
  assert_true(fabs(rg.edge_length - rc.edge_length) <= 1e-14 * rc.edge_length);
  assert_true(fabs(fpmax - rg.planarity) <= 1e-15 + 1e-12 * rg.planarity);
  { /* the device's end figures against the host's on the device's positions */
    double hp, hr, he, *hf = calloc((size_t)c->m->nf, sizeof *hf);
    host_end(c->m, xg, target, rg.edge_length, &hp, &hr, hf, &he);
    same_figure(what, "planarity", rg.planarity, hp);
    same_figure(what, "regularity", rg.regularity, hr);
    same_figure(what, "handle error", rg.handle_error, he);
    for (int64_t f = 0; f < c->m->nf; f++) same_figure(what, "a face's planarity", fp[f], hf[f]);
    free(hf);
    assert_true(rg.finish_ms >= 0 && rg.device_ms >= 0);
  }
  if (p->hard) {
    assert_true(rg.converged);
    assert_true(res <= 1e-8);
    if (target)
      for (int64_t i = 0; i < nv; i++)
        if (!isnan(target[3 * i]))
          for (int d = 0; d < 3; d++) assert_true(xg[3 * i + d] == target[3 * i + d]);
  } else {
    assert_int_equal(rg.iterations, rc.iterations);
  }
  free(fp);
  free(xc);
  free(xg);
}

static void test_quad_grid(void **state) {
  (void)state;
  /* cholesky; pcg by the linalg layer; pcg by the room's device CG */
  const int solver[3] = {MB_DEFORM_CHOLESKY, MB_DEFORM_PCG, MB_DEFORM_PCG}, dcg[3] = {0, 0, 1};
  for (int k = 0; k < 3; k++) {
    case_mesh c = panels(400, MB_PANELS_DOME, 0.5, 5, 0.2);
    mb_deform_params soft = params(MB_DEFORM_PLANAR, 0, 50, 1e-12, solver[k]);
    compare("quad grid, soft planar", &c, 1, &soft, dcg[k]);
    mb_deform_params hard = params(MB_DEFORM_PLANAR, 1, 5000, 1e-10, solver[k]);
    compare("quad grid, hard planar", &c, 1, &hard, dcg[k]);
    case_free(&c);
  }
  { /* solver auto (the default): CHOLMOD on the CPU, the device CG on CUDA */
    case_mesh c = panels(400, MB_PANELS_DOME, 0.5, 5, 0.2);
    mb_deform_params soft = params(MB_DEFORM_PLANAR, 0, 50, 1e-12, MB_DEFORM_AUTO);
    compare("quad grid, soft planar", &c, 1, &soft, 1);
    mb_deform_params hard = params(MB_DEFORM_PLANAR, 1, 5000, 1e-10, MB_DEFORM_AUTO);
    compare("quad grid, hard planar", &c, 1, &hard, 1);
    case_free(&c);
  }
  { /* inexact: cg_iterations 8, the CPU's k-step CG against the device's */
    case_mesh c = panels(400, MB_PANELS_DOME, 0.5, 5, 0.2);
    mb_deform_params soft = params(MB_DEFORM_PLANAR, 0, 50, 1e-12, MB_DEFORM_PCG);
    soft.cg_iterations = 8;
    compare("quad grid, soft planar, cg_iterations 8", &c, 1, &soft, 1);
    /* soft to a tolerance: the device's batches of 50 iterations stop where
     * the host's rules stop, inside a batch (the same iteration count) */
    mb_deform_params stop = params(MB_DEFORM_PLANAR, 0, 5000, 1e-7, MB_DEFORM_PCG);
    stop.cg_iterations = 8;
    compare("quad grid, soft planar to 1e-7, cg_iterations 8", &c, 1, &stop, 1);
    mb_deform_params hard = params(MB_DEFORM_PLANAR, 1, 5000, 1e-10, MB_DEFORM_PCG);
    hard.cg_iterations = 8;
    compare("quad grid, hard planar, cg_iterations 8", &c, 1, &hard, 1);
    case_free(&c);
  }
  case_mesh s = panels(36, MB_PANELS_SADDLE, 0.3, 0, 0);
  mb_deform_params reg = params(MB_DEFORM_REGULAR, 1, 3000, 1e-10, MB_DEFORM_CHOLESKY);
  compare("saddle, hard regular", &s, 0, &reg, 0);
  /* a flat grid (z = 0: a zero right-hand side column) stays put */
  case_mesh f = panels(100, MB_PANELS_DOME, 0.0, 1, 0.0);
  for (int k = 0; k < 3; k++) {
    mb_deform_params soft = params(MB_DEFORM_PLANAR, 0, 20, 1e-12, solver[k]);
    compare("flat grid, soft planar", &f, 1, &soft, dcg[k]);
  }
  mb_deform_params flat8 = params(MB_DEFORM_PLANAR, 0, 20, 1e-12, MB_DEFORM_PCG);
  flat8.cg_iterations = 8;
  compare("flat grid, soft planar, cg_iterations 8", &f, 1, &flat8, 1);
  case_free(&f);
  case_free(&s);
}

static void test_polylla(void **state) {
  (void)state;
  case_mesh c = polylla();
  mb_deform_params hard = params(MB_DEFORM_PLANAR, 1, 5000, 1e-10, MB_DEFORM_CHOLESKY);
  compare("Polylla, hard planar", &c, 0, &hard, 0);
  mb_deform_params soft = params(MB_DEFORM_PLANAR, 0, 50, 1e-12, MB_DEFORM_PCG);
  compare("Polylla, soft planar", &c, 0, &soft, 0);
  compare("Polylla, soft planar", &c, 0, &soft, 1);
  mb_deform_params hpcg = params(MB_DEFORM_PLANAR, 1, 5000, 1e-10, MB_DEFORM_PCG);
  compare("Polylla, hard planar", &c, 0, &hpcg, 1);
  hpcg.cg_iterations = 8;
  compare("Polylla, hard planar, cg_iterations 8", &c, 0, &hpcg, 1);
  case_free(&c);
}

/* One CUDA run of p on c from its input into x [nv, 3] (the room's CG;
 * row_threads and tile_warps as mb_deform_cuda_opts': 0 auto, 1 or 3
 * threads a row; 8 or 10 warps a row tile). */
static void cuda_run_rows(case_mesh *c, const mb_deform_params *p, int row_threads,
                          int tile_warps, double *x, mb_deform_report *rep) {
  memcpy(x, c->m->xyz, sizeof(double) * 3 * (size_t)c->m->nv);
  mb_deform_mesh dm = {c->m->name, c->m->nv, c->m->nf, x, c->m->face_offsets,
                       c->m->face_indices, c->adj, c->target, NULL};
  memset(rep, 0, sizeof *rep);
  const mb_deform_cuda_opts o = {0, 0, 0, row_threads, tile_warps};
  const mb_error e = mb_deform_run_cuda(p, &dm, rep, &o);
  if (e == MB_ERR_NUMERIC && p->hard && rep->iterations == p->iterations)
    mb_error_clear(); /* hard, not met within the iterations: the positions are kept */
  else if (e)
    fail_msg("CUDA: %s", mb_error_message());
}

/* cuda_run_rows with the default options (row_threads, tile_warps auto). */
static void cuda_run(case_mesh *c, const mb_deform_params *p, double *x, mb_deform_report *rep) {
  cuda_run_rows(c, p, 0, 0, x, rep);
}

/* The room's CG, one kernel a CG step (Chronopoulos and Gear's one
 * reduction a step; the start inside the right-hand side's kernel and the
 * start's product): one local-global iteration with 10 CG
 * iterations (and 3 iterations of 10) gives the CPU's k-step CG's
 * iterates (mb_deform_cg, the unfused method, sequential sums) within
 * 1e-13 of the box, soft and hard, at 3 threads a row and at 1, each
 * with auto's row tiles (8 warps here) and with tiles of 10 and 16 warps (the hard
 * run pins the handles: H's
 * identity rows and zeroed columns, formed on the device by k_assemble in
 * the SELL-32 layout); runs repeat bit for bit, also with the pooled buffers
 * grown by a larger mesh and the pooled graph updated in between (the
 * batched soft path: 50 iterations a read, and the sync-free hard path). */
static void test_fused_cg(void **state) {
  (void)state;
  case_mesh a = panels(400, MB_PANELS_DOME, 0.5, 5, 0.2);
  case_mesh b = panels(1600, MB_PANELS_SADDLE, 0.3, 1, 0.1);
  const size_t bytes = sizeof(double) * 3 * (size_t)a.m->nv;
  for (int run = 0; run < 24; run++) {
    const int its = run % 2 ? 3 : 1, hard = run / 2 % 2, rows = run % 8 < 4 ? 3 : 1;
    const int tw = run < 8 ? 0 : run < 16 ? 10 : 16;
    mb_deform_params p = params(MB_DEFORM_PLANAR, hard, its, 1e-300, MB_DEFORM_PCG);
    p.cg_iterations = 10;
    double *xc = malloc(bytes), *xg = malloc(bytes);
    memcpy(xc, a.m->xyz, bytes);
    mb_deform_mesh dc = {a.m->name, a.m->nv, a.m->nf, xc, a.m->face_offsets,
                         a.m->face_indices, a.adj, a.target, NULL};
    mb_deform_report rc = {0}, rg;
    const mb_error ec = mb_deform_run_cpu(&p, &dc, &rc);
    if (hard && ec == MB_ERR_NUMERIC && rc.iterations == its) mb_error_clear(); /* not met: kept */
    else assert_int_equal(ec, MB_SUCCESS);
    cuda_run_rows(&a, &p, rows, tw, xg, &rg);
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    double dev = 0, moved = 0;
    for (int64_t i = 0; i < a.m->nv; i++)
      for (int d = 0; d < 3; d++) {
        lo[d] = fmin(lo[d], xc[3 * i + d]);
        hi[d] = fmax(hi[d], xc[3 * i + d]);
        dev = fmax(dev, fabs(xg[3 * i + d] - xc[3 * i + d]));
        moved = fmax(moved, fabs(xc[3 * i + d] - a.m->xyz[3 * i + d]));
      }
    const double box = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) +
                            (hi[1] - lo[1]) * (hi[1] - lo[1]) + (hi[2] - lo[2]) * (hi[2] - lo[2]));
    printf("fused CG, %s, %d thread%s a row, row tiles of %s warps, %d iteration%s of 10 CG "
           "iterations: CPU %lld, CUDA %lld CG iterations; moved %.3g, CUDA from CPU %.3g = "
           "%.3g of the box\n",
           hard ? "hard" : "soft", rows, rows == 1 ? "" : "s", tw == 16 ? "16" : tw ? "10" : "auto's", its,
           its == 1 ? "" : "s",
           rc.pcg_iterations,
           rg.pcg_iterations, moved, dev, dev / box);
    assert_true(moved > 1e-6 * box); /* the iterations did something */
    assert_true(rg.pcg_iterations == rc.pcg_iterations);
    assert_int_equal(rg.iterations, rc.iterations);
    assert_true(rg.mu == rc.mu);
    if (!(dev <= 1e-13 * box))
      fail_msg("fused CG (%s): %.3g of the box from the CPU's", hard ? "hard" : "soft",
               dev / box);
    free(xc);
    free(xg);
  }
  /* bitwise repeats across pool growth and graph updates */
  mb_deform_params soft = params(MB_DEFORM_PLANAR, 0, 60, 1e-300, MB_DEFORM_PCG);
  soft.cg_iterations = 3;
  mb_deform_params hard = soft;
  hard.hard = 1;
  hard.iterations = 12;
  const mb_deform_params *ps[2] = {&soft, &hard};
  for (int k = 0; k < 2; k++) {
    double *x1 = malloc(bytes), *x2 = malloc(bytes);
    double *xb = malloc(sizeof(double) * 3 * (size_t)b.m->nv);
    mb_deform_report r1, r2, rb;
    cuda_run(&a, ps[k], x1, &r1);
    cuda_run(&b, ps[k], xb, &rb); /* grows the pool, another graph */
    cuda_run(&a, ps[k], x2, &r2);
    printf("repeat (%s): %d and %d iterations, planarity %.17g and %.17g; device %.3f ms\n",
           k ? "hard, 12 iterations" : "soft, 60 iterations (reads after 50, 60)",
           r1.iterations, r2.iterations, r1.planarity, r2.planarity, r1.device_ms);
    assert_int_equal(r1.iterations, ps[k]->iterations);
    assert_int_equal(r2.iterations, r1.iterations);
    assert_true(r1.planarity == r2.planarity && r1.pcg_iterations == r2.pcg_iterations);
    assert_true(memcmp(x1, x2, bytes) == 0);
    assert_true(r1.device_ms > 0);
    free(x1);
    free(x2);
    free(xb);
  }
  mb_deform_cuda_release();
  case_free(&a);
  case_free(&b);
}

/* One CUDA run of p on c from its input into x [nv, 3], the persistent
 * frame asked for (persistent 1), the graphs (-1) or auto (0: the
 * persistent frame up to MB_DEFORM_PERSISTENT_ROWS vertices); row_threads
 * and tile_warps as mb_deform_cuda_opts'. */
static void cuda_run_path(case_mesh *c, const mb_deform_params *p, int persistent,
                          int row_threads, int tile_warps, double *x, double *fp,
                          mb_deform_report *rep) {
  memcpy(x, c->m->xyz, sizeof(double) * 3 * (size_t)c->m->nv);
  mb_deform_mesh dm = {c->m->name, c->m->nv, c->m->nf, x, c->m->face_offsets,
                       c->m->face_indices, c->adj, c->target, NULL};
  memset(rep, 0, sizeof *rep);
  rep->face_planarity = fp; /* [nf] or NULL */
  const mb_deform_cuda_opts o = {0, 0, persistent, row_threads, tile_warps};
  if (mb_deform_run_cuda(p, &dm, rep, &o)) fail_msg("CUDA: %s", mb_error_message());
}

/* The persistent frame (soft, capped CG: a batch of 50 iterations in one
 * cooperative launch, cuda/deform/mb_deform_frame.cu) against the CUDA
 * graphs of the same iterations (mb_deform_cuda_opts.persistent -1): the positions,
 * planarity, regularity, each face's planarity (k_final after either),
 * handle error, iteration and CG counts bitwise the same (the
 * same arithmetic in the same summation order), on a
 * generated dome (1,600 vertices, 60 iterations: batches of 50 and 10;
 * k = 3 and k = 8), with a stop inside a batch (test_quad_grid's 400-vertex
 * grid to tolerance 1e-7: the same iteration count), and on a Roof1-size layout (20,464 vertices, 50
 * iterations, k = 3), at auto's 3 threads a row (a thread a row and
 * column) and, on the dome and the grid, at a thread a row
 * (mb_deform_cuda_opts.row_threads 1: the same equalities, each mapping
 * with itself), and on the dome and the grid with row tiles of 10 and 16
 * warps (tile_warps; auto takes 8 on these meshes on an H100) at either
 * mapping; the persistent runs repeat bit for bit (a larger
 * mesh run in between: the pooled buffers grown). The run asked for
 * must take the persistent path (rep.persistent: every sm_60+ device has
 * cooperative launch), the graphs asked for the graphs, and auto (0) the
 * persistent frame on these meshes (all below MB_DEFORM_PERSISTENT_ROWS). */
static void test_persistent_frame(void **state) {
  (void)state;
  case_mesh dome = panels(1600, MB_PANELS_DOME, 0.5, 5, 0.2);
  case_mesh grid = panels(400, MB_PANELS_DOME, 0.5, 5, 0.2); /* test_quad_grid's */
  case_mesh roof = panels(20464, MB_PANELS_DOME, 0.5, 5, 0.2);
  struct {
    case_mesh *c;
    int iterations, k, rows; /* rows: threads a row (0: auto, 3 on these meshes) */
    int tw;                  /* warps a row tile (0: auto, 8 on these meshes) */
    double tol;
    const char *what;
  } cases[] = {
      {&dome, 60, 3, 0, 0, 1e-300, "dome, 60 iterations, k = 3"},
      {&dome, 60, 8, 0, 0, 1e-300, "dome, 60 iterations, k = 8"},
      {&dome, 60, 3, 1, 0, 1e-300, "dome, 60 iterations, k = 3, a thread a row"},
      {&dome, 60, 3, 0, 10, 1e-300, "dome, 60 iterations, k = 3, tiles of 10 warps"},
      {&dome, 60, 3, 1, 10, 1e-300, "dome, 60 iterations, k = 3, a thread a row, tiles of 10"},
      {&dome, 60, 3, 0, 16, 1e-300, "dome, 60 iterations, k = 3, tiles of 16 warps"},
      {&dome, 60, 8, 1, 16, 1e-300, "dome, 60 iterations, k = 8, a thread a row, tiles of 16"},
      {&grid, 5000, 8, 0, 0, 1e-7, "quad grid, to 1e-7, k = 8"},
      {&grid, 5000, 8, 1, 0, 1e-7, "quad grid, to 1e-7, k = 8, a thread a row"},
      {&grid, 5000, 8, 1, 10, 1e-7, "quad grid, to 1e-7, k = 8, a thread a row, tiles of 10"},
      {&grid, 5000, 8, 0, 16, 1e-7, "quad grid, to 1e-7, k = 8, tiles of 16"},
      {&roof, 50, 3, 0, 0, 1e-300, "Roof1-size, 50 iterations, k = 3"}};
  for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
    case_mesh *c = cases[t].c;
    const size_t bytes = sizeof(double) * 3 * (size_t)c->m->nv;
    mb_deform_params p = params(MB_DEFORM_PLANAR, 0, cases[t].iterations, cases[t].tol,
                                MB_DEFORM_PCG);
    p.cg_iterations = cases[t].k;
    double *xp = malloc(bytes), *xg = malloc(bytes), *x2 = malloc(bytes);
    double *xo = malloc(sizeof(double) * 3 * (size_t)roof.m->nv);
    mb_deform_report rp, rg, r2, ro;
    mb_deform_report ra;
    double *xa = malloc(bytes);
    const int rows = cases[t].rows, tw = cases[t].tw;
    const size_t fbytes = sizeof(double) * (size_t)c->m->nf;
    double *fpp = malloc(fbytes), *fpg = malloc(fbytes); /* each face's final planarity */
    assert_non_null(fpp);
    assert_non_null(fpg);
    cuda_run_path(c, &p, 1, rows, tw, xp, fpp, &rp);
    cuda_run_path(c, &p, -1, rows, tw, xg, fpg, &rg);
    cuda_run_path(c, &p, 0, rows, tw, xa, NULL, &ra); /* auto */
    cuda_run_path(&roof, &p, 1, rows, tw, xo, NULL, &ro); /* grows the pool (or reuses it) in between */
    cuda_run_path(c, &p, 1, rows, tw, x2, NULL, &r2);
    double dev = 0;
    for (size_t i = 0; i < 3 * (size_t)c->m->nv; i++) dev = fmax(dev, fabs(xp[i] - xg[i]));
    printf("persistent frame, %s: paths %s and %s; iterations %d and %d, CG %lld and %lld, "
           "planarity %.17g and %.17g, largest difference %.3g; device %.3f and %.3f ms\n",
           cases[t].what, rp.persistent ? "persistent" : "graph",
           rg.persistent ? "persistent" : "graph", rp.iterations, rg.iterations,
           rp.pcg_iterations, rg.pcg_iterations, rp.planarity, rg.planarity, dev, rp.device_ms,
           rg.device_ms);
    assert_int_equal(rp.persistent, 1);
    assert_int_equal(rg.persistent, 0);
    assert_int_equal(r2.persistent, 1);
    assert_true(c->m->nv <= MB_DEFORM_PERSISTENT_ROWS);
    assert_int_equal(ra.persistent, 1);
    assert_true(memcmp(xa, xp, bytes) == 0);
    free(xa);
    assert_int_equal(rp.iterations, rg.iterations);
    if (cases[t].tol > 1e-300) assert_true(rp.iterations < p.iterations && rp.converged);
    else assert_int_equal(rp.iterations, p.iterations);
    assert_int_equal(rp.converged, rg.converged);
    assert_true(rp.pcg_iterations == rg.pcg_iterations);
    assert_true(memcmp(&rp.planarity, &rg.planarity, sizeof(double)) == 0);
    assert_true(memcmp(&rp.handle_error, &rg.handle_error, sizeof(double)) == 0);
    assert_true(memcmp(&rp.regularity, &rg.regularity, sizeof(double)) == 0);
    assert_true(rp.handles > 0); /* the handles' error was measured */
    assert_true(memcmp(fpp, fpg, fbytes) == 0);
    free(fpp);
    free(fpg);
    assert_true(memcmp(xp, xg, bytes) == 0);
    /* bitwise repeatable */
    assert_int_equal(r2.iterations, rp.iterations);
    assert_true(r2.pcg_iterations == rp.pcg_iterations);
    assert_true(memcmp(&r2.planarity, &rp.planarity, sizeof(double)) == 0);
    assert_true(memcmp(x2, xp, bytes) == 0);
    free(xp);
    free(xg);
    free(x2);
    free(xo);
  }
  mb_deform_cuda_release();
  case_free(&dome);
  case_free(&grid);
  case_free(&roof);
}

/* The batch pipeline (mb_deform_cuda_prepare of layout k+1 on a second
 * thread while layout k runs, as `bench deform --batch` does): every
 * layout's positions, planarity, iterations and CG count bitwise those of
 * a single mb_deform_run_cuda of it, soft (the batched path, 50 iterations)
 * and hard (12 iterations). */
typedef struct pipe_job {
  const mb_deform_params *p;
  mb_deform_mesh dm;
  mb_deform_cuda_prep *prep;
  mb_error e;
} pipe_job;

static void *pipe_prepare(void *arg) {
  pipe_job *j = arg;
  j->e = mb_deform_cuda_prepare(j->p, &j->dm, NULL, &j->prep);
  return NULL;
}

static void test_batch_pipeline(void **state) {
  (void)state;
  enum { N = 4 };
  case_mesh c[N] = {panels(1000, MB_PANELS_DOME, 0.5, 5, 0.2),
                    panels(2300, MB_PANELS_DOME, 0.5, 5, 0.2),
                    panels(1500, MB_PANELS_SADDLE, 0.3, 1, 0.1),
                    panels(3500, MB_PANELS_DOME, 0.5, 5, 0.2)};
  mb_deform_params soft = params(MB_DEFORM_PLANAR, 0, 50, 1e-300, MB_DEFORM_PCG);
  soft.cg_iterations = 3;
  mb_deform_params hard = soft;
  hard.hard = 1;
  hard.iterations = 12;
  const mb_deform_params *ps[2] = {&soft, &hard};
  for (int h = 0; h < 2; h++) {
    double *xs[N], *xp[N];
    mb_deform_report rs[N], rp[N];
    for (int k = 0; k < N; k++) { /* single runs */
      xs[k] = malloc(sizeof(double) * 3 * (size_t)c[k].m->nv);
      xp[k] = malloc(sizeof(double) * 3 * (size_t)c[k].m->nv);
      cuda_run(&c[k], ps[h], xs[k], &rs[k]);
    }
    pipe_job job[N];
    for (int k = 0; k < N; k++) {
      memcpy(xp[k], c[k].m->xyz, sizeof(double) * 3 * (size_t)c[k].m->nv);
      job[k] = (pipe_job){ps[h],
                          {c[k].m->name, c[k].m->nv, c[k].m->nf, xp[k], c[k].m->face_offsets,
                           c[k].m->face_indices, c[k].adj, c[k].target, NULL},
                          NULL, MB_SUCCESS};
    }
    pipe_prepare(&job[0]);
    for (int k = 0; k < N; k++) {
      pthread_t th;
      const int started = k + 1 < N && pthread_create(&th, NULL, pipe_prepare, &job[k + 1]) == 0;
      assert_int_equal(job[k].e, MB_SUCCESS);
      assert_non_null(job[k].prep);
      memset(&rp[k], 0, sizeof rp[k]);
      const mb_error e = mb_deform_run_cuda_prepared(job[k].prep, &rp[k]);
      if (e == MB_ERR_NUMERIC && h && rp[k].iterations == hard.iterations) mb_error_clear();
      else if (e) fail_msg("pipelined run: %s", mb_error_message());
      if (started) assert_int_equal(pthread_join(th, NULL), 0);
      else if (k + 1 < N) pipe_prepare(&job[k + 1]);
    }
    for (int k = 0; k < N; k++) {
      printf("pipeline (%s), layout %d (%lld vertices): single planarity %.17g, pipelined "
             "%.17g; iterations %d and %d\n",
             h ? "hard, 12 iterations" : "soft, 50 iterations", k, (long long)c[k].m->nv,
             rs[k].planarity, rp[k].planarity, rs[k].iterations, rp[k].iterations);
      assert_int_equal(rp[k].iterations, ps[h]->iterations);
      assert_int_equal(rp[k].iterations, rs[k].iterations);
      assert_true(rp[k].pcg_iterations == rs[k].pcg_iterations);
      assert_true(memcmp(&rp[k].planarity, &rs[k].planarity, sizeof(double)) == 0);
      assert_true(memcmp(&rp[k].handle_error, &rs[k].handle_error, sizeof(double)) == 0);
      assert_true(rp[k].handles == rs[k].handles && rp[k].pinned == rs[k].pinned);
      assert_true(rp[k].edge_length == rs[k].edge_length);
      assert_true(memcmp(xp[k], xs[k], sizeof(double) * 3 * (size_t)c[k].m->nv) == 0);
      free(xs[k]);
      free(xp[k]);
    }
  }
  /* a prepared setup freed unrun, and a bad mesh's preparation: its error */
  double *x = malloc(sizeof(double) * 3 * (size_t)c[0].m->nv);
  memcpy(x, c[0].m->xyz, sizeof(double) * 3 * (size_t)c[0].m->nv);
  mb_deform_mesh dm = {c[0].m->name, c[0].m->nv, c[0].m->nf, x, c[0].m->face_offsets,
                       c[0].m->face_indices, c[0].adj, c[0].target, NULL};
  mb_deform_cuda_prep *prep = NULL;
  assert_int_equal(mb_deform_cuda_prepare(&soft, &dm, NULL, &prep), MB_SUCCESS);
  mb_deform_cuda_prep_free(prep);
  x[4] = NAN;
  assert_int_equal(mb_deform_cuda_prepare(&soft, &dm, NULL, &prep), MB_ERR_NUMERIC);
  assert_null(prep);
  mb_error_clear();
  free(x);
  mb_deform_cuda_release();
  for (int k = 0; k < N; k++) case_free(&c[k]);
}

/* Both backends on dm (positions restored from x0 before each): the same
 * error code and message (up to "residual" where a residual reached is
 * printed: its third digit may round differently). */
static void same_error(const char *what, mb_deform_mesh *dm, const double *x0,
                       const mb_deform_params *p, mb_error want, const char *part) {
  const size_t bytes = sizeof(double) * 3 * (size_t)dm->nv;
  char cpu[2048];
  mb_deform_report rep = {0};
  memcpy(dm->x, x0, bytes);
  assert_int_equal(mb_deform_run_cpu(p, dm, &rep), want);
  snprintf(cpu, sizeof cpu, "%s", mb_error_message());
  memcpy(dm->x, x0, bytes);
  assert_int_equal(mb_deform_run_cuda(p, dm, &rep, NULL), want);
  printf("%s: %s\n", what, mb_error_message());
  mb_test_assert_message_contains(part);
  const char *r = strstr(cpu, "residual");
  const size_t len = r ? (size_t)(r - cpu) : strlen(cpu) + 1;
  if (strncmp(cpu, mb_error_message(), len) != 0)
    fail_msg("%s: CPU said \"%s\", CUDA \"%s\"", what, cpu, mb_error_message());
  memcpy(dm->x, x0, bytes);
}

static void test_errors(void **state) {
  (void)state;
  {
    case_mesh c = panels(16, MB_PANELS_DOME, 0.2, 0, 0);
    double *x0 = malloc(sizeof(double) * 3 * (size_t)c.m->nv);
    memcpy(x0, c.m->xyz, sizeof(double) * 3 * (size_t)c.m->nv);
    mb_deform_mesh dm = {c.m->name, c.m->nv, c.m->nf, c.m->xyz, c.m->face_offsets,
                         c.m->face_indices, c.adj, NULL, NULL};
    mb_deform_params p = params(MB_DEFORM_PLANAR, 0, 5, 1e-8, MB_DEFORM_CHOLESKY);
    const int64_t keep = c.m->face_indices[2];
    c.m->face_indices[2] = c.m->face_indices[0];
    same_error("repeated vertex", &dm, x0, &p, MB_ERR_ARG, "repeated vertices");
    c.m->face_indices[2] = c.m->nv;
    same_error("index past the count", &dm, x0, &p, MB_ERR_ARG, "names vertex");
    c.m->face_indices[2] = keep;
    free(x0);
    case_free(&c);
  }
  const double xyz[12] = {0, 0, 0, 1, 0, 0, 1, 1, 0.5, 0, 1, 0};
  mb_mesh *m = NULL;
  assert_int_equal(mb_mesh_create("quad", 4, 1, 4, &m), MB_SUCCESS);
  memcpy(m->xyz, xyz, sizeof xyz);
  for (int k = 0; k < 4; k++) m->face_indices[k] = k;
  m->face_offsets[1] = 4;
  mb_adjacency *adj = NULL;
  assert_int_equal(mb_adjacency_build_opts(m, 0, &adj), MB_SUCCESS);
  mb_deform_mesh dm = {"quad", 4, 1, m->xyz, m->face_offsets, m->face_indices, adj, xyz, NULL};
  for (int solver = 0; solver < 2; solver++) {
    mb_deform_params p = params(MB_DEFORM_PLANAR, 1, 20, 1e-8, solver);
    same_error("infeasible hard set", &dm, xyz, &p, MB_ERR_NUMERIC, "not met: residual");
  }
  mb_deform_params p = params(MB_DEFORM_PLANAR, 1, 20, 1e-8, MB_DEFORM_CHOLESKY);
  double bad[12];
  memcpy(bad, xyz, sizeof bad);
  bad[4] = NAN;
  dm.target = bad;
  same_error("NaN target component", &dm, xyz, &p, MB_ERR_NUMERIC, "three finite");
  dm.target = NULL;
  double inf[12];
  memcpy(inf, xyz, sizeof inf);
  inf[5] = INFINITY;
  same_error("non-finite position", &dm, inf, &p, MB_ERR_NUMERIC, "non-finite");
  mb_adjacency_free(adj);
  mb_mesh_free(m);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  char why[512] = "", name[256] = "";
  int dev = 0, rc = MB_TEST_SKIP;
  if (mb_cuda_device_count(why, sizeof why) <= 0) {
    printf("test_gpu_deform: skipped, no usable CUDA device (%s; CUDA backend compiled: %s)\n",
           why[0] ? why : "none", mb_cuda_compiled() ? "yes" : "no");
  } else if (mb_cuda_select_device(0, &dev, name, sizeof name) != MB_SUCCESS) {
    printf("test_gpu_deform: cannot select a device: %s\n", mb_error_message());
    rc = 1;
  } else {
    printf("test_gpu_deform: device %d, %s\n", dev, name);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_quad_grid),
                                       cmocka_unit_test(test_polylla),
                                       cmocka_unit_test(test_fused_cg),
                                       cmocka_unit_test(test_persistent_frame),
                                       cmocka_unit_test(test_batch_pipeline),
                                       cmocka_unit_test(test_errors)};
    rc = cmocka_run_group_tests(tests, NULL, NULL);
  }
  MPI_Finalize();
  return rc;
}
