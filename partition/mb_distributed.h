/* meshbatch: one mesh distributed over the ranks of a communicator.
 *
 * Ties the pieces of partition/ together: a vertex partition (given, METIS
 * on rank 0 and broadcast, or ParMETIS on all ranks), each rank's owned/ghost numbering in a
 * locality order (mb_local.h), the halo plan between the ranks (mb_halo.h),
 * and the local positions. Any job that updates per-vertex values with a
 * 1-ring stencil can run on it: update owned rows, exchange, repeat
 * (docs/architecture.md, "Partitioned runs").
 */
#ifndef MB_DISTRIBUTED_H
#define MB_DISTRIBUTED_H

#include <mpi.h>
#include <stdint.h>

#include "mb_adjacency.h"
#include "mb_mesh.h"
#include "mb_error.h"
#include "mb_halo.h"
#include "mb_local.h"
#include "mb_partition.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mb_distributed_mesh {
  MPI_Comm comm;            /* borrowed */
  int rank, size;
  int64_t nv;               /* vertices of the whole mesh */
  int32_t *part;            /* [nv] part (= owning rank) of every vertex, or NULL when
                               built from slabs (no rank holds it) (owned) */
  int64_t *vtxdist;         /* [size + 1] rank r's slab holds vertex rows
                               [vtxdist[r], vtxdist[r+1]): the slabs it was built from,
                               or blocks of nv / size rows (owned) */
  mb_local_domain *domain;  /* this rank's owned and ghost vertices (owned) */
  mb_halo *halo;            /* owner -> ghost exchange of 3 doubles per vertex (owned) */
  double *x;                /* [(nowned + nghost) * 3] local positions (owned) */
  int nfields;              /* per-vertex fields on the local rows */
  mb_field *fields;         /* [nfields]: data [(nowned + nghost) * ncomp] float64, owned rows
                               then ghosts (owned); brought from the slab by
                               mb_distributed_pull_fields, written back by
                               mb_distributed_to_slab */
  /* Owned faces (made by mb_distributed_pull_fields; none before): a face
   * belongs to the owner of its lowest-global-id vertex, so every face of
   * the mesh has exactly one owning rank and is written back exactly once. */
  int64_t nfaces;           /* faces this rank owns */
  int64_t *face_global;     /* [nfaces] their global face ids (rows of the whole
                               mesh), ascending (owned) */
  int64_t *face_offsets;    /* [nfaces + 1] corners of face f: [face_offsets[f],
                               face_offsets[f+1]) (owned) */
  int64_t *face_vertices;   /* [face_offsets[nfaces]] local vertex index (owned or
                               ghost row of x and fields) of each corner, in the
                               face's order; -1 for a corner that is not on this
                               rank (a polygon's corner not joined by an edge to
                               the owned vertex, at ghost depth 1) (owned) */
  int64_t *face_corners;    /* [face_offsets[nfaces]] global vertex id of each corner (owned) */
  int64_t *facedist;        /* [size + 1] rank r's slab holds face rows
                               [facedist[r], facedist[r+1]), or NULL before
                               mb_distributed_pull_fields (owned) */
  int nface_fields;         /* per-face fields on the owned faces */
  mb_field *face_fields;    /* [nface_fields]: data [nfaces * ncomp] float64 (owned);
                               brought from the slab (its float64 per-face fields)
                               by mb_distributed_pull_fields, written back by
                               mb_distributed_to_slab */
} mb_distributed_mesh;

/* Distribute a mesh that every rank holds (global adjacency and positions
 * xyz [nv, 3] on every rank). part [nv] gives the owning rank of every
 * vertex (read on rank 0 only), or NULL for METIS k-way with one part per
 * rank. Ghosts reach `depth` edges from the owned vertices (mb_local.h; the
 * op's mb_op_info.ghost_depth). Collective over comm. Errors (agreed on every rank): MB_ERR_ARG,
 * MB_ERR_MEMORY, MB_ERR_MPI, MB_ERR_UNSUPPORTED (METIS failure). */
mb_error mb_distributed_create(MPI_Comm comm, const mb_adjacency *global, const double *xyz,
                               const int32_t *part, int depth, mb_distributed_mesh **dm);

/* Distribute a mesh that no rank holds whole. Every rank passes its slab
 * (mb_collection_read_slab): rank r holds vertex rows [vertex_start,
 * vertex_start + rows->nv), the slabs of ranks 0, 1, ... following one
 * another, and any contiguous run of face rows. Then, without any rank
 * gathering the mesh:
 *   1. the vertex graph is built from the faces' edges, each edge sent to
 *      the rank whose slab holds its vertex;
 *   2. ParMETIS k-way partitions it in parallel (mb_partition_parmetis);
 *   3. every face migrates to the owners of its vertices and every owner
 *      fetches the positions and parts of the vertices of those faces;
 *   4. each rank builds its owned/ghost numbering (mb_local.h) from that
 *      patch of faces, in ascending global face order, so neighbour sums
 *      run in the same order as on one rank; then the halo plan.
 * The patch of a rank holds every face around its owned vertices, so
 * boundary flags match the whole mesh. Collective over comm. Errors (agreed
 * on every rank): MB_ERR_ARG (slabs not in rank order or not covering the
 * vertices), MB_ERR_MEMORY, MB_ERR_MPI, MB_ERR_UNSUPPORTED (no ParMETIS, or
 * depth other than 1: the patch holds the 1-ring only). With blocks != 0
 * step 2 is skipped: every rank owns the vertex rows of its slab (for rows
 * already in spatial order; no ParMETIS needed). */
mb_error mb_distributed_create_from_slab(MPI_Comm comm, const mb_mesh_slab *slab, int depth,
                                         int blocks, mb_distributed_mesh **dm);

/* A halo plan over this piece's owned and ghost vertices for `ncomp`
 * float64 values per vertex (dm->halo carries the 3 positions; an op that
 * exchanges other values per vertex makes its own). Collective over
 * dm->comm. The caller owns *halo (mb_halo_free).
 * Errors: MB_ERR_MPI, MB_ERR_MEMORY. */
mb_error mb_distributed_halo(const mb_distributed_mesh *dm, int ncomp, mb_halo **halo);

/* Send the owned values back to the slab that holds their rows:
 * slab->rows->xyz and every per-vertex field of slab->rows receive the
 * current positions and fields (dm->fields, by name; a field the op added
 * is made in the slab) of this rank's vertex rows [vtxdist[rank],
 * vtxdist[rank+1]) (slab->vertex_start must be vtxdist[rank]), so that all
 * ranks can write the mesh together in global vertex order
 * (mb_collection_write_slabs). Likewise, once mb_distributed_pull_fields
 * made the owned faces, every per-face field of dm->face_fields goes to
 * the face rows [facedist[rank], facedist[rank+1]) of the slab (by name;
 * made, zeroed, where the op added it), each face from its one owner; the
 * slab's other per-face fields (float32) stay as they are. Collective.
 * Errors (agreed on every rank): MB_ERR_ARG (the slab holds other rows),
 * MB_ERR_MPI, MB_ERR_MEMORY. */
mb_error mb_distributed_to_slab(const mb_distributed_mesh *dm, mb_mesh_slab *slab);

/* Bring every per-vertex field of this rank's slab (rows [vtxdist[rank],
 * vtxdist[rank+1]), float64) to the owned and ghost rows of dm->fields,
 * each local row asking the rank whose slab holds it. Then the owned
 * faces (dm->nfaces, dm->face_global, ...; the slabs' face rows must
 * follow one another in rank order and cover the mesh's faces): every face
 * row goes, through the home of its lowest-global-id vertex, to that
 * vertex's owner, with the values of every float64 per-face field of the
 * slab (dm->face_fields): an MPI_Allgather of the face ranges, one
 * exchange of the owned vertex ids (to their homes) and two of the face
 * rows (each an MPI_Alltoall of counts and an MPI_Alltoallv). Collective.
 * Errors (agreed on every rank): MB_ERR_ARG (the slab holds other rows,
 * or the face rows are not in rank order), MB_ERR_UNSUPPORTED (a float32
 * per-vertex field), MB_ERR_MPI, MB_ERR_MEMORY. */
mb_error mb_distributed_pull_fields(mb_distributed_mesh *dm, const mb_mesh_slab *slab);

/* A per-vertex field of ncomp float64 values on the owned and ghost rows,
 * zeroed, made (or, by name, reset) for an op to fill: *data [(nowned +
 * nghost) * ncomp] belongs to dm. Written back by mb_distributed_to_slab.
 * Not collective. Errors: MB_ERR_ARG, MB_ERR_MEMORY. */
mb_error mb_distributed_add_field(mb_distributed_mesh *dm, const char *name, int ncomp,
                                  double **data);

/* Index of dm's field named name, or -1. Not collective. */
int mb_distributed_field_index(const mb_distributed_mesh *dm, const char *name);

/* A per-face field of ncomp float64 values on the owned faces (dm->nfaces,
 * in dm->face_global order), zeroed, made (or, by name, reset) for an op to
 * fill: *data [dm->nfaces * ncomp] belongs to dm. An op reads or changes a
 * field the input carried through dm->face_fields[mb_distributed_face_field_index]
 * in place. Written back by mb_distributed_to_slab. Not collective; call
 * it on every rank (a rank without owned faces gets an empty field), so
 * that the ranks write the same fields. Errors: MB_ERR_ARG (no name,
 * ncomp < 1, or no owned faces made yet: mb_distributed_pull_fields),
 * MB_ERR_MEMORY. */
mb_error mb_distributed_add_face_field(mb_distributed_mesh *dm, const char *name, int ncomp,
                                       double **data);

/* Index of dm's per-face field named name, or -1. Not collective. */
int mb_distributed_face_field_index(const mb_distributed_mesh *dm, const char *name);

/* Quality of the partition in use: edge cut, owned-vertex imbalance and
 * empty parts, from each rank's owned rows (no global array needed).
 * Collective. Errors: MB_ERR_MPI. */
mb_error mb_distributed_quality(const mb_distributed_mesh *dm, mb_partition_quality *quality);

/* Free; NULL allowed. Not collective. */
void mb_distributed_free(mb_distributed_mesh *dm);

/* Time spent per part of the passes on this rank, seconds. */
typedef struct mb_pass_timing {
  int synchronize;     /* in: on the GPU, wait for every pass, so compute_s is
                          the kernels' time even without neighbours (benchmarks) */
  int64_t passes;
  double compute_s;    /* interior + halo-adjacent updates (on a GPU without
                          neighbours: the time to enqueue them) */
  double exchange_s;   /* packing, posting and waiting (not hidden by the interior work) */
  mb_halo_transport transport; /* out (GPU): MPI or NCCL, the one used */
  int pipelined;       /* out (GPU): the passes were not waited for one by one
                          (synchronize 0): compute_s and exchange_s are the host's
                          enqueue and exchange times, wall_s is what the passes took */
  double wall_s;       /* out: wall time of the passes, the device drained at the end
                          (0 where the op does not measure it) */
} mb_pass_timing;

/* What one rank reports about a partitioned run, per pass. */
typedef struct mb_rank_figures {
  double owned, ghosts, neighbors;
  double halo_bytes;    /* sent + received per pass */
  double compute_ms;    /* per pass, see mb_pass_timing */
  double exchange_ms;   /* per pass */
} mb_rank_figures;

/* Gather every rank's figures to rank 0: all [size] on rank 0 (may be NULL
 * elsewhere). Collective over the halo's communicator. Errors: MB_ERR_MPI. */
mb_error mb_partitioned_gather_figures(const mb_local_domain *domain, const mb_halo *halo,
                                       const mb_pass_timing *timing, mb_rank_figures *all);

#ifdef __cplusplus
}
#endif
#endif
