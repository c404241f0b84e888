/* meshbatch fuzzing: the NumPy .npy reader (grids). */
#include "fuzz_common.h"

#include "mb_npy.h"

void mb_fuzz_one(const uint8_t *data, size_t size) {
  mb_mesh *g = NULL;
  if (mb_npy_read_grid(mb_fuzz_file(0, ".npy", data, size), &g) == MB_SUCCESS) mb_mesh_free(g);
}
