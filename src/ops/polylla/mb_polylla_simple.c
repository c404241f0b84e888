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
 * repeated vertex costs O(polygon indices + vertices) and, where it finds
 * one, the frontier is rebuilt from the polygons, the cuts added and the
 * polygons traversed again (O(half-edges) per round, usually one round).
 * Being one host code, it gives the same bits after the CPU and the CUDA
 * backends.
 */
#include <stdlib.h>
#include <string.h>

#include "mb_halfedge.h"
#include "mb_polylla.h"

static int cmp_i64(const void *a, const void *b) {
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
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

/* Whether the list idx[0..n) holds a vertex twice: pairwise for short
 * lists (no scratch), else a sorted copy in *buf (grown as needed; -1 when
 * out of memory). */
static int has_repeat(const int64_t *idx, int64_t n, int64_t **buf, int64_t *cap) {
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

/* Whether any polygon of poly lists a vertex twice: one pass over the
 * polygons on OpenMP threads (the answer does not depend on their number),
 * with no array per vertex. */
static mb_error any_pinch(const mb_mesh *poly, int *found) {
  int any = 0, nomem = 0;
  const int64_t nf = poly->nf;
  const int64_t *fo = poly->face_offsets, *fi = poly->face_indices;
#pragma omp parallel reduction(| : any, nomem)
  {
    int64_t *buf = NULL, cap = 0;
#pragma omp for schedule(static)
    for (int64_t p = 0; p < nf; p++) {
      if (any || nomem) continue; /* this thread's answer is known */
      const int r = has_repeat(fi + fo[p], fo[p + 1] - fo[p], &buf, &cap);
      if (r < 0) nomem = 1;
      else any |= r;
    }
    free(buf);
  }
  MB_CHECK(!nomem, MB_ERR_MEMORY, "out of memory for the simple-polygon check (%lld polygons)",
           (long long)nf);
  *found = any;
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

/* The output mesh of the repaired polygons, in poly's place. */
static mb_error replace_output(mb_mesh **poly, int64_t npoly, const int64_t *offsets,
                               const int64_t *indices, int64_t nsplit) {
  const mb_mesh *old = *poly;
  mb_mesh *out = NULL;
  double *counts = malloc(sizeof *counts * (size_t)(npoly ? npoly : 1));
  MB_CHECK(counts, MB_ERR_MEMORY, "out of memory for %lld polygons", (long long)npoly);
  mb_error e = mb_mesh_create(old->name, old->nv, npoly, offsets[npoly], &out);
  if (!e) {
    out->kind = old->kind;
    out->index = old->index;
    memcpy(out->face_offsets, offsets, sizeof *offsets * (size_t)(npoly + 1));
    memcpy(out->face_indices, indices, sizeof *indices * (size_t)offsets[npoly]);
    for (int64_t p = 0; p < npoly; p++) counts[p] = (double)(offsets[p + 1] - offsets[p]);
    e = mb_mesh_set_face_field(out, "vertex_count", 1, counts);
  }
  const char *tips = mb_attrs_get(&old->attrs, "barrier_edge_tips");
  const char *rep = mb_attrs_get(&old->attrs, "polygons_repaired");
  long long nfe = 0;
  if (!e) {
    const char *f = mb_attrs_get(&old->attrs, "frontier_edges");
    nfe = (f ? strtoll(f, NULL, 10) : 0) + nsplit;
    e = mb_attrs_setf(&out->attrs, "polygons", "%lld", (long long)npoly);
  }
  if (!e) e = mb_attrs_setf(&out->attrs, "frontier_edges", "%lld", nfe);
  if (!e) e = mb_attrs_setf(&out->attrs, "barrier_edge_tips", "%s", tips ? tips : "0");
  if (!e) e = mb_attrs_setf(&out->attrs, "polygons_repaired", "%s", rep ? rep : "0");
  if (!e) e = mb_attrs_setf(&out->attrs, "pinches_split", "%lld", (long long)nsplit);
  free(counts);
  if (e) {
    mb_mesh_free(out);
    MB_CALL(e);
  }
  /* the positions move (not copied) from the old mesh, which goes: an
   * output that shares its input's positions (mb_polylla_opts.share_xyz)
   * keeps sharing them */
  free(out->xyz);
  out->xyz = (*poly)->xyz;
  (*poly)->xyz = NULL;
  mb_mesh_free(*poly);
  *poly = out;
  return MB_SUCCESS;
}

/* The local mesh of tri's rows and ghosts with nf faces of nidx slots
 * (their arrays zeroed; 0 and 0: none) and its positions filled. */
static mb_error ids_local(const mb_mesh *tri, const mb_polylla_ids *ids, int64_t nf, int64_t nidx,
                          mb_mesh **local) {
  const int64_t nv = tri->nv, nl = nv + ids->nghost, nb = mb_polylla_ids_below(ids);
  MB_CALL(mb_mesh_create(tri->name ? tri->name : "", nl, nf, nidx, local));
  mb_mesh *m = *local;
  m->kind = tri->kind;
  m->index = tri->index;
#pragma omp parallel for schedule(static)
  for (int64_t l = 0; l < nl; l++)
    memcpy(m->xyz + 3 * l, mb_polylla_ids_xyz(ids, nb, nv, tri->xyz, l), 3 * sizeof(double));
  return MB_SUCCESS;
}

mb_error mb_polylla_ids_positions(const mb_mesh *tri, const mb_polylla_ids *ids, mb_mesh **local) {
  return ids_local(tri, ids, 0, 0, local);
}

mb_error mb_polylla_ids_mesh(const mb_mesh *tri, const mb_polylla_ids *ids, mb_mesh **local) {
  MB_CALL(ids_local(tri, ids, tri->nf, 3 * tri->nf, local));
  mb_mesh *m = *local;
  const int64_t nv = tri->nv, nb = mb_polylla_ids_below(ids);
  if (ids->corners) { /* tri's faces as oriented, already local */
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < 3 * tri->nf; k++) m->face_indices[k] = ids->corners[k];
    for (int64_t f = 0; f <= tri->nf; f++) m->face_offsets[f] = 3 * f;
    return MB_SUCCESS;
  }
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < 3 * tri->nf; k++)
    m->face_indices[k] = mb_polylla_ids_local(ids, nb, nv, tri->face_indices[k]);
  for (int64_t f = 0; f <= tri->nf; f++) m->face_offsets[f] = tri->face_offsets[f];
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

mb_error mb_polylla_split_pinches(const mb_mesh *tri, const mb_polylla_ids *ids, mb_mesh **poly,
                                  int64_t **heads, mb_polylla_stats *stats) {
  int found = 0;
  MB_CALL(any_pinch(*poly, &found));
  if (!found) {
    if (stats) stats->pinches_split = 0;
    MB_CALL(mb_attrs_setf(&(*poly)->attrs, "pinches_split", "0"));
    return MB_SUCCESS;
  }
  if (ids) { /* ids to the local numbering, the cuts, back to ids */
    mb_mesh *local = NULL;
    MB_CALL(mb_polylla_ids_mesh(tri, ids, &local));
    mb_polylla_ids_apply(*poly, ids, tri->nv, 0);
    mb_error e = mb_polylla_split_pinches(local, NULL, poly, heads, stats);
    mb_polylla_ids_apply(*poly, ids, tri->nv, 1);
    mb_mesh_free(local);
    return e;
  }
  mb_error e = MB_SUCCESS;
  mb_halfedge he = {0};
  pinch_work w = {0};
  int64_t *off = NULL, *idx = NULL, *hd = NULL, *seen = NULL, *pos = NULL, *start = NULL;
  int32_t *outgoing = NULL;
  int64_t nsplit = 0, npoly = 0;
  MB_CALL_GOTO(e, done, mb_halfedge_build(tri, &he));
  const int32_t nt = he.nt, nh = 3 * nt, nv = he.nv;
  w.he = &he;
  w.x = tri->xyz;
  w.front = calloc((size_t)nh, 1);
  w.mark = calloc((size_t)nt, sizeof *w.mark);
  w.via = malloc(sizeof *w.via * (size_t)nt);
  w.queue = malloc(sizeof *w.queue * (size_t)nt);
  seen = calloc((size_t)nv + 1, sizeof *seen);
  w.twice = calloc((size_t)nv + 1, sizeof *w.twice);
  pos = malloc(sizeof *pos * ((size_t)nv + 1));
  start = calloc((size_t)nv + 2, sizeof *start);
  outgoing = malloc(sizeof *outgoing * (size_t)nh);
  MB_CHECK_GOTO(e, done,
                w.front && w.mark && w.via && w.queue && w.twice && seen && pos && start &&
                    outgoing,
                MB_ERR_MEMORY, "out of memory for the pinch repair of mesh '%s'",
                tri->name ? tri->name : "");
  /* half-edges by origin (CSR), to find the half-edge of a polygon edge */
  for (int32_t h = 0; h < nh; h++) start[he.vert[h] + 2]++;
  for (int32_t v = 0; v < nv; v++) start[v + 2] += start[v + 1];
  for (int32_t h = 0; h < nh; h++) outgoing[start[he.vert[h] + 1]++] = h;
  /* start[v] .. start[v + 1]: the half-edges leaving v */
  {
    const mb_mesh *p0 = *poly;
    for (int64_t p = 0; p < p0->nf; p++) {
      const int64_t o = p0->face_offsets[p], n = p0->face_offsets[p + 1] - o;
      for (int64_t k = 0; k < n; k++) {
        const int64_t a = p0->face_indices[o + k], b = p0->face_indices[o + (k + 1) % n];
        int32_t h = -1;
        for (int64_t q = start[a]; q < start[a + 1] && h < 0; q++)
          if (he.vert[mb_he_next(outgoing[q])] == b) h = outgoing[q];
        MB_CHECK_GOTO(e, done, h >= 0, MB_ERR_NUMERIC,
                      "mesh '%s': polygon %lld has an edge (%lld, %lld) that is no half-edge "
                      "(internal error)", tri->name ? tri->name : "", (long long)p,
                      (long long)a, (long long)b);
        w.front[h] = 1;
      }
    }
  }
  /* rounds: cut every pinched polygon once, traverse again */
  int64_t stamp = 0;
  for (const mb_mesh *cur = *poly;;) {
    const int64_t nf = off ? npoly : cur->nf;
    const int64_t *fo = off ? off : cur->face_offsets, *fi = off ? idx : cur->face_indices;
    int64_t cuts = 0;
    for (int64_t p = 0; p < nf; p++) {
      const int64_t o = fo[p], n = fo[p + 1] - o;
      int64_t i;
      const int64_t j = first_repeat(fi + o, n, seen, pos, ++stamp, &i);
      if (j < 0) continue;
      /* every vertex the polygon lists twice or more (a fresh stamp) */
      w.stamp = ++stamp;
      for (int64_t k = 0; k < n; k++) {
        const int64_t v = fi[o + k];
        if (seen[v] == stamp) w.twice[v] = stamp;
        seen[v] = stamp;
      }
      /* the half-edges leaving the vertex at visits i and j */
      int32_t hv[2] = {-1, -1};
      for (int side = 0; side < 2; side++) {
        const int64_t k = side ? j : i;
        const int64_t a = fi[o + k], b = fi[o + (k + 1) % n];
        for (int64_t q = start[a]; q < start[a + 1] && hv[side] < 0; q++)
          if (he.vert[mb_he_next(outgoing[q])] == b && w.front[outgoing[q]]) hv[side] = outgoing[q];
      }
      const int32_t c = hv[0] >= 0 && hv[1] >= 0 ? pinch_cut(&w, hv[0], hv[1]) : -1;
      MB_CHECK_GOTO(e, done, c != -2, MB_ERR_MEMORY, "out of memory for the pinch repair");
      MB_CHECK_GOTO(e, done, c >= 0 && he.twin[c] >= 0, MB_ERR_NUMERIC,
                    "mesh '%s': polygon %lld touches itself at vertex %lld but no cut separates "
                    "the two sides (internal error)", tri->name ? tri->name : "", (long long)p,
                    (long long)fi[o + i]);
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
  MB_CALL_GOTO(e, done, replace_output(poly, npoly, off, idx, nsplit));
  if (heads && *heads) {
    free(*heads);
    *heads = hd;
    hd = NULL;
  }
  if (stats) {
    stats->pinches_split = nsplit;
    stats->polygons = npoly;
    stats->frontier_edges += nsplit;
  }
done:
  mb_halfedge_free(&he);
  free(w.front);
  free(w.mark);
  free(w.via);
  free(w.queue);
  free(w.twice);
  free(off);
  free(idx);
  free(hd);
  free(seen);
  free(pos);
  free(start);
  free(outgoing);
  return e;
}
