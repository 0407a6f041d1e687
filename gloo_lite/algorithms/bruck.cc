// Bruck allgather: ceil(log2 P) steps for any P (Bruck, Ho, Kipnis, Upfal, Weathersby,
// "Efficient algorithms for all-to-all communications in multiport message-passing systems",
// IEEE TPDS 8(11), 1997: the concatenation algorithm, here with one port; see also Thakur,
// Rabenseifner, Gropp, IJHPCA 19(1), 2005, on its use for non-power-of-two P).
// After step s, rank r holds the 2^s blocks r, r+1, ..., r+2^s-1 (mod P); at step s it sends
// the first min(2^s, P-2^s) of them to rank r-2^s and receives as many from rank r+2^s, which
// extends its run.
//
// The paper keeps the run in a rotated scratch buffer and rotates it into place at the end. Here
// the run of blocks r, r+1, ... is contiguous in the output itself except where it passes rank
// P-1 -> 0, so each step sends and receives at most two pieces, straight into their final
// places: no scratch and no rotation copy. Variable blocks (allgatherv) work unchanged.
#include "gloo_lite/algorithms/families.h"
#include "gloo_lite/algorithms/host_links.h"
#include "gloo_lite/algorithms/patterns.h"

namespace gloo_lite::algo {
namespace {

// Posts the pieces of the run of `ranks` blocks starting at block `first`.
template <typename Post>
void for_each_piece(const Call& call, int first, int ranks, Post post) {
  RankRun parts[2];
  int count = split_at_wrap(first, ranks, call.size, parts);
  for (int i = 0; i < count; ++i) {
    size_t bytes = call.bytes(run_elements(call, parts[i]));
    if (bytes > 0) post(call.bytes(call.offsets[parts[i].first]), bytes);
  }
}

void run_allgather(const Call& call) {
  const int size = call.size;
  const int rank = call.rank;
  // In place: input == output, this rank's block already at offsets[rank]. Null only when every
  // block is empty, and then nothing is posted.
  transport::Memory* memory = call.output_memory;
  for (int distance = 1; distance < size; distance *= 2) {
    int ranks = std::min(distance, size - distance);
    int to = (rank - distance + size) % size;
    int from = (rank + distance) % size;
    Step step(call);
    for_each_piece(call, from, ranks,
                   [&](size_t offset, size_t bytes) { step.recv(from, *memory, offset, bytes); });
    for_each_piece(call, rank, ranks,
                   [&](size_t offset, size_t bytes) { step.send(to, *memory, offset, bytes); });
    step.wait();
  }
}

bool supports_any(const Call&) { return true; }

// ceil(log2 P) steps; each rank receives every block but its own: (P-1)/P * n on the wire.
// Across hosts (host_links.h): the steps are summed, each at the busiest host link of its
// distance (rank r sends its run of min(2^s, P - 2^s) blocks to rank r - 2^s).
double cost_allgather(const Call& call, const CostModel& model) {
  double p = call.size;
  HostLinks links(call, Partners::kChanging);
  if (links.spans()) {
    double total = 0;
    const double block = static_cast<double>(call.total_bytes()) / p;
    for (int distance = 1; distance < call.size; distance *= 2) {
      links.clear();
      const double ranks = std::min(distance, call.size - distance);
      links.every_rank([&](int r) {
        return std::make_pair((r - distance + call.size) % call.size, ranks * block);
      });
      total += links.step(model);
    }
    return total;
  }
  return ceil_log2(call.size) * model.alpha +
         (p - 1) / p * static_cast<double>(call.total_bytes()) * model.beta;
}

// One message per step and rank.
double messages_allgather(const Call& call) { return ceil_log2(call.size); }

}  // namespace

std::vector<Algorithm> bruck_algorithms() {
  return {{"bruck", Collective::kAllgather, supports_any, cost_allgather, messages_allgather,
           run_allgather}};
}

}  // namespace gloo_lite::algo
