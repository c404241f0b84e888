/* meshbatch GPU test of the linalg layer (cuda/linalg/mb_linalg_cuda.h):
 *  - the device cotangent Laplacian, barycentric mass and M - dt L equal
 *    the CPU layer's (linalg/mb_csr.h) bit for bit on a noisy sphere, a
 *    noisy open grid, a mesh with a non-manifold edge, an isolated vertex
 *    and a degenerate triangle, and spot.obj; L 1 = 0 to 1e-12 and the mass
 *    sums to the area;
 *  - the row product, staged in shared memory and not, equals
 *    mb_csr_spmv bit for bit (also on 300 rows of 40 entries), and
 *    cuSPARSE's SpMV/SpMM agree with it to 1e-12;
 *  - (M - dt L) X = M X on spot.obj: PCG (cuSPARSE and row products) and
 *    sparse Cholesky (csrchol, METIS order) reach 1e-10 relative residual,
 *    checked again on the host (mb_residual), and agree with each other and
 *    with CHOLMOD within 1e-8; PCG with the row product is the CPU's
 *    mb_pcg_solve bit for bit, in as many iterations; a warm start from the
 *    solution takes 0 iterations;
 *  - errors: PCG over its iteration limit, not-SPD matrices (negative
 *    diagonal; positive diagonal but indefinite) for PCG and Cholesky,
 *    non-finite positions and right-hand sides, a partitioned pattern for
 *    Cholesky, a solve before a factor, an adjacency without opposites;
 *  - the device AMG (mb_cuda_amg_*): its V-cycle equals the host's
 *    mb_amg_apply within 1e-10 (the coarsest level by a dense inverse on
 *    the device, CHOLMOD on the host); the AMG-preconditioned device PCG
 *    reaches 1e-10 (checked on the host) within two iterations of the
 *    host's AMG PCG and in under a third of Jacobi's; an update with another
 *    matrix, too many columns and a host hierarchy given to the device PCG
 *    are refused.
 * Exits 77 (skip) without a CUDA device. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_linalg_util.h"
#include "gpu_meshes.h"
#include "mb_cotan.h"
#include "mb_linalg_cuda.h"
#include "mb_meshfile.h"
#include "mb_solver.h"
#include "mb_testutil.h"

typedef struct sys {
  mb_mesh *mesh;
  mb_adjacency *adj;
  mb_csr *A, *S;       /* host L and M - dt L (the CPU layer's) */
  double *mass;        /* host mass [nv] */
  mb_cuda_csr *dL, *dS; /* device Laplacian, system matrix */
  double *dxyz, *dmass;
} sys;

static mb_mesh *read_spot(void) {
  char buf[4096];
  const char *src = getenv("MESHBATCH_SOURCE_DIR");
  assert_non_null(src);
  snprintf(buf, sizeof buf, "%s/data/meshes/spot.obj", src);
  mb_mesh *m = NULL;
  if (mb_meshfile_read(buf, &m) != MB_SUCCESS)
    fail_msg("spot.obj: %s does not read: %s", buf, mb_error_message());
  return m;
}

static double mesh_area(const mb_mesh *m) {
  double a = 0;
  for (int64_t f = 0; f < m->nf; f++) {
    const int64_t *v = m->face_indices + m->face_offsets[f];
    const int64_t n = m->face_offsets[f + 1] - m->face_offsets[f];
    for (int64_t t = 1; t + 1 < n; t++) {
      double a2;
      MB_TRIANGLE_AREA2(double, m->xyz, v[0], v[t], v[t + 1], a2);
      a += a2 / 2;
    }
  }
  return a;
}

/* Assemble on both sides and compare bit for bit; S = M - dt L. */
static void sys_build(sys *s, mb_mesh *mesh, double dt) {
  memset(s, 0, sizeof *s);
  s->mesh = mesh;
  s->adj = mb_gpu_adjacency(mesh);
  const int64_t nv = mesh->nv;
  assert_int_equal(mb_csr_pattern(s->adj, nv, nv, NULL, &s->A), MB_SUCCESS);
  assert_int_equal(mb_csr_pattern(s->adj, nv, nv, NULL, &s->S), MB_SUCCESS);
  s->mass = calloc((size_t)nv + 1, sizeof *s->mass);
  if (mb_csr_cotangent_laplacian(s->adj, mesh->xyz, s->A) != MB_SUCCESS ||
      mb_mass_barycentric(s->adj, nv, mesh->xyz, s->mass) != MB_SUCCESS ||
      mb_csr_combine(s->S, 1.0, s->mass, -dt, s->A) != MB_SUCCESS)
    fail_msg("%s: CPU assembly: %s", mesh->name, mb_error_message());
  assert_int_equal(mb_cuda_csr_create(s->A, s->adj, &s->dL), MB_SUCCESS);
  assert_int_equal(mb_cuda_csr_create(s->A, s->adj, &s->dS), MB_SUCCESS);
  s->dxyz = gl_dev_upload(mesh->xyz, 3 * (size_t)nv);
  s->dmass = gl_dev_alloc((size_t)nv);
  mb_error e = mb_cuda_cotangent_laplacian(s->dL, s->dxyz, s->dmass);
  if (e != MB_SUCCESS) fail_msg("%s: assembly: %s", mesh->name, mb_error_message());
  const int32_t nnz = s->A->nnz;
  double *val = calloc((size_t)nnz + 1, sizeof *val), *mass = calloc((size_t)nv + 1, 8);
  assert_int_equal(mb_cuda_csr_download(s->dL, val), MB_SUCCESS);
  gl_dev_download(mass, s->dmass, (size_t)nv);
  for (int32_t k = 0; k < nnz; k++)
    if (memcmp(&val[k], &s->A->val[k], 8))
      fail_msg("%s: Laplacian entry %d: GPU %.17g, CPU %.17g", mesh->name, k, val[k],
               s->A->val[k]);
  for (int64_t i = 0; i < nv; i++)
    if (memcmp(&mass[i], &s->mass[i], 8))
      fail_msg("%s: mass %lld: GPU %.17g, CPU %.17g", mesh->name, (long long)i, mass[i],
               s->mass[i]);
  /* what the operators must be, whatever the reference says */
  double msum = 0, lmax = 0, rmax = 0;
  for (int64_t i = 0; i < nv; i++) {
    msum += s->mass[i];
    double r = 0;
    for (int32_t k = s->A->rowptr[i]; k < s->A->rowptr[i + 1]; k++) {
      r += s->A->val[k];
      lmax = fmax(lmax, fabs(s->A->val[k]));
    }
    rmax = fmax(rmax, fabs(r));
  }
  const double area = mesh_area(mesh);
  if (fabs(msum - area) > 1e-12 * area)
    fail_msg("%s: mass sums to %.17g, area %.17g", mesh->name, msum, area);
  if (rmax > 1e-12 * fmax(lmax, 1.0)) fail_msg("%s: |L 1|_inf = %g", mesh->name, rmax);
  /* S = M - dt L, both sides */
  assert_int_equal(mb_cuda_csr_combine(s->dS, 1.0, s->dmass, -dt, s->dL), MB_SUCCESS);
  assert_int_equal(mb_cuda_csr_download(s->dS, val), MB_SUCCESS);
  for (int32_t k = 0; k < nnz; k++)
    if (memcmp(&s->S->val[k], &val[k], 8))
      fail_msg("%s: M - dt L entry %d: GPU %.17g, CPU %.17g", mesh->name, k, val[k],
               s->S->val[k]);
  free(val);
  free(mass);
}

static void sys_free(sys *s) {
  mb_cuda_csr_free(s->dL);
  mb_cuda_csr_free(s->dS);
  gl_dev_free(s->dxyz);
  gl_dev_free(s->dmass);
  mb_csr_free(s->A);
  mb_csr_free(s->S);
  free(s->mass);
  mb_adjacency_free(s->adj);
  mb_mesh_free(s->mesh);
}

/* max over columns of ||b - S x|| / ||b||, on the host (exact norms) */
static double host_residual(const sys *s, const double *b, double *x) {
  double res[3];
  assert_int_equal(mb_residual(MPI_COMM_SELF, NULL, s->S, 3, b, x, res), MB_SUCCESS);
  return fmax(res[0], fmax(res[1], res[2]));
}

static void test_assembly(void **state) {
  (void)state;
  mb_mesh *meshes[4] = {mb_gpu_mesh_octasphere(4, 0.05, 7), mb_gpu_mesh_grid(24, 0.3, 11),
                        mb_gpu_mesh_awkward(), read_spot()};
  for (int m = 0; m < 4; m++) {
    sys s;
    sys_build(&s, meshes[m], 1e-3);
    printf("[ gpu ] %s: %lld vertices, %d entries: Laplacian, mass and M - dt L equal the CPU's\n",
           s.mesh->name, (long long)s.mesh->nv, s.A->nnz);
    sys_free(&s);
  }
}

static void test_products(void **state) {
  (void)state;
  sys s;
  sys_build(&s, read_spot(), 1e-3);
  const int64_t n = s.mesh->nv;
  double *x = malloc(8 * 4 * (size_t)n), *want = malloc(8 * 4 * (size_t)n),
         *got = malloc(8 * 4 * (size_t)n);
  for (int64_t k = 0; k < 4 * n; k++) x[k] = sin(0.37 * (double)k) + 0.1;
  for (int nc = 1; nc <= 4; nc++) {
    double *dx = gl_dev_upload(x, (size_t)nc * n), *dy = gl_dev_alloc((size_t)nc * n);
    mb_csr_spmv(s.A, nc, x, want);
    assert_int_equal(mb_cuda_csr_spmv(s.dL, 1, nc, dx, dy), MB_SUCCESS);
    gl_dev_download(got, dy, (size_t)nc * n);
    if (memcmp(got, want, 8 * (size_t)nc * n))
      fail_msg("row product of %d columns differs from the CPU's", nc);
    assert_int_equal(mb_cuda_csr_spmv(s.dL, 2, nc, dx, dy), MB_SUCCESS);
    gl_dev_download(got, dy, (size_t)nc * n);
    if (memcmp(got, want, 8 * (size_t)nc * n))
      fail_msg("unstaged row product of %d columns differs from the CPU's", nc);
    mb_cuda_csr_set_product(s.dL, MB_CUDA_PRODUCT_CUSPARSE);
    assert_int_equal(mb_cuda_csr_spmv(s.dL, 0, nc, dx, dy), MB_SUCCESS);
    mb_cuda_csr_set_product(s.dL, MB_CUDA_PRODUCT_ROWS);
    gl_dev_download(got, dy, (size_t)nc * n);
    double err = 0, mag = 0;
    for (int64_t k = 0; k < nc * n; k++) {
      err = fmax(err, fabs(got[k] - want[k]));
      mag = fmax(mag, fabs(want[k]));
    }
    if (err > 1e-12 * mag) fail_msg("cuSPARSE product of %d columns: error %g of %g", nc, err, mag);
    gl_dev_free(dx);
    gl_dev_free(dy);
  }
  assert_int_equal(mb_cuda_csr_spmv(s.dL, 1, 5, x, got), MB_ERR_ARG);
  /* Long rows beside short ones (600 rows of 40 and 3 entries), a matrix
   * made without a mesh: the row product has the CPU's bits. */
  {
    const int32_t nr = 600;
    mb_csr B = {.nrows = nr, .ncols = nr};
    B.rowptr = calloc((size_t)nr + 1, sizeof *B.rowptr);
    B.diag = calloc((size_t)nr, sizeof *B.diag);
    for (int32_t i = 0; i < nr; i++) B.rowptr[i + 1] = B.rowptr[i] + (i < 300 ? 40 : 3);
    B.nnz = B.rowptr[nr];
    B.col = calloc((size_t)B.nnz, sizeof *B.col);
    B.edge = calloc((size_t)B.nnz, sizeof *B.edge);
    B.val = calloc((size_t)B.nnz, sizeof *B.val);
    for (int32_t i = 0; i < nr; i++) {
      const int32_t len = B.rowptr[i + 1] - B.rowptr[i], first = i - len / 2 < 0 ? 0 : i - len / 2;
      const int32_t start = first + len > nr ? nr - len : first;
      for (int32_t t = 0; t < len; t++) {
        const int32_t k = B.rowptr[i] + t, j = start + t;
        B.col[k] = j;
        B.edge[k] = j == i ? -1 : 0;
        if (j == i) B.diag[i] = k;
        B.val[k] = cos(0.11 * (double)k) + (j == i ? 50.0 : 0.0);
      }
    }
    mb_cuda_csr *dB = NULL;
    assert_int_equal(mb_cuda_csr_create(&B, NULL, &dB), MB_SUCCESS);
    assert_int_equal(mb_cuda_csr_upload(dB, B.val), MB_SUCCESS);
    for (int nc = 1; nc <= 4; nc += 2) {
      double *dx = gl_dev_upload(x, (size_t)nc * nr), *dy = gl_dev_alloc((size_t)nc * nr);
      mb_csr_spmv(&B, nc, x, want);
      assert_int_equal(mb_cuda_csr_spmv(dB, 1, nc, dx, dy), MB_SUCCESS);
      gl_dev_download(got, dy, (size_t)nc * nr);
      if (memcmp(got, want, 8 * (size_t)nc * nr))
        fail_msg("row product of long rows, %d columns, differs from the CPU's", nc);
      assert_int_equal(mb_cuda_csr_spmv(dB, 2, nc, dx, dy), MB_SUCCESS);
      gl_dev_download(got, dy, (size_t)nc * nr);
      if (memcmp(got, want, 8 * (size_t)nc * nr))
        fail_msg("unstaged row product of long rows, %d columns, differs from the CPU's", nc);
      gl_dev_free(dx);
      gl_dev_free(dy);
    }
    mb_cuda_csr_free(dB);
    free(B.rowptr);
    free(B.diag);
    free(B.col);
    free(B.edge);
    free(B.val);
  }
  free(x);
  free(want);
  free(got);
  sys_free(&s);
}

static void test_solvers(void **state) {
  (void)state;
  const double dt = 1e-3;
  sys s;
  sys_build(&s, read_spot(), dt);
  const int64_t n = s.mesh->nv;
  const size_t n3 = 3 * (size_t)n;
  double *b = malloc(8 * n3), *xp = malloc(8 * n3), *xr = malloc(8 * n3), *xc = malloc(8 * n3);
  for (int64_t i = 0; i < n; i++)
    for (int c = 0; c < 3; c++) b[3 * i + c] = s.mass[i] * s.mesh->xyz[3 * i + c];
  double *db = gl_dev_upload(b, n3), *dx = gl_dev_upload(s.mesh->xyz, n3);
  mb_pcg_opts o = {.rtol = 1e-10, .max_iter = 10000};
  mb_solve_stats st;
  /* PCG, cuSPARSE product, warm start from the positions */
  mb_cuda_csr_set_product(s.dS, MB_CUDA_PRODUCT_CUSPARSE);
  mb_error e = mb_cuda_pcg_solve(MPI_COMM_SELF, NULL, s.dS, 3, db, dx, &o, &st);
  if (e != MB_SUCCESS) fail_msg("PCG: %s", mb_error_message());
  gl_dev_download(xp, dx, n3);
  double hr = host_residual(&s, b, xp);
  printf("[ gpu ] spot PCG (cuSPARSE): %d iterations, residual %.3e (host %.3e), %.3f ms\n",
         st.iterations, st.residual, hr, st.solve_ms);
  assert_int_equal(st.method, MB_SOLVER_PCG);
  assert_true(st.iterations > 0 && st.residual <= 1e-10 && hr <= 1.001e-10);
  /* warm start from the solution: nothing to do */
  assert_int_equal(mb_cuda_pcg_solve(MPI_COMM_SELF, NULL, s.dS, 3, db, dx, &o, &st), MB_SUCCESS);
  assert_int_equal(st.iterations, 0);
  /* PCG, row product */
  gl_dev_free(dx);
  dx = gl_dev_upload(s.mesh->xyz, n3);
  mb_cuda_csr_set_product(s.dS, MB_CUDA_PRODUCT_ROWS);
  e = mb_cuda_pcg_solve(MPI_COMM_SELF, NULL, s.dS, 3, db, dx, &o, &st);
  if (e != MB_SUCCESS) fail_msg("PCG (rows): %s", mb_error_message());
  gl_dev_download(xr, dx, n3);
  hr = host_residual(&s, b, xr);
  printf("[ gpu ] spot PCG (rows): %d iterations, residual %.3e (host %.3e)\n", st.iterations,
         st.residual, hr);
  assert_true(st.residual <= 1e-10 && hr <= 1.001e-10);
  /* the CPU's PCG: the same bits as the row product's, in as many iterations */
  {
    double *xcpu = malloc(8 * n3);
    memcpy(xcpu, s.mesh->xyz, 8 * n3);
    mb_solve_stats cst;
    e = mb_pcg_solve(MPI_COMM_SELF, NULL, s.S, 3, b, xcpu, &o, &cst);
    if (e != MB_SUCCESS) fail_msg("CPU PCG: %s", mb_error_message());
    printf("[ gpu ] spot PCG (CPU): %d iterations, residual %.3e\n", cst.iterations,
           cst.residual);
    assert_int_equal(cst.iterations, st.iterations);
    assert_memory_equal(&cst.residual, &st.residual, sizeof st.residual);
    size_t diff = 0;
    for (size_t k = 0; k < n3; k++) diff += memcmp(&xcpu[k], &xr[k], 8) != 0;
    if (diff) fail_msg("GPU PCG (rows) differs from the CPU's in %zu of %zu values", diff, n3);
    free(xcpu);
  }
  /* CHOLMOD, for the CPU-GPU agreement */
  double *xh = malloc(8 * n3);
  {
    mb_cholesky *hc = NULL;
    if (mb_cholesky_create(s.S, &hc) != MB_SUCCESS || mb_cholesky_factor(hc, s.S) != MB_SUCCESS ||
        mb_cholesky_solve(hc, 3, b, xh) != MB_SUCCESS)
      fail_msg("CHOLMOD: %s", mb_error_message());
    mb_cholesky_free(hc);
  }
  /* Cholesky */
  mb_cuda_cholesky *ch = NULL;
  e = mb_cuda_cholesky_create(s.A, &ch);
  if (e != MB_SUCCESS) fail_msg("Cholesky analysis: %s", mb_error_message());
  double *dxc = gl_dev_alloc(n3);
  assert_int_equal(mb_cuda_cholesky_solve(ch, 3, db, dxc, &st), MB_ERR_ARG); /* not factored */
  for (int rep = 0; rep < 2; rep++) {
    e = mb_cuda_cholesky_factor(ch, s.dS, &st);
    if (e != MB_SUCCESS) fail_msg("Cholesky factor: %s", mb_error_message());
    assert_int_equal(st.method, MB_SOLVER_CHOLESKY);
    assert_true(rep ? st.analyze_ms == 0.0 : st.analyze_ms > 0.0);
    e = mb_cuda_cholesky_solve(ch, 3, db, dxc, &st);
    if (e != MB_SUCCESS) fail_msg("Cholesky solve: %s", mb_error_message());
    gl_dev_download(xc, dxc, n3);
    hr = host_residual(&s, b, xc);
    printf("[ gpu ] spot Cholesky: analysis %.3f ms, factor %.3f ms, solve %.3f ms, residual "
           "%.3e (host %.3e)\n", st.analyze_ms, st.factor_ms, st.solve_ms, st.residual, hr);
    assert_true(st.residual <= 1e-10 && hr <= 1e-10);
  }
  /* X = B in place */
  double *dbb = gl_dev_upload(b, n3), *xin = malloc(8 * n3);
  assert_int_equal(mb_cuda_cholesky_solve(ch, 3, dbb, dbb, &st), MB_SUCCESS);
  gl_dev_download(xin, dbb, n3);
  assert_memory_equal(xin, xc, 8 * n3);
  /* the three solutions agree */
  double dpc = 0, drc = 0, dhc = 0, mag = 0;
  for (size_t k = 0; k < n3; k++) {
    dpc = fmax(dpc, fabs(xp[k] - xc[k]));
    drc = fmax(drc, fabs(xr[k] - xc[k]));
    dhc = fmax(dhc, fabs(xh[k] - xc[k]));
    mag = fmax(mag, fabs(xc[k]));
  }
  printf("[ gpu ] spot: |PCG - Cholesky| %.3e, |PCG rows - Cholesky| %.3e, |CHOLMOD - "
         "Cholesky| %.3e (of %.3e)\n", dpc, drc, dhc, mag);
  assert_true(dpc <= 1e-8 * mag && drc <= 1e-8 * mag && dhc <= 1e-8 * mag);
  free(xh);
  mb_cuda_cholesky_free(ch);
  gl_dev_free(dbb);
  gl_dev_free(dxc);
  gl_dev_free(db);
  gl_dev_free(dx);
  free(xin);
  free(b);
  free(xp);
  free(xr);
  free(xc);
  sys_free(&s);
}

/* The GPU PCG (row product) against the CPU's, bit for bit, where the
 * columns part ways: a zero right-hand side (solution 0), columns that
 * converge at different iterations, and a tolerance near the rounding
 * level, where the recurrence's residual and the true one disagree (the
 * check, restarts, or the iteration limit). Whatever the CPU returns, the
 * GPU returns: the same error code, iterations, residual and iterate. Then
 * one column and three on the same matrix (the cached cuSPARSE operands). */
static void test_pcg_columns(void **state) {
  (void)state;
  sys s;
  sys_build(&s, read_spot(), 1e-2);
  const int64_t n = s.mesh->nv;
  const size_t n3 = 3 * (size_t)n;
  double *b = malloc(8 * n3), *x0 = malloc(8 * n3), *xc = malloc(8 * n3), *xg = malloc(8 * n3);
  for (int64_t i = 0; i < n; i++) {
    b[3 * i] = s.mass[i] * s.mesh->xyz[3 * i];
    b[3 * i + 1] = 0.0;                                   /* solution 0 */
    b[3 * i + 2] = s.mass[i] * sin(0.37 * (double)i);     /* rough: more iterations */
    for (int c = 0; c < 3; c++) x0[3 * i + c] = s.mesh->xyz[3 * i + c];
  }
  double *db = gl_dev_upload(b, n3);
  mb_cuda_csr_set_product(s.dS, MB_CUDA_PRODUCT_ROWS);
  const mb_pcg_opts cases[] = {{1e-10, 10000}, {1e-15, 3000}, {1e-10, 7}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const mb_pcg_opts o = cases[k];
    mb_solve_stats cs, gs;
    memcpy(xc, x0, 8 * n3);
    const mb_error ec = mb_pcg_solve(MPI_COMM_SELF, NULL, s.S, 3, b, xc, &o, &cs);
    char cmsg[512];
    snprintf(cmsg, sizeof cmsg, "%s", ec ? mb_error_message() : "");
    double *dx = gl_dev_upload(x0, n3);
    const mb_error eg = mb_cuda_pcg_solve(MPI_COMM_SELF, NULL, s.dS, 3, db, dx, &o, &gs);
    gl_dev_download(xg, dx, n3);
    gl_dev_free(dx);
    printf("[ gpu ] PCG columns, rtol %g, limit %d: CPU %d (%d iterations, %.3e%s%s), GPU %d "
           "(%d iterations, %.3e)\n", o.rtol, o.max_iter, (int)ec, cs.iterations, cs.residual,
           ec ? "; " : "", cmsg, (int)eg, gs.iterations, gs.residual);
    assert_int_equal(eg, ec);
    assert_int_equal(gs.iterations, cs.iterations);
    assert_memory_equal(&gs.residual, &cs.residual, sizeof cs.residual);
    size_t diff = 0;
    for (size_t q = 0; q < n3; q++) diff += memcmp(&xc[q], &xg[q], 8) != 0;
    if (diff) fail_msg("rtol %g: the GPU's iterate differs from the CPU's in %zu of %zu values",
                       o.rtol, diff, n3);
    for (int64_t i = 0; !ec && i < n; i++) assert_true(xg[3 * i + 1] == 0.0);
  }
  /* cuSPARSE: three columns, then one, then three again on the same matrix */
  mb_cuda_csr_set_product(s.dS, MB_CUDA_PRODUCT_CUSPARSE);
  const mb_pcg_opts o = {1e-10, 10000};
  for (int round = 0; round < 3; round++) {
    const int nc = round == 1 ? 1 : 3;
    double *bb = malloc(8 * (size_t)n * nc), *xx = malloc(8 * (size_t)n * nc);
    for (int64_t i = 0; i < n; i++)
      for (int c = 0; c < nc; c++) {
        bb[nc * i + c] = b[3 * i + (nc == 1 ? 2 : c)];
        xx[nc * i + c] = x0[3 * i + (nc == 1 ? 2 : c)];
      }
    double *dbb = gl_dev_upload(bb, (size_t)n * nc), *dxx = gl_dev_upload(xx, (size_t)n * nc);
    mb_solve_stats gs;
    mb_error e = mb_cuda_pcg_solve(MPI_COMM_SELF, NULL, s.dS, nc, dbb, dxx, &o, &gs);
    if (e != MB_SUCCESS) fail_msg("PCG, %d columns: %s", nc, mb_error_message());
    gl_dev_download(xx, dxx, (size_t)n * nc);
    double res[3];
    assert_int_equal(mb_residual(MPI_COMM_SELF, NULL, s.S, nc, bb, xx, res), MB_SUCCESS);
    for (int c = 0; c < nc; c++) assert_true(res[c] <= 1.001e-10);
    gl_dev_free(dbb);
    gl_dev_free(dxx);
    free(bb);
    free(xx);
  }
  gl_dev_free(db);
  free(b);
  free(x0);
  free(xc);
  free(xg);
  sys_free(&s);
}

static void test_errors(void **state) {
  (void)state;
  sys s;
  sys_build(&s, read_spot(), 1e-3);
  const int64_t n = s.mesh->nv;
  const size_t n3 = 3 * (size_t)n;
  double *b = malloc(8 * n3);
  for (int64_t i = 0; i < n; i++)
    for (int c = 0; c < 3; c++) b[3 * i + c] = s.mass[i] * s.mesh->xyz[3 * i + c];
  double *db = gl_dev_upload(b, n3), *dx = gl_dev_upload(s.mesh->xyz, n3);
  mb_solve_stats st;
  /* iteration limit */
  mb_pcg_opts o = {.rtol = 1e-10, .max_iter = 2};
  assert_int_equal(mb_cuda_pcg_solve(MPI_COMM_SELF, NULL, s.dS, 3, db, dx, &o, &st),
                   MB_ERR_NUMERIC);
  mb_test_assert_message_contains("did not converge");
  assert_true(st.residual > 1e-10 && st.iterations == 2);
  o.max_iter = 10000;
  o.rtol = 0;
  assert_int_equal(mb_cuda_pcg_solve(MPI_COMM_SELF, NULL, s.dS, 3, db, dx, &o, &st), MB_ERR_ARG);
  o.rtol = 1e-10;
  /* L itself: negative diagonal */
  mb_cuda_csr *dN = NULL;
  assert_int_equal(mb_cuda_csr_create(s.A, s.adj, &dN), MB_SUCCESS);
  assert_int_equal(mb_cuda_csr_combine(dN, 0.0, s.dmass, 1.0, s.dL), MB_SUCCESS);
  assert_int_equal(mb_cuda_pcg_solve(MPI_COMM_SELF, NULL, dN, 3, db, dx, &o, &st),
                   MB_ERR_NUMERIC);
  mb_test_assert_message_contains("not positive definite");
  mb_cuda_cholesky *ch = NULL;
  assert_int_equal(mb_cuda_cholesky_create(s.A, &ch), MB_SUCCESS);
  assert_int_equal(mb_cuda_cholesky_factor(ch, dN, &st), MB_ERR_NUMERIC);
  mb_test_assert_message_contains("not positive definite");
  assert_int_equal(mb_cuda_cholesky_solve(ch, 3, db, dx, &st), MB_ERR_ARG);
  /* -L - 0.9 W (W = diag(-L_ii)): positive diagonal 0.1 W, but 1'A1 < 0 */
  double *w = malloc(8 * (size_t)n);
  for (int64_t i = 0; i < n; i++) w[i] = 0.9 * s.A->val[s.A->diag[i]]; /* -0.9 W */
  double *dw = gl_dev_upload(w, (size_t)n);
  assert_int_equal(mb_cuda_csr_combine(dN, 1.0, dw, -1.0, s.dL), MB_SUCCESS);
  assert_int_equal(mb_cuda_pcg_solve(MPI_COMM_SELF, NULL, dN, 3, db, dx, &o, &st),
                   MB_ERR_NUMERIC);
  mb_test_assert_message_contains("not positive definite");
  mb_error e = mb_cuda_cholesky_factor(ch, dN, &st);
  if (e == MB_SUCCESS) e = mb_cuda_cholesky_solve(ch, 3, db, dx, &st);
  assert_int_equal(e, MB_ERR_NUMERIC);
  mb_test_assert_message_contains("not positive definite");
  /* non-finite right-hand side */
  double nan = NAN;
  double *bn = malloc(8 * n3);
  memcpy(bn, b, 8 * n3);
  bn[7] = nan;
  double *dbn = gl_dev_upload(bn, n3);
  assert_int_equal(mb_cuda_pcg_solve(MPI_COMM_SELF, NULL, s.dS, 3, dbn, dx, &o, &st),
                   MB_ERR_NUMERIC);
  mb_test_assert_message_contains("non-finite");
  /* non-finite positions */
  double *xyz = malloc(8 * n3);
  memcpy(xyz, s.mesh->xyz, 8 * n3);
  xyz[3 * 5 + 1] = nan;
  double *dxyz = gl_dev_upload(xyz, n3);
  assert_int_equal(mb_cuda_cotangent_laplacian(dN, dxyz, s.dmass), MB_ERR_NUMERIC);
  mb_test_assert_message_contains("non-finite");
  /* Cholesky of a partitioned (non-square) pattern */
  mb_csr part = *s.A;
  part.ncols = part.nrows + 1;
  mb_cuda_cholesky *bad = NULL;
  assert_int_equal(mb_cuda_cholesky_create(&part, &bad), MB_ERR_ARG);
  assert_null(bad);
  /* an adjacency without opposite vertices */
  mb_adjacency *plain = NULL;
  assert_int_equal(mb_adjacency_build_opts(s.mesh, 0, &plain), MB_SUCCESS);
  mb_cuda_csr *dP = NULL;
  assert_int_equal(mb_cuda_csr_create(s.A, plain, &dP), MB_ERR_ARG);
  assert_null(dP);
  /* a pattern only: no assembly */
  assert_int_equal(mb_cuda_csr_create(s.A, NULL, &dP), MB_SUCCESS);
  assert_int_equal(mb_cuda_cotangent_laplacian(dP, s.dxyz, NULL), MB_ERR_ARG);
  mb_cuda_csr_free(dP);
  mb_adjacency_free(plain);
  mb_cuda_cholesky_free(ch);
  mb_cuda_csr_free(dN);
  gl_dev_free(dxyz);
  gl_dev_free(dbn);
  gl_dev_free(dw);
  gl_dev_free(db);
  gl_dev_free(dx);
  free(xyz);
  free(bn);
  free(w);
  free(b);
  sys_free(&s);
}

static void test_amg(void **state) {
  (void)state;
  sys s;
  sys_build(&s, read_spot(), 1e-3);
  const int64_t n = s.mesh->nv;
  const size_t n3 = 3 * (size_t)n;
  mb_amg_opts ao = mb_amg_opts_default();
  ao.max_coarse = 100; /* several levels on spot's ~3 k vertices */
  mb_amg *h = NULL;
  if (mb_amg_create(s.S, &ao, &h) != MB_SUCCESS) fail_msg("host AMG: %s", mb_error_message());
  mb_amg_stats hs;
  assert_int_equal(mb_amg_get_stats(h, &hs), MB_SUCCESS);
  assert_true(hs.levels >= 3);
  mb_cuda_amg *g = NULL;
  if (mb_cuda_amg_create(h, s.dS, &g) != MB_SUCCESS || mb_cuda_amg_update(g, s.dS) != MB_SUCCESS)
    fail_msg("device AMG: %s", mb_error_message());
  /* one V-cycle of a deterministic residual, host and device */
  double *r = malloc(8 * n3), *zh = malloc(8 * n3), *zd = malloc(8 * n3);
  for (size_t k = 0; k < n3; k++) r[k] = sin(0.37 * (double)k) + 0.25 * cos(1.3 * (double)k);
  assert_int_equal(mb_amg_apply(h, 3, r, zh), MB_SUCCESS);
  double *dr = gl_dev_upload(r, n3), *dz = gl_dev_upload(r, n3);
  assert_int_equal(mb_cuda_amg_apply(g, 3, dr, dz), MB_SUCCESS);
  gl_dev_download(zd, dz, n3);
  double dmax = 0, zmax = 0;
  for (size_t k = 0; k < n3; k++) {
    dmax = fmax(dmax, fabs(zd[k] - zh[k]));
    zmax = fmax(zmax, fabs(zh[k]));
  }
  printf("[ gpu ] spot AMG: %d levels (%d rows coarsest), V-cycle |z_gpu - z_cpu| / |z| = "
         "%.3e\n", hs.levels, hs.rows[hs.levels - 1], dmax / zmax);
  assert_true(zmax > 0 && dmax <= 1e-10 * zmax);
  /* the preconditioned solves: device, host AMG and host Jacobi */
  double *b = malloc(8 * n3), *x = malloc(8 * n3), *xc = malloc(8 * n3);
  for (int64_t i = 0; i < n; i++)
    for (int c = 0; c < 3; c++) b[3 * i + c] = s.mass[i] * s.mesh->xyz[3 * i + c];
  double *db = gl_dev_upload(b, n3), *dx = gl_dev_upload(s.mesh->xyz, n3);
  mb_pcg_opts o = {.rtol = 1e-10, .max_iter = 10000, .cuda_amg = g};
  mb_solve_stats st, hst, jst;
  if (mb_cuda_pcg_solve(MPI_COMM_SELF, NULL, s.dS, 3, db, dx, &o, &st) != MB_SUCCESS)
    fail_msg("device AMG PCG: %s", mb_error_message());
  gl_dev_download(x, dx, n3);
  const double hr = host_residual(&s, b, x);
  mb_pcg_opts ho = {.rtol = 1e-10, .max_iter = 10000, .amg = h};
  memcpy(xc, s.mesh->xyz, 8 * n3);
  assert_int_equal(mb_pcg_solve(MPI_COMM_SELF, NULL, s.S, 3, b, xc, &ho, &hst), MB_SUCCESS);
  mb_pcg_opts jo = {.rtol = 1e-10, .max_iter = 10000};
  memcpy(xc, s.mesh->xyz, 8 * n3);
  assert_int_equal(mb_pcg_solve(MPI_COMM_SELF, NULL, s.S, 3, b, xc, &jo, &jst), MB_SUCCESS);
  printf("[ gpu ] spot AMG PCG: %d iterations (host AMG %d, Jacobi %d), residual %.3e (host "
         "%.3e)\n", st.iterations, hst.iterations, jst.iterations, st.residual, hr);
  assert_int_equal(st.method, MB_SOLVER_AMG);
  assert_true(st.residual <= 1e-10 && hr <= 1.001e-10);
  assert_true(abs(st.iterations - hst.iterations) <= 2);
  assert_true(3 * st.iterations <= jst.iterations);
  /* refusals */
  assert_int_equal(mb_cuda_amg_update(g, s.dL), MB_ERR_ARG);
  assert_int_equal(mb_cuda_amg_update(g, s.dS), MB_SUCCESS);
  assert_int_equal(mb_cuda_amg_apply(g, MB_AMG_MAX_COMP + 1, dr, dz), MB_ERR_ARG);
  mb_pcg_opts bad = {.rtol = 1e-10, .max_iter = 10, .amg = h};
  assert_int_equal(mb_cuda_pcg_solve(MPI_COMM_SELF, NULL, s.dS, 3, db, dx, &bad, &st), MB_ERR_ARG);
  mb_cuda_amg_free(g);
  mb_amg_free(h);
  gl_dev_free(dr);
  gl_dev_free(dz);
  gl_dev_free(db);
  gl_dev_free(dx);
  free(r);
  free(zh);
  free(zd);
  free(b);
  free(x);
  free(xc);
  sys_free(&s);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rc = mb_gpu_test_begin("gpu_linalg", NULL, 0);
  if (!rc) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_assembly), cmocka_unit_test(test_products),
        cmocka_unit_test(test_solvers), cmocka_unit_test(test_pcg_columns),
        cmocka_unit_test(test_errors), cmocka_unit_test(test_amg)};
    rc = cmocka_run_group_tests(tests, NULL, NULL);
  }
  MPI_Finalize();
  return rc;
}
