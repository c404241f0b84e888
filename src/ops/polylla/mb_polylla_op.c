/* meshbatch: the polylla op (registration, per-mesh entries, benchmark).
 *
 * Method: S. Salinas-Fernandez, N. Hitschfeld-Kahler, A. Ortiz-Bernardin,
 * H. Si, "POLYLLA: polygonal meshing algorithm based on terminal-edge
 * regions", Engineering with Computers 38 (2022); GPU form after GPolylla
 * (Salinas-Fernandez et al., 2023). The rules are in mb_polylla.h.
 */
#include <inttypes.h>
#include <stddef.h>
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_args.h"
#include "mb_backend.h"
#include "mb_generate.h"
#include "mb_inputs.h"
#include "mb_log.h"
#include "mb_meshfile.h"
#include "mb_op.h"
#include "mb_polylla.h"
#include "mb_polylla_partitioned.h"
#include "mb_mpi.h"
#include "polylla/mb_polylla_cuda.h"

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

/* Replace the triangulation by its polygon mesh. */
static mb_error polylla_replace(mb_mesh **mesh, mb_mesh *poly) {
  mb_mesh_free(*mesh);
  *mesh = poly;
  return MB_SUCCESS;
}

/* Stages of polylla in a row: the second one would read polygons2d, which
 * the job loader already refuses, so n is 1. */
static mb_error polylla_run_cpu(const mb_op_ctx *ctx, const mb_stage *stages, int n,
                                mb_mesh **mesh) {
  (void)ctx; (void)n;
  mb_mesh *poly = NULL;
  const mb_polylla_opts o = polylla_opts(&stages[0]);
  MB_CALL(mb_polylla_cpu(*mesh, &o, &poly, NULL));
  return polylla_replace(mesh, poly);
}

static mb_error polylla_run_cuda(const mb_op_ctx *ctx, const mb_stage *stages, int n,
                                 mb_mesh **mesh) {
  (void)ctx; (void)n;
  mb_mesh *poly = NULL;
  const mb_polylla_opts o = polylla_opts(&stages[0]);
  MB_CALL(mb_polylla_cuda(*mesh, &o, &poly, NULL));
  return polylla_replace(mesh, poly);
}

/* Per-rank figures of a partitioned run, gathered to rank 0 and logged
 * there, one line per rank. Collective. */
static mb_error polylla_report(MPI_Comm comm, const char *name,
                               const mb_polylla_rank_figures *fig) {
  int rank, size;
  MB_CALL_MPI(MPI_Comm_rank(comm, &rank));
  MB_CALL_MPI(MPI_Comm_size(comm, &size));
  const int nv = (int)(sizeof *fig / sizeof(double));
  double *all = rank == 0 ? malloc(sizeof *fig * (size_t)size) : NULL;
  MB_CALL(mb_agree(comm, rank == 0 && !all ? mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__,
                                                          __func__, "out of memory")
                                           : MB_SUCCESS));
  MB_CALL_MPI(MPI_Gather(fig, nv, MPI_DOUBLE, all, nv, MPI_DOUBLE, 0, comm));
  if (rank == 0) {
    mb_log(MB_LOG_NORMAL, "%s: partitioned Polylla per rank (times in ms)\n"
           "  rank    owned   ghosts   meshed  migrated  polygons  stitched  cc-rounds  "
           "exchanged  distribute   label  regions  stitch     mesh   output", name);
    for (int r = 0; r < size; r++) {
      const mb_polylla_rank_figures *f = (const mb_polylla_rank_figures *)all + r;
      mb_log(MB_LOG_NORMAL, "  %4d %8.0f %8.0f %8.0f %9.0f %9.0f %9.0f %10.0f %8.2f MB %11.1f "
             "%7.1f %8.1f %7.1f %8.1f %8.1f", r, f->owned, f->ghosts, f->meshed, f->migrated,
             f->polygons_local + f->polygons_stitched, f->polygons_stitched, f->cc_rounds,
             f->bytes / 1e6, f->ms_distribute, f->ms_label, f->ms_regions, f->ms_stitch,
             f->ms_mesh, f->ms_output);
    }
  }
  free(all);
  return MB_SUCCESS;
}

/* Partitioned by triangles (mb_polylla_partitioned.h); the per-rank
 * figures go to rank 0's log. */
static mb_error polylla_run_faces(const mb_op_ctx *ctx, const mb_stage *stages, int n,
                                  mb_mesh_slab *slab, int cuda) {
  (void)n;
  const mb_polylla_opts o = polylla_opts(&stages[0]);
  mb_polylla_rank_figures fig = {0};
  MB_CALL(mb_polylla_partitioned(ctx->comm, ctx->parmetis, &o, cuda, slab, &fig));
  return polylla_report(ctx->comm, slab->rows->name, &fig);
}

static mb_error polylla_run_faces_cpu(const mb_op_ctx *ctx, const mb_stage *stages, int n,
                                      mb_mesh_slab *slab) {
  return polylla_run_faces(ctx, stages, n, slab, 0);
}

static mb_error polylla_run_faces_cuda(const mb_op_ctx *ctx, const mb_stage *stages, int n,
                                       mb_mesh_slab *slab) {
  return polylla_run_faces(ctx, stages, n, slab, 1);
}

/* triangles */
static double polylla_cost(int64_t nv, int64_t nf, const void *params) {
  (void)nv; (void)params;
  return (double)nf;
}

/* ------------------------------------------------------------ bench */

static const char polylla_bench_help[] =
    "usage: meshbatch bench polylla INPUT [--mesh NAME] [--backend cpu|cuda|both]\n"
    "                               [--warmup N] [--repeats N]\n\n"
    "Times Polylla on one planar triangulation: INPUT is a collection, Triangle\n"
    ".node/.ele or a planar OFF (--mesh picks one dataset of a collection), or\n"
    "made in memory: grid2d:N (the uniform grid triangulation with N vertices,\n"
    "meshbatch generate grid2d) or delaunay:N[:SEED] (N random points). Warm-up runs,\n"
    "then timed runs, the median of each phase reported. Per phase (copy in,\n"
    "half-edges, label, repair, traversal, copy out) it prints ms and millions\n"
    "of triangles per second; for the GPU also the label + repair + traversal\n"
    "kernels alone and the whole run from triangles in host memory to polygons\n"
    "in host memory, the device-to-device copy bandwidth measured in the same\n"
    "run, and the fraction of it the label kernels reach under the byte model\n"
    "of cuda/polylla/mb_polylla_cuda.h (29 B per triangle + 16 B per vertex).\n"
    "The GPU runs twice: from and to meshbatch's datasets (int64 indices in\n"
    "pageable memory, the job path), and from and to page-locked int32 arrays\n"
    "(how a caller that keeps GPU-ready arrays runs it); both give the same polygons.\n"
    "Defaults: backend both (cuda where a device is present), warmup 2, repeats 5.\n";

typedef struct bench_opts {
  const char *input, *only;
  int cpu, cuda;
  int64_t warmup, repeats;
} bench_opts;

static int bench_parse(int argc, char **argv, bench_opts *o) {
  *o = (bench_opts){.cpu = 1, .cuda = 1, .warmup = 2, .repeats = 5};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int bad = 0;
    if (mb_cli_log_option(a)) continue;
    if (!strcmp(a, "--mesh") && v) o->only = v;
    else if (!strcmp(a, "--backend") && v) {
      o->cpu = !strcmp(v, "cpu") || !strcmp(v, "both");
      o->cuda = !strcmp(v, "cuda") || !strcmp(v, "both");
      bad = !o->cpu && !o->cuda;
    } else if (!strcmp(a, "--warmup") && v) bad = mb_cli_parse_int64(v, &o->warmup) || o->warmup < 0;
    else if (!strcmp(a, "--repeats") && v) bad = mb_cli_parse_int64(v, &o->repeats) || o->repeats < 1;
    else if (a[0] != '-' && !o->input) { o->input = a; continue; }
    else return mb_cli_usage_error("bench", "unexpected argument '%s'", a);
    if (bad) return mb_cli_usage_error("bench", "bad value '%s' for %s", v, a);
    i++;
  }
  if (!o->input) return mb_cli_usage_error("bench", "missing INPUT triangulation");
  return MB_EXIT_OK;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median of each time field over n runs. */
static mb_polylla_stats median_stats(const mb_polylla_stats *runs, int n) {
  mb_polylla_stats m = runs[0];
  double *v = malloc(sizeof *v * (size_t)n);
  if (!v) return m;
#define MEDIAN_OF(field)                                                       \
  do {                                                                         \
    for (int r = 0; r < n; r++) v[r] = runs[r].field;                          \
    qsort(v, (size_t)n, sizeof *v, cmp_double);                                \
    m.field = v[n / 2];                                                        \
  } while (0)
  MEDIAN_OF(ms_copy_in); MEDIAN_OF(ms_halfedge); MEDIAN_OF(ms_label); MEDIAN_OF(ms_repair);
  MEDIAN_OF(ms_traversal); MEDIAN_OF(ms_copy_out); MEDIAN_OF(ms_kernels); MEDIAN_OF(ms_total);
#undef MEDIAN_OF
  free(v);
  return m;
}

static void print_phase(const char *name, double ms, int64_t nt) {
  printf("  %-34s %10.3f ms %10.1f Mtriangles/s\n", name, ms, ms > 0 ? 1e-3 * (double)nt / ms : 0);
}

static void print_stats(const char *backend, const mb_polylla_stats *s, int gpu) {
  printf("%s: %lld triangles -> %lld polygons, %lld frontier edges, %lld barrier-edge tips, "
         "%lld polygons repaired\n", backend, (long long)s->triangles, (long long)s->polygons,
         (long long)s->frontier_edges, (long long)s->barrier_edge_tips,
         (long long)s->polygons_repaired);
  if (gpu) print_phase("copy in", s->ms_copy_in, s->triangles);
  print_phase("half-edges (orientation, twins)", s->ms_halfedge, s->triangles);
  print_phase("label", s->ms_label, s->triangles);
  print_phase("repair", s->ms_repair, s->triangles);
  print_phase("traversal", s->ms_traversal, s->triangles);
  if (gpu) print_phase("copy out", s->ms_copy_out, s->triangles);
  if (gpu) print_phase("label + repair + traversal kernels", s->ms_kernels, s->triangles);
  else print_phase("label + repair + traversal", s->ms_label + s->ms_repair + s->ms_traversal,
                   s->triangles);
  print_phase("end to end (host in, host out)", s->ms_total, s->triangles);
}

static mb_error bench_cpu(const mb_mesh *tri, const bench_opts *o) {
  int n = (int)o->repeats;
  mb_polylla_stats *runs = calloc((size_t)n, sizeof *runs);
  MB_CHECK(runs, MB_ERR_MEMORY, "out of memory");
  mb_error e = MB_SUCCESS;
  for (int r = 0; !e && r < o->warmup + n; r++) {
    mb_mesh *poly = NULL;
    mb_polylla_stats s = {0};
    e = mb_polylla_cpu(tri, NULL, &poly, &s);
    mb_mesh_free(poly);
    if (r >= o->warmup) runs[r - o->warmup] = s;
  }
  if (!e) {
    mb_polylla_stats m = median_stats(runs, n);
    char name[96];
    snprintf(name, sizeof name, "cpu (%d OpenMP threads), median of %d", omp_get_max_threads(), n);
    print_stats(name, &m, 0);
  }
  free(runs);
  return e;
}

static mb_error bench_cuda(const mb_mesh *tri, const bench_opts *o) {
  mb_polylla_stats m = {0};
  double copy_gbs = 0;
  MB_CALL(mb_polylla_cuda_bench(tri, (int)o->warmup, (int)o->repeats, &m, &copy_gbs));
  char name[128];
  snprintf(name, sizeof name, "cuda, mb_mesh in and out (int64, pageable), median of %d",
           (int)o->repeats);
  print_stats(name, &m, 1);
  mb_polylla_stats p = {0};
  MB_CALL(mb_polylla_cuda_bench_pinned(tri, (int)o->warmup, (int)o->repeats, &p));
  snprintf(name, sizeof name, "cuda, page-locked int32 arrays in and out, median of %d",
           (int)o->repeats);
  print_stats(name, &p, 1);
  double bytes = MB_POLYLLA_LABEL_BYTES(tri->nv, tri->nf);
  double gbs = m.ms_label > 0 ? bytes / (m.ms_label * 1e-3) / 1e9 : 0;
  printf("  device-to-device copy bandwidth %.1f GB/s (read + write); label kernels move "
         "%.3f GB under the byte model: %.1f GB/s = %.2f of copy\n", copy_gbs, bytes / 1e9, gbs,
         copy_gbs > 0 ? gbs / copy_gbs : 0);
  return MB_SUCCESS;
}

/* The triangulation to time: generated (grid2d:N, delaunay:N[:SEED]) or read. */
static mb_error bench_input(const bench_opts *o, mb_mesh **tri) {
  int64_t n = 0, seed = 1;
  char tail[64] = "";
  if (sscanf(o->input, "grid2d:%" SCNd64 "%63s", &n, tail) == 1 && n > 0) {
    double t0 = mb_wtime();
    MB_CALL(mb_generate_grid2d(n, tri));
    printf("generated %s in %.2f s\n", (*tri)->name, mb_wtime() - t0);
    return MB_SUCCESS;
  }
  int got = sscanf(o->input, "delaunay:%" SCNd64 ":%" SCNd64 "%63s", &n, &seed, tail);
  if ((got == 1 || got == 2) && n > 0) {
    double t0 = mb_wtime();
    MB_CALL(mb_generate_delaunay(n, (uint64_t)seed, 0, tri));
    printf("generated %s in %.2f s\n", (*tri)->name, mb_wtime() - t0);
    return MB_SUCCESS;
  }
  char *patterns[] = {(char *)o->input};
  mb_inputs *in = NULL;
  MB_CALL(mb_inputs_open(MPI_COMM_SELF, 1, patterns, &in));
  int64_t s = 0;
  for (int64_t k = 0; o->only && k < in->nsources; k++)
    if (!strcmp(in->sources[k].name, o->only)) s = k;
  mb_error e = mb_inputs_read(in, s, tri);
  if (!e) e = mb_mesh_convert_kind(*tri, MB_KIND_TRIANGULATION2D, in->sources[s].path);
  mb_inputs_close(in);
  MB_CALL(e);
  return MB_SUCCESS;
}

static int polylla_bench(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      if (mb_cli_rank() == 0) fputs(polylla_bench_help, stdout);
      return MB_EXIT_OK;
    }
  bench_opts o;
  int code = bench_parse(argc, argv, &o);
  if (code) return code;
  if (mb_cli_rank() != 0) return MB_EXIT_OK; /* one-rank benchmark */
  mb_mesh *tri = NULL;
  if (bench_input(&o, &tri)) {
    code = mb_cli_report(MB_EXIT_FAILED);
  } else {
    printf("polylla %s: %lld vertices, %lld triangles\n", tri->name, (long long)tri->nv,
           (long long)tri->nf);
    mb_backend be;
    char why[512];
    if (o.cpu && bench_cpu(tri, &o)) code = mb_cli_report(MB_EXIT_FAILED);
    if (!code && o.cuda) {
      if (mb_backend_choose(o.cpu ? MB_BACKEND_AUTO : MB_BACKEND_CUDA, 0, &be, why, sizeof why))
        code = mb_cli_report(MB_EXIT_FAILED);
      else if (be.kind != MB_BACKEND_CUDA)
        printf("cuda: skipped (%s)\n", why);
      else if (bench_cuda(tri, &o))
        code = mb_cli_report(MB_EXIT_FAILED);
    }
  }
  mb_mesh_free(tri);
  return code;
}

/* ------------------------------------------------------------ registration */

const mb_op_info mb_op_polylla = {
    .name = "polylla",
    .room = "polylla",
    .summary = "Polylla polygonal meshing: one polygon per terminal-edge region, "
               "barrier-edge tips repaired",
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
    .run_faces = {polylla_run_faces_cpu, polylla_run_faces_cuda},
    .bench = polylla_bench,
};
