/* meshbatch: the half-edge structure of a planar triangulation, private to
 * the Polylla op (src/ops/polylla/).
 *
 * The numbering is the one fixed by mb_polylla.h: triangle t is oriented
 * counter-clockwise (v0, v1, v2), half-edge h = 3 t + k runs from v_k to
 * v_{(k+1) mod 3}, next/prev stay inside the triangle, twin(h) is the
 * half-edge of the neighbouring triangle running the other way (-1 on the
 * boundary). This is the implicit half-edge form of the Polylla paper
 * (Salinas-Fernandez et al. 2022, section 3, "half-edge data structure");
 * only the origins and the twins are stored.
 *
 * Ids are int32: a mesh with more than INT32_MAX half-edges or vertices is
 * refused (MB_ERR_ARG).
 */
#ifndef MB_HALFEDGE_H
#define MB_HALFEDGE_H

#include <stdint.h>

#include "mb_error.h"
#include "mb_mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A half-edge triangulation. Owns its arrays (mb_halfedge_free). */
typedef struct mb_halfedge {
  int32_t nt;     /* triangles */
  int32_t nv;     /* vertices of the input mesh (unused ones included) */
  int32_t *vert;  /* [3 nt] oriented corners; origin(h) = vert[h] (owned) */
  int32_t *twin;  /* [3 nt] twin half-edge, -1 on the boundary (owned) */
} mb_halfedge;

/* next(h): the following half-edge of the same triangle. */
static inline int32_t mb_he_next(int32_t h) { return (h % 3 == 2) ? h - 2 : h + 1; }

/* prev(h): the preceding half-edge of the same triangle. */
static inline int32_t mb_he_prev(int32_t h) { return (h % 3 == 0) ? h + 2 : h - 1; }

/* Build the half-edges of a triangle mesh (any kind; the caller checks the
 * kind). Each triangle is oriented counter-clockwise with the exact
 * predicate of mb_polylla.h, orient(a, b, c) = (xb - xa)(yc - ya) -
 * (yb - ya)(xc - xa) in float64 without fused multiply-add (z ignored).
 * Twins: an O(n) counting sort of the half-edges by their smaller vertex
 * (CSR by vertex), then, inside each bucket, a sort by the larger vertex and
 * matching of equal neighbours; no hash. OpenMP over triangles and
 * vertices; the result does not depend on the thread count.
 *
 * tri is borrowed; *he is filled (its arrays owned by *he; free with
 * mb_halfedge_free, also after a failure). Not collective.
 * Errors: MB_ERR_ARG (a face that is not a triangle, no triangles, more
 * than INT32_MAX half-edges or vertices); MB_ERR_FORMAT naming the
 * triangle (0-based index) for a vertex index out of range, a non-finite
 * coordinate, a degenerate triangle (orient == 0: collinear or repeated
 * vertices), an edge of more than two triangles or one used twice in the
 * same direction; where several problems exist the message names the
 * first in triangle order of that kind; MB_ERR_MEMORY.
 * Source: Salinas-Fernandez et al. 2022, section 3 (input triangulation as
 * half-edges). */
mb_error mb_halfedge_build(const mb_mesh *tri, mb_halfedge *he);

/* How a mapped build reads tri's faces: index(ctx, g) the vertex number
 * (0 <= v < nv) of a face's index g, or -1 where g has none; point(ctx, v)
 * the position [3] (borrowed) of number v; ctx the caller's. */
typedef struct mb_halfedge_map {
  int64_t (*index)(const void *ctx, int64_t g);
  const double *(*point)(const void *ctx, int64_t v);
  const void *ctx;
  int64_t nv; /* the vertex numbers */
  /* Optional (NULL: none). faces_read(ctx): every face has been read and
   * oriented (he->vert is complete, no face is out of range, non-finite or
   * degenerate); the caller may free tri's faces now, before the twins'
   * buckets are made. faces_restore(ctx, vert, nt): called after
   * faces_read where the build then fails (an edge of more than two
   * triangles or used twice in one direction, out of memory), with the
   * oriented corners vert [3 nt] in the mapped numbers, before they are
   * freed: the caller may give tri its faces back. */
  void (*faces_read)(const void *ctx);
  void (*faces_restore)(const void *ctx, const int32_t *vert, int32_t nt);
} mb_halfedge_map;

/* mb_halfedge_build on tri's faces with each index g read through map
 * (map NULL: g itself, tri's positions; else tri's own xyz and nv are not
 * read, map->nv vertices at map->point's positions): the half-edges of a
 * triangulation whose faces are stored in another numbering (a rank's
 * rows by their global ids, Polylla's partitioned path), without a
 * renumbered copy of the faces. The same orientation, twins, errors (an
 * index that maps to -1 or to nv or more is out of range; a triangle's
 * message names its own indices, an edge's the mapped numbers) and source
 * as mb_halfedge_build.
 * Not collective. */
mb_error mb_halfedge_build_mapped(const mb_mesh *tri, const mb_halfedge_map *map,
                                  mb_halfedge *he);

/* Free the arrays of he (not he itself) and zero it; NULL and a zeroed
 * struct are allowed. Not collective. */
void mb_halfedge_free(mb_halfedge *he);

#ifdef __cplusplus
}
#endif
#endif
