/* meshbatch: a distributed mesh built from slabs, with no rank holding the
 * whole mesh (see mb_distributed.h, mb_distributed_create_from_slab).
 *
 * Vocabulary: the *home* of a global vertex is the rank whose slab holds its
 * row (vtxdist); its *owner* is the rank of its part. Every message below is
 * one MPI_Alltoallv of 8-byte words, so the memory of a rank stays
 * proportional to its slab plus its patch. */
#include "mb_distributed.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mb_log.h"
#include "mb_mpi.h"

#define OOM() mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory")

/* ------------------------------------------------------------ words and messages */

static int64_t word_of(double v) {
  int64_t w;
  memcpy(&w, &v, sizeof w);
  return w;
}

static double double_of(int64_t w) {
  double v;
  memcpy(&v, &w, sizeof v);
  return v;
}

/* Outgoing words grouped by destination rank, filled in two passes over the
 * same loop: first outbox_count for every record, then outbox_open, then
 * outbox_put in the same order. */
typedef struct outbox {
  int size;
  int64_t *count; /* [size] words for each destination */
  int64_t *next;  /* [size] next free word of each destination (after open) */
  int64_t *buf;
} outbox;

static mb_error outbox_init(outbox *ob, int size) {
  *ob = (outbox){.size = size};
  ob->count = calloc((size_t)size, sizeof *ob->count);
  ob->next = calloc((size_t)size, sizeof *ob->next);
  return ob->count && ob->next ? MB_SUCCESS : OOM();
}

static void outbox_count(outbox *ob, int dest, int64_t nwords) { ob->count[dest] += nwords; }

static mb_error outbox_open(outbox *ob) {
  int64_t total = 0;
  for (int r = 0; r < ob->size; r++) {
    ob->next[r] = total;
    total += ob->count[r];
  }
  ob->buf = malloc(sizeof *ob->buf * (size_t)(total ? total : 1));
  return ob->buf ? MB_SUCCESS : OOM();
}

/* Room for nwords words to dest. */
static int64_t *outbox_put(outbox *ob, int dest, int64_t nwords) {
  int64_t *p = ob->buf + ob->next[dest];
  ob->next[dest] += nwords;
  return p;
}

static void outbox_free(outbox *ob) {
  free(ob->count);
  free(ob->next);
  free(ob->buf);
  *ob = (outbox){0};
}

/* A received message set: words from every rank, in rank order. */
typedef struct inbox {
  int64_t *count; /* [size] words from each rank */
  int64_t n;      /* words in all */
  int64_t *buf;
} inbox;

static void inbox_free(inbox *ib) {
  free(ib->count);
  free(ib->buf);
  *ib = (inbox){0};
}

/* Send count[r] words of sbuf (grouped by destination, in rank order) to
 * every rank r. Collective. */
static mb_error exchange(MPI_Comm comm, int size, const int64_t *count, const int64_t *sbuf,
                         inbox *ib) {
  int *sc = calloc((size_t)size, sizeof *sc), *sd = calloc((size_t)size, sizeof *sd);
  int *rc = calloc((size_t)size, sizeof *rc), *rd = calloc((size_t)size, sizeof *rd);
  *ib = (inbox){.count = calloc((size_t)size, sizeof *ib->count)};
  mb_error e = sc && sd && rc && rd && ib->count ? MB_SUCCESS : OOM();
  int64_t soff = 0, roff = 0;
  for (int r = 0; !e && r < size; r++) {
    if (count[r] > INT_MAX || soff > INT_MAX)
      e = mb_error_set(MB_ERR_ARG, __FILE__, __LINE__, __func__,
                       "a message of %lld words is too large for one MPI exchange; "
                       "use more ranks", (long long)(count[r] > soff ? count[r] : soff));
    else {
      sc[r] = (int)count[r];
      sd[r] = (int)soff;
      soff += count[r];
    }
  }
  MB_CALL_GOTO(e, done, mb_agree(comm, e));
  MB_CALL_MPI_GOTO(e, done, MPI_Alltoall(sc, 1, MPI_INT, rc, 1, MPI_INT, comm));
  for (int r = 0; r < size; r++) {
    rd[r] = (int)roff; /* bounded like the sends: checked below */
    ib->count[r] = rc[r];
    roff += rc[r];
  }
  e = roff > INT_MAX ? mb_error_set(MB_ERR_ARG, __FILE__, __LINE__, __func__,
                                    "%lld incoming words are too many for one MPI exchange; "
                                    "use more ranks", (long long)roff)
                     : MB_SUCCESS;
  if (!e && !(ib->buf = malloc(sizeof *ib->buf * (size_t)(roff ? roff : 1)))) e = OOM();
  MB_CALL_GOTO(e, done, mb_agree(comm, e));
  ib->n = roff;
  MB_CALL_MPI_GOTO(e, done,
                   MPI_Alltoallv(sbuf, sc, sd, MPI_INT64_T, ib->buf, rc, rd, MPI_INT64_T, comm));
done:
  free(sc); free(sd); free(rc); free(rd);
  if (e) inbox_free(ib);
  return e;
}

/* ------------------------------------------------------------ sorted id sets */

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Sort ids [n] and drop repeats; returns the new length. */
static int64_t sort_unique(int64_t *ids, int64_t n) {
  qsort(ids, (size_t)n, sizeof *ids, cmp_i64);
  int64_t m = 0;
  for (int64_t i = 0; i < n; i++)
    if (m == 0 || ids[m - 1] != ids[i]) ids[m++] = ids[i];
  return m;
}

/* The last position k in [0, n) with sorted[k] <= x (0 if none): the
 * position of x in a sorted id list that holds it, or the rank whose slab
 * (starting at vtxdist[k]) holds vertex x. */
static int64_t last_at_or_below(const int64_t *sorted, int64_t n, int64_t x) {
  int64_t lo = 0, hi = n;
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    if (sorted[mid] <= x) lo = mid;
    else hi = mid;
  }
  return lo;
}

/* The same over (key, value) pairs [n] sorted by key. */
static int64_t last_at_or_below_pairs(const int64_t *pairs, int64_t n, int64_t x) {
  int64_t lo = 0, hi = n;
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    if (pairs[2 * mid] <= x) lo = mid;
    else hi = mid;
  }
  return lo;
}

static int64_t find_id(const int64_t *ids, int64_t n, int64_t id) {
  return last_at_or_below(ids, n, id);
}

/* Home rank of global vertex g (empty slabs are skipped: the last start <= g wins). */
static int home_of(const int64_t *vtxdist, int size, int64_t g) {
  return (int)last_at_or_below(vtxdist, size, g);
}

/* ------------------------------------------------------------ the steps */

typedef struct slab_build {
  MPI_Comm comm;
  int rank, size;
  const mb_mesh_slab *slab;
  const int64_t *vtxdist;
  int32_t *block_part;   /* [rows->nv] part of every vertex of this rank's slab */
  int64_t nowned;
  int64_t *owned;        /* [nowned] ascending global ids of the vertices this rank owns */
  int64_t nfaces;        /* the patch: every face with a vertex this rank owns, */
  int64_t *face_off;     /* [nfaces + 1] in ascending global face order, */
  int64_t *face_idx;     /* [face_off[nfaces]] global vertex ids */
  int64_t npatch;
  int64_t *patch;        /* [npatch] ascending global ids of the patch's vertices */
  int32_t *patch_part;   /* [npatch] */
  double *patch_xyz;     /* [npatch, 3] */
} slab_build;

static void slab_build_free(slab_build *b) {
  free(b->block_part); free(b->owned); free(b->face_off); free(b->face_idx);
  free(b->patch); free(b->patch_part); free(b->patch_xyz);
}

/* vtxdist from every rank's slab; the slabs must follow one another in rank order. */
static mb_error slab_vtxdist(mb_distributed_mesh *dm, const mb_mesh_slab *slab) {
  int64_t mine[2] = {slab->vertex_start, slab->rows->nv}, *all;
  MB_CALLOC(all, 2 * (size_t)dm->size);
  MB_CALLOC(dm->vtxdist, (size_t)dm->size + 1);
  const int rc = MPI_Allgather(mine, 2, MPI_INT64_T, all, 2, MPI_INT64_T, dm->comm);
  if (rc != MPI_SUCCESS) {
    free(all);
    return mb_error_mpi_failed(rc, __FILE__, __LINE__, __func__, "MPI_Allgather(vertex ranges)");
  }
  int ok = 1;
  for (int r = 0; r < dm->size; r++) {
    ok &= all[2 * r] == dm->vtxdist[r] && all[2 * r + 1] >= 0;
    dm->vtxdist[r + 1] = dm->vtxdist[r] + all[2 * r + 1];
  }
  free(all);
  MB_CHECK(ok && dm->vtxdist[dm->size] == dm->nv, MB_ERR_ARG,
           "the vertex slabs of the ranks do not cover [0, %lld) in rank order",
           (long long)dm->nv);
  return MB_SUCCESS;
}

/* Face f of the slab: its vertices (global ids) and their count. */
static const int64_t *slab_face(const mb_mesh *rows, int64_t f, int64_t *n) {
  *n = rows->face_offsets[f + 1] - rows->face_offsets[f];
  return rows->face_indices + rows->face_offsets[f];
}

static int cmp_pair(const void *a, const void *b) {
  const int64_t *x = a, *y = b;
  if (x[0] != y[0]) return (x[0] > y[0]) - (x[0] < y[0]);
  return (x[1] > y[1]) - (x[1] < y[1]);
}

/* Step 1: the vertex graph (edges of the faces) on the homes, then ParMETIS. */
static mb_error partition_graph(slab_build *b) {
  const mb_mesh *rows = b->slab->rows;
  outbox ob;
  inbox ib = {0};
  int64_t *xadj = NULL, *adjncy = NULL;
  mb_error e = outbox_init(&ob, b->size);
  for (int pass = 0; !e && pass < 2; pass++) {
    if (pass == 1) e = outbox_open(&ob);
    for (int64_t f = 0; !e && f < rows->nf; f++) {
      int64_t n;
      const int64_t *v = slab_face(rows, f, &n);
      for (int64_t k = 0; k < n; k++) {
        const int64_t edge[2][2] = {{v[k], v[(k + 1) % n]}, {v[(k + 1) % n], v[k]}};
        for (int t = 0; t < 2 && edge[0][0] != edge[0][1]; t++) { /* both directions */
          int home = home_of(b->vtxdist, b->size, edge[t][0]);
          if (pass == 0) outbox_count(&ob, home, 2);
          else memcpy(outbox_put(&ob, home, 2), edge[t], sizeof edge[t]);
        }
      }
    }
  }
  MB_CALL_GOTO(e, done, mb_agree(b->comm, e));
  MB_CALL_GOTO(e, done, exchange(b->comm, b->size, ob.count, ob.buf, &ib));
  outbox_free(&ob);
  int64_t npairs = ib.n / 2, first = b->vtxdist[b->rank], nlocal = rows->nv, nnz = 0;
  qsort(ib.buf, (size_t)npairs, 2 * sizeof(int64_t), cmp_pair);
  xadj = calloc((size_t)nlocal + 1, sizeof *xadj);
  adjncy = malloc(sizeof *adjncy * (size_t)(npairs ? npairs : 1));
  b->block_part = malloc(sizeof *b->block_part * (size_t)(nlocal ? nlocal : 1));
  e = xadj && adjncy && b->block_part ? MB_SUCCESS : OOM();
  for (int64_t k = 0; !e && k < npairs; k++) {
    const int64_t *p = ib.buf + 2 * k;
    if (k > 0 && p[0] == p[-2] && p[1] == p[-1]) continue;
    adjncy[nnz++] = p[1];
    xadj[p[0] - first + 1] = nnz;
  }
  for (int64_t i = 0; !e && i < nlocal; i++) /* rows without edges */
    if (xadj[i + 1] < xadj[i]) xadj[i + 1] = xadj[i];
  MB_CALL_GOTO(e, done, mb_agree(b->comm, e));
  e = mb_partition_parmetis(b->comm, b->vtxdist, xadj, adjncy, b->size, b->block_part);
done:
  outbox_free(&ob);
  inbox_free(&ib);
  free(xadj);
  free(adjncy);
  return e;
}

/* Step 2: every home tells the owners which of its vertices they own. */
static mb_error send_ownership(slab_build *b) {
  const int64_t first = b->vtxdist[b->rank], nlocal = b->slab->rows->nv;
  outbox ob;
  inbox ib = {0};
  mb_error e = outbox_init(&ob, b->size);
  for (int64_t i = 0; !e && i < nlocal; i++) outbox_count(&ob, b->block_part[i], 1);
  if (!e) e = outbox_open(&ob);
  for (int64_t i = 0; !e && i < nlocal; i++) *outbox_put(&ob, b->block_part[i], 1) = first + i;
  MB_CALL_GOTO(e, done, mb_agree(b->comm, e));
  MB_CALL_GOTO(e, done, exchange(b->comm, b->size, ob.count, ob.buf, &ib));
  b->nowned = ib.n; /* ascending: homes are in rank order, each in row order */
  b->owned = ib.buf;
  ib.buf = NULL;
done:
  outbox_free(&ob);
  inbox_free(&ib);
  return e;
}

/* Part (and position, when xyz is not NULL) of the vertices ids [n], sorted
 * ascending, asked of their homes. Collective. */
static mb_error fetch_from_homes(slab_build *b, int64_t n, const int64_t *ids, int32_t *part,
                                 double *xyz) {
  const mb_mesh *rows = b->slab->rows;
  const int64_t first = b->vtxdist[b->rank];
  int64_t *count = calloc((size_t)b->size, sizeof *count);
  inbox asked = {0}, answers = {0};
  outbox reply = {0};
  mb_error e = count ? MB_SUCCESS : OOM();
  for (int64_t i = 0; !e && i < n; i++) count[home_of(b->vtxdist, b->size, ids[i])]++;
  MB_CALL_GOTO(e, done, mb_agree(b->comm, e));
  MB_CALL_GOTO(e, done, exchange(b->comm, b->size, count, ids, &asked));
  const int width = xyz ? 4 : 1; /* part, then the position when asked */
  e = outbox_init(&reply, b->size);
  for (int r = 0; !e && r < b->size; r++) outbox_count(&reply, r, width * asked.count[r]);
  if (!e) e = outbox_open(&reply);
  const int64_t *id = asked.buf;
  for (int r = 0; !e && r < b->size; r++)
    for (int64_t k = 0; k < asked.count[r]; k++, id++) {
      int64_t row = *id - first, *w = outbox_put(&reply, r, width);
      w[0] = b->block_part[row];
      for (int c = 1; c < width; c++) w[c] = word_of(rows->xyz[3 * row + c - 1]);
    }
  MB_CALL_GOTO(e, done, mb_agree(b->comm, e));
  MB_CALL_GOTO(e, done, exchange(b->comm, b->size, reply.count, reply.buf, &answers));
  for (int64_t i = 0; i < n; i++) { /* answers come in home order = the order of ids */
    part[i] = (int32_t)answers.buf[width * i];
    for (int c = 1; c < width; c++) xyz[3 * i + c - 1] = double_of(answers.buf[width * i + c]);
  }
done:
  free(count);
  inbox_free(&asked);
  inbox_free(&answers);
  outbox_free(&reply);
  return e;
}

/* The distinct parts of face f's vertices, given the parts of the sorted ids. */
static int face_parts(const int64_t *v, int64_t n, const int64_t *ids, int64_t nids,
                      const int32_t *idpart, int32_t *parts) {
  int np = 0;
  for (int64_t k = 0; k < n; k++) {
    int32_t p = idpart[find_id(ids, nids, v[k])];
    int seen = 0;
    for (int q = 0; q < np; q++) seen |= parts[q] == p;
    if (!seen) parts[np++] = p;
  }
  return np;
}

/* The received faces, in ascending global face id: the patch's faces. */
static mb_error unpack_faces(slab_build *b, const inbox *ib) {
  int64_t nfaces = 0, nidx = 0;
  for (int64_t k = 0; k < ib->n; k += 2 + ib->buf[k + 1]) {
    nfaces++;
    nidx += ib->buf[k + 1];
  }
  int64_t *order = malloc(sizeof *order * 2 * (size_t)(nfaces ? nfaces : 1)); /* (id, word) */
  b->face_off = malloc(sizeof *b->face_off * (size_t)(nfaces + 1));
  b->face_idx = malloc(sizeof *b->face_idx * (size_t)(nidx ? nidx : 1));
  if (!order || !b->face_off || !b->face_idx) {
    free(order);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for %lld faces", (long long)nfaces);
  }
  for (int64_t k = 0, f = 0; k < ib->n; k += 2 + ib->buf[k + 1], f++) {
    order[2 * f] = ib->buf[k];
    order[2 * f + 1] = k;
  }
  qsort(order, (size_t)nfaces, 2 * sizeof *order, cmp_pair); /* usually sorted already */
  b->nfaces = nfaces;
  b->face_off[0] = 0;
  for (int64_t f = 0; f < nfaces; f++) {
    const int64_t *w = ib->buf + order[2 * f + 1];
    memcpy(b->face_idx + b->face_off[f], w + 2, sizeof *w * (size_t)w[1]);
    b->face_off[f + 1] = b->face_off[f] + w[1];
  }
  free(order);
  return MB_SUCCESS;
}

/* Step 3: every face goes to the owners of its vertices, as words
 * (global face id, vertex count, vertex ids...). */
static mb_error migrate_faces(slab_build *b) {
  const mb_mesh *rows = b->slab->rows;
  const int64_t nidx = rows->face_offsets[rows->nf];
  int64_t *ids = malloc(sizeof *ids * (size_t)(nidx ? nidx : 1)), maxdeg = 0;
  int32_t *idpart = malloc(sizeof *idpart * (size_t)(nidx ? nidx : 1)), *parts = NULL;
  outbox ob = {0};
  inbox ib = {0};
  mb_error e = ids && idpart ? MB_SUCCESS : OOM();
  int64_t nids = 0;
  if (!e) {
    memcpy(ids, rows->face_indices, sizeof *ids * (size_t)nidx);
    nids = sort_unique(ids, nidx);
  }
  MB_CALL_GOTO(e, done, mb_agree(b->comm, e));
  MB_CALL_GOTO(e, done, fetch_from_homes(b, nids, ids, idpart, NULL));
  for (int64_t f = 0; f < rows->nf; f++)
    if (rows->face_offsets[f + 1] - rows->face_offsets[f] > maxdeg)
      maxdeg = rows->face_offsets[f + 1] - rows->face_offsets[f];
  parts = malloc(sizeof *parts * (size_t)(maxdeg ? maxdeg : 1));
  e = parts ? outbox_init(&ob, b->size) : OOM();
  for (int pass = 0; !e && pass < 2; pass++) {
    if (pass == 1) e = outbox_open(&ob);
    for (int64_t f = 0; !e && f < rows->nf; f++) {
      int64_t n;
      const int64_t *v = slab_face(rows, f, &n);
      int np = face_parts(v, n, ids, nids, idpart, parts);
      for (int q = 0; q < np; q++) {
        if (pass == 0) { outbox_count(&ob, parts[q], 2 + n); continue; }
        int64_t *w = outbox_put(&ob, parts[q], 2 + n);
        w[0] = b->slab->face_start + f;
        w[1] = n;
        memcpy(w + 2, v, sizeof *v * (size_t)n);
      }
    }
  }
  MB_CALL_GOTO(e, done, mb_agree(b->comm, e));
  MB_CALL_GOTO(e, done, exchange(b->comm, b->size, ob.count, ob.buf, &ib));
  e = unpack_faces(b, &ib);
done:
  free(ids); free(idpart); free(parts);
  outbox_free(&ob);
  inbox_free(&ib);
  return e;
}

/* Step 4: the patch's vertices (owned ones and those of its faces), with
 * their parts and positions from their homes. */
static mb_error gather_patch(slab_build *b) {
  const int64_t n = b->nowned + b->face_off[b->nfaces];
  b->patch = malloc(sizeof *b->patch * (size_t)(n ? n : 1));
  MB_CHECK(b->patch, MB_ERR_MEMORY, "out of memory");
  memcpy(b->patch, b->owned, sizeof *b->patch * (size_t)b->nowned);
  memcpy(b->patch + b->nowned, b->face_idx, sizeof *b->patch * (size_t)b->face_off[b->nfaces]);
  b->npatch = sort_unique(b->patch, n);
  b->patch_part = malloc(sizeof *b->patch_part * (size_t)(b->npatch ? b->npatch : 1));
  b->patch_xyz = malloc(sizeof *b->patch_xyz * 3 * (size_t)(b->npatch ? b->npatch : 1));
  MB_CHECK(b->patch_part && b->patch_xyz, MB_ERR_MEMORY, "out of memory");
  return MB_SUCCESS;
}

/* The patch as a mesh of its own (vertices numbered by rank in b->patch). */
static mb_error patch_mesh(const slab_build *b, mb_mesh **out) {
  mb_mesh *m;
  MB_CALL(mb_mesh_create("patch", b->npatch, b->nfaces, b->face_off[b->nfaces], &m));
  memcpy(m->xyz, b->patch_xyz, sizeof *m->xyz * 3 * (size_t)b->npatch);
  memcpy(m->face_offsets, b->face_off, sizeof *m->face_offsets * (size_t)(b->nfaces + 1));
  for (int64_t k = 0; k < b->face_off[b->nfaces]; k++)
    m->face_indices[k] = find_id(b->patch, b->npatch, b->face_idx[k]);
  *out = m;
  return MB_SUCCESS;
}

/* Step 5: owned/ghost numbering from the patch (RCM order within each
 * class), global ids restored, local positions. Not collective. */
static mb_error build_domain(mb_distributed_mesh *dm, const slab_build *b) {
  mb_mesh *m = NULL;
  mb_adjacency *adj = NULL;
  int64_t *order = malloc(sizeof *order * (size_t)(b->npatch ? b->npatch : 1));
  mb_error e = order ? patch_mesh(b, &m) : OOM();
  if (!e) e = mb_adjacency_build(m, &adj);
  if (!e) e = mb_adjacency_rcm(adj, order);
  if (!e) e = mb_local_domain_build(adj, b->patch_part, dm->rank, 1, order, &dm->domain);
  const mb_local_domain *d = dm->domain;
  if (!e && !(dm->x = malloc(sizeof *dm->x * 3 * (size_t)(d->nowned + d->nghost + 1)))) e = OOM();
  for (int64_t l = 0; !e && l < d->nowned + d->nghost; l++) {
    memcpy(dm->x + 3 * l, b->patch_xyz + 3 * d->global[l], 3 * sizeof(double));
    d->global[l] = b->patch[d->global[l]];
  }
  free(order);
  mb_adjacency_free(adj);
  mb_mesh_free(m);
  return e;
}

/* blocks: every vertex of the slab stays with the rank that read it. */
static mb_error block_partition(slab_build *b) {
  const int64_t nlocal = b->slab->rows->nv;
  b->block_part = malloc(sizeof *b->block_part * (size_t)(nlocal ? nlocal : 1));
  mb_error e = b->block_part ? MB_SUCCESS : OOM();
  for (int64_t i = 0; !e && i < nlocal; i++) b->block_part[i] = b->rank;
  return mb_agree(b->comm, e);
}

mb_error mb_distributed_create_from_slab(MPI_Comm comm, const mb_mesh_slab *slab, int depth,
                                         int blocks, mb_distributed_mesh **out) {
  /* The patch holds the faces around the owned vertices: the 1-ring only. */
  MB_CHECK(depth == 1, MB_ERR_UNSUPPORTED, "partitioner: parmetis builds ghost depth 1 only "
           "(this op needs %d); use partitioner: metis", depth);
  mb_distributed_mesh *dm = calloc(1, sizeof *dm);
  mb_error e = dm ? MB_SUCCESS : OOM();
  MB_CALL(mb_agree(comm, e));
  dm->comm = comm;
  dm->nv = slab->nv;
  MB_CALL_MPI(MPI_Comm_rank(comm, &dm->rank));
  MB_CALL_MPI(MPI_Comm_size(comm, &dm->size));
  slab_build b = {.comm = comm, .rank = dm->rank, .size = dm->size, .slab = slab};
  double t[5];
  MB_CALL_GOTO(e, fail, mb_agree(comm, slab_vtxdist(dm, slab)));
  b.vtxdist = dm->vtxdist;
  t[0] = mb_wtime();
  MB_CALL_GOTO(e, fail, blocks ? block_partition(&b) : partition_graph(&b));
  t[1] = mb_wtime();
  MB_CALL_GOTO(e, fail, send_ownership(&b));
  MB_CALL_GOTO(e, fail, migrate_faces(&b));
  MB_CALL_GOTO(e, fail, mb_agree(comm, gather_patch(&b)));
  MB_CALL_GOTO(e, fail, fetch_from_homes(&b, b.npatch, b.patch, b.patch_part, b.patch_xyz));
  t[2] = mb_wtime();
  MB_CALL_GOTO(e, fail, mb_agree(comm, build_domain(dm, &b)));
  t[3] = mb_wtime();
  MB_CALL_GOTO(e, fail, mb_distributed_halo(dm, 3, &dm->halo));
  t[4] = mb_wtime();
  if (dm->rank == 0)
    mb_log(MB_LOG_VERBOSE, "[partition] from slabs: graph + ParMETIS %.3f s, migration %.3f s, "
           "numbering %.3f s, halo plan %.3f s (rank 0)", t[1] - t[0], t[2] - t[1], t[3] - t[2],
           t[4] - t[3]);
  slab_build_free(&b);
  *out = dm;
  return MB_SUCCESS;
fail:
  slab_build_free(&b);
  mb_distributed_free(dm);
  return e;
}

/* Values per vertex row that travel between the domain and the slab:
 * the position, then every per-vertex field in dm order. */
static int row_width(const mb_distributed_mesh *dm) {
  int w = 3;
  for (int k = 0; k < dm->nfields; k++) w += dm->fields[k].ncomp;
  return w;
}

/* Local rows in ascending global id (the order homes answer in). */
static int by_first(const void *x, const void *y) {
  const int64_t *a = x, *b = y;
  return (a[0] > b[0]) - (a[0] < b[0]);
}

/* Every per-vertex field of the slab to the owned and ghost rows. */
static mb_error pull_vertex_fields(mb_distributed_mesh *dm, const mb_mesh_slab *slab) {
  const mb_mesh *rows = slab->rows;
  if (!rows->nfields) return MB_SUCCESS;
  const mb_local_domain *d = dm->domain;
  const int64_t nlocal = d->nowned + d->nghost, first = slab->vertex_start;
  int width = 0;
  for (int k = 0; k < rows->nfields; k++) {
    MB_CHECK(rows->fields[k].dtype == MB_FLOAT64, MB_ERR_UNSUPPORTED,
             "field '%s' is float32; a split by vertices carries float64 fields",
             rows->fields[k].name);
    width += rows->fields[k].ncomp;
  }
  int64_t *pairs = malloc(sizeof *pairs * 2 * (size_t)(nlocal ? nlocal : 1));
  int64_t *ids = malloc(sizeof *ids * (size_t)(nlocal ? nlocal : 1));
  int64_t *count = calloc((size_t)dm->size, sizeof *count);
  inbox asked = {0}, answers = {0};
  outbox reply = {0};
  mb_error e = pairs && ids && count ? MB_SUCCESS : OOM();
  for (int64_t l = 0; !e && l < nlocal; l++) {
    pairs[2 * l] = d->global[l];
    pairs[2 * l + 1] = l;
  }
  if (!e) qsort(pairs, (size_t)nlocal, 2 * sizeof *pairs, by_first);
  for (int64_t i = 0; !e && i < nlocal; i++) {
    ids[i] = pairs[2 * i];
    count[home_of(dm->vtxdist, dm->size, ids[i])]++;
  }
  for (int k = 0; !e && k < rows->nfields; k++) {
    mb_field *f = &rows->fields[k];
    double *data = NULL;
    e = mb_distributed_add_field(dm, f->name, f->ncomp, &data);
  }
  MB_CALL_GOTO(e, done, mb_agree(dm->comm, e));
  MB_CALL_GOTO(e, done, exchange(dm->comm, dm->size, count, ids, &asked));
  e = outbox_init(&reply, dm->size);
  for (int r = 0; !e && r < dm->size; r++) outbox_count(&reply, r, width * asked.count[r]);
  if (!e) e = outbox_open(&reply);
  const int64_t *id = asked.buf;
  for (int r = 0; !e && r < dm->size; r++)
    for (int64_t q = 0; q < asked.count[r]; q++, id++) {
      const int64_t row = *id - first;
      int64_t *w = outbox_put(&reply, r, width);
      for (int k = 0; k < rows->nfields; k++)
        for (int c = 0; c < rows->fields[k].ncomp; c++)
          *w++ = word_of(rows->fields[k].data[rows->fields[k].ncomp * row + c]);
    }
  MB_CALL_GOTO(e, done, mb_agree(dm->comm, e));
  MB_CALL_GOTO(e, done, exchange(dm->comm, dm->size, reply.count, reply.buf, &answers));
  for (int64_t i = 0; i < nlocal; i++) { /* answers come in home order = ascending ids */
    const int64_t l = pairs[2 * i + 1], *w = answers.buf + width * i;
    for (int k = 0; k < rows->nfields; k++) {
      mb_field *f = &dm->fields[mb_distributed_field_index(dm, rows->fields[k].name)];
      for (int c = 0; c < f->ncomp; c++) f->data[f->ncomp * l + c] = double_of(*w++);
    }
  }
done:
  free(pairs);
  free(ids);
  free(count);
  inbox_free(&asked);
  inbox_free(&answers);
  outbox_free(&reply);
  return e;
}

/* ------------------------------------------------------------ owned faces */

/* The lowest global vertex id of a face of n corners. */
static int64_t lowest(const int64_t *v, int64_t n) {
  int64_t m = v[0];
  for (int64_t k = 1; k < n; k++)
    if (v[k] < m) m = v[k];
  return m;
}

/* Local index of global vertex g, or -1: a binary search of the (global,
 * local) pairs [n] sorted by global id. */
static int64_t local_of(const int64_t *pairs, int64_t n, int64_t g) {
  if (n == 0) return -1;
  const int64_t k = last_at_or_below_pairs(pairs, n, g);
  return pairs[2 * k] == g ? pairs[2 * k + 1] : -1;
}

/* facedist from every rank's face rows, which must follow one another in
 * rank order and cover the mesh's faces. Collective; errors agreed. */
static mb_error slab_facedist(mb_distributed_mesh *dm, const mb_mesh_slab *slab) {
  int64_t mine[2] = {slab->face_start, slab->rows->nf};
  int64_t *all = calloc(2 * (size_t)dm->size, sizeof *all);
  dm->facedist = calloc((size_t)dm->size + 1, sizeof *dm->facedist);
  mb_error e = all && dm->facedist ? MB_SUCCESS : OOM();
  MB_CALL_GOTO(e, done, mb_agree(dm->comm, e));
  MB_CALL_MPI_GOTO(e, done, MPI_Allgather(mine, 2, MPI_INT64_T, all, 2, MPI_INT64_T, dm->comm));
  int ok = 1;
  for (int r = 0; r < dm->size; r++) {
    ok &= all[2 * r] == dm->facedist[r] && all[2 * r + 1] >= 0;
    dm->facedist[r + 1] = dm->facedist[r] + all[2 * r + 1];
  }
  if (!ok || dm->facedist[dm->size] != slab->nf) /* the same on every rank: agreed */
    e = mb_error_set(MB_ERR_ARG, __FILE__, __LINE__, __func__, "the face slabs of the ranks "
                     "do not cover [0, %lld) in rank order", (long long)slab->nf);
done:
  free(all);
  return e;
}

/* owner [rows->nv]: the owning rank of every vertex row of this rank's
 * slab, told by the owners. Collective; errors agreed. */
static mb_error home_owners(const mb_distributed_mesh *dm, const mb_mesh_slab *slab,
                            int32_t *owner) {
  const mb_local_domain *d = dm->domain;
  int64_t *ids = malloc(sizeof *ids * (size_t)(d->nowned ? d->nowned : 1));
  int64_t *count = calloc((size_t)dm->size, sizeof *count);
  inbox ib = {0};
  mb_error e = ids && count ? MB_SUCCESS : OOM();
  if (!e) {
    memcpy(ids, d->global, sizeof *ids * (size_t)d->nowned);
    qsort(ids, (size_t)d->nowned, sizeof *ids, cmp_i64); /* grouped by home, in rank order */
    for (int64_t l = 0; l < d->nowned; l++) count[home_of(dm->vtxdist, dm->size, ids[l])]++;
  }
  MB_CALL_GOTO(e, done, mb_agree(dm->comm, e));
  MB_CALL_GOTO(e, done, exchange(dm->comm, dm->size, count, ids, &ib));
  for (int64_t r = 0, q = 0; r < dm->size; r++)
    for (int64_t k = 0; k < ib.count[r]; k++, q++) owner[ib.buf[q] - slab->vertex_start] = (int32_t)r;
done:
  free(ids);
  free(count);
  inbox_free(&ib);
  return e;
}

/* Records of face rows (global face id, corner count n, n global vertex
 * ids, width words of field values) from ib, each sent on to the owner of
 * its lowest vertex (owner, indexed by vertex row of this slab).
 * Collective. */
static mb_error forward_faces(const mb_distributed_mesh *dm, const mb_mesh_slab *slab,
                              const int32_t *owner, int width, const inbox *in, inbox *out) {
  outbox ob;
  mb_error e = outbox_init(&ob, dm->size);
  for (int pass = 0; !e && pass < 2; pass++) {
    if (pass == 1) e = outbox_open(&ob);
    for (int64_t q = 0; !e && q < in->n; q += 2 + in->buf[q + 1] + width) {
      const int64_t len = 2 + in->buf[q + 1] + width;
      const int dest = owner[lowest(in->buf + q + 2, in->buf[q + 1]) - slab->vertex_start];
      if (pass == 0) outbox_count(&ob, dest, len);
      else memcpy(outbox_put(&ob, dest, len), in->buf + q, sizeof *in->buf * (size_t)len);
    }
  }
  MB_CALL_GOTO(e, done, mb_agree(dm->comm, e));
  MB_CALL_GOTO(e, done, exchange(dm->comm, dm->size, ob.count, ob.buf, out));
done:
  outbox_free(&ob);
  return e;
}

/* The received face records (see forward_faces) as this rank's owned
 * faces, in ascending global face id, and the values of the carried
 * per-face fields. Not collective. */
static mb_error unpack_owned_faces(mb_distributed_mesh *dm, const mb_mesh *rows, int width,
                                   const inbox *ib) {
  const mb_local_domain *d = dm->domain;
  const int64_t nlocal = d->nowned + d->nghost;
  int64_t nfo = 0, ncorners = 0;
  for (int64_t q = 0; q < ib->n; q += 2 + ib->buf[q + 1] + width) {
    nfo++;
    ncorners += ib->buf[q + 1];
  }
  int64_t *order = malloc(sizeof *order * 2 * (size_t)(nfo ? nfo : 1));     /* (id, word) */
  int64_t *pairs = malloc(sizeof *pairs * 2 * (size_t)(nlocal ? nlocal : 1)); /* (global, local) */
  dm->face_global = malloc(sizeof *dm->face_global * (size_t)(nfo ? nfo : 1));
  dm->face_offsets = malloc(sizeof *dm->face_offsets * (size_t)(nfo + 1));
  dm->face_vertices = malloc(sizeof *dm->face_vertices * (size_t)(ncorners ? ncorners : 1));
  dm->face_corners = malloc(sizeof *dm->face_corners * (size_t)(ncorners ? ncorners : 1));
  mb_error e = order && pairs && dm->face_global && dm->face_offsets && dm->face_vertices &&
                       dm->face_corners
                   ? MB_SUCCESS
                   : OOM();
  dm->nfaces = nfo;
  for (int k = 0; !e && k < rows->nface_fields; k++) { /* the carried fields, zeroed */
    const mb_field *f = &rows->face_fields[k];
    double *data;
    if (f->dtype != MB_FLOAT64 || !f->data) continue;
    e = mb_distributed_add_face_field(dm, f->name, f->ncomp, &data);
  }
  if (e) goto done;
  for (int64_t l = 0; l < nlocal; l++) {
    pairs[2 * l] = d->global[l];
    pairs[2 * l + 1] = l;
  }
  qsort(pairs, (size_t)nlocal, 2 * sizeof *pairs, by_first);
  for (int64_t q = 0, f = 0; q < ib->n; q += 2 + ib->buf[q + 1] + width, f++) {
    order[2 * f] = ib->buf[q];
    order[2 * f + 1] = q;
  }
  qsort(order, (size_t)nfo, 2 * sizeof *order, by_first); /* face ids are distinct */
  dm->face_offsets[0] = 0;
  for (int64_t f = 0; f < nfo; f++) {
    const int64_t *w = ib->buf + order[2 * f + 1], n = w[1];
    dm->face_global[f] = w[0];
    dm->face_offsets[f + 1] = dm->face_offsets[f] + n;
    for (int64_t k = 0; k < n; k++) {
      dm->face_corners[dm->face_offsets[f] + k] = w[2 + k];
      dm->face_vertices[dm->face_offsets[f] + k] = local_of(pairs, nlocal, w[2 + k]);
    }
    w += 2 + n;
    for (int k = 0; k < rows->nface_fields; k++) {
      const mb_field *src = &rows->face_fields[k];
      if (src->dtype != MB_FLOAT64 || !src->data) continue;
      mb_field *fd = &dm->face_fields[mb_distributed_face_field_index(dm, src->name)];
      for (int c = 0; c < fd->ncomp; c++) fd->data[fd->ncomp * f + c] = double_of(*w++);
    }
  }
done:
  free(order);
  free(pairs);
  return e;
}

/* The owned faces and the slab's float64 per-face fields on them (see
 * mb_distributed_pull_fields). Collective; errors agreed. */
static mb_error pull_faces(mb_distributed_mesh *dm, const mb_mesh_slab *slab) {
  const mb_mesh *rows = slab->rows;
  int width = 0;
  for (int k = 0; k < rows->nface_fields; k++)
    if (rows->face_fields[k].dtype == MB_FLOAT64 && rows->face_fields[k].data)
      width += rows->face_fields[k].ncomp;
  MB_CALL(slab_facedist(dm, slab));
  int32_t *owner = malloc(sizeof *owner * (size_t)(rows->nv ? rows->nv : 1));
  outbox ob = {0};
  inbox at_home = {0}, at_owner = {0};
  mb_error e = owner ? MB_SUCCESS : OOM();
  MB_CALL_GOTO(e, done, mb_agree(dm->comm, e));
  MB_CALL_GOTO(e, done, home_owners(dm, slab, owner));
  e = outbox_init(&ob, dm->size);
  for (int pass = 0; !e && pass < 2; pass++) { /* each face row to the home of its lowest vertex */
    if (pass == 1) e = outbox_open(&ob);
    for (int64_t f = 0; !e && f < rows->nf; f++) {
      int64_t n;
      const int64_t *v = slab_face(rows, f, &n);
      const int home = home_of(dm->vtxdist, dm->size, lowest(v, n));
      if (pass == 0) {
        outbox_count(&ob, home, 2 + n + width);
        continue;
      }
      int64_t *w = outbox_put(&ob, home, 2 + n + width);
      *w++ = slab->face_start + f;
      *w++ = n;
      for (int64_t k = 0; k < n; k++) *w++ = v[k];
      for (int k = 0; k < rows->nface_fields; k++) {
        const mb_field *fd = &rows->face_fields[k];
        if (fd->dtype != MB_FLOAT64 || !fd->data) continue;
        for (int c = 0; c < fd->ncomp; c++) *w++ = word_of(fd->data[fd->ncomp * f + c]);
      }
    }
  }
  MB_CALL_GOTO(e, done, mb_agree(dm->comm, e));
  MB_CALL_GOTO(e, done, exchange(dm->comm, dm->size, ob.count, ob.buf, &at_home));
  outbox_free(&ob);
  MB_CALL_GOTO(e, done, forward_faces(dm, slab, owner, width, &at_home, &at_owner));
  inbox_free(&at_home);
  e = mb_agree(dm->comm, unpack_owned_faces(dm, rows, width, &at_owner));
done:
  free(owner);
  outbox_free(&ob);
  inbox_free(&at_home);
  inbox_free(&at_owner);
  return e;
}

mb_error mb_distributed_pull_fields(mb_distributed_mesh *dm, const mb_mesh_slab *slab) {
  const mb_mesh *rows = slab->rows;
  MB_CHECK(slab->vertex_start == dm->vtxdist[dm->rank] &&
               rows->nv == dm->vtxdist[dm->rank + 1] - dm->vtxdist[dm->rank],
           MB_ERR_ARG, "mb_distributed_pull_fields: the slab does not hold rows [%lld, %lld)",
           (long long)dm->vtxdist[dm->rank], (long long)dm->vtxdist[dm->rank + 1]);
  MB_CALL(pull_vertex_fields(dm, slab));
  MB_CALL(pull_faces(dm, slab));
  return MB_SUCCESS;
}

/* The index of the slab's per-face field named like f, made (zeroed) where
 * the op added it (an index: making one may move the others). */
static mb_error slab_face_field(mb_mesh *rows, const mb_field *f, int *out) {
  int k = -1;
  for (int i = 0; i < rows->nface_fields && k < 0; i++)
    if (!strcmp(rows->face_fields[i].name, f->name)) k = i;
  if (k < 0 || rows->face_fields[k].ncomp != f->ncomp ||
      rows->face_fields[k].dtype != MB_FLOAT64 || !rows->face_fields[k].data) {
    double *zero = calloc((size_t)(rows->nf ? rows->nf : 1) * (size_t)f->ncomp, sizeof *zero);
    MB_CHECK(zero, MB_ERR_MEMORY, "out of memory");
    mb_error e = mb_mesh_set_face_field(rows, f->name, f->ncomp, zero);
    free(zero);
    MB_CALL(e);
    for (int i = 0; i < rows->nface_fields; i++)
      if (!strcmp(rows->face_fields[i].name, f->name)) k = i;
  }
  *out = k;
  return MB_SUCCESS;
}

/* Every per-face field of the owned faces to the slab that holds its face
 * rows (see mb_distributed_to_slab). Collective; errors agreed. */
static mb_error push_faces(const mb_distributed_mesh *dm, mb_mesh_slab *slab) {
  int width = 0;
  for (int k = 0; k < dm->nface_fields; k++) width += dm->face_fields[k].ncomp;
  /* every rank must send what the others read: the same fields everywhere */
  int range[2] = {width, -width};
  MB_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, range, 2, MPI_INT, MPI_MAX, dm->comm));
  MB_CHECK(range[0] == -range[1], MB_ERR_ARG, "mb_distributed_to_slab: the ranks hold per-face "
           "fields of %d to %d values per face; an op adds a face field on every rank",
           -range[1], range[0]);
  if (!width) return MB_SUCCESS;
  int *into = calloc((size_t)dm->nface_fields, sizeof *into);
  outbox ob = {0};
  inbox ib = {0};
  mb_error e = into ? outbox_init(&ob, dm->size) : OOM();
  for (int k = 0; !e && k < dm->nface_fields; k++)
    e = slab_face_field(slab->rows, &dm->face_fields[k], &into[k]);
  for (int64_t f = 0; !e && f < dm->nfaces; f++)
    outbox_count(&ob, home_of(dm->facedist, dm->size, dm->face_global[f]), 1 + width);
  if (!e) e = outbox_open(&ob);
  for (int64_t f = 0; !e && f < dm->nfaces; f++) {
    int64_t *w = outbox_put(&ob, home_of(dm->facedist, dm->size, dm->face_global[f]), 1 + width);
    *w++ = dm->face_global[f];
    for (int k = 0; k < dm->nface_fields; k++)
      for (int c = 0; c < dm->face_fields[k].ncomp; c++)
        *w++ = word_of(dm->face_fields[k].data[dm->face_fields[k].ncomp * f + c]);
  }
  MB_CALL_GOTO(e, done, mb_agree(dm->comm, e));
  MB_CALL_GOTO(e, done, exchange(dm->comm, dm->size, ob.count, ob.buf, &ib));
  for (int64_t q = 0; q < ib.n; q += 1 + width) {
    const int64_t row = ib.buf[q] - slab->face_start, *w = ib.buf + q + 1;
    for (int k = 0; k < dm->nface_fields; k++) {
      mb_field *to = &slab->rows->face_fields[into[k]];
      for (int c = 0; c < to->ncomp; c++) to->data[to->ncomp * row + c] = double_of(*w++);
    }
  }
done:
  free(into);
  outbox_free(&ob);
  inbox_free(&ib);
  return e;
}

/* The index of the slab's field named like f, made (zeroed) where the op
 * added it (an index: making one may move the others). */
static mb_error slab_field(mb_mesh *rows, const mb_field *f, int *out) {
  int k = mb_mesh_field_index(rows, f->name);
  if (k < 0 || rows->fields[k].ncomp != f->ncomp || rows->fields[k].dtype != MB_FLOAT64) {
    double *zero = calloc((size_t)(rows->nv ? rows->nv : 1) * (size_t)f->ncomp, sizeof *zero);
    MB_CHECK(zero, MB_ERR_MEMORY, "out of memory");
    mb_error e = mb_mesh_set_field(rows, f->name, f->ncomp, zero);
    free(zero);
    MB_CALL(e);
    k = mb_mesh_field_index(rows, f->name);
  }
  *out = k;
  return MB_SUCCESS;
}

mb_error mb_distributed_to_slab(const mb_distributed_mesh *dm, mb_mesh_slab *slab) {
  MB_CHECK(slab->vertex_start == dm->vtxdist[dm->rank] &&
               slab->rows->nv == dm->vtxdist[dm->rank + 1] - dm->vtxdist[dm->rank],
           MB_ERR_ARG, "mb_distributed_to_slab: the slab does not hold rows [%lld, %lld)",
           (long long)dm->vtxdist[dm->rank], (long long)dm->vtxdist[dm->rank + 1]);
  const mb_local_domain *d = dm->domain;
  const int width = row_width(dm);
  int *into = calloc((size_t)(dm->nfields ? dm->nfields : 1), sizeof *into);
  outbox ob;
  inbox ib = {0};
  mb_error e = into ? outbox_init(&ob, dm->size) : OOM();
  if (!into) ob = (outbox){0};
  for (int k = 0; !e && k < dm->nfields; k++) e = slab_field(slab->rows, &dm->fields[k], &into[k]);
  for (int64_t l = 0; !e && l < d->nowned; l++)
    outbox_count(&ob, home_of(dm->vtxdist, dm->size, d->global[l]), 1 + width);
  if (!e) e = outbox_open(&ob);
  for (int64_t l = 0; !e && l < d->nowned; l++) {
    int64_t *w = outbox_put(&ob, home_of(dm->vtxdist, dm->size, d->global[l]), 1 + width);
    *w++ = d->global[l];
    for (int c = 0; c < 3; c++) *w++ = word_of(dm->x[3 * l + c]);
    for (int k = 0; k < dm->nfields; k++)
      for (int c = 0; c < dm->fields[k].ncomp; c++)
        *w++ = word_of(dm->fields[k].data[dm->fields[k].ncomp * l + c]);
  }
  MB_CALL_GOTO(e, done, mb_agree(dm->comm, e));
  MB_CALL_GOTO(e, done, exchange(dm->comm, dm->size, ob.count, ob.buf, &ib));
  for (int64_t q = 0; q < ib.n; q += 1 + width) {
    const int64_t row = ib.buf[q] - slab->vertex_start, *w = ib.buf + q + 1;
    for (int c = 0; c < 3; c++) slab->rows->xyz[3 * row + c] = double_of(*w++);
    for (int k = 0; k < dm->nfields; k++) {
      mb_field *to = &slab->rows->fields[into[k]];
      for (int c = 0; c < to->ncomp; c++) to->data[to->ncomp * row + c] = double_of(*w++);
    }
  }
  if (dm->facedist) e = push_faces(dm, slab); /* the owned faces were made: every rank has them */
done:
  free(into);
  outbox_free(&ob);
  inbox_free(&ib);
  return e;
}

mb_error mb_distributed_quality(const mb_distributed_mesh *dm, mb_partition_quality *q) {
  const mb_local_domain *d = dm->domain;
  int64_t cut_ends = 0, owned = d->nowned, empty = d->nowned == 0;
  for (int64_t k = 0; k < d->adj->nnz; k++) cut_ends += d->adj->col[k] >= d->nowned;
  *q = (mb_partition_quality){.nparts = dm->size};
  MB_CALL_MPI(MPI_Allreduce(&cut_ends, &q->edge_cut, 1, MPI_INT64_T, MPI_SUM, dm->comm));
  MB_CALL_MPI(MPI_Allreduce(&owned, &q->max_owned, 1, MPI_INT64_T, MPI_MAX, dm->comm));
  MB_CALL_MPI(MPI_Allreduce(&empty, &owned, 1, MPI_INT64_T, MPI_SUM, dm->comm));
  q->edge_cut /= 2; /* every cut edge is seen from both of its owners */
  q->nempty = (int)owned;
  q->mean_owned = (double)dm->nv / dm->size;
  q->imbalance = q->mean_owned > 0 ? (double)q->max_owned / q->mean_owned : 1.0;
  return MB_SUCCESS;
}
