/* meshbatch test: per-face fields of a mesh (src/core/mb_mesh.h): the copy
 * (mb_mesh_set_face_field) and the take (mb_mesh_take_face_field: the
 * mesh keeps the caller's array itself, replaces a field of the same
 * name, and frees the array on a refusal). Leaks and double frees show
 * under the sanitizer build. */
#include "mb_testutil.h"

#include <stdlib.h>
#include <string.h>

#include "mb_mesh.h"

static void test_take_keeps_the_array(void **state) {
  (void)state;
  mb_mesh *m = NULL;
  assert_int_equal(mb_mesh_create("fields", 0, 4, 4, &m), MB_SUCCESS);
  const double copied[4] = {1, 2, 3, 4};
  assert_int_equal(mb_mesh_set_face_field(m, "vertex_count", 1, copied), MB_SUCCESS);
  assert_true(m->face_fields[0].data != copied);
  double *mine = malloc(4 * sizeof *mine);
  assert_non_null(mine);
  for (int i = 0; i < 4; i++) mine[i] = 10 + i;
  /* the same name: replaced (the copy freed), the array itself kept */
  assert_int_equal(mb_mesh_take_face_field(m, "vertex_count", 1, mine), MB_SUCCESS);
  assert_int_equal(m->nface_fields, 1);
  assert_ptr_equal(m->face_fields[0].data, mine);
  assert_int_equal(m->face_fields[0].ncomp, 1);
  double *two = malloc(8 * sizeof *two);
  assert_non_null(two);
  memset(two, 0, 8 * sizeof *two);
  assert_int_equal(mb_mesh_take_face_field(m, "normal2", 2, two), MB_SUCCESS);
  assert_int_equal(m->nface_fields, 2);
  assert_ptr_equal(m->face_fields[1].data, two);
  /* refused: the array is freed all the same (the sanitizer sees a leak otherwise) */
  double *bad = malloc(4 * sizeof *bad);
  assert_non_null(bad);
  assert_int_equal(mb_mesh_take_face_field(m, "bad", 0, bad), MB_ERR_ARG);
  assert_int_equal(mb_mesh_take_face_field(m, NULL, 1, malloc(sizeof(double))), MB_ERR_ARG);
  assert_int_equal(m->nface_fields, 2);
  mb_mesh_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_take_keeps_the_array)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
