#!/usr/bin/env bash
# The GPU busy fraction of a per-mesh batch on one GPU (issue 10): COUNT
# meshes of mixed sizes (default 200; 47 k to 1.4 M vertices: spot and bob
# subdivided 2 to 4 times, igea once, icospheres of 163 842 and 655 362
# vertices, drawn at random with seed 1), imported into one collection;
# then a per-mesh Taubin job (uniform weights, float32, CUDA backend) of
# each ITERATIONS count, run with the read / compute / write pipeline (the
# default) and without it (MESHBATCH_PIPELINE=0). Each run prints
# meshbatch's two "GPU busy" lines (of the time on meshes, of the whole
# wall), the summary line and --timings. SETTINGS replaces the two runs
# per count: words of environment settings, one run each, settings of one
# run joined by commas (e.g. "MESHBATCH_WRITE=end,MESHBATCH_PIPELINE=1").
#
# Usage: scripts/gpu-batch-busy.sh MESHBATCH OUTDIR [COUNT] [ITERATIONS ...]
#   MESH_DIR: where igea.obj is (default ../shared/data/meshes; left out
#   where absent); spot.obj and bob.obj come from data/meshes. BACKEND=cpu
#   PRECISION=float64 try the script where there is no GPU (no busy line).
set -uo pipefail
exe=${1:?usage: gpu-batch-busy.sh MESHBATCH OUTDIR [COUNT] [ITERATIONS ...]}
out=${2:?usage: gpu-batch-busy.sh MESHBATCH OUTDIR [COUNT] [ITERATIONS ...]}
count=${3:-200}
shift 3 2>/dev/null || shift $#
iters=("$@")
[ ${#iters[@]} -gt 0 ] || iters=(100 1000)
mesh_dir=${MESH_DIR:-../shared/data/meshes}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
SECONDS=0
tpl=()
make() { # name args...: one template PLY
  local f=$work/$1.ply; shift
  "$exe" generate "$@" -o "$f" > /dev/null 2>> "$out/generate.log" && tpl+=("$f")
}
for L in 2 3 4; do
  make spot-L$L subdivide data/meshes/spot.obj --levels $L
  make bob-L$L subdivide data/meshes/bob.obj --levels $L
done
[ -f "$mesh_dir/igea.obj" ] && make igea-L1 subdivide "$mesh_dir/igea.obj" --levels 1
make sphere-163842 sphere --vertices 163842
make sphere-655362 sphere --vertices 655362
echo "templates: ${#tpl[@]} in $SECONDS s"
mkdir -p "$work/files"
i=0
for t in $(awk -v n="$count" -v m="${#tpl[@]}" 'BEGIN { srand(1); for (i = 0; i < n; i++) print int(rand() * m) }'); do
  ln -s "${tpl[$t]}" "$work/files/m$(printf %04d $i).ply"
  i=$((i + 1))
done
"$exe" import "$work/files/*.ply" -o "$work/batch.h5" --quiet || { echo "import failed"; exit 1; }
echo "collection: $count meshes, $(du -b "$work/batch.h5" | cut -f1) bytes, made in $SECONDS s"
for it in "${iters[@]}"; do
  cat > "$work/job.yaml" <<JOB
input: $work/batch.h5
output: $work/out.h5
distribute: per-mesh
backend: ${BACKEND:-cuda}
precision: ${PRECISION:-float32}
stages:
  - op: taubin
    lambda: 0.5
    mu: -0.53
    iterations: $it
    weights: uniform
JOB
  k=0
  for setting in ${SETTINGS:-MESHBATCH_PIPELINE=1 MESHBATCH_PIPELINE=0}; do
    k=$((k + 1))
    log="$out/run-$it-$k.log"
    echo "## $it iterations, ${setting//,/ }"
    env ${setting//,/ } "$exe" run "$work/job.yaml" --timings > "$log" 2>&1 ||
      { tail -5 "$log"; continue; }
    grep -E "GPU busy|(mesh|meshes), [0-9]+ written|^  (read|compute|write|wall)" "$log"
    rm -f "$work"/out.*
  done
done
echo "done in $SECONDS s"
