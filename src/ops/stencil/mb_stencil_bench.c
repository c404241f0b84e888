/* meshbatch: `meshbatch bench stencil` (the stencil room's benchmark). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_args.h"
#include "mb_backend.h"
#include "mb_cart.h"
#include "mb_log.h"
#include "mb_mpi.h"
#include "mb_op.h"
#include "mb_stencil.h"
#include "stencil/mb_stencil_cuda.h"

static const char stencil_bench_help[] =
    "usage: meshbatch bench stencil [--shape NZ,NY,NX] [--dtype float32|float64|both]\n"
    "                               [--warmup N] [--repeats N]\n"
    "                               [--distribute partitioned [--steps N]]\n\n"
    "Times the stencil kernels on the GPU on a periodic grid (default 512,512,512,\n"
    "float32 and float64, warmup 3, repeats 10): the derivative along z, y and x\n"
    "and the 8th-order Laplacian (2.5D blocking), the fused heat step, and the\n"
    "shared-memory pencil kernels of NVIDIA's \"Finite Difference Methods in CUDA\n"
    "C/C++\" for the three derivatives, in the same run. Per kernel: ms per call\n"
    "(median), GB/s under the byte model (each point read once and written once:\n"
    "2 x points x the value size per call), the device-to-device copy bandwidth\n"
    "measured in the same run and the fraction of it.\n\n"
    "With --distribute partitioned (under mpirun -np N) it times float64 heat\n"
    "steps on the CPU ranks instead (--steps, default 10): the grid split into\n"
    "Cartesian blocks, each step a 4-plane halo exchange and the fused\n"
    "Laplacian update; per rank the block, ms per step of exchange and of\n"
    "compute, and the speed-up and parallel efficiency against one rank timed\n"
    "in the same invocation (rank 0 alone, the others asleep).\n";

/* Heat steps on this rank's block of a periodic grid: per step the halo
 * exchange and the Laplacian + update, timed apart. */
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
    if (!e) e = mb_stencil_laplacian_f64(&g, u, w);
    for (int64_t k = 0; !e && k < g.n[0]; k++)
      for (int64_t j = 0; j < g.n[1]; j++)
        for (int64_t i = 0; i < g.n[2]; i++) {
          const int64_t q = ((k + 4) * L[1] + j + 4) * L[2] + i + 4;
          u[q] = u[q] + a * w[q];
        }
    *ex_s += t1 - t0;
    *comp_s += MPI_Wtime() - t1;
  }
  free(u);
  free(w);
  return e;
}

/* --distribute partitioned: one rank alone, then all ranks. */
static int bench_partitioned(const int64_t n[3], int64_t steps) {
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const double h[3] = {1.0 / n[0], 1.0 / n[1], 1.0 / n[2]};
  double t1 = 0, ex = 0, comp = 0;
  mb_error e = MB_SUCCESS;
  if (rank == 0) { /* the baseline: the whole grid on one rank */
    mb_cart *one = NULL;
    e = mb_cart_create(MPI_COMM_SELF, n, 1, 4, &one);
    double a0 = MPI_Wtime();
    if (!e) e = heat_block(one, h, steps, &ex, &comp);
    t1 = MPI_Wtime() - a0;
    mb_cart_free(one);
  }
  if (mb_idle_barrier(comm) || mb_agree(comm, e)) return mb_cli_report(MB_EXIT_FAILED);
  mb_cart *c = NULL;
  if (mb_agree(comm, mb_cart_create(comm, n, 1, 4, &c))) return mb_cli_report(MB_EXIT_FAILED);
  MPI_Barrier(comm);
  double a0 = MPI_Wtime();
  e = heat_block(c, h, steps, &ex, &comp);
  double tn = MPI_Wtime() - a0;
  MPI_Allreduce(MPI_IN_PLACE, &tn, 1, MPI_DOUBLE, MPI_MAX, comm);
  double mine[5] = {(double)c->nloc[0], (double)c->nloc[1], (double)c->nloc[2], ex, comp};
  double *all = rank == 0 ? malloc(sizeof mine * (size_t)size) : NULL;
  MPI_Gather(mine, 5, MPI_DOUBLE, all, 5, MPI_DOUBLE, 0, comm);
  if (rank == 0 && all) {
    printf("stencil heat, %lld x %lld x %lld float64, %lld steps on %d CPU ranks (%d x %d x %d "
           "blocks)\n", (long long)n[0], (long long)n[1], (long long)n[2], (long long)steps, size,
           c->dims[0], c->dims[1], c->dims[2]);
    printf("  %4s %16s %14s %14s\n", "rank", "block", "exchange ms", "compute ms");
    for (int r = 0; r < size; r++)
      printf("  %4d %4.0f x %4.0f x %4.0f %14.3f %14.3f\n", r, all[5 * r], all[5 * r + 1],
             all[5 * r + 2], 1e3 * all[5 * r + 3] / steps, 1e3 * all[5 * r + 4] / steps);
    printf("  one rank %.3f ms per step, %d ranks %.3f ms per step: speed-up %.2f, efficiency "
           "%.2f\n", 1e3 * t1 / steps, size, 1e3 * tn / steps, t1 / tn, t1 / (size * tn));
  }
  free(all);
  mb_cart_free(c);
  return e ? mb_cli_report(MB_EXIT_FAILED) : MB_EXIT_OK;
}

int mb_stencil_bench(int argc, char **argv) {
  int64_t n[3] = {512, 512, 512}, warmup = 3, repeats = 10, steps = 10;
  int f64 = 1, f32 = 1, partitioned = 0;
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
  if (partitioned) return bench_partitioned(n, steps);
  if (mb_cli_rank() != 0) return MB_EXIT_OK; /* one-rank benchmark */
  mb_backend be;
  char why[512];
  if (mb_backend_choose(MB_BACKEND_AUTO, 0, &be, why, sizeof why)) return mb_cli_report(MB_EXIT_FAILED);
  if (be.kind != MB_BACKEND_CUDA) {
    printf("stencil: no CUDA device (%s); the benchmark times the GPU kernels\n", why);
    return MB_EXIT_OK;
  }
  static const char *const names[8] = {"derivative z (2.5D)", "derivative y (2.5D)",
                                       "derivative x (2.5D)", "laplacian (2.5D)",
                                       "heat step (2.5D, fused)", "derivative z (pencils)",
                                       "derivative y (pencils)", "derivative x (pencils)"};
  for (int t = 0; t < 2; t++) {
    if (!(t ? f64 : f32)) continue;
    mb_stencil_bench_result r;
    if (mb_stencil_cuda_bench(n, !t, (int)warmup, (int)repeats, &r))
      return mb_cli_report(MB_EXIT_FAILED);
    printf("stencil %lld x %lld x %lld %s on %s, median of %lld; copy bandwidth %.1f GB/s\n",
           (long long)n[0], (long long)n[1], (long long)n[2], t ? "float64" : "float32", r.device,
           (long long)repeats, r.copy_gbs);
    printf("  %-26s %10s %10s %10s\n", "kernel", "ms", "GB/s", "of copy");
    for (int k = 0; k < 8; k++) {
      double gbs = r.bytes / (r.ms[k] * 1e-3) / 1e9;
      printf("  %-26s %10.3f %10.1f %10.2f\n", names[k], r.ms[k], gbs, gbs / r.copy_gbs);
    }
  }
  return MB_EXIT_OK;
}
