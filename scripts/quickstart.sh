#!/usr/bin/env bash
# Quick start: install the dependencies, build, and run four ranks of examples/sendrecv on this
# machine under gloo_lite_run (each rank passes a message and 4 MiB around a ring).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
build_dir=${BUILD_DIR:-build}
echo
echo "\$ $build_dir/tools/gloo_lite_run -n 4 -- $build_dir/examples/sendrecv"
"$build_dir/tools/gloo_lite_run" -n 4 -- "$build_dir/examples/sendrecv"
