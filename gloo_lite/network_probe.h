// The bandwidth between hosts that the cost model needs to rank algorithms across them (issue
// 24): measured once, when a context whose ranks span several hosts is created, unless a knob
// (GLOO_LITE_NET_BETA_GBPS) or the creator (ContextOptions::network_beta, a split's parent)
// already gives it. docs/algorithms.md ("Across hosts") has the method and its cost.
#pragma once

#include <chrono>
#include <cstdint>

namespace gloo_lite {

class ContextEngine;

// Bytes the timed exchange sends each way between neighbouring hosts, after a warm-up of the
// same size (which empties a shaper's burst allowance and opens TCP's window).
constexpr double kNetworkProbeBytes = 1 << 20;
// The collective stream (CollectiveOptions::tag) of the probe's one collective: the last one,
// which a user's calls share only in their numbering (its first call is then #1).
constexpr uint16_t kNetworkProbeTag = 0xffff;
// The point-to-point tags (ContextEngine::isend/irecv) of the leaders' exchanges: the three largest
// user tags (this one, one less, two less), reserved to the probe at context creation.
constexpr uint64_t kNetworkProbeP2PTag = (uint64_t{1} << 63) - 1;
// The probe's own bound (or the context's timeout, if less); a leader that does not finish
// its exchanges in it fails creation with an error that says how to skip the probe.
constexpr std::chrono::milliseconds kNetworkProbeLimit{10000};

// Seconds per byte over one host's link, the same on every rank of `context`: only the host
// leaders (each host's lowest rank) move data, point to point: a warm-up exchange (each sends
// kNetworkProbeBytes to the next host's leader and receives as much from the previous one, all
// at once), a dissemination barrier among them, and the timed exchange; then one allreduce of
// the maximum (recursive doubling, on kNetworkProbeTag, every rank) gives every rank the
// slowest leader's time, bit for bit. create() does it before it returns the context; a
// failure or a timeout raises the error, prefixed with what was being measured. 0 where the
// context runs on one host (nothing is measured).
double measure_network_beta(ContextEngine& context);

}  // namespace gloo_lite
