/* meshbatch: vertex adjacency in CSR form (see mb_adjacency.h).
 *
 * Construction is a counting sort: every face edge (a, b) adds the directed
 * entries a->b and b->a (with the face's opposite vertex for triangles) into
 * per-vertex buckets in face order; each bucket is then sorted by neighbour
 * (stably, so opposite vertices stay in face order) and equal neighbours are
 * collapsed. An edge seen in exactly one face is a boundary edge.
 */
#include "mb_adjacency.h"

#include <stdlib.h>
#include <string.h>

/* One directed edge entry while building: neighbour, opposite vertex, and
 * its position in the bucket (the tie-breaker that keeps face order). */
typedef struct entry {
  int64_t col;
  int64_t opp;
  int64_t seq;
} entry;

static int entry_cmp(const void *x, const void *y) {
  const entry *a = x, *b = y;
  if (a->col != b->col) return a->col < b->col ? -1 : 1;
  return (a->seq > b->seq) - (a->seq < b->seq);
}

/* Stable sort of one bucket by neighbour: insertion sort for the usual short
 * rows, qsort on (col, seq) for long ones (hub vertices). */
static void sort_bucket(entry *e, int64_t n) {
  if (n > 32) {
    for (int64_t k = 0; k < n; k++) e[k].seq = k;
    qsort(e, (size_t)n, sizeof *e, entry_cmp);
    return;
  }
  for (int64_t k = 1; k < n; k++) {
    entry x = e[k];
    int64_t m = k - 1;
    while (m >= 0 && e[m].col > x.col) {
      e[m + 1] = e[m];
      m--;
    }
    e[m + 1] = x;
  }
}

void mb_adjacency_free(mb_adjacency *a) {
  if (!a) return;
  free(a->row);
  free(a->col);
  free(a->opp_row);
  free(a->opp);
  free(a->on_boundary);
  free(a->brow);
  free(a->bcol);
  free(a);
}

/* Visit every edge of every face as (a, b, opposite or -1); self-loops skipped. */
#define MB_FOR_EACH_FACE_EDGE(m, tri, ...)                                     \
  for (int64_t f_ = 0; f_ < (m)->nf; f_++) {                                   \
    int64_t s_ = (m)->face_offsets[f_], k_ = (m)->face_offsets[f_ + 1] - s_;  \
    const int64_t *v_ = (m)->face_indices + s_;                                \
    for (int64_t t_ = 0; t_ < k_; t_++) {                                      \
      int64_t a = v_[t_], b = v_[(t_ + 1) % k_];                              \
      int64_t o = (tri) ? v_[(t_ + 2) % 3] : -1;                               \
      if (a == b) continue;                                                    \
      __VA_ARGS__                                                              \
    }                                                                          \
  }

mb_error mb_adjacency_build(const mb_mesh *m, mb_adjacency **out) {
  const int64_t nv = m->nv;
  const int tri = mb_mesh_is_triangles(m);
  mb_error ierr = MB_SUCCESS;
  int64_t *fill = NULL, *mult = NULL;
  entry *ent = NULL;
  mb_adjacency *a;
  MB_CALLOC(a, 1);
  a->nv = nv;

  /* 1. bucket sizes and bucket fill in face order */
  int64_t *start = calloc((size_t)nv + 1, sizeof *start);
  fill = calloc((size_t)nv + 1, sizeof *fill);
  if (!start || !fill) goto oom;
  MB_FOR_EACH_FACE_EDGE(m, tri, { (void)o; start[a + 1]++; start[b + 1]++; });
  for (int64_t i = 0; i < nv; i++) start[i + 1] += start[i];
  const int64_t nent = start[nv];
  ent = malloc(sizeof *ent * (size_t)(nent ? nent : 1));
  if (!ent) goto oom;
  memcpy(fill, start, sizeof *fill * (size_t)nv);
  MB_FOR_EACH_FACE_EDGE(m, tri, {
    ent[fill[a]++] = (entry){b, o, 0};
    ent[fill[b]++] = (entry){a, o, 0};
  });

  /* 2. sort buckets, count distinct neighbours */
  a->row = calloc((size_t)nv + 1, sizeof *a->row);
  if (!a->row) goto oom;
#pragma omp parallel for schedule(dynamic, 1024)
  for (int64_t i = 0; i < nv; i++) {
    entry *e = ent + start[i];
    int64_t n = start[i + 1] - start[i], d = 0;
    sort_bucket(e, n);
    for (int64_t k = 0; k < n; k++)
      if (k == 0 || e[k].col != e[k - 1].col) d++;
    a->row[i + 1] = d;
  }
  for (int64_t i = 0; i < nv; i++) a->row[i + 1] += a->row[i];
  a->nnz = a->row[nv];

  /* 3. collapse: neighbours, edge multiplicity, opposite vertices */
  a->col = malloc(sizeof *a->col * (size_t)(a->nnz ? a->nnz : 1));
  mult = calloc((size_t)(a->nnz ? a->nnz : 1), sizeof *mult);
  a->on_boundary = calloc((size_t)(nv ? nv : 1), 1);
  a->brow = calloc((size_t)nv + 1, sizeof *a->brow);
  if (!a->col || !mult || !a->on_boundary || !a->brow) goto oom;
  if (tri) {
    a->opp_row = calloc((size_t)a->nnz + 1, sizeof *a->opp_row);
    a->opp = malloc(sizeof *a->opp * (size_t)(nent ? nent : 1));
    if (!a->opp_row || !a->opp) goto oom;
  }
#pragma omp parallel for schedule(dynamic, 1024)
  for (int64_t i = 0; i < nv; i++) {
    const entry *e = ent + start[i];
    int64_t n = start[i + 1] - start[i], k = a->row[i] - 1, nb = 0;
    for (int64_t t = 0; t < n; t++) {
      if (t == 0 || e[t].col != e[t - 1].col) a->col[++k] = e[t].col;
      mult[k]++;
      if (tri) a->opp[start[i] + t] = e[t].opp;
    }
    for (int64_t q = a->row[i]; q < a->row[i + 1]; q++)
      if (mult[q] == 1) nb++;
    a->on_boundary[i] = nb > 0;
    a->brow[i + 1] = nb;
  }
  if (tri) /* entries were stored bucket by bucket: opp_row follows multiplicities */
    for (int64_t k = 0; k < a->nnz; k++) a->opp_row[k + 1] = a->opp_row[k] + mult[k];
  for (int64_t i = 0; i < nv; i++) a->brow[i + 1] += a->brow[i];
  a->bcol = malloc(sizeof *a->bcol * (size_t)(a->brow[nv] ? a->brow[nv] : 1));
  if (!a->bcol) goto oom;
  for (int64_t i = 0; i < nv; i++) {
    int64_t p = a->brow[i];
    for (int64_t q = a->row[i]; q < a->row[i + 1]; q++)
      if (mult[q] == 1) a->bcol[p++] = a->col[q];
  }
  free(start);
  free(fill);
  free(mult);
  free(ent);
  *out = a;
  return ierr;

oom:
  free(start);
  free(fill);
  free(mult);
  free(ent);
  mb_adjacency_free(a);
  MB_FAIL(MB_ERR_MEMORY, "out of memory building the adjacency of '%s' (%lld vertices)",
          m->name ? m->name : "mesh", (long long)nv);
}

/* ------------------------------------------------------------ reordering */

static int64_t degree(const mb_adjacency *a, int64_t i) { return a->row[i + 1] - a->row[i]; }

mb_error mb_adjacency_rcm(const mb_adjacency *a, int64_t *perm) {
  const int64_t nv = a->nv;
  uint8_t *seen = calloc((size_t)(nv ? nv : 1), 1);
  int64_t *by_degree = malloc(sizeof *by_degree * (size_t)(nv ? nv : 1));
  if (!seen || !by_degree) {
    free(seen);
    free(by_degree);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for the vertex ordering of %lld vertices", (long long)nv);
  }
  /* component seeds in increasing degree: a counting sort on degree */
  int64_t maxdeg = 0;
  for (int64_t i = 0; i < nv; i++)
    if (degree(a, i) > maxdeg) maxdeg = degree(a, i);
  int64_t *start = calloc((size_t)maxdeg + 2, sizeof *start);
  if (!start) {
    free(seen);
    free(by_degree);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for the vertex ordering");
  }
  for (int64_t i = 0; i < nv; i++) start[degree(a, i) + 1]++;
  for (int64_t d = 0; d <= maxdeg; d++) start[d + 1] += start[d];
  for (int64_t i = 0; i < nv; i++) by_degree[start[degree(a, i)]++] = i;
  free(start);
  /* breadth-first search; perm doubles as the queue */
  int64_t head = 0, tail = 0;
  for (int64_t s = 0; s < nv; s++) {
    int64_t seed = by_degree[s];
    if (seen[seed]) continue;
    seen[seed] = 1;
    perm[tail++] = seed;
    while (head < tail) {
      int64_t v = perm[head++], first = tail;
      for (int64_t k = a->row[v]; k < a->row[v + 1]; k++)
        if (!seen[a->col[k]]) {
          seen[a->col[k]] = 1;
          perm[tail++] = a->col[k];
        }
      for (int64_t x = first + 1; x < tail; x++) { /* new neighbours by degree */
        int64_t u = perm[x], y = x - 1;
        while (y >= first && degree(a, perm[y]) > degree(a, u)) {
          perm[y + 1] = perm[y];
          y--;
        }
        perm[y + 1] = u;
      }
    }
  }
  for (int64_t i = 0; i < nv / 2; i++) {
    int64_t t = perm[i];
    perm[i] = perm[nv - 1 - i];
    perm[nv - 1 - i] = t;
  }
  free(seen);
  free(by_degree);
  return MB_SUCCESS;
}

/* Rows of src CSR (row, col) in the order perm, columns mapped by inv. */
static mb_error permute_csr(int64_t nv, const int64_t *perm, const int64_t *inv,
                            const int64_t *row, const int64_t *col, int64_t **nrow, int64_t **ncol) {
  MB_CALLOC(*nrow, nv + 1);
  MB_CALLOC(*ncol, row[nv]);
  for (int64_t v = 0; v < nv; v++) (*nrow)[v + 1] = (*nrow)[v] + row[perm[v] + 1] - row[perm[v]];
  for (int64_t v = 0; v < nv; v++)
    for (int64_t k = row[perm[v]], q = (*nrow)[v]; k < row[perm[v] + 1]; k++, q++)
      (*ncol)[q] = inv ? inv[col[k]] : col[k];
  return MB_SUCCESS;
}

mb_error mb_adjacency_permute(const mb_adjacency *a, const int64_t *perm, mb_adjacency **out) {
  const int64_t nv = a->nv;
  mb_adjacency *p = calloc(1, sizeof *p);
  int64_t *inv = malloc(sizeof *inv * (size_t)(nv ? nv : 1));
  mb_error e = p && inv ? MB_SUCCESS : mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                                                    "out of memory");
  if (!e) {
    p->nv = nv;
    p->nnz = a->nnz;
    for (int64_t v = 0; v < nv; v++) inv[perm[v]] = v;
    e = permute_csr(nv, perm, inv, a->row, a->col, &p->row, &p->col);
  }
  if (!e) e = permute_csr(nv, perm, inv, a->brow, a->bcol, &p->brow, &p->bcol);
  if (!e && !(p->on_boundary = malloc((size_t)(nv ? nv : 1))))
    e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  for (int64_t v = 0; !e && v < nv; v++) p->on_boundary[v] = a->on_boundary[perm[v]];
  if (!e && a->opp) { /* opposite vertices follow their directed edge */
    int64_t *edge_perm = malloc(sizeof *edge_perm * (size_t)(a->nnz ? a->nnz : 1));
    if (!edge_perm) e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
    for (int64_t v = 0, q = 0; !e && v < nv; v++)
      for (int64_t k = a->row[perm[v]]; k < a->row[perm[v] + 1]; k++) edge_perm[q++] = k;
    if (!e) e = permute_csr(a->nnz, edge_perm, inv, a->opp_row, a->opp, &p->opp_row, &p->opp);
    free(edge_perm);
  }
  free(inv);
  if (e) {
    mb_adjacency_free(p);
    return e;
  }
  *out = p;
  return MB_SUCCESS;
}
