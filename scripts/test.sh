#!/usr/bin/env bash
# Installs the dependencies, builds, and runs the whole test suite with ctest. Services the tests
# need (redis-server) are started by the tests themselves on loopback ports.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/install-python-deps.sh  # before the build: CMake finds the module's venv
./scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j2 --timeout 600 "$@"
