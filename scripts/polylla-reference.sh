#!/usr/bin/env bash
# Compare meshbatch's Polylla CPU backend with the reference implementation
# (github ssalinasfe/Polylla-Mesh-DCEL), on one Triangle input.
#
#   scripts/polylla-reference.sh [--longest-first | --ties-corners] REF_CHECKOUT INPUT.node|INPUT.ele [WORKDIR]
#
# REF_CHECKOUT  a checkout of the reference (its CMakeLists.txt, main.cpp, src/)
# INPUT         a triangulation as Triangle's .node/.ele
# WORKDIR       where to build and write (default: a new temporary folder)
# --longest-first  give both programs the triangles rotated to start at their
#               longest edge by meshbatch's key, so that the reference breaks
#               ties between equally long edges as meshbatch does (the
#               reference takes the first in corner order); the polygon set
#               of meshbatch does not change
# --ties-corners  run meshbatch under `ties: corners`, the reference's own
#               rule for equally long edges, on the input as it is
#
# Environment: MESHBATCH_BUILD (meshbatch build folder holding
# tests/polylla/polylla_tool; default build-cpu, else build, under the
# repository), REPEAT (meshbatch runs to time, default 5), PYTHON (python3).
#
# Steps: builds the reference out of the source tree with CMake in Release
# (-O3), converts the input to OFF (the reference's node/ele mode writes no
# polygons, its OFF mode does; triangles are turned counter-clockwise as the
# reference assumes), runs the reference and polylla_tool, and compares the
# polygon sets with scripts/polylla_compare.py, which prints one JSON
# report (counts, reference tips, set equality, where the sets differ,
# times) and exits 1 when they differ outside the label-phase regions that
# hold a barrier-edge tip (with --longest-first: input with ties).
set -euo pipefail

rotate=()
ties=(--ties key)
if [[ ${1:-} == --longest-first ]]; then rotate=(--longest-first); shift; fi
if [[ ${1:-} == --ties-corners ]]; then ties=(--ties corners); shift; fi
if [[ $# -lt 2 ]]; then
  sed -n '2,29p' "$0"
  exit 2
fi
ref_src=$(cd "$1" && pwd)
input=$2
[[ -f $input ]] || { echo "polylla-reference: no such input: $input" >&2; exit 2; }
input=$(cd "$(dirname "$input")" && pwd)/$(basename "$input")
work=${3:-$(mktemp -d -t polylla-ref.XXXXXX)}
mkdir -p "$work"
work=$(cd "$work" && pwd)

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
py=${PYTHON:-python3}
build=${MESHBATCH_BUILD:-}
if [[ -z $build ]]; then
  if [[ -x $root/build-cpu/tests/polylla/polylla_tool ]]; then build=$root/build-cpu; else build=$root/build; fi
fi
tool=$build/tests/polylla/polylla_tool
[[ -x $tool ]] || { echo "polylla-reference: $tool missing (cmake --build $build --target polylla_tool)" >&2; exit 2; }

echo "== building the reference from $ref_src in $work/ref-build" >&2
cmake -S "$ref_src" -B "$work/ref-build" -DCMAKE_BUILD_TYPE=Release >"$work/ref-build.log" 2>&1
cmake --build "$work/ref-build" -j2 >>"$work/ref-build.log" 2>&1

stem=$(basename "$input"); stem=${stem%.*}
[[ ${#rotate[@]} -eq 0 ]] || stem=$stem.lf
echo "== $stem: input as OFF ${rotate[*]}" >&2
"$py" "$here/polylla_compare.py" to-off "${rotate[@]}" "$input" "$work/$stem.off"
mb_input=$input
[[ ${#rotate[@]} -eq 0 ]] || mb_input=$work/$stem.off

echo "== running the reference" >&2
(cd "$work" && "$work/ref-build/Polylla" "$stem.off" "$stem.ref") >"$work/$stem.ref.log" 2>&1

echo "== running meshbatch (polylla_tool, ${REPEAT:-5} runs)" >&2
"$tool" run "$mb_input" "$work/$stem.mb.off" --repeat "${REPEAT:-5}" "${ties[@]}" >"$work/$stem.mb.json"

"$py" "$here/polylla_compare.py" compare --tri "$input" --ref "$work/$stem.ref.off" \
  --ref-log "$work/$stem.ref.log" --mb "$work/$stem.mb.off" --mb-json "$work/$stem.mb.json" \
  --json "$work/$stem.compare.json"
