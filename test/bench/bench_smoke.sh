#!/bin/sh
# Smoke test of gloo_lite_bench under gloo_lite_run: every collective at P = 2 and 3 with tiny
# sizes and the check on; the exit status, the table format and the JSON rows.
#   bench_smoke.sh GLOO_LITE_RUN GLOO_LITE_BENCH SCRATCH_DIR
set -eu
run=$1
bench=$2
work=$3
mkdir -p "$work"

# shellcheck source=bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"

# Sizes 8, 64, 512, 4096: four rows per table, one for barrier. Columns: 5 + 2 x 4 + algo, or
# 5 + 2 x 6 + algo with -I.
tiny="-b 8 -e 4K -f 8 -n 3 -w 1 -c 1"
for ranks in 2 3; do
  bench all_p$ranks $ranks $tiny --collective all -I --json "$work/all_p$ranks.json"
  check_tables 9 33 18
  # 6 collectives x 4 sizes x 2 forms, broadcast and alltoall 4 x 1, barrier 1.
  check_json "$work/all_p$ranks.json" 57
done

# Every algorithm of the collectives of the performance targets, at P = 3 (not a power of two).
bench algorithms_p3 3 $tiny --collective allreduce,allgather,reduce_scatter,broadcast -A all
tables=$(grep -c '^\[0\] # Collective ' "$out")
[ "$tables" -ge 8 ] || fail "expected a table per algorithm, got $tables"
check_tables "$tables" $((tables * 4)) 14

# Types and ops whose exactness the check relies on.
for variant in "-d half -o avg" "-d bf16 -o prod" "-d int8 -o sum" "-d double -o min"; do
  # shellcheck disable=SC2086
  bench variant 3 $tiny --collective allreduce,reduce,reduce_scatter $variant
  check_tables 3 12 14
done

# Errors: an algorithm the collective lacks, a malformed flag.
out=$work/errors.out
if "$run" -n 2 -- "$bench" -b 8 -e 8 -A bruck >"$out" 2>&1; then fail "-A bruck for allreduce ran"; fi
grep -q "bruck" "$out" || fail "no message naming the algorithm"
if "$bench" -d nope >"$out" 2>&1; then fail "-d nope was accepted"; fi
grep -q "unknown data type" "$out" || fail "no message naming the type"
echo "PASS"
