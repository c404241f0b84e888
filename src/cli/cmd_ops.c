/* meshbatch ops: the registered ops with their keys, defaults and kinds,
 * printed from the op registry's parameter tables (no op is named here). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "mb_ops.h"

static const char ops_help[] =
    "usage: meshbatch ops [NAME]\n\n"
    "List the ops a job's stages can use: what each reads and writes, its\n"
    "backends, whether it runs partitioned, the method's source, and every key\n"
    "of its stage with type, allowed values, default and meaning. With NAME,\n"
    "only that op.\n";

static const char *type_name(mb_param_type t) {
  return t == MB_PARAM_INT ? "integer" : t == MB_PARAM_REAL ? "number"
       : t == MB_PARAM_NAMES ? "names" : "name";
}

static void print_param(const mb_param *p) {
  char allowed[256] = "", dflt[64] = "required";
  if (p->type == MB_PARAM_NAME) {
    size_t used = 0;
    for (int i = 0; p->names[i] && used < sizeof allowed; i++)
      used += (size_t)snprintf(allowed + used, sizeof allowed - used, "%s%s", i ? "|" : "",
                               p->names[i]);
    if (!p->required) snprintf(dflt, sizeof dflt, "%s", p->names[(int)p->dflt]);
  } else if (p->type == MB_PARAM_NAMES) {
    snprintf(allowed, sizeof allowed, "[NAME, ...]");
    if (!p->required) snprintf(dflt, sizeof dflt, "all");
  } else if (p->type == MB_PARAM_INT) {
    snprintf(allowed, sizeof allowed, "%c%lld, %lld%c", p->lo_open ? '(' : '[', (long long)p->lo,
             (long long)p->hi, p->hi_open ? ')' : ']');
    if (!p->required) snprintf(dflt, sizeof dflt, "%lld", (long long)p->dflt);
  } else {
    snprintf(allowed, sizeof allowed, "%c%g, %g%c", p->lo_open ? '(' : '[', p->lo, p->hi,
             p->hi_open ? ')' : ']');
    if (!p->required) snprintf(dflt, sizeof dflt, "%g", p->dflt);
  }
  printf("    %-11s %-8s %-34s default %-10s %s\n", p->key, type_name(p->type), allowed, dflt,
         p->doc);
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
    snprintf(buf, len, "yes (split into Cartesian blocks, halo of %d planes)", op->ghost_depth);
    break;
  default: snprintf(buf, len, "no (per-mesh only)");
  }
}

static void print_op(const mb_op_info *op) {
  char partitioned[128];
  partitioned_text(op, partitioned, sizeof partitioned);
  printf("%s: %s\n", op->name, op->summary);
  printf("    reads %s, writes %s; backends:%s%s; partitioned: %s\n", mb_kind_name(op->in),
         mb_kind_name(op->out), op->run[MB_BACKEND_SLOT_CPU] ? " cpu" : "",
         op->run[MB_BACKEND_SLOT_CUDA] ? " cuda" : "", partitioned);
  printf("    method: %s\n", op->source);
  for (int k = 0; k < op->nparams; k++) print_param(&op->params[k]);
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
  for (int i = 0; i < mb_ops_count(); i++)
    if (!only || !strcmp(only, mb_ops_at(i)->name)) print_op(mb_ops_at(i));
  return MB_EXIT_OK;
}
