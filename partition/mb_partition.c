/* meshbatch: METIS partitioning of the vertex graph (see mb_partition.h). */
#include "mb_partition.h"

#include <metis.h>
#include <stdlib.h>

#include "mb_config.h"

#if MESHBATCH_METIS_IDXTYPEWIDTH != IDXTYPEWIDTH
#error "metis.h differs from the one found at configure time"
#endif

mb_error mb_partition_metis(const mb_adjacency *adj, int nparts, int32_t *part) {
  const int64_t nv = adj->nv;
  MB_CHECK(nparts >= 1, MB_ERR_ARG, "number of parts must be >= 1 (got %d)", nparts);
  if (nparts == 1 || nv <= nparts) {
    for (int64_t i = 0; i < nv; i++) part[i] = nparts == 1 ? 0 : (int32_t)i;
    return MB_SUCCESS;
  }
  const int64_t idx_max = MESHBATCH_METIS_IDXTYPEWIDTH == 32 ? INT32_MAX : INT64_MAX;
  MB_CHECK(nv <= idx_max && adj->nnz <= idx_max, MB_ERR_ARG,
           "graph with %lld vertices and %lld edges exceeds METIS's %d-bit idx_t",
           (long long)nv, (long long)adj->nnz, MESHBATCH_METIS_IDXTYPEWIDTH);
  idx_t *xadj = malloc(sizeof *xadj * (size_t)(nv + 1));
  idx_t *adjncy = malloc(sizeof *adjncy * (size_t)(adj->nnz ? adj->nnz : 1));
  idx_t *where = malloc(sizeof *where * (size_t)nv);
  if (!xadj || !adjncy || !where) {
    free(xadj); free(adjncy); free(where);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for the METIS graph (%lld vertices)", (long long)nv);
  }
  for (int64_t i = 0; i <= nv; i++) xadj[i] = (idx_t)adj->row[i];
  for (int64_t k = 0; k < adj->nnz; k++) adjncy[k] = (idx_t)adj->col[k];
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = 1;
  options[METIS_OPTION_UFACTOR] = 30; /* allowed imbalance 1.03 */
  options[METIS_OPTION_CONTIG] = 0;
  idx_t n = (idx_t)nv, ncon = 1, np = (idx_t)nparts, cut = 0;
  int rc = METIS_PartGraphKway(&n, &ncon, xadj, adjncy, NULL, NULL, NULL, &np, NULL, NULL,
                               options, &cut, where);
  for (int64_t i = 0; rc == METIS_OK && i < nv; i++) part[i] = (int32_t)where[i];
  free(xadj);
  free(adjncy);
  free(where);
  MB_CHECK(rc == METIS_OK, MB_ERR_UNSUPPORTED, "METIS_PartGraphKway failed (code %d) for %d parts",
           rc, nparts);
  return MB_SUCCESS;
}

void mb_partition_measure(const mb_adjacency *adj, int nparts, const int32_t *part,
                          mb_partition_quality *q) {
  int64_t *owned = calloc((size_t)nparts, sizeof *owned);
  *q = (mb_partition_quality){.nparts = nparts};
  for (int64_t i = 0; i < adj->nv; i++) {
    if (owned) owned[part[i]]++;
    for (int64_t k = adj->row[i]; k < adj->row[i + 1]; k++)
      if (adj->col[k] > i && part[adj->col[k]] != part[i]) q->edge_cut++;
  }
  for (int p = 0; owned && p < nparts; p++) {
    if (owned[p] > q->max_owned) q->max_owned = owned[p];
    if (!owned[p]) q->nempty++;
  }
  q->mean_owned = (double)adj->nv / nparts;
  q->imbalance = q->mean_owned > 0 ? (double)q->max_owned / q->mean_owned : 1.0;
  free(owned);
}
