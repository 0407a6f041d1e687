// Binomial-tree algorithms: broadcast, reduce, gather, scatter (any root), allreduce as a tree
// reduce to rank 0 followed by a tree broadcast from it, and a gather-and-release barrier.
//
// The trees follow Thakur, Rabenseifner and Gropp, "Optimization of Collective Communication
// Operations in MPICH" (IJHPCA 2005): ceil(log2 P) rounds, latency-optimal. Broadcast, reduce
// and allreduce cut the vector into chunks and keep several in flight, so that forwarding,
// reducing and (for allreduce) the two phases overlap; this is the pipelined tree of Sanders,
// Speck and Traeff, "Two-tree algorithms for full bandwidth broadcast, reduction and scan"
// (Parallel Computing 35(12), 2009), with one binomial tree. docs/algorithms.md derives the
// costs below.
#include <deque>
#include <optional>

#include "gloo_lite/algorithms/families.h"
#include "gloo_lite/algorithms/host_links.h"
#include "gloo_lite/algorithms/patterns.h"

namespace gloo_lite::algo {
namespace {

// Chunks of at least 256 KiB keep per-message overhead small next to the transfer; at most 256
// chunks bound the number of messages for very large vectors. Four chunks in flight per child
// cover the time a chunk spends being reduced at the next level up.
constexpr size_t kMinChunkBytes = size_t{256} << 10;
constexpr size_t kMaxChunks = 256;
constexpr size_t kChunksInFlight = 4;

struct Chunking {
  size_t elements;  // per chunk (the last may be shorter)
  size_t chunks;
};

Chunking chunking(const Call& call) {
  size_t bytes = std::max(kMinChunkBytes, (call.bytes(call.count) + kMaxChunks - 1) / kMaxChunks);
  size_t elements = std::max<size_t>(1, bytes / call.element);
  return {elements, (call.count + elements - 1) / elements};
}

// The pipelined binomial tree. `up`: reduce towards the root (each rank combines its children's
// partial results with its input and sends the partial result to its parent); `down`: the root's
// output flows to every rank's output. Allreduce does both (root 0), reduce only `up`, broadcast
// only `down`.
//
// Per chunk c, a rank waits for its children's chunk c (received into per-child scratch slots
// posted kChunksInFlight ahead), combines, sends to its parent and posts the receive of the final
// chunk c; it forwards chunk c to its children kChunksInFlight-1 iterations later, so the
// pipeline never blocks on the round trip through the root.
class TreePipeline {
 public:
  TreePipeline(const Call& call, int root, bool up, bool down)
      : call_(call),
        tree_(call.size, root, call.rank),
        up_(up),
        down_(down),
        chunking_(chunking(call)),
        depth_(std::min(kChunksInFlight, chunking_.chunks)),
        slot_(round_up(call.bytes(chunking_.elements), 64)) {
    for (int child : tree_.children()) children_.push_back(tree_.absolute(child));
    // A non-root reduce has no output buffer, so partial results of inner ranks live in scratch.
    partial_in_scratch_ = up_ && !down_ && !tree_.is_root() && !children_.empty();
    size_t scratch_bytes = up_ ? children_.size() * depth_ * slot_ : 0;
    partial_base_ = scratch_bytes;
    if (partial_in_scratch_) scratch_bytes += depth_ * slot_;
    if (scratch_bytes > 0) scratch_.emplace(call, scratch_bytes);
    for (size_t i = 0; i < depth_; ++i) {
      from_children_.emplace_back(call);
      with_parent_.emplace_back(call);
    }
  }

  void run() {
    const size_t chunks = chunking_.chunks;
    const size_t lag = depth_ - 1;
    if (up_) {
      for (size_t c = 0; c < depth_; ++c) post_child_receives(c);
    }
    for (size_t c = 0; c < chunks; ++c) {
      Step& parent_step = with_parent_[c % depth_];
      if (up_) {
        from_children_[c % depth_].wait();
        auto [memory, offset] = combine(c);
        if (c + depth_ < chunks) post_child_receives(c + depth_);
        if (!tree_.is_root()) parent_step.send(tree_.parent(), *memory, offset, bytes(c));
      }
      if (down_) {
        // The final chunk c can only arrive after the parent has received all of our partial
        // chunk c, so receiving it into the region still being sent from is safe.
        if (tree_.is_root()) {
          forward(c);
        } else {
          parent_step.recv(tree_.parent(), *call_.output_memory, offset(c), bytes(c));
        }
      }
      if (c >= lag) retire(c - lag);
    }
    for (size_t c = chunks > lag ? chunks - lag : 0; c < chunks; ++c) retire(c);
    to_children_.wait();
  }

 private:
  size_t first(size_t c) const { return c * chunking_.elements; }
  size_t elements(size_t c) const { return std::min(chunking_.elements, call_.count - first(c)); }
  size_t offset(size_t c) const { return call_.bytes(first(c)); }
  size_t bytes(size_t c) const { return call_.bytes(elements(c)); }
  size_t child_slot(size_t child, size_t c) const { return (child * depth_ + c % depth_) * slot_; }

  void post_child_receives(size_t c) {
    for (size_t i = 0; i < children_.size(); ++i) {
      from_children_[c % depth_].recv(children_[i], scratch_->memory(), child_slot(i, c), bytes(c));
    }
  }

  // This rank's partial result of chunk c: its input combined with its children's partials.
  // Returns where it lives (a leaf sends straight from its input).
  std::pair<transport::Memory*, size_t> combine(size_t c) {
    const uint8_t* input = call_.input + offset(c);
    if (children_.empty()) return {call_.input_memory, offset(c)};
    transport::Memory* memory = call_.output_memory;
    size_t where = offset(c);
    uint8_t* partial = call_.output + where;
    if (partial_in_scratch_) {
      memory = &scratch_->memory();
      where = partial_base_ + (c % depth_) * slot_;
      partial = scratch_->data() + where;
    }
    auto child = [&](size_t i) { return scratch_->data() + child_slot(i, c); };
    size_t next = 0;
    if (partial != input) call_.reduce_to(partial, input, child(next++), elements(c));
    for (; next < children_.size(); ++next) call_.reduce_into(partial, child(next), elements(c));
    return {memory, where};
  }

  void forward(size_t c) {
    for (int child : children_) {
      to_children_.send(child, *call_.output_memory, offset(c), bytes(c));
    }
  }

  // Chunk c's exchange with the parent is complete: its scratch slot may be reused and, going
  // down, the final chunk can be passed on.
  void retire(size_t c) {
    with_parent_[c % depth_].wait();
    if (down_ && !tree_.is_root()) forward(c);
  }

  const Call& call_;
  BinomialTree tree_;
  bool up_;
  bool down_;
  Chunking chunking_;
  size_t depth_;
  size_t slot_;
  std::vector<int> children_;  // absolute ranks, largest subtree first
  bool partial_in_scratch_ = false;
  size_t partial_base_ = 0;
  std::optional<Scratch> scratch_;
  std::deque<Step> from_children_;  // per in-flight chunk
  std::deque<Step> with_parent_;    // per in-flight chunk
  Step to_children_{call_};         // sends of final chunks, from the output (never rewritten)
};

void run_broadcast(const Call& call) {
  if (call.count > 0) TreePipeline(call, call.root, false, true).run();
}
void run_reduce(const Call& call) {
  if (call.count > 0) TreePipeline(call, call.root, true, false).run();
}
void run_allreduce(const Call& call) {
  if (call.count > 0) TreePipeline(call, 0, true, true).run();
}

// Gather and scatter move, over each tree edge, the blocks of the child's subtree: the child's
// own block (straight from/to its user buffer) and then the rest of the subtree, cut where it
// wraps past rank P-1 so that the root receives/sends every block in place in its user buffer.
// Inner ranks keep the rest of their subtree in scratch, ordered by relative rank. No block is
// copied except the root's own.
class TreeBlocks {
 public:
  explicit TreeBlocks(const Call& call)
      : call_(call), tree_(call.size, call.root, call.rank), prefix_(call.size + 1, 0) {
    for (int v = 0; v < call.size; ++v) {
      prefix_[v + 1] = prefix_[v] + call.blocks[tree_.absolute(v)];
    }
  }

  const BinomialTree& tree() const { return tree_; }

  // Bytes of scratch this rank needs: the blocks of its subtree other than its own.
  size_t scratch_bytes() const {
    if (tree_.is_root()) return 0;
    int v = tree_.relative();
    return call_.bytes(prefix_[v + tree_.span(v)] - prefix_[v + 1]);
  }

  // Calls fn(run, own, at_child) for each message over the edge to relative rank `child`, in
  // the order both ends post them; at_child is the byte offset of the run in the child's scratch.
  template <typename Fn>
  void for_each_message(int child, Fn fn) const {
    size_t own = call_.blocks[tree_.absolute(child)];
    if (own > 0) fn(RankRun{tree_.absolute(child), 1}, true, size_t{0});
    RankRun parts[2];
    int count = split_at_wrap(tree_.absolute(child + 1), tree_.span(child) - 1, call_.size, parts);
    int relative = child + 1;
    for (int i = 0; i < count; ++i) {
      size_t elements = run_elements(call_, parts[i]);
      if (parts[i].ranks > 0 && elements > 0) {
        fn(parts[i], false, call_.bytes(prefix_[relative] - prefix_[child + 1]));
      }
      relative += parts[i].ranks;
    }
  }

  // Where run `run` sits in this (parent) rank's buffers: the root's user buffer laid out by
  // absolute rank, or an inner rank's scratch laid out by relative rank.
  size_t parent_offset(RankRun run) const {
    if (tree_.is_root()) return call_.bytes(call_.offsets[run.first]);
    int relative = (run.first - call_.root + call_.size) % call_.size;
    return call_.bytes(prefix_[relative] - prefix_[tree_.relative() + 1]);
  }

 private:
  const Call& call_;
  BinomialTree tree_;
  std::vector<size_t> prefix_;  // element prefix sums of blocks in relative-rank order
};

void run_gather(const Call& call) {
  TreeBlocks blocks(call);
  const BinomialTree& tree = blocks.tree();
  std::optional<Scratch> scratch;
  if (blocks.scratch_bytes() > 0) scratch.emplace(call, blocks.scratch_bytes());
  transport::Memory* parent_memory =
      tree.is_root() ? call.output_memory : (scratch ? &scratch->memory() : nullptr);
  Step step(call);
  for (int child : tree.children()) {
    blocks.for_each_message(child, [&](RankRun run, bool, size_t) {
      step.recv(tree.absolute(child), *parent_memory, blocks.parent_offset(run),
                call.bytes(run_elements(call, run)));
    });
  }
  if (tree.is_root() && call.input != call.output) {
    copy_own_block(call, call.input, call.output + call.bytes(call.offsets[call.rank]),
                   call.blocks[call.rank]);
  }
  step.wait();
  if (tree.is_root()) return;
  blocks.for_each_message(tree.relative(), [&](RankRun run, bool own, size_t at_child) {
    size_t bytes = call.bytes(run_elements(call, run));
    if (own) {
      step.send(tree.parent(), *call.input_memory, 0, bytes);
    } else {
      step.send(tree.parent(), scratch->memory(), at_child, bytes);
    }
  });
  step.wait();
}

void run_scatter(const Call& call) {
  TreeBlocks blocks(call);
  const BinomialTree& tree = blocks.tree();
  std::optional<Scratch> scratch;
  if (blocks.scratch_bytes() > 0) scratch.emplace(call, blocks.scratch_bytes());
  Step step(call);
  if (!tree.is_root()) {
    blocks.for_each_message(tree.relative(), [&](RankRun run, bool own, size_t at_child) {
      size_t bytes = call.bytes(run_elements(call, run));
      if (own) {
        step.recv(tree.parent(), *call.output_memory, 0, bytes);
      } else {
        step.recv(tree.parent(), scratch->memory(), at_child, bytes);
      }
    });
    step.wait();
  }
  transport::Memory* parent_memory =
      tree.is_root() ? call.input_memory : (scratch ? &scratch->memory() : nullptr);
  for (int child : tree.children()) {
    blocks.for_each_message(child, [&](RankRun run, bool, size_t) {
      step.send(tree.absolute(child), *parent_memory, blocks.parent_offset(run),
                call.bytes(run_elements(call, run)));
    });
  }
  if (tree.is_root() && call.input != call.output) {
    copy_own_block(call, call.input + call.bytes(call.offsets[call.rank]), call.output,
                   call.blocks[call.rank]);
  }
  step.wait();
}

// Barrier: zero-byte messages up the tree to rank 0 (each rank reports once its subtree has
// arrived), then down from it. Twice the rounds of dissemination, but 2(P-1) messages instead
// of P * ceil(log2 P): where ranks outnumber cores, CPU time per message is what counts.
void run_barrier(const Call& call) {
  BinomialTree tree(call.size, 0, call.rank);
  Scratch empty(call, 0);  // zero-byte messages still need a registered region
  Step step(call);
  std::vector<int> children = tree.children();
  for (int child : children) step.recv(tree.absolute(child), empty.memory(), 0, 0);
  step.wait();
  if (!tree.is_root()) {
    step.recv(tree.parent(), empty.memory(), 0, 0);
    step.send(tree.parent(), empty.memory(), 0, 0);
    step.wait();
  }
  for (int child : children) step.send(tree.absolute(child), empty.memory(), 0, 0);
  step.wait();
}

bool supports_any(const Call&) { return true; }

double total_bytes(const Call& call) { return static_cast<double>(call.total_bytes()); }

// Across hosts (host_links.h) the tree's messages are all in flight together (the chunks are
// pipelined through every level): the busiest host link carries every tree edge that leaves
// (or enters) its host, each with the bytes that edge moves; the busiest port is the root's
// h * n as on one host; every step's latency is the cross-host one. `edge(v)`: the bytes the
// edge between relative rank v and its parent moves down (broadcast, scatter) and up (reduce,
// gather); nullopt on one host.
template <typename Edge>
std::optional<double> across(const Call& call, const CostModel& model, double steps, Edge edge) {
  HostLinks links(call, Partners::kFixed);
  if (!links.spans()) return std::nullopt;
  for (int rank = 0; rank < call.size; ++rank) {
    BinomialTree tree(call.size, call.root, rank);
    if (tree.is_root()) continue;
    auto [down, up] = edge(tree);
    links.send(tree.parent(), rank, down);
    links.send(rank, tree.parent(), up);
  }
  return steps * links.latency_model(model).alpha + links.transfer(model);
}

// Broadcast / reduce: h + K - 1 steps; the root's port carries h full copies (h * n); reduce
// combines h * n bytes at the root. Chunking adds steps, not bytes, because every level below
// the root forwards to fewer children than the root has.
double cost_broadcast(const Call& call, const CostModel& model) {
  double h = ceil_log2(call.size);
  double k = static_cast<double>(std::max<size_t>(1, chunking(call).chunks));
  double n = total_bytes(call);
  auto t = across(call, model, h + k - 1, [&](const BinomialTree&) { return std::pair(n, 0.0); });
  return t ? *t : (h + k - 1) * model.alpha + h * n * model.beta;
}
double cost_reduce(const Call& call, const CostModel& model) {
  double h = ceil_log2(call.size);
  double k = static_cast<double>(std::max<size_t>(1, chunking(call).chunks));
  double n = total_bytes(call);
  auto t = across(call, model, h + k - 1, [&](const BinomialTree&) { return std::pair(0.0, n); });
  return (t ? *t : (h + k - 1) * model.alpha + h * n * model.beta) + h * n * model.gamma;
}
// Allreduce: both phases overlap chunk by chunk, so one extra chunk per level rides on top of
// the root's h * n: 2h + K - 1 steps, h * (n + s) bytes on the wire for chunk size s, h * n
// reduced. Across hosts every edge moves n + s each way.
double cost_allreduce(const Call& call, const CostModel& model) {
  double h = ceil_log2(call.size);
  Chunking c = chunking(call);
  double n = total_bytes(call);
  double s = std::min(n, static_cast<double>(call.bytes(c.elements)));
  double k = static_cast<double>(std::max<size_t>(1, c.chunks));
  auto t = across(call, model, 2 * h + k - 1,
                  [&](const BinomialTree&) { return std::pair(n + s, n + s); });
  if (t) return *t + h * n * model.gamma;
  return (2 * h + k - 1) * model.alpha + h * (n + s) * model.beta + h * n * model.gamma;
}
// Gather / scatter: h steps; the root's port carries every block but its own, (P-1)/P * n.
// Across hosts the edge above relative rank v moves its subtree's span(v) blocks.
double cost_blocks(const Call& call, const CostModel& model, bool up) {
  double p = call.size;
  double block = total_bytes(call) / p;
  auto t = across(call, model, ceil_log2(call.size), [&](const BinomialTree& tree) {
    double bytes = tree.span(tree.relative()) * block;
    return up ? std::pair(0.0, bytes) : std::pair(bytes, 0.0);
  });
  return t ? *t : ceil_log2(call.size) * model.alpha + (p - 1) / p * total_bytes(call) * model.beta;
}
double cost_gather(const Call& call, const CostModel& model) {
  return cost_blocks(call, model, true);
}
double cost_scatter(const Call& call, const CostModel& model) {
  return cost_blocks(call, model, false);
}

// Barrier: h rounds up and h down, nothing on the wire.
double cost_barrier(const Call& call, const CostModel& model) {
  double h = ceil_log2(call.size);
  auto t = across(call, model, 2 * h, [](const BinomialTree&) { return std::pair(0.0, 0.0); });
  return t ? *t : 2 * h * model.alpha;
}

// Messages: every rank but the root receives each chunk once per phase (from its parent going
// down, its subtree's partial result going up), so (P-1)/P * K per rank and phase.
double per_rank(const Call& call) { return (call.size - 1.0) / call.size; }
double messages_one_phase(const Call& call) {
  return per_rank(call) * static_cast<double>(std::max<size_t>(1, chunking(call).chunks));
}
double messages_two_phases(const Call& call) { return 2 * messages_one_phase(call); }
double messages_barrier(const Call& call) { return 2 * per_rank(call); }

}  // namespace

std::vector<Algorithm> tree_algorithms() {
  return {
      {"tree", Collective::kBroadcast, supports_any, cost_broadcast, messages_one_phase,
       run_broadcast},
      {"tree", Collective::kReduce, supports_any, cost_reduce, messages_one_phase, run_reduce},
      {"tree", Collective::kAllreduce, supports_any, cost_allreduce, messages_two_phases,
       run_allreduce},
      {"tree", Collective::kGather, supports_any, cost_gather, per_rank, run_gather},
      {"tree", Collective::kScatter, supports_any, cost_scatter, per_rank, run_scatter},
      {"tree", Collective::kBarrier, supports_any, cost_barrier, messages_barrier, run_barrier},
  };
}

}  // namespace gloo_lite::algo
