#!/usr/bin/env bash
# Profile of the stencil kernels on one GPU with Nsight Compute: builds the
# command with CUDA, runs `meshbatch bench stencil` once for the figures,
# then `ncu` on the first kernels of one benchmark call (throughput, memory,
# occupancy, warp stall reasons per issued instruction, DRAM and L2
# traffic). Used to find what bounds a kernel (docs/benchmarks.md,
# "Stencils"). Needs ncu on PATH (CUDA toolkit).
#
# Usage: scripts/gpu-stencil-profile.sh OUTDIR [SHAPE] [KERNEL_REGEX] [COUNT]
#   SHAPE default 512,512,512; KERNEL_REGEX default "march|tile_tma" (the
#   kernels' names); COUNT kernels profiled, default 6. DTYPE=float64
#   profiles the float64 kernels; CUDA_ARCH (default 90) the build's target.
set -uo pipefail
out=${1:?usage: gpu-stencil-profile.sh OUTDIR [SHAPE] [KERNEL_REGEX] [COUNT]}
shape=${2:-512,512,512}
regex=${3:-march|tile_tma}
count=${4:-6}
mkdir -p "$out"
SECONDS=0
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DMESHBATCH_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" > "$out/configure.log" 2>&1 ||
  { tail -30 "$out/configure.log"; exit 1; }
cmake --build build-gpu -j "$(nproc)" --target meshbatch > "$out/build.log" 2>&1 ||
  { grep -E "error" "$out/build.log" | head -30; exit 1; }
echo "built in $SECONDS s"
exe=$PWD/build-gpu/meshbatch
"$exe" bench stencil --shape "$shape" --dtype "${DTYPE:-float32}" --repeats 20 | tee "$out/bench.log"
command -v ncu > /dev/null || { echo "ncu not found: no profile"; exit 0; }
stalls=barrier,long_scoreboard,short_scoreboard,mio_throttle,lg_throttle,wait,math_pipe_throttle,not_selected,selected,no_instruction,dispatch_stall
metrics=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,gpu__time_duration.sum
for s in ${stalls//,/ }; do metrics+=,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio; done
ncu --kernel-name "regex:$regex" --launch-count "$count" \
    --section SpeedOfLight --section Occupancy --section SchedulerStats --section LaunchStats \
    --metrics "$metrics" \
    "$exe" bench stencil --shape "$shape" --dtype "${DTYPE:-float32}" --warmup 0 --repeats 1 \
    > "$out/ncu.txt" 2>&1
echo "ncu exit $? after $SECONDS s: $out/ncu.txt"
grep -E "^  [a-z_]+<|Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Issued Warp|dram__bytes|lts__t_sectors|lts__throughput|stalled_(barrier|long|short|mio|wait)" "$out/ncu.txt" | sed -E 's/ +/ /g'
