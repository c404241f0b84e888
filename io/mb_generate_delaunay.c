/* meshbatch: mb_generate_delaunay (see mb_generate.h): random points,
 * their Hilbert order, and their Delaunay triangulation by qhull, once or
 * on strips at once. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libqhull_r/qhull_ra.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "mb_generate.h"
#include "mb_generate_private.h"
#include "mb_log.h"

/* ------------------------------------------------------------ Delaunay */

/* Uniform double in [0, 1) with 53 random bits. */
static double uniform01(uint64_t *state) {
  return (double)(mb_splitmix64(state) >> 11) * 0x1.0p-53;
}

/* A standard normal draw (Box-Muller, one of the pair). */
static double normal01(uint64_t *state) {
  double u = 1.0 - uniform01(state); /* (0, 1] */
  double v = uniform01(state);
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* npoints points [n, 2] of the chosen distribution (see mb_generate.h). */
static void delaunay_points(int64_t n, uint64_t seed, int clustered, double *p) {
  uint64_t st = seed;
  enum { NC = 8 };
  double cx[NC], cy[NC], sd[NC];
  if (clustered)
    for (int c = 0; c < NC; c++) {
      cx[c] = 0.15 + 0.7 * uniform01(&st);
      cy[c] = 0.15 + 0.7 * uniform01(&st);
      sd[c] = 0.02 + 0.06 * uniform01(&st);
    }
  for (int64_t i = 0; i < n; i++) {
    double x, y;
    if (!clustered || uniform01(&st) < 0.1) {
      x = uniform01(&st);
      y = uniform01(&st);
    } else {
      int c = (int)(mb_splitmix64(&st) % NC);
      do {
        x = cx[c] + sd[c] * normal01(&st);
        y = cy[c] + sd[c] * normal01(&st);
      } while (!(x >= 0.0 && x < 1.0 && y >= 0.0 && y < 1.0));
    }
    p[2 * i] = x;
    p[2 * i + 1] = y;
  }
}

/* Twice the signed area of (a, b, c) in the plane. */
static double orient2(const double *p, int64_t a, int64_t b, int64_t c) {
  return (p[2 * b] - p[2 * a]) * (p[2 * c + 1] - p[2 * a + 1]) -
         (p[2 * b + 1] - p[2 * a + 1]) * (p[2 * c] - p[2 * a]);
}

/* Physical memory in bytes, 0 if unknown. */
static double physical_memory(void) {
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  if (pages > 0 && size > 0) return (double)pages * (double)size;
#endif
  return 0;
}

/* Every point bucketed on a G x G grid of cells over its bounding box: the
 * points of cell c are by_cell[start[c] .. start[c + 1]). */
typedef struct {
  int g;
  double x0, y0, x1, y1, sx, sy; /* bounding box; cells a unit of x and y */
  int64_t *start, *by_cell;
} point_grid;

/* One part of the points for delaunay_strips: a strip (the circumcentres
 * of its core, the points of its extended strip) or the hull zone. */
typedef struct {
  int hull_zone;      /* 0: a strip; 1: the zone along the convex hull */
  double lo, hi;      /* a strip's core: circumcentres with x in [lo, hi) */
  double margin;      /* a strip vouches for circles of radius <= margin, the
                         zone for the larger ones */
  const uint8_t *zone;    /* [N] whether a point is in the hull zone */
  const double *all;      /* [N, 2] every point */
  const point_grid *grid; /* every point by cell */
} delaunay_part;

/* Whether d lies strictly outside the circle through a, b, c (counter-
 * clockwise), certainly: the in-circle determinant (J. R. Shewchuk,
 * "Adaptive precision floating-point arithmetic and fast robust geometric
 * predicates", Discrete Comput. Geom. 18, 1997, section 4: INCIRCLE and
 * its first error bound) below minus its rounding bound. A point on the
 * circle, or too near it to tell, is not outside. */
static int surely_outside(const double *a, const double *b, const double *c, const double *d) {
  double adx = a[0] - d[0], ady = a[1] - d[1], bdx = b[0] - d[0], bdy = b[1] - d[1];
  double cdx = c[0] - d[0], cdy = c[1] - d[1];
  double al = adx * adx + ady * ady, bl = bdx * bdx + bdy * bdy, cl = cdx * cdx + cdy * cdy;
  double det = al * (bdx * cdy - cdx * bdy) + bl * (cdx * ady - adx * cdy) +
               cl * (adx * bdy - bdx * ady);
  double perm = (fabs(bdx * cdy) + fabs(cdx * bdy)) * al +
                (fabs(cdx * ady) + fabs(adx * cdy)) * bl +
                (fabs(adx * bdy) + fabs(bdx * ady)) * cl;
  return det < -(1.2e-15 * perm); /* Shewchuk's iccerrboundA is (10 + 96 eps) eps */
}

/* The cell range [*c0, *c1] of grid g covering [v0, v1] along one axis. */
static void cell_range(double v0, double v1, double origin, double scale, int g, int *c0, int *c1) {
  double a = floor((v0 - origin) * scale), b = floor((v1 - origin) * scale);
  *c0 = (int)fmax(0.0, fmin((double)g - 1, a));
  *c1 = (int)fmax(0.0, fmin((double)g - 1, b));
}

/* Whether part s vouches for triangle (a, b, c) (local ids into p,
 * counter-clockwise, smallest global id first, so that every part
 * computes its circle from the same numbers in the same order):
 *   a strip, where its circumcentre lies in the core and its radius is at
 *     most the margin: the circle then lies inside the extended strip, so
 *     its emptiness of the strip's points (qhull's triangulation of them is
 *     Delaunay) is emptiness of every point;
 *   the hull zone, where its radius exceeds the margin and no point outside
 *     the zone lies in the circle: the points under the circle's part over
 *     the points' bounding box are tested one by one (surely_outside).
 * Any doubt (a centre that is not finite, a point too near the circle)
 * says no; the caller's count check then rejects the parts' result. */
static int part_vouches(const delaunay_part *s, const double *p, int64_t a, int64_t b, int64_t c) {
  double bx = p[2 * b] - p[2 * a], by = p[2 * b + 1] - p[2 * a + 1];
  double cx = p[2 * c] - p[2 * a], cy = p[2 * c + 1] - p[2 * a + 1];
  double d = 2.0 * (bx * cy - by * cx), b2 = bx * bx + by * by, c2 = cx * cx + cy * cy;
  double ux = (cy * b2 - by * c2) / d, uy = (bx * c2 - cx * b2) / d;
  double x = p[2 * a] + ux, y = p[2 * a + 1] + uy, r = sqrt(ux * ux + uy * uy);
  if (!isfinite(x) || !isfinite(y) || !isfinite(r)) return 0;
  if (!s->hull_zone) return x >= s->lo && x < s->hi && r <= s->margin;
  if (!(r > s->margin)) return 0;
  const point_grid *g = s->grid;
  double dy = y < g->y0 ? g->y0 - y : (y > g->y1 ? y - g->y1 : 0.0);
  double half = dy < r ? sqrt(r * r - dy * dy) : 0.0;
  double slack = 1e-6 * (1.0 + r); /* rounding of the centre and radius, widely */
  int i0, i1, j0, j1;
  cell_range(x - half - slack, x + half + slack, g->x0, g->sx, g->g, &i0, &i1);
  cell_range(fmax(g->y0, y - r) - slack, fmin(g->y1, y + r) + slack, g->y0, g->sy, g->g, &j0, &j1);
  for (int j = j0; j <= j1; j++)
    for (int i = i0; i <= i1; i++) {
      int64_t cell = (int64_t)j * g->g + i;
      for (int64_t k = g->start[cell]; k < g->start[cell + 1]; k++) {
        int64_t q = g->by_cell[k];
        if (s->zone[q]) continue; /* the zone's own */
        if (!surely_outside(p + 2 * a, p + 2 * b, p + 2 * c, s->all + 2 * q)) return 0;
      }
    }
  return 1;
}

/* Run qhull on pts [n, 2]; fill *tri (malloc'ed, [*nt, 3], CCW, smallest
 * index first) and count the zero-area triangles dropped. With a part,
 * keep only the triangles it vouches for (part_vouches). */
static mb_error delaunay_qhull(int64_t n, double *pts, const delaunay_part *part, int64_t **tri,
                               int64_t *nt, int64_t *ndegenerate) {
  qhT qh_qh;
  qhT *qh = &qh_qh;
  FILE *err = tmpfile();
  char flags[] = "qhull d Qbb Qc Qz Q12 Qt";
  qh_zero(qh, err ? err : stderr);
  int code = qh_new_qhull(qh, 2, (int)n, pts, False, flags, NULL, err ? err : stderr);
  mb_error e = MB_SUCCESS;
  if (code != 0) {
    char msg[512] = "";
    if (err) {
      rewind(err);
      size_t got = fread(msg, 1, sizeof msg - 1, err);
      msg[got] = '\0';
      for (char *c = msg; *c; c++)
        if (*c == '\n') *c = ' ';
    }
    e = mb_error_set(MB_ERR_NUMERIC, __FILE__, __LINE__, __func__,
                     "qhull failed on %lld points (exit code %d): %s", (long long)n, code, msg);
  }
  int64_t count = 0, m = 0, degenerate = 0;
  facetT *facet;
  vertexT *vertex, **vertexp;
  if (!e) {
    FORALLfacets if (!facet->upperdelaunay) count++;
    *tri = malloc(sizeof **tri * (size_t)(3 * (count ? count : 1)));
    if (!*tri)
      e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                       "out of memory for %lld triangles", (long long)count);
  }
  if (!e) {
    FORALLfacets {
      if (facet->upperdelaunay) continue;
      int64_t v[3];
      int k = 0, bad = 0;
      FOREACHvertex_(facet->vertices) {
        int id = qh_pointid(qh, vertex->point);
        if (k < 3) v[k] = id;
        bad |= id < 0 || id >= n;
        k++;
      }
      if (k != 3 || bad) {
        e = mb_error_set(MB_ERR_NUMERIC, __FILE__, __LINE__, __func__,
                         "qhull gave a lower Delaunay facet with %d vertices%s", k,
                         bad ? " (or an unknown point)" : "");
        break;
      }
      double o = orient2(pts, v[0], v[1], v[2]);
      if (o == 0.0) {
        degenerate++;
        continue;
      }
      if (o < 0) {
        int64_t t = v[1];
        v[1] = v[2];
        v[2] = t;
      }
      int r = v[0] < v[1] ? (v[0] < v[2] ? 0 : 2) : (v[1] < v[2] ? 1 : 2);
      int64_t *t = *tri + 3 * m;
      for (int j = 0; j < 3; j++) t[j] = v[(r + j) % 3];
      if (part && !part_vouches(part, pts, t[0], t[1], t[2])) continue;
      m++;
    }
  }
  int curlong, totlong;
  qh_freeqhull(qh, !qh_ALL);
  qh_memfreeshort(qh, &curlong, &totlong);
  if (err) fclose(err);
  if (e) {
    free(*tri);
    *tri = NULL;
    return e;
  }
  *nt = m;
  *ndegenerate = degenerate;
  return MB_SUCCESS;
}

/* ------------------------------------------------- Delaunay by strips */

/* The strips of the calling thread's last mb_generate_delaunay. */
static _Thread_local int last_strips = 1;

int mb_generate_delaunay_strips(void) { return last_strips; }

/* Points a strip at least, for delaunay_strips to pay. */
#define MB_DELAUNAY_STRIP_POINTS 50000

/* The number of strips for npoints: one an OpenMP thread, each of at least
 * MB_DELAUNAY_STRIP_POINTS points; 1 (qhull once) below two. */
static int delaunay_strip_count(int64_t npoints) {
#ifdef _OPENMP
  int64_t k = npoints / MB_DELAUNAY_STRIP_POINTS, t = omp_get_max_threads();
  return (int)(k < t ? k : t);
#else
  (void)npoints;
  return 1;
#endif
}

/* Order of candidate hull points: by x, then y. */
static const double *hull_pts;
static int hull_cmp(const void *x, const void *y) {
  const double *a = hull_pts + 2 * *(const int64_t *)x, *b = hull_pts + 2 * *(const int64_t *)y;
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1];
}

/* The convex hull of the points ids [n] of p (sorted in place), its
 * vertices counter-clockwise into hull [<= 2 n + 1] with the first
 * repeated at the end; returns their number h (points on a hull edge are
 * not vertices). Andrew's monotone chain (A. M. Andrew, Inf. Process.
 * Lett. 9(5), 1979). Not thread-safe (qsort's comparison reads hull_pts). */
static int64_t convex_hull(const double *p, int64_t *ids, int64_t n, int64_t *hull) {
  hull_pts = p;
  qsort(ids, (size_t)n, sizeof *ids, hull_cmp);
  int64_t k = 0;
  for (int64_t i = 0; i < n; i++) { /* lower chain */
    while (k >= 2 && orient2(p, hull[k - 2], hull[k - 1], ids[i]) <= 0) k--;
    hull[k++] = ids[i];
  }
  for (int64_t i = n - 2, t = k + 1; i >= 0; i--) { /* upper chain */
    while (k >= t && orient2(p, hull[k - 2], hull[k - 1], ids[i]) <= 0) k--;
    hull[k++] = ids[i];
  }
  return k - 1;
}

/* The convex hull of pts [n, 2] as convex_hull gives it, *hull malloc'ed.
 * The points strictly inside the octagon of the extreme points in eight
 * directions are no hull vertices (S. G. Akl and G. T. Toussaint, Inf.
 * Process. Lett. 7(5), 1978) and are left out before the chain. */
static mb_error points_hull(int64_t n, const double *pts, int64_t **hull, int64_t *h) {
  /* extremes, counter-clockwise: min y, max x - y, max x, max x + y, max y,
   * min x - y, min x, min x + y */
  int64_t o[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t i = 1; i < n; i++) {
    const double *q = pts + 2 * i;
#define MB_EXT(k, key, better) \
  if (key(q) better key(pts + 2 * o[k])) o[k] = i
#define MB_Y(q) (q)[1]
#define MB_X(q) (q)[0]
#define MB_XMY(q) ((q)[0] - (q)[1])
#define MB_XPY(q) ((q)[0] + (q)[1])
    MB_EXT(0, MB_Y, <);
    MB_EXT(1, MB_XMY, >);
    MB_EXT(2, MB_X, >);
    MB_EXT(3, MB_XPY, >);
    MB_EXT(4, MB_Y, >);
    MB_EXT(5, MB_XMY, <);
    MB_EXT(6, MB_X, <);
    MB_EXT(7, MB_XPY, <);
#undef MB_EXT
#undef MB_Y
#undef MB_X
#undef MB_XMY
#undef MB_XPY
  }
  uint8_t *keep = malloc((size_t)n);
  MB_CHECK(keep, MB_ERR_MEMORY, "out of memory");
  int64_t m = 0;
#pragma omp parallel for schedule(static) reduction(+ : m)
  for (int64_t i = 0; i < n; i++) {
    int inside = 1;
    for (int k = 0; k < 8 && inside; k++)
      inside = o[k] == o[(k + 1) % 8] || orient2(pts, o[k], o[(k + 1) % 8], i) > 0;
    keep[i] = !inside;
    m += keep[i];
  }
  int64_t *ids = malloc(sizeof *ids * (size_t)(m + 8)), c = 0;
  *hull = malloc(sizeof **hull * (size_t)(2 * (m + 8) + 1));
  if (!ids || !*hull) {
    free(keep), free(ids), free(*hull);
    *hull = NULL;
    MB_FAIL(MB_ERR_MEMORY, "out of memory");
  }
  for (int64_t i = 0; i < n; i++)
    if (keep[i]) ids[c++] = i;
  for (int k = 0; k < 8; k++) ids[c++] = o[k]; /* in case one was "inside" a degenerate octagon */
  free(keep);
  /* duplicates of the extremes are harmless: the chain drops repeated points */
  *h = convex_hull(pts, ids, c, *hull);
  free(ids);
  return MB_SUCCESS;
}

/* Grid g over the points: about 8 points a cell, at most 8192 a side. */
static mb_error point_grid_build(int64_t n, const double *pts, point_grid *g) {
  memset(g, 0, sizeof *g);
  g->x0 = g->y0 = INFINITY, g->x1 = g->y1 = -INFINITY;
  for (int64_t i = 0; i < n; i++) {
    double x = pts[2 * i], y = pts[2 * i + 1];
    g->x0 = fmin(g->x0, x), g->x1 = fmax(g->x1, x), g->y0 = fmin(g->y0, y), g->y1 = fmax(g->y1, y);
  }
  double side = sqrt((double)n / 8.0);
  g->g = side < 1 ? 1 : side > 8192 ? 8192 : (int)side;
  g->sx = g->x1 > g->x0 ? g->g / (g->x1 - g->x0) : 0.0;
  g->sy = g->y1 > g->y0 ? g->g / (g->y1 - g->y0) : 0.0;
  size_t cells = (size_t)g->g * (size_t)g->g;
  g->start = calloc(cells + 2, sizeof *g->start);
  g->by_cell = malloc(sizeof *g->by_cell * (size_t)n);
  int64_t *cell = malloc(sizeof *cell * (size_t)n);
  if (!g->start || !g->by_cell || !cell) {
    free(g->start), free(g->by_cell), free(cell);
    MB_FAIL(MB_ERR_MEMORY, "out of memory bucketing %lld points", (long long)n);
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) {
    int cx, cy, unused;
    cell_range(pts[2 * i], pts[2 * i], g->x0, g->sx, g->g, &cx, &unused);
    cell_range(pts[2 * i + 1], pts[2 * i + 1], g->y0, g->sy, g->g, &cy, &unused);
    cell[i] = (int64_t)cy * g->g + cx;
  }
  for (int64_t i = 0; i < n; i++) g->start[cell[i] + 2]++;
  for (size_t c = 0; c < cells; c++) g->start[c + 2] += g->start[c + 1];
  for (int64_t i = 0; i < n; i++) g->by_cell[g->start[cell[i] + 1]++] = i;
  free(cell);
  return MB_SUCCESS;
}

/* The Delaunay triangulation of pts [n, 2] by qhull on nstrips vertical
 * strips and the zone along the convex hull at once (one OpenMP thread a
 * part). The strips' cores split the points' x evenly by count; a strip's
 * qhull gets the points within `margin` of its core and keeps the
 * triangles whose circumcentre lies in the core and whose circumradius is
 * at most the margin. The hull zone's qhull gets the points within
 * 2 margin of the convex hull's boundary and keeps the triangles of larger
 * circumradius whose circle holds no other point (part_vouches). Each
 * triangle kept is therefore one of the Delaunay triangulation of all the
 * points (its circle is empty of every point), and none is kept twice
 * (one core holds its centre; the radius picks strip or zone, from the
 * same numbers). It is the whole triangulation exactly when every point
 * is used and the count is Euler's, 2 n - 2 - h for h hull vertices
 * (points in general position); *complete says whether both hold (and no
 * part failed or made a zero-area triangle). Why the zone suffices: a
 * triangle's circle of radius above the margin is empty, so if the
 * largest empty disc inside the hull is smaller than the margin, each
 * point on that circle lies within 2 margin of the hull's boundary (the
 * disc of radius margin tangent inside the circle at the point would
 * otherwise be an empty disc inside the hull). Where that fails
 * (*complete 0) the caller widens the margin or runs qhull once on
 * everything: the result never depends on nstrips. The certificate is the
 * empty circle, as in the overlap-and-certify decompositions of parallel
 * Delaunay construction (e.g. Blelloch et al., "Design and implementation
 * of a practical parallel Delaunay algorithm", Algorithmica 24, 1999).
 * Output as delaunay_qhull's; errors: MB_ERR_MEMORY (a part whose qhull
 * fails is reported as incomplete, not as an error). */
static mb_error delaunay_strips(int64_t n, const double *pts, int nstrips, double margin,
                                int64_t **tri, int64_t *nt, int *complete) {
  *tri = NULL, *nt = 0, *complete = 0;
  const int nparts = nstrips + 1; /* part 0: the hull zone */
  point_grid grid;
  int64_t *hull = NULL, h = 0;
  MB_CALL(points_hull(n, pts, &hull, &h));
  mb_error e = point_grid_build(n, pts, &grid);
  if (e) {
    free(hull);
    MB_CALL(e);
  }
  uint8_t *zone = malloc((size_t)n);
  double *bound = malloc(sizeof *bound * (size_t)(nstrips + 1));
  int64_t **pt = calloc((size_t)nparts, sizeof *pt), *pnt = calloc((size_t)nparts, sizeof *pnt);
  int *bad = calloc((size_t)nparts, sizeof *bad);
  if (!zone || !bound || !pt || !pnt || !bad) {
    e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
    goto done;
  }
  /* the hull zone: points within 2 margin of an edge's line (inside a
   * convex polygon, the distance to its boundary is the least of those) */
  const double depth = 2.0 * margin * 1.001;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) {
    int in = 0;
    for (int64_t k = 0; k < h && !in; k++) {
      const double *u = pts + 2 * hull[k], *v = pts + 2 * hull[k + 1];
      double len = hypot(v[0] - u[0], v[1] - u[1]);
      in = orient2(pts, hull[k], hull[k + 1], i) <= depth * len;
    }
    zone[i] = (uint8_t)in;
  }
  /* the cores: grid column edges that split the points evenly */
  bound[0] = -INFINITY, bound[nstrips] = INFINITY;
  {
    int64_t cum = 0;
    int col = 0;
    for (int k = 1; k < nstrips; k++) {
      int64_t target = n * k / nstrips;
      for (; col < grid.g; col++) {
        int64_t c = 0;
        for (int j = 0; j < grid.g; j++) {
          int64_t cell = (int64_t)j * grid.g + col;
          c += grid.start[cell + 1] - grid.start[cell];
        }
        if (cum + c > target) break;
        cum += c;
      }
      bound[k] = grid.x0 + col / grid.sx;
    }
  }
  int merr = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(| : merr)
  for (int k = 0; k < nparts; k++) {
    delaunay_part s = {.hull_zone = k == 0, .margin = margin, .zone = zone, .all = pts,
                       .grid = &grid};
    double elo = -INFINITY, ehi = INFINITY;
    if (k > 0) {
      s.lo = bound[k - 1], s.hi = bound[k];
      if (!(s.hi > s.lo)) continue; /* an empty core: nothing to vouch for */
      if (k > 1) elo = s.lo - margin * 1.001;
      if (k < nstrips) ehi = s.hi + margin * 1.001;
    }
#define MB_IN_PART(i) (k == 0 ? zone[i] : pts[2 * (i)] >= elo && pts[2 * (i)] < ehi)
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) m += MB_IN_PART(i);
    int64_t *ids = malloc(sizeof *ids * (size_t)(m ? m : 1));
    double *lp = malloc(sizeof *lp * 2 * (size_t)(m ? m : 1));
    if (!ids || !lp) {
      free(ids), free(lp);
      merr = 1;
      continue;
    }
    m = 0;
    for (int64_t i = 0; i < n; i++)
      if (MB_IN_PART(i)) {
        ids[m] = i, lp[2 * m] = pts[2 * i], lp[2 * m + 1] = pts[2 * i + 1];
        m++;
      }
#undef MB_IN_PART
    int64_t ndeg = 0;
    mb_error pe = m >= 3 ? delaunay_qhull(m, lp, &s, &pt[k], &pnt[k], &ndeg) : MB_ERR_NUMERIC;
    if (pe == MB_ERR_MEMORY) merr = 1;
    if (pe || ndeg) bad[k] = 1;
    /* local ids to global: ids increases, so the smallest stays first */
    if (!pe)
      for (int64_t t = 0; t < 3 * pnt[k]; t++) pt[k][t] = ids[pt[k][t]];
    free(ids), free(lp);
  }
  if (merr) {
    e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                     "out of memory triangulating %lld points in %d strips", (long long)n, nstrips);
    goto done;
  }
  int anybad = 0;
  int64_t total = 0, nused = 0, nzone = 0;
  for (int k = 0; k < nparts; k++) anybad |= bad[k], total += pnt[k];
  for (int64_t i = 0; i < n; i++) nzone += zone[i];
  int64_t *out = anybad ? NULL : malloc(sizeof *out * (size_t)(3 * (total ? total : 1)));
  if (!anybad && !out) {
    e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
    goto done;
  }
  if (!anybad) {
    for (int64_t k = 0, at = 0; k < nparts; k++) {
      if (pnt[k]) memcpy(out + 3 * at, pt[k], sizeof *out * 3 * (size_t)pnt[k]);
      at += pnt[k];
    }
    memset(zone, 0, (size_t)n); /* now: used */
    for (int64_t t = 0; t < 3 * total; t++) zone[out[t]] = 1;
    for (int64_t i = 0; i < n; i++) nused += zone[i];
    *complete = nused == n && total == 2 * n - 2 - h;
  }
  if (*complete) *tri = out, *nt = total;
  else free(out);
  mb_log(MB_LOG_VERBOSE,
         "delaunay: qhull on %d strips and the hull zone (margin %.3g, %lld points in the "
         "zone, %lld hull vertices): %lld triangles, %lld of %lld points used: %s",
         nstrips, margin, (long long)nzone, (long long)h, (long long)total, (long long)nused,
         (long long)n,
         *complete ? "complete"
         : anybad  ? "a part failed or had zero-area triangles"
                   : "incomplete");
done:
  for (int k = 0; pt && k < nparts; k++) free(pt[k]);
  free(hull), free(grid.start), free(grid.by_cell);
  free(zone), free(bound), free(pt), free(pnt), free(bad);
  return e;
}

/* Sort triangles (a, b, c), a the smallest, by (a, b, c) into out: a
 * counting sort on a, then an insertion sort of each (short) bucket. */
static mb_error sort_triangles(int64_t nv, int64_t nt, const int64_t *tri, int64_t *out) {
  int64_t *start = calloc((size_t)nv + 2, sizeof *start);
  MB_CHECK(start, MB_ERR_MEMORY, "out of memory sorting %lld triangles", (long long)nt);
  for (int64_t t = 0; t < nt; t++) start[tri[3 * t] + 2]++;
  for (int64_t v = 0; v < nv; v++) start[v + 2] += start[v + 1];
  for (int64_t t = 0; t < nt; t++) {
    int64_t *d = out + 3 * start[tri[3 * t] + 1]++;
    memcpy(d, tri + 3 * t, 3 * sizeof *d);
  }
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < nv; v++) {
    int64_t *row = out + 3 * start[v];
    int64_t n = start[v + 1] - start[v];
    for (int64_t i = 1; i < n; i++) {
      int64_t b = row[3 * i + 1], c = row[3 * i + 2], j = i;
      while (j > 0 && (row[3 * (j - 1) + 1] > b ||
                       (row[3 * (j - 1) + 1] == b && row[3 * (j - 1) + 2] > c))) {
        memcpy(row + 3 * j, row + 3 * (j - 1), 3 * sizeof *row);
        j--;
      }
      row[3 * j] = v;
      row[3 * j + 1] = b;
      row[3 * j + 2] = c;
    }
  }
  free(start);
  return MB_SUCCESS;
}

/* The position of cell (x, y) of a 2^21 x 2^21 grid along a Hilbert curve
 * (D. Hilbert, "Ueber die stetige Abbildung einer Linie auf ein
 * Flaechenstueck", Math. Ann. 38, 1891) that starts in cell (0, 0) and
 * ends in cell (2^21 - 1, 0): 42 bits, two a level from the coarsest.
 * At each level the quadrant, seen in the current sub-square's frame,
 * gives the digit, (0, 0) 0, (0, 1) 1, (1, 1) 2, (1, 0) 3; the first
 * quadrant's sub-curve is the transposed curve (swap x and y), the last
 * one's the anti-transposed (swap, then complement both), the middle two
 * are the curve itself. Consecutive cells along it share a side. */
static uint64_t hilbert_key(uint32_t x, uint32_t y) {
  uint64_t key = 0;
  uint32_t swap = 0, flip = 0;
  for (int b = 20; b >= 0; b--) {
    uint32_t bx = (x >> b) & 1u, by = (y >> b) & 1u;
    if (swap) {
      uint32_t t = bx;
      bx = by;
      by = t;
    }
    bx ^= flip;
    by ^= flip;
    uint32_t d = (bx << 1) | (bx ^ by);
    key = (key << 2) | d;
    if (d == 0) swap ^= 1u;
    else if (d == 3) swap ^= 1u, flip ^= 1u;
  }
  return key;
}

/* perm [n]: the points of p [n, 2] (in [0, 1)^2) in Hilbert-curve order
 * of 2^21 x 2^21 cells, ties (points in one cell) in index order: a
 * stable LSD radix sort of the 42-bit keys, 3 passes of 14 bits. */
static mb_error hilbert_order(int64_t n, const double *p, int64_t *perm) {
  uint64_t *key = malloc(sizeof *key * (size_t)n), *key2 = malloc(sizeof *key2 * (size_t)n);
  int64_t *perm2 = malloc(sizeof *perm2 * (size_t)n);
  int64_t *count = malloc(sizeof *count * ((size_t)1 << 14));
  if (!key || !key2 || !perm2 || !count) {
    free(key), free(key2), free(perm2), free(count);
    MB_FAIL(MB_ERR_MEMORY, "out of memory ordering %lld points", (long long)n);
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) {
    uint32_t x = (uint32_t)(p[2 * i] * 2097152.0), y = (uint32_t)(p[2 * i + 1] * 2097152.0);
    key[i] = hilbert_key(x, y);
    perm[i] = i;
  }
  for (int pass = 0; pass < 3; pass++) {
    int shift = 14 * pass;
    memset(count, 0, sizeof *count * ((size_t)1 << 14));
    for (int64_t i = 0; i < n; i++) count[(key[i] >> shift) & 0x3fff]++;
    int64_t sum = 0;
    for (int b = 0; b < (1 << 14); b++) {
      int64_t c = count[b];
      count[b] = sum;
      sum += c;
    }
    for (int64_t i = 0; i < n; i++) {
      int64_t d = count[(key[i] >> shift) & 0x3fff]++;
      key2[d] = key[i];
      perm2[d] = perm[i];
    }
    uint64_t *tk = key;
    key = key2, key2 = tk;
    memcpy(perm, perm2, sizeof *perm * (size_t)n);
  }
  free(key), free(key2), free(perm2), free(count);
  return MB_SUCCESS;
}

mb_error mb_generate_delaunay(int64_t npoints, uint64_t seed, int clustered, mb_mesh **out) {
  MB_CHECK(out, MB_ERR_ARG, "mb_generate_delaunay: NULL output");
  *out = NULL;
  MB_CHECK(npoints >= 3 && npoints <= INT_MAX, MB_ERR_ARG,
           "Delaunay point count must be in [3, %d] (got %lld)", INT_MAX, (long long)npoints);
  MB_CHECK(clustered == 0 || clustered == 1, MB_ERR_ARG,
           "distribution must be uniform (0) or clustered (1), got %d", clustered);
  double mem = physical_memory(), need = 1024.0 * (double)npoints;
  MB_CHECK(mem == 0 || need < mem, MB_ERR_MEMORY,
           "a Delaunay triangulation of %lld points needs about %.1f GB while qhull runs, "
           "more than this machine's %.1f GB",
           (long long)npoints, need / 1e9, mem / 1e9);
  double *pts = malloc(sizeof *pts * 2 * (size_t)npoints);
  MB_CHECK(pts, MB_ERR_MEMORY, "out of memory for %lld points", (long long)npoints);
  double t0 = mb_wtime();
  last_strips = 1;
  delaunay_points(npoints, seed, clustered, pts);
  /* The vertices are numbered along a Hilbert curve (sorted[k] =
   * pts[perm[k]]), and qhull gets them in that order. */
  int64_t *perm = malloc(sizeof *perm * (size_t)npoints);
  double *sorted = malloc(sizeof *sorted * 2 * (size_t)npoints);
  mb_error e = perm && sorted ? hilbert_order(npoints, pts, perm)
                              : mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                                             "out of memory for %lld points", (long long)npoints);
  if (!e) {
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < npoints; k++) {
      sorted[2 * k] = pts[2 * perm[k]];
      sorted[2 * k + 1] = pts[2 * perm[k] + 1];
    }
  }
  free(pts);
  free(perm);
  pts = sorted;
  int64_t *tri = NULL, nt = 0, ndeg = 0;
  /* qhull on strips at once where there are threads for it, the margin
   * doubled once if the strips' result is not the whole triangulation;
   * else (or then) qhull once on everything. */
  int nstrips = delaunay_strip_count(npoints), complete = 0;
  /* three times the radius of the largest empty circle expected among
   * uniform points at a tenth of the density (the clustered background) */
  double margin =
      3.0 * sqrt((log((double)npoints) + 1.0) / (3.141592653589793 * 0.1 * (double)npoints));
  for (int attempt = 0; !e && nstrips >= 2 && !complete && attempt < 2; attempt++, margin *= 2)
    e = delaunay_strips(npoints, pts, nstrips, margin, &tri, &nt, &complete);
  if (!e && !complete) e = delaunay_qhull(npoints, pts, NULL, &tri, &nt, &ndeg);
  last_strips = complete ? nstrips : 1;
  if (e) {
    free(pts);
    MB_CALL(e);
  }
  double t1 = mb_wtime();
  /* Points that are no triangle's vertex ('Qc': nearly coincident) go. */
  int64_t *newid = calloc((size_t)npoints, sizeof *newid), nv = 0;
  if (!newid) {
    free(pts);
    free(tri);
    MB_FAIL(MB_ERR_MEMORY, "out of memory");
  }
  for (int64_t k = 0; k < 3 * nt; k++) newid[tri[k]] = 1;
  for (int64_t i = 0; i < npoints; i++) newid[i] = newid[i] ? nv++ : -1;
  if (nv < npoints)
    for (int64_t k = 0; k < 3 * nt; k++) tri[k] = newid[tri[k]];
  char name[64];
  snprintf(name, sizeof name, "delaunay_%lld", (long long)npoints);
  mb_mesh *m = NULL;
  e = nt > 0 ? mb_mesh_create(name, nv, nt, 3 * nt, &m)
             : mb_error_set(MB_ERR_NUMERIC, __FILE__, __LINE__, __func__,
                            "qhull gave no triangle for %lld points", (long long)npoints);
  if (!e) e = sort_triangles(nv, nt, tri, m->face_indices);
  free(tri);
  if (e) {
    free(pts);
    free(newid);
    mb_mesh_free(m);
    MB_CALL(e);
  }
  m->kind = MB_KIND_TRIANGULATION2D;
  m->index = 0;
  for (int64_t i = 0; i < npoints; i++)
    if (newid[i] >= 0) {
      m->xyz[3 * newid[i]] = pts[2 * i];
      m->xyz[3 * newid[i] + 1] = pts[2 * i + 1];
      m->xyz[3 * newid[i] + 2] = 0.0;
    }
  for (int64_t f = 0; f <= nt; f++) m->face_offsets[f] = 3 * f;
  free(pts);
  free(newid);
  mb_log(MB_LOG_VERBOSE,
         "delaunay: %lld points (%s, seed %llu): %lld vertices, %lld triangles, %lld "
         "zero-area triangles dropped, %lld points not in the triangulation; qhull %.2f s, "
         "total %.2f s",
         (long long)npoints, clustered ? "clustered" : "uniform", (unsigned long long)seed,
         (long long)nv, (long long)nt, (long long)ndeg, (long long)(npoints - nv), t1 - t0,
         mb_wtime() - t0);
  *out = m;
  return MB_SUCCESS;
}

