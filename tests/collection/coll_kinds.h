/* meshbatch collection tests: sample datasets of every kind (surface,
 * triangulation2d, polygons2d), shared by test_collection_kinds.c and the
 * writer used by the XDMF kind tests (coll_kinds_writer.c). Header-only
 * (static functions). */
#ifndef COLL_KINDS_H
#define COLL_KINDS_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mb_mesh.h"

enum { KINDS_NMESH = 5, KINDS_NDATASETS = 30 };

/* The face sizes of "poly2d": every size from 3 to 8, mixed, not sorted. */
static const int kinds_poly_sizes[] = {5, 3, 8, 4, 6, 7, 3, 5, 4, 8, 6, 7, 5};
enum { KINDS_POLY_NF = (int)(sizeof kinds_poly_sizes / sizeof kinds_poly_sizes[0]) };

static void kinds_die(mb_error e) {
  if (e) abort();
}

/* A mesh of `kind` from xyz [nv,3], face sizes [nf] and concatenated indices. */
static mb_mesh *kinds_mesh(const char *name, mb_kind kind, int64_t index, int64_t nv,
                           const double *xyz, int64_t nf, const int *sizes, const int64_t *idx) {
  int64_t nidx = 0;
  for (int64_t f = 0; f < nf; f++) nidx += sizes[f];
  mb_mesh *m = NULL;
  kinds_die(mb_mesh_create(name, nv, nf, nidx, &m));
  m->kind = kind;
  m->index = index;
  memcpy(m->xyz, xyz, sizeof(double) * 3 * (size_t)nv);
  for (int64_t f = 0; f < nf; f++) m->face_offsets[f + 1] = m->face_offsets[f] + sizes[f];
  memcpy(m->face_indices, idx, sizeof(int64_t) * (size_t)nidx);
  return m;
}

/* "surf": a surface of a pentagon, a quad and a triangle (a fan view in XDMF),
 * vertex field "h" [7,1], face field "area" [3,1]. */
static mb_mesh *kinds_surf(void) {
  const double x[] = {0, 0, 0, 1, 0, 0, 1.5, 1, 0, 0.5, 2, 0, -0.5, 1, 0, -1, 0, 0.25, 0.1, -1, 0.3};
  const int s[] = {5, 4, 3};
  const int64_t i[] = {0, 1, 2, 3, 4, 0, 4, 5, 6, 1, 0, 6};
  mb_mesh *m = kinds_mesh("surf", MB_KIND_SURFACE, 0, 7, x, 3, s, i);
  const double h[] = {0.5, -1, 2, 1e-310, 3, 4, -0.0};
  const double area[] = {2.25, 0.75, 1.0 / 3.0};
  kinds_die(mb_mesh_set_field(m, "h", 1, h));
  kinds_die(mb_mesh_set_face_field(m, "area", 1, area));
  kinds_die(mb_attrs_set(&m->attrs, "source", "surf.obj"));
  return m;
}

/* "tri2d": a triangulation2d of a 5 x 4 vertex grid (24 triangles), vertex
 * field "uv" [20,2], face fields "quality" [24,1] and "frame" [24,6]. */
static mb_mesh *kinds_tri2d(void) {
  enum { NX = 5, NY = 4, NT = 2 * (NX - 1) * (NY - 1) };
  double xyz[3 * NX * NY], uv[2 * NX * NY], q[NT], fr[6 * NT];
  int64_t idx[3 * NT];
  int sizes[NT];
  for (int j = 0; j < NY; j++)
    for (int i = 0; i < NX; i++) {
      int v = j * NX + i;
      xyz[3 * v] = i + 0.1 * sin(i * j + 1.0);
      xyz[3 * v + 1] = j - 0.07 * cos(i + 2.0 * j);
      xyz[3 * v + 2] = 0.0;
      uv[2 * v] = i / (NX - 1.0);
      uv[2 * v + 1] = exp(-j);
    }
  int k = 0;
  for (int j = 0; j + 1 < NY; j++)
    for (int i = 0; i + 1 < NX; i++) {
      int64_t a = j * NX + i, b = a + 1, c = a + NX + 1, d = a + NX;
      int64_t t[6] = {a, b, c, a, c, d};
      memcpy(idx + 3 * k, t, sizeof t);
      k += 2;
    }
  for (int t = 0; t < NT; t++) {
    sizes[t] = 3;
    q[t] = 1.0 / (t + 3.0);
    for (int c = 0; c < 6; c++) fr[6 * t + c] = t * 10 + c + 0.5;
  }
  mb_mesh *m = kinds_mesh("tri2d", MB_KIND_TRIANGULATION2D, 1, NX * NY, xyz, NT, sizes, idx);
  kinds_die(mb_mesh_set_field(m, "uv", 2, uv));
  kinds_die(mb_mesh_set_face_field(m, "quality", 1, q));
  kinds_die(mb_mesh_set_face_field(m, "frame", 6, fr));
  kinds_die(mb_attrs_set(&m->attrs, "stage0", "delaunay"));
  return m;
}

/* "poly2d": a polygons2d whose faces have 3 to 8 vertices, mixed
 * (kinds_poly_sizes): each face is an n-gon around its own centre, sharing
 * its first vertex with the previous face. Vertex field "phi" [nv,1], face
 * fields "vertex_count" [nf,1] and "centroid" [nf,2], as Polylla would. */
static mb_mesh *kinds_poly2d(void) {
  enum { MAXV = 8 * KINDS_POLY_NF, MAXI = 8 * KINDS_POLY_NF };
  double xyz[3 * MAXV], cnt[KINDS_POLY_NF], cen[2 * KINDS_POLY_NF], phi[MAXV];
  int64_t idx[MAXI];
  int64_t nv = 0, k = 0;
  for (int f = 0; f < KINDS_POLY_NF; f++) {
    int n = kinds_poly_sizes[f];
    double cx = 2.5 * f, cy = (f % 2) ? 0.25 : -0.25;
    for (int j = 0; j < n; j++) {
      if (f > 0 && j == 0) { /* shared with the previous face's last vertex */
        idx[k++] = nv - 1;
        continue;
      }
      double a = 2 * 3.14159265358979323846 * j / n + 0.1 * f;
      xyz[3 * nv] = cx + cos(a);
      xyz[3 * nv + 1] = cy + sin(a);
      xyz[3 * nv + 2] = 0.0;
      phi[nv] = sqrt((double)nv + 0.5);
      idx[k++] = nv++;
    }
    cnt[f] = n;
    cen[2 * f] = cx;
    cen[2 * f + 1] = cy;
  }
  mb_mesh *m = kinds_mesh("poly2d", MB_KIND_POLYGONS2D, 2, nv, xyz, KINDS_POLY_NF,
                          kinds_poly_sizes, idx);
  kinds_die(mb_mesh_set_field(m, "phi", 1, phi));
  kinds_die(mb_mesh_set_face_field(m, "vertex_count", 1, cnt));
  kinds_die(mb_mesh_set_face_field(m, "centroid", 2, cen));
  kinds_die(mb_attrs_set(&m->attrs, "polygons", "13"));
  return m;
}

/* "quad2d": a polygons2d of triangles and quads only (exact Mixed for
 * meshio), face field "id" [4,1]. */
static mb_mesh *kinds_quad2d(void) {
  const double x[] = {0, 0, 0, 1, 0, 0, 2, 0, 0, 0, 1, 0, 1, 1, 0, 2, 1, 0, 1.5, 2, 0};
  const int s[] = {4, 3, 3, 4};
  const int64_t i[] = {0, 1, 4, 3, 1, 2, 5, 1, 5, 4, 3, 4, 6, 3};
  mb_mesh *m = kinds_mesh("quad2d", MB_KIND_POLYGONS2D, 3, 7, x, 4, s, i);
  const double id[] = {10, 11, 12, 13};
  kinds_die(mb_mesh_set_face_field(m, "id", 1, id));
  return m;
}

/* "tiny2d": a triangulation2d of one triangle (empty slabs on 4 ranks). */
static mb_mesh *kinds_tiny2d(void) {
  const double x[] = {-0.0, 0, 0, 1, 0, 0, 0, 1e-300, 0};
  const int s[] = {3};
  const int64_t i[] = {0, 1, 2};
  return kinds_mesh("tiny2d", MB_KIND_TRIANGULATION2D, 4, 3, x, 1, s, i);
}

/* The five datasets in collection order (indices 0..4). Together their
 * collection holds KINDS_NDATASETS HDF5 datasets: surf 8 (vertices, face_offsets,
 * face_indices, xdmf_mixed, xdmf_triangles, fields/h, face_fields/area,
 * xdmf_fan_fields/area), tri2d 5, poly2d 10, quad2d 5, tiny2d 2. */
static void kinds_make(mb_mesh *m[KINDS_NMESH]) {
  m[0] = kinds_surf();
  m[1] = kinds_tri2d();
  m[2] = kinds_poly2d();
  m[3] = kinds_quad2d();
  m[4] = kinds_tiny2d();
}

static void kinds_free(mb_mesh *m[KINDS_NMESH]) {
  for (int i = 0; i < KINDS_NMESH; i++) mb_mesh_free(m[i]);
}

/* The datasets held by `rank` of `size` (dataset j on rank (j + 2) % size),
 * in reverse order. */
static int kinds_local(mb_mesh *all[KINDS_NMESH], int rank, int size,
                       mb_mesh *local[KINDS_NMESH]) {
  int n = 0;
  for (int j = KINDS_NMESH - 1; j >= 0; j--)
    if ((j + 2) % size == rank) local[n++] = all[j];
  return n;
}

#endif
