/* meshbatch GPU test: a grid split over the ranks, each rank's block on a
 * GPU (mb_stencil_cuda_block, halo over MPI), bit for bit against the CPU
 * kernels on the whole grid, with the fused split step (the periodic wrap
 * of the axes a block does not cut written by the steps' stores, the
 * Dirichlet faces filled once, the shell's slabs in one launch) and with
 * the faces-first step (mb_stencil_block_figures.step): 7 heat steps
 * periodic and Dirichlet against mb_stencil_heat_* with each step and the
 * default (auto: fused on 2 ranks, faces-first on one, as
 * mb_stencil_block_figures.fused must report), 5 wave steps from rest
 * and the three derivatives after one halo, fused against faces-first;
 * float32 and float64, on shapes whose rows are and are not whole 16-byte
 * vectors (the TMA kernel and the marching kernel). Run on 1 and 2 ranks,
 * which may share a device. With `--halo ipc` the halo travels over the
 * IPC transport instead (copy engines between the GPUs of one node; 2 and 4
 * ranks), the same bits required; it exits 77 where IPC is refused (no
 * peer access). Exits 77 (skip) without a CUDA device. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_meshes.h"
#include "mb_cart.h"
#include "mb_halo.h"
#include "mb_stencil.h"
#include "mb_stencil_cuda.h"
#include "mb_testutil.h"

/* The halo transport of the blocks (main's --halo: mpi or ipc). */
static mb_halo_transport g_halo = MB_HALO_MPI;

/* This rank's block of a whole plain grid of w-byte values (or back: the
 * block into its place in whole, with to_whole). */
static void block_copy(const mb_cart *c, size_t w, void *whole, void *blk, int to_whole) {
  size_t q = 0;
  for (int64_t k = 0; k < c->nloc[0]; k++)
    for (int64_t j = 0; j < c->nloc[1]; j++) {
      const int64_t p = ((c->lo[0] + k) * c->n[1] + c->lo[1] + j) * c->n[2] + c->lo[2];
      char *a = (char *)whole + w * (size_t)p, *b = (char *)blk + w * q;
      if (to_whole) memcpy(a, b, w * (size_t)c->nloc[2]);
      else memcpy(b, a, w * (size_t)c->nloc[2]);
      q += (size_t)c->nloc[2];
    }
}

/* op 4 (heat), 5 (wave) or 6 (derivatives) of mb_stencil_cuda_block on this
 * rank's block of `in` (the whole grid), with step (MB_STENCIL_STEP_*; the
 * step that ran is asserted);
 * the result's block in res (heat, wave: the block's u; derivatives: 3
 * blocks). */
static void run_block(mb_cart *c, const mb_stencil_grid *g, int f32, int op, double coef,
                      int64_t steps, const void *in, int step, void *res) {
  const size_t w = f32 ? sizeof(float) : sizeof(double);
  const size_t nb = (size_t)(c->nloc[0] * c->nloc[1] * c->nloc[2]);
  mb_stencil_grid blk = *g;
  for (int a = 0; a < 3; a++) blk.n[a] = c->nloc[a];
  void *u = malloc(w * nb);
  assert_non_null(u);
  block_copy(c, w, (void *)in, u, 0);
  mb_stencil_block_figures fig;
  memset(&fig, 0, sizeof fig);
  fig.step = step;
  const mb_error e = mb_stencil_cuda_block(&blk, f32, c, g_halo, op, coef, steps, u,
                                           op == 6 ? res : NULL, &fig, NULL);
  if (e == MB_ERR_UNSUPPORTED && g_halo == MB_HALO_IPC) { /* agreed: every rank is here */
    if (c->rank == 0) printf("skipped: %s\n", mb_error_message());
    MPI_Finalize();
    exit(MB_TEST_SKIP);
  }
  if (e) fail_msg("mb_stencil_cuda_block (op %d): %s", op, mb_error_message());
  const int fused = step != MB_STENCIL_STEP_FACES_FIRST; /* auto: fused */
  assert_int_equal(fig.fused, fused);
  if (op != 6) memcpy(res, u, w * nb);
  free(u);
}

static void check(const int64_t n[3], int bc, int f32) {
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  mb_cart *c = NULL;
  assert_int_equal(mb_cart_create(MPI_COMM_WORLD, n, bc == MB_STENCIL_PERIODIC, 4, &c),
                   MB_SUCCESS);
  const size_t w = f32 ? sizeof(float) : sizeof(double);
  const size_t np = (size_t)(n[0] * n[1] * n[2]);
  const size_t nb = (size_t)(c->nloc[0] * c->nloc[1] * c->nloc[2]);
  void *in = malloc(w * np), *ref = malloc(w * np), *work = malloc(w * np);
  void *refb = malloc(w * nb), *a = malloc(3 * w * nb), *b = malloc(3 * w * nb);
  assert_true(in && ref && work && refb && a && b);
  for (size_t p = 0; p < np; p++) {
    const double v = sin(0.013 * (double)p) * cos(0.41 * (double)(p % 31)) + 0.2;
    if (f32) ((float *)in)[p] = (float)v;
    else ((double *)in)[p] = v;
  }
  const mb_stencil_grid g = {.n = {n[0], n[1], n[2]}, .h = {0.3, 0.2, 0.1},
                             .bc = (mb_stencil_boundary)bc, .outside = 0.5};
  const char *what = f32 ? "float32" : "float64";
  /* heat against the CPU on the whole grid */
  const double alpha = 0.8, dt = 0.5 * mb_stencil_heat_dt_limit(&g, alpha);
  memcpy(ref, in, w * np);
  assert_int_equal(f32 ? mb_stencil_heat_f32(&g, alpha, dt, 7, ref, work)
                       : mb_stencil_heat_f64(&g, alpha, dt, 7, ref, work),
                   MB_SUCCESS);
  block_copy(c, w, ref, refb, 0);
  static const int steps[3] = {MB_STENCIL_STEP_FUSED, MB_STENCIL_STEP_FACES_FIRST,
                               MB_STENCIL_STEP_AUTO};
  static const char *step_name[3] = {"fused", "faces-first", "default"};
  for (int k = 0; k < 3; k++) {
    run_block(c, &g, f32, 4, alpha * dt, 7, in, steps[k], a);
    if (memcmp(a, refb, w * nb))
      fail_msg("rank %d: heat %s %lld x %lld x %lld bc %d, %s step: not the CPU's bits", rank,
               what, (long long)n[0], (long long)n[1], (long long)n[2], bc,
               step_name[k]);
  }
  /* wave from rest and the derivatives: fused against faces-first */
  const double cw = 1.1, wdt = 0.5 * mb_stencil_wave_dt_limit(&g, cw);
  run_block(c, &g, f32, 5, cw * cw * wdt * wdt, 5, in, MB_STENCIL_STEP_FUSED, a);
  run_block(c, &g, f32, 5, cw * cw * wdt * wdt, 5, in, MB_STENCIL_STEP_FACES_FIRST, b);
  if (memcmp(a, b, w * nb)) fail_msg("rank %d: wave %s bc %d: fused differs", rank, what, bc);
  run_block(c, &g, f32, 6, 0, 0, in, MB_STENCIL_STEP_FUSED, a);
  run_block(c, &g, f32, 6, 0, 0, in, MB_STENCIL_STEP_FACES_FIRST, b);
  if (memcmp(a, b, 3 * w * nb))
    fail_msg("rank %d: derivatives %s bc %d: fused differs", rank, what, bc);
  free(in); free(ref); free(work); free(refb); free(a); free(b);
  mb_cart_free(c);
}

static void test_block_steps(void **state) {
  (void)state;
  /* rows of 28 (whole float32 vectors: the TMA kernel), 22 and 13 (not:
   * the marching kernel's scalar path) */
  const int64_t shapes[][3] = {{20, 24, 28}, {18, 20, 22}, {12, 16, 13}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int bc = 0; bc < 2; bc++)
      for (int f32 = 0; f32 < 2; f32++)
        check(shapes[s], bc ? MB_STENCIL_DIRICHLET : MB_STENCIL_PERIODIC, f32);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank == 0)
    printf("[ gpu ] stencil blocks on %d rank(s), halo over %s: heat the CPU's bits, wave and "
           "derivatives the faces-first step's, fused, faces-first and the default\n", size,
           mb_halo_transport_name(size > 1 ? g_halo : MB_HALO_MPI));
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  if (argc == 3 && !strcmp(argv[1], "--halo") && !strcmp(argv[2], "ipc")) g_halo = MB_HALO_IPC;
  else if (argc != 1) {
    fprintf(stderr, "usage: %s [--halo ipc]\n", argv[0]);
    MPI_Finalize();
    return 2;
  }
  int rank, skip = mb_gpu_test_begin("test_gpu_stencil_block", NULL, 0);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Allreduce(MPI_IN_PLACE, &skip, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (skip) {
    MPI_Finalize();
    return skip == MB_TEST_SKIP ? MB_TEST_SKIP : 1;
  }
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_block_steps)};
  const int rc = cmocka_run_group_tests(tests, NULL, NULL);
  int worst = rc;
  MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst ? 1 : 0;
}
