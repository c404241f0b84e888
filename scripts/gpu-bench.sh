#!/usr/bin/env bash
# On a machine with a GPU: build with CUDA, run the gpu-labelled tests and
# the smoothing benchmarks, and write logs to OUTDIR.
# Usage: scripts/gpu-bench.sh IGEA_OBJ OUTDIR [CUDA_ARCH]
# (dependencies must already be installed or on CMAKE_PREFIX_PATH)
set -uo pipefail
igea=${1:?usage: gpu-bench.sh IGEA_OBJ OUTDIR [CUDA_ARCH]}
out=${2:?usage: gpu-bench.sh IGEA_OBJ OUTDIR [CUDA_ARCH]}
arch=${3:-90}
mkdir -p "$out"
build=build-gpu
source "$(dirname "$0")/gpu-build.sh"
mb_gpu_build "$build" "$out" "$arch"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/device.txt"
(cd $build && ctest -L gpu --output-on-failure) 2>&1 | tee "$out/gpu-tests.log" | tail -25
(cd $build && ctest -LE gpu -j 8 --output-on-failure) > "$out/all-tests.log" 2>&1
tail -5 "$out/all-tests.log"
exe=$build/meshbatch
$exe generate subdivide "$igea" --levels 2 -o "$out/igea2.ply" --name igea_l2 > /dev/null 2>&1 ||
  $exe generate subdivide "$igea" --levels 2 -o /tmp/igea2.ply --name igea_l2
mesh="$out/igea2.ply"; [ -f "$mesh" ] || mesh=/tmp/igea2.ply
{
  echo "## $(date -u +%F) $(head -1 "$out/device.txt")"
  for p in float32 float64; do
    for w in uniform cotangent inverse_distance; do
      echo "### cuda $p $w"; $exe bench smooth "$mesh" --backend cuda --precision $p --weights $w --repeats 50
    done
  done
  echo "### cpu float64 uniform ($(nproc) cores)"; $exe bench smooth "$igea" --backend cpu --repeats 10
  for np in 1 2 4; do
    echo "### partitioned cuda float32 uniform, $np ranks on one GPU"
    mpirun --oversubscribe --bind-to none -np $np $exe bench smooth "$mesh" --distribute partitioned \
      --backend cuda --precision float32 --repeats 50
  done
} 2>&1 | tee "$out/bench.log"
rm -f "$out/igea2.ply"
if [ "${MB_BIG:-0}" = 1 ]; then   # 34 M vertices: igea subdivided 4 levels
  $exe generate subdivide "$igea" --levels 4 -o /tmp/igea4.h5 --name igea_l4
  {
    for np in 1 2; do
      echo "### igea_l4 partitioned cuda float32 uniform, $np ranks on one GPU"
      mpirun --oversubscribe --bind-to none -np $np $exe bench smooth /tmp/igea4.h5 --distribute partitioned \
        --backend cuda --precision float32 --repeats 20
    done
  } 2>&1 | tee "$out/bench-34M.log"
fi
