#!/usr/bin/env bash
# On a machine with a GPU: build the meshbatch command with CUDA and time
# the per-mesh host path of issue-sized jobs end to end (scripts/
# host-path-bench.sh): igea at 3 levels (8.6 M vertices), 100 Taubin
# iterations in float32 on the CUDA backend.
# Usage: scripts/gpu-host-path.sh IGEA_OBJ OUTDIR [RUNS] [CUDA_ARCH]
set -euo pipefail
igea=${1:?usage: gpu-host-path.sh IGEA_OBJ OUTDIR [RUNS] [CUDA_ARCH]}
out=${2:?usage: gpu-host-path.sh IGEA_OBJ OUTDIR [RUNS] [CUDA_ARCH]}
runs=${3:-3}
arch=${4:-90}
mkdir -p "$out"
build=build-gpu
t0=$(date +%s)
source "$(dirname "$0")/gpu-build.sh"
MB_CMAKE_ARGS="-DMESHBATCH_TESTS=OFF ${MB_CMAKE_ARGS:-}" mb_gpu_build "$build" "$out" "$arch" meshbatch
echo "configure and build: $(( $(date +%s) - t0 )) s"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
MESHBATCH_EXE=$build/meshbatch scripts/host-path-bench.sh "$igea" "$runs" cuda 3 100 float32 |
  tee "$out/host-path.log"
