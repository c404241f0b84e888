#!/usr/bin/env bash
# Install this build into a scratch prefix and use it as a library, both ways
# a user would (run by CTest: tests/install/CMakeLists.txt):
#   1. the installed tree: command, libmeshbatch.so (with its SONAME) and .a,
#      the public headers (each compiles alone), the CMake package, meshbatch.pc,
#      the docs; the installed command runs;
#   2. a CMake project with find_package(meshbatch CONFIG) (tests/install/consumer/),
#      linked to the shared and to the static library;
#   3. mpicc $(pkg-config --cflags --libs meshbatch) with PKG_CONFIG_PATH set,
#      and libmeshbatch.a with the libraries of `pkg-config --static --libs`.
# Each consumer (consumer.c) reads a collection made by `meshbatch import`,
# smooths its mesh directly and through the runner, and fails unless the
# vertices moved and both results agree; this script checks its line too.
# Environment: MESHBATCH_EXE, MESHBATCH_SOURCE_DIR, MESHBATCH_TEST_TMP,
# MESHBATCH_MPIEXEC (from mb_add_test), MB_BUILD_DIR, MB_CMAKE, MB_MPICC,
# MB_PKG_CONFIG (from tests/install/CMakeLists.txt). Exit 77 (skip) only
# where pkg-config is absent.
set -euo pipefail

fail() { echo "FAIL: $*"; exit 1; }
# (No `cmd | grep -q` below: with pipefail, grep leaving early fails the pipe.)
# Print a command, run it; its output is shown, its failure fails the test.
step() {
  echo "\$ $*"
  "$@" || fail "exit code $? from: $*"
}

pkgconfig=${MB_PKG_CONFIG:-}
[ -n "$pkgconfig" ] || pkgconfig=$(command -v pkg-config || true)
if [ -z "$pkgconfig" ]; then
  echo "SKIP: pkg-config is not installed (Debian: apt-get install pkg-config)"
  exit 77
fi
cmake=${MB_CMAKE:-cmake}
mpicc=${MB_MPICC:-mpicc}
src=$MESHBATCH_SOURCE_DIR
tmp=$MESHBATCH_TEST_TMP
prefix=$tmp/prefix
rm -rf "$prefix" "$tmp/scratch" "$tmp/cmake-consumer"
mkdir -p "$tmp/scratch"

# ---------------------------------------------------------------- 1. the installed tree
echo "\$ $cmake --install $MB_BUILD_DIR --prefix $prefix"
"$cmake" --install "$MB_BUILD_DIR" --prefix "$prefix" > "$tmp/install.log" ||
  { cat "$tmp/install.log"; fail "cmake --install failed"; }
echo "installed $(grep -c 'Installing\|Up-to-date' "$tmp/install.log") files into $prefix"
libdir=$(dirname "$(find "$prefix" -name meshbatch.pc -path '*/pkgconfig/*' | head -1)")
libdir=${libdir%/pkgconfig}
[ -d "$libdir" ] || fail "no meshbatch.pc installed"
for f in bin/meshbatch include/meshbatch/mb_runner.h include/meshbatch/mb_collection.h \
         include/meshbatch/mb_smooth.h share/doc/meshbatch/README.md share/doc/meshbatch/guide.md; do
  [ -f "$prefix/$f" ] || fail "$prefix/$f not installed"
done
for f in libmeshbatch.a libmeshbatch.so cmake/meshbatch/meshbatchConfig.cmake \
         cmake/meshbatch/meshbatchConfigVersion.cmake cmake/meshbatch/meshbatchTargets.cmake; do
  [ -e "$libdir/$f" ] || fail "$libdir/$f not installed"
done
soname=$(objdump -p "$libdir/libmeshbatch.so" | awk '/SONAME/ {print $2}')
echo "libmeshbatch.so: SONAME $soname"
[[ "$soname" == libmeshbatch.so.* ]] || fail "libmeshbatch.so has no versioned SONAME"
[ -e "$libdir/$soname" ] || fail "$libdir/$soname (the SONAME's link) not installed"
# Only public headers: none of the build's own (config, private, CUDA, CLI) ones.
for h in mb_config.h mb_meshfile_private.h mb_cuda.h cli.h mb_distributed.h; do
  [ ! -e "$prefix/include/meshbatch/$h" ] || fail "private header $h installed"
done
nh=0
for h in "$prefix"/include/meshbatch/*.h; do
  printf '#include <meshbatch/%s>\nint main(void) { return 0; }\n' "$(basename "$h")" > "$tmp/scratch/one.c"
  "$mpicc" -std=c17 -Wall -Wextra -Werror -fsyntax-only -I"$prefix/include" "$tmp/scratch/one.c" ||
    fail "installed header $(basename "$h") does not compile alone"
  nh=$((nh + 1))
done
echo "$nh installed headers compile alone"
[ "$nh" -ge 10 ] || fail "only $nh headers installed"

coll=$tmp/scratch/spot.h5
step "$MESHBATCH_EXE" import "$src/data/meshes/spot.obj" -o "$coll" --quiet
info=$("$prefix/bin/meshbatch" info "$coll")
echo "\$ $prefix/bin/meshbatch info $coll"
echo "$info"
grep -q "spot: 2930 vertices, 5856 faces" <<<"$info" || fail "the installed command does not read the collection"

# A consumer's line: the mesh as imported, vertices moved, runner equal to direct.
check_line() {
  local out=$1
  grep -q "^consumer: spot: 2930 vertices, 5856 faces; direct Taubin moved the vertices by max [0-9.e+-]*, mean" <<<"$out" ||
    fail "consumer printed no result line for spot"
  local moved
  moved=$(sed -n 's/.*moved the vertices by max \([0-9.e+-]*\),.*/\1/p' <<<"$out")
  awk -v m="$moved" 'BEGIN { exit !(m > 0) }' || fail "vertices moved by $moved"
  grep -q "runner: 1 mesh, 0 failed, max difference from direct 0$" <<<"$out" ||
    fail "the runner's result differs from the direct smoothing"
}
# Run one consumer binary (alone, then on 2 ranks) in its own folder.
run_consumer() {
  local exe=$1 name=$2 out rc
  mkdir -p "$tmp/scratch/$name" "$tmp/scratch/$name-np2"
  echo "\$ $exe $coll $tmp/scratch/$name"
  out=$("$exe" "$coll" "$tmp/scratch/$name") || { rc=$?; echo "$out"; fail "$name exited with $rc"; }
  echo "$out"
  check_line "$out"
  echo "\$ $MESHBATCH_MPIEXEC 2 $exe $coll $tmp/scratch/$name-np2"
  out=$($MESHBATCH_MPIEXEC 2 "$exe" "$coll" "$tmp/scratch/$name-np2") ||
    { rc=$?; echo "$out"; fail "$name on 2 ranks exited with $rc"; }
  echo "$out"
  check_line "$out"
  [ -f "$tmp/scratch/$name/out.h5" ] || fail "$name wrote no out.h5"
}

# ---------------------------------------------------------------- 2. CMake package
build=$tmp/cmake-consumer
echo "\$ $cmake -S $src/tests/install/consumer -B $build -DCMAKE_PREFIX_PATH=$prefix -DCMAKE_BUILD_TYPE=Release"
"$cmake" -S "$src/tests/install/consumer" -B "$build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release > "$tmp/consumer-configure.log" 2>&1 ||
  { cat "$tmp/consumer-configure.log"; fail "the consumer project does not configure"; }
grep "meshbatch 0" "$tmp/consumer-configure.log" || fail "find_package printed no version"
grep -q "from $libdir/cmake/meshbatch" "$tmp/consumer-configure.log" ||
  fail "find_package did not take the installed package"
echo "\$ $cmake --build $build"
"$cmake" --build "$build" > "$tmp/consumer-build.log" 2>&1 ||
  { cat "$tmp/consumer-build.log"; fail "the consumer project does not build"; }
# The shared consumer needs the installed libmeshbatch.so, the static one none.
grep -q "libmeshbatch.so.* => $libdir/" <<<"$(ldd "$build/consumer")" ||
  fail "consumer is not linked to $libdir/libmeshbatch.so"
! grep -q libmeshbatch <<<"$(ldd "$build/consumer_static")" || fail "consumer_static needs libmeshbatch.so"
run_consumer "$build/consumer" cmake-shared
run_consumer "$build/consumer_static" cmake-static

# ---------------------------------------------------------------- 3. pkg-config
export PKG_CONFIG_PATH=$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
echo "\$ PKG_CONFIG_PATH=$PKG_CONFIG_PATH $pkgconfig --cflags --libs meshbatch"
flags=$("$pkgconfig" --cflags --libs meshbatch) || fail "pkg-config does not know meshbatch"
echo "$flags"
step "$pkgconfig" --modversion meshbatch
# shellcheck disable=SC2086 # the flags are words
step "$mpicc" -std=c17 -o "$tmp/scratch/consumer_pc" "$src/tests/install/consumer.c" $flags -lm
export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
grep -q "libmeshbatch.so.* => $libdir/" <<<"$(ldd "$tmp/scratch/consumer_pc")" ||
  fail "consumer_pc not linked to $libdir/libmeshbatch.so"
run_consumer "$tmp/scratch/consumer_pc" pkg-config
# Static: libmeshbatch.a and what `pkg-config --static` says it needs.
echo "\$ $pkgconfig --static --libs meshbatch"
static_libs=$("$pkgconfig" --static --libs meshbatch) || fail "pkg-config --static fails"
echo "$static_libs"
cflags=$("$pkgconfig" --cflags meshbatch)
# shellcheck disable=SC2086 # the flags are words
step "$mpicc" -std=c17 -o "$tmp/scratch/consumer_pc_static" "$src/tests/install/consumer.c" \
  $cflags -Wl,-Bstatic -lmeshbatch -Wl,-Bdynamic ${static_libs//-lmeshbatch/} -lm
! grep -q libmeshbatch <<<"$(ldd "$tmp/scratch/consumer_pc_static")" || fail "consumer_pc_static needs libmeshbatch.so"
run_consumer "$tmp/scratch/consumer_pc_static" pkg-config-static
echo "PASS"
