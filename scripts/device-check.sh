#!/usr/bin/env bash
# The device check of issue 13 (docs/cuda.md, "Device check"): on a bare machine with one NVIDIA
# GPU (an H200: CUDA, cmake, ninja, python3 with torch; no network) it builds the targets it
# needs for sm_90 only, runs the CUDA pipeline tests at P = 2 and 4 ranks sharing the GPU,
# gloo_lite_bench -m cuda (allreduce, broadcast, allgather, reduce_scatter, 1 KiB - 256 MiB),
# the pinned copy limit, the CPU host path over the same sizes, and torch's own gloo backend on
# the same CUDA tensors, then writes ONE summary file, $OUT/device-check-summary.md, with the
# targets computed. Each step is time-boxed so that the whole stays under 8 minutes.
#
#   scripts/device-check.sh             # GPU run (falls back to the dry run without a GPU)
#   scripts/device-check.sh --dry-run   # no GPU: host device layer, small sizes, same steps
#
# Environment: OUT (default build-device-check/out), BUILD_DIR (default build-device-check),
# GLOO_LITE_GTEST_ROOT (a GoogleTest install, include/ + lib/, for machines without one; default
# .device-deps/gtest when present; `--pack-gtest DIR` copies this machine's there), PYTHON
# (default python3), CUDA_ARCH (default 90).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
repo=$(pwd)
start=$(date +%s)

if [ "${1:-}" = "--pack-gtest" ]; then
  # For a device machine without GoogleTest: copy this machine's headers and static libraries
  # into DIR (untracked in the work tree, so that it travels with it).
  dir=${2:?--pack-gtest DIR}
  mkdir -p "$dir/include" "$dir/lib"
  cp -r /usr/include/gtest /usr/include/gmock "$dir/include/"
  cp /usr/lib/x86_64-linux-gnu/libgtest*.a /usr/lib/x86_64-linux-gnu/libgmock*.a "$dir/lib/"
  echo "device-check: GoogleTest copied to $dir"
  exit 0
fi

dry_run=0
[ "${1:-}" = "--dry-run" ] && dry_run=1
gpu_note=""
if [ "$dry_run" -eq 0 ]; then
  if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    dry_run=1
    gpu_note="no GPU found (nvidia-smi -L failed or is missing): fell back to the dry run"
  fi
fi
[ "$dry_run" -eq 1 ] && [ -z "$gpu_note" ] && gpu_note="--dry-run asked for"

build=${BUILD_DIR:-build-device-check}
OUT=${OUT:-$build/out}
work=$build/device-check
mkdir -p "$OUT" "$work"
rm -f "$work"/*.json "$work"/*.log "$work/steps.tsv"
python=${PYTHON:-python3}
steps=$work/steps.tsv

# step NAME SECONDS COMMAND...: runs COMMAND under `timeout SECONDS`, output in $work/NAME.log,
# and records "NAME rc seconds" for the summary. A step that would end past the 8-minute mark is
# cut to what is left, and skipped (rc "skipped") when under 10 s are.
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((470 - ($(date +%s) - start)))
  if [ "$left" -lt 10 ]; then
    printf '%s\tskipped\t0\n' "$name" >>"$steps"
    echo "== $name: skipped (the 8-minute budget is spent)"
    return 1
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  echo "== $name (at most ${limit}s): $*"
  local t0 rc
  t0=$(date +%s)
  timeout --kill-after=5 "$limit" "$@" >"$work/$name.log" 2>&1
  rc=$?
  printf '%s\t%s\t%s\n' "$name" "$rc" "$(($(date +%s) - t0))" >>"$steps"
  tail -3 "$work/$name.log"
  return "$rc"
}

# --- Configure and build (under 4 minutes): only the targets the steps need. ---
if [ "$dry_run" -eq 0 ] && ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
launcher=()
if command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(dirname "$repo")}
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache
    -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
gtest_root=${GLOO_LITE_GTEST_ROOT:-$repo/.device-deps/gtest}
gtest=()
[ -d "$gtest_root/include/gtest" ] && gtest=(-DGTEST_ROOT="$gtest_root" -DGTest_ROOT="$gtest_root")
tests=OFF # no GoogleTest and no network: cuda_tests cannot build; the bench still checks
for include in /usr/include /usr/local/include "$gtest_root/include"; do
  [ -d "$include/gtest" ] && tests=ON
done
cuda=ON
[ "$dry_run" -eq 1 ] && cuda=OFF # the host device layer only
configure=(cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "${gtest[@]}"
  -DGLOO_LITE_BUILD_PYTHON=OFF -DGLOO_LITE_BUILD_TORCH=OFF -DGLOO_LITE_WITH_REDIS=OFF
  -DGLOO_LITE_WITH_IBVERBS=OFF "-DGLOO_LITE_BUILD_TESTS=$tests" "-DGLOO_LITE_BUILD_CUDA=$cuda"
  -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}")
targets=(gloo_lite_run gloo_lite_bench)
[ "$tests" = ON ] && targets+=(cuda_tests)
built=0
if step configure 60 "${configure[@]}" &&
  step build 220 cmake --build "$build" --parallel "$(nproc)" --target "${targets[@]}"; then
  built=1
fi
have_cuda=$(grep -c 'GLOO_LITE_HAVE_CUDA:INTERNAL=ON\|CUDA \.* ON' "$work/configure.log" 2>/dev/null)

# --- Runs. P = 2 for the figures (torch's anchor runs at P = 2 too). ---
runner=$build/tools/gloo_lite_run
bench=$build/benchmark/gloo_lite_bench
if [ "$dry_run" -eq 0 ]; then
  mode=cuda
  sizes=(-b 1K -e 256M -f 4)
  anchor_sizes=(-b 1K -e 256M -f 4)
  p4_max=64M
  filter=Cuda
  device=cuda
  nvidia-smi -L >"$work/gpu.log" 2>&1
else
  mode=host-stand-in
  sizes=(-b 1K -e 4M -f 4)
  anchor_sizes=(-b 1K -e 4M -f 16)
  p4_max=1M
  filter=HostStandIn
  device=cpu
fi
four=allreduce,broadcast,allgather,reduce_scatter
common=(-w 2 -c 1 --size-time 0.1)
if [ "$built" -eq 1 ]; then
  if [ "$tests" = ON ]; then
    # The pipeline cases fork their own ranks (each case has its P); all ranks use GPU 0.
    # The kernels' host check (built with the CUDA layer only) and the several-GPUs-per-process
    # cases (their "GPUs" all GPU 0 here) ride with the P = 2 run.
    step tests_p2 90 "$build/test/cuda/cuda_tests" \
      --gtest_filter="$filter/Pipeline.*_P2:CudaKernelsOnHost*:$filter/MultiDevice.*"
    step tests_p4 90 "$build/test/cuda/cuda_tests" --gtest_filter="$filter/Pipeline.*_P4"
  fi
  step copy_p1 40 "$runner" -n 1 -- "$bench" -m "$mode" --copy-limit "${sizes[@]}" \
    "${common[@]}" --json "$work/copy_p1.json"
  step copy_p2 40 "$runner" -n 2 -- "$bench" -m "$mode" --copy-limit "${sizes[@]}" \
    "${common[@]}" --json "$work/copy_p2.json"
  step device_p2 110 "$runner" -n 2 -- "$bench" -m "$mode" --collective "$four" "${sizes[@]}" \
    "${common[@]}" --json "$work/device_p2.json"
  step cpu_p2 90 "$runner" -n 2 -- "$bench" -m cpu --collective "$four" "${sizes[@]}" \
    "${common[@]}" --json "$work/cpu_p2.json"
fi
# The anchor needs no build; before the P = 4 run, which is the first to go when time runs out.
step torch_gloo 100 "$python" benchmark/torch_cuda_anchor.py -p 2 "${anchor_sizes[@]}" \
  --min-time 0.1 --device "$device" --json "$work/torch_p2.json"
if [ "$built" -eq 1 ]; then
  # P = 4 ranks on the one GPU: allreduce, checked (the figures of the targets are at P = 2).
  step device_p4 50 "$runner" -n 4 -- "$bench" -m "$mode" --collective allreduce -b 1K \
    -e "$p4_max" -f 16 "${common[@]}" --json "$work/device_p4.json"
fi

# --- The one summary file. ---
summary=$OUT/device-check-summary.md
$python benchmark/device_check_summary.py --work "$work" --dry-run "$dry_run" \
  --note "$gpu_note" --have-cuda "${have_cuda:-0}" --tests "$tests" \
  --seconds "$(($(date +%s) - start))" >"$summary" ||
  echo "device-check: the summary script failed; raw logs in $work" >>"$summary"
echo "device-check: summary in $summary ($(($(date +%s) - start)) s)"
