#!/usr/bin/env bash
# On a machine with a GPU: build with CUDA, run every gpu-labelled test and
# the other tests, then the Polylla benchmarks (uniform grid triangulations
# of 25 M and 100 M vertices, a 1 M-point Delaunay), writing logs to OUTDIR.
# Usage: scripts/gpu-polylla.sh OUTDIR [CUDA_ARCH]
# (dependencies must already be installed or on CMAKE_PREFIX_PATH)
set -uo pipefail
out=${1:?usage: gpu-polylla.sh OUTDIR [CUDA_ARCH]}
arch=${2:-90}
mkdir -p "$out"
build=build-gpu
source "$(dirname "$0")/gpu-build.sh"
mb_gpu_build "$build" "$out" "$arch"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/device.txt"
(cd $build && ctest -L gpu --output-on-failure) > "$out/gpu-tests.log" 2>&1
grep -E "Test +#|tests passed|tests failed" "$out/gpu-tests.log"
(cd $build && ctest -LE gpu -E "paraview" -j 12) > "$out/other-tests.log" 2>&1
grep -E "tests passed|tests failed|\*\*\*Failed" "$out/other-tests.log"
exe=$build/meshbatch
{
  echo "## $(date -u +%F) $(head -1 "$out/device.txt"), $(nproc) host cores"
  echo "### grid2d 25 M vertices"; $exe bench polylla grid2d:25000000 --backend cuda --repeats 5
  echo "### grid2d 100 M vertices"; $exe bench polylla grid2d:100000000 --backend cuda --warmup 1 --repeats 3
  echo "### Delaunay 1 M points"; $exe bench polylla delaunay:1000000 --backend both --repeats 5
} 2>&1 | tee "$out/bench-polylla.log"
