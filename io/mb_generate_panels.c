/* meshbatch: lifted quad grids with handles, the deform op's test and
 * benchmark inputs (see mb_generate.h, mb_generate_panels). */
#include "mb_generate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

mb_error mb_generate_panels(int64_t min_vertices, int shape, double height, int interior_handles,
                            double lift, mb_mesh **out) {
  MB_CHECK(out, MB_ERR_ARG, "mb_generate_panels: NULL output");
  *out = NULL;
  MB_CHECK(min_vertices >= 9 && min_vertices < INT32_MAX, MB_ERR_ARG,
           "panels: the size must be in [9, 2^31 - 1] vertices (got %lld)",
           (long long)min_vertices);
  MB_CHECK(shape == MB_PANELS_DOME || shape == MB_PANELS_SADDLE, MB_ERR_ARG,
           "panels: shape %d is not dome (0) or saddle (1)", shape);
  MB_CHECK(interior_handles == 0 || interior_handles == 1 || interior_handles == 5, MB_ERR_ARG,
           "panels: %d interior handles (0, 1 or 5)", interior_handles);
  MB_CHECK(isfinite(height) && isfinite(lift), MB_ERR_ARG,
           "panels: the height and the lift must be finite");
  int64_t n = (int64_t)sqrt((double)min_vertices);
  while (n * n < min_vertices) n++;
  if (n < 3) n = 3;
  const int64_t nv = n * n, nq = (n - 1) * (n - 1);
  char name[64];
  snprintf(name, sizeof name, "panels_%s_%lld", shape == MB_PANELS_DOME ? "dome" : "saddle",
           (long long)nv);
  mb_mesh *m = NULL;
  MB_CALL(mb_mesh_create(name, nv, nq, 4 * nq, &m));
  m->kind = MB_KIND_SURFACE;
  m->index = 0;
  double *h = malloc(sizeof(double) * 3 * (size_t)nv);
  if (!h) {
    mb_mesh_free(m);
    MB_FAIL(MB_ERR_MEMORY, "panels: out of memory");
  }
  const double r2 = sqrt(2.0);
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) {
      double *p = m->xyz + 3 * (j * n + i);
      const double x = -1.0 + 2.0 * (double)i / (double)(n - 1);
      const double y = -1.0 + 2.0 * (double)j / (double)(n - 1);
      p[0] = x;
      p[1] = y;
      p[2] = shape == MB_PANELS_DOME ? height * (sqrt(4.0 - x * x - y * y) - r2) / (2.0 - r2)
                                     : height * x * y;
      /* the corners and the sides' midpoints */
      const int side_i = i == 0 || i == n - 1, side_j = j == 0 || j == n - 1;
      const int pinned = (side_i && side_j) || (side_i && j == n / 2) || (side_j && i == n / 2);
      for (int d = 0; d < 3; d++) h[3 * (j * n + i) + d] = pinned ? p[d] : NAN;
    }
  const int64_t c = n / 2, a = n / 4, b = (3 * n) / 4;
  const int64_t pick[5][2] = {{c, c}, {a, a}, {b, a}, {a, b}, {b, b}};
  for (int k = 0; k < interior_handles; k++) {
    const int64_t v = pick[k][1] * n + pick[k][0];
    for (int d = 0; d < 3; d++) h[3 * v + d] = m->xyz[3 * v + d] + (d == 2 ? lift : 0.0);
  }
  for (int64_t j = 0; j < n - 1; j++)
    for (int64_t i = 0; i < n - 1; i++) {
      const int64_t v00 = j * n + i, f = j * (n - 1) + i;
      int64_t *q = m->face_indices + 4 * f;
      q[0] = v00, q[1] = v00 + 1, q[2] = v00 + n + 1, q[3] = v00 + n;
    }
  for (int64_t f = 0; f <= nq; f++) m->face_offsets[f] = 4 * f;
  mb_error e = mb_mesh_set_field(m, "handle", 3, h);
  free(h);
  if (e) {
    mb_mesh_free(m);
    MB_CALL(e);
  }
  *out = m;
  return MB_SUCCESS;
}
