#!/usr/bin/env bash
# The host path end to end: one Taubin iteration (uniform weights) of igea
# subdivided twice (2.1 M vertices) through `meshbatch run`, timed with
# /usr/bin/time -v, RUNS times; prints each run's wall time and peak RSS
# against the collection's size on disk, then the median. Each run after
# the first replaces the previous run's output; FRESH=1 removes it first
# (a first run's write, without the file system's cost of replacing a file).
# SETTINGS="VAR=value ..." runs every run with that environment beside it
# (MESHBATCH_DEVICE_INIT=sync: the CUDA device chosen in the setup, as
# before its own thread; MESHBATCH_RAW_READ=0: every read through HDF5);
# ALTERNATE=1 runs each run twice in turn, without and with SETTINGS, and
# prints both medians (the same machine, the same page cache).
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
timer=(/usr/bin/time -v)
[ -x /usr/bin/time ] || timer=()   # then the wall clock here and the run's own peak memory
read -r -a settings <<< "${SETTINGS:-}"
modes=(with)
[ -n "${ALTERNATE:-}" ] && modes=(without with)
declare -A walls
for i in $(seq "$runs"); do
  for mode in "${modes[@]}"; do
    env=()
    [ "$mode" = with ] && env=("${settings[@]}")
    [ -n "${FRESH:-}" ] && rm -f "$work"/out/*
    t0=$(date +%s.%N)
    env "${env[@]}" "${timer[@]}" "$exe" run "$work/job.yaml" --timings > "$work/log" 2> "$work/time" ||
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
    # the main thread's rows (setup, read, the wait for the device, compute, the writes),
    # and the device's initialisation on its own thread
    parts=$(awk '/^  (setup|read|compute|write) |^  wait \(device|^    device initialisation/ {
                   k = $1; if ($1 == "wait") k = "devwait"; if ($1 == "device") k = "devinit";
                   if ($1 == "write") k = ($2 == "(per") ? "write/mesh" : "write/end";
                   printf "%s %s  ", k, $(NF-3)}' "$work/log")
    label=""
    [ ${#modes[@]} -gt 1 ] && label="$mode SETTINGS, "
    printf 'run %2d (%s%s): wall %s s, peak RSS %s KiB (%.2fx the collection); %s\n' "$i" "$label" \
      "$(date +%H:%M:%S)" "$wall" "$rss" "$(awk -v r="$rss" -v b="$bytes" 'BEGIN {print r * 1024 / b}')" "$parts"
    walls[$mode]+="$wall "
  done
done
for mode in "${modes[@]}"; do
  label=""
  [ ${#modes[@]} -gt 1 ] && label=" ($mode SETTINGS: ${SETTINGS:-none})"
  printf '%s\n' ${walls[$mode]} | sort -n | awk -v l="$label" '{a[NR] = $1} END {printf "median wall %.2f s over %d runs (min %.2f, max %.2f)%s\n", a[int((NR + 1) / 2)], NR, a[1], a[NR], l}'
done
