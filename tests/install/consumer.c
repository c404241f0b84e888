/* A program built against an installed meshbatch (tests/install/install_test.sh):
 * only the public headers of PREFIX/include/meshbatch and libmeshbatch.
 *
 * usage: consumer IN.h5 WORKDIR     (under mpirun or alone)
 *
 * 1. reads the first mesh of the collection IN.h5 (mb_collection_*);
 * 2. smooths it directly: mb_adjacency_build, then mb_smooth_cpu with one
 *    Taubin stage (lambda 0.5, mu -0.53, 10 iterations, uniform weights);
 * 3. runs the same stage as a job through the runner (mb_job_load of a job
 *    file written to WORKDIR/job.yaml, mb_run_job, output WORKDIR/out.h5,
 *    backend cpu) and reads the output back.
 * Rank 0 prints one line, "consumer: NAME: NV vertices, NF faces; direct
 * Taubin moved the vertices by max D, mean M; runner: N mesh(es), F failed,
 * max difference from direct X", and the program exits 0 only if the
 * vertices moved (D > 0), the runner wrote the mesh with the same vertex and
 * face counts and no failure, and its vertices equal the direct result bit
 * for bit (both are the CPU reference, the same arithmetic). Exit 1 with a
 * message otherwise.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <meshbatch/mb_adjacency.h>
#include <meshbatch/mb_collection.h>
#include <meshbatch/mb_error.h>
#include <meshbatch/mb_job.h>
#include <meshbatch/mb_log.h>
#include <meshbatch/mb_mesh.h>
#include <meshbatch/mb_mpi.h>
#include <meshbatch/mb_runner.h>
#include <meshbatch/mb_smooth.h>

/* Read dataset 0 of the collection at path (collective over comm). */
static mb_error read_first(MPI_Comm comm, const char *path, mb_mesh **mesh) {
  mb_collection *coll = NULL;
  MB_CALL(mb_collection_open(comm, path, &coll));
  mb_error e = MB_SUCCESS;
  if (mb_collection_count(coll) < 1)
    e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__, "%s holds no dataset", path);
  else
    e = mb_collection_read(coll, 0, mesh);
  mb_error c = mb_collection_close(coll);
  MB_CALL(e);
  MB_CALL(c);
  return MB_SUCCESS;
}

/* Write a one-stage Taubin job on input `in` with output `out` to path. */
static mb_error write_job(const char *path, const char *in, const char *out) {
  FILE *f = fopen(path, "w");
  MB_CHECK(f, MB_ERR_IO, "cannot write %s", path);
  fprintf(f,
          "input: %s\n"
          "output: %s\n"
          "backend: cpu\n"
          "stages:\n"
          "  - op: taubin\n"
          "    lambda: 0.5\n"
          "    mu: -0.53\n"
          "    iterations: 10\n"
          "    weights: uniform\n"
          "    boundary: free\n",
          in, out);
  MB_CHECK(fclose(f) == 0, MB_ERR_IO, "cannot write %s", path);
  return MB_SUCCESS;
}

/* The whole check; rank 0 prints the result line. */
static mb_error consume(MPI_Comm comm, const char *in, const char *workdir, int *ok) {
  int rank;
  MB_CALL_MPI(MPI_Comm_rank(comm, &rank));
  *ok = 0;

  /* 1-2: read and smooth directly. */
  mb_mesh *mesh = NULL;
  MB_CALL(read_first(comm, in, &mesh));
  const int64_t nv = mesh->nv;
  double *before = malloc((size_t)nv * 3 * sizeof(double));
  MB_CHECK(before, MB_ERR_MEMORY, "out of memory");
  memcpy(before, mesh->xyz, (size_t)nv * 3 * sizeof(double));
  mb_adjacency *adj = NULL;
  MB_CALL(mb_adjacency_build(mesh, &adj));
  const mb_smooth_stage stage = {.method = MB_SMOOTH_TAUBIN, .lambda = 0.5, .mu = -0.53,
                                 .iterations = 10, .weights = MB_WEIGHTS_UNIFORM,
                                 .boundary = MB_BOUNDARY_FREE};
  MB_CALL(mb_smooth_check(&stage, adj));
  MB_CALL(mb_smooth_cpu(adj, &stage, 1, mesh->xyz));
  mb_adjacency_free(adj);
  double dmax = 0, dsum = 0;
  for (int64_t v = 0; v < nv; v++) {
    const double *a = before + 3 * v, *b = mesh->xyz + 3 * v;
    const double d = sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
                          (a[2] - b[2]) * (a[2] - b[2]));
    dsum += d;
    if (d > dmax) dmax = d;
  }
  free(before);

  /* 3: the same stage as a job through the runner. */
  char job_path[4096], out_path[4096];
  snprintf(job_path, sizeof job_path, "%s/job.yaml", workdir);
  snprintf(out_path, sizeof out_path, "%s/out.h5", workdir);
  MB_CALL(mb_agree(comm, rank == 0 ? write_job(job_path, in, out_path) : MB_SUCCESS));
  mb_job *job = NULL;
  MB_CALL(mb_job_load(job_path, &job));
  mb_run_summary sum;
  mb_error e = mb_run_job(comm, job, &sum);
  mb_job_free(job);
  MB_CALL(e);
  mb_mesh *out = NULL;
  MB_CALL(read_first(comm, out_path, &out));
  double diff = (out->nv == nv) ? 0 : INFINITY;
  for (int64_t k = 0; out->nv == nv && k < 3 * nv; k++)
    diff = fmax(diff, fabs(out->xyz[k] - mesh->xyz[k]));

  if (rank == 0) {
    printf("consumer: %s: %lld vertices, %lld faces; direct Taubin moved the vertices by max %.6g, "
           "mean %.6g; runner: %lld %s, %lld failed, max difference from direct %.3g\n",
           mesh->name, (long long)nv, (long long)mesh->nf, dmax, dsum / (double)nv,
           (long long)sum.nmeshes, mb_plural(sum.nmeshes, "mesh", "meshes"),
           (long long)sum.nfailed, diff);
    if (!(dmax > 0)) fprintf(stderr, "consumer: smoothing did not move the vertices\n");
    if (sum.nmeshes != 1 || sum.nfailed != 0)
      fprintf(stderr, "consumer: the runner did not smooth the one mesh\n");
    if (out->nv != nv || out->nf != mesh->nf || strcmp(out->name, mesh->name))
      fprintf(stderr, "consumer: the runner's output is not the input mesh (%s: %lld, %lld)\n",
              out->name, (long long)out->nv, (long long)out->nf);
    if (diff != 0) fprintf(stderr, "consumer: the runner's vertices differ from the direct result\n");
  }
  *ok = dmax > 0 && sum.nmeshes == 1 && sum.nfailed == 0 && out->nv == nv && out->nf == mesh->nf &&
        !strcmp(out->name, mesh->name) && diff == 0;
  mb_mesh_free(out);
  mb_mesh_free(mesh);
  return MB_SUCCESS;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: consumer IN.h5 WORKDIR\n");
    return 2;
  }
  mb_singleton_defaults();
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 1;
  mb_log_set_level(MB_LOG_QUIET);
  int ok = 0;
  mb_error e = consume(MPI_COMM_WORLD, argv[1], argv[2], &ok);
  if (e != MB_SUCCESS)
    fprintf(stderr, "consumer: %s: %s\n%s", mb_error_name(e), mb_error_message(),
            mb_error_traceback());
  MPI_Finalize();
  return e == MB_SUCCESS && ok ? 0 : 1;
}
