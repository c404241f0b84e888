/* The pieces of willmore_flow (src/ops/willmore/mb_willmore.h) on one rank:
 *  - the projection of step 1: the basis {1, N_x, N_y, N_z} is orthonormal
 *    in the mass inner product (1e-12) and a projected rho keeps no
 *    component along it (|<rho, u_k>_M| <= 1e-12 ||rho||_M), on a real mesh
 *    (data/meshes/bob.obj) with a random rho; a rho inside the span
 *    projects to zero (1e-12);
 *  - the Dirac operator of a sphere (icosphere, 2,562 vertices) with
 *    rho = 0: the real 4n x 4n matrix is symmetric bit for bit, its real
 *    part (the (0, 0) entry of each block) is -L (the cotangent Laplacian,
 *    1e-12 relative), its smallest eigenvalue is 0 (the constant
 *    quaternions are its kernel): inverse iteration finds an eigenvalue
 *    <= 1e-12 of the largest diagonal and a constant eigenvector (1e-9);
 *    with rho != 0 the smallest eigenvalue is positive;
 *  - inverse iteration that cannot reach its tolerance within its limit is
 *    MB_ERR_NUMERIC with a message naming the residual and the limit;
 *  - the run: the regular icosahedron (every vertex alike, so its discrete
 *    mean curvature is constant and the projected rho zero) is a fixed
 *    point: 5 steps of time_step 0.5 move no vertex more than 1e-9 of the
 *    bounding-box diagonal; the discrete Willmore energy of a round
 *    icosphere (2,562 vertices) is within 1 % of 4 pi;
 *  - bad inputs to the run: a boundary, a non-manifold edge, a degenerate
 *    triangle, a NaN coordinate, time_step <= 0: each an error whose
 *    message says what. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_adjacency.h"
#include "mb_csr.h"
#include "mb_generate.h"
#include "mb_meshfile.h"
#include "mb_testutil.h"
#include "mb_willmore.h"

static uint64_t rng = 88172645463325252ull;
static double urand(void) { /* xorshift64, in [-1, 1) */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static double dot_m(int64_t n, const double *m, const double *a, const double *b) {
  double s = 0.0;
  for (int64_t i = 0; i < n; i++) s += m[i] * a[i] * b[i];
  return s;
}

/* Area-weighted unit normals (as the op computes them). */
static void normals(const mb_mesh *m, double *N) {
  memset(N, 0, sizeof(double) * 3 * (size_t)m->nv);
  for (int64_t f = 0; f < m->nf; f++) {
    const int64_t *t = m->face_indices + 3 * f;
    const double *x = m->xyz;
    double u[3], v[3];
    for (int k = 0; k < 3; k++) {
      u[k] = x[3 * t[1] + k] - x[3 * t[0] + k];
      v[k] = x[3 * t[2] + k] - x[3 * t[0] + k];
    }
    const double c[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2],
                         u[0] * v[1] - u[1] * v[0]};
    for (int a = 0; a < 3; a++)
      for (int k = 0; k < 3; k++) N[3 * t[a] + k] += c[k];
  }
  for (int64_t i = 0; i < m->nv; i++) {
    const double l = sqrt(N[3 * i] * N[3 * i] + N[3 * i + 1] * N[3 * i + 1] +
                          N[3 * i + 2] * N[3 * i + 2]);
    for (int k = 0; k < 3; k++) N[3 * i + k] /= l;
  }
}

static void test_projection(void **state) {
  (void)state;
  mb_mesh *m = NULL;
  mb_adjacency *adj = NULL;
  mb_test_read_repo_mesh("bob.obj", &m, &adj);
  const int64_t n = m->nv;
  double *mass = malloc(sizeof(double) * (size_t)n), *N = malloc(sizeof(double) * 3 * (size_t)n);
  double *u = malloc(sizeof(double) * 4 * (size_t)n), *rho = malloc(sizeof(double) * (size_t)n);
  assert_true(mass && N && u && rho);
  assert_int_equal(mb_mass_barycentric(adj, n, m->xyz, mass), MB_SUCCESS);
  normals(m, N);
  assert_int_equal(mb_willmore_basis(n, mass, N, u), MB_SUCCESS);
  double worst = 0.0;
  for (int k = 0; k < 4; k++)
    for (int l = 0; l <= k; l++) {
      const double g = dot_m(n, mass, u + k * n, u + l * n);
      worst = fmax(worst, fabs(g - (k == l ? 1.0 : 0.0)));
    }
  printf("projection: basis orthonormality error %.3g\n", worst);
  assert_true(worst <= 1e-12);
  /* a random rho, with a large component along the basis */
  for (int64_t i = 0; i < n; i++) rho[i] = urand() + 3.0 + 2.0 * N[3 * i + 1];
  const double before = sqrt(dot_m(n, mass, rho, rho));
  assert_int_equal(mb_willmore_project(n, mass, N, rho), MB_SUCCESS);
  double comp = 0.0;
  for (int k = 0; k < 4; k++) comp = fmax(comp, fabs(dot_m(n, mass, rho, u + k * n)));
  const double after = sqrt(dot_m(n, mass, rho, rho));
  printf("projection: ||rho||_M %.6g before, %.6g after; largest basis component after %.3g "
         "(%.3g relative)\n",
         before, after, comp, comp / before);
  assert_true(comp <= 1e-12 * before);
  assert_true(after > 0.1 * before && after < before);
  /* inside the span: nothing left */
  for (int64_t i = 0; i < n; i++) rho[i] = 2.0 - N[3 * i] + 0.5 * N[3 * i + 2];
  const double inside = sqrt(dot_m(n, mass, rho, rho));
  assert_int_equal(mb_willmore_project(n, mass, N, rho), MB_SUCCESS);
  const double left = sqrt(dot_m(n, mass, rho, rho));
  printf("projection: a rho in the span, ||rho||_M %.6g, left %.3g\n", inside, left);
  assert_true(left <= 1e-12 * inside);
  /* bad mass */
  mass[3] = 0.0;
  assert_int_equal(mb_willmore_project(n, mass, N, rho), MB_ERR_NUMERIC);
  mb_test_assert_message_contains("mass");
  free(mass);
  free(N);
  free(u);
  free(rho);
  mb_adjacency_free(adj);
  mb_mesh_free(m);
}

static void test_dirac_sphere(void **state) {
  (void)state;
  mb_mesh *m = NULL;
  assert_int_equal(mb_generate_sphere(2562, 0.0, 1, &m), MB_SUCCESS);
  assert_int_equal(m->nv, 2562);
  mb_adjacency *adj = NULL;
  assert_int_equal(mb_adjacency_build(m, &adj), MB_SUCCESS);
  const int64_t n = m->nv;
  mb_willmore_dirac *d = NULL;
  assert_int_equal(mb_willmore_dirac_create(adj, m->nf, m->face_indices, &d), MB_SUCCESS);
  assert_int_equal(mb_willmore_dirac_assemble(d, m->xyz, NULL), MB_SUCCESS);
  const mb_csr *D = mb_willmore_dirac_matrix(d);
  assert_int_equal(D->nrows, 4 * n);
  /* symmetric bit for bit */
  int64_t asym = 0;
  for (int32_t i = 0; i < D->nrows; i++)
    for (int32_t e = D->rowptr[i]; e < D->rowptr[i + 1]; e++) {
      const int32_t j = D->col[e];
      int32_t t = D->rowptr[j];
      while (t < D->rowptr[j + 1] && D->col[t] != i) t++;
      assert_true(t < D->rowptr[j + 1]);
      if (D->val[t] != D->val[e]) asym++;
    }
  assert_int_equal(asym, 0);
  /* real part = -L */
  mb_csr *L = NULL;
  assert_int_equal(mb_csr_pattern(adj, n, n, NULL, &L), MB_SUCCESS);
  assert_int_equal(mb_csr_cotangent_laplacian(adj, m->xyz, L), MB_SUCCESS);
  double lmax = 0.0, diff = 0.0;
  for (int64_t i = 0; i < n; i++)
    for (int32_t e = L->rowptr[i]; e < L->rowptr[i + 1]; e++) {
      const int32_t j = L->col[e];
      int32_t t = D->rowptr[4 * i];
      while (D->col[t] != 4 * j) t++;
      lmax = fmax(lmax, fabs(L->val[e]));
      diff = fmax(diff, fabs(D->val[t] + L->val[e]));
    }
  printf("dirac: real part vs -L: largest difference %.3g (largest |L_ij| %.3g)\n", diff, lmax);
  assert_true(diff <= 1e-12 * lmax);
  /* smallest eigenvalue 0, constant eigenvector */
  double *lambda = malloc(sizeof(double) * 4 * (size_t)n);
  assert_non_null(lambda);
  double ev = 1, res = 1;
  int it = 0;
  assert_int_equal(mb_willmore_dirac_eigen(d, 1e-12, 20, lambda, &ev, &it, &res), MB_SUCCESS);
  double dmax = 0.0;
  for (int32_t i = 0; i < D->nrows; i++) dmax = fmax(dmax, D->val[D->diag[i]]);
  double dev = 0.0;
  for (int64_t i = 0; i < n; i++)
    for (int k = 0; k < 4; k++) dev = fmax(dev, fabs(lambda[4 * i + k] - lambda[k]));
  const double c = sqrt(lambda[0] * lambda[0] + lambda[1] * lambda[1] + lambda[2] * lambda[2] +
                        lambda[3] * lambda[3]);
  printf("dirac: rho = 0: smallest eigenvalue %.3g (largest diagonal %.3g), %d solves, "
         "residual %.3g; eigenvector's largest deviation from constant %.3g (|lambda_i| %.3g)\n",
         ev, dmax, it, res, dev, c);
  assert_true(fabs(ev) <= 1e-12 * dmax);
  assert_true(dev <= 1e-9 * c);
  /* rho != 0, not in the projection's complement: no longer a kernel */
  double *rho = malloc(sizeof(double) * (size_t)n);
  assert_non_null(rho);
  for (int64_t i = 0; i < n; i++) rho[i] = 0.3 * m->xyz[3 * i] * m->xyz[3 * i + 1];
  assert_int_equal(mb_willmore_dirac_assemble(d, m->xyz, rho), MB_SUCCESS);
  assert_int_equal(mb_willmore_dirac_eigen(d, 1e-10, 100, lambda, &ev, &it, &res), MB_SUCCESS);
  printf("dirac: rho = 0.3 x y: smallest eigenvalue %.3g, %d solves, residual %.3g\n", ev, it,
         res);
  assert_true(ev > 1e-9 * dmax);
  /* a limit too small for the tolerance: an error saying so */
  assert_int_equal(mb_willmore_dirac_eigen(d, 1e-300, 2, lambda, &ev, &it, &res),
                   MB_ERR_NUMERIC);
  mb_test_assert_message_contains("did not converge");
  assert_int_equal(it, 2);
  free(rho);
  free(lambda);
  mb_csr_free(L);
  mb_willmore_dirac_free(d);
  mb_adjacency_free(adj);
  mb_mesh_free(m);
}

static mb_error run_solver(mb_mesh *m, double tau, int steps, int solver,
                           mb_willmore_report *rep) {
  mb_adjacency *adj = NULL;
  mb_error e = mb_adjacency_build(m, &adj);
  if (e) return e;
  mb_willmore_params p = {tau, steps, 1e-10, 100, solver};
  mb_willmore_mesh wm = {m->nv, m->nf, m->face_indices, adj, m->xyz, m->name, NULL};
  e = mb_willmore_run_cpu(&p, &wm, rep);
  mb_adjacency_free(adj);
  return e;
}

static mb_error run_mesh(mb_mesh *m, double tau, int steps, mb_willmore_report *rep) {
  mb_adjacency *adj = NULL;
  mb_error e = mb_adjacency_build(m, &adj);
  if (e) return e;
  mb_willmore_params p = {tau, steps, 1e-10, 100, MB_WILLMORE_CHOLESKY};
  mb_willmore_mesh wm = {m->nv, m->nf, m->face_indices, adj, m->xyz, m->name, NULL};
  e = mb_willmore_run_cpu(&p, &wm, rep);
  mb_adjacency_free(adj);
  return e;
}

static void test_fixed_point(void **state) {
  (void)state;
  mb_mesh *m = NULL;
  assert_int_equal(mb_generate_sphere(12, 0.0, 1, &m), MB_SUCCESS);
  assert_int_equal(m->nv, 12);
  double *x0 = malloc(sizeof(double) * 36);
  assert_non_null(x0);
  memcpy(x0, m->xyz, sizeof(double) * 36);
  const double diag = mb_mesh_bbox_diagonal(m);
  mb_willmore_step st[5];
  mb_willmore_report rep = {.step = st};
  assert_int_equal(run_mesh(m, 0.5, 5, &rep), MB_SUCCESS);
  assert_int_equal(rep.steps, 5);
  double mv = 0.0;
  for (int i = 0; i < 36; i++) mv = fmax(mv, fabs(m->xyz[i] - x0[i]));
  printf("fixed point: icosahedron, 5 steps of 0.5: largest move %.3g of the diagonal %.3g; "
         "energy %.10g -> %.10g\n",
         mv, diag, rep.energy0, st[4].energy);
  assert_true(mv <= 1e-9 * diag);
  /* sigma_1 / sigma_2 from K + 1/K = s: K - 1 ~ sqrt(s - 2), so rounding shows as 1e-8 */
  for (int s = 0; s < 5; s++) assert_true(st[s].qc_max <= 1.0 + 1e-6);
  free(x0);
  mb_mesh_free(m);
  /* the energy of a round icosphere */
  assert_int_equal(mb_generate_sphere(2562, 0.0, 1, &m), MB_SUCCESS);
  assert_int_equal(run_mesh(m, 0.1, 1, &rep), MB_SUCCESS);
  printf("icosphere 2562: Willmore energy %.10g, 4 pi %.10g (%.3g %%)\n", rep.energy0, 4 * M_PI,
         100 * (rep.energy0 / (4 * M_PI) - 1));
  assert_true(fabs(rep.energy0 / (4 * M_PI) - 1) < 0.01);
  assert_true(st[0].energy <= rep.energy0);
  mb_mesh_free(m);
}

static void expect_error(const char *name, int64_t nv, const double *xyz, int64_t nf,
                         const int64_t *tri, double tau, mb_error code, const char *words) {
  mb_mesh *m = mb_test_mesh_triangles(name, nv, xyz, nf, tri);
  assert_non_null(m);
  mb_willmore_step st[2];
  mb_willmore_report rep = {.step = st};
  const mb_error e = run_mesh(m, tau, 2, &rep);
  printf("bad input %s: %s\n", name, mb_error_message());
  assert_int_equal(e, code);
  mb_test_assert_message_contains(words);
  mb_mesh_free(m);
}

static void test_bad_inputs(void **state) {
  (void)state;
  mb_mesh *ico = NULL;
  assert_int_equal(mb_generate_sphere(12, 0.0, 1, &ico), MB_SUCCESS);
  const int64_t nv = ico->nv, nf = ico->nf;
  double *x = malloc(sizeof(double) * 3 * (size_t)(nv + 3));
  int64_t *t = malloc(sizeof(int64_t) * 3 * (size_t)(nf + 2));
  assert_true(x && t);
  memcpy(x, ico->xyz, sizeof(double) * 3 * (size_t)nv);
  memcpy(t, ico->face_indices, sizeof(int64_t) * 3 * (size_t)nf);
  /* open: one triangle less */
  expect_error("open", nv, x, nf - 1, t, 0.1, MB_ERR_UNSUPPORTED, "boundary edge");
  /* non-manifold: a third triangle on the first triangle's edge, to a new vertex */
  x[3 * nv] = 3, x[3 * nv + 1] = 3, x[3 * nv + 2] = 3;
  t[3 * nf] = t[0], t[3 * nf + 1] = t[1], t[3 * nf + 2] = nv;
  expect_error("nonmanifold", nv + 1, x, nf + 1, t, 0.1, MB_ERR_UNSUPPORTED, "non-manifold");
  /* inconsistent orientation: one triangle flipped */
  int64_t *tf = malloc(sizeof(int64_t) * 3 * (size_t)nf);
  assert_non_null(tf);
  memcpy(tf, t, sizeof(int64_t) * 3 * (size_t)nf);
  tf[0] = t[1], tf[1] = t[0];
  expect_error("flipped", nv, x, nf, tf, 0.1, MB_ERR_UNSUPPORTED, "not consistently oriented");
  free(tf);
  /* NaN coordinate */
  x[4] = NAN;
  expect_error("nan", nv, x, nf, t, 0.1, MB_ERR_NUMERIC, "non-finite");
  memcpy(x, ico->xyz, sizeof(double) * 3 * (size_t)nv);
  /* degenerate: a tetrahedron with one vertex moved into the plane of a face's edge
   * (vertex 3 onto the midpoint of edge 0-1: triangle (0, 1, 3) has zero area) */
  const double tx[12] = {0, 0, 0, 2, 0, 0, 0, 2, 0, 1, 0, 0};
  const int64_t tt[12] = {0, 2, 1, 0, 1, 3, 1, 2, 3, 0, 3, 2};
  expect_error("degenerate", 4, tx, 4, tt, 0.1, MB_ERR_NUMERIC, "degenerate");
  /* time_step <= 0 */
  expect_error("tau0", nv, x, nf, t, 0.0, MB_ERR_ARG, "time_step");
  expect_error("tauneg", nv, x, nf, t, -1.0, MB_ERR_ARG, "time_step");
  /* the regular tetrahedron itself runs */
  const double rx[12] = {1, 1, 1, 1, -1, -1, -1, 1, -1, -1, -1, 1};
  mb_mesh *tet = mb_test_mesh_triangles("tet", 4, rx, 4, tt);
  mb_willmore_step st[2];
  mb_willmore_report rep = {.step = st};
  assert_int_equal(run_mesh(tet, 0.1, 2, &rep), MB_SUCCESS);
  mb_mesh_free(tet);
  free(x);
  free(t);
  mb_mesh_free(ico);
}

/* 5 steps of tau on m by the Cholesky and the iterative solver: positions
 * within 1e-9 of the bounding-box diagonal, energies within 1e-9 relative. */
static void agree(mb_mesh *m, double tau) {
  const int64_t n = m->nv;
  const double diag = mb_mesh_bbox_diagonal(m);
  double *x0 = malloc(sizeof(double) * 3 * (size_t)n), *xc = malloc(sizeof(double) * 3 * (size_t)n);
  assert_true(x0 && xc);
  memcpy(x0, m->xyz, sizeof(double) * 3 * (size_t)n);
  mb_willmore_step sc[5], si[5];
  mb_willmore_report rc = {.step = sc}, ri = {.step = si};
  assert_int_equal(run_solver(m, tau, 5, MB_WILLMORE_CHOLESKY, &rc), MB_SUCCESS);
  memcpy(xc, m->xyz, sizeof(double) * 3 * (size_t)n);
  memcpy(m->xyz, x0, sizeof(double) * 3 * (size_t)n);
  assert_int_equal(run_solver(m, tau, 5, MB_WILLMORE_ITERATIVE, &ri), MB_SUCCESS);
  assert_int_equal(rc.steps, 5);
  assert_int_equal(ri.steps, 5);
  double dx = 0.0, mv = 0.0;
  for (int64_t i = 0; i < 3 * n; i++) {
    dx = fmax(dx, fabs(m->xyz[i] - xc[i]));
    mv = fmax(mv, fabs(xc[i] - x0[i]));
  }
  printf("solvers: %s (%lld vertices), 5 steps of %g: cholesky against iterative: largest "
         "difference %.3g (%.3g of the diagonal %.4g; the flow moved a vertex %.3g); energy "
         "%.12g and %.12g\n",
         m->name, (long long)n, tau, dx, dx / diag, diag, mv, sc[4].energy, si[4].energy);
  for (int s = 0; s < 5; s++) {
    printf("  step %d: inverse iterations %d and %d, PCG iterations %d (eigen) %d (Poisson), "
           "eigenvalue %.9g and %.9g\n",
           s + 1, sc[s].iterations, si[s].iterations, si[s].inner_iterations,
           si[s].poisson_iterations, sc[s].eigenvalue, si[s].eigenvalue);
    assert_false(sc[s].iterative);
    assert_true(si[s].iterative && si[s].inner_iterations > 0 && si[s].poisson_iterations > 0);
    assert_true(fabs(sc[s].energy - si[s].energy) <= 1e-9 * fabs(sc[s].energy));
  }
  assert_true(dx <= 1e-9 * diag);
  free(x0);
  free(xc);
}

static void test_solvers_agree(void **state) {
  (void)state;
  mb_mesh *m = NULL;
  mb_test_read_repo_mesh("spot.obj", &m, NULL);
  agree(m, 0.05);
  mb_mesh_free(m);
  /* an icosphere, round and with radial bumps */
  assert_int_equal(mb_generate_sphere(2562, 0.0, 1, &m), MB_SUCCESS);
  agree(m, 0.1);
  for (int64_t i = 0; i < m->nv; i++)
    for (int k = 0; k < 3; k++) m->xyz[3 * i + k] *= 1.0 + 0.05 * sin(7.0 * (double)i);
  agree(m, 0.1);
  mb_mesh_free(m);
  /* auto: cholesky below MB_WILLMORE_AUTO_VERTICES vertices, iterative from there */
  assert_int_equal(mb_willmore_solver_for(MB_WILLMORE_AUTO, MB_WILLMORE_AUTO_VERTICES - 1, 0),
                   MB_WILLMORE_CHOLESKY);
  assert_int_equal(mb_willmore_solver_for(MB_WILLMORE_AUTO, MB_WILLMORE_AUTO_VERTICES, 0),
                   MB_WILLMORE_ITERATIVE);
  assert_int_equal(mb_willmore_solver_for(MB_WILLMORE_CHOLESKY, 10000000, 1), MB_WILLMORE_CHOLESKY);
  assert_int_equal(mb_willmore_solver_for(MB_WILLMORE_ITERATIVE, 12, 0), MB_WILLMORE_ITERATIVE);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_projection),
      cmocka_unit_test(test_dirac_sphere),
      cmocka_unit_test(test_fixed_point),
      cmocka_unit_test(test_bad_inputs),
      cmocka_unit_test(test_solvers_agree),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  MPI_Finalize();
  return rc;
}
