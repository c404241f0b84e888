/* meshbatch: one distributed domain for every split (see mb_domain.h). */
#include "mb_domain.h"

#include <stdlib.h>
#include <string.h>

#include "mb_adjacency.h"
#include "mb_log.h"
#include "mb_mpi.h"
#include "mb_partfile.h"
#include "mb_partition.h"

/* This rank's block of n rows: [n * rank / size, n * (rank + 1) / size). */
static void block_rows(int rank, int size, int64_t n, int64_t *first, int64_t *count) {
  *first = n * rank / size;
  *count = n * (rank + 1) / size - *first;
}

/* Rank 0: the parts of a mesh from the partition file when it names this
 * mesh (*part, owned by the caller), else NULL (METIS decides). */
static mb_error parts_from_file(const mb_domain *d, const char *path, const mb_mesh *m,
                                int32_t **part) {
  *part = NULL;
  if (!path) return MB_SUCCESS;
  mb_partfile *pf = NULL;
  MB_CALL(mb_partfile_read(path, &pf));
  mb_error e = MB_SUCCESS;
  if (!strcmp(pf->mesh, m->name)) {
    if (pf->nparts != d->size || pf->nv != m->nv)
      e = mb_error_set(MB_ERR_ARG, __FILE__, __LINE__, __func__,
                       "partition %s has %d %s for %lld vertices, but mesh '%s' has %lld "
                       "vertices and the run has %d %s", path, pf->nparts,
                       mb_plural(pf->nparts, "part", "parts"), (long long)pf->nv, m->name,
                       (long long)m->nv, d->size, mb_plural(d->size, "rank", "ranks"));
    else {
      *part = pf->vertex_part;
      pf->vertex_part = NULL;
    }
  }
  mb_partfile_free(pf);
  return e;
}

/* The blocks partitioner on a mesh every rank holds: vertex v belongs to
 * the rank whose block [nv * r / size, nv * (r + 1) / size) holds it. */
static mb_error block_parts(const mb_domain *d, int64_t nv, int32_t **part) {
  *part = malloc(sizeof **part * (size_t)(nv ? nv : 1));
  MB_CHECK(*part, MB_ERR_MEMORY, "out of memory for %lld vertex parts", (long long)nv);
  for (int r = 0; r < d->size; r++)
    for (int64_t v = nv * r / d->size; v < nv * (r + 1) / d->size; v++) (*part)[v] = r;
  return MB_SUCCESS;
}

/* Whether this rank reads only its block of rows (no rank the whole). */
static int reads_rows(const mb_domain *d, const mb_domain_source *src) {
  return d->partitioner == MB_PARTITIONER_PARMETIS ||
         (d->partitioner == MB_PARTITIONER_BLOCKS && src->by_rows);
}

/* The source's rows_read, where it has one: every rank, in step; agreed. */
static mb_error rows_ready(const mb_domain *d, const mb_domain_source *src) {
  return src->rows_read ? mb_agree(d->comm, src->rows_read(src->ctx)) : MB_SUCCESS;
}

/* This rank's block of 1/N of the vertex rows and 1/N of the face rows,
 * read by rows. Collective; errors agreed. */
static mb_error read_block_rows(mb_domain *d, const mb_domain_source *src) {
  MB_CHECK(src->by_rows, MB_ERR_ARG,
           "%s: partitioner: parmetis reads meshes from an HDF5 collection by slabs, and this "
           "is a mesh file (convert it first with meshbatch import, or use partitioner: metis)",
           src->path);
  mb_kind kind;
  int64_t nv = 0, nf = 0, shape[3], v0 = 0, nvrows = 0, f0 = 0, nfrows = 0;
  mb_error e = src->read_info(src->ctx, &kind, &nv, &nf, shape);
  if (!e) {
    block_rows(d->rank, d->size, nv, &v0, &nvrows);
    block_rows(d->rank, d->size, nf, &f0, &nfrows);
    e = src->read_rows(src->ctx, v0, nvrows, f0, nfrows, &d->slab);
  }
  MB_CALL(mb_agree(d->comm, e));
  mb_log(MB_LOG_VERBOSE, "[rank %d] %s: read vertex rows [%lld, %lld) of %lld, face rows "
         "[%lld, %lld) of %lld", d->rank, src->name, (long long)v0, (long long)(v0 + nvrows),
         (long long)nv, (long long)f0, (long long)(f0 + nfrows), (long long)nf);
  return rows_ready(d, src);
}

/* VERTICES on a mesh every rank reads whole: rank 0 partitions it (METIS,
 * the partition file or the blocks), the distributed mesh is built, and
 * this rank keeps its block of rows for the write. Collective; agreed. */
static mb_error vertices_from_whole(mb_domain *d, const mb_domain_spec *spec,
                                    const mb_domain_source *src) {
  mb_mesh *m = NULL;
  mb_adjacency *adj = NULL;
  int32_t *part = NULL;
  mb_error e = src->read_whole(src->ctx, &m);
  if (!e) e = mb_adjacency_build(m, &adj);
  if (!e && d->rank == 0)
    e = spec->partitioner == MB_PARTITIONER_BLOCKS ? block_parts(d, m->nv, &part)
                                                   : parts_from_file(d, spec->partition_file, m,
                                                                     &part);
  MB_CALL_GOTO(e, done, mb_agree(d->comm, e));
  MB_CALL_GOTO(e, done, rows_ready(d, src));
  MB_CALL_GOTO(e, done, mb_distributed_create(d->comm, adj, m->xyz, part, d->depth, &d->dm));
  int64_t v0, nvrows, f0, nfrows;
  block_rows(d->rank, d->size, m->nv, &v0, &nvrows);
  block_rows(d->rank, d->size, m->nf, &f0, &nfrows);
  e = mb_agree(d->comm, mb_mesh_slab_cut(m, v0, nvrows, f0, nfrows, &d->slab));
done:
  free(part);
  mb_adjacency_free(adj);
  mb_mesh_free(m);
  return e;
}

/* FACES (and anything that only needs rows): the same block of rows cut
 * from the whole dataset, which every rank reads. Collective; agreed. */
static mb_error rows_from_whole(mb_domain *d, const mb_domain_source *src) {
  mb_mesh *m = NULL;
  mb_error e = src->read_whole(src->ctx, &m);
  if (!e) {
    int64_t v0, nvrows, f0, nfrows;
    block_rows(d->rank, d->size, m->nv, &v0, &nvrows);
    block_rows(d->rank, d->size, m->nf, &f0, &nfrows);
    e = mb_mesh_slab_cut(m, v0, nvrows, f0, nfrows, &d->slab);
  }
  mb_mesh_free(m);
  MB_CALL(mb_agree(d->comm, e));
  return rows_ready(d, src);
}

/* CELLS: the Cartesian plan over the grid's shape and this rank's block,
 * by rows from a collection or cut from the whole grid. Collective. */
static mb_error cells(mb_domain *d, const mb_domain_source *src) {
  mb_mesh *whole = NULL;
  int64_t shape[3] = {0, 0, 0}, nv, nf;
  mb_kind kind = MB_KIND_GRID3D;
  mb_error e = MB_SUCCESS;
  if (src->by_rows) {
    e = src->read_info(src->ctx, &kind, &nv, &nf, shape);
  } else {
    e = src->read_whole(src->ctx, &whole);
    for (int a = 0; !e && a < 3; a++) shape[a] = whole->shape[a];
  }
  if (!e && kind != MB_KIND_GRID3D)
    e = mb_error_set(MB_ERR_ARG, __FILE__, __LINE__, __func__,
                     "%s is a %s dataset, and a split into grid blocks needs a grid3d",
                     src->path, mb_kind_name(kind));
  MB_CALL_GOTO(e, done, mb_agree(d->comm, e));
  MB_CALL_GOTO(e, done, mb_cart_create(d->comm, shape, 1, d->depth, &d->cart));
  e = whole ? mb_grid_block_cut(whole, d->cart->lo, d->cart->nloc, &d->slab)
            : src->read_block(src->ctx, d->cart->lo, d->cart->nloc, &d->slab);
  e = mb_agree(d->comm, e);
  if (!e) e = rows_ready(d, src);
done:
  mb_mesh_free(whole);
  return e;
}

mb_error mb_domain_create(MPI_Comm comm, const mb_domain_spec *spec, const mb_domain_source *src,
                          mb_domain **out) {
  *out = NULL;
  int rank, size;
  MB_CALL_MPI(MPI_Comm_rank(comm, &rank));
  MB_CALL_MPI(MPI_Comm_size(comm, &size));
  mb_domain *d = calloc(1, sizeof *d);
  mb_error e = d ? MB_SUCCESS
                 : mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  MB_CALL(mb_agree(comm, e));
  d->split = spec->split;
  d->comm = comm;
  d->partitioner = spec->partitioner;
  d->depth = spec->depth < 1 ? 1 : spec->depth;
  d->rank = rank;
  d->size = size;
  switch (spec->split) {
  case MB_SPLIT_VERTICES:
    if (reads_rows(d, src)) {
      MB_CALL_GOTO(e, fail, read_block_rows(d, src));
      MB_CALL_GOTO(e, fail, mb_distributed_create_from_slab(
                                comm, &d->slab, d->depth,
                                spec->partitioner == MB_PARTITIONER_BLOCKS, &d->dm));
    } else {
      MB_CALL_GOTO(e, fail, vertices_from_whole(d, spec, src));
    }
    MB_CALL_GOTO(e, fail, mb_distributed_pull_fields(d->dm, &d->slab));
    break;
  case MB_SPLIT_FACES:
    MB_CALL_GOTO(e, fail, reads_rows(d, src) ? read_block_rows(d, src) : rows_from_whole(d, src));
    break;
  case MB_SPLIT_CELLS:
    MB_CALL_GOTO(e, fail, cells(d, src));
    break;
  default:
    e = mb_error_set(MB_ERR_ARG, __FILE__, __LINE__, __func__,
                     "mb_domain_create: split %d is not a split", (int)spec->split);
    goto fail;
  }
  *out = d;
  return MB_SUCCESS;
fail:
  mb_domain_free(d);
  return e;
}

mb_error mb_domain_finish(mb_domain *d) {
  if (d->split != MB_SPLIT_VERTICES) return MB_SUCCESS;
  return mb_agree(d->comm, mb_distributed_to_slab(d->dm, &d->slab));
}

void mb_domain_take_slab(mb_domain *d, mb_mesh_slab *slab) {
  *slab = d->slab;
  d->slab = (mb_mesh_slab){0};
}

/* CELLS, under -v: the Cartesian blocks and every rank's halo figures (the
 * surfaces' `[partition]   rank R: ...` lines): owned points, ghost points
 * filled from other ranks per exchange, neighbour ranks, and the bytes sent
 * and received per time step of one float64 field (float32: half). Faces
 * across an axis the plan does not cut wrap inside the rank: not counted.
 * Collective over d->comm. */
static mb_error report_cells(const mb_domain *d, const char *name, int gpu) {
  const mb_cart *c = d->cart;
  if (!c || mb_log_get_level() < MB_LOG_VERBOSE) return MB_SUCCESS; /* the same on every rank */
  double ghosts = 0;
  int nbrs[6], nn = 0;
  for (int a = 0; a < 3; a++)
    for (int s = 0; s < 2; s++) {
      const int r = c->nbr[a][s];
      if (r == MPI_PROC_NULL || r == c->rank) continue;
      ghosts += (double)c->ghost * (double)(c->nloc[0] * c->nloc[1] * c->nloc[2] / c->nloc[a]);
      int seen = 0;
      for (int k = 0; k < nn; k++) seen |= nbrs[k] == r;
      if (!seen) nbrs[nn++] = r;
    }
  /* a face sent for each ghost face received: sent + received, 8 bytes a value */
  const double mine[4] = {(double)(c->nloc[0] * c->nloc[1] * c->nloc[2]), ghosts, (double)nn,
                          2.0 * 8.0 * ghosts};
  double *all = d->rank == 0 ? malloc(sizeof *all * 4 * (size_t)d->size) : NULL;
  int ok = d->rank != 0 || all != NULL;
  MB_CALL_MPI(MPI_Bcast(&ok, 1, MPI_INT, 0, d->comm));
  MB_CHECK(ok, MB_ERR_MEMORY, "out of memory for the halo figures of %d ranks", d->size);
  const int rc = MPI_Gather(mine, 4, MPI_DOUBLE, all, 4, MPI_DOUBLE, 0, d->comm);
  if (rc != MPI_SUCCESS) free(all);
  MB_CALL_MPI(rc);
  if (d->rank == 0) {
    const int tr = c->gpu_transport[0] ? c->gpu_transport[0] : c->gpu_transport[1];
    mb_log(MB_LOG_VERBOSE, "[partition] %s: %d %s (%d x %d x %d along z, y, x), %d ghost "
           "%s per face, halo over %s", name, c->size, mb_plural(c->size, "block", "blocks"),
           c->dims[0], c->dims[1], c->dims[2], c->ghost, mb_plural(c->ghost, "plane", "planes"),
           gpu && tr ? mb_halo_transport_name((mb_halo_transport)tr) : "mpi");
    for (int r = 0; r < d->size; r++)
      mb_log(MB_LOG_VERBOSE, "[partition]   rank %d: %.0f owned, %.0f ghosts, %.0f neighbours, "
             "halo %.0f B/step (a float64 field)", r, all[4 * r], all[4 * r + 1],
             all[4 * r + 2], all[4 * r + 3]);
  }
  free(all);
  return MB_SUCCESS;
}

mb_error mb_domain_report(const mb_domain *d, const char *name, const mb_pass_timing *t, int gpu) {
  if (d->split == MB_SPLIT_CELLS) return report_cells(d, name, gpu);
  if (d->split != MB_SPLIT_VERTICES) return MB_SUCCESS;
  const mb_distributed_mesh *dm = d->dm;
  mb_partition_quality q;
  MB_CALL(mb_distributed_quality(dm, &q));
  mb_rank_figures *all = d->rank == 0 ? malloc(sizeof *all * (size_t)d->size) : NULL;
  MB_CHECK(d->rank != 0 || all, MB_ERR_MEMORY, "out of memory");
  const mb_pass_timing none = {0};
  if (!t) t = &none;
  mb_error e = mb_partitioned_gather_figures(dm->domain, dm->halo, t, all);
  if (!e && d->rank == 0) {
    mb_log(MB_LOG_NORMAL, "[partition] %s: %d %s (%s), edge cut %lld, owned imbalance %.3f "
           "(max/mean), %d empty part%s, halo over %s", name, q.nparts,
           mb_plural(q.nparts, "part", "parts"),
           mb_partitioner_name(d->partitioner), (long long)q.edge_cut, q.imbalance, q.nempty,
           q.nempty == 1 ? "" : "s", gpu ? mb_halo_transport_name(t->transport) : "mpi");
    for (int r = 0; r < d->size; r++)
      mb_log(MB_LOG_VERBOSE, "[partition]   rank %d: %.0f owned, %.0f ghosts, %.0f neighbours, "
             "halo %.0f B/pass, compute %.3f ms/pass, exchange %.3f ms/pass", r, all[r].owned,
             all[r].ghosts, all[r].neighbors, all[r].halo_bytes, all[r].compute_ms,
             all[r].exchange_ms);
  }
  free(all);
  MB_CALL(e);
  return MB_SUCCESS;
}

mb_error mb_domain_rows(MPI_Comm comm, mb_kind kind, int64_t nv, int64_t nf,
                        const int64_t shape[3], int64_t lo[3], int64_t n[3], int64_t *v0,
                        int64_t *nvrows, int64_t *f0, int64_t *nfrows) {
  int rank, size;
  MB_CALL_MPI(MPI_Comm_rank(comm, &rank));
  MB_CALL_MPI(MPI_Comm_size(comm, &size));
  *v0 = *nvrows = *f0 = *nfrows = 0;
  if (kind == MB_KIND_GRID3D) { /* this rank's block of the Cartesian plan */
    mb_cart *cart = NULL;
    MB_CALL(mb_cart_create(comm, shape, 0, 1, &cart));
    for (int a = 0; a < 3; a++) {
      lo[a] = cart->lo[a];
      n[a] = cart->nloc[a];
    }
    mb_cart_free(cart);
    return MB_SUCCESS;
  }
  block_rows(rank, size, nv, v0, nvrows);
  block_rows(rank, size, nf, f0, nfrows);
  return MB_SUCCESS;
}

void mb_domain_free(mb_domain *d) {
  if (!d) return;
  mb_distributed_free(d->dm);
  mb_cart_free(d->cart);
  mb_mesh_free(d->slab.rows);
  free(d);
}
