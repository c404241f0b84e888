/* pikachu.1.node/.ele/.neigh of ../shared/data/triangulations (written by
 * Triangle, checked .neigh): counts, CCW triangles, markers, a round trip.
 * Skipped (exit 77) when the data folder is absent. */
#define _POSIX_C_SOURCE 200809L
#include "mb_meshfile_test.h"
#include "mb_trianglefile.h"

static int have_data(void) {
  char buf[1024];
  return mb_test_data_path("triangulations/pikachu.1.node", buf, sizeof buf) != NULL;
}

static void test_pikachu(void **state) {
  (void)state;
  if (!have_data()) skip();
  char buf[1024];
  mb_mesh *m = mft_read(mb_test_data_path("triangulations/pikachu.1.node", buf, sizeof buf));
  assert_string_equal(m->name, "pikachu.1");
  assert_int_equal(m->kind, MB_KIND_TRIANGULATION2D);
  assert_int_equal(m->nv, 352);
  assert_int_equal(m->nf, 531);
  assert_true(mb_mesh_is_triangles(m));
  /* Corners are kept in file order. All 531 triangles of this file turn the
   * same way, and that way is clockwise in the (x, y) frame (e.g. triangle 0,
   * (108, 2, 107), has signed area < 0), although MANIFEST.tsv says "CCW":
   * the file's y axis is presumably flipped (image coordinates). */
  int64_t ccw = 0, cw = 0;
  for (int64_t f = 0; f < m->nf; f++) {
    const int64_t *v = m->face_indices + 3 * f;
    const double *a = m->xyz + 3 * v[0], *b = m->xyz + 3 * v[1], *c = m->xyz + 3 * v[2];
    double area2 = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
    ccw += area2 > 0;
    cw += area2 < 0;
  }
  assert_int_equal(cw, 531);
  assert_int_equal(ccw, 0);
  for (int64_t i = 0; i < m->nv; i++) assert_true(m->xyz[3 * i + 2] == 0.0);
  mft_assert_vertex(m, 0, 1373, -18153, 0);
  mft_assert_face(m, 0, 3, (int64_t[]){108, 2, 107});
  assert_int_equal(m->nfields, 1);
  assert_string_equal(m->fields[0].name, "boundary_marker");
  assert_int_equal(m->nface_fields, 1);
  /* the .ele gives the same mesh; a round trip keeps it bit for bit */
  mb_mesh *e = mft_read(mb_test_data_path("triangulations/pikachu.1.ele", buf, sizeof buf));
  mb_test_assert_same_mesh(m, e);
  mb_mesh_free(e);
  assert_int_equal(mb_meshfile_write(mft_path("pikachu.1.ele"), m), MB_SUCCESS);
  mb_mesh *r = mft_read(mft_path("pikachu.1.node"));
  mb_test_assert_same_mesh(m, r);
  mb_mesh_free(r);
  mb_mesh_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_pikachu)};
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  return rc == 0 && !have_data() ? MB_TEST_SKIP : rc;
}
