# meshbatch: the CUDA build of the GPU scripts (sourced, not run).
# mb_gpu_build BUILD OUTDIR ARCH [TARGET...]: configure BUILD (Release, CUDA,
# CMAKE_CUDA_ARCHITECTURES=ARCH, plus MB_CMAKE_ARGS) and build it (the
# TARGETs, or everything) with a job per core; the logs go to
# OUTDIR/configure.log and OUTDIR/build.log, whose first errors or last
# lines are shown before the calling script exits 1 on a failure.
mb_gpu_build() {
  local build=$1 out=$2 arch=$3
  shift 3
  local targets=()
  [ $# -gt 0 ] && targets=(--target "$@")
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DMESHBATCH_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="$arch" ${MB_CMAKE_ARGS:-} > "$out/configure.log" 2>&1 ||
    { tail -30 "$out/configure.log"; exit 1; }
  cmake --build "$build" -j "$(nproc)" "${targets[@]}" > "$out/build.log" 2>&1 ||
    { grep -E "error" "$out/build.log" | head -30; exit 1; }
}
