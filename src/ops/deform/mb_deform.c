/* meshbatch: the deform op's CPU solver (see mb_deform.h): local-global
 * iterations, soft or hard (augmented Lagrangian) face constraints, one
 * CHOLMOD factorization per value of the constraint weight. */
#include "mb_deform.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cholmod.h>

#include "mb_alloc.h"
#include "mb_csr.h"
#include "mb_deform_private.h"
#include "mb_log.h"
#include "mb_mpi.h"
#include "mb_solver.h"

/* The global step's sparse Cholesky: CHOLMOD called directly, not through
 * linalg's mb_cholesky, for two choices measured on generated domes
 * (process CPU time, reference BLAS, one thread; docs/benchmarks.md):
 * the simplicial LL' factor (the supernodal one's triangular solves go
 * through dtrsm/dgemm of the reference BLAS for the 3 right-hand sides and
 * took twice as long: 80,656 vertices 50 against 26 ms a solve; the
 * factorization is about as fast either way), AMD ordering alone (METIS or
 * nested dissection saved 5-20 % of the fill but cost 0.2-0.8 s of
 * analysis), and dense right-hand side, solution and workspace allocated
 * once (cholmod_solve2). */
typedef struct deform_chol {
  cholmod_common c;
  int started, factored;
  cholmod_sparse *U; /* upper triangle of H, CSC (CSR row i = CSC column i) */
  int32_t *src;      /* [U's nnz] position of each entry of U in H->val */
  cholmod_factor *L;
  cholmod_dense *B, *X, *Y, *E; /* [n, 3] column-major; solve2's workspace */
} deform_chol;

static void chol_free(deform_chol *ch) {
  if (!ch) return;
  if (ch->started) {
    cholmod_free_dense(&ch->B, &ch->c);
    cholmod_free_dense(&ch->X, &ch->c);
    cholmod_free_dense(&ch->Y, &ch->c);
    cholmod_free_dense(&ch->E, &ch->c);
    cholmod_free_factor(&ch->L, &ch->c);
    cholmod_free_sparse(&ch->U, &ch->c);
    cholmod_finish(&ch->c);
  }
  free(ch->src);
  free(ch);
}

/* Symbolic analysis of H's pattern (values not read). */
static mb_error chol_create(const mb_deform_mesh *dm, const mb_csr *H, deform_chol **out) {
  deform_chol *ch;
  MB_CALLOC(ch, 1);
  *out = ch;
  cholmod_start(&ch->c);
  ch->started = 1;
  ch->c.print = 0;
  ch->c.supernodal = CHOLMOD_SIMPLICIAL;
  ch->c.final_ll = 1; /* LL': a pivot <= 0 stops it (not positive definite) */
  ch->c.quick_return_if_not_posdef = 1;
  ch->c.nmethods = 1;
  ch->c.method[0].ordering = CHOLMOD_AMD;
  ch->c.postorder = 1;
  int64_t nu = 0;
  for (int32_t i = 0; i < H->nrows; i++)
    for (int32_t e = H->rowptr[i]; e < H->rowptr[i + 1]; e++) nu += H->col[e] <= i;
  const size_t n = (size_t)H->nrows;
  ch->U = cholmod_allocate_sparse(n, n, (size_t)(nu ? nu : 1), 1, 1, 1, CHOLMOD_REAL, &ch->c);
  MB_CALLOC(ch->src, nu ? nu : 1);
  MB_CHECK(ch->U, MB_ERR_MEMORY, "%s: out of memory for the system matrix (%lld entries)",
           dm->name, (long long)nu);
  int *Up = ch->U->p, *Ui = ch->U->i;
  int64_t q = 0;
  Up[0] = 0;
  for (int32_t i = 0; i < H->nrows; i++) { /* H's columns ascend per row */
    for (int32_t e = H->rowptr[i]; e < H->rowptr[i + 1]; e++)
      if (H->col[e] <= i) {
        Ui[q] = H->col[e];
        ch->src[q++] = e;
      }
    Up[i + 1] = (int)q;
  }
  ch->L = cholmod_analyze(ch->U, &ch->c);
  ch->B = cholmod_allocate_dense(n, 3, n, CHOLMOD_REAL, &ch->c);
  MB_CHECK(ch->L && ch->B && ch->c.status >= CHOLMOD_OK,
           ch->c.status == CHOLMOD_OUT_OF_MEMORY ? MB_ERR_MEMORY : MB_ERR_UNSUPPORTED,
           "%s: CHOLMOD's analysis of the %lld-row system matrix failed (status %d)", dm->name,
           (long long)n, ch->c.status);
  return MB_SUCCESS;
}

/* Numeric factorization of H (the analysed pattern) at weight c. */
static mb_error chol_factor(const mb_deform_mesh *dm, deform_chol *ch, const mb_csr *H,
                            double c) {
  ch->factored = 0;
  double *Ux = ch->U->x;
  const int64_t nu = ((int *)ch->U->p)[H->nrows];
  for (int64_t q = 0; q < nu; q++) Ux[q] = H->val[ch->src[q]];
  const int ok = cholmod_factorize(ch->U, ch->L, &ch->c);
  if (ch->c.status == CHOLMOD_NOT_POSDEF || (ok && ch->L->minor < (size_t)H->nrows)) {
    const size_t minor = ch->L->minor;
    const int *perm = ch->L->Perm;
    MB_FAIL(MB_ERR_NUMERIC,
            "%s: the system matrix at weight %g is not positive definite: the factorization "
            "failed at row %ld (pivot %zu of %d)",
            dm->name, c, perm && minor < (size_t)H->nrows ? (long)perm[minor] : (long)minor,
            minor, H->nrows);
  }
  MB_CHECK(ok && ch->c.status >= CHOLMOD_OK,
           ch->c.status == CHOLMOD_OUT_OF_MEMORY ? MB_ERR_MEMORY : MB_ERR_UNSUPPORTED,
           "%s: CHOLMOD's factorization at weight %g failed (status %d)", dm->name, c,
           ch->c.status);
  ch->factored = 1;
  return MB_SUCCESS;
}

/* X [n, 3] = H^-1 B [n, 3] (row-major; X may be B), the three columns in
 * one pass of each triangular solve. */
static mb_error chol_solve(const mb_deform_mesh *dm, deform_chol *ch, const double *B,
                           double *X) {
  const size_t n = ch->B->nrow;
  double *bx = ch->B->x;
  for (size_t i = 0; i < n; i++) {
    bx[i] = B[3 * i];
    bx[n + i] = B[3 * i + 1];
    bx[2 * n + i] = B[3 * i + 2];
  }
  const int ok = cholmod_solve2(CHOLMOD_A, ch->L, ch->B, NULL, &ch->X, NULL, &ch->Y, &ch->E,
                                &ch->c);
  MB_CHECK(ok && ch->X, ch->c.status == CHOLMOD_OUT_OF_MEMORY ? MB_ERR_MEMORY : MB_ERR_UNSUPPORTED,
           "%s: CHOLMOD's solve failed (status %d)", dm->name, ch->c.status);
  const double *xx = ch->X->x;
  for (size_t i = 0; i < n; i++) {
    X[3 * i] = xx[i];
    X[3 * i + 1] = xx[n + i];
    X[3 * i + 2] = xx[2 * n + i];
  }
  return MB_SUCCESS;
}

/* ptr = n elements, not zeroed (mb_alloc: huge pages for large ones), for
 * arrays the run writes before it reads them. */
#define DEFORM_ALLOC(ptr, n)                                                                  \
  do {                                                                                        \
    const size_t m_ = (size_t)(n), n_ = m_ ? m_ : 1;                                          \
    (ptr) = mb_alloc(n_ * sizeof *(ptr));                                                     \
    if (!(ptr))                                                                               \
      return mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,                       \
                          "out of memory allocating %zu elements", n_);                      \
  } while (0)

/* The arrays of one run. */
typedef struct deform_work {
  int64_t nv, nf, nidx;
  int32_t *vf_row;    /* [nv + 1] vertex -> its face slots */
  int64_t *vf_slot;   /* [nidx] slot s (face_indices[s] is the vertex) */
  int64_t *slot_face; /* [nidx] face of slot s */
  mb_csr *H;          /* the system matrix (pattern: 2-ring by edges and face co-vertices) */
  double *base;       /* [nnz] D + w_fair K^T K */
  double *face;       /* [nnz] sum_f A_f^T A_f */
  double *KtK;        /* [nnz] K^T K */
  double *d;          /* [nv] closeness / soft handle weights */
  double *t;          /* [nv, 3] targets (handles, else p0) */
  double *pin;        /* [nv] 1 for a pinned vertex */
  double *r0;         /* [nv, 3] D t + w_fair K^T K p0 */
  double *g0, *gF;    /* [nv, 3] pinned columns times positions: base part, face part */
  double *z, *u;      /* [nidx, 3] projections; scaled duals (hard) */
  double *q;          /* [nidx, 3] scratch: a face's centred coordinates (+ u) */
  double *b, *xn;     /* [nv, 3] right-hand side, solution */
  double *fres;       /* [nf] per-face residual scratch */
  double *p0;         /* [nv, 3] the input positions */
  double *fmean;      /* [nf, 3] scratch: each face's mean of a slot array */
  deform_chol *chol;
  mb_deform_cg_work *cg; /* cg_iterations >= 1: the k-step CG's workspace */
  int solver;            /* MB_DEFORM_CHOLESKY or MB_DEFORM_PCG (auto resolved) */
} deform_work;

static void work_free(deform_work *w) {
  free(w->vf_row);
  free(w->vf_slot);
  free(w->slot_face);
  mb_csr_free(w->H);
  free(w->base);
  free(w->face);
  free(w->KtK);
  free(w->d);
  free(w->t);
  free(w->pin);
  free(w->r0);
  free(w->g0);
  free(w->gF);
  free(w->z);
  free(w->u);
  free(w->q);
  free(w->b);
  free(w->xn);
  free(w->fres);
  free(w->p0);
  free(w->fmean);
  chol_free(w->chol);
  mb_deform_cg_work_free(w->cg);
}

/* Faces checked (>= 3 distinct vertices in range) and the vertex -> face
 * slot map. */
static mb_error build_incidence(const mb_deform_mesh *dm, deform_work *w) {
  const int64_t nv = dm->nv, nf = dm->nf;
  const int64_t *fo = dm->face_offsets, *fi = dm->face_indices;
  w->nidx = fo[nf];
  MB_CALLOC(w->vf_row, nv + 1);
  MB_CALLOC(w->vf_slot, w->nidx);
  MB_CALLOC(w->slot_face, w->nidx);
  for (int64_t f = 0; f < nf; f++) {
    const int64_t n = fo[f + 1] - fo[f];
    MB_CHECK(n >= 3, MB_ERR_ARG, "%s: face %lld has %lld vertices (at least 3)", dm->name,
             (long long)f, (long long)n);
    for (int64_t s = fo[f]; s < fo[f + 1]; s++) {
      MB_CHECK(fi[s] >= 0 && fi[s] < nv, MB_ERR_ARG,
               "%s: face %lld names vertex %lld of %lld", dm->name, (long long)f,
               (long long)fi[s], (long long)nv);
      for (int64_t r = fo[f]; r < s; r++)
        MB_CHECK(fi[r] != fi[s], MB_ERR_ARG,
                 "%s: face %lld has vertex %lld twice (repeated vertices)", dm->name,
                 (long long)f, (long long)fi[s]);
      w->slot_face[s] = f;
      w->vf_row[fi[s] + 1]++;
    }
  }
  for (int64_t i = 0; i < nv; i++) w->vf_row[i + 1] += w->vf_row[i];
  int32_t *fill;
  MB_CALLOC(fill, nv);
  for (int64_t s = 0; s < w->nidx; s++) { /* slots ascending within a vertex */
    const int64_t v = fi[s];
    w->vf_slot[w->vf_row[v] + fill[v]++] = s;
  }
  free(fill);
  return MB_SUCCESS;
}

/* The pattern of H: per row the vertex, its neighbours up to 2 edges away
 * (K^T K; with fair 0 only its 1-ring) and every vertex sharing a face
 * with it; ascending columns. */
static mb_error build_pattern(const mb_deform_mesh *dm, int fair, deform_work *w) {
  const mb_adjacency *adj = dm->adj;
  const int64_t nv = dm->nv;
  MB_CHECK(nv < INT32_MAX, MB_ERR_ARG, "%s: %lld vertices (at most 2^31 - 2)", dm->name,
           (long long)nv);
  int32_t *mark, *list;
  MB_CALLOC(mark, nv);
  MB_CALLOC(list, nv);
  for (int64_t i = 0; i < nv; i++) mark[i] = -1;
  mb_csr *H;
  MB_CALLOC(H, 1);
  w->H = H;
  H->nrows = H->ncols = (int32_t)nv;
  MB_CALLOC(H->rowptr, nv + 1);
  MB_CALLOC(H->diag, nv);
  int64_t cap = 16 * nv + 16, nnz = 0;
  MB_CALLOC(H->col, cap);
  for (int64_t i = 0; i < nv; i++) {
    int32_t n = 0;
#define ADD(j)                                                                                \
  do {                                                                                        \
    const int64_t j_ = (j);                                                                   \
    if (mark[j_] != (int32_t)i) {                                                             \
      mark[j_] = (int32_t)i;                                                                  \
      list[n++] = (int32_t)j_;                                                                \
    }                                                                                         \
  } while (0)
    ADD(i);
    for (int64_t e = adj->row[i]; e < adj->row[i + 1]; e++) {
      const int64_t k = adj->col[e];
      ADD(k);
      for (int64_t e2 = adj->row[k]; fair && e2 < adj->row[k + 1]; e2++) ADD(adj->col[e2]);
    }
    for (int32_t a = w->vf_row[i]; a < w->vf_row[i + 1]; a++) {
      const int64_t f = w->slot_face[w->vf_slot[a]];
      for (int64_t s = dm->face_offsets[f]; s < dm->face_offsets[f + 1]; s++)
        ADD(dm->face_indices[s]);
    }
#undef ADD
    for (int32_t a = 1; a < n; a++) { /* insertion sort: a row has some 10-40 columns */
      const int32_t v = list[a];
      int32_t b = a;
      for (; b > 0 && list[b - 1] > v; b--) list[b] = list[b - 1];
      list[b] = v;
    }
    if (nnz + n > cap) {
      while (nnz + n > cap) cap *= 2;
      int32_t *c = realloc(H->col, sizeof *c * (size_t)cap);
      MB_CHECK(c, MB_ERR_MEMORY, "%s: out of memory for the matrix pattern", dm->name);
      H->col = c;
    }
    MB_CHECK(nnz + n < INT32_MAX, MB_ERR_ARG, "%s: more than 2^31 - 1 matrix entries",
             dm->name);
    for (int32_t k = 0; k < n; k++) {
      if (list[k] == (int32_t)i) H->diag[i] = (int32_t)(nnz + k);
      H->col[nnz + k] = list[k];
    }
    nnz += n;
    H->rowptr[i + 1] = (int32_t)nnz;
  }
  free(mark);
  free(list);
  H->nnz = (int32_t)nnz;
  MB_CALLOC(H->val, nnz);
  MB_CALLOC(w->base, nnz);
  MB_CALLOC(w->face, nnz);
  MB_CALLOC(w->KtK, nnz);
  return MB_SUCCESS;
}

/* K^T K and sum_f A_f^T A_f into the pattern, row by row (gathers, fixed
 * order). K_kj: 1 for an edge, -degree on the diagonal. */
static mb_error assemble_parts(const mb_deform_mesh *dm, int fair, deform_work *w) {
  const mb_adjacency *adj = dm->adj;
  const mb_csr *H = w->H;
  int32_t *pos;
  MB_CALLOC(pos, dm->nv);
  for (int64_t i = 0; i < dm->nv; i++) {
    for (int32_t e = H->rowptr[i]; e < H->rowptr[i + 1]; e++) pos[H->col[e]] = e;
    /* (K^T K)_ij = sum over k in N[i] of K_ki K_kj, k and j in closed 1-rings */
    for (int64_t a = adj->row[i] - 1; fair && a < adj->row[i + 1]; a++) {
      const int64_t k = a < adj->row[i] ? i : adj->col[a];
      const double kki = k == i ? -(double)(adj->row[i + 1] - adj->row[i]) : 1.0;
      const double kkk = -(double)(adj->row[k + 1] - adj->row[k]);
      w->KtK[pos[k]] += kki * kkk;
      for (int64_t e2 = adj->row[k]; e2 < adj->row[k + 1]; e2++)
        w->KtK[pos[adj->col[e2]]] += kki * 1.0;
    }
    for (int32_t a = w->vf_row[i]; a < w->vf_row[i + 1]; a++) {
      const int64_t f = w->slot_face[w->vf_slot[a]];
      const int64_t s0 = dm->face_offsets[f], s1 = dm->face_offsets[f + 1];
      const double inv = 1.0 / (double)(s1 - s0);
      for (int64_t s = s0; s < s1; s++) {
        const int64_t j = dm->face_indices[s];
        w->face[pos[j]] += (j == i ? 1.0 : 0.0) - inv;
      }
    }
  }
  free(pos);
  return MB_SUCCESS;
}

/* H = base + c face, pinned rows and columns eliminated (identity rows);
 * OpenMP threads over rows (each entry on its own: the same bits). */
static void assemble_H(deform_work *w, double c) {
  mb_csr *H = w->H;
#pragma omp parallel for schedule(static) if (H->nrows >= MB_DEFORM_CG_PARALLEL_ROWS)
  for (int32_t i = 0; i < H->nrows; i++)
    for (int32_t e = H->rowptr[i]; e < H->rowptr[i + 1]; e++) {
      const int32_t j = H->col[e];
      if (w->pin[i] != 0 || w->pin[j] != 0) H->val[e] = i == j ? 1.0 : 0.0;
      else H->val[e] = w->base[e] + c * w->face[e];
    }
}

/* Face f's slots' centred coordinates of x (+ u where u is not NULL) into
 * qf [n, 3] (the face's rows: q + 3 fo[f] for q [nidx, 3], or a buffer). */
static inline void centre_face(const int64_t *fo, const int64_t *fi, int64_t f, const double *x,
                               const double *u, double *qf) {
  const int64_t s0 = fo[f], s1 = fo[f + 1];
  double c[3] = {0, 0, 0};
  for (int64_t s = s0; s < s1; s++)
    for (int d = 0; d < 3; d++) c[d] += x[3 * fi[s] + d];
  for (int d = 0; d < 3; d++) c[d] /= (double)(s1 - s0);
  for (int64_t s = s0; s < s1; s++)
    for (int d = 0; d < 3; d++)
      qf[3 * (s - s0) + d] = (x[3 * fi[s] + d] - c[d]) + (u ? u[3 * s + d] : 0.0);
}

/* The face slots' centred coordinates of x (+ u where u is not NULL) into q. */
static void centred(const mb_deform_mesh *dm, const double *x, const double *u, double *q) {
#pragma omp parallel for schedule(static)
  for (int64_t f = 0; f < dm->nf; f++)
    centre_face(dm->face_offsets, dm->face_indices, f, x, u, &q[3 * dm->face_offsets[f]]);
}

/* The largest squared distance |q_k - z_k|^2 of a face's n points (qf,
 * zf [n, 3]). */
static inline double face_worst(int n, const double *qf, const double *zf) {
  double worst = 0;
  for (int k = 0; k < n; k++) {
    const double dx = qf[3 * k] - zf[3 * k], dy = qf[3 * k + 1] - zf[3 * k + 1],
                 dz = qf[3 * k + 2] - zf[3 * k + 2];
    const double r2 = dx * dx + dy * dy + dz * dz;
    if (r2 > worst) worst = r2;
  }
  return worst;
}

/* zf = P_f(qf) for one face of n points (qf, zf [n, 3]); returns the
 * largest squared distance |q_k - z_k|^2 of its points. */
static inline double project_face(int constraint, int n, const double *qf, double *zf) {
  if (constraint == MB_DEFORM_PLANAR) mb_deform_project_planar(n, qf, zf);
  else mb_deform_project_regular(n, qf, zf);
  return face_worst(n, qf, zf);
}

/* The size of faces b0 .. b0 + MB_DEFORM_LANES - 1 where all of them are
 * there and have one size of at most MB_DEFORM_BATCH_NMAX points (a batch
 * for mb_deform_project_planar_batch: their slots are consecutive), else 0. */
static inline int batch_size(const int64_t *fo, int64_t nf, int64_t b0) {
  if (b0 + MB_DEFORM_LANES > nf) return 0;
  const int64_t n = fo[b0 + 1] - fo[b0];
  if (n > MB_DEFORM_BATCH_NMAX) return 0;
  for (int l = 1; l < MB_DEFORM_LANES; l++)
    if (fo[b0 + l + 1] - fo[b0 + l] != n) return 0;
  return (int)n;
}

/* z = P_f(q) per face; returns max over slots of |q_s - z_s| (for centred
 * coordinates of p: the residual of p's chosen constraint), as the root of
 * the largest square. Planar: MB_DEFORM_LANES faces of one size at a time
 * where they have one (the same bits as face by face). */
static double project(const mb_deform_mesh *dm, int constraint, const double *q, double *z) {
  const int64_t *fo = dm->face_offsets, nb = (dm->nf + MB_DEFORM_LANES - 1) / MB_DEFORM_LANES;
  double worst = 0;
#pragma omp parallel for schedule(dynamic, 64) reduction(max : worst)
  for (int64_t b = 0; b < nb; b++) {
    const int64_t b0 = b * MB_DEFORM_LANES;
    const int nb0 = constraint == MB_DEFORM_PLANAR ? batch_size(fo, dm->nf, b0) : 0;
    if (nb0) mb_deform_project_planar_batch(MB_DEFORM_LANES, nb0, &q[3 * fo[b0]], &z[3 * fo[b0]]);
    for (int64_t f = b0; f < b0 + MB_DEFORM_LANES && f < dm->nf; f++) {
      const int n = (int)(fo[f + 1] - fo[f]);
      const double r2 = nb0 ? face_worst(n, &q[3 * fo[f]], &z[3 * fo[f]])
                            : project_face(constraint, n, &q[3 * fo[f]], &z[3 * fo[f]]);
      if (r2 > worst) worst = r2;
    }
  }
  return sqrt(worst); /* monotone, correctly rounded: the largest root */
}

/* A face's mean of the slot array y [nidx, 3] into m [3]. */
static inline void face_mean(const int64_t *fo, int64_t f, const double *y, double m[3]) {
  m[0] = m[1] = m[2] = 0;
  for (int64_t r = fo[f]; r < fo[f + 1]; r++)
    for (int d = 0; d < 3; d++) m[d] += y[3 * r + d];
  for (int d = 0; d < 3; d++) m[d] /= (double)(fo[f + 1] - fo[f]);
}

/* Faces of up to this many vertices are centred into a buffer on the
 * stack in project_soft and residuals (larger ones into their slots of
 * w->q). */
#define DEFORM_FACE_STACK 16

/* The soft mode's local step in one pass over the faces: the centred
 * coordinates of x (a face's own buffer: the soft mode reads them nowhere
 * else, so w->q is not written, 24 bytes a slot saved), z = P_f(q), z's
 * face means into w->fmean (for gather_rhs); returns max over slots of
 * |q_s - z_s| (the residual of x's chosen constraint). The same arithmetic
 * as centred, project and gather_At's means one after the other; planar
 * faces MB_DEFORM_LANES of one size at a time (centred into one buffer,
 * mb_deform_project_planar_batch: the same bits as face by face). */
static double project_soft(const mb_deform_mesh *dm, int constraint, deform_work *w,
                           const double *x) {
  const int64_t *fo = dm->face_offsets, *fi = dm->face_indices;
  const int64_t nb = (dm->nf + MB_DEFORM_LANES - 1) / MB_DEFORM_LANES;
  double *z = w->z, *fm = w->fmean, worst = 0;
#pragma omp parallel for schedule(dynamic, 64) reduction(max : worst)
  for (int64_t b = 0; b < nb; b++) {
    const int64_t b0 = b * MB_DEFORM_LANES;
    const int nb0 = constraint == MB_DEFORM_PLANAR ? batch_size(fo, dm->nf, b0) : 0;
    if (nb0) { /* MB_DEFORM_LANES planar faces of nb0 points in lockstep */
      double buf[3 * MB_DEFORM_BATCH_NMAX * MB_DEFORM_LANES];
      for (int l = 0; l < MB_DEFORM_LANES; l++) centre_face(fo, fi, b0 + l, x, NULL, &buf[3 * nb0 * l]);
      mb_deform_project_planar_batch(MB_DEFORM_LANES, nb0, buf, &z[3 * fo[b0]]);
      for (int l = 0; l < MB_DEFORM_LANES; l++) {
        const double r2 = face_worst(nb0, &buf[3 * nb0 * l], &z[3 * fo[b0 + l]]);
        if (r2 > worst) worst = r2;
        face_mean(fo, b0 + l, z, &fm[3 * (b0 + l)]);
      }
      continue;
    }
    for (int64_t f = b0; f < b0 + MB_DEFORM_LANES && f < dm->nf; f++) {
      const int64_t s0 = fo[f];
      const int n = (int)(fo[f + 1] - s0);
      double buf[3 * DEFORM_FACE_STACK];
      double *qf = n <= DEFORM_FACE_STACK ? buf : &w->q[3 * s0];
      centre_face(fo, fi, f, x, NULL, qf);
      const double r2 = project_face(constraint, n, qf, &z[3 * s0]);
      if (r2 > worst) worst = r2;
      face_mean(fo, f, z, &fm[3 * f]);
    }
  }
  return sqrt(worst); /* monotone, correctly rounded: the largest root */
}

/* The right-hand side b [nv, 3] of the global step: per vertex g = sum_f
 * A_f^T y_f over its slots (y_s minus its face's mean, w->fmean: computed
 * here unless means_ready; gathers in slot order, no scatter), then b =
 * x at a pinned vertex, else (r0 - g0) + c (g - gF). */
static void gather_rhs(const mb_deform_mesh *dm, deform_work *w, const double *y,
                       int means_ready, double c, const double *x, double *b) {
  const int64_t *fo = dm->face_offsets;
  double *fm = w->fmean;
#pragma omp parallel
  {
    if (!means_ready) {
#pragma omp for schedule(dynamic, 1024)
      for (int64_t f = 0; f < dm->nf; f++) face_mean(fo, f, y, &fm[3 * f]);
    }
#pragma omp for schedule(dynamic, 1024)
    for (int64_t i = 0; i < dm->nv; i++) {
      double acc[3] = {0, 0, 0};
      for (int32_t a = w->vf_row[i]; a < w->vf_row[i + 1]; a++) {
        const int64_t s = w->vf_slot[a], f = w->slot_face[s];
        for (int d = 0; d < 3; d++) acc[d] += y[3 * s + d] - fm[3 * f + d];
      }
      for (int d = 0; d < 3; d++) {
        const int64_t k = 3 * i + d;
        b[k] = w->pin[i] != 0 ? x[k] : (w->r0[k] - w->g0[k]) + c * (acc[d] - w->gF[k]);
      }
    }
  }
}

/* y [nv, 3] = S x over the rows of the pattern for values v [nnz] (K^T K
 * or a part), only columns with pin = want (want < 0: every column). */
static void spmv_part(const mb_csr *H, const double *v, const double *pin, int want,
                      const double *x, double *y) {
  for (int32_t i = 0; i < H->nrows; i++) {
    double s[3] = {0, 0, 0};
    for (int32_t e = H->rowptr[i]; e < H->rowptr[i + 1]; e++) {
      const int32_t j = H->col[e];
      if (want >= 0 && (pin[j] != 0) != want) continue;
      for (int d = 0; d < 3; d++) s[d] += v[e] * x[3 * j + d];
    }
    for (int d = 0; d < 3; d++) y[3 * i + d] = s[d];
  }
}

/* Residuals of x (max over faces, length unit): the planarity and, with
 * reg non-NULL, the regularity, or (which >= 0) only the residual of that
 * constraint into *plan; each face's planarity into w->fres when it is
 * computed. */
static void residuals(const mb_deform_mesh *dm, deform_work *w, const double *x, int which,
                      double *plan, double *reg) {
  const int64_t *fo = dm->face_offsets, *fi = dm->face_indices;
  const int want_p = which != MB_DEFORM_REGULAR, want_r = which == MB_DEFORM_REGULAR || reg;
  double pm = 0, rm = 0;
#pragma omp parallel for schedule(dynamic, 256) reduction(max : pm, rm)
  for (int64_t f = 0; f < dm->nf; f++) { /* centred as project_soft, in one pass */
    const int n = (int)(fo[f + 1] - fo[f]);
    double buf[3 * DEFORM_FACE_STACK];
    double *qf = n <= DEFORM_FACE_STACK ? buf : &w->q[3 * fo[f]];
    centre_face(fo, fi, f, x, NULL, qf);
    if (want_p) {
      const double a = mb_deform_planarity(n, qf);
      w->fres[f] = a;
      if (a > pm) pm = a;
    }
    if (want_r) {
      const double b = mb_deform_regularity(n, qf);
      if (b > rm) rm = b;
    }
  }
  if (which == MB_DEFORM_REGULAR) *plan = rm;
  else *plan = pm;
  if (reg) *reg = rm;
}

/* E(p) of mb_deform.h (soft mode), for the history. */
static double energy(const mb_deform_params *p, const mb_deform_mesh *dm, deform_work *w,
                     const double *p0, const double *x) {
  double e = 0;
  for (int64_t i = 0; i < dm->nv; i++)
    for (int d = 0; d < 3; d++) {
      const double r = x[3 * i + d] - w->t[3 * i + d];
      e += w->d[i] * r * r;
    }
  if (p->w_fair > 0) { /* |K (x - p0)|^2, K row by row */
    const mb_adjacency *adj = dm->adj;
    for (int64_t i = 0; i < dm->nv; i++) {
      double s[3];
      const double deg = (double)(adj->row[i + 1] - adj->row[i]);
      for (int d = 0; d < 3; d++) s[d] = -deg * (x[3 * i + d] - p0[3 * i + d]);
      for (int64_t a = adj->row[i]; a < adj->row[i + 1]; a++)
        for (int d = 0; d < 3; d++) s[d] += x[3 * adj->col[a] + d] - p0[3 * adj->col[a] + d];
      e += p->w_fair * (s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
    }
  }
  centred(dm, x, NULL, w->q);
  project(dm, p->constraint, w->q, w->z);
  double c = 0;
  for (int64_t s = 0; s < 3 * w->nidx; s++) c += (w->q[s] - w->z[s]) * (w->q[s] - w->z[s]);
  return e + p->w_constraint * c;
}

static double handle_error(const mb_deform_mesh *dm, const double *x) {
  double worst = 0;
  if (!dm->target) return 0;
  for (int64_t i = 0; i < dm->nv; i++) {
    if (isnan(dm->target[3 * i])) continue;
    double r2 = 0;
    for (int d = 0; d < 3; d++)
      r2 += (x[3 * i + d] - dm->target[3 * i + d]) * (x[3 * i + d] - dm->target[3 * i + d]);
    if (sqrt(r2) > worst) worst = sqrt(r2);
  }
  return worst;
}

/* Analysis (first call) and numeric factorization of H at c. */
static mb_error factor(const mb_deform_mesh *dm, deform_work *w,
                       double c, mb_deform_report *rep) {
  assemble_H(w, c);
  rep->mu = c;
  if (w->solver == MB_DEFORM_PCG) return MB_SUCCESS; /* the PCG reads H as it is */
  const double t0 = mb_wtime();
  if (!w->chol) MB_CALL(chol_create(dm, w->H, &w->chol));
  const double t1 = mb_wtime();
  MB_CALL(chol_factor(dm, w->chol, w->H, c));
  const double t2 = mb_wtime();
  rep->analyze_ms += 1e3 * (t1 - t0);
  rep->factor_ms += 1e3 * (t2 - t1);
  rep->factorizations++;
  return MB_SUCCESS;
}

static mb_error run(const mb_deform_params *p, mb_deform_mesh *dm, mb_deform_report *rep,
                    deform_work *w) {
  const int64_t nv = dm->nv;
  const int hard = p->hard != 0;
  double *x = dm->x;
  const double t_setup = mb_wtime(); /* the setup: the report's analysis, as on CUDA */
  for (int64_t i = 0; i < 3 * nv; i++)
    MB_CHECK(isfinite(x[i]), MB_ERR_NUMERIC, "%s: vertex %lld has a non-finite coordinate",
             dm->name, (long long)(i / 3));
  MB_CALL(build_incidence(dm, w));
  MB_CALL(build_pattern(dm, p->w_fair > 0, w));
  MB_CALL(assemble_parts(dm, p->w_fair > 0, w));
  /* every array but pin and u written before it is read: not zeroed (a
   * zeroing pass over some 60 MB at Roof2 per run); u only in hard mode */
  DEFORM_ALLOC(w->d, nv);
  DEFORM_ALLOC(w->t, 3 * nv);
  MB_CALLOC(w->pin, nv);
  DEFORM_ALLOC(w->r0, 3 * nv);
  DEFORM_ALLOC(w->g0, 3 * nv);
  DEFORM_ALLOC(w->gF, 3 * nv);
  DEFORM_ALLOC(w->z, 3 * w->nidx);
  if (hard) MB_CALLOC(w->u, 3 * w->nidx);
  DEFORM_ALLOC(w->q, 3 * w->nidx);
  DEFORM_ALLOC(w->b, 3 * nv);
  DEFORM_ALLOC(w->xn, 3 * nv);
  DEFORM_ALLOC(w->fres, dm->nf);
  DEFORM_ALLOC(w->p0, 3 * nv);
  DEFORM_ALLOC(w->fmean, 3 * dm->nf);
  const double *p0 = w->p0;
  const int solver = w->solver = mb_deform_solver_resolve(p, 0);
  if (solver == MB_DEFORM_PCG && p->cg_iterations > 0)
    MB_CALL(mb_deform_cg_work_create((int32_t)nv, &w->cg));
  int handles_moved = 0;
  double l = 1;
  MB_CALL(mb_deform_setup(p, dm, w->H, w->KtK, w->face, w->d, w->t, w->pin, w->p0, w->base,
                          w->r0, w->g0, w->gF, rep, &handles_moved, &l));
  rep->analyze_ms += 1e3 * (mb_wtime() - t_setup);

  const int which = p->constraint;
  double res = INFINITY;
  if (hard || rep->history) residuals(dm, w, x, which, &res, NULL);
  if (rep->history) rep->history[0] = res / l;
  if (rep->energy) rep->energy[0] = hard ? 0 : energy(p, dm, w, p0, x);
  rep->iterations = 0;
  rep->converged = 0;
  int mu_k = 0, at_mu = 0;
  double c = p->w_constraint, prim_ref = INFINITY, prim_last = INFINITY;
  if (hard && !handles_moved && res / l <= p->tolerance)
    rep->converged = 1; /* already met, handles at their targets: nothing to do */
  else MB_CALL(factor(dm, w, c, rep));
  mb_error err = MB_SUCCESS;
  for (int it = 0; it < p->iterations && !rep->converged; it++) {
    if (mb_op_should_stop(dm->ctx, it, p->iterations)) return mb_op_stopped(dm->ctx);
    double t0 = mb_wtime();
    double dist;
    if (hard) {
      centred(dm, x, w->u, w->q);
      dist = project(dm, which, w->q, w->z);
    } else dist = project_soft(dm, which, w, x);
    if (!hard) { /* the projection of p measured p's residual */
      res = dist;
      if (rep->history) rep->history[it] = res / l;
      if (res / l <= p->tolerance) {
        rep->converged = 1;
        rep->project_ms += 1e3 * (mb_wtime() - t0);
        break;
      }
    }
    if (hard) { /* over-relaxation: h = alpha z + (1 - alpha) A p_old */
      const double al = prim_last <= MB_DEFORM_RELAX_BELOW * l ? MB_DEFORM_RELAX : 1.0;
      for (int64_t s = 0; s < 3 * w->nidx; s++) {
        const double ap = w->q[s] - w->u[s];
        w->z[s] = al * w->z[s] + (1.0 - al) * ap; /* z holds h from here */
        w->q[s] = w->z[s] - w->u[s];
      }
    }
    double t1 = mb_wtime();
    gather_rhs(dm, w, hard ? w->q : w->z, !hard, c, x, w->b);
    if (solver == MB_DEFORM_PCG && p->cg_iterations > 0) { /* inexact, warm-started */
      memcpy(w->xn, x, sizeof(double) * 3 * (size_t)nv);
      err = mb_deform_cg(dm->name, w->H, w->b, w->xn, p->cg_iterations, w->cg,
                         &rep->pcg_iterations);
    } else if (solver == MB_DEFORM_PCG) { /* warm start: the current positions */
      memcpy(w->xn, x, sizeof(double) * 3 * (size_t)nv);
      const mb_pcg_opts o = {.rtol = MB_DEFORM_PCG_RTOL, .max_iter = 100000};
      mb_solve_stats st;
      err = mb_pcg_solve(MPI_COMM_SELF, NULL, w->H, 3, w->b, w->xn, &o, &st);
      rep->pcg_iterations += st.iterations;
    } else {
      err = chol_solve(dm, w->chol, w->b, w->xn);
    }
    if (err) break;
    double moved = 0;
    for (int64_t i = 0; i < nv; i++) {
      if (w->pin[i] != 0) continue;
      for (int d = 0; d < 3; d++) {
        const double dx = fabs(w->xn[3 * i + d] - x[3 * i + d]);
        if (!(dx <= moved)) moved = dx; /* NaN propagates */
        x[3 * i + d] = w->xn[3 * i + d];
      }
    }
    double t2 = mb_wtime();
    if (!isfinite(moved)) {
      err = mb_error_set(MB_ERR_NUMERIC, __FILE__, __LINE__, __func__,
                         "%s: iteration %d: a position became non-finite", dm->name, it + 1);
      break;
    }
    rep->iterations = it + 1;
    if (hard) { /* dual update u += A p - h; primal residual */
      centred(dm, x, NULL, w->q);
      double prim = 0;
      for (int64_t s = 0; s < 3 * w->nidx; s++) {
        const double r = w->q[s] - w->z[s];
        w->u[s] += r;
        if (fabs(r) > prim) prim = fabs(r);
      }
      prim_last = prim;
      if (++at_mu == 1) prim_ref = prim;
      if (at_mu > MB_DEFORM_MU_WINDOW) { /* a window of iterations at this mu */
        if (prim > 0.5 * prim_ref && mu_k + 1 < MB_DEFORM_MU_STEPS) {
          const double cn = c * 10.0;
          for (int64_t s = 0; s < 3 * w->nidx; s++) w->u[s] *= c / cn;
          c = cn;
          mu_k++;
          rep->update_ms += 1e3 * (mb_wtime() - t2);
          const double tf = mb_wtime();
          err = factor(dm, w, c, rep);
          if (err) break;
          t2 += mb_wtime() - tf; /* the factorization is its own phase */
        }
        at_mu = 0;
      }
      /* the constraint's residual: only near convergence (the primal
       * residual, a distance of each vertex to a point set meeting the
       * constraint, then small), at the cap, or for the history */
      if (prim <= 10 * p->tolerance * l || it + 1 == p->iterations || rep->history) {
        residuals(dm, w, x, which, &res, NULL);
        if (rep->history) rep->history[it + 1] = res / l;
        if (res / l <= p->tolerance) rep->converged = 1;
      }
    } else {
      if (rep->energy) rep->energy[it + 1] = energy(p, dm, w, p0, x);
      if (moved <= p->tolerance * l) rep->converged = 1;
    }
    const double t3 = mb_wtime();
    rep->project_ms += 1e3 * (t1 - t0);
    rep->solve_ms += 1e3 * (t2 - t1);
    rep->update_ms += 1e3 * (t3 - t2);
  }
  MB_CALL(err);
  double plan, reg;
  residuals(dm, w, x, -1, &plan, &reg);
  res = which == MB_DEFORM_REGULAR ? reg : plan;
  if (rep->history) rep->history[rep->iterations] = res / l;
  rep->planarity = plan / l;
  rep->regularity = reg / l;
  rep->handle_error = handle_error(dm, x);
  if (rep->face_planarity)
    for (int64_t f = 0; f < dm->nf; f++) rep->face_planarity[f] = w->fres[f] / l;
  if (hard && !rep->converged)
    MB_FAIL(MB_ERR_NUMERIC,
            "%s: the hard %s constraints were not met: residual %.3g (tolerance %g) after %d "
            "iterations, mu %g; handle error %.3g (the handles may admit no %s mesh, or more "
            "iterations are needed: a tolerance of 1e-8 takes hundreds to thousands, see "
            "mb_deform.h)",
            dm->name, which == MB_DEFORM_PLANAR ? "planar" : "regular", res / l, p->tolerance,
            rep->iterations, c, rep->handle_error,
            which == MB_DEFORM_PLANAR ? "planar" : "regular");
  return MB_SUCCESS;
}

/* mb_deform.h */
int mb_deform_solver_resolve(const mb_deform_params *p, int cuda) {
  if (p->solver != MB_DEFORM_AUTO) return p->solver;
  return cuda || p->cg_iterations > 0 ? MB_DEFORM_PCG : MB_DEFORM_CHOLESKY;
}

/* mb_deform_private.h */
mb_error mb_deform_setup(const mb_deform_params *p, mb_deform_mesh *dm, const mb_csr *H,
                         const double *KtK, const double *face, double *wd, double *t, double *pin,
                         double *p0, double *base, double *r0, double *g0, double *gF,
                         mb_deform_report *rep, int *handles_moved_out, double *l_out) {
  const int64_t nv = dm->nv;
  const int hard = p->hard != 0;
  double *x = dm->x;
  memcpy(p0, x, sizeof(double) * 3 * (size_t)nv);

  /* weights, targets, pinned vertices */
  rep->handles = rep->pinned = 0;
  int handles_moved = 0;
  for (int64_t i = 0; i < nv; i++) {
    const double *tg = dm->target ? &dm->target[3 * i] : NULL;
    const int nan = tg ? isnan(tg[0]) + isnan(tg[1]) + isnan(tg[2]) : 3;
    if (nan != 3 && (nan != 0 || !isfinite(tg[0]) || !isfinite(tg[1]) || !isfinite(tg[2])))
      MB_FAIL(MB_ERR_NUMERIC,
              "%s: handle target of vertex %lld is (%g, %g, %g): a handle needs three finite "
              "coordinates (NaN in all three marks a free vertex)",
              dm->name, (long long)i, tg[0], tg[1], tg[2]);
    const int handle = nan == 0;
    rep->handles += handle;
    wd[i] = handle ? p->w_handle : p->w_close;
    for (int d = 0; d < 3; d++) t[3 * i + d] = handle ? tg[d] : x[3 * i + d];
    if ((handle && hard) || (p->fix_boundary && dm->adj->on_boundary[i])) {
      pin[i] = 1;
      rep->pinned++;
      if (handle && hard)
        for (int d = 0; d < 3; d++) {
          handles_moved |= x[3 * i + d] != tg[d];
          x[3 * i + d] = tg[d];
        }
    }
  }
  /* mean edge length of the input */
  double lsum = 0;
  int64_t ne = 0;
  for (int64_t i = 0; i < nv; i++)
    for (int64_t a = dm->adj->row[i]; a < dm->adj->row[i + 1]; a++) {
      const int64_t j = dm->adj->col[a];
      if (j <= i) continue;
      double r2 = 0;
      for (int d = 0; d < 3; d++) r2 += (p0[3 * i + d] - p0[3 * j + d]) * (p0[3 * i + d] - p0[3 * j + d]);
      lsum += sqrt(r2);
      ne++;
    }
  const double l = ne && lsum > 0 ? lsum / (double)ne : 1.0;
  rep->edge_length = l;

  /* base = D + w_fair K^T K; r0 = D t + w_fair K^T K p0; pinned columns */
  for (int32_t i = 0; i < H->nrows; i++)
    for (int32_t e = H->rowptr[i]; e < H->rowptr[i + 1]; e++)
      base[e] = (e == H->diag[i] ? wd[i] : 0.0) + p->w_fair * KtK[e];
  spmv_part(H, KtK, pin, -1, p0, r0);
  for (int64_t i = 0; i < nv; i++)
    for (int d = 0; d < 3; d++)
      r0[3 * i + d] = wd[i] * t[3 * i + d] + p->w_fair * r0[3 * i + d];
  spmv_part(H, base, pin, 1, x, g0);
  spmv_part(H, face, pin, 1, x, gF);
  *handles_moved_out = handles_moved;
  *l_out = l;
  return MB_SUCCESS;
}

mb_error mb_deform_run_cpu(const mb_deform_params *p, mb_deform_mesh *dm, mb_deform_report *rep) {
  MB_CHECK(p && dm && rep && dm->x && dm->adj && dm->face_offsets && dm->face_indices &&
               p->iterations >= 1,
           MB_ERR_ARG, "mb_deform_run_cpu: bad arguments");
  double *history = rep->history, *en = rep->energy, *fp = rep->face_planarity;
  memset(rep, 0, sizeof *rep);
  rep->history = history;
  rep->energy = en;
  rep->face_planarity = fp;
  deform_work w = {0};
  w.nv = dm->nv;
  w.nf = dm->nf;
  mb_error e = run(p, dm, rep, &w);
  const double t_free = mb_wtime();
  work_free(&w);
  rep->finish_ms = 1e3 * (mb_wtime() - t_free);
  return e;
}

/* ------------------------------------------ for the CUDA backend
 * (mb_deform_private.h): the system parts by the functions above. */

mb_error mb_deform_system_build(const mb_deform_mesh *dm, int fair, mb_deform_system *s) {
  memset(s, 0, sizeof *s);
  deform_work w = {0};
  w.nv = s->nv = dm->nv;
  w.nf = s->nf = dm->nf;
  mb_error e = build_incidence(dm, &w);
  if (!e) e = build_pattern(dm, fair, &w);
  if (!e) e = assemble_parts(dm, fair, &w);
  s->nidx = w.nidx;
  s->vf_row = w.vf_row, s->vf_slot = w.vf_slot, s->slot_face = w.slot_face;
  s->H = w.H, s->KtK = w.KtK, s->face = w.face;
  w.vf_row = NULL, w.vf_slot = NULL, w.slot_face = NULL, w.H = NULL, w.KtK = NULL, w.face = NULL;
  work_free(&w);
  return e;
}

void mb_deform_system_matrix(mb_deform_system *s, const double *base, const double *pin,
                             double c) {
  deform_work w = {0};
  w.H = s->H;
  w.base = (double *)base;
  w.face = s->face;
  w.pin = (double *)pin;
  assemble_H(&w, c);
}

void mb_deform_system_free(mb_deform_system *s) {
  if (!s) return;
  free(s->vf_row);
  free(s->vf_slot);
  free(s->slot_face);
  mb_csr_free(s->H);
  free(s->KtK);
  free(s->face);
  memset(s, 0, sizeof *s);
}
