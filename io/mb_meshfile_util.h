/* meshbatch: helpers shared by the mesh file readers (mb_obj.c, mb_off.c,
 * mb_ply.c, mb_trianglefile.c, mb_npy.c), defined in mb_meshfile_util.c.
 * Not installed, not public. The readers include this header, never the
 * dispatcher's (mb_meshfile.h): the dispatcher calls the readers, the
 * readers call these helpers, and nothing here calls back.
 *
 * A reader receives the whole file as one NUL-terminated buffer and fills an
 * mb_mf_builder; the text formats walk the buffer with the line-aware
 * mb_mf_text cursor. None of these functions is collective.
 */
#ifndef MB_MESHFILE_UTIL_H
#define MB_MESHFILE_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mb_error.h"
#include "mb_mesh.h"

/* ------------------------------------------------------------ mesh builder */

/* An extra scalar per vertex or per face that a reader keeps (a PLY
 * property such as quality or red): it becomes a field of the mesh. */
typedef struct mb_mf_extra {
  char name[64];
  int on_faces;      /* 0: per vertex, 1: per face */
  double *data;      /* [cap] values in file order (owned) */
  int64_t n, cap;    /* values read, room */
} mb_mf_extra;

/* Growable vertex and CSR face arrays, turned into an mb_mesh at the end. */
typedef struct mb_mf_builder {
  int nextra;
  mb_mf_extra *extra; /* [nextra] fields to keep (owned); mb_mf_builder_finish sets them */
  double *xyz;       /* [cap_v, 3] */
  int64_t nv, cap_v;
  int64_t *offsets;  /* [cap_f + 1], offsets[0] = 0 */
  int64_t nf, cap_f;
  int64_t *indices;  /* [cap_i] */
  int64_t ni, cap_i;
} mb_mf_builder;

/* Start an empty builder. Errors: MB_ERR_MEMORY. */
mb_error mb_mf_builder_init(mb_mf_builder *b);

/* Make room for at least nv more vertices, nf more faces, ni more indices. */
mb_error mb_mf_builder_reserve(mb_mf_builder *b, int64_t nv, int64_t nf, int64_t ni);

/* Free the builder's arrays (safe on a zeroed builder). */
void mb_mf_builder_free(mb_mf_builder *b);

/* Grow one array (slow path of the add functions below). */
mb_error mb_mf_builder_grow(mb_mf_builder *b, int which);

/* Append a vertex. */
static inline mb_error mb_mf_add_vertex(mb_mf_builder *b, double x, double y, double z) {
  if (b->nv == b->cap_v) {
    mb_error e = mb_mf_builder_grow(b, 0);
    if (e) return e;
  }
  double *p = b->xyz + 3 * b->nv++;
  p[0] = x;
  p[1] = y;
  p[2] = z;
  return MB_SUCCESS;
}

/* Append a 0-based vertex index to the face being built. */
static inline mb_error mb_mf_add_index(mb_mf_builder *b, int64_t v) {
  if (b->ni == b->cap_i) {
    mb_error e = mb_mf_builder_grow(b, 2);
    if (e) return e;
  }
  b->indices[b->ni++] = v;
  return MB_SUCCESS;
}

/* Number of indices added since the last mb_mf_end_face. */
static inline int64_t mb_mf_open_face_size(const mb_mf_builder *b) {
  return b->ni - b->offsets[b->nf];
}

/* Close the face made of the indices added since the previous one. */
static inline mb_error mb_mf_end_face(mb_mf_builder *b) {
  if (b->nf == b->cap_f) {
    mb_error e = mb_mf_builder_grow(b, 1);
    if (e) return e;
  }
  b->offsets[++b->nf] = b->ni;
  return MB_SUCCESS;
}

/* Add an extra scalar named name per vertex (on_faces 0) or per face (1),
 * room for cap values; its index in b->extra in *k. Not collective. Errors:
 * MB_ERR_MEMORY. */
mb_error mb_mf_add_extra(mb_mf_builder *b, const char *name, int on_faces, int64_t cap, int *k);

/* Move the builder's arrays into a new mesh named after path's file stem
 * (*mesh, owned by the caller); the builder is left empty. Errors:
 * MB_ERR_MEMORY. */
mb_error mb_mf_builder_finish(mb_mf_builder *b, const char *path, mb_mesh **mesh);

/* ------------------------------------------------------------ text cursor */

/* A position in a NUL-terminated text buffer, with its 1-based line. */
typedef struct mb_mf_text {
  const char *path; /* for messages */
  const char *p;    /* current position */
  const char *end;  /* the terminating NUL */
  int64_t line;     /* line of p */
  char comment;     /* comment character ('#'), or 0 for none */
} mb_mf_text;

/* Start a cursor at data (len bytes followed by a NUL). */
void mb_mf_text_init(mb_mf_text *t, const char *path, const char *data, size_t len, char comment);

/* True for the in-line white space characters (not '\n'). */
static inline int mb_mf_is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* True where a token ends: white space, end of line or text, comment start. */
static inline int mb_mf_is_delim(const mb_mf_text *t, char c) {
  return mb_mf_is_blank(c) || c == '\n' || c == '\0' || (t->comment && c == t->comment);
}

/* Skip in-line white space. */
static inline void mb_mf_skip_blanks(mb_mf_text *t) {
  while (mb_mf_is_blank(*t->p)) t->p++;
}

/* True when nothing but white space or a comment is left on the line. */
static inline int mb_mf_at_eol(mb_mf_text *t) {
  mb_mf_skip_blanks(t);
  char c = *t->p;
  return c == '\n' || c == '\0' || (t->comment && c == t->comment);
}

/* True at the end of the text. */
static inline int mb_mf_at_eof(const mb_mf_text *t) { return t->p >= t->end; }

/* Move to the start of the next line. */
void mb_mf_next_line(mb_mf_text *t);

/* Skip lines holding only white space or comments; false at end of text. */
int mb_mf_skip_empty_lines(mb_mf_text *t);

/* Skip white space and return the next token (length in *len, 0 at eol). */
const char *mb_mf_token(mb_mf_text *t, size_t *len);

/* True if the token (s, len) equals the NUL-terminated word. */
int mb_mf_token_is(const char *s, size_t len, const char *word);

/* Parse an optionally signed decimal integer at *pp (no delimiter check);
 * 0 if there is none or it overflows int64. */
static inline int mb_mf_scan_int(const char **pp, int64_t *v) {
  const char *p = *pp;
  int neg = 0;
  if (*p == '-' || *p == '+') neg = *p++ == '-';
  if (*p < '0' || *p > '9') return 0;
  uint64_t x = 0;
  for (; *p >= '0' && *p <= '9'; p++) {
    if (x > (uint64_t)(INT64_MAX - 9) / 10) return 0;
    x = 10 * x + (uint64_t)(*p - '0');
  }
  *v = neg ? -(int64_t)x : (int64_t)x;
  *pp = p;
  return 1;
}

/* Fail with "path:line: expected WHAT, got 'TOKEN'" for the token at s. */
mb_error mb_mf_bad_token(const mb_mf_text *t, const char *s, const char *what);

/* Read a whole-token integer. Errors: MB_ERR_FORMAT naming the line. */
mb_error mb_mf_int(mb_mf_text *t, const char *what, int64_t *v);

/* Read a whole-token number (any value strtod accepts, NaN included). */
mb_error mb_mf_number(mb_mf_text *t, const char *what, double *x);

/* Read a coordinate: a finite number. Errors: MB_ERR_FORMAT naming the line. */
mb_error mb_mf_coord(mb_mf_text *t, double *x);

/* Read the three coordinates of a vertex and append it. */
mb_error mb_mf_vertex_line(mb_mf_text *t, mb_mf_builder *b);

/* ------------------------------------------------------------ files */

/* Load a whole file read-only into *data (NUL-terminated, *len bytes
 * without the NUL; the caller frees *data). Errors: MB_ERR_IO naming the
 * file, MB_ERR_MEMORY. */
mb_error mb_mf_load(const char *path, char **data, size_t *len);

/* The file stem of path ("dir/bob.obj" -> "bob") into stem[len] (truncated
 * to fit). Also declared in the public mb_meshfile.h, for callers outside
 * the readers. */
void mb_path_stem(const char *path, char *stem, size_t len);

#endif
