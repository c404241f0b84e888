/* meshbatch: Polylla on one triangulation split over the ranks (the polylla
 * op's partitioned form; docs/architecture.md, "Partitioned Polylla"). */
#ifndef MB_POLYLLA_PARTITIONED_H
#define MB_POLYLLA_PARTITIONED_H

#include <mpi.h>

#include "mb_error.h"
#include "mb_mesh.h"
#include "mb_op.h"
#include "mb_polylla.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The host steps of a partitioned run, in order: coordinates and dual graph;
 * partition and triangles to their owners; label; regions; stitch (regions
 * that cross the cut to their owner); mesh (the backend); output (polygons
 * merged into their rows). Indices of the step_* figures. */
enum {
  MB_PP_STEP_DUAL,
  MB_PP_STEP_DISTRIBUTE,
  MB_PP_STEP_LABEL,
  MB_PP_STEP_REGIONS,
  MB_PP_STEP_STITCH,
  MB_PP_STEP_MESH,
  MB_PP_STEP_OUTPUT,
  MB_PP_NSTEPS
};

/* What one rank did in a partitioned Polylla run. Times in ms. Every
 * member is a double (the report gathers the struct as doubles). */
typedef struct mb_polylla_rank_figures {
  double owned;          /* triangles owned after partitioning */
  double ghosts;         /* ghost triangles across the cut (the halo) */
  double meshed;         /* triangles meshed here (owned regions, stitched ones whole) */
  double polygons_local; /* polygons of regions that lie in this rank alone */
  double polygons_stitched; /* polygons of regions that crossed the cut, made here */
  double migrated;       /* triangles sent to the owner of their region */
  double cc_rounds;      /* halo exchanges of the connected-components pass */
  double bytes;          /* bytes sent + received, all phases */
  double ms_distribute;  /* coordinates, dual graph, partition, triangles to owners */
  double ms_label;       /* longest edges, halo exchange, frontier edges */
  double ms_regions;     /* connected components of regions over the ranks */
  double ms_stitch;      /* regions that cross the cut sent to their owner */
  double ms_mesh;        /* Polylla on the rank's whole regions (the backend call) */
  double ms_phases;      /* of which label + repair + traversal (CUDA: the kernels) */
  double peak_rss_mb;    /* the process's peak resident memory so far, MB (2^20 bytes) */
  double start_rss_mb;   /* its resident memory at the program's start (mb_rss_start_mb) */
  double share_mb;       /* the rank's share of the input: its rows as given (face offsets
                            and indices, 8 + 24 B a triangle; positions, 24 B a vertex)
                            plus its ghosts (24 B of position and an 8 B id each), MB */
  double ms_output;      /* global heads, polygons to their rows of the output */
  double step_ms[MB_PP_NSTEPS];     /* wall time of each host step (ms) */
  double step_cpu_ms[MB_PP_NSTEPS]; /* the process's user + system CPU time in it
                                       (getrusage; all its threads), ms */
  double step_minflt[MB_PP_NSTEPS]; /* minor page faults in it (getrusage) */
} mb_polylla_rank_figures;

/* Polylla on a triangulation held in slabs by the ranks of comm. On entry
 * slab holds this rank's block of vertex rows and face rows of the input
 * (kind triangulation2d, triangles, global vertex ids; the blocks follow
 * one another in rank order). The triangles are partitioned on the dual
 * graph (mb_faces_partition: ParMETIS on all ranks, METIS on rank 0, or
 * the blocks of rows as they are), every
 * terminal-edge region that crosses the cut is moved whole to one rank,
 * each rank runs the per-mesh backend (cuda: mb_polylla_cuda, else
 * mb_polylla_cpu) on its whole regions, and the polygons are sent to
 * their rows of the output. On return slab holds this rank's block of the
 * output (kind polygons2d, the same vertex rows, the polygon rows
 * [face_start, face_start + nf) of the canonical order of mb_polylla.h,
 * field vertex_count, the attributes of a one-rank run with the global
 * figures): the output is bitwise the one-rank output. fig (may be NULL)
 * receives this rank's figures. opts may be NULL (defaults). Collective
 * over comm; errors are agreed on every rank.
 * Errors: MB_ERR_ARG (not a triangulation), MB_ERR_FORMAT (degenerate
 * triangle, non-manifold edge, cycle of ties; the message names the
 * triangle's row of the whole mesh), MB_ERR_MEMORY, MB_ERR_MPI, those of
 * the partitioner and the backend. */
mb_error mb_polylla_partitioned(MPI_Comm comm, mb_partitioner partitioner,
                                const mb_polylla_opts *opts, int cuda, mb_mesh_slab *slab,
                                mb_polylla_rank_figures *fig);

/* Gather every rank's figures to rank 0 and log them there, a line per
 * rank (MB_LOG_NORMAL), then a line per rank of the host steps (wall ms,
 * CPU ms, thousands of minor page faults). Collective. Errors: MB_ERR_MPI, MB_ERR_MEMORY. */
mb_error mb_polylla_figures_report(MPI_Comm comm, const char *name,
                                   const mb_polylla_rank_figures *fig);

/* `meshbatch bench polylla ...` (mb_polylla_bench.c); argv[0] = "polylla".
 * Collective over MPI_COMM_WORLD; returns the exit code. */
int mb_polylla_bench(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif
