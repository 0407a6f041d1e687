// Dissemination barrier (Hensgen, Finkel, Manber, "Two algorithms for barrier synchronization",
// International Journal of Parallel Programming 17(1), 1988): ceil(log2 P) rounds; in round k
// rank r sends a zero-byte message to (r + 2^k) mod P and waits for one from (r - 2^k) mod P.
// After round k a rank has heard, directly or through a chain, from the 2^(k+1) - 1 ranks
// before it, so after the last round from every rank: none leaves before all have entered.
// A gather-and-release tree (tree.cc) needs 2 * ceil(log2 P) rounds; this needs half, for any P.
#include "gloo_lite/algorithms/families.h"
#include "gloo_lite/algorithms/host_links.h"
#include "gloo_lite/algorithms/patterns.h"

namespace gloo_lite::algo {
namespace {

void run_barrier(const Call& call) {
  // Zero-byte messages still need a registered region; the pooled scratch costs nothing.
  Scratch empty(call, 0);
  Step step(call);
  for (int distance = 1; distance < call.size; distance *= 2) {
    step.recv((call.rank - distance + call.size) % call.size, empty.memory(), 0, 0);
    step.send((call.rank + distance) % call.size, empty.memory(), 0, 0);
    step.wait();
  }
}

bool supports_any(const Call&) { return true; }

// ceil(log2 P) steps, nothing on the wire.
// Across hosts (host_links.h): a round whose messages cross hosts costs the cross-host alpha.
double cost_barrier(const Call& call, const CostModel& model) {
  HostLinks links(call, Partners::kChanging);
  if (links.spans()) {
    double total = 0;
    for (int distance = 1; distance < call.size; distance *= 2) {
      links.clear();
      links.every_rank([&](int r) { return std::make_pair((r + distance) % call.size, 0.0); });
      total += links.step(model);
    }
    return total;
  }
  return ceil_log2(call.size) * model.alpha;
}

// One message per round and rank: P * ceil(log2 P) in all, against 2(P-1) for a tree, which
// is why a tree wins where ranks outnumber cores.
double messages_barrier(const Call& call) { return ceil_log2(call.size); }

}  // namespace

std::vector<Algorithm> dissemination_algorithms() {
  return {{"dissemination", Collective::kBarrier, supports_any, cost_barrier, messages_barrier,
           run_barrier}};
}

}  // namespace gloo_lite::algo
