/* meshbatch: the deform room's inexact inner solve (key `cg_iterations`,
 * mb_deform.h): at most k Jacobi-preconditioned CG iterations of the three
 * coordinates together, warm-started from the last iterate. The method is
 * the CUDA backend's device CG (cuda/deform/mb_deform.cu) step for step, so
 * both backends run the same iterates up to the rounding of their dot
 * products. Here the rows run in OpenMP threads over fixed chunks of
 * MB_DEFORM_CG_CHUNK rows: each product row's sum is its own (row order),
 * each dot product a sum per chunk in row order, the chunks' sums then
 * added in chunk order by every thread alike, so the iterates are the same
 * bits for any thread count (and a chunk's rows are the unit of work, not a
 * thread's share). The workspace (mb_deform_cg_work) is kept by the caller
 * across the solves of a run: no allocation per solve. Bytes a step: the
 * product (H, p gathered, q written, p.q), the update (r -= alpha q and
 * r.z, r.r: p not read) and the direction (x += alpha p of the step before,
 * then p = z + beta p: p read once for both); the last step by the cap
 * updates x itself and does not store r, and the start forms b - A x in r
 * (no q). Each x, r and p gets the same operations on the same values as
 * in the device's order, so the same bits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mb_deform_private.h"

struct mb_deform_cg_work {
  int32_t n, nchunk;
  double *r, *p, *q;     /* [n, 3] (z = dinv r is formed where it is used, not stored) */
  double *dinv;          /* [n] */
  double *s0, *sa, *sb;  /* per chunk: start sums [9], p.q [3], r.z and r.r [6] */
  int32_t *bad;          /* [nchunk] the chunk's first row with h_ii <= 0 or non-finite, -1 */
};

void mb_deform_cg_work_free(mb_deform_cg_work *w) {
  if (!w) return;
  free(w->r);
  free(w->p);
  free(w->q);
  free(w->dinv);
  free(w->s0);
  free(w->sa);
  free(w->sb);
  free(w->bad);
  free(w);
}

mb_error mb_deform_cg_work_create(int32_t n, mb_deform_cg_work **out) {
  MB_CHECK(out && n >= 0, MB_ERR_ARG, "mb_deform_cg_work_create: bad arguments");
  *out = NULL;
  mb_deform_cg_work *w = calloc(1, sizeof *w);
  MB_CHECK(w, MB_ERR_MEMORY, "out of memory for the CG's workspace");
  w->n = n;
  w->nchunk = (n + MB_DEFORM_CG_CHUNK - 1) / MB_DEFORM_CG_CHUNK;
  const size_t n3 = 3 * (size_t)n + 1, nc = (size_t)w->nchunk + 1;
  w->r = malloc(sizeof(double) * n3);
  w->p = malloc(sizeof(double) * n3);
  w->q = malloc(sizeof(double) * n3);
  w->dinv = malloc(sizeof(double) * ((size_t)n + 1));
  w->s0 = malloc(sizeof(double) * 9 * nc);
  w->sa = malloc(sizeof(double) * 3 * nc);
  w->sb = malloc(sizeof(double) * 6 * nc);
  w->bad = malloc(sizeof(int32_t) * nc);
  if (!(w->r && w->p && w->q && w->dinv && w->s0 && w->sa && w->sb && w->bad)) {
    mb_deform_cg_work_free(w);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for the CG of %d rows", n);
  }
  *out = w;
  return MB_SUCCESS;
}

/* sum[j] = the chunks' partial sums part[m * ch + j] added in chunk order,
 * j < m. */
static void chunk_sums(const double *part, int32_t nchunk, int m, double *sum) {
  for (int j = 0; j < m; j++) sum[j] = 0;
  for (int32_t ch = 0; ch < nchunk; ch++)
    for (int j = 0; j < m; j++) sum[j] += part[(size_t)m * ch + j];
}

/* y [i0..i1, 3] = A v over rows i0 <= i < i1 of H, the three columns of v
 * [ncols, 3] together, each row's sum in its entries' order; two rows at a
 * time (their loads and sums interleaved: two independent chains of adds
 * instead of one, the same operations on each row). */
static inline void rows_product(const mb_csr *H, const double *v, int32_t i0, int32_t i1,
                                double *y) {
  const int32_t *const rowptr = H->rowptr, *const col = H->col;
  const double *const val = H->val;
  int32_t i = i0;
  for (; i + 1 < i1; i += 2) {
    const int32_t ea = rowptr[i], eb = rowptr[i + 1], ee = rowptr[i + 2];
    const int32_t la = eb - ea, lb = ee - eb, l = la < lb ? la : lb;
    double a0 = 0, a1 = 0, a2 = 0, b0 = 0, b1 = 0, b2 = 0;
    for (int32_t t = 0; t < l; t++) {
      const double va = val[ea + t], *xa = &v[3 * (size_t)col[ea + t]];
      const double vb = val[eb + t], *xb = &v[3 * (size_t)col[eb + t]];
      a0 += va * xa[0];
      a1 += va * xa[1];
      a2 += va * xa[2];
      b0 += vb * xb[0];
      b1 += vb * xb[1];
      b2 += vb * xb[2];
    }
    for (int32_t t = l; t < la; t++) {
      const double va = val[ea + t], *xa = &v[3 * (size_t)col[ea + t]];
      a0 += va * xa[0];
      a1 += va * xa[1];
      a2 += va * xa[2];
    }
    for (int32_t t = l; t < lb; t++) {
      const double vb = val[eb + t], *xb = &v[3 * (size_t)col[eb + t]];
      b0 += vb * xb[0];
      b1 += vb * xb[1];
      b2 += vb * xb[2];
    }
    double *ya = &y[3 * (size_t)i];
    ya[0] = a0, ya[1] = a1, ya[2] = a2, ya[3] = b0, ya[4] = b1, ya[5] = b2;
  }
  for (; i < i1; i++) {
    double a0 = 0, a1 = 0, a2 = 0;
    for (int32_t e = rowptr[i]; e < rowptr[i + 1]; e++) {
      const double va = val[e], *xa = &v[3 * (size_t)col[e]];
      a0 += va * xa[0];
      a1 += va * xa[1];
      a2 += va * xa[2];
    }
    double *ya = &y[3 * (size_t)i];
    ya[0] = a0, ya[1] = a1, ya[2] = a2;
  }
}

/* The update sweep's rows i0 <= i < i1 for the columns not done: r -= alpha
 * q, z = dinv r (not stored), s[c] += r.z and s[3 + c] += r.r in row order;
 * with last (a constant where inlined) also x += alpha p and r not stored. */
static inline __attribute__((always_inline)) void
update_rows(int last, double *X, double *r, const double *p, const double *q,
            const double *dinv, const double *alpha, const int *done, int32_t i0, int32_t i1,
            double *s) {
  for (int32_t i = i0; i < i1; i++)
    for (int c = 0; c < 3; c++)
      if (!done[c]) {
        const size_t m = 3 * (size_t)i + c;
        if (last) X[m] = X[m] + alpha[c] * p[m];
        const double rm = r[m] - alpha[c] * q[m];
        if (!last) r[m] = rm;
        const double zm = dinv[i] * rm;
        s[c] += rm * zm;
        s[3 + c] += rm * rm;
      }
}

/* The outcome of the solve, as thread 0 saw it (every thread takes the
 * same branches: the same sums in the same order). */
typedef struct cg_state {
  int status; /* 0 fine; 1 a bad diagonal; 2 non-finite start; 3 curvature; 4 non-finite
                 residual */
  int it, row;
  double val;
  double bb[3];
} cg_state;

mb_error mb_deform_cg(const char *name, const mb_csr *H, const double *B, double *X, int k,
                      mb_deform_cg_work *ws, long long *iters) {
  MB_CHECK(H && k >= 1 && iters && (H->nrows == 0 || (B && X)) && (!ws || ws->n == H->nrows),
           MB_ERR_ARG, "mb_deform_cg: bad arguments");
  const int32_t n = H->nrows;
  if (n == 0) return MB_SUCCESS;
  mb_deform_cg_work *own = NULL;
  if (!ws) {
    MB_CALL(mb_deform_cg_work_create(n, &own));
    ws = own;
  }
  double *const r = ws->r, *const p = ws->p, *const q = ws->q;
  double *const dinv = ws->dinv;
  const int32_t nchunk = ws->nchunk;
  const int32_t *const diag = H->diag;
  const double *const val = H->val;
  cg_state st = {0};
#pragma omp parallel if (n >= MB_DEFORM_CG_PARALLEL_ROWS)
  {
    /* r = b - A x, z = dinv r, p = z; r.z, r.r, b.b per column */
#pragma omp for schedule(dynamic, 1)
    for (int32_t ch = 0; ch < nchunk; ch++) {
      const int32_t i0 = ch * MB_DEFORM_CG_CHUNK;
      const int32_t i1 = n - i0 < MB_DEFORM_CG_CHUNK ? n : i0 + MB_DEFORM_CG_CHUNK;
      double s[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
      int32_t bad = -1;
      rows_product(H, X, i0, i1, r); /* r = A x, then b - A x in place */
      for (int32_t i = i0; i < i1; i++) {
        const double a = val[diag[i]];
        if (bad < 0 && !(a > 0 && isfinite(a))) bad = i;
        dinv[i] = 1.0 / a;
        for (int c = 0; c < 3; c++) {
          const size_t m = 3 * (size_t)i + c;
          r[m] = B[m] - r[m];
          const double zm = dinv[i] * r[m];
          p[m] = zm;
          s[c] += r[m] * zm;
          s[3 + c] += r[m] * r[m];
          s[6 + c] += B[m] * B[m];
        }
      }
      memcpy(&ws->s0[9 * (size_t)ch], s, sizeof s);
      ws->bad[ch] = bad;
    }
    /* every thread: the same sums, the same decisions */
    double s9[9], rz[3], rr[3], bb[3], alpha[3] = {0, 0, 0}, beta[3] = {0, 0, 0};
    int done[3], upd[3] = {0, 0, 0}, all = 1, it = 0, status = 0, brow = -1;
    double bval = 0;
    for (int32_t ch = 0; ch < nchunk && brow < 0; ch++) brow = ws->bad[ch];
    chunk_sums(ws->s0, nchunk, 9, s9);
    for (int c = 0; c < 3; c++) {
      rz[c] = s9[c];
      rr[c] = s9[3 + c];
      bb[c] = s9[6 + c];
      if (!(isfinite(rr[c]) && isfinite(bb[c]))) status = 2;
      done[c] = bb[c] == 0 || sqrt(rr[c]) <= MB_DEFORM_PCG_RTOL * sqrt(bb[c]);
      all &= done[c];
    }
    if (brow >= 0) {
      status = 1;
      bval = val[diag[brow]];
    }
    while (!status && !all && it < k) {
      /* q = A p (each row its own sum, all three columns), p.q per chunk */
#pragma omp for schedule(dynamic, 1)
      for (int32_t ch = 0; ch < nchunk; ch++) {
        const int32_t i0 = ch * MB_DEFORM_CG_CHUNK;
        const int32_t i1 = n - i0 < MB_DEFORM_CG_CHUNK ? n : i0 + MB_DEFORM_CG_CHUNK;
        double s0 = 0, s1 = 0, s2 = 0;
        rows_product(H, p, i0, i1, q);
        for (int32_t i = i0; i < i1; i++) {
          const double *qi = &q[3 * (size_t)i], *pi = &p[3 * (size_t)i];
          s0 += pi[0] * qi[0];
          s1 += pi[1] * qi[1];
          s2 += pi[2] * qi[2];
        }
        ws->sa[3 * (size_t)ch] = s0;
        ws->sa[3 * (size_t)ch + 1] = s1;
        ws->sa[3 * (size_t)ch + 2] = s2;
      }
      double pq[3];
      chunk_sums(ws->sa, nchunk, 3, pq);
      for (int c = 0; c < 3 && !status; c++)
        if (!done[c]) {
          if (!(pq[c] > 0 && isfinite(pq[c]))) {
            status = 3;
            bval = pq[c];
          } else alpha[c] = rz[c] / pq[c];
        }
      if (status) break;
      /* r -= alpha q, z = dinv r (not stored); r.z, r.r per chunk. x += alpha
       * p here only on the last iteration by the cap (r then not stored: the
       * next solve starts from b - A x), else in the direction's sweep,
       * which reads p anyway (the same operation on the same values). */
      const int last = it + 1 == k;
      for (int c = 0; c < 3; c++) upd[c] = !done[c] && !last;
#pragma omp for schedule(dynamic, 1)
      for (int32_t ch = 0; ch < nchunk; ch++) {
        const int32_t i0 = ch * MB_DEFORM_CG_CHUNK;
        const int32_t i1 = n - i0 < MB_DEFORM_CG_CHUNK ? n : i0 + MB_DEFORM_CG_CHUNK;
        double s[6] = {0, 0, 0, 0, 0, 0};
        if (last) update_rows(1, X, r, p, q, dinv, alpha, done, i0, i1, s);
        else update_rows(0, X, r, p, q, dinv, alpha, done, i0, i1, s);
        memcpy(&ws->sb[6 * (size_t)ch], s, sizeof s);
      }
      double s6[6];
      chunk_sums(ws->sb, nchunk, 6, s6);
      it++;
      all = 1;
      for (int c = 0; c < 3; c++) {
        if (!done[c]) {
          if (!(isfinite(s6[3 + c]) && isfinite(s6[c]))) status = 4;
          rr[c] = s6[3 + c];
          if (sqrt(rr[c]) <= MB_DEFORM_PCG_RTOL * sqrt(bb[c])) done[c] = 1;
          else {
            beta[c] = s6[c] / rz[c];
            rz[c] = s6[c];
          }
        }
        all &= done[c];
      }
      const int stop = status || all || it == k;
      if (stop && !(upd[0] || upd[1] || upd[2])) break;
      /* x += alpha p where the update left it (upd); then, going on, p = z
       * + beta p (z = dinv r: the same product, the same bits) */
#pragma omp for schedule(dynamic, 1)
      for (int32_t ch = 0; ch < nchunk; ch++) {
        const int32_t i0 = ch * MB_DEFORM_CG_CHUNK;
        const int32_t i1 = n - i0 < MB_DEFORM_CG_CHUNK ? n : i0 + MB_DEFORM_CG_CHUNK;
        for (int32_t i = i0; i < i1; i++)
          for (int c = 0; c < 3; c++) {
            const size_t m = 3 * (size_t)i + c;
            if (upd[c]) X[m] = X[m] + alpha[c] * p[m];
            if (!stop && !done[c]) p[m] = dinv[i] * r[m] + beta[c] * p[m]; /* z + beta p */
          }
      }
      if (stop) break;
    }
#pragma omp master
    {
      st.status = status;
      st.it = it;
      st.row = brow;
      st.val = bval;
      memcpy(st.bb, bb, sizeof bb);
    }
  }
  mb_error err = MB_SUCCESS;
  switch (st.status) {
  case 1:
    err = mb_error_set(MB_ERR_NUMERIC, __FILE__, __LINE__, __func__,
                       "%s: the CG broke down (a diagonal entry %g <= 0 or non-finite at row "
                       "%d: the system matrix is not positive definite)",
                       name, st.val, st.row);
    break;
  case 2:
    err = mb_error_set(MB_ERR_NUMERIC, __FILE__, __LINE__, __func__,
                       "%s: the CG met a non-finite value (right-hand side or start)", name);
    break;
  case 3:
    err = mb_error_set(MB_ERR_NUMERIC, __FILE__, __LINE__, __func__,
                       "%s: the CG broke down (curvature p'Ap = %g at iteration %d: the system "
                       "matrix is not positive definite, or a non-finite value)",
                       name, st.val, st.it + 1);
    break;
  case 4:
    err = mb_error_set(MB_ERR_NUMERIC, __FILE__, __LINE__, __func__,
                       "%s: the CG met a non-finite residual at iteration %d", name, st.it);
    break;
  default:
    for (int c = 0; c < 3; c++) /* b = 0: x = 0 (mb_pcg_solve's rule) */
      if (st.bb[c] == 0)
        for (int32_t i = 0; i < n; i++) X[3 * (size_t)i + c] = 0;
    *iters += st.it;
  }
  mb_deform_cg_work_free(own);
  return err;
}
