#!/bin/sh
# Smoke test of gloo_lite_bench's device path without a GPU: -m host-stand-in runs the six
# collectives of gloo_lite::cuda at P = 2 and 3 on the host stand-in device layer, with slots
# small enough that every size above 1 KiB takes several pipelined chunks and the check on;
# --copy-limit's table and JSON; and the errors of the device modes.
#   bench_device_smoke.sh GLOO_LITE_RUN GLOO_LITE_BENCH SCRATCH_DIR
set -eu
run=$1
bench=$2
work=$3
mkdir -p "$work"

# shellcheck source=bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"

# Sizes 1K, 8K, 64K: three rows per table; 4 KiB slots, 3 of them.
tiny="-m host-stand-in -b 1K -e 64K -f 8 -n 3 -w 1 -c 1 --slot-bytes 4K --slots 3"
six=allreduce,reduce,reduce_scatter,allgather,broadcast,alltoall
for ranks in 2 3; do
  # shellcheck disable=SC2086
  bench device_p$ranks $ranks $tiny --collective $six --json "$work/device_p$ranks.json"
  grep -q '^\[0\] #  mode host-stand-in: device buffers through gloo_lite::cuda on host stand-in' \
    "$out" || fail "no line naming the mode and the layer"
  check_tables 6 18 14
  # Four collectives x 3 sizes x 2 forms; broadcast (in place only) and alltoall (out of place).
  check_json "$work/device_p$ranks.json" 30
done

# A type whose exactness the check relies on, through the device path.
# shellcheck disable=SC2086
bench device_half 2 $tiny --collective allreduce,reduce_scatter -d half -o avg
check_tables 2 6 14

# --copy-limit: a row per size with two positive times and two bandwidths, and two JSON objects
# per size. The table prints GB/s to two decimals, so a 1 KiB copy slowed by a sanitizer reads
# 0.00 there; the JSON carries the exact figure and must be positive.
# shellcheck disable=SC2086
bench copy_limit 2 $tiny --copy-limit --json "$work/copy_limit.json"
grep -q '^\[0\] # copy limit: host stand-in' "$out" || fail "no copy limit heading"
rows=$(awk '$1 == "[0]" && $2 != "#" && $3 > 0 && $5 > 0 &&
            $4 ~ /^[0-9]+\.[0-9]+$/ && $6 ~ /^[0-9]+\.[0-9]+$/ { ++n }
            END { print n + 0 }' "$out")
[ "$rows" -eq 3 ] || fail "expected 3 copy limit rows, got $rows"
if command -v python3 >/dev/null 2>&1; then
  python3 - "$work/copy_limit.json" <<'PY' || fail "copy limit JSON"
import json, sys
rows = json.load(open(sys.argv[1]))
assert len(rows) == 6, f"{len(rows)} objects, expected 6"
assert sorted({r["copy"] for r in rows}) == ["d2h", "h2d"], rows
assert all(r["GBps"] > 0 and r["P"] == 2 for r in rows), rows
PY
fi

# Errors: a collective without a device form, a mode that does not exist, --copy-limit on the
# CPU, and -m cuda where this build or machine has no GPU (then the reason is named).
out=$work/errors.out
if "$run" -n 2 -- "$bench" -m host-stand-in --collective gather -b 8 -e 8 >"$out" 2>&1; then
  fail "-m host-stand-in --collective gather ran"
fi
grep -q "gather has no device form" "$out" || fail "no message naming the collective"
if "$bench" -m gpu >"$out" 2>&1; then fail "-m gpu was accepted"; fi
grep -q "m wants cpu, cuda or host-stand-in" "$out" || fail "no message naming the modes"
if "$bench" --copy-limit >"$out" 2>&1; then fail "--copy-limit without a device mode ran"; fi
grep -q "copy-limit measures a device layer" "$out" || fail "no message for --copy-limit"
if ! "$run" -n 2 -- "$bench" -m cuda -b 1K -e 1K -n 1 -w 0 >"$out" 2>&1; then
  grep -qi "cuda" "$out" || fail "-m cuda failed without saying why"
  echo "(-m cuda unavailable here, as expected without a GPU: $(grep -m1 -i cuda "$out"))"
fi
echo "PASS"
