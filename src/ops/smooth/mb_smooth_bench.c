/* meshbatch bench smooth: time one smoothing pass on one mesh (the smooth
 * room's benchmark, reached through the op registry). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_args.h"
#include "mb_smooth_op.h"
#include "mb_adjacency.h"
#include "mb_backend.h"
#include "mb_smooth_cuda.h"
#include "mb_inputs.h"
#include "mb_distributed.h"
#include "mb_log.h"
#include "mb_mpi.h"
#include "mb_smooth_partitioned.h"

static const char bench_help[] =
    "usage: meshbatch bench smooth INPUT [--mesh NAME] [--backend auto|cpu|cuda]\n"
    "                         [--weights uniform|cotangent|inverse_distance]\n"
    "                         [--boundary free|fixed|boundary_curve]\n"
    "                         [--precision float32|float64] [--warmup N] [--repeats N]\n"
    "                         [--distribute per-mesh|partitioned] [--halo auto|mpi|nccl|ipc]\n"
    "                         [--locality sfc|rcm|none]\n\n"
    "Times single smoothing passes (one Taubin pass = one lambda or mu pass) of\n"
    "the kernel alone on one mesh (a mesh file or a collection; --mesh picks\n"
    "one): warm-up passes, then timed repeats, median reported. Prints vertices,\n"
    "ms per pass, vertices per second, the bytes a pass must move under the byte\n"
    "model (every array the pass touches read or written once: row offsets,\n"
    "column indices, positions in and out), that rate in GB/s, and the copy\n"
    "bandwidth measured in the same run (device-to-device on the GPU, memcpy on\n"
    "the CPU, counted as bytes read + written), with their ratio.\n"
    "Defaults: backend auto, weights uniform, boundary free, precision float32\n"
    "(float64 on the CPU), warmup 5, repeats 20.\n\n"
    "--locality: the vertex order of the timed passes: sfc (Hilbert curve of the\n"
    "positions, parallel), rcm (reverse Cuthill-McKee, serial) or none (the\n"
    "mesh's order). Default on CUDA: MESHBATCH_LOCALITY, else sfc (what `meshbatch\n"
    "run` uses); on the CPU: none, unless given. Prints the host time of the\n"
    "order and of the renumbering, and locality figures of the order: mean\n"
    "|i - j| over edges, the fraction of neighbours in the same 32-vertex warp\n"
    "and beyond 65536 vertices, and the 128-byte lines of float32 positions a\n"
    "warp's neighbour reads touch (3 at best).\n\n"
    "--distribute partitioned (under mpirun -np N): the mesh is split over the\n"
    "N ranks with METIS and every pass exchanges the halo. Prints, per rank and\n"
    "in total, ms per pass split into compute and exchange, halo bytes per pass,\n"
    "and the parallel efficiency against the one-rank run of the same mesh,\n"
    "timed first in the same invocation on rank 0: T1 / (N * TN); then the same\n"
    "number of passes timed as the op runs them (on GPUs over NCCL or IPC the\n"
    "host does not wait for each pass, so this is the op's speed). On GPUs,\n"
    "--halo picks the halo transport: MPI through pinned host buffers, NCCL GPU\n"
    "to GPU (one GPU per rank), IPC GPU to GPU by the copy engines (the GPUs of\n"
    "one node, one per rank), or auto (NCCL where it is usable and faster in a\n"
    "trial at the start; never IPC; the default).\n";

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* memcpy bandwidth of the host, (read + write) bytes / s, median of 5. */
static double host_copy_gbs(void) {
  const size_t n = (size_t)256 << 20;
  char *a = malloc(n), *b = malloc(n);
  if (!a || !b) { free(a); free(b); return 0; }
  memset(a, 1, n);
  memset(b, 2, n);
  double t[5];
  for (int r = 0; r < 5; r++) {
    double t0 = mb_wtime();
    memcpy(b, a, n);
    t[r] = mb_wtime() - t0;
  }
  qsort(t, 5, sizeof *t, cmp_double);
  free(a);
  free(b);
  return 2.0 * (double)n / t[2] / 1e9;
}

static int bench_cpu(const mb_adjacency *adj, const double *xyz, mb_weights w, mb_boundary b,
                     int warmup, int repeats, mb_cuda_bench_result *res) {
  size_t n = 3 * (size_t)adj->nv;
  double *x0 = malloc(sizeof(double) * n), *x1 = malloc(sizeof(double) * n);
  double *t = malloc(sizeof(double) * (size_t)repeats);
  if (!x0 || !x1 || !t) { free(x0); free(x1); free(t); return mb_cli_usage_error("bench smooth", "out of memory"); }
  memcpy(x0, xyz, sizeof(double) * n);
  for (int r = 0; r < warmup + repeats; r++) {
    double t0 = mb_wtime();
    mb_smooth_pass_cpu(adj, w, b, r % 2 ? -0.53 : 0.5, r % 2 ? x1 : x0, r % 2 ? x0 : x1);
    if (r >= warmup) t[r - warmup] = mb_wtime() - t0;
  }
  qsort(t, (size_t)repeats, sizeof *t, cmp_double);
  res->ms_per_pass = 1e3 * t[repeats / 2];
  res->bytes_per_pass = 8.0 * (double)(adj->nv + 1) + 8.0 * (double)adj->nnz + 48.0 * (double)adj->nv;
  res->copy_gbs = host_copy_gbs();
  free(x0);
  free(x1);
  free(t);
  return MB_EXIT_OK;
}

typedef struct bench_opts bench_opts;

struct bench_opts {
  int locality_given;
  mb_locality locality;
  const char *input, *only;
  mb_backend_kind backend;
  mb_weights weights;
  mb_boundary boundary;
  mb_precision precision;
  int64_t warmup, repeats;
  int partitioned;
  mb_halo_transport halo;
};

/* The vertex order of the timed passes (o->locality), its host times and
 * locality figures in *ord; the backend's kernel timed on it. */
typedef struct bench_order {
  double seconds[2]; /* order, renumbering */
  mb_gather_figures fig;
} bench_order;

static int bench_ordered(const mb_adjacency *adj, const double *xyz, const bench_opts *o,
                         int cuda, mb_cuda_bench_result *r, bench_order *ord) {
  int64_t *perm;
  mb_adjacency *padj;
  double *pxyz;
  mb_smooth_stage st = {MB_SMOOTH_LAPLACIAN, 0.5, 0, 1, o->weights, o->boundary, NULL};
  if (mb_smooth_locality_order(adj, xyz, o->locality, mb_smooth_locality_needs(&st, 1), &perm,
                               &padj, &pxyz, ord->seconds) ||
      mb_adjacency_gather_figures(padj ? padj : adj, &ord->fig))
    return mb_cli_report(MB_EXIT_FAILED);
  int code = MB_EXIT_OK;
  if (cuda) {
    mb_error e = mb_cuda_bench_smooth(padj ? padj : adj, pxyz ? pxyz : xyz, o->weights,
                                      o->boundary, o->precision, (int)o->warmup, (int)o->repeats, r);
    if (e) code = mb_cli_report(MB_EXIT_FAILED);
  } else {
    code = bench_cpu(padj ? padj : adj, pxyz ? pxyz : xyz, o->weights, o->boundary,
                     (int)o->warmup, (int)o->repeats, r);
  }
  free(perm);
  free(pxyz);
  mb_adjacency_free(padj);
  return code;
}

/* The CUDA kernel on the backend's vertex order (the partitioned
 * benchmark's one-rank reference). */
static int bench_cuda(const mb_adjacency *adj, const double *xyz, const bench_opts *o,
                      mb_cuda_bench_result *r) {
  bench_order ord;
  return bench_ordered(adj, xyz, o, 1, r, &ord);
}

static int pick(const char *v, const char *const *names, int n, int *out) {
  for (int k = 0; k < n; k++)
    if (!strcmp(v, names[k])) { *out = k; return 0; }
  return -1;
}

static int parse(int argc, char **argv, bench_opts *o) {
  static const char *const backends[] = {"auto", "cpu", "cuda"};
  static const char *const weights[] = {"uniform", "cotangent", "inverse_distance"};
  static const char *const bounds[] = {"free", "fixed", "boundary_curve"};
  static const char *const precs[] = {"float64", "float32"};
  static const char *const halos[] = {"auto", "mpi", "nccl", "ipc"}; /* mb_halo_transport order */
  static const char *const orders[] = {"sfc", "rcm", "none"};
  *o = (bench_opts){.precision = MB_PRECISION_FLOAT32, .warmup = 5, .repeats = 20};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int bad = 0, k = 0;
    if (mb_cli_log_option(a)) continue;
    if (!strcmp(a, "--mesh") && v) o->only = v;
    else if (!strcmp(a, "--backend") && v) { bad = pick(v, backends, 3, &k); o->backend = (mb_backend_kind)k; }
    else if (!strcmp(a, "--weights") && v) { bad = pick(v, weights, 3, &k); o->weights = (mb_weights)k; }
    else if (!strcmp(a, "--boundary") && v) { bad = pick(v, bounds, 3, &k); o->boundary = (mb_boundary)k; }
    else if (!strcmp(a, "--precision") && v) { bad = pick(v, precs, 2, &k); o->precision = (mb_precision)k; }
    else if (!strcmp(a, "--halo") && v) { bad = pick(v, halos, 4, &k); o->halo = (mb_halo_transport)k; }
    else if (!strcmp(a, "--locality") && v) {
      bad = pick(v, orders, 3, &k);
      o->locality = (mb_locality)k;
      o->locality_given = 1;
    }
    else if (!strcmp(a, "--warmup") && v) bad = mb_cli_parse_int64(v, &o->warmup) || o->warmup < 0;
    else if (!strcmp(a, "--repeats") && v) bad = mb_cli_parse_int64(v, &o->repeats) || o->repeats < 1;
    else if (!strcmp(a, "--distribute") && v) {
      bad = strcmp(v, "per-mesh") && strcmp(v, "partitioned");
      o->partitioned = !strcmp(v, "partitioned");
    }
    else if (a[0] != '-' && !o->input) { o->input = a; continue; }
    else return mb_cli_usage_error("bench smooth", "unexpected argument '%s'", a);
    i++;
    if (bad) return mb_cli_usage_error("bench smooth", "bad value '%s' for %s", v, a);
  }
  if (!o->input) return mb_cli_usage_error("bench smooth", "missing INPUT mesh");
  if (mb_inputs_check_named(o->input, o->only)) /* a usage error, as `meshbatch info` says */
    return mb_cli_usage_error("bench smooth", "%s", mb_error_message());
  return MB_EXIT_OK;
}

static void print_result(const mb_mesh *m, const mb_adjacency *adj, const mb_backend *be,
                         const bench_opts *o, const mb_cuda_bench_result *r,
                         const bench_order *ord) {
  double s = r->ms_per_pass * 1e-3, gbs = r->bytes_per_pass / s / 1e9;
  int cuda = be->kind == MB_BACKEND_CUDA;
  printf("bench smooth: %s, %lld vertices, %lld directed edges\n", m->name, (long long)m->nv,
         (long long)adj->nnz);
  printf("backend      %s, %s, weights %s, boundary %s\n", be->description,
         cuda ? mb_precision_name(o->precision) : "float64", mb_weights_name(o->weights),
         mb_boundary_name(o->boundary));
  static const char *const what[] = {"Hilbert curve of the positions", "reverse Cuthill-McKee",
                                     "as in the mesh"};
  printf("vertex order %s: %s; order %.3f s, renumbering %.3f s on the host\n",
         mb_smooth_locality_name(o->locality), what[o->locality], ord->seconds[0],
         ord->seconds[1]);
  printf("locality     mean |i - j| %.0f, same 32-vertex warp %.3f, beyond 65536 %.4f, "
         "128-byte lines per warp %.1f (3 at best)\n", ord->fig.mean_distance,
         ord->fig.same_warp, ord->fig.far, ord->fig.lines_per_warp);
  printf("ms/pass      %.4f (median of %lld after %lld warm-up)\n", r->ms_per_pass,
         (long long)o->repeats, (long long)o->warmup);
  printf("vertices/s   %.3e\n", (double)m->nv / s);
  printf("byte model   row offsets %d(nv+1) + columns %d nnz + positions %d nv read + %d nv "
         "written = %.1f MB/pass\n", cuda ? 4 : 8, cuda ? 4 : 8,
         cuda && o->precision == MB_PRECISION_FLOAT32 ? 12 : 24,
         cuda && o->precision == MB_PRECISION_FLOAT32 ? 12 : 24, r->bytes_per_pass / 1e6);
  printf("achieved     %.1f GB/s\n", gbs);
  printf("copy         %.1f GB/s (%s, read + write)\n", r->copy_gbs,
         cuda ? "device-to-device cudaMemcpy" : "host memcpy");
  printf("fraction     %.2f of copy bandwidth\n", r->copy_gbs > 0 ? gbs / r->copy_gbs : 0);
}

/* Time `repeats` partitioned passes after `warmup` ones; t receives this
 * rank's timing with every pass waited for (the compute / exchange
 * breakdown), *pipe_ms the slowest rank's ms per pass of `repeats` more as
 * the op runs them (on the GPU over NCCL: not waited for one by one). */
static mb_error time_partitioned(const mb_distributed_mesh *dm, const mb_backend *be,
                                 const bench_opts *o, mb_pass_timing *t, double *pipe_ms) {
  mb_smooth_stage st = {MB_SMOOTH_LAPLACIAN, 0.5, 0, (int)o->warmup, o->weights, o->boundary, NULL};
  mb_pass_timing warm = {.synchronize = 1}, pipe = {0};
  *t = (mb_pass_timing){.synchronize = 1};
  for (int k = 0; k < 3; k++) {
    mb_pass_timing *tk = k == 0 ? &warm : k == 1 ? t : &pipe;
    st.iterations = (int)(k ? o->repeats : o->warmup);
    mb_error e = be->kind == MB_BACKEND_CUDA
                     ? mb_smooth_partitioned_cuda(dm->domain, dm->halo, &st, 1, o->precision, o->halo,
                                                  dm->x, tk)
                     : mb_smooth_partitioned_cpu(dm->domain, dm->halo, &st, 1, dm->x, tk);
    MB_CALL(mb_agree(dm->comm, e));
  }
  double ms = pipe.passes > 0 ? 1e3 * pipe.wall_s / (double)pipe.passes : 0;
  MB_CALL_MPI(MPI_Allreduce(&ms, pipe_ms, 1, MPI_DOUBLE, MPI_MAX, dm->comm));
  return MB_SUCCESS;
}

/* Per-rank and total figures of a partitioned benchmark (rank 0 prints). */
static mb_error print_partitioned(const mb_distributed_mesh *dm, const mb_mesh *m,
                                  const mb_backend *be, const bench_opts *o, double t1_ms,
                                  const mb_pass_timing *t, double pipe_ms) {
  mb_rank_figures *all = dm->rank == 0 ? malloc(sizeof *all * (size_t)dm->size) : NULL;
  MB_CHECK(dm->rank != 0 || all, MB_ERR_MEMORY, "out of memory");
  mb_error e = mb_partitioned_gather_figures(dm->domain, dm->halo, t, all);
  if (e || dm->rank != 0) {
    free(all);
    return e;
  }
  double tn = 0, halo = 0;
  printf("bench smooth --distribute partitioned: %s, %lld vertices, %d %s, %s, %s, weights %s, "
         "halo over %s\n", m->name, (long long)m->nv, dm->size,
         mb_plural(dm->size, "rank", "ranks"), be->description,
         be->kind == MB_BACKEND_CUDA ? mb_precision_name(o->precision) : "float64",
         mb_weights_name(o->weights),
         be->kind == MB_BACKEND_CUDA ? mb_halo_transport_name(t->transport) : "mpi");
  printf("%5s %10s %8s %5s %14s %12s %13s %11s\n", "rank", "owned", "ghosts", "nbrs",
         "halo B/pass", "compute ms", "exchange ms", "total ms");
  for (int r = 0; r < dm->size; r++) {
    const mb_rank_figures *v = &all[r];
    double total = v->compute_ms + v->exchange_ms;
    printf("%5d %10.0f %8.0f %5.0f %14.0f %12.4f %13.4f %11.4f\n", r, v->owned, v->ghosts,
           v->neighbors, v->halo_bytes, v->compute_ms, v->exchange_ms, total);
    if (total > tn) tn = total;
    halo += v->halo_bytes;
  }
  printf("one rank (per-mesh kernel, same mesh): %.4f ms/pass\n", t1_ms);
  printf("partitioned: %.4f ms/pass (slowest rank), halo %.0f B/pass in all, mean of %lld passes\n",
         tn, halo, (long long)o->repeats);
  printf("speed-up %.2f, parallel efficiency %.2f (T1 / (N * TN))\n", t1_ms / tn,
         t1_ms / (dm->size * tn));
  if (pipe_ms > 0)
    printf("as the op runs them (%s): %.4f ms/pass (slowest rank), speed-up %.2f, parallel "
           "efficiency %.2f\n",
           be->kind == MB_BACKEND_CUDA ? "passes not waited for one by one"
                                       : "every pass waited for",
           pipe_ms, t1_ms / pipe_ms, t1_ms / (dm->size * pipe_ms));
  free(all);
  return MB_SUCCESS;
}

/* The partitioned benchmark: every rank takes part. */
static int bench_partitioned(const bench_opts *o) {
  char *patterns[] = {(char *)o->input};
  mb_inputs *in = NULL;
  mb_mesh *m = NULL;
  mb_adjacency *adj = NULL;
  mb_distributed_mesh *dm = NULL;
  mb_backend be;
  char why[512];
  int code = MB_EXIT_OK, local_rank = 0;
  mb_error e = mb_local_rank(MPI_COMM_WORLD, &local_rank);
  if (!e) e = mb_inputs_open(MPI_COMM_WORLD, 1, patterns, &in);
  int64_t s = 0;
  if (!e) e = mb_inputs_find(in, o->input, o->only, &s);
  if (!e) e = mb_inputs_read(in, s, &m);
  if (!e) e = mb_adjacency_build(m, &adj);
  if (!e) e = mb_backend_choose(o->backend, local_rank, &be, why, sizeof why);
  mb_smooth_stage check = {MB_SMOOTH_LAPLACIAN, 0.5, 0, 1, o->weights, o->boundary, NULL};
  if (!e) e = mb_smooth_check(&check, adj);
  if (mb_agree(MPI_COMM_WORLD, e)) {
    code = mb_cli_report(MB_EXIT_FAILED);
  } else {
    mb_cuda_bench_result r1 = {0};
    if (mb_cli_rank() == 0)
      code = be.kind == MB_BACKEND_CUDA ? bench_cuda(adj, m->xyz, o, &r1)
                                        : bench_cpu(adj, m->xyz, o->weights, o->boundary,
                                                    (int)o->warmup, (int)o->repeats, &r1);
    if (mb_all_max_int(MPI_COMM_WORLD, &code)) code = mb_cli_report(MB_EXIT_FAILED);
    mb_pass_timing t;
    double pipe_ms = 0;
    if (!code && (mb_distributed_create(MPI_COMM_WORLD, adj, m->xyz, NULL, 1, &dm) ||
                  time_partitioned(dm, &be, o, &t, &pipe_ms)))
      code = mb_cli_report(MB_EXIT_FAILED);
    if (!code && print_partitioned(dm, m, &be, o, r1.ms_per_pass, &t, pipe_ms))
      code = mb_cli_report(MB_EXIT_FAILED);
  }
  mb_distributed_free(dm);
  mb_adjacency_free(adj);
  mb_mesh_free(m);
  mb_inputs_close(in);
  return code;
}

int mb_smooth_bench(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      if (mb_cli_rank() == 0) fputs(bench_help, stdout);
      return MB_EXIT_OK;
    }
  bench_opts o;
  int code = parse(argc, argv, &o);
  if (code) return code;
  if (!o.locality_given && mb_smooth_locality_default(&o.locality) && (mb_error_clear(), 1))
    return mb_cli_usage_error("bench smooth", "bad MESHBATCH_LOCALITY '%s': use sfc, rcm or none",
                              getenv("MESHBATCH_LOCALITY"));
  if (o.partitioned) return bench_partitioned(&o);
  if (mb_cli_rank() != 0) return MB_EXIT_OK; /* one-rank benchmark */
  char *patterns[] = {(char *)o.input};
  mb_inputs *in = NULL;
  mb_mesh *m = NULL;
  mb_adjacency *adj = NULL;
  mb_backend be;
  char why[512];
  if (mb_inputs_open(MPI_COMM_SELF, 1, patterns, &in)) return mb_cli_report(MB_EXIT_FAILED);
  int64_t s = 0;
  mb_cuda_bench_result r = {0};
  if (mb_inputs_find(in, o.input, o.only, &s) || mb_inputs_read(in, s, &m) || mb_adjacency_build(m, &adj) ||
      mb_backend_choose(o.backend, 0, &be, why, sizeof why)) {
    code = mb_cli_report(MB_EXIT_FAILED);
  } else {
    mb_smooth_stage st = {MB_SMOOTH_LAPLACIAN, 0.5, 0, 1, o.weights, o.boundary, NULL};
    bench_order ord;
    if (be.kind != MB_BACKEND_CUDA && !o.locality_given) o.locality = MB_LOCALITY_NONE;
    if (mb_smooth_check(&st, adj)) code = mb_cli_report(MB_EXIT_FAILED);
    else code = bench_ordered(adj, m->xyz, &o, be.kind == MB_BACKEND_CUDA, &r, &ord);
    if (!code) print_result(m, adj, &be, &o, &r, &ord);
  }
  mb_adjacency_free(adj);
  mb_mesh_free(m);
  mb_inputs_close(in);
  return code;
}
