/* meshbatch: the stencil ops on grid3d datasets (registration and per-grid
 * entries): derivative, grid_laplacian, heat, wave.
 *
 * Method: 8th-order central finite differences (first derivative
 * coefficients 4/5, -1/5, 4/105, -1/280; second derivative -205/72, 8/5,
 * -1/5, 8/315, -1/560), B. Fornberg, "Generation of finite difference
 * formulas on arbitrarily spaced grids", Math. Comp. 51 (1988), table 1;
 * as in NVIDIA's "Finite Difference Methods in CUDA C/C++" (M. Harris,
 * 2013). The exact arithmetic is in mb_stencil.h.
 *
 * Every op works on every field of the grid present before its stage, in
 * the field's precision, or on those its stage's `fields` key names:
 *   derivative      adds <field>_dz, <field>_dy, <field>_dx (axis all) or one of them
 *   grid_laplacian  adds <field>_lap
 *   heat            steps every field in place: u <- u + alpha dt lap(u), `steps` times
 *   wave            steps every field in place by leapfrog from rest, started at
 *                   second order (u_prev = u + (c dt)^2 / 2 lap(u)):
 *                   u_next = 2 u - u_prev + (c dt)^2 lap(u)
 * (`laplacian` is the smoothing op of surfaces, hence grid_laplacian.)
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_cart.h"
#include "mb_domain.h"
#include "mb_log.h"
#include "mb_op.h"
#include "mb_stencil.h"
#include "mb_stencil_cuda.h"

typedef struct mb_stencil_params {
  int axis;        /* derivative: 0 z, 1 y, 2 x, 3 all */
  int boundary;    /* mb_stencil_boundary */
  double outside;  /* dirichlet value */
  double alpha;    /* heat: diffusivity (length^2 / time) */
  double c;        /* wave: speed (length / time) */
  double dt;       /* heat, wave: time step */
  int steps;       /* heat, wave: steps */
  int every;       /* heat: a snapshot every `every` steps (0: none) */
  char fields[MB_PARAM_NAMES_LEN]; /* the fields worked on, "u,v"; "": all */
} mb_stencil_params;

static const char *const axis_names[] = {"z", "y", "x", "all", NULL};
static const char *const boundary_names[] = {"periodic", "dirichlet", NULL};

#define BOUNDARY_PARAM                                                                        \
  {"boundary", MB_PARAM_NAME, offsetof(mb_stencil_params, boundary), 0, 0, 0, 0, 0,           \
   MB_STENCIL_PERIODIC, boundary_names,                                                       \
   "periodic (wrap around the grid) or dirichlet (the value `outside` beyond every face)"}
#define OUTSIDE_PARAM                                                                         \
  {"outside", MB_PARAM_REAL, offsetof(mb_stencil_params, outside), -1e300, 1e300, 0, 0, 0, 0, \
   NULL, "dirichlet: the value of every point beyond the grid"}
#define DT_PARAM                                                                              \
  {"dt", MB_PARAM_REAL, offsetof(mb_stencil_params, dt), 0, 1e300, 1, 0, 1, 0, NULL,          \
   "time step (required; refused beyond the stability limit, which the message states)"}
#define FIELDS_PARAM                                                                          \
  {"fields", MB_PARAM_NAMES, offsetof(mb_stencil_params, fields), 0, 0, 0, 0, 0, 0, NULL,     \
   "the fields worked on, e.g. [u] (default: every field present before the stage); "       \
   "others are kept unchanged; a name the grid lacks is an error"}
#define STEPS_PARAM                                                                           \
  {"steps", MB_PARAM_INT, offsetof(mb_stencil_params, steps), 0, 100000000, 0, 0, 1, 0, NULL, \
   "number of time steps (required)"}

static const mb_param derivative_params[] = {
    {"axis", MB_PARAM_NAME, offsetof(mb_stencil_params, axis), 0, 0, 0, 0, 0, 3, axis_names,
     "z, y, x, or all (three fields)"},
    BOUNDARY_PARAM, OUTSIDE_PARAM, FIELDS_PARAM};
static const mb_param laplacian_params[] = {BOUNDARY_PARAM, OUTSIDE_PARAM, FIELDS_PARAM};
static const mb_param heat_params[] = {
    {"alpha", MB_PARAM_REAL, offsetof(mb_stencil_params, alpha), 0, 1e300, 1, 0, 0, 1, NULL,
     "diffusivity, > 0 (length^2 per time unit)"},
    DT_PARAM, STEPS_PARAM, BOUNDARY_PARAM, OUTSIDE_PARAM,
    {"every", MB_PARAM_INT, offsetof(mb_stencil_params, every), 0, 100000000, 0, 0, 0, 0, NULL,
     "0, or k: also keep the field at steps 0, k, 2k, ... and the last as fields "
     "NAME@t=TIME, a time series that ParaView plays from the dataset's own .xdmf"},
    FIELDS_PARAM};
static const mb_param wave_params[] = {
    {"c", MB_PARAM_REAL, offsetof(mb_stencil_params, c), 0, 1e300, 1, 0, 0, 1, NULL,
     "wave speed, > 0 (length per time unit)"},
    DT_PARAM, STEPS_PARAM, BOUNDARY_PARAM, OUTSIDE_PARAM, FIELDS_PARAM};

#define NPARAMS(t) ((int)(sizeof(t) / sizeof((t)[0])))

/* The kernels' view of grid m under stage parameters p. */
static mb_stencil_grid grid_of(const mb_mesh *m, const mb_stencil_params *p) {
  mb_stencil_grid g = {.bc = (mb_stencil_boundary)p->boundary, .outside = p->outside};
  for (int a = 0; a < 3; a++) {
    g.n[a] = m->shape[a];
    g.h[a] = m->spacing[a];
  }
  return g;
}

/* The fields stage st works on, sel[f] = 1 for f < m->nfields (sel owned
 * by the caller, freed with free): those its `fields` key names, or every
 * field present before it. A name the grid lacks: MB_ERR_ARG with the job
 * file and line of the stage, and the grid's fields. */
static mb_error select_fields(const mb_mesh *m, const mb_stage *st, unsigned char **sel) {
  const mb_stencil_params *p = st->params;
  *sel = calloc((size_t)(m->nfields > 0 ? m->nfields : 1), 1);
  MB_CHECK(*sel, MB_ERR_MEMORY, "out of memory for the fields of grid '%s'", m->name);
  if (!p->fields[0]) {
    memset(*sel, 1, (size_t)m->nfields);
    return MB_SUCCESS;
  }
  for (const char *a = p->fields; *a;) {
    const size_t w = strcspn(a, ",");
    int found = -1;
    for (int f = 0; f < m->nfields && found < 0; f++)
      if (strlen(m->fields[f].name) == w && !strncmp(m->fields[f].name, a, w)) found = f;
    if (found < 0) {
      char have[512] = "";
      size_t used = 0;
      for (int f = 0; f < m->nfields && used < sizeof have; f++)
        used += (size_t)snprintf(have + used, sizeof have - used, "%s%s", f ? ", " : "",
                                 m->fields[f].name);
      free(*sel);
      *sel = NULL;
      MB_FAIL(MB_ERR_ARG, "%s:%d: stages[%d].fields: '%.*s' is not a field of grid '%s' (its "
              "fields before this %s stage: %s)", st->file ? st->file : "job", st->line,
              st->index, (int)w, a, m->name, st->op->name, m->nfields ? have : "none");
    }
    (*sel)[found] = 1;
    a += w + (a[w] == ',');
  }
  return MB_SUCCESS;
}

/* The fields a stage works on (sel): one component, finite values. */
static mb_error check_fields(const mb_mesh *m, const char *op, const unsigned char *sel) {
  MB_CHECK(m->kind == MB_KIND_GRID3D, MB_ERR_ARG, "%s: %s works on grid3d datasets, '%s' is a %s",
           m->name, op, m->name, mb_kind_name(m->kind));
  MB_CHECK(m->nfields > 0, MB_ERR_ARG, "grid '%s' has no field for %s", m->name, op);
  for (int f = 0; f < m->nfields; f++) {
    if (!sel[f]) continue;
    const mb_field *fd = &m->fields[f];
    MB_CHECK(fd->ncomp == 1, MB_ERR_ARG,
             "grid '%s': field '%s' has %d components; %s works on scalar fields", m->name,
             fd->name, fd->ncomp, op);
    for (int64_t k = 0; k < m->nv; k++) { /* a NaN or infinity would spread over the grid */
      const double v = fd->dtype == MB_FLOAT32 ? (double)fd->data32[k] : fd->data[k];
      MB_CHECK(isfinite(v), MB_ERR_FORMAT,
               "grid '%s': field '%s' has a non-finite value (%g) at point (%lld, %lld, %lld) "
               "of the block (z, y, x); %s needs finite values",
               m->name, fd->name, v, (long long)(k / (m->shape[1] * m->shape[2])),
               (long long)(k / m->shape[2] % m->shape[1]), (long long)(k % m->shape[2]), op);
    }
  }
  return MB_SUCCESS;
}

/* A new field `<name><suffix>` of the same type as field f, from buf. */
static mb_error add_field(mb_mesh *m, int f, const char *suffix, const void *buf) {
  char name[300];
  snprintf(name, sizeof name, "%s%s", m->fields[f].name, suffix);
  return m->fields[f].dtype == MB_FLOAT32 ? mb_mesh_set_field_f32(m, name, 1, buf)
                                          : mb_mesh_set_field(m, name, 1, buf);
}

/* The time-series snapshot of field f after `step` steps of dt: a new
 * field `<name>@t=<step dt>` from buf (docs/format.md). */
static mb_error add_snapshot(mb_mesh *m, int f, int64_t step, double dt, const void *buf) {
  char suffix[64];
  snprintf(suffix, sizeof suffix, "@t=%.9g", (double)step * dt);
  return add_field(m, f, suffix, buf);
}

/* Steps of the next run of a time series: up to the next snapshot. */
static int64_t next_run(const mb_stencil_params *p, int64_t done) {
  const int64_t left = p->steps - done;
  return p->every > 0 && p->every < left ? p->every : left;
}

/* The stability limit of stage st's steps (heat: wave = 0; wave: 1) on
 * grid g (its spacing), of the dataset `grid`: beyond it, MB_ERR_ARG with
 * the job file and line of the stage before the limit's message
 * (mb_stencil_check_heat, mb_stencil_check_wave) and the grid named. Not
 * collective. */
static mb_error stage_check_dt(const mb_stage *st, int wave, const mb_stencil_grid *g,
                               const char *grid) {
  const mb_stencil_params *p = st->params;
  if ((wave ? mb_stencil_check_wave(g, p->c, p->dt, p->steps)
            : mb_stencil_check_heat(g, p->alpha, p->dt, p->steps)) == MB_SUCCESS)
    return MB_SUCCESS;
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", mb_error_message());
  mb_error_clear();
  MB_FAIL(MB_ERR_ARG, "%s:%d: stages[%d].dt: %s; grid '%s'", st->file ? st->file : "job",
          st->line, st->index, msg, grid);
}

/* mb_op_info.check_spacing of heat and wave: the stability limit on a grid
 * of spacing h (z, y, x), before any work. */
static mb_error check_spacing(const mb_stage *st, int wave, const char *grid, const double h[3]) {
  mb_stencil_grid g = {.bc = MB_STENCIL_PERIODIC};
  for (int a = 0; a < 3; a++) {
    g.n[a] = 1;
    g.h[a] = h[a];
  }
  return stage_check_dt(st, wave, &g, grid);
}

static mb_error heat_check_spacing(const mb_stage *st, const char *grid, const double h[3]) {
  return check_spacing(st, 0, grid, h);
}

static mb_error wave_check_spacing(const mb_stage *st, const char *grid, const double h[3]) {
  return check_spacing(st, 1, grid, h);
}

static mb_error grid_stage_cuda_fields(const mb_op_ctx *ctx, const mb_stage *st, int halo,
                                       mb_cart *cart, mb_mesh *m, const mb_stencil_grid *blkp,
                                       const unsigned char *sel);

static mb_error alloc_like(const mb_mesh *m, int f, void **buf) {
  const size_t width = m->fields[f].dtype == MB_FLOAT32 ? sizeof(float) : sizeof(double);
  *buf = malloc(width * (size_t)m->nv);
  MB_CHECK(*buf, MB_ERR_MEMORY, "out of memory for a field of grid '%s' (%lld points)", m->name,
           (long long)m->nv);
  return MB_SUCCESS;
}

/* One derivative (op 0-2) or Laplacian (op 3) of field f into out, on the
 * CPU or the current CUDA device. */
static mb_error apply(int cuda, const mb_stencil_grid *g, int op, const mb_field *fd, void *out) {
  const int f32 = fd->dtype == MB_FLOAT32;
  if (cuda)
    return mb_stencil_cuda_apply(g, op, f32, f32 ? (const void *)fd->data32 : fd->data, out);
  if (op < 3)
    return f32 ? mb_stencil_derivative_f32(g, op, fd->data32, out)
               : mb_stencil_derivative_f64(g, op, fd->data, out);
  return f32 ? mb_stencil_laplacian_f32(g, fd->data32, out)
             : mb_stencil_laplacian_f64(g, fd->data, out);
}

/* Every op computes each field in its own type, on either backend: the
 * precisions computed in are the types of m's fields (provenance). */
static void report_precision(const mb_op_ctx *ctx, const mb_mesh *m) {
  for (int f = 0; f < m->nfields; f++)
    mb_op_computed(ctx, m->fields[f].dtype == MB_FLOAT32 ? MB_PRECISION_FLOAT32
                                                         : MB_PRECISION_FLOAT64);
}

static int on_cuda(const mb_op_ctx *ctx) {
  return ctx && ctx->backend && ctx->backend->kind == MB_BACKEND_CUDA;
}

static mb_error derivative_run(const mb_op_ctx *ctx, const mb_stage *stages, int n,
                               mb_mesh **mesh) {
  const int cuda = on_cuda(ctx);
  mb_mesh *m = *mesh;
  report_precision(ctx, m);
  for (int s = 0; s < n; s++) {
    const mb_stencil_params *p = stages[s].params;
    unsigned char *sel = NULL;
    MB_CALL(select_fields(m, &stages[s], &sel));
    mb_error e = check_fields(m, "derivative", sel);
    const mb_stencil_grid g = grid_of(m, p);
    static const char *const suffix[3] = {"_dz", "_dy", "_dx"};
    const int nf = m->nfields;
    for (int f = 0; f < nf && !e; f++)
      for (int a = 0; a < 3 && !e && sel[f]; a++) {
        if (p->axis != 3 && p->axis != a) continue;
        void *du = NULL;
        e = alloc_like(m, f, &du);
        if (!e) e = apply(cuda, &g, a, &m->fields[f], du);
        if (!e) e = add_field(m, f, suffix[a], du);
        free(du);
      }
    free(sel);
    MB_CALL(e);
  }
  return MB_SUCCESS;
}

static mb_error laplacian_run(const mb_op_ctx *ctx, const mb_stage *stages, int n,
                              mb_mesh **mesh) {
  const int cuda = on_cuda(ctx);
  mb_mesh *m = *mesh;
  report_precision(ctx, m);
  for (int s = 0; s < n; s++) {
    unsigned char *sel = NULL;
    MB_CALL(select_fields(m, &stages[s], &sel));
    mb_error e = check_fields(m, "grid_laplacian", sel);
    const mb_stencil_grid g = grid_of(m, stages[s].params);
    const int nf = m->nfields;
    for (int f = 0; f < nf && !e; f++) {
      if (!sel[f]) continue;
      void *lap = NULL;
      e = alloc_like(m, f, &lap);
      if (!e) e = apply(cuda, &g, 3, &m->fields[f], lap);
      if (!e) e = add_field(m, f, "_lap", lap);
      free(lap);
    }
    free(sel);
    MB_CALL(e);
  }
  return MB_SUCCESS;
}

static mb_error heat_run(const mb_op_ctx *ctx, const mb_stage *stages, int n, mb_mesh **mesh) {
  const int cuda = on_cuda(ctx);
  mb_mesh *m = *mesh;
  report_precision(ctx, m);
  for (int s = 0; s < n; s++) {
    const mb_stencil_params *p = stages[s].params;
    const mb_stencil_grid g = grid_of(m, p);
    unsigned char *sel = NULL;
    MB_CALL(select_fields(m, &stages[s], &sel));
    mb_error fe = check_fields(m, "heat", sel);
    if (!fe) fe = stage_check_dt(&stages[s], 0, &g, m->name);
    const int nf = m->nfields; /* snapshots are added behind them */
    for (int f = 0; f < nf && !fe; f++) {
      if (!sel[f]) continue;
      void *work = NULL;
      mb_error e = alloc_like(m, f, &work);
      if (e) {
        fe = e;
        break;
      }
      int64_t done = 0;
      if (p->every > 0)
        e = add_snapshot(m, f, 0, p->dt,
                         m->fields[f].dtype == MB_FLOAT32 ? (void *)m->fields[f].data32
                                                          : (void *)m->fields[f].data);
      /* steps per run: grown or shrunk to about 0.1 s between stop points (the
       * same bits: a run ends where the next begins); on the GPU, whose runs
       * copy the grid in and out, runs end at the snapshots only and stop
       * inside at their own stop points (mb_stencil_cuda_stop) */
      int64_t chunk = cuda ? INT64_MAX : 1;
      while (!e && done < p->steps) {
        if (mb_op_should_stop(ctx, (double)done, (double)p->steps)) {
          e = mb_op_stopped(ctx);
          break;
        }
        int64_t k = next_run(p, done);
        if (p->every > 0 && done % p->every && p->every - done % p->every < k)
          k = p->every - done % p->every; /* up to the next snapshot */
        if (k > chunk) k = chunk;
        const double t0 = mb_wtime();
        mb_field *fd = &m->fields[f];
        const int f32 = fd->dtype == MB_FLOAT32;
        const mb_stencil_cuda_stop cs = {.ctx = ctx, .done = done, .total = p->steps};
        e = cuda ? mb_stencil_cuda_heat(&g, f32, p->alpha, p->dt, k,
                                        f32 ? (void *)fd->data32 : (void *)fd->data, &cs)
            : f32 ? mb_stencil_heat_f32(&g, p->alpha, p->dt, k, fd->data32, work)
                  : mb_stencil_heat_f64(&g, p->alpha, p->dt, k, fd->data, work);
        done += k;
        const double took = mb_wtime() - t0;
        if (took < 0.05 && chunk < ((int64_t)1 << 30)) chunk *= 2;
        else if (took > 0.2 && chunk > 1 && !cuda) chunk /= 2;
        if (!e && p->every > 0 && (done % p->every == 0 || done == p->steps))
          e = add_snapshot(m, f, done, p->dt, f32 ? (void *)fd->data32 : (void *)fd->data);
      }
      free(work);
      fe = e;
    }
    free(sel);
    MB_CALL(fe);
  }
  return MB_SUCCESS;
}

static mb_error wave_run(const mb_op_ctx *ctx, const mb_stage *stages, int n, mb_mesh **mesh) {
  const int cuda = on_cuda(ctx);
  mb_mesh *m = *mesh;
  report_precision(ctx, m);
  for (int s = 0; s < n; s++) {
    const mb_stencil_params *p = stages[s].params;
    unsigned char *sel = NULL;
    MB_CALL(select_fields(m, &stages[s], &sel));
    mb_error fe = check_fields(m, "wave", sel);
    const mb_stencil_grid g = grid_of(m, p);
    if (!fe) fe = stage_check_dt(&stages[s], 1, &g, m->name);
    for (int f = 0; f < m->nfields && !fe; f++) {
      if (!sel[f]) continue;
      mb_field *fd = &m->fields[f];
      void *prev = NULL, *work = NULL;
      mb_error e = alloc_like(m, f, &prev);
      if (!e) e = alloc_like(m, f, &work);
      const int f32 = fd->dtype == MB_FLOAT32;
      if (!e) { /* from rest, second order: u_prev = u + (c dt)^2 / 2 lap(u), a heat step */
        const double half = 0.5 * (p->c * p->c * p->dt * p->dt);
        if (cuda) e = mb_stencil_cuda_heat_step(&g, f32, half, f32 ? (void *)fd->data32 : fd->data, prev);
        else if (f32) e = mb_stencil_heat_step_f32(&g, half, fd->data32, prev);
        else e = mb_stencil_heat_step_f64(&g, half, fd->data, prev);
      }
      /* runs of steps grown or shrunk to about 0.1 s, a stop point between
       * them (the same bits: each run leaves prev and u where the next goes
       * on); on the GPU, whose runs copy the grid in and out, one run with
       * its own stop points (mb_stencil_cuda_stop) */
      for (int64_t done = 0, chunk = cuda ? INT64_MAX : 1; !e && done < p->steps;) {
        if (mb_op_should_stop(ctx, (double)done, (double)p->steps)) {
          e = mb_op_stopped(ctx);
          break;
        }
        const int64_t k = p->steps - done < chunk ? p->steps - done : chunk;
        const double t0 = mb_wtime();
        const mb_stencil_cuda_stop cs = {.ctx = ctx, .done = done, .total = p->steps};
        e = cuda ? mb_stencil_cuda_wave(&g, f32, p->c, p->dt, k, prev,
                                        f32 ? (void *)fd->data32 : (void *)fd->data, &cs)
            : f32 ? mb_stencil_wave_f32(&g, p->c, p->dt, k, prev, fd->data32, work)
                  : mb_stencil_wave_f64(&g, p->c, p->dt, k, prev, fd->data, work);
        done += k;
        const double took = mb_wtime() - t0;
        if (took < 0.05 && chunk < ((int64_t)1 << 30)) chunk *= 2;
        else if (took > 0.2 && chunk > 1 && !cuda) chunk /= 2;
      }
      free(prev);
      free(work);
      fe = e;
    }
    free(sel);
    MB_CALL(fe);
  }
  return MB_SUCCESS;
}

/* points x 25 reads per step */
static double stencil_cost(int64_t nv, int64_t nf, const void *params) {
  (void)nf;
  const mb_stencil_params *p = params;
  return (double)nv * (p->steps > 0 ? (double)p->steps : 1.0);
}

/* ------------------------------------------------ a grid split over ranks */

/* One field of this rank's block, framed (4 ghost planes), in double or
 * float; the kernels of mb_stencil.h on framed arrays, the halo from the
 * Cartesian plan (Dirichlet faces set after each exchange). */
typedef struct framed {
  const mb_cart *cart;
  mb_stencil_grid g;     /* the block: n = nloc, ghost 4 */
  int f32;
  int64_t L[3], n;       /* framed sizes and points */
} framed;

static framed framed_of(const mb_cart *c, const mb_mesh *m, const mb_stencil_params *p, int f32) {
  framed fr = {.cart = c, .f32 = f32};
  fr.g = grid_of(m, p);
  fr.g.ghost = 4;
  fr.n = 1;
  for (int a = 0; a < 3; a++) {
    fr.g.n[a] = c->nloc[a];
    fr.L[a] = c->nloc[a] + 8;
    fr.n *= fr.L[a];
  }
  return fr;
}

static void *framed_alloc(const framed *fr) {
  return calloc((size_t)fr->n, fr->f32 ? sizeof(float) : sizeof(double));
}

/* plain block values <-> the framed array's interior */
static void framed_copy(const framed *fr, void *framed_buf, void *plain, int to_frame) {
  const size_t w = fr->f32 ? sizeof(float) : sizeof(double);
  for (int64_t k = 0; k < fr->g.n[0]; k++)
    for (int64_t j = 0; j < fr->g.n[1]; j++) {
      char *fp = (char *)framed_buf + w * (size_t)(((k + 4) * fr->L[1] + j + 4) * fr->L[2] + 4);
      char *pp = (char *)plain + w * (size_t)((k * fr->g.n[1] + j) * fr->g.n[2]);
      if (to_frame) memcpy(fp, pp, w * (size_t)fr->g.n[2]);
      else memcpy(pp, fp, w * (size_t)fr->g.n[2]);
    }
}

/* Fill the ghost faces: halo exchange, then the Dirichlet value beyond the grid. */
static mb_error framed_halo(const framed *fr, void *u) {
  mb_cart *c = (mb_cart *)fr->cart;
  const mb_cart_dtype dt = fr->f32 ? MB_CART_FLOAT32 : MB_CART_FLOAT64;
  MB_CALL(mb_cart_exchange_begin(c, dt, u));
  MB_CALL(mb_cart_exchange_end(c));
  if (fr->g.bc == MB_STENCIL_DIRICHLET) mb_cart_fill_outside(c, dt, u, fr->g.outside);
  return MB_SUCCESS;
}

static mb_error framed_kernel(const framed *fr, int op, const void *u, void *out) {
  if (op < 3)
    return fr->f32 ? mb_stencil_derivative_f32(&fr->g, op, u, out)
                   : mb_stencil_derivative_f64(&fr->g, op, u, out);
  return fr->f32 ? mb_stencil_laplacian_f32(&fr->g, u, out)
                 : mb_stencil_laplacian_f64(&fr->g, u, out);
}

/* One fused step on the block (mb_stencil_heat_step, mb_stencil_wave_step):
 * heat (wave = 0): out = fma(coef, lap(u), u); wave: out = fma(coef, lap(u),
 * (u + u) - prev). */
static mb_error framed_step(const framed *fr, int wave, double coef, const void *prev,
                            const void *u, void *out) {
  if (fr->f32)
    return wave ? mb_stencil_wave_step_f32(&fr->g, coef, prev, u, out)
                : mb_stencil_heat_step_f32(&fr->g, coef, u, out);
  return wave ? mb_stencil_wave_step_f64(&fr->g, coef, prev, u, out)
              : mb_stencil_heat_step_f64(&fr->g, coef, u, out);
}

/* One stage on every field of the block. */
static mb_error grid_stage(const mb_op_ctx *ctx, const mb_stage *st, mb_cart *cart, mb_mesh *m) {
  const mb_op_info *op = st->op;
  const mb_stencil_params *p = st->params;
  const int is_deriv = op->run[0] == derivative_run, is_lap = op->run[0] == laplacian_run;
  const int is_heat = op->run[0] == heat_run;
  mb_stencil_grid whole = grid_of(m, p); /* the limits depend on the spacing only */
  if (!is_deriv && !is_lap) MB_CALL(stage_check_dt(st, !is_heat, &whole, m->name));
  unsigned char *sel = NULL;
  MB_CALL(select_fields(m, st, &sel));
  mb_error e = check_fields(m, op->name, sel);
  const int nf = m->nfields;
  for (int f = 0; f < nf && !e; f++) {
    if (!sel[f]) continue;
    const int f32 = m->fields[f].dtype == MB_FLOAT32;
    framed fr = framed_of(cart, m, p, f32);
    void *u = framed_alloc(&fr), *w = framed_alloc(&fr), *x = framed_alloc(&fr);
    void *plain = NULL;
    if (!u || !w || !x || alloc_like(m, f, &plain)) {
      free(u); free(w); free(x); free(plain); free(sel);
      MB_FAIL(MB_ERR_MEMORY, "out of memory for a block of grid '%s'", m->name);
    }
    framed_copy(&fr, u, f32 ? (void *)m->fields[f].data32 : (void *)m->fields[f].data, 1);
    if (is_deriv || is_lap) {
      static const char *const suffix[4] = {"_dz", "_dy", "_dx", "_lap"};
      e = framed_halo(&fr, u);
      for (int a = 0; a < 4 && !e; a++) {
        if (is_deriv ? (a == 3 || (p->axis != 3 && p->axis != a)) : a != 3) continue;
        e = framed_kernel(&fr, a, u, w);
        if (!e) {
          framed_copy(&fr, w, plain, 0);
          e = add_field(m, f, suffix[a], plain);
        }
      }
    } else if (is_heat) {
      if (p->every > 0) {
        framed_copy(&fr, u, plain, 0);
        e = add_snapshot(m, f, 0, p->dt, plain);
      }
      for (int64_t s = 0; s < p->steps && !e; s++) {
        if (mb_op_should_stop(ctx, (double)s, (double)p->steps)) e = mb_op_stopped(ctx);
        if (!e) e = framed_halo(&fr, u);
        if (!e) e = framed_step(&fr, 0, p->alpha * p->dt, NULL, u, w);
        void *t = u;
        u = w;
        w = t;
        if (!e && p->every > 0 && ((s + 1) % p->every == 0 || s + 1 == p->steps)) {
          framed_copy(&fr, u, plain, 0);
          e = add_snapshot(m, f, s + 1, p->dt, plain);
        }
      }
      if (!e) framed_copy(&fr, u, f32 ? (void *)m->fields[f].data32 : (void *)m->fields[f].data, 0);
    } else { /* wave from rest: prev = u + (c dt)^2 / 2 lap(u), then leapfrog */
      void *cur = u, *prev = x, *next = w;
      e = framed_halo(&fr, cur);
      if (!e) e = framed_step(&fr, 0, 0.5 * (p->c * p->c * p->dt * p->dt), NULL, cur, prev);
      for (int64_t s = 0; s < p->steps && !e; s++) {
        if (mb_op_should_stop(ctx, (double)s, (double)p->steps)) e = mb_op_stopped(ctx);
        if (!e) e = framed_halo(&fr, cur);
        if (!e) e = framed_step(&fr, 1, p->c * p->c * p->dt * p->dt, prev, cur, next);
        void *t = prev;
        prev = cur;
        cur = next;
        next = t;
      }
      if (!e) framed_copy(&fr, cur, f32 ? (void *)m->fields[f].data32 : (void *)m->fields[f].data, 0);
      u = cur; /* freed below with the others */
      x = prev;
      w = next;
    }
    free(u);
    free(w);
    free(x);
    free(plain);
  }
  free(sel);
  return e;
}

/* The same stage with the block on the current CUDA device
 * (mb_stencil_cuda_block). */
static mb_error grid_stage_cuda(const mb_op_ctx *ctx, const mb_stage *st, int halo, mb_cart *cart,
                                mb_mesh *m) {
  const mb_op_info *op = st->op;
  const mb_stencil_params *p = st->params;
  const int is_deriv = op->run[0] == derivative_run, is_lap = op->run[0] == laplacian_run;
  const int is_heat = op->run[0] == heat_run;
  mb_stencil_grid blk = grid_of(m, p);
  if (!is_deriv && !is_lap) MB_CALL(stage_check_dt(st, !is_heat, &blk, m->name));
  for (int a = 0; a < 3; a++) blk.n[a] = cart->nloc[a];
  unsigned char *sel = NULL;
  MB_CALL(select_fields(m, st, &sel));
  mb_error e = check_fields(m, op->name, sel);
  if (!e) e = grid_stage_cuda_fields(ctx, st, halo, cart, m, &blk, sel);
  free(sel);
  return e;
}

/* grid_stage_cuda on the selected fields of the block. */
static mb_error grid_stage_cuda_fields(const mb_op_ctx *ctx, const mb_stage *st, int halo,
                                       mb_cart *cart, mb_mesh *m, const mb_stencil_grid *blkp,
                                       const unsigned char *sel) {
  const mb_op_info *op = st->op;
  const mb_stencil_params *p = st->params;
  const int is_deriv = op->run[0] == derivative_run, is_lap = op->run[0] == laplacian_run;
  const int is_heat = op->run[0] == heat_run;
  const mb_stencil_grid blk = *blkp;
  const int nf = m->nfields;
  for (int f = 0; f < nf; f++) {
    if (!sel[f]) continue;
    mb_field *fd = &m->fields[f];
    const int f32 = fd->dtype == MB_FLOAT32;
    void *u = f32 ? (void *)fd->data32 : (void *)fd->data, *out = NULL;
    if (is_deriv && p->axis == 3) { /* all three after one halo exchange */
      static const char *const suffix[3] = {"_dz", "_dy", "_dx"};
      const size_t w = f32 ? sizeof(float) : sizeof(double), n = (size_t)m->nv;
      out = malloc(3 * w * (n ? n : 1));
      MB_CHECK(out, MB_ERR_MEMORY, "out of memory for the derivatives of grid '%s'", m->name);
      mb_error e = mb_stencil_cuda_block(&blk, f32, cart, halo, 6, 0, 0, u, out, NULL, NULL);
      for (int a = 0; a < 3 && !e; a++) e = add_field(m, f, suffix[a], (char *)out + a * w * n);
      free(out);
      MB_CALL(e);
    } else if (is_deriv || is_lap) {
      static const char *const suffix[4] = {"_dz", "_dy", "_dx", "_lap"};
      MB_CALL(alloc_like(m, f, &out));
      mb_error e = MB_SUCCESS;
      for (int a = 0; a < 4 && !e; a++) {
        if (is_deriv ? (a == 3 || p->axis != a) : a != 3) continue;
        e = mb_stencil_cuda_block(&blk, f32, cart, halo, a, 0, 0, u, out, NULL, NULL);
        if (!e) e = add_field(m, f, suffix[a], out);
      }
      free(out);
      MB_CALL(e);
    } else if (is_heat) {
      if (p->every > 0) MB_CALL(add_snapshot(m, f, 0, p->dt, u));
      for (int64_t done = 0; done < p->steps;) {
        if (mb_op_should_stop(ctx, (double)done, (double)p->steps)) return mb_op_stopped(ctx);
        const int64_t k = next_run(p, done);
        u = f32 ? (void *)m->fields[f].data32 : (void *)m->fields[f].data;
        const mb_stencil_cuda_stop cs = {.ctx = ctx, .done = done, .total = p->steps};
        MB_CALL(mb_stencil_cuda_block(&blk, f32, cart, halo, 4, p->alpha * p->dt, k, u, NULL,
                                      NULL, &cs));
        done += k;
        if (p->every > 0) MB_CALL(add_snapshot(m, f, done, p->dt, u));
      }
    } else {
      const mb_stencil_cuda_stop cs = {.ctx = ctx, .done = 0, .total = p->steps};
      MB_CALL(mb_stencil_cuda_block(&blk, f32, cart, halo, 5, p->c * p->c * p->dt * p->dt,
                                    p->steps, u, NULL, NULL, &cs));
    }
  }
  return MB_SUCCESS;
}

static mb_error stencil_run_grid(const mb_op_ctx *ctx, const mb_stage *stages, int n,
                                 mb_domain *d) {
  mb_cart *cart = d->cart;
  mb_mesh_slab *slab = &d->slab;
  report_precision(ctx, slab->rows);
  for (int s = 0; s < n; s++)
    MB_CALL(on_cuda(ctx) ? grid_stage_cuda(ctx, &stages[s], ctx->halo, cart, slab->rows)
                         : grid_stage(ctx, &stages[s], cart, slab->rows));
  return MB_SUCCESS;
}

int mb_stencil_bench(int argc, char **argv); /* mb_stencil_bench.c */

#define STENCIL_SOURCE                                                                        \
  "8th-order central differences (B. Fornberg, Math. Comp. 51, 1988); NVIDIA, Finite "       \
  "Difference Methods in CUDA C/C++ (2013)"

/* mb_op_info.grow: derivative adds one field per field and axis asked,
 * grid_laplacian one per field, heat with `every` a snapshot of every field
 * at steps 0, every, 2 every, ... and the last (at most steps/every + 2). */
static void derivative_grow(const void *params, mb_size_estimate *s) {
  const mb_stencil_params *p = params;
  s->row_values *= p->axis == 3 ? 4 : 2;
}

static void laplacian_grow(const void *params, mb_size_estimate *s) {
  (void)params;
  s->row_values *= 2;
}

static void heat_grow(const void *params, mb_size_estimate *s) {
  const mb_stencil_params *p = params;
  if (p->every > 0) s->row_values *= 1.0 + (double)(p->steps / p->every) + 2.0;
}

const mb_op_info mb_op_derivative = {
    .name = "derivative",
    .room = "stencil",
    .summary = "first derivative of every field along z, y, x or all three, 8th order",
    .source = STENCIL_SOURCE,
    .in = MB_KIND_GRID3D,
    .out = MB_KIND_GRID3D,
    .params = derivative_params,
    .nparams = NPARAMS(derivative_params),
    .params_size = sizeof(mb_stencil_params),
    .cost = stencil_cost,
    .run = {derivative_run, derivative_run},
    .split = MB_SPLIT_CELLS,
    .ghost_depth = MB_STENCIL_RADIUS,
    .run_partitioned = {stencil_run_grid, stencil_run_grid},
    .grow = derivative_grow,
    .bench = mb_stencil_bench,
};

const mb_op_info mb_op_grid_laplacian = {
    .name = "grid_laplacian",
    .room = "stencil",
    .summary = "the 25-point 8th-order Laplacian of every field",
    .source = STENCIL_SOURCE,
    .in = MB_KIND_GRID3D,
    .out = MB_KIND_GRID3D,
    .params = laplacian_params,
    .nparams = NPARAMS(laplacian_params),
    .params_size = sizeof(mb_stencil_params),
    .cost = stencil_cost,
    .run = {laplacian_run, laplacian_run},
    .split = MB_SPLIT_CELLS,
    .ghost_depth = MB_STENCIL_RADIUS,
    .run_partitioned = {stencil_run_grid, stencil_run_grid},
    .grow = laplacian_grow,
};

const mb_op_info mb_op_heat = {
    .name = "heat",
    .room = "stencil",
    .summary = "explicit heat steps u <- u + alpha dt lap(u) of every field (stability checked)",
    .source = STENCIL_SOURCE,
    .in = MB_KIND_GRID3D,
    .out = MB_KIND_GRID3D,
    .params = heat_params,
    .nparams = NPARAMS(heat_params),
    .params_size = sizeof(mb_stencil_params),
    .cost = stencil_cost,
    .run = {heat_run, heat_run},
    .split = MB_SPLIT_CELLS,
    .ghost_depth = MB_STENCIL_RADIUS,
    .run_partitioned = {stencil_run_grid, stencil_run_grid},
    .grow = heat_grow,
    .check_spacing = heat_check_spacing,
};

const mb_op_info mb_op_wave = {
    .name = "wave",
    .room = "stencil",
    .summary = "leapfrog wave steps from rest, u'' = c^2 lap(u), of every field (CFL checked)",
    .source = STENCIL_SOURCE,
    .in = MB_KIND_GRID3D,
    .out = MB_KIND_GRID3D,
    .params = wave_params,
    .nparams = NPARAMS(wave_params),
    .params_size = sizeof(mb_stencil_params),
    .cost = stencil_cost,
    .run = {wave_run, wave_run},
    .split = MB_SPLIT_CELLS,
    .ghost_depth = MB_STENCIL_RADIUS,
    .run_partitioned = {stencil_run_grid, stencil_run_grid},
    .check_spacing = wave_check_spacing,
};
