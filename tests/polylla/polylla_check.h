/* meshbatch tests: an independent checker of Polylla outputs and small
 * helpers shared by the Polylla tests.
 *
 * polylla_check verifies, on any input triangulation and its output, the
 * properties every correct Polylla mesh has, without reusing the
 * library's half-edge code (its own orientation and a sorted edge table):
 *   - kind polygons2d; name, index and vertices copied in order (bitwise);
 *   - every polygon edge (a, b) is a half-edge of a triangle oriented
 *     counter-clockwise, no half-edge lies in two polygons, every boundary
 *     edge lies in one, and an interior edge lies in polygons on both sides
 *     or on none (the walk of each polygon is a consistent cycle);
 *   - the components of triangles joined across edges in no polygon match
 *     the polygons one to one (each triangle in exactly one polygon);
 *   - each polygon has positive shoelace area equal to its triangles'
 *     (1e-9 of the total), and the total equals the triangles' total to
 *     1e-9 relative;
 *   - no polygon vertex is a barrier-edge tip: no a, v, a pattern,
 *     cyclically;
 *   - no two polygons are equal as cyclic sequences;
 *   - canonical order: each polygon starts at its head (its smallest
 *     half-edge id 3 t + k) and heads increase;
 *   - the face field "vertex_count" and the attributes "polygons",
 *     "frontier_edges", "barrier_edge_tips", "polygons_repaired" agree.
 */
#ifndef POLYLLA_CHECK_H
#define POLYLLA_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "mb_mesh.h"
#include "mb_polylla.h"

/* Check poly against tri (both borrowed). Returns 1 when every property
 * holds, else 0 with the first failure described in why[len]. */
int polylla_check(const mb_mesh *tri, const mb_mesh *poly, char *why, size_t len);

/* Recompute the frontier by the rules of mb_polylla.h in plain serial
 * code (tips by counting frontier edges per vertex, not by successors)
 * and compare it with the polygons' edges and barrier_edge_tips. Returns
 * 1 when they agree, else 0 with the reason in why[len]. */
int polylla_check_rules(const mb_mesh *tri, const mb_mesh *poly, char *why, size_t len);

/* The same under a tie rule (mb_polylla_ties). */
int polylla_check_rules_ties(const mb_mesh *tri, const mb_mesh *poly, mb_polylla_ties ties,
                             char *why, size_t len);

/* cmocka assertion around polylla_check and polylla_check_rules (the
 * _ties form under a tie rule). */
void polylla_assert_valid(const mb_mesh *tri, const mb_mesh *poly);
void polylla_assert_valid_ties(const mb_mesh *tri, const mb_mesh *poly, mb_polylla_ties ties);

/* A triangulation2d mesh from xy [nv, 2] and triangles [nf, 3]. */
mb_mesh *polylla_test_mesh(const char *name, int64_t nv, const double *xy, int64_t nf,
                           const int64_t *tri);

/* The hand-built keyhole of test_polylla_pinch.c: a ring of 16 triangles
 * round a hole (outer vertices 0-7, inner 8-15) that is one region, with
 * the frontier edge (0, 8) inside it: its polygon passes 0 and 8 twice. */
mb_mesh *polylla_pinch_ring(void);

/* Run mb_polylla_cpu, assert success and validity; returns the output
 * (the _ties form under a tie rule). */
mb_mesh *polylla_run_checked(const mb_mesh *tri, mb_polylla_stats *stats);
mb_mesh *polylla_run_checked_ties(const mb_mesh *tri, mb_polylla_ties ties,
                                  mb_polylla_stats *stats);

/* Polygon p of poly as "a b c ..." in buf (for messages). */
const char *polylla_polygon_str(const mb_mesh *poly, int64_t p, char *buf, size_t len);

/* Index of the polygon equal to the cyclic sequence v[0..n-1] (any
 * rotation), or -1. */
int64_t polylla_find_polygon(const mb_mesh *poly, const int64_t *v, int64_t n);

/* Hash of the SET of polygons: each normalised by rotation to start at its
 * smallest vertex (ties: lexicographically smallest rotation), the list
 * sorted, then FNV-1a 64 over "a b c\n" lines. The same function is in
 * scripts/polylla_compare.py, so the value can be compared with the
 * reference implementation's output. */
uint64_t polylla_set_hash(const mb_mesh *poly);

#endif
