#include "gloo_lite/algorithm_choice.h"

#include <numeric>

#include "gloo_lite/algorithms/registry.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/context_engine.h"

namespace gloo_lite {
namespace {

using algo::Collective;

Collective collective_by_name(const std::string& name) {
  if (const CollectiveInfo* info = find_collective(name)) return info->collective;
  std::string known;
  for (const CollectiveInfo& info : kCollectives) {
    known += std::string(known.empty() ? "" : ", ") + info.name;
  }
  throw InvalidArgument("unknown collective '" + name + "'; known: " + known);
}

bool has_blocks(Collective collective) {
  const CollectiveInfo& info = collective_info(collective);
  return info.per_rank_blocks || info.per_pair_blocks;
}

}  // namespace

std::vector<std::string> collective_names() {
  std::vector<std::string> names;
  for (const CollectiveInfo& info : kCollectives) names.emplace_back(info.name);
  return names;
}

std::vector<std::string> algorithm_names(const std::string& collective) {
  Collective wanted = collective_by_name(collective);
  std::vector<std::string> names;
  for (const algo::Algorithm& algorithm : algo::all_algorithms()) {
    if (algorithm.collective == wanted) names.emplace_back(algorithm.name);
  }
  return names;
}

std::string chosen_algorithm(Context& context, const std::string& collective, size_t count,
                             DataType type, ReduceOp op, int root, const std::string& requested) {
  // The same description collectives.cc builds for the tuner, minus buffers, tag and deadline,
  // which no `supports` or `cost` reads.
  algo::Call call =
      algo::Call::on(engine_of(context), collective_by_name(collective), type, op, root);
  if (call.collective == Collective::kBarrier) {
    call.type = DataType::kUint8;
    call.element = 1;
  } else if (has_blocks(call.collective)) {
    call.blocks.assign(call.size, count);
    call.offsets.resize(call.size);
    std::exclusive_scan(call.blocks.begin(), call.blocks.end(), call.offsets.begin(), size_t{0});
    if (call.collective == Collective::kAlltoall) {
      call.recv_blocks = call.blocks;
      call.recv_offsets = call.offsets;
    }
  } else {
    call.count = count;
  }
  return algo::choose_algorithm(call, requested).name;
}

TuningInputs tuning_inputs(const Context& context) {
  ContextEngine& engine = engine_of(context);
  return {engine.device()->name(), engine.ranks_per_core(), engine.network_beta()};
}

}  // namespace gloo_lite
