# Sourced by the gloo_lite_bench smoke tests: set run, bench and work first.
#   fail MESSAGE          prints MESSAGE and the last output ($out), exits 1
#   bench NAME P ARGS...  runs gloo_lite_bench on P ranks, output in $work/NAME.out ($out);
#                         fails on a non-zero exit

fail() {
  echo "FAIL: $*" >&2
  [ -n "${out:-}" ] && [ -f "$out" ] && sed 's/^/  | /' "$out" >&2
  exit 1
}

bench() {
  name=$1
  ranks=$2
  shift 2
  out=$work/$name.out
  echo "== gloo_lite_run -n $ranks -- gloo_lite_bench $*"
  if ! "$run" -n "$ranks" --timeout 240 -- "$bench" "$@" >"$out" 2>&1; then
    fail "$name: exit status $?"
  fi
}

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
