/* The linalg layer on one rank (linalg/mb_csr.h, linalg/mb_solver.h):
 *  - the CSR pattern of a mesh (diagonal at its place, neighbours ascending,
 *    edges mapped back to the adjacency);
 *  - the cotangent Laplacian of a real mesh annihilates constants
 *    (||L 1||_inf <= 1e-12) and is symmetric bit for bit; the uniform one
 *    annihilates constants exactly;
 *  - the barycentric lumped mass sums to the surface area (1e-12 relative);
 *  - CHOLMOD and PCG solve (M - dt L) X = M X (one backward-Euler step of
 *    mean-curvature flow) to their tolerances and agree;
 *  - a zero-area triangle: cotangents 0, L finite; its lone vertices make
 *    M - dt L singular, reported by both solvers;
 *  - errors: a singular matrix (isolated vertex), an indefinite one, a
 *    non-finite position, matrix value or right-hand side, and a PCG that
 *    hits its iteration limit.
 * Meshes: data/meshes/bob.obj (in the repository); spot.obj from the shared
 * data folder where present (its cases are skipped, and say so, where not). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_adjacency.h"
#include "mb_csr.h"
#include "mb_meshfile.h"
#include "mb_solver.h"
#include "mb_testutil.h"

typedef struct fixture {
  mb_mesh *mesh;
  mb_adjacency *adj;
  mb_csr *L;
  double *mass;
  double area; /* sum of the face areas, computed face by face */
  double diag; /* bounding-box diagonal */
} fixture;

static void fixture_free(fixture *f) {
  mb_csr_free(f->L);
  free(f->mass);
  mb_adjacency_free(f->adj);
  mb_mesh_free(f->mesh);
  memset(f, 0, sizeof(*f));
}

/* 0 when the file is absent. */
static int fixture_load(const char *path, fixture *f) {
  memset(f, 0, sizeof(*f));
  if (!mb_test_file_exists(path)) return 0;
  assert_int_equal(mb_meshfile_read(path, &f->mesh), MB_SUCCESS);
  assert_int_equal(mb_adjacency_build_opts(f->mesh, MB_ADJ_OPPOSITE, &f->adj), MB_SUCCESS);
  assert_int_equal(mb_csr_pattern(f->adj, f->mesh->nv, f->mesh->nv, NULL, &f->L), MB_SUCCESS);
  assert_int_equal(mb_csr_cotangent_laplacian(f->adj, f->mesh->xyz, f->L), MB_SUCCESS);
  f->mass = calloc((size_t)f->mesh->nv, sizeof(double));
  assert_non_null(f->mass);
  assert_int_equal(mb_mass_barycentric(f->adj, f->mesh->nv, f->mesh->xyz, f->mass), MB_SUCCESS);
  const double *x = f->mesh->xyz;
  for (int64_t t = 0; t < f->mesh->nf; t++) {
    const int64_t *v = f->mesh->face_indices + f->mesh->face_offsets[t];
    double a[3], b[3];
    for (int k = 0; k < 3; k++) {
      a[k] = x[3 * v[1] + k] - x[3 * v[0] + k];
      b[k] = x[3 * v[2] + k] - x[3 * v[0] + k];
    }
    const double c0 = a[1] * b[2] - a[2] * b[1], c1 = a[2] * b[0] - a[0] * b[2],
                 c2 = a[0] * b[1] - a[1] * b[0];
    f->area += 0.5 * sqrt(c0 * c0 + c1 * c1 + c2 * c2);
  }
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (int64_t i = 0; i < f->mesh->nv; i++)
    for (int k = 0; k < 3; k++) {
      lo[k] = fmin(lo[k], x[3 * i + k]);
      hi[k] = fmax(hi[k], x[3 * i + k]);
    }
  f->diag = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                 (hi[2] - lo[2]) * (hi[2] - lo[2]));
  return 1;
}

static const char *bob_path(char *buf, size_t len) {
  const char *src = getenv("MESHBATCH_SOURCE_DIR");
  snprintf(buf, len, "%s/data/meshes/bob.obj", src ? src : ".");
  return buf;
}

/* The meshes the cases run on: bob always, spot where the data is. */
static int load_mesh(int which, fixture *f) {
  char buf[4096];
  if (which == 0) {
    int ok = fixture_load(bob_path(buf, sizeof buf), f);
    if (!ok) fail_msg("data/meshes/bob.obj not found (MESHBATCH_SOURCE_DIR unset?)");
    return 1;
  }
  if (!mb_test_data_path("meshes/spot.obj", buf, sizeof buf) || !fixture_load(buf, f)) {
    printf("spot.obj: the shared data folder is absent, case skipped\n");
    return 0;
  }
  return 1;
}

/* ------------------------------------------------------------------ pattern */

static void test_pattern(void **state) {
  (void)state;
  fixture f;
  load_mesh(0, &f);
  const mb_csr *A = f.L;
  const mb_adjacency *adj = f.adj;
  assert_int_equal(A->nrows, f.mesh->nv);
  assert_int_equal(A->ncols, f.mesh->nv);
  assert_int_equal(A->nnz, f.mesh->nv + adj->nnz);
  for (int32_t i = 0; i < A->nrows; i++) {
    assert_int_equal(A->rowptr[i + 1] - A->rowptr[i], 1 + adj->row[i + 1] - adj->row[i]);
    assert_int_equal(A->col[A->diag[i]], i);
    assert_int_equal(A->edge[A->diag[i]], -1);
    for (int32_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++) {
      if (e > A->rowptr[i]) assert_true(A->col[e] > A->col[e - 1]);
      if (e != A->diag[i]) {
        assert_true(A->edge[e] >= adj->row[i] && A->edge[e] < adj->row[i + 1]);
        assert_int_equal(adj->col[A->edge[e]], A->col[e]);
      }
    }
  }
  fixture_free(&f);
}

/* ---------------------------------------------------------------- operators */

static void check_laplacian(fixture *f) {
  const mb_csr *L = f->L;
  double *one = malloc((size_t)L->ncols * sizeof(double)), *y = malloc((size_t)L->nrows * sizeof(double));
  assert_non_null(one);
  assert_non_null(y);
  for (int32_t i = 0; i < L->ncols; i++) one[i] = 1.0;
  mb_csr_spmv(L, 1, one, y);
  double worst = 0, maxabs = 0;
  for (int32_t i = 0; i < L->nrows; i++) worst = fmax(worst, fabs(y[i]));
  for (int32_t e = 0; e < L->nnz; e++) maxabs = fmax(maxabs, fabs(L->val[e]));
  printf("%s: %d vertices, ||L 1||_inf = %.3e (largest |L_ij| %.3e)\n", f->mesh->name, L->nrows,
         worst, maxabs);
  assert_true(worst <= 1e-12);
  /* symmetric, bit for bit; negative diagonal */
  long asym = 0;
  for (int32_t i = 0; i < L->nrows; i++) {
    assert_true(L->val[L->diag[i]] < 0);
    for (int32_t e = L->rowptr[i]; e < L->rowptr[i + 1]; e++) {
      const int32_t j = L->col[e];
      int32_t found = -1;
      for (int32_t t = L->rowptr[j]; t < L->rowptr[j + 1]; t++)
        if (L->col[t] == i) found = t;
      assert_true(found >= 0);
      if (memcmp(&L->val[found], &L->val[e], sizeof(double)) != 0) asym++;
    }
  }
  assert_int_equal(asym, 0);
  /* the uniform Laplacian: exactly 0 on constants */
  mb_csr *K;
  assert_int_equal(mb_csr_pattern(f->adj, L->nrows, L->ncols, NULL, &K), MB_SUCCESS);
  assert_int_equal(mb_csr_uniform_laplacian(f->adj, K), MB_SUCCESS);
  mb_csr_spmv(K, 1, one, y);
  for (int32_t i = 0; i < K->nrows; i++) assert_true(y[i] == 0.0);
  mb_csr_free(K);
  free(one);
  free(y);
}

static void test_laplacian_bob(void **state) {
  (void)state;
  fixture f;
  load_mesh(0, &f);
  check_laplacian(&f);
  fixture_free(&f);
}

static void test_laplacian_spot(void **state) {
  (void)state;
  fixture f;
  if (!load_mesh(1, &f)) skip();
  check_laplacian(&f);
  fixture_free(&f);
}

static void check_mass(fixture *f) {
  double s = 0;
  for (int64_t i = 0; i < f->mesh->nv; i++) {
    assert_true(f->mass[i] > 0);
    s += f->mass[i];
  }
  const double rel = fabs(s - f->area) / f->area;
  printf("%s: sum of the lumped mass %.17g, surface area %.17g, relative difference %.3e\n",
         f->mesh->name, s, f->area, rel);
  assert_true(rel <= 1e-12);
}

static void test_mass_bob(void **state) {
  (void)state;
  fixture f;
  load_mesh(0, &f);
  check_mass(&f);
  fixture_free(&f);
}

static void test_mass_spot(void **state) {
  (void)state;
  fixture f;
  if (!load_mesh(1, &f)) skip();
  check_mass(&f);
  fixture_free(&f);
}

/* ------------------------------------------------------------------ solvers */

/* One step of mean-curvature flow, (M - dt L) X' = M X, by both solvers. */
static void check_solvers(fixture *f, double dt_per_area) {
  const int64_t n = f->mesh->nv;
  const double dt = dt_per_area * f->area;
  mb_csr *A;
  assert_int_equal(mb_csr_pattern(f->adj, n, n, NULL, &A), MB_SUCCESS);
  assert_int_equal(mb_csr_combine(A, 1.0, f->mass, -dt, f->L), MB_SUCCESS);
  double *B = malloc((size_t)n * 3 * sizeof(double)), *Xc = malloc((size_t)n * 3 * sizeof(double)),
         *Xp = malloc((size_t)n * 3 * sizeof(double));
  assert_non_null(B);
  assert_non_null(Xc);
  assert_non_null(Xp);
  for (int64_t i = 0; i < n; i++)
    for (int c = 0; c < 3; c++) B[3 * i + c] = f->mass[i] * f->mesh->xyz[3 * i + c];

  mb_cholesky *ch;
  assert_int_equal(mb_cholesky_create(A, &ch), MB_SUCCESS);
  assert_int_equal(mb_cholesky_factor(ch, A), MB_SUCCESS);
  assert_int_equal(mb_cholesky_solve(ch, 3, B, Xc), MB_SUCCESS);
  /* a second factorization of new values on the same analysis */
  assert_int_equal(mb_csr_combine(A, 1.0, f->mass, -0.5 * dt, f->L), MB_SUCCESS);
  assert_int_equal(mb_cholesky_factor(ch, A), MB_SUCCESS);
  double *Xh = malloc((size_t)n * 3 * sizeof(double));
  assert_non_null(Xh);
  assert_int_equal(mb_cholesky_solve(ch, 3, B, Xh), MB_SUCCESS);
  double res[3];
  assert_int_equal(mb_residual(MPI_COMM_SELF, NULL, A, 3, B, Xh, res), MB_SUCCESS);
  for (int c = 0; c < 3; c++) assert_true(res[c] <= 1e-12);
  free(Xh);
  assert_int_equal(mb_csr_combine(A, 1.0, f->mass, -dt, f->L), MB_SUCCESS);
  assert_int_equal(mb_residual(MPI_COMM_SELF, NULL, A, 3, B, Xc, res), MB_SUCCESS);
  double rc = fmax(res[0], fmax(res[1], res[2]));
  assert_true(rc <= 1e-12);

  memcpy(Xp, f->mesh->xyz, (size_t)n * 3 * sizeof(double)); /* warm start */
  mb_pcg_opts o = {.rtol = 1e-10, .max_iter = 10000};
  mb_solve_stats st;
  assert_int_equal(mb_pcg_solve(MPI_COMM_SELF, NULL, A, 3, B, Xp, &o, &st), MB_SUCCESS);
  assert_int_equal(st.method, MB_SOLVER_PCG);
  assert_true(st.residual <= 1e-10);
  assert_true(st.iterations > 0);
  assert_int_equal(mb_residual(MPI_COMM_SELF, NULL, A, 3, B, Xp, res), MB_SUCCESS);
  assert_true(fmax(res[0], fmax(res[1], res[2])) == st.residual);

  double dmax = 0, moved = 0;
  for (int64_t k = 0; k < 3 * n; k++) {
    dmax = fmax(dmax, fabs(Xp[k] - Xc[k]));
    moved = fmax(moved, fabs(Xc[k] - f->mesh->xyz[k]));
  }
  printf("%s: dt = %.3e (%.0e x area): Cholesky residual %.3e; PCG %d iterations, residual "
         "%.3e; max |X_pcg - X_chol| / bbox diagonal = %.3e (step moved %.3e)\n",
         f->mesh->name, dt, dt_per_area, rc, st.iterations, st.residual, dmax / f->diag,
         moved / f->diag);
  assert_true(moved > 0);
  assert_true(dmax / f->diag <= 1e-8);
  mb_cholesky_free(ch);
  mb_csr_free(A);
  free(B);
  free(Xc);
  free(Xp);
}

static void test_solvers_bob(void **state) {
  (void)state;
  fixture f;
  load_mesh(0, &f);
  check_solvers(&f, 1e-5);
  check_solvers(&f, 1e-3);
  fixture_free(&f);
}

static void test_solvers_spot(void **state) {
  (void)state;
  fixture f;
  if (!load_mesh(1, &f)) skip();
  check_solvers(&f, 1e-3);
  fixture_free(&f);
}

/* ------------------------------------------------------------------- errors */

/* Two triangles (a square) and an isolated vertex 4. */
static mb_mesh *square_and_point(void) {
  const double xyz[] = {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 5, 5, 5};
  const int64_t tri[] = {0, 1, 2, 0, 2, 3};
  return mb_test_mesh_triangles("square_and_point", 5, xyz, 2, tri);
}

static void test_error_singular(void **state) {
  (void)state;
  mb_mesh *m = square_and_point();
  mb_adjacency *adj;
  assert_int_equal(mb_adjacency_build_opts(m, MB_ADJ_OPPOSITE, &adj), MB_SUCCESS);
  mb_csr *A;
  assert_int_equal(mb_csr_pattern(adj, 5, 5, NULL, &A), MB_SUCCESS);
  /* -K: positive semi-definite, and row 4 (the isolated vertex) all zero */
  assert_int_equal(mb_csr_uniform_laplacian(adj, A), MB_SUCCESS);
  double d[5] = {0, 0, 0, 0, 0};
  assert_int_equal(mb_csr_combine(A, 0.0, d, -1.0, A), MB_SUCCESS);
  mb_cholesky *ch;
  assert_int_equal(mb_cholesky_create(A, &ch), MB_SUCCESS);
  assert_int_equal(mb_cholesky_factor(ch, A), MB_ERR_NUMERIC);
  mb_test_assert_message_contains("not positive definite");
  double B[15] = {0}, X[15] = {0};
  B[0] = 1;
  assert_int_equal(mb_cholesky_solve(ch, 3, B, X), MB_ERR_ARG); /* not factored */
  mb_pcg_opts o = {.rtol = 1e-10, .max_iter = 100};
  mb_solve_stats st;
  assert_int_equal(mb_pcg_solve(MPI_COMM_SELF, NULL, A, 3, B, X, &o, &st), MB_ERR_NUMERIC);
  mb_test_assert_message_contains("not positive definite");
  /* the Laplacian itself is negative semi-definite */
  assert_int_equal(mb_csr_uniform_laplacian(adj, A), MB_SUCCESS);
  assert_int_equal(mb_cholesky_factor(ch, A), MB_ERR_NUMERIC);
  mb_test_assert_message_contains("not positive definite");
  mb_cholesky_free(ch);
  mb_csr_free(A);
  mb_adjacency_free(adj);
  mb_mesh_free(m);
}

/* A zero-area triangle (1, 4, 5 on a line) beside a square: its
 * cotangents are 0, so L stays finite and annihilates constants, and
 * vertices 4 and 5 get no mass and no edge weight: M - dt L has zero rows
 * there, which both solvers report as not positive definite. */
static void test_degenerate_triangle(void **state) {
  (void)state;
  const double xyz[] = {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 2, 0, 0, 3, 0, 0};
  const int64_t tri[] = {0, 1, 2, 0, 2, 3, 1, 4, 5};
  mb_mesh *m = mb_test_mesh_triangles("degenerate", 6, xyz, 3, tri);
  mb_adjacency *adj;
  assert_int_equal(mb_adjacency_build_opts(m, MB_ADJ_OPPOSITE, &adj), MB_SUCCESS);
  mb_csr *L, *A;
  assert_int_equal(mb_csr_pattern(adj, 6, 6, NULL, &L), MB_SUCCESS);
  assert_int_equal(mb_csr_pattern(adj, 6, 6, NULL, &A), MB_SUCCESS);
  assert_int_equal(mb_csr_cotangent_laplacian(adj, xyz, L), MB_SUCCESS);
  double mass[6], one[6] = {1, 1, 1, 1, 1, 1}, y[6];
  assert_int_equal(mb_mass_barycentric(adj, 6, xyz, mass), MB_SUCCESS);
  mb_csr_spmv(L, 1, one, y);
  for (int i = 0; i < 6; i++) {
    assert_true(fabs(y[i]) <= 1e-12);
    for (int32_t e = L->rowptr[i]; e < L->rowptr[i + 1]; e++) assert_true(isfinite(L->val[e]));
  }
  assert_true(mass[4] == 0.0 && mass[5] == 0.0);
  assert_true(fabs(mass[0] + mass[1] + mass[2] + mass[3] - 1.0) <= 1e-15);
  assert_int_equal(mb_csr_combine(A, 1.0, mass, -0.01, L), MB_SUCCESS);
  mb_cholesky *ch;
  assert_int_equal(mb_cholesky_create(A, &ch), MB_SUCCESS);
  assert_int_equal(mb_cholesky_factor(ch, A), MB_ERR_NUMERIC);
  mb_test_assert_message_contains("not positive definite");
  double B[18], X[18];
  for (int k = 0; k < 18; k++) B[k] = mass[k / 3] * xyz[k], X[k] = xyz[k];
  mb_pcg_opts o = {.rtol = 1e-10, .max_iter = 100};
  mb_solve_stats st;
  assert_int_equal(mb_pcg_solve(MPI_COMM_SELF, NULL, A, 3, B, X, &o, &st), MB_ERR_NUMERIC);
  mb_test_assert_message_contains("not positive definite");
  mb_cholesky_free(ch);
  mb_csr_free(A);
  mb_csr_free(L);
  mb_adjacency_free(adj);
  mb_mesh_free(m);
}

static void test_error_indefinite_pcg(void **state) {
  (void)state;
  /* one triangle, A = [1 2 2; 2 1 2; 2 2 1] (eigenvalues 5, -1, -1) with a
   * positive diagonal; b = (1, -1, 0) lies in the -1 eigenspace, so the
   * first curvature p'Ap is negative */
  const double xyz[] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
  const int64_t tri[] = {0, 1, 2};
  mb_mesh *m = mb_test_mesh_triangles("triangle", 3, xyz, 1, tri);
  mb_adjacency *adj;
  assert_int_equal(mb_adjacency_build_opts(m, MB_ADJ_OPPOSITE, &adj), MB_SUCCESS);
  mb_csr *A;
  assert_int_equal(mb_csr_pattern(adj, 3, 3, NULL, &A), MB_SUCCESS);
  for (int32_t e = 0; e < A->nnz; e++) A->val[e] = 2.0;
  for (int i = 0; i < 3; i++) A->val[A->diag[i]] = 1.0;
  double B[3] = {1, -1, 0}, X[3] = {0, 0, 0};
  mb_pcg_opts o = {.rtol = 1e-10, .max_iter = 100};
  mb_solve_stats st;
  assert_int_equal(mb_pcg_solve(MPI_COMM_SELF, NULL, A, 1, B, X, &o, &st), MB_ERR_NUMERIC);
  mb_test_assert_message_contains("not positive definite");
  mb_cholesky *ch;
  assert_int_equal(mb_cholesky_create(A, &ch), MB_SUCCESS);
  assert_int_equal(mb_cholesky_factor(ch, A), MB_ERR_NUMERIC);
  mb_test_assert_message_contains("not positive definite");
  mb_cholesky_free(ch);
  mb_csr_free(A);
  mb_adjacency_free(adj);
  mb_mesh_free(m);
}

static void test_error_nonfinite(void **state) {
  (void)state;
  fixture f;
  load_mesh(0, &f);
  const int64_t n = f.mesh->nv;
  /* a NaN coordinate: the assembly names a row */
  double *x = malloc((size_t)n * 3 * sizeof(double));
  assert_non_null(x);
  memcpy(x, f.mesh->xyz, (size_t)n * 3 * sizeof(double));
  x[3 * 17 + 1] = NAN;
  assert_int_equal(mb_csr_cotangent_laplacian(f.adj, x, f.L), MB_ERR_NUMERIC);
  mb_test_assert_message_contains("non-finite");
  double *mass = malloc((size_t)n * sizeof(double));
  assert_non_null(mass);
  assert_int_equal(mb_mass_barycentric(f.adj, n, x, mass), MB_ERR_NUMERIC);
  mb_test_assert_message_contains("non-finite");
  free(mass);
  /* a NaN in the matrix */
  assert_int_equal(mb_csr_cotangent_laplacian(f.adj, f.mesh->xyz, f.L), MB_SUCCESS);
  mb_csr *A;
  assert_int_equal(mb_csr_pattern(f.adj, n, n, NULL, &A), MB_SUCCESS);
  assert_int_equal(mb_csr_combine(A, 1.0, f.mass, -1e-3 * f.area, f.L), MB_SUCCESS);
  double *B = malloc((size_t)n * 3 * sizeof(double));
  assert_non_null(B);
  for (int64_t k = 0; k < 3 * n; k++) B[k] = f.mass[k / 3] * f.mesh->xyz[k];
  mb_cholesky *ch;
  assert_int_equal(mb_cholesky_create(A, &ch), MB_SUCCESS);
  const double keep = A->val[A->diag[5]];
  A->val[A->diag[5]] = INFINITY;
  assert_int_equal(mb_cholesky_factor(ch, A), MB_ERR_NUMERIC);
  mb_test_assert_message_contains("non-finite");
  mb_pcg_opts o = {.rtol = 1e-10, .max_iter = 1000};
  mb_solve_stats st;
  memcpy(x, f.mesh->xyz, (size_t)n * 3 * sizeof(double));
  assert_int_equal(mb_pcg_solve(MPI_COMM_SELF, NULL, A, 3, B, x, &o, &st), MB_ERR_NUMERIC);
  mb_test_assert_message_contains("non-finite");
  A->val[A->diag[5]] = keep;
  /* a NaN in the right-hand side */
  assert_int_equal(mb_cholesky_factor(ch, A), MB_SUCCESS);
  B[7] = NAN;
  assert_int_equal(mb_cholesky_solve(ch, 3, B, x), MB_ERR_NUMERIC);
  mb_test_assert_message_contains("non-finite");
  memcpy(x, f.mesh->xyz, (size_t)n * 3 * sizeof(double));
  assert_int_equal(mb_pcg_solve(MPI_COMM_SELF, NULL, A, 3, B, x, &o, &st), MB_ERR_NUMERIC);
  mb_test_assert_message_contains("non-finite");
  mb_cholesky_free(ch);
  mb_csr_free(A);
  free(B);
  free(x);
  fixture_free(&f);
}

static void test_error_iteration_limit(void **state) {
  (void)state;
  fixture f;
  load_mesh(0, &f);
  const int64_t n = f.mesh->nv;
  mb_csr *A;
  assert_int_equal(mb_csr_pattern(f.adj, n, n, NULL, &A), MB_SUCCESS);
  assert_int_equal(mb_csr_combine(A, 1.0, f.mass, -1e-2 * f.area, f.L), MB_SUCCESS);
  double *B = malloc((size_t)n * 3 * sizeof(double)), *X = calloc((size_t)n * 3, sizeof(double));
  assert_non_null(B);
  assert_non_null(X);
  for (int64_t k = 0; k < 3 * n; k++) B[k] = f.mass[k / 3] * f.mesh->xyz[k];
  mb_pcg_opts o = {.rtol = 1e-12, .max_iter = 5};
  mb_solve_stats st;
  assert_int_equal(mb_pcg_solve(MPI_COMM_SELF, NULL, A, 3, B, X, &o, &st), MB_ERR_NUMERIC);
  printf("iteration limit: %s (stats: %d iterations, residual %.3e)\n", mb_error_message(),
         st.iterations, st.residual);
  mb_test_assert_message_contains("did not converge");
  mb_test_assert_message_contains("limit of 5");
  assert_int_equal(st.iterations, 5);
  assert_true(st.residual > 1e-12 && isfinite(st.residual));
  /* a zero right-hand side column gives x = 0 at once */
  for (int64_t i = 0; i < n; i++) B[3 * i + 1] = 0, X[3 * i + 1] = 1;
  o.max_iter = 10000;
  o.rtol = 1e-10;
  assert_int_equal(mb_pcg_solve(MPI_COMM_SELF, NULL, A, 3, B, X, &o, &st), MB_SUCCESS);
  for (int64_t i = 0; i < n; i++) assert_true(X[3 * i + 1] == 0.0);
  mb_csr_free(A);
  free(B);
  free(X);
  fixture_free(&f);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pattern),          cmocka_unit_test(test_laplacian_bob),
      cmocka_unit_test(test_laplacian_spot),   cmocka_unit_test(test_mass_bob),
      cmocka_unit_test(test_mass_spot),        cmocka_unit_test(test_solvers_bob),
      cmocka_unit_test(test_solvers_spot),     cmocka_unit_test(test_degenerate_triangle),
      cmocka_unit_test(test_error_singular),
      cmocka_unit_test(test_error_indefinite_pcg), cmocka_unit_test(test_error_nonfinite),
      cmocka_unit_test(test_error_iteration_limit)};
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  MPI_Finalize();
  return rc;
}
