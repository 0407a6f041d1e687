#include "gloo_lite/network_probe.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/collectives.h"
#include "gloo_lite/context_engine.h"
#include "gloo_lite/engine_collectives.h"
#include "gloo_lite/work.h"

namespace gloo_lite {
namespace {

// The lowest rank of every host, in order of those ranks.
std::vector<int> host_leaders(const std::vector<std::string>& hosts) {
  std::vector<int> leaders;
  for (int r = 0; r < static_cast<int>(hosts.size()); ++r) {
    bool first = true;
    for (int q = 0; q < r && first; ++q) first = hosts[q] != hosts[r];
    if (first) leaders.push_back(r);
  }
  return leaders;
}

// Rethrows `error` as its own kind, with what the probe was doing in front.
[[noreturn]] void rethrow_named(const ContextEngine& context, const std::exception& error) {
  std::string what =
      "network probe at context creation (" + context.describe() +
      ", the host leaders exchanging " + std::to_string(static_cast<long>(kNetworkProbeBytes)) +
      " bytes, bounded by " + std::to_string(kNetworkProbeLimit.count() / 1000) +
      " s; set GLOO_LITE_NET_BETA_GBPS alike on every rank to skip it): " + error.what();
  if (dynamic_cast<const TimeoutError*>(&error)) throw TimeoutError(what);
  if (dynamic_cast<const ConnectionError*>(&error)) throw ConnectionError(what);
  if (dynamic_cast<const MismatchError*>(&error)) throw MismatchError(what);
  if (dynamic_cast<const InvalidArgument*>(&error)) throw InvalidArgument(what);
  throw Error(what);
}

}  // namespace

double measure_network_beta(ContextEngine& context) {
  if (context.size() < 2 || context.on_one_host()) return 0;
  const std::vector<int> leaders = host_leaders(context.hosts());
  const int hosts = static_cast<int>(leaders.size());
  const size_t bytes = static_cast<size_t>(kNetworkProbeBytes);
  int me = -1;
  for (int h = 0; h < hosts; ++h) me = leaders[h] == context.rank() ? h : me;
  // The probe's own bound: kNetworkProbeLimit, or the context's timeout if less.
  const auto limit = std::min<std::chrono::milliseconds>(
      context.timeout().count() > 0 ? context.timeout() : kNetworkProbeLimit, kNetworkProbeLimit);
  const auto began = std::chrono::steady_clock::now();
  const auto left = [&] {
    auto rest = std::chrono::duration_cast<std::chrono::milliseconds>(
        limit - (std::chrono::steady_clock::now() - began));
    return std::max(rest, std::chrono::milliseconds(1));
  };
  double seconds = 0;
  double slowest = 0;
  try {
    if (me >= 0) {
      // Only the leaders move data, point to point: leader h sends to leader h + 1 and
      // receives from leader h - 1, all at once, as in a ring step.
      const int next = leaders[(me + 1) % hosts];
      const int previous = leaders[(me + hosts - 1) % hosts];
      std::vector<uint8_t> out(bytes, 0x5a);
      std::vector<uint8_t> in(bytes);
      const auto exchange = [&](uint64_t tag) {
        Work recv = context.irecv(previous, in.data(), bytes, tag, left());
        Work send = context.isend(next, out.data(), bytes, tag, left());
        send.wait();
        recv.wait();
      };
      // The first exchange warms the path up: it empties a shaper's burst allowance (tc tbf's
      // bucket lets its first 256 KiB through at once, the simulated cluster's) and opens TCP's
      // congestion window. A dissemination barrier among the leaders then lines them up, so
      // that no leader's clock runs while its sender is still finishing the warm-up (that skew
      // made the figure 0.74 of a 200 Mbit/s link); only the second exchange is timed.
      exchange(kNetworkProbeP2PTag);
      uint8_t token = 0;
      for (int step = 1; step < hosts; step *= 2) {
        Work recv = context.irecv(leaders[(me + hosts - step) % hosts], &token, 1,
                                  kNetworkProbeP2PTag - 1, left());
        Work send =
            context.isend(leaders[(me + step) % hosts], &token, 1, kNetworkProbeP2PTag - 1, left());
        send.wait();
        recv.wait();
      }
      auto start = std::chrono::steady_clock::now();
      exchange(kNetworkProbeP2PTag - 2);
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    // Every rank takes the slowest leader's time (0 from the others): a maximum is exact, so
    // all of them hold the same bits; log-depth, 2 log P messages per rank.
    CollectiveOptions agree;
    agree.algorithm = "recursive_doubling";
    // A stream of its own, so that the user's calls on tag 0 still begin at #0 (messages,
    // flight records and tests count on it).
    agree.tag = kNetworkProbeTag;
    agree.timeout = left();
    allreduce(context, &seconds, &slowest, 1, DataType::kFloat64, ReduceOp::kMax, agree);
  } catch (const std::exception& error) {
    rethrow_named(context, error);
  }
  double beta = slowest / kNetworkProbeBytes;
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  LOG_INFO("context", "network probe: " << hosts << " hosts, " << kNetworkProbeBytes / slowest / 1e9
                                        << " GB/s per host link (" << slowest * 1e3 << " ms for "
                                        << bytes << " bytes; the probe took " << took * 1e3
                                        << " ms on this rank)");
  return beta;
}

}  // namespace gloo_lite
