/* mb_generate_subdivide, mb_generate_subdivide_to and mb_generate_unit_area:
 * counts, midpoints on the flat triangles (the area is kept), a conforming
 * and consistently oriented partial level, the unit-area normalisation (area 1,
 * area-weighted barycentre at the origin, a similarity of the input) and
 * its errors. The benchmark input of the solver ops is made with these
 * (docs/benchmarks.md, "Reference programs"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "mb_generate.h"
#include "mb_testutil.h"

/* Total area and area-weighted barycentre c[3]. */
static double area_and_barycentre(const mb_mesh *m, double c[3]) {
  double area = 0;
  c[0] = c[1] = c[2] = 0;
  for (int64_t f = 0; f < m->nf; f++) {
    const int64_t *v = m->face_indices + 3 * f;
    const double *p = m->xyz + 3 * v[0], *q = m->xyz + 3 * v[1], *r = m->xyz + 3 * v[2];
    double a[3] = {q[0] - p[0], q[1] - p[1], q[2] - p[2]};
    double b[3] = {r[0] - p[0], r[1] - p[1], r[2] - p[2]};
    double n[3] = {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                   a[0] * b[1] - a[1] * b[0]};
    double fa = 0.5 * sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    area += fa;
    for (int d = 0; d < 3; d++) c[d] += fa * (p[d] + q[d] + r[d]) / 3.0;
  }
  for (int d = 0; d < 3; d++) c[d] /= area;
  return area;
}

/* A tetrahedron off the origin, with unequal edges. */
static mb_mesh *tetrahedron(void) {
  const double xyz[] = {1, 2, 3, 4, 2.5, 3, 1.5, 5, 3.2, 2, 3, 7};
  const int64_t tri[] = {0, 2, 1, 0, 1, 3, 1, 2, 3, 0, 3, 2};
  return mb_test_mesh_triangles("tet", 4, xyz, 4, tri);
}

static void test_subdivide_counts_and_midpoints(void **state) {
  (void)state;
  mb_mesh *t = tetrahedron(), *s = NULL;
  double c0[3], c1[3];
  double a0 = area_and_barycentre(t, c0);
  assert_int_equal(mb_generate_subdivide(t, 2, &s), MB_SUCCESS);
  /* closed: V -> V + E, E -> 2E + 3F, F -> 4F: 4,6,4 -> 10,24,16 -> 34,96,64 */
  assert_int_equal(s->nv, 34);
  assert_int_equal(s->nf, 64);
  assert_true(mb_mesh_is_triangles(s));
  assert_int_equal(mb_mesh_validate(s, "subdivided"), MB_SUCCESS);
  /* the original vertices keep their indices and positions */
  for (int i = 0; i < 12; i++) assert_true(s->xyz[i] == t->xyz[i]);
  /* midpoints stay on the flat triangles: area and barycentre are kept */
  double a1 = area_and_barycentre(s, c1);
  if (fabs(a1 - a0) > 1e-13 * a0) fail_msg("area %.17g after subdivision, %.17g before", a1, a0);
  for (int d = 0; d < 3; d++)
    if (fabs(c1[d] - c0[d]) > 1e-13) fail_msg("barycentre moved along %d: %g", d, c1[d] - c0[d]);
  /* level 0 copies */
  mb_mesh *z = NULL;
  assert_int_equal(mb_generate_subdivide(t, 0, &z), MB_SUCCESS);
  mb_test_assert_same_geometry(t, z);
  mb_mesh_free(z);
  mb_mesh_free(s);
  mb_mesh_free(t);
}

/* Every undirected edge of a closed mesh in exactly two triangles, once in
 * each direction (conforming and consistently oriented). */
static void assert_closed_oriented(const mb_mesh *m) {
  int64_t n = 3 * m->nf;
  int64_t *e = malloc(sizeof *e * (size_t)(2 * n));
  assert_non_null(e);
  for (int64_t f = 0; f < m->nf; f++)
    for (int t = 0; t < 3; t++) {
      e[2 * (3 * f + t)] = m->face_indices[3 * f + t];
      e[2 * (3 * f + t) + 1] = m->face_indices[3 * f + (t + 1) % 3];
    }
  for (int64_t i = 0; i < n; i++) {
    int64_t a = e[2 * i], b = e[2 * i + 1], twins = 0, same = 0;
    for (int64_t j = 0; j < n; j++) {
      twins += e[2 * j] == b && e[2 * j + 1] == a;
      same += e[2 * j] == a && e[2 * j + 1] == b;
    }
    if (twins != 1 || same != 1)
      fail_msg("edge %lld-%lld: %lld opposite, %lld same direction", (long long)a, (long long)b,
               (long long)twins, (long long)same);
  }
  free(e);
}

static void test_subdivide_to_vertex_count(void **state) {
  (void)state;
  mb_mesh *t = tetrahedron();
  double c0[3], c1[3], a0 = area_and_barycentre(t, c0);
  /* 4 -> 10 (one whole level, 24 edges) -> 10 + 13 longest = 23 */
  for (int64_t target = 4; target <= 40; target++) {
    mb_mesh *s = NULL;
    int whole = -1;
    assert_int_equal(mb_generate_subdivide_to(t, target, &whole, &s), MB_SUCCESS);
    if (s->nv != target) fail_msg("asked %lld vertices, got %lld", (long long)target, (long long)s->nv);
    assert_int_equal(whole, target < 10 ? 0 : target < 34 ? 1 : 2);
    assert_int_equal(mb_mesh_validate(s, "refined"), MB_SUCCESS);
    assert_closed_oriented(s);
    /* Euler: a closed genus-0 mesh has F = 2 V - 4 */
    assert_int_equal(s->nf, 2 * s->nv - 4);
    double a1 = area_and_barycentre(s, c1);
    if (fabs(a1 - a0) > 1e-13 * a0) fail_msg("target %lld: area %.17g, was %.17g",
                                             (long long)target, a1, a0);
    /* each new vertex is the midpoint of two earlier ones: it lies on a face */
    mb_mesh_free(s);
  }
  /* a whole level gives the same mesh as mb_generate_subdivide */
  mb_mesh *x = NULL, *y = NULL;
  assert_int_equal(mb_generate_subdivide_to(t, 34, NULL, &x), MB_SUCCESS);
  assert_int_equal(mb_generate_subdivide(t, 2, &y), MB_SUCCESS);
  mb_test_assert_same_geometry(x, y);
  mb_mesh_free(x);
  mb_mesh_free(y);
  /* the longest edge goes first: one split on the tetrahedron */
  assert_int_equal(mb_generate_subdivide_to(t, 5, NULL, &x), MB_SUCCESS);
  double best = 0;
  int64_t bi = -1, bj = -1;
  for (int64_t i = 0; i < 4; i++)
    for (int64_t j = i + 1; j < 4; j++) {
      double l2 = 0;
      for (int d = 0; d < 3; d++)
        l2 += (t->xyz[3 * j + d] - t->xyz[3 * i + d]) * (t->xyz[3 * j + d] - t->xyz[3 * i + d]);
      if (l2 > best) best = l2, bi = i, bj = j;
    }
  for (int d = 0; d < 3; d++)
    assert_true(x->xyz[12 + d] == 0.5 * (t->xyz[3 * bi + d] + t->xyz[3 * bj + d]));
  mb_mesh_free(x);
  /* errors */
  assert_int_equal(mb_generate_subdivide_to(t, 3, NULL, &x), MB_ERR_ARG);
  mb_test_assert_message_contains("target vertex count 3");
  mb_mesh_free(t);
}

static void test_unit_area(void **state) {
  (void)state;
  mb_mesh *t = tetrahedron(), *s = NULL;
  assert_int_equal(mb_generate_subdivide(t, 1, &s), MB_SUCCESS);
  mb_mesh *before = NULL;
  assert_int_equal(mb_mesh_duplicate(s, &before), MB_SUCCESS);
  double c0[3], c1[3], a0 = area_and_barycentre(s, c0), area = 0;
  assert_int_equal(mb_generate_unit_area(s, &area), MB_SUCCESS);
  if (fabs(area - a0) > 1e-14 * a0) fail_msg("reported area %.17g, expected %.17g", area, a0);
  double a1 = area_and_barycentre(s, c1);
  if (fabs(a1 - 1.0) > 1e-14) fail_msg("area after scaling: %.17g", a1);
  for (int d = 0; d < 3; d++)
    if (fabs(c1[d]) > 1e-14) fail_msg("barycentre not at the origin: %g along %d", c1[d], d);
  /* a similarity: x' = (x - c0) / sqrt(a0) for every vertex */
  double k = 1.0 / sqrt(a0);
  for (int64_t i = 0; i < s->nv; i++)
    for (int d = 0; d < 3; d++) {
      double want = (before->xyz[3 * i + d] - c0[d]) * k;
      if (fabs(s->xyz[3 * i + d] - want) > 1e-14)
        fail_msg("vertex %lld: %.17g, expected %.17g", (long long)i, s->xyz[3 * i + d], want);
    }
  /* normalising twice changes (almost) nothing */
  assert_int_equal(mb_generate_unit_area(s, &area), MB_SUCCESS);
  if (fabs(area - 1.0) > 1e-14) fail_msg("second pass found area %.17g", area);
  mb_mesh_free(before);
  mb_mesh_free(s);
  mb_mesh_free(t);
}

static void test_unit_area_errors(void **state) {
  (void)state;
  /* zero area: every vertex at one point */
  const double xyz[] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  const int64_t tri[] = {0, 1, 2};
  mb_mesh *m = mb_test_mesh_triangles("flat", 3, xyz, 1, tri);
  assert_int_equal(mb_generate_unit_area(m, NULL), MB_ERR_NUMERIC);
  mb_test_assert_message_contains("surface area is 0");
  mb_mesh_free(m);
  /* NaN coordinates */
  const double nan_xyz[] = {0, 0, 0, 1, 0, 0, 0, NAN, 0};
  m = mb_test_mesh_triangles("nan", 3, nan_xyz, 1, tri);
  assert_int_equal(mb_generate_unit_area(m, NULL), MB_ERR_NUMERIC);
  mb_mesh_free(m);
  /* a planar kind is refused */
  mb_mesh *g = NULL;
  assert_int_equal(mb_generate_grid2d(9, &g), MB_SUCCESS);
  assert_int_equal(mb_generate_unit_area(g, NULL), MB_ERR_ARG);
  mb_test_assert_message_contains("needs a triangle surface");
  mb_mesh_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_subdivide_counts_and_midpoints),
      cmocka_unit_test(test_subdivide_to_vertex_count),
      cmocka_unit_test(test_unit_area),
      cmocka_unit_test(test_unit_area_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
