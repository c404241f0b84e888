/* meshbatch: partitioned Polylla's slab path: each rank meshes its own face
 * rows as they are, and only the regions that cross the cut move.
 *
 * Why it holds (docs/architecture.md, "Partitioned Polylla"): Polylla's
 * decisions inside a terminal-edge region read that region's triangles
 * only (mb_polylla.h). A rank's rows, meshed alone, are a triangulation
 * whose boundary includes the cut; every region that does not reach a cut
 * edge that is non-frontier in the whole mesh (the longest edge of the
 * triangle on either side) is a region of the whole mesh, and its polygons
 * are the one-rank polygons (the rows keep the order of the global
 * triangle and vertex ids, the only order Polylla compares). The rest (the
 * regions joined across the cut) the backend leaves out (mb_polylla_opts
 * seeds), and they are meshed whole on one rank.
 *
 *   ghosts      the vertex ids the rows use outside this rank's vertex
 *               block, sorted; their positions from their owners, who
 *               note which of their rows other ranks use
 *   cut         an edge whose two ends are used by another rank as well
 *               (a ghost, or a row another rank asked for) goes to the
 *               owner of its smaller vertex, which pairs the two
 *               triangles of each edge held by two ranks (a cut edge) and
 *               tells both sides whether it joins them (non-frontier: the
 *               longest edge of either triangle): those triangles are the
 *               seeds
 *   mesh        the backend on the rows and ghosts (mb_polylla_ids), the
 *               regions of the seeds left out
 *   regions     the triangles left out, joined into regions here and over
 *               the cut by rounds of (smallest triangle id) until none
 *               changes; a region belongs to the rank of its smallest
 *               triangle, which receives its triangles and meshes it
 *   output      polygons to the rank whose face rows hold their head,
 *               merged there into the rows' polygons by head
 *
 * Work and memory beyond the backend's are proportional to the rank's rows
 * (a pass for the ghosts, one for the cut's candidates, both OpenMP) and to
 * what crosses the cut. The path is taken where every rank's rows use few
 * ids outside its vertex block (corners outside <= a quarter of its
 * triangles) and few edges are candidates (<= an eighth), which holds for
 * rows numbered along the mesh (grid2d, generate delaunay's Hilbert order,
 * meshes renumbered for locality); elsewhere the general path (dual graph,
 * partition, halo) runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include <sys/resource.h>

#include "mb_faces.h"
#include "mb_log.h"
#include "mb_mpi.h"
#include "mb_polylla_pp.h"

/* An edge of a triangle near the cut, on its way to the owner of its
 * smaller vertex. */
typedef struct sp_edge {
  int64_t a, b;    /* its ends, a < b (global ids) */
  int64_t gid;     /* the triangle's face row */
  int32_t dir;     /* 1: the counter-clockwise triangle runs a -> b */
  int32_t longest; /* 1: the edge is the triangle's longest (label rule) */
  int32_t rank;    /* the rank holding the triangle (set on arrival) */
  int32_t pad;
} sp_edge;

/* A cut edge that joins two regions: this rank's triangle and theirs. */
typedef struct sp_link {
  int64_t mine, theirs; /* face rows */
  int64_t rank;         /* the rank holding theirs */
} sp_link;

/* A label of the region round rounds: (face row of the triangle on the
 * receiving side, the smallest face row known). */
typedef struct sp_label {
  int64_t at, label;
} sp_label;

/* Order by (a, b, rank, gid): an edge's records side by side. */
static int cmp_edge_ab(const void *x, const void *y) {
  const sp_edge *p = x, *q = y;
  if (p->a != q->a) return p->a < q->a ? -1 : 1;
  if (p->b != q->b) return p->b < q->b ? -1 : 1;
  if (p->rank != q->rank) return p->rank < q->rank ? -1 : 1;
  return (p->gid > q->gid) - (p->gid < q->gid);
}


/* A cut edge as its owner tells each side. */
typedef struct sp_pair {
  int64_t mine, theirs; /* face rows: the receiver's triangle, the other */
  int32_t rank;         /* the rank holding theirs */
  int32_t joined;       /* non-frontier: the longest edge of either triangle */
} sp_pair;

/* The state of one slab-path run on this rank (freed by sp_free). */
typedef struct sp_run {
  int64_t *vstarts, *fstarts; /* [size + 1] blocks of vertex and face rows */
  int64_t *ghost;             /* [nghost] ids used outside the vertex block, sorted */
  double *gxyz;               /* [nghost, 3] their positions */
  uint8_t *asked;             /* [nvb] rows another rank uses */
  sp_edge *cand;              /* candidates, sorted by (rank, a, b) */
  sp_edge *got;               /* those received, sorted by (source, a, b) */
  int *dest, *from;
  int64_t *seeds;
  sp_link *links;
  int64_t *heads, *left;      /* the rows' polygons' heads (row half-edges), left-out rows */
  int64_t *corners;           /* [3 nleft] their corners (global ids, oriented), or NULL:
                                 the rows' faces (the CPU backend gives those up) */
  int32_t *rows_corners;      /* the rows' triangles (local numbers, oriented) where the
                                 CPU backend gave their faces up, or NULL */
  int64_t *first;             /* [size] each rank's first own polygon's head, or INT64_MAX */
  mb_mesh *poly;              /* the rows' polygons (global vertex ids) */
  int64_t *parent, *label;    /* regions of the left-out triangles */
  pp_tri *go, *came;
  mb_mesh *spoly;             /* the regions made here */
  int64_t *sheads;
  pp_poly *psend, *pgot;
  int64_t *isend, *igot, *order, *istart;
  int *pdest, *idest;
  mb_mesh *out;
} sp_run;

static void sp_free(sp_run *r) {
  free(r->vstarts); free(r->fstarts); free(r->ghost); free(r->gxyz); free(r->asked);
  free(r->cand); free(r->got); free(r->dest); free(r->from); free(r->seeds); free(r->links);
  free(r->heads); free(r->left); free(r->corners); free(r->rows_corners); free(r->parent);
  free(r->label); free(r->go); free(r->came);
  free(r->sheads); free(r->psend); free(r->pgot); free(r->isend); free(r->igot); free(r->order);
  free(r->istart); free(r->pdest); free(r->idest); free(r->first);
  mb_mesh_free(r->poly);
  mb_mesh_free(r->spoly);
  mb_mesh_free(r->out);
}

/* The position [3] of id g: a row of the slab or a ghost. */
static const double *sp_pos(const mb_mesh *m, const sp_run *r, int64_t v0, int64_t nghost,
                            int64_t g) {
  if (g >= v0 && g < v0 + m->nv) return m->xyz + 3 * (g - v0);
  return r->gxyz + 3 * mb_pp_find_i64(r->ghost, nghost, g);
}

/* Triangle row t of the slab as a record (global ids, x, y): its corners
 * c [3] where given (the backend's, as oriented), else the rows'. */
static void sp_record(const mb_mesh *m, const sp_run *r, int64_t v0, int64_t nghost, int64_t f0,
                      int64_t t, const int64_t *c, pp_tri *p) {
  memset(p, 0, sizeof *p);
  p->gid = f0 + t;
  for (int k = 0; k < 3; k++) {
    const int64_t g = c ? c[k] : m->face_indices[3 * t + k];
    const double *x = sp_pos(m, r, v0, nghost, g);
    p->v[k] = g;
    p->xy[2 * k] = x[0];
    p->xy[2 * k + 1] = x[1];
  }
}

/* Does this rank share vertex g with another (a ghost, or a row asked for)? */
static inline int sp_shared(const sp_run *r, int64_t v0, int64_t nvb, int64_t g) {
  return g < v0 || g >= v0 + nvb || r->asked[g - v0];
}

/* The number of edges of triangle corners v [3] with both ends shared. */
static inline int sp_edges_shared(const sp_run *r, int64_t v0, int64_t nvb, const int64_t *v) {
  int n = 0;
  for (int k = 0; k < 3; k++) n += sp_shared(r, v0, nvb, v[k]) && sp_shared(r, v0, nvb, v[(k + 1) % 3]);
  return n;
}

/* The cut's candidates of row t into e [3] (their destinations in
 * e[k].rank for now); returns how many. */
static int sp_candidates(const mb_mesh *m, const sp_run *r, const pp_state *s, int64_t v0,
                         int64_t nvb, int64_t nghost, int64_t f0, int64_t t, sp_edge *e) {
  pp_tri p;
  sp_record(m, r, v0, nghost, f0, t, NULL, &p);
  int64_t l[2];
  mb_polylla_longest_edge(p.v, p.xy, s->ties, l);
  const double *c = p.xy;
  const double o = (c[2] - c[0]) * (c[5] - c[1]) - (c[3] - c[1]) * (c[4] - c[0]);
  int n = 0;
  for (int k = 0; k < 3; k++) {
    const int64_t a = p.v[k], b = p.v[(k + 1) % 3];
    if (!sp_shared(r, v0, nvb, a) || !sp_shared(r, v0, nvb, b)) continue;
    sp_edge *x = &e[n++];
    *x = (sp_edge){a < b ? a : b, a < b ? b : a, p.gid, 0, 0, 0, 0};
    x->dir = (a < b) == (o > 0); /* input order a -> b, reversed when clockwise */
    x->longest = l[0] == x->a && l[1] == x->b;
    x->rank = mb_block_owner(r->vstarts, s->size, x->a);
  }
  return n;
}

/* One pass over rows in blocks on the OpenMP threads, each block keeping
 * what it finds (few records: ghosts, the cut's candidates) in its own
 * growing array, gathered afterwards in block order, so in row order. A
 * block that would pass `limit` records stops and says so (full). */
typedef struct sp_blk {
  char *p;
  int64_t n, cap;
  int full; /* 1: over the limit, 2: out of memory */
} sp_blk;

static void sp_push(sp_blk *b, size_t width, const void *rec, int64_t limit) {
  if (b->full) return;
  if (b->n == b->cap) {
    if (b->n >= limit) {
      b->full = 1;
      return;
    }
    const int64_t cap = b->cap ? 2 * b->cap : 256;
    char *q = realloc(b->p, width * (size_t)cap);
    if (!q) {
      b->full = 2;
      return;
    }
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + width * (size_t)b->n++, rec, width);
}

/* The blocks' records, in block order, into a new array *out (*n of
 * them); the blocks are freed. Returns the largest `full`. */
static int sp_gather(sp_blk *blk, int nblk, size_t width, void **out, int64_t *n) {
  int full = 0;
  int64_t total = 0;
  for (int k = 0; k < nblk; k++) {
    total += blk[k].n;
    full = blk[k].full > full ? blk[k].full : full;
  }
  char *o = full ? NULL : malloc(width * (size_t)(total ? total : 1));
  if (!full && !o) full = 2;
  for (int64_t k = 0, at = 0; k < nblk; k++) {
    if (o && blk[k].n > 0) memcpy(o + width * (size_t)at, blk[k].p, width * (size_t)blk[k].n);
    at += blk[k].n;
    free(blk[k].p);
    blk[k] = (sp_blk){0};
  }
  *out = o;
  *n = o ? total : 0;
  return full;
}

/* The rank whose block of the output takes a polygon made elsewhere with
 * head h: the last rank whose first own polygon's head (first [size],
 * INT64_MAX for none) is below h; else the first rank with polygons of its
 * own; else the rank whose face rows hold h. */
static int sp_destination(const int64_t *first, int size, const int64_t *fstarts, int64_t h) {
  int d = -1, any = -1;
  for (int q = 0; q < size; q++) {
    if (first[q] == INT64_MAX) continue;
    if (any < 0) any = q;
    if (first[q] < h) d = q;
  }
  return d >= 0 ? d : any >= 0 ? any : mb_block_owner(fstarts, size, h / 3);
}

/* Merge nb polygons (order [2 nb]: head, index into got, by head; their
 * indices at igot + istart [index]) into lp, whose polygons have the heads
 * 3 f0 + heads [lp->nf] (mb_polylla_merge: new arrays, copied on OpenMP
 * threads; the old freed). vertex_count follows. Not collective. Errors:
 * MB_ERR_MEMORY, MB_ERR_NUMERIC (lp then unchanged). */
static mb_error sp_merge(mb_mesh *lp, const int64_t *heads, int64_t f0, int64_t nb,
                         const int64_t *order, const pp_poly *got, const int64_t *istart,
                         const int64_t *igot) {
  mb_polylla_piece *pc = malloc(sizeof *pc * (size_t)(nb ? nb : 1));
  MB_CHECK(pc, MB_ERR_MEMORY, "out of memory for %lld polygons", (long long)nb);
  for (int64_t j = 0; j < nb; j++) {
    const int64_t q = order[2 * j + 1];
    pc[j] = (mb_polylla_piece){order[2 * j] - 3 * f0, istart[q], got[q].n};
  }
  int64_t *fo = NULL, *fi = NULL;
  double *cnt = NULL;
  const mb_error e = mb_polylla_merge(lp->face_offsets, lp->face_indices, heads, lp->nf, NULL, 0,
                                      pc, nb, igot, &fo, &fi, NULL, &cnt);
  if (!e && getenv("MB_POLYLLA_TRACE")) {
    int64_t inside = 0;
    for (int64_t j = 0; j < nb; j++) inside += mb_polylla_lower(heads, lp->nf, pc[j].head) < lp->nf;
    fprintf(stderr, "slab path: %lld polygons merged, %lld of them before own polygons\n",
            (long long)nb, (long long)inside);
  }
  free(pc);
  MB_CALL(e);
  free(lp->face_offsets);
  free(lp->face_indices);
  lp->face_offsets = fo;
  lp->face_indices = fi;
  lp->nf += nb;
  return mb_mesh_take_face_field(lp, "vertex_count", 1, cnt);
}

/* Rows are cut into this many blocks at most, one per OpenMP thread. */
#define SP_NBLK 256
#define SP_BLOCK(n, k, nblk) ((n) * (k) / (nblk))

/* Decide on every rank: 1 where all ranks say ok. */
static mb_error sp_all(MPI_Comm comm, int *ok) {
  MB_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, ok, 1, MPI_INT, MPI_MIN, comm));
  return MB_SUCCESS;
}

mb_error mb_pp_slab(pp_state *s, mb_mesh_slab *slab, const mb_polylla_opts *opts, int cuda,
                    int *taken) {
  MPI_Comm comm = s->comm;
  const mb_mesh *m = slab->rows;
  const int64_t nf = m->nf, f0 = slab->face_start, v0 = slab->vertex_start, nvb = m->nv;
  mb_error err = MB_SUCCESS;
  int bad = 0, ok = 1;
  sp_run r = {0};
  *taken = 0;
  PP_ALLOC(r.vstarts, s->size + 1);
  PP_ALLOC(r.fstarts, s->size + 1);
  PP_AGREE("out of memory for the slab path");
  MB_CALL_GOTO(err, done, mb_block_starts(comm, v0, nvb, r.vstarts));
  MB_CALL_GOTO(err, done, mb_block_starts(comm, f0, nf, r.fstarts));
  const int64_t nvg = r.vstarts[s->size];
  mb_pp_trace(s, NULL);

  /* ---- ghosts: the ids the rows use outside this rank's vertex block */
  const int64_t *fi = m->face_indices;
  const int nblk = omp_get_max_threads() < SP_NBLK ? omp_get_max_threads() : SP_NBLK;
  int64_t blo[SP_NBLK], bhi[SP_NBLK];
  sp_blk blk[SP_NBLK] = {{0}};
  const int64_t ghost_limit = nf / 4 + 4096; /* corners outside, repeats counted */
  /* one pass: the corners outside this rank's vertex block and the range of ids */
#pragma omp parallel for schedule(static, 1)
  for (int k = 0; k < nblk; k++) {
    int64_t l = INT64_MAX, h = INT64_MIN;
    for (int64_t i = SP_BLOCK(3 * nf, k, nblk); i < SP_BLOCK(3 * nf, k + 1, nblk); i++) {
      const int64_t g = fi[i];
      if (g < v0 || g >= v0 + nvb) sp_push(&blk[k], sizeof g, &g, ghost_limit);
      l = g < l ? g : l;
      h = g > h ? g : h;
    }
    blo[k] = l;
    bhi[k] = h;
  }
  int64_t lo = INT64_MAX, hi = INT64_MIN, nghost = 0;
  for (int k = 0; k < nblk; k++) {
    lo = blo[k] < lo ? blo[k] : lo;
    hi = bhi[k] > hi ? bhi[k] : hi;
  }
  const int gfull = sp_gather(blk, nblk, sizeof(int64_t), (void **)&r.ghost, &nghost);
  if (gfull == 2) bad = 1;
  PP_AGREE("out of memory for the ghost vertices");
  ok = (nf == 0 || (lo >= 0 && hi < nvg)) && !gfull && nghost <= ghost_limit;
  MB_CALL_GOTO(err, done, sp_all(comm, &ok));
  if (!ok) goto done;
  PP_ALLOC(r.asked, nvb);
  PP_AGREE("out of memory for the ghost vertices");
  qsort(r.ghost, (size_t)nghost, sizeof *r.ghost, mb_pp_cmp_i64);
  {
    int64_t u = 0;
    for (int64_t i = 0; i < nghost; i++)
      if (u == 0 || r.ghost[i] != r.ghost[u - 1]) r.ghost[u++] = r.ghost[i];
    nghost = u;
  }
  memset(r.asked, 0, (size_t)nvb);
  mb_pp_trace(s, "ghosts: ids");
  /* their positions, asked of their owners, who note the rows asked for:
   * the answers come back by owner, each in the order asked, which is the
   * ghosts' order (the blocks follow the ranks) */
  {
    int64_t nreq = 0, nans = 0;
    int64_t *req = NULL;
    int *from = NULL;
    double *ans = NULL, *back = NULL;
    PP_ALLOC(r.dest, nghost);
    PP_ALLOC(r.gxyz, 3 * nghost);
    PP_AGREE("out of memory for the ghost vertices");
    for (int64_t i = 0; i < nghost; i++) r.dest[i] = mb_block_owner(r.vstarts, s->size, r.ghost[i]);
    err = mb_records_exchange(comm, nghost, r.dest, sizeof(int64_t), r.ghost, &nreq,
                              (void **)&req, &from, &s->fig.bytes);
    if (!err) {
      ans = malloc(sizeof(double) * 3 * (size_t)(nreq ? nreq : 1));
      if (!ans) err = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
    }
    for (int64_t i = 0; !err && i < nreq; i++) {
      const int64_t row = req[i] - v0; /* this rank's, by the blocks */
      r.asked[row] = 1;
      memcpy(ans + 3 * i, m->xyz + 3 * row, 3 * sizeof(double));
    }
    err = mb_agree(comm, err);
    if (!err)
      err = mb_records_exchange(comm, nreq, from, 3 * sizeof(double), ans, &nans, (void **)&back,
                                NULL, &s->fig.bytes);
    if (!err && nans == nghost) memcpy(r.gxyz, back, sizeof(double) * 3 * (size_t)nghost);
    free(req);
    free(from);
    free(ans);
    free(back);
    MB_CALL_GOTO(err, done, err);
  }

  mb_pp_trace(s, "ghosts: positions");
  /* ---- the cut's candidates: edges whose two ends another rank uses too */
  free(r.dest);
  r.dest = NULL;
  const int64_t cand_limit = nf / 8 + 4096;
#pragma omp parallel for schedule(static, 1)
  for (int k = 0; k < nblk; k++)
    for (int64_t t = SP_BLOCK(nf, k, nblk); t < SP_BLOCK(nf, k + 1, nblk); t++) {
      if (!sp_edges_shared(&r, v0, nvb, fi + 3 * t)) continue;
      sp_edge e[3];
      const int n = sp_candidates(m, &r, s, v0, nvb, nghost, f0, t, e);
      for (int j = 0; j < n; j++) sp_push(&blk[k], sizeof *e, &e[j], cand_limit);
    }
  int64_t ncand = 0;
  const int cfull = sp_gather(blk, nblk, sizeof(sp_edge), (void **)&r.cand, &ncand);
  if (cfull == 2) bad = 1;
  PP_AGREE("out of memory for the cut's edges");
  ok = !cfull && ncand <= cand_limit;
  MB_CALL_GOTO(err, done, sp_all(comm, &ok));
  if (!ok) goto done;
  mb_pp_trace(s, "cut: candidates");
  PP_ALLOC(r.dest, ncand);
  PP_AGREE("out of memory for the cut's edges");
  for (int64_t i = 0; i < ncand; i++) r.dest[i] = r.cand[i].rank; /* the owner of a */
  /* the owner of the smaller vertex pairs them */
  int64_t ngot = 0, nsend = 0, npairs = 0;
  MB_CALL_GOTO(err, done, mb_records_exchange(comm, ncand, r.dest, sizeof(sp_edge), r.cand,
                                              &ngot, (void **)&r.got, &r.from, &s->fig.bytes));
  for (int64_t i = 0; i < ngot; i++) r.got[i].rank = r.from[i];
  qsort(r.got, (size_t)ngot, sizeof *r.got, cmp_edge_ab);
  sp_pair *pairs = NULL, *mine = NULL;
  int *pto = NULL;
  PP_ALLOC(pairs, ngot);
  PP_ALLOC(pto, ngot);
  if (bad) {
    free(pairs);
    free(pto);
  }
  PP_AGREE("out of memory for the cut's edges");
  for (int64_t i = 0; i < ngot;) {
    int64_t j = i + 1;
    while (j < ngot && r.got[j].a == r.got[i].a && r.got[j].b == r.got[i].b) j++;
    const sp_edge *x = &r.got[i], *y = &r.got[i + 1];
    if (j - i == 2 && x->rank != y->rank) { /* a cut edge */
      const int32_t joined = x->longest || y->longest;
      if (x->dir == y->dir) ok = 0; /* twice one way: overlapping triangles */
      pairs[nsend] = (sp_pair){x->gid, y->gid, y->rank, joined};
      pto[nsend++] = x->rank;
      pairs[nsend] = (sp_pair){y->gid, x->gid, x->rank, joined};
      pto[nsend++] = y->rank;
    } else if (j - i > 2) {
      ok = 0; /* an edge in three triangles or more */
    }
    i = j;
  }
  err = mb_records_exchange(comm, nsend, pto, sizeof(sp_pair), pairs, &npairs, (void **)&mine,
                            NULL, &s->fig.bytes);
  free(pairs);
  free(pto);
  if (!err) {
    r.seeds = malloc(sizeof *r.seeds * (size_t)(npairs ? npairs : 1));
    r.links = malloc(sizeof *r.links * (size_t)(npairs ? npairs : 1));
    if (!r.seeds || !r.links)
      err = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  }
  int64_t nseeds = 0, nlinks = 0, ncut = 0;
  for (int64_t i = 0; !err && i < npairs; i++) {
    ncut++;
    if (!mine[i].joined) continue;
    r.seeds[nseeds++] = mine[i].mine - f0;
    r.links[nlinks++] = (sp_link){mine[i].mine, mine[i].theirs, mine[i].rank};
  }
  free(mine);
  MB_CALL_GOTO(err, done, mb_agree(comm, err));
  MB_CALL_GOTO(err, done, sp_all(comm, &ok));
  if (!ok) goto done;
  s->fig.ghosts = (double)ncut;
  mb_pp_trace(s, "cut: pairs");
  mb_pp_step_end(s, MB_PP_STEP_DUAL);
  mb_pp_step_end(s, MB_PP_STEP_DISTRIBUTE);
  s->fig.owned = (double)nf;

  /* ---- mesh: the rows, the regions of the seeds left out */
  mb_polylla_stats lst = {0};
  int64_t nleft = 0;
  {
    const mb_polylla_ids ids = {v0, nghost, r.ghost, r.gxyz, NULL};
    mb_polylla_opts o = opts ? *opts : (mb_polylla_opts){0};
    o.heads = &r.heads;
    o.share_xyz = 1;
    o.ids = &ids;
    o.seeds = r.seeds;
    o.nseeds = nseeds;
    o.left_out = &r.left;
    o.nleft_out = &nleft;
    o.left_out_corners = &r.corners;
    o.consume_faces = slab->rows; /* their faces given up for their corners, which */
    o.rows_corners = &r.rows_corners; /* give them back if the general path must run */
    if (nf > 0) {
      err = cuda ? mb_polylla_cuda(m, &o, &r.poly, &lst) : mb_polylla_cpu(m, &o, &r.poly, &lst);
      if (!err) { /* only the polygons are kept: the CPU backend's copy of the positions goes */
        if (r.poly->xyz != m->xyz) free(r.poly->xyz);
        r.poly->xyz = NULL;
        r.poly->nv = 0;
      }
    }
    if (err && m->face_indices) { /* the general path names the fault in the one-rank words */
      mb_log(MB_LOG_VERBOSE, "mesh '%s': the slab path gave way to the general path: %s",
             s->name, mb_error_message());
      mb_error_clear();
      err = MB_SUCCESS;
      ok = 0;
    }
    /* (rows whose faces could not be given back: out of memory, said here) */
    MB_CALL_GOTO(err, done, mb_agree(comm, err));
    MB_CALL_GOTO(err, done, sp_all(comm, &ok));
    if (!ok) goto done;
  }
  s->fig.ms_phases = cuda ? lst.ms_kernels : lst.ms_label + lst.ms_repair + lst.ms_traversal;
  mb_pp_trace(s, "mesh: the rows (backend)");
  mb_pp_step_end(s, MB_PP_STEP_MESH);

  /* ---- regions of the left-out triangles: here, then over the cut */
  PP_ALLOC(r.parent, nleft);
  PP_ALLOC(r.label, nleft);
  PP_AGREE("out of memory for the regions that cross the cut");
  {
    /* their edges, matched by sorting; a non-frontier one joins */
    sp_edge *e = NULL;
    PP_ALLOC(e, 3 * nleft);
    PP_AGREE("out of memory for the regions that cross the cut");
    for (int64_t i = 0; i < nleft; i++) {
      pp_tri p;
      const int64_t *c = r.corners ? r.corners + 3 * i : NULL;
      sp_record(m, &r, v0, nghost, f0, r.left[i], c, &p);
      int64_t l[2];
      mb_polylla_longest_edge(p.v, p.xy, s->ties, l);
      for (int k = 0; k < 3; k++) {
        const int64_t a = p.v[k], b = p.v[(k + 1) % 3];
        e[3 * i + k] = (sp_edge){a < b ? a : b, a < b ? b : a, i, 0, 0, 0, 0};
        e[3 * i + k].longest = l[0] == e[3 * i + k].a && l[1] == e[3 * i + k].b;
      }
      r.parent[i] = i;
    }
    qsort(e, (size_t)(3 * nleft), sizeof *e, cmp_edge_ab);
    for (int64_t i = 0; i + 1 < 3 * nleft; i++)
      if (e[i].a == e[i + 1].a && e[i].b == e[i + 1].b && (e[i].longest || e[i + 1].longest)) {
        const int64_t x = mb_pp_uf_find(r.parent, e[i].gid), y = mb_pp_uf_find(r.parent, e[i + 1].gid);
        if (x != y) r.parent[x > y ? x : y] = x < y ? x : y; /* root: the smallest row */
      }
    free(e);
    for (int64_t i = 0; i < nleft; i++) r.label[i] = f0 + r.left[mb_pp_uf_find(r.parent, i)];
  }
  for (int round = 0;; round++) {
    sp_label *send = NULL, *recv = NULL;
    int *to = NULL;
    int64_t nrecv = 0;
    PP_ALLOC(send, nlinks);
    PP_ALLOC(to, nlinks);
    if (bad) {
      free(send);
      free(to);
    }
    PP_AGREE("out of memory for the regions that cross the cut");
    for (int64_t i = 0; i < nlinks; i++) {
      const int64_t at = mb_pp_find_i64(r.left, nleft, r.links[i].mine - f0);
      send[i] = (sp_label){r.links[i].theirs, at < 0 ? INT64_MAX : r.label[mb_pp_uf_find(r.parent, at)]};
      to[i] = (int)r.links[i].rank;
    }
    err = mb_records_exchange(comm, nlinks, to, sizeof *send, send, &nrecv, (void **)&recv, NULL,
                              &s->fig.bytes);
    int changed = 0;
    for (int64_t i = 0; !err && i < nrecv; i++) {
      const int64_t at = mb_pp_find_i64(r.left, nleft, recv[i].at - f0);
      if (at < 0) continue;
      const int64_t root = mb_pp_uf_find(r.parent, at);
      if (recv[i].label < r.label[root]) r.label[root] = recv[i].label, changed = 1;
    }
    free(send);
    free(to);
    free(recv);
    MB_CALL_GOTO(err, done, err);
    MB_CALL_MPI_GOTO(err, done,
                     MPI_Allreduce(MPI_IN_PLACE, &changed, 1, MPI_INT, MPI_MAX, comm));
    s->fig.cc_rounds = round + 1;
    if (!changed) break;
  }
  mb_pp_step_end(s, MB_PP_STEP_REGIONS);

  /* ---- stitch: the left-out triangles to the owner of their region */
  PP_ALLOC(r.go, nleft);
  PP_ALLOC(r.pdest, nleft);
  PP_AGREE("out of memory for the regions that cross the cut");
  int64_t ncame = 0;
  for (int64_t i = 0; i < nleft; i++) {
    const int64_t *c = r.corners ? r.corners + 3 * i : NULL;
    sp_record(m, &r, v0, nghost, f0, r.left[i], c, &r.go[i]);
    r.go[i].crossing = 1;
    r.pdest[i] = mb_block_owner(r.fstarts, s->size, r.label[mb_pp_uf_find(r.parent, i)]);
    s->fig.migrated += r.pdest[i] != s->rank;
  }
  MB_CALL_GOTO(err, done, mb_records_exchange(comm, nleft, r.pdest, sizeof(pp_tri), r.go, &ncame,
                                              (void **)&r.came, NULL, &s->fig.bytes));
  free(r.pdest);
  r.pdest = NULL;
  qsort(r.came, (size_t)ncame, sizeof *r.came, mb_pp_cmp_tri);
  mb_pp_step_end(s, MB_PP_STEP_STITCH);
  mb_polylla_stats sst = {0};
  err = mb_pp_mesh(s, r.came, ncame, opts, cuda && ncame > (1 << 20), &r.spoly, &r.sheads, &sst);
  if (err) {
    mb_log(MB_LOG_VERBOSE, "mesh '%s': the slab path gave way to the general path: %s", s->name,
           mb_error_message());
    mb_error_clear();
    err = MB_SUCCESS;
    ok = 0;
  }
  MB_CALL_GOTO(err, done, sp_all(comm, &ok));
  if (!ok) goto done;
  mb_pp_trace(s, "mesh: the regions that cross the cut");
  s->fig.meshed = (double)(nf - nleft + ncame);
  s->fig.polygons_local = r.poly ? (double)r.poly->nf : 0;
  s->fig.polygons_stitched = r.spoly ? (double)r.spoly->nf : 0;
  mb_pp_step_end(s, MB_PP_STEP_MESH);

  /* ---- output: the regions made here to the rank whose rows' polygons
   * come last before their head (ranks' blocks of the canonical order
   * begin at their first own polygon), so that most arrive after all of
   * that rank's own and are appended */
  const mb_mesh *sp = r.spoly;
  const int64_t nsp = sp ? sp->nf : 0, nsi = sp ? sp->face_offsets[nsp] : 0;
  PP_ALLOC(r.psend, nsp);
  PP_ALLOC(r.pdest, nsp);
  PP_ALLOC(r.isend, nsi);
  PP_ALLOC(r.idest, nsi);
  PP_ALLOC(r.first, s->size);
  PP_AGREE("out of memory for the polygons");
  {
    const int64_t mine = r.poly && r.poly->nf > 0 ? 3 * f0 + r.heads[0] : INT64_MAX;
    MB_CALL_MPI_GOTO(err, done,
                     MPI_Allgather(&mine, 1, MPI_INT64_T, r.first, 1, MPI_INT64_T, comm));
  }
  for (int64_t p = 0; p < nsp; p++) {
    const int d = sp_destination(r.first, s->size, r.fstarts, r.sheads[p]);
    r.psend[p] = (pp_poly){r.sheads[p], sp->face_offsets[p + 1] - sp->face_offsets[p]};
    r.pdest[p] = d;
    for (int64_t k = sp->face_offsets[p]; k < sp->face_offsets[p + 1]; k++) {
      r.isend[k] = sp->face_indices[k];
      r.idest[k] = d;
    }
  }
  mb_pp_trace(s, "output: records");
  int64_t npgot = 0, nigot = 0;
  MB_CALL_GOTO(err, done, mb_records_exchange(comm, nsp, r.pdest, sizeof(pp_poly), r.psend, &npgot,
                                              (void **)&r.pgot, NULL, &s->fig.bytes));
  MB_CALL_GOTO(err, done, mb_records_exchange(comm, nsi, r.idest, sizeof(int64_t), r.isend,
                                              &nigot, (void **)&r.igot, NULL, &s->fig.bytes));
  mb_pp_trace(s, "output: exchange");
  /* the received: first index of each (they arrive in send order by source), then by head */
  PP_ALLOC(r.istart, npgot + 1);
  PP_ALLOC(r.order, 2 * npgot);
  PP_AGREE("out of memory for the polygons");
  r.istart[0] = 0;
  for (int64_t p = 0; p < npgot; p++) {
    r.istart[p + 1] = r.istart[p] + r.pgot[p].n;
    r.order[2 * p] = r.pgot[p].head;
    r.order[2 * p + 1] = p;
  }
  qsort(r.order, (size_t)npgot, 2 * sizeof *r.order, mb_pp_cmp_i64);

  /* merge by head into the rows' polygons, in place */
  if (!r.poly) err = mb_mesh_create(m->name, 0, 0, 0, &r.poly);
  if (!err && !r.poly->nface_fields) {
    const double none = 0;
    err = mb_mesh_set_face_field(r.poly, "vertex_count", 1, &none);
  }
  mb_pp_trace(s, "output: order");
  if (!err && npgot > 0) err = sp_merge(r.poly, r.heads, f0, npgot, r.order, r.pgot, r.istart, r.igot);
  mb_pp_trace(s, "output: merge");
  r.out = r.poly;
  r.poly = NULL;
  MB_CALL_GOTO(err, done, mb_agree(comm, err));

  /* ---- the global figures; the rows of this rank's output */
  {
    const int64_t nlp = r.out->nf - npgot, nli = r.out->face_offsets[r.out->nf] - nigot;
    int64_t f[8] = {nlp + nsp, nli + nsi, lst.boundary_edges, ncut, lst.barrier_edge_tips +
                    sst.barrier_edge_tips, lst.polygons_repaired + sst.polygons_repaired,
                    lst.pinches_split + sst.pinches_split, 0};
    MB_CALL_MPI_GOTO(err, done, MPI_Allreduce(MPI_IN_PLACE, f, 8, MPI_INT64_T, MPI_SUM, comm));
    /* every cut edge is a boundary edge of the rows on both sides */
    const int64_t totals[5] = {f[0], (f[1] + f[2] - f[3]) / 2, f[4], f[5], f[6]};
    int64_t first = 0, n = r.out ? r.out->nf : 0;
    MB_CALL_MPI_GOTO(err, done, MPI_Exscan(&n, &first, 1, MPI_INT64_T, MPI_SUM, comm));
    if (s->rank == 0) first = 0;
    if (!err) {
      free(r.out->xyz); /* NULL but for a new mesh; the input's vertex rows come */
      r.out->xyz = NULL;
      r.out->nv = 0;
      err = mb_pp_finish(slab, &r.out, first, totals);
    }
    MB_CALL_GOTO(err, done, mb_agree(comm, err));
  }
  mb_pp_trace(s, "output: figures, rows");
  mb_pp_step_end(s, MB_PP_STEP_OUTPUT);
  s->fig.ms_distribute = s->fig.step_ms[MB_PP_STEP_DUAL] + s->fig.step_ms[MB_PP_STEP_DISTRIBUTE];
  s->fig.ms_regions = s->fig.step_ms[MB_PP_STEP_REGIONS];
  s->fig.ms_stitch = s->fig.step_ms[MB_PP_STEP_STITCH];
  s->fig.ms_mesh = s->fig.step_ms[MB_PP_STEP_MESH];
  s->fig.ms_output = s->fig.step_ms[MB_PP_STEP_OUTPUT];
  *taken = 1;
done:
  if (!*taken) { /* the general path runs on the rows' faces: given back, agreed */
    mb_error fe = MB_SUCCESS;
    if (r.rows_corners) {
      const mb_polylla_ids ids = {v0, nghost, r.ghost, r.gxyz, NULL};
      fe = mb_polylla_ids_faces(slab->rows, &ids, r.rows_corners);
    }
    if (!err) err = mb_agree(comm, fe); /* every rank is here (ok agreed 0), or err agreed */
  }
  sp_free(&r);
  return err;
}
