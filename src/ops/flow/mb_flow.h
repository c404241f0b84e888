/* meshbatch: implicit flows of a triangle mesh's positions (the flow room):
 * implicit fairing and mean-curvature flow, one sparse SPD solve of three
 * columns per time step on the linalg layer (linalg/mb_csr.h,
 * linalg/mb_solver.h).
 *
 * implicit_fairing (Desbrun, Meyer, Schroeder, Barr, "Implicit fairing of
 * irregular meshes using diffusion and curvature flow", SIGGRAPH 1999,
 * section 4): backward Euler of the diffusion dX/dt = lambda L X with the
 * normalized umbrella operator L = D^-1 K (K: the uniform or cotangent
 * Laplacian of mb_csr.h, D = diag(-K_ii), the weight sums), made
 * symmetric by multiplying with D:
 *     (D - tau K) X' = D X,   tau = time_step (= lambda dt),
 * K from the current positions at each step (constant for uniform
 * weights). A vertex whose weight sum is not positive (isolated, or
 * cotangent weights summing to <= 0) is an error naming it.
 *
 * mean_curvature_flow (Desbrun et al. 1999, section 5; Kazhdan, Solomon,
 * Ben-Chen, "Can mean-curvature flow be modified to be non-singular?",
 * SGP 2012, eq. 4): backward Euler with the cotangent Laplacian L and the
 * barycentric lumped mass M:
 *     (M - dt L) X' = M X,
 * M from the current positions every step; L from the current positions
 * (`classic`) or once from the input (`conformalized`, Kazhdan et al.).
 * rescale `area` then moves the surface's area-weighted centroid
 * c = sum_i M_ii x_i / sum_i M_ii to the origin and scales it by
 * sqrt(A0 / A) back to the input's area A0, as libigl's tutorial 205 and
 * Kazhdan's code do (they scale to unit area). time_step has units of
 * length^2 (dt of the flow of the input's length unit).
 *
 * boundary `fixed`: vertices on boundary edges keep their positions bit
 * for bit (their rows become identity rows and their columns move to the
 * right-hand side, so the matrix stays symmetric); `free`: no constraint.
 *
 * Solvers (mb_solver.h): `pcg` (Jacobi, warm-started from the current
 * positions moved on by the last step's displacement, mb_flow_predict, to
 * `tolerance` relative residual per coordinate within `max_iterations`),
 * `cholesky` (CHOLMOD on the CPU, cuSOLVER csrchol on the GPU; per mesh
 * only), `amg` (the same CG preconditioned by one V-cycle of smoothed-
 * aggregation AMG, linalg/mb_amg.h: the hierarchy set up on the host at the
 * first step from its matrix and updated with each step's values, on the
 * host (CPU backend) or on the device (CUDA backend,
 * cuda/linalg/mb_amg_cuda.cu); per mesh only: a split mesh is
 * MB_ERR_UNSUPPORTED), `auto`: on a split mesh PCG; per mesh on the CPU
 * Cholesky when sqrt(kappa) > MB_FLOW_AUTO_SQRT_KAPPA for the bound
 * kappa <= max_i (A_ii + sum_j |A_ij|) / min_i d_i of the system's
 * condition number (Gershgorin above; below, -tau K is positive semi-
 * definite, so no eigenvalue is under the smallest d_i of a free row), i.e.
 * where PCG would need more than about that many iterations per decade of
 * residual; else PCG. On the GPU, AMG when sqrt(kappa) >
 * MB_FLOW_AUTO_SQRT_KAPPA_GPU, else PCG: on igea at 1 M vertices (unit
 * area; docs/benchmarks.md) a device AMG step took 27-36 ms at dt 1e-5 to
 * 1e-3 (18-31 iterations) plus about 0.5 s of host setup at the first
 * step, a PCG iteration 0.39 ms with about a third of the estimate's
 * iterations (133, 349, 1226 for estimates 391, 1236, 3909), so PCG is the
 * faster below an estimate of about 200-280 per step and, with the setup
 * spread over ten steps, about 600.
 * The choice is made per step and recorded.
 *
 * Every rank of a split mesh computes its owned rows with the same
 * operations in the same order as one rank (row sums in global order,
 * exact dot products), so a partitioned run on N ranks gives the bits of
 * one rank running the same solver.
 */
#ifndef MB_FLOW_H
#define MB_FLOW_H

#include <mpi.h>
#include <stdint.h>

#include "mb_adjacency.h"
#include "mb_error.h"
#include "mb_halo.h"
#include "mb_op.h"
#include "mb_solver.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mb_flow_kind { MB_FLOW_FAIRING = 0, MB_FLOW_MCF = 1 } mb_flow_kind;
typedef enum mb_flow_weights { MB_FLOW_UNIFORM = 0, MB_FLOW_COTANGENT = 1 } mb_flow_weights;
typedef enum mb_flow_variant { MB_FLOW_CONFORMALIZED = 0, MB_FLOW_CLASSIC = 1 } mb_flow_variant;
typedef enum mb_flow_boundary { MB_FLOW_FREE = 0, MB_FLOW_FIXED = 1 } mb_flow_boundary;
typedef enum mb_flow_rescale { MB_FLOW_RESCALE_NONE = 0, MB_FLOW_RESCALE_AREA = 1 } mb_flow_rescale;

/* sqrt(kappa) above which `auto` takes Cholesky per mesh (see above). */
#define MB_FLOW_AUTO_SQRT_KAPPA 40.0
#define MB_FLOW_AUTO_SQRT_KAPPA_GPU 600.0

/* A stage's keys (the job file's; defaults in mb_flow_op.c). */
typedef struct mb_flow_params {
  int kind;           /* mb_flow_kind, set by the op */
  double time_step;   /* > 0 */
  int steps;          /* >= 1 */
  int weights;        /* mb_flow_weights (implicit_fairing) */
  int variant;        /* mb_flow_variant (mean_curvature_flow) */
  int boundary;       /* mb_flow_boundary */
  int rescale;        /* mb_flow_rescale (mean_curvature_flow) */
  int solver;         /* mb_solver_method */
  double tolerance;   /* PCG relative residual */
  int max_iterations; /* PCG limit */
} mb_flow_params;

/* One mesh on one rank, or one rank's piece of a mesh split by vertices. */
typedef struct mb_flow_mesh {
  MPI_Comm comm;            /* MPI_COMM_SELF per mesh; the domain's otherwise (borrowed) */
  mb_halo *halo;            /* forward plan of the local rows, 3 per row; NULL per mesh */
  const mb_adjacency *adj;  /* rows [0, nrows) (owned), with opposite vertices (borrowed) */
  int64_t nrows, ncols;     /* owned rows; owned + ghost rows */
  const int64_t *global;    /* [ncols] global ids, or NULL (one rank: local = global) */
  double *x;                /* [ncols, 3] positions: in, and out after the steps (owned
                               rows; ghosts refreshed), the input's length unit */
  const char *name;         /* the mesh, for messages */
  const struct mb_op_ctx *ctx; /* the run's stop query and progress (mb_op_should_stop),
                               asked before every time step; NULL: never stops */
} mb_flow_mesh;

/* Wall time of a step's phases, ms (for benchmarks; on the GPU the device
 * is synchronised between phases when they are asked for). */
typedef struct mb_flow_phases {
  double assemble_ms; /* operator and mass, the system, the elimination */
  double solve_ms;    /* the solver's choice and call (analysis, factor, solve; or PCG) */
  double finish_ms;   /* the solution taken, rescale, the ghost refresh */
} mb_flow_phases;

/* What the steps did: one mb_solve_stats per step (owned by the caller,
 * steps entries) and, where phase is not NULL, the phases' wall times
 * (phase[steps], owned by the caller). */
typedef struct mb_flow_report {
  int steps;
  mb_solve_stats *step;
  mb_flow_phases *phase;
} mb_flow_report;

/* Run p->steps steps of the flow on fm on the CPU. Collective over
 * fm->comm. rep->step [p->steps] receives each step's solve.
 * Errors: MB_ERR_ARG (not a triangle mesh: adj without opposite
 * vertices), MB_ERR_NUMERIC (a vertex with no positive weight sum, a
 * non-finite position, a matrix not positive definite, PCG not converged:
 * each message names the mesh, the step, and what was reached),
 * MB_ERR_UNSUPPORTED (cholesky or amg on a split mesh), MB_ERR_MEMORY,
 * MB_ERR_MPI. */
mb_error mb_flow_run_cpu(const mb_flow_params *p, mb_flow_mesh *fm, mb_flow_report *rep);

/* The same on the current CUDA device (cuda/flow/mb_flow.cu): positions
 * uploaded once, matrices assembled and solved on the device, positions
 * copied back after the last step. Same contract and errors, plus
 * MB_ERR_CUDA; MB_ERR_UNSUPPORTED in builds without CUDA. */
mb_error mb_flow_run_cuda(const mb_flow_params *p, mb_flow_mesh *fm, mb_flow_report *rep);

/* One line per step for the provenance (`stage_N_solve`) and `-v`:
 * "step 1: pcg rtol 1e-10 iterations 12 residual 3.1e-11; step 2: ..."
 * into buf[len] (truncated with "..." past len). Not collective. */
void mb_flow_describe(const mb_flow_report *rep, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
