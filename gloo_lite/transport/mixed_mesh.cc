// The mixed mesh: per-pair choice at connect and routing by peer. Failure relay and the wait
// rule of mixed_mesh.h are in mixed_wait.cc.
#include "gloo_lite/transport/mixed_mesh.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/transport/names.h"

namespace gloo_lite::transport {
namespace {

// "1-3, 5, 7-8"
std::string rank_ranges(const std::vector<int>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    text += (text.empty() ? "" : ", ") + std::to_string(ranks[i]);
    if (j > i) text += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return text;
}

const LabelledAddress* find_part(const std::vector<LabelledAddress>& parts,
                                 const std::string& name) {
  for (const auto& part : parts) {
    if (part.name == name) return &part;
  }
  return nullptr;
}

}  // namespace

// A region registered with every sub-mesh: a message goes through the part of its peer's.
class MixedMesh::MixedMemory : public Memory {
 public:
  MixedMemory(void* data, size_t bytes, MemoryKind kind) : Memory(data, bytes, kind) {}
  std::vector<std::unique_ptr<Memory>> parts;  // by sub-mesh
};

MixedMesh::MixedMesh(int rank, int size, std::vector<SubDevice> transports, bool forced,
                     const MeshOptions& options)
    : rank_(rank), size_(size), forced_(forced) {
  for (size_t t = 0; t < transports.size(); ++t) {
    SubDevice& transport = transports[t];
    auto sub = std::make_unique<Sub>();
    try {
      sub->mesh = transport.device->create_mesh(rank, size, options);
    } catch (const ConnectionError& e) {
      // It cannot set up on this rank (a shared-memory segment that cannot be created or
      // sized: a memory or file-size limit, a seccomp profile). Unless it was forced or none
      // follows, this rank's pairs take the next transport: it is left out of this rank's
      // address list, so both ends of each pair choose without it (choose()). The store's
      // exchange of addresses is the agreement; no rank decides a pair alone.
      if (forced || t + 1 == transports.size()) throw;
      unavailable_.push_back({transport.name, e.what()});
      continue;
    }
    sub->engine = dynamic_cast<MatchingMesh*>(sub->mesh.get());
    // Unless forced, a pair it cannot serve after all goes to the next transport (connect()).
    if (sub->engine && !forced) sub->engine->allow_declines();
    sub->address = sub->mesh->address();
    sub->transport = std::move(transport);
    subs_.push_back(std::move(sub));
  }
  // Until connect() decides (and for a context of one rank, which never connects), the
  // first transport stands for the mesh.
  single_ = subs_.front()->mesh.get();
}

MixedMesh::~MixedMesh() = default;

std::string MixedMesh::address() const {
  std::vector<LabelledAddress> parts;
  for (const auto& sub : subs_) parts.push_back({sub->transport.name, sub->address});
  return encode_addresses(parts);
}

int MixedMesh::sub_index(const std::string& name) const {
  for (size_t i = 0; i < subs_.size(); ++i) {
    if (subs_[i]->transport.name == name) return static_cast<int>(i);
  }
  return -1;
}

int MixedMesh::choose(const std::vector<LabelledAddress>& a, const std::vector<LabelledAddress>& b,
                      const std::string& after) const {
  bool skipping = !after.empty();
  for (const auto& mine : a) {
    if (skipping) {
      skipping = mine.name != after;
      continue;
    }
    const LabelledAddress* theirs = find_part(b, mine.name);
    if (theirs == nullptr) continue;
    int index = sub_index(mine.name);
    // A transport this rank lacks cannot be tested here; for a pair of two other ranks it
    // counts as serving them (they test it themselves).
    if (index < 0) return -2;
    // Always (lower rank, higher rank): both ends make exactly the same call.
    if (subs_[index]->transport.device->can_connect(mine.address, theirs->address)) return index;
  }
  return -1;
}

void MixedMesh::connect(const std::vector<std::string>& addresses, uint64_t context_id,
                        const Deadline& deadline) {
  if (static_cast<int>(addresses.size()) != size_) {
    throw InvalidArgument("connect: " + std::to_string(addresses.size()) +
                          " addresses for a context of " + std::to_string(size_) + " ranks");
  }
  std::vector<std::vector<LabelledAddress>> lists(size_);
  for (int p = 0; p < size_; ++p) {
    lists[p] = p == rank_ ? decode_addresses(address(), p) : decode_addresses(addresses[p], p);
  }
  const std::string unserved = choose_pairs(lists);
  warn_unavailable(lists);
  if (!unserved.empty()) fail_unserved(unserved);
  connect_subs(lists, context_id, deadline);
  log_choice();
}

std::string MixedMesh::choose_pairs(const std::vector<std::vector<LabelledAddress>>& lists) {
  // With a forced transport, every pair, not only this rank's: a pair it cannot serve then
  // fails every rank alike (O(P^2) can_connect calls, only then). The table always ends with
  // TCP, which serves any pair, so otherwise this rank's own pairs are enough.
  sub_of_peer_.assign(size_, -1);
  std::string unserved;
  int unserved_pairs = 0;
  for (int a = 0; a < size_; ++a) {
    for (int b = a + 1; b < size_; ++b) {
      if (!forced_ && a != rank_ && b != rank_) continue;
      int chosen = choose(lists[a], lists[b]);
      if (a == rank_) sub_of_peer_[b] = chosen;
      if (b == rank_) sub_of_peer_[a] = chosen;
      if (chosen != -1) continue;
      if (++unserved_pairs <= 8) {
        unserved += (unserved.empty() ? "" : ", ") + std::string("ranks ") + std::to_string(a) +
                    " and " + std::to_string(b);
      }
    }
  }
  if (unserved_pairs > 8) unserved += " and " + std::to_string(unserved_pairs - 8) + " more";
  return unserved;
}

void MixedMesh::fail_unserved(const std::string& unserved) const {
  if (forced_) {
    const std::string& name = subs_.front()->transport.name;
    throw InvalidArgument(
        "GLOO_LITE_TRANSPORT=" + name + " cannot serve every pair of rank " +
        std::to_string(rank_) + "'s context: " + unserved + " cannot connect over " + name +
        (name == kShmTransport ? " (shared memory connects ranks of one host only)" : "") +
        "; unset GLOO_LITE_TRANSPORT to let each pair choose, or force a "
        "transport that reaches every rank (tcp)");
  }
  throw InvalidArgument("rank " + std::to_string(rank_) + ": no transport can serve " + unserved +
                        " (each pair needs a transport both ranks offer whose can_connect "
                        "accepts them); do all ranks run the same gloo_lite build?");
}

void MixedMesh::connect_subs(const std::vector<std::vector<LabelledAddress>>& lists,
                             uint64_t context_id, const Deadline& deadline) {
  // Each sub-mesh connects only its own peers, in table order on every rank (a rank waits in
  // the k-th connect only for peers that reach it after finishing the same earlier ones).
  // Sub-meshes move to `kept` only once all connected: a connect that throws leaves the mesh
  // as it was (every sub-mesh, the first standing for it).
  std::vector<int> new_index(subs_.size(), -1);
  int serving = 0;
  for (size_t i = 0; i < subs_.size(); ++i) {
    std::vector<std::string> own(size_);
    bool serves = false;
    for (int p = 0; p < size_; ++p) {
      if (p == rank_) {
        own[p] = subs_[i]->address;
      } else if (sub_of_peer_[p] == static_cast<int>(i)) {
        own[p] = find_part(lists[p], subs_[i]->transport.name)->address;
        serves = true;
      }
    }
    if (!serves) continue;  // dropped: it serves nobody
    subs_[i]->mesh->connect(own, context_id, deadline);
    new_index[i] = serving++;
    if (subs_[i]->engine) reroute_declined(*subs_[i], lists);
  }
  std::vector<std::unique_ptr<Sub>> kept;
  for (size_t i = 0; i < subs_.size(); ++i) {
    if (new_index[i] >= 0) kept.push_back(std::move(subs_[i]));
  }
  for (int p = 0; p < size_; ++p) {
    if (p != rank_) sub_of_peer_[p] = new_index[sub_of_peer_[p]];
  }
  subs_ = std::move(kept);
  single_ = subs_.size() == 1 ? subs_.front()->mesh.get() : nullptr;
}

void MixedMesh::reroute_declined(const Sub& sub,
                                 const std::vector<std::vector<LabelledAddress>>& lists) {
  for (const auto& declined : sub.engine->declined()) {
    const int peer = declined.peer;
    const int a = std::min(rank_, peer);
    const int b = std::max(rank_, peer);
    // The same rule as the first choice, past this transport: both ends pick the same one,
    // and a later one in table order, which connects after this one on every rank.
    int next = choose(lists[a], lists[b], sub.transport.name);
    if (next < 0) {
      throw ConnectionError("rank " + std::to_string(rank_) + ": " + declined.why +
                            ", and no transport after " + sub.transport.name +
                            " can serve the pair of ranks " + std::to_string(a) + " and " +
                            std::to_string(b));
    }
    sub_of_peer_[peer] = next;
    // (`why` names the ranks already: "rank 1 of 3 cannot reserve ...".)
    std::string text = declined.why + "; ranks " + std::to_string(a) + " and " + std::to_string(b) +
                       " use " + subs_[next]->transport.name + " instead of " + sub.transport.name;
    if (declined.here) {
      LOG_WARN("context", text);
    } else {
      LOG_INFO("context", text);  // the rank that failed warns
    }
  }
}

void MixedMesh::warn_unavailable(const std::vector<std::vector<LabelledAddress>>& lists) const {
  for (const auto& [name, why] : unavailable_) {
    // The peers that offered it: with it, their pairs with this rank might have used it.
    std::vector<int> offered;
    std::vector<std::pair<std::string, std::vector<int>>> instead;  // transport, peers
    for (int p = 0; p < size_; ++p) {
      if (p == rank_ || find_part(lists[p], name) == nullptr || sub_of_peer_[p] < 0) continue;
      offered.push_back(p);
      const std::string& used = subs_[sub_of_peer_[p]]->transport.name;
      auto group = std::find_if(instead.begin(), instead.end(),
                                [&](const auto& entry) { return entry.first == used; });
      if (group == instead.end()) group = instead.insert(instead.end(), {used, {}});
      group->second.push_back(p);
    }
    if (offered.empty()) continue;  // nobody could have used it with this rank
    std::string text;
    for (const auto& [used, peers] : instead) {
      text += (text.empty() ? "" : ", ") + used + " for rank" + (peers.size() > 1 ? "s " : " ") +
              rank_ranges(peers);
    }
    LOG_WARN("context", "rank " << rank_ << ": " << name << " is unavailable on this rank (" << why
                                << "); its pairs with rank" << (offered.size() > 1 ? "s " : " ")
                                << rank_ranges(offered) << ", which offer " << name
                                << ", use the next transport instead: " << text);
  }
}

void MixedMesh::log_choice() const {
  std::string text;
  for (size_t i = 0; i < subs_.size(); ++i) {
    std::vector<int> ranks;
    for (int p = 0; p < size_; ++p) {
      if (sub_of_peer_[p] == static_cast<int>(i)) ranks.push_back(p);
    }
    text += (text.empty() ? "" : ", ") + subs_[i]->transport.name + " for rank" +
            (ranks.size() > 1 ? "s " : " ") + rank_ranges(ranks);
  }
  if (subs_.size() > 1) {
    LOG_INFO("context", "rank " << rank_ << ": " << text);
  } else {
    LOG_DEBUG("context", "rank " << rank_ << ": " << text);
  }
}

void MixedMesh::check_peer(const char* what, int peer) const {
  if (peer < 0 || peer >= size_ || peer == rank_) {
    throw InvalidArgument(std::string(what) + ": peer " + std::to_string(peer) +
                          " is not another rank of this context (rank " + std::to_string(rank_) +
                          " of " + std::to_string(size_) + ")");
  }
}

std::unique_ptr<Memory> MixedMesh::register_memory(void* data, size_t bytes, MemoryKind kind) {
  if (single_) return single_->register_memory(data, bytes, kind);
  auto memory = std::make_unique<MixedMemory>(data, bytes, kind);
  for (auto& sub : subs_) memory->parts.push_back(sub->mesh->register_memory(data, bytes, kind));
  return memory;
}

bool MixedMesh::registers_by_pointer() const { return single_ && single_->registers_by_pointer(); }

bool MixedMesh::can_register(MemoryKind kind) const {
  if (single_) return single_->can_register(kind);
  for (const auto& sub : subs_) {
    if (!sub->mesh->can_register(kind)) return false;
  }
  return true;
}

RequestPtr MixedMesh::send(int peer, uint64_t tag, const Memory& memory, size_t offset,
                           size_t bytes, uint64_t fingerprint) {
  if (single_) return single_->send(peer, tag, memory, offset, bytes, fingerprint);
  check_peer("send", peer);
  int index = sub_of_peer_[peer];
  Sub& sub = *subs_[index];
  const auto& parts = static_cast<const MixedMemory&>(memory).parts;
  RequestPtr inner = sub.mesh->send(peer, tag, *parts[index], offset, bytes, fingerprint);
  return std::make_shared<MixedRequest>(this, index, std::move(inner));
}

RequestPtr MixedMesh::recv(const std::vector<int>& peers, uint64_t tag, Memory& memory,
                           size_t offset, size_t bytes, uint64_t fingerprint) {
  if (single_) return single_->recv(peers, tag, memory, offset, bytes, fingerprint);
  if (peers.empty()) throw InvalidArgument("recv: the set of peers is empty");
  for (int peer : peers) check_peer("recv", peer);
  int index = sub_of_peer_[peers[0]];
  for (int peer : peers) {
    if (sub_of_peer_[peer] == index) continue;
    throw InvalidArgument(
        "recv on rank " + std::to_string(rank_) + " from any of ranks {" + rank_ranges(peers) +
        "}: rank " + std::to_string(peers[0]) + " is served by " + subs_[index]->transport.name +
        " and rank " + std::to_string(peer) + " by " + subs_[sub_of_peer_[peer]]->transport.name +
        "; a receive from any of several peers must name peers of one transport (posted on two, "
        "it could take two messages). Set GLOO_LITE_TRANSPORT to one transport for all pairs "
        "(e.g. GLOO_LITE_TRANSPORT=tcp), or receive from each peer separately");
  }
  Sub& sub = *subs_[index];
  auto& parts = static_cast<MixedMemory&>(memory).parts;
  RequestPtr inner = sub.mesh->recv(peers, tag, *parts[index], offset, bytes, fingerprint);
  return std::make_shared<MixedRequest>(this, index, std::move(inner));
}

void MixedMesh::cancel(const RequestPtr& request) {
  if (single_) return single_->cancel(request);
  auto& mixed = static_cast<MixedRequest&>(*request);
  subs_[mixed.sub_]->mesh->cancel(mixed.inner_);
}

void MixedMesh::cancel_failing(const RequestPtr& request) {
  if (single_) return single_->cancel_failing(request);
  auto& mixed = static_cast<MixedRequest&>(*request);
  subs_[mixed.sub_]->mesh->cancel_failing(mixed.inner_);
}

void MixedMesh::abort(const std::string& reason) {
  for (auto& sub : subs_) sub->mesh->abort(reason);
}

std::string MixedMesh::describe_peer(int peer) const {
  if (single_) return single_->describe_peer(peer);
  if (peer < 0 || peer >= size_ || peer == rank_) return "rank " + std::to_string(peer);
  const Sub& sub = *subs_[sub_of_peer_[peer]];
  return sub.mesh->describe_peer(peer) + " over " + sub.transport.name;
}

std::string MixedMesh::transport_of(int peer) const {
  if (peer < 0 || peer >= size_ || peer == rank_) return "";
  if (sub_of_peer_.empty()) return subs_.front()->transport.name;  // not connected
  return subs_[sub_of_peer_[peer]]->transport.name;
}

void MixedMesh::abort_relayed(const AbortCause& cause) {
  for (auto& sub : subs_) sub->mesh->abort_relayed(cause);
}

void MixedMesh::abort_with(ErrorKind kind, const std::string& reason) {
  for (auto& sub : subs_) sub->mesh->abort_with(kind, reason);
}

void MixedMesh::relay_abort(ErrorKind kind, const AbortCause& cause) {
  for (auto& sub : subs_) sub->mesh->relay_abort(kind, cause);
}

void MixedMesh::enter_collective(uint64_t tag, uint64_t fingerprint) {
  if (single_) return single_->enter_collective(tag, fingerprint);
  for (auto& sub : subs_) sub->mesh->enter_collective(tag, fingerprint);
}

}  // namespace gloo_lite::transport
