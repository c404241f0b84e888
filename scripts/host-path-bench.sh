#!/usr/bin/env bash
# The host path end to end: one Taubin iteration (uniform weights) of igea
# subdivided twice (2.1 M vertices) through `meshbatch run`, timed with
# /usr/bin/time -v, RUNS times; prints each run's wall time and peak RSS
# against the collection's size on disk, then the median. Each run after
# the first replaces the previous run's output; FRESH=1 removes it first
# (a first run's write, without the file system's cost of replacing a file).
# Usage: scripts/host-path-bench.sh IGEA_OBJ [RUNS] [BACKEND] [LEVELS] [ITERATIONS] [PRECISION]
set -euo pipefail
igea=${1:?usage: host-path-bench.sh IGEA_OBJ [RUNS] [BACKEND] [LEVELS] [ITERATIONS] [PRECISION]}
runs=${2:-11}
backend=${3:-cpu}
levels=${4:-2}
iterations=${5:-1}
precision=${6:-float64}
exe=${MESHBATCH_EXE:-build/meshbatch}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$exe" generate subdivide "$igea" --levels "$levels" -o "$work/igea.h5" --name "igea_l$levels" >/dev/null
cat > "$work/job.yaml" <<JOB
input: igea.h5
output: out/smoothed.h5
backend: $backend
precision: $precision
stages:
  - op: taubin
    lambda: 0.5
    mu: -0.53
    iterations: $iterations
    weights: uniform
JOB
mkdir -p "$work/out"
bytes=$(stat -c %s "$work/igea.h5")
echo "igea at $levels levels: a $bytes-byte collection; $iterations Taubin iteration(s), $backend, $precision; $(nproc) cores"
walls=()
timer=(/usr/bin/time -v)
[ -x /usr/bin/time ] || timer=()   # then the wall clock here and the run's own peak memory
for i in $(seq "$runs"); do
  [ -n "${FRESH:-}" ] && rm -f "$work"/out/*
  t0=$(date +%s.%N)
  "${timer[@]}" "$exe" run "$work/job.yaml" --timings > "$work/log" 2> "$work/time" ||
    { cat "$work/log" "$work/time"; exit 1; }
  t1=$(date +%s.%N)
  if [ ${#timer[@]} -gt 0 ]; then
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, t, ":"); s = 0;
           for (k = 1; k <= n; k++) s = s * 60 + t[k]; printf "%.2f", s}' "$work/time")
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time")
  else
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}')
    rss=$(awk '/peak host memory/ {printf "%d", $(NF-3) * 1e6 / 1024}' "$work/log")
  fi
  parts=$(awk '/^  (read|compute|write) / {printf "%s %s  ", $1, $(NF-3)}' "$work/log")
  printf 'run %2d: wall %s s, peak RSS %s KiB (%.2fx the collection); %s\n' "$i" "$wall" "$rss" \
    "$(awk -v r="$rss" -v b="$bytes" 'BEGIN {print r * 1024 / b}')" "$parts"
  walls+=("$wall")
done
printf '%s\n' "${walls[@]}" | sort -n | awk '{a[NR] = $1} END {printf "median wall %.2f s over %d runs (min %.2f, max %.2f)\n", a[int((NR + 1) / 2)], NR, a[1], a[NR]}'
