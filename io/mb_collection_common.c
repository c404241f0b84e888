/* meshbatch: helpers shared by the files of the HDF5 collection: HDF5's
 * error stack, block transfers in pieces, the kinds a collection stores
 * (see mb_collection_private.h). */
#include "mb_collection.h"
#include "mb_collection_private.h"

#include <hdf5.h>
#include <stdlib.h>

/* ------------------------------------------------------------ HDF5 helpers */

mb_h5_quiet mb_h5_quiet_begin(void) {
  mb_h5_quiet q = {NULL, NULL};
  H5Eget_auto2(H5E_DEFAULT, &q.func, &q.data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  return q;
}

void mb_h5_quiet_end(mb_h5_quiet q) { H5Eset_auto2(H5E_DEFAULT, q.func, q.data); }

void mb_h5_close_id(hid_t id) {
  if (id < 0) return;
  switch (H5Iget_type(id)) {
  case H5I_DATASET: H5Dclose(id); break;
  case H5I_GROUP: H5Gclose(id); break;
  case H5I_ATTR: H5Aclose(id); break;
  case H5I_DATASPACE: H5Sclose(id); break;
  case H5I_DATATYPE: H5Tclose(id); break;
  case H5I_GENPROP_LST: H5Pclose(id); break;
  case H5I_FILE: H5Fclose(id); break;
  default: break;
  }
}

/* ------------------------------------------------------------ large transfers */

/* MPI-IO, under parallel HDF5, moves at most 2^31 - 1 bytes in one call, so
 * a dataset of 2 GiB or more must be read and written in pieces: slices
 * along the first (slowest) axis of at most this many bytes. Settable by
 * MESHBATCH_IO_PIECE_BYTES (tests use small pieces to reach every path). */
static size_t io_piece_bytes(void) {
  static size_t bytes = 0;
  if (!bytes) {
    const char *v = getenv("MESHBATCH_IO_PIECE_BYTES");
    long long b = v ? atoll(v) : 0;
    bytes = b > 0 ? (size_t)b : (size_t)1 << 30;
  }
  return bytes;
}

/* Read (write = 0) or write the block start[0..rank) + count[0..rank) of
 * dataset d from or into buf, whose memory is an array of mem_dims
 * (mem_dims[a] >= count[a]; the block lies at its origin), values of
 * memory type mt. Independent transfer, in slices of the first axis of at
 * most io_piece_bytes() (a single slice may be larger). Returns < 0 on
 * the first failing call. */
herr_t mb_h5_block_transfer(hid_t d, hid_t mt, int write, int rank, const hsize_t *start,
                            const hsize_t *count, const hsize_t *mem_dims, void *buf) {
  if (count[0] == 0) return 0;
  hsize_t slice = H5Tget_size(mt);
  for (int a = 1; a < rank; a++) slice *= count[a];
  hsize_t step = slice ? io_piece_bytes() / slice : count[0];
  if (step < 1) step = 1;
  hid_t fs = H5Dget_space(d), ms = H5Screate_simple(rank, mem_dims, NULL);
  herr_t st = fs >= 0 && ms >= 0 ? 0 : -1;
  for (hsize_t k = 0; st >= 0 && k < count[0]; k += step) {
    hsize_t fstart[4], mstart[4] = {0, 0, 0, 0}, n[4];
    for (int a = 0; a < rank; a++) {
      fstart[a] = start[a];
      n[a] = count[a];
    }
    fstart[0] += k;
    mstart[0] = k;
    n[0] = count[0] - k < step ? count[0] - k : step;
    st = H5Sselect_hyperslab(fs, H5S_SELECT_SET, fstart, NULL, n, NULL);
    if (st >= 0) st = H5Sselect_hyperslab(ms, H5S_SELECT_SET, mstart, NULL, n, NULL);
    if (st >= 0)
      st = write ? H5Dwrite(d, mt, ms, fs, H5P_DEFAULT, buf) : H5Dread(d, mt, ms, fs, H5P_DEFAULT, buf);
  }
  mb_h5_close_id(fs);
  mb_h5_close_id(ms);
  return st;
}

/* ------------------------------------------------------------------ kinds */

/* A kind this build stores. */
int mb_coll_kind_known(mb_kind k) {
  return k == MB_KIND_SURFACE || k == MB_KIND_TRIANGULATION2D || k == MB_KIND_POLYGONS2D ||
         k == MB_KIND_GRID3D;
}

/* Planar kinds store vertices as [N,2]. */
int mb_coll_kind_planar(mb_kind k) {
  return k == MB_KIND_TRIANGULATION2D || k == MB_KIND_POLYGONS2D;
}

/* Columns of `vertices` in the file for a kind. */
int mb_coll_kind_vcols(mb_kind k) { return mb_coll_kind_planar(k) ? 2 : 3; }
