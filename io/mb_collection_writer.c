/* meshbatch: the one-rank collection writer (mb_collection_writer_*; see
 * mb_collection.h): one group a mesh as they come, raw rows by pwrite on a
 * thread of its own, numbered and published at finish. */
#include "mb_collection.h"
#include "mb_collection_private.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------- write: one mesh at a time */

/* A collection written by one process as its meshes come (per-mesh runs on
 * one rank): each put creates and fills one group of the temporary file;
 * finish numbers the groups' `index` attributes in (index, name) order,
 * writes the XDMF companions and publishes as mb_collection_write does. */
struct mb_collection_writer {
  char path[MB_PATH_MAX], tmp[MB_PATH_MAX], suffix[64];
  hid_t file, meshes;
  int64_t n, cap;
  mb_wset *sets;      /* one per mesh written: its metadata (the XDMF description borrows it) */
  /* the raw writes' thread (see mb_raw_job) and its queue of meshes */
  int fd;             /* tmp opened for pwrite, -1: every write goes through HDF5 */
  pthread_t thread;
  int running;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  mb_raw_batch *head, *tail;
  int queued;         /* batches queued or being written */
  int cancel;         /* abort: drop the queued batches unwritten */
  int stop;           /* no more batches */
  int raw_errno;      /* the first failed pwrite's errno, 0 */
  int durable;        /* sync the file, its companions and the folder at finish */
  char raw_mesh[256]; /* and its mesh */
};

/* At most this many meshes wait for (or are in) their raw writes: put
 * waits beyond it, so the memory held stays bounded. */
enum { RAW_QUEUE_MAX = 2 };

static void raw_batch_free(mb_raw_batch *b) {
  mb_mesh_free(b->mesh);
  free(b->jobs);
  free(b);
}

/* Write every job of b (pwrite, whole; retried on EINTR); errno or 0. */
static int raw_batch_write(int fd, const mb_raw_batch *b) {
  for (int k = 0; k < b->njobs; k++) {
    const mb_raw_job *j = &b->jobs[k];
    for (size_t done = 0; done < j->bytes;) {
      const ssize_t n = pwrite(fd, j->buf + done, j->bytes - done, (off_t)(j->offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return n < 0 ? errno : EIO;
      done += (size_t)n;
    }
  }
  return 0;
}

static void *raw_thread(void *arg) {
  mb_collection_writer *w = arg;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (!w->head && !w->stop) pthread_cond_wait(&w->cv, &w->mu);
    mb_raw_batch *b = w->head;
    if (!b) break;
    w->head = b->next;
    if (!w->head) w->tail = NULL;
    const int skip = w->cancel || w->raw_errno;
    pthread_mutex_unlock(&w->mu);
    const int err = skip ? 0 : raw_batch_write(w->fd, b);
    pthread_mutex_lock(&w->mu);
    if (err && !w->raw_errno) {
      w->raw_errno = err;
      snprintf(w->raw_mesh, sizeof w->raw_mesh, "%s", b->mesh->name ? b->mesh->name : "?");
    }
    w->queued--;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    raw_batch_free(b);
    pthread_mutex_lock(&w->mu);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

/* Queue b for the thread, waiting while RAW_QUEUE_MAX are queued. */
static void raw_enqueue(mb_collection_writer *w, mb_raw_batch *b) {
  pthread_mutex_lock(&w->mu);
  while (w->queued >= RAW_QUEUE_MAX) pthread_cond_wait(&w->cv, &w->mu);
  if (w->tail) w->tail->next = b; else w->head = b;
  w->tail = b;
  w->queued++;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

/* Let the thread write (cancel = 0) or drop (1) what is queued, and end it. */
static void raw_stop(mb_collection_writer *w, int cancel) {
  if (!w->running) return;
  pthread_mutex_lock(&w->mu);
  w->cancel |= cancel;
  w->stop = 1;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
  pthread_join(w->thread, NULL);
  w->running = 0;
}

/* The first failed raw write as an error of the writer (MB_ERR_IO), or 0. */
static mb_error raw_error(mb_collection_writer *w);

/* End the writer. discard: the temporary file is abandoned (abort): it is
 * first truncated to nothing, so that HDF5's close, which still flushes its
 * metadata cache, finds room on a disk that a failed write had filled. A
 * failed H5Fclose leaves the file's id half torn down in HDF5 1.10, and the
 * library's own close at MPI_Finalize then crashes on it (the segfault of
 * issue 28): the close must succeed, so the room is made before it. */
static void writer_free(mb_collection_writer *w, int discard) {
  raw_stop(w, 1);
  if (discard && w->tmp[0]) {
    if (w->fd >= 0) {
      if (ftruncate(w->fd, 0) != 0) { /* nothing more to do: the close may still work */ }
    } else if (truncate(w->tmp, 0) != 0) {
    }
  }
  if (w->fd >= 0) close(w->fd);
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
  mb_h5_quiet q = mb_h5_quiet_begin();
  mb_h5_close_id(w->meshes);
  mb_h5_close_id(w->file);
  mb_h5_quiet_end(q);
  for (int64_t i = 0; i < w->n; i++) mb_coll_wset_free(&w->sets[i]);
  free(w->sets);
  free(w);
}

mb_error mb_collection_writer_begin(const char *path, double expected_bytes, int durable,
                                    mb_collection_writer **writer) {
  MB_CHECK(path && *path && writer, MB_ERR_ARG, "mb_collection_writer_begin: empty argument");
  MB_CHECK(strlen(path) < MB_PATH_MAX - 300, MB_ERR_ARG, "mb_collection_writer_begin: path too long");
  *writer = NULL;
  MB_CALL(mb_coll_check_folder(path));
  mb_collection_writer *w = calloc(1, sizeof *w);
  MB_CHECK(w, MB_ERR_MEMORY, "out of memory");
  w->file = w->meshes = -1;
  w->fd = -1;
  w->durable = durable;
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  snprintf(w->path, sizeof w->path, "%s", path);
  snprintf(w->suffix, sizeof w->suffix, ".tmp-%lld", (long long)getpid());
  snprintf(w->tmp, sizeof w->tmp, "%s%s", path, w->suffix);
  mb_h5_quiet q = mb_h5_quiet_begin();
  mb_error e = mb_coll_check_space(w->tmp, expected_bytes);
  if (!e) e = mb_coll_create_h5(MPI_COMM_SELF, w->tmp, &w->file);
  if (!e) e = mb_coll_put_root(w->file, &w->meshes);
  mb_h5_quiet_end(q);
  if (e) {
    mb_collection_writer_abort(w);
    MB_CALL(e);
  }
  /* raw writes on a thread of their own; without one (no descriptor, no
   * thread) they go through HDF5 on the caller's thread */
  w->fd = open(w->tmp, O_WRONLY | O_CLOEXEC);
  if (w->fd >= 0 && pthread_create(&w->thread, NULL, raw_thread, w) == 0) w->running = 1;
  *writer = w;
  return MB_SUCCESS;
}

/* Why a write failed, where the cause is a full disk: a clause for the message. */
static const char *full_disk_note(const char *tmp) { return mb_coll_full_note(tmp); }

static mb_error raw_error(mb_collection_writer *w) {
  pthread_mutex_lock(&w->mu);
  const int err = w->raw_errno;
  char mesh[256];
  snprintf(mesh, sizeof mesh, "%s", w->raw_mesh);
  pthread_mutex_unlock(&w->mu);
  MB_CHECK(!err, MB_ERR_IO, "cannot write mesh '%s' to %s: %s%s", mesh, w->tmp, strerror(err),
           full_disk_note(w->tmp));
  return MB_SUCCESS;
}

mb_error mb_collection_writer_put(mb_collection_writer *w, mb_mesh *mesh) {
  if (!w || w->file < 0 || !mesh) {
    mb_mesh_free(mesh);
    MB_FAIL(MB_ERR_ARG, "mb_collection_writer_put: no writer or mesh");
  }
  mb_raw_batch *batch = calloc(1, sizeof *batch);
  mb_error e = raw_error(w);
  if (!e && !batch) e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  if (!e && w->n == w->cap) {
    const int64_t cap = w->cap ? 2 * w->cap : 64;
    mb_wset *s = realloc(w->sets, sizeof *s * (size_t)cap);
    if (s) {
      w->sets = s;
      w->cap = cap;
    } else {
      e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
    }
  }
  if (e) {
    free(batch);
    mb_mesh_free(mesh);
    MB_CALL(e);
  }
  batch->mesh = mesh;
  mb_mesh *const one[1] = {mesh};
  const mb_held h = {0, 1, 0, one, NULL};
  mb_buf b = {0};
  mb_wset *set = &w->sets[w->n];
  memset(set, 0, sizeof *set);
  e = mb_coll_pack_local(&h, &b);
  if (!e) e = mb_coll_gather_meshes(MPI_COMM_SELF, &b, set);
  free(b.data);
  mb_h5_quiet q = mb_h5_quiet_begin();
  const htri_t exists = e ? 0 : H5Lexists(w->meshes, set->m[0].x.name, H5P_DEFAULT);
  if (exists < 0)
    e = mb_error_set(MB_ERR_HDF5, __FILE__, __LINE__, __func__, "H5Lexists(%s) failed",
                     set->m[0].x.name);
  else if (exists > 0)
    e = mb_error_set(MB_ERR_ARG, __FILE__, __LINE__, __func__,
                     "mb_collection_write: duplicate mesh name '%s'", set->m[0].x.name);
  mb_error lerr = MB_SUCCESS;
  /* index: a placeholder of the right type, numbered by finish */
  mb_coll_raw_collect = w->running ? batch : NULL;
  if (!e) e = mb_coll_put_mesh(w->meshes, &set->m[0], mesh->index, &set->m[0].p[0], mesh, &lerr);
  mb_coll_raw_collect = NULL;
  if (!e) e = lerr;
  mb_h5_quiet_end(q);
  if (e) {
    mb_coll_wset_free(set);
    char why[1024];
    snprintf(why, sizeof why, "%s", mb_error_message());
    e = mb_error_set(e, __FILE__, __LINE__, __func__, "cannot write mesh '%s' to %s: %s%s",
                     mesh->name ? mesh->name : "?", w->tmp, why, full_disk_note(w->tmp));
    raw_batch_free(batch);
    return e;
  }
  w->n++;
  if (batch->njobs) raw_enqueue(w, batch);
  else raw_batch_free(batch);
  return MB_SUCCESS;
}

int64_t mb_collection_writer_count(const mb_collection_writer *w) { return w ? w->n : 0; }

/* Number the `index` attributes of the groups 0 .. n-1 in the order of all
 * (sorted by (index, name)). */
static mb_error renumber_index(hid_t meshes, const mb_wset *all) {
  for (int64_t i = 0; i < all->n; i++) {
    hid_t g = H5Gopen2(meshes, all->m[i].x.name, H5P_DEFAULT);
    MB_CALL_H5(g);
    hid_t a = H5Aopen(g, "index", H5P_DEFAULT);
    herr_t st = a >= 0 ? H5Awrite(a, H5T_NATIVE_INT64, &i) : -1;
    mb_h5_close_id(a);
    H5Gclose(g);
    MB_CALL_H5(st);
  }
  return MB_SUCCESS;
}

mb_error mb_collection_writer_finish(mb_collection_writer *w) {
  MB_CHECK(w && w->file >= 0, MB_ERR_ARG, "mb_collection_writer_finish: no writer");
  raw_stop(w, 0); /* every raw write done */
  mb_wset all = {.n = w->n};
  all.m = calloc((size_t)w->n + 1, sizeof *all.m);
  mb_error e = raw_error(w);
  if (!e && !all.m) e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  for (int64_t i = 0; !e && i < w->n; i++) all.m[i] = w->sets[i].m[0];
  if (!e) qsort(all.m, (size_t)all.n, sizeof *all.m, mb_coll_cmp_wmesh);
  mb_h5_quiet q = mb_h5_quiet_begin();
  if (!e) e = renumber_index(w->meshes, &all);
  if (H5Gclose(w->meshes) < 0 && !e)
    e = mb_error_set(MB_ERR_HDF5, __FILE__, __LINE__, __func__, "H5Gclose(/meshes) of %s failed",
                     w->tmp);
  w->meshes = -1;
  const mb_error ce = mb_coll_close_h5(MPI_COMM_SELF, w->file, w->tmp, e != MB_SUCCESS);
  if (!e) e = ce;
  w->file = -1;
  mb_h5_quiet_end(q);
  if (!e) e = mb_coll_publish(w->path, w->tmp, w->suffix, &all, w->durable, 1);
  free(all.m);
  if (e) { /* publish put back whatever it had moved */
    mb_error_trace(__FILE__, __LINE__, __func__);
    mb_collection_writer_abort(w);
    return e;
  }
  writer_free(w, 0);
  return MB_SUCCESS;
}

void mb_collection_writer_abort(mb_collection_writer *w) {
  if (!w) return;
  char tmp[MB_PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s", w->tmp);
  writer_free(w, 1);
  unlink(tmp);
}

/* ------------------------------------------------- write: meshes described by other processes */

static int host_little_endian(void) {
  const uint16_t one = 1;
  uint8_t first;
  memcpy(&first, &one, 1);
  return first == 1;
}

/* Whether the holder of m can write its values itself: every dataset of
 * its group is one contiguous array whose bytes it holds (or packs, planar
 * vertices): a surface of triangles or a triangulation2d with float64
 * fields, on a little-endian host (the file's types are little-endian). */
static int holder_writes(const mb_mesh *m) {
  if (!host_little_endian() || !mb_mesh_is_triangles(m)) return 0;
  if (m->kind != MB_KIND_SURFACE && m->kind != MB_KIND_TRIANGULATION2D) return 0;
  for (int f = 0; f < m->nfields; f++)
    if (m->fields[f].dtype != MB_FLOAT64) return 0;
  for (int f = 0; f < m->nface_fields; f++)
    if (m->face_fields[f].dtype != MB_FLOAT64) return 0;
  return 1;
}

mb_error mb_collection_describe(const mb_mesh *mesh, char **meta, size_t *len, int *nextents) {
  MB_CHECK(mesh && meta && len && nextents, MB_ERR_ARG, "mb_collection_describe: NULL argument");
  *meta = NULL;
  *len = 0;
  *nextents = 0;
  mb_mesh *const one[1] = {(mb_mesh *)mesh};
  const mb_held h = {0, 1, 0, one, NULL};
  mb_buf b = {0};
  mb_error e = mb_coll_pack_local(&h, &b); /* the checks of a put */
  if (e) {
    free(b.data);
    MB_CALL(e);
  }
  if (!holder_writes(mesh)) {
    free(b.data);
    return MB_SUCCESS;
  }
  *meta = b.data;
  *len = b.len;
  *nextents = 2 + mesh->nfields + mesh->nface_fields;
  return MB_SUCCESS;
}

const char *mb_collection_writer_temporary(const mb_collection_writer *w) {
  return w ? w->tmp : NULL;
}

mb_error mb_collection_writer_put_described(mb_collection_writer *w, const char *meta,
                                            size_t len, int nextents,
                                            mb_collection_extent *ext) {
  MB_CHECK(w && w->file >= 0 && meta && len >= sizeof(int64_t) && nextents >= 2 && ext,
           MB_ERR_ARG, "mb_collection_writer_put_described: no writer or description");
  int64_t count = 0;
  memcpy(&count, meta, sizeof count);
  MB_CHECK(count == 1, MB_ERR_FORMAT, "mb_collection_writer_put_described: a description of "
           "%lld meshes, not one", (long long)count);
  MB_CALL(raw_error(w));
  if (w->n == w->cap) {
    const int64_t cap = w->cap ? 2 * w->cap : 64;
    mb_wset *s = realloc(w->sets, sizeof *s * (size_t)cap);
    MB_CHECK(s, MB_ERR_MEMORY, "out of memory");
    w->sets = s;
    w->cap = cap;
  }
  mb_wset *set = &w->sets[w->n];
  memset(set, 0, sizeof *set);
  const mb_buf b = {(char *)meta, len, len, 0};
  mb_error e = mb_coll_gather_meshes(MPI_COMM_SELF, &b, set); /* copies meta */
  const mb_wmesh *wm = e ? NULL : &set->m[0];
  if (!e && (set->n != 1 || !wm->x.triangles || wm->x.fan_ntri ||
             (wm->x.kind != MB_KIND_SURFACE && wm->x.kind != MB_KIND_TRIANGULATION2D) ||
             2 + wm->x.nfields + wm->x.nface_fields != nextents))
    e = mb_error_set(MB_ERR_ARG, __FILE__, __LINE__, __func__,
                     "mb_collection_writer_put_described: the description of '%s' does not "
                     "give %d datasets of triangles", wm->x.name, nextents);
  mb_h5_quiet q = mb_h5_quiet_begin();
  const htri_t exists = e ? 0 : H5Lexists(w->meshes, wm->x.name, H5P_DEFAULT);
  if (exists < 0)
    e = mb_error_set(MB_ERR_HDF5, __FILE__, __LINE__, __func__, "H5Lexists(%s) failed",
                     wm->x.name);
  else if (exists > 0)
    e = mb_error_set(MB_ERR_ARG, __FILE__, __LINE__, __func__,
                     "mb_collection_write: duplicate mesh name '%s'", wm->x.name);
  mb_coll_extents x = {0};
  mb_error lerr = MB_SUCCESS;
  mb_coll_extent_collect = &x;
  /* no rows: the holder writes them; index a placeholder, numbered by finish */
  if (!e) e = mb_coll_put_mesh(w->meshes, wm, wm->index, &wm->p[0], NULL, &lerr);
  mb_coll_extent_collect = NULL;
  if (!e) e = lerr;
  mb_h5_quiet_end(q);
  if (!e && x.oom)
    e = mb_error_set(MB_ERR_MEMORY, __FILE__, __LINE__, __func__, "out of memory");
  if (!e && x.n != nextents)
    e = mb_error_set(MB_ERR_ARG, __FILE__, __LINE__, __func__,
                     "mesh '%s': %d datasets made, its holder writes %d", wm->x.name, x.n,
                     nextents);
  for (int k = 0; !e && k < x.n; k++)
    if (x.e[k].bytes > 0 && x.e[k].offset < 0)
      e = mb_error_set(MB_ERR_HDF5, __FILE__, __LINE__, __func__,
                       "mesh '%s': dataset %d has no place in %s yet (not allocated at its "
                       "creation)", wm->x.name, k, w->tmp);
  if (!e) memcpy(ext, x.e, sizeof *ext * (size_t)nextents);
  free(x.e);
  if (e) {
    char why[1024];
    snprintf(why, sizeof why, "%s", mb_error_message());
    e = mb_error_set(e, __FILE__, __LINE__, __func__, "cannot write mesh '%s' to %s: %s%s",
                     wm ? wm->x.name : "?", w->tmp, why, full_disk_note(w->tmp));
    mb_coll_wset_free(set);
    return e;
  }
  w->n++;
  return MB_SUCCESS;
}

/* pwrite bytes of buf at offset, whole (retried on EINTR); errno or 0. */
static int pwrite_all(int fd, const void *buf, size_t bytes, int64_t offset) {
  const char *p = buf;
  for (size_t done = 0; done < bytes;) {
    const ssize_t n = pwrite(fd, p + done, bytes - done, (off_t)(offset + (int64_t)done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    done += (size_t)n;
  }
  return 0;
}

mb_error mb_collection_write_extents(int fd, const char *path, const mb_mesh *m, int n,
                                     const mb_collection_extent *ext) {
  MB_CHECK(m && ext && path, MB_ERR_ARG, "mb_collection_write_extents: NULL argument");
  MB_CHECK(holder_writes(m) && n == 2 + m->nfields + m->nface_fields, MB_ERR_ARG,
           "mb_collection_write_extents: %d extents for mesh '%s', which has %d datasets", n,
           m->name, 2 + m->nfields + m->nface_fields);
  const int planar = mb_coll_kind_planar(m->kind);
  const int64_t vcols = planar ? 2 : 3;
  /* the arrays in the order of the datasets: vertices, triangles, fields, face fields */
  for (int k = 0; k < n; k++) {
    const void *buf;
    int64_t bytes;
    if (k == 0) {
      buf = m->xyz;
      bytes = m->nv * vcols * 8;
    } else if (k == 1) {
      buf = m->face_indices;
      bytes = m->nf * 3 * 8;
    } else if (k < 2 + m->nfields) {
      buf = m->fields[k - 2].data;
      bytes = m->nv * m->fields[k - 2].ncomp * 8;
    } else {
      const mb_field *f = &m->face_fields[k - 2 - m->nfields];
      buf = f->data;
      bytes = m->nf * f->ncomp * 8;
    }
    MB_CHECK(ext[k].bytes == bytes, MB_ERR_ARG, "mesh '%s': dataset %d of %lld bytes in %s, "
             "the mesh holds %lld: the extents of another mesh", m->name, k,
             (long long)ext[k].bytes, path, (long long)bytes);
    if (!bytes) continue;
    double *packed = NULL;
    if (k == 0 && planar) { /* the x, y columns of the xyz rows */
      packed = malloc((size_t)bytes);
      MB_CHECK(packed, MB_ERR_MEMORY, "out of memory");
      for (int64_t i = 0; i < m->nv; i++) {
        packed[2 * i] = m->xyz[3 * i];
        packed[2 * i + 1] = m->xyz[3 * i + 1];
      }
      buf = packed;
    }
    const int err = pwrite_all(fd, buf, (size_t)bytes, ext[k].offset);
    free(packed);
    MB_CHECK(!err, MB_ERR_IO, "cannot write mesh '%s' to %s: %s%s", m->name, path,
             strerror(err), full_disk_note(path));
  }
  return MB_SUCCESS;
}
