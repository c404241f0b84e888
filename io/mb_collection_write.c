/* meshbatch: the collective collection writer (mb_collection_write,
 * _write_slabs, _write_durable; see mb_collection.h): gather, check, write
 * through MPI-IO, agree on errors, publish. */
#include "mb_collection.h"
#include "mb_collection_private.h"

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mb_mpi.h"

/* ------------------------------------------------------------------ write */

/* Create tmp through MPI-IO with collective metadata, write everything and
 * close. Returns the collective outcome; local raw-data failures in *lerr.
 * MPI-IO on one rank too: it writes at pwrite's speed there, and under sec2
 * HDF5 places fractal-heap blocks (dense attributes and links) elsewhere:
 * other bytes (docs/benchmarks.md, "One rank: MPI-IO or sec2"). */
static mb_error write_h5(MPI_Comm comm, const char *tmp, const mb_wset *w, const mb_held *h,
                         int durable, mb_error *lerr) {
  int rank = 0;
  MB_CALL_MPI(MPI_Comm_rank(comm, &rank));
  MB_CALL(mb_agree(comm, rank == 0 ? mb_coll_check_space(tmp, mb_coll_estimated_bytes(w))
                                   : MB_SUCCESS));
  hid_t file;
  MB_CALL(mb_coll_create_h5(comm, tmp, &file));
  mb_error e = mb_coll_put_contents(file, w, h, lerr);
  /* durable: every rank's writes to the disk (MPI_File_sync, collective: so
   * only where no rank's write failed, agreed first) */
  int any = e || *lerr;
  const int rc0 = MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, comm);
  if (rc0 != MPI_SUCCESS) { /* reported; the file is discarded below */
    any = 1;
    if (!e)
      e = mb_error_mpi_failed(rc0, __FILE__, __LINE__, __func__,
                              "MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, comm)");
  }
  if (!any && durable && H5Fflush(file, H5F_SCOPE_GLOBAL) < 0)
    e = mb_error_set(MB_ERR_IO, __FILE__, __LINE__, __func__, "cannot sync %s to the disk", tmp);
  int failed = e || *lerr; /* a failed write: the file is discarded (closed with room made) */
  if (failed && mb_coll_full_note(tmp)[0]) { /* the cause, seen before the close frees room */
    char why[1024];
    snprintf(why, sizeof why, "%s", mb_error_message());
    const mb_error w = mb_error_set(e ? e : *lerr, __FILE__, __LINE__, __func__,
                                    "cannot write %s: %s%s", tmp, why, mb_coll_full_note(tmp));
    if (e) e = w; else *lerr = w;
  }
  const int rc = MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, comm);
  if (rc != MPI_SUCCESS) { /* an MPI failure aborts: reported, the file discarded */
    failed = 1;
    if (!e)
      e = mb_error_mpi_failed(rc, __FILE__, __LINE__, __func__,
                              "MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, comm)");
  }
  const mb_error ce = mb_coll_close_h5(comm, file, tmp, failed);
  if (!e) e = ce;
  MB_CALL(e);
  return MB_SUCCESS;
}

/* Steps before the file exists: local checks, gathering, folder and tmp name. */
static mb_error prepare_write(MPI_Comm comm, const char *path, const mb_held *h, mb_wset *w,
                              char *suffix, size_t slen) {
  mb_buf b = {0};
  mb_error e = MB_SUCCESS;
  if (h->nlocal < 0 || (h->nlocal > 0 && !h->local) || h->nslabs < 0 ||
      (h->nslabs > 0 && !h->slabs))
    e = mb_error_set(MB_ERR_ARG, __FILE__, __LINE__, __func__,
                     "mb_collection_write: bad nlocal or nslabs");
  else
    e = mb_coll_pack_local(h, &b);
  if (e) mb_error_trace(__FILE__, __LINE__, __func__);
  mb_error g = mb_agree(comm, e); /* every rank stops here if one failed */
  if (g) { free(b.data); return g; }
  e = mb_coll_gather_meshes(comm, &b, w);
  free(b.data);
  MB_CALL(mb_agree(comm, e));
  long long pid = (long long)getpid();
  e = h->rank == 0 ? mb_coll_check_folder(path) : MB_SUCCESS;
  const int rc = MPI_Bcast(&pid, 1, MPI_LONG_LONG, 0, comm);
  if (rc && !e) e = mb_error_set_mpi(rc, __FILE__, __LINE__, __func__, "MPI_Bcast(&pid)");
  snprintf(suffix, slen, ".tmp-%lld", pid);
  MB_CALL(mb_agree(comm, e));
  return MB_SUCCESS;
}

static mb_error write_collection(MPI_Comm comm, const char *path, int nlocal,
                                 mb_mesh *const *local, int nslabs, const mb_mesh_slab *slabs,
                                 int durable, int xdmf) {
  MB_CHECK(path && *path, MB_ERR_ARG, "mb_collection_write: empty path");
  MB_CHECK(strlen(path) < MB_PATH_MAX - 300, MB_ERR_ARG, "mb_collection_write: path too long");
  mb_held h = {0, nlocal, nslabs, local, slabs};
  MB_CALL_MPI(MPI_Comm_rank(comm, &h.rank));
  mb_h5_quiet q = mb_h5_quiet_begin();
  mb_wset w = {0};
  char suffix[64], tmp[MB_PATH_MAX];
  mb_error e = prepare_write(comm, path, &h, &w, suffix, sizeof suffix);
  if (e) goto out;
  snprintf(tmp, sizeof tmp, "%s%s", path, suffix);
  mb_error lerr = MB_SUCCESS;
  e = write_h5(comm, tmp, &w, &h, durable, &lerr);
  e = mb_agree(comm, e ? e : lerr);
  if (!e)
    e = mb_agree(comm, h.rank == 0 ? mb_coll_publish(path, tmp, suffix, &w, durable, xdmf)
                                   : MB_SUCCESS);
  if (e && h.rank == 0) unlink(tmp);
out:
  mb_coll_wset_free(&w);
  mb_h5_quiet_end(q);
  if (e) mb_error_trace(__FILE__, __LINE__, __func__);
  return e;
}

mb_error mb_collection_write_slabs(MPI_Comm comm, const char *path, int nlocal,
                                   mb_mesh *const *local, int nslabs,
                                   const mb_mesh_slab *slabs) {
  MB_CALL(write_collection(comm, path, nlocal, local, nslabs, slabs, 0, 1));
  return MB_SUCCESS;
}

mb_error mb_collection_write_durable(MPI_Comm comm, const char *path, int nlocal,
                                     mb_mesh *const *local, int nslabs,
                                     const mb_mesh_slab *slabs) {
  MB_CALL(write_collection(comm, path, nlocal, local, nslabs, slabs, 1, 1));
  return MB_SUCCESS;
}

mb_error mb_collection_write_checkpoint(MPI_Comm comm, const char *path, int nlocal,
                                        mb_mesh *const *local, int nslabs,
                                        const mb_mesh_slab *slabs) {
  MB_CALL(write_collection(comm, path, nlocal, local, nslabs, slabs, 1, 0));
  return MB_SUCCESS;
}

mb_error mb_collection_write(MPI_Comm comm, const char *path, int nlocal,
                             mb_mesh *const *local_meshes) {
  MB_CALL(write_collection(comm, path, nlocal, local_meshes, 0, NULL, 0, 1));
  return MB_SUCCESS;
}
