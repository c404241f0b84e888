#!/usr/bin/env bash
# Fuzzing campaigns of meshbatch's readers (tests/fuzz): builds the
# libFuzzer harnesses with clang, ASan and UBSan in build-fuzz/ and runs
# each for RUNS executions (default 1000000), one after another, with its
# seed corpus and dictionary. New inputs gather in build-fuzz/tests/fuzz/grown;
# a crash, hang (over 10 s) or sanitizer report stops that harness and leaves
# the input in build-fuzz/fuzz-artifacts/ (keep it in
# tests/fuzz/regressions/NAME/ once fixed). Prints each harness's executions
# and a summary line; exit 1 if any harness found something.
# Usage: scripts/fuzz.sh [RUNS] [NAME ...]   (names: obj off ply triangle npy job collection)
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1000000}
shift || true
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(obj off ply triangle npy job collection)
build=build-fuzz
CC=clang cmake -S . -B $build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMESHBATCH_CUDA=OFF \
  -DMESHBATCH_FUZZ=ON > $build.configure.log 2>&1 || { tail -20 $build.configure.log; exit 1; }
cmake --build $build -j "$(nproc)" --target "${names[@]/#/fuzz_}" > $build.build.log 2>&1 ||
  { grep -E "error" $build.build.log | head -20; exit 1; }
scratch=$(mktemp -d /dev/shm/mb_fuzz.XXXXXX 2>/dev/null || mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p $build/fuzz-artifacts
found=0
for n in "${names[@]}"; do
  work=$build/tests/fuzz/grown/$n
  mkdir -p "$work"
  dict=()
  [ -f tests/fuzz/dict/$n.dict ] && dict=(-dict=tests/fuzz/dict/$n.dict)
  dirs=("$work" tests/fuzz/corpus/$n)
  [ -d tests/fuzz/regressions/$n ] && dirs+=(tests/fuzz/regressions/$n)
  t0=$(date +%s)
  LSAN_OPTIONS=suppressions=$PWD/tests/fuzz/lsan.supp MB_FUZZ_SCRATCH=$scratch \
    $build/tests/fuzz/fuzz_$n -runs="$runs" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
    "${dict[@]}" -artifact_prefix=$build/fuzz-artifacts/$n- "${dirs[@]}" > $build/fuzz-$n.log 2>&1
  rc=$?
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' $build/fuzz-$n.log)
  echo "fuzz $n: ${execs:-?} executions in $(( $(date +%s) - t0 )) s, exit $rc$( [ $rc -ne 0 ] && grep -m1 -E 'ERROR|SUMMARY' $build/fuzz-$n.log | sed 's/^/: /')"
  [ $rc -eq 0 ] || found=1
done
[ $found -eq 0 ] && echo "fuzz: no crash, hang or sanitizer report" || echo "fuzz: findings in $build/fuzz-artifacts"
exit $found
