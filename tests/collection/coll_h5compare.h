/* meshbatch collection tests: bit-for-bit comparison of every dataset of two
 * HDF5 files (type, shape and bytes), both ways. Header-only (static
 * functions); include after <cmocka.h> and <hdf5.h>. */
#ifndef COLL_H5COMPARE_H
#define COLL_H5COMPARE_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_collection.h"
#include "mb_error.h"
#include "mb_testutil.h"

typedef struct cmp_ctx {
  hid_t other;
  int ndatasets;
} cmp_ctx;

static herr_t cmp_link(hid_t g, const char *name, const H5L_info_t *info, void *op);

static void compare_dataset(hid_t da, hid_t db, const char *name) {
  hid_t ta = H5Dget_type(da), tb = H5Dget_type(db);
  assert_true(H5Tequal(ta, tb) > 0);
  hid_t sa = H5Dget_space(da), sb = H5Dget_space(db);
  hsize_t a[4] = {0}, b[4] = {0};
  int ra = H5Sget_simple_extent_dims(sa, a, NULL), rb = H5Sget_simple_extent_dims(sb, b, NULL);
  assert_int_equal(ra, rb);
  assert_memory_equal(a, b, sizeof a);
  size_t bytes = H5Tget_size(ta) * (size_t)H5Sget_simple_extent_npoints(sa);
  char *ba = malloc(bytes + 1), *bb = malloc(bytes + 1);
  assert_true(H5Dread(da, ta, H5S_ALL, H5S_ALL, H5P_DEFAULT, ba) >= 0);
  assert_true(H5Dread(db, tb, H5S_ALL, H5S_ALL, H5P_DEFAULT, bb) >= 0);
  if (memcmp(ba, bb, bytes)) fail_msg("dataset %s differs", name);
  free(ba);
  free(bb);
  H5Tclose(ta);
  H5Tclose(tb);
  H5Sclose(sa);
  H5Sclose(sb);
}

static herr_t cmp_link(hid_t g, const char *name, const H5L_info_t *info, void *op) {
  (void)info;
  cmp_ctx *ctx = op;
  hid_t d = H5Dopen2(g, name, H5P_DEFAULT); /* fails quietly on a group */
  if (d >= 0) {
    char full[1024];
    H5Iget_name(d, full, sizeof full);
    hid_t o = H5Dopen2(ctx->other, full, H5P_DEFAULT);
    if (o < 0) fail_msg("dataset %s missing in the other file", full);
    compare_dataset(d, o, full);
    ctx->ndatasets++;
    H5Dclose(o);
    H5Dclose(d);
    return 0;
  }
  hid_t sub = H5Gopen2(g, name, H5P_DEFAULT);
  assert_true(sub >= 0);
  hsize_t idx = 0;
  H5Literate(sub, H5_INDEX_NAME, H5_ITER_INC, &idx, cmp_link, ctx);
  H5Gclose(sub);
  return 0;
}

/* Compare all datasets of a and b (both ways); returns the number compared. */
static int compare_files(const char *a, const char *b) {
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  hid_t fa = H5Fopen(a, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t fb = H5Fopen(b, H5F_ACC_RDONLY, H5P_DEFAULT);
  assert_true(fa >= 0 && fb >= 0);
  cmp_ctx ab = {fb, 0}, ba = {fa, 0};
  hsize_t idx = 0;
  H5Literate(fa, H5_INDEX_NAME, H5_ITER_INC, &idx, cmp_link, &ab);
  idx = 0;
  H5Literate(fb, H5_INDEX_NAME, H5_ITER_INC, &idx, cmp_link, &ba);
  assert_int_equal(ab.ndatasets, ba.ndatasets);
  H5Fclose(fa);
  H5Fclose(fb);
  return ab.ndatasets;
}

/* Write the same collection with 1, 2, ... ranks of MPI_COMM_WORLD (through
 * write(sub, path) on sub-communicators, files STEM_N.h5 in the test's
 * folder) and check on rank 0 that every file holds the same ndatasets
 * datasets, bit for bit, as the one-rank file. Collective over MPI_COMM_WORLD. */
static void check_rank_independence(const char *stem, mb_error (*write)(MPI_Comm, const char *),
                                    int ndatasets) {
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char p1[1024], pn[1024], name[64];
  for (int n = 1; n <= size; n++) {
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, rank < n ? 0 : MPI_UNDEFINED, rank, &sub);
    if (sub != MPI_COMM_NULL) {
      snprintf(name, sizeof name, "%s_%d.h5", stem, n);
      mb_error e = write(sub, mb_test_tmp_path(name, pn, sizeof pn));
      if (e) fail_msg("write with %d ranks: %s", n, mb_error_message());
      MPI_Comm_free(&sub);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    snprintf(name, sizeof name, "%s_1.h5", stem);
    mb_test_tmp_path(name, p1, sizeof p1);
    for (int n = 2; n <= size; n++) {
      snprintf(name, sizeof name, "%s_%d.h5", stem, n);
      assert_int_equal(compare_files(p1, mb_test_tmp_path(name, pn, sizeof pn)), ndatasets);
    }
    if (size == 1) assert_int_equal(compare_files(p1, p1), ndatasets);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Opening path fails on every rank with code and a message holding needle;
 * the handle stays NULL. Collective over MPI_COMM_WORLD. */
static void expect_open_error(const char *path, mb_error code, const char *needle) {
  mb_collection *c = NULL;
  mb_error e = mb_collection_open(MPI_COMM_WORLD, path, &c);
  if (e != code) fail_msg("open %s: got %d (%s), expected %d", path, e, mb_error_message(), code);
  assert_null(c);
  mb_test_assert_message_contains(needle);
}

#endif
