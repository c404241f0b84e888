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
 * boundary, and what mb_adjacency_permute_opts renumbers besides the
 * neighbours. */
enum {
  MB_ADJ_OPPOSITE = 1, /* opp_row/opp of a triangle mesh (cotangent weights) */
  MB_ADJ_BOUNDARY = 2  /* on_boundary/brow/bcol: always built; renumbered only if asked */
};

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
 * perm[nv] receives, for every new index, the old vertex. Serial: about
 * 0.8 s for 8.6 M vertices (docs/benchmarks.md, "Host path"); see
 * mb_adjacency_sfc for a parallel order. Not collective.
 * Errors: MB_ERR_MEMORY. */
mb_error mb_adjacency_rcm(const mb_adjacency *adj, int64_t *perm);

/* A vertex ordering with good memory locality from the positions alone: the
 * vertices sorted along the 3D Hilbert curve (a space-filling curve: Hilbert
 * 1891; Morton 1966 for the Z-order relative; the usual orderings of mesh
 * data for cache locality), index by J. Skilling, "Programming the Hilbert
 * curve", AIP Conf. Proc. 707 (2004). xyz [nv, 3] is quantized on a grid of
 * 2^b cells per axis over the bounding cube of its finite coordinates
 * (NaN to cell 0, infinities to the end cells), b = min(21, (64 - ib) / 3)
 * where ib is the bit count of nv - 1 (b = 13 for 8.6 M vertices, 11 from
 * 2^31); each vertex's key, curve index << ib | vertex, is sorted by a
 * parallel (OpenMP) LSD radix sort, 8 bits per pass, on the curve bits
 * only. Vertices in one cell keep their mesh order, and the result is the
 * same for every thread count. perm[nv] receives, for every new index, the
 * old vertex; the caller owns both arrays (xyz is only read). Memory: 8 nv
 * bytes of scratch besides perm. Cost: O(nv) time, ceil(3b / 8) passes
 * over 8 nv bytes (5 for 8.6 M vertices); 0.05 s for 8.6 M vertices on 16
 * threads, 0.59 s on one (docs/benchmarks.md, "Host path"). Not
 * collective. Errors: MB_ERR_ARG (nv < 0, or NULL arrays for nv > 0),
 * MB_ERR_MEMORY. */
mb_error mb_adjacency_sfc(int64_t nv, const double *xyz, int64_t *perm);

/* The index of cell (x, y, z) along the 3D Hilbert curve over a grid of
 * 2^bits cells per axis, 1 <= bits <= 21 (coordinates below 2^bits): a
 * number in [0, 2^(3 bits)); cells with consecutive indices share a face.
 * The key of mb_adjacency_sfc, exposed for tests. 0 for bits out of range. */
uint64_t mb_hilbert3(uint32_t x, uint32_t y, uint32_t z, int bits);

/* The adjacency of the renumbered vertices (new vertex v is old perm[v]).
 * Rows follow the new order, but every row keeps its neighbours in the
 * original order (ascending old index), so a pass on the permuted adjacency
 * adds exactly the same numbers in the same order: results are bitwise
 * identical after undoing the permutation. All arrays are renumbered (see
 * mb_adjacency_permute_opts). In parallel (OpenMP). Not collective.
 * Errors: MB_ERR_MEMORY. */
mb_error mb_adjacency_permute(const mb_adjacency *adj, const int64_t *perm, mb_adjacency **out);

/* mb_adjacency_permute of row/col, and of the opposite vertices (if adj
 * has them) only with MB_ADJ_OPPOSITE in flags, of the boundary arrays only
 * with MB_ADJ_BOUNDARY; those left out are NULL in *out (enough for passes
 * with other weights, or with the free boundary rule). *out is owned by the
 * caller (mb_adjacency_free). Not collective. Errors: MB_ERR_MEMORY. */
mb_error mb_adjacency_permute_opts(const mb_adjacency *adj, const int64_t *perm, unsigned flags,
                                   mb_adjacency **out);

/* How well an order serves the gathers of a smoothing pass on the GPU (one
 * thread per vertex, warps of 32 consecutive vertices), over the directed
 * edges (v, c) of an adjacency as numbered. */
typedef struct mb_gather_figures {
  double mean_distance;  /* mean |v - c| */
  double same_warp;      /* fraction with c in v's warp (v / 32 == c / 32) */
  double far;            /* fraction with |v - c| > 65536 (beyond a 768 KiB float32 window) */
  double lines_per_warp; /* mean distinct 128-byte lines of float32 positions [nv, 3] that a
                            warp's neighbour reads touch (its own 32 vertices: 3) */
} mb_gather_figures;

/* The figures of adj in its own numbering (e.g. a renumbered adjacency from
 * mb_adjacency_permute). In parallel (OpenMP); O(nnz log) time, a few
 * kilobytes per thread. Not collective. Errors: MB_ERR_MEMORY. */
mb_error mb_adjacency_gather_figures(const mb_adjacency *adj, mb_gather_figures *f);

#ifdef __cplusplus
}
#endif
#endif
