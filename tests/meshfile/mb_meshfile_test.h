/* Helpers shared by the meshfile tests: scratch files, byte buffers for
 * binary PLY, and read-expecting-success / read-expecting-error wrappers. */
#ifndef MB_MESHFILE_TEST_H
#define MB_MESHFILE_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_meshfile.h"
#include "mb_testutil.h"

/* A scratch path for name in this test's folder (static buffer rotation). */
static inline const char *mft_path(const char *name) {
  static char bufs[4][1024];
  static int k;
  k = (k + 1) % 4;
  return mb_test_tmp_path(name, bufs[k], sizeof bufs[k]);
}

/* Write text to scratch file name; return its path. */
static inline const char *mft_text(const char *name, const char *text) {
  const char *p = mft_path(name);
  mb_test_write_file(p, text);
  return p;
}

/* A growing byte buffer for binary file contents. */
typedef struct mft_bytes {
  unsigned char data[1 << 16];
  size_t n;
  int big; /* store multi-byte values big-endian */
} mft_bytes;

/* Append raw text (a PLY header). */
static inline void mft_put_text(mft_bytes *b, const char *s) {
  size_t n = strlen(s);
  assert_true(b->n + n <= sizeof b->data);
  memcpy(b->data + b->n, s, n);
  b->n += n;
}

/* Append the low `size` bytes of v in the buffer's byte order. */
static inline void mft_put(mft_bytes *b, uint64_t v, int size) {
  assert_true(b->n + (size_t)size <= sizeof b->data);
  for (int k = 0; k < size; k++) {
    int shift = 8 * (b->big ? size - 1 - k : k);
    b->data[b->n++] = (unsigned char)(v >> shift);
  }
}

static inline void mft_put_f32(mft_bytes *b, float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  mft_put(b, u, 4);
}

static inline void mft_put_f64(mft_bytes *b, double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  mft_put(b, u, 8);
}

/* Write the first n bytes of b to scratch file name; return its path. */
static inline const char *mft_write_bytes(const char *name, const mft_bytes *b, size_t n) {
  const char *p = mft_path(name);
  FILE *f = fopen(p, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(b->data, 1, n, f), n);
  fclose(f);
  return p;
}

/* Read path, which must succeed. */
static inline mb_mesh *mft_read(const char *path) {
  mb_mesh *m = NULL;
  mb_error e = mb_meshfile_read(path, &m);
  if (e != MB_SUCCESS) fail_msg("reading %s failed: %s", path, mb_error_message());
  assert_non_null(m);
  return m;
}

/* Read path, which must fail with code and a message holding each needle
 * (a NULL-terminated list). */
static inline void mft_read_fails(const char *path, mb_error code, const char *needle, ...) {
  mb_mesh *m = (mb_mesh *)0x1;
  mb_error_clear();
  mb_error e = mb_meshfile_read(path, &m);
  if (e != code)
    fail_msg("reading %s: expected error %d, got %d (%s)", path, (int)code, (int)e,
             mb_error_message());
  assert_null(m);
  va_list ap;
  va_start(ap, needle);
  for (const char *s = needle; s; s = va_arg(ap, const char *)) mb_test_assert_message_contains(s);
  va_end(ap);
}

/* Assert the face f of m is the polygon given by n 0-based indices. */
static inline void mft_assert_face(const mb_mesh *m, int64_t f, int n, const int64_t *idx) {
  assert_true(f < m->nf);
  assert_int_equal(m->face_offsets[f + 1] - m->face_offsets[f], n);
  for (int k = 0; k < n; k++) assert_int_equal(m->face_indices[m->face_offsets[f] + k], idx[k]);
}

/* Assert vertex i of m has exactly the coordinates x, y, z. */
static inline void mft_assert_vertex(const mb_mesh *m, int64_t i, double x, double y, double z) {
  assert_true(i < m->nv);
  const double *p = m->xyz + 3 * i;
  if (p[0] != x || p[1] != y || p[2] != z)
    fail_msg("vertex %lld is (%.17g %.17g %.17g), expected (%.17g %.17g %.17g)", (long long)i,
             p[0], p[1], p[2], x, y, z);
}

#endif
