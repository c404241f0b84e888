#!/usr/bin/env bash
# On a machine with 2 or more GPUs: build with CUDA (and NCCL, ParMETIS where
# found), run the gpu-labelled tests, then time partitioned smoothing on 1 and
# 2 GPUs with the MPI and the NCCL halo transports.
# Usage: scripts/gpu-halo-bench.sh IGEA_OBJ OUTDIR [CUDA_ARCH] [LEVELS...]
# (dependencies must already be installed or on CMAKE_PREFIX_PATH)
set -uo pipefail
igea=${1:?usage: gpu-halo-bench.sh IGEA_OBJ OUTDIR [CUDA_ARCH] [LEVELS...]}
out=${2:?usage: gpu-halo-bench.sh IGEA_OBJ OUTDIR [CUDA_ARCH] [LEVELS...]}
arch=${3:-90}
shift $(($# < 3 ? $# : 3))
levels=("${@:-3}")
mkdir -p "$out"
build=build-gpu
source "$(dirname "$0")/gpu-build.sh"
mb_gpu_build "$build" "$out" "$arch"
grep -E "NCCL|ParMETIS|CUDA backend" "$out/configure.log"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/device.txt"
(cd $build && ctest -L gpu --output-on-failure) > "$out/gpu-tests.log" 2>&1
grep -E "Test +#|tests passed" "$out/gpu-tests.log"
exe=$build/meshbatch
for l in "${levels[@]}"; do
  mesh=/tmp/igea_l$l.h5
  $exe generate subdivide "$igea" --levels "$l" -o "$mesh" --name "igea_l$l" > /dev/null
  for halo in mpi nccl; do
    echo "### igea_l$l partitioned cuda float32 uniform, 2 GPUs, halo $halo"
    mpirun --bind-to none -np 2 $exe bench smooth "$mesh" --distribute partitioned \
      --backend cuda --precision float32 --repeats 50 --halo $halo
  done
  rm -f "$mesh"
done 2>&1 | tee "$out/halo-bench.log"
