/* meshbatch: constrained deformation of polygon meshes (the deform room):
 * planar or regular faces under handle vertices, by local-global
 * iterations on the linalg layer (linalg/mb_csr.h, linalg/mb_solver.h).
 *
 * Method: C. Kaspar, B. Deng, "Real-Time Deformation of Constrained Meshes
 * Using GPU" (book chapter), eq. (2.2) for the energy, section 2.2.2.1 for the projections
 * and section 2.2.2.2 for the augmented Lagrangian of the hard
 * constraints; after B. Deng, S. Bouaziz, M. Deuss, J. Zhang, Y. Schwartz,
 * M. Pauly, "Exploring local modifications for constrained meshes",
 * Computer Graphics Forum 32(2), Eurographics 2013.
 *
 * Unknowns: the positions p [nv, 3] (length unit of the input). Energy
 * (eq. 2.2, every weight dimensionless):
 *     E(p) = sum_i d_i |p_i - t_i|^2                  handles and closeness
 *          + w_fair |K (p - p0)|^2                     fairness
 *          + w_constraint sum_f |A_f p - P_f(A_f p)|^2  soft face constraints
 * d_i = w_handle and t_i the handle's target for a handle vertex, d_i =
 * w_close and t_i = p0_i (the input position) for every other vertex. K is
 * the uniform graph Laplacian of the polygon mesh's edges (K_ij = 1 for an
 * edge of a face, K_ii = -degree; face diagonals are not edges), so the
 * fairness term asks the displacement p - p0 to be smooth. A_f takes the
 * n_f vertices of face f to barycentre-centred coordinates (p_k - c_f,
 * c_f the mean of the face's vertices): A_f^T A_f is the centring matrix
 * I - 1 1^T / n_f on the face's vertices. P_f projects n_f centred points
 * onto the constraint set (mb_deform_proj.c):
 *   planar   the closest points on a common plane: the plane through the
 *            centroid whose normal is the eigenvector of the smallest
 *            eigenvalue of the 3x3 scatter matrix sum_k q_k q_k^T (the
 *            smallest singular vector of the centred points; float64: the
 *            smallest root of the characteristic cubic by Newton's method
 *            from 0, monotone, on S scaled to unit trace, and a cross
 *            product of two rows of S - lambda I, no trigonometry; cyclic
 *            Jacobi where the smallest eigenvalue is not well separated;
 *            cuda/deform/mb_deform_face.h), each point moved along the
 *            normal onto it;
 *   regular  the best similarity transform s R r_k + c of the regular
 *            n-gon r_k = (cos 2 pi k/n, sin 2 pi k/n, 0) onto the face
 *            (vertex k to vertex k): orthogonal Procrustes of the 3x2
 *            matrix M = sum_k q_k (cos, sin)_k, R = M (M^T M)^-1/2, s =
 *            trace (M^T M)^1/2 / n (a reflection of the planar template is
 *            a rotation in 3D, so no determinant sign is imposed).
 * Local-global iterations (section 2.2.2): project every face (one loop
 * over faces of mixed sizes through the face offsets), then one SPD solve
 *     H p = D t + w_fair K^T K p0 + c sum_f A_f^T y_f,
 *     H = D + w_fair K^T K + c sum_f A_f^T A_f,
 * of the three coordinates together (solver `cholesky`, the CPU's under the default `auto`
 * without `cg_iterations`:
 * CHOLMOD's simplicial LL' with AMD ordering, analysis once per mesh,
 * numeric factor once per value of c, the three columns in one pass of
 * each triangular solve (measured on the reference BLAS: the supernodal
 * factor's solves took twice as long; docs/benchmarks.md);
 * `pcg`: the linalg layer's Jacobi-preconditioned CG warm-started from the
 * current positions to relative residual MB_DEFORM_PCG_RTOL per
 * coordinate, as the chapter's GPU solver, no factorization; with
 * `cg_iterations: k` >= 1 the inner solve is inexact: at most k Jacobi-CG
 * iterations warm-started from the last iterate (mb_deform_cg in
 * mb_deform_private.h; the chapter's GPU ran a few per iteration). A
 * fixed point of the inexact iteration is one of the exact one (the warm
 * start's residual H p - b is then 0), so converged runs (hard, or soft
 * stopped by the tolerance) reach the exact runs' result to the tolerance;
 * a soft run capped at `iterations` stops at another iterate.) Soft: c = w_constraint, y_f =
 * P_f(A_f p); E decreases at every iteration (alternating minimisation;
 * also with inexact solves: CG from the warm start lowers the quadratic).
 * Hard (`hard: yes`, section 2.2.2.2): the constraints A_f p = z_f, z_f in
 * the constraint set, by the augmented Lagrangian in its scaled form
 * (ADMM, over-relaxed as in Boyd et al., "Distributed optimization and
 * statistical learning via ADMM", 2011, section 3.4.3): z_f = P_f(A_f p +
 * u_f), h_f = alpha z_f + (1 - alpha) A_f p (p before the solve; alpha =
 * MB_DEFORM_RELAX once the last primal residual is below
 * MB_DEFORM_RELAX_BELOW mean edge lengths, else 1), c = mu, y_f = h_f -
 * u_f, then the dual update u_f += A_f p - h_f (u_f = lambda_f / mu),
 * A_f p after the solve; mu runs through the
 * predefined sequence w_constraint * 10^k, k = 0 .. MB_DEFORM_MU_STEPS - 1,
 * one step up when a window of MB_DEFORM_MU_WINDOW iterations at one mu
 * did not halve the primal residual max_f |A_f p - h_f| (u_f rescaled by
 * mu_old / mu_new); the matrix is assembled and factored again only then.
 * (Measured on lifted 12 x 12 quad grids: stepping mu up whenever one
 * iteration did not halve the residual drove mu to 1e8 within tens of
 * iterations, where the iteration becomes alternating projections and
 * stalls at residuals of 1e-5 to 1e-3; a fixed mu = 10 reached 1e-10 in
 * 600-2,700 iterations on the same inputs.) In hard mode the handles are
 * hard too: their vertices are pinned to their targets (rows and columns
 * eliminated), and w_handle is not used.
 * fix_boundary: vertices on boundary edges are pinned to their input
 * positions (both modes).
 *
 * Residuals (reported and tested; l = the mean edge length of the input):
 * planarity of a face = max over its vertices of the distance to its best
 * plane / l; regularity = max over its vertices of the distance to the
 * regular projection / l; the mesh's values are the maxima over faces.
 * Handle error = max over handles of |p_i - t_i| (length unit).
 * Iterations the hard mode needs (planarity 1e-8, lifted domes of
 * `generate panels` with 13 handles, measured): 400 vertices 304, 1,600
 * vertices 1,632; 6,400 vertices still 4.3e-6 after 20,000 (mu at 1e8).
 * After the default cap of 50 (the chapter's M_max, a frame of an
 * interactive session that warm-starts the next) the planarity is
 * 8e-4, 1.6e-3 and 4.7e-3 on the same inputs: the chapter's frame reaches
 * a visually planar mesh, not 1e-8. A hard run to 1e-8 needs `iterations`
 * in the thousands (the tests use 5,000) and more the larger the mesh: the
 * ADMM's rate falls with the mesh size (local projections, a global
 * coupling).
 * Stopping: hard mode stops when the residual of its constraint is <=
 * tolerance (MB_ERR_NUMERIC after `iterations` iterations otherwise: the
 * constraints could not be met, e.g. handles that admit no planar face);
 * soft mode when the residual is <= tolerance or no vertex moved by more
 * than tolerance * l in an iteration, else after `iterations`.
 *
 * Per mesh on one rank, one thread order: the projections run over faces
 * in parallel (OpenMP; each face's arithmetic is its own) and everything
 * else in a fixed order, so the output does not depend on the rank count.
 */
#ifndef MB_DEFORM_H
#define MB_DEFORM_H

#include <stdint.h>

#include "mb_adjacency.h"
#include "mb_error.h"
#include "mb_op.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mb_deform_constraint {
  MB_DEFORM_PLANAR = 0,
  MB_DEFORM_REGULAR = 1
} mb_deform_constraint;

/* Steps of the hard mode's penalty sequence mu = w_constraint * 10^k. */
#define MB_DEFORM_MU_STEPS 8
/* Solvers of the global step (key `solver`). MB_DEFORM_AUTO (the key's
 * default): mb_deform_solver_resolve's rule: pcg on CUDA; on the CPU
 * cholesky for exact solves (cg_iterations 0: each backend's fastest
 * solver agreeing with the CPU's cholesky within 1e-8 of the box) and pcg
 * for capped ones (cg_iterations k >= 1: the k-step CG, the frame the CUDA
 * backend runs; with cholesky the key would be ignored). */
typedef enum mb_deform_solver {
  MB_DEFORM_CHOLESKY = 0,
  MB_DEFORM_PCG = 1,
  MB_DEFORM_AUTO = 2
} mb_deform_solver;
/* The PCG's relative residual per coordinate (solver: pcg). */
#define MB_DEFORM_PCG_RTOL 1e-12
/* The hard mode's over-relaxation (1: plain ADMM). Measured, iterations
 * to 1e-10: a lifted 20 x 20 dome with 13 handles 601 plain, 395 relaxed
 * from the start, 426 relaxed below MB_DEFORM_RELAX_BELOW; a lifted
 * Polylla mesh 1455, 1117, 1161; alpha 1.8 was slower (2318, 2174). */
#define MB_DEFORM_RELAX 1.5
/* Relaxed only once the primal residual is below this many mean edge
 * lengths (relaxed from the start, the first iterations were slower:
 * after 50 on a 2,500-vertex dome with lifted handles the planarity was
 * 0.17, against 1.6e-3 plain; switched on after 100 iterations it jumped
 * to 0.13 at 200). */
#define MB_DEFORM_RELAX_BELOW 1e-4
/* Iterations at one mu before the hard mode may step it up. */
#define MB_DEFORM_MU_WINDOW 100

/* A stage's keys (defaults in mb_deform_op.c). */
typedef struct mb_deform_params {
  int constraint;      /* mb_deform_constraint */
  int hard;            /* 0 no, 1 yes */
  int iterations;      /* >= 1, the cap of local-global iterations */
  double tolerance;    /* on the constraint residual (relative to l), > 0 */
  double w_handle;     /* soft handles' weight, > 0 */
  double w_close;      /* closeness weight of the other vertices, > 0 */
  double w_fair;       /* fairness weight, >= 0 */
  double w_constraint; /* soft: the constraints' weight; hard: the first mu; > 0 */
  char handles[MB_PARAM_NAMES_LEN]; /* handles file ("" : the `handle` field) */
  int fix_boundary;    /* 0 no, 1 yes */
  int solver;          /* mb_deform_solver */
  int cg_iterations;   /* solver pcg: 0 each solve to MB_DEFORM_PCG_RTOL; k >= 1 at
                          most k CG iterations per local-global iteration (inexact) */
} mb_deform_params;

/* One mesh (per mesh on one rank; borrowed arrays). */
typedef struct mb_deform_mesh {
  const char *name;            /* for messages */
  int64_t nv, nf;
  double *x;                   /* [nv, 3] positions: in, and out after the solve */
  const int64_t *face_offsets; /* [nf + 1] */
  const int64_t *face_indices; /* [face_offsets[nf]] */
  const mb_adjacency *adj;     /* of the mesh (boundary flags used) */
  const double *target;        /* [nv, 3] handle targets, NaN rows where free; NULL: none */
  const struct mb_op_ctx *ctx; /* stop query (mb_op_should_stop); NULL: never stops */
} mb_deform_mesh;

/* What a run did. history (may be NULL) has room for iterations + 1
 * entries: history[k] = the constraint's residual (planar or regular, as
 * chosen) after k iterations; energy likewise E(p) (soft mode only). */
typedef struct mb_deform_report {
  int iterations;       /* local-global iterations done */
  int converged;        /* 1: stopped by the tolerance */
  int factorizations;   /* numeric factorizations (values of c; 0 with pcg) */
  long long pcg_iterations; /* solver pcg: the CG iterations of every solve together */
  double mu;            /* the last c (hard: mu) */
  double planarity, regularity; /* final residuals (relative to l) */
  double handle_error;  /* final, length unit; 0 without handles */
  double edge_length;   /* l */
  int64_t handles, pinned; /* handle vertices; pinned vertices */
  double project_ms, solve_ms, update_ms, factor_ms; /* phase totals, wall */
  double analyze_ms;    /* the setup, once per mesh, wall: CPU: the faces' checks, the
                           incidence, H's pattern and parts, the arrays, mb_deform_setup
                           and (cholesky) CHOLMOD's analysis; CUDA: the host setup, uploads,
                           the device analysis and the iteration's graph capture */
  double finish_ms;     /* after the frame (whose end is the final residuals), wall: CUDA:
                           the positions' download and the run's frees; CPU: the frees */
  double device_ms;     /* CUDA: the device's time on the iterations and the final residuals
                           (events around each group of launches: a batch of iterations, an
                           iteration, the final residuals; the host's turnarounds between
                           groups not counted, its reads inside an iteration of the uncapped
                           CG counted); 0 on the CPU */
  int persistent;       /* CUDA: 1 where the iterations ran in the persistent cooperative
                           frame (soft, capped CG, no history: a batch of iterations a
                           launch, cuda/deform/mb_deform_frame.cu), 0 where they ran as
                           CUDA graphs or kernel by kernel; 0 on the CPU */
  double *history;      /* [iterations + 1] or NULL (caller's) */
  double *energy;       /* [iterations + 1] or NULL (caller's) */
  double *face_planarity; /* [nf] or NULL (caller's): each face's final planarity / l */
} mb_deform_report;

/* Run the local-global iterations on dm on the CPU (see above). Not
 * collective (one rank's whole mesh). dm->x is overwritten with the
 * result, also when the hard constraints are not met (the report then
 * holds the residual reached).
 * Errors: MB_ERR_ARG (a face with fewer than 3 or repeated vertices, a
 * vertex index out of range, NULL arguments), MB_ERR_NUMERIC (a
 * non-finite position or target, a matrix not positive definite, hard
 * constraints not met within p->iterations: the message names the mesh and
 * the residual reached), MB_ERR_MEMORY, MB_ERR_IO (stopped by a signal). */
mb_error mb_deform_run_cpu(const mb_deform_params *p, mb_deform_mesh *dm, mb_deform_report *rep);

/* The solver a run of p uses: p->solver unless MB_DEFORM_AUTO; auto is
 * pcg on CUDA (cuda != 0), and on the CPU pcg where p->cg_iterations >= 1
 * (a capped frame: the k-step CG, OpenMP threads, no factorization; at
 * Roof2, 80,656 vertices, 50 iterations of 3 CG steps took 1.2-1.4 s of
 * CPU time against 5.0 s with cholesky on 2 cores, docs/benchmarks.md)
 * and cholesky where it is 0 (exact solves: one factorization, then two
 * triangular solves per iteration beat the CG's 55 steps per solve to
 * 1e-12). Kaspar & Deng, section 2.2.2 (the global step's solve). Not
 * collective; cannot fail. */
int mb_deform_solver_resolve(const mb_deform_params *p, int cuda);

/* Projections (mb_deform_proj.c). q and z [n, 3] row-major, n >= 3,
 * length unit of the input; z may be q. Not collective; cannot fail (a
 * degenerate face gets a defined answer: all points at one spot give
 * themselves back (planar) or the centroid (regular)). */
void mb_deform_project_planar(int n, const double *q, double *z);
void mb_deform_project_regular(int n, const double *q, double *z);

/* Faces of up to this many points go through the batched planar
 * projection; MB_DEFORM_LANES faces of one size at a time. */
#define MB_DEFORM_BATCH_NMAX 16
#define MB_DEFORM_LANES 4

/* mb_deform_project_planar for m consecutive faces of n points each: q and
 * z [m, n, 3] row-major (face l's points at q + 3 n l), n >= 3, length
 * unit of the input; z may be q. m == MB_DEFORM_LANES and n <=
 * MB_DEFORM_BATCH_NMAX run the faces in lockstep (mb_deform_proj_batch.c:
 * one lane a face, each lane the scalar path's operations in its order,
 * the Newton iteration masked per lane, the Jacobi fallback per lane), so
 * the faces' dependency chains overlap; other m or n run the scalar path
 * face by face. Either way each face's z is the same bits as
 * mb_deform_project_planar's (tests/deform/test_deform_batch.c). Kaspar &
 * Deng, section 2.2.2.1 (the planar projection). Not collective; cannot
 * fail. */
void mb_deform_project_planar_batch(int m, int n, const double *q, double *z);

/* The distances behind the residuals: max over the n points q [n, 3] of
 * the distance to the best plane (planar) or to the regular projection
 * (regular), length unit. Not collective. */
double mb_deform_planarity(int n, const double *q);
double mb_deform_regularity(int n, const double *q);

/* Eigen-decomposition of a symmetric 3x3 matrix S (row-major) by cyclic
 * Jacobi rotations in float64: w [3] ascending eigenvalues, V [9] row-
 * major with V[3 r + k] the r-th component of the eigenvector of w[k].
 * Not collective. */
void mb_deform_eigen3(const double S[9], double w[3], double V[9]);

/* Read a handles file for one mesh: lines `MESH VERTEX X Y Z`
 * (whitespace-separated, `#` starts a comment, blank lines skipped,
 * VERTEX 0-based). Lines naming other meshes are checked and skipped.
 * target [nv, 3] (caller's) receives NaN rows for free vertices and the
 * targets of mesh's handles; *count the number of handles.
 * Errors: MB_ERR_IO (cannot open), MB_ERR_FORMAT ("FILE:LINE: ...": a line
 * without 5 fields, a vertex that is not a non-negative integer, a
 * coordinate that is not a finite number, a vertex index past nv for this
 * mesh, a vertex given twice). Not collective. */
mb_error mb_deform_read_handles(const char *path, const char *mesh, int64_t nv, double *target,
                                int64_t *count);

#ifdef __cplusplus
}
#endif
#endif
