/* meshbatch: Cartesian blocks of a 3D grid and their face halos (see
 * mb_cart.h). */
#include "mb_cart.h"

#include "mb_nccl.h"

#include <stdlib.h>

/* Index of local point (k, j, i) of a frame of sizes L. */
static int64_t at(const int64_t L[3], int64_t k, int64_t j, int64_t i) {
  return (k * L[1] + j) * L[2] + i;
}

/* The subarray of the local frame: `first` and `count` per axis. */
static mb_error subarray(const int64_t L[3], const int64_t first[3], const int64_t count[3],
                         MPI_Datatype base, MPI_Datatype *t) {
  int sizes[3], sub[3], starts[3];
  for (int a = 0; a < 3; a++) {
    sizes[a] = (int)L[a];
    sub[a] = (int)count[a];
    starts[a] = (int)first[a];
  }
  MB_CALL_MPI(MPI_Type_create_subarray(3, sizes, sub, starts, MPI_ORDER_C, base, t));
  MB_CALL_MPI(MPI_Type_commit(t));
  return MB_SUCCESS;
}

/* The face datatypes: along axis a, the `ghost` planes this rank sends to
 * its neighbour on side s (its own outermost owned planes) and those it
 * receives from it (the ghost planes on that side); the owned extent on the
 * other two axes. */
static mb_error face_types(mb_cart *c) {
  const int64_t g = c->ghost;
  int64_t L[3];
  for (int a = 0; a < 3; a++) L[a] = c->nloc[a] + 2 * g;
  const MPI_Datatype base[2] = {MPI_DOUBLE, MPI_FLOAT};
  for (int dt = 0; dt < 2; dt++)
    for (int a = 0; a < 3; a++)
      for (int s = 0; s < 2; s++) {
        int64_t first[3] = {g, g, g}, count[3] = {c->nloc[0], c->nloc[1], c->nloc[2]};
        count[a] = g;
        first[a] = s == 0 ? g : c->nloc[a];
        MB_CALL(subarray(L, first, count, base[dt], &c->send[dt][a][s]));
        first[a] = s == 0 ? 0 : g + c->nloc[a];
        MB_CALL(subarray(L, first, count, base[dt], &c->recv[dt][a][s]));
      }
  return MB_SUCCESS;
}

mb_error mb_cart_dims(int size, const int64_t n[3], int dims[3]) {
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
  *cart = NULL;
  MB_CHECK(ghost >= 1, MB_ERR_ARG, "ghost width must be at least 1 (got %d)", ghost);
  for (int a = 0; a < 3; a++)
    MB_CHECK(n[a] >= 1 && n[a] <= (int64_t)1 << 30, MB_ERR_ARG,
             "grid shape %lld x %lld x %lld out of range (1 .. 2^30 points per axis)",
             (long long)n[0], (long long)n[1], (long long)n[2]);
  mb_cart *c = calloc(1, sizeof *c);
  MB_CHECK(c, MB_ERR_MEMORY, "out of memory");
  c->comm = MPI_COMM_NULL;
  for (int dt = 0; dt < 2; dt++)
    for (int a = 0; a < 3; a++)
      for (int s = 0; s < 2; s++) c->send[dt][a][s] = c->recv[dt][a][s] = MPI_DATATYPE_NULL;
  c->periodic = periodic;
  c->ghost = ghost;
  MB_CALL_MPI(MPI_Comm_size(comm, &c->size));
  MB_CALL(mb_cart_dims(c->size, n, c->dims));
  mb_error e = MB_SUCCESS;
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
  e = face_types(c);
  if (e) {
    mb_cart_free(c);
    return e;
  }
  *cart = c;
  return MB_SUCCESS;
}

int64_t mb_cart_local_size(const mb_cart *c) {
  const int64_t g = c->ghost;
  return (c->nloc[0] + 2 * g) * (c->nloc[1] + 2 * g) * (c->nloc[2] + 2 * g);
}

mb_error mb_cart_exchange_begin(mb_cart *c, mb_cart_dtype dtype, void *u) {
  MB_CHECK(c->nreq == 0, MB_ERR_ARG, "a halo exchange is already in flight");
  const int dt = dtype == MB_CART_FLOAT32;
  /* what a rank sends towards side s carries tag 2 a + s; it arrives in the
   * neighbour's ghost planes on the other side */
  for (int a = 0; a < 3; a++)
    for (int s = 0; s < 2; s++) {
      MB_CALL_MPI(MPI_Irecv(u, 1, c->recv[dt][a][s], c->nbr[a][s], 2 * a + (1 - s), c->comm,
                            &c->req[c->nreq++]));
      MB_CALL_MPI(MPI_Isend(u, 1, c->send[dt][a][s], c->nbr[a][s], 2 * a + s, c->comm,
                            &c->req[c->nreq++]));
    }
  return MB_SUCCESS;
}

mb_error mb_cart_exchange_end(mb_cart *c) {
  const int n = c->nreq;
  c->nreq = 0;
  MB_CALL_MPI(MPI_Waitall(n, c->req, MPI_STATUSES_IGNORE));
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
  for (int dt = 0; dt < 2; dt++)
    for (int a = 0; a < 3; a++)
      for (int s = 0; s < 2; s++) {
        if (c->send[dt][a][s] != MPI_DATATYPE_NULL) MPI_Type_free(&c->send[dt][a][s]);
        if (c->recv[dt][a][s] != MPI_DATATYPE_NULL) MPI_Type_free(&c->recv[dt][a][s]);
      }
  mb_nccl_free(c->nccl);
  if (c->comm != MPI_COMM_NULL) MPI_Comm_free(&c->comm);
  free(c);
}
