/* meshbatch: the runner's partitioned driving (see mb_runner.h): every
 * dataset split over all ranks through the domain (partition/mb_domain.h),
 * whose reader callbacks read the runner's inputs; the stages on it; the
 * checkpoint of a split dataset and its slabs read back on resume. */
#include "mb_runner_private.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mb_collection.h"
#include "mb_log.h"
#include "mb_mpi.h"
#include "mb_partition.h"

/* ------------------------------------------------------------- partitioned */

/* The deepest ghost rows (depth or width) any stage of the job reads. */
static int ghost_depth(const mb_job *job) {
  int depth = 1;
  for (int s = 0; s < job->nstages; s++)
    if (job->stages[s].op->ghost_depth > depth) depth = job->stages[s].op->ghost_depth;
  return depth;
}

/* Whether source s is a dataset of a collection (readable by slabs). */
static int from_collection(const rank_state *st, int64_t s) {
  return st->inputs->sources[s].collection >= 0;
}

/* The domain's reader (mb_domain_source): source s of the inputs. */
typedef struct source_reader {
  rank_state *st;
  int64_t s;
  int device_failed; /* rows_read: the device could not be had (agreed) */
} source_reader;

static mb_error read_whole(void *ctx, mb_mesh **m) {
  const source_reader *r = ctx;
  MB_CALL(mb_inputs_read(r->st->inputs, r->s, m));
  mb_error e = runner_fit_kind(r->st, *m);
  if (e) {
    mb_mesh_free(*m);
    *m = NULL;
  }
  return e;
}

static mb_error read_info(void *ctx, mb_kind *kind, int64_t *nv, int64_t *nf, int64_t shape[3]) {
  const source_reader *r = ctx;
  const mb_job *job = r->st->job;
  const mb_source *src = &r->st->inputs->sources[r->s];
  MB_CHECK(!src->error[0], MB_ERR_IO, "%s", src->error);
  const mb_mesh_info *info = mb_collection_info(r->st->inputs->collections[src->collection],
                                                src->entry);
  MB_CHECK(info->kind == job->stages[0].op->in, MB_ERR_ARG,
           "%s:%d: stage 0 (%s) reads %s datasets, and %s is a %s dataset", job->path,
           job->stages[0].line, job->stages[0].op->name, mb_kind_name(job->stages[0].op->in),
           src->path, mb_kind_name(info->kind));
  *kind = info->kind;
  *nv = info->nv;
  *nf = info->nf;
  for (int a = 0; a < 3; a++) shape[a] = info->shape[a];
  return MB_SUCCESS;
}

static mb_error read_rows(void *ctx, int64_t v0, int64_t nvrows, int64_t f0, int64_t nfrows,
                          mb_mesh_slab *slab) {
  const source_reader *r = ctx;
  const mb_source *src = &r->st->inputs->sources[r->s];
  return mb_collection_read_slab(r->st->inputs->collections[src->collection], src->entry, v0,
                                 nvrows, f0, nfrows, slab);
}

static mb_error read_block(void *ctx, const int64_t lo[3], const int64_t n[3],
                           mb_mesh_slab *slab) {
  const source_reader *r = ctx;
  const mb_source *src = &r->st->inputs->sources[r->s];
  return mb_collection_read_grid_block(r->st->inputs->collections[src->collection], src->entry,
                                       lo, n, slab);
}

/* The rows are read: the device, which initialised meanwhile on its own
 * thread, before the domain partitions (which may run on it). A device
 * that cannot be had fails the run, not the mesh (device_failed). */
static mb_error rows_read(void *ctx) {
  source_reader *r = ctx;
  const mb_error e = mb_agree(r->st->comm, runner_device_ready(r->st));
  r->device_failed = e != MB_SUCCESS;
  return e;
}

/* One dataset split over all ranks: the domain of the first stage's split
 * (partition/mb_domain.h), the stages on it, and this rank's rows of the
 * result in *slab for the collective write. Collective; errors agreed. */
static mb_error process_partitioned(rank_state *st, int64_t s, mb_mesh_slab *slab,
                                    mb_pass_timing *t, int *stopped, int *device_failed) {
  const mb_job *job = st->job;
  source_reader reader = {.st = st, .s = s};
  const mb_domain_source src = {.ctx = &reader, .by_rows = from_collection(st, s),
                                .name = st->inputs->sources[s].name,
                                .path = st->inputs->sources[s].path, .read_whole = read_whole,
                                .read_info = read_info, .read_rows = read_rows,
                                .read_block = read_block, .rows_read = rows_read};
  const mb_domain_spec spec = {.split = mb_op_partitioned(job->stages[0].op),
                               .depth = ghost_depth(job), .partitioner = job->partitioner,
                               .partition_file = job->partition};
  mb_domain *d = NULL;
  const mb_error de = mb_domain_create(st->comm, &spec, &src, &d);
  *device_failed = reader.device_failed;
  MB_CALL(de);
  d->slab.rows->index = s;
  mb_op_stop stop;
  runner_stop_init(st, &stop, d->comm, st->inputs->sources[s].name);
  const mb_op_ctx ctx = {.backend = &st->backend, .precision = job->precision, .halo = job->halo,
                         .timing = t, .computed = &st->computed, .stop = &stop};
  mb_error e = runner_run_stages(st, &ctx, NULL, d);
  mb_op_stop_end(&stop);
  *stopped = e && stop.stopped; /* agreed: every rank stopped at the same step */
  if (!e) e = mb_domain_finish(d);
  if (!e) {
    mb_domain_take_slab(d, slab);
    e = mb_domain_report(d, slab->rows->name, t, st->backend.kind == MB_BACKEND_CUDA);
  }
  mb_domain_free(d);
  return e;
}

/* This rank's slab of a checkpointed mesh, read back from ck: a block of
 * a grid, else even blocks of vertex and
 * face rows. Collective (it opens the file on every rank). */
static mb_error read_checkpoint_slab(const rank_state *st, const char *ck, int64_t s,
                                     mb_mesh_slab *slab) {
  mb_collection *c = NULL;
  MB_CALL(runner_open_checkpoint_mesh(st->comm, ck, &c));
  const mb_mesh_info *in = mb_collection_info(c, 0);
  int64_t lo[3], n[3], v0, nv, f0, nf;
  mb_error e = mb_domain_rows(st->comm, in->kind, in->nv, in->nf, in->shape, lo, n, &v0, &nv,
                              &f0, &nf);
  if (!e)
    e = in->kind == MB_KIND_GRID3D ? mb_collection_read_grid_block(c, 0, lo, n, slab)
                                   : mb_collection_read_slab(c, 0, v0, nv, f0, nf, slab);
  mb_collection_close(c);
  MB_CALL(e);
  slab->rows->index = s;
  return MB_SUCCESS;
}

mb_error runner_run_partitioned(rank_state *st) {
  /* the device is waited for once the first domain's rows are read
   * (rows_read), and at the end where no domain was made (every mesh
   * resumed, a stop before the first) */
  for (int64_t s = 0; s < st->inputs->nsources; s++) {
    mesh_result res = {.index = s, .rank = 0};
    snprintf(res.backend, sizeof res.backend, "%s/%d",
             st->backend.kind == MB_BACKEND_CUDA ? "cuda" : "cpu", st->size);
    mb_mesh_slab slab = {0};
    double t0 = mb_wtime();
    mb_pass_timing t = {0};
    char ck[4400];
    runner_checkpoint_path(st, s, ck, sizeof ck);
    int from_ckpt = st->job->resume && ck[0] && access(ck, F_OK) == 0;
    MB_CALL(mb_all_min_int(st->comm, &from_ckpt)); /* the same choice on every rank */
    if (from_ckpt) { /* finished before: this rank's slab of it, read back */
      mb_error e = mb_agree(st->comm, read_checkpoint_slab(st, ck, s, &slab));
      if (!e) e = runner_keep_slab(st, &slab);
      MB_CALL(e);
      res.ok = 1;
      res.nv = slab.nv;
      res.nf = slab.nf;
      snprintf(res.backend, sizeof res.backend, "resumed");
      st->resumed += st->rank == 0;
      if (st->rank == 0) {
        mesh_result *r = realloc(st->results, sizeof *r * (size_t)(st->nresults + 1));
        MB_CHECK(r, MB_ERR_MEMORY, "out of memory");
        st->results = r;
        st->results[st->nresults++] = res;
        mb_log(MB_LOG_NORMAL, "[rank 0] %s: from the checkpoint (%s)", st->inputs->sources[s].name,
               ck);
      }
      continue;
    }
    int stop = runner_stop_requested(); /* every rank stops before the same mesh */
    MB_CALL(mb_all_max_int(st->comm, &stop));
    if (stop) break;
    st->computed = 0;
    int stopped = 0;
    int device_failed = 0;
    mb_error e = process_partitioned(st, s, &slab, &t, &stopped, &device_failed);
    if (device_failed) return e; /* the run's error, as every rank's (agreed) */
    if (stopped) { /* a signal, in the middle of the mesh: not finished, not kept */
      mb_mesh_free(slab.rows);
      mb_error_clear();
      break;
    }
    res.seconds = mb_wtime() - t0;
    res.ok = !e;
    const int grid = !e && slab.rows && slab.rows->kind == MB_KIND_GRID3D;
    if (!e) {
      res.nv = slab.nv;
      res.nf = grid ? -1 : slab.nf;
      e = mb_agree(st->comm, runner_add_provenance(st, slab.rows, res.seconds, st->computed));
      if (!e && ck[0]) { /* every rank's slab, one collective write, renamed into place */
        /* a checkpoint that cannot be written (a full disk) ends the run, as
         * in a per-mesh run: the output is not written, an earlier one kept */
        const mb_error ce =
            mb_agree(st->comm, mb_collection_write_checkpoint(st->comm, ck, 0, NULL, 1, &slab));
        if (ce) {
          mb_mesh_free(slab.rows);
          return ce;
        }
      }
      if (!e) e = runner_keep_slab(st, &slab);
      res.ok = !e; /* a failure after the compute (agreed) fails the mesh too */
    }
    if (e) snprintf(res.message, sizeof res.message, "%s", mb_error_message());
    if (st->rank == 0) {
      mesh_result *r = realloc(st->results, sizeof *r * (size_t)(st->nresults + 1));
      MB_CHECK(r, MB_ERR_MEMORY, "out of memory");
      st->results = r;
      st->results[st->nresults++] = res;
      char passes[160] = ""; /* only where the op timed its passes */
      if (t.passes > 0 && t.pipelined)
        snprintf(passes, sizeof passes, " (%.3f ms/pass on rank 0, passes pipelined on the GPU)",
                 1e3 * t.wall_s / t.passes);
      else if (t.passes > 0)
        snprintf(passes, sizeof passes, " (%.3f ms/pass compute, %.3f ms/pass exchange on rank 0)",
                 1e3 * t.compute_s / t.passes, 1e3 * t.exchange_s / t.passes);
      if (res.ok && grid)
        mb_log(MB_LOG_NORMAL, "[%d %s] %s: %lld points, %s, %.3f s%s", st->size,
               mb_plural(st->size, "rank", "ranks"), st->inputs->sources[s].name, (long long)res.nv,
               res.backend, res.seconds, passes);
      else if (res.ok)
        mb_log(MB_LOG_NORMAL, "[%d %s] %s: %lld vertices, %lld faces, %s, %.3f s%s", st->size,
               mb_plural(st->size, "rank", "ranks"), st->inputs->sources[s].name, (long long)res.nv,
               (long long)res.nf, res.backend, res.seconds, passes);
      else
        mb_log_error("%s: skipped: %s", st->inputs->sources[s].name, res.message);
    }
    mb_mesh_free(slab.rows);
    st->busy_s += mb_wtime() - t0;
    runner_inject_fault(st, st->nslabs);
  }
  return mb_agree(st->comm, runner_device_ready(st));
}
