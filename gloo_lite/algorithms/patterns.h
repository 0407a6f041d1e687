// Communication patterns shared by several algorithm families (header-only): the binomial tree
// over ranks relative to a root, ranges of blocks that wrap around rank P-1 -> 0, and a
// reduction in a fixed rank order. The pattern is kept apart from the data movement, so tree
// broadcast, reduce, gather and scatter share one tree, and Bruck and the tree share one
// wrap rule.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <optional>
#include <vector>

#include "gloo_lite/algorithms/call.h"

namespace gloo_lite::algo {

// Binomial tree rooted at `root` over P ranks (Thakur, Rabenseifner, Gropp, "Optimization of
// Collective Communication Operations in MPICH", IJHPCA 19(1), 2005). With relative
// rank v = (rank - root) mod P, the parent of v clears v's lowest set bit and the children are
// v + 2^k for every 2^k below that bit; v's subtree is the relative ranks [v, v + span(v)).
class BinomialTree {
 public:
  BinomialTree(int size, int root, int rank)
      : size_(size), root_(root), relative_((rank - root + size) % size) {}

  int size() const { return size_; }
  int root() const { return root_; }
  int relative() const { return relative_; }
  bool is_root() const { return relative_ == 0; }
  int absolute(int relative) const { return (relative + root_) % size_; }
  // Height: the number of rounds from the root to the deepest leaf.
  int height() const { return ceil_log2(size_); }

  int parent() const { return absolute(relative_ & (relative_ - 1)); }
  // Relative ranks of the children, largest subtree first: sending to it first shortens the
  // critical path of broadcast and scatter.
  std::vector<int> children() const {
    std::vector<int> result;
    for (int bit = limit(relative_) / 2; bit >= 1; bit /= 2) {
      if (relative_ + bit < size_) result.push_back(relative_ + bit);
    }
    return result;
  }
  // Number of ranks in the subtree of relative rank v.
  int span(int v) const { return std::min(limit(v), size_ - v); }

 private:
  // The lowest set bit of v (the root: the first power of two >= P).
  int limit(int v) const { return v == 0 ? 1 << ceil_log2(size_) : v & -v; }

  int size_;
  int root_;
  int relative_;
};

// A run of consecutive ranks [first, first + ranks) whose blocks are contiguous in a buffer laid
// out by rank (call.offsets). A run of ranks taken modulo P is contiguous except where it
// passes rank P-1 -> 0; `split_at_wrap` cuts it there, so algorithms that collect blocks in
// rotated order (Bruck, trees with a root other than 0) can still receive each block straight
// into its final place, with no rotation copy.
struct RankRun {
  int first;  // absolute rank of the first block
  int ranks;
};

inline int split_at_wrap(int first, int ranks, int size, RankRun out[2]) {
  first %= size;
  int head = std::min(ranks, size - first);
  out[0] = {first, head};
  if (head == ranks) return 1;
  out[1] = {0, ranks - head};
  return 2;
}

// Elements in the blocks of run `run` (call.blocks is indexed by absolute rank).
inline size_t run_elements(const Call& call, RankRun run) {
  size_t elements = 0;
  for (int i = 0; i < run.ranks; ++i) elements += call.blocks[run.first + i];
  return elements;
}

// Copies this rank's own block between the user's buffers, unless it is already there. Callers
// skip it altogether for in-place calls (input == output: MPI_IN_PLACE, the data is in place).
inline void copy_own_block(const Call& call, const uint8_t* from, uint8_t* to, size_t elements) {
  if (elements == 0 || from == to) return;
  std::memmove(to, from, call.bytes(elements));
}

// out = x_0 op x_1 op ... op x_{P-1}, combined strictly left to right, so that every rank that
// evaluates it (direct allreduce) gets the same bits even for floating point, whose sum is
// commutative but not associative. `own` is this rank's operand x_self and may alias `out`
// (in place); `peer(j)` is the writable receive slot holding x_j for j != self, and `ready(j)`
// is called before x_j is first read (so reduction overlaps the remaining receives).
template <typename Peer, typename Ready>
void reduce_in_rank_order(const Call& call, uint8_t* out, const uint8_t* own, int self,
                          size_t elements, Peer peer, Ready ready) {
  const int size = call.size;
  auto operand = [&](int j) -> const uint8_t* {
    if (j == self) return own;
    ready(j);
    return peer(j);
  };
  if (own != out) {
    const uint8_t* first = operand(0);
    call.reduce_to(out, first, operand(1), elements);
    for (int j = 2; j < size; ++j) call.reduce_into(out, operand(j), elements);
    return;
  }
  // In place: x_self lives in `out`. Ranks before self are folded into x_0's slot first; then
  // out = x_self op acc, which equals acc op x_self because the operation is commutative.
  if (self > 0) {
    ready(0);
    uint8_t* acc = peer(0);
    for (int j = 1; j < self; ++j) call.reduce_into(acc, operand(j), elements);
    call.reduce_into(out, acc, elements);
  }
  for (int j = self + 1; j < size; ++j) call.reduce_into(out, operand(j), elements);
}

// The exchanges of alltoall(v): one message each way between every pair of ranks, zero-byte ones
// included, so that a count disagreement between two ranks fails as a size mismatch instead of a
// hang. Because every pair exchanges exactly one message per direction under the call's tag, the
// order in which ranks post them does not matter to matching: direct and pairwise alltoall are
// interchangeable rank by rank (the tuner may even pick differently on different ranks of an
// alltoallv, whose costs depend on each rank's own counts).
class AlltoallBlocks {
 public:
  explicit AlltoallBlocks(const Call& call) : call_(call) {
    // Null buffers (nothing to send or receive) are not registered; zero-byte messages then need
    // some registered region, which the per-call scratch pool provides without allocating.
    if (call.input_memory == nullptr || call.output_memory == nullptr) empty_.emplace(call, 0);
  }

  void send(Step& step, int peer) const {
    size_t bytes = call_.bytes(call_.blocks[peer]);
    if (bytes == 0) {
      step.send(peer, any_memory(), 0, 0);
    } else {
      step.send(peer, *call_.input_memory, call_.bytes(call_.offsets[peer]), bytes);
    }
  }
  void recv(Step& step, int peer) const {
    size_t bytes = call_.bytes(call_.recv_blocks[peer]);
    if (bytes == 0) {
      step.recv(peer, any_memory(), 0, 0);
    } else {
      step.recv(peer, *call_.output_memory, call_.bytes(call_.recv_offsets[peer]), bytes);
    }
  }
  void copy_own() const {
    int self = call_.rank;
    copy_own_block(call_, call_.input + call_.bytes(call_.offsets[self]),
                   call_.output + call_.bytes(call_.recv_offsets[self]), call_.blocks[self]);
  }

 private:
  transport::Memory& any_memory() const {
    if (call_.input_memory != nullptr) return *call_.input_memory;
    if (call_.output_memory != nullptr) return *call_.output_memory;
    return empty_->memory();
  }

  const Call& call_;
  std::optional<Scratch> empty_;
};

inline size_t round_up(size_t value, size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

}  // namespace gloo_lite::algo
