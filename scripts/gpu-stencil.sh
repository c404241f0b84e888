#!/usr/bin/env bash
# Stencils on the GPUs of one host: build with CUDA, the stencil tests (the
# gpu-labelled ones included), `meshbatch bench stencil` on one GPU (512^3
# float32 and float64: the 2.5D kernels, their scalar fallbacks and the
# blog's pencil kernels against the copy bandwidth of the same run), then
# heat steps of one grid split over the GPUs: strong scaling of a 1024^3
# float32 grid and weak scaling with 512^3 per GPU, each against one GPU
# timed in the same invocation, with each halo transport; per rank the
# step's timeline (compute stream: faces, interior, wait, shell, idle
# between steps; halo stream: pack, transfer, unpack; host enqueue).
#
# Usage: scripts/gpu-stencil.sh OUTDIR [CUDA_ARCH]
# SKIP_TESTS=1 skips the tests, SKIP_KERNELS=1 the one-GPU benchmark,
# STRONG (default 1024,1024,1024) and WEAK (512,512,512) set the shapes,
# RANKS the largest rank count (default: the number of GPUs; more ranks
# than GPUs share them, a dry run), HALOS the transports (default "auto mpi
# nccl"), RANK_LIST the rank counts (default 2, 4, ... up to RANKS), STEP
# the split steps, one invocation each (auto: meshbatch's default, the
# fused step on the split grid and on one rank; fused; faces-first; or both,
# the default: the faces-first step then the fused one, each against its
# own one rank; e.g. "auto both"), BLOCKS the cuts (default "auto":
# mb_cart_dims', slabs along z from 64 planes per rank; e.g. "auto 2,2,1"
# also times MPI_Dims_create's cut of a cube on 4 ranks),
# TESTS the ctest regex (default "stencil|grid"), BUILD the build tree
# (default build-gpu; configured and built again, a no-op when up to date). Dependencies must be installed or on
# CMAKE_PREFIX_PATH.
set -uo pipefail
out=${1:?usage: gpu-stencil.sh OUTDIR [CUDA_ARCH]}
arch=${2:-90}
mkdir -p "$out"
build=${BUILD:-build-gpu}
SECONDS=0
source "$(dirname "$0")/gpu-build.sh"
mb_gpu_build "$build" "$out" "$arch"
echo "built in $SECONDS s"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$out/device.txt"
ngpu=$(wc -l < "$out/device.txt")
ranks=${RANKS:-$ngpu}
if [ -z "${SKIP_TESTS:-}" ]; then
  (cd $build && ctest -R "${TESTS:-stencil|grid}" -j 4 --output-on-failure) > "$out/tests.log" 2>&1
  grep -E "Test +#|tests passed|tests failed|\[ gpu \]" "$out/tests.log"
  echo "tests done at $SECONDS s"
fi
exe=$PWD/$build/meshbatch
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1} OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
run() { mpirun --oversubscribe --bind-to none -np "$@"; }
if [ -z "${SKIP_KERNELS:-}" ]; then
  {
    echo "## $(date -u +%F) $(head -1 "$out/device.txt")"
    "$exe" bench stencil --shape 512,512,512 --dtype both --repeats 20
  } 2>&1 | tee "$out/bench-kernels.log"
fi
strong=${STRONG:-1024,1024,1024}
weak=${WEAK:-512,512,512}
{
  echo "## $(date -u +%F) $(head -1 "$out/device.txt") x $ngpu"
  list=${RANK_LIST:-}
  if [ -z "$list" ]; then n=2; while [ "$n" -le "$ranks" ]; do list="$list $n"; n=$(( n * 2 )); done; fi
  for n in $list; do
    for halo in ${HALOS:-auto mpi nccl}; do
      for cut in ${BLOCKS:-auto}; do
        for step in ${STEP:-both}; do
          bargs=(); tag=", step $step"
          [ "$cut" = auto ] || { bargs=(--blocks "$cut"); tag="$tag, blocks $cut"; }
          echo "### strong $strong, $n ranks, halo $halo$tag"
          run "$n" "$exe" bench stencil --distribute partitioned --shape "$strong" --dtype float32 \
            --steps 20 --warmup 3 --halo "$halo" --step "$step" "${bargs[@]}" -v
          echo "### weak $weak per rank, $n ranks, halo $halo$tag"
          run "$n" "$exe" bench stencil --distribute partitioned --shape "$weak" --dtype float32 \
            --scaling weak --steps 20 --warmup 3 --halo "$halo" --step "$step" "${bargs[@]}" -v
        done
      done
    done
  done
} 2>&1 | tee "$out/bench-scaling.log"
echo "done at $SECONDS s"
