/* meshbatch: the op registry (the list is src/ops/mb_ops.def).
 *
 * The runner, the job loader, `meshbatch ops`, `info` and `bench` find ops
 * here and never name one.
 */
#ifndef MB_OPS_H
#define MB_OPS_H

#include "mb_op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of registered ops. */
int mb_ops_count(void);

/* The i-th registered op, 0 <= i < mb_ops_count(), in mb_ops.def order. */
const mb_op_info *mb_ops_at(int i);

/* The op named `name` in job files, or NULL. Not collective. */
const mb_op_info *mb_ops_find(const char *name);

/* The first op of a room that has a benchmark ("smooth", "polylla"), or NULL. */
const mb_op_info *mb_ops_find_bench(const char *room);

/* The names of every op, ", "-separated, in buf. */
void mb_ops_names(char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
