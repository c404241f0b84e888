/* meshbatch: one distributed domain for every way an op splits a dataset.
 *
 * After PETSc's DM: the runner asks for a domain of the split an op
 * declares (mb_op_info.split and ghost_depth) and the partitioner the job
 * names; the domain decides what each rank reads, partitions, numbers its
 * owned entities first and its ghosts after them, and builds the halo
 * plan. The op's partitioned entry works on the domain alone; the runner
 * then takes the domain's slab of rows back for the collective write. A
 * new split kind or ghost depth touches this file and the op, not the
 * runner (docs/architecture.md, "The distributed domain").
 *
 *   split      what it holds                                    partitioners
 *   VERTICES   dm: owned then ghost vertices (ghost_depth        metis (rank 0, whole mesh),
 *              edges), global ids, owners, the halo plan,        parmetis (slabs), blocks,
 *              positions and every per-vertex field on owned     or the job's partition file
 *              and ghost rows                                    (with metis)
 *   FACES      slab: this rank's block of rows; the op           metis, parmetis, blocks
 *              partitions the faces itself (Polylla)
 *   CELLS      cart: a Cartesian block of a grid with            the Cartesian decomposition
 *              ghost_depth ghost planes per face; slab: the
 *              block's points and fields
 *
 * The layer reads nothing itself (io is beside it, not below it): the
 * runner hands it an mb_domain_source, whose callbacks read the whole
 * dataset or a block of rows.
 */
#ifndef MB_DOMAIN_H
#define MB_DOMAIN_H

#include <mpi.h>
#include <stdint.h>

#include "mb_distributed.h"
#include "mb_cart.h"
#include "mb_error.h"
#include "mb_mesh.h"
#include "mb_op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a domain's rows come from (the runner's reader). Each callback
 * returns a dataset of the first stage's kind or an error whose message
 * names the input; callbacks are called on every rank in step, and the
 * domain agrees their errors. */
typedef struct mb_domain_source {
  void *ctx;            /* handed to every callback */
  int by_rows;          /* 1: read_info and read_rows work (an HDF5 collection): no rank needs
                           the whole dataset */
  const char *name;     /* the dataset's name, for the log (borrowed) */
  const char *path;     /* where it is read from, for messages (borrowed) */
  /* The whole dataset, on every rank (owned by the caller after). */
  mb_error (*read_whole)(void *ctx, mb_mesh **whole);
  /* by_rows: its kind, vertices (grid: points) and faces, grid shape. */
  mb_error (*read_info)(void *ctx, mb_kind *kind, int64_t *nv, int64_t *nf, int64_t shape[3]);
  /* by_rows: vertex rows [v0, v0 + nvrows) and face rows [f0, f0 + nfrows). */
  mb_error (*read_rows)(void *ctx, int64_t v0, int64_t nvrows, int64_t f0, int64_t nfrows,
                        mb_mesh_slab *slab);
  /* by_rows, grids: the block of points [lo, lo + n) per axis (z, y, x). */
  mb_error (*read_block)(void *ctx, const int64_t lo[3], const int64_t n[3], mb_mesh_slab *slab);
  /* Optional (NULL: none): called once on every rank in step, when the
   * rows (or the whole dataset) are read and agreed and before the domain
   * partitions or builds anything (the runner waits there for its device,
   * which initialised while the rows were read). Its error is agreed. */
  mb_error (*rows_read)(void *ctx);
} mb_domain_source;

/* What to build. */
typedef struct mb_domain_spec {
  mb_split split;              /* not MB_SPLIT_NONE */
  int depth;                   /* ghost depth (VERTICES, edges) or width (CELLS, planes), >= 1 */
  mb_partitioner partitioner;  /* VERTICES and FACES */
  const char *partition_file;  /* VERTICES with metis: a partition file (meshbatch partition)
                                  to use where it names this dataset; NULL: none */
} mb_domain_spec;

typedef struct mb_domain {
  mb_split split;
  MPI_Comm comm;               /* borrowed */
  int rank, size;
  mb_partitioner partitioner;
  int depth;
  /* This rank's rows of the dataset, in whole-dataset row order: the input's
   * block on entry to the op, the output's block after mb_domain_finish
   * (what the ranks write together). FACES: the op replaces slab.rows. */
  mb_mesh_slab slab;
  mb_distributed_mesh *dm;     /* VERTICES (owned), else NULL */
  mb_cart *cart;               /* CELLS (owned), else NULL */
} mb_domain;

/* Build the domain of one dataset for spec over the ranks of comm, reading
 * through src: VERTICES reads the whole mesh on every rank and partitions
 * it with METIS on rank 0 (or the partition file, or blocks), or, with
 * parmetis, or blocks on a source read by rows, each rank's block of rows
 * and ParMETIS over all ranks (mb_distributed_create_from_slab); then
 * every per-vertex field comes to the owned and ghost rows
 * (mb_distributed_pull_fields). FACES reads this rank's block of rows
 * (by rows where the partitioner is parmetis or blocks and the source
 * allows, else cut from the whole). CELLS makes the Cartesian plan
 * (mb_cart_create with depth ghost planes, every axis periodic: the
 * boundary rule is the op's, and a periodic plan serves both) and reads
 * the block.
 * Collective over comm; errors agreed on every rank. The caller frees
 * *domain with mb_domain_free. Errors: MB_ERR_ARG (a partition file that
 * does not fit, a grid too small for the ranks, a dataset of the wrong
 * kind), those of src's callbacks, MB_ERR_MEMORY, MB_ERR_MPI,
 * MB_ERR_UNSUPPORTED (ParMETIS absent, depth > 1 with parmetis). */
mb_error mb_domain_create(MPI_Comm comm, const mb_domain_spec *spec, const mb_domain_source *src,
                          mb_domain **domain);

/* After the op: bring the domain's values back into its slab (VERTICES:
 * the positions and every per-vertex field of the owned rows, fields the
 * op added included, go to the rank that holds their rows; FACES and
 * CELLS: the slab is the op's output already). Collective; errors agreed.
 * Errors: MB_ERR_MPI, MB_ERR_MEMORY. */
mb_error mb_domain_finish(mb_domain *domain);

/* Take the domain's slab (the caller owns slab->rows after; the domain
 * keeps none). Not collective. */
void mb_domain_take_slab(mb_domain *domain, mb_mesh_slab *slab);

/* Log the split's figures on rank 0 (VERTICES: partition quality and
 * every rank's halo and timings, as `[partition] ...` lines; CELLS, under
 * -v only: the blocks and every rank's owned and ghost points, neighbours
 * and halo bytes per time step; FACES: nothing). name: the dataset's. timing: what the op
 * filled (may be NULL). gpu: the halo travelled between GPUs (its
 * transport is named). Collective. Errors: MB_ERR_MPI, MB_ERR_MEMORY. */
mb_error mb_domain_report(const mb_domain *domain, const char *name,
                          const mb_pass_timing *timing, int gpu);

/* This rank's rows of a dataset written by a partitioned run, to read it
 * back (a checkpoint): the rank's Cartesian block of a grid of shape[3]
 * (the blocks mb_cart_dims gives) in lo/n, else even blocks of nv vertex
 * and nf face rows in v0/nvrows and f0/nfrows. Collective over comm (a
 * grid's plan is made and freed). Errors: MB_ERR_MPI, MB_ERR_ARG. */
mb_error mb_domain_rows(MPI_Comm comm, mb_kind kind, int64_t nv, int64_t nf,
                        const int64_t shape[3], int64_t lo[3], int64_t n[3], int64_t *v0,
                        int64_t *nvrows, int64_t *f0, int64_t *nfrows);

/* Free a domain and everything it owns (the slab's rows too, unless
 * taken); NULL allowed. Not collective. */
void mb_domain_free(mb_domain *domain);

#ifdef __cplusplus
}
#endif
#endif
