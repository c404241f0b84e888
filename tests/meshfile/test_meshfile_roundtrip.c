/* Round trips through each writer and reader: the same doubles bit for bit,
 * the same polygons, the file stem as name, no temporary file left behind. */
#define _XOPEN_SOURCE 700
#include "mb_meshfile_test.h"

#include <dirent.h>
#include <math.h>

/* A mesh with awkward doubles and mixed polygons: a triangle, a quad, a pentagon. */
static mb_mesh *make_polygon_mesh(void) {
  mb_mesh *m = NULL;
  assert_int_equal(mb_mesh_create("poly", 7, 3, 12, &m), MB_SUCCESS);
  const double xyz[21] = {0.1, -0.0, 1e-310,         1.0 / 3.0, 2.0 / 3.0, 1e300,
                          -123456789.123456789, 5e-324, 0.30000000000000004,
                          M_PI, M_E, -M_SQRT2,       1, 2, 3,
                          nextafter(1.0, 2.0), -nextafter(0.0, 1.0), 7.0e22,
                          4.9406564584124654e-300, 1.7976931348623157e308, -2.5};
  memcpy(m->xyz, xyz, sizeof xyz);
  const int64_t off[4] = {0, 3, 7, 12};
  const int64_t idx[12] = {0, 1, 2, 2, 1, 3, 4, 6, 5, 4, 3, 0};
  memcpy(m->face_offsets, off, sizeof off);
  memcpy(m->face_indices, idx, sizeof idx);
  return m;
}

/* Assert no "<name>.tmp-*" file is left in the scratch folder. */
static void assert_no_temp_files(void) {
  char dir[1024];
  mb_test_tmp_path("", dir, sizeof dir);
  DIR *d = opendir(dir);
  assert_non_null(d);
  for (struct dirent *e; (e = readdir(d));)
    if (strstr(e->d_name, ".tmp-")) fail_msg("temporary file %s left behind", e->d_name);
  closedir(d);
}

/* Write m as name, read it back, compare. */
static void roundtrip(const mb_mesh *m, const char *name, const char *stem) {
  const char *path = mft_path(name);
  assert_int_equal(mb_meshfile_write(path, m), MB_SUCCESS);
  mb_mesh *r = mft_read(path);
  mb_test_assert_same_geometry(m, r);
  assert_string_equal(r->name, stem);
  mb_mesh_free(r);
  assert_no_temp_files();
}

static void test_roundtrip_triangles(void **state) {
  (void)state;
  const double xyz[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0.1, 0.2, 0.7};
  const int64_t tri[12] = {0, 2, 1, 0, 1, 3, 1, 2, 3, 2, 0, 3};
  mb_mesh *m = mb_test_mesh_triangles("tet", 4, xyz, 4, tri);
  roundtrip(m, "tet.obj", "tet");
  roundtrip(m, "tet.off", "tet");
  roundtrip(m, "tet.ply", "tet");
  roundtrip(m, "tet.OBJ", "tet");
  mb_mesh_free(m);
}

static void test_roundtrip_polygons(void **state) {
  (void)state;
  mb_mesh *m = make_polygon_mesh();
  roundtrip(m, "poly.obj", "poly");
  roundtrip(m, "poly.off", "poly");
  roundtrip(m, "poly.ply", "poly");
  mb_mesh_free(m);
}

/* A face with more than 255 vertices needs a uint list count in PLY. */
static void test_roundtrip_big_polygon(void **state) {
  (void)state;
  enum { N = 300 };
  mb_mesh *m = NULL;
  assert_int_equal(mb_mesh_create("disk", N, 1, N, &m), MB_SUCCESS);
  for (int i = 0; i < N; i++) {
    m->xyz[3 * i] = cos(2 * M_PI * i / N);
    m->xyz[3 * i + 1] = sin(2 * M_PI * i / N);
    m->xyz[3 * i + 2] = 0.0;
    m->face_indices[i] = i;
  }
  m->face_offsets[1] = N;
  roundtrip(m, "disk.ply", "disk");
  roundtrip(m, "disk.obj", "disk");
  roundtrip(m, "disk.off", "disk");
  mb_mesh_free(m);
}

/* Writing over an existing file replaces it. */
static void test_overwrite(void **state) {
  (void)state;
  const char *path = mft_text("over.obj", "garbage that is not a mesh\n");
  mb_mesh *m = make_polygon_mesh();
  assert_int_equal(mb_meshfile_write(path, m), MB_SUCCESS);
  mb_mesh *r = mft_read(path);
  mb_test_assert_same_geometry(m, r);
  mb_mesh_free(r);
  mb_mesh_free(m);
}

static void test_format_of(void **state) {
  (void)state;
  assert_int_equal(mb_meshfile_format_of("a/b.obj"), MB_MESHFILE_OBJ);
  assert_int_equal(mb_meshfile_format_of("B.Off"), MB_MESHFILE_OFF);
  assert_int_equal(mb_meshfile_format_of("x.y/mesh.PLY"), MB_MESHFILE_PLY);
  assert_int_equal(mb_meshfile_format_of("x.ply/mesh"), MB_MESHFILE_UNKNOWN);
  assert_int_equal(mb_meshfile_format_of("mesh.stl"), MB_MESHFILE_UNKNOWN);
  assert_int_equal(mb_meshfile_format_of("mesh.objx"), MB_MESHFILE_UNKNOWN);
  assert_int_equal(mb_meshfile_format_of("obj"), MB_MESHFILE_UNKNOWN);
  assert_int_equal(mb_meshfile_format_of(NULL), MB_MESHFILE_UNKNOWN);
}

static void test_write_unknown_extension(void **state) {
  (void)state;
  mb_mesh *m = make_polygon_mesh();
  mb_error_clear();
  assert_int_equal(mb_meshfile_write(mft_path("mesh.stl"), m), MB_ERR_ARG);
  mb_test_assert_message_contains("mesh.stl");
  mb_test_assert_message_contains("unknown mesh file extension");
  mb_mesh_free(m);
}

/* An unwritable destination is MB_ERR_IO and leaves nothing behind. */
static void test_write_missing_folder(void **state) {
  (void)state;
  mb_mesh *m = make_polygon_mesh();
  mb_error_clear();
  assert_int_equal(mb_meshfile_write(mft_path("no/such/dir/m.obj"), m), MB_ERR_IO);
  mb_test_assert_message_contains("m.obj");
  mb_test_assert_message_contains("No such file or directory");
  mb_mesh_free(m);
  assert_no_temp_files();
}

/* An inconsistent mesh is refused before anything is written. */
static void test_write_bad_mesh(void **state) {
  (void)state;
  mb_mesh *m = make_polygon_mesh();
  m->face_indices[5] = 7;
  const char *path = mft_path("badmesh.ply");
  remove(path);
  mb_error_clear();
  assert_int_equal(mb_meshfile_write(path, m), MB_ERR_ARG);
  mb_test_assert_message_contains("face 1 refers to vertex 7");
  FILE *f = fopen(path, "rb");
  assert_null(f);
  mb_mesh_free(m);
  assert_no_temp_files();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_roundtrip_triangles),     cmocka_unit_test(test_roundtrip_polygons),
      cmocka_unit_test(test_roundtrip_big_polygon),   cmocka_unit_test(test_overwrite),
      cmocka_unit_test(test_format_of),               cmocka_unit_test(test_write_unknown_extension),
      cmocka_unit_test(test_write_missing_folder),    cmocka_unit_test(test_write_bad_mesh),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
