/* meshbatch: PLY reader and writer (see mb_meshfile.h).
 *
 * The header is parsed into a list of elements with their properties; the
 * body is then walked element by element, instance by instance, with one
 * value reader for the ascii and both binary encodings. Vertex x, y, z and
 * the face list vertex_indices (or vertex_index) make the mesh; every other
 * scalar property of the vertex and face elements (quality, red green blue,
 * nx ny nz, ...) is kept as a one-component field of that name (per vertex
 * or per face, float64: every PLY type converts exactly). Other lists and
 * other elements are read past, with a warning that names them.
 * The writer writes the mesh's one-component fields back as properties
 * (NAME_0, NAME_1, ... for a field of several components): uchar where
 * every value is an integer in [0, 255] (colours), int where an integer in
 * the int32 range, else double.
 */
#define _POSIX_C_SOURCE 200809L

#include "mb_log.h"
#include "mb_meshfile_private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { MB_PLY_NAME = 64 };

/* Scalar types, in the order of mb_ply_types. */
typedef enum mb_ply_type {
  MB_PLY_INT8, MB_PLY_UINT8, MB_PLY_INT16, MB_PLY_UINT16,
  MB_PLY_INT32, MB_PLY_UINT32, MB_PLY_FLOAT32, MB_PLY_FLOAT64, MB_PLY_NTYPES
} mb_ply_type;

/* Both spellings of each type name, and its size in bytes. */
static const struct {
  const char *name, *alias;
  int size;
} mb_ply_types[MB_PLY_NTYPES] = {
  {"char", "int8", 1},    {"uchar", "uint8", 1},   {"short", "int16", 2},
  {"ushort", "uint16", 2}, {"int", "int32", 4},     {"uint", "uint32", 4},
  {"float", "float32", 4}, {"double", "float64", 8},
};

typedef enum mb_ply_encoding { MB_PLY_ASCII, MB_PLY_LE, MB_PLY_BE } mb_ply_encoding;

typedef struct mb_ply_prop {
  char name[MB_PLY_NAME];
  int is_list;
  mb_ply_type type;       /* value type (list items for a list) */
  mb_ply_type count_type; /* list count type */
} mb_ply_prop;

typedef struct mb_ply_elem {
  char name[MB_PLY_NAME];
  int64_t count;
  int nprops;
  mb_ply_prop *props;
} mb_ply_elem;

/* The reader state: header description and the body cursor. */
typedef struct mb_ply {
  mb_mf_text t;                 /* header, and the body in ascii */
  const unsigned char *p, *end; /* the body in binary */
  mb_ply_encoding enc;
  int nelems;
  mb_ply_elem *elems;
  int vertex_elem, face_elem;   /* element numbers, -1 if absent */
  int xyz[3];                   /* property numbers of x, y, z in the vertex element */
  int face_prop;                /* property number of the face index list */
  int *keep[2];                 /* vertex (0) and face (1) property -> extra index, -1 */
  int64_t nv;                   /* declared vertex count */
  int cur_elem;                 /* position, for messages */
  int64_t cur_inst;
  char loc[4096];
} mb_ply;

static int mb_ply_is_int(mb_ply_type ty) { return ty < MB_PLY_FLOAT32; }

/* "path:line" in ascii, "path" in binary: where a body error happened. */
static const char *mb_ply_where(mb_ply *r) {
  if (r->enc == MB_PLY_ASCII)
    snprintf(r->loc, sizeof r->loc, "%s:%lld", r->t.path, (long long)r->t.line);
  else
    snprintf(r->loc, sizeof r->loc, "%s", r->t.path);
  return r->loc;
}

/* Plural of an element name for messages ("vertex" -> "vertices"). */
static const char *mb_ply_plural(const char *name, char *buf, size_t n) {
  if (!strcmp(name, "vertex")) return "vertices";
  snprintf(buf, n, "'%s' elements", name);
  return buf;
}

/* Fail with "truncated data: expected N things, file ends in thing I". */
static mb_error mb_ply_truncated(mb_ply *r) {
  const mb_ply_elem *e = &r->elems[r->cur_elem];
  char buf[MB_PLY_NAME + 16];
  MB_FAIL(MB_ERR_FORMAT, "%s: truncated %s data: expected %lld %s, file ends in %s %lld",
          r->t.path, r->enc == MB_PLY_ASCII ? "ascii" : "binary", (long long)e->count,
          mb_ply_plural(e->name, buf, sizeof buf), e->name, (long long)r->cur_inst);
}

/* ------------------------------------------------------------ header */

/* Type from its PLY name; MB_PLY_NTYPES if unknown. */
static mb_ply_type mb_ply_type_of(const char *s, size_t n) {
  for (int i = 0; i < MB_PLY_NTYPES; i++)
    if (mb_mf_token_is(s, n, mb_ply_types[i].name) || mb_mf_token_is(s, n, mb_ply_types[i].alias))
      return (mb_ply_type)i;
  return MB_PLY_NTYPES;
}

/* Copy a token into a fixed name buffer (truncating). */
static void mb_ply_copy_name(char *dst, const char *s, size_t n) {
  if (n >= MB_PLY_NAME) n = MB_PLY_NAME - 1;
  memcpy(dst, s, n);
  dst[n] = '\0';
}

/* Read a type token of a property line. */
static mb_error mb_ply_type_token(mb_mf_text *t, mb_ply_type *ty) {
  size_t n;
  const char *s = mb_mf_token(t, &n);
  *ty = mb_ply_type_of(s, n);
  if (*ty == MB_PLY_NTYPES) return mb_mf_bad_token(t, s, "a PLY property type");
  return MB_SUCCESS;
}

/* "format ascii|binary_little_endian|binary_big_endian 1.0" */
static mb_error mb_ply_format_line(mb_ply *r) {
  size_t n;
  const char *s = mb_mf_token(&r->t, &n);
  if (mb_mf_token_is(s, n, "ascii")) r->enc = MB_PLY_ASCII;
  else if (mb_mf_token_is(s, n, "binary_little_endian")) r->enc = MB_PLY_LE;
  else if (mb_mf_token_is(s, n, "binary_big_endian")) r->enc = MB_PLY_BE;
  else
    return mb_mf_bad_token(&r->t, s,
                           "a PLY format (ascii, binary_little_endian, binary_big_endian)");
  return MB_SUCCESS;
}

/* "element NAME COUNT" */
static mb_error mb_ply_element_line(mb_ply *r) {
  mb_ply_elem *e = realloc(r->elems, sizeof *e * (size_t)(r->nelems + 1));
  MB_CHECK(e, MB_ERR_MEMORY, "out of memory");
  r->elems = e;
  e = &r->elems[r->nelems++];
  memset(e, 0, sizeof *e);
  size_t n;
  const char *s = mb_mf_token(&r->t, &n);
  if (n == 0) return mb_mf_bad_token(&r->t, s, "an element name");
  mb_ply_copy_name(e->name, s, n);
  MB_CALL(mb_mf_int(&r->t, "an element count", &e->count));
  MB_CHECK(e->count >= 0, MB_ERR_FORMAT, "%s:%lld: negative element count", r->t.path,
           (long long)r->t.line);
  return MB_SUCCESS;
}

/* "property TYPE NAME" or "property list CTYPE TYPE NAME" */
static mb_error mb_ply_property_line(mb_ply *r) {
  mb_mf_text *t = &r->t;
  MB_CHECK(r->nelems > 0, MB_ERR_FORMAT, "%s:%lld: property before any element", t->path,
           (long long)t->line);
  mb_ply_elem *e = &r->elems[r->nelems - 1];
  mb_ply_prop *p = realloc(e->props, sizeof *p * (size_t)(e->nprops + 1));
  MB_CHECK(p, MB_ERR_MEMORY, "out of memory");
  e->props = p;
  p = &e->props[e->nprops++];
  memset(p, 0, sizeof *p);
  const char *save = t->p;
  size_t n;
  const char *s = mb_mf_token(t, &n);
  p->is_list = mb_mf_token_is(s, n, "list");
  if (!p->is_list) t->p = save;
  if (p->is_list) {
    MB_CALL(mb_ply_type_token(t, &p->count_type));
    MB_CHECK(mb_ply_is_int(p->count_type), MB_ERR_FORMAT,
             "%s:%lld: list count type must be an integer type", t->path, (long long)t->line);
  }
  MB_CALL(mb_ply_type_token(t, &p->type));
  s = mb_mf_token(t, &n);
  if (n == 0) return mb_mf_bad_token(t, s, "a property name");
  mb_ply_copy_name(p->name, s, n);
  return MB_SUCCESS;
}

/* Parse the header lines up to end_header; the body starts at r->t.p. */
static mb_error mb_ply_header(mb_ply *r) {
  mb_mf_text *t = &r->t;
  size_t n;
  const char *s = mb_mf_token(t, &n);
  MB_CHECK(mb_mf_token_is(s, n, "ply") && mb_mf_at_eol(t), MB_ERR_FORMAT,
           "%s:1: not a PLY file (no 'ply' magic line)", t->path);
  int have_format = 0;
  for (mb_mf_next_line(t); !mb_mf_at_eof(t); mb_mf_next_line(t)) {
    s = mb_mf_token(t, &n);
    if (mb_mf_token_is(s, n, "end_header")) {
      MB_CHECK(have_format, MB_ERR_FORMAT, "%s: PLY header has no format line", t->path);
      mb_mf_next_line(t);
      return MB_SUCCESS;
    } else if (mb_mf_token_is(s, n, "format")) {
      MB_CALL(mb_ply_format_line(r));
      have_format = 1;
    } else if (mb_mf_token_is(s, n, "element")) {
      MB_CALL(mb_ply_element_line(r));
    } else if (mb_mf_token_is(s, n, "property")) {
      MB_CALL(mb_ply_property_line(r));
    } else if (n > 0 && !mb_mf_token_is(s, n, "comment") && !mb_mf_token_is(s, n, "obj_info")) {
      return mb_mf_bad_token(t, s, "a PLY header keyword");
    }
  }
  MB_FAIL(MB_ERR_FORMAT, "%s: PLY header has no end_header line", t->path);
}

/* Property number of name in e, or -1. */
static int mb_ply_find_prop(const mb_ply_elem *e, const char *name) {
  for (int i = 0; i < e->nprops; i++)
    if (!strcmp(e->props[i].name, name)) return i;
  return -1;
}

/* Locate the vertex and face elements and the properties that are kept. */
static mb_error mb_ply_locate(mb_ply *r) {
  const char *path = r->t.path;
  r->vertex_elem = r->face_elem = -1;
  for (int i = 0; i < r->nelems; i++) {
    const char *name = r->elems[i].name;
    int *slot = !strcmp(name, "vertex") ? &r->vertex_elem
                : !strcmp(name, "face") ? &r->face_elem : NULL;
    if (!slot) continue;
    MB_CHECK(*slot < 0, MB_ERR_FORMAT, "%s: PLY header has two '%s' elements", path, name);
    *slot = i;
  }
  MB_CHECK(r->vertex_elem >= 0, MB_ERR_FORMAT, "%s: empty mesh (no vertex element)", path);
  const mb_ply_elem *v = &r->elems[r->vertex_elem];
  r->nv = v->count;
  for (int d = 0; d < 3; d++) {
    const char *xyz[3] = {"x", "y", "z"};
    r->xyz[d] = mb_ply_find_prop(v, xyz[d]);
    MB_CHECK(r->xyz[d] >= 0, MB_ERR_FORMAT, "%s: vertex element has no property '%s'", path,
             xyz[d]);
    MB_CHECK(!v->props[r->xyz[d]].is_list, MB_ERR_FORMAT,
             "%s: vertex property '%s' must not be a list", path, xyz[d]);
  }
  r->face_prop = -1;
  if (r->face_elem < 0) return MB_SUCCESS;
  const mb_ply_elem *f = &r->elems[r->face_elem];
  r->face_prop = mb_ply_find_prop(f, "vertex_indices");
  if (r->face_prop < 0) r->face_prop = mb_ply_find_prop(f, "vertex_index");
  MB_CHECK(r->face_prop >= 0 && f->props[r->face_prop].is_list, MB_ERR_FORMAT,
           "%s: face element has no list property vertex_indices (or vertex_index)", path);
  MB_CHECK(mb_ply_is_int(f->props[r->face_prop].type), MB_ERR_FORMAT,
           "%s: face vertex indices must have an integer type", path);
  return MB_SUCCESS;
}

/* Bytes left in the body. */
static int64_t mb_ply_left(const mb_ply *r);

/* The scalar properties kept as fields: every non-list property of the
 * vertex element but x, y, z and every non-list one of the face element;
 * warnings name what is read past (other lists, other elements). */
static mb_error mb_ply_keep(mb_ply *r, mb_mf_builder *b) {
  for (int w = 0; w < 2; w++) {
    const int ei = w ? r->face_elem : r->vertex_elem;
    if (ei < 0) continue;
    const mb_ply_elem *e = &r->elems[ei];
    r->keep[w] = malloc(sizeof(int) * (size_t)(e->nprops ? e->nprops : 1));
    MB_CHECK(r->keep[w], MB_ERR_MEMORY, "out of memory");
    /* no more instances than bytes left: a false count allocates nothing big */
    const int64_t cap = e->count < mb_ply_left(r) ? e->count : mb_ply_left(r);
    for (int pi = 0; pi < e->nprops; pi++) {
      const mb_ply_prop *p = &e->props[pi];
      r->keep[w][pi] = -1;
      if (!w && (pi == r->xyz[0] || pi == r->xyz[1] || pi == r->xyz[2])) continue;
      if (w && pi == r->face_prop) continue;
      if (p->is_list) {
        mb_log_warning("%s: PLY list property '%s' of the %s element is not kept", r->t.path,
                       p->name, e->name);
        continue;
      }
      MB_CALL(mb_mf_add_extra(b, p->name, w, cap, &r->keep[w][pi]));
    }
  }
  for (int i = 0; i < r->nelems; i++)
    if (i != r->vertex_elem && i != r->face_elem && r->elems[i].count > 0)
      mb_log_warning("%s: PLY element '%s' (%lld) is not kept", r->t.path, r->elems[i].name,
                     (long long)r->elems[i].count);
  return MB_SUCCESS;
}

/* ------------------------------------------------------------ body values */

/* One binary value of type ty at p, in the file's byte order. */
static void mb_ply_load(const unsigned char *p, mb_ply_type ty, int big, double *d, int64_t *i) {
  int size = mb_ply_types[ty].size;
  uint64_t u = 0;
  for (int k = 0; k < size; k++) u = u << 8 | p[big ? k : size - 1 - k];
  switch (ty) {
  case MB_PLY_INT8: *i = (int8_t)(uint8_t)u; break;
  case MB_PLY_UINT8: *i = (uint8_t)u; break;
  case MB_PLY_INT16: *i = (int16_t)(uint16_t)u; break;
  case MB_PLY_UINT16: *i = (uint16_t)u; break;
  case MB_PLY_INT32: *i = (int32_t)(uint32_t)u; break;
  case MB_PLY_UINT32: *i = (uint32_t)u; break;
  case MB_PLY_FLOAT32: {
    uint32_t w = (uint32_t)u;
    float f;
    memcpy(&f, &w, sizeof f);
    *d = f;
    return;
  }
  default: memcpy(d, &u, sizeof *d); return;
  }
  *d = (double)*i;
}

/* Read one value of type ty: *d always, *i for integer types. */
static mb_error mb_ply_value(mb_ply *r, mb_ply_type ty, double *d, int64_t *i) {
  if (r->enc == MB_PLY_ASCII) {
    if (mb_ply_is_int(ty)) {
      MB_CALL(mb_mf_int(&r->t, "an integer", i));
      *d = (double)*i;
    } else {
      MB_CALL(mb_mf_number(&r->t, "a number", d));
    }
    return MB_SUCCESS;
  }
  int size = mb_ply_types[ty].size;
  if (r->end - r->p < size) return mb_ply_truncated(r);
  mb_ply_load(r->p, ty, r->enc == MB_PLY_BE, d, i);
  r->p += size;
  return MB_SUCCESS;
}

/* Read past n list items of type ty. */
static mb_error mb_ply_skip_items(mb_ply *r, mb_ply_type ty, int64_t n) {
  if (r->enc != MB_PLY_ASCII) {
    int size = mb_ply_types[ty].size;
    if ((r->end - r->p) / size < n) return mb_ply_truncated(r);
    r->p += n * size;
    return MB_SUCCESS;
  }
  double d;
  int64_t i;
  for (int64_t k = 0; k < n; k++) MB_CALL(mb_ply_value(r, ty, &d, &i));
  return MB_SUCCESS;
}

/* Read the face index list of the current face into the builder. */
static mb_error mb_ply_face_items(mb_ply *r, mb_ply_type ty, int64_t n, mb_mf_builder *b) {
  MB_CHECK(n >= 3, MB_ERR_FORMAT, "%s: face %lld has %lld vertices (need at least 3)",
           mb_ply_where(r), (long long)r->cur_inst, (long long)n);
  if (r->enc != MB_PLY_ASCII && (r->end - r->p) / mb_ply_types[ty].size < n)
    return mb_ply_truncated(r);
  for (int64_t k = 0; k < n; k++) {
    double d;
    int64_t v;
    MB_CALL(mb_ply_value(r, ty, &d, &v));
    MB_CHECK(v >= 0 && v < r->nv, MB_ERR_FORMAT,
             "%s: face %lld: vertex index %lld out of range [0, %lld]", mb_ply_where(r),
             (long long)r->cur_inst, (long long)v, (long long)r->nv - 1);
    MB_CALL(mb_mf_add_index(b, v));
  }
  MB_CALL(mb_mf_end_face(b));
  return MB_SUCCESS;
}

/* Read one instance of element ei; vertices and faces go to the builder. */
static mb_error mb_ply_instance(mb_ply *r, int ei, mb_mf_builder *b) {
  const mb_ply_elem *e = &r->elems[ei];
  int is_vertex = ei == r->vertex_elem, is_face = ei == r->face_elem;
  double xyz[3] = {0, 0, 0};
  for (int pi = 0; pi < e->nprops; pi++) {
    const mb_ply_prop *p = &e->props[pi];
    double d;
    int64_t n;
    if (!p->is_list) {
      MB_CALL(mb_ply_value(r, p->type, &d, &n));
      for (int k = 0; is_vertex && k < 3; k++)
        if (pi == r->xyz[k]) xyz[k] = d;
      const int x = is_vertex && r->keep[0] ? r->keep[0][pi] : is_face && r->keep[1] ? r->keep[1][pi] : -1;
      if (x >= 0) {
        mb_mf_extra *ex = &b->extra[x];
        MB_CHECK(r->cur_inst < ex->cap, MB_ERR_FORMAT, "%s: more %s than the file holds",
                 mb_ply_where(r), e->name);
        ex->data[r->cur_inst] = d;
        ex->n = r->cur_inst + 1;
      }
      continue;
    }
    MB_CALL(mb_ply_value(r, p->count_type, &d, &n));
    MB_CHECK(n >= 0, MB_ERR_FORMAT, "%s: %s %lld: negative list length %lld", mb_ply_where(r),
             e->name, (long long)r->cur_inst, (long long)n);
    if (is_face && pi == r->face_prop) MB_CALL(mb_ply_face_items(r, p->type, n, b));
    else MB_CALL(mb_ply_skip_items(r, p->type, n));
  }
  if (is_vertex) {
    MB_CHECK(isfinite(xyz[0]) && isfinite(xyz[1]) && isfinite(xyz[2]), MB_ERR_FORMAT,
             "%s: vertex %lld has a non-finite coordinate", mb_ply_where(r),
             (long long)r->cur_inst);
    MB_CALL(mb_mf_add_vertex(b, xyz[0], xyz[1], xyz[2]));
  }
  return MB_SUCCESS;
}

/* Bytes left in the body. */
static int64_t mb_ply_left(const mb_ply *r) {
  return r->enc == MB_PLY_ASCII ? (int64_t)(r->t.end - r->t.p) : (int64_t)(r->end - r->p);
}

/* Read every instance of every element, in file order. */
static mb_error mb_ply_body(mb_ply *r, mb_mf_builder *b) {
  for (r->cur_elem = 0; r->cur_elem < r->nelems; r->cur_elem++) {
    const mb_ply_elem *e = &r->elems[r->cur_elem];
    if (e->nprops == 0) continue; /* its instances hold no bytes and no tokens: nothing to read */
    int64_t cap = e->count < mb_ply_left(r) ? e->count : mb_ply_left(r);
    if (r->cur_elem == r->vertex_elem) MB_CALL(mb_mf_builder_reserve(b, cap, 0, 0));
    if (r->cur_elem == r->face_elem) MB_CALL(mb_mf_builder_reserve(b, 0, cap, 3 * cap));
    for (r->cur_inst = 0; r->cur_inst < e->count; r->cur_inst++) {
      if (r->enc == MB_PLY_ASCII && !mb_mf_skip_empty_lines(&r->t)) return mb_ply_truncated(r);
      MB_CALL(mb_ply_instance(r, r->cur_elem, b));
      if (r->enc == MB_PLY_ASCII) mb_mf_next_line(&r->t);
    }
  }
  return MB_SUCCESS;
}

mb_error mb_ply_read(const char *path, const char *data, size_t len, mb_mf_builder *b) {
  mb_ply *r = calloc(1, sizeof *r);
  MB_CHECK(r, MB_ERR_MEMORY, "out of memory");
  mb_mf_text_init(&r->t, path, data, len, 0);
  mb_error e = mb_ply_header(r);
  if (!e) e = mb_ply_locate(r);
  if (!e) {
    r->p = (const unsigned char *)r->t.p;
    r->end = (const unsigned char *)r->t.end;
    e = mb_ply_keep(r, b);
  }
  if (!e) {
    r->p = (const unsigned char *)r->t.p;
    r->end = (const unsigned char *)r->t.end;
    e = mb_ply_body(r, b);
  }
  if (e) mb_error_trace(__FILE__, __LINE__, __func__);
  for (int i = 0; i < r->nelems; i++) free(r->elems[i].props);
  free(r->elems);
  free(r->keep[0]);
  free(r->keep[1]);
  free(r);
  return e;
}

/* ------------------------------------------------------------ writer */

/* Store v in 4 or 8 little-endian bytes. */
static void mb_ply_put_le(unsigned char *p, uint64_t v, int size) {
  for (int k = 0; k < size; k++) p[k] = (unsigned char)(v >> (8 * k));
}

/* Write the face list of face k as count (1 or 4 bytes) and int32 indices. */
static void mb_ply_write_face(FILE *f, const mb_mesh *m, int64_t k, int count_size) {
  unsigned char buf[8];
  int64_t a = m->face_offsets[k], e = m->face_offsets[k + 1];
  mb_ply_put_le(buf, (uint64_t)(e - a), count_size);
  fwrite(buf, 1, (size_t)count_size, f);
  for (int64_t j = a; j < e; j++) {
    mb_ply_put_le(buf, (uint64_t)m->face_indices[j], 4);
    fwrite(buf, 1, 4, f);
  }
}

/* A field's component written as a property: its values, its PLY type. */
typedef struct mb_ply_out {
  const mb_field *fd;
  int comp;
  mb_ply_type type; /* MB_PLY_UINT8, MB_PLY_INT32 or MB_PLY_FLOAT64 */
  char name[MB_PLY_NAME + 16];
} mb_ply_out;

static double mb_ply_field_value(const mb_field *fd, int64_t i, int comp) {
  const int64_t k = i * fd->ncomp + comp;
  return fd->dtype == MB_FLOAT32 ? (double)fd->data32[k] : fd->data[k];
}

/* The properties of n fields over count instances: one per component,
 * the narrowest type that holds every value exactly. *out owned by the
 * caller (free). */
static mb_error mb_ply_outs(const mb_field *fields, int n, int64_t count, mb_ply_out **out,
                            int *nout) {
  int total = 0;
  for (int f = 0; f < n; f++) total += fields[f].ncomp;
  *out = calloc((size_t)(total ? total : 1), sizeof **out);
  MB_CHECK(*out, MB_ERR_MEMORY, "out of memory");
  *nout = 0;
  for (int f = 0; f < n; f++)
    for (int c = 0; c < fields[f].ncomp; c++) {
      mb_ply_out *o = &(*out)[(*nout)++];
      o->fd = &fields[f];
      o->comp = c;
      if (fields[f].ncomp == 1) snprintf(o->name, sizeof o->name, "%.63s", fields[f].name);
      else snprintf(o->name, sizeof o->name, "%.63s_%d", fields[f].name, c);
      for (char *q = o->name; *q; q++) /* a PLY name is one token */
        if (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r') *q = '_';
      int u8 = 1, i32 = 1;
      for (int64_t i = 0; i < count && (u8 || i32); i++) {
        const double v = mb_ply_field_value(&fields[f], i, c);
        const int whole = v == floor(v) && !(v == 0 && signbit(v));
        u8 = u8 && whole && v >= 0 && v <= 255;
        i32 = i32 && whole && v >= INT32_MIN && v <= INT32_MAX;
      }
      o->type = u8 ? MB_PLY_UINT8 : i32 ? MB_PLY_INT32 : MB_PLY_FLOAT64;
    }
  return MB_SUCCESS;
}

static void mb_ply_header_props(FILE *f, const mb_ply_out *o, int n) {
  for (int k = 0; k < n; k++)
    fprintf(f, "property %s %s\n", mb_ply_types[o[k].type].name, o[k].name);
}

/* Instance i's values of the properties o[0..n). */
static void mb_ply_write_props(FILE *f, const mb_ply_out *o, int n, int64_t i) {
  for (int k = 0; k < n; k++) {
    unsigned char buf[8];
    const double v = mb_ply_field_value(o[k].fd, i, o[k].comp);
    if (o[k].type == MB_PLY_UINT8) {
      buf[0] = (unsigned char)v;
      fwrite(buf, 1, 1, f);
    } else if (o[k].type == MB_PLY_INT32) {
      mb_ply_put_le(buf, (uint64_t)(uint32_t)(int32_t)v, 4);
      fwrite(buf, 1, 4, f);
    } else {
      uint64_t u;
      memcpy(&u, &v, sizeof u);
      mb_ply_put_le(buf, u, 8);
      fwrite(buf, 1, 8, f);
    }
  }
}

mb_error mb_ply_write(FILE *f, const char *path, const mb_mesh *m) {
  MB_CHECK(m->nv <= INT32_MAX, MB_ERR_ARG,
           "%s: cannot write %lld vertices to PLY (int vertex indices)", path, (long long)m->nv);
  int64_t maxdeg = 0;
  for (int64_t k = 0; k < m->nf; k++)
    if (m->face_offsets[k + 1] - m->face_offsets[k] > maxdeg)
      maxdeg = m->face_offsets[k + 1] - m->face_offsets[k];
  MB_CHECK(maxdeg <= UINT32_MAX, MB_ERR_ARG, "%s: face too large for PLY", path);
  int count_size = maxdeg > 255 ? 4 : 1;
  mb_ply_out *vo = NULL, *fo = NULL;
  int nvo = 0, nfo = 0;
  mb_error e = mb_ply_outs(m->fields, m->nfields, m->nv, &vo, &nvo);
  if (!e) e = mb_ply_outs(m->face_fields, m->nface_fields, m->nf, &fo, &nfo);
  if (e) {
    free(vo);
    return e;
  }
  fprintf(f,
          "ply\nformat binary_little_endian 1.0\ncomment written by meshbatch\n"
          "element vertex %lld\nproperty double x\nproperty double y\nproperty double z\n",
          (long long)m->nv);
  mb_ply_header_props(f, vo, nvo);
  fprintf(f, "element face %lld\nproperty list %s int vertex_indices\n", (long long)m->nf,
          count_size == 1 ? "uchar" : "uint");
  mb_ply_header_props(f, fo, nfo);
  fprintf(f, "end_header\n");
  for (int64_t v = 0; v < m->nv; v++) {
    for (int d = 0; d < 3; d++) {
      unsigned char buf[8];
      uint64_t u;
      memcpy(&u, &m->xyz[3 * v + d], sizeof u);
      mb_ply_put_le(buf, u, 8);
      fwrite(buf, 1, 8, f);
    }
    mb_ply_write_props(f, vo, nvo, v);
  }
  for (int64_t k = 0; k < m->nf; k++) {
    mb_ply_write_face(f, m, k, count_size);
    mb_ply_write_props(f, fo, nfo, k);
  }
  free(vo);
  free(fo);
  return MB_SUCCESS;
}
