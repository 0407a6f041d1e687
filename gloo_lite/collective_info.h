// The one description of every collective: its name and the shape of its arguments. The API
// (argument checks, flight records), the call fingerprint, the tuner and its tool, and the C
// and Python bindings read this table instead of deriving the same facts again.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace gloo_lite {

enum class Collective : uint8_t {
  kAllreduce,
  kReduce,
  kReduceScatter,
  kAllgather,
  kGather,
  kScatter,
  kBroadcast,
  kAlltoall,
  kBarrier,
};
constexpr int kCollectiveCount = 9;

struct CollectiveInfo {
  Collective collective;
  const char* name;      // "reduce_scatter": as in the API, messages, GLOO_LITE_ALGO, the tuner
  bool rooted;           // takes a root rank
  bool has_op;           // reduces with a ReduceOp
  bool per_rank_blocks;  // one block per rank (a v-variant takes a count per rank)
  bool per_pair_blocks;  // a block per (sender, receiver): send and receive counts per rank
  bool moves_data;       // false only for barrier
};

// Indexed by Collective.
inline constexpr std::array<CollectiveInfo, kCollectiveCount> kCollectives = {{
    // collective               name              rooted has_op blocks pairs  data
    {Collective::kAllreduce, "allreduce", false, true, false, false, true},
    {Collective::kReduce, "reduce", true, true, false, false, true},
    {Collective::kReduceScatter, "reduce_scatter", false, true, true, false, true},
    {Collective::kAllgather, "allgather", false, false, true, false, true},
    {Collective::kGather, "gather", true, false, true, false, true},
    {Collective::kScatter, "scatter", true, false, true, false, true},
    {Collective::kBroadcast, "broadcast", true, false, false, false, true},
    {Collective::kAlltoall, "alltoall", false, false, false, true, true},
    {Collective::kBarrier, "barrier", false, false, false, false, false},
}};

constexpr const CollectiveInfo& collective_info(Collective collective) {
  return kCollectives[static_cast<size_t>(collective)];
}
constexpr const char* collective_name(Collective collective) {
  return collective_info(collective).name;
}
// The entry named `name`, or nullptr.
constexpr const CollectiveInfo* find_collective(std::string_view name) {
  for (const CollectiveInfo& info : kCollectives) {
    if (name == info.name) return &info;
  }
  return nullptr;
}

// The table is indexed by the enum: keep them in step.
static_assert([] {
  for (size_t i = 0; i < kCollectives.size(); ++i) {
    if (static_cast<size_t>(kCollectives[i].collective) != i) return false;
  }
  return true;
}());

}  // namespace gloo_lite
