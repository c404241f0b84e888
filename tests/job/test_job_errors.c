/* Job files that fail: every error checks the code and the whole
 * "FILE:LINE: KEY: problem" message. */
#include <stdio.h>
#include <string.h>

#include "mb_job.h"
#include "mb_testutil.h"

/* The head of a valid job; tests append stage text (the first stage starts on line 4). */
#define HEAD "input: in.obj\noutput: out.h5\nstages:\n"

/* Write text to a scratch file, load it, expect code and a message that
 * contains "PATH" followed by suffix. */
static void expect_error(const char *name, const char *text, mb_error code,
                         const char *suffix) {
  char path[1024], want[2048];
  mb_test_tmp_path(name, path, sizeof path);
  mb_test_write_file(path, text);
  mb_job *job = (mb_job *)1;
  mb_error err = mb_job_load(path, &job);
  assert_null(job);
  if (err != code)
    fail_msg("%s: got %s (%s), wanted %s", name, mb_error_name(err), mb_error_message(),
             mb_error_name(code));
  snprintf(want, sizeof want, "%s%s", path, suffix);
  mb_test_assert_message_contains(want);
}

static void test_unknown_keys(void **state) {
  (void)state;
  expect_error("unknown_top.yaml", "input: a\n\n# typo below\nouput: b\nstages: []\n",
               MB_ERR_JOB, ":4: unknown key 'ouput'");
  expect_error("unknown_stage.yaml",
               HEAD "  - op: taubin\n    iterations: 1\n  - op: taubin\n    itrations: 2\n",
               MB_ERR_JOB, ":7: stages[1]: unknown key 'itrations'");
  mb_test_assert_message_contains("valid keys: op, lambda, mu, iterations, weights, boundary");
}

static void test_wrong_types(void **state) {
  (void)state;
  expect_error("type_stages.yaml", "input: a\noutput: b\nstages: 5\n", MB_ERR_JOB,
               ":3: stages: expected a list, got a single value");
  expect_error("type_stage.yaml", HEAD "  - taubin\n", MB_ERR_JOB,
               ":4: stages[0]: expected a mapping, got a single value");
  expect_error("type_lambda_list.yaml", HEAD "  - op: taubin\n    lambda: [1]\n    iterations: 1\n",
               MB_ERR_JOB, ":5: stages[0].lambda: expected a number, got a list");
  expect_error("type_lambda_text.yaml",
               HEAD "  - op: taubin\n    iterations: 1\n    lambda: half\n", MB_ERR_JOB,
               ":6: stages[0].lambda: 'half' is not a number");
  expect_error("type_output.yaml",
               "input: a\noutput:\n  - b\nstages:\n  - {op: taubin, iterations: 1}\n",
               MB_ERR_JOB, ":2: output: expected a string, got a list");
  expect_error("type_input.yaml",
               "input:\n  path: a\noutput: b\nstages:\n  - {op: taubin, iterations: 1}\n",
               MB_ERR_JOB, ":1: input: expected a string or a list of strings, got a mapping");
  expect_error("type_input_entry.yaml",
               "input:\n  - a\n  - [b]\noutput: b\nstages:\n  - {op: taubin, iterations: 1}\n",
               MB_ERR_JOB, ":3: input[1]: expected a string, got a list");
  expect_error("type_root.yaml", "- input: a\n", MB_ERR_JOB, ":1: a job file is a mapping");
  expect_error("type_iter_float.yaml", HEAD "  - op: taubin\n    iterations: 3.5\n", MB_ERR_JOB,
               ":5: stages[0].iterations: '3.5' is not an integer");
  expect_error("type_iter_hex.yaml", HEAD "  - op: taubin\n    iterations: 0x10\n", MB_ERR_JOB,
               ":5: stages[0].iterations: '0x10' is not an integer");
}

static void test_bad_enums(void **state) {
  (void)state;
  expect_error("enum_backend.yaml",
               "input: a\noutput: b\n\n\nbackend: gpu\nstages:\n  - {op: taubin, iterations: 1}\n",
               MB_ERR_JOB, ":5: backend: 'gpu' is not one of auto, cpu, cuda");
  expect_error("enum_distribute.yaml",
               "input: a\noutput: b\ndistribute: per_mesh\nstages:\n  - {op: taubin, iterations: 1}\n",
               MB_ERR_JOB, ":3: distribute: 'per_mesh' is not one of per-mesh, partitioned");
  expect_error("enum_partitioner.yaml",
               "input: a\noutput: b\npartitioner: scotch\nstages:\n  - {op: taubin, iterations: 1}\n",
               MB_ERR_JOB, ":3: partitioner: 'scotch' is not one of metis, parmetis");
  expect_error("enum_halo.yaml",
               "input: a\noutput: b\nhalo: ucx\nstages:\n  - {op: taubin, iterations: 1}\n",
               MB_ERR_JOB, ":3: halo: 'ucx' is not one of auto, mpi, nccl, ipc");
  expect_error("partitioner_and_file.yaml",
               "input: a\noutput: b\npartition: p.h5\npartitioner: parmetis\nstages:\n"
               "  - {op: taubin, iterations: 1}\n",
               MB_ERR_JOB, ":4: partitioner: parmetis computes the partition in parallel");
  expect_error("enum_op.yaml", HEAD "  - op: bilateral\n    iterations: 1\n", MB_ERR_JOB,
               ":4: stages[0].op: 'bilateral' is not one of taubin, laplacian");
  expect_error("enum_weights.yaml",
               HEAD "  - op: taubin\n    iterations: 1\n    weights: cotan\n", MB_ERR_JOB,
               ":6: stages[0].weights: 'cotan' is not one of uniform, cotangent, inverse_distance");
  expect_error("enum_boundary.yaml",
               HEAD "  - op: taubin\n    iterations: 1\n    boundary: curve\n", MB_ERR_JOB,
               ":6: stages[0].boundary: 'curve' is not one of free, fixed, boundary_curve");
  expect_error("enum_precision.yaml",
               "input: a\noutput: b\nprecision: double\nstages:\n  - {op: taubin, iterations: 1}\n",
               MB_ERR_JOB, ":3: precision: 'double' is not one of float64, float32");
}

static void test_ranges(void **state) {
  (void)state;
  expect_error("range_iter.yaml",
               HEAD "  - op: taubin\n    lambda: 0.5\n    iterations: -3\n", MB_ERR_JOB,
               ":6: stages[0].iterations: value -3 out of range [0, 100000000]");
  expect_error("range_iter_big.yaml", HEAD "  - op: taubin\n    iterations: 100000001\n",
               MB_ERR_JOB, ":5: stages[0].iterations: value 100000001 out of range [0, 100000000]");
  expect_error("range_iter_huge.yaml", HEAD "  - op: taubin\n    iterations: 99999999999999999999\n",
               MB_ERR_JOB, ":5: stages[0].iterations: '99999999999999999999' is not an integer in range");
  expect_error("range_lambda0.yaml", HEAD "  - op: laplacian\n    lambda: 0\n    iterations: 1\n",
               MB_ERR_JOB, ":5: stages[0].lambda: value 0 out of range (0, 1]");
  expect_error("range_lambda.yaml", HEAD "  - op: laplacian\n    lambda: 1.5\n    iterations: 1\n",
               MB_ERR_JOB, ":5: stages[0].lambda: value 1.5 out of range (0, 1]");
  expect_error("range_lambda_nan.yaml", HEAD "  - op: laplacian\n    lambda: .nan\n    iterations: 1\n",
               MB_ERR_JOB, ":5: stages[0].lambda: ");
  expect_error("range_mu_pos.yaml", HEAD "  - op: taubin\n    mu: 0.53\n    iterations: 1\n",
               MB_ERR_JOB, ":5: stages[0].mu: value 0.53 out of range [-1, 0)");
  expect_error("range_mu_low.yaml", HEAD "  - op: taubin\n    mu: -1.5\n    iterations: 1\n",
               MB_ERR_JOB, ":5: stages[0].mu: value -1.5 out of range [-1, 0)");
  expect_error("range_mu_lambda.yaml",
               HEAD "  - op: taubin\n    lambda: 0.5\n    mu: -0.4\n    iterations: 1\n", MB_ERR_JOB,
               ":6: stages[0].mu: value -0.4 must be below -lambda = -0.5");
  expect_error("range_lambda_default_mu.yaml",
               HEAD "  - op: taubin\n    iterations: 1\n    lambda: 0.6\n", MB_ERR_JOB,
               ":6: stages[0].lambda: value 0.6 needs mu < -0.6");
  expect_error("range_mu_laplacian.yaml",
               HEAD "  - op: taubin\n    iterations: 1\n  - op: laplacian\n    mu: -0.5\n    iterations: 1\n",
               MB_ERR_JOB, ":7: stages[1].mu: only taubin stages take mu");
}

/* Stages whose kinds do not fit, keys of another op, an op without a
 * partitioned form in a partitioned job. */
static void test_op_rules(void **state) {
  (void)state;
  expect_error("kinds.yaml", HEAD "  - op: taubin\n    iterations: 1\n  - op: polylla\n",
               MB_ERR_JOB, ":6: stages[1].op: polylla reads triangulation2d datasets, but the "
               "stage before it (taubin) writes surface");
  expect_error("kinds2.yaml", HEAD "  - op: polylla\n  - op: polylla\n", MB_ERR_JOB,
               ":5: stages[1].op: polylla reads triangulation2d datasets, but the stage before "
               "it (polylla) writes polygons2d");
  expect_error("other_op_key.yaml", HEAD "  - op: polylla\n    iterations: 3\n", MB_ERR_JOB,
               ":5: stages[0].iterations: only taubin stages take iterations (this stage is "
               "polylla; its keys: op, ties)");
  /* (every op runs partitioned today, so "runs per mesh only" has no case) */
  expect_error("bad_ties.yaml", HEAD "  - op: polylla\n    ties: middle\n", MB_ERR_JOB,
               ":5: stages[0].ties: 'middle' is not one of key, corners");
}

static void test_missing_keys(void **state) {
  (void)state;
  expect_error("missing_output.yaml", "input: a\nstages:\n  - {op: taubin, iterations: 1}\n",
               MB_ERR_JOB, ": missing required key 'output'");
  expect_error("missing_input.yaml", "output: a\nstages:\n  - {op: taubin, iterations: 1}\n",
               MB_ERR_JOB, ": missing required key 'input'");
  expect_error("missing_stages.yaml", "input: a\noutput: b\n", MB_ERR_JOB,
               ": missing required key 'stages'");
  expect_error("missing_iterations.yaml",
               HEAD "  - op: taubin\n    iterations: 1\n  - op: taubin\n    lambda: 0.3\n",
               MB_ERR_JOB, ":6: stages[1]: missing required key 'iterations'");
  expect_error("missing_op.yaml", HEAD "  - iterations: 4\n", MB_ERR_JOB,
               ":4: stages[0]: missing required key 'op'");
  expect_error("empty_stages.yaml", "input: a\noutput: b\nstages: []\n", MB_ERR_JOB,
               ":3: stages: at least one stage is required");
  expect_error("empty_input_list.yaml",
               "input: []\noutput: b\nstages:\n  - {op: taubin, iterations: 1}\n", MB_ERR_JOB,
               ":1: input: at least one entry is required");
  expect_error("empty_input.yaml",
               "input: \"\"\noutput: b\nstages:\n  - {op: taubin, iterations: 1}\n", MB_ERR_JOB,
               ":1: input: must not be empty");
  expect_error("null_output.yaml",
               "input: a\noutput: ~\nstages:\n  - {op: taubin, iterations: 1}\n", MB_ERR_JOB,
               ":2: output: must not be empty");
  expect_error("null_input_entry.yaml",
               "input: [a, null]\noutput: b\nstages:\n  - {op: taubin, iterations: 1}\n",
               MB_ERR_JOB, ":1: input[1]: must not be empty");
  expect_error("empty_file.yaml", "# nothing here\n", MB_ERR_JOB,
               ": the job file is empty (missing required key 'input')");
}

static void test_yaml_errors(void **state) {
  (void)state;
  expect_error("syntax.yaml", HEAD "  - op: taubin\n   iterations: [3\n", MB_ERR_JOB,
               ":5: YAML syntax error: ");
  expect_error("syntax_tab.yaml", "input: a\noutput: b\nstages:\n\t- op: taubin\n", MB_ERR_JOB,
               ":4: YAML syntax error: ");
  expect_error("duplicate.yaml", "input: a\noutput: b\ninput: c\nstages: []\n", MB_ERR_JOB,
               ":3: input: duplicate key (first given on line 1)");
  expect_error("two_docs.yaml", HEAD "  - {op: taubin, iterations: 1}\n---\ninput: x\n",
               MB_ERR_JOB, ":5: a job file holds one YAML document");
  expect_error("alias.yaml", "input: &p a.obj\noutput: *p\nstages: []\n", MB_ERR_JOB,
               ":2: YAML aliases (*p) are not supported");
}

static void test_missing_file(void **state) {
  (void)state;
  char path[1024];
  mb_test_tmp_path("no_such_job.yaml", path, sizeof path);
  mb_job *job = (mb_job *)1;
  assert_int_equal(mb_job_load(path, &job), MB_ERR_IO);
  assert_null(job);
  mb_test_assert_message_contains(path);
  mb_test_assert_message_contains("cannot open job file");
  mb_test_tmp_path("", path, sizeof path);  /* a folder */
  assert_int_equal(mb_job_load(path, &job), MB_ERR_IO);
  assert_int_equal(mb_job_load(NULL, &job), MB_ERR_ARG);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unknown_keys), cmocka_unit_test(test_wrong_types),
      cmocka_unit_test(test_bad_enums),    cmocka_unit_test(test_ranges),
      cmocka_unit_test(test_missing_keys), cmocka_unit_test(test_yaml_errors),
      cmocka_unit_test(test_op_rules),
      cmocka_unit_test(test_missing_file),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
