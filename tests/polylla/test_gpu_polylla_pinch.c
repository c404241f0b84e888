/* Polylla's pinch repair on the GPU: mb_polylla_cuda against mb_polylla_cpu,
 * bit for bit (vertices, polygons, vertex_count, attributes with
 * pinches_split, and the heads), on the pinched inputs of
 * test_polylla_pinch.c: the hand-built ring (a keyhole), Delaunay
 * triangulations of 300 clustered points (seeds 1..120, five pinched) and
 * the Delaunay triangulation of 100 k uniform
 * points of issue 28 (seed 1), whose outputs must also be simple (the
 * checker of polylla_check.h). Each case runs the CUDA backend a second
 * time as a job does (mb_polylla_opts.share_xyz: the output must hold the
 * input's own positions array, pinched or not, and the same bits), and
 * the bench's page-locked path once (its polygons checked where nothing
 * is pinched, the cuts reported where some are). Exits 77 (skipped) without a CUDA device or
 * the CUDA backend; run it on a GPU machine with
 * `ctest -L gpu -R polylla_pinch`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_meshes.h"
#include "mb_polylla_cuda.h"
#include "mb_generate.h"
#include "mb_testutil.h"
#include "polylla_check.h"

/* Both backends on tri with heads; assert equal bits; return the cuts. */
static long long same_on_both(const mb_mesh *tri) {
  int64_t *hc = NULL, *hg = NULL;
  mb_polylla_opts oc = {.ties = MB_POLYLLA_TIES_KEY, .heads = &hc};
  mb_polylla_opts og = {.ties = MB_POLYLLA_TIES_KEY, .heads = &hg};
  mb_mesh *pc = NULL, *pg = NULL;
  mb_polylla_stats sc, sg;
  mb_error e = mb_polylla_cpu(tri, &oc, &pc, &sc);
  if (e) printf("cpu: %s\n", mb_error_message());
  assert_int_equal(e, MB_SUCCESS);
  e = mb_polylla_cuda(tri, &og, &pg, &sg);
  if (e) printf("cuda: %s\n", mb_error_message());
  assert_int_equal(e, MB_SUCCESS);
  polylla_assert_valid(tri, pc);
  mb_test_assert_same_mesh(pc, pg);
  assert_int_equal(pc->nf, pg->nf);
  assert_memory_equal(hc, hg, sizeof *hc * (size_t)pc->nf);
  assert_int_equal(sc.pinches_split, sg.pinches_split);
  const long long n = sc.pinches_split;
  /* the bench's page-locked path (no host repair): its polygons compared
   * where nothing is pinched, the cuts reported where some are */
  mb_polylla_stats sp;
  e = mb_polylla_cuda_bench_pinned(tri, 0, 1, &sp);
  if (e) printf("cuda, page-locked path: %s\n", mb_error_message());
  assert_int_equal(e, MB_SUCCESS);
  assert_int_equal(sp.pinches_split, n);
  /* the job's way: the output takes the input's positions */
  mb_mesh *t2 = NULL, *ps = NULL;
  assert_int_equal(mb_mesh_duplicate(tri, &t2), MB_SUCCESS);
  mb_polylla_opts os = {.ties = MB_POLYLLA_TIES_KEY, .share_xyz = 1};
  e = mb_polylla_cuda(t2, &os, &ps, NULL);
  if (e) printf("cuda, share_xyz: %s\n", mb_error_message());
  assert_int_equal(e, MB_SUCCESS);
  assert_ptr_equal(ps->xyz, t2->xyz);
  t2->xyz = NULL;
  mb_mesh_free(t2);
  mb_test_assert_same_mesh(pc, ps);
  mb_mesh_free(ps);
  mb_mesh_free(pc);
  mb_mesh_free(pg);
  free(hc);
  free(hg);
  return n;
}

static void test_ring(void **state) {
  (void)state;
  mb_mesh *m = polylla_pinch_ring();
  assert_int_equal(same_on_both(m), 1);
  printf("[ gpu ] ring (keyhole): CUDA == CPU bitwise\n");
  mb_mesh_free(m);
}

static void test_generated(void **state) {
  (void)state;
  long long pinched = 0;
  for (uint64_t seed = 1; seed <= 120; seed++) {
    mb_mesh *m = NULL;
    assert_int_equal(mb_generate_delaunay(300, seed, 1, &m), MB_SUCCESS);
    pinched += same_on_both(m) > 0;
    mb_mesh_free(m);
  }
  printf("[ gpu ] 120 Delaunay triangulations of 300 clustered points, %lld pinched: CUDA == "
         "CPU bitwise\n", pinched);
  assert_true(pinched >= 4);
}

static void test_delaunay_100k(void **state) {
  (void)state;
  mb_mesh *m = NULL;
  assert_int_equal(mb_generate_delaunay(100000, 1, 0, &m), MB_SUCCESS);
  const long long n = same_on_both(m);
  printf("[ gpu ] delaunay 100k: %lld pinches split, CUDA == CPU bitwise\n", n);
  assert_true(n >= 1);
  mb_mesh_free(m);
}

int main(void) {
  const int skip = mb_gpu_test_begin("gpu_polylla_pinch", NULL, 0);
  if (skip) return skip;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ring),
      cmocka_unit_test(test_generated),
      cmocka_unit_test(test_delaunay_100k),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
