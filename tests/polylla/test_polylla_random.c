/* Polylla CPU backend on generated triangulations: jittered grids with
 * random diagonals and holes (many barrier-edge tips), exact ties on a
 * half-integer lattice, clockwise input, thread-count independence, and
 * Delaunay triangulations and the benchmark grid where mb_generate has
 * them. Every output passes the checker and the serial rules check. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "mb_testutil.h"
#include "polylla_check.h"
#include "mb_generate.h"

static uint64_t rng_next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static double rng_unit(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1.0p-53; }

/* n x n points (i + jitter, j + jitter); each cell split by a random
 * diagonal; a fraction `holes` of the cells left out. jitter < 0.25
 * keeps every cell convex, so both diagonals make valid triangles.
 * lattice != 0 moves the points by -1/8, 0 or 1/8 instead (exact squared
 * lengths: many ties). */
static mb_mesh *jittered_grid(int n, uint64_t seed, double jitter, double holes, int lattice) {
  uint64_t s = seed;
  double *xy = malloc(sizeof *xy * 2 * (size_t)n * n);
  int64_t *tri = malloc(sizeof *tri * 6 * (size_t)(n - 1) * (n - 1));
  for (int64_t v = 0; v < (int64_t)n * n; v++) {
    double dx = jitter * (2 * rng_unit(&s) - 1), dy = jitter * (2 * rng_unit(&s) - 1);
    if (lattice) /* -1/8, 0 or 1/8: exact squared lengths */
      dx = 0.125 * (double)((int)(rng_next(&s) % 3) - 1),
      dy = 0.125 * (double)((int)(rng_next(&s) % 3) - 1);
    xy[2 * v] = (double)(v % n) + dx;
    xy[2 * v + 1] = (double)(v / n) + dy;
  }
  int64_t nf = 0;
  for (int j = 0; j + 1 < n; j++)
    for (int i = 0; i + 1 < n; i++) {
      if (rng_unit(&s) < holes) continue;
      int64_t a = (int64_t)j * n + i, b = a + 1, c = a + n + 1, d = a + n;
      int64_t *t = tri + 3 * nf;
      if (rng_next(&s) & 1)
        t[0] = a, t[1] = b, t[2] = c, t[3] = a, t[4] = c, t[5] = d;
      else
        t[0] = a, t[1] = b, t[2] = d, t[3] = b, t[4] = c, t[5] = d;
      nf += 2;
    }
  char name[64];
  snprintf(name, sizeof name, "jgrid_%d_%llu", n, (unsigned long long)seed);
  mb_mesh *m = polylla_test_mesh(name, (int64_t)n * n, xy, nf, tri);
  free(xy);
  free(tri);
  return m;
}

static void assert_same_output(const mb_mesh *a, const mb_mesh *b) {
  assert_int_equal(a->nf, b->nf);
  assert_memory_equal(a->face_offsets, b->face_offsets, sizeof(int64_t) * (size_t)(a->nf + 1));
  assert_memory_equal(a->face_indices, b->face_indices,
                      sizeof(int64_t) * (size_t)a->face_offsets[a->nf]);
  assert_int_equal(a->attrs.n, b->attrs.n);
  for (int i = 0; i < a->attrs.n; i++) {
    assert_string_equal(a->attrs.keys[i], b->attrs.keys[i]);
    assert_string_equal(a->attrs.values[i], b->attrs.values[i]);
  }
}

/* Many seeds, with and without holes (tips are rare on these grids; the
 * Delaunay test below has hundreds). */
static void test_jittered_grids(void **state) {
  (void)state;
  int64_t tips = 0, repaired = 0;
  for (uint64_t seed = 1; seed <= 12; seed++) {
    mb_mesh *m = jittered_grid(30, seed, 0.2, seed % 3 ? 0.0 : 0.15, 0);
    mb_polylla_stats st;
    mb_mesh *p = polylla_run_checked(m, &st);
    tips += st.barrier_edge_tips;
    repaired += st.polygons_repaired;
    assert_true(st.polygons_repaired <= st.barrier_edge_tips);
    mb_mesh_free(p);
    mb_mesh_free(m);
  }
  print_message("jittered grids: %lld tips in %lld repaired polygons\n", (long long)tips,
                (long long)repaired);
}

/* Coordinates on a quarter-integer lattice: many equal squared lengths. */
static void test_lattice_ties(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 8; seed++) {
    mb_mesh *m = jittered_grid(25, 100 + seed, 0, 0.05, 1);
    mb_mesh *p = polylla_run_checked(m, NULL);
    mb_mesh_free(p);
    mb_mesh_free(m);
  }
}

/* Triangles given clockwise (second and third corner swapped) give the
 * same output bit for bit; so does a mixture. */
static void test_clockwise_input(void **state) {
  (void)state;
  mb_mesh *m = jittered_grid(40, 7, 0.2, 0.1, 0);
  mb_mesh *p = polylla_run_checked(m, NULL);
  mb_mesh *cw = NULL;
  assert_int_equal(mb_mesh_duplicate(m, &cw), MB_SUCCESS);
  uint64_t s = 3;
  for (int pass = 0; pass < 2; pass++) {
    for (int64_t t = 0; t < cw->nf; t++) {
      if (pass == 1 && (rng_next(&s) & 1)) continue;
      int64_t *f = cw->face_indices + 3 * t, x = f[1];
      f[1] = f[2];
      f[2] = x;
    }
    mb_mesh *q = polylla_run_checked(cw, NULL);
    assert_same_output(p, q);
    mb_mesh_free(q);
    memcpy(cw->face_indices, m->face_indices, sizeof(int64_t) * 3 * (size_t)m->nf);
  }
  mb_mesh_free(cw);
  mb_mesh_free(p);
  mb_mesh_free(m);
}

/* 1, 2 and 3 OpenMP threads: the same output bit for bit. */
static void test_thread_independence(void **state) {
  (void)state;
#ifdef _OPENMP
  int saved = omp_get_max_threads();
  mb_mesh *m = jittered_grid(120, 42, 0.2, 0.05, 0);
  omp_set_num_threads(1);
  mb_mesh *p1 = polylla_run_checked(m, NULL);
  for (int nt = 2; nt <= 3; nt++) {
    omp_set_num_threads(nt);
    mb_mesh *q = NULL;
    assert_int_equal(mb_polylla_cpu(m, NULL, &q, NULL), MB_SUCCESS);
    assert_same_output(p1, q);
    mb_mesh_free(q);
  }
  omp_set_num_threads(saved);
  mb_mesh_free(p1);
  mb_mesh_free(m);
#else
  skip();
#endif
}

/* Delaunay triangulations of 10 k uniform and clustered points. */
static void test_delaunay(void **state) {
  (void)state;
  for (int clustered = 0; clustered <= 1; clustered++) {
    mb_mesh *m = NULL;
    assert_int_equal(mb_generate_delaunay(10000, 5, clustered, &m), MB_SUCCESS);
    mb_polylla_stats st;
    mb_mesh *p = polylla_run_checked(m, &st);
    assert_true(st.barrier_edge_tips > 0);
    print_message("delaunay 10k (%s): %lld triangles -> %lld polygons, %lld tips\n",
                  clustered ? "clustered" : "uniform", (long long)st.triangles,
                  (long long)st.polygons, (long long)st.barrier_edge_tips);
    mb_mesh_free(p);
    mb_mesh_free(m);
  }
}

/* The benchmark grid: right isosceles triangles, the squares come out. */
static void test_grid2d(void **state) {
  (void)state;
  mb_mesh *m = NULL;
  assert_int_equal(mb_generate_grid2d(400, &m), MB_SUCCESS);
  mb_mesh *p = polylla_run_checked(m, NULL);
  int64_t n = (int64_t)llround(sqrt((double)m->nv));
  assert_int_equal(p->nf, (n - 1) * (n - 1));
  for (int64_t f = 0; f < p->nf; f++)
    assert_int_equal(p->face_offsets[f + 1] - p->face_offsets[f], 4);
  mb_mesh_free(p);
  mb_mesh_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_jittered_grids),
      cmocka_unit_test(test_lattice_ties),
      cmocka_unit_test(test_clockwise_input),
      cmocka_unit_test(test_thread_independence),
      cmocka_unit_test(test_delaunay),
      cmocka_unit_test(test_grid2d),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
