/* Malformed input: every error has the right code and a message naming the
 * file (and the line for text formats); nothing crashes on garbage. */
#include "mb_meshfile_test.h"

#include <math.h>
#include <sys/stat.h>

#define FMT MB_ERR_FORMAT

/* Eight vertices of a cube, as OBJ lines. */
#define CUBE_V                                                                                \
  "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 0 1\nv 1 0 1\nv 1 1 1\nv 0 1 1\n"

static void test_obj_index_out_of_range(void **state) {
  (void)state;
  mft_read_fails(mft_text("bad.obj", "# cube\n" CUBE_V "f 1 2 3\n\nf 1 2 9\n"), FMT,
                 "bad.obj:12: face index 9 out of range [1, 8]", NULL);
  mft_read_fails(mft_text("zero.obj", CUBE_V "f 0 1 2\n"), FMT,
                 "zero.obj:9: face index 0 is invalid", NULL);
  mft_read_fails(mft_text("neg.obj", "v 0 0 0\nv 1 0 0\nf -1 -2 -3\n" CUBE_V), FMT,
                 "neg.obj:3: face index -3 out of range [-2, -1]", NULL);
  mft_read_fails(mft_text("slash.obj", CUBE_V "f 1/1 2/1 9/1/1\n"), FMT,
                 "slash.obj:9: face index 9 out of range [1, 8]", NULL);
  mft_read_fails(mft_text("huge.obj", CUBE_V "f 1 2 99999999999999999999999\n"), FMT,
                 "huge.obj:9: expected a face vertex", NULL);
}

static void test_obj_bad_tokens(void **state) {
  (void)state;
  mft_read_fails(mft_text("tok.obj", "v 0 0 0\nv 1.0 abc 2\n"), FMT,
                 "tok.obj:2: expected a coordinate, got 'abc'", NULL);
  mft_read_fails(mft_text("tail.obj", "v 0 0 0\nv 1 2 3abc\n"), FMT,
                 "tail.obj:2: expected a coordinate, got '3abc'", NULL);
  mft_read_fails(mft_text("short.obj", "v 0 0 0\nv 1 2\n"), FMT,
                 "short.obj:2: expected a coordinate, got end of line", NULL);
  mft_read_fails(mft_text("ftok.obj", CUBE_V "f 1 x 3\n"), FMT,
                 "ftok.obj:9: expected a face vertex", "'x'", NULL);
  mft_read_fails(mft_text("fslash.obj", CUBE_V "f 1 2/ 3\n"), FMT, "fslash.obj:9:", "'2/'",
                 NULL);
  mft_read_fails(mft_text("f2.obj", CUBE_V "f 1 2\n"), FMT,
                 "f2.obj:9: face has 2 vertices (need at least 3)", NULL);
}

static void test_nonfinite(void **state) {
  (void)state;
  /* hexadecimal floats: strtod reads them, no mesh format defines them */
  mft_read_fails(mft_text("hex.obj", "v 0x1p0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"), FMT,
                 "hex.obj:1: expected a coordinate, got '0x1p0'", NULL);
  mft_read_fails(mft_text("hex.off", "OFF\n3 1 0\n0 0 0\n1 -0X.8p1 0\n0 1 0\n3 0 1 2\n"), FMT,
                 "hex.off:4: expected a coordinate, got '-0X.8p1'", NULL);
  mft_read_fails(mft_text("nan.obj", "v 0 0 0\nv 1 0 0\nv 0 nan 0\nf 1 2 3\n"), FMT,
                 "nan.obj:3: non-finite coordinate 'nan'", NULL);
  mft_read_fails(mft_text("inf.obj", "v 0 0 0\nv 1 0 -inf\nv 0 1 0\nf 1 2 3\n"), FMT,
                 "inf.obj:2: non-finite coordinate '-inf'", NULL);
  mft_read_fails(mft_text("ovf.obj", "v 0 0 1e999\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"), FMT,
                 "ovf.obj:1: non-finite coordinate '1e999'", NULL);
  mft_read_fails(mft_text("nan.off", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 NaN 0\n3 0 1 2\n"), FMT,
                 "nan.off:5: non-finite coordinate 'NaN'", NULL);
  mft_read_fails(mft_text("nan.ply",
                          "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\n"
                          "property float y\nproperty float z\nelement face 1\n"
                          "property list uchar int vertex_indices\nend_header\n"
                          "0 0 0\n1 inf 0\n0 1 0\n3 0 1 2\n"),
                 FMT, "nan.ply:11: vertex 1 has a non-finite coordinate", NULL);
  static mft_bytes b;
  memset(&b, 0, sizeof b);
  b.big = 1;
  mft_put_text(&b, "ply\nformat binary_big_endian 1.0\nelement vertex 3\nproperty double x\n"
                   "property double y\nproperty double z\nelement face 1\n"
                   "property list uchar int vertex_indices\nend_header\n");
  for (int i = 0; i < 9; i++) mft_put_f64(&b, i == 7 ? NAN : (double)i);
  mft_put(&b, 3, 1);
  for (int i = 0; i < 3; i++) mft_put(&b, (uint64_t)i, 4);
  mft_read_fails(mft_write_bytes("nanbin.ply", &b, b.n), FMT,
                 "nanbin.ply: vertex 2 has a non-finite coordinate", NULL);
}

static void test_off_errors(void **state) {
  (void)state;
  mft_read_fails(mft_text("hdr.off", "# c\nPLY\n3 1 0\n"), FMT,
                 "hdr.off:2: expected an OFF header", "'PLY'", NULL);
  mft_read_fails(mft_text("four.off", "4OFF\n"), FMT, "four.off:1: unsupported OFF variant",
                 NULL);
  mft_read_fails(mft_text("bin.off", "OFF BINARY\n"), FMT, "bin.off:1: binary OFF", NULL);
  mft_read_fails(mft_text("cnt.off", "OFF\nthree 1 0\n"), FMT,
                 "cnt.off:2: expected the vertex count, got 'three'", NULL);
  mft_read_fails(mft_text("trunc.off", "OFF\n4 1 0\n0 0 0\n# c\n1 0 0\n\n0 1 0\n"), FMT,
                 "trunc.off:8: file ends after 3 of 4 vertices", NULL);
  mft_read_fails(mft_text("ftrunc.off", "OFF\n3 2 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n"), FMT,
                 "ftrunc.off:7: file ends after 1 of 2 faces", NULL);
  mft_read_fails(mft_text("range.off", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 3\n"), FMT,
                 "range.off:6: face index 3 out of range [0, 2]", NULL);
  mft_read_fails(mft_text("fidx.off", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1\n"), FMT,
                 "fidx.off:6: expected a face index, got end of line", NULL);
  mft_read_fails(mft_text("deg.off", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n2 0 1\n"), FMT,
                 "deg.off:6: face has 2 vertices", NULL);
}

/* The binary PLY of the truncation tests: 8 vertices of float64, 2 faces. */
static size_t cube_ply(mft_bytes *b) {
  memset(b, 0, sizeof *b);
  mft_put_text(b, "ply\nformat binary_little_endian 1.0\nelement vertex 8\nproperty double x\n"
                  "property double y\nproperty double z\nelement face 2\n"
                  "property list uchar int vertex_indices\nend_header\n");
  for (int i = 0; i < 24; i++) mft_put_f64(b, (double)(i % 3));
  mft_put(b, 3, 1);
  for (int i = 0; i < 3; i++) mft_put(b, (uint64_t)i, 4);
  mft_put(b, 4, 1);
  for (int i = 4; i < 8; i++) mft_put(b, (uint64_t)i, 4);
  return b->n;
}

static void test_ply_truncated(void **state) {
  (void)state;
  static mft_bytes b;
  size_t n = cube_ply(&b);
  size_t header = n - 24 * 8 - 1 - 12 - 1 - 16;
  mft_read_fails(mft_write_bytes("x.ply", &b, header + 5 * 24 + 10), FMT,
                 "x.ply: truncated binary data: expected 8 vertices, file ends in vertex 5",
                 NULL);
  mft_read_fails(mft_write_bytes("y.ply", &b, n - 3), FMT,
                 "y.ply: truncated binary data: expected 2 'face' elements, file ends in face 1",
                 NULL);
  /* Every proper prefix fails cleanly; the whole file reads. */
  for (size_t k = 0; k < n; k++) {
    mb_mesh *m = (mb_mesh *)0x1;
    mb_error e = mb_meshfile_read(mft_write_bytes("prefix.ply", &b, k), &m);
    if (e != FMT) fail_msg("prefix of %zu bytes: error %d (%s)", k, (int)e, mb_error_message());
    assert_null(m);
  }
  mb_mesh *m = mft_read(mft_write_bytes("whole.ply", &b, n));
  assert_int_equal(m->nv, 8);
  mb_mesh_free(m);
  mft_read_fails(mft_text("t.ply",
                          "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\n"
                          "property float y\nproperty float z\nend_header\n0 0 0\n1 0 0\n"),
                 FMT, "t.ply: truncated ascii data: expected 3 vertices, file ends in vertex 2",
                 NULL);
}

/* A face list whose count runs past the end; an out-of-range index. */
static void test_ply_bad_faces(void **state) {
  (void)state;
  static mft_bytes b;
  size_t n = cube_ply(&b);
  b.data[n - 17] = 200; /* second face claims 200 indices */
  mft_read_fails(mft_write_bytes("long.ply", &b, n), FMT,
                 "long.ply: truncated binary data", "file ends in face 1", NULL);
  n = cube_ply(&b);
  b.data[n - 4] = 8; /* last index 8 of 8 vertices */
  mft_read_fails(mft_write_bytes("range.ply", &b, n), FMT,
                 "range.ply: face 1: vertex index 8 out of range [0, 7]", NULL);
  mft_read_fails(mft_text("arange.ply",
                          "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\n"
                          "property float y\nproperty float z\nelement face 1\n"
                          "property list uchar int vertex_indices\nend_header\n"
                          "0 0 0\n1 0 0\n0 1 0\n3 0 -1 2\n"),
                 FMT, "arange.ply:13: face 0: vertex index -1 out of range [0, 2]", NULL);
  mft_read_fails(mft_text("atok.ply",
                          "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\n"
                          "property float y\nproperty float z\nelement face 1\n"
                          "property list uchar int vertex_indices\nend_header\n"
                          "0 0 0\n1 0 0\n0 1 0\n3 0 1.5 2\n"),
                 FMT, "atok.ply:13: expected an integer, got '1.5'", NULL);
}

/* Header text, then end_header. */
#define PLY_XYZ "element vertex 3\nproperty float x\nproperty float y\nproperty float z\n"

static void test_ply_bad_header(void **state) {
  (void)state;
  mft_read_fails(mft_text("magic.ply", "plx\nformat ascii 1.0\nend_header\n"), FMT,
                 "magic.ply:1: not a PLY file", NULL);
  mft_read_fails(mft_text("fmt.ply", "ply\nformat binary_middle_endian 1.0\nend_header\n"), FMT,
                 "fmt.ply:2: expected a PLY format", "'binary_middle_endian'", NULL);
  mft_read_fails(mft_text("type.ply", "ply\nformat ascii 1.0\nelement vertex 3\n"
                                      "property float128 x\nend_header\n"),
                 FMT, "type.ply:4: expected a PLY property type, got 'float128'", NULL);
  mft_read_fails(mft_text("order.ply", "ply\nformat ascii 1.0\nproperty float x\nend_header\n"),
                 FMT, "order.ply:3: property before any element", NULL);
  mft_read_fails(mft_text("noend.ply", "ply\nformat ascii 1.0\n" PLY_XYZ), FMT,
                 "noend.ply: PLY header has no end_header line", NULL);
  mft_read_fails(mft_text("nofmt.ply", "ply\n" PLY_XYZ "end_header\n"), FMT,
                 "nofmt.ply: PLY header has no format line", NULL);
  mft_read_fails(mft_text("kw.ply", "ply\nformat ascii 1.0\nelephant vertex 3\nend_header\n"),
                 FMT, "kw.ply:3: expected a PLY header keyword, got 'elephant'", NULL);
  mft_read_fails(mft_text("count.ply", "ply\nformat ascii 1.0\nelement vertex -3\nend_header\n"),
                 FMT, "count.ply:3: negative element count", NULL);
  mft_read_fails(mft_text("noz.ply", "ply\nformat ascii 1.0\nelement vertex 3\n"
                                     "property float x\nproperty float y\nend_header\n"),
                 FMT, "noz.ply: vertex element has no property 'z'", NULL);
  mft_read_fails(mft_text("nolist.ply", "ply\nformat ascii 1.0\n" PLY_XYZ
                                        "element face 1\nproperty int vertex_indices\n"
                                        "end_header\n"),
                 FMT, "nolist.ply: face element has no list property vertex_indices", NULL);
  mft_read_fails(mft_text("flist.ply", "ply\nformat ascii 1.0\n" PLY_XYZ
                                       "element face 1\nproperty list float int vertex_indices\n"
                                       "end_header\n"),
                 FMT, "flist.ply:8: list count type must be an integer type", NULL);
  mft_read_fails(mft_text("ftype.ply", "ply\nformat ascii 1.0\n" PLY_XYZ
                                       "element face 1\nproperty list uchar float vertex_indices\n"
                                       "end_header\n"),
                 FMT, "ftype.ply: face vertex indices must have an integer type", NULL);
}

static void test_empty_mesh(void **state) {
  (void)state;
  mft_read_fails(mft_text("empty.obj", ""), FMT, "empty.obj", "empty mesh", NULL);
  mft_read_fails(mft_text("comments.obj", "# nothing\n\ng x\n"), FMT, "comments.obj",
                 "empty mesh", NULL);
  mft_read_fails(mft_text("novfaces.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\n"), FMT, "novfaces.obj",
                 "empty mesh (no faces)", NULL);
  mft_read_fails(mft_text("empty.off", "# only a comment\n"), FMT, "empty.off", "empty mesh",
                 NULL);
  mft_read_fails(mft_text("zero.off", "OFF\n0 0 0\n"), FMT, "zero.off", "empty mesh", NULL);
  mft_read_fails(mft_text("zero.ply", "ply\nformat ascii 1.0\nelement vertex 0\n"
                                      "property float x\nproperty float y\nproperty float z\n"
                                      "end_header\n"),
                 FMT, "zero.ply", "empty mesh", NULL);
  mft_read_fails(mft_text("noface.ply", "ply\nformat ascii 1.0\n" PLY_XYZ
                                        "end_header\n0 0 0\n1 0 0\n0 1 0\n"),
                 FMT, "noface.ply", "empty mesh (no faces)", NULL);
}

static void test_missing_and_unknown(void **state) {
  (void)state;
  const char *p = mft_path("missing.obj");
  remove(p);
  mft_read_fails(p, MB_ERR_IO, "missing.obj: cannot open: No such file or directory", NULL);
  mft_read_fails(mft_text("mesh.stl", "solid x\n"), MB_ERR_ARG, "mesh.stl",
                 "unknown mesh file extension", NULL);
  mft_read_fails(mft_text("noext", "v 0 0 0\n"), MB_ERR_ARG, "noext",
                 "unknown mesh file extension", NULL);
  const char *dir = mft_path("folder.obj");
  mkdir(dir, 0755);
  mft_read_fails(dir, MB_ERR_IO, "folder.obj: cannot read: Is a directory", NULL);
}

/* Pseudo-random garbage and byte flips of valid files never crash. */
static void test_garbage(void **state) {
  (void)state;
  static mft_bytes b;
  uint64_t s = 88172645463325252ull;
  const char *names[3] = {"g.obj", "g.off", "g.ply"};
  const char *alphabet = "0123456789 \n\t-+./eEnaif#vfOFplyx\r";
  for (int round = 0; round < 600; round++) {
    memset(&b, 0, sizeof b);
    if (round % 3 == 2) cube_ply(&b);
    else mft_put_text(&b, round % 3 ? "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n"
                                    : "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\nf -1/2/3 1//2 2\n");
    for (int k = 0; k < 4; k++) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      size_t at = (size_t)(s % b.n);
      b.data[at] = round % 2 ? (unsigned char)(s >> 24) : (unsigned char)alphabet[(s >> 24) % strlen(alphabet)];
    }
    mb_mesh *m = NULL;
    mb_error e = mb_meshfile_read(mft_write_bytes(names[round % 3], &b, b.n), &m);
    assert_true(e == MB_SUCCESS || e == FMT);
    assert_true((e == MB_SUCCESS) == (m != NULL));
    if (m) assert_int_equal(mb_mesh_validate(m, "garbage"), MB_SUCCESS);
    mb_mesh_free(m);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_obj_index_out_of_range),
      cmocka_unit_test(test_obj_bad_tokens),
      cmocka_unit_test(test_nonfinite),
      cmocka_unit_test(test_off_errors),
      cmocka_unit_test(test_ply_truncated),
      cmocka_unit_test(test_ply_bad_faces),
      cmocka_unit_test(test_ply_bad_header),
      cmocka_unit_test(test_empty_mesh),
      cmocka_unit_test(test_missing_and_unknown),
      cmocka_unit_test(test_garbage),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
