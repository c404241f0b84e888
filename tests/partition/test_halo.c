/* The halo engine (partition/mb_halo.h) directly, on any rank count:
 * forward (owner -> ghosts) and reverse (ghosts summed into owners)
 * exchanges of ncomp 1-4 values per row, float32 and float64, on two kinds
 * of plan:
 *  - a small triangle mesh's vertex halo (mb_halo_create), vertices split
 *    in blocks and scattered, faces owned by one rank each;
 *  - a 3D grid's face plan, a box plan (mb_cart_plan, mb_cart_plan_frame,
 *    mb_halo_create_boxes) of widths 1-4, periodic and not, in the host
 *    frame and in a padded frame like the GPU stencils' (rows padded, x
 *    offset), with the faces across uncut axes or on the grid's boundary
 *    left out (MB_CART_PLAN_NO_SELF, MB_CART_PLAN_NO_OUTSIDE); each box
 *    plan's exchanges are also compared bitwise with those of the index
 *    plan of the same rows (mb_halo_create_lists from its expanded lists);
 *    and on slabs the z faces as whole planes (MB_CART_PLAN_WHOLE_PLANES).
 * Built twice: host arrays (MPI), and with MB_HALO_TEST_DEVICE device
 * arrays through mb_cuda_halo (MPI through pinned buffers, NCCL where
 * mb_nccl_create can make a communicator, and IPC where the ranks' GPUs
 * can map each other's memory: each exchange's halo sets it up afresh, and
 * on one rank a periodic plan's wrap goes through its own buffers; IPC
 * again with the array shared, mb_cuda_halo_share_arrays, so that the
 * whole-plane faces go straight into the neighbours' arrays), which exits
 * 77 without a GPU. It stays one file of about 1,000 lines: both builds
 * run the same cases through one exchange helper and one set of expected
 * values, which two files would have to share through a header of their
 * own.
 *
 * The reverse test assembles per-face contributions: each rank adds, for
 * its faces in ascending global face id, area/3 (times c + 1 for component
 * c) into the rows of the face's three vertices, owned or ghost; a reverse
 * exchange sums the ghost rows into their owners. The engine's rule is the
 * owned row's own sum first, then each neighbour's sum in ascending rank,
 * so the one-rank reference adds the same contributions in the same order:
 * for each vertex, the sum over the faces of its owner rank in ascending
 * face id (from 0), then for each other rank in ascending rank the sum over
 * that rank's faces in ascending face id (from 0) added to it. Owned rows
 * must equal it bitwise. A second assembly with contributions that are
 * exact (multiples of 1/4) must equal, bitwise, the plain one-rank assembly
 * in ascending face id whatever the partition. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_cart.h"
#include "mb_config.h"
#include "mb_cuda.h"
#include "mb_halo.h"
#include "mb_nccl.h"
#include "mb_testutil.h"

#ifdef MB_HALO_TEST_DEVICE
#include "mb_cuda_halo.h"
#if MESHBATCH_HAVE_CUDA
#include <cuda_runtime.h>
#endif
#endif

static int g_rank, g_size;
static long g_bad;     /* mismatches on this rank */
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

/* Every rank passes only if none failed (so no rank leaves the others
 * waiting in a collective call). */
static void agree_no_failures(const char *what) {
  long any = 0;
  MPI_Allreduce(&g_bad, &any, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (any) fail_msg("%s: %ld mismatches over the ranks", what, any);
}

/* ------------------------------------------------------------------ exchange */

/* Where the exchange runs: the host engine, or device arrays over MPI, NCCL or IPC. */
typedef struct where {
  int device;
  mb_halo_transport transport;
  mb_nccl *nccl;
  int post_at_end; /* device MPI: mb_cuda_halo_set_post_at_end (the stencil blocks' way) */
  int share;       /* device IPC: the array shared (mb_cuda_halo_share_arrays): direct copies */
} where;

static size_t dt_size(mb_halo_dtype dt) { return dt == MB_HALO_FLOAT32 ? 4 : 8; }

/* One whole exchange of host array x (nrows rows of ncomp values of dt). */
static void exchange(const where *w, mb_halo *plan, mb_halo_dir dir, mb_halo_dtype dt, int ncomp,
                     void *x, int64_t nrows) {
  if (!w->device) {
    if (dir == MB_HALO_FORWARD) {
      assert_int_equal(mb_halo_forward_begin(plan, dt, ncomp, x), MB_SUCCESS);
      assert_int_equal(mb_halo_forward_end(plan, x), MB_SUCCESS);
    } else {
      assert_int_equal(mb_halo_reverse_begin(plan, dt, ncomp, x), MB_SUCCESS);
      assert_int_equal(mb_halo_reverse_end(plan, x), MB_SUCCESS);
    }
    return;
  }
#if defined(MB_HALO_TEST_DEVICE) && MESHBATCH_HAVE_CUDA
  const size_t bytes = dt_size(dt) * (size_t)ncomp * (size_t)(nrows + 1);
  void *d = NULL;
  assert_int_equal(cudaMalloc(&d, bytes), cudaSuccess);
  assert_int_equal(cudaMemcpy(d, x, bytes - dt_size(dt) * (size_t)ncomp, cudaMemcpyHostToDevice),
                   cudaSuccess);
  mb_cuda_halo *h = NULL;
  assert_int_equal(mb_cuda_halo_create(plan, ncomp, (int)dt_size(dt), NULL, &h), MB_SUCCESS);
  mb_cuda_halo_set_post_at_end(h, w->post_at_end);
  if (w->share) assert_int_equal(mb_cuda_halo_share_arrays(h, 1, &d), MB_SUCCESS);
  const mb_error e = mb_cuda_halo_begin(h, dir, d, w->transport, w->nccl);
  if (e == MB_ERR_UNSUPPORTED && w->transport == MB_HALO_IPC) { /* agreed over the ranks */
    if (g_rank == 0) printf("IPC part skipped: %s\n", mb_error_message());
    mb_cuda_halo_free(h);
    cudaFree(d);
    skip();
  }
  if (e) fail_msg("mb_cuda_halo_begin over %s: %s", mb_halo_transport_name(w->transport),
                  mb_error_message());
  assert_int_equal(mb_cuda_halo_end(h, d), MB_SUCCESS);
  assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
  assert_int_equal(cudaMemcpy(x, d, bytes - dt_size(dt) * (size_t)ncomp, cudaMemcpyDeviceToHost),
                   cudaSuccess);
  mb_cuda_halo_free(h);
  cudaFree(d);
#else
  (void)plan; (void)dir; (void)dt; (void)ncomp; (void)x; (void)nrows;
  fail_msg("device exchange in a build without CUDA");
#endif
}

static double get(const void *x, mb_halo_dtype dt, int64_t k) {
  return dt == MB_HALO_FLOAT32 ? (double)((const float *)x)[k] : ((const double *)x)[k];
}

static void set(void *x, mb_halo_dtype dt, int64_t k, double v) {
  if (dt == MB_HALO_FLOAT32) ((float *)x)[k] = (float)v;
  else ((double *)x)[k] = v;
}

/* x[k] += v in dt's precision (v already of dt). */
static void add(void *x, mb_halo_dtype dt, int64_t k, double v) {
  if (dt == MB_HALO_FLOAT32) ((float *)x)[k] = ((float *)x)[k] + (float)v;
  else ((double *)x)[k] = ((double *)x)[k] + v;
}

/* Bitwise equality of two values of dt. */
static int same(double a, double b, mb_halo_dtype dt) {
  if (dt == MB_HALO_FLOAT32) {
    float x = (float)a, y = (float)b;
    return memcmp(&x, &y, sizeof x) == 0;
  }
  return memcmp(&a, &b, sizeof a) == 0;
}

/* ------------------------------------------------------------------ mesh */

enum { NX = 11, NY = 9, NV = NX * NY, NF = 2 * (NX - 1) * (NY - 1) };

typedef struct mesh {
  double xy[NV][2];
  int tri[NF][3];
  int vowner[NV], fowner[NF];
  /* this rank: owned vertices (ascending), then ghosts (ascending) */
  int64_t nowned, nghost, global[NV];
  int local[NV]; /* local row of a global vertex, -1 if absent */
  int ghost_owner[NV];
} mesh;

static unsigned hash(unsigned v) {
  v ^= v >> 16;
  v *= 0x7feb352dU;
  v ^= v >> 15;
  v *= 0x846ca68bU;
  v ^= v >> 16;
  return v;
}

/* A jittered grid of triangles; vertices split in blocks (scatter 0) or
 * scattered by a hash (1); a face owned by the owner of one of its vertices. */
static void mesh_build(mesh *m, int scatter) {
  for (int j = 0; j < NY; j++)
    for (int i = 0; i < NX; i++) {
      int v = j * NX + i;
      m->xy[v][0] = i + 0.3 * ((double)(hash((unsigned)v) % 1000) / 1000.0 - 0.5);
      m->xy[v][1] = j + 0.3 * ((double)(hash((unsigned)v + 7777) % 1000) / 1000.0 - 0.5);
      m->vowner[v] = scatter ? (int)(hash((unsigned)v * 3 + 1) % (unsigned)g_size)
                             : (int)((int64_t)v * g_size / NV);
    }
  int f = 0;
  for (int j = 0; j + 1 < NY; j++)
    for (int i = 0; i + 1 < NX; i++) {
      int a = j * NX + i, b = a + 1, c = a + NX + 1, d = a + NX;
      m->tri[f][0] = a, m->tri[f][1] = b, m->tri[f][2] = c, f++;
      m->tri[f][0] = a, m->tri[f][1] = c, m->tri[f][2] = d, f++;
    }
  for (f = 0; f < NF; f++) m->fowner[f] = m->vowner[m->tri[f][f % 3]];
  int need[NV] = {0};
  for (f = 0; f < NF; f++)
    if (m->fowner[f] == g_rank)
      for (int k = 0; k < 3; k++) need[m->tri[f][k]] = 1;
  m->nowned = m->nghost = 0;
  for (int v = 0; v < NV; v++) {
    m->local[v] = -1;
    if (m->vowner[v] == g_rank) m->global[m->nowned++] = v;
  }
  for (int v = 0; v < NV; v++)
    if (m->vowner[v] != g_rank && need[v]) {
      m->ghost_owner[m->nghost] = m->vowner[v];
      m->global[m->nowned + m->nghost++] = v;
    }
  for (int64_t r = 0; r < m->nowned + m->nghost; r++) m->local[m->global[r]] = (int)r;
}

static mb_halo *mesh_plan(const mesh *m) {
  mb_halo *h = NULL;
  assert_int_equal(mb_halo_create(MPI_COMM_WORLD, m->nowned, m->global, m->nghost,
                                  m->global + m->nowned, m->ghost_owner, 1, &h),
                   MB_SUCCESS);
  return h;
}

static double value_of(int64_t g, int c) { return (double)(g * 4 + c) + 0.25; }

/* The contribution of face f to component c of each of its vertices, in dt. */
static double contribution(const mesh *m, int f, int c, mb_halo_dtype dt, int exact) {
  if (exact) return 0.25 * (double)((f % 7) + 1 + c);
  const double *p = m->xy[m->tri[f][0]], *q = m->xy[m->tri[f][1]], *r = m->xy[m->tri[f][2]];
  double area = 0.5 * fabs((q[0] - p[0]) * (r[1] - p[1]) - (r[0] - p[0]) * (q[1] - p[1]));
  double v = area / 3.0 * (double)(c + 1);
  return dt == MB_HALO_FLOAT32 ? (double)(float)v : v;
}

static void mesh_forward(const where *w, const mesh *m, mb_halo *h, mb_halo_dtype dt, int nc) {
  const int64_t nrows = m->nowned + m->nghost;
  void *x = calloc((size_t)(nrows + 1) * (size_t)nc, dt_size(dt));
  assert_non_null(x);
  for (int64_t r = 0; r < nrows; r++)
    for (int c = 0; c < nc; c++)
      set(x, dt, r * nc + c, r < m->nowned ? value_of(m->global[r], c) : -1.0);
  exchange(w, h, MB_HALO_FORWARD, dt, nc, x, nrows);
  for (int64_t r = 0; r < nrows; r++)
    for (int c = 0; c < nc; c++) {
      double want = value_of(m->global[r], c), got = get(x, dt, r * nc + c);
      CHECK(same(got, want, dt), "mesh forward (dt %d, ncomp %d): vertex %lld comp %d holds %g, want %g",
            (int)dt, nc, (long long)m->global[r], c, got, want);
    }
  free(x);
}

/* Reverse: assemble, sum, compare with the reference of the rule above. */
static void mesh_reverse(const where *w, const mesh *m, mb_halo *h, mb_halo_dtype dt, int nc,
                         int exact) {
  const int64_t nrows = m->nowned + m->nghost;
  void *x = calloc((size_t)(nrows + 1) * (size_t)nc, dt_size(dt));
  void *before = calloc((size_t)(nrows + 1) * (size_t)nc, dt_size(dt));
  assert_true(x && before);
  for (int f = 0; f < NF; f++)
    if (m->fowner[f] == g_rank)
      for (int k = 0; k < 3; k++)
        for (int c = 0; c < nc; c++)
          add(x, dt, (int64_t)m->local[m->tri[f][k]] * nc + c, contribution(m, f, c, dt, exact));
  memcpy(before, x, dt_size(dt) * (size_t)(nrows * nc));
  exchange(w, h, MB_HALO_REVERSE, dt, nc, x, nrows);
  for (int64_t r = 0; r < nrows; r++) {
    const int v = (int)m->global[r];
    for (int c = 0; c < nc; c++) {
      double got = get(x, dt, r * nc + c), want;
      if (r >= m->nowned) { /* ghosts unchanged */
        want = get(before, dt, r * nc + c);
        CHECK(same(got, want, dt), "mesh reverse changed ghost %d comp %d", v, c);
        continue;
      }
      /* the reference: one partial sum per rank, in ascending face id */
      double part[64] = {0};
      int has[64] = {0};
      double plain = 0;
      assert_true(g_size <= 64);
      for (int f = 0; f < NF; f++)
        for (int k = 0; k < 3; k++)
          if (m->tri[f][k] == v) {
            double cf = contribution(m, f, c, dt, exact);
            int o = m->fowner[f];
            part[o] = dt == MB_HALO_FLOAT32 ? (double)((float)part[o] + (float)cf) : part[o] + cf;
            has[o] = 1;
            plain = dt == MB_HALO_FLOAT32 ? (double)((float)plain + (float)cf) : plain + cf;
          }
      want = part[g_rank];
      for (int o = 0; o < g_size; o++)
        if (o != g_rank && has[o])
          want = dt == MB_HALO_FLOAT32 ? (double)((float)want + (float)part[o]) : want + part[o];
      CHECK(same(got, want, dt),
            "mesh reverse (dt %d, ncomp %d): vertex %d comp %d sums to %.17g, the rule gives %.17g",
            (int)dt, nc, v, c, got, want);
      if (exact || g_size == 1)
        CHECK(same(got, plain, dt),
              "mesh reverse (dt %d, ncomp %d, exact %d): vertex %d comp %d sums to %.17g, one rank "
              "in face order %.17g",
              (int)dt, nc, exact, v, c, got, plain);
    }
  }
  free(x);
  free(before);
}

static void mesh_cases(const where *w) {
  for (int scatter = 0; scatter < 2; scatter++) {
    mesh *m = calloc(1, sizeof *m);
    assert_non_null(m);
    mesh_build(m, scatter);
    mb_halo *h = mesh_plan(m);
    for (int dti = 0; dti < 2; dti++)
      for (int nc = 1; nc <= 4; nc++) {
        const mb_halo_dtype dt = dti ? MB_HALO_FLOAT32 : MB_HALO_FLOAT64;
        mesh_forward(w, m, h, dt, nc);
        mesh_reverse(w, m, h, dt, nc, 0);
        mesh_reverse(w, m, h, dt, nc, 1);
      }
    mb_halo_free(h);
    free(m);
  }
  agree_no_failures("mesh vertex halo");
}

/* ------------------------------------------------------------------ grid */

static int64_t wrap(int64_t v, int64_t n) { return ((v % n) + n) % n; }

static double grid_value(const int64_t n[3], const int64_t g[3], int c) {
  return (double)(((g[0] * n[1] + g[1]) * n[2] + g[2]) * 4 + c);
}

/* A block's geometry, from the plan's communicator (any rank's). */
typedef struct blockgeo {
  int coords[3];
  int64_t lo[3], nloc[3];
} blockgeo;

static blockgeo geo_of(const mb_cart *cart, int rank) {
  blockgeo b;
  MPI_Cart_coords(cart->comm, rank, 3, b.coords);
  for (int a = 0; a < 3; a++) {
    b.lo[a] = cart->n[a] * b.coords[a] / cart->dims[a];
    b.nloc[a] = cart->n[a] * (b.coords[a] + 1) / cart->dims[a] - b.lo[a];
  }
  return b;
}

/* For every face ghost point of block b (face of axis a, side s, depth d),
 * call fn with its frame index and its grid point (wrapped), or skip it
 * when the face has no neighbour (beyond a non-periodic grid). */
typedef void (*ghost_fn)(void *ctx, int64_t frame_index, const int64_t glob[3]);

/* The frame of a block (as mb_cart_frame): the host frame, or a padded
 * one (pad extra rows per y line, 1 extra line per z plane, x offset
 * width + 2), for any block's geometry. */
typedef struct gframe {
  int padded;
  int64_t origin, stride[3], rows;
} gframe;

static gframe frame_for(const blockgeo *b, int width, int padded) {
  gframe f = {padded, 0, {0, 0, 0}, 0};
  const int64_t xo = padded ? width + 2 : width, lx = xo + b->nloc[2] + width + (padded ? 3 : 0);
  const int64_t ly = b->nloc[1] + 2 * width + (padded ? 1 : 0);
  f.stride[2] = 1;
  f.stride[1] = lx;
  f.stride[0] = lx * ly;
  f.origin = width * f.stride[0] + width * f.stride[1] + xo;
  f.rows = (b->nloc[0] + 2 * width) * f.stride[0];
  return f;
}

static int64_t frame_at(const gframe *f, const int64_t loc[3]) {
  return f->origin + loc[0] * f->stride[0] + loc[1] * f->stride[1] + loc[2] * f->stride[2];
}

/* mb_cart_face_exchanged for any block of the plan */
static int face_travels(const mb_cart *cart, const blockgeo *b, unsigned flags, int a, int s) {
  const int edge = b->coords[a] == (s == 0 ? 0 : cart->dims[a] - 1);
  if (edge && !cart->periodic) return 0;
  if ((flags & MB_CART_PLAN_NO_SELF) && cart->dims[a] == 1) return 0;
  if ((flags & MB_CART_PLAN_NO_OUTSIDE) && edge) return 0;
  return 1;
}

static unsigned g_flags; /* the plan's flags, for each_face_ghost */
static int g_padded;     /* the plan's frame: padded (1) or the host's */

static void each_face_ghost(const mb_cart *cart, const blockgeo *b, ghost_fn fn, void *ctx) {
  const int64_t g = cart->ghost;
  const gframe fr = frame_for(b, cart->ghost, g_padded);
  for (int a = 0; a < 3; a++)
    for (int s = 0; s < 2; s++) {
      if (!face_travels(cart, b, g_flags, a, s)) continue;
      for (int64_t d = 1; d <= g; d++)
        for (int64_t q = 0; q < b->nloc[(a + 1) % 3]; q++)
          for (int64_t r = 0; r < b->nloc[(a + 2) % 3]; r++) {
            int64_t loc[3], glob[3];
            loc[a] = s == 0 ? -d : b->nloc[a] - 1 + d;
            loc[(a + 1) % 3] = q;
            loc[(a + 2) % 3] = r;
            for (int e = 0; e < 3; e++) glob[e] = wrap(b->lo[e] + loc[e], cart->n[e]);
            fn(ctx, frame_at(&fr, loc), glob);
          }
    }
}

typedef struct grid_ctx {
  const mb_cart *cart;
  void *x;
  mb_halo_dtype dt;
  int nc, from; /* from: the rank whose ghosts are visited */
  gframe fr;    /* this rank's frame */
} grid_ctx;

static void check_forward_ghost(void *p, int64_t at, const int64_t glob[3]) {
  grid_ctx *k = p;
  for (int c = 0; c < k->nc; c++) {
    double want = grid_value(k->cart->n, glob, c), got = get(k->x, k->dt, at * k->nc + c);
    CHECK(same(got, want, k->dt), "grid forward (width %d, dt %d, ncomp %d): ghost %lld comp %d "
          "holds %g, want %g", k->cart->ghost, (int)k->dt, k->nc, (long long)at, c, got, want);
  }
}

/* the value rank `from` puts in its ghost copy of a point */
static double ghost_value(int from, const int64_t n[3], const int64_t glob[3], int c) {
  (void)n;
  return (double)((from + 1) * 3 + c) + 0.5 * (double)((glob[0] + glob[1] + glob[2]) % 5);
}

static void fill_ghost(void *p, int64_t at, const int64_t glob[3]) {
  grid_ctx *k = p;
  for (int c = 0; c < k->nc; c++)
    set(k->x, k->dt, at * k->nc + c, ghost_value(g_rank, k->cart->n, glob, c));
}

/* expected[owned point] += the ghost values of rank `from`'s copies of it */
static void add_expected(void *p, int64_t at, const int64_t glob[3]) {
  (void)at;
  grid_ctx *k = p;
  const mb_cart *cart = k->cart;
  int64_t loc[3];
  for (int a = 0; a < 3; a++) {
    loc[a] = glob[a] - cart->lo[a];
    if (loc[a] < 0 || loc[a] >= cart->nloc[a]) return; /* not this rank's point */
  }
  const int64_t me = frame_at(&k->fr, loc);
  for (int c = 0; c < k->nc; c++)
    add(k->x, k->dt, me * k->nc + c, ghost_value(k->from, cart->n, glob, c));
}

/* The index plan of a box plan's rows (its expanded lists, the same
 * neighbours and offsets). */
static mb_halo *list_plan_of(mb_halo *boxes) {
  int nn;
  const int *ranks;
  const int64_t *soff, *roff, *sidx, *ridx;
  int64_t ns, nr;
  mb_halo_neighbors(boxes, &nn, &ranks, &soff, &roff);
  mb_halo_send_indices(boxes, &ns, &sidx);
  mb_halo_recv_indices(boxes, &nr, &ridx);
  assert_true((sidx || !ns) && (ridx || !nr) && ns == soff[nn] && nr == roff[nn]);
  mb_halo *l = NULL;
  assert_int_equal(mb_halo_create_lists(MPI_COMM_WORLD, nn, ranks, soff, sidx, roff, ridx, 1, &l),
                   MB_SUCCESS);
  return l;
}

/* x (of `rows` rows) through the box plan and a copy through its index
 * plan: the same bits. */
static void exchange_both(const where *w, mb_halo *plan, mb_halo *lists, mb_halo_dir dir,
                          mb_halo_dtype dt, int nc, void *x, int64_t rows) {
  const size_t bytes = dt_size(dt) * (size_t)(rows * nc);
  void *y = malloc(bytes + 8);
  assert_non_null(y);
  memcpy(y, x, bytes);
  exchange(w, plan, dir, dt, nc, x, rows);
  exchange(w, lists, dir, dt, nc, y, rows);
  CHECK(memcmp(x, y, bytes) == 0, "box plan and index plan differ (%s, dt %d, ncomp %d)",
        dir == MB_HALO_FORWARD ? "forward" : "reverse", (int)dt, nc);
  free(y);
}

static void grid_case(const where *w, const int64_t n[3], int periodic, int width, int padded,
                      unsigned flags) {
  mb_cart *cart = NULL;
  assert_int_equal(mb_cart_create(MPI_COMM_WORLD, n, periodic, width, &cart), MB_SUCCESS);
  const blockgeo mine = geo_of(cart, cart->rank);
  const gframe fr = frame_for(&mine, width, padded);
  mb_halo *plan = NULL, *own = NULL;
  if (!padded && !flags) {
    assert_int_equal(mb_cart_plan(cart, &plan), MB_SUCCESS);
    assert_int_equal(fr.rows, mb_cart_local_size(cart));
  } else {
    mb_cart_frame cf = {fr.origin, {fr.stride[0], fr.stride[1], fr.stride[2]}, width};
    assert_int_equal(mb_cart_plan_frame(cart, &cf, flags, &own), MB_SUCCESS);
    plan = own;
  }
  int64_t nbox;
  const mb_halo_box *boxes;
  const int64_t *boff;
  assert_true(mb_halo_send_boxes(plan, &nbox, &boxes, &boff));
  mb_halo *lists = list_plan_of(plan);
  g_flags = flags;
  g_padded = padded;
  const int64_t npts = fr.rows;
  for (int dti = 0; dti < 2; dti++)
    for (int nc = 1; nc <= 4; nc++) {
      const mb_halo_dtype dt = dti ? MB_HALO_FLOAT32 : MB_HALO_FLOAT64;
      void *x = calloc((size_t)(npts + 1) * (size_t)nc, dt_size(dt));
      void *want = calloc((size_t)(npts + 1) * (size_t)nc, dt_size(dt));
      assert_true(x && want);
      grid_ctx k = {cart, x, dt, nc, cart->rank, fr};
      /* forward: owned points carry their value, the rest -1 */
      for (int64_t p = 0; p < npts * nc; p++) set(x, dt, p, -1.0);
      for (int64_t a = 0; a < cart->nloc[0]; a++)
        for (int64_t b = 0; b < cart->nloc[1]; b++)
          for (int64_t c = 0; c < cart->nloc[2]; c++) {
            const int64_t glob[3] = {cart->lo[0] + a, cart->lo[1] + b, cart->lo[2] + c};
            const int64_t loc[3] = {a, b, c};
            const int64_t at = frame_at(&fr, loc);
            for (int q = 0; q < nc; q++) set(x, dt, at * nc + q, grid_value(n, glob, q));
          }
      memcpy(want, x, dt_size(dt) * (size_t)(npts * nc));
      exchange_both(w, plan, lists, MB_HALO_FORWARD, dt, nc, x, npts);
      each_face_ghost(cart, &mine, check_forward_ghost, &k);
      /* the rest of the frame (edges, corners, padding, faces left out) untouched */
      grid_ctx kw = k;
      kw.x = want;
      each_face_ghost(cart, &mine, fill_ghost, &kw); /* mark the face ghosts in want */
      each_face_ghost(cart, &mine, fill_ghost, &k);  /* the same marks in x */
      for (int64_t p = 0; p < npts * nc; p++)
        CHECK(same(get(x, dt, p), get(want, dt, p), dt),
              "grid forward (width %d, padded %d, flags %u): frame value %lld changed", width,
              padded, flags, (long long)p);
      /* reverse: x now holds the owned values and this rank's ghost values;
       * want: the owned values plus every rank's ghost copies (exact sums) */
      memcpy(want, x, dt_size(dt) * (size_t)(npts * nc));
      grid_ctx ke = k;
      ke.x = want;
      for (int r = 0; r < g_size; r++) {
        const blockgeo other = geo_of(cart, r);
        ke.from = r;
        each_face_ghost(cart, &other, add_expected, &ke);
      }
      exchange_both(w, plan, lists, MB_HALO_REVERSE, dt, nc, x, npts);
      for (int64_t p = 0; p < npts * nc; p++)
        CHECK(same(get(x, dt, p), get(want, dt, p), dt),
              "grid reverse (width %d, periodic %d, padded %d, flags %u, dt %d, ncomp %d): value "
              "%lld is %g, want %g",
              width, periodic, padded, flags, (int)dt, nc, (long long)p, get(x, dt, p),
              get(want, dt, p));
      free(x);
      free(want);
    }
  mb_halo_free(lists);
  mb_halo_free(own);
  mb_cart_free(cart);
}

static void grid_cases(const where *w) {
  const int64_t n[3] = {12, 13, 14};
  for (int width = 1; width <= 4; width++)
    for (int periodic = 0; periodic < 2; periodic++) grid_case(w, n, periodic, width, 0, 0);
  agree_no_failures("grid face plan");
}

/* Box plans of the frames and flags the GPU stencils use (padded rows,
 * faces across uncut axes and, for Dirichlet stages, on the boundary left
 * to the caller), and the host frame with those flags. */
static void box_cases(const where *w) {
  const int64_t n[3] = {12, 13, 14};
  const unsigned flag_sets[4] = {0, MB_CART_PLAN_NO_SELF, MB_CART_PLAN_NO_OUTSIDE,
                                 MB_CART_PLAN_NO_SELF | MB_CART_PLAN_NO_OUTSIDE};
  for (int width = 1; width <= 4; width += 3)
    for (int periodic = 0; periodic < 2; periodic++)
      for (int padded = 0; padded < 2; padded++)
        for (int f = 0; f < 4; f++)
          if (padded || flag_sets[f]) grid_case(w, n, periodic, width, padded, flag_sets[f]);
  agree_no_failures("grid box plans");
}

/* A value of frame row r (any row of the plane) of global z plane gz:
 * exact in float32. */
static double plane_value(int64_t gz, int64_t r, int c) {
  return (double)((gz * 7919 + r) % 65536) + 0.5 * c;
}

/* MB_CART_PLAN_WHOLE_PLANES (the z faces that a device transport copies in
 * one piece): on slabs every box is `width` whole planes of the frame, one
 * contiguous run from a plane's first row, and a forward exchange fills
 * each ghost plane, its edges, corners and padding included, with the
 * neighbour's boundary plane row for row, the owned planes untouched (and
 * the faces of a non-periodic grid's ends); with y cut instead the flag
 * changes no box. */
static void whole_plane_cases(const where *w) {
  const int64_t n[3] = {16, 5, 6};
  const unsigned flags = MB_CART_PLAN_WHOLE_PLANES | MB_CART_PLAN_NO_SELF;
  for (int width = 1; width <= 4; width += 3)
    for (int periodic = 0; periodic < 2; periodic++)
      for (int padded = 0; padded < 2; padded++) {
        const int slabs[3] = {g_size, 1, 1};
        mb_cart *cart = NULL;
        assert_int_equal(mb_cart_create_dims(MPI_COMM_WORLD, n, slabs, periodic, width, &cart),
                         MB_SUCCESS);
        const blockgeo mine = geo_of(cart, cart->rank);
        const gframe fr = frame_for(&mine, width, padded);
        mb_cart_frame cf = {fr.origin, {fr.stride[0], fr.stride[1], fr.stride[2]}, width};
        mb_halo *plan = NULL;
        assert_int_equal(mb_cart_plan_frame(cart, &cf, flags, &plan), MB_SUCCESS);
        for (int side = 0; side < 2; side++) {
          int64_t nb;
          const mb_halo_box *bx;
          const int64_t *off;
          if (side) mb_halo_recv_boxes(plan, &nb, &bx, &off);
          else mb_halo_send_boxes(plan, &nb, &bx, &off);
          for (int64_t b = 0; b < nb; b++)
            CHECK(bx[b].start % fr.stride[0] == 0 && mb_halo_box_rows(&bx[b]) == width * fr.stride[0] &&
                      bx[b].n[2] == fr.stride[0] && bx[b].n[1] == 1,
                  "whole planes (width %d, padded %d): box %lld of side %d starts at %lld with "
                  "%lld rows, want a plane's start and %lld rows", width, padded, (long long)b,
                  side, (long long)bx[b].start, (long long)mb_halo_box_rows(&bx[b]),
                  (long long)(width * fr.stride[0]));
        }
        const int64_t plane = fr.stride[0], nz = mine.nloc[0];
        for (int dti = 0; dti < 2; dti++) {
          const mb_halo_dtype dt = dti ? MB_HALO_FLOAT32 : MB_HALO_FLOAT64;
          const int nc = 1 + dti;
          void *x = calloc((size_t)(fr.rows + 1) * (size_t)nc, dt_size(dt));
          assert_non_null(x);
          for (int64_t z = -width; z < nz + width; z++) /* frame plane z: owned, or -1 */
            for (int64_t r = 0; r < plane; r++)
              for (int c = 0; c < nc; c++)
                set(x, dt, ((z + width) * plane + r) * nc + c,
                    z >= 0 && z < nz ? plane_value(mine.lo[0] + z, r, c) : -1.0);
          exchange(w, plan, MB_HALO_FORWARD, dt, nc, x, fr.rows);
          for (int64_t z = -width; z < nz + width; z++) {
            const int ghost = z < 0 || z >= nz;
            const int edge = (z < 0 && mine.coords[0] == 0) || (z >= nz && mine.coords[0] == g_size - 1);
            const int filled = ghost && g_size > 1 && (periodic || !edge);
            for (int64_t r = 0; r < plane; r++)
              for (int c = 0; c < nc; c++) {
                const double want = !ghost ? plane_value(mine.lo[0] + z, r, c)
                                    : filled ? plane_value(wrap(mine.lo[0] + z, n[0]), r, c)
                                             : -1.0;
                const double got = get(x, dt, ((z + width) * plane + r) * nc + c);
                CHECK(same(got, want, dt),
                      "whole planes (width %d, periodic %d, padded %d, dt %d): plane %lld row %lld "
                      "holds %g, want %g", width, periodic, padded, (int)dt, (long long)z,
                      (long long)r, got, want);
              }
          }
          free(x);
        }
        mb_halo_free(plan);
        mb_cart_free(cart);
        if (g_size == 1) continue;
        /* y cut: the flag changes no box */
        const int ycut[3] = {1, g_size, 1};
        const int64_t ny[3] = {6, 16, 5};
        assert_int_equal(mb_cart_create_dims(MPI_COMM_WORLD, ny, ycut, periodic, width, &cart),
                         MB_SUCCESS);
        const blockgeo yg = geo_of(cart, cart->rank);
        const gframe yf = frame_for(&yg, width, padded);
        mb_cart_frame yc = {yf.origin, {yf.stride[0], yf.stride[1], yf.stride[2]}, width};
        mb_halo *with = NULL, *without = NULL;
        assert_int_equal(mb_cart_plan_frame(cart, &yc, flags, &with), MB_SUCCESS);
        assert_int_equal(mb_cart_plan_frame(cart, &yc, MB_CART_PLAN_NO_SELF, &without), MB_SUCCESS);
        int64_t n1, n2;
        const mb_halo_box *b1, *b2;
        const int64_t *o1, *o2;
        mb_halo_send_boxes(with, &n1, &b1, &o1);
        mb_halo_send_boxes(without, &n2, &b2, &o2);
        CHECK(n1 == n2 && (!n1 || !memcmp(b1, b2, sizeof *b1 * (size_t)n1)),
              "whole planes with y cut: the boxes changed (%lld against %lld)", (long long)n1,
              (long long)n2);
        mb_halo_free(with);
        mb_halo_free(without);
        mb_cart_free(cart);
      }
  agree_no_failures("whole-plane z faces");
}

/* mb_halo_create_boxes by hand: a box with strides in every extent (not
 * a face), its rows listed in C order, and the arguments it refuses. */
static void box_rows_and_refusals(void) {
  const int me = g_rank;
  /* rows 100 + 20 k + 5 j + 2 i, k < 2, j < 3, i < 4: send to and receive
   * from this rank itself (a periodic axis it does not cut) */
  const mb_halo_box sb = {100, {2, 3, 4}, {20, 5, 2}}, rb = {1, {1, 1, 24}, {0, 0, 3}};
  const int64_t off[2] = {0, 1};
  mb_halo *h = NULL;
  assert_int_equal(mb_halo_create_boxes(MPI_COMM_WORLD, 1, &me, off, &sb, off, &rb, 1, &h),
                   MB_SUCCESS);
  int64_t ns, nr;
  const int64_t *sidx, *ridx;
  mb_halo_send_indices(h, &ns, &sidx);
  mb_halo_recv_indices(h, &nr, &ridx);
  CHECK(ns == 24 && nr == 24 && mb_halo_box_rows(&sb) == 24, "box rows: %lld and %lld, want 24",
        (long long)ns, (long long)nr);
  int64_t q = 0;
  for (int64_t k = 0; k < 2; k++)
    for (int64_t j = 0; j < 3; j++)
      for (int64_t i = 0; i < 4; i++, q++) {
        CHECK(sidx[q] == 100 + 20 * k + 5 * j + 2 * i, "send row %lld is %lld", (long long)q,
              (long long)sidx[q]);
        CHECK(ridx[q] == 1 + 3 * q, "receive row %lld is %lld", (long long)q, (long long)ridx[q]);
      }
  /* forward through itself: row 1 + 3 q gets row sidx[q]; reverse adds back */
  for (int dti = 0; dti < 2; dti++) {
    const mb_halo_dtype dt = dti ? MB_HALO_FLOAT32 : MB_HALO_FLOAT64;
    void *x = calloc(200 * 2, dt_size(dt));
    assert_non_null(x);
    for (int64_t r = 0; r < 200; r++)
      for (int c = 0; c < 2; c++) set(x, dt, r * 2 + c, (double)(r * 2 + c) + 0.5);
    assert_int_equal(mb_halo_forward_begin(h, dt, 2, x), MB_SUCCESS);
    assert_int_equal(mb_halo_forward_end(h, x), MB_SUCCESS);
    for (q = 0; q < 24; q++)
      for (int c = 0; c < 2; c++)
        CHECK(same(get(x, dt, ridx[q] * 2 + c), (double)(sidx[q] * 2 + c) + 0.5, dt),
              "box forward (dt %d): row %lld comp %d", (int)dt, (long long)ridx[q], c);
    assert_int_equal(mb_halo_reverse_begin(h, dt, 2, x), MB_SUCCESS);
    assert_int_equal(mb_halo_reverse_end(h, x), MB_SUCCESS);
    for (q = 0; q < 24; q++)
      for (int c = 0; c < 2; c++)
        CHECK(same(get(x, dt, sidx[q] * 2 + c), 2.0 * ((double)(sidx[q] * 2 + c) + 0.5), dt),
              "box reverse (dt %d): row %lld comp %d", (int)dt, (long long)sidx[q], c);
    free(x);
  }
  int64_t nb;
  const mb_halo_box *bx;
  const int64_t *bo;
  CHECK(mb_halo_send_boxes(h, &nb, &bx, &bo) == 1 && nb == 1 && bx[0].start == 100 && bo[1] == 1,
        "send boxes of a box plan");
  mb_halo_free(h);
  /* refused: a negative stride, descending ranks, offsets not from 0 */
  const mb_halo_box neg = {0, {1, 1, 2}, {0, 0, -1}};
  assert_int_equal(mb_halo_create_boxes(MPI_COMM_WORLD, 1, &me, off, &neg, off, &rb, 1, &h),
                   MB_ERR_ARG);
  assert_null(h);
  const int two[2] = {1, 0};
  const int64_t off2[3] = {0, 1, 2}, bad[2] = {1, 1};
  const mb_halo_box pair[2] = {sb, sb};
  assert_int_equal(mb_halo_create_boxes(MPI_COMM_WORLD, 2, two, off2, pair, off2, pair, 1, &h),
                   MB_ERR_ARG);
  assert_int_equal(mb_halo_create_boxes(MPI_COMM_WORLD, 1, &me, bad, &sb, off, &rb, 1, &h),
                   MB_ERR_ARG);
  assert_null(h);
  /* an index plan has no boxes */
  mb_halo *l = NULL;
  const int64_t zero[2] = {0, 0}, none[1] = {0};
  assert_int_equal(mb_halo_create_lists(MPI_COMM_WORLD, 1, &me, zero, none, zero, none, 1, &l),
                   MB_SUCCESS);
  CHECK(mb_halo_send_boxes(l, &nb, &bx, &bo) == 0 && nb == 0 && !bx, "an index plan's boxes");
  mb_halo_free(l);
  mb_error_clear();
  agree_no_failures("box rows");
}

/* ------------------------------------------------------------------ transport rule */

/* A stand-in for an op's trial exchanges: each "exchange" with transport t
 * busy-waits delay[t] seconds; the calls are counted; IPC is refused
 * (MB_ERR_UNSUPPORTED, on every rank alike) where ipc_refused is set. */
typedef struct fake_trial {
  double delay[4];
  int exchanges[4], settles, wrong_comm; /* per mb_halo_transport */
  int ipc_refused;
} fake_trial;

static mb_error fake_exchanges(void *ctx, mb_halo_transport t, mb_nccl *nccl, int n) {
  fake_trial *f = ctx;
  if ((t == MB_HALO_NCCL) != (nccl != NULL)) f->wrong_comm++;
  if (n == 0) f->settles++;
  if (t == MB_HALO_IPC && n > 0 && f->ipc_refused)
    return mb_error_set(MB_ERR_UNSUPPORTED, __FILE__, __LINE__, __func__, "no IPC here (test)");
  f->exchanges[t] += n;
  const double until = MPI_Wtime() + n * f->delay[t];
  while (MPI_Wtime() < until) {
  }
  return MB_SUCCESS;
}

/* mb_halo_choose_transport's rule: MPI when asked or alone, with no trial;
 * nccl: 1 connecting exchange (an error on every rank without NCCL); auto:
 * NCCL's connecting exchange where it can be had, IPC's setting-up
 * exchange unless refused, then MB_HALO_AUTO_TRIALS of each transport had
 * (MPI too, unless it is the only one), the fastest kept; ipc: 1
 * setting-up exchange with IPC and no NCCL communicator, then ipc. Delays
 * (apart by at least 8 ms an exchange, 80 ms a trial, so that a loaded
 * machine's clock leaves the order as it is): the fastest transport 1 ms
 * an exchange, else MPI 25, NCCL 9, IPC 17 ms. */
static void transport_rule(void) {
  const int alone = g_size == 1;
  for (int want = MB_HALO_AUTO; want <= MB_HALO_NCCL; want++)
    for (int fastest = MB_HALO_MPI; fastest <= MB_HALO_IPC; fastest++)
      for (int refuse = 0; refuse < 2; refuse++) {
        fake_trial f = {{0, 25e-3, 9e-3, 17e-3}, {0}, 0, 0, refuse};
        f.delay[fastest] = 1e-3;
        mb_nccl *nccl = NULL;
        mb_halo_transport chosen = MB_HALO_AUTO;
        mb_error e = mb_halo_choose_transport(MPI_COMM_WORLD, (mb_halo_transport)want, "test",
                                              fake_exchanges, &f, &nccl, &chosen);
        const int have_nccl = nccl != NULL, have_ipc = !refuse;
        if (want == MB_HALO_MPI || alone) {
          CHECK(e == MB_SUCCESS && chosen == MB_HALO_MPI && !nccl && !f.settles &&
                    !f.exchanges[MB_HALO_MPI] && !f.exchanges[MB_HALO_NCCL] &&
                    !f.exchanges[MB_HALO_IPC],
                "rule: want %s on %d ranks gives %s after %d + %d + %d trial exchanges",
                mb_halo_transport_name((mb_halo_transport)want), g_size,
                mb_halo_transport_name(chosen), f.exchanges[MB_HALO_NCCL],
                f.exchanges[MB_HALO_MPI], f.exchanges[MB_HALO_IPC]);
        } else if (want == MB_HALO_NCCL) {
          if (!have_nccl) CHECK(e != MB_SUCCESS, "rule: nccl without NCCL succeeded");
          else
            CHECK(e == MB_SUCCESS && chosen == MB_HALO_NCCL && f.exchanges[MB_HALO_NCCL] == 1 &&
                      !f.exchanges[MB_HALO_MPI] && !f.exchanges[MB_HALO_IPC] && !f.wrong_comm,
                  "rule: want nccl gives %s after %d NCCL, %d MPI, %d IPC trial exchanges",
                  mb_halo_transport_name(chosen), f.exchanges[MB_HALO_NCCL],
                  f.exchanges[MB_HALO_MPI], f.exchanges[MB_HALO_IPC]);
        } else { /* auto */
          const int trials = have_nccl || have_ipc ? MB_HALO_AUTO_TRIALS : 0;
          mb_halo_transport best = MB_HALO_MPI; /* the least delay of those had */
          if (have_nccl && f.delay[MB_HALO_NCCL] < f.delay[best]) best = MB_HALO_NCCL;
          if (have_ipc && f.delay[MB_HALO_IPC] < f.delay[best]) best = MB_HALO_IPC;
          CHECK(e == MB_SUCCESS && chosen == best &&
                    f.exchanges[MB_HALO_NCCL] == (have_nccl ? 1 + trials : 0) &&
                    f.exchanges[MB_HALO_MPI] == trials &&
                    f.exchanges[MB_HALO_IPC] == (have_ipc ? 1 + trials : 0) && !f.wrong_comm,
                "rule: auto (fastest %s, NCCL %s, IPC %s) gives %s after %d NCCL, %d MPI and %d "
                "IPC trial exchanges", mb_halo_transport_name((mb_halo_transport)fastest),
                have_nccl ? "had" : "not had", have_ipc ? "had" : "refused",
                mb_halo_transport_name(chosen), f.exchanges[MB_HALO_NCCL],
                f.exchanges[MB_HALO_MPI], f.exchanges[MB_HALO_IPC]);
        }
        mb_error_clear();
        mb_nccl_free(nccl);
      }
  fake_trial f = {{0, 1e-3, 1e-3, 1e-3}, {0}, 0, 0, 0};
  mb_nccl *nccl = NULL;
  mb_halo_transport chosen = MB_HALO_AUTO;
  const mb_error e = mb_halo_choose_transport(MPI_COMM_WORLD, MB_HALO_IPC, "test", fake_exchanges,
                                              &f, &nccl, &chosen);
  CHECK(e == MB_SUCCESS && chosen == (alone ? MB_HALO_MPI : MB_HALO_IPC) && !nccl &&
            f.exchanges[MB_HALO_IPC] == (alone ? 0 : 1) && !f.exchanges[MB_HALO_NCCL] &&
            !f.exchanges[MB_HALO_MPI] && !f.wrong_comm,
        "rule: want ipc on %d ranks gives %s after %d IPC, %d NCCL and %d MPI trial exchanges",
        g_size, mb_halo_transport_name(chosen), f.exchanges[MB_HALO_IPC],
        f.exchanges[MB_HALO_NCCL], f.exchanges[MB_HALO_MPI]);
  agree_no_failures("transport rule");
}

/* ------------------------------------------------------------------ tests */

#ifndef MB_HALO_TEST_DEVICE

static void test_host_mesh(void **state) {
  (void)state;
  const where w = {0, MB_HALO_MPI, NULL, 0};
  mesh_cases(&w);
}

static void test_host_grid(void **state) {
  (void)state;
  const where w = {0, MB_HALO_MPI, NULL, 0};
  grid_cases(&w);
}

static void test_transport_rule(void **state) {
  (void)state;
  transport_rule();
}

static void test_host_boxes(void **state) {
  (void)state;
  const where w = {0, MB_HALO_MPI, NULL, 0};
  box_rows_and_refusals();
  box_cases(&w);
  whole_plane_cases(&w);
}

/* The plan refuses a second exchange in flight and an end without begin. */
static void test_misuse(void **state) {
  (void)state;
  mesh m;
  mesh_build(&m, 0);
  mb_halo *h = mesh_plan(&m);
  double *x = calloc((size_t)(m.nowned + m.nghost + 1), sizeof *x);
  assert_non_null(x);
  assert_int_equal(mb_halo_forward_end(h, x), MB_ERR_ARG);
  assert_int_equal(mb_halo_forward_begin(h, MB_HALO_FLOAT64, 0, x), MB_ERR_ARG);
  assert_int_equal(mb_halo_forward_begin(h, MB_HALO_FLOAT64, 1, x), MB_SUCCESS);
  assert_int_equal(mb_halo_reverse_begin(h, MB_HALO_FLOAT64, 1, x), MB_ERR_ARG);
  assert_int_equal(mb_halo_reverse_end(h, x), MB_ERR_ARG);
  assert_int_equal(mb_halo_forward_end(h, x), MB_SUCCESS);
  const int bad_ranks[2] = {1, 0};
  const int64_t off[3] = {0, 0, 0}, none[1] = {0};
  mb_halo *l = NULL;
  assert_int_equal(mb_halo_create_lists(MPI_COMM_WORLD, 2, bad_ranks, off, none, off, none, 1, &l),
                   MB_ERR_ARG);
  assert_null(l);
  mb_halo_free(h);
  free(x);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_host_mesh),
                                     cmocka_unit_test(test_host_grid),
                                     cmocka_unit_test(test_host_boxes),
                                     cmocka_unit_test(test_misuse),
                                     cmocka_unit_test(test_transport_rule)};
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  int64_t total = 0;
  MPI_Reduce(&g_checked, &total, 1, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  if (g_rank == 0) printf("halo engine on %d ranks: %lld values checked\n", g_size, (long long)total);
  MPI_Finalize();
  return any ? 1 : 0;
}

#else /* device arrays */

static mb_nccl *g_nccl;

static void test_device_mpi(void **state) {
  (void)state;
  const where w = {1, MB_HALO_MPI, NULL, 0};
  mesh_cases(&w);
  grid_cases(&w);
  box_cases(&w);
  const where late = {1, MB_HALO_MPI, NULL, 1}; /* messages posted at end */
  box_cases(&late);
  whole_plane_cases(&w);
}

/* With a device per rank, NCCL can be had: the rule's timed comparison. */
static void test_device_transport_rule(void **state) {
  (void)state;
  transport_rule();
}

static void test_device_nccl(void **state) {
  (void)state;
  if (!g_nccl) {
    if (g_rank == 0) printf("NCCL part skipped: %s\n", mb_error_message());
    skip();
  }
  const where w = {1, MB_HALO_NCCL, g_nccl, 0};
  mesh_cases(&w);
  grid_cases(&w);
  box_cases(&w);
  whole_plane_cases(&w);
}

/* The IPC transport: the same cases, the same bits as the host engine;
 * the whole-plane z faces with the array shared, so copied straight into
 * the neighbours' arrays (mb_cuda_halo_share_arrays), and not shared. */
static void test_device_ipc(void **state) {
  (void)state;
  const where w = {1, MB_HALO_IPC, NULL, 0, 0};
  mesh_cases(&w);
  grid_cases(&w);
  box_cases(&w);
  whole_plane_cases(&w);
  const where shared = {1, MB_HALO_IPC, NULL, 0, 1};
  grid_cases(&shared);
  box_cases(&shared);
  whole_plane_cases(&shared);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  char why[256] = "";
  int have = mb_cuda_device_count(why, sizeof why) > 0, all = 0;
  MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    if (g_rank == 0) printf("skipped: no GPU on every rank (%s)\n", why[0] ? why : "no device");
    MPI_Finalize();
    return MB_TEST_SKIP;
  }
  int device = 0;
  char name[128];
  assert_int_equal(mb_cuda_select_device(g_rank, &device, name, sizeof name), MB_SUCCESS);
  if (mb_nccl_create(MPI_COMM_WORLD, &g_nccl) != MB_SUCCESS) g_nccl = NULL; /* agreed */
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_device_mpi),
                                     cmocka_unit_test(test_device_nccl),
                                     cmocka_unit_test(test_device_ipc),
                                     cmocka_unit_test(test_device_transport_rule)};
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  int64_t total = 0;
  MPI_Reduce(&g_checked, &total, 1, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  if (g_rank == 0)
    printf("device halo engine on %d ranks (%s): %lld values checked, NCCL %s\n", g_size, name,
           (long long)total, g_nccl ? "tested" : "not available");
  mb_nccl_free(g_nccl);
  MPI_Finalize();
  return any ? 1 : 0;
}

#endif
