/* meshbatch: the op deform (registration, keys, handles, provenance; the
 * method is in mb_deform.h). Per mesh on the CPU or the GPU
 * (cuda/deform/mb_deform_cuda.h); no partitioned form. Each stage records
 * `stage_N_deform` in the provenance (N: the stage's provenance number):
 * iterations, converged, planarity, regularity, handle error, the last
 * constraint weight; `-v` prints the same and the phases' times. The
 * output gains the per-face field `planarity` (each face's residual / the
 * mean edge length). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_adjacency.h"
#include "mb_deform.h"
#include "mb_deform_cuda.h"
#include "mb_log.h"
#include "mb_op.h"

/* ------------------------------------------------------------ handles file */

mb_error mb_deform_read_handles(const char *path, const char *mesh, int64_t nv, double *target,
                                int64_t *count) {
  FILE *fp = fopen(path, "r");
  MB_CHECK(fp, MB_ERR_IO, "cannot open the handles file %s: %s", path, strerror(errno));
  for (int64_t i = 0; i < 3 * nv; i++) target[i] = NAN;
  *count = 0;
  char line[4096];
  mb_error err = MB_SUCCESS;
  for (int ln = 1; fgets(line, sizeof line, fp); ln++) {
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    char *tok[6], *save = NULL; /* strtok_r: a preparing thread reads beside a run */
    int nt = 0;
    for (char *s = strtok_r(line, " \t\r\n", &save); s && nt < 6;
         s = strtok_r(NULL, " \t\r\n", &save))
      tok[nt++] = s;
    if (nt == 0) continue;
    MB_CHECK_GOTO(err, done, nt == 5, MB_ERR_FORMAT,
                  "%s:%d: %s fields; a handle line is MESH VERTEX X Y Z", path, ln,
                  nt > 5 ? "more than 5" : (nt == 1 ? "1" : nt == 2 ? "2" : nt == 3 ? "3" : "4"));
    char *end;
    errno = 0;
    const long long v = strtoll(tok[1], &end, 10);
    MB_CHECK_GOTO(err, done, *end == '\0' && errno == 0 && v >= 0 && isdigit((unsigned char)tok[1][0]),
                  MB_ERR_FORMAT, "%s:%d: vertex '%s' is not a non-negative integer", path, ln,
                  tok[1]);
    double c[3];
    for (int d = 0; d < 3; d++) {
      c[d] = strtod(tok[2 + d], &end);
      MB_CHECK_GOTO(err, done, *end == '\0' && end != tok[2 + d], MB_ERR_FORMAT,
                    "%s:%d: coordinate '%s' is not a number", path, ln, tok[2 + d]);
      MB_CHECK_GOTO(err, done, isfinite(c[d]), MB_ERR_FORMAT,
                    "%s:%d: coordinate '%s' is not finite (NaN or infinite target)", path, ln,
                    tok[2 + d]);
    }
    if (strcmp(tok[0], mesh) != 0) continue;
    MB_CHECK_GOTO(err, done, v < nv, MB_ERR_FORMAT,
                  "%s:%d: vertex %lld is past the vertex count of %s (%lld vertices, 0-based)",
                  path, ln, v, mesh, (long long)nv);
    MB_CHECK_GOTO(err, done, isnan(target[3 * v]), MB_ERR_FORMAT,
                  "%s:%d: vertex %lld of %s is given twice", path, ln, v, mesh);
    for (int d = 0; d < 3; d++) target[3 * v + d] = c[d];
    (*count)++;
  }
done:
  fclose(fp);
  return err;
}

/* ------------------------------------------------------------ running */

/* The provenance key of a stage: stage_N_deform with N counted as the
 * runner counts stage_N (after an input's earlier stages). */
static mb_error record(mb_attrs *attrs, const mb_stage *stage, const char *text) {
  int first = 0;
  char key[64];
  for (;; first++) {
    snprintf(key, sizeof key, "stage_%d", first);
    if (!mb_attrs_get(attrs, key)) break;
  }
  snprintf(key, sizeof key, "stage_%d_deform", first + stage->index);
  return mb_attrs_set(attrs, key, text);
}

/* A relative handles path is read from the job file's folder. */
static void handles_path(const mb_stage *st, const char *h, char *buf, size_t len) {
  const char *slash = st->file ? strrchr(st->file, '/') : NULL;
  if (h[0] == '/' || !slash) snprintf(buf, len, "%s", h);
  else snprintf(buf, len, "%.*s/%s", (int)(slash - st->file), st->file, h);
}

/* The handle targets of mesh m for stage st: the file, or the field
 * `handle`, or none (*target NULL). */
static mb_error targets(const mb_stage *st, const mb_mesh *m, double **target) {
  const mb_deform_params *p = st->params;
  *target = NULL;
  if (p->handles[0]) {
    char path[4096];
    handles_path(st, p->handles, path, sizeof path);
    double *t;
    MB_CALLOC(t, 3 * m->nv);
    int64_t count = 0;
    mb_error e = mb_deform_read_handles(path, m->name, m->nv, t, &count);
    if (e) {
      free(t);
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", mb_error_message());
      return mb_error_set(e, __FILE__, __LINE__, __func__, "%s: %s", m->name, msg);
    }
    *target = t;
    return MB_SUCCESS;
  }
  const int k = mb_mesh_field_index(m, "handle");
  if (k < 0) return MB_SUCCESS;
  MB_CHECK(m->fields[k].ncomp == 3 && m->fields[k].data, MB_ERR_FORMAT,
           "%s: the field `handle` has %d components (3: the target, NaN where free)", m->name,
           m->fields[k].ncomp);
  double *t;
  MB_CALLOC(t, 3 * m->nv);
  memcpy(t, m->fields[k].data, sizeof(double) * 3 * (size_t)m->nv);
  *target = t;
  return MB_SUCCESS;
}

/* A mesh's host setup made ahead of its run by the runner's preparing
 * thread (mb_op_info.prepare): the adjacency (every stage's), the first
 * stage's handle targets and, on CUDA, its mb_deform_cuda_prepare. */
typedef struct deform_prepared {
  mb_adjacency *adj;
  double *target;             /* NULL: no handles */
  mb_deform_mesh dm;          /* borrowed by prep: its address stays */
  mb_deform_cuda_prep *prep;  /* CUDA only */
} deform_prepared;

static void deform_prepared_free(void *arg) {
  deform_prepared *d = arg;
  if (!d) return;
  mb_deform_cuda_prep_free(d->prep);
  free(d->target);
  mb_adjacency_free(d->adj);
  free(d);
}

static mb_error prepare(const mb_stage *st, mb_mesh *m, int cuda, void **out) {
  *out = NULL;
  deform_prepared *d;
  MB_CALLOC(d, 1);
  mb_error e = mb_adjacency_build_opts(m, 0, &d->adj);
  if (!e) e = targets(st, m, &d->target);
  if (!e && cuda) {
    d->dm = (mb_deform_mesh){m->name, m->nv, m->nf, m->xyz, m->face_offsets, m->face_indices,
                             d->adj, d->target, NULL};
    /* the setup moves hard handles onto their targets: a prepare that
     * fails after that gives the run back the positions as read */
    const mb_deform_params *p = st->params;
    double *x0 = p->hard && d->target ? malloc(sizeof(double) * 3 * (size_t)m->nv + 1) : NULL;
    if (x0) memcpy(x0, m->xyz, sizeof(double) * 3 * (size_t)m->nv);
    if (p->hard && d->target && !x0)
      e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "%s: out of memory", m->name);
    if (!e) e = mb_deform_cuda_prepare(p, &d->dm, NULL, &d->prep);
    if (e && x0) memcpy(m->xyz, x0, sizeof(double) * 3 * (size_t)m->nv);
    free(x0);
  }
  if (e) {
    deform_prepared_free(d);
    return e;
  }
  *out = d;
  return MB_SUCCESS;
}

static mb_error deform_prepare_cpu(const mb_stage *st, mb_mesh *m, void **out) {
  return prepare(st, m, 0, out);
}

static mb_error deform_prepare_cuda(const mb_stage *st, mb_mesh *m, void **out) {
  return prepare(st, m, 1, out);
}

/* One stage on m; pre: its targets and CUDA setup made ahead (NULL: made here). */
static mb_error run_stage(const mb_op_ctx *ctx, const mb_stage *st, mb_mesh *m,
                          const mb_adjacency *adj, deform_prepared *pre) {
  const mb_deform_params *p = st->params;
  double *target = NULL, *fp = NULL;
  if (pre) {
    target = pre->target;
    pre->target = NULL;
  } else {
    MB_CALL(targets(st, m, &target));
  }
  fp = calloc((size_t)(m->nf ? m->nf : 1), sizeof *fp);
  if (!fp) {
    free(target);
    MB_FAIL(MB_ERR_MEMORY, "%s: out of memory", m->name);
  }
  mb_deform_mesh dm = {m->name, m->nv, m->nf, m->xyz, m->face_offsets, m->face_indices,
                       adj, target, ctx};
  mb_deform_report rep = {0};
  rep.face_planarity = fp;
  mb_op_computed(ctx, MB_PRECISION_FLOAT64);
  const double t0 = mb_wtime();
  mb_error e;
  if (pre && pre->prep) { /* the prepared setup borrows pre->dm: the run's stop query there */
    pre->dm.ctx = ctx;
    mb_deform_cuda_prep *prep = pre->prep;
    pre->prep = NULL;
    e = mb_deform_run_cuda_prepared(prep, &rep);
  } else {
    e = ctx->backend->kind == MB_BACKEND_CUDA ? mb_deform_run_cuda(p, &dm, &rep, NULL)
                                              : mb_deform_run_cpu(p, &dm, &rep);
  }
  const double ms = 1e3 * (mb_wtime() - t0);
  if (ctx->device_s) *ctx->device_s += 1e-3 * rep.device_ms; /* the runner's GPU busy */
  free(target);
  if (e) {
    free(fp);
    return e;
  }
  char text[512];
  snprintf(text, sizeof text,
           "%s %s: iterations %d converged %s planarity %.3g regularity %.3g handle_error %.3g "
           "handles %lld pinned %lld weight %g factorizations %d pcg_iterations %lld",
           p->hard ? "hard" : "soft", p->constraint == MB_DEFORM_PLANAR ? "planar" : "regular",
           rep.iterations, rep.converged ? "yes" : "no", rep.planarity, rep.regularity,
           rep.handle_error, (long long)rep.handles, (long long)rep.pinned, rep.mu,
           rep.factorizations, rep.pcg_iterations);
  mb_log(MB_LOG_VERBOSE,
         "%s: deform %s; %.1f ms: analysis %.1f%s, factor %.1f, projections %.1f, solves %.1f, "
         "updates %.1f, after the frame %.1f; the device %.1f",
         m->name, text, ms, rep.analyze_ms, pre ? " (set up ahead)" : "", rep.factor_ms,
         rep.project_ms, rep.solve_ms, rep.update_ms, rep.finish_ms, rep.device_ms);
  e = record(&m->attrs, st, text);
  if (!e) e = mb_mesh_set_face_field(m, "planarity", 1, fp);
  free(fp);
  return e;
}

/* ctx->prepared (the runner's preparing thread: deform_prepare_*) is the
 * first stage's setup and every stage's adjacency; freed here either way. */
static mb_error deform_run(const mb_op_ctx *ctx, const mb_stage *stages, int n, mb_mesh **mesh) {
  mb_mesh *m = *mesh;
  deform_prepared *pre = ctx->prepared;
  mb_adjacency *adj = NULL;
  mb_error e = MB_SUCCESS;
  if (pre) {
    adj = pre->adj;
    pre->adj = NULL;
  } else {
    e = mb_adjacency_build_opts(m, 0, &adj);
  }
  for (int s = 0; s < n && !e; s++) e = run_stage(ctx, &stages[s], m, adj, s == 0 ? pre : NULL);
  deform_prepared_free(pre);
  mb_adjacency_free(adj);
  return e;
}

static double deform_cost(int64_t nv, int64_t nf, const void *params) {
  const mb_deform_params *p = params;
  return 30.0 * (double)(nv + nf) * (double)p->iterations;
}

/* The output gains the face field `planarity`. */
static void deform_grow(const void *params, mb_size_estimate *s) {
  (void)params;
  s->face_values += 1;
}

/* ------------------------------------------------------------ parameters */

static const char *const constraint_names[] = {"planar", "regular", NULL};
static const char *const yes_no[] = {"no", "yes", NULL};
static const char *const solver_names[] = {"cholesky", "pcg", "auto", NULL};

static const mb_param deform_params[] = {
    {"constraint", MB_PARAM_NAME, offsetof(mb_deform_params, constraint), 0, 0, 0, 0, 0,
     MB_DEFORM_PLANAR, constraint_names, "planar (faces on a plane) or regular (regular n-gons)"},
    {"hard", MB_PARAM_NAME, offsetof(mb_deform_params, hard), 0, 0, 0, 0, 0, 0, yes_no,
     "no: weighted (soft) constraints; yes: exact, by the augmented Lagrangian (handles pinned)"},
    {"iterations", MB_PARAM_INT, offsetof(mb_deform_params, iterations), 1, 100000000, 0, 0, 0,
     50, NULL, "cap of local-global iterations (the chapter's M_max)"},
    {"tolerance", MB_PARAM_REAL, offsetof(mb_deform_params, tolerance), 0, 1, 1, 1, 0, 1e-8,
     NULL, "constraint residual (distance / mean edge length) to stop at, in (0, 1)"},
    {"w_handle", MB_PARAM_REAL, offsetof(mb_deform_params, w_handle), 0, 1e12, 1, 0, 0, 100,
     NULL, "weight of the handles (soft mode), > 0"},
    {"w_close", MB_PARAM_REAL, offsetof(mb_deform_params, w_close), 0, 1e12, 1, 0, 0, 1, NULL,
     "weight of closeness to the input, > 0"},
    {"w_fair", MB_PARAM_REAL, offsetof(mb_deform_params, w_fair), 0, 1e12, 0, 0, 0, 0.1, NULL,
     "weight of fairness |K (p - p0)|^2, uniform graph Laplacian K, >= 0"},
    {"w_constraint", MB_PARAM_REAL, offsetof(mb_deform_params, w_constraint), 0, 1e12, 1, 0, 0,
     10, NULL, "weight of the face constraints (soft); the first penalty mu (hard); > 0"},
    {"handles", MB_PARAM_PATH, offsetof(mb_deform_params, handles), 0, 0, 0, 0, 0, 0, NULL,
     "a handles file (lines MESH VERTEX X Y Z, 0-based); default: the field `handle`"},
    {"fix_boundary", MB_PARAM_NAME, offsetof(mb_deform_params, fix_boundary), 0, 0, 0, 0, 0, 0,
     yes_no, "yes: boundary vertices keep their input positions"},
    {"solver", MB_PARAM_NAME, offsetof(mb_deform_params, solver), 0, 0, 0, 0, 0,
     MB_DEFORM_AUTO, solver_names,
     "cholesky (CHOLMOD, factored once per penalty), pcg (Jacobi CG, warm-started) or auto "
     "(pcg on CUDA; on the CPU pcg with cg_iterations >= 1, else cholesky)"},
    {"cg_iterations", MB_PARAM_INT, offsetof(mb_deform_params, cg_iterations), 0, 100000, 0, 0,
     0, 0, NULL,
     "solver pcg (or auto): 0, each solve to relative residual 1e-12; k >= 1, at most k CG "
     "iterations per iteration (inexact, warm-started)"}};

int mb_deform_bench(int argc, char **argv); /* mb_deform_bench.c */

const mb_op_info mb_op_deform = {
    .name = "deform",
    .room = "deform",
    .summary = "constrained deformation: planar or regular faces under handles, local-global "
               "iterations with soft or hard (augmented Lagrangian) constraints",
    .source = "C. Kaspar, B. Deng, Real-Time Deformation of Constrained Meshes Using GPU, eq. "
              "(2.2), sections 2.2.2.1-2.2.2.2; B. Deng et al., Exploring local modifications "
              "for constrained meshes, Eurographics 2013",
    .in = MB_KIND_SURFACE,
    .out = MB_KIND_SURFACE,
    .params = deform_params,
    .nparams = (int)(sizeof deform_params / sizeof deform_params[0]),
    .params_size = sizeof(mb_deform_params),
    .cost = deform_cost,
    .run = {deform_run, deform_run},
    .bench = mb_deform_bench,
    .prepare = {deform_prepare_cpu, deform_prepare_cuda},
    .prepared_free = deform_prepared_free,
    .grow = deform_grow};
