/* meshbatch: `meshbatch bench willmore` (the willmore room's benchmark):
 * steps of willmore_flow on one mesh on the CPU and/or the GPU, per phase.
 * Prints figures; asserts nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_adjacency.h"
#include "mb_args.h"
#include "mb_cuda.h"
#include "mb_generate.h"
#include "mb_inputs.h"
#include "mb_log.h"
#include "mb_meshfile.h"
#include "mb_willmore.h"

static const char willmore_bench_help[] =
    "usage: meshbatch bench willmore INPUT [--mesh NAME] [--time-step T[,T...]] [--steps N]\n"
    "                                [--tolerance T] [--max-iterations N]\n"
    "                                [--backend cpu|cuda|both]\n"
    "                                [--solver auto|cholesky|iterative] [--vertices N]\n"
    "       meshbatch bench willmore --batch N [--time-step T] [--steps N] [--backend ...]\n\n"
    "Times willmore_flow on one closed triangle mesh on the CPU and/or the GPU (--backend;\n"
    "cuda is skipped, saying so, where there is no device; INPUT: a collection\n"
    "or a mesh file; --mesh picks one dataset of a collection). For each time step\n"
    "it runs --steps steps from the input's positions and prints per step the\n"
    "Willmore energy, the inverse iteration's solves, the step's largest quasi-\n"
    "conformal distortion and ms per phase: curvature (normals, H, the projection)\n"
    "and the Dirac operator's assembly (solver iterative: also the AMG hierarchy's\n"
    "update, its setup in the first step); the eigenvector (the numeric factor of the\n"
    "operator (CPU: as an n x n quaternion matrix; GPU: the 4n x 4n real one) and the\n"
    "inverse iteration's solves, or their PCGs); the positions\n"
    "(the edges, the Laplacian's factor, with its symbolic analysis in the first step,\n"
    "and solve, or its PCG); the update (rescale, the next step's Laplacian and mass, the\n"
    "energy, the distortion); then the median step after the first. The setup\n"
    "before the steps (the checks, the Dirac operator's pattern and its symbolic\n"
    "analysis, made once per mesh; on the GPU also the uploads and the device\n"
    "Cholesky's analyses) is printed on its own. On the GPU the device is\n"
    "synchronised between phases.\n"
    "--solver is the stage key `solver` (auto: on cuda iterative, on cpu from 50000 vertices); with the\n"
    "iterative solver each step also prints its PCG iterations (all the inverse\n"
    "iteration's solves; the Poisson solve). --vertices N refines the mesh first to\n"
    "exactly N vertices by midpoint subdivision (as meshbatch generate subdivide MESH\n"
    "--vertices N: the shape kept), for runs at about 100 k or 1 M vertices.\n"
    "With --batch N (no INPUT): a batch of N generated meshes of mixed sizes, noisy\n"
    "spheres of 162, 642, 2562 and 10242 vertices in turn (radial noise 0.01, seed the\n"
    "mesh's index), made before the clock starts; each runs --steps steps of the first\n"
    "time step, one mesh after the other as a rank runs a batch. Printed per backend:\n"
    "the wall time of the batch, the summed setup and the summed step phases (on the\n"
    "GPU: device work, the device synchronised between phases) and their fraction of\n"
    "the wall; the rest is the host's part between meshes.\n"
    "Defaults: time step 0.05, steps 3, tolerance 1e-10, max iterations 100, backend cpu,\n"
    "solver auto.\n";

#define MAX_LIST 8

typedef struct bench_opts {
  const char *input, *only;
  double dt[MAX_LIST];
  int ndt;
  long steps, max_iter, batch;
  double tolerance;
  int cpu, cuda;
  int solver;
  long long vertices; /* 0: the mesh as read */
} bench_opts;

static int usage(const char *msg) {
  if (mb_cli_rank() == 0) fprintf(stderr, "meshbatch bench willmore: %s\n", msg);
  return MB_EXIT_USAGE;
}

/* -1: help printed; 0: parsed; else the exit code. */
static int bench_parse(int argc, char **argv, bench_opts *o) {
  *o = (bench_opts){NULL, NULL, {0.05}, 1, 3, 100, 0, 1e-10, 1, 0, MB_WILLMORE_AUTO, 0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      if (mb_cli_rank() == 0) fputs(willmore_bench_help, stdout);
      return -1;
    }
    if (a[0] != '-') {
      if (o->input) return usage("one INPUT only");
      o->input = a;
      continue;
    }
    if (!v) return usage("an option without its value");
    i++;
    char *end = NULL;
    if (!strcmp(a, "--mesh")) {
      o->only = v;
    } else if (!strcmp(a, "--time-step")) {
      char buf[256];
      snprintf(buf, sizeof buf, "%s", v);
      o->ndt = 0;
      for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        const double x = strtod(tok, &end);
        if (o->ndt == MAX_LIST || end == tok || *end || !(x > 0) || !isfinite(x))
          return usage("--time-step: up to 8 numbers > 0, separated by commas");
        o->dt[o->ndt++] = x;
      }
    } else if (!strcmp(a, "--steps")) {
      o->steps = strtol(v, &end, 10);
      if (*end || o->steps < 1 || o->steps > 100000) return usage("--steps: 1 to 100000");
    } else if (!strcmp(a, "--max-iterations")) {
      o->max_iter = strtol(v, &end, 10);
      if (*end || o->max_iter < 1 || o->max_iter > 100000)
        return usage("--max-iterations: 1 to 100000");
    } else if (!strcmp(a, "--backend")) {
      o->cpu = !strcmp(v, "cpu") || !strcmp(v, "both");
      o->cuda = !strcmp(v, "cuda") || !strcmp(v, "both");
      if (!o->cpu && !o->cuda) return usage("--backend: cpu, cuda or both");
    } else if (!strcmp(a, "--vertices")) {
      o->vertices = strtoll(v, &end, 10);
      if (*end || o->vertices < 4 || o->vertices > 2000000000LL)
        return usage("--vertices: 4 to 2000000000");
    } else if (!strcmp(a, "--solver")) {
      if (!strcmp(v, "auto")) o->solver = MB_WILLMORE_AUTO;
      else if (!strcmp(v, "cholesky")) o->solver = MB_WILLMORE_CHOLESKY;
      else if (!strcmp(v, "iterative")) o->solver = MB_WILLMORE_ITERATIVE;
      else return usage("--solver: auto, cholesky or iterative");
    } else if (!strcmp(a, "--batch")) {
      o->batch = strtol(v, &end, 10);
      if (*end || o->batch < 1 || o->batch > 100000) return usage("--batch: 1 to 100000");
    } else if (!strcmp(a, "--tolerance")) {
      o->tolerance = strtod(v, &end);
      if (*end || !(o->tolerance > 0 && o->tolerance < 1)) return usage("--tolerance: in (0, 1)");
    } else {
      return usage("unknown option (see --help)");
    }
  }
  if (o->batch && (o->input || o->only)) return usage("--batch takes no INPUT and no --mesh");
  if (!o->input && !o->batch) return usage("no INPUT (see --help)");
  if (mb_inputs_check_named(o->input, o->only)) /* a usage error, as `meshbatch info` says */
    return mb_cli_usage_error("bench willmore", "%s", mb_error_message());
  return 0;
}

static mb_error load(const bench_opts *o, mb_mesh **mesh) {
  char path[4096];
  mb_error e = mb_inputs_read_named(o->input, o->only, mesh, path);
  if (!e) e = mb_mesh_convert_kind(*mesh, MB_KIND_SURFACE, path);
  if (!e && !mb_mesh_is_triangles(*mesh))
    e = mb_error_set(MB_ERR_ARG, __FILE__, __LINE__, __func__,
                     "%s: willmore_flow needs a triangle mesh", (*mesh)->name);
  return e;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* --batch: o->batch generated meshes of mixed sizes, each o->steps steps of
 * o->dt[0] on each backend asked, one after the other; prints the wall and
 * the summed phases. */
static mb_error bench_batch(const bench_opts *o) {
  static const int64_t sizes[] = {162, 642, 2562, 10242};
  const int64_t n = o->batch;
  mb_mesh **m = calloc((size_t)n, sizeof *m);
  mb_adjacency **adj = calloc((size_t)n, sizeof *adj);
  mb_willmore_step *st = calloc((size_t)o->steps, sizeof *st);
  double **x = calloc((size_t)n, sizeof *x);
  mb_error e = m && adj && st && x ? MB_SUCCESS
                                   : mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                                                  "out of memory");
  int64_t nv = 0;
  for (int64_t k = 0; k < n && !e; k++) {
    e = mb_generate_sphere(sizes[k % 4], 0.01, (uint64_t)k + 1, &m[k]);
    if (!e) e = mb_adjacency_build(m[k], &adj[k]);
    if (!e && !(x[k] = malloc(sizeof **x * 3 * (size_t)m[k]->nv)))
      e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
    if (!e) nv += m[k]->nv;
  }
  if (!e)
    printf("bench willmore --batch: %lld noisy spheres of 162 to 10242 vertices (%lld in all), "
           "%ld steps of %g each, tolerance %g\n",
           (long long)n, (long long)nv, o->steps, o->dt[0], o->tolerance);
  for (int cuda = 0; cuda < 2 && !e; cuda++) {
    if ((cuda && !o->cuda) || (!cuda && !o->cpu)) continue;
    for (int64_t k = 0; k < n; k++) memcpy(x[k], m[k]->xyz, sizeof **x * 3 * (size_t)m[k]->nv);
    double setup = 0, phase[4] = {0, 0, 0, 0};
    long solves = 0;
    const double t0 = mb_wtime();
    for (int64_t k = 0; k < n && !e; k++) {
      char name[32];
      snprintf(name, sizeof name, "sphere_%lld", (long long)k);
      mb_willmore_params p = {o->dt[0], (int)o->steps, o->tolerance, (int)o->max_iter,
                              o->solver};
      mb_willmore_mesh wm = {m[k]->nv, m[k]->nf, m[k]->face_indices, adj[k], x[k], name, NULL};
      mb_willmore_report rep = {.step = st};
      e = cuda ? mb_willmore_run_cuda(&p, &wm, &rep) : mb_willmore_run_cpu(&p, &wm, &rep);
      setup += rep.setup_ms;
      for (int s = 0; s < rep.steps; s++) {
        phase[0] += st[s].assemble_ms;
        phase[1] += st[s].eigen_ms;
        phase[2] += st[s].poisson_ms;
        phase[3] += st[s].finish_ms;
        solves += st[s].iterations;
      }
    }
    if (e) break;
    const double wall = 1e3 * (mb_wtime() - t0), steps = phase[0] + phase[1] + phase[2] + phase[3];
    printf("%s: wall %.3f s for %lld %s (%.3f ms a mesh); setup %.3f s; step phases %.3f s "
           "(curvature and assembly %.3f, eigenvector %.3f, positions %.3f, update %.3f; %ld "
           "solves); step phases %.1f %% of the wall, with the setup %.1f %%\n",
           cuda ? "cuda" : "cpu", 1e-3 * wall, (long long)n, mb_plural(n, "mesh", "meshes"),
           wall / (double)n, 1e-3 * setup,
           1e-3 * steps, 1e-3 * phase[0], 1e-3 * phase[1], 1e-3 * phase[2], 1e-3 * phase[3],
           solves, 100 * steps / wall, 100 * (steps + setup) / wall);
  }
  for (int64_t k = 0; k < n && m && adj && x; k++) {
    free(x[k]);
    mb_adjacency_free(adj[k]);
    mb_mesh_free(m[k]);
  }
  free(x);
  free(adj);
  free(m);
  free(st);
  return e;
}

int mb_willmore_bench(int argc, char **argv) {
  bench_opts o;
  int rc = bench_parse(argc, argv, &o);
  if (rc < 0) return MB_EXIT_OK;
  if (rc) return rc;
  if (mb_cli_rank() != 0) return MB_EXIT_OK; /* one rank's benchmark */
  if (o.batch) {
    char why[256] = "", dev_name[256] = "";
    int dev = 0;
    if (o.cuda && mb_cuda_device_count(why, sizeof why) < 1) {
      printf("cuda: skipped (%s)\n", why[0] ? why : "no CUDA device");
      o.cuda = 0;
      if (!o.cpu) return MB_EXIT_OK;
    }
    mb_error e = o.cuda ? mb_cuda_select_device(0, &dev, dev_name, sizeof dev_name) : MB_SUCCESS;
    if (!e && o.cuda) printf("cuda on %s\n", dev_name);
    if (!e) e = bench_batch(&o);
    return e ? mb_cli_report(MB_EXIT_FAILED) : MB_EXIT_OK;
  }
  mb_mesh *m = NULL;
  mb_adjacency *adj = NULL;
  char why[256] = "", dev_name[256] = "";
  if (o.cuda && mb_cuda_device_count(why, sizeof why) < 1) {
    printf("cuda: skipped (%s)\n", why[0] ? why : "no CUDA device");
    o.cuda = 0;
    if (!o.cpu) return MB_EXIT_OK;
  }
  const double t0 = mb_wtime();
  mb_error e = MB_SUCCESS;
  int dev = 0;
  if (o.cuda) e = mb_cuda_select_device(0, &dev, dev_name, sizeof dev_name);
  if (!e) e = load(&o, &m);
  if (!e && o.vertices > m->nv) {
    mb_mesh *fine = NULL;
    int levels = 0;
    e = mb_generate_subdivide_to(m, o.vertices, &levels, &fine);
    if (!e) {
      printf("bench willmore: %s refined to %lld vertices (%d whole levels, then the longest "
             "edges split)\n",
             m->name, (long long)fine->nv, levels);
      mb_mesh_free(m);
      m = fine;
    }
  }
  if (!e) e = mb_adjacency_build(m, &adj);
  if (!e)
    printf("bench willmore: %s, %lld vertices, %lld triangles (read in %.2f s); %s%s%s%s, "
           "tolerance %g\n",
           m->name, (long long)m->nv, (long long)m->nf, mb_wtime() - t0, o.cpu ? "cpu" : "",
           o.cpu && o.cuda ? " and " : "", o.cuda ? "cuda on " : "", o.cuda ? dev_name : "",
           o.tolerance);
  double *x = e ? NULL : malloc(sizeof *x * 3 * (size_t)m->nv);
  mb_willmore_step *st = calloc((size_t)o.steps, sizeof *st);
  double *tot = calloc((size_t)o.steps, sizeof *tot);
  if (!e && !(x && st && tot))
    e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  for (int kk = 0; kk < 2 * o.ndt && !e; kk++) {
    const int cuda = kk >= o.ndt, k = kk % o.ndt;
    if ((cuda && !o.cuda) || (!cuda && !o.cpu)) continue;
    memcpy(x, m->xyz, sizeof *x * 3 * (size_t)m->nv);
    mb_willmore_params p = {o.dt[k], (int)o.steps, o.tolerance, (int)o.max_iter, o.solver};
    mb_willmore_mesh wm = {m->nv, m->nf, m->face_indices, adj, x, m->name, NULL};
    mb_willmore_report rep = {.step = st};
    printf("%s, time step %g, solver %s:\n", cuda ? "cuda" : "cpu", o.dt[k],
           mb_willmore_solver_for(o.solver, m->nv, cuda) == MB_WILLMORE_ITERATIVE ? "iterative"
                                                                                  : "cholesky");
    fflush(stdout);
    e = cuda ? mb_willmore_run_cuda(&p, &wm, &rep) : mb_willmore_run_cpu(&p, &wm, &rep);
    if (e) break;
    const int iterative = mb_willmore_solver_for(o.solver, m->nv, cuda) == MB_WILLMORE_ITERATIVE;
    printf("  input: energy %.10g; setup %.3f ms (checks, Dirac pattern%s%s)\n", rep.energy0,
           rep.setup_ms, iterative ? "" : " and analysis", cuda ? ", uploads" : "");
    for (int s = 0; s < rep.steps; s++) {
      const mb_willmore_step *q = &st[s];
      tot[s] = q->assemble_ms + q->eigen_ms + q->poisson_ms + q->finish_ms;
      printf("  step %d: energy %.10g, %d solves, residual %.2e, distortion %.4f; curvature and "
             "assembly %8.3f ms, eigenvector %9.3f ms, positions %8.3f ms, update %8.3f ms; "
             "step %9.3f ms\n",
             s + 1, q->energy, q->iterations, q->residual, q->qc_max, q->assemble_ms,
             q->eigen_ms, q->poisson_ms, q->finish_ms, tot[s]);
      if (q->iterative)
        printf("          PCG iterations: %d in the inverse iteration's solves, %d in the "
               "Poisson solve\n",
               q->inner_iterations, q->poisson_iterations);
    }
    const int first = rep.steps > 1 ? 1 : 0;
    qsort(tot + first, (size_t)(rep.steps - first), sizeof *tot, cmp_double);
    const int nm = rep.steps - first;
    const double med = nm % 2 ? tot[first + nm / 2]
                              : 0.5 * (tot[first + nm / 2 - 1] + tot[first + nm / 2]);
    printf("  per step: %.3f ms (median of steps %d to %d)\n", med, first + 1, rep.steps);
  }
  free(x);
  free(st);
  free(tot);
  mb_adjacency_free(adj);
  mb_mesh_free(m);
  return e ? mb_cli_report(MB_EXIT_FAILED) : MB_EXIT_OK;
}
