/* meshbatch: the checkpoint log's records (io/mb_ckptlog.h). Meshes of
 * every kind (a polygon surface with vertex and face fields and
 * attributes, a planar triangulation, a grid with float32 and float64
 * fields) are encoded, sealed and appended to one file, one record
 * buffer reused, then scanned and read back bit for bit. Damage is
 * detected: a last record cut short is dropped by the scan (its bytes
 * counted as torn), a flipped byte in a record's arrays fails its read
 * (MB_ERR_FORMAT), a flipped byte in a header makes the scan skip that
 * record and find the next. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mb_ckptlog.h"
#include "mb_testutil.h"

enum { NREC = 3 };

/* A polygon surface: a quad and a triangle, a vertex field, a face field, attributes. */
static mb_mesh *surface(void) {
  mb_mesh *m = NULL;
  assert_int_equal(mb_mesh_create("surface one", 5, 2, 7, &m), MB_SUCCESS);
  for (int k = 0; k < 15; k++) m->xyz[k] = 0.1 * k - 0.7 + 1e-17 * k;
  const int64_t off[3] = {0, 4, 7}, idx[7] = {0, 1, 2, 3, 1, 4, 2};
  memcpy(m->face_offsets, off, sizeof off);
  memcpy(m->face_indices, idx, sizeof idx);
  double vf[10], ff[6];
  for (int k = 0; k < 10; k++) vf[k] = k * 3.25 - 1.0 / 3.0;
  for (int k = 0; k < 6; k++) ff[k] = -k / 7.0;
  assert_int_equal(mb_mesh_set_field(m, "velocity", 2, vf), MB_SUCCESS);
  assert_int_equal(mb_mesh_set_face_field(m, "area", 3, ff), MB_SUCCESS);
  assert_int_equal(mb_attrs_set(&m->attrs, "stage_0", "taubin iterations=4"), MB_SUCCESS);
  assert_int_equal(mb_attrs_set(&m->attrs, "empty", ""), MB_SUCCESS);
  return m;
}

/* A planar triangulation (z = 0) of 4 vertices. */
static mb_mesh *planar(void) {
  const double xyz[12] = {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0};
  const int64_t tri[6] = {0, 1, 2, 0, 2, 3};
  mb_mesh *m = mb_test_mesh_triangles("plane", 4, xyz, 2, tri);
  m->kind = MB_KIND_TRIANGULATION2D;
  return m;
}

/* A 2 x 3 x 4 grid with a float32 and a float64 field. */
static mb_mesh *grid(void) {
  const int64_t shape[3] = {2, 3, 4};
  const double origin[3] = {-1, 0.5, 2}, spacing[3] = {0.25, 0.5, 1.0 / 3.0};
  mb_mesh *g = NULL;
  assert_int_equal(mb_grid_create("grid", shape, origin, spacing, &g), MB_SUCCESS);
  float t[24];
  double u[48];
  for (int k = 0; k < 24; k++) t[k] = (float)k / 7.0f;
  for (int k = 0; k < 48; k++) u[k] = k * 1e-3 - 0.02;
  assert_int_equal(mb_mesh_set_field_f32(g, "temperature", 1, t), MB_SUCCESS);
  assert_int_equal(mb_mesh_set_field(g, "flow", 2, u), MB_SUCCESS);
  return g;
}

/* b, read back as source, is mesh a bit for bit (grids: their geometry and float32 fields). */
static void assert_same(const mb_mesh *a, const mb_mesh *b, int64_t source) {
  assert_int_equal(b->index, source);
  if (a->kind != MB_KIND_GRID3D) {
    mb_test_assert_same_mesh(a, b);
    return;
  }
  assert_string_equal(a->name, b->name);
  assert_int_equal(b->kind, MB_KIND_GRID3D);
  assert_int_equal(a->nv, b->nv);
  assert_null(b->xyz);
  assert_memory_equal(a->shape, b->shape, sizeof a->shape);
  assert_memory_equal(a->origin, b->origin, sizeof a->origin);
  assert_memory_equal(a->spacing, b->spacing, sizeof a->spacing);
  assert_int_equal(a->nfields, b->nfields);
  for (int f = 0; f < a->nfields; f++) {
    const mb_field *x = &a->fields[f], *y = &b->fields[f];
    assert_string_equal(x->name, y->name);
    assert_int_equal(x->ncomp, y->ncomp);
    assert_int_equal(x->dtype, y->dtype);
    const size_t n = (size_t)a->nv * (size_t)x->ncomp;
    if (x->dtype == MB_FLOAT32) assert_memory_equal(x->data32, y->data32, n * sizeof(float));
    else assert_memory_equal(x->data, y->data, n * sizeof(double));
  }
  assert_int_equal(b->attrs.n, 0);
}

/* The three meshes appended to path as sources 10, 11, 12 (one buffer reused); their
 * byte offsets into at[NREC + 1] (at[NREC]: the file's size). */
static void write_log(const char *path, mb_mesh *m[NREC], uint64_t at[NREC + 1]) {
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(fd >= 0);
  mb_ckptlog_record rec = {0};
  uint64_t off = 0;
  for (int k = 0; k < NREC; k++) {
    assert_int_equal(mb_ckptlog_encode(m[k], 10 + k, &rec), MB_SUCCESS);
    assert_int_equal(rec.len % 8, 0);
    assert_true(rec.cap >= rec.len);
    mb_ckptlog_seal(&rec);
    assert_int_equal(write(fd, rec.bytes, rec.len), (ssize_t)rec.len);
    at[k] = off;
    off += rec.len;
  }
  at[NREC] = off;
  mb_ckptlog_record_free(&rec);
  assert_null(rec.bytes);
  close(fd);
}

static void scan(const char *path, mb_ckptlog_entry **e, int64_t *n, uint64_t *torn, int *fd) {
  *fd = open(path, O_RDONLY);
  assert_true(*fd >= 0);
  *e = NULL;
  *n = 0;
  *torn = 0;
  assert_int_equal(mb_ckptlog_scan(*fd, path, 0, e, n, torn), MB_SUCCESS);
}

static void test_roundtrip(void **state) {
  (void)state;
  char path[4096];
  mb_test_tmp_path("ckptlog_roundtrip.log", path, sizeof path);
  mb_mesh *m[NREC] = {grid(), surface(), planar()}; /* the largest first: its buffer reused */
  uint64_t at[NREC + 1];
  write_log(path, m, at);
  mb_ckptlog_entry *e;
  int64_t n;
  uint64_t torn;
  int fd;
  scan(path, &e, &n, &torn, &fd);
  assert_int_equal(n, NREC);
  assert_int_equal(torn, 0);
  for (int k = 0; k < NREC; k++) {
    assert_int_equal(e[k].source, 10 + k);
    assert_int_equal(e[k].offset, at[k]);
    assert_int_equal(e[k].len, at[k + 1] - at[k]);
    mb_mesh *back = NULL;
    assert_int_equal(mb_ckptlog_read(fd, path, &e[k], &back), MB_SUCCESS);
    assert_same(m[k], back, 10 + k);
    mb_mesh_free(back);
  }
  free(e);
  close(fd);
  for (int k = 0; k < NREC; k++) mb_mesh_free(m[k]);
  unlink(path);
}

/* Flip one bit of the byte at off of path. */
static void flip(const char *path, uint64_t off) {
  const int fd = open(path, O_RDWR);
  assert_true(fd >= 0);
  unsigned char b = 0;
  assert_int_equal(pread(fd, &b, 1, (off_t)off), 1);
  b ^= 0x10;
  assert_int_equal(pwrite(fd, &b, 1, (off_t)off), 1);
  close(fd);
}

static void test_damage(void **state) {
  (void)state;
  char path[4096];
  mb_test_tmp_path("ckptlog_damage.log", path, sizeof path);
  mb_mesh *m[NREC] = {surface(), grid(), planar()};
  uint64_t at[NREC + 1];
  mb_ckptlog_entry *e;
  int64_t n;
  uint64_t torn;
  int fd;

  /* the last record cut short: dropped, its bytes counted */
  write_log(path, m, at);
  const uint64_t cut = at[2] + (at[3] - at[2]) / 2;
  assert_int_equal(truncate(path, (off_t)cut), 0);
  scan(path, &e, &n, &torn, &fd);
  assert_int_equal(n, 2);
  assert_int_equal(torn, cut - at[2]);
  free(e);
  close(fd);

  /* a flipped byte in the first record's arrays: found by the scan, refused by the read */
  write_log(path, m, at);
  flip(path, at[1] - 5);
  scan(path, &e, &n, &torn, &fd);
  assert_int_equal(n, NREC);
  assert_int_equal(torn, 0);
  mb_mesh *back = NULL;
  assert_int_equal(mb_ckptlog_read(fd, path, &e[0], &back), MB_ERR_FORMAT);
  assert_null(back);
  mb_test_assert_message_contains("fail their CRC-32");
  assert_int_equal(mb_ckptlog_read(fd, path, &e[1], &back), MB_SUCCESS);
  assert_same(m[1], back, 11);
  mb_mesh_free(back);
  free(e);
  close(fd);

  /* a flipped byte in the second record's header (its nv): skipped, the third found */
  write_log(path, m, at);
  flip(path, at[1] + 48);
  scan(path, &e, &n, &torn, &fd);
  assert_int_equal(n, 2);
  assert_int_equal(e[0].source, 10);
  assert_int_equal(e[1].source, 12);
  assert_int_equal(torn, at[2] - at[1]);
  back = NULL;
  assert_int_equal(mb_ckptlog_read(fd, path, &e[1], &back), MB_SUCCESS);
  assert_same(m[2], back, 12);
  mb_mesh_free(back);
  free(e);
  close(fd);

  for (int k = 0; k < NREC; k++) mb_mesh_free(m[k]);
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_roundtrip),
      cmocka_unit_test(test_damage),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
