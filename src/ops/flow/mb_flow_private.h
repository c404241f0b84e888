/* meshbatch: what the flows' CPU and CUDA backends share (the flow room
 * only; see mb_flow.h). */
#ifndef MB_FLOW_PRIVATE_H
#define MB_FLOW_PRIVATE_H

#include "mb_csr.h"
#include "mb_flow.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Refresh the ghost rows of the host array x [ncols, ncomp] from their
 * owners (nothing on one rank). Every rank of fm->comm in step.
 * Errors: those of mb_halo_forward_begin/end. */
mb_error mb_flow_refresh(const mb_flow_mesh *fm, int ncomp, double *x);

/* Global id of local vertex i (i itself on one rank), for messages. */
long long mb_flow_gid(const mb_flow_mesh *fm, int64_t i);

/* fixed [ncols] = 1.0 for a vertex kept in place (a boundary vertex with
 * boundary: fixed; a vertex without neighbours), else 0.0; ghost rows from
 * their owners. Every rank in step. Errors: as mb_flow_refresh. */
mb_error mb_flow_mark_fixed(const mb_flow_params *p, const mb_flow_mesh *fm, double *fixed);

/* e with "MESH: step S: " before the recorded message (e != MB_SUCCESS),
 * or MB_SUCCESS. */
mb_error mb_flow_at_step(const mb_flow_mesh *fm, int step, mb_error e);

/* `auto`'s estimate: sqrt of the bound max_i (a_ii + sum_j |a_ij|) /
 * min_i d_i (free rows; 1 for a fixed row) of A's condition number, A =
 * diag(d) - tau K after the elimination of the fixed vertices (host
 * values). Not collective. */
double mb_flow_sqrt_kappa(const mb_csr *A, const double *d, const double *fixed);

#ifdef __cplusplus
}
#endif
#endif
