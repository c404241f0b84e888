#!/usr/bin/env bash
# Tuning sweep of the stencil kernels' launch shape on one GPU: `meshbatch
# bench stencil` under MB_STENCIL_TUNE="TY,CHUNK[,PF]" (PF: L2 prefetch
# distance in planes; the shape then applies to every op) for
# each shape given (the defaults first). Usage: scripts/gpu-stencil-tune.sh MESHBATCH OUTDIR [SHAPE] [TUNE ...]
set -uo pipefail
exe=${1:?usage: gpu-stencil-tune.sh MESHBATCH OUTDIR [SHAPE] [TUNE ...]}
out=${2:?usage: gpu-stencil-tune.sh MESHBATCH OUTDIR [SHAPE] [TUNE ...]}
shape=${3:-512,512,512}
shift 3 2>/dev/null || shift $#
mkdir -p "$out"
for t in default "$@"; do
  echo "### MB_STENCIL_TUNE=$t"
  if [ "$t" = default ]; then "$exe" bench stencil --shape "$shape" --dtype both --repeats 10
  else MB_STENCIL_TUNE=$t "$exe" bench stencil --shape "$shape" --dtype both --repeats 10; fi
done 2>&1 | tee "$out/tune.log" | grep -E "^###|copy bandwidth|2.5D|fused|V=" 
