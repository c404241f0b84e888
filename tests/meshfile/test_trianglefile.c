/* Triangle's .node/.ele/.neigh files (io/mb_trianglefile.c): reading with
 * 0- and 1-based numbering, attributes, markers, comments, .neigh present
 * or absent; malformed files with their file:line messages; round trips. */
#define _POSIX_C_SOURCE 200809L
#include "mb_meshfile_test.h"
#include "mb_trianglefile.h"

#include <unistd.h>

#define FMT MB_ERR_FORMAT

/* The unit square split by the diagonal 0-2, 0-based, CCW. */
#define SQ_NODE "4 2 0 0\n0 0 0\n1 1 0\n2 1 1\n3 0 1\n"
#define SQ_ELE "2 3 0\n0 0 1 2\n1 0 2 3\n"

/* Remove a scratch file if present (so a .neigh of another case cannot leak in). */
static void rm(const char *name) { unlink(mft_path(name)); }

static void assert_square(const mb_mesh *m) {
  assert_int_equal(m->kind, MB_KIND_TRIANGULATION2D);
  assert_int_equal(m->nv, 4);
  assert_int_equal(m->nf, 2);
  mft_assert_vertex(m, 0, 0, 0, 0);
  mft_assert_vertex(m, 1, 1, 0, 0);
  mft_assert_vertex(m, 2, 1, 1, 0);
  mft_assert_vertex(m, 3, 0, 1, 0);
  mft_assert_face(m, 0, 3, (int64_t[]){0, 1, 2});
  mft_assert_face(m, 1, 3, (int64_t[]){0, 2, 3});
}

static void test_read_zero_based(void **state) {
  (void)state;
  rm("sq.neigh");
  mft_text("sq.node", SQ_NODE);
  mft_text("sq.ele", SQ_ELE);
  mb_mesh *m = mft_read(mft_path("sq.node"));
  assert_square(m);
  assert_string_equal(m->name, "sq");
  assert_int_equal(m->nfields, 0);
  assert_int_equal(m->nface_fields, 0);
  mb_mesh_free(m);
  /* the .ele names the same pair; mb_trianglefile_read directly too */
  m = mft_read(mft_path("sq.ele"));
  assert_square(m);
  mb_mesh_free(m);
  assert_int_equal(mb_trianglefile_read(mft_path("sq.ele"), &m), MB_SUCCESS);
  assert_square(m);
  mb_mesh_free(m);
  assert_int_equal(mb_meshfile_format_of("a/b.1.node"), MB_MESHFILE_NODE);
  assert_int_equal(mb_meshfile_format_of("B.ELE"), MB_MESHFILE_ELE);
  assert_int_equal(mb_meshfile_format_of("x.neigh"), MB_MESHFILE_UNKNOWN);
}

/* 1-based, 2 attributes and a marker per vertex, 1 attribute per triangle,
 * comments and blank lines everywhere, header defaults, a dotted stem. */
static void test_read_one_based_attributes(void **state) {
  (void)state;
  rm("sq.1.neigh");
  mft_text("sq.1.node",
           "# a square\n\n  4 2 2 1   # vertices dim attrs markers\n"
           "1 0 0 0.5 -1 1\n"
           "\n# second\n2 1 0 1.5 -2 0\n"
           "3\t1\t1\t2.5\t-3\t1 # tabs\n"
           "4 0 1 3.5 -4 7\n\n# end\n");
  mft_text("sq.1.ele", "2 3 1\n1 1 2 3 10.5\n# x\n2 1 3 4 -20\n");
  mb_mesh *m = mft_read(mft_path("sq.1.node"));
  assert_string_equal(m->name, "sq.1");
  assert_square(m);
  assert_int_equal(m->nfields, 2);
  assert_string_equal(m->fields[0].name, "attributes");
  assert_int_equal(m->fields[0].ncomp, 2);
  assert_true(m->fields[0].data[0] == 0.5 && m->fields[0].data[1] == -1);
  assert_true(m->fields[0].data[6] == 3.5 && m->fields[0].data[7] == -4);
  assert_string_equal(m->fields[1].name, "boundary_marker");
  const double marks[4] = {1, 0, 1, 7};
  assert_memory_equal(m->fields[1].data, marks, sizeof marks);
  assert_int_equal(m->nface_fields, 1);
  assert_string_equal(m->face_fields[0].name, "attributes");
  assert_true(m->face_fields[0].data[0] == 10.5 && m->face_fields[0].data[1] == -20);
  mb_mesh_free(m);
  /* header with only the vertex count: dimension 2, no attributes, 1 marker */
  mft_text("def.node", "3\n0 0 0 1\n1 1 0 1\n2 0 1 0\n");
  mft_text("def.ele", "1\n0 0 1 2\n");
  m = mft_read(mft_path("def.ele"));
  assert_int_equal(m->nf, 1);
  assert_int_equal(m->nfields, 1);
  mb_mesh_free(m);
}

/* 6-node triangles keep their first 3 nodes (the corners). */
static void test_quadratic(void **state) {
  (void)state;
  mft_text("q.node", "6 2 0 0\n0 0 0\n1 1 0\n2 0 1\n3 0.5 0.5\n4 0 0.5\n5 0.5 0\n");
  mft_text("q.ele", "1 6 0\n0 0 1 2 3 4 5\n");
  mb_mesh *m = mft_read(mft_path("q.node"));
  assert_int_equal(m->nv, 6);
  assert_int_equal(m->nf, 1);
  mft_assert_face(m, 0, 3, (int64_t[]){0, 1, 2});
  mb_mesh_free(m);
  mft_text("q2.node", "3 2 0 0\n0 0 0\n1 1 0\n2 0 1\n");
  mft_text("q2.ele", "1 6 0\n0 0 1 2 0 1 3\n");
  mft_read_fails(mft_path("q2.node"), FMT, "q2.ele:2: vertex index 3 out of range [0, 2]", NULL);
}

static void test_neigh(void **state) {
  (void)state;
  mft_text("n.node", SQ_NODE);
  mft_text("n.ele", SQ_ELE);
  /* triangle 0 = (0 1 2): edge opposite corner 1 is (2, 0), shared with 1 */
  mft_text("n.neigh", "2 3\n# t n0 n1 n2\n0 -1 1 -1\n1 -1 -1 0\n");
  mb_mesh *m = mft_read(mft_path("n.node"));
  assert_square(m);
  mb_mesh_free(m);
  mft_text("n.neigh", "2 3\n0 1 -1 -1\n1 -1 -1 0\n");
  mft_read_fails(mft_path("n.node"), FMT,
                 "n.neigh:2: triangle 0: neighbour 1 opposite corner 0 does not share the edge "
                 "(1, 2)",
                 NULL);
  mft_text("n.neigh", "2 3\n0 -1 -1 -1\n1 -1 -1 0\n");
  mft_read_fails(mft_path("n.node"), FMT,
                 "n.neigh:2: triangle 0 has no neighbour opposite corner 1, but triangle 1 "
                 "shares that edge",
                 NULL);
  mft_text("n.neigh", "2 3\n0 -1 5 -1\n1 -1 -1 0\n");
  mft_read_fails(mft_path("n.node"), FMT, "n.neigh:2: neighbour 5 out of range (-1 or [0, 1])",
                 NULL);
  mft_text("n.neigh", "3 3\n0 -1 1 -1\n1 -1 -1 0\n");
  mft_read_fails(mft_path("n.node"), FMT, "n.neigh:1: 3 triangles, but", "n.ele has 2", NULL);
  mft_text("n.neigh", "2 3\n0 -1 1 -1\n");
  mft_read_fails(mft_path("n.node"), FMT, "n.neigh:3: file ends after 1 of 2 triangles", NULL);
  mft_text("n.neigh", "2 3\n0 -1 1\n1 -1 -1 0\n");
  mft_read_fails(mft_path("n.node"), FMT, "n.neigh:2: expected a neighbour, got end of line",
                 NULL);
  /* 1-based */
  mft_text("n1.node", "4 2 0 0\n1 0 0\n2 1 0\n3 1 1\n4 0 1\n");
  mft_text("n1.ele", "2 3 0\n1 1 2 3\n2 1 3 4\n");
  mft_text("n1.neigh", "2 3\n1 -1 2 -1\n2 -1 -1 1\n");
  m = mft_read(mft_path("n1.ele"));
  assert_square(m);
  mb_mesh_free(m);
  unlink(mft_path("n.neigh"));
  m = mft_read(mft_path("n.node"));
  assert_square(m);
  mb_mesh_free(m);
}

static void test_node_errors(void **state) {
  (void)state;
  mft_text("e.ele", "1 3 0\n0 0 1 2\n");
  mft_text("e.node", "4 2 0 0\n0 0 0\n1 1 0\n2 0 1\n");
  mft_read_fails(mft_path("e.ele"), FMT, "e.node:5: file ends after 3 of 4 vertices", NULL);
  mft_text("e.node", "2 2 0 0\n0 0 0\n1 1 0\n2 0 1\n");
  mft_read_fails(mft_path("e.ele"), FMT,
                 "e.node:4: more vertex lines than the 2 announced in the header", NULL);
  mft_text("e.node", "3 3 0 0\n0 0 0 0\n1 1 0 0\n2 0 1 0\n");
  mft_read_fails(mft_path("e.ele"), FMT,
                 "e.node:1: dimension 3 is not supported (only 2D .node files are read)", NULL);
  mft_text("e.node", "3 2 0 0\n0 0 0\n1 nan 0\n2 0 1\n");
  mft_read_fails(mft_path("e.ele"), FMT, "e.node:3: non-finite coordinate 'nan'", NULL);
  mft_text("e.node", "3 2 0 0\n0 0 0\n1 1 0\n\n2 0 -inf\n");
  mft_read_fails(mft_path("e.ele"), FMT, "e.node:5: non-finite coordinate '-inf'", NULL);
  mft_text("e.node", "3 2 0 0\n0 0 0\n2 1 0\n3 0 1\n");
  mft_read_fails(mft_path("e.ele"), FMT, "e.node:3: vertex number 2 out of sequence (expected 1",
                 NULL);
  mft_text("e.node", "3 2 0 0\n2 0 0\n3 1 0\n4 0 1\n");
  mft_read_fails(mft_path("e.ele"), FMT, "e.node:2: the first vertex is numbered 2 (must be 0 or 1)",
                 NULL);
  mft_text("e.node", "3 2 0 0\n0 0 0\n1 1 0 5\n2 0 1\n");
  mft_read_fails(mft_path("e.ele"), FMT, "e.node:3: unexpected '5' after the coordinates", NULL);
  mft_text("e.node", "3 2 1 1\n0 0 0 0.5 1\n1 1 0 0.5\n2 0 1 0.5 1\n");
  mft_read_fails(mft_path("e.ele"), FMT,
                 "e.node:3: expected a boundary marker, got end of line", NULL);
  mft_text("e.node", "3 2 0 2\n0 0 0\n1 1 0\n2 0 1\n");
  mft_read_fails(mft_path("e.ele"), FMT, "e.node:1: the number of boundary markers must be 0 or 1",
                 NULL);
  mft_text("e.node", "three 2 0 0\n");
  mft_read_fails(mft_path("e.ele"), FMT, "e.node:1: expected the vertex count, got 'three'", NULL);
  mft_text("e.node", "# nothing\n\n");
  mft_read_fails(mft_path("e.ele"), FMT, "e.node:3: empty file", NULL);
  mft_text("e.node", "0 2 0 0\n");
  mft_read_fails(mft_path("e.ele"), FMT, "e.node:1: the header announces 0 vertices", NULL);
  /* a huge announced count must fail as truncation, not allocate */
  mft_text("e.node", "999999999999 2 0 0\n0 0 0\n");
  mft_read_fails(mft_path("e.ele"), FMT, "e.node:3: file ends after 1 of 999999999999 vertices",
                 NULL);
}

static void test_ele_errors(void **state) {
  (void)state;
  mft_text("f.node", SQ_NODE);
  mft_text("f.ele", "2 3 0\n0 0 1 2\n1 0 2 4\n");
  mft_read_fails(mft_path("f.node"), FMT, "f.ele:3: vertex index 4 out of range [0, 3]", NULL);
  mft_text("f.ele", "2 3 0\n0 0 1 2\n1 -1 2 3\n");
  mft_read_fails(mft_path("f.node"), FMT, "f.ele:3: vertex index -1 out of range [0, 3]", NULL);
  mft_text("f.ele", "3 3 0\n0 0 1 2\n1 0 2 3\n");
  mft_read_fails(mft_path("f.node"), FMT, "f.ele:4: file ends after 2 of 3 triangles", NULL);
  mft_text("f.ele", "1 3 0\n0 0 1 2\n1 0 2 3\n");
  mft_read_fails(mft_path("f.node"), FMT,
                 "f.ele:3: more triangle lines than the 1 announced in the header", NULL);
  mft_text("f.ele", "2 3 0\n0 0 1 2\n1 0 2\n");
  mft_read_fails(mft_path("f.node"), FMT, "f.ele:3: expected a vertex index, got end of line",
                 NULL);
  mft_text("f.ele", "2 4 0\n0 0 1 2 3\n1 0 2 3 1\n");
  mft_read_fails(mft_path("f.node"), FMT, "f.ele:1: 4 nodes per triangle (must be 3", NULL);
  mft_text("f.ele", "2 2 0\n0 0 1\n1 0 2\n");
  mft_read_fails(mft_path("f.node"), FMT, "f.ele:1: 2 nodes per triangle", NULL);
  mft_text("f.ele", "2 3 0\n0 0 1 2\n5 0 2 3\n");
  mft_read_fails(mft_path("f.node"), FMT, "f.ele:3: triangle number 5 out of sequence", NULL);
  /* the .ele must use the .node's base: a 1-based .ele with a 0-based .node */
  mft_text("f.ele", "2 3 0\n1 1 2 3\n2 1 3 4\n");
  mft_read_fails(mft_path("f.node"), FMT, "f.ele:2: triangle number 1 out of sequence", NULL);
  mft_text("f.ele", "2 3 0\n0 1 2 3\n1 1 3 4\n");
  mft_read_fails(mft_path("f.node"), FMT, "f.ele:3: vertex index 4 out of range [0, 3]", NULL);
  /* missing partner files, unknown extension */
  mft_text("lonely.node", SQ_NODE);
  unlink(mft_path("lonely.ele"));
  mft_read_fails(mft_path("lonely.node"), MB_ERR_IO, "lonely.ele: cannot open", NULL);
  mft_text("alone.ele", SQ_ELE);
  unlink(mft_path("alone.node"));
  mft_read_fails(mft_path("alone.ele"), MB_ERR_IO, "alone.node: cannot open", NULL);
  mb_mesh *m = NULL;
  mb_error_clear();
  assert_int_equal(mb_trianglefile_read(mft_path("x.poly"), &m), MB_ERR_ARG);
  assert_null(m);
}

/* Write then read: same doubles, same triangles, fields kept, .neigh written
 * and consistent; a polygon or a z != 0 is refused. */
static void test_roundtrip(void **state) {
  (void)state;
  const double xyz[] = {0, 0, 0, 0.1, 0, 0, 1.0 / 3.0, 0.7, 0, -1e-300, 1e300, 0, 2, 2, 0};
  const int64_t tri[] = {0, 1, 2, 0, 2, 3, 1, 4, 2};
  mb_mesh *m = mb_test_mesh_triangles("rt", 5, xyz, 3, tri);
  m->kind = MB_KIND_TRIANGULATION2D;
  const double marks[5] = {1, 0, 0, 1, 3}, fa[3] = {0.25, -1, 7};
  assert_int_equal(mb_mesh_set_field(m, "boundary_marker", 1, marks), MB_SUCCESS);
  assert_int_equal(mb_mesh_set_face_field(m, "attributes", 1, fa), MB_SUCCESS);
  assert_int_equal(mb_meshfile_write(mft_path("rt.node"), m), MB_SUCCESS);
  assert_true(mb_test_file_exists(mft_path("rt.ele")));
  assert_true(mb_test_file_exists(mft_path("rt.neigh")));
  assert_int_equal(mb_test_count_tmp_files(), 0);
  mb_mesh *r = mft_read(mft_path("rt.ele"));
  mb_test_assert_same_geometry(m, r);
  assert_int_equal(r->kind, MB_KIND_TRIANGULATION2D);
  assert_int_equal(r->nfields, 1);
  assert_memory_equal(r->fields[0].data, marks, sizeof marks);
  assert_int_equal(r->nface_fields, 1);
  assert_memory_equal(r->face_fields[0].data, fa, sizeof fa);
  mb_mesh_free(r);
  /* the stem form of mb_trianglefile_write */
  assert_int_equal(mb_trianglefile_write(mft_path("rt2"), m), MB_SUCCESS);
  r = mft_read(mft_path("rt2.node"));
  mb_test_assert_same_geometry(m, r);
  mb_mesh_free(r);
  m->xyz[5] = 0.5;
  mb_error_clear();
  assert_int_equal(mb_meshfile_write(mft_path("bad.node"), m), MB_ERR_ARG);
  mb_test_assert_message_contains("vertex 1 has z = 0.5");
  assert_false(mb_test_file_exists(mft_path("bad.node")));
  mb_mesh_free(m);
  mb_mesh *p = NULL;
  assert_int_equal(mb_mesh_create("poly", 4, 1, 4, &p), MB_SUCCESS);
  p->face_offsets[1] = 4;
  for (int k = 0; k < 4; k++) p->face_indices[k] = k;
  mb_error_clear();
  assert_int_equal(mb_meshfile_write(mft_path("poly.ele"), p), MB_ERR_ARG);
  mb_test_assert_message_contains("triangles only");
  mb_mesh_free(p);
  assert_int_equal(mb_test_count_tmp_files(), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_read_zero_based),  cmocka_unit_test(test_read_one_based_attributes),
      cmocka_unit_test(test_quadratic),        cmocka_unit_test(test_neigh),
      cmocka_unit_test(test_node_errors),      cmocka_unit_test(test_ele_errors),
      cmocka_unit_test(test_roundtrip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
