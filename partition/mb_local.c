/* meshbatch: owned/ghost numbering of a rank's piece (see mb_local.h). */
#include "mb_local.h"

#include <stdlib.h>
#include <string.h>

void mb_local_domain_free(mb_local_domain *d) {
  if (!d) return;
  free(d->global);
  free(d->ghost_owner);
  mb_adjacency_free(d->adj);
  free(d);
}

enum { NONE = 0, INTERIOR = 1, HALO_OWNED = 2, GHOST = 3 };

/* Mark owned vertices, the ghosts within `depth` edges of them, and which
 * owned ones have a ghost within depth edges (they wait for the halo).
 * dist[i]: edges from the nearest owned vertex, for ghosts (1..depth). */
static mb_error classify(const mb_adjacency *g, const int32_t *part, int rank, int depth,
                         int8_t *kind, int8_t *dist) {
  for (int64_t i = 0; i < g->nv; i++)
    if (part[i] == rank) kind[i] = INTERIOR;
  if (depth == 1) { /* the common case, without the breadth-first search */
    for (int64_t i = 0; i < g->nv; i++) {
      if (part[i] != rank) continue;
      for (int64_t k = g->row[i]; k < g->row[i + 1]; k++)
        if (part[g->col[k]] != rank) {
          kind[i] = HALO_OWNED;
          kind[g->col[k]] = GHOST;
          dist[g->col[k]] = 1;
        }
    }
    return MB_SUCCESS;
  }
  /* Ghosts: breadth-first rings around the owned vertices. */
  int64_t *front = malloc(sizeof *front * (size_t)(g->nv + 1));
  int64_t *next = malloc(sizeof *next * (size_t)(g->nv + 1));
  int64_t nf = 0, nn;
  if (!front || !next) {
    free(front); free(next);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for the ghost rings");
  }
  for (int64_t i = 0; i < g->nv; i++)
    if (kind[i] == INTERIOR) front[nf++] = i;
  for (int d = 1; d <= depth; d++, nf = nn) {
    nn = 0;
    for (int64_t q = 0; q < nf; q++)
      for (int64_t k = g->row[front[q]]; k < g->row[front[q] + 1]; k++) {
        int64_t j = g->col[k];
        if (kind[j] == NONE) {
          kind[j] = GHOST;
          dist[j] = (int8_t)d;
          next[nn++] = j;
        }
      }
    int64_t *t = front; front = next; next = t;
  }
  /* Owned vertices with a ghost within depth edges: rings around the ghosts,
   * through owned vertices only. */
  nf = 0;
  for (int64_t i = 0; i < g->nv; i++)
    if (kind[i] == GHOST) front[nf++] = i;
  for (int d = 1; d <= depth; d++, nf = nn) {
    nn = 0;
    for (int64_t q = 0; q < nf; q++)
      for (int64_t k = g->row[front[q]]; k < g->row[front[q] + 1]; k++) {
        int64_t j = g->col[k];
        if (kind[j] == INTERIOR) {
          kind[j] = HALO_OWNED;
          next[nn++] = j;
        }
      }
    int64_t *t = front; front = next; next = t;
  }
  free(front);
  free(next);
  return MB_SUCCESS;
}

/* Copy the rows of local vertices [0, nowned) (the owned ones, and with a
 * ghost depth above 1 the inner ghost rings) from the global adjacency. */
static mb_error localize(const mb_adjacency *g, const int64_t *l2g, const int64_t *g2l,
                         int64_t nowned, mb_adjacency *a) {
  a->nv = nowned;
  MB_CALLOC(a->row, nowned + 1);
  MB_CALLOC(a->brow, nowned + 1);
  MB_CALLOC(a->on_boundary, nowned);
  for (int64_t l = 0; l < nowned; l++) {
    int64_t i = l2g[l];
    a->row[l + 1] = a->row[l] + (g->row[i + 1] - g->row[i]);
    a->brow[l + 1] = a->brow[l] + (g->brow[i + 1] - g->brow[i]);
    a->on_boundary[l] = g->on_boundary[i];
  }
  a->nnz = a->row[nowned];
  MB_CALLOC(a->col, a->nnz);
  MB_CALLOC(a->bcol, a->brow[nowned]);
  if (g->opp) MB_CALLOC(a->opp_row, a->nnz + 1);
  for (int64_t l = 0; l < nowned; l++) {
    int64_t i = l2g[l], base = g->row[i];
    for (int64_t k = base; k < g->row[i + 1]; k++) {
      int64_t q = a->row[l] + (k - base);
      a->col[q] = g2l[g->col[k]];
      if (g->opp) a->opp_row[q + 1] = a->opp_row[q] + (g->opp_row[k + 1] - g->opp_row[k]);
    }
    for (int64_t k = g->brow[i]; k < g->brow[i + 1]; k++)
      a->bcol[a->brow[l] + (k - g->brow[i])] = g2l[g->bcol[k]];
  }
  if (g->opp) {
    MB_CALLOC(a->opp, a->opp_row[a->nnz]);
    for (int64_t l = 0; l < nowned; l++) {
      int64_t i = l2g[l];
      for (int64_t k = g->row[i]; k < g->row[i + 1]; k++) {
        int64_t q = a->row[l] + (k - g->row[i]);
        for (int64_t t = 0; t < g->opp_row[k + 1] - g->opp_row[k]; t++)
          a->opp[a->opp_row[q] + t] = g2l[g->opp[g->opp_row[k] + t]];
      }
    }
  }
  return MB_SUCCESS;
}

mb_error mb_local_domain_build(const mb_adjacency *g, const int32_t *part, int rank, int depth,
                               const int64_t *order, mb_local_domain **out) {
  MB_CHECK(depth >= 1 && depth <= 100, MB_ERR_ARG, "ghost depth %d out of range [1, 100]", depth);
  int8_t *kind = calloc((size_t)(g->nv ? g->nv : 1), 1);
  int8_t *dist = calloc((size_t)(g->nv ? g->nv : 1), 1);
  int64_t *g2l = malloc(sizeof *g2l * (size_t)(g->nv ? g->nv : 1));
  mb_local_domain *d = calloc(1, sizeof *d);
  mb_error e = MB_SUCCESS;
  if (!kind || !dist || !g2l || !d) {
    free(kind); free(dist); free(g2l); free(d);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for the local domain");
  }
  d->rank = rank;
  d->depth = depth;
  MB_CALL_GOTO(e, done, classify(g, part, rank, depth, kind, dist));
  int64_t count[4] = {0};
  for (int64_t i = 0; i < g->nv; i++) count[kind[i]]++;
  for (int64_t i = 0; i < g->nv; i++) d->nghost_rows += kind[i] == GHOST && dist[i] < depth;
  d->ninterior = count[1];
  d->nowned = count[1] + count[2];
  d->nghost = count[3];
  d->global = malloc(sizeof *d->global * (size_t)(d->nowned + d->nghost + 1));
  d->ghost_owner = malloc(sizeof *d->ghost_owner * (size_t)(d->nghost + 1));
  d->adj = calloc(1, sizeof *d->adj);
  if (!d->global || !d->ghost_owner || !d->adj) {
    e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
    goto done;
  }
  /* `order` (or ascending id) within each class; ghosts by ring, nearest first */
  int64_t next[4] = {0, 0, d->ninterior, d->nowned};
  for (int ring = 0; ring <= depth; ring++)
    for (int64_t k = 0; k < g->nv; k++) {
      int64_t i = order ? order[k] : k;
      if (!kind[i] || (kind[i] == GHOST) != (ring > 0) || (ring > 0 && dist[i] != ring)) continue;
      int64_t l = next[kind[i]]++;
      d->global[l] = i;
      g2l[i] = l;
      if (kind[i] == GHOST) d->ghost_owner[l - d->nowned] = part[i];
    }
  MB_CALL_GOTO(e, done, localize(g, d->global, g2l, d->nowned + d->nghost_rows, d->adj));
done:
  free(kind);
  free(dist);
  free(g2l);
  if (e) {
    mb_local_domain_free(d);
    return e;
  }
  *out = d;
  return MB_SUCCESS;
}
