#!/usr/bin/env bash
# The deform op's CPU frame (issue 26, point 4) on a GPU host: build with
# CUDA, the deform tests (the gpu-labelled ones too: the device's fused CG
# against the CPU's k-step CG within 1e-13, whose sums are now per chunk of
# rows), then `meshbatch bench deform --backend cpu --cg-iterations 3` on
# Roof1 and Roof2 with 1, 2 and all host threads, and the device's frame
# at k = 3 for comparison. With BASE=PATH (a meshbatch built from main)
# each CPU run alternates with the same run of that binary. Each repeat's
# per-frame phases (projection, solve) are printed with the medians, and
# the planar projection's micro-benchmark (bench_deform_proj: scalar
# against 4 faces in lockstep) runs once before the frames.
#
# Usage: scripts/deform-cpu-frame.sh OUTDIR [CUDA_ARCH]
# Dependencies must be installed or on CMAKE_PREFIX_PATH.
set -uo pipefail
out=${1:?usage: deform-cpu-frame.sh OUTDIR [CUDA_ARCH]}
arch=${2:-90}
mkdir -p "$out"
build=build-gpu
source "$(dirname "$0")/gpu-build.sh"
mb_gpu_build "$build" "$out" "$arch"
mb=$build/meshbatch
(cd $build && ctest -R deform --output-on-failure) 2>&1 | tee "$out/ctest.log" | tail -15
# the planar projection alone, one thread: scalar against batched (4 quads
# in lockstep), 80,000 quads, random (noise 0.1) and near-planar (0.001)
for nz in 0.1 0.001; do
  $build/tests/deform/bench_deform_proj 80000 5 10 $nz | tail -1
done 2>&1 | tee "$out/proj.txt"
$mb generate panels --vertices 20464 -o "$out/roof1.h5" > /dev/null
$mb generate panels --vertices 80352 -o "$out/roof2.h5" > /dev/null
for r in roof1 roof2; do
  for t in 1 2 "$(nproc)"; do
    for b in ${BASE:+"$BASE"} "$mb"; do
      echo "== $r, OMP_NUM_THREADS=$t, $b, load $(cut -d' ' -f1-3 /proc/loadavg)"
      OMP_NUM_THREADS=$t "$b" bench deform "$out/$r.h5" --backend cpu --solver pcg \
        --cg-iterations 3 --repeats 3 | grep -E "median repeat|per 50-iteration frame: projection"
    done
  done
  echo "== $r, cuda"
  "$mb" bench deform "$out/$r.h5" --backend cuda --cg-iterations 3 --repeats 3 | grep "median repeat"
done 2>&1 | tee "$out/frames.txt"
