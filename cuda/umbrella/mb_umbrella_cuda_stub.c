/* meshbatch: the umbrella room's CUDA launcher in builds without CUDA. */
#include "mb_umbrella.h"

mb_error mb_umbrella_rows_cuda(int64_t nrows, const int64_t *row, const int64_t *col, int64_t nx,
                               const double *x, double *u) {
  (void)nrows; (void)row; (void)col; (void)nx; (void)x; (void)u;
  MB_FAIL(MB_ERR_UNSUPPORTED, "this meshbatch was built without the CUDA backend; install the "
          "CUDA toolkit and reconfigure with -DMESHBATCH_CUDA=ON");
}
