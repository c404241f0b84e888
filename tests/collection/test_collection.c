/* meshbatch: HDF5 collection tests (round trip, rank-count independence,
 * failed writes, malformed files). Run with 1 to 4 MPI ranks. */
#include <dirent.h>
#include <hdf5.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coll_fixtures.h"
#include "mb_collection.h"
#include "mb_testutil.h"
#include "coll_h5compare.h"

static int g_rank, g_size;

/* Write the sample meshes over comm (mesh j on rank (j+1) % size). */
static mb_error write_sample(MPI_Comm comm, const char *path) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  mb_mesh *all[COLL_NMESH], *local[COLL_NMESH];
  coll_make_meshes(all);
  int n = coll_local(all, rank, size, local);
  mb_error e = mb_collection_write(comm, path, n, local);
  coll_free_meshes(all);
  return e;
}

static void test_roundtrip(void **state) {
  (void)state;
  char path[1024], x[1024];
  mb_test_tmp_path("rt.h5", path, sizeof path);
  mb_error e = write_sample(MPI_COMM_WORLD, path);
  if (e) fail_msg("write: %s\n%s", mb_error_message(), mb_error_traceback());
  mb_collection *c = NULL;
  e = mb_collection_open(MPI_COMM_WORLD, path, &c);
  if (e) fail_msg("open: %s", mb_error_message());
  assert_int_equal(mb_collection_count(c), COLL_NMESH);
  mb_mesh *ref[COLL_NMESH];
  coll_make_meshes(ref);
  const int tri[COLL_NMESH] = {0, 0, 1, 1};
  for (int k = 0; k < COLL_NMESH; k++) {
    int i = (k + g_rank) % COLL_NMESH; /* ranks read in different orders */
    const mb_mesh_info *info = mb_collection_info(c, i);
    assert_string_equal(info->name, ref[i]->name);
    assert_int_equal(info->index, i);
    assert_int_equal(info->nv, ref[i]->nv);
    assert_int_equal(info->nf, ref[i]->nf);
    assert_int_equal(info->nidx, ref[i]->face_offsets[ref[i]->nf]);
    assert_int_equal(info->triangles, tri[i]);
    mb_mesh *m = NULL;
    e = mb_collection_read(c, i, &m);
    if (e) fail_msg("read %d: %s", i, mb_error_message());
    assert_int_equal(m->index, i);
    mb_test_assert_same_mesh(m, ref[i]);
    mb_mesh_free(m);
  }
  assert_null(mb_collection_info(c, COLL_NMESH));
  assert_int_equal(mb_collection_close(c), MB_SUCCESS);
  coll_free_meshes(ref);
  const char *companions[] = {"rt.xdmf", "rt.house.xdmf", "rt.quadtri.xdmf", "rt.solo.xdmf",
                              "rt.tet.xdmf"};
  for (int i = 0; i < 5; i++)
    assert_true(mb_test_file_exists(mb_test_tmp_path(companions[i], x, sizeof x)));
  assert_int_equal(mb_test_count_tmp_files(), 0);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Write with 1..size ranks (sub-communicators): same datasets, same bytes. */
static void test_rank_independence(void **state) {
  (void)state;
  check_rank_independence("ri", write_sample, 16); /* 5 + 5 + 2 + 4 datasets, see coll_fixtures.h */
}

static void test_duplicate_names(void **state) {
  (void)state;
  char path[1024];
  mb_test_tmp_path("dup.h5", path, sizeof path);
  mb_mesh *all[COLL_NMESH];
  coll_make_meshes(all);
  free(all[3]->name);
  all[3]->name = mb_strdup("house"); /* on rank 0, "house" on rank 1 % size */
  mb_mesh *local[COLL_NMESH];
  int n = coll_local(all, g_rank, g_size, local);
  mb_error e = mb_collection_write(MPI_COMM_WORLD, path, n, local);
  assert_int_equal(e, MB_ERR_ARG);
  mb_test_assert_message_contains("duplicate mesh name 'house'");
  coll_free_meshes(all);
  MPI_Barrier(MPI_COMM_WORLD);
  assert_false(mb_test_file_exists(path));
  assert_int_equal(mb_test_count_tmp_files(), 0);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* A bad mesh on the last rank: every rank fails, the earlier file survives. */
static void test_failed_write_keeps_old_file(void **state) {
  (void)state;
  char path[1024];
  mb_test_tmp_path("keep.h5", path, sizeof path);
  assert_int_equal(write_sample(MPI_COMM_WORLD, path), MB_SUCCESS);
  mb_mesh *all[COLL_NMESH], *local[COLL_NMESH + 1];
  coll_make_meshes(all);
  int n = coll_local(all, g_rank, g_size, local);
  if (g_rank == g_size - 1) {
    mb_mesh *bad = NULL;
    assert_int_equal(mb_mesh_duplicate(all[0], &bad), MB_SUCCESS);
    free(bad->name);
    bad->name = mb_strdup("bad");
    bad->xyz[4] = NAN;
    local[n++] = bad;
  }
  mb_error e = mb_collection_write(MPI_COMM_WORLD, path, n, local);
  assert_int_equal(e, MB_ERR_FORMAT);
  mb_test_assert_message_contains("non-finite");
  if (g_rank == g_size - 1) mb_mesh_free(local[n - 1]);
  coll_free_meshes(all);
  MPI_Barrier(MPI_COMM_WORLD);
  mb_collection *c = NULL;
  assert_int_equal(mb_collection_open(MPI_COMM_WORLD, path, &c), MB_SUCCESS);
  assert_int_equal(mb_collection_count(c), COLL_NMESH);
  mb_collection_close(c);
  assert_int_equal(mb_test_count_tmp_files(), 0);
  MPI_Barrier(MPI_COMM_WORLD);
}

static void test_missing_folder(void **state) {
  (void)state;
  char path[1024];
  mb_test_tmp_path("no_such_folder/out.h5", path, sizeof path);
  mb_error e = write_sample(MPI_COMM_WORLD, path);
  assert_int_equal(e, MB_ERR_IO);
  mb_test_assert_message_contains("no_such_folder");
  assert_false(mb_test_file_exists(path));
  MPI_Barrier(MPI_COMM_WORLD);
}

/* The final rename fails (a folder sits at path): temp files are removed. */
static void test_rename_failure(void **state) {
  (void)state;
  char path[1024];
  mb_test_tmp_path("isdir.h5", path, sizeof path);
  if (g_rank == 0) mkdir(path, 0755);
  MPI_Barrier(MPI_COMM_WORLD);
  assert_int_equal(write_sample(MPI_COMM_WORLD, path), MB_ERR_IO);
  mb_test_assert_message_contains("isdir.h5");
  MPI_Barrier(MPI_COMM_WORLD);
  assert_int_equal(mb_test_count_tmp_files(), 0);
  char x[1024];
  assert_false(mb_test_file_exists(mb_test_tmp_path("isdir.xdmf", x, sizeof x)));
  MPI_Barrier(MPI_COMM_WORLD);
}

/* ---- malformed files: rank 0 edits a good file with serial HDF5 */

typedef enum edit_kind {
  EDIT_NO_FORMAT,
  EDIT_VERSION,
  EDIT_VERTICES_SHAPE,
  EDIT_TRIANGLES_SHAPE,
  EDIT_INDEX_RANGE,
  EDIT_NAN
} edit_kind;

static void edit_file(const char *path, edit_kind kind) {
  hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  assert_true(f >= 0);
  if (kind == EDIT_NO_FORMAT) {
    assert_true(H5Adelete(f, "format") >= 0);
  } else if (kind == EDIT_VERSION) {
    hid_t a = H5Aopen(f, "format_version", H5P_DEFAULT);
    int v = MB_COLLECTION_FORMAT_VERSION + 1; /* a version from the future */
    assert_true(H5Awrite(a, H5T_NATIVE_INT, &v) >= 0);
    H5Aclose(a);
  } else if (kind == EDIT_VERTICES_SHAPE || kind == EDIT_TRIANGLES_SHAPE) {
    const char *d = kind == EDIT_VERTICES_SHAPE ? "/meshes/tet/vertices" : "/meshes/tet/triangles";
    hsize_t dims[2] = {10, kind == EDIT_VERTICES_SHAPE ? 2 : 4};
    assert_true(H5Ldelete(f, d, H5P_DEFAULT) >= 0);
    hid_t sp = H5Screate_simple(2, dims, NULL);
    hid_t ds = H5Dcreate2(f, d, kind == EDIT_VERTICES_SHAPE ? H5T_IEEE_F64LE : H5T_STD_I64LE, sp,
                          H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(ds >= 0);
    H5Dclose(ds);
    H5Sclose(sp);
  } else {
    int idx = kind == EDIT_INDEX_RANGE;
    hid_t ds = H5Dopen2(f, idx ? "/meshes/tet/triangles" : "/meshes/tet/vertices", H5P_DEFAULT);
    hsize_t start[2] = {1, 1}, one[2] = {1, 1};
    hid_t fs = H5Dget_space(ds), ms = H5Screate_simple(2, one, NULL);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, one, NULL);
    int64_t big = 99;
    double nan = NAN;
    assert_true(H5Dwrite(ds, idx ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT,
                         idx ? (const void *)&big : (const void *)&nan) >= 0);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(ds);
  }
  H5Fclose(f);
}

/* A sample collection at name, edited by rank 0. */
static const char *make_edited(const char *name, edit_kind kind, char *path, size_t len) {
  mb_test_tmp_path(name, path, len);
  assert_int_equal(write_sample(MPI_COMM_WORLD, path), MB_SUCCESS);
  if (g_rank == 0) edit_file(path, kind);
  MPI_Barrier(MPI_COMM_WORLD);
  return path;
}

static void test_open_errors(void **state) {
  (void)state;
  char p[1024];
  mb_test_tmp_path("missing.h5", p, sizeof p);
  expect_open_error(p, MB_ERR_IO, "missing.h5");
  mb_test_tmp_path("notes.h5", p, sizeof p);
  if (g_rank == 0) mb_test_write_file(p, "this is not HDF5\n");
  MPI_Barrier(MPI_COMM_WORLD);
  expect_open_error(p, MB_ERR_FORMAT, "notes.h5: not an HDF5 file");
  make_edited("nofmt.h5", EDIT_NO_FORMAT, p, sizeof p);
  expect_open_error(p, MB_ERR_FORMAT, "nofmt.h5: not a meshbatch collection (no 'format'");
  make_edited("vnext.h5", EDIT_VERSION, p, sizeof p);
  char want[64];
  snprintf(want, sizeof want, "unsupported format_version %d", MB_COLLECTION_FORMAT_VERSION + 1);
  expect_open_error(p, MB_ERR_FORMAT, want);
  make_edited("vshape.h5", EDIT_VERTICES_SHAPE, p, sizeof p);
  expect_open_error(p, MB_ERR_FORMAT,
                    "vshape.h5: /meshes/tet/vertices has shape [10,2], expected [N,3]");
  make_edited("tshape.h5", EDIT_TRIANGLES_SHAPE, p, sizeof p);
  expect_open_error(p, MB_ERR_FORMAT,
                    "tshape.h5: /meshes/tet/triangles has shape [10,4], expected [M,3]");
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Out-of-range indices and NaN pass open but fail mb_collection_read. */
static void test_read_validation(void **state) {
  (void)state;
  char p[1024];
  const edit_kind kinds[2] = {EDIT_INDEX_RANGE, EDIT_NAN};
  const char *names[2] = {"range.h5", "nan.h5"}, *needles[2] = {"outside [0, 4)", "non-finite"};
  for (int k = 0; k < 2; k++) {
    make_edited(names[k], kinds[k], p, sizeof p);
    mb_collection *c = NULL;
    assert_int_equal(mb_collection_open(MPI_COMM_WORLD, p, &c), MB_SUCCESS);
    mb_mesh *m = NULL;
    if (g_rank == g_size - 1) { /* one rank alone: reading is not collective */
      assert_int_equal(mb_collection_read(c, 3, &m), MB_ERR_FORMAT);
      mb_test_assert_message_contains(needles[k]);
      mb_test_assert_message_contains("/meshes/tet");
      assert_int_equal(mb_collection_read(c, 0, &m), MB_SUCCESS);
      mb_mesh_free(m);
    }
    assert_int_equal(mb_collection_close(c), MB_SUCCESS);
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_roundtrip),
      cmocka_unit_test(test_rank_independence),
      cmocka_unit_test(test_duplicate_names),
      cmocka_unit_test(test_failed_write_keeps_old_file),
      cmocka_unit_test(test_missing_folder),
      cmocka_unit_test(test_rename_failure),
      cmocka_unit_test(test_open_errors),
      cmocka_unit_test(test_read_validation),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any ? 1 : 0;
}
