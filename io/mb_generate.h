/* meshbatch: generators of scale-test meshes (surfaces and planar
 * triangulations). */
#ifndef MB_GENERATE_H
#define MB_GENERATE_H

#include <stdint.h>

#include "mb_error.h"
#include "mb_mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Midpoint subdivision of a triangle mesh, `levels` times: every triangle
 * (a, b, c) becomes (a, ab, ca), (ab, b, bc), (ca, bc, c), (ab, bc, ca) with
 * new vertices at edge midpoints (Loop's topology without Loop's smoothing
 * weights, so the surface keeps its shape). Each level multiplies the faces
 * by 4; a closed mesh goes from V to V + E vertices. The original vertices
 * keep their indices, midpoints follow in edge order. Fields are dropped.
 * Not collective. Errors: MB_ERR_ARG (polygons, levels < 0), MB_ERR_MEMORY. */
mb_error mb_generate_subdivide(const mb_mesh *mesh, int levels, mb_mesh **out);

/* Midpoint refinement of a triangle mesh to exactly nv_target vertices:
 * whole 1-to-4 levels (as mb_generate_subdivide) while one more still
 * fits, then one partial level that splits the k = nv_target - nv longest
 * edges (squared length in float64; equal lengths by their place in the
 * vertex adjacency) at their midpoints. A triangle with 3 split edges
 * becomes 4, with 2 becomes 3 (the quadrilateral beside the split corner
 * cut by its shorter diagonal), with 1 becomes 2 (red-green refinement):
 * the result is conforming, keeps the orientation, and every vertex lies
 * on the input's flat triangles. Used for benchmark inputs of a given
 * size (igea, 134 345 vertices, to 1 000 000). levels (may be NULL)
 * receives the number of whole levels. The result is owned by the caller.
 * Not collective. Errors: MB_ERR_ARG (polygons, nv_target < nv or >= 2^31),
 * MB_ERR_MEMORY. */
mb_error mb_generate_subdivide_to(const mb_mesh *mesh, int64_t nv_target, int *levels,
                                  mb_mesh **out);

/* Normalise a triangle mesh in place the way libigl's tutorial 205 does
 * after every flow step: translate it so that its area-weighted barycentre
 * (sum over triangles of area * centroid, divided by the total area) is at
 * the origin, then scale it about the origin by 1 / sqrt(A) so that its
 * surface area is 1 (unit: the input's length unit squared becomes 1).
 * Sums run over the triangles in order, in float64, never fused.
 * area_before (may be NULL) receives A, the area before scaling. Not
 * collective. Errors: MB_ERR_ARG (polygons, a planar kind),
 * MB_ERR_NUMERIC (zero or non-finite total area). */
mb_error mb_generate_unit_area(mb_mesh *mesh, double *area_before);

/* A noisy sphere: an icosahedron subdivided until it has at least
 * min_vertices vertices (10 * 4^L + 2), projected to the unit sphere, each
 * vertex then moved radially by a uniform random amount in [-noise, noise]
 * (deterministic for a seed). Named "sphere". Not collective.
 * Errors: MB_ERR_ARG (min_vertices < 1 or > 2^31, noise < 0), MB_ERR_MEMORY. */
mb_error mb_generate_sphere(int64_t min_vertices, double noise, uint64_t seed, mb_mesh **out);

/* Point distributions of mb_generate_delaunay. */
#define MB_GENERATE_UNIFORM 0
#define MB_GENERATE_CLUSTERED 1

/* The Delaunay triangulation of npoints random points in the unit square.
 * Not collective (runs on the calling rank; qhull is serial).
 *
 * Points, from splitmix64 seeded with `seed` (deterministic for a seed on
 * every machine; the same points whatever their numbering):
 *   clustered = 0 (MB_GENERATE_UNIFORM): x and y uniform in [0, 1), 53-bit;
 *   clustered = 1 (MB_GENERATE_CLUSTERED): a mixture of 8 Gaussian clusters
 *     (centres uniform in [0.15, 0.85]^2, standard deviations uniform in
 *     [0.02, 0.08], all drawn from the seed) taking 90 % of the points and a
 *     uniform background taking 10 %; a Gaussian draw falling outside
 *     [0, 1)^2 is drawn again (truncated, not clipped, so no points pile up
 *     on the sides).
 * Triangulation: qhull's reentrant library (libqhull_r; C. B. Barber,
 * D. P. Dobkin, H. Huhdanpaa, "The Quickhull algorithm for convex hulls",
 * ACM TOMS 22(4), 1996), options "d Qbb Qc Qz Q12 Qt" as qdelaunay uses for
 * 2-d input: the lower hull of the points lifted to a paraboloid, with
 * triangulated output. Upper-Delaunay facets are skipped. With T OpenMP
 * threads and at least 100 000 points, qhull runs on min(T, npoints /
 * 50 000) vertical strips (equal counts of points, each with the points
 * within a margin of it) and on the zone along the convex hull at once,
 * each part keeping the triangles whose empty circumcircle it can certify
 * (small circles centred in a strip's core; the larger ones in the zone,
 * checked against every other point under them); the union is accepted
 * only when its count is Euler's (2 n - 2 - h) and every point is used,
 * else the margin is doubled once and then qhull runs once on every point.
 * The result is therefore the same triangles, bit for bit, for any number
 * of threads (mb_generate_delaunay_strips says how it was made). Triangles with
 * zero signed area (which 'Qt' can make from cocircular points) are
 * dropped; their number is logged at verbose level. Points that qhull
 * keeps out of the triangulation as nearly coincident with a vertex
 * ('Qc'; practically never for these distributions) are removed, the
 * others keeping their order, so nv <= npoints; nv == npoints is the rule.
 *
 * Numbering: the vertices are numbered along a Hilbert curve of the unit
 * square (D. Hilbert, Math. Ann. 38, 1891; 2^21 x 2^21 cells, from cell
 * (0, 0) to cell (2^21 - 1, 0); points in one cell in generation order),
 * so that a block of consecutive vertex rows, and of face rows as sorted
 * below, is a compact piece of the square: partitioned runs with
 * `partitioner: blocks` split the rows evenly over the ranks as they are.
 * For delaunay:1000000 in 4 blocks, 2 295 edges join triangles of
 * different blocks (1 002 376 in generation order) and each block's
 * triangles reference 600-1 100 vertices outside its vertex rows
 * (325 000-396 000); the span of vertex ids a block references is still
 * wide for some blocks (the first quadrant touches the last; hull slivers
 * along the sides), up to 3.7 times its rows (docs/benchmarks.md,
 * "Delaunay numbering").
 *
 * Result: kind MB_KIND_TRIANGULATION2D, named "delaunay_N" (N = npoints),
 * xyz [nv, 3] with z = 0, nf triangles [nf, 3], each counter-clockwise
 * with its smallest vertex index first, sorted by (first, second, third)
 * vertex: the output does not depend on qhull's facet order. About
 * 2 npoints triangles.
 * Size, memory and time: npoints in [3, 2^31 - 1] (qhull numbers points
 * with int). qhull needs up to about 1 KB per point while it
 * runs (measured: 0.6 GB peak for 1 M uniform points), so the call
 * refuses, with MB_ERR_MEMORY, an npoints whose 1 KB-per-point estimate
 * exceeds the machine's physical memory (measured peak for 25 M points:
 * 17.2 GB). Time is qhull's, on one core of a Xeon server: 1 M points in
 * 9 s, 25 M points in 330 s; on strips (measured 2026-11-28 on the GPU
 * machines' hosts): 4 M points 28.6 s on one thread, 4.1 s on 64; 25 M
 * points 19.5 s on 32 threads, 22.4 s on 64, peak memory 19.9 and 24.4
 * GB (the strips' margins and the hull zone triangulated twice; use grid2d
 * for the largest inputs). qhull
 * gets the points in the vertices' Hilbert order, which gives it memory
 * locality (a spatial order was 1.35 times faster than generation order).
 * Errors: MB_ERR_ARG (npoints out of range, clustered not 0 or 1),
 * MB_ERR_MEMORY, MB_ERR_NUMERIC (qhull failed; its message is included). */
mb_error mb_generate_delaunay(int64_t npoints, uint64_t seed, int clustered, mb_mesh **out);

/* The number of parts the calling thread's last mb_generate_delaunay ran
 * qhull on at once, less the hull zone: the strips, or 1 where qhull ran
 * once on every point (too few points or threads, or the strips' union
 * incomplete). Not collective; thread-local. */
int mb_generate_delaunay_strips(void);

/* The uniform grid triangulation of the unit square that the Polylla
 * papers benchmark on (Salinas-Fernandez, Hitschfeld-Kahler, Navarro et
 * al.). Not collective; OpenMP threads fill the arrays.
 * n = ceil(sqrt(min_vertices)) (at least 2) points a side, vertex
 * j n + i at (i h, j h, 0) with h = 1 / (n - 1) computed once and each
 * coordinate the product i * h (so equal coordinates are bitwise equal).
 * Each square (i, j), in row-major order, is split by its diagonal from
 * (i, j) to (i+1, j+1) into the counter-clockwise triangles
 * (v00, v10, v11) and (v00, v11, v01).
 * Result: kind MB_KIND_TRIANGULATION2D, named "grid2d_N" (N = n * n),
 * nv = n^2, nf = 2 (n - 1)^2. Memory: nv * 24 bytes of coordinates,
 * nf * 24 of triangle indices and nf * 8 of face offsets (100 M vertices:
 * about 8.8 GB). Errors: MB_ERR_ARG (min_vertices < 1 or > 2^40),
 * MB_ERR_MEMORY. */
mb_error mb_generate_grid2d(int64_t min_vertices, mb_mesh **out);

/* Analytic fields of a generated grid3d (x = origin + i spacing per axis,
 * L = shape x spacing the period of each axis):
 *   sines     sin(2 pi x / Lx) sin(2 pi y / Ly) sin(2 pi z / Lz): periodic
 *   gaussian  exp(-r^2 / (2 s^2)), r the distance to the grid's centre,
 *             s = min(Lx, Ly, Lz) / 10
 *   noise     uniform in [-1, 1), splitmix64 of (seed, point index) */
typedef enum mb_grid_field_kind {
  MB_GRID_SINES = 0,
  MB_GRID_GAUSSIAN = 1,
  MB_GRID_NOISE = 2
} mb_grid_field_kind;

/* Name of a field kind ("sines", ...), and the kind by name (-1 unknown). */
const char *mb_grid_field_kind_name(mb_grid_field_kind k);
int mb_grid_field_kind_from_name(const char *name);

/* A grid3d named "grid_<nz>x<ny>x<nx>" of shape[3] (z, y, x) with the given
 * origin[3] and spacing[3], and nfields fields names[k] of kinds[k] in
 * dtype (float32 values are the float64 ones rounded). Not collective.
 * Errors: those of mb_grid_create, MB_ERR_MEMORY. */
mb_error mb_generate_grid3d(const int64_t shape[3], const double origin[3],
                            const double spacing[3], int nfields, const char *const *names,
                            const mb_grid_field_kind *kinds, mb_dtype dtype, uint64_t seed,
                            mb_mesh **out);

/* Shapes of mb_generate_panels. */
#define MB_PANELS_DOME 0
#define MB_PANELS_SADDLE 1

/* Test and benchmark inputs of the deform op: an n x n quad grid (n =
 * ceil(sqrt(min_vertices)), at least 3) over [-1, 1]^2, vertex j n + i at
 * x = -1 + 2 i / (n - 1), y = -1 + 2 j / (n - 1), lifted onto a height field
 * whose quads are not planar: dome z = height (sqrt(4 - x^2 - y^2) -
 * sqrt(2)) / (2 - sqrt(2)) (a spherical cap of radius 2, 0 at the corners,
 * height at the centre) or saddle z = height x y (a hyperbolic paraboloid:
 * every quad twisted by height h^2). Quads (v00, v10, v11, v01), counter-
 * clockwise seen from +z, row-major. The per-vertex field `handle` [nv,
 * 3]: the four corners and the four sides' midpoints have their positions
 * as targets (a whole boundary held in place leaves a planar-quad mesh
 * almost no freedom: its equations are hyperbolic); with
 * interior_handles >= 1 the centre vertex, and with 5 also the four
 * vertices at the quarter points (i, j in {n/4, 3n/4}), get a target
 * lifted by `lift` in z; NaN elsewhere. Kind MB_KIND_SURFACE, named
 * "panels_dome_N" or "panels_saddle_N" (N = n * n). Not collective.
 * Errors: MB_ERR_ARG (min_vertices outside [9, 2^31 - 1], shape,
 * interior_handles not 0, 1 or 5, non-finite height or lift),
 * MB_ERR_MEMORY. */
mb_error mb_generate_panels(int64_t min_vertices, int shape, double height, int interior_handles,
                            double lift, mb_mesh **out);

#ifdef __cplusplus
}
#endif
#endif
