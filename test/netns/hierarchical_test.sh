#!/usr/bin/env bash
# The hierarchical collectives across real network namespaces: 4 "hosts" (namespaces, cabled to
# a bridge, see netns_lib.sh) x 2 ranks each. The two ranks of a namespace share a host identity
# (GLOO_LITE_HOST_ID = the namespace), so they talk over shared memory and across namespaces over
# TCP on 192.0.2.0/24. gloo_lite_bench checks every output element (-c 1) of allreduce,
# broadcast, reduce, allgather, reduce_scatter and barrier, once with GLOO_LITE_ALGO naming
# hierarchical and once under auto (which must pick hierarchical for the large allreduce). Then
# 3 + 3 + 2 ranks on three of the namespaces (2 lanes, and a rank on two hosts that carries no
# slice), every collective forced.
#
#   hierarchical_test.sh GLOO_LITE_BENCH GLOO_LITE_STORE
#
# Exit status: 0 passed, 1 failed, 77 skipped (not root, or no network namespaces here).
# Everything it made is removed on exit, also on failure.
set -u

BENCH=${1:?usage: hierarchical_test.sh GLOO_LITE_BENCH GLOO_LITE_STORE}
STORE_BIN=${2:?usage: hierarchical_test.sh GLOO_LITE_BENCH GLOO_LITE_STORE}
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=netns_lib.sh
. "$HERE/netns_lib.sh"

HOSTS=4
STORE_PORT=29501
# The host (namespace index) of each rank: 4 x 2 first.
HOST_OF=(0 0 1 1 2 2 3 3)
RANKS=${#HOST_OF[@]}

if ! why=$(netns_available); then
  echo "SKIP: $why"
  exit 77
fi

WORK=$(mktemp -d)
cleanup() {
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

# run_bench NAME ALGO COLLECTIVE MAXBYTES: the ranks, rank r in namespace HOST_OF[r]; fails
# NAME unless every rank exits 0.
run_bench() {
  local name=$1 algo=$2 collective=$3 maxbytes=$4 r pids=()
  for ((r = 0; r < RANKS; ++r)); do
    local host=${HOST_OF[r]}
    timeout -k 2 60 ip netns exec "$(netns_name "$host")" \
      env -u GLOO_LITE_HOSTNAME -u GLOO_LITE_IFNAME -u GLOO_LITE_TRANSPORT \
      GLOO_LITE_RANK="$r" GLOO_LITE_SIZE="$RANKS" GLOO_LITE_PREFIX="$name" \
      GLOO_LITE_HOST_ID="$(netns_name "$host")" GLOO_LITE_ALGO="$algo" \
      GLOO_LITE_STORE="tcp://$NETNS_HUB_ADDRESS:$STORE_PORT" GLOO_LITE_TIMEOUT_MS=20000 \
      "$BENCH" --collective "$collective" -b 4 -e "$maxbytes" -f 64 -n 3 -w 1 -c 1 \
      >"$WORK/$name.$r" 2>&1 &
    pids+=($!)
  done
  local bad=0
  for ((r = 0; r < RANKS; ++r)); do
    if ! wait "${pids[r]}"; then
      bad=1
      echo "--- $name rank $r:"
      tail -5 "$WORK/$name.$r"
    fi
  done
  [ "$bad" -eq 0 ] || fail "$name ($collective, GLOO_LITE_ALGO='$algo')"
}

netns_setup "$HOSTS" || {
  echo "FAIL: could not build the namespaces"
  exit 1
}
netns_exec hub "$STORE_BIN" --host 0.0.0.0 --port "$STORE_PORT" >"$WORK/store.out" 2>&1 &
for _ in $(seq 50); do
  grep -q tcp:// "$WORK/store.out" && break
  sleep 0.1
done

for collective in allreduce broadcast reduce allgather reduce_scatter barrier; do
  run_bench "forced_$collective" "$collective:hierarchical" "$collective" 1M
done
run_bench auto_allreduce auto allreduce 4M
# Under auto the large rows of the 4 x 2 allreduce are hierarchical (rank 0 names the algorithm).
if ! grep -q hierarchical "$WORK/auto_allreduce.0"; then
  fail "auto did not pick hierarchical for the 4 MiB allreduce on 4 hosts x 2 ranks:"
  cat "$WORK/auto_allreduce.0"
fi
grep -h hierarchical "$WORK/forced_allreduce.0" "$WORK/auto_allreduce.0" | head -4

HOST_OF=(0 0 0 1 1 1 2 2)
RANKS=${#HOST_OF[@]}
for collective in allreduce broadcast reduce allgather reduce_scatter barrier; do
  run_bench "uneven_$collective" "$collective:hierarchical" "$collective" 1M
done

if [ "$failures" -eq 0 ]; then
  echo "PASS: hierarchical collectives, 4 network namespaces x 2 ranks and 3 + 3 + 2 ranks"
  exit 0
fi
exit 1
