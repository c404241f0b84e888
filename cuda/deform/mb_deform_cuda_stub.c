/* meshbatch: the deform op's CUDA entry in builds without CUDA (see
 * mb_deform_cuda.h). */
#include "mb_deform_cuda.h"

mb_error mb_deform_run_cuda(const mb_deform_params *p, mb_deform_mesh *dm, mb_deform_report *rep,
                            const mb_deform_cuda_opts *o) {
  (void)p;
  (void)rep;
  (void)o;
  MB_FAIL(MB_ERR_UNSUPPORTED, "%s: the CUDA backend is not built in (configure with "
          "-DMESHBATCH_CUDA=ON)", dm && dm->name ? dm->name : "mesh");
}

void mb_deform_cuda_release(void) {}

mb_error mb_deform_cuda_prepare(const mb_deform_params *p, mb_deform_mesh *dm,
                                const mb_deform_cuda_opts *o, mb_deform_cuda_prep **out) {
  (void)p;
  (void)o;
  if (out) *out = NULL;
  MB_FAIL(MB_ERR_UNSUPPORTED, "%s: the CUDA backend is not built in (configure with "
          "-DMESHBATCH_CUDA=ON)", dm && dm->name ? dm->name : "mesh");
}

mb_error mb_deform_run_cuda_prepared(mb_deform_cuda_prep *prep, mb_deform_report *rep) {
  (void)prep;
  (void)rep;
  MB_FAIL(MB_ERR_UNSUPPORTED, "the CUDA backend is not built in (configure with "
          "-DMESHBATCH_CUDA=ON)");
}

void mb_deform_cuda_prep_free(mb_deform_cuda_prep *prep) { (void)prep; }
