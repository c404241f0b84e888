/* The smoothed-aggregation AMG preconditioner (linalg/mb_amg.h) and the
 * AMG-preconditioned CG (mb_pcg_opts.amg) on one rank:
 *  - one backward-Euler step of mean-curvature flow, (M - dt L) X = M X0,
 *    on spot (data/meshes/spot.obj, subdivided once: 11 k vertices) at
 *    dt = 1e-5 .. 1e-1 times its area (the unit-area mesh's time steps):
 *    AMG-PCG reaches rtol 1e-10, agrees with CHOLMOD within 1e-8 of the
 *    bounding-box diagonal, and needs at most a third of Jacobi-PCG's
 *    iterations from dt 1e-3 on (at most as many below): a property of the
 *    preconditioner, counted, not timed;
 *  - the hierarchy: several levels, rows decreasing, operator complexity
 *    in (1, 2);
 *  - the V-cycle is a symmetric positive definite operator (u'Bv = v'Bu
 *    to rounding, v'Bv > 0);
 *  - the same bits with 1 and 2 OpenMP threads (setup, update and solve);
 *  - update: back to the creation's values gives the creation's bits; new
 *    values converge to CHOLMOD's solution;
 *  - fixed vertices eliminated as the flows do (identity rows, explicit
 *    zeros): still converges to CHOLMOD's solution;
 *  - errors: NULL, not square, options out of range, a diagonal <= 0, a
 *    non-finite value, an indefinite matrix with a positive diagonal (the
 *    coarse levels say so), another pattern at update, ncomp out of range, a
 *    hierarchy of another size given to the PCG. */
#include <math.h>
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_adjacency.h"
#include "mb_amg.h"
#include "mb_csr.h"
#include "mb_generate.h"
#include "mb_meshfile.h"
#include "mb_solver.h"
#include "mb_testutil.h"

typedef struct fixture {
  mb_mesh *mesh;
  mb_adjacency *adj;
  mb_csr *L;
  double *mass;
  double area, diag;
  int64_t n;
} fixture;

static fixture F; /* spot subdivided once, loaded once */

static int setup(void **state) {
  (void)state;
  char path[4096];
  const char *src = getenv("MESHBATCH_SOURCE_DIR");
  snprintf(path, sizeof path, "%s/data/meshes/spot.obj", src ? src : ".");
  mb_mesh *m0;
  if (mb_meshfile_read(path, &m0) != MB_SUCCESS) {
    printf("data/meshes/spot.obj not readable (MESHBATCH_SOURCE_DIR unset?)\n");
    return -1;
  }
  if (mb_generate_subdivide(m0, 1, &F.mesh) != MB_SUCCESS) return -1;
  mb_mesh_free(m0);
  F.n = F.mesh->nv;
  if (mb_adjacency_build_opts(F.mesh, MB_ADJ_OPPOSITE, &F.adj) ||
      mb_csr_pattern(F.adj, F.n, F.n, NULL, &F.L) ||
      mb_csr_cotangent_laplacian(F.adj, F.mesh->xyz, F.L))
    return -1;
  F.mass = calloc((size_t)F.n, sizeof(double));
  if (!F.mass || mb_mass_barycentric(F.adj, F.n, F.mesh->xyz, F.mass)) return -1;
  for (int64_t i = 0; i < F.n; i++) F.area += F.mass[i];
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (int64_t i = 0; i < F.n; i++)
    for (int k = 0; k < 3; k++) {
      lo[k] = fmin(lo[k], F.mesh->xyz[3 * i + k]);
      hi[k] = fmax(hi[k], F.mesh->xyz[3 * i + k]);
    }
  F.diag = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                (hi[2] - lo[2]) * (hi[2] - lo[2]));
  printf("spot subdivided once: %lld vertices, area %.4f\n", (long long)F.n, F.area);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  mb_csr_free(F.L);
  free(F.mass);
  mb_adjacency_free(F.adj);
  mb_mesh_free(F.mesh);
  return 0;
}

/* A = M - dt L (dt = dt_unit * area), B = M X0. */
static mb_csr *system_of(double dt_unit, double **B) {
  mb_csr *A;
  assert_int_equal(mb_csr_pattern(F.adj, F.n, F.n, NULL, &A), MB_SUCCESS);
  assert_int_equal(mb_csr_combine(A, 1.0, F.mass, -dt_unit * F.area, F.L), MB_SUCCESS);
  if (B) {
    *B = malloc((size_t)F.n * 3 * sizeof(double));
    assert_non_null(*B);
    for (int64_t i = 0; i < F.n; i++)
      for (int c = 0; c < 3; c++) (*B)[3 * i + c] = F.mass[i] * F.mesh->xyz[3 * i + c];
  }
  return A;
}

static double *alloc3(void) {
  double *x = malloc((size_t)F.n * 3 * sizeof(double));
  assert_non_null(x);
  return x;
}

/* CG from the positions; the iterations. */
static int solve_pcg(const mb_csr *A, const double *B, const mb_amg *amg, double *X) {
  memcpy(X, F.mesh->xyz, (size_t)F.n * 3 * sizeof(double));
  mb_pcg_opts o = {.rtol = 1e-10, .max_iter = 20000, .amg = amg};
  mb_solve_stats st;
  assert_int_equal(mb_pcg_solve(MPI_COMM_SELF, NULL, A, 3, B, X, &o, &st), MB_SUCCESS);
  assert_int_equal(st.method, amg ? MB_SOLVER_AMG : MB_SOLVER_PCG);
  assert_true(st.residual <= 1e-10);
  double res[3];
  assert_int_equal(mb_residual(MPI_COMM_SELF, NULL, A, 3, B, X, res), MB_SUCCESS);
  for (int c = 0; c < 3; c++) assert_true(res[c] <= 1e-10);
  return st.iterations;
}

static double *solve_cholesky(const mb_csr *A, const double *B) {
  double *X = alloc3();
  mb_cholesky *ch;
  assert_int_equal(mb_cholesky_create(A, &ch), MB_SUCCESS);
  assert_int_equal(mb_cholesky_factor(ch, A), MB_SUCCESS);
  assert_int_equal(mb_cholesky_solve(ch, 3, B, X), MB_SUCCESS);
  mb_cholesky_free(ch);
  return X;
}

static double max_diff(const double *a, const double *b) {
  double d = 0;
  for (int64_t k = 0; k < 3 * F.n; k++) d = fmax(d, fabs(a[k] - b[k]));
  return d;
}

/* --------------------------------------------------------------- solves */

static void test_time_steps(void **state) {
  (void)state;
  const double dts[] = {1e-5, 1e-4, 1e-3, 1e-2, 1e-1};
  const mb_amg_opts opts[2] = {mb_amg_opts_default(),
                               {.theta = 0.0, .max_levels = 10, .max_coarse = 200, .degree = 1}};
  for (int t = 0; t < 5; t++) {
    double *B;
    mb_csr *A = system_of(dts[t], &B);
    double *Xc = solve_cholesky(A, B), *Xj = alloc3(), *Xa = alloc3();
    const int itj = solve_pcg(A, B, NULL, Xj);
    for (int v = 0; v < 2; v++) {
      mb_amg *amg;
      assert_int_equal(mb_amg_create(A, &opts[v], &amg), MB_SUCCESS);
      mb_amg_stats s;
      assert_int_equal(mb_amg_get_stats(amg, &s), MB_SUCCESS);
      const int ita = solve_pcg(A, B, amg, Xa);
      const double dev = max_diff(Xa, Xc) / F.diag;
      printf("dt %.0e x area (theta %.2f, max_coarse %d, degree %d): Jacobi-PCG %d iterations, "
             "AMG-PCG %d (levels %d, coarsest %d rows, operator complexity %.3f); "
             "max |X_amg - X_chol| / bbox diagonal %.2e\n",
             dts[t], opts[v].theta, opts[v].max_coarse, opts[v].degree, itj, ita, s.levels,
             s.rows[s.levels - 1], s.operator_complexity, dev);
      assert_true(s.levels >= 2);
      assert_true(dev <= 1e-8);
      assert_true(ita <= itj);
      if (dts[t] >= 1e-3) assert_true(3 * ita <= itj);
      mb_amg_free(amg);
    }
    mb_csr_free(A);
    free(B);
    free(Xc);
    free(Xj);
    free(Xa);
  }
}

static void test_hierarchy(void **state) {
  (void)state;
  mb_csr *A = system_of(1e-3, NULL);
  mb_amg_opts o = mb_amg_opts_default();
  o.max_coarse = 100;
  mb_amg *amg;
  assert_int_equal(mb_amg_create(A, &o, &amg), MB_SUCCESS);
  assert_int_equal(mb_amg_rows(amg), A->nrows);
  mb_amg_stats s;
  assert_int_equal(mb_amg_get_stats(amg, &s), MB_SUCCESS);
  printf("hierarchy (max_coarse 100):");
  for (int l = 0; l < s.levels; l++) printf(" %d rows / %lld entries;", s.rows[l], (long long)s.nnz[l]);
  printf(" operator complexity %.3f, setup %.1f ms\n", s.operator_complexity, s.setup_ms);
  assert_true(s.levels >= 3);
  assert_int_equal(s.rows[0], A->nrows);
  assert_int_equal(s.nnz[0], A->nnz);
  for (int l = 1; l < s.levels; l++) assert_true(s.rows[l] < s.rows[l - 1]);
  assert_true(s.rows[s.levels - 1] <= 100 || s.levels == o.max_levels);
  assert_true(s.operator_complexity > 1 && s.operator_complexity < 2);
  mb_amg_free(amg);
  /* a matrix of at most max_coarse rows is factored directly: one level,
   * the V-cycle is the exact inverse */
  o.max_coarse = A->nrows;
  assert_int_equal(mb_amg_create(A, &o, &amg), MB_SUCCESS);
  assert_int_equal(mb_amg_get_stats(amg, &s), MB_SUCCESS);
  assert_int_equal(s.levels, 1);
  double *B;
  mb_csr_free(A);
  A = system_of(1e-3, &B);
  double *X = alloc3();
  assert_int_equal(mb_amg_apply(amg, 3, B, X), MB_SUCCESS);
  double res[3];
  assert_int_equal(mb_residual(MPI_COMM_SELF, NULL, A, 3, B, X, res), MB_SUCCESS);
  for (int c = 0; c < 3; c++) assert_true(res[c] <= 1e-12);
  mb_amg_free(amg);
  mb_csr_free(A);
  free(B);
  free(X);
}

/* u'Bv = v'Bu and v'Bv > 0 for a few vectors, one and two columns. */
static void test_symmetric(void **state) {
  (void)state;
  mb_csr *A = system_of(1e-2, NULL);
  mb_amg *amg;
  mb_amg_opts o = mb_amg_opts_default();
  o.max_coarse = 100;
  assert_int_equal(mb_amg_create(A, &o, &amg), MB_SUCCESS);
  const int64_t n = F.n;
  double *u = malloc(2 * (size_t)n * sizeof(double)), *Bu = malloc(2 * (size_t)n * sizeof(double));
  assert_non_null(u);
  assert_non_null(Bu);
  uint64_t s = 12345;
  for (int64_t k = 0; k < 2 * n; k++) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    u[k] = (double)(s >> 11) / 9007199254740992.0 - 0.5;
  }
  assert_int_equal(mb_amg_apply(amg, 2, u, Bu), MB_SUCCESS);
  double ubv = 0, vbu = 0, ubu = 0, vbv = 0, nu = 0, nb = 0;
  for (int64_t i = 0; i < n; i++) {
    ubv += u[2 * i] * Bu[2 * i + 1];
    vbu += u[2 * i + 1] * Bu[2 * i];
    ubu += u[2 * i] * Bu[2 * i];
    vbv += u[2 * i + 1] * Bu[2 * i + 1];
    nu += u[2 * i] * u[2 * i];
    nb += Bu[2 * i] * Bu[2 * i];
  }
  printf("V-cycle: u'Bv %.15e, v'Bu %.15e (relative difference %.2e), u'Bu %.3e, v'Bv %.3e\n",
         ubv, vbu, fabs(ubv - vbu) / sqrt(ubu * vbv), ubu, vbv);
  assert_true(fabs(ubv - vbu) <= 1e-10 * sqrt(ubu * vbv));
  assert_true(ubu > 0 && vbv > 0);
  /* one column at a time gives the two-column result's bits */
  double *u1 = malloc((size_t)n * sizeof(double)), *z1 = malloc((size_t)n * sizeof(double));
  assert_non_null(u1);
  assert_non_null(z1);
  for (int c = 0; c < 2; c++) {
    for (int64_t i = 0; i < n; i++) u1[i] = u[2 * i + c];
    assert_int_equal(mb_amg_apply(amg, 1, u1, z1), MB_SUCCESS);
    for (int64_t i = 0; i < n; i++) assert_true(z1[i] == Bu[2 * i + c]);
  }
  (void)nu;
  (void)nb;
  free(u1);
  free(z1);
  free(u);
  free(Bu);
  mb_amg_free(amg);
  mb_csr_free(A);
}

/* Setup, an update and a solve with 1 and with 2 threads: the same bits. */
static void run_threads(int threads, double *X, int *it) {
  omp_set_num_threads(threads);
  double *B;
  mb_csr *A = system_of(1e-2, &B);
  mb_amg *amg;
  mb_amg_opts o = mb_amg_opts_default();
  o.max_coarse = 100;
  assert_int_equal(mb_amg_create(A, &o, &amg), MB_SUCCESS);
  assert_int_equal(mb_csr_combine(A, 1.0, F.mass, -1e-1 * F.area, F.L), MB_SUCCESS);
  assert_int_equal(mb_amg_update(amg, A), MB_SUCCESS);
  *it = solve_pcg(A, B, amg, X);
  mb_amg_free(amg);
  mb_csr_free(A);
  free(B);
  omp_set_num_threads(1);
}

static void test_threads(void **state) {
  (void)state;
  double *X1 = alloc3(), *X2 = alloc3();
  int it1, it2;
  run_threads(1, X1, &it1);
  run_threads(2, X2, &it2);
  printf("1 thread: %d iterations; 2 threads: %d; bitwise equal: %s\n", it1, it2,
         memcmp(X1, X2, (size_t)F.n * 3 * sizeof(double)) ? "no" : "yes");
  assert_int_equal(it1, it2);
  assert_memory_equal(X1, X2, (size_t)F.n * 3 * sizeof(double));
  free(X1);
  free(X2);
}

static void test_update(void **state) {
  (void)state;
  double *B;
  mb_csr *A = system_of(1e-3, &B);
  mb_amg *amg, *fresh;
  assert_int_equal(mb_amg_create(A, NULL, &amg), MB_SUCCESS);
  double *Z0 = alloc3(), *Z1 = alloc3(), *X = alloc3();
  assert_int_equal(mb_amg_apply(amg, 3, B, Z0), MB_SUCCESS);
  /* new values: converges to CHOLMOD's solution; the creation's values
   * again: the creation's bits */
  assert_int_equal(mb_csr_combine(A, 1.0, F.mass, -1e-1 * F.area, F.L), MB_SUCCESS);
  assert_int_equal(mb_amg_update(amg, A), MB_SUCCESS);
  double *Xc = solve_cholesky(A, B);
  const int itu = solve_pcg(A, B, amg, X);
  const double devu = max_diff(X, Xc) / F.diag;
  assert_int_equal(mb_amg_create(A, NULL, &fresh), MB_SUCCESS);
  const int itf = solve_pcg(A, B, fresh, X);
  printf("dt 1e-3 -> 1e-1 x area: updated hierarchy %d iterations (deviation from CHOLMOD "
         "%.2e), fresh hierarchy %d\n",
         itu, devu, itf);
  assert_true(devu <= 1e-8);
  assert_true(itu <= 2 * itf + 2);
  assert_int_equal(mb_csr_combine(A, 1.0, F.mass, -1e-3 * F.area, F.L), MB_SUCCESS);
  assert_int_equal(mb_amg_update(amg, A), MB_SUCCESS);
  assert_int_equal(mb_amg_apply(amg, 3, B, Z1), MB_SUCCESS);
  assert_memory_equal(Z0, Z1, (size_t)F.n * 3 * sizeof(double));
  mb_amg_free(amg);
  mb_amg_free(fresh);
  mb_csr_free(A);
  free(B);
  free(Z0);
  free(Z1);
  free(X);
  free(Xc);
}

/* Every 7th vertex kept in place as the flows' boundary: fixed does:
 * identity row, its column moved to the right-hand side (explicit zeros). */
static void test_fixed_rows(void **state) {
  (void)state;
  double *B;
  mb_csr *A = system_of(1e-2, &B);
  const int64_t n = F.n;
  const double *x = F.mesh->xyz;
  for (int64_t i = 0; i < n; i++) {
    if (i % 7 == 0) {
      for (int32_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++) A->val[e] = 0;
      A->val[A->diag[i]] = 1;
      for (int c = 0; c < 3; c++) B[3 * i + c] = x[3 * i + c];
      continue;
    }
    for (int32_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++) {
      const int32_t j = A->col[e];
      if (j != i && j % 7 == 0) {
        for (int c = 0; c < 3; c++) B[3 * i + c] -= A->val[e] * x[3 * j + c];
        A->val[e] = 0;
      }
    }
  }
  double *Xc = solve_cholesky(A, B), *X = alloc3(), *Xj = alloc3();
  mb_amg *amg;
  assert_int_equal(mb_amg_create(A, NULL, &amg), MB_SUCCESS);
  const int it = solve_pcg(A, B, amg, X), itj = solve_pcg(A, B, NULL, Xj);
  const double dev = max_diff(X, Xc) / F.diag;
  printf("a seventh of the vertices fixed, dt 1e-2 x area: AMG-PCG %d iterations, Jacobi %d, "
         "deviation from CHOLMOD %.2e\n",
         it, itj, dev);
  assert_true(dev <= 1e-8);
  assert_true(it <= itj);
  for (int64_t i = 0; i < n; i += 7)
    for (int c = 0; c < 3; c++) assert_true(X[3 * i + c] == x[3 * i + c]);
  mb_amg_free(amg);
  mb_csr_free(A);
  free(B);
  free(Xc);
  free(X);
  free(Xj);
}

/* ---------------------------------------------------------------- errors */

/* MESHBATCH_AMG overrides the options it names, and refuses what it cannot read. */
static void test_opts_env(void **state) {
  (void)state;
  const mb_amg_opts d = mb_amg_opts_default();
  mb_amg_opts o = d;
  unsetenv("MESHBATCH_AMG");
  assert_int_equal(mb_amg_opts_env(&o), MB_SUCCESS);
  assert_memory_equal(&o, &d, sizeof o);
  setenv("MESHBATCH_AMG", "max_coarse=500,degree=3,theta=0.25,max_levels=6", 1);
  assert_int_equal(mb_amg_opts_env(&o), MB_SUCCESS);
  assert_int_equal(o.max_coarse, 500);
  assert_int_equal(o.degree, 3);
  assert_int_equal(o.max_levels, 6);
  assert_true(o.theta == 0.25);
  const mb_amg_opts keep = o;
  setenv("MESHBATCH_AMG", "degree=3,smoother=jacobi", 1);
  assert_int_equal(mb_amg_opts_env(&o), MB_ERR_ARG);
  mb_test_assert_message_contains("smoother");
  assert_memory_equal(&o, &keep, sizeof o);
  setenv("MESHBATCH_AMG", "degree=two", 1);
  assert_int_equal(mb_amg_opts_env(&o), MB_ERR_ARG);
  mb_test_assert_message_contains("not a number");
  setenv("MESHBATCH_AMG", "degree", 1);
  assert_int_equal(mb_amg_opts_env(&o), MB_ERR_ARG);
  unsetenv("MESHBATCH_AMG");
}

static void test_errors(void **state) {
  (void)state;
  double *B;
  mb_csr *A = system_of(1e-3, &B);
  mb_amg *amg = (mb_amg *)&amg; /* not NULL: must be reset */
  assert_int_equal(mb_amg_create(NULL, NULL, &amg), MB_ERR_ARG);
  assert_int_equal(mb_amg_create(A, NULL, NULL), MB_ERR_ARG);
  mb_amg_opts o = mb_amg_opts_default();
  o.degree = 5;
  assert_int_equal(mb_amg_create(A, &o, &amg), MB_ERR_ARG);
  assert_null(amg);
  mb_test_assert_message_contains("degree");
  o = mb_amg_opts_default();
  o.theta = 1.0;
  assert_int_equal(mb_amg_create(A, &o, &amg), MB_ERR_ARG);
  o = mb_amg_opts_default();
  o.max_levels = MB_AMG_MAX_LEVELS + 1;
  assert_int_equal(mb_amg_create(A, &o, &amg), MB_ERR_ARG);
  /* not square */
  A->ncols++;
  assert_int_equal(mb_amg_create(A, NULL, &amg), MB_ERR_ARG);
  mb_test_assert_message_contains("square");
  A->ncols--;
  /* a diagonal <= 0; a non-finite value */
  const double keep = A->val[A->diag[5]];
  A->val[A->diag[5]] = -keep;
  assert_int_equal(mb_amg_create(A, NULL, &amg), MB_ERR_NUMERIC);
  mb_test_assert_message_contains("row 5");
  assert_null(amg);
  A->val[A->diag[5]] = keep;
  const double keep1 = A->val[A->diag[9] + 1];
  A->val[A->diag[9] + 1] = NAN;
  assert_int_equal(mb_amg_create(A, NULL, &amg), MB_ERR_NUMERIC);
  mb_test_assert_message_contains("non-finite");
  A->val[A->diag[9] + 1] = keep1;
  /* indefinite with a positive diagonal (A_ii = -L_ii, A_ij = -3 L_ij:
   * 1'A1 < 0): found on a coarse level or by the coarse factor */
  {
    double *d2 = malloc((size_t)F.n * sizeof(double));
    assert_non_null(d2);
    for (int64_t i = 0; i < F.n; i++) d2[i] = 2 * F.L->val[F.L->diag[i]];
    mb_csr *In;
    assert_int_equal(mb_csr_pattern(F.adj, F.n, F.n, NULL, &In), MB_SUCCESS);
    assert_int_equal(mb_csr_combine(In, 1.0, d2, -3.0, F.L), MB_SUCCESS);
    for (int64_t i = 0; i < F.n; i++) assert_true(In->val[In->diag[i]] > 0);
    assert_int_equal(mb_amg_create(In, NULL, &amg), MB_ERR_NUMERIC);
    assert_null(amg);
    printf("indefinite, positive diagonal: %s\n", mb_error_message());
    mb_test_assert_message_contains("not positive definite");
    mb_csr_free(In);
    free(d2);
  }
  /* update: another pattern; a bad value, then not usable until a good one */
  assert_int_equal(mb_amg_create(A, NULL, &amg), MB_SUCCESS);
  mb_csr *L2;
  mb_adjacency *adj2;
  mb_mesh *sq = mb_test_mesh_triangles("square", 4, (const double[]){0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0},
                                       2, (const int64_t[]){0, 1, 2, 0, 2, 3});
  assert_int_equal(mb_adjacency_build_opts(sq, MB_ADJ_OPPOSITE, &adj2), MB_SUCCESS);
  assert_int_equal(mb_csr_pattern(adj2, 4, 4, NULL, &L2), MB_SUCCESS);
  assert_int_equal(mb_amg_update(amg, L2), MB_ERR_ARG);
  mb_test_assert_message_contains("pattern");
  double *X = alloc3(), *Z = alloc3();
  A->val[A->diag[3]] = 0;
  assert_int_equal(mb_amg_update(amg, A), MB_ERR_NUMERIC);
  assert_int_equal(mb_amg_apply(amg, 3, B, Z), MB_ERR_ARG);
  mb_test_assert_message_contains("not usable");
  assert_int_equal(mb_csr_combine(A, 1.0, F.mass, -1e-3 * F.area, F.L), MB_SUCCESS);
  assert_int_equal(mb_amg_update(amg, A), MB_SUCCESS);
  assert_int_equal(mb_amg_apply(amg, 3, B, Z), MB_SUCCESS);
  /* apply: columns out of range, aliasing */
  assert_int_equal(mb_amg_apply(amg, 0, B, Z), MB_ERR_ARG);
  assert_int_equal(mb_amg_apply(amg, MB_AMG_MAX_COMP + 1, B, Z), MB_ERR_ARG);
  assert_int_equal(mb_amg_apply(amg, 3, B, B), MB_ERR_ARG);
  /* the PCG: a hierarchy of another size; too many columns */
  mb_amg *small;
  assert_int_equal(mb_csr_uniform_laplacian(adj2, L2), MB_SUCCESS);
  assert_int_equal(mb_csr_combine(L2, 1.0, (const double[]){1, 1, 1, 1}, -1.0, L2), MB_SUCCESS);
  assert_int_equal(mb_amg_create(L2, NULL, &small), MB_SUCCESS);
  mb_pcg_opts po = {.rtol = 1e-10, .max_iter = 100, .amg = small};
  mb_solve_stats st;
  memcpy(X, F.mesh->xyz, (size_t)F.n * 3 * sizeof(double));
  assert_int_equal(mb_pcg_solve(MPI_COMM_SELF, NULL, A, 3, B, X, &po, &st), MB_ERR_ARG);
  mb_test_assert_message_contains("AMG");
  po.amg = amg;
  double *B6 = calloc((size_t)F.n * 6, sizeof(double)), *X6 = calloc((size_t)F.n * 6, sizeof(double));
  assert_non_null(B6);
  assert_non_null(X6);
  assert_int_equal(mb_pcg_solve(MPI_COMM_SELF, NULL, A, 6, B6, X6, &po, &st), MB_ERR_ARG);
  /* a PCG that hits its limit with AMG says so */
  po.max_iter = 1;
  po.rtol = 1e-14;
  assert_int_equal(mb_pcg_solve(MPI_COMM_SELF, NULL, A, 3, B, X, &po, &st), MB_ERR_NUMERIC);
  mb_test_assert_message_contains("did not converge");
  free(B6);
  free(X6);
  mb_amg_free(small);
  mb_amg_free(amg);
  mb_csr_free(L2);
  mb_adjacency_free(adj2);
  mb_mesh_free(sq);
  mb_csr_free(A);
  free(B);
  free(X);
  free(Z);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hierarchy),  cmocka_unit_test(test_time_steps),
      cmocka_unit_test(test_symmetric),  cmocka_unit_test(test_threads),
      cmocka_unit_test(test_update),     cmocka_unit_test(test_fixed_rows),
      cmocka_unit_test(test_errors),     cmocka_unit_test(test_opts_env),
  };
  int rc = cmocka_run_group_tests(tests, setup, teardown);
  MPI_Finalize();
  return rc;
}
