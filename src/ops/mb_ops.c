/* meshbatch: the op registry (see mb_ops.h), built from mb_ops.def. */
#include "mb_ops.h"

#include <stdio.h>
#include <string.h>

#define MB_OP(info) extern const mb_op_info info;
#include "mb_ops.def"
#undef MB_OP

static const mb_op_info *const mb_ops_table[] = {
#define MB_OP(info) &info,
#include "mb_ops.def"
#undef MB_OP
};

enum { MB_OPS_N = (int)(sizeof mb_ops_table / sizeof mb_ops_table[0]) };

int mb_ops_count(void) { return MB_OPS_N; }

const mb_op_info *mb_ops_at(int i) { return i >= 0 && i < MB_OPS_N ? mb_ops_table[i] : NULL; }

const mb_op_info *mb_ops_find(const char *name) {
  for (int i = 0; name && i < MB_OPS_N; i++)
    if (!strcmp(mb_ops_table[i]->name, name)) return mb_ops_table[i];
  return NULL;
}

const mb_op_info *mb_ops_find_bench(const char *room) {
  for (int i = 0; room && i < MB_OPS_N; i++)
    if (mb_ops_table[i]->bench && !strcmp(mb_ops_table[i]->room, room)) return mb_ops_table[i];
  return NULL;
}

void mb_ops_names(char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < MB_OPS_N && used < len; i++)
    used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", mb_ops_table[i]->name);
}
