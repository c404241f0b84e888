/* meshbatch: HDF5's error stack is left as the caller set it. The partition
 * file reader and writer (partition/mb_partfile.c) and the collection
 * reader silence HDF5 only around their own calls and put the caller's
 * handler back; expected failures (a file of another kind, a missing
 * dataset, a missing folder) print nothing from HDF5 and are reported by
 * meshbatch's own message. One rank. */
#include <fcntl.h>
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coll_fixtures.h"
#include "mb_collection.h"
#include "mb_partfile.h"
#include "mb_testutil.h"

/* The handler of HDF5's default error stack as the test set it. */
static H5E_auto2_t g_func;
static void *g_data;

static void assert_handler_kept(void) {
  H5E_auto2_t func = NULL;
  void *data = NULL;
  assert_true(H5Eget_auto2(H5E_DEFAULT, &func, &data) >= 0);
  assert_ptr_equal((void *)func, (void *)g_func);
  assert_ptr_equal(data, g_data);
}

/* Redirect stderr to a scratch file between quiet_begin and quiet_end;
 * quiet_end returns the bytes written there (printed to the real stderr). */
static int g_saved_fd = -1;
static char g_err_path[1024];

static void quiet_begin(void) {
  mb_test_tmp_path("h5_handler.stderr", g_err_path, sizeof g_err_path);
  fflush(stderr);
  g_saved_fd = dup(2);
  int fd = open(g_err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(g_saved_fd >= 0 && fd >= 0);
  dup2(fd, 2);
  close(fd);
}

static long quiet_end(void) {
  fflush(stderr);
  dup2(g_saved_fd, 2);
  close(g_saved_fd);
  struct stat st;
  long n = stat(g_err_path, &st) == 0 ? (long)st.st_size : -1;
  if (n > 0) {
    char buf[4096];
    FILE *fp = fopen(g_err_path, "r");
    size_t k = fp ? fread(buf, 1, sizeof buf - 1, fp) : 0;
    buf[k] = '\0';
    if (fp) fclose(fp);
    fprintf(stderr, "unexpected output on stderr:\n%s\n", buf);
  }
  unlink(g_err_path);
  return n;
}

static void write_partfile(const char *path) {
  int32_t vp[3] = {0, 1, 1}, fp[1] = {0};
  mb_partfile p = {.nparts = 2, .nv = 3, .nf = 1, .vertex_part = vp, .face_part = fp};
  snprintf(p.mesh, sizeof p.mesh, "tri");
  p.quality.edge_cut = 2;
  assert_int_equal(mb_partfile_write(path, &p), MB_SUCCESS);
}

/* A valid partition file: written and read back, the handler kept. */
static void test_partfile_roundtrip(void **state) {
  (void)state;
  char path[1024];
  mb_test_tmp_path("h5_handler.part.h5", path, sizeof path);
  quiet_begin();
  write_partfile(path);
  mb_partfile *p = NULL;
  mb_error e = mb_partfile_read(path, &p);
  assert_int_equal(quiet_end(), 0);
  assert_int_equal(e, MB_SUCCESS);
  assert_int_equal(p->nparts, 2);
  assert_int_equal(p->nv, 3);
  assert_int_equal(p->nf, 1);
  assert_int_equal(p->vertex_part[2], 1);
  assert_int_equal(p->quality.edge_cut, 2);
  assert_string_equal(p->mesh, "tri");
  mb_partfile_free(p);
  assert_handler_kept();
  unlink(path);
}

/* An HDF5 file with a partition file's attributes but no vertex_part. */
static void write_partial(const char *path) {
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  assert_true(f >= 0);
  hid_t t = H5Tcopy(H5T_C_S1), s = H5Screate(H5S_SCALAR);
  H5Tset_size(t, strlen(MB_PARTFILE_FORMAT) + 1);
  hid_t a = H5Acreate2(f, "format", t, s, H5P_DEFAULT, H5P_DEFAULT);
  assert_true(a >= 0 && H5Awrite(a, t, MB_PARTFILE_FORMAT) >= 0);
  H5Aclose(a);
  const int version = MB_PARTFILE_FORMAT_VERSION, nparts = 2;
  a = H5Acreate2(f, "format_version", H5T_NATIVE_INT, s, H5P_DEFAULT, H5P_DEFAULT);
  assert_true(a >= 0 && H5Awrite(a, H5T_NATIVE_INT, &version) >= 0);
  H5Aclose(a);
  a = H5Acreate2(f, "nparts", H5T_NATIVE_INT, s, H5P_DEFAULT, H5P_DEFAULT);
  assert_true(a >= 0 && H5Awrite(a, H5T_NATIVE_INT, &nparts) >= 0);
  H5Aclose(a);
  H5Sclose(s);
  H5Tclose(t);
  H5Fclose(f);
}

/* Files that are not partition files, and a folder that does not exist:
 * meshbatch's error and message, nothing from HDF5, the handler kept. */
static void test_partfile_errors(void **state) {
  (void)state;
  char text[1024], coll[1024], partial[1024], nofolder[1024];
  mb_test_tmp_path("h5_handler.txt", text, sizeof text);
  mb_test_tmp_path("h5_handler.coll.h5", coll, sizeof coll);
  mb_test_tmp_path("h5_handler.partial.h5", partial, sizeof partial);
  mb_test_tmp_path("h5_handler_no_folder/x.part.h5", nofolder, sizeof nofolder);
  mb_test_write_file(text, "not HDF5\n");
  mb_mesh *all[COLL_NMESH];
  coll_make_meshes(all);
  assert_int_equal(mb_collection_write(MPI_COMM_SELF, coll, COLL_NMESH, all), MB_SUCCESS);
  coll_free_meshes(all);
  write_partial(partial);
  const struct {
    const char *path;
    mb_error want;
    const char *needle;
  } cases[] = {
      {text, MB_ERR_FORMAT, "not an HDF5 file"},
      {coll, MB_ERR_FORMAT, "not a meshbatch partition file"},
      {partial, MB_ERR_FORMAT, "vertex_part/face_part missing"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    mb_partfile *p = NULL;
    quiet_begin();
    mb_error e = mb_partfile_read(cases[k].path, &p);
    assert_int_equal(quiet_end(), 0);
    assert_int_equal(e, cases[k].want);
    mb_test_assert_message_contains(cases[k].needle);
    assert_handler_kept();
  }
  int32_t vp[1] = {0}, fp[1] = {0};
  mb_partfile p = {.nparts = 1, .nv = 1, .nf = 1, .vertex_part = vp, .face_part = fp};
  quiet_begin();
  mb_error e = mb_partfile_write(nofolder, &p);
  assert_int_equal(quiet_end(), 0);
  assert_int_equal(e, MB_ERR_IO);
  mb_test_assert_message_contains("cannot create the partition file");
  assert_handler_kept();
  /* the collection reader, on a file that is not a collection */
  mb_collection *c = NULL;
  quiet_begin();
  e = mb_collection_open(MPI_COMM_SELF, partial, &c);
  assert_int_equal(quiet_end(), 0);
  assert_int_equal(e, MB_ERR_FORMAT);
  mb_test_assert_message_contains("not a meshbatch collection");
  assert_handler_kept();
  unlink(text);
  unlink(coll);
  unlink(partial);
  const char *xdmf[] = {"", ".house", ".quadtri", ".solo", ".tet"};
  for (int k = 0; k < 5; k++) {
    char x[1100];
    snprintf(x, sizeof x, "%.*s%s.xdmf", (int)strlen(coll) - 3, coll, xdmf[k]);
    unlink(x);
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  H5Eget_auto2(H5E_DEFAULT, &g_func, &g_data); /* HDF5's default: print the stack */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_partfile_roundtrip),
      cmocka_unit_test(test_partfile_errors),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  MPI_Finalize();
  return failed ? 1 : 0;
}
