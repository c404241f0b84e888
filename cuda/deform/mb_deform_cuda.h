/* meshbatch: the deform op's CUDA backend (cuda/deform/mb_deform.cu; builds
 * without CUDA link mb_deform_cuda_stub.c, which returns MB_ERR_UNSUPPORTED).
 * The method and the report are mb_deform.h's; this header only adds the
 * entry point. */
#ifndef MB_DEFORM_CUDA_H
#define MB_DEFORM_CUDA_H

#include "mb_deform.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How mb_deform_run_cuda runs (NULL: every field 0). */
typedef struct mb_deform_cuda_opts {
  int sync_phases; /* 1: wait for the device at each phase boundary, so that
                      project_ms, solve_ms and update_ms are the phases' own
                      times; 0: the device pipelined (the phase times are then
                      the host's enqueue times; the total is the frame) */
  int linalg_cg;   /* solver pcg: 0 (the default) this room's CG (mb_deform.cu:
                      the method of the CPU's pcg with rounded, fixed-order dot
                      products and its scalars on the device, its iterations
                      CUDA graphs; uncapped the host reads its state once per 8
                      iterations, capped by the key cg_iterations (the CPU's
                      mb_deform_cg, step for step) not at all); 1 the linalg
                      layer's device PCG (mb_cuda_pcg_solve: the CPU PCG's
                      iterates, bit for bit, its convergence checks on the
                      host every iteration; cg_iterations >= 1 uses the
                      room's CG all the same) */
  int persistent;  /* 1: soft runs of the capped CG (cg_iterations >= 1, no
                      history, phases not synchronised) run each batch of 50
                      iterations as one persistent cooperative launch
                      (mb_deform_frame.cu) where the device allows (cooperative
                      launch, the grid co-resident), else as CUDA graphs;
                      0 (the default, auto): the persistent launch for meshes
                      of at most MB_DEFORM_PERSISTENT_ROWS vertices, the graphs
                      above (measured on an H100, 2026-11-28, docs/benchmarks.md:
                      persistent 2.2 ms against the graphs' 2.7 at Roof1, 20 k
                      rows, and 0.41 s against 0.53 s for a batch of 200
                      layouts of 1-5 k; graphs 5.8 ms against 6.9 at Roof2,
                      80 k, with row tiles of 8 warps, 5.5 against 5.6 with
                      tile_warps' 10);
                      -1: the graphs; the same bits either way;
                      rep->persistent says which ran */
  int row_threads; /* the room's CG's threads a row (its right-hand side, start,
                      steps and take): 1 (a thread a row, its three columns in
                      one pass over H's entries), 3 (a thread a row and
                      column: three times the threads, a third of the
                      latency-bound chain each), 0 (the default, auto): 3 for
                      meshes of at most MB_DEFORM_SPLIT_ROWS vertices, 1 above
                      (measured on an H100, docs/benchmarks.md: 3 threads a
                      row took Roof1's persistent frame from 2.9 to 2.6 ms and
                      a batch of 200 layouts from 0.61 to 0.47 s, but Roof2's
                      graphs from 5.9 to 6.7 ms); the sums' order differs
                      between the two (not the bits of a row's product), so
                      the positions agree to rounding, not bitwise; the
                      persistent frame and the graphs agree bitwise at either */
  int tile_warps;  /* the warps of the room's CG's row tiles (a graph kernel's
                      block, a persistent frame's row tile): 8, 10 or 16, or
                      0 (the default, auto; other values too): whichever puts
                      fewest warps on the device's busiest SM, then the fewest
                      tiles (cuda/deform/mb_deform_gpu.cuh, tile_warps;
                      measured on an H100, docs/benchmarks.md:
                      Roof2 at 10, 320 threads, 5.5 ms against 5.9 with the
                      graphs and 6.9 with the persistent frame at 8); like
                      row_threads, the sums' order differs (rounding), the
                      persistent frame and the graphs agree bitwise at either */
} mb_deform_cuda_opts;

/* The largest mesh (vertices) for which `persistent` auto takes the
 * persistent frame (between the measured 20,464, faster, and 80,352,
 * slower). */
#define MB_DEFORM_PERSISTENT_ROWS 40000

/* The largest mesh (vertices) for which `row_threads` auto takes three
 * threads a row (between the measured 20,464, faster, and 80,352,
 * slower). */
#define MB_DEFORM_SPLIT_ROWS 40000

/* mb_deform_run_cpu's contract (mb_deform.h) on the current CUDA device
 * (solver auto runs pcg here, cholesky on the CPU):
 * the same iterations, stopping rules, report and errors (the same messages
 * for bad inputs; they are found on the host before any device work). The
 * system is assembled on the host by the CPU's functions once per penalty
 * value and uploaded; the projections, the right-hand side, the solve and
 * the ALM updates run on the device (cuda/deform/mb_deform.cu says how).
 * Differences: rep->energy (if non-NULL) is filled with NaN (the energy is
 * the CPU's only); rep->analyze_ms is the whole setup (host pattern and
 * parts, uploads, csrchol's analysis, the iteration's CUDA graph);
 * rep->finish_ms and device_ms are set (mb_deform.h); the frame's final
 * residuals and handle error are computed on the device (the host's
 * figures to rounding); the positions agree with the CPU's
 * to rounding (tests/deform/test_gpu_deform.c: within 1e-8 of the bounding
 * box). o: NULL or the options above (borrowed). Not collective.
 * Errors: those of mb_deform_run_cpu, MB_ERR_CUDA, MB_ERR_UNSUPPORTED (a
 * build without CUDA). */
mb_error mb_deform_run_cuda(const mb_deform_params *p, mb_deform_mesh *dm, mb_deform_report *rep,
                            const mb_deform_cuda_opts *o);

/* A mesh's host setup done ahead of its run (opaque): the batch pipeline
 * (a two-stage software pipeline: mesh i+1's host setup on another thread
 * while mesh i's frame runs on the device; `bench deform --batch`). */
typedef struct mb_deform_cuda_prep mb_deform_cuda_prep;

/* The part of mb_deform_run_cuda's setup that need not wait for the
 * device, for p, dm and o: on the host the checks in the same order with
 * the same messages, the system's pattern and parts, mb_deform_setup, H in
 * the SELL-32 layout; then, for the device CG on meshes up to 40,000
 * vertices, the mesh's uploads into device buffers of their own on a
 * non-blocking stream of their own (copies and two memsets; at most two
 * prepared meshes hold such buffers at once, others are uploaded by their
 * run), which the run waits for on the device. So it may run on one
 * thread (the device of the run current there) while another thread's
 * run uses the device; thread-safe against runs of other meshes (the
 * error state is per thread). dm (and every array it points to) and o are borrowed and
 * must outlive the run; dm->x is modified as mb_deform_setup does (hard
 * handles onto their targets). *out: the new prepared setup, owned by the
 * caller until mb_deform_run_cuda_prepared consumes it (or
 * mb_deform_cuda_prep_free), NULL after an error. Not collective.
 * Errors: those of mb_deform_run_cuda's host checks (MB_ERR_ARG,
 * MB_ERR_NUMERIC: the same messages), MB_ERR_MEMORY, MB_ERR_UNSUPPORTED
 * (a build without CUDA). */
mb_error mb_deform_cuda_prepare(const mb_deform_params *p, mb_deform_mesh *dm,
                                const mb_deform_cuda_opts *o, mb_deform_cuda_prep **out);

/* mb_deform_run_cuda on a prepared mesh: the uploads, the frame, the final
 * read and the positions' download; the device work and so the results
 * are bitwise those of mb_deform_run_cuda (tests/deform/test_gpu_deform.c).
 * rep as mb_deform_run_cuda fills it (rep->analyze_ms includes the
 * preparation's wall time, wherever it ran). prep is consumed (freed),
 * also on error. Not collective; one run at a time per process.
 * Errors: those of mb_deform_run_cuda. */
mb_error mb_deform_run_cuda_prepared(mb_deform_cuda_prep *prep, mb_deform_report *rep);

/* Free a prepared setup that will not be run (NULL: no-op). Cannot fail. */
void mb_deform_cuda_prep_free(mb_deform_cuda_prep *prep);

/* Free the device buffers and the graph that mb_deform_run_cuda keeps from
 * run to run in this process (grown, never shrunk, so that a batch of
 * meshes allocates only where a mesh is larger than all before it); the
 * next run allocates anew. Not collective; not thread-safe (nor are the
 * runs: one rank's meshes one after the other); cannot fail. A no-op in
 * builds without CUDA. */
void mb_deform_cuda_release(void);

#ifdef __cplusplus
}
#endif
#endif
