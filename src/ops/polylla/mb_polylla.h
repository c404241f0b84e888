/* meshbatch: Polylla polygonal meshing of planar triangulations.
 *
 * Method: S. Salinas-Fernandez, N. Hitschfeld-Kahler, A. Ortiz-Bernardin,
 * H. Si, "POLYLLA: polygonal meshing algorithm based on terminal-edge
 * regions", Engineering with Computers 38 (2022), sections 3.1-3.4; GPU
 * form after S. Salinas-Fernandez et al., "GPolylla: fully GPU-accelerated
 * polygonal mesh generator", 2023.
 *
 * The exact rules below are shared by the CPU backend (mb_polylla_cpu.c)
 * and the CUDA backend (cuda/polylla/), which must give bitwise identical
 * polygon meshes.
 *
 * Half-edges. Triangle t (0-based, input order) with vertices (a, b, c) is
 * first oriented counter-clockwise: if orient(a, b, c) < 0 its vertices
 * are taken as (a, c, b); orient == 0 (collinear or repeated vertices) is
 * an error (MB_ERR_FORMAT naming the triangle). With the oriented vertices
 * (v0, v1, v2), half-edge h = 3 t + k runs from v_k to v_{(k+1) mod 3};
 * next(h) = 3 t + (k + 1) mod 3, prev(h) = 3 t + (k + 2) mod 3. twin(h) is
 * the half-edge of the neighbouring triangle running the other way, -1 on
 * the boundary. Twins are found by sorting half-edges on their vertex pair,
 * never by a hash. An edge used by more than two triangles, or twice in
 * the same direction, is an error (MB_ERR_FORMAT: not a planar manifold
 * triangulation). orient(a, b, c) = (xb - xa) (yc - ya) - (yb - ya) (xc - xa)
 * in float64 without fused multiply-add.
 *
 * Label phase (paper 3.1-3.2). The squared length of an edge is
 * dx * dx + dy * dy in float64, evaluated as written (no fused multiply-add,
 * dx = x_head - x_tail with the vertices in increasing index order, so both
 * half-edges give the same value). Edges are totally ordered by the key
 * (squared length, max vertex index, min vertex index), compared
 * lexicographically: equal lengths are decided by the larger vertex index
 * of the edge, then the smaller. The longest edge of a triangle is its edge
 * of largest key. An edge is a *frontier edge* when it is on the boundary
 * or is the longest edge of neither of its two triangles. Both half-edges
 * of an interior frontier edge are frontier half-edges; a boundary edge has
 * one. (Terminal edges, the longest edge of both triangles, and boundary
 * terminal edges are the seeds of the paper; every terminal-edge region
 * holds exactly one, which the traversal below never needs explicitly.)
 *
 * Repair phase (paper 3.4). A *barrier-edge tip* is an interior vertex
 * (one with no boundary edge) with exactly one incident frontier edge; the
 * edge is a barrier edge, with the same polygon on both sides. For each
 * tip v, let e0 be the frontier half-edge leaving v and walk clockwise
 * around v: e_{i+1} = next(twin(e_i)). The internal edges met are e_1 ...
 * e_k, k = degree(v) - 1. The *middle edge* e_m, m = (k + 1) / 2 (integer
 * division), becomes a frontier edge (both half-edges). Tips are decided on
 * the label-phase frontier edges, all at once: adding frontier edges never
 * makes a new tip, so one round leaves none. (The reference CPU code looks
 * for tips while walking a polygon from its seed and misses a tip at the
 * start of the walk; this rule has no start.)
 *
 * Traversal phase (paper 3.3). The successor of a frontier half-edge h is
 * found by turning around the vertex h points to: s = next(h); while s is
 * not a frontier half-edge, s = next(twin(s)). Successors link the frontier
 * half-edges into cycles, one per polygon, each going counter-clockwise
 * around its polygon (the polygon lies to the left of every half-edge).
 *
 * Canonical output. Each cycle's *head* is its smallest half-edge id. The
 * polygons are listed in increasing head id; polygon p lists the origins of
 * its half-edges starting from the head and following successors. The
 * vertices are those of the input, in their order (unused ones included).
 * This depends on neither backend nor rank count.
 *
 * Figures: frontier_edges counts edges (not half-edges) after repair;
 * barrier_edge_tips counts tips; polygons_repaired counts the label-phase
 * polygons (cycles of label-phase frontier half-edges) that hold at least
 * one tip.
 */
#ifndef MB_POLYLLA_H
#define MB_POLYLLA_H

#include <stdint.h>

#include "mb_error.h"
#include "mb_mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Counts and per-phase wall times of one Polylla run (ms). Times that a
 * backend does not measure are 0. */
typedef struct mb_polylla_stats {
  int64_t triangles;
  int64_t polygons;
  int64_t frontier_edges;
  int64_t barrier_edge_tips;
  int64_t polygons_repaired;
  double ms_copy_in;    /* host -> device (CUDA) */
  double ms_halfedge;   /* orientation, twins */
  double ms_label;      /* longest edges, frontier half-edges */
  double ms_repair;     /* tips, middle edges */
  double ms_traversal;  /* successors, heads, canonical polygons */
  double ms_copy_out;   /* device -> host (CUDA) */
  double ms_kernels;    /* CUDA: label + repair + traversal, device time alone */
  double ms_total;      /* end to end, host arrays in to host arrays out */
} mb_polylla_stats;

/* Polylla on the CPU (the reference backend; OpenMP where it pays).
 * tri: a mesh of kind MB_KIND_TRIANGULATION2D (every face a triangle,
 * coordinates [nv, 3] with z ignored), borrowed. On success *poly is a new
 * mesh of kind MB_KIND_POLYGONS2D owned by the caller, with tri's name,
 * index and vertices (copied, same order), faces in canonical order, a
 * per-face field "vertex_count" [nf, 1], and attributes "polygons",
 * "frontier_edges", "barrier_edge_tips", "polygons_repaired". stats may be
 * NULL. Not collective.
 * Errors: MB_ERR_ARG (not a triangulation), MB_ERR_FORMAT (degenerate
 * triangle, non-manifold edge; the message names the triangle),
 * MB_ERR_MEMORY. */
mb_error mb_polylla_cpu(const mb_mesh *tri, mb_mesh **poly, mb_polylla_stats *stats);

/* Polylla on the current CUDA device, same contract and output as
 * mb_polylla_cpu, bit for bit. Builds without CUDA return
 * MB_ERR_UNSUPPORTED saying how to enable it. Not collective.
 * Errors: as mb_polylla_cpu, and MB_ERR_CUDA. */
mb_error mb_polylla_cuda(const mb_mesh *tri, mb_mesh **poly, mb_polylla_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
