#include "test/collectives/started_collective.h"

#include <numeric>
#include <string>

#include "test/collectives/reference.h"

namespace gloo_lite::test {
namespace {

std::vector<size_t> offsets_of(const std::vector<size_t>& blocks) {
  std::vector<size_t> offsets(blocks.size(), 0);
  for (size_t i = 1; i < blocks.size(); ++i) offsets[i] = offsets[i - 1] + blocks[i - 1];
  return offsets;
}

size_t sum_of(const std::vector<size_t>& blocks) {
  return std::accumulate(blocks.begin(), blocks.end(), size_t{0});
}

}  // namespace

std::unique_ptr<StartedCollective> StartedCollective::start(const Case& c, Context& context,
                                                            CollectiveOptions options,
                                                            std::atomic<int>& barrier_entered) {
  std::unique_ptr<StartedCollective> s(new StartedCollective(c));
  const int rank = context.rank();
  const int size = context.size();
  const Inputs inputs = c.inputs();
  const size_t element = element_bytes(c.type);
  const std::vector<size_t> blocks = c.blocks();
  const std::vector<size_t> offsets = offsets_of(blocks);
  const size_t total = sum_of(blocks);
  const size_t mine = blocks[rank];
  const std::string at = "rank " + std::to_string(rank) + ", " + c.name() + ": ";
  if (c.op == ReduceOp::kCustom) options.custom = plus_one_function(c.type);

  // This rank's input (elements [0, elements) of its reference input) and a filler output,
  // so that a block the collective never wrote shows up as filler.
  auto own_input = [&](size_t elements) {
    s->input_.resize(elements * element);
    fill_inputs(inputs, rank, 0, elements, s->input_.data());
  };
  auto filler_output = [&](size_t elements) {
    s->output_.resize(elements * element);
    fill_filler(s->output_.data(), s->output_.size());
  };
  // The gathered blocks of every rank, in rank order.
  auto check_gathered = [s = s.get(), inputs, blocks, offsets, element, at](Problems& problems) {
    for (size_t source = 0; source < blocks.size(); ++source) {
      check_copy(inputs, static_cast<int>(source), 0, blocks[source],
                 s->output_.data() + offsets[source] * element,
                 at + "block from rank " + std::to_string(source), problems);
    }
  };
  // The count vectors go in as temporaries that die when the call returns: the work must
  // have copied them (AddressSanitizer reports a later read).
  auto copy = [](const std::vector<size_t>& counts) { return std::vector<size_t>(counts); };
  uint8_t* in = nullptr;
  uint8_t* out = nullptr;
  switch (c.kind) {
    case Kind::kAllreduce:
    case Kind::kReduce: {
      own_input(c.count);
      filler_output(c.count);
      in = s->input_.data();
      out = s->output_.data();
      if (c.kind == Kind::kAllreduce) {
        s->work_ = iallreduce(context, in, out, c.count, c.type, c.op, options);
      } else {
        s->work_ = ireduce(context, in, out, c.count, c.type, c.op, c.root, options);
      }
      bool has_result = c.kind == Kind::kAllreduce || rank == c.root;
      s->check_ = [s = s.get(), inputs, c, has_result, at](Problems& problems) {
        if (has_result) {
          check_reduction(inputs, c.op, 0, c.count, s->output_.data(), at + "result", problems);
        }
      };
      break;
    }
    case Kind::kReduceScatter:
    case Kind::kReduceScatterv: {
      own_input(total);
      filler_output(mine);
      in = s->input_.data();
      out = s->output_.data();
      if (c.kind == Kind::kReduceScatter) {
        s->work_ = ireduce_scatter(context, in, out, c.count, c.type, c.op, options);
      } else {
        s->work_ = ireduce_scatterv(context, in, out, copy(blocks), c.type, c.op, options);
      }
      size_t first = offsets[rank];
      s->check_ = [s = s.get(), inputs, c, first, mine, at](Problems& problems) {
        check_reduction(inputs, c.op, first, mine, s->output_.data(), at + "result block",
                        problems);
      };
      break;
    }
    case Kind::kAllgather:
    case Kind::kAllgatherv:
    case Kind::kGather:
    case Kind::kGatherv: {
      own_input(mine);
      filler_output(total);
      in = s->input_.data();
      out = s->output_.data();
      if (c.kind == Kind::kAllgather) {
        s->work_ = iallgather(context, in, out, c.count, c.type, options);
      } else if (c.kind == Kind::kAllgatherv) {
        s->work_ = iallgatherv(context, in, out, copy(blocks), c.type, options);
      } else if (c.kind == Kind::kGather) {
        s->work_ = igather(context, in, out, c.count, c.type, c.root, options);
      } else {
        s->work_ = igatherv(context, in, out, copy(blocks), c.type, c.root, options);
      }
      bool gathers = c.kind == Kind::kAllgather || c.kind == Kind::kAllgatherv || rank == c.root;
      s->check_ = [check_gathered, gathers](Problems& problems) {
        if (gathers) check_gathered(problems);
      };
      break;
    }
    case Kind::kScatter:
    case Kind::kScatterv: {
      own_input(total);  // only the root's is read
      filler_output(mine);
      in = s->input_.data();
      out = s->output_.data();
      if (c.kind == Kind::kScatter) {
        s->work_ = iscatter(context, in, out, c.count, c.type, c.root, options);
      } else {
        s->work_ = iscatterv(context, in, out, copy(blocks), c.type, c.root, options);
      }
      size_t first = offsets[rank];
      s->check_ = [s = s.get(), inputs, c, first, mine, at](Problems& problems) {
        check_copy(inputs, c.root, first, mine, s->output_.data(), at + "received block", problems);
      };
      break;
    }
    case Kind::kBroadcast: {
      // In place; the non-roots start from their own inputs, which differ from the root's.
      own_input(c.count);
      s->work_ = ibroadcast(context, s->input_.data(), c.count, c.type, c.root, options);
      s->check_ = [s = s.get(), inputs, c, at](Problems& problems) {
        check_copy(inputs, c.root, 0, c.count, s->input_.data(), at + "result", problems);
      };
      break;
    }
    case Kind::kAlltoall:
    case Kind::kAlltoallv: {
      std::vector<size_t> send(size), receive(size), first(size, 0);
      for (int peer = 0; peer < size; ++peer) {
        send[peer] = c.alltoall_count(rank, peer);
        receive[peer] = c.alltoall_count(peer, rank);
        // Where the block of `peer` for this rank starts in peer's input.
        for (int before = 0; before < rank; ++before) first[peer] += c.alltoall_count(peer, before);
      }
      own_input(sum_of(send));
      filler_output(sum_of(receive));
      in = s->input_.data();
      out = s->output_.data();
      if (c.kind == Kind::kAlltoall) {
        s->work_ = ialltoall(context, in, out, c.count, c.type, options);
      } else {
        s->work_ = ialltoallv(context, in, copy(send), out, copy(receive), c.type, options);
      }
      std::vector<size_t> receive_offsets = offsets_of(receive);
      s->check_ = [s = s.get(), inputs, receive, receive_offsets, first, element,
                   at](Problems& problems) {
        for (size_t source = 0; source < receive.size(); ++source) {
          check_copy(inputs, static_cast<int>(source), first[source], receive[source],
                     s->output_.data() + receive_offsets[source] * element,
                     at + "block from rank " + std::to_string(source), problems);
        }
      };
      break;
    }
    case Kind::kBarrier: {
      barrier_entered.fetch_add(1);
      s->work_ = ibarrier(context, options);
      s->check_ = [&barrier_entered, size, at](Problems& problems) {
        int entered = barrier_entered.load();
        if (entered != size) {
          problems.push_back(at + "the barrier finished when " + std::to_string(entered) + " of " +
                             std::to_string(size) + " ranks had entered it");
        }
      };
      break;
    }
  }
  return s;
}

}  // namespace gloo_lite::test
