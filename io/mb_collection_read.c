/* meshbatch: the collection reader (mb_collection_open, _info, _read,
 * _read_slab, _read_grid_block, _close; see mb_collection.h): rank 0
 * validates the whole file, every rank reads by independent transfers.
 * Kept whole (about 1,150 lines): the validation and the reads share the
 * file's layout walk and its private helpers (the passes over a mesh's
 * rows are in mb_collection_bulk.c); splitting is next when it grows. */
#include "mb_collection.h"
#include "mb_collection_private.h"

#include <errno.h>
#include <hdf5.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mb_mpi.h"

/* ------------------------------------------------------------------ reading */

/* "[a,b]" for an error message. */
static const char *shape_str(int rank, const hsize_t *dims, char *buf, size_t len) {
  int k = snprintf(buf, len, "[");
  for (int i = 0; i < rank && k < (int)len; i++)
    k += snprintf(buf + k, len - (size_t)k, "%s%llu", i ? "," : "", (unsigned long long)dims[i]);
  if (k < (int)len) snprintf(buf + k, len - (size_t)k, "]");
  return buf;
}

struct mb_collection {
  char *path;
  hid_t file;
  int version;         /* format_version of the file */
  int image;           /* 1: opened from a file image in memory (no path to pread) */
  int64_t n;
  mb_mesh_info *infos;
};

/* A growable list of link or attribute names. */
typedef struct mb_names {
  char **v;
  int n, cap;
  int oom;
} mb_names;

static void names_free(mb_names *l) {
  for (int i = 0; i < l->n; i++) free(l->v[i]);
  free(l->v);
  memset(l, 0, sizeof *l);
}

static int names_add(mb_names *l, const char *name) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 16;
    char **v = realloc(l->v, sizeof *v * (size_t)cap);
    if (!v) { l->oom = 1; return -1; }
    l->v = v;
    l->cap = cap;
  }
  if (!(l->v[l->n] = mb_strdup(name))) { l->oom = 1; return -1; }
  l->n++;
  return 0;
}

static herr_t link_cb(hid_t g, const char *name, const H5L_info_t *info, void *op) {
  (void)g;
  (void)info;
  return names_add(op, name);
}

static herr_t attr_cb(hid_t loc, const char *name, const H5A_info_t *info, void *op) {
  (void)loc;
  (void)info;
  return names_add(op, name);
}

/* Names of the links of a group, in creation order where tracked, else by name. */
static mb_error list_links(hid_t g, mb_names *l) {
  hsize_t idx = 0;
  if (H5Literate(g, H5_INDEX_CRT_ORDER, H5_ITER_INC, &idx, link_cb, l) >= 0) return MB_SUCCESS;
  names_free(l);
  idx = 0;
  MB_CALL_H5(H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, link_cb, l));
  MB_CHECK(!l->oom, MB_ERR_MEMORY, "out of memory");
  return MB_SUCCESS;
}

/* Names of the attributes of an object, in creation order where tracked. */
static mb_error list_attrs(hid_t o, mb_names *l) {
  hsize_t idx = 0;
  if (H5Aiterate2(o, H5_INDEX_CRT_ORDER, H5_ITER_INC, &idx, attr_cb, l) >= 0) return MB_SUCCESS;
  names_free(l);
  idx = 0;
  MB_CALL_H5(H5Aiterate2(o, H5_INDEX_NAME, H5_ITER_INC, &idx, attr_cb, l));
  MB_CHECK(!l->oom, MB_ERR_MEMORY, "out of memory");
  return MB_SUCCESS;
}

/* Read a string attribute (fixed or variable length) into a new string; *out
 * stays NULL if the attribute is not a string. */
static mb_error get_str_attr(hid_t a, char **out) {
  *out = NULL;
  hid_t ft = H5Aget_type(a);
  MB_CALL_H5(ft);
  int is_str = H5Tget_class(ft) == H5T_STRING;
  int is_var = is_str && H5Tis_variable_str(ft) > 0;
  size_t size = H5Tget_size(ft);
  H5T_cset_t cset = is_str ? H5Tget_cset(ft) : H5T_CSET_ASCII;
  H5Tclose(ft);
  if (!is_str) return MB_SUCCESS;
  hid_t mt = H5Tcopy(H5T_C_S1);
  MB_CALL_H5(mt);
  herr_t st = H5Tset_cset(mt, cset == H5T_CSET_UTF8 ? H5T_CSET_UTF8 : H5T_CSET_ASCII);
  if (st >= 0 && is_var) {
    char *s = NULL;
    st = H5Tset_size(mt, H5T_VARIABLE);
    if (st >= 0) st = H5Aread(a, mt, &s);
    if (st >= 0) *out = mb_strdup(s ? s : "");
    if (s) H5free_memory(s);
  } else if (st >= 0) {
    st = H5Tset_size(mt, size + 1);
    if (st >= 0) st = H5Tset_strpad(mt, H5T_STR_NULLTERM);
    *out = st >= 0 ? calloc(size + 1, 1) : NULL;
    if (*out) st = H5Aread(a, mt, *out);
  }
  H5Tclose(mt);
  if (st < 0) { free(*out); *out = NULL; }
  MB_CALL_H5(st);
  MB_CHECK(*out, MB_ERR_MEMORY, "out of memory");
  return MB_SUCCESS;
}

/* The root attributes: format name and version (returned in *version). */
static mb_error check_root(hid_t file, const char *path, int *version) {
  MB_CHECK(H5Aexists(file, "format") > 0, MB_ERR_FORMAT,
           "%s: not a meshbatch collection (no 'format' attribute at /)", path);
  hid_t a = H5Aopen(file, "format", H5P_DEFAULT);
  MB_CALL_H5(a);
  char *fmt = NULL;
  mb_error e = get_str_attr(a, &fmt);
  H5Aclose(a);
  MB_CALL(e);
  int ok = fmt && !strcmp(fmt, MB_COLLECTION_FORMAT);
  char shown[64];
  snprintf(shown, sizeof shown, "%s", fmt ? fmt : "(not a string)");
  free(fmt);
  MB_CHECK(ok, MB_ERR_FORMAT, "%s: not a meshbatch collection (format is '%s', expected '%s')",
           path, shown, MB_COLLECTION_FORMAT);
  MB_CHECK(H5Aexists(file, "format_version") > 0, MB_ERR_FORMAT,
           "%s: no 'format_version' attribute at /", path);
  a = H5Aopen(file, "format_version", H5P_DEFAULT);
  MB_CALL_H5(a);
  hid_t ft = H5Aget_type(a);
  int isint = ft >= 0 && H5Tget_class(ft) == H5T_INTEGER;
  if (ft >= 0) H5Tclose(ft);
  long long v = -1;
  herr_t st = isint ? H5Aread(a, H5T_NATIVE_LLONG, &v) : -1;
  H5Aclose(a);
  MB_CHECK(st >= 0, MB_ERR_FORMAT, "%s: attribute 'format_version' is not an integer", path);
  MB_CHECK(v >= MB_COLLECTION_FORMAT_VERSION_MIN && v <= MB_COLLECTION_FORMAT_VERSION,
           MB_ERR_FORMAT, "%s: unsupported format_version %lld (this build reads versions %d to %d)",
           path, v, MB_COLLECTION_FORMAT_VERSION_MIN, MB_COLLECTION_FORMAT_VERSION);
  *version = (int)v;
  return MB_SUCCESS;
}

/* Whether link `name` of loc exists (*yes = 1 or 0). A failure of
 * H5Lexists (a damaged file) is an error, not an absence, as in the
 * writer. where: the file (and the mesh, or NULL) for the message.
 * Errors: MB_ERR_HDF5. */
static mb_error link_exists(hid_t loc, const char *name, const char *where, const char *mesh,
                            int *yes) {
  const htri_t r = H5Lexists(loc, name, H5P_DEFAULT);
  *yes = r > 0;
  if (mesh)
    MB_CHECK(r >= 0, MB_ERR_HDF5, "%s: /meshes/%s: H5Lexists(%s) failed", where, mesh, name);
  else
    MB_CHECK(r >= 0, MB_ERR_HDF5, "%s: H5Lexists(%s) failed", where, name);
  return MB_SUCCESS;
}

/* The validation's state over one file (rank 0's scan): the dataset
 * access list that points a virtual dataset's sources nowhere (they may be
 * any file of the host and must never be opened), the file's size, and
 * the mesh being scanned's problem (mb_mesh_info.problem: the first of its
 * datasets its file does not back). */
typedef struct scan_ctx {
  hid_t dapl;
  haddr_t filesize;
  char *problem;
  size_t problem_len;
} scan_ctx;

static mb_error check_backed(hid_t d, const char *where, haddr_t filesize);

/* Open dataset <mesh>/<dset> (relative to g), check its class and rank <= 2,
 * return its rank and dims. *found = 0 (and no error) if it does not exist.
 * sc (the scan; NULL when reading): the dataset is opened through sc->dapl
 * and, its structure good, its storage checked (check_backed) while open:
 * a problem goes to sc->problem (the first only), not to the error. */
static mb_error probe_dataset(const scan_ctx *sc, hid_t g, const char *path, const char *mesh,
                              const char *dset, H5T_class_t cls, int *found, int *rank,
                              hsize_t dims[2]) {
  *found = 0;
  int yes;
  MB_CALL(link_exists(g, dset, path, mesh, &yes));
  if (!yes) return MB_SUCCESS;
  hid_t d = H5Dopen2(g, dset, sc ? sc->dapl : H5P_DEFAULT);
  MB_CHECK(d >= 0, MB_ERR_FORMAT, "%s: /meshes/%s/%s is not a dataset", path, mesh, dset);
  hid_t t = H5Dget_type(d), sp = H5Dget_space(d);
  H5T_class_t c = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
  int r = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
  hsize_t full[H5S_MAX_RANK] = {0};
  if (r > 0 && r <= H5S_MAX_RANK) H5Sget_simple_extent_dims(sp, full, NULL);
  mb_h5_close_id(t);
  mb_h5_close_id(sp);
  char storage[sizeof ((mb_mesh_info *)0)->problem] = "";
  if (sc && !sc->problem[0]) {
    char where[MB_PATH_MAX + 600];
    snprintf(where, sizeof where, "%s: dataset /meshes/%s/%s", path, mesh, dset);
    if (check_backed(d, where, sc->filesize) != MB_SUCCESS) {
      snprintf(storage, sizeof storage, "%s", mb_error_message());
      mb_error_clear();
    }
  }
  H5Dclose(d);
  MB_CHECK(c == cls, MB_ERR_FORMAT, "%s: /meshes/%s/%s has the wrong type (expected %s)", path,
           mesh, dset, cls == H5T_FLOAT ? "float64" : "int64");
  char sh[96];
  MB_CHECK(r >= 1 && r <= 2, MB_ERR_FORMAT, "%s: /meshes/%s/%s has rank %d shape %s", path, mesh,
           dset, r, shape_str(r > 0 ? r : 0, full, sh, sizeof sh));
  *found = 1;
  *rank = r;
  dims[0] = full[0];
  dims[1] = r == 2 ? full[1] : 0;
  if (storage[0]) snprintf(sc->problem, sc->problem_len, "%s", storage);
  return MB_SUCCESS;
}

/* Like probe_dataset, but the dataset must exist with rank `want_rank` and
 * (if want_cols > 0) dims[1] == want_cols; `expect` names the expected shape. */
static mb_error need_dataset(const scan_ctx *sc, hid_t g, const char *path, const char *mesh,
                             const char *dset, H5T_class_t cls, int want_rank,
                             hsize_t want_cols, const char *expect, hsize_t dims[2]) {
  int found, rank;
  MB_CALL(probe_dataset(sc, g, path, mesh, dset, cls, &found, &rank, dims));
  MB_CHECK(found, MB_ERR_FORMAT, "%s: /meshes/%s/%s is missing", path, mesh, dset);
  char sh[96];
  MB_CHECK(rank == want_rank && (want_cols == 0 || dims[1] == want_cols) && dims[0] > 0,
           MB_ERR_FORMAT, "%s: /meshes/%s/%s has shape %s, expected %s", path, mesh, dset,
           shape_str(rank, dims, sh, sizeof sh), expect);
  return MB_SUCCESS;
}

/* Check the fields in group `group` of a mesh group: float [rows,k] each
 * (per-vertex fields: group "fields", rows N; per-face: "face_fields", M). */
static mb_error check_fields(const scan_ctx *sc, hid_t g, const char *path, const char *mesh,
                             const char *group, int64_t rows, int64_t *ncomp) {
  *ncomp = 0;
  int yes;
  MB_CALL(link_exists(g, group, path, mesh, &yes));
  if (!yes) return MB_SUCCESS;
  int face = !strcmp(group, "face_fields");
  hid_t fg = H5Gopen2(g, group, H5P_DEFAULT);
  MB_CHECK(fg >= 0, MB_ERR_FORMAT, "%s: /meshes/%s/%s is not a group", path, mesh, group);
  mb_names l = {0};
  mb_error e = list_links(fg, &l);
  for (int i = 0; i < l.n && !e; i++) {
    char dset[MB_NAME_MAX + 16];
    hsize_t dims[2];
    snprintf(dset, sizeof dset, "%s/%s", group, l.v[i]);
    e = need_dataset(sc, g, path, mesh, dset, H5T_FLOAT, 2, 0, face ? "[M,k]" : "[N,k]", dims);
    if (!e && (int64_t)dims[0] != rows)
      e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                       "%s: /meshes/%s/%s has %llu rows, expected %s = %lld (%s)", path, mesh,
                       dset, (unsigned long long)dims[0], face ? "M" : "N", (long long)rows,
                       face ? "faces" : "vertices");
    if (!e) *ncomp += (int64_t)dims[1];
  }
  names_free(&l);
  H5Gclose(fg);
  MB_CALL(e);
  return MB_SUCCESS;
}

/* The integer attribute `index` of a mesh group. */
static mb_error get_index(hid_t g, const char *path, const char *mesh, int64_t *index) {
  MB_CHECK(H5Aexists(g, "index") > 0, MB_ERR_FORMAT, "%s: /meshes/%s has no 'index' attribute",
           path, mesh);
  hid_t a = H5Aopen(g, "index", H5P_DEFAULT);
  MB_CALL_H5(a);
  hid_t t = H5Aget_type(a);
  int isint = t >= 0 && H5Tget_class(t) == H5T_INTEGER;
  mb_h5_close_id(t);
  long long v = -1;
  herr_t st = isint ? H5Aread(a, H5T_NATIVE_LLONG, &v) : -1;
  H5Aclose(a);
  MB_CHECK(st >= 0, MB_ERR_FORMAT, "%s: /meshes/%s: attribute 'index' is not an integer", path,
           mesh);
  *index = v;
  return MB_SUCCESS;
}

/* The kind of a mesh group: its string attribute `kind` (format version 2;
 * required), or surface (version 1, where `kind` is not special). */
static mb_error get_kind(hid_t g, const char *path, const char *mesh, int version,
                         mb_kind *kind) {
  *kind = MB_KIND_SURFACE;
  if (version < 2) return MB_SUCCESS;
  MB_CHECK(H5Aexists(g, "kind") > 0, MB_ERR_FORMAT, "%s: /meshes/%s has no 'kind' attribute",
           path, mesh);
  hid_t a = H5Aopen(g, "kind", H5P_DEFAULT);
  MB_CALL_H5(a);
  char *s = NULL;
  mb_error e = get_str_attr(a, &s);
  H5Aclose(a);
  MB_CALL(e);
  MB_CHECK(s, MB_ERR_FORMAT, "%s: /meshes/%s: attribute 'kind' is not a string", path, mesh);
  *kind = mb_kind_from_name(s);
  char shown[64];
  snprintf(shown, sizeof shown, "%s", s);
  free(s);
  MB_CHECK(mb_coll_kind_known(*kind), MB_ERR_FORMAT,
           "%s: /meshes/%s has kind '%s', which this build does not read (surface, "
           "triangulation2d, polygons2d, grid3d)", path, mesh, shown);
  return MB_SUCCESS;
}

/* Kind, shapes and sizes of one mesh group. Faces: a surface has
 * `triangles` or `face_offsets` + `face_indices`; a triangulation2d has
 * `triangles`; a polygons2d has `face_offsets` + `face_indices`. */
/* A 3-vector attribute of a grid group: int64 or float64 by mt. */
static mb_error get_vec3_attr(hid_t g, const char *path, const char *mesh, const char *name,
                              H5T_class_t cls, hid_t mt, void *out) {
  MB_CHECK(H5Aexists(g, name) > 0, MB_ERR_FORMAT, "%s: /meshes/%s (grid3d) has no '%s' attribute",
           path, mesh, name);
  hid_t a = H5Aopen(g, name, H5P_DEFAULT);
  MB_CALL_H5(a);
  hid_t t = H5Aget_type(a), sp = H5Aget_space(a);
  hsize_t n = 0;
  int ok = t >= 0 && H5Tget_class(t) == cls && sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 &&
           H5Sget_simple_extent_dims(sp, &n, NULL) == 1 && n == 3;
  mb_h5_close_id(t);
  mb_h5_close_id(sp);
  herr_t st = ok ? H5Aread(a, mt, out) : -1;
  H5Aclose(a);
  MB_CHECK(st >= 0, MB_ERR_FORMAT, "%s: /meshes/%s: attribute '%s' is not 3 %s values", path,
           mesh, name, cls == H5T_INTEGER ? "integer" : "float");
  return MB_SUCCESS;
}

/* A grid3d group: shape, origin, spacing, and fields [nz, ny, nx(, k)] of
 * float32 or float64. */
static mb_error scan_grid(const scan_ctx *sc, hid_t g, const char *path, const char *mesh,
                          mb_mesh_info *info) {
  MB_CALL(get_vec3_attr(g, path, mesh, "shape", H5T_INTEGER, H5T_NATIVE_INT64, info->shape));
  MB_CALL(get_vec3_attr(g, path, mesh, "origin", H5T_FLOAT, H5T_NATIVE_DOUBLE, info->origin));
  MB_CALL(get_vec3_attr(g, path, mesh, "spacing", H5T_FLOAT, H5T_NATIVE_DOUBLE, info->spacing));
  int64_t nv = 1;
  for (int a = 0; a < 3; a++) {
    MB_CHECK(info->shape[a] >= 1 && info->shape[a] <= ((int64_t)1 << 40) &&
                 nv <= ((int64_t)1 << 62) / info->shape[a] && isfinite(info->origin[a]) &&
                 isfinite(info->spacing[a]) && info->spacing[a] > 0,
             MB_ERR_FORMAT, "%s: /meshes/%s: shape %lld x %lld x %lld, spacing %g %g %g out of "
             "range", path, mesh, (long long)info->shape[0], (long long)info->shape[1],
             (long long)info->shape[2], info->spacing[0], info->spacing[1], info->spacing[2]);
    nv *= info->shape[a];
  }
  info->nv = nv;
  info->nf = info->nidx = 0;
  info->triangles = 0;
  int yes;
  MB_CALL(link_exists(g, "fields", path, mesh, &yes));
  if (!yes) return MB_SUCCESS;
  hid_t fg = H5Gopen2(g, "fields", H5P_DEFAULT);
  MB_CHECK(fg >= 0, MB_ERR_FORMAT, "%s: /meshes/%s/fields is not a group", path, mesh);
  mb_names l = {0};
  mb_error e = list_links(fg, &l);
  for (int i = 0; i < l.n && !e; i++) {
    hid_t d = H5Dopen2(fg, l.v[i], sc->dapl);
    hid_t t = d >= 0 ? H5Dget_type(d) : -1, sp = d >= 0 ? H5Dget_space(d) : -1;
    hsize_t dims[H5S_MAX_RANK] = {0};
    int r = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    if (r > 0 && r <= H5S_MAX_RANK) H5Sget_simple_extent_dims(sp, dims, NULL);
    size_t bytes = t >= 0 ? H5Tget_size(t) : 0;
    int ok = t >= 0 && H5Tget_class(t) == H5T_FLOAT && (bytes == 4 || bytes == 8) &&
             (r == 3 || (r == 4 && dims[3] >= 1 && dims[3] <= 1024)) &&
             (int64_t)dims[0] == info->shape[0] && (int64_t)dims[1] == info->shape[1] &&
             (int64_t)dims[2] == info->shape[2];
    mb_h5_close_id(t);
    mb_h5_close_id(sp);
    if (ok && d >= 0 && !sc->problem[0]) { /* its storage, while open (probe_dataset's rule) */
      char where[MB_PATH_MAX + 600];
      snprintf(where, sizeof where, "%s: dataset /meshes/%s/fields/%s", path, mesh, l.v[i]);
      if (check_backed(d, where, sc->filesize) != MB_SUCCESS) {
        snprintf(sc->problem, sc->problem_len, "%s", mb_error_message());
        mb_error_clear();
      }
    }
    mb_h5_close_id(d);
    if (ok) info->nvalues += r == 4 ? (int64_t)dims[3] : 1;
    if (!ok)
      e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                       "%s: /meshes/%s/fields/%s is not a float32 or float64 dataset of shape "
                       "[%lld, %lld, %lld] (or with a last axis of components)", path, mesh,
                       l.v[i], (long long)info->shape[0], (long long)info->shape[1],
                       (long long)info->shape[2]);
  }
  names_free(&l);
  H5Gclose(fg);
  MB_CALL(e);
  return MB_SUCCESS;
}

/* Deflate, the strongest filter a collection is expected to use, keeps at
 * most about 1032 bytes of data in one stored byte: a filtered dataset that
 * declares more than this many bytes per stored byte is not backed. */
enum { MAX_FILTER_RATIO = 1100 };

/* One dataset d of a mesh group, open through scan_ctx.dapl (where: its
 * path for messages): no external raw storage, no virtual layout (data
 * from other files: a collection comes from other people and must not read
 * the host's files), and its declared extent held by the file: contiguous
 * data inside the file, chunked data allocated (with a filter, within
 * MAX_FILTER_RATIO of what is stored). Metadata only; no raw data is read.
 * Checked for the datasets the reader reads (probe_dataset, scan_grid),
 * while the validation has them open. Errors: MB_ERR_FORMAT naming the
 * dataset. */
static mb_error check_backed(hid_t d, const char *where, haddr_t filesize) {
  hid_t dcpl = H5Dget_create_plist(d), t = H5Dget_type(d), sp = H5Dget_space(d);
  const H5D_layout_t layout = dcpl >= 0 ? H5Pget_layout(dcpl) : H5D_LAYOUT_ERROR;
  const int next = dcpl >= 0 ? H5Pget_external_count(dcpl) : -1;
  char ext[256] = "";
  off_t eoff = 0;
  hsize_t esize = 0;
  if (next > 0) H5Pget_external(dcpl, 0, sizeof ext, ext, &eoff, &esize);
  const int nfilters = dcpl >= 0 ? H5Pget_nfilters(dcpl) : -1;
  const hssize_t npoints = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
  const size_t tsize = t >= 0 ? H5Tget_size(t) : 0;
  const hsize_t stored = H5Dget_storage_size(d);
  const haddr_t offset = layout == H5D_CONTIGUOUS ? H5Dget_offset(d) : HADDR_UNDEF;
  mb_h5_close_id(dcpl);
  mb_h5_close_id(t);
  mb_h5_close_id(sp);
  MB_CHECK(next == 0, MB_ERR_FORMAT,
           "%s stores its data outside the collection (HDF5 external raw storage%s%s%s): "
           "refused, meshbatch reads data only from the collection file itself", where,
           next > 0 ? " in file '" : "", ext, next > 0 ? "'" : "");
  MB_CHECK(layout != H5D_VIRTUAL, MB_ERR_FORMAT,
           "%s is an HDF5 virtual dataset (its data is mapped from other datasets or files): "
           "refused, meshbatch reads data only from the collection file itself", where);
  MB_CHECK(layout >= 0 && npoints >= 0 && tsize > 0 && nfilters >= 0, MB_ERR_FORMAT,
           "%s: HDF5 cannot tell its layout or extent", where);
  const double declared = (double)npoints * (double)tsize;
  if (declared == 0 || layout == H5D_COMPACT) return MB_SUCCESS;
  const int held =
      layout == H5D_CONTIGUOUS
          ? offset != HADDR_UNDEF && (double)offset + declared <= (double)filesize
          : nfilters == 0 ? (double)stored >= declared
                          : (double)stored * MAX_FILTER_RATIO >= declared;
  MB_CHECK(held, MB_ERR_FORMAT,
           "%s is corrupt: it declares %lld values (%.4g MB) but the file holds %.4g MB of it "
           "(a %zu-byte file); the dataset is skipped", where, (long long)npoints,
           declared / 1e6, layout == H5D_CONTIGUOUS && offset == HADDR_UNDEF ? 0.0
                          : (double)stored / 1e6, (size_t)filesize);
  return MB_SUCCESS;
}

/* The structure of a mesh group (scan_structure) and the storage of the
 * datasets it reads (check_backed, as each is probed): a dataset its file
 * does not back, or stored outside it, is kept in the list with its
 * problem (info->problem) and sizes 0, so that the other datasets of the
 * collection are read. (Datasets the reader never opens are not checked:
 * their bytes are never read.) */
static mb_error scan_structure(const scan_ctx *sc, hid_t g, const char *path, const char *mesh,
                               int version, mb_mesh_info *info);

static mb_error scan_mesh(scan_ctx *sc, hid_t g, const char *path, const char *mesh,
                          int version, mb_mesh_info *info) {
  info->problem[0] = '\0';
  sc->problem = info->problem;
  sc->problem_len = sizeof info->problem;
  MB_CALL(scan_structure(sc, g, path, mesh, version, info));
  if (info->problem[0]) {
    info->nv = info->nf = info->nidx = info->nvalues = info->nface_values = 0;
    if (info->kind == MB_KIND_GRID3D) info->shape[0] = info->shape[1] = info->shape[2] = 1;
    info->nv = info->kind == MB_KIND_GRID3D ? 1 : 0;
  }
  return MB_SUCCESS;
}

static mb_error scan_structure(const scan_ctx *sc, hid_t g, const char *path, const char *mesh,
                               int version, mb_mesh_info *info) {
  hsize_t dims[2];
  MB_CHECK(strlen(mesh) < sizeof info->name, MB_ERR_FORMAT, "%s: mesh name too long", path);
  snprintf(info->name, sizeof info->name, "%s", mesh);
  MB_CALL(get_index(g, path, mesh, &info->index));
  MB_CALL(get_kind(g, path, mesh, version, &info->kind));
  if (info->kind == MB_KIND_GRID3D) return scan_grid(sc, g, path, mesh, info);
  int vc = mb_coll_kind_vcols(info->kind);
  MB_CALL(need_dataset(sc, g, path, mesh, "vertices", H5T_FLOAT, 2, (hsize_t)vc,
                       vc == 2 ? "[N,2]" : "[N,3]", dims));
  info->nv = (int64_t)dims[0];
  int tri, rank;
  MB_CALL(probe_dataset(NULL, g, path, mesh, "triangles", H5T_INTEGER, &tri, &rank, dims));
  MB_CHECK(tri || info->kind != MB_KIND_TRIANGULATION2D, MB_ERR_FORMAT,
           "%s: /meshes/%s (triangulation2d) has no 'triangles'", path, mesh);
  MB_CHECK(!tri || info->kind != MB_KIND_POLYGONS2D, MB_ERR_FORMAT,
           "%s: /meshes/%s (polygons2d) has 'triangles'; its faces are "
           "'face_offsets'/'face_indices'", path, mesh);
  int offsets;
  MB_CALL(link_exists(g, "face_offsets", path, mesh, &offsets));
  if (tri) {
    MB_CHECK(!offsets, MB_ERR_FORMAT,
             "%s: /meshes/%s has both triangles and face_offsets", path, mesh);
    MB_CALL(need_dataset(sc, g, path, mesh, "triangles", H5T_INTEGER, 2, 3, "[M,3]", dims));
    info->nf = (int64_t)dims[0];
    info->nidx = 3 * info->nf;
    info->triangles = 1;
  } else {
    MB_CHECK(offsets, MB_ERR_FORMAT,
             "%s: /meshes/%s has neither 'triangles' nor 'face_offsets'/'face_indices'", path,
             mesh);
    MB_CALL(need_dataset(sc, g, path, mesh, "face_offsets", H5T_INTEGER, 1, 0, "[M+1]", dims));
    MB_CHECK(dims[0] >= 2, MB_ERR_FORMAT,
             "%s: /meshes/%s/face_offsets has shape [%llu], expected [M+1] with M >= 1", path,
             mesh, (unsigned long long)dims[0]);
    info->nf = (int64_t)dims[0] - 1;
    MB_CALL(need_dataset(sc, g, path, mesh, "face_indices", H5T_INTEGER, 1, 0, "[K]", dims));
    info->nidx = (int64_t)dims[0];
    info->triangles = 0;
  }
  MB_CALL(check_fields(sc, g, path, mesh, "fields", info->nv, &info->nvalues));
  MB_CALL(check_fields(sc, g, path, mesh, "face_fields", info->nf, &info->nface_values));
  return MB_SUCCESS;
}

static int cmp_info(const void *a, const void *b) {
  const mb_mesh_info *x = a, *y = b;
  return x->index < y->index ? -1 : x->index > y->index;
}

/* Scan /meshes: every mesh group, sorted by index (which must be 0..n-1). */
static mb_error scan_meshes(hid_t file, const char *path, int version, mb_names *l,
                            mb_mesh_info **infos) {
  int yes;
  MB_CALL(link_exists(file, "meshes", path, NULL, &yes));
  MB_CHECK(yes, MB_ERR_FORMAT, "%s: no /meshes group", path);
  hid_t ms = H5Gopen2(file, "meshes", H5P_DEFAULT);
  MB_CHECK(ms >= 0, MB_ERR_FORMAT, "%s: /meshes is not a group", path);
  hsize_t fsize = 0;
  /* a virtual dataset's source files must never be opened: point them nowhere */
  scan_ctx sc = {.dapl = H5Pcreate(H5P_DATASET_ACCESS)};
  mb_error e = H5Fget_filesize(file, &fsize) >= 0 && sc.dapl >= 0 &&
                       H5Pset_virtual_prefix(sc.dapl,
                                             "/nonexistent-meshbatch-refuses-virtual-sources/") >= 0
                   ? MB_SUCCESS
                   : mb_error_set(MB_ERR_HDF5, __FILE__, __LINE__, __func__,
                                  "%s: cannot tell the file's size", path);
  sc.filesize = (haddr_t)fsize;
  if (!e) e = list_links(ms, l);
  *infos = calloc((size_t)l->n + 1, sizeof **infos);
  if (!e && !*infos) e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  for (int i = 0; i < l->n && !e; i++) {
    hid_t g = H5Gopen2(ms, l->v[i], H5P_DEFAULT);
    if (g < 0) {
      e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                       "%s: /meshes/%s is not a group", path, l->v[i]);
      break;
    }
    e = scan_mesh(&sc, g, path, l->v[i], version, &(*infos)[i]);
    H5Gclose(g);
  }
  mb_h5_close_id(sc.dapl);
  H5Gclose(ms);
  MB_CALL(e);
  qsort(*infos, (size_t)l->n, sizeof **infos, cmp_info);
  for (int i = 0; i < l->n; i++)
    MB_CHECK((*infos)[i].index == i, MB_ERR_FORMAT,
             "%s: mesh indices are not 0..%d (mesh '%s' has index %lld)", path, l->n - 1,
             (*infos)[i].name, (long long)(*infos)[i].index);
  return MB_SUCCESS;
}

/* Rank 0: validate the whole file and list its meshes. */
static mb_error scan_file(hid_t file, const char *path, int *version, int64_t *n,
                         mb_mesh_info **infos) {
  MB_CALL(check_root(file, path, version));
  mb_names l = {0};
  mb_error e = scan_meshes(file, path, *version, &l, infos);
  *n = l.n;
  names_free(&l);
  MB_CALL(e);
  return MB_SUCCESS;
}

/* Rank 0: the file must exist and be HDF5. */
static mb_error precheck_file(const char *path) {
  struct stat st;
  MB_CHECK(stat(path, &st) == 0, MB_ERR_IO, "%s: cannot open collection: %s", path,
           strerror(errno));
  MB_CHECK(S_ISREG(st.st_mode), MB_ERR_IO, "%s: not a regular file", path);
  FILE *fp = fopen(path, "rb");
  MB_CHECK(fp, MB_ERR_IO, "%s: cannot open collection: %s", path, strerror(errno));
  fclose(fp);
  MB_CHECK(H5Fis_hdf5(path) > 0, MB_ERR_FORMAT, "%s: not an HDF5 file", path);
  return MB_SUCCESS;
}

/* Open path through the sec2 driver (plain pread, this process alone): the
 * file of one rank, and rank 0's validation copy on several. -1 where HDF5
 * cannot open it. Not collective. */
static hid_t open_serial(const char *path) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (fapl < 0) return -1;
  herr_t st = H5Pset_fapl_sec2(fapl); /* MPI_File_open costs 0.4 ms and a lock file beside the input */
#if H5_VERSION_GE(1, 12, 1) || (H5_VERS_MAJOR == 1 && H5_VERS_MINOR == 10 && H5_VERS_RELEASE >= 7)
  /* no flock, as under MPI-IO: file systems without it would refuse the open */
  if (st >= 0) st = H5Pset_file_locking(fapl, 0, 1);
#endif
  if (st >= 0) st = H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
  const hid_t f = st >= 0 ? H5Fopen(path, H5F_ACC_RDONLY, fapl) : -1;
  H5Pclose(fapl);
  return f;
}

static mb_error cannot_open(const char *path) {
  return mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                      "%s: HDF5 cannot open the file", path);
}

/* Open the file on every rank and let rank 0 validate it; broadcast the list.
 * image = NULL: the file c->path through MPI-IO, or sec2 where comm has one
 * rank; else the file image of size bytes through the core driver
 * (mb_collection_open_image). On several ranks rank 0 validates its own
 * sec2 copy of the file, opened and closed before the collective MPI-IO
 * open: the validation opens every dataset, and HDF5 calls that are
 * collective on an MPI-IO file (a virtual dataset's H5Dopen duplicates the
 * file's communicator) would wait for the other ranks forever. */
static mb_error open_and_scan(MPI_Comm comm, int rank, mb_collection *c, const void *image,
                              size_t size) {
  if (!image) MB_CALL(mb_agree(comm, rank == 0 ? precheck_file(c->path) : MB_SUCCESS));
  int nranks = 1;
  MB_CALL_MPI(MPI_Comm_size(comm, &nranks));
  mb_error e = MB_SUCCESS;
  if (!image && nranks > 1) { /* rank 0's validation, no MPI-IO file open yet */
    if (rank == 0) {
      const hid_t f = open_serial(c->path);
      e = f >= 0 ? scan_file(f, c->path, &c->version, &c->n, &c->infos) : cannot_open(c->path);
      if (f >= 0) H5Fclose(f);
    }
    MB_CALL(mb_agree(comm, e));
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    MB_CALL_H5(fapl);
    herr_t st = H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL);
    if (st >= 0) st = H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
    c->file = st >= 0 ? H5Fopen(c->path, H5F_ACC_RDONLY, fapl) : -1;
    H5Pclose(fapl);
    MB_CALL(mb_agree(comm, c->file >= 0 ? MB_SUCCESS : cannot_open(c->path)));
  } else {
    if (image) { /* in memory, no backing file; HDF5 copies the image (per rank) */
      hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
      MB_CALL_H5(fapl);
      herr_t st = H5Pset_fapl_core(fapl, 1 << 16, 0);
      if (st >= 0) st = H5Pset_file_image(fapl, (void *)image, size);
      if (st >= 0) st = H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
      c->file = st >= 0 ? H5Fopen(c->path, H5F_ACC_RDONLY, fapl) : -1;
      H5Pclose(fapl);
    } else {
      c->file = open_serial(c->path);
    }
    MB_CALL(mb_agree(comm, c->file >= 0 ? MB_SUCCESS : cannot_open(c->path)));
    e = rank == 0 ? scan_file(c->file, c->path, &c->version, &c->n, &c->infos) : MB_SUCCESS;
    MB_CALL(mb_agree(comm, e));
  }
  long long n = c->n;
  MB_CALL_MPI(MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, comm));
  MB_CALL_MPI(MPI_Bcast(&c->version, 1, MPI_INT, 0, comm));
  if (rank != 0) {
    c->n = n;
    c->infos = calloc((size_t)n + 1, sizeof *c->infos);
  }
  int ok = c->infos != NULL, all;
  MB_CALL_MPI(MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm));
  MB_CHECK(all, MB_ERR_MEMORY, "out of memory for the mesh list of %s", c->path);
  size_t bytes = sizeof *c->infos * (size_t)n, chunk = (size_t)1 << 30;
  for (size_t off = 0; off < bytes; off += chunk) {
    size_t len = bytes - off < chunk ? bytes - off : chunk;
    MB_CALL_MPI(MPI_Bcast((char *)c->infos + off, (int)len, MPI_BYTE, 0, comm));
  }
  return MB_SUCCESS;
}

/* mb_collection_open (image = NULL) and mb_collection_open_image. */
static mb_error open_collection(MPI_Comm comm, const char *path, const void *image, size_t size,
                                mb_collection **coll) {
  *coll = NULL;
  int rank;
  MB_CALL_MPI(MPI_Comm_rank(comm, &rank));
  mb_collection *c;
  MB_CALLOC(c, 1);
  c->file = -1;
  c->image = image != NULL;
  c->path = mb_strdup(path);
  if (!c->path) { free(c); MB_FAIL(MB_ERR_MEMORY, "out of memory"); }
  mb_h5_quiet q = mb_h5_quiet_begin();
  mb_error e = open_and_scan(comm, rank, c, image, size);
  mb_h5_quiet_end(q);
  if (e) {
    if (c->file >= 0) H5Fclose(c->file); /* collective: every rank reaches here */
    free(c->infos);
    free(c->path);
    free(c);
    MB_CALL(e);
  }
  *coll = c;
  return MB_SUCCESS;
}

mb_error mb_collection_open(MPI_Comm comm, const char *path, mb_collection **coll) {
  MB_CHECK(path && coll, MB_ERR_ARG, "mb_collection_open: NULL argument");
  MB_CALL(open_collection(comm, path, NULL, 0, coll));
  return MB_SUCCESS;
}

mb_error mb_collection_open_image(MPI_Comm comm, const char *name, const void *image,
                                  size_t size, mb_collection **coll) {
  MB_CHECK(name && image && size && coll, MB_ERR_ARG,
           "mb_collection_open_image: NULL argument or empty image");
  MB_CALL(open_collection(comm, name, image, size, coll));
  return MB_SUCCESS;
}

int64_t mb_collection_count(const mb_collection *coll) { return coll ? coll->n : 0; }

int mb_collection_version(const mb_collection *coll) { return coll ? coll->version : 0; }

const mb_mesh_info *mb_collection_info(const mb_collection *coll, int64_t i) {
  if (!coll || i < 0 || i >= coll->n) return NULL;
  return &coll->infos[i];
}

/* The file the mesh being read lies in, for the raw read of its large
 * datasets (mb_coll_read_raw); NULL for a file image. Set by the readers of
 * a mesh or slab around their reads. */
static _Thread_local const char *raw_path;

/* Read a whole dataset of loc into buf (memory type mt). */
static mb_error read_all(hid_t loc, const char *src, const char *dset, hid_t mt, void *buf) {
  hid_t d = H5Dopen2(loc, dset, H5P_DEFAULT);
  MB_CHECK(d >= 0, MB_ERR_FORMAT, "%s/%s: cannot open dataset", src, dset);
  hid_t fs = H5Dget_space(d);
  const int rank = fs >= 0 ? H5Sget_simple_extent_ndims(fs) : -1;
  hsize_t dims[4] = {0, 0, 0, 0}, start[4] = {0, 0, 0, 0};
  herr_t st = rank >= 1 && rank <= 4 ? H5Sget_simple_extent_dims(fs, dims, NULL) : -1;
  mb_h5_close_id(fs);
  int done = 0;
  mb_error e = MB_SUCCESS;
  if (st >= 0 && dims[0] > 0) {
    size_t row_bytes = H5Tget_size(mt);
    for (int a = 1; a < rank; a++) row_bytes *= (size_t)dims[a];
    e = mb_coll_read_raw(d, raw_path, src, dset, mt, 0, (int64_t)dims[0], row_bytes, buf, &done);
  }
  if (!e && !done && st >= 0) st = mb_h5_block_transfer(d, mt, 0, rank, start, dims, dims, buf);
  H5Dclose(d);
  MB_CALL(e);
  MB_CHECK(st >= 0, MB_ERR_HDF5, "%s/%s: H5Dread failed", src, dset);
  return MB_SUCCESS;
}

/* Read rows [start, start + n) of dataset dset of loc ([N] if cols = 0, else
 * [N, cols]) into buf by hyperslab (memory type mt). A row of buf holds mcols
 * values (0: cols) of which the first cols are read (planar vertices: cols 2
 * into xyz rows of 3, whose z is left as it is). Nothing is read if n = 0. */
static mb_error read_rows_into(hid_t loc, const char *src, const char *dset, hid_t mt,
                               int64_t start, int64_t n, int64_t cols, int64_t mcols,
                               void *buf) {
  if (n == 0) return MB_SUCCESS;
  hid_t d = H5Dopen2(loc, dset, H5P_DEFAULT);
  MB_CHECK(d >= 0, MB_ERR_FORMAT, "%s/%s: cannot open dataset", src, dset);
  const hsize_t off[2] = {(hsize_t)start, 0}, count[2] = {(hsize_t)n, (hsize_t)cols};
  const hsize_t mem[2] = {(hsize_t)n, (hsize_t)(mcols ? mcols : cols)};
  int done = 0;
  herr_t st = 0;
  mb_error e = !mcols || mcols == cols /* the rows as stored */
                   ? mb_coll_read_raw(d, raw_path, src, dset, mt, start, n,
                                      H5Tget_size(mt) * (size_t)(cols ? cols : 1), buf, &done)
                   : MB_SUCCESS;
  if (!e && !done) st = mb_h5_block_transfer(d, mt, 0, cols ? 2 : 1, off, count, mem, buf);
  H5Dclose(d);
  MB_CALL(e);
  MB_CHECK(st >= 0, MB_ERR_HDF5, "%s/%s: H5Dread of rows [%lld, %lld) failed", src, dset,
           (long long)start, (long long)(start + n));
  return MB_SUCCESS;
}

/* read_rows_into with rows of buf as wide as those of the dataset. */
static mb_error read_rows(hid_t loc, const char *src, const char *dset, hid_t mt, int64_t start,
                          int64_t n, int64_t cols, void *buf) {
  MB_CALL(read_rows_into(loc, src, dset, mt, start, n, cols, 0, buf));
  return MB_SUCCESS;
}

/* Fields from group `group` ("fields": per vertex, "face_fields": per face),
 * in creation order: rows [r0, r0 + n) of each [total, k] dataset, where n
 * is m->nv (vertex) or m->nf (face) rows (r0 = 0, total = n for a whole mesh). */
static mb_error read_fields(hid_t g, const char *src, mb_mesh *m, const char *group, int64_t r0,
                            int64_t total) {
  int yes;
  MB_CALL(link_exists(g, group, src, NULL, &yes));
  if (!yes) return MB_SUCCESS;
  int face = !strcmp(group, "face_fields");
  int64_t n = face ? m->nf : m->nv;
  hid_t fg = H5Gopen2(g, group, H5P_DEFAULT);
  MB_CHECK(fg >= 0, MB_ERR_FORMAT, "%s/%s: not a group", src, group);
  mb_names l = {0};
  mb_error e = list_links(fg, &l);
  for (int i = 0; i < l.n && !e; i++) {
    int found, rank;
    hsize_t dims[2];
    e = probe_dataset(NULL, fg, src, group, l.v[i], H5T_FLOAT, &found, &rank, dims);
    if (!e && (rank != 2 || (int64_t)dims[0] != total || dims[1] < 1 || dims[1] > INT_MAX))
      e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                       "%s/%s/%s: expected shape [%s,k] with %s = %lld", src, group, l.v[i],
                       face ? "M" : "N", face ? "M" : "N", (long long)total);
    double *data = e ? NULL : mb_alloc(sizeof(double) * (size_t)n * dims[1] + 1);
    if (!e && !data) e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
    if (!e) e = read_rows(fg, src, l.v[i], H5T_NATIVE_DOUBLE, r0, n, (int64_t)dims[1], data);
    if (!e)
      e = face ? mb_mesh_set_face_field(m, l.v[i], (int)dims[1], data)
               : mb_mesh_set_field(m, l.v[i], (int)dims[1], data);
    free(data);
  }
  names_free(&l);
  H5Gclose(fg);
  MB_CALL(e);
  return MB_SUCCESS;
}

/* String attributes of the mesh group, in creation order (`index` skipped,
 * and `kind` from format version 2 on). */
static mb_error read_attrs(hid_t g, int version, mb_mesh *m) {
  mb_names l = {0};
  mb_error e = list_attrs(g, &l);
  for (int i = 0; i < l.n && !e; i++) {
    if (!strcmp(l.v[i], "index") || (version >= 2 && !strcmp(l.v[i], "kind"))) continue;
    if (m->kind == MB_KIND_GRID3D && (!strcmp(l.v[i], "shape") || !strcmp(l.v[i], "origin") ||
                                      !strcmp(l.v[i], "spacing")))
      continue;
    hid_t a = H5Aopen(g, l.v[i], H5P_DEFAULT);
    if (a < 0) { e = mb_error_set(MB_ERR_HDF5, __FILE__, __LINE__, __func__, "H5Aopen failed"); break; }
    char *s = NULL;
    e = get_str_attr(a, &s);
    H5Aclose(a);
    if (!e && s) e = mb_attrs_set(&m->attrs, l.v[i], s);
    free(s);
  }
  names_free(&l);
  MB_CALL(e);
  return MB_SUCCESS;
}

/* The fields of a grid3d group, each in its stored precision. */
static mb_error read_grid_fields(hid_t g, const char *src, mb_mesh *m) {
  int yes;
  MB_CALL(link_exists(g, "fields", src, NULL, &yes));
  if (!yes) return MB_SUCCESS;
  hid_t fg = H5Gopen2(g, "fields", H5P_DEFAULT);
  MB_CHECK(fg >= 0, MB_ERR_FORMAT, "%s/fields: not a group", src);
  mb_names l = {0};
  mb_error e = list_links(fg, &l);
  for (int i = 0; i < l.n && !e; i++) {
    hid_t d = H5Dopen2(fg, l.v[i], H5P_DEFAULT);
    hid_t t = d >= 0 ? H5Dget_type(d) : -1, sp = d >= 0 ? H5Dget_space(d) : -1;
    hsize_t dims[4] = {0, 0, 0, 1};
    int r = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    if (r == 3 || r == 4) H5Sget_simple_extent_dims(sp, dims, NULL);
    const int f32 = t >= 0 && H5Tget_size(t) == 4, ncomp = r == 4 ? (int)dims[3] : 1;
    void *buf = mb_alloc((f32 ? sizeof(float) : sizeof(double)) * (size_t)m->nv * (size_t)ncomp);
    const hsize_t start[4] = {0, 0, 0, 0};
    herr_t st = buf && d >= 0 && (r == 3 || r == 4)
                    ? mb_h5_block_transfer(d, f32 ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE, 0, r,
                                           start, dims, dims, buf)
                    : -1;
    mb_h5_close_id(t);
    mb_h5_close_id(sp);
    mb_h5_close_id(d);
    if (st < 0)
      e = mb_error_set(buf ? MB_ERR_HDF5 : MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                       "%s/fields/%s: cannot read the field", src, l.v[i]);
    else
      e = f32 ? mb_mesh_set_field_f32(m, l.v[i], ncomp, buf)
              : mb_mesh_set_field(m, l.v[i], ncomp, buf);
    free(buf);
  }
  names_free(&l);
  H5Gclose(fg);
  MB_CALL(e);
  return MB_SUCCESS;
}

/* Offsets rows [f0, f0 + n] of a polygon mesh as read (a slab's, or the
 * whole mesh's with f0 = 0, n = M): inside [0, K], from 0 at the first face,
 * K after the last face, >= 3 vertices per face (so increasing: every face's
 * range of face_indices lies inside it). */
static mb_error check_slab_offsets(const char *src, const mb_mesh_info *info, int64_t f0,
                                   int64_t n, const int64_t *off) {
  MB_CHECK(off[0] >= 0 && off[n] <= info->nidx && (f0 > 0 || off[0] == 0) &&
               (f0 + n < info->nf || off[n] == info->nidx),
           MB_ERR_FORMAT, "%s/face_offsets: rows %lld..%lld hold %lld..%lld, outside [0, %lld]",
           src, (long long)f0, (long long)(f0 + n), (long long)off[0], (long long)off[n],
           (long long)info->nidx);
  for (int64_t f = 0; f < n; f++)
    MB_CHECK(off[f + 1] - off[f] >= 3, MB_ERR_FORMAT,
             "%s: face %lld has %lld vertices (need at least 3)", src, (long long)(f0 + f),
             (long long)(off[f + 1] - off[f]));
  return MB_SUCCESS;
}

/* Arrays, fields and attributes of one mesh group into a new mesh (whose
 * xyz is zeroed: planar kinds keep z = 0). */
static mb_error read_group(hid_t g, const char *src, int version, const mb_mesh_info *info,
                           mb_mesh *m) {
  m->kind = info->kind;
  if (m->kind == MB_KIND_GRID3D) {
    MB_CALL(read_grid_fields(g, src, m));
    MB_CALL(read_attrs(g, version, m));
    MB_CALL(mb_mesh_validate(m, src));
    return MB_SUCCESS;
  }
  MB_CALL(read_rows_into(g, src, "vertices", H5T_NATIVE_DOUBLE, 0, m->nv,
                         mb_coll_kind_vcols(info->kind), 3, m->xyz));
  if (info->triangles) {
    MB_CALL(read_all(g, src, "triangles", H5T_NATIVE_INT64, m->face_indices));
    int64_t *const off = m->face_offsets, nf = m->nf;
#pragma omp parallel for schedule(static) if (nf >= (1 << 18))
    for (int64_t f = 0; f <= nf; f++) off[f] = 3 * f;
  } else {
    MB_CALL(read_all(g, src, "face_offsets", H5T_NATIVE_INT64, m->face_offsets));
    MB_CALL(read_all(g, src, "face_indices", H5T_NATIVE_INT64, m->face_indices));
    MB_CHECK(m->face_offsets[m->nf] == info->nidx, MB_ERR_FORMAT,
             "%s/face_offsets: last offset is %lld, expected %lld (length of face_indices)",
             src, (long long)m->face_offsets[m->nf], (long long)info->nidx);
    MB_CALL(check_slab_offsets(src, info, 0, m->nf, m->face_offsets));
  }
  MB_CALL(read_fields(g, src, m, "fields", 0, m->nv));
  MB_CALL(read_fields(g, src, m, "face_fields", 0, m->nf));
  MB_CALL(read_attrs(g, version, m));
  MB_CALL(mb_coll_validate(m, src));
  return MB_SUCCESS;
}

mb_error mb_collection_read(mb_collection *coll, int64_t i, mb_mesh **mesh) {
  MB_CHECK(coll && mesh, MB_ERR_ARG, "mb_collection_read: NULL argument");
  MB_CHECK(i >= 0 && i < coll->n, MB_ERR_ARG, "mb_collection_read: mesh %lld outside [0, %lld)",
           (long long)i, (long long)coll->n);
  const mb_mesh_info *info = &coll->infos[i];
  MB_CHECK(!info->problem[0], MB_ERR_FORMAT, "%s", info->problem);
  char src[MB_PATH_MAX];
  snprintf(src, sizeof src, "%s:/meshes/%s", coll->path, info->name);
  mb_mesh *m;
  if (info->kind == MB_KIND_GRID3D)
    MB_CALL(mb_grid_create(info->name, info->shape, info->origin, info->spacing, &m));
  else
    MB_CALL(mb_coll_mesh_for_read(info, &m));
  m->index = i;
  mb_h5_quiet q = mb_h5_quiet_begin();
  hid_t ms = H5Gopen2(coll->file, "meshes", H5P_DEFAULT);
  hid_t g = ms >= 0 ? H5Gopen2(ms, info->name, H5P_DEFAULT) : -1;
  raw_path = coll->image ? NULL : coll->path;
  mb_error e = g >= 0 ? read_group(g, src, coll->version, info, m)
                      : mb_error_set(MB_ERR_HDF5, __FILE__, __LINE__, __func__,
                                     "%s: cannot open the mesh group", src);
  raw_path = NULL;
  mb_h5_close_id(g);
  mb_h5_close_id(ms);
  mb_h5_quiet_end(q);
  if (e) { mb_mesh_free(m); MB_CALL(e); }
  *mesh = m;
  return MB_SUCCESS;
}

/* Create s->rows with nvr vertex rows and faces rows [s->face_start,
 * s->face_start + nfr): triangles by hyperslab, or for polygon meshes the
 * offsets rows (rebased to 0) and the range of face_indices they span. */
static mb_error read_slab_faces(hid_t g, const char *src, const mb_mesh_info *info,
                                int64_t nvr, int64_t nfr, mb_mesh_slab *s) {
  int64_t f0 = s->face_start, base = 3 * f0, nidx = 3 * nfr, *off = NULL;
  if (!info->triangles) {
    MB_CALLOC(off, nfr + 1);
    mb_error e = read_rows(g, src, "face_offsets", H5T_NATIVE_INT64, f0, nfr + 1, 0, off);
    if (!e) e = check_slab_offsets(src, info, f0, nfr, off);
    if (e) { free(off); MB_CALL(e); }
    base = off[0];
    nidx = off[nfr] - off[0];
  }
  mb_error e = mb_mesh_create(info->name, nvr, nfr, nidx, &s->rows);
  for (int64_t f = 0; !e && f <= nfr; f++) s->rows->face_offsets[f] = off ? off[f] - base : 3 * f;
  free(off);
  MB_CALL(e);
  if (info->triangles)
    MB_CALL(read_rows(g, src, "triangles", H5T_NATIVE_INT64, f0, nfr, 3, s->rows->face_indices));
  else
    MB_CALL(read_rows(g, src, "face_indices", H5T_NATIVE_INT64, base, nidx, 0,
                      s->rows->face_indices));
  return MB_SUCCESS;
}

/* Rows, fields and attributes of a slab of one mesh group into s->rows. */
static mb_error read_slab_group(hid_t g, const char *src, int version, const mb_mesh_info *info,
                                int64_t nvr, int64_t nfr, mb_mesh_slab *s) {
  MB_CALL(read_slab_faces(g, src, info, nvr, nfr, s));
  s->rows->kind = info->kind;
  MB_CALL(read_rows_into(g, src, "vertices", H5T_NATIVE_DOUBLE, s->vertex_start, nvr,
                         mb_coll_kind_vcols(info->kind), 3, s->rows->xyz));
  MB_CALL(read_fields(g, src, s->rows, "fields", s->vertex_start, info->nv));
  MB_CALL(read_fields(g, src, s->rows, "face_fields", s->face_start, info->nf));
  MB_CALL(read_attrs(g, version, s->rows));
  MB_CALL(mb_coll_validate_rows(s->rows, s->vertex_start, s->face_start, info->nv, src));
  return MB_SUCCESS;
}

mb_error mb_collection_read_slab(mb_collection *coll, int64_t i, int64_t vertex_start,
                                 int64_t nvrows, int64_t face_start, int64_t nfrows,
                                 mb_mesh_slab *slab) {
  MB_CHECK(coll && slab, MB_ERR_ARG, "mb_collection_read_slab: NULL argument");
  MB_CHECK(i >= 0 && i < coll->n, MB_ERR_ARG,
           "mb_collection_read_slab: mesh %lld outside [0, %lld)", (long long)i,
           (long long)coll->n);
  const mb_mesh_info *info = &coll->infos[i];
  MB_CHECK(!info->problem[0], MB_ERR_FORMAT, "%s", info->problem);
  MB_CHECK(info->kind != MB_KIND_GRID3D, MB_ERR_UNSUPPORTED,
           "%s: '%s' is a grid3d; grids are read whole (mb_collection_read)", coll->path,
           info->name);
  MB_CHECK(mb_coll_rows_inside(vertex_start, nvrows, info->nv), MB_ERR_ARG,
           "mb_collection_read_slab: vertex rows [%lld, %lld) outside [0, %lld) of mesh '%s'",
           (long long)vertex_start, (long long)(vertex_start + nvrows), (long long)info->nv,
           info->name);
  MB_CHECK(mb_coll_rows_inside(face_start, nfrows, info->nf), MB_ERR_ARG,
           "mb_collection_read_slab: face rows [%lld, %lld) outside [0, %lld) of mesh '%s'",
           (long long)face_start, (long long)(face_start + nfrows), (long long)info->nf,
           info->name);
  char src[MB_PATH_MAX];
  snprintf(src, sizeof src, "%s:/meshes/%s", coll->path, info->name);
  mb_mesh_slab s = {.vertex_start = vertex_start, .face_start = face_start, .nv = info->nv,
                    .nf = info->nf};
  mb_h5_quiet q = mb_h5_quiet_begin();
  hid_t ms = H5Gopen2(coll->file, "meshes", H5P_DEFAULT);
  hid_t g = ms >= 0 ? H5Gopen2(ms, info->name, H5P_DEFAULT) : -1;
  raw_path = coll->image ? NULL : coll->path;
  mb_error e = g >= 0 ? read_slab_group(g, src, coll->version, info, nvrows, nfrows, &s)
                      : mb_error_set(MB_ERR_HDF5, __FILE__, __LINE__, __func__,
                                     "%s: cannot open the mesh group", src);
  raw_path = NULL;
  mb_h5_close_id(g);
  mb_h5_close_id(ms);
  mb_h5_quiet_end(q);
  if (e) { mb_mesh_free(s.rows); MB_CALL(e); }
  s.rows->index = i;
  *slab = s;
  return MB_SUCCESS;
}

mb_error mb_collection_read_grid_block(mb_collection *coll, int64_t i, const int64_t lo[3],
                                       const int64_t n[3], mb_mesh_slab *slab) {
  MB_CHECK(coll && slab && lo && n, MB_ERR_ARG, "mb_collection_read_grid_block: NULL argument");
  MB_CHECK(i >= 0 && i < coll->n, MB_ERR_ARG,
           "mb_collection_read_grid_block: dataset %lld outside [0, %lld)", (long long)i,
           (long long)coll->n);
  const mb_mesh_info *info = &coll->infos[i];
  MB_CHECK(!info->problem[0], MB_ERR_FORMAT, "%s", info->problem);
  MB_CHECK(info->kind == MB_KIND_GRID3D, MB_ERR_ARG, "%s: '%s' is a %s, not a grid3d", coll->path,
           info->name, mb_kind_name(info->kind));
  for (int a = 0; a < 3; a++)
    MB_CHECK(lo[a] >= 0 && n[a] >= 1 && lo[a] + n[a] <= info->shape[a], MB_ERR_ARG,
             "%s: block outside grid '%s'", coll->path, info->name);
  char src[MB_PATH_MAX];
  snprintf(src, sizeof src, "%s:/meshes/%s", coll->path, info->name);
  mb_mesh *m;
  MB_CALL(mb_grid_create(info->name, n, info->origin, info->spacing, &m));
  m->index = i;
  mb_error e = MB_SUCCESS;
  mb_h5_quiet q = mb_h5_quiet_begin();
  hid_t ms = H5Gopen2(coll->file, "meshes", H5P_DEFAULT);
  hid_t g = ms >= 0 ? H5Gopen2(ms, info->name, H5P_DEFAULT) : -1;
  hid_t fg = -1;
  int fields = 0;
  mb_names l = {0};
  if (g < 0) e = mb_error_set(MB_ERR_HDF5, __FILE__, __LINE__, __func__, "%s: cannot open", src);
  if (!e) e = link_exists(g, "fields", src, NULL, &fields);
  if (!e && fields) fg = H5Gopen2(g, "fields", H5P_DEFAULT);
  if (!e && fields && fg < 0)
    e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__, "%s/fields: not a group", src);
  if (!e && fg >= 0) e = list_links(fg, &l);
  for (int k = 0; k < l.n && !e; k++) {
    hid_t d = H5Dopen2(fg, l.v[k], H5P_DEFAULT);
    hid_t t = d >= 0 ? H5Dget_type(d) : -1, fs = d >= 0 ? H5Dget_space(d) : -1;
    hsize_t dims[4] = {0, 0, 0, 1};
    const int r = fs >= 0 ? H5Sget_simple_extent_ndims(fs) : -1;
    if (r == 3 || r == 4) H5Sget_simple_extent_dims(fs, dims, NULL);
    const int f32 = t >= 0 && H5Tget_size(t) == 4, ncomp = r == 4 ? (int)dims[3] : 1;
    hsize_t start[4] = {(hsize_t)lo[0], (hsize_t)lo[1], (hsize_t)lo[2], 0};
    hsize_t count[4] = {(hsize_t)n[0], (hsize_t)n[1], (hsize_t)n[2], (hsize_t)ncomp};
    void *buf = mb_alloc((f32 ? sizeof(float) : sizeof(double)) * (size_t)m->nv * (size_t)ncomp);
    herr_t st = buf && fs >= 0 && (r == 3 || r == 4)
                    ? mb_h5_block_transfer(d, f32 ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE, 0, r,
                                           start, count, count, buf)
                    : -1;
    mb_h5_close_id(t);
    mb_h5_close_id(fs);
    mb_h5_close_id(d);
    if (st < 0)
      e = mb_error_set(buf ? MB_ERR_HDF5 : MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                       "%s/fields/%s: cannot read the block", src, l.v[k]);
    else
      e = f32 ? mb_mesh_set_field_f32(m, l.v[k], ncomp, buf) : mb_mesh_set_field(m, l.v[k], ncomp, buf);
    free(buf);
  }
  names_free(&l);
  if (!e && g >= 0) e = read_attrs(g, coll->version, m);
  mb_h5_close_id(fg);
  mb_h5_close_id(g);
  mb_h5_close_id(ms);
  mb_h5_quiet_end(q);
  if (e) {
    mb_mesh_free(m);
    MB_CALL(e);
  }
  *slab = (mb_mesh_slab){.rows = m, .nv = info->nv, .nf = 0};
  for (int a = 0; a < 3; a++) {
    slab->grid_lo[a] = lo[a];
    slab->grid_shape[a] = info->shape[a];
  }
  return MB_SUCCESS;
}

mb_error mb_collection_close(mb_collection *coll) {
  if (!coll) return MB_SUCCESS;
  herr_t st = coll->file >= 0 ? H5Fclose(coll->file) : 0;
  char path[MB_PATH_MAX];
  snprintf(path, sizeof path, "%s", coll->path);
  free(coll->infos);
  free(coll->path);
  free(coll);
  MB_CHECK(st >= 0, MB_ERR_HDF5, "%s: H5Fclose failed", path);
  return MB_SUCCESS;
}
