/* Job files that load: values, defaults, input lists, relative paths, the
 * example files in jobs/, the enum names and mb_smooth_passes. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mb_halo.h"
#include "mb_job.h"
#include "mb_smooth.h"
#include "mb_testutil.h"

/* The smoothing parameters of stage s (taubin and laplacian ops). */
#define SM(job, s) ((const mb_smooth_stage *)(job)->stages[s].params)

static mb_job *load_text(const char *name, const char *text, char *path, size_t len) {
  mb_test_tmp_path(name, path, len);
  mb_test_write_file(path, text);
  mb_job *job = NULL;
  mb_error err = mb_job_load(path, &job);
  if (err != MB_SUCCESS) fail_msg("%s: %s", path, mb_error_message());
  assert_non_null(job);
  return job;
}

/* The dirname of path followed by "/rel". */
static void beside(const char *path, const char *rel, char *buf, size_t len) {
  const char *slash = strrchr(path, '/');
  snprintf(buf, len, "%.*s/%s", (int)(slash - path), path, rel);
}

static void test_full_example(void **state) {
  (void)state;
  char path[1024], want[1200];
  mb_job *job = load_text("full.yaml",
                          "# a full job\n"
                          "input: meshes/*.obj\n"
                          "output: out/smoothed.h5\n"
                          "distribute: partitioned\n"
                          "schedule: dynamic\n"
                          "backend: cuda\n"
                          "precision: float32\n"
                          "stages:\n"
                          "  - op: taubin\n"
                          "    lambda: 0.6\n"
                          "    mu: -0.65\n"
                          "    iterations: 100\n"
                          "    weights: cotangent\n"
                          "    boundary: boundary_curve\n"
                          "  - op: laplacian\n"
                          "    lambda: 0.25\n"
                          "    iterations: 0\n"
                          "    weights: inverse_distance\n"
                          "    boundary: fixed\n",
                          path, sizeof path);
  assert_string_equal(job->path, path);
  assert_int_equal(job->ninputs, 1);
  beside(path, "meshes/*.obj", want, sizeof want);
  assert_string_equal(job->inputs[0], want);
  beside(path, "out/smoothed.h5", want, sizeof want);
  assert_string_equal(job->output, want);
  assert_int_equal(job->distribute, MB_DISTRIBUTE_PARTITIONED);
  assert_int_equal(job->schedule, MB_SCHEDULE_DYNAMIC);
  assert_int_equal(job->backend, MB_BACKEND_CUDA);
  assert_int_equal(job->precision, MB_PRECISION_FLOAT32);
  assert_int_equal(job->nstages, 2);
  const mb_smooth_stage *t = SM(job, 0), *l = SM(job, 1);
  assert_string_equal(job->stages[0].op->name, "taubin");
  assert_string_equal(job->stages[1].op->name, "laplacian");
  assert_int_equal(t->method, MB_SMOOTH_TAUBIN);
  assert_true(t->lambda == 0.6 && t->mu == -0.65);
  assert_int_equal(t->iterations, 100);
  assert_int_equal(t->weights, MB_WEIGHTS_COTANGENT);
  assert_int_equal(t->boundary, MB_BOUNDARY_CURVE);
  assert_int_equal(l->method, MB_SMOOTH_LAPLACIAN);
  assert_true(l->lambda == 0.25);
  assert_int_equal(l->iterations, 0);
  assert_int_equal(l->weights, MB_WEIGHTS_INVERSE_DISTANCE);
  assert_int_equal(l->boundary, MB_BOUNDARY_FIXED);
  mb_job_free(job);
}

static void test_defaults(void **state) {
  (void)state;
  char path[1024];
  mb_job *job = load_text("defaults.yaml",
                          "input: /abs/in.h5\noutput: /abs/out.h5\n"
                          "stages:\n  - op: taubin\n    iterations: 7\n"
                          "  - {op: laplacian, iterations: 3}\n",
                          path, sizeof path);
  assert_string_equal(job->inputs[0], "/abs/in.h5");
  assert_string_equal(job->output, "/abs/out.h5");
  assert_int_equal(job->distribute, MB_DISTRIBUTE_PER_MESH);
  assert_int_equal(job->schedule, MB_SCHEDULE_STATIC);
  assert_int_equal(job->backend, MB_BACKEND_AUTO);
  assert_int_equal(job->precision, MB_PRECISION_FLOAT64);
  assert_int_equal(job->nstages, 2);
  for (int s = 0; s < 2; s++) {
    assert_true(SM(job, s)->lambda == 0.5);
    assert_int_equal(SM(job, s)->weights, MB_WEIGHTS_UNIFORM);
    assert_int_equal(SM(job, s)->boundary, MB_BOUNDARY_FREE);
  }
  assert_true(SM(job, 0)->mu == -0.53);
  assert_int_equal(SM(job, 0)->iterations, 7);
  assert_int_equal(SM(job, 1)->method, MB_SMOOTH_LAPLACIAN);
  assert_int_equal(SM(job, 1)->iterations, 3);
  mb_job_free(job);
}

static void test_input_list(void **state) {
  (void)state;
  char path[1024], want[1200];
  mb_job *job = load_text("list.yaml",
                          "input:\n  - a.obj\n  - /data/b.off\n  - c/*.ply\n"
                          "output: o.h5\nstages:\n  - op: laplacian\n    iterations: 1\n",
                          path, sizeof path);
  assert_int_equal(job->ninputs, 3);
  beside(path, "a.obj", want, sizeof want);
  assert_string_equal(job->inputs[0], want);
  assert_string_equal(job->inputs[1], "/data/b.off");
  beside(path, "c/*.ply", want, sizeof want);
  assert_string_equal(job->inputs[2], want);
  mb_job_free(job);
  job = load_text("flowlist.yaml",
                  "input: [one.obj]\noutput: o.h5\nstages: [{op: taubin, iterations: 1}]\n",
                  path, sizeof path);
  assert_int_equal(job->ninputs, 1);
  beside(path, "one.obj", want, sizeof want);
  assert_string_equal(job->inputs[0], want);
  mb_job_free(job);
}

/* A job file in a sub-folder, loaded by a relative path and an absolute one. */
static void test_relative_paths(void **state) {
  (void)state;
  char dir[1024], path[1100];
  mb_test_tmp_path("sub", dir, sizeof dir);
  mkdir(dir, 0755);
  snprintf(path, sizeof path, "%s/job.yaml", dir);
  mb_test_write_file(path, "input: ../meshes/x.obj\noutput: out.h5\n"
                           "stages:\n  - op: taubin\n    iterations: 1\n");
  mb_job *job = NULL;
  assert_int_equal(mb_job_load(path, &job), MB_SUCCESS);
  char want[1200];
  snprintf(want, sizeof want, "%s/../meshes/x.obj", dir);
  assert_string_equal(job->inputs[0], want);
  snprintf(want, sizeof want, "%s/out.h5", dir);
  assert_string_equal(job->output, want);
  mb_job_free(job);

  /* From inside the folder: the bare file name keeps paths as written. */
  char cwd[1024];
  assert_non_null(getcwd(cwd, sizeof cwd));
  assert_int_equal(chdir(dir), 0);
  assert_int_equal(mb_job_load("job.yaml", &job), MB_SUCCESS);
  assert_string_equal(job->path, "job.yaml");
  assert_string_equal(job->inputs[0], "../meshes/x.obj");
  assert_string_equal(job->output, "out.h5");
  mb_job_free(job);
  assert_int_equal(chdir(".."), 0);
  assert_int_equal(mb_job_load("sub/job.yaml", &job), MB_SUCCESS);
  assert_string_equal(job->inputs[0], "sub/../meshes/x.obj");
  assert_string_equal(job->output, "sub/out.h5");
  mb_job_free(job);
  assert_int_equal(chdir(cwd), 0);
}

static void load_example(const char *rel, mb_job **job) {
  const char *src = getenv("MESHBATCH_SOURCE_DIR");
  assert_non_null(src);
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", src, rel);
  if (mb_job_load(path, job) != MB_SUCCESS) fail_msg("%s: %s", path, mb_error_message());
}

/* Every example job writes under the repository's out/ (job paths are
 * relative to the job file: ../out/...), none under jobs/out/. */
static void test_example_outputs(void **state) {
  (void)state;
  static const char *const examples[] = {"jobs/demo.yaml", "jobs/polylla.yaml",
                                         "jobs/smooth_laplacian_cotangent.yaml",
                                         "jobs/smooth_partitioned.yaml", "jobs/smooth_taubin.yaml"};
  for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++) {
    mb_job *job = NULL;
    load_example(examples[i], &job);
    if (!strstr(job->output, "/jobs/../out/"))
      fail_msg("%s writes %s, not under the repository's out/", examples[i], job->output);
    mb_job_free(job);
  }
}

static void test_example_files(void **state) {
  (void)state;
  mb_job *job = NULL;
  load_example("jobs/smooth_taubin.yaml", &job);
  assert_true(job->nstages >= 1);
  assert_int_equal(SM(job, 0)->method, MB_SMOOTH_TAUBIN);
  assert_non_null(strstr(job->inputs[0], "/jobs/../data/meshes/"));
  mb_job_free(job);
  load_example("jobs/smooth_laplacian_cotangent.yaml", &job);
  assert_true(job->nstages >= 1);
  assert_int_equal(SM(job, 0)->method, MB_SMOOTH_LAPLACIAN);
  assert_int_equal(SM(job, 0)->weights, MB_WEIGHTS_COTANGENT);
  assert_int_equal(job->ninputs, 2);
  assert_int_equal(job->schedule, MB_SCHEDULE_DYNAMIC);
  assert_int_equal(job->nstages, 2);
  assert_true(SM(job, 1)->lambda == 0.5 && SM(job, 1)->mu == -0.53);
  mb_job_free(job);
  load_example("jobs/polylla.yaml", &job);
  assert_int_equal(job->nstages, 1);
  assert_string_equal(job->stages[0].op->name, "polylla");
  assert_int_equal(job->stages[0].op->in, MB_KIND_TRIANGULATION2D);
  assert_int_equal(job->stages[0].op->out, MB_KIND_POLYGONS2D);
  mb_job_free(job);
  load_example("jobs/demo.yaml", &job);
  mb_job_free(job);
}

/* Every name written by mb_*_name loads back as the same value. */
static void test_names_round_trip(void **state) {
  (void)state;
  char path[1024], text[1024];
  for (int v = 0; v < 3; v++) {
    snprintf(text, sizeof text,
             "input: a\noutput: b\ndistribute: %s\nschedule: %s\nbackend: %s\nprecision: %s\n"
             "stages:\n  - op: %s\n    iterations: 1\n    weights: %s\n    boundary: %s\n",
             mb_distribute_name((mb_distribute)(v % 2)), v % 2 ? "dynamic" : "static",
             mb_backend_kind_name((mb_backend_kind)v), mb_precision_name((mb_precision)(v % 2)),
             mb_smooth_method_name((mb_smooth_method)(v % 2)), mb_weights_name((mb_weights)v),
             mb_boundary_name((mb_boundary)v));
    mb_job *job = load_text("names.yaml", text, path, sizeof path);
    assert_int_equal(job->distribute, v % 2);
    assert_int_equal(job->schedule, v % 2);
    assert_int_equal(job->backend, v);
    assert_int_equal(job->precision, v % 2);
    assert_int_equal(SM(job, 0)->method, v % 2);
    assert_int_equal(SM(job, 0)->weights, v);
    assert_int_equal(SM(job, 0)->boundary, v);
    mb_job_free(job);
  }
  assert_string_equal(mb_smooth_method_name(MB_SMOOTH_TAUBIN), "taubin");
  assert_string_equal(mb_weights_name(MB_WEIGHTS_INVERSE_DISTANCE), "inverse_distance");
  assert_string_equal(mb_boundary_name(MB_BOUNDARY_CURVE), "boundary_curve");
  assert_string_equal(mb_precision_name(MB_PRECISION_FLOAT32), "float32");
  assert_string_equal(mb_distribute_name(MB_DISTRIBUTE_PER_MESH), "per-mesh");
  assert_string_equal(mb_backend_kind_name(MB_BACKEND_CUDA), "cuda");
  assert_string_equal(mb_weights_name((mb_weights)99), "unknown");
}

/* The job key `halo`: every transport's name (mb_halo_transport_name)
 * loads as that transport, ipc included; absent, auto. */
static void test_halo_names(void **state) {
  (void)state;
  char path[1024], text[512];
  const mb_halo_transport all[] = {MB_HALO_AUTO, MB_HALO_MPI, MB_HALO_NCCL, MB_HALO_IPC};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
    snprintf(text, sizeof text, "input: a\noutput: b\nhalo: %s\nstages: [{op: taubin, iterations: 1}]\n",
             mb_halo_transport_name(all[k]));
    mb_job *job = load_text("halo.yaml", text, path, sizeof path);
    assert_int_equal(job->halo, all[k]);
    mb_job_free(job);
  }
  assert_string_equal(mb_halo_transport_name(MB_HALO_IPC), "ipc");
}

static void test_stage_passes(void **state) {
  (void)state;
  mb_smooth_stage s = {.method = MB_SMOOTH_TAUBIN, .lambda = 0.5, .mu = -0.53, .iterations = 100};
  assert_int_equal(mb_smooth_passes(&s), 200);
  s.iterations = 100000000;
  assert_true(mb_smooth_passes(&s) == 200000000LL);
  s.method = MB_SMOOTH_LAPLACIAN;
  assert_int_equal(mb_smooth_passes(&s), 100000000);
  s.iterations = 0;
  assert_int_equal(mb_smooth_passes(&s), 0);
  assert_int_equal(mb_smooth_passes(NULL), 0);
}

static void test_free_null(void **state) {
  (void)state;
  mb_job_free(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_full_example),   cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_input_list),     cmocka_unit_test(test_relative_paths),
      cmocka_unit_test(test_example_files),
      cmocka_unit_test(test_example_outputs),  cmocka_unit_test(test_names_round_trip),
      cmocka_unit_test(test_stage_passes),   cmocka_unit_test(test_free_null),
      cmocka_unit_test(test_halo_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
