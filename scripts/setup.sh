#!/usr/bin/env bash
# Shared setup of the README commands: install the Debian packages meshbatch
# needs (only those missing), then configure and build into ./build.
# Usage: source scripts/setup.sh   (from the repository root)
set -euo pipefail

MB_PACKAGES=(build-essential cmake pkg-config openmpi-bin libopenmpi-dev libhdf5-openmpi-dev
             libmetis-dev libscotchparmetis-dev libcyaml-dev libyaml-dev libcmocka-dev libqhull-dev
             python3 python3-numpy python3-h5py python3-meshio)

mb_install_packages() {
  local missing=()
  for p in "${MB_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ "${CI:-}" = "true" ] || [ ${#missing[@]} -gt 0 ]; then
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "meshbatch setup: installing ${missing[*]:-(none missing; refreshing package lists)}"
    $sudo apt-get update -qq
    if [ ${#missing[@]} -gt 0 ]; then
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
    fi
  fi
}

mb_build() {
  local build=${MB_BUILD_DIR:-build}
  local jobs
  jobs=$(nproc 2>/dev/null || echo 2)
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release ${MB_CMAKE_ARGS:-} >"$build.configure.log" 2>&1 ||
    { cat "$build.configure.log"; echo "meshbatch setup: configure failed" >&2; return 1; }
  grep -E "CUDA backend|METIS idx_t" "$build.configure.log" || true
  cmake --build "$build" -j "$jobs"
}

# Open MPI refuses to run as root unless told; containers and CI run as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mb_install_packages
mb_build
