/* meshbatch GPU tests: meshes built in code, and shared checks.
 *
 * All generators are deterministic (a fixed-seed LCG), return a validated
 * mesh owned by the caller (free with mb_mesh_free) and fail the current
 * cmocka test on error. Not collective.
 */
#ifndef MB_GPU_MESHES_H
#define MB_GPU_MESHES_H

#include <stdint.h>

#include "mb_adjacency.h"
#include "mb_mesh.h"
#include "mb_smooth.h"

/* Open noisy triangulated grid of (n+1) x (n+1) vertices over [-1, 1]^2, a
 * wavy height field plus noise (relative amplitude `noise`), diagonals
 * alternating per cell. Has a boundary. nv = (n+1)^2, nf = 2 n^2. */
mb_mesh *mb_gpu_mesh_grid(int n, double noise, uint64_t seed);

/* Closed noisy sphere: an octahedron midpoint-subdivided `levels` times,
 * projected to the unit sphere, radial noise of amplitude `noise`. Valence 4
 * at the six octahedron vertices, 6 elsewhere. nv = 4^levels * 4 + 2. */
mb_mesh *mb_gpu_mesh_octasphere(int levels, double noise, uint64_t seed);

/* Awkward topology in one mesh: two components (a small noisy grid, and a
 * fan whose edge (0, 1) is shared by three triangles: non-manifold), one
 * isolated vertex referenced by no face, and a degenerate (collinear)
 * triangle. */
mb_mesh *mb_gpu_mesh_awkward(void);

/* Noisy quad grid (a polygon mesh, no opposite vertices): (n+1)^2 vertices,
 * n^2 quads. */
mb_mesh *mb_gpu_mesh_quads(int n, double noise, uint64_t seed);

/* Build the adjacency of a mesh; fails the test on error. */
mb_adjacency *mb_gpu_adjacency(const mb_mesh *mesh);

/* 0 if a CUDA device is usable here, else prints why (to stdout) and returns
 * 77 (the CTest skip code): a GPU-less machine, or a build without CUDA. */
int mb_gpu_skip_unless_device(const char *test_name);

/* A smoothing stage with the tests' usual parameters: lambda 0.5, mu -0.53
 * (mu used by Taubin only), the given method, weights, boundary rule and
 * iterations; the rest zero. */
mb_smooth_stage mb_gpu_stage(mb_smooth_method method, mb_weights weights, mb_boundary boundary,
                             int iterations);

/* The start of a GPU test program: 77 where no device is usable (as
 * mb_gpu_skip_unless_device), 1 where device 0 cannot be made current
 * (the message on stderr), else 0 with device 0 current and its name
 * written to name[len] (may be NULL) and printed as "[ gpu ] device 0: NAME". */
int mb_gpu_test_begin(const char *test_name, char *name, size_t len);

#endif
