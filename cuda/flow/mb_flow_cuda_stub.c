/* meshbatch: the flows' CUDA entry in builds without CUDA (see mb_flow.h). */
#include "mb_flow.h"

mb_error mb_flow_run_cuda(const mb_flow_params *p, mb_flow_mesh *fm, mb_flow_report *rep) {
  (void)p; (void)rep;
  MB_FAIL(MB_ERR_UNSUPPORTED, "%s: the CUDA backend is not built in (configure with "
          "-DMESHBATCH_CUDA=ON)", fm ? fm->name : "mesh");
}
