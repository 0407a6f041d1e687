#!/usr/bin/env bash
# The fault table's own test: run_faults.sh finishes within its budget, prints a row for every
# fault, and no rank of any fault hung past its outer limit (a hang is never an acceptable
# outcome, whatever else a row reports).
#   check_table.sh BUILD_DIR
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
EXPECTED_ROWS=32
output=$(timeout -k 5 240 "$HERE/run_faults.sh" "$1")
status=$?
echo "$output"
rows=$(grep -c '^| ' <<<"$output")
rows=$((rows - 2))  # the header and its separator
if [ "$status" -ne 0 ]; then
  echo "FAIL: run_faults.sh exited with status $status"
  exit 1
fi
if [ "$rows" -ne "$EXPECTED_ROWS" ]; then
  echo "FAIL: $rows rows, expected $EXPECTED_ROWS"
  exit 1
fi
if grep -Eq '\*\*([0-9]+ )?hung\*\*' <<<"$output"; then
  echo "FAIL: a rank hung (see the rows marked hung)"
  exit 1
fi
echo "PASS: $rows faults measured, none hung"
