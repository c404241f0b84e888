/* meshbatch: OFF reader and writer (see mb_meshfile.h).
 *
 * Accepted headers: OFF and its variants with ST/C/N prefixes (COFF, NOFF,
 * CNOFF, STOFF, ...); values after x y z on a vertex line and after the
 * indices on a face line (normals, colours, texture coordinates) are ignored.
 * `#` starts a comment; blank lines are skipped. Indices are 0-based.
 * 2D OFF: where the first vertex line holds exactly two numbers, every vertex
 * line must hold exactly two (x y) and z is 0. The writer writes z = 0 for
 * the planar kinds (triangulation2d, polygons2d) and faces of any size.
 */
#define _POSIX_C_SOURCE 200809L

#include "mb_meshfile_private.h"

#include <string.h>

/* Check the header keyword: [ST][C][N]OFF in any order of the prefixes. */
static mb_error mb_off_header(mb_mf_text *t) {
  MB_CHECK(mb_mf_skip_empty_lines(t), MB_ERR_FORMAT, "%s: empty mesh (empty file)", t->path);
  size_t n;
  const char *tok = mb_mf_token(t, &n);
  int ok = n >= 3 && memcmp(tok + n - 3, "OFF", 3) == 0;
  for (size_t i = 0; ok && i + 3 < n; i++) {
    MB_CHECK(tok[i] != '4' && tok[i] != 'n', MB_ERR_FORMAT,
             "%s:%lld: unsupported OFF variant '%.*s' (only 3D OFF is read)", t->path,
             (long long)t->line, (int)n, tok);
    ok = strchr("STCN", tok[i]) != NULL;
  }
  if (!ok) return mb_mf_bad_token(t, tok, "an OFF header (OFF, COFF, NOFF, ...)");
  tok = mb_mf_token(t, &n);
  MB_CHECK(!mb_mf_token_is(tok, n, "BINARY"), MB_ERR_FORMAT,
           "%s:%lld: binary OFF is not supported", t->path, (long long)t->line);
  t->p = tok; /* the counts may follow on the header line */
  return MB_SUCCESS;
}

/* Read the "nv nf [ne]" counts line. */
static mb_error mb_off_counts(mb_mf_text *t, int64_t *nv, int64_t *nf) {
  if (mb_mf_at_eol(t)) {
    mb_mf_next_line(t);
    MB_CHECK(mb_mf_skip_empty_lines(t), MB_ERR_FORMAT,
             "%s:%lld: file ends before the vertex and face counts", t->path, (long long)t->line);
  }
  MB_CALL(mb_mf_int(t, "the vertex count", nv));
  MB_CALL(mb_mf_int(t, "the face count", nf));
  MB_CHECK(*nv >= 0 && *nf >= 0, MB_ERR_FORMAT, "%s:%lld: negative vertex or face count",
           t->path, (long long)t->line);
  mb_mf_next_line(t);
  return MB_SUCCESS;
}

/* Read one face line: "n i1 ... in [colour]". */
static mb_error mb_off_face(mb_mf_text *t, mb_mf_builder *b, int64_t nv) {
  int64_t n;
  MB_CALL(mb_mf_int(t, "a face vertex count", &n));
  MB_CHECK(n >= 3, MB_ERR_FORMAT, "%s:%lld: face has %lld vertices (need at least 3)", t->path,
           (long long)t->line, (long long)n);
  for (int64_t k = 0; k < n; k++) {
    int64_t v;
    MB_CALL(mb_mf_int(t, "a face index", &v));
    MB_CHECK(v >= 0 && v < nv, MB_ERR_FORMAT, "%s:%lld: face index %lld out of range [0, %lld]",
             t->path, (long long)t->line, (long long)v, (long long)nv - 1);
    MB_CALL(mb_mf_add_index(b, v));
  }
  MB_CALL(mb_mf_end_face(b));
  return MB_SUCCESS;
}

mb_error mb_off_read(const char *path, const char *data, size_t len, mb_mf_builder *b) {
  mb_mf_text t;
  mb_mf_text_init(&t, path, data, len, '#');
  int64_t nv, nf;
  MB_CALL(mb_off_header(&t));
  MB_CALL(mb_off_counts(&t, &nv, &nf));
  /* Never trust the counts for more memory than the file could describe. */
  int64_t left = (int64_t)(t.end - t.p);
  MB_CALL(mb_mf_builder_reserve(b, nv < left ? nv : left, nf < left ? nf : left,
                                3 * (nf < left ? nf : left)));
  int planar = 0; /* 2D OFF: decided by the first vertex line */
  for (int64_t i = 0; i < nv; i++, mb_mf_next_line(&t)) {
    MB_CHECK(mb_mf_skip_empty_lines(&t), MB_ERR_FORMAT,
             "%s:%lld: file ends after %lld of %lld vertices", path, (long long)t.line,
             (long long)i, (long long)nv);
    double x, y, z = 0.0;
    MB_CALL(mb_mf_coord(&t, &x));
    MB_CALL(mb_mf_coord(&t, &y));
    if (i == 0) planar = mb_mf_at_eol(&t);
    if (planar)
      MB_CHECK(mb_mf_at_eol(&t), MB_ERR_FORMAT,
               "%s:%lld: expected 2 coordinates, as on the first vertex line (2D OFF)", path,
               (long long)t.line);
    else
      MB_CALL(mb_mf_coord(&t, &z));
    MB_CALL(mb_mf_add_vertex(b, x, y, z));
  }
  for (int64_t f = 0; f < nf; f++, mb_mf_next_line(&t)) {
    MB_CHECK(mb_mf_skip_empty_lines(&t), MB_ERR_FORMAT,
             "%s:%lld: file ends after %lld of %lld faces", path, (long long)t.line,
             (long long)f, (long long)nf);
    MB_CALL(mb_off_face(&t, b, nv));
  }
  return MB_SUCCESS;
}

mb_error mb_off_write(FILE *f, const char *path, const mb_mesh *m) {
  (void)path;
  fprintf(f, "OFF\n%lld %lld 0\n", (long long)m->nv, (long long)m->nf);
  int planar = m->kind == MB_KIND_TRIANGULATION2D || m->kind == MB_KIND_POLYGONS2D;
  for (int64_t i = 0; i < m->nv; i++) {
    const double *x = m->xyz + 3 * i;
    if (planar) fprintf(f, "%.17g %.17g 0\n", x[0], x[1]);
    else fprintf(f, "%.17g %.17g %.17g\n", x[0], x[1], x[2]);
  }
  for (int64_t k = 0; k < m->nf; k++) {
    int64_t a = m->face_offsets[k], e = m->face_offsets[k + 1];
    fprintf(f, "%lld", (long long)(e - a));
    for (int64_t j = a; j < e; j++) fprintf(f, " %lld", (long long)m->face_indices[j]);
    fputc('\n', f);
  }
  return MB_SUCCESS;
}
