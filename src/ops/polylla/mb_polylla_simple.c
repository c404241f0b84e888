/* meshbatch: Polylla's last step, shared by every backend: pinched polygons
 * split until every polygon is simple (the rule is in mb_polylla.h,
 * "Pinch repair").
 *
 * A terminal-edge region is a tree of triangles (joined across its
 * non-frontier edges), so its union is a topological disk; but its
 * closure may touch itself at a vertex v: two fans ("sectors") of the
 * region's triangles around v, separated by frontier edges, joined by a
 * path of the tree that leaves v. Its boundary then passes through v twice
 * with different neighbours. No edge at v separates the two sectors (both
 * pieces of a fan cut at v still touch v), so the cut is made on the tree
 * path between them, at its shortest edge (the neck). Pinches are rare
 * (one polygon in about 30,000 on random Delaunay triangulations), so this
 * step runs on the host after either backend: a scan of the output for a
 * repeated vertex costs O(polygon indices) and, where it finds one, a scan
 * of the triangles' corners finds the pinched polygons' triangles; the
 * cuts and the traversals of the pieces run on the submesh of those
 * triangles alone, and the pieces are merged into the output by their
 * heads (one copy of the output). Until 2026-11-28 the repair rebuilt the
 * half-edges of the whole triangulation and traversed every polygon again:
 * a 2 M-point Delaunay on 2 threads, 5 cuts, 2.0 s of the CPU backend's
 * 3.3 s. Being one host code, it gives the same bits after the CPU and the
 * CUDA backends.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_alloc.h"
#include "mb_halfedge.h"
#include "mb_log.h"
#include "mb_polylla.h"

static int cmp_i64(const void *a, const void *b) {
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Append v [n] to the growable list *a (*len values, room for *cap); 0
 * when out of memory (the list then unchanged). */
static int list_append(int64_t **a, int64_t *len, int64_t *cap, const int64_t *v, int64_t n) {
  if (*len + n > *cap) {
    const int64_t c = 2 * (*len + n) > 16 ? 2 * (*len + n) : 16;
    int64_t *m = realloc(*a, sizeof *m * (size_t)c);
    if (!m) return 0;
    *a = m;
    *cap = c;
  }
  memcpy(*a + *len, v, sizeof *v * (size_t)n);
  *len += n;
  return 1;
}

/* Position in polygon list idx[0..n) of the first vertex that occurred
 * earlier (j), and of that earlier occurrence (*i); -1 if none. seen and
 * pos are [nv] scratch; stamp is unique to this call (seen[v] == stamp
 * means "met in this polygon"). */
static int64_t first_repeat(const int64_t *idx, int64_t n, int64_t *seen, int64_t *pos,
                            int64_t stamp, int64_t *i) {
  for (int64_t k = 0; k < n; k++) {
    const int64_t v = idx[k];
    if (seen[v] == stamp) {
      *i = pos[v];
      return k;
    }
    seen[v] = stamp;
    pos[v] = k;
  }
  return -1;
}

int mb_polylla_has_repeat(const int64_t *idx, int64_t n, int64_t **buf, int64_t *cap) {
  if (n <= 32) {
    for (int64_t k = 1; k < n; k++)
      for (int64_t j = 0; j < k; j++)
        if (idx[j] == idx[k]) return 1;
    return 0;
  }
  if (n > *cap) {
    int64_t *b = realloc(*buf, sizeof *b * (size_t)n);
    if (!b) return -1;
    *buf = b;
    *cap = n;
  }
  memcpy(*buf, idx, sizeof **buf * (size_t)n);
  qsort(*buf, (size_t)n, sizeof **buf, cmp_i64);
  for (int64_t k = 1; k < n; k++)
    if ((*buf)[k] == (*buf)[k - 1]) return 1;
  return 0;
}

/* The polygons of poly that list a vertex twice, in increasing index, into
 * *list (new, the caller frees it; NULL where none) and *n: one pass over
 * the polygons on OpenMP threads (the list does not depend on their
 * number), with no array per vertex. */
static mb_error find_pinched(const mb_mesh *poly, int64_t **list, int64_t *n) {
  *list = NULL;
  *n = 0;
  const int64_t nf = poly->nf;
  const int64_t *fo = poly->face_offsets, *fi = poly->face_indices;
  int nomem = 0;
  int64_t *found = NULL, nfound = 0, cfound = 0; /* merged under the critical section */
#pragma omp parallel reduction(| : nomem)
  {
    int64_t *buf = NULL, cap = 0, *mine = NULL, nmine = 0, cmine = 0;
#pragma omp for schedule(static) nowait
    for (int64_t p = 0; p < nf; p++) {
      if (nomem) continue;
      const int r = mb_polylla_has_repeat(fi + fo[p], fo[p + 1] - fo[p], &buf, &cap);
      if (r < 0) nomem = 1;
      if (r > 0 && !list_append(&mine, &nmine, &cmine, &p, 1)) nomem = 1;
    }
#pragma omp critical(mb_polylla_pinched)
    if (nmine && !nomem && !list_append(&found, &nfound, &cfound, mine, nmine)) nomem = 1;
    free(mine);
    free(buf);
  }
  if (nomem) free(found);
  MB_CHECK(!nomem, MB_ERR_MEMORY, "out of memory for the simple-polygon check (%lld polygons)",
           (long long)nf);
  if (nfound > 1) qsort(found, (size_t)nfound, sizeof *found, cmp_i64);
  *list = found;
  *n = nfound;
  return MB_SUCCESS;
}

/* Edge key of mb_polylla.h (squared length, max vertex, min vertex) of
 * half-edge h: is it smaller than the key (l, hi, lo)? */
static void edge_key(const mb_halfedge *he, const double *x, int32_t h, double *l, int32_t *hi,
                     int32_t *lo) {
  const int32_t a = he->vert[h], b = he->vert[mb_he_next(h)];
  *lo = a < b ? a : b;
  *hi = a < b ? b : a;
  const double dx = x[3 * (int64_t)*hi] - x[3 * (int64_t)*lo];
  const double dy = x[3 * (int64_t)*hi + 1] - x[3 * (int64_t)*lo + 1];
  *l = dx * dx + dy * dy;
}

/* Scratch of one repair. */
typedef struct pinch_work {
  const mb_halfedge *he;
  const double *x;
  uint8_t *front;  /* [nh] frontier half-edges */
  int32_t *mark;   /* [nt] 0 unseen, 1 sector A, 2 sector B, 3 reached from A */
  int32_t *via;    /* [nt] half-edge of the triangle crossed to reach it (BFS) */
  int32_t *queue;  /* [nt] */
  int64_t *twice;  /* [nv] == stamp: the vertex occurs twice or more in the polygon */
  int64_t stamp;
} pinch_work;

/* Mark the sector of the polygon at the vertex h starts from: the fan of
 * triangles around origin(h) from h's triangle, crossing non-frontier
 * edges at the vertex, s = twin(prev(s)). Appends them to queue[*nq]. */
static void mark_sector(pinch_work *w, int32_t h, int32_t label, int64_t *nq) {
  int32_t s = h;
  for (;;) {
    const int32_t t = s / 3;
    if (w->mark[t]) return; /* round the vertex back to the start */
    w->mark[t] = label;
    w->queue[(*nq)++] = t;
    const int32_t p = mb_he_prev(s);
    if (w->front[p]) return;
    s = w->he->twin[p];
  }
}

/* The cut of one pinched polygon whose half-edges ha and hb leave the
 * repeated vertex (visits i and j): the tree path between the two sectors,
 * its edge of smallest key; returns one of its half-edges, or -1 if there
 * is no path (not expected: the polygon is one tree). */
static int32_t pinch_cut(pinch_work *w, int32_t ha, int32_t hb) {
  int64_t nq = 0, nb = 0;
  mark_sector(w, ha, 1, &nq);
  const int64_t na = nq;
  mark_sector(w, hb, 2, &nq);
  nb = nq - na;
  /* BFS from sector A across non-frontier edges; stop at sector B. The
   * region is a tree, so the path found is the only one. */
  int64_t head = 0, tail = na, reached = -1;
  int32_t *q = w->queue;
  int32_t *bq = malloc(sizeof *bq * (size_t)(nb ? nb : 1)); /* sector B, to unmark */
  if (!bq) return -2;
  memcpy(bq, q + na, sizeof *bq * (size_t)nb);
  for (; head < tail && reached < 0; head++) {
    const int32_t t = q[head];
    for (int k = 0; k < 3 && reached < 0; k++) {
      const int32_t h = 3 * t + k, g = w->he->twin[h];
      if (g < 0 || w->front[h]) continue;
      const int32_t u = g / 3;
      if (w->mark[u] == 2) {
        w->via[u] = g;
        reached = u;
      } else if (!w->mark[u]) {
        w->mark[u] = 3;
        w->via[u] = g;
        q[tail++] = u;
      }
    }
  }
  /* the smallest key among the path's edges with no end repeated in the
   * polygon (a cut there leaves no other pinch at its ends), else among
   * all of them */
  int32_t best[2] = {-1, -1};
  if (reached >= 0) {
    double bl[2] = {0, 0};
    int32_t bhi[2] = {0, 0}, blo[2] = {0, 0};
    for (int32_t t = (int32_t)reached; w->mark[t] != 1;) {
      const int32_t g = w->via[t]; /* half-edge of t on the path */
      double l;
      int32_t hi, lo;
      edge_key(w->he, w->x, g, &l, &hi, &lo);
      const int clean = w->twice[hi] != w->stamp && w->twice[lo] != w->stamp;
      for (int c = 0; c <= clean; c++)
        if (best[c] < 0 || l < bl[c] || (l == bl[c] && (hi < bhi[c] || (hi == bhi[c] && lo < blo[c]))))
          best[c] = g, bl[c] = l, bhi[c] = hi, blo[c] = lo;
      t = w->he->twin[g] / 3;
    }
  }
  for (int64_t k = 0; k < tail; k++) w->mark[q[k]] = 0;
  for (int64_t k = 0; k < nb; k++) w->mark[bq[k]] = 0;
  free(bq);
  return best[1] >= 0 ? best[1] : best[0];
}

/* The polygons of the frontier front (every cycle of successors, in
 * canonical order) into new arrays (owned by the caller). */
static mb_error traverse(const mb_halfedge *he, const uint8_t *front, int64_t *npoly,
                         int64_t **offsets, int64_t **indices, int64_t **heads) {
  const int32_t nh = 3 * he->nt;
  int64_t nfh = 0;
  for (int32_t h = 0; h < nh; h++) nfh += front[h] != 0;
  uint8_t *done = calloc((size_t)nh, 1);
  *offsets = malloc(sizeof **offsets * (size_t)(nfh + 1));
  *indices = malloc(sizeof **indices * (size_t)(nfh ? nfh : 1));
  *heads = malloc(sizeof **heads * (size_t)(nfh ? nfh : 1));
  if (!done || !*offsets || !*indices || !*heads) {
    free(done);
    free(*offsets);
    free(*indices);
    free(*heads);
    *offsets = *indices = *heads = NULL;
    MB_FAIL(MB_ERR_MEMORY, "out of memory for %lld frontier half-edges", (long long)nfh);
  }
  int64_t p = 0, pos = 0;
  for (int32_t h = 0; h < nh; h++) {
    if (!front[h] || done[h]) continue;
    (*heads)[p] = h;
    (*offsets)[p++] = pos;
    int32_t s = h;
    do {
      done[s] = 1;
      (*indices)[pos++] = he->vert[s];
      int32_t n = mb_he_next(s);
      while (!front[n]) n = mb_he_next(he->twin[n]);
      s = n;
    } while (s != h && pos < nfh);
  }
  (*offsets)[p] = pos;
  *npoly = p;
  free(done);
  return MB_SUCCESS;
}

mb_error mb_polylla_merge(const int64_t *fo, const int64_t *fi, const int64_t *hd, int64_t nf,
                          const int64_t *drop, int64_t ndrop, const mb_polylla_piece *pc,
                          int64_t np, const int64_t *pidx, int64_t **o2, int64_t **i2,
                          int64_t **h2, double **counts) {
  *o2 = *i2 = NULL;
  if (h2) *h2 = NULL;
  if (counts) *counts = NULL;
  int64_t gone = 0, added = 0; /* the dropped polygons' indices, the pieces' */
  for (int64_t k = 0; k < ndrop; k++) gone += fo[drop[k] + 1] - fo[drop[k]];
  for (int64_t j = 0; j < np; j++) added += pc[j].n;
  const int64_t nf2 = nf - ndrop + np, nidx2 = fo[nf] - gone + added;
  /* the plan: runs of kept polygons and the pieces between them, each with
   * its place in the output (one serial pass; the dropped polygons and the
   * pieces cut the kept ones into ndrop + np + 1 runs at most, so ndrop + 2
   * np + 1 segments); then the copies on OpenMP threads, the runs cut
   * into chunks, into arrays not cleared first (every entry is written)
   * and advised for huge pages (mb_alloc): at 25 M points (33 M polygon
   * indices) the serial copy into cleared arrays was a fifth of the CUDA
   * backend's whole call */
  typedef struct {
    int64_t p, n, q, x; /* old polygons [p, p + n) (n < 0: piece -n - 1) at new polygon q, slot x */
  } seg;
  seg *plan = malloc(sizeof *plan * (size_t)(ndrop + 2 * np + 2));
  int64_t *first = NULL;
  int64_t *hh = h2 ? mb_alloc(sizeof *hh * (size_t)(nf2 ? nf2 : 1)) : NULL;
  double *cnt = counts ? mb_alloc(sizeof *cnt * (size_t)(nf2 ? nf2 : 1)) : NULL;
  int64_t *of = mb_alloc(sizeof *of * (size_t)(nf2 + 1));
  int64_t *ix = mb_alloc(sizeof *ix * (size_t)(nidx2 ? nidx2 : 1));
  mb_error e = MB_SUCCESS;
  if (!plan || (h2 && !hh) || (counts && !cnt) || !of || !ix) {
    e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                     "out of memory for %lld polygons", (long long)nf2);
    goto done;
  }
  int64_t p = 0, j = 0, k = 0, q = 0, x = 0, ns = 0; /* old polygon, piece, dropped, new, slot */
  while (p < nf || j < np) {
    /* where the piece j goes: before the first old polygon of larger head */
    const int64_t at = j < np ? p + mb_polylla_lower(hd + p, nf - p, pc[j].head) : nf;
    int64_t end = at < nf ? at : nf;
    if (k < ndrop && drop[k] < end) end = drop[k];
    if (end > p) { /* a run of kept polygons, old [p, end) */
      plan[ns++] = (seg){p, end - p, q, x};
      x += fo[end] - fo[p];
      q += end - p;
      p = end;
    } else if (j < np && at == p) { /* the piece */
      plan[ns++] = (seg){0, -j - 1, q++, x};
      x += pc[j].n;
      j++;
    } else { /* the dropped polygon p goes */
      p++;
      k++;
    }
  }
  if (q != nf2 || x != nidx2) {
    e = mb_error_set(MB_ERR_NUMERIC, __FILE__, __LINE__, __func__,
                     "internal error: a merge by head made %lld polygons of %lld", (long long)q,
                     (long long)nf2);
    goto done;
  }
  of[q] = x;
  enum { CHUNK = 1 << 16 }; /* polygons a task */
  /* the segments' first tasks (first[t]: tasks before segment t), so that
   * a task finds its segment by bisection however many pieces there are */
  first = malloc(sizeof *first * (size_t)(ns + 1));
  if (!first) {
    e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                     "out of memory for %lld polygons", (long long)nf2);
    goto done;
  }
  first[0] = 0;
  for (int64_t t = 0; t < ns; t++)
    first[t + 1] = first[t] + (plan[t].n < 0 ? 1 : (plan[t].n + CHUNK - 1) / CHUNK);
  const int64_t ntask = first[ns];
#pragma omp parallel for schedule(dynamic, 1) if (ntask > 1)
  for (int64_t task = 0; task < ntask; task++) {
    const int64_t t = mb_polylla_lower(first + 1, ns, task + 1), c = task - first[t];
    const seg g = plan[t];
    if (g.n < 0) {
      const mb_polylla_piece *pj = &pc[-g.n - 1];
      of[g.q] = g.x;
      if (hh) hh[g.q] = pj->head;
      memcpy(ix + g.x, pidx + pj->at, sizeof *ix * (size_t)pj->n);
      continue;
    }
    const int64_t b = c * CHUNK, m = g.n - b < CHUNK ? g.n - b : CHUNK, shift = g.x - fo[g.p];
    for (int64_t i = b; i < b + m; i++) of[g.q + i] = fo[g.p + i] + shift;
    if (hh) memcpy(hh + g.q + b, hd + g.p + b, sizeof *hh * (size_t)m);
    memcpy(ix + fo[g.p + b] + shift, fi + fo[g.p + b],
           sizeof *ix * (size_t)(fo[g.p + b + m] - fo[g.p + b]));
  }
  if (cnt) {
#pragma omp parallel for schedule(static) if (nf2 > 65536)
    for (int64_t i = 0; i < nf2; i++) cnt[i] = (double)(of[i + 1] - of[i]);
  }
  *o2 = of;
  *i2 = ix;
  if (h2) *h2 = hh;
  if (counts) *counts = cnt;
  of = ix = hh = NULL;
  cnt = NULL;
done:
  free(plan);
  free(first);
  free(of);
  free(ix);
  free(hh);
  free(cnt);
  return e;
}

/* Merge the repaired pieces into poly (mb_polylla_merge): the pinched
 * polygons pin[npin] (increasing) go, the pieces (np of them: offsets
 * poff [np + 1], vertex indices pidx in poly's numbering, heads ph
 * increasing) go where their heads fall, so the result is in canonical
 * order (mb_polylla.h). *poly and *heads are replaced (attributes
 * polygons, frontier_edges + nsplit, pinches_split; vertex_count; the
 * positions move over). On error both are kept. */
static mb_error merge_output(mb_mesh **poly, int64_t **heads, const int64_t *pin, int64_t npin,
                             int64_t np, const int64_t *poff, const int64_t *pidx,
                             const int64_t *ph, int64_t nsplit) {
  const mb_mesh *old = *poly;
  const int64_t nf2 = old->nf - npin + np;
  mb_polylla_piece *pc = malloc(sizeof *pc * (size_t)(np ? np : 1));
  int64_t *o2 = NULL, *i2 = NULL, *h2 = NULL;
  double *counts = NULL;
  mb_mesh *out = NULL;
  mb_error e = pc ? MB_SUCCESS
                  : mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                                 "out of memory for %lld polygons", (long long)np);
  for (int64_t j = 0; !e && j < np; j++) pc[j] = (mb_polylla_piece){ph[j], poff[j], poff[j + 1] - poff[j]};
  if (!e)
    e = mb_polylla_merge(old->face_offsets, old->face_indices, *heads, old->nf, pin, npin, pc, np,
                         pidx, &o2, &i2, &h2, &counts);
  free(pc);
  if (!e) e = mb_mesh_create(old->name, 0, 0, 0, &out);
  if (!e) {
    out->kind = old->kind;
    out->index = old->index;
    out->nf = nf2;
    free(out->face_offsets);
    free(out->face_indices);
    out->face_offsets = o2;
    out->face_indices = i2;
    o2 = i2 = NULL;
    e = mb_mesh_take_face_field(out, "vertex_count", 1, counts);
    counts = NULL;
  }
  free(o2);
  free(i2);
  const char *tips = mb_attrs_get(&old->attrs, "barrier_edge_tips");
  const char *rep = mb_attrs_get(&old->attrs, "polygons_repaired");
  long long nfe = 0;
  if (!e) {
    const char *f = mb_attrs_get(&old->attrs, "frontier_edges");
    nfe = (f ? strtoll(f, NULL, 10) : 0) + nsplit;
    e = mb_attrs_setf(&out->attrs, "polygons", "%lld", (long long)nf2);
  }
  if (!e) e = mb_attrs_setf(&out->attrs, "frontier_edges", "%lld", nfe);
  if (!e) e = mb_attrs_setf(&out->attrs, "barrier_edge_tips", "%s", tips ? tips : "0");
  if (!e) e = mb_attrs_setf(&out->attrs, "polygons_repaired", "%s", rep ? rep : "0");
  if (!e) e = mb_attrs_setf(&out->attrs, "pinches_split", "%lld", (long long)nsplit);
  free(counts);
  if (e) {
    free(h2);
    mb_mesh_free(out);
    MB_CALL(e);
  }
  /* the positions move (not copied) from the old mesh, which goes: an
   * output that shares its input's positions (mb_polylla_opts.share_xyz)
   * keeps sharing them */
  out->nv = (*poly)->nv;
  free(out->xyz);
  out->xyz = (*poly)->xyz;
  (*poly)->xyz = NULL;
  mb_mesh_free(*poly);
  *poly = out;
  free(*heads);
  *heads = h2;
  return MB_SUCCESS;
}

mb_error mb_polylla_ids_positions(const mb_mesh *tri, const mb_polylla_ids *ids, mb_mesh **local) {
  const int64_t nv = tri->nv, nl = nv + ids->nghost, nb = mb_polylla_ids_below(ids);
  MB_CALL(mb_mesh_create(tri->name ? tri->name : "", nl, 0, 0, local));
  mb_mesh *m = *local;
  m->kind = tri->kind;
  m->index = tri->index;
#pragma omp parallel for schedule(static)
  for (int64_t l = 0; l < nl; l++)
    memcpy(m->xyz + 3 * l, mb_polylla_ids_xyz(ids, nb, nv, tri->xyz, l), 3 * sizeof(double));
  return MB_SUCCESS;
}

mb_error mb_polylla_ids_faces(mb_mesh *tri, const mb_polylla_ids *ids, const int32_t *corners) {
  if (tri->face_indices) return MB_SUCCESS;
  const int64_t nf = tri->nf, nb = mb_polylla_ids_below(ids);
  int64_t *fo = malloc(sizeof *fo * ((size_t)nf + 1));
  int64_t *fi = malloc(sizeof *fi * (3 * (size_t)nf + 1));
  if (!fo || !fi) {
    free(fo);
    free(fi);
    MB_FAIL(MB_ERR_MEMORY, "out of memory giving mesh '%s' its %lld triangles back",
            tri->name ? tri->name : "", (long long)nf);
  }
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < 3 * nf; k++) fi[k] = mb_polylla_ids_global(ids, nb, tri->nv, corners[k]);
  for (int64_t f = 0; f <= nf; f++) fo[f] = 3 * f;
  free(tri->face_offsets);
  tri->face_offsets = fo;
  tri->face_indices = fi;
  return MB_SUCCESS;
}

void mb_polylla_ids_apply(mb_mesh *poly, const mb_polylla_ids *ids, int64_t nv, int to_ids) {
  const int64_t nb = mb_polylla_ids_below(ids), n = poly->face_offsets[poly->nf];
  int64_t *fi = poly->face_indices;
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < n; k++)
    fi[k] = to_ids ? mb_polylla_ids_global(ids, nb, nv, fi[k]) : mb_polylla_ids_local(ids, nb, nv, fi[k]);
}

/* Where the repair reads tri: its corners and positions in one numbering
 * (tri's own vertices, or the local numbering of mb_polylla_ids), and the
 * output's numbering (tri's vertices, or the ids). */
typedef struct pinch_src {
  const mb_mesh *tri;
  const mb_polylla_ids *ids;
  int64_t nb; /* ids: the ghosts below the rows */
  int64_t nl; /* vertices of the numbering */
} pinch_src;

static inline int64_t src_corner(const pinch_src *c, int64_t k) {
  if (!c->ids) return c->tri->face_indices[k];
  if (c->ids->corners) return c->ids->corners[k];
  return mb_polylla_ids_local(c->ids, c->nb, c->tri->nv, c->tri->face_indices[k]);
}

static inline int64_t src_local(const pinch_src *c, int64_t g) {
  return c->ids ? mb_polylla_ids_local(c->ids, c->nb, c->tri->nv, g) : g;
}

static inline int64_t src_output(const pinch_src *c, int64_t l) {
  return c->ids ? mb_polylla_ids_global(c->ids, c->nb, c->tri->nv, l) : l;
}

static inline const double *src_xyz(const pinch_src *c, int64_t l) {
  return c->ids ? mb_polylla_ids_xyz(c->ids, c->nb, c->tri->nv, c->tri->xyz, l)
                : c->tri->xyz + 3 * l;
}

/* The triangles of the pinched polygons: every triangle of tri whose three
 * corners are vertices of a pinched polygon (a region is a tree of
 * triangles, so it has no interior vertex: its triangles are among these),
 * in increasing index, into *cand (new) and *ncand. in: a bit per vertex
 * of the numbering. One pass over the corners on OpenMP threads. */
static mb_error pinch_triangles(const pinch_src *c, const uint64_t *in, int64_t **cand,
                                int64_t *ncand) {
  const int64_t nt = c->tri->nf;
  int nomem = 0;
  int64_t *all = NULL, nall = 0, call = 0;
#pragma omp parallel reduction(| : nomem)
  {
    int64_t *mine = NULL, nmine = 0, cmine = 0;
#pragma omp for schedule(static) nowait
    for (int64_t t = 0; t < nt; t++) {
      int k = 0;
      for (; k < 3; k++) {
        const int64_t v = src_corner(c, 3 * t + k);
        if (v < 0 || !(in[v >> 6] >> (v & 63) & 1)) break;
      }
      if (k == 3 && !nomem && !list_append(&mine, &nmine, &cmine, &t, 1)) nomem = 1;
    }
#pragma omp critical(mb_polylla_pinch_triangles)
    if (nmine && !nomem && !list_append(&all, &nall, &call, mine, nmine)) nomem = 1;
    free(mine);
  }
  if (nomem) free(all);
  MB_CHECK(!nomem, MB_ERR_MEMORY, "out of memory for the triangles of the pinched polygons");
  if (nall > 1) qsort(all, (size_t)nall, sizeof *all, cmp_i64);
  *cand = all;
  *ncand = nall;
  return MB_SUCCESS;
}

/* The repair, local to the pinched polygons (mb_polylla.h, "Pinch
 * repair"). The rule reads only the polygons' lists, the edge keys and the
 * triangles of each pinched polygon, so it runs on the submesh of those
 * triangles: its vertices numbered in increasing order (the keys' order
 * kept), its triangles in increasing index (so half-edge 3 s + k of the
 * submesh is half-edge 3 cand[s] + k of tri, and the canonical order is
 * kept); the pieces are then merged into the output by their heads. The
 * whole mesh is only scanned: its polygons for a repeated vertex, its
 * corners for the pinched polygons' triangles, and, where there are
 * pinches, its polygons copied once into the merged output. */
void mb_polylla_trace(double *mark, const char *who, const char *what) {
  static int on = -1;
  if (on < 0) on = getenv("MB_POLYLLA_TRACE") != NULL;
  if (!on) return;
  const double now = mb_wtime();
  if (what && *mark > 0) fprintf(stderr, "%s: %s %.2f ms\n", who, what, 1e3 * (now - *mark));
  *mark = now;
}

static void pinch_trace(double *t, const char *what) { mb_polylla_trace(t, "pinch repair", what); }

mb_error mb_polylla_pinch_pieces(const mb_mesh *tri, const mb_polylla_ids *ids, int64_t npin,
                                 const int64_t *pin, const int64_t *pin_off,
                                 const int64_t *pin_idx, mb_polylla_corners_fn corners,
                                 void *corners_ctx, mb_polylla_pieces *out) {
  *out = (mb_polylla_pieces){0};
  const char *name = tri->name ? tri->name : "";
  mb_error e = MB_SUCCESS;
  pinch_src src = {tri, ids, ids ? mb_polylla_ids_below(ids) : 0,
                   tri->nv + (ids ? ids->nghost : 0)};
  mb_halfedge he = {0};
  pinch_work w = {0};
  mb_mesh *sub = NULL;
  uint64_t *in = NULL;
  int32_t *outgoing = NULL;
  int64_t *cand = NULL;
  int64_t *sv = NULL, *off = NULL, *idx = NULL, *hd = NULL, *seen = NULL, *pos = NULL;
  int64_t *start = NULL, *pidx = NULL, *ph = NULL;
  int64_t nsplit = 0, npoly = 0, nsv = 0, ncand = 0;
  double clock = 0;
  pinch_trace(&clock, NULL);

  /* the pinched polygons' vertices, sorted */
  const int64_t nlist = pin_off[npin];
  sv = malloc(sizeof *sv * (size_t)(nlist ? nlist : 1));
  in = calloc((size_t)(src.nl + 63) / 64, sizeof *in);
  MB_CHECK_GOTO(e, done, sv && in, MB_ERR_MEMORY, "out of memory for the pinch repair of mesh '%s'",
                name);
  for (int64_t i = 0; i < nlist; i++) {
    const int64_t v = pin_idx[i];
    if (!(in[v >> 6] >> (v & 63) & 1)) sv[nsv++] = v;
    in[v >> 6] |= (uint64_t)1 << (v & 63);
  }
  qsort(sv, (size_t)nsv, sizeof *sv, cmp_i64);
  pinch_trace(&clock, "the pinched polygons' vertices");
  e = corners ? corners(corners_ctx, in, (src.nl + 63) / 64, &cand, &ncand) : MB_ERR_UNSUPPORTED;
  if (e == MB_ERR_UNSUPPORTED) {
    mb_error_clear();
    e = pinch_triangles(&src, in, &cand, &ncand);
  }
  MB_CALL_GOTO(e, done, e);
  pinch_trace(&clock, "the corners scanned");
  MB_CHECK_GOTO(e, done, ncand > 0, MB_ERR_NUMERIC,
                "mesh '%s': polygon %lld is made of no triangle (internal error)", name,
                (long long)pin[0]);
  free(in);
  in = NULL;

  /* the submesh: its vertices' positions, its triangles in sub numbers */
  MB_CALL_GOTO(e, done, mb_mesh_create(name, nsv, ncand, 3 * ncand, &sub));
  sub->kind = tri->kind;
  for (int64_t f = 0; f <= ncand; f++) sub->face_offsets[f] = 3 * f;
  for (int64_t v = 0; v < nsv; v++)
    memcpy(sub->xyz + 3 * v, src_xyz(&src, sv[v]), 3 * sizeof(double));
  for (int64_t s = 0; s < ncand; s++)
    for (int k = 0; k < 3; k++)
      sub->face_indices[3 * s + k] = mb_polylla_lower(sv, nsv, src_corner(&src, 3 * cand[s] + k));
  MB_CALL_GOTO(e, done, mb_halfedge_build(sub, &he));
  const int32_t nt = he.nt, nh = 3 * nt, nv = he.nv;
  w.he = &he;
  w.x = sub->xyz;
  w.front = calloc((size_t)nh, 1);
  w.mark = calloc((size_t)nt, sizeof *w.mark);
  w.via = malloc(sizeof *w.via * (size_t)nt);
  w.queue = malloc(sizeof *w.queue * (size_t)nt);
  seen = calloc((size_t)nv + 1, sizeof *seen);
  w.twice = calloc((size_t)nv + 1, sizeof *w.twice);
  pos = malloc(sizeof *pos * ((size_t)nv + 1));
  start = calloc((size_t)nv + 2, sizeof *start);
  outgoing = malloc(sizeof *outgoing * (size_t)nh);
  off = malloc(sizeof *off * ((size_t)npin + 1));
  idx = malloc(sizeof *idx * (size_t)(nlist ? nlist : 1));
  MB_CHECK_GOTO(e, done,
                w.front && w.mark && w.via && w.queue && w.twice && seen && pos && start &&
                    outgoing && off && idx,
                MB_ERR_MEMORY, "out of memory for the pinch repair of mesh '%s'", name);
  /* the pinched polygons in sub numbers: the first round's list */
  npoly = npin;
  for (int64_t k = 0; k <= npin; k++) off[k] = pin_off[k];
  for (int64_t i = 0; i < nlist; i++) idx[i] = mb_polylla_lower(sv, nsv, pin_idx[i]);
  /* half-edges by origin (CSR), to find the half-edge of a polygon edge */
  for (int32_t h = 0; h < nh; h++) start[he.vert[h] + 2]++;
  for (int32_t v = 0; v < nv; v++) start[v + 2] += start[v + 1];
  for (int32_t h = 0; h < nh; h++) outgoing[start[he.vert[h] + 1]++] = h;
  /* start[v] .. start[v + 1]: the half-edges leaving v */
  for (int64_t p = 0; p < npoly; p++) {
    const int64_t o = off[p], n = off[p + 1] - o;
    for (int64_t k = 0; k < n; k++) {
      const int64_t a = idx[o + k], b = idx[o + (k + 1) % n];
      int32_t h = -1;
      for (int64_t q = start[a]; q < start[a + 1] && h < 0; q++)
        if (he.vert[mb_he_next(outgoing[q])] == b) h = outgoing[q];
      MB_CHECK_GOTO(e, done, h >= 0, MB_ERR_NUMERIC,
                    "mesh '%s': polygon %lld has an edge (%lld, %lld) that is no half-edge "
                    "(internal error)", name, (long long)pin[p],
                    (long long)src_output(&src, sv[a]), (long long)src_output(&src, sv[b]));
      w.front[h] = 1;
    }
  }
  /* rounds: cut every pinched polygon once, traverse its pieces again */
  int64_t stamp = 0;
  for (;;) {
    int64_t cuts = 0;
    for (int64_t p = 0; p < npoly; p++) {
      const int64_t o = off[p], n = off[p + 1] - o;
      int64_t i;
      const int64_t j = first_repeat(idx + o, n, seen, pos, ++stamp, &i);
      if (j < 0) continue;
      /* every vertex the polygon lists twice or more (a fresh stamp) */
      w.stamp = ++stamp;
      for (int64_t k = 0; k < n; k++) {
        const int64_t v = idx[o + k];
        if (seen[v] == stamp) w.twice[v] = stamp;
        seen[v] = stamp;
      }
      /* the half-edges leaving the vertex at visits i and j */
      int32_t hv[2] = {-1, -1};
      for (int side = 0; side < 2; side++) {
        const int64_t k = side ? j : i;
        const int64_t a = idx[o + k], b = idx[o + (k + 1) % n];
        for (int64_t q = start[a]; q < start[a + 1] && hv[side] < 0; q++)
          if (he.vert[mb_he_next(outgoing[q])] == b && w.front[outgoing[q]]) hv[side] = outgoing[q];
      }
      const int32_t c = hv[0] >= 0 && hv[1] >= 0 ? pinch_cut(&w, hv[0], hv[1]) : -1;
      MB_CHECK_GOTO(e, done, c != -2, MB_ERR_MEMORY, "out of memory for the pinch repair");
      MB_CHECK_GOTO(e, done, c >= 0 && he.twin[c] >= 0, MB_ERR_NUMERIC,
                    "mesh '%s': a polygon touches itself at vertex %lld but no cut separates "
                    "the two sides (internal error)", name,
                    (long long)src_output(&src, sv[idx[o + i]]));
      w.front[c] = w.front[he.twin[c]] = 1;
      cuts++;
    }
    if (!cuts) break;
    nsplit += cuts;
    free(off);
    free(idx);
    free(hd);
    off = idx = hd = NULL;
    MB_CALL_GOTO(e, done, traverse(&he, w.front, &npoly, &off, &idx, &hd));
  }
  MB_CHECK_GOTO(e, done, nsplit > 0, MB_ERR_NUMERIC,
                "mesh '%s': polygon %lld lists a vertex twice but was not cut (internal error)",
                name, (long long)pin[0]);
  /* the pieces in tri's corner numbering, their heads tri's half-edges */
  pidx = malloc(sizeof *pidx * (size_t)(off[npoly] ? off[npoly] : 1));
  ph = malloc(sizeof *ph * (size_t)(npoly ? npoly : 1));
  MB_CHECK_GOTO(e, done, pidx && ph, MB_ERR_MEMORY, "out of memory for the pinch repair");
  for (int64_t k = 0; k < off[npoly]; k++) pidx[k] = sv[idx[k]];
  for (int64_t p = 0; p < npoly; p++) ph[p] = 3 * cand[hd[p] / 3] + hd[p] % 3;
  *out = (mb_polylla_pieces){npoly, nsplit, off, pidx, ph};
  off = pidx = ph = NULL;
  pinch_trace(&clock, "the submesh cut and traversed");
done:
  mb_halfedge_free(&he);
  mb_mesh_free(sub);
  free(w.front);
  free(w.mark);
  free(w.via);
  free(w.queue);
  free(w.twice);
  free(in);
  free(cand);
  free(sv);
  free(off);
  free(idx);
  free(hd);
  free(pidx);
  free(ph);
  free(seen);
  free(pos);
  free(start);
  free(outgoing);
  return e;
}

void mb_polylla_pieces_free(mb_polylla_pieces *pc) {
  free(pc->off);
  free(pc->idx);
  free(pc->heads);
  *pc = (mb_polylla_pieces){0};
}

mb_error mb_polylla_split_pinches(const mb_mesh *tri, const mb_polylla_ids *ids, mb_mesh **poly,
                                  int64_t **heads, mb_polylla_stats *stats) {
  int64_t *pin = NULL, npin = 0;
  double clock = 0;
  pinch_trace(&clock, NULL);
  MB_CALL(find_pinched(*poly, &pin, &npin));
  pinch_trace(&clock, "the polygons scanned");
  if (!npin) {
    if (stats) stats->pinches_split = 0;
    MB_CALL(mb_attrs_setf(&(*poly)->attrs, "pinches_split", "0"));
    return MB_SUCCESS;
  }
  const char *name = tri->name ? tri->name : "";
  mb_error e = MB_SUCCESS;
  const pinch_src src = {tri, ids, ids ? mb_polylla_ids_below(ids) : 0,
                         tri->nv + (ids ? ids->nghost : 0)};
  const mb_mesh *p0 = *poly;
  int64_t *pin_off = NULL, *pin_idx = NULL;
  mb_polylla_pieces pc = {0};
  MB_CHECK_GOTO(e, done, heads && *heads, MB_ERR_ARG,
                "mesh '%s': the pinch repair needs the polygons' heads (internal error)", name);
  pinch_trace(&clock, "the heads");
  /* the pinched polygons' lists in the numbering of tri's corners */
  pin_off = malloc(sizeof *pin_off * (size_t)(npin + 1));
  MB_CHECK_GOTO(e, done, pin_off, MB_ERR_MEMORY, "out of memory for the pinch repair of mesh '%s'",
                name);
  pin_off[0] = 0;
  for (int64_t k = 0; k < npin; k++)
    pin_off[k + 1] = pin_off[k] + p0->face_offsets[pin[k] + 1] - p0->face_offsets[pin[k]];
  pin_idx = malloc(sizeof *pin_idx * (size_t)(pin_off[npin] ? pin_off[npin] : 1));
  MB_CHECK_GOTO(e, done, pin_idx, MB_ERR_MEMORY, "out of memory for the pinch repair of mesh '%s'",
                name);
  for (int64_t k = 0; k < npin; k++)
    for (int64_t i = p0->face_offsets[pin[k]], x = pin_off[k]; i < p0->face_offsets[pin[k] + 1];
         i++) {
      const int64_t v = src_local(&src, p0->face_indices[i]);
      MB_CHECK_GOTO(e, done, v >= 0 && v < src.nl, MB_ERR_NUMERIC,
                    "mesh '%s': polygon %lld lists vertex %lld, not one of the triangulation's "
                    "(internal error)", name, (long long)pin[k], (long long)p0->face_indices[i]);
      pin_idx[x++] = v;
    }
  MB_CALL_GOTO(e, done,
               mb_polylla_pinch_pieces(tri, ids, npin, pin, pin_off, pin_idx, NULL, NULL, &pc));
  /* the pieces in the output's numbering */
  for (int64_t k = 0; k < pc.off[pc.n]; k++) pc.idx[k] = src_output(&src, pc.idx[k]);
  MB_CALL_GOTO(e, done,
               merge_output(poly, heads, pin, npin, pc.n, pc.off, pc.idx, pc.heads, pc.nsplit));
  pinch_trace(&clock, "the merge");
  if (stats) {
    stats->pinches_split = pc.nsplit;
    stats->polygons = (*poly)->nf;
    stats->frontier_edges += pc.nsplit;
  }
done:
  mb_polylla_pieces_free(&pc);
  free(pin);
  free(pin_off);
  free(pin_idx);
  return e;
}
