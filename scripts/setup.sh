#!/usr/bin/env bash
# Shared setup of the README commands: install the Debian packages meshbatch
# needs (only those missing), then configure and build into ./build.
# Usage: source scripts/setup.sh   (from the repository root)
# Each step prints one line; its whole output goes to a log (apt-get:
# BUILD/setup-apt.log, configure: BUILD.configure.log, build: BUILD/build.log,
# BUILD being ${MB_BUILD_DIR:-build}), whose first errors and last lines are
# shown if it fails.
# CI=true also refreshes the package lists when nothing is missing.
set -euo pipefail

MB_PACKAGES=(build-essential cmake pkg-config openmpi-bin libopenmpi-dev libhdf5-openmpi-dev
             libmetis-dev libscotchparmetis-dev libsuitesparse-dev libcyaml-dev libyaml-dev libcmocka-dev libqhull-dev zlib1g-dev
             python3 python3-numpy python3-h5py python3-meshio
             slurm-wlm munge clang libclang-rt-14-dev
             # an optimised BLAS (picked by update-alternatives over Debian's reference
             # libblas3): CHOLMOD's supernodal factors (the implicit flows, the Poisson
             # solves) spend their time in BLAS, and the reference BLAS is about 2x slower;
             # OPENBLAS_NUM_THREADS=1 keeps it to one thread per rank
             libopenblas0-pthread)

# After a failed step: finish its line, show its log's first errors and its
# last lines, fail.
mb_step_failed() {  # LOG WHAT
  echo " failed"
  {
    echo "meshbatch setup: $2 failed; the first errors and the last lines of $1:"
    grep -i -E -m 5 -A 3 "error|^E: " "$1" || true
    echo "[...]"
    tail -n 15 "$1"
  } >&2
  return 1
}

mb_install_packages() {
  local missing=()
  for p in "${MB_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ "${CI:-}" = "true" ] || [ ${#missing[@]} -gt 0 ]; then
    local sudo="" log="${MB_BUILD_DIR:-build}/setup-apt.log" t0=$SECONDS
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    mkdir -p "$(dirname "$log")"
    if [ ${#missing[@]} -gt 0 ]; then
      printf 'meshbatch setup: installing %s Debian packages (%s; log: %s) ...' \
        "${#missing[@]}" "${missing[*]}" "$log"
    else
      printf 'meshbatch setup: refreshing the package lists (CI; log: %s) ...' "$log"
    fi
    $sudo apt-get update -q >"$log" 2>&1 || mb_step_failed "$log" "apt-get update"
    if [ ${#missing[@]} -gt 0 ]; then
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends \
        "${missing[@]}" >>"$log" 2>&1 || mb_step_failed "$log" "apt-get install"
    fi
    echo " done in $((SECONDS - t0)) s"
  fi
}

mb_build() {
  local build=${MB_BUILD_DIR:-build}
  local jobs
  # (nproc obeys OMP_NUM_THREADS, often 1 on clusters and in the tests: not for the build)
  jobs=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc 2>/dev/null || echo 2)
  local t0 features
  printf 'meshbatch setup: configuring %s (log: %s) ...' "$build" "$build.configure.log"
  # shellcheck disable=SC2086 # MB_CMAKE_ARGS holds several arguments
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release ${MB_CMAKE_ARGS:-} >"$build.configure.log" 2>&1 ||
    mb_step_failed "$build.configure.log" "configure"
  features=$(sed -n -E 's/^-- (meshbatch )?(CUDA backend|ParMETIS partitioner|METIS idx_t width): /\2 /p' \
             "$build.configure.log" | paste -sd, - | sed 's/,/, /g')
  echo " done${features:+ ($features)}"
  t0=$SECONDS
  printf 'meshbatch setup: building %s with %s jobs (log: %s) ...' "$build" "$jobs" "$build/build.log"
  cmake --build "$build" -j "$jobs" >"$build/build.log" 2>&1 || mb_step_failed "$build/build.log" "build"
  echo " done in $((SECONDS - t0)) s"
}

# ParaView's pvpython, for the ParaView tests (ctest -L paraview), which skip
# without it: installed in CI (CI=true) or with MB_PARAVIEW=1 (MB_PARAVIEW=0:
# never), where the distribution packages it (Debian: python3-paraview, which
# brings paraview: about 140 packages, 0.8 GB, 5 minutes on a small machine;
# and xvfb, for scripts/render-pvpython.sh, which renders under xvfb-run).
# Optional: where it is not packaged or its install fails, setup goes on.
mb_install_paraview() {
  if [ "${MB_PARAVIEW:-}" != 1 ] && { [ "${CI:-}" != "true" ] || [ "${MB_PARAVIEW:-}" = 0 ]; }; then
    return 0
  fi
  command -v pvpython >/dev/null 2>&1 && return 0
  local sudo="" log="${MB_BUILD_DIR:-build}/setup-paraview.log" t0=$SECONDS
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  mkdir -p "$(dirname "$log")"
  if ! apt-cache show python3-paraview >/dev/null 2>&1; then
    echo "meshbatch setup: ParaView is not packaged here (no python3-paraview): the ParaView tests will skip"
    return 0
  fi
  printf 'meshbatch setup: installing ParaView (python3-paraview; log: %s) ...' "$log"
  if DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends \
       python3-paraview xvfb >"$log" 2>&1 && command -v pvpython >/dev/null 2>&1; then
    echo " done in $((SECONDS - t0)) s"
  else
    echo " failed (see $log): the ParaView tests will skip"
  fi
}

# Open MPI refuses to run as root unless told; containers and CI run as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mb_install_packages
mb_install_paraview
mb_build
