/* mb_generate_delaunay and mb_generate_grid2d: counts, counter-clockwise
 * triangles, a consistent manifold, the empty-circle property of every
 * interior edge, determinism for a seed, exact grid coordinates. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "mb_generate.h"
#include "mb_testutil.h"

typedef struct dedge {
  int64_t a, b, t;
} dedge;

static int dedge_cmp(const void *x, const void *y) {
  const dedge *p = x, *q = y;
  int64_t pa = p->a < p->b ? p->a : p->b, pb = p->a < p->b ? p->b : p->a;
  int64_t qa = q->a < q->b ? q->a : q->b, qb = q->a < q->b ? q->b : q->a;
  if (pa != qa) return pa < qa ? -1 : 1;
  if (pb != qb) return pb < qb ? -1 : 1;
  return (p->t > q->t) - (p->t < q->t);
}

static double orient(const double *p, const double *q, const double *r) {
  return (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0]);
}

/* > 0 when d lies inside the circle through a, b, c (CCW). */
static double incircle(const double *a, const double *b, const double *c, const double *d) {
  double adx = a[0] - d[0], ady = a[1] - d[1], bdx = b[0] - d[0], bdy = b[1] - d[1];
  double cdx = c[0] - d[0], cdy = c[1] - d[1];
  double al = adx * adx + ady * ady, bl = bdx * bdx + bdy * bdy, cl = cdx * cdx + cdy * cdy;
  return adx * (bdy * cl - bl * cdy) - ady * (bdx * cl - bl * cdx) + al * (bdx * cdy - bdy * cdx);
}

/* The checks every planar triangulation here must pass; returns the number
 * of boundary edges. If delaunay, every interior edge is locally Delaunay. */
static int64_t check_triangulation(const mb_mesh *m, int delaunay) {
  assert_int_equal(m->kind, MB_KIND_TRIANGULATION2D);
  assert_true(mb_mesh_is_triangles(m));
  assert_int_equal(mb_mesh_validate(m, m->name), MB_SUCCESS);
  char *used = calloc((size_t)m->nv, 1);
  dedge *e = malloc(sizeof *e * (size_t)(3 * m->nf));
  assert_non_null(used);
  assert_non_null(e);
  for (int64_t f = 0; f < m->nf; f++) {
    const int64_t *v = m->face_indices + 3 * f;
    for (int k = 0; k < 3; k++) {
      used[v[k]] = 1;
      e[3 * f + k] = (dedge){v[k], v[(k + 1) % 3], f};
    }
    if (!(orient(m->xyz + 3 * v[0], m->xyz + 3 * v[1], m->xyz + 3 * v[2]) > 0))
      fail_msg("triangle %lld (%lld %lld %lld) is not counter-clockwise", (long long)f,
               (long long)v[0], (long long)v[1], (long long)v[2]);
  }
  for (int64_t i = 0; i < m->nv; i++) {
    if (!used[i]) fail_msg("vertex %lld is in no triangle", (long long)i);
    assert_true(m->xyz[3 * i + 2] == 0.0);
  }
  qsort(e, (size_t)(3 * m->nf), sizeof *e, dedge_cmp);
  int64_t boundary = 0, interior = 0;
  double worst = 0;
  for (int64_t k = 0; k < 3 * m->nf;) {
    int64_t j = k + 1;
    while (j < 3 * m->nf && dedge_cmp(&(dedge){e[k].a, e[k].b, 0}, &(dedge){e[j].a, e[j].b, 0}) == 0)
      j++;
    if (j - k > 2) fail_msg("edge (%lld, %lld) has %lld triangles", (long long)e[k].a,
                            (long long)e[k].b, (long long)(j - k));
    if (j - k == 1) boundary++;
    else {
      interior++;
      /* the two triangles use the edge in opposite directions */
      assert_true(e[k].a == e[k + 1].b && e[k].b == e[k + 1].a);
      if (delaunay) {
        const int64_t *t1 = m->face_indices + 3 * e[k].t, *t2 = m->face_indices + 3 * e[k + 1].t;
        int64_t d = -1;
        for (int q = 0; q < 3; q++)
          if (t2[q] != e[k].a && t2[q] != e[k].b) d = t2[q];
        double ic = incircle(m->xyz + 3 * t1[0], m->xyz + 3 * t1[1], m->xyz + 3 * t1[2],
                             m->xyz + 3 * d);
        if (ic > worst) worst = ic;
      }
    }
    k = j;
  }
  if (delaunay && worst > 1e-12)
    fail_msg("an interior edge is not locally Delaunay (incircle %.3g)", worst);
  /* Euler for a triangulated disk: V - E + F = 1 */
  assert_int_equal(m->nv - (boundary + interior) + m->nf, 1);
  free(used);
  free(e);
  return boundary;
}

static void test_grid2d(void **state) {
  (void)state;
  const int64_t asks[][2] = {{1, 2}, {4, 2}, {5, 3}, {9, 3}, {10, 4}, {16, 4}, {17, 5},
                             {1000, 32}};
  for (size_t c = 0; c < sizeof asks / sizeof asks[0]; c++) {
    mb_mesh *m = NULL;
    assert_int_equal(mb_generate_grid2d(asks[c][0], &m), MB_SUCCESS);
    int64_t n = asks[c][1];
    char name[64];
    snprintf(name, sizeof name, "grid2d_%lld", (long long)(n * n));
    assert_string_equal(m->name, name);
    assert_int_equal(m->nv, n * n);
    assert_int_equal(m->nf, 2 * (n - 1) * (n - 1));
    const double h = 1.0 / (double)(n - 1);
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < n; i++) {
        const double *p = m->xyz + 3 * (j * n + i);
        assert_true(p[0] == (double)i * h && p[1] == (double)j * h && p[2] == 0.0);
      }
    /* square (0, 0) split by the diagonal 0 - (n + 1) */
    const int64_t first[6] = {0, 1, n + 1, 0, n + 1, n};
    assert_memory_equal(m->face_indices, first, sizeof first);
    assert_int_equal(check_triangulation(m, 0), 4 * (n - 1));
    mb_mesh_free(m);
  }
  mb_mesh *m = NULL;
  assert_int_equal(mb_generate_grid2d(0, &m), MB_ERR_ARG);
  assert_null(m);
}

static void test_delaunay_small(void **state) {
  (void)state;
  for (int clustered = 0; clustered <= 1; clustered++)
    for (int64_t n = 3; n <= 3000; n *= 7) {
      mb_mesh *m = NULL;
      assert_int_equal(mb_generate_delaunay(n, 42, clustered, &m), MB_SUCCESS);
      char name[64];
      snprintf(name, sizeof name, "delaunay_%lld", (long long)n);
      assert_string_equal(m->name, name);
      assert_int_equal(m->nv, n);
      for (int64_t i = 0; i < m->nv; i++)
        assert_true(m->xyz[3 * i] >= 0 && m->xyz[3 * i] < 1 && m->xyz[3 * i + 1] >= 0 &&
                    m->xyz[3 * i + 1] < 1);
      int64_t h = check_triangulation(m, 1);
      /* points in general position: 2 n - 2 - h triangles */
      assert_int_equal(m->nf, 2 * n - 2 - h);
      /* sorted by (first, second, third), the first the smallest */
      for (int64_t f = 0; f < m->nf; f++) {
        const int64_t *t = m->face_indices + 3 * f;
        assert_true(t[0] < t[1] && t[0] < t[2]);
        if (f > 0) {
          const int64_t *s = t - 3;
          assert_true(s[0] < t[0] || (s[0] == t[0] && (s[1] < t[1] || (s[1] == t[1] && s[2] < t[2]))));
        }
      }
      mb_mesh_free(m);
    }
}

static void test_delaunay_deterministic(void **state) {
  (void)state;
  mb_mesh *a = NULL, *b = NULL, *c = NULL;
  assert_int_equal(mb_generate_delaunay(20000, 7, 1, &a), MB_SUCCESS);
  assert_int_equal(mb_generate_delaunay(20000, 7, 1, &b), MB_SUCCESS);
  assert_int_equal(mb_generate_delaunay(20000, 8, 1, &c), MB_SUCCESS);
  mb_test_assert_same_mesh(a, b);
  assert_true(memcmp(a->xyz, c->xyz, sizeof(double) * 3 * (size_t)a->nv) != 0);
  check_triangulation(a, 1);
  mb_mesh_free(a);
  mb_mesh_free(b);
  mb_mesh_free(c);
}

static void test_delaunay_errors(void **state) {
  (void)state;
  mb_mesh *m = NULL;
  assert_int_equal(mb_generate_delaunay(2, 1, 0, &m), MB_ERR_ARG);
  assert_null(m);
  assert_int_equal(mb_generate_delaunay(100, 1, 2, &m), MB_ERR_ARG);
  assert_int_equal(mb_generate_delaunay((int64_t)1 << 32, 1, 0, &m), MB_ERR_ARG);
  mb_test_assert_message_contains("Delaunay point count must be in [3, 2147483647]");
}

/* qhull on strips and the hull zone gives the triangles of qhull once on
 * every point, bit for bit, for uniform and clustered points and any
 * number of strips; the strips did make them (no fallback). */
static void test_delaunay_strips(void **state) {
  (void)state;
#ifdef _OPENMP
  int threads = omp_get_max_threads();
  for (int clustered = 0; clustered <= 1; clustered++) {
    mb_mesh *once = NULL;
    omp_set_num_threads(1);
    assert_int_equal(mb_generate_delaunay(160000, 11, clustered, &once), MB_SUCCESS);
    assert_int_equal(mb_generate_delaunay_strips(), 1);
    check_triangulation(once, 1);
    for (int t = 2; t <= 3; t++) {
      mb_mesh *m = NULL;
      omp_set_num_threads(t);
      assert_int_equal(mb_generate_delaunay(160000, 11, clustered, &m), MB_SUCCESS);
      assert_int_equal(mb_generate_delaunay_strips(), t);
      mb_test_assert_same_mesh(once, m);
      mb_mesh_free(m);
    }
    mb_mesh_free(once);
  }
  /* below two strips' worth of points: qhull once */
  mb_mesh *m = NULL;
  omp_set_num_threads(4);
  assert_int_equal(mb_generate_delaunay(90000, 11, 0, &m), MB_SUCCESS);
  assert_int_equal(mb_generate_delaunay_strips(), 1);
  mb_mesh_free(m);
  omp_set_num_threads(threads);
#else
  skip();
#endif
}

/* A timing figure for 200 k points, not a timed assertion. */
static void test_delaunay_speed(void **state) {
  (void)state;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  mb_mesh *m = NULL;
  assert_int_equal(mb_generate_delaunay(200000, 3, 0, &m), MB_SUCCESS);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  assert_int_equal(m->nv, 200000);
  assert_true(m->nf > 399000 && m->nf < 400000);
  print_message("delaunay 200000 points: %lld triangles in %.2f s\n", (long long)m->nf,
                (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
  mb_mesh_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_grid2d),
      cmocka_unit_test(test_delaunay_small),
      cmocka_unit_test(test_delaunay_deterministic),
      cmocka_unit_test(test_delaunay_errors),
      cmocka_unit_test(test_delaunay_strips),
      cmocka_unit_test(test_delaunay_speed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
