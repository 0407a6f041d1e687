#include "transport_tcp/wait_policy.h"

#include <algorithm>

#include "gloo_lite/base/config.h"
#include "gloo_lite/base/host.h"

namespace gloo_lite::tcp {
namespace {

// "10.0.0.2:41000" -> "10.0.0.2", "[::1]:41000" -> "[::1]".
std::string host_part(const std::string& address) {
  auto colon = address.rfind(':');
  return colon == std::string::npos ? address : address.substr(0, colon);
}

}  // namespace

WaitBounds wait_bounds() {
  if (knob_string("GLOO_LITE_SPIN_US").empty()) return kDefaultWaitBounds;
  std::chrono::microseconds bound(knob_int("GLOO_LITE_SPIN_US"));
  return {bound, bound};
}

double local_ranks_per_core(const std::string& my_address, const std::vector<std::string>& peers) {
  const std::string mine = host_part(my_address);
  int local = 0;
  for (const std::string& peer : peers) {
    // The rank's own entry and the peers this mesh reaches on this host. A peer with no
    // address is served by another transport, which tells nothing of where it runs (ibverbs
    // reaches other hosts): not counted. The shared-memory mesh counts its own peers.
    if (!peer.empty() && host_part(peer) == mine) ++local;
  }
  int cpus = std::max(1, count_cpus(usable_cpu_mask()));
  return static_cast<double>(std::max(local, 1)) / cpus;
}

}  // namespace gloo_lite::tcp
