/* meshbatch: the collection's passes over a large mesh's rows on all
 * threads (io/mb_collection_bulk.c): the raw read by pread gives the bits
 * HDF5's read gives (MESHBATCH_RAW_READ=0), whole meshes and slabs,
 * triangles and polygons; the parallel validation fails where
 * mb_mesh_validate fails, with its message; the one-pass face statistics
 * equal mb_xdmf_mixed_length, mb_mesh_is_triangles and mb_xdmf_fan_count.
 * The meshes are over the passes' thresholds (2^18 faces, 16 MiB). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_collection.h"
#include "mb_collection_private.h"
#include "mb_testutil.h"
#include "mb_xdmf.h"

enum { SIDE = 850 }; /* 722,500 vertices (17 MB of xyz), 1,442,401 triangles (35 MB) */

/* A SIDE x SIDE grid of a wavy sheet: two triangles a cell, or one quad
 * (quads = 1) with every 97th cell a pentagon's worth of extra vertex. */
static mb_mesh *sheet(const char *name, int quads) {
  const int64_t n = SIDE, nv = n * n, nc = (n - 1) * (n - 1);
  const int64_t nf = quads ? nc : 2 * nc, nidx = quads ? 4 * nc : 6 * nc;
  mb_mesh *m = NULL;
  assert_int_equal(mb_mesh_create(name, nv, nf, nidx, &m), MB_SUCCESS);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) {
      double *p = m->xyz + 3 * (i * n + j);
      p[0] = (double)j / (double)n;
      p[1] = (double)i / (double)n;
      p[2] = 0.01 * sin(0.3 * (double)i) * cos(0.2 * (double)j) + 1e-9 * (double)(i ^ j);
    }
  int64_t f = 0, k = 0;
  for (int64_t i = 0; i + 1 < n; i++)
    for (int64_t j = 0; j + 1 < n; j++) {
      const int64_t a = i * n + j, b = a + 1, c = a + n + 1, d = a + n;
      const int64_t v[6] = {a, b, c, a, c, d}, q[4] = {a, b, c, d};
      for (int t = 0; t < (quads ? 1 : 2); t++) {
        for (int s = 0; s < (quads ? 4 : 3); s++) m->face_indices[k++] = quads ? q[s] : v[3 * t + s];
        m->face_offsets[++f] = k;
      }
    }
  assert_int_equal(f, nf);
  return m;
}

static void same_bits(const mb_mesh *a, const mb_mesh *b) {
  assert_int_equal(a->nv, b->nv);
  assert_int_equal(a->nf, b->nf);
  assert_int_equal(memcmp(a->xyz, b->xyz, sizeof(double) * 3 * (size_t)a->nv), 0);
  assert_int_equal(memcmp(a->face_offsets, b->face_offsets, sizeof(int64_t) * ((size_t)a->nf + 1)), 0);
  assert_int_equal(memcmp(a->face_indices, b->face_indices,
                          sizeof(int64_t) * (size_t)a->face_offsets[a->nf]), 0);
}

static void test_raw_read_same_bits(void **state) {
  (void)state;
  char path[1024];
  mb_test_tmp_path("bulk.h5", path, sizeof path);
  mb_mesh *ref[2] = {sheet("tri", 0), sheet("quad", 1)};
  if (mb_collection_write(MPI_COMM_WORLD, path, 2, ref))
    fail_msg("write: %s", mb_error_message());
  mb_collection *c = NULL;
  assert_int_equal(mb_collection_open(MPI_COMM_WORLD, path, &c), MB_SUCCESS);
  for (int i = 0; i < 2; i++) {
    mb_mesh *raw = NULL, *h5 = NULL;
    unsetenv("MESHBATCH_RAW_READ");
    assert_int_equal(mb_collection_read(c, i, &raw), MB_SUCCESS);
    setenv("MESHBATCH_RAW_READ", "0", 1);
    assert_int_equal(mb_collection_read(c, i, &h5), MB_SUCCESS);
    unsetenv("MESHBATCH_RAW_READ");
    const mb_mesh *r = !strcmp(raw->name, "tri") ? ref[0] : ref[1];
    printf("%s: %lld vertices, %lld faces: raw read and HDF5 read compared\n", raw->name,
           (long long)raw->nv, (long long)raw->nf);
    same_bits(raw, h5);
    same_bits(raw, r);
    mb_mesh_free(raw);
    mb_mesh_free(h5);
    /* a slab: rows from the middle, face indices global */
    const int64_t v0 = 1000, nvr = 600000, f0 = 777, nfr = r->nf - 2000;
    mb_mesh_slab sr = {0}, sh = {0};
    assert_int_equal(mb_collection_read_slab(c, i, v0, nvr, f0, nfr, &sr), MB_SUCCESS);
    setenv("MESHBATCH_RAW_READ", "0", 1);
    assert_int_equal(mb_collection_read_slab(c, i, v0, nvr, f0, nfr, &sh), MB_SUCCESS);
    unsetenv("MESHBATCH_RAW_READ");
    same_bits(sr.rows, sh.rows);
    assert_int_equal(memcmp(sr.rows->xyz, r->xyz + 3 * v0, sizeof(double) * 3 * (size_t)nvr), 0);
    assert_int_equal(memcmp(sr.rows->face_indices, r->face_indices + r->face_offsets[f0],
                            sizeof(int64_t) * (size_t)sr.rows->face_offsets[nfr]), 0);
    mb_mesh_free(sr.rows);
    mb_mesh_free(sh.rows);
  }
  assert_int_equal(mb_collection_close(c), MB_SUCCESS);
  mb_mesh_free(ref[0]);
  mb_mesh_free(ref[1]);
}

/* mb_coll_validate against mb_mesh_validate: the same verdict and message. */
static void same_verdict(const mb_mesh *m, const char *what) {
  const mb_error one = mb_mesh_validate(m, "sheet");
  char msg[2048];
  snprintf(msg, sizeof msg, "%s", one ? mb_error_message() : "");
  mb_error_clear();
  const mb_error all = mb_coll_validate(m, "sheet");
  printf("%s: %s\n", what, one ? msg : "valid");
  assert_int_equal(all, one);
  if (one) assert_string_equal(mb_error_message(), msg);
}

static void test_validation_same_verdict(void **state) {
  (void)state;
  mb_mesh *m = sheet("tri", 0);
  same_verdict(m, "valid");
  const int64_t last = m->face_offsets[m->nf] - 1;
  m->face_indices[last] = m->nv; /* the last index outside [0, nv) */
  same_verdict(m, "index nv");
  m->face_indices[last] = -1;
  same_verdict(m, "index -1");
  m->face_indices[last] = 0;
  m->xyz[3 * (m->nv - 1) + 2] = NAN;
  same_verdict(m, "NaN");
  m->xyz[3 * (m->nv - 1) + 2] = 0;
  m->face_offsets[m->nf - 1] = m->face_offsets[m->nf] - 2; /* the last face of 2 vertices */
  same_verdict(m, "2-vertex face");
  mb_mesh_free(m);
}

static void same_stats(const mb_mesh *m, const char *what) {
  int64_t len;
  int tri, big;
  mb_coll_face_stats(m, &len, &tri, &big);
  printf("%s: mixed length %lld, triangles %d, big %d\n", what, (long long)len, tri, big);
  assert_int_equal(len, mb_xdmf_mixed_length(m));
  assert_int_equal(tri, mb_mesh_is_triangles(m));
  assert_int_equal(big, mb_xdmf_fan_count(m) > 0);
}

static void test_face_stats(void **state) {
  (void)state;
  mb_mesh *t = sheet("tri", 0), *q = sheet("quad", 1);
  same_stats(t, "triangles");
  same_stats(q, "quads");
  /* a pentagon: the last quad takes one vertex more */
  int64_t *idx = realloc(q->face_indices, sizeof(int64_t) * ((size_t)q->face_offsets[q->nf] + 1));
  assert_non_null(idx);
  q->face_indices = idx;
  q->face_indices[q->face_offsets[q->nf]] = 0;
  q->face_offsets[q->nf]++;
  same_stats(q, "quads and a pentagon");
  /* a quad among triangles (the statistics read the offsets alone) */
  t->face_offsets[1] = 4;
  for (int64_t f = 2; f <= t->nf; f++) t->face_offsets[f] = t->face_offsets[f - 1] + 3;
  same_stats(t, "one quad among triangles");
  mb_mesh_free(t);
  mb_mesh_free(q);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_raw_read_same_bits),
      cmocka_unit_test(test_validation_same_verdict),
      cmocka_unit_test(test_face_stats),
  };
  const int failed = cmocka_run_group_tests(tests, NULL, NULL);
  MPI_Finalize();
  return failed ? 1 : 0;
}
