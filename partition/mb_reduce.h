/* meshbatch: reproducible reductions over the owned entities of a
 * distributed domain (partition layer; CPU in partition/mb_reduce.c, GPU in
 * cuda/partition/mb_reduce.cu, builds without CUDA link
 * partition/mb_reduce_cuda_stub.c).
 *
 * Every rank holds n owned values (float64); a dot product, 2-norm or sum
 * over all ranks' owned values returns the same bits on every rank, for any
 * number of ranks, any split of the values over the ranks, any order of the
 * values, any number of OpenMP threads, and on the CPU and the GPU.
 *
 * Method: an exact fixed-point superaccumulator (Kulisch's long
 * accumulator; for its use in parallel, see Collange, Defour, Graillat,
 * Iakymchuk, "Numerical reproducibility for the parallel reduction on
 * multi- and many-core architectures", Parallel Computing 49, 2015). Each
 * term t (the product x[i]*y[i], computed as one correctly rounded float64
 * multiplication, never fused: the same double on the CPU and the GPU) is
 * an integer multiple of 2^-1074; its 53-bit significand, shifted to its
 * exponent, is cut into three signed pieces of at most 33 bits added into
 * int64 bins of 32 bits each (bin i weighs 2^(32 i - 1074); 68 bins cover
 * every float64 and sums of up to 2^78 terms of DBL_MAX). Carries are
 * propagated before any bin could overflow (at the latest every 2^28 terms
 * of one thread or one GPU launch). The bins of threads, GPU blocks and
 * ranks are added as integers (MPI_SUM on int64: exact, so associative and
 * commutative), and the exact total is rounded once, to nearest with ties
 * to even. The result is the correctly rounded sum of the terms, so it
 * cannot depend on how the terms were grouped. Cost per term: about 15
 * integer operations and three adds (CPU: to bins in L1; GPU: to a
 * register window of 4 bins, shared-memory atomics only when a term's
 * exponent leaves the window), and one MPI_Allreduce of 71 int64 per
 * reduction. The alternative, ReproBLAS's
 * binned summation (Demmel, Nguyen, "Parallel reproducible summation",
 * IEEE Trans. Computers 64(7), 2015), is reproducible but not correctly
 * rounded; this one is both.
 *
 * Special values: a NaN term, or +Inf and -Inf terms together, give NaN;
 * otherwise an infinite term gives that infinity; a finite exact sum beyond
 * DBL_MAX rounds to +-Inf; an exact sum of 0 is +0.0 (never -0.0).
 * Products that overflow are infinite terms (|x*y| > DBL_MAX) and products
 * of at most 2^-1075 are 0, as float64 multiplication gives them; subnormal
 * terms are summed exactly. 2-norms are sqrt(sum of x[i]*x[i]), one
 * correctly rounded sqrt of the correctly rounded sum of the rounded
 * squares, so |x| above about 1.3e154 overflows to Inf.
 */
#ifndef MB_REDUCE_H
#define MB_REDUCE_H

#include <mpi.h>
#include <stdint.h>

#include "mb_error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bins of 32 bits (bin i weighs 2^(32 i - 1074)), then three counters:
 * NaN terms, +Inf terms, -Inf terms. */
#define MB_REDUCE_NBINS 68
#define MB_REDUCE_NSLOTS (MB_REDUCE_NBINS + 3)

/* An exact sum of float64 terms: plain data, zero it to start
 * (mb_reduce_acc_zero), add terms, combine across ranks, round once.
 * Several accumulators combined in one mb_reduce_acc_allreduce cost one
 * collective (e.g. the two dot products of a pipelined conjugate gradient). */
typedef struct mb_reduce_acc {
  int64_t slot[MB_REDUCE_NSLOTS];
} mb_reduce_acc;

/* Set acc to the empty sum. Not collective. */
void mb_reduce_acc_zero(mb_reduce_acc *acc);

/* Add the n terms x[i]*y[i] (i < n) to acc, or x[i] where y is NULL;
 * x and y are host arrays of n float64 (y may be x: squares), borrowed.
 * Uses the OpenMP threads of the caller's team size. Not collective. */
void mb_reduce_acc_add(mb_reduce_acc *acc, int64_t n, const double *x, const double *y);

/* Sum count accumulators acc[count] over the ranks of comm, in place
 * (one MPI_Allreduce of count * 71 int64). Collective over comm.
 * Errors: MB_ERR_ARG (count < 1), MB_ERR_MPI. */
mb_error mb_reduce_acc_allreduce(MPI_Comm comm, int count, mb_reduce_acc *acc);

/* The value of acc rounded to the nearest float64 (ties to even), with the
 * special-value rule above. Not collective; acc is not changed. */
double mb_reduce_acc_value(const mb_reduce_acc *acc);

/* Dot product sum over all ranks of x[i]*y[i] (each rank's n owned values,
 * x and y host arrays of n float64, borrowed; n may differ by rank and be 0),
 * correctly rounded; the same *dot on every rank. Collective over comm.
 * Errors: MB_ERR_ARG (n < 0, NULL array with n > 0, dot NULL), MB_ERR_MPI. */
mb_error mb_reduce_dot(MPI_Comm comm, int64_t n, const double *x, const double *y, double *dot);

/* 2-norm sqrt(sum over all ranks of x[i]^2) of the owned values x[n].
 * Collective over comm. Errors: as mb_reduce_dot. */
mb_error mb_reduce_norm2(MPI_Comm comm, int64_t n, const double *x, double *norm);

/* Sum over all ranks of x[i], correctly rounded. Collective over comm.
 * Errors: as mb_reduce_dot. */
mb_error mb_reduce_sum(MPI_Comm comm, int64_t n, const double *x, double *sum);

/* ---------------------------------------------------------------- GPU */

/* Device scratch for reductions of device arrays (bins of the blocks, a
 * pinned host copy): create once, reuse every iteration without
 * allocating. Bound to the device current at creation. */
typedef struct mb_reduce_device mb_reduce_device; /* opaque */

/* Create the scratch on the current device. Not collective.
 * Errors: MB_ERR_MEMORY, MB_ERR_CUDA, MB_ERR_UNSUPPORTED (no CUDA). */
mb_error mb_reduce_device_create(mb_reduce_device **rd);

/* Free the scratch; NULL allowed. Not collective. */
void mb_reduce_device_free(mb_reduce_device *rd);

/* Add the n terms x[i]*y[i] of device arrays x[n], y[n] (y NULL: x[i];
 * y == x: squares) to the host accumulator acc: kernels enqueued on
 * `stream` (a cudaStream_t, NULL: the default stream) after its earlier
 * work, then the stream is synchronised. The bits of acc afterwards are
 * those of mb_reduce_acc_add on the same values. Not collective.
 * Errors: MB_ERR_ARG, MB_ERR_CUDA, MB_ERR_UNSUPPORTED (no CUDA). */
mb_error mb_reduce_device_acc(mb_reduce_device *rd, void *stream, int64_t n, const double *x,
                              const double *y, mb_reduce_acc *acc);

/* mb_reduce_dot / norm2 / sum of device arrays (x[n], y[n] device
 * pointers, borrowed), on `stream` as mb_reduce_device_acc; the result, on
 * the host, has the bits of the CPU functions on the same values.
 * Collective over comm. Errors: MB_ERR_ARG, MB_ERR_CUDA, MB_ERR_MPI,
 * MB_ERR_UNSUPPORTED (no CUDA). */
mb_error mb_reduce_dot_device(mb_reduce_device *rd, void *stream, MPI_Comm comm, int64_t n,
                              const double *x, const double *y, double *dot);
mb_error mb_reduce_norm2_device(mb_reduce_device *rd, void *stream, MPI_Comm comm, int64_t n,
                                const double *x, double *norm);
mb_error mb_reduce_sum_device(mb_reduce_device *rd, void *stream, MPI_Comm comm, int64_t n,
                              const double *x, double *sum);

/* Device-resident sums, for solvers that keep their scalars on the device
 * (the GPU conjugate gradient): acc is a device array of m accumulators,
 * acc[j * MB_REDUCE_NSLOTS + k] the slot k of accumulator j, the layout of
 * mb_reduce_acc. Set accumulator j (j < m) to the exact sum of the terms
 * t[j * ld + i] (i < n; t a device array, borrowed; ld >= n): kernels
 * enqueued on `stream` (a cudaStream_t, NULL: the default stream), no
 * synchronisation, no host copy. The slots afterwards hold the exact sum
 * of the terms (not normalised: their value, mb_reduce_slots_value, is
 * that of mb_reduce_acc_add's accumulator on the same terms). Not collective.
 * Errors: MB_ERR_ARG (m < 1 or above 64, n < 0, ld < n, NULL arrays),
 * MB_ERR_CUDA, MB_ERR_UNSUPPORTED (no CUDA). */
mb_error mb_reduce_device_columns(mb_reduce_device *rd, void *stream, int m, int64_t n,
                                  const double *t, int64_t ld, int64_t *acc);

/* Sum the m device accumulators acc (as above) over the ranks of comm, in
 * place, as mb_reduce_acc_allreduce does: on one rank nothing is done (no
 * synchronisation); on several the slots pass through a host buffer and one
 * MPI_Allreduce, and `stream` is synchronised. The device rounds an
 * accumulator with mb_reduce_slots_value (mb_reduce_impl.h), the CPU's own
 * rounding. Collective over comm. Errors: MB_ERR_ARG, MB_ERR_CUDA,
 * MB_ERR_MPI, MB_ERR_UNSUPPORTED (no CUDA). */
mb_error mb_reduce_device_allreduce(mb_reduce_device *rd, void *stream, MPI_Comm comm, int m,
                                    int64_t *acc);

/* Copy the m device accumulators acc to acc_host[m] (host) and wait for
 * `stream`: for the rare decisions a solver takes on the host. Not
 * collective. Errors: MB_ERR_ARG, MB_ERR_CUDA, MB_ERR_UNSUPPORTED. */
mb_error mb_reduce_device_download(mb_reduce_device *rd, void *stream, int m,
                                   const int64_t *acc, mb_reduce_acc *acc_host);

/* For benchmarks only: the naive, NOT reproducible dot product of device
 * arrays x[n], y[n] on this rank (a float64 sum per thread, a tree per
 * block, float64 atomics across blocks: its last bits change from run to
 * run). Not collective. Errors: MB_ERR_ARG, MB_ERR_CUDA, MB_ERR_UNSUPPORTED. */
mb_error mb_reduce_dot_device_naive(mb_reduce_device *rd, void *stream, int64_t n,
                                    const double *x, const double *y, double *dot);

/* For tests and benchmarks: a device copy *dev of the host array host[n]
 * (freed with mb_reduce_device_release). Not collective.
 * Errors: MB_ERR_MEMORY, MB_ERR_CUDA, MB_ERR_UNSUPPORTED. */
mb_error mb_reduce_device_upload(int64_t n, const double *host, double **dev);
void mb_reduce_device_release(double *dev);

/* `meshbatch bench reduce [--n N] [--repeats R] [--backend cpu|cuda|all]`:
 * times reproducible and naive dot products (partition/mb_reduce_bench.c).
 * argv[0] is "reduce"; returns the process exit code. Collective over
 * MPI_COMM_WORLD. */
int mb_reduce_bench(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif
