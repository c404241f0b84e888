/* Polylla CPU backend: the inputs it refuses, with the error code and a
 * message naming the problem (the triangle, 0-based). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mb_testutil.h"
#include "polylla_check.h"

static void expect_error(const mb_mesh *m, mb_error code, const char *needle) {
  mb_mesh *p = (mb_mesh *)0x1;
  mb_error e = mb_polylla_cpu(m, NULL, &p, NULL);
  if (e != code)
    fail_msg("expected %s, got %s: %s", mb_error_name(code), mb_error_name(e),
             mb_error_message());
  assert_null(p);
  mb_test_assert_message_contains(needle);
}

/* Triangle 2 has three collinear vertices. */
static void test_collinear(void **state) {
  (void)state;
  const double xy[] = {0, 0, 1, 0, 0, 1, 2, 0, 3, 0};
  const int64_t tri[] = {0, 1, 2, 1, 3, 2, 0, 3, 4};
  mb_mesh *m = polylla_test_mesh("flat", 5, xy, 3, tri);
  expect_error(m, MB_ERR_FORMAT, "triangle 2 (0-based) is degenerate");
  mb_mesh_free(m);
}

/* Triangle 1 repeats a vertex. */
static void test_repeated_vertex(void **state) {
  (void)state;
  const double xy[] = {0, 0, 1, 0, 0, 1};
  const int64_t tri[] = {0, 1, 2, 1, 1, 2};
  mb_mesh *m = polylla_test_mesh("rep", 3, xy, 2, tri);
  expect_error(m, MB_ERR_FORMAT, "triangle 1 (0-based) is degenerate");
  mb_mesh_free(m);
}

/* Edge (0, 1) is shared by three triangles (1, 2 and 3). */
static void test_non_manifold_edge(void **state) {
  (void)state;
  const double xy[] = {0, 0, 1, 0, 0.5, 1, 0.5, -1, 0.5, 2, 5, 5, 6, 5, 5, 6};
  const int64_t tri[] = {5, 6, 7, 0, 1, 2, 1, 0, 3, 0, 1, 4};
  mb_mesh *m = polylla_test_mesh("nm", 8, xy, 4, tri);
  expect_error(m, MB_ERR_FORMAT, "triangle 1 (0-based): edge (0, 1) is shared by 3 triangles");
  mb_mesh_free(m);
}

/* Two triangles on the same side of edge (0, 1): they overlap. */
static void test_overlap(void **state) {
  (void)state;
  const double xy[] = {0, 0, 1, 0, 0.5, 1, 0.5, 2};
  const int64_t tri[] = {0, 1, 2, 0, 1, 3};
  mb_mesh *m = polylla_test_mesh("overlap", 4, xy, 2, tri);
  expect_error(m, MB_ERR_FORMAT, "the same direction");
  mb_mesh_free(m);
}

/* A quad among the faces: not a triangulation. */
static void test_not_triangles(void **state) {
  (void)state;
  mb_mesh *m = NULL;
  assert_int_equal(mb_mesh_create("quad", 5, 2, 7, &m), MB_SUCCESS);
  m->kind = MB_KIND_TRIANGULATION2D;
  const double xy[] = {0, 0, 1, 0, 1, 1, 0, 1, 2, 0};
  for (int v = 0; v < 5; v++) m->xyz[3 * v] = xy[2 * v], m->xyz[3 * v + 1] = xy[2 * v + 1];
  const int64_t idx[] = {1, 4, 2, 0, 1, 2, 3};
  memcpy(m->face_indices, idx, sizeof idx);
  m->face_offsets[1] = 3;
  m->face_offsets[2] = 7;
  expect_error(m, MB_ERR_ARG, "face 1 (0-based) has 4 vertices");
  mb_mesh_free(m);
}

/* A surface mesh (even of triangles) or a polygon mesh is not taken. */
static void test_wrong_kind(void **state) {
  (void)state;
  const double xy[] = {0, 0, 1, 0, 0, 1};
  const int64_t tri[] = {0, 1, 2};
  mb_mesh *m = polylla_test_mesh("k", 3, xy, 1, tri);
  m->kind = MB_KIND_SURFACE;
  expect_error(m, MB_ERR_ARG, "needs a triangulation2d");
  m->kind = MB_KIND_POLYGONS2D;
  expect_error(m, MB_ERR_ARG, "needs a triangulation2d");
  mb_mesh_free(m);
}

/* Index out of range, non-finite coordinate, no triangles, NULL. */
static void test_bad_values(void **state) {
  (void)state;
  const double xy[] = {0, 0, 1, 0, 0, 1};
  const int64_t tri[] = {0, 1, 2, 0, 2, 3};
  mb_mesh *m = polylla_test_mesh("range", 3, xy, 2, tri);
  expect_error(m, MB_ERR_FORMAT, "triangle 1 (0-based) has a vertex index out of range");
  m->nf = 1;
  m->xyz[3] = NAN;
  expect_error(m, MB_ERR_FORMAT, "triangle 0 (0-based) has a vertex with a non-finite");
  m->nf = 0;
  expect_error(m, MB_ERR_ARG, "no triangles");
  m->nf = 2;
  mb_mesh_free(m);
  mb_mesh *p = NULL;
  assert_int_equal(mb_polylla_cpu(NULL, NULL, &p, NULL), MB_ERR_ARG);
}

/* Twelve triangles round a vertex (points of the circle x^2 + y^2 = 25,
 * every spoke of squared length 25, every rim shorter) after one outer
 * triangle: each fan triangle has two equally long longest edges. Under
 * ties: corners each takes its first spoke, and the spokes join the fan
 * in a cycle with no terminal edge: refused, naming its smallest triangle
 * (1), on an input that ties: key meshes. */
static void test_tie_cycle(void **state) {
  (void)state;
  const double xy[] = {5, 0,  4,  3,  3,  4,  0,  5,  -3, 4,  -4, 3, -5, 0,
                       -4, -3, -3, -4, 0, -5, 3, -4, 4, -3, 0, 0, 9, 4};
  int64_t tri[3 * 13] = {1, 0, 13};
  for (int i = 0; i < 12; i++) {
    tri[3 * (i + 1)] = 12;
    tri[3 * (i + 1) + 1] = i;
    tri[3 * (i + 1) + 2] = (i + 1) % 12;
  }
  mb_mesh *m = polylla_test_mesh("fan", 14, xy, 13, tri);
  mb_mesh *p = (mb_mesh *)0x1;
  const mb_polylla_opts corners = {.ties = MB_POLYLLA_TIES_CORNERS};
  assert_int_equal(mb_polylla_cpu(m, &corners, &p, NULL), MB_ERR_FORMAT);
  assert_null(p);
  mb_test_assert_message_contains("triangle 1 (0-based) and its neighbours form a cycle");
  mb_test_assert_message_contains("use ties: key");
  p = polylla_run_checked(m, NULL);
  mb_mesh_free(p);
  mb_mesh_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_collinear),        cmocka_unit_test(test_repeated_vertex),
      cmocka_unit_test(test_non_manifold_edge), cmocka_unit_test(test_overlap),
      cmocka_unit_test(test_not_triangles),    cmocka_unit_test(test_wrong_kind),
      cmocka_unit_test(test_bad_values),       cmocka_unit_test(test_tie_cycle),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
