/* meshbatch: the vertex adjacency built on the device from the face list
 * (the CUDA twin of mb_adjacency_build_opts followed by
 * mb_adjacency_permute_opts; declarations in mb_adjacency_cuda.cuh and,
 * for the C side, mb_smooth_cuda.h).
 *
 * Method. Every face edge (a, b) at slot s of the face list (face f, edge
 * t: s = face_offsets[f] + t) gives two directed entries at positions 2 s
 * (a -> b) and 2 s + 1 (b -> a), each a 64-bit key
 *     new row << ib | old neighbour        (ib: bits of nv, so nv < 2^ib)
 * with the face's third vertex as value on a triangle mesh; an edge with
 * a == b gives two keys nv << ib, which sort after every real one and are
 * dropped. CUB's radix sort (stable) orders the keys; the entries of one
 * directed edge then stand together in face order (f, t), as in the host
 * builder's buckets. Run-length encoding gives the distinct directed edges
 * (the nnz columns, ascending old index within a row, exactly the order of
 * mb_adjacency_permute) and each edge's face count: count 1 is a boundary
 * edge, as on the host (an edge in three or more faces is not). Row
 * offsets are an exclusive scan of per-row counts, the boundary lists a
 * stable selection of the boundary columns, the opposite-vertex offsets a
 * scan of the run lengths. Columns and opposite vertices are mapped to the
 * new numbering by the inverse permutation at the end. All sums are of
 * integers: the result is the same on every run and device.
 *
 * Every CUDA call is checked (MB_CALL_CUDA, MB_CHECK_LAUNCH); kernels that
 * would get an empty grid are not launched.
 */
#include <cuda_runtime.h>

#include <cub/cub.cuh>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mb_adjacency_cuda.cuh"
#include "mb_smooth_cuda.h"

/* Threads per block of the kernels here. */
#define MB_ADJ_BLOCK 256

static unsigned mb_adj_grid(int64_t n) {
  return (unsigned)((n + MB_ADJ_BLOCK - 1) / MB_ADJ_BLOCK);
}

/* Error bits the kernels set in a device word (checked on the host). */
enum {
  MB_ADJ_BAD_PERM = 1,   /* perm[v] outside [0, nv) */
  MB_ADJ_BAD_DUP = 2,    /* an old vertex no new one maps to: perm has a repeat */
  MB_ADJ_BAD_INDEX = 4,  /* a face index outside [0, nv) */
  MB_ADJ_BAD_OFFSET = 8  /* a face with no vertices (offsets not increasing) */
};

/* ------------------------------------------------------------------ kernels */

/* inv[perm[v]] = v for v < nv (perm NULL: the identity); inv must hold -1
 * everywhere before. */
__global__ void __launch_bounds__(MB_ADJ_BLOCK)
    mb_adj_inverse_kernel(int64_t nv, const int64_t *__restrict__ perm, int32_t *__restrict__ inv,
                          int *__restrict__ bad) {
  const int64_t v = (int64_t)blockIdx.x * MB_ADJ_BLOCK + threadIdx.x;
  if (v >= nv) return;
  const int64_t old = perm ? perm[v] : v;
  if (old < 0 || old >= nv) {
    atomicOr(bad, MB_ADJ_BAD_PERM);
    return;
  }
  inv[old] = (int32_t)v;
}

/* Every old vertex has a new index (with all perm[v] in range, none left
 * at -1 means perm is a permutation). */
__global__ void __launch_bounds__(MB_ADJ_BLOCK)
    mb_adj_inverse_check_kernel(int64_t nv, const int32_t *__restrict__ inv, int *__restrict__ bad) {
  const int64_t v = (int64_t)blockIdx.x * MB_ADJ_BLOCK + threadIdx.x;
  if (v < nv && inv[v] < 0) atomicOr(bad, MB_ADJ_BAD_DUP);
}

/* The two directed entries of every edge of face f (one thread per face):
 * keys at 2 s and 2 s + 1 for slot s = start + t, the face's opposite
 * vertex (old index) as value when val is not null (triangles only: the
 * caller passes val only for an all-triangle mesh). fo NULL: triangles,
 * face f at 3 f. */
__global__ void __launch_bounds__(MB_ADJ_BLOCK)
    mb_adj_entries_kernel(int64_t nf, const int64_t *__restrict__ fo,
                          const int64_t *__restrict__ fi, int64_t nidx, int64_t nv, int ib,
                          const int32_t *__restrict__ inv, uint64_t *__restrict__ key,
                          int32_t *__restrict__ val, int *__restrict__ bad) {
  const int64_t f = (int64_t)blockIdx.x * MB_ADJ_BLOCK + threadIdx.x;
  if (f >= nf) return;
  const int64_t s = fo ? fo[f] : 3 * f, k = fo ? fo[f + 1] - s : 3;
  if (s < 0 || k < 1 || s + k > nidx) { /* slots of faces would overlap: stop */
    atomicOr(bad, MB_ADJ_BAD_OFFSET);
    return;
  }
  const uint64_t dropped = (uint64_t)nv << ib;
  for (int64_t t = 0; t < k; t++) {
    const int64_t a = fi[s + t], b = fi[s + (t + 1) % k], p = 2 * (s + t);
    const int64_t o = val ? fi[s + (t + 2) % 3] : 0;
    if (a < 0 || a >= nv || b < 0 || b >= nv || o < 0 || o >= nv) {
      atomicOr(bad, MB_ADJ_BAD_INDEX);
      key[p] = key[p + 1] = dropped;
      if (val) val[p] = val[p + 1] = 0;
      continue;
    }
    if (a == b) { /* no self-loops, as on the host */
      key[p] = key[p + 1] = dropped;
      if (val) val[p] = val[p + 1] = 0;
      continue;
    }
    key[p] = (uint64_t)inv[a] << ib | (uint64_t)b;
    key[p + 1] = (uint64_t)inv[b] << ib | (uint64_t)a;
    if (val) val[p] = val[p + 1] = (int32_t)o;
  }
}

/* For each distinct directed edge k < nnz (ukey: its key, len: its face
 * count): col[k] = its neighbour in the new numbering; rcnt[row]++; with
 * boundary arrays (bflag not null), bflag[k] = (len == 1) and
 * bcnt[row]++ for a boundary edge. Integer counts: the same whatever the
 * order of the atomics. */
__global__ void __launch_bounds__(MB_ADJ_BLOCK)
    mb_adj_columns_kernel(int64_t nnz, int ib, const uint64_t *__restrict__ ukey,
                          const int *__restrict__ len, const int32_t *__restrict__ inv,
                          int32_t *__restrict__ col, int32_t *__restrict__ rcnt,
                          uint8_t *__restrict__ bflag, int32_t *__restrict__ bcnt) {
  const int64_t k = (int64_t)blockIdx.x * MB_ADJ_BLOCK + threadIdx.x;
  if (k >= nnz) return;
  const uint64_t mask = ((uint64_t)1 << ib) - 1;
  const int64_t r = (int64_t)(ukey[k] >> ib), c = (int64_t)(ukey[k] & mask);
  col[k] = inv[c];
  atomicAdd(&rcnt[r], 1);
  if (bflag) {
    const bool b = len[k] == 1;
    bflag[k] = b ? 1 : 0;
    if (b) atomicAdd(&bcnt[r], 1);
  }
}

/* on_boundary[v] = 1 if vertex v has a boundary edge (brow [nv + 1]). */
__global__ void __launch_bounds__(MB_ADJ_BLOCK)
    mb_adj_on_boundary_kernel(int64_t nv, const int32_t *__restrict__ brow,
                              uint8_t *__restrict__ on_boundary) {
  const int64_t v = (int64_t)blockIdx.x * MB_ADJ_BLOCK + threadIdx.x;
  if (v < nv) on_boundary[v] = brow[v + 1] > brow[v] ? 1 : 0;
}

/* dst[e] = inv[src[e]] (old opposite vertices to the new numbering). */
__global__ void __launch_bounds__(MB_ADJ_BLOCK)
    mb_adj_map_kernel(int64_t n, const int32_t *__restrict__ src, const int32_t *__restrict__ inv,
                      int32_t *__restrict__ dst) {
  const int64_t e = (int64_t)blockIdx.x * MB_ADJ_BLOCK + threadIdx.x;
  if (e < n) dst[e] = inv[src[e]];
}

/* ------------------------------------------------------------- host side */

/* Grow the CUB scratch buffer to at least `bytes`. */
static mb_error mb_adj_scratch(mb_dbuf *t, size_t bytes) {
  if (t->p && t->bytes >= bytes) return MB_SUCCESS;
  MB_CALL(mb_dbuf_alloc(t, bytes, "CUB scratch (adjacency build)"));
  return MB_SUCCESS;
}

/* out[0..n) = the exclusive prefix sums of in[0..n) (CUB), scratch grown
 * as needed; what names the step in an error. */
static mb_error mb_adj_exclusive_sum(const int32_t *in, int32_t *out, int64_t n, mb_dbuf *scratch,
                                     const char *what) {
  size_t bytes = 0;
  MB_CALL_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, (int)n));
  MB_CALL(mb_adj_scratch(scratch, bytes));
  MB_CALL_CUDA(cub::DeviceScan::ExclusiveSum(scratch->p, bytes, in, out, (int)n));
  MB_CHECK_LAUNCH(what);
  return MB_SUCCESS;
}

static void mb_dev_adjacency_reset(mb_dev_adjacency *a) {
  a->nv = a->nnz = a->nopp = a->nb = 0;
  a->has_opp = a->has_bnd = false;
  a->row.release();
  a->col.release();
  a->opp_row.release();
  a->opp.release();
  a->on_boundary.release();
  a->brow.release();
  a->bcol.release();
}

/* Copy one int from the device (synchronizes). */
static mb_error mb_adj_peek(const void *src, int *v) {
  MB_CALL_CUDA(cudaMemcpy(v, src, sizeof *v, cudaMemcpyDeviceToHost));
  return MB_SUCCESS;
}

/* The error word of the kernels to an error (synchronizes). */
static mb_error mb_adj_check_bad(const mb_dbuf *bad, const mb_mesh *m) {
  int b = 0;
  MB_CALL(mb_adj_peek(bad->p, &b));
  const char *name = m->name ? m->name : "mesh";
  MB_CHECK(!(b & MB_ADJ_BAD_PERM), MB_ERR_ARG,
           "device adjacency of '%s': the vertex order has an index outside [0, %lld)", name,
           (long long)m->nv);
  MB_CHECK(!(b & MB_ADJ_BAD_DUP), MB_ERR_ARG,
           "device adjacency of '%s': the vertex order is not a permutation (a repeated vertex)",
           name);
  MB_CHECK(!(b & MB_ADJ_BAD_OFFSET), MB_ERR_ARG,
           "device adjacency of '%s': face offsets are not increasing (validate the mesh)", name);
  MB_CHECK(!(b & MB_ADJ_BAD_INDEX), MB_ERR_ARG,
           "device adjacency of '%s': a face index is outside [0, %lld) (validate the mesh)", name,
           (long long)m->nv);
  return MB_SUCCESS;
}

static const int64_t MB_ADJ_I32_MAX = 2147483647;

/* The build proper (see mb_adjacency_cuda.cuh). Device memory, for nent =
 * 2 x (sum of face sizes) entries: the face list (8 bytes per index, and
 * 8 per face for polygons) while the entries are made, then 16 bytes per
 * entry of keys (double buffer), 8 with opposites (values, double buffer
 * during the sort, single after), 4 of run lengths, 4 per vertex of
 * inverse permutation and counts; docs/architecture.md. */
static mb_error mb_dev_adjacency_make(const mb_mesh *m, const int64_t *perm, unsigned flags,
                                      mb_dev_adjacency *a) {
  const int64_t nv = m->nv, nf = m->nf;
  const char *name = m->name ? m->name : "mesh";
  MB_CHECK(nv >= 0 && nf >= 0 && (nf == 0 || m->face_offsets), MB_ERR_ARG,
           "device adjacency of '%s': bad mesh sizes (%lld vertices, %lld faces)", name,
           (long long)nv, (long long)nf);
  const int64_t nidx = nf > 0 ? m->face_offsets[nf] : 0;
  MB_CHECK(nf == 0 || (m->face_offsets[0] == 0 && nidx >= 0 && m->face_indices), MB_ERR_ARG,
           "device adjacency of '%s': face offsets must run from 0 to the index count", name);
  MB_CHECK(nv < MB_ADJ_I32_MAX && nidx < MB_ADJ_I32_MAX / 2, MB_ERR_ARG,
           "device adjacency of '%s': %lld vertices and %lld face indices; the device builder "
           "takes fewer than 2^31 vertices and 2^30 face indices (MESHBATCH_ADJACENCY=host "
           "builds on the host)",
           name, (long long)nv, (long long)nidx);
  const bool tri = mb_mesh_is_triangles(m) != 0;
  const bool want_opp = tri && (flags & MB_ADJ_OPPOSITE);
  const bool want_bnd = (flags & MB_ADJ_BOUNDARY) != 0;
  const int64_t nent = 2 * nidx;
  a->nv = nv;
  a->has_opp = want_opp;
  a->has_bnd = want_bnd;

  /* the key layout: new row << ib | old column; nv itself fits (dropped keys) */
  int ib = 1;
  while (ib < 32 && ((uint64_t)nv >> ib) != 0) ib++;
  const int end_bit = 2 * ib; /* <= 62 */

  mb_dbuf bad, inv, scratch;
  MB_CALL(mb_dbuf_alloc(&bad, sizeof(int), "error flags (adjacency build)"));
  MB_CALL_CUDA(cudaMemset(bad.p, 0, sizeof(int)));

  /* 1. the inverse permutation, int32 [nv] */
  MB_CALL(mb_dbuf_alloc(&inv, sizeof(int32_t) * (size_t)nv, "inverse vertex order"));
  if (nv > 0) {
    MB_CALL_CUDA(cudaMemset(inv.p, 0xff, sizeof(int32_t) * (size_t)nv)); /* -1 */
    mb_dbuf dperm;
    if (perm) {
      MB_CALL(mb_dbuf_alloc(&dperm, sizeof(int64_t) * (size_t)nv, "vertex order"));
      MB_CALL_CUDA(cudaMemcpy(dperm.p, perm, sizeof(int64_t) * (size_t)nv,
                              cudaMemcpyHostToDevice));
    }
    mb_adj_inverse_kernel<<<mb_adj_grid(nv), MB_ADJ_BLOCK>>>(nv, dperm.as<int64_t>(),
                                                             inv.as<int32_t>(), bad.as<int>());
    MB_CHECK_LAUNCH("inverse vertex order");
    mb_adj_inverse_check_kernel<<<mb_adj_grid(nv), MB_ADJ_BLOCK>>>(nv, inv.as<int32_t>(),
                                                                   bad.as<int>());
    MB_CHECK_LAUNCH("vertex order check");
    MB_CALL(mb_adj_check_bad(&bad, m)); /* synchronizes: dperm may go */
  }

  /* 2. the entries, in face-list order */
  mb_dbuf key[2], val[2];
  MB_CALL(mb_dbuf_alloc(&key[0], sizeof(uint64_t) * (size_t)nent, "adjacency keys"));
  if (want_opp)
    MB_CALL(mb_dbuf_alloc(&val[0], sizeof(int32_t) * (size_t)nent, "opposite vertices"));
  if (nf > 0) {
    mb_dbuf fi, fo;
    MB_CALL(mb_dbuf_alloc(&fi, sizeof(int64_t) * (size_t)nidx, "face indices"));
    MB_CALL_CUDA(cudaMemcpy(fi.p, m->face_indices, sizeof(int64_t) * (size_t)nidx,
                            cudaMemcpyHostToDevice));
    if (!tri) { /* a triangle mesh's faces start at 3 f: no offsets needed */
      MB_CALL(mb_dbuf_alloc(&fo, sizeof(int64_t) * ((size_t)nf + 1), "face offsets"));
      MB_CALL_CUDA(cudaMemcpy(fo.p, m->face_offsets, sizeof(int64_t) * ((size_t)nf + 1),
                              cudaMemcpyHostToDevice));
    }
    mb_adj_entries_kernel<<<mb_adj_grid(nf), MB_ADJ_BLOCK>>>(
        nf, fo.as<int64_t>(), fi.as<int64_t>(), nidx, nv, ib, inv.as<int32_t>(),
        key[0].as<uint64_t>(), want_opp ? val[0].as<int32_t>() : nullptr, bad.as<int>());
    MB_CHECK_LAUNCH("adjacency entries");
    MB_CALL(mb_adj_check_bad(&bad, m)); /* synchronizes: the face list may go */
  }

  /* 3. sort the entries by (new row, old column), stably */
  MB_CALL(mb_dbuf_alloc(&key[1], sizeof(uint64_t) * (size_t)nent, "adjacency keys"));
  if (want_opp)
    MB_CALL(mb_dbuf_alloc(&val[1], sizeof(int32_t) * (size_t)nent, "opposite vertices"));
  cub::DoubleBuffer<uint64_t> keys(key[0].as<uint64_t>(), key[1].as<uint64_t>());
  cub::DoubleBuffer<int32_t> vals(val[0].as<int32_t>(), val[1].as<int32_t>());
  int kcur = 0, vcur = 0; /* which of key[], val[] holds the sorted data */
  if (nent > 0) {
    size_t bytes = 0;
    if (want_opp) {
      MB_CALL_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys, vals, (int)nent, 0,
                                                   end_bit));
      MB_CALL(mb_adj_scratch(&scratch, bytes));
      MB_CALL_CUDA(cub::DeviceRadixSort::SortPairs(scratch.p, bytes, keys, vals, (int)nent, 0,
                                                   end_bit));
      vcur = vals.Current() == val[0].as<int32_t>() ? 0 : 1;
    } else {
      MB_CALL_CUDA(cub::DeviceRadixSort::SortKeys(nullptr, bytes, keys, (int)nent, 0, end_bit));
      MB_CALL(mb_adj_scratch(&scratch, bytes));
      MB_CALL_CUDA(cub::DeviceRadixSort::SortKeys(scratch.p, bytes, keys, (int)nent, 0,
                                                  end_bit));
    }
    MB_CHECK_LAUNCH("adjacency sort");
    kcur = keys.Current() == key[0].as<uint64_t>() ? 0 : 1;
  }
  if (want_opp) val[1 - vcur].release(); /* frees after the sort (cudaFree waits) */

  /* 4. distinct directed edges and their face counts: unique keys into the
   * other key buffer, run lengths len [nent + 1] */
  mb_dbuf len, nruns_d;
  MB_CALL(mb_dbuf_alloc(&len, sizeof(int) * ((size_t)nent + 1), "edge face counts"));
  MB_CALL(mb_dbuf_alloc(&nruns_d, sizeof(int), "edge count"));
  int nruns = 0;
  if (nent > 0) {
    size_t bytes = 0;
    const uint64_t *sorted = key[kcur].as<uint64_t>();
    uint64_t *unique = key[1 - kcur].as<uint64_t>();
    MB_CALL_CUDA(cub::DeviceRunLengthEncode::Encode(nullptr, bytes, sorted, unique, len.as<int>(),
                                                    nruns_d.as<int>(), (int)nent));
    MB_CALL(mb_adj_scratch(&scratch, bytes));
    MB_CALL_CUDA(cub::DeviceRunLengthEncode::Encode(scratch.p, bytes, sorted, unique,
                                                    len.as<int>(), nruns_d.as<int>(), (int)nent));
    MB_CHECK_LAUNCH("adjacency run-length encoding");
    MB_CALL(mb_adj_peek(nruns_d.p, &nruns)); /* synchronizes */
    MB_CHECK(nruns >= 1 && nruns <= nent, MB_ERR_CUDA,
             "device adjacency of '%s': %d distinct edges from %lld entries", name, nruns,
             (long long)nent);
  }
  key[kcur].release(); /* the sorted keys; the unique ones are in key[1 - kcur] */
  const uint64_t *ukey = key[1 - kcur].as<uint64_t>();
  /* the last run holds the dropped keys (self-loops), if there are any */
  int64_t nnz = nruns, nvalid = nent;
  if (nruns > 0) {
    uint64_t last = 0;
    MB_CALL_CUDA(cudaMemcpy(&last, ukey + nruns - 1, sizeof last, cudaMemcpyDeviceToHost));
    if ((int64_t)(last >> ib) == nv) {
      int dropped = 0;
      MB_CALL(mb_adj_peek(len.as<int>() + nruns - 1, &dropped));
      nnz = nruns - 1;
      nvalid = nent - dropped;
    }
  }
  a->nnz = nnz;

  /* 5. columns, row offsets; boundary flags and counts */
  mb_dbuf rcnt, bcnt, bflag;
  MB_CALL(mb_dbuf_alloc(&a->row, sizeof(int32_t) * ((size_t)nv + 1), "row offsets"));
  MB_CALL(mb_dbuf_alloc(&a->col, sizeof(int32_t) * (size_t)nnz, "column indices"));
  MB_CALL(mb_dbuf_alloc(&rcnt, sizeof(int32_t) * ((size_t)nv + 1), "row lengths"));
  MB_CALL_CUDA(cudaMemset(rcnt.p, 0, sizeof(int32_t) * ((size_t)nv + 1)));
  if (want_bnd) {
    MB_CALL(mb_dbuf_alloc(&a->brow, sizeof(int32_t) * ((size_t)nv + 1), "boundary offsets"));
    MB_CALL(mb_dbuf_alloc(&a->on_boundary, (size_t)nv, "boundary flags"));
    MB_CALL(mb_dbuf_alloc(&bcnt, sizeof(int32_t) * ((size_t)nv + 1), "boundary row lengths"));
    MB_CALL(mb_dbuf_alloc(&bflag, (size_t)nnz, "boundary edge flags"));
    MB_CALL_CUDA(cudaMemset(bcnt.p, 0, sizeof(int32_t) * ((size_t)nv + 1)));
  }
  if (nnz > 0) {
    mb_adj_columns_kernel<<<mb_adj_grid(nnz), MB_ADJ_BLOCK>>>(
        nnz, ib, ukey, len.as<int>(), inv.as<int32_t>(), a->col.as<int32_t>(),
        rcnt.as<int32_t>(), want_bnd ? bflag.as<uint8_t>() : nullptr,
        want_bnd ? bcnt.as<int32_t>() : nullptr);
    MB_CHECK_LAUNCH("adjacency columns");
  }
  /* row [nv + 1]: rcnt[nv] is 0, so row[nv] = nnz */
  MB_CALL(mb_adj_exclusive_sum(rcnt.as<int32_t>(), a->row.as<int32_t>(), nv + 1, &scratch,
                               "row offsets"));
  rcnt.release();

  /* 6. the boundary lists */
  if (want_bnd) {
    MB_CALL(mb_adj_exclusive_sum(bcnt.as<int32_t>(), a->brow.as<int32_t>(), nv + 1, &scratch,
                                 "boundary offsets"));
    if (nv > 0) {
      mb_adj_on_boundary_kernel<<<mb_adj_grid(nv), MB_ADJ_BLOCK>>>(
          nv, a->brow.as<int32_t>(), a->on_boundary.as<uint8_t>());
      MB_CHECK_LAUNCH("boundary flags");
    }
    int nb = 0;
    MB_CALL(mb_adj_peek(a->brow.as<int32_t>() + nv, &nb)); /* synchronizes */
    MB_CHECK(nb >= 0 && nb <= nnz, MB_ERR_CUDA,
             "device adjacency of '%s': %d boundary entries of %lld edges", name, nb,
             (long long)nnz);
    a->nb = nb;
    MB_CALL(mb_dbuf_alloc(&a->bcol, sizeof(int32_t) * (size_t)nb, "boundary neighbours"));
    if (nb > 0) {
      int selected = -1;
      mb_dbuf nsel;
      MB_CALL(mb_dbuf_alloc(&nsel, sizeof(int), "boundary entry count"));
      size_t bytes = 0;
      MB_CALL_CUDA(cub::DeviceSelect::Flagged(nullptr, bytes, a->col.as<int32_t>(),
                                              bflag.as<uint8_t>(), a->bcol.as<int32_t>(),
                                              nsel.as<int>(), (int64_t)nnz));
      MB_CALL(mb_adj_scratch(&scratch, bytes));
      MB_CALL_CUDA(cub::DeviceSelect::Flagged(scratch.p, bytes, a->col.as<int32_t>(),
                                              bflag.as<uint8_t>(), a->bcol.as<int32_t>(),
                                              nsel.as<int>(), (int64_t)nnz));
      MB_CHECK_LAUNCH("boundary neighbours");
      MB_CALL(mb_adj_peek(nsel.p, &selected)); /* synchronizes */
      MB_CHECK(selected == nb, MB_ERR_CUDA,
               "device adjacency of '%s': %d boundary neighbours selected, %d counted", name,
               selected, nb);
    }
  }

  /* 7. the opposite vertices: offsets from the run lengths, values mapped */
  if (want_opp) {
    MB_CALL(mb_dbuf_alloc(&a->opp_row, sizeof(int32_t) * ((size_t)nnz + 1),
                          "opposite-vertex offsets"));
    MB_CALL(mb_dbuf_alloc(&a->opp, sizeof(int32_t) * (size_t)nvalid, "opposite vertices"));
    /* len[nnz] (the dropped run's length, or past the runs) to 0: opp_row[nnz] = nvalid */
    MB_CALL_CUDA(cudaMemset(len.as<int>() + nnz, 0, sizeof(int)));
    MB_CALL(mb_adj_exclusive_sum(len.as<int32_t>(), a->opp_row.as<int32_t>(), nnz + 1, &scratch,
                                 "opposite-vertex offsets"));
    if (nvalid > 0) {
      mb_adj_map_kernel<<<mb_adj_grid(nvalid), MB_ADJ_BLOCK>>>(
          nvalid, val[vcur].as<int32_t>(), inv.as<int32_t>(), a->opp.as<int32_t>());
      MB_CHECK_LAUNCH("opposite vertices");
    }
    int end = -1;
    MB_CALL(mb_adj_peek(a->opp_row.as<int32_t>() + nnz, &end)); /* synchronizes */
    MB_CHECK(end == nvalid, MB_ERR_CUDA,
             "device adjacency of '%s': %d opposite vertices, %lld expected", name, end,
             (long long)nvalid);
    a->nopp = nvalid;
  }
  MB_CALL_CUDA(cudaDeviceSynchronize()); /* execution errors surface here; scratch may go */
  return MB_SUCCESS;
}

mb_error mb_dev_adjacency_build(const mb_mesh *mesh, const int64_t *perm, unsigned flags,
                                mb_dev_adjacency *out) {
  MB_CHECK(mesh && out, MB_ERR_ARG, "mb_dev_adjacency_build: NULL argument");
  mb_dev_adjacency_reset(out);
  mb_error e = mb_dev_adjacency_make(mesh, perm, flags, out);
  if (e) {
    mb_dev_adjacency_reset(out);
    MB_CALL(e);
  }
  return MB_SUCCESS;
}

/* --------------------------------------------------- C interface (tests) */

/* Host memory freed on every path. */
struct mb_hbuf {
  void *p = nullptr;
  ~mb_hbuf() { free(p); }
};

/* *dst = int64 [n] copy of the int32 device array src (malloc'ed; n may be 0). */
static mb_error mb_adj_download_i64(int64_t **dst, const mb_dbuf &src, int64_t n) {
  *dst = (int64_t *)malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
  MB_CHECK(*dst, MB_ERR_MEMORY, "out of host memory for %lld adjacency entries", (long long)n);
  if (n == 0) return MB_SUCCESS;
  mb_hbuf tmp;
  tmp.p = malloc(sizeof(int32_t) * (size_t)n);
  MB_CHECK(tmp.p, MB_ERR_MEMORY, "out of host memory for %lld adjacency entries", (long long)n);
  MB_CALL_CUDA(cudaMemcpy(tmp.p, src.p, sizeof(int32_t) * (size_t)n, cudaMemcpyDeviceToHost));
  const int32_t *t = (const int32_t *)tmp.p;
  for (int64_t k = 0; k < n; k++) (*dst)[k] = t[k];
  return MB_SUCCESS;
}

static mb_error mb_adj_download(const mb_dev_adjacency &d, mb_adjacency *a) {
  a->nv = d.nv;
  a->nnz = d.nnz;
  MB_CALL(mb_adj_download_i64(&a->row, d.row, d.nv + 1));
  MB_CALL(mb_adj_download_i64(&a->col, d.col, d.nnz));
  if (d.has_opp) {
    MB_CALL(mb_adj_download_i64(&a->opp_row, d.opp_row, d.nnz + 1));
    MB_CALL(mb_adj_download_i64(&a->opp, d.opp, d.nopp));
  }
  if (d.has_bnd) {
    a->on_boundary = (uint8_t *)malloc((size_t)(d.nv > 0 ? d.nv : 1));
    MB_CHECK(a->on_boundary, MB_ERR_MEMORY, "out of host memory for %lld boundary flags",
             (long long)d.nv);
    if (d.nv > 0)
      MB_CALL_CUDA(cudaMemcpy(a->on_boundary, d.on_boundary.p, (size_t)d.nv,
                              cudaMemcpyDeviceToHost));
    MB_CALL(mb_adj_download_i64(&a->brow, d.brow, d.nv + 1));
    MB_CALL(mb_adj_download_i64(&a->bcol, d.bcol, d.nb));
  }
  return MB_SUCCESS;
}

extern "C" mb_error mb_cuda_adjacency_build(const mb_mesh *mesh, const int64_t *perm,
                                            unsigned flags, mb_adjacency **adj) {
  MB_CHECK(mesh && adj, MB_ERR_ARG, "mb_cuda_adjacency_build: NULL argument");
  *adj = NULL;
  mb_dev_adjacency d;
  MB_CALL(mb_dev_adjacency_build(mesh, perm, flags, &d));
  mb_adjacency *a = (mb_adjacency *)calloc(1, sizeof *a);
  MB_CHECK(a, MB_ERR_MEMORY, "out of host memory");
  mb_error e = mb_adj_download(d, a);
  if (e) {
    mb_adjacency_free(a);
    MB_CALL(e);
  }
  *adj = a;
  return MB_SUCCESS;
}
