#!/usr/bin/env bash
# deform's GPU frame (issue 26, point 4): the persistent cooperative frame
# against the CUDA graphs, one H100, a few minutes. Configures and builds
# BUILD (CUDA, sm_90; the targets meshbatch and deform_gpu) where it has
# no meshbatch yet, runs the deform GPU
# tests (`ctest -L gpu -R deform`), generates Roof1- and Roof2-size layouts
# (`generate panels --vertices 20464 | 80352`) and times `bench deform
# --backend cuda` on each, soft planar, with --cg-iterations 3 and 8, the
# two paths alternating (--persistent auto, then no) in the same process
# order, 5 repeats each; prints each run's frame path, per-50-iteration
# frame and device lines; then the persistent frame with 2 row tiles a
# block (MB_DEFORM_FRAME_TILES=2) against the default grid, and a --batch
# of 200 layouts both ways (busy fraction and checksum: the same checksum
# expected).
#
# Usage: scripts/gpu-deform-frame.sh [BUILD]   (default build-gpu)
#   ROUNDS=N repeats the alternation N times (default 2).
set -uo pipefail
build=${1:-build-gpu}
rounds=${ROUNDS:-2}
if [ ! -x "$build/meshbatch" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DMESHBATCH_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 >"$build.configure.log" 2>&1 ||
    { tail -30 "$build.configure.log"; exit 1; }
  # only what the deform GPU tests and the benchmark need
  cmake --build "$build" -j"$(nproc)" --target meshbatch deform_gpu >"$build.build.log" 2>&1 ||
    { tail -40 "$build.build.log"; exit 1; }
fi
exe=$(cd "$build" && pwd)/meshbatch
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
git log -1 --format='code: %h %s' 2>/dev/null
(cd "$build" && ctest -L gpu -R deform --output-on-failure 2>&1 | tail -15)
work="$build/deform-frame"
mkdir -p "$work"
for n in 20464 80352; do
  [ -f "$work/roof$n.h5" ] || "$exe" generate panels --vertices $n -o "$work/roof$n.h5" >/dev/null ||
    exit 1
done
for r in $(seq 1 "$rounds"); do
  for n in 20464 80352; do
    for k in 3 8; do
      for pers in auto no; do
        echo "== round $r: $n vertices, --cg-iterations $k, --persistent $pers"
        "$exe" bench deform "$work/roof$n.h5" --backend cuda --cg-iterations $k --repeats 5 \
          --persistent $pers 2>&1 |
          grep -E "^repeat 1: frame path|^median|device.s time in the frame|error"
      done
    done
  done
done
# the grid: the default (one tile a block where the grid fits) against 2
# tiles a block (MB_DEFORM_FRAME_TILES=2: half the blocks), -v logs it
for tiles in 1 2; do
  for n in 20464 80352; do
    echo "== $n vertices, --cg-iterations 3, persistent, MB_DEFORM_FRAME_TILES=$tiles"
    MB_DEFORM_FRAME_TILES=$tiles "$exe" bench deform "$work/roof$n.h5" -v --backend cuda \
      --cg-iterations 3 --repeats 5 2>&1 |
      grep -E "persistent frame: [0-9]+ blocks|^repeat 1: frame path|^median|error" | sort -u
  done
done
for pers in auto no; do
  echo "== --batch 200, --cg-iterations 3, --persistent $pers"
  "$exe" bench deform --batch 200 --backend cuda --cg-iterations 3 --persistent $pers 2>&1 |
    grep -E "^cuda:|error"
done
