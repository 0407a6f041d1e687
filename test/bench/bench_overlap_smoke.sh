#!/bin/sh
# Smoke test of gloo_lite_bench --overlap MS at P = 2: every collective on small sizes with the
# check on; the table format, that the computation really takes about MS ms (a loop that was
# optimized away or a sleep-free stub would not), that total includes it, the overlap arithmetic
# (recomputed from the JSON), the default size and the flag's errors. With the CPU-bound
# computation it asks for no overlap (on a machine without a spare core per rank there is none
# to have: the transfer needs the CPU too); with --overlap-idle (the caller sleeps, as when it
# waits for an accelerator) a non-blocking allreduce must be mostly hidden: a synchronous
# "non-blocking" form, or one that only progresses inside wait, gives about 0.
#   bench_overlap_smoke.sh GLOO_LITE_RUN GLOO_LITE_BENCH SCRATCH_DIR
set -eu
run=$1
bench=$2
work=$3
mkdir -p "$work"

# shellcheck source=bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"

ms=10

# check_overlap_tables TABLES ROWS: TABLES tables ending "0 OK" with an "Avg overlap" line, ROWS
# rows of 12 fields after the "[0]" tag (size count type redop root ip comm comp total overlap
# #wrong algo).
check_overlap_tables() {
  grep -q "^\[0\] #  overlap: $ms ms of computation per call" "$out" || fail "no overlap header"
  [ "$(grep -c '^\[0\] # Out of bounds values : 0 OK$' "$out")" -eq "$1" ] ||
    fail "expected $1 tables ending '0 OK'"
  [ "$(grep -c '^\[0\] # Avg overlap          : -\{0,1\}[0-9]' "$out")" -eq "$1" ] ||
    fail "expected $1 'Avg overlap' lines"
  if grep -q '^\[[1-9][0-9]*\] ' "$out"; then fail "ranks other than 0 printed"; fi
  rows=$(awk -v ms="$ms" '
    function bad(what) { print what ": " $0 > "/dev/stderr"; exit 1 }
    $1 == "[0]" && $2 != "#" {
      if (NF != 13) bad("bad field count")
      if ($2 !~ /^[0-9]+$/ || $3 !~ /^[0-9]+$/ || $6 !~ /^-?[0-9]+$/) bad("bad size/count/root")
      if ($7 != "0" && $7 != "1") bad("bad in-place flag")
      for (i = 8; i <= 10; ++i) if ($i !~ /^[0-9]+(\.[0-9]+)?$/ || $i + 0 <= 0) bad("bad time " $i)
      if ($11 !~ /^-?[0-9]+\.[0-9][0-9]$/) bad("bad overlap " $11)
      if ($12 != "0") bad("wrong elements")
      # comp is the loop calibrated to MS ms on an undisturbed core, and total runs it too:
      # other load only lengthens them, so neither may come out much below MS.
      if ($9 < ms * 500) bad("computation shorter than " ms / 2 " ms")
      if ($10 < ms * 500) bad("total shorter than " ms / 2 " ms")
      ++rows
    }
    END { print rows + 0 }' "$out") || fail "malformed rows"
  [ "$rows" -eq "$2" ] || fail "expected $2 rows, got $rows"
}

# check_overlap_json FILE OBJECTS: OBJECTS objects with the overlap keys, no wrong elements, and
# overlap = (comm + comp - total) / min(comm, comp).
check_overlap_json() {
  command -v python3 >/dev/null 2>&1 || return 0
  python3 - "$1" "$2" <<'PY' || fail "JSON $1"
import json, sys
rows = json.load(open(sys.argv[1]))
assert len(rows) == int(sys.argv[2]), f"{len(rows)} objects, expected {sys.argv[2]}"
keys = {"collective", "algorithm", "chosen", "P", "bytes", "count", "type", "op", "root",
        "inplace", "iterations", "comm_us", "comp_us", "total_us", "overlap", "wrong"}
for row in rows:
    assert keys <= row.keys(), f"missing {keys - row.keys()}"
    assert row["wrong"] == 0 and row["iterations"] == 3, row
    comm, comp, total = row["comm_us"], row["comp_us"], row["total_us"]
    shorter = min(comm, comp)
    expected = (comm + comp - total) / shorter
    # The times are printed to 6 significant digits: their rounding, divided by a short comm.
    slack = 1e-5 * (comm + comp + total) / shorter + 1e-4 * max(1, abs(expected))
    assert abs(row["overlap"] - expected) <= slack, (row, expected, slack)
PY
}

# Sizes 8 and 64 KiB: two rows per table, one for barrier.
bench overlap_all 2 --overlap $ms -b 8 -e 64K -f 8192 -n 3 -w 1 -c 1 --collective all \
  --json "$work/overlap_all.json"
check_overlap_tables 9 17
check_overlap_json "$work/overlap_all.json" 17

# Without -b/-e, --overlap measures 16 MiB only.
bench overlap_default 2 --overlap $ms -n 1 -w 0 -c 0
[ "$(grep -c '^\[0\]  *16777216 ' "$out")" -eq 1 ] || fail "expected one 16 MiB row"
grep -q '^\[0\] # Out of bounds values : not checked' "$out" || fail "no 'not checked' footer"

# --overlap-idle: 4 MiB allreduces behind 50 ms of sleep; overlap at least 0.5 (about 0.95 here).
ms=50
bench overlap_idle 2 --overlap $ms --overlap-idle --collective allreduce -b 4M -e 4M -n 5 -w 1
grep -q "^\[0\] #  overlap: $ms ms of idle waiting per call" "$out" || fail "no idle header"
awk '$1 == "[0]" && $2 == "4194304" {
       found = 1
       if ($11 + 0 < 0.5) { print "overlap " $11 " below 0.5: " $0 > "/dev/stderr"; exit 1 }
     }
     END { exit !found }' "$out" || fail "the non-blocking allreduce did not overlap the wait"

# Errors: a non-positive or malformed MS, -I with --overlap, a collective given to -c (the check).
# rejected MESSAGE FLAGS...: gloo_lite_bench FLAGS exits non-zero with MESSAGE on its first line.
rejected() {
  message=$1
  shift
  out=$work/errors.out
  if "$bench" "$@" >"$out" 2>&1; then fail "'$*' was accepted"; fi
  head -1 "$out" | grep -q -- "$message" || fail "'$*': no '$message'"
}
rejected "--overlap wants milliseconds > 0, got '0'" --overlap 0
rejected "--overlap wants milliseconds > 0, got '5x'" --overlap 5x
rejected "-I does not apply to --overlap" --overlap 5 -I
rejected "for the collective say --collective allreduce" -c allreduce --overlap 5
rejected "--overlap-idle goes with --overlap MS" --overlap-idle
echo "PASS"
