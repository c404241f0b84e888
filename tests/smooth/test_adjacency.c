/* meshbatch test: the vertex adjacency (src/mb_adjacency.h) against a
 * brute-force reference on meshes that reach every path of the builder: a
 * fan of 40 triangles round a hub (a bucket of 80 entries: the merge sort),
 * a repeated face (an edge in three faces: neither boundary nor counted
 * twice), a quadrilateral (no opposite vertices), and the build without
 * opposite vertices (MB_ADJ_OPPOSITE unset). */
#include "mb_testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_adjacency.h"

/* A fan: hub 0, rim 1..n (open: n triangles (0, i, i + 1) for i < n) and,
 * when `repeat`, triangle 0 once more at the end. */
static mb_mesh *fan(int n, int repeat) {
  mb_mesh *m = NULL;
  const int nf = n - 1 + repeat;
  assert_int_equal(mb_mesh_create("fan", n + 1, nf, 3 * nf, &m), MB_SUCCESS);
  for (int f = 0; f < nf; f++) {
    const int i = f < n - 1 ? f + 1 : 1;
    m->face_offsets[f + 1] = 3 * (f + 1);
    m->face_indices[3 * f] = 0;
    m->face_indices[3 * f + 1] = i;
    m->face_indices[3 * f + 2] = i + 1;
  }
  for (int v = 0; v <= n; v++) m->xyz[3 * v] = v;
  return m;
}

/* Every row ascending and distinct, equal to the brute-force neighbour
 * set; opposite vertices of edge (i, j) = the third vertices of the faces
 * holding it, in face order; boundary edges = edges in exactly one face. */
static void check(const mb_mesh *m, const mb_adjacency *a, int with_opp) {
  const int64_t nv = m->nv;
  for (int64_t i = 0; i < nv; i++) {
    int64_t nb = 0;
    for (int64_t k = a->row[i]; k < a->row[i + 1]; k++) {
      const int64_t j = a->col[k];
      if (k > a->row[i]) assert_true(a->col[k - 1] < j);
      int64_t faces = 0, q = with_opp ? a->opp_row[k] : 0;
      for (int64_t f = 0; f < m->nf; f++) {
        const int64_t s = m->face_offsets[f], n = m->face_offsets[f + 1] - s;
        for (int64_t t = 0; t < n; t++) {
          const int64_t u = m->face_indices[s + t], w = m->face_indices[s + (t + 1) % n];
          if (!((u == i && w == j) || (u == j && w == i))) continue;
          faces++;
          if (with_opp) assert_int_equal(a->opp[q++], m->face_indices[s + (t + 2) % 3]);
        }
      }
      assert_true(faces >= 1);
      if (with_opp) assert_int_equal(q, a->opp_row[k + 1]);
      if (faces == 1) {
        int found = 0;
        for (int64_t p = a->brow[i]; p < a->brow[i + 1]; p++) found |= a->bcol[p] == j;
        assert_true(found);
        nb++;
      }
    }
    assert_int_equal(a->brow[i + 1] - a->brow[i], nb);
    assert_int_equal(a->on_boundary[i], nb > 0);
  }
}

static void test_fan_hub(void **state) {
  (void)state;
  for (int repeat = 0; repeat < 2; repeat++) {
    mb_mesh *m = fan(41, repeat);
    mb_adjacency *a = NULL, *b = NULL;
    assert_int_equal(mb_adjacency_build(m, &a), MB_SUCCESS);
    assert_int_equal(a->row[1] - a->row[0], 41); /* the hub sees every rim vertex */
    assert_non_null(a->opp);
    check(m, a, 1);
    assert_int_equal(mb_adjacency_build_opts(m, 0, &b), MB_SUCCESS);
    assert_null(b->opp);
    assert_null(b->opp_row);
    assert_int_equal(b->nnz, a->nnz);
    assert_memory_equal(b->col, a->col, sizeof *a->col * (size_t)a->nnz);
    assert_memory_equal(b->bcol, a->bcol, sizeof *a->bcol * (size_t)a->brow[m->nv]);
    check(m, b, 0);
    mb_adjacency_free(a);
    mb_adjacency_free(b);
    mb_mesh_free(m);
  }
  printf("adjacency: a hub of 41 neighbours (80 entries), with and without a repeated face, "
         "with and without opposite vertices, equal to the brute-force reference\n");
}

static void test_quad(void **state) {
  (void)state;
  mb_mesh *m = NULL;
  assert_int_equal(mb_mesh_create("quad", 5, 2, 7, &m), MB_SUCCESS);
  const int64_t idx[7] = {0, 1, 2, 3, 2, 1, 4};
  memcpy(m->face_indices, idx, sizeof idx);
  m->face_offsets[1] = 4;
  m->face_offsets[2] = 7;
  mb_adjacency *a = NULL;
  assert_int_equal(mb_adjacency_build(m, &a), MB_SUCCESS);
  assert_null(a->opp); /* a polygon mesh has no opposite vertices */
  check(m, a, 0);
  mb_adjacency_free(a);
  mb_mesh_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_fan_hub), cmocka_unit_test(test_quad)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
