/* meshbatch fuzzing: the HDF5 collection reader on mutated collections.
 * The input does not mutate HDF5's own file structure (HDF5's parser is
 * not meshbatch's code); it decides a collection's contents: the root
 * attributes, one to three datasets of any kind with their `index` and
 * `kind` attributes, shapes and values of vertices, triangles,
 * face_offsets/face_indices (counts, offsets and indices out of range,
 * NaN), fields and face fields of any shape, and grids with any shape,
 * origin, spacing and field shapes. The harness writes that file with
 * HDF5 in memory (core driver) and reads its file image with the reader
 * (mb_collection_open_image, then mb_collection_read of every dataset, a
 * slab of each mesh and a block of each grid): the reader's own code as for
 * a file, without the file system and MPI-IO. MB_FUZZ_COLLECTION_MPIIO=1
 * writes the file to the scratch folder and opens it with
 * mb_collection_open through MPI-IO instead (to replay an input through
 * that path; about half as many runs a second). */
#include "fuzz_common.h"

#include <hdf5.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mb_collection.h"
#include "mb_collection_private.h"

typedef struct cursor {
  const uint8_t *p, *end;
} cursor;

static unsigned u8(cursor *c) { return c->p < c->end ? *c->p++ : 0; }

/* A small integer, now and then an extreme one (negative, huge). */
static int64_t pick_i64(cursor *c, int64_t typical) {
  const unsigned b = u8(c);
  switch (b >> 5) {
  case 0: return -(int64_t)(b & 7) - 1;
  case 1: return (int64_t)1 << (30 + (b & 31));
  case 2: return typical + (b & 31);
  default: return (int64_t)(b & 31) % (typical > 0 ? typical : 1);
  }
}

static double pick_f64(cursor *c) {
  const unsigned b = u8(c);
  if (b == 255) return NAN;
  if (b == 254) return INFINITY;
  return (double)((int)b - 128) / 16.0;
}

static void attr_str(hid_t loc, const char *name, const char *value) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, strlen(value) + 1);
  hid_t s = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(loc, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
  if (a >= 0) {
    H5Awrite(a, t, value);
    H5Aclose(a);
  }
  H5Sclose(s);
  H5Tclose(t);
}

static void attr_i64(hid_t loc, const char *name, int n, const int64_t *v) {
  hsize_t d = (hsize_t)n;
  hid_t s = n == 1 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &d, NULL);
  hid_t a = H5Acreate2(loc, name, H5T_STD_I64LE, s, H5P_DEFAULT, H5P_DEFAULT);
  if (a >= 0) {
    H5Awrite(a, H5T_NATIVE_INT64, v);
    H5Aclose(a);
  }
  H5Sclose(s);
}

static void attr_f64(hid_t loc, const char *name, int n, const double *v) {
  hsize_t d = (hsize_t)n;
  hid_t s = H5Screate_simple(1, &d, NULL);
  hid_t a = H5Acreate2(loc, name, H5T_IEEE_F64LE, s, H5P_DEFAULT, H5P_DEFAULT);
  if (a >= 0) {
    H5Awrite(a, H5T_NATIVE_DOUBLE, v);
    H5Aclose(a);
  }
  H5Sclose(s);
}

/* A dataset of rank r and dims, float64 (f = 1), float32 (f = 2) or
 * int64 (f = 0), filled from the cursor (at most 4096 values). */
static void dataset(cursor *c, hid_t loc, const char *name, int r, const hsize_t *dims, int f,
                    int64_t typical) {
  hsize_t n = 1;
  for (int a = 0; a < r; a++) n *= dims[a];
  if (n > 4096) return;
  static double vd[4096];
  static float vf[4096];
  static int64_t vi[4096];
  for (hsize_t k = 0; k < n; k++) {
    if (f == 0) vi[k] = pick_i64(c, typical);
    else if (f == 1) vd[k] = pick_f64(c);
    else vf[k] = (float)pick_f64(c);
  }
  hid_t s = H5Screate_simple(r, dims, NULL);
  hid_t ft = f == 0 ? H5T_STD_I64LE : f == 1 ? H5T_IEEE_F64LE : H5T_IEEE_F32LE;
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (r >= 3 && n > 0) H5Pset_chunk(dcpl, r, dims);
  hid_t d = H5Dcreate2(loc, name, ft, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (d >= 0) {
    H5Dwrite(d, f == 0 ? H5T_NATIVE_INT64 : f == 1 ? H5T_NATIVE_DOUBLE : H5T_NATIVE_FLOAT,
             H5S_ALL, H5S_ALL, H5P_DEFAULT, f == 0 ? (void *)vi : f == 1 ? (void *)vd : (void *)vf);
    H5Dclose(d);
  }
  H5Pclose(dcpl);
  H5Sclose(s);
}

static const char *const kinds[] = {"surface", "triangulation2d", "polygons2d", "grid3d", "blob"};

static void one_dataset(cursor *c, hid_t meshes, int k) {
  char name[16];
  snprintf(name, sizeof name, "m%d", k);
  hid_t g = H5Gcreate2(meshes, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (g < 0) return;
  const unsigned flags = u8(c);
  int64_t index = flags & 1 ? pick_i64(c, k) : k;
  if (!(flags & 2)) attr_i64(g, "index", 1, &index);
  const int kind = (int)(u8(c) % 5);
  if (!(flags & 4)) attr_str(g, "kind", kinds[kind]);
  const hsize_t nv = u8(c) % 12, nf = u8(c) % 12;
  const hsize_t vcols = flags & 8 ? u8(c) % 4 : (kind == 1 || kind == 2 ? 2 : 3);
  if (kind == 3) { /* grid3d */
    int64_t shape[3];
    double origin[3], spacing[3];
    for (int a = 0; a < 3; a++) {
      shape[a] = flags & 16 ? pick_i64(c, 3) : 1 + u8(c) % 5;
      origin[a] = pick_f64(c);
      spacing[a] = pick_f64(c);
    }
    if (!(flags & 32)) attr_i64(g, "shape", 3, shape);
    attr_f64(g, "origin", 3, origin);
    attr_f64(g, "spacing", 3, spacing);
    hid_t fg = H5Gcreate2(g, "fields", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const int nfields = (int)(u8(c) % 3);
    for (int f = 0; f < nfields && fg >= 0; f++) {
      hsize_t dims[4];
      const int r = 3 + (int)(u8(c) % 2);
      for (int a = 0; a < 3; a++)
        dims[a] = u8(c) < 200 && shape[a] > 0 && shape[a] < 8 ? (hsize_t)shape[a] : u8(c) % 6;
      dims[3] = 1 + u8(c) % 3;
      char fname[8];
      snprintf(fname, sizeof fname, "f%d", f);
      dataset(c, fg, fname, r, dims, 1 + (int)(u8(c) & 1), 0);
    }
    if (fg >= 0) H5Gclose(fg);
    H5Gclose(g);
    return;
  }
  hsize_t vd[2] = {nv, vcols};
  dataset(c, g, "vertices", flags & 64 ? 1 : 2, vd, 1, 0);
  const unsigned faces = u8(c);
  if (faces & 1) {
    hsize_t td[2] = {nf, faces & 2 ? u8(c) % 5 : 3};
    dataset(c, g, "triangles", 2, td, faces & 4 ? 1 : 0, (int64_t)nv);
  }
  if (faces & 8) {
    hsize_t od = nf + (faces & 16 ? 0 : 1), id = (hsize_t)(u8(c) % 40);
    dataset(c, g, "face_offsets", 1, &od, 0, 3);
    dataset(c, g, "face_indices", 1, &id, 0, (int64_t)nv);
  }
  if (faces & 32) {
    hid_t fg = H5Gcreate2(g, faces & 64 ? "face_fields" : "fields", H5P_DEFAULT, H5P_DEFAULT,
                          H5P_DEFAULT);
    hsize_t fd[2] = {u8(c) % 12, u8(c) % 3};
    if (fg >= 0) {
      dataset(c, fg, "q", (int)(1 + u8(c) % 2), fd, 1, 0);
      H5Gclose(fg);
    }
  }
  if (faces & 128) attr_str(g, "stage_0", "laplacian");
  H5Gclose(g);
}

/* Write the collection described by the input to path (image = NULL) or,
 * with the core driver, into *image (malloc'ed, *image_size bytes); 0 on
 * success. */
static int write_collection(const char *path, const uint8_t *data, size_t size, void **image,
                            size_t *image_size) {
  cursor c = {data, data + size};
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (image) H5Pset_fapl_core(fapl, 1 << 16, 0); /* in memory only */
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  H5Pclose(fapl);
  if (f < 0) return -1;
  const unsigned root = u8(&c);
  if (!(root & 1)) attr_str(f, "format", root & 2 ? "meshbatch-collection" : "other");
  else attr_str(f, "format", "meshbatch-collection");
  int64_t version = root & 4 ? pick_i64(&c, 1) : 2;
  if (!(root & 8)) attr_i64(f, "format_version", 1, &version);
  hid_t meshes = H5Gcreate2(f, "meshes", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const int n = (int)(root >> 4) % 4;
  for (int k = 0; k < n && meshes >= 0; k++) one_dataset(&c, meshes, k);
  if (meshes >= 0) H5Gclose(meshes);
  if (image) { /* the image holds what is flushed: everything, after this */
    const ssize_t len = H5Fflush(f, H5F_SCOPE_GLOBAL) >= 0 ? H5Fget_file_image(f, NULL, 0) : -1;
    *image = len > 0 ? malloc((size_t)len) : NULL;
    *image_size = *image && H5Fget_file_image(f, *image, (size_t)len) == len ? (size_t)len : 0;
  }
  H5Fclose(f);
  if (image && !*image_size) {
    free(*image);
    return -1;
  }
  return 0;
}

void mb_fuzz_one(const uint8_t *data, size_t size) {
  static int mpiio = -1;
  if (mpiio < 0) {
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    /* Each file open (two a run) allocates a metadata cache of over 512 KiB,
     * which HDF5's free lists for fixed-size blocks (1 MiB in all, 64 KiB a
     * list by default) give back to malloc: under ASan a fresh mapping,
     * zeroed page by page, each time; that was most of a run. Let them keep
     * it (the other lists keep HDF5's defaults). */
    H5set_free_list_limits(16 << 20, 4 << 20, 4 << 20, 1 << 18, 16 << 20, 1 << 20);
    const char *v = getenv("MB_FUZZ_COLLECTION_MPIIO");
    mpiio = v && *v && strcmp(v, "0") != 0;
  }
  mb_collection *coll = NULL;
  if (mpiio) {
    const char *path = mb_fuzz_file(0, ".h5", NULL, 0);
    if (write_collection(path, data, size, NULL, NULL)) return;
    if (mb_collection_open(MPI_COMM_SELF, path, &coll) != MB_SUCCESS) return;
  } else {
    void *image = NULL;
    size_t bytes = 0;
    if (write_collection("fuzz.h5", data, size, &image, &bytes)) return;
    const mb_error e = mb_collection_open_image(MPI_COMM_SELF, "fuzz.h5", image, bytes, &coll);
    free(image);
    if (e != MB_SUCCESS) return;
  }
  for (int64_t i = 0; i < mb_collection_count(coll); i++) {
    mb_mesh *m = NULL;
    if (mb_collection_read(coll, i, &m) == MB_SUCCESS) mb_mesh_free(m);
    const mb_mesh_info *info = mb_collection_info(coll, i);
    mb_mesh_slab s = {0};
    if (info->kind == MB_KIND_GRID3D) {
      const int64_t lo[3] = {0, 0, 0}, n[3] = {info->shape[0], info->shape[1], info->shape[2]};
      if (mb_collection_read_grid_block(coll, i, lo, n, &s) == MB_SUCCESS) mb_mesh_free(s.rows);
    } else if (mb_collection_read_slab(coll, i, info->nv / 2, info->nv - info->nv / 2,
                                       info->nf / 2, info->nf - info->nf / 2, &s) == MB_SUCCESS) {
      mb_mesh_free(s.rows);
    }
  }
  mb_collection_close(coll);
}
