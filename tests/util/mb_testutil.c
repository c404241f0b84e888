/* meshbatch test helpers (see mb_testutil.h). */
#include "mb_testutil.h"
#include "mb_meshfile.h"

#include <dirent.h>
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

double mb_test_urand(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (double)(z >> 11) / 9007199254740992.0;
}

int mb_test_file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

int mb_test_count_tmp_files(void) {
  char dir[1024];
  mb_test_tmp_path("", dir, sizeof dir);
  DIR *d = opendir(dir);
  assert_non_null(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (strstr(e->d_name, ".tmp-")) n++;
  closedir(d);
  return n;
}

void mb_test_assert_same_geometry(const mb_mesh *a, const mb_mesh *b) {
  assert_int_equal(a->nv, b->nv);
  assert_int_equal(a->nf, b->nf);
  assert_memory_equal(a->xyz, b->xyz, sizeof(double) * 3 * (size_t)a->nv);
  assert_memory_equal(a->face_offsets, b->face_offsets, sizeof(int64_t) * ((size_t)a->nf + 1));
  assert_memory_equal(a->face_indices, b->face_indices,
                      sizeof(int64_t) * (size_t)a->face_offsets[a->nf]);
}

void mb_test_assert_same_mesh(const mb_mesh *a, const mb_mesh *b) {
  assert_string_equal(a->name, b->name);
  assert_int_equal(a->kind, b->kind);
  mb_test_assert_same_geometry(a, b);
  assert_int_equal(a->nfields, b->nfields);
  for (int f = 0; f < a->nfields; f++) {
    assert_string_equal(a->fields[f].name, b->fields[f].name);
    assert_int_equal(a->fields[f].ncomp, b->fields[f].ncomp);
    assert_memory_equal(a->fields[f].data, b->fields[f].data,
                        sizeof(double) * (size_t)a->nv * (size_t)a->fields[f].ncomp);
  }
  assert_int_equal(a->nface_fields, b->nface_fields);
  for (int f = 0; f < a->nface_fields; f++) {
    assert_string_equal(a->face_fields[f].name, b->face_fields[f].name);
    assert_int_equal(a->face_fields[f].ncomp, b->face_fields[f].ncomp);
    assert_memory_equal(a->face_fields[f].data, b->face_fields[f].data,
                        sizeof(double) * (size_t)a->nf * (size_t)a->face_fields[f].ncomp);
  }
  assert_int_equal(a->attrs.n, b->attrs.n);
  for (int i = 0; i < a->attrs.n; i++) {
    assert_string_equal(a->attrs.keys[i], b->attrs.keys[i]);
    assert_string_equal(a->attrs.values[i], b->attrs.values[i]);
  }
}

void mb_test_read_repo_mesh(const char *name, mb_mesh **mesh, mb_adjacency **adj) {
  const char *src = getenv("MESHBATCH_SOURCE_DIR");
  assert_non_null(src);
  char path[4096];
  snprintf(path, sizeof path, "%s/data/meshes/%s", src, name);
  *mesh = NULL;
  assert_int_equal(mb_meshfile_read(path, mesh), MB_SUCCESS);
  if (adj) {
    *adj = NULL;
    assert_int_equal(mb_adjacency_build(*mesh, adj), MB_SUCCESS);
  }
}
