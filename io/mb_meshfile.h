/* meshbatch: mesh file readers and writers (OBJ, OFF, PLY, and Triangle's
 * .node/.ele/.neigh, see mb_trianglefile.h).
 *
 * Readers preserve vertex order and count exactly (no merging or
 * renumbering) and keep polygons as polygons. The format is chosen by the
 * file extension (case-insensitive: .obj, .off, .ply, .node, .ele). Input
 * files are only ever opened for reading. Every error message names the
 * file, and the line for text formats: "bad.obj:12: face index 9 out of
 * range [1, 8]".
 *
 * Kinds: OBJ, OFF and PLY give MB_KIND_SURFACE meshes (a planar file stays
 * a surface with z = 0; mb_mesh_convert_kind makes it triangulation2d or
 * polygons2d); .node/.ele give MB_KIND_TRIANGULATION2D.
 */
#ifndef MB_MESHFILE_H
#define MB_MESHFILE_H

#include "mb_error.h"
#include "mb_mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mb_meshfile_format {
  MB_MESHFILE_UNKNOWN = 0,
  MB_MESHFILE_OBJ,
  MB_MESHFILE_OFF,
  MB_MESHFILE_PLY,
  MB_MESHFILE_NODE, /* Triangle's STEM.node (+ STEM.ele, STEM.neigh) */
  MB_MESHFILE_ELE,  /* Triangle's STEM.ele (+ STEM.node, STEM.neigh) */
  MB_MESHFILE_NPY,  /* a NumPy array, as a grid3d (mb_npy.h) */
  MB_MESHFILE_VTK   /* legacy VTK STRUCTURED_POINTS, grids written only (mb_vtk.h) */
} mb_meshfile_format;

/* The file stem of path ("dir/bob.obj" -> "bob") into stem[len]
 * (truncated to fit). Not collective. */
void mb_path_stem(const char *path, char *stem, size_t len);

/* Format from a path's extension, MB_MESHFILE_UNKNOWN if none matches. */
mb_meshfile_format mb_meshfile_format_of(const char *path);

/* Read a mesh file. The mesh is named after the file stem ("meshes/bob.obj"
 * gives "bob"; Triangle files keep every dot but the extension's:
 * "pikachu.1.node" gives "pikachu.1") and validated with mb_mesh_validate.
 * The caller owns *mesh. Not collective.
 * OBJ: `v x y z [w]`, `f` with `v`, `v/vt`, `v//vn`, `v/vt/vn` forms, negative
 *      (relative) indices, polygons; other statements are ignored.
 * OFF: `OFF` header (also COFF/NOFF: extra per-vertex values ignored), comments.
 *      2D OFF: where the first vertex line holds exactly 2 numbers, every
 *      vertex line must hold exactly 2 (x y) and z is set to 0.
 * PLY: ascii, binary_little_endian and binary_big_endian; element vertex with
 *      x, y, z of any numeric type; element face with a list property
 *      vertex_indices or vertex_index; other elements and properties skipped.
 * NODE/ELE: Triangle's files through mb_trianglefile_read (either file may
 *      be named; the other, and the .neigh where present, are read beside it).
 * Errors: MB_ERR_IO (missing or unreadable file), MB_ERR_FORMAT (malformed,
 * truncated, indices out of range, NaN/Inf, empty mesh), MB_ERR_ARG (unknown
 * extension), MB_ERR_MEMORY. */
mb_error mb_meshfile_read(const char *path, mb_mesh **mesh);

/* Write a mesh to path in the format of its extension, coordinates with 17
 * significant digits (text) or as float64 (binary PLY: binary_little_endian),
 * so that a read gives back the same doubles. Writes to a temporary name in
 * the same folder and renames when complete. Not collective.
 * Planar kinds (triangulation2d, polygons2d) are written with z = 0 in
 * the 3D formats. A .node or .ele path writes STEM.node, STEM.ele and
 * STEM.neigh through mb_trianglefile_write (triangles with z = 0 only).
 * Errors: MB_ERR_IO, MB_ERR_ARG (unknown extension, invalid mesh, a mesh
 * the format cannot hold), MB_ERR_MEMORY. */
mb_error mb_meshfile_write(const char *path, const mb_mesh *mesh);

/* Set the kind of a mesh read from a file, checking that it holds what the
 * kind promises (docs/format.md). Not collective. source names the origin
 * (a file path) in messages; NULL uses the mesh name.
 *   MB_KIND_TRIANGULATION2D: every face a triangle and every z exactly 0;
 *   MB_KIND_POLYGONS2D:      every z exactly 0 (faces of any size >= 3);
 *   MB_KIND_SURFACE:         always allowed (coordinates are kept).
 * A mesh that already has the kind is left as it is, unchecked. Only
 * mesh->kind changes; arrays and fields are not touched.
 * Errors: MB_ERR_FORMAT "source: not a triangulation2d: every face must be
 * a triangle (face f has n vertices)" or "source: not a planar KIND: every
 * z must be 0 (vertex i has z = ...)", the mesh unchanged; MB_ERR_ARG
 * (NULL mesh, MB_KIND_NONE or an unknown kind). */
mb_error mb_mesh_convert_kind(mb_mesh *mesh, mb_kind kind, const char *source);

#ifdef __cplusplus
}
#endif
#endif
