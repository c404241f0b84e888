/* meshbatch: partition files (see mb_partfile.h).
 * HDF5's error stack is never silenced for the process: what may be absent
 * (attributes, datasets) is checked first (H5Aexists, H5Lexists, the type
 * class), and only the calls that fail on a file meshbatch does not control
 * (H5Fcreate in a folder, H5Fopen of what may not be a partition file)
 * run inside H5E_BEGIN_TRY / H5E_END_TRY, which puts the caller's handler
 * back right after; meshbatch reports those failures with its own message. */
#include "mb_partfile.h"

#include <errno.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mb_mesh.h"

void mb_partfile_free(mb_partfile *p) {
  if (!p) return;
  free(p->vertex_part);
  free(p->face_part);
  free(p);
}

static herr_t put_string(hid_t loc, const char *name, const char *value) {
  hid_t type = H5Tcopy(H5T_C_S1), space = H5Screate(H5S_SCALAR);
  hid_t a = type < 0 || space < 0 || H5Tset_size(type, strlen(value) + 1) < 0
                ? -1
                : H5Acreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  herr_t rc = a < 0 ? -1 : H5Awrite(a, type, value);
  if (a >= 0) H5Aclose(a);
  H5Sclose(space);
  H5Tclose(type);
  return rc;
}

static herr_t put_scalar(hid_t loc, const char *name, hid_t type, const void *value) {
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  herr_t rc = a < 0 ? -1 : H5Awrite(a, type, value);
  if (a >= 0) H5Aclose(a);
  H5Sclose(space);
  return rc;
}

static herr_t put_parts(hid_t file, const char *name, int64_t n, const int32_t *data) {
  hsize_t dim = (hsize_t)n;
  hid_t space = H5Screate_simple(1, &dim, NULL);
  hid_t d = H5Dcreate2(file, name, H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  herr_t rc = d < 0 ? -1 : H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
  if (d >= 0) H5Dclose(d);
  H5Sclose(space);
  return rc;
}

mb_error mb_partfile_write(const char *path, const mb_partfile *p) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
  hid_t f = -1;
  H5E_BEGIN_TRY { f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT); }
  H5E_END_TRY
  MB_CHECK(f >= 0, MB_ERR_IO, "%s: cannot create the partition file: %s", path,
           mb_create_reason(tmp));
  int version = MB_PARTFILE_FORMAT_VERSION;
  long long cut = p->quality.edge_cut;
  herr_t rc = put_string(f, "format", MB_PARTFILE_FORMAT);
  if (rc >= 0) rc = put_scalar(f, "format_version", H5T_NATIVE_INT, &version);
  if (rc >= 0) rc = put_string(f, "mesh", p->mesh);
  if (rc >= 0) rc = put_scalar(f, "nparts", H5T_NATIVE_INT, &p->nparts);
  if (rc >= 0) rc = put_scalar(f, "edge_cut", H5T_NATIVE_LLONG, &cut);
  if (rc >= 0) rc = put_scalar(f, "imbalance", H5T_NATIVE_DOUBLE, &p->quality.imbalance);
  if (rc >= 0) rc = put_parts(f, "vertex_part", p->nv, p->vertex_part);
  if (rc >= 0) rc = put_parts(f, "face_part", p->nf, p->face_part);
  if (H5Fclose(f) < 0) rc = -1;
  const int renamed = rc >= 0 && rename(tmp, path) == 0;
  if (!renamed) {
    const char *why = rc < 0 ? "HDF5 could not write it (is the disk full?)" : strerror(errno);
    remove(tmp);
    MB_FAIL(MB_ERR_IO, "%s: cannot write the partition file: %s", path, why);
  }
  return MB_SUCCESS;
}

/* The type class of attribute `name` of f, H5T_NO_CLASS where there is no
 * such attribute (or it cannot be opened). */
static H5T_class_t attr_class(hid_t f, const char *name) {
  if (H5Aexists(f, name) <= 0) return H5T_NO_CLASS;
  hid_t a = H5Aopen(f, name, H5P_DEFAULT);
  hid_t type = a >= 0 ? H5Aget_type(a) : -1;
  const H5T_class_t c = type >= 0 ? H5Tget_class(type) : H5T_NO_CLASS;
  if (type >= 0) H5Tclose(type);
  if (a >= 0) H5Aclose(a);
  return c;
}

/* Read the integer attribute `name` of f into *v (memory type mt); -1 where
 * it is missing or not an integer. */
static int get_int(hid_t f, const char *name, hid_t mt, void *v) {
  if (attr_class(f, name) != H5T_INTEGER) return -1;
  hid_t a = H5Aopen(f, name, H5P_DEFAULT);
  if (a < 0) return -1;
  const herr_t rc = H5Aread(a, mt, v);
  H5Aclose(a);
  return rc < 0 ? -1 : 0;
}

/* Read a 1-D int32 dataset into a new array; *n receives its length. NULL
 * where it is missing, not a dataset, not 1-D or not of integers. */
static int32_t *get_parts(hid_t f, const char *name, int64_t *n) {
  if (H5Lexists(f, name, H5P_DEFAULT) <= 0) return NULL;
  hid_t d = H5Oopen(f, name, H5P_DEFAULT); /* a group or a dataset */
  if (d < 0) return NULL;
  if (H5Iget_type(d) != H5I_DATASET) {
    H5Oclose(d);
    return NULL;
  }
  hid_t space = H5Dget_space(d), type = H5Dget_type(d);
  const int integer = type >= 0 && H5Tget_class(type) == H5T_INTEGER;
  if (type >= 0) H5Tclose(type);
  hsize_t dim = 0;
  int32_t *out = NULL;
  if (integer && H5Sget_simple_extent_ndims(space) == 1 &&
      H5Sget_simple_extent_dims(space, &dim, NULL) == 1) {
    out = malloc(sizeof *out * (size_t)(dim ? dim : 1));
    if (out && H5Dread(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0) {
      free(out);
      out = NULL;
    }
  }
  *n = (int64_t)dim;
  H5Sclose(space);
  H5Dclose(d);
  return out;
}

/* Read the fixed-length string attribute `name` of f into buf[len]; -1
 * where it is missing or not a string. */
static int get_string(hid_t f, const char *name, char *buf, size_t len) {
  if (attr_class(f, name) != H5T_STRING) return -1;
  hid_t a = H5Aopen(f, name, H5P_DEFAULT);
  if (a < 0) return -1;
  hid_t type = H5Aget_type(a);
  size_t n = H5Tget_size(type);
  char *tmp = calloc(n + 1, 1);
  int rc = tmp && H5Aread(a, type, tmp) >= 0 ? 0 : -1;
  if (!rc) snprintf(buf, len, "%s", tmp);
  free(tmp);
  H5Tclose(type);
  H5Aclose(a);
  return rc;
}

/* Edge cut from the file; owned counts, imbalance and empty parts recomputed. */
static mb_error read_quality(hid_t f, mb_partfile *p) {
  long long cut = 0;
  if (attr_class(f, "edge_cut") != H5T_NO_CLASS)
    MB_CHECK(get_int(f, "edge_cut", H5T_NATIVE_LLONG, &cut) == 0, MB_ERR_IO,
             "partition file: the edge_cut attribute cannot be read");
  int64_t *owned = calloc((size_t)p->nparts, sizeof *owned);
  MB_CHECK(owned, MB_ERR_MEMORY, "out of memory");
  for (int64_t i = 0; i < p->nv; i++) owned[p->vertex_part[i]]++;
  p->quality = (mb_partition_quality){.nparts = p->nparts, .edge_cut = cut,
                                      .mean_owned = (double)p->nv / p->nparts};
  for (int q = 0; q < p->nparts; q++) {
    if (owned[q] > p->quality.max_owned) p->quality.max_owned = owned[q];
    if (!owned[q]) p->quality.nempty++;
  }
  p->quality.imbalance = p->quality.mean_owned > 0 ? p->quality.max_owned / p->quality.mean_owned : 1;
  free(owned);
  return MB_SUCCESS;
}

mb_error mb_partfile_read(const char *path, mb_partfile **out) {
  MB_CHECK(access(path, R_OK) == 0, MB_ERR_IO, "%s: cannot open the partition file: %s", path,
           strerror(errno));
  hid_t f = -1;
  H5E_BEGIN_TRY { /* any file may be passed here (meshbatch info tries this first) */
    if (H5Fis_hdf5(path) > 0) f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  }
  H5E_END_TRY
  MB_CHECK(f >= 0, MB_ERR_FORMAT, "%s: not an HDF5 file", path);
  mb_partfile *p = calloc(1, sizeof *p);
  char format[64] = "";
  int version = 0;
  mb_error e = MB_SUCCESS;
  if (!p || get_string(f, "format", format, sizeof format) || strcmp(format, MB_PARTFILE_FORMAT))
    e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                     "%s: not a meshbatch partition file", path);
  if (!e && (get_int(f, "format_version", H5T_NATIVE_INT, &version) ||
             version != MB_PARTFILE_FORMAT_VERSION))
    e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                     "%s: unsupported partition format version %d", path, version);
  if (!e && (get_int(f, "nparts", H5T_NATIVE_INT, &p->nparts) || p->nparts < 1))
    e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__, "%s: bad nparts", path);
  if (!e) get_string(f, "mesh", p->mesh, sizeof p->mesh); /* optional: for the report only */
  if (!e && (!(p->vertex_part = get_parts(f, "vertex_part", &p->nv)) ||
             !(p->face_part = get_parts(f, "face_part", &p->nf))))
    e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                     "%s: vertex_part/face_part missing or not 1-D int32", path);
  for (int64_t i = 0; !e && i < p->nv; i++)
    if (p->vertex_part[i] < 0 || p->vertex_part[i] >= p->nparts)
      e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                       "%s: vertex %lld has part %d outside [0, %d)", path, (long long)i,
                       p->vertex_part[i], p->nparts);
  if (!e) e = read_quality(f, p);
  H5Fclose(f);
  if (e) {
    mb_partfile_free(p);
    return e;
  }
  *out = p;
  return MB_SUCCESS;
}
