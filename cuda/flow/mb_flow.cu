/* meshbatch: implicit fairing and mean-curvature flow on the GPU (see
 * src/ops/flow/mb_flow.h). The positions stay on the device for every
 * step: the operator and the mass are assembled there (cuda/linalg, the
 * CPU's bits), the system is combined and its fixed rows and columns
 * eliminated by the kernels below (the CPU's operations in the CPU's
 * order), and solved by the device PCG or csrchol. A split mesh exchanges
 * its ghost positions through the halo engine's device exchange and uses
 * the row-kernel product, so N ranks give one rank's bits. */
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "mb_csr.h"
#include "mb_cuda_halo.h"
#include "mb_cuda_private.cuh"
#include "mb_flow.h"
#include "mb_flow_private.h"
#include "mb_linalg_cuda.h"
#include "mb_log.h"
#include "mb_mpi.h"
#include "mb_reduce.h"

namespace {

constexpr int BLOCK = 256;
unsigned blocks(int64_t n) { return (unsigned)((n + BLOCK - 1) / BLOCK); }

/* d_i = -L_ii (fairing's weight sums); bad counts rows with d <= 0 not fixed. */
__global__ void weight_sums(int32_t n, const int32_t *__restrict__ diag,
                            const double *__restrict__ val, const double *__restrict__ fixed,
                            double *__restrict__ d, int32_t *__restrict__ first_bad) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  d[i] = -val[diag[i]];
  if (!(d[i] > 0) && fixed[i] == 0) atomicMin(first_bad, i);
}

/* The first row with d <= 0 that is not fixed (the mass check). */
__global__ void check_positive(int32_t n, const double *__restrict__ d,
                               const double *__restrict__ fixed, int32_t *__restrict__ first_bad) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n && !(d[i] > 0) && fixed[i] == 0) atomicMin(first_bad, i);
}

/* B = diag(d) x and the fixed vertices' elimination, as the CPU's
 * assemble_system (src/ops/flow/mb_flow.c) on A = diag(d) - tau L already
 * combined: fixed rows become identity rows with b = x; a free row's
 * entries in fixed columns move to b (b -= a_ij x_j, entry order) and
 * become 0. */
__global__ void eliminate(int32_t n, const int32_t *__restrict__ rowptr,
                          const int32_t *__restrict__ col, const int32_t *__restrict__ diag,
                          double *__restrict__ val, const double *__restrict__ d,
                          const double *__restrict__ fixed, const double *__restrict__ x,
                          double *__restrict__ b) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  if (fixed[i] != 0) {
    for (int32_t k = rowptr[i]; k < rowptr[i + 1]; k++) val[k] = 0;
    val[diag[i]] = 1;
    for (int c = 0; c < 3; c++) b[3 * i + c] = x[3 * i + c];
    return;
  }
  double b0 = d[i] * x[3 * i], b1 = d[i] * x[3 * i + 1], b2 = d[i] * x[3 * i + 2];
  for (int32_t k = rowptr[i]; k < rowptr[i + 1]; k++) {
    const int32_t j = col[k];
    if (k != diag[i] && fixed[j] != 0) {
      const double a = val[k];
      b0 = b0 - a * x[3 * j];
      b1 = b1 - a * x[3 * j + 1];
      b2 = b2 - a * x[3 * j + 2];
      val[k] = 0;
    }
  }
  b[3 * i] = b0;
  b[3 * i + 1] = b1;
  b[3 * i + 2] = b2;
}

/* x_i = X_i for free rows, v_i = X_i - x_i their displacement (0 for the
 * fixed: mb_flow_predict's v); first_bad: the first row with a non-finite X. */
__global__ void take_solution(int32_t n, const double *__restrict__ X,
                              const double *__restrict__ fixed, double *__restrict__ x,
                              double *__restrict__ v, int32_t *__restrict__ first_bad) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  if (!isfinite(X[3 * i]) || !isfinite(X[3 * i + 1]) || !isfinite(X[3 * i + 2]))
    atomicMin(first_bad, i);
  for (int c = 0; c < 3; c++) v[3 * i + c] = fixed[i] == 0 ? X[3 * i + c] - x[3 * i + c] : 0.0;
  if (fixed[i] == 0)
    for (int c = 0; c < 3; c++) x[3 * i + c] = X[3 * i + c];
}

/* X = x + v on the owned rows (mb_flow_predict, src/ops/flow). */
__global__ void predict(int32_t n, const double *__restrict__ x, const double *__restrict__ v,
                        double *__restrict__ X) {
  const int32_t k = blockIdx.x * BLOCK + threadIdx.x;
  if (k < 3 * n) X[k] = x[k] + v[k];
}

/* One coordinate of x [n, 3] into xc [n]. */
__global__ void coordinate(int32_t n, int c, const double *__restrict__ x, double *__restrict__ xc) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) xc[i] = x[3 * i + c];
}

/* x = (x - c) s and v = v s (rescale: area). */
__global__ void recentre_scale(int32_t n, double c0, double c1, double c2, double s,
                               double *__restrict__ x, double *__restrict__ v) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  x[3 * i] = (x[3 * i] - c0) * s;
  x[3 * i + 1] = (x[3 * i + 1] - c1) * s;
  x[3 * i + 2] = (x[3 * i + 2] - c2) * s;
  for (int c = 0; c < 3; c++) v[3 * i + c] *= s;
}

/* `auto`'s bounds, as mb_flow_sqrt_kappa on the host (src/ops/flow):
 * hl[0] = max_i (a_ii + sum_j |a_ij|) (entry order), hl[1] = min_i d_i
 * (1 for a fixed row), as the bits of non-negative float64 values, whose
 * integer order is their order; a low <= 0 (-0.0 included) counts as 0,
 * which makes the estimate infinite as on the host, and a NaN is skipped
 * as the host's comparisons skip it. */
__global__ void kappa_bounds(int32_t n, const int32_t *__restrict__ rowptr,
                             const int32_t *__restrict__ diag, const double *__restrict__ val,
                             const double *__restrict__ d, const double *__restrict__ fixed,
                             unsigned long long *__restrict__ hl) {
  const int32_t i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  double r = 0;
  const double a = val[diag[i]];
  for (int32_t k = rowptr[i]; k < rowptr[i + 1]; k++)
    if (k != diag[i]) r += fabs(val[k]);
  const double hi = a + r, low = fixed[i] != 0 ? 1.0 : d[i];
  if (hi > 0) atomicMax(hl, (unsigned long long)__double_as_longlong(hi));
  if (low > 0) atomicMin(hl + 1, (unsigned long long)__double_as_longlong(low));
  else if (!isnan(low)) atomicMin(hl + 1, 0ull); /* low <= 0: the host's lo <= 0, Inf */
}

/* Everything one run holds on the device and the host. */
struct flow_gpu {
  const mb_flow_params *p = nullptr;
  mb_flow_mesh *fm = nullptr;
  int split = 0;
  int32_t nr = 0, nc = 0;
  mb_csr *A = nullptr;              /* host pattern (Cholesky's analysis, uniform K) */
  mb_cuda_csr *dA = nullptr, *dL = nullptr;
  mb_cuda_cholesky *chol = nullptr;
  mb_cuda_amg *amg = nullptr;       /* solver amg: made at its first step */
  mb_cuda_halo *halo = nullptr;     /* device exchange of 3 values per row (split) */
  mb_reduce_device *rd = nullptr;
  mb_dbuf x, X, B, d, fixed, scratch, bad, bounds;
  mb_dbuf V;                        /* [nrows, 3] the last step's displacement */
  int have_v = 0;
  std::vector<double> hfixed;       /* host copy of the fixed flags [ncols] */
  const int32_t *rowptr = nullptr, *col = nullptr, *diag = nullptr;
  double *val = nullptr;            /* dA's device arrays */
  ~flow_gpu() {
    mb_csr_free(A);
    mb_cuda_csr_free(dA);
    mb_cuda_csr_free(dL);
    mb_cuda_cholesky_free(chol);
    mb_cuda_amg_free(amg);
    mb_cuda_halo_free(halo);
    mb_reduce_device_free(rd);
  }
};

/* Ghost rows of the device positions from their owners. */
mb_error refresh(flow_gpu *g) {
  if (!g->halo) return MB_SUCCESS;
  MB_CALL(mb_cuda_halo_begin(g->halo, MB_HALO_FORWARD, g->x.p, MB_HALO_MPI, nullptr));
  MB_CALL(mb_cuda_halo_end(g->halo, g->x.p));
  return MB_SUCCESS;
}

/* The first flagged row (n if none), reset for the next check. */
mb_error first_bad(flow_gpu *g, int32_t *row) {
  MB_CALL_CUDA(cudaMemcpy(row, g->bad.p, sizeof(int32_t), cudaMemcpyDeviceToHost));
  const int32_t none = g->nr;
  MB_CALL_CUDA(cudaMemcpy(g->bad.p, &none, sizeof(int32_t), cudaMemcpyHostToDevice));
  return MB_SUCCESS;
}

/* A local check agreed over the ranks: the smallest global id flagged. */
mb_error agreed_check(flow_gpu *g, const char *what, int step) {
  int32_t row = g->nr;
  mb_error e = first_bad(g, &row);
  if (!e && row < g->nr)
    e = mb_error_set(MB_ERR_NUMERIC, __FILE__, __LINE__, __func__, "%s: step %d: vertex %lld %s",
                     g->fm->name, step + 1, mb_flow_gid(g->fm, row), what);
  return mb_agree(g->fm->comm, e);
}

/* Exact sums over the owned rows: the area (sum of d) and, with c, the
 * mass-weighted centroid. Collective. */
mb_error area_centroid(flow_gpu *g, double *area, double *c) {
  mb_reduce_acc acc[4];
  for (int k = 0; k < 4; k++) mb_reduce_acc_zero(&acc[k]);
  const double *d = g->d.as<double>();
  MB_CALL(mb_reduce_device_acc(g->rd, nullptr, g->nr, d, nullptr, &acc[0]));
  if (c)
    for (int k = 0; k < 3; k++) {
      coordinate<<<blocks(g->nr), BLOCK>>>(g->nr, k, g->x.as<double>(), g->scratch.as<double>());
      MB_CHECK_LAUNCH("flow coordinate");
      MB_CALL(mb_reduce_device_acc(g->rd, nullptr, g->nr, d, g->scratch.as<double>(), &acc[1 + k]));
    }
  MB_CALL(mb_reduce_acc_allreduce(g->fm->comm, c ? 4 : 1, acc));
  *area = mb_reduce_acc_value(&acc[0]);
  if (c)
    for (int k = 0; k < 3; k++) c[k] = mb_reduce_acc_value(&acc[1 + k]) / *area;
  return MB_SUCCESS;
}

/* The mass of the current positions into d (dA's values are scratch here:
 * the system is combined into it afterwards). */
mb_error mass(flow_gpu *g) { return mb_cuda_cotangent_laplacian(g->dA, g->x.as<double>(), g->d.as<double>()); }

/* Device arrays, patterns and the positions (local work, no collective). */
mb_error setup(flow_gpu *g) {
  mb_flow_mesh *fm = g->fm;
  g->nr = (int32_t)fm->nrows;
  g->nc = (int32_t)fm->ncols;
  MB_CHECK(fm->adj->opp, MB_ERR_ARG, "%s: the flows need a triangle mesh (this one has polygons)",
           fm->name);
  MB_CALL(mb_csr_pattern(fm->adj, fm->nrows, fm->ncols, fm->global, &g->A));
  MB_CALL(mb_cuda_csr_create(g->A, fm->adj, &g->dA));
  MB_CALL(mb_cuda_csr_create(g->A, fm->adj, &g->dL));
  if (g->split) { /* one rank's bits on N ranks: the row-kernel product */
    mb_cuda_csr_set_product(g->dA, MB_CUDA_PRODUCT_ROWS);
    mb_cuda_csr_set_product(g->dL, MB_CUDA_PRODUCT_ROWS);
  }
  mb_cuda_csr_arrays(g->dA, &g->rowptr, &g->col, &g->diag, &g->val);
  const size_t nc = (size_t)g->nc + 1, nr = (size_t)g->nr + 1;
  MB_CALL(mb_dbuf_alloc(&g->x, sizeof(double) * 3 * nc, "flow positions"));
  MB_CALL(mb_dbuf_alloc(&g->X, sizeof(double) * 3 * nc, "flow solution"));
  MB_CALL(mb_dbuf_alloc(&g->B, sizeof(double) * 3 * nr, "flow right-hand side"));
  MB_CALL(mb_dbuf_alloc(&g->V, sizeof(double) * 3 * nr, "flow displacement"));
  MB_CALL(mb_dbuf_alloc(&g->d, sizeof(double) * nr, "flow diagonal"));
  MB_CALL(mb_dbuf_alloc(&g->fixed, sizeof(double) * nc, "flow fixed flags"));
  MB_CALL(mb_dbuf_alloc(&g->scratch, sizeof(double) * nr, "flow scratch"));
  MB_CALL(mb_dbuf_alloc(&g->bad, sizeof(int32_t), "flow check"));
  MB_CALL(mb_dbuf_alloc(&g->bounds, 2 * sizeof(unsigned long long), "flow solver bounds"));
  int32_t none = 0;
  MB_CALL(first_bad(g, &none));
  MB_CALL(mb_reduce_device_create(&g->rd));
  if (fm->halo) {
    MB_CALL(mb_cuda_halo_create(fm->halo, 3, 8, nullptr, &g->halo));
  }
  MB_CALL_CUDA(cudaMemcpy(g->x.p, fm->x, sizeof(double) * 3 * (size_t)g->nc,
                          cudaMemcpyHostToDevice));
  if (g->p->kind == MB_FLOW_FAIRING && g->p->weights == MB_FLOW_UNIFORM) {
    MB_CALL(mb_csr_uniform_laplacian(fm->adj, g->A));
    MB_CALL(mb_cuda_csr_upload(g->dL, g->A->val));
  }
  return MB_SUCCESS;
}

mb_error upload_fixed(flow_gpu *g, const double *fixed) {
  MB_CALL_CUDA(cudaMemcpy(g->fixed.p, fixed, sizeof(double) * (size_t)g->nc,
                          cudaMemcpyHostToDevice));
  return MB_SUCCESS;
}

/* The operator into dL and the diagonal into d; checks agreed. */
mb_error assemble_operator(flow_gpu *g, int step) {
  const mb_flow_params *p = g->p;
  mb_error e = MB_SUCCESS;
  if (p->kind == MB_FLOW_FAIRING) {
    if (p->weights == MB_FLOW_COTANGENT) e = mb_cuda_cotangent_laplacian(g->dL, g->x.as<double>(), nullptr);
    if (!e) {
      const int32_t *ddiag = nullptr;
      double *lval = nullptr;
      mb_cuda_csr_arrays(g->dL, nullptr, nullptr, &ddiag, &lval);
      weight_sums<<<blocks(g->nr), BLOCK>>>(g->nr, ddiag, lval, g->fixed.as<double>(),
                                            g->d.as<double>(), g->bad.as<int32_t>());
      if (cudaGetLastError() != cudaSuccess)
        e = mb_error_set(MB_ERR_CUDA, __FILE__, __LINE__, __func__, "flow weight sums failed");
    }
    MB_CALL(mb_agree(g->fm->comm, e));
    return agreed_check(g, "has a weight sum of zero or less (cotangent weights of its "
                           "triangles); use weights: uniform", step);
  }
  if (p->variant == MB_FLOW_CLASSIC || step == 0)
    e = mb_cuda_cotangent_laplacian(g->dL, g->x.as<double>(), g->d.as<double>());
  else
    e = mass(g);
  if (!e) {
    check_positive<<<blocks(g->nr), BLOCK>>>(g->nr, g->d.as<double>(), g->fixed.as<double>(),
                                             g->bad.as<int32_t>());
    if (cudaGetLastError() != cudaSuccess)
      e = mb_error_set(MB_ERR_CUDA, __FILE__, __LINE__, __func__, "flow mass check failed");
  }
  MB_CALL(mb_agree(g->fm->comm, e));
  return agreed_check(g, "has zero area around it (its triangles are degenerate)", step);
}

/* `auto`'s estimate (mb_flow_sqrt_kappa's value) from the device system. */
mb_error sqrt_kappa(flow_gpu *g, double *sk) {
  const unsigned long long init[2] = {0ull, 0x7ff0000000000000ull}; /* 0, +Inf */
  unsigned long long hl[2];
  MB_CALL_CUDA(cudaMemcpy(g->bounds.p, init, sizeof init, cudaMemcpyHostToDevice));
  if (g->nr) {
    kappa_bounds<<<blocks(g->nr), BLOCK>>>(g->nr, g->rowptr, g->diag, g->val, g->d.as<double>(),
                                           g->fixed.as<double>(),
                                           g->bounds.as<unsigned long long>());
    MB_CHECK_LAUNCH("flow solver bounds");
  }
  MB_CALL_CUDA(cudaMemcpy(hl, g->bounds.p, sizeof hl, cudaMemcpyDeviceToHost));
  double hi, lo;
  memcpy(&hi, &hl[0], sizeof hi);
  memcpy(&lo, &hl[1], sizeof lo);
  *sk = lo > 0 ? sqrt(hi / lo) : INFINITY;
  return MB_SUCCESS;
}

mb_error solve(flow_gpu *g, mb_solve_stats *st) {
  const mb_flow_params *p = g->p;
  mb_solver_method m = (mb_solver_method)p->solver;
  if (m == MB_SOLVER_AUTO) {
    if (g->split) m = MB_SOLVER_PCG;
    else {
      double sk = 0;
      MB_CALL(sqrt_kappa(g, &sk));
      m = sk <= MB_FLOW_AUTO_SQRT_KAPPA_GPU ? MB_SOLVER_PCG : MB_SOLVER_AMG;
      mb_log(MB_LOG_VERBOSE, "%s: solver auto: sqrt(kappa) bound %.3g %s %g: %s", g->fm->name,
             sk, m == MB_SOLVER_PCG ? "<=" : ">", (double)MB_FLOW_AUTO_SQRT_KAPPA_GPU,
             mb_solver_method_name(m));
    }
  }
  MB_CALL_CUDA(cudaMemcpy(g->X.p, g->x.p, sizeof(double) * 3 * (size_t)g->nc,
                          cudaMemcpyDeviceToDevice));
  if (g->have_v && g->nr) {
    predict<<<blocks(3 * (int64_t)g->nr), BLOCK>>>(g->nr, g->x.as<double>(), g->V.as<double>(),
                                                   g->X.as<double>());
    MB_CHECK_LAUNCH("flow predictor");
  }
  memset(st, 0, sizeof *st);
  if (m == MB_SOLVER_PCG) {
    const mb_pcg_opts o = {p->tolerance, p->max_iterations, nullptr, nullptr};
    MB_CALL(mb_cuda_pcg_solve(g->fm->comm, g->fm->halo, g->dA, 3, g->B.as<double>(),
                              g->X.as<double>(), &o, st));
    return MB_SUCCESS;
  }
  if (m == MB_SOLVER_AMG) {
    MB_CHECK(!g->split, MB_ERR_UNSUPPORTED,
             "%s: solver amg runs on a whole mesh only; a split mesh uses pcg", g->fm->name);
    /* the hierarchy's structure from the first step's matrix, on the host;
     * its values on the device at every step */
    const double t0 = mb_wtime();
    const int first = !g->amg;
    if (first) {
      MB_CALL(mb_cuda_csr_download(g->dA, g->A->val));
      mb_amg *h = nullptr;
      mb_amg_opts ao = mb_amg_opts_default();
      MB_CALL(mb_amg_opts_env(&ao));
      MB_CALL(mb_amg_create(g->A, &ao, &h));
      const mb_error e = mb_cuda_amg_create(h, g->dA, &g->amg);
      mb_amg_free(h);
      MB_CALL(e);
    }
    const double t1 = mb_wtime();
    MB_CALL(mb_cuda_amg_update(g->amg, g->dA));
    const double t2 = mb_wtime();
    const mb_pcg_opts o = {p->tolerance, p->max_iterations, nullptr, g->amg};
    MB_CALL(mb_cuda_pcg_solve(g->fm->comm, nullptr, g->dA, 3, g->B.as<double>(),
                              g->X.as<double>(), &o, st));
    st->analyze_ms = first ? 1e3 * (t1 - t0) : 0.0;
    st->factor_ms = 1e3 * (t2 - t1);
    return MB_SUCCESS;
  }
  MB_CHECK(!g->split, MB_ERR_UNSUPPORTED,
           "%s: solver cholesky runs on a whole mesh only; a split mesh uses pcg", g->fm->name);
  if (!g->chol) MB_CALL(mb_cuda_cholesky_create(g->A, &g->chol));
  MB_CALL(mb_cuda_cholesky_factor(g->chol, g->dA, st));
  MB_CALL(mb_cuda_cholesky_solve(g->chol, 3, g->B.as<double>(), g->X.as<double>(), st));
  return MB_SUCCESS;
}

mb_error rescale_area(flow_gpu *g, double a0) { /* and the displacement v with x */
  MB_CALL(refresh(g));
  MB_CALL(mass(g));
  double area, c[3];
  MB_CALL(area_centroid(g, &area, c));
  MB_CHECK(area > 0 && isfinite(area), MB_ERR_NUMERIC,
           "%s: the surface's area became %g; rescale: area cannot restore it", g->fm->name, area);
  recentre_scale<<<blocks(g->nr), BLOCK>>>(g->nr, c[0], c[1], c[2], sqrt(a0 / area),
                                           g->x.as<double>(), g->V.as<double>());
  MB_CHECK_LAUNCH("flow rescale");
  return MB_SUCCESS;
}

/* Where phases are asked for: wait for the device, then the wall clock (s). */
mb_error phase_mark(const mb_flow_report *rep, double *t) {
  if (!rep->phase) return MB_SUCCESS;
  MB_CALL_CUDA(cudaDeviceSynchronize());
  *t = mb_wtime();
  return MB_SUCCESS;
}

mb_error run(flow_gpu *g, mb_flow_report *rep) {
  const mb_flow_params *p = g->p;
  mb_flow_mesh *fm = g->fm;
  mb_error e = MB_SUCCESS;
  for (int64_t i = 0; i < 3 * fm->nrows && !e; i++)
    if (!isfinite(fm->x[i]))
      e = mb_error_set(MB_ERR_NUMERIC, __FILE__, __LINE__, __func__,
                       "%s: vertex %lld has a non-finite coordinate", fm->name,
                       mb_flow_gid(fm, i / 3));
  MB_CALL(mb_agree(fm->comm, e));
  MB_CALL(mb_flow_refresh(fm, 3, fm->x));
  MB_CALL(mb_agree(fm->comm, setup(g)));
  g->hfixed.assign((size_t)g->nc + 1, 0.0);
  MB_CALL(mb_flow_mark_fixed(p, fm, g->hfixed.data()));
  MB_CALL(mb_agree(fm->comm, upload_fixed(g, g->hfixed.data())));
  double a0 = 0;
  if (p->kind == MB_FLOW_MCF && p->rescale == MB_FLOW_RESCALE_AREA) {
    MB_CALL(mass(g));
    MB_CALL(area_centroid(g, &a0, nullptr));
  }
  for (int s = 0; s < p->steps; s++) {
    if (mb_op_should_stop(fm->ctx, s, p->steps)) return mb_op_stopped(fm->ctx);
    double t[3] = {0, 0, 0};
    MB_CALL(phase_mark(rep, &t[0]));
    MB_CALL(assemble_operator(g, s));
    MB_CALL(mb_agree(fm->comm, mb_cuda_csr_combine(g->dA, 1.0, g->d.as<double>(), -p->time_step,
                                                    g->dL)));
    eliminate<<<blocks(g->nr), BLOCK>>>(g->nr, g->rowptr, g->col, g->diag, g->val,
                                        g->d.as<double>(), g->fixed.as<double>(),
                                        g->x.as<double>(), g->B.as<double>());
    MB_CALL(mb_agree(fm->comm, cudaGetLastError() == cudaSuccess
                                   ? MB_SUCCESS
                                   : mb_error_set(MB_ERR_CUDA, __FILE__, __LINE__, __func__,
                                                  "flow system kernel failed")));
    MB_CALL(phase_mark(rep, &t[1]));
    MB_CALL(mb_agree(fm->comm, mb_flow_at_step(fm, s, solve(g, &rep->step[s]))));
    MB_CALL(phase_mark(rep, &t[2]));
    take_solution<<<blocks(g->nr), BLOCK>>>(g->nr, g->X.as<double>(), g->fixed.as<double>(),
                                            g->x.as<double>(), g->V.as<double>(),
                                            g->bad.as<int32_t>());
    MB_CALL(agreed_check(g, "became non-finite", s));
    g->have_v = 1;
    if (p->kind == MB_FLOW_MCF && p->rescale == MB_FLOW_RESCALE_AREA)
      MB_CALL(mb_agree(fm->comm, rescale_area(g, a0)));
    MB_CALL(refresh(g));
    if (rep->phase) {
      double t3 = 0;
      MB_CALL(phase_mark(rep, &t3));
      rep->phase[s] = mb_flow_phases{1e3 * (t[1] - t[0]), 1e3 * (t[2] - t[1]), 1e3 * (t3 - t[2])};
    }
    const mb_solve_stats *st = &rep->step[s];
    mb_log(MB_LOG_VERBOSE,
           "%s: step %d: %s on the GPU, %d iterations, relative residual %.3g (analysis %.1f ms, "
           "factor %.1f ms, solve %.1f ms)",
           fm->name, s + 1, mb_solver_method_name(st->method), st->iterations, st->residual,
           st->analyze_ms, st->factor_ms, st->solve_ms);
  }
  MB_CALL_CUDA(cudaMemcpy(fm->x, g->x.p, sizeof(double) * 3 * (size_t)g->nc,
                          cudaMemcpyDeviceToHost));
  rep->steps = p->steps;
  return MB_SUCCESS;
}

} // namespace

extern "C" mb_error mb_flow_run_cuda(const mb_flow_params *p, mb_flow_mesh *fm,
                                     mb_flow_report *rep) {
  MB_CHECK(p && fm && rep && rep->step && p->steps >= 1, MB_ERR_ARG,
           "mb_flow_run_cuda: bad arguments");
  mb_error e;
  {
    flow_gpu g;
    g.p = p;
    g.fm = fm;
    g.split = fm->halo != nullptr || fm->global != nullptr;
    e = run(&g, rep);
  }
  if (e) (void)cudaGetLastError();
  return e;
}
