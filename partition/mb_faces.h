/* meshbatch: a triangulation split over the ranks by its triangles.
 *
 * The vertex partition of mb_distributed.h suits ops that update values
 * per vertex. An op whose unit of work is the triangle (Polylla) splits
 * the triangles instead, on the dual graph (triangles joined across their
 * shared edges), and works from each rank's slab of rows:
 *
 *   1. mb_records_exchange   send fixed-size records to ranks (all-to-all)
 *   2. mb_block_fetch        read rows of a table held in rank blocks
 *   3. mb_faces_dual         the triangle across each edge (rendezvous on
 *                            the edge's smaller vertex: no rank holds the mesh)
 *   4. mb_faces_partition    METIS on rank 0 or ParMETIS on all ranks, on the
 *                            dual graph
 * and the halo plan of mb_halo.h over owned and ghost triangles (a plan knows
 * only global ids and owners, so triangles serve as well as vertices).
 *
 * Blocks: rank r holds rows [starts[r], starts[r + 1]) of a table of
 * starts[size] rows; starts is the same on every rank (mb_block_starts).
 * Message counts are MPI ints of records (a contiguous datatype of the
 * record's width): an exchange is limited to INT_MAX records sent and
 * received per rank, checked (MB_ERR_ARG).
 */
#ifndef MB_FACES_H
#define MB_FACES_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "mb_error.h"
#include "mb_mesh.h"
#include "mb_op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* starts[size + 1] from each rank's first row `start` and row count `n`
 * (blocks must follow one another in rank order). Collective.
 * Errors: MB_ERR_MPI, MB_ERR_ARG (blocks not contiguous in rank order). */
mb_error mb_block_starts(MPI_Comm comm, int64_t start, int64_t n, int64_t *starts);

/* The block (rank) holding row g of a table split by starts [size + 1]. */
int mb_block_owner(const int64_t *starts, int size, int64_t g);

/* Send n records of `width` bytes, record i to rank dest[i] (0 <= dest <
 * size). On return *recv (malloc'd, owned by the caller, never NULL) holds
 * the *nrecv records sent to this rank, by source rank, each source's in
 * its send order; from[] (may be NULL; else malloc'd [*nrecv], owned by the
 * caller) the source rank of each. *bytes (may be NULL) adds the bytes this
 * rank sent to and received from other ranks. Records to this rank itself
 * are copied once into the receive buffer, never through MPI. Collective
 * (MPI_Alltoall + MPI_Alltoallv).
 * Errors: MB_ERR_MEMORY, MB_ERR_MPI, MB_ERR_ARG (over INT_MAX records). */
mb_error mb_records_exchange(MPI_Comm comm, int64_t n, const int *dest, size_t width,
                             const void *recs, int64_t *nrecv, void **recv, int **from,
                             double *bytes);

/* Fetch rows ids[0..n) (global rows, any order, repeats allowed) of a table
 * split over the ranks by starts: this rank's rows are table
 * [(starts[rank+1] - starts[rank]) * width bytes]; out [n * width] receives
 * them in the order of ids. Collective. Errors: those of
 * mb_records_exchange, MB_ERR_ARG (a row outside [0, starts[size])). */
mb_error mb_block_fetch(MPI_Comm comm, const int64_t *starts, size_t width, const void *table,
                        int64_t n, const int64_t *ids, void *out, double *bytes);

/* The dual graph of a triangulation held in slabs: for this rank's face
 * rows (slab->rows, all triangles, global vertex ids), nbr [3 * nf_local]
 * receives the global face row across edge (v_k, v_{k+1 mod 3}) of each,
 * -1 on the boundary. Edges are matched by their vertex pair (either
 * direction) at the rank whose vertex block (vstarts) holds the smaller
 * vertex: a rank's half-edges whose smaller vertex is in its own block are
 * matched in place (no record), only the others are sent; memory and work
 * are proportional to the rank's face rows, vertex block and what it
 * receives. Collective. Errors (agreed on every rank): MB_ERR_FORMAT (an edge
 * in more than two triangles, naming a triangle by its 0-based row),
 * MB_ERR_MEMORY, MB_ERR_MPI. */
mb_error mb_faces_dual(MPI_Comm comm, const mb_mesh_slab *slab, const int64_t *vstarts,
                       int64_t *nbr, double *bytes);

/* Partition the triangles on the dual graph into size parts, one per rank:
 * fstarts [size + 1] splits the face rows, nbr [3 * nlocal] is
 * mb_faces_dual's, part [nlocal] receives the owner of each local face.
 * MB_PARTITIONER_PARMETIS: ParMETIS (PT-Scotch) on all ranks, no rank sees
 * the graph; MB_PARTITIONER_METIS: METIS k-way on rank 0 with the graph
 * gathered there (where every rank has read the mesh anyway);
 * MB_PARTITIONER_BLOCKS: every face stays on its rank (nbr unused). The
 * METIS and ParMETIS parts are
 * then renamed so that each rank keeps as much of its own block as it can
 * (greedy on the overlap counts). Unit weights;
 * Karypis & Kumar 1998 (METIS), 1996 (ParMETIS). Collective. Errors
 * (agreed): those of mb_partition_metis / mb_partition_parmetis,
 * MB_ERR_MEMORY, MB_ERR_MPI. */
mb_error mb_faces_partition(MPI_Comm comm, const int64_t *fstarts, const int64_t *nbr,
                            mb_partitioner partitioner, int32_t *part, double *bytes);

#ifdef __cplusplus
}
#endif
#endif
