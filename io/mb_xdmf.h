/* meshbatch: XDMF 3 companions of HDF5 collections (private to io/).
 *
 * The collection writer (mb_collection_publish.c) describes every mesh
 * with an mb_xdmf_mesh and calls these functions on rank 0 only. The layout of the
 * files is specified in docs/format.md ("XDMF companions").
 */
#ifndef MB_XDMF_H
#define MB_XDMF_H

#include <stdint.h>

#include "mb_error.h"
#include "mb_mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

/* XDMF type id of a triangle / quadrilateral / polygon inside a Mixed topology. */
enum { MB_XDMF_ID_POLYGON = 3, MB_XDMF_ID_TRIANGLE = 4, MB_XDMF_ID_QUAD = 5 };

/* A per-vertex or per-face field as seen by the XDMF writer (name borrowed). */
typedef struct mb_xdmf_field {
  const char *name;
  int64_t ncomp;
  int64_t dtype;          /* mb_dtype of the stored values (grid fields may be float32) */
} mb_xdmf_field;

/* What the XDMF writer needs to know about one mesh (all pointers borrowed). */
typedef struct mb_xdmf_mesh {
  const char *name;
  mb_kind kind;           /* surface: Geometry XYZ from `vertices` [nv,3];
                             triangulation2d, polygons2d: Geometry XY from [nv,2] */
  int64_t nv, nf;
  int triangles;          /* 1: dataset `triangles` [nf,3]; 0: offsets + indices */
  int64_t mixed_len;      /* polygon meshes: length of dataset `xdmf_mixed` */
  int64_t fan_ntri;       /* polygon meshes with a face of >= 5 vertices: rows of
                             dataset `xdmf_triangles` (and of every
                             `xdmf_fan_fields/<face field>`); 0 otherwise */
  int nfields;
  const mb_xdmf_field *fields;       /* `fields/<name>` [nv, ncomp], Node attributes */
  int nface_fields;
  const mb_xdmf_field *face_fields;  /* `face_fields/<name>` [nf, ncomp], Cell attributes */
  /* grid3d: 3DCoRectMesh of shape (z, y, x) with ORIGIN_DXDYDZ geometry;
   * fields `fields/<name>` [nz, ny, nx] */
  int64_t shape[3];
  double origin[3], spacing[3];
} mb_xdmf_mesh;

/* Length of the XDMF Mixed connectivity of a polygon mesh: per face 1 + 3
 * (triangle), 1 + 4 (quadrilateral) or 2 + n (n-gon, n >= 5). Not collective. */
int64_t mb_xdmf_mixed_length(const mb_mesh *mesh);

/* Fill out[mb_xdmf_mixed_length(mesh)] with the Mixed connectivity: type id
 * (4 triangle, 5 quadrilateral, 3 polygon followed by its vertex count), then
 * the vertex indices. On OpenMP threads (the same bytes for any number).
 * Not collective. */
void mb_xdmf_fill_mixed(const mb_mesh *mesh, int64_t *out);

/* Number of fan triangles of a polygon mesh that has at least one face with
 * 5 or more vertices (sum of n - 2 over faces), else 0. Not collective. */
int64_t mb_xdmf_fan_count(const mb_mesh *mesh);

/* Fill out[3 * mb_xdmf_fan_count(mesh)] with the fan triangulation of every
 * face (v0, v_k, v_k+1), faces in order. On OpenMP threads. Not collective. */
void mb_xdmf_fill_fan(const mb_mesh *mesh, int64_t *out);

/* Fill out[(sum of n - 2 over the faces) * field->ncomp] with the rows of a
 * per-face field of mesh (data [nf, ncomp]), face f's row repeated n_f - 2
 * times: the field on the fan triangles of mb_xdmf_fill_fan. Not collective. */
void mb_xdmf_fill_fan_field(const mb_mesh *mesh, const mb_field *field, double *out);

/* Write the collection companion: one Grid GridType="Collection"
 * CollectionType="Spatial" holding one Uniform Grid per mesh (exact
 * topology: Triangle, or Mixed from `xdmf_mixed`; per-vertex fields as Node
 * and per-face fields as Cell attributes). Heavy data are referenced
 * as "<h5_name>:/meshes/<name>/<dataset>"; h5_name is a path relative to the
 * folder of xdmf_path (normally the .h5 file's base name). Not collective.
 * Errors: MB_ERR_IO naming xdmf_path. */
mb_error mb_xdmf_write_collection(const char *xdmf_path, const char *h5_name, int64_t nmeshes,
                                  const mb_xdmf_mesh *meshes);

/* Write the single-mesh companion of one mesh: a Domain holding one Uniform
 * Grid, which meshio's XDMF reader accepts (Triangle; Mixed of triangles and
 * quadrilaterals; or, with polygons of >= 5 vertices, Triangle from the fan
 * triangulation `xdmf_triangles`, whose Cell attributes then come from
 * `xdmf_fan_fields/<name>`). A grid3d with time-series fields
 * (`BASE@t=TIME`, the heat op's `every`) is instead a Temporal collection,
 * one Uniform Grid per time with those fields named BASE, which ParaView
 * plays as an animation. Not collective. Errors: MB_ERR_IO. */
mb_error mb_xdmf_write_mesh(const char *xdmf_path, const char *h5_name, const mb_xdmf_mesh *mesh);

#ifdef __cplusplus
}
#endif
#endif
