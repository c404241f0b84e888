/* Owned and ghost numbering with ghost depth 1 and 2 (partition/mb_local.h):
 * on a path-like strip split in two halves, the ghosts are exactly the
 * vertices within `depth` edges of the owned ones, the owned vertices next
 * to the halo are those with a ghost within `depth` edges, ghost rings come
 * nearest first, and rows exist for owned vertices and inner ghost rings. */
#include <stdlib.h>

#include "mb_adjacency.h"
#include "mb_local.h"
#include "mb_testutil.h"

enum { N = 10 }; /* a strip of 2 x N vertices, columns 0..N-1, triangulated */

static mb_adjacency *strip(void) {
  double xyz[2 * N * 3];
  int64_t tri[2 * (N - 1) * 3];
  for (int i = 0; i < N; i++)
    for (int j = 0; j < 2; j++) {
      double *p = xyz + 3 * (2 * i + j);
      p[0] = i; p[1] = j; p[2] = 0;
    }
  for (int i = 0; i < N - 1; i++) {
    int64_t a = 2 * i, b = 2 * i + 1, c = 2 * i + 2, d = 2 * i + 3;
    int64_t *t = tri + 6 * i;
    t[0] = a; t[1] = c; t[2] = d; t[3] = a; t[4] = d; t[5] = b;
  }
  mb_mesh *m = mb_test_mesh_triangles("strip", 2 * N, xyz, 2 * (N - 1), tri);
  mb_adjacency *adj = NULL;
  assert_int_equal(mb_adjacency_build(m, &adj), MB_SUCCESS);
  mb_mesh_free(m);
  return adj;
}

/* Column of a vertex. */
static int col(int64_t v) { return (int)(v / 2); }

static void check(int depth) {
  mb_adjacency *g = strip();
  int32_t part[2 * N];
  for (int v = 0; v < 2 * N; v++) part[v] = col(v) < N / 2 ? 0 : 1;
  mb_local_domain *d = NULL;
  assert_int_equal(mb_local_domain_build(g, part, 0, depth, NULL, &d), MB_SUCCESS);
  assert_int_equal(d->depth, depth);
  assert_int_equal(d->nowned, N); /* columns 0 .. N/2-1, two vertices each */
  /* Every edge spans at most one column, and the diagonals make column k+1
   * reachable from column k in one edge: ghosts are columns N/2 .. N/2+depth-1. */
  assert_int_equal(d->nghost, 2 * depth);
  for (int64_t l = 0; l < d->nghost; l++) {
    int c = col(d->global[d->nowned + l]);
    assert_true(c >= N / 2 && c < N / 2 + depth);
    assert_int_equal(d->ghost_owner[l], 1);
    if (l > 0) /* nearest ring first */
      assert_true(col(d->global[d->nowned + l - 1]) <= c);
  }
  /* Owned vertices within depth edges of a ghost wait for the halo. */
  assert_int_equal(d->nowned - d->ninterior, 2 * depth);
  for (int64_t l = 0; l < d->nowned; l++) {
    int c = col(d->global[l]);
    assert_true(l < d->ninterior ? c < N / 2 - depth : c >= N / 2 - depth);
  }
  /* Rows: owned vertices and the ghost rings inside the deepest one. */
  assert_int_equal(d->nghost_rows, 2 * (depth - 1));
  assert_int_equal(d->adj->nv, d->nowned + d->nghost_rows);
  for (int64_t l = 0; l < d->adj->nv; l++)
    for (int64_t k = d->adj->row[l]; k < d->adj->row[l + 1]; k++)
      assert_true(d->adj->col[k] >= 0 && d->adj->col[k] < d->nowned + d->nghost);
  mb_local_domain_free(d);
  mb_adjacency_free(g);
}

static void test_depth_1(void **state) { (void)state; check(1); }
static void test_depth_2(void **state) { (void)state; check(2); }
static void test_depth_3(void **state) { (void)state; check(3); }

static void test_depth_range(void **state) {
  (void)state;
  mb_adjacency *g = strip();
  int32_t part[2 * N] = {0};
  mb_local_domain *d = NULL;
  assert_int_equal(mb_local_domain_build(g, part, 0, 0, NULL, &d), MB_ERR_ARG);
  mb_test_assert_message_contains("ghost depth 0 out of range");
  mb_adjacency_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_depth_1), cmocka_unit_test(test_depth_2),
      cmocka_unit_test(test_depth_3), cmocka_unit_test(test_depth_range)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
