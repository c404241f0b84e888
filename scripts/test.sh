#!/usr/bin/env bash
# Install what is missing, build, and run the whole test suite (CTest).
# GPU tests skip (exit 77) where no CUDA device is present; tests that read
# the optional ../shared/data meshes skip where that folder is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cd "${MB_BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" "$@"
