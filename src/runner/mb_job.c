/* meshbatch: job files (see mb_job.h; every key is documented in docs/guide.md).
 *
 * Loading runs in three steps:
 *  1. A libyaml event scan of the whole file. It reports YAML syntax errors
 *     with their line, rejects duplicate keys, aliases and extra documents,
 *     and records every node as "key path -> line, kind, scalar text"
 *     ("stages[0].iterations" -> 7). It also tells whether `input` is a
 *     string or a list, which picks one of two libcyaml schemas (libcyaml
 *     has no union type).
 *  2. libcyaml loads the document with a strict schema (unknown keys, wrong
 *     types, bad enum names and missing required keys are errors). Its
 *     messages arrive through the log callback; the message and its
 *     backtrace ("in mapping field 'stages'", "in sequence entry '2'") are
 *     turned into a key path, whose line comes from the scan index.
 *  3. Range checks and defaults, then relative paths are resolved against
 *     the job file's folder.
 * Every message reads "FILE:LINE: KEY: problem".
 */
#include "mb_job.h"
#include "mb_ops.h"

#include <cyaml/cyaml.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* ------------------------------------------------------------ limits */

enum { MB_JOB_MAX_DEPTH = 32, MB_JOB_MSG_LEN = 1024, MB_JOB_LOG_LEN = 4096 };
/* A job's stages at most (docs/guide.md, "Keys"); loading is linear in them. */
enum { MB_JOB_MAX_STAGES = 10000 };


/* ------------------------------------------------------------ messages */

/* Record MB_ERR_JOB (or code) as "file:line: key: body"; line <= 0 and an
 * empty key are left out. */
static mb_error job_fail(mb_error code, const char *file, int line, const char *key,
                         const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

static mb_error job_fail(mb_error code, const char *file, int line, const char *key,
                         const char *fmt, ...) {
  char body[MB_JOB_MSG_LEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(body, sizeof body, fmt, ap);
  va_end(ap);
  char where[64] = "";
  if (line > 0) snprintf(where, sizeof where, ":%d", line);
  bool has_key = key && *key;
  return mb_error_set(code, __FILE__, __LINE__, "mb_job_load", "%s%s: %s%s%s", file, where,
                      has_key ? key : "", has_key ? ": " : "", body);
}

/* malloc'd printf; NULL when out of memory. */
static char *job_strprintf(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

static char *job_strprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return NULL;
  char *s = malloc((size_t)n + 1);
  if (!s) return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

static char *job_strdup(const char *s) { return job_strprintf("%s", s); }

/* "parent.key", or "key" at the top level. */
static char *job_key_path(const char *parent, const char *key) {
  return *parent ? job_strprintf("%s.%s", parent, key) : job_strdup(key);
}

/* ------------------------------------------------------------ file */

static mb_error job_read_file(const char *path, unsigned char **buf, size_t *len) {
  *buf = NULL;
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) MB_FAIL(MB_ERR_IO, "%s: cannot open job file: %s", path, strerror(errno));
  size_t cap = 4096, n = 0;
  unsigned char *data = malloc(cap);
  while (data) {
    n += fread(data + n, 1, cap - n, f);
    if (n < cap) break;
    unsigned char *grown = realloc(data, cap * 2);
    if (!grown) {
      free(data);
      data = NULL;
      break;
    }
    data = grown;
    cap *= 2;
  }
  int read_error = ferror(f);
  int saved_errno = errno;
  fclose(f);
  if (!data) MB_FAIL(MB_ERR_MEMORY, "%s: out of memory reading the job file", path);
  if (read_error) {
    free(data);
    MB_FAIL(MB_ERR_IO, "%s: cannot read job file: %s", path, strerror(saved_errno));
  }
  *buf = data;
  *len = n;
  return MB_SUCCESS;
}

/* ------------------------------------------------------------ libyaml scan */

typedef enum scan_kind { SCAN_SCALAR, SCAN_SEQUENCE, SCAN_MAPPING } scan_kind;

typedef struct scan_node {
  char *path;  /* "", "input", "input[1]", "stages[0].lambda", ... */
  int line;    /* 1-based; for a mapping value, the line of its key */
  scan_kind kind;
  char *text;  /* scalar text, or NULL */
  bool null;   /* a plain scalar meaning null: "", "~", "null" */
} scan_node;

/* Nodes in document order, and a hash table of their paths (open
 * addressing, linear probing; slots hold node number + 1, 0 = empty) so
 * that loading is linear in the file's size. */
typedef struct scan_index {
  scan_node *nodes;
  size_t n, cap;
  size_t *slots, nslots; /* nslots: a power of two >= 2 cap */
} scan_index;

static size_t path_hash(const char *p) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
  return (size_t)h;
}

typedef struct scan_frame {
  bool is_map;
  char *path;
  long long next;   /* sequences: index of the next entry */
  bool expect_key;  /* mappings: the next node is a key */
  char *key_path;   /* mappings: path of the value that follows */
  int key_line;
} scan_frame;

static void scan_index_free(scan_index *idx) {
  for (size_t i = 0; i < idx->n; i++) {
    free(idx->nodes[i].path);
    free(idx->nodes[i].text);
  }
  free(idx->nodes);
  free(idx->slots);
  memset(idx, 0, sizeof *idx);
}

static const scan_node *scan_find(const scan_index *idx, const char *path) {
  if (!idx->nslots) return NULL;
  for (size_t h = path_hash(path) & (idx->nslots - 1);; h = (h + 1) & (idx->nslots - 1)) {
    if (!idx->slots[h]) return NULL;
    const scan_node *node = &idx->nodes[idx->slots[h] - 1];
    if (!strcmp(node->path, path)) return node;
  }
}

/* Enter node i in the hash table (which has room). */
static void scan_slot(scan_index *idx, size_t i) {
  size_t h = path_hash(idx->nodes[i].path) & (idx->nslots - 1);
  while (idx->slots[h]) h = (h + 1) & (idx->nslots - 1);
  idx->slots[h] = i + 1;
}

/* Line of a key path, or 0 if the file does not have it. */
static int scan_line(const scan_index *idx, const char *path) {
  const scan_node *node = scan_find(idx, path);
  return node ? node->line : 0;
}

/* Add a node; takes ownership of path. */
static mb_error scan_add(scan_index *idx, char *path, int line, scan_kind kind,
                         const char *text, bool null) {
  if (!path) MB_FAIL(MB_ERR_MEMORY, "out of memory scanning the job file");
  if (idx->n == idx->cap) {
    size_t cap = idx->cap ? 2 * idx->cap : 32;
    scan_node *grown = realloc(idx->nodes, cap * sizeof *grown);
    size_t *slots = grown ? calloc(4 * cap, sizeof *slots) : NULL;
    if (!slots) {
      if (grown) idx->nodes = grown;
      free(path);
      MB_FAIL(MB_ERR_MEMORY, "out of memory scanning the job file");
    }
    idx->nodes = grown;
    idx->cap = cap;
    free(idx->slots);
    idx->slots = slots;
    idx->nslots = 4 * cap;
    for (size_t i = 0; i < idx->n; i++) scan_slot(idx, i);
  }
  scan_node *node = &idx->nodes[idx->n++];
  node->path = path;
  node->line = line;
  node->kind = kind;
  node->null = null;
  node->text = text ? job_strdup(text) : NULL;
  scan_slot(idx, idx->n - 1);
  if (text && !node->text) MB_FAIL(MB_ERR_MEMORY, "out of memory scanning the job file");
  return MB_SUCCESS;
}

typedef struct scan_state {
  const char *file;
  scan_index *idx;
  scan_frame frames[MB_JOB_MAX_DEPTH];
  int depth;
  int documents;
} scan_state;

/* A mapping key: remember the path of the value that follows. */
static mb_error scan_key(scan_state *st, scan_frame *top, const yaml_event_t *ev, int line) {
  if (ev->type != YAML_SCALAR_EVENT)
    return job_fail(MB_ERR_JOB, st->file, line, top->path, "keys must be plain strings");
  const char *key = (const char *)ev->data.scalar.value;
  char *path = job_key_path(top->path, key);
  if (!path) MB_FAIL(MB_ERR_MEMORY, "out of memory scanning the job file");
  if (scan_find(st->idx, path)) {
    mb_error err = job_fail(MB_ERR_JOB, st->file, line, path,
                            "duplicate key (first given on line %d)", scan_line(st->idx, path));
    free(path);
    return err;
  }
  top->key_path = path;
  top->key_line = line;
  top->expect_key = false;
  return MB_SUCCESS;
}

/* A node (scalar, sequence or mapping start): record it, push collections. */
static mb_error scan_node_event(scan_state *st, const yaml_event_t *ev) {
  int line = (int)ev->start_mark.line + 1;
  scan_frame *top = st->depth ? &st->frames[st->depth - 1] : NULL;
  if (top && top->is_map && top->expect_key) return scan_key(st, top, ev, line);
  char *path;
  if (!top) {
    path = job_strdup("");
  } else if (top->is_map) {
    path = top->key_path;
    line = top->key_line;
    top->key_path = NULL;
    top->expect_key = true;
  } else {
    path = job_strprintf("%s[%lld]", top->path, top->next++);
  }
  scan_kind kind = ev->type == YAML_SCALAR_EVENT           ? SCAN_SCALAR
                   : ev->type == YAML_SEQUENCE_START_EVENT ? SCAN_SEQUENCE
                                                           : SCAN_MAPPING;
  const char *text = kind == SCAN_SCALAR ? (const char *)ev->data.scalar.value : NULL;
  bool null = kind == SCAN_SCALAR && ev->data.scalar.plain_implicit &&
              (!*text || !strcmp(text, "~") || !strcmp(text, "null") ||
               !strcmp(text, "Null") || !strcmp(text, "NULL"));
  MB_CALL(scan_add(st->idx, path, line, kind, text, null));
  if (kind == SCAN_SCALAR) return MB_SUCCESS;
  if (st->depth == MB_JOB_MAX_DEPTH)
    return job_fail(MB_ERR_JOB, st->file, line, st->idx->nodes[st->idx->n - 1].path,
                    "nested too deeply");
  scan_frame *frame = &st->frames[st->depth++];
  memset(frame, 0, sizeof *frame);
  frame->is_map = kind == SCAN_MAPPING;
  frame->expect_key = true;
  frame->path = st->idx->nodes[st->idx->n - 1].path;
  return MB_SUCCESS;
}

static mb_error scan_event(scan_state *st, const yaml_event_t *ev) {
  int line = (int)ev->start_mark.line + 1;
  switch (ev->type) {
  case YAML_DOCUMENT_START_EVENT:
    if (++st->documents > 1)
      return job_fail(MB_ERR_JOB, st->file, line, NULL,
                      "a job file holds one YAML document; found a second one");
    return MB_SUCCESS;
  case YAML_ALIAS_EVENT:
    return job_fail(MB_ERR_JOB, st->file, line, NULL, "YAML aliases (*%s) are not supported",
                    (const char *)ev->data.alias.anchor);
  case YAML_SCALAR_EVENT:
  case YAML_SEQUENCE_START_EVENT:
  case YAML_MAPPING_START_EVENT:
    return scan_node_event(st, ev);
  case YAML_SEQUENCE_END_EVENT:
  case YAML_MAPPING_END_EVENT:
    if (st->depth > 0) {
      st->depth--;
      free(st->frames[st->depth].key_path);
    }
    return MB_SUCCESS;
  default:
    return MB_SUCCESS;
  }
}

static mb_error scan_syntax_error(const char *file, const yaml_parser_t *parser) {
  const char *problem = parser->problem ? parser->problem : "cannot parse";
  int line = (int)parser->problem_mark.line + 1;
  if (parser->context)
    return job_fail(MB_ERR_JOB, file, line, NULL, "YAML syntax error: %s (%s, line %d)",
                    problem, parser->context, (int)parser->context_mark.line + 1);
  return job_fail(MB_ERR_JOB, file, line, NULL, "YAML syntax error: %s", problem);
}

/* Scan the document into idx (see the top of this file). */
static mb_error scan_yaml(const char *file, const unsigned char *buf, size_t len,
                          scan_index *idx) {
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) MB_FAIL(MB_ERR_MEMORY, "cannot create a YAML parser");
  yaml_parser_set_input_string(&parser, buf, len);
  scan_state st = {.file = file, .idx = idx};
  mb_error err = MB_SUCCESS;
  for (bool done = false; !done && err == MB_SUCCESS;) {
    yaml_event_t ev;
    if (!yaml_parser_parse(&parser, &ev)) {
      err = scan_syntax_error(file, &parser);
      break;
    }
    err = scan_event(&st, &ev);
    done = ev.type == YAML_STREAM_END_EVENT;
    yaml_event_delete(&ev);
  }
  while (st.depth > 0) free(st.frames[--st.depth].key_path);
  yaml_parser_delete(&parser);
  if (err != MB_SUCCESS) mb_error_trace(__FILE__, __LINE__, __func__);
  return err;
}

/* ------------------------------------------------------------ libcyaml schema */

typedef struct yaml_job {
  char *input;          /* input as a string ... */
  char **inputs;        /* ... or as a list */
  unsigned ninputs;
  char *output;
  char *partition;      /* NULL: absent */
  mb_distribute *distribute;
  mb_partitioner *partitioner;
  mb_halo_transport *halo;
  mb_schedule *schedule;
  mb_backend_kind *backend;
  mb_precision *precision;
} yaml_job;

static const cyaml_strval_t job_distribute_names[] = {
    {"per-mesh", MB_DISTRIBUTE_PER_MESH}, {"partitioned", MB_DISTRIBUTE_PARTITIONED}};
static const cyaml_strval_t job_partitioner_names[] = {{"metis", MB_PARTITIONER_METIS},
                                                       {"parmetis", MB_PARTITIONER_PARMETIS},
                                                       {"blocks", MB_PARTITIONER_BLOCKS}};
static const cyaml_strval_t job_halo_names[] = {
    {"auto", MB_HALO_AUTO}, {"mpi", MB_HALO_MPI}, {"nccl", MB_HALO_NCCL}, {"ipc", MB_HALO_IPC}};
static const cyaml_strval_t job_schedule_names[] = {{"static", MB_SCHEDULE_STATIC},
                                                    {"dynamic", MB_SCHEDULE_DYNAMIC}};
static const cyaml_strval_t job_backend_names[] = {
    {"auto", MB_BACKEND_AUTO}, {"cpu", MB_BACKEND_CPU}, {"cuda", MB_BACKEND_CUDA}};
static const cyaml_strval_t job_precision_names[] = {{"float64", MB_PRECISION_FLOAT64},
                                                     {"float32", MB_PRECISION_FLOAT32}};
#define MB_JOB_OPT (CYAML_FLAG_OPTIONAL)
#define MB_JOB_ENUM_OPT (CYAML_FLAG_OPTIONAL | CYAML_FLAG_STRICT)

static const cyaml_schema_value_t job_string_schema = {
    CYAML_VALUE_STRING(CYAML_FLAG_POINTER, char, 0, CYAML_UNLIMITED)};

/* The keys after `input`, shared by both schemas. */
#define MB_JOB_COMMON_FIELDS                                                              \
  CYAML_FIELD_STRING_PTR("output", CYAML_FLAG_DEFAULT, yaml_job, output, 0, CYAML_UNLIMITED), \
      CYAML_FIELD_STRING_PTR("partition", MB_JOB_OPT, yaml_job, partition, 0, CYAML_UNLIMITED), \
      CYAML_FIELD_ENUM_PTR("distribute", MB_JOB_ENUM_OPT, yaml_job, distribute,             \
                           job_distribute_names, CYAML_ARRAY_LEN(job_distribute_names)),    \
      CYAML_FIELD_ENUM_PTR("partitioner", MB_JOB_ENUM_OPT, yaml_job, partitioner,           \
                           job_partitioner_names, CYAML_ARRAY_LEN(job_partitioner_names)),  \
      CYAML_FIELD_ENUM_PTR("halo", MB_JOB_ENUM_OPT, yaml_job, halo, job_halo_names,         \
                           CYAML_ARRAY_LEN(job_halo_names)),                                \
      CYAML_FIELD_ENUM_PTR("schedule", MB_JOB_ENUM_OPT, yaml_job, schedule,                 \
                           job_schedule_names, CYAML_ARRAY_LEN(job_schedule_names)),        \
      CYAML_FIELD_ENUM_PTR("backend", MB_JOB_ENUM_OPT, yaml_job, backend, job_backend_names, \
                           CYAML_ARRAY_LEN(job_backend_names)),                             \
      CYAML_FIELD_ENUM_PTR("precision", MB_JOB_ENUM_OPT, yaml_job, precision,               \
                           job_precision_names, CYAML_ARRAY_LEN(job_precision_names)),      \
      /* stages: checked against the op registry from the scan (job_stages) */             \
      CYAML_FIELD_IGNORE("stages", MB_JOB_OPT), CYAML_FIELD_END

static const cyaml_schema_field_t job_fields_input_string[] = {
    CYAML_FIELD_STRING_PTR("input", CYAML_FLAG_DEFAULT, yaml_job, input, 0, CYAML_UNLIMITED),
    MB_JOB_COMMON_FIELDS};

static const cyaml_schema_field_t job_fields_input_list[] = {
    CYAML_FIELD_SEQUENCE_COUNT("input", CYAML_FLAG_POINTER, yaml_job, inputs, ninputs,
                               &job_string_schema, 1, CYAML_UNLIMITED),
    MB_JOB_COMMON_FIELDS};

static const cyaml_schema_value_t job_schema_input_string = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, yaml_job, job_fields_input_string)};
static const cyaml_schema_value_t job_schema_input_list = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, yaml_job, job_fields_input_list)};

static const char job_top_keys[] = "input, output, partition, distribute, partitioner, halo, schedule, backend, precision, stages";

/* ------------------------------------------------------------ libcyaml messages */

typedef struct cy_log {
  char text[MB_JOB_LOG_LEN];
  size_t len;
} cy_log;

static void cy_log_fn(cyaml_log_t level, void *ctx, const char *fmt, va_list args) {
  (void)level;
  cy_log *log = ctx;
  if (log->len + 1 >= sizeof log->text) return;
  int n = vsnprintf(log->text + log->len, sizeof log->text - log->len, fmt, args);
  if (n > 0) log->len += (size_t)n;
  if (log->len >= sizeof log->text) log->len = sizeof log->text - 1;
}

typedef enum cy_frame_kind { CY_FRAME_FIELD, CY_FRAME_ENTRY, CY_FRAME_MAPPING } cy_frame_kind;

typedef struct cy_frame {
  cy_frame_kind kind;
  char name[128];  /* field name */
  long index;      /* entry index, 0-based */
} cy_frame;

/* libcyaml's first error and its backtrace, innermost frame first. */
typedef struct cy_report {
  char message[512];  /* without the "Load: " prefix */
  cy_frame frames[MB_JOB_MAX_DEPTH];
  int nframes;
} cy_report;

static void cy_parse_frame(const char *line, cy_report *rep) {
  static const char field[] = "in mapping field '", entry[] = "in sequence entry '",
                    mapping[] = "in mapping";
  if (rep->nframes == MB_JOB_MAX_DEPTH) return;
  cy_frame *f = &rep->frames[rep->nframes];
  memset(f, 0, sizeof *f);
  if (strncmp(line, field, sizeof field - 1) == 0) {
    const char *name = line + sizeof field - 1;
    const char *end = strchr(name, '\'');
    size_t n = end ? (size_t)(end - name) : strlen(name);
    if (n >= sizeof f->name) n = sizeof f->name - 1;
    memcpy(f->name, name, n);
    f->kind = CY_FRAME_FIELD;
  } else if (strncmp(line, entry, sizeof entry - 1) == 0) {
    f->kind = CY_FRAME_ENTRY;
    f->index = strtol(line + sizeof entry - 1, NULL, 10) - 1;  /* libcyaml counts from 1 */
  } else if (strncmp(line, mapping, sizeof mapping - 1) == 0) {
    f->kind = CY_FRAME_MAPPING;
  } else {
    return;
  }
  rep->nframes++;
}

static void cy_parse_log(const cy_log *log, cy_report *rep) {
  memset(rep, 0, sizeof *rep);
  const char *p = log->text;
  while (*p) {
    const char *eol = strchr(p, '\n');
    size_t n = eol ? (size_t)(eol - p) : strlen(p);
    char line[512];
    if (n >= sizeof line) n = sizeof line - 1;
    memcpy(line, p, n);
    line[n] = '\0';
    const char *text = strncmp(line, "Load: ", 6) == 0 ? line + 6 : line;
    while (*text == ' ') text++;
    if (strncmp(text, "in ", 3) == 0)
      cy_parse_frame(text, rep);
    else if (!rep->message[0] && strncmp(text, "Backtrace", 9) != 0)
      snprintf(rep->message, sizeof rep->message, "%s", text);
    p = eol ? eol + 1 : p + n;
  }
}

/* Key path of frames [skip, nframes), outermost first, in buf. */
static void cy_frames_path(const cy_report *rep, int skip, char *buf, size_t len) {
  buf[0] = '\0';
  for (int i = rep->nframes - 1; i >= skip; i--) {
    const cy_frame *f = &rep->frames[i];
    size_t used = strlen(buf);
    if (f->kind == CY_FRAME_FIELD)
      snprintf(buf + used, len - used, "%s%s", used ? "." : "", f->name);
    else if (f->kind == CY_FRAME_ENTRY)
      snprintf(buf + used, len - used, "[%ld]", f->index);
  }
}

/* The text after a "Prefix: " in message, quotes removed, in buf. */
static const char *cy_message_value(const char *message, const char *prefix, char *buf,
                                    size_t len) {
  const char *v = message + strlen(prefix);
  size_t n = strlen(v);
  if (n >= len) n = len - 1;
  memcpy(buf, v, n);
  buf[n] = '\0';
  if (n >= 2 && buf[0] == '\'' && buf[n - 1] == '\'') {
    memmove(buf, buf + 1, n - 2);
    buf[n - 2] = '\0';
  }
  return buf;
}

static bool starts_with(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The allowed names of an enum key ("backend" -> "auto, cpu, cuda") in buf. */
static const char *job_enum_choices(const char *path, char *buf, size_t len) {
  static const struct {
    const char *key;
    const cyaml_strval_t *names;
    size_t n;
  } table[] = {
      {"distribute", job_distribute_names, CYAML_ARRAY_LEN(job_distribute_names)},
      {"partitioner", job_partitioner_names, CYAML_ARRAY_LEN(job_partitioner_names)},
      {"halo", job_halo_names, CYAML_ARRAY_LEN(job_halo_names)},
      {"schedule", job_schedule_names, CYAML_ARRAY_LEN(job_schedule_names)},
      {"backend", job_backend_names, CYAML_ARRAY_LEN(job_backend_names)},
      {"precision", job_precision_names, CYAML_ARRAY_LEN(job_precision_names)}};
  const char *dot = strrchr(path, '.');
  const char *key = dot ? dot + 1 : path;
  buf[0] = '\0';
  for (size_t t = 0; t < CYAML_ARRAY_LEN(table); t++) {
    if (strcmp(table[t].key, key) != 0) continue;
    for (size_t i = 0; i < table[t].n; i++) {
      size_t used = strlen(buf);
      snprintf(buf + used, len - used, "%s%s", i ? ", " : "", table[t].names[i].str);
    }
  }
  return buf;
}

/* "SEQUENCE_START" -> "a list", ... (libcyaml's event and type names). */
static const char *cy_kind_words(const char *name) {
  static const struct {
    const char *name, *words;
  } table[] = {{"SEQUENCE", "a list"},   {"MAPPING", "a mapping"}, {"SCALAR", "a single value"},
               {"STRING", "a string"},   {"FLOAT", "a number"},    {"INT", "an integer"},
               {"ENUM", "a name"},       {"ALIAS", "an alias"}};
  for (size_t i = 0; i < CYAML_ARRAY_LEN(table); i++)
    if (starts_with(name, table[i].name)) return table[i].words;
  return name;
}

/* "Expecting STRING, got event: SEQUENCE_START" */
static mb_error cy_type_error(const char *file, const scan_index *idx, const char *path,
                              const char *message) {
  char expected[64] = "", got[64] = "";
  sscanf(message, "Expecting %63[A-Z_], got event: %63[A-Z_]", expected, got);
  const char *got_words = cy_kind_words(got);
  if (!*path)
    return job_fail(MB_ERR_JOB, file, scan_line(idx, ""), NULL,
                    "a job file is a mapping of keys (%s), not %s", job_top_keys, got_words);
  if (strcmp(path, "input") == 0)
    return job_fail(MB_ERR_JOB, file, scan_line(idx, path), path,
                    "expected a string or a list of strings, got %s", got_words);
  return job_fail(MB_ERR_JOB, file, scan_line(idx, path), path, "expected %s, got %s",
                  cy_kind_words(expected), got_words);
}

/* Turn libcyaml's logged failure into one MB_ERR_JOB message. */
static mb_error cy_translate(const char *file, const scan_index *idx, const cy_log *log,
                             cyaml_err_t cerr) {
  cy_report rep;
  cy_parse_log(log, &rep);
  const char *msg = rep.message;
  char path[512], value[256], choices[256];
  bool inner_field = rep.nframes > 0 && rep.frames[0].kind == CY_FRAME_FIELD;
  bool inner_entry = rep.nframes > 0 && rep.frames[0].kind == CY_FRAME_ENTRY;
  if (starts_with(msg, "Missing required mapping field: ")) {
    /* The innermost frame is the last field read, not the missing one. */
    cy_frames_path(&rep, inner_field ? 1 : 0, path, sizeof path);
    cy_message_value(msg, "Missing required mapping field: ", value, sizeof value);
    return job_fail(MB_ERR_JOB, file, *path ? scan_line(idx, path) : 0, path,
                    "missing required key '%s'", value);
  }
  if (starts_with(msg, "Insufficient entries")) {
    cy_frames_path(&rep, inner_entry ? 1 : 0, path, sizeof path);
    return job_fail(MB_ERR_JOB, file, scan_line(idx, path), path, "%s",
                    strcmp(path, "stages") == 0 ? "at least one stage is required"
                                                : "at least one entry is required");
  }
  cy_frames_path(&rep, 0, path, sizeof path);
  int line = scan_line(idx, path);
  if (starts_with(msg, "Unexpected key: ")) {
    cy_message_value(msg, "Unexpected key: ", value, sizeof value);
    char *key = job_key_path(path, value);
    line = key ? scan_line(idx, key) : 0;
    free(key);
    return job_fail(MB_ERR_JOB, file, line, path, "unknown key '%s' (valid keys: %s)", value,
                    job_top_keys);
  }
  if (starts_with(msg, "Invalid ENUM value: "))
    return job_fail(MB_ERR_JOB, file, line, path, "'%s' is not one of %s",
                    cy_message_value(msg, "Invalid ENUM value: ", value, sizeof value),
                    job_enum_choices(path, choices, sizeof choices));
  if (starts_with(msg, "Invalid FLOAT value: "))
    return job_fail(MB_ERR_JOB, file, line, path, "'%s' is not a number",
                    cy_message_value(msg, "Invalid FLOAT value: ", value, sizeof value));
  if (starts_with(msg, "Expecting ")) return cy_type_error(file, idx, path, msg);
  return job_fail(MB_ERR_JOB, file, line, path, "%s (libcyaml: %s)",
                  *msg ? msg : "rejected", cyaml_strerror(cerr));
}

/* Load with libcyaml; the schema depends on whether `input` is a list. */
static mb_error cy_load(const char *file, const unsigned char *buf, size_t len,
                        const scan_index *idx, yaml_job **data,
                        const cyaml_schema_value_t **schema) {
  const scan_node *input = scan_find(idx, "input");
  *schema = input && input->kind == SCAN_SEQUENCE ? &job_schema_input_list
                                                  : &job_schema_input_string;
  cy_log log = {.len = 0};
  const cyaml_config_t config = {.log_fn = cy_log_fn,
                                 .log_ctx = &log,
                                 .mem_fn = cyaml_mem,
                                 .log_level = CYAML_LOG_ERROR,
                                 .flags = CYAML_CFG_DEFAULT | CYAML_CFG_NO_ALIAS};
  *data = NULL;
  cyaml_err_t cerr = cyaml_load_data(buf, len, &config, *schema, (cyaml_data_t **)data, NULL);
  if (cerr == CYAML_ERR_OOM) MB_FAIL(MB_ERR_MEMORY, "%s: out of memory loading the job", file);
  if (cerr != CYAML_OK) MB_CALL(cy_translate(file, idx, &log, cerr));
  if (!*data)
    return job_fail(MB_ERR_JOB, file, 0, NULL, "the job file is empty (missing required key 'input')");
  return MB_SUCCESS;
}

static void cy_free(const cyaml_schema_value_t *schema, yaml_job *data) {
  if (!data) return;
  const cyaml_config_t config = {.mem_fn = cyaml_mem, .log_level = CYAML_LOG_ERROR};
  cyaml_free(&config, schema, data, 0);
}

/* ------------------------------------------------------------ validation */

typedef struct job_ctx {
  const char *file;
  const scan_index *idx;
} job_ctx;

/* A string value that must not be empty or null (libcyaml 1.3.1 reads a
 * plain ~ as the string "~"). */
static mb_error check_path_value(const job_ctx *c, const char *path, const char *value) {
  const scan_node *node = scan_find(c->idx, path);
  if (!value || !*value || (node && node->null))
    return job_fail(MB_ERR_JOB, c->file, scan_line(c->idx, path), path, "must not be empty");
  return MB_SUCCESS;
}

/* "a list", "a mapping", "a single value" */
static const char *scan_kind_words(scan_kind k) {
  return k == SCAN_SEQUENCE ? "a list" : k == SCAN_MAPPING ? "a mapping" : "a single value";
}

static const char *param_type_words(mb_param_type t) {
  return t == MB_PARAM_INT ? "an integer" : t == MB_PARAM_REAL ? "a number"
       : t == MB_PARAM_NAMES ? "a list of names" : t == MB_PARAM_PATH ? "a path" : "a name";
}

/* An op other than `op` that takes `key`, or NULL. */
static const mb_op_info *op_taking(const mb_op_info *op, const char *key) {
  for (int i = 0; i < mb_ops_count(); i++)
    if (mb_ops_at(i) != op && mb_op_param_index(mb_ops_at(i), key) >= 0) return mb_ops_at(i);
  return NULL;
}

/* "op, lambda, mu, ..." */
static void op_keys(const mb_op_info *op, char *buf, size_t len) {
  size_t used = (size_t)snprintf(buf, len, "op");
  for (int k = 0; k < op->nparams && used < len; k++)
    used += (size_t)snprintf(buf + used, len - used, ", %s", op->params[k].key);
}

/* The op of stage s, from its `op` key. */
static mb_error stage_op(const job_ctx *c, const char *spath, const scan_node *entry,
                         const mb_op_info **op) {
  char path[96], names[512];
  snprintf(path, sizeof path, "%s.op", spath);
  const scan_node *node = scan_find(c->idx, path);
  if (!node) return job_fail(MB_ERR_JOB, c->file, entry->line, spath, "missing required key 'op'");
  if (node->kind != SCAN_SCALAR)
    return job_fail(MB_ERR_JOB, c->file, node->line, path, "expected a name, got %s",
                    scan_kind_words(node->kind));
  *op = mb_ops_find(node->text);
  mb_ops_names(names, sizeof names);
  if (!*op)
    return job_fail(MB_ERR_JOB, c->file, node->line, path, "'%s' is not one of %s", node->text,
                    names);
  return MB_SUCCESS;
}

/* One key of a stage: known to the op, a value of the right form, in range. */
static mb_error stage_key(const job_ctx *c, const char *spath, const scan_node *node,
                          const mb_op_info *op, void *params, unsigned char *given) {
  const char *key = node->path + strlen(spath) + 1;
  if (!strcmp(key, "op")) return MB_SUCCESS;
  int k = mb_op_param_index(op, key);
  if (k < 0) {
    const mb_op_info *other = op_taking(op, key);
    char keys[512];
    op_keys(op, keys, sizeof keys);
    if (other)
      return job_fail(MB_ERR_JOB, c->file, node->line, node->path,
                      "only %s stages take %s (this stage is %s; its keys: %s)", other->name,
                      key, op->name, keys);
    return job_fail(MB_ERR_JOB, c->file, node->line, spath, "unknown key '%s' (valid keys: %s)",
                    key, keys);
  }
  const mb_param *p = &op->params[k];
  char msg[MB_JOB_MSG_LEN], list[MB_PARAM_NAMES_LEN + 2] = "";
  const char *text = node->text ? node->text : "";
  if (p->type == MB_PARAM_NAMES && node->kind == SCAN_SEQUENCE) { /* [u, v]: "u,v" */
    size_t used = 0;
    const size_t plen = strlen(node->path);
    for (size_t i = (size_t)(node - c->idx->nodes) + 1; i < c->idx->n; i++) {
      const scan_node *item = &c->idx->nodes[i];
      if (strncmp(item->path, node->path, plen) || item->path[plen] != '[') break;
      if (item->kind != SCAN_SCALAR || !item->text || !*item->text || strchr(item->text, ','))
        return job_fail(MB_ERR_JOB, c->file, item->line, item->path, "expected a name");
      used += (size_t)snprintf(list + used, used < sizeof list ? sizeof list - used : 0, "%s%s",
                               used ? "," : "", item->text);
      if (used >= sizeof list - 1) break; /* too long: mb_param_parse says so */
    }
    if (!used)
      return job_fail(MB_ERR_JOB, c->file, node->line, node->path,
                      "an empty list (leave the key out for the default)");
    text = list;
  } else if (node->kind != SCAN_SCALAR) {
    return job_fail(MB_ERR_JOB, c->file, node->line, node->path, "expected %s, got %s",
                    param_type_words(p->type), scan_kind_words(node->kind));
  }
  if (mb_param_parse(p, text, params, msg, sizeof msg))
    return job_fail(MB_ERR_JOB, c->file, node->line, node->path, "%s", msg);
  given[k] = 1;
  return MB_SUCCESS;
}

/* A direct child "stages[s].key" of the stage at spath. */
static bool stage_child(const char *spath, const char *path) {
  size_t n = strlen(spath);
  return !strncmp(path, spath, n) && path[n] == '.' && !strpbrk(path + n + 1, ".[");
}

static mb_error job_stage(const job_ctx *c, int s, mb_stage *st) {
  char spath[64];
  snprintf(spath, sizeof spath, "stages[%d]", s);
  const scan_node *entry = scan_find(c->idx, spath);
  if (entry->kind != SCAN_MAPPING)
    return job_fail(MB_ERR_JOB, c->file, entry->line, spath, "expected a mapping, got %s",
                    scan_kind_words(entry->kind));
  MB_CALL(stage_op(c, spath, entry, &st->op));
  const mb_op_info *op = st->op;
  st->line = entry->line;
  st->index = s;
  MB_CALLOC(st->params, op->params_size);
  mb_op_defaults(op, st->params);
  unsigned char given[64] = {0};
  MB_CHECK(op->nparams <= (int)sizeof given, MB_ERR_ARG, "op %s has too many keys", op->name);
  /* the stage's keys follow its node in document order, before the next stage */
  const size_t plen = strlen(spath);
  for (size_t i = (size_t)(entry - c->idx->nodes) + 1; i < c->idx->n; i++) {
    const char *q = c->idx->nodes[i].path;
    if (strncmp(q, spath, plen) || (q[plen] != '.' && q[plen] != '[')) break;
    if (stage_child(spath, q)) MB_CALL(stage_key(c, spath, &c->idx->nodes[i], op, st->params, given));
  }
  for (int k = 0; k < op->nparams; k++)
    if (op->params[k].required && !given[k])
      return job_fail(MB_ERR_JOB, c->file, entry->line, spath, "missing required key '%s'",
                      op->params[k].key);
  char msg[MB_JOB_MSG_LEN];
  int bad = 0;
  if (op->check && op->check(st->params, given, &bad, msg, sizeof msg)) {
    char path[128];
    snprintf(path, sizeof path, "%s.%s", spath, op->params[bad].key);
    return job_fail(MB_ERR_JOB, c->file, scan_line(c->idx, path), path, "%s", msg);
  }
  return MB_SUCCESS;
}

/* The stages: a list of at least one mapping, each op's keys from its
 * parameter table (mb_op.h), consecutive kinds that fit. */
static mb_error job_stages(const job_ctx *c, mb_job *job) {
  const scan_node *node = scan_find(c->idx, "stages");
  if (!node) return job_fail(MB_ERR_JOB, c->file, 0, NULL, "missing required key 'stages'");
  if (node->kind != SCAN_SEQUENCE)
    return job_fail(MB_ERR_JOB, c->file, node->line, "stages", "expected a list, got %s",
                    scan_kind_words(node->kind));
  int n = 0;
  for (;; n++) {
    char spath[64];
    snprintf(spath, sizeof spath, "stages[%d]", n);
    if (!scan_find(c->idx, spath)) break;
    if (n == MB_JOB_MAX_STAGES)
      return job_fail(MB_ERR_JOB, c->file, node->line, "stages",
                      "more than %d stages: split the job, or raise iterations of one stage",
                      MB_JOB_MAX_STAGES);
  }
  if (n == 0)
    return job_fail(MB_ERR_JOB, c->file, node->line, "stages", "at least one stage is required");
  MB_CALLOC(job->stages, n);
  job->nstages = n;
  for (int s = 0; s < n; s++) {
    MB_CALL(job_stage(c, s, &job->stages[s]));
    job->stages[s].file = job->path;
    const mb_op_info *prev = s ? job->stages[s - 1].op : NULL;
    if (prev && prev->out != job->stages[s].op->in) {
      char path[64];
      snprintf(path, sizeof path, "stages[%d].op", s);
      return job_fail(MB_ERR_JOB, c->file, scan_line(c->idx, path), path,
                      "%s reads %s datasets, but the stage before it (%s) writes %s",
                      job->stages[s].op->name, mb_kind_name(job->stages[s].op->in), prev->name,
                      mb_kind_name(prev->out));
    }
  }
  return MB_SUCCESS;
}

/* Every op of a partitioned job needs a partitioned form. */
static mb_error job_check_partitioned(const job_ctx *c, const mb_job *job) {
  if (job->distribute != MB_DISTRIBUTE_PARTITIONED) return MB_SUCCESS;
  for (int s = 0; s < job->nstages; s++) {
    const mb_op_info *op = job->stages[s].op;
    const mb_split how = mb_op_partitioned(op), first = mb_op_partitioned(job->stages[0].op);
    if (how == MB_SPLIT_NONE)
      return job_fail(MB_ERR_JOB, c->file, scan_line(c->idx, "distribute"), "distribute",
                      "stage %d (%s) runs per mesh only; use distribute: per-mesh", s, op->name);
    if (s > 0 && how != first)
      return job_fail(MB_ERR_JOB, c->file, scan_line(c->idx, "distribute"), "distribute",
                      "stage %d (%s) splits the mesh by %s and stage 0 (%s) by %s; a "
                      "partitioned job splits it one way (use two jobs)",
                      s, op->name, mb_split_name(how), job->stages[0].op->name,
                      mb_split_name(first));
  }
  return MB_SUCCESS;
}

/* ------------------------------------------------------------ paths */

/* path resolved against dir (the job file's folder, "" for the current one);
 * absolute paths are kept. */
static char *job_resolve(const char *dir, const char *path) {
  if (path[0] == '/' || !*dir) return job_strdup(path);
  size_t n = strlen(dir);
  return job_strprintf("%s%s%s", dir, dir[n - 1] == '/' ? "" : "/", path);
}

/* The folder part of a file path ("jobs/a.yaml" -> "jobs", "a.yaml" -> ""). */
static char *job_dirname(const char *file) {
  const char *slash = strrchr(file, '/');
  if (!slash) return job_strdup("");
  if (slash == file) return job_strdup("/");
  return job_strprintf("%.*s", (int)(slash - file), file);
}

static mb_error job_paths(const job_ctx *c, const yaml_job *y, mb_job *job) {
  char *dir = job_dirname(c->file);
  if (!dir) MB_FAIL(MB_ERR_MEMORY, "out of memory");
  mb_error err = MB_SUCCESS;
  job->ninputs = y->inputs ? (int)y->ninputs : 1;
  job->inputs = calloc((size_t)job->ninputs, sizeof *job->inputs);
  job->input_origins = calloc((size_t)job->ninputs, sizeof *job->input_origins);
  if (!job->inputs || !job->input_origins) {
    free(job->inputs);
    free(job->input_origins);
    job->inputs = NULL;
    job->input_origins = NULL;
    job->ninputs = 0;
  }
  for (int i = 0; i < job->ninputs && err == MB_SUCCESS; i++) {
    char key[64];
    if (y->inputs) snprintf(key, sizeof key, "input[%d]", i);
    else snprintf(key, sizeof key, "input");
    const char *value = y->inputs ? y->inputs[i] : y->input;
    err = check_path_value(c, key, value);
    const int line = scan_line(c->idx, key); /* for the runner's messages about it */
    if (err == MB_SUCCESS && !(job->input_origins[i] = line > 0
                                   ? job_strprintf("%s:%d: %s", c->file, line, key)
                                   : job_strprintf("%s: %s", c->file, key)))
      err = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
    if (err == MB_SUCCESS && !(job->inputs[i] = job_resolve(dir, value)))
      err = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  }
  if (err == MB_SUCCESS && !job->inputs)
    err = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  if (err == MB_SUCCESS) err = check_path_value(c, "output", y->output);
  if (err == MB_SUCCESS && !(job->output = job_resolve(dir, y->output)))
    err = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  if (err == MB_SUCCESS && y->partition) err = check_path_value(c, "partition", y->partition);
  if (err == MB_SUCCESS && y->partition && !(job->partition = job_resolve(dir, y->partition)))
    err = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  free(dir);
  return err;
}

/* Fill job from the loaded data (defaults, ranges, paths). */
static mb_error job_build(const job_ctx *c, const yaml_job *y, mb_job *job) {
  MB_CALL(job_paths(c, y, job));
  job->distribute = y->distribute ? *y->distribute : MB_DISTRIBUTE_PER_MESH;
  job->partitioner = y->partitioner ? *y->partitioner : MB_PARTITIONER_METIS;
  if (job->partitioner != MB_PARTITIONER_METIS && job->partition)
    return job_fail(MB_ERR_JOB, c->file, scan_line(c->idx, "partitioner"), "partitioner",
                    "%s", job->partitioner == MB_PARTITIONER_PARMETIS
                    ? "parmetis computes the partition in parallel; it cannot be combined with "
                      "'partition' (drop one of the two keys)"
                    : "blocks takes the blocks of rows as the partition; it cannot be combined "
                      "with 'partition' (drop one of the two keys)");
  job->halo = y->halo ? *y->halo : MB_HALO_AUTO;
  job->schedule = y->schedule ? *y->schedule : MB_SCHEDULE_STATIC;
  job->backend = y->backend ? *y->backend : MB_BACKEND_AUTO;
  job->precision = y->precision ? *y->precision : MB_PRECISION_FLOAT64;
  MB_CALL(job_stages(c, job));
  MB_CALL(job_check_partitioned(c, job));
  return MB_SUCCESS;
}

/* ------------------------------------------------------------ public */

mb_error mb_job_load(const char *path, mb_job **job) {
  MB_CHECK(job != NULL, MB_ERR_ARG, "mb_job_load: job is NULL");
  *job = NULL;
  MB_CHECK(path != NULL && *path, MB_ERR_ARG, "mb_job_load: no job file path given");
  unsigned char *buf = NULL;
  size_t len = 0;
  MB_CALL(job_read_file(path, &buf, &len));
  scan_index idx = {0};
  yaml_job *data = NULL;
  const cyaml_schema_value_t *schema = NULL;
  mb_job *out = NULL;
  mb_error err;
  MB_CALL_GOTO(err, done, scan_yaml(path, buf, len, &idx));
  MB_CALL_GOTO(err, done, cy_load(path, buf, len, &idx, &data, &schema));
  out = calloc(1, sizeof *out);
  if (!out || !(out->path = job_strdup(path))) {
    err = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
    goto done;
  }
  const job_ctx ctx = {.file = path, .idx = &idx};
  MB_CALL_GOTO(err, done, job_build(&ctx, data, out));
  *job = out;
  out = NULL;
done:
  mb_job_free(out);
  cy_free(schema, data);
  scan_index_free(&idx);
  free(buf);
  return err;
}

void mb_job_free(mb_job *job) {
  if (!job) return;
  if (job->inputs)
    for (int i = 0; i < job->ninputs; i++) free(job->inputs[i]);
  free(job->inputs);
  if (job->input_origins)
    for (int i = 0; i < job->ninputs; i++) free(job->input_origins[i]);
  free(job->input_origins);
  free(job->output);
  free(job->partition);
  for (int s = 0; job->stages && s < job->nstages; s++) free(job->stages[s].params);
  free(job->stages);
  free(job->path);
  free(job);
}
