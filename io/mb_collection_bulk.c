/* meshbatch: the passes of the collection's reader and writer over a whole
 * mesh's rows, on all OpenMP threads (see mb_collection_private.h): the raw
 * read of a contiguous dataset by parallel pread, the mesh's validation
 * and its face statistics. Each gives what its one-thread counterpart
 * gives (HDF5's H5Dread, mb_mesh_validate, mb_xdmf_mixed_length with
 * mb_mesh_is_triangles and mb_xdmf_fan_count): the same bytes, the same
 * verdict and, on a failure, the same message (the one-thread pass makes
 * it). */
#include "mb_collection_private.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mb_alloc.h"
#include "mb_xdmf.h"

/* Below this many bytes (or rows) a pass stays on one thread, HDF5's own read. */
enum { BULK_MIN_BYTES = 16 << 20, BULK_MIN_ROWS = 1 << 18 };

/* Threads of a raw read: at most 8 (the page cache's copy and the first
 * touch of the pages scale to a few cores), one per 8 MiB. */
static int read_threads(size_t bytes) {
  int n = omp_get_max_threads();
  if (n > 8) n = 8;
  const size_t per = (size_t)8 << 20;
  if ((size_t)n > bytes / per) n = (int)(bytes / per);
  return n < 1 ? 1 : n;
}

/* MESHBATCH_RAW_READ=0 turns the raw read off (every read through HDF5). */
static int raw_read_on(void) {
  const char *v = getenv("MESHBATCH_RAW_READ");
  return !(v && !strcmp(v, "0"));
}

/* The file offset of d's raw bytes where pread may stand in for H5Dread
 * into memory type mt: contiguous, in the file itself (no external
 * storage), allocated, stored in the memory type's very layout (H5Tequal:
 * a little-endian file type on a little-endian host). -1 otherwise. */
static int64_t raw_offset(hid_t d, hid_t mt, size_t need) {
  int64_t off = -1;
  const hid_t dcpl = H5Dget_create_plist(d), ft = H5Dget_type(d);
  if (dcpl >= 0 && ft >= 0 && H5Pget_layout(dcpl) == H5D_CONTIGUOUS &&
      H5Pget_external_count(dcpl) == 0 && H5Tequal(ft, mt) > 0 &&
      H5Dget_storage_size(d) >= (hsize_t)need) {
    const haddr_t a = H5Dget_offset(d);
    if (a != HADDR_UNDEF && a <= (haddr_t)INT64_MAX) off = (int64_t)a;
  }
  mb_h5_close_id(ft);
  mb_h5_close_id(dcpl);
  return off;
}

mb_error mb_coll_read_raw(hid_t d, const char *path, const char *src, const char *dset, hid_t mt,
                          int64_t row0, int64_t nrows, size_t row_bytes, void *buf, int *done) {
  *done = 0;
  const size_t bytes = (size_t)nrows * row_bytes;
  if (!path || !raw_read_on() || bytes < BULK_MIN_BYTES || row0 < 0) return MB_SUCCESS;
  const int64_t base = raw_offset(d, mt, (size_t)(row0 + nrows) * row_bytes);
  if (base < 0) return MB_SUCCESS;
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return MB_SUCCESS; /* HDF5 reads it (and says why where it cannot) */
  const int64_t at = base + row0 * (int64_t)row_bytes;
  const int nt = read_threads(bytes);
  /* pieces of whole 2 MiB steps of buf: each thread first-touches its own huge pages */
  const size_t step = (size_t)2 << 20, piece = (bytes / (size_t)nt + step - 1) / step * step;
  int failed = 0;
#pragma omp parallel for num_threads(nt) schedule(static, 1) reduction(| : failed)
  for (int t = 0; t < nt; t++) {
    const size_t lo = (size_t)t * piece < bytes ? (size_t)t * piece : bytes;
    const size_t hi = lo + piece < bytes ? lo + piece : bytes;
    for (size_t done_b = lo; done_b < hi && !failed;) {
      const ssize_t r = pread(fd, (char *)buf + done_b, hi - done_b, (off_t)(at + (int64_t)done_b));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) failed = r < 0 ? errno : EIO; /* 0: the file ends inside the dataset */
      else done_b += (size_t)r;
    }
  }
  close(fd);
  MB_CHECK(!failed, failed == EIO ? MB_ERR_FORMAT : MB_ERR_IO,
           "%s/%s: cannot read rows [%lld, %lld): %s", src, dset, (long long)row0,
           (long long)(row0 + nrows),
           failed == EIO ? "the file ends inside them (truncated?)" : strerror(failed));
  *done = 1;
  return MB_SUCCESS;
}

/* A mesh of info's sizes for read_group, whose reads fill its arrays:
 * mb_mesh_create's mesh without the zeroing of what they overwrite (a pass
 * over every page before the read's own; xyz stays zeroed for planar
 * kinds, whose z the file does not hold). Errors: MB_ERR_MEMORY, MB_ERR_ARG. */
mb_error mb_coll_mesh_for_read(const mb_mesh_info *info, mb_mesh **out) {
  MB_CHECK(info->nv >= 0 && info->nf >= 0 && info->nidx >= 0 && info->nv < INT64_MAX / 24 &&
               info->nf < INT64_MAX / 8 - 1 && info->nidx < INT64_MAX / 8,
           MB_ERR_ARG, "mesh '%s': sizes out of range", info->name);
  MB_CALL(mb_mesh_create(info->name, 0, 0, 0, out));
  mb_mesh *m = *out;
  free(m->xyz);
  free(m->face_offsets);
  free(m->face_indices);
  m->nv = info->nv;
  m->nf = info->nf;
  const size_t nx = (size_t)(m->nv ? m->nv : 1) * 3;
  m->xyz = mb_coll_kind_planar(info->kind) ? mb_zalloc(nx, sizeof(double))
                                           : mb_alloc(nx * sizeof(double));
  m->face_offsets = mb_alloc(sizeof(int64_t) * ((size_t)m->nf + 1));
  m->face_indices = mb_alloc(sizeof(int64_t) * (size_t)(info->nidx ? info->nidx : 1));
  if (!m->xyz || !m->face_offsets || !m->face_indices) {
    mb_mesh_free(m);
    *out = NULL;
    MB_FAIL(MB_ERR_MEMORY, "out of memory for mesh '%s' (%lld vertices, %lld faces)",
            info->name, (long long)info->nv, (long long)info->nf);
  }
  return MB_SUCCESS;
}

/* Whether m passes mb_mesh_validate_rows(m, ., ., nv, .): every
 * coordinate finite, offsets from 0 in steps of at least 3, every index of
 * [0, face_offsets[nf]) inside [0, nv) (with those offsets, the indices
 * the faces hold). */
static int rows_ok(const mb_mesh *m, int64_t nv) {
  if (m->face_offsets[0] != 0) return 0;
  int bad = 0;
  const int64_t nx = 3 * m->nv, nf = m->nf;
#pragma omp parallel for schedule(static) reduction(| : bad)
  for (int64_t i = 0; i < nx; i++) bad |= !isfinite(m->xyz[i]);
#pragma omp parallel for schedule(static) reduction(| : bad)
  for (int64_t f = 0; f < nf; f++) bad |= m->face_offsets[f + 1] - m->face_offsets[f] < 3;
  if (bad) return 0;
  const int64_t nidx = m->face_offsets[nf];
#pragma omp parallel for schedule(static) reduction(| : bad)
  for (int64_t k = 0; k < nidx; k++) bad |= (uint64_t)m->face_indices[k] >= (uint64_t)nv;
  return !bad;
}

mb_error mb_coll_validate(const mb_mesh *m, const char *src) {
  if (m->kind != MB_KIND_GRID3D && m->nv > 0 && m->nf >= BULK_MIN_ROWS && rows_ok(m, m->nv))
    return MB_SUCCESS;
  MB_CALL(mb_mesh_validate(m, src)); /* small, or failing: the one-thread pass and its message */
  return MB_SUCCESS;
}

mb_error mb_coll_validate_rows(const mb_mesh *m, int64_t v0, int64_t f0, int64_t nv,
                               const char *src) {
  if (m->nf >= BULK_MIN_ROWS && m->nf > 0 && rows_ok(m, nv)) return MB_SUCCESS;
  MB_CALL(mb_mesh_validate_rows(m, v0, f0, nv, src));
  return MB_SUCCESS;
}

void mb_coll_face_stats(const mb_mesh *m, int64_t *mixed_len, int *triangles, int *big) {
  const int64_t nf = m->nf;
  if (nf < BULK_MIN_ROWS) {
    *mixed_len = mb_xdmf_mixed_length(m);
    *triangles = mb_mesh_is_triangles(m);
    *big = mb_xdmf_fan_count(m) > 0;
    return;
  }
  int64_t len = 0, ntri = 0;
  int other = 0, large = 0;
#pragma omp parallel for schedule(static) reduction(+ : len, ntri) reduction(| : other, large)
  for (int64_t f = 0; f < nf; f++) {
    const int64_t n = m->face_offsets[f + 1] - m->face_offsets[f];
    len += (n == 3 || n == 4) ? 1 + n : 2 + n;
    ntri += n - 2;
    other |= n != 3;
    large |= n >= 5;
  }
  *mixed_len = len;
  *triangles = !other;
  *big = large && ntri > 0;
}
