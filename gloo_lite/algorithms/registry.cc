#include "gloo_lite/algorithms/registry.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <optional>

#include "gloo_lite/algorithms/families.h"
#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"

namespace gloo_lite::algo {

const CostModel& CostModel::get() {
  static const CostModel model = [] {
    CostModel m{knob_double("GLOO_LITE_ALPHA_US") * 1e-6,
                1.0 / (knob_double("GLOO_LITE_BETA_GBPS") * 1e9),
                1.0 / (knob_double("GLOO_LITE_GAMMA_GBPS") * 1e9),
                knob_double("GLOO_LITE_OVERHEAD_US") * 1e-6,
                knob_double("GLOO_LITE_SHM_ALPHA_US") * 1e-6,
                1.0 / (knob_double("GLOO_LITE_SHM_BETA_GBPS") * 1e9),
                knob_double("GLOO_LITE_WAIT_US") * 1e-6};
    m.net_alpha = knob_double("GLOO_LITE_NET_ALPHA_US") * 1e-6;
    double net_gbps = knob_double("GLOO_LITE_NET_BETA_GBPS");
    m.net_beta = net_gbps > 0 ? 1.0 / (net_gbps * 1e9) : 0;
    m.net_changing = knob_double("GLOO_LITE_NET_CHANGING");
    return m;
  }();
  return model;
}

CostModel CostModel::for_call(const Call& call) {
  CostModel model = get();
  if (model.net_beta == 0 && call.context != nullptr && call.context->network_beta() > 0) {
    model.net_beta = call.context->network_beta();
  }
  return model;
}

double latency(double steps, double depth, const CostModel& model) {
  // The wait cannot exceed a step's whole latency (GLOO_LITE_WAIT_US above GLOO_LITE_ALPHA_US).
  double wait = std::min(model.wait, model.alpha);
  return (steps - depth) * (model.alpha - wait) + depth * model.alpha;
}

double estimate(const Algorithm& algorithm, const Call& call, const CostModel& model) {
  // Each core serves max(1, ranks per core) ranks, whose messages it handles one after another.
  double host = algorithm.messages(call) * model.overhead * std::max(1.0, call.ranks_per_core);
  return std::max(algorithm.cost(call, model), host);
}

namespace {

// The algorithms of `call`'s collective that support it and `exclude` does not name, in
// registry order, with their estimates.
std::vector<Ranked> supported(const Call& call, const CostModel& model,
                              std::initializer_list<const char*> exclude) {
  std::vector<Ranked> ranked;
  for (const Algorithm& algorithm : all_algorithms()) {
    if (algorithm.collective != call.collective) continue;
    bool excluded = std::any_of(exclude.begin(), exclude.end(), [&](const char* name) {
      return std::strcmp(algorithm.name, name) == 0;
    });
    if (excluded || !algorithm.supports(call)) continue;
    ranked.push_back({&algorithm, estimate(algorithm, call, model)});
  }
  return ranked;
}

// The index of the cheapest of `ranked` (not empty). Ties (same formula, rounding apart) go to
// the earlier entry, so the choice is stable.
size_t cheapest_index(const std::vector<Ranked>& ranked) {
  size_t best = 0;
  for (size_t i = 1; i < ranked.size(); ++i) {
    if (ranked[i].estimate < ranked[best].estimate * (1 - 1e-9)) best = i;
  }
  return best;
}

}  // namespace

std::vector<Ranked> rank_algorithms(const Call& call, const CostModel& model) {
  std::vector<Ranked> ranked = supported(call, model, {});
  if (ranked.size() > 1) {
    size_t best = cheapest_index(ranked);
    std::rotate(ranked.begin(), ranked.begin() + best, ranked.begin() + best + 1);
    std::stable_sort(ranked.begin() + 1, ranked.end(),
                     [](const Ranked& a, const Ranked& b) { return a.estimate < b.estimate; });
  }
  return ranked;
}

Ranked cheapest(const Call& call, const CostModel& model,
                std::initializer_list<const char*> exclude) {
  std::vector<Ranked> ranked = supported(call, model, exclude);
  if (ranked.empty()) return {nullptr, 0};
  return ranked[cheapest_index(ranked)];
}

const std::vector<Algorithm>& all_algorithms() {
  static const std::vector<Algorithm> table = [] {
    std::vector<Algorithm> all;
    for (auto family : {ring_algorithms, halving_doubling_algorithms, tree_algorithms,
                        direct_algorithms, bruck_algorithms, pairwise_algorithms,
                        dissemination_algorithms, shm_algorithms, hierarchical_algorithms}) {
      for (const Algorithm& algorithm : family()) all.push_back(algorithm);
    }
    return all;
  }();
  return table;
}

const std::vector<std::string>* hosts_of(const Call& call) {
  // A phase of a call among some of the context's ranks (hierarchical's leaders on a
  // SubsetMesh) is not the context's layout: its own description, if it has one.
  if (call.context != nullptr && call.context->hosts().size() == static_cast<size_t>(call.size)) {
    return &call.context->hosts();
  }
  return call.hosts;
}

bool described_on_one_host(const Call& call) {
  if (call.hosts == nullptr) return true;
  const auto& hosts = *call.hosts;
  return std::all_of(hosts.begin(), hosts.end(), [&](const auto& h) { return h == hosts[0]; });
}

int ceil_log2(int n) {
  int log = 0;
  while ((1 << log) < n) ++log;
  return log;
}

bool is_power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

namespace {

// GLOO_LITE_ALGO, parsed once (validate_knobs has rejected unknown names at start).
std::string env_choice(Collective collective) {
  static const std::map<std::string, std::string> choices = [] {
    std::map<std::string, std::string> parsed;
    for (auto& [name, algorithm] : parse_algorithm_spec(knob_string("GLOO_LITE_ALGO"))) {
      parsed[name] = algorithm;
    }
    return parsed;
  }();
  auto found = choices.find(collective_name(collective));
  if (found != choices.end()) return found->second;
  found = choices.find("*");
  return found != choices.end() ? found->second : "auto";
}

// "auto, ring, halving_doubling, ...": what GLOO_LITE_ALGO may name for this collective.
std::string algorithm_names(Collective collective) {
  std::string text = "auto";
  for (const Algorithm& algorithm : all_algorithms()) {
    if (algorithm.collective == collective) text += std::string(", ") + algorithm.name;
  }
  return text;
}

// "allreduce: auto, ring, ...; broadcast: auto, ...": every valid name, for messages.
std::string every_algorithm() {
  std::string text;
  for (int c = 0; c < kCollectiveCount; ++c) {
    Collective collective = static_cast<Collective>(c);
    text += std::string(text.empty() ? "" : "; ") + collective_name(collective) + ": " +
            algorithm_names(collective);
  }
  return text;
}

std::string offered(Collective collective, const Call& call) {
  std::string names;
  for (const Algorithm& algorithm : all_algorithms()) {
    if (algorithm.collective != collective) continue;
    names += std::string(names.empty() ? "" : ", ") + algorithm.name;
    if (!algorithm.supports(call)) names += " (not for this call)";
  }
  return names;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> parse_algorithm_spec(const std::string& spec) {
  std::vector<std::pair<std::string, std::string>> entries;
  size_t start = 0;
  while (start < spec.size()) {
    size_t end = spec.find_first_of(";,", start);
    if (end == std::string::npos) end = spec.size();
    std::string item = spec.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    size_t colon = item.find(':');
    if (colon == std::string::npos) {
      entries.emplace_back("*", item);
    } else {
      entries.emplace_back(item.substr(0, colon), item.substr(colon + 1));
    }
  }
  return entries;
}

void check_algorithm_spec(const std::string& spec) {
  auto fail = [&](const std::string& problem) {
    throw InvalidArgument("GLOO_LITE_ALGO='" + spec + "': " + problem +
                          ". Valid names: " + every_algorithm());
  };
  for (const auto& [collective_text, name] : parse_algorithm_spec(spec)) {
    if (name == "auto") continue;
    if (collective_text == "*") {
      bool offered_somewhere = false;
      for (const Algorithm& algorithm : all_algorithms()) {
        offered_somewhere = offered_somewhere || name == algorithm.name;
      }
      if (!offered_somewhere) fail("no collective has an algorithm named '" + name + "'");
      continue;
    }
    const CollectiveInfo* collective = find_collective(collective_text);
    if (!collective) fail("no collective named '" + collective_text + "'");
    if (find_algorithm(collective->collective, name) == nullptr) {
      fail(collective_text + " has no algorithm named '" + name + "' (" + collective_text +
           " offers: " + algorithm_names(collective->collective) + ")");
    }
  }
}

const Algorithm* find_algorithm(Collective collective, const std::string& name) {
  for (const Algorithm& algorithm : all_algorithms()) {
    if (algorithm.collective == collective && name == algorithm.name) return &algorithm;
  }
  return nullptr;
}

const Algorithm& choose_algorithm(const Call& call, const std::string& requested) {
  const char* collective = collective_name(call.collective);
  if (!requested.empty() && requested != "auto") {
    const Algorithm* algorithm = find_algorithm(call.collective, requested);
    if (algorithm == nullptr) {
      throw InvalidArgument(std::string(collective) + ": no algorithm named '" + requested +
                            "'; available: " + offered(call.collective, call));
    }
    if (!algorithm->supports(call)) {
      throw InvalidArgument(std::string(collective) + ": algorithm '" + requested +
                            "' does not support this call (P = " + std::to_string(call.size) +
                            "); available: " + offered(call.collective, call));
    }
    return *algorithm;
  }
  std::string from_env = env_choice(call.collective);
  if (from_env != "auto") {
    const Algorithm* algorithm = find_algorithm(call.collective, from_env);
    // A name meant for other collectives, or one that does not fit this call, falls back to
    // the tuner rather than failing a job that set it globally.
    if (algorithm != nullptr && algorithm->supports(call)) return *algorithm;
  }
  std::vector<Ranked> ranked = rank_algorithms(call, CostModel::for_call(call));
  if (ranked.empty()) {
    throw InvalidArgument(std::string(collective) + ": no algorithm supports this call");
  }
  return *ranked.front().algorithm;
}

}  // namespace gloo_lite::algo
