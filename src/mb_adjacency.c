/* meshbatch: vertex adjacency in CSR form (see mb_adjacency.h).
 *
 * Construction is a counting sort: every face edge (a, b) adds the directed
 * entries a->b and b->a (with the face's opposite vertex for triangles) into
 * per-vertex buckets in face order; each bucket is then sorted by neighbour
 * (stably, so opposite vertices stay in face order) and equal neighbours are
 * collapsed. An edge seen in exactly one face is a boundary edge.
 */
#include "mb_adjacency.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Stable sort of one bucket by neighbour c[0..n), carrying the opposite
 * vertices o (NULL without them): insertion sort for the usual short rows
 * (about 6 entries per vertex on a triangle mesh), a merge sort through tc
 * and to for long ones (hub vertices), so that opposite vertices stay in
 * face order. */
static void sort_bucket(int32_t *c, int32_t *o, int64_t n, int32_t *tc, int32_t *to) {
  if (n <= 32 || !tc) {
    for (int64_t k = 1; k < n; k++) {
      const int32_t xc = c[k], xo = o ? o[k] : 0;
      int64_t m = k - 1;
      while (m >= 0 && c[m] > xc) {
        c[m + 1] = c[m];
        if (o) o[m + 1] = o[m];
        m--;
      }
      c[m + 1] = xc;
      if (o) o[m + 1] = xo;
    }
    return;
  }
  const int64_t h = n / 2;
  sort_bucket(c, o, h, tc, to);
  sort_bucket(c + h, o ? o + h : NULL, n - h, tc, to);
  int64_t i = 0, j = h, k = 0;
  while (i < h || j < n) {
    const int64_t s = j >= n || (i < h && c[i] <= c[j]) ? i++ : j++;
    tc[k] = c[s];
    if (o) to[k] = o[s];
    k++;
  }
  memcpy(c, tc, sizeof *c * (size_t)n);
  if (o) memcpy(o, to, sizeof *o * (size_t)n);
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

/* The bucket sizes (fill = 0) or the buckets' neighbours (fill = 1, start
 * the cursor) of every face edge, faces spread over the OpenMP threads:
 * the order within a bucket is then arbitrary (the buckets are sorted and
 * collapsed after), so this serves the build without opposite vertices. */
static void face_edges_parallel(const mb_mesh *m, int fill, int64_t *start, int32_t *bc) {
#pragma omp parallel for schedule(static)
  for (int64_t f = 0; f < m->nf; f++) {
    const int64_t s = m->face_offsets[f], k = m->face_offsets[f + 1] - s;
    const int64_t *v = m->face_indices + s;
    for (int64_t t = 0; t < k; t++) {
      const int64_t a = v[t], b = v[(t + 1) % k];
      if (a == b) continue;
      if (!fill) {
#pragma omp atomic update
        start[a + 2]++;
#pragma omp atomic update
        start[b + 2]++;
        continue;
      }
      int64_t pa, pb;
#pragma omp atomic capture
      pa = start[a + 1]++;
#pragma omp atomic capture
      pb = start[b + 1]++;
      bc[pa] = (int32_t)b;
      bc[pb] = (int32_t)a;
    }
  }
}

mb_error mb_adjacency_build(const mb_mesh *m, mb_adjacency **out) {
  return mb_adjacency_build_opts(m, MB_ADJ_OPPOSITE, out);
}

/* Memory while building (nent = 2 x face edges, about 6 nv on a triangle
 * mesh): start[nv + 2] int64, the buckets' neighbours (4 bytes per entry)
 * and, with opposites, their opposite vertices (4 more); then the result
 * (mb_adjacency.h); the buckets are freed before the boundary lists. */
mb_error mb_adjacency_build_opts(const mb_mesh *m, unsigned flags, mb_adjacency **out) {
  const int64_t nv = m->nv;
  const int tri = mb_mesh_is_triangles(m) && (flags & MB_ADJ_OPPOSITE);
  MB_CHECK(nv < INT32_MAX, MB_ERR_ARG,
           "mesh '%s' has %lld vertices: the adjacency builder takes fewer than 2^31",
           m->name ? m->name : "mesh", (long long)nv);
  /* while collapsing, col[k] carries SHARED when its edge is in two or more
   * faces (not a boundary edge); cleared when the boundary lists are made */
  const int64_t SHARED = (int64_t)1 << 62;
  int64_t *start = NULL;
  int32_t *bc = NULL, *bo = NULL; /* bucket neighbours and opposite vertices */
  mb_adjacency *a;
  MB_CALLOC(a, 1);
  a->nv = nv;

  /* 1. bucket sizes, then the buckets in face order (start[] is the fill
   * cursor: afterwards start[i] and start[i + 1] bound bucket i) */
  start = mb_zalloc((size_t)nv + 2, sizeof *start);
  if (!start) goto oom;
  if (tri) { /* opposite vertices keep face order within a bucket: one thread */
    MB_FOR_EACH_FACE_EDGE(m, tri, { (void)o; start[a + 2]++; start[b + 2]++; });
  } else {
    face_edges_parallel(m, 0, start, NULL);
  }
  for (int64_t i = 0; i < nv; i++) start[i + 2] += start[i + 1];
  const int64_t nent = start[nv + 1];
  bc = mb_alloc(sizeof *bc * (size_t)(nent ? nent : 1));
  if (!bc) goto oom;
  if (tri && !(bo = mb_alloc(sizeof *bo * (size_t)(nent ? nent : 1)))) goto oom;
  if (tri) {
    MB_FOR_EACH_FACE_EDGE(m, tri, {
      const int64_t pa = start[a + 1]++, pb = start[b + 1]++;
      bc[pa] = (int32_t)b;
      bc[pb] = (int32_t)a;
      bo[pa] = bo[pb] = (int32_t)o;
    });
  } else {
    face_edges_parallel(m, 1, start, bc);
  }

  /* 2. sort buckets, count distinct neighbours */
  a->row = mb_alloc(sizeof *a->row * ((size_t)nv + 1));
  if (!a->row) goto oom;
  a->row[0] = 0;
  int oom_sort = 0;
#pragma omp parallel reduction(| : oom_sort)
  {
    int32_t *tc = NULL, *to = NULL;
    int64_t cap = 0;
#pragma omp for schedule(dynamic, 1024)
    for (int64_t i = 0; i < nv; i++) {
      int32_t *c = bc + start[i];
      const int64_t n = start[i + 1] - start[i];
      if (n > 32 && n > cap) {
        free(tc);
        free(to);
        cap = n;
        tc = mb_alloc(sizeof *tc * (size_t)cap);
        to = mb_alloc(sizeof *to * (size_t)cap);
        if (!tc || !to) {
          free(tc);
          free(to);
          tc = to = NULL;
          cap = 0;
          oom_sort = 1;
        }
      }
      sort_bucket(c, tri ? bo + start[i] : NULL, n, tc, to);
      int64_t d = 0;
      for (int64_t k = 0; k < n; k++)
        if (k == 0 || c[k] != c[k - 1]) d++;
      a->row[i + 1] = d;
    }
    free(tc);
    free(to);
  }
  if (oom_sort) goto oom;
  for (int64_t i = 0; i < nv; i++) a->row[i + 1] += a->row[i];
  a->nnz = a->row[nv];

  /* 3. collapse: neighbours, edge multiplicity, opposite vertices */
  a->col = mb_alloc(sizeof *a->col * (size_t)(a->nnz ? a->nnz : 1));
  a->on_boundary = mb_alloc((size_t)(nv ? nv : 1));
  if (!a->col || !a->on_boundary) goto oom;
  if (tri) {
    a->opp_row = mb_alloc(sizeof *a->opp_row * ((size_t)a->nnz + 1));
    a->opp = mb_alloc(sizeof *a->opp * (size_t)(nent ? nent : 1));
    if (!a->opp_row || !a->opp) goto oom;
    a->opp_row[0] = 0;
  }
#pragma omp parallel for schedule(dynamic, 1024)
  for (int64_t i = 0; i < nv; i++) {
    const int32_t *c = bc + start[i];
    int64_t n = start[i + 1] - start[i], k = a->row[i] - 1, nb = 0;
    for (int64_t t = 0; t < n; t++) {
      if (t == 0 || c[t] != c[t - 1]) a->col[++k] = c[t];
      else a->col[k] |= SHARED;
      if (tri) {
        a->opp[start[i] + t] = bo[start[i] + t];
        a->opp_row[k + 1] = start[i] + t + 1; /* the end of this edge's opposite vertices */
      }
    }
    for (int64_t q = a->row[i]; q < a->row[i + 1]; q++)
      if (!(a->col[q] & SHARED)) nb++;
    a->on_boundary[i] = nb > 0;
  }
  free(bc);
  free(bo);
  bc = bo = NULL;
  free(start);
  start = NULL;

  /* 4. the boundary lists, once the buckets are gone */
  a->brow = mb_alloc(sizeof *a->brow * ((size_t)nv + 1));
  if (!a->brow) goto oom;
  a->brow[0] = 0;
#pragma omp parallel for schedule(dynamic, 1024)
  for (int64_t i = 0; i < nv; i++) {
    int64_t nb = 0;
    for (int64_t q = a->row[i]; q < a->row[i + 1]; q++)
      if (!(a->col[q] & SHARED)) nb++;
    a->brow[i + 1] = nb;
  }
  for (int64_t i = 0; i < nv; i++) a->brow[i + 1] += a->brow[i];
  a->bcol = mb_alloc(sizeof *a->bcol * (size_t)(a->brow[nv] ? a->brow[nv] : 1));
  if (!a->bcol) goto oom;
#pragma omp parallel for schedule(dynamic, 1024)
  for (int64_t i = 0; i < nv; i++) {
    int64_t p = a->brow[i];
    for (int64_t q = a->row[i]; q < a->row[i + 1]; q++) {
      if (!(a->col[q] & SHARED)) a->bcol[p++] = a->col[q];
      a->col[q] &= ~SHARED;
    }
  }
  *out = a;
  return MB_SUCCESS;

oom:
  free(start);
  free(bc);
  free(bo);
  mb_adjacency_free(a);
  MB_FAIL(MB_ERR_MEMORY, "out of memory building the adjacency of '%s' (%lld vertices)",
          m->name ? m->name : "mesh", (long long)nv);
}

/* ------------------------------------------------------------ reordering */

static int64_t degree(const mb_adjacency *a, int64_t i) { return a->row[i + 1] - a->row[i]; }

mb_error mb_adjacency_rcm(const mb_adjacency *a, int64_t *perm) {
  const int64_t nv = a->nv;
  uint8_t *seen = mb_zalloc((size_t)(nv ? nv : 1), 1);
  int64_t *by_degree = mb_alloc(sizeof *by_degree * (size_t)(nv ? nv : 1));
  if (!seen || !by_degree) {
    free(seen);
    free(by_degree);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for the vertex ordering of %lld vertices", (long long)nv);
  }
  /* component seeds in increasing degree: a counting sort on degree */
  int64_t maxdeg = 0;
  for (int64_t i = 0; i < nv; i++)
    if (degree(a, i) > maxdeg) maxdeg = degree(a, i);
  int64_t *start = mb_zalloc((size_t)maxdeg + 2, sizeof *start);
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

/* Rows of src CSR (row, col) in the order perm, columns mapped by inv
 * (NULL: copied). Row lengths and the rows' copies in parallel (OpenMP). */
static mb_error permute_csr(int64_t nv, const int64_t *perm, const int64_t *inv,
                            const int64_t *row, const int64_t *col, int64_t **nrow, int64_t **ncol) {
  *nrow = mb_alloc(sizeof **nrow * ((size_t)nv + 1));
  *ncol = mb_alloc(sizeof **ncol * (size_t)(row[nv] ? row[nv] : 1));
  MB_CHECK(*nrow && *ncol, MB_ERR_MEMORY, "out of memory for a renumbered adjacency");
  int64_t *nr = *nrow, *nc = *ncol;
  nr[0] = 0;
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < nv; v++) nr[v + 1] = row[perm[v] + 1] - row[perm[v]];
  for (int64_t v = 0; v < nv; v++) nr[v + 1] += nr[v];
#pragma omp parallel for schedule(dynamic, 4096)
  for (int64_t v = 0; v < nv; v++)
    for (int64_t k = row[perm[v]], q = nr[v]; k < row[perm[v] + 1]; k++, q++)
      nc[q] = inv ? inv[col[k]] : col[k];
  return MB_SUCCESS;
}

mb_error mb_adjacency_permute(const mb_adjacency *a, const int64_t *perm, mb_adjacency **out) {
  const int64_t nv = a->nv;
  mb_adjacency *p = mb_zalloc(1, sizeof *p);
  int64_t *inv = mb_alloc(sizeof *inv * (size_t)(nv ? nv : 1));
  mb_error e = p && inv ? MB_SUCCESS : mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                                                    "out of memory");
  if (!e) {
    p->nv = nv;
    p->nnz = a->nnz;
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < nv; v++) inv[perm[v]] = v;
    e = permute_csr(nv, perm, inv, a->row, a->col, &p->row, &p->col);
  }
  if (!e) e = permute_csr(nv, perm, inv, a->brow, a->bcol, &p->brow, &p->bcol);
  if (!e && !(p->on_boundary = mb_alloc((size_t)(nv ? nv : 1))))
    e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  if (!e)
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < nv; v++) p->on_boundary[v] = a->on_boundary[perm[v]];
  if (!e && a->opp) { /* opposite vertices follow their directed edge */
    int64_t *edge_perm = mb_alloc(sizeof *edge_perm * (size_t)(a->nnz ? a->nnz : 1));
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
