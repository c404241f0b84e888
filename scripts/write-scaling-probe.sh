#!/usr/bin/env bash
# How buffered writes into one file scale with the number of writers on
# this machine's file system (issue 27 point 3: a per-mesh batch's ranks
# write their meshes into one output file). Writes TOTAL_MB (default 4096)
# with dd through the page cache: by one process into one file, by N
# processes into disjoint parts of one file, and by N processes into N
# files; prints the seconds and GB/s of each, twice.
# Usage: scripts/write-scaling-probe.sh DIR [N]
set -euo pipefail
dir=${1:?usage: write-scaling-probe.sh DIR [N]}/mb-write-probe
n=${2:-4}
total=${TOTAL_MB:-4096}
bs=8
per=$(( total / bs / n ))
mkdir -p "$dir"
now() { date +%s%N; }
report() { # label t0 t1
  local ms=$(( ($3 - $2) / 1000000 ))
  printf '%-40s %6d ms  %5d MB/s\n' "$1" "$ms" $(( total * 1000 / (ms > 0 ? ms : 1) ))
}
df -h "$dir" | tail -1
for rep in 1 2; do
  rm -f "$dir"/*; sync
  t0=$(now); dd if=/dev/zero of="$dir/one" bs=${bs}M count=$(( per * n )) status=none; t1=$(now)
  report "1 process, one file" "$t0" "$t1"
  rm -f "$dir"/*; sync
  t0=$(now)
  for ((i = 0; i < n; i++)); do
    dd if=/dev/zero of="$dir/shared" bs=${bs}M count=$per seek=$(( i * per )) conv=notrunc status=none &
  done
  wait; t1=$(now)
  report "$n processes, one file (disjoint parts)" "$t0" "$t1"
  rm -f "$dir"/*; sync
  t0=$(now)
  for ((i = 0; i < n; i++)); do dd if=/dev/zero of="$dir/f$i" bs=${bs}M count=$per status=none & done
  wait; t1=$(now)
  report "$n processes, $n files" "$t0" "$t1"
done
rm -rf "$dir"
