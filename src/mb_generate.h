/* meshbatch: generators of scale-test meshes. */
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

/* A noisy sphere: an icosahedron subdivided until it has at least
 * min_vertices vertices (10 * 4^L + 2), projected to the unit sphere, each
 * vertex then moved radially by a uniform random amount in [-noise, noise]
 * (deterministic for a seed). Named "sphere". Not collective.
 * Errors: MB_ERR_ARG (min_vertices < 1 or > 2^31, noise < 0), MB_ERR_MEMORY. */
mb_error mb_generate_sphere(int64_t min_vertices, double noise, uint64_t seed, mb_mesh **out);

#ifdef __cplusplus
}
#endif
#endif
