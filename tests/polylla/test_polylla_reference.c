/* placeholder, filled below */
#include "mb_testutil.h"
#include "polylla_check.h"
static void test_none(void **state) { (void)state; assert_true(1); }
int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_none)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
