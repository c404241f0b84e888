#!/usr/bin/env bash
# Install what is missing, build, and run the whole test suite (CTest).
# GPU tests skip (exit 77) where no CUDA device is present; tests that read
# the optional ../shared/data meshes skip where that folder is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
root=$PWD
cd "${MB_BUILD_DIR:-build}"
# Tests labelled `large` (datasets over 2 GiB, about 10 minutes on 2 cores)
# run on demand: MB_TEST_LARGE=1, or `ctest -L large` in the build folder.
skip_large=(-LE large)
[ "${MB_TEST_LARGE:-0}" = 1 ] && skip_large=()
rc=0
# The sanitizer builds (scripts/sanitize.sh; CI runs them, MB_TEST_SANITIZE=0
# skips them) start now, at the lowest priority: the suite below leaves a
# core idle at times (process launches, ranks that wait, the last long
# tests alone) and the builds take those cycles, not the tests'. Their
# output goes to build-sanitize.build.log.
sanitize=0
if [ "${MB_TEST_SANITIZE:-1}" = 1 ] && [ $# -eq 0 ]; then
  sanitize=1
  # (a process group of its own, so that it can be given the normal
  # priority back once the suite is done: on a machine shared with other
  # work it would otherwise go on at the lowest)
  (cd "$root" && exec setsid nice -n 19 bash scripts/sanitize.sh both build) \
    > "$root/build-sanitize.build.log" 2>&1 &
  builder=$!
  echo "meshbatch test: building build-asan and build-fuzz beside the suite (log: build-sanitize.build.log)"
fi
t0=$SECONDS
ctest --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" "${skip_large[@]}" "$@" || rc=$?
echo "meshbatch test: the suite took $((SECONDS - t0)) s"
cd "$root"
# Then the suite under ASan + UBSan and each reader's fuzz harness for
# 30 s (scripts/sanitize.sh; about 10 more minutes on 2 cores).
if [ $sanitize = 1 ]; then
  t0=$SECONDS
  # back to the normal priority (as root, or where RLIMIT_NICE allows it)
  renice -n 0 -g "$builder" > /dev/null 2>&1 || true
  if ! wait "$builder"; then
    cat build-sanitize.build.log
    echo "meshbatch test: the sanitizer builds failed" >&2
    exit 1
  fi
  grep '^meshbatch sanitize:' build-sanitize.build.log
  echo "meshbatch test: waited $((SECONDS - t0)) s for the sanitizer builds"
  bash scripts/sanitize.sh both test || rc=1
fi
exit $rc
