/* meshbatch test helpers shared by all cmocka tests. */
#ifndef MB_TESTUTIL_H
#define MB_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "mb_adjacency.h"
#include "mb_mesh.h"

/* Exit code that CTest reads as "skipped". */
#define MB_TEST_SKIP 77

/* Path of a file in ../shared/data (e.g. "meshes/spot.obj") in buf, or NULL
 * if the data folder is absent (the caller then skips). */
const char *mb_test_data_path(const char *rel, char *buf, size_t len);

/* Read data/meshes/NAME of the source tree (MESHBATCH_SOURCE_DIR: the small
 * meshes kept in the repository, e.g. "spot.obj") into *mesh and, where adj
 * is not NULL, build its adjacency into *adj; asserts each step. The caller
 * frees both. */
void mb_test_read_repo_mesh(const char *name, mb_mesh **mesh, mb_adjacency **adj);

/* A scratch path "MESHBATCH_TEST_TMP/name" (or /tmp/...) in buf. */
const char *mb_test_tmp_path(const char *name, char *buf, size_t len);

/* Write text to a file (for malformed-input tests). */
void mb_test_write_file(const char *path, const char *text);

/* Build a mesh from arrays: xyz [nv,3], triangles tri [nf,3]. */
mb_mesh *mb_test_mesh_triangles(const char *name, int64_t nv, const double *xyz, int64_t nf,
                                const int64_t *tri);

/* Assert that the last error message contains `needle`. */
void mb_test_assert_message_contains(const char *needle);

/* The next number of the splitmix64 sequence of *state (Steele, Lea &
 * Flood, OOPSLA 2014), in [0, 1) with 53 random bits: a test's own
 * reproducible random inputs. Not thread-safe for a shared state. */
double mb_test_urand(uint64_t *state);

/* 1 if path exists. */
int mb_test_file_exists(const char *path);

/* Entries of the test folder whose name contains ".tmp-" (left-over
 * temporary files of an interrupted write). */
int mb_test_count_tmp_files(void);

/* Assert a and b hold identical geometry and faces (bitwise). */
void mb_test_assert_same_geometry(const mb_mesh *a, const mb_mesh *b);

/* Assert a and b are the same mesh: name, geometry, faces, fields and
 * attributes, bitwise. */
void mb_test_assert_same_mesh(const mb_mesh *a, const mb_mesh *b);

#endif
