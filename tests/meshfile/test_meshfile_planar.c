/* Planar meshes in OFF (2D vertex lines, z = 0 rows for planar kinds,
 * polygons of mixed sizes) and mb_mesh_convert_kind. */
#define _POSIX_C_SOURCE 200809L
#include "mb_meshfile_test.h"

#define FMT MB_ERR_FORMAT

static void test_off_2d(void **state) {
  (void)state;
  mb_mesh *m = mft_read(mft_text("two.off", "OFF\n# 2D\n4 2 0\n0 0\n1 0\n1 1\n\n0.5 2.25\n"
                                            "3 0 1 2\n3 0 2 3\n"));
  assert_int_equal(m->nv, 4);
  assert_int_equal(m->kind, MB_KIND_SURFACE);
  mft_assert_vertex(m, 3, 0.5, 2.25, 0);
  assert_int_equal(mb_mesh_convert_kind(m, MB_KIND_TRIANGULATION2D, "two.off"), MB_SUCCESS);
  assert_int_equal(m->kind, MB_KIND_TRIANGULATION2D);
  mb_mesh_free(m);
  mft_read_fails(mft_text("mix.off", "OFF\n3 1 0\n0 0\n1 0 0\n0 1\n3 0 1 2\n"), FMT,
                 "mix.off:4: expected 2 coordinates, as on the first vertex line (2D OFF)", NULL);
  mft_read_fails(mft_text("one.off", "OFF\n3 1 0\n0\n1 0\n0 1\n3 0 1 2\n"), FMT,
                 "one.off:3: expected a coordinate, got end of line", NULL);
  /* a 3D file still reads as before */
  m = mft_read(mft_text("three.off", "OFF\n3 1 0\n0 0 1\n1 0 2\n0 1 3\n3 0 1 2\n"));
  mft_assert_vertex(m, 2, 0, 1, 3);
  mb_mesh_free(m);
}

/* Polygons of sizes 3, 4 and 5 keep their sizes and order; a planar kind
 * writes z = 0 rows. */
static void test_off_polygons_roundtrip(void **state) {
  (void)state;
  const char *src = "OFF\n7 3 0\n0 0\n1 0\n2 0\n2 1\n1 1\n0 1\n1 2\n"
                    "4 0 1 4 5\n5 1 2 3 6 4\n3 5 4 6\n";
  mb_mesh *m = mft_read(mft_text("poly.off", src));
  assert_int_equal(mb_mesh_convert_kind(m, MB_KIND_POLYGONS2D, "poly.off"), MB_SUCCESS);
  mb_error_clear();
  assert_int_equal(mb_mesh_convert_kind(m, MB_KIND_TRIANGULATION2D, "poly.off"), FMT);
  mb_test_assert_message_contains(
      "poly.off: not a triangulation2d: every face must be a triangle (face 0 has 4 vertices)");
  assert_int_equal(m->kind, MB_KIND_POLYGONS2D);
  assert_int_equal(mb_meshfile_write(mft_path("poly2.off"), m), MB_SUCCESS);
  FILE *f = fopen(mft_path("poly2.off"), "r");
  assert_non_null(f);
  char line[256];
  int rows = 0;
  while (fgets(line, sizeof line, f))
    if (rows < 9 && ++rows > 2) {
      size_t n = strlen(line);
      assert_true(n >= 3 && !strcmp(line + n - 3, " 0\n"));
    }
  fclose(f);
  mb_mesh *r = mft_read(mft_path("poly2.off"));
  mb_test_assert_same_geometry(m, r);
  mft_assert_face(r, 1, 5, (int64_t[]){1, 2, 3, 6, 4});
  mft_assert_face(r, 2, 3, (int64_t[]){5, 4, 6});
  assert_int_equal(mb_mesh_convert_kind(r, MB_KIND_POLYGONS2D, NULL), MB_SUCCESS);
  mb_mesh_free(r);
  /* planar kind with a stray z: written as 0 */
  m->xyz[2] = 0.75;
  assert_int_equal(mb_meshfile_write(mft_path("poly3.off"), m), MB_SUCCESS);
  r = mft_read(mft_path("poly3.off"));
  mft_assert_vertex(r, 0, 0, 0, 0);
  mb_mesh_free(r);
  mb_mesh_free(m);
}

static void test_convert_kind_errors(void **state) {
  (void)state;
  mb_mesh *m = mft_read(mft_text("z.off", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 1e-300\n3 0 1 2\n"));
  mb_error_clear();
  assert_int_equal(mb_mesh_convert_kind(m, MB_KIND_TRIANGULATION2D, "z.off"), FMT);
  mb_test_assert_message_contains("z.off: not a planar triangulation2d: every z must be 0 "
                                  "(vertex 2 has z = 1e-300)");
  assert_int_equal(m->kind, MB_KIND_SURFACE);
  mb_error_clear();
  assert_int_equal(mb_mesh_convert_kind(m, MB_KIND_POLYGONS2D, NULL), FMT);
  mb_test_assert_message_contains("z: not a planar polygons2d: every z must be 0 (vertex 2");
  assert_int_equal(mb_mesh_convert_kind(m, MB_KIND_NONE, "z.off"), MB_ERR_ARG);
  assert_int_equal(mb_mesh_convert_kind(NULL, MB_KIND_SURFACE, "z.off"), MB_ERR_ARG);
  assert_int_equal(mb_mesh_convert_kind(m, MB_KIND_SURFACE, "z.off"), MB_SUCCESS);
  m->xyz[8] = 0;
  assert_int_equal(mb_mesh_convert_kind(m, MB_KIND_TRIANGULATION2D, "z.off"), MB_SUCCESS);
  assert_int_equal(mb_mesh_convert_kind(m, MB_KIND_SURFACE, "z.off"), MB_SUCCESS);
  assert_int_equal(m->kind, MB_KIND_SURFACE);
  mb_mesh_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_off_2d),
      cmocka_unit_test(test_off_polygons_roundtrip),
      cmocka_unit_test(test_convert_kind_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
