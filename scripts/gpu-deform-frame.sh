#!/usr/bin/env bash
# deform's GPU frame (issue 26, point 4) on one H100 in one call (a few
# minutes with the build). Configures BUILD (CUDA, sm_90) where it has no
# CMakeCache.txt yet and builds (incrementally) only the targets
# meshbatch, deform_gpu and deform_gpu_proj, runs the deform GPU tests (`ctest -R
# "deform_gpu|deform_cuda"`: the summary and the failures only), generates
# Roof1- and Roof2-size layouts (`generate panels --vertices 20464 |
# 80352`) and times `bench deform --backend cuda --repeats 5`, soft planar,
# at --cg-iterations 3 and 8, for each variant:
#   graph    the CUDA graph of one iteration a launch (--persistent no);
#   persist  the persistent cooperative frame (--persistent yes);
# (auto, the default, takes persist up to 40,000 vertices: Roof1, and
# graph above: Roof2); one line a run: the median 50-iteration frame
# without analysis (ms), its path and the device's time in the frame; then
# a --batch of 200 layouts at k = 3 for each variant (wall, device-busy
# fraction and checksum: the same checksum expected). With BASE=REV (a git
# revision, e.g. main) the same runs of REV's code too, built from `git
# archive REV` into BUILD-base, alternating with this tree's run by run
# (before and after on one machine). Output kept short (the last 12,000
# characters are what a remote caller sees).
#
# Usage: [BASE=REV] [ROUNDS=N] scripts/gpu-deform-frame.sh [BUILD]
#   BUILD default build-gpu; ROUNDS repeats the alternation (default 1).
set -uo pipefail
build=${1:-build-gpu}
rounds=${ROUNDS:-1}
base=${BASE:-}
# build $2 from the source tree $1 (configured where it has no cache yet)
build_tree() {
  local src=$1 dir=$2 t
  if [ ! -f "$dir/CMakeCache.txt" ]; then
    cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DMESHBATCH_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES=90 >"$dir.configure.log" 2>&1 ||
      { tail -30 "$dir.configure.log"; return 1; }
  fi
  : >"$dir.build.log"
  for t in meshbatch deform_gpu deform_gpu_proj; do
    # deform_gpu_proj is this tree's (a base without it builds the others)
    [ $t = deform_gpu_proj ] && ! grep -q deform_gpu_proj "$src/tests/deform/CMakeLists.txt" &&
      continue
    cmake --build "$dir" -j"$(nproc)" --target $t >>"$dir.build.log" 2>&1 ||
      { grep -E "error" "$dir.build.log" | head -20; tail -10 "$dir.build.log"; return 1; }
  done
}
build_tree . "$build" || exit 1
exes=("$(cd "$build" && pwd)/meshbatch")
names=(this)
if [ -n "$base" ]; then
  src="$build-base-src"
  rev=$(git rev-parse "$base") || { echo "BASE=$base: no such revision"; exit 1; }
  if [ "$(cat "$src/.rev" 2>/dev/null)" != "$rev" ]; then # extracted once per revision
    rm -rf "$src" "$build-base" && mkdir -p "$src" && git archive "$rev" | tar -x -C "$src" ||
      { echo "BASE=$base: git archive failed"; exit 1; }
    echo "$rev" >"$src/.rev"
  fi
  build_tree "$src" "$build-base" || exit 1
  exes+=("$(cd "$build-base" && pwd)/meshbatch")
  names+=("base:$(git rev-parse --short "$base")")
fi
exe=${exes[0]}
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
# one bench run of variant $1 (graph | persist) by the CLI $2, the rest as arguments
bench() {
  local v=$1 x=$2 pers=no
  shift 2
  [ $v = persist ] && pers=yes
  "$x" bench deform "$@" --backend cuda --persistent $pers 2>&1
}
echo "code variant n k: frame ms (median of 5, without analysis) | path | device ms in the frame (repeat 1)"
for r in $(seq 1 "$rounds"); do
  for n in 20464 80352; do
    for k in 3 8; do
      for v in graph persist; do
        for e in "${!exes[@]}"; do
          out=$(bench $v "${exes[$e]}" "$work/roof$n.h5" --cg-iterations $k --repeats 5)
          ms=$(echo "$out" | sed -n 's/^median repeat: .*without analysis and factorizations \([0-9.]*\) ms.*/\1/p')
          path=$(echo "$out" | sed -n 's/^repeat 1: frame path \([a-z]*\).*/\1/p')
          dev=$(echo "$out" | sed -n 's/^repeat 1: .*the device.s time in the frame \([0-9.]*\) ms.*/\1/p')
          echo "r$r ${names[$e]} $v $n k=$k: frame ${ms:-?} ms | ${path:-?} | device ${dev:-?} ms"
          echo "$out" | grep -iE "error|fail" | head -3
        done
      done
    done
  done
done
for v in graph persist; do
  for e in "${!exes[@]}"; do
    out=$(bench $v "${exes[$e]}" --batch 200 --cg-iterations 3)
    echo "batch 200 k=3 ${names[$e]} $v: $(echo "$out" | grep -E "^cuda: (wall|device busy|layouts' checksum|frame path)" |
      sed -E 's/^cuda: //; s/\(every output.*//; s/; setup overlapped.*//; s/: the iterations.*\)//' |
      tr '\n' ' ' | cut -c1-400)"
    echo "$out" | grep -iE "error|fail" | head -3
  done
done
