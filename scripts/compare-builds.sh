#!/usr/bin/env bash
# Run the same jobs with two meshbatch executables and compare the outputs
# bit for bit (meshbatch compare --rtol 0: meshes, faces, face fields and
# grid fields), for a change that must not change any result: every op,
# per mesh and partitioned (metis, blocks, parmetis where built), on 1-4
# ranks, on the CPU and, with BACKENDS="cpu cuda", on the GPU (float64 and
# float32 smoothing).
# Usage: scripts/compare-builds.sh OLD_MESHBATCH NEW_MESHBATCH WORKDIR
# Prints one line per job and a last line "N jobs, M differ"; exit 1 if any
# differs or fails.
set -uo pipefail
old=${1:?usage: compare-builds.sh OLD NEW WORKDIR}
new=${2:?usage: compare-builds.sh OLD NEW WORKDIR}
dir=${3:?usage: compare-builds.sh OLD NEW WORKDIR}
backends=${BACKENDS:-cpu}
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$dir"
mpi="mpirun --oversubscribe --bind-to none"
[ "$(id -u)" = 0 ] && mpi="$mpi --allow-run-as-root"

$new generate delaunay --points 20000 --seed 3 -o "$dir/tri.node" > /dev/null
$new import "$dir/tri.node" -o "$dir/tri.h5" > /dev/null
$new generate grid --shape 24,20,28 --field u=sines --field v=noise -o "$dir/grid64.h5" > /dev/null
$new generate grid --shape 24,20,28 --field u=gaussian --dtype float32 -o "$dir/grid32.h5" > /dev/null
$new import "$src/data/meshes/spot.obj" "$src/data/meshes/bob.obj" -o "$dir/meshes.h5" > /dev/null

smooth='  - {op: taubin, lambda: 0.5, mu: -0.53, iterations: 10, weights: cotangent}
  - {op: laplacian, lambda: 0.3, iterations: 3, weights: uniform, boundary: fixed}'
grid='  - {op: heat, steps: 5, dt: 1.0e-6}
  - {op: derivative, axis: all}'
total=0 bad=0
job() { # NAME NP INPUT STAGES KEYS...
  local name=$1 np=$2 input=$3 stages=$4; shift 4
  for exe in old new; do
    local e=$old; [ $exe = new ] && e=$new
    {
      printf 'input:\n  - %s\noutput: %s/%s.%s.h5\n' "$input" "$dir" "$name" "$exe"
      for kv in "$@"; do printf '%s\n' "$kv"; done
      printf 'stages:\n%s\n' "$stages"
    } > "$dir/$name.$exe.yaml"
    if ! $mpi -np "$np" "$e" run "$dir/$name.$exe.yaml" -q > "$dir/$name.$exe.log" 2>&1; then
      echo "FAIL  $name: the $exe build failed (log: $dir/$name.$exe.log)"; tail -3 "$dir/$name.$exe.log"
      total=$((total + 1)); bad=$((bad + 1)); return
    fi
  done
  total=$((total + 1))
  if $new compare "$dir/$name.old.h5" "$dir/$name.new.h5" --rtol 0 > "$dir/$name.compare.log" 2>&1; then
    echo "same  $name"
  else
    echo "DIFF  $name"; tail -3 "$dir/$name.compare.log"; bad=$((bad + 1))
  fi
}
for b in $backends; do
  precs=float64; [ $b = cuda ] && precs="float64 float32"
  for p in $precs; do
    job smooth_$b${p}_permesh_2 2 "$dir/meshes.h5" "$smooth" "backend: $b" "precision: $p"
    for np in 1 2 3 4; do
      for part in metis blocks parmetis; do
        job smooth_$b${p}_${part}_$np $np "$dir/meshes.h5" "$smooth" "backend: $b" "precision: $p" \
          "distribute: partitioned" "partitioner: $part"
      done
    done
  done
  job polylla_${b}_permesh_1 1 "$dir/tri.h5" "  - {op: polylla}" "backend: $b"
  for np in 2 3 4; do
    for part in metis parmetis; do
      job polylla_${b}_${part}_$np $np "$dir/tri.h5" "  - {op: polylla}" "backend: $b" \
        "distribute: partitioned" "partitioner: $part"
    done
  done
  for g in grid64 grid32; do
    job ${g}_${b}_permesh_1 1 "$dir/$g.h5" "$grid" "backend: $b"
    for np in 1 2 3 4; do
      job ${g}_${b}_blocks_$np $np "$dir/$g.h5" "$grid" "backend: $b" "distribute: partitioned"
    done
  done
done
echo "$total jobs, $bad differ or fail"
[ $bad = 0 ]
