/* meshbatch GPU test of the linalg layer on a partitioned mesh (1 to 4
 * ranks, one GPU per rank where there are enough, else shared): spot.obj
 * split into contiguous blocks of vertex ids, each rank's owned rows with
 * their ghosts (mb_local_domain_build, depth 1) and a halo plan;
 *  - each rank's device Laplacian and mass equal the whole mesh's CPU
 *    assembly (linalg/mb_csr.h) on its owned rows bit for bit;
 *  - the partitioned PCG ((M - dt L) X = M X, rtol 1e-10, row product,
 *    forward halo exchanges, exact dot products) gives every owned and
 *    ghost row the bits of the one-rank GPU PCG with the row product and of
 *    the CPU's mb_pcg_solve, in as many iterations.
 * Exits 77 (skip) without a CUDA device. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_linalg_util.h"
#include "gpu_meshes.h"
#include "mb_cuda.h"
#include "mb_halo.h"
#include "mb_linalg_cuda.h"
#include "mb_local.h"
#include "mb_meshfile.h"
#include "mb_solver.h"
#include "mb_testutil.h"

static int g_rank, g_size;

static void test_partitioned(void **state) {
  (void)state;
  const double dt = 1e-3;
  char buf[4096];
  const char *src = getenv("MESHBATCH_SOURCE_DIR");
  assert_non_null(src);
  snprintf(buf, sizeof buf, "%s/data/meshes/spot.obj", src);
  mb_mesh *mesh = NULL;
  if (mb_meshfile_read(buf, &mesh) != MB_SUCCESS) fail_msg("%s: %s", buf, mb_error_message());
  const int64_t nv = mesh->nv;
  mb_adjacency *gadj = mb_gpu_adjacency(mesh);

  /* the whole mesh, as one rank: reference values and the one-rank solve */
  mb_csr *G = NULL, *GS = NULL;
  assert_int_equal(mb_csr_pattern(gadj, nv, nv, NULL, &G), MB_SUCCESS);
  assert_int_equal(mb_csr_pattern(gadj, nv, nv, NULL, &GS), MB_SUCCESS);
  double *gmass = calloc((size_t)nv, 8);
  assert_int_equal(mb_csr_cotangent_laplacian(gadj, mesh->xyz, G), MB_SUCCESS);
  assert_int_equal(mb_mass_barycentric(gadj, nv, mesh->xyz, gmass), MB_SUCCESS);
  assert_int_equal(mb_csr_combine(GS, 1.0, gmass, -dt, G), MB_SUCCESS);
  mb_cuda_csr *gL = NULL, *gS = NULL;
  assert_int_equal(mb_cuda_csr_create(G, gadj, &gL), MB_SUCCESS);
  assert_int_equal(mb_cuda_csr_create(G, gadj, &gS), MB_SUCCESS);
  double *gx = gl_dev_upload(mesh->xyz, 3 * (size_t)nv), *gm = gl_dev_alloc((size_t)nv);
  assert_int_equal(mb_cuda_cotangent_laplacian(gL, gx, gm), MB_SUCCESS);
  assert_int_equal(mb_cuda_csr_combine(gS, 1.0, gm, -dt, gL), MB_SUCCESS);
  mb_cuda_csr_set_product(gS, MB_CUDA_PRODUCT_ROWS);
  double *gb = malloc(8 * 3 * (size_t)nv), *gsol = malloc(8 * 3 * (size_t)nv);
  for (int64_t i = 0; i < nv; i++)
    for (int c = 0; c < 3; c++) gb[3 * i + c] = gmass[i] * mesh->xyz[3 * i + c];
  double *dgb = gl_dev_upload(gb, 3 * (size_t)nv);
  mb_pcg_opts o = {.rtol = 1e-10, .max_iter = 10000};
  mb_solve_stats gst, st;
  mb_error e = mb_cuda_pcg_solve(MPI_COMM_SELF, NULL, gS, 3, dgb, gx, &o, &gst);
  if (e != MB_SUCCESS) fail_msg("one-rank PCG: %s", mb_error_message());
  gl_dev_download(gsol, gx, 3 * (size_t)nv);
  /* and the CPU's */
  double *csol = malloc(8 * 3 * (size_t)nv);
  memcpy(csol, mesh->xyz, 8 * 3 * (size_t)nv);
  mb_solve_stats cst;
  e = mb_pcg_solve(MPI_COMM_SELF, NULL, GS, 3, gb, csol, &o, &cst);
  if (e != MB_SUCCESS) fail_msg("CPU PCG: %s", mb_error_message());
  assert_int_equal(cst.iterations, gst.iterations);
  if (memcmp(csol, gsol, 8 * 3 * (size_t)nv)) fail_msg("one-rank GPU PCG differs from the CPU's");

  /* this rank's piece */
  int32_t *part = malloc(4 * (size_t)nv);
  for (int64_t v = 0; v < nv; v++) part[v] = (int32_t)((v * g_size) / nv);
  mb_local_domain *dom = NULL;
  assert_int_equal(mb_local_domain_build(gadj, part, g_rank, 1, NULL, &dom), MB_SUCCESS);
  const int64_t no = dom->nowned, nl = dom->nowned + dom->nghost;
  mb_csr *A = NULL;
  assert_int_equal(mb_csr_pattern(dom->adj, no, nl, dom->global, &A), MB_SUCCESS);
  double *xyz = malloc(8 * 3 * (size_t)nl), *b = malloc(8 * 3 * (size_t)(no + 1));
  for (int64_t l = 0; l < nl; l++) memcpy(xyz + 3 * l, mesh->xyz + 3 * dom->global[l], 24);
  mb_cuda_csr *L = NULL, *S = NULL;
  assert_int_equal(mb_cuda_csr_create(A, dom->adj, &L), MB_SUCCESS);
  assert_int_equal(mb_cuda_csr_create(A, dom->adj, &S), MB_SUCCESS);
  double *dx = gl_dev_upload(xyz, 3 * (size_t)nl), *dm = gl_dev_alloc((size_t)no);
  assert_int_equal(mb_cuda_cotangent_laplacian(L, dx, dm), MB_SUCCESS);
  assert_int_equal(mb_cuda_csr_combine(S, 1.0, dm, -dt, L), MB_SUCCESS);
  double *val = malloc(8 * (size_t)(A->nnz + 1)), *m = malloc(8 * (size_t)(no + 1));
  assert_int_equal(mb_cuda_csr_download(L, val), MB_SUCCESS);
  gl_dev_download(m, dm, (size_t)no);
  long bad = 0;
  for (int64_t i = 0; i < no; i++) {
    const int64_t g = dom->global[i];
    if (memcmp(&m[i], &gmass[g], 8)) bad++;
    assert_int_equal(A->rowptr[i + 1] - A->rowptr[i], G->rowptr[g + 1] - G->rowptr[g]);
    for (int32_t k = A->rowptr[i], q = G->rowptr[g]; k < A->rowptr[i + 1]; k++, q++) {
      assert_int_equal(dom->global[A->col[k]], G->col[q]);
      if (memcmp(&val[k], &G->val[q], 8)) bad++;
    }
  }
  if (bad) fail_msg("rank %d: %ld assembled values differ from one rank's", g_rank, bad);

  /* the partitioned solve */
  mb_halo *plan = NULL;
  assert_int_equal(mb_halo_create(MPI_COMM_WORLD, no, dom->global, dom->nghost,
                                  dom->global + no, dom->ghost_owner, 3, &plan),
                   MB_SUCCESS);
  for (int64_t i = 0; i < no; i++)
    for (int c = 0; c < 3; c++) b[3 * i + c] = m[i] * xyz[3 * i + c];
  double *db = gl_dev_upload(b, 3 * (size_t)no);
  e = mb_cuda_pcg_solve(MPI_COMM_WORLD, plan, S, 3, db, dx, &o, &st);
  if (e != MB_SUCCESS) fail_msg("rank %d: partitioned PCG: %s", g_rank, mb_error_message());
  double *sol = malloc(8 * 3 * (size_t)nl);
  gl_dev_download(sol, dx, 3 * (size_t)nl);
  bad = 0;
  for (int64_t l = 0; l < nl; l++) /* owned rows, and the ghosts refreshed at the end */
    if (memcmp(sol + 3 * l, gsol + 3 * dom->global[l], 24)) bad++;
  if (g_rank == 0)
    printf("[ gpu ] spot on %d ranks: PCG %d iterations (one rank %d), residual %.3e (%.3e)\n",
           g_size, st.iterations, gst.iterations, st.residual, gst.residual);
  if (bad) fail_msg("rank %d: %ld of %lld rows differ from one rank's solution", g_rank, bad,
                    (long long)nl);
  assert_int_equal(st.iterations, gst.iterations);
  assert_memory_equal(&st.residual, &gst.residual, sizeof st.residual);

  mb_halo_free(plan);
  mb_cuda_csr_free(L);
  mb_cuda_csr_free(S);
  mb_cuda_csr_free(gL);
  mb_cuda_csr_free(gS);
  gl_dev_free(dx);
  gl_dev_free(dm);
  gl_dev_free(db);
  gl_dev_free(gx);
  gl_dev_free(gm);
  gl_dev_free(dgb);
  mb_csr_free(A);
  mb_csr_free(G);
  mb_csr_free(GS);
  free(csol);
  mb_local_domain_free(dom);
  mb_adjacency_free(gadj);
  mb_mesh_free(mesh);
  free(part);
  free(xyz);
  free(b);
  free(val);
  free(m);
  free(sol);
  free(gmass);
  free(gb);
  free(gsol);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  int rc = mb_gpu_skip_unless_device("gpu_linalg_mpi");
  if (!rc) {
    char name[256] = "";
    int dev = -1;
    if (mb_cuda_select_device(g_rank, &dev, name, sizeof name) != MB_SUCCESS) {
      fprintf(stderr, "rank %d: %s\n", g_rank, mb_error_message());
      rc = 1;
    } else {
      printf("[ gpu ] rank %d: device %d: %s\n", g_rank, dev, name);
      const struct CMUnitTest tests[] = {cmocka_unit_test(test_partitioned)};
      rc = cmocka_run_group_tests(tests, NULL, NULL);
    }
  }
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
