/* meshbatch bench ROOM: the benchmark of an op's room, found through the op
 * registry (mb_op_info.bench); this file names no op. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "mb_ops.h"
#include "mb_reduce.h"

static void bench_usage(FILE *f) {
  fprintf(f, "usage: meshbatch bench NAME INPUT [OPTIONS]\n\n"
             "Times the kernels of one op on one input and prints figures (no file is\n"
             "written). `meshbatch bench NAME --help` describes each benchmark.\n\nbenchmarks:\n");
  for (int i = 0; i < mb_ops_count(); i++) {
    const mb_op_info *op = mb_ops_at(i);
    if (!op->bench || mb_ops_find_bench(op->room) != op) continue;
    fprintf(f, "  %-9s the kernels of", op->room);
    for (int k = 0; k < mb_ops_count(); k++)
      if (!strcmp(mb_ops_at(k)->room, op->room)) fprintf(f, " %s", mb_ops_at(k)->name);
    fprintf(f, "\n");
  }
  fprintf(f, "  %-9s reproducible dot products against naive ones (partition layer; no INPUT)\n",
          "reduce");
}

int mb_cmd_bench(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    if (mb_cli_rank() == 0) bench_usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? MB_EXIT_USAGE : MB_EXIT_OK;
  }
  if (!strcmp(argv[1], "reduce")) return mb_reduce_bench(argc - 1, argv + 1);
  const mb_op_info *op = mb_ops_find_bench(argv[1]);
  if (!op) {
    if (mb_cli_rank() == 0) bench_usage(stderr);
    return mb_cli_usage_error("bench", "no benchmark named '%s'", argv[1]);
  }
  return op->bench(argc - 1, argv + 1);
}
