#!/usr/bin/env bash
# Installs the dependencies, builds, and runs the whole test suite with ctest. Services the tests
# need (redis-server) are started by the tests themselves on loopback ports.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/install-python-deps.sh  # before the build: CMake finds the module's venv
./scripts/install-torch.sh        # torch for the torch.distributed backend (large, cached)
./scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j2 --timeout 600 "$@"
cd - > /dev/null
# The non-blocking tests once more under AddressSanitizer: work cancelled by a destroyed context
# must never touch freed memory. Skipped when ctest arguments select a subset. CI's asan stage
# then runs the whole suite in the same build-asan/.
if [ $# -eq 0 ]; then
  SANITIZE_TARGETS=collectives_nonblocking_tests ./scripts/sanitize.sh asan -R '^NonBlocking\.'
fi
