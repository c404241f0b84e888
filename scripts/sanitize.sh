#!/usr/bin/env bash
# The CPU test suite under AddressSanitizer and UndefinedBehaviorSanitizer
# (any report fails the test that triggers it), then the libFuzzer harnesses
# of every reader for MB_FUZZ_SECONDS each (default 30). Builds into
# build-asan/ (gcc) and build-fuzz/ (clang); the dependencies must be
# installed (scripts/setup.sh does it).
#
# Usage: scripts/sanitize.sh [asan|fuzz|both] [build|test|all]
#   (defaults both, all). scripts/test.sh runs the builds (`both build`)
#   at low priority beside the normal suite, which leaves a core idle at
#   times (launches, waits), then the tests (`both test`).
#
# The ASan run is the unit tests, the conformance bodies and the CLI tests
# on 1 and 2 ranks (MB_ASAN_SELECT below): every op, reader, writer, the
# runner's per-mesh and partitioned paths, the halo exchange and the error
# paths run there. Left out, with the reason (the normal suite runs all of
# them, on every rank count):
#  - gpu, large: no GPU here; datasets over 2 GiB (on demand);
#  - slurm, install: they test daemons and an installed copy built without
#    the sanitizers, not meshbatch's memory use;
#  - paraview, reference: ParaView's readers on files the normal suite
#    makes; third-party reference programs (libigl, CGAL), not meshbatch;
#  - the 3- to 8-rank variants (_3, _4, _8, _npN with N >= 3, and the
#    conformance bodies on 3 ranks): the same code as on 2 ranks (a rank
#    with a neighbour on each side is also a rank of the 2 x 2 x 2 ...
#    splits, which run in the normal suite); each runs N ASan processes on
#    2 cores (conformance_stencil_8 and conformance_polylla_tips_8 took
#    100 s and 57 s). Of the tests on 3 ranks only: cli_dynamic_schedule
#    and cli_pipeline_ranks_3 are covered by cli_pipeline_dynamic and
#    cli_resume_dynamic (the dynamic schedule and the pipeline on 2
#    ranks), cli_resume_3 and cli_pipeline_resume_3 by cli_resume_dynamic
#    and cli_pipeline_resume_1; cli_resume_partitioned and
#    collection_slabs_np3_pieces have no such sibling and stay;
#  - conformance_polylla_delaunay_*: 2 x 10^5 points, ten times slower under
#    ASan; the same code paths run in conformance_polylla_* on smaller inputs;
#  - polylla_pinch_partitioned: 10^5 points on 1 to 4 ranks (over 3 minutes
#    under ASan); the pinch repair runs under ASan in polylla_pinch and the
#    partitioned Polylla in conformance_polylla_2 (the repair is the same
#    code inside each rank's whole regions);
#  - cli_demo_hints, cli_mpi_fault_3: the demo's shell lines and the 3-rank
#    fault (the 2-rank one runs) take minutes under ASan for no new code path;
#  - *_bench*: benchmarks print figures and assert none; their ops run in
#    the conformance and op tests.
# build-asan builds only what the selected tests run (the CLI, the shims
# they preload, their test programs: MB_ASAN_SELECT's commands), not the
# GPU tests' programs, the C++ references or the installed libraries.
# The sanitizer build has the CPU stencil sweeps in their generic form only
# (-DMESHBATCH_CPU_CLONES=OFF: C's fma, no FMA clone), so that the suite
# checks that path bit for bit too (stencil_cpu's contract test, the
# conformance tests); the normal build runs the FMA clone on FMA processors.
# build-fuzz builds only the harnesses (target fuzz_harnesses): the library
# under clang's ASan and libFuzzer, not the CLI and every test's program (the
# C++ references among them) that its fuzz-labelled tests never run.
# LeakSanitizer is off in the MPI suite: Open MPI unloads its plugins at
# MPI_Finalize, so what they keep cannot be attributed; the fuzz harnesses
# (no MPI, except the collection's) run with it on.
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-both}
steps=${2:-all}
case "$what" in asan|fuzz|both) ;; *) echo "usage: $0 [asan|fuzz|both] [build|test|all]" >&2; exit 2 ;; esac
case "$steps" in build|test|all) ;; *) echo "usage: $0 [asan|fuzz|both] [build|test|all]" >&2; exit 2 ;; esac
jobs=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc 2>/dev/null || echo 2)
rc=0
step() { echo "meshbatch sanitize: $*"; }
MB_ASAN_SELECT=(-LE "gpu|large|fuzz|slurm|install|paraview|reference"
  -E "_(np)?[3-9]$|conformance_polylla_delaunay|polylla_pinch_partitioned|cli_demo_hints|_bench|cli_dynamic_schedule")

# Debug information: line tables only (gcc -g1, clang -gline-tables-only)
# in place of RelWithDebInfo's -g. The reports are the same (the
# sanitizers' own metadata names variables and globals; the stack traces,
# inlined frames too, and mpi_fault.py's addr2line -f need functions and
# lines only), and the compiles take about a quarter less CPU time (six of
# the largest sources under ASan + UBSan: 14.7-17.7 s -> 12.3 s at -O2).
asan_c_flags="-O2 -g1 -DNDEBUG"
fuzz_c_flags="-O2 -gline-tables-only -DNDEBUG"

# The targets the selected tests run: every file named in their commands
# and environments (build-asan's CTestTestfile.cmake files, which name the
# programs whether they are built yet or not) that is a target's output.
asan_targets() {
  local all names
  all=$(cmake --build build-asan --target help | sed -n -E 's/^\.\.\. ([A-Za-z0-9_.-]+).*/\1/p')
  names=$(cd build-asan && ctest -N "${MB_ASAN_SELECT[@]}" | sed -n -E 's/^ *Test +#[0-9]+: (.*)$/\1/p')
  find build-asan -name CTestTestfile.cmake -exec cat {} + | python3 -c '
import os, re, sys
known, names = set(sys.argv[1].split()), set(sys.argv[2].split())
want = {"meshbatch"}
for line in sys.stdin:
    m = re.match(r"(?:add_test|set_tests_properties)\(\[=\[(.*?)\]=\]", line)
    if m and m.group(1) in names:
        for word in [w for w in re.split(r"[\s\"=;]+", line) if "/" in w]:
            name = os.path.basename(word)
            for cand in (name, re.sub(r"^lib(.*?)\.so.*$", r"\1", name)):
                if cand in known:
                    want.add(cand)
print(" ".join(sorted(want)))' "$all" "$names"
}

if [ "$what" != fuzz ] && [ "$steps" != test ]; then
  t0=$SECONDS
  step "configuring and building build-asan (ASan + UBSan; log build-asan.build.log)"
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$asan_c_flags" \
    -DMESHBATCH_CUDA=OFF -DMESHBATCH_SANITIZE=ON -DMESHBATCH_CPU_CLONES=OFF > build-asan.configure.log 2>&1 ||
    { tail -30 build-asan.configure.log; exit 1; }
  targets=$(asan_targets) || { echo "meshbatch sanitize: cannot list the ASan tests' programs" >&2; exit 1; }
  # shellcheck disable=SC2086 # one argument per target
  cmake --build build-asan -j "$jobs" --target $targets > build-asan.build.log 2>&1 ||
    { tail -30 build-asan.build.log; exit 1; }
  step "build-asan built in $((SECONDS - t0)) s ($(wc -w <<< "$targets") targets)"
fi
if [ "$what" != asan ] && [ "$steps" != test ]; then
  if ! command -v clang > /dev/null; then
    step "clang not found: the fuzz harnesses are not built (apt-get install clang)"
  else
    t0=$SECONDS
    step "configuring and building build-fuzz (clang, libFuzzer; log build-fuzz.build.log)"
    CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$fuzz_c_flags" -DMESHBATCH_CUDA=OFF \
      -DMESHBATCH_FUZZ=ON -DMB_FUZZ_SECONDS="${MB_FUZZ_SECONDS:-30}" > build-fuzz.configure.log 2>&1 &&
      cmake --build build-fuzz -j "$jobs" --target fuzz_harnesses > build-fuzz.build.log 2>&1 ||
      { tail -30 build-fuzz.configure.log build-fuzz.build.log; exit 1; }
    step "build-fuzz built in $((SECONDS - t0)) s"
  fi
fi
if [ "$what" != fuzz ] && [ "$steps" != build ]; then
  t0=$SECONDS
  step "the CPU test suite under ASan + UBSan (unit, conformance and CLI tests on 1-2 ranks)"
  (cd build-asan &&
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      ctest --output-on-failure -j "$jobs" "${MB_ASAN_SELECT[@]}") || rc=1
  step "the ASan suite took $((SECONDS - t0)) s"
fi
if [ "$what" != asan ] && [ "$steps" != build ] && command -v clang > /dev/null; then
  t0=$SECONDS
  step "each reader's fuzz harness for ${MB_FUZZ_SECONDS:-30} s"
  (cd build-fuzz && LSAN_OPTIONS=suppressions=$PWD/../tests/fuzz/lsan.supp \
    ctest --output-on-failure -j "$jobs" -L fuzz) || rc=1
  step "the fuzz campaigns took $((SECONDS - t0)) s"
fi
exit $rc
