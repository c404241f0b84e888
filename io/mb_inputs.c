/* meshbatch: expansion of job inputs into mesh sources (see mb_inputs.h). */
#include "mb_inputs.h"

#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mb_meshfile.h"
#include "mb_mpi.h"

/* Bytes of a mesh file per face, roughly (3 vertex lines + 1 face line). */
#define MB_BYTES_PER_FACE_ESTIMATE 60.0

static int has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* A list of (path, is_collection) built on rank 0. */
typedef struct path_list {
  int n, cap;
  char **paths;
} path_list;

static mb_error path_list_add(path_list *l, const char *p) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 16;
    char **q = realloc(l->paths, sizeof(char *) * (size_t)cap);
    MB_CHECK(q, MB_ERR_MEMORY, "out of memory");
    l->paths = q;
    l->cap = cap;
  }
  l->paths[l->n] = mb_strdup(p);
  MB_CHECK(l->paths[l->n], MB_ERR_MEMORY, "out of memory");
  l->n++;
  return MB_SUCCESS;
}

static void path_list_free(path_list *l) {
  for (int i = 0; i < l->n; i++) free(l->paths[i]);
  free(l->paths);
}

/* A glob match that names the same dataset as another match: Triangle's
 * .neigh (read with its .ele), and an .ele whose .node matched too. */
static int triangle_companion(const glob_t *g, size_t k) {
  const char *p = g->gl_pathv[k];
  if (has_suffix(p, ".neigh")) return 1;
  if (!has_suffix(p, ".ele")) return 0;
  size_t n = strlen(p);
  for (size_t j = 0; j < g->gl_pathc; j++) {
    const char *q = g->gl_pathv[j];
    if (strlen(q) == n + 1 && has_suffix(q, ".node") && !strncmp(q, p, n - 4)) return 1;
  }
  return 0;
}

/* Rank 0: patterns -> concrete paths. A pattern that matches a Triangle
 * file set (STEM.node, STEM.ele, STEM.neigh) gives the dataset once. A
 * path that does not exist (nothing there, or a part of it not a folder)
 * is refused like a glob that matches nothing; one that exists but cannot
 * be looked at or read (permissions) is left to the read, that mesh alone
 * failing. origins: see mb_inputs_open_from. */
static mb_error expand_patterns(int np, char *const *patterns, const char *const *origins,
                                path_list *out) {
  for (int i = 0; i < np; i++) {
    const char *p = patterns[i];
    char where[1200] = "input "; /* how the messages about pattern i start */
    if (origins && origins[i]) snprintf(where, sizeof where, "%s: ", origins[i]);
    if (!strpbrk(p, "*?[")) {
      struct stat sb;
      errno = 0;
      if (stat(p, &sb) != 0 && (errno == ENOENT || errno == ENOTDIR))
        MB_FAIL(MB_ERR_ARG, "%s'%s' does not exist", where, p);
      MB_CALL(path_list_add(out, p));
      continue;
    }
    glob_t g;
    int rc = glob(p, 0, NULL, &g);
    if (rc == GLOB_NOMATCH) {
      globfree(&g);
      MB_FAIL(MB_ERR_ARG, "%s'%s' matches no file", where, p);
    }
    MB_CHECK(rc == 0, MB_ERR_IO, "%s'%s': cannot expand the pattern", where, p);
    mb_error e = MB_SUCCESS;
    for (size_t k = 0; k < g.gl_pathc && !e; k++)
      if (!triangle_companion(&g, k)) e = path_list_add(out, g.gl_pathv[k]);
    globfree(&g);
    MB_CALL(e);
  }
  MB_CHECK(out->n > 0, MB_ERR_ARG, "the job has no input");
  return MB_SUCCESS;
}

/* Broadcast rank 0's path list (or its error) to every rank. */
static mb_error bcast_paths(MPI_Comm comm, mb_error root_err, path_list *l) {
  int rank;
  MB_CALL_MPI(MPI_Comm_rank(comm, &rank));
  char msg[1024] = "";
  long long hdr[2] = {root_err, 0};
  size_t total = 0;
  if (rank == 0) {
    for (int i = 0; i < l->n; i++) total += strlen(l->paths[i]) + 1;
    hdr[1] = root_err ? (long long)strlen(mb_error_message()) + 1 : (long long)total;
  }
  MB_CALL_MPI_AGREED(comm, MPI_Bcast(hdr, 2, MPI_LONG_LONG, 0, comm));
  if (hdr[0]) {
    if (rank == 0) snprintf(msg, sizeof msg, "%s", mb_error_message());
    MB_CALL_MPI_AGREED(comm, MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, 0, comm));
    if (rank == 0) return (mb_error)hdr[0];
    MB_FAIL((mb_error)hdr[0], "%s", msg);
  }
  char *buf = malloc((size_t)hdr[1] + 1);
  MB_CHECK(buf, MB_ERR_MEMORY, "out of memory");
  if (rank == 0) {
    char *p = buf;
    for (int i = 0; i < l->n; i++) p = stpcpy(p, l->paths[i]) + 1;
  }
  const int rc = MPI_Bcast(buf, (int)hdr[1], MPI_CHAR, 0, comm);
  mb_error e = rc ? mb_error_set_mpi(rc, __FILE__, __LINE__, __func__, "MPI_Bcast(paths)") : 0;
  if ((e = mb_agree(comm, e))) {
    free(buf);
    MB_CALL(e);
  }
  if (rank != 0)
    for (char *p = buf; p < buf + hdr[1] && !e; p += strlen(p) + 1) e = path_list_add(l, p);
  free(buf);
  return e;
}

static mb_error add_source(mb_inputs *in, const char *name, const char *path, int coll,
                           int64_t entry, double cost, const char *error) {
  mb_source *s = realloc(in->sources, sizeof *s * (size_t)(in->nsources + 1));
  MB_CHECK(s, MB_ERR_MEMORY, "out of memory");
  in->sources = s;
  mb_source *src = &s[in->nsources];
  memset(src, 0, sizeof *src);
  snprintf(src->name, sizeof src->name, "%s", name);
  snprintf(src->path, sizeof src->path, "%s", path);
  src->index = in->nsources++;
  src->collection = coll;
  src->entry = entry;
  src->cost = cost;
  if (error) snprintf(src->error, sizeof src->error, "%s", error);
  return MB_SUCCESS;
}

/* Open one collection collectively and add its meshes as sources. */
static mb_error add_collection(MPI_Comm comm, mb_inputs *in, const char *path) {
  mb_collection **c = realloc(in->collections, sizeof *c * (size_t)(in->ncollections + 1));
  MB_CHECK(c, MB_ERR_MEMORY, "out of memory");
  in->collections = c;
  int ci = in->ncollections++;
  in->collections[ci] = NULL;
  mb_collection *coll = NULL;
  if (mb_collection_open(comm, path, &coll) != MB_SUCCESS) {
    char stem[256];
    mb_path_stem(path, stem, sizeof stem);
    MB_CALL(add_source(in, stem, path, -1, -1, 0, mb_error_message()));
    return MB_SUCCESS;
  }
  in->collections[ci] = coll;
  for (int64_t k = 0; k < mb_collection_count(coll); k++) {
    const mb_mesh_info *info = mb_collection_info(coll, k);
    MB_CALL(add_source(in, info->name, path, ci, k, (double)info->nf,
                       info->problem[0] ? info->problem : NULL));
  }
  return MB_SUCCESS;
}

static mb_error check_unique_names(const mb_inputs *in) {
  for (int64_t a = 0; a < in->nsources; a++)
    for (int64_t b = a + 1; b < in->nsources; b++)
      MB_CHECK(strcmp(in->sources[a].name, in->sources[b].name) != 0, MB_ERR_ARG,
               "two inputs give the mesh name '%s' (%s and %s): mesh names must be unique",
               in->sources[a].name, in->sources[a].path, in->sources[b].path);
  return MB_SUCCESS;
}

mb_error mb_inputs_open(MPI_Comm comm, int np, char *const *patterns, mb_inputs **inputs) {
  MB_CALL(mb_inputs_open_from(comm, np, patterns, NULL, inputs));
  return MB_SUCCESS;
}

mb_error mb_inputs_open_from(MPI_Comm comm, int np, char *const *patterns,
                             const char *const *origins, mb_inputs **inputs) {
  int rank;
  MB_CALL_MPI(MPI_Comm_rank(comm, &rank));
  path_list paths = {0};
  mb_error e = rank == 0 ? expand_patterns(np, patterns, origins, &paths) : MB_SUCCESS;
  e = bcast_paths(comm, e, &paths);
  if (e) {
    path_list_free(&paths);
    MB_CALL(e);
  }
  mb_inputs *in = calloc(1, sizeof *in);
  if (!in) { path_list_free(&paths); MB_FAIL(MB_ERR_MEMORY, "out of memory"); }
  for (int i = 0; i < paths.n && !e; i++) {
    const char *p = paths.paths[i];
    if (has_suffix(p, ".h5")) {
      e = add_collection(comm, in, p);
    } else {
      char stem[256];
      struct stat st;
      mb_path_stem(p, stem, sizeof stem);
      double cost = stat(p, &st) == 0 ? (double)st.st_size / MB_BYTES_PER_FACE_ESTIMATE : 0;
      e = add_source(in, stem, p, -1, -1, cost, NULL);
    }
  }
  path_list_free(&paths);
  if (!e) e = check_unique_names(in);
  if (e) {
    mb_error_trace(__FILE__, __LINE__, __func__);
    mb_inputs_close(in);
    return e;
  }
  *inputs = in;
  return MB_SUCCESS;
}

mb_error mb_inputs_read(mb_inputs *in, int64_t s, mb_mesh **mesh) {
  MB_CHECK(s >= 0 && s < in->nsources, MB_ERR_ARG, "no mesh source %lld", (long long)s);
  const mb_source *src = &in->sources[s];
  MB_CHECK(!src->error[0], MB_ERR_FORMAT, "%s", src->error);
  if (src->collection >= 0)
    MB_CALL(mb_collection_read(in->collections[src->collection], src->entry, mesh));
  else
    MB_CALL(mb_meshfile_read(src->path, mesh));
  (*mesh)->index = s;
  return MB_SUCCESS;
}

mb_error mb_inputs_find(const mb_inputs *in, const char *input, const char *only,
                        int64_t *s) {
  *s = 0;
  if (!only) {
    MB_CHECK(in->nsources > 0, MB_ERR_ARG, "%s holds no mesh", input);
    return MB_SUCCESS;
  }
  for (int64_t k = 0; k < in->nsources; k++)
    if (!strcmp(in->sources[k].name, only)) {
      *s = k;
      return MB_SUCCESS;
    }
  MB_FAIL(MB_ERR_ARG, "no mesh named '%s' in %s", only, input);
}

mb_error mb_inputs_check_named(const char *input, const char *only) {
  if (!only) return MB_SUCCESS;
  char *patterns[] = {(char *)input};
  mb_inputs *in = NULL;
  if (mb_inputs_open(MPI_COMM_SELF, 1, patterns, &in) != MB_SUCCESS) {
    mb_error_clear(); /* not this check's to report */
    return MB_SUCCESS;
  }
  int64_t s = 0;
  const mb_error e = mb_inputs_find(in, input, only, &s);
  if (e) {
    char msg[1024]; /* the error stays recorded, without close's traceback */
    snprintf(msg, sizeof msg, "%s", mb_error_message());
    mb_inputs_close(in);
    MB_FAIL(e, "%s", msg);
  }
  mb_inputs_close(in);
  return MB_SUCCESS;
}

mb_error mb_inputs_read_named(const char *input, const char *only, mb_mesh **mesh,
                              char *path_out) {
  char *patterns[] = {(char *)input};
  mb_inputs *in = NULL;
  MB_CALL(mb_inputs_open(MPI_COMM_SELF, 1, patterns, &in));
  int64_t s = 0;
  mb_error e = mb_inputs_find(in, input, only, &s);
  if (!e) e = mb_inputs_read(in, s, mesh);
  if (!e && path_out) snprintf(path_out, 4096, "%s", in->sources[s].path);
  mb_inputs_close(in);
  return e;
}

mb_error mb_inputs_close(mb_inputs *in) {
  if (!in) return MB_SUCCESS;
  mb_error e = MB_SUCCESS;
  for (int i = 0; i < in->ncollections; i++)
    if (in->collections[i]) {
      mb_error ei = mb_collection_close(in->collections[i]);
      if (!e) e = ei;
    }
  free(in->collections);
  free(in->sources);
  free(in);
  return e;
}
