/* meshbatch: conformal Willmore flow by spin transformations on the CPU
 * (see mb_willmore.h for the method, its sources and conventions). One
 * whole mesh on one rank; the Dirac operator's pattern, the triangles'
 * block positions, the order and symbolic factor of the quaternion
 * Cholesky factor of D - rho (mb_willmore_qchol.h) and the Poisson
 * matrix's CHOLMOD analysis are made once per mesh, the values and the
 * numeric factors once per step. */
#include "mb_willmore.h"
#include "mb_quaternion.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_alloc.h"
#include "mb_cotan.h"
#include "mb_log.h"
#include "mb_solver.h"
#include "mb_willmore_qchol.h"

/* ------------------------------------------------------------ projection */

static double dot_m(int64_t n, const double *m, const double *a, const double *b) {
  double s = 0.0;
  for (int64_t i = 0; i < n; i++) s += m[i] * a[i] * b[i];
  return s;
}

mb_error mb_willmore_basis(int64_t n, const double *mass, const double *N, double *u) {
  MB_CHECK(n >= 1 && mass && N && u, MB_ERR_ARG, "mb_willmore_basis: bad arguments");
  for (int64_t i = 0; i < n; i++)
    MB_CHECK(mass[i] > 0 && isfinite(mass[i]), MB_ERR_NUMERIC,
             "constraint basis: vertex %lld has mass %g (zero area around it)", (long long)i,
             mass[i]);
  for (int64_t i = 0; i < n; i++) {
    u[i] = 1.0;
    for (int k = 0; k < 3; k++) u[(int64_t)(k + 1) * n + i] = N[3 * i + k];
  }
  for (int k = 0; k < 4; k++) {
    double *uk = u + (int64_t)k * n;
    const double n0 = sqrt(dot_m(n, mass, uk, uk));
    for (int pass = 0; pass < 2; pass++)
      for (int l = 0; l < k; l++) {
        const double *ul = u + (int64_t)l * n;
        const double c = dot_m(n, mass, uk, ul);
        for (int64_t i = 0; i < n; i++) uk[i] -= c * ul[i];
      }
    const double nk = sqrt(dot_m(n, mass, uk, uk));
    if (!(nk > 1e-10 * n0) || !isfinite(nk)) { /* dependent: dropped */
      memset(uk, 0, sizeof(double) * (size_t)n);
      continue;
    }
    for (int64_t i = 0; i < n; i++) uk[i] /= nk;
  }
  return MB_SUCCESS;
}

mb_error mb_willmore_project(int64_t n, const double *mass, const double *N, double *rho) {
  MB_CHECK(rho, MB_ERR_ARG, "mb_willmore_project: NULL rho");
  double *u = malloc(sizeof(double) * 4 * (size_t)(n > 0 ? n : 1));
  MB_CHECK(u, MB_ERR_MEMORY, "out of memory for the constraint basis");
  mb_error e = mb_willmore_basis(n, mass, N, u);
  if (e) {
    free(u);
    MB_CALL(e);
  }
  for (int pass = 0; pass < 2; pass++)
    for (int k = 0; k < 4; k++) {
      const double *uk = u + (int64_t)k * n;
      const double c = dot_m(n, mass, rho, uk);
      for (int64_t i = 0; i < n; i++) rho[i] -= c * uk[i];
    }
  free(u);
  return MB_SUCCESS;
}

/* ------------------------------------------------------------ Dirac operator */

struct mb_willmore_dirac {
  int64_t nv, nf;
  const int64_t *tri; /* borrowed */
  mb_csr *D;          /* the operator, 4 nv rows */
  int32_t *slot;      /* [nf, 9] position in D->val of block (a, b)'s (0, 0) entry */
  int32_t *rowlen;    /* [nv] entries of the vertex row */
  mb_willmore_qchol *chol; /* quaternion factor of D + sigma I (solver cholesky) */
};

void mb_willmore_dirac_free(mb_willmore_dirac *d) {
  if (!d) return;
  mb_csr_free(d->D);
  free(d->slot);
  free(d->rowlen);
  mb_willmore_qchol_free(d->chol);
  free(d);
}

/* Position of column j in row i of the vertex pattern L, or -1. */
static int32_t find_entry(const mb_csr *L, int64_t i, int64_t j) {
  int32_t lo = L->rowptr[i], hi = L->rowptr[i + 1] - 1;
  while (lo <= hi) {
    const int32_t mid = lo + (hi - lo) / 2;
    if (L->col[mid] == j) return mid;
    if (L->col[mid] < j) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/* A 16 nnz copy of the vertex pattern L with 4x4 blocks. */
static mb_error block_pattern(const mb_csr *L, mb_csr **out) {
  const int64_t n = L->nrows, nnz = 16 * (int64_t)L->nnz;
  MB_CHECK(4 * n <= INT32_MAX && nnz <= INT32_MAX, MB_ERR_ARG,
           "Dirac operator: %lld entries exceed the 32-bit indices of a CSR matrix",
           (long long)nnz);
  mb_csr *D;
  MB_CALLOC(D, 1);
  D->nrows = D->ncols = (int32_t)(4 * n);
  D->nnz = (int32_t)nnz;
  D->rowptr = mb_zalloc((size_t)(4 * n + 1), sizeof(int32_t));
  D->col = mb_zalloc((size_t)(nnz ? nnz : 1), sizeof(int32_t));
  D->diag = mb_zalloc((size_t)(n > 0 ? 4 * n : 1), sizeof(int32_t));
  D->edge = mb_zalloc((size_t)(nnz ? nnz : 1), sizeof(int32_t));
  D->val = mb_zalloc((size_t)(nnz ? nnz : 1), sizeof(double));
  if (!D->rowptr || !D->col || !D->diag || !D->edge || !D->val) {
    mb_csr_free(D);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for the Dirac operator (%lld entries)",
            (long long)nnz);
  }
  for (int64_t i = 0; i < n; i++) {
    const int32_t r0 = L->rowptr[i], len = L->rowptr[i + 1] - r0;
    for (int r = 0; r < 4; r++) {
      const int32_t start = 16 * r0 + 4 * r * len;
      D->rowptr[4 * i + r] = start;
      D->rowptr[4 * i + r + 1] = start + 4 * len;
      for (int32_t e = r0; e < r0 + len; e++)
        for (int s = 0; s < 4; s++) {
          const int32_t q = start + 4 * (e - r0) + s;
          D->col[q] = 4 * L->col[e] + s;
          D->edge[q] = -1;
        }
      D->diag[4 * i + r] = start + 4 * (L->diag[i] - r0) + r;
    }
  }
  *out = D;
  return MB_SUCCESS;
}

mb_error mb_willmore_dirac_pattern(const mb_adjacency *adj, int64_t nf, const int64_t *tri,
                                   mb_csr **D, int32_t *slot, int32_t *rowlen) {
  MB_CHECK(adj && D && slot && rowlen && (tri || nf == 0) && nf >= 0, MB_ERR_ARG,
           "mb_willmore_dirac_pattern: bad arguments");
  *D = NULL;
  mb_csr *L = NULL;
  MB_CALL(mb_csr_pattern(adj, adj->nv, adj->nv, NULL, &L));
  mb_error err = MB_SUCCESS;
  for (int64_t i = 0; i < adj->nv; i++) rowlen[i] = L->rowptr[i + 1] - L->rowptr[i];
  for (int64_t f = 0; f < nf; f++)
    for (int a = 0; a < 3; a++)
      for (int b = 0; b < 3; b++) {
        const int64_t i = tri[3 * f + a], j = tri[3 * f + b];
        const int32_t e = find_entry(L, i, j);
        MB_CHECK_GOTO(err, done, e >= 0, MB_ERR_ARG,
                      "Dirac operator: triangle %lld's edge %lld-%lld is not in the adjacency",
                      (long long)f, (long long)i, (long long)j);
        slot[9 * f + 3 * a + b] =
            16 * L->rowptr[i] + 4 * (e - L->rowptr[i]); /* row 4i + 0, column 4j + 0 */
      }
  MB_CALL_GOTO(err, done, block_pattern(L, D));
done:
  mb_csr_free(L);
  return err;
}

static mb_error dirac_build(const mb_adjacency *adj, int64_t nf, const int64_t *tri,
                            int analyse, mb_willmore_dirac *d) {
  d->slot = malloc(sizeof(int32_t) * 9 * (size_t)(nf ? nf : 1));
  d->rowlen = malloc(sizeof(int32_t) * (size_t)(adj->nv ? adj->nv : 1));
  MB_CHECK(d->slot && d->rowlen, MB_ERR_MEMORY,
           "out of memory for the Dirac operator's block positions");
  MB_CALL(mb_willmore_dirac_pattern(adj, nf, tri, &d->D, d->slot, d->rowlen));
  if (analyse) MB_CALL(mb_willmore_qchol_create(d->D, &d->chol));
  return MB_SUCCESS;
}

/* mb_willmore_dirac_create, the quaternion factor's order and symbolic
 * factor only where analyse (the iterative solver does without it: at a
 * million vertices it is large). */
static mb_error dirac_create(const mb_adjacency *adj, int64_t nf, const int64_t *tri,
                             int analyse, mb_willmore_dirac **out) {
  MB_CHECK(adj && out && (tri || nf == 0) && nf >= 0, MB_ERR_ARG,
           "mb_willmore_dirac_create: bad arguments");
  *out = NULL;
  mb_willmore_dirac *d;
  MB_CALLOC(d, 1);
  d->nv = adj->nv;
  d->nf = nf;
  d->tri = tri;
  mb_error e = dirac_build(adj, nf, tri, analyse, d);
  if (e) {
    mb_willmore_dirac_free(d);
    MB_CALL(e);
  }
  *out = d;
  return MB_SUCCESS;
}

mb_error mb_willmore_dirac_create(const mb_adjacency *adj, int64_t nf, const int64_t *tri,
                                  mb_willmore_dirac **out) {
  return dirac_create(adj, nf, tri, 1, out);
}

mb_willmore_solver mb_willmore_solver_for(int solver, int64_t nv, int cuda) {
  if (solver == MB_WILLMORE_CHOLESKY || solver == MB_WILLMORE_ITERATIVE)
    return (mb_willmore_solver)solver;
  return cuda || nv >= MB_WILLMORE_AUTO_VERTICES ? MB_WILLMORE_ITERATIVE : MB_WILLMORE_CHOLESKY;
}

const mb_csr *mb_willmore_dirac_matrix(const mb_willmore_dirac *d) { return d->D; }

/* Add the 4x4 left-multiplication matrix of quaternion q at block position
 * p (row 4i, column 4j's entry) of row length len (vertex row entries). */
static inline void add_block(double *val, int32_t p, int32_t len, const double *q) {
  const double a = q[0], b = q[1], c = q[2], d = q[3];
  const int32_t w = 4 * len; /* distance between the block's rows */
  double *r0 = val + p, *r1 = r0 + w, *r2 = r1 + w, *r3 = r2 + w;
  r0[0] += a, r0[1] += -b, r0[2] += -c, r0[3] += -d;
  r1[0] += b, r1[1] += a, r1[2] += -d, r1[3] += c;
  r2[0] += c, r2[1] += d, r2[2] += a, r2[3] += -b;
  r3[0] += d, r3[1] += -c, r3[2] += b, r3[3] += a;
}

mb_error mb_willmore_dirac_assemble(mb_willmore_dirac *d, const double *x, const double *rho) {
  MB_CHECK(d && x, MB_ERR_ARG, "mb_willmore_dirac_assemble: NULL argument");
  mb_csr *D = d->D;
  memset(D->val, 0, sizeof(double) * (size_t)(D->nnz ? D->nnz : 1));
  for (int64_t f = 0; f < d->nf; f++) {
    const int64_t *t = d->tri + 3 * f;
    double a2;
    MB_TRIANGLE_AREA2(double, x, t[0], t[1], t[2], a2);
    const double A = 0.5 * a2;
    MB_CHECK(A > 0 && isfinite(A), MB_ERR_NUMERIC,
             "Dirac operator: triangle %lld has area %g", (long long)f, A);
    double e[3][4];
    for (int a = 0; a < 3; a++) {
      const int64_t p = t[(a + 1) % 3], q = t[(a + 2) % 3]; /* e_a = x_q - x_p */
      e[a][0] = 0.0;
      for (int k = 0; k < 3; k++) e[a][k + 1] = x[3 * q + k] - x[3 * p + k];
    }
    const double r[3] = {rho ? rho[t[0]] : 0.0, rho ? rho[t[1]] : 0.0, rho ? rho[t[2]] : 0.0};
    const double ca = -1.0 / (4.0 * A), cb = 1.0 / 6.0, cc = A / 9.0;
    for (int a = 0; a < 3; a++)
      for (int b = 0; b < 3; b++) {
        double q[4];
        mb_qmul(e[a], e[b], q);
        for (int k = 0; k < 4; k++) q[k] = ca * q[k];
        for (int k = 1; k < 4; k++) q[k] = q[k] + cb * (r[a] * e[b][k] - r[b] * e[a][k]);
        q[0] = q[0] + r[a] * r[b] * cc;
        add_block(D->val, d->slot[9 * f + 3 * a + b], d->rowlen[t[a]], q);
      }
  }
  return MB_SUCCESS;
}

static double norm2(int64_t n, const double *v) {
  double s = 0.0;
  for (int64_t i = 0; i < n; i++) s += v[i] * v[i];
  return sqrt(s);
}

/* The eigenspace holds lambda q for every quaternion q (a rotation of the
 * whole surface): take the q that makes the mean of lambda [m / 4, 4] real
 * and positive, so no rotation is left to the solver's rounding. */
static void right_factor(int64_t m, double *lambda) {
  double mq[4] = {0.0, 0.0, 0.0, 0.0};
  for (int64_t i = 0; i < m; i++) mq[i % 4] += lambda[i];
  const double mn = norm2(4, mq);
  if (mn > 0) {
    const double q[4] = {mq[0] / mn, -mq[1] / mn, -mq[2] / mn, -mq[3] / mn};
    for (int64_t i = 0; i < m; i += 4) {
      double r[4];
      mb_qmul(lambda + i, q, r);
      memcpy(lambda + i, r, sizeof r);
    }
  }
}

/* Relative shift of the factored matrix (see mb_willmore.h, step 3). */
#define MB_WILLMORE_SHIFT 1e-12

/* The inner solves' stopping test relative to the eigen tolerance, and
 * their iteration limit (mb_willmore.h, mb_willmore_dirac_eigen_pcg). The
 * outer residual test decides convergence, so the inner solves need not be
 * tighter than a tenth of it: on armadillo (43 k vertices, tau 0.01) 1e-1
 * took 168 PCG iterations a step where 1e-3 took 221, the eigen-residual
 * 1.2e-11 against 8.4e-12 (tolerance 1e-10), still two solves; 1 gave
 * 145 iterations but residuals of 9e-11, at the tolerance's edge. */
#define MB_WILLMORE_INNER_RTOL 1e-1
#define MB_WILLMORE_INNER_MAXIT 2000

static double dot(int64_t n, const double *a, const double *b) {
  double s = 0.0;
  for (int64_t i = 0; i < n; i++) s += a[i] * b[i];
  return s;
}

/* y = (D + sigma I) x. */
static void shifted_product(const mb_csr *D, double sigma, const double *x, double *y) {
  mb_csr_spmv(D, 1, x, y);
  for (int32_t i = 0; i < D->nrows; i++) y[i] += sigma * x[i];
}

/* (D + sigma I) y = b by CG preconditioned by amg (x) I_4, y warm start on
 * entry; stops when ||b - A y|| <= eta ||y||. w: 4 work vectors [m]. */
static mb_error inner_pcg(const mb_csr *D, double sigma, const mb_amg *amg, const double *b,
                          double *y, double eta, double *w, int *its) {
  const int64_t m = D->nrows;
  double *r = w, *z = w + m, *p = w + 2 * m, *q = w + 3 * m;
  int k = 0;
  for (int restart = 0;; restart++) {
    shifted_product(D, sigma, y, q);
    for (int64_t i = 0; i < m; i++) r[i] = b[i] - q[i];
    double rr = dot(m, r, r), yy = dot(m, y, y);
    if (sqrt(rr) <= eta * sqrt(yy)) return MB_SUCCESS;
    MB_CHECK(restart < 3, MB_ERR_NUMERIC,
             "inverse iteration: a PCG solve's recomputed residual %.3g stays above %.3g",
             sqrt(rr), eta * sqrt(yy));
    MB_CALL(mb_amg_apply(amg, 4, r, z));
    memcpy(p, z, sizeof(double) * (size_t)m);
    double rz = dot(m, r, z);
    for (;;) {
      MB_CHECK(k < MB_WILLMORE_INNER_MAXIT, MB_ERR_NUMERIC,
               "inverse iteration: a PCG solve did not converge in %d iterations (residual "
               "%.3g, asked %.3g)",
               MB_WILLMORE_INNER_MAXIT, sqrt(rr), eta * sqrt(yy));
      shifted_product(D, sigma, p, q);
      const double pq = dot(m, p, q);
      MB_CHECK(pq > 0 && isfinite(pq), MB_ERR_NUMERIC,
               "inverse iteration: PCG curvature p'Ap = %g (the shifted operator is not "
               "positive definite)",
               pq);
      const double alpha = rz / pq;
      for (int64_t i = 0; i < m; i++) {
        y[i] += alpha * p[i];
        r[i] -= alpha * q[i];
      }
      k++;
      (*its)++;
      rr = dot(m, r, r);
      yy = dot(m, y, y);
      if (sqrt(rr) <= eta * sqrt(yy)) break; /* then recomputed above */
      MB_CALL(mb_amg_apply(amg, 4, r, z));
      const double rz1 = dot(m, r, z), beta = rz1 / rz;
      rz = rz1;
      for (int64_t i = 0; i < m; i++) p[i] = z[i] + beta * p[i];
    }
  }
}

/* One solve of the inverse iteration: y [m] with (D - rho + sigma I) y =
 * lambda [m] (2-norm 1); g the last Rayleigh quotient (of the start before
 * the first solve, where the loop computes it). */
typedef mb_error (*eigen_solve_fn)(void *ctx, const double *lambda, double g, double *y);

/* The inverse iteration of mb_willmore_dirac_eigen and _pcg (mb_willmore.h,
 * step 3) around solve: start from the constant 1 normalised (with its
 * Rayleigh quotient where start_quotient: the PCG's first warm start),
 * each iteration a solve, the normalisation, the Rayleigh quotient and the
 * residual relative to dmax, the stopping test and the right quaternion
 * factor. y: work [m]. */
static mb_error inverse_iteration(const mb_csr *D, double dmax, eigen_solve_fn solve, void *ctx,
                                  int start_quotient, double tolerance, int max_iterations,
                                  double *lambda, double *eigenvalue, int *iterations,
                                  double *residual, double *y) {
  const int64_t m = D->nrows;
  for (int64_t i = 0; i < m; i++) lambda[i] = i % 4 == 0 ? 1.0 : 0.0;
  double nl = norm2(m, lambda);
  for (int64_t i = 0; i < m; i++) lambda[i] /= nl;
  double g = NAN;
  if (start_quotient) {
    mb_csr_spmv(D, 1, lambda, y);
    g = dot(m, lambda, y);
  }
  *iterations = 0;
  *residual = INFINITY;
  *eigenvalue = NAN;
  for (int it = 1; it <= max_iterations; it++) {
    MB_CALL(solve(ctx, lambda, g, y));
    nl = norm2(m, y);
    MB_CHECK(nl > 0 && isfinite(nl), MB_ERR_NUMERIC,
             "inverse iteration: the iterate's norm became %g", nl);
    for (int64_t i = 0; i < m; i++) lambda[i] = y[i] / nl;
    mb_csr_spmv(D, 1, lambda, y);
    g = dot(m, lambda, y);
    for (int64_t i = 0; i < m; i++) y[i] -= g * lambda[i];
    *eigenvalue = g;
    *residual = norm2(m, y) / dmax;
    *iterations = it;
    if (*residual <= tolerance) {
      right_factor(m, lambda);
      return MB_SUCCESS;
    }
  }
  MB_FAIL(MB_ERR_NUMERIC,
          "inverse iteration did not converge: residual %.3g after %d solves (tolerance %.3g, "
          "max_iterations %d)",
          *residual, max_iterations, tolerance, max_iterations);
}

/* The largest diagonal entry of D (> 0 and finite, else MB_ERR_NUMERIC). */
static mb_error largest_diagonal(const mb_csr *D, double *dmax) {
  double dm = 0.0;
  for (int32_t i = 0; i < D->nrows; i++) dm = fmax(dm, D->val[D->diag[i]]);
  MB_CHECK(dm > 0 && isfinite(dm), MB_ERR_NUMERIC, "Dirac operator: largest diagonal entry %g",
           dm);
  *dmax = dm;
  return MB_SUCCESS;
}

/* solver cholesky: one solve with the quaternion factor. */
static mb_error solve_factor(void *ctx, const double *lambda, double g, double *y) {
  (void)g;
  return mb_willmore_qchol_solve(ctx, lambda, y);
}

mb_error mb_willmore_dirac_eigen(mb_willmore_dirac *d, double tolerance, int max_iterations,
                                 double *lambda, double *eigenvalue, int *iterations,
                                 double *residual) {
  MB_CHECK(d && lambda && eigenvalue && iterations && residual && max_iterations >= 1,
           MB_ERR_ARG, "mb_willmore_dirac_eigen: bad arguments");
  const mb_csr *D = d->D;
  const int64_t m = D->nrows;
  double dmax = 0.0;
  MB_CALL(largest_diagonal(D, &dmax));
  const double sigma = MB_WILLMORE_SHIFT * dmax;
  if (!d->chol) MB_CALL(mb_willmore_qchol_create(D, &d->chol)); /* made without analysis */
  MB_CALL(mb_willmore_qchol_factor(d->chol, D, sigma));
  double *y = malloc(sizeof(double) * (size_t)(m ? m : 1));
  MB_CHECK(y, MB_ERR_MEMORY, "out of memory for the inverse iteration");
  const mb_error err = inverse_iteration(D, dmax, solve_factor, d->chol, 0, tolerance,
                                         max_iterations, lambda, eigenvalue, iterations,
                                         residual, y);
  free(y);
  return err;
}

/* solver iterative: one PCG solve, warm-started from lambda / (g + sigma). */
typedef struct pcg_solve_ctx {
  const mb_csr *D;
  const mb_amg *amg;
  double sigma, eta;
  double *w; /* [4m] */
  int *inner;
} pcg_solve_ctx;

static mb_error solve_pcg(void *ctx, const double *lambda, double g, double *y) {
  const pcg_solve_ctx *c = ctx;
  const int64_t m = c->D->nrows;
  const double gs = g + c->sigma;
  MB_CHECK(gs > 0 && isfinite(gs), MB_ERR_NUMERIC,
           "inverse iteration: Rayleigh quotient %g (the operator is not positive "
           "semi-definite)",
           g);
  for (int64_t i = 0; i < m; i++) y[i] = lambda[i] / gs;
  return inner_pcg(c->D, c->sigma, c->amg, lambda, y, c->eta, c->w, c->inner);
}

mb_error mb_willmore_dirac_eigen_pcg(mb_willmore_dirac *d, const mb_amg *amg,
                                     double tolerance, int max_iterations, double *lambda,
                                     double *eigenvalue, int *iterations, double *residual,
                                     int *inner) {
  MB_CHECK(d && amg && lambda && eigenvalue && iterations && residual && inner &&
               max_iterations >= 1,
           MB_ERR_ARG, "mb_willmore_dirac_eigen_pcg: bad arguments");
  const mb_csr *D = d->D;
  const int64_t m = D->nrows;
  MB_CHECK(4 * (int64_t)mb_amg_rows(amg) == m, MB_ERR_ARG,
           "mb_willmore_dirac_eigen_pcg: a hierarchy of %d rows for %lld vertices",
           mb_amg_rows(amg), (long long)(m / 4));
  double dmax = 0.0;
  MB_CALL(largest_diagonal(D, &dmax));
  *inner = 0;
  double *y = malloc(sizeof(double) * 5 * (size_t)(m ? m : 1));
  MB_CHECK(y, MB_ERR_MEMORY, "out of memory for the inverse iteration");
  pcg_solve_ctx c = {D, amg, MB_WILLMORE_SHIFT * dmax, MB_WILLMORE_INNER_RTOL * tolerance * dmax,
                     y + m, inner};
  const mb_error err = inverse_iteration(D, dmax, solve_pcg, &c, 1, tolerance, max_iterations,
                                         lambda, eigenvalue, iterations, residual, y);
  free(y);
  return err;
}

/* ------------------------------------------------------------ measures */

double mb_willmore_energy(const mb_csr *L, const double *mass, const double *x) {
  const int32_t n = L->nrows;
  double w = 0.0;
  for (int32_t i = 0; i < n; i++) {
    double y[3] = {0.0, 0.0, 0.0};
    for (int32_t e = L->rowptr[i]; e < L->rowptr[i + 1]; e++)
      for (int k = 0; k < 3; k++) y[k] += L->val[e] * x[3 * (size_t)L->col[e] + k];
    w += (y[0] * y[0] + y[1] * y[1] + y[2] * y[2]) / (4.0 * mass[i]);
  }
  return w;
}

/* Gram matrix of a triangle's edges x1 - x0, x2 - x0: g = (g11, g12, g22);
 * returns twice the area. */
static double gram(const double *x, const int64_t *t, double *g) {
  double u[3], v[3];
  for (int k = 0; k < 3; k++) {
    u[k] = x[3 * t[1] + k] - x[3 * t[0] + k];
    v[k] = x[3 * t[2] + k] - x[3 * t[0] + k];
  }
  g[0] = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];
  g[1] = u[0] * v[0] + u[1] * v[1] + u[2] * v[2];
  g[2] = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
  const double c0 = u[1] * v[2] - u[2] * v[1], c1 = u[2] * v[0] - u[0] * v[2],
               c2 = u[0] * v[1] - u[1] * v[0];
  return sqrt(c0 * c0 + c1 * c1 + c2 * c2);
}

void mb_willmore_distortion(int64_t nf, const int64_t *tri, const double *x0, const double *x,
                            double *qc_max, double *qc_mean) {
  double mx = 1.0, sum = 0.0, wsum = 0.0;
  for (int64_t f = 0; f < nf; f++) {
    double g0[3], g[3];
    const double a0 = gram(x0, tri + 3 * f, g0), a = gram(x, tri + 3 * f, g);
    /* the squared singular values are the eigenvalues mu of G0^-1 G:
     * det(G - mu G0) = 0, i.e. d0 mu^2 - t mu + d = 0 with d0 = det G0,
     * d = det G, t = g0_11 g_22 + g0_22 g_11 - 2 g0_12 g_12 */
    const double d0 = a0 * a0, d = a * a;
    const double t = g0[0] * g[2] + g0[2] * g[0] - 2.0 * g0[1] * g[1];
    double k = INFINITY;
    if (d0 > 0 && d > 0) {
      /* K + 1/K = t / sqrt(d0 d) (>= 2) with K = sigma_1 / sigma_2 */
      const double s = fmax(t / sqrt(d0 * d), 2.0);
      k = 0.5 * (s + sqrt(fmax(s * s - 4.0, 0.0)));
    }
    mx = fmax(mx, k);
    sum += 0.5 * a0 * k;
    wsum += 0.5 * a0;
  }
  *qc_max = mx;
  *qc_mean = wsum > 0 ? sum / wsum : INFINITY;
}

/* ------------------------------------------------------------ the flow */

typedef struct wm_work {
  mb_csr *L;            /* cotangent Laplacian of the current positions */
  mb_csr *P;            /* -L with vertex 0 pinned */
  mb_cholesky *pchol;   /* P's factor: analysis once per mesh (solver cholesky) */
  mb_amg *amg;          /* P's AMG hierarchy: made once per mesh (solver iterative) */
  int iterative;        /* the solver: mb_willmore_solver_for(p->solver, nv, 0) */
  mb_willmore_dirac *dirac;
  double *mass, *N, *H, *rho, *lambda, *b, *xn, *x0, *xs, *y;
} wm_work;

static void work_free(wm_work *w) {
  mb_csr_free(w->L);
  mb_csr_free(w->P);
  mb_cholesky_free(w->pchol);
  mb_amg_free(w->amg);
  mb_willmore_dirac_free(w->dirac);
  free(w->mass);
  free(w->N);
  free(w->H);
  free(w->rho);
  free(w->lambda);
  free(w->b);
  free(w->xn);
  free(w->x0);
  free(w->xs);
  free(w->y);
}

/* The surface checks of mb_willmore.h, before any step. */
static mb_error check_surface(const mb_willmore_mesh *wm) {
  const mb_adjacency *adj = wm->adj;
  const double *x = wm->x;
  for (int64_t i = 0; i < 3 * wm->nv; i++)
    MB_CHECK(isfinite(x[i]), MB_ERR_NUMERIC, "%s: vertex %lld has a non-finite coordinate",
             wm->name, (long long)(i / 3));
  for (int64_t i = 0; i < wm->nv; i++)
    MB_CHECK(adj->row[i + 1] > adj->row[i], MB_ERR_NUMERIC,
             "%s: vertex %lld belongs to no triangle (willmore_flow needs every vertex on the "
             "surface)",
             wm->name, (long long)i);
  for (int64_t i = 0; i < wm->nv; i++)
    for (int64_t k = adj->row[i]; k < adj->row[i + 1]; k++) {
      const int64_t nt = adj->opp_row[k + 1] - adj->opp_row[k];
      MB_CHECK(nt != 1, MB_ERR_UNSUPPORTED,
               "%s: edge %lld-%lld is a boundary edge: willmore_flow needs a closed surface "
               "(open surfaces are not supported; close the holes first)",
               wm->name, (long long)i, (long long)adj->col[k]);
      MB_CHECK(nt == 2, MB_ERR_UNSUPPORTED,
               "%s: edge %lld-%lld is non-manifold (%lld triangles share it): willmore_flow "
               "needs a manifold surface",
               wm->name, (long long)i, (long long)adj->col[k], (long long)nt);
    }
  /* orientation: every directed edge used by one triangle at most */
  uint8_t *used = calloc((size_t)(adj->nnz ? adj->nnz : 1), 1);
  MB_CHECK(used, MB_ERR_MEMORY, "out of memory");
  mb_error err = MB_SUCCESS;
  for (int64_t f = 0; f < wm->nf && !err; f++) {
    const int64_t *t = wm->tri + 3 * f;
    double a2, lmax = 0.0;
    MB_TRIANGLE_AREA2(double, x, t[0], t[1], t[2], a2);
    for (int a = 0; a < 3; a++) {
      const int64_t i = t[a], j = t[(a + 1) % 3];
      double l2 = 0.0;
      for (int k = 0; k < 3; k++) l2 += (x[3 * j + k] - x[3 * i + k]) * (x[3 * j + k] - x[3 * i + k]);
      lmax = fmax(lmax, l2);
      int64_t lo = adj->row[i], hi = adj->row[i + 1] - 1, pos = -1;
      while (lo <= hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (adj->col[mid] == j) {
          pos = mid;
          break;
        }
        if (adj->col[mid] < j) lo = mid + 1;
        else hi = mid - 1;
      }
      if (pos < 0 || used[pos]) {
        err = mb_error_set(MB_ERR_UNSUPPORTED, __FILE__, __LINE__, __func__,
                           "%s: triangle %lld traverses edge %lld->%lld as another triangle "
                           "does: the surface is not consistently oriented (or not orientable)",
                           wm->name, (long long)f, (long long)i, (long long)j);
        break;
      }
      used[pos] = 1;
    }
    if (!err && !(a2 > 1e-12 * lmax))
      err = mb_error_set(MB_ERR_NUMERIC, __FILE__, __LINE__, __func__,
                         "%s: triangle %lld is degenerate (zero area: twice its area %g, its "
                         "longest edge %g)",
                         wm->name, (long long)f, a2, sqrt(lmax));
  }
  free(used);
  return err;
}

/* Area-weighted vertex normals N [nv, 3] (unit). */
static mb_error vertex_normals(const mb_willmore_mesh *wm, double *N) {
  const double *x = wm->x;
  memset(N, 0, sizeof(double) * 3 * (size_t)wm->nv);
  for (int64_t f = 0; f < wm->nf; f++) {
    const int64_t *t = wm->tri + 3 * f;
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
  for (int64_t i = 0; i < wm->nv; i++) {
    const double l = norm2(3, N + 3 * i);
    MB_CHECK(l > 0 && isfinite(l), MB_ERR_NUMERIC, "%s: vertex %lld has no normal (length %g)",
             wm->name, (long long)i, l);
    for (int k = 0; k < 3; k++) N[3 * i + k] /= l;
  }
  return MB_SUCCESS;
}

/* Total area (sum of the masses) and area-weighted centroid c[3]. */
static double area_centroid(int64_t n, const double *mass, const double *x, double *c) {
  double a = 0.0;
  c[0] = c[1] = c[2] = 0.0;
  for (int64_t i = 0; i < n; i++) {
    a += mass[i];
    for (int k = 0; k < 3; k++) c[k] += mass[i] * x[3 * i + k];
  }
  for (int k = 0; k < 3; k++) c[k] /= a;
  return a;
}

/* L, the mass, and the energy of the current positions. */
static mb_error measure(const mb_willmore_mesh *wm, wm_work *w, double *energy) {
  MB_CALL(mb_csr_cotangent_laplacian(wm->adj, wm->x, w->L));
  MB_CALL(mb_mass_barycentric(wm->adj, wm->nv, wm->x, w->mass));
  for (int64_t i = 0; i < wm->nv; i++)
    MB_CHECK(w->mass[i] > 0, MB_ERR_NUMERIC, "%s: vertex %lld has zero area around it",
             wm->name, (long long)i);
  *energy = mb_willmore_energy(w->L, w->mass, wm->x);
  MB_CHECK(isfinite(*energy), MB_ERR_NUMERIC, "%s: the Willmore energy is %g", wm->name,
           *energy);
  return MB_SUCCESS;
}

/* The pinned Poisson matrix P = -L, vertex 0's row and column the
 * identity's, of this step's L; its AMG hierarchy made (first step) or
 * updated (solver iterative). */
static mb_error pinned_poisson(wm_work *w) {
  const mb_csr *L = w->L;
  mb_csr *P = w->P;
  for (int64_t i = 0; i < P->nrows; i++)
    for (int32_t e = P->rowptr[i]; e < P->rowptr[i + 1]; e++) {
      const int32_t j = P->col[e];
      P->val[e] = i == 0 || j == 0 ? (i == j ? 1.0 : 0.0) : -L->val[e];
    }
  if (!w->iterative) return MB_SUCCESS;
  if (!w->amg) {
    mb_amg_opts ao = mb_amg_opts_default();
    MB_CALL(mb_amg_opts_env(&ao));
    MB_CALL(mb_amg_create(P, &ao, &w->amg));
  } else {
    MB_CALL(mb_amg_update(w->amg, P));
  }
  return MB_SUCCESS;
}

/* The Poisson solve's PCG (solver iterative): iteration limit (the
 * relative residual: mb_willmore_poisson_rtol). */
#define MB_WILLMORE_POISSON_MAXIT 2000

double mb_willmore_poisson_rtol(int64_t nv) {
  const double floor = 100.0 * DBL_EPSILON * sqrt((double)(nv > 0 ? nv : 1));
  return floor > 1e-12 ? floor : 1e-12;
}

/* Step 4: the transformed edges' divergence b [nv, 3], the pinned Poisson
 * solve into w->xn (P made by pinned_poisson). */
static mb_error spin_positions(const mb_willmore_mesh *wm, wm_work *w, mb_willmore_step *st) {
  const mb_csr *L = w->L;
  const double *x = wm->x, *l = w->lambda;
  const int64_t n = wm->nv;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) {
    double s[3] = {0.0, 0.0, 0.0};
    for (int32_t e = L->rowptr[i]; e < L->rowptr[i + 1]; e++) {
      if (e == L->diag[i]) continue;
      const int64_t j = L->col[e];
      const double ed[4] = {0.0, x[3 * j] - x[3 * i], x[3 * j + 1] - x[3 * i + 1],
                            x[3 * j + 2] - x[3 * i + 2]};
      double t1[4], t2[4], t3[4], t4[4];
      mb_qsandwich(l + 4 * i, ed, l + 4 * i, t1);
      mb_qsandwich(l + 4 * i, ed, l + 4 * j, t2);
      mb_qsandwich(l + 4 * j, ed, l + 4 * i, t3);
      mb_qsandwich(l + 4 * j, ed, l + 4 * j, t4);
      for (int k = 0; k < 3; k++) {
        const double et = t1[k + 1] / 3.0 + t2[k + 1] / 6.0 + t3[k + 1] / 6.0 + t4[k + 1] / 3.0;
        s[k] += L->val[e] * et;
      }
    }
    /* (-L) x~ = -b */
    for (int k = 0; k < 3; k++) w->b[3 * i + k] = i == 0 ? 0.0 : -s[k];
  }
  mb_csr *P = w->P;
  if (w->iterative) {
    /* warm start: the current positions with vertex 0 at the origin, scaled
     * by the mean |lambda_i|^2 = 1 / nv (the edges' scale factor) */
    for (int64_t i = 0; i < n; i++)
      for (int k = 0; k < 3; k++) w->xn[3 * i + k] = (x[3 * i + k] - x[k]) / (double)n;
    const mb_pcg_opts o = {mb_willmore_poisson_rtol(wm->nv), MB_WILLMORE_POISSON_MAXIT, w->amg,
                           NULL};
    mb_solve_stats ss;
    MB_CALL(mb_pcg_solve(MPI_COMM_SELF, NULL, P, 3, w->b, w->xn, &o, &ss));
    st->poisson_iterations = ss.iterations;
  } else {
    if (!w->pchol) MB_CALL(mb_cholesky_create(P, &w->pchol)); /* once per mesh */
    MB_CALL(mb_cholesky_factor(w->pchol, P));
    MB_CALL(mb_cholesky_solve(w->pchol, 3, w->b, w->xn));
  }
  double res[3];
  MB_CALL(mb_residual(MPI_COMM_SELF, NULL, P, 3, w->b, w->xn, res));
  st->poisson_residual = fmax(res[0], fmax(res[1], res[2]));
  return MB_SUCCESS;
}

/* Add "MESH: step S: " before the recorded message of e. */
static mb_error at_step(const mb_willmore_mesh *wm, int s, mb_error e) {
  if (!e) return e;
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", mb_error_message());
  return mb_error_set(e, __FILE__, __LINE__, __func__, "%s: step %d: %s", wm->name, s + 1, msg);
}

static mb_error one_step(const mb_willmore_params *p, mb_willmore_mesh *wm, wm_work *w,
                         double a0, const double *c0, mb_willmore_step *st) {
  const int64_t n = wm->nv;
  const double t0 = mb_wtime();
  memcpy(w->xs, wm->x, sizeof(double) * 3 * (size_t)n);
  /* 1. rho = -tau H, projected (w->L and w->mass are of the current x) */
  MB_CALL(vertex_normals(wm, w->N));
  mb_csr_spmv(w->L, 3, wm->x, w->y);
  for (int64_t i = 0; i < n; i++) {
    const double *y = w->y + 3 * i, *N = w->N + 3 * i;
    w->H[i] = -(y[0] * N[0] + y[1] * N[1] + y[2] * N[2]) / (2.0 * w->mass[i]);
    w->rho[i] = -p->time_step * w->H[i];
  }
  MB_CALL(mb_willmore_project(n, w->mass, w->N, w->rho));
  st->rho_norm = sqrt(dot_m(n, w->mass, w->rho, w->rho));
  /* 2. D - rho */
  MB_CALL(mb_willmore_dirac_assemble(w->dirac, wm->x, w->rho));
  MB_CALL(pinned_poisson(w)); /* step 4's matrix: step 3's preconditioner too */
  const double t1 = mb_wtime();
  /* 3. lambda */
  st->iterative = w->iterative;
  if (w->iterative)
    MB_CALL(mb_willmore_dirac_eigen_pcg(w->dirac, w->amg, p->tolerance, p->max_iterations,
                                        w->lambda, &st->eigenvalue, &st->iterations,
                                        &st->residual, &st->inner_iterations));
  else
    MB_CALL(mb_willmore_dirac_eigen(w->dirac, p->tolerance, p->max_iterations, w->lambda,
                                    &st->eigenvalue, &st->iterations, &st->residual));
  const double t2 = mb_wtime();
  /* 4. positions */
  MB_CALL(spin_positions(wm, w, st));
  const double t3 = mb_wtime();
  for (int64_t i = 0; i < 3 * n; i++)
    MB_CHECK(isfinite(w->xn[i]), MB_ERR_NUMERIC, "vertex %lld became non-finite",
             (long long)(i / 3));
  MB_CALL(mb_mass_barycentric(wm->adj, n, w->xn, w->mass));
  double c[3];
  const double a = area_centroid(n, w->mass, w->xn, c);
  MB_CHECK(a > 0 && isfinite(a), MB_ERR_NUMERIC, "the surface's area became %g", a);
  const double s = sqrt(a0 / a);
  for (int64_t i = 0; i < n; i++)
    for (int k = 0; k < 3; k++) wm->x[3 * i + k] = c0[k] + (w->xn[3 * i + k] - c[k]) * s;
  MB_CALL(measure(wm, w, &st->energy));
  mb_willmore_distortion(wm->nf, wm->tri, w->xs, wm->x, &st->qc_max, &st->qc_mean);
  mb_willmore_distortion(wm->nf, wm->tri, w->x0, wm->x, &st->qc_total_max, &st->qc_total_mean);
  const double t4 = mb_wtime();
  st->assemble_ms = 1e3 * (t1 - t0);
  st->eigen_ms = 1e3 * (t2 - t1);
  st->poisson_ms = 1e3 * (t3 - t2);
  st->finish_ms = 1e3 * (t4 - t3);
  return MB_SUCCESS;
}

mb_error mb_willmore_check(const mb_willmore_params *p, const mb_willmore_mesh *wm) {
  MB_CHECK(p && wm && wm->adj && wm->x && p->steps >= 1, MB_ERR_ARG,
           "willmore_flow: bad arguments");
  MB_CHECK(p->time_step > 0 && isfinite(p->time_step), MB_ERR_ARG,
           "%s: time_step %g: it must be a finite number > 0", wm->name, p->time_step);
  MB_CHECK(p->max_iterations >= 1 && p->tolerance > 0, MB_ERR_ARG,
           "%s: max_iterations %d, tolerance %g: they must be >= 1 and > 0", wm->name,
           p->max_iterations, p->tolerance);
  MB_CHECK(p->solver >= MB_WILLMORE_AUTO && p->solver <= MB_WILLMORE_ITERATIVE, MB_ERR_ARG,
           "%s: solver %d: auto (0), cholesky (1) or iterative (2)", wm->name, p->solver);
  MB_CHECK(wm->adj->opp && wm->tri, MB_ERR_ARG,
           "%s: willmore_flow needs a triangle mesh (this one has polygons)", wm->name);
  MB_CHECK(wm->nv >= 4 && wm->nf >= 4, MB_ERR_ARG, "%s: willmore_flow needs a closed surface (%lld "
           "vertices, %lld triangles)", wm->name, (long long)wm->nv, (long long)wm->nf);
  MB_CALL(check_surface(wm));
  return MB_SUCCESS;
}

void mb_willmore_log_step(const char *name, int s, const mb_willmore_step *st) {
  if (st->iterative)
    mb_log(MB_LOG_VERBOSE, "%s: step %d: iterative solver: %d PCG iterations in the inverse "
           "iteration's solves, %d in the Poisson solve", name, s + 1, st->inner_iterations,
           st->poisson_iterations);
  mb_log(MB_LOG_VERBOSE,
         "%s: step %d: willmore energy %.10g, eigenvalue %.3g, inverse iteration %d solves "
         "residual %.3g, poisson residual %.3g, quasi-conformal distortion max %.6f mean "
         "%.6f (stage so far: max %.6f mean %.6f); %.1f ms: assembly %.1f, eigenvector %.1f, positions %.1f, update %.1f",
         name, s + 1, st->energy, st->eigenvalue, st->iterations, st->residual,
         st->poisson_residual, st->qc_max, st->qc_mean, st->qc_total_max, st->qc_total_mean,
         st->assemble_ms + st->eigen_ms + st->poisson_ms + st->finish_ms, st->assemble_ms,
         st->eigen_ms, st->poisson_ms, st->finish_ms);
}

static mb_error run(const mb_willmore_params *p, mb_willmore_mesh *wm, mb_willmore_report *rep,
                    wm_work *w) {
  const int64_t n = wm->nv;
  const double t0 = mb_wtime();
  MB_CALL(mb_willmore_check(p, wm));
  MB_CALL(mb_csr_pattern(wm->adj, n, n, NULL, &w->L));
  MB_CALL(mb_csr_pattern(wm->adj, n, n, NULL, &w->P));
  const size_t sn = (size_t)n;
  MB_CHECK((w->mass = malloc(sizeof(double) * sn)) && (w->N = malloc(sizeof(double) * 3 * sn)) &&
               (w->H = malloc(sizeof(double) * sn)) && (w->rho = malloc(sizeof(double) * sn)) &&
               (w->lambda = malloc(sizeof(double) * 4 * sn)) &&
               (w->b = malloc(sizeof(double) * 3 * sn)) &&
               (w->xn = malloc(sizeof(double) * 3 * sn)) &&
               (w->x0 = malloc(sizeof(double) * 3 * sn)) &&
               (w->xs = malloc(sizeof(double) * 3 * sn)) &&
               (w->y = malloc(sizeof(double) * 3 * sn)),
           MB_ERR_MEMORY, "%s: out of memory for willmore_flow's arrays", wm->name);
  memcpy(w->x0, wm->x, sizeof(double) * 3 * sn);
  w->iterative = mb_willmore_solver_for(p->solver, n, 0) == MB_WILLMORE_ITERATIVE;
  MB_CALL(dirac_create(wm->adj, wm->nf, wm->tri, !w->iterative, &w->dirac));
  MB_CALL(measure(wm, w, &rep->energy0));
  double c0[3];
  const double a0 = area_centroid(n, w->mass, wm->x, c0);
  rep->steps = 0;
  rep->setup_ms = 1e3 * (mb_wtime() - t0);
  for (int s = 0; s < p->steps; s++) {
    if (mb_op_should_stop(wm->ctx, s, p->steps)) return mb_op_stopped(wm->ctx);
    mb_willmore_step *st = &rep->step[s];
    memset(st, 0, sizeof *st);
    MB_CALL(at_step(wm, s, one_step(p, wm, w, a0, c0, st)));
    rep->steps = s + 1;
    mb_willmore_log_step(wm->name, s, st);
  }
  return MB_SUCCESS;
}

mb_error mb_willmore_run_cpu(const mb_willmore_params *p, mb_willmore_mesh *wm,
                             mb_willmore_report *rep) {
  MB_CHECK(p && wm && wm->adj && wm->x && rep && rep->step && p->steps >= 1,
           MB_ERR_ARG, "mb_willmore_run_cpu: bad arguments");
  wm_work w = {0};
  mb_error e = run(p, wm, rep, &w);
  work_free(&w);
  return e;
}

void mb_willmore_describe(const mb_willmore_report *rep, char *buf, size_t len) {
  if (!len) return;
  int w0 = snprintf(buf, len, "energy0 %.10g", rep->energy0);
  size_t used = w0 > 0 && (size_t)w0 < len ? (size_t)w0 : 0;
  for (int s = 0; s < rep->steps; s++) {
    const mb_willmore_step *st = &rep->step[s];
    int w = snprintf(buf + used, len - used,
                     "; step %d: energy %.10g eigenvalue %.6g iterations %d residual %.3g "
                     "poisson %.3g qc max %.6f mean %.6f total max %.6f mean %.6f",
                     s + 1, st->energy, st->eigenvalue, st->iterations, st->residual,
                     st->poisson_residual, st->qc_max, st->qc_mean, st->qc_total_max,
                     st->qc_total_mean);
    if (w >= 0 && (size_t)w < len - used && st->iterative)
      w += snprintf(buf + used + w, len - used - (size_t)w, " inner %d poisson_iterations %d",
                    st->inner_iterations, st->poisson_iterations);
    if (w < 0 || (size_t)w >= len - used) {
      if (len >= 4) memcpy(buf + len - 4, "...", 4);
      return;
    }
    used += (size_t)w;
  }
}
