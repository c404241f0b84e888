/* meshbatch: meshes distributed in slabs (mb_collection_read_slab and
 * mb_collection_write_slabs). A collection written whole by rank 0 is read
 * back in block slabs by every rank and rewritten in slabs: the two files must
 * hold the same datasets, attributes and XDMF companions. Run with 1 to 4
 * MPI ranks (a 3-vertex mesh on 4 ranks gives empty slabs). */
#include <dirent.h>
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mb_collection.h"
#include "mb_testutil.h"
#include "coll_h5compare.h"

static int g_rank, g_size;

enum { NMESH = 4 };

/* Row r's block of n rows over the ranks: [n r / P, n (r + 1) / P). */
static int64_t block(int64_t n, int r) { return n * r / g_size; }

/* ---- the meshes */

/* A polygon mesh from xyz [nv,3], face sizes [nf] and concatenated indices. */
static mb_mesh *polygons(const char *name, int64_t nv, const double *xyz, int64_t nf,
                         const int *sizes, const int64_t *idx) {
  int64_t nidx = 0;
  for (int64_t f = 0; f < nf; f++) nidx += sizes[f];
  mb_mesh *m = NULL;
  assert_int_equal(mb_mesh_create(name, nv, nf, nidx, &m), MB_SUCCESS);
  memcpy(m->xyz, xyz, sizeof(double) * 3 * (size_t)nv);
  for (int64_t f = 0; f < nf; f++) m->face_offsets[f + 1] = m->face_offsets[f] + sizes[f];
  memcpy(m->face_indices, idx, sizeof(int64_t) * (size_t)nidx);
  return m;
}

/* "grid": a 6 x 5 vertex grid split into 40 triangles, field "uv" [30,2]. */
static mb_mesh *make_grid(void) {
  enum { NX = 6, NY = 5 };
  double xyz[3 * NX * NY], uv[2 * NX * NY];
  int64_t tri[6 * (NX - 1) * (NY - 1)], k = 0;
  for (int j = 0; j < NY; j++)
    for (int i = 0; i < NX; i++) {
      int v = j * NX + i;
      xyz[3 * v] = i + 0.125 * j;
      xyz[3 * v + 1] = j;
      xyz[3 * v + 2] = 0.01 * i * j;
      uv[2 * v] = i / (NX - 1.0);
      uv[2 * v + 1] = -j / (NY - 1.0);
    }
  for (int j = 0; j + 1 < NY; j++)
    for (int i = 0; i + 1 < NX; i++) {
      int64_t a = j * NX + i, b = a + 1, c = a + NX + 1, d = a + NX;
      int64_t t[6] = {a, b, c, a, c, d};
      memcpy(tri + k, t, sizeof t);
      k += 6;
    }
  mb_mesh *m = mb_test_mesh_triangles("grid", NX * NY, xyz, 2 * (NX - 1) * (NY - 1), tri);
  m->index = 0;
  assert_int_equal(mb_mesh_set_field(m, "uv", 2, uv), MB_SUCCESS);
  mb_attrs_set(&m->attrs, "source", "grid.obj");
  mb_attrs_set(&m->attrs, "stage0", "smooth: laplace passes=3");
  mb_attrs_set(&m->attrs, "ranks", "1");
  return m;
}

/* "poly": a strip of 2 x 8 vertices with quads, triangles and one pentagon
 * (face 3), so xdmf_triangles exists; field "t" [16,3]. */
static mb_mesh *make_poly(void) {
  double xyz[3 * 16], t[3 * 16];
  for (int k = 0; k < 8; k++) {
    double b[3] = {k, 0, 0.5 * k}, top[3] = {k + 0.25, 1, -0.5 * k};
    memcpy(xyz + 3 * k, b, sizeof b);
    memcpy(xyz + 3 * (8 + k), top, sizeof top);
  }
  for (int i = 0; i < 3 * 16; i++) t[i] = i * 0.5 - 3;
  const int sizes[] = {4, 3, 3, 5, 3, 4, 3, 3, 4};
  const int64_t idx[] = {0, 1, 9, 8,  1, 2, 10,  1, 10, 9,  2, 3, 4, 12, 11,  2, 11, 10,
                         4, 5, 13, 12,  5, 6, 14,  5, 14, 13,  6, 7, 15, 14};
  mb_mesh *m = polygons("poly", 16, xyz, 9, sizes, idx);
  m->index = 1;
  assert_int_equal(mb_mesh_set_field(m, "t", 3, t), MB_SUCCESS);
  mb_attrs_set(&m->attrs, "source", "poly.off");
  return m;
}

/* "solo": one triangle (fewer vertices than ranks on 4 ranks). */
static mb_mesh *make_solo(void) {
  const double xyz[] = {0, 0, 0, 1, 0, 0, 0, 1, 1e-300};
  const int64_t tri[] = {0, 1, 2};
  mb_mesh *m = mb_test_mesh_triangles("solo", 3, xyz, 1, tri);
  m->index = 2;
  return m;
}

/* "whole": a quad and a triangle, written whole (beside the slabs). */
static mb_mesh *make_whole(void) {
  const double xyz[] = {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, -1, 0.5, 0.125};
  const int sizes[] = {4, 3};
  const int64_t idx[] = {0, 1, 2, 3, 0, 3, 4};
  mb_mesh *m = polygons("whole", 5, xyz, 2, sizes, idx);
  m->index = 3;
  mb_attrs_set(&m->attrs, "note", "held whole");
  return m;
}

static void make_meshes(mb_mesh *m[NMESH]) {
  m[0] = make_grid();
  m[1] = make_poly();
  m[2] = make_solo();
  m[3] = make_whole();
}

static void free_meshes(mb_mesh *m[NMESH]) {
  for (int i = 0; i < NMESH; i++) mb_mesh_free(m[i]);
}

/* Rows of m as a slab: vertex rows [v0, v0 + nv), face rows [f0, f0 + nf). */
static mb_mesh_slab cut_slab(const mb_mesh *m, int64_t v0, int64_t nv, int64_t f0, int64_t nf) {
  mb_mesh_slab s;
  assert_int_equal(mb_mesh_slab_cut(m, v0, nv, f0, nf, &s), MB_SUCCESS);
  return s;
}

/* The same mesh at the same collection position. */
static void assert_same_mesh_at(const mb_mesh *a, const mb_mesh *b) {
  assert_int_equal(a->index, b->index);
  mb_test_assert_same_mesh(a, b);
}

/* This rank's block slab of m. */
static mb_mesh_slab block_slab(const mb_mesh *m) {
  int64_t v0 = block(m->nv, g_rank), f0 = block(m->nf, g_rank);
  return cut_slab(m, v0, block(m->nv, g_rank + 1) - v0, f0, block(m->nf, g_rank + 1) - f0);
}

/* ---- XDMF text */

static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = calloc((size_t)n + 1, 1);
  assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  return s;
}

/* <stem>A<rest> and <stem>B<rest> hold the same text up to "A.h5" -> "B.h5". */
static void compare_xdmf(const char *rest) {
  char pa[1024], pb[1024], na[64], nb[64];
  snprintf(na, sizeof na, "A%s", rest);
  snprintf(nb, sizeof nb, "B%s", rest);
  char *a = read_text(mb_test_tmp_path(na, pa, sizeof pa));
  char *b = read_text(mb_test_tmp_path(nb, pb, sizeof pb));
  int refs = 0;
  for (char *p = strstr(a, "A.h5"); p; p = strstr(p + 4, "A.h5"), refs++) p[0] = 'B';
  assert_true(refs > 0);
  if (strcmp(a, b)) fail_msg("%s differs from %s (A.h5 read as B.h5)", pb, pa);
  free(a);
  free(b);
}

/* ---- tests */

/* Rank 0 writes A.h5 whole; every rank reads its block slabs from A.h5 and
 * all write them to B.h5 ("whole" stays whole, on the last rank). */
static void test_slab_roundtrip(void **state) {
  (void)state;
  char pa[1024], pb[1024];
  mb_test_tmp_path("A.h5", pa, sizeof pa);
  mb_test_tmp_path("B.h5", pb, sizeof pb);
  mb_mesh *ref[NMESH];
  make_meshes(ref);
  mb_error e = mb_collection_write(MPI_COMM_WORLD, pa, g_rank == 0 ? NMESH : 0, ref);
  if (e) fail_msg("write A: %s\n%s", mb_error_message(), mb_error_traceback());

  mb_collection *c = NULL;
  assert_int_equal(mb_collection_open(MPI_COMM_WORLD, pa, &c), MB_SUCCESS);
  mb_mesh_slab slabs[NMESH - 1];
  for (int i = 0; i < NMESH - 1; i++) {
    const mb_mesh *m = ref[i];
    int64_t v0 = block(m->nv, g_rank), f0 = block(m->nf, g_rank);
    e = mb_collection_read_slab(c, i, v0, block(m->nv, g_rank + 1) - v0, f0,
                                block(m->nf, g_rank + 1) - f0, &slabs[i]);
    if (e) fail_msg("read slab of %s: %s", m->name, mb_error_message());
    mb_mesh_slab cut = block_slab(m);
    assert_same_mesh_at(slabs[i].rows, cut.rows);
    assert_int_equal(slabs[i].vertex_start, v0);
    assert_int_equal(slabs[i].face_start, f0);
    assert_int_equal(slabs[i].nv, m->nv);
    assert_int_equal(slabs[i].nf, m->nf);
    mb_mesh_free(cut.rows);
    /* the attributes written are those of the slab at vertex row 0 */
    if (slabs[i].vertex_start > 0) mb_attrs_set(&slabs[i].rows->attrs, "source", "not written");
  }
  assert_int_equal(mb_collection_close(c), MB_SUCCESS);

  int last = g_rank == g_size - 1;
  e = mb_collection_write_slabs(MPI_COMM_WORLD, pb, last, &ref[NMESH - 1], NMESH - 1, slabs);
  if (e) fail_msg("write B: %s\n%s", mb_error_message(), mb_error_traceback());
  for (int i = 0; i < NMESH - 1; i++) mb_mesh_free(slabs[i].rows);

  mb_collection *ca = NULL, *cb = NULL;
  assert_int_equal(mb_collection_open(MPI_COMM_WORLD, pa, &ca), MB_SUCCESS);
  assert_int_equal(mb_collection_open(MPI_COMM_WORLD, pb, &cb), MB_SUCCESS);
  assert_int_equal(mb_collection_count(cb), NMESH);
  const int tri[NMESH] = {1, 0, 1, 0};
  for (int i = 0; i < NMESH; i++) {
    mb_mesh *a = NULL, *b = NULL;
    assert_int_equal(mb_collection_read(ca, i, &a), MB_SUCCESS);
    assert_int_equal(mb_collection_read(cb, i, &b), MB_SUCCESS);
    assert_int_equal(mb_collection_info(cb, i)->triangles, tri[i]);
    assert_same_mesh_at(a, b);
    ref[i]->index = i;
    assert_same_mesh_at(ref[i], b);
    mb_mesh_free(a);
    mb_mesh_free(b);
  }
  assert_int_equal(mb_collection_close(ca), MB_SUCCESS);
  assert_int_equal(mb_collection_close(cb), MB_SUCCESS);
  free_meshes(ref);
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) {
    hid_t fb = H5Fopen(pb, H5F_ACC_RDONLY, H5P_DEFAULT); /* the fan exists (pentagon) */
    assert_true(fb >= 0 && H5Lexists(fb, "/meshes/poly/xdmf_triangles", H5P_DEFAULT) > 0);
    H5Fclose(fb);
    assert_int_equal(compare_files(pa, pb), 3 + 6 + 2 + 4);
    const char *xdmf[] = {".xdmf", ".grid.xdmf", ".poly.xdmf", ".solo.xdmf", ".whole.xdmf"};
    for (int i = 0; i < 5; i++) compare_xdmf(xdmf[i]);
  }
  assert_int_equal(mb_test_count_tmp_files(), 0);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Slabs of "grid" and "poly" from this rank's blocks, with the vertex start
 * of the last rank's grid slab moved by dv (its rows shortened or grown). */
static mb_error write_shifted(const char *path, int64_t dv, int64_t df) {
  mb_mesh *m[NMESH];
  make_meshes(m);
  mb_mesh_slab s[2] = {block_slab(m[0]), block_slab(m[1])};
  if (g_rank == g_size - 1) {
    mb_mesh_slab *g = &s[0];
    int64_t v0 = g->vertex_start + dv, f0 = s[1].face_start + df;
    mb_mesh_free(g->rows);
    *g = cut_slab(m[0], v0, m[0]->nv - v0, block(m[0]->nf, g_rank),
                  m[0]->nf - block(m[0]->nf, g_rank));
    mb_mesh_free(s[1].rows);
    s[1] = cut_slab(m[1], block(m[1]->nv, g_rank), m[1]->nv - block(m[1]->nv, g_rank), f0,
                    m[1]->nf - f0);
  }
  mb_error e = mb_collection_write_slabs(MPI_COMM_WORLD, path, 0, NULL, 2, s);
  mb_mesh_free(s[0].rows);
  mb_mesh_free(s[1].rows);
  free_meshes(m);
  return e;
}

/* Slabs that overlap or leave a gap: MB_ERR_ARG on every rank, no file. */
static void test_slabs_must_tile(void **state) {
  (void)state;
  char path[1024];
  struct {
    const char *name;
    int64_t dv, df;
    const char *needle;
  } cases[] = {
      {"gap.h5", 1, 0, "slabs of mesh 'grid' leave a gap at vertex row"},
      {"facegap.h5", 0, 1, "slabs of mesh 'poly' leave a gap at face row"},
      {"overlap.h5", -1, 0, "slabs of mesh 'grid' overlap at vertex row"}, /* 2+ ranks */
  };
  for (int k = 0; k < (g_size > 1 ? 3 : 2); k++) {
    mb_test_tmp_path(cases[k].name, path, sizeof path);
    mb_error e = write_shifted(path, cases[k].dv, cases[k].df);
    if (e != MB_ERR_ARG) fail_msg("%s: got %d (%s)", cases[k].name, e, mb_error_message());
    mb_test_assert_message_contains(cases[k].needle);
    MPI_Barrier(MPI_COMM_WORLD);
    assert_false(mb_test_file_exists(path));
    assert_int_equal(mb_test_count_tmp_files(), 0);
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

/* Slabs of one mesh that disagree on nv, and a read outside the mesh. */
static void test_slab_errors(void **state) {
  (void)state;
  char path[1024];
  mb_test_tmp_path("disagree.h5", path, sizeof path);
  mb_mesh *m = make_grid();
  mb_mesh_slab s = block_slab(m);
  if (g_rank == g_size - 1) s.nv++; /* alone on 1 rank: a gap at the end */
  mb_error e = mb_collection_write_slabs(MPI_COMM_WORLD, path, 0, NULL, 1, &s);
  assert_int_equal(e, MB_ERR_ARG);
  mb_test_assert_message_contains(g_size > 1 ? "disagree on the number of vertices"
                                             : "leave a gap at vertex row 30");
  mb_mesh_free(s.rows);
  MPI_Barrier(MPI_COMM_WORLD);
  assert_false(mb_test_file_exists(path));

  mb_test_tmp_path("one.h5", path, sizeof path);
  assert_int_equal(mb_collection_write(MPI_COMM_WORLD, path, g_rank == 0, &m), MB_SUCCESS);
  mb_collection *c = NULL;
  assert_int_equal(mb_collection_open(MPI_COMM_WORLD, path, &c), MB_SUCCESS);
  mb_mesh_slab r = {NULL, 0, 0, 0, 0};
  assert_int_equal(mb_collection_read_slab(c, 0, 25, 6, 0, 1, &r), MB_ERR_ARG);
  mb_test_assert_message_contains("vertex rows [25, 31) outside [0, 30)");
  assert_int_equal(mb_collection_read_slab(c, 0, 0, 1, 40, 1, &r), MB_ERR_ARG);
  assert_null(r.rows);
  assert_int_equal(mb_collection_read_slab(c, 0, 30, 0, 40, 0, &r), MB_SUCCESS);
  assert_int_equal(r.rows->nv, 0);
  assert_int_equal(r.rows->nf, 0);
  assert_int_equal(r.rows->nfields, 1);
  mb_mesh_free(r.rows);
  assert_int_equal(mb_collection_close(c), MB_SUCCESS);
  mb_mesh_free(m);
  MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_slab_roundtrip),
      cmocka_unit_test(test_slabs_must_tile),
      cmocka_unit_test(test_slab_errors),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any ? 1 : 0;
}
