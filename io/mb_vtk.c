/* meshbatch: grids as legacy VTK files (see mb_vtk.h). */
#include "mb_vtk.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Write n values of w bytes from src big-endian, through a buffer. */
static int put_big_endian(FILE *fp, const void *src, int64_t n, size_t w) {
  enum { CHUNK = 1 << 16 };
  unsigned char buf[CHUNK * 8];
  const unsigned char *s = src;
  for (int64_t i = 0; i < n; i += CHUNK) {
    const int64_t k = n - i < CHUNK ? n - i : CHUNK;
    for (int64_t j = 0; j < k; j++)
      for (size_t b = 0; b < w; b++) buf[(size_t)j * w + b] = s[(size_t)(i + j) * w + (w - 1 - b)];
    if (fwrite(buf, w, (size_t)k, fp) != (size_t)k) return 1;
  }
  return 0;
}

static int put_grid(FILE *fp, const mb_mesh *g) {
  int bad = fprintf(fp, "# vtk DataFile Version 3.0\n%s (meshbatch grid3d)\nBINARY\n"
                        "DATASET STRUCTURED_POINTS\nDIMENSIONS %lld %lld %lld\n"
                        "ORIGIN %.17g %.17g %.17g\nSPACING %.17g %.17g %.17g\nPOINT_DATA %lld\n",
                    g->name, (long long)g->shape[2], (long long)g->shape[1],
                    (long long)g->shape[0], g->origin[2], g->origin[1], g->origin[0],
                    g->spacing[2], g->spacing[1], g->spacing[0], (long long)g->nv) < 0;
  for (int f = 0; f < g->nfields && !bad; f++) {
    const mb_field *fd = &g->fields[f];
    const int f32 = fd->dtype == MB_FLOAT32;
    if (fd->ncomp == 1)
      bad = fprintf(fp, "SCALARS %s %s 1\nLOOKUP_TABLE default\n", fd->name,
                    f32 ? "float" : "double") < 0;
    else bad = fprintf(fp, "VECTORS %s %s\n", fd->name, f32 ? "float" : "double") < 0;
    if (!bad)
      bad = f32 ? put_big_endian(fp, fd->data32, g->nv * fd->ncomp, sizeof(float))
                : put_big_endian(fp, fd->data, g->nv * fd->ncomp, sizeof(double));
    if (!bad) bad = fputc('\n', fp) == EOF;
  }
  return bad;
}

mb_error mb_vtk_write_grid(const char *path, const mb_mesh *g) {
  MB_CHECK(g && g->kind == MB_KIND_GRID3D, MB_ERR_ARG, "%s: only grids (grid3d) are written as VTK",
           path);
  for (int f = 0; f < g->nfields; f++) {
    MB_CHECK(g->fields[f].ncomp == 1 || g->fields[f].ncomp == 3, MB_ERR_ARG,
             "%s: field '%s' of grid '%s' has %d components (VTK takes 1 or 3)", path,
             g->fields[f].name, g->name, g->fields[f].ncomp);
    MB_CHECK(!strpbrk(g->fields[f].name, " \t\n"), MB_ERR_ARG,
             "%s: field name '%s' has a blank, which VTK's legacy format cannot hold", path,
             g->fields[f].name);
  }
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
  FILE *fp = fopen(tmp, "wb");
  MB_CHECK(fp, MB_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
  int bad = put_grid(fp, g);
  const int err = errno;
  bad |= fclose(fp) != 0;
  if (bad || rename(tmp, path) != 0) {
    const int e2 = bad ? err : errno;
    unlink(tmp);
    MB_FAIL(MB_ERR_IO, "cannot write %s: %s", path, strerror(e2));
  }
  return MB_SUCCESS;
}
