/* Polylla CPU backend on hand-built triangulations whose terminal-edge
 * regions are known: the exact polygons, in canonical order, and the
 * figures. Every output also passes the independent checker. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_testutil.h"
#include "polylla_check.h"

/* Assert that poly holds exactly the polygons want[i] (each n[i]
 * vertices), in this order, each starting at the listed vertex. */
static void assert_polygons(const mb_mesh *poly, int np, const int64_t *const *want,
                            const int64_t *n) {
  char buf[256];
  assert_int_equal(poly->nf, np);
  for (int p = 0; p < np; p++) {
    int64_t o = poly->face_offsets[p], k = poly->face_offsets[p + 1] - o;
    if (k != n[p] || memcmp(poly->face_indices + o, want[p], sizeof(int64_t) * (size_t)k))
      fail_msg("polygon %d is (%s), expected %lld vertices starting (%lld ...)", p,
               polylla_polygon_str(poly, p, buf, sizeof buf), (long long)n[p],
               (long long)want[p][0]);
  }
}

static long long attr(const mb_mesh *m, const char *key) {
  const char *s = mb_attrs_get(&m->attrs, key);
  assert_non_null(s);
  return strtoll(s, NULL, 10);
}

/* One triangle: one polygon, three frontier edges. */
static void test_single_triangle(void **state) {
  (void)state;
  const double xy[] = {0, 0, 1, 0, 0, 1};
  const int64_t tri[] = {0, 1, 2};
  mb_mesh *m = polylla_test_mesh("one", 3, xy, 1, tri);
  m->index = 7;
  mb_polylla_stats st;
  mb_mesh *p = polylla_run_checked(m, &st);
  const int64_t p0[] = {0, 1, 2}, *want[] = {p0}, n[] = {3};
  assert_polygons(p, 1, want, n);
  assert_int_equal(p->index, 7);
  assert_string_equal(p->name, "one");
  assert_int_equal(st.triangles, 1);
  assert_int_equal(st.polygons, 1);
  assert_int_equal(st.frontier_edges, 3);
  assert_int_equal(st.barrier_edge_tips, 0);
  assert_int_equal(st.polygons_repaired, 0);
  assert_true(st.ms_total >= st.ms_label);
  assert_int_equal(attr(p, "polygons"), 1);
  assert_int_equal(attr(p, "frontier_edges"), 3);
  mb_mesh_free(p);
  mb_mesh_free(m);
}

/* A square split by its diagonal: the diagonal is the longest edge of both
 * triangles (a terminal edge), so the square is one polygon. */
static void test_terminal_edge_square(void **state) {
  (void)state;
  const double xy[] = {0, 0, 1, 0, 1, 1, 0, 1};
  const int64_t tri[] = {0, 1, 2, 0, 2, 3};
  mb_mesh *m = polylla_test_mesh("square", 4, xy, 2, tri);
  mb_polylla_stats st;
  mb_mesh *p = polylla_run_checked(m, &st);
  const int64_t p0[] = {0, 1, 2, 3}, *want[] = {p0}, n[] = {4};
  assert_polygons(p, 1, want, n);
  assert_int_equal(st.frontier_edges, 4);
  mb_mesh_free(p);
  mb_mesh_free(m);
}

/* Two triangles sharing their shortest edge: a frontier edge, two
 * polygons. Triangle 1 is given clockwise. */
static void test_two_regions(void **state) {
  (void)state;
  const double xy[] = {0, 0, 0, 1, -3, 0.5, 3, 0.5};
  const int64_t tri[] = {0, 3, 1, 0, 2, 1};
  mb_mesh *m = polylla_test_mesh("kite", 4, xy, 2, tri);
  mb_polylla_stats st;
  mb_mesh *p = polylla_run_checked(m, &st);
  /* triangle 1 oriented: (0, 1, 2) */
  const int64_t p0[] = {0, 3, 1}, p1[] = {0, 1, 2}, *want[] = {p0, p1}, n[] = {3, 3};
  assert_polygons(p, 2, want, n);
  assert_int_equal(st.frontier_edges, 5);
  mb_mesh_free(p);
  mb_mesh_free(m);
}

/* Ties: isosceles triangles whose two longest edges have equal squared
 * length (integer coordinates, exact). The key (length, max vertex, min
 * vertex) decides, so renumbering changes the regions. Strip:
 *   t0 (1,2)   t1 (3,2)
 *  b0 (0,0)  b1 (2,0)  b2 (4,0)
 * triangles (b0 b1 t0), (b1 t1 t0), (b1 b2 t1): every slanted edge has
 * squared length 5, the horizontal ones 4. */
static void test_ties_by_vertex_index(void **state) {
  (void)state;
  /* numbering A: b0=0 b1=1 b2=2 t0=3 t1=4.
   * t0: (1,3) beats (0,3); t1: (1,4) beats (1,3); t2: (2,4) beats (1,4).
   * (1,3) and (1,4) are longest edges, so internal: one polygon. */
  {
    const double xy[] = {0, 0, 2, 0, 4, 0, 1, 2, 3, 2};
    const int64_t tri[] = {0, 1, 3, 1, 4, 3, 1, 2, 4};
    mb_mesh *m = polylla_test_mesh("ties_a", 5, xy, 3, tri);
    mb_mesh *p = polylla_run_checked(m, NULL);
    const int64_t p0[] = {0, 1, 2, 4, 3}, *want[] = {p0}, n[] = {5};
    assert_polygons(p, 1, want, n);
    mb_mesh_free(p);
    mb_mesh_free(m);
  }
  /* numbering B: b0=1 b1=0 (swapped). t0 (1 0 3): (1,3) beats (0,3), and
   * (1,3) is on the boundary; t1 (0 4 3): (0,4) beats (0,3); so (0,3) is
   * the longest edge of neither: frontier. t2 (0 2 4): (2,4) beats (0,4),
   * (0,4) stays internal (longest of t1). Polygons: t0, and t1 + t2,
   * whose head is half-edge 4 (4 -> 3 of t1). */
  {
    const double xy[] = {2, 0, 0, 0, 4, 0, 1, 2, 3, 2};
    const int64_t tri[] = {1, 0, 3, 0, 4, 3, 0, 2, 4};
    mb_mesh *m = polylla_test_mesh("ties_b", 5, xy, 3, tri);
    mb_mesh *p = polylla_run_checked(m, NULL);
    const int64_t p0[] = {1, 0, 3}, p1[] = {4, 3, 0, 2}, *want[] = {p0, p1}, n[] = {3, 4};
    assert_polygons(p, 2, want, n);
    mb_mesh_free(p);
    mb_mesh_free(m);
  }
}

/* n x n vertices of the unit grid, each square split by the diagonal
 * (i,j)-(i+1,j+1); squares whose lower-left corner is in `skip` are left
 * out (holes). */
static mb_mesh *grid_mesh(const char *name, int n, const int *skip, int nskip) {
  double *xy = malloc(sizeof *xy * 2 * (size_t)(n * n));
  int64_t *tri = malloc(sizeof *tri * 6 * (size_t)((n - 1) * (n - 1)));
  for (int j = 0; j < n; j++)
    for (int i = 0; i < n; i++) {
      xy[2 * (j * n + i)] = i;
      xy[2 * (j * n + i) + 1] = j;
    }
  int64_t nf = 0;
  for (int j = 0; j + 1 < n; j++)
    for (int i = 0; i + 1 < n; i++) {
      int skipped = 0;
      for (int s = 0; s < nskip; s++)
        if (skip[2 * s] == i && skip[2 * s + 1] == j) skipped = 1;
      if (skipped) continue;
      int64_t v00 = j * n + i, v10 = v00 + 1, v01 = v00 + n, v11 = v01 + 1;
      int64_t *t = tri + 3 * nf;
      t[0] = v00, t[1] = v10, t[2] = v11, t[3] = v00, t[4] = v11, t[5] = v01;
      nf += 2;
    }
  mb_mesh *m = polylla_test_mesh(name, (int64_t)n * n, xy, nf, tri);
  free(xy);
  free(tri);
  return m;
}

/* Right isosceles grid: legs of equal length, the diagonal longest, so
 * each square is one terminal-edge region: the polygons are the squares,
 * in row-major order (the head of each is its first triangle's first
 * half-edge). */
static void test_right_isosceles_grid(void **state) {
  (void)state;
  const int n = 6;
  mb_mesh *m = grid_mesh("grid", n, NULL, 0);
  mb_polylla_stats st;
  mb_mesh *p = polylla_run_checked(m, &st);
  assert_int_equal(p->nf, (n - 1) * (n - 1));
  for (int j = 0, q = 0; j + 1 < n; j++)
    for (int i = 0; i + 1 < n; i++, q++) {
      int64_t v00 = j * n + i, sq[4] = {v00, v00 + 1, v00 + n + 1, v00 + n};
      assert_int_equal(p->face_offsets[q + 1] - p->face_offsets[q], 4);
      assert_memory_equal(p->face_indices + p->face_offsets[q], sq, sizeof sq);
    }
  assert_int_equal(st.barrier_edge_tips, 0);
  /* all grid edges are frontier, no diagonal */
  assert_int_equal(st.frontier_edges, 2 * n * (n - 1));
  mb_mesh_free(p);
  mb_mesh_free(m);
}

/* A hole (the middle square of a 4 x 4 grid left out) and a second
 * component (a separate triangle): the eight squares and the triangle. */
static void test_hole_and_components(void **state) {
  (void)state;
  const int skip[] = {1, 1};
  mb_mesh *g = grid_mesh("holes", 4, skip, 1);
  /* append a far triangle as a second component */
  mb_mesh *m = NULL;
  assert_int_equal(mb_mesh_create("holes", g->nv + 3, g->nf + 1, 3 * (g->nf + 1), &m), MB_SUCCESS);
  m->kind = MB_KIND_TRIANGULATION2D;
  memcpy(m->xyz, g->xyz, sizeof(double) * 3 * (size_t)g->nv);
  const double far[] = {10, 10, 12, 10, 11, 11};
  for (int k = 0; k < 3; k++) {
    m->xyz[3 * (g->nv + k)] = far[2 * k];
    m->xyz[3 * (g->nv + k) + 1] = far[2 * k + 1];
  }
  memcpy(m->face_indices, g->face_indices, sizeof(int64_t) * 3 * (size_t)g->nf);
  for (int k = 0; k < 3; k++) m->face_indices[3 * g->nf + k] = g->nv + k;
  for (int64_t f = 0; f <= m->nf; f++) m->face_offsets[f] = 3 * f;
  mb_mesh_free(g);

  mb_polylla_stats st;
  mb_mesh *p = polylla_run_checked(m, &st);
  assert_int_equal(p->nf, 9);
  for (int j = 0; j < 3; j++)
    for (int i = 0; i < 3; i++) {
      if (i == 1 && j == 1) continue;
      int64_t v00 = j * 4 + i, sq[4] = {v00, v00 + 1, v00 + 5, v00 + 4};
      assert_true(polylla_find_polygon(p, sq, 4) >= 0);
    }
  const int64_t last[] = {16, 17, 18};
  assert_int_equal(polylla_find_polygon(p, last, 3), 8);
  mb_mesh_free(p);
  mb_mesh_free(m);
}

/* The fan of a barrier-edge tip: centre v = 0, rim p_i = i + 1 at angle
 * 45 i degrees and radius 1 + 0.05 i, triangles T_i = (v, p_i, p_i+1).
 * The longest edge of T_i is the spoke v p_{i+1} (T_7: v p_7), so spokes
 * 1..7 are internal, spoke v p_0 is the only frontier edge at v: a tip.
 * Clockwise from e0 = v->p0: e1 = v->p7, ..., k = 7 internal edges,
 * m = 4: the middle edge is v p_4 (vertex 5). */
static mb_mesh *tip_fan(const char *name, int head_is_arriving) {
  double xy[18];
  xy[0] = xy[1] = 0;
  for (int i = 0; i < 8; i++) {
    double r = 1 + 0.05 * i, a = 2 * acos(-1.0) * i / 8;
    xy[2 * (i + 1)] = r * cos(a);
    xy[2 * (i + 1) + 1] = r * sin(a);
  }
  int64_t tri[24];
  for (int i = 0; i < 8; i++) {
    /* with head_is_arriving, T_7 comes first as (p0, v, p7): half-edge 0 is
     * p0 -> v, the barrier half-edge pointing to the tip */
    int t = head_is_arriving ? (i + 1) % 8 : i;
    tri[3 * t] = 0, tri[3 * t + 1] = i + 1, tri[3 * t + 2] = (i + 1) % 8 + 1;
  }
  if (head_is_arriving) tri[0] = 1, tri[1] = 0, tri[2] = 8;
  return polylla_test_mesh(name, 9, xy, 8, tri);
}

static void test_barrier_tip(void **state) {
  (void)state;
  mb_mesh *m = tip_fan("tip", 0);
  mb_polylla_stats st;
  mb_mesh *p = polylla_run_checked(m, &st);
  /* head of the label-phase cycle: half-edge 0 = v -> p0, leaving the tip */
  const int64_t a[] = {0, 1, 2, 3, 4, 5}, b[] = {0, 5, 6, 7, 8, 1}, *want[] = {a, b},
                n[] = {6, 6};
  assert_polygons(p, 2, want, n);
  assert_int_equal(st.barrier_edge_tips, 1);
  assert_int_equal(st.polygons_repaired, 1);
  assert_int_equal(st.frontier_edges, 10);
  assert_int_equal(attr(p, "barrier_edge_tips"), 1);
  assert_int_equal(attr(p, "polygons_repaired"), 1);
  mb_mesh_free(p);
  mb_mesh_free(m);
}

/* The same fan numbered so that half-edge 0, the head of the label-phase
 * cycle, is p0 -> v: the barrier half-edge pointing to the tip, whose
 * successor is its own twin. A tip search that walks the polygon from its
 * first half-edge and only looks at the following ones misses this tip
 * (the reference CPU code does); the all-at-once rule does not. */
static void test_barrier_tip_at_head(void **state) {
  (void)state;
  mb_mesh *m = tip_fan("tip_head", 1);
  assert_int_equal(m->face_indices[0], 1);
  assert_int_equal(m->face_indices[1], 0);
  mb_polylla_stats st;
  mb_mesh *p = polylla_run_checked(m, &st);
  /* B holds half-edge 0 (p0 -> v), so it comes first and starts at p0 */
  const int64_t b[] = {1, 0, 5, 6, 7, 8}, a[] = {0, 1, 2, 3, 4, 5}, *want[] = {b, a},
                n[] = {6, 6};
  assert_polygons(p, 2, want, n);
  assert_int_equal(st.barrier_edge_tips, 1);
  assert_int_equal(st.polygons_repaired, 1);
  mb_mesh_free(p);
  mb_mesh_free(m);
}

/* Two tips: the fan and its mirror image (given clockwise), as two
 * components; each is repaired on its own. */
static void test_two_tips(void **state) {
  (void)state;
  mb_mesh *f = tip_fan("f", 0);
  mb_mesh *m = NULL;
  assert_int_equal(mb_mesh_create("two", 18, 16, 48, &m), MB_SUCCESS);
  m->kind = MB_KIND_TRIANGULATION2D;
  for (int v = 0; v < 9; v++) {
    m->xyz[3 * v] = f->xyz[3 * v];
    m->xyz[3 * v + 1] = f->xyz[3 * v + 1];
    m->xyz[3 * (v + 9)] = 5 - f->xyz[3 * v];
    m->xyz[3 * (v + 9) + 1] = f->xyz[3 * v + 1];
  }
  for (int k = 0; k < 24; k++) {
    m->face_indices[k] = f->face_indices[k];
    m->face_indices[24 + k] = f->face_indices[k] + 9; /* mirrored: clockwise */
  }
  for (int t = 0; t <= 16; t++) m->face_offsets[t] = 3 * t;
  mb_polylla_stats st;
  mb_mesh *p = polylla_run_checked(m, &st);
  assert_int_equal(st.barrier_edge_tips, 2);
  assert_int_equal(st.polygons_repaired, 2);
  assert_int_equal(p->nf, 4);
  mb_mesh_free(p);
  mb_mesh_free(m);
  mb_mesh_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_single_triangle),
      cmocka_unit_test(test_terminal_edge_square),
      cmocka_unit_test(test_two_regions),
      cmocka_unit_test(test_ties_by_vertex_index),
      cmocka_unit_test(test_right_isosceles_grid),
      cmocka_unit_test(test_hole_and_components),
      cmocka_unit_test(test_barrier_tip),
      cmocka_unit_test(test_barrier_tip_at_head),
      cmocka_unit_test(test_two_tips),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
