#!/bin/sh
# `meshbatch bench deform --backend cuda` on a generated 1,600-vertex dome:
# exits 77 where no CUDA device can be used; else each run must print its
# phases per iteration and its 50-iteration frame (no speed asserted); with
# --cg-iterations 8 at most 8 CG iterations per iteration; the time after
# the frame printed apart; every cuda repeat prints its frame path (soft
# with --cg-iterations: by default persistent up to 40,000 vertices (the
# generated input here has fewer) and graph above, graph with --persistent
# no, persistent with --persistent yes, the same planarity bits); a --batch of 20
# layouts prints its device-busy fraction of the wall; the pipelined
# batch's checksum (auto's preparing threads, and 3 of them) equals the
# sequential one's (--overlap no), and the
# graphs' (--persistent no) equals the persistent frame's (auto there).
set -u
p="$MESHBATCH_TEST_TMP/p.h5"
"$MESHBATCH_EXE" generate panels --vertices 1600 -o "$p" || exit 1
run() {
  out=$("$MESHBATCH_EXE" bench deform "$p" --backend cuda --repeats 2 "$@" 2>&1)
  rc=$?
  check "$@"
  echo "$out" | grep -Eq "after the frame: download and frees [0-9.]+ ms" ||
    { echo "no after-the-frame line"; exit 1; }
  echo "$out" | grep -Eq "^repeat 1: frame path (persistent|graph)" ||
    { echo "no frame path line"; exit 1; }
}
# the path of this run's first repeat, and its planarity (%.3g)
path() { echo "$out" | sed -n 's/^repeat 1: frame path \([a-z]*\).*/\1/p'; }
planarity() { echo "$out" | sed -n 's/^repeat 1: .*planarity \([^;]*\);.*/\1/p'; }
check() {
  echo "$out"
  if echo "$out" | grep -q "no CUDA device"; then
    echo "deform_gpu_bench: skipped, no CUDA device"
    exit 77
  fi
  [ $rc -eq 0 ] || { echo "bench deform $* failed ($rc)"; exit 1; }
  echo "$out" | grep -Eq "backend cuda.*" || { echo "no backend line"; exit 1; }
  case "$*" in *--batch*) return ;; esac
  echo "$out" | grep -Eq "per iteration: projection [0-9.]+, solve [0-9.]+, ALM updates [0-9.]+" ||
    { echo "no per-iteration phases"; exit 1; }
  echo "$out" | grep -Eq "per 50-iteration frame: .*frame [0-9.]+ ms" ||
    { echo "no frame line"; exit 1; }
}
run
run --sync-phases
run --hard yes --iterations 20
run --solver pcg --sync-phases
run --solver pcg --cg device
run --solver pcg --cg device --hard yes --iterations 20
run --solver pcg --cg linalg
run --solver pcg --cg-iterations 8
# the cap holds on the device: at most 8 CG iterations in each of the 50
n=$(echo "$out" | sed -n 's/^repeat 1: 50 iterations, [0-9]* factorizations, \([0-9]*\) pcg iterations.*/\1/p')
[ -n "$n" ] && [ "$n" -ge 1 ] && [ "$n" -le 400 ] ||
  { echo "cg_iterations 8: '$n' CG iterations in 50 iterations (1 to 400 expected)"; exit 1; }
echo "cg_iterations 8: $n CG iterations in 50 iterations"
# soft and capped: on this small mesh the persistent frame by default (auto)
# and on request, the graphs with --persistent no, the same result (a
# --sync-phases or hard run takes the graphs)
pl=$(planarity)
[ "$(path)" = persistent ] || { echo "cg_iterations 8: path '$(path)', not persistent (auto)"; exit 1; }
run --solver pcg --cg-iterations 8 --persistent yes
[ "$(path)" = persistent ] || { echo "--persistent yes: path '$(path)', not persistent"; exit 1; }
[ "$(planarity)" = "$pl" ] ||
  { echo "planarity: auto $pl, --persistent yes $(planarity)"; exit 1; }
run --solver pcg --cg-iterations 8 --persistent no
[ "$(path)" = graph ] || { echo "--persistent no: path '$(path)', not graph"; exit 1; }
[ "$(planarity)" = "$pl" ] ||
  { echo "planarity: graph $pl, persistent $(planarity)"; exit 1; }
echo "cg_iterations 8: graph and persistent paths both planarity $pl"
run --solver pcg --cg-iterations 8 --sync-phases
[ "$(path)" = graph ] || { echo "--sync-phases: path '$(path)', not graph"; exit 1; }
run --solver pcg --cg-iterations 8 --hard yes --iterations 20
# a batch of 20 layouts (1,000 to 5,000 vertices) through the pooled buffers:
# the batch line and the device-busy fraction printed (no speed asserted)
out=$("$MESHBATCH_EXE" bench deform --batch 20 --backend cuda --cg-iterations 3 2>&1)
rc=$?
check --batch
echo "$out" | grep -Eq "cuda: wall [0-9.]+ s for 20 layouts" || { echo "no batch line"; exit 1; }
echo "$out" | grep -Eq "cuda: device busy [0-9.]+ % of the wall \([0-9.]+ s of" ||
  { echo "no device-busy line"; exit 1; }
echo "$out" | grep -Eq "cuda: frame path persistent in 20 of 20 layouts" ||
  { echo "no frame path line, or a layout not on the persistent frame (auto, 1-5 k vertices)"; exit 1; }
# the pipelined batch (the default; and with 3 preparing threads) and
# --overlap no: the same device work, so the same layouts' checksum
# (%.17g), hard mode too
for keys in "--cg-iterations 3" "--cg-iterations 3 --hard yes --iterations 12" \
  "--cg-iterations 3 --persistent no"; do
  sums=""
  for ov in "yes" "yes --prep-threads 3" "no"; do
    out=$("$MESHBATCH_EXE" bench deform --batch 12 --backend cuda $keys --overlap $ov 2>&1)
    rc=$?
    check --batch
    s=$(echo "$out" | sed -n "s/^cuda: layouts' checksum \([^ ]*\) .*/\1/p")
    [ -n "$s" ] || { echo "no checksum line (--overlap $ov)"; exit 1; }
    case "$ov" in
    *prep-threads*) echo "$out" | grep -q "^cuda: 3 preparing threads" ||
      { echo "no line of 3 preparing threads"; exit 1; } ;;
    esac
    sums="$sums $s"
  done
  set -- $sums
  [ "$1" = "$3" ] && [ "$2" = "$3" ] ||
    { echo "$keys: pipelined checksums $1 and $2 (3 threads), sequential $3"; exit 1; }
  echo "$keys: pipelined and sequential batches both checksum $1"
  case "$keys" in
  "--cg-iterations 3") soft_sum=$1 ;;
  *--persistent*)
    [ "$1" = "$soft_sum" ] || { echo "graph batch checksum $1, persistent (auto) $soft_sum"; exit 1; }
    echo "the persistent frame's and the graphs' batches both checksum $1" ;;
  esac
done
exit 0
