/* meshbatch: XDMF 3 companions of HDF5 collections (see mb_xdmf.h and
 * docs/format.md). */
#include "mb_xdmf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The connectivity arrays below are filled on OpenMP threads (a mesh of
 * tens of millions of polygons writes gigabytes of them): each face's
 * place follows from face_offsets (fan: 3 (offsets[f] - 2 f); Mixed: the
 * offsets plus one or two slots a face, counted a block of faces at a
 * time); the bytes do not depend on the thread count. */

/* Slots of faces [b, e) in the Mixed array: n + 1 for a triangle or quad,
 * n + 2 for a polygon. */
static int64_t mixed_slots(const int64_t *fo, int64_t b, int64_t e) {
  int64_t len = fo[e] - fo[b] + (e - b);
  for (int64_t f = b; f < e; f++) {
    const int64_t n = fo[f + 1] - fo[f];
    len += n != 3 && n != 4;
  }
  return len;
}

int64_t mb_xdmf_mixed_length(const mb_mesh *m) {
  const int64_t nf = m->nf, *fo = m->face_offsets;
  int64_t big = 0;
#pragma omp parallel for schedule(static) reduction(+ : big) if (nf > 65536)
  for (int64_t f = 0; f < nf; f++) {
    const int64_t n = fo[f + 1] - fo[f];
    big += n != 3 && n != 4;
  }
  return fo[nf] - fo[0] + nf + big;
}

/* Fill the Mixed slots of faces [b, e) from out[0]. */
static void fill_mixed_range(const mb_mesh *m, int64_t b, int64_t e, int64_t *out) {
  int64_t k = 0;
  for (int64_t f = b; f < e; f++) {
    const int64_t a = m->face_offsets[f], n = m->face_offsets[f + 1] - a;
    if (n == 3) {
      out[k++] = MB_XDMF_ID_TRIANGLE;
    } else if (n == 4) {
      out[k++] = MB_XDMF_ID_QUAD;
    } else {
      out[k++] = MB_XDMF_ID_POLYGON;
      out[k++] = n;
    }
    memcpy(out + k, m->face_indices + a, sizeof *out * (size_t)n);
    k += n;
  }
}

void mb_xdmf_fill_mixed(const mb_mesh *m, int64_t *out) {
  const int64_t nf = m->nf, block = (int64_t)1 << 16, nb = (nf + block - 1) / block;
  int64_t *at = nb > 1 ? malloc(sizeof *at * (size_t)(nb + 1)) : NULL;
  if (!at) { /* one block (or no memory for the blocks' places): in order */
    fill_mixed_range(m, 0, nf, out);
    return;
  }
  at[0] = 0;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < nb; c++)
    at[c + 1] = mixed_slots(m->face_offsets, c * block, c + 1 < nb ? (c + 1) * block : nf);
  for (int64_t c = 0; c < nb; c++) at[c + 1] += at[c];
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < nb; c++)
    fill_mixed_range(m, c * block, c + 1 < nb ? (c + 1) * block : nf, out + at[c]);
  free(at);
}

int64_t mb_xdmf_fan_count(const mb_mesh *m) {
  const int64_t nf = m->nf, *fo = m->face_offsets;
  int big = 0;
#pragma omp parallel for schedule(static) reduction(| : big) if (nf > 65536)
  for (int64_t f = 0; f < nf; f++) big |= fo[f + 1] - fo[f] >= 5;
  return big ? fo[nf] - fo[0] - 2 * nf : 0;
}

void mb_xdmf_fill_fan(const mb_mesh *m, int64_t *out) {
  const int64_t nf = m->nf, *fo = m->face_offsets;
#pragma omp parallel for schedule(static) if (nf > 65536)
  for (int64_t f = 0; f < nf; f++) {
    const int64_t *v = m->face_indices + fo[f], n = fo[f + 1] - fo[f];
    int64_t *o = out + 3 * (fo[f] - fo[0] - 2 * f);
    for (int64_t j = 1; j + 1 < n; j++, o += 3) {
      o[0] = v[0];
      o[1] = v[j];
      o[2] = v[j + 1];
    }
  }
}

void mb_xdmf_fill_fan_field(const mb_mesh *m, const mb_field *fd, double *out) {
  const size_t k = (size_t)fd->ncomp;
  const int64_t nf = m->nf, *fo = m->face_offsets;
#pragma omp parallel for schedule(static) if (nf > 65536)
  for (int64_t f = 0; f < nf; f++) {
    double *o = out + k * (size_t)(fo[f] - fo[0] - 2 * f);
    for (int64_t j = 1; j + 1 < fo[f + 1] - fo[f]; j++, o += k)
      memcpy(o, fd->data + k * (size_t)f, sizeof *o * k);
  }
}

/* Print s with the five XML special characters escaped. */
static void put_escaped(FILE *fp, const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '&': fputs("&amp;", fp); break;
    case '<': fputs("&lt;", fp); break;
    case '>': fputs("&gt;", fp); break;
    case '"': fputs("&quot;", fp); break;
    case '\'': fputs("&apos;", fp); break;
    default: fputc(*s, fp);
    }
  }
}

/* One HDF DataItem referencing <h5>:/meshes/<mesh>/<dset>. */
static void put_item(FILE *fp, const char *ind, const char *h5, const char *mesh,
                     const char *dset, int is_float, int64_t d0, int64_t d1) {
  fprintf(fp, "%s<DataItem Format=\"HDF\" DataType=\"%s\" Precision=\"8\" Dimensions=\"%lld",
          ind, is_float ? "Float" : "Int", (long long)d0);
  if (d1 > 0) fprintf(fp, " %lld", (long long)d1);
  fputs("\">", fp);
  put_escaped(fp, h5);
  fputs(":/meshes/", fp);
  put_escaped(fp, mesh);
  fputc('/', fp);
  put_escaped(fp, dset);
  fputs("</DataItem>\n", fp);
}

/* AttributeType of a field with ncomp components. Six components are written
 * as Matrix, not Tensor6: ParaView's legacy XDMF reader expands a Tensor6 to
 * 9 components (XDMF order xx xy xz yy yz zz) while its Xdmf3 readers pass
 * the 6 values through (which VTK takes as xx yy zz xy yz xz); a meshbatch
 * field is a plain [N,k] array, so every reader must return it unchanged. */
static const char *attribute_type(int64_t ncomp) {
  switch (ncomp) {
  case 1: return "Scalar";
  case 3: return "Vector";
  case 9: return "Tensor";
  default: return "Matrix";
  }
}

/* The Topology element: exact (collection) or meshio-safe (single-mesh file). */
static void put_topology(FILE *fp, const char *ind, const char *h5, const mb_xdmf_mesh *m,
                         int meshio_safe) {
  char sub[64];
  snprintf(sub, sizeof sub, "%.48s  ", ind);
  if (m->triangles || (meshio_safe && m->fan_ntri > 0)) {
    int64_t nt = m->triangles ? m->nf : m->fan_ntri;
    fprintf(fp, "%s<Topology TopologyType=\"Triangle\" NumberOfElements=\"%lld\" "
                "NodesPerElement=\"3\">\n", ind, (long long)nt);
    put_item(fp, sub, h5, m->name, m->triangles ? "triangles" : "xdmf_triangles", 0, nt, 3);
  } else {
    fprintf(fp, "%s<Topology TopologyType=\"Mixed\" NumberOfElements=\"%lld\">\n", ind,
            (long long)m->nf);
    put_item(fp, sub, h5, m->name, "xdmf_mixed", 0, m->mixed_len, 0);
  }
  fprintf(fp, "%s</Topology>\n", ind);
}

/* One Attribute element (Center Node or Cell) -> <group>/<field> [rows, ncomp]. */
static void put_attribute(FILE *fp, const char *ind, const char *h5, const char *mesh,
                          const char *group, const mb_xdmf_field *fd, const char *center,
                          int64_t rows) {
  char sub[64], dset[300];
  snprintf(sub, sizeof sub, "%.48s  ", ind);
  snprintf(dset, sizeof dset, "%s/%s", group, fd->name);
  fprintf(fp, "%s<Attribute Name=\"", ind);
  put_escaped(fp, fd->name);
  fprintf(fp, "\" AttributeType=\"%s\" Center=\"%s\">\n", attribute_type(fd->ncomp), center);
  put_item(fp, sub, h5, mesh, dset, 1, rows, fd->ncomp);
  fprintf(fp, "%s</Attribute>\n", ind);
}

/* One Uniform Grid with topology, geometry, per-vertex (Node) and per-face
 * (Cell) attributes. Planar kinds have XY geometry from `vertices` [nv,2]
 * (every reader puts z = 0). In the meshio-safe fan view the Cell attributes
 * are the face fields repeated per fan triangle (`xdmf_fan_fields`). */
/* The time of a time-series field of a grid, `BASE@t=TIME` (the heat op's
 * snapshots, docs/format.md): TIME's text and BASE's length, or NULL. */
static const char *series_time(const char *name, size_t *base_len) {
  const char *at = strstr(name, "@t=");
  if (!at || at == name || !at[3]) return NULL;
  *base_len = (size_t)(at - name);
  return at + 3;
}

/* A grid3d: 3DCoRectMesh of Dimensions "nz ny nx", geometry ORIGIN_DXDYDZ
 * (origin and spacing in z, y, x order, inline), and its fields as Node
 * attributes of their stored precision. With `time`, one frame of its time
 * series: a <Time> and only the fields `BASE@t=<time>`, each named BASE. */
static void put_grid3d(FILE *fp, const char *ind, const char *h5, const mb_xdmf_mesh *m,
                       const char *time) {
  char sub[64], sub2[64];
  snprintf(sub, sizeof sub, "%.48s  ", ind);
  snprintf(sub2, sizeof sub2, "%.48s    ", ind);
  fprintf(fp, "%s<Grid Name=\"", ind);
  put_escaped(fp, m->name);
  if (time) {
    fputs("@t=", fp);
    put_escaped(fp, time);
  }
  fputs("\" GridType=\"Uniform\">\n", fp);
  if (time) {
    fprintf(fp, "%s<Time Value=\"", sub);
    put_escaped(fp, time);
    fputs("\"/>\n", fp);
  }
  fprintf(fp, "%s<Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"%lld %lld %lld\"/>\n",
          sub, (long long)m->shape[0], (long long)m->shape[1], (long long)m->shape[2]);
  fprintf(fp, "%s<Geometry GeometryType=\"ORIGIN_DXDYDZ\">\n", sub);
  fprintf(fp, "%s<DataItem Format=\"XML\" NumberType=\"Float\" Precision=\"8\" "
              "Dimensions=\"3\">%.17g %.17g %.17g</DataItem>\n",
          sub2, m->origin[0], m->origin[1], m->origin[2]);
  fprintf(fp, "%s<DataItem Format=\"XML\" NumberType=\"Float\" Precision=\"8\" "
              "Dimensions=\"3\">%.17g %.17g %.17g</DataItem>\n",
          sub2, m->spacing[0], m->spacing[1], m->spacing[2]);
  fprintf(fp, "%s</Geometry>\n", sub);
  for (int i = 0; i < m->nfields; i++) {
    const mb_xdmf_field *fd = &m->fields[i];
    size_t base = strlen(fd->name);
    if (time) {
      const char *t = series_time(fd->name, &base);
      if (!t || strcmp(t, time)) continue;
    }
    fprintf(fp, "%s<Attribute Name=\"", sub);
    char shown[512];
    snprintf(shown, sizeof shown, "%.*s", (int)(base < sizeof shown ? base : sizeof shown - 1),
             fd->name);
    put_escaped(fp, shown);
    fprintf(fp, "\" AttributeType=\"%s\" Center=\"Node\">\n", attribute_type(fd->ncomp));
    fprintf(fp, "%s<DataItem Format=\"HDF\" DataType=\"Float\" Precision=\"%d\" "
                "Dimensions=\"%lld %lld %lld", sub2, fd->dtype == MB_FLOAT32 ? 4 : 8,
            (long long)m->shape[0], (long long)m->shape[1], (long long)m->shape[2]);
    if (fd->ncomp > 1) fprintf(fp, " %lld", (long long)fd->ncomp);
    fputs("\">", fp);
    put_escaped(fp, h5);
    fputs(":/meshes/", fp);
    put_escaped(fp, m->name);
    fputs("/fields/", fp);
    put_escaped(fp, fd->name);
    fputs("</DataItem>\n", fp);
    fprintf(fp, "%s</Attribute>\n", sub);
  }
  fprintf(fp, "%s</Grid>\n", ind);
}

/* A grid3d with time-series fields as a Temporal collection: one frame per
 * distinct time, in the order the fields were added. Returns 0 (nothing
 * written) when the grid has no such field. */
static int put_grid3d_series(FILE *fp, const char *ind, const char *h5, const mb_xdmf_mesh *m) {
  int frames = 0;
  for (int i = 0; i < m->nfields; i++) {
    size_t base;
    const char *t = series_time(m->fields[i].name, &base);
    if (!t) continue;
    int seen = 0; /* written already with an earlier field of this time */
    for (int j = 0; j < i && !seen; j++) {
      size_t b2;
      const char *t2 = series_time(m->fields[j].name, &b2);
      seen = t2 && !strcmp(t2, t);
    }
    if (seen) continue;
    if (!frames++) {
      fprintf(fp, "%s<Grid Name=\"", ind);
      put_escaped(fp, m->name);
      fputs("\" GridType=\"Collection\" CollectionType=\"Temporal\">\n", fp);
    }
    char sub[64];
    snprintf(sub, sizeof sub, "%.48s  ", ind);
    put_grid3d(fp, sub, h5, m, t);
  }
  if (frames) fprintf(fp, "%s</Grid>\n", ind);
  return frames;
}

static void put_grid(FILE *fp, const char *ind, const char *h5, const mb_xdmf_mesh *m,
                     int meshio_safe) {
  if (m->kind == MB_KIND_GRID3D) {
    put_grid3d(fp, ind, h5, m, NULL);
    return;
  }
  char sub[64], sub2[64];
  snprintf(sub, sizeof sub, "%.48s  ", ind);
  snprintf(sub2, sizeof sub2, "%.48s    ", ind);
  int planar = m->kind == MB_KIND_TRIANGULATION2D || m->kind == MB_KIND_POLYGONS2D;
  fprintf(fp, "%s<Grid Name=\"", ind);
  put_escaped(fp, m->name);
  fputs("\" GridType=\"Uniform\">\n", fp);
  put_topology(fp, sub, h5, m, meshio_safe);
  fprintf(fp, "%s<Geometry GeometryType=\"%s\">\n", sub, planar ? "XY" : "XYZ");
  put_item(fp, sub2, h5, m->name, "vertices", 1, m->nv, planar ? 2 : 3);
  fprintf(fp, "%s</Geometry>\n", sub);
  for (int i = 0; i < m->nfields; i++)
    put_attribute(fp, sub, h5, m->name, "fields", &m->fields[i], "Node", m->nv);
  int fan = meshio_safe && !m->triangles && m->fan_ntri > 0;
  for (int i = 0; i < m->nface_fields; i++)
    put_attribute(fp, sub, h5, m->name, fan ? "xdmf_fan_fields" : "face_fields",
                  &m->face_fields[i], "Cell", fan ? m->fan_ntri : m->nf);
  fprintf(fp, "%s</Grid>\n", ind);
}

static const char *xdmf_head =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
    "<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n"
    "<Xdmf Version=\"3.0\">\n"
    "  <Domain>\n";
static const char *xdmf_tail = "  </Domain>\n</Xdmf>\n";

/* Flush and close fp and turn a write error into MB_ERR_IO naming path,
 * with the errno of the first call that failed (a buffered write's, else
 * fflush's, else fclose's; each read before the next call can change it):
 * ENOSPC reads "No space left on device". errno is 0 on entry to the
 * writes (the callers clear it after fopen). */
static mb_error finish(FILE *fp, const char *path) {
  int err = ferror(fp) ? (errno ? errno : EIO) : 0;
  if (!err && fflush(fp) != 0) err = errno ? errno : EIO;
  errno = 0;
  if (fclose(fp) != 0 && !err) err = errno ? errno : EIO;
  MB_CHECK(!err, MB_ERR_IO, "%s: cannot write XDMF file: %s%s", path, strerror(err),
           err == ENOSPC || err == EDQUOT ? " (no space left: the disk or quota is full)" : "");
  return MB_SUCCESS;
}

mb_error mb_xdmf_write_collection(const char *xdmf_path, const char *h5_name, int64_t n,
                                  const mb_xdmf_mesh *meshes) {
  FILE *fp = fopen(xdmf_path, "w");
  MB_CHECK(fp, MB_ERR_IO, "%s: cannot create XDMF file: %s", xdmf_path, strerror(errno));
  errno = 0;
  fputs(xdmf_head, fp);
  fputs("    <Grid Name=\"meshes\" GridType=\"Collection\" CollectionType=\"Spatial\">\n", fp);
  for (int64_t i = 0; i < n; i++) put_grid(fp, "      ", h5_name, &meshes[i], 0);
  fputs("    </Grid>\n", fp);
  fputs(xdmf_tail, fp);
  MB_CALL(finish(fp, xdmf_path));
  return MB_SUCCESS;
}

mb_error mb_xdmf_write_mesh(const char *xdmf_path, const char *h5_name, const mb_xdmf_mesh *m) {
  FILE *fp = fopen(xdmf_path, "w");
  MB_CHECK(fp, MB_ERR_IO, "%s: cannot create XDMF file: %s", xdmf_path, strerror(errno));
  errno = 0;
  fputs(xdmf_head, fp);
  if (m->kind != MB_KIND_GRID3D || !put_grid3d_series(fp, "    ", h5_name, m))
    put_grid(fp, "    ", h5_name, m, 1);
  fputs(xdmf_tail, fp);
  MB_CALL(finish(fp, xdmf_path));
  return MB_SUCCESS;
}
