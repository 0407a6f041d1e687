#!/usr/bin/env bash
# A cause that reaches a rank through another rank is raised as its origin's, once: after rank 1
# fails locally, every other rank's error carries rank 1's own text, names rank 1, and says
# "aborted:" at most once (never "rank 0 aborted: rank 1 aborted: ..."), on TCP and on shared
# memory (transport and shm collectives), however the abort raced its relays
# (gloo_lite/transport/abort_cause.h).
#
#   relay_test.sh BUILD_DIR [ROUNDS]
#
# Real processes: four fault_rank ranks against a gloo_lite_store on loopback, ROUNDS (default
# 5) jobs per case. Exit status: 0 passed, 1 failed.
set -u

BUILD=${1:?usage: relay_test.sh BUILD_DIR [ROUNDS]}
ROUNDS=${2:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
FAULT_RANK=$BUILD/test/faults/fault_rank
STORE_BIN=$BUILD/tools/gloo_lite_store
WORK=$(mktemp -d)
DEADLINE_MS=10000
EXTRA_ENV=()
# shellcheck source=fault_lib.sh
. "$HERE/fault_lib.sh"
trap 'kill_started; rm -rf "$WORK"' EXIT
trap 'exit 1' INT TERM HUP

SIZE=4
failures=0
checked=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# run_case TRANSPORT MODE CAUSE: ROUNDS jobs of `fault_rank MODE` on TRANSPORT; rank 1's own
# error must contain CAUSE, every other rank's too, naming rank 1, with one "aborted:" at most.
run_case() {
  local transport=$1 mode=$2 cause=$3 round rank what aborts
  for ((round = 0; round < ROUNDS; ++round)); do
    local name="relay_${transport}_${mode// /_}_$round"
    EXTRA_ENV=(GLOO_LITE_TRANSPORT="$transport")
    start_store "$name" || {
      fail "$name: no store"
      return
    }
    # shellcheck disable=SC2086
    start_ranks "$name" "0 1 2 3" "$SIZE" $mode
    wait_pids 30 "${PIDS[@]}"
    [ "$HUNG" -eq 0 ] || fail "$name: $HUNG rank(s) hung"
    for ((rank = 0; rank < SIZE; ++rank)); do
      what=$(final_field "$WORK/$name.$rank" what)
      checked=$((checked + 1))
      if ! grep -qF -- "$cause" <<<"$what"; then
        fail "$name: rank $rank lacks rank 1's cause '$cause': ${what:-no error}"
        continue
      fi
      [ "$rank" -eq 1 ] && continue
      aborts=$(grep -o 'aborted:' <<<"$what" | wc -l)
      if [ "$aborts" -gt 1 ]; then
        fail "$name: rank $rank: nested causes ($aborts x 'aborted:'): $what"
      fi
      if ! grep -q 'rank 1\b' <<<"$what"; then
        fail "$name: rank $rank does not name rank 1: $what"
      fi
    done
    echo "$name: rank 2 read: $(final_field "$WORK/$name.2" what | cut -c1-300)"
    kill_started
  done
}

for transport in tcp shm; do
  run_case "$transport" throwing-reduction "user reduction refused its input on rank 1"
  run_case "$transport" "mismatch count" "collective mismatch"
done

if [ "$failures" -eq 0 ]; then
  echo "PASS: $checked rank errors carry rank 1's cause once, on TCP and shared memory"
  exit 0
fi
echo "FAILED: $failures check(s)"
exit 1
