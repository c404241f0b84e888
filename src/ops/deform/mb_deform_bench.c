/* meshbatch: `meshbatch bench deform` (the deform room's benchmark): the
 * local-global iterations of one mesh on the CPU, per phase. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mb_adjacency.h"
#include "mb_args.h"
#include "mb_cuda.h"
#include "mb_deform.h"
#include "mb_deform_cuda.h"
#include "mb_generate.h"
#include "mb_inputs.h"
#include "mb_log.h"
#include "mb_meshfile.h"
#include "mb_mpi.h"

static const char deform_bench_help[] =
    "usage: meshbatch bench deform INPUT [--mesh NAME] [--iterations N]\n"
    "                              [--constraint planar|regular] [--hard no|yes]\n"
    "                              [--w-fair W] [--w-constraint W] [--repeats R]\n"
    "                              [--solver auto|cholesky|pcg] [--backend cpu|cuda]\n"
    "                              [--sync-phases] [--cg linalg|device]\n"
    "                              [--cg-iterations K] [--persistent auto|yes|no]\n"
    "                              [--row-threads auto|1|3] [--tile-warps auto|8|10|16]\n"
    "       meshbatch bench deform --batch N [--iterations N] [--backend cpu|cuda]\n"
    "                              [--cg-iterations K] [--overlap yes|no]\n"
    "                              [--prep-threads auto|N]\n"
    "                              [options as above]\n\n"
    "Times the deform op's CPU solver on one mesh (INPUT: a collection or a mesh\n"
    "file, e.g. meshbatch generate panels --vertices 80352 -o roof2.h5; its\n"
    "`handle` field, if any, gives the handles). Each repeat runs --iterations\n"
    "local-global iterations (default 50, the chapter's frame) from the input's\n"
    "positions with the tolerance so small that every iteration runs (hard mode\n"
    "that has not met its constraints is timed all the same), and prints ms per\n"
    "phase: the analysis (the setup, once per mesh; on cpu the faces' checks,\n"
    "the incidence, the matrix pattern and parts, the run's arrays, the weights\n"
    "and fixed right-hand side parts and, with cholesky, CHOLMOD's analysis)\n"
    "and the numeric factorizations, the\n"
    "projections, the solves (right-hand side and the triangular solves), the\n"
    "ALM updates (hard: duals, mu steps, residual checks); per iteration and\n"
    "per 50-iteration frame (the median repeat). Defaults: planar, soft, w_fair\n"
    "0.1, w_constraint 10, solver auto (pcg on cuda; on cpu pcg with\n"
    "--cg-iterations K >= 1, else cholesky), 3 repeats. Wall times of this\n"
    "process (the machine's other load counts), and the process's CPU time\n"
    "(all threads; the load does not count).\n"
    "--backend cuda runs the CUDA backend (mb_deform_cuda.h) on the first device:\n"
    "its analysis is the whole setup (host pattern, uploads, csrchol analysis);\n"
    "without --sync-phases the device is pipelined and only the frame is its time\n"
    "(the phases are the host's enqueue times); with it the device is waited for\n"
    "at each phase boundary, which gives the phases and slows the frame. --cg\n"
    "(solver pcg on cuda): device, the deform room's CG (scalars on the device,\n"
    "the host reads once per 8 iterations; the default), or linalg, the linalg\n"
    "layer's device PCG (the CPU's iterates, host checks every iteration).\n"
    "--cg-iterations K (solver pcg or auto, both backends): cg_iterations, at\n"
    "most K CG iterations per local-global iteration (inexact inner solves,\n"
    "warm-started; on cuda always the room's CG, and without --sync-phases the\n"
    "whole iteration one CUDA graph, counted as the solve phase); default 0,\n"
    "each solve to relative residual 1e-12.\n"
    "--persistent (cuda, soft, --cg-iterations K >= 1, without --sync-phases):\n"
    "yes runs each batch of 50 iterations as one persistent cooperative kernel\n"
    "where the device allows; no the CUDA graph of one iteration per launch;\n"
    "auto (the default) the persistent kernel for meshes of up to 40,000\n"
    "vertices and the graphs above (as measured on an H100; the same bits\n"
    "either way).\n"
    "--row-threads (cuda, the room's CG): threads a row in the CG's kernels: 1\n"
    "(a thread a row, its three coordinates), 3 (a thread a row and coordinate),\n"
    "auto (the default) 3 for meshes of up to 40,000 vertices, else 1 (as\n"
    "measured on an H100; the sums' order differs, so the positions agree to\n"
    "rounding).\n"
    "--tile-warps (cuda, the room's CG): warps a row tile (a block of the CG's\n"
    "kernels, a row tile of the persistent kernel): 8, 10, 16, or auto (the\n"
    "default) whichever puts fewest warps on the device's busiest SM, then the\n"
    "fewest tiles (the sums' order differs, so the positions agree to\n"
    "rounding).\n"
    "Each cuda repeat prints the path its iterations took: \"frame path\n"
    "persistent\" or \"frame path graph\" (graphs or kernel by kernel).\n"
    "The frame is the iterations and the final residuals (planarity and\n"
    "regularity of every face, the handle error): on cuda computed on the device\n"
    "and one small read, the positions' download and the run's frees after it;\n"
    "on cpu the run's frees after it; both printed apart (\"after the frame\").\n"
    "With --batch N (no INPUT): N generated layouts (generate panels domes of\n"
    "1,000 to 5,000 vertices, mixed), one after the other as a rank runs a batch\n"
    "(the device buffers pooled across them), each --iterations iterations from\n"
    "its input; prints the batch's wall, the summed setup, frames and after-frame\n"
    "times, and on cuda the device-busy fraction of the wall: the device's time\n"
    "on the iterations' graphs and the final residuals (events around each group\n"
    "of launches, so the host's reads and setup do not count) over the wall.\n"
    "On cuda the batch is a two-stage pipeline (--overlap yes, the default): the\n"
    "host-only setups of the next layouts (mb_deform_cuda_prepare) run on\n"
    "--prep-threads threads (auto, the default: a quarter of the host's cores,\n"
    "1 to 4; at most twice as many layouts ahead as threads) while layout i's\n"
    "frame runs on the device; --overlap no runs them one after the other on\n"
    "one thread. Both print the layouts' checksum (the sum of every output\n"
    "coordinate and of the planarities, %.17g): the same device work, so the\n"
    "same bits.\n";

typedef struct bench_opts {
  const char *input, *only;
  mb_deform_params p;
  int64_t repeats, batch;
  int cuda, sync_phases, linalg_cg, no_overlap;
  int persistent; /* --persistent: 1 yes, 0 auto (MB_DEFORM_PERSISTENT_ROWS), -1 no */
  int row_threads; /* --row-threads: 1, 3, or 0 auto (MB_DEFORM_SPLIT_ROWS) */
  int tile_warps;  /* --tile-warps: 8, 10, 16, or 0 auto */
  int prep_threads; /* --prep-threads: 1 to 64, or 0 auto */
} bench_opts;

static int bench_parse(int argc, char **argv, bench_opts *o) {
  memset(o, 0, sizeof *o);
  o->p.constraint = MB_DEFORM_PLANAR;
  o->p.iterations = 50;
  o->p.tolerance = 1e-300;
  o->p.w_handle = 100;
  o->p.w_close = 1;
  o->p.w_fair = 0.1;
  o->p.w_constraint = 10;
  o->repeats = 3;
  o->p.solver = MB_DEFORM_AUTO;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int bad = 0;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      if (mb_cli_rank() == 0) fputs(deform_bench_help, stdout);
      return -1;
    }
    if (mb_cli_log_option(a)) continue;
    int64_t n = 0;
    if (!strcmp(a, "--mesh") && v) o->only = v;
    else if (!strcmp(a, "--iterations") && v) {
      bad = mb_cli_parse_int64(v, &n) || n < 1 || n > 1000000;
      o->p.iterations = (int)n;
    } else if (!strcmp(a, "--repeats") && v)
      bad = mb_cli_parse_int64(v, &o->repeats) || o->repeats < 1 || o->repeats > 1000;
    else if (!strcmp(a, "--constraint") && v) {
      bad = strcmp(v, "planar") && strcmp(v, "regular");
      o->p.constraint = !strcmp(v, "regular") ? MB_DEFORM_REGULAR : MB_DEFORM_PLANAR;
    } else if (!strcmp(a, "--hard") && v) {
      bad = strcmp(v, "yes") && strcmp(v, "no");
      o->p.hard = !strcmp(v, "yes");
    } else if (!strcmp(a, "--solver") && v) {
      bad = strcmp(v, "cholesky") && strcmp(v, "pcg") && strcmp(v, "auto");
      o->p.solver = !strcmp(v, "pcg")        ? MB_DEFORM_PCG
                    : !strcmp(v, "cholesky") ? MB_DEFORM_CHOLESKY
                                             : MB_DEFORM_AUTO;
    } else if (!strcmp(a, "--backend") && v) {
      bad = strcmp(v, "cpu") && strcmp(v, "cuda");
      o->cuda = !strcmp(v, "cuda");
    } else if (!strcmp(a, "--cg") && v) {
      bad = strcmp(v, "linalg") && strcmp(v, "device");
      o->linalg_cg = !strcmp(v, "linalg");
    } else if (!strcmp(a, "--cg-iterations") && v) {
      bad = mb_cli_parse_int64(v, &n) || n < 0 || n > 100000;
      o->p.cg_iterations = (int)n;
    } else if (!strcmp(a, "--batch") && v) {
      bad = mb_cli_parse_int64(v, &o->batch) || o->batch < 1 || o->batch > 100000;
    } else if (!strcmp(a, "--persistent") && v) {
      bad = strcmp(v, "auto") && strcmp(v, "yes") && strcmp(v, "no");
      o->persistent = !strcmp(v, "yes") ? 1 : !strcmp(v, "no") ? -1 : 0;
    } else if (!strcmp(a, "--row-threads") && v) {
      bad = strcmp(v, "auto") && strcmp(v, "1") && strcmp(v, "3");
      o->row_threads = !strcmp(v, "1") ? 1 : !strcmp(v, "3") ? 3 : 0;
    } else if (!strcmp(a, "--tile-warps") && v) {
      bad = strcmp(v, "auto") && strcmp(v, "8") && strcmp(v, "10") && strcmp(v, "16");
      o->tile_warps = (int)strtol(v, NULL, 10); /* 0 for auto */
    } else if (!strcmp(a, "--prep-threads") && v) {
      if (strcmp(v, "auto")) bad = mb_cli_parse_int64(v, &n) || n < 1 || n > 64;
      o->prep_threads = (int)n; /* 0 for auto */
    } else if (!strcmp(a, "--overlap") && v) {
      bad = strcmp(v, "yes") && strcmp(v, "no");
      o->no_overlap = !strcmp(v, "no");
    } else if (!strcmp(a, "--sync-phases")) {
      o->sync_phases = 1;
      continue;
    } else if (!strcmp(a, "--w-fair") && v)
      bad = mb_cli_parse_double(v, &o->p.w_fair) || !(o->p.w_fair >= 0);
    else if (!strcmp(a, "--w-constraint") && v)
      bad = mb_cli_parse_double(v, &o->p.w_constraint) || !(o->p.w_constraint > 0);
    else if (a[0] != '-' && !o->input) {
      o->input = a;
      continue;
    } else
      return mb_cli_usage_error("bench deform", "unexpected argument '%s'", a);
    if (bad) return mb_cli_usage_error("bench deform", "bad value '%s' for %s", v, a);
    i++;
  }
  if (o->batch && (o->input || o->only))
    return mb_cli_usage_error("bench deform", "--batch takes no INPUT and no --mesh");
  if (!o->input && !o->batch)
    return mb_cli_usage_error("bench deform", "missing INPUT mesh");
  if (mb_inputs_check_named(o->input, o->only)) /* a usage error, as `meshbatch info` says */
    return mb_cli_usage_error("bench deform", "%s", mb_error_message());
  /* the op's rule (mb_deform_solver_resolve), printed as resolved */
  o->p.solver = mb_deform_solver_resolve(&o->p, o->cuda);
  return MB_EXIT_OK;
}

static mb_error load(const bench_opts *o, mb_mesh **mesh) {
  char *patterns[] = {(char *)o->input};
  mb_inputs *in = NULL;
  MB_CALL(mb_inputs_open(MPI_COMM_SELF, 1, patterns, &in));
  int64_t s = 0;
  int found = !o->only;
  for (int64_t k = 0; o->only && k < in->nsources; k++)
    if (!strcmp(in->sources[k].name, o->only)) {
      s = k;
      found = 1;
    }
  mb_error e = found ? MB_SUCCESS
                     : mb_error_set(MB_ERR_ARG, __FILE__, __LINE__, __func__,
                                    "no mesh named '%s' in %s", o->only, o->input);
  if (!e) e = in->nsources > 0 ? mb_inputs_read(in, s, mesh)
                               : mb_error_set(MB_ERR_ARG, __FILE__, __LINE__, __func__,
                                              "%s holds no mesh", o->input);
  mb_inputs_close(in);
  return e;
}

/* This process's CPU time, all threads, in seconds (the machine's other
 * load does not count, unlike the wall). */
static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* One run of o's keys on m from x0 (the backend o asks for); *ms its wall.
 * Hard mode not met within the iterations is timed all the same. */
static mb_error run_once(const bench_opts *o, mb_mesh *m, mb_adjacency *adj, const double *target,
                         const double *x0, mb_deform_report *rep, double *ms) {
  memcpy(m->xyz, x0, sizeof(double) * 3 * (size_t)m->nv);
  mb_deform_mesh dm = {m->name, m->nv, m->nf, m->xyz, m->face_offsets, m->face_indices,
                       adj, target, NULL};
  memset(rep, 0, sizeof *rep);
  const double t0 = mb_wtime();
  const mb_deform_cuda_opts co = {o->sync_phases, o->linalg_cg, o->persistent, o->row_threads,
                                  o->tile_warps};
  mb_error e = o->cuda ? mb_deform_run_cuda(&o->p, &dm, rep, &co)
                       : mb_deform_run_cpu(&o->p, &dm, rep);
  *ms = 1e3 * (mb_wtime() - t0);
  if (e == MB_ERR_NUMERIC && o->p.hard && rep->iterations == o->p.iterations) {
    mb_error_clear(); /* not met within the iterations: timed all the same */
    e = MB_SUCCESS;
  }
  return e;
}

static mb_error bench(const bench_opts *o, mb_mesh *m) {
  mb_adjacency *adj = NULL;
  MB_CALL(mb_adjacency_build_opts(m, 0, &adj));
  const int k = mb_mesh_field_index(m, "handle");
  const double *target = k >= 0 && m->fields[k].ncomp == 3 ? m->fields[k].data : NULL;
  double *x0 = malloc(sizeof(double) * 3 * (size_t)m->nv);
  double *tot = calloc((size_t)o->repeats, sizeof(double));
  double *cpu = calloc((size_t)o->repeats, sizeof(double));
  double *its = calloc((size_t)o->repeats, sizeof(double));
  mb_error e = x0 && tot && cpu && its ? MB_SUCCESS
                         : mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  if (!e) memcpy(x0, m->xyz, sizeof(double) * 3 * (size_t)m->nv);
  printf("%s: %lld vertices, %lld faces; %s %s, %d iterations per repeat, solver %s, "
         "w_fair %g, w_constraint %g%s; backend %s%s%s, cg_iterations %d\n",
         m->name, (long long)m->nv, (long long)m->nf, o->p.hard ? "hard" : "soft",
         o->p.constraint == MB_DEFORM_PLANAR ? "planar" : "regular", o->p.iterations,
         o->p.solver ? "pcg" : "cholesky",
         o->p.w_fair, o->p.w_constraint, target ? ", handles from the field" : ", no handles",
         o->cuda ? "cuda" : "cpu", o->cuda && o->sync_phases ? " (phases synchronised)" : "",
         o->cuda && o->p.solver == MB_DEFORM_PCG
             ? (o->linalg_cg && o->p.cg_iterations == 0 ? ", cg linalg" : ", cg device")
             : "",
         o->p.cg_iterations);
  const double per = 50.0 / o->p.iterations;
  for (int64_t r = 0; r < o->repeats && !e; r++) {
    mb_deform_report rep;
    double ms = 0;
    const double c0 = cpu_seconds();
    e = run_once(o, m, adj, target, x0, &rep, &ms);
    const double cms = 1e3 * (cpu_seconds() - c0);
    if (e) break;
    const double it = rep.iterations ? rep.iterations : 1;
    tot[r] = ms;
    cpu[r] = cms;
    its[r] = (ms - rep.analyze_ms - rep.factor_ms - rep.finish_ms) * per;
    printf("repeat %lld: %d iterations, %d factorizations, %lld pcg iterations, planarity %.3g; "
           "total %.1f ms: "
           "analysis %.1f, factor %.1f; per iteration: projection %.3f, solve %.3f, ALM "
           "updates %.3f, all %.3f ms; per 50-iteration frame: projection %.1f, solve %.1f, "
           "ALM updates %.1f, factor %.1f, frame %.1f ms\n",
           (long long)r + 1, rep.iterations, rep.factorizations, rep.pcg_iterations,
           rep.planarity, ms,
           rep.analyze_ms, rep.factor_ms, rep.project_ms / it, rep.solve_ms / it,
           rep.update_ms / it, (ms - rep.analyze_ms - rep.factor_ms - rep.finish_ms) / it,
           rep.project_ms * per, rep.solve_ms * per, rep.update_ms * per, rep.factor_ms * per,
           (ms - rep.analyze_ms - rep.finish_ms) * per);
    if (o->cuda)
      printf("repeat %lld: after the frame: download and frees %.2f ms (once per run, not "
             "scaled); the device's time in the frame %.2f ms\n",
             (long long)r + 1, rep.finish_ms, rep.device_ms);
    else
      printf("repeat %lld: after the frame: frees %.2f ms (once per run, not scaled)\n",
             (long long)r + 1, rep.finish_ms);
    if (o->cuda)
      printf("repeat %lld: frame path %s%s\n", (long long)r + 1,
             rep.persistent ? "persistent" : "graph",
             o->persistent > 0 ? " (--persistent yes)" : "");
    printf("repeat %lld: CPU time %.1f ms (all threads); per 50-iteration frame without the "
           "analysis and factorizations %.2f ms wall\n",
           (long long)r + 1, cms, its[r]);
  }
  if (!e) {
    qsort(tot, (size_t)o->repeats, sizeof *tot, cmp_double);
    printf("median repeat: %.1f ms (%d iterations, analysis included)\n",
           tot[o->repeats / 2], o->p.iterations);
    qsort(cpu, (size_t)o->repeats, sizeof *cpu, cmp_double);
    qsort(its, (size_t)o->repeats, sizeof *its, cmp_double);
    printf("median repeat: CPU time %.1f ms; 50-iteration frame without analysis and "
           "factorizations %.2f ms wall\n",
           cpu[o->repeats / 2], its[o->repeats / 2]);
  }
  free(x0);
  free(tot);
  free(cpu);
  free(its);
  mb_adjacency_free(adj);
  return e;
}

/* One layout's host-only setup for the batch pipeline (threads prepare the
 * next layouts while one runs on the device). */
typedef struct prep_job {
  const bench_opts *o;
  mb_mesh *m;
  const double *x0;
  mb_deform_mesh dm;
  mb_deform_cuda_prep *prep; /* NULL after an error: the run redoes it, with the message */
  double ms;                 /* the preparation's wall time */
  int ready;                 /* prepared (set under the pool's lock) */
} prep_job;

static void prep_main(prep_job *j) {
  mb_mesh *m = j->m;
  const bench_opts *o = j->o;
  const mb_deform_cuda_opts co = {o->sync_phases, o->linalg_cg, o->persistent, o->row_threads,
                                  o->tile_warps};
  const double t0 = mb_wtime();
  memcpy(m->xyz, j->x0, sizeof(double) * 3 * (size_t)m->nv);
  const mb_error e = mb_deform_cuda_prepare(&o->p, &j->dm, &co, &j->prep);
  j->ms = 1e3 * (mb_wtime() - t0);
  if (e) {
    mb_error_clear(); /* this thread's error state; the main thread repeats the setup */
    j->prep = NULL;
  }
}

/* The preparing threads' shared state: they take the layouts in order, at
 * most `ahead` past the one the device runs. */
typedef struct prep_pool {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  prep_job *job;               /* [n] */
  int64_t n, next, running, ahead; /* layouts; the next to prepare; the one running; the window */
} prep_pool;

static void *prep_worker(void *arg) {
  prep_pool *pp = arg;
  pthread_mutex_lock(&pp->mu);
  for (;;) {
    while (pp->next < pp->n && pp->next >= pp->running + pp->ahead)
      pthread_cond_wait(&pp->cv, &pp->mu);
    if (pp->next >= pp->n) break;
    const int64_t k = pp->next++;
    pthread_mutex_unlock(&pp->mu);
    prep_main(&pp->job[k]);
    pthread_mutex_lock(&pp->mu);
    pp->job[k].ready = 1;
    pthread_cond_broadcast(&pp->cv);
  }
  pthread_mutex_unlock(&pp->mu);
  return NULL;
}

/* --prep-threads auto: a quarter of the host's cores, 1 to 4. */
static int prep_threads_auto(void) {
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const long t = cores / 4;
  return t < 1 ? 1 : t > 4 ? 4 : (int)t;
}

/* --batch: o->batch generated layouts (panels domes of 1,000 to 5,000
 * vertices, mixed, 13 handles each), each run once by run_once from its
 * input, one after the other; prints the wall, the summed phases and (cuda)
 * the device-busy fraction of the wall. */
static mb_error bench_batch(const bench_opts *o) {
  const int64_t n = o->batch;
  mb_mesh **m = calloc((size_t)n, sizeof *m);
  mb_adjacency **adj = calloc((size_t)n, sizeof *adj);
  double **x0 = calloc((size_t)n, sizeof *x0);
  mb_error e = m && adj && x0 ? MB_SUCCESS
                              : mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                                             "out of memory");
  int64_t nv = 0;
  for (int64_t k = 0; k < n && !e; k++) { /* 1,000 to 5,000 vertices, mixed */
    e = mb_generate_panels(1000 + (k * 1237) % 4001, MB_PANELS_DOME, 0.5, 5, 0.2, &m[k]);
    if (!e) e = mb_adjacency_build_opts(m[k], 0, &adj[k]);
    if (!e && !(x0[k] = malloc(sizeof(double) * 3 * (size_t)m[k]->nv)))
      e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
    if (!e) {
      memcpy(x0[k], m[k]->xyz, sizeof(double) * 3 * (size_t)m[k]->nv);
      nv += m[k]->nv;
    }
  }
  if (!e)
    printf("bench deform --batch: %lld %s (panels domes of 1,000 to 5,000 vertices, %lld "
           "in all), %s %s, %d iterations each, solver %s, cg_iterations %d; backend %s\n",
           (long long)n, mb_plural(n, "layout", "layouts"), (long long)nv,
           o->p.hard ? "hard" : "soft",
           o->p.constraint == MB_DEFORM_PLANAR ? "planar" : "regular", o->p.iterations,
           o->p.solver ? "pcg" : "cholesky", o->p.cg_iterations, o->cuda ? "cuda" : "cpu");
  double setup = 0, factor = 0, frames = 0, after = 0, device = 0, sum = 0;
  long long iters = 0, persistent = 0;
  const int overlap = o->cuda && !o->no_overlap;
  prep_pool pp = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, n, 0, 0, 0};
  const int nthreads = overlap ? (o->prep_threads ? o->prep_threads : prep_threads_auto()) : 0;
  pthread_t th[64];
  int started = 0;
  if (overlap && !e) {
    pp.job = calloc((size_t)n, sizeof *pp.job);
    if (!pp.job) e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
    for (int64_t k = 0; k < n && !e; k++) {
      const int g = mb_mesh_field_index(m[k], "handle");
      pp.job[k] = (prep_job){o, m[k], x0[k],
                             {m[k]->name, m[k]->nv, m[k]->nf, m[k]->xyz, m[k]->face_offsets,
                              m[k]->face_indices, adj[k],
                              g >= 0 && m[k]->fields[g].ncomp == 3 ? m[k]->fields[g].data : NULL,
                              NULL},
                             NULL, 0, 0};
    }
    pp.ahead = 2 * nthreads;
    while (!e && started < nthreads && pthread_create(&th[started], NULL, prep_worker, &pp) == 0)
      started++;
  }
  const double t0 = mb_wtime();
  for (int64_t k = 0; k < n && !e; k++) {
    const int f = mb_mesh_field_index(m[k], "handle");
    const double *target = f >= 0 && m[k]->fields[f].ncomp == 3 ? m[k]->fields[f].data : NULL;
    mb_deform_report rep;
    double ms = 0;
    if (overlap) { /* layout k prepared by the pool (or here, where no thread started) */
      prep_job *cur = &pp.job[k];
      if (started) {
        pthread_mutex_lock(&pp.mu);
        while (!cur->ready) pthread_cond_wait(&pp.cv, &pp.mu);
        pthread_mutex_unlock(&pp.mu);
      } else {
        prep_main(cur);
      }
      memset(&rep, 0, sizeof rep);
      const double tr = mb_wtime();
      if (cur->prep) { /* ms as run_once's: the preparation's time added back */
        e = mb_deform_run_cuda_prepared(cur->prep, &rep);
        cur->prep = NULL;
        ms = 1e3 * (mb_wtime() - tr) + cur->ms;
      } else { /* its preparation failed: the whole run here, for the message */
        e = run_once(o, m[k], adj[k], target, x0[k], &rep, &ms);
      }
      pthread_mutex_lock(&pp.mu);
      pp.running = k + 1; /* the window moves on */
      pthread_cond_broadcast(&pp.cv);
      pthread_mutex_unlock(&pp.mu);
      if (e == MB_ERR_NUMERIC && o->p.hard && rep.iterations == o->p.iterations) {
        mb_error_clear();
        e = MB_SUCCESS;
      }
    } else {
      e = run_once(o, m[k], adj[k], target, x0[k], &rep, &ms);
    }
    for (int64_t i = 0; !e && i < 3 * m[k]->nv; i++) sum += m[k]->xyz[i];
    if (!e) sum += rep.planarity;
    setup += rep.analyze_ms;
    factor += rep.factor_ms;
    after += rep.finish_ms;
    frames += ms - rep.analyze_ms - rep.finish_ms;
    device += rep.device_ms;
    iters += rep.iterations;
    persistent += rep.persistent != 0;
  }
  const double wall = 1e3 * (mb_wtime() - t0);
  if (started) { /* an error stops the pool; layouts prepared and not run are freed */
    pthread_mutex_lock(&pp.mu);
    pp.next = n;
    pthread_cond_broadcast(&pp.cv);
    pthread_mutex_unlock(&pp.mu);
    for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
  }
  for (int64_t k = 0; pp.job && k < n; k++) mb_deform_cuda_prep_free(pp.job[k].prep);
  free(pp.job);
  if (!e) {
    printf("%s: wall %.3f s for %lld %s (%.3f ms a layout, %lld iterations); setup %.3f s, "
           "frames %.3f s (factorizations %.3f s), after the frames %.3f s\n",
           o->cuda ? "cuda" : "cpu", 1e-3 * wall, (long long)n, mb_plural(n, "layout", "layouts"),
           wall / (double)n, iters,
           1e-3 * setup, 1e-3 * frames, 1e-3 * factor, 1e-3 * after);
    printf("%s: layouts' checksum %.17g (every output coordinate and planarity summed)%s\n",
           o->cuda ? "cuda" : "cpu", sum,
           overlap ? "; setup overlapped: the next layouts' host setups on the preparing "
                     "threads during layout i's frame (their time still counted in setup)"
                   : "");
    if (overlap)
      printf("%s: %d preparing thread%s, at most %lld %s prepared ahead\n",
             o->cuda ? "cuda" : "cpu", started, started == 1 ? "" : "s",
             (long long)pp.ahead, mb_plural(pp.ahead, "layout", "layouts"));
    if (o->cuda)
      printf("cuda: device busy %.1f %% of the wall (%.3f s of %.3f s: the iterations' graphs "
             "and the final residuals)\n",
             wall > 0 ? 100 * device / wall : 0.0, 1e-3 * device, 1e-3 * wall);
    if (o->cuda)
      printf("cuda: frame path persistent in %lld of %lld %s, graph in the rest%s\n",
             persistent, (long long)n, mb_plural(n, "layout", "layouts"),
             o->persistent > 0 ? " (--persistent yes)" : "");
  }
  for (int64_t k = 0; k < n && m && adj && x0; k++) {
    free(x0[k]);
    mb_adjacency_free(adj[k]);
    mb_mesh_free(m[k]);
  }
  free(x0);
  free(adj);
  free(m);
  return e;
}

int mb_deform_bench(int argc, char **argv) {
  bench_opts o;
  int rc = bench_parse(argc, argv, &o);
  if (rc < 0) return MB_EXIT_OK;
  if (rc) return rc;
  if (mb_cli_rank() != 0) return MB_EXIT_OK; /* one rank's benchmark */
  mb_error e = MB_SUCCESS;
  if (o.cuda) { /* the first device, named */
    char why[256] = "", name[256] = "";
    int dev = 0;
    if (mb_cuda_device_count(why, sizeof why) <= 0)
      e = mb_error_set(MB_ERR_UNSUPPORTED, __FILE__, __LINE__, __func__,
                       "bench deform --backend cuda: no CUDA device (%s)", why[0] ? why : "none");
    if (!e) e = mb_cuda_select_device(0, &dev, name, sizeof name);
    if (!e) printf("cuda: device %d, %s\n", dev, name);
    if (e) return mb_cli_report(MB_EXIT_FAILED);
  }
  if (o.batch) {
    e = bench_batch(&o);
    return e ? mb_cli_report(MB_EXIT_FAILED) : MB_EXIT_OK;
  }
  mb_mesh *m = NULL;
  e = load(&o, &m);
  if (!e) e = bench(&o, m);
  mb_mesh_free(m);
  return e ? mb_cli_report(MB_EXIT_FAILED) : MB_EXIT_OK;
}
