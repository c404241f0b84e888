/* meshbatch: Wavefront OBJ reader and writer (see mb_meshfile.h).
 *
 * Only `v` and `f` statements are used; vt/vn/vp/g/o/s/usemtl/mtllib/l and
 * anything else are skipped. Face indices may refer to vertices defined later
 * in the file (positive) or relative to the vertices so far (negative).
 */
#define _POSIX_C_SOURCE 200809L

#include "mb_meshfile_private.h"

#include <string.h>

/* True if the line at p starts with statement letter c and a blank. */
static int mb_obj_is_statement(const char *p, char c) {
  return p[0] == c && mb_mf_is_blank(p[1]);
}

/* Count the `v` and `f` statements so that positive indices can be checked
 * on their line and the builder sized once. */
static void mb_obj_count(const char *data, const char *end, int64_t *nv, int64_t *nf) {
  *nv = *nf = 0;
  for (const char *p = data; p < end;) {
    while (mb_mf_is_blank(*p)) p++;
    if (mb_obj_is_statement(p, 'v')) (*nv)++;
    else if (mb_obj_is_statement(p, 'f')) (*nf)++;
    const char *nl = p < end ? memchr(p, '\n', (size_t)(end - p)) : NULL;
    p = nl ? nl + 1 : end;
  }
}

/* Parse one face vertex `v`, `v/vt`, `v//vn` or `v/vt/vn`; *v gets the raw index. */
static mb_error mb_obj_face_vertex(mb_mf_text *t, int64_t *v) {
  const char *s = t->p, *q = s;
  int64_t other;
  int ok = mb_mf_scan_int(&q, v);
  if (ok && *q == '/') {
    q++;
    if (*q != '/') ok = mb_mf_scan_int(&q, &other);
    if (ok && *q == '/') {
      q++;
      ok = mb_mf_scan_int(&q, &other);
    }
  }
  if (!ok || !mb_mf_is_delim(t, *q))
    return mb_mf_bad_token(t, s, "a face vertex (v, v/vt, v//vn or v/vt/vn)");
  t->p = q;
  return MB_SUCCESS;
}

/* Turn a raw OBJ index into a 0-based one: positive ones count from the file
 * start (nv_total vertices in all), negative ones back from nv_sofar. */
static mb_error mb_obj_resolve(const mb_mf_text *t, int64_t idx, int64_t nv_sofar,
                               int64_t nv_total, int64_t *v) {
  MB_CHECK(idx != 0, MB_ERR_FORMAT, "%s:%lld: face index 0 is invalid (OBJ indices start at 1)",
           t->path, (long long)t->line);
  if (idx > 0) {
    MB_CHECK(idx <= nv_total, MB_ERR_FORMAT, "%s:%lld: face index %lld out of range [1, %lld]",
             t->path, (long long)t->line, (long long)idx, (long long)nv_total);
    *v = idx - 1;
  } else {
    MB_CHECK(-idx <= nv_sofar, MB_ERR_FORMAT,
             "%s:%lld: face index %lld out of range [%lld, -1] (relative to the %lld vertices "
             "defined so far)",
             t->path, (long long)t->line, (long long)idx, (long long)-nv_sofar,
             (long long)nv_sofar);
    *v = nv_sofar + idx;
  }
  return MB_SUCCESS;
}

/* Parse the rest of an `f` line into a polygon. */
static mb_error mb_obj_face(mb_mf_text *t, mb_mf_builder *b, int64_t nv_total) {
  while (!mb_mf_at_eol(t)) {
    int64_t idx = 0, v = 0;
    MB_CALL(mb_obj_face_vertex(t, &idx));
    MB_CALL(mb_obj_resolve(t, idx, b->nv, nv_total, &v));
    MB_CALL(mb_mf_add_index(b, v));
  }
  int64_t n = mb_mf_open_face_size(b);
  MB_CHECK(n >= 3, MB_ERR_FORMAT, "%s:%lld: face has %lld vertices (need at least 3)", t->path,
           (long long)t->line, (long long)n);
  MB_CALL(mb_mf_end_face(b));
  return MB_SUCCESS;
}

mb_error mb_obj_read(const char *path, const char *data, size_t len, mb_mf_builder *b) {
  int64_t nv, nf;
  mb_obj_count(data, data + len, &nv, &nf);
  MB_CALL(mb_mf_builder_reserve(b, nv, nf, 3 * nf));
  mb_mf_text t;
  mb_mf_text_init(&t, path, data, len, '#');
  for (; !mb_mf_at_eof(&t); mb_mf_next_line(&t)) {
    size_t n;
    const char *tok = mb_mf_token(&t, &n);
    if (mb_mf_token_is(tok, n, "v")) MB_CALL(mb_mf_vertex_line(&t, b));
    else if (mb_mf_token_is(tok, n, "f")) MB_CALL(mb_obj_face(&t, b, nv));
  }
  return MB_SUCCESS;
}

mb_error mb_obj_write(FILE *f, const char *path, const mb_mesh *m) {
  (void)path;
  fprintf(f, "# %lld vertices, %lld faces (written by meshbatch)\n", (long long)m->nv,
          (long long)m->nf);
  for (int64_t i = 0; i < m->nv; i++) {
    const double *x = m->xyz + 3 * i;
    fprintf(f, "v %.17g %.17g %.17g\n", x[0], x[1], x[2]);
  }
  for (int64_t k = 0; k < m->nf; k++) {
    fputc('f', f);
    for (int64_t j = m->face_offsets[k]; j < m->face_offsets[k + 1]; j++)
      fprintf(f, " %lld", (long long)m->face_indices[j] + 1);
    fputc('\n', f);
  }
  return MB_SUCCESS;
}
