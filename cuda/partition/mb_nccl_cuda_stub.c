/* meshbatch: NCCL in builds without CUDA: refused, MPI carries the halo. */
#include "mb_nccl.h"

#define MB_NO_CUDA_MSG                                                           \
  "this meshbatch was built without the CUDA backend; install the CUDA toolkit " \
  "and reconfigure with -DMESHBATCH_CUDA=ON"

mb_error mb_nccl_create(MPI_Comm comm, mb_nccl **nccl) {
  (void)comm; (void)nccl;
  MB_FAIL(MB_ERR_UNSUPPORTED, MB_NO_CUDA_MSG);
}

void mb_nccl_free(mb_nccl *nccl) { (void)nccl; }

