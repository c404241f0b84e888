/* meshbatch: vertex adjacency of a polygon mesh in CSR form.
 *
 * Built once per mesh and shared by the CPU and CUDA backends:
 *  - row/col: the distinct edge neighbours of every vertex, each row sorted
 *    ascending (fixed summation order, good cache reuse on the GPU);
 *  - opp_row/opp: for a triangle mesh, for every directed edge k = (i, col[k])
 *    the third vertices of the faces containing that edge, in face order
 *    (what cotangent weights need); NULL for a mesh with polygons;
 *  - on_boundary / brow / bcol: boundary edges are edges used by exactly one
 *    face; a boundary vertex touches one; bcol lists its neighbours along
 *    boundary edges, sorted ascending. Edges used by three or more faces
 *    (non-manifold) are not boundary edges.
 */
#ifndef MB_ADJACENCY_H
#define MB_ADJACENCY_H

#include <stdint.h>

#include "mb_error.h"
#include "mb_mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mb_adjacency {
  int64_t nv;           /* vertices */
  int64_t nnz;          /* directed edges = row[nv] */
  int64_t *row;         /* [nv + 1] */
  int64_t *col;         /* [nnz] neighbour vertex, ascending within a row */
  int64_t *opp_row;     /* [nnz + 1] or NULL (polygon mesh) */
  int64_t *opp;         /* [opp_row[nnz]] opposite vertex per incident triangle, or NULL */
  uint8_t *on_boundary; /* [nv] 1 if the vertex touches a boundary edge */
  int64_t *brow;        /* [nv + 1] */
  int64_t *bcol;        /* [brow[nv]] neighbours along boundary edges, ascending */
} mb_adjacency;

/* What mb_adjacency_build_opts builds besides the neighbours and the
 * boundary. */
enum { MB_ADJ_OPPOSITE = 1 /* opp_row/opp of a triangle mesh (cotangent weights) */ };

/* Build the adjacency of a validated mesh (see mb_mesh_validate) with
 * fewer than 2^31 vertices; with MB_ADJ_OPPOSITE in flags, also the
 * opposite vertices of a triangle mesh (else opp_row and opp are NULL). The
 * result is owned by the caller; free it with mb_adjacency_free. Not
 * collective. Memory: 8 bytes per (vertex, face edge) entry and 8 per
 * vertex while building, then the result: 8 (nv + 1) + 8 nnz + nv + 8 (nv +
 * 1) + 8 boundary entries bytes, and with opposites 8 (nnz + 1) + 8 nent
 * (docs/architecture.md). Errors: MB_ERR_MEMORY, MB_ERR_ARG (2^31 vertices
 * or more). Cost: O(sum of face sizes) time. */
mb_error mb_adjacency_build_opts(const mb_mesh *mesh, unsigned flags, mb_adjacency **adj);

/* mb_adjacency_build_opts with MB_ADJ_OPPOSITE. */
mb_error mb_adjacency_build(const mb_mesh *mesh, mb_adjacency **adj);

/* Free an adjacency; NULL is allowed. */
void mb_adjacency_free(mb_adjacency *adj);

/* A vertex ordering with good memory locality: reverse Cuthill-McKee
 * (Cuthill & McKee 1969; George 1971), breadth-first from a minimum-degree
 * vertex of each component, neighbours in increasing degree, then reversed.
 * perm[nv] receives, for every new index, the old vertex. Not collective.
 * Errors: MB_ERR_MEMORY. */
mb_error mb_adjacency_rcm(const mb_adjacency *adj, int64_t *perm);

/* The adjacency of the renumbered vertices (new vertex v is old perm[v]).
 * Rows follow the new order, but every row keeps its neighbours in the
 * original order (ascending old index), so a pass on the permuted adjacency
 * adds exactly the same numbers in the same order: results are bitwise
 * identical after undoing the permutation. Not collective.
 * Errors: MB_ERR_MEMORY. */
mb_error mb_adjacency_permute(const mb_adjacency *adj, const int64_t *perm, mb_adjacency **out);

#ifdef __cplusplus
}
#endif
#endif
