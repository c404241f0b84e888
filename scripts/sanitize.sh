#!/usr/bin/env bash
# The CPU test suite under AddressSanitizer and UndefinedBehaviorSanitizer
# (any report fails the test that triggers it), then the libFuzzer harnesses
# of every reader for MB_FUZZ_SECONDS each (default 30). Builds into
# build-asan/ (gcc) and build-fuzz/ (clang); the dependencies must be
# installed (scripts/setup.sh does it).
#
# Left out of the sanitizer run, with the reason:
#  - gpu, large: no GPU here; datasets over 2 GiB (on demand);
#  - slurm, install: they test daemons and an installed copy built without
#    the sanitizers, not meshbatch's memory use;
#  - conformance_polylla_delaunay_*: 2 x 10^5 points, ten times slower under
#    ASan; the same code paths run in conformance_polylla_* on smaller inputs;
#  - paraview: they test ParaView's readers on files the normal suite makes;
#  - cli_demo_hints, cli_mpi_fault_3: the demo's shell lines and the 3-rank
#    fault (the 2-rank one runs) take minutes under ASan for no new code path.
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
# Usage: scripts/sanitize.sh [asan|fuzz|both]   (default both)
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-both}
jobs=$(nproc 2>/dev/null || echo 2)
rc=0
step() { echo "meshbatch sanitize: $*"; }
if [ "$what" != fuzz ]; then
  step "configuring and building build-asan (ASan + UBSan; log build-asan.build.log)"
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMESHBATCH_CUDA=OFF \
    -DMESHBATCH_SANITIZE=ON -DMESHBATCH_CPU_CLONES=OFF > build-asan.configure.log 2>&1 &&
    cmake --build build-asan -j "$jobs" > build-asan.build.log 2>&1 ||
    { tail -30 build-asan.configure.log build-asan.build.log; exit 1; }
  # The 4-rank variants (and the conformance bodies on 3 ranks) take the code
  # paths of the 2- and 3-rank ones; the normal suite runs them all, the
  # sanitizer build skips them to keep CI near 25 minutes on 2 cores.
  step "the CPU test suite under ASan + UBSan (without the 4-rank variants)"
  (cd build-asan &&
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      ctest --output-on-failure -j "$jobs" -LE "gpu|large|fuzz|slurm|install|paraview" \
        -E "conformance_polylla_delaunay|_np4$|_4$|conformance_.*_3$|cli_demo_hints|cli_mpi_fault_3") || rc=1
fi
if [ "$what" != asan ]; then
  if ! command -v clang > /dev/null; then
    step "clang not found: the fuzz harnesses are not built (apt-get install clang)"
  else
    step "configuring and building build-fuzz (clang, libFuzzer; log build-fuzz.build.log)"
    CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMESHBATCH_CUDA=OFF \
      -DMESHBATCH_FUZZ=ON -DMB_FUZZ_SECONDS="${MB_FUZZ_SECONDS:-30}" > build-fuzz.configure.log 2>&1 &&
      cmake --build build-fuzz -j "$jobs" --target fuzz_harnesses > build-fuzz.build.log 2>&1 ||
      { tail -30 build-fuzz.configure.log build-fuzz.build.log; exit 1; }
    step "each reader's fuzz harness for ${MB_FUZZ_SECONDS:-30} s"
    (cd build-fuzz && LSAN_OPTIONS=suppressions=$PWD/../tests/fuzz/lsan.supp \
      ctest --output-on-failure -j "$jobs" -L fuzz) || rc=1
  fi
fi
exit $rc
