/* meshbatch bench reduce: the cost of reproducible dot products
 * (partition/mb_reduce.h) against naive ones, on the CPU and the GPU, as a
 * fraction of the copy bandwidth measured in the same run. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_args.h"
#include "mb_cuda.h"
#include "mb_log.h"
#include "mb_mpi.h"
#include "mb_reduce.h"

static const char bench_help[] =
    "usage: meshbatch bench reduce [--n N] [--repeats R] [--backend cpu|cuda|all]\n\n"
    "Times dot products of N float64 pairs (x, y) split evenly over the ranks\n"
    "(mpirun -np P; one GPU per rank): the reproducible one (mb_reduce_dot: an\n"
    "exact superaccumulator, correctly rounded, the same bits on any number of\n"
    "ranks and on CPU and GPU) and a naive float64 sum (local sum, then\n"
    "MPI_Allreduce; its last bits depend on the split and the threads). Two\n"
    "data sets, both signs: values 2^-8 .. 2^8 (a solver's vectors: on the GPU\n"
    "the terms stay in each thread's register window) and values 2^-499 ..\n"
    "2^499, products 1e-300 .. 1e300 (the worst case: every term leaves the\n"
    "window). 2 untimed calls, then R timed ones (default 10), median of the\n"
    "slowest rank. Prints per data set, backend and method: ms per dot\n"
    "product, the bytes read per second (16 bytes per pair), and that as a\n"
    "fraction of the copy bandwidth measured in the same run: one memcpy per\n"
    "rank on the CPU (one thread, as the other benchmarks; the dot products use\n"
    "the rank's OpenMP threads, OMP_NUM_THREADS), device-to-device on the GPU,\n"
    "both counted as bytes read + written.\n"
    "Default: N = 10^7 and then 10^8; backend all (cuda where a GPU is present).\n";

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* x, y values: splitmix64 of the global index. */
static uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* wide: magnitudes 2^-499 .. 2^499 (products 1e-300 .. 1e300); else
 * 2^-8 .. 2^8, like a solver's vectors. Both signs. */
static double value(uint64_t i, int wide) {
  const uint64_t r = mix(i);
  const double m = 1.0 + (double)(r >> 11) * 0x1p-53;
  const int e = wide ? (int)((r >> 3) % 999) - 499 : (int)((r >> 3) % 17) - 8;
  return (r & 1 ? -1 : 1) * ldexp(m, e);
}

/* memcpy bandwidth of the host, (read + write) bytes / s, median of 5. */
static double host_copy_gbs(size_t bytes) {
  char *a = malloc(bytes), *b = malloc(bytes);
  if (!a || !b) {
    free(a);
    free(b);
    return 0;
  }
  memset(a, 1, bytes);
  memset(b, 2, bytes);
  double t[5];
  for (int r = 0; r < 5; r++) {
    double t0 = mb_wtime();
    memcpy(b, a, bytes);
    t[r] = mb_wtime() - t0;
  }
  qsort(t, 5, sizeof *t, cmp_double);
  free(a);
  free(b);
  return 2.0 * (double)bytes / t[2] / 1e9;
}

typedef struct timing {
  double ms;   /* median ms per dot product, slowest rank */
  double last; /* the last result */
} timing;

enum { M_REPRO_CPU, M_NAIVE_CPU, M_REPRO_GPU, M_NAIVE_GPU };

typedef struct bench_ctx {
  int64_t n;
  const double *x, *y;           /* host */
  const double *dx, *dy;         /* device, or NULL */
  mb_reduce_device *rd;
} bench_ctx;

static mb_error one_call(const bench_ctx *c, int method, double *out) {
  switch (method) {
  case M_REPRO_CPU:
    MB_CALL(mb_reduce_dot(MPI_COMM_WORLD, c->n, c->x, c->y, out));
    break;
  case M_NAIVE_CPU: {
    double s = 0;
#pragma omp parallel for reduction(+ : s)
    for (int64_t i = 0; i < c->n; i++) s += c->x[i] * c->y[i];
    MB_CALL_MPI(MPI_Allreduce(&s, out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    break;
  }
  case M_REPRO_GPU:
    MB_CALL(mb_reduce_dot_device(c->rd, NULL, MPI_COMM_WORLD, c->n, c->dx, c->dy, out));
    break;
  default: {
    double s = 0;
    MB_CALL(mb_reduce_dot_device_naive(c->rd, NULL, c->n, c->dx, c->dy, &s));
    MB_CALL_MPI(MPI_Allreduce(&s, out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
  }
  }
  return MB_SUCCESS;
}

static mb_error time_method(const bench_ctx *c, int method, int repeats, timing *t) {
  double *ms = malloc(sizeof *ms * (size_t)repeats);
  MB_CHECK(ms, MB_ERR_MEMORY, "out of memory");
  mb_error e = MB_SUCCESS;
  for (int r = -2; r < repeats && !e; r++) {
    int me = MPI_Barrier(MPI_COMM_WORLD);
    if (me) e = mb_error_set(MB_ERR_MPI, __FILE__, __LINE__, __func__, "MPI_Barrier failed");
    const double t0 = mb_wtime();
    if (!e) e = one_call(c, method, &t->last);
    double dt = 1e3 * (mb_wtime() - t0), worst = dt;
    e = mb_agree(MPI_COMM_WORLD, e); /* every rank leaves the loop together */
    if (!e && MPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD))
      e = mb_error_set(MB_ERR_MPI, __FILE__, __LINE__, __func__, "MPI_Allreduce failed");
    if (r >= 0) ms[r] = worst;
  }
  if (!e) {
    qsort(ms, (size_t)repeats, sizeof *ms, cmp_double);
    t->ms = ms[repeats / 2];
  }
  free(ms);
  return e;
}

static void print_row(int rank, const char *backend, const char *method, int64_t ntotal,
                      const timing *t, double copy_gbs) {
  if (rank) return;
  const double gbs = 16.0 * (double)ntotal / (t->ms * 1e-3) / 1e9;
  printf("  %-5s %-13s %10.3f %10.1f %8.3f   %.17g\n", backend, method, t->ms, gbs,
         copy_gbs > 0 ? gbs / copy_gbs : 0, t->last);
}

static int bench_size(int64_t ntotal, int wide, int repeats, int want_cpu, int want_gpu) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int64_t i0 = ntotal * rank / size, i1 = ntotal * (rank + 1) / size, n = i1 - i0;
  double *x = malloc(sizeof *x * (size_t)(n ? n : 1)), *y = malloc(sizeof *y * (size_t)(n ? n : 1));
  int ok = x && y, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    free(x);
    free(y);
    return mb_cli_usage_error("bench", "out of memory for %lld values", (long long)ntotal);
  }
#pragma omp parallel for
  for (int64_t i = 0; i < n; i++) {
    x[i] = value(2 * (uint64_t)(i0 + i), wide);
    y[i] = value(2 * (uint64_t)(i0 + i) + 1, wide);
  }
  if (!rank)
    printf("reduce: N = %lld pairs of %s on %d rank(s) (%lld bytes read per dot product), "
           "median of %d\n  %-5s %-13s %10s %10s %8s   %s\n",
           (long long)ntotal, wide ? "products 1e-300 .. 1e300" : "values 2^-8 .. 2^8", size,
           (long long)(16 * ntotal), repeats, "where", "method",
           "ms/dot", "GB/s read", "of copy", "result");
  bench_ctx c = {n, x, y, NULL, NULL, NULL};
  mb_error e = MB_SUCCESS;
  if (want_cpu) {
    double copy = host_copy_gbs((size_t)16 * (size_t)(n > (1 << 24) ? n : (1 << 24)));
    double worst = copy;
    MPI_Allreduce(&copy, &worst, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    timing t[2] = {{0, 0}, {0, 0}};
    e = time_method(&c, M_REPRO_CPU, repeats, &t[0]);
    if (!e) e = time_method(&c, M_NAIVE_CPU, repeats, &t[1]);
    if (!e) {
      print_row(rank, "cpu", "reproducible", ntotal, &t[0], worst);
      print_row(rank, "cpu", "naive", ntotal, &t[1], worst);
      if (!rank)
        printf("  cpu   memcpy copy bandwidth %.1f GB/s (read + write, slowest rank); "
               "reproducible / naive time %.2f\n", worst, t[1].ms > 0 ? t[0].ms / t[1].ms : 0);
    }
  }
  double *dx = NULL, *dy = NULL;
  if (!e && want_gpu) {
    double copy = 0;
    e = mb_reduce_device_create(&c.rd);
    if (!e) e = mb_reduce_device_upload(n, x, &dx);
    if (!e) e = mb_reduce_device_upload(n, y, &dy);
    if (!e) e = mb_cuda_copy_bandwidth((size_t)16 * (size_t)(n > (1 << 24) ? n : (1 << 24)), &copy);
    e = mb_agree(MPI_COMM_WORLD, e);
    c.dx = dx;
    c.dy = dy;
    timing t[2] = {{0, 0}, {0, 0}};
    if (!e) e = time_method(&c, M_REPRO_GPU, repeats, &t[0]);
    if (!e) e = time_method(&c, M_NAIVE_GPU, repeats, &t[1]);
    double worst = copy;
    if (!e) MPI_Allreduce(&copy, &worst, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    if (!e) {
      print_row(rank, "cuda", "reproducible", ntotal, &t[0], worst);
      print_row(rank, "cuda", "naive", ntotal, &t[1], worst);
      if (!rank)
        printf("  cuda  device-to-device copy bandwidth %.1f GB/s (read + write, slowest rank); "
               "reproducible / naive time %.2f\n", worst, t[1].ms > 0 ? t[0].ms / t[1].ms : 0);
    }
  }
  mb_reduce_device_release(dx);
  mb_reduce_device_release(dy);
  mb_reduce_device_free(c.rd);
  free(x);
  free(y);
  if (e) return mb_cli_report(MB_EXIT_FAILED);
  if (!rank) fflush(stdout);
  return MB_EXIT_OK;
}

int mb_reduce_bench(int argc, char **argv) {
  int64_t n = 0, repeats = 10;
  int backend = 0; /* 0 all, 1 cpu, 2 cuda */
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      if (mb_cli_rank() == 0) fputs(bench_help, stdout);
      return MB_EXIT_OK;
    } else if (mb_cli_log_option(a)) {
      continue;
    } else if (i + 1 < argc && !strcmp(a, "--n")) {
      if (mb_cli_parse_int64(argv[++i], &n) || n < 1)
        return mb_cli_usage_error("bench", "--n: a count of values >= 1, not '%s'", argv[i]);
    } else if (i + 1 < argc && !strcmp(a, "--repeats")) {
      if (mb_cli_parse_int64(argv[++i], &repeats) || repeats < 1 || repeats > 100000)
        return mb_cli_usage_error("bench", "--repeats: 1 .. 100000, not '%s'", argv[i]);
    } else if (i + 1 < argc && !strcmp(a, "--backend")) {
      const char *b = argv[++i];
      if (!strcmp(b, "all")) backend = 0;
      else if (!strcmp(b, "cpu")) backend = 1;
      else if (!strcmp(b, "cuda")) backend = 2;
      else return mb_cli_usage_error("bench", "--backend: cpu, cuda or all, not '%s'", b);
    } else {
      return mb_cli_usage_error("bench", "reduce: unknown option '%s'", a);
    }
  }
  char why[256] = "";
  int have_gpu = mb_cuda_device_count(why, sizeof why) > 0, all_gpu = 0;
  MPI_Allreduce(&have_gpu, &all_gpu, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (backend == 2 && !all_gpu)
    return mb_cli_usage_error("bench", "--backend cuda: no GPU on some rank (%s)", why);
  if (all_gpu && backend != 1) {
    int local = 0, dev = 0;
    char name[256];
    mb_error e = mb_local_rank(MPI_COMM_WORLD, &local);
    if (!e) e = mb_cuda_select_device(local, &dev, name, sizeof name);
    if (mb_agree(MPI_COMM_WORLD, e)) return mb_cli_report(MB_EXIT_FAILED);
    if (mb_cli_rank() == 0) printf("reduce: GPU %s (rank 0)\n", name);
  } else if (backend == 0 && mb_cli_rank() == 0) {
    printf("reduce: no GPU figures: %s\n", why[0] ? why : "no CUDA device on some rank");
  }
  const int64_t sizes[2] = {10000000, 100000000};
  for (int s = 0; s < (n ? 1 : 2); s++)
    for (int wide = 0; wide < 2; wide++) {
      int code = bench_size(n ? n : sizes[s], wide, (int)repeats, backend != 2,
                            all_gpu && backend != 1);
      if (code) return code;
    }
  return MB_EXIT_OK;
}
