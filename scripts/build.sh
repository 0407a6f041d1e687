#!/usr/bin/env bash
# Configures and builds gloo_lite (Release, Ninja) into $BUILD_DIR (default: build/).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
# ccache where installed (as the sanitizer and fuzz builds do), so that a second run is quick;
# paths relative to the checkout, so that another clone of it hits the same cache.
launcher=()
if command -v ccache > /dev/null; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache
    -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" "${launcher[@]}"
cmake --build "$build_dir" --parallel "$(nproc)"
