/* meshbatch: benchmark entry of the CUDA Polylla backend (cuda/polylla/),
 * for `meshbatch bench polylla`. mb_polylla_cuda itself is declared in
 * src/ops/polylla/mb_polylla.h. Builds without CUDA link the stub in
 * src/ops/polylla/mb_polylla_cuda_stub.c, which returns MB_ERR_UNSUPPORTED.
 */
#ifndef MB_POLYLLA_CUDA_H
#define MB_POLYLLA_CUDA_H

#include <stdint.h>

#include "mb_error.h"
#include "mb_mesh.h"
#include "mb_polylla.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Byte model of the label kernels (ms_label), the floor of the bytes they
 * must move, each array read or written once (gathers that hit in cache are
 * not counted again):
 *
 *   longest-edge kernel (per triangle): oriented vertices 12 B read,
 *       positions 16 B per vertex read (x, y float64), longest-edge index
 *       1 B written;
 *   frontier kernel (per half-edge, 3 per triangle): twins 12 B read,
 *       longest-edge index 1 B read, frontier flags 3 B written.
 *
 *   bytes = 29 nt + 16 nv
 *
 * About 37 B per triangle for a Delaunay triangulation (nt ~ 2 nv). The
 * fraction of copy bandwidth is bytes / (ms_label 1e-3) / (copy_gbs 1e9). */
#define MB_POLYLLA_LABEL_BYTES(nv, nt) (29.0 * (double)(nt) + 16.0 * (double)(nv))

/* Run mb_polylla_cuda on tri warmup + repeats times (host arrays in, host
 * arrays out, each run as a job calls it: share_xyz) and write the median of each
 * time of the timed runs (and the run's counts) to *median. Then measure the
 * device-to-device copy bandwidth: cudaMemcpyDeviceToDevice of a 1 GiB
 * buffer (halved down to 128 MiB if two do not fit), 2 untimed copies,
 * median of 9 timed ones, (bytes read + bytes written) / time in GB/s
 * (1e9 bytes), into *copy_gbs. repeats >= 1, warmup >= 0. Not collective.
 * Errors: those of mb_polylla_cuda; MB_ERR_ARG; MB_ERR_UNSUPPORTED without
 * CUDA. */
mb_error mb_polylla_cuda_bench(const mb_mesh *tri, int warmup, int repeats,
                               mb_polylla_stats *median, double *copy_gbs);

/* The same pipeline on GPU-native host arrays, as a caller that keeps its
 * data in page-locked memory runs it: positions xy [nv, 2] float64 and
 * triangles [nt, 3] int32 in, polygon offsets [npoly + 1] and vertex
 * indices [nidx] int32 out, all in page-locked host memory that is
 * allocated and filled once, outside the timing. Each timed run allocates
 * the device arrays, copies in, runs every phase, copies out and frees, so
 * ms_total is the whole run from triangles in host memory to polygons in
 * host memory. The median of each time of `repeats` runs after `warmup`
 * goes to *median. The polygons are checked against those of
 * mb_polylla_cuda on the same mesh, where it split no pinched polygon:
 * this path ends at the kernels' polygons, without the host's pinch
 * repair (mb_polylla_split_pinches), so where mb_polylla_cuda split some,
 * median->pinches_split gives their count and nothing is compared (a
 * 25 M-point Delaunay triangulation has some). Not collective. Errors: those of
 * mb_polylla_cuda; MB_ERR_CUDA if the two outputs differ; MB_ERR_UNSUPPORTED
 * without CUDA. */
mb_error mb_polylla_cuda_bench_pinned(const mb_mesh *tri, int warmup, int repeats,
                                      mb_polylla_stats *median);

#ifdef __cplusplus
}
#endif
#endif
