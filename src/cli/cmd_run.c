/* meshbatch run / import: both drive the job runner. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "mb_job.h"
#include "mb_log.h"
#include "mb_runner.h"

static const char run_help[] =
    "usage: meshbatch run JOB.yaml [--quiet | --verbose] [--timings]\n"
    "                              [--checkpoint | --no-checkpoint | --resume] [--sync]\n"
    "       mpirun -np N meshbatch run JOB.yaml\n\n"
    "Run a job file: read the input meshes, run every stage on the chosen\n"
    "backend, write the output collection (HDF5 + XDMF): on one rank mesh by\n"
    "mesh as they finish, over several ranks all together at the end; it takes\n"
    "its name when the run ends. Prints one line per finished mesh (a failed\n"
    "mesh's error on stderr as it fails) and a summary table, then where meshes\n"
    "failed a recap (\"2 of 1000 meshes failed:\", each failed mesh's name, file\n"
    "and the first line of its error, the first 20); inside a long mesh or grid, a\n"
    "progress line every few seconds (MESHBATCH_PROGRESS_S, default 5).\n\n"
    "options:\n"
    "  -q, --quiet     errors only\n"
    "  -v, --verbose   also backend choice per rank and error tracebacks\n"
    "  --timings       at the end, where the time went (setup, read, compute,\n"
    "                  write per mesh and at the end, wall: slowest rank and\n"
    "                  mean) and peak host memory; printed under --quiet too\n"
    "  --checkpoint    keep every finished mesh in OUTPUT.ckpt/, so\n"
    "                  that a run stopped by SIGTERM, a killed rank or a lost node\n"
    "                  can go on with --resume; removed once OUTPUT is written.\n"
    "                  The default for a job over several meshes; --checkpoint\n"
    "                  asks for it for a single mesh too\n"
    "  --no-checkpoint no checkpoint (each finished mesh is not written twice;\n"
    "                  a stopped run then keeps nothing)\n"
    "  --resume        take the meshes finished in OUTPUT.ckpt/ by an interrupted\n"
    "                  run of the same job, compute the rest (and checkpoint them);\n"
    "                  after a kill every finished mesh already appended to its\n"
    "                  rank's checkpoint log, after a crash of the machine those\n"
    "                  synced (at most every MESHBATCH_CKPT_SYNC_SECONDS, default\n"
    "                  30); torn or damaged records are found by their checksums\n"
    "                  and their meshes computed again\n"
    "  --sync          sync OUTPUT and its XDMF files to the disk before they take\n"
    "                  their names (after a crash the earlier output or the whole\n"
    "                  new one, never a part), and the checkpoint whenever its\n"
    "                  queue runs empty;\n"
    "                  costs the time of the disk's writes\n"
    "  -h, --help      this text\n\n"
    "SIGTERM or SIGINT (SLURM's warning before the walltime, Ctrl-C, or either\n"
    "sent to mpirun, which forwards it and kills the ranks a second later)\n"
    "stops every rank within a second, between meshes or between the steps of\n"
    "a long mesh or grid, without writing OUTPUT; the finished meshes stay in\n"
    "the checkpoint and one line prints the command that goes on (--resume).\n"
    "A mesh stopped in the middle is computed again from its start.\n\n"
    "Job file keys: see docs/guide.md; `meshbatch ops` lists the ops and\n"
    "their keys. Exit codes: 0 all meshes done,\n"
    "1 some meshes failed (an input that exists but cannot be read, a mesh an\n"
    "op refuses: each reported as it fails and listed at the end; the others\n"
    "are written), 2 usage or job-file error, refused before any work: also an\n"
    "input that does not exist, a glob that matches no file (both named with\n"
    "the job file's line), an output that is an input or a folder,\n"
    "3 stopped by SIGTERM or SIGINT before the last mesh finished (nothing\n"
    "written; the finished meshes kept for --resume).\n";

/* Exit code of a run stopped by SIGTERM or SIGINT before its last mesh. */
enum { MB_EXIT_STOPPED = 3 };

/* Run `job` and turn the outcome into an exit code. */
static int run_and_report(const mb_job *job) {
  mb_run_summary sum;
  const mb_error e = mb_run_job(MPI_COMM_WORLD, job, &sum);
  if (e != MB_SUCCESS) return mb_cli_report_run(e);
  if (sum.stopped) return MB_EXIT_STOPPED;
  return sum.nfailed ? MB_EXIT_FAILED : MB_EXIT_OK;
}

int mb_cmd_run(int argc, char **argv) {
  const char *path = NULL;
  int timings = 0, checkpoint = 0, resume = 0, sync = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      if (mb_cli_rank() == 0) fputs(run_help, stdout);
      return MB_EXIT_OK;
    }
    if (mb_cli_log_option(argv[i])) continue;
    if (!strcmp(argv[i], "--timings")) {
      timings = 1;
      continue;
    }
    if (!strcmp(argv[i], "--sync")) {
      sync = 1;
      continue;
    }
    if (!strcmp(argv[i], "--no-checkpoint")) {
      checkpoint = -1; /* job->checkpoint: -1 none, 0 the default, 1 asked for */
      continue;
    }
    if (!strcmp(argv[i], "--checkpoint") || !strcmp(argv[i], "--resume")) {
      checkpoint = 1;
      resume |= !strcmp(argv[i], "--resume");
      continue;
    }
    if (argv[i][0] == '-') return mb_cli_usage_error("run", "unknown option '%s'", argv[i]);
    if (path) return mb_cli_usage_error("run", "one job file expected, got '%s' too", argv[i]);
    path = argv[i];
  }
  if (!path) return mb_cli_usage_error("run", "missing JOB.yaml");
  mb_job *job = NULL;
  if (mb_job_load(path, &job) != MB_SUCCESS) return mb_cli_report(MB_EXIT_USAGE);
  job->timings = timings;
  job->checkpoint = checkpoint;
  job->resume = resume;
  job->sync = sync;
  int code = run_and_report(job);
  mb_job_free(job);
  return code;
}

static const char import_help[] =
    "usage: meshbatch import FILE... -o COLLECTION.h5 [--kind KIND] [--quiet | --verbose]\n\n"
    "Import OBJ, OFF, PLY and Triangle .node/.ele files, and NumPy .npy arrays\n"
    "as grids (grid3d, one field u; see docs/guide.md), globs allowed, quoted,\n"
    "into one HDF5 collection with an XDMF file beside it. Dataset names are the\n"
    "file stems; vertex and face order and count are kept exactly. Files that\n"
    "cannot be read are reported and skipped (exit code 1); the others are\n"
    "written. A FILE that does not exist, or a glob that matches none, is a\n"
    "usage error before anything is read (exit code 2). Runs on any number of\n"
    "ranks (files are spread over ranks by size).\n\n"
    "  --kind KIND   store every dataset as KIND: surface, triangulation2d (every\n"
    "                face a triangle, z = 0) or polygons2d (z = 0). Default: as\n"
    "                read (Triangle files are triangulation2d, the others surface).\n";

int mb_cmd_import(int argc, char **argv) {
  char *inputs[argc];
  int ninputs = 0;
  const char *output = NULL;
  mb_kind kind = MB_KIND_NONE;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      if (mb_cli_rank() == 0) fputs(import_help, stdout);
      return MB_EXIT_OK;
    }
    if (mb_cli_log_option(argv[i])) continue;
    if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
      if (i + 1 >= argc) return mb_cli_usage_error("import", "-o needs a path");
      output = argv[++i];
      continue;
    }
    if (!strcmp(argv[i], "--kind")) {
      if (i + 1 >= argc) return mb_cli_usage_error("import", "--kind needs a kind");
      kind = mb_kind_from_name(argv[++i]);
      if (kind == MB_KIND_NONE)
        return mb_cli_usage_error("import", "unknown kind '%s' (surface, triangulation2d, "
                                  "polygons2d)", argv[i]);
      continue;
    }
    if (argv[i][0] == '-') return mb_cli_usage_error("import", "unknown option '%s'", argv[i]);
    inputs[ninputs++] = argv[i];
  }
  if (!ninputs) return mb_cli_usage_error("import", "no input files");
  if (!output) return mb_cli_usage_error("import", "missing -o COLLECTION.h5");
  mb_run_summary sum;
  const mb_error e = mb_run_import(MPI_COMM_WORLD, ninputs, inputs, output, kind, &sum);
  if (e != MB_SUCCESS) return mb_cli_report_run(e);
  if (sum.stopped) return MB_EXIT_STOPPED;
  return sum.nfailed ? MB_EXIT_FAILED : MB_EXIT_OK;
}
