/* Polylla's pinch repair (mb_polylla.h, "Pinch repair"): polygons that
 * touch themselves at a vertex (the boundary passes through the vertex
 * twice with different neighbours, not a barrier-edge tip) are cut until
 * every polygon is simple. Cases: a ring built by hand whose one region
 * touches itself at both ends of a frontier edge (a keyhole), generated
 * Delaunay triangulations (the first seeds of a fixed size, which include
 * pinched regions), and the
 * Delaunay triangulation of 100 k uniform points of issue 28 (`meshbatch
 * generate delaunay --points 100000`, seed 1). Every output passes the
 * checker (polylla_check.h: simple polygons, one per region, areas, the
 * rules with the cuts counted by pinches_split) and the repair's own
 * properties: a pinched input gives pinches_split > 0 and as many more
 * polygons and frontier edges.
 *
 * The scan that decides whether any polygon is pinched (pairwise up to 32
 * vertices, a sorted copy above) is checked on one polygon of 10 and of 40
 * vertices, simple and with a vertex listed twice; the repair's core
 * (mb_polylla_pinch_pieces, which the CUDA backend calls with its own
 * corner scan) on the ring's keyhole and on the fan; the merge by head
 * (mb_polylla_merge) against a sort by head.
 *
 * `test_polylla_pinch --search N SEEDS` prints the pinched Delaunay inputs
 * of N points among seeds 1..SEEDS (how the small case was found).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_generate.h"
#include "mb_testutil.h"
#include "polylla_check.h"

/* The attribute pinches_split of an output. */
static long long pinches(const mb_mesh *p) {
  const char *s = mb_attrs_get(&p->attrs, "pinches_split");
  assert_non_null(s);
  return strtoll(s, NULL, 10);
}

/* Run the CPU backend (checked), assert the figures agree, return the cuts. */
static long long run_pinch_checked(const mb_mesh *tri, mb_polylla_stats *st) {
  mb_mesh *p = polylla_run_checked(tri, st);
  const long long n = pinches(p);
  assert_int_equal(st->pinches_split, n);
  assert_int_equal(st->polygons, p->nf);
  mb_mesh_free(p);
  return n;
}

/* A ring by hand: 8 outer vertices (0-7) at radii 10, 11, ..., 17 and 8
 * inner ones (8-15), staggered, at radii 2, 1.85, ..., 0.95 (rounded to
 * one decimal), round a hole; 16 triangles. Every triangle's longest edge
 * is one of its two edges across the ring, and their lengths grow from
 * (0, 8) round both ways to (7, 15): one terminal edge, so the whole ring
 * is one region, and (0, 8) is the longest edge of neither neighbour: a
 * frontier edge with the region on both sides whose ends are both
 * boundary vertices (no barrier-edge tip). The label-phase polygon is the
 * keyhole 0 1 ... 7 0 8 15 14 ... 9 8, through 0 and 8 twice. */
static void test_ring_pinch(void **state) {
  (void)state;
  mb_mesh *m = polylla_pinch_ring();
  mb_polylla_stats st;
  mb_mesh *p = polylla_run_checked(m, &st);
  assert_int_equal(pinches(p), 1);
  assert_int_equal(st.pinches_split, 1);
  assert_int_equal(st.barrier_edge_tips, 0);
  /* one cut frees both ends: (1, 9), the shortest path edge with no end
   * repeated, leaving the quadrilateral 0 1 9 8 and the rest of the ring */
  static const int64_t off[] = {0, 4, 20};
  static const int64_t idx[] = {0, 1, 9, 8, 1, 2, 3, 4, 5, 6, 7, 0, 8, 15, 14, 13, 12, 11, 10, 9};
  assert_int_equal(p->nf, 2);
  assert_memory_equal(p->face_offsets, off, sizeof off);
  assert_memory_equal(p->face_indices, idx, sizeof idx);
  print_message("ring: keyhole cut into %lld polygons (%lld + %lld vertices)\n",
                (long long)p->nf, (long long)(p->face_offsets[1] - p->face_offsets[0]),
                (long long)(p->face_offsets[2] - p->face_offsets[1]));
  mb_mesh_free(p);
  mb_mesh_free(m);
}

/* Generated: Delaunay triangulations of 300 clustered points, seeds
 * 1..120 (seeds 2, 43, 65, 99 and 106 hold pinched regions, found by
 * --search): every output simple, and at least 4 inputs pinched. */
static void test_generated(void **state) {
  (void)state;
  long long total = 0, pinched = 0;
  for (uint64_t seed = 1; seed <= 120; seed++) {
    mb_mesh *m = NULL;
    assert_int_equal(mb_generate_delaunay(300, seed, 1, &m), MB_SUCCESS);
    mb_polylla_stats st;
    const long long n = run_pinch_checked(m, &st);
    total += n;
    pinched += n > 0;
    mb_mesh_free(m);
  }
  print_message("120 Delaunay triangulations of 300 clustered points: %lld pinched, %lld "
                "cuts\n", pinched, total);
  assert_true(pinched >= 4);
}

/* Issue 28's case: 100 k uniform points, seed 1 (the CLI's default). */
static void test_delaunay_100k(void **state) {
  (void)state;
  mb_mesh *m = NULL;
  assert_int_equal(mb_generate_delaunay(100000, 1, 0, &m), MB_SUCCESS);
  mb_polylla_stats st;
  const long long n = run_pinch_checked(m, &st);
  print_message("delaunay 100k: %lld triangles -> %lld polygons, %lld tips, %lld pinches "
                "split\n", (long long)st.triangles, (long long)st.polygons,
                (long long)st.barrier_edge_tips, n);
  assert_true(n >= 1);
  mb_mesh_free(m);
}

static int search(int npoints, int seeds) {
  for (int seed = 1; seed <= seeds; seed++)
    for (int clustered = 0; clustered <= 1; clustered++) {
      mb_mesh *m = NULL, *p = NULL;
      mb_polylla_stats st;
      if (mb_generate_delaunay(npoints, (uint64_t)seed, clustered, &m) ||
          mb_polylla_cpu(m, NULL, &p, &st))
        return 1;
      if (st.pinches_split)
        printf("points %d seed %d clustered %d: %lld triangles, %lld pinches split\n",
               npoints, seed, clustered, (long long)st.triangles,
               (long long)st.pinches_split);
      mb_mesh_free(p);
      mb_mesh_free(m);
    }
  return 0;
}

/* Print one generated input and its polygons (Python literals), to study
 * a pinch. */
static int dump(int npoints, int seed, int clustered) {
  mb_mesh *m = NULL, *p = NULL;
  mb_polylla_stats st;
  if (mb_generate_delaunay(npoints, (uint64_t)seed, clustered, &m) ||
      mb_polylla_cpu(m, NULL, &p, &st))
    return 1;
  printf("xy = [");
  for (int64_t v = 0; v < m->nv; v++) printf("(%.17g, %.17g),", m->xyz[3 * v], m->xyz[3 * v + 1]);
  printf("]\ntri = [");
  for (int64_t f = 0; f < m->nf; f++)
    printf("(%lld, %lld, %lld),", (long long)m->face_indices[3 * f],
           (long long)m->face_indices[3 * f + 1], (long long)m->face_indices[3 * f + 2]);
  printf("]\npoly = [");
  for (int64_t f = 0; f < p->nf; f++) {
    printf("[");
    for (int64_t k = p->face_offsets[f]; k < p->face_offsets[f + 1]; k++)
      printf("%lld,", (long long)p->face_indices[k]);
    printf("],");
  }
  printf("]\n");
  mb_mesh_free(p);
  mb_mesh_free(m);
  return 0;
}

/* A fan of k triangles round vertex 0 (vertices 1..k on the unit circle)
 * and its boundary as one polygon, listed counter-clockwise, with vertex
 * k / 2 listed once more at the end when twice is set. */
static void fan_and_polygon(int k, int twice, mb_mesh **tri, mb_mesh **poly) {
  const double pi = 3.14159265358979323846;
  assert_int_equal(mb_mesh_create("fan", k + 1, k, 3 * k, tri), MB_SUCCESS);
  mb_mesh *t = *tri;
  t->kind = MB_KIND_TRIANGULATION2D;
  for (int i = 1; i <= k; i++) {
    t->xyz[3 * i] = cos(2 * pi * (i - 1) / k);
    t->xyz[3 * i + 1] = sin(2 * pi * (i - 1) / k);
  }
  for (int f = 0; f < k; f++) {
    t->face_offsets[f + 1] = 3 * (f + 1);
    t->face_indices[3 * f] = 0;
    t->face_indices[3 * f + 1] = f + 1;
    t->face_indices[3 * f + 2] = f + 1 < k ? f + 2 : 1;
  }
  const int n = k + (twice ? 1 : 0);
  assert_int_equal(mb_mesh_create("fan", k + 1, 1, n, poly), MB_SUCCESS);
  mb_mesh *p = *poly;
  p->kind = MB_KIND_POLYGONS2D;
  memcpy(p->xyz, t->xyz, sizeof(double) * 3 * (size_t)(k + 1));
  p->face_offsets[1] = n;
  for (int i = 0; i < k; i++) p->face_indices[i] = i + 1;
  if (twice) p->face_indices[k] = k / 2;
}

static void test_scan_sizes(void **state) {
  (void)state;
  const int sizes[2] = {10, 40};
  for (int s = 0; s < 2; s++) {
    mb_mesh *tri = NULL, *poly = NULL;
    /* simple: no pinch found, the polygon kept as it is */
    fan_and_polygon(sizes[s], 0, &tri, &poly);
    const mb_mesh *before = poly;
    mb_polylla_stats st = {0};
    assert_int_equal(mb_polylla_split_pinches(tri, NULL, &poly, NULL, &st),
                     MB_SUCCESS);
    assert_ptr_equal(poly, before);
    assert_int_equal(st.pinches_split, 0);
    assert_string_equal(mb_attrs_get(&poly->attrs, "pinches_split"), "0");
    mb_mesh_free(tri);
    mb_mesh_free(poly);
    /* a vertex listed twice: found, so the repair starts and, this polygon
     * being no region of the fan (no triangle has its three corners on it),
     * stops */
    fan_and_polygon(sizes[s], 1, &tri, &poly);
    before = poly;
    /* no heads: the repair cannot merge its pieces */
    assert_int_equal(mb_polylla_split_pinches(tri, NULL, &poly, NULL, NULL),
                     MB_ERR_ARG);
    assert_ptr_equal(poly, before);
    int64_t *heads = malloc(sizeof *heads);
    assert_non_null(heads);
    heads[0] = 0;
    assert_int_equal(mb_polylla_split_pinches(tri, NULL, &poly, &heads, NULL),
                     MB_ERR_NUMERIC);
    assert_ptr_equal(poly, before); /* kept on error */
    free(heads);
    mb_mesh_free(tri);
    mb_mesh_free(poly);
  }
  printf("pinch scan: polygons of 10 and 40 vertices, simple and with a vertex twice\n");
}

/* A backend's corner scan (mb_polylla_corners_fn) for the tests below:
 * every triangle of corners_tri whose three corners are marked (brute force), counting its calls. */
static const mb_mesh *corners_tri;
static int corners_calls;
static mb_error corners_brute(void *ctx, const uint64_t *in, int64_t nwords, int64_t **cand,
                              int64_t *ncand) {
  (void)ctx;
  corners_calls++;
  const mb_mesh *t = corners_tri;
  assert_true(nwords >= (t->nv + 63) / 64);
  *cand = malloc(sizeof **cand * (size_t)(t->nf ? t->nf : 1));
  assert_non_null(*cand);
  *ncand = 0;
  for (int64_t f = 0; f < t->nf; f++) {
    int k = 0;
    for (; k < 3; k++) {
      const int64_t v = t->face_indices[3 * f + k];
      if (!(in[v >> 6] >> (v & 63) & 1)) break;
    }
    if (k == 3) (*cand)[(*ncand)++] = f;
  }
  return MB_SUCCESS;
}

/* The repair's core (mb_polylla_pinch_pieces) on the ring's keyhole, 0 1
 * ... 7 0 8 15 14 ... 9 8 (the label-phase polygon of test_ring_pinch):
 * its pieces, with the corners scanned on the host and by a backend's
 * scan (corners_brute, called once), are the CPU backend's polygons of
 * the ring; on the fan's polygon with a vertex twice the backend's scan
 * finds no triangle, and the core says so as the host's scan does. */
static void test_pieces(void **state) {
  (void)state;
  mb_mesh *ring = polylla_pinch_ring();
  mb_polylla_stats st;
  mb_mesh *ref = polylla_run_checked(ring, &st);
  int64_t key[18], off[2] = {0, 18};
  for (int i = 0; i < 8; i++) key[i] = i;
  key[8] = 0;
  key[9] = 8;
  for (int i = 0; i < 7; i++) key[10 + i] = 15 - i;
  key[17] = 8;
  const int64_t pin[1] = {0};
  for (int backend = 0; backend <= 1; backend++) {
    mb_polylla_pieces pc;
    corners_tri = ring;
    corners_calls = 0;
    assert_int_equal(mb_polylla_pinch_pieces(ring, NULL, 1, pin, off, key,
                                             backend ? corners_brute : NULL, NULL, &pc),
                     MB_SUCCESS);
    assert_int_equal(corners_calls, backend);
    assert_int_equal(pc.nsplit, st.pinches_split);
    assert_int_equal(pc.n, ref->nf);
    for (int64_t p = 0; p < pc.n; p++) {
      assert_int_equal(pc.off[p + 1] - pc.off[p], ref->face_offsets[p + 1] - ref->face_offsets[p]);
      for (int64_t k = pc.off[p]; k < pc.off[p + 1]; k++)
        assert_int_equal(pc.idx[k], ref->face_indices[ref->face_offsets[p] + k - pc.off[p]]);
      if (p) assert_true(pc.heads[p] > pc.heads[p - 1]);
    }
    mb_polylla_pieces_free(&pc);
    assert_null(pc.off);
  }
  mb_mesh_free(ref);
  mb_mesh_free(ring);
  mb_mesh *tri = NULL, *poly = NULL;
  fan_and_polygon(12, 1, &tri, &poly);
  const int64_t foff[2] = {0, poly->face_offsets[1]};
  mb_polylla_pieces pc;
  corners_tri = tri;
  corners_calls = 0;
  assert_int_equal(mb_polylla_pinch_pieces(tri, NULL, 1, pin, foff, poly->face_indices,
                                           corners_brute, NULL, &pc),
                   MB_ERR_NUMERIC);
  assert_int_equal(corners_calls, 1);
  assert_null(pc.off);
  mb_mesh_free(tri);
  mb_mesh_free(poly);
  printf("pinch pieces: the ring's keyhole cut as the CPU backend cuts it, corners scanned "
         "on the host and by a backend\n");
}

/* mb_polylla_merge against a merge by sorting: 2 000 polygons of 3-8
 * vertices (heads 7 i + 3), 40 dropped, and pieces of 3-6 vertices whose
 * heads are not kept polygons' heads, in three shapes: spread over the
 * whole order (each cutting a run of kept polygons: more segments than
 * pieces), all before the first polygon, all after the last; every array
 * and the counts compared entry for entry. */
static uint64_t merge_rng = 88172645463325252ull;
static int64_t merge_rand(int64_t n) {
  merge_rng ^= merge_rng << 13;
  merge_rng ^= merge_rng >> 7;
  merge_rng ^= merge_rng << 17;
  return (int64_t)(merge_rng % (uint64_t)n);
}
static int cmp_head_row(const void *a, const void *b) {
  const int64_t *x = a, *y = b; /* (head, kept 1 / piece 0, index) */
  if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
  return (x[1] > y[1]) - (x[1] < y[1]);
}
static void test_merge(void **state) {
  (void)state;
  enum { NF = 2000, NDROP = 40, NP = 300 };
  for (int shape = 0; shape < 3; shape++) {
    int64_t *fo = malloc(sizeof *fo * (NF + 1)), *hd = malloc(sizeof *hd * NF);
    int64_t *fi = malloc(sizeof *fi * 8 * NF), drop[NDROP], pidx[6 * NP];
    mb_polylla_piece pc[NP];
    assert_true(fo && hd && fi);
    fo[0] = 0;
    for (int64_t i = 0; i < NF; i++) {
      const int64_t n = 3 + merge_rand(6);
      for (int64_t k = 0; k < n; k++) fi[fo[i] + k] = 10 * i + k;
      fo[i + 1] = fo[i] + n;
      hd[i] = 7 * i + 3;
    }
    for (int64_t k = 0; k < NDROP; k++) drop[k] = 50 * k + merge_rand(50); /* increasing */
    int64_t at = 0;
    for (int64_t j = 0; j < NP; j++) {
      /* heads 7 i + 3 + r (r in 1..6: never a kept head), increasing */
      const int64_t h = shape == 0 ? 7 * (int64_t)(j * NF / NP) + 3 + 1 + merge_rand(6)
                        : shape == 1 ? j : 7 * NF + j;
      const int64_t n = 3 + merge_rand(4);
      for (int64_t k = 0; k < n; k++) pidx[at + k] = -(1000 * j + k);
      pc[j] = (mb_polylla_piece){h, at, n};
      at += n;
    }
    for (int64_t j = 1; j < NP; j++) assert_true(pc[j].head > pc[j - 1].head);
    int64_t *o2, *i2, *h2;
    double *cnt;
    assert_int_equal(mb_polylla_merge(fo, fi, hd, NF, drop, NDROP, pc, NP, pidx, &o2, &i2, &h2,
                                      &cnt),
                     MB_SUCCESS);
    /* the reference: every kept polygon and piece sorted by head */
    int64_t rows[NF + NP][3], nr = 0;
    for (int64_t i = 0, k = 0; i < NF; i++) {
      if (k < NDROP && drop[k] == i) {
        k++;
        continue;
      }
      rows[nr][0] = hd[i], rows[nr][1] = 1, rows[nr++][2] = i;
    }
    for (int64_t j = 0; j < NP; j++) rows[nr][0] = pc[j].head, rows[nr][1] = 0, rows[nr++][2] = j;
    qsort(rows, (size_t)nr, sizeof rows[0], cmp_head_row);
    assert_int_equal(nr, NF - NDROP + NP);
    assert_int_equal(o2[0], 0);
    for (int64_t q = 0; q < nr; q++) {
      const int64_t *src = rows[q][1] ? fi + fo[rows[q][2]] : pidx + pc[rows[q][2]].at;
      const int64_t n = rows[q][1] ? fo[rows[q][2] + 1] - fo[rows[q][2]] : pc[rows[q][2]].n;
      assert_int_equal(h2[q], rows[q][0]);
      assert_int_equal(o2[q + 1] - o2[q], n);
      assert_true(cnt[q] == (double)n);
      for (int64_t k = 0; k < n; k++) assert_int_equal(i2[o2[q] + k], src[k]);
    }
    free(o2);
    free(i2);
    free(h2);
    free(cnt);
    free(fo);
    free(hd);
    free(fi);
  }
  printf("merge by head: 2000 polygons, 40 dropped, 300 pieces spread, before and after: "
         "as a sort by head\n");
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "--search")) return search(atoi(argv[2]), atoi(argv[3]));
  if (argc == 5 && !strcmp(argv[1], "--dump"))
    return dump(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scan_sizes),
      cmocka_unit_test(test_pieces),
      cmocka_unit_test(test_merge),
      cmocka_unit_test(test_ring_pinch),
      cmocka_unit_test(test_generated),
      cmocka_unit_test(test_delaunay_100k),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
