/* meshbatch: conformal Willmore flow by spin transformations (the willmore
 * room), CPU backend.
 *
 * Method: K. Crane, U. Pinkall, P. Schroeder, "Spin transformations of
 * discrete surfaces", ACM Trans. Graph. 30(4) (SIGGRAPH 2011) [CPS11], and
 * "Robust fairing via conformal curvature flow", ACM Trans. Graph. 32(4)
 * (SIGGRAPH 2013) [CPS13] (project pages with the papers:
 * www.cs.cmu.edu/~kmcrane/Projects/SpinTransformations/ and
 * .../Projects/ConformalWillmoreFlow/). The citations below name the
 * papers' constructs, not their section and equation numbers: those could
 * not be checked against the papers' text (neither flo's README nor the
 * project pages give them), so none is stated. A surface is changed by
 * prescribing a change rho of its mean-curvature half-density (CPS11: the
 * Dirac equation (D - rho) lambda = 0 and its discretisation; CPS13:
 * curvature-space flows); the surface whose curvature changed so is found
 * by one eigenvector and one Poisson solve.
 * One step of willmore_flow on the current positions x [nv, 3] (float64
 * throughout, the input's length unit):
 *
 *  1. Curvature change (CPS13, Willmore flow in curvature space:
 *     the gradient of the Willmore energy with respect to rho is the mean-
 *     curvature half-density itself, so an explicit step is rho = -tau H;
 *     CPS13 for the constraint): with L the cotangent Laplacian
 *     (linalg/mb_csr.h, negative semi-definite), M the barycentric lumped
 *     mass and N_i the area-weighted vertex normal,
 *         H_i = -(L x)_i . N_i / (2 M_i)        (1 / length; > 0 on a sphere)
 *         rho = -tau H, then projected: rho -= sum_k <rho, u_k>_M u_k
 *     where u_0..u_3 are {1, N_x, N_y, N_z} orthonormalised in the mass
 *     inner product <a, b>_M = sum_i M_i a_i b_i (modified Gram-Schmidt,
 *     twice). The projection keeps the flow conformal and the surface closed
 *     (CPS13: a change of curvature orthogonal to these is the
 *     one a closed spin transformation can realise to first order). tau =
 *     time_step is dimensionless. (A spin transformation by lambda changes
 *     the half-density: H~ |lambda|^2 = H + rho, CPS11; so tau = 1 does not
 *     make the surface round in one step, and steps of tau about 0.05 to 0.5
 *     fair a shape; larger ones move far from conformal, see the distortion
 *     below.)
 *  2. The quaternionic intrinsic Dirac operator D - rho (CPS13's
 *     vertex-based discretisation; CPS11 has the face-based, extrinsic
 *     one): for each triangle f = (i0, i1, i2) of area A_f with e_a the edge
 *     opposite corner a as an imaginary quaternion (e_0 = x_i2 - x_i1,
 *     e_1 = x_i0 - x_i2, e_2 = x_i1 - x_i0) and every ordered pair (a, b):
 *         (D - rho)_{ia ib} += -e_a e_b / (4 A_f) + (rho_a e_b - rho_b e_a) / 6
 *                              + rho_a rho_b A_f / 9
 *     (quaternion products). Each triangle's term is W_f^* W_f with
 *     W_f = (e_b / (2 sqrt A_f) + rho_b sqrt A_f / 3)_b, so D - rho is
 *     quaternion-Hermitian positive semi-definite; with rho = 0 the constant
 *     quaternions are its kernel (eigenvalue 0) and its real part is -L.
 *     Stored as a real 4nv x 4nv symmetric mb_csr, 4x4 blocks (the left-
 *     multiplication matrix of each quaternion entry, real part first) on
 *     the Laplacian's vertex pattern, the block positions of every triangle
 *     computed once per mesh (mb_willmore_dirac_create).
 *  3. The similarity transform lambda [nv, 4] (CPS11, the
 *     discrete Dirac equation solved as an eigenvalue problem): the
 *     eigenvector of the smallest eigenvalue of D - rho by inverse iteration
 *     from the constant 1, each iteration one solve with
 *     (D - rho) + sigma I, sigma = 1e-12 * the largest diagonal entry (a
 *     shift that keeps the factor positive definite where D - rho is
 *     singular, e.g. rho = 0; it moves no eigenvector), by its sparse
 *     Cholesky factor L L^* as an nv x nv quaternion matrix
 *     (mb_willmore_qchol.h: quaternion entries on the vertex pattern, 4x
 *     fewer flops than the real 4nv x 4nv factor, which it equals up to
 *     rounding). The fill-reducing order (AMD on the vertex graph) and the
 *     symbolic factor are made once per mesh, the numeric factor once per
 *     step. After
 *     each solve lambda is normalised (2-norm 1) and the eigenvalue is its
 *     Rayleigh quotient gamma = lambda' (D - rho) lambda; it stops when
 *         ||(D - rho) lambda - gamma lambda||_2 / max_i (D - rho)_ii
 *     is at most `tolerance`, and is an error for the mesh when that takes
 *     more than `max_iterations` solves. The eigenvector is defined up to a
 *     quaternion factor on the right (lambda q: a rotation of the whole
 *     surface); lambda is multiplied by the unit q that makes its mean real
 *     and positive, so that no rotation comes from the solver's rounding
 *     (near a singular D - rho it is of the order of eps times the
 *     condition number).
 *  4. New positions (CPS11, the discrete edge transformation and the
 *     Poisson problem for the positions): every edge ij is
 *     transformed as
 *         e~_ij = 1/3 conj(l_i) e l_i + 1/6 conj(l_i) e l_j
 *                 + 1/6 conj(l_j) e l_i + 1/3 conj(l_j) e l_j
 *     (imaginary; e = x_j - x_i), and the positions solve the Poisson
 *     problem L x~ = b, b_i = sum_j L_ij e~_ij, with L the cotangent
 *     Laplacian of this step's positions. Vertex 0 is pinned at the origin
 *     (its row and column of -L replaced by the identity; the system is then
 *     positive definite; b sums to zero, so the pin changes nothing but the
 *     translation); CHOLMOD, symbolic analysis once per mesh, factor once per
 *     step (L changes with the positions). Then the surface is recentred and
 *     rescaled as CPS13 does (normalisation after each step): its
 *     area-weighted centroid is moved to the input's and it is scaled about
 *     it to the input's area.
 * Solvers (the key `solver`, mb_willmore_solver): cholesky factors the
 * shifted D - rho (quaternion factor) and the pinned Poisson matrix
 * (CHOLMOD) per step, as above;
 * iterative replaces both factors by conjugate gradient (Hestenes &
 * Stiefel 1952) with one smoothed-aggregation AMG hierarchy per mesh
 * (linalg/mb_amg.h) built from the pinned Poisson matrix and updated to
 * each step's Laplacian: step 3 keeps the inverse iteration's iterates and
 * solves each (D - rho + sigma I) y = lambda by PCG on the real 4nv system
 * preconditioned by that V-cycle on each quaternion component (B^-1 (x)
 * I_4: D - rho's real part is -L up to the rho terms), see
 * mb_willmore_dirac_eigen_pcg; step 4 solves the Poisson problem by the
 * same hierarchy's PCG (mb_pcg_solve, relative residual 1e-12 per
 * coordinate), warm-started from the current positions moved so that
 * vertex 0 is at the origin and scaled by 1 / nv (the mean |lambda_i|^2).
 * auto takes iterative from MB_WILLMORE_AUTO_VERTICES vertices on the
 * CPU and always on the GPU (mb_willmore_solver_for). The two
 * agree within 1e-11 of the bounding box after 5 steps on spot
 * (tests/willmore/test_willmore.c).
 *
 * Per step the report holds the Willmore energy after the step,
 *     W = sum_i |(L x)_i|^2 / (4 M_i)    (= sum_i H_i^2 M_i; 4 pi for a round
 *                                         sphere in the limit),
 * the eigenvalue, the inverse-iteration count and residual, the Poisson
 * solve's residual, and the quasi-conformal distortion: the ratio
 * sigma_1 / sigma_2 >= 1 of the singular values of the affine map from a
 * triangle before to the same triangle after (1 for a similarity), its
 * maximum and area-weighted mean over the triangles, for the step (from
 * the step's input) and for the stage so far (from the stage's input; the
 * discrete spin transformation is conformal only to the mesh's resolution,
 * so this one grows with the total change of shape).
 *
 * Surfaces: closed, oriented (consistently), manifold triangle meshes of
 * any genus (for genus > 0 the spin transformation need not close exactly;
 * the Poisson solve finds the least-squares positions, as in CPS11). A boundary edge, an edge of three or more triangles, inconsistent
 * orientation, a degenerate triangle (twice its area at most 1e-12 times its
 * longest edge squared), an isolated vertex, or a non-finite coordinate is
 * an error for the mesh, before any step.
 */
#ifndef MB_WILLMORE_H
#define MB_WILLMORE_H

#include <stdint.h>

#include "mb_adjacency.h"
#include "mb_amg.h"
#include "mb_csr.h"
#include "mb_error.h"
#include "mb_op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How steps 3 and 4 solve (the key `solver`). */
typedef enum mb_willmore_solver {
  MB_WILLMORE_AUTO = 0,      /* CPU: iterative from MB_WILLMORE_AUTO_VERTICES vertices
                                up, cholesky below; CUDA: iterative at every size */
  MB_WILLMORE_CHOLESKY = 1,  /* sparse Cholesky factored per step (CPU: D - rho as a
                                quaternion matrix, mb_willmore_qchol.h, and CHOLMOD for
                                the Poisson matrix; CUDA: csrchol) */
  MB_WILLMORE_ITERATIVE = 2  /* PCG preconditioned by one AMG hierarchy per mesh */
} mb_willmore_solver;

/* solver auto on the CPU: the vertex count from which the iterative path
 * is taken. The quaternion Cholesky factor of D - rho (AMD order,
 * up-looking) grows faster than the PCGs with the mesh, but starts far
 * ahead: on the 2-core development machine (shared, load 14 to 22;
 * 2026-11-27, one thread) a step took by cholesky and iteratively: spot
 * (2 930 vertices) 26-36 against 129-178 ms, spot refined to 20 000 vertices
 * 0.60 against 3.5 s, armadillo (43 243) 1.05-1.2 against 10.7-31 s, igea
 * (134 345) 14-19 against 8.7-18.6 s (two runs each, the load moving them
 * by 2x; the iterative figures of 31 and 8.7 s before its inner tolerance
 * went from 1e-3 to 1e-1). 50 000 lies between the last two sizes, where
 * the Cholesky path is still 9x faster at 43 k and no longer clearly so at
 * 134 k (where exactly the two cross depends on the mesh; not measured). (With
 * CHOLMOD's real 4 nv x 4 nv factor, before, spot took 315 ms and spot at
 * 20 000 vertices 6.5 s, and the threshold was 20 000.) On the GPU auto is
 * iterative at every size: on an H100 spot took 23.7 ms a step (setup
 * 11 ms) against csrchol's 42.6 ms (setup 188 ms), and a batch of 200
 * meshes of 162-10 242 vertices 8.7 s against 57.7 s (docs/benchmarks.md). */
#define MB_WILLMORE_AUTO_VERTICES 50000

/* The solver that runs for nv vertices (p's choice; auto resolved as
 * above for the CUDA backend where cuda is 1, the CPU's otherwise). Not
 * collective; no errors. */
mb_willmore_solver mb_willmore_solver_for(int solver, int64_t nv, int cuda);

/* The relative residual the iterative solver's Poisson PCG (step 4)
 * stops at, per coordinate, for a mesh of nv vertices:
 * max(1e-12, 100 eps sqrt(nv)), eps = DBL_EPSILON. The floor of the
 * recomputed residual ||b - A x|| / ||b|| grows with the mesh (on igea
 * refined to 1 M vertices the device PCG stalled at 1.23e-12 for 2000
 * iterations); 1e-12 up to about 2 000 vertices, 3.1e-12 at 20 000,
 * 2.2e-11 at 1 M. Both backends use it. Not collective; no errors. */
double mb_willmore_poisson_rtol(int64_t nv);

/* A stage's keys (the job file's; defaults in mb_willmore_op.c). */
typedef struct mb_willmore_params {
  double time_step;   /* tau > 0, dimensionless */
  int steps;          /* >= 1 */
  double tolerance;   /* inverse iteration: residual relative to the largest diagonal */
  int max_iterations; /* inverse iteration: solves per step at most */
  int solver;         /* mb_willmore_solver; 0 (auto) where not set */
} mb_willmore_params;

/* One whole closed triangle mesh on this rank. */
typedef struct mb_willmore_mesh {
  int64_t nv, nf;
  const int64_t *tri;      /* [nf, 3] vertex indices (borrowed) */
  const mb_adjacency *adj; /* of the same mesh, with opposite vertices (borrowed) */
  double *x;               /* [nv, 3] positions: in, and out after the steps (borrowed) */
  const char *name;        /* for messages */
  const struct mb_op_ctx *ctx; /* stop query and progress; NULL: never stops */
} mb_willmore_mesh;

/* What one step did (see the method above). */
typedef struct mb_willmore_step {
  double energy;            /* Willmore energy after the step (dimensionless) */
  double eigenvalue;        /* smallest eigenvalue of D - rho (Rayleigh quotient) */
  int iterations;           /* inverse-iteration solves */
  double residual;          /* inverse iteration's residual (relative to max diagonal) */
  double poisson_residual;  /* ||b - (-L) x~|| / ||b|| of the pinned Poisson solve, max of 3 */
  double qc_max, qc_mean;   /* quasi-conformal distortion of this step: the map from
                               the step's input triangles to its output (>= 1) */
  double qc_total_max, qc_total_mean; /* the same from the stage's input triangles */
  double rho_norm;          /* ||rho||_M after the projection (1 / length * length) */
  int iterative;            /* 1: the iterative solver ran (the two counts below) */
  int inner_iterations;     /* iterative: PCG iterations of all the inverse iteration's solves */
  int poisson_iterations;   /* iterative: PCG iterations of the Poisson solve (most of 3) */
  double assemble_ms, eigen_ms, poisson_ms, finish_ms; /* wall time of the phases */
} mb_willmore_step;

/* The steps of one run: step [steps] owned by the caller. */
typedef struct mb_willmore_report {
  int steps;                /* filled: steps done */
  double energy0;           /* Willmore energy of the input */
  double setup_ms;          /* wall time before the steps: the checks, the Dirac
                               operator's pattern and its symbolic analysis */
  mb_willmore_step *step;
} mb_willmore_report;

/* Run p->steps steps on wm on the CPU (one rank, not collective); wm->x
 * holds the result. rep->step [p->steps] (caller's) receives each step.
 * Errors (the message names the mesh, and the step where one ran):
 * MB_ERR_ARG (bad arguments, polygons), MB_ERR_UNSUPPORTED (a boundary, a
 * non-manifold edge, inconsistent orientation: the edge named),
 * MB_ERR_NUMERIC (a degenerate triangle or isolated vertex, a non-finite
 * coordinate, inverse iteration not converged within p->max_iterations
 * with the residual reached, a factorisation that failed, a non-finite
 * result), MB_ERR_MEMORY; MB_ERR_IO when stopped by a signal
 * (mb_op_stopped). */
mb_error mb_willmore_run_cpu(const mb_willmore_params *p, mb_willmore_mesh *wm,
                             mb_willmore_report *rep);

/* The same steps on the GPU (cuda/willmore/mb_willmore.cu; builds without
 * CUDA link cuda/willmore/mb_willmore_cuda_stub.c, which returns
 * MB_ERR_UNSUPPORTED): the checks of mb_willmore_check on the host, then
 * every step on the current device in float64, positions kept there: the
 * curvature change and its projection (kernels and the exact device sums
 * of partition/mb_reduce.h), D - rho assembled by one thread per triangle
 * into the block positions of mb_willmore_dirac_pattern (float64 atomic
 * adds: the order of a slot's additions varies, so the values agree with
 * the CPU's to rounding, not bit for bit), the inverse iteration with
 * cuda/linalg's device Cholesky (METIS order and csrchol analysis once
 * per mesh, factor once per step, one solve and one download of three
 * numbers per iteration), the edges, the pinned Poisson solve (device
 * Cholesky, factor per step), recentring and rescaling, the energy and
 * the distortion. With solver iterative (the default from
 * MB_WILLMORE_AUTO_VERTICES vertices) no Cholesky at all: one AMG hierarchy
 * of the pinned Poisson matrix per mesh (host setup, device updates per
 * step), the inverse iteration's solves by a device PCG on the 4n system
 * (D's blocks read as quaternions; mb_willmore_dirac_eigen_pcg's method) and
 * the Poisson solve by mb_cuda_pcg_solve with that hierarchy. The same
 * contract, report and messages as
 * mb_willmore_run_cpu (one rank, not collective; the phase times are wall
 * times with the device synchronised between phases); MB_ERR_CUDA too. */
mb_error mb_willmore_run_cuda(const mb_willmore_params *p, mb_willmore_mesh *wm,
                              mb_willmore_report *rep);

/* For both backends: the arguments (p, wm), then the surface checks above
 * (closed, manifold, consistently oriented, no degenerate triangle, every
 * vertex on a triangle, finite coordinates) on the host, before any step.
 * Not collective. Errors: those of mb_willmore_run_cpu before its steps. */
mb_error mb_willmore_check(const mb_willmore_params *p, const mb_willmore_mesh *wm);

/* The -v line of step s (0-based) of mesh `name` (both backends). */
void mb_willmore_log_step(const char *name, int s, const mb_willmore_step *st);

/* The Dirac operator's pattern for both backends: *D (a new real 4 nv x
 * 4 nv mb_csr, values 0, owned by the caller: mb_csr_free) with 4x4
 * blocks on adj's vertex pattern, slot [nf, 9] (caller's) the position in
 * D's values of block (a, b)'s (0, 0) entry of triangle f (row
 * 4 tri[f][a], column 4 tri[f][b]; the block's row r is 4 rowlen[i] r
 * further), rowlen [nv] (caller's) the entries of each vertex row of
 * adj's pattern. Not collective. Errors: MB_ERR_ARG (bad arguments, a
 * triangle whose edge adj lacks, 16 nnz over 2^31), MB_ERR_MEMORY. */
mb_error mb_willmore_dirac_pattern(const mb_adjacency *adj, int64_t nf, const int64_t *tri,
                                   mb_csr **D, int32_t *slot, int32_t *rowlen);

/* Step 1's projection: remove from rho [n] its components along the
 * basis {1, N_x, N_y, N_z} (N [n, 3], any lengths), orthonormalised in the
 * inner product <a, b>_M = sum_i mass_i a_i b_i (mass [n] > 0), by
 * modified Gram-Schmidt done twice (a basis vector whose norm falls below
 * 1e-10 of its own before orthogonalisation is dependent and dropped), then
 * the projection done twice, so that afterwards |<rho, u_k>_M| is at most
 * about 1e-15 ||rho||_M. Not collective. Errors: MB_ERR_ARG (NULL, n < 1),
 * MB_ERR_NUMERIC (a non-positive or non-finite mass), MB_ERR_MEMORY. */
mb_error mb_willmore_project(int64_t n, const double *mass, const double *N, double *rho);

/* The orthonormal basis of the projection, u [4, n] (row k: u_k; a dropped
 * vector is all zero), for tests. Same contract as mb_willmore_project. */
mb_error mb_willmore_basis(int64_t n, const double *mass, const double *N, double *u);

/* The Dirac operator of step 2 with the structure kept per mesh: the real
 * 4n x 4n matrix, each triangle's 9 block positions, and the order and
 * symbolic factor of its quaternion Cholesky factor (mb_willmore_qchol.h).
 * Opaque. */
typedef struct mb_willmore_dirac mb_willmore_dirac;

/* Build the pattern of D - rho for the mesh (nf triangles tri [nf, 3] over
 * adj's nv vertices, the same mesh): 4x4 blocks on adj's vertex pattern
 * (mb_csr_pattern), the triangles' block positions, and the quaternion
 * Cholesky factor's AMD order of the vertex graph and symbolic factor.
 * *out owned by the caller (mb_willmore_dirac_free). Not collective.
 * Errors: MB_ERR_ARG (a triangle whose edge adj lacks; 16 nnz over 2^31),
 * MB_ERR_MEMORY, MB_ERR_UNSUPPORTED (CHOLMOD's AMD order failed). */
mb_error mb_willmore_dirac_create(const mb_adjacency *adj, int64_t nf, const int64_t *tri,
                                  mb_willmore_dirac **out);

/* Assemble D - rho from positions x [nv, 3] and rho [nv] (NULL: 0), per
 * triangle in triangle order (see step 2). Not collective. Errors:
 * MB_ERR_NUMERIC (a triangle of zero area: its index). */
mb_error mb_willmore_dirac_assemble(mb_willmore_dirac *d, const double *x, const double *rho);

/* The assembled matrix (borrowed; 4 nv rows, quaternion components w, x, y,
 * z of vertex i in rows 4i..4i+3). Not collective; cannot fail. */
const mb_csr *mb_willmore_dirac_matrix(const mb_willmore_dirac *d);

/* Step 3 on the assembled matrix: lambda [nv, 4] (w, x, y, z; 2-norm 1 over
 * all), the eigenvalue, the solves and the residual reached (also on
 * failure); the quaternion Cholesky factor of D - rho + sigma I, made per
 * call. Not collective. Errors: MB_ERR_NUMERIC (not converged within
 * max_iterations: the residual and the limit in the message; a factor that
 * failed), MB_ERR_MEMORY. */
mb_error mb_willmore_dirac_eigen(mb_willmore_dirac *d, double tolerance, int max_iterations,
                                 double *lambda, double *eigenvalue, int *iterations,
                                 double *residual);

/* Step 3 by the iterative solver (solver: iterative): the same inverse
 * iteration as mb_willmore_dirac_eigen (the same start, normalisation,
 * Rayleigh quotient, stopping test, right quaternion factor and errors),
 * each solve (D - rho + sigma I) y = lambda by conjugate gradient on the
 * real 4nv system (dot products over all 4nv entries), preconditioned by
 * B^-1 (x) I_4: one V-cycle of amg (a hierarchy of nv rows, built from the
 * pinned Poisson matrix of step 4, whose real part D - rho shares up to
 * the small rho terms and the pin) applied to the [nv, 4] view of the
 * vector, warm-started from lambda / (gamma + sigma) with gamma the last
 * Rayleigh quotient, and stopped when ||lambda - (D - rho + sigma I) y||_2
 * <= 1e-1 tolerance max_i (D - rho)_ii ||y||_2 (a normwise backward error:
 * the solution's norm grows as 1 / (gamma + sigma), so a residual relative
 * to ||lambda|| cannot be reached near a singular operator; this one
 * leaves the eigen-residual test to decide). The analysis of
 * mb_willmore_dirac_create is not used. *inner: the PCG iterations of all
 * solves. Not collective. Errors: those of mb_willmore_dirac_eigen, and
 * MB_ERR_NUMERIC for a solve that did not converge within 2000 iterations
 * or a curvature p'Ap <= 0; MB_ERR_ARG (amg of another size). */
mb_error mb_willmore_dirac_eigen_pcg(mb_willmore_dirac *d, const mb_amg *amg,
                                     double tolerance, int max_iterations, double *lambda,
                                     double *eigenvalue, int *iterations, double *residual,
                                     int *inner);

/* Free; NULL allowed. */
void mb_willmore_dirac_free(mb_willmore_dirac *d);

/* The Willmore energy sum_i |(L x)_i|^2 / (4 M_i) of a closed triangle mesh
 * with L (mb_csr_cotangent_laplacian of x, adj's pattern) and M (mass [nv],
 * mb_mass_barycentric). Not collective; cannot fail. */
double mb_willmore_energy(const mb_csr *L, const double *mass, const double *x);

/* The quasi-conformal distortion of triangles tri [nf, 3] from positions x0
 * to x [nv, 3]: the maximum and the area-weighted (areas of x0) mean over
 * the triangles of sigma_1 / sigma_2 of the affine map between them. Not
 * collective; cannot fail (a degenerate triangle gives infinity). */
void mb_willmore_distortion(int64_t nf, const int64_t *tri, const double *x0, const double *x,
                            double *qc_max, double *qc_mean);

/* One line per step for the provenance (`stage_N_willmore`) and `-v`:
 * "energy0 12.6; step 1: energy 12.57 eigenvalue 1.2e-05 iterations 3
 * residual 2e-13 poisson 1e-15 qc max 1.01 mean 1.002 total max 1.01 mean
 * 1.002; step 2: ..." into
 * buf[len] (truncated with "..." past len). Not collective. */
void mb_willmore_describe(const mb_willmore_report *rep, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
