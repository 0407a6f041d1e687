# shellcheck shell=bash
# Network-namespace topology for the fault tests, sourced by link_cut_test.sh and
# test/faults/run_faults.sh, and by benchmark/cluster (its simulated hosts). Needs root and
# iproute2 (tc for netns_shape).
#
#   netns_setup N     a hub namespace holding bridge br0 (192.0.2.254/24) and N rank
#                     namespaces, rank i with veth0 = 192.0.2.(i+1)/24 cabled to port pI on br0
#   netns_exec i CMD  run CMD in rank i's namespace (i = hub for the hub)
#   netns_cut i       ip link set down on port pI, the hub end of rank i's cable
#   netns_restore i   ip link set up on it again
#   netns_shape i RATE  shape both directions of rank i's cable to RATE (tc's units, e.g.
#                     1gbit, 200mbit) with a token bucket, as a host's NIC: veth0's egress in
#                     namespace i and pI's egress in the hub (what namespace i receives)
#   netns_teardown    kill what still runs in the namespaces and delete them (idempotent)
#
# Only documentation addresses (192.0.2.0/24, RFC 5737) are used, and nothing is created in the
# caller's own namespace: every link is made directly inside the new namespaces, so deleting
# them removes every veth, qdisc and the bridge. NETNS_PREFIX, when set before sourcing, names
# the namespaces (default glf<pid>-). The prefix must end in a character that no pid contains
# (the dash): netns_teardown deletes every namespace that starts with it, and a bare glf12
# would also take glf123's, another test's running at the same time.

NETNS_PREFIX=${NETNS_PREFIX:-"glf$$-"}
NETNS_RANKS=0
NETNS_HUB_ADDRESS=192.0.2.254

netns_available() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "not root: network namespaces need CAP_NET_ADMIN"
    return 1
  fi
  if ! command -v ip >/dev/null 2>&1; then
    echo "iproute2 (ip) is not installed"
    return 1
  fi
  local probe="${NETNS_PREFIX}probe"
  if ! ip netns add "$probe" 2>/dev/null; then
    echo "'ip netns add' is not permitted here"
    return 1
  fi
  ip netns del "$probe"
  return 0
}

netns_name() {
  if [ "$1" = hub ]; then echo "${NETNS_PREFIX}hub"; else echo "${NETNS_PREFIX}r$1"; fi
}

netns_rank_address() { echo "192.0.2.$(($1 + 1))"; }

netns_exec() {
  local ns
  ns=$(netns_name "$1")
  shift
  ip netns exec "$ns" "$@"
}

netns_setup() {
  NETNS_RANKS=$1
  local hub
  hub=$(netns_name hub)
  ip netns add "$hub" || return 1
  ip -n "$hub" link set lo up
  ip -n "$hub" link add br0 type bridge || return 1
  ip -n "$hub" addr add "$NETNS_HUB_ADDRESS/24" dev br0
  ip -n "$hub" link set br0 up
  local i ns
  for ((i = 0; i < NETNS_RANKS; ++i)); do
    ns=$(netns_name "$i")
    ip netns add "$ns" || return 1
    ip -n "$ns" link set lo up
    ip link add veth0 netns "$ns" type veth peer name "p$i" netns "$hub" || return 1
    ip -n "$hub" link set "p$i" master br0
    ip -n "$hub" link set "p$i" up
    ip -n "$ns" addr add "$(netns_rank_address "$i")/24" dev veth0
    ip -n "$ns" link set veth0 up
  done
  # Without STP a bridge port forwards as soon as it is up; wait for that state anyway, since
  # a rank that starts before its port forwards loses its first packets.
  local tries=0
  until [ "$(bridge -n "$hub" link show 2>/dev/null | grep -c 'state forwarding')" -ge "$NETNS_RANKS" ]; do
    tries=$((tries + 1))
    if [ "$tries" -ge 25 ]; then
      echo "netns_setup: bridge ports do not reach the forwarding state" >&2
      bridge -n "$hub" link show >&2
      return 1
    fi
    sleep 0.2
  done
}

netns_cut() { ip -n "$(netns_name hub)" link set "p$1" down; }
netns_restore() { ip -n "$(netns_name hub)" link set "p$1" up; }

netns_shape() {
  local tbf=(tbf rate "$2" burst 256kb latency 100ms)
  ip netns exec "$(netns_name "$1")" tc qdisc replace dev veth0 root "${tbf[@]}" || return 1
  ip netns exec "$(netns_name hub)" tc qdisc replace dev "p$1" root "${tbf[@]}"
}

netns_teardown() {
  local ns pids
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^${NETNS_PREFIX}"); do
    # Only processes inside our own namespaces, which this script started.
    pids=$(ip netns pids "$ns" 2>/dev/null)
    # shellcheck disable=SC2086
    [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
  NETNS_RANKS=0
}
