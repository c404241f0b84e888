/* meshbatch: the writer rank of per-mesh runs on several ranks (see
 * mb_runner_private.h and docs/architecture.md, "Per-mesh distribution"): every mesh
 * goes into the output as it finishes, whichever rank computed it.
 *
 * Rank 0 holds the output (mb_collection_writer, HDF5 on MPI_COMM_SELF):
 * HDF5 wants the metadata of a parallel file made collectively, so one
 * process makes all of it. Another rank that finishes a mesh sends rank 0
 * its description (mb_collection_describe: names, sizes, fields,
 * attributes; a few hundred bytes), rank 0 makes the mesh's group and
 * datasets and sends back where each dataset lies in the file (the
 * extents, mb_collection_writer_put_described), and that rank writes the
 * values itself with pwrite into the temporary file, beside the others.
 * Meshes whose datasets are not the holder's own arrays (grids, which are
 * chunked; polygons, whose XDMF arrays rank 0 derives; float32 fields) are
 * sent whole and rank 0 puts them as its own. The file is the one a single
 * rank writes (the same datasets, attributes and index numbering).
 *
 * Everything is point-to-point on a duplicate of the run's communicator,
 * from the main thread of each rank (MPI_THREAD_FUNNELED), and never
 * blocks a rank that computes: the other ranks send and receive without
 * waiting (MPI_Isend, MPI_Irecv, and write a mesh once its extents came),
 * rank 0 serves what has come between its own meshes and while its compute
 * thread runs (runner_writer_poll). At the end of the schedule every other
 * rank finishes its writes and sends "done"; rank 0 serves until every
 * rank has (runner_writer_drain). */
#include "mb_runner_private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mb_collection.h"
#include "mb_log.h"
#include "mb_mpi.h"

enum {
  TAG_REQ = 27301,  /* other rank -> rank 0: a request, its header and payload in one message */
  TAG_DATA = 27302, /* other rank -> rank 0: a whole mesh's arrays, in pieces, after its request */
  TAG_REP = 27303   /* rank 0 -> other rank: the extents of a described mesh */
};
enum { REQ_DESCRIBED = 1, REQ_WHOLE = 2, REQ_DONE = 3 };

/* A wait that leaves the core (MPI's own blocking calls poll it): 0.1 ms
 * between tests, as mb_idle_barrier does, so that ranks waiting for the
 * others do not take the cores of ranks that compute (CPU ranks sharing a
 * node, or the GPU ranks' host threads). */
static void idle(void) {
  const struct timespec ts = {0, 100000};
  nanosleep(&ts, NULL);
}

/* Pieces of at most this many bytes: MPI counts are int. */
#define PIECE ((size_t)1 << 30)

/* One mesh a rank other than 0 has handed on, until its sends (and the
 * reply) complete and, described, its values are written. */
typedef struct wput {
  mb_mesh *m;         /* owned */
  int type;           /* REQ_DESCRIBED or REQ_WHOLE */
  int n;              /* described: its datasets */
  char *payload;      /* the request: header int64[4] (type, payload bytes, n, data pieces),
                         then the description or the whole mesh's shell */
  size_t len;
  int64_t *reply;     /* described: [1 + 2 n]: status, then (offset, bytes) per dataset */
  MPI_Request *req;
  int nreq, cap;
  struct wput *next;
} wput;

struct runner_writer {
  MPI_Comm comm;      /* a duplicate of the run's */
  char tmp[4400];     /* the output's temporary file */
  int fd;             /* other ranks: tmp opened for pwrite, -1 */
  wput *head, *tail;  /* other ranks: the meshes in flight, in the order sent */
  int done;           /* rank 0: ranks that said done */
  int failed;         /* rank 0: a put failed (no more are made); others: rank 0 said so */
  mb_error err;       /* the first error of this rank's writes */
  char msg[1200];     /* and its message */
  int64_t described, whole; /* meshes handed on (other ranks) or served (rank 0) */
};

/* The first error of the writes stays for the drain (a later one is
 * dropped; its message is logged). */
static void keep_error(runner_writer *w, mb_error e) {
  if (!e) return;
  if (!w->err) {
    w->err = e;
    snprintf(w->msg, sizeof w->msg, "%s", mb_error_message());
  } else {
    mb_log(MB_LOG_VERBOSE, "output: %s", mb_error_message());
  }
}

/* ------------------------------------------------------------- open, close */

mb_error runner_writer_open(rank_state *st) {
  runner_writer *w = calloc(1, sizeof *w);
  mb_error e = w ? MB_SUCCESS : mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                                            "out of memory");
  MB_CALL(mb_agree(st->comm, e));
  w->fd = -1;
  w->comm = MPI_COMM_NULL;
  st->wr = w;
  MB_CALL_MPI_AGREED(st->comm, MPI_Comm_dup(st->comm, &w->comm));
  const int rc = MPI_Comm_set_errhandler(w->comm, MPI_ERRORS_RETURN);
  if (rc != MPI_SUCCESS)
    e = mb_error_set_mpi(rc, __FILE__, __LINE__, __func__, "MPI_Comm_set_errhandler");
  if (st->rank == 0) snprintf(w->tmp, sizeof w->tmp, "%s", mb_collection_writer_temporary(st->out));
  MB_CALL_MPI_AGREED(st->comm, MPI_Bcast(w->tmp, (int)sizeof w->tmp, MPI_CHAR, 0, st->comm));
  if (!e && st->rank != 0) {
    w->fd = open(w->tmp, O_WRONLY | O_CLOEXEC);
    if (w->fd < 0)
      e = mb_error_set(MB_ERR_IO, __FILE__, __LINE__, __func__, "rank %d cannot open the "
                       "output's temporary file %s to write its meshes: %s", st->rank, w->tmp,
                       strerror(errno));
  }
  MB_CALL(mb_agree(st->comm, e));
  return MB_SUCCESS;
}

static void wput_free(wput *p) {
  mb_mesh_free(p->m);
  free(p->payload);
  free(p->reply);
  free(p->req);
  free(p);
}

void runner_writer_close(rank_state *st) {
  runner_writer *w = st->wr;
  if (!w) return;
  while (w->head) { /* only after an MPI failure: the requests are abandoned */
    wput *p = w->head;
    w->head = p->next;
    wput_free(p);
  }
  if (w->fd >= 0) close(w->fd);
  if (w->comm != MPI_COMM_NULL) MPI_Comm_free(&w->comm);
  free(w);
  st->wr = NULL;
}

/* ------------------------------------------------------------- other ranks: hand on */

static mb_error add_request(wput *p, MPI_Request r) {
  if (p->nreq == p->cap) {
    const int cap = p->cap ? 2 * p->cap : 8;
    MPI_Request *q = realloc(p->req, sizeof *q * (size_t)cap);
    MB_CHECK(q, MB_ERR_MEMORY, "out of memory");
    p->req = q;
    p->cap = cap;
  }
  p->req[p->nreq++] = r;
  return MB_SUCCESS;
}

/* Send bytes of buf to rank 0 as TAG_DATA pieces (nothing for 0 bytes).
 * Every piece is posted even after a failed one (rank 0 counts on them):
 * the first error is returned. */
static mb_error isend_pieces(runner_writer *w, wput *p, const void *buf, size_t bytes) {
  mb_error e = MB_SUCCESS;
  for (size_t at = 0; at < bytes; at += PIECE) {
    const size_t n = bytes - at < PIECE ? bytes - at : PIECE;
    MPI_Request r = MPI_REQUEST_NULL;
    const int rc = MPI_Isend((const char *)buf + at, (int)n, MPI_BYTE, 0, TAG_DATA, w->comm, &r);
    if (rc != MPI_SUCCESS && !e) e = mb_error_set_mpi(rc, __FILE__, __LINE__, __func__, "MPI_Isend");
    const mb_error ae = r != MPI_REQUEST_NULL ? add_request(p, r) : MB_SUCCESS;
    if (!e) e = ae;
  }
  return e;
}

static size_t pieces_of(size_t bytes) { return (bytes + PIECE - 1) / PIECE; }

/* A growable byte buffer for the shell of a whole mesh. */
typedef struct sbuf {
  char *d;
  size_t len, cap;
  int oom;
} sbuf;

static void sb_put(sbuf *b, const void *x, size_t n) {
  if (b->oom) return;
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 512;
    while (cap < b->len + n) cap *= 2;
    char *d = realloc(b->d, cap);
    if (!d) {
      b->oom = 1;
      return;
    }
    b->d = d;
    b->cap = cap;
  }
  memcpy(b->d + b->len, x, n);
  b->len += n;
}
static void sb_i64(sbuf *b, int64_t v) { sb_put(b, &v, sizeof v); }
static void sb_str(sbuf *b, const char *s) {
  sb_i64(b, (int64_t)strlen(s) + 1);
  sb_put(b, s, strlen(s) + 1);
}

/* The arrays of a whole mesh, in the order they are sent after its shell. */
typedef struct warray {
  void *buf;
  size_t bytes;
} warray;

/* nidx: the vertex indices of its faces (the receiver's offsets are not
 * there yet when it lays out the arrays). */
static int whole_arrays(const mb_mesh *m, int64_t nidx, warray *a, int max) {
  int n = 0;
  const int grid = m->kind == MB_KIND_GRID3D;
  if (!grid) {
    a[n++] = (warray){m->xyz, sizeof(double) * 3 * (size_t)m->nv};
    a[n++] = (warray){m->face_offsets, sizeof(int64_t) * ((size_t)m->nf + 1)};
    a[n++] = (warray){m->face_indices, sizeof(int64_t) * (size_t)nidx};
  }
  for (int f = 0; f < m->nfields && n < max; f++) {
    const mb_field *fd = &m->fields[f];
    const int f32 = fd->dtype == MB_FLOAT32;
    a[n++] = (warray){f32 ? (void *)fd->data32 : (void *)fd->data,
                      (f32 ? sizeof(float) : sizeof(double)) * (size_t)fd->ncomp * (size_t)m->nv};
  }
  for (int f = 0; f < m->nface_fields && n < max; f++)
    a[n++] = (warray){m->face_fields[f].data,
                      sizeof(double) * (size_t)m->face_fields[f].ncomp * (size_t)m->nf};
  return n;
}

/* The shell of a whole mesh: everything but its arrays. */
static void pack_shell(const mb_mesh *m, sbuf *b) {
  sb_str(b, m->name);
  const int64_t head[] = {m->kind, m->index, m->nv, m->nf,
                          m->kind == MB_KIND_GRID3D ? 0 : m->face_offsets[m->nf],
                          m->nfields, m->nface_fields, m->attrs.n,
                          m->shape[0], m->shape[1], m->shape[2]};
  sb_put(b, head, sizeof head);
  sb_put(b, m->origin, sizeof m->origin);
  sb_put(b, m->spacing, sizeof m->spacing);
  for (int f = 0; f < m->nfields; f++) {
    sb_str(b, m->fields[f].name);
    sb_i64(b, m->fields[f].ncomp);
    sb_i64(b, m->fields[f].dtype);
  }
  for (int f = 0; f < m->nface_fields; f++) {
    sb_str(b, m->face_fields[f].name);
    sb_i64(b, m->face_fields[f].ncomp);
  }
  for (int k = 0; k < m->attrs.n; k++) {
    sb_str(b, m->attrs.keys[k]);
    sb_str(b, m->attrs.values[k]);
  }
}

/* The request: header and payload in one buffer (new; NULL when out of memory). */
static char *make_request(int64_t type, const void *payload, size_t len, int64_t n,
                          int64_t pieces) {
  const int64_t hdr[4] = {type, (int64_t)len, n, pieces};
  char *q = malloc(sizeof hdr + len);
  if (!q) return NULL;
  memcpy(q, hdr, sizeof hdr);
  if (len) memcpy(q + sizeof hdr, payload, len);
  return q;
}

/* Hand the mesh on: its description (its holder writes its values once
 * the extents come back), or the mesh whole. Not blocking. Once the
 * request is posted every part of it is posted, whatever fails (rank 0
 * reads them all). */
static mb_error hand_on(rank_state *st, wput *p) {
  runner_writer *w = st->wr;
  char *meta = NULL;
  size_t len = 0;
  int n = 0;
  MB_CALL(mb_collection_describe(p->m, &meta, &len, &n));
  warray *a = NULL;
  int na = 0;
  int64_t pieces = 0;
  if (n > 0) {
    p->type = REQ_DESCRIBED;
    p->n = n;
    p->payload = make_request(REQ_DESCRIBED, meta, len, n, 0);
    free(meta);
    p->reply = malloc(sizeof *p->reply * (size_t)(1 + 2 * n));
  } else {
    sbuf b = {0};
    pack_shell(p->m, &b);
    const int max = 3 + p->m->nfields + p->m->nface_fields;
    a = malloc(sizeof *a * (size_t)max);
    na = a ? whole_arrays(p->m, p->m->kind == MB_KIND_GRID3D ? 0 : p->m->face_offsets[p->m->nf],
                          a, max) : 0;
    for (int k = 0; k < na; k++) pieces += (int64_t)pieces_of(a[k].bytes);
    p->type = REQ_WHOLE;
    p->payload = b.oom || !a ? NULL : make_request(REQ_WHOLE, b.d, b.len, 0, pieces);
    len = b.len;
    free(b.d);
  }
  p->len = sizeof(int64_t) * 4 + len;
  if (!p->payload || (p->type == REQ_DESCRIBED && !p->reply) || p->len > INT32_MAX) {
    free(a);
    MB_FAIL(p->len > INT32_MAX ? MB_ERR_ARG : MB_ERR_MEMORY, "%s",
            p->len > INT32_MAX ? "mesh metadata too large for the writer rank" : "out of memory");
  }
  MPI_Request r;
  if (p->type == REQ_DESCRIBED) {
    MB_CALL_MPI(MPI_Irecv(p->reply, 1 + 2 * n, MPI_INT64_T, 0, TAG_REP, w->comm, &r));
    MB_CALL(add_request(p, r));
  }
  const int rc = MPI_Isend(p->payload, (int)p->len, MPI_BYTE, 0, TAG_REQ, w->comm, &r);
  mb_error e = rc == MPI_SUCCESS ? add_request(p, r)
               : mb_error_set_mpi(rc, __FILE__, __LINE__, __func__, "MPI_Isend(request)");
  for (int k = 0; k < na; k++) { /* after a failed post too: the message may have gone */
    const mb_error pe = isend_pieces(w, p, a[k].buf, a[k].bytes);
    if (!e) e = pe;
  }
  free(a);
  MB_CALL(e);
  if (p->type == REQ_WHOLE) w->whole++; else w->described++;
  return MB_SUCCESS;
}

/* A mesh whose requests completed: write its values at the extents. */
static void complete(rank_state *st, wput *p) {
  runner_writer *w = st->wr;
  if (p->type != REQ_DESCRIBED) return;
  if (p->reply[0] != 0) { /* rank 0 could not make it; it reports why */
    w->failed = 1;
    return;
  }
  if (w->err || w->failed) return;
  mb_collection_extent *ext = malloc(sizeof *ext * (size_t)p->n);
  if (!ext) {
    keep_error(w, mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory"));
    return;
  }
  for (int k = 0; k < p->n; k++)
    ext[k] = (mb_collection_extent){p->reply[1 + 2 * k], p->reply[2 + 2 * k]};
  const double t0 = mb_wtime();
  keep_error(w, mb_collection_write_extents(w->fd, w->tmp, p->m, p->n, ext));
  st->put_s += mb_wtime() - t0;
  free(ext);
}

/* Other ranks: write every mesh whose requests completed (wait: wait for
 * all of them, idle between tests). A failed test drops that mesh (its
 * error is returned, the others go on). */
static mb_error progress_sent(rank_state *st, int wait) {
  runner_writer *w = st->wr;
  wput **link = &w->head, *last = NULL;
  mb_error e = MB_SUCCESS;
  while (*link) {
    wput *p = *link;
    int flag = 1, rc;
    const double t0 = mb_wtime();
    rc = MPI_Testall(p->nreq, p->req, &flag, MPI_STATUSES_IGNORE);
    while (wait && rc == MPI_SUCCESS && !flag) { /* idle: the core goes to the ranks computing */
      idle();
      rc = MPI_Testall(p->nreq, p->req, &flag, MPI_STATUSES_IGNORE);
    }
    if (wait) st->wait_s += mb_wtime() - t0;
    if (rc != MPI_SUCCESS) {
      if (!e) e = mb_error_set_mpi(rc, __FILE__, __LINE__, __func__,
                                   "MPI_Testall");
      w->failed = 1;
    } else if (!flag) {
      last = p;
      link = &p->next;
      continue;
    } else {
      complete(st, p);
    }
    *link = p->next;
    wput_free(p);
  }
  w->tail = last;
  return e;
}

mb_error runner_writer_put(rank_state *st, mb_mesh *m) {
  runner_writer *w = st->wr;
  wput *p = calloc(1, sizeof *p);
  if (!p) {
    mb_mesh_free(m);
    MB_FAIL(MB_ERR_MEMORY, "out of memory");
  }
  p->m = m;
  const double t0 = mb_wtime();
  mb_error e = hand_on(st, p);
  st->put_s += mb_wtime() - t0;
  if (e) {
    /* requests already posted complete at the drain, which rank 0 serves */
    if (!p->nreq) {
      wput_free(p);
      MB_CALL(e);
    }
  }
  if (w->tail) w->tail->next = p; else w->head = p;
  w->tail = p;
  MB_CALL(e);
  MB_CALL(progress_sent(st, 0));
  return MB_SUCCESS;
}

/* ------------------------------------------------------------- rank 0: serve */

/* Receive bytes of buf from rank src as TAG_DATA pieces. */
static mb_error recv_pieces(runner_writer *w, int src, void *buf, size_t bytes) {
  mb_error e = MB_SUCCESS;
  for (size_t at = 0; at < bytes; at += PIECE) {
    const size_t n = bytes - at < PIECE ? bytes - at : PIECE;
    const int rc = MPI_Recv((char *)buf + at, (int)n, MPI_BYTE, src, TAG_DATA, w->comm,
                            MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS && !e) e = mb_error_set_mpi(rc, __FILE__, __LINE__, __func__, "MPI_Recv");
  }
  return e;
}

/* Receive and drop count TAG_DATA pieces from src (a whole mesh rank 0
 * cannot take: they are read all the same, so that the next request
 * comes next). */
static mb_error drop_pieces(runner_writer *w, int src, int64_t count) {
  mb_error e = MB_SUCCESS;
  for (int64_t k = 0; k < count; k++) {
    MPI_Status s;
    int n = 0, rc = MPI_Probe(src, TAG_DATA, w->comm, &s);
    if (rc == MPI_SUCCESS) rc = MPI_Get_count(&s, MPI_BYTE, &n);
    char *junk = rc == MPI_SUCCESS ? malloc((size_t)n + 1) : NULL;
    if (rc == MPI_SUCCESS)
      rc = MPI_Recv(junk ? junk : (char[1]){0}, junk ? n : 0, MPI_BYTE, src, TAG_DATA, w->comm,
                    MPI_STATUS_IGNORE);
    free(junk);
    if (rc != MPI_SUCCESS && !e) e = mb_error_set_mpi(rc, __FILE__, __LINE__, __func__, "MPI_Recv");
  }
  return e;
}

/* Read the shell of a whole mesh into a new mesh with its arrays allocated. */
typedef struct rd {
  const char *p, *end;
  int bad;
} rd;
static void rd_get(rd *r, void *x, size_t n) {
  if ((size_t)(r->end - r->p) < n) {
    r->bad = 1;
    memset(x, 0, n);
    return;
  }
  memcpy(x, r->p, n);
  r->p += n;
}
static int64_t rd_i64(rd *r) {
  int64_t v;
  rd_get(r, &v, sizeof v);
  return v;
}
static const char *rd_str(rd *r) {
  const int64_t n = rd_i64(r);
  if (n <= 0 || r->end - r->p < n || r->p[n - 1] != '\0') {
    r->bad = 1;
    return "";
  }
  const char *s = r->p;
  r->p += n;
  return s;
}

static mb_error unpack_shell(const char *buf, size_t len, mb_mesh **out, int64_t *nidx) {
  rd r = {buf, buf + len, 0};
  const char *name = rd_str(&r);
  int64_t h[11];
  rd_get(&r, h, sizeof h);
  double origin[3], spacing[3];
  rd_get(&r, origin, sizeof origin);
  rd_get(&r, spacing, sizeof spacing);
  MB_CHECK(!r.bad && h[2] >= 0 && h[3] >= 0 && h[4] >= 0 && h[5] >= 0 && h[6] >= 0 && h[7] >= 0,
           MB_ERR_FORMAT, "a mesh sent to the writer rank does not parse");
  mb_mesh *m = NULL;
  if (h[0] == MB_KIND_GRID3D)
    MB_CALL(mb_grid_create(name, &h[8], origin, spacing, &m));
  else
    MB_CALL(mb_mesh_create(name, h[2], h[3], h[4], &m));
  m->kind = (mb_kind)h[0];
  m->index = h[1];
  m->fields = calloc((size_t)h[5] + 1, sizeof *m->fields);
  m->face_fields = calloc((size_t)h[6] + 1, sizeof *m->face_fields);
  mb_error e = m->fields && m->face_fields ? MB_SUCCESS
               : mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  for (int f = 0; !e && f < h[5]; f++) {
    mb_field *fd = &m->fields[m->nfields++];
    fd->name = strdup(rd_str(&r));
    fd->ncomp = (int)rd_i64(&r);
    fd->dtype = (mb_dtype)rd_i64(&r);
    const size_t n = (size_t)fd->ncomp * (size_t)m->nv;
    if (fd->dtype == MB_FLOAT32) fd->data32 = malloc(sizeof(float) * n + 1);
    else fd->data = malloc(sizeof(double) * n + 1);
    if (!fd->name || (!fd->data && !fd->data32))
      e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  }
  for (int f = 0; !e && f < h[6]; f++) {
    mb_field *fd = &m->face_fields[m->nface_fields++];
    fd->name = strdup(rd_str(&r));
    fd->ncomp = (int)rd_i64(&r);
    fd->data = malloc(sizeof(double) * (size_t)fd->ncomp * (size_t)m->nf + 1);
    if (!fd->name || !fd->data)
      e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  }
  for (int k = 0; !e && k < h[7]; k++) {
    const char *key = rd_str(&r), *value = rd_str(&r);
    e = mb_attrs_set(&m->attrs, key, value);
  }
  if (!e && r.bad)
    e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                     "a mesh sent to the writer rank does not parse");
  if (e) {
    mb_mesh_free(m);
    MB_CALL(e);
  }
  *out = m;
  *nidx = h[0] == MB_KIND_GRID3D ? 0 : h[4];
  return MB_SUCCESS;
}

/* Serve one request from rank src (hdr, then len bytes of payload): a
 * described mesh (make it, reply with its extents, or a failure status),
 * a whole mesh (receive its arrays, put it), or done (with that rank's
 * error code and message). Every reply is sent and every piece read,
 * whatever fails; errors are kept (keep_error), MPI ones returned too. */
static mb_error serve(rank_state *st, int src, const int64_t hdr[4], const char *payload,
                      size_t len) {
  runner_writer *w = st->wr;
  const double t0 = mb_wtime();
  if (hdr[0] == REQ_DONE) {
    w->done++;
    if (hdr[2]) { /* that rank's writes failed: the run fails with its error */
      w->failed = 1;
      keep_error(w, mb_error_set((mb_error)hdr[2], __FILE__, __LINE__, __func__, "rank %d: %.*s",
                                 src, (int)len, payload));
    }
    return MB_SUCCESS;
  }
  if (hdr[0] == REQ_DESCRIBED) {
    const int n = hdr[2] >= 2 && hdr[2] < (1 << 24) ? (int)hdr[2] : 0;
    int64_t *reply = n ? calloc((size_t)(1 + 2 * n), sizeof *reply) : NULL;
    mb_collection_extent *ext = n ? malloc(sizeof *ext * (size_t)n) : NULL;
    int ok = 0;
    if (!reply || !ext)
      keep_error(w, mb_error_set(n ? MB_ERR_MEMORY : MB_ERR_ARG, __FILE__, __LINE__, __func__,
                                 n ? "out of memory" : "a description of no datasets"));
    else if (!w->failed && !w->err) { /* after a failed put no more are made */
      const mb_error pe = mb_collection_writer_put_described(st->out, payload, len, n, ext);
      keep_error(w, pe);
      ok = pe == MB_SUCCESS;
    }
    int64_t status_only = 1; /* not made: a status alone (the receive posted takes fewer) */
    if (ok)
      for (int k = 0; k < n; k++) {
        reply[1 + 2 * k] = ext[k].offset;
        reply[2 + 2 * k] = ext[k].bytes;
      }
    const int rc = ok ? MPI_Send(reply, 1 + 2 * n, MPI_INT64_T, src, TAG_REP, w->comm)
                      : MPI_Send(&status_only, 1, MPI_INT64_T, src, TAG_REP, w->comm);
    free(reply);
    free(ext);
    w->described++;
    st->put_s += mb_wtime() - t0;
    MB_CHECK(rc == MPI_SUCCESS, MB_ERR_MPI, "the writer rank cannot answer rank %d", src);
    return MB_SUCCESS;
  }
  mb_mesh *m = NULL;
  int64_t nidx = 0;
  mb_error e = hdr[0] == REQ_WHOLE ? unpack_shell(payload, len, &m, &nidx)
               : mb_error_set(MB_ERR_ARG, __FILE__, __LINE__, __func__, "the writer rank got a "
                              "request it does not know (%lld) from rank %d", (long long)hdr[0],
                              src);
  const int max = m ? 3 + m->nfields + m->nface_fields : 0;
  warray *a = m ? malloc(sizeof *a * (size_t)max) : NULL;
  const int na = a ? whole_arrays(m, nidx, a, max) : 0;
  int64_t pieces = 0;
  for (int k = 0; k < na; k++) pieces += (int64_t)pieces_of(a[k].bytes);
  if (!e && (!a || pieces != hdr[3]))
    e = mb_error_set(a ? MB_ERR_ARG : MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                     a ? "mesh from rank %d: %lld pieces sent, its arrays take %lld" : "out of "
                     "memory", src, (long long)hdr[3], (long long)pieces);
  mb_error re = MB_SUCCESS;
  if (!e)
    for (int k = 0; k < na && !re; k++) re = recv_pieces(w, src, a[k].buf, a[k].bytes);
  else
    re = drop_pieces(w, src, hdr[3]);
  free(a);
  w->whole++;
  keep_error(w, e ? e : re);
  if (e || re || w->failed || w->err) {
    mb_mesh_free(m);
  } else {
    keep_error(w, mb_collection_writer_put(st->out, m)); /* takes m */
  }
  st->put_s += mb_wtime() - t0;
  MB_CALL(re);
  return MB_SUCCESS;
}

/* Rank 0: serve what has come (block: wait for the next request and serve
 * it). MPI errors are returned after the request is served as far as it
 * goes. */
static mb_error serve_pending(rank_state *st, int block) {
  runner_writer *w = st->wr;
  for (;;) {
    MPI_Status s;
    int flag = 1, n = 0;
    const double t0 = mb_wtime();
    MB_CALL_MPI(MPI_Iprobe(MPI_ANY_SOURCE, TAG_REQ, w->comm, &flag, &s));
    while (block && !flag) { /* idle: the core goes to the ranks computing */
      idle();
      MB_CALL_MPI(MPI_Iprobe(MPI_ANY_SOURCE, TAG_REQ, w->comm, &flag, &s));
    }
    if (block) st->wait_s += mb_wtime() - t0;
    if (!flag) return MB_SUCCESS;
    MB_CALL_MPI(MPI_Get_count(&s, MPI_BYTE, &n));
    char *q = malloc((size_t)n + 1);
    const int rc = MPI_Recv(q ? q : (char[1]){0}, q ? n : 0, MPI_BYTE, s.MPI_SOURCE, TAG_REQ,
                            w->comm, MPI_STATUS_IGNORE);
    int64_t hdr[4] = {0, 0, 0, 0};
    if (q && n >= (int)sizeof hdr) memcpy(hdr, q, sizeof hdr);
    const size_t len = q && n >= (int)sizeof hdr ? (size_t)n - sizeof hdr : 0;
    mb_error e = q ? MB_SUCCESS
                   : mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
    if (!e && rc != MPI_SUCCESS) e = mb_error_set_mpi(rc, __FILE__, __LINE__, __func__, "MPI_Recv");
    /* served even after a failed receive: the message is there (the failure is reported) */
    const mb_error se = q ? serve(st, s.MPI_SOURCE, hdr, q + sizeof hdr, len) : MB_SUCCESS;
    free(q);
    if (!e) e = se;
    MB_CALL(e);
    if (block) return MB_SUCCESS;
  }
}

/* ------------------------------------------------------------- both */

mb_error runner_writer_poll(rank_state *st) {
  if (!st->wr) return MB_SUCCESS;
  if (st->rank == 0) MB_CALL(serve_pending(st, 0));
  else MB_CALL(progress_sent(st, 0));
  return MB_SUCCESS;
}

mb_error runner_writer_drain(rank_state *st, mb_error e) {
  runner_writer *w = st->wr;
  if (!w) return e;
  if (st->rank == 0) {
    mb_error se = MB_SUCCESS;
    if (e) w->failed = 1; /* answer, make nothing more */
    /* serve until every rank is done, after an MPI error too (the others
     * wait for their answers); a second one in a row ends it */
    for (int failures = 0; w->done < st->size - 1 && failures < 2;) {
      const mb_error pe = serve_pending(st, 1);
      failures = pe ? failures + 1 : 0;
      if (!se) se = pe;
    }
    if (e) return e;
    MB_CALL(se);
    MB_CHECK(!w->err, w->err, "%s", w->msg);
    return MB_SUCCESS;
  }
  char msg[1400] = ""; /* this rank's error, for rank 0 to report */
  if (e) {
    w->failed = 1; /* nothing more is written; the output is not published */
    snprintf(msg, sizeof msg, "%s", mb_error_message());
  }
  mb_error pe = progress_sent(st, 1);
  if (!pe && !w->err && !w->failed && st->job->sync && fsync(w->fd) != 0)
    keep_error(w, mb_error_set(MB_ERR_IO, __FILE__, __LINE__, __func__,
                               "cannot sync %s to the disk: %s", w->tmp, strerror(errno)));
  if (w->fd >= 0 && close(w->fd) != 0 && !w->err)
    keep_error(w, mb_error_set(MB_ERR_IO, __FILE__, __LINE__, __func__, "cannot write %s: %s",
                               w->tmp, strerror(errno)));
  w->fd = -1;
  /* done, with this rank's error for rank 0 to report (the lowest failing rank's is shown) */
  const mb_error mine = e ? e : pe ? pe : w->err;
  if (!e && mine) snprintf(msg, sizeof msg, "%s", pe ? mb_error_message() : w->msg);
  char *q = make_request(REQ_DONE, msg, strlen(msg), mine, 0);
  const int64_t bare[4] = {REQ_DONE, 0, mine ? mine : 0, 0};
  const int rc = MPI_Send(q ? (const void *)q : (const void *)bare,
                          (int)(q ? 4 * sizeof(int64_t) + strlen(msg) : sizeof bare), MPI_BYTE, 0,
                          TAG_REQ, w->comm);
  free(q);
  if (e) return e;
  MB_CALL(pe);
  MB_CHECK(!w->err, w->err, "%s", w->msg);
  MB_CHECK(rc == MPI_SUCCESS, MB_ERR_MPI, "rank %d cannot tell the writer rank it is done",
           st->rank);
  return MB_SUCCESS;
}

mb_error runner_writer_report(const rank_state *st) {
  double mine[5] = {st->busy_s, st->put_s, st->wait_s, 0, 0};
  if (st->wr) {
    mine[3] = (double)st->wr->described;
    mine[4] = (double)st->wr->whole;
  }
  double *all = st->rank == 0 ? malloc(sizeof *all * 5 * (size_t)st->size) : NULL;
  MB_CHECK(st->rank != 0 || all, MB_ERR_MEMORY, "out of memory");
  MB_CALL_MPI_AGREED(st->comm, MPI_Gather(mine, 5, MPI_DOUBLE, all, 5, MPI_DOUBLE, 0, st->comm));
  if (st->rank == 0) {
    const mb_log_level level = st->job->timings ? MB_LOG_QUIET : MB_LOG_VERBOSE;
    for (int r = 0; r < st->size; r++) {
      const double *x = &all[5 * r];
      if (!st->wr)
        mb_log(level, "[rank %d] busy %.3f s, write %.3f s, wait %.3f s", r, x[0], x[1], x[2]);
      else if (r == 0)
        mb_log(level, "[rank %d] busy %.3f s, write %.3f s (its meshes, and %.0f "
               "described and %.0f whole from the other ranks), wait %.3f s (for the other "
               "ranks to finish)", r, x[0], x[1], x[3], x[4], x[2]);
      else
        mb_log(level, "[rank %d] busy %.3f s, write %.3f s (%.0f %s at the "
               "extents the writer rank gave, %.0f sent whole), wait %.3f s (for the writer "
               "rank)", r, x[0], x[1], x[3], mb_plural((long long)x[3], "mesh", "meshes"), x[4],
               x[2]);
    }
  }
  free(all);
  return MB_SUCCESS;
}
