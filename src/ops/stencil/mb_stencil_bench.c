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
    "                                [--halo auto|mpi|nccl] [--backend auto|cpu]]\n\n"
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
    "--dtype picks the GPU precision (float32 unless given). --halo: as the job key.\n";

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
  fig->step_ms = 1e3 * (ex + comp) / (double)o->steps;
  fig->exchange_ms = fig->wait_ms = 1e3 * ex / (double)o->steps;
  fig->interior_ms = 1e3 * comp / (double)o->steps;
  return MB_SUCCESS;
}

/* The whole grid of a weak-scaling run: each axis of the per-rank block
 * times the blocks along it, the rank grid as mb_cart_create makes it. */
static void weak_grid(const int64_t block[3], int size, int64_t n[3]) {
  int d[3] = {1, 1, 1};
  (void)mb_cart_dims(size, block, d);
  for (int a = 0; a < 3; a++) n[a] = block[a] * d[a];
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
  if (o->weak) weak_grid(o->n, size, whole);
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
  if (mb_agree(comm, mb_cart_create(comm, whole, 1, 4, &c))) return mb_cli_report(MB_EXIT_FAILED);
  e = heat_run(c, o, h, &fn, &copyn);
  if (mb_agree(comm, e)) {
    mb_cart_free(c);
    return mb_cli_report(MB_EXIT_FAILED);
  }
  enum { NF = 11 };
  double mine[NF] = {(double)c->nloc[0], (double)c->nloc[1], (double)c->nloc[2], fn.interior_ms,
                     fn.shell_ms,        fn.exchange_ms,      fn.wait_ms,         fn.step_ms,
                     fn.halo_bytes,      copyn,               (double)fn.transport};
  double *all = rank == 0 ? malloc(sizeof mine * (size_t)size) : NULL;
  if (MPI_Gather(mine, NF, MPI_DOUBLE, all, NF, MPI_DOUBLE, 0, comm) != MPI_SUCCESS) {
    free(all);
    mb_cart_free(c);
    return mb_cli_report(MB_EXIT_FAILED);
  }
  if (rank == 0 && all) {
    const double w = o->f32 ? 4.0 : 8.0;
    double tn = 0;
    for (int r = 0; r < size; r++) tn = all[NF * r + 7] > tn ? all[NF * r + 7] : tn;
    printf("stencil heat, %lld x %lld x %lld %s, %lld steps (after %lld) on %d %s ranks "
           "(%d x %d x %d blocks), %s scaling\n",
           (long long)whole[0], (long long)whole[1], (long long)whole[2],
           o->f32 ? "float32" : "float64", (long long)o->steps, (long long)o->warmup, size,
           o->cpu ? "CPU" : "GPU", c->dims[0], c->dims[1], c->dims[2], o->weak ? "weak" : "strong");
    printf("  %4s %16s %9s %9s %9s %9s %9s %9s %8s %8s\n", "rank", "block", "interior", "shell",
           "exchange", "waited", "step ms", "halo MB", "GB/s", "of copy");
    for (int r = 0; r < size; r++) {
      const double *v = all + NF * r;
      const double gbs = 2.0 * w * v[0] * v[1] * v[2] / (v[7] * 1e-3) / 1e9;
      char frac[16] = "-"; /* of the copy bandwidth: GPU ranks only */
      if (v[9] > 0) snprintf(frac, sizeof frac, "%.2f", gbs / v[9]);
      printf("  %4d %4.0f x %4.0f x %4.0f %9.3f %9.3f %9.3f %9.3f %9.3f %9.2f %8.1f %8s\n", r,
             v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8] / 1e6, gbs, frac);
    }
    if (!o->cpu)
      printf("  halo over %s\n", all[10] ? mb_halo_transport_name((mb_halo_transport)all[10]) : "none");
    const double t1 = f1.step_ms;
    printf("  one rank (%lld x %lld x %lld) %.3f ms per step, %d ranks %.3f ms per step: ",
           (long long)one[0], (long long)one[1], (long long)one[2], t1, size, tn);
    if (o->weak) printf("weak-scaling efficiency %.2f\n", t1 / tn);
    else printf("speed-up %.2f, efficiency %.2f\n", t1 / tn, t1 / (size * tn));
  }
  free(all);
  mb_cart_free(c);
  return MB_EXIT_OK;
}

int mb_stencil_bench(int argc, char **argv) {
  int64_t n[3] = {512, 512, 512}, warmup = 3, repeats = 10, steps = 20;
  int f64 = 1, f32 = 1, partitioned = 0, dtype_given = 0, weak = 0, halo = MB_HALO_AUTO, cpu = 0;
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
                                                                   : !strcmp(v, "nccl") ? MB_HALO_NCCL : -1;
      bad = halo < 0;
    } else if (!strcmp(a, "--backend") && v) {
      cpu = !strcmp(v, "cpu");
      bad = !cpu && strcmp(v, "auto");
    } else if (!strcmp(a, "--distribute") && v) {
      partitioned = !strcmp(v, "partitioned");
      bad = !partitioned && strcmp(v, "per-mesh");
    } else if (!strcmp(a, "--steps") && v) bad = mb_cli_parse_int64(v, &steps) || steps < 1;
    else if (!strcmp(a, "--warmup") && v) bad = mb_cli_parse_int64(v, &warmup) || warmup < 0;
    else if (!strcmp(a, "--repeats") && v) bad = mb_cli_parse_int64(v, &repeats) || repeats < 1;
    else return mb_cli_usage_error("bench", "unexpected argument '%s'", a);
    if (bad) return mb_cli_usage_error("bench", "bad value '%s' for %s", v, a);
    i++;
  }
  if (partitioned) {
    part_opts o = {.n = {n[0], n[1], n[2]}, .steps = steps, .warmup = warmup,
                   .f32 = !dtype_given || f32, .weak = weak, .halo = halo, .cpu = cpu};
    return bench_partitioned(&o);
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
