/* meshbatch fuzzing: the mesh file readers (OBJ, OFF, ASCII and binary
 * PLY in both byte orders) through mb_meshfile_read. MB_FUZZ_SUFFIX picks
 * the reader: ".obj", ".off" or ".ply". */
#include "fuzz_common.h"

#include "mb_meshfile.h"

#ifndef MB_FUZZ_SUFFIX
#error "define MB_FUZZ_SUFFIX"
#endif

void mb_fuzz_one(const uint8_t *data, size_t size) {
  mb_mesh *m = NULL;
  if (mb_meshfile_read(mb_fuzz_file(0, MB_FUZZ_SUFFIX, data, size), &m) == MB_SUCCESS)
    mb_mesh_free(m);
}
