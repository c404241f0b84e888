/* meshbatch: grids as legacy VTK files, for readers of structured data
 * that do not read XDMF's 3DCoRectMesh (meshio among them).
 *
 * Format: "The VTK User's Guide", legacy file formats (VTK 3.0): a header
 * line, a title, BINARY, DATASET STRUCTURED_POINTS with DIMENSIONS nx ny nz,
 * ORIGIN and SPACING in x, y, z order, then POINT_DATA with one SCALARS
 * (one component) or VECTORS (three) block per field, big-endian, x
 * fastest (the grid's own C order of (z, y, x)).
 */
#ifndef MB_VTK_H
#define MB_VTK_H

#include "mb_error.h"
#include "mb_mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Write a grid3d with all its fields (float32 as "float", float64 as
 * "double"; one or three components) to path, through PATH.tmp and a
 * rename. Spacing and origin in the collection's length units. Not
 * collective. Errors: MB_ERR_ARG (not a grid, a field of another component
 * count), MB_ERR_IO (with the reason), MB_ERR_MEMORY. */
mb_error mb_vtk_write_grid(const char *path, const mb_mesh *grid);

#ifdef __cplusplus
}
#endif
#endif
