/* meshbatch: the CPU stencil kernels for one value type, included by
 * mb_stencil_cpu.c with T (float or double) and SFX (f32 or f64) defined.
 * The arithmetic is the contract of mb_stencil.h. */

#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(name, SFX)

/* Framed block: the ghost planes of the 6 faces (whole grid). */
static void FN(fill_faces)(const mb_stencil_grid *g, const int64_t L[3], T *u) {
  const int64_t G = 4;
  const T out = (T)g->outside;
  for (int a = 0; a < 3; a++) {
    const int b = (a + 1) % 3, c = (a + 2) % 3;
    for (int side = 0; side < 2; side++)
#pragma omp parallel for collapse(2) schedule(static)
      for (int64_t d = 0; d < G; d++)
        for (int64_t q = 0; q < g->n[b]; q++)
          for (int64_t r = 0; r < g->n[c]; r++) {
            int64_t idx[3], src[3];
            idx[a] = side == 0 ? -1 - d : g->n[a] + d; /* point index along a */
            idx[b] = q;
            idx[c] = r;
            for (int e = 0; e < 3; e++) src[e] = idx[e];
            src[a] = ((idx[a] % g->n[a]) + g->n[a]) % g->n[a];
            const int64_t p = ((idx[0] + G) * L[1] + idx[1] + G) * L[2] + idx[2] + G;
            const int64_t s = ((src[0] + G) * L[1] + src[1] + G) * L[2] + src[2] + G;
            u[p] = g->bc == MB_STENCIL_PERIODIC ? u[s] : out;
          }
  }
}

/* du on the block's points of framed arrays (strides of L). */
MB_STENCIL_CLONES
static void FN(derivative_framed)(const mb_stencil_grid *g, const int64_t L[3], int axis,
                                  const T *restrict u, T *restrict du) {
  const int64_t G = 4, st = axis == 0 ? L[1] * L[2] : axis == 1 ? L[2] : 1;
  const mb_stencil_weights wt = mb_stencil_weights_of(g);
  const T e1 = (T)wt.first[axis][0], e2 = (T)wt.first[axis][1], e3 = (T)wt.first[axis][2],
          e4 = (T)wt.first[axis][3];
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t k = 0; k < g->n[0]; k++)
    for (int64_t j = 0; j < g->n[1]; j++) {
      const int64_t row = ((k + G) * L[1] + j + G) * L[2] + G;
      const T *restrict v = u + row;
      T *restrict w = du + row;
#pragma omp simd
      for (int64_t i = 0; i < g->n[2]; i++) {
        T s = e1 * (v[i + st] - v[i - st]);
        s = FMA(e2, v[i + 2 * st] - v[i - 2 * st], s);
        s = FMA(e3, v[i + 3 * st] - v[i - 3 * st], s);
        w[i] = FMA(e4, v[i + 4 * st] - v[i - 4 * st], s);
      }
    }
}

/* The Laplacian's weights in T: f[a][k - 1] and the center f0. */
typedef struct FN(lap_weights) {
  T f[3][4], f0;
} FN(lap_weights);

static FN(lap_weights) FN(lap_weights_of)(const mb_stencil_grid *g) {
  const mb_stencil_weights wt = mb_stencil_weights_of(g);
  FN(lap_weights) w;
  for (int a = 0; a < 3; a++)
    for (int k = 0; k < 4; k++) w.f[a][k] = (T)wt.second[a][k];
  w.f0 = (T)wt.center;
  return w;
}

/* The Laplacian at point v[i] of a framed row (strides sz, sy), the chain
 * of mb_stencil.h: f0 u, then the z, y and x terms, k = 1..4 each. */
MB_STENCIL_INLINE T FN(lap_at)(const T *v, int64_t i, int64_t sz, int64_t sy, const FN(lap_weights) *w) {
  T s = w->f0 * v[i];
  s = FMA(w->f[0][0], v[i + sz] + v[i - sz], s);
  s = FMA(w->f[0][1], v[i + 2 * sz] + v[i - 2 * sz], s);
  s = FMA(w->f[0][2], v[i + 3 * sz] + v[i - 3 * sz], s);
  s = FMA(w->f[0][3], v[i + 4 * sz] + v[i - 4 * sz], s);
  s = FMA(w->f[1][0], v[i + sy] + v[i - sy], s);
  s = FMA(w->f[1][1], v[i + 2 * sy] + v[i - 2 * sy], s);
  s = FMA(w->f[1][2], v[i + 3 * sy] + v[i - 3 * sy], s);
  s = FMA(w->f[1][3], v[i + 4 * sy] + v[i - 4 * sy], s);
  s = FMA(w->f[2][0], v[i + 1] + v[i - 1], s);
  s = FMA(w->f[2][1], v[i + 2] + v[i - 2], s);
  s = FMA(w->f[2][2], v[i + 3] + v[i - 3], s);
  return FMA(w->f[2][3], v[i + 4] + v[i - 4], s);
}

/* One sweep over the block's points of framed arrays (strides of L):
 * out = lap(u) (SWEEP_LAP), fma(c, lap(u), u) (SWEEP_HEAT) or
 * fma(c, lap(u), (u + u) - prev) (SWEEP_WAVE), the arithmetic of
 * mb_stencil.h. out may alias prev, not u. Each row's loop is one of three,
 * so that the compiler vectorizes it. */
MB_STENCIL_CLONES
static void FN(lap_sweep)(const mb_stencil_grid *g, const int64_t L[3], int what, T c,
                          const T *u, const T *prev, T *out) {
  const int64_t G = 4, sz = L[1] * L[2], sy = L[2], nx = g->n[2];
  const FN(lap_weights) w = FN(lap_weights_of)(g);
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t k = 0; k < g->n[0]; k++)
    for (int64_t j = 0; j < g->n[1]; j++) {
      const int64_t row = ((k + G) * L[1] + j + G) * L[2] + G;
      const T *restrict v = u + row;
      if (what == SWEEP_LAP) {
        T *restrict o = out + row;
#pragma omp simd
        for (int64_t i = 0; i < nx; i++) o[i] = FN(lap_at)(v, i, sz, sy, &w);
      } else if (what == SWEEP_HEAT) {
        T *restrict o = out + row;
#pragma omp simd
        for (int64_t i = 0; i < nx; i++) o[i] = FMA(c, FN(lap_at)(v, i, sz, sy, &w), v[i]);
      } else {
        const T *p = prev + row;
        T *o = out + row;
#pragma omp simd
        for (int64_t i = 0; i < nx; i++)
          o[i] = FMA(c, FN(lap_at)(v, i, sz, sy, &w), (v[i] + v[i]) - p[i]);
      }
    }
}

/* Copy the block's points between a plain array (ghost 0) and a frame. */
static void FN(to_frame)(const mb_stencil_grid *g, const int64_t L[3], const T *plain, T *framed) {
  const int64_t G = 4;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t k = 0; k < g->n[0]; k++)
    for (int64_t j = 0; j < g->n[1]; j++)
      memcpy(framed + ((k + G) * L[1] + j + G) * L[2] + G, plain + (k * g->n[1] + j) * g->n[2],
             sizeof(T) * (size_t)g->n[2]);
}

static void FN(from_frame)(const mb_stencil_grid *g, const int64_t L[3], const T *framed, T *plain) {
  const int64_t G = 4;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t k = 0; k < g->n[0]; k++)
    for (int64_t j = 0; j < g->n[1]; j++)
      memcpy(plain + (k * g->n[1] + j) * g->n[2], framed + ((k + G) * L[1] + j + G) * L[2] + G,
             sizeof(T) * (size_t)g->n[2]);
}

mb_error FN(mb_stencil_fill_ghosts)(const mb_stencil_grid *g, T *u) {
  int64_t L[3];
  MB_CALL(check_grid(g, 1, L));
  MB_CHECK(g->ghost == 4, MB_ERR_ARG, "mb_stencil_fill_ghosts needs ghost 4 (got %d)", g->ghost);
  FN(fill_faces)(g, L, u);
  return MB_SUCCESS;
}

/* A framed working copy of a plain array, ghosts filled (ghost 0 path). */
static mb_error FN(framed_copy)(const mb_stencil_grid *g, const int64_t L[3], const T *u, T **f) {
  *f = malloc(sizeof(T) * (size_t)(L[0] * L[1] * L[2]));
  MB_CHECK(*f, MB_ERR_MEMORY, "out of memory for a grid of %lld x %lld x %lld points",
           (long long)g->n[0], (long long)g->n[1], (long long)g->n[2]);
  FN(to_frame)(g, L, u, *f);
  FN(fill_faces)(g, L, *f);
  return MB_SUCCESS;
}

/* One sweep on framed arrays: a derivative along axis `what` (SWEEP_DZ,
 * _DY, _DX) or lap_sweep's Laplacian, heat or wave step. */
static void FN(sweep)(const mb_stencil_grid *g, const int64_t L[3], int what, T c, const T *u,
                      const T *prev, T *out) {
  if (what <= SWEEP_DX) FN(derivative_framed)(g, L, what, u, out);
  else FN(lap_sweep)(g, L, what, c, u, prev, out);
}

/* A sweep on plain arrays (ghost 0): u framed with its ghost faces filled
 * by the boundary rule, prev framed as it is, the result copied out of the
 * frame. */
static mb_error FN(plain_sweep)(const mb_stencil_grid *g, const int64_t L[3], int what, T c,
                                const T *u, const T *prev, T *out) {
  const size_t size = sizeof(T) * (size_t)(L[0] * L[1] * L[2]);
  T *fu = NULL, *fo = malloc(size), *fp = what == SWEEP_WAVE ? malloc(size) : NULL;
  mb_error e = fo && (fp || what != SWEEP_WAVE) ? FN(framed_copy)(g, L, u, &fu) : MB_ERR_MEMORY;
  if (!e) {
    if (fp) FN(to_frame)(g, L, prev, fp);
    FN(sweep)(g, L, what, c, fu, fp, fo);
    FN(from_frame)(g, L, fo, out);
  }
  free(fu);
  free(fo);
  free(fp);
  MB_CHECK(!e, MB_ERR_MEMORY, "out of memory for a grid of %lld x %lld x %lld points",
           (long long)g->n[0], (long long)g->n[1], (long long)g->n[2]);
  return MB_SUCCESS;
}

/* The entry points of the sweeps: framed arrays (ghost 4) swept as they
 * are, plain ones (ghost 0) through framed copies. */
static mb_error FN(sweep_entry)(const mb_stencil_grid *g, int what, T c, const T *u,
                                const T *prev, T *out) {
  int64_t L[3];
  MB_CALL(check_grid(g, 0, L));
  MB_CHECK(u != out, MB_ERR_ARG, "stencil: the output array must not be the input");
  if (g->ghost == 0) return FN(plain_sweep)(g, L, what, c, u, prev, out);
  FN(sweep)(g, L, what, c, u, prev, out);
  return MB_SUCCESS;
}

mb_error FN(mb_stencil_derivative)(const mb_stencil_grid *g, int axis, const T *u, T *du) {
  MB_CHECK(axis >= 0 && axis <= 2, MB_ERR_ARG, "derivative axis %d (0 z, 1 y, 2 x)", axis);
  return FN(sweep_entry)(g, SWEEP_DZ + axis, 0, u, NULL, du);
}

mb_error FN(mb_stencil_laplacian)(const mb_stencil_grid *g, const T *u, T *lap) {
  return FN(sweep_entry)(g, SWEEP_LAP, 0, u, NULL, lap);
}

/* heat steps on a framed whole grid u, fused (mb_stencil_heat_step),
 * alternating between u and work (framed too); the last step lands in u. */
static void FN(heat_framed)(const mb_stencil_grid *g, const int64_t L[3], T a, int64_t nsteps,
                            T *u, T *work) {
  T *cur = u, *next = work;
  for (int64_t s = 0; s < nsteps; s++) {
    FN(fill_faces)(g, L, cur);
    FN(lap_sweep)(g, L, SWEEP_HEAT, a, cur, NULL, next);
    T *t = cur;
    cur = next;
    next = t;
  }
  if (cur != u) memcpy(u, cur, sizeof(T) * (size_t)(L[0] * L[1] * L[2]));
}

mb_error FN(mb_stencil_heat_step)(const mb_stencil_grid *g, double coef, const T *u, T *out) {
  return FN(sweep_entry)(g, SWEEP_HEAT, (T)coef, u, NULL, out);
}

mb_error FN(mb_stencil_wave_step)(const mb_stencil_grid *g, double coef, const T *prev,
                                  const T *u, T *out) {
  return FN(sweep_entry)(g, SWEEP_WAVE, (T)coef, u, prev, out);
}

mb_error FN(mb_stencil_heat)(const mb_stencil_grid *g, double alpha, double dt, int64_t nsteps,
                             T *u, T *work) {
  int64_t L[3];
  MB_CALL(check_grid(g, 1, L));
  MB_CALL(mb_stencil_check_heat(g, alpha, dt, nsteps));
  const T a = (T)(alpha * dt);
  if (g->ghost == 4) {
    FN(heat_framed)(g, L, a, nsteps, u, work);
    return MB_SUCCESS;
  }
  const size_t size = sizeof(T) * (size_t)(L[0] * L[1] * L[2]);
  T *fu = malloc(size), *fw = malloc(size);
  if (!fu || !fw) {
    free(fu);
    free(fw);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for heat steps");
  }
  FN(to_frame)(g, L, u, fu);
  FN(heat_framed)(g, L, a, nsteps, fu, fw);
  FN(from_frame)(g, L, fu, u);
  free(fu);
  free(fw);
  (void)work;
  return MB_SUCCESS;
}

/* leapfrog steps on framed whole grids: prev, cur, and next (= work) */
static void FN(wave_framed)(const mb_stencil_grid *g, const int64_t L[3], T b, int64_t nsteps,
                            T *prev, T *cur, T *next, T **last_prev, T **last_cur) {
  for (int64_t s = 0; s < nsteps; s++) {
    FN(fill_faces)(g, L, cur);
    FN(lap_sweep)(g, L, SWEEP_WAVE, b, cur, prev, next);
    T *t = prev;
    prev = cur;
    cur = next;
    next = t;
  }
  *last_prev = prev;
  *last_cur = cur;
}

mb_error FN(mb_stencil_wave)(const mb_stencil_grid *g, double c, double dt, int64_t nsteps,
                             T *u_prev, T *u, T *work) {
  int64_t L[3];
  MB_CALL(check_grid(g, 1, L));
  MB_CALL(mb_stencil_check_wave(g, c, dt, nsteps));
  const T b = (T)(c * c * dt * dt);
  const size_t size = sizeof(T) * (size_t)(L[0] * L[1] * L[2]);
  T *fp = malloc(size), *fc = malloc(size), *fn = malloc(size);
  if (!fp || !fc || !fn) {
    free(fp);
    free(fc);
    free(fn);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for wave steps");
  }
  if (g->ghost == 4) {
    memcpy(fp, u_prev, size);
    memcpy(fc, u, size);
  } else {
    FN(to_frame)(g, L, u_prev, fp);
    FN(to_frame)(g, L, u, fc);
  }
  T *lp, *lc;
  FN(wave_framed)(g, L, b, nsteps, fp, fc, fn, &lp, &lc);
  if (g->ghost == 4) {
    memcpy(u_prev, lp, size);
    memcpy(u, lc, size);
  } else {
    FN(from_frame)(g, L, lp, u_prev);
    FN(from_frame)(g, L, lc, u);
  }
  free(fp);
  free(fc);
  free(fn);
  (void)work;
  return MB_SUCCESS;
}

#undef FN
#undef CAT
#undef CAT_
