/* meshbatch run / import: both drive the job runner. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "mb_job.h"
#include "mb_log.h"
#include "mb_runner.h"

static const char run_help[] =
    "usage: meshbatch run JOB.yaml [--quiet | --verbose]\n"
    "       mpirun -np N meshbatch run JOB.yaml\n\n"
    "Run a job file: read the input meshes, run every stage on the chosen\n"
    "backend, write the output collection (HDF5 + XDMF) through all ranks.\n"
    "Prints one line per finished mesh and a summary table.\n\n"
    "options:\n"
    "  -q, --quiet     errors only\n"
    "  -v, --verbose   also backend choice per rank and error tracebacks\n"
    "  -h, --help      this text\n\n"
    "Job file keys: see docs/guide.md; `meshbatch ops` lists the ops and\n"
    "their keys. Exit codes: 0 all meshes done,\n"
    "1 some meshes failed (the others are written), 2 usage or job-file error.\n";

/* Run `job` and turn the outcome into an exit code. */
static int run_and_report(const mb_job *job) {
  mb_run_summary sum;
  if (mb_run_job(MPI_COMM_WORLD, job, &sum) != MB_SUCCESS)
    return mb_cli_report(MB_EXIT_FAILED);
  return sum.nfailed ? MB_EXIT_FAILED : MB_EXIT_OK;
}

int mb_cmd_run(int argc, char **argv) {
  const char *path = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      if (mb_cli_rank() == 0) fputs(run_help, stdout);
      return MB_EXIT_OK;
    }
    if (mb_cli_log_option(argv[i])) continue;
    if (argv[i][0] == '-') return mb_cli_usage_error("run", "unknown option '%s'", argv[i]);
    if (path) return mb_cli_usage_error("run", "one job file expected, got '%s' too", argv[i]);
    path = argv[i];
  }
  if (!path) return mb_cli_usage_error("run", "missing JOB.yaml");
  mb_job *job = NULL;
  if (mb_job_load(path, &job) != MB_SUCCESS) return mb_cli_report(MB_EXIT_USAGE);
  int code = run_and_report(job);
  mb_job_free(job);
  return code;
}

static const char import_help[] =
    "usage: meshbatch import FILE... -o COLLECTION.h5 [--quiet | --verbose]\n\n"
    "Import OBJ, OFF and PLY files (globs allowed, quoted) into one HDF5\n"
    "collection with an XDMF file beside it. Mesh names are the file stems;\n"
    "vertex order and count are kept exactly. Files that cannot be read are\n"
    "reported and skipped (exit code 1); the others are written.\n"
    "Runs on any number of ranks (files are spread over ranks by size).\n";

int mb_cmd_import(int argc, char **argv) {
  char *inputs[argc];
  mb_job job = {.path = "import", .backend = MB_BACKEND_CPU, .inputs = inputs};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      if (mb_cli_rank() == 0) fputs(import_help, stdout);
      return MB_EXIT_OK;
    }
    if (mb_cli_log_option(argv[i])) continue;
    if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
      if (i + 1 >= argc) return mb_cli_usage_error("import", "-o needs a path");
      job.output = argv[++i];
      continue;
    }
    if (argv[i][0] == '-') return mb_cli_usage_error("import", "unknown option '%s'", argv[i]);
    inputs[job.ninputs++] = argv[i];
  }
  if (!job.ninputs) return mb_cli_usage_error("import", "no input files");
  if (!job.output) return mb_cli_usage_error("import", "missing -o COLLECTION.h5");
  return run_and_report(&job);
}
