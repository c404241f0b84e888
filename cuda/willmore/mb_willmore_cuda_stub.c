/* meshbatch: willmore_flow's CUDA entry in builds without CUDA (see mb_willmore.h). */
#include "mb_willmore.h"

mb_error mb_willmore_run_cuda(const mb_willmore_params *p, mb_willmore_mesh *wm,
                              mb_willmore_report *rep) {
  (void)p; (void)rep;
  MB_FAIL(MB_ERR_UNSUPPORTED, "%s: the CUDA backend is not built in (configure with "
          "-DMESHBATCH_CUDA=ON)", wm ? wm->name : "mesh");
}
