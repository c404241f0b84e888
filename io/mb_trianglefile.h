/* meshbatch: Triangle's .node / .ele / .neigh files (planar triangulations).
 *
 * The file format is that of J. R. Shewchuk's Triangle ("Triangle: Engineering
 * a 2D Quality Mesh Generator and Delaunay Triangulator", 1996; format pages
 * at https://www.cs.cmu.edu/~quake/triangle.html):
 *
 *   STEM.node   first line  <#vertices> <dimension = 2> <#attributes> <#markers 0|1>
 *               then        <vertex #> <x> <y> [attributes...] [marker]
 *   STEM.ele    first line  <#triangles> <nodes per triangle 3|6> <#attributes>
 *               then        <triangle #> <v0> <v1> <v2> [v3 v4 v5] [attributes...]
 *   STEM.neigh  first line  <#triangles> <3>
 *               then        <triangle #> <n0> <n1> <n2>   (ni is the triangle across
 *                           the edge opposite corner i, -1 where there is none)
 *
 * '#' starts a comment that runs to the end of the line; blank lines are
 * skipped. As in Triangle, the trailing header values may be left out
 * (dimension 2, 0 attributes, 1 marker; 3 nodes per triangle, 0 attributes).
 */
#ifndef MB_TRIANGLEFILE_H
#define MB_TRIANGLEFILE_H

#include "mb_error.h"
#include "mb_mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Read a triangulation from Triangle's files. path is STEM.node or STEM.ele
 * (extension case-insensitive); the other one is read from beside it, and
 * STEM.neigh too where it exists. Not collective. The caller owns *mesh.
 *
 * Numbering: 0- or 1-based, decided by the number of the first vertex in
 * the .node file, as Triangle does; vertices must be numbered consecutively
 * from there, and the .ele (vertex indices and triangle numbers) and .neigh
 * (triangle numbers and neighbours) use the same base. Only 2D .node files
 * are read (dimension 2).
 *
 * Result: kind MB_KIND_TRIANGULATION2D, nv vertices with xyz [nv, 3] and
 * z = 0, nf triangles (face_offsets[f] = 3 f), vertices and triangles in
 * file order, corners in file order (Triangle writes them counter-
 * clockwise; they are not reordered). Named after the stem without folder
 * ("data/pikachu.1.node" gives "pikachu.1"). Validated with
 * mb_mesh_validate. Optional values are kept as fields:
 *   vertex field "attributes"      [nv, A] where the .node has A > 0 attributes,
 *   vertex field "boundary_marker" [nv, 1] where the .node has markers,
 *   face field   "attributes"      [nf, B] where the .ele has B > 0 attributes.
 * 6-node (quadratic) triangles: the first 3 nodes of each line, the
 * corners, make the triangle; the 3 edge nodes are range-checked and
 * dropped (their vertices stay in the mesh, unreferenced).
 *
 * .neigh, where present, is checked against the triangles: its triangle
 * count must equal the .ele's, it must list 3 neighbours per triangle,
 * triangles numbered consecutively, each neighbour -1 or a triangle number
 * in range; and every neighbour must be consistent with the triangles:
 * entry i of triangle t is -1 exactly when no other triangle has the edge
 * opposite corner i of t, and otherwise names a triangle other than t that
 * has both ends of that edge. Nothing of it is kept (the adjacency is
 * recomputed from the triangles wherever it is needed).
 *
 * Errors: MB_ERR_IO (a missing or unreadable .node or .ele, named in the
 * message); MB_ERR_FORMAT with "FILE:LINE: ..." for a bad header, a line
 * count different from the header's (too few: "file ends after i of n
 * vertices"; too many: "more ... lines than the n announced"), a missing or
 * extra value on a line, vertex or triangle numbers out of sequence, a
 * first vertex number other than 0 or 1, indices out of range, NaN/Inf
 * coordinates, a dimension other than 2, nodes per triangle other than 3
 * or 6, an inconsistent .neigh; MB_ERR_ARG (path not ending in .node or
 * .ele); MB_ERR_MEMORY. */
mb_error mb_trianglefile_read(const char *path, mb_mesh **mesh);

/* Write a triangulation as STEM.node, STEM.ele and STEM.neigh, 0-based,
 * coordinates with 17 significant digits (a read gives back the same
 * doubles). path_stem is the path without extension; a trailing ".node" or
 * ".ele" is removed if given. Each file goes to a temporary name in the
 * same folder and all are renamed once all three are complete. Not
 * collective.
 * The mesh must hold triangles only with z = 0 at every vertex (any kind;
 * a triangulation2d mesh always does). The vertex fields "attributes" and
 * "boundary_marker" (1 component, integral values) and the face field
 * "attributes" are written as Triangle's attributes and markers; other
 * fields are not written. The .neigh lists, for each triangle and corner
 * i, a triangle sharing the edge opposite corner i, or -1.
 * Errors: MB_ERR_ARG (polygons, z != 0, invalid indices), MB_ERR_IO,
 * MB_ERR_MEMORY. */
mb_error mb_trianglefile_write(const char *path_stem, const mb_mesh *mesh);

#ifdef __cplusplus
}
#endif
#endif
