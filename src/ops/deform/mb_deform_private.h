/* meshbatch: the deform room's private interface between the CPU solver
 * (mb_deform.c) and its CUDA backend (cuda/deform/mb_deform.cu): the
 * host-side system of mb_deform.h, built by the CPU's own functions so both
 * backends solve with the same matrix. Not for other rooms. */
#ifndef MB_DEFORM_PRIVATE_H
#define MB_DEFORM_PRIVATE_H

#include <stdint.h>

#include "mb_csr.h"
#include "mb_deform.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The parts of the system H = D + w_fair K^T K + c sum_f A_f^T A_f of one
 * mesh, pinned rows and columns not yet eliminated (mb_deform.h). */
typedef struct mb_deform_system {
  int64_t nv, nf, nidx; /* vertices, faces, face slots (face_offsets[nf]) */
  int32_t *vf_row;      /* [nv + 1] vertex -> its face slots (CSR rows) */
  int64_t *vf_slot;     /* [nidx] the slots of each vertex, ascending */
  int64_t *slot_face;   /* [nidx] the face of each slot */
  mb_csr *H;            /* the pattern (ascending columns, diag set, edge NULL), val [nnz] */
  double *KtK;          /* [nnz] K^T K (zero where fair is 0) */
  double *face;         /* [nnz] sum_f A_f^T A_f */
} mb_deform_system;

/* Check dm's faces and build its system parts by the CPU solver's
 * functions (the same incidence, pattern and values as mb_deform_run_cpu;
 * fair: w_fair > 0). *s is filled (the caller frees it with
 * mb_deform_system_free, also after an error). Not collective.
 * Errors: MB_ERR_ARG (a face with fewer than 3 or repeated vertices, a
 * vertex index out of range, too many vertices or entries: the CPU's
 * messages), MB_ERR_MEMORY. */
mb_error mb_deform_system_build(const mb_deform_mesh *dm, int fair, mb_deform_system *s);

/* H->val = base + c face with the pinned (pin[i] != 0) rows and columns
 * eliminated (identity rows), as the CPU solver's assembly: base [nnz]
 * (D + w_fair K^T K), pin [nv]. Not collective; cannot fail. */
void mb_deform_system_matrix(mb_deform_system *s, const double *base, const double *pin,
                             double c);

void mb_deform_system_free(mb_deform_system *s);

/* The set-up of a run both backends share (mb_deform.c's run(), the same
 * order and messages), after the faces' checks and the system's parts:
 * p0 [nv, 3] = dm->x on entry; per vertex the weight wd [nv] (w_handle at
 * a handle, else w_close), the target t [nv, 3] (the handle's, else the
 * input position) and pin [nv] (1: a hard handle, or with fix_boundary a
 * boundary vertex; hard handles are put onto their targets in dm->x,
 * *handles_moved = 1 where one was not there); *l the input's mean edge
 * length (1 without edges); base [nnz] = D + w_fair K^T K over H's
 * pattern (KtK, face [nnz]: mb_deform_system's parts), r0 [nv, 3] = D t +
 * w_fair K^T K p0, g0 and gF [nv, 3] the products of base and of face
 * with the pinned columns of dm->x. rep->handles, pinned and edge_length
 * set. Every array the caller's, of the lengths given. Not collective.
 * Errors: MB_ERR_NUMERIC (a handle target neither all NaN nor finite). */
mb_error mb_deform_setup(const mb_deform_params *p, mb_deform_mesh *dm, const mb_csr *H,
                         const double *KtK, const double *face, double *wd, double *t, double *pin,
                         double *p0, double *base, double *r0, double *g0, double *gF,
                         mb_deform_report *rep, int *handles_moved, double *l);

/* Rows of one chunk of mb_deform_cg's work: each dot product is summed per
 * chunk in row order and the chunks' sums in chunk order, so the iterates
 * do not depend on the thread count. */
#define MB_DEFORM_CG_CHUNK 1024
/* Below this many rows mb_deform_cg runs on the calling thread alone (the
 * same chunks, the same bits). */
#define MB_DEFORM_CG_PARALLEL_ROWS 4096

/* mb_deform_cg's workspace for systems of n rows: r, p, q [n, 3], the
 * Jacobi diagonal [n] and the chunks' partial sums. Kept across the solves
 * of a run (no allocation per solve). Owned by the caller. */
typedef struct mb_deform_cg_work mb_deform_cg_work;

/* A workspace for n >= 0 rows into *out (NULL on error). Not collective.
 * Errors: MB_ERR_MEMORY, MB_ERR_ARG. */
mb_error mb_deform_cg_work_create(int32_t n, mb_deform_cg_work **out);

/* Frees w (NULL: nothing). */
void mb_deform_cg_work_free(mb_deform_cg_work *w);

/* The inexact inner solve of `cg_iterations: k` (mb_deform.h): H X = B for
 * the three columns of B and X ([nrows, 3]; X the warm start on entry, the
 * iterate on exit) by at most k >= 1 Jacobi-preconditioned CG iterations
 * (z = r / h_ii; Hestenes & Stiefel 1952, preconditioned as in Saad,
 * Iterative Methods for Sparse Linear Systems, 2nd ed., Algorithm 9.1), a
 * column stopping earlier where sqrt(r.r) <= MB_DEFORM_PCG_RTOL ||b|| and a
 * column with b = 0 getting x = 0; no recomputed-residual restart. The
 * CUDA backend's device CG is the same method (mb_deform_cg.c). OpenMP
 * threads over chunks of MB_DEFORM_CG_CHUNK rows, the dot products summed
 * per chunk then in chunk order: the same bits for any thread count. ws: a
 * workspace of H->nrows rows (mb_deform_cg_work_create; NULL: one is
 * allocated for this call). *iters += the iterations run (the most of any
 * column). name: for messages. Not collective.
 * Errors: MB_ERR_NUMERIC (a diagonal entry or a curvature p'Hp <= 0: H not
 * positive definite; a non-finite value), MB_ERR_MEMORY, MB_ERR_ARG (also
 * ws of another row count). */
mb_error mb_deform_cg(const char *name, const mb_csr *H, const double *B, double *X, int k,
                      mb_deform_cg_work *ws, long long *iters);

#ifdef __cplusplus
}
#endif
#endif
