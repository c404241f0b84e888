#!/usr/bin/env bash
# CPU strong scaling of partitioned smoothing: one mesh, 1, 2 and 4 ranks
# (OMP threads per rank from OMP_NUM_THREADS), per-rank compute/exchange.
# Usage: scripts/partition-scaling.sh MESHBATCH_EXE MESH OUTDIR [ITERATIONS]
set -euo pipefail
exe=${1:?usage}; mesh=${2:?usage}; out=${3:?usage}; it=${4:-20}
mkdir -p "$out"
for np in 1 2 4; do
  cat > "$out/part$np.yaml" <<YAML
input: $mesh
output: $out/part$np.h5
distribute: partitioned
backend: cpu
stages:
  - op: taubin
    lambda: 0.5
    mu: -0.53
    iterations: $it
YAML
  echo "### np=$np"
  mpirun --oversubscribe --bind-to none -np $np "$exe" run "$out/part$np.yaml" --verbose | grep -E "partition|ranks\]" || true
done
