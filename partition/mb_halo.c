/* meshbatch: the halo engine: plans, forward and reverse exchanges, and
 * the choice of the GPU transport (see mb_halo.h). */
#include "mb_halo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_log.h"
#include "mb_nccl.h"

enum { TAG_FORWARD = 7, TAG_REVERSE = 8 };

struct mb_halo {
  MPI_Comm comm;
  int ncomp;
  int nneighbors;
  int *neighbor;          /* [nneighbors] ranks we exchange with, ascending */
  int64_t *send_offset;   /* [nneighbors + 1] into send_index */
  int64_t *send_index;    /* owned local indices packed for each neighbour */
  int64_t *recv_offset;   /* [nneighbors + 1] into recv_index */
  int64_t *recv_index;    /* ghost local indices filled from each neighbour */
  /* a box plan (mb_halo_create_boxes): per side (0 send, 1 receive) the
   * boxes, nbox[side] of them, neighbour k's from box_off[side][k]; the
   * index lists above are then NULL until mb_halo_send/recv_indices
   * expands them */
  int boxed;
  mb_halo_box *box[2];
  int64_t *box_off[2], nbox[2];
  void *send_buf, *recv_buf;  /* host staging of mb_halo_forward/reverse_* */
  size_t send_cap, recv_cap;  /* their bytes */
  MPI_Request *requests;  /* [2 nneighbors] */
  /* the exchange in flight: 0 none, else 1 + its mb_halo_dir; its dtype and
   * ncomp, and whether it uses the plan's buffers (begin/end) */
  int inflight, staged, cur_ncomp;
  mb_halo_dtype cur_dt;
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
  for (int side = 0; side < 2; side++) {
    free(h->box[side]);
    free(h->box_off[side]);
  }
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
    h->requests = malloc(sizeof(MPI_Request) * (size_t)(2 * h->nneighbors + 1));
    if (!h->requests)
      e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory for halo requests");
  }
  if (e) {
    mb_halo_free(h);
    MB_CALL(e);
  }
  *out = h;
  return MB_SUCCESS;
}

mb_error mb_halo_create_lists(MPI_Comm comm, int nneighbors, const int *ranks,
                              const int64_t *send_offset, const int64_t *send_index,
                              const int64_t *recv_offset, const int64_t *recv_index, int ncomp,
                              mb_halo **out) {
  *out = NULL;
  MB_CHECK(nneighbors >= 0 && ncomp >= 1, MB_ERR_ARG,
           "halo lists: %d neighbours, %d components", nneighbors, ncomp);
  for (int k = 0; k < nneighbors; k++) {
    MB_CHECK(ranks[k] >= 0 && (k == 0 || ranks[k] > ranks[k - 1]), MB_ERR_ARG,
             "halo lists: neighbour ranks must be ascending and distinct (%d after %d)", ranks[k],
             k ? ranks[k - 1] : -1);
    MB_CHECK(send_offset[k + 1] >= send_offset[k] && recv_offset[k + 1] >= recv_offset[k],
             MB_ERR_ARG, "halo lists: offsets of neighbour %d decrease", ranks[k]);
  }
  const int64_t ns = nneighbors ? send_offset[nneighbors] : 0;
  const int64_t nr = nneighbors ? recv_offset[nneighbors] : 0;
  MB_CHECK(!nneighbors || (send_offset[0] == 0 && recv_offset[0] == 0), MB_ERR_ARG,
           "halo lists: offsets must start at 0");
  for (int64_t q = 0; q < ns; q++)
    MB_CHECK(send_index[q] >= 0, MB_ERR_ARG, "halo lists: negative send row %lld",
             (long long)send_index[q]);
  for (int64_t q = 0; q < nr; q++)
    MB_CHECK(recv_index[q] >= 0, MB_ERR_ARG, "halo lists: negative receive row %lld",
             (long long)recv_index[q]);
  mb_halo *h = calloc(1, sizeof *h);
  MB_CHECK(h, MB_ERR_MEMORY, "out of memory");
  h->comm = comm;
  h->ncomp = ncomp;
  h->nneighbors = nneighbors;
  h->neighbor = malloc(sizeof(int) * (size_t)(nneighbors + 1));
  h->send_offset = malloc(sizeof(int64_t) * (size_t)(nneighbors + 1));
  h->recv_offset = malloc(sizeof(int64_t) * (size_t)(nneighbors + 1));
  h->send_index = malloc(sizeof(int64_t) * (size_t)(ns + 1));
  h->recv_index = malloc(sizeof(int64_t) * (size_t)(nr + 1));
  h->requests = malloc(sizeof(MPI_Request) * (size_t)(2 * nneighbors + 1));
  if (!h->neighbor || !h->send_offset || !h->recv_offset || !h->send_index || !h->recv_index ||
      !h->requests) {
    mb_halo_free(h);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for a halo plan of %lld + %lld rows", (long long)ns,
            (long long)nr);
  }
  h->send_offset[0] = h->recv_offset[0] = 0;
  for (int k = 0; k < nneighbors; k++) {
    h->neighbor[k] = ranks[k];
    h->send_offset[k + 1] = send_offset[k + 1];
    h->recv_offset[k + 1] = recv_offset[k + 1];
  }
  if (ns) memcpy(h->send_index, send_index, sizeof(int64_t) * (size_t)ns);
  if (nr) memcpy(h->recv_index, recv_index, sizeof(int64_t) * (size_t)nr);
  *out = h;
  return MB_SUCCESS;
}

int64_t mb_halo_box_rows(const mb_halo_box *b) { return b->n[0] * b->n[1] * b->n[2]; }

/* Copy one side's boxes into the plan and its row offsets per neighbour. */
static mb_error keep_boxes(mb_halo *h, int side, const int64_t *box_off, const mb_halo_box *box,
                           int64_t *row_off) {
  const int nn = h->nneighbors;
  const int64_t nb = nn ? box_off[nn] : 0;
  MB_CHECK(!nn || box_off[0] == 0, MB_ERR_ARG, "halo boxes: offsets must start at 0");
  for (int k = 0; k < nn; k++)
    MB_CHECK(box_off[k + 1] >= box_off[k], MB_ERR_ARG, "halo boxes: offsets of neighbour %d decrease",
             h->neighbor[k]);
  for (int64_t b = 0; b < nb; b++) {
    const mb_halo_box *x = &box[b];
    MB_CHECK(x->start >= 0 && x->n[0] >= 0 && x->n[1] >= 0 && x->n[2] >= 0 && x->stride[0] >= 0 &&
                 x->stride[1] >= 0 && x->stride[2] >= 0,
             MB_ERR_ARG, "halo boxes: %s box %lld has a negative start, extent or stride",
             side ? "receive" : "send", (long long)b);
  }
  MB_CALLOC(h->box[side], nb + 1);
  MB_CALLOC(h->box_off[side], nn + 1);
  if (nb) memcpy(h->box[side], box, sizeof *box * (size_t)nb);
  h->nbox[side] = nb;
  row_off[0] = 0;
  for (int k = 0; k < nn; k++) {
    h->box_off[side][k + 1] = box_off[k + 1];
    row_off[k + 1] = row_off[k];
    for (int64_t b = box_off[k]; b < box_off[k + 1]; b++) row_off[k + 1] += mb_halo_box_rows(&box[b]);
  }
  return MB_SUCCESS;
}

mb_error mb_halo_create_boxes(MPI_Comm comm, int nneighbors, const int *ranks,
                              const int64_t *send_box_offset, const mb_halo_box *send_boxes,
                              const int64_t *recv_box_offset, const mb_halo_box *recv_boxes,
                              int ncomp, mb_halo **out) {
  *out = NULL;
  MB_CHECK(nneighbors >= 0 && ncomp >= 1, MB_ERR_ARG,
           "halo boxes: %d neighbours, %d components", nneighbors, ncomp);
  for (int k = 0; k < nneighbors; k++)
    MB_CHECK(ranks[k] >= 0 && (k == 0 || ranks[k] > ranks[k - 1]), MB_ERR_ARG,
             "halo boxes: neighbour ranks must be ascending and distinct (%d after %d)", ranks[k],
             k ? ranks[k - 1] : -1);
  mb_halo *h = calloc(1, sizeof *h);
  MB_CHECK(h, MB_ERR_MEMORY, "out of memory");
  h->comm = comm;
  h->ncomp = ncomp;
  h->nneighbors = nneighbors;
  h->boxed = 1;
  h->neighbor = malloc(sizeof(int) * (size_t)(nneighbors + 1));
  h->send_offset = malloc(sizeof(int64_t) * (size_t)(nneighbors + 1));
  h->recv_offset = malloc(sizeof(int64_t) * (size_t)(nneighbors + 1));
  h->requests = malloc(sizeof(MPI_Request) * (size_t)(2 * nneighbors + 1));
  mb_error e = MB_SUCCESS;
  if (!h->neighbor || !h->send_offset || !h->recv_offset || !h->requests)
    e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                     "out of memory for a halo plan of %d neighbours", nneighbors);
  for (int k = 0; k < nneighbors && !e; k++) h->neighbor[k] = ranks[k];
  if (!e) e = keep_boxes(h, 0, send_box_offset, send_boxes, h->send_offset);
  if (!e) e = keep_boxes(h, 1, recv_box_offset, recv_boxes, h->recv_offset);
  if (e) {
    mb_halo_free(h);
    MB_CALL(e);
  }
  *out = h;
  return MB_SUCCESS;
}

int mb_halo_send_boxes(const mb_halo *h, int64_t *nboxes, const mb_halo_box **boxes,
                       const int64_t **box_offset) {
  *nboxes = h->boxed ? h->nbox[0] : 0;
  *boxes = h->boxed ? h->box[0] : NULL;
  *box_offset = h->boxed ? h->box_off[0] : NULL;
  return h->boxed;
}

int mb_halo_recv_boxes(const mb_halo *h, int64_t *nboxes, const mb_halo_box **boxes,
                       const int64_t **box_offset) {
  *nboxes = h->boxed ? h->nbox[1] : 0;
  *boxes = h->boxed ? h->box[1] : NULL;
  *box_offset = h->boxed ? h->box_off[1] : NULL;
  return h->boxed;
}

static size_t dt_bytes(mb_halo_dtype dt) { return dt == MB_HALO_FLOAT32 ? sizeof(float) : sizeof(double); }

mb_error mb_halo_post(mb_halo *h, mb_halo_dir dir, mb_halo_dtype dt, int ncomp,
                      const void *sendbuf, void *recvbuf) {
  MB_CHECK(!h->inflight, MB_ERR_ARG, "a halo exchange is already in flight on this plan");
  MB_CHECK(ncomp >= 1, MB_ERR_ARG, "halo exchange of %d components", ncomp);
  const MPI_Datatype type = dt == MB_HALO_FLOAT32 ? MPI_FLOAT : MPI_DOUBLE;
  const size_t row = dt_bytes(dt) * (size_t)ncomp;
  /* forward: owned rows (send lists) out, ghost rows (receive lists) in;
   * reverse: the other way round */
  const int64_t *out_off = dir == MB_HALO_FORWARD ? h->send_offset : h->recv_offset;
  const int64_t *in_off = dir == MB_HALO_FORWARD ? h->recv_offset : h->send_offset;
  const int tag = dir == MB_HALO_FORWARD ? TAG_FORWARD : TAG_REVERSE;
  for (int k = 0; k < h->nneighbors; k++) {
    int64_t a = in_off[k], b = in_off[k + 1];
    MB_CALL_MPI(MPI_Irecv((char *)recvbuf + (size_t)a * row, (int)((b - a) * ncomp), type,
                          h->neighbor[k], tag, h->comm, &h->requests[k]));
  }
  for (int k = 0; k < h->nneighbors; k++) {
    int64_t a = out_off[k], b = out_off[k + 1];
    MB_CALL_MPI(MPI_Isend((const char *)sendbuf + (size_t)a * row, (int)((b - a) * ncomp), type,
                          h->neighbor[k], tag, h->comm, &h->requests[h->nneighbors + k]));
  }
  h->inflight = 1 + (int)dir;
  h->cur_dt = dt;
  h->cur_ncomp = ncomp;
  h->staged = 0;
  return MB_SUCCESS;
}

mb_error mb_halo_wait(mb_halo *h) {
  MB_CHECK(h->inflight, MB_ERR_ARG, "no halo exchange in flight on this plan");
  h->inflight = 0;
  MB_CALL_MPI(MPI_Waitall(2 * h->nneighbors, h->requests, MPI_STATUSES_IGNORE));
  return MB_SUCCESS;
}

/* Grow a staging buffer to `bytes`. */
static mb_error grow(void **buf, size_t *cap, size_t bytes) {
  if (bytes <= *cap && *buf) return MB_SUCCESS;
  void *p = realloc(*buf, bytes ? bytes : 1);
  MB_CHECK(p, MB_ERR_MEMORY, "out of memory for %zu bytes of halo buffer", bytes);
  *buf = p;
  *cap = bytes;
  return MB_SUCCESS;
}

/* The rows of one side of the plan (0: send, 1: receive) in buffer
 * order: runs of `len` rows, row r0 + i stride for i < len, buffer rows
 * from q0 on. A box is n[0] n[1] runs along its innermost extent; an
 * index list is runs of one row. */
typedef void (*run_fn)(void *ctx, int64_t q0, int64_t r0, int64_t stride, int64_t len);

static void each_run(const mb_halo *h, int side, run_fn fn, void *ctx) {
  int64_t q = 0;
  if (h->boxed) {
    for (int64_t b = 0; b < h->nbox[side]; b++) {
      const mb_halo_box *x = &h->box[side][b];
      if (!x->n[2]) continue;
      for (int64_t k = 0; k < x->n[0]; k++)
        for (int64_t j = 0; j < x->n[1]; j++, q += x->n[2])
          fn(ctx, q, x->start + k * x->stride[0] + j * x->stride[1], x->stride[2], x->n[2]);
    }
    return;
  }
  const int64_t *idx = side ? h->recv_index : h->send_index;
  const int64_t n = side ? h->recv_offset[h->nneighbors] : h->send_offset[h->nneighbors];
  for (q = 0; q < n; q++) fn(ctx, q, idx[q], 1, 1);
}

typedef struct copy_ctx {
  char *x, *buf;
  size_t row;
  int to_buf;
} copy_ctx;

/* buf rows q0.. <-> x rows r0 + i stride */
static void copy_run(void *p, int64_t q0, int64_t r0, int64_t stride, int64_t len) {
  const copy_ctx *c = p;
  char *b = c->buf + (size_t)q0 * c->row;
  if (stride == 1) {
    if (c->to_buf) memcpy(b, c->x + (size_t)r0 * c->row, (size_t)len * c->row);
    else memcpy(c->x + (size_t)r0 * c->row, b, (size_t)len * c->row);
    return;
  }
  for (int64_t i = 0; i < len; i++) {
    char *xr = c->x + (size_t)(r0 + i * stride) * c->row, *br = b + (size_t)i * c->row;
    if (c->to_buf) memcpy(br, xr, c->row);
    else memcpy(xr, br, c->row);
  }
}

/* buf row q = x row of the plan's side, in buffer order (rows of `row` bytes). */
static void gather(const mb_halo *h, int side, const void *x, size_t row, void *buf) {
  copy_ctx c = {(char *)x, buf, row, 1};
  each_run(h, side, copy_run, &c);
}

/* x row of the plan's side = buf row q. */
static void scatter(const mb_halo *h, int side, const void *buf, size_t row, void *x) {
  copy_ctx c = {x, (char *)buf, row, 0};
  each_run(h, side, copy_run, &c);
}

typedef struct add_ctx {
  mb_halo_dtype dt;
  int nc;
  const void *buf;
  void *x;
} add_ctx;

static void add_run(void *p, int64_t q0, int64_t r0, int64_t stride, int64_t len) {
  const add_ctx *a = p;
  const int nc = a->nc;
  for (int64_t i = 0; i < len; i++) {
    const int64_t r = r0 + i * stride, q = q0 + i;
    if (a->dt == MB_HALO_FLOAT32)
      for (int c = 0; c < nc; c++) ((float *)a->x)[r * nc + c] += ((const float *)a->buf)[q * nc + c];
    else
      for (int c = 0; c < nc; c++)
        ((double *)a->x)[r * nc + c] += ((const double *)a->buf)[q * nc + c];
  }
}

/* owned row of buffer row q += buf row q, in ascending q: the engine's
 * fixed order. */
static void add_rows(const mb_halo *h, mb_halo_dtype dt, int nc, const void *buf, void *x) {
  add_ctx a = {dt, nc, buf, x};
  each_run(h, 0, add_run, &a);
}

/* Start an exchange through the plan's buffers: pack the rows that leave. */
static mb_error staged_begin(mb_halo *h, mb_halo_dir dir, mb_halo_dtype dt, int ncomp,
                             const void *x) {
  MB_CHECK(!h->inflight, MB_ERR_ARG, "a halo exchange is already in flight on this plan");
  MB_CHECK(ncomp >= 1, MB_ERR_ARG, "halo exchange of %d components", ncomp);
  const size_t row = dt_bytes(dt) * (size_t)ncomp;
  const int64_t ns = h->send_offset[h->nneighbors], nr = h->recv_offset[h->nneighbors];
  MB_CALL(grow(&h->send_buf, &h->send_cap, row * (size_t)ns));
  MB_CALL(grow(&h->recv_buf, &h->recv_cap, row * (size_t)nr));
  /* forward: send_buf carries owned rows out, recv_buf takes ghost rows in;
   * reverse: recv_buf carries the ghost rows out, send_buf takes the owners' */
  if (dir == MB_HALO_FORWARD) {
    gather(h, 0, x, row, h->send_buf);
    MB_CALL(mb_halo_post(h, dir, dt, ncomp, h->send_buf, h->recv_buf));
  } else {
    gather(h, 1, x, row, h->recv_buf);
    MB_CALL(mb_halo_post(h, dir, dt, ncomp, h->recv_buf, h->send_buf));
  }
  h->staged = 1;
  return MB_SUCCESS;
}

static mb_error staged_end(mb_halo *h, mb_halo_dir dir, void *x) {
  MB_CHECK(h->inflight == 1 + (int)dir && h->staged, MB_ERR_ARG,
           "halo %s exchange ended without its begin",
           dir == MB_HALO_FORWARD ? "forward" : "reverse");
  const mb_halo_dtype dt = h->cur_dt;
  const int nc = h->cur_ncomp;
  MB_CALL(mb_halo_wait(h));
  if (dir == MB_HALO_FORWARD)
    scatter(h, 1, h->recv_buf, dt_bytes(dt) * (size_t)nc, x);
  else
    add_rows(h, dt, nc, h->send_buf, x);
  return MB_SUCCESS;
}

mb_error mb_halo_forward_begin(mb_halo *h, mb_halo_dtype dt, int ncomp, const void *x) {
  MB_CALL(staged_begin(h, MB_HALO_FORWARD, dt, ncomp, x));
  return MB_SUCCESS;
}

mb_error mb_halo_forward_end(mb_halo *h, void *x) {
  MB_CALL(staged_end(h, MB_HALO_FORWARD, x));
  return MB_SUCCESS;
}

mb_error mb_halo_reverse_begin(mb_halo *h, mb_halo_dtype dt, int ncomp, const void *x) {
  MB_CALL(staged_begin(h, MB_HALO_REVERSE, dt, ncomp, x));
  return MB_SUCCESS;
}

mb_error mb_halo_reverse_end(mb_halo *h, void *x) {
  MB_CALL(staged_end(h, MB_HALO_REVERSE, x));
  return MB_SUCCESS;
}

mb_error mb_halo_begin(mb_halo *h, const double *x) {
  MB_CALL(staged_begin(h, MB_HALO_FORWARD, MB_HALO_FLOAT64, h->ncomp, x));
  return MB_SUCCESS;
}

mb_error mb_halo_end(mb_halo *h, double *x) {
  MB_CALL(staged_end(h, MB_HALO_FORWARD, x));
  return MB_SUCCESS;
}

static void index_run(void *p, int64_t q0, int64_t r0, int64_t stride, int64_t len) {
  int64_t *idx = p;
  for (int64_t i = 0; i < len; i++) idx[q0 + i] = r0 + i * stride;
}

/* A box plan's index list of one side, expanded at the first call and kept
 * (the plan is otherwise unchanged, so the accessors keep a const plan). */
static void side_indices(const mb_halo *h, int side, int64_t *n, const int64_t **idx) {
  mb_halo *m = (mb_halo *)h;
  int64_t **list = side ? &m->recv_index : &m->send_index;
  const int64_t rows = side ? h->recv_offset[h->nneighbors] : h->send_offset[h->nneighbors];
  if (h->boxed && !*list) {
    *list = malloc(sizeof(int64_t) * (size_t)(rows + 1));
    if (!*list) {
      mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                   "out of memory for the index list of %lld halo rows", (long long)rows);
      *n = 0;
      *idx = NULL;
      return;
    }
    each_run(h, side, index_run, *list);
  }
  *n = rows;
  *idx = *list;
}

void mb_halo_send_indices(const mb_halo *h, int64_t *n, const int64_t **idx) {
  side_indices(h, 0, n, idx);
}

void mb_halo_recv_indices(const mb_halo *h, int64_t *n, const int64_t **idx) {
  side_indices(h, 1, n, idx);
}

MPI_Comm mb_halo_comm(const mb_halo *h) { return h->comm; }

int mb_halo_ncomp(const mb_halo *h) { return h->ncomp; }

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
  case MB_HALO_IPC: return "ipc";
  }
  return "unknown";
}

/* Seconds of n exchanges with transport t on the slowest rank, from a
 * barrier after the device's earlier work. Collective. */
static mb_error timed_trial(MPI_Comm comm, mb_halo_trial_fn trial, void *ctx, mb_halo_transport t,
                            mb_nccl *nccl, int n, double *seconds) {
  mb_nccl *use = t == MB_HALO_NCCL ? nccl : NULL;
  MB_CALL(trial(ctx, t, use, 0));
  MB_CALL_MPI(MPI_Barrier(comm));
  const double t0 = MPI_Wtime();
  MB_CALL(trial(ctx, t, use, n));
  double mine = MPI_Wtime() - t0;
  MB_CALL_MPI(MPI_Allreduce(&mine, seconds, 1, MPI_DOUBLE, MPI_MAX, comm));
  return MB_SUCCESS;
}

mb_error mb_halo_choose_transport(MPI_Comm comm, mb_halo_transport want, const char *what,
                                  mb_halo_trial_fn trial, void *ctx, mb_nccl **nccl,
                                  mb_halo_transport *chosen) {
  int rank, size;
  MB_CALL_MPI(MPI_Comm_rank(comm, &rank));
  MB_CALL_MPI(MPI_Comm_size(comm, &size));
  *chosen = MB_HALO_MPI;
  if (want == MB_HALO_MPI || size == 1) return MB_SUCCESS;
  if (want == MB_HALO_IPC) { /* the first exchange sets IPC up (agreed) or refuses it */
    double setup;
    MB_CALL(timed_trial(comm, trial, ctx, MB_HALO_IPC, NULL, 1, &setup));
    if (rank == 0) mb_log(MB_LOG_VERBOSE, "[halo] %s: IPC set up in %.1f ms", what, 1e3 * setup);
    *chosen = MB_HALO_IPC;
    return MB_SUCCESS;
  }
  int have_nccl = 1;
  if (!*nccl) {
    mb_error e = mb_nccl_create(comm, nccl); /* agreed over comm */
    if (e) {
      *nccl = NULL;
      if (want == MB_HALO_NCCL) MB_CALL(e);
      if (rank == 0) mb_log(MB_LOG_VERBOSE, "[halo] %s: no NCCL: %s", what, mb_error_message());
      mb_error_clear();
      have_nccl = 0;
    }
  }
  if (have_nccl) {
    double connect; /* NCCL connects peers at the first exchange: before timing anything */
    MB_CALL(timed_trial(comm, trial, ctx, MB_HALO_NCCL, *nccl, 1, &connect));
    if (rank == 0)
      mb_log(MB_LOG_VERBOSE, "[halo] %s: NCCL connected in %.1f ms", what, 1e3 * connect);
    if (want == MB_HALO_NCCL) {
      *chosen = MB_HALO_NCCL;
      return MB_SUCCESS;
    }
  }
  /* auto: IPC where it can be set up (its refusal is agreed over comm) */
  double setup;
  const int have_ipc = timed_trial(comm, trial, ctx, MB_HALO_IPC, NULL, 1, &setup) == MB_SUCCESS;
  if (rank == 0) {
    if (have_ipc) mb_log(MB_LOG_VERBOSE, "[halo] %s: IPC set up in %.1f ms", what, 1e3 * setup);
    else mb_log(MB_LOG_VERBOSE, "[halo] %s: no IPC: %s", what, mb_error_message());
  }
  mb_error_clear();
  if (!have_nccl && !have_ipc) return MB_SUCCESS; /* MPI, nothing to compare */
  double t[4] = {0, 0, 0, 0}; /* by mb_halo_transport */
  if (have_nccl)
    MB_CALL(timed_trial(comm, trial, ctx, MB_HALO_NCCL, *nccl, MB_HALO_AUTO_TRIALS, &t[MB_HALO_NCCL]));
  MB_CALL(timed_trial(comm, trial, ctx, MB_HALO_MPI, *nccl, MB_HALO_AUTO_TRIALS, &t[MB_HALO_MPI]));
  if (have_ipc)
    MB_CALL(timed_trial(comm, trial, ctx, MB_HALO_IPC, NULL, MB_HALO_AUTO_TRIALS, &t[MB_HALO_IPC]));
  /* the fastest; a tie keeps the one that needs less (MPI, then NCCL) */
  if (have_nccl && t[MB_HALO_NCCL] < t[MB_HALO_MPI]) *chosen = MB_HALO_NCCL;
  if (have_ipc && t[MB_HALO_IPC] < t[*chosen]) *chosen = MB_HALO_IPC;
  if (rank == 0) {
    char nccl_ms[32] = "-", ipc_ms[32] = "-";
    if (have_nccl) snprintf(nccl_ms, sizeof nccl_ms, "%.3f ms", 1e3 * t[MB_HALO_NCCL]);
    if (have_ipc) snprintf(ipc_ms, sizeof ipc_ms, "%.3f ms", 1e3 * t[MB_HALO_IPC]);
    mb_log(MB_LOG_VERBOSE,
           "[halo] %s: %d trial exchanges take %s with NCCL, %.3f ms with MPI, %s with IPC: "
           "using %s", what, (int)MB_HALO_AUTO_TRIALS, nccl_ms, 1e3 * t[MB_HALO_MPI], ipc_ms,
           mb_halo_transport_name(*chosen));
  }
  return MB_SUCCESS;
}
