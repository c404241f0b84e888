#!/usr/bin/env bash
# Issue 27, point 5, in one call: (1) a Polylla job (`meshbatch run` of a job
# with op polylla) on the grid2d collection of SIZE vertices (the uniform
# grid triangulation, n x n vertices; 100 M by default), RUNS times with a
# fresh output each time, printing the process's wall, read, write, device
# (half-edges + label + repair + traversal, the op's own report), copies and
# the ratio wall / (read + write + device), the goal being <= 2; then (2)
# igea subdivided 3 times, 100 Taubin iterations in float32, IGEA_RUNS fresh
# runs and their median (scripts/host-path-bench.sh), the goal <= 1.5 s.
#
# Usage: scripts/polylla-job-bench.sh WORKDIR [IGEA_OBJ]
#   WORKDIR   a folder on local disk for the collection and the output
#             (created; what the script makes there is removed at the end)
#   IGEA_OBJ  igea's mesh (e.g. .data/meshes/igea.obj); without it, part 2
#             is skipped with a message
# Environment: MESHBATCH_EXE (default build/meshbatch), SIZE (vertices,
# default 100000000), BACKEND (cuda; cpu for a dry run without a GPU), RUNS
# (3), IGEA_RUNS (5), IGEA_BACKEND (BACKEND), KEEP=1 keeps WORKDIR's files.
#
# Disk at 100 M vertices (10,000 x 10,000, 199,980,002 triangles): the
# collection is about 6.4 GB (64 B per vertex: x, y float64 and the
# triangles as int64) and the output about 10.4 GB (104 B per vertex: x, y;
# face_offsets, face_indices and the XDMF topology as int64; vertex_count),
# so about 17 GB while a run writes; each run's output is removed before
# the next. The script prints both sizes. Host memory: about 30 GB at 100 M
# vertices (the triangulation, the polygons and the writer's buffers; 270 B
# per vertex on the CPU backend at 250 k vertices).
set -euo pipefail
work=${1:?usage: polylla-job-bench.sh WORKDIR [IGEA_OBJ]}
igea=${2:-}
exe=${MESHBATCH_EXE:-build/meshbatch}
size=${SIZE:-100000000}
backend=${BACKEND:-cuda}
runs=${RUNS:-3}
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$exe" ] || { echo "no meshbatch at $exe (set MESHBATCH_EXE)" >&2; exit 1; }
exe=$(cd "$(dirname "$exe")" && pwd)/$(basename "$exe")
mkdir -p "$work"
work=$(cd "$work" && pwd)
cleanup() { [ -n "${KEEP:-}" ] || rm -rf "$work"/grid2d.* "$work/out" "$work/job.yaml" "$work/run.log"; }
trap cleanup EXIT

echo "## Polylla job, grid2d of $size vertices, backend $backend, $(nproc) host cores"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
echo "commit $(git -C "$here/.." rev-parse --short HEAD 2> /dev/null || echo unknown)"
t0=$(date +%s.%N)
"$exe" generate grid2d --vertices "$size" -o "$work/grid2d.h5" --name grid > /dev/null
t1=$(date +%s.%N)
in_bytes=$(stat -c %s "$work/grid2d.h5")
awk -v a="$t0" -v b="$t1" -v n="$in_bytes" \
  'BEGIN {printf "collection: %.1f MB on disk, generated in %.1f s\n", n / 1e6, b - a}'
cat > "$work/job.yaml" << JOB
input: grid2d.h5
output: out/polygons.h5
backend: $backend
stages:
  - op: polylla
JOB

# The max column of a --timings row (0 where the row is absent).
row() { awk -v r="$1" 'index($0, r) == 1 {v = $(NF - 3)} END {print v + 0}' "$work/run.log"; }

ratios=()
printf '%-4s %8s %8s %8s %8s %8s %9s %9s %6s\n' run "wall s" "read s" "write s" "device s" \
  "copies s" "compute s" "output MB" "ratio"
for i in $(seq "$runs"); do
  rm -rf "$work/out"
  mkdir -p "$work/out"
  a=$(date +%s.%N)
  "$exe" run "$work/job.yaml" --timings -v > "$work/run.log" 2>&1 || { cat "$work/run.log"; exit 1; }
  b=$(date +%s.%N)
  read_s=$(row "  read ")
  write_s=$(awk -v p="$(row "  write (per mesh)")" -v e="$(row "  write (end)")" 'BEGIN {print p + e}')
  dev_s=$(row "    device (ops' report)")
  copy_s=$(row "    host-device copies (ops)")
  comp_s=$(row "  compute (setup + stages)")
  out_bytes=$(du -sb "$work/out" | cut -f1)
  wall=$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", b - a}')
  ratio=$(awk -v w="$wall" -v r="$read_s" -v x="$write_s" -v d="$dev_s" \
    'BEGIN {s = r + x + d; printf "%.2f", (s > 0 ? w / s : 0)}')
  printf '%-4s %8.3f %8.3f %8.3f %8.3f %8.3f %9.3f %9.1f %6s\n' "$i" "$wall" "$read_s" "$write_s" \
    "$dev_s" "$copy_s" "$comp_s" "$(awk -v n="$out_bytes" 'BEGIN {print n / 1e6}')" "$ratio"
  grep -E "^polylla '.*' on the GPU" "$work/run.log" | sed 's/^/     /' || true
  ratios+=("$ratio")
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR] = $1} END {printf "ratio wall / (read + write + device): median %.2f over %d runs (min %.2f, max %.2f); goal <= 2\n", a[int((NR + 1) / 2)], NR, a[1], a[NR]}'
echo "(the last run's --timings:)"
sed -n '/^timings/,$p' "$work/run.log"
rm -rf "$work/out" "$work"/grid2d.*

echo
echo "## igea at 3 levels, 100 Taubin iterations, float32, ${IGEA_RUNS:-5} runs with a fresh output"
if [ -z "$igea" ]; then
  echo "skipped: no IGEA_OBJ given"
elif [ ! -f "$igea" ]; then
  echo "skipped: $igea is absent"
else
  TMPDIR="$work" FRESH=1 MESHBATCH_EXE="$exe" "$here/host-path-bench.sh" "$igea" "${IGEA_RUNS:-5}" \
    "${IGEA_BACKEND:-$backend}" 3 100 float32
fi
