/* meshbatch: `meshbatch bench stencil` (the stencil room's benchmark). */
#include <stdio.h>
#include <string.h>

#include "mb_args.h"
#include "mb_backend.h"
#include "mb_op.h"
#include "stencil/mb_stencil_cuda.h"

static const char stencil_bench_help[] =
    "usage: meshbatch bench stencil [--shape NZ,NY,NX] [--dtype float32|float64|both]\n"
    "                               [--warmup N] [--repeats N]\n\n"
    "Times the stencil kernels on the GPU on a periodic grid (default 512,512,512,\n"
    "float32 and float64, warmup 3, repeats 10): the derivative along z, y and x\n"
    "and the 8th-order Laplacian (2.5D blocking), the fused heat step, and the\n"
    "shared-memory pencil kernels of NVIDIA's \"Finite Difference Methods in CUDA\n"
    "C/C++\" for the three derivatives, in the same run. Per kernel: ms per call\n"
    "(median), GB/s under the byte model (each point read once and written once:\n"
    "2 x points x the value size per call), the device-to-device copy bandwidth\n"
    "measured in the same run and the fraction of it.\n";

int mb_stencil_bench(int argc, char **argv) {
  int64_t n[3] = {512, 512, 512}, warmup = 3, repeats = 10;
  int f64 = 1, f32 = 1;
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
    } else if (!strcmp(a, "--warmup") && v) bad = mb_cli_parse_int64(v, &warmup) || warmup < 0;
    else if (!strcmp(a, "--repeats") && v) bad = mb_cli_parse_int64(v, &repeats) || repeats < 1;
    else return mb_cli_usage_error("bench", "unexpected argument '%s'", a);
    if (bad) return mb_cli_usage_error("bench", "bad value '%s' for %s", v, a);
    i++;
  }
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
