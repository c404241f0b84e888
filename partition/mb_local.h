/* meshbatch: a rank's piece of a partitioned mesh: owned and ghost vertices.
 *
 * Local numbering (what the overlap of computation and halo exchange needs):
 *   [0, ninterior)            owned vertices with no ghost neighbour
 *   [ninterior, nowned)       owned vertices next to the halo
 *   [nowned, nowned + nghost) ghost vertices (owned by other ranks)
 * each class in ascending global id or a given locality order (ghosts
 * nearest ring first). With ghost depth k the ghosts are the vertices within
 * k edges of an owned vertex, and the owned vertices next to the halo are
 * those with a ghost within k edges. Depth 1 (the 1-ring) is what every
 * smoothing rule reads: uniform and
 * inverse-distance weights read the neighbours, cotangent weights the
 * vertices of the faces around an owned vertex (for triangles, the same
 * 1-ring), and boundary_curve its boundary-edge neighbours. Boundary flags
 * come from the whole mesh, so a rank sees the same boundary as one rank.
 *
 * The local adjacency has rows for the owned vertices and, with depth k > 1,
 * for the ghosts of rings 1 .. k-1 (whose neighbours are all local), so an
 * op reading a k-ring can walk it; each row keeps the global ascending
 * neighbour order (mapped to local indices), so sums are added in the same
 * order as on one rank and the results are bitwise identical.
 */
#ifndef MB_LOCAL_H
#define MB_LOCAL_H

#include <stdint.h>

#include "mb_adjacency.h"
#include "mb_error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mb_local_domain {
  int rank;
  int depth;            /* ghost depth: ghosts are within depth edges of an owned vertex */
  int64_t nowned;       /* owned vertices */
  int64_t ninterior;    /* owned vertices with no ghost neighbour */
  int64_t nghost;       /* ghost vertices */
  int64_t nghost_rows;  /* ghosts of rings 1 .. depth-1, which have rows in adj (0 at depth 1) */
  int64_t *global;      /* [nowned + nghost] global id of each local vertex (owned) */
  int *ghost_owner;     /* [nghost] owner rank of each ghost (owned) */
  mb_adjacency *adj;    /* nv = nowned + nghost_rows rows; col/opp/bcol are local indices (owned) */
} mb_local_domain;

/* Build rank `rank`'s domain from the whole mesh's adjacency and a vertex
 * partition part[global->nv], with ghosts up to `depth` edges (1 <= depth
 * <= 100) from the owned vertices. Within each class, vertices follow `order`
 * [global->nv] (a permutation of the global ids, e.g. mb_adjacency_rcm's,
 * for memory locality), or ascending global id when order is NULL; the
 * order never changes the arithmetic. Not collective.
 * Errors: MB_ERR_ARG (depth), MB_ERR_MEMORY. */
mb_error mb_local_domain_build(const mb_adjacency *global, const int32_t *part, int rank,
                               int depth, const int64_t *order, mb_local_domain **domain);

/* Free a domain; NULL allowed. */
void mb_local_domain_free(mb_local_domain *domain);

#ifdef __cplusplus
}
#endif
#endif
