#include "test/collectives/rank_run.h"

#include <memory>
#include <numeric>

#include "gloo_lite/base/error.h"
#include "gloo_lite/collectives.h"

namespace gloo_lite::test {
namespace {

std::vector<size_t> prefix_sums(const std::vector<size_t>& blocks) {
  std::vector<size_t> offsets(blocks.size(), 0);
  for (size_t i = 1; i < blocks.size(); ++i) offsets[i] = offsets[i - 1] + blocks[i - 1];
  return offsets;
}

size_t total_of(const std::vector<size_t>& blocks) {
  return std::accumulate(blocks.begin(), blocks.end(), size_t{0});
}

class RankRun {
 public:
  RankRun(const Case& c, Context& context, CaseBoard& board, std::chrono::milliseconds timeout)
      : c_(c),
        context_(context),
        board_(board),
        inputs_(c.inputs()),
        rank_(context.rank()),
        element_(element_bytes(c.type)),
        blocks_(c.blocks()),
        offsets_(prefix_sums(blocks_)),
        total_(total_of(blocks_)),
        mine_(blocks_[rank_]) {
    options_.algorithm = c.algorithm;
    options_.timeout = timeout;
    options_.check = c.check;
    if (c.op == ReduceOp::kCustom) options_.custom = plus_one_function(c.type);
  }

  void run() {
    switch (c_.kind) {
      case Kind::kAllreduce:
        return allreduce();
      case Kind::kReduce:
        return reduce();
      case Kind::kReduceScatter:
      case Kind::kReduceScatterv:
        return reduce_scatter();
      case Kind::kAllgather:
      case Kind::kAllgatherv:
        return allgather();
      case Kind::kGather:
      case Kind::kGatherv:
        return gather();
      case Kind::kScatter:
      case Kind::kScatterv:
        return scatter();
      case Kind::kBroadcast:
        return broadcast();
      case Kind::kAlltoall:
      case Kind::kAlltoallv:
        return alltoall();
      case Kind::kBarrier:
        return barrier();
    }
  }

  Problems problems;

 private:
  size_t bytes(size_t elements) const { return elements * element_; }
  std::string at(const std::string& what) const {
    return "rank " + std::to_string(rank_) + ": " + what;
  }
  std::unique_ptr<GuardedBuffer> buffer(size_t elements) {
    return std::make_unique<GuardedBuffer>(bytes(elements));
  }
  std::unique_ptr<GuardedBuffer> filler(size_t elements) {
    auto b = buffer(elements);
    fill_filler(b->data(), b->bytes());
    return b;
  }
  std::unique_ptr<GuardedBuffer> own_input(size_t elements) {
    auto b = buffer(elements);
    fill_inputs(inputs_, rank_, 0, elements, b->data());
    return b;
  }
  // A buffer the API ignores on this rank: null, or filler that must stay untouched.
  std::unique_ptr<GuardedBuffer> ignored(size_t elements) {
    return c_.null_unused ? nullptr : filler(elements);
  }
  static uint8_t* data(const std::unique_ptr<GuardedBuffer>& b) { return b ? b->data() : nullptr; }
  void check_guards(const std::unique_ptr<GuardedBuffer>& b, const char* name) {
    if (!b) return;
    std::string damage = b->damaged_guard();
    if (!damage.empty()) problems.push_back(at(std::string(name) + ": " + damage));
  }
  void check_unchanged_input(const std::unique_ptr<GuardedBuffer>& b, size_t elements) {
    check_copy(inputs_, rank_, 0, elements, b->data(), at("input (must stay unchanged)"), problems);
  }
  void check_ignored(const std::unique_ptr<GuardedBuffer>& b, const char* name) {
    if (!b) return;
    check_filler(b->data(), b->bytes(), at(std::string(name) + " (ignored on this rank)"),
                 problems);
    check_guards(b, name);
  }

  void allreduce() {
    auto in = own_input(c_.count);
    std::unique_ptr<GuardedBuffer> out = c_.in_place ? nullptr : filler(c_.count);
    uint8_t* result = c_.in_place ? in->data() : out->data();
    gloo_lite::allreduce(context_, in->data(), result, c_.count, c_.type, c_.op, options_);
    check_reduction(inputs_, c_.op, 0, c_.count, result, at("result"), problems);
    if (!c_.in_place) check_unchanged_input(in, c_.count);
    check_guards(in, "input");
    check_guards(out, "output");
  }

  void reduce() {
    bool root = rank_ == c_.root;
    auto in = own_input(c_.count);
    std::unique_ptr<GuardedBuffer> out;
    if (!root) {
      out = ignored(c_.count);
    } else if (!c_.in_place) {
      out = filler(c_.count);
    }
    uint8_t* result = root && c_.in_place ? in->data() : data(out);
    gloo_lite::reduce(context_, in->data(), result, c_.count, c_.type, c_.op, c_.root, options_);
    if (root) {
      check_reduction(inputs_, c_.op, 0, c_.count, result, at("result at the root"), problems);
      check_guards(out, "output");
    } else {
      check_ignored(out, "output");
    }
    if (!(root && c_.in_place)) check_unchanged_input(in, c_.count);
    check_guards(in, "input");
  }

  // In place (MPI_IN_PLACE): the input buffer of sum(blocks) elements is also the output, and
  // this rank's reduced block lands at its start.
  void reduce_scatter() {
    auto in = own_input(total_);
    std::unique_ptr<GuardedBuffer> out = c_.in_place ? nullptr : filler(mine_);
    uint8_t* result = c_.in_place ? in->data() : out->data();
    if (c_.kind == Kind::kReduceScatter) {
      gloo_lite::reduce_scatter(context_, in->data(), result, c_.count, c_.type, c_.op, options_);
    } else {
      gloo_lite::reduce_scatterv(context_, in->data(), result, blocks_, c_.type, c_.op, options_);
    }
    check_reduction(inputs_, c_.op, offsets_[rank_], mine_, result, at("result block"), problems);
    if (!c_.in_place) check_unchanged_input(in, total_);
    check_guards(in, "input");
    check_guards(out, "output");
  }

  void check_gathered(const uint8_t* out) {
    for (int source = 0; source < c_.size; ++source) {
      check_copy(inputs_, source, 0, blocks_[source], out + bytes(offsets_[source]),
                 at("block from rank " + std::to_string(source)), problems);
    }
  }

  // In place: the input is this rank's block of the output, already filled.
  void allgather() {
    auto out = filler(total_);
    std::unique_ptr<GuardedBuffer> in;
    const uint8_t* input = out->data() + bytes(offsets_[rank_]);
    if (c_.in_place) {
      fill_inputs(inputs_, rank_, 0, mine_, out->data() + bytes(offsets_[rank_]));
    } else {
      in = own_input(mine_);
      input = in->data();
    }
    if (c_.kind == Kind::kAllgather) {
      gloo_lite::allgather(context_, input, out->data(), c_.count, c_.type, options_);
    } else {
      gloo_lite::allgatherv(context_, input, out->data(), blocks_, c_.type, options_);
    }
    check_gathered(out->data());
    if (in) check_unchanged_input(in, mine_);
    check_guards(in, "input");
    check_guards(out, "output");
  }

  // In place (at the root only): the root's input is its block of the output, already filled.
  void gather() {
    bool root = rank_ == c_.root;
    std::unique_ptr<GuardedBuffer> out = root ? filler(total_) : ignored(total_);
    std::unique_ptr<GuardedBuffer> in;
    const uint8_t* input = nullptr;
    if (root && c_.in_place) {
      input = out->data() + bytes(offsets_[rank_]);
      fill_inputs(inputs_, rank_, 0, mine_, out->data() + bytes(offsets_[rank_]));
    } else {
      in = own_input(mine_);
      input = in->data();
    }
    if (c_.kind == Kind::kGather) {
      gloo_lite::gather(context_, input, data(out), c_.count, c_.type, c_.root, options_);
    } else {
      gloo_lite::gatherv(context_, input, data(out), blocks_, c_.type, c_.root, options_);
    }
    if (root) {
      check_gathered(out->data());
      check_guards(out, "output");
    } else {
      check_ignored(out, "output");
    }
    if (in) check_unchanged_input(in, mine_);
    check_guards(in, "input");
  }

  // In place (at the root only): the root's output is its own block of the input.
  void scatter() {
    bool root = rank_ == c_.root;
    std::unique_ptr<GuardedBuffer> in = root ? own_input(total_) : ignored(total_);
    std::unique_ptr<GuardedBuffer> out;
    uint8_t* output = nullptr;
    if (root && c_.in_place) {
      output = in->data() + bytes(offsets_[rank_]);
    } else {
      out = filler(mine_);
      output = out->data();
    }
    if (c_.kind == Kind::kScatter) {
      gloo_lite::scatter(context_, data(in), output, c_.count, c_.type, c_.root, options_);
    } else {
      gloo_lite::scatterv(context_, data(in), output, blocks_, c_.type, c_.root, options_);
    }
    check_copy(inputs_, c_.root, offsets_[rank_], mine_, output, at("received block"), problems);
    if (root) {
      check_unchanged_input(in, total_);
      check_guards(in, "input");
    } else {
      check_ignored(in, "input");
    }
    check_guards(out, "output");
  }

  void broadcast() {
    // Non-roots start from their own inputs, which differ from the root's.
    auto buffer = own_input(c_.count);
    gloo_lite::broadcast(context_, buffer->data(), c_.count, c_.type, c_.root, options_);
    check_copy(inputs_, c_.root, 0, c_.count, buffer->data(), at("result"), problems);
    check_guards(buffer, "buffer");
  }

  void alltoall() {
    std::vector<size_t> send(c_.size), receive(c_.size);
    for (int peer = 0; peer < c_.size; ++peer) {
      send[peer] = c_.alltoall_count(rank_, peer);
      receive[peer] = c_.alltoall_count(peer, rank_);
    }
    std::vector<size_t> receive_offsets = prefix_sums(receive);
    auto in = own_input(total_of(send));
    auto out = filler(total_of(receive));
    if (c_.kind == Kind::kAlltoall) {
      gloo_lite::alltoall(context_, in->data(), out->data(), c_.count, c_.type, options_);
    } else {
      gloo_lite::alltoallv(context_, in->data(), send, out->data(), receive, c_.type, options_);
    }
    for (int source = 0; source < c_.size; ++source) {
      size_t first = 0;  // where the source's block for this rank starts in its input
      for (int peer = 0; peer < rank_; ++peer) first += c_.alltoall_count(source, peer);
      check_copy(inputs_, source, first, receive[source],
                 out->data() + bytes(receive_offsets[source]),
                 at("block from rank " + std::to_string(source)), problems);
    }
    check_unchanged_input(in, total_of(send));
    check_guards(in, "input");
    check_guards(out, "output");
  }

  void barrier() {
    for (int round = 0; round < CaseBoard::kBarrierRounds; ++round) {
      board_.arrivals[round].fetch_add(1);
      gloo_lite::barrier(context_, options_);
      int arrived = board_.arrivals[round].load();
      if (arrived != c_.size) {
        problems.push_back(at("left barrier round " + std::to_string(round) + " when " +
                              std::to_string(arrived) + " of " + std::to_string(c_.size) +
                              " ranks had entered it"));
      }
    }
  }

  const Case& c_;
  Context& context_;
  CaseBoard& board_;
  CollectiveOptions options_;
  Inputs inputs_;
  int rank_;
  size_t element_;
  std::vector<size_t> blocks_;
  std::vector<size_t> offsets_;
  size_t total_;
  size_t mine_;
};

}  // namespace

RankResult run_rank(const Case& c, Context& context, CaseBoard& board,
                    std::chrono::milliseconds timeout) {
  RankResult result;
  RankRun run(c, context, board, timeout);
  std::string rank = "rank " + std::to_string(context.rank()) + ": ";
  try {
    run.run();
    if (!c.supported) {
      result.problems.push_back(rank + "algorithm '" + c.algorithm +
                                "' declines this call (supports() is false) or its op does not "
                                "take its type, so the call should throw InvalidArgument, but it "
                                "returned");
    }
  } catch (const InvalidArgument& error) {
    result.threw = true;
    if (c.supported) result.problems.push_back(rank + "threw " + describe_exception(error));
  } catch (const std::exception& error) {
    result.threw = true;
    result.problems.push_back(rank + "threw " + describe_exception(error));
  }
  for (std::string& problem : run.problems) result.problems.push_back(std::move(problem));
  return result;
}

std::string describe_exception(const std::exception& error) {
  const char* kind = "std::exception";
  if (dynamic_cast<const TimeoutError*>(&error)) {
    kind = "TimeoutError";
  } else if (dynamic_cast<const ConnectionError*>(&error)) {
    kind = "ConnectionError";
  } else if (dynamic_cast<const MismatchError*>(&error)) {
    kind = "MismatchError";
  } else if (dynamic_cast<const InvalidArgument*>(&error)) {
    kind = "InvalidArgument";
  } else if (dynamic_cast<const StoreError*>(&error)) {
    kind = "StoreError";
  } else if (dynamic_cast<const Error*>(&error)) {
    kind = "gloo_lite::Error";
  }
  return std::string(kind) + ": " + error.what();
}

}  // namespace gloo_lite::test
