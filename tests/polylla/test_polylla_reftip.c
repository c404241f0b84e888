/* Polylla CPU backend against the reference implementation (github
 * ssalinasfe/Polylla-Mesh-DCEL; its output recorded here as a constant,
 * obtained with its OFF mode as scripts/polylla-reference.sh runs it): a
 * barrier-edge tip that the reference leaves, and why meshbatch's output
 * differs. The reference's tip search walks each polygon from its first
 * half-edge and looks at the following ones only, so a tip that the first
 * half-edge points to stays; mb_polylla.h decides tips all at once.
 */
#include <stdlib.h>
#include <string.h>

#include "mb_testutil.h"
#include "polylla_check.h"

/* The tip fan with a terminal edge outside: centre v = 0, rim p_i = i + 1
 * at angle 270 i / 7 degrees and radius 1 + 0.05 i (a 90 degree gap from
 * p7 to p0), and q = 9 beyond the rim edge p7 p0. Triangle 0 is
 * Q = (p0, p7, q), then T_i = (v, p_i, p_i+1). The longest edge of T_i is
 * the spoke v p_i+1 (i < 7); that of T_7 and of Q is p7 p0, the terminal
 * edge. So v has one frontier edge, v p0: a barrier-edge tip.
 *
 * The reference seeds the region at half-edge 0 (p0 -> p7 of Q), turns
 * clockwise around p0 to the first frontier half-edge, p0 -> v, and
 * starts the polygon there. The successor of p0 -> v is v -> p0, its own
 * twin: the tip is at the start of the walk, where the reference's tip
 * search does not look, so it reports 0 tips and outputs one polygon
 * that walks p0, v, p0 (recorded below). meshbatch finds tips all at once
 * (a half-edge whose successor is its twin), walks clockwise around v
 * from e0 = v -> p0 over k = 7 internal edges and splits at the middle
 * one, e_4 = v -> p4 (vertex 5): two polygons, which are the reference's
 * polygon cut along (0, 5). */
static const double tipfan_xy[] = {
    0, 0,
    1, 0,
    0.82092305659143128, 0.6546642919516702,
    0.24477302735194592, 1.0724207034000062,
    -0.49896629998519176, 1.0361141980877819,
    -1.0811626414829028, 0.52066048694106981,
    -1.2186598902272796, -0.27815116744539287,
    -0.81053674241635387, -1.0163809272084385,
    -2.4799097682733903e-16, -1.3500000000000001,
    0.61904551012514741, -0.83571143866894926,
};
static const int64_t tipfan_tri[] = {1, 8, 9, 0, 1, 2, 0, 2, 3, 0, 3, 4, 0, 4, 5,
                                     0, 5, 6, 0, 6, 7, 0, 7, 8, 0, 8, 1};
/* The reference's output on this input (its OFF mode), one polygon. */
static const int64_t tipfan_reference[] = {1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9};

static int has_dedge(const int64_t *v, int64_t n, int64_t a, int64_t b) {
  for (int64_t i = 0; i < n; i++)
    if (v[i] == a && v[(i + 1) % n] == b) return 1;
  return 0;
}

static void test_reference_missed_tip(void **state) {
  (void)state;
  mb_mesh *m = polylla_test_mesh("tipfan", 10, tipfan_xy, 9, tipfan_tri);
  mb_polylla_stats st;
  mb_mesh *p = polylla_run_checked(m, &st);
  assert_int_equal(st.barrier_edge_tips, 1);
  assert_int_equal(st.polygons_repaired, 1);
  assert_int_equal(p->nf, 2);
  const int64_t a[] = {8, 9, 1, 0, 5, 6, 7}, b[] = {0, 1, 2, 3, 4, 5};
  assert_int_equal(p->face_offsets[1], 7);
  assert_memory_equal(p->face_indices, a, sizeof a);
  assert_memory_equal(p->face_indices + 7, b, sizeof b);

  /* the reference's polygon walks p0, v, p0: a tip */
  const int64_t *ref = tipfan_reference, nr = 11;
  int tip_at = -1;
  for (int64_t i = 0; i < nr; i++)
    if (ref[(i + 2) % nr] == ref[i]) tip_at = (int)((i + 1) % nr);
  assert_int_equal(tip_at, 1);
  assert_int_equal(ref[tip_at], 0);
  /* ours = the reference's polygon cut along the middle edge (0, 5): the
   * directed edges of our polygons are its edges plus 0 -> 5 and 5 -> 0 */
  int64_t ne = 0;
  for (int64_t q = 0; q < p->nf; q++) {
    const int64_t *v = p->face_indices + p->face_offsets[q];
    int64_t n = p->face_offsets[q + 1] - p->face_offsets[q];
    for (int64_t i = 0; i < n; i++, ne++) {
      int64_t s = v[i], t = v[(i + 1) % n];
      if ((s == 0 && t == 5) || (s == 5 && t == 0)) continue;
      if (!has_dedge(ref, nr, s, t)) fail_msg("edge %lld -> %lld not in the reference", (long long)s, (long long)t);
    }
  }
  assert_int_equal(ne, nr + 2);
  mb_mesh_free(p);
  mb_mesh_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reference_missed_tip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
