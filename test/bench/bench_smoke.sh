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

# check_tables TABLES ROWS COLUMNS: TABLES tables that all end "0 OK", ROWS rows in all, each row
# of COLUMNS fields after the "[0]" tag, numeric where numbers belong, 0 or N/A wrong elements.
check_tables() {
  grep -q '^\[0\] # gloo_lite_bench: gloo_lite ' "$out" || fail "no header line"
  [ "$(grep -c '^\[0\] # Out of bounds values : 0 OK$' "$out")" -eq "$1" ] ||
    fail "expected $1 tables ending '0 OK'"
  [ "$(grep -c '^\[0\] # Avg bus bandwidth    : ' "$out")" -eq "$1" ] ||
    fail "expected $1 'Avg bus bandwidth' lines"
  if grep -q '^\[[1-9][0-9]*\] ' "$out"; then fail "ranks other than 0 printed"; fi
  rows=$(awk -v columns="$3" '
    $1 == "[0]" && $2 != "#" {
      if (NF != columns + 1) { print "bad field count: " $0 > "/dev/stderr"; exit 1 }
      if ($2 !~ /^[0-9]+$/ || $3 !~ /^[0-9]+$/ || $6 !~ /^-?[0-9]+$/) {
        print "bad size/count/root: " $0 > "/dev/stderr"; exit 1
      }
      form = (columns - 6) / 2
      for (f = 0; f < 2; ++f) {
        first = 7 + f * form
        for (i = first; i < first + form; ++i) {
          if ($i != "N/A" && $i !~ /^[0-9]+(\.[0-9]+)?$/) {
            print "bad number " $i ": " $0 > "/dev/stderr"; exit 1
          }
        }
        if ($(first + 3) != "0" && $(first + 3) != "N/A") {
          print "wrong elements: " $0 > "/dev/stderr"; exit 1
        }
      }
      ++rows
    }
    END { print rows + 0 }' "$out") || fail "malformed rows"
  [ "$rows" -eq "$2" ] || fail "expected $2 rows, got $rows"
}

# check_json FILE OBJECTS: a JSON array of OBJECTS objects with the documented keys.
check_json() {
  command -v python3 >/dev/null 2>&1 || return 0
  python3 - "$1" "$2" <<'PY' || fail "JSON $1"
import json, sys
rows = json.load(open(sys.argv[1]))
assert len(rows) == int(sys.argv[2]), f"{len(rows)} objects, expected {sys.argv[2]}"
keys = {"collective", "algorithm", "chosen", "P", "bytes", "count", "type", "op", "root",
        "inplace", "time_us", "algbw_GBps", "busbw_GBps", "wrong", "p50_us", "p99_us"}
for row in rows:
    assert keys <= row.keys(), f"missing {keys - row.keys()}"
    assert row["wrong"] == 0 and row["time_us"] > 0, row
PY
}

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
