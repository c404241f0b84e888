#!/usr/bin/env bash
# deform's GPU frame (issue 26, point 4): the CG kernels' variants on one
# H100 in one call (a few minutes with the build). Configures and builds
# BUILD (CUDA, sm_90; only the targets meshbatch and deform_gpu) where it
# has no meshbatch yet, runs the deform GPU tests (`ctest -R
# "deform_gpu|deform_cuda"`: the summary and the failures only), generates
# Roof1- and Roof2-size layouts (`generate panels --vertices 20464 |
# 80352`) and times `bench deform --backend cuda --repeats 5`, soft planar,
# at --cg-iterations 3 and 8, for each variant:
#   rows     the graphs, the CG's product a thread a row (the default);
#   cols     the graphs, a thread a row and column (MB_DEFORM_SPMV=cols);
#   quad     the graphs, 4 threads a row (MB_DEFORM_SPMV=quad);
#   persist  the persistent cooperative frame (--persistent yes);
# one line a run: the median 50-iteration frame without analysis (ms), its
# path and the device's time in the frame; then a --batch of 200 layouts at
# k = 3 for each variant (wall, device-busy fraction and checksum: the
# same checksum expected). Output kept short (the last 12,000 characters
# are what a remote caller sees).
#
# Usage: scripts/gpu-deform-frame.sh [BUILD]   (default build-gpu)
#   ROUNDS=N repeats the variants' alternation N times (default 1).
set -uo pipefail
build=${1:-build-gpu}
rounds=${ROUNDS:-1}
if [ ! -x "$build/meshbatch" ] || [ ! -x "$build/tests/deform/deform_gpu" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DMESHBATCH_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 >"$build.configure.log" 2>&1 ||
    { tail -30 "$build.configure.log"; exit 1; }
  cmake --build "$build" -j"$(nproc)" --target meshbatch deform_gpu >"$build.build.log" 2>&1 ||
    { grep -E "error" "$build.build.log" | head -20; tail -10 "$build.build.log"; exit 1; }
fi
exe=$(cd "$build" && pwd)/meshbatch
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
git log -1 --format='code: %h %s' 2>/dev/null | cut -c1-160
(cd "$build" && ctest -R "deform_gpu|deform_cuda" --output-on-failure 2>&1 |
  grep -E "tests passed|tests failed|Failed|\*\*\*|Error|error|assert|DIFFER" | head -40)
work="$build/deform-frame"
mkdir -p "$work"
for n in 20464 80352; do
  [ -f "$work/roof$n.h5" ] || "$exe" generate panels --vertices $n -o "$work/roof$n.h5" >/dev/null ||
    exit 1
done
# one bench run of variant $1 (rows | cols | quad | persist) with the rest as arguments
bench() {
  local v=$1 spmv=rows pers=auto
  shift
  case $v in cols | quad) spmv=$v ;; persist) pers=yes ;; esac
  MB_DEFORM_SPMV=$spmv "$exe" bench deform "$@" --backend cuda --persistent $pers 2>&1
}
echo "variant n k: frame ms (median of 5, without analysis) | path | device ms in the frame (repeat 1)"
for r in $(seq 1 "$rounds"); do
  for n in 20464 80352; do
    for k in 3 8; do
      for v in rows cols quad persist; do
        out=$(bench $v "$work/roof$n.h5" --cg-iterations $k --repeats 5)
        ms=$(echo "$out" | sed -n 's/^median repeat: .*without analysis and factorizations \([0-9.]*\) ms.*/\1/p')
        path=$(echo "$out" | sed -n 's/^repeat 1: frame path \([a-z]*\).*/\1/p')
        dev=$(echo "$out" | sed -n 's/^repeat 1: .*the device.s time in the frame \([0-9.]*\) ms.*/\1/p')
        echo "r$r $v $n k=$k: frame ${ms:-?} ms | ${path:-?} | device ${dev:-?} ms"
        echo "$out" | grep -iE "error|fail" | head -3
      done
    done
  done
done
for v in rows cols quad persist; do
  out=$(bench $v --batch 200 --cg-iterations 3)
  echo "batch 200 k=3 $v: $(echo "$out" | grep -E "^cuda: (wall|device busy|layouts' checksum|frame path)" |
    sed -E 's/^cuda: //; s/\(every output.*//; s/; setup overlapped.*//; s/: the iterations.*\)//' |
    tr '\n' ' ' | cut -c1-400)"
  echo "$out" | grep -iE "error|fail" | head -3
done
