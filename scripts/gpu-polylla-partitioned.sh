#!/usr/bin/env bash
# Partitioned Polylla on the GPUs of one host: the gpu tests (the partitioned
# conformance runs included), then `meshbatch bench polylla --distribute
# partitioned` on the uniform grid triangulation for 1..NGPU ranks, one GPU
# per rank, with the one-rank baseline timed in the same invocation, and an
# end-to-end job (read, mesh, write) on 1 rank and on NGPU ranks.
#
# Usage: scripts/gpu-polylla-partitioned.sh OUTDIR [VERTICES] [PARTITIONER] [CUDA_ARCH]
#   VERTICES     grid size (default 100000000)
#   PARTITIONER  blocks | metis | parmetis (default blocks: METIS and ParMETIS
#                on a 200 M-triangle dual graph take minutes)
# RANKS overrides the rank count of the scaling runs (default: the number of
# GPUs; more ranks than GPUs share them, a dry run), SKIP_TESTS=1 skips the
# tests. Dependencies must be
# installed or on CMAKE_PREFIX_PATH.
set -uo pipefail
out=${1:?usage: gpu-polylla-partitioned.sh OUTDIR [VERTICES] [PARTITIONER] [CUDA_ARCH]}
nv=${2:-100000000}
part=${3:-blocks}
arch=${4:-90}
mkdir -p "$out"
build=build-gpu
source "$(dirname "$0")/gpu-build.sh"
mb_gpu_build "$build" "$out" "$arch"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$out/device.txt"
ngpu=$(wc -l < "$out/device.txt")
ranks=${RANKS:-$ngpu}
if [ -z "${SKIP_TESTS:-}" ]; then
  (cd $build && ctest -L gpu --output-on-failure) > "$out/gpu-tests.log" 2>&1
  grep -E "Test +#|tests passed|tests failed" "$out/gpu-tests.log"
fi
exe=$PWD/$build/meshbatch
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1} OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
run() { mpirun --oversubscribe --bind-to none -np "$@"; }
{
  echo "## $(date -u +%F) $(head -1 "$out/device.txt") x $ngpu, $(nproc) host cores; grid2d $nv vertices, partitioner $part"
  n=2
  while [ "$n" -le "$ranks" ]; do
    echo "### $n ranks"
    OMP_NUM_THREADS=$(( $(nproc) / n )) run "$n" "$exe" bench polylla "grid2d:$nv" --backend cuda \
      --distribute partitioned --partitioner "$part" --warmup 1 --repeats 3
    n=$(( n * 2 ))
  done
} 2>&1 | tee "$out/bench-partitioned.log"
# End to end: read, mesh, write, from a collection, 1 rank and $ranks ranks.
data=$out/e2e
mkdir -p "$data"
"$exe" generate grid2d --vertices "$nv" -o "$data/grid.h5" > "$out/e2e.log" 2>&1
printf 'input: grid.h5\noutput: one.h5\nbackend: cuda\nstages:\n  - op: polylla\n' > "$data/one.yaml"
printf 'input: grid.h5\noutput: split.h5\nbackend: cuda\ndistribute: partitioned\npartitioner: %s\nstages:\n  - op: polylla\n' \
  "$part" > "$data/split.yaml"
{
  echo "### end to end, 1 rank"; /usr/bin/time -f "wall %e s, peak RSS %M KB" "$exe" run "$data/one.yaml"
  echo "### end to end, $ranks ranks"
  OMP_NUM_THREADS=$(( $(nproc) / ranks )) /usr/bin/time -f "wall %e s (mpirun)" \
    mpirun --oversubscribe --bind-to none -np "$ranks" "$exe" run "$data/split.yaml"
  "$exe" compare "$data/one.h5" "$data/split.h5"
} 2>&1 | tee -a "$out/e2e.log" | grep -E "^###|wall|ranks\]|identical|differ|Polylla per rank|^ +rank|^ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ "
rm -f "$data"/*.h5
