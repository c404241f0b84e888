/* meshbatch: NCCL communicators for GPU halo exchanges (partition layer).
 * Implemented in cuda/mb_nccl.cu; builds without CUDA link
 * partition/mb_nccl_cuda_stub.c, which refuses with MB_ERR_UNSUPPORTED.
 */
#ifndef MB_NCCL_H
#define MB_NCCL_H

#include <mpi.h>

#include "mb_error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * NCCL halo transport. Instead of staging through pinned host buffers and
 * MPI, the halo travels GPU to GPU with ncclSend/ncclRecv (NVIDIA NCCL,
 * point-to-point since 2.7), on a second stream of the domain: it waits for
 * the rows next to the halo, packs them on the device, exchanges, and
 * unpacks into the ghosts while the domain's stream updates the interior.
 */
typedef struct mb_nccl mb_nccl;

/* An NCCL communicator over the ranks of comm, each on its current device.
 * Collective over comm. NCCL drives one GPU per rank: where two ranks share
 * a device, or in a build without NCCL, every rank gets MB_ERR_UNSUPPORTED
 * with the reason (callers then use MPI). Errors: MB_ERR_UNSUPPORTED,
 * MB_ERR_CUDA (NCCL failure), MB_ERR_MPI, MB_ERR_MEMORY. */
mb_error mb_nccl_create(MPI_Comm comm, mb_nccl **nccl);

/* Destroy the communicator; NULL allowed. Not collective. */
void mb_nccl_free(mb_nccl *nccl);

#ifdef __cplusplus
}
#endif
#endif
