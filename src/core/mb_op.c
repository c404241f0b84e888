/* meshbatch: parameter tables of ops (see mb_op.h). */
#include "mb_op.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mb_log.h"

const char *mb_backend_kind_name(mb_backend_kind b) {
  switch (b) {
  case MB_BACKEND_AUTO: return "auto";
  case MB_BACKEND_CPU: return "cpu";
  case MB_BACKEND_CUDA: return "cuda";
  }
  return "unknown";
}

const char *mb_precision_name(mb_precision p) {
  switch (p) {
  case MB_PRECISION_FLOAT64: return "float64";
  case MB_PRECISION_FLOAT32: return "float32";
  }
  return "unknown";
}

void mb_op_computed(const mb_op_ctx *ctx, mb_precision p) {
  if (ctx && ctx->computed) *ctx->computed |= MB_COMPUTED_BIT(p);
}

/* ------------------------------------------------------------ stopping */

/* MESHBATCH_TEST_STEP_DELAY_MS, for the tests only: a sleep of that long
 * per step done since the last query (at least one, at most 0.2 s in all;
 * a signal cuts it short). */
static void test_delay(const mb_op_stop *st, double done) {
  static long ms = -1;
  if (ms < 0) {
    const char *e = getenv("MESHBATCH_TEST_STEP_DELAY_MS");
    ms = e ? strtol(e, NULL, 10) : 0;
    if (ms < 0) ms = 0;
  }
  if (ms <= 0) return;
  const double steps = done > st->last_done ? done - st->last_done : 1.0;
  long total = (long)(steps * (double)ms);
  if (total > 200) total = 200;
  const struct timespec t = {total / 1000, (total % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

/* Rank 0's progress line: the fraction of the loop done and the time left
 * at the loop's rate so far (a loop starts where done falls back). */
static void progress(mb_op_stop *st, double done, double total) {
  const double now = mb_wtime();
  if (st->loop_t0 == 0 || done < st->last_done) {
    st->loop_t0 = now;
    if (st->last_print == 0) st->last_print = now;
  }
  st->last_done = done;
  if (!st->progress || total <= 0 || done <= 0 || now - st->last_print < st->interval_s) return;
  st->last_print = now;
  const double f = done < total ? done / total : 1.0;
  const double left = (now - st->loop_t0) * (1.0 - f) / f;
  mb_log(MB_LOG_NORMAL, "[rank 0] %s: %.1f %% of %.0f steps done, about %.0f s left",
         st->name ? st->name : "mesh", 100.0 * f, total, left);
}

int mb_op_should_stop(const mb_op_ctx *ctx, double done, double total) {
  if (!ctx || !ctx->stop) return 0;
  mb_op_stop *st = ctx->stop;
  if (st->stopped) return 1;
  test_delay(st, done);
  progress(st, done, total);
  const int local = st->flag && *st->flag;
  if (st->comm == MPI_COMM_NULL) return st->stopped = local;
  /* partitioned: the result of the allreduce started at the last call,
   * then the next one started with the flag as it is now */
  if (st->pending) {
    st->pending = 0;
    if (MPI_Wait(&st->req, MPI_STATUS_IGNORE) != MPI_SUCCESS) st->agreed = 0;
    if (st->agreed) return st->stopped = 1;
  }
  st->local = local;
  if (MPI_Iallreduce(&st->local, &st->agreed, 1, MPI_INT, MPI_MAX, st->comm, &st->req) ==
      MPI_SUCCESS)
    st->pending = 1;
  return 0;
}

mb_error mb_op_stopped(const mb_op_ctx *ctx) {
  (void)ctx;
  MB_FAIL(MB_ERR_IO, "stopped by a signal (SIGTERM or SIGINT) in the middle of the mesh");
}

void mb_op_stop_end(mb_op_stop *st) {
  if (!st || !st->pending) return;
  MPI_Wait(&st->req, MPI_STATUS_IGNORE);
  st->pending = 0;
}

const char *mb_computed_name(unsigned bits) {
  const unsigned f64 = MB_COMPUTED_BIT(MB_PRECISION_FLOAT64);
  const unsigned f32 = MB_COMPUTED_BIT(MB_PRECISION_FLOAT32);
  if ((bits & f64) && (bits & f32)) return "float32,float64";
  if (bits & f64) return "float64";
  if (bits & f32) return "float32";
  return "none";
}

static int *int_at(const mb_param *p, void *params) { return (int *)((char *)params + p->offset); }
static double *real_at(const mb_param *p, void *params) {
  return (double *)((char *)params + p->offset);
}

void mb_param_format(const mb_param *p, const void *params, char *buf, size_t len) {
  void *q = (void *)params;
  switch (p->type) {
  case MB_PARAM_INT: snprintf(buf, len, "%d", *int_at(p, q)); break;
  case MB_PARAM_REAL: snprintf(buf, len, "%.17g", *real_at(p, q)); break;
  case MB_PARAM_NAME: {
    int v = *int_at(p, q), n = 0;
    while (p->names[n]) n++;
    snprintf(buf, len, "%s", v >= 0 && v < n ? p->names[v] : "unknown");
    break;
  }
  case MB_PARAM_NAMES: { /* "[u,v]", or "all" where not given */
    const char *t = (const char *)q + p->offset;
    if (*t) snprintf(buf, len, "[%s]", t);
    else snprintf(buf, len, "all");
    break;
  }
  case MB_PARAM_PATH: { /* the path, or "none" where not given */
    const char *t = (const char *)q + p->offset;
    snprintf(buf, len, "%s", *t ? t : "none");
    break;
  }
  }
}

void mb_op_defaults(const mb_op_info *op, void *params) {
  memset(params, 0, op->params_size);
  for (int k = 0; k < op->nparams; k++) {
    const mb_param *p = &op->params[k];
    if (p->required) continue;
    if (p->type == MB_PARAM_REAL) *real_at(p, params) = p->dflt;
    else if (p->type != MB_PARAM_NAMES && p->type != MB_PARAM_PATH)
      *int_at(p, params) = (int)p->dflt; /* NAMES, PATH: "" */
  }
  if (op->init) op->init(params);
}

/* "[0, 100000000]", "(0, 1]" */
static void range_text(const mb_param *p, char *buf, size_t len) {
  if (p->type == MB_PARAM_INT)
    snprintf(buf, len, "%c%lld, %lld%c", p->lo_open ? '(' : '[', (long long)p->lo,
             (long long)p->hi, p->hi_open ? ')' : ']');
  else
    snprintf(buf, len, "%c%g, %g%c", p->lo_open ? '(' : '[', p->lo, p->hi, p->hi_open ? ')' : ']');
}

static int in_range(const mb_param *p, double v) {
  if (p->lo_open ? !(v > p->lo) : !(v >= p->lo)) return 0;
  if (p->hi_open ? !(v < p->hi) : !(v <= p->hi)) return 0;
  return 1;
}

int mb_param_parse(const mb_param *p, const char *text, void *params, char *msg, size_t len) {
  char range[96];
  range_text(p, range, sizeof range);
  if (p->type == MB_PARAM_NAMES) { /* "u,v": names without spaces, none empty */
    const size_t n = strlen(text);
    if (n >= MB_PARAM_NAMES_LEN) {
      snprintf(msg, len, "a list of %zu characters; at most %d", n, MB_PARAM_NAMES_LEN - 1);
      return 1;
    }
    for (const char *a = text;; a++) {
      const size_t w = strcspn(a, ",");
      if (!w || strcspn(a, " \t") < w) {
        snprintf(msg, len, "'%.*s' is not a name (a list of names: [NAME, ...])", (int)w, a);
        return 1;
      }
      a += w;
      if (!*a) break;
    }
    memcpy((char *)params + p->offset, text, n + 1);
    return 0;
  }
  if (p->type == MB_PARAM_PATH) { /* one path, taken as written */
    const size_t n = strlen(text);
    if (!n) {
      snprintf(msg, len, "an empty path (leave the key out for the default)");
      return 1;
    }
    if (n >= MB_PARAM_NAMES_LEN) {
      snprintf(msg, len, "a path of %zu characters; at most %d", n, MB_PARAM_NAMES_LEN - 1);
      return 1;
    }
    memcpy((char *)params + p->offset, text, n + 1);
    return 0;
  }
  if (p->type == MB_PARAM_NAME) {
    for (int i = 0; p->names[i]; i++)
      if (!strcmp(text, p->names[i])) {
        *int_at(p, params) = i;
        return 0;
      }
    size_t used = (size_t)snprintf(msg, len, "'%s' is not one of ", text);
    for (int i = 0; p->names[i] && used < len; i++)
      used += (size_t)snprintf(msg + used, len - used, "%s%s", i ? ", " : "", p->names[i]);
    return 1;
  }
  if (p->type == MB_PARAM_INT) {
    /* Decimal digits only: YAML readers are lenient ("3.5" -> 3, "010" -> 8). */
    const char *digits = text + (*text == '-' || *text == '+');
    if (!*digits || strspn(digits, "0123456789") != strlen(digits)) {
      snprintf(msg, len, "'%s' is not an integer", text);
      return 1;
    }
    errno = 0;
    long long v = strtoll(text, NULL, 10);
    if (errno == ERANGE) {
      snprintf(msg, len, "'%s' is not an integer in range %s", text, range);
      return 1;
    }
    if (!in_range(p, (double)v)) {
      snprintf(msg, len, "value %s out of range %s", text, range);
      return 1;
    }
    *int_at(p, params) = (int)v;
    return 0;
  }
  char *end = NULL;
  errno = 0;
  double v = strtod(text, &end);
  if (!*text || end == text || *end || !isfinite(v)) {
    snprintf(msg, len, "'%s' is not a number", text);
    return 1;
  }
  if (!in_range(p, v)) {
    snprintf(msg, len, "value %g out of range %s", v, range);
    return 1;
  }
  *real_at(p, params) = v;
  return 0;
}

void mb_stage_describe(const mb_stage *stage, char *buf, size_t len) {
  const mb_op_info *op = stage->op;
  size_t used = (size_t)snprintf(buf, len, "%s", op->name);
  for (int k = 0; k < op->nparams && used < len; k++) {
    char value[MB_PARAM_NAMES_LEN + 8];
    mb_param_format(&op->params[k], stage->params, value, sizeof value);
    used += (size_t)snprintf(buf + used, len - used, " %s=%s", op->params[k].key, value);
  }
}

int mb_op_param_index(const mb_op_info *op, const char *key) {
  for (int k = 0; k < op->nparams; k++)
    if (!strcmp(op->params[k].key, key)) return k;
  return -1;
}

static int backend_slot(const mb_backend *b) {
  return b->kind == MB_BACKEND_CUDA ? MB_BACKEND_SLOT_CUDA : MB_BACKEND_SLOT_CPU;
}

mb_op_run_fn mb_op_run_for(const mb_op_info *op, const mb_backend *backend) {
  return op->run[backend_slot(backend)];
}

mb_op_run_partitioned_fn mb_op_run_partitioned_for(const mb_op_info *op,
                                                   const mb_backend *backend) {
  return op->run_partitioned[backend_slot(backend)];
}

mb_op_prepare_fn mb_op_prepare_for(const mb_op_info *op, const mb_backend *backend) {
  return op->prepared_free ? op->prepare[backend_slot(backend)] : NULL;
}

mb_split mb_op_partitioned(const mb_op_info *op) {
  if (op->run_partitioned[MB_BACKEND_SLOT_CPU] || op->run_partitioned[MB_BACKEND_SLOT_CUDA])
    return op->split;
  return MB_SPLIT_NONE;
}

const char *mb_partitioner_name(mb_partitioner p) {
  switch (p) {
  case MB_PARTITIONER_METIS: return "metis";
  case MB_PARTITIONER_PARMETIS: return "parmetis";
  case MB_PARTITIONER_BLOCKS: return "blocks";
  }
  return "unknown";
}

const char *mb_split_name(mb_split split) {
  switch (split) {
  case MB_SPLIT_VERTICES: return "vertices";
  case MB_SPLIT_FACES: return "faces";
  case MB_SPLIT_CELLS: return "grid blocks";
  default: return "none";
  }
}
