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

// The counts of `call` for `count` elements as the public calls take it (the whole vector, or
// each rank's block); a barrier moves no data (one-byte elements, no count).
void shape(algo::Call& call, size_t count) {
  const CollectiveInfo& info = collective_info(call.collective);
  if (call.collective == Collective::kBarrier) {
    call.type = DataType::kUint8;
    call.element = 1;
  } else if (info.per_rank_blocks || info.per_pair_blocks) {
    call.blocks.assign(call.size, count);
    call.offsets.resize(call.size);
    std::exclusive_scan(call.blocks.begin(), call.blocks.end(), call.offsets.begin(), size_t{0});
    if (info.per_pair_blocks) {
      call.recv_blocks = call.blocks;
      call.recv_offsets = call.offsets;
    }
  } else {
    call.count = count;
  }
}

// A described call as the registry sees it; `call.hosts` points into `described`.
algo::Call registry_call(const DescribedCall& described) {
  if (described.ranks < 1) {
    throw InvalidArgument("a described " + std::string(collective_name(described.collective)) +
                          " needs at least one rank (got " + std::to_string(described.ranks) + ")");
  }
  if (!described.hosts.empty() && described.hosts.size() != size_t(described.ranks)) {
    throw InvalidArgument("a described " + std::string(collective_name(described.collective)) +
                          " names the hosts of " + std::to_string(described.hosts.size()) +
                          " ranks for " + std::to_string(described.ranks) +
                          " ranks; give one host per rank");
  }
  algo::Call call;
  call.size = described.ranks;
  call.collective = described.collective;
  call.type = described.type;
  call.element = element_size(described.type);
  call.ranks_per_core = described.ranks_per_core;
  if (!described.hosts.empty()) call.hosts = &described.hosts;
  shape(call, described.count);
  return call;
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
  shape(call, count);
  return algo::choose_algorithm(call, requested).name;
}

TuningInputs tuning_inputs(const Context& context) {
  ContextEngine& engine = engine_of(context);
  return {engine.device()->name(), engine.ranks_per_core(), engine.network_beta()};
}

std::string described_choice(const DescribedCall& call, const std::string& requested) {
  return algo::choose_algorithm(registry_call(call), requested).name;
}

std::vector<AlgorithmEstimate> described_estimates(const DescribedCall& call) {
  std::vector<AlgorithmEstimate> estimates;
  for (const algo::Ranked& ranked :
       algo::rank_algorithms(registry_call(call), algo::CostModel::get())) {
    estimates.push_back({ranked.algorithm->name, ranked.estimate});
  }
  return estimates;
}

CostFigures cost_figures() {
  const algo::CostModel& model = algo::CostModel::get();
  return {model.alpha,         model.beta,         model.gamma,     model.overhead,
          model.cross_alpha(), model.cross_beta(), model.shm_alpha, model.shm_beta};
}

}  // namespace gloo_lite
