/* The distributed PCG (linalg/mb_solver.h) over a partitioned mesh gives,
 * on any number of ranks, the bits of the one-rank PCG, with the same
 * iteration counts: two backward-Euler steps of mean-curvature flow,
 * (M - dt L) X' = M X, the second warm-started from the first, on
 * data/meshes/bob.obj split by METIS (partition/mb_distributed.h, ghost
 * depth 1). The one-rank reference runs on every rank over the whole mesh
 * (MPI_COMM_SELF, no halo); each rank then checks, bit for bit, its local
 * cotangent Laplacian (owned rows), lumped mass, and the solution of its
 * owned and ghost rows, against the reference at the same global ids. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_adjacency.h"
#include "mb_csr.h"
#include "mb_distributed.h"
#include "mb_meshfile.h"
#include "mb_solver.h"
#include "mb_testutil.h"

static int g_rank, g_size;

#define STEPS 2

/* Every rank passes only if none failed (so no rank leaves the others
 * waiting in a collective call). */
static void agree(long bad, const char *what) {
  long any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (any) fail_msg("%s: %ld mismatches over the ranks", what, any);
}

static int same(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* One mean-curvature step of the positions x [ncols, 3] (warm start and
 * result) on the operators of adj's first nrows rows. */
static mb_error flow_step(MPI_Comm comm, mb_halo *halo, const mb_adjacency *adj, int64_t nrows,
                          int64_t ncols, const int64_t *global, double dt, double *x,
                          mb_csr **Lout, double *mass, mb_solve_stats *st) {
  mb_csr *L, *A;
  MB_CALL(mb_csr_pattern(adj, nrows, ncols, global, &L));
  MB_CALL(mb_csr_pattern(adj, nrows, ncols, global, &A));
  MB_CALL(mb_csr_cotangent_laplacian(adj, x, L));
  MB_CALL(mb_mass_barycentric(adj, nrows, x, mass));
  MB_CALL(mb_csr_combine(A, 1.0, mass, -dt, L));
  double *B = malloc((size_t)(nrows ? nrows : 1) * 3 * sizeof(double));
  for (int64_t k = 0; k < 3 * nrows; k++) B[k] = mass[k / 3] * x[k];
  mb_pcg_opts o = {.rtol = 1e-10, .max_iter = 10000};
  MB_CALL(mb_pcg_solve(comm, halo, A, 3, B, x, &o, st));
  free(B);
  mb_csr_free(A);
  *Lout = L;
  return MB_SUCCESS;
}

static void test_distributed_pcg(void **state) {
  (void)state;
  char path[4096];
  const char *src = getenv("MESHBATCH_SOURCE_DIR");
  snprintf(path, sizeof path, "%s/data/meshes/bob.obj", src ? src : ".");
  mb_mesh *mesh;
  assert_int_equal(mb_meshfile_read(path, &mesh), MB_SUCCESS);
  mb_adjacency *adj;
  assert_int_equal(mb_adjacency_build_opts(mesh, MB_ADJ_OPPOSITE, &adj), MB_SUCCESS);
  const int64_t nv = mesh->nv;

  /* the reference: one rank, the whole mesh */
  double *xr = malloc((size_t)nv * 3 * sizeof(double)), *mr = malloc((size_t)nv * sizeof(double));
  assert_non_null(xr);
  assert_non_null(mr);
  memcpy(xr, mesh->xyz, (size_t)nv * 3 * sizeof(double));
  double area = 0;
  {
    mb_csr *L;
    assert_int_equal(mb_csr_pattern(adj, nv, nv, NULL, &L), MB_SUCCESS);
    assert_int_equal(mb_mass_barycentric(adj, nv, xr, mr), MB_SUCCESS);
    for (int64_t i = 0; i < nv; i++) area += mr[i];
    mb_csr_free(L);
  }
  const double dt = 1e-3 * area;

  mb_distributed_mesh *dm;
  assert_int_equal(mb_distributed_create(MPI_COMM_WORLD, adj, mesh->xyz, NULL, 1, &dm),
                   MB_SUCCESS);
  const mb_local_domain *dom = dm->domain;
  const int64_t nown = dom->nowned, nloc = dom->nowned + dom->nghost;
  double *xl = malloc((size_t)nloc * 3 * sizeof(double)), *ml = malloc((size_t)(nown ? nown : 1) * sizeof(double));
  assert_non_null(xl);
  assert_non_null(ml);
  memcpy(xl, dm->x, (size_t)nloc * 3 * sizeof(double));

  for (int step = 0; step < STEPS; step++) {
    mb_csr *Lr, *Ll;
    mb_solve_stats sr, sl;
    mb_error e = flow_step(MPI_COMM_SELF, NULL, adj, nv, nv, NULL, dt, xr, &Lr, mr, &sr);
    if (e) fail_msg("one-rank step %d: %s", step, mb_error_message());
    e = flow_step(MPI_COMM_WORLD, dm->halo, dom->adj, nown, nloc, dom->global, dt, xl, &Ll, ml,
                  &sl);
    if (e) fail_msg("rank %d, %d-rank step %d: %s", g_rank, g_size, step, mb_error_message());
    long bad = 0;
    /* the operators of the owned rows */
    for (int64_t i = 0; i < nown; i++) {
      const int64_t g = dom->global[i];
      if (!same(ml[i], mr[g])) bad++;
      assert_int_equal(Ll->rowptr[i + 1] - Ll->rowptr[i], Lr->rowptr[g + 1] - Lr->rowptr[g]);
      for (int32_t t = 0; t < Ll->rowptr[i + 1] - Ll->rowptr[i]; t++) {
        const int32_t el = Ll->rowptr[i] + t, er = Lr->rowptr[g] + t;
        if (dom->global[Ll->col[el]] != Lr->col[er]) bad++;
        if (!same(Ll->val[el], Lr->val[er])) bad++;
      }
    }
    agree(bad, "operators");
    /* the solution, owned and ghost rows, and the solver's figures */
    for (int64_t i = 0; i < nloc; i++)
      for (int c = 0; c < 3; c++)
        if (!same(xl[3 * i + c], xr[3 * dom->global[i] + c])) bad++;
    agree(bad, "solution");
    if (g_rank == 0)
      printf("%d ranks, step %d: %lld owned + %lld ghost vertices on rank 0; PCG %d iterations "
             "(one rank: %d), residual %.3e (one rank: %.3e)\n",
             g_size, step, (long long)nown, (long long)dom->nghost, sl.iterations, sr.iterations,
             sl.residual, sr.residual);
    assert_int_equal(sl.iterations, sr.iterations);
    assert_true(same(sl.residual, sr.residual));
    assert_true(sl.residual <= 1e-10);
    assert_true(sl.iterations > 0);
    mb_csr_free(Lr);
    mb_csr_free(Ll);
  }
  if (g_size > 1) assert_true(dom->nghost > 0);
  free(xl);
  free(ml);
  free(xr);
  free(mr);
  mb_distributed_free(dm);
  mb_adjacency_free(adj);
  mb_mesh_free(mesh);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_distributed_pcg)};
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  MPI_Finalize();
  return rc;
}
