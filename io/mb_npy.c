/* meshbatch: NumPy .npy files as grids (see mb_npy.h). */
#include "mb_npy.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mb_meshfile_util.h"

#define NPY_HEADER_MAX (1 << 20) /* bytes of header accepted */

/* The value of key `key` in the header dict: a pointer just after its
 * colon (skipping blanks), or NULL. */
static const char *dict_value(const char *h, const char *key) {
  char pat[32];
  snprintf(pat, sizeof pat, "'%s'", key);
  const char *p = strstr(h, pat);
  if (!p) return NULL;
  p += strlen(pat);
  while (*p == ' ') p++;
  if (*p != ':') return NULL;
  p++;
  while (*p == ' ') p++;
  return p;
}

typedef struct npy_type {
  char kind;     /* 'f', 'i', 'u' */
  int size;      /* bytes */
  int swap;      /* stored big-endian */
} npy_type;

static int parse_descr(const char *v, npy_type *t) {
  if (!v || *v != '\'' || !v[1] || !v[2]) return 1; /* a header may end anywhere */
  char order = v[1], kind = v[2];
  int size = 0, used = 0;
  if (sscanf(v + 3, "%d%n", &size, &used) != 1 || v[3 + used] != '\'') return 1;
  if (order != '<' && order != '>' && order != '=' && order != '|') return 1;
  if (!((kind == 'f' && (size == 4 || size == 8)) ||
        ((kind == 'i' || kind == 'u') && (size == 1 || size == 2 || size == 4 || size == 8))))
    return 1;
  t->kind = kind;
  t->size = size;
  t->swap = order == '>' && size > 1; /* this build runs on little-endian hosts */
  return 0;
}

/* "(a, b, c)" into shape[]; returns ndim, or -1. */
static int parse_shape(const char *v, int64_t shape[8]) {
  if (!v || *v != '(') return -1;
  int nd = 0;
  v++;
  for (;;) {
    while (*v == ' ') v++;
    if (*v == ')') return nd;
    char *end;
    errno = 0;
    long long d = strtoll(v, &end, 10);
    if (end == v || errno || d < 0 || nd == 8) return -1;
    shape[nd++] = d;
    v = end;
    while (*v == ' ') v++;
    if (*v == ',') v++;
    else if (*v != ')') return -1;
  }
}

static void swap_bytes(unsigned char *p, int size) {
  for (int i = 0; i < size / 2; i++) {
    unsigned char t = p[i];
    p[i] = p[size - 1 - i];
    p[size - 1 - i] = t;
  }
}

/* One stored value as double. */
static double value_at(const unsigned char *raw, const npy_type *t, int64_t i) {
  unsigned char b[8];
  memcpy(b, raw + (size_t)i * (size_t)t->size, (size_t)t->size);
  if (t->swap) swap_bytes(b, t->size);
  switch (t->kind) {
  case 'f': {
    if (t->size == 4) { float f; memcpy(&f, b, 4); return f; }
    double d; memcpy(&d, b, 8); return d;
  }
  case 'i':
    if (t->size == 1) { int8_t v; memcpy(&v, b, 1); return v; }
    if (t->size == 2) { int16_t v; memcpy(&v, b, 2); return v; }
    if (t->size == 4) { int32_t v; memcpy(&v, b, 4); return v; }
    { int64_t v; memcpy(&v, b, 8); return (double)v; }
  default:
    if (t->size == 1) { uint8_t v; memcpy(&v, b, 1); return v; }
    if (t->size == 2) { uint16_t v; memcpy(&v, b, 2); return v; }
    if (t->size == 4) { uint32_t v; memcpy(&v, b, 4); return v; }
    { uint64_t v; memcpy(&v, b, 8); return (double)v; }
  }
}

mb_error mb_npy_read_grid(const char *path, mb_mesh **grid) {
  MB_CHECK(path && grid, MB_ERR_ARG, "mb_npy_read_grid: NULL argument");
  *grid = NULL;
  FILE *fp = fopen(path, "rb");
  MB_CHECK(fp, MB_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  mb_error e = MB_SUCCESS;
  char *header = NULL;
  unsigned char *raw = NULL;
  void *values = NULL;
  mb_mesh *g = NULL;
  unsigned char pre[12];
  size_t got = fread(pre, 1, 10, fp);
  if (got < 10 || memcmp(pre, "\x93NUMPY", 6)) {
    e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                     "%s: not a NumPy .npy file (no \\x93NUMPY magic)", path);
    goto done;
  }
  const int major = pre[6];
  uint32_t hlen = 0;
  if (major == 1) {
    hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8;
  } else if (major == 2 || major == 3) {
    if (fread(pre + 10, 1, 2, fp) != 2) {
      e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__, "%s: file ends in the header", path);
      goto done;
    }
    hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8 | (uint32_t)pre[10] << 16 | (uint32_t)pre[11] << 24;
  } else {
    e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                     "%s: unsupported .npy version %d.%d", path, major, pre[7]);
    goto done;
  }
  if (hlen == 0 || hlen > NPY_HEADER_MAX) {
    e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                     "%s: header length %u out of range", path, (unsigned)hlen);
    goto done;
  }
  header = malloc((size_t)hlen + 1);
  if (!header || fread(header, 1, hlen, fp) != hlen) {
    e = mb_error_set(header ? MB_ERR_FORMAT : MB_ERR_MEMORY, __FILE__, __LINE__, __func__,
                     "%s: file ends in the header", path);
    goto done;
  }
  header[hlen] = '\0';
  npy_type t;
  int64_t shape[8];
  const char *fo = dict_value(header, "fortran_order");
  const int nd = parse_shape(dict_value(header, "shape"), shape);
  if (parse_descr(dict_value(header, "descr"), &t)) {
    e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                     "%s: header: unsupported dtype (meshbatch reads float32, float64 and "
                     "integer arrays)", path);
    goto done;
  }
  if (nd < 1 || nd > 3 || !fo || (strncmp(fo, "True", 4) && strncmp(fo, "False", 5))) {
    e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                     "%s: header: expected a shape of 1 to 3 dimensions and fortran_order "
                     "(a grid is (nz, ny, nx))", path);
    goto done;
  }
  const int fortran = !strncmp(fo, "True", 4);
  int64_t n[3] = {1, 1, 1}, count = 1;
  for (int a = 0; a < nd; a++) {
    n[3 - nd + a] = shape[a];
    if (shape[a] < 1 || count > ((int64_t)1 << 40) / shape[a]) {
      e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                       "%s: header: shape with an empty or too large axis", path);
      goto done;
    }
    count *= shape[a];
  }
  const size_t bytes = (size_t)count * (size_t)t.size;
  const long here = ftell(fp); /* the shape must fit the file before anything is allocated */
  struct stat st;
  if (here < 0 || fstat(fileno(fp), &st) != 0 || (uint64_t)st.st_size < (uint64_t)here ||
      (uint64_t)st.st_size - (uint64_t)here < bytes) {
    e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                     "%s: the header's shape needs %zu bytes of data, the file has %lld", path,
                     bytes, here < 0 ? 0LL : (long long)st.st_size - here);
    goto done;
  }
  if ((uint64_t)st.st_size - (uint64_t)here != bytes) { /* no room for anything after the data */
    e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                     "%s: %lld bytes follow the %zu bytes of data the header's shape gives: not "
                     "a .npy array (a truncated header, or another file appended)", path,
                     (long long)((uint64_t)st.st_size - (uint64_t)here - bytes), bytes);
    goto done;
  }
  raw = mb_alloc(bytes);
  if (!raw) {
    e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "%s: out of memory", path);
    goto done;
  }
  size_t have = fread(raw, 1, bytes, fp);
  if (have != bytes) {
    e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                     "%s: data ends after %zu of %zu bytes", path, have, bytes);
    goto done;
  }
  const double origin[3] = {0, 0, 0}, spacing[3] = {1, 1, 1};
  char name[256];
  mb_path_stem(path, name, sizeof name);
  MB_CALL_GOTO(e, done, mb_grid_create(name, n, origin, spacing, &g));
  const int f32 = t.kind == 'f' && t.size == 4;
  values = malloc((f32 ? sizeof(float) : sizeof(double)) * (size_t)count);
  if (!values) {
    e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "%s: out of memory", path);
    goto done;
  }
  for (int64_t k = 0; k < n[0]; k++)
    for (int64_t j = 0; j < n[1]; j++)
      for (int64_t i = 0; i < n[2]; i++) {
        const int64_t c = (k * n[1] + j) * n[2] + i; /* C order */
        const int64_t s = fortran ? (i * n[1] + j) * n[0] + k : c;
        const double v = value_at(raw, &t, s);
        if (f32) ((float *)values)[c] = (float)v;
        else ((double *)values)[c] = v;
      }
  MB_CALL_GOTO(e, done, f32 ? mb_mesh_set_field_f32(g, "u", 1, values)
                            : mb_mesh_set_field(g, "u", 1, values));
  *grid = g;
  g = NULL;
done:
  fclose(fp);
  free(header);
  free(raw);
  free(values);
  mb_mesh_free(g);
  return e;
}

mb_error mb_npy_write_field(const char *path, const mb_mesh *grid, int f) {
  MB_CHECK(grid && grid->kind == MB_KIND_GRID3D && f >= 0 && f < grid->nfields, MB_ERR_ARG,
           "%s: only a field of a grid3d is written as .npy", path);
  const mb_field *fd = &grid->fields[f];
  const int f32 = fd->dtype == MB_FLOAT32;
  char comps[32] = "", dict[256];
  if (fd->ncomp > 1) snprintf(comps, sizeof comps, ", %d", fd->ncomp);
  const int len = snprintf(dict, sizeof dict,
                           "{'descr': '<f%d', 'fortran_order': False, 'shape': (%lld, %lld, %lld%s), }",
                           f32 ? 4 : 8, (long long)grid->shape[0], (long long)grid->shape[1],
                           (long long)grid->shape[2], comps);
  /* pad with spaces and a newline so that the data starts at a multiple of 64 */
  const int total = ((10 + len + 1 + 63) / 64) * 64, hlen = total - 10;
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
  FILE *fp = fopen(tmp, "wb");
  MB_CHECK(fp, MB_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                           (unsigned char)(hlen >> 8)};
  int ok = fwrite(pre, 1, 10, fp) == 10 && fwrite(dict, 1, (size_t)len, fp) == (size_t)len;
  for (int i = len; ok && i < hlen - 1; i++) ok = fputc(' ', fp) != EOF;
  ok = ok && fputc('\n', fp) != EOF;
  const size_t n = (size_t)grid->nv * (size_t)fd->ncomp;
  ok = ok && (f32 ? fwrite(fd->data32, sizeof(float), n, fp) : fwrite(fd->data, sizeof(double), n, fp)) == n;
  int err = errno;
  if (fclose(fp) != 0) ok = 0;
  if (!ok || rename(tmp, path) != 0) {
    if (ok) err = errno;
    unlink(tmp);
    MB_FAIL(MB_ERR_IO, "%s: cannot write: %s", path, strerror(err ? err : EIO));
  }
  return MB_SUCCESS;
}
