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

/* A strided block in memory (a planar mesh's x, y columns of its xyz rows)
 * goes through a contiguous bounce buffer of at most this many bytes: MPI-IO
 * (Open MPI's OMPIO) writes a strided memory selection as one pwrite per
 * contiguous run, 16 bytes a vertex (2 M vertices: 2 M system calls, 7.7 s
 * where the packed rows take a fraction of a second). */
static const size_t MB_H5_BOUNCE_BYTES = (size_t)16 << 20;

/* H5Dscatter's source: the bounce buffer, handed over once. */
typedef struct {
  const void *buf;
  size_t bytes;
} mb_h5_bounce;

static herr_t bounce_source(const void **src, size_t *bytes, void *op_data) {
  mb_h5_bounce *b = op_data;
  *src = b->buf;
  *bytes = b->bytes;
  b->bytes = 0;
  return 0;
}

/* Read (write = 0) or write the block start[0..rank) + count[0..rank) of
 * dataset d from or into buf, whose memory is an array of mem_dims
 * (mem_dims[a] >= count[a]; the block lies at its origin), values of
 * memory type mt. Independent transfer, in slices of the first axis of at
 * most io_piece_bytes() (a single slice may be larger); a block that is
 * not contiguous in memory moves through a bounce buffer (HDF5's H5Dgather
 * and H5Dscatter pack and unpack it) in slices of at most
 * MB_H5_BOUNCE_BYTES. Returns < 0 on the first failing call. */
herr_t mb_h5_block_transfer(hid_t d, hid_t mt, int write, int rank, const hsize_t *start,
                            const hsize_t *count, const hsize_t *mem_dims, void *buf) {
  if (count[0] == 0) return 0;
  hsize_t slice = H5Tget_size(mt);
  int strided = 0;
  for (int a = 1; a < rank; a++) {
    slice *= count[a];
    strided |= mem_dims[a] != count[a];
  }
  const size_t piece = strided && MB_H5_BOUNCE_BYTES < io_piece_bytes() ? MB_H5_BOUNCE_BYTES
                                                                         : io_piece_bytes();
  hsize_t step = slice ? piece / slice : count[0];
  if (step < 1) step = 1;
  if (step > count[0]) step = count[0];
  void *bounce = strided ? malloc((size_t)(step * slice)) : NULL;
  hid_t fs = H5Dget_space(d), ms = H5Screate_simple(rank, mem_dims, NULL);
  hid_t bs = -1; /* the bounce buffer's space: the slice's rows, contiguous */
  herr_t st = fs >= 0 && ms >= 0 && (!strided || bounce) ? 0 : -1;
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
    if (st < 0) break;
    if (!strided) {
      st = write ? H5Dwrite(d, mt, ms, fs, H5P_DEFAULT, buf)
                 : H5Dread(d, mt, ms, fs, H5P_DEFAULT, buf);
      continue;
    }
    const size_t bytes = (size_t)(n[0] * slice);
    mb_h5_close_id(bs);
    bs = H5Screate_simple(rank, n, NULL);
    if (bs < 0) {
      st = -1;
    } else if (write) {
      st = H5Dgather(ms, buf, mt, bytes, bounce, NULL, NULL);
      if (st >= 0) st = H5Dwrite(d, mt, bs, fs, H5P_DEFAULT, bounce);
    } else {
      st = H5Dread(d, mt, bs, fs, H5P_DEFAULT, bounce);
      mb_h5_bounce src = {bounce, bytes};
      if (st >= 0) st = H5Dscatter(bounce_source, &src, mt, ms, buf);
    }
  }
  mb_h5_close_id(bs);
  mb_h5_close_id(fs);
  mb_h5_close_id(ms);
  free(bounce);
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
