#include "gloo_lite/fingerprint.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "gloo_lite/algorithms/registry.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/socket.h"

namespace gloo_lite {
namespace {

constexpr size_t kFingerprintBytes = 48;

struct Fingerprint {
  uint8_t collective = 0;
  uint8_t type = 0;
  uint8_t op = 0;
  uint32_t root = 0;
  uint64_t count = 0;        // count, or the total of the blocks
  uint64_t blocks_hash = 0;  // per-rank block sizes (all ranks must agree), 0 for alltoallv
  uint64_t algorithm_hash = 0;
  uint64_t to_peer = 0;  // alltoallv: elements this rank sends to the receiving peer
  uint64_t sequence = 0;
};

uint64_t hash_text(const std::string& text) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (char c : text) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h;
}

void encode(const Fingerprint& f, uint8_t* out) {
  out[0] = f.collective;
  out[1] = f.type;
  out[2] = f.op;
  out[3] = 0;
  put_u32(out + 4, f.root);
  put_u64(out + 8, f.count);
  put_u64(out + 16, f.blocks_hash);
  put_u64(out + 24, f.algorithm_hash);
  put_u64(out + 32, f.to_peer);
  put_u64(out + 40, f.sequence);
}

Fingerprint decode(const uint8_t* in) {
  Fingerprint f;
  f.collective = in[0];
  f.type = in[1];
  f.op = in[2];
  f.root = get_u32(in + 4);
  f.count = get_u64(in + 8);
  f.blocks_hash = get_u64(in + 16);
  f.algorithm_hash = get_u64(in + 24);
  f.to_peer = get_u64(in + 32);
  f.sequence = get_u64(in + 40);
  return f;
}

std::string describe(const Fingerprint& f) {
  auto collective = static_cast<algo::Collective>(f.collective);
  std::string text = std::string(algo::collective_name(collective)) + "(" +
                     type_name(static_cast<DataType>(f.type)) + ", count " +
                     std::to_string(f.count);
  if (collective_info(collective).has_op)
    text += std::string(", ") + op_name(static_cast<ReduceOp>(f.op));
  if (collective_info(collective).rooted) text += ", root " + std::to_string(f.root);
  return text + ") as collective #" + std::to_string(f.sequence);
}

// --- the per-message call fingerprint (call_fingerprint, fingerprint.h) ---

// 2: the op field grew to 4 bits (the bitwise ops), taken from the counts hash.
constexpr uint64_t kLayoutVersion = 2;

// One field of the 64-bit fingerprint: `bits` wide, its lowest bit at `shift`.
struct Field {
  int shift;
  int bits;
  constexpr uint64_t get(uint64_t fingerprint) const { return (fingerprint >> shift) & mask(); }
  constexpr uint64_t put(uint64_t value) const { return (value & mask()) << shift; }
  constexpr uint64_t mask() const { return (uint64_t{1} << bits) - 1; }
};
constexpr Field kChecked{63, 1};
constexpr Field kVersionField{60, 3};
constexpr Field kCollectiveField{56, 4};
constexpr Field kTypeField{52, 4};
constexpr Field kOpField{48, 4};
constexpr Field kAlgorithmField{42, 6};
constexpr Field kRootField{23, 19};
constexpr Field kCountsField{0, 23};
static_assert(static_cast<uint64_t>(ReduceOp::kBxor) <= kOpField.mask(), "every op fits");

bool has_counts(algo::Collective c) {
  return c != algo::Collective::kAlltoall && c != algo::Collective::kBarrier;
}

uint64_t counts_hash(const algo::Call& call) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t value) {
    h = (h ^ value) * 1099511628211ull;
    h ^= h >> 29;
  };
  mix(call.count);
  for (size_t block : call.blocks) mix(block);
  return h ^ (h >> 24) ^ (h >> 48);
}

std::string hex6(uint64_t value) {
  char text[8];
  std::snprintf(text, sizeof(text), "%06llx", static_cast<unsigned long long>(value));
  return text;
}

// "allreduce #12 (float32, sum, algorithm ring, counts #3a9f01)"
std::string describe_call(uint64_t fingerprint, uint64_t tag) {
  std::string sequence = "#" + std::to_string(tags::sequence_of(tag));
  if (tags::stream_of(tag) != 0) sequence += " on tag " + std::to_string(tags::stream_of(tag));
  if (kVersionField.get(fingerprint) != kLayoutVersion) {
    return "a call " + sequence + " of an incompatible gloo_lite build (fingerprint " +
           std::to_string(fingerprint) + ")";
  }
  auto collective_index = kCollectiveField.get(fingerprint);
  auto collective = static_cast<algo::Collective>(collective_index);
  auto type_index = kTypeField.get(fingerprint);
  std::string text = collective_index < algo::kCollectiveCount
                         ? algo::collective_name(collective)
                         : "collective " + std::to_string(collective_index);
  text += " " + sequence + " (";
  text += type_index <= static_cast<uint64_t>(DataType::kFloat64)
              ? type_name(static_cast<DataType>(type_index))
              : "type " + std::to_string(type_index);
  if (collective_info(collective).has_op) {
    auto op_index = kOpField.get(fingerprint);
    text += op_index <= static_cast<uint64_t>(ReduceOp::kBxor)
                ? std::string(", ") + op_name(static_cast<ReduceOp>(op_index))
                : ", op " + std::to_string(op_index);
  }
  if (collective_info(collective).rooted)
    text += ", root " + std::to_string(kRootField.get(fingerprint));
  uint64_t algorithm = kAlgorithmField.get(fingerprint);
  const auto& table = algo::all_algorithms();
  if (algorithm >= 1 && algorithm <= table.size()) {
    text += std::string(", algorithm ") + table[algorithm - 1].name;
  }
  if (has_counts(collective)) text += ", counts #" + hex6(kCountsField.get(fingerprint));
  return text + ")";
}

// "the type and the root"
std::string call_difference(uint64_t mine, uint64_t theirs) {
  const std::pair<Field, const char*> fields[] = {
      {kCollectiveField, "the collective"}, {kTypeField, "the type"},
      {kOpField, "the reduction op"},       {kRootField, "the root"},
      {kAlgorithmField, "the algorithm"},   {kCountsField, "the element counts"},
  };
  std::vector<const char*> differ;
  for (const auto& [field, name] : fields) {
    if (field.get(mine) != field.get(theirs)) differ.push_back(name);
  }
  if (kVersionField.get(mine) != kVersionField.get(theirs)) return "the gloo_lite version";
  std::string text;
  for (size_t i = 0; i < differ.size(); ++i) {
    text += i == 0 ? "" : i + 1 == differ.size() ? " and " : ", ";
    text += differ[i];
  }
  return text.empty() ? "an unknown field" : text;
}

}  // namespace

std::string describe_fingerprint(uint64_t fingerprint, uint64_t tag) {
  return describe_call(fingerprint, tag);
}

std::string fingerprint_difference(uint64_t mine, uint64_t theirs) {
  return call_difference(mine, theirs);
}

uint64_t call_fingerprint(const algo::Call& call, const algo::Algorithm& algorithm) {
  // The transport (below this layer) prints fingerprints through these; registered on the
  // first call, before any message of a collective can carry a fingerprint.
  static const bool describer_registered = [] {
    transport::set_call_describer({describe_call, call_difference});
    return true;
  }();
  (void)describer_registered;
  const auto& table = algo::all_algorithms();
  // The registry's index (+1, so 0 is "unknown"); every Algorithm a call runs is in the table.
  auto at = reinterpret_cast<uintptr_t>(&algorithm);
  auto begin = reinterpret_cast<uintptr_t>(table.data());
  uint64_t algorithm_index = 0;
  if (at >= begin && at < begin + table.size() * sizeof(algo::Algorithm)) {
    algorithm_index =
        std::min<uint64_t>((at - begin) / sizeof(algo::Algorithm) + 1, kAlgorithmField.mask());
  }
  uint64_t f = kChecked.put(1) | kVersionField.put(kLayoutVersion) |
               kCollectiveField.put(static_cast<uint64_t>(call.collective)) |
               kTypeField.put(static_cast<uint64_t>(call.type)) |
               kAlgorithmField.put(algorithm_index);
  if (collective_info(call.collective).has_op) f |= kOpField.put(static_cast<uint64_t>(call.op));
  if (collective_info(call.collective).rooted)
    f |= kRootField.put(static_cast<uint64_t>(call.root));
  if (has_counts(call.collective)) f |= kCountsField.put(counts_hash(call));
  return f;
}

namespace {

// check_fingerprints' steps: this rank's fingerprint, the exchange, the comparison, the
// verdicts.

Fingerprint fingerprint_of(const algo::Call& call, const std::string& algorithm) {
  Fingerprint mine;
  mine.collective = static_cast<uint8_t>(call.collective);
  mine.type = static_cast<uint8_t>(call.type);
  mine.op = static_cast<uint8_t>(call.op);
  mine.root = static_cast<uint32_t>(call.root);
  mine.count = call.count;
  bool per_peer = call.collective == algo::Collective::kAlltoall;
  uint64_t blocks_hash = 0;
  for (size_t block : call.blocks) {
    mine.count += per_peer ? 0 : block;
    blocks_hash = blocks_hash * 1000003u + block + 1;
  }
  mine.blocks_hash = per_peer ? 0 : blocks_hash;
  mine.algorithm_hash = hash_text(algorithm);
  mine.sequence = tags::sequence_of(call.tag);
  return mine;
}

// Sends `mine` to every peer (with what this rank sends each, for alltoallv) and returns what
// they sent, kFingerprintBytes per rank.
std::vector<uint8_t> exchange_fingerprints(const algo::Call& call, const Fingerprint& mine,
                                           uint64_t tag) {
  const bool per_peer = call.collective == algo::Collective::kAlltoall;
  std::vector<uint8_t> out(kFingerprintBytes * call.size);
  std::vector<uint8_t> in(kFingerprintBytes * call.size);
  auto out_memory = call.mesh->register_memory(out.data(), out.size());
  auto in_memory = call.mesh->register_memory(in.data(), in.size());
  std::vector<transport::RequestPtr> requests;
  for (int peer = 0; peer < call.size; ++peer) {
    if (peer == call.rank) continue;
    Fingerprint to = mine;
    to.to_peer = per_peer ? call.blocks[peer] : 0;
    encode(to, &out[peer * kFingerprintBytes]);
    requests.push_back(
        call.mesh->recv(peer, tag, *in_memory, peer * kFingerprintBytes, kFingerprintBytes));
    requests.push_back(
        call.mesh->send(peer, tag, *out_memory, peer * kFingerprintBytes, kFingerprintBytes));
  }
  call.mesh->wait(requests, call.deadline);
  return in;
}

// What this rank found wrong with the first peer that disagrees ("" and -1: nothing).
struct Verdict {
  std::string problem;
  int culprit = -1;
};

Verdict compare_fingerprints(const algo::Call& call, const Fingerprint& mine,
                             const std::vector<uint8_t>& in) {
  const bool per_peer = call.collective == algo::Collective::kAlltoall;
  for (int peer = 0; peer < call.size; ++peer) {
    if (peer == call.rank) continue;
    Fingerprint theirs = decode(&in[peer * kFingerprintBytes]);
    Fingerprint expected = mine;
    expected.to_peer = per_peer ? call.recv_blocks[peer] : 0;
    bool same = theirs.collective == expected.collective && theirs.type == expected.type &&
                theirs.op == expected.op && theirs.root == expected.root &&
                theirs.count == expected.count && theirs.blocks_hash == expected.blocks_hash &&
                theirs.to_peer == expected.to_peer;
    if (!same) {
      std::string detail = per_peer && theirs.to_peer != expected.to_peer
                               ? " (rank " + std::to_string(peer) + " sends " +
                                     std::to_string(theirs.to_peer) + " elements to rank " +
                                     std::to_string(call.rank) + ", which expects " +
                                     std::to_string(expected.to_peer) + ")"
                               : "";
      return {"collective mismatch: rank " + std::to_string(call.rank) + " called " +
                  describe(mine) + " but rank " + std::to_string(peer) + " called " +
                  describe(theirs) + detail +
                  "; every rank must call the same collectives in the same order with matching "
                  "arguments",
              peer};
    }
    if (theirs.algorithm_hash != expected.algorithm_hash) {
      return {"collective mismatch: rank " + std::to_string(call.rank) + " and rank " +
                  std::to_string(peer) + " chose different algorithms for " + describe(mine) +
                  " (is GLOO_LITE_ALGO set alike on every rank?)",
              peer};
    }
  }
  return {};
}

// All ranks share their verdicts, so a disagreement that only two ranks can see (an alltoallv
// count between them) still stops every rank with the same diagnosis.
void share_verdicts(const algo::Call& call, const Fingerprint& mine, const Verdict& verdict,
                    uint64_t tag) {
  std::vector<uint8_t> verdict_out(8, 0);
  std::vector<uint8_t> verdicts(8 * call.size, 0);
  if (!verdict.problem.empty()) {
    put_u32(verdict_out.data(), 1);
    put_u32(verdict_out.data() + 4, static_cast<uint32_t>(verdict.culprit));
  }
  auto verdict_memory = call.mesh->register_memory(verdict_out.data(), verdict_out.size());
  auto verdicts_memory = call.mesh->register_memory(verdicts.data(), verdicts.size());
  std::vector<transport::RequestPtr> requests;
  for (int peer = 0; peer < call.size; ++peer) {
    if (peer == call.rank) continue;
    requests.push_back(call.mesh->recv(peer, tag, *verdicts_memory, peer * 8, 8));
    requests.push_back(call.mesh->send(peer, tag, *verdict_memory, 0, 8));
  }
  call.mesh->wait(requests, call.deadline);
  if (!verdict.problem.empty()) throw AgreedMismatch(verdict.problem);
  for (int peer = 0; peer < call.size; ++peer) {
    if (peer == call.rank || get_u32(&verdicts[peer * 8]) == 0) continue;
    throw AgreedMismatch("collective mismatch in " + describe(mine) + ": rank " +
                         std::to_string(peer) + " found that its arguments disagree with rank " +
                         std::to_string(get_u32(&verdicts[peer * 8 + 4])) +
                         "'s (see the error on those ranks); every rank must call the same "
                         "collectives in the same order with matching arguments");
  }
}

}  // namespace

// Each rank compares every peer's fingerprint with its own, then all share their verdicts.
void check_fingerprints(const algo::Call& call, const std::string& algorithm) {
  const uint64_t tag = call.tag | tags::kCheckBit;
  const Fingerprint mine = fingerprint_of(call, algorithm);
  const std::vector<uint8_t> in = exchange_fingerprints(call, mine, tag);
  share_verdicts(call, mine, compare_fingerprints(call, mine, in), tag);
}

}  // namespace gloo_lite
