/* meshbatch: Triangle's .node / .ele / .neigh reader and writer (see
 * mb_trianglefile.h; file format by J. R. Shewchuk's Triangle). */
#define _POSIX_C_SOURCE 200809L

#include "mb_trianglefile.h"
#include "mb_meshfile_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------ names */

/* 1 if path ends with ext (".node"), ignoring case. */
static int tf_has_ext(const char *path, const char *ext) {
  size_t n = strlen(path), k = strlen(ext);
  if (n <= k) return 0;
  for (size_t i = 0; i < k; i++) {
    char c = path[n - k + i];
    if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
    if (c != ext[i]) return 0;
  }
  return 1;
}

/* Newly allocated stem + ext. */
static char *tf_join(const char *stem, size_t n, const char *ext) {
  char *s = malloc(n + strlen(ext) + 1);
  if (s) {
    memcpy(s, stem, n);
    strcpy(s + n, ext);
  }
  return s;
}

/* ------------------------------------------------------------ parsing */

/* Fail unless only white space or a comment is left on the line. */
static mb_error tf_eol(mb_mf_text *t, const char *what) {
  if (mb_mf_at_eol(t)) return MB_SUCCESS;
  size_t n;
  const char *s = mb_mf_token(t, &n);
  MB_FAIL(MB_ERR_FORMAT, "%s:%lld: unexpected '%.*s' after %s", t->path, (long long)t->line,
          (int)(n < 40 ? n : 40), s, what);
}

/* Read an optional header integer (def where the line has ended). */
static mb_error tf_opt_int(mb_mf_text *t, const char *what, int64_t def, int64_t *v) {
  if (mb_mf_at_eol(t)) {
    *v = def;
    return MB_SUCCESS;
  }
  MB_CALL(mb_mf_int(t, what, v));
  return MB_SUCCESS;
}

/* Go to the first non-empty line (the header); fail on an empty file. */
static mb_error tf_first_line(mb_mf_text *t) {
  MB_CHECK(mb_mf_skip_empty_lines(t), MB_ERR_FORMAT, "%s:%lld: empty file (no header line)",
           t->path, (long long)t->line);
  return MB_SUCCESS;
}

/* Go to the next data line of `n` announced `what`s, having read i. */
static mb_error tf_data_line(mb_mf_text *t, int64_t i, int64_t n, const char *what) {
  MB_CHECK(mb_mf_skip_empty_lines(t), MB_ERR_FORMAT, "%s:%lld: file ends after %lld of %lld %s",
           t->path, (long long)t->line, (long long)i, (long long)n, what);
  return MB_SUCCESS;
}

/* After the last data line: nothing but comments and blank lines. */
static mb_error tf_no_more(mb_mf_text *t, int64_t n, const char *what) {
  MB_CHECK(!mb_mf_skip_empty_lines(t), MB_ERR_FORMAT,
           "%s:%lld: more %s lines than the %lld announced in the header", t->path,
           (long long)t->line, what, (long long)n);
  return MB_SUCCESS;
}

/* Read a line's leading number, which must be first + i. */
static mb_error tf_number(mb_mf_text *t, const char *what, int64_t first, int64_t i) {
  int64_t k;
  char w[64];
  snprintf(w, sizeof w, "a %s number", what);
  MB_CALL(mb_mf_int(t, w, &k));
  MB_CHECK(k == first + i, MB_ERR_FORMAT,
           "%s:%lld: %s number %lld out of sequence (expected %lld: %ss must be numbered "
           "consecutively from %lld)",
           t->path, (long long)t->line, what, (long long)k, (long long)(first + i), what,
           (long long)first);
  return MB_SUCCESS;
}

/* Largest number of data lines a buffer of len bytes can hold (each is at
 * least 2 bytes: a token and a newline), to bound allocations by header
 * counts that the file cannot back. */
static int64_t tf_cap(int64_t n, size_t len) {
  int64_t most = (int64_t)(len / 2) + 1;
  return n < most ? n : most;
}

/* The parsed .node file. */
typedef struct tf_nodes {
  int64_t nv, base, nattr, nmark;
  double *xyz;    /* [nv, 3] */
  double *attr;   /* [nv, nattr] or NULL */
  double *marker; /* [nv] or NULL */
} tf_nodes;

static void tf_nodes_free(tf_nodes *n) {
  free(n->xyz);
  free(n->attr);
  free(n->marker);
}

static mb_error tf_read_node(const char *path, const char *data, size_t len, tf_nodes *nd) {
  mb_mf_text t;
  mb_mf_text_init(&t, path, data, len, '#');
  MB_CALL(tf_first_line(&t));
  int64_t nv, dim, nattr, nmark;
  MB_CALL(mb_mf_int(&t, "the vertex count", &nv));
  MB_CALL(tf_opt_int(&t, "the dimension", 2, &dim));
  MB_CALL(tf_opt_int(&t, "the number of attributes", 0, &nattr));
  MB_CALL(tf_opt_int(&t, "the number of boundary markers", 1, &nmark));
  MB_CALL(tf_eol(&t, "the header (vertices, dimension, attributes, markers)"));
  MB_CHECK(nv > 0, MB_ERR_FORMAT,
           "%s:%lld: the header announces %lld vertices (need at least 1; vertices kept in a "
           ".poly file are not read)",
           path, (long long)t.line, (long long)nv);
  MB_CHECK(dim == 2, MB_ERR_FORMAT,
           "%s:%lld: dimension %lld is not supported (only 2D .node files are read)", path,
           (long long)t.line, (long long)dim);
  MB_CHECK(nattr >= 0 && nattr <= 1000000, MB_ERR_FORMAT,
           "%s:%lld: bad number of attributes %lld", path, (long long)t.line, (long long)nattr);
  MB_CHECK(nmark == 0 || nmark == 1, MB_ERR_FORMAT,
           "%s:%lld: the number of boundary markers must be 0 or 1, got %lld", path,
           (long long)t.line, (long long)nmark);
  mb_mf_next_line(&t);
  int64_t cap = tf_cap(nv, len);
  memset(nd, 0, sizeof *nd);
  nd->nv = nv;
  nd->nattr = nattr;
  nd->nmark = nmark;
  MB_CALLOC(nd->xyz, 3 * cap);
  if (nattr) MB_CALLOC(nd->attr, nattr * cap);
  if (nmark) MB_CALLOC(nd->marker, cap);
  for (int64_t i = 0; i < nv; i++, mb_mf_next_line(&t)) {
    MB_CALL(tf_data_line(&t, i, nv, "vertices"));
    MB_CHECK(i < cap, MB_ERR_FORMAT, "%s:%lld: more vertices than the file can hold", path,
             (long long)t.line);
    if (i == 0) {
      int64_t k;
      MB_CALL(mb_mf_int(&t, "a vertex number", &k));
      MB_CHECK(k == 0 || k == 1, MB_ERR_FORMAT,
               "%s:%lld: the first vertex is numbered %lld (must be 0 or 1)", path,
               (long long)t.line, (long long)k);
      nd->base = k;
    } else {
      MB_CALL(tf_number(&t, "vertex", nd->base, i));
    }
    MB_CALL(mb_mf_coord(&t, &nd->xyz[3 * i]));
    MB_CALL(mb_mf_coord(&t, &nd->xyz[3 * i + 1]));
    for (int64_t a = 0; a < nattr; a++)
      MB_CALL(mb_mf_number(&t, "a vertex attribute", &nd->attr[nattr * i + a]));
    if (nmark) {
      int64_t m;
      MB_CALL(mb_mf_int(&t, "a boundary marker", &m));
      nd->marker[i] = (double)m;
    }
    MB_CALL(tf_eol(&t, nmark ? "the boundary marker"
                       : nattr ? "the vertex attributes"
                               : "the coordinates (the header announces no attributes and no "
                                 "markers)"));
  }
  MB_CALL(tf_no_more(&t, nv, "vertex"));
  return MB_SUCCESS;
}

/* The parsed .ele file. */
typedef struct tf_tris {
  int64_t nt, nattr;
  int64_t *tri;  /* [nt, 3], 0-based */
  double *attr;  /* [nt, nattr] or NULL */
} tf_tris;

static void tf_tris_free(tf_tris *e) {
  free(e->tri);
  free(e->attr);
}

static mb_error tf_read_ele(const char *path, const char *data, size_t len, const tf_nodes *nd,
                            tf_tris *el) {
  mb_mf_text t;
  mb_mf_text_init(&t, path, data, len, '#');
  MB_CALL(tf_first_line(&t));
  int64_t nt, npt, nattr;
  MB_CALL(mb_mf_int(&t, "the triangle count", &nt));
  MB_CALL(tf_opt_int(&t, "the number of nodes per triangle", 3, &npt));
  MB_CALL(tf_opt_int(&t, "the number of attributes", 0, &nattr));
  MB_CALL(tf_eol(&t, "the header (triangles, nodes per triangle, attributes)"));
  MB_CHECK(nt > 0, MB_ERR_FORMAT, "%s:%lld: the header announces %lld triangles (need at least 1)",
           path, (long long)t.line, (long long)nt);
  MB_CHECK(npt == 3 || npt == 6, MB_ERR_FORMAT,
           "%s:%lld: %lld nodes per triangle (must be 3, or 6 for quadratic triangles)", path,
           (long long)t.line, (long long)npt);
  MB_CHECK(nattr >= 0 && nattr <= 1000000, MB_ERR_FORMAT,
           "%s:%lld: bad number of attributes %lld", path, (long long)t.line, (long long)nattr);
  mb_mf_next_line(&t);
  int64_t cap = tf_cap(nt, len), lo = nd->base, hi = nd->base + nd->nv - 1;
  memset(el, 0, sizeof *el);
  el->nt = nt;
  el->nattr = nattr;
  MB_CALLOC(el->tri, 3 * cap);
  if (nattr) MB_CALLOC(el->attr, nattr * cap);
  for (int64_t f = 0; f < nt; f++, mb_mf_next_line(&t)) {
    MB_CALL(tf_data_line(&t, f, nt, "triangles"));
    MB_CHECK(f < cap, MB_ERR_FORMAT, "%s:%lld: more triangles than the file can hold", path,
             (long long)t.line);
    MB_CALL(tf_number(&t, "triangle", nd->base, f));
    for (int64_t k = 0; k < npt; k++) {
      int64_t v;
      MB_CALL(mb_mf_int(&t, "a vertex index", &v));
      MB_CHECK(v >= lo && v <= hi, MB_ERR_FORMAT,
               "%s:%lld: vertex index %lld out of range [%lld, %lld]", path, (long long)t.line,
               (long long)v, (long long)lo, (long long)hi);
      if (k < 3) el->tri[3 * f + k] = v - nd->base;
    }
    for (int64_t a = 0; a < nattr; a++)
      MB_CALL(mb_mf_number(&t, "a triangle attribute", &el->attr[nattr * f + a]));
    MB_CALL(tf_eol(&t, nattr ? "the triangle attributes"
                             : "the vertex indices (the header announces no attributes)"));
  }
  MB_CALL(tf_no_more(&t, nt, "triangle"));
  return MB_SUCCESS;
}

/* ------------------------------------------------------------ neighbours */

typedef struct tf_edge {
  int64_t hi;   /* larger end */
  int64_t slot; /* 3 t + i: the edge opposite corner i of triangle t */
} tf_edge;

static int tf_edge_cmp(const void *a, const void *b) {
  const tf_edge *x = a, *y = b;
  if (x->hi != y->hi) return x->hi < y->hi ? -1 : 1;
  return (x->slot > y->slot) - (x->slot < y->slot);
}

/* nb[3 t + i]: a triangle other than t having the edge opposite corner i of
 * t (the next one in slot order among those sharing it), or -1 where none.
 * Counting sort of the edges by their smaller end, then by the larger. */
static mb_error tf_neighbors(int64_t nv, int64_t nt, const int64_t *tri, int64_t *nb) {
  int64_t *start = calloc((size_t)nv + 2, sizeof *start);
  tf_edge *e = malloc(sizeof *e * (size_t)(3 * nt));
  if (!start || !e) {
    free(start);
    free(e);
    MB_FAIL(MB_ERR_MEMORY, "out of memory finding the neighbours of %lld triangles",
            (long long)nt);
  }
  for (int64_t s = 0; s < 3 * nt; s++) {
    int64_t t = s / 3, i = s % 3, a = tri[3 * t + (i + 1) % 3], b = tri[3 * t + (i + 2) % 3];
    start[(a < b ? a : b) + 2]++;
  }
  for (int64_t v = 0; v < nv; v++) start[v + 2] += start[v + 1];
  for (int64_t s = 0; s < 3 * nt; s++) {
    int64_t t = s / 3, i = s % 3, a = tri[3 * t + (i + 1) % 3], b = tri[3 * t + (i + 2) % 3];
    tf_edge *x = &e[start[(a < b ? a : b) + 1]++];
    x->hi = a < b ? b : a;
    x->slot = s;
  }
  for (int64_t v = 0; v < nv; v++) {
    tf_edge *row = e + start[v];
    int64_t n = start[v + 1] - start[v];
    if (n > 1) qsort(row, (size_t)n, sizeof *row, tf_edge_cmp);
    for (int64_t k = 0; k < n;) {
      int64_t j = k;
      while (j < n && row[j].hi == row[k].hi) j++;
      for (int64_t q = k; q < j; q++)
        nb[row[q].slot] = j - k == 1 ? -1 : row[q + 1 < j ? q + 1 : k].slot / 3;
      k = j;
    }
  }
  free(start);
  free(e);
  return MB_SUCCESS;
}

/* 1 if triangle f has vertex v. */
static int tf_has_vertex(const int64_t *tri, int64_t f, int64_t v) {
  return tri[3 * f] == v || tri[3 * f + 1] == v || tri[3 * f + 2] == v;
}

/* Parse a .neigh file and check it against the triangles (see the header). */
static mb_error tf_check_neigh(const char *path, const char *data, size_t len, int64_t base,
                               int64_t nv, const tf_tris *el, const char *ele_path) {
  mb_mf_text t;
  mb_mf_text_init(&t, path, data, len, '#');
  MB_CALL(tf_first_line(&t));
  int64_t nt, k;
  MB_CALL(mb_mf_int(&t, "the triangle count", &nt));
  MB_CALL(tf_opt_int(&t, "the number of neighbours per triangle", 3, &k));
  MB_CALL(tf_eol(&t, "the header (triangles, neighbours per triangle)"));
  MB_CHECK(nt == el->nt, MB_ERR_FORMAT, "%s:%lld: %lld triangles, but %s has %lld", path,
           (long long)t.line, (long long)nt, ele_path, (long long)el->nt);
  MB_CHECK(k == 3, MB_ERR_FORMAT, "%s:%lld: %lld neighbours per triangle (must be 3)", path,
           (long long)t.line, (long long)k);
  mb_mf_next_line(&t);
  int64_t *nb = malloc(sizeof *nb * (size_t)(3 * nt));
  MB_CHECK(nb, MB_ERR_MEMORY, "out of memory checking %s", path);
  mb_error e = tf_neighbors(nv, nt, el->tri, nb);
  for (int64_t f = 0; f < nt && !e; f++, mb_mf_next_line(&t)) {
    if ((e = tf_data_line(&t, f, nt, "triangles"))) break;
    if ((e = tf_number(&t, "triangle", base, f))) break;
    for (int i = 0; i < 3 && !e; i++) {
      int64_t n;
      if ((e = mb_mf_int(&t, "a neighbour", &n))) break;
      int64_t a = el->tri[3 * f + (i + 1) % 3], b = el->tri[3 * f + (i + 2) % 3];
      if (n != -1 && (n < base || n >= base + nt))
        e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                         "%s:%lld: neighbour %lld out of range (-1 or [%lld, %lld])", path,
                         (long long)t.line, (long long)n, (long long)base,
                         (long long)(base + nt - 1));
      else if (n == -1 && nb[3 * f + i] >= 0)
        e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                         "%s:%lld: triangle %lld has no neighbour opposite corner %d, but "
                         "triangle %lld shares that edge (%lld, %lld)",
                         path, (long long)t.line, (long long)(f + base), i,
                         (long long)(nb[3 * f + i] + base), (long long)(a + base),
                         (long long)(b + base));
      else if (n != -1 && (n - base == f || nb[3 * f + i] < 0 ||
                           !tf_has_vertex(el->tri, n - base, a) ||
                           !tf_has_vertex(el->tri, n - base, b)))
        e = mb_error_set(MB_ERR_FORMAT, __FILE__, __LINE__, __func__,
                         "%s:%lld: triangle %lld: neighbour %lld opposite corner %d does not "
                         "share the edge (%lld, %lld)",
                         path, (long long)t.line, (long long)(f + base), (long long)n, i,
                         (long long)(a + base), (long long)(b + base));
    }
    if (!e) e = tf_eol(&t, "the three neighbours");
  }
  if (!e) e = tf_no_more(&t, nt, "triangle");
  free(nb);
  if (e) mb_error_trace(__FILE__, __LINE__, __func__);
  return e;
}

/* ------------------------------------------------------------ reading */

/* Build the mesh from the parsed files. */
static mb_error tf_build(const char *name, tf_nodes *nd, tf_tris *el, mb_mesh **out) {
  mb_mesh *m = NULL;
  MB_CALL(mb_mesh_create(name, 0, 0, 0, &m));
  m->kind = MB_KIND_TRIANGULATION2D;
  free(m->xyz);
  free(m->face_indices);
  m->nv = nd->nv;
  m->xyz = nd->xyz;
  nd->xyz = NULL;
  m->nf = el->nt;
  m->face_indices = el->tri;
  el->tri = NULL;
  mb_error e = MB_SUCCESS;
  int64_t *off = realloc(m->face_offsets, sizeof *off * (size_t)(m->nf + 1));
  if (!off) e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  else {
    m->face_offsets = off;
    for (int64_t f = 0; f <= m->nf; f++) off[f] = 3 * f;
  }
  if (!e && nd->nattr) e = mb_mesh_set_field(m, "attributes", (int)nd->nattr, nd->attr);
  if (!e && nd->nmark) e = mb_mesh_set_field(m, "boundary_marker", 1, nd->marker);
  if (!e && el->nattr) e = mb_mesh_set_face_field(m, "attributes", (int)el->nattr, el->attr);
  if (e) {
    mb_error_trace(__FILE__, __LINE__, __func__);
    mb_mesh_free(m);
    return e;
  }
  *out = m;
  return MB_SUCCESS;
}

mb_error mb_trianglefile_read(const char *path, mb_mesh **mesh) {
  MB_CHECK(path && mesh, MB_ERR_ARG, "mb_trianglefile_read: NULL argument");
  *mesh = NULL;
  size_t n = strlen(path);
  if (tf_has_ext(path, ".node")) n -= 5;
  else if (tf_has_ext(path, ".ele")) n -= 4;
  else MB_FAIL(MB_ERR_ARG, "%s: expected a Triangle .node or .ele file", path);
  char *node_path = tf_join(path, n, ".node"), *ele_path = tf_join(path, n, ".ele");
  char *neigh_path = tf_join(path, n, ".neigh");
  const char *slash = strrchr(path, '/');
  size_t b = slash ? (size_t)(slash + 1 - path) : 0;
  char *name = tf_join(path + b, n - b, "");
  char *data = NULL;
  size_t len = 0;
  tf_nodes nd = {0};
  tf_tris el = {0};
  mb_mesh *m = NULL;
  mb_error e = MB_SUCCESS;
  if (!node_path || !ele_path || !neigh_path || !name) {
    e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
    goto done;
  }
  /* Keep the user's spelling of the extension for the file given. */
  if (tf_has_ext(path, ".node")) strcpy(node_path, path);
  else strcpy(ele_path, path);
  MB_CALL_GOTO(e, done, mb_mf_load(node_path, &data, &len));
  MB_CALL_GOTO(e, done, tf_read_node(node_path, data, len, &nd));
  free(data);
  data = NULL;
  MB_CALL_GOTO(e, done, mb_mf_load(ele_path, &data, &len));
  MB_CALL_GOTO(e, done, tf_read_ele(ele_path, data, len, &nd, &el));
  free(data);
  data = NULL;
  struct stat st;
  if (stat(neigh_path, &st) == 0) {
    MB_CALL_GOTO(e, done, mb_mf_load(neigh_path, &data, &len));
    MB_CALL_GOTO(e, done, tf_check_neigh(neigh_path, data, len, nd.base, nd.nv, &el, ele_path));
    free(data);
    data = NULL;
  }
  MB_CALL_GOTO(e, done, tf_build(name, &nd, &el, &m));
  MB_CALL_GOTO(e, done, mb_mesh_validate(m, path));
  *mesh = m;
  m = NULL;
done:
  free(data);
  tf_nodes_free(&nd);
  tf_tris_free(&el);
  mb_mesh_free(m);
  free(node_path);
  free(ele_path);
  free(neigh_path);
  free(name);
  return e;
}

/* ------------------------------------------------------------ writing */

/* The field called name with ncomp components (0: any), or NULL. */
static const mb_field *tf_field(const mb_field *fields, int n, const char *name, int ncomp) {
  for (int k = 0; k < n; k++)
    if (!strcmp(fields[k].name, name) && (ncomp == 0 || fields[k].ncomp == ncomp))
      return &fields[k];
  return NULL;
}

static mb_error tf_write_node(FILE *f, const mb_mesh *m) {
  const mb_field *attr = tf_field(m->fields, m->nfields, "attributes", 0);
  const mb_field *mark = tf_field(m->fields, m->nfields, "boundary_marker", 1);
  int na = attr ? attr->ncomp : 0;
  fprintf(f, "%lld 2 %d %d\n", (long long)m->nv, na, mark ? 1 : 0);
  for (int64_t i = 0; i < m->nv; i++) {
    fprintf(f, "%lld %.17g %.17g", (long long)i, m->xyz[3 * i], m->xyz[3 * i + 1]);
    for (int a = 0; a < na; a++) fprintf(f, " %.17g", attr->data[(int64_t)na * i + a]);
    if (mark) fprintf(f, " %lld", (long long)mark->data[i]);
    fputc('\n', f);
  }
  return MB_SUCCESS;
}

static mb_error tf_write_ele(FILE *f, const mb_mesh *m) {
  const mb_field *attr = tf_field(m->face_fields, m->nface_fields, "attributes", 0);
  int na = attr ? attr->ncomp : 0;
  fprintf(f, "%lld 3 %d\n", (long long)m->nf, na);
  for (int64_t t = 0; t < m->nf; t++) {
    const int64_t *v = m->face_indices + 3 * t;
    fprintf(f, "%lld %lld %lld %lld", (long long)t, (long long)v[0], (long long)v[1],
            (long long)v[2]);
    for (int a = 0; a < na; a++) fprintf(f, " %.17g", attr->data[(int64_t)na * t + a]);
    fputc('\n', f);
  }
  return MB_SUCCESS;
}

static mb_error tf_write_neigh(FILE *f, const mb_mesh *m) {
  int64_t *nb = malloc(sizeof *nb * (size_t)(3 * m->nf));
  MB_CHECK(nb, MB_ERR_MEMORY, "out of memory for the neighbours of %lld triangles",
           (long long)m->nf);
  mb_error e = tf_neighbors(m->nv, m->nf, m->face_indices, nb);
  if (!e) {
    fprintf(f, "%lld 3\n", (long long)m->nf);
    for (int64_t t = 0; t < m->nf; t++)
      fprintf(f, "%lld %lld %lld %lld\n", (long long)t, (long long)nb[3 * t],
              (long long)nb[3 * t + 1], (long long)nb[3 * t + 2]);
  }
  free(nb);
  MB_CALL(e);
  return MB_SUCCESS;
}

/* Check that m can be written as Triangle files. */
static mb_error tf_check_writable(const char *stem, const mb_mesh *m) {
  MB_CHECK(m->nv > 0 && m->nf > 0 && m->xyz && m->face_offsets && m->face_indices, MB_ERR_ARG,
           "%s: cannot write an empty or incomplete mesh as Triangle files", stem);
  MB_CHECK(mb_mesh_is_triangles(m), MB_ERR_ARG,
           "%s: Triangle files hold triangles only; '%s' has polygons", stem,
           m->name ? m->name : "");
  for (int64_t i = 0; i < 3 * m->nf; i++)
    MB_CHECK(m->face_indices[i] >= 0 && m->face_indices[i] < m->nv, MB_ERR_ARG,
             "%s: cannot write: triangle %lld refers to vertex %lld, outside [0, %lld)", stem,
             (long long)(i / 3), (long long)m->face_indices[i], (long long)m->nv);
  for (int64_t i = 0; i < m->nv; i++)
    MB_CHECK(m->xyz[3 * i + 2] == 0.0, MB_ERR_ARG,
             "%s: Triangle files are planar, but vertex %lld has z = %.17g", stem, (long long)i,
             m->xyz[3 * i + 2]);
  return MB_SUCCESS;
}

mb_error mb_trianglefile_write(const char *path_stem, const mb_mesh *mesh) {
  MB_CHECK(path_stem && mesh, MB_ERR_ARG, "mb_trianglefile_write: NULL argument");
  size_t n = strlen(path_stem);
  if (tf_has_ext(path_stem, ".node")) n -= 5;
  else if (tf_has_ext(path_stem, ".ele")) n -= 4;
  MB_CHECK(n > 0, MB_ERR_ARG, "mb_trianglefile_write: empty file stem");
  char *stem = tf_join(path_stem, n, "");
  MB_CHECK(stem, MB_ERR_MEMORY, "out of memory");
  mb_error e = tf_check_writable(stem, mesh);
  if (e) {
    free(stem);
    MB_CALL(e);
  }
  static const char *const ext[3] = {".node", ".ele", ".neigh"};
  char *final[3] = {0}, *tmp[3] = {0};
  for (int k = 0; k < 3 && !e; k++) {
    final[k] = tf_join(stem, n, ext[k]);
    tmp[k] = final[k] ? malloc(strlen(final[k]) + 32) : NULL;
    if (!tmp[k]) e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
    else snprintf(tmp[k], strlen(final[k]) + 32, "%s.tmp-%ld", final[k], (long)getpid());
  }
  int made[3] = {0};
  for (int k = 0; k < 3 && !e; k++) {
    FILE *f = fopen(tmp[k], "wb");
    if (!f) {
      e = mb_error_set(MB_ERR_IO, __FILE__, __LINE__, __func__, "%s: cannot create: %s",
                       final[k], strerror(errno));
      break;
    }
    made[k] = 1;
    setvbuf(f, NULL, _IOFBF, 1 << 20);
    errno = 0;
    e = k == 0 ? tf_write_node(f, mesh) : k == 1 ? tf_write_ele(f, mesh) : tf_write_neigh(f, mesh);
    int ok = fflush(f) == 0 && !ferror(f);
    int err = errno ? errno : EIO;
    ok = (fclose(f) == 0) && ok;
    if (e) mb_error_trace(__FILE__, __LINE__, __func__);
    else if (!ok)
      e = mb_error_set(MB_ERR_IO, __FILE__, __LINE__, __func__, "%s: cannot write: %s",
                       final[k], strerror(err));
  }
  for (int k = 0; k < 3 && !e; k++)
    if (rename(tmp[k], final[k]) != 0)
      e = mb_error_set(MB_ERR_IO, __FILE__, __LINE__, __func__, "%s: cannot rename %s: %s",
                       final[k], tmp[k], strerror(errno));
    else made[k] = 0;
  for (int k = 0; k < 3; k++) {
    if (made[k]) remove(tmp[k]);
    free(tmp[k]);
    free(final[k]);
  }
  free(stem);
  return e;
}
