/* Per-face fields travel on the vertex split (partition/mb_distributed.h),
 * on any rank count: a polygon mesh (triangles and quadrilaterals) with a
 * float64 per-face field "w" (2 values per face) is distributed, both ways
 * the runner builds the domain:
 *  - from the whole mesh (mb_distributed_create) with given parts, the
 *    vertices scattered over the ranks, each rank keeping its block of rows;
 *  - from the blocks of rows alone (mb_distributed_create_from_slab, the
 *    blocks partitioner, no rank holding the mesh).
 * mb_distributed_pull_fields makes the owned faces (the owner of a face's
 * lowest-global-id vertex owns it). The test checks that every face is
 * owned by exactly one rank, in ascending global id, that the owned
 * faces' lowest vertex is an owned row and every corner of a triangle is
 * a local row; then, as an op would, it changes "w" and adds a field "c"
 * (1 value) on each owned face from the face's global id and corner ids
 * and the positions of its local corners (triangles), and writes them back
 * (mb_distributed_to_slab). Rank 0 gathers the slabs and compares the
 * fields and positions, bitwise, with the one-rank result computed on the
 * whole mesh. Last, misuse: a face field made before the owned faces
 * exist, and a field one rank adds and the others do not, are MB_ERR_ARG
 * (the second agreed on every rank). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_adjacency.h"
#include "mb_distributed.h"
#include "mb_mesh.h"
#include "mb_testutil.h"

static int g_rank, g_size;
static long g_bad;      /* failed checks on this rank */
static int64_t g_checked;

#define CHECK(cond, ...)                                                                   \
  do {                                                                                     \
    g_checked++;                                                                           \
    if (!(cond)) {                                                                         \
      if (g_bad++ < 10) {                                                                  \
        fprintf(stderr, "rank %d: ", g_rank);                                              \
        fprintf(stderr, __VA_ARGS__);                                                      \
        fprintf(stderr, "\n");                                                             \
      }                                                                                    \
    }                                                                                      \
  } while (0)

#define N 13 /* grid points per side */

/* An n x n noisy grid: cell (i, j) a quadrilateral where (i + 2j) % 3 == 0,
 * else two triangles; face field "w" [nf, 2]. */
static mb_mesh *grid_mesh(void) {
  int64_t nf = 0, nidx = 0;
  for (int j = 0; j < N - 1; j++)
    for (int i = 0; i < N - 1; i++) {
      const int quad = (i + 2 * j) % 3 == 0;
      nf += quad ? 1 : 2;
      nidx += quad ? 4 : 6;
    }
  mb_mesh *m = NULL;
  if (mb_mesh_create("grid", N * N, nf, nidx, &m)) return NULL;
  for (int j = 0; j < N; j++)
    for (int i = 0; i < N; i++) {
      const double h = (double)((i * 7919 + j * 104729) % 1000) / 1000.0;
      double *x = m->xyz + 3 * (j * N + i);
      x[0] = i + 0.3 * (h - 0.5);
      x[1] = j + 0.2 * (0.5 - h);
      x[2] = 0.4 * h - 0.2;
    }
  int64_t f = 0, k = 0;
  m->face_offsets[0] = 0;
  for (int j = 0; j < N - 1; j++)
    for (int i = 0; i < N - 1; i++) {
      const int64_t a = j * N + i;
      if ((i + 2 * j) % 3 == 0) {
        const int64_t q[4] = {a + 1, a + N + 1, a + N, a}; /* the lowest not first */
        for (int c = 0; c < 4; c++) m->face_indices[k++] = q[c];
        m->face_offsets[++f] = k;
      } else {
        const int64_t t[6] = {a + N + 1, a, a + 1, a + N, a, a + N + 1};
        for (int c = 0; c < 3; c++) m->face_indices[k++] = t[c];
        m->face_offsets[++f] = k;
        for (int c = 3; c < 6; c++) m->face_indices[k++] = t[c];
        m->face_offsets[++f] = k;
      }
    }
  double *w = malloc(sizeof *w * 2 * (size_t)nf);
  for (int64_t g = 0; w && g < nf; g++) {
    w[2 * g] = 1.0 / (double)(g + 3);
    w[2 * g + 1] = (double)g * 0.1 - 2.0;
  }
  if (!w || mb_mesh_set_face_field(m, "w", 2, w)) {
    free(w);
    mb_mesh_free(m);
    return NULL;
  }
  free(w);
  return m;
}

/* The op, per face: from the face's global id g, its global corner ids
 * v [n] and their positions xyz(l) (a triangle's: every corner is local),
 * the new w and c. The same arithmetic in the same order on every rank
 * count. */
static void face_op(int64_t g, const int64_t *v, int64_t n, const double *const *pos,
                    double w[2], double *c) {
  double s = 0.0;
  for (int64_t k = 0; k < n; k++) s += (double)v[k] * 0.25;
  if (n == 3)
    for (int k = 0; k < 3; k++) s += pos[k][0] * pos[k][1] - pos[k][2];
  w[0] = w[0] * 3.0 + s;
  w[1] = -w[1];
  *c = s / (double)(g + 1);
}

static int64_t block_first(int64_t n, int r) { return n * r / g_size; }

/* Rows [first, first + n) of the whole array a (width values per row) on
 * rank 0, from every rank's rows (first and n per rank). */
static void gather_rows(const double *mine, int64_t nmine, int width, double *all,
                        const int64_t *firsts, const int64_t *counts) {
  int *rc = malloc(sizeof *rc * (size_t)g_size), *rd = malloc(sizeof *rd * (size_t)g_size);
  for (int r = 0; r < g_size; r++) {
    rc[r] = (int)(counts[r] * width);
    rd[r] = (int)(firsts[r] * width);
  }
  MPI_Gatherv(mine, (int)(nmine * width), MPI_DOUBLE, all, rc, rd, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  free(rc);
  free(rd);
}

static int face_field(const mb_mesh *m, const char *name) {
  for (int k = 0; k < m->nface_fields; k++)
    if (!strcmp(m->face_fields[k].name, name)) return k;
  return -1;
}

static void run_case(const mb_mesh *whole, int from_slab) {
  const char *how = from_slab ? "from slabs (blocks)" : "from the whole mesh (scattered parts)";
  mb_mesh_slab slab = {0};
  mb_distributed_mesh *dm = NULL;
  const int64_t v0 = block_first(whole->nv, g_rank), v1 = block_first(whole->nv, g_rank + 1);
  const int64_t f0 = block_first(whole->nf, g_rank), f1 = block_first(whole->nf, g_rank + 1);
  CHECK(mb_mesh_slab_cut(whole, v0, v1 - v0, f0, f1 - f0, &slab) == MB_SUCCESS, "slab cut: %s",
        mb_error_message());
  mb_error e;
  if (from_slab) {
    e = mb_distributed_create_from_slab(MPI_COMM_WORLD, &slab, 1, 1, &dm);
  } else {
    mb_adjacency *adj = NULL;
    int32_t *part = malloc(sizeof *part * (size_t)whole->nv);
    for (int64_t v = 0; v < whole->nv; v++) part[v] = (int32_t)((v * 7 + v / N) % g_size);
    CHECK(mb_adjacency_build(whole, &adj) == MB_SUCCESS, "adjacency");
    e = mb_distributed_create(MPI_COMM_WORLD, adj, whole->xyz, part, 1, &dm);
    mb_adjacency_free(adj);
    free(part);
  }
  CHECK(e == MB_SUCCESS, "%s: create: %s", how, mb_error_message());
  if (e) exit(1);
  double *early = NULL;
  CHECK(mb_distributed_add_face_field(dm, "early", 1, &early) == MB_ERR_ARG,
        "a face field before the owned faces exist is not MB_ERR_ARG");
  e = mb_distributed_pull_fields(dm, &slab);
  CHECK(e == MB_SUCCESS, "%s: pull: %s", how, mb_error_message());
  if (e) exit(1);

  /* ownership: each face once, ascending, its lowest vertex owned here */
  int64_t total = 0;
  MPI_Allreduce(&dm->nfaces, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  CHECK(total == whole->nf, "%s: %lld faces owned in all, the mesh has %lld", how,
        (long long)total, (long long)whole->nf);
  char *seen = calloc((size_t)whole->nf, 1), *all_seen = calloc((size_t)whole->nf, 1);
  for (int64_t f = 0; f < dm->nfaces; f++) {
    const int64_t g = dm->face_global[f], a = dm->face_offsets[f], n = dm->face_offsets[f + 1] - a;
    CHECK(f == 0 || dm->face_global[f - 1] < g, "%s: owned faces not ascending at %lld", how,
          (long long)f);
    CHECK(g >= 0 && g < whole->nf, "%s: face id %lld", how, (long long)g);
    if (g < 0 || g >= whole->nf) continue;
    seen[g] = 1;
    const int64_t *v = whole->face_indices + whole->face_offsets[g];
    CHECK(n == whole->face_offsets[g + 1] - whole->face_offsets[g] &&
              !memcmp(v, dm->face_corners + a, sizeof *v * (size_t)n),
          "%s: face %lld has other corners", how, (long long)g);
    int64_t lo = 0;
    for (int64_t k = 1; k < n; k++)
      if (dm->face_corners[a + k] < dm->face_corners[a + lo]) lo = k;
    const int64_t l = dm->face_vertices[a + lo];
    CHECK(l >= 0 && l < dm->domain->nowned && dm->domain->global[l] == dm->face_corners[a + lo],
          "%s: face %lld's lowest vertex is not an owned row here", how, (long long)g);
    for (int64_t k = 0; k < n; k++) {
      const int64_t lk = dm->face_vertices[a + k];
      CHECK(lk < 0 || dm->domain->global[lk] == dm->face_corners[a + k],
            "%s: face %lld corner %lld names the wrong row", how, (long long)g, (long long)k);
      CHECK(lk >= 0 || (n > 3 && g_size > 1), "%s: face %lld corner %lld is not local", how,
            (long long)g, (long long)k);
    }
    const int kw = mb_distributed_face_field_index(dm, "w");
    CHECK(kw >= 0 && !memcmp(dm->face_fields[kw].data + 2 * f,
                             whole->face_fields[face_field(whole, "w")].data + 2 * g,
                             2 * sizeof(double)),
          "%s: face %lld: w did not arrive", how, (long long)g);
  }
  MPI_Allreduce(seen, all_seen, (int)whole->nf, MPI_CHAR, MPI_SUM, MPI_COMM_WORLD);
  for (int64_t g = 0; g < whole->nf; g++)
    CHECK(all_seen[g] == 1, "%s: face %lld owned %d times", how, (long long)g, all_seen[g]);
  free(seen);
  free(all_seen);

  /* the op on the owned faces */
  double *c = NULL;
  CHECK(mb_distributed_add_face_field(dm, "c", 1, &c) == MB_SUCCESS, "add c: %s",
        mb_error_message());
  mb_field *w = &dm->face_fields[mb_distributed_face_field_index(dm, "w")];
  for (int64_t f = 0; f < dm->nfaces; f++) {
    const int64_t a = dm->face_offsets[f], n = dm->face_offsets[f + 1] - a;
    const double *pos[4] = {NULL, NULL, NULL, NULL};
    for (int64_t k = 0; k < n && k < 4; k++)
      if (dm->face_vertices[a + k] >= 0) pos[k] = dm->x + 3 * dm->face_vertices[a + k];
    face_op(dm->face_global[f], dm->face_corners + a, n, pos, w->data + 2 * f, c + f);
  }
  e = mb_distributed_to_slab(dm, &slab);
  CHECK(e == MB_SUCCESS, "%s: to_slab: %s", how, mb_error_message());

  /* the one-rank result on rank 0 */
  int64_t firsts_v[64], counts_v[64], firsts_f[64], counts_f[64];
  for (int r = 0; r < g_size && r < 64; r++) {
    firsts_v[r] = block_first(whole->nv, r);
    counts_v[r] = block_first(whole->nv, r + 1) - firsts_v[r];
    firsts_f[r] = block_first(whole->nf, r);
    counts_f[r] = block_first(whole->nf, r + 1) - firsts_f[r];
  }
  const int kw = face_field(slab.rows, "w"), kc = face_field(slab.rows, "c");
  CHECK(kw >= 0 && kc >= 0 && slab.rows->face_fields[kc].ncomp == 1,
        "%s: the slab lacks w or c after the write-back", how);
  if (kw < 0 || kc < 0) exit(1);
  double *got_w = malloc(sizeof(double) * 2 * (size_t)whole->nf);
  double *got_c = malloc(sizeof(double) * (size_t)whole->nf);
  double *got_x = malloc(sizeof(double) * 3 * (size_t)whole->nv);
  gather_rows(slab.rows->face_fields[kw].data, slab.rows->nf, 2, got_w, firsts_f, counts_f);
  gather_rows(slab.rows->face_fields[kc].data, slab.rows->nf, 1, got_c, firsts_f, counts_f);
  gather_rows(slab.rows->xyz, slab.rows->nv, 3, got_x, firsts_v, counts_v);
  if (g_rank == 0) {
    const double *w0 = whole->face_fields[face_field(whole, "w")].data;
    int64_t differ = 0;
    for (int64_t g = 0; g < whole->nf; g++) {
      const int64_t a = whole->face_offsets[g], n = whole->face_offsets[g + 1] - a;
      const double *pos[4] = {NULL, NULL, NULL, NULL};
      for (int64_t k = 0; k < n && k < 4; k++) pos[k] = whole->xyz + 3 * whole->face_indices[a + k];
      double want_w[2] = {w0[2 * g], w0[2 * g + 1]}, want_c;
      face_op(g, whole->face_indices + a, n, pos, want_w, &want_c);
      const int same = !memcmp(want_w, got_w + 2 * g, sizeof want_w) &&
                       !memcmp(&want_c, got_c + g, sizeof want_c);
      differ += !same;
      CHECK(same, "%s: face %lld: w (%.17g, %.17g) c %.17g, one rank gives (%.17g, %.17g) %.17g",
            how, (long long)g, got_w[2 * g], got_w[2 * g + 1], got_c[g], want_w[0], want_w[1],
            want_c);
    }
    CHECK(!memcmp(got_x, whole->xyz, sizeof(double) * 3 * (size_t)whole->nv),
          "%s: positions changed", how);
    printf("%s on %d ranks: %lld faces, %lld differ from one rank (bitwise)\n", how, g_size,
           (long long)whole->nf, (long long)differ);
  }
  free(got_w);
  free(got_c);
  free(got_x);

  /* a face field on one rank only: the ranks would not read what is sent */
  if (g_size > 1) {
    double *extra = NULL;
    if (g_rank == 0)
      CHECK(mb_distributed_add_face_field(dm, "extra", 1, &extra) == MB_SUCCESS, "add extra");
    e = mb_distributed_to_slab(dm, &slab);
    CHECK(e == MB_ERR_ARG, "%s: a face field on rank 0 only: to_slab gives %d, not MB_ERR_ARG",
          how, (int)e);
  }
  mb_distributed_free(dm);
  mb_mesh_free(slab.rows);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  if (g_size > 64) {
    if (g_rank == 0) printf("skipped: the test gathers at most 64 ranks\n");
    MPI_Finalize();
    return MB_TEST_SKIP;
  }
  mb_mesh *whole = grid_mesh();
  CHECK(whole != NULL, "cannot make the test mesh: %s", mb_error_message());
  if (!whole) MPI_Abort(MPI_COMM_WORLD, 1);
  run_case(whole, 0);
  run_case(whole, 1);
  mb_mesh_free(whole);
  long bad = 0;
  int64_t checked = 0;
  MPI_Allreduce(&g_bad, &bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Reduce(&g_checked, &checked, 1, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  if (g_rank == 0)
    printf("face fields on %d ranks: %lld checks, %ld failed\n", g_size, (long long)checked, bad);
  MPI_Finalize();
  return bad ? 1 : 0;
}
