/* meshbatch: the umbrella operator, CPU reference (see mb_umbrella.h). */
#include "mb_umbrella.h"

void mb_umbrella_rows(int64_t nrows, const int64_t *row, const int64_t *col, const double *x,
                      double *u) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < nrows; i++) {
    double s[3] = {0.0, 0.0, 0.0};
    for (int64_t k = row[i]; k < row[i + 1]; k++)
      for (int c = 0; c < 3; c++) s[c] += x[3 * col[k] + c] - x[3 * i + c];
    const int64_t deg = row[i + 1] - row[i];
    for (int c = 0; c < 3; c++) u[3 * i + c] = deg ? s[c] / (double)deg : 0.0;
  }
}
