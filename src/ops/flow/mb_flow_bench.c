/* meshbatch: `meshbatch bench flow` (the flow room's benchmark): steps of
 * mean_curvature_flow on one mesh, per phase and per solver, on the CPU and
 * the GPU, and the GPU's sparse product against the copy bandwidth. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_adjacency.h"
#include "mb_args.h"
#include "mb_csr.h"
#include "mb_cuda.h"
#include "mb_distributed.h"
#include "mb_flow.h"
#include "mb_inputs.h"
#include "mb_linalg_cuda.h"
#include "mb_log.h"
#include "mb_meshfile.h"
#include "mb_mpi.h"
#include "mb_reduce.h"

static const char flow_bench_help[] =
    "usage: meshbatch bench flow INPUT [--mesh NAME] [--backend cpu|cuda|both]\n"
    "                            [--time-step DT[,DT...]] [--steps N]\n"
    "                            [--solver auto|pcg|cholesky|amg[,...]]\n"
    "                            [--variant conformalized|classic] [--rescale none|area]\n"
    "                            [--tolerance T] [--max-iterations N] [--spmv-repeats N]\n"
    "                            [--distribute per-mesh|partitioned]\n\n"
    "Times mean_curvature_flow on one triangle mesh (INPUT: a collection or a mesh\n"
    "file; --mesh picks one dataset of a collection), e.g. igea refined to 1 M\n"
    "vertices at unit area (meshbatch generate subdivide igea.obj --vertices 1000000\n"
    "--unit-area -o igea_1m.h5). For each backend, time step and solver it runs\n"
    "--steps steps from the input's positions and prints per step the solver that\n"
    "ran (auto: the rule of the guide, chosen per step), its iterations and\n"
    "relative residual, and ms per phase: assembly (operator, mass, system,\n"
    "elimination), solve (with Cholesky's analysis, factor and solve beside it;\n"
    "the analysis is made once, in the first step; amg: its hierarchy's setup\n"
    "as the analysis, its update as the factor), finish\n"
    "(the solution taken, rescale); then the step's ms (the median over the steps\n"
    "after the first, which alone pays the analysis). On the GPU the device is\n"
    "synchronised between phases. Also on the GPU: the sparse product of three\n"
    "columns (the PCG's) by cuSPARSE, by the row kernel (each block's entries\n"
    "staged in shared memory, the matrix read with evict-first loads), unstaged,\n"
    "and staged with ordinary loads (cached), ms and GB/s\n"
    "under the byte model of\n"
    "cuda/linalg/mb_linalg_cuda.h, and the device-to-device copy bandwidth\n"
    "measured in the same run with the fraction of it.\n"
    "With --distribute partitioned (under mpirun -np N, --solver pcg) the mesh is\n"
    "split over the ranks by METIS (ghost depth 1, as the op's partitioned run),\n"
    "on one GPU per rank with --backend cuda (or the CPU ranks with cpu): per\n"
    "step the slowest rank's phases, and the speed-up against one rank timed in\n"
    "the same invocation (rank 0 alone on the whole mesh, the others waiting),\n"
    "both on the first backend given (cuda where every rank has a device).\n"
    "Defaults: backend both (cuda where a device is present), time steps\n"
    "1e-5,1e-4,1e-3, steps 3, solver auto, variant conformalized, rescale none,\n"
    "tolerance 1e-10, max iterations 10000, spmv repeats 20.\n";

#define MAX_LIST 8

typedef struct bench_opts {
  const char *input, *only;
  int cpu, cuda;
  double dt[MAX_LIST];
  int ndt;
  int solver[MAX_LIST];
  int nsolver;
  int64_t steps, max_iter, spmv_repeats;
  int variant, rescale;
  double tolerance;
  int partitioned;
} bench_opts;

/* "a,b,c" of reals into v[MAX_LIST]; returns the count, 0 on a bad value. */
static int parse_reals(const char *s, double *v) {
  int n = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    char *end = NULL;
    const double x = strtod(tok, &end);
    if (n == MAX_LIST || end == tok || *end || !(x > 0) || !isfinite(x)) return 0;
    v[n++] = x;
  }
  return n;
}

static int parse_solvers(const char *s, int *v) {
  int n = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    int m = !strcmp(tok, "auto") ? MB_SOLVER_AUTO
            : !strcmp(tok, "pcg") ? MB_SOLVER_PCG
            : !strcmp(tok, "cholesky") ? MB_SOLVER_CHOLESKY
            : !strcmp(tok, "amg") ? MB_SOLVER_AMG : -1;
    if (m < 0 || n == MAX_LIST) return 0;
    v[n++] = m;
  }
  return n;
}

static int bench_parse(int argc, char **argv, bench_opts *o) {
  *o = (bench_opts){.cpu = 1, .cuda = 1, .dt = {1e-5, 1e-4, 1e-3}, .ndt = 3,
                    .solver = {MB_SOLVER_AUTO}, .nsolver = 1, .steps = 3, .max_iter = 10000,
                    .spmv_repeats = 20, .variant = MB_FLOW_CONFORMALIZED,
                    .rescale = MB_FLOW_RESCALE_NONE, .tolerance = 1e-10};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int bad = 0;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      if (mb_cli_rank() == 0) fputs(flow_bench_help, stdout);
      return -1;
    }
    if (mb_cli_log_option(a)) continue;
    if (!strcmp(a, "--mesh") && v) o->only = v;
    else if (!strcmp(a, "--backend") && v) {
      o->cpu = !strcmp(v, "cpu") || !strcmp(v, "both");
      o->cuda = !strcmp(v, "cuda") || !strcmp(v, "both");
      bad = !o->cpu && !o->cuda;
    } else if (!strcmp(a, "--time-step") && v) bad = !(o->ndt = parse_reals(v, o->dt));
    else if (!strcmp(a, "--solver") && v) bad = !(o->nsolver = parse_solvers(v, o->solver));
    else if (!strcmp(a, "--distribute") && v) {
      o->partitioned = !strcmp(v, "partitioned");
      bad = !o->partitioned && strcmp(v, "per-mesh");
    }
    else if (!strcmp(a, "--variant") && v) {
      o->variant = !strcmp(v, "classic") ? MB_FLOW_CLASSIC : MB_FLOW_CONFORMALIZED;
      bad = o->variant == MB_FLOW_CONFORMALIZED && strcmp(v, "conformalized");
    } else if (!strcmp(a, "--rescale") && v) {
      o->rescale = !strcmp(v, "area") ? MB_FLOW_RESCALE_AREA : MB_FLOW_RESCALE_NONE;
      bad = o->rescale == MB_FLOW_RESCALE_NONE && strcmp(v, "none");
    } else if (!strcmp(a, "--tolerance") && v) {
      char *end = NULL;
      o->tolerance = strtod(v, &end);
      bad = end == v || *end || !(o->tolerance > 0 && o->tolerance < 1);
    } else if (!strcmp(a, "--steps") && v)
      bad = mb_cli_parse_int64(v, &o->steps) || o->steps < 1 || o->steps > 100000;
    else if (!strcmp(a, "--max-iterations") && v)
      bad = mb_cli_parse_int64(v, &o->max_iter) || o->max_iter < 1 || o->max_iter > 100000000;
    else if (!strcmp(a, "--spmv-repeats") && v)
      bad = mb_cli_parse_int64(v, &o->spmv_repeats) || o->spmv_repeats < 1 ||
            o->spmv_repeats > 100000;
    else if (a[0] != '-' && !o->input) {
      o->input = a;
      continue;
    } else
      return mb_cli_usage_error("bench flow", "unexpected argument '%s'", a);
    if (bad) return mb_cli_usage_error("bench flow", "bad value '%s' for %s", v, a);
    i++;
  }
  if (!o->input) return mb_cli_usage_error("bench flow", "missing INPUT mesh");
  if (mb_inputs_check_named(o->input, o->only)) /* a usage error, as `meshbatch info` says */
    return mb_cli_usage_error("bench flow", "%s", mb_error_message());
  for (int j = 0; o->partitioned && j < o->nsolver; j++)
    if (o->solver[j] != MB_SOLVER_PCG)
      return mb_cli_usage_error("bench flow", "--distribute partitioned times --solver pcg only (a "
                                         "split mesh is solved by the conjugate gradient)");
  return MB_EXIT_OK;
}

static mb_error load(const bench_opts *o, mb_mesh **mesh) {
  char path[4096];
  mb_error e = mb_inputs_read_named(o->input, o->only, mesh, path);
  if (!e) e = mb_mesh_convert_kind(*mesh, MB_KIND_SURFACE, path);
  return e;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of v[n] (reordered). */
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One backend, time step and solver: --steps steps of fm from x0 (fm->x
 * is overwritten). Per step the phases' ms, the largest over fm->comm's
 * ranks; rank 0 of fm->comm prints them under `label`; *per_step the median
 * step ms (steps after the first). Collective over fm->comm. */
static mb_error run_one(const bench_opts *o, mb_flow_mesh *fm, const double *x0, int cuda,
                        double dt, int solver, const char *label, double *per_step) {
  const int steps = (int)o->steps;
  int rank = 0;
  MPI_Comm_rank(fm->comm, &rank);
  mb_flow_params p = {.kind = MB_FLOW_MCF, .time_step = dt, .steps = steps,
                      .weights = MB_FLOW_COTANGENT, .variant = o->variant,
                      .boundary = MB_FLOW_FREE, .rescale = o->rescale, .solver = solver,
                      .tolerance = o->tolerance, .max_iterations = (int)o->max_iter};
  mb_solve_stats *st = calloc((size_t)steps, sizeof *st);
  mb_flow_phases *ph = calloc((size_t)steps, sizeof *ph), *mx = calloc((size_t)steps, sizeof *mx);
  double *tot = calloc((size_t)steps, sizeof *tot);
  mb_error e = st && ph && mx && tot ? MB_SUCCESS
                                     : mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                                                    "out of memory for %d steps", steps);
  MB_CALL(mb_agree(fm->comm, e));
  memcpy(fm->x, x0, sizeof *x0 * 3 * (size_t)fm->ncols);
  mb_flow_report rep = {0, st, ph};
  if (rank == 0) {
    printf("%s, dt %g, solver %s:\n", label, dt, mb_solver_method_name(solver));
    fflush(stdout);
  }
  e = cuda ? mb_flow_run_cuda(&p, fm, &rep) : mb_flow_run_cpu(&p, fm, &rep);
  if (!e) {
    const int rc = MPI_Allreduce(ph, mx, 3 * steps, MPI_DOUBLE, MPI_MAX, fm->comm);
    if (rc) e = mb_error_mpi_failed(rc, __FILE__, __LINE__, __func__, "MPI_Allreduce(phases)");
  }
  for (int s = 0; !e && s < steps; s++) {
    tot[s] = mx[s].assemble_ms + mx[s].solve_ms + mx[s].finish_ms;
    if (rank == 0)
      printf("  step %d: %-8s %6d iterations, residual %.2e; assembly %9.3f ms, solve %9.3f ms "
             "(analysis %.1f, factor %.1f, solve %.1f), finish %8.3f ms; step %9.3f ms\n",
             s + 1, mb_solver_method_name(st[s].method), st[s].iterations, st[s].residual,
             mx[s].assemble_ms, mx[s].solve_ms, st[s].analyze_ms, st[s].factor_ms,
             st[s].solve_ms, mx[s].finish_ms, tot[s]);
  }
  if (!e) {
    const int first = steps > 1 ? 1 : 0;
    *per_step = median(tot + first, steps - first);
    if (rank == 0)
      printf("  per step: %.3f ms (median of steps %d to %d)\n", *per_step, first + 1, steps);
  }
  free(st);
  free(ph);
  free(mx);
  free(tot);
  return e;
}

/* The GPU's product of three columns against the copy bandwidth. */
static mb_error spmv_figures(const bench_opts *o, const mb_mesh *m, const mb_adjacency *adj) {
  mb_csr *A = NULL;
  mb_cuda_csr *dA = NULL;
  double *dx = NULL, copy = 0;
  mb_error e = mb_csr_pattern(adj, m->nv, m->nv, NULL, &A);
  if (!e) e = mb_cuda_csr_create(A, adj, &dA);
  if (!e) e = mb_reduce_device_upload(3 * m->nv, m->xyz, &dx);
  if (!e) e = mb_cuda_cotangent_laplacian(dA, dx, NULL);
  if (!e) e = mb_cuda_copy_bandwidth((size_t)1 << 30, &copy);
  if (!e) printf("cuda: device-to-device copy %.0f GB/s; the product of 3 columns (%d rows, %d "
                 "entries):\n", copy, A->nrows, A->nnz);
  static const char *const kname[] = {"cuSPARSE", "rows", "unstaged", "cached"};
  for (int k = 0; k < 4 && !e; k++) {
    double ms = 0, bytes = 0;
    e = mb_cuda_csr_time_spmv(dA, k, 3, (int)o->spmv_repeats, &ms, &bytes);
    if (!e) {
      const double gbs = bytes / (ms * 1e-3) / 1e9;
      printf("  %-9s %8.4f ms, %7.0f GB/s, %.2f of copy\n", kname[k], ms, gbs,
             copy > 0 ? gbs / copy : 0);
    }
  }
  mb_reduce_device_release(dx);
  mb_cuda_csr_free(dA);
  mb_csr_free(A);
  return e;
}

/* --distribute partitioned: every rank reads the mesh, the split is
 * METIS k-way, one device per rank; the one-rank baseline first. */
static int bench_partitioned(const bench_opts *o) {
  const MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0, size = 1, local = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  mb_mesh *m = NULL;
  mb_adjacency *adj = NULL;
  mb_distributed_mesh *dm = NULL;
  double *x = NULL, *x0 = NULL;
  char why[256] = "";
  int have = o->cuda && mb_cuda_device_count(why, sizeof why) > 0, all = 0;
  MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, comm);
  const int cuda = all;
  if (!cuda && !o->cpu) {
    mb_error_set(MB_ERR_UNSUPPORTED, __FILE__, __LINE__, __func__,
                 "bench flow --backend cuda: not every rank has a CUDA device (%s)",
                 why[0] ? why : "none");
    return mb_cli_report(MB_EXIT_FAILED);
  }
  mb_error e = mb_local_rank(comm, &local);
  char name[256] = "";
  int dev = 0;
  if (!e && cuda) e = mb_cuda_select_device(local, &dev, name, sizeof name);
  if (!e) e = load(o, &m);
  if (!e) e = mb_adjacency_build(m, &adj);
  if (!e) {
    x = malloc(sizeof *x * 3 * (size_t)(m->nv + 1));
    if (!x) e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  }
  e = mb_agree(comm, e);
  if (!e && rank == 0)
    printf("bench flow --distribute partitioned: %s, %lld vertices, %lld triangles, %d %s, "
           "%s%s%s; mean_curvature_flow %s, rescale %s, tolerance %g\n",
           m->name, (long long)m->nv, (long long)m->nf, size, mb_plural(size, "rank", "ranks"),
           cuda ? "cuda (" : "cpu",
           cuda ? name : "", cuda ? ", one device per rank)" : "",
           o->variant == MB_FLOW_CLASSIC ? "classic" : "conformalized",
           o->rescale == MB_FLOW_RESCALE_AREA ? "area" : "none", o->tolerance);
  double t0 = mb_wtime();
  if (!e) e = mb_distributed_create(comm, adj, m->xyz, NULL, 1, &dm);
  if (!e) {
    const mb_local_domain *loc = dm->domain;
    const size_t n = 3 * (size_t)(loc->nowned + loc->nghost);
    x0 = malloc(sizeof *x0 * (n + 1));
    if (x0) memcpy(x0, dm->x, sizeof *x0 * n);
    else e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  }
  e = mb_agree(comm, e);
  if (!e && rank == 0) printf("split in %.2f s (METIS k-way, ghost depth 1)\n", mb_wtime() - t0);
  for (int i = 0; i < o->ndt && !e; i++) {
    double one = 0, many = 0;
    mb_error eb = MB_SUCCESS;
    if (rank == 0) {
      mb_flow_mesh fm = {MPI_COMM_SELF, NULL, adj, m->nv, m->nv, NULL, x, m->name, NULL};
      eb = run_one(o, &fm, m->xyz, cuda, o->dt[i], MB_SOLVER_PCG, "one rank", &one);
    }
    e = mb_agree(comm, eb);
    if (e) break;
    const mb_local_domain *loc = dm->domain;
    mb_flow_mesh fm = {comm, dm->halo, loc->adj, loc->nowned, loc->nowned + loc->nghost,
                       loc->global, dm->x, m->name, NULL};
    char label[64];
    snprintf(label, sizeof label, "%d %s", size, mb_plural(size, "rank", "ranks"));
    e = run_one(o, &fm, x0, cuda, o->dt[i], MB_SOLVER_PCG, label, &many);
    if (!e && rank == 0)
      printf("  speed-up %.2f on %d %s (parallel efficiency %.2f)\n", many > 0 ? one / many : 0,
             size, mb_plural(size, "rank", "ranks"), many > 0 ? one / many / size : 0);
  }
  mb_distributed_free(dm);
  free(x0);
  free(x);
  mb_adjacency_free(adj);
  mb_mesh_free(m);
  return e ? mb_cli_report(MB_EXIT_FAILED) : MB_EXIT_OK;
}

int mb_flow_bench(int argc, char **argv) {
  bench_opts o;
  int rc = bench_parse(argc, argv, &o);
  if (rc < 0) return MB_EXIT_OK;
  if (rc) return rc;
  if (o.partitioned) return bench_partitioned(&o);
  if (mb_cli_rank() != 0) return MB_EXIT_OK; /* one rank's benchmark */
  char why[256] = "";
  if (o.cuda && mb_cuda_device_count(why, sizeof why) <= 0) {
    if (!o.cpu) {
      mb_error_set(MB_ERR_UNSUPPORTED, __FILE__, __LINE__, __func__,
                   "bench flow --backend cuda: no CUDA device (%s)", why[0] ? why : "none");
      return mb_cli_report(MB_EXIT_FAILED);
    }
    printf("cuda: skipped (%s)\n", why[0] ? why : "no device");
    o.cuda = 0;
  }
  mb_mesh *m = NULL;
  mb_adjacency *adj = NULL;
  double t0 = mb_wtime();
  mb_error e = load(&o, &m);
  if (!e) e = mb_adjacency_build(m, &adj);
  if (!e)
    printf("bench flow: %s, %lld vertices, %lld triangles (read in %.2f s); mean_curvature_flow "
           "%s, rescale %s, tolerance %g\n",
           m->name, (long long)m->nv, (long long)m->nf, mb_wtime() - t0,
           o.variant == MB_FLOW_CLASSIC ? "classic" : "conformalized",
           o.rescale == MB_FLOW_RESCALE_AREA ? "area" : "none", o.tolerance);
  if (!e && o.cuda) {
    int dev = 0;
    char name[256] = "";
    e = mb_cuda_select_device(0, &dev, name, sizeof name);
    if (!e) printf("cuda: device %d, %s\n", dev, name);
    if (!e) e = spmv_figures(&o, m, adj);
  }
  double *x = e ? NULL : malloc(sizeof *x * 3 * (size_t)(m->nv + 1));
  if (!e && !x) e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  mb_flow_mesh fm = {MPI_COMM_SELF, NULL, adj, m ? m->nv : 0, m ? m->nv : 0, NULL, x,
                     m ? m->name : "", NULL};
  for (int b = 0; b < 2 && !e; b++) {
    if (!(b ? o.cuda : o.cpu)) continue;
    for (int i = 0; i < o.ndt && !e; i++)
      for (int j = 0; j < o.nsolver && !e; j++) {
        double ms = 0;
        e = run_one(&o, &fm, m->xyz, b, o.dt[i], o.solver[j], b ? "cuda" : "cpu", &ms);
      }
  }
  free(x);
  mb_adjacency_free(adj);
  mb_mesh_free(m);
  return e ? mb_cli_report(MB_EXIT_FAILED) : MB_EXIT_OK;
}
