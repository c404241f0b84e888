/* meshbatch: the stencil room's CUDA backend (cuda/stencil/mb_stencil.cu):
 * the kernels of mb_stencil.h on the current device, bit for bit the CPU's
 * (nvcc --fmad=false, the same order of operations), and their benchmark.
 * Builds without CUDA link src/ops/stencil/mb_stencil_cuda_stub.c, whose
 * functions return MB_ERR_UNSUPPORTED saying how to enable the backend.
 *
 * Kernels: 2.5D blocking after P. Micikevicius, "3D finite difference
 * computation on GPUs using CUDA" (GPGPU-2, 2009): a block of 32 x 8
 * threads covers a tile of x and y and marches along z through a chunk of
 * planes, each thread keeping its column's 9 values around the current
 * plane in registers (the z terms, every value read once); the x and y
 * neighbours of the current plane come through the L1 cache the block
 * shares (on the H100 this beat a shared-memory tile with its two barriers
 * per plane: 0.56 against 0.32 of the copy bandwidth for the float32
 * Laplacian at 512^3). Device rows are padded so that each row's first
 * point is 128-byte aligned. The heat step fuses the Laplacian and the
 * update. For comparison, the shared-memory pencil
 * kernels of M. Harris, "Finite Difference Methods in CUDA C/C++" (NVIDIA,
 * 2013): a block loads whole pencils along the derivative's axis (4 rows
 * along x; 32 columns along y or z) into shared memory.
 */
#ifndef MB_STENCIL_CUDA_H
#define MB_STENCIL_CUDA_H

#include <stdint.h>

#include "mb_error.h"
#include "mb_stencil.h"

#ifdef __cplusplus
extern "C" {
#endif

/* op: 0, 1, 2 the derivative along z, y, x; 3 the Laplacian. u and out are
 * host arrays of the grid's points (g->ghost must be 0), float32 when f32.
 * Not collective. Errors: MB_ERR_CUDA, MB_ERR_MEMORY, MB_ERR_ARG. */
mb_error mb_stencil_cuda_apply(const mb_stencil_grid *g, int op, int f32, const void *u,
                               void *out);

/* nsteps heat steps of u in place (host array, ghost 0), as
 * mb_stencil_heat_*. Errors: as mb_stencil_heat_*, MB_ERR_CUDA. */
mb_error mb_stencil_cuda_heat(const mb_stencil_grid *g, int f32, double alpha, double dt,
                              int64_t nsteps, void *u);

/* nsteps leapfrog steps, as mb_stencil_wave_* (host arrays, ghost 0).
 * Errors: as mb_stencil_wave_*, MB_ERR_CUDA. */
mb_error mb_stencil_cuda_wave(const mb_stencil_grid *g, int f32, double c, double dt,
                              int64_t nsteps, void *u_prev, void *u);

struct mb_cart;

/* One op on this rank's block of a grid split over the ranks
 * (partition/mb_cart.h): blk describes the block (n = its points, the
 * grid's spacing and boundary rule, ghost 0), u its values (plain host
 * array, in and out). op 0-2: the derivative along z, y, x into out; 3 the
 * Laplacian into out; 4 nsteps heat steps of u (coef = alpha dt); 5 nsteps
 * wave steps of u from rest (coef = (c dt)^2; out unused). The block lives
 * on the device; before each stencil the faces go to the host, through the
 * plan's halo exchange (Dirichlet faces set beyond the grid) and back.
 * Collective over the plan's communicator. Same bits as the CPU.
 * Errors: MB_ERR_CUDA, MB_ERR_MPI, MB_ERR_MEMORY, MB_ERR_ARG. */
mb_error mb_stencil_cuda_block(const mb_stencil_grid *blk, int f32, struct mb_cart *cart, int op,
                               double coef, int64_t nsteps, void *u, void *out);

/* Figures of `meshbatch bench stencil`: ms per call (median of repeats)
 * of each kernel on one grid on the current device, and the copy
 * bandwidth measured in the same run. */
typedef struct mb_stencil_bench_result {
  char device[256];
  double ms[8];        /* dz, dy, dx, laplacian, heat step; pencil dz, dy, dx */
  double bytes;        /* per call: each point read once and written once */
  double copy_gbs;     /* device-to-device copy, (read + write) / time */
} mb_stencil_bench_result;

/* Time the kernels on a periodic grid of n[3] points of float32 or
 * float64 (random values), warmup + repeats calls each. Not collective.
 * Errors: MB_ERR_CUDA, MB_ERR_MEMORY, MB_ERR_ARG, MB_ERR_UNSUPPORTED. */
mb_error mb_stencil_cuda_bench(const int64_t n[3], int f32, int warmup, int repeats,
                               mb_stencil_bench_result *r);

#ifdef __cplusplus
}
#endif
#endif
