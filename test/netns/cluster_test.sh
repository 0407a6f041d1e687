#!/usr/bin/env bash
# Issue 24's cluster test: 3 simulated hosts with 2, 2 and 1 ranks, links shaped to 200 Mbit/s,
# through benchmark/cluster --check (one harness: this script only picks its arguments). For
# every collective gloo_lite_bench offers and each size, under auto and every algorithm of the
# collective:
#   - the values are right (gloo_lite_bench -c 1 compares every output element on every rank
#     with its reference; a wrong one, a failed or hung rank fails the test);
#   - from 1 MiB on (the link, not latency, bounds those), auto's time is within 10% of the
#     fastest forced algorithm. A case that misses only on time runs once more (auto and that
#     algorithm), and the faster time of each counts: a noisy moment of the 2 cores must not
#     decide. A wrong value is never retried.
# 200 Mbit/s keeps the link and not the shared CPUs the bound, and keeps the test near 100 s.
#
#   cluster_test.sh BUILD_DIR [benchmark/cluster options, e.g. --collectives allreduce]
#
# BUILD_DIR holds benchmark/gloo_lite_bench, tools/gloo_lite_run and tools/gloo_lite_store.
# Exit status: 0 passed, 1 failed (wrong values, a failed case, or auto too slow), 77 skipped
# (not root, or no network namespaces here). On failure the verdicts are printed and the
# results kept (check.txt, table.txt, results.json, runs/ with every rank's log).
set -u

BUILD=${1:?usage: cluster_test.sh BUILD_DIR [benchmark/cluster options]}
shift
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
# shellcheck source=netns_lib.sh
. "$HERE/netns_lib.sh"

if ! why=$(netns_available); then
  echo "SKIP: $why"
  exit 77
fi
if ! command -v tc >/dev/null 2>&1; then
  echo "SKIP: iproute2's tc is not installed (the links are shaped with tc tbf)"
  exit 77
fi

WORK=$(mktemp -d /tmp/gloo_lite_cluster_test.XXXXXX)
started=$SECONDS
# --timeout bounds each gloo_lite_bench run (every rank's GLOO_LITE_TIMEOUT_MS too): the
# slowest case (allreduce 1 MiB, -A all: direct at ~0.4 s a call) takes about 20 s.
"$REPO/benchmark/cluster" --hosts 2,2,1 --link 200mbit \
  --collectives \
  allreduce,allgather,reduce_scatter,broadcast,barrier,reduce,gather,scatter,alltoall \
  --sizes 4104,64K,1M --libs gloo_lite --algos all --min-time 0.1 --timeout 60 \
  --check 10 --check-from 1M --retries 1 --build "$BUILD" --out "$WORK" "$@"
rc=$?
echo "cluster_test: benchmark/cluster exited $rc after $((SECONDS - started)) s"
case $rc in
  0)
    rm -rf "$WORK"
    echo "PASS: every collective right under auto and every algorithm on hosts 2,2,1 at" \
      "200 Mbit/s, auto within 10% of the fastest forced algorithm from 1 MiB on"
    exit 0
    ;;
  1) echo "FAIL: a case computed wrong values or failed (the verdicts above say which)" ;;
  3) echo "FAIL: auto slower than the fastest forced algorithm by more than 10% (the SLOW rows)" ;;
  *) echo "FAIL: benchmark/cluster exited $rc" ;;
esac
echo "results kept in $WORK (check.txt, table.txt, results.json, runs/)"
exit 1
