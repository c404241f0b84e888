/* meshbatch: parallel partitioning through the ParMETIS interface of
 * PT-Scotch (see mb_partition.h). Kept apart from mb_partition.c because
 * parmetis.h and metis.h declare the same status names. */
#include "mb_partition.h"

#include <stdlib.h>

#include "mb_config.h"
#include "mb_mpi.h"

#if MESHBATCH_HAVE_PARMETIS
#include <parmetis.h>
#endif

/* Parts without the library: g -> g when nv <= nparts, else contiguous blocks. */
static void block_parts(const int64_t *vtxdist, int rank, int size, int nparts, int32_t *part) {
  const int64_t nv = vtxdist[size];
  for (int64_t g = vtxdist[rank]; g < vtxdist[rank + 1]; g++)
    part[g - vtxdist[rank]] =
        nparts == 1 ? 0 : nv <= nparts ? (int32_t)g : (int32_t)((g * nparts) / nv);
}

#if MESHBATCH_HAVE_PARMETIS
/* ParMETIS_V3_PartKway on the rows of this rank. */
static mb_error part_kway(MPI_Comm comm, const int64_t *vtxdist, int size, int rank,
                          const int64_t *xadj, const int64_t *adjncy, int nparts, int32_t *part) {
  const int64_t nlocal = vtxdist[rank + 1] - vtxdist[rank], nnz = xadj[nlocal];
  SCOTCH_Num *dist = malloc(sizeof *dist * (size_t)(size + 1));
  SCOTCH_Num *xa = malloc(sizeof *xa * (size_t)(nlocal + 1));
  SCOTCH_Num *adj = malloc(sizeof *adj * (size_t)(nnz ? nnz : 1));
  SCOTCH_Num *where = malloc(sizeof *where * (size_t)(nlocal ? nlocal : 1));
  float *tpwgts = malloc(sizeof *tpwgts * (size_t)nparts);
  mb_error e = MB_SUCCESS;
  if (!dist || !xa || !adj || !where || !tpwgts) {
    e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
    goto done;
  }
  for (int r = 0; r <= size; r++) dist[r] = (SCOTCH_Num)vtxdist[r];
  for (int64_t i = 0; i <= nlocal; i++) xa[i] = (SCOTCH_Num)xadj[i];
  for (int64_t k = 0; k < nnz; k++) adj[k] = (SCOTCH_Num)adjncy[k];
  for (int p = 0; p < nparts; p++) tpwgts[p] = 1.0f / (float)nparts;
  SCOTCH_Num wgtflag = 0, numflag = 0, ncon = 1, np = nparts, options[3] = {0, 0, 0}, cut = 0;
  float ubvec = 1.05f;
  int rc = ParMETIS_V3_PartKway(dist, xa, adj, NULL, NULL, &wgtflag, &numflag, &ncon, &np,
                                tpwgts, &ubvec, options, &cut, where, &comm);
  if (rc != METIS_OK)
    e = mb_error_set(MB_ERR_UNSUPPORTED, __FILE__, __LINE__, __func__,
                     "ParMETIS_V3_PartKway (PT-Scotch) failed with code %d for %d parts", rc,
                     nparts);
  for (int64_t i = 0; !e && i < nlocal; i++) part[i] = (int32_t)where[i];
done:
  free(dist); free(xa); free(adj); free(where); free(tpwgts);
  return e;
}
#endif

mb_error mb_partition_parmetis(MPI_Comm comm, const int64_t *vtxdist, const int64_t *xadj,
                               const int64_t *adjncy, int nparts, int32_t *part) {
  int rank, size;
  MB_CALL_MPI(MPI_Comm_rank(comm, &rank));
  MB_CALL_MPI(MPI_Comm_size(comm, &size));
  MB_CHECK(nparts >= 1, MB_ERR_ARG, "number of parts must be >= 1 (got %d)", nparts);
  int64_t nnz_max = xadj[vtxdist[rank + 1] - vtxdist[rank]];
  MB_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &nnz_max, 1, MPI_INT64_T, MPI_MAX, comm));
  int empty_block = 0;
  for (int r = 0; r < size; r++) empty_block |= vtxdist[r + 1] == vtxdist[r];
  if (nparts == 1 || vtxdist[size] <= nparts || empty_block) {
    block_parts(vtxdist, rank, size, nparts, part);
    return MB_SUCCESS;
  }
#if MESHBATCH_HAVE_PARMETIS
  int level;
  MB_CALL_MPI(MPI_Query_thread(&level));
  MB_CHECK(level == MPI_THREAD_MULTIPLE, MB_ERR_UNSUPPORTED,
           "PT-Scotch's ParMETIS interface needs MPI initialised with MPI_THREAD_MULTIPLE "
           "(MPI_Init_thread); this process has thread level %d", level);
  const int64_t num_max = sizeof(SCOTCH_Num) == 4 ? INT32_MAX : INT64_MAX;
  MB_CHECK(vtxdist[size] <= num_max && nnz_max <= num_max, MB_ERR_ARG,
           "graph with %lld vertices exceeds the %zu-bit integers of the ParMETIS library",
           (long long)vtxdist[size], 8 * sizeof(SCOTCH_Num));
  mb_error e = part_kway(comm, vtxdist, size, rank, xadj, adjncy, nparts, part);
  MB_CALL(mb_agree(comm, e));
  return MB_SUCCESS;
#else
  (void)adjncy;
  MB_FAIL(MB_ERR_UNSUPPORTED, "this meshbatch was built without ParMETIS (install "
          "libscotchparmetis-dev and configure again, or use partitioner: metis)");
#endif
}
