/* meshbatch: job files (YAML, validated with libcyaml).
 *
 * A job names its input (a collection .h5, mesh files, or globs), its output
 * collection, how work is distributed, the backend, the GPU working
 * precision of the smoothing ops (key `precision`: no other op reads it)
 * and an ordered list of stages, each an op of the registry (src/ops/mb_ops.def)
 * whose keys come from the op's parameter table. docs/guide.md lists every
 * key; `meshbatch ops` lists the ops.
 */
#ifndef MB_JOB_H
#define MB_JOB_H

#include "mb_error.h"
#include "mb_halo.h"
#include "mb_op.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mb_distribute { MB_DISTRIBUTE_PER_MESH = 0, MB_DISTRIBUTE_PARTITIONED = 1 } mb_distribute;
typedef enum mb_schedule { MB_SCHEDULE_STATIC = 0, MB_SCHEDULE_DYNAMIC = 1 } mb_schedule;

typedef struct mb_job {
  char *path;            /* the job file's path (owned) */
  int ninputs;
  char **inputs;         /* [ninputs] input paths or glob patterns, as written;
                            relative ones resolved against the job file's folder (owned) */
  char **input_origins;  /* [ninputs] where each input is written, "FILE:LINE: KEY"
                            ("job.yaml:3: input[1]"), for the messages about it
                            (owned; NULL where there is no job file: an import) */
  char *output;          /* output collection path, resolved likewise (owned) */
  char *partition;       /* partitioned runs: a partition file written by
                            `meshbatch partition` to reuse, or NULL (owned) */
  mb_distribute distribute;
  mb_partitioner partitioner; /* partitioned runs: METIS on rank 0 (every rank reads the
                            whole mesh), ParMETIS (every rank reads a slab) or blocks
                            of rows (no graph partitioning) */
  mb_halo_transport halo; /* partitioned runs on GPUs: MPI, NCCL or auto */
  mb_schedule schedule;  /* per-mesh: static cost-balanced or dynamic queue */
  mb_backend_kind backend;
  mb_precision precision; /* `precision`: the GPU working precision of the smoothing ops
                            (taubin, laplacian); the CPU smooths in float64, Polylla
                            computes in float64, the stencil ops in each field's type */
  int nstages;
  mb_stage *stages;      /* [nstages] ops of the registry with their parameters (owned);
                            the kind one writes is the kind the next reads */
  int timings;           /* not job keys: `meshbatch run --timings`, */
  int checkpoint;        /* --checkpoint (keep every finished mesh in OUTPUT.ckpt/), */
  int resume;            /* --resume (take the finished meshes from there) set them */
  int sync;              /* --sync: the output on the disk before its name appears */
} mb_job;

/* Load and validate a job file. Not collective (every rank may load it).
 * On error *job is NULL and the message names the file, the line and the key
 * ("job.yaml:7: stages[0].iterations: value -3 out of range [0, 100000000]").
 * Errors: MB_ERR_IO (unreadable), MB_ERR_JOB (syntax, unknown key, wrong
 * type, value out of range, missing required key). */
mb_error mb_job_load(const char *path, mb_job **job);

/* Free a job; NULL allowed. */
void mb_job_free(mb_job *job);

const char *mb_distribute_name(mb_distribute d);

#ifdef __cplusplus
}
#endif
#endif
