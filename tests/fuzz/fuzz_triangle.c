/* meshbatch fuzzing: Triangle's .node/.ele(/.neigh) reader. The input is
 * the .node text, then a line "@@ele", the .ele text and, optionally, a
 * line "@@neigh" and the .neigh text; all three files share one stem, as
 * Triangle writes them. */
#include "fuzz_common.h"

#include <stdio.h>
#include <string.h>

#include "mb_trianglefile.h"

/* The part of data after marker (and its end), or NULL. */
static const uint8_t *after(const uint8_t *data, size_t size, const char *marker,
                            size_t *before) {
  const size_t n = strlen(marker);
  for (size_t i = 0; i + n <= size; i++)
    if (!memcmp(data + i, marker, n)) {
      *before = i;
      return data + i + n;
    }
  *before = size;
  return NULL;
}

void mb_fuzz_one(const uint8_t *data, size_t size) {
  size_t nnode, nele = 0;
  const uint8_t *ele = after(data, size, "@@ele\n", &nnode);
  const uint8_t *neigh = NULL;
  size_t nneigh = 0;
  if (ele) {
    const size_t rest = size - (size_t)(ele - data);
    neigh = after(ele, rest, "@@neigh\n", &nele);
    if (neigh) nneigh = rest - nele - strlen("@@neigh\n");
  }
  const char *node = mb_fuzz_file(0, ".node", data, nnode);
  const int stem = (int)(strlen(node) - strlen(".node"));
  char path[600];
  snprintf(path, sizeof path, "%.*s.ele", stem, node);
  FILE *f = NULL;
  if (ele && (f = fopen(path, "wb"))) {
    if (nele) fwrite(ele, 1, nele, f);
    fclose(f);
  } else if (!ele) {
    remove(path); /* no .ele part: the reader must say the .ele is missing */
  }
  snprintf(path, sizeof path, "%.*s.neigh", stem, node);
  if (neigh) {
    f = fopen(path, "wb");
    if (f) {
      if (nneigh) fwrite(neigh, 1, nneigh, f);
      fclose(f);
    }
  } else {
    remove(path);
  }
  mb_mesh *m = NULL;
  if (mb_trianglefile_read(node, &m) == MB_SUCCESS) mb_mesh_free(m);
}
