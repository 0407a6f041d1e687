#include "gloo_lite/network_probe.h"

#include <chrono>
#include <string>
#include <vector>

#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/collectives.h"
#include "gloo_lite/context.h"

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
[[noreturn]] void rethrow_named(const Context& context, const std::exception& error) {
  std::string what = "network probe at context creation (" + context.describe() +
                     ", the host leaders exchanging " +
                     std::to_string(static_cast<long>(kNetworkProbeBytes)) +
                     " bytes; GLOO_LITE_NET_BETA_GBPS skips it): " + error.what();
  if (dynamic_cast<const TimeoutError*>(&error)) throw TimeoutError(what);
  if (dynamic_cast<const ConnectionError*>(&error)) throw ConnectionError(what);
  if (dynamic_cast<const MismatchError*>(&error)) throw MismatchError(what);
  if (dynamic_cast<const InvalidArgument*>(&error)) throw InvalidArgument(what);
  throw Error(what);
}

}  // namespace

double measure_network_beta(Context& context) {
  if (context.size() < 2 || context.on_one_host()) return 0;
  const std::vector<int> leaders = host_leaders(context.hosts());
  const int hosts = static_cast<int>(leaders.size());
  const size_t bytes = static_cast<size_t>(kNetworkProbeBytes);
  // alltoallv with one non-empty block per leader and direction: the leaders' exchanges all at
  // once, every other pair a zero-byte message (which alltoallv sends anyway). Direct: every
  // message is posted at once, so the leaders' transfers overlap as they would in a ring step.
  std::vector<size_t> send(context.size(), 0);
  std::vector<size_t> recv(context.size(), 0);
  for (int h = 0; h < hosts; ++h) {
    if (leaders[h] != context.rank()) continue;
    send[leaders[(h + 1) % hosts]] = bytes;
    recv[leaders[(h + hosts - 1) % hosts]] = bytes;
  }
  const bool leader = send != std::vector<size_t>(context.size(), 0);
  std::vector<uint8_t> out(leader ? bytes : 0, 0x5a);
  std::vector<uint8_t> in(leader ? bytes : 0);
  CollectiveOptions direct;
  direct.algorithm = "direct";
  // A stream of its own, so that the user's calls on tag 0 still begin at #0 (messages, flight
  // records and tests count on it).
  direct.tag = kNetworkProbeTag;
  double slowest = 0;
  const auto began = std::chrono::steady_clock::now();
  try {
    // The first exchange warms the path up: it empties a shaper's burst allowance (tc tbf's
    // bucket lets its first 256 KiB through at once, the simulated cluster's) and opens TCP's
    // congestion window. A barrier then lines the ranks up, so that no leader's clock runs
    // while its sender is still finishing the warm-up (that skew made the figure 0.74 of a
    // 200 Mbit/s link); only the second exchange is timed.
    alltoallv(context, out.data(), send, in.data(), recv, DataType::kUint8, direct);
    barrier(context, direct);
    auto start = std::chrono::steady_clock::now();
    alltoallv(context, out.data(), send, in.data(), recv, DataType::kUint8, direct);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    allreduce(context, &seconds, &slowest, 1, DataType::kFloat64, ReduceOp::kMax, direct);
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
