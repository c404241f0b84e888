/* meshbatch: one 3D grid split over the ranks into Cartesian blocks, with a
 * halo of ghost planes on the six faces.
 *
 * The ranks form a Cartesian communicator (MPI_Cart_create): slabs along z
 * where z is a longest axis and each slab keeps 64 planes or more, else
 * MPI_Dims_create's cut, the most cuts to the longest axis (mb_cart_dims).
 * Along an axis of n points cut into
 * d blocks, block c holds points [n c / d, n (c + 1) / d): blocks differ by
 * at most one plane where d does not divide n. Each rank keeps its block
 * with a frame of `ghost` planes on every side, C order (z, y, x; x
 * fastest): local arrays are (nloc[0] + 2 g) x (nloc[1] + 2 g) x
 * (nloc[2] + 2 g). An exchange fills the ghost planes of the six faces from
 * the neighbouring blocks (periodic axes wrap across the grid, a rank being
 * its own neighbour where an axis is not cut); edges and corners of the frame
 * are not filled, as a star stencil (derivatives along one axis, the
 * 25-point Laplacian) never reads them. The faces are a plan of the halo
 * engine (partition/mb_halo.h, mb_cart_plan): per neighbour rank, the
 * boxes of the faces sent to it and of the ghost planes filled from it, so
 * grid faces and mesh halos are two plans of one engine; the same
 * description gives the plan of a device layout (mb_cart_plan_frame).
 *
 * After the Cartesian topology of MPI (MPI 3.1, chapter 7) and the halo
 * exchange of block-structured codes (AMReX FillBoundary).
 */
#ifndef MB_CART_H
#define MB_CART_H

#include <mpi.h>
#include <stdint.h>

#include "mb_error.h"
#include "mb_halo.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mb_cart_dtype { MB_CART_FLOAT64 = 0, MB_CART_FLOAT32 = 1 } mb_cart_dtype;

typedef struct mb_cart {
  MPI_Comm comm;       /* the Cartesian communicator (owned) */
  int rank, size;
  int dims[3];         /* blocks per axis (z, y, x) */
  int coords[3];       /* this rank's block */
  int periodic;        /* 1: every axis wraps */
  int ghost;           /* ghost planes per face */
  int64_t n[3];        /* points of the whole grid per axis */
  int64_t lo[3];       /* this block's first point per axis */
  int64_t nloc[3];     /* this block's points per axis */
  int nbr[3][2];       /* neighbour rank below and above per axis, MPI_PROC_NULL at a
                          non-periodic boundary */
  mb_halo *plan;        /* the face plan (owned; made by mb_cart_plan) */
  void *inflight;       /* the array of the exchange in flight, or NULL */
  /* The GPU halo of a block op, kept for the plan's later ops (a grid's
   * every field and stage): the NCCL communicator over comm (owned; made
   * by the first op that wants it, mb_stencil_cuda_block) and the
   * transport that op's trial chose per dtype (mb_halo_transport; 0 until
   * chosen), so that NCCL is set up and timed once per grid, not per call. */
  struct mb_nccl *nccl;
  int gpu_transport[2];
} mb_cart;

/* The fewest planes a slab keeps in mb_cart_dims' slab cut: 64, 16 times
 * the stencil's halo of 4 planes (mb_stencil.h), so that the two faces a
 * slab exchanges are at most an eighth of its planes. */
enum { MB_CART_SLAB_MIN_PLANES = 64 };

/* The blocks per axis (z, y, x) of a grid of n[3] points over `size`
 * ranks, as mb_cart_create cuts it. Slabs along z (size x 1 x 1) where z
 * is a longest axis (ties allowed) and every slab keeps at least
 * MB_CART_SLAB_MIN_PLANES planes (n[0] / size >= 64): a slab's faces are
 * whole contiguous planes, packed and sent as one copy each, and on 4
 * NVIDIA H200 the slab cut beat 2 x 2 x 1 in 3 of 4 runs of the heat step
 * at 1024^3 and 512^3 per GPU (docs/benchmarks.md, "Stencils on 4 GPUs:
 * the step's timeline"). Else MPI_Dims_create's factors, the most to the
 * longest axis (ties: z before y before x). Not collective.
 * Errors: MB_ERR_ARG (size < 1), MB_ERR_MPI. */
mb_error mb_cart_dims(int size, const int64_t n[3], int dims[3]);

/* Split a grid of n[3] points (z, y, x) over the ranks of comm with `ghost`
 * planes per face (1 <= ghost). Every block must be at least `ghost`
 * planes thick along every cut axis (else MB_ERR_ARG naming the axis, the
 * block size and the rank count: fewer ranks, or a larger grid). Collective
 * over comm; the caller frees *cart with mb_cart_free.
 * Errors: MB_ERR_ARG, MB_ERR_MPI, MB_ERR_MEMORY. */
mb_error mb_cart_create(MPI_Comm comm, const int64_t n[3], int periodic, int ghost,
                        mb_cart **cart);

/* mb_cart_create with the blocks per axis given: dims[a] blocks along axis
 * a (z, y, x), their product the size of comm, or dims NULL for
 * mb_cart_dims' cut (mb_cart_create). For comparisons of cuts (`meshbatch
 * bench stencil --blocks`): at 4 ranks a cube of 256 planes or more is cut
 * into slabs 4 x 1 x 1 by mb_cart_dims, MPI_Dims_create's cut is
 * 2 x 2 x 1. Collective
 * over comm. Errors: as mb_cart_create, and MB_ERR_ARG (dims whose product
 * is not the rank count, or below 1). */
mb_error mb_cart_create_dims(MPI_Comm comm, const int64_t n[3], const int dims[3], int periodic,
                             int ghost, mb_cart **cart);

/* Points of this rank's local array with its ghost frame. Not collective. */
int64_t mb_cart_local_size(const mb_cart *cart);

/* Where a block's points lie in a framed local array: owned point
 * (z, y, x) of the block (0 <= z < nloc[0], ...) is row origin + z
 * stride[0] + y stride[1] + x stride[2], ghost points at negative or
 * >= nloc coordinates alike; `width` ghost planes are exchanged per face.
 * The host layout (mb_cart_host_frame) and a device layout with padded
 * rows (cuda/stencil's frame) are two frames of one block. */
typedef struct mb_cart_frame {
  int64_t origin;    /* row of owned point (0, 0, 0) */
  int64_t stride[3]; /* rows between neighbouring points along z, y, x */
  int width;         /* ghost planes per face that the plan fills (1 <= width) */
} mb_cart_frame;

/* mb_cart_plan_frame's flags. Faces a plan leaves out:
 *  MB_CART_PLAN_NO_SELF     the faces across an axis that is not cut (the
 *                           rank is its own neighbour on a periodic axis):
 *                           the caller wraps them in place;
 *  MB_CART_PLAN_NO_OUTSIDE  the faces on the grid's boundary (a periodic
 *                           plan used for a Dirichlet stage): the caller
 *                           fills them with the boundary value.
 * Both drop a face on the sending and on the receiving rank alike. And the
 * shape of the z faces:
 *  MB_CART_PLAN_WHOLE_PLANES on slabs (y and x not cut: every block has the
 *                           whole grid's y and x extents), each z face as
 *                           whole planes of the frame (stride[0] rows from a
 *                           plane's first row; the frame's planes start at
 *                           multiples of stride[0], as a C-order framed
 *                           array's do): one contiguous run of rows on both
 *                           sides, which a device transport copies in one
 *                           piece (mb_cuda_halo_share_arrays). The rows
 *                           beyond the owned y and x extents are edges and
 *                           corners of the ghost planes, which star
 *                           stencils do not read. Ignored where y or x is
 *                           cut. */
enum { MB_CART_PLAN_NO_SELF = 1, MB_CART_PLAN_NO_OUTSIDE = 2, MB_CART_PLAN_WHOLE_PLANES = 4 };

/* The host frame of mb_cart_local_size's arrays: (nloc + 2 ghost) points
 * per axis, C order, width = the cart's ghost. Not collective. */
void mb_cart_host_frame(const mb_cart *cart, mb_cart_frame *frame);

/* Whether face (axis a: 0 z, 1 y, 2 x; side s: 0 below, 1 above) of this
 * rank's block travels in a plan of these flags (1), or has no neighbour
 * or is left to the caller (0): the one rule of the host and device
 * plans. Not collective. */
int mb_cart_face_exchanged(const mb_cart *cart, unsigned flags, int a, int s);

/* The face halo of this rank's block in frame `frame` as a box plan of the
 * halo engine (mb_halo_create_boxes; the caller frees *plan with
 * mb_halo_free): one row per point of the frame, ncomp 1; for each
 * neighbour rank (ascending; this rank itself across a periodic axis it
 * does not cut, unless MB_CART_PLAN_NO_SELF), one box per face sent to it
 * (the `width` outermost owned planes) and one per ghost face filled from
 * it (`width` ghost planes, the owned extent on the other two axes: star
 * stencils read no edge or corner; z faces whole planes with
 * MB_CART_PLAN_WHOLE_PLANES on slabs), in the order (axis z, y, x; side
 * below, above) of the sender's faces, so that where one rank is the
 * neighbour on both sides of an axis every face lands in the ghost planes
 * it is for. Not collective. Errors: MB_ERR_ARG (width < 1, a block
 * thinner than width along an exchanged axis), MB_ERR_MEMORY. */
mb_error mb_cart_plan_frame(const mb_cart *cart, const mb_cart_frame *frame, unsigned flags,
                            mb_halo **plan);

/* The face halo of the host frame (mb_cart_plan_frame with
 * mb_cart_host_frame and no flags), made at the first call and kept
 * (*plan belongs to the cart). Its forward exchange fills the ghost faces
 * (as mb_cart_exchange_begin/end do); its reverse exchange adds the ghost
 * faces' values into the owned points they stand for. Not collective.
 * Errors: MB_ERR_ARG, MB_ERR_MEMORY. */
mb_error mb_cart_plan(mb_cart *cart, mb_halo **plan);

/* Start filling the ghost faces of u (this rank's local array, of dtype)
 * from the neighbours: receives and sends are posted; u's owned points must
 * not change and its ghost faces not be read until mb_cart_exchange_end.
 * Collective in step over the Cartesian communicator (the forward exchange
 * of mb_cart_plan's plan, one component per point).
 * Errors: MB_ERR_MPI, MB_ERR_ARG (an exchange already in flight), MB_ERR_MEMORY. */
mb_error mb_cart_exchange_begin(mb_cart *cart, mb_cart_dtype dtype, void *u);

/* Wait for the exchange begun on u. Errors: MB_ERR_MPI. */
mb_error mb_cart_exchange_end(mb_cart *cart);

/* Set the ghost faces of u that lie outside the whole grid (the faces on
 * the grid's boundary) to `outside`, a Dirichlet value; on a periodic plan
 * this overwrites the wrapped values there, so one plan serves periodic and
 * Dirichlet stages alike. Not collective. */
void mb_cart_fill_outside(const mb_cart *cart, mb_cart_dtype dtype, void *u, double outside);

/* Free the plan and its communicator; NULL allowed. Not collective in the
 * MPI sense, but call it on every rank (it frees a communicator). */
void mb_cart_free(mb_cart *cart);

#ifdef __cplusplus
}
#endif
#endif
