/* meshbatch: `meshbatch bench stencil` (the stencil room's benchmark). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_args.h"
#include "mb_backend.h"
#include "mb_cart.h"
#include "mb_cuda.h"
#include "mb_halo.h"
#include "mb_log.h"
#include "mb_mpi.h"
#include "mb_op.h"
#include "mb_stencil.h"
#include "mb_stencil_cuda.h"

static const char stencil_bench_help[] =
    "usage: meshbatch bench stencil [--shape NZ,NY,NX] [--dtype float32|float64|both]\n"
    "                               [--warmup N] [--repeats N]\n"
    "                               [--distribute partitioned [--steps N] [--scaling strong|weak]\n"
    "                                [--halo auto|mpi|nccl|ipc] [--backend auto|cpu]\n"
    "                                [--step auto|fused|faces-first|both] [--blocks BZ,BY,BX]]\n\n"
    "Times the stencil kernels on the GPU on a periodic grid (default 512,512,512,\n"
    "float32 and float64, warmup 3, repeats 10): the derivatives along z, y and x,\n"
    "the 8th-order Laplacian, the fused heat and wave steps (2.5D blocking, 16-byte\n"
    "vectors along x), the scalar kernels used where a row is not a whole number of\n"
    "vectors, and the shared-memory pencil kernels of NVIDIA's \"Finite Difference\n"
    "Methods in CUDA C/C++\" for the three derivatives, in the same run. Per kernel:\n"
    "ms per call (median), GB/s under the byte model (each input point read once and\n"
    "each output point written once: 2 x points x the value size per call, 3 x for\n"
    "the wave step, which also reads the previous step), the device-to-device copy\n"
    "bandwidth measured in the same run and the fraction of it.\n\n"
    "With --distribute partitioned (under mpirun -np N) it times heat steps of one\n"
    "grid split into Cartesian blocks over the ranks (--steps, default 20, after\n"
    "--warmup steps), on one GPU per rank (or on the CPU ranks in float64 with\n"
    "--backend cpu or where there is no GPU): each step a 4-plane halo exchange and\n"
    "the fused Laplacian update, the interior computed while the halo travels.\n"
    "Per rank: the block, ms per step of the interior, of the shell after the halo,\n"
    "of the exchange (pack, transport, unpack) and of the wait for it, the halo bytes\n"
    "and, on GPUs, GB/s per step as a fraction of the copy bandwidth. Then the\n"
    "speed-up and parallel efficiency against one rank timed in the same invocation\n"
    "(rank 0 alone, the others idle). --scaling strong (default): --shape is the\n"
    "whole grid, and one rank runs it all; weak: --shape is each rank's block, the\n"
    "grid is that block times the rank grid, and one rank runs one block.\n"
    "--dtype picks the GPU precision (float32 unless given). --halo: as the job key.\n"
    "On GPUs a second table gives each rank's timeline of a step from CUDA events\n"
    "(ms per step): on the compute stream the ghost faces filled before the\n"
    "interior, the interior, the wait for the halo, the shell, the stream idle\n"
    "between steps and the wall time outside the stream's timeline, which sum to\n"
    "the step; on the halo stream (urgent priority, after the compute stream's\n"
    "previous step) the start after the step's, the pack, the transport (NCCL\n"
    "group, or MPI through the host) and the unpack; the host's time to enqueue a\n"
    "step. The timeline comes from the first half of the timed steps; the second\n"
    "half runs without events (each costs the compute stream a few microseconds)\n"
    "and gives the step times of the speed-up or efficiency line (the line before\n"
    "it gives them with the events). --step auto (default): meshbatch's rule, the\n"
    "fused step on the split grid and on one rank; fused: the periodic faces of\n"
    "uncut axes filled by the steps' stores and the shell in one launch;\n"
    "faces-first: the earlier step\n"
    "(face kernels before each interior, a kernel per shell slab); both: the two\n"
    "in turn, each against its own one-rank baseline. --blocks: the blocks per axis\n"
    "(their product the rank count; default meshbatch's cut: slabs along z where z\n"
    "is a longest axis and each slab keeps 64 planes or more, 4,1,1 on 4 ranks for\n"
    "a cube of 256 or more, else MPI_Dims_create's cut, the most blocks along the\n"
    "longest axis: 2,2,1 for a smaller cube).\n";

/* Heat steps on this rank's block of a periodic grid: per step the halo
 * exchange and the fused step, timed apart. */
static mb_error heat_block(mb_cart *c, const double h[3], int64_t steps, double *ex_s,
                           double *comp_s) {
  mb_stencil_grid g = {.n = {c->nloc[0], c->nloc[1], c->nloc[2]}, .h = {h[0], h[1], h[2]},
                       .ghost = 4};
  const int64_t L[3] = {c->nloc[0] + 8, c->nloc[1] + 8, c->nloc[2] + 8}, nl = L[0] * L[1] * L[2];
  double *u = calloc((size_t)nl, sizeof *u), *w = calloc((size_t)nl, sizeof *w);
  MB_CHECK(u && w, MB_ERR_MEMORY, "out of memory for a block of %lld points", (long long)nl);
  for (int64_t p = 0; p < nl; p++) u[p] = sin(1e-3 * (double)p);
  const double a = 0.1 * mb_stencil_heat_dt_limit(&g, 1.0);
  *ex_s = *comp_s = 0;
  mb_error e = MB_SUCCESS;
  for (int64_t s = 0; s < steps && !e; s++) {
    double t0 = MPI_Wtime();
    e = mb_cart_exchange_begin(c, MB_CART_FLOAT64, u);
    if (!e) e = mb_cart_exchange_end(c);
    double t1 = MPI_Wtime();
    if (!e) e = mb_stencil_heat_step_f64(&g, a, u, w);
    double *t = u;
    u = w;
    w = t;
    *ex_s += t1 - t0;
    *comp_s += MPI_Wtime() - t1;
  }
  free(u);
  free(w);
  return e;
}

/* What --distribute partitioned measures. */
typedef struct part_opts {
  int64_t n[3], steps, warmup;
  int f32, weak, halo, cpu;
  int step;    /* the GPU step: MB_STENCIL_STEP_* (mb_stencil_block_figures) */
  int dims[3]; /* blocks per axis, or 0 0 0: mb_cart_dims' cut */
} part_opts;

/* Heat steps of this rank's block on its GPU (mb_stencil_cuda_block). */
static mb_error heat_block_gpu(mb_cart *c, const part_opts *o, const double h[3],
                               mb_stencil_block_figures *fig, double *copy_gbs) {
  mb_stencil_grid g = {.n = {c->nloc[0], c->nloc[1], c->nloc[2]}, .h = {h[0], h[1], h[2]}};
  const int64_t np = c->nloc[0] * c->nloc[1] * c->nloc[2];
  const size_t w = o->f32 ? sizeof(float) : sizeof(double);
  void *u = malloc((size_t)np * w);
  MB_CHECK(u, MB_ERR_MEMORY, "out of memory for a block of %lld points", (long long)np);
#pragma omp parallel for
  for (int64_t p = 0; p < np; p++) {
    const double v = (double)((uint64_t)p * 2654435761u % 1000) / 1000.0;
    if (o->f32) ((float *)u)[p] = (float)v;
    else ((double *)u)[p] = v;
  }
  const double coef = 0.1 * mb_stencil_heat_dt_limit(&g, 1.0);
  fig->warmup = (int)o->warmup;
  fig->step = o->step;
  mb_error e = mb_stencil_cuda_block(&g, o->f32, c, o->halo, 4, coef, o->warmup + o->steps, u,
                                     NULL, fig, NULL);
  if (!e) e = mb_cuda_copy_bandwidth((size_t)np * w, copy_gbs);
  free(u);
  return e;
}

/* One run over the plan: figures of this rank, wall time per step of the slowest. */
static mb_error heat_run(mb_cart *c, const part_opts *o, const double h[3],
                         mb_stencil_block_figures *fig, double *copy_gbs) {
  memset(fig, 0, sizeof *fig);
  *copy_gbs = 0;
  if (!o->cpu) return heat_block_gpu(c, o, h, fig, copy_gbs);
  double ex, comp;
  MB_CALL(heat_block(c, h, o->warmup, &ex, &comp));
  MB_CALL(heat_block(c, h, o->steps, &ex, &comp));
  fig->step_ms = fig->plain_step_ms = 1e3 * (ex + comp) / (double)o->steps;
  fig->exchange_ms = fig->wait_ms = 1e3 * ex / (double)o->steps;
  fig->interior_ms = 1e3 * comp / (double)o->steps;
  return MB_SUCCESS;
}

/* The whole grid of a weak-scaling run and its cut d: each axis of the
 * per-rank block times the blocks along it. The cut is dims where given,
 * else mb_cart_dims' rule with each block a slab: slabs along z where z is
 * a longest axis of the block and the block keeps MB_CART_SLAB_MIN_PLANES
 * planes, else MPI_Dims_create's cut of the block's shape. */
static void weak_grid(const int64_t block[3], int size, const int dims[3], int64_t n[3],
                      int d[3]) {
  const int slabs = block[0] >= block[1] && block[0] >= block[2] &&
                    block[0] >= MB_CART_SLAB_MIN_PLANES;
  if (dims[0] || slabs)
    for (int a = 0; a < 3; a++) d[a] = dims[0] ? dims[a] : a == 0 ? size : 1;
  else (void)mb_cart_dims(size, block, d);
  for (int a = 0; a < 3; a++) n[a] = block[a] * d[a];
}

/* The figures each rank sends to rank 0: the block, the step's timeline
 * (mb_stencil_block_figures), the halo and the copy bandwidth. */
enum {
  PF_NZ, PF_NY, PF_NX, PF_INTERIOR, PF_SHELL, PF_EXCHANGE, PF_WAIT, PF_STEP, PF_HALO_BYTES,
  PF_COPY, PF_TRANSPORT, PF_FILL, PF_BETWEEN, PF_REST, PF_LAG, PF_PACK, PF_SEND, PF_UNPACK,
  PF_HOST, PF_FUSED, PF_PLAIN, PF_COUNT
};

static void part_figures(const mb_cart *c, const mb_stencil_block_figures *f, double copy_gbs,
                         double v[PF_COUNT]) {
  v[PF_NZ] = (double)c->nloc[0];
  v[PF_NY] = (double)c->nloc[1];
  v[PF_NX] = (double)c->nloc[2];
  v[PF_INTERIOR] = f->interior_ms;
  v[PF_SHELL] = f->shell_ms;
  v[PF_EXCHANGE] = f->exchange_ms;
  v[PF_WAIT] = f->wait_ms;
  v[PF_STEP] = f->step_ms;
  v[PF_HALO_BYTES] = f->halo_bytes;
  v[PF_COPY] = copy_gbs;
  v[PF_TRANSPORT] = (double)f->transport;
  v[PF_FILL] = f->fill_ms;
  v[PF_BETWEEN] = f->between_ms;
  v[PF_REST] = f->rest_ms;
  v[PF_LAG] = f->lag_ms;
  v[PF_PACK] = f->pack_ms;
  v[PF_SEND] = f->transport_ms;
  v[PF_UNPACK] = f->unpack_ms;
  v[PF_HOST] = f->host_ms;
  v[PF_FUSED] = f->fused;
  v[PF_PLAIN] = f->plain_step_ms;
}

/* Rank 0's report of one scaling run: per rank the block and figures
 * (all: PF_COUNT values per rank), then the timeline on GPUs, then the
 * comparison with one rank (f1: its figures), from the steps without the
 * timeline's events (plain_step_ms). */
static void part_report(const part_opts *o, const mb_cart *c, const int64_t whole[3],
                        const int64_t one[3], const double *all,
                        const mb_stencil_block_figures *f1) {
  const double t1 = f1->plain_step_ms, t1_ev = f1->step_ms;
  const int size = c->size;
  const double w = o->f32 ? 4.0 : 8.0;
  double tn = 0, tn_ev = 0; /* the slowest rank's, without and with the events */
  for (int r = 0; r < size; r++) {
    if (all[PF_COUNT * r + PF_PLAIN] > tn) tn = all[PF_COUNT * r + PF_PLAIN];
    if (all[PF_COUNT * r + PF_STEP] > tn_ev) tn_ev = all[PF_COUNT * r + PF_STEP];
  }
  printf("stencil heat, %lld x %lld x %lld %s, %lld steps (after %lld) on %d %s %s "
         "(%d x %d x %d blocks), %s scaling%s\n",
         (long long)whole[0], (long long)whole[1], (long long)whole[2],
         o->f32 ? "float32" : "float64", (long long)o->steps, (long long)o->warmup, size,
         o->cpu ? "CPU" : "GPU", mb_plural(size, "rank", "ranks"), c->dims[0], c->dims[1],
         c->dims[2], o->weak ? "weak" : "strong",
         o->cpu ? "" : all[PF_FUSED] ? ", fused step" : ", faces-first step");
  printf("  %4s %16s %9s %9s %9s %9s %9s %9s %8s %8s\n", "rank", "block", "interior", "shell",
         "exchange", "waited", "step ms", "halo MB", "GB/s", "of copy");
  for (int r = 0; r < size; r++) {
    const double *v = all + PF_COUNT * r;
    const double gbs = 2.0 * w * v[PF_NZ] * v[PF_NY] * v[PF_NX] / (v[PF_STEP] * 1e-3) / 1e9;
    char frac[16] = "-"; /* of the copy bandwidth: GPU ranks only */
    if (v[PF_COPY] > 0) snprintf(frac, sizeof frac, "%.2f", gbs / v[PF_COPY]);
    printf("  %4d %4.0f x %4.0f x %4.0f %9.3f %9.3f %9.3f %9.3f %9.3f %9.2f %8.1f %8s\n", r,
           v[PF_NZ], v[PF_NY], v[PF_NX], v[PF_INTERIOR], v[PF_SHELL], v[PF_EXCHANGE], v[PF_WAIT],
           v[PF_STEP], v[PF_HALO_BYTES] / 1e6, gbs, frac);
  }
  if (!o->cpu) {
    printf("  timeline, ms per step: compute stream (fill + interior + waited + shell + between"
           " + rest = step) | halo stream | host\n");
    printf("  %-7s %7s %8s %7s %7s %7s %7s %8s | %7s %7s %8s %7s %8s | %8s\n", "rank", "fill",
           "interior", "waited", "shell", "between", "rest", "step", "start", "pack", "transfer",
           "unpack", "exchange", "enqueue");
    for (int r = 0; r < size; r++) {
      const double *v = all + PF_COUNT * r;
      printf("  rank %-2d %7.3f %8.3f %7.3f %7.3f %7.3f %7.3f %8.3f | %7.3f %7.3f %8.3f %7.3f "
             "%8.3f | %8.3f\n",
             r, v[PF_FILL], v[PF_INTERIOR], v[PF_WAIT], v[PF_SHELL], v[PF_BETWEEN], v[PF_REST],
             v[PF_STEP], v[PF_LAG], v[PF_PACK], v[PF_SEND], v[PF_UNPACK], v[PF_EXCHANGE],
             v[PF_HOST]);
    }
    const mb_halo_transport t = (mb_halo_transport)all[PF_TRANSPORT];
    printf("  halo over %s\n", t ? mb_halo_transport_name(t) : "none");
  }
  if (!o->cpu)
    printf("  with the timeline's events: one rank %.3f ms per step, %d %s %.3f: %s %.2f; "
           "without them (below):\n", t1_ev, size, mb_plural(size, "rank", "ranks"), tn_ev,
           o->weak ? "weak-scaling efficiency" : "speed-up", t1_ev / tn_ev);
  printf("  one rank (%lld x %lld x %lld%s) %.3f ms per step, %d %s %.3f ms per step: ",
         (long long)one[0], (long long)one[1], (long long)one[2],
         o->cpu ? "" : f1->fused ? ", fused step" : ", faces-first step", t1, size,
         mb_plural(size, "rank", "ranks"), tn);
  if (o->weak) printf("weak-scaling efficiency %.2f\n", t1 / tn);
  else printf("speed-up %.2f, efficiency %.2f\n", t1 / tn, t1 / (size * tn));
}

/* --distribute partitioned: one rank alone, then all ranks. */
static int bench_partitioned(part_opts *o) {
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank, size, local = 0;
  if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS || MPI_Comm_size(comm, &size) != MPI_SUCCESS) {
    mb_error_set(MB_ERR_MPI, __FILE__, __LINE__, __func__, "MPI_Comm_rank/size failed");
    return mb_cli_report(MB_EXIT_FAILED);
  }
  mb_backend be;
  char why[512] = "";
  mb_error e = mb_local_rank(comm, &local);
  if (!e)
    e = mb_backend_choose(o->cpu ? MB_BACKEND_CPU : MB_BACKEND_AUTO, local, &be, why, sizeof why);
  int all_gpu = !e && be.kind == MB_BACKEND_CUDA;
  if (!e) e = mb_all_min_int(comm, &all_gpu);
  if (mb_agree(comm, e)) return mb_cli_report(MB_EXIT_FAILED);
  if (!all_gpu) {
    if (!o->cpu && rank == 0) printf("stencil: not every rank has a GPU (%s): timing the CPU ranks\n", why);
    o->cpu = 1;
    o->f32 = 0;
  }
  int64_t whole[3], one[3];
  for (int a = 0; a < 3; a++) whole[a] = one[a] = o->n[a];
  int dims[3] = {o->dims[0], o->dims[1], o->dims[2]};
  if (o->weak) weak_grid(o->n, size, o->dims, whole, dims);
  const double h[3] = {1.0 / whole[0], 1.0 / whole[1], 1.0 / whole[2]};
  mb_stencil_block_figures f1, fn;
  double copy1 = 0, copyn = 0;
  if (rank == 0) { /* the baseline: one rank alone */
    mb_cart *c1 = NULL;
    e = mb_cart_create(MPI_COMM_SELF, one, 1, 4, &c1);
    if (!e) e = heat_run(c1, o, h, &f1, &copy1);
    mb_cart_free(c1);
  }
  if (mb_idle_barrier(comm) || mb_agree(comm, e)) return mb_cli_report(MB_EXIT_FAILED);
  mb_cart *c = NULL;
  if (mb_agree(comm, mb_cart_create_dims(comm, whole, dims[0] ? dims : NULL, 1, 4, &c)))
    return mb_cli_report(MB_EXIT_FAILED);
  e = heat_run(c, o, h, &fn, &copyn);
  if (mb_agree(comm, e)) {
    mb_cart_free(c);
    return mb_cli_report(MB_EXIT_FAILED);
  }
  double mine[PF_COUNT];
  part_figures(c, &fn, copyn, mine);
  double *all = rank == 0 ? malloc(sizeof mine * (size_t)size) : NULL;
  if (MPI_Gather(mine, PF_COUNT, MPI_DOUBLE, all, PF_COUNT, MPI_DOUBLE, 0, comm) != MPI_SUCCESS) {
    free(all);
    mb_cart_free(c);
    return mb_cli_report(MB_EXIT_FAILED);
  }
  if (rank == 0 && all) part_report(o, c, whole, one, all, &f1);
  free(all);
  mb_cart_free(c);
  return MB_EXIT_OK;
}

int mb_stencil_bench(int argc, char **argv) {
  int64_t n[3] = {512, 512, 512}, warmup = 3, repeats = 10, steps = 20;
  int f64 = 1, f32 = 1, partitioned = 0, dtype_given = 0, weak = 0, halo = MB_HALO_AUTO, cpu = 0;
  int step_kind = MB_STENCIL_STEP_AUTO; /* or 3: both */
  int64_t blocks[3] = {0, 0, 0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      if (mb_cli_rank() == 0) fputs(stencil_bench_help, stdout);
      return MB_EXIT_OK;
    }
    if (mb_cli_log_option(a)) continue;
    int bad = 0;
    if (!strcmp(a, "--shape") && v) bad = mb_cli_parse_shape(v, n);
    else if (!strcmp(a, "--dtype") && v) {
      f32 = !strcmp(v, "float32") || !strcmp(v, "both");
      f64 = !strcmp(v, "float64") || !strcmp(v, "both");
      bad = !f32 && !f64;
      dtype_given = 1;
    } else if (!strcmp(a, "--scaling") && v) {
      weak = !strcmp(v, "weak");
      bad = !weak && strcmp(v, "strong");
    } else if (!strcmp(a, "--halo") && v) {
      halo = !strcmp(v, "auto") ? MB_HALO_AUTO : !strcmp(v, "mpi") ? MB_HALO_MPI
                 : !strcmp(v, "nccl") ? MB_HALO_NCCL
                 : !strcmp(v, "ipc")  ? MB_HALO_IPC
                                      : -1;
      bad = halo < 0;
    } else if (!strcmp(a, "--step") && v) {
      step_kind = !strcmp(v, "auto")          ? MB_STENCIL_STEP_AUTO
                  : !strcmp(v, "fused")       ? MB_STENCIL_STEP_FUSED
                  : !strcmp(v, "faces-first") ? MB_STENCIL_STEP_FACES_FIRST
                  : !strcmp(v, "both")        ? 3
                                              : -1;
      bad = step_kind < 0;
    } else if (!strcmp(a, "--blocks") && v) {
      bad = mb_cli_parse_shape(v, blocks) || blocks[0] > 65536 || blocks[1] > 65536 ||
            blocks[2] > 65536;
    } else if (!strcmp(a, "--backend") && v) {
      cpu = !strcmp(v, "cpu");
      bad = !cpu && strcmp(v, "auto");
    } else if (!strcmp(a, "--distribute") && v) {
      partitioned = !strcmp(v, "partitioned");
      bad = !partitioned && strcmp(v, "per-mesh");
    } else if (!strcmp(a, "--steps") && v) bad = mb_cli_parse_int64(v, &steps) || steps < 1;
    else if (!strcmp(a, "--warmup") && v) bad = mb_cli_parse_int64(v, &warmup) || warmup < 0;
    else if (!strcmp(a, "--repeats") && v) bad = mb_cli_parse_int64(v, &repeats) || repeats < 1;
    else return mb_cli_usage_error("bench stencil", "unexpected argument '%s'", a);
    if (bad) return mb_cli_usage_error("bench stencil", "bad value '%s' for %s", v, a);
    i++;
  }
  if (partitioned) {
    int rc = MB_EXIT_OK;
    /* both: the faces-first step, then the fused one */
    const int both = step_kind == 3, nk = both ? 2 : 1;
    const int kinds[2] = {both ? MB_STENCIL_STEP_FACES_FIRST : step_kind, MB_STENCIL_STEP_FUSED};
    for (int k = 0; k < nk && rc == MB_EXIT_OK; k++) {
      part_opts o = {.n = {n[0], n[1], n[2]}, .steps = steps, .warmup = warmup,
                     .f32 = !dtype_given || f32, .weak = weak, .halo = halo, .cpu = cpu,
                     .step = kinds[k],
                     .dims = {(int)blocks[0], (int)blocks[1], (int)blocks[2]}};
      rc = bench_partitioned(&o);
      if (o.cpu) break; /* the CPU ranks have one step */
    }
    return rc;
  }
  if (mb_cli_rank() != 0) return MB_EXIT_OK; /* one-rank benchmark */
  mb_backend be;
  char why[512];
  if (mb_backend_choose(MB_BACKEND_AUTO, 0, &be, why, sizeof why)) return mb_cli_report(MB_EXIT_FAILED);
  if (be.kind != MB_BACKEND_CUDA) {
    printf("stencil: no CUDA device (%s); the benchmark times the GPU kernels\n", why);
    return MB_EXIT_OK;
  }
  for (int t = 0; t < 2; t++) {
    if (!(t ? f64 : f32)) continue;
    mb_stencil_bench_result r;
    if (mb_stencil_cuda_bench(n, !t, (int)warmup, (int)repeats, &r))
      return mb_cli_report(MB_EXIT_FAILED);
    printf("stencil %lld x %lld x %lld %s on %s, median of %lld; copy bandwidth %.1f GB/s\n",
           (long long)n[0], (long long)n[1], (long long)n[2], t ? "float64" : "float32", r.device,
           (long long)repeats, r.copy_gbs);
    printf("  %-26s %10s %10s %10s\n", "kernel", "ms", "GB/s", "of copy");
    for (int k = 0; k < r.nkernels; k++) {
      double gbs = r.bytes[k] / (r.ms[k] * 1e-3) / 1e9;
      printf("  %-26s %10.3f %10.1f %10.2f\n", r.name[k], r.ms[k], gbs, gbs / r.copy_gbs);
    }
  }
  return MB_EXIT_OK;
}
