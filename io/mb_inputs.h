/* meshbatch: the meshes a job reads, from mesh files, globs and collections.
 *
 * A job's `input` patterns are expanded once, on rank 0, and the result is
 * broadcast, so every rank sees the same numbered list of mesh sources:
 *   - a path ending in .h5 is a collection: each of its meshes is a source;
 *   - a pattern with glob characters (* ? [) expands to the sorted matches,
 *     and matching nothing is an error;
 *   - any other path is one mesh file, and a path that does not exist is an
 *     error too, found before any work (a file that exists but cannot be read
 *     becomes a source that fails when read, so the rest of the batch still
 *     runs).
 * Collections are opened collectively and read per mesh independently.
 */
#ifndef MB_INPUTS_H
#define MB_INPUTS_H

#include <mpi.h>
#include <stdint.h>

#include "mb_collection.h"
#include "mb_error.h"
#include "mb_mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mb_source {
  char name[256];       /* mesh name (file stem, or the name inside a collection) */
  int64_t index;        /* position in the expanded list (0-based) */
  char path[4096];      /* mesh file, or the collection file */
  int collection;       /* index into mb_inputs.collections, or -1 for a mesh file */
  int64_t entry;        /* mesh index inside the collection */
  double cost;          /* estimated faces (from the collection, or the file size) */
  char error[512];      /* non-empty if the source failed before reading (bad collection) */
} mb_source;

typedef struct mb_inputs {
  int64_t nsources;
  mb_source *sources;        /* [nsources] (owned) */
  int ncollections;
  mb_collection **collections; /* [ncollections], NULL where opening failed (owned) */
} mb_inputs;

/* Expand patterns and open collections. Collective over comm; every rank
 * gets the same list (rank 0 looks at the file system, the others get its
 * list or its error). Errors: MB_ERR_ARG (a glob matches nothing, a path
 * without glob characters does not exist, duplicate mesh names, no input at
 * all), MB_ERR_MPI, MB_ERR_MEMORY. A collection that exists but cannot be
 * opened is not an error here: it becomes one failed source. */
mb_error mb_inputs_open(MPI_Comm comm, int npatterns, char *const *patterns, mb_inputs **inputs);

/* mb_inputs_open for patterns written in a file: origins[i] (origins may be
 * NULL, an entry NULL) says where pattern i was written, as "FILE:LINE: KEY"
 * ("job.yaml:3: input[1]"), and starts the errors about that pattern
 * ("job.yaml:3: input[1]: 'meshes/a.obj' does not exist"). Collective over
 * comm; only rank 0's origins are read. Errors: those of mb_inputs_open. */
mb_error mb_inputs_open_from(MPI_Comm comm, int npatterns, char *const *patterns,
                             const char *const *origins, mb_inputs **inputs);

/* Read source s (any rank, not collective); the caller owns *mesh, whose
 * index is set to s. Errors: those of mb_meshfile_read / mb_collection_read. */
mb_error mb_inputs_read(mb_inputs *inputs, int64_t s, mb_mesh **mesh);

/* The index *s of the source named `only` (NULL: the first) of the opened
 * `input` (named in the errors). Not collective. Errors: MB_ERR_ARG (no
 * source named `only`: "no mesh named 'NAME' in INPUT", as `meshbatch info`
 * says it; no source at all). */
mb_error mb_inputs_find(const mb_inputs *inputs, const char *input, const char *only,
                        int64_t *s);

/* One mesh of one input, for the benchmarks and tools that time a single
 * mesh: expand `input` (a mesh file, a glob or a collection) on this
 * process alone (MPI_COMM_SELF: not collective), read the source named
 * `only` (NULL: the first), close. *path_out (may be NULL; at least 4096
 * bytes) receives the source's file. The caller owns *mesh.
 * Errors: MB_ERR_ARG (no mesh named `only`, an input holding no mesh), those
 * of mb_inputs_open and mb_inputs_read. */
mb_error mb_inputs_read_named(const char *input, const char *only, mb_mesh **mesh,
                              char *path_out);

/* For the tools that take an INPUT and --mesh NAME, before any work: whether
 * `input` (expanded and opened on this process alone: not collective) holds
 * a mesh named `only`. MB_ERR_ARG ("no mesh named 'NAME' in INPUT", for a
 * usage error) where it opens and holds none; MB_SUCCESS where it does,
 * where `only` is NULL, and where the input cannot be opened (no error is
 * left recorded: the tool's read reports that one). */
mb_error mb_inputs_check_named(const char *input, const char *only);

/* Close collections and free. Collective over the comm given to open. */
mb_error mb_inputs_close(mb_inputs *inputs);

#ifdef __cplusplus
}
#endif
#endif
