#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, then builds a program outside the tree
# against it twice (find_package(gloo_lite) and pkg-config) and runs both with the installed
# gloo_lite_run; then the same with the shared library libgloo_lite.so: from C++ and C with
# find_package (gloo_lite::shared) and from C with pkg-config (gloo_lite-c).
#   install_test.sh BUILD_DIR WORK_DIR CXX_COMPILER CMAKE_GENERATOR C_COMPILER
set -euo pipefail
build_dir=$1
work=$2
cxx=$3
generator=$4
cc=$5
here=$(cd "$(dirname "$0")" && pwd)

rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix

step() { echo "== $*"; }

step "cmake --install $build_dir --prefix $prefix"
cmake --install "$build_dir" --prefix "$prefix" > "$work/install.log"
test -x "$prefix/bin/gloo_lite_run" || { echo "gloo_lite_run was not installed"; exit 1; }

# Keep the ranks on loopback and bounded in time whatever this machine's interfaces are.
export GLOO_LITE_HOSTNAME=127.0.0.1 GLOO_LITE_TIMEOUT_MS=20000

check_run() {
  local program=$1 output
  output=$("$prefix/bin/gloo_lite_run" --timeout 60 -n 3 -- "$program")
  echo "$output"
  for expected in "[0] consumer: rank 0 greeted 2 ranks" "[1] consumer: rank 1 got 'hello rank 1'" \
                  "[2] consumer: rank 2 got 'hello rank 2'"; do
    grep -qxF "$expected" <<< "$output" || { echo "missing line: $expected"; exit 1; }
  done
}

step "find_package(gloo_lite) consumer"
cmake -S "$here/consumer" -B "$work/consumer-build" -G "$generator" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
  > "$work/consumer-configure.log" || { cat "$work/consumer-configure.log"; exit 1; }
cmake --build "$work/consumer-build"
check_run "$work/consumer-build/consumer"
check_run "$work/consumer-build/consumer_shared"
check_run "$work/consumer-build/consumer_c"

step "pkg-config consumer"
pc_dir=$(dirname "$(find "$prefix" -name gloo_lite.pc | head -n 1)")
export PKG_CONFIG_PATH="$pc_dir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
echo "-- $pc_dir/gloo_lite.pc:"
cat "$pc_dir/gloo_lite.pc"
flags=$(pkg-config --cflags --libs gloo_lite)
echo "-- pkg-config --cflags --libs gloo_lite: $flags"
# CXXFLAGS: what a sanitized build needs its consumers to add (test/install/CMakeLists.txt); the
# find_package consumer above reads it from the environment through CMake.
# shellcheck disable=SC2086  # the flags are words
"$cxx" ${CXXFLAGS:-} -o "$work/consumer-pc" "$here/consumer/consumer.cc" $flags
check_run "$work/consumer-pc"

step "pkg-config gloo_lite-c consumer (C99, libgloo_lite.so)"
so=$(find "$prefix" -name libgloo_lite.so.0 | head -n 1)
[ -n "$so" ] || { echo "libgloo_lite.so.0 was not installed"; exit 1; }
[ -e "$(dirname "$so")/libgloo_lite.so" ] || { echo "the libgloo_lite.so link was not installed"; exit 1; }
echo "-- $pc_dir/gloo_lite-c.pc:"
cat "$pc_dir/gloo_lite-c.pc"
c_flags=$(pkg-config --cflags --libs gloo_lite-c)
libdir=$(pkg-config --variable=libdir gloo_lite-c)
echo "-- pkg-config --cflags --libs gloo_lite-c: $c_flags"
# shellcheck disable=SC2086  # the flags are words
"$cc" ${CFLAGS:-} -std=c99 -Wall -Wextra -Werror -pedantic -o "$work/consumer-c-pc" \
  "$here/consumer/consumer_c.c" $c_flags -Wl,-rpath,"$libdir"
check_run "$work/consumer-c-pc"

echo "install test passed"
