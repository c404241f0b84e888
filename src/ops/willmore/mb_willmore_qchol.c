/* meshbatch: the quaternion sparse Cholesky factor of willmore_flow's
 * inverse iteration on the CPU (method and sources: mb_willmore_qchol.h).
 *
 * Notation: A the nv x nv quaternion matrix of D, P the fill-reducing
 * permutation (perm[k] = the vertex of new index k), C = P A P' kept as
 * its upper triangle in compressed columns (column k: rows r <= k), and
 * C = L L^* with L stored by columns below its diagonal (Li, Lx) and the
 * real diagonal apart (d). Row k of L solves, for its pattern (the reach
 * of column k's rows in the elimination tree, in topological order),
 *     d_j conj(L_kj) = C_jk - sum_{p < j} L_jp conj(L_kp),
 *     d_k^2 = C_kk - sum_{j < k} |L_kj|^2,
 * the sum of the first applied column by column as each conj(L_kj) is
 * known (x_i -= L_ij conj(L_kj), the quaternion product in this order).
 */
#include "mb_willmore_qchol.h"
#include "mb_quaternion.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cholmod.h>

#include "mb_alloc.h"

struct mb_willmore_qchol {
  int32_t n;        /* vertices */
  int32_t dnnz;     /* D's entries at creation (the pattern checked at factor time) */
  int32_t *perm;    /* [n] vertex of new index k */
  int32_t *pinv;    /* [n] new index of vertex i */
  int32_t *Cp;      /* [n + 1] columns of C's upper triangle */
  int32_t *Ci;      /* [Cp[n]] row (new index, <= column) */
  int32_t *Csrc;    /* [Cp[n]] position in D->val of the block's (0, 0) entry */
  int32_t *parent;  /* [n] elimination tree (-1: a root) */
  int64_t *Lp;      /* [n + 1] columns of L below the diagonal */
  int32_t *Li;      /* [Lp[n]] rows */
  double *Lx;       /* [Lp[n], 4] quaternions */
  double *d;        /* [n] diagonal of L (> 0) */
  int32_t *s, *w;   /* [n] row pattern stack, marks */
  int64_t *next;    /* [n] next free position of each column while factoring */
  double *x;        /* [n, 4] dense row accumulator / solve work, all zero between calls */
  int factored;
};

void mb_willmore_qchol_free(mb_willmore_qchol *q) {
  if (!q) return;
  free(q->perm);
  free(q->pinv);
  free(q->Cp);
  free(q->Ci);
  free(q->Csrc);
  free(q->parent);
  free(q->Lp);
  free(q->Li);
  free(q->Lx);
  free(q->d);
  free(q->s);
  free(q->w);
  free(q->next);
  free(q->x);
  free(q);
}

/* The pattern of row k of L (new indices < k) in s[top..n-1], in
 * topological order (Davis 2006, cs_ereach); marks w[i] = k. */
static int32_t ereach(mb_willmore_qchol *q, int32_t k) {
  int32_t top = q->n;
  q->w[k] = k;
  for (int32_t p = q->Cp[k]; p < q->Cp[k + 1]; p++) {
    int32_t i = q->Ci[p], len = 0;
    for (; q->w[i] != k; i = q->parent[i]) {
      q->s[len++] = i;
      q->w[i] = k;
    }
    while (len > 0) q->s[--top] = q->s[--len];
  }
  return top;
}

/* AMD on the vertex graph through CHOLMOD (simplicial analysis, postordered):
 * perm [n]. rowptr/col: the vertex pattern, cols of row i in col[...]. */
static mb_error vertex_order(int32_t n, const int32_t *vp, const int32_t *vc, int32_t *perm) {
  cholmod_common c;
  cholmod_start(&c);
  c.print = 0;
  c.nmethods = 1;
  c.method[0].ordering = CHOLMOD_AMD;
  c.supernodal = CHOLMOD_SIMPLICIAL;
  mb_error err = MB_SUCCESS;
  int64_t nu = 0;
  for (int32_t i = 0; i < n; i++)
    for (int32_t e = vp[i]; e < vp[i + 1]; e++) nu += vc[e] <= i;
  cholmod_factor *L = NULL;
  cholmod_sparse *U = cholmod_allocate_sparse((size_t)n, (size_t)n, (size_t)(nu ? nu : 1), 0, 1,
                                              1 /* upper */, CHOLMOD_PATTERN, &c);
  MB_CHECK_GOTO(err, done, U, MB_ERR_MEMORY,
                "quaternion Cholesky: out of memory for the vertex graph (%lld entries)",
                (long long)nu);
  {
    int *Up = U->p, *Ui = U->i, q = 0;
    for (int32_t i = 0; i < n; i++) {
      Up[i] = q;
      for (int32_t e = vp[i]; e < vp[i + 1]; e++)
        if (vc[e] <= i) Ui[q++] = vc[e];
    }
    Up[n] = q;
  }
  L = cholmod_analyze(U, &c);
  MB_CHECK_GOTO(err, done, L && c.status >= CHOLMOD_OK && L->Perm, MB_ERR_UNSUPPORTED,
                "quaternion Cholesky: CHOLMOD's AMD order of the %d-vertex graph failed "
                "(status %d)",
                n, c.status);
  memcpy(perm, L->Perm, sizeof(int32_t) * (size_t)n);
done:
  if (L) cholmod_free_factor(&L, &c);
  if (U) cholmod_free_sparse(&U, &c);
  cholmod_finish(&c);
  return err;
}

static mb_error create(const mb_csr *D, mb_willmore_qchol *q) {
  const int32_t n = q->n;
  const size_t sn = (size_t)(n ? n : 1);
  /* the vertex pattern: row 4i's entries in block columns (multiples of 4) */
  int32_t *vp = malloc(sizeof(int32_t) * (sn + 1)), *vc = NULL, *vpos = NULL;
  mb_error err = MB_SUCCESS;
  MB_CHECK_GOTO(err, done, vp, MB_ERR_MEMORY, "quaternion Cholesky: out of memory");
  vp[0] = 0;
  for (int32_t i = 0; i < n; i++) {
    int32_t c = 0;
    for (int32_t e = D->rowptr[4 * i]; e < D->rowptr[4 * i + 1]; e++) c += D->col[e] % 4 == 0;
    vp[i + 1] = vp[i] + c;
  }
  vc = malloc(sizeof(int32_t) * (size_t)(vp[n] ? vp[n] : 1));
  vpos = malloc(sizeof(int32_t) * (size_t)(vp[n] ? vp[n] : 1));
  MB_CHECK_GOTO(err, done, vc && vpos, MB_ERR_MEMORY, "quaternion Cholesky: out of memory");
  for (int32_t i = 0; i < n; i++) {
    int32_t t = vp[i];
    for (int32_t e = D->rowptr[4 * i]; e < D->rowptr[4 * i + 1]; e++)
      if (D->col[e] % 4 == 0) {
        vc[t] = D->col[e] / 4;
        vpos[t++] = e;
      }
  }
  q->perm = malloc(sizeof(int32_t) * sn);
  q->pinv = malloc(sizeof(int32_t) * sn);
  q->Cp = mb_zalloc(sn + 1, sizeof(int32_t));
  q->parent = malloc(sizeof(int32_t) * sn);
  q->s = malloc(sizeof(int32_t) * sn);
  q->w = malloc(sizeof(int32_t) * sn);
  q->next = malloc(sizeof(int64_t) * sn);
  q->Lp = mb_zalloc(sn + 1, sizeof(int64_t));
  q->d = malloc(sizeof(double) * sn);
  q->x = mb_zalloc(4 * sn, sizeof(double));
  MB_CHECK_GOTO(err, done,
                q->perm && q->pinv && q->Cp && q->parent && q->s && q->w && q->next && q->Lp &&
                    q->d && q->x,
                MB_ERR_MEMORY, "quaternion Cholesky: out of memory for %d vertices", n);
  MB_CALL_GOTO(err, done, vertex_order(n, vp, vc, q->perm));
  for (int32_t k = 0; k < n; k++) q->pinv[q->perm[k]] = k;
  /* C's upper triangle: entry (i, j) of A goes to row pinv[i], column
   * pinv[j] where pinv[i] <= pinv[j] (each pair once: A is Hermitian) */
  for (int32_t i = 0; i < n; i++)
    for (int32_t t = vp[i]; t < vp[i + 1]; t++)
      if (q->pinv[i] <= q->pinv[vc[t]]) q->Cp[q->pinv[vc[t]] + 1]++;
  for (int32_t k = 0; k < n; k++) q->Cp[k + 1] += q->Cp[k];
  const size_t cn = (size_t)(q->Cp[n] ? q->Cp[n] : 1);
  q->Ci = malloc(sizeof(int32_t) * cn);
  q->Csrc = malloc(sizeof(int32_t) * cn);
  MB_CHECK_GOTO(err, done, q->Ci && q->Csrc, MB_ERR_MEMORY, "quaternion Cholesky: out of memory");
  for (int32_t k = 0; k < n; k++) q->next[k] = q->Cp[k];
  for (int32_t i = 0; i < n; i++)
    for (int32_t t = vp[i]; t < vp[i + 1]; t++) {
      const int32_t r = q->pinv[i], c = q->pinv[vc[t]];
      if (r > c) continue;
      const int64_t p = q->next[c]++;
      q->Ci[p] = r;
      q->Csrc[p] = vpos[t];
    }
  /* elimination tree of C (Davis 2006, cs_etree), with s as ancestors */
  for (int32_t k = 0; k < n; k++) {
    q->parent[k] = -1;
    q->s[k] = -1;
    for (int32_t p = q->Cp[k]; p < q->Cp[k + 1]; p++)
      for (int32_t i = q->Ci[p]; i != -1 && i < k;) {
        const int32_t inext = q->s[i];
        q->s[i] = k;
        if (inext == -1) q->parent[i] = k;
        i = inext;
      }
  }
  /* column counts of L from the row patterns */
  for (int32_t k = 0; k < n; k++) q->w[k] = -1;
  for (int32_t k = 0; k < n; k++)
    for (int32_t t = ereach(q, k); t < n; t++) q->Lp[q->s[t] + 1]++;
  for (int32_t k = 0; k < n; k++) q->Lp[k + 1] += q->Lp[k];
  const size_t ln = (size_t)(q->Lp[n] ? q->Lp[n] : 1);
  q->Li = malloc(sizeof(int32_t) * ln);
  q->Lx = malloc(sizeof(double) * 4 * ln);
  MB_CHECK_GOTO(err, done, q->Li && q->Lx, MB_ERR_MEMORY,
                "quaternion Cholesky: out of memory for the factor (%lld quaternions)",
                (long long)q->Lp[n]);
done:
  free(vp);
  free(vc);
  free(vpos);
  return err;
}

mb_error mb_willmore_qchol_create(const mb_csr *D, mb_willmore_qchol **out) {
  MB_CHECK(D && out, MB_ERR_ARG, "mb_willmore_qchol_create: NULL argument");
  *out = NULL;
  MB_CHECK(D->nrows == D->ncols && D->nrows % 4 == 0, MB_ERR_ARG,
           "quaternion Cholesky: a %d x %d matrix is not of 4x4 blocks", D->nrows, D->ncols);
  mb_willmore_qchol *q;
  MB_CALLOC(q, 1);
  q->n = D->nrows / 4;
  q->dnnz = D->nnz;
  mb_error e = create(D, q);
  if (e) {
    mb_willmore_qchol_free(q);
    MB_CALL(e);
  }
  *out = q;
  return MB_SUCCESS;
}

mb_error mb_willmore_qchol_factor(mb_willmore_qchol *q, const mb_csr *D, double sigma) {
  MB_CHECK(q && D, MB_ERR_ARG, "mb_willmore_qchol_factor: NULL argument");
  MB_CHECK(D->nrows == 4 * q->n && D->nnz == q->dnnz, MB_ERR_ARG,
           "mb_willmore_qchol_factor: the matrix's pattern is not the one analysed");
  const int32_t n = q->n;
  const double *val = D->val;
  double *x = q->x;
  q->factored = 0;
  for (int32_t k = 0; k < n; k++) {
    q->w[k] = -1;
    q->next[k] = q->Lp[k];
  }
  for (int32_t k = 0; k < n; k++) {
    int32_t top = ereach(q, k);
    double dk = 0.0;
    for (int32_t p = q->Cp[k]; p < q->Cp[k + 1]; p++) {
      const double *v = val + q->Csrc[p]; /* block row [a, -b, -c, -d] */
      if (q->Ci[p] == k) {
        dk = v[0] + sigma;
        continue;
      }
      double *xi = x + 4 * (size_t)q->Ci[p];
      xi[0] = v[0];
      xi[1] = -v[1];
      xi[2] = -v[2];
      xi[3] = -v[3];
    }
    for (; top < n; top++) {
      const int32_t j = q->s[top];
      double *xj = x + 4 * (size_t)j;
      const double dj = q->d[j];
      const double u[4] = {xj[0] / dj, xj[1] / dj, xj[2] / dj, xj[3] / dj}; /* conj(L_kj) */
      xj[0] = xj[1] = xj[2] = xj[3] = 0.0;
      const int64_t end = q->next[j];
      for (int64_t p = q->Lp[j]; p < end; p++) {
        double t[4];
        mb_qmul(q->Lx + 4 * p, u, t);
        double *xi = x + 4 * (size_t)q->Li[p];
        xi[0] -= t[0];
        xi[1] -= t[1];
        xi[2] -= t[2];
        xi[3] -= t[3];
      }
      dk -= u[0] * u[0] + u[1] * u[1] + u[2] * u[2] + u[3] * u[3];
      q->Li[end] = k;
      double *l = q->Lx + 4 * end;
      l[0] = u[0];
      l[1] = -u[1];
      l[2] = -u[2];
      l[3] = -u[3];
      q->next[j] = end + 1;
    }
    if (!(dk > 0 && isfinite(dk))) {
      memset(x, 0, sizeof(double) * 4 * (size_t)n);
      MB_FAIL(MB_ERR_NUMERIC,
              "quaternion Cholesky: the matrix is not positive definite (or not finite): "
              "pivot %g at vertex %d (%d of %d in the order)",
              dk, q->perm[k], k, n);
    }
    q->d[k] = sqrt(dk);
  }
  q->factored = 1;
  return MB_SUCCESS;
}

mb_error mb_willmore_qchol_solve(mb_willmore_qchol *q, const double *b, double *xo) {
  MB_CHECK(q && b && xo, MB_ERR_ARG, "mb_willmore_qchol_solve: NULL argument");
  MB_CHECK(q->factored, MB_ERR_ARG,
           "mb_willmore_qchol_solve: no factor (mb_willmore_qchol_factor did not succeed)");
  const int32_t n = q->n;
  double *y = q->x;
  for (int32_t k = 0; k < n; k++) memcpy(y + 4 * (size_t)k, b + 4 * (size_t)q->perm[k], 32);
  /* L y = P b, by columns */
  for (int32_t j = 0; j < n; j++) {
    double *yj = y + 4 * (size_t)j;
    const double dj = q->d[j];
    for (int r = 0; r < 4; r++) yj[r] /= dj;
    for (int64_t p = q->Lp[j]; p < q->Lp[j + 1]; p++) {
      double t[4];
      mb_qmul(q->Lx + 4 * p, yj, t);
      double *yi = y + 4 * (size_t)q->Li[p];
      for (int r = 0; r < 4; r++) yi[r] -= t[r];
    }
  }
  /* L^* z = y, by rows of L^* (columns of L) */
  for (int32_t j = n - 1; j >= 0; j--) {
    double *yj = y + 4 * (size_t)j;
    double s[4] = {yj[0], yj[1], yj[2], yj[3]};
    for (int64_t p = q->Lp[j]; p < q->Lp[j + 1]; p++) {
      const double *l = q->Lx + 4 * p;
      const double cl[4] = {l[0], -l[1], -l[2], -l[3]};
      double t[4];
      mb_qmul(cl, y + 4 * (size_t)q->Li[p], t);
      for (int r = 0; r < 4; r++) s[r] -= t[r];
    }
    const double dj = q->d[j];
    for (int r = 0; r < 4; r++) yj[r] = s[r] / dj;
  }
  for (int32_t k = 0; k < n; k++) memcpy(xo + 4 * (size_t)q->perm[k], y + 4 * (size_t)k, 32);
  memset(y, 0, sizeof(double) * 4 * (size_t)n);
  return MB_SUCCESS;
}

int64_t mb_willmore_qchol_nnz(const mb_willmore_qchol *q) { return q ? q->Lp[q->n] : 0; }
