/* meshbatch: Cartesian blocks of a 3D grid and their face halos (see
 * mb_cart.h). */
#include "mb_cart.h"

#include "mb_nccl.h"

#include <stdlib.h>

/* Index of local point (k, j, i) of a frame of sizes L. */
static int64_t at(const int64_t L[3], int64_t k, int64_t j, int64_t i) {
  return (k * L[1] + j) * L[2] + i;
}

void mb_cart_host_frame(const mb_cart *c, mb_cart_frame *fr) {
  const int64_t g = c->ghost;
  int64_t L[3];
  for (int a = 0; a < 3; a++) L[a] = c->nloc[a] + 2 * g;
  fr->stride[0] = L[1] * L[2];
  fr->stride[1] = L[2];
  fr->stride[2] = 1;
  fr->origin = at(L, g, g, g);
  fr->width = c->ghost;
}

int mb_cart_face_exchanged(const mb_cart *c, unsigned flags, int a, int s) {
  if (c->nbr[a][s] == MPI_PROC_NULL) return 0;
  if ((flags & MB_CART_PLAN_NO_SELF) && c->dims[a] == 1) return 0;
  if ((flags & MB_CART_PLAN_NO_OUTSIDE) && c->coords[a] == (s == 0 ? 0 : c->dims[a] - 1)) return 0;
  return 1;
}

/* The face of axis a on side s as a box of the frame: the `width`
 * outermost owned planes sent that way (ghost_planes 0), or the ghost
 * planes on that side (1); the owned extent on the other two axes, or for
 * a z face with `whole` the frame's whole planes (MB_CART_PLAN_WHOLE_PLANES). */
static mb_halo_box face_box(const mb_cart *c, const mb_cart_frame *fr, int a, int s,
                            int ghost_planes, int whole) {
  const int64_t w = fr->width;
  int64_t first[3] = {0, 0, 0};
  mb_halo_box b;
  for (int e = 0; e < 3; e++) {
    b.n[e] = c->nloc[e];
    b.stride[e] = fr->stride[e];
  }
  b.n[a] = w;
  if (ghost_planes) first[a] = s == 0 ? -w : c->nloc[a];
  else first[a] = s == 0 ? 0 : c->nloc[a] - w;
  b.start = fr->origin + first[0] * fr->stride[0] + first[1] * fr->stride[1] + first[2] * fr->stride[2];
  if (whole && a == 0) { /* a plane's stride[0] rows from its first */
    b.start = fr->origin - fr->origin % fr->stride[0] + first[0] * fr->stride[0];
    b.n[1] = 1;
    b.n[2] = fr->stride[0];
    b.stride[1] = fr->stride[0];
    b.stride[2] = 1;
  }
  return b;
}

/* The face plan: what a rank sends towards side s of axis a arrives in the
 * neighbour's ghost planes on side 1 - s, so from neighbour r this rank
 * receives, in r's sending order (a, s), on the sides 1 - s where r is its
 * neighbour. The flags drop faces symmetrically: a face this rank does not
 * send is one its neighbour does not receive. */
mb_error mb_cart_plan_frame(const mb_cart *c, const mb_cart_frame *fr, unsigned flags,
                            mb_halo **plan) {
  *plan = NULL;
  static const char axis_name[3] = {'z', 'y', 'x'};
  MB_CHECK(fr->width >= 1, MB_ERR_ARG, "face plan of width %d", fr->width);
  int ranks[6], nn = 0;
  for (int a = 0; a < 3; a++)
    for (int s = 0; s < 2; s++) {
      if (!mb_cart_face_exchanged(c, flags, a, s)) continue;
      MB_CHECK(c->nloc[a] >= fr->width, MB_ERR_ARG,
               "face plan: a block of %lld planes along %c is thinner than the halo of %d",
               (long long)c->nloc[a], axis_name[a], fr->width);
      const int r = c->nbr[a][s];
      int k = 0;
      while (k < nn && ranks[k] < r) k++;
      if (k < nn && ranks[k] == r) continue;
      for (int m = nn; m > k; m--) ranks[m] = ranks[m - 1];
      ranks[k] = r;
      nn++;
    }
  mb_halo_box sbox[6], rbox[6];
  int64_t soff[7] = {0}, roff[7] = {0};
  int ns = 0, nr = 0;
  const int whole = (flags & MB_CART_PLAN_WHOLE_PLANES) && c->dims[1] == 1 && c->dims[2] == 1;
  for (int k = 0; k < nn; k++) {
    for (int a = 0; a < 3; a++)
      for (int s = 0; s < 2; s++) {
        if (c->nbr[a][s] == ranks[k] && mb_cart_face_exchanged(c, flags, a, s))
          sbox[ns++] = face_box(c, fr, a, s, 0, whole);
        if (c->nbr[a][1 - s] == ranks[k] && mb_cart_face_exchanged(c, flags, a, 1 - s))
          rbox[nr++] = face_box(c, fr, a, 1 - s, 1, whole);
      }
    soff[k + 1] = ns;
    roff[k + 1] = nr;
  }
  MB_CALL(mb_halo_create_boxes(c->comm, nn, ranks, soff, sbox, roff, rbox, 1, plan));
  return MB_SUCCESS;
}

mb_error mb_cart_plan(mb_cart *c, mb_halo **plan) {
  if (!c->plan) {
    mb_cart_frame fr;
    mb_cart_host_frame(c, &fr);
    MB_CALL(mb_cart_plan_frame(c, &fr, 0, &c->plan));
  }
  *plan = c->plan;
  return MB_SUCCESS;
}

mb_error mb_cart_dims(int size, const int64_t n[3], int dims[3]) {
  MB_CHECK(size >= 1, MB_ERR_ARG, "a Cartesian cut over %d ranks", size);
  /* slabs along z, a longest axis, where each keeps enough planes */
  if (n[0] >= n[1] && n[0] >= n[2] && n[0] / size >= MB_CART_SLAB_MIN_PLANES) {
    dims[0] = size;
    dims[1] = dims[2] = 1;
    return MB_SUCCESS;
  }
  /* MPI_Dims_create gives non-increasing factors: the most to the longest
   * axis (ties: z before y before x), the same on every rank */
  int d[3] = {0, 0, 0}, order[3] = {0, 1, 2};
  MB_CALL_MPI(MPI_Dims_create(size, 3, d));
  for (int p = 0; p < 3; p++)
    for (int q = p + 1; q < 3; q++)
      if (n[order[q]] > n[order[p]]) {
        int t = order[p];
        order[p] = order[q];
        order[q] = t;
      }
  for (int p = 0; p < 3; p++) dims[order[p]] = d[p];
  return MB_SUCCESS;
}

mb_error mb_cart_create(MPI_Comm comm, const int64_t n[3], int periodic, int ghost,
                        mb_cart **cart) {
  return mb_cart_create_dims(comm, n, NULL, periodic, ghost, cart);
}

mb_error mb_cart_create_dims(MPI_Comm comm, const int64_t n[3], const int dims[3], int periodic,
                             int ghost, mb_cart **cart) {
  *cart = NULL;
  MB_CHECK(ghost >= 1, MB_ERR_ARG, "ghost width must be at least 1 (got %d)", ghost);
  for (int a = 0; a < 3; a++)
    MB_CHECK(n[a] >= 1 && n[a] <= (int64_t)1 << 30, MB_ERR_ARG,
             "grid shape %lld x %lld x %lld out of range (1 .. 2^30 points per axis)",
             (long long)n[0], (long long)n[1], (long long)n[2]);
  mb_cart *c = calloc(1, sizeof *c);
  MB_CHECK(c, MB_ERR_MEMORY, "out of memory");
  c->comm = MPI_COMM_NULL;
  c->periodic = periodic;
  c->ghost = ghost;
  mb_error e = MB_SUCCESS;
  if (MPI_Comm_size(comm, &c->size) != MPI_SUCCESS)
    e = mb_error_set(MB_ERR_MPI, __FILE__, __LINE__, __func__, "MPI_Comm_size failed");
  else if (!dims)
    e = mb_cart_dims(c->size, n, c->dims);
  else if (dims[0] < 1 || dims[1] < 1 || dims[2] < 1 ||
           (int64_t)dims[0] * dims[1] * dims[2] != c->size)
    e = mb_error_set(MB_ERR_ARG, __FILE__, __LINE__, __func__,
                     "%d x %d x %d blocks for %d ranks: their product must be the rank count",
                     dims[0], dims[1], dims[2], c->size);
  else
    for (int a = 0; a < 3; a++) c->dims[a] = dims[a];
  static const char axis_name[3] = {'z', 'y', 'x'};
  for (int a = 0; a < 3 && !e; a++) {
    c->n[a] = n[a];
    const int64_t thinnest = n[a] / c->dims[a];
    if ((c->dims[a] > 1 || periodic) && thinnest < ghost)
      e = mb_error_set(MB_ERR_ARG, __FILE__, __LINE__, __func__,
                       "grid of %lld points along %c split into %d blocks: a block of %lld "
                       "planes is thinner than the halo of %d (use fewer ranks or a larger grid)",
                       (long long)n[a], axis_name[a], c->dims[a], (long long)thinnest, ghost);
  }
  if (e) {
    free(c);
    return e;
  }
  int periods[3] = {periodic, periodic, periodic};
  MB_CALL_MPI(MPI_Cart_create(comm, 3, c->dims, periods, 0, &c->comm));
  MB_CALL_MPI(MPI_Comm_rank(c->comm, &c->rank));
  MB_CALL_MPI(MPI_Cart_coords(c->comm, c->rank, 3, c->coords));
  for (int a = 0; a < 3; a++) {
    c->lo[a] = n[a] * c->coords[a] / c->dims[a];
    c->nloc[a] = n[a] * (c->coords[a] + 1) / c->dims[a] - c->lo[a];
    MB_CALL_MPI(MPI_Cart_shift(c->comm, a, 1, &c->nbr[a][0], &c->nbr[a][1]));
  }
  *cart = c;
  return MB_SUCCESS;
}

int64_t mb_cart_local_size(const mb_cart *c) {
  const int64_t g = c->ghost;
  return (c->nloc[0] + 2 * g) * (c->nloc[1] + 2 * g) * (c->nloc[2] + 2 * g);
}

mb_error mb_cart_exchange_begin(mb_cart *c, mb_cart_dtype dtype, void *u) {
  MB_CHECK(!c->inflight, MB_ERR_ARG, "a halo exchange is already in flight");
  mb_halo *plan;
  MB_CALL(mb_cart_plan(c, &plan));
  MB_CALL(mb_halo_forward_begin(plan, dtype == MB_CART_FLOAT32 ? MB_HALO_FLOAT32 : MB_HALO_FLOAT64,
                                1, u));
  c->inflight = u;
  return MB_SUCCESS;
}

mb_error mb_cart_exchange_end(mb_cart *c) {
  void *u = c->inflight;
  MB_CHECK(u, MB_ERR_ARG, "no halo exchange in flight");
  c->inflight = NULL;
  MB_CALL(mb_halo_forward_end(c->plan, u));
  return MB_SUCCESS;
}

void mb_cart_fill_outside(const mb_cart *c, mb_cart_dtype dtype, void *u, double outside) {
  const int64_t g = c->ghost;
  int64_t L[3];
  for (int a = 0; a < 3; a++) L[a] = c->nloc[a] + 2 * g;
  for (int a = 0; a < 3; a++)
    for (int s = 0; s < 2; s++) {
      if (c->coords[a] != (s == 0 ? 0 : c->dims[a] - 1)) continue;
      int64_t first[3] = {g, g, g}, end[3] = {g + c->nloc[0], g + c->nloc[1], g + c->nloc[2]};
      first[a] = s == 0 ? 0 : g + c->nloc[a];
      end[a] = first[a] + g;
      for (int64_t k = first[0]; k < end[0]; k++)
        for (int64_t j = first[1]; j < end[1]; j++)
          for (int64_t i = first[2]; i < end[2]; i++) {
            if (dtype == MB_CART_FLOAT32) ((float *)u)[at(L, k, j, i)] = (float)outside;
            else ((double *)u)[at(L, k, j, i)] = outside;
          }
    }
}

void mb_cart_free(mb_cart *c) {
  if (!c) return;
  mb_halo_free(c->plan);
  mb_nccl_free(c->nccl);
  if (c->comm != MPI_COMM_NULL) MPI_Comm_free(&c->comm);
  free(c);
}
