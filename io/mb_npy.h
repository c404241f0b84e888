/* meshbatch: NumPy .npy files as grids.
 *
 * Format: numpy.lib.format (NEP 1, "A simple file format for NumPy
 * arrays"): the magic "\x93NUMPY", a version (1.0: 2-byte header length;
 * 2.0 and 3.0: 4-byte), a Python-literal dict {'descr': ..., 'fortran_order':
 * ..., 'shape': (...)}, then the array's bytes.
 */
#ifndef MB_NPY_H
#define MB_NPY_H

#include "mb_error.h"
#include "mb_mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Read a .npy array of 1 to 3 dimensions as a grid3d: shape (nz, ny, nx)
 * with the missing leading axes of size 1 (a 2-D array (ny, nx) is one
 * plane), origin 0 and spacing 1 on every axis, named after the file's
 * stem, with one field "u" holding the values: float32 ('f4') stays
 * float32, float64 ('f8') and integers ('i1'..'i8', 'u1'..'u8') become
 * float64; either byte order; Fortran order is transposed into C order.
 * Not collective. *grid is new (mb_mesh_free).
 * Errors: MB_ERR_IO (cannot open or read, with the reason), MB_ERR_FORMAT
 * (bad magic, version, header, dtype, shape, or data shorter than the
 * shape says: the message names the file and the problem), MB_ERR_MEMORY. */
mb_error mb_npy_read_grid(const char *path, mb_mesh **grid);

/* Write field f (index into grid->fields) of a grid3d as a C-order .npy of
 * shape (nz, ny, nx) (or (nz, ny, nx, k)), '<f4' or '<f8' by the field's
 * type, version 1.0, through PATH.tmp and a rename. Not collective.
 * Errors: MB_ERR_ARG (not a grid, no such field), MB_ERR_IO. */
mb_error mb_npy_write_field(const char *path, const mb_mesh *grid, int f);

#ifdef __cplusplus
}
#endif
#endif
