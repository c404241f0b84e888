#!/usr/bin/env bash
# Tuning sweep of the stencil kernels on one GPU: `meshbatch bench stencil`
# once with the defaults, then once under each setting given. A setting is
# one or more environment assignments separated by spaces (for a knob
# added while trying a kernel), or a bare "TY,CHUNK[,PF]", which means
# MB_STENCIL_TUNE=TY,CHUNK[,PF]: the launch shape of every op (PF: L2
# prefetch distance in planes; cuda/stencil/mb_stencil_kernels.cuh). The
# bits do not depend on the shape.
# Usage: scripts/gpu-stencil-tune.sh MESHBATCH OUTDIR [SHAPE] [SETTING ...]
set -uo pipefail
exe=${1:?usage: gpu-stencil-tune.sh MESHBATCH OUTDIR [SHAPE] [SETTING ...]}
out=${2:?usage: gpu-stencil-tune.sh MESHBATCH OUTDIR [SHAPE] [SETTING ...]}
shape=${3:-512,512,512}
shift 3 2>/dev/null || shift $#
mkdir -p "$out"
for t in default "$@"; do
  echo "### $t"
  if [ "$t" = default ]; then set --
  elif [[ "$t" == *=* ]]; then read -r -a envs <<< "$t"; set -- "${envs[@]}"
  else set -- "MB_STENCIL_TUNE=$t"; fi
  env "$@" "$exe" bench stencil --shape "$shape" --dtype both --repeats "${REPEATS:-10}"
done 2>&1 | tee "$out/tune.log" | grep -E "^###|copy bandwidth|2.5D|fused|TMA|V=|registers"
