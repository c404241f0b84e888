/* meshbatch tests: independent checker of Polylla outputs (see polylla_check.h). */
#include "polylla_check.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_testutil.h"

typedef struct {
  int64_t a, b, h;
} dedge;

static int cmp_dedge(const void *x, const void *y) {
  const dedge *p = x, *q = y;
  if (p->a != q->a) return p->a < q->a ? -1 : 1;
  if (p->b != q->b) return p->b < q->b ? -1 : 1;
  return (p->h > q->h) - (p->h < q->h);
}

static int64_t find_dedge(const dedge *tab, int64_t n, int64_t a, int64_t b) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (tab[mid].a < a || (tab[mid].a == a && tab[mid].b < b))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && tab[lo].a == a && tab[lo].b == b ? tab[lo].h : -1;
}

static int64_t uf_find(int64_t *parent, int64_t i) {
  while (parent[i] != i) {
    parent[i] = parent[parent[i]];
    i = parent[i];
  }
  return i;
}

/* Lexicographically smallest rotation of v[0..n-1] into out. */
static void min_rotation(const int64_t *v, int64_t n, int64_t *out) {
  int64_t best = 0;
  for (int64_t s = 1; s < n; s++) {
    for (int64_t i = 0; i < n; i++) {
      int64_t x = v[(s + i) % n], y = v[(best + i) % n];
      if (x != y) {
        if (x < y) best = s;
        break;
      }
    }
  }
  for (int64_t i = 0; i < n; i++) out[i] = v[(best + i) % n];
}

typedef struct {
  const int64_t *v;
  int64_t n;
} seq;

static int cmp_seq(const void *x, const void *y) {
  const seq *p = x, *q = y;
  int64_t n = p->n < q->n ? p->n : q->n;
  for (int64_t i = 0; i < n; i++)
    if (p->v[i] != q->v[i]) return p->v[i] < q->v[i] ? -1 : 1;
  return (p->n > q->n) - (p->n < q->n);
}

/* All polygons normalised by rotation, in one array; seqs sorted. */
static seq *normalised_sorted(const mb_mesh *poly, int64_t **store) {
  int64_t nf = poly->nf;
  int64_t *buf = malloc(sizeof *buf * (size_t)(poly->face_offsets[nf] + 1));
  seq *s = malloc(sizeof *s * (size_t)(nf + 1));
  for (int64_t p = 0; p < nf; p++) {
    int64_t o = poly->face_offsets[p], n = poly->face_offsets[p + 1] - o;
    min_rotation(poly->face_indices + o, n, buf + o);
    s[p].v = buf + o;
    s[p].n = n;
  }
  qsort(s, (size_t)nf, sizeof *s, cmp_seq);
  *store = buf;
  return s;
}

uint64_t polylla_set_hash(const mb_mesh *poly) {
  int64_t *store;
  seq *s = normalised_sorted(poly, &store);
  uint64_t h = 1469598103934665603ull;
  char num[32];
  for (int64_t p = 0; p < poly->nf; p++) {
    for (int64_t i = 0; i < s[p].n; i++) {
      int len = snprintf(num, sizeof num, "%s%" PRId64, i ? " " : "", s[p].v[i]);
      for (int k = 0; k < len; k++) {
        h ^= (unsigned char)num[k];
        h *= 1099511628211ull;
      }
    }
    h ^= (unsigned char)'\n';
    h *= 1099511628211ull;
  }
  free(s);
  free(store);
  return h;
}

const char *polylla_polygon_str(const mb_mesh *poly, int64_t p, char *buf, size_t len) {
  size_t k = 0;
  buf[0] = 0;
  for (int64_t i = poly->face_offsets[p]; i < poly->face_offsets[p + 1] && k + 24 < len; i++)
    k += (size_t)snprintf(buf + k, len - k, "%s%" PRId64, k ? " " : "", poly->face_indices[i]);
  return buf;
}

int64_t polylla_find_polygon(const mb_mesh *poly, const int64_t *v, int64_t n) {
  for (int64_t p = 0; p < poly->nf; p++) {
    int64_t o = poly->face_offsets[p];
    if (poly->face_offsets[p + 1] - o != n) continue;
    for (int64_t s = 0; s < n; s++) {
      int64_t i = 0;
      while (i < n && poly->face_indices[o + (s + i) % n] == v[i]) i++;
      if (i == n) return p;
    }
  }
  return -1;
}

static double shoelace(const double *x, const int64_t *v, int64_t n) {
  /* relative to the first vertex, to keep the sum well conditioned */
  double x0 = x[3 * v[0]], y0 = x[3 * v[0] + 1], a = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t p = v[i], q = v[(i + 1) % n];
    a += (x[3 * p] - x0) * (x[3 * q + 1] - y0) - (x[3 * q] - x0) * (x[3 * p + 1] - y0);
  }
  return 0.5 * a;
}

static int attr_ll(const mb_mesh *m, const char *key, long long *v) {
  const char *s = mb_attrs_get(&m->attrs, key);
  if (!s) return 0;
  char *end;
  *v = strtoll(s, &end, 10);
  return *s && !*end;
}

#define FAIL(...)                          \
  do {                                     \
    snprintf(why, len, __VA_ARGS__);       \
    goto out;                              \
  } while (0)

int polylla_check(const mb_mesh *tri, const mb_mesh *poly, char *why, size_t len) {
  int ok = 0;
  const int64_t nt = tri->nf, nh = 3 * nt, np = poly->nf;
  const double *x = tri->xyz;
  int64_t *ov = NULL, *used = NULL, *twin = NULL, *parent = NULL, *comp_poly = NULL;
  double *comp_area = NULL;
  dedge *tab = NULL;
  seq *sorted = NULL;
  int64_t *store = NULL, *vseen = NULL, *vpos = NULL;
  why[0] = 0;

  if (nt <= 0 || np < 0 || tri->nv <= 0) FAIL("empty input or output");
  if (poly->kind != MB_KIND_POLYGONS2D) FAIL("output kind is %s", mb_kind_name(poly->kind));
  if (strcmp(poly->name ? poly->name : "", tri->name ? tri->name : ""))
    FAIL("output name '%s' differs from the input's", poly->name);
  if (poly->index != tri->index) FAIL("output index differs");
  if (poly->nv != tri->nv) FAIL("output has %lld vertices, input %lld", (long long)poly->nv,
                                (long long)tri->nv);
  if (memcmp(poly->xyz, tri->xyz, sizeof(double) * 3 * (size_t)tri->nv))
    FAIL("output vertices are not the input's, in order");

  /* Orientation (own code) and the directed-edge table. */
  ov = malloc(sizeof *ov * (size_t)nh);
  tab = malloc(sizeof *tab * (size_t)nh);
  for (int64_t t = 0; t < nt; t++) {
    int64_t a = tri->face_indices[3 * t], b = tri->face_indices[3 * t + 1],
            c = tri->face_indices[3 * t + 2];
    double o = (x[3 * b] - x[3 * a]) * (x[3 * c + 1] - x[3 * a + 1]) -
               (x[3 * b + 1] - x[3 * a + 1]) * (x[3 * c] - x[3 * a]);
    if (o < 0) {
      int64_t s = b;
      b = c;
      c = s;
    }
    ov[3 * t] = a;
    ov[3 * t + 1] = b;
    ov[3 * t + 2] = c;
  }
  for (int64_t h = 0; h < nh; h++) {
    tab[h].a = ov[h];
    tab[h].b = ov[h % 3 == 2 ? h - 2 : h + 1];
    tab[h].h = h;
  }
  qsort(tab, (size_t)nh, sizeof *tab, cmp_dedge);
  twin = malloc(sizeof *twin * (size_t)nh);
  for (int64_t h = 0; h < nh; h++)
    twin[h] = find_dedge(tab, nh, ov[h % 3 == 2 ? h - 2 : h + 1], ov[h]);

  /* Each polygon: a cycle of half-edges, none shared; its head first. */
  used = calloc((size_t)nh, sizeof *used);
  vseen = calloc((size_t)poly->nv + 1, sizeof *vseen);
  vpos = calloc((size_t)poly->nv + 1, sizeof *vpos);
  int64_t prev_head = -1;
  if (poly->face_offsets[0] != 0) FAIL("face_offsets[0] != 0");
  for (int64_t p = 0; p < np; p++) {
    int64_t o = poly->face_offsets[p], n = poly->face_offsets[p + 1] - o;
    const int64_t *v = poly->face_indices + o;
    if (n < 3) FAIL("polygon %lld has %lld vertices", (long long)p, (long long)n);
    for (int64_t i = 0; i < n; i++) { /* simple: no vertex twice (no pinch, no tip) */
      if (v[i] < 0 || v[i] >= poly->nv)
        FAIL("polygon %lld: vertex %lld out of range", (long long)p, (long long)v[i]);
      if (vseen[v[i]] == p + 1)
        FAIL("polygon %lld is not simple: vertex %lld occurs twice (at %lld and %lld)",
             (long long)p, (long long)v[i], (long long)vpos[v[i]], (long long)i);
      vseen[v[i]] = p + 1;
      vpos[v[i]] = i;
    }
    int64_t head = -1, head_at = -1;
    for (int64_t i = 0; i < n; i++) {
      int64_t a = v[i], b = v[(i + 1) % n];
      if (v[(i + 2) % n] == a)
        FAIL("polygon %lld has the barrier-edge tip %lld (pattern %lld %lld %lld at %lld)",
             (long long)p, (long long)b, (long long)a, (long long)b, (long long)a, (long long)i);
      int64_t h = find_dedge(tab, nh, a, b);
      if (h < 0)
        FAIL("polygon %lld: edge (%lld, %lld) is no counter-clockwise half-edge of the input",
             (long long)p, (long long)a, (long long)b);
      if (used[h])
        FAIL("half-edge %lld (%lld -> %lld) is in polygons %lld and %lld", (long long)h,
             (long long)a, (long long)b, (long long)used[h] - 1, (long long)p);
      used[h] = p + 1;
      if (head < 0 || h < head) {
        head = h;
        head_at = i;
      }
    }
    if (head_at != 0)
      FAIL("polygon %lld does not start at its head (half-edge %lld is at position %lld)",
           (long long)p, (long long)head, (long long)head_at);
    if (head <= prev_head)
      FAIL("polygons %lld and %lld are not in increasing head order (%lld, %lld)",
           (long long)p - 1, (long long)p, (long long)prev_head, (long long)head);
    prev_head = head;
  }

  /* Frontier closure: boundary half-edges used; interior edges both sides
   * or neither. Count frontier edges. */
  int64_t nfe = 0;
  for (int64_t h = 0; h < nh; h++) {
    if (twin[h] < 0) {
      if (!used[h]) FAIL("boundary half-edge %lld (%lld -> %lld) is in no polygon", (long long)h,
                         (long long)ov[h],
                         (long long)ov[h % 3 == 2 ? h - 2 : h + 1]);
      nfe++;
    } else {
      if (!used[h] != !used[twin[h]])
        FAIL("interior edge (%lld, %lld) is in a polygon on one side only", (long long)ov[h],
             (long long)ov[h % 3 == 2 ? h - 2 : h + 1]);
      if (used[h] && h < twin[h]) nfe++;
    }
  }

  /* Components of triangles across edges in no polygon. */
  parent = malloc(sizeof *parent * (size_t)nt);
  for (int64_t t = 0; t < nt; t++) parent[t] = t;
  for (int64_t h = 0; h < nh; h++)
    if (twin[h] >= 0 && !used[h]) {
      int64_t r1 = uf_find(parent, h / 3), r2 = uf_find(parent, twin[h] / 3);
      if (r1 != r2) parent[r1] = r2;
    }
  comp_poly = malloc(sizeof *comp_poly * (size_t)nt);
  comp_area = calloc((size_t)nt, sizeof *comp_area);
  for (int64_t t = 0; t < nt; t++) comp_poly[t] = -1;
  double total_tri = 0;
  for (int64_t t = 0; t < nt; t++) {
    int64_t v[3] = {ov[3 * t], ov[3 * t + 1], ov[3 * t + 2]};
    double a = shoelace(x, v, 3);
    total_tri += a;
    comp_area[uf_find(parent, t)] += a;
  }
  for (int64_t p = 0; p < np; p++) {
    int64_t o = poly->face_offsets[p], n = poly->face_offsets[p + 1] - o, root = -1;
    for (int64_t i = 0; i < n; i++) {
      int64_t h = find_dedge(tab, nh, poly->face_indices[o + i],
                             poly->face_indices[o + (i + 1) % n]);
      int64_t r = uf_find(parent, h / 3);
      if (root < 0) root = r;
      if (r != root)
        FAIL("polygon %lld borders two components of triangles (not one region)", (long long)p);
    }
    if (comp_poly[root] >= 0)
      FAIL("polygons %lld and %lld bound the same component of triangles",
           (long long)comp_poly[root], (long long)p);
    comp_poly[root] = p;
  }
  for (int64_t t = 0; t < nt; t++)
    if (uf_find(parent, t) == t && comp_poly[t] < 0)
      FAIL("triangle %lld is in no polygon", (long long)t);

  /* Areas. */
  double total_poly = 0;
  for (int64_t p = 0; p < np; p++) {
    int64_t o = poly->face_offsets[p], n = poly->face_offsets[p + 1] - o;
    double a = shoelace(x, poly->face_indices + o, n);
    int64_t h = find_dedge(tab, nh, poly->face_indices[o], poly->face_indices[o + 1]);
    double ac = comp_area[uf_find(parent, h / 3)];
    if (!(a > 0)) FAIL("polygon %lld has area %g (not counter-clockwise)", (long long)p, a);
    if (fabs(a - ac) > 1e-9 * fabs(total_tri))
      FAIL("polygon %lld has area %.17g, its triangles %.17g", (long long)p, a, ac);
    total_poly += a;
  }
  if (fabs(total_poly - total_tri) > 1e-9 * fabs(total_tri))
    FAIL("polygon areas sum to %.17g, triangle areas to %.17g", total_poly, total_tri);

  /* No duplicates (as cyclic sequences). */
  sorted = normalised_sorted(poly, &store);
  for (int64_t p = 1; p < np; p++)
    if (!cmp_seq(&sorted[p - 1], &sorted[p])) FAIL("two polygons are equal");

  /* vertex_count and attributes. */
  const mb_field *vc = NULL;
  for (int i = 0; i < poly->nface_fields; i++)
    if (!strcmp(poly->face_fields[i].name, "vertex_count")) vc = &poly->face_fields[i];
  if (!vc || vc->ncomp != 1) FAIL("face field vertex_count [nf, 1] missing");
  for (int64_t p = 0; p < np; p++)
    if (vc->data[p] != (double)(poly->face_offsets[p + 1] - poly->face_offsets[p]))
      FAIL("vertex_count of polygon %lld is %g", (long long)p, vc->data[p]);
  long long av;
  if (!attr_ll(poly, "polygons", &av) || av != np) FAIL("attribute polygons wrong or missing");
  if (!attr_ll(poly, "frontier_edges", &av) || av != nfe)
    FAIL("attribute frontier_edges is %s, the polygons have %lld edges",
         mb_attrs_get(&poly->attrs, "frontier_edges"), (long long)nfe);
  if (!attr_ll(poly, "barrier_edge_tips", &av) || av < 0)
    FAIL("attribute barrier_edge_tips wrong or missing");
  long long rep;
  if (!attr_ll(poly, "polygons_repaired", &rep) || rep < 0 || rep > av)
    FAIL("attribute polygons_repaired wrong or missing");
  ok = 1;
out:
  free(ov);
  free(tab);
  free(twin);
  free(used);
  free(parent);
  free(comp_poly);
  free(comp_area);
  free(sorted);
  free(store);
  free(vseen);
  free(vpos);
  return ok;
}

/* The rules of mb_polylla.h, written the plain way: the label-phase
 * frontier from the edge keys, tips by counting frontier edges per vertex
 * (interior vertices with exactly one), middle edges region by region in
 * walk order; then the set of frontier half-edges must be the set of
 * polygon edges. */
int polylla_check_rules(const mb_mesh *tri, const mb_mesh *poly, char *why, size_t len) {
  return polylla_check_rules_ties(tri, poly, MB_POLYLLA_TIES_KEY, why, len);
}

int polylla_check_rules_ties(const mb_mesh *tri, const mb_mesh *poly, mb_polylla_ties ties,
                             char *why, size_t len) {
  int ok = 0;
  const int64_t nt = tri->nf, nh = 3 * nt, nv = tri->nv;
  const double *x = tri->xyz;
  int64_t *ov = malloc(sizeof *ov * (size_t)nh), *twin = malloc(sizeof *twin * (size_t)nh);
  dedge *tab = malloc(sizeof *tab * (size_t)nh);
  char *fr = calloc((size_t)nh, 1), *inpoly = calloc((size_t)nh, 1);
  int64_t *nfront = calloc((size_t)nv, sizeof *nfront);
  char *bnd = calloc((size_t)nv, 1);
  int *lm = malloc(sizeof *lm * (size_t)nt);
  why[0] = 0;
  for (int64_t t = 0; t < nt; t++) {
    int64_t a = tri->face_indices[3 * t], b = tri->face_indices[3 * t + 1],
            c = tri->face_indices[3 * t + 2];
    double o = (x[3 * b] - x[3 * a]) * (x[3 * c + 1] - x[3 * a + 1]) -
               (x[3 * b + 1] - x[3 * a + 1]) * (x[3 * c] - x[3 * a]);
    if (o < 0) {
      int64_t s = b;
      b = c;
      c = s;
    }
    ov[3 * t] = a, ov[3 * t + 1] = b, ov[3 * t + 2] = c;
  }
#define NXT(h) ((h) % 3 == 2 ? (h) - 2 : (h) + 1)
#define PRV(h) ((h) % 3 == 0 ? (h) + 2 : (h) - 1)
  for (int64_t h = 0; h < nh; h++) tab[h] = (dedge){ov[h], ov[NXT(h)], h};
  qsort(tab, (size_t)nh, sizeof *tab, cmp_dedge);
  for (int64_t h = 0; h < nh; h++) twin[h] = find_dedge(tab, nh, ov[NXT(h)], ov[h]);
  /* longest edge: key (len2, max, min), or the first longest (corners) */
  const int corners = ties == MB_POLYLLA_TIES_CORNERS;
  for (int64_t t = 0; t < nt; t++) {
    int best = -1;
    double bl = 0;
    int64_t bhi = 0, blo = 0;
    for (int k = 0; k < 3; k++) {
      int64_t a = ov[3 * t + k], b = ov[3 * t + (k + 1) % 3];
      int64_t lo = a < b ? a : b, hi = a < b ? b : a;
      double dx = x[3 * hi] - x[3 * lo], dy = x[3 * hi + 1] - x[3 * lo + 1];
      double l = dx * dx + dy * dy;
      if (best < 0 || l > bl || (!corners && l == bl && (hi > bhi || (hi == bhi && lo > blo)))) {
        best = k, bl = l, bhi = hi, blo = lo;
      }
    }
    lm[t] = best;
  }
  for (int64_t h = 0; h < nh; h++) {
    int64_t g = twin[h];
    fr[h] = g < 0 || (lm[h / 3] != h % 3 && lm[g / 3] != g % 3);
    if (g < 0) bnd[ov[h]] = bnd[ov[NXT(h)]] = 1;
    if (fr[h]) {
      if (g < 0 || h < g) {
        nfront[ov[h]]++;
        nfront[ov[NXT(h)]]++;
      }
    }
  }
  int64_t tips = 0;
  for (int64_t v = 0; v < nv; v++) tips += !bnd[v] && nfront[v] == 1;
  /* Repair, region by region: each region's walk starts at the first
   * frontier half-edge clockwise from its seed (the half-edge h < twin(h)
   * of its terminal edge, or its boundary terminal edge) and visits its
   * label-phase cycle from the start's successor round to the start; each
   * tip met gets its middle edge, counted from the first frontier
   * half-edge clockwise from the tip's last outgoing half-edge, with the
   * middle edges added so far. */
  for (int64_t h0 = 0; h0 < nh; h0++) {
    int64_t g0 = twin[h0];
    if (lm[h0 / 3] != h0 % 3 || (g0 >= 0 && (lm[g0 / 3] != g0 % 3 || g0 < h0))) continue;
    int64_t start = h0;
    while (!fr[start]) start = NXT(twin[start]);
    int64_t h = start;
    do {
      int64_t sl = NXT(h); /* label-phase successor */
      while (fr[sl] != 1) sl = NXT(twin[sl]);
      h = sl;
      int64_t after = NXT(h);
      while (fr[after] != 1) after = NXT(twin[after]);
      if (after != twin[h]) continue; /* h does not point to a tip */
      int64_t b = twin[h], e = b, last = b, deg = 0, nf = 0;
      do {
        e = NXT(twin[e]);
        deg++;
        nf += fr[e] != 0;
        if (e > last) last = e;
      } while (e != b);
      if (h == start && nf > 1) continue; /* the start's tip, repaired already */
      e = last;
      while (!fr[e]) e = NXT(twin[e]);
      int64_t k = deg - 1, adv = k % 2 == 0 ? k / 2 - 1 : k / 2;
      e = NXT(twin[e]);
      for (int64_t i = 0; i < adv; i++) e = NXT(twin[e]);
      if (!fr[e]) fr[e] = fr[twin[e]] = 2;
    } while (h != start);
  }
  for (int64_t p = 0; p < poly->nf; p++) {
    int64_t o = poly->face_offsets[p], n = poly->face_offsets[p + 1] - o;
    for (int64_t i = 0; i < n; i++) {
      int64_t h = find_dedge(tab, nh, poly->face_indices[o + i], poly->face_indices[o + (i + 1) % n]);
      if (h < 0) FAIL("polygon %lld: an edge is no half-edge", (long long)p);
      inpoly[h] = 1;
    }
  }
  /* the pinch repair's cuts: interior edges in polygons on both sides that
   * the rules above leave out, as many as the attribute pinches_split */
  int64_t cuts = 0;
  for (int64_t h = 0; h < nh; h++) {
    if (!fr[h] && inpoly[h] && twin[h] >= 0 && !fr[twin[h]] && inpoly[twin[h]]) {
      cuts += h < twin[h];
      continue;
    }
    if (!fr[h] != !inpoly[h])
      FAIL("half-edge %lld (%lld -> %lld) is %sa frontier half-edge by the rules but %sin a "
           "polygon",
           (long long)h, (long long)ov[h], (long long)ov[NXT(h)], fr[h] ? "" : "not ",
           inpoly[h] ? "" : "not ");
  }
  const char *ps = mb_attrs_get(&poly->attrs, "pinches_split");
  if (!ps || strtoll(ps, NULL, 10) != cuts)
    FAIL("pinches_split is %s, but %lld polygon edges are no frontier edges by the rules",
         ps ? ps : "missing", (long long)cuts);
  const char *s = mb_attrs_get(&poly->attrs, "barrier_edge_tips");
  if (!s || strtoll(s, NULL, 10) != tips)
    FAIL("barrier_edge_tips is %s, the rules give %lld", s ? s : "missing", (long long)tips);
#undef NXT
#undef PRV
  ok = 1;
out:
  free(ov);
  free(twin);
  free(tab);
  free(fr);
  free(inpoly);
  free(nfront);
  free(bnd);
  free(lm);
  return ok;
}

void polylla_assert_valid(const mb_mesh *tri, const mb_mesh *poly) {
  polylla_assert_valid_ties(tri, poly, MB_POLYLLA_TIES_KEY);
}

void polylla_assert_valid_ties(const mb_mesh *tri, const mb_mesh *poly, mb_polylla_ties ties) {
  char why[512];
  if (!polylla_check(tri, poly, why, sizeof why)) fail_msg("Polylla output invalid: %s", why);
  if (!polylla_check_rules_ties(tri, poly, ties, why, sizeof why))
    fail_msg("Polylla output breaks the rules: %s", why);
}

mb_mesh *polylla_test_mesh(const char *name, int64_t nv, const double *xy, int64_t nf,
                           const int64_t *tri) {
  mb_mesh *m = NULL;
  assert_int_equal(mb_mesh_create(name, nv, nf, 3 * nf, &m), MB_SUCCESS);
  m->kind = MB_KIND_TRIANGULATION2D;
  for (int64_t i = 0; i < nv; i++) {
    m->xyz[3 * i] = xy[2 * i];
    m->xyz[3 * i + 1] = xy[2 * i + 1];
    m->xyz[3 * i + 2] = 0;
  }
  for (int64_t f = 0; f <= nf; f++) m->face_offsets[f] = 3 * f;
  memcpy(m->face_indices, tri, sizeof(int64_t) * 3 * (size_t)nf);
  return m;
}

mb_mesh *polylla_run_checked(const mb_mesh *tri, mb_polylla_stats *stats) {
  return polylla_run_checked_ties(tri, MB_POLYLLA_TIES_KEY, stats);
}

mb_mesh *polylla_run_checked_ties(const mb_mesh *tri, mb_polylla_ties ties,
                                  mb_polylla_stats *stats) {
  mb_mesh *poly = NULL;
  const mb_polylla_opts o = {.ties = ties};
  mb_error e = mb_polylla_cpu(tri, &o, &poly, stats);
  if (e != MB_SUCCESS) fail_msg("mb_polylla_cpu failed: %s", mb_error_message());
  assert_non_null(poly);
  polylla_assert_valid_ties(tri, poly, ties);
  return poly;
}

mb_mesh *polylla_pinch_ring(void) {
  static const double xy[] = {10.0, 0.0,  7.8,  7.8,  0.0,  12.0, -9.2, 9.2,  -14.0, 0.0,
                              -10.6, -10.6, 0.0, -16.0, 12.0, -12.0, 1.8,  0.8,  0.7,  1.7,
                              -0.7, 1.6,  -1.4, 0.6,  -1.3, -0.5, -0.5, -1.2, 0.4,  -1.0,
                              0.9,  -0.4};
  static const int64_t tri[] = {0,  1,  8,  8,  9,  1,  1,  2,  9,  9,  10, 2,  2,  3,  10, 10,
                                11, 3,  3,  4,  11, 11, 12, 4,  4,  5,  12, 12, 13, 5,  5,  6,
                                13, 13, 14, 6,  6,  7,  14, 14, 15, 7,  7,  0,  15, 15, 8,  0};
  return polylla_test_mesh("ring", 16, xy, 16, tri);
}
