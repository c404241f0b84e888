/* meshbatch: a triangulation split over the ranks by its triangles (see
 * mb_faces.h). */
#include "mb_faces.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mb_adjacency.h"
#include "mb_mpi.h"
#include "mb_partition.h"

mb_error mb_block_starts(MPI_Comm comm, int64_t start, int64_t n, int64_t *starts) {
  int size;
  MB_CALL_MPI(MPI_Comm_size(comm, &size));
  MB_CALL_MPI(MPI_Allgather(&start, 1, MPI_INT64_T, starts, 1, MPI_INT64_T, comm));
  int64_t end = start + n;
  MB_CALL_MPI(MPI_Bcast(&end, 1, MPI_INT64_T, size - 1, comm));
  starts[size] = end;
  for (int r = 0; r < size; r++)
    MB_CHECK(starts[r] <= starts[r + 1], MB_ERR_ARG,
             "blocks of rows not in rank order (rank %d starts at %lld, rank %d at %lld)", r,
             (long long)starts[r], r + 1, (long long)starts[r + 1]);
  return MB_SUCCESS;
}

int mb_block_owner(const int64_t *starts, int size, int64_t g) {
  int lo = 0, hi = size - 1; /* the last r with starts[r] <= g (empty blocks skipped) */
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (starts[mid] <= g) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

mb_error mb_records_exchange(MPI_Comm comm, int64_t n, const int *dest, size_t width,
                             const void *recs, int64_t *nrecv, void **recv, int **from,
                             double *bytes) {
  int size, me;
  MB_CALL_MPI(MPI_Comm_size(comm, &size));
  MB_CALL_MPI(MPI_Comm_rank(comm, &me));
  mb_error err = MB_SUCCESS;
  /* counts and displacements in records of one contiguous datatype, so a
   * message may exceed INT_MAX bytes (up to INT_MAX records in all). A
   * rank's records to itself never enter MPI nor the send buffer: they are
   * copied once, straight to their place in the receive buffer. */
  MPI_Datatype rec = MPI_DATATYPE_NULL;
  int *scount = calloc((size_t)size, sizeof *scount), *rcount = calloc((size_t)size, sizeof *rcount);
  int *sdispl = calloc((size_t)size + 1, sizeof *sdispl), *rdispl = calloc((size_t)size + 1, sizeof *rdispl);
  int64_t *pos = calloc((size_t)size + 1, sizeof *pos);
  char *sbuf = NULL, *rbuf = NULL;
  int *src = NULL;
  int bad = !scount || !rcount || !sdispl || !rdispl || !pos || width > INT_MAX;
  for (int64_t i = 0; !bad && i < n; i++) pos[dest[i]]++;
  const int64_t nself = bad ? 0 : pos[me];
  int64_t total = 0;
  for (int r = 0; !bad && r < size; r++) {
    int64_t c = r == me ? 0 : pos[r];
    pos[r] = total;
    total += c;
    if (total > INT_MAX || nself > INT_MAX) bad = 2;
    else {
      scount[r] = (int)c;
      sdispl[r] = (int)pos[r];
    }
  }
  if (!bad) {
    sbuf = malloc(width * (size_t)(total ? total : 1));
    if (!sbuf) bad = 1;
  }
  MB_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm));
  if (bad) {
    err = bad == 2 ? mb_error_set(MB_ERR_ARG, __FILE__, __LINE__, __func__,
                                  "an exchange of more than INT_MAX records")
                   : mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                                  "out of memory for an exchange of %lld records", (long long)n);
    goto done;
  }
  for (int64_t i = 0; i < n; i++)
    if (dest[i] != me)
      memcpy(sbuf + width * (size_t)pos[dest[i]]++, (const char *)recs + width * (size_t)i, width);
  MB_CALL_MPI_GOTO(err, done, MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, comm));
  rcount[me] = (int)nself; /* not through MPI: rcount[me] was 0 */
  int64_t rtotal = 0;
  for (int r = 0; r < size; r++) {
    if (rtotal + rcount[r] > INT_MAX) bad = 2;
    rdispl[r] = (int)rtotal;
    rtotal += rcount[r];
  }
  rbuf = malloc(width * (size_t)(rtotal ? rtotal : 1));
  if (from) src = malloc(sizeof *src * (size_t)(rtotal + 1));
  if (!rbuf || (from && !src)) bad = bad ? bad : 1;
  MB_CALL_MPI_GOTO(err, done, MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm));
  if (bad) {
    err = mb_error_set(bad == 2 ? MB_ERR_ARG : MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                       "cannot receive an exchange of %lld records", (long long)rtotal);
    goto done;
  }
  { /* this rank's own records, in their send order */
    char *to = rbuf + width * (size_t)rdispl[me];
    for (int64_t i = 0, k = 0; i < n && k < nself; i++)
      if (dest[i] == me) memcpy(to + width * (size_t)k++, (const char *)recs + width * (size_t)i, width);
  }
  rcount[me] = 0;
  MB_CALL_MPI_GOTO(err, done, MPI_Type_contiguous((int)width, MPI_BYTE, &rec));
  MB_CALL_MPI_GOTO(err, done, MPI_Type_commit(&rec));
  MB_CALL_MPI_GOTO(err, done, MPI_Alltoallv(sbuf, scount, sdispl, rec, rbuf, rcount, rdispl, rec,
                                            comm));
  rcount[me] = (int)nself;
  *nrecv = rtotal;
  if (src)
    for (int r = 0; r < size; r++)
      for (int64_t k = rdispl[r]; k < (int64_t)rdispl[r] + rcount[r]; k++) src[k] = r;
  if (bytes) /* to and from other ranks: a rank's records to itself are copied */
    *bytes += (double)width * (double)((n - nself) + (rtotal - nself));
  *recv = rbuf;
  rbuf = NULL;
  if (from) {
    *from = src;
    src = NULL;
  }
done:
  if (rec != MPI_DATATYPE_NULL) MPI_Type_free(&rec);
  free(scount); free(rcount); free(sdispl); free(rdispl); free(pos);
  free(sbuf); free(rbuf); free(src);
  return err;
}

mb_error mb_block_fetch(MPI_Comm comm, const int64_t *starts, size_t width, const void *table,
                        int64_t n, const int64_t *ids, void *out, double *bytes) {
  int size, rank;
  MB_CALL_MPI(MPI_Comm_size(comm, &size));
  MB_CALL_MPI(MPI_Comm_rank(comm, &rank));
  typedef struct { int64_t row, at; } ask;
  mb_error err = MB_SUCCESS;
  ask *asks = malloc(sizeof *asks * (size_t)(n ? n : 1)), *got = NULL;
  int *dest = malloc(sizeof *dest * (size_t)(n ? n : 1)), *from = NULL;
  char *answer = NULL, *back = NULL;
  int64_t ngot = 0, nback = 0;
  int bad = !asks || !dest ? 1 : 0;
  int64_t nask = 0; /* rows of other ranks; this rank's are copied at once */
  for (int64_t i = 0; !bad && i < n; i++) {
    if (ids[i] < 0 || ids[i] >= starts[size]) {
      bad = 2;
    } else if (ids[i] >= starts[rank] && ids[i] < starts[rank + 1]) {
      memcpy((char *)out + width * (size_t)i,
             (const char *)table + width * (size_t)(ids[i] - starts[rank]), width);
    } else {
      asks[nask] = (ask){ids[i], i};
      dest[nask++] = mb_block_owner(starts, size, ids[i]);
    }
  }
  MB_CALL_MPI_GOTO(err, done, MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm));
  if (bad) {
    err = mb_error_set(bad == 2 ? MB_ERR_ARG : MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                       bad == 2 ? "a row to fetch lies outside the table"
                                : "out of memory for a fetch of rows");
    goto done;
  }
  MB_CALL_GOTO(err, done, mb_records_exchange(comm, nask, dest, sizeof *asks, asks, &ngot,
                                              (void **)&got, &from, bytes));
  /* answer: the position it was asked for, then the row */
  const size_t w = sizeof(int64_t) + width;
  answer = malloc(w * (size_t)(ngot ? ngot : 1));
  bad = !answer;
  MB_CALL_MPI_GOTO(err, done, MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm));
  MB_CHECK_GOTO(err, done, !bad, MB_ERR_MEMORY, "out of memory for %lld rows", (long long)ngot);
  for (int64_t i = 0; i < ngot; i++) {
    memcpy(answer + w * (size_t)i, &got[i].at, sizeof(int64_t));
    memcpy(answer + w * (size_t)i + sizeof(int64_t),
           (const char *)table + width * (size_t)(got[i].row - starts[rank]), width);
  }
  MB_CALL_GOTO(err, done, mb_records_exchange(comm, ngot, from, w, answer, &nback,
                                              (void **)&back, NULL, bytes));
  for (int64_t i = 0; i < nback; i++) {
    int64_t at;
    memcpy(&at, back + w * (size_t)i, sizeof at);
    memcpy((char *)out + width * (size_t)at, back + w * (size_t)i + sizeof(int64_t), width);
  }
done:
  free(asks); free(got); free(dest); free(from); free(answer); free(back);
  return err;
}

/* An edge of a triangle sent to its rendezvous rank. */
typedef struct edge_rec {
  int64_t lo, hi; /* vertex pair, lo < hi */
  int64_t he;     /* 3 * face row + k */
} edge_rec;

/* A half-edge in its rendezvous vertex's bucket: the larger vertex, the
 * global half-edge id, and where it came from (x < nh: this rank's
 * half-edge x; else record x - nh of those received). */
typedef struct edge_key {
  int64_t hi, he, x;
} edge_key;

static int cmp_edge_key(const void *a, const void *b) {
  const edge_key *p = a, *q = b;
  if (p->hi != q->hi) return p->hi < q->hi ? -1 : 1;
  return (p->he > q->he) - (p->he < q->he);
}

mb_error mb_faces_dual(MPI_Comm comm, const mb_mesh_slab *slab, const int64_t *vstarts,
                       int64_t *nbr, double *bytes) {
  int size, rank;
  MB_CALL_MPI(MPI_Comm_size(comm, &size));
  MB_CALL_MPI(MPI_Comm_rank(comm, &rank));
  const mb_mesh *m = slab->rows;
  const int64_t nf = m->nf, nh = 3 * nf, h0 = 3 * slab->face_start;
  const int64_t v0 = vstarts[rank], v1 = vstarts[rank + 1], nblock = v1 - v0;
  const int64_t *fi = m->face_indices;
  mb_error err = MB_SUCCESS;
  edge_rec *e = NULL, *got = NULL;
  int *dest = NULL, *from = NULL;
  int64_t (*reply)[2] = NULL, (*back)[2] = NULL;
  int64_t *start = NULL, *entry = NULL;
  edge_key *key = NULL;
  int64_t ngot = 0, nback = 0, nonmanifold = INT64_MAX, nkey = 0;
  /* Half-edges whose smaller vertex lies in this rank's block are matched
   * here from the face rows, with no record; only the others travel, to
   * the rank holding their smaller vertex. Every buffer is sized by this
   * rank's rows, its block and what it receives. */
  int64_t nsend = 0;
  for (int64_t h = 0; h < nh; h++) {
    int64_t a = fi[h], b = fi[h - h % 3 + (h % 3 + 1) % 3], lo = a < b ? a : b;
    nsend += lo < v0 || lo >= v1;
  }
  e = malloc(sizeof *e * (size_t)(nsend ? nsend : 1));
  dest = malloc(sizeof *dest * (size_t)(nsend ? nsend : 1));
  int bad = !e || !dest;
  for (int64_t h = 0, q = 0; !bad && h < nh; h++) {
    int64_t a = fi[h], b = fi[h - h % 3 + (h % 3 + 1) % 3], lo = a < b ? a : b;
    if (lo >= v0 && lo < v1) continue;
    e[q] = (edge_rec){lo, a < b ? b : a, h0 + h};
    dest[q++] = mb_block_owner(vstarts, size, lo);
  }
  MB_CALL_MPI_GOTO(err, done, MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm));
  MB_CHECK_GOTO(err, done, !bad, MB_ERR_MEMORY, "out of memory for the dual graph");
  MB_CALL_GOTO(err, done, mb_records_exchange(comm, nsend, dest, sizeof *e, e, &ngot,
                                              (void **)&got, &from, bytes));
  free(e);
  e = NULL;
  free(dest);
  dest = NULL;
  /* buckets by the smaller vertex (a counting sort over this rank's block);
   * within each, sorted by (larger vertex, half-edge): pairs are neighbours */
  start = calloc((size_t)nblock + 2, sizeof *start);
  entry = malloc(sizeof *entry * (size_t)(nh - nsend + ngot + 1));
  reply = malloc(sizeof *reply * (size_t)(ngot ? ngot : 1));
  bad = !start || !entry || !reply;
  if (!bad) {
    for (int64_t h = 0; h < nh; h++) {
      int64_t a = fi[h], b = fi[h - h % 3 + (h % 3 + 1) % 3], lo = a < b ? a : b;
      if (lo >= v0 && lo < v1) start[lo - v0 + 1]++;
    }
    for (int64_t i = 0; i < ngot; i++) start[got[i].lo - v0 + 1]++;
    for (int64_t v = 0; v < nblock; v++) start[v + 1] += start[v];
    for (int64_t h = 0; h < nh; h++) {
      int64_t a = fi[h], b = fi[h - h % 3 + (h % 3 + 1) % 3], lo = a < b ? a : b;
      if (lo >= v0 && lo < v1) entry[start[lo - v0]++] = h;
    }
    for (int64_t i = 0; i < ngot; i++) entry[start[got[i].lo - v0]++] = nh + i;
    /* now start[v] ends vertex v's bucket */
  }
  for (int64_t v = 0; !bad && v < nblock; v++) {
    int64_t b = v ? start[v - 1] : 0, en = start[v], len = en - b;
    if (len > nkey) {
      free(key);
      nkey = 2 * len;
      key = malloc(sizeof *key * (size_t)nkey);
      if (!key) {
        bad = 1;
        break;
      }
    }
    for (int64_t t = 0; t < len; t++) {
      int64_t x = entry[b + t];
      if (x < nh) {
        int64_t a = fi[x], c = fi[x - x % 3 + (x % 3 + 1) % 3];
        key[t] = (edge_key){a < c ? c : a, h0 + x, x};
      } else {
        key[t] = (edge_key){got[x - nh].hi, got[x - nh].he, x};
      }
    }
    if (len > 16) {
      qsort(key, (size_t)len, sizeof *key, cmp_edge_key);
    } else {
      for (int64_t i = 1; i < len; i++) { /* a vertex's few edges */
        edge_key y = key[i];
        int64_t j = i;
        for (; j > 0 && cmp_edge_key(&key[j - 1], &y) > 0; j--) key[j] = key[j - 1];
        key[j] = y;
      }
    }
    for (int64_t i = 0; i < len;) {
      int64_t j = i;
      while (j < len && key[j].hi == key[i].hi) j++;
      if (j - i > 2) /* name the triangle of the smallest half-edge */
        for (int64_t q = i; q < j; q++)
          if (key[q].he / 3 < nonmanifold) nonmanifold = key[q].he / 3;
      for (int64_t q = i; q < j; q++) {
        int64_t other = j - i == 2 ? key[q == i ? i + 1 : i].he / 3 : -1;
        int64_t x = key[q].x;
        if (x < nh) {
          nbr[x] = other;
        } else {
          reply[x - nh][0] = got[x - nh].he;
          reply[x - nh][1] = other;
        }
      }
      i = j;
    }
  }
  free(start);
  start = NULL;
  free(entry);
  entry = NULL;
  MB_CALL_MPI_GOTO(err, done, MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm));
  MB_CHECK_GOTO(err, done, !bad, MB_ERR_MEMORY, "out of memory for the dual graph");
  MB_CALL_MPI_GOTO(err, done, MPI_Allreduce(MPI_IN_PLACE, &nonmanifold, 1, MPI_INT64_T, MPI_MIN,
                                            comm));
  MB_CHECK_GOTO(err, done, nonmanifold == INT64_MAX, MB_ERR_FORMAT,
                "mesh '%s': an edge of triangle %lld (0-based) is shared by more than two "
                "triangles; not a planar manifold triangulation",
                m->name ? m->name : "", (long long)nonmanifold);
  MB_CALL_GOTO(err, done, mb_records_exchange(comm, ngot, from, sizeof *reply, reply, &nback,
                                              (void **)&back, NULL, bytes));
  for (int64_t i = 0; i < nback; i++) nbr[back[i][0] - h0] = back[i][1];
done:
  free(e); free(got); free(dest); free(from); free(reply); free(back); free(start); free(entry);
  free(key);
  return err;
}

/* Relabel the parts so that each rank keeps as many of its block's faces
 * as it can (greedy on the overlap counts, largest first): the partition's
 * labels are arbitrary, and a good match moves fewer faces. Collective. */
static mb_error match_parts_to_blocks(MPI_Comm comm, int size, int64_t nlocal, int32_t *part) {
  int rank;
  MB_CALL_MPI(MPI_Comm_rank(comm, &rank));
  int64_t *overlap = calloc((size_t)size * (size_t)size, sizeof *overlap); /* [part][rank] */
  int32_t *label = malloc(sizeof *label * (size_t)size);
  char *used_part = calloc((size_t)size, 1), *used_rank = calloc((size_t)size, 1);
  int bad = !overlap || !label || !used_part || !used_rank;
  MB_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm));
  if (bad) {
    free(overlap); free(label); free(used_part); free(used_rank);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for %d parts", size);
  }
  for (int64_t f = 0; f < nlocal; f++) overlap[(size_t)part[f] * (size_t)size + (size_t)rank]++;
  mb_error err = MB_SUCCESS;
  const int rc = MPI_Allreduce(MPI_IN_PLACE, overlap, size * size, MPI_INT64_T, MPI_SUM, comm);
  if (rc != MPI_SUCCESS)
    err = mb_error_mpi_failed(rc, __FILE__, __LINE__, __func__, "MPI_Allreduce(overlap)");
  for (int k = 0; !err && k < size; k++) { /* the same on every rank: deterministic */
    int64_t best = -1;
    int bp = 0, br = 0;
    for (int p = 0; p < size; p++)
      for (int r = 0; !used_part[p] && r < size; r++)
        if (!used_rank[r] && overlap[(size_t)p * (size_t)size + (size_t)r] > best) {
          best = overlap[(size_t)p * (size_t)size + (size_t)r];
          bp = p;
          br = r;
        }
    used_part[bp] = used_rank[br] = 1;
    label[bp] = br;
  }
  for (int64_t f = 0; !err && f < nlocal; f++) part[f] = label[part[f]];
  free(overlap); free(label); free(used_part); free(used_rank);
  return err;
}

mb_error mb_faces_partition(MPI_Comm comm, const int64_t *fstarts, const int64_t *nbr,
                            mb_partitioner partitioner, int32_t *part, double *bytes) {
  int size, rank;
  MB_CALL_MPI(MPI_Comm_size(comm, &size));
  MB_CALL_MPI(MPI_Comm_rank(comm, &rank));
  const int64_t nlocal = fstarts[rank + 1] - fstarts[rank], ntotal = fstarts[size];
  if (partitioner == MB_PARTITIONER_BLOCKS) {
    for (int64_t f = 0; f < nlocal; f++) part[f] = rank;
    return MB_SUCCESS;
  }
  const int parmetis = partitioner == MB_PARTITIONER_PARMETIS;
  mb_error err = MB_SUCCESS;
  int64_t *xadj = malloc(sizeof *xadj * (size_t)(nlocal + 1));
  int64_t *adjncy = malloc(sizeof *adjncy * (size_t)(3 * nlocal + 1));
  int bad = !xadj || !adjncy;
  for (int64_t f = 0, n = 0; !bad && f < nlocal; f++) {
    xadj[f] = n;
    for (int k = 0; k < 3; k++)
      if (nbr[3 * f + k] >= 0) adjncy[n++] = nbr[3 * f + k];
    xadj[f + 1] = n;
  }
  if (!bad && nlocal == 0) xadj[0] = 0;
  MB_CALL_MPI_GOTO(err, done, MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm));
  MB_CHECK_GOTO(err, done, !bad, MB_ERR_MEMORY, "out of memory for the dual graph");
  if (parmetis) {
    err = mb_partition_parmetis(comm, fstarts, xadj, adjncy, size, part);
    if (!err) err = match_parts_to_blocks(comm, size, nlocal, part);
    goto done;
  }
  /* METIS on rank 0: gather the rows (degree per face, then neighbours) */
  int *cnt = NULL, *displ = NULL, *fcnt = NULL, *fdispl = NULL;
  int64_t *deg = malloc(sizeof *deg * (size_t)(nlocal + 1)), *all_deg = NULL, *all_adj = NULL;
  int32_t *all_part = NULL;
  mb_adjacency g = {0};
  int nnz_local = (int)xadj[nlocal];
  bad = !deg;
  for (int64_t f = 0; !bad && f < nlocal; f++) deg[f] = xadj[f + 1] - xadj[f];
  if (rank == 0) {
    cnt = calloc((size_t)size, sizeof *cnt);
    displ = calloc((size_t)size, sizeof *displ);
    fcnt = calloc((size_t)size, sizeof *fcnt);
    fdispl = calloc((size_t)size, sizeof *fdispl);
    all_deg = malloc(sizeof *all_deg * (size_t)(ntotal + 1));
    all_part = malloc(sizeof *all_part * (size_t)(ntotal + 1));
    g.row = malloc(sizeof *g.row * (size_t)(ntotal + 1));
    bad = bad || !cnt || !displ || !fcnt || !fdispl || !all_deg || !all_part || !g.row ||
          ntotal > INT_MAX;
  }
  MB_CALL_MPI_GOTO(err, metis_done, MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, comm));
  MB_CHECK_GOTO(err, metis_done, !bad, MB_ERR_MEMORY,
                "out of memory for the dual graph of %lld triangles on rank 0", (long long)ntotal);
  MB_CALL_MPI_GOTO(err, metis_done, MPI_Gather(&nnz_local, 1, MPI_INT, cnt, 1, MPI_INT, 0, comm));
  if (rank == 0) {
    int64_t t = 0;
    for (int r = 0; r < size; r++) {
      fcnt[r] = (int)(fstarts[r + 1] - fstarts[r]);
      fdispl[r] = (int)fstarts[r];
      displ[r] = (int)t;
      t += cnt[r];
    }
    g.nv = ntotal;
    g.nnz = t;
    all_adj = malloc(sizeof *all_adj * (size_t)(t ? t : 1));
    bad = !all_adj || t > INT_MAX;
  }
  MB_CALL_MPI_GOTO(err, metis_done, MPI_Bcast(&bad, 1, MPI_INT, 0, comm));
  MB_CHECK_GOTO(err, metis_done, !bad, MB_ERR_MEMORY, "out of memory for the dual graph on rank 0");
  MB_CALL_MPI_GOTO(err, metis_done, MPI_Gatherv(deg, (int)nlocal, MPI_INT64_T, all_deg, fcnt,
                                                fdispl, MPI_INT64_T, 0, comm));
  MB_CALL_MPI_GOTO(err, metis_done, MPI_Gatherv(adjncy, nnz_local, MPI_INT64_T, all_adj, cnt,
                                                displ, MPI_INT64_T, 0, comm));
  if (bytes) *bytes += 8.0 * (double)(nlocal + nnz_local);
  if (rank == 0) {
    g.row[0] = 0;
    for (int64_t f = 0; f < ntotal; f++) g.row[f + 1] = g.row[f] + all_deg[f];
    g.col = all_adj;
    err = mb_partition_metis(&g, size, all_part);
  }
  MB_CALL_GOTO(err, metis_done, mb_agree(comm, err));
  MB_CALL_MPI_GOTO(err, metis_done, MPI_Scatterv(all_part, fcnt, fdispl, MPI_INT32_T, part,
                                                 (int)nlocal, MPI_INT32_T, 0, comm));
  MB_CALL_GOTO(err, metis_done, match_parts_to_blocks(comm, size, nlocal, part));
metis_done:
  free(cnt); free(displ); free(fcnt); free(fdispl); free(deg); free(all_deg); free(all_adj);
  free(all_part); free(g.row);
done:
  free(xadj);
  free(adjncy);
  return err;
}
