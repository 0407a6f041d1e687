#!/usr/bin/env bash
# Builds gloo_lite with sanitizers and runs tests under them, each kind in its own build
# directory (instrumented objects must not mix with the normal build's):
#   scripts/sanitize.sh asan [CTEST_ARGS...]  AddressSanitizer + UndefinedBehaviorSanitizer
#       (build-asan/): the whole suite except tests labelled not-asan (each says why in its
#       CMakeLists). UB halts the program; leaks fail the process that leaked.
#   scripts/sanitize.sh tsan [CTEST_ARGS...]  ThreadSanitizer (build-tsan/): the tests labelled
#       transport, context and collectives (only their binaries are built); a data race fails
#       the process that saw it.
# GCC builds both by default (CC/CXX choose another compiler): clang 14 rejects the "f16c"
# feature name that gloo_lite/reduction.cc asks __builtin_cpu_supports about.
# Every binary of the build is instrumented, so ranks that tests fork or exec (gloo_lite_run,
# gloo_lite_store, the test binaries themselves) run under the same sanitizer. Suppressions live
# in scripts/sanitizers/, each with its reason. SANITIZE_BUILD_DIR overrides the build directory;
# SANITIZE_TARGETS limits the build to some targets (scripts/test.sh uses it).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
kind=${1:-}
[ $# -gt 0 ] && shift
case "$kind" in
  asan)
    sanitizers=address,undefined
    select=(-LE '^not-asan$')
    # -O1 (what AddressSanitizer's documentation suggests) and line tables only (-g1) halve the
    # compile time of -O2 -g (shm_test.cc: 30 s -> 14 s); reports keep file and line.
    optimise="-O1 -g1"
    extra=()
    ;;
  tsan)
    sanitizers=thread
    select=(-L '^(transport|context|collectives)$')
    # No benchmark test carries those labels; skipping the benchmarks saves build time.
    extra=(-DGLOO_LITE_BUILD_BENCHMARKS=OFF)
    # ThreadSanitizer slows ranks more than ASan: keep -O2 so the tests meet their deadlines;
    # line tables only (-g1) still name file and line in a race report.
    optimise="-O2 -g1"
    # Only the binaries those tests run (none starts another program), about half the build.
    # A labelled test in a binary missing here fails as "Could not find executable".
    default_targets="transport_tests ibverbs_tests collectives_tests collectives_matrix_tests
      collectives_span_tests collectives_nonblocking_tests collectives_shm_tests
      algorithms_smoke_tests mixed_transport_tests mixed_shm_tests hierarchical_tests"
    ;;
  *)
    echo "usage: $0 asan|tsan [ctest arguments...]" >&2
    exit 2
    ;;
esac
build_dir=${SANITIZE_BUILD_DIR:-build-$kind}
supp=$root/scripts/sanitizers

launcher=()
if command -v ccache > /dev/null; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
# RelWithDebInfo with the flags above: optimised enough that the multi-rank tests keep to their
# time-outs, with line numbers in the reports.
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$optimise -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$optimise -DNDEBUG" \
  -DCMAKE_C_COMPILER="${CC:-gcc}" -DCMAKE_CXX_COMPILER="${CXX:-g++}" "${launcher[@]}" \
  -DGLOO_LITE_SANITIZE="$sanitizers" -DGLOO_LITE_BUILD_CUDA=OFF "${extra[@]}"
# SANITIZE_TARGETS="a b": build only those targets (with the CTEST_ARGS selecting their tests).
targets=${SANITIZE_TARGETS:-${default_targets:-}}
if [ -n "$targets" ]; then
  # ibverbs_tests exists only where libibverbs was found: keep the targets this build has.
  known=$(cmake --build "$build_dir" --target help | sed -n 's/^\([A-Za-z0-9_]*\): .*/\1/p')
  kept=()
  for target in $targets; do
    grep -qx "$target" <<< "$known" && kept+=("$target")
  done
  cmake --build "$build_dir" --parallel "$(nproc)" --target "${kept[@]}"
else
  cmake --build "$build_dir" --parallel "$(nproc)"
fi

# Inherited by every process the tests start.
export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:check_initialization_order=1:detect_stack_use_after_return=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}"

cd "$build_dir"
ctest --output-on-failure -j2 --timeout 900 "${select[@]}" "$@"
