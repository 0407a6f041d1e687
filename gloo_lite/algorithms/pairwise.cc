// Pairwise-exchange alltoall(v): P-1 steps; at step k rank r sends its block for rank (r+k) mod P
// and receives the block from rank (r-k) mod P, waiting for both before the next step (Thakur,
// Rabenseifner, Gropp, "Optimization of Collective Communication Operations in MPICH", IJHPCA
// 19(1), 2005: the long-message alltoall, in the form that works for any P). Unlike direct
// alltoall, which posts all P-1 exchanges at once, a rank has one send and one receive in flight,
// so large exchanges do not flood a port or the receivers' unexpected-message queues.
// Wire-compatible with direct alltoall (patterns.h, AlltoallBlocks).
#include "gloo_lite/algorithms/families.h"
#include "gloo_lite/algorithms/host_links.h"
#include "gloo_lite/algorithms/patterns.h"

namespace gloo_lite::algo {
namespace {

void run_alltoall(const Call& call) {
  AlltoallBlocks blocks(call);
  // The own block moves locally, before the first exchange so the copy overlaps nothing else.
  blocks.copy_own();
  Step step(call);
  for (int k = 1; k < call.size; ++k) {
    blocks.recv(step, (call.rank - k + call.size) % call.size);
    blocks.send(step, (call.rank + k) % call.size);
    step.wait();
  }
}

bool supports_any(const Call&) { return true; }

// P-1 steps; each rank sends (and receives) every block but its own: (P-1)/P * n on the wire,
// n = this rank's larger of its send and receive totals.
// Across hosts (host_links.h) the steps are summed, each at the busiest host link of its
// shift (this rank's counts stand for every rank's).
double cost_alltoall(const Call& call, const CostModel& model) {
  double p = call.size;
  HostLinks links(call, Partners::kChanging);
  if (links.spans()) {
    double total = 0;
    for (int k = 1; k < call.size; ++k) {
      links.clear();
      links.every_rank([&](int r) {
        int to = (r + k) % call.size;
        return std::make_pair(to, static_cast<double>(call.bytes(call.blocks[to])));
      });
      total += links.step(model);
    }
    return total;
  }
  return (p - 1) * model.alpha + (p - 1) / p * static_cast<double>(call.total_bytes()) * model.beta;
}

// One message to every peer.
double messages_alltoall(const Call& call) { return call.size - 1.0; }

}  // namespace

std::vector<Algorithm> pairwise_algorithms() {
  return {{"pairwise", Collective::kAlltoall, supports_any, cost_alltoall, messages_alltoall,
           run_alltoall}};
}

}  // namespace gloo_lite::algo
