/* meshbatch: mesh file readers and writers (see mb_meshfile.h).
 *
 * This file holds the format dispatch, whole-file loading, the temporary-file
 * write protocol, the mesh builder and the text tokenizer shared by the
 * OBJ (mb_obj.c), OFF (mb_off.c) and PLY (mb_ply.c) code.
 */
#define _POSIX_C_SOURCE 200809L

#include "mb_meshfile.h"
#include "mb_meshfile_private.h"
#include "mb_npy.h"
#include "mb_vtk.h"
#include "mb_trianglefile.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------ builder */

mb_error mb_mf_builder_init(mb_mf_builder *b) {
  memset(b, 0, sizeof *b);
  b->offsets = calloc(1, sizeof(int64_t));
  MB_CHECK(b->offsets, MB_ERR_MEMORY, "out of memory starting a mesh");
  return MB_SUCCESS;
}

void mb_mf_builder_free(mb_mf_builder *b) {
  free(b->xyz);
  free(b->offsets);
  free(b->indices);
  memset(b, 0, sizeof *b);
}

/* Resize one array to hold cap items (which: 0 vertices, 1 faces, 2 indices). */
static mb_error mb_mf_builder_resize(mb_mf_builder *b, int which, int64_t cap) {
  size_t n = (size_t)cap;
  void *p = NULL;
  if (which == 0 && n <= SIZE_MAX / (3 * sizeof(double)))
    p = realloc(b->xyz, n * 3 * sizeof(double));
  else if (which == 1 && n < SIZE_MAX / sizeof(int64_t))
    p = realloc(b->offsets, (n + 1) * sizeof(int64_t));
  else if (which == 2 && n <= SIZE_MAX / sizeof(int64_t))
    p = realloc(b->indices, (n ? n : 1) * sizeof(int64_t));
  MB_CHECK(p, MB_ERR_MEMORY, "out of memory reading a mesh (%lld %s)", (long long)cap,
           which == 0 ? "vertices" : which == 1 ? "faces" : "face indices");
  if (which == 0) b->xyz = p, b->cap_v = cap;
  else if (which == 1) b->offsets = p, b->cap_f = cap;
  else b->indices = p, b->cap_i = cap;
  return MB_SUCCESS;
}

mb_error mb_mf_builder_grow(mb_mf_builder *b, int which) {
  int64_t cap = which == 0 ? b->cap_v : which == 1 ? b->cap_f : b->cap_i;
  MB_CHECK(cap < INT64_MAX / 4, MB_ERR_MEMORY, "mesh too large");
  MB_CALL(mb_mf_builder_resize(b, which, cap < 1024 ? 1024 : 2 * cap));
  return MB_SUCCESS;
}

mb_error mb_mf_builder_reserve(mb_mf_builder *b, int64_t nv, int64_t nf, int64_t ni) {
  if (nv > 0 && b->nv + nv > b->cap_v) MB_CALL(mb_mf_builder_resize(b, 0, b->nv + nv));
  if (nf > 0 && b->nf + nf > b->cap_f) MB_CALL(mb_mf_builder_resize(b, 1, b->nf + nf));
  if (ni > 0 && b->ni + ni > b->cap_i) MB_CALL(mb_mf_builder_resize(b, 2, b->ni + ni));
  return MB_SUCCESS;
}

void mb_path_stem(const char *path, char *stem, size_t len) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  snprintf(stem, len, "%s", base);
  char *dot = strrchr(stem, '.');
  if (dot && dot != stem) *dot = '\0';
}

/* The file stem of path, newly allocated. */
static char *mb_mf_stem(const char *path) {
  char *s = malloc(strlen(path) + 1);
  if (s) mb_path_stem(path, s, strlen(path) + 1);
  return s;
}

/* Move the builder's arrays into a new mesh named after path's stem. */
static mb_error mb_mf_builder_finish(mb_mf_builder *b, const char *path, mb_mesh **mesh) {
  char *name = mb_mf_stem(path);
  MB_CHECK(name, MB_ERR_MEMORY, "out of memory");
  mb_mesh *m = NULL;
  mb_error e = mb_mesh_create(name, 0, 0, 0, &m);
  free(name);
  MB_CALL(e);
  free(m->xyz);
  free(m->face_offsets);
  free(m->face_indices);
  m->nv = b->nv;
  m->xyz = b->xyz;
  m->nf = b->nf;
  m->face_offsets = b->offsets;
  m->face_indices = b->indices;
  memset(b, 0, sizeof *b);
  if (!m->xyz) m->xyz = calloc(3, sizeof(double));
  if (!m->face_indices) m->face_indices = calloc(1, sizeof(int64_t));
  if (!m->xyz || !m->face_indices) {
    mb_mesh_free(m);
    MB_FAIL(MB_ERR_MEMORY, "out of memory");
  }
  *mesh = m;
  return MB_SUCCESS;
}

/* ------------------------------------------------------------ text cursor */

void mb_mf_text_init(mb_mf_text *t, const char *path, const char *data, size_t len, char comment) {
  t->path = path;
  t->p = data;
  t->end = data + len;
  t->line = 1;
  t->comment = comment;
}

void mb_mf_next_line(mb_mf_text *t) {
  if (t->p >= t->end) return;
  const char *nl = memchr(t->p, '\n', (size_t)(t->end - t->p));
  t->p = nl ? nl + 1 : t->end;
  t->line++;
}

int mb_mf_skip_empty_lines(mb_mf_text *t) {
  while (!mb_mf_at_eof(t) && mb_mf_at_eol(t)) mb_mf_next_line(t);
  return !mb_mf_at_eof(t);
}

const char *mb_mf_token(mb_mf_text *t, size_t *len) {
  mb_mf_skip_blanks(t);
  const char *s = t->p;
  while (!mb_mf_is_delim(t, *t->p)) t->p++;
  *len = (size_t)(t->p - s);
  return s;
}

int mb_mf_token_is(const char *s, size_t len, const char *word) {
  return strlen(word) == len && memcmp(s, word, len) == 0;
}

mb_error mb_mf_bad_token(const mb_mf_text *t, const char *s, const char *what) {
  size_t n = 0;
  while (!mb_mf_is_blank(s[n]) && s[n] != '\n' && s[n] != '\0' && n < 40) n++;
  if (n == 0)
    MB_FAIL(MB_ERR_FORMAT, "%s:%lld: expected %s, got end of line", t->path, (long long)t->line,
            what);
  MB_FAIL(MB_ERR_FORMAT, "%s:%lld: expected %s, got '%.*s'", t->path, (long long)t->line, what,
          (int)n, s);
}

mb_error mb_mf_int(mb_mf_text *t, const char *what, int64_t *v) {
  mb_mf_skip_blanks(t);
  const char *s = t->p, *q = s;
  if (!mb_mf_scan_int(&q, v) || !mb_mf_is_delim(t, *q)) return mb_mf_bad_token(t, s, what);
  t->p = q;
  return MB_SUCCESS;
}

mb_error mb_mf_number(mb_mf_text *t, const char *what, double *x) {
  mb_mf_skip_blanks(t);
  const char *s = t->p;
  if (!mb_mf_is_delim(t, *s)) {
    char *e;
    *x = strtod(s, &e);
    if (e != s && mb_mf_is_delim(t, *e)) {
      t->p = e;
      return MB_SUCCESS;
    }
  }
  return mb_mf_bad_token(t, s, what);
}

mb_error mb_mf_coord(mb_mf_text *t, double *x) {
  mb_mf_skip_blanks(t);
  const char *s = t->p;
  MB_CALL(mb_mf_number(t, "a coordinate", x));
  MB_CHECK(isfinite(*x), MB_ERR_FORMAT, "%s:%lld: non-finite coordinate '%.*s'", t->path,
           (long long)t->line, (int)(t->p - s < 40 ? t->p - s : 40), s);
  return MB_SUCCESS;
}

mb_error mb_mf_vertex_line(mb_mf_text *t, mb_mf_builder *b) {
  double x, y, z;
  MB_CALL(mb_mf_coord(t, &x));
  MB_CALL(mb_mf_coord(t, &y));
  MB_CALL(mb_mf_coord(t, &z));
  MB_CALL(mb_mf_add_vertex(b, x, y, z));
  return MB_SUCCESS;
}

/* ------------------------------------------------------------ reading */

mb_meshfile_format mb_meshfile_format_of(const char *path) {
  if (!path) return MB_MESHFILE_UNKNOWN;
  const char *base = strrchr(path, '/');
  const char *dot = strrchr(base ? base : path, '.');
  if (!dot || (strlen(dot) != 4 && strlen(dot) != 5)) return MB_MESHFILE_UNKNOWN;
  char ext[5];
  size_t n = strlen(dot) - 1;
  for (size_t i = 0; i < n; i++) {
    char c = dot[1 + i];
    ext[i] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  ext[n] = '\0';
  if (!strcmp(ext, "obj")) return MB_MESHFILE_OBJ;
  if (!strcmp(ext, "off")) return MB_MESHFILE_OFF;
  if (!strcmp(ext, "ply")) return MB_MESHFILE_PLY;
  if (!strcmp(ext, "node")) return MB_MESHFILE_NODE;
  if (!strcmp(ext, "ele")) return MB_MESHFILE_ELE;
  if (!strcmp(ext, "npy")) return MB_MESHFILE_NPY;
  if (!strcmp(ext, "vtk")) return MB_MESHFILE_VTK;
  return MB_MESHFILE_UNKNOWN;
}

/* Read all of f into *data (NUL-terminated, *len bytes without the NUL). */
static mb_error mb_mf_slurp(FILE *f, const char *path, char **data, size_t *len) {
  struct stat st;
  size_t cap = 1 << 16;
  if (fstat(fileno(f), &st) == 0) {
    MB_CHECK(!S_ISDIR(st.st_mode), MB_ERR_IO, "%s: cannot read: %s", path, strerror(EISDIR));
    if (S_ISREG(st.st_mode) && st.st_size > 0) cap = (size_t)st.st_size + 2;
  }
  char *buf = malloc(cap);
  MB_CHECK(buf, MB_ERR_MEMORY, "%s: out of memory for %zu bytes", path, cap);
  size_t n = 0;
  for (;;) {
    if (n + 1 >= cap) {
      char *nb = cap < SIZE_MAX / 2 ? realloc(buf, 2 * cap) : NULL;
      if (!nb) {
        free(buf);
        MB_FAIL(MB_ERR_MEMORY, "%s: out of memory reading the file", path);
      }
      buf = nb;
      cap *= 2;
    }
    size_t got = fread(buf + n, 1, cap - 1 - n, f);
    n += got;
    if (got == 0) break;
  }
  if (ferror(f)) {
    int err = errno;
    free(buf);
    MB_FAIL(MB_ERR_IO, "%s: cannot read: %s", path, strerror(err ? err : EIO));
  }
  buf[n] = '\0';
  *data = buf;
  *len = n;
  return MB_SUCCESS;
}

mb_error mb_mf_load(const char *path, char **data, size_t *len) {
  FILE *f = fopen(path, "rb");
  MB_CHECK(f, MB_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  mb_error e = mb_mf_slurp(f, path, data, len);
  fclose(f);
  MB_CALL(e);
  return MB_SUCCESS;
}

mb_error mb_meshfile_read(const char *path, mb_mesh **mesh) {
  MB_CHECK(path && mesh, MB_ERR_ARG, "mb_meshfile_read: NULL argument");
  *mesh = NULL;
  mb_meshfile_format fmt = mb_meshfile_format_of(path);
  MB_CHECK(fmt != MB_MESHFILE_UNKNOWN, MB_ERR_ARG,
           "%s: unknown mesh file extension (expected .obj, .off, .ply, .node, .ele or .npy)",
           path);
  if (fmt == MB_MESHFILE_NODE || fmt == MB_MESHFILE_ELE) {
    MB_CALL(mb_trianglefile_read(path, mesh));
    return MB_SUCCESS;
  }
  if (fmt == MB_MESHFILE_NPY) {
    MB_CALL(mb_npy_read_grid(path, mesh));
    return MB_SUCCESS;
  }
  MB_CHECK(fmt != MB_MESHFILE_VTK, MB_ERR_ARG,
           "%s: meshbatch writes VTK files (export --format vtk) but does not read them", path);
  char *data = NULL;
  size_t len = 0;
  MB_CALL(mb_mf_load(path, &data, &len));
  mb_mf_builder b;
  mb_mesh *m = NULL;
  mb_error e;
  MB_CALL_GOTO(e, done, mb_mf_builder_init(&b));
  if (fmt == MB_MESHFILE_OBJ) MB_CALL_GOTO(e, done, mb_obj_read(path, data, len, &b));
  else if (fmt == MB_MESHFILE_OFF) MB_CALL_GOTO(e, done, mb_off_read(path, data, len, &b));
  else MB_CALL_GOTO(e, done, mb_ply_read(path, data, len, &b));
  free(data);
  data = NULL;
  MB_CALL_GOTO(e, done, mb_mf_builder_finish(&b, path, &m));
  MB_CALL_GOTO(e, done, mb_mesh_validate(m, path));
  *mesh = m;
  return MB_SUCCESS;
done:
  free(data);
  mb_mf_builder_free(&b);
  mb_mesh_free(m);
  return e;
}

/* ------------------------------------------------------------ writing */

/* Check that a mesh is consistent enough to be written without overruns. */
static mb_error mb_mf_check_writable(const char *path, const mb_mesh *m) {
  MB_CHECK(m->nv >= 0 && m->nf >= 0, MB_ERR_ARG, "%s: cannot write a mesh with negative sizes",
           path);
  MB_CHECK((m->xyz || m->nv == 0) && m->face_offsets && (m->face_indices || m->nf == 0),
           MB_ERR_ARG, "%s: cannot write a mesh with missing arrays", path);
  MB_CHECK(m->face_offsets[0] == 0, MB_ERR_ARG, "%s: face offsets must start at 0", path);
  for (int64_t f = 0; f < m->nf; f++) {
    MB_CHECK(m->face_offsets[f + 1] >= m->face_offsets[f], MB_ERR_ARG,
             "%s: cannot write: face offsets decrease at face %lld", path, (long long)f);
    for (int64_t k = m->face_offsets[f]; k < m->face_offsets[f + 1]; k++)
      MB_CHECK(m->face_indices[k] >= 0 && m->face_indices[k] < m->nv, MB_ERR_ARG,
               "%s: cannot write: face %lld refers to vertex %lld, outside [0, %lld)", path,
               (long long)f, (long long)m->face_indices[k], (long long)m->nv);
  }
  return MB_SUCCESS;
}

/* Write m to the open temporary file f; stdio failures become MB_ERR_IO. */
static mb_error mb_mf_write_to(FILE *f, const char *path, mb_meshfile_format fmt,
                               const mb_mesh *m) {
  if (fmt == MB_MESHFILE_OBJ) MB_CALL(mb_obj_write(f, path, m));
  else if (fmt == MB_MESHFILE_OFF) MB_CALL(mb_off_write(f, path, m));
  else MB_CALL(mb_ply_write(f, path, m));
  MB_CHECK(fflush(f) == 0 && !ferror(f), MB_ERR_IO, "%s: cannot write: %s", path,
           strerror(errno ? errno : EIO));
  return MB_SUCCESS;
}

mb_error mb_meshfile_write(const char *path, const mb_mesh *mesh) {
  MB_CHECK(path && mesh, MB_ERR_ARG, "mb_meshfile_write: NULL argument");
  mb_meshfile_format fmt = mb_meshfile_format_of(path);
  MB_CHECK(fmt != MB_MESHFILE_UNKNOWN, MB_ERR_ARG,
           "%s: unknown mesh file extension (expected .obj, .off, .ply, .node, .ele or .npy)",
           path);
  if (fmt == MB_MESHFILE_NODE || fmt == MB_MESHFILE_ELE) {
    MB_CALL(mb_trianglefile_write(path, mesh));
    return MB_SUCCESS;
  }
  if (fmt == MB_MESHFILE_NPY) {
    MB_CHECK(mesh->kind == MB_KIND_GRID3D && mesh->nfields == 1, MB_ERR_ARG,
             "%s: a .npy file holds one field of a grid3d ('%s' is a %s with %d fields; export "
             "a grid into a folder to write one .npy per field)",
             path, mesh->name, mb_kind_name(mesh->kind), mesh->nfields);
    MB_CALL(mb_npy_write_field(path, mesh, 0));
    return MB_SUCCESS;
  }
  if (fmt == MB_MESHFILE_VTK) return mb_vtk_write_grid(path, mesh);
  MB_CHECK(mesh->kind != MB_KIND_GRID3D, MB_ERR_ARG,
           "%s: '%s' is a grid3d; grids are written as .npy (one field per file) or .vtk", path,
           mesh->name);
  MB_CALL(mb_mf_check_writable(path, mesh));
  size_t n = strlen(path) + 32;
  char *tmp = malloc(n);
  MB_CHECK(tmp, MB_ERR_MEMORY, "out of memory");
  snprintf(tmp, n, "%s.tmp-%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    int err = errno;
    free(tmp);
    MB_FAIL(MB_ERR_IO, "%s: cannot create: %s", path, strerror(err));
  }
  setvbuf(f, NULL, _IOFBF, 1 << 20);
  errno = 0;
  mb_error e = mb_mf_write_to(f, path, fmt, mesh);
  int closed = fclose(f) == 0;
  if (e != MB_SUCCESS)
    mb_error_trace(__FILE__, __LINE__, __func__);
  else if (!closed)
    e = mb_error_set(MB_ERR_IO, __FILE__, __LINE__, __func__, "%s: cannot write: %s", path,
                     strerror(errno));
  else if (rename(tmp, path) != 0)
    e = mb_error_set(MB_ERR_IO, __FILE__, __LINE__, __func__, "%s: cannot rename %s: %s", path,
                     tmp, strerror(errno));
  if (e != MB_SUCCESS) remove(tmp);
  free(tmp);
  return e;
}

/* ------------------------------------------------------------ kinds */

mb_error mb_mesh_convert_kind(mb_mesh *mesh, mb_kind kind, const char *source) {
  MB_CHECK(mesh, MB_ERR_ARG, "mb_mesh_convert_kind: NULL mesh");
  const char *src = source ? source : (mesh->name ? mesh->name : "mesh");
  MB_CHECK(kind == MB_KIND_SURFACE || kind == MB_KIND_TRIANGULATION2D ||
               kind == MB_KIND_POLYGONS2D,
           MB_ERR_ARG, "%s: cannot convert to kind %d (%s)", src, (int)kind, mb_kind_name(kind));
  if (mesh->kind == kind) return MB_SUCCESS;
  if (kind != MB_KIND_SURFACE) {
    if (kind == MB_KIND_TRIANGULATION2D)
      for (int64_t f = 0; f < mesh->nf; f++) {
        int64_t n = mesh->face_offsets[f + 1] - mesh->face_offsets[f];
        MB_CHECK(n == 3, MB_ERR_FORMAT,
                 "%s: not a triangulation2d: every face must be a triangle (face %lld has %lld "
                 "vertices)",
                 src, (long long)f, (long long)n);
      }
    for (int64_t i = 0; i < mesh->nv; i++)
      MB_CHECK(mesh->xyz[3 * i + 2] == 0.0, MB_ERR_FORMAT,
               "%s: not a planar %s: every z must be 0 (vertex %lld has z = %.17g)", src,
               mb_kind_name(kind), (long long)i, mesh->xyz[3 * i + 2]);
  }
  mesh->kind = kind;
  return MB_SUCCESS;
}
