/* meshbatch: one mesh distributed over ranks (see mb_distributed.h). */
#include "mb_distributed.h"

#include <stdlib.h>
#include <string.h>

#include "mb_mpi.h"
#include "mb_partition.h"

void mb_distributed_free(mb_distributed_mesh *dm) {
  if (!dm) return;
  free(dm->part);
  free(dm->vtxdist);
  mb_local_domain_free(dm->domain);
  mb_halo_free(dm->halo);
  free(dm->x);
  for (int k = 0; k < dm->nfields; k++) {
    free(dm->fields[k].name);
    free(dm->fields[k].data);
  }
  free(dm->fields);
  for (int k = 0; k < dm->nface_fields; k++) {
    free(dm->face_fields[k].name);
    free(dm->face_fields[k].data);
  }
  free(dm->face_fields);
  free(dm->face_global);
  free(dm->face_offsets);
  free(dm->face_vertices);
  free(dm->face_corners);
  free(dm->facedist);
  free(dm);
}

static int field_index(const mb_field *fields, int nfields, const char *name) {
  for (int k = 0; k < nfields; k++)
    if (!strcmp(fields[k].name, name)) return k;
  return -1;
}

int mb_distributed_field_index(const mb_distributed_mesh *dm, const char *name) {
  return field_index(dm->fields, dm->nfields, name);
}

int mb_distributed_face_field_index(const mb_distributed_mesh *dm, const char *name) {
  return field_index(dm->face_fields, dm->nface_fields, name);
}

/* Make (or, by name, reset) a zeroed float64 field of nrows * ncomp values
 * in the list *fields [*nfields]. */
static mb_error field_list_add(mb_field **fields, int *nfields, int64_t nrows, const char *name,
                               int ncomp, double **data) {
  const size_t n = (size_t)nrows * (size_t)ncomp;
  int k = field_index(*fields, *nfields, name);
  if (k >= 0 && (*fields)[k].ncomp == ncomp) {
    memset((*fields)[k].data, 0, sizeof(double) * n);
    *data = (*fields)[k].data;
    return MB_SUCCESS;
  }
  double *v = calloc(n ? n : 1, sizeof *v);
  MB_CHECK(v, MB_ERR_MEMORY, "out of memory for field '%s'", name);
  if (k < 0) {
    char *copy = mb_strdup(name);
    mb_field *f = realloc(*fields, sizeof *f * (size_t)(*nfields + 1));
    if (f) *fields = f;
    if (!copy || !f) {
      free(copy);
      free(v);
      MB_FAIL(MB_ERR_MEMORY, "out of memory for field '%s'", name);
    }
    k = (*nfields)++;
    (*fields)[k] = (mb_field){.name = copy};
  }
  free((*fields)[k].data);
  (*fields)[k].data = v;
  (*fields)[k].ncomp = ncomp;
  (*fields)[k].dtype = MB_FLOAT64;
  *data = v;
  return MB_SUCCESS;
}

mb_error mb_distributed_add_field(mb_distributed_mesh *dm, const char *name, int ncomp,
                                  double **data) {
  MB_CHECK(ncomp >= 1 && name && name[0], MB_ERR_ARG,
           "mb_distributed_add_field: a field needs a name and ncomp >= 1");
  MB_CALL(field_list_add(&dm->fields, &dm->nfields, dm->domain->nowned + dm->domain->nghost,
                         name, ncomp, data));
  return MB_SUCCESS;
}

mb_error mb_distributed_add_face_field(mb_distributed_mesh *dm, const char *name, int ncomp,
                                       double **data) {
  MB_CHECK(ncomp >= 1 && name && name[0], MB_ERR_ARG,
           "mb_distributed_add_face_field: a field needs a name and ncomp >= 1");
  MB_CHECK(dm->facedist, MB_ERR_ARG, "mb_distributed_add_face_field: the owned faces are not "
           "made yet (mb_distributed_pull_fields makes them)");
  MB_CALL(field_list_add(&dm->face_fields, &dm->nface_fields, dm->nfaces, name, ncomp, data));
  return MB_SUCCESS;
}

/* Rank 0 decides the parts (given or METIS); everyone receives them. */
static mb_error share_parts(mb_distributed_mesh *dm, const mb_adjacency *g, const int32_t *given) {
  mb_error e = MB_SUCCESS;
  if (!(dm->part = malloc(sizeof *dm->part * (size_t)(g->nv ? g->nv : 1))))
    e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  if (!e && dm->rank == 0) {
    if (given) memcpy(dm->part, given, sizeof *dm->part * (size_t)g->nv);
    else e = mb_partition_metis(g, dm->size, dm->part);
  }
  MB_CALL(mb_agree(dm->comm, e));
  MB_CALL_MPI(MPI_Bcast(dm->part, (int)g->nv, MPI_INT32_T, 0, dm->comm));
  return MB_SUCCESS;
}

/* Slabs of vertex rows for writing the result: contiguous blocks in rank order. */
static mb_error block_slabs(mb_distributed_mesh *dm) {
  MB_CALLOC(dm->vtxdist, (size_t)dm->size + 1);
  for (int r = 0; r <= dm->size; r++) dm->vtxdist[r] = dm->nv * r / dm->size;
  return MB_SUCCESS;
}

/* This rank's numbering (in RCM order for locality) and local positions. */
static mb_error build_local(mb_distributed_mesh *dm, const mb_adjacency *g, const double *xyz,
                            int depth) {
  int64_t *order = malloc(sizeof *order * (size_t)(g->nv ? g->nv : 1));
  mb_error e = order ? mb_adjacency_rcm(g, order)
                     : mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  if (!e) e = mb_local_domain_build(g, dm->part, dm->rank, depth, order, &dm->domain);
  free(order);
  if (!e) {
    const mb_local_domain *d = dm->domain;
    dm->x = malloc(sizeof(double) * 3 * (size_t)(d->nowned + d->nghost + 1));
    if (!dm->x) e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
    for (int64_t l = 0; !e && l < d->nowned + d->nghost; l++)
      memcpy(dm->x + 3 * l, xyz + 3 * d->global[l], 3 * sizeof(double));
  }
  return e;
}

mb_error mb_distributed_create(MPI_Comm comm, const mb_adjacency *g, const double *xyz,
                               const int32_t *part, int depth, mb_distributed_mesh **out) {
  mb_distributed_mesh *dm = calloc(1, sizeof *dm);
  mb_error e = dm ? MB_SUCCESS : mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  MB_CALL(mb_agree(comm, e));
  dm->comm = comm;
  dm->nv = g->nv;
  MB_CALL_MPI(MPI_Comm_rank(comm, &dm->rank));
  MB_CALL_MPI(MPI_Comm_size(comm, &dm->size));
  MB_CALL_GOTO(e, fail, share_parts(dm, g, part));
  MB_CALL_GOTO(e, fail, mb_agree(comm, block_slabs(dm)));
  e = build_local(dm, g, xyz, depth);
  MB_CALL_GOTO(e, fail, mb_agree(comm, e));
  MB_CALL_GOTO(e, fail, mb_distributed_halo(dm, 3, &dm->halo));
  *out = dm;
  return MB_SUCCESS;
fail:
  mb_distributed_free(dm);
  return e;
}

/* Values travel as 3 float64 per vertex (positions). */
mb_error mb_partitioned_gather_figures(const mb_local_domain *d, const mb_halo *h,
                                       const mb_pass_timing *t, mb_rank_figures *all) {
  int nn;
  int64_t ns, nr;
  mb_halo_stats(h, &nn, &ns, &nr);
  double passes = t->passes ? (double)t->passes : 1;
  mb_rank_figures mine = {(double)d->nowned, (double)d->nghost, (double)nn,
                          3.0 * sizeof(double) * (double)(ns + nr), 1e3 * t->compute_s / passes,
                          1e3 * t->exchange_s / passes};
  MB_CALL_MPI(MPI_Gather(&mine, 6, MPI_DOUBLE, all, 6, MPI_DOUBLE, 0, mb_halo_comm(h)));
  return MB_SUCCESS;
}

mb_error mb_distributed_halo(const mb_distributed_mesh *dm, int ncomp, mb_halo **halo) {
  const mb_local_domain *d = dm->domain;
  MB_CALL(mb_halo_create(dm->comm, d->nowned, d->global, d->nghost, d->global + d->nowned,
                         d->ghost_owner, ncomp, halo));
  return MB_SUCCESS;
}
