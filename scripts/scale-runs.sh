#!/usr/bin/env bash
# Scaling set on the GPUs of one host (issue 11): builds meshbatch with CUDA
# (build-gpu/, as scripts/gpu-stencil.sh) unless MESHBATCH=path is given, then
# runs, each section on 1, 2, 4, 8 ... ranks up to N (one GPU per rank):
#   smooth   partitioned smoothing: `meshbatch bench smooth --distribute
#            partitioned` on igea subdivided by `meshbatch generate subdivide`:
#            strong scaling of one mesh (the one-GPU per-mesh kernel timed in
#            the same invocation is the baseline) and weak scaling
#   permesh  per-mesh smoothing: COUNT mixed-size meshes (icospheres of
#            `meshbatch generate sphere` and subdivided meshes, imported into one
#            collection), `mpirun -np R meshbatch run job.yaml`: meshes per
#            second and the rank busy-time balance (max/mean)
#   polylla  `meshbatch bench polylla grid2d:N --distribute partitioned
#            --partitioner blocks`: strong and weak scaling (kernels and whole call)
#   stencil  `meshbatch bench stencil --distribute partitioned` heat steps:
#            strong (one grid) and weak (--scaling weak, a block per GPU)
#   ctest    `ctest -L gpu` in the build (the tests that skip for lack of GPUs,
#            cli_gpu_nccl_4 and the like, run where there are enough)
#
# Usage:  scripts/scale-runs.sh OUTDIR [CUDA_ARCH]        (CUDA_ARCH default 90)
#   real run:  scripts/scale-runs.sh out/scale
#   dry run:   DRY=1 scripts/scale-runs.sh out/scale-dry   (2 H200s: 84 s after the build,
#              SKIP_CTEST=1; docs/benchmarks.md, "Scale runs")
#   one part:  ONLY=stencil scripts/scale-runs.sh out/scale   (or SKIP_SMOOTH=1 ... per section)
#   CPU check: BACKEND=cpu RANKS=2 MESHBATCH=build/meshbatch DRY=1 scripts/scale-runs.sh /tmp/s
#
# Writes into OUTDIR (appending, so that sections run by separate invocations
# end up in the same files):
#   scale-runs.md   markdown tables, one row per run: date (UTC), device (nvidia-smi),
#                   GPU count, sizes, ranks, times, speed-up / efficiency
#   results.tsv     the same figures, one line per run and series, for the plots
#   smooth.png permesh.png polylla.png stencil.png   (scripts/plot_scale_runs.py,
#                   matplotlib Agg; skipped with a message where it is missing)
#   logs.tgz        the logs of this invocation (LOGDIR packed)
# Logs go to LOGDIR (default OUTDIR/logs; on a machine that returns only a few
# files set LOGDIR=/tmp/scale-logs), generated data to WORKDIR (default
# /tmp/meshbatch-scale, removed at the end unless KEEP_DATA=1).
#
# Environment (defaults; DRY=1 changes those marked [dry: ...]):
#   ONLY="smooth permesh polylla stencil ctest"  sections to run; or SKIP_SMOOTH=1,
#     SKIP_PERMESH=1, SKIP_POLYLLA=1, SKIP_STENCIL=1, SKIP_CTEST=1
#   MESHBATCH       a built meshbatch (then nothing is built; ctest runs in its
#                   folder if that is a build tree)
#   BUILD_DIR=build-gpu  BUILD_JOBS=$(nproc)  MB_CMAKE_ARGS (extra cmake arguments)
#   RANKS           the largest rank count (default: the GPUs nvidia-smi lists)
#   RANK_LIST       the rank counts (default 1 2 4 8 ... up to RANKS, and RANKS)
#   BACKEND=cuda    cuda, or cpu (CPU ranks: a check of the script without GPUs)
#   THREADS_PER_RANK  OpenMP threads per rank (default host cores / ranks)
#   SCALING="strong weak"  the series of smooth, polylla and stencil to run
#   RUN_TIMEOUT=0   seconds per mpirun before it is killed (0: none)
#   MEM_CHECK=1     skip runs whose estimated host memory exceeds MEM_FRACTION=0.9
#                   of MemAvailable (estimates below); 0 runs them anyway
#   smooth:  MESH (igea.obj: default ../shared/data/meshes/igea.obj or
#              shared/data/meshes/igea.obj; where none is found an icosphere of
#              163842 vertices takes its place)
#            SMOOTH_LEVELS=4 [dry: 3]   subdivision levels of the strong-scaling
#              mesh(es) (igea: 4 = 34.4 M vertices, 68.8 M triangles; 5 = 137.6 M,
#              275 M; 6 = 550 M, 1.1 G)
#            SMOOTH_WEAK_LEVEL=3 [dry: 2]  weak scaling: R ranks run level
#              SMOOTH_WEAK_LEVEL + floor(log4 R), i.e. 1 GPU L, 2 GPUs L, 4 GPUs L+1,
#              8 GPUs L+1 (subdivision multiplies by 4, so the size per GPU is exact
#              at 1 and 4 GPUs and half of it at 2 and 8); the weak efficiency is the
#              throughput per GPU (vertices x passes / s / GPU) against 1 GPU
#            SMOOTH_PRECISION=float32 SMOOTH_WEIGHTS=uniform SMOOTH_HALO=auto
#            SMOOTH_WARMUP=5 SMOOTH_REPEATS=50 [dry: 20]
#   permesh: COUNT=1000 [dry: 200] meshes, drawn at random (seed 1) from
#            PERMESH_MESHES="sphere:2562 spot:0 bob:0 sphere:10242 spot:1 bob:1
#              bunny_stanford:0 sphere:40962 armadillo:0 bunny_stanford:1
#              sphere:163842 armadillo:1 igea:1 sphere:655362"
#              (sphere:N = icosphere of N vertices; NAME:L = NAME.obj beside MESH
#              or in data/meshes, subdivided L levels; missing ones are left out)
#            PERMESH_ITERATIONS=100 Taubin iterations, PERMESH_SCHEDULE=static,
#            PERMESH_RANKS (default RANK_LIST), PERMESH_RUN_ARGS (more words for
#            `meshbatch run`, e.g. --no-checkpoint); PERMESH_BASELINE=1 also runs
#            each rank count with PERMESH_BASELINE_ENV (default
#            "MESHBATCH_CKPT_SYNC_SECONDS=0 MESHBATCH_WRITER_SHARE=0.05": the
#            checkpoint committed every group and rank 0's share of round 1 of
#            issue 27 point 3; "MESHBATCH_CKPT_THREAD=0 MESHBATCH_WRITER_SHARE=0"
#            is the runner before it; "" none) and with PERMESH_BASELINE_EXE
#            (default: the same executable; e.g. a build of main, to compare
#            a change in one call), alternating with the default, into a
#            table of its own; each run's --timings rows are printed
#   polylla: POLYLLA_STRONG=100000000 [dry: 25000000] vertices (strong, one grid)
#            POLYLLA_WEAK=25000000 [dry: 12500000] vertices per GPU (weak; 1 GPU is
#              the plain `bench polylla` on that size, R GPUs the partitioned bench
#              on R times it; efficiency per triangle, as grid2d rounds to n x n)
#            POLYLLA_PARTITIONER=blocks POLYLLA_WARMUP=1 [dry: 0] POLYLLA_REPEATS=1
#   stencil: STENCIL_STRONG=2048,2048,2048 [dry: 512,512,512]
#            STENCIL_WEAK="512,512,512 1024,1024,1024" [dry: 256,256,256] per GPU
#            STENCIL_DTYPE=float32 STENCIL_STEPS=20 STENCIL_WARMUP=3 STENCIL_HALO=auto
#            STENCIL_STEP=auto (the jobs' default: fused on the split grid,
#              faces-first on the one-rank baseline; or fused, faces-first,
#              both; the log also holds each rank's timeline of a step)
#   ctest:   CTEST_REGEX (ctest -R; default all gpu tests [dry: nccl]), CTEST_ARGS
#
# Host memory (estimates from CPU runs and the H100 runs of docs/benchmarks.md):
# `bench smooth --distribute partitioned` reads the whole mesh and builds its
# adjacency on every rank (about 650 B per vertex on rank 0, 450 on the others):
# igea level 5 on 8 ranks needs about 0.5 TB, level 6 (the >= 500 M triangles
# of issue 11) about 2 TB, so they are skipped on a 560 GB host. Partitioned
# Polylla generates the whole grid on every rank (72 B per vertex) and holds
# about 1.3 KB per owned vertex: 400 M vertices on 8 ranks need about 0.7 TB.
# Each invocation of the three benches also times one rank alone on the whole
# input (the baseline), which must fit one GPU: for Polylla's weak runs that is
# R x POLYLLA_WEAK vertices, for the strong stencil the whole 2048^3 grid
# (2 x 34 GB in float32 on one GPU).
#
# Durations (estimates, not measured; 8 H100, one host): build 3-5 min, smooth
# 8-12 min (METIS on rank 0 dominates), permesh 3-5 min, polylla 15-25 min
# (host steps of about 1-2 us per triangle per rank: the 2-rank strong run on
# 100 M vertices alone takes about 6 min), stencil 5-8 min, ctest -L gpu 5-10
# min. Where one command may run 10 minutes at most, run the sections one by
# one into the same OUTDIR (ONLY=smooth, ONLY=polylla SCALING=strong, ...).
set -uo pipefail

usage="usage: scripts/scale-runs.sh OUTDIR [CUDA_ARCH]   (header of the script: environment)"
[ $# -ge 1 ] && [ "$1" != -h ] && [ "$1" != --help ] || { sed -n '2,/^set -uo/p' "$0" | sed '$d'; echo "$usage"; exit 2; }
mkdir -p "$1" || exit 2
out=$(cd "$1" && pwd)
arch=${2:-90}
caller_pwd=$PWD
abspath() { case "$1" in /*) echo "$1" ;; *) echo "$caller_pwd/$1" ;; esac; }
cd "$(dirname "$0")/.." || exit 2
repo=$PWD
SECONDS=0
dry=${DRY:-0}
isdry() { [ "$dry" = 1 ]; }

# ------------------------------------------------------------------ settings
backend=${BACKEND:-cuda}
case "$backend" in cuda | cpu) ;; *) echo "BACKEND must be cuda or cpu"; exit 2 ;; esac
logdir=$(abspath "${LOGDIR:-$out/logs}")
work=$(abspath "${WORKDIR:-/tmp/meshbatch-scale}")
mkdir -p "$logdir" "$work" || exit 2
smooth_levels=${SMOOTH_LEVELS:-$(isdry && echo 3 || echo 4)}
smooth_weak=${SMOOTH_WEAK_LEVEL:-$(isdry && echo 2 || echo 3)}
smooth_prec=${SMOOTH_PRECISION:-float32}
smooth_weights=${SMOOTH_WEIGHTS:-uniform}
smooth_halo=${SMOOTH_HALO:-auto}
smooth_warmup=${SMOOTH_WARMUP:-5}
smooth_repeats=${SMOOTH_REPEATS:-$(isdry && echo 20 || echo 50)}
count=${COUNT:-$(isdry && echo 200 || echo 1000)}
permesh_meshes=${PERMESH_MESHES:-sphere:2562 spot:0 bob:0 sphere:10242 spot:1 bob:1 bunny_stanford:0 sphere:40962 armadillo:0 bunny_stanford:1 sphere:163842 armadillo:1 igea:1 sphere:655362}
permesh_iter=${PERMESH_ITERATIONS:-100}
permesh_schedule=${PERMESH_SCHEDULE:-static}
polylla_strong=${POLYLLA_STRONG:-$(isdry && echo 25000000 || echo 100000000)}
polylla_weak=${POLYLLA_WEAK:-$(isdry && echo 12500000 || echo 25000000)}
polylla_part=${POLYLLA_PARTITIONER:-blocks}
polylla_warmup=${POLYLLA_WARMUP:-$(isdry && echo 0 || echo 1)}
polylla_repeats=${POLYLLA_REPEATS:-1}
stencil_strong=${STENCIL_STRONG:-$(isdry && echo 512,512,512 || echo 2048,2048,2048)}
stencil_weak=${STENCIL_WEAK:-$(isdry && echo 256,256,256 || echo 512,512,512 1024,1024,1024)}
stencil_dtype=${STENCIL_DTYPE:-float32}
stencil_steps=${STENCIL_STEPS:-20}
stencil_warmup=${STENCIL_WARMUP:-3}
stencil_halo=${STENCIL_HALO:-auto}
stencil_step=${STENCIL_STEP:-auto}
ctest_regex=${CTEST_REGEX-$(isdry && echo nccl || echo "")}
run_timeout=${RUN_TIMEOUT:-0}
mem_check=${MEM_CHECK:-1}
mem_fraction=${MEM_FRACTION:-0.9}

scalings=${SCALING:-strong weak}
series() { case " $scalings " in *" $1 "*) return 0 ;; esac; return 1; }
want() { # want SECTION: not skipped by ONLY or SKIP_<SECTION>
  local var="SKIP_${1^^}"
  [ -n "${!var:-}" ] && [ "${!var}" != 0 ] && return 1
  [ -z "${ONLY:-}" ] && return 0
  case " $ONLY " in *" $1 "*) return 0 ;; esac
  return 1
}

# ------------------------------------------------------------------ build
if [ -n "${MESHBATCH:-}" ]; then
  exe=$(abspath "$MESHBATCH")
  [ -x "$exe" ] || { echo "MESHBATCH=$MESHBATCH is not an executable"; exit 2; }
  build=$(dirname "$exe")
  echo "meshbatch: $exe (not built here)"
else
  build=$repo/${BUILD_DIR:-build-gpu}
  target=(--target meshbatch)
  want ctest && target=()
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DMESHBATCH_CUDA=ON \
        -DCMAKE_CUDA_ARCHITECTURES="$arch" ${MB_CMAKE_ARGS:-} > "$logdir/configure.log" 2>&1 ||
    { tail -30 "$logdir/configure.log"; exit 1; }
  cmake --build "$build" -j "${BUILD_JOBS:-$(nproc)}" "${target[@]}" > "$logdir/build.log" 2>&1 ||
    { grep -E "error" "$logdir/build.log" | head -30; exit 1; }
  exe=$build/meshbatch
  echo "built $exe in $SECONDS s"
fi
t_built=$SECONDS

# ------------------------------------------------------------------ device
ncores=$(nproc)
if [ "$backend" = cuda ]; then
  if ! nvidia-smi --query-gpu=name,memory.total --format=csv,noheader > "$logdir/device.txt" 2>&1 ||
     [ ! -s "$logdir/device.txt" ]; then
    cat "$logdir/device.txt"; echo "no GPU listed by nvidia-smi (BACKEND=cpu RANKS=N checks the script on CPU ranks)"; exit 1
  fi
  ngpu=$(grep -c . "$logdir/device.txt")
  device=$(head -1 "$logdir/device.txt" | cut -d, -f1)
else
  ngpu=0
  device="CPU ranks: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1) ($ncores cores)"
  echo "$device" > "$logdir/device.txt"
fi
gpus=$ngpu
maxr=${RANKS:-$ngpu}
[ "$maxr" -ge 1 ] 2>/dev/null || { echo "RANKS must be set on CPU ranks (no GPUs listed)"; exit 2; }
if [ -n "${RANK_LIST:-}" ]; then
  ranks_all=$RANK_LIST
else
  ranks_all=""; r=1
  while [ "$r" -le "$maxr" ]; do ranks_all="$ranks_all $r"; r=$((r * 2)); done
  case " $ranks_all " in *" $maxr "*) ;; *) ranks_all="$ranks_all $maxr" ;; esac
  ranks_all=${ranks_all# }
fi
if commit=$(git rev-parse --short HEAD 2> /dev/null); then
  git diff --quiet HEAD 2> /dev/null || commit="$commit+changes"
else
  commit=unknown
fi
echo "device: $device; GPUs: $gpus; ranks: $ranks_all; backend $backend; $ncores host cores;" \
     "$(awk '/MemAvailable/ {printf "%.0f GB", $2 / 1e6}' /proc/meminfo) host memory available"

export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1} OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
mpi() { # mpi R LOG CMD...: R ranks, output to LOG (and its tail on failure)
  local r=$1 log=$2; shift 2
  local th=${THREADS_PER_RANK:-$(( ncores / r > 0 ? ncores / r : 1 ))}
  local tmo=()
  [ "$run_timeout" != 0 ] && tmo=(timeout -k 20 "$run_timeout")
  echo "\$ mpirun -np $r $*" > "$log"
  OMP_NUM_THREADS=$th "${tmo[@]}" mpirun --oversubscribe --bind-to none ${MPIRUN_ARGS:-} -np "$r" "$@" >> "$log" 2>&1
  local rc=$?
  if [ "$rc" != 0 ]; then   # the last lines before mpirun's own report
    echo "    (rc $rc$([ "$rc" = 124 ] && echo ', RUN_TIMEOUT'); see $log)"
    awk 'NR > 1 && /^-----/ { exit } NR > 1 { l[n++ % 5] = $0 } END { for (i = n - 5; i < n; i++) if (i >= 0) print l[i % 5] }' "$log" |
      sed 's/^/    | /'
  fi
  return "$rc"
}

# ------------------------------------------------------------------ output
md=$out/scale-runs.md
tsv=$out/results.tsv
figs=$logdir/figures.txt
: > "$figs"
[ -f "$tsv" ] || printf 'date_utc\tdevice\tgpus\tsection\tcase\tseries\tranks\tsize\ttime_ms\tbase_ms\tspeedup\tefficiency\textra\n' > "$tsv"
{
  echo
  echo "## $(date -u '+%F %H:%M') UTC, $device x $gpus (scripts/scale-runs.sh, commit $commit)"
  echo
  echo "Backend $backend, ranks $ranks_all, $ncores host cores$(isdry && echo ', DRY=1 sizes')."
} >> "$md"
declare -A md_started=()
md_row() { # md_row KEY "TITLE" "| header |" "| row |"
  if [ -z "${md_started[$1]:-}" ]; then
    md_started[$1]=1
    local ncol; ncol=$(awk -F'|' '{print NF - 2}' <<< "$3")
    printf '\n### %s\n\n%s\n|%s\n' "$2" "$3" "$(for ((i = 0; i < ncol; i++)); do printf -- '---|'; done)" >> "$md"
  fi
  echo "$4" >> "$md"
}
now() { date -u '+%F %H:%M'; }
tsv_row() { # section case series ranks size time base speedup efficiency extra
  local f line; line="$(now)\t$device\t$gpus"
  for f in "$@"; do line="$line\t${f//$'\t'/ }"; done
  printf '%b\n' "$line" >> "$tsv"
}
fig() { echo "  $*"; echo "$*" >> "$figs"; }
note() { echo "  $*"; echo "$*" >> "$figs"; }
num() { [[ "${1:-}" =~ ^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$ ]]; }
calc() { awk "BEGIN { printf \"$1\", $2 }"; }   # calc FORMAT EXPR
mega() { calc "%.1f M" "$1 / 1e6"; }

mem_avail() { awk '/MemAvailable/ {print $2 * 1024}' /proc/meminfo; }
fits() { # fits BYTES WHAT: 0 if the estimate fits the host memory (or MEM_CHECK=0)
  [ "$mem_check" = 0 ] && return 0
  local avail; avail=$(mem_avail)
  if awk -v e="$1" -v a="$avail" -v f="$mem_fraction" 'BEGIN { exit !(e <= f * a) }'; then return 0; fi
  note "$2: skipped, needs about $(calc %.1f "$1 / 1e9") GB of host memory (estimate), $(calc %.1f "$avail / 1e9") GB available (MEM_CHECK=0 runs it)"
  return 1
}

find_mesh() {
  local m
  for m in "${MESH:+$(abspath "$MESH")}" ../shared/data/meshes/igea.obj shared/data/meshes/igea.obj ../shared/data/igea.obj; do
    [ -n "$m" ] && [ -f "$m" ] && { abspath "$m"; return 0; }
  done
  return 1
}
base_mesh=$(find_mesh || true)
mesh_dir=${base_mesh:+$(dirname "$base_mesh")}
mesh_name=$( [ -n "$base_mesh" ] && basename "$base_mesh" .obj || echo icosphere)
one=$( [ "$backend" = cuda ] && echo "one GPU" || echo "one rank")
[ "$backend" = cuda ] && smooth_prec_label=$smooth_prec || smooth_prec_label=float64

# ================================================================== smooth
declare -A sm_t1=() sm_tn=() sm_sp=() sm_eff=() sm_halo=() sm_tr=() sm_nv=() sm_rc=()
smooth_file() { echo "$work/smooth_L$1.h5"; }
smooth_base() { # the level-0 mesh and its counts: base_nv, base_nf
  [ -n "${base_nv:-}" ] && return 0
  local log=$logdir/smooth-base.log
  if [ -n "$base_mesh" ]; then
    "$exe" generate subdivide "$base_mesh" --levels 0 -o "$work/base.ply" --name base > "$log" 2>&1
  else
    note "smooth: no igea.obj (MESH=...); an icosphere of 163842 vertices stands in for it"
    "$exe" generate sphere --vertices 163842 -o "$work/base.ply" > "$log" 2>&1
  fi
  base_nv=$(sed -n 's/.*: \([0-9]*\) vertices, \([0-9]*\) faces.*/\1/p' "$log" | tail -1)
  base_nf=$(sed -n 's/.*: \([0-9]*\) vertices, \([0-9]*\) faces.*/\2/p' "$log" | tail -1)
  [ -n "$base_nv" ] && [ -n "$base_nf" ]
}
level_nv() { echo $(( base_nv + (base_nf * (4 ** $1) - base_nf) / 2 )); }  # closed mesh: V - F/2 kept
smooth_make() { # smooth_make L
  local f; f=$(smooth_file "$1")
  [ -f "$f" ] && return 0
  fits $(( $(level_nv "$1") * 250 )) "smooth: generating level $1" || return 1
  local t0=$SECONDS
  "$exe" generate subdivide "$work/base.ply" --levels "$1" -o "$f" --name "igea_l$1" > "$logdir/smooth-generate-L$1.log" 2>&1 ||
    { tail -5 "$logdir/smooth-generate-L$1.log"; rm -f "$f"; return 1; }
  echo "  generated level $1 in $((SECONDS - t0)) s: $(tail -1 "$logdir/smooth-generate-L$1.log")"
}
smooth_run() { # smooth_run L R: fills sm_*[L,R]; returns 0 on success
  local k="$1,$2"
  [ -n "${sm_rc[$k]:-}" ] && return "${sm_rc[$k]}"
  sm_rc[$k]=1
  local nv; nv=$(level_nv "$1")
  fits $(( nv * (650 + 450 * ($2 - 1)) )) "smooth: level $1 ($(mega "$nv") vertices) on $2 ranks" || return 1
  smooth_make "$1" || return 1
  local log=$logdir/smooth-L$1-np$2.log prec=()
  [ "$backend" = cuda ] && prec=(--precision "$smooth_prec")
  mpi "$2" "$log" "$exe" bench smooth "$(smooth_file "$1")" --distribute partitioned --backend "$backend" \
    "${prec[@]}" --weights "$smooth_weights" --halo "$smooth_halo" --warmup "$smooth_warmup" \
    --repeats "$smooth_repeats" || return 1
  sm_nv[$k]=$(sed -n 's/^ *bench smooth --distribute partitioned: [^,]*, \([0-9]*\) vertices,.*/\1/p' "$log" | tail -1)
  sm_t1[$k]=$(sed -n 's/^ *one rank (per-mesh kernel, same mesh): \([0-9.eE+-]*\) ms\/pass.*/\1/p' "$log" | tail -1)
  sm_tn[$k]=$(sed -n 's/^ *partitioned: \([0-9.eE+-]*\) ms\/pass (slowest rank).*/\1/p' "$log" | tail -1)
  sm_halo[$k]=$(sed -n 's/^ *partitioned: .*, halo \([0-9.eE+-]*\) B\/pass in all.*/\1/p' "$log" | tail -1)
  sm_sp[$k]=$(sed -n 's/^ *speed-up \([0-9.]*\), parallel efficiency \([0-9.]*\).*/\1/p' "$log" | tail -1)
  sm_eff[$k]=$(sed -n 's/^ *speed-up \([0-9.]*\), parallel efficiency \([0-9.]*\).*/\2/p' "$log" | tail -1)
  sm_tr[$k]=$(grep -o 'halo over [A-Za-z]*' "$log" | head -1 | cut -d' ' -f3)
  if ! num "${sm_tn[$k]}" || ! num "${sm_t1[$k]}"; then echo "    no figures in $log"; return 1; fi
  sm_rc[$k]=0
}
weak_level() { # SMOOTH_WEAK_LEVEL + floor(log4 R)
  local r=$1 l=$smooth_weak
  while [ "$r" -ge 4 ]; do r=$((r / 4)); l=$((l + 1)); done
  echo "$l"
}
section_smooth() {
  echo "== smooth: partitioned smoothing (bench smooth --distribute partitioned, $backend, weights $smooth_weights)"
  smooth_base || { note "smooth: the base mesh could not be made (see $logdir/smooth-base.log)"; return; }
  local L R k hdr
  hdr="| date (UTC) | device | GPUs | mesh | vertices | ranks | ms/pass (slowest rank) | 1-GPU per-mesh ms/pass | speed-up | efficiency | halo B/pass | halo |"
  for L in $(series strong && echo "$smooth_levels"); do
    for R in $ranks_all; do
      k="$L,$R"
      if smooth_run "$L" "$R"; then
        fig "smooth strong, $mesh_name level $L ($(mega "${sm_nv[$k]}") vertices), $R ranks: ${sm_tn[$k]} ms/pass, $one ${sm_t1[$k]}: speed-up ${sm_sp[$k]}, efficiency ${sm_eff[$k]} (halo ${sm_tr[$k]:-none})"
        md_row smooth-strong "Smoothing, partitioned, strong scaling (bench smooth, $smooth_prec_label $smooth_weights, median of $smooth_repeats passes)" "$hdr" \
          "| $(now) | $device | $gpus | $mesh_name level $L | ${sm_nv[$k]} | $R | ${sm_tn[$k]} | ${sm_t1[$k]} | ${sm_sp[$k]} | ${sm_eff[$k]} | ${sm_halo[$k]} | ${sm_tr[$k]:-} |"
        tsv_row smooth strong "$mesh_name level $L, $(mega "${sm_nv[$k]}") vertices" "$R" "${sm_nv[$k]}" "${sm_tn[$k]}" "${sm_t1[$k]}" "${sm_sp[$k]}" "${sm_eff[$k]}" "halo_bytes=${sm_halo[$k]};halo=${sm_tr[$k]:-}"
      else
        note "smooth strong, level $L, $R ranks: no result"
      fi
    done
  done
  # weak: throughput per GPU against one GPU on the level-SMOOTH_WEAK_LEVEL mesh
  local w0=$smooth_weak k0="" tp1="" tp eff nvg
  hdr="| date (UTC) | device | GPUs | mesh | vertices | vertices per GPU | ranks | ms/pass (slowest rank) | M vertex-passes/s per GPU | weak efficiency | halo |"
  for R in $(series weak && echo "$ranks_all"); do
    L=$(weak_level "$R"); k="$L,$R"
    smooth_run "$L" "$R" || { note "smooth weak, $R ranks (level $L): no result"; continue; }
    if [ -z "$tp1" ]; then   # one GPU: the per-mesh kernel of the level-w0 mesh, timed in the same invocation
      if [ "$L" = "$w0" ]; then k0=$k; tp1=$(calc %.6g "${sm_nv[$k]} / ${sm_t1[$k]} / 1e3"); fi
      if [ -n "$tp1" ] && [ "$R" != 1 ]; then
        fig "smooth weak, $mesh_name level $w0, $one (per-mesh kernel of the $R-rank invocation): ${sm_t1[$k0]} ms/pass"
        md_row smooth-weak "Smoothing, partitioned, weak scaling (level $w0 per GPU at 1 and 4 GPUs, half of it at 2 and 8)" "$hdr" \
          "| $(now) | $device | $gpus | $mesh_name level $w0 | ${sm_nv[$k0]} | ${sm_nv[$k0]} | 1 (per-mesh kernel) | ${sm_t1[$k0]} | $(calc %.1f "$tp1") | 1.00 | |"
        tsv_row smooth weak "$mesh_name level $w0 per GPU" 1 "${sm_nv[$k0]}" "${sm_t1[$k0]}" "${sm_t1[$k0]}" 1 1 "per_gpu=${sm_nv[$k0]}"
      fi
    fi
    nvg=$(( sm_nv[$k] / R ))
    tp=$(calc %.6g "$nvg / ${sm_tn[$k]} / 1e3")
    eff=-; [ -n "$tp1" ] && eff=$(calc %.2f "$tp / $tp1")
    fig "smooth weak, $R ranks, level $L ($(mega "$nvg") vertices per GPU): ${sm_tn[$k]} ms/pass, $(calc %.1f "$tp") M vertex-passes/s per GPU, weak efficiency $eff"
    md_row smooth-weak "Smoothing, partitioned, weak scaling (level $w0 per GPU at 1 and 4 GPUs, half of it at 2 and 8)" "$hdr" \
      "| $(now) | $device | $gpus | $mesh_name level $L | ${sm_nv[$k]} | $nvg | $R | ${sm_tn[$k]} | $(calc %.1f "$tp") | $eff | ${sm_tr[$k]:-} |"
    tsv_row smooth weak "$mesh_name level $w0 per GPU" "$R" "${sm_nv[$k]}" "${sm_tn[$k]}" "${sm_t1[$k0]:-}" "" "$eff" "per_gpu=$nvg"
  done
}

# ================================================================== permesh
section_permesh() {
  echo "== permesh: $count mixed-size meshes, per-mesh Taubin ($permesh_iter iterations), meshbatch run"
  local tdir=$work/permesh-templates cdir=$work/permesh-files t name lv src log ok=()
  mkdir -p "$tdir"
  for t in $permesh_meshes; do
    name=${t%%:*}; lv=${t#*:}
    [ -f "$tdir/$name-$lv.ply" ] && { ok+=("$tdir/$name-$lv.ply"); continue; }
    log=$logdir/permesh-generate.log
    if [ "$name" = sphere ]; then
      "$exe" generate sphere --vertices "$lv" --seed "$lv" -o "$tdir/$name-$lv.ply" >> "$log" 2>&1 ||
        { note "permesh: $t could not be made (see $log)"; continue; }
    else
      src=""
      for src in "$mesh_dir/$name.obj" "$repo/data/meshes/$name.obj"; do [ -f "$src" ] && break; src=""; done
      [ -n "$src" ] || { note "permesh: $name.obj not found, left out"; continue; }
      "$exe" generate subdivide "$src" --levels "$lv" -o "$tdir/$name-$lv.ply" >> "$log" 2>&1 ||
        { note "permesh: $t could not be made (see $log)"; continue; }
    fi
    ok+=("$tdir/$name-$lv.ply")
  done
  [ "${#ok[@]}" -gt 0 ] || { note "permesh: no meshes could be made"; return; }
  rm -rf "$cdir"; mkdir -p "$cdir"
  local i picks
  picks=$(awk -v n="$count" -v m="${#ok[@]}" 'BEGIN { srand(1); for (i = 0; i < n; i++) print int(rand() * m) }')
  i=0
  while read -r t; do ln -s "${ok[$t]}" "$cdir/m$(printf %06d "$i").ply"; i=$((i + 1)); done <<< "$picks"
  local coll=$work/permesh.h5 rmax; rmax=$(echo "$ranks_all" | tr ' ' '\n' | sort -n | tail -1)
  rm -f "$work"/permesh.*
  mpi "$rmax" "$logdir/permesh-import.log" "$exe" import "$cdir/*.ply" -o "$coll" --quiet ||
    { note "permesh: import failed"; return; }
  rm -rf "$cdir"
  local precline=""; [ "$backend" = cuda ] && precline="precision: float32"
  local R job w1="" wall busy mean ratio failed ndone nvt mps sp cmax hdr
  hdr="| date (UTC) | device | GPUs | meshes | M vertices | ranks | wall s | meshes/s | speed-up | busy max s | busy mean s | max/mean | failed |"
  local variant w1base="" vsuf venv vtitle mdrow base_title="" base_rows=()
  local variants="default"; [ "${PERMESH_BASELINE:-0}" = 1 ] && variants="default baseline"
  for R in ${PERMESH_RANKS:-$ranks_all}; do
   for variant in $variants; do
    vsuf="" venv="" vtitle="" vexe=$exe
    if [ "$variant" = baseline ]; then
      vsuf=-baseline venv=${PERMESH_BASELINE_ENV-MESHBATCH_CKPT_SYNC_SECONDS=0 MESHBATCH_WRITER_SHARE=0.05}
      vexe=$(abspath "${PERMESH_BASELINE_EXE:-$exe}")
      vtitle=", baseline: ${venv:-no settings}${PERMESH_BASELINE_EXE:+, $vexe}"
    fi
    job=$work/permesh-np$R$vsuf.yaml log=$logdir/permesh-np$R$vsuf.log
    printf 'input: %s\noutput: %s\ndistribute: per-mesh\nschedule: %s\nbackend: %s\n%s\nstages:\n  - op: taubin\n    lambda: 0.5\n    mu: -0.53\n    iterations: %s\n    weights: uniform\n    boundary: fixed\n' \
      "$coll" "$work/permesh-out-np$R$vsuf.h5" "$permesh_schedule" "$backend" "$precline" "$permesh_iter" > "$job"
    # shellcheck disable=SC2086 # PERMESH_RUN_ARGS: words for `meshbatch run`; venv: VAR=value words
    # shellcheck disable=SC2163 # venv holds VAR=value words to export
    # every run starts with no dirty pages of an earlier step (the import's
    # 6 GB collection, the last run's output and checkpoint): their writeback
    # throttled whichever run came first (measured 2026-11-27)
    sync
    ( [ -z "$venv" ] || export $venv; mpi "$R" "$log" "$vexe" run "$job" --timings ${PERMESH_RUN_ARGS:-} )
    rm -f "$work/permesh-out-np$R$vsuf".*
    local line; line=$(grep -E '[0-9]+ (mesh|meshes), [0-9]+ written, [0-9]+ failed; wall' "$log" | tail -1)
    [ -n "$line" ] || { note "permesh, $R ranks$vsuf: no summary line (see $log)"; continue; }
    ndone=$(sed 's/^\([0-9]*\) mesh.*/\1/' <<< "$line")
    failed=$(sed 's/.* \([0-9]*\) failed;.*/\1/' <<< "$line")
    wall=$(sed 's/.*; wall \([0-9.]*\) s;.*/\1/' <<< "$line")
    busy=$(sed -n 's/.*rank busy time max \([0-9.]*\) s, mean \([0-9.]*\) s (max\/mean \([0-9.]*\)).*/\1/p' <<< "$line")
    mean=$(sed -n 's/.*rank busy time max \([0-9.]*\) s, mean \([0-9.]*\) s (max\/mean \([0-9.]*\)).*/\2/p' <<< "$line")
    ratio=$(sed -n 's/.*rank busy time max \([0-9.]*\) s, mean \([0-9.]*\) s (max\/mean \([0-9.]*\)).*/\3/p' <<< "$line")
    cmax=$(awk '/^ *compute/ {print $(NF-3); exit}' "$log")
    nvt=$(awk '/^\[rank [0-9]+\] .*: [0-9]+ vertices/ { for (i = 1; i < NF; i++) if ($(i + 1) == "vertices,") s += $i } END { printf "%.0f", s }' "$log")
    num "$wall" || { note "permesh, $R ranks$vsuf: no wall time in $log"; continue; }
    mps=$(calc %.1f "$ndone / $wall")
    if [ "$variant" = baseline ]; then
      [ -z "$w1base" ] && [ "$R" = 1 ] && w1base=$wall
      sp=-; [ -n "$w1base" ] && sp=$(calc %.2f "$w1base / $wall")
    else
      [ -z "$w1" ] && [ "$R" = 1 ] && w1=$wall
      sp=-; [ -n "$w1" ] && sp=$(calc %.2f "$w1 / $wall")
    fi
    fig "permesh, $R ranks$vsuf: $ndone meshes ($(mega "$nvt") vertices) in $wall s: $mps meshes/s, speed-up $sp; rank busy time max ${busy:-?} s, mean ${mean:-?} s (max/mean ${ratio:-?}), compute max ${cmax:-?} s, $failed failed"
    sed -n '/^timings,/,/peak host memory/p' "$log" | sed 's/^/    /'
    mdrow="| $(now) | $device | $gpus | $ndone | $(calc %.1f "$nvt / 1e6") | $R | $wall | $mps | $sp | ${busy:-} | ${mean:-} | ${ratio:-} | $failed |"
    if [ "$variant" = baseline ]; then  # its own table, after the default's
      base_rows+=("$mdrow") base_title="Smoothing, per-mesh: $ndone meshes of mixed sizes, Taubin $permesh_iter iterations ($permesh_schedule schedule$vtitle)"
      continue
    fi
    md_row permesh "Smoothing, per-mesh: $ndone meshes of mixed sizes, Taubin $permesh_iter iterations ($permesh_schedule schedule)" "$hdr" "$mdrow"
    tsv_row permesh per-mesh "$ndone meshes, $(mega "$nvt") vertices" "$R" "$ndone" "$(calc %.1f "$wall * 1e3")" "$(calc %.1f "${w1:-0} * 1e3")" "$sp" "$( [ "$sp" = - ] && echo - || calc %.2f "$sp / $R")" "meshes_per_s=$mps;busy_max=${busy:-};busy_mean=${mean:-};balance=${ratio:-};failed=$failed"
   done
  done
  for mdrow in "${base_rows[@]}"; do md_row permesh-baseline "$base_title" "$hdr" "$mdrow"; done
  [ "${KEEP_DATA:-0}" = 1 ] || rm -f "$work"/permesh.*
}

# ================================================================== polylla
declare -A pl_rc=() pl_nv=() pl_nt=() pl_k1=() pl_kn=() pl_w1=() pl_wn=() pl_ksp=() pl_keff=() pl_wsp=() pl_weff=()
polylla_run() { # polylla_run N R: partitioned bench over R ranks (R >= 2), fills pl_*[N,R]
  local k="$1,$2"
  [ -n "${pl_rc[$k]:-}" ] && return "${pl_rc[$k]}"
  pl_rc[$k]=1
  fits $(( $1 * (72 * $2 + 1300) + $1 * 400 )) "polylla: grid2d:$1 over $2 ranks" || return 1
  local log=$logdir/polylla-$1-np$2.log
  mpi "$2" "$log" "$exe" bench polylla "grid2d:$1" --backend "$backend" --distribute partitioned \
    --partitioner "$polylla_part" --warmup "$polylla_warmup" --repeats "$polylla_repeats" || return 1
  grep -q '^cuda: skipped' "$log" && { echo "    $(grep '^cuda: skipped' "$log")"; return 1; }
  local m w
  pl_nv[$k]=$(sed -n 's/^polylla .* partitioned over [0-9]* ranks: \([0-9]*\) vertices, \([0-9]*\) triangles.*/\1/p' "$log" | tail -1)
  pl_nt[$k]=$(sed -n 's/^polylla .* partitioned over [0-9]* ranks: \([0-9]*\) vertices, \([0-9]*\) triangles.*/\2/p' "$log" | tail -1)
  m=$(grep -m1 'meshing phases' "$log" | sed -n 's/.*: 1 rank \([0-9.]*\) ms, [0-9]* ranks \([0-9.]*\) ms.*speed-up \([0-9.]*\), efficiency \([0-9.]*\).*/\1 \2 \3 \4/p')
  w=$(grep -m1 'whole call' "$log" | sed -n 's/.*: 1 rank \([0-9.]*\) ms, [0-9]* ranks \([0-9.]*\) ms.*speed-up \([0-9.]*\), efficiency \([0-9.]*\).*/\1 \2 \3 \4/p')
  read -r "pl_k1[$k]" "pl_kn[$k]" "pl_ksp[$k]" "pl_keff[$k]" <<< "$m"
  read -r "pl_w1[$k]" "pl_wn[$k]" "pl_wsp[$k]" "pl_weff[$k]" <<< "$w"
  num "${pl_kn[$k]:-}" && num "${pl_wn[$k]:-}" || { echo "    no figures in $log"; return 1; }
  pl_rc[$k]=0
}
section_polylla() {
  echo "== polylla: partitioned Polylla (bench polylla grid2d:N --distribute partitioned --partitioner $polylla_part, $backend)"
  local N=$polylla_strong R k hdr title
  hdr="| date (UTC) | device | GPUs | vertices | triangles | ranks | kernels ms, 1 GPU | kernels ms (slowest rank) | speed-up | efficiency | whole call ms, 1 GPU | whole call ms | speed-up | efficiency |"
  title="Polylla, partitioned, strong scaling (grid2d, $polylla_part, median of $polylla_repeats after $polylla_warmup warm-up; 1 GPU: rank 0 alone on the whole grid in each invocation)"
  local first=1
  for R in $(series strong && echo "$ranks_all"); do
    [ "$R" = 1 ] && continue
    k="$N,$R"
    polylla_run "$N" "$R" || { note "polylla strong, $N vertices, $R ranks: no result"; continue; }
    if [ "$first" = 1 ]; then
      first=0
      fig "polylla strong, $(mega "${pl_nv[$k]}") vertices, $one (baseline): kernels ${pl_k1[$k]} ms, whole call ${pl_w1[$k]} ms"
      md_row polylla-strong "$title" "$hdr" "| $(now) | $device | $gpus | ${pl_nv[$k]} | ${pl_nt[$k]} | 1 | ${pl_k1[$k]} | ${pl_k1[$k]} | 1.00 | 1.00 | ${pl_w1[$k]} | ${pl_w1[$k]} | 1.00 | 1.00 |"
      tsv_row polylla strong "kernels, $(mega "${pl_nv[$k]}") vertices" 1 "${pl_nt[$k]}" "${pl_k1[$k]}" "${pl_k1[$k]}" 1 1 ""
      tsv_row polylla strong "whole call, $(mega "${pl_nv[$k]}") vertices" 1 "${pl_nt[$k]}" "${pl_w1[$k]}" "${pl_w1[$k]}" 1 1 ""
    fi
    fig "polylla strong, $(mega "${pl_nv[$k]}") vertices, $R ranks: kernels ${pl_kn[$k]} ms ($one ${pl_k1[$k]}): speed-up ${pl_ksp[$k]}, efficiency ${pl_keff[$k]}; whole call ${pl_wn[$k]} ms ($one ${pl_w1[$k]}): speed-up ${pl_wsp[$k]}, efficiency ${pl_weff[$k]}"
    md_row polylla-strong "$title" "$hdr" "| $(now) | $device | $gpus | ${pl_nv[$k]} | ${pl_nt[$k]} | $R | ${pl_k1[$k]} | ${pl_kn[$k]} | ${pl_ksp[$k]} | ${pl_keff[$k]} | ${pl_w1[$k]} | ${pl_wn[$k]} | ${pl_wsp[$k]} | ${pl_weff[$k]} |"
    tsv_row polylla strong "kernels, $(mega "${pl_nv[$k]}") vertices" "$R" "${pl_nt[$k]}" "${pl_kn[$k]}" "${pl_k1[$k]}" "${pl_ksp[$k]}" "${pl_keff[$k]}" ""
    tsv_row polylla strong "whole call, $(mega "${pl_nv[$k]}") vertices" "$R" "${pl_nt[$k]}" "${pl_wn[$k]}" "${pl_w1[$k]}" "${pl_wsp[$k]}" "${pl_weff[$k]}" ""
  done
  # weak: one GPU is the plain bench on the per-GPU size, R GPUs the partitioned bench on R times it
  local P=$polylla_weak log nt1="" k1="" w1="" nt ke we
  hdr="| date (UTC) | device | GPUs | vertices | triangles | triangles per GPU | ranks | kernels ms (slowest rank) | weak efficiency | whole call ms | weak efficiency |"
  title="Polylla, partitioned, weak scaling ($(mega "$P") vertices per GPU; efficiency per triangle per GPU against 1 GPU)"
  for R in $(series weak && echo "$ranks_all"); do
    if [ "$R" = 1 ]; then
      log=$logdir/polylla-$P-plain.log
      fits $(( P * 400 )) "polylla weak, grid2d:$P on 1 GPU" || continue
      mpi 1 "$log" "$exe" bench polylla "grid2d:$P" --backend "$backend" --warmup "$polylla_warmup" --repeats "$polylla_repeats" ||
        { note "polylla weak, $one: no result"; continue; }
      nt1=$(sed -n 's/^polylla [^:]*: \([0-9]*\) vertices, \([0-9]*\) triangles.*/\2/p' "$log" | head -1)
      k1=$(awk '/label \+ repair \+ traversal/ { for (i = 1; i <= NF; i++) if ($i == "ms") { print $(i - 1); exit } }' "$log")
      w1=$(awk '/end to end/ { for (i = 1; i <= NF; i++) if ($i == "ms") { print $(i - 1); exit } }' "$log")
      num "$k1" && num "$w1" && num "$nt1" || { note "polylla weak, $one: no figures in $log"; nt1=""; continue; }
      fig "polylla weak, $one, $(mega "$nt1") triangles: kernels $k1 ms, whole call (end to end) $w1 ms"
      md_row polylla-weak "$title" "$hdr" "| $(now) | $device | $gpus | $P | $nt1 | $nt1 | 1 (bench polylla) | $k1 | 1.00 | $w1 | 1.00 |"
      tsv_row polylla weak "kernels, $(mega "$P") vertices per GPU" 1 "$nt1" "$k1" "$k1" 1 1 ""
      tsv_row polylla weak "whole call, $(mega "$P") vertices per GPU" 1 "$nt1" "$w1" "$w1" 1 1 ""
      continue
    fi
    N=$(( P * R )); k="$N,$R"
    polylla_run "$N" "$R" || { note "polylla weak, $R ranks ($N vertices): no result"; continue; }
    nt=${pl_nt[$k]}; ke=-; we=-
    if [ -n "$nt1" ]; then
      ke=$(calc %.2f "($nt / $R / ${pl_kn[$k]}) / ($nt1 / $k1)")
      we=$(calc %.2f "($nt / $R / ${pl_wn[$k]}) / ($nt1 / $w1)")
    fi
    fig "polylla weak, $R ranks, $(mega "${pl_nv[$k]}") vertices: kernels ${pl_kn[$k]} ms, weak efficiency $ke; whole call ${pl_wn[$k]} ms, weak efficiency $we"
    md_row polylla-weak "$title" "$hdr" "| $(now) | $device | $gpus | ${pl_nv[$k]} | $nt | $((nt / R)) | $R | ${pl_kn[$k]} | $ke | ${pl_wn[$k]} | $we |"
    tsv_row polylla weak "kernels, $(mega "$P") vertices per GPU" "$R" "$nt" "${pl_kn[$k]}" "${k1:-}" "" "$ke" ""
    tsv_row polylla weak "whole call, $(mega "$P") vertices per GPU" "$R" "$nt" "${pl_wn[$k]}" "${w1:-}" "" "$we" ""
  done
}

# ================================================================== stencil
section_stencil() {
  echo "== stencil: heat steps of one grid over the ranks (bench stencil --distribute partitioned, $stencil_dtype, halo $stencil_halo, $stencil_step step)"
  local hdr title scaling shape R log head oneline t1 tn sp eff frac tr grid blocks dtype pts first
  hdr="| date (UTC) | device | GPUs | scaling | grid | block per rank | dtype | ranks | ms/step (slowest rank) | one rank ms/step | speed-up | efficiency | GB/s per rank | of copy | halo |"
  for spec in "strong $stencil_strong" $(for s in $stencil_weak; do echo "weak:$s"; done); do
    case "$spec" in strong\ *) scaling=strong; shape=${spec#strong } ;; *) scaling=weak; shape=${spec#weak:} ;; esac
    series "$scaling" || continue
    title="Stencils, one grid over the GPUs ($stencil_steps heat steps after $stencil_warmup; one rank timed alone in each invocation)"
    first=1
    for R in $ranks_all; do
      [ "$R" = 1 ] && continue
      pts=$(awk -F, '{ printf "%.0f", $1 * $2 * $3 }' <<< "$shape")
      local w=4; [ "$stencil_dtype" = float64 ] || [ "$backend" = cpu ] && w=8
      if [ "$scaling" = strong ]; then fits $(( pts * w * 3 )) "stencil strong $shape on $R ranks" || continue
      else fits $(( pts * w * (R + 2) )) "stencil weak $shape per rank on $R ranks" || continue; fi
      log=$logdir/stencil-$scaling-${shape//,/x}-np$R.log
      local sargs=(--scaling "$scaling"); [ "$backend" = cpu ] && sargs+=(--backend cpu)
      mpi "$R" "$log" "$exe" bench stencil --distribute partitioned --shape "$shape" --dtype "$stencil_dtype" \
        "${sargs[@]}" --steps "$stencil_steps" --warmup "$stencil_warmup" --halo "$stencil_halo" \
        --step "$stencil_step" -v ||
        { note "stencil $scaling $shape, $R ranks: no result"; continue; }
      head=$(grep -m1 '^stencil heat, ' "$log")
      oneline=$(grep -m1 'one rank (' "$log")
      grid=$(sed -n 's/^stencil heat, \([0-9]*\) x \([0-9]*\) x \([0-9]*\) \([a-z0-9]*\),.*/\1x\2x\3/p' <<< "$head")
      dtype=$(sed -n 's/^stencil heat, [0-9 x]* \([a-z0-9]*\),.*/\1/p' <<< "$head")
      blocks=$(sed -n 's/^ *one rank (\([0-9]*\) x \([0-9]*\) x \([0-9]*\)).*/\1x\2x\3/p' <<< "$oneline")
      t1=$(sed -n 's/.*one rank ([^)]*) \([0-9.]*\) ms per step, [0-9]* ranks \([0-9.]*\) ms per step: .*/\1/p' <<< "$oneline")
      tn=$(sed -n 's/.*one rank ([^)]*) \([0-9.]*\) ms per step, [0-9]* ranks \([0-9.]*\) ms per step: .*/\2/p' <<< "$oneline")
      sp=$(sed -n 's/.*speed-up \([0-9.]*\), efficiency \([0-9.]*\).*/\1/p' <<< "$oneline")
      eff=$(sed -n 's/.*efficiency \([0-9.]*\).*/\1/p' <<< "$oneline")
      tr=$(grep -o 'halo over [A-Za-z]*' "$log" | head -1 | cut -d' ' -f3)
      # GB/s and fraction of copy of the slowest rank (rank rows: rank nz x ny x nx interior ... of-copy)
      read -r gbs frac < <(awk '$1 ~ /^[0-9]+$/ && $3 == "x" && $5 == "x" && NF >= 14 { if ($11 + 0 >= m) { m = $11 + 0; g = $13; f = $14 } } END { print (g == "" ? "-" : g), (f == "" ? "-" : f) }' "$log")
      num "$tn" && num "$t1" || { note "stencil $scaling $shape, $R ranks: no figures in $log"; continue; }
      [ "$scaling" = weak ] && blocks="$blocks per rank" || blocks=$(awk -F'[ ]+' '$1 ~ /^[0-9]+$/ && $3 == "x" { print $2 "x" $4 "x" $6; exit }' <(sed 's/^ *//' "$log"))
      if [ "$first" = 1 ]; then
        first=0
        fig "stencil $scaling ${shape//,/x}$([ "$scaling" = weak ] && echo ' per GPU'), $one: $t1 ms/step"
        md_row stencil "$title" "$hdr" "| $(now) | $device | $gpus | $scaling | ${shape//,/x} | ${shape//,/x} | $dtype | 1 | $t1 | $t1 | 1.00 | 1.00 | | | |"
        tsv_row stencil "$scaling" "${shape//,/x}$([ "$scaling" = weak ] && echo ' per GPU')" 1 "$pts" "$t1" "$t1" 1 1 ""
      fi
      tr=${tr:--}
      if [ "$scaling" = strong ]; then
        fig "stencil strong $grid $dtype, $R ranks: $tn ms/step (one rank $t1): speed-up $sp, efficiency $eff, slowest rank $gbs GB/s = $frac of copy (halo ${tr:-})"
      else
        sp=""
        fig "stencil weak ${shape//,/x} per GPU ($grid $dtype), $R ranks: $tn ms/step (one rank $t1): weak efficiency $eff, slowest rank $gbs GB/s = $frac of copy (halo ${tr:-})"
      fi
      md_row stencil "$title" "$hdr" "| $(now) | $device | $gpus | $scaling | $grid | $blocks | $dtype | $R | $tn | $t1 | ${sp:-} | $eff | $gbs | $frac | ${tr:-} |"
      tsv_row stencil "$scaling" "${shape//,/x}$([ "$scaling" = weak ] && echo ' per GPU')" "$R" "$(awk -F'x' '{ printf "%.0f", $1 * $2 * $3 }' <<< "$grid")" "$tn" "$t1" "${sp:-}" "$eff" "gbs=$gbs;of_copy=$frac;halo=${tr:-}"
    done
  done
}

# ================================================================== ctest
section_ctest() {
  echo "== ctest -L gpu${ctest_regex:+ -R $ctest_regex} in $build"
  [ -f "$build/CTestTestfile.cmake" ] || { note "ctest: $build is not a build tree with tests: skipped"; return; }
  local log=$logdir/ctest-gpu.log
  local rx=(); [ -n "$ctest_regex" ] && rx=(-R "$ctest_regex")
  (cd "$build" && ctest -L gpu "${rx[@]}" --output-on-failure ${CTEST_ARGS:-}) > "$log" 2>&1
  local rc=$?
  local hdr="| date (UTC) | device | GPUs | test | status | s |" name status secs
  declare -A n=()
  while IFS=$'\t' read -r name status secs; do
    md_row ctest "ctest -L gpu${ctest_regex:+ -R $ctest_regex}" "$hdr" "| $(now) | $device | $gpus | $name | $status | $secs |"
    echo "  $name: $status ($secs s)"
    n[$status]=$(( ${n[$status]:-0} + 1 ))
  done < <(awk '/Test +#[0-9]+: / {
      for (i = 1; i <= NF; i++) if ($i ~ /^#[0-9]+:$/) name = $(i + 1)
      st = "?"; if ($0 ~ /Passed/) st = "passed"; else if ($0 ~ /Skipped/) st = "skipped";
      else if ($0 ~ /\*\*\*Failed|Failed/) st = "FAILED"; else if ($0 ~ /Timeout/) st = "TIMEOUT";
      else if ($0 ~ /Not Run/) st = "not run"; else if ($0 ~ /Exception|\*\*\*/) st = "FAILED";
      s = ""; for (i = 1; i <= NF; i++) if ($i == "sec") s = $(i - 1)
      printf "%s\t%s\t%s\n", name, st, s }' "$log")
  local line st counts=""; line=$(grep -E 'tests passed|No tests were found' "$log" | tail -1)
  for st in "${!n[@]}"; do counts="$counts, ${n[$st]} $st"; done
  fig "ctest -L gpu${ctest_regex:+ -R $ctest_regex}: ${line:-no summary} (rc $rc)$counts"
}

# ================================================================== run
for s in smooth permesh polylla stencil ctest; do
  if want "$s"; then
    t0=$SECONDS
    "section_$s"
    echo "   ($s: $((SECONDS - t0)) s)"
  else
    echo "== $s: skipped"
  fi
done

py=""   # the first python with matplotlib (PYTHON, python3, /usr/bin/python3), else python3
for p in ${PYTHON:-} python3 /usr/bin/python3; do
  command -v "$p" > /dev/null && "$p" -c 'import matplotlib' 2> /dev/null && { py=$p; break; }
done
[ -z "$py" ] && command -v python3 > /dev/null && py=python3
if [ -n "$py" ]; then
  "$py" "$repo/scripts/plot_scale_runs.py" "$tsv" "$out" 2>&1 | sed 's/^/  /'
else
  echo "  plots: skipped (no python3)"
fi
if [ "${KEEP_DATA:-0}" != 1 ]; then   # only what this script made
  rm -rf "$work"/smooth_L* "$work"/base.ply "$work"/permesh* 2> /dev/null
  rmdir "$work" 2> /dev/null
fi
tar -czf "$out/logs.tgz" -C "$logdir" . 2> /dev/null || true

echo
echo "== summary: $device x $gpus, ranks $ranks_all, backend $backend$(isdry && echo ', DRY=1'); $((SECONDS - t_built)) s after the build"
sed 's/^/  /' "$figs"
echo "tables: $md"
echo "figures: $tsv, $(ls "$out"/*.png 2> /dev/null | tr '\n' ' ')"
echo "logs: $logdir (and $out/logs.tgz)"
