/* meshbatch: mesh file readers and writers (OBJ, OFF, PLY).
 *
 * Readers preserve vertex order and count exactly (no merging or
 * renumbering) and keep polygons as polygons. The format is chosen by the
 * file extension (case-insensitive: .obj, .off, .ply). Input files are only
 * ever opened for reading. Every error message names the file, and the
 * line for text formats: "bad.obj:12: face index 9 out of range [1, 8]".
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
  MB_MESHFILE_PLY
} mb_meshfile_format;

/* Format from a path's extension, MB_MESHFILE_UNKNOWN if none matches. */
mb_meshfile_format mb_meshfile_format_of(const char *path);

/* Read a mesh file. The mesh is named after the file stem ("meshes/bob.obj"
 * gives "bob") and validated with mb_mesh_validate. The caller owns *mesh.
 * Not collective.
 * OBJ: `v x y z [w]`, `f` with `v`, `v/vt`, `v//vn`, `v/vt/vn` forms, negative
 *      (relative) indices, polygons; other statements are ignored.
 * OFF: `OFF` header (also COFF/NOFF: extra per-vertex values ignored), comments.
 * PLY: ascii, binary_little_endian and binary_big_endian; element vertex with
 *      x, y, z of any numeric type; element face with a list property
 *      vertex_indices or vertex_index; other elements and properties skipped.
 * Errors: MB_ERR_IO (missing or unreadable file), MB_ERR_FORMAT (malformed,
 * truncated, indices out of range, NaN/Inf, empty mesh), MB_ERR_ARG (unknown
 * extension), MB_ERR_MEMORY. */
mb_error mb_meshfile_read(const char *path, mb_mesh **mesh);

/* Write a mesh to path in the format of its extension, coordinates with 17
 * significant digits (text) or as float64 (binary PLY: binary_little_endian),
 * so that a read gives back the same doubles. Writes to a temporary name in
 * the same folder and renames when complete. Not collective.
 * Errors: MB_ERR_IO, MB_ERR_ARG (unknown extension, invalid mesh), MB_ERR_MEMORY. */
mb_error mb_meshfile_write(const char *path, const mb_mesh *mesh);

#ifdef __cplusplus
}
#endif
#endif
