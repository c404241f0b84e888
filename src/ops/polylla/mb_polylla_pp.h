/* meshbatch: what the two paths of partitioned Polylla share (private to
 * src/ops/polylla/): the general path (mb_polylla_partitioned.c: dual
 * graph, partition, regions over the halo, stitch) and the slab path
 * (mb_polylla_slab.c: each rank meshes its own rows, only the regions that
 * cross the cut move). docs/architecture.md, "Partitioned Polylla". */
#ifndef MB_POLYLLA_PP_H
#define MB_POLYLLA_PP_H

#include <mpi.h>
#include <stdint.h>

#include "mb_error.h"
#include "mb_mesh.h"
#include "mb_polylla.h"
#include "mb_polylla_partitioned.h"

/* In a function with `int bad`, `mb_error err`, `MPI_Comm comm` and a
 * `done:` label: allocate n elements (at least one) or note the failure in
 * bad; then agree on it before the next collective step. */
#define PP_ALLOC(ptr, n)                                                         \
  do {                                                                           \
    (ptr) = malloc(sizeof(*(ptr)) * (size_t)((n) > 0 ? (n) : 1));                \
    if (!(ptr)) bad = 1;                                                         \
  } while (0)

/* Agree on a local failure before the next collective step. */
#define PP_AGREE(msg)                                                            \
  do {                                                                           \
    if (bad) err = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, msg); \
    MB_CALL_GOTO(err, done, mb_agree(comm, err));                                \
  } while (0)

/* Order of int64_t (qsort). */
static inline int mb_pp_cmp_i64(const void *a, const void *b) {
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Index of key in sorted a [n], or -1. */
static inline int64_t mb_pp_find_i64(const int64_t *a, int64_t n, int64_t key) {
  int64_t lo = 0, hi = n - 1;
  while (lo <= hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (a[mid] == key) return mid;
    if (a[mid] < key) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/* Union-find root of i (parent [n], halving the path on the way). */
static inline int64_t mb_pp_uf_find(int64_t *parent, int64_t i) {
  while (parent[i] != i) {
    parent[i] = parent[parent[i]];
    i = parent[i];
  }
  return i;
}

/* A triangle on its way to another rank. */
typedef struct pp_tri {
  int64_t gid;          /* face row of the whole mesh */
  int64_t v[3];         /* global vertex ids, input corner order */
  double xy[6];         /* their x, y */
  int64_t nbr[3];       /* face row across (v_k, v_{k+1}), -1 on the boundary */
  int32_t nbr_owner[3]; /* its owner, -1 on the boundary */
  int32_t crossing;     /* stitch: its region crosses the cut */
} pp_tri;

/* A polygon on its way to its rows of the output. */
typedef struct pp_poly {
  int64_t head; /* global id of its smallest half-edge */
  int64_t n;    /* vertices */
} pp_poly;

/* One partitioned run on one rank. */
typedef struct pp_state {
  MPI_Comm comm;
  int rank, size;
  const char *name;
  mb_polylla_ties ties;
  mb_polylla_rank_figures fig;
  double mark_wall, mark_cpu, mark_minflt; /* where the current step began */
  double trace_wall;                       /* the last mb_pp_trace (s), 0 before it */
} pp_state;

/* The clocks of a step: wall (s), process CPU (s, getrusage: all
 * threads), minor page faults. Not collective; no errors. */
void mb_pp_clocks(double *wall, double *cpu, double *minflt);

/* End step k (MB_PP_STEP_*): its figures (ms, CPU ms, faults) add what
 * passed since the mark; the next step begins now. Not collective; no
 * errors. */
void mb_pp_step_end(pp_state *s, int k);

/* Where MB_POLYLLA_TRACE is set: print "[rank r] partitioned Polylla:
 * WHAT X ms" to stderr, X the wall time since the previous call; what
 * NULL only marks the time. A diagnostic of the steps' parts; not collective; no
 * errors. */
void mb_pp_trace(pp_state *s, const char *what);

/* Order of pp_tri by gid (qsort). */
int mb_pp_cmp_tri(const void *a, const void *b);

/* The backend (cuda: mb_polylla_cuda, else mb_polylla_cpu) on whole
 * regions: tri [n] sorted by gid, numbered locally in the order of their
 * triangle and vertex ids; *poly (global vertex ids) and *heads [poly->nf]
 * (global half-edge ids 3 gid + k) are new, owned by the caller; NULL where
 * n == 0. Not collective. Errors: those of the backend, its messages
 * naming the triangle's row of the whole mesh; MB_ERR_MEMORY. */
mb_error mb_pp_mesh(pp_state *s, const pp_tri *tri, int64_t n, const mb_polylla_opts *opts,
                    int cuda, mb_mesh **poly, int64_t **heads, mb_polylla_stats *st);

/* The output of this rank: out (polygons2d, its faces the rows
 * [first, first + out->nf) of the canonical order; its vertex_count field
 * set) takes the input's vertex rows over and replaces slab->rows; the
 * attributes get the global figures totals [5] (polygons, frontier edges,
 * barrier-edge tips, polygons repaired, pinches split). Not collective;
 * *out is consumed on success. Errors: MB_ERR_MEMORY. */
mb_error mb_pp_finish(mb_mesh_slab *slab, mb_mesh **out, int64_t first, const int64_t totals[5]);

/* The slab path: where partitioner is blocks and every rank's face rows
 * use a narrow window of vertex ids and meet the other ranks' rows along
 * few edges, Polylla runs on each rank's rows as they are, the regions
 * that cross the cut move to the owner of their smallest triangle, and
 * *taken = 1 with slab holding this rank's output (as
 * mb_polylla_partitioned). Otherwise, or where the rows are not a valid
 * triangulation (the general path then names the fault in the one-rank
 * words), *taken = 0 and slab is untouched. Collective; *taken agreed.
 * Errors: MB_ERR_MPI, MB_ERR_MEMORY (agreed). */
mb_error mb_pp_slab(pp_state *s, mb_mesh_slab *slab, const mb_polylla_opts *opts, int cuda,
                    int *taken);

#endif
