/* meshbatch: smoothed-aggregation AMG on the CPU (see mb_amg.h for the
 * method and its source: Vanek, Mandel, Brezina, Computing 56, 1996).
 *
 * Layout: level l holds its matrix A_l (CSR, columns ascending within a
 * row on the coarse levels), dinv_l = 1 / diag(A_l), the Gershgorin bound
 * rho_l of D_l^-1 A_l, and towards level l + 1 the prolongator P_l, its
 * transpose R_l and the product A_l P_l. The Galerkin product
 * A_{l+1} = R_l (A_l P_l) has its pattern made once (symbolic product) and
 * its values recomputed by mb_amg_update (numeric product): each entry of
 * a product is the sum, in the order of the left factor's row entries then
 * the right factor's row entries, of products rounded once
 * (-ffp-contract=off). No sum crosses rows, so the OpenMP schedule cannot
 * change a bit.
 */
#include "mb_amg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mb_solver.h"

/* Chebyshev interval [rho / CHEB_RATIO, rho] of D^-1 A. */
#define CHEB_RATIO 30.0

typedef struct amg_level {
  mb_csr *A;            /* this level's matrix (owned) */
  mb_csr *P, *R, *AP;   /* to the next level (NULL on the coarsest) */
  int32_t *sym;         /* [A->nnz] coarse levels: position of each entry's transpose */
  double *dinv;         /* [n] */
  double rho;           /* Gershgorin bound of rho(D^-1 A) */
  double cheb_c1[4], cheb_c2[4]; /* Chebyshev recurrence coefficients (see smooth) */
  double cheb_d0;       /* 1 / theta, the first step's factor */
  double *x, *b, *r, *q, *d; /* work [n, MB_AMG_MAX_COMP] */
} amg_level;

struct mb_amg {
  mb_amg_opts o;
  int nlev;
  amg_level lev[MB_AMG_MAX_LEVELS];
  mb_cholesky *chol; /* the coarsest level's factor */
  int usable;
  double setup_ms;
};

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

mb_amg_opts mb_amg_opts_default(void) {
  mb_amg_opts o = {.theta = 0.08, .max_levels = 10, .max_coarse = 2000, .degree = 2};
  return o;
}

mb_error mb_amg_opts_env(mb_amg_opts *o) {
  MB_CHECK(o, MB_ERR_ARG, "mb_amg_opts_env: NULL argument");
  const char *env = getenv("MESHBATCH_AMG");
  if (!env || !*env) return MB_SUCCESS;
  mb_amg_opts t = *o;
  char buf[256];
  MB_CHECK(strlen(env) < sizeof buf, MB_ERR_ARG, "MESHBATCH_AMG is too long (%zu characters)",
           strlen(env));
  strcpy(buf, env);
  for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(kv, '='), *end = NULL;
    MB_CHECK(eq && eq[1], MB_ERR_ARG, "MESHBATCH_AMG: '%s' is not key=value", kv);
    *eq = 0;
    const char *val = eq + 1;
    if (!strcmp(kv, "theta")) {
      t.theta = strtod(val, &end);
    } else {
      const long v = strtol(val, &end, 10);
      if (!strcmp(kv, "max_levels")) t.max_levels = (int)v;
      else if (!strcmp(kv, "max_coarse")) t.max_coarse = (int)v;
      else if (!strcmp(kv, "degree")) t.degree = (int)v;
      else MB_FAIL(MB_ERR_ARG, "MESHBATCH_AMG: unknown key '%s' (theta, max_levels, max_coarse, "
                   "degree)", kv);
    }
    MB_CHECK(end && end != val && !*end, MB_ERR_ARG, "MESHBATCH_AMG: %s=%s is not a number", kv,
             val);
  }
  *o = t;
  return MB_SUCCESS;
}

/* ------------------------------------------------------------ matrices */

/* A CSR matrix with nnz entries, rowptr zeroed; edge left NULL (the
 * operators' directed edges mean nothing on the coarse levels). */
static mb_error csr_new(int32_t nrows, int32_t ncols, int64_t nnz, mb_csr **out) {
  *out = NULL;
  MB_CHECK(nnz <= INT32_MAX, MB_ERR_ARG,
           "AMG: a level of %lld entries exceeds the 32-bit indices of a CSR matrix",
           (long long)nnz);
  mb_csr *A;
  MB_CALLOC(A, 1);
  A->nrows = nrows;
  A->ncols = ncols;
  A->nnz = (int32_t)nnz;
  A->rowptr = mb_zalloc((size_t)nrows + 1, sizeof(int32_t));
  A->col = mb_zalloc(nnz ? (size_t)nnz : 1, sizeof(int32_t));
  A->diag = mb_zalloc(nrows ? (size_t)nrows : 1, sizeof(int32_t));
  A->val = mb_zalloc(nnz ? (size_t)nnz : 1, sizeof(double));
  if (!A->rowptr || !A->col || !A->diag || !A->val) {
    mb_csr_free(A);
    MB_FAIL(MB_ERR_MEMORY, "AMG: out of memory for a matrix of %d rows and %lld entries", nrows,
            (long long)nnz);
  }
  *out = A;
  return MB_SUCCESS;
}

/* diag[i] = the position of (i, i) in row i; MB_ERR_ARG where absent. */
static mb_error find_diag(mb_csr *A) {
  int32_t missing = -1;
  for (int32_t i = 0; i < A->nrows && missing < 0; i++) {
    A->diag[i] = -1;
    for (int32_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++)
      if (A->col[e] == i) A->diag[i] = e;
    if (A->diag[i] < 0) missing = i;
  }
  MB_CHECK(missing < 0, MB_ERR_ARG, "AMG: row %d of a level has no diagonal entry", missing);
  return MB_SUCCESS;
}

static int cmp_i32(const void *a, const void *b) {
  const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* The pattern of C = A B (A [m, k], B [k, n]): row i holds the columns
 * of the rows of B that A's row i names, ascending. Values zeroed. */
static mb_error spgemm_symbolic(const mb_csr *A, const mb_csr *B, mb_csr **out) {
  *out = NULL;
  const int32_t m = A->nrows, n = B->ncols;
  int64_t *cnt = mb_zalloc((size_t)m + 1, sizeof(int64_t));
  MB_CHECK(cnt, MB_ERR_MEMORY, "AMG: out of memory for a product's pattern");
  int bad = 0;
#pragma omp parallel reduction(| : bad)
  {
    int32_t *mark = malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    if (!mark) bad = 1;
    if (mark)
      for (int32_t j = 0; j < n; j++) mark[j] = -1;
#pragma omp for schedule(static)
    for (int32_t i = 0; i < m; i++) {
      if (!mark) continue;
      int64_t c = 0;
      for (int32_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++) {
        const int32_t k = A->col[e];
        for (int32_t f = B->rowptr[k]; f < B->rowptr[k + 1]; f++)
          if (mark[B->col[f]] != i) {
            mark[B->col[f]] = i;
            c++;
          }
      }
      cnt[i + 1] = c;
    }
    free(mark);
  }
  if (bad) {
    free(cnt);
    MB_FAIL(MB_ERR_MEMORY, "AMG: out of memory for a product's pattern");
  }
  for (int32_t i = 0; i < m; i++) cnt[i + 1] += cnt[i];
  mb_csr *C;
  mb_error err = csr_new(m, n, cnt[m], &C);
  if (err) {
    free(cnt);
    return err;
  }
  for (int32_t i = 0; i <= m; i++) C->rowptr[i] = (int32_t)cnt[i];
  free(cnt);
#pragma omp parallel reduction(| : bad)
  {
    int32_t *mark = malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    if (!mark) bad = 1;
    if (mark)
      for (int32_t j = 0; j < n; j++) mark[j] = -1;
#pragma omp for schedule(static)
    for (int32_t i = 0; i < m; i++) {
      if (!mark) continue;
      int32_t c = C->rowptr[i];
      for (int32_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++) {
        const int32_t k = A->col[e];
        for (int32_t f = B->rowptr[k]; f < B->rowptr[k + 1]; f++)
          if (mark[B->col[f]] != i) {
            mark[B->col[f]] = i;
            C->col[c++] = B->col[f];
          }
      }
      qsort(C->col + C->rowptr[i], (size_t)(C->rowptr[i + 1] - C->rowptr[i]), sizeof(int32_t),
            cmp_i32);
    }
    free(mark);
  }
  if (bad) {
    mb_csr_free(C);
    MB_FAIL(MB_ERR_MEMORY, "AMG: out of memory for a product's pattern");
  }
  *out = C;
  return MB_SUCCESS;
}

/* C's values = A B on C's pattern (from spgemm_symbolic): c_ij = 0.0,
 * then c_ij += a_ik * b_kj for the entries k of A's row i in order and,
 * within, the entries j of B's row k in order. */
static mb_error spgemm_numeric(const mb_csr *A, const mb_csr *B, mb_csr *C) {
  const int32_t m = A->nrows, n = C->ncols;
  int bad = 0;
#pragma omp parallel reduction(| : bad)
  {
    int32_t *pos = malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    if (!pos) bad = 1;
#pragma omp for schedule(static)
    for (int32_t i = 0; i < m; i++) {
      if (!pos) continue;
      for (int32_t e = C->rowptr[i]; e < C->rowptr[i + 1]; e++) {
        pos[C->col[e]] = e;
        C->val[e] = 0.0;
      }
      for (int32_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++) {
        const double a = A->val[e];
        const int32_t k = A->col[e];
        for (int32_t f = B->rowptr[k]; f < B->rowptr[k + 1]; f++)
          C->val[pos[B->col[f]]] += a * B->val[f];
      }
    }
    free(pos);
  }
  MB_CHECK(!bad, MB_ERR_MEMORY, "AMG: out of memory for a product");
  return MB_SUCCESS;
}

/* R = P^T (columns ascending within R's rows: P's rows in order). */
static mb_error transpose(const mb_csr *P, mb_csr **out) {
  mb_csr *R;
  MB_CALL(csr_new(P->ncols, P->nrows, P->nnz, &R));
  for (int32_t e = 0; e < P->nnz; e++) R->rowptr[P->col[e] + 1]++;
  for (int32_t j = 0; j < R->nrows; j++) R->rowptr[j + 1] += R->rowptr[j];
  int32_t *next = malloc((size_t)(R->nrows ? R->nrows : 1) * sizeof(int32_t));
  if (!next) {
    mb_csr_free(R);
    MB_FAIL(MB_ERR_MEMORY, "AMG: out of memory for a transpose");
  }
  memcpy(next, R->rowptr, (size_t)R->nrows * sizeof(int32_t));
  for (int32_t i = 0; i < P->nrows; i++)
    for (int32_t e = P->rowptr[i]; e < P->rowptr[i + 1]; e++) {
      const int32_t t = next[P->col[e]]++;
      R->col[t] = i;
      R->val[t] = P->val[e];
    }
  free(next);
  *out = R;
  return MB_SUCCESS;
}

/* sym[e] = the position of entry e's transpose (columns ascending within
 * rows); MB_ERR_ARG where the pattern is not symmetric. */
static mb_error transpose_map(const mb_csr *A, int32_t **out) {
  int32_t *sym = malloc((size_t)(A->nnz ? A->nnz : 1) * sizeof(int32_t));
  MB_CHECK(sym, MB_ERR_MEMORY, "AMG: out of memory");
  int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad)
  for (int32_t i = 0; i < A->nrows; i++)
    for (int32_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++) {
      const int32_t j = A->col[e];
      int32_t lo = A->rowptr[j], hi = A->rowptr[j + 1];
      while (lo < hi) {
        const int32_t mid = lo + (hi - lo) / 2;
        if (A->col[mid] < i) lo = mid + 1;
        else hi = mid;
      }
      if (lo < A->rowptr[j + 1] && A->col[lo] == i) sym[e] = lo;
      else bad = 1;
    }
  if (bad) {
    free(sym);
    MB_FAIL(MB_ERR_ARG, "AMG: the matrix's pattern is not symmetric");
  }
  *out = sym;
  return MB_SUCCESS;
}

/* ------------------------------------------------------------- levels */

static void level_free(amg_level *L) {
  mb_csr_free(L->A);
  mb_csr_free(L->P);
  mb_csr_free(L->R);
  mb_csr_free(L->AP);
  free(L->sym);
  free(L->dinv);
  free(L->x);
  free(L->b);
  free(L->r);
  free(L->q);
  free(L->d);
  memset(L, 0, sizeof *L);
}

/* dinv, rho and the Chebyshev coefficients of a level from its values;
 * MB_ERR_NUMERIC for a diagonal <= 0 or a non-finite value. */
static mb_error level_values(amg_level *L, int lev, int degree) {
  const mb_csr *A = L->A;
  int32_t badrow = -1;
  double rho = 0;
  for (int32_t i = 0; i < A->nrows; i++) {
    const double a = A->val[A->diag[i]];
    double s = 0.0;
    for (int32_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++) s += fabs(A->val[e]);
    if (!(a > 0) || !isfinite(s)) {
      badrow = i;
      break;
    }
    L->dinv[i] = 1.0 / a;
    const double g = s / a;
    if (g > rho) rho = g;
  }
  if (badrow >= 0) {
    if (lev == 0)
      MB_FAIL(MB_ERR_NUMERIC,
              "AMG: row %d has a diagonal entry <= 0 or a non-finite value: the matrix is not "
              "symmetric positive definite",
              badrow);
    MB_FAIL(MB_ERR_NUMERIC,
            "AMG: row %d of level %d (a Galerkin product) has a diagonal entry <= 0 or a "
            "non-finite value: the matrix is not positive definite",
            badrow, lev);
  }
  L->rho = rho;
  mb_amg_chebyshev(rho, degree, &L->cheb_d0, L->cheb_c1, L->cheb_c2);
  return MB_SUCCESS;
}

void mb_amg_chebyshev(double rho, int degree, double *d0, double c1[4], double c2[4]) {
  const double hi = rho, lo = rho / CHEB_RATIO;
  const double theta = 0.5 * (hi + lo), delta = 0.5 * (hi - lo), sigma = theta / delta;
  double rho_old = 1.0 / sigma;
  *d0 = 1.0 / theta;
  for (int k = 1; k < degree && k < 4; k++) {
    const double rho_new = 1.0 / (2.0 * sigma - rho_old);
    c1[k] = rho_new * rho_old;
    c2[k] = 2.0 * rho_new / delta;
    rho_old = rho_new;
  }
}

/* Aggregates of A (mb_amg.h's three passes): agg [n] = the aggregate of
 * each row, -1 for a row without a strong neighbour; *nagg their count.
 * join [n]: work. */
static void aggregate(const mb_csr *A, double theta, int32_t *agg, int32_t *join,
                      int32_t *nagg) {
  const int32_t n = A->nrows;
#define STRONG(i, e)                                                                        \
  (A->col[e] != (i) && A->val[e] != 0 &&                                                    \
   (theta == 0 || fabs(A->val[e]) >= theta * sqrt(A->val[A->diag[i]] *                      \
                                                   A->val[A->diag[A->col[e]]])))
  int32_t na = 0;
  for (int32_t i = 0; i < n; i++) agg[i] = -1;
  /* 1: a row whose strong neighbours are all free starts an aggregate */
  for (int32_t i = 0; i < n; i++) {
    if (agg[i] >= 0) continue;
    int strong = 0, free_ = 1;
    for (int32_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++)
      if (STRONG(i, e)) {
        strong = 1;
        if (agg[A->col[e]] >= 0) free_ = 0;
      }
    if (!strong || !free_) continue;
    agg[i] = na;
    for (int32_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++)
      if (STRONG(i, e)) agg[A->col[e]] = na;
    na++;
  }
  /* 2: a free row joins its first strong neighbour's pass-1 aggregate */
  const int32_t na1 = na;
  for (int32_t i = 0; i < n; i++) {
    int32_t a = -1;
    if (agg[i] < 0)
      for (int32_t e = A->rowptr[i]; e < A->rowptr[i + 1] && a < 0; e++)
        if (STRONG(i, e) && agg[A->col[e]] >= 0 && agg[A->col[e]] < na1) a = agg[A->col[e]];
    join[i] = a;
  }
  for (int32_t i = 0; i < n; i++)
    if (agg[i] < 0 && join[i] >= 0) agg[i] = join[i];
  /* 3: a row still free with strong neighbours starts an aggregate of
   * itself and its free strong neighbours */
  for (int32_t i = 0; i < n; i++) {
    if (agg[i] >= 0) continue;
    int strong = 0;
    for (int32_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++)
      if (STRONG(i, e)) strong = 1;
    if (!strong) continue;
    agg[i] = na;
    for (int32_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++)
      if (STRONG(i, e) && agg[A->col[e]] < 0) agg[A->col[e]] = na;
    na++;
  }
#undef STRONG
  *nagg = na;
}

/* P = (I - omega D^-1 A) P0, P0 the aggregates' indicator (P0_{i,agg[i]} =
 * 1): row i holds the aggregates of i and of its neighbours k with
 * a_ik != 0, columns ascending; P_ij = sum over the entries k of row i in
 * order with agg[k] = j of (k == i ? 1 - s a_ii : -(s a_ik)), s = omega
 * dinv_i. */
static mb_error prolongator(const amg_level *L, const int32_t *agg, int32_t nagg,
                            mb_csr **out) {
  const mb_csr *A = L->A;
  const double omega = (4.0 / 3.0) / L->rho;
  mb_csr *P;
  MB_CALL(csr_new(A->nrows, nagg, A->nnz, &P)); /* at most one entry per entry of A */
  int32_t c = 0;
  for (int32_t i = 0; i < A->nrows; i++) {
    const int32_t start = c;
    const double s = omega * L->dinv[i];
    for (int32_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++) {
      const int32_t k = A->col[e], j = agg[k];
      if (j < 0 || (k != i && A->val[e] == 0)) continue;
      const double v = k == i ? 1.0 - s * A->val[e] : -(s * A->val[e]);
      int32_t t = start;
      while (t < c && P->col[t] != j) t++;
      if (t == c) {
        P->col[c] = j;
        P->val[c++] = 0.0;
      }
      P->val[t] += v;
    }
    /* columns ascending (insertion sort: a row has a few entries) */
    for (int32_t t = start + 1; t < c; t++) {
      const int32_t cj = P->col[t];
      const double cv = P->val[t];
      int32_t u = t;
      for (; u > start && P->col[u - 1] > cj; u--) {
        P->col[u] = P->col[u - 1];
        P->val[u] = P->val[u - 1];
      }
      P->col[u] = cj;
      P->val[u] = cv;
    }
    P->rowptr[i + 1] = c;
  }
  P->nnz = c;
  *out = P;
  return MB_SUCCESS;
}

static mb_error level_work(amg_level *L) {
  const size_t nn = (size_t)(L->A->nrows ? L->A->nrows : 1) * MB_AMG_MAX_COMP;
  L->dinv = malloc((size_t)(L->A->nrows ? L->A->nrows : 1) * sizeof(double));
  L->x = malloc(nn * sizeof(double));
  L->b = malloc(nn * sizeof(double));
  L->r = malloc(nn * sizeof(double));
  L->q = malloc(nn * sizeof(double));
  L->d = malloc(nn * sizeof(double));
  MB_CHECK(L->dinv && L->x && L->b && L->r && L->q && L->d, MB_ERR_MEMORY,
           "AMG: out of memory for a level of %d rows", L->A->nrows);
  return MB_SUCCESS;
}

/* The Galerkin values of level l + 1 from level l's, made symmetric. */
static mb_error galerkin_values(amg_level *f, amg_level *c) {
  MB_CALL(spgemm_numeric(f->A, f->P, f->AP));
  MB_CALL(spgemm_numeric(f->R, f->AP, c->A));
  mb_csr *A = c->A;
#pragma omp parallel for schedule(static)
  for (int32_t i = 0; i < A->nrows; i++)
    for (int32_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++)
      if (A->col[e] > i) A->val[c->sym[e]] = A->val[e];
  return MB_SUCCESS;
}

void mb_amg_free(mb_amg *amg) {
  if (!amg) return;
  for (int l = 0; l < amg->nlev; l++) level_free(&amg->lev[l]);
  mb_cholesky_free(amg->chol);
  free(amg);
}

/* The first level: a copy of A (its diagonal positions kept). */
static mb_error copy_matrix(const mb_csr *A, mb_csr **out) {
  mb_csr *C;
  MB_CALL(csr_new(A->nrows, A->ncols, A->nnz, &C));
  memcpy(C->rowptr, A->rowptr, ((size_t)A->nrows + 1) * sizeof(int32_t));
  memcpy(C->col, A->col, (size_t)A->nnz * sizeof(int32_t));
  memcpy(C->val, A->val, (size_t)A->nnz * sizeof(double));
  mb_error err = find_diag(C);
  if (err) mb_csr_free(C);
  else *out = C;
  return err;
}

static mb_error build(mb_amg *amg, const mb_csr *A) {
  MB_CALL(copy_matrix(A, &amg->lev[0].A));
  amg->nlev = 1;
  MB_CALL(level_work(&amg->lev[0]));
  MB_CALL(level_values(&amg->lev[0], 0, amg->o.degree));
  for (int l = 0;; l++) {
    amg_level *f = &amg->lev[l];
    const int32_t n = f->A->nrows;
    if (n <= amg->o.max_coarse || l + 1 >= amg->o.max_levels) break;
    int32_t *agg = malloc((size_t)n * sizeof(int32_t)), nagg = 0;
    int32_t *join = malloc((size_t)n * sizeof(int32_t));
    if (!agg || !join) {
      free(agg);
      free(join);
      MB_FAIL(MB_ERR_MEMORY, "AMG: out of memory for the aggregates of %d rows", n);
    }
    aggregate(f->A, amg->o.theta, agg, join, &nagg);
    free(join);
    if (nagg == 0 || (double)nagg > 0.9 * (double)n) { /* the coarsening stalls */
      free(agg);
      break;
    }
    mb_error err = prolongator(f, agg, nagg, &f->P);
    free(agg);
    MB_CALL(err);
    MB_CALL(transpose(f->P, &f->R));
    MB_CALL(spgemm_symbolic(f->A, f->P, &f->AP));
    amg_level *c = &amg->lev[l + 1];
    amg->nlev = l + 2;
    MB_CALL(spgemm_symbolic(f->R, f->AP, &c->A));
    MB_CALL(find_diag(c->A));
    MB_CALL(transpose_map(c->A, &c->sym));
    MB_CALL(level_work(c));
    MB_CALL(galerkin_values(f, c));
    MB_CALL(level_values(c, l + 1, amg->o.degree));
  }
  MB_CALL(mb_cholesky_create(amg->lev[amg->nlev - 1].A, &amg->chol));
  MB_CALL(mb_cholesky_factor(amg->chol, amg->lev[amg->nlev - 1].A));
  return MB_SUCCESS;
}

mb_error mb_amg_create(const mb_csr *A, const mb_amg_opts *opts, mb_amg **out) {
  MB_CHECK(A && out, MB_ERR_ARG, "mb_amg_create: NULL argument");
  *out = NULL;
  MB_CHECK(A->nrows == A->ncols && A->nrows >= 1, MB_ERR_ARG,
           "mb_amg_create: the matrix must be square and not empty (%d rows, %d columns): AMG "
           "preconditions one rank's whole matrix",
           A->nrows, A->ncols);
  const mb_amg_opts o = opts ? *opts : mb_amg_opts_default();
  MB_CHECK(o.theta >= 0 && o.theta < 1 && o.max_levels >= 1 &&
               o.max_levels <= MB_AMG_MAX_LEVELS && o.max_coarse >= 1 && o.degree >= 1 &&
               o.degree <= 4,
           MB_ERR_ARG,
           "mb_amg_create: options out of range (theta %g in [0, 1), max_levels %d in 1..%d, "
           "max_coarse %d >= 1, degree %d in 1..4)",
           o.theta, o.max_levels, MB_AMG_MAX_LEVELS, o.max_coarse, o.degree);
  const double t0 = now_ms();
  mb_amg *amg;
  MB_CALLOC(amg, 1);
  amg->o = o;
  mb_error err = build(amg, A);
  if (err) {
    mb_error_trace(__FILE__, __LINE__, __func__);
    mb_amg_free(amg);
    return err;
  }
  amg->usable = 1;
  amg->setup_ms = now_ms() - t0;
  *out = amg;
  return MB_SUCCESS;
}

mb_error mb_amg_update(mb_amg *amg, const mb_csr *A) {
  MB_CHECK(amg && A, MB_ERR_ARG, "mb_amg_update: NULL argument");
  mb_csr *A0 = amg->lev[0].A;
  MB_CHECK(A->nrows == A0->nrows && A->ncols == A0->ncols && A->nnz == A0->nnz &&
               !memcmp(A->rowptr, A0->rowptr, ((size_t)A->nrows + 1) * sizeof(int32_t)) &&
               !memcmp(A->col, A0->col, (size_t)A->nnz * sizeof(int32_t)),
           MB_ERR_ARG,
           "mb_amg_update: the matrix's pattern is not the one the hierarchy was built from");
  const double t0 = now_ms();
  amg->usable = 0;
  memcpy(A0->val, A->val, (size_t)A->nnz * sizeof(double));
  MB_CALL(level_values(&amg->lev[0], 0, amg->o.degree));
  for (int l = 0; l + 1 < amg->nlev; l++) {
    MB_CALL(galerkin_values(&amg->lev[l], &amg->lev[l + 1]));
    MB_CALL(level_values(&amg->lev[l + 1], l + 1, amg->o.degree));
  }
  MB_CALL(mb_cholesky_factor(amg->chol, amg->lev[amg->nlev - 1].A));
  amg->usable = 1;
  amg->setup_ms = now_ms() - t0;
  return MB_SUCCESS;
}

/* -------------------------------------------------------------- cycle */

/* x += S (b - A x), S the Chebyshev polynomial of D^-1 A of the level's
 * degree times D^-1 (Saad, algorithm 12.1); zero: x = 0 on entry (then
 * r = b, no product). nc columns. */
static void smooth(const amg_level *L, int degree, int nc, const double *b, double *x,
                   int zero) {
  const mb_csr *A = L->A;
  const int32_t n = A->nrows;
  double *r = L->r, *d = L->d, *q = L->q;
  const double *dinv = L->dinv;
  const double d0 = L->cheb_d0;
  if (zero) {
#pragma omp parallel for schedule(static)
    for (int32_t i = 0; i < n; i++)
      for (int c = 0; c < nc; c++) {
        const size_t k = (size_t)i * nc + c;
        r[k] = b[k];
        d[k] = (dinv[i] * b[k]) * d0;
        x[k] = d[k];
      }
  } else {
    mb_csr_spmv(A, nc, x, q);
#pragma omp parallel for schedule(static)
    for (int32_t i = 0; i < n; i++)
      for (int c = 0; c < nc; c++) {
        const size_t k = (size_t)i * nc + c;
        r[k] = b[k] - q[k];
        d[k] = (dinv[i] * r[k]) * d0;
        x[k] += d[k];
      }
  }
  for (int s = 1; s < degree; s++) {
    const double c1 = L->cheb_c1[s], c2 = L->cheb_c2[s];
    mb_csr_spmv(A, nc, d, q);
#pragma omp parallel for schedule(static)
    for (int32_t i = 0; i < n; i++)
      for (int c = 0; c < nc; c++) {
        const size_t k = (size_t)i * nc + c;
        r[k] -= q[k];
        d[k] = c1 * d[k] + c2 * (dinv[i] * r[k]);
        x[k] += d[k];
      }
  }
}

static mb_error vcycle(const mb_amg *amg, int l, int nc, const double *b, double *x) {
  const amg_level *L = &amg->lev[l];
  if (l == amg->nlev - 1) return mb_cholesky_solve(amg->chol, nc, b, x);
  const amg_level *C = &amg->lev[l + 1];
  const int64_t nn = (int64_t)L->A->nrows * nc;
  smooth(L, amg->o.degree, nc, b, x, 1);
  /* the coarse correction: x += P A_c^-1 R (b - A x) */
  mb_csr_spmv(L->A, nc, x, L->q);
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < nn; k++) L->r[k] = b[k] - L->q[k];
  mb_csr_spmv(L->R, nc, L->r, C->b);
  MB_CALL(vcycle(amg, l + 1, nc, C->b, C->x));
  mb_csr_spmv(L->P, nc, C->x, L->q);
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < nn; k++) x[k] += L->q[k];
  smooth(L, amg->o.degree, nc, b, x, 0);
  return MB_SUCCESS;
}

mb_error mb_amg_apply(const mb_amg *amg, int nc, const double *r, double *z) {
  MB_CHECK(amg && r && z && r != z, MB_ERR_ARG, "mb_amg_apply: NULL or aliased argument");
  MB_CHECK(nc >= 1 && nc <= MB_AMG_MAX_COMP, MB_ERR_ARG,
           "mb_amg_apply: %d columns (1 to %d are applied together)", nc, MB_AMG_MAX_COMP);
  MB_CHECK(amg->usable, MB_ERR_ARG,
           "mb_amg_apply: the hierarchy is not usable (its last update failed)");
  MB_CALL(vcycle(amg, 0, nc, r, z));
  return MB_SUCCESS;
}

int mb_amg_levels(const mb_amg *amg, mb_amg_opts *opts) {
  if (!amg) return 0;
  if (opts) *opts = amg->o;
  return amg->nlev;
}

mb_error mb_amg_level(const mb_amg *amg, int l, mb_amg_level_view *v) {
  MB_CHECK(amg && v && l >= 0 && l < amg->nlev, MB_ERR_ARG,
           "mb_amg_level: NULL argument or level %d out of range", l);
  const amg_level *L = &amg->lev[l];
  *v = (mb_amg_level_view){L->A, L->P, L->R, L->AP, L->sym};
  return MB_SUCCESS;
}

int32_t mb_amg_rows(const mb_amg *amg) { return amg ? amg->lev[0].A->nrows : 0; }

mb_error mb_amg_get_stats(const mb_amg *amg, mb_amg_stats *st) {
  MB_CHECK(amg && st, MB_ERR_ARG, "mb_amg_get_stats: NULL argument");
  memset(st, 0, sizeof *st);
  st->levels = amg->nlev;
  double sum = 0;
  for (int l = 0; l < amg->nlev; l++) {
    st->rows[l] = amg->lev[l].A->nrows;
    st->nnz[l] = amg->lev[l].A->nnz;
    sum += (double)st->nnz[l];
  }
  st->operator_complexity = sum / (double)st->nnz[0];
  st->setup_ms = amg->setup_ms;
  return MB_SUCCESS;
}
