#!/usr/bin/env bash
# The partitioned smoothing's device halo through its one begin/end pair
# (mb_cuda_domain_halo_begin/end over the halo engine, every transport): on
# a host with NP GPUs (default 4), build with CUDA, run the smoothing's GPU
# tests (the CLI runs against the CPU's bits with the MPI, NCCL and IPC
# halos on 1, 2 and 4 ranks, the halo engine's device cases, the smoothing
# kernels' tests), then time `meshbatch bench smooth --distribute
# partitioned` on spot subdivided LEVELS times (default 6: 12.0 M vertices)
# in float32 on NP ranks with the halo over mpi, nccl and ipc, two rounds.
# With REF_BUILD (a build tree of the code to compare against, e.g. main's,
# built with the same arch), each run is preceded by the same run of
# REF_BUILD's meshbatch, so the two alternate on a warm machine.
# Prints the test summary and, per run, the partitioned and pipelined
# ms/pass lines. Usage: scripts/gpu-smooth-domain.sh OUTDIR [CUDA_ARCH]
# BUILD: the build tree (default build-gpu; configured and built again, a
# no-op when up to date). About 3 minutes after the build on 4 H100s.
set -uo pipefail
out=${1:?usage: gpu-smooth-domain.sh OUTDIR [CUDA_ARCH]}
arch=${2:-90}
mkdir -p "$out"
build=${BUILD:-build-gpu}
np=${NP:-4}
levels=${LEVELS:-6}
SECONDS=0
source "$(dirname "$0")/gpu-build.sh"
mb_gpu_build "$build" "$out" "$arch"
echo "built in $SECONDS s"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$out/device.txt"
(cd "$build" && timeout 420 ctest -R "^(cli_gpu_(1|2|4|nccl_2|nccl_4|ipc_2|ipc_4)|partition_halo_gpu_np[124]|conformance_smooth_gpu_[12]|gpu_smooth|gpu_smooth_scaled|gpu_adjacency|gpu_bench)$" \
   --output-on-failure) > "$out/tests.log" 2>&1
grep -E "Test +#|tests passed|tests failed" "$out/tests.log"
echo "tests done at $SECONDS s"
exe=$PWD/$build/meshbatch
mesh=$out/spot_l$levels.h5
"$exe" generate subdivide data/meshes/spot.obj --levels "$levels" -o "$mesh" --name "spot_l$levels"
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1} OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
bench() { # bench EXE LABEL HALO ROUND
  local log="$out/smooth-$2-$3-$4.log"
  echo "### $2: spot_l$levels partitioned cuda float32, $np ranks, halo $3, round $4"
  mpirun --oversubscribe --bind-to none -np "$np" "$1" bench smooth "$mesh" \
    --distribute partitioned --backend cuda --precision float32 --repeats 50 --halo "$3" \
    > "$log" 2>&1
  grep -E "halo over|^partitioned:|^as the op runs|rror" "$log"
}
for round in 1 2; do
  for halo in mpi nccl ipc; do
    [ -n "${REF_BUILD:-}" ] && bench "$PWD/$REF_BUILD/meshbatch" ref "$halo" "$round"
    bench "$exe" this "$halo" "$round"
  done
done
rm -f "$mesh"
echo "done at $SECONDS s"
