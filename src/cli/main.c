/* meshbatch: the command-line program. Dispatches to the subcommands. */
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__ /* defined by the headers above */
#include <malloc.h>
#endif

#include "cli.h"
#include "mb_alloc.h"
#include "mb_config.h"
#include "mb_cuda.h"
#include "mb_error.h"
#include "mb_log.h"
#include "mb_mpi.h"

typedef struct command {
  const char *name;
  int (*fn)(int, char **);
  const char *summary;
} command;

static const command commands[] = {
    {"run", mb_cmd_run, "run a job file (under mpirun for several ranks)"},
    {"import", mb_cmd_import, "import OBJ/OFF/PLY/Triangle meshes and NumPy .npy grids into an HDF5 collection"},
    {"export", mb_cmd_export, "export meshes to OBJ/OFF/PLY/Triangle files, grids to .npy or legacy .vtk"},
    {"info", mb_cmd_info, "list the datasets of a collection with kinds, sizes and provenance"},
    {"partition", mb_cmd_partition, "split one mesh into parts with METIS, for partitioned jobs"},
    {"compare", mb_cmd_compare, "compare two collections (faces bitwise, vertices bitwise or within a tolerance)"},
    {"generate", mb_cmd_generate, "make inputs: subdivision, sphere, Delaunay, grid triangulation, 3D grids"},
    {"bench", mb_cmd_bench, "benchmark the kernels of an op (bench --help lists them)"},
    {"ops", mb_cmd_ops, "list the ops a job can run, with their keys and defaults"},
};
enum { NCOMMANDS = sizeof commands / sizeof commands[0] };

static void usage(FILE *f) {
  fprintf(f, "usage: meshbatch COMMAND [OPTIONS]\n"
             "       mpirun -np N meshbatch run JOB.yaml\n\n"
             "Mesh processing (triangle and polygon surfaces, planar triangulations) and\n"
             "finite-difference stencils on 3D grids (grid3d) over MPI ranks, one GPU per rank.\n\n"
             "commands:\n");
  for (int i = 0; i < NCOMMANDS; i++) fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
  fprintf(f, "\n`meshbatch COMMAND --help` describes each command.\n"
             "Exit codes: 0 success, 1 some meshes failed, 2 usage or job-file error.\n");
}

/* OpenMP threads per rank (mb_threads_choose), said under -v on rank 0, and
 * a warning where the ranks' threads exceed the node's cores (unless -q).
 * The command parses -q and -v later: they are looked for here too.
 * Collective over MPI_COMM_WORLD. */
static mb_error choose_threads(int argc, char **argv) {
  mb_threads t;
  MB_CALL(mb_threads_choose(MPI_COMM_WORLD, &t));
  int rank = 0, verbose = 0, quiet = 0;
  MB_CALL_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) verbose = 1, quiet = 0;
    if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet")) quiet = 1, verbose = 0;
  }
  if (rank != 0) return MB_SUCCESS;
  char line[512], warn[512];
  mb_threads_describe(&t, line, sizeof line, warn, sizeof warn);
  if (verbose) {
    printf("%s\n", line);
    fflush(stdout);
  }
  if (warn[0] && !quiet) {
    fprintf(stderr, "meshbatch: warning: %s\n", warn);
    fflush(stderr);
  }
  return MB_SUCCESS;
}

/* The host allocator's policy for the program's batches (glibc only; the
 * library leaves a host program's allocator alone): freed memory kept for
 * reuse up to 128 MB at the heap's top (M_TRIM_THRESHOLD) and blocks up to
 * 32 MB taken from the heap rather than fresh mmaps (M_MMAP_THRESHOLD), so
 * each mesh's host setup reuses the pages of the mesh before instead of
 * faulting in new zeroed ones. Measured with deform's batch of 1-5 k vertex
 * layouts on the 2-core development machine: host setup 9.4 -> 1.5 ms a
 * layout (docs/benchmarks.md). Cannot fail (a refusal keeps the defaults). */
static void malloc_policy(void) {
#ifdef __GLIBC__
  (void)mallopt(M_MMAP_THRESHOLD, 32 << 20);
  (void)mallopt(M_TRIM_THRESHOLD, 128 << 20);
#endif
}

int main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? MB_EXIT_USAGE : MB_EXIT_OK;
  }
  if (!strcmp(argv[1], "--version")) {
    char why[512] = "";
    int n = mb_cuda_device_count(why, sizeof why);
    printf("meshbatch %s\nCUDA backend: %s\nCUDA devices: %d%s%s\n", MESHBATCH_VERSION,
           MESHBATCH_HAVE_CUDA ? "compiled" : "not compiled", n, n ? "" : " - ", n ? "" : why);
    return MB_EXIT_OK;
  }
  const command *cmd = NULL;
  for (int i = 0; i < NCOMMANDS; i++)
    if (!strcmp(argv[1], commands[i].name)) cmd = &commands[i];
  if (!cmd) {
    fprintf(stderr, "meshbatch: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return MB_EXIT_USAGE;
  }
  /* a passive OpenMP wait policy unless the user set one: re-executes this
   * program once with OMP_WAIT_POLICY=passive (mb_mpi.h) */
  mb_omp_wait_policy_default(argv);
  malloc_policy();
  mb_singleton_defaults();
  /* PT-Scotch (behind partitioner: parmetis) runs threads that call MPI. */
  int provided;
  if (MPI_Init_thread(&argc, &argv,
                      MESHBATCH_HAVE_PARMETIS ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED,
                      &provided) != MPI_SUCCESS) {
    fprintf(stderr, "meshbatch: error: MPI_Init_thread failed (is the MPI library installed "
                    "and the launcher's environment intact?)\n");
    return MB_EXIT_FAILED;
  }
  mb_rss_mark_start(); /* the memory a run adds is reported over this (mb_alloc.h) */
  /* MPI errors come back as codes that MB_CALL_MPI reports (mb_mpi.h) */
  mb_error_mpi_abort_unagreed(1); /* an MPI error one rank meets alone ends the job */
  if (mb_mpi_errors_return(MPI_COMM_WORLD) || mb_mpi_errors_return(MPI_COMM_SELF)) {
    mb_log_error("%s", mb_error_message());
    MPI_Abort(MPI_COMM_WORLD, MB_EXIT_FAILED);
  }
  if (choose_threads(argc, argv) != MB_SUCCESS) {
    mb_log_error("%s", mb_error_message());
    MPI_Finalize();
    return MB_EXIT_FAILED;
  }
  int code = cmd->fn(argc - 1, argv + 1);
  if (code != MB_EXIT_OK && mb_error_code() == MB_ERR_MPI && !mb_error_agreed()) {
    /* an MPI error this rank met alone: the others may wait in a collective
     * it will not enter, so the job ends here, with exit code 1 */
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "meshbatch: error: [rank %d] %s\n%s"
            "meshbatch: the ranks could not agree on this error: aborting the job\n",
            rank, mb_error_message(), mb_error_traceback());
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, MB_EXIT_FAILED);
  }
  /* every rank leaves with the worst code, so mpirun reports it */
  const int mpi = MPI_Allreduce(MPI_IN_PLACE, &code, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (mpi != MPI_SUCCESS) /* the others leave with their code: this one ends the job */
    mb_error_mpi_failed(mpi, __FILE__, __LINE__, __func__, "MPI_Allreduce(exit code)");
  if (MPI_Finalize() != MPI_SUCCESS && code == MB_EXIT_OK) code = MB_EXIT_FAILED;
  return code;
}
