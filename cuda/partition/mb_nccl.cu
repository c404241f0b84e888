/* meshbatch: NCCL communicators for device-to-device halo exchanges (see
 * mb_nccl.h). Built with or without NCCL: without,
 * mb_nccl_create says so and the MPI transport is used. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <new>

#include "mb_config.h"
#include "mb_nccl.h"
#include "mb_cuda_private.cuh"
#include "mb_mpi.h"

#if MESHBATCH_HAVE_NCCL
#include <nccl.h>

struct mb_nccl {
  ncclComm_t comm = nullptr;
  ~mb_nccl() {
    if (comm) ncclCommDestroy(comm);
  }
};

#define MB_CALL_NCCL(expr)                                                              \
  do {                                                                                  \
    ncclResult_t mb_nccl_rc_ = (expr);                                                  \
    if (mb_nccl_rc_ != ncclSuccess)                                                     \
      return mb_error_set(MB_ERR_CUDA, __FILE__, __LINE__, __func__, "NCCL call failed: %s: %s", \
                          #expr, ncclGetErrorString(mb_nccl_rc_));                      \
  } while (0)

/* NCCL drives one GPU per rank: refuse (on every rank) when two ranks share one. */
static mb_error distinct_devices(MPI_Comm comm, int rank, int size) {
  enum { KEY = 160 };
  char mine[KEY] = "", bus[64] = "";
  int device = 0;
  MB_CALL_CUDA(cudaGetDevice(&device));
  MB_CALL_CUDA(cudaDeviceGetPCIBusId(bus, (int)sizeof bus, device));
  char host[64] = "";
  gethostname(host, sizeof host - 1);
  snprintf(mine, sizeof mine, "%s GPU %s", host, bus);
  char *all = new (std::nothrow) char[(size_t)KEY * (size_t)size];
  MB_CHECK(all, MB_ERR_MEMORY, "out of memory");
  const int rc = MPI_Allgather(mine, KEY, MPI_CHAR, all, KEY, MPI_CHAR, comm);
  mb_error e = rc == MPI_SUCCESS ? MB_SUCCESS
                                 : mb_error_mpi_failed(rc, __FILE__, __LINE__, __func__,
                                                       "MPI_Allgather(GPU keys)");
  for (int a = 0; !e && a < size; a++)
    for (int b = a + 1; !e && b < size; b++)
      if (!strcmp(all + (size_t)a * KEY, all + (size_t)b * KEY))
        e = mb_error_set(MB_ERR_UNSUPPORTED, __FILE__, __LINE__, __func__,
                         "NCCL needs one GPU per rank, but ranks %d and %d share %s", a, b,
                         all + (size_t)a * KEY);
  delete[] all;
  (void)rank;
  return e;
}

static mb_error init_comm(MPI_Comm comm, int rank, int size, mb_nccl *c) {
  ncclUniqueId id;
  int rc = rank == 0 ? (int)ncclGetUniqueId(&id) : 0; /* everyone learns rank 0's outcome */
  MB_CALL_MPI(MPI_Bcast(&rc, 1, MPI_INT, 0, comm));
  MB_CHECK(rc == ncclSuccess, MB_ERR_CUDA, "ncclGetUniqueId failed on rank 0: %s",
           ncclGetErrorString((ncclResult_t)rc));
  MB_CALL_MPI(MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, comm));
  MB_CALL_NCCL(ncclCommInitRank(&c->comm, size, id, rank));
  return MB_SUCCESS;
}

extern "C" mb_error mb_nccl_create(MPI_Comm comm, mb_nccl **out) {
  int rank, size;
  MB_CALL_MPI(MPI_Comm_rank(comm, &rank));
  MB_CALL_MPI(MPI_Comm_size(comm, &size));
  MB_CALL(mb_agree(comm, distinct_devices(comm, rank, size)));
  mb_nccl *c = new (std::nothrow) mb_nccl;
  mb_error e = c ? MB_SUCCESS : mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  MB_CALL(mb_agree(comm, e));
  e = mb_agree(comm, init_comm(comm, rank, size, c));
  if (e) {
    delete c;
    return e;
  }
  *out = c;
  return MB_SUCCESS;
}

extern "C" void mb_nccl_free(mb_nccl *c) { delete c; }

mb_error mb_nccl_exchange(mb_nccl *c, cudaStream_t stream, int ncomp, const double *send,
                          double *recv, int nneighbors, const int *ranks,
                          const int64_t *send_offset, const int64_t *recv_offset) {
  MB_CALL_NCCL(ncclGroupStart());
  ncclResult_t rc = ncclSuccess; /* the first failure; the group is ended all the same */
  for (int k = 0; k < nneighbors && rc == ncclSuccess; k++) {
    size_t ns = (size_t)(send_offset[k + 1] - send_offset[k]) * (size_t)ncomp;
    size_t nr = (size_t)(recv_offset[k + 1] - recv_offset[k]) * (size_t)ncomp;
    if (ns) rc = ncclSend(send + send_offset[k] * ncomp, ns, ncclFloat64, ranks[k], c->comm, stream);
    if (nr && rc == ncclSuccess)
      rc = ncclRecv(recv + recv_offset[k] * ncomp, nr, ncclFloat64, ranks[k], c->comm, stream);
  }
  const ncclResult_t end = ncclGroupEnd();
  MB_CALL_NCCL(rc); /* ncclSend / ncclRecv */
  MB_CALL_NCCL(end);
  return MB_SUCCESS;
}

mb_error mb_nccl_group(mb_nccl *c, cudaStream_t stream, int n, const mb_nccl_msg *m) {
  MB_CALL_NCCL(ncclGroupStart());
  ncclResult_t rc = ncclSuccess; /* the first failure; the group is ended all the same */
  for (int k = 0; k < n && rc == ncclSuccess; k++) {
    if (!m[k].bytes) continue;
    rc = m[k].send ? ncclSend(m[k].buf, m[k].bytes, ncclUint8, m[k].peer, c->comm, stream)
                   : ncclRecv(m[k].buf, m[k].bytes, ncclUint8, m[k].peer, c->comm, stream);
  }
  const ncclResult_t end = ncclGroupEnd();
  MB_CALL_NCCL(rc); /* ncclSend / ncclRecv */
  MB_CALL_NCCL(end);
  return MB_SUCCESS;
}

#else /* no NCCL in this build */

mb_error mb_nccl_group(mb_nccl *c, cudaStream_t stream, int n, const mb_nccl_msg *m) {
  (void)c; (void)stream; (void)n; (void)m;
  MB_FAIL(MB_ERR_UNSUPPORTED, "this meshbatch was built without NCCL");
}

extern "C" mb_error mb_nccl_create(MPI_Comm comm, mb_nccl **out) {
  (void)comm; (void)out;
  MB_FAIL(MB_ERR_UNSUPPORTED, "this meshbatch was built without NCCL (halo exchanges use MPI)");
}

extern "C" void mb_nccl_free(mb_nccl *c) { (void)c; }

mb_error mb_nccl_exchange(mb_nccl *c, cudaStream_t stream, int ncomp, const double *send,
                          double *recv, int nneighbors, const int *ranks,
                          const int64_t *send_offset, const int64_t *recv_offset) {
  (void)c; (void)stream; (void)ncomp; (void)send; (void)recv; (void)nneighbors; (void)ranks;
  (void)send_offset; (void)recv_offset;
  MB_FAIL(MB_ERR_UNSUPPORTED, "this meshbatch was built without NCCL");
}

#endif
