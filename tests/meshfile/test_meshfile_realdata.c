/* The real meshes of ../shared/data/meshes: counts from MANIFEST.tsv, a
 * round trip of the smallest through every format, and the read speed of the
 * largest. Skipped (exit 77) when the data folder is absent. */
#define _POSIX_C_SOURCE 200809L
#include "mb_meshfile_test.h"

#include <time.h>

static const struct {
  const char *file;
  int64_t nv, nf;
} meshes[] = {
    {"meshes/spot.obj", 2930, 5856},
    {"meshes/bob.obj", 5344, 10688},
    {"meshes/bunny_stanford.obj", 35947, 69451},
    {"meshes/armadillo.obj", 43243, 86482},
    {"meshes/igea.obj", 134345, 268686},
};

static int have_data(void) {
  char buf[1024];
  return mb_test_data_path("meshes/spot.obj", buf, sizeof buf) != NULL;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void test_real_meshes(void **state) {
  (void)state;
  if (!have_data()) skip();
  for (size_t i = 0; i < sizeof meshes / sizeof meshes[0]; i++) {
    char buf[1024];
    const char *path = mb_test_data_path(meshes[i].file, buf, sizeof buf);
    assert_non_null(path);
    mb_mesh *m = mft_read(path);
    assert_int_equal(m->nv, meshes[i].nv);
    assert_int_equal(m->nf, meshes[i].nf);
    assert_true(mb_mesh_is_triangles(m));
    mb_mesh_free(m);
  }
}

/* Every format gives back spot bit for bit. */
static void test_real_roundtrip(void **state) {
  (void)state;
  if (!have_data()) skip();
  char buf[1024];
  mb_mesh *m = mft_read(mb_test_data_path("meshes/spot.obj", buf, sizeof buf));
  assert_string_equal(m->name, "spot");
  const char *names[3] = {"spot.obj", "spot.off", "spot.ply"};
  for (int k = 0; k < 3; k++) {
    const char *path = mft_path(names[k]);
    assert_int_equal(mb_meshfile_write(path, m), MB_SUCCESS);
    mb_mesh *r = mft_read(path);
    assert_int_equal(r->nv, m->nv);
    assert_int_equal(r->nf, m->nf);
    assert_memory_equal(r->xyz, m->xyz, sizeof(double) * 3 * (size_t)m->nv);
    assert_memory_equal(r->face_indices, m->face_indices, sizeof(int64_t) * 3 * (size_t)m->nf);
    mb_mesh_free(r);
  }
  mb_mesh_free(m);
}

/* Reports the read time of igea.obj (14 MB); a figure, not a timed assertion. */
static void test_igea_speed(void **state) {
  (void)state;
  if (!have_data()) skip();
  char buf[1024];
  const char *path = mb_test_data_path("meshes/igea.obj", buf, sizeof buf);
  double best = 1e9;
  for (int r = 0; r < 3; r++) {
    double t0 = now();
    mb_mesh *m = mft_read(path);
    double t = now() - t0;
    mb_mesh_free(m);
    if (t < best) best = t;
  }
  print_message("igea.obj read in %.3f s (best of 3)\n", best);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_real_meshes),
      cmocka_unit_test(test_real_roundtrip),
      cmocka_unit_test(test_igea_speed),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  return rc == 0 && !have_data() ? MB_TEST_SKIP : rc;
}
