/* meshbatch: graph partitioning of one mesh over ranks (METIS).
 *
 * The mesh is split by vertices: METIS k-way (Karypis & Kumar, "A fast and
 * high quality multilevel scheme for partitioning irregular graphs", SIAM J.
 * Sci. Comput. 20(1), 1998) on the vertex adjacency graph, with unit vertex
 * and edge weights, so every part owns about nv / k vertices and the edge
 * cut approximates the halo size. Faces need no owner: a rank smooths the
 * vertices it owns and sees the faces around them. METIS's idx_t width is
 * recorded at configure time (MESHBATCH_METIS_IDXTYPEWIDTH) and checked at
 * the boundary.
 */
#ifndef MB_PARTITION_H
#define MB_PARTITION_H

#include <mpi.h>
#include <stdint.h>

#include "mb_adjacency.h"
#include "mb_error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Quality of a vertex partition. */
typedef struct mb_partition_quality {
  int nparts;
  int64_t edge_cut;      /* undirected edges whose ends lie in different parts */
  int64_t max_owned;     /* largest part */
  double mean_owned;     /* nv / nparts */
  double imbalance;      /* max_owned / mean_owned (1.0 is perfect) */
  int nempty;            /* parts that own no vertex */
} mb_partition_quality;

/* Partition the vertices of adj into nparts parts: part[nv] receives a part
 * in [0, nparts) for every vertex. nparts == 1 gives all zeros; nparts >= nv
 * gives vertex i to part i (the other parts stay empty). Deterministic for a
 * given graph (fixed METIS seed). Not collective (call it on one rank and
 * broadcast, or on every rank). Errors: MB_ERR_ARG (nparts < 1, graph too
 * large for idx_t), MB_ERR_MEMORY, MB_ERR_UNSUPPORTED (METIS failure). */
mb_error mb_partition_metis(const mb_adjacency *adj, int nparts, int32_t *part);

/* Partition a graph that is distributed over the ranks of comm by blocks of
 * vertices, in parallel, through the ParMETIS v3 interface (ParMETIS_V3_PartKway;
 * Karypis & Kumar, "Parallel multilevel k-way partitioning scheme for
 * irregular graphs", SC 1996) as PT-Scotch provides it (Chevalier &
 * Pellegrini, Parallel Computing 34(6-8), 2008). No rank sees the whole graph.
 *   vtxdist [size + 1]   rank r holds the rows of vertices [vtxdist[r], vtxdist[r+1]);
 *                        the same array on every rank
 *   xadj [nlocal + 1], adjncy [xadj[nlocal]]  this rank's rows: global ids of
 *                        the neighbours, symmetric over the whole graph, no self loops
 *   part [nlocal]        receives the part in [0, nparts) of every local vertex
 * Unit vertex and edge weights, allowed imbalance 1.05. nparts == 1 gives all
 * zeros; a graph with no more vertices than parts gives vertex g to part g;
 * blocks with no vertex (which ParMETIS does not accept) fall back to a block
 * partition. PT-Scotch runs threads that call MPI: MPI must have been
 * initialised with MPI_THREAD_MULTIPLE (the meshbatch command does so when
 * built with ParMETIS). Collective over comm. Errors (agreed on every rank): MB_ERR_ARG
 * (graph too large for the library's integer width), MB_ERR_MEMORY,
 * MB_ERR_UNSUPPORTED (built without ParMETIS, MPI without MPI_THREAD_MULTIPLE, or the
 * library failed). */
mb_error mb_partition_parmetis(MPI_Comm comm, const int64_t *vtxdist, const int64_t *xadj,
                               const int64_t *adjncy, int nparts, int32_t *part);

/* Measure a partition: edge cut, owned-vertex imbalance, empty parts. */
void mb_partition_measure(const mb_adjacency *adj, int nparts, const int32_t *part,
                          mb_partition_quality *quality);

#ifdef __cplusplus
}
#endif
#endif
