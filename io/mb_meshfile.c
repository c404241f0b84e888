/* meshbatch: mesh file readers and writers (see mb_meshfile.h).
 *
 * This file holds the format dispatch (by extension), the temporary-file
 * write protocol and kind conversion. It calls the formats' code (OBJ
 * mb_obj.c, OFF mb_off.c, PLY mb_ply.c, Triangle mb_trianglefile.c, NumPy
 * mb_npy.c, VTK mb_vtk.c), which call the helpers of mb_meshfile_util.c
 * (builder, text cursor, file loading), never this file: the dependency
 * goes one way.
 */
#define _POSIX_C_SOURCE 200809L

#include "mb_meshfile.h"
#include "mb_meshfile_private.h"
#include "mb_npy.h"
#include "mb_vtk.h"
#include "mb_trianglefile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ reading */

mb_meshfile_format mb_meshfile_format_of(const char *path) {
  if (!path) return MB_MESHFILE_UNKNOWN;
  const char *base = strrchr(path, '/');
  const char *dot = strrchr(base ? base : path, '.');
  if (!dot || (strlen(dot) != 4 && strlen(dot) != 5)) return MB_MESHFILE_UNKNOWN;
  char ext[5];
  size_t n = strlen(dot) - 1;
  for (size_t i = 0; i < n; i++) {
    char c = dot[1 + i];
    ext[i] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  ext[n] = '\0';
  if (!strcmp(ext, "obj")) return MB_MESHFILE_OBJ;
  if (!strcmp(ext, "off")) return MB_MESHFILE_OFF;
  if (!strcmp(ext, "ply")) return MB_MESHFILE_PLY;
  if (!strcmp(ext, "node")) return MB_MESHFILE_NODE;
  if (!strcmp(ext, "ele")) return MB_MESHFILE_ELE;
  if (!strcmp(ext, "npy")) return MB_MESHFILE_NPY;
  if (!strcmp(ext, "vtk")) return MB_MESHFILE_VTK;
  return MB_MESHFILE_UNKNOWN;
}


mb_error mb_meshfile_read(const char *path, mb_mesh **mesh) {
  MB_CHECK(path && mesh, MB_ERR_ARG, "mb_meshfile_read: NULL argument");
  *mesh = NULL;
  mb_meshfile_format fmt = mb_meshfile_format_of(path);
  MB_CHECK(fmt != MB_MESHFILE_UNKNOWN, MB_ERR_ARG,
           "%s: unknown mesh file extension (expected .obj, .off, .ply, .node, .ele or .npy)",
           path);
  if (fmt == MB_MESHFILE_NODE || fmt == MB_MESHFILE_ELE) {
    MB_CALL(mb_trianglefile_read(path, mesh));
    return MB_SUCCESS;
  }
  if (fmt == MB_MESHFILE_NPY) {
    MB_CALL(mb_npy_read_grid(path, mesh));
    return MB_SUCCESS;
  }
  MB_CHECK(fmt != MB_MESHFILE_VTK, MB_ERR_ARG,
           "%s: meshbatch writes VTK files (export --format vtk) but does not read them", path);
  char *data = NULL;
  size_t len = 0;
  MB_CALL(mb_mf_load(path, &data, &len));
  mb_mf_builder b;
  mb_mesh *m = NULL;
  mb_error e;
  MB_CALL_GOTO(e, done, mb_mf_builder_init(&b));
  if (fmt == MB_MESHFILE_OBJ) MB_CALL_GOTO(e, done, mb_obj_read(path, data, len, &b));
  else if (fmt == MB_MESHFILE_OFF) MB_CALL_GOTO(e, done, mb_off_read(path, data, len, &b));
  else MB_CALL_GOTO(e, done, mb_ply_read(path, data, len, &b));
  free(data);
  data = NULL;
  MB_CALL_GOTO(e, done, mb_mf_builder_finish(&b, path, &m));
  MB_CALL_GOTO(e, done, mb_mesh_validate(m, path));
  *mesh = m;
  return MB_SUCCESS;
done:
  free(data);
  mb_mf_builder_free(&b);
  mb_mesh_free(m);
  return e;
}

/* ------------------------------------------------------------ writing */

/* Check that a mesh is consistent enough to be written without overruns. */
static mb_error mb_mf_check_writable(const char *path, const mb_mesh *m) {
  MB_CHECK(m->nv >= 0 && m->nf >= 0, MB_ERR_ARG, "%s: cannot write a mesh with negative sizes",
           path);
  MB_CHECK((m->xyz || m->nv == 0) && m->face_offsets && (m->face_indices || m->nf == 0),
           MB_ERR_ARG, "%s: cannot write a mesh with missing arrays", path);
  MB_CHECK(m->face_offsets[0] == 0, MB_ERR_ARG, "%s: face offsets must start at 0", path);
  for (int64_t f = 0; f < m->nf; f++) {
    MB_CHECK(m->face_offsets[f + 1] >= m->face_offsets[f], MB_ERR_ARG,
             "%s: cannot write: face offsets decrease at face %lld", path, (long long)f);
    for (int64_t k = m->face_offsets[f]; k < m->face_offsets[f + 1]; k++)
      MB_CHECK(m->face_indices[k] >= 0 && m->face_indices[k] < m->nv, MB_ERR_ARG,
               "%s: cannot write: face %lld refers to vertex %lld, outside [0, %lld)", path,
               (long long)f, (long long)m->face_indices[k], (long long)m->nv);
  }
  return MB_SUCCESS;
}

/* Write m to the open temporary file f; stdio failures become MB_ERR_IO. */
static mb_error mb_mf_write_to(FILE *f, const char *path, mb_meshfile_format fmt,
                               const mb_mesh *m) {
  if (fmt == MB_MESHFILE_OBJ) MB_CALL(mb_obj_write(f, path, m));
  else if (fmt == MB_MESHFILE_OFF) MB_CALL(mb_off_write(f, path, m));
  else MB_CALL(mb_ply_write(f, path, m));
  MB_CHECK(fflush(f) == 0 && !ferror(f), MB_ERR_IO, "%s: cannot write: %s", path,
           strerror(errno ? errno : EIO));
  return MB_SUCCESS;
}

mb_error mb_meshfile_write(const char *path, const mb_mesh *mesh) {
  MB_CHECK(path && mesh, MB_ERR_ARG, "mb_meshfile_write: NULL argument");
  mb_meshfile_format fmt = mb_meshfile_format_of(path);
  MB_CHECK(fmt != MB_MESHFILE_UNKNOWN, MB_ERR_ARG,
           "%s: unknown mesh file extension (expected .obj, .off, .ply, .node, .ele or .npy)",
           path);
  if (fmt == MB_MESHFILE_NODE || fmt == MB_MESHFILE_ELE) {
    MB_CALL(mb_trianglefile_write(path, mesh));
    return MB_SUCCESS;
  }
  if (fmt == MB_MESHFILE_NPY) {
    MB_CHECK(mesh->kind == MB_KIND_GRID3D && mesh->nfields == 1, MB_ERR_ARG,
             "%s: a .npy file holds one field of a grid3d ('%s' is a %s with %d fields; export "
             "a grid into a folder to write one .npy per field)",
             path, mesh->name, mb_kind_name(mesh->kind), mesh->nfields);
    MB_CALL(mb_npy_write_field(path, mesh, 0));
    return MB_SUCCESS;
  }
  if (fmt == MB_MESHFILE_VTK) return mb_vtk_write_grid(path, mesh);
  MB_CHECK(mesh->kind != MB_KIND_GRID3D, MB_ERR_ARG,
           "%s: '%s' is a grid3d; grids are written as .npy (one field per file) or .vtk", path,
           mesh->name);
  MB_CALL(mb_mf_check_writable(path, mesh));
  size_t n = strlen(path) + 32;
  char *tmp = malloc(n);
  MB_CHECK(tmp, MB_ERR_MEMORY, "out of memory");
  snprintf(tmp, n, "%s.tmp-%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    int err = errno;
    free(tmp);
    MB_FAIL(MB_ERR_IO, "%s: cannot create: %s", path, strerror(err));
  }
  setvbuf(f, NULL, _IOFBF, 1 << 20);
  errno = 0;
  mb_error e = mb_mf_write_to(f, path, fmt, mesh);
  int closed = fclose(f) == 0;
  if (e != MB_SUCCESS)
    mb_error_trace(__FILE__, __LINE__, __func__);
  else if (!closed)
    e = mb_error_set(MB_ERR_IO, __FILE__, __LINE__, __func__, "%s: cannot write: %s", path,
                     strerror(errno));
  else if (rename(tmp, path) != 0)
    e = mb_error_set(MB_ERR_IO, __FILE__, __LINE__, __func__, "%s: cannot rename %s: %s", path,
                     tmp, strerror(errno));
  if (e != MB_SUCCESS) remove(tmp);
  free(tmp);
  return e;
}

/* ------------------------------------------------------------ kinds */

mb_error mb_mesh_convert_kind(mb_mesh *mesh, mb_kind kind, const char *source) {
  MB_CHECK(mesh, MB_ERR_ARG, "mb_mesh_convert_kind: NULL mesh");
  const char *src = source ? source : (mesh->name ? mesh->name : "mesh");
  MB_CHECK(kind == MB_KIND_SURFACE || kind == MB_KIND_TRIANGULATION2D ||
               kind == MB_KIND_POLYGONS2D,
           MB_ERR_ARG, "%s: cannot convert to kind %d (%s)", src, (int)kind, mb_kind_name(kind));
  if (mesh->kind == kind) return MB_SUCCESS;
  if (kind != MB_KIND_SURFACE) {
    if (kind == MB_KIND_TRIANGULATION2D)
      for (int64_t f = 0; f < mesh->nf; f++) {
        int64_t n = mesh->face_offsets[f + 1] - mesh->face_offsets[f];
        MB_CHECK(n == 3, MB_ERR_FORMAT,
                 "%s: not a triangulation2d: every face must be a triangle (face %lld has %lld "
                 "vertices)",
                 src, (long long)f, (long long)n);
      }
    for (int64_t i = 0; i < mesh->nv; i++)
      MB_CHECK(mesh->xyz[3 * i + 2] == 0.0, MB_ERR_FORMAT,
               "%s: not a planar %s: every z must be 0 (vertex %lld has z = %.17g)", src,
               mb_kind_name(kind), (long long)i, mesh->xyz[3 * i + 2]);
  }
  mesh->kind = kind;
  return MB_SUCCESS;
}
