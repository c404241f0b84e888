/* Polylla CPU backend's memory paths: the half-edges of faces stored in
 * another numbering (mb_halfedge_build_mapped, a rank's rows by their
 * global ids) equal those of the renumbered faces, an id with no number
 * is refused naming the triangle, and the output shares its input's
 * positions where asked (mb_polylla_opts.share_xyz), on a whole
 * triangulation and on rows with ids, with the same polygons as a copy. */
#include <stdlib.h>
#include <string.h>

#include "mb_halfedge.h"
#include "mb_testutil.h"
#include "polylla_check.h"

/* A 4 x 4 vertex grid, each square cut by a diagonal: 18 triangles. */
static mb_mesh *grid(void) {
  double xy[32];
  int64_t tri[54];
  for (int j = 0; j < 4; j++)
    for (int i = 0; i < 4; i++) {
      xy[2 * (4 * j + i)] = i + 0.1 * (j % 2);
      xy[2 * (4 * j + i) + 1] = j;
    }
  int nt = 0;
  for (int j = 0; j < 3; j++)
    for (int i = 0; i < 3; i++) {
      const int64_t a = 4 * j + i, b = a + 1, c = a + 4, d = a + 5;
      tri[3 * nt] = a, tri[3 * nt + 1] = b, tri[3 * nt + 2] = d, nt++;
      tri[3 * nt] = a, tri[3 * nt + 1] = d, tri[3 * nt + 2] = c, nt++;
    }
  return polylla_test_mesh("grid", 16, xy, nt, tri);
}

/* Global id g = 1000 + 7 v for vertex v; the map back (-1 off the grid),
 * and vertex v's position from the mesh ctx. */
static int64_t unmap(const void *ctx, int64_t g) {
  (void)ctx;
  return g >= 1000 && (g - 1000) % 7 == 0 && (g - 1000) / 7 < 16 ? (g - 1000) / 7 : -1;
}
static const double *point(const void *ctx, int64_t v) {
  return ((const mb_mesh *)ctx)->xyz + 3 * v;
}

static void test_mapped_build(void **state) {
  (void)state;
  mb_mesh *m = grid(), *g = grid();
  for (int64_t k = 0; k < 3 * g->nf; k++) g->face_indices[k] = 1000 + 7 * g->face_indices[k];
  mb_halfedge a = {0}, b = {0};
  const mb_halfedge_map map = {unmap, point, m, m->nv};
  for (int64_t i = 0; i < 3 * g->nv; i++) g->xyz[i] = -1; /* not read through the map */
  assert_int_equal(mb_halfedge_build(m, &a), MB_SUCCESS);
  assert_int_equal(mb_halfedge_build_mapped(g, &map, &b), MB_SUCCESS);
  assert_int_equal(a.nt, b.nt);
  assert_int_equal(a.nv, b.nv);
  assert_memory_equal(a.vert, b.vert, sizeof(int32_t) * 3 * (size_t)a.nt);
  assert_memory_equal(a.twin, b.twin, sizeof(int32_t) * 3 * (size_t)a.nt);
  mb_halfedge_free(&b);
  /* an id with no number: out of range, the triangle named with its ids */
  g->face_indices[3 * 5 + 1] = 1001;
  assert_int_equal(mb_halfedge_build_mapped(g, &map, &b), MB_ERR_FORMAT);
  mb_test_assert_message_contains("triangle 5 (0-based) has a vertex index out of range");
  mb_test_assert_message_contains("1001");
  assert_null(b.vert);
  mb_error_clear();
  /* a degenerate triangle: its own ids named, the positions by their numbers */
  g->face_indices[3 * 5 + 1] = 1000 + 7 * 1;
  g->face_indices[3 * 5 + 2] = 1000 + 7 * 1;
  assert_int_equal(mb_halfedge_build_mapped(g, &map, &b), MB_ERR_FORMAT);
  mb_test_assert_message_contains("triangle 5 (0-based) is degenerate");
  mb_test_assert_message_contains("1007 (1, 0)");
  mb_error_clear();
  mb_halfedge_free(&a);
  mb_mesh_free(m);
  mb_mesh_free(g);
}

/* The same polygons with and without share_xyz; shared: the input's array. */
static void check_share(const mb_polylla_ids *ids) {
  mb_mesh *m = grid();
  mb_mesh *pc = NULL, *ps = NULL;
  mb_polylla_opts o = {0};
  o.ids = ids;
  assert_int_equal(mb_polylla_cpu(m, &o, &pc, NULL), MB_SUCCESS);
  o.share_xyz = 1;
  assert_int_equal(mb_polylla_cpu(m, &o, &ps, NULL), MB_SUCCESS);
  assert_true(pc->xyz != m->xyz);
  assert_true(ps->xyz == m->xyz);
  assert_int_equal(pc->nv, m->nv);
  assert_int_equal(ps->nv, m->nv);
  assert_memory_equal(pc->xyz, m->xyz, sizeof(double) * 3 * (size_t)m->nv);
  assert_int_equal(pc->nf, ps->nf);
  assert_true(pc->nf > 0);
  assert_memory_equal(pc->face_offsets, ps->face_offsets, sizeof(int64_t) * (size_t)(pc->nf + 1));
  assert_memory_equal(pc->face_indices, ps->face_indices,
                      sizeof(int64_t) * (size_t)pc->face_offsets[pc->nf]);
  ps->xyz = NULL; /* m's */
  mb_mesh_free(ps);
  mb_mesh_free(pc);
  mb_mesh_free(m);
}

static void test_share_whole(void **state) {
  (void)state;
  check_share(NULL);
}

/* Rows with ids: every vertex a row (start 0), no ghosts. */
static void test_share_rows(void **state) {
  (void)state;
  const mb_polylla_ids ids = {0, 0, NULL, NULL};
  check_share(&ids);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mapped_build),
      cmocka_unit_test(test_share_whole),
      cmocka_unit_test(test_share_rows),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
