/* meshbatch command line: shared declarations of the subcommands.
 *
 * Every subcommand is `int mb_cmd_NAME(int argc, char **argv)`, called after
 * MPI_Init with argv[0] = the subcommand name; it returns the process exit
 * code: 0 success, 1 some work failed (reported), 2 usage or job-file error.
 */
#ifndef MB_CLI_H
#define MB_CLI_H

#include <stdint.h>

#include "mb_args.h"

int mb_cmd_run(int argc, char **argv);
int mb_cmd_import(int argc, char **argv);
int mb_cmd_export(int argc, char **argv);
int mb_cmd_info(int argc, char **argv);
int mb_cmd_generate(int argc, char **argv);
int mb_cmd_bench(int argc, char **argv);
int mb_cmd_partition(int argc, char **argv);
int mb_cmd_compare(int argc, char **argv);
int mb_cmd_ops(int argc, char **argv);

struct mb_partfile;
/* Print a partition's sizes and quality to stdout. */
void mb_cli_print_partition(const struct mb_partfile *part);

#endif
