// The bandwidth between hosts that the cost model needs to rank algorithms across them (issue
// 24): measured once, when a context whose ranks span several hosts is created, unless a knob
// (GLOO_LITE_NET_BETA_GBPS) or the creator (ContextOptions::network_beta, a split's parent)
// already gives it. docs/algorithms.md ("Across hosts") has the method and its cost.
#pragma once

#include <cstdint>

namespace gloo_lite {

class Context;

// Bytes the timed exchange sends each way between neighbouring hosts, after a warm-up of the
// same size (which empties a shaper's burst allowance and opens TCP's window).
constexpr double kNetworkProbeBytes = 1 << 20;
// The collective stream (CollectiveOptions::tag) the probe's calls run on: the last one, which
// a user's calls share only in their numbering (its first call is then #4).
constexpr uint16_t kNetworkProbeTag = 0xffff;

// Seconds per byte over one host's link, the same on every rank of `context`: the host leaders
// (each host's lowest rank) send kNetworkProbeBytes to the next host's leader and receive as
// much from the previous one, all at once; every rank takes the slowest leader's time (an
// allreduce of the maximum), so all of them derive the same figure. Two alltoallv with a
// barrier between them and an allreduce on kNetworkProbeTag, called by every rank in the same order
// (create() does it before it returns the context); a failure or a timeout raises the collectives'
// error, prefixed with what was being measured. 0 where the context runs on one host (nothing is
// measured).
double measure_network_beta(Context& context);

}  // namespace gloo_lite
