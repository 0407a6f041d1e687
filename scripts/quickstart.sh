#!/usr/bin/env bash
# Quick start: install the dependencies, build, and run the main job: the allreduce benchmark
# (nccl-tests conventions) on four local ranks under gloo_lite_run. Extra arguments go to the
# benchmark (e.g. --collective all, -A ring, -b 8 -e 1G).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
build_dir=${BUILD_DIR:-build}
echo
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(-b 8 -e 64M -f 8)
echo "\$ $build_dir/tools/gloo_lite_run -n 4 -- $build_dir/benchmark/gloo_lite_bench ${args[*]}"
"$build_dir/tools/gloo_lite_run" -n 4 -- "$build_dir/benchmark/gloo_lite_bench" "${args[@]}"
