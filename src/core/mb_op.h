/* meshbatch: what an op (a job stage type) is, for the op registry.
 *
 * After libCEED's backend registry and PETSc's typed options: every op is
 * described once, in its own room (src/ops/<op>/), by an mb_op_info. Its
 * parameter table (mb_param) is the single source of the job-file schema
 * (validation with FILE:LINE: KEY messages), the defaults, `meshbatch ops`,
 * `--help` and the provenance text; its kinds say what it reads and
 * writes; its entry points run it per mesh or on a partitioned piece for
 * each backend. The list of ops is in src/ops/mb_ops.def (mb_ops.h looks
 * them up); nothing above the ops layer names an op.
 */
#ifndef MB_OP_H
#define MB_OP_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "mb_error.h"
#include "mb_mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Backends, as named in job files. MB_BACKEND_AUTO is only ever a request. */
typedef enum mb_backend_kind { MB_BACKEND_AUTO = 0, MB_BACKEND_CPU = 1, MB_BACKEND_CUDA = 2 } mb_backend_kind;

/* Index of a resolved backend in mb_op_info's entry-point tables. */
enum { MB_BACKEND_SLOT_CPU = 0, MB_BACKEND_SLOT_CUDA = 1, MB_NBACKENDS = 2 };

/* How a partitioned run splits a mesh (job key `partitioner`): METIS on
 * rank 0 (every rank reads the whole mesh), ParMETIS on all ranks (each
 * reads a slab of rows), or the slabs themselves: contiguous blocks of rows,
 * no graph partitioning (for rows already in spatial order). */
typedef enum mb_partitioner {
  MB_PARTITIONER_METIS = 0,
  MB_PARTITIONER_PARMETIS = 1,
  MB_PARTITIONER_BLOCKS = 2
} mb_partitioner;

/* How the halo travels between GPUs (job key `halo`): MPI through pinned
 * host buffers, NCCL device to device, IPC device to device by the copy
 * engines between the GPUs of one node (CUDA IPC, no SM moves the rows),
 * or auto: the rule of mb_halo_choose_transport (partition/mb_halo.h). */
typedef enum mb_halo_transport {
  MB_HALO_AUTO = 0,
  MB_HALO_MPI = 1,
  MB_HALO_NCCL = 2,
  MB_HALO_IPC = 3
} mb_halo_transport;

/* Name of a partitioner as written in job files ("metis"). Not collective. */
const char *mb_partitioner_name(mb_partitioner p);

/* A working precision: the job key `precision` (read by the smoothing ops on
 * the GPU only; their CPU backend computes in float64), and what an op
 * reports it computed in (mb_op_ctx.computed). */
typedef enum mb_precision { MB_PRECISION_FLOAT64 = 0, MB_PRECISION_FLOAT32 = 1 } mb_precision;

/* A backend resolved on one rank (see mb_backend_choose). */
typedef struct mb_backend {
  mb_backend_kind kind;    /* MB_BACKEND_CPU or MB_BACKEND_CUDA, never AUTO */
  int device;              /* CUDA device index, -1 for the CPU */
  char description[256];   /* "cpu (2 OpenMP threads)", "cuda device 0 (NVIDIA H100)" */
} mb_backend;

const char *mb_backend_kind_name(mb_backend_kind b);
const char *mb_precision_name(mb_precision p);

/* ------------------------------------------------------------ parameters */

typedef enum mb_param_type {
  MB_PARAM_INT = 0,   /* stored as int; written as a decimal integer */
  MB_PARAM_REAL = 1,  /* stored as double */
  MB_PARAM_NAME = 2,  /* one of names[]; stored as int, the index in names */
  MB_PARAM_NAMES = 3, /* a list of names (a YAML list, or one name), e.g. field names;
                         stored as char[MB_PARAM_NAMES_LEN], the names joined by ',',
                         "" where the key is not given (the op's documented default) */
  MB_PARAM_PATH = 4   /* one file path (any characters, not empty), as written in the
                         job (the op resolves a relative one); stored as
                         char[MB_PARAM_NAMES_LEN], "" where the key is not given */
} mb_param_type;

/* Bytes of an MB_PARAM_NAMES or MB_PARAM_PATH value in the parameter struct,
 * final 0 included. */
#define MB_PARAM_NAMES_LEN 512

/* One key of an op's stage in a job file. Ranges apply to INT and REAL:
 * lo <= v <= hi, with lo_open / hi_open excluding the bound. */
typedef struct mb_param {
  const char *key;
  mb_param_type type;
  size_t offset;             /* offsetof(the op's parameter struct, field) */
  double lo, hi;
  int lo_open, hi_open;
  int required;              /* 1: the key must be given (no default) */
  double dflt;               /* default of an optional INT or REAL; NAME: index */
  const char *const *names;  /* NAME: allowed names, NULL-terminated */
  const char *doc;           /* one line for `meshbatch ops` */
} mb_param;

/* ------------------------------------------------------------ ops */

struct mb_op_info;
struct mb_pass_timing;

/* One stage of a job: an op and its parameter struct (owned by the job). */
typedef struct mb_stage {
  const struct mb_op_info *op;
  void *params;   /* the op's parameter struct, params_size bytes */
  int line;       /* line of the stage in the job file, 0 if unknown */
  int index;      /* position of the stage in the job (0-based): the N of its
                     provenance key stage_N, counted after an input's earlier stages */
  const char *file; /* the job file (owned by the job), for FILE:LINE in an op's
                       messages about its keys; NULL if unknown */
} mb_stage;

/* Stopping and progress inside an op's long loops (passes, time steps):
 * the runner's state for one mesh or one split dataset, read through
 * mb_op_should_stop. The runner fills the first fields; the rest are
 * mb_op_should_stop's own (zero them). */
typedef struct mb_op_stop {
  volatile const sig_atomic_t *flag; /* nonzero once SIGTERM or SIGINT came (the runner's flag) */
  MPI_Comm comm;            /* partitioned runs: the domain's communicator, over which the
                               flag is agreed (every rank stops at the same step);
                               MPI_COMM_NULL per mesh (this rank alone decides) */
  int progress;             /* 1: this rank prints the progress lines (rank 0, not -q) */
  const char *name;         /* the mesh or grid, for the progress lines */
  double interval_s;        /* seconds between progress lines (MESHBATCH_PROGRESS_S) */
  /* mb_op_should_stop's state */
  MPI_Request req;          /* the flag's non-blocking allreduce in flight (comm only) */
  int pending, local, agreed;
  int stopped;              /* 1 once mb_op_should_stop returned 1 */
  double loop_t0, last_print;
  double last_done;
} mb_op_stop;

/* What an op's entry point gets besides its stages. */
typedef struct mb_op_ctx {
  const mb_backend *backend;
  mb_precision precision;
  mb_halo_transport halo;           /* partitioned GPU runs: the job key `halo` */
  struct mb_pass_timing *timing;    /* partitioned runs: filled by the op, may be NULL */
  double *device_s;                 /* per-mesh runs: an op adds the seconds its device was
                                       busy for the mesh (the GPU busy fraction); may be NULL */
  double *copy_s;                   /* per-mesh runs: an op that reports its host-device
                                       copies apart (Polylla) adds their seconds; may be NULL */
  unsigned *computed;               /* every run: the op ORs in MB_COMPUTED_BIT(p) for each
                                       precision p it computed in (mb_op_computed), for the
                                       provenance `precision`; may be NULL */
  mb_op_stop *stop;                 /* every run: stopping and progress (mb_op_should_stop);
                                       may be NULL (never stops, prints nothing) */
  void *prepared;                   /* per-mesh runs: what the first stage's op made for
                                       this mesh ahead of its run (mb_op_info.prepare), given
                                       only to the run of the stages that begin with the
                                       job's first stage, which takes it over (frees it with
                                       its prepared_free, whatever it returns); NULL: none,
                                       the run does that work itself */
} mb_op_ctx;

/* The "should stop" query of an op's long loop, called every iteration or
 * time step (or every few, at most about 0.1 s apart) with the work done
 * and the loop's total (any unit: steps, passes); returns 1 where the op
 * must stop now: return mb_op_stopped(ctx) after freeing what it holds.
 * Per mesh (ctx->stop->comm MPI_COMM_NULL): not collective, reads the
 * runner's flag. Partitioned: collective over comm; every rank must call
 * it at the same steps; the flag is agreed by a non-blocking allreduce
 * started at one call and completed at the next (it overlaps the op's
 * halo exchange), so every rank returns 1 at the same step, at most one
 * step after the signal reached the last rank. Rank 0 (ctx->stop->progress)
 * prints a line every interval_s with the fraction done and the time left
 * estimated from the loop's rate. Returns 0 where ctx or ctx->stop is NULL.
 * A failed allreduce counts as no stop (the op's own exchanges report it).
 * MESHBATCH_TEST_STEP_DELAY_MS (tests only) sleeps that long per step done
 * since the last call (0.2 s at most), to make a run slow enough to be
 * stopped in the middle. */
int mb_op_should_stop(const mb_op_ctx *ctx, double done, double total);

/* Record the stop as this op's error (MB_ERR_IO, "stopped by a signal")
 * and return it; the runner tells a stop from a failure by
 * ctx->stop->stopped. Not collective. */
mb_error mb_op_stopped(const mb_op_ctx *ctx);

/* After the stages on a domain: complete the allreduce mb_op_should_stop
 * left in flight (collective over stop->comm: every rank has the same one
 * in flight). Nothing per mesh or for NULL. Cannot fail. */
void mb_op_stop_end(mb_op_stop *stop);

/* The bit of precision p in mb_op_ctx.computed. */
#define MB_COMPUTED_BIT(p) (1u << (unsigned)(p))

/* Record that an op computed in precision p: ORs MB_COMPUTED_BIT(p) into
 * *ctx->computed (nothing where ctx or ctx->computed is NULL). Not
 * collective; cannot fail. */
void mb_op_computed(const mb_op_ctx *ctx, mb_precision p);

/* The provenance text of a set of MB_COMPUTED_BIT bits: "float64",
 * "float32", "float32,float64" (a grid with fields of both types), or
 * "none" (no op reported). A static string. Not collective. */
const char *mb_computed_name(unsigned bits);

/* Run consecutive stages (all of ops sharing this entry point) on one
 * mesh. *mesh is replaced when the op makes a new dataset (the old one is
 * freed by the op). Not collective. */
typedef mb_error (*mb_op_run_fn)(const mb_op_ctx *ctx, const mb_stage *stages, int nstages,
                                 mb_mesh **mesh);

/* Host-only work on a mesh ahead of its run, for the per-mesh pipeline:
 * while one mesh's stages run on the device, a preparing thread of the
 * rank runs the first stage's prepare on the next mesh read (its host
 * setup: adjacency, handles, the assembled system), and the run then
 * gets the result as ctx->prepared. stage: the job's first stage (its
 * parameters); mesh: the mesh as read and converted, which the prepare
 * may change as its run would (the same mesh object reaches the run);
 * *prepared: the op's own object, owned by the caller until handed to the
 * run or freed with the op's prepared_free; NULL after an error. Runs on
 * a thread beside another mesh's run of the same op: it may use neither
 * MPI nor HDF5, and must be thread-safe against those runs (on the CUDA
 * backend the rank's device is current on the thread, for queries of its
 * properties and for uploads of the mesh on a non-blocking stream of the
 * prepare's own, which its run then waits for; no kernels that compete
 * with the run's). A prepare that fails costs
 * only time: the runner clears the error and the run does the whole work
 * itself, reporting the error there. Not collective. Errors: the op's own (they are not reported). */
typedef mb_error (*mb_op_prepare_fn)(const mb_stage *stage, mb_mesh *mesh, void **prepared);

/* How an op's partitioned entry splits a dataset over the ranks (its
 * mb_op_info.split). The domain (partition/mb_domain.h) is built for it by
 * the partitioner the job names; the op sees only the domain.
 *   VERTICES  owned vertices, then ghost vertices up to ghost_depth edges
 *             away, a halo plan between them; positions and per-vertex
 *             fields on owned + ghost rows (mb_distributed_mesh)
 *   FACES     this rank's block of rows of the input; the op partitions
 *             the faces (the dual graph) itself and returns its block of
 *             rows of the output (Polylla's terminal-edge regions)
 *   CELLS     a Cartesian block of a grid with ghost_depth ghost planes per
 *             face (mb_cart), the block's points and fields */
typedef enum mb_split {
  MB_SPLIT_NONE = 0,      /* no partitioned form */
  MB_SPLIT_VERTICES = 1,
  MB_SPLIT_FACES = 2,
  MB_SPLIT_CELLS = 3
} mb_split;

/* Name of a split for messages and `meshbatch ops`: "vertices", "faces",
 * "grid blocks", "none". Not collective. */
const char *mb_split_name(mb_split split);

struct mb_domain;

/* Run consecutive stages (all of ops sharing this entry point) on this
 * rank's piece of a dataset split over ranks (partition/mb_domain.h): the
 * op reads and changes the domain's values (positions and fields of owned
 * rows, ghosts by its halo exchanges, or the domain's slab of rows), and
 * may add fields; the runner writes the domain back. Collective over the
 * domain's communicator; the runner agrees the error. */
typedef mb_error (*mb_op_run_partitioned_fn)(const mb_op_ctx *ctx, const mb_stage *stages,
                                             int nstages, struct mb_domain *domain);

/* `meshbatch bench ROOM ...`: argv[0] is the room name. Prints figures;
 * returns the process exit code. Collective over MPI_COMM_WORLD. */
typedef int (*mb_op_bench_fn)(int argc, char **argv);

/* A dataset's size for the estimate made before any work (the runner's
 * check of the output against the free disk and the memory): vertex rows
 * (grid points), faces, face vertex indices, and the field components
 * stored per vertex row and per face row (every field together). Counts,
 * as doubles so that a declared size cannot overflow them. */
typedef struct mb_size_estimate {
  double rows, faces, nidx;
  double row_values, face_values;
} mb_size_estimate;

typedef struct mb_op_info {
  const char *name;      /* in job files: "taubin" */
  const char *room;      /* its folder under src/ops/ and bench name: "smooth" */
  const char *summary;   /* one line */
  const char *source;    /* the method's publication */
  mb_kind in, out;       /* the dataset kind it reads and the kind it writes */
  const mb_param *params;
  int nparams;
  size_t params_size;
  /* Fill defaults beyond the table (e.g. the method of a shared struct);
   * may be NULL. */
  void (*init)(void *params);
  /* Rules across keys, after each key is in range; on failure write the
   * message and the index of the key to blame and return nonzero. given[k]
   * says whether key k was written in the job file. May be NULL. */
  int (*check)(const void *params, const unsigned char *given, int *bad_key, char *msg,
               size_t len);
  /* Estimated work on a dataset of nv vertices and nf faces, in face
   * updates, for the per-mesh schedule. */
  double (*cost)(int64_t nv, int64_t nf, const void *params);
  mb_op_run_fn run[MB_NBACKENDS];                      /* NULL: not on this backend */
  /* Partitioned form: how the op splits a dataset, the ghost rows it reads
   * (VERTICES: ghost depth in edges; CELLS: ghost width in planes per face;
   * >= 1, FACES: unused) and its entry per backend (NULL: not partitioned
   * on that backend). split MB_SPLIT_NONE: no partitioned form. */
  mb_split split;
  int ghost_depth;
  mb_op_run_partitioned_fn run_partitioned[MB_NBACKENDS];
  mb_op_bench_fn bench;                                /* NULL: no benchmark */
  /* The host setup of a mesh ahead of its run, per backend (see
   * mb_op_prepare_fn; NULL: none on that backend), and the free of what
   * it made (non-NULL wherever a prepare is). */
  mb_op_prepare_fn prepare[MB_NBACKENDS];
  void (*prepared_free)(void *prepared);
  /* How a stage changes the size of a dataset (fields it adds, snapshots
   * it keeps): updates *s in place, a bound (never less than the op will
   * store). NULL: the sizes stay as they are (ops that move values only,
   * or make no more faces than they read). Not collective; cannot fail. */
  void (*grow)(const void *params, mb_size_estimate *s);
  /* The rules of a stage that need only a grid's spacing (heat's and
   * wave's stability limits), checked by the runner before any work on
   * every grid3d input whose spacing is declared (collection datasets):
   * h[3] the spacing along z, y, x (length units), grid the dataset's name
   * for the message. MB_ERR_ARG with the stage's job file and line (a job
   * error, exit code 2), else MB_SUCCESS. The op checks again per grid
   * when it runs (mesh files, whose spacing is known only once read).
   * NULL: none. Not collective. */
  mb_error (*check_spacing)(const mb_stage *st, const char *grid, const double h[3]);
} mb_op_info;

/* A parameter's value as text for provenance and help ("0.5", "cotangent").
 * Not collective. */
void mb_param_format(const mb_param *p, const void *params, char *buf, size_t len);

/* Set every parameter of an op to its default (required ones to 0) and call
 * its init. params must hold op->params_size bytes. Not collective. */
void mb_op_defaults(const mb_op_info *op, void *params);

/* Parse text into parameter p of params: INT needs a decimal integer, REAL
 * a number, NAME one of p->names; then the range. On failure writes the
 * message body ("value -3 out of range [0, 100000000]", "'half' is not a
 * number", "'cotan' is not one of uniform, cotangent") and returns 1.
 * Not collective. */
int mb_param_parse(const mb_param *p, const char *text, void *params, char *msg, size_t len);

/* The provenance line of a stage: "taubin lambda=0.5 mu=-0.53 ...", every
 * parameter in table order (REAL with 17 significant digits). */
void mb_stage_describe(const mb_stage *stage, char *buf, size_t len);

/* Index of a parameter by key, or -1. */
int mb_op_param_index(const mb_op_info *op, const char *key);

/* Entry point of an op for a resolved backend, or NULL (the prepare: also
 * NULL where the op has no prepared_free). Not collective. */
mb_op_run_fn mb_op_run_for(const mb_op_info *op, const mb_backend *backend);
mb_op_run_partitioned_fn mb_op_run_partitioned_for(const mb_op_info *op,
                                                   const mb_backend *backend);
mb_op_prepare_fn mb_op_prepare_for(const mb_op_info *op, const mb_backend *backend);

/* How an op runs partitioned: its split where it has a partitioned entry on
 * some backend, else MB_SPLIT_NONE. Not collective. */
mb_split mb_op_partitioned(const mb_op_info *op);

#ifdef __cplusplus
}
#endif
#endif
