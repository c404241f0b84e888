/* meshbatch: Polylla on one triangulation split over the ranks.
 *
 * Design (docs/architecture.md, "Partitioned Polylla"): move every
 * terminal-edge region that crosses the cut to one rank, then mesh whole
 * regions with the per-mesh backend. A region is a connected set of
 * triangles joined across non-frontier edges, and every decision of
 * Polylla inside it (label, tips and their middle edges, successors) reads
 * that region's triangles only (mb_polylla.h: a tip's fan lies in its
 * region; a successor turns across non-frontier edges only). So a rank that
 * holds whole regions, numbered in the order of their global triangle and
 * vertex ids, makes exactly the polygons one rank makes, and only the
 * heads need the global ids back.
 *
 *   distribute  coordinates of the slab's corners (mb_block_fetch), the dual
 *               graph (mb_faces_dual), METIS / ParMETIS on it, triangles to
 *               their owners with their neighbours' ids and owners
 *   label       longest edge of each owned triangle (mb_polylla_longest_edge),
 *               the ghosts' longest edges over the halo plan (mb_halo, two
 *               values per triangle), frontier flags of the owned edges
 *   regions     union-find over the owned non-frontier edges, then rounds of
 *               halo exchanges of (smallest triangle id, its owner) across
 *               the non-frontier cut edges until no label changes: the
 *               owner of a region is the owner of its smallest triangle
 *   stitch      triangles of regions owned elsewhere go to that rank
 *   mesh        the backend on this rank's whole regions
 *   output      each polygon's head (smallest half-edge id, global) and
 *               polygons sent to the rank whose block of head ids holds it,
 *               sorted there: contiguous rows of the canonical order
 */
#include "mb_alloc.h"
#include "mb_polylla_partitioned.h"
#include "mb_polylla_pp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "mb_faces.h"
#include "mb_halfedge.h"
#include "mb_halo.h"
#include "mb_log.h"
#include "mb_mpi.h"

void mb_pp_trace(pp_state *s, const char *what) {
  char who[64];
  snprintf(who, sizeof who, "[rank %d] partitioned Polylla", s->rank);
  mb_polylla_trace(&s->trace_wall, who, what);
}

int mb_pp_cmp_tri(const void *a, const void *b) {
  const pp_tri *x = a, *y = b;
  return (x->gid > y->gid) - (x->gid < y->gid);
}

void mb_pp_clocks(double *wall, double *cpu, double *minflt) {
  struct rusage ru;
  *wall = mb_wtime();
  *cpu = 0;
  *minflt = 0;
  if (getrusage(RUSAGE_SELF, &ru) == 0) {
    *cpu = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
    *minflt = (double)ru.ru_minflt;
  }
}

void mb_pp_step_end(pp_state *s, int k) {
  double w, c, f;
  mb_pp_clocks(&w, &c, &f);
  s->fig.step_ms[k] += 1e3 * (w - s->mark_wall);
  s->fig.step_cpu_ms[k] += 1e3 * (c - s->mark_cpu);
  s->fig.step_minflt[k] += f - s->mark_minflt;
  s->mark_wall = w;
  s->mark_cpu = c;
  s->mark_minflt = f;
}

/* What pp_fill reads: the slab, its blocks, the corners' coordinates and
 * the neighbours' owners fetched from other ranks (in row order). */
typedef struct pp_rows {
  const mb_mesh *m;
  int64_t f0, f1, v0, v1; /* this rank's face rows and vertex block */
  const int64_t *nbr;     /* [3 nf] dual graph */
  const int32_t *part;    /* [nf] owners of this rank's faces */
  const double *rxyz;     /* [3 x] corners in other ranks' blocks, in row order */
  const int32_t *rpart;   /* owners of neighbours in other ranks' face rows, in row order */
} pp_rows;

/* Triangle f of the slab as a record (t may be NULL: only the cursors of
 * rxyz (*qc) and rpart (*qn) move past it). */
static void pp_fill(const pp_rows *r, int64_t f, pp_tri *t, int64_t *qc, int64_t *qn) {
  if (t) memset(t, 0, sizeof *t);
  for (int k = 0; k < 3; k++) {
    const int64_t g = r->m->face_indices[3 * f + k], q = r->nbr[3 * f + k];
    const double *c = g >= r->v0 && g < r->v1 ? r->m->xyz + 3 * (g - r->v0) : r->rxyz + 3 * (*qc)++;
    const int32_t o = q < 0 ? -1 : q >= r->f0 && q < r->f1 ? r->part[q - r->f0] : r->rpart[(*qn)++];
    if (!t) continue;
    t->v[k] = g;
    t->xy[2 * k] = c[0];
    t->xy[2 * k + 1] = c[1];
    t->nbr[k] = q;
    t->nbr_owner[k] = o;
  }
  if (t) t->gid = r->f0 + f;
}

/* distribute: this rank's owned triangles, by global id. Every buffer is
 * sized by this rank's rows and what crosses to or from other ranks: the
 * corners and neighbour owners of this rank's own blocks are read in
 * place, and the triangles that stay are written once, straight into the
 * owned array. */
static mb_error pp_distribute(pp_state *s, const mb_mesh_slab *slab, mb_partitioner partitioner,
                              pp_tri **owned, int64_t *nowned, int64_t *nboundary) {
  MPI_Comm comm = s->comm;
  const mb_mesh *m = slab->rows;
  const int64_t nf = m->nf;
  mb_error err = MB_SUCCESS;
  int bad = 0;
  int64_t *vstarts = NULL, *fstarts = NULL, *nbr = NULL, *ask = NULL;
  double *rxyz = NULL;
  int32_t *part = NULL, *rpart = NULL;
  pp_tri *send = NULL, *got = NULL, *own = NULL;
  int *dest = NULL;
  int64_t ngot = 0;
  *owned = NULL;
  *nowned = 0;
  PP_ALLOC(vstarts, s->size + 1);
  PP_ALLOC(fstarts, s->size + 1);
  PP_ALLOC(nbr, 3 * nf);
  PP_ALLOC(part, nf);
  PP_AGREE("out of memory for the partitioned triangulation");
  double tc0 = mb_wtime();
  MB_CALL_GOTO(err, done, mb_block_starts(comm, slab->vertex_start, m->nv, vstarts));
  MB_CALL_GOTO(err, done, mb_block_starts(comm, slab->face_start, nf, fstarts));
  pp_rows rows = {m, fstarts[s->rank], fstarts[s->rank + 1], vstarts[s->rank],
                  vstarts[s->rank + 1], nbr, part, NULL, NULL};
  /* coordinates of the corners in other ranks' vertex blocks */
  int64_t nask = 0;
  for (int64_t h = 0; h < 3 * nf; h++)
    nask += m->face_indices[h] < rows.v0 || m->face_indices[h] >= rows.v1;
  PP_ALLOC(ask, nask);
  PP_ALLOC(rxyz, 3 * nask);
  PP_AGREE("out of memory for the partitioned triangulation");
  for (int64_t h = 0, q = 0; h < 3 * nf; h++)
    if (m->face_indices[h] < rows.v0 || m->face_indices[h] >= rows.v1) ask[q++] = m->face_indices[h];
  MB_CALL_GOTO(err, done, mb_block_fetch(comm, vstarts, 3 * sizeof(double), m->xyz, nask, ask,
                                         rxyz, &s->fig.bytes));
  rows.rxyz = rxyz;
  /* degenerate triangles, with the one-rank rule and words */
  int64_t degenerate = INT64_MAX;
  for (int64_t f = 0, q = 0; f < nf && degenerate == INT64_MAX; f++) {
    const double *c[3];
    for (int k = 0; k < 3; k++) {
      const int64_t g = m->face_indices[3 * f + k];
      c[k] = g >= rows.v0 && g < rows.v1 ? m->xyz + 3 * (g - rows.v0) : rxyz + 3 * q++;
    }
    const double *a = c[0], *b = c[1], *d = c[2];
    double o = (b[0] - a[0]) * (d[1] - a[1]) - (b[1] - a[1]) * (d[0] - a[0]);
    if (!(o < 0 || o > 0)) degenerate = slab->face_start + f;
  }
  MB_CALL_MPI_GOTO(err, done, MPI_Allreduce(MPI_IN_PLACE, &degenerate, 1, MPI_INT64_T, MPI_MIN,
                                            comm));
  MB_CHECK_GOTO(err, done, degenerate == INT64_MAX, MB_ERR_FORMAT,
                "mesh '%s': triangle %lld (0-based) is degenerate: zero area (collinear or "
                "repeated vertices)",
                s->name, (long long)degenerate);
  double tr0 = mb_wtime();
  MB_CALL_GOTO(err, done, mb_faces_dual(comm, slab, vstarts, nbr, &s->fig.bytes));
  mb_pp_step_end(s, MB_PP_STEP_DUAL);
  double tr1 = mb_wtime();
  MB_CALL_GOTO(err, done, mb_faces_partition(comm, fstarts, nbr, partitioner, part, &s->fig.bytes));
  double tr2 = mb_wtime();
  /* the owners of the neighbours in other ranks' face rows */
  free(ask);
  ask = NULL;
  nask = 0;
  int64_t nb = 0;
  for (int64_t h = 0; h < 3 * nf; h++) {
    nb += nbr[h] < 0;
    nask += nbr[h] >= 0 && (nbr[h] < rows.f0 || nbr[h] >= rows.f1);
  }
  *nboundary = nb;
  PP_ALLOC(ask, nask);
  PP_ALLOC(rpart, nask);
  PP_AGREE("out of memory for the partitioned triangulation");
  for (int64_t h = 0, q = 0; h < 3 * nf; h++)
    if (nbr[h] >= 0 && (nbr[h] < rows.f0 || nbr[h] >= rows.f1)) ask[q++] = nbr[h];
  MB_CALL_GOTO(err, done, mb_block_fetch(comm, fstarts, sizeof(int32_t), part, nask, ask, rpart,
                                         &s->fig.bytes));
  rows.rpart = rpart;
  /* the triangles owned elsewhere go there */
  int64_t nsend = 0;
  for (int64_t f = 0; f < nf; f++) nsend += part[f] != s->rank;
  PP_ALLOC(send, nsend);
  PP_ALLOC(dest, nsend);
  PP_AGREE("out of memory for the partitioned triangulation");
  for (int64_t f = 0, qc = 0, qn = 0, q = 0; f < nf; f++) {
    const int go = part[f] != s->rank;
    pp_fill(&rows, f, go ? &send[q] : NULL, &qc, &qn);
    if (go) dest[q++] = part[f];
  }
  double tr3 = mb_wtime();
  MB_CALL_GOTO(err, done, mb_records_exchange(comm, nsend, dest, sizeof *send, send, &ngot,
                                              (void **)&got, NULL, &s->fig.bytes));
  free(send);
  send = NULL;
  /* those received arrive by source rank, each in its row order: the face
   * blocks follow the ranks, so they are sorted by id, those of lower
   * ranks before this rank's rows, the others after */
  const int64_t nkeep = nf - nsend, n = nkeep + ngot;
  PP_ALLOC(own, n);
  PP_AGREE("out of memory for the partitioned triangulation");
  int64_t nlow = 0;
  while (nlow < ngot && got[nlow].gid < rows.f0) nlow++;
  memcpy(own, got, sizeof *own * (size_t)nlow);
  for (int64_t f = 0, qc = 0, qn = 0, q = nlow; f < nf; f++) {
    const int keep = part[f] == s->rank;
    pp_fill(&rows, f, keep ? &own[q] : NULL, &qc, &qn);
    q += keep;
  }
  memcpy(own + nlow + nkeep, got + nlow, sizeof *own * (size_t)(ngot - nlow));
  if (getenv("MB_POLYLLA_TRACE"))
    fprintf(stderr, "[rank %d] distribute: coordinates %.1f ms, dual graph %.1f ms, partition "
            "%.1f ms, neighbour owners %.1f ms, to owners %.1f ms\n", s->rank, 1e3 * (tr0 - tc0),
            1e3 * (tr1 - tr0), 1e3 * (tr2 - tr1), 1e3 * (tr3 - tr2), 1e3 * (mb_wtime() - tr3));
  for (int64_t i = 1; i < n; i++)
    if (own[i].gid <= own[i - 1].gid) {
      qsort(own, (size_t)n, sizeof *own, mb_pp_cmp_tri);
      break;
    }
  *owned = own;
  *nowned = n;
  own = NULL;
done:
  free(vstarts); free(fstarts); free(nbr); free(ask); free(rxyz); free(part); free(rpart);
  free(send); free(got); free(own); free(dest);
  return err;
}

/* label + regions: frontier flags of the owned edges (nonfrontier[3 i + k])
 * and, per owned triangle, the owner of its region and whether the region
 * crosses the cut. */
static mb_error pp_regions(pp_state *s, pp_tri *own, int64_t n, int32_t *region_owner) {
  MPI_Comm comm = s->comm;
  mb_error err = MB_SUCCESS;
  int bad = 0;
  int64_t *gid = NULL, *ghost = NULL, *parent = NULL, *label = NULL, *at = NULL;
  int *ghost_owner = NULL;
  int32_t *lab_owner = NULL;
  uint8_t *nonfrontier = NULL, *crossing = NULL;
  double *x = NULL;
  mb_halo *halo = NULL;
  int64_t nghost = 0;
  double t0 = mb_wtime();
  PP_ALLOC(gid, n);
  PP_ALLOC(ghost, 3 * n);
  PP_ALLOC(ghost_owner, 3 * n);
  PP_ALLOC(parent, n);
  PP_ALLOC(label, n);
  PP_ALLOC(lab_owner, n);
  PP_ALLOC(at, 3 * n);
  PP_ALLOC(nonfrontier, 3 * n);
  PP_ALLOC(crossing, n);
  PP_AGREE("out of memory for the halo of triangles");
  for (int64_t i = 0; i < n; i++) gid[i] = own[i].gid;
  /* ghosts: neighbours owned elsewhere, each once, by id */
  for (int64_t i = 0; i < n; i++)
    for (int k = 0; k < 3; k++)
      if (own[i].nbr[k] >= 0 && own[i].nbr_owner[k] != s->rank) ghost[nghost++] = own[i].nbr[k];
  qsort(ghost, (size_t)nghost, sizeof *ghost, mb_pp_cmp_i64);
  int64_t u = 0;
  for (int64_t g = 0; g < nghost; g++)
    if (u == 0 || ghost[g] != ghost[u - 1]) ghost[u++] = ghost[g];
  nghost = u;
  for (int64_t i = 0; i < n; i++)
    for (int k = 0; k < 3; k++) {
      int64_t q = own[i].nbr[k];
      if (q < 0) {
        at[3 * i + k] = -1;
      } else if (own[i].nbr_owner[k] == s->rank) {
        int64_t guess = i + (q - gid[i]); /* dense ids (blocks): right at once */
        at[3 * i + k] = guess >= 0 && guess < n && gid[guess] == q ? guess : mb_pp_find_i64(gid, n, q);
      } else {
        int64_t g = mb_pp_find_i64(ghost, nghost, q);
        at[3 * i + k] = n + g;
        ghost_owner[g] = own[i].nbr_owner[k];
      }
    }
  s->fig.ghosts = (double)nghost;
  PP_ALLOC(x, 2 * (n + nghost));
  PP_AGREE("out of memory for the halo of triangles");
  MB_CALL_GOTO(err, done, mb_halo_create(comm, n, gid, nghost, ghost, ghost_owner, 2, &halo));

  /* label: longest edges, the ghosts' over the halo, frontier flags */
  for (int64_t i = 0; i < n; i++) {
    int64_t e[2];
    mb_polylla_longest_edge(own[i].v, own[i].xy, s->ties, e);
    x[2 * i] = (double)e[0];
    x[2 * i + 1] = (double)e[1];
  }
  MB_CALL_GOTO(err, done, mb_halo_begin(halo, x));
  MB_CALL_GOTO(err, done, mb_halo_end(halo, x));
  for (int64_t i = 0; i < n; i++)
    for (int k = 0; k < 3; k++) {
      int64_t a = own[i].v[k], b = own[i].v[(k + 1) % 3], j = at[3 * i + k];
      double lo = (double)(a < b ? a : b), hi = (double)(a < b ? b : a);
      nonfrontier[3 * i + k] =
          j >= 0 && ((x[2 * i] == lo && x[2 * i + 1] == hi) || (x[2 * j] == lo && x[2 * j + 1] == hi));
    }
  double t1 = mb_wtime();
  s->fig.ms_label = 1e3 * (t1 - t0);
  mb_pp_step_end(s, MB_PP_STEP_LABEL);

  /* regions: union-find here, then (smallest id, its owner) over the cut */
  for (int64_t i = 0; i < n; i++) parent[i] = i;
  for (int64_t i = 0; i < n; i++)
    for (int k = 0; k < 3; k++) {
      int64_t j = at[3 * i + k];
      if (nonfrontier[3 * i + k] && j < n) {
        int64_t ri = mb_pp_uf_find(parent, i), rj = mb_pp_uf_find(parent, j);
        if (ri != rj) parent[ri < rj ? rj : ri] = ri < rj ? ri : rj; /* root: smallest index */
      }
    }
  for (int64_t i = 0; i < n; i++) {
    int64_t r = mb_pp_uf_find(parent, i);
    label[i] = gid[r]; /* owned in ascending id: the root is the region's smallest here */
    lab_owner[i] = s->rank;
    crossing[i] = 0;
  }
  for (int64_t i = 0; i < n; i++)
    for (int k = 0; k < 3; k++)
      if (nonfrontier[3 * i + k] && at[3 * i + k] >= n) crossing[mb_pp_uf_find(parent, i)] = 1;
  for (int round = 0;; round++) {
    for (int64_t i = 0; i < n; i++) {
      int64_t r = mb_pp_uf_find(parent, i);
      x[2 * i] = (double)label[r];
      x[2 * i + 1] = (double)lab_owner[r];
    }
    MB_CALL_GOTO(err, done, mb_halo_begin(halo, x));
    MB_CALL_GOTO(err, done, mb_halo_end(halo, x));
    int changed = 0;
    for (int64_t i = 0; i < n; i++)
      for (int k = 0; k < 3; k++) {
        int64_t j = at[3 * i + k];
        if (!nonfrontier[3 * i + k] || j < n) continue;
        int64_t r = mb_pp_uf_find(parent, i);
        if ((int64_t)x[2 * j] < label[r]) {
          label[r] = (int64_t)x[2 * j];
          lab_owner[r] = (int32_t)x[2 * j + 1];
          changed = 1;
        }
      }
    MB_CALL_MPI_GOTO(err, done, MPI_Allreduce(MPI_IN_PLACE, &changed, 1, MPI_INT, MPI_MAX, comm));
    s->fig.cc_rounds = round + 1;
    if (!changed) break;
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t r = mb_pp_uf_find(parent, i);
    region_owner[i] = lab_owner[r];
    own[i].crossing = crossing[r];
  }
  s->fig.ms_regions = 1e3 * (mb_wtime() - t1);
  mb_pp_step_end(s, MB_PP_STEP_REGIONS);
done:
  mb_halo_free(halo);
  free(gid); free(ghost); free(ghost_owner); free(parent); free(label); free(lab_owner);
  free(at); free(nonfrontier); free(crossing); free(x);
  return err;
}

/* The backend names a triangle by its row in this rank's regions; name
 * its row of the whole mesh instead ("triangle N (0-based)"). */
static mb_error whole_mesh_words(mb_error err, const pp_tri *tri, int64_t n) {
  const char *msg = mb_error_message(), *at = strstr(msg, "triangle ");
  long long t = -1;
  int used = 0;
  if (!at || sscanf(at, "triangle %lld (0-based)%n", &t, &used) != 1 || used == 0 || t < 0 ||
      t >= n)
    return err;
  char buf[2048];
  snprintf(buf, sizeof buf, "%.*striangle %lld (0-based)%s", (int)(at - msg), msg,
           (long long)tri[t].gid, at + used);
  return mb_error_set(err, __FILE__, __LINE__, __func__, "%s", buf);
}

/* mesh: the backend on whole regions (tri sorted by id); polygons with their global heads (heads [poly->nf])
 * and global vertex ids. The local numbering keeps the global order of
 * triangles and vertices, so every comparison of ids Polylla makes (keys of
 * tied edges, the largest half-edge at a tip, heads) goes the same way. */
mb_error mb_pp_mesh(pp_state *s, const pp_tri *tri, int64_t n, const mb_polylla_opts *opts,
                    int cuda, mb_mesh **poly, int64_t **heads, mb_polylla_stats *st) {
  mb_error err = MB_SUCCESS;
  uint64_t *used = NULL;
  int64_t *below = NULL, *vid = NULL;
  mb_mesh *sub = NULL;
  *poly = NULL;
  *heads = NULL;
  memset(st, 0, sizeof *st);
  if (n == 0) return MB_SUCCESS;
  /* the vertices used, in id order; local id = rank among them. A bit set
   * over the span [vmin, vmax] of this rank's ids where it is no larger
   * than the ids themselves (blocks: always), else the ids sorted: never
   * sized by the whole mesh. */
  int64_t vmin = INT64_MAX, vmax = INT64_MIN, nv = 0;
  for (int64_t i = 0; i < n; i++)
    for (int k = 0; k < 3; k++) {
      vmin = tri[i].v[k] < vmin ? tri[i].v[k] : vmin;
      vmax = tri[i].v[k] > vmax ? tri[i].v[k] : vmax;
    }
  const int64_t nw = (vmax - vmin) / 64 + 1;
  const int bits = nw <= 3 * n;
  if (bits) {
    used = calloc((size_t)nw, sizeof *used);
    below = malloc(sizeof *below * (size_t)(nw + 1));
    MB_CHECK_GOTO(err, done, used && below, MB_ERR_MEMORY, "out of memory for %lld triangles",
                  (long long)n);
    for (int64_t i = 0; i < n; i++)
      for (int k = 0; k < 3; k++) {
        int64_t g = tri[i].v[k] - vmin;
        used[g >> 6] |= 1ull << (g & 63);
      }
    below[0] = 0;
    for (int64_t w = 0; w < nw; w++) below[w + 1] = below[w] + __builtin_popcountll(used[w]);
    nv = below[nw];
    vid = malloc(sizeof *vid * (size_t)nv);
    MB_CHECK_GOTO(err, done, vid, MB_ERR_MEMORY, "out of memory for %lld vertices", (long long)nv);
    for (int64_t w = 0, l = 0; w < nw; w++)
      for (uint64_t b = used[w]; b; b &= b - 1) vid[l++] = vmin + 64 * w + __builtin_ctzll(b);
  } else {
    vid = malloc(sizeof *vid * (size_t)(3 * n));
    MB_CHECK_GOTO(err, done, vid, MB_ERR_MEMORY, "out of memory for %lld triangles", (long long)n);
    for (int64_t i = 0; i < n; i++)
      for (int k = 0; k < 3; k++) vid[3 * i + k] = tri[i].v[k];
    qsort(vid, (size_t)(3 * n), sizeof *vid, mb_pp_cmp_i64);
    for (int64_t i = 0; i < 3 * n; i++)
      if (nv == 0 || vid[i] != vid[nv - 1]) vid[nv++] = vid[i];
  }
  /* the regions as one triangulation: vertices and triangles in id order */
  MB_CALL_GOTO(err, done, mb_mesh_create(s->name, nv, n, 3 * n, &sub));
  sub->kind = MB_KIND_TRIANGULATION2D;
  for (int64_t i = 0; i < n; i++) {
    sub->face_offsets[i + 1] = 3 * (i + 1);
    for (int k = 0; k < 3; k++) {
      int64_t g = tri[i].v[k] - vmin, l;
      if (bits)
        l = below[g >> 6] + __builtin_popcountll(used[g >> 6] & ((1ull << (g & 63)) - 1));
      else
        l = mb_pp_find_i64(vid, nv, g + vmin);
      sub->face_indices[3 * i + k] = l;
      sub->xyz[3 * l] = tri[i].xy[2 * k];
      sub->xyz[3 * l + 1] = tri[i].xy[2 * k + 1];
    }
  }
  mb_polylla_opts o = opts ? *opts : (mb_polylla_opts){0};
  o.heads = heads;
  err = cuda ? mb_polylla_cuda(sub, &o, poly, st) : mb_polylla_cpu(sub, &o, poly, st);
  if (err) {
    err = whole_mesh_words(err, tri, n);
    goto done;
  }
  const mb_mesh *p = *poly;
  for (int64_t q = 0; q < p->nf; q++) (*heads)[q] = 3 * tri[(*heads)[q] / 3].gid + (*heads)[q] % 3;
  for (int64_t k = 0; k < p->face_offsets[p->nf]; k++) p->face_indices[k] = vid[p->face_indices[k]];
done:
  mb_mesh_free(sub);
  free(used);
  free(below);
  free(vid);
  if (err) {
    mb_mesh_free(*poly);
    *poly = NULL;
    free(*heads);
    *heads = NULL;
  }
  return err;
}

mb_error mb_pp_finish(mb_mesh_slab *slab, mb_mesh **out, int64_t first, const int64_t totals[5]) {
  static const char *const names[5] = {"polygons", "frontier_edges", "barrier_edge_tips",
                                       "polygons_repaired", "pinches_split"};
  mb_mesh *o = *out;
  o->kind = MB_KIND_POLYGONS2D;
  o->index = slab->rows->index;
  for (int k = 0; k < 5; k++)
    MB_CALL(mb_attrs_setf(&o->attrs, names[k], "%lld", (long long)totals[k]));
  double *xyz = o->xyz; /* the vertex rows move over as they are */
  o->xyz = slab->rows->xyz;
  o->nv = slab->rows->nv;
  slab->rows->xyz = xyz;
  slab->rows->nv = 0;
  mb_mesh_free(slab->rows);
  slab->rows = o;
  *out = NULL;
  slab->face_start = first;
  slab->nf = totals[0];
  return MB_SUCCESS;
}

/* output: polygons to the rank whose block of head ids holds them, sorted
 * there; the rows of the output mesh on this rank. */
static mb_error pp_output(pp_state *s, mb_mesh_slab *slab, const mb_mesh *poly,
                          const int64_t *heads, int64_t ntri, int64_t totals[5]) {
  MPI_Comm comm = s->comm;
  mb_error err = MB_SUCCESS;
  int bad = 0;
  const int64_t np = poly ? poly->nf : 0, ni = poly ? poly->face_offsets[np] : 0;
  const int64_t nhalf = 3 * ntri;
  pp_poly *send = NULL, *got = NULL;
  int64_t *idx = NULL, *gidx = NULL, *order = NULL, *start = NULL;
  int *pdest = NULL, *idest = NULL, *src = NULL;
  int64_t ngot = 0, ngidx = 0, *cur = NULL;
  mb_mesh *out = NULL;
  double *counts = NULL;
  PP_ALLOC(send, np);
  PP_ALLOC(pdest, np);
  PP_ALLOC(idx, ni);
  PP_ALLOC(idest, ni);
  PP_AGREE("out of memory for the polygons");
  for (int64_t q = 0; q < np; q++) {
    int d = (int)(((__int128)heads[q] * s->size) / nhalf);
    send[q] = (pp_poly){heads[q], poly->face_offsets[q + 1] - poly->face_offsets[q]};
    pdest[q] = d;
    for (int64_t k = poly->face_offsets[q]; k < poly->face_offsets[q + 1]; k++) {
      idx[k] = poly->face_indices[k];
      idest[k] = d;
    }
  }
  MB_CALL_GOTO(err, done, mb_records_exchange(comm, np, pdest, sizeof *send, send, &ngot,
                                              (void **)&got, &src, &s->fig.bytes));
  MB_CALL_GOTO(err, done, mb_records_exchange(comm, ni, idest, sizeof *idx, idx, &ngidx,
                                              (void **)&gidx, NULL, &s->fig.bytes));
  /* both arrive by source, each source's in its order: the polygons' first
   * indices follow from the counts; then sort by head */
  PP_ALLOC(order, 2 * ngot);
  PP_ALLOC(start, ngot + 1);
  PP_ALLOC(counts, ngot);
  PP_AGREE("out of memory for the polygons");
  start[0] = 0;
  for (int64_t q = 0; q < ngot; q++) {
    start[q + 1] = start[q] + got[q].n;
    order[2 * q] = got[q].head;
    order[2 * q + 1] = q;
  }
  if (s->size > 16) {
    qsort(order, (size_t)ngot, 2 * sizeof *order, mb_pp_cmp_i64);
  } else { /* merge the sources' runs, each sorted by head */
    PP_ALLOC(cur, 2 * (s->size + 1));
    PP_AGREE("out of memory for the polygons");
    int64_t *end = cur + s->size + 1; /* the runs arrive in rank order */
    for (int r = 0; r <= s->size; r++) end[r] = 0;
    for (int64_t q = 0; q < ngot; q++) end[src[q]]++;
    int64_t at = 0;
    for (int r = 0; r < s->size; r++) {
      cur[r] = at;
      at += end[r];
      end[r] = at;
    }
    for (int64_t k = 0; k < ngot; k++) {
      int best = -1;
      for (int r = 0; r < s->size; r++)
        if (cur[r] < end[r] && (best < 0 || got[cur[r]].head < got[cur[best]].head)) best = r;
      order[2 * k] = got[cur[best]].head;
      order[2 * k + 1] = cur[best]++;
    }
  }
  int64_t first = 0;
  MB_CALL_MPI_GOTO(err, done, MPI_Exscan(&ngot, &first, 1, MPI_INT64_T, MPI_SUM, comm));
  if (s->rank == 0) first = 0;
  const mb_mesh *in = slab->rows;
  MB_CALL_GOTO(err, done, mb_mesh_create(in->name, 0, ngot, ngidx, &out));
  /* its vertex rows are the input's, moved over on success */
  int64_t pos = 0;
  for (int64_t r = 0; r < ngot; r++) {
    int64_t q = order[2 * r + 1];
    out->face_offsets[r] = pos;
    memcpy(out->face_indices + pos, gidx + start[q], sizeof(int64_t) * (size_t)got[q].n);
    pos += got[q].n;
    counts[r] = (double)got[q].n;
  }
  out->face_offsets[ngot] = pos;
  MB_CALL_GOTO(err, done, mb_mesh_set_face_field(out, "vertex_count", 1, counts));
  MB_CALL_GOTO(err, done, mb_pp_finish(slab, &out, first, totals));
done:
  err = mb_agree(comm, err);
  mb_mesh_free(out);
  free(send); free(got); free(idx); free(gidx); free(order); free(start); free(pdest);
  free(idest); free(counts); free(src); free(cur);
  return err;
}

/* The bytes of a rank's rows as given: face offsets and indices (int64),
 * positions (float64). */
static double rows_bytes(const mb_mesh *m) {
  return 8.0 * (double)(m->nf + 1) + 8.0 * (double)(m->nf ? m->face_offsets[m->nf] : 0) +
         24.0 * (double)m->nv;
}

/* The memory figures of the per-rank report: the peak, the start, the
 * share (rows_mb and the ghosts' positions and ids). */
static void memory_figures(mb_polylla_rank_figures *f, double rows_mb) {
  f->peak_rss_mb = mb_rss_peak_mb();
  f->start_rss_mb = mb_rss_start_mb();
  f->share_mb = rows_mb + 32.0 * f->ghosts / 1048576.0;
}

mb_error mb_polylla_partitioned(MPI_Comm comm, mb_partitioner partitioner,
                                const mb_polylla_opts *opts, int cuda, mb_mesh_slab *slab,
                                mb_polylla_rank_figures *fig) {
  pp_state s = {.comm = comm, .ties = opts ? opts->ties : MB_POLYLLA_TIES_KEY};
  MB_CALL_MPI(MPI_Comm_rank(comm, &s.rank));
  MB_CALL_MPI(MPI_Comm_size(comm, &s.size));
  const mb_mesh *m = slab->rows;
  char name[256]; /* the rows (and their name) are replaced by the output */
  snprintf(name, sizeof name, "%s", m->name ? m->name : "");
  s.name = name;
  mb_error err = MB_SUCCESS;
  int bad = 0;
  if (m->kind != MB_KIND_TRIANGULATION2D)
    err = mb_error_set(MB_ERR_ARG, __FILE__, __LINE__, __func__,
                       "mesh '%s' is of kind %s; Polylla needs a triangulation2d (every face a "
                       "triangle)",
                       s.name, mb_kind_name(m->kind));
  int64_t bad_face = INT64_MAX; /* the first face that is no triangle */
  const int64_t *fo = m->face_offsets;
#pragma omp parallel for schedule(static) reduction(min : bad_face)
  for (int64_t f = 0; f < m->nf; f++)
    if (fo[f + 1] - fo[f] != 3 && f < bad_face) bad_face = f;
  for (int64_t f = bad_face; !err && f < m->nf; f++)
    if (m->face_offsets[f + 1] - m->face_offsets[f] != 3)
      err = mb_error_set(MB_ERR_ARG, __FILE__, __LINE__, __func__,
                         "mesh '%s': face %lld (0-based) has %lld vertices; Polylla needs a "
                         "triangulation (every face a triangle)",
                         s.name, (long long)(slab->face_start + f),
                         (long long)(m->face_offsets[f + 1] - m->face_offsets[f]));
  MB_CALL(mb_agree(comm, err));
  MB_CHECK(slab->nf > 0, MB_ERR_ARG, "mesh '%s' has no triangles", s.name);

  pp_tri *own = NULL, *got = NULL, *mine = NULL, *go = NULL;
  const double rows_mb = rows_bytes(m) / 1048576.0; /* before the rows change (mb_pp_finish) */
  mb_pp_clocks(&s.mark_wall, &s.mark_cpu, &s.mark_minflt);
  int taken = 0; /* each rank's rows as they are: the slab path where it applies */
  if (partitioner == MB_PARTITIONER_BLOCKS && !getenv("MB_POLYLLA_GENERAL"))
    MB_CALL(mb_pp_slab(&s, slab, opts, cuda, &taken));
  if (s.rank == 0)
    mb_log(MB_LOG_VERBOSE, "mesh '%s': partitioned Polylla by the %s path", s.name,
           taken ? "slab" : "general");
  if (taken) {
    memory_figures(&s.fig, rows_mb);
    if (fig) *fig = s.fig;
    return MB_SUCCESS;
  }
  memset(&s.fig, 0, sizeof s.fig);
  int32_t *region_owner = NULL;
  int *dest = NULL;
  int64_t nown = 0, nboundary = 0, ngot = 0, *heads = NULL;
  mb_mesh *poly = NULL;
  mb_polylla_stats st;
  mb_pp_clocks(&s.mark_wall, &s.mark_cpu, &s.mark_minflt);
  double t0 = s.mark_wall;
  MB_CALL_GOTO(err, done, pp_distribute(&s, slab, partitioner, &own, &nown, &nboundary));
  mb_pp_step_end(&s, MB_PP_STEP_DISTRIBUTE);
  s.fig.owned = (double)nown;
  double t1 = mb_wtime();
  s.fig.ms_distribute = 1e3 * (t1 - t0);
  PP_ALLOC(region_owner, nown);
  PP_AGREE("out of memory for the regions");
  MB_CALL_GOTO(err, done, pp_regions(&s, own, nown, region_owner));

  /* stitch: triangles of regions owned elsewhere go to that owner; those
   * received are merged into the kept ones in place, from the back */
  double t2 = mb_wtime();
  int64_t nkeep = 0, ngo = 0;
  for (int64_t i = 0; i < nown; i++) ngo += region_owner[i] != s.rank;
  PP_ALLOC(go, ngo);
  PP_ALLOC(dest, ngo);
  PP_AGREE("out of memory for the regions");
  ngo = 0;
  for (int64_t i = 0; i < nown; i++) {
    if (region_owner[i] == s.rank) {
      if (nkeep != i) own[nkeep] = own[i]; /* in place: nkeep <= i */
      nkeep++;
    } else {
      go[ngo] = own[i];
      go[ngo].crossing = 1;
      dest[ngo++] = region_owner[i];
    }
  }
  s.fig.migrated = (double)ngo;
  MB_CALL_GOTO(err, done, mb_records_exchange(comm, ngo, dest, sizeof *go, go, &ngot,
                                              (void **)&got, NULL, &s.fig.bytes));
  const int64_t nmine = nkeep + ngot;
  if (ngot > 0) {
    pp_tri *grown = realloc(own, sizeof *own * (size_t)nmine);
    if (grown) own = grown;
    else bad = 1;
  }
  PP_AGREE("out of memory for the regions");
  qsort(got, (size_t)ngot, sizeof *got, mb_pp_cmp_tri); /* the few that crossed, from many ranks */
  for (int64_t i = nkeep - 1, j = ngot - 1, k = nmine - 1; j >= 0; k--) /* both sorted by id */
    own[k] = i >= 0 && own[i].gid > got[j].gid ? own[i--] : got[j--];
  mine = own;
  s.fig.meshed = (double)nmine;
  double t3 = mb_wtime();
  s.fig.ms_stitch = 1e3 * (t3 - t2);
  mb_pp_step_end(&s, MB_PP_STEP_STITCH);

  /* mesh: the backend on whole regions */
  err = mb_pp_mesh(&s, mine, nmine, opts, cuda, &poly, &heads, &st);
  MB_CALL_GOTO(err, done, mb_agree(comm, err));
  double t4 = mb_wtime();
  s.fig.ms_mesh = 1e3 * (t4 - t3);
  mb_pp_step_end(&s, MB_PP_STEP_MESH);
  s.fig.ms_phases = cuda ? st.ms_kernels : st.ms_label + st.ms_repair + st.ms_traversal;
  if (poly)
    for (int64_t q = 0; q < poly->nf; q++) {
      int64_t tri = heads[q] / 3, at = 0, lo = 0, hi = nmine - 1;
      while (lo <= hi) { /* the head's triangle */
        int64_t mid = lo + (hi - lo) / 2;
        if (mine[mid].gid == tri) { at = mid; break; }
        if (mine[mid].gid < tri) lo = mid + 1;
        else hi = mid - 1;
      }
      if (mine[at].crossing) s.fig.polygons_stitched++;
      else s.fig.polygons_local++;
    }

  /* output: global figures, polygons to their rows */
  int64_t totals[5] = {poly ? poly->nf : 0, (poly ? poly->face_offsets[poly->nf] : 0) + nboundary,
                       st.barrier_edge_tips, st.polygons_repaired, st.pinches_split};
  MB_CALL_MPI_GOTO(err, done, MPI_Allreduce(MPI_IN_PLACE, totals, 5, MPI_INT64_T, MPI_SUM, comm));
  totals[1] /= 2; /* frontier half-edges + boundary edges = 2 x frontier edges */
  MB_CALL_GOTO(err, done, pp_output(&s, slab, poly, heads, slab->nf, totals));
  s.fig.ms_output = 1e3 * (mb_wtime() - t4);
  mb_pp_step_end(&s, MB_PP_STEP_OUTPUT);
  memory_figures(&s.fig, rows_mb);
  if (fig) *fig = s.fig;
done:
  free(own); free(got); free(go); free(region_owner); free(dest); free(heads);
  mb_mesh_free(poly);
  return err;
}

/* Per-rank figures of a partitioned run, gathered to rank 0 and logged
 * there, one line per rank. Collective. */
mb_error mb_polylla_figures_report(MPI_Comm comm, const char *name,
                                   const mb_polylla_rank_figures *fig) {
  int rank, size;
  MB_CALL_MPI(MPI_Comm_rank(comm, &rank));
  MB_CALL_MPI(MPI_Comm_size(comm, &size));
  const int nv = (int)(sizeof *fig / sizeof(double));
  double *all = rank == 0 ? malloc(sizeof *fig * (size_t)size) : NULL;
  MB_CALL(mb_agree(comm, rank == 0 && !all ? mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__,
                                                          __func__, "out of memory")
                                           : MB_SUCCESS));
  MB_CALL_MPI(MPI_Gather(fig, nv, MPI_DOUBLE, all, nv, MPI_DOUBLE, 0, comm));
  if (rank == 0) {
    mb_log(MB_LOG_NORMAL, "%s: partitioned Polylla per rank (times in ms)\n"
           "  rank    owned   ghosts   meshed  migrated  polygons  stitched  cc-rounds  "
           "exchanged  distribute   label  regions  stitch     mesh   output  peak RSS  "
           "at start     share  (peak - start) / share", name);
    for (int r = 0; r < size; r++) {
      const mb_polylla_rank_figures *f = (const mb_polylla_rank_figures *)all + r;
      mb_log(MB_LOG_NORMAL, "  %4d %8.0f %8.0f %8.0f %9.0f %9.0f %9.0f %10.0f %8.2f MB %11.1f "
             "%7.1f %8.1f %7.1f %8.1f %8.1f %6.0f MB %6.0f MB %6.0f MB %8.2f", r, f->owned,
             f->ghosts, f->meshed, f->migrated, f->polygons_local + f->polygons_stitched,
             f->polygons_stitched, f->cc_rounds, f->bytes / 1e6, f->ms_distribute, f->ms_label,
             f->ms_regions, f->ms_stitch, f->ms_mesh, f->ms_output, f->peak_rss_mb,
             f->start_rss_mb, f->share_mb,
             f->share_mb > 0 && f->start_rss_mb > 0
                 ? (f->peak_rss_mb - f->start_rss_mb) / f->share_mb
                 : 0.0);
    }
    mb_log(MB_LOG_NORMAL, "  host steps per rank: wall ms / CPU ms (user + system) / thousands "
           "of minor page faults\n"
           "  rank          dual graph          distribute               label             "
           "regions              stitch                mesh              output");
    for (int r = 0; r < size; r++) {
      const mb_polylla_rank_figures *f = (const mb_polylla_rank_figures *)all + r;
      char line[512];
      int at = snprintf(line, sizeof line, "  %4d", r);
      for (int k = 0; k < MB_PP_NSTEPS && at > 0 && at < (int)sizeof line; k++)
        at += snprintf(line + at, sizeof line - (size_t)at, " %7.1f/%6.1f/%5.0f",
                       f->step_ms[k], f->step_cpu_ms[k], 1e-3 * f->step_minflt[k]);
      mb_log(MB_LOG_NORMAL, "%s", line);
    }
  }
  free(all);
  return MB_SUCCESS;
}
