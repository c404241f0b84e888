/* meshbatch collection tests: the sample meshes shared by the C tests and the
 * sample writer used by the XDMF/meshio test. Header-only (static functions). */
#ifndef COLL_FIXTURES_H
#define COLL_FIXTURES_H

#include <stdlib.h>
#include <string.h>

#include "mb_mesh.h"

enum { COLL_NMESH = 4 };

/* A polygon mesh from xyz [nv,3], face sizes [nf] and concatenated indices. */
static mb_mesh *coll_polygons(const char *name, int64_t nv, const double *xyz, int64_t nf,
                              const int *sizes, const int64_t *idx) {
  int64_t nidx = 0;
  for (int64_t f = 0; f < nf; f++) nidx += sizes[f];
  mb_mesh *m = NULL;
  if (mb_mesh_create(name, nv, nf, nidx, &m)) abort();
  memcpy(m->xyz, xyz, sizeof(double) * 3 * (size_t)nv);
  for (int64_t f = 0; f < nf; f++) m->face_offsets[f + 1] = m->face_offsets[f] + sizes[f];
  memcpy(m->face_indices, idx, sizeof(int64_t) * (size_t)nidx);
  return m;
}

/* Four meshes, returned in the order they are stored in a collection:
 * [0] "house"   polygons (pentagon, quad, triangle), index 0, no fields
 * [1] "quadtri" quad + triangle, index 1, field "w" [5,2]
 * [2] "solo"    one triangle, index 1 (tie with quadtri, after it by name)
 * [3] "tet"     4 triangles, index 7, fields "temperature" [4,1] and
 *               "velocity" [4,3], provenance attributes. */
static void coll_make_meshes(mb_mesh *out[COLL_NMESH]) {
  const double hx[] = {0, 0, 0, 1, 0, 0, 1.5, 1, 0, 0.5, 2, 0, -0.5, 1, 0, -1, 0, 0.25, 0.1, -1, 0.3};
  const int hs[] = {5, 4, 3};
  const int64_t hi[] = {0, 1, 2, 3, 4, 0, 4, 5, 6, 1, 0, 6};
  out[0] = coll_polygons("house", 7, hx, 3, hs, hi);
  out[0]->index = 0;
  mb_attrs_set(&out[0]->attrs, "source", "house.obj");

  const double qx[] = {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, -1, 0.5, 0.125};
  const int qs[] = {4, 3};
  const int64_t qi[] = {0, 1, 2, 3, 0, 3, 4};
  out[1] = coll_polygons("quadtri", 5, qx, 2, qs, qi);
  out[1]->index = 1;
  const double w[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  mb_mesh_set_field(out[1], "w", 2, w);

  const double sx[] = {0, 0, 0, 1, 0, 0, 0, 1, 1e-300};
  const int ss[] = {3};
  const int64_t si[] = {0, 1, 2};
  out[2] = coll_polygons("solo", 3, sx, 1, ss, si);
  out[2]->index = 1;

  const double tx[] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1.0 / 3.0};
  const int ts[] = {3, 3, 3, 3};
  const int64_t ti[] = {0, 2, 1, 0, 1, 3, 1, 2, 3, 0, 3, 2};
  out[3] = coll_polygons("tet", 4, tx, 4, ts, ti);
  out[3]->index = 7;
  const double temp[] = {0.1, 0.2, 0.3, -0.0};
  const double vel[] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 0.5, 0.25, 0.125};
  mb_mesh_set_field(out[3], "temperature", 1, temp);
  mb_mesh_set_field(out[3], "velocity", 3, vel);
  mb_attrs_set(&out[3]->attrs, "stage0", "smooth: taubin lambda=0.5 mu=-0.53 passes=10");
  mb_attrs_set(&out[3]->attrs, "meshbatch_version", "0.1.0");
  mb_attrs_set(&out[3]->attrs, "backend", "cpu");
  mb_attrs_set(&out[3]->attrs, "ranks", "4");
  mb_attrs_set(&out[3]->attrs, "wall_time_s", "0.125");
  mb_attrs_set(&out[3]->attrs, "note", "");
}

/* The meshes of out[] held by `rank` of `size` (mesh j lives on rank (j+1) % size). */
static int coll_local(mb_mesh *all[COLL_NMESH], int rank, int size, mb_mesh *local[COLL_NMESH]) {
  int n = 0;
  for (int j = COLL_NMESH - 1; j >= 0; j--)
    if ((j + 1) % size == rank) local[n++] = all[j];
  return n;
}

static void coll_free_meshes(mb_mesh *m[COLL_NMESH]) {
  for (int j = 0; j < COLL_NMESH; j++) mb_mesh_free(m[j]);
}

#endif
