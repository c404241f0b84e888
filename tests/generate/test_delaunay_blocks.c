/* mb_generate_delaunay's vertex numbering seen through --partitioner
 * blocks: the face rows (sorted by smallest vertex) and the vertex rows
 * split evenly into B blocks, as a partitioned run on B ranks reads them.
 * The test asserts, for delaunay:200000 (uniform and clustered, seed 1)
 * in 4 blocks, that each block of triangles is spatially compact (few
 * edges cut between blocks) and references few vertices outside its
 * vertex rows (check_blocks says what is bounded and why).
 *
 *   generate_delaunay_blocks --measure N [B] [SEED] [clustered]
 *
 * prints the figures for one mesh instead (not a test): per block the
 * span of vertex ids its triangles reference (max - min) against its
 * vertex rows, the referenced vertices outside its vertex rows (ghosts),
 * and the edges cut between each pair of blocks. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mb_generate.h"
#include "mb_testutil.h"

#define MAXB 64

typedef struct blocks {
  int nb;
  int64_t span[MAXB], inner_span[MAXB], vrows[MAXB], ghosts[MAXB];
  int64_t cut[MAXB][MAXB]; /* cut[a][b], a < b: edges between blocks a and b */
  int64_t cut_total;
} blocks;

/* The figures of mesh m (triangles) split into nb blocks of face rows and
 * vertex rows; returns 0, or -1 when out of memory. */
static int measure(const mb_mesh *m, int nb, blocks *o) {
  const int64_t nv = m->nv, nf = m->nf;
  const int64_t *t = m->face_indices;
  memset(o, 0, sizeof *o);
  o->nb = nb;
  /* half-edges (a -> b) of triangle f in CSR rows of a: (b, f) */
  int64_t *row = calloc((size_t)nv + 1, sizeof *row), *col = malloc(sizeof *col * 3 * (size_t)nf);
  int64_t *tri = malloc(sizeof *tri * 3 * (size_t)nf), *fill = malloc(sizeof *fill * (size_t)nv);
  int32_t *stamp = malloc(sizeof *stamp * (size_t)nv), *part = malloc(sizeof *part * (size_t)nf);
  if (!row || !col || !tri || !fill || !stamp || !part) {
    free(row), free(col), free(tri), free(fill), free(stamp), free(part);
    return -1;
  }
  for (int64_t k = 0; k < 3 * nf; k++) row[t[k] + 1]++;
  for (int64_t v = 0; v < nv; v++) row[v + 1] += row[v];
  memcpy(fill, row, sizeof *fill * (size_t)nv);
  for (int64_t f = 0; f < nf; f++)
    for (int j = 0; j < 3; j++) {
      int64_t a = t[3 * f + j], b = t[3 * f + (j + 1) % 3], s = fill[a]++;
      col[s] = b;
      tri[s] = f;
    }
  /* hull[v]: v is on the boundary (a half-edge from it has no twin) */
  uint8_t *hull = calloc((size_t)nv, 1);
  if (!hull) {
    free(row), free(col), free(tri), free(fill), free(stamp), free(part);
    return -1;
  }
  for (int64_t a = 0; a < nv; a++)
    for (int64_t s = row[a]; s < row[a + 1]; s++) {
      int64_t b = col[s], twin = 0;
      for (int64_t r = row[b]; r < row[b + 1]; r++) twin |= col[r] == a;
      if (!twin) hull[a] = hull[b] = 1;
    }
  for (int64_t v = 0; v < nv; v++) stamp[v] = -1;
  for (int b = 0; b < nb; b++) {
    const int64_t f0 = nf * b / nb, f1 = nf * (b + 1) / nb;
    const int64_t v0 = nv * b / nb, v1 = nv * (b + 1) / nb;
    int64_t lo = nv, hi = -1, ilo = nv, ihi = -1;
    o->vrows[b] = v1 - v0;
    for (int64_t f = f0; f < f1; f++) part[f] = b;
    for (int64_t k = 3 * f0; k < 3 * f1; k++) {
      int64_t v = t[k];
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
      if ((v < v0 || v >= v1) && stamp[v] != b) o->ghosts[b]++;
      stamp[v] = b;
    }
    o->span[b] = f1 > f0 ? hi - lo : 0;
    for (int64_t f = f0; f < f1; f++) {
      const int64_t *v = t + 3 * f;
      if (hull[v[0]] || hull[v[1]] || hull[v[2]]) continue;
      for (int j = 0; j < 3; j++) {
        ilo = v[j] < ilo ? v[j] : ilo;
        ihi = v[j] > ihi ? v[j] : ihi;
      }
    }
    o->inner_span[b] = ihi >= ilo ? ihi - ilo : 0;
  }
  /* each interior edge once, from its half-edge a -> b with a < b */
  for (int64_t a = 0; a < nv; a++)
    for (int64_t s = row[a]; s < row[a + 1]; s++) {
      int64_t b = col[s], twin = -1;
      if (b < a) continue;
      for (int64_t r = row[b]; r < row[b + 1]; r++)
        if (col[r] == a) twin = tri[r];
      if (twin < 0) continue; /* a boundary edge */
      int pa = part[tri[s]], pb = part[twin];
      if (pa != pb) {
        o->cut[pa < pb ? pa : pb][pa < pb ? pb : pa]++;
        o->cut_total++;
      }
    }
  free(row), free(col), free(tri), free(fill), free(stamp), free(part), free(hull);
  return 0;
}

static void print_blocks(const mb_mesh *m, const blocks *o) {
  printf("%s: %lld vertices, %lld triangles, %d blocks (sqrt(nt) = %.0f, sqrt(nv) = %.0f)\n",
         m->name, (long long)m->nv, (long long)m->nf, o->nb, sqrt((double)m->nf),
         sqrt((double)m->nv));
  printf("block  vertex rows  span (max - min id)  span / rows  off the hull  / rows  ghosts\n");
  for (int b = 0; b < o->nb; b++)
    printf("%5d  %11lld  %19lld  %11.3f  %12lld  %6.3f  %6lld\n", b, (long long)o->vrows[b],
           (long long)o->span[b], (double)o->span[b] / (double)o->vrows[b],
           (long long)o->inner_span[b], (double)o->inner_span[b] / (double)o->vrows[b],
           (long long)o->ghosts[b]);
  printf("edges cut between blocks: %lld (%.2f sqrt(nt) per block boundary)\n",
         (long long)o->cut_total, (double)o->cut_total / (o->nb - 1) / sqrt((double)m->nf));
  for (int a = 0; a < o->nb; a++)
    for (int b = a + 1; b < o->nb; b++)
      if (o->cut[a][b]) printf("  blocks %d-%d: %lld\n", a, b, (long long)o->cut[a][b]);
}

/* 4 blocks of delaunay:200000 (seed 1): at most 4 sqrt(nt) edges cut per
 * block boundary and at most 4 sqrt(nv) ghosts per block (the generation
 * order, random in space, cuts about half the edges and gives every block
 * a third of the vertices as ghosts), consecutive vertices 2 / sqrt(nv)
 * apart on average (random: about 0.52), and the last block's span at most
 * 1.5 times its vertex rows plus 4 sqrt(nv). The other blocks' spans are
 * printed, not bounded: along a Hilbert curve the first quadrant touches
 * the last, and the slivers along the square's sides (its convex hull has
 * a few long edges) join vertices far apart on any curve. */
static void check_blocks(int clustered) {
  mb_mesh *m = NULL;
  assert_int_equal(mb_generate_delaunay(200000, 1, clustered, &m), MB_SUCCESS);
  blocks o;
  assert_int_equal(measure(m, 4, &o), 0);
  print_blocks(m, &o);
  const double st = sqrt((double)m->nf), sv = sqrt((double)m->nv);
  assert_true((double)o.cut_total <= 3 * 4 * st);
  for (int b = 0; b < 4; b++) assert_true((double)o.ghosts[b] <= 4 * sv);
  assert_true((double)o.span[3] <= 1.5 * (double)o.vrows[3] + 4 * sv);
  double step = 0;
  for (int64_t v = 1; v < m->nv; v++)
    step += hypot(m->xyz[3 * v] - m->xyz[3 * v - 3], m->xyz[3 * v + 1] - m->xyz[3 * v - 2]);
  step /= (double)(m->nv - 1);
  printf("mean distance between consecutive vertices: %.3g (%.2f / sqrt(nv))\n", step, step * sv);
  assert_true(step <= 2 / sv);
  mb_mesh_free(m);
}

static void test_uniform(void **state) {
  (void)state;
  check_blocks(0);
}

static void test_clustered(void **state) {
  (void)state;
  check_blocks(1);
}

int main(int argc, char **argv) {
  if (argc >= 3 && !strcmp(argv[1], "--measure")) {
    int64_t n = atoll(argv[2]);
    int nb = argc >= 4 ? atoi(argv[3]) : 4;
    uint64_t seed = argc >= 5 ? strtoull(argv[4], NULL, 10) : 1;
    int clustered = argc >= 6 && !strcmp(argv[5], "clustered");
    if (nb < 2 || nb > MAXB) return fprintf(stderr, "blocks must be in [2, %d]\n", MAXB), 2;
    struct timespec t0, t1, c0, c1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    mb_mesh *m = NULL;
    if (mb_generate_delaunay(n, seed, clustered, &m))
      return fprintf(stderr, "%s\n", mb_error_message()), 1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    printf("mb_generate_delaunay(%lld, seed %llu, %s): %.2f s wall, %.2f s CPU\n", (long long)n,
           (unsigned long long)seed, clustered ? "clustered" : "uniform",
           (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec),
           (double)(c1.tv_sec - c0.tv_sec) + 1e-9 * (double)(c1.tv_nsec - c0.tv_nsec));
    blocks o;
    if (measure(m, nb, &o)) return fprintf(stderr, "out of memory\n"), 1;
    print_blocks(m, &o);
    mb_mesh_free(m);
    return 0;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_uniform),
      cmocka_unit_test(test_clustered),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
