/* meshbatch: the checkpoint log's records (see mb_ckptlog.h; the layout is
 * in docs/format.md, "Checkpoint log"). Little-endian hosts only, as the
 * rest of meshbatch's raw files (x86-64, aarch64). */
#include "mb_ckptlog.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static const char log_magic[8] = {'M', 'B', 'C', 'K', 'L', 'O', 'G', '1'};

enum { FIXED = 64, DESC = 32, MAX_HEADER = 1 << 24 };
enum { T_F64 = 0, T_F32 = 1, T_I64 = 2, T_BYTES = 3 };

/* The fixed part of a record's header (64 bytes, little-endian). */
typedef struct fixed_header {
  char magic[8];
  uint32_t header_len;  /* the whole header: this, the descriptors, their names (8-aligned) */
  uint32_t header_crc;  /* CRC-32 of the header with this field 0 */
  uint64_t payload_len; /* the arrays' bytes, each 8-aligned */
  uint32_t payload_crc; /* CRC-32 of the payload */
  uint32_t narrays;
  int64_t source;
  int32_t kind;
  uint32_t flags;       /* 0 */
  int64_t nv, nf;
} fixed_header;

/* One array's descriptor (32 bytes, then its name, padded to 8). */
typedef struct array_desc {
  uint8_t type;
  uint8_t ndim;
  uint16_t name_len;
  uint32_t reserved;
  int64_t dim[2];
  uint64_t offset;      /* bytes from the payload's start */
} array_desc;

_Static_assert(sizeof(fixed_header) == FIXED, "the record header is 64 bytes");
_Static_assert(sizeof(array_desc) == DESC, "an array descriptor is 32 bytes");

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }
static size_t type_size(int t) { return t == T_F32 ? 4 : t == T_BYTES ? 1 : 8; }

/* CRC-32 of n bytes (zlib's crc32_z takes any size). */
static uint32_t crc_of(const unsigned char *p, size_t n) {
  return (uint32_t)crc32_z(crc32_z(0L, Z_NULL, 0), p, n);
}

/* The arrays of a mesh, in the order they are written. */
typedef struct array_ref {
  char name[300];
  int type;
  int ndim;
  int64_t dim[2];
  const void *data;
} array_ref;

static int64_t nbytes(const array_ref *a) {
  return a->dim[0] * (a->ndim == 2 ? a->dim[1] : 1) * (int64_t)type_size(a->type);
}

/* The attributes as key NUL value NUL ... into a new buffer (*len bytes). */
static char *attrs_text(const mb_attrs *at, size_t *len) {
  size_t n = 0;
  for (int i = 0; i < at->n; i++) n += strlen(at->keys[i]) + strlen(at->values[i]) + 2;
  char *t = malloc(n ? n : 1), *p = t;
  if (!t) return NULL;
  for (int i = 0; t && i < at->n; i++) {
    const size_t k = strlen(at->keys[i]) + 1, v = strlen(at->values[i]) + 1;
    memcpy(p, at->keys[i], k);
    memcpy(p + k, at->values[i], v);
    p += k + v;
  }
  *len = n;
  return t;
}

static void add(array_ref *a, int *n, const char *prefix, const char *name, int type, int ndim,
                int64_t d0, int64_t d1, const void *data) {
  array_ref *r = &a[(*n)++];
  snprintf(r->name, sizeof r->name, "%s%s", prefix, name);
  r->type = type;
  r->ndim = ndim;
  r->dim[0] = d0;
  r->dim[1] = d1;
  r->data = data;
}

mb_error mb_ckptlog_encode(const mb_mesh *m, int64_t s, mb_ckptlog_record *rec) {
  rec->len = 0;
  const int cap = 8 + m->nfields + m->nface_fields;
  array_ref *a = calloc((size_t)cap, sizeof *a);
  size_t tlen = 0;
  char *text = attrs_text(&m->attrs, &tlen);
  if (!a || !text) {
    free(a);
    free(text);
    MB_FAIL(MB_ERR_MEMORY, "out of memory");
  }
  int n = 0;
  const int64_t nidx = m->face_offsets ? m->face_offsets[m->nf] : 0;
  add(a, &n, "", "name", T_BYTES, 1, (int64_t)strlen(m->name), 0, m->name);
  add(a, &n, "", "attrs", T_BYTES, 1, (int64_t)tlen, 0, text);
  if (m->kind == MB_KIND_GRID3D) {
    add(a, &n, "", "grid_shape", T_I64, 1, 3, 0, m->shape);
    add(a, &n, "", "grid_origin", T_F64, 1, 3, 0, m->origin);
    add(a, &n, "", "grid_spacing", T_F64, 1, 3, 0, m->spacing);
  }
  if (m->xyz) add(a, &n, "", "xyz", T_F64, 2, m->nv, 3, m->xyz);
  if (m->face_offsets) {
    add(a, &n, "", "face_offsets", T_I64, 1, m->nf + 1, 0, m->face_offsets);
    add(a, &n, "", "face_indices", T_I64, 1, nidx, 0, m->face_indices);
  }
  for (int i = 0; i < m->nfields; i++) {
    const mb_field *f = &m->fields[i];
    const int f32 = f->dtype == MB_FLOAT32;
    add(a, &n, "vertex_field:", f->name, f32 ? T_F32 : T_F64, 2, m->nv, f->ncomp,
        f32 ? (const void *)f->data32 : (const void *)f->data);
  }
  for (int i = 0; i < m->nface_fields; i++) {
    const mb_field *f = &m->face_fields[i];
    const int f32 = f->dtype == MB_FLOAT32;
    add(a, &n, "face_field:", f->name, f32 ? T_F32 : T_F64, 2, m->nf, f->ncomp,
        f32 ? (const void *)f->data32 : (const void *)f->data);
  }
  size_t hlen = FIXED, plen = 0;
  for (int i = 0; i < n; i++) {
    hlen += DESC + pad8(strlen(a[i].name));
    plen += pad8((size_t)nbytes(&a[i]));
  }
  unsigned char *b = rec->bytes;
  if (hlen <= MAX_HEADER && (!b || rec->cap < hlen + plen)) {
    b = realloc(rec->bytes, hlen + plen);
    if (b) {
      rec->bytes = b;
      rec->cap = hlen + plen;
    }
  }
  if (!b || hlen > MAX_HEADER) {
    free(a);
    free(text);
    MB_CHECK(hlen <= MAX_HEADER, MB_ERR_ARG, "mesh '%s': names too long for a checkpoint record",
             m->name);
    MB_FAIL(MB_ERR_MEMORY, "out of memory for the checkpoint of mesh '%s' (%zu bytes)", m->name,
            hlen + plen);
  }
  memset(b, 0, hlen); /* the header's padding and reserved fields */
  fixed_header h = {.header_len = (uint32_t)hlen, .payload_len = plen, .narrays = (uint32_t)n,
                    .source = s, .kind = (int32_t)m->kind, .nv = m->nv, .nf = m->nf};
  memcpy(h.magic, log_magic, sizeof log_magic);
  memcpy(b, &h, FIXED);
  size_t hp = FIXED, pp = 0;
  for (int i = 0; i < n; i++) {
    const size_t nl = strlen(a[i].name), nb = (size_t)nbytes(&a[i]);
    array_desc d = {.type = (uint8_t)a[i].type, .ndim = (uint8_t)a[i].ndim,
                    .name_len = (uint16_t)nl, .dim = {a[i].dim[0], a[i].dim[1]}, .offset = pp};
    memcpy(b + hp, &d, DESC);
    memcpy(b + hp + DESC, a[i].name, nl);
    hp += DESC + pad8(nl);
    if (nb) memcpy(b + hlen + pp, a[i].data, nb);
    memset(b + hlen + pp + nb, 0, pad8(nb) - nb);
    pp += pad8(nb);
  }
  free(a);
  free(text);
  rec->len = hlen + plen;
  return MB_SUCCESS;
}

void mb_ckptlog_seal(mb_ckptlog_record *rec) {
  fixed_header h;
  memcpy(&h, rec->bytes, FIXED);
  h.payload_crc = crc_of(rec->bytes + h.header_len, (size_t)h.payload_len);
  h.header_crc = 0;
  memcpy(rec->bytes, &h, FIXED);
  h.header_crc = crc_of(rec->bytes, h.header_len);
  memcpy(rec->bytes, &h, FIXED);
}

void mb_ckptlog_record_free(mb_ckptlog_record *rec) {
  free(rec->bytes);
  *rec = (mb_ckptlog_record){0};
}

/* pread all of n bytes at off; 0, or -1 with errno (0 for the end of the file). */
static int read_at(int fd, void *buf, size_t n, uint64_t off) {
  for (size_t done = 0; done < n;) {
    const ssize_t r = pread(fd, (char *)buf + done, n - done, (off_t)(off + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (r == 0) errno = 0;
      return -1;
    }
    done += (size_t)r;
  }
  return 0;
}

/* Whether the header at off holds (magic, length, CRC, the record within size); its fixed
 * part into *h. 1: good; 0: not a header; -1: a read failed (errno). */
static int header_at(int fd, uint64_t off, uint64_t size, fixed_header *h, unsigned char **buf) {
  if (off + FIXED > size) return 0;
  if (read_at(fd, h, FIXED, off)) return errno ? -1 : 0;
  if (memcmp(h->magic, log_magic, sizeof log_magic) || h->header_len < FIXED ||
      h->header_len > MAX_HEADER || h->header_len % 8 || off + h->header_len > size)
    return 0;
  unsigned char *b = malloc(h->header_len);
  if (!b) {
    errno = ENOMEM;
    return -1;
  }
  if (read_at(fd, b, h->header_len, off)) {
    free(b);
    return errno ? -1 : 0;
  }
  const uint32_t want = h->header_crc;
  memset(b + offsetof(fixed_header, header_crc), 0, sizeof want);
  const int ok = crc_of(b, h->header_len) == want;
  memcpy(b + offsetof(fixed_header, header_crc), &want, sizeof want);
  if (ok && buf) *buf = b;
  else free(b);
  return ok;
}

mb_error mb_ckptlog_scan(int fd, const char *path, int file, mb_ckptlog_entry **entries,
                         int64_t *n, uint64_t *torn) {
  struct stat sb;
  MB_CHECK(fstat(fd, &sb) == 0, MB_ERR_IO, "cannot read %s: %s", path, strerror(errno));
  const uint64_t size = (uint64_t)sb.st_size;
  uint64_t off = 0;
  while (off + FIXED <= size) {
    fixed_header h;
    const int ok = header_at(fd, off, size, &h, NULL);
    MB_CHECK(ok >= 0, errno == ENOMEM ? MB_ERR_MEMORY : MB_ERR_IO, "cannot read %s: %s", path,
             strerror(errno));
    if (ok && off + h.header_len + h.payload_len <= size) {
      mb_ckptlog_entry *e = realloc(*entries, sizeof *e * (size_t)(*n + 1));
      MB_CHECK(e, MB_ERR_MEMORY, "out of memory");
      *entries = e;
      e[(*n)++] = (mb_ckptlog_entry){.source = h.source, .file = file, .offset = off,
                                    .len = h.header_len + h.payload_len};
      off += h.header_len + h.payload_len;
      continue;
    }
    /* a header that fails, or a record past the end: look for the next good header */
    uint64_t next = off + 8;
    while (next + FIXED <= size) {
      const int k = header_at(fd, next, size, &h, NULL);
      MB_CHECK(k >= 0, errno == ENOMEM ? MB_ERR_MEMORY : MB_ERR_IO, "cannot read %s: %s", path,
               strerror(errno));
      if (k) break;
      next += 8;
    }
    if (next + FIXED > size) next = size;
    *torn += next - off;
    off = next;
  }
  if (off < size) *torn += size - off;
  return MB_SUCCESS;
}

/* Take array a's bytes out of the payload p[plen] as a new buffer (n bytes, 1 for 0). */
static void *take(const unsigned char *p, uint64_t plen, const array_desc *d, size_t n) {
  if (d->offset > plen || n > plen - d->offset) return NULL;
  void *q = malloc(n ? n : 1);
  if (q && n) memcpy(q, p + d->offset, n);
  return q;
}

/* The descriptor at b + *hp into *x, its name into nm[300] (cut there), *hp moved past both;
 * returns its bytes in the payload (the descriptors were checked by decode). */
static size_t next_desc(const unsigned char *b, size_t *hp, array_desc *x, char nm[300]) {
  memcpy(x, b + *hp, DESC);
  const size_t n = x->name_len < 299 ? x->name_len : 299;
  memcpy(nm, b + *hp + DESC, n);
  nm[n] = '\0';
  *hp += DESC + pad8(x->name_len);
  return (size_t)(x->dim[0] * (x->ndim == 2 ? x->dim[1] : 1)) * type_size(x->type);
}

/* Build the mesh of a checked record: header b[hlen], payload p[plen]. */
static mb_error decode(const unsigned char *b, const unsigned char *p, mb_mesh **out,
                       const char *where) {
  fixed_header h;
  memcpy(&h, b, FIXED);
  size_t hp = FIXED; /* every descriptor within the header, its sizes sane */
  for (uint32_t i = 0; i < h.narrays; i++) {
    array_desc x;
    MB_CHECK(hp + DESC <= h.header_len, MB_ERR_FORMAT, "%s: a bad array list", where);
    memcpy(&x, b + hp, DESC);
    MB_CHECK(hp + DESC + x.name_len <= h.header_len && x.ndim >= 1 && x.ndim <= 2 &&
             x.type <= T_BYTES && x.dim[0] >= 0 && x.dim[1] >= 0 && x.dim[0] < ((int64_t)1 << 50) &&
             x.dim[1] < ((int64_t)1 << 20) && (x.dim[1] == 0 || x.dim[0] <= ((int64_t)1 << 59) / x.dim[1]),
             MB_ERR_FORMAT, "%s: a bad array descriptor", where);
    hp += DESC + pad8(x.name_len);
  }
  mb_error e = MB_SUCCESS;
  mb_mesh *m = NULL;
  /* the name, the grid geometry and the index array sizes first */
  char *name = NULL, *text = NULL;
  size_t tlen = 0;
  int64_t shape[3] = {0}, nidx = 0;
  double origin[3] = {0}, spacing[3] = {0};
  hp = FIXED;
  for (uint32_t i = 0; i < h.narrays; i++) {
    array_desc x;
    char nm[300];
    const size_t nb = next_desc(b, &hp, &x, nm);
    if (x.offset > h.payload_len || nb > h.payload_len - x.offset) {
      e = MB_ERR_FORMAT;
      break;
    }
    if (!strcmp(nm, "name") && !name && (name = calloc(1, nb + 1))) memcpy(name, p + x.offset, nb);
    else if (!strcmp(nm, "attrs") && !text) {
      text = take(p, h.payload_len, &x, nb);
      tlen = nb;
    } else if (!strcmp(nm, "grid_shape") && nb == sizeof shape) memcpy(shape, p + x.offset, nb);
    else if (!strcmp(nm, "grid_origin") && nb == sizeof origin) memcpy(origin, p + x.offset, nb);
    else if (!strcmp(nm, "grid_spacing") && nb == sizeof spacing) memcpy(spacing, p + x.offset, nb);
    else if (!strcmp(nm, "face_indices")) nidx = x.dim[0];
  }
  if (!e && !name) e = MB_ERR_FORMAT;
  if (!e) e = h.kind == MB_KIND_GRID3D ? mb_grid_create(name, shape, origin, spacing, &m)
                                      : mb_mesh_create(name, h.nv, h.nf, nidx, &m);
  if (!e) {
    m->kind = (mb_kind)h.kind;
    m->index = h.source;
  }
  for (size_t k = 0; !e && text && k < tlen;) { /* key NUL value NUL */
    const char *key = text + k;
    const size_t kl = strnlen(key, tlen - k);
    if (k + kl + 1 >= tlen) {
      e = MB_ERR_FORMAT;
      break;
    }
    const char *val = key + kl + 1;
    const size_t vl = strnlen(val, tlen - k - kl - 1);
    if (k + kl + 1 + vl >= tlen) {
      e = MB_ERR_FORMAT;
      break;
    }
    e = mb_attrs_set(&m->attrs, key, val);
    k += kl + vl + 2;
  }
  hp = FIXED;
  for (uint32_t i = 0; !e && i < h.narrays; i++) {
    array_desc x;
    char nm[300];
    const size_t nb = next_desc(b, &hp, &x, nm);
    if (!strcmp(nm, "xyz")) {
      if (x.dim[0] != m->nv) { e = MB_ERR_FORMAT; break; }
      free(m->xyz);
      if (!(m->xyz = take(p, h.payload_len, &x, nb))) e = MB_ERR_MEMORY;
    } else if (!strcmp(nm, "face_offsets") || !strcmp(nm, "face_indices")) {
      int64_t **dst = nm[5] == 'o' ? &m->face_offsets : &m->face_indices;
      if (nm[5] == 'o' && x.dim[0] != m->nf + 1) { e = MB_ERR_FORMAT; break; }
      free(*dst);
      if (!(*dst = take(p, h.payload_len, &x, nb))) e = MB_ERR_MEMORY;
    } else if (!strncmp(nm, "vertex_field:", 13) || !strncmp(nm, "face_field:", 11)) {
      const int face = nm[0] == 'f';
      int *cnt = face ? &m->nface_fields : &m->nfields;
      mb_field **list = face ? &m->face_fields : &m->fields;
      if (x.ndim != 2 || x.dim[0] != (face ? m->nf : m->nv) || x.dim[1] > INT32_MAX ||
          (x.type != T_F64 && x.type != T_F32)) {
        e = MB_ERR_FORMAT;
        break;
      }
      mb_field *fl = realloc(*list, sizeof *fl * (size_t)(*cnt + 1));
      if (!fl) { e = MB_ERR_MEMORY; break; }
      *list = fl;
      mb_field *f = &fl[*cnt];
      *f = (mb_field){.name = mb_strdup(nm + (face ? 11 : 13)), .ncomp = (int)x.dim[1],
                      .dtype = x.type == T_F32 ? MB_FLOAT32 : MB_FLOAT64};
      void *data = take(p, h.payload_len, &x, nb);
      if (x.type == T_F32) f->data32 = data; else f->data = data;
      (*cnt)++;
      if (!f->name || !data) e = MB_ERR_MEMORY;
    }
  }
  free(name);
  free(text);
  if (e) {
    mb_mesh_free(m);
    if (e == MB_ERR_MEMORY) MB_FAIL(MB_ERR_MEMORY, "%s: out of memory", where);
    MB_FAIL(e, "%s: a record whose arrays do not match its sizes", where);
  }
  *out = m;
  return MB_SUCCESS;
}

mb_error mb_ckptlog_read(int fd, const char *path, const mb_ckptlog_entry *e, mb_mesh **m) {
  char where[4400];
  snprintf(where, sizeof where, "%s, the record of source %lld at byte %llu", path,
           (long long)e->source, (unsigned long long)e->offset);
  fixed_header h;
  unsigned char *b = NULL;
  const int ok = header_at(fd, e->offset, e->offset + e->len, &h, &b);
  MB_CHECK(ok >= 0, errno == ENOMEM ? MB_ERR_MEMORY : MB_ERR_IO, "%s: %s", where,
           strerror(errno));
  MB_CHECK(ok && h.header_len + h.payload_len == e->len && h.source == e->source, MB_ERR_FORMAT,
           "%s: its header fails its check", where);
  unsigned char *p = malloc(h.payload_len ? h.payload_len : 1);
  if (!p) free(b);
  MB_CHECK(p, MB_ERR_MEMORY, "out of memory for %s (%llu bytes)", where,
           (unsigned long long)h.payload_len);
  if (read_at(fd, p, h.payload_len, e->offset + h.header_len)) {
    const int err = errno;
    free(p);
    free(b);
    MB_FAIL(err ? MB_ERR_IO : MB_ERR_FORMAT, "%s: %s", where,
            err ? strerror(err) : "the file ends within it");
  }
  if (crc_of(p, h.payload_len) != h.payload_crc) {
    free(p);
    free(b);
    MB_FAIL(MB_ERR_FORMAT, "%s: its arrays fail their CRC-32 (a damaged record)", where);
  }
  mb_error r = decode(b, p, m, where);
  free(p);
  free(b);
  MB_CALL(r);
  return MB_SUCCESS;
}
