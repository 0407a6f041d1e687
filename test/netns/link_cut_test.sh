#!/usr/bin/env bash
# A link cut mid-transfer must end in an error on every rank within the deadline, never a hang;
# a link cut and restored before the deadline must not be noticed at all.
#
#   link_cut_test.sh FAULT_RANK GLOO_LITE_STORE
#
# Three ranks of fault_rank (test/faults/fault_rank.cc) run in their own network namespaces,
# cabled by veth pairs to a bridge in a hub namespace where a gloo_lite_store listens (see
# netns_lib.sh). While they loop on a 16 MiB collective, rank 2's cable is cut with
# `ip link set down` on its bridge port. Exit status: 0 passed, 1 failed, 77 skipped (not root,
# or no network namespaces here). Everything it made is removed on exit, also on failure.
set -u

FAULT_RANK=${1:?usage: link_cut_test.sh FAULT_RANK GLOO_LITE_STORE}
STORE_BIN=${2:?usage: link_cut_test.sh FAULT_RANK GLOO_LITE_STORE}
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=netns_lib.sh
. "$HERE/netns_lib.sh"

RANKS=3
CUT_RANK=2
STORE_PORT=29500
BYTES=$((16 << 20))
# Slack on top of the deadline: the deadline counts from the start of the call that is stuck,
# which began before the cut, so an error may come before the deadline has passed since the
# cut but never much after it.
BOUND_MS=2000

if ! why=$(netns_available); then
  echo "SKIP: $why"
  exit 77
fi

WORK=$(mktemp -d)
cleanup() {
  # Quiet: bash would report each job that teardown kills as "Killed".
  {
    netns_teardown
    wait
  } 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

now_ms() { date +%s%3N; }

# start_ranks NAME TIMEOUT_MS SECONDS COLLECTIVE: rank i in namespace i, its log in
# $WORK/NAME.i, its pid in PIDS[i]. The address knobs are cleared: each namespace has one
# interface besides loopback, and the default selection must find it (checked below). Each
# namespace is a host of its own (GLOO_LITE_HOST_ID), so that collectives use the network, not
# the shared-memory path of ranks on one machine.
start_ranks() {
  local name=$1 timeout_ms=$2 seconds=$3 collective=$4 i
  PIDS=()
  for ((i = 0; i < RANKS; ++i)); do
    timeout -k 2 30 ip netns exec "$(netns_name "$i")" \
      env -u GLOO_LITE_HOSTNAME -u GLOO_LITE_IFNAME \
      GLOO_LITE_RANK="$i" GLOO_LITE_SIZE="$RANKS" GLOO_LITE_PREFIX="$name" \
      GLOO_LITE_HOST_ID="$(netns_name "$i")" \
      GLOO_LITE_STORE="tcp://$NETNS_HUB_ADDRESS:$STORE_PORT" GLOO_LITE_TIMEOUT_MS="$timeout_ms" \
      "$FAULT_RANK" loop "$BYTES" "$seconds" "$collective" >"$WORK/$name.$i" 2>&1 &
    PIDS[i]=$!
  done
}

# wait_ready NAME: until every rank has printed its ready line (10 s at most).
wait_ready() {
  local name=$1 i deadline=$(($(now_ms) + 10000))
  for ((i = 0; i < RANKS; ++i)); do
    until grep -q ' ready ' "$WORK/$name.$i" 2>/dev/null; do
      if [ "$(now_ms)" -gt "$deadline" ]; then
        fail "$name: rank $i never connected:"
        cat "$WORK/$name.$i"
        return 1
      fi
      sleep 0.05
    done
  done
}

# field LINE KEY: the value of KEY=... on a fault_rank final line ("what" runs to the end).
field() {
  if [ "$2" = what ]; then
    sed -n 's/.* what=//p' <<<"$1"
  else
    sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1"
  fi
}

final_line() { grep 'result=' "$WORK/$1.$2" | tail -n 1; }

wait_ranks() {
  local i
  STATUS=()
  for ((i = 0; i < RANKS; ++i)); do
    wait "${PIDS[i]}"
    STATUS[i]=$?
  done
}

# cut_scenario NAME TIMEOUT_MS COLLECTIVE: cut rank 2's link after a second of transfers and
# leave it cut; every rank must fail with TimeoutError or ConnectionError naming a peer rank,
# within TIMEOUT_MS + BOUND_MS of the cut.
cut_scenario() {
  local name=$1 timeout_ms=$2 collective=$3 i
  start_ranks "$name" "$timeout_ms" 60 "$collective"
  wait_ready "$name" || return
  sleep 1
  local cut_ms
  cut_ms=$(now_ms)
  netns_cut "$CUT_RANK"
  wait_ranks
  echo "$name: link of rank $CUT_RANK cut at +1 s, deadline $timeout_ms ms:"
  for ((i = 0; i < RANKS; ++i)); do
    local line elapsed type what
    line=$(final_line "$name" "$i")
    if [ "${STATUS[i]}" -eq 124 ] || [ "${STATUS[i]}" -eq 137 ]; then
      fail "$name: rank $i hung (killed by the outer 30 s timeout)"
      continue
    fi
    if [ -z "$line" ]; then
      fail "$name: rank $i exited with status ${STATUS[i]} and no final line:"
      cat "$WORK/$name.$i"
      continue
    fi
    elapsed=$(($(field "$line" t_ms) - cut_ms))
    type=$(field "$line" type)
    what=$(field "$line" what)
    local closed
    closed=$(sed -n 's/.* closed t_ms=//p' "$WORK/$name.$i")
    echo "  rank $i: error ${elapsed} ms after the cut (context closed at" \
      "$((${closed:-0} - cut_ms)) ms), $(field "$line" iterations) iterations," \
      "${type:-no error}: $what"
    case "$type" in
      TimeoutError | ConnectionError) ;;
      *) fail "$name: rank $i: expected TimeoutError or ConnectionError, got '${type:-success}'" ;;
    esac
    if ! grep -Eq 'rank [0-9]+' <<<"$what"; then
      fail "$name: rank $i: the error does not name a peer rank"
    fi
    # Peers are named with the address they published: the veth's, found without
    # GLOO_LITE_IFNAME or GLOO_LITE_HOSTNAME.
    if ! grep -q '192\.0\.2\.' <<<"$what"; then
      fail "$name: rank $i: the error names no peer at its veth address (192.0.2.x)"
    fi
    if [ "$elapsed" -gt $((timeout_ms + BOUND_MS)) ]; then
      fail "$name: rank $i failed ${elapsed} ms after the cut, past $timeout_ms + $BOUND_MS ms"
    fi
  done
  netns_restore "$CUT_RANK"
}

# restore_scenario NAME TIMEOUT_MS: cut for 1.5 s and restore, well inside the deadline; TCP
# retransmits, and every rank must finish its loop with verified results.
restore_scenario() {
  local name=$1 timeout_ms=$2 i
  start_ranks "$name" "$timeout_ms" 4 allreduce
  wait_ready "$name" || return
  sleep 1
  netns_cut "$CUT_RANK"
  sleep 1.5
  netns_restore "$CUT_RANK"
  wait_ranks
  echo "$name: link of rank $CUT_RANK cut at +1 s for 1.5 s, deadline $timeout_ms ms:"
  for ((i = 0; i < RANKS; ++i)); do
    local line
    line=$(final_line "$name" "$i")
    echo "  rank $i: status ${STATUS[i]}: ${line:-no final line}"
    if [ "${STATUS[i]}" -ne 0 ] || [ "$(field "$line" result)" != ok ]; then
      fail "$name: rank $i did not finish cleanly:"
      cat "$WORK/$name.$i"
    fi
  done
}

netns_setup "$RANKS" || {
  echo "FAIL: could not build the namespaces"
  exit 1
}
netns_exec hub "$STORE_BIN" --host 0.0.0.0 --port "$STORE_PORT" >"$WORK/store.out" 2>&1 &
for _ in $(seq 50); do
  grep -q tcp:// "$WORK/store.out" && break
  sleep 0.1
done

cut_scenario cut_allreduce 3000 allreduce
cut_scenario cut_broadcast 3000 broadcast
restore_scenario cut_restore 10000

if [ "$failures" -eq 0 ]; then
  echo "PASS: link cut and link restore, $RANKS ranks in network namespaces"
  exit 0
fi
echo "FAILED: $failures check(s)"
exit 1
