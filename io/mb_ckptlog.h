/* meshbatch: the checkpoint log, one append-only file per rank holding the
 * finished meshes of a per-mesh run for --resume (docs/format.md,
 * "Checkpoint log"). No HDF5: a record is encoded on the main thread and
 * appended with plain write(2) by the checkpoint's own thread
 * (src/runner/mb_runner_ckpt.c), which HDF5 (not thread-safe in the MPI
 * build) could not do.
 *
 * A record is a header (magic, source index, kind, sizes, the arrays'
 * names, types and shapes, the payload's byte count and CRC-32, its own
 * CRC-32) followed by the raw arrays. The CRC-32 is zlib's (the IEEE 802.3
 * polynomial; Peterson and Brown, "Cyclic codes for error detection",
 * Proc. IRE 49(1), 1961): a torn record (a process or machine that stopped
 * in the middle of an append, the unsynced tail after a crash of the
 * machine) or a flipped byte fails its check and is not taken.
 *
 * None of these functions is collective; each that returns mb_error reports
 * through mb_error.h's message. */
#ifndef MB_CKPTLOG_H
#define MB_CKPTLOG_H

#include <stddef.h>
#include <stdint.h>

#include "mb_error.h"
#include "mb_mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One encoded record: bytes[len] of a buffer of cap bytes, owned (free
 * with mb_ckptlog_record_free). The CRCs are filled by mb_ckptlog_seal
 * (the checkpoint's thread). */
typedef struct mb_ckptlog_record {
  unsigned char *bytes;
  size_t len, cap;
} mb_ckptlog_record;

/* Encode mesh m (borrowed, unchanged) as source s into *rec: a copy of
 * every array (xyz [nv, 3], face_offsets [nf + 1], face_indices, each
 * vertex and face field [n, ncomp] in its dtype), its name, attributes and
 * grid geometry; the CRCs are left 0 (unsealed). rec is zeroed, or holds
 * an earlier record whose buffer is reused (grown where it is too small:
 * a buffer already touched costs no page faults, which dominate the copy
 * of a fresh one). Errors (rec's buffer kept): MB_ERR_MEMORY, MB_ERR_ARG
 * (names longer than a header may hold). */
mb_error mb_ckptlog_encode(const mb_mesh *m, int64_t s, mb_ckptlog_record *rec);

/* Compute and store the record's two CRC-32 (payload, then header). May
 * run on any thread (no shared state). */
void mb_ckptlog_seal(mb_ckptlog_record *rec);

/* Free rec's bytes and zero it; a zeroed record is allowed. */
void mb_ckptlog_record_free(mb_ckptlog_record *rec);

/* Where one record lies in a log file, as found by mb_ckptlog_scan. */
typedef struct mb_ckptlog_entry {
  int64_t source;   /* the mesh's source index */
  int file;         /* index into the caller's list of files */
  uint64_t offset;  /* bytes from the file's start to the record's header */
  uint64_t len;     /* the record's bytes, header and payload */
} mb_ckptlog_entry;

/* Scan log file path (fd open for reading) from its start: append one
 * entry (file: file) to *entries[*n] (realloc'd; caller frees) for every
 * record whose header holds (magic, header CRC, sizes within the file).
 * A header that fails is skipped by searching forward for the next magic
 * at an 8-byte boundary; a record that runs past the end of the file (a
 * torn last append) is dropped. The payload's CRC is checked when the
 * record is read (mb_ckptlog_read). *torn counts the bytes skipped.
 * Errors: MB_ERR_IO (a read fails), MB_ERR_MEMORY. */
mb_error mb_ckptlog_scan(int fd, const char *path, int file, mb_ckptlog_entry **entries,
                         int64_t *n, uint64_t *torn);

/* Read the record at e (fd: its file, path for messages) into a new mesh
 * *m (caller frees; its index is the record's source), after checking both
 * CRCs. Errors: MB_ERR_FORMAT (a CRC or a size fails: the message names
 * the file, the offset and the source), MB_ERR_IO, MB_ERR_MEMORY. */
mb_error mb_ckptlog_read(int fd, const char *path, const mb_ckptlog_entry *e, mb_mesh **m);

#ifdef __cplusplus
}
#endif
#endif
