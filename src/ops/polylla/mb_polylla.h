/* meshbatch: Polylla polygonal meshing of planar triangulations.
 *
 * Method: S. Salinas-Fernandez, N. Hitschfeld-Kahler, A. Ortiz-Bernardin,
 * H. Si, "POLYLLA: polygonal meshing algorithm based on terminal-edge
 * regions", Engineering with Computers 38 (2022), sections 3.1-3.4; GPU
 * form after S. Salinas-Fernandez et al., "GPolylla: fully GPU-accelerated
 * polygonal mesh generator", 2023.
 *
 * The exact rules below are shared by the CPU backend (mb_polylla_cpu.c)
 * and the CUDA backend (cuda/polylla/), which must give bitwise identical
 * polygon meshes.
 *
 * Half-edges. Triangle t (0-based, input order) with vertices (a, b, c) is
 * first oriented counter-clockwise: if orient(a, b, c) < 0 its vertices
 * are taken as (a, c, b); orient == 0 (collinear or repeated vertices) is
 * an error (MB_ERR_FORMAT naming the triangle). With the oriented vertices
 * (v0, v1, v2), half-edge h = 3 t + k runs from v_k to v_{(k+1) mod 3};
 * next(h) = 3 t + (k + 1) mod 3, prev(h) = 3 t + (k + 2) mod 3. twin(h) is
 * the half-edge of the neighbouring triangle running the other way, -1 on
 * the boundary. Twins are found by sorting half-edges on their vertex pair,
 * never by a hash. An edge used by more than two triangles, or twice in
 * the same direction, is an error (MB_ERR_FORMAT: not a planar manifold
 * triangulation). orient(a, b, c) = (xb - xa) (yc - ya) - (yb - ya) (xc - xa)
 * in float64 without fused multiply-add; "orient == 0" includes a NaN
 * result (anything neither < 0 nor > 0). A vertex index out of range and a
 * non-finite coordinate of a triangle's vertex are MB_ERR_FORMAT errors
 * too. Messages name the triangle by its 0-based index and say so; where
 * there are several problems, the first of: index out of range, non-finite
 * coordinate, degenerate triangle, bad edge, each in triangle order (for
 * an edge, the triangle of its smallest half-edge id).
 *
 * Label phase (paper 3.1-3.2). The squared length of an edge is
 * dx * dx + dy * dy in float64, evaluated as written (no fused multiply-add,
 * dx = x_head - x_tail with the vertices in increasing index order, so both
 * half-edges give the same value). Edges are totally ordered by the key
 * (squared length, max vertex index, min vertex index), compared
 * lexicographically: equal lengths are decided by the larger vertex index
 * of the edge, then the smaller. The longest edge of a triangle is its edge
 * of largest key (the rule `ties: key`, the default). Under the rule
 * `ties: corners` the longest edge of a triangle is instead the first edge,
 * in half-edge order 3 t, 3 t + 1, 3 t + 2, whose squared length is the
 * largest: the reference code's rule (on counter-clockwise input, where its
 * corner order is this one). Both sides of an edge may then decide a tie
 * differently, and equally long longest edges can join triangles in a cycle
 * round a vertex, a region with no terminal edge; such input is refused
 * (MB_ERR_FORMAT naming the smallest triangle on such a cycle, see
 * mb_polylla_opts). An edge is a *frontier edge* when it is on the boundary
 * or is the longest edge of neither of its two triangles. Both half-edges
 * of an interior frontier edge are frontier half-edges; a boundary edge has
 * one. (Terminal edges, the longest edge of both triangles, and boundary
 * terminal edges are the seeds of the paper; every terminal-edge region
 * holds exactly one, which the traversal below never needs explicitly.)
 *
 * Repair phase (paper 3.4). A *barrier-edge tip* is an interior vertex
 * (one with no boundary edge) with exactly one incident frontier edge; the
 * edge is a barrier edge, with the same polygon on both sides.
 * Equivalently (the same set on any input accepted above): the target v of
 * a label-phase frontier half-edge g whose successor (traversal rule
 * below, on the label-phase frontier) is twin(g); the CPU backend finds
 * them so. Tips are repaired region by region (a region = a label-phase
 * polygon, which holds exactly one seed: the half-edge h < twin(h) of its
 * terminal edge, or its boundary terminal edge). The region's *start* is
 * the first frontier half-edge met turning clockwise from its seed, s =
 * next(twin(s)) (the seed itself for a boundary seed). Its label-phase
 * frontier half-edges are visited in successor order from the start's
 * successor round to the start itself, and for each g met that points to
 * a tip v, in that order: let `last` be the largest half-edge id leaving v
 * and e0 the first frontier half-edge met turning clockwise from `last`
 * (e_{i+1} = next(twin(e_i))), counting the middle edges this region has
 * added so far (so e0 is the barrier edge unless an earlier tip's middle
 * edge ends at v). With k = degree(v) - 1, walk on from e0 by
 * m = (k + 1) / 2 steps (integer division): when e0 is the barrier edge,
 * e_m is the middle of the k internal edges e_1 ... e_k. That edge becomes
 * a frontier edge (both half-edges) unless it is one already. Regions are disjoint, so they can
 * be repaired in any order and in parallel. Adding frontier edges never
 * makes a new tip, so one round leaves none. This follows the reference
 * CPU code's sequential repair (it walks a polygon from its seed's
 * frontier half-edge, takes e0 from the vertex's last half-edge and adds
 * each middle edge at once), except that the reference never tests the
 * start itself and leaves a tip it points to; here the start's tip comes
 * last and is repaired only if it still is a tip (an earlier middle edge
 * may have ended at it), so that no tip is left and the polygons are the
 * reference's wherever it leaves none.
 *
 * Traversal phase (paper 3.3). The successor of a frontier half-edge h is
 * found by turning around the vertex h points to: s = next(h); while s is
 * not a frontier half-edge, s = next(twin(s)). Successors link the frontier
 * half-edges into cycles, one per polygon, each going counter-clockwise
 * around its polygon (the polygon lies to the left of every half-edge).
 *
 * The triangles joined across non-frontier edges form a forest (each
 * triangle has one longest edge, and a cycle of such joins would need
 * cyclically increasing keys; under ties: corners, input where one would
 * form is refused), before and after repair; so each polygon
 * is one tree of triangles, a topological disk whose boundary is one
 * cycle, and polygons = triangles - non-frontier (internal) edges, which
 * sizes the output before the traversal.
 *
 * Pinch repair (after the traversal). The polygons above are disks, but
 * a polygon may touch itself at a vertex v: its list holds v twice, with
 * different neighbours (two fans of its triangles round v, "sectors",
 * separated by other polygons or by frontier edges with this polygon on
 * both sides, and joined by a path of its triangle tree that leaves v).
 * No edge at v separates two sectors, so the cut is made on that path.
 * In rounds: every polygon whose list (canonical order, o_0 ... o_{n-1})
 * holds a repeated vertex takes the smallest j with o_j = o_i for some
 * i < j; the sectors of visits i and j are the fans of the polygon's
 * triangles round v from the half-edges o_i -> o_{i+1} and o_j -> o_{j+1}
 * (s, twin(prev(s)), ... while prev(s) is not a frontier half-edge); of
 * the edges on the path of the polygon's tree between the two sectors
 * (unique: the polygon is a tree), the one of smallest key (squared
 * length, max vertex index, min vertex index: the neck) among those with
 * neither end occurring twice or more in the polygon's list (else among
 * all of them) becomes a frontier edge; so a keyhole, a frontier edge
 * with the polygon on both sides and both ends on its boundary, takes one
 * cut that frees both ends. The polygons are then traversed again in canonical order, and the
 * rounds repeat until no list repeats a vertex, so every output polygon is
 * simple. Each cut lies inside one polygon, so cuts of one round are
 * independent; the rule reads only keys and the canonical lists, so it
 * gives the same cuts in any numbering that keeps the order of the ids
 * (the partitioned run). Both backends cut on the host with the same
 * code (mb_polylla_pinch_pieces), so their outputs stay bitwise equal:
 * the CPU backend around it scans and merges on the host
 * (mb_polylla_split_pinches), the CUDA backend on the device.
 *
 * Canonical output. Each cycle's *head* is its smallest half-edge id. The
 * polygons are listed in increasing head id; polygon p lists the origins of
 * its half-edges starting from the head and following successors. The
 * vertices are those of the input, in their order (unused ones included).
 * This depends on neither backend nor rank count.
 *
 * Figures: frontier_edges counts edges (not half-edges) after repair;
 * barrier_edge_tips counts tips; polygons_repaired counts the label-phase
 * polygons (cycles of label-phase frontier half-edges) that hold at least
 * one tip; pinches_split counts the cuts of the pinch repair (frontier
 * edges and polygons include them).
 *
 * Input: kind MB_KIND_TRIANGULATION2D with every face a triangle and at
 * least one, else MB_ERR_ARG. A backend may refuse (MB_ERR_ARG) a mesh
 * whose half-edge or vertex ids do not fit its index type (the CPU
 * backend: 32-bit, at most INT32_MAX / 3 triangles and INT32_MAX vertices).
 */
#ifndef MB_POLYLLA_H
#define MB_POLYLLA_H

#include <stdint.h>

#include "mb_error.h"
#include "mb_mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Counts and per-phase wall times of one Polylla run (ms), from a
 * monotonic clock. Times that a backend does not measure are 0. A backend
 * that finds the tips inside the successor loop (the CPU backend) counts
 * that loop under ms_traversal and the middle edges and the successors
 * they change under ms_repair. ms_total covers the whole call: checks,
 * half-edges, phases and the output mesh (vertex copy, fields,
 * attributes). */
typedef struct mb_polylla_stats {
  int64_t triangles;
  int64_t polygons;
  int64_t frontier_edges;
  int64_t barrier_edge_tips;
  int64_t polygons_repaired;
  double ms_copy_in;    /* host -> device (CUDA) */
  double ms_halfedge;   /* orientation, twins */
  double ms_label;      /* longest edges, frontier half-edges */
  double ms_repair;     /* tips, middle edges */
  double ms_traversal;  /* successors, heads, canonical polygons */
  double ms_copy_out;   /* device -> host (CUDA) */
  double ms_kernels;    /* CUDA: label + repair + traversal, device time alone */
  double ms_total;      /* end to end, host arrays in to host arrays out */
  int64_t pinches_split; /* cuts of the pinch repair (see above) */
  int64_t boundary_edges; /* edges with one triangle (the triangulation's boundary) */
} mb_polylla_stats;

/* How the label phase breaks ties between equally long edges (above). */
typedef enum mb_polylla_ties {
  MB_POLYLLA_TIES_KEY = 0,     /* the edge key (length, max vertex, min vertex) */
  MB_POLYLLA_TIES_CORNERS = 1  /* the first in corner order (the reference code) */
} mb_polylla_ties;

/* A rank's rows of a larger triangulation (the partitioned run's slab
 * path). tri's vertex rows are the ids [start, start + tri->nv) of the
 * whole mesh; its faces use these and nghost other ids, the ghost
 * vertices: ghost_ids [nghost] (increasing, none in the rows' range) at
 * ghost_xyz [nghost, 3]. Face indices are ids of the whole mesh. Polylla
 * runs on the triangulation of the rows and the ghosts numbered in the
 * order of their ids (the only order it compares); the output's face
 * indices are ids again and its vertices tri's rows. An id neither a row
 * nor a ghost is an index out of range (MB_ERR_FORMAT). Borrowed. */
typedef struct mb_polylla_ids {
  int64_t start;
  int64_t nghost;
  const int64_t *ghost_ids;
  const double *ghost_xyz;
  /* NULL, or the rows' triangles as oriented [3 nf] in the local numbering
   * below, read instead of tri's faces (which the CPU backend may have
   * given up: mb_polylla_opts.consume_faces) */
  const int32_t *corners;
} mb_polylla_ids;

/* The first index of the increasing a [n] whose value is not below key (n
 * where none), by bisection. Not collective; no errors. */
static inline int64_t mb_polylla_lower(const int64_t *a, int64_t n, int64_t key) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (a[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The local numbering of mb_polylla_ids over nv rows: the ghosts below
 * start, the rows, the ghosts above. The helpers below take nbelow =
 * mb_polylla_ids_below(ids) (the ghosts below start, by bisection). Not
 * collective; no errors; O(log nghost) each. */
static inline int64_t mb_polylla_ids_below(const mb_polylla_ids *ids) {
  return mb_polylla_lower(ids->ghost_ids, ids->nghost, ids->start);
}

/* Local number of id g, or -1 where g is neither a row nor a ghost. Not
 * collective. */
static inline int64_t mb_polylla_ids_local(const mb_polylla_ids *ids, int64_t nbelow, int64_t nv,
                                           int64_t g) {
  if (g >= ids->start && g < ids->start + nv) return nbelow + (g - ids->start);
  int64_t lo = 0, hi = ids->nghost - 1;
  while (lo <= hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (ids->ghost_ids[mid] == g) return mid < nbelow ? mid : mid + nv;
    if (ids->ghost_ids[mid] < g) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/* The id of local number l (0 <= l < nv + nghost). Not collective. */
static inline int64_t mb_polylla_ids_global(const mb_polylla_ids *ids, int64_t nbelow, int64_t nv,
                                            int64_t l) {
  return l < nbelow ? ids->ghost_ids[l]
         : l < nbelow + nv ? ids->start + (l - nbelow)
                           : ids->ghost_ids[l - nv];
}

/* The position [3] (borrowed) of local number l; xyz: tri's rows [nv, 3].
 * Not collective. */
static inline const double *mb_polylla_ids_xyz(const mb_polylla_ids *ids, int64_t nbelow,
                                               int64_t nv, const double *xyz, int64_t l) {
  return l < nbelow ? ids->ghost_xyz + 3 * l
         : l < nbelow + nv ? xyz + 3 * (l - nbelow)
                           : ids->ghost_xyz + 3 * (l - nv);
}

/* Options of a Polylla run; NULL means all defaults (ties: key). */
typedef struct mb_polylla_opts {
  mb_polylla_ties ties;
  /* Optional output: where not NULL, *heads receives a new array (the
   * caller frees it) of each output polygon's head, its smallest half-edge
   * id 3 t + k (after orientation). The partitioned run maps them to the
   * whole mesh's ids. */
  int64_t **heads;
  /* 1: the output's positions are the input's array itself (poly->xyz ==
   * tri->xyz on success), not a copy: the caller then gives one of the two
   * up (sets tri->xyz = NULL before freeing tri), as a job does, whose
   * triangulation is freed once its polygons exist. Honoured by both
   * backends (a copy of nv x 24 B saved; the CPU backend on a rank's rows,
   * mb_polylla_opts.ids, shares the rows' positions). 0: a copy. On error
   * the input keeps its positions either way. */
  int share_xyz;
  /* NULL: tri is a whole triangulation. Else tri is a rank's rows of a
   * larger one (the partitioned run's slab path): see mb_polylla_ids. */
  const struct mb_polylla_ids *ids;
  /* Regions that continue past this triangulation (the partitioned run's
   * slab path): seeds [nseeds] are triangles (0-based rows of tri, any
   * order, repeats allowed) joined across one of their boundary edges to
   * a triangle held elsewhere, so that the terminal-edge region holding a
   * seed is incomplete here. Every such region is left out: none of its
   * polygons is output, and its barrier-edge tips, repaired polygons and
   * pinch cuts are not counted (stats and attributes count the regions
   * kept; frontier_edges and boundary_edges stay those of the whole
   * triangulation). Where left_out is not NULL, *left_out receives a new
   * array (the caller frees it) of the triangles left out, sorted, and
   * *nleft_out their number (0 and an empty array where nseeds == 0). A
   * region's extent is found across the label phase's non-frontier edges
   * (mb_polylla.h, "Label phase"), before the repair. */
  const int64_t *seeds;
  int64_t nseeds;
  int64_t **left_out;
  int64_t *nleft_out;
  /* With left_out: NULL, or *left_out_corners receives a new array [3
   * nleft] (the caller frees it) of the left-out triangles' corners as
   * oriented (counter-clockwise: (v0, v2, v1) where the input was
   * clockwise), in tri's numbering (with ids: the whole mesh's ids); a
   * backend that does not fill it leaves it NULL (the CUDA backend). */
  int64_t **left_out_corners;
  /* With ids, the CPU backend: NULL, or tri itself, whose faces the backend
   * may then free once it has read them (face_offsets and face_indices set
   * to NULL; nf kept), with rows_corners: a rank's rows then cost their
   * faces' memory (32 B a triangle) only until the half-edges' corners (12
   * B a triangle) exist. On success *rows_corners receives those corners
   * [3 nf] int32, the rows' triangles as oriented (counter-clockwise:
   * (v0, v2, v1) where the input was clockwise) in the local numbering of
   * ids (new, the caller frees them; NULL where the faces were kept), from
   * which the caller can give tri its faces back (mb_polylla_ids_faces).
   * Where the call fails, the backend gives the faces back itself (as
   * oriented), unless that allocation fails (they then stay NULL). The
   * CUDA backend ignores both (its *rows_corners stays NULL). */
  mb_mesh *consume_faces;
  int32_t **rows_corners;
} mb_polylla_opts;

/* The error of a cycle of longest edges under ties: corners (mesh name,
 * smallest triangle on the cycle), in both backends' words. */
#define MB_POLYLLA_TIE_CYCLE_MSG                                                          \
  "mesh '%s': under ties: corners the longest edges of triangle %lld (0-based) and its "  \
  "neighbours form a cycle of equally long edges round a vertex, a region with no "       \
  "terminal edge; use ties: key"

/* The longest edge of one triangle by the label rule above, for code that
 * sees triangles one by one (the partitioned run). v [3]: the triangle's
 * vertex ids in input corner order, in any numbering that keeps the order
 * of the mesh's ids; xy [6]: their x, y. Orientation as in the half-edge
 * rule (orient < 0: corners (v0, v2, v1)); e [2] receives the edge's ids,
 * e[0] < e[1]. Not collective; no errors (a degenerate triangle gives some
 * edge). */
void mb_polylla_longest_edge(const int64_t v[3], const double xy[6], mb_polylla_ties ties,
                             int64_t e[2]);

/* Polylla on the CPU (the reference backend; OpenMP where it pays).
 * tri: a mesh of kind MB_KIND_TRIANGULATION2D (every face a triangle,
 * coordinates [nv, 3] with z ignored), borrowed. On success *poly is a new
 * mesh of kind MB_KIND_POLYGONS2D owned by the caller, with tri's name,
 * index and vertices (copied, same order), faces in canonical order, a
 * per-face field "vertex_count" [nf, 1], and attributes "polygons",
 * "frontier_edges", "barrier_edge_tips", "polygons_repaired". stats may be
 * NULL; opts may be NULL (defaults), borrowed. Not collective.
 * Errors: MB_ERR_ARG (not a triangulation), MB_ERR_FORMAT (degenerate
 * triangle, non-manifold edge, under ties: corners a cycle of longest
 * edges; the message names the triangle), MB_ERR_MEMORY. */
mb_error mb_polylla_cpu(const mb_mesh *tri, const mb_polylla_opts *opts, mb_mesh **poly,
                        mb_polylla_stats *stats);

/* Fills *cand with a new array (the caller frees it; NULL where none) of
 * the triangles of the backend's input, increasing, whose three corners
 * are marked in in [nwords] (a bit per vertex of the local numbering:
 * vertex v is bit v % 64 of word v / 64), and *ncand with their number;
 * ctx the backend's. Returns MB_ERR_UNSUPPORTED where the backend cannot
 * (the pinch repair then scans on the host). */
typedef mb_error (*mb_polylla_corners_fn)(void *ctx, const uint64_t *in, int64_t nwords,
                                          int64_t **cand, int64_t *ncand);

/* The pieces of the pinched polygons (mb_polylla_pinch_pieces). */
typedef struct mb_polylla_pieces {
  int64_t n;      /* pieces */
  int64_t nsplit; /* cuts made */
  int64_t *off;   /* [n + 1] offsets into idx */
  int64_t *idx;   /* their vertices, in the numbering of the input's corners (mb_polylla_ids:
                     local) */
  int64_t *heads; /* [n] their heads, half-edges 3 t + k of the input, increasing */
} mb_polylla_pieces;

/* The core of the pinch repair (below): cut the pinched polygons (npin of
 * them: pin [npin] their polygon numbers, for messages; their vertex
 * lists pin_idx [pin_off [npin]] at offsets pin_off [npin + 1], in the
 * numbering of tri's corners: with ids, the local one) in rounds on the
 * submesh of their triangles (found by corners, or on the host where
 * corners is NULL or answers MB_ERR_UNSUPPORTED) and traverse them again.
 * *out is new (mb_polylla_pieces_free). Shared by the host's repair and
 * the CUDA backend's (which merges the pieces on the device). Not
 * collective. Errors: MB_ERR_MEMORY, MB_ERR_NUMERIC (internal
 * inconsistency), those of corners and mb_halfedge_build; *out empty on
 * error. */
mb_error mb_polylla_pinch_pieces(const mb_mesh *tri, const mb_polylla_ids *ids, int64_t npin,
                                 const int64_t *pin, const int64_t *pin_off,
                                 const int64_t *pin_idx, mb_polylla_corners_fn corners,
                                 void *corners_ctx, mb_polylla_pieces *out);

/* Free the arrays of pc and empty it. Not collective; no errors. */
void mb_polylla_pieces_free(mb_polylla_pieces *pc);

/* The pinch repair (above), the last step of both backends: where a
 * polygon of *poly lists a vertex twice, cut every pinched polygon and
 * traverse its pieces again, in rounds, on the submesh of the pinched
 * polygons' triangles (a region has no interior vertex, so they are the
 * triangles whose corners all lie on pinched polygons: one scan of the
 * corners finds them), and merge the pieces into *poly by their heads (the
 * canonical order). The cost beyond the scans is that of the pinched
 * polygons, and one copy of the output where there is a pinch. *poly is
 * replaced by the repaired mesh (same name, index, vertices; vertex_count;
 * attributes polygons and frontier_edges updated, barrier_edge_tips and
 * polygons_repaired kept). Sets the attribute "pinches_split" (0 where
 * there is no pinch, *poly then kept).
 * tri: the input triangulation (borrowed); ids: NULL, or tri's rows and
 * ghosts (mb_polylla_ids; tri's and *poly's face indices are then ids of
 * the whole mesh); *poly: the backend's output (owned by the caller,
 * replaced); heads: *heads [nf] the polygons' heads (mb_polylla_opts.heads,
 * increasing), replaced by the new ones and the caller's to free (heads
 * NULL or *heads NULL: a pinch is MB_ERR_ARG).
 * stats: NULL, or updated (polygons, frontier_edges, pinches_split). Not
 * collective. Errors: MB_ERR_ARG (no heads), MB_ERR_MEMORY, MB_ERR_NUMERIC
 * (internal inconsistency), those of mb_halfedge_build; on error *poly is
 * kept. Used by the CPU backend; the CUDA backend runs the same core
 * (mb_polylla_pinch_pieces) between its kernels and its copy out. */
mb_error mb_polylla_split_pinches(const mb_mesh *tri, const mb_polylla_ids *ids, mb_mesh **poly,
                                  int64_t **heads, mb_polylla_stats *stats);

/* Whether the vertex list idx [n] names a vertex twice (a pinched
 * polygon): pairwise for n <= 32 (no scratch), else through a sorted copy
 * in *buf [*cap] (grown by realloc as needed, the caller's to free; *buf
 * NULL and *cap 0 at first). Returns 1 or 0, -1 when out of memory. Both
 * backends' check (the CPU's scan of every polygon; the CUDA backend's of
 * the long polygons its kernel listed). Not collective. */
int mb_polylla_has_repeat(const int64_t *idx, int64_t n, int64_t **buf, int64_t *cap);

/* Where the environment sets MB_POLYLLA_TRACE: print "WHO: WHAT X ms" to
 * stderr, X the wall time since *mark (s, mb_wtime; 0: nothing printed),
 * and move *mark to now; what NULL only marks the time. A diagnostic of
 * the pinch repair's and the partitioned path's parts. Not collective; no
 * errors. */
void mb_polylla_trace(double *mark, const char *who, const char *what);

/* A polygon for mb_polylla_merge: its head (in the frame of the kept
 * polygons' heads) and its vertex indices pidx [at, at + n). */
typedef struct mb_polylla_piece {
  int64_t head, at, n;
} mb_polylla_piece;

/* Merge by head, the canonical order (above): the nf polygons fo [nf + 1],
 * fi [fo[nf]], heads hd [nf] increasing, but those listed in drop [ndrop]
 * (increasing), keep their order and lists; the pieces pc [np] (heads
 * increasing) go each before the first kept polygon of a larger or equal
 * head. Writes new arrays (mb_alloc; the caller frees them): *o2
 * [nf - ndrop + np + 1] offsets, *i2 their indices, *h2 the heads (h2
 * NULL: none made), *counts the vertex counts as float64 (counts NULL:
 * none made). One planning pass over the runs between dropped polygons
 * and pieces, then copies on OpenMP threads in chunks of 65 536 polygons:
 * the pinch repair's merge and the slab path's merge of stitched polygons
 * (mb_polylla_slab.c). Not collective. Errors: MB_ERR_MEMORY,
 * MB_ERR_NUMERIC (pieces out of order); the outputs NULL on error. */
mb_error mb_polylla_merge(const int64_t *fo, const int64_t *fi, const int64_t *hd, int64_t nf,
                          const int64_t *drop, int64_t ndrop, const mb_polylla_piece *pc,
                          int64_t np, const int64_t *pidx, int64_t **o2, int64_t **i2,
                          int64_t **h2, double **counts);

/* Give tri (a rank's rows) its faces back from corners [3 nf] in the local
 * numbering of ids (mb_polylla_opts.rows_corners): face_offsets 3 f,
 * face_indices the ids; where tri already has faces, nothing. Not
 * collective. Errors: MB_ERR_MEMORY (tri's faces then stay NULL). */
mb_error mb_polylla_ids_faces(mb_mesh *tri, const mb_polylla_ids *ids, const int32_t *corners);

/* The positions of tri's rows and ghosts (mb_polylla_ids) in the local
 * numbering: *local is new (the caller frees it), nv + nghost vertices, no
 * faces (nf 0), no fields; the CPU backend builds the half-edges of tri's faces through the
 * ids (mb_halfedge_build_mapped) instead of a renumbered copy. Not
 * collective. Errors: MB_ERR_MEMORY. */
mb_error mb_polylla_ids_positions(const mb_mesh *tri, const mb_polylla_ids *ids, mb_mesh **local);

/* Face indices of poly from the local numbering of tri's rows and ghosts
 * (nv rows) to ids (to_ids = 1), or back (to_ids = 0). Not collective; no
 * errors. */
void mb_polylla_ids_apply(mb_mesh *poly, const mb_polylla_ids *ids, int64_t nv, int to_ids);

/* Polylla on the current CUDA device, same contract and output as
 * mb_polylla_cpu, bit for bit. Builds without CUDA return
 * MB_ERR_UNSUPPORTED saying how to enable it. Not collective.
 * Errors: as mb_polylla_cpu, and MB_ERR_CUDA. */
mb_error mb_polylla_cuda(const mb_mesh *tri, const mb_polylla_opts *opts, mb_mesh **poly,
                         mb_polylla_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
