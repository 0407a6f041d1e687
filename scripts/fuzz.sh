#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang, GLOO_LITE_FUZZ=ON) into $FUZZ_BUILD_DIR (default
# build-fuzz/) and runs each, one after the other, for a while:
#   scripts/fuzz.sh [--seconds N] [TARGET...]     (default: 20 s each, every target)
# Each run starts from the committed seeds (fuzz/corpus/<target>/) plus what earlier runs on
# this machine found (build-fuzz/corpus/<target>/, never committed), and prints libFuzzer's
# final figures: executions, executions per second, coverage (cov: edges, ft: features) and
# corpus size. A crash, a leak, UB or a broken invariant fails the script; the input that
# caused it is saved as build-fuzz/artifacts/<target>-crash-* (reproduce: <target> FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
seconds=20
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds)
      seconds=$2
      shift 2
      ;;
    -h | --help)
      sed -n '2,10p' "$0"
      exit 0
      ;;
    *)
      targets+=("$1")
      shift
      ;;
  esac
done
build_dir=${FUZZ_BUILD_DIR:-build-fuzz}
if [ ${#targets[@]} -eq 0 ]; then
  targets=(tcp_wire_fuzzer ibverbs_wire_fuzzer tcp_store_protocol_fuzzer store_url_fuzzer
           file_store_fuzzer)
fi

launcher=()
if command -v ccache > /dev/null; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ "${launcher[@]}" \
  -DGLOO_LITE_FUZZ=ON -DGLOO_LITE_BUILD_CUDA=OFF -DGLOO_LITE_BUILD_TESTS=OFF -DGLOO_LITE_BUILD_BENCHMARKS=OFF > /dev/null
cmake --build "$build_dir" --target gloo_lite_fuzzers --parallel "$(nproc)"

export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
mkdir -p "$build_dir/artifacts"
summary=()
failed=0
for target in "${targets[@]}"; do
  corpus=$build_dir/corpus/$target
  log=$build_dir/artifacts/$target.log
  mkdir -p "$corpus"
  echo "== $target: $seconds s"
  status=0
  # -timeout: one input taking over 10 s is a hang; -rss_limit_mb: one that needs 2 GiB a leak
  # or an unbounded allocation.
  "$build_dir/fuzz/$target" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$build_dir/artifacts/$target-" \
    "$corpus" "$root/fuzz/corpus/$target" > "$log" 2>&1 || status=$?
  done_line=$(grep -E '^#[0-9]+[[:space:]].* cov: ' "$log" | tail -n 1 || true)
  stat() { grep -E "^stat::$1:" "$log" | awk '{print $2}' | tail -n 1; }
  cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<< "$done_line")
  ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<< "$done_line")
  units=$(sed -nE 's/.* corp: ([0-9]+)\/.*/\1/p' <<< "$done_line")
  line=$(printf '%-27s execs %10s  exec/s %7s  cov %5s  ft %6s  corpus %5s' "$target" \
    "$(stat number_of_executed_units)" "$(stat average_exec_per_sec)" "${cov:-?}" "${ft:-?}" \
    "${units:-?}")
  if [ "$status" -ne 0 ]; then
    failed=1
    line+="  FAILED (exit $status)"
    echo "$target failed; its log ($log) ends:"
    tail -n 40 "$log"
  fi
  echo "$line"
  summary+=("$line")
done
echo
echo "fuzz summary ($seconds s per target):"
printf '  %s\n' "${summary[@]}"
exit "$failed"
