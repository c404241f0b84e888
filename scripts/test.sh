#!/usr/bin/env bash
# Install what is missing, build, and run the whole test suite (CTest).
# GPU tests skip (exit 77) where no CUDA device is present; tests that read
# the optional ../shared/data meshes skip where that folder is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cd "${MB_BUILD_DIR:-build}"
# Tests labelled `large` (datasets over 2 GiB, about 10 minutes on 2 cores)
# run on demand: MB_TEST_LARGE=1, or `ctest -L large` in the build folder.
skip_large=(-LE large)
[ "${MB_TEST_LARGE:-0}" = 1 ] && skip_large=()
rc=0
ctest --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" "${skip_large[@]}" "$@" || rc=$?
cd - > /dev/null
# Then the suite under ASan + UBSan and each reader's fuzz harness for a
# minute (scripts/sanitize.sh; about 25 minutes on 2 cores). CI runs them;
# MB_TEST_SANITIZE=0 skips them.
if [ "${MB_TEST_SANITIZE:-1}" = 1 ] && [ $# -eq 0 ]; then
  bash scripts/sanitize.sh || rc=1
fi
exit $rc
