#!/bin/sh
# One willmore_flow step on a mesh: meshbatch's CPU backend against the flo
# project's host implementation (tests/willmore/flo_willmore.cpp, built
# where CMake was given -DMESHBATCH_LIBIGL_DIR and -DMESHBATCH_FLO_DIR), in
# the same run, alternating, one thread each (flo's Eigen solvers are
# sequential):
#
#   scripts/willmore-flo-bench.sh BUILD_DIR MESH.obj [ROUNDS] [TAU]
#
# Per round: `meshbatch bench willmore MESH --steps 5` (its "per step" line:
# the median of steps 2-5) and flo_willmore in both modes (--mode flo: flo's
# own willmore_flow step, which analyses and factors both matrices on every
# call; only its first step is finite on spot; --mode rho: flo's pieces with
# meshbatch's curvature change, median of 5 steps). Prints every figure and
# the ratios flo / meshbatch (never asserted). Default 3 rounds, tau 0.05.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 BUILD_DIR MESH.obj [ROUNDS] [TAU]" >&2; exit 2; }
build=$1; mesh=$2; rounds=${3:-3}; tau=${4:-0.05}
flo=$build/tests/willmore/flo_willmore
[ -x "$flo" ] || { echo "$flo not built: configure with -DMESHBATCH_LIBIGL_DIR and -DMESHBATCH_FLO_DIR" >&2; exit 77; }
tmp=$(mktemp -d)
export OMP_NUM_THREADS=1
r=1
while [ "$r" -le "$rounds" ]; do
  mb=$("$build/meshbatch" bench willmore "$mesh" --steps 5 --time-step "$tau" | awk '/per step:/ {print $3; exit}')
  fm=$("$flo" "$mesh" "$tmp/f.npy" --steps 5 --tau "$tau" --mode flo 2>/dev/null | awk '/ms\/step/ {print $(NF-1)}')
  rm=$("$flo" "$mesh" "$tmp/r.npy" --steps 5 --tau "$tau" --mode rho 2>/dev/null | awk '/ms\/step/ {print $(NF-1)}')
  echo "round $r: meshbatch $mb ms/step, flo (own step) $fm ms, flo (pieces, --mode rho) $rm ms:" \
       "$(awk -v a="$fm" -v b="$mb" 'BEGIN {printf "%.1f", a / b}')x and" \
       "$(awk -v a="$rm" -v b="$mb" 'BEGIN {printf "%.1f", a / b}')x"
  r=$((r + 1))
done
rm -rf "$tmp"
