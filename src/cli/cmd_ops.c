/* meshbatch ops: the registered ops with their keys, defaults and kinds,
 * printed from the op registry's parameter tables (no op is named here). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "mb_log.h"
#include "mb_ops.h"

static const char ops_help[] =
    "usage: meshbatch ops [NAME]\n\n"
    "List the ops a job's stages can use: what each reads and writes, its\n"
    "backends, whether it runs partitioned, the method's source, and every key\n"
    "of its stage with type, allowed values, default and meaning. With NAME,\n"
    "only that op.\n";

static const char *type_name(mb_param_type t) {
  return t == MB_PARAM_INT ? "integer" : t == MB_PARAM_REAL ? "number"
       : t == MB_PARAM_NAMES ? "names" : t == MB_PARAM_PATH ? "path" : "name";
}

/* Widths of the key, allowed-values and default columns: the longest of
 * the ops listed, so that the columns of every op line up. */
typedef struct columns {
  int key, allowed, dflt;
} columns;

/* A key's allowed values and default, as printed. */
static void param_texts(const mb_param *p, char *allowed, size_t alen, char *dflt, size_t dlen) {
  snprintf(dflt, dlen, "required");
  allowed[0] = '\0';
  if (p->type == MB_PARAM_NAME) {
    size_t used = 0;
    for (int i = 0; p->names[i] && used < alen; i++)
      used += (size_t)snprintf(allowed + used, alen - used, "%s%s", i ? "|" : "",
                               p->names[i]);
    if (!p->required) snprintf(dflt, dlen, "%s", p->names[(int)p->dflt]);
  } else if (p->type == MB_PARAM_NAMES) {
    snprintf(allowed, alen, "[NAME, ...]");
    if (!p->required) snprintf(dflt, dlen, "all");
  } else if (p->type == MB_PARAM_PATH) {
    snprintf(allowed, alen, "FILE");
    if (!p->required) snprintf(dflt, dlen, "none");
  } else if (p->type == MB_PARAM_INT) {
    snprintf(allowed, alen, "%c%lld, %lld%c", p->lo_open ? '(' : '[', (long long)p->lo,
             (long long)p->hi, p->hi_open ? ')' : ']');
    if (!p->required) snprintf(dflt, dlen, "%lld", (long long)p->dflt);
  } else {
    snprintf(allowed, alen, "%c%g, %g%c", p->lo_open ? '(' : '[', p->lo, p->hi,
             p->hi_open ? ')' : ']');
    if (!p->required) snprintf(dflt, dlen, "%g", p->dflt);
  }
}

static void widen(columns *w, const mb_op_info *op) {
  for (int k = 0; k < op->nparams; k++) {
    char allowed[256], dflt[64];
    param_texts(&op->params[k], allowed, sizeof allowed, dflt, sizeof dflt);
    const int lk = (int)strlen(op->params[k].key), la = (int)strlen(allowed),
              ld = (int)strlen(dflt);
    if (lk > w->key) w->key = lk;
    if (la > w->allowed) w->allowed = la;
    if (ld > w->dflt) w->dflt = ld;
  }
}

static void print_param(const mb_param *p, const columns *w) {
  char allowed[256], dflt[64];
  param_texts(p, allowed, sizeof allowed, dflt, sizeof dflt);
  printf("    %-*s %-8s %-*s default %-*s %s\n", w->key, p->key, type_name(p->type), w->allowed,
         allowed, w->dflt, dflt, p->doc);
}

/* How the op runs partitioned, in words. */
static void partitioned_text(const mb_op_info *op, char *buf, size_t len) {
  switch (mb_op_partitioned(op)) {
  case MB_SPLIT_VERTICES:
    if (op->ghost_depth > 1)
      snprintf(buf, len, "yes (split by vertices, halo of ghost vertices %d edges deep)",
               op->ghost_depth);
    else
      snprintf(buf, len, "yes (split by vertices, halo of ghost vertices)");
    break;
  case MB_SPLIT_FACES: snprintf(buf, len, "yes (split by triangles on the dual graph)"); break;
  case MB_SPLIT_CELLS:
    snprintf(buf, len, "yes (split into Cartesian blocks, halo of %d %s)", op->ghost_depth,
             mb_plural(op->ghost_depth, "plane", "planes"));
    break;
  default: snprintf(buf, len, "no (per-mesh only)");
  }
}

static void print_op(const mb_op_info *op, const columns *w) {
  char partitioned[128];
  partitioned_text(op, partitioned, sizeof partitioned);
  printf("%s: %s\n", op->name, op->summary);
  printf("    reads %s, writes %s; backends:%s%s; partitioned: %s\n", mb_kind_name(op->in),
         mb_kind_name(op->out), op->run[MB_BACKEND_SLOT_CPU] ? " cpu" : "",
         op->run[MB_BACKEND_SLOT_CUDA] ? " cuda" : "", partitioned);
  printf("    method: %s\n", op->source);
  for (int k = 0; k < op->nparams; k++) print_param(&op->params[k], w);
  if (!op->nparams) printf("    (no keys besides op)\n");
  printf("\n");
}

int mb_cmd_ops(int argc, char **argv) {
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      if (mb_cli_rank() == 0) fputs(ops_help, stdout);
      return MB_EXIT_OK;
    }
    if (argv[i][0] == '-') return mb_cli_usage_error("ops", "unknown option '%s'", argv[i]);
    if (only) return mb_cli_usage_error("ops", "one op name expected, got '%s' too", argv[i]);
    only = argv[i];
  }
  if (only && !mb_ops_find(only)) {
    char names[512];
    mb_ops_names(names, sizeof names);
    return mb_cli_usage_error("ops", "no op named '%s' (ops: %s)", only, names);
  }
  if (mb_cli_rank() != 0) return MB_EXIT_OK;
  printf("A job's stages run in order; each reads the kind of dataset the one before\n"
         "writes. Stage keys (besides op):\n\n");
  columns w = {11, 0, 10}; /* one table for all ops listed */
  for (int i = 0; i < mb_ops_count(); i++)
    if (!only || !strcmp(only, mb_ops_at(i)->name)) widen(&w, mb_ops_at(i));
  for (int i = 0; i < mb_ops_count(); i++)
    if (!only || !strcmp(only, mb_ops_at(i)->name)) print_op(mb_ops_at(i), &w);
  return MB_EXIT_OK;
}
