/* meshbatch: partition files (written by `meshbatch partition`, reused by
 * partitioned jobs through the job key `partition:`). Layout in docs/format.md. */
#ifndef MB_PARTFILE_H
#define MB_PARTFILE_H

#include <stdint.h>

#include "mb_error.h"
#include "mb_partition.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MB_PARTFILE_FORMAT "meshbatch-partition"
#define MB_PARTFILE_FORMAT_VERSION 1

/* A vertex partition of one mesh with its face owners and quality. */
typedef struct mb_partfile {
  char mesh[256];
  int nparts;
  int64_t nv, nf;
  int32_t *vertex_part;   /* [nv] (owned) */
  int32_t *face_part;     /* [nf] part of each face's lowest-numbered vertex (owned) */
  mb_partition_quality quality;
} mb_partfile;

/* Write a partition file (serial HDF5; call it on one rank), under a
 * temporary name renamed when complete. Errors: MB_ERR_IO, MB_ERR_HDF5. */
mb_error mb_partfile_write(const char *path, const mb_partfile *part);

/* Read a partition file; the caller frees with mb_partfile_free. Not
 * collective (any rank may read it). Errors: MB_ERR_IO, MB_ERR_FORMAT. */
mb_error mb_partfile_read(const char *path, mb_partfile **part);

void mb_partfile_free(mb_partfile *part);

#ifdef __cplusplus
}
#endif
#endif
