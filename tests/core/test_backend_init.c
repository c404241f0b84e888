/* meshbatch test: the device's initialisation on its own thread
 * (mb_backend_choose_begin / mb_backend_choose_end, src/core/mb_backend.h):
 * cpu resolved at once; cuda without a device (this build or machine) fails
 * at the end with the message mb_backend_choose gives; with a device, the
 * end gives the device and its name; MESHBATCH_DEVICE_INIT=sync resolves at
 * the begin; a dropped result sets no error. */
#include "mb_testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_backend.h"
#include "mb_cuda.h"

static void test_cpu_at_once(void **state) {
  (void)state;
  mb_backend b;
  memset(&b, 0x5a, sizeof b);
  mb_backend_init *in = (mb_backend_init *)&b; /* overwritten: NULL */
  char why[600] = "";
  assert_int_equal(mb_backend_choose_begin(MB_BACKEND_CPU, 0, &b, why, sizeof why, &in),
                   MB_SUCCESS);
  assert_null(in);
  assert_int_equal(b.kind, MB_BACKEND_CPU);
  assert_int_equal(b.device, -1);
  assert_non_null(strstr(b.description, "cpu"));
  double init_s = -1, wait_s = -1;
  assert_int_equal(mb_backend_choose_end(NULL, &b, why, sizeof why, &init_s, &wait_s),
                   MB_SUCCESS);
  assert_true(init_s == 0 && wait_s == 0);
  assert_int_equal(b.kind, MB_BACKEND_CPU);
}

/* cuda: the error (no device) or the device, as mb_backend_choose gives them. */
static void check_cuda(int sync) {
  char none[512] = "";
  const int n = mb_cuda_device_count(none, sizeof none);
  mb_backend b;
  memset(&b, 0, sizeof b);
  mb_backend_init *in = NULL;
  char why[600] = "";
  mb_error e = mb_backend_choose_begin(MB_BACKEND_CUDA, 0, &b, why, sizeof why, &in);
  const int threaded = mb_cuda_compiled() && !sync;
  printf("cuda, %s, %d device(s): begin %d, handle %s\n", sync ? "sync" : "thread", n, (int)e,
         in ? "yes" : "none");
  if (threaded) { /* nothing resolved yet */
    assert_int_equal(e, MB_SUCCESS);
    assert_non_null(in);
    assert_int_equal(b.kind, MB_BACKEND_CUDA);
    assert_int_equal(b.device, -1);
  } else {
    assert_null(in);
  }
  double init_s = 0, wait_s = 0; /* the end sets both; a begin that failed leaves them */
  if (!e) e = mb_backend_choose_end(in, &b, why, sizeof why, &init_s, &wait_s);
  if (n == 0) {
    assert_int_equal(e, MB_ERR_UNSUPPORTED);
    printf("  error: %s\n", mb_error_message());
    assert_non_null(strstr(mb_error_message(), "no CUDA device can be used"));
  } else {
    assert_int_equal(e, MB_SUCCESS);
    assert_int_equal(b.kind, MB_BACKEND_CUDA);
    assert_true(b.device >= 0 && b.device < n);
    assert_non_null(strstr(b.description, "cuda device"));
    printf("  %s: %s (initialised in %.3f s, waited %.3f s)\n", b.description, why, init_s,
           wait_s);
  }
  assert_true(init_s >= 0 && wait_s >= 0);
  if (!threaded) assert_true(init_s == 0 && wait_s == 0);
}

static void test_cuda_on_thread(void **state) {
  (void)state;
  unsetenv("MESHBATCH_DEVICE_INIT");
  check_cuda(0);
}

static void test_cuda_sync(void **state) {
  (void)state;
  setenv("MESHBATCH_DEVICE_INIT", "sync", 1);
  check_cuda(1);
  unsetenv("MESHBATCH_DEVICE_INIT");
}

/* A run that failed before it needed the device drops the result: the
 * error it reports stays the one it had. */
static void test_dropped_keeps_the_error(void **state) {
  (void)state;
  unsetenv("MESHBATCH_DEVICE_INIT");
  mb_backend b;
  mb_backend_init *in = NULL;
  char why[600];
  if (mb_backend_choose_begin(MB_BACKEND_CUDA, 0, &b, why, sizeof why, &in) != MB_SUCCESS ||
      !in) {
    printf("no thread here (a build without CUDA): nothing to drop\n");
    skip();
  }
  mb_error_set(MB_ERR_IO, __FILE__, __LINE__, __func__, "the run's own error");
  assert_int_equal(mb_backend_choose_end(in, NULL, NULL, 0, NULL, NULL), MB_SUCCESS);
  assert_int_equal(mb_error_code(), MB_ERR_IO);
  assert_string_equal(mb_error_message(), "the run's own error");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cpu_at_once),
      cmocka_unit_test(test_cuda_on_thread),
      cmocka_unit_test(test_cuda_sync),
      cmocka_unit_test(test_dropped_keeps_the_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
