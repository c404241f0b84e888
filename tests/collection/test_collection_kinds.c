/* meshbatch: collections of every dataset kind (surface, triangulation2d,
 * polygons2d) and per-face fields: bitwise round trips of a mixed collection,
 * rank-count independence, the on-disk layout of each kind, files of format
 * version 1, slabs of planar kinds, the errors of the kind rules, and the
 * one-process writer (meshes put, or described and written by a holder).
 * Run with 1 to 4 MPI ranks. */
#include <fcntl.h>
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll_kinds.h"
#include "mb_collection.h"
#include "mb_testutil.h"
#include "coll_h5compare.h"

static int g_rank, g_size;

/* ---- helpers */

static void assert_same_fields(int n, const mb_field *a, const mb_field *b, int64_t rows) {
  for (int f = 0; f < n; f++) {
    assert_string_equal(a[f].name, b[f].name);
    assert_int_equal(a[f].ncomp, b[f].ncomp);
    if (rows)
      assert_memory_equal(a[f].data, b[f].data, sizeof(double) * (size_t)rows * (size_t)a[f].ncomp);
  }
}

/* a and b are the same dataset, bit for bit: kind, name, index, vertices,
 * faces, per-vertex and per-face fields, attributes. */
static void assert_same_dataset(const mb_mesh *a, const mb_mesh *b) {
  assert_string_equal(a->name, b->name);
  if (a->kind != b->kind)
    fail_msg("%s: kind %s, expected %s", a->name, mb_kind_name(b->kind), mb_kind_name(a->kind));
  assert_int_equal(a->index, b->index);
  assert_int_equal(a->nv, b->nv);
  assert_int_equal(a->nf, b->nf);
  if (a->nv) assert_memory_equal(a->xyz, b->xyz, sizeof(double) * 3 * (size_t)a->nv);
  assert_memory_equal(a->face_offsets, b->face_offsets, sizeof(int64_t) * (size_t)(a->nf + 1));
  if (a->face_offsets[a->nf])
    assert_memory_equal(a->face_indices, b->face_indices,
                        sizeof(int64_t) * (size_t)a->face_offsets[a->nf]);
  assert_int_equal(a->nfields, b->nfields);
  assert_same_fields(a->nfields, a->fields, b->fields, a->nv);
  assert_int_equal(a->nface_fields, b->nface_fields);
  assert_same_fields(a->nface_fields, a->face_fields, b->face_fields, a->nf);
  assert_int_equal(a->attrs.n, b->attrs.n);
  for (int i = 0; i < a->attrs.n; i++) {
    assert_string_equal(a->attrs.keys[i], b->attrs.keys[i]);
    assert_string_equal(a->attrs.values[i], b->attrs.values[i]);
  }
}

/* Write the kind samples over comm (dataset j on rank (j + 2) % size). */
static mb_error write_kinds(MPI_Comm comm, const char *path) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  mb_mesh *all[KINDS_NMESH], *local[KINDS_NMESH];
  kinds_make(all);
  int n = kinds_local(all, rank, size, local);
  mb_error e = mb_collection_write(comm, path, n, local);
  kinds_free(all);
  return e;
}

/* A string attribute of an HDF5 object (serial HDF5), as a new string. */
static char *h5_str_attr(hid_t loc, const char *obj, const char *name) {
  hid_t a = H5Aopen_by_name(loc, obj, name, H5P_DEFAULT, H5P_DEFAULT);
  if (a < 0) return NULL;
  hid_t t = H5Aget_type(a);
  assert_int_equal(H5Tget_class(t), H5T_STRING);
  size_t n = H5Tget_size(t);
  char *s = calloc(n + 1, 1);
  assert_true(H5Aread(a, t, s) >= 0);
  H5Tclose(t);
  H5Aclose(a);
  return s;
}

/* Shape of dataset path in f: rank and dims (rank -1 if missing). */
static int h5_shape(hid_t f, const char *path, hsize_t dims[2]) {
  if (H5Lexists(f, path, H5P_DEFAULT) <= 0) return -1;
  hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
  hid_t sp = H5Dget_space(d);
  dims[0] = dims[1] = 0;
  int r = H5Sget_simple_extent_dims(sp, dims, NULL);
  H5Sclose(sp);
  H5Dclose(d);
  return r;
}

static void assert_shape(hid_t f, const char *mesh, const char *dset, int rank, hsize_t d0,
                         hsize_t d1) {
  char path[512];
  hsize_t dims[2];
  snprintf(path, sizeof path, "/meshes/%s/%s", mesh, dset);
  int r = h5_shape(f, path, dims);
  if (r != rank || dims[0] != d0 || (rank == 2 && dims[1] != d1))
    fail_msg("%s: rank %d [%llu,%llu], expected rank %d [%llu,%llu]", path, r,
             (unsigned long long)dims[0], (unsigned long long)dims[1], rank,
             (unsigned long long)d0, (unsigned long long)d1);
}

static void assert_absent(hid_t f, const char *mesh, const char *dset) {
  char path[512];
  snprintf(path, sizeof path, "/meshes/%s/%s", mesh, dset);
  if (H5Lexists(f, path, H5P_DEFAULT) > 0) fail_msg("%s exists", path);
}

/* The layout of docs/format.md for each kind, read with serial HDF5. */
static void check_layout(const char *path, mb_mesh *ref[KINDS_NMESH]) {
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  assert_true(f >= 0);
  hid_t a = H5Aopen(f, "format_version", H5P_DEFAULT);
  int v = 0;
  assert_true(H5Aread(a, H5T_NATIVE_INT, &v) >= 0);
  H5Aclose(a);
  assert_int_equal(v, MB_COLLECTION_FORMAT_VERSION);
  assert_int_equal(v, 2);
  for (int i = 0; i < KINDS_NMESH; i++) {
    const mb_mesh *m = ref[i];
    char obj[300];
    snprintf(obj, sizeof obj, "/meshes/%s", m->name);
    char *kind = h5_str_attr(f, obj, "kind");
    assert_non_null(kind);
    assert_string_equal(kind, mb_kind_name(m->kind));
    free(kind);
    int planar = m->kind != MB_KIND_SURFACE;
    assert_shape(f, m->name, "vertices", 2, (hsize_t)m->nv, planar ? 2 : 3);
    int64_t nidx = m->face_offsets[m->nf];
    if (m->kind == MB_KIND_TRIANGULATION2D) {
      assert_shape(f, m->name, "triangles", 2, (hsize_t)m->nf, 3);
      assert_absent(f, m->name, "face_offsets");
      assert_absent(f, m->name, "xdmf_mixed");
    } else {
      assert_absent(f, m->name, "triangles");
      assert_shape(f, m->name, "face_offsets", 1, (hsize_t)m->nf + 1, 0);
      assert_shape(f, m->name, "face_indices", 1, (hsize_t)nidx, 0);
    }
    int big = 0;
    for (int64_t k = 0; k < m->nf; k++) big |= m->face_offsets[k + 1] - m->face_offsets[k] >= 5;
    for (int k = 0; k < m->nface_fields; k++) {
      char d[300];
      snprintf(d, sizeof d, "face_fields/%s", m->face_fields[k].name);
      assert_shape(f, m->name, d, 2, (hsize_t)m->nf, (hsize_t)m->face_fields[k].ncomp);
      snprintf(d, sizeof d, "xdmf_fan_fields/%s", m->face_fields[k].name);
      if (big)
        assert_shape(f, m->name, d, 2, (hsize_t)(nidx - 2 * m->nf),
                     (hsize_t)m->face_fields[k].ncomp);
      else
        assert_absent(f, m->name, d);
    }
    if (!m->nface_fields) assert_absent(f, m->name, "face_fields");
  }
  H5Fclose(f);
}

/* ---- tests */

/* A mixed collection (surface, triangulation2d, polygons2d) written over all
 * ranks reads back bit for bit, whole and listed with its kinds. */
static void test_kinds_roundtrip(void **state) {
  (void)state;
  char path[1024], x[1024];
  mb_test_tmp_path("kinds.h5", path, sizeof path);
  mb_error e = write_kinds(MPI_COMM_WORLD, path);
  if (e) fail_msg("write: %s\n%s", mb_error_message(), mb_error_traceback());
  mb_mesh *ref[KINDS_NMESH];
  kinds_make(ref);
  mb_collection *c = NULL;
  e = mb_collection_open(MPI_COMM_WORLD, path, &c);
  if (e) fail_msg("open: %s", mb_error_message());
  assert_int_equal(mb_collection_count(c), KINDS_NMESH);
  assert_int_equal(mb_collection_version(c), 2);
  const int tri[KINDS_NMESH] = {0, 1, 0, 0, 1};
  for (int k = 0; k < KINDS_NMESH; k++) {
    int i = (k + g_rank) % KINDS_NMESH;
    const mb_mesh_info *info = mb_collection_info(c, i);
    assert_string_equal(info->name, ref[i]->name);
    assert_int_equal(info->kind, ref[i]->kind);
    assert_int_equal(info->index, i);
    assert_int_equal(info->nv, ref[i]->nv);
    assert_int_equal(info->nf, ref[i]->nf);
    assert_int_equal(info->nidx, ref[i]->face_offsets[ref[i]->nf]);
    assert_int_equal(info->triangles, tri[i]);
    mb_mesh *m = NULL;
    e = mb_collection_read(c, i, &m);
    if (e) fail_msg("read %d: %s", i, mb_error_message());
    assert_same_dataset(ref[i], m);
    mb_mesh_free(m);
  }
  assert_int_equal(mb_collection_close(c), MB_SUCCESS);
  if (g_rank == 0) check_layout(path, ref);
  kinds_free(ref);
  const char *companions[] = {"kinds.xdmf", "kinds.surf.xdmf", "kinds.tri2d.xdmf",
                              "kinds.poly2d.xdmf", "kinds.quad2d.xdmf", "kinds.tiny2d.xdmf"};
  for (int i = 0; i < 6; i++)
    assert_true(mb_test_file_exists(mb_test_tmp_path(companions[i], x, sizeof x)));
  assert_int_equal(mb_test_count_tmp_files(), 0);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Written with 1..size ranks: the same datasets, bit for bit. */
static void test_kinds_rank_independence(void **state) {
  (void)state;
  check_rank_independence("kri", write_kinds, KINDS_NDATASETS);
}

/* ---- format version 1 */

static void v1_str_attr(hid_t loc, const char *name, const char *value) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, strlen(value) + 1);
  H5Tset_strpad(t, H5T_STR_NULLTERM);
  H5Tset_cset(t, H5T_CSET_UTF8);
  hid_t sp = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(loc, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
  assert_true(a >= 0);
  assert_true(H5Awrite(a, t, value) >= 0);
  H5Aclose(a);
  H5Sclose(sp);
  H5Tclose(t);
}

static void v1_dataset(hid_t loc, const char *name, hid_t ft, hid_t mt, int rank, hsize_t d0,
                       hsize_t d1, const void *data) {
  hsize_t dims[2] = {d0, d1};
  hid_t sp = H5Screate_simple(rank, dims, NULL);
  hid_t d = H5Dcreate2(loc, name, ft, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  assert_true(d >= 0);
  assert_true(H5Dwrite(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
  H5Dclose(d);
  H5Sclose(sp);
}

static hid_t v1_group(hid_t loc, const char *name) {
  hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
  H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  H5Pset_attr_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  hid_t g = H5Gcreate2(loc, name, H5P_DEFAULT, gcpl, H5P_DEFAULT);
  H5Pclose(gcpl);
  assert_true(g >= 0);
  return g;
}

/* The two meshes of the version-1 file, as they must read back. */
static void v1_meshes(mb_mesh *m[2]) {
  const double px[] = {0, 0, 0.5, 1, 0, 0.25, 1, 1, 0, 0, 1, -0.125, -1, 0.5, 2};
  const int ps[] = {5};
  const int64_t pi[] = {0, 1, 2, 3, 4};
  m[0] = kinds_mesh("old_poly", MB_KIND_SURFACE, 0, 5, px, 1, ps, pi);
  kinds_die(mb_attrs_set(&m[0]->attrs, "source", "old.off"));
  const double tx[] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
  const int ts[] = {3, 3};
  const int64_t ti[] = {0, 1, 2, 0, 2, 3};
  m[1] = kinds_mesh("old_tri", MB_KIND_SURFACE, 1, 4, tx, 2, ts, ti);
  const double t[] = {1, 2, 3, 4};
  kinds_die(mb_mesh_set_field(m[1], "t", 1, t));
  /* in version 1 "kind" is an ordinary provenance attribute */
  kinds_die(mb_attrs_set(&m[1]->attrs, "stage0", "smooth: laplace passes=2"));
  kinds_die(mb_attrs_set(&m[1]->attrs, "kind", "an old provenance value"));
}

/* A file laid out as meshbatch wrote it before kinds (format_version 1, no
 * `kind` attribute, vertices [N,3], xdmf_mixed), built with serial HDF5. */
static void write_v1_file(const char *path) {
  mb_mesh *m[2];
  v1_meshes(m);
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  assert_true(f >= 0);
  v1_str_attr(f, "format", "meshbatch-collection");
  int one = 1;
  hid_t sp = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(f, "format_version", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
  assert_true(H5Awrite(a, H5T_NATIVE_INT, &one) >= 0);
  H5Aclose(a);
  hid_t ms = v1_group(f, "meshes");
  for (int i = 0; i < 2; i++) {
    hid_t g = v1_group(ms, m[i]->name);
    int64_t index = i;
    a = H5Acreate2(g, "index", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(H5Awrite(a, H5T_NATIVE_INT64, &index) >= 0);
    H5Aclose(a);
    for (int k = 0; k < m[i]->attrs.n; k++)
      v1_str_attr(g, m[i]->attrs.keys[k], m[i]->attrs.values[k]);
    v1_dataset(g, "vertices", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, (hsize_t)m[i]->nv, 3,
               m[i]->xyz);
    if (i == 1) {
      v1_dataset(g, "triangles", H5T_STD_I64LE, H5T_NATIVE_INT64, 2, 2, 3, m[i]->face_indices);
      hid_t fg = v1_group(g, "fields");
      v1_dataset(fg, "t", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, 4, 1, m[i]->fields[0].data);
      H5Gclose(fg);
    } else {
      const int64_t mixed[] = {3, 5, 0, 1, 2, 3, 4};
      v1_dataset(g, "face_offsets", H5T_STD_I64LE, H5T_NATIVE_INT64, 1, 2, 0,
                 m[i]->face_offsets);
      v1_dataset(g, "face_indices", H5T_STD_I64LE, H5T_NATIVE_INT64, 1, 5, 0,
                 m[i]->face_indices);
      v1_dataset(g, "xdmf_mixed", H5T_STD_I64LE, H5T_NATIVE_INT64, 1, 7, 0, mixed);
      const int64_t fan[] = {0, 1, 2, 0, 2, 3, 0, 3, 4};
      v1_dataset(g, "xdmf_triangles", H5T_STD_I64LE, H5T_NATIVE_INT64, 2, 3, 3, fan);
    }
    H5Gclose(g);
  }
  H5Sclose(sp);
  H5Gclose(ms);
  H5Fclose(f);
  mb_mesh_free(m[0]);
  mb_mesh_free(m[1]);
}

/* A version-1 file opens, lists and reads (whole and in slabs) as surfaces;
 * its "kind" attribute stays a provenance attribute. Rewritten, it becomes
 * a version-2 file of surfaces. */
static void test_read_version1(void **state) {
  (void)state;
  char path[1024], p2[1024];
  mb_test_tmp_path("v1.h5", path, sizeof path);
  if (g_rank == 0) write_v1_file(path);
  MPI_Barrier(MPI_COMM_WORLD);
  mb_mesh *ref[2];
  v1_meshes(ref);
  mb_collection *c = NULL;
  mb_error e = mb_collection_open(MPI_COMM_WORLD, path, &c);
  if (e) fail_msg("open v1: %s", mb_error_message());
  assert_int_equal(mb_collection_version(c), 1);
  assert_int_equal(mb_collection_count(c), 2);
  mb_mesh *got[2];
  for (int i = 0; i < 2; i++) {
    assert_int_equal(mb_collection_info(c, i)->kind, MB_KIND_SURFACE);
    assert_int_equal(mb_collection_info(c, i)->triangles, i == 1);
    e = mb_collection_read(c, i, &got[i]);
    if (e) fail_msg("read v1 %d: %s", i, mb_error_message());
    assert_same_dataset(ref[i], got[i]);
    /* a slab of this rank's block of rows */
    int64_t v0 = ref[i]->nv * g_rank / g_size, v1 = ref[i]->nv * (g_rank + 1) / g_size;
    int64_t f0 = ref[i]->nf * g_rank / g_size, f1 = ref[i]->nf * (g_rank + 1) / g_size;
    mb_mesh_slab s, cut;
    assert_int_equal(mb_collection_read_slab(c, i, v0, v1 - v0, f0, f1 - f0, &s), MB_SUCCESS);
    assert_int_equal(mb_mesh_slab_cut(ref[i], v0, v1 - v0, f0, f1 - f0, &cut), MB_SUCCESS);
    assert_same_dataset(cut.rows, s.rows);
    mb_mesh_free(s.rows);
    mb_mesh_free(cut.rows);
  }
  assert_string_equal(mb_attrs_get(&got[1]->attrs, "kind"), "an old provenance value");
  assert_int_equal(mb_collection_close(c), MB_SUCCESS);
  /* rewriting: "kind" is now reserved */
  mb_test_tmp_path("v1to2.h5", p2, sizeof p2);
  e = mb_collection_write(MPI_COMM_WORLD, p2, g_rank == 0 ? 2 : 0, got);
  assert_int_equal(e, MB_ERR_ARG);
  mb_test_assert_message_contains("attribute key 'kind' is reserved");
  for (int i = 0; i < 2; i++) mb_attrs_clear(&got[i]->attrs);
  e = mb_collection_write(MPI_COMM_WORLD, p2, g_rank == 0 ? 2 : 0, got);
  if (e) fail_msg("rewrite: %s", mb_error_message());
  assert_int_equal(mb_collection_open(MPI_COMM_WORLD, p2, &c), MB_SUCCESS);
  assert_int_equal(mb_collection_version(c), 2);
  for (int i = 0; i < 2; i++) {
    mb_mesh *m = NULL;
    assert_int_equal(mb_collection_read(c, i, &m), MB_SUCCESS);
    assert_same_dataset(got[i], m);
    mb_mesh_free(m);
  }
  assert_int_equal(mb_collection_close(c), MB_SUCCESS);
  for (int i = 0; i < 2; i++) {
    mb_mesh_free(got[i]);
    mb_mesh_free(ref[i]);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* ---- slabs of planar kinds */

static int64_t block(int64_t n, int r) { return n * r / g_size; }

/* Rank 0 writes A whole; every rank reads its block slabs of every dataset
 * from A (checked against mb_mesh_slab_cut) and all write them to B: the two
 * files hold the same datasets and XDMF text. */
static void test_planar_slabs(void **state) {
  (void)state;
  char pa[1024], pb[1024];
  mb_test_tmp_path("KA.h5", pa, sizeof pa);
  mb_test_tmp_path("KB.h5", pb, sizeof pb);
  mb_mesh *ref[KINDS_NMESH];
  kinds_make(ref);
  mb_error e = mb_collection_write(MPI_COMM_WORLD, pa, g_rank == 0 ? KINDS_NMESH : 0, ref);
  if (e) fail_msg("write A: %s\n%s", mb_error_message(), mb_error_traceback());
  mb_collection *c = NULL;
  assert_int_equal(mb_collection_open(MPI_COMM_WORLD, pa, &c), MB_SUCCESS);
  mb_mesh_slab slabs[KINDS_NMESH];
  for (int i = 0; i < KINDS_NMESH; i++) {
    const mb_mesh *m = ref[i];
    int64_t v0 = block(m->nv, g_rank), f0 = block(m->nf, g_rank);
    int64_t nvr = block(m->nv, g_rank + 1) - v0, nfr = block(m->nf, g_rank + 1) - f0;
    e = mb_collection_read_slab(c, i, v0, nvr, f0, nfr, &slabs[i]);
    if (e) fail_msg("read slab of %s: %s", m->name, mb_error_message());
    mb_mesh_slab cut;
    assert_int_equal(mb_mesh_slab_cut(m, v0, nvr, f0, nfr, &cut), MB_SUCCESS);
    assert_int_equal(cut.rows->kind, m->kind);
    assert_int_equal(cut.rows->nface_fields, m->nface_fields);
    assert_same_dataset(cut.rows, slabs[i].rows);
    assert_int_equal(slabs[i].vertex_start, v0);
    assert_int_equal(slabs[i].face_start, f0);
    assert_int_equal(slabs[i].nv, m->nv);
    assert_int_equal(slabs[i].nf, m->nf);
    for (int64_t v = 0; v < nvr; v++) /* planar: z = +0.0 exactly */
      if (m->kind != MB_KIND_SURFACE) assert_true(slabs[i].rows->xyz[3 * v + 2] == 0.0);
    mb_mesh_free(cut.rows);
  }
  assert_int_equal(mb_collection_close(c), MB_SUCCESS);
  e = mb_collection_write_slabs(MPI_COMM_WORLD, pb, 0, NULL, KINDS_NMESH, slabs);
  if (e) fail_msg("write B: %s\n%s", mb_error_message(), mb_error_traceback());
  for (int i = 0; i < KINDS_NMESH; i++) mb_mesh_free(slabs[i].rows);

  mb_collection *cb = NULL;
  assert_int_equal(mb_collection_open(MPI_COMM_WORLD, pb, &cb), MB_SUCCESS);
  for (int i = 0; i < KINDS_NMESH; i++) {
    mb_mesh *b = NULL;
    assert_int_equal(mb_collection_read(cb, i, &b), MB_SUCCESS);
    assert_same_dataset(ref[i], b);
    mb_mesh_free(b);
  }
  assert_int_equal(mb_collection_close(cb), MB_SUCCESS);
  kinds_free(ref);
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) {
    assert_int_equal(compare_files(pa, pb), KINDS_NDATASETS);
    const char *rest[] = {".xdmf", ".surf.xdmf", ".tri2d.xdmf", ".poly2d.xdmf",
                          ".quad2d.xdmf", ".tiny2d.xdmf"};
    for (int i = 0; i < 6; i++) {
      char na[64], nb[64], xa[1024], xb[1024];
      snprintf(na, sizeof na, "KA%s", rest[i]);
      snprintf(nb, sizeof nb, "KB%s", rest[i]);
      FILE *fa = fopen(mb_test_tmp_path(na, xa, sizeof xa), "rb");
      FILE *fb = fopen(mb_test_tmp_path(nb, xb, sizeof xb), "rb");
      assert_non_null(fa);
      assert_non_null(fb);
      static char ta[1 << 16], tb[1 << 16];
      size_t la = fread(ta, 1, sizeof ta - 1, fa), lb = fread(tb, 1, sizeof tb - 1, fb);
      fclose(fa);
      fclose(fb);
      ta[la] = tb[lb] = '\0';
      int refs = 0;
      for (char *p = strstr(ta, "KA.h5"); p; p = strstr(p + 5, "KA.h5"), refs++) p[1] = 'B';
      assert_true(refs > 0);
      if (strcmp(ta, tb)) fail_msg("%s differs from %s (KA.h5 read as KB.h5)", xb, xa);
    }
  }
  assert_int_equal(mb_test_count_tmp_files(), 0);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Slabs of one dataset that disagree on the kind or on the face fields. */
static void test_slabs_disagree(void **state) {
  (void)state;
  char path[1024];
  for (int what = 0; what < 2; what++) {
    mb_test_tmp_path(what ? "kdis_ff.h5" : "kdis_kind.h5", path, sizeof path);
    mb_mesh *m = kinds_poly2d();
    mb_mesh_slab s;
    int64_t v0 = block(m->nv, g_rank), f0 = block(m->nf, g_rank);
    assert_int_equal(mb_mesh_slab_cut(m, v0, block(m->nv, g_rank + 1) - v0, f0,
                                      block(m->nf, g_rank + 1) - f0, &s), MB_SUCCESS);
    if (g_rank == g_size - 1) {
      if (what == 0) {
        s.rows->kind = MB_KIND_SURFACE;
      } else {
        free(s.rows->face_fields[1].name);
        s.rows->face_fields[1].name = mb_strdup("other");
      }
    }
    mb_error e = mb_collection_write_slabs(MPI_COMM_WORLD, path, 0, NULL, 1, &s);
    if (g_size > 1) {
      assert_int_equal(e, MB_ERR_ARG);
      mb_test_assert_message_contains(what ? "disagree on the face field names"
                                           : "disagree on the kind");
      MPI_Barrier(MPI_COMM_WORLD);
      assert_false(mb_test_file_exists(path));
    } else {
      assert_int_equal(e, MB_SUCCESS); /* one slab: nothing to disagree with */
    }
    mb_mesh_free(s.rows);
    mb_mesh_free(m);
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

/* ---- errors of the kind rules */

/* Writing a dataset that breaks its kind's rules fails on every rank. */
static void test_write_kind_errors(void **state) {
  (void)state;
  char path[1024];
  mb_test_tmp_path("kerr.h5", path, sizeof path);
  for (int k = 0; k < 5; k++) {
    mb_mesh *all[KINDS_NMESH], *local[KINDS_NMESH];
    kinds_make(all);
    mb_error want = MB_ERR_FORMAT;
    const char *needle = NULL;
    if (k == 0) { /* a quad in a triangulation2d */
      all[3]->kind = MB_KIND_TRIANGULATION2D;
      needle = "quad2d: face 0 has 4 vertices, a triangulation2d has only triangles";
    } else if (k == 1) { /* z != 0 in a planar kind */
      all[2]->xyz[3 * 5 + 2] = 1e-9;
      needle = "poly2d: vertex 5 has z = 1e-09, a polygons2d must have z = 0";
    } else if (k == 2) {
      all[1]->kind = MB_KIND_NONE;
      want = MB_ERR_ARG;
      needle = "mesh 'tri2d': kind 0 (none) cannot be stored";
    } else if (k == 3) {
      kinds_die(mb_attrs_set(&all[0]->attrs, "kind", "x"));
      want = MB_ERR_ARG;
      needle = "attribute key 'kind' is reserved";
    } else {
      free(all[2]->face_fields[0].name);
      all[2]->face_fields[0].name = mb_strdup("a/b");
      want = MB_ERR_ARG;
      needle = "face field name 'a/b' may not contain '/'";
    }
    int n = kinds_local(all, g_rank, g_size, local);
    mb_error e = mb_collection_write(MPI_COMM_WORLD, path, n, local);
    if (e != want) fail_msg("case %d: got %d (%s), expected %d", k, e, mb_error_message(), want);
    mb_test_assert_message_contains(needle);
    kinds_free(all);
    MPI_Barrier(MPI_COMM_WORLD);
    assert_false(mb_test_file_exists(path));
    assert_int_equal(mb_test_count_tmp_files(), 0);
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

typedef enum kedit { KEDIT_NO_KIND, KEDIT_UNKNOWN_KIND, KEDIT_GRID_NO_SHAPE, KEDIT_PLANAR_XYZ,
                     KEDIT_POLY_TRIANGLES, KEDIT_FACE_FIELD_ROWS } kedit;

/* Rank 0 edits a good kinds collection with serial HDF5. */
static void edit_kinds(const char *path, kedit k) {
  hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  assert_true(f >= 0);
  if (k == KEDIT_NO_KIND || k == KEDIT_UNKNOWN_KIND || k == KEDIT_GRID_NO_SHAPE) {
    hid_t g = H5Gopen2(f, "/meshes/tri2d", H5P_DEFAULT);
    assert_true(H5Adelete(g, "kind") >= 0);
    if (k == KEDIT_UNKNOWN_KIND) v1_str_attr(g, "kind", "tetmesh3d");
    if (k == KEDIT_GRID_NO_SHAPE) v1_str_attr(g, "kind", "grid3d"); /* a grid without its shape */
    H5Gclose(g);
  } else {
    const char *d = k == KEDIT_PLANAR_XYZ        ? "/meshes/poly2d/vertices"
                    : k == KEDIT_POLY_TRIANGLES  ? "/meshes/poly2d/triangles"
                                                 : "/meshes/tri2d/face_fields/quality";
    if (k != KEDIT_POLY_TRIANGLES) assert_true(H5Ldelete(f, d, H5P_DEFAULT) >= 0);
    hsize_t dims[2] = {k == KEDIT_FACE_FIELD_ROWS ? 23 : 4, k == KEDIT_FACE_FIELD_ROWS ? 1 : 3};
    hid_t sp = H5Screate_simple(2, dims, NULL);
    hid_t ds = H5Dcreate2(f, d, k == KEDIT_POLY_TRIANGLES ? H5T_STD_I64LE : H5T_IEEE_F64LE, sp,
                          H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(ds >= 0);
    H5Dclose(ds);
    H5Sclose(sp);
  }
  H5Fclose(f);
}

static void test_open_kind_errors(void **state) {
  (void)state;
  struct {
    const char *file;
    kedit k;
    const char *needle;
  } cases[] = {
      {"knokind.h5", KEDIT_NO_KIND, "knokind.h5: /meshes/tri2d has no 'kind' attribute"},
      {"kunknown.h5", KEDIT_UNKNOWN_KIND,
       "kunknown.h5: /meshes/tri2d has kind 'tetmesh3d', which this build does not read "
       "(surface, triangulation2d, polygons2d, grid3d)"},
      {"kgrid.h5", KEDIT_GRID_NO_SHAPE,
       "kgrid.h5: /meshes/tri2d (grid3d) has no 'shape' attribute"},
      {"kxyz.h5", KEDIT_PLANAR_XYZ, "kxyz.h5: /meshes/poly2d/vertices has shape [4,3], expected [N,2]"},
      {"kptri.h5", KEDIT_POLY_TRIANGLES, "kptri.h5: /meshes/poly2d (polygons2d) has 'triangles'"},
      {"kffrows.h5", KEDIT_FACE_FIELD_ROWS,
       "/meshes/tri2d/face_fields/quality has 23 rows, expected M = 24 (faces)"},
  };
  for (int i = 0; i < 5; i++) {
    char p[1024];
    mb_test_tmp_path(cases[i].file, p, sizeof p);
    assert_int_equal(write_kinds(MPI_COMM_WORLD, p), MB_SUCCESS);
    if (g_rank == 0) edit_kinds(p, cases[i].k);
    MPI_Barrier(MPI_COMM_WORLD);
    expect_open_error(p, MB_ERR_FORMAT, cases[i].needle);
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

/* The bytes of a small text file, as a new string ("" where absent). */
static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  char *s = calloc(1 << 16, 1);
  if (f) {
    size_t n = fread(s, 1, (1 << 16) - 1, f);
    s[n] = '\0';
    fclose(f);
  }
  return s;
}

/* Written one mesh at a time (mb_collection_writer, puts in reverse index
 * order) == written at once by mb_collection_write: every dataset bit for
 * bit, the listing order, the attributes and the XDMF companions byte for
 * byte. Then the writer's refusals: a name put twice, a folder that does
 * not exist, a disk without room; abort leaves no file. Rank 0 only (the
 * writer is not collective). */
static void test_kinds_one_at_a_time(void **state) {
  (void)state;
  char ref[1024], one[1024], a[1024], b[1024];
  mb_test_tmp_path("kall.h5", ref, sizeof ref);
  mb_test_tmp_path("kone.h5", one, sizeof one);
  assert_int_equal(write_kinds(MPI_COMM_WORLD, ref), MB_SUCCESS);
  if (g_rank == 0) {
    mb_mesh *m[KINDS_NMESH];
    kinds_make(m);
    mb_collection_writer *w = NULL;
    mb_error e = mb_collection_writer_begin(one, 0, 1, &w);
    if (e) fail_msg("begin: %s", mb_error_message());
    for (int i = KINDS_NMESH - 1; i >= 0; i--) { /* the writer takes each mesh */
      mb_mesh *copy = NULL;
      assert_int_equal(mb_mesh_duplicate(m[i], &copy), MB_SUCCESS);
      e = mb_collection_writer_put(w, copy);
      if (e) fail_msg("put %d: %s", i, mb_error_message());
    }
    assert_int_equal(mb_collection_writer_count(w), KINDS_NMESH);
    mb_mesh *again = NULL;
    assert_int_equal(mb_mesh_duplicate(m[1], &again), MB_SUCCESS);
    assert_int_equal(mb_collection_writer_put(w, again), MB_ERR_ARG); /* a name put before */
    mb_test_assert_message_contains("duplicate mesh name 'tri2d'");
    e = mb_collection_writer_finish(w);
    if (e) fail_msg("finish: %s", mb_error_message());
    assert_int_equal(compare_files(ref, one), KINDS_NDATASETS);
    mb_collection *c = NULL;
    assert_int_equal(mb_collection_open(MPI_COMM_SELF, one, &c), MB_SUCCESS);
    assert_int_equal(mb_collection_count(c), KINDS_NMESH);
    for (int i = 0; i < KINDS_NMESH; i++) {
      assert_string_equal(mb_collection_info(c, i)->name, m[i]->name);
      assert_int_equal(mb_collection_info(c, i)->index, i);
      mb_mesh *r = NULL;
      assert_int_equal(mb_collection_read(c, i, &r), MB_SUCCESS);
      assert_same_dataset(m[i], r);
      mb_mesh_free(r);
    }
    assert_int_equal(mb_collection_close(c), MB_SUCCESS);
    const char *names[] = {"", ".surf", ".tri2d", ".poly2d", ".quad2d", ".tiny2d"};
    for (int i = 0; i < 6; i++) {
      char fa[64], fb[64];
      snprintf(fa, sizeof fa, "kall%s.xdmf", names[i]);
      snprintf(fb, sizeof fb, "kone%s.xdmf", names[i]);
      char *xa = slurp(mb_test_tmp_path(fa, a, sizeof a));
      char *xb = slurp(mb_test_tmp_path(fb, b, sizeof b));
      assert_true(strlen(xa) > 0);
      for (char *p = strstr(xa, "kall.h5"); p; p = strstr(p, "kall.h5")) memcpy(p, "kone", 4);
      assert_string_equal(xa, xb);
      free(xa);
      free(xb);
    }
    /* refusals: no folder, no room; an aborted writer leaves nothing */
    assert_int_equal(mb_collection_writer_begin("/no/such/folder/x.h5", 0, 0, &w), MB_ERR_IO);
    assert_null(w);
    mb_test_tmp_path("kfull.h5", a, sizeof a);
    assert_int_equal(mb_collection_writer_begin(a, 1e18, 0, &w), MB_ERR_IO);
    mb_test_assert_message_contains("no room for the output");
    assert_null(w);
    assert_int_equal(mb_collection_writer_begin(a, 0, 0, &w), MB_SUCCESS);
    assert_int_equal(mb_mesh_duplicate(m[0], &again), MB_SUCCESS);
    assert_int_equal(mb_collection_writer_put(w, again), MB_SUCCESS);
    mb_collection_writer_abort(w);
    assert_false(mb_test_file_exists(a));
    assert_int_equal(mb_test_count_tmp_files(), 0);
    kinds_free(m);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Written through the writer by a "holder" (per-mesh runs on several
 * ranks): each mesh that can be is described (mb_collection_describe),
 * its group and datasets made from the description
 * (mb_collection_writer_put_described) and its values written at the
 * extents handed back (mb_collection_write_extents, pwrite on the
 * temporary file); the others are put whole. The file == written at once
 * by mb_collection_write, every dataset bit for bit. Extents of another
 * mesh are refused. Rank 0 only (nothing here is collective). */
static void test_kinds_described(void **state) {
  (void)state;
  char ref[1024], out[1024];
  mb_test_tmp_path("kref.h5", ref, sizeof ref);
  mb_test_tmp_path("kdesc.h5", out, sizeof out);
  assert_int_equal(write_kinds(MPI_COMM_WORLD, ref), MB_SUCCESS);
  if (g_rank == 0) {
    mb_mesh *m[KINDS_NMESH];
    kinds_make(m);
    mb_collection_writer *w = NULL;
    if (mb_collection_writer_begin(out, 0, 0, &w)) fail_msg("begin: %s", mb_error_message());
    const int fd = open(mb_collection_writer_temporary(w), O_WRONLY);
    assert_true(fd >= 0);
    int described = 0;
    for (int i = KINDS_NMESH - 1; i >= 0; i--) {
      char *meta = NULL;
      size_t len = 0;
      int n = -1;
      assert_int_equal(mb_collection_describe(m[i], &meta, &len, &n), MB_SUCCESS);
      if (n == 0) { /* polygons: put whole */
        assert_null(meta);
        assert_true(m[i]->kind == MB_KIND_POLYGONS2D || !mb_mesh_is_triangles(m[i]));
        mb_mesh *copy = NULL;
        assert_int_equal(mb_mesh_duplicate(m[i], &copy), MB_SUCCESS);
        if (mb_collection_writer_put(w, copy)) fail_msg("put %d: %s", i, mb_error_message());
        continue;
      }
      assert_int_equal(n, 2 + m[i]->nfields + m[i]->nface_fields);
      mb_collection_extent *ext = calloc((size_t)n, sizeof *ext);
      assert_non_null(ext);
      if (mb_collection_writer_put_described(w, meta, len, n, ext))
        fail_msg("put_described %d: %s", i, mb_error_message());
      for (int k = 0; k < n; k++) assert_true(ext[k].bytes == 0 || ext[k].offset > 0);
      /* the extents of another shape are refused, nothing written */
      ext[0].bytes += 8;
      assert_int_equal(mb_collection_write_extents(fd, out, m[i], n, ext), MB_ERR_ARG);
      ext[0].bytes -= 8;
      assert_int_equal(mb_collection_write_extents(fd, out, m[i], n, ext), MB_SUCCESS);
      free(ext);
      free(meta);
      described++;
    }
    assert_int_equal(described, 2); /* tri2d and tiny2d; the others have polygons */
    assert_int_equal(close(fd), 0);
    assert_int_equal(mb_collection_writer_count(w), KINDS_NMESH);
    if (mb_collection_writer_finish(w)) fail_msg("finish: %s", mb_error_message());
    assert_int_equal(compare_files(ref, out), KINDS_NDATASETS);
    kinds_free(m);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kinds_roundtrip),
      cmocka_unit_test(test_kinds_rank_independence),
      cmocka_unit_test(test_kinds_one_at_a_time),
      cmocka_unit_test(test_kinds_described),
      cmocka_unit_test(test_read_version1),
      cmocka_unit_test(test_planar_slabs),
      cmocka_unit_test(test_slabs_disagree),
      cmocka_unit_test(test_write_kind_errors),
      cmocka_unit_test(test_open_kind_errors),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any ? 1 : 0;
}
