/* Reader features: OBJ face forms, negative indices, polygons and ignored
 * statements; OFF variants and comments; PLY ascii, binary little- and
 * big-endian with odd property types and extra elements. */
#include "mb_meshfile_test.h"

static void test_obj_index_forms(void **state) {
  (void)state;
  const char *p = mft_text("forms.obj",
                           "# comment line\n"
                           "mtllib forms.mtl\n"
                           "o thing\n"
                           "v 0 0 0\n"
                           "v 1 0 0 1.0\n"
                           "vt 0.5 0.5\n"
                           "vn 0 0 1\n"
                           "  v\t0 1 0   # trailing comment\r\n"
                           "v 1 1 0\n"
                           "v 2.5e-1 -3E2 +7\n"
                           "g group\n"
                           "s off\n"
                           "usemtl red\n"
                           "l 1 2\n"
                           "f 1 2 3\n"
                           "f 2/1 4/1 3/1\n"
                           "f 1//1 2//1 5//1\n"
                           "f 3/1/1 4/1/1 5/1/1\r\n"
                           "\n"
                           "f -5 -4 -1\n");
  mb_mesh *m = mft_read(p);
  assert_string_equal(m->name, "forms");
  assert_int_equal(m->nv, 5);
  assert_int_equal(m->nf, 5);
  mft_assert_vertex(m, 1, 1, 0, 0);
  mft_assert_vertex(m, 2, 0, 1, 0);
  mft_assert_vertex(m, 4, 0.25, -300, 7);
  mft_assert_face(m, 0, 3, (int64_t[]){0, 1, 2});
  mft_assert_face(m, 1, 3, (int64_t[]){1, 3, 2});
  mft_assert_face(m, 2, 3, (int64_t[]){0, 1, 4});
  mft_assert_face(m, 3, 3, (int64_t[]){2, 3, 4});
  mft_assert_face(m, 4, 3, (int64_t[]){0, 1, 4});
  mb_mesh_free(m);
}

/* Negative indices are relative to the vertices defined so far. */
static void test_obj_relative_and_polygons(void **state) {
  (void)state;
  const char *p = mft_text("rel.obj",
                           "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\n"
                           "f -4 -3 -2 -1\n"
                           "v 2 0 0\nv 2 1 0\n"
                           "f -5/-5 -1/-1 -2/-2 -4/-4 -3/-3\n"
                           "f 1 2 3 4 5 6\n");
  mb_mesh *m = mft_read(p);
  assert_int_equal(m->nv, 6);
  assert_int_equal(m->nf, 3);
  mft_assert_face(m, 0, 4, (int64_t[]){0, 1, 2, 3});
  mft_assert_face(m, 1, 5, (int64_t[]){1, 5, 4, 2, 3});
  mft_assert_face(m, 2, 6, (int64_t[]){0, 1, 2, 3, 4, 5});
  assert_int_equal(mb_mesh_is_triangles(m), 0);
  mb_mesh_free(m);
}

/* Faces may name vertices defined further down; no trailing newline. */
static void test_obj_forward_reference(void **state) {
  (void)state;
  mb_mesh *m = mft_read(mft_text("fwd.obj", "f 1 2 3\nv 0 0 0\nv 1 0 0\nv 0 1 0"));
  assert_int_equal(m->nv, 3);
  mft_assert_face(m, 0, 3, (int64_t[]){0, 1, 2});
  mft_assert_vertex(m, 2, 0, 1, 0);
  mb_mesh_free(m);
}

static void test_off_comments_and_variants(void **state) {
  (void)state;
  const char *p = mft_text("c.off",
                           "# leading comment\n"
                           "OFF\n"
                           "\n"
                           "# counts follow\n"
                           "4 2 0   # nv nf ne\n"
                           "0 0 0\n"
                           "# a comment between vertices\n"
                           "1 0 0\n"
                           "   1 1 0\t\n"
                           "0 1 0 # last\n"
                           "3 0 1 2\n"
                           "\n"
                           "4 0 1 2 3 255 0 0 # coloured quad\n");
  mb_mesh *m = mft_read(p);
  assert_string_equal(m->name, "c");
  assert_int_equal(m->nv, 4);
  assert_int_equal(m->nf, 2);
  mft_assert_vertex(m, 2, 1, 1, 0);
  mft_assert_face(m, 0, 3, (int64_t[]){0, 1, 2});
  mft_assert_face(m, 1, 4, (int64_t[]){0, 1, 2, 3});
  mb_mesh_free(m);

  /* COFF: colours after xyz; counts on the header line. */
  m = mft_read(mft_text("col.off",
                        "COFF 3 1 3\n0 0 0 255 0 0 255\n1 0 0 0 255 0 255\n"
                        "0 1 0 0 0 255 255\n3 2 1 0\n"));
  assert_int_equal(m->nv, 3);
  mft_assert_vertex(m, 1, 1, 0, 0);
  mft_assert_face(m, 0, 3, (int64_t[]){2, 1, 0});
  mb_mesh_free(m);

  /* NOFF: normals after xyz. */
  m = mft_read(mft_text("n.off", "NOFF\n3 1 0\n0 0 0 0 0 1\n1 0 0 0 0 1\n0 1 0 0 0 1\n3 0 1 2\n"));
  mft_assert_vertex(m, 2, 0, 1, 0);
  mb_mesh_free(m);
}

/* ascii PLY: extra vertex properties, an extra element, a second list. */
static void test_ply_ascii(void **state) {
  (void)state;
  const char *p = mft_text("a.ply",
                           "ply\r\n"
                           "format ascii 1.0\r\n"
                           "comment made by hand\r\n"
                           "obj_info nothing\r\n"
                           "element vertex 4\r\n"
                           "property float32 x\r\n"
                           "property float32 y\r\n"
                           "property float32 z\r\n"
                           "property uchar red\r\n"
                           "property double quality\r\n"
                           "element face 2\r\n"
                           "property list uint8 int32 vertex_indices\r\n"
                           "property list uchar float texcoord\r\n"
                           "property int flags\r\n"
                           "element edge 1\r\n"
                           "property int vertex1\r\n"
                           "property int vertex2\r\n"
                           "end_header\r\n"
                           "0 0 0 255 nan\r\n"
                           "1 0 0 0 0.5\r\n"
                           "0.5 1 0 12 -1\r\n"
                           "0 0 1.25 3 inf\r\n"
                           "3 0 1 2 6 0 0 1 0 0.5 1 7\r\n"
                           "4 0 1 2 3 0 -1\r\n"
                           "0 1\r\n");
  mb_mesh *m = mft_read(p);
  assert_int_equal(m->nv, 4);
  assert_int_equal(m->nf, 2);
  mft_assert_vertex(m, 2, 0.5, 1, 0);
  mft_assert_vertex(m, 3, 0, 0, 1.25);
  mft_assert_face(m, 0, 3, (int64_t[]){0, 1, 2});
  mft_assert_face(m, 1, 4, (int64_t[]){0, 1, 2, 3});
  mb_mesh_free(m);
}

/* The same binary PLY, in either byte order: odd types everywhere. */
static size_t make_binary_ply(mft_bytes *b, int big) {
  memset(b, 0, sizeof *b);
  b->big = big;
  mft_put_text(b, "ply\n");
  mft_put_text(b, big ? "format binary_big_endian 1.0\n" : "format binary_little_endian 1.0\n");
  mft_put_text(b,
               "comment odd types\n"
               "element material 1\n"
               "property ushort id\n"
               "property list uchar char name\n"
               "element vertex 4\n"
               "property short s\n"
               "property double x\n"
               "property float y\n"
               "property int16 z\n"
               "property uchar red\n"
               "property list int8 uint16 neighbours\n"
               "element face 2\n"
               "property uint flags\n"
               "property list int8 uint32 vertex_index\n"
               "end_header\n");
  /* material: id, name "ab" */
  mft_put(b, 7, 2);
  mft_put(b, 2, 1);
  mft_put(b, 'a', 1);
  mft_put(b, 'b', 1);
  const double x[4] = {0.1, 1.5, -2.25, 1e-300};
  const float y[4] = {0.5f, -1.0f, 3.0f, 0.1f};
  const int16_t z[4] = {-1, 0, 32767, -32768};
  for (int i = 0; i < 4; i++) {
    mft_put(b, (uint16_t)-5, 2);
    mft_put_f64(b, x[i]);
    mft_put_f32(b, y[i]);
    mft_put(b, (uint16_t)z[i], 2);
    mft_put(b, 200, 1);
    mft_put(b, (uint64_t)i, 1); /* i neighbours */
    for (int k = 0; k < i; k++) mft_put(b, 1000 + (uint64_t)k, 2);
  }
  mft_put(b, 0xdeadbeef, 4);
  mft_put(b, 3, 1);
  mft_put(b, 0, 4);
  mft_put(b, 1, 4);
  mft_put(b, 2, 4);
  mft_put(b, 1, 4);
  mft_put(b, 4, 1);
  mft_put(b, 3, 4);
  mft_put(b, 2, 4);
  mft_put(b, 1, 4);
  mft_put(b, 0, 4);
  return b->n;
}

static void check_binary_ply(const char *name, int big) {
  static mft_bytes b;
  size_t n = make_binary_ply(&b, big);
  mb_mesh *m = mft_read(mft_write_bytes(name, &b, n));
  assert_int_equal(m->nv, 4);
  assert_int_equal(m->nf, 2);
  mft_assert_vertex(m, 0, 0.1, 0.5, -1);
  mft_assert_vertex(m, 1, 1.5, -1, 0);
  mft_assert_vertex(m, 2, -2.25, 3, 32767);
  mft_assert_vertex(m, 3, 1e-300, (double)0.1f, -32768);
  mft_assert_face(m, 0, 3, (int64_t[]){0, 1, 2});
  mft_assert_face(m, 1, 4, (int64_t[]){3, 2, 1, 0});
  mb_mesh_free(m);
}

static void test_ply_binary_little_endian(void **state) {
  (void)state;
  check_binary_ply("le.ply", 0);
}

static void test_ply_binary_big_endian(void **state) {
  (void)state;
  check_binary_ply("be.ply", 1);
}

/* Face element before the vertex element; int8 list counts and indices. */
static void test_ply_faces_first(void **state) {
  (void)state;
  static mft_bytes b;
  memset(&b, 0, sizeof b);
  mft_put_text(&b,
               "ply\nformat binary_little_endian 1.0\n"
               "element face 1\nproperty list char char vertex_indices\n"
               "element vertex 3\nproperty uint8 x\nproperty int8 y\nproperty uint32 z\n"
               "end_header\n");
  mft_put(&b, 3, 1);
  mft_put(&b, 2, 1);
  mft_put(&b, 0, 1);
  mft_put(&b, 1, 1);
  const uint8_t x[3] = {0, 255, 1};
  const int8_t y[3] = {-1, 127, -128};
  const uint32_t z[3] = {7, 1, 0};
  for (int i = 0; i < 3; i++) {
    mft_put(&b, x[i], 1);
    mft_put(&b, (uint8_t)y[i], 1);
    mft_put(&b, z[i], 4);
  }
  mb_mesh *m = mft_read(mft_write_bytes("ff.ply", &b, b.n));
  mft_assert_vertex(m, 0, 0, -1, 7);
  mft_assert_vertex(m, 1, 255, 127, 1);
  mft_assert_vertex(m, 2, 1, -128, 0);
  mft_assert_face(m, 0, 3, (int64_t[]){2, 0, 1});
  mb_mesh_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_obj_index_forms),
      cmocka_unit_test(test_obj_relative_and_polygons),
      cmocka_unit_test(test_obj_forward_reference),
      cmocka_unit_test(test_off_comments_and_variants),
      cmocka_unit_test(test_ply_ascii),
      cmocka_unit_test(test_ply_binary_little_endian),
      cmocka_unit_test(test_ply_binary_big_endian),
      cmocka_unit_test(test_ply_faces_first),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
