/* meshbatch test helpers (see mb_testutil.h). */
#include "mb_testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *mb_test_data_path(const char *rel, char *buf, size_t len) {
  const char *dir = getenv("MESHBATCH_DATA_DIR");
  if (!dir || !*dir) return NULL;
  snprintf(buf, len, "%s/%s", dir, rel);
  struct stat st;
  return stat(buf, &st) == 0 ? buf : NULL;
}

const char *mb_test_tmp_path(const char *name, char *buf, size_t len) {
  const char *dir = getenv("MESHBATCH_TEST_TMP");
  snprintf(buf, len, "%s/%s", dir && *dir ? dir : "/tmp", name);
  return buf;
}

void mb_test_write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

mb_mesh *mb_test_mesh_triangles(const char *name, int64_t nv, const double *xyz, int64_t nf,
                                const int64_t *tri) {
  mb_mesh *m = NULL;
  assert_int_equal(mb_mesh_create(name, nv, nf, 3 * nf, &m), MB_SUCCESS);
  memcpy(m->xyz, xyz, sizeof(double) * 3 * (size_t)nv);
  for (int64_t f = 0; f <= nf; f++) m->face_offsets[f] = 3 * f;
  memcpy(m->face_indices, tri, sizeof(int64_t) * 3 * (size_t)nf);
  return m;
}

void mb_test_assert_message_contains(const char *needle) {
  const char *msg = mb_error_message();
  if (!strstr(msg, needle)) fail_msg("error message '%s' lacks '%s'", msg, needle);
}
