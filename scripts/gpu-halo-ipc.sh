#!/usr/bin/env bash
# The IPC halo transport against NCCL on the GPUs of one host (issue 27
# point 4): build with CUDA, the GPU tests of the IPC transport (the halo
# engine's device cases on 1, 2 and 4 ranks, the stencil blocks and the
# partitioned smoothing with `halo: ipc`, each against the CPU's or one
# rank's bits), then strong scaling of 1024^3 float32 heat steps with the
# fused step on NP ranks (default 4), NCCL and IPC alternating twice, each
# against one GPU timed in the same invocation, and IPC with the faces
# moved by the copy engines instead of the pack and unpack kernels
# (MB_HALO_IPC_PACK=copies), with the z faces staged and packed by kernels
# instead of copied straight into the neighbours' arrays
# (MB_STENCIL_IPC_DIRECT=0, ipc-staged) and with the fused step's shell
# after the interior on the compute stream (MB_STENCIL_SHELL=after, as
# before it ran on the halo stream): VARIANTS (default "nccl ipc
# ipc-staged ipc-copies ipc-after"),
# ROUNDS (default 2). Prints the test summary,
# and per run the speed-up line, the transport and rank 0's timeline (ms
# per step: interior, waited, shell; halo stream: pack, transfer, unpack).
# Usage: scripts/gpu-halo-ipc.sh OUTDIR [CUDA_ARCH]
# BUILD: the build tree (default build-gpu; configured and built again, a
# no-op when up to date); NP: ranks (default 4); SHAPE (default
# 1024,1024,1024). About 3 minutes after the build on 4 H100s.
set -uo pipefail
out=${1:?usage: gpu-halo-ipc.sh OUTDIR [CUDA_ARCH]}
arch=${2:-90}
mkdir -p "$out"
build=${BUILD:-build-gpu}
np=${NP:-4}
shape=${SHAPE:-1024,1024,1024}
SECONDS=0
source "$(dirname "$0")/gpu-build.sh"
mb_gpu_build "$build" "$out" "$arch"
echo "built in $SECONDS s"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$out/device.txt"
nvidia-smi topo -m > "$out/topo.txt" 2>&1
(cd "$build" && timeout 240 ctest -R "^(partition_halo_gpu(_copies)?_np[124]|gpu_stencil_block(_np2)?|gpu_stencil_block_ipc(_copies)?_np[24]|cli_gpu_ipc_[24]|job_load)$" \
   --output-on-failure) > "$out/tests.log" 2>&1
grep -E "Test +#|tests passed|tests failed|skipped|\[ gpu \]" "$out/tests.log"
echo "tests done at $SECONDS s"
exe=$PWD/$build/meshbatch
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1} OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
for round in $(seq "${ROUNDS:-2}"); do
  for variant in ${VARIANTS:-nccl ipc ipc-staged ipc-copies ipc-after}; do
    halo=${variant%%-*}
    pack=
    shell=
    direct=
    [ "$variant" = ipc-copies ] && pack=copies
    [ "$variant" = ipc-staged ] && direct=0
    [ "$variant" = ipc-after ] && shell=after
    log="$out/strong-$variant-$round.log"
    echo "### strong $shape, $np ranks, halo $variant, fused step, round $round"
    MB_HALO_IPC_PACK=$pack MB_STENCIL_SHELL=$shell MB_STENCIL_IPC_DIRECT=$direct mpirun --oversubscribe --bind-to none -np "$np" "$exe" bench stencil \
      --distribute partitioned --shape "$shape" --scaling strong --dtype float32 --steps 20 \
      --warmup 3 --halo "$halo" --step fused -v > "$log" 2>&1
    grep -E "rank +fill|^  rank 0 |halo over|speed-up|rror" "$log"
  done
done
for variant in ${WEAK_VARIANTS:-nccl ipc}; do
  log="$out/weak-$variant.log"
  echo "### weak 512^3 a GPU, $np ranks, halo $variant, fused step"
  mpirun --oversubscribe --bind-to none -np "$np" "$exe" bench stencil --distribute partitioned \
    --shape 512,512,512 --scaling weak --dtype float32 --steps 20 --warmup 3 --halo "$variant" \
    --step fused -v > "$log" 2>&1
  grep -E "rank +fill|^  rank 0 |halo over|speed-up|efficiency|rror" "$log"
done
echo "done at $SECONDS s"
