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
static void FN(derivative_framed)(const mb_stencil_grid *g, const int64_t L[3], int axis,
                                  const T *restrict u, T *restrict du) {
  const int64_t G = 4, st = axis == 0 ? L[1] * L[2] : axis == 1 ? L[2] : 1;
  const T c1 = (T)(4.0 / 5.0), c2 = (T)(-1.0 / 5.0), c3 = (T)(4.0 / 105.0),
          c4 = (T)(-1.0 / 280.0), r = (T)(1.0 / g->h[axis]);
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t k = 0; k < g->n[0]; k++)
    for (int64_t j = 0; j < g->n[1]; j++) {
      const int64_t row = ((k + G) * L[1] + j + G) * L[2] + G;
      const T *restrict v = u + row;
      T *restrict w = du + row;
      for (int64_t i = 0; i < g->n[2]; i++) {
        T s = c1 * (v[i + st] - v[i - st]);
        s = s + c2 * (v[i + 2 * st] - v[i - 2 * st]);
        s = s + c3 * (v[i + 3 * st] - v[i - 3 * st]);
        s = s + c4 * (v[i + 4 * st] - v[i - 4 * st]);
        w[i] = s * r;
      }
    }
}

/* lap on the block's points of framed arrays. */
static void FN(laplacian_framed)(const mb_stencil_grid *g, const int64_t L[3],
                                 const T *restrict u, T *restrict lap) {
  const int64_t G = 4, sz = L[1] * L[2], sy = L[2];
  const T d0 = (T)(-205.0 / 72.0), d1 = (T)(8.0 / 5.0), d2 = (T)(-1.0 / 5.0),
          d3 = (T)(8.0 / 315.0), d4 = (T)(-1.0 / 560.0);
  const T qz = (T)(1.0 / (g->h[0] * g->h[0])), qy = (T)(1.0 / (g->h[1] * g->h[1])),
          qx = (T)(1.0 / (g->h[2] * g->h[2]));
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t k = 0; k < g->n[0]; k++)
    for (int64_t j = 0; j < g->n[1]; j++) {
      const int64_t row = ((k + G) * L[1] + j + G) * L[2] + G;
      const T *restrict v = u + row;
      T *restrict w = lap + row;
      for (int64_t i = 0; i < g->n[2]; i++) {
        const T c = d0 * v[i];
        T z = c + d1 * (v[i + sz] + v[i - sz]);
        z = z + d2 * (v[i + 2 * sz] + v[i - 2 * sz]);
        z = z + d3 * (v[i + 3 * sz] + v[i - 3 * sz]);
        z = z + d4 * (v[i + 4 * sz] + v[i - 4 * sz]);
        T y = c + d1 * (v[i + sy] + v[i - sy]);
        y = y + d2 * (v[i + 2 * sy] + v[i - 2 * sy]);
        y = y + d3 * (v[i + 3 * sy] + v[i - 3 * sy]);
        y = y + d4 * (v[i + 4 * sy] + v[i - 4 * sy]);
        T x = c + d1 * (v[i + 1] + v[i - 1]);
        x = x + d2 * (v[i + 2] + v[i - 2]);
        x = x + d3 * (v[i + 3] + v[i - 3]);
        x = x + d4 * (v[i + 4] + v[i - 4]);
        w[i] = (z * qz + y * qy) + x * qx;
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

mb_error FN(mb_stencil_derivative)(const mb_stencil_grid *g, int axis, const T *u, T *du) {
  int64_t L[3];
  MB_CHECK(axis >= 0 && axis <= 2, MB_ERR_ARG, "derivative axis %d (0 z, 1 y, 2 x)", axis);
  MB_CALL(check_grid(g, 0, L));
  if (g->ghost == 4) {
    FN(derivative_framed)(g, L, axis, u, du);
    return MB_SUCCESS;
  }
  T *fu = NULL, *fd = NULL;
  MB_CALL(FN(framed_copy)(g, L, u, &fu));
  fd = malloc(sizeof(T) * (size_t)(L[0] * L[1] * L[2]));
  if (!fd) {
    free(fu);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for a derivative");
  }
  FN(derivative_framed)(g, L, axis, fu, fd);
  FN(from_frame)(g, L, fd, du);
  free(fu);
  free(fd);
  return MB_SUCCESS;
}

mb_error FN(mb_stencil_laplacian)(const mb_stencil_grid *g, const T *u, T *lap) {
  int64_t L[3];
  MB_CALL(check_grid(g, 0, L));
  if (g->ghost == 4) {
    FN(laplacian_framed)(g, L, u, lap);
    return MB_SUCCESS;
  }
  T *fu = NULL, *fl = NULL;
  MB_CALL(FN(framed_copy)(g, L, u, &fu));
  fl = malloc(sizeof(T) * (size_t)(L[0] * L[1] * L[2]));
  if (!fl) {
    free(fu);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for a Laplacian");
  }
  FN(laplacian_framed)(g, L, fu, fl);
  FN(from_frame)(g, L, fl, lap);
  free(fu);
  free(fl);
  return MB_SUCCESS;
}

/* heat steps on a framed whole grid u (work framed too) */
static void FN(heat_framed)(const mb_stencil_grid *g, const int64_t L[3], T a, int64_t nsteps,
                            T *u, T *work) {
  const int64_t G = 4;
  for (int64_t s = 0; s < nsteps; s++) {
    FN(fill_faces)(g, L, u);
    FN(laplacian_framed)(g, L, u, work);
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t k = 0; k < g->n[0]; k++)
      for (int64_t j = 0; j < g->n[1]; j++) {
        const int64_t row = ((k + G) * L[1] + j + G) * L[2] + G;
        T *restrict v = u + row;
        const T *restrict w = work + row;
        for (int64_t i = 0; i < g->n[2]; i++) v[i] = v[i] + a * w[i];
      }
  }
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
  const int64_t G = 4;
  for (int64_t s = 0; s < nsteps; s++) {
    FN(fill_faces)(g, L, cur);
    FN(laplacian_framed)(g, L, cur, next);
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t k = 0; k < g->n[0]; k++)
      for (int64_t j = 0; j < g->n[1]; j++) {
        const int64_t row = ((k + G) * L[1] + j + G) * L[2] + G;
        const T *restrict v = cur + row, *restrict p = prev + row;
        T *restrict w = next + row;
        for (int64_t i = 0; i < g->n[2]; i++) w[i] = ((v[i] + v[i]) - p[i]) + b * w[i];
      }
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
