/* meshbatch test: the vertex adjacency (src/core/mb_adjacency.h) against a
 * brute-force reference on meshes that reach every path of the builder: a
 * fan of 40 triangles round a hub (a bucket of 80 entries: the merge sort),
 * a repeated face (an edge in three faces: neither boundary nor counted
 * twice), a quadrilateral (no opposite vertices), and the build without
 * opposite vertices (MB_ADJ_OPPOSITE unset). Also the locality orders: the
 * Hilbert curve against J. Skilling's algorithm, the space-filling-curve
 * order (a permutation, sorted by curve index with ties in vertex order,
 * the same for every thread count) and the renumbered copies. */
#include "mb_testutil.h"

#include <math.h>
#include <omp.h>
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

/* The reference: J. Skilling, "Programming the Hilbert curve", AIP Conf.
 * Proc. 707 (2004): axes to transposed index, then the transpose's bits
 * interleaved (x's bit highest at every level). */
static uint64_t skilling(uint32_t x, uint32_t y, uint32_t z, int b) {
  uint32_t X[3] = {x, y, z};
  const uint32_t M = 1u << (b - 1);
  for (uint32_t Q = M; Q > 1; Q >>= 1) {
    const uint32_t P = Q - 1;
    for (int i = 0; i < 3; i++)
      if (X[i] & Q) {
        X[0] ^= P;
      } else {
        const uint32_t t = (X[0] ^ X[i]) & P;
        X[0] ^= t;
        X[i] ^= t;
      }
  }
  X[1] ^= X[0];
  X[2] ^= X[1];
  uint32_t t = 0;
  for (uint32_t Q = M; Q > 1; Q >>= 1)
    if (X[2] & Q) t ^= Q - 1;
  uint64_t h = 0;
  for (int l = b - 1; l >= 0; l--)
    for (int i = 0; i < 3; i++) h = h << 1 | (((X[i] ^ t) >> l) & 1);
  return h;
}

static uint64_t lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return *s >> 11;
}

/* Every cell of grids of 2^1..2^4 per axis: the indices are 0..8^b - 1 once
 * each, consecutive indices are face neighbours, and equal Skilling's; and
 * 20 000 random cells of grids up to 2^21. */
static void test_hilbert_curve(void **state) {
  (void)state;
  for (int b = 1; b <= 4; b++) {
    const uint32_t n = 1u << b;
    const uint64_t cells = (uint64_t)n * n * n;
    uint32_t *at = malloc(sizeof *at * 3 * cells);
    uint8_t *seen = calloc(cells, 1);
    for (uint32_t x = 0; x < n; x++)
      for (uint32_t y = 0; y < n; y++)
        for (uint32_t z = 0; z < n; z++) {
          const uint64_t h = mb_hilbert3(x, y, z, b);
          assert_true(h < cells);
          assert_int_equal(h, skilling(x, y, z, b));
          assert_false(seen[h]);
          seen[h] = 1;
          at[3 * h] = x;
          at[3 * h + 1] = y;
          at[3 * h + 2] = z;
        }
    for (uint64_t h = 1; h < cells; h++) {
      uint32_t d = 0;
      for (int k = 0; k < 3; k++)
        d += at[3 * h + k] > at[3 * h - 3 + k] ? at[3 * h + k] - at[3 * h - 3 + k]
                                               : at[3 * h - 3 + k] - at[3 * h + k];
      assert_int_equal(d, 1);
    }
    free(at);
    free(seen);
  }
  uint64_t s = 7;
  for (int k = 0; k < 20000; k++) {
    const int b = 1 + (int)(lcg(&s) % 21);
    const uint32_t x = (uint32_t)(lcg(&s) >> (53 - b)), y = (uint32_t)(lcg(&s) >> (53 - b)),
                   z = (uint32_t)(lcg(&s) >> (53 - b));
    assert_int_equal(mb_hilbert3(x, y, z, b), skilling(x, y, z, b));
  }
  assert_int_equal(mb_hilbert3(1, 1, 1, 0), 0);
  assert_int_equal(mb_hilbert3(1, 1, 1, 22), 0);
  printf("hilbert: every cell of 2^1..2^4 grids (a face-connected curve, Skilling's indices) "
         "and 20000 random cells up to 2^21\n");
}

/* The cell of v as mb_adjacency_sfc computes it (same operations). */
static uint32_t cell(double v, double lo, double scale, uint32_t cells) {
  const double q = (v - lo) * scale;
  if (!(q >= 0)) return 0;
  return q >= (double)cells ? cells - 1 : (uint32_t)q;
}

static void assert_permutation(const int64_t *perm, int64_t n) {
  uint8_t *seen = calloc((size_t)(n ? n : 1), 1);
  for (int64_t i = 0; i < n; i++) {
    assert_true(perm[i] >= 0 && perm[i] < n);
    assert_false(seen[perm[i]]);
    seen[perm[i]] = 1;
  }
  free(seen);
}

/* 20 000 noisy points (every tenth a copy of the one before, a NaN and two
 * infinities): a permutation, ascending in curve index with equal cells in
 * vertex order, the same for 1, 2, 3, 5 and 8 threads; small cases. */
static void test_sfc_order(void **state) {
  (void)state;
  const int64_t n = 20000;
  double *xyz = malloc(sizeof *xyz * 3 * (size_t)n);
  uint64_t s = 11;
  for (int64_t i = 0; i < n; i++)
    for (int d = 0; d < 3; d++)
      xyz[3 * i + d] = i % 10 == 9 ? xyz[3 * (i - 1) + d]
                                   : (d == 2 ? 0.25 : 1.0) * (double)lcg(&s) * 0x1.0p-53 - 3.0;
  xyz[3 * 7] = NAN;
  xyz[3 * 8 + 1] = INFINITY;
  xyz[3 * 17 + 2] = -INFINITY;
  int64_t *perm = malloc(sizeof *perm * (size_t)n), *other = malloc(sizeof *other * (size_t)n);
  const int threads[] = {1, 2, 3, 5, 8}, saved = omp_get_max_threads();
  for (int t = 0; t < 5; t++) {
    omp_set_num_threads(threads[t]);
    assert_int_equal(mb_adjacency_sfc(n, xyz, t ? other : perm), MB_SUCCESS);
    if (t) assert_memory_equal(other, perm, sizeof *perm * (size_t)n);
  }
  omp_set_num_threads(saved);
  assert_permutation(perm, n);
  /* the keys, recomputed: 15 bits of index, 16 bits per axis */
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (int64_t i = 0; i < n; i++)
    for (int d = 0; d < 3; d++)
      if (isfinite(xyz[3 * i + d])) {
        lo[d] = fmin(lo[d], xyz[3 * i + d]);
        hi[d] = fmax(hi[d], xyz[3 * i + d]);
      }
  const double side = fmax(hi[0] - lo[0], fmax(hi[1] - lo[1], hi[2] - lo[2]));
  const uint32_t cells = 1u << 16;
  const double scale = (double)cells / side;
  uint64_t prev = 0;
  int64_t ties = 0;
  for (int64_t k = 0; k < n; k++) {
    const double *p = xyz + 3 * perm[k];
    const uint64_t h = mb_hilbert3(cell(p[0], lo[0], scale, cells), cell(p[1], lo[1], scale, cells),
                                   cell(p[2], lo[2], scale, cells), 16);
    if (k) assert_true(h > prev || (h == prev && perm[k] > perm[k - 1]));
    ties += k && h == prev;
    prev = h;
  }
  assert_true(ties >= n / 10 - 1); /* the copies follow their originals */
  /* small and degenerate inputs */
  assert_int_equal(mb_adjacency_sfc(0, NULL, NULL), MB_SUCCESS);
  assert_int_equal(mb_adjacency_sfc(1, xyz, perm), MB_SUCCESS);
  assert_int_equal(perm[0], 0);
  assert_int_equal(mb_adjacency_sfc(-1, xyz, perm), MB_ERR_ARG);
  mb_error_clear();
  for (int64_t i = 0; i < 100; i++)
    for (int d = 0; d < 3; d++) xyz[3 * i + d] = 1.5; /* one point: the identity */
  assert_int_equal(mb_adjacency_sfc(100, xyz, perm), MB_SUCCESS);
  for (int64_t i = 0; i < 100; i++) assert_int_equal(perm[i], i);
  free(xyz);
  free(perm);
  free(other);
  printf("sfc order: 20000 points with copies, NaN and infinities sorted by Hilbert index "
         "(%lld ties in vertex order), identical for 1, 2, 3, 5 and 8 threads\n", (long long)ties);
}

/* mb_adjacency_permute(_opts) against the definition, with and without the
 * opposite and boundary arrays, the same for 1 and 3 threads. */
static void test_permute(void **state) {
  (void)state;
  mb_mesh *m = fan(41, 1);
  mb_adjacency *a = NULL;
  assert_int_equal(mb_adjacency_build(m, &a), MB_SUCCESS);
  const int64_t nv = a->nv;
  int64_t *perm = malloc(sizeof *perm * (size_t)nv), *inv = malloc(sizeof *inv * (size_t)nv);
  for (int64_t v = 0; v < nv; v++) perm[v] = v;
  uint64_t s = 3;
  for (int64_t v = nv - 1; v > 0; v--) { /* Fisher-Yates */
    const int64_t j = (int64_t)(lcg(&s) % (uint64_t)(v + 1)), t = perm[v];
    perm[v] = perm[j];
    perm[j] = t;
  }
  for (int64_t v = 0; v < nv; v++) inv[perm[v]] = v;
  mb_adjacency *full = NULL, *part = NULL, *three = NULL;
  assert_int_equal(mb_adjacency_permute(a, perm, &full), MB_SUCCESS);
  assert_int_equal(mb_adjacency_permute_opts(a, perm, 0, &part), MB_SUCCESS);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(3);
  assert_int_equal(mb_adjacency_permute(a, perm, &three), MB_SUCCESS);
  omp_set_num_threads(saved);
  for (int64_t v = 0; v < nv; v++) {
    const int64_t o = perm[v];
    assert_int_equal(full->row[v + 1] - full->row[v], a->row[o + 1] - a->row[o]);
    for (int64_t k = a->row[o], q = full->row[v]; k < a->row[o + 1]; k++, q++) {
      assert_int_equal(full->col[q], inv[a->col[k]]); /* neighbours in the old order */
      assert_int_equal(full->opp_row[q + 1] - full->opp_row[q], a->opp_row[k + 1] - a->opp_row[k]);
      for (int64_t x = a->opp_row[k], y = full->opp_row[q]; x < a->opp_row[k + 1]; x++, y++)
        assert_int_equal(full->opp[y], inv[a->opp[x]]);
    }
    assert_int_equal(full->on_boundary[v], a->on_boundary[o]);
    assert_int_equal(full->brow[v + 1] - full->brow[v], a->brow[o + 1] - a->brow[o]);
    for (int64_t k = a->brow[o], q = full->brow[v]; k < a->brow[o + 1]; k++, q++)
      assert_int_equal(full->bcol[q], inv[a->bcol[k]]);
  }
  assert_memory_equal(part->row, full->row, sizeof *full->row * (size_t)(nv + 1));
  assert_memory_equal(part->col, full->col, sizeof *full->col * (size_t)full->nnz);
  assert_null(part->opp_row);
  assert_null(part->opp);
  assert_null(part->on_boundary);
  assert_null(part->brow);
  assert_null(part->bcol);
  assert_memory_equal(three->row, full->row, sizeof *full->row * (size_t)(nv + 1));
  assert_memory_equal(three->col, full->col, sizeof *full->col * (size_t)full->nnz);
  assert_memory_equal(three->opp_row, full->opp_row,
                      sizeof *full->opp_row * (size_t)(full->nnz + 1));
  assert_memory_equal(three->opp, full->opp, sizeof *full->opp * (size_t)full->opp_row[full->nnz]);
  assert_memory_equal(three->brow, full->brow, sizeof *full->brow * (size_t)(nv + 1));
  mb_adjacency_free(full);
  mb_adjacency_free(part);
  mb_adjacency_free(three);
  free(perm);
  free(inv);
  mb_adjacency_free(a);
  mb_mesh_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_fan_hub), cmocka_unit_test(test_quad),
                                     cmocka_unit_test(test_hilbert_curve),
                                     cmocka_unit_test(test_sfc_order),
                                     cmocka_unit_test(test_permute)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
