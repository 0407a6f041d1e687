// Cases of the collectives matrix: names, layouts, and whether the named algorithm takes them.
// Which cases run is sampling.cc's business.
#include "test/collectives/cases.h"

#include <algorithm>

#include "gloo_lite/algorithms/registry.h"

namespace gloo_lite::test {

const std::vector<Kind> kAllKinds = {
    Kind::kAllreduce, Kind::kReduce,     Kind::kReduceScatter, Kind::kReduceScatterv,
    Kind::kAllgather, Kind::kAllgatherv, Kind::kGather,        Kind::kGatherv,
    Kind::kScatter,   Kind::kScatterv,   Kind::kBroadcast,     Kind::kAlltoall,
    Kind::kAlltoallv, Kind::kBarrier,
};

namespace {

uint64_t hash_text(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (char c : text) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return mix64(h);
}

const ReduceFunction& placeholder_function() {
  static const ReduceFunction function = [](void*, const void*, size_t) {};
  return function;
}

// The call as the named algorithm's `supports` sees it on `rank` (no context or buffers: a
// `supports` looks at the shape of the call only).
algo::Call shape_of(const Case& c, int rank) {
  algo::Call call;
  call.rank = rank;
  call.size = c.size;
  call.collective = collective_of(c.kind);
  call.type = c.type;
  call.element = element_bytes(c.type);
  call.op = is_reducing(c.kind) ? c.op : ReduceOp::kSum;
  call.custom = call.op == ReduceOp::kCustom ? &placeholder_function() : nullptr;
  call.root = is_rooted(c.kind) ? c.root : 0;
  auto offsets_of = [](const std::vector<size_t>& blocks) {
    std::vector<size_t> offsets(blocks.size(), 0);
    for (size_t i = 1; i < blocks.size(); ++i) offsets[i] = offsets[i - 1] + blocks[i - 1];
    return offsets;
  };
  switch (c.kind) {
    case Kind::kAllreduce:
    case Kind::kReduce:
    case Kind::kBroadcast:
      call.count = c.count;
      break;
    case Kind::kAlltoall:
    case Kind::kAlltoallv:
      for (int peer = 0; peer < c.size; ++peer) {
        call.blocks.push_back(c.alltoall_count(rank, peer));
        call.recv_blocks.push_back(c.alltoall_count(peer, rank));
      }
      call.offsets = offsets_of(call.blocks);
      call.recv_offsets = offsets_of(call.recv_blocks);
      break;
    case Kind::kBarrier:
      break;
    default:
      call.blocks = c.blocks();
      call.offsets = offsets_of(call.blocks);
      break;
  }
  return call;
}

bool algorithm_supports(const Case& c) {
  if (c.algorithm == "auto") return true;  // auto must serve every call
  const algo::Algorithm* algorithm = algo::find_algorithm(collective_of(c.kind), c.algorithm);
  if (algorithm == nullptr) return false;
  for (int rank = 0; rank < c.size; ++rank) {
    if (!algorithm->supports(shape_of(c, rank))) return false;
  }
  return true;
}

}  // namespace

const char* type_label(DataType type) {
  switch (type) {
    case DataType::kInt8:
      return "int8";
    case DataType::kUint8:
      return "uint8";
    case DataType::kInt32:
      return "int32";
    case DataType::kUint32:
      return "uint32";
    case DataType::kInt64:
      return "int64";
    case DataType::kUint64:
      return "uint64";
    case DataType::kFloat16:
      return "float16";
    case DataType::kBFloat16:
      return "bfloat16";
    case DataType::kFloat32:
      return "float32";
    case DataType::kFloat64:
      return "float64";
  }
  return "?";
}

const char* op_label(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kProd:
      return "prod";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kAvg:
      return "avg";
    case ReduceOp::kCustom:
      return "custom";
    case ReduceOp::kBand:
      return "band";
    case ReduceOp::kBor:
      return "bor";
    case ReduceOp::kBxor:
      return "bxor";
  }
  return "?";
}

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kAllreduce:
      return "allreduce";
    case Kind::kReduce:
      return "reduce";
    case Kind::kReduceScatter:
      return "reduce_scatter";
    case Kind::kReduceScatterv:
      return "reduce_scatterv";
    case Kind::kAllgather:
      return "allgather";
    case Kind::kAllgatherv:
      return "allgatherv";
    case Kind::kGather:
      return "gather";
    case Kind::kGatherv:
      return "gatherv";
    case Kind::kScatter:
      return "scatter";
    case Kind::kScatterv:
      return "scatterv";
    case Kind::kBroadcast:
      return "broadcast";
    case Kind::kAlltoall:
      return "alltoall";
    case Kind::kAlltoallv:
      return "alltoallv";
    case Kind::kBarrier:
      return "barrier";
  }
  return "?";
}

algo::Collective collective_of(Kind kind) {
  switch (kind) {
    case Kind::kAllreduce:
      return algo::Collective::kAllreduce;
    case Kind::kReduce:
      return algo::Collective::kReduce;
    case Kind::kReduceScatter:
    case Kind::kReduceScatterv:
      return algo::Collective::kReduceScatter;
    case Kind::kAllgather:
    case Kind::kAllgatherv:
      return algo::Collective::kAllgather;
    case Kind::kGather:
    case Kind::kGatherv:
      return algo::Collective::kGather;
    case Kind::kScatter:
    case Kind::kScatterv:
      return algo::Collective::kScatter;
    case Kind::kBroadcast:
      return algo::Collective::kBroadcast;
    case Kind::kAlltoall:
    case Kind::kAlltoallv:
      return algo::Collective::kAlltoall;
    case Kind::kBarrier:
      return algo::Collective::kBarrier;
  }
  return algo::Collective::kBarrier;
}

bool is_reducing(Kind kind) {
  return kind == Kind::kAllreduce || kind == Kind::kReduce || kind == Kind::kReduceScatter ||
         kind == Kind::kReduceScatterv;
}

bool is_rooted(Kind kind) {
  return kind == Kind::kReduce || kind == Kind::kGather || kind == Kind::kGatherv ||
         kind == Kind::kScatter || kind == Kind::kScatterv || kind == Kind::kBroadcast;
}

bool is_variable(Kind kind) {
  return kind == Kind::kReduceScatterv || kind == Kind::kAllgatherv || kind == Kind::kGatherv ||
         kind == Kind::kScatterv || kind == Kind::kAlltoallv;
}

bool has_in_place_choice(Kind kind) {
  return kind != Kind::kBroadcast && kind != Kind::kAlltoall && kind != Kind::kAlltoallv &&
         kind != Kind::kBarrier;
}

std::string Case::name() const {
  std::string text = std::string(kind_name(kind)) + "_" + algorithm + "_P" + std::to_string(size);
  if (kind == Kind::kBarrier) return text;
  text += "_n" + std::to_string(count) + "_" + type_label(type);
  if (is_reducing(kind)) text += std::string("_") + op_label(op);
  text += in_place ? "_inplace" : "_outofplace";
  if (is_rooted(kind)) text += "_root" + std::to_string(root);
  if (check) text += "_check";
  return text;
}

Inputs Case::inputs() const {
  Inputs inputs;
  inputs.type = type;
  inputs.pattern = pattern_for(is_reducing(kind), op);
  inputs.seed = seed;
  inputs.ranks = size;
  return inputs;
}

std::vector<size_t> Case::blocks() const {
  std::vector<size_t> blocks(size, count);
  if (!is_variable(kind)) return blocks;
  for (int r = 0; r < size; ++r) {
    uint64_t h = mix64(seed ^ (uint64_t(r + 1) << 32));
    bool empty = h % 3 == 0 || (size > 1 && static_cast<uint64_t>(r) == seed % size);
    blocks[r] = empty ? 0 : (h / 3) % (2 * count + 1);
  }
  return blocks;
}

size_t Case::alltoall_count(int from, int to) const {
  if (kind != Kind::kAlltoallv) return count;
  uint64_t h = mix64(seed ^ (uint64_t(from + 1) << 20) ^ (uint64_t(to + 1) << 40));
  return h % 4 == 0 ? 0 : (h / 4) % (2 * count + 1);
}

void Case::finish() {
  if (!is_reducing(kind)) op = ReduceOp::kSum;
  if (!is_rooted(kind)) root = 0;
  if (root < 0 || root >= size) root = size - 1;
  if (kind == Kind::kBroadcast) in_place = true;
  if (kind == Kind::kAlltoall || kind == Kind::kAlltoallv || kind == Kind::kBarrier) {
    in_place = false;
  }
  if (kind == Kind::kBarrier) count = 0;
  seed = hash_text(name());
  null_unused = seed % 3 == 0;
  // A bitwise op on a float type is refused by the library whatever the algorithm.
  bool refused = is_reducing(kind) && is_bitwise(op) && !is_integer(type);
  supported = !refused && algorithm_supports(*this);
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name(); }

std::vector<std::string> algorithms_for(Kind kind) {
  std::vector<std::string> names;
  for (const algo::Algorithm& algorithm : algo::all_algorithms()) {
    // hierarchical needs a context over several hosts, which the matrix's ranks never span
    // (test/hierarchical covers it).
    if (std::string(algorithm.name) == "hierarchical") continue;
    if (algorithm.collective == collective_of(kind)) names.push_back(algorithm.name);
  }
  names.push_back("auto");
  return names;
}

}  // namespace gloo_lite::test
