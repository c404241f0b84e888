/* meshbatch: the dataset container (surface meshes, planar triangulations,
 * planar polygon meshes).
 *
 * A mesh is a plain struct that owns all its arrays (free with mb_mesh_free).
 * Its kind says what it holds (docs/format.md specifies each kind):
 *   surface          triangles or polygons in 3D (the smoothing ops' input)
 *   triangulation2d  a planar triangulation: every face a triangle, z = 0
 *   polygons2d       a planar polygon mesh: faces of any size >= 3, z = 0
 *   grid3d           a uniform 3D grid of shape (nz, ny, nx) with origin and
 *                    spacing, and named scalar fields on its points; no
 *                    coordinates (xyz is NULL), no faces (nf = 0)
 * Planar kinds keep [nv, 3] coordinates in memory with z = 0, so every
 * kind shares one layout; collections store them as [N, 2].
 * Faces are stored as polygons in CSR form: face f has the vertex indices
 * face_indices[face_offsets[f] .. face_offsets[f+1]-1], counter-clockwise
 * as read from the file. A triangle mesh simply has face_offsets[f] = 3 f.
 * Vertex indices are 0-based int64.
 */
#ifndef MB_MESH_H
#define MB_MESH_H

#include <stdint.h>
#include <stddef.h>

#include "mb_error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The type of a field's values. Meshes hold float64 fields; the fields of a
 * grid3d may be float32. */
typedef enum mb_dtype { MB_FLOAT64 = 0, MB_FLOAT32 = 1 } mb_dtype;

/* A named per-vertex (grid: per-point) or per-face field, [n, ncomp]
 * row-major, owned: float64 values in data, or, with dtype MB_FLOAT32,
 * float32 values in data32 (data is then NULL). */
typedef struct mb_field {
  char *name;
  int ncomp;
  double *data;
  mb_dtype dtype;
  float *data32;
} mb_field;

/* An ordered list of string key/value pairs (provenance and metadata); owned. */
typedef struct mb_attrs {
  int n;
  char **keys;
  char **values;
} mb_attrs;

/* The kind of a dataset. MB_KIND_NONE only marks "not set" / "any". */
typedef enum mb_kind {
  MB_KIND_NONE = 0,
  MB_KIND_SURFACE = 1,
  MB_KIND_TRIANGULATION2D = 2,
  MB_KIND_POLYGONS2D = 3,
  MB_KIND_GRID3D = 4,
  MB_NKINDS = 5
} mb_kind;

/* Name of a kind as written in collections and job help ("surface", ...). */
const char *mb_kind_name(mb_kind kind);

/* Kind by name; MB_KIND_NONE when the name is unknown. */
mb_kind mb_kind_from_name(const char *name);

typedef struct mb_mesh {
  mb_kind kind;            /* what the mesh holds; mb_mesh_create sets MB_KIND_SURFACE */
  char *name;              /* unique mesh name inside a collection (owned) */
  int64_t index;           /* position in the input collection (0-based), -1 if unknown */
  int64_t nv;              /* number of vertices */
  double *xyz;             /* [nv, 3] vertex coordinates, float64 (owned) */
  int64_t nf;              /* number of faces */
  int64_t *face_offsets;   /* [nf + 1], face_offsets[0] = 0 (owned) */
  int64_t *face_indices;   /* [face_offsets[nf]] vertex indices (owned) */
  int nfields;
  mb_field *fields;        /* [nfields] per-vertex fields, data [nv, ncomp] (owned) */
  int nface_fields;
  mb_field *face_fields;   /* [nface_fields] per-face fields, data [nf, ncomp] (owned) */
  mb_attrs attrs;          /* provenance attributes, in order of addition (owned) */
  /* grid3d only (zero otherwise), axes in the order z, y, x: */
  int64_t shape[3];        /* points per axis; nv = shape[0] * shape[1] * shape[2] */
  double origin[3];        /* position of point (0, 0, 0), in the user's length unit */
  double spacing[3];       /* distance between neighbouring points, > 0 */
} mb_mesh;

/* Allocate an empty mesh named `name` (copied) with nv vertices and nf faces
 * holding nidx vertex indices in all. Arrays are zeroed; face_offsets must be
 * filled by the caller. Not collective. Errors: MB_ERR_MEMORY, MB_ERR_ARG. */
mb_error mb_mesh_create(const char *name, int64_t nv, int64_t nf, int64_t nidx,
                        mb_mesh **mesh);

/* Allocate a grid3d of shape[3] points (z, y, x; each >= 1) with the given
 * origin[3] and spacing[3] (> 0, finite), named `name` (copied), with no
 * fields yet: nv = the product of shape, xyz NULL, no faces. Not
 * collective. Errors: MB_ERR_ARG (shape, spacing, a point count over
 * 2^62), MB_ERR_MEMORY. */
mb_error mb_grid_create(const char *name, const int64_t shape[3], const double origin[3],
                        const double spacing[3], mb_mesh **grid);

/* Free a mesh and everything it owns; NULL is allowed. Not collective. */
void mb_mesh_free(mb_mesh *mesh);

/* Deep copy. Not collective. Errors: MB_ERR_MEMORY. */
mb_error mb_mesh_duplicate(const mb_mesh *src, mb_mesh **copy);

/* True (1) if every face has exactly three vertices. */
int mb_mesh_is_triangles(const mb_mesh *mesh);

/* Validate a mesh: nv > 0, nf > 0, finite coordinates, offsets monotone with
 * at least 3 vertices per face, indices in [0, nv). `source` names the origin
 * (a file path) for the message. Not collective.
 * Errors: MB_ERR_FORMAT with a message naming source and the first problem. */
mb_error mb_mesh_validate(const mb_mesh *mesh, const char *source);

/* Rows of one mesh held by this rank, when a mesh is distributed over the
 * ranks in contiguous slabs (partitioned runs). */
typedef struct mb_mesh_slab {
  mb_mesh *rows;          /* rows->nv vertex rows (xyz and every field) and rows->nf face rows
                             (faces and every face field) of the whole mesh;
                             rows->face_indices hold GLOBAL vertex ids in [0, nv);
                             rows->face_offsets start at 0; kind, name, index, attrs as for
                             a whole mesh (owned by whoever created the slab) */
  int64_t vertex_start;   /* whole-mesh row of rows' first vertex */
  int64_t face_start;     /* whole-mesh row of rows' first face */
  int64_t nv, nf;         /* vertices and faces of the whole mesh */
  /* grid3d: rows is a block of rows->shape points starting at point
   * grid_lo (z, y, x) of the whole grid of grid_shape points (nv their
   * product); vertex_start and face_start are 0. */
  int64_t grid_lo[3], grid_shape[3];
} mb_mesh_slab;

/* Copy rows [v0, v0 + nvrows) of vertices (and per-vertex fields) and
 * [f0, f0 + nfrows) of faces (and per-face fields) of a whole mesh into a
 * new slab (faces keep their whole-mesh vertex ids; kind and attributes are
 * copied). Not collective. slab->rows is new (the caller frees it with
 * mb_mesh_free). Errors: MB_ERR_ARG (rows outside the mesh), MB_ERR_MEMORY. */
mb_error mb_mesh_slab_cut(const mb_mesh *mesh, int64_t v0, int64_t nvrows, int64_t f0,
                          int64_t nfrows, mb_mesh_slab *slab);

/* Copy block [lo, lo + n) (per axis z, y, x) of a whole grid3d, every
 * field, into a new slab (slab->rows of shape n; grid_lo, grid_shape and nv
 * set; the grid's origin, spacing, kind, index and attributes kept). Not
 * collective. Errors: MB_ERR_ARG (not a grid, block outside it),
 * MB_ERR_MEMORY. */
mb_error mb_grid_block_cut(const mb_mesh *grid, const int64_t lo[3], const int64_t n[3],
                           mb_mesh_slab *slab);

/* Validate some rows of a larger mesh (a slab, see mb_mesh_slab): rows' first
 * vertex and face are rows first_vertex and first_face of the whole mesh,
 * and its face indices are whole-mesh ids, which must lie in [0, nv_total).
 * Finite coordinates, offsets from 0 with at least 3 vertices per face;
 * messages name whole-mesh rows. Empty rows are allowed. Not collective.
 * Errors: MB_ERR_FORMAT with a message naming source and the first problem. */
mb_error mb_mesh_validate_rows(const mb_mesh *rows, int64_t first_vertex, int64_t first_face,
                               int64_t nv_total, const char *source);

/* Axis-aligned bounding box: lo[3], hi[3]. Not collective. */
void mb_mesh_bbox(const mb_mesh *mesh, double lo[3], double hi[3]);

/* Length of the bounding-box diagonal. */
double mb_mesh_bbox_diagonal(const mb_mesh *mesh);

/* Append (or replace) a per-vertex field; data [nv, ncomp] is copied. */
mb_error mb_mesh_set_field(mb_mesh *mesh, const char *name, int ncomp, const double *data);

/* The same with float32 values (grid fields). Not collective.
 * Errors: MB_ERR_MEMORY, MB_ERR_ARG. */
mb_error mb_mesh_set_field_f32(mb_mesh *mesh, const char *name, int ncomp, const float *data);

/* Index of the per-vertex field named name, or -1. Not collective. */
int mb_mesh_field_index(const mb_mesh *mesh, const char *name);

/* Append (or replace) a per-face field; data [nf, ncomp] is copied.
 * Not collective. Errors: MB_ERR_MEMORY, MB_ERR_ARG. */
mb_error mb_mesh_set_face_field(mb_mesh *mesh, const char *name, int ncomp, const double *data);

/* mb_mesh_set_face_field without the copy: the mesh takes data [nf, ncomp]
 * (from malloc or mb_alloc; freed with the mesh), for an array made to be
 * the field (a polygon output's vertex_count: 64 MB at 8 M polygons). On
 * error data is freed too. Not collective. Errors: MB_ERR_MEMORY,
 * MB_ERR_ARG. */
mb_error mb_mesh_take_face_field(mb_mesh *mesh, const char *name, int ncomp, double *data);

/* Append a key/value attribute (both copied); a repeated key is replaced. */
mb_error mb_attrs_set(mb_attrs *attrs, const char *key, const char *value);

/* printf-style variant of mb_attrs_set. */
mb_error mb_attrs_setf(mb_attrs *attrs, const char *key, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Value for key, or NULL. */
const char *mb_attrs_get(const mb_attrs *attrs, const char *key);

/* Free the pairs of attrs (not attrs itself) and zero it. */
void mb_attrs_clear(mb_attrs *attrs);

/* Duplicate a string; NULL on allocation failure. */
char *mb_strdup(const char *s);

#ifdef __cplusplus
}
#endif
#endif
