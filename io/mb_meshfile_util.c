/* meshbatch: helpers of the mesh file readers (see mb_meshfile_util.h):
 * the mesh builder, the line-aware text cursor, whole-file loading and the
 * file stem. The readers (mb_obj.c, mb_off.c, mb_ply.c, mb_trianglefile.c,
 * mb_npy.c) call these; the dispatcher (mb_meshfile.c) calls the readers.
 * Nothing here calls a reader or the dispatcher. */
#define _POSIX_C_SOURCE 200809L

#include "mb_meshfile_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ------------------------------------------------------------ builder */

mb_error mb_mf_builder_init(mb_mf_builder *b) {
  memset(b, 0, sizeof *b);
  b->offsets = calloc(1, sizeof(int64_t));
  MB_CHECK(b->offsets, MB_ERR_MEMORY, "out of memory starting a mesh");
  return MB_SUCCESS;
}

static void mb_mf_free_extra(mb_mf_builder *b) {
  for (int k = 0; k < b->nextra; k++) free(b->extra[k].data);
  free(b->extra);
  b->extra = NULL;
  b->nextra = 0;
}

mb_error mb_mf_add_extra(mb_mf_builder *b, const char *name, int on_faces, int64_t cap, int *k) {
  mb_mf_extra *x = realloc(b->extra, sizeof *x * (size_t)(b->nextra + 1));
  MB_CHECK(x, MB_ERR_MEMORY, "out of memory");
  b->extra = x;
  x = &b->extra[b->nextra];
  memset(x, 0, sizeof *x);
  snprintf(x->name, sizeof x->name, "%s", name);
  x->on_faces = on_faces;
  x->cap = cap > 0 ? cap : 0;
  x->data = calloc((size_t)(x->cap ? x->cap : 1), sizeof(double));
  MB_CHECK(x->data, MB_ERR_MEMORY, "out of memory for property '%s' (%lld values)", name,
           (long long)cap);
  *k = b->nextra++;
  return MB_SUCCESS;
}

void mb_mf_builder_free(mb_mf_builder *b) {
  mb_mf_free_extra(b);
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
mb_error mb_mf_builder_finish(mb_mf_builder *b, const char *path, mb_mesh **mesh) {
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
  b->xyz = NULL;
  b->offsets = NULL;
  b->indices = NULL;
  if (!m->xyz) m->xyz = calloc(3, sizeof(double));
  if (!m->face_indices) m->face_indices = calloc(1, sizeof(int64_t));
  if (!m->xyz || !m->face_indices) {
    mb_mf_builder_free(b);
    mb_mesh_free(m);
    MB_FAIL(MB_ERR_MEMORY, "out of memory");
  }
  /* the extra scalars whose counts match become fields */
  e = MB_SUCCESS;
  for (int k = 0; k < b->nextra && !e; k++) {
    const mb_mf_extra *x = &b->extra[k];
    if (x->on_faces ? x->n != m->nf : x->n != m->nv) continue;
    e = x->on_faces ? mb_mesh_set_face_field(m, x->name, 1, x->data)
                    : mb_mesh_set_field(m, x->name, 1, x->data);
  }
  mb_mf_builder_free(b);
  if (e) {
    mb_mesh_free(m);
    return e;
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

/* Whether the token at s is a hexadecimal number ("0x1p3", "-0X.8"):
 * strtod reads them, no mesh format defines them. ("inf" and "nan", which
 * strtod also reads, reach the callers as non-finite values: coordinates
 * refuse them by name.) */
static int hex_number(const char *s) {
  if (*s == '+' || *s == '-') s++;
  return s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
}

mb_error mb_mf_number(mb_mf_text *t, const char *what, double *x) {
  mb_mf_skip_blanks(t);
  const char *s = t->p;
  if (!mb_mf_is_delim(t, *s) && !hex_number(s)) {
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

/* ------------------------------------------------------------ files */

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
