/* meshbatch: halo plans and the owner -> ghost exchange (see mb_halo.h). */
#include "mb_halo.h"

#include <stdlib.h>
#include <string.h>

struct mb_halo {
  MPI_Comm comm;
  int ncomp;
  int nneighbors;
  int *neighbor;          /* [nneighbors] ranks we exchange with */
  int64_t *send_offset;   /* [nneighbors + 1] into send_index */
  int64_t *send_index;    /* owned local indices packed for each neighbour */
  int64_t *recv_offset;   /* [nneighbors + 1] into recv_index */
  int64_t *recv_index;    /* ghost local indices filled from each neighbour */
  double *send_buf, *recv_buf;
  MPI_Request *requests;  /* [2 nneighbors] */
};

typedef struct id_pair {
  int64_t global;
  int64_t local;
} id_pair;

static int by_global(const void *x, const void *y) {
  const id_pair *a = x, *b = y;
  return (a->global > b->global) - (a->global < b->global);
}

void mb_halo_free(mb_halo *h) {
  if (!h) return;
  free(h->neighbor);
  free(h->send_offset);
  free(h->send_index);
  free(h->recv_offset);
  free(h->recv_index);
  free(h->send_buf);
  free(h->recv_buf);
  free(h->requests);
  free(h);
}

/* Ghosts grouped by owner rank (stable: local order within a rank). */
static mb_error group_ghosts(mb_halo *h, int size, int64_t nowned, int64_t nghost,
                             const int *owner, int64_t *count) {
  for (int64_t g = 0; g < nghost; g++) count[owner[g]]++;
  for (int r = 0; r < size; r++)
    if (count[r]) h->nneighbors++;
  MB_CALLOC(h->neighbor, h->nneighbors);
  MB_CALLOC(h->recv_offset, h->nneighbors + 1);
  MB_CALLOC(h->recv_index, nghost);
  int n = 0;
  for (int r = 0; r < size; r++)
    if (count[r]) {
      h->neighbor[n] = r;
      h->recv_offset[n + 1] = h->recv_offset[n] + count[r];
      n++;
    }
  int64_t *fill;
  MB_CALLOC(fill, h->nneighbors);
  for (int64_t g = 0; g < nghost; g++) {
    int k = 0;
    while (h->neighbor[k] != owner[g]) k++;
    h->recv_index[h->recv_offset[k] + fill[k]++] = nowned + g;
  }
  free(fill);
  return MB_SUCCESS;
}

/* Tell every owner which of its vertices we need (by global id), and turn
 * the requests we receive into send lists of owned local indices. */
static mb_error build_send_lists(mb_halo *h, int size, int64_t nowned,
                                 const int64_t *owned_global, const int64_t *ghost_global,
                                 const int64_t *count) {
  int *scount, *rcount, *sdispl, *rdispl;
  MB_CALLOC(scount, size);
  MB_CALLOC(rcount, size);
  MB_CALLOC(sdispl, size);
  MB_CALLOC(rdispl, size);
  for (int r = 0; r < size; r++) scount[r] = (int)count[r];
  MB_CALL_MPI(MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, h->comm));
  int64_t nreq = 0, nneed = 0;
  for (int r = 0; r < size; r++) {
    sdispl[r] = (int)nneed;
    rdispl[r] = (int)nreq;
    nneed += scount[r];
    nreq += rcount[r];
  }
  int64_t *need, *req;
  MB_CALLOC(need, nneed);
  MB_CALLOC(req, nreq);
  for (int k = 0; k < h->nneighbors; k++)
    for (int64_t q = h->recv_offset[k]; q < h->recv_offset[k + 1]; q++)
      need[q] = ghost_global[h->recv_index[q] - nowned];
  MB_CALL_MPI(MPI_Alltoallv(need, scount, sdispl, MPI_INT64_T, req, rcount, rdispl, MPI_INT64_T,
                            h->comm));
  /* requests from ranks we do not receive from make them neighbours too */
  int nn = 0;
  for (int r = 0; r < size; r++)
    if (count[r] || rcount[r]) nn++;
  int *neighbor;
  int64_t *roff;
  MB_CALLOC(neighbor, nn);
  MB_CALLOC(roff, nn + 1);
  MB_CALLOC(h->send_offset, nn + 1);
  MB_CALLOC(h->send_index, nreq);
  id_pair *lookup;
  MB_CALLOC(lookup, nowned);
  for (int64_t i = 0; i < nowned; i++) lookup[i] = (id_pair){owned_global[i], i};
  qsort(lookup, (size_t)nowned, sizeof *lookup, by_global);
  int n = 0;
  for (int r = 0; r < size; r++) {
    if (!count[r] && !rcount[r]) continue;
    neighbor[n] = r;
    roff[n + 1] = roff[n] + count[r];
    h->send_offset[n + 1] = h->send_offset[n] + rcount[r];
    for (int q = 0; q < rcount[r]; q++) {
      id_pair key = {req[rdispl[r] + q], 0};
      id_pair *hit = bsearch(&key, lookup, (size_t)nowned, sizeof *lookup, by_global);
      MB_CHECK(hit, MB_ERR_ARG, "halo: rank %d asks for vertex %lld, which this rank does not own",
               r, (long long)key.global);
      h->send_index[h->send_offset[n] + q] = hit->local;
    }
    n++;
  }
  free(h->neighbor);
  free(h->recv_offset);
  h->neighbor = neighbor;
  h->recv_offset = roff;
  h->nneighbors = nn;
  free(lookup);
  free(need);
  free(req);
  free(scount);
  free(rcount);
  free(sdispl);
  free(rdispl);
  return MB_SUCCESS;
}

mb_error mb_halo_create(MPI_Comm comm, int64_t nowned, const int64_t *owned_global,
                        int64_t nghost, const int64_t *ghost_global, const int *ghost_owner,
                        int ncomp, mb_halo **out) {
  int size;
  MB_CALL_MPI(MPI_Comm_size(comm, &size));
  mb_halo *h;
  MB_CALLOC(h, 1);
  h->comm = comm;
  h->ncomp = ncomp;
  int64_t *count = calloc((size_t)size, sizeof *count);
  mb_error e = count ? MB_SUCCESS : MB_ERR_MEMORY;
  if (!e) e = group_ghosts(h, size, nowned, nghost, ghost_owner, count);
  if (!e) e = build_send_lists(h, size, nowned, owned_global, ghost_global, count);
  free(count);
  if (!e) {
    int64_t ns = h->send_offset[h->nneighbors], nr = h->recv_offset[h->nneighbors];
    h->send_buf = malloc(sizeof(double) * (size_t)(ns * ncomp + 1));
    h->recv_buf = malloc(sizeof(double) * (size_t)(nr * ncomp + 1));
    h->requests = malloc(sizeof(MPI_Request) * (size_t)(2 * h->nneighbors + 1));
    if (!h->send_buf || !h->recv_buf || !h->requests)
      e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory for halo buffers");
  }
  if (e) {
    mb_halo_free(h);
    MB_CALL(e);
  }
  *out = h;
  return MB_SUCCESS;
}

mb_error mb_halo_begin_packed(mb_halo *h, const double *sendbuf, double *recvbuf) {
  const int c = h->ncomp;
  for (int k = 0; k < h->nneighbors; k++) {
    int64_t a = h->recv_offset[k], b = h->recv_offset[k + 1];
    MB_CALL_MPI(MPI_Irecv(recvbuf + a * c, (int)((b - a) * c), MPI_DOUBLE, h->neighbor[k], 7,
                          h->comm, &h->requests[k]));
  }
  for (int k = 0; k < h->nneighbors; k++) {
    int64_t a = h->send_offset[k], b = h->send_offset[k + 1];
    MB_CALL_MPI(MPI_Isend(sendbuf + a * c, (int)((b - a) * c), MPI_DOUBLE, h->neighbor[k], 7,
                          h->comm, &h->requests[h->nneighbors + k]));
  }
  return MB_SUCCESS;
}

mb_error mb_halo_end_packed(mb_halo *h) {
  MB_CALL_MPI(MPI_Waitall(2 * h->nneighbors, h->requests, MPI_STATUSES_IGNORE));
  return MB_SUCCESS;
}

mb_error mb_halo_begin(mb_halo *h, const double *x) {
  const int c = h->ncomp;
  const int64_t ns = h->send_offset[h->nneighbors];
  for (int64_t q = 0; q < ns; q++)
    memcpy(h->send_buf + q * c, x + h->send_index[q] * c, sizeof(double) * (size_t)c);
  MB_CALL(mb_halo_begin_packed(h, h->send_buf, h->recv_buf));
  return MB_SUCCESS;
}

mb_error mb_halo_end(mb_halo *h, double *x) {
  const int c = h->ncomp;
  MB_CALL(mb_halo_end_packed(h));
  int64_t nr = h->recv_offset[h->nneighbors];
  for (int64_t q = 0; q < nr; q++)
    memcpy(x + h->recv_index[q] * c, h->recv_buf + q * c, sizeof(double) * (size_t)c);
  return MB_SUCCESS;
}

void mb_halo_send_indices(const mb_halo *h, int64_t *n, const int64_t **idx) {
  *n = h->send_offset[h->nneighbors];
  *idx = h->send_index;
}

void mb_halo_recv_indices(const mb_halo *h, int64_t *n, const int64_t **idx) {
  *n = h->recv_offset[h->nneighbors];
  *idx = h->recv_index;
}

MPI_Comm mb_halo_comm(const mb_halo *h) { return h->comm; }

void mb_halo_neighbors(const mb_halo *h, int *nneighbors, const int **ranks,
                       const int64_t **send_offset, const int64_t **recv_offset) {
  *nneighbors = h->nneighbors;
  *ranks = h->neighbor;
  *send_offset = h->send_offset;
  *recv_offset = h->recv_offset;
}

void mb_halo_stats(const mb_halo *h, int *nneighbors, int64_t *nsend, int64_t *nrecv) {
  *nneighbors = h->nneighbors;
  *nsend = h->send_offset[h->nneighbors];
  *nrecv = h->recv_offset[h->nneighbors];
}

const char *mb_halo_transport_name(mb_halo_transport t) {
  switch (t) {
  case MB_HALO_AUTO: return "auto";
  case MB_HALO_MPI: return "mpi";
  case MB_HALO_NCCL: return "nccl";
  }
  return "unknown";
}
