/* Polylla CPU backend against the reference implementation (github
 * ssalinasfe/Polylla-Mesh-DCEL, run by scripts/polylla-reference.sh; its
 * figures are recorded here as constants, the reference is not built).
 *
 * pikachu.1 (../shared/data/triangulations; skipped with 77 when absent):
 * the reference gives 167 polygons and 520 frontier edges, as meshbatch
 * does. Eight triangles of pikachu have two equally long longest edges;
 * the reference takes the first in corner order, meshbatch the larger
 * edge key (max vertex, then min vertex), so the plain polygon sets
 * differ around three of them. Given the triangles rotated to start at
 * their longest edge by meshbatch's key (polylla-reference.sh
 * --longest-first), the reference breaks ties as meshbatch does and its
 * polygon set hash is meshbatch's. Under `ties: corners` (the reference's
 * rule) meshbatch gives the reference's plain set.
 *
 * test_polylla_reftip.c shows the other difference: a barrier-edge tip
 * that the reference leaves.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_testutil.h"
#include "mb_trianglefile.h"
#include "polylla_check.h"

/* Recorded with scripts/polylla-reference.sh on pikachu.1.node. */
#define REF_PIKACHU_POLYGONS 167
#define REF_PIKACHU_FRONTIER_EDGES 520
#define REF_PIKACHU_HASH_PLAIN 0x7ce24fd3180778bdull        /* reference, own ties */
#define REF_PIKACHU_HASH_LONGEST_FIRST 0xa64a17b23b9462b9ull /* reference, --longest-first */
#define PIKACHU_TIED_TRIANGLES 8

static int have_data(void) {
  char buf[1024];
  return mb_test_data_path("triangulations/pikachu.1.node", buf, sizeof buf) != NULL;
}

static double key_len(const double *x, int64_t a, int64_t b) {
  int64_t lo = a < b ? a : b, hi = a < b ? b : a;
  double dx = x[3 * hi] - x[3 * lo], dy = x[3 * hi + 1] - x[3 * lo + 1];
  return dx * dx + dy * dy;
}

static int key_gt(const double *x, int64_t a0, int64_t a1, int64_t b0, int64_t b1) {
  double la = key_len(x, a0, a1), lb = key_len(x, b0, b1);
  if (la != lb) return la > lb;
  int64_t ah = a0 > a1 ? a0 : a1, bh = b0 > b1 ? b0 : b1;
  if (ah != bh) return ah > bh;
  return (a0 < a1 ? a0 : a1) > (b0 < b1 ? b0 : b1);
}

static void test_pikachu(void **state) {
  (void)state;
  if (!have_data()) skip();
  char buf[1024];
  mb_mesh *m = NULL;
  assert_int_equal(mb_trianglefile_read(
                       mb_test_data_path("triangulations/pikachu.1.node", buf, sizeof buf), &m),
                   MB_SUCCESS);
  mb_polylla_stats st;
  mb_mesh *p = polylla_run_checked(m, &st);
  assert_int_equal(st.polygons, REF_PIKACHU_POLYGONS);
  assert_int_equal(st.frontier_edges, REF_PIKACHU_FRONTIER_EDGES);
  uint64_t h = polylla_set_hash(p);
  print_message("pikachu.1: %lld polygons, %lld tips, set hash %016llx\n", (long long)st.polygons,
                (long long)st.barrier_edge_tips, (unsigned long long)h);
  assert_true(h == REF_PIKACHU_HASH_LONGEST_FIRST);
  assert_true(h != REF_PIKACHU_HASH_PLAIN);

  /* The ties that explain the plain difference, and the rotated input:
   * each triangle starting at its longest edge (as the reference then
   * reads it); meshbatch's polygon set does not change. */
  mb_mesh *r = NULL;
  assert_int_equal(mb_mesh_duplicate(m, &r), MB_SUCCESS);
  const double *x = m->xyz;
  int ties = 0;
  for (int64_t t = 0; t < r->nf; t++) {
    int64_t *f = r->face_indices + 3 * t;
    double l[3];
    for (int k = 0; k < 3; k++) l[k] = key_len(x, f[k], f[(k + 1) % 3]);
    double mx = fmax(l[0], fmax(l[1], l[2]));
    ties += (l[0] == mx) + (l[1] == mx) + (l[2] == mx) > 1;
    int best = 0;
    for (int k = 1; k < 3; k++)
      if (key_gt(x, f[k], f[(k + 1) % 3], f[best], f[(best + 1) % 3])) best = k;
    int64_t g[3] = {f[best], f[(best + 1) % 3], f[(best + 2) % 3]};
    memcpy(f, g, sizeof g);
  }
  assert_int_equal(ties, PIKACHU_TIED_TRIANGLES);
  mb_mesh *q = polylla_run_checked(r, NULL);
  assert_true(polylla_set_hash(q) == REF_PIKACHU_HASH_LONGEST_FIRST);
  mb_mesh_free(q);

  /* ties: corners, the reference's own rule: its plain polygon set, with
   * the same counts. */
  mb_polylla_stats sc;
  q = polylla_run_checked_ties(m, MB_POLYLLA_TIES_CORNERS, &sc);
  print_message("pikachu.1, ties: corners: %lld polygons, set hash %016llx\n",
                (long long)sc.polygons, (unsigned long long)polylla_set_hash(q));
  assert_int_equal(sc.polygons, REF_PIKACHU_POLYGONS);
  assert_int_equal(sc.frontier_edges, REF_PIKACHU_FRONTIER_EDGES);
  assert_true(polylla_set_hash(q) == REF_PIKACHU_HASH_PLAIN);
  mb_mesh_free(q);
  mb_mesh_free(r);
  mb_mesh_free(p);
  mb_mesh_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pikachu),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  return rc == 0 && !have_data() ? MB_TEST_SKIP : rc;
}
