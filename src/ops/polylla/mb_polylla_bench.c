/* meshbatch: `meshbatch bench polylla` (per mesh on one rank, or
 * partitioned over the ranks with the one-rank baseline in the same run). */
#include <inttypes.h>
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mb_args.h"
#include "mb_backend.h"
#include "mb_generate.h"
#include "mb_inputs.h"
#include "mb_log.h"
#include "mb_meshfile.h"
#include "mb_mpi.h"
#include "mb_polylla.h"
#include "mb_polylla_partitioned.h"
#include "mb_polylla_cuda.h"

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
    "Defaults: backend both (cuda where a device is present), warmup 2, repeats 5.\n\n"
    "With --distribute partitioned (under mpirun -np N) it times partitioned\n"
    "Polylla (--partitioner metis|parmetis|blocks, default metis) on the backend\n"
    "(cpu, or cuda with one GPU per rank), with the one-rank baseline in the same\n"
    "run: rank 0 alone on the whole triangulation while the other ranks sleep\n"
    "(not spinning in MPI). Every rank makes the input and keeps its block of\n"
    "rows. It prints each rank's figures (owned and ghost triangles, triangles\n"
    "meshed and migrated, polygons made and stitched, bytes exchanged, ms per\n"
    "phase, peak memory) and the speed-up and parallel efficiency against the\n"
    "baseline, for the meshing phases (label + repair + traversal; on the GPU\n"
    "the kernels) and for the whole call.\n";

typedef struct bench_opts {
  const char *input, *only;
  int cpu, cuda;
  int64_t warmup, repeats;
  int partitioned;
  mb_partitioner partitioner;
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
    } else if (!strcmp(a, "--distribute") && v) {
      o->partitioned = !strcmp(v, "partitioned");
      bad = !o->partitioned && strcmp(v, "per-mesh");
    } else if (!strcmp(a, "--partitioner") && v) {
      o->partitioner = !strcmp(v, "parmetis") ? MB_PARTITIONER_PARMETIS
                       : !strcmp(v, "blocks") ? MB_PARTITIONER_BLOCKS : MB_PARTITIONER_METIS;
      bad = o->partitioner == MB_PARTITIONER_METIS && strcmp(v, "metis");
    } else if (!strcmp(a, "--warmup") && v) bad = mb_cli_parse_int64(v, &o->warmup) || o->warmup < 0;
    else if (!strcmp(a, "--repeats") && v) bad = mb_cli_parse_int64(v, &o->repeats) || o->repeats < 1;
    else if (a[0] != '-' && !o->input) { o->input = a; continue; }
    else return mb_cli_usage_error("bench polylla", "unexpected argument '%s'", a);
    if (bad) return mb_cli_usage_error("bench polylla", "bad value '%s' for %s", v, a);
    i++;
  }
  if (!o->input) return mb_cli_usage_error("bench polylla", "missing INPUT triangulation");
  /* grid2d:N and delaunay:N[:SEED] made in memory: refused here when the
   * numbers are not, rather than read as a file name */
  int64_t n = 0, seed = 0;
  if (!strncmp(o->input, "grid2d:", 7) && (mb_cli_parse_int64(o->input + 7, &n) || n < 1))
    return mb_cli_usage_error("bench polylla", "grid2d:N needs the vertex count N, a positive "
                              "integer, got '%s'", o->input + 7);
  if (!strncmp(o->input, "delaunay:", 9)) {
    char count[64] = "";
    const char *colon = strchr(o->input + 9, ':');
    snprintf(count, sizeof count, "%.*s", colon ? (int)(colon - o->input - 9) : 63, o->input + 9);
    if (mb_cli_parse_int64(count, &n) || n < 3 || n > 2147483647)
      return mb_cli_usage_error("bench polylla", "delaunay:N[:SEED] needs the point count N, an "
                                "integer in [3, 2^31), got '%s'", count);
    if (colon && mb_cli_parse_int64(colon + 1, &seed))
      return mb_cli_usage_error("bench polylla", "delaunay:N:SEED needs an integer SEED, got '%s'",
                                colon + 1);
  }
  if (mb_inputs_check_named(o->input, o->only)) /* a usage error, as `meshbatch info` says */
    return mb_cli_usage_error("bench polylla", "%s", mb_error_message());
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
    snprintf(name, sizeof name, "cpu (%d OpenMP thread%s), median of %d", omp_get_max_threads(),
             omp_get_max_threads() == 1 ? "" : "s", n);
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
  if (p.pinches_split)
    printf("  (the page-locked path ends at the kernels' polygons: the host's pinch repair, "
           "whose %lld cuts the path above made, is not in it, so its polygons were not "
           "compared)\n", (long long)p.pinches_split);
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
    if (mb_cli_rank() == 0) printf("generated %s in %.2f s\n", (*tri)->name, mb_wtime() - t0);
    return MB_SUCCESS;
  }
  int got = sscanf(o->input, "delaunay:%" SCNd64 ":%" SCNd64 "%63s", &n, &seed, tail);
  if ((got == 1 || got == 2) && n > 0) {
    double t0 = mb_wtime();
    MB_CALL(mb_generate_delaunay(n, (uint64_t)seed, 0, tri));
    if (mb_cli_rank() == 0) printf("generated %s in %.2f s\n", (*tri)->name, mb_wtime() - t0);
    return MB_SUCCESS;
  }
  char path[4096]; /* the mesh's file, for convert_kind's messages */
  MB_CALL(mb_inputs_read_named(o->input, o->only, tri, path));
  MB_CALL(mb_mesh_convert_kind(*tri, MB_KIND_TRIANGULATION2D, path));
  return MB_SUCCESS;
}

/* ------------------------------------------------- partitioned benchmark */

static double median_of(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One backend: the baseline on rank 0, then the partitioned runs. */
static mb_error bench_partitioned_backend(const bench_opts *o, const mb_mesh *tri,
                                          const mb_mesh_slab *slab, int cuda) {
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank, size;
  MB_CALL_MPI(MPI_Comm_rank(comm, &rank));
  MB_CALL_MPI(MPI_Comm_size(comm, &size));
  const int n = (int)(o->warmup + o->repeats), nr = (int)o->repeats;
  double *base_phases = calloc((size_t)n, sizeof(double)), *base_total = calloc((size_t)n, sizeof(double));
  double *part_phases = calloc((size_t)n, sizeof(double)), *part_total = calloc((size_t)n, sizeof(double));
  MB_CHECK(base_phases && base_total && part_phases && part_total, MB_ERR_MEMORY, "out of memory");
  mb_error e = MB_SUCCESS;
  /* baseline: rank 0 alone */
  if (rank == 0) {
    for (int r = 0; !e && r < n; r++) {
      mb_mesh *poly = NULL;
      mb_polylla_stats st;
      double t0 = mb_wtime();
      e = cuda ? mb_polylla_cuda(tri, NULL, &poly, &st) : mb_polylla_cpu(tri, NULL, &poly, &st);
      base_total[r] = 1e3 * (mb_wtime() - t0);
      base_phases[r] = cuda ? st.ms_kernels : st.ms_label + st.ms_repair + st.ms_traversal;
      mb_mesh_free(poly);
    }
  }
  MB_CALL(mb_idle_barrier(comm));
  MB_CALL(mb_agree(comm, e));
  /* partitioned */
  mb_polylla_rank_figures fig = {0};
  for (int r = 0; !e && r < n; r++) {
    mb_mesh_slab s = *slab;
    e = mb_mesh_duplicate(slab->rows, &s.rows);
    MB_CALL(mb_agree(comm, e));
    MB_CALL_MPI(MPI_Barrier(comm));
    double t0 = mb_wtime();
    e = mb_polylla_partitioned(comm, o->partitioner, NULL, cuda, &s, &fig);
    double t = 1e3 * (mb_wtime() - t0), ph = fig.ms_phases;
    mb_mesh_free(s.rows);
    MB_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, comm));
    MB_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &ph, 1, MPI_DOUBLE, MPI_MAX, comm));
    part_total[r] = t;
    part_phases[r] = ph;
  }
  MB_CALL(e);
  MB_CALL(mb_polylla_figures_report(comm, tri->name, &fig));
  if (rank == 0) {
    double b1 = median_of(base_phases + o->warmup, nr), b2 = median_of(base_total + o->warmup, nr);
    double p1 = median_of(part_phases + o->warmup, nr), p2 = median_of(part_total + o->warmup, nr);
    printf("%s, %s partitioner, median of %d (after %d warm-up):\n", cuda ? "cuda" : "cpu",
           o->partitioner == MB_PARTITIONER_PARMETIS ? "parmetis"
           : o->partitioner == MB_PARTITIONER_BLOCKS ? "blocks" : "metis", nr, (int)o->warmup);
    printf("  meshing phases (%s): 1 rank %.2f ms, %d %s %.2f ms (slowest rank): speed-up "
           "%.2f, efficiency %.2f\n",
           cuda ? "label + repair + traversal kernels" : "label + repair + traversal", b1, size,
           mb_plural(size, "rank", "ranks"), p1, b1 / p1, b1 / (size * p1));
    printf("  whole call (host triangles in, polygons out): 1 rank %.1f ms, %d %s %.1f ms: "
           "speed-up %.2f, efficiency %.2f\n",
           b2, size, mb_plural(size, "rank", "ranks"), p2, b2 / p2, b2 / (size * p2));
  }
  free(base_phases); free(base_total); free(part_phases); free(part_total);
  return MB_SUCCESS;
}

static int bench_partitioned(const bench_opts *o) {
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank, size;
  if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS || MPI_Comm_size(comm, &size) != MPI_SUCCESS) {
    mb_error_set(MB_ERR_MPI, __FILE__, __LINE__, __func__, "MPI_Comm_rank/size failed");
    return mb_cli_report(MB_EXIT_FAILED);
  }
  mb_mesh *tri = NULL;
  mb_mesh_slab slab = {0};
  mb_error e = bench_input(o, &tri);
  if (!e) {
    int64_t v0 = tri->nv * rank / size, v1 = tri->nv * (rank + 1) / size;
    int64_t f0 = tri->nf * rank / size, f1 = tri->nf * (rank + 1) / size;
    e = mb_mesh_slab_cut(tri, v0, v1 - v0, f0, f1 - f0, &slab);
  }
  int code = mb_agree(comm, e) ? mb_cli_report(MB_EXIT_FAILED) : MB_EXIT_OK;
  if (!code && rank == 0)
    printf("polylla %s partitioned over %d %s: %lld vertices, %lld triangles\n", tri->name,
           size, mb_plural(size, "rank", "ranks"), (long long)tri->nv, (long long)tri->nf);
  for (int cuda = 0; !code && cuda < 2; cuda++) {
    if (!(cuda ? o->cuda : o->cpu)) continue;
    if (cuda) {
      int local = 0;
      mb_backend be;
      char why[512] = "";
      e = mb_local_rank(comm, &local);
      if (!e)
        e = mb_backend_choose(o->cpu ? MB_BACKEND_AUTO : MB_BACKEND_CUDA, local, &be, why, sizeof why);
      int all = !e && be.kind == MB_BACKEND_CUDA;
      if (!e) e = mb_all_min_int(comm, &all);
      if (mb_agree(comm, e)) { code = mb_cli_report(MB_EXIT_FAILED); break; }
      if (!all) {
        if (rank == 0) printf("cuda: skipped (not every rank has a device: %s)\n", why);
        continue;
      }
    }
    if (bench_partitioned_backend(o, tri, &slab, cuda)) code = mb_cli_report(MB_EXIT_FAILED);
  }
  mb_mesh_free(slab.rows);
  mb_mesh_free(tri);
  return code;
}

int mb_polylla_bench(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      if (mb_cli_rank() == 0) fputs(polylla_bench_help, stdout);
      return MB_EXIT_OK;
    }
  bench_opts o;
  int code = bench_parse(argc, argv, &o);
  if (code) return code;
  if (o.partitioned) return bench_partitioned(&o);
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

