// Connecting a mesh. Every rank pre-creates one RC queue pair per peer, so its address can
// already list them all: "ib1|<side channel host:port>|<gid hex>|<lid>|<mtu>|<psn>|<qpn per rank>".
// connect() then (1) connects the side TCP channel, whose handshake checks magic, version,
// context id and ranks exactly as the TCP transport does; (2) moves each QP to RTR and RTS;
// (3) waits until every peer's QPs are at least RTR (a byte over the side channel), so that no
// first message is lost to a QP still in INIT; (4) exchanges a hello over every QP that
// carries context id, both ranks and the size; (5) leaves a receive posted on the side channel
// per peer: it completes when the peer closes cleanly and fails when it dies or aborts.
#include <sstream>

#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"
#include "transport_ibverbs/ib_mesh.h"

namespace gloo_lite::ibverbs {
namespace {

constexpr uint64_t kReadyTag = 1;
constexpr uint64_t kLifelineTag = 2;

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream stream(text);
  while (std::getline(stream, part, separator)) parts.push_back(part);
  return parts;
}

std::string hex(const uint8_t* raw, size_t bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string text;
  for (size_t i = 0; i < bytes; ++i) {
    text += digits[raw[i] >> 4];
    text += digits[raw[i] & 15];
  }
  return text;
}

bool unhex(const std::string& text, uint8_t* raw, size_t bytes) {
  if (text.size() != 2 * bytes) return false;
  for (size_t i = 0; i < bytes; ++i) {
    unsigned value = 0;
    if (std::sscanf(text.c_str() + 2 * i, "%2x", &value) != 1) return false;
    raw[i] = static_cast<uint8_t>(value);
  }
  return true;
}

}  // namespace

std::string IbMesh::address() const {
  std::string text = "ib1|" + control_->address() + "|" + hex(device_->port().gid.raw, 16) + "|" +
                     std::to_string(device_->port().attr.lid) + "|" +
                     std::to_string(static_cast<int>(device_->port().attr.active_mtu)) + "|" +
                     std::to_string(psn_) + "|";
  for (int p = 0; p < size_; ++p) {
    text += (p ? "," : "") + std::to_string(peers_[p] ? peers_[p]->qp->qp_num : 0);
  }
  return text;
}

void IbMesh::connect(const std::vector<std::string>& addresses, uint64_t context_id,
                     const Deadline& deadline) {
  if (static_cast<int>(addresses.size()) != size_) {
    throw InvalidArgument("connect: " + std::to_string(addresses.size()) + " addresses for " +
                          std::to_string(size_) + " ranks");
  }
  context_id_ = context_id;
  // An empty address: another transport serves that peer (transport.h). Its queue pair goes
  // now, and the side channel skips it too.
  set_served(addresses);
  std::vector<std::string> control_addresses(size_);
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) {
      control_addresses[p] = control_->address();
    } else if (!served(p)) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (peers_[p] && peers_[p]->qp) ibv_destroy_qp(peers_[p]->qp);
      peers_[p].reset();
    } else {
      control_addresses[p] = read_address(*peers_[p], addresses[p]);
    }
  }
  control_->connect(control_addresses, context_id, deadline);  // (1)
  connect_queue_pairs(deadline);                               // (2), (3)
  exchange_hellos(context_id, deadline);                       // (4)
  // The device's progress thread reads and resets the lifelines under the mutex (every 50 ms,
  // check_lifelines), and this mesh is registered with it already.
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& peer : peers_) {  // (5)
    if (peer) {
      peer->lifeline = control_->recv(peer->rank, kLifelineTag, *lifeline_memory_,
                                      static_cast<size_t>(size_ + peer->rank), 1);
    }
  }
  int connected = 0;
  for (auto& peer : peers_) connected += peer ? 1 : 0;
  LOG_DEBUG("ibverbs", "rank " << rank_ << " connected " << connected << " queue pairs");
}

std::string IbMesh::read_address(Peer& peer, const std::string& address) {
  std::vector<std::string> fields = split(address, '|');
  std::vector<std::string> qpns =
      fields.size() == 7 ? split(fields[6], ',') : std::vector<std::string>{};
  bool ok = fields.size() == 7 && fields[0] == "ib1" && static_cast<int>(qpns.size()) == size_ &&
            unhex(fields[2], peer.remote.gid, 16);
  if (ok) {
    try {
      peer.remote.lid = static_cast<uint16_t>(std::stoul(fields[3]));
      peer.remote.mtu = static_cast<ibv_mtu>(std::stoi(fields[4]));
      peer.remote.psn = static_cast<uint32_t>(std::stoul(fields[5]));
      peer.remote.qpn = static_cast<uint32_t>(std::stoul(qpns[rank_]));
    } catch (const std::exception&) {
      ok = false;
    }
  }
  if (!ok) {
    throw InvalidArgument("rank " + std::to_string(peer.rank) + " published '" + address +
                          "', which is not an ibverbs address: every rank must use the same "
                          "transport (GLOO_LITE_TRANSPORT)");
  }
  peer.control_address = fields[1];
  return fields[1];
}

void IbMesh::connect_queue_pairs(const Deadline& deadline) {
  LocalPort local = device_->local_port(psn_);
  for (auto& peer : peers_) {
    if (peer) connect_rc_qp(peer->qp, local, peer->remote);
  }
  std::vector<transport::RequestPtr> ready;
  for (auto& peer : peers_) {
    if (!peer) continue;
    ready.push_back(control_->send(peer->rank, kReadyTag, *lifeline_memory_, 0, 1));
    ready.push_back(control_->recv(peer->rank, kReadyTag, *lifeline_memory_,
                                   static_cast<size_t>(size_ + peer->rank), 1));
  }
  control_->wait(ready, deadline);
}

void IbMesh::exchange_hellos(uint64_t context_id, const Deadline& deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (auto& peer : peers_) {
    if (!peer) continue;
    peer->open = true;
    queue_control(*peer, wire::Type::kHello, context_id,
                  uint64_t(static_cast<uint32_t>(rank_)) |
                      (uint64_t(static_cast<uint32_t>(peer->rank)) << 32),
                  static_cast<uint64_t>(size_));
  }
  while (true) {
    poll_cq();
    if (mesh_failure().failed())
      transport::throw_error(mesh_failure().kind, mesh_failure().message);
    std::string missing;
    for (auto& peer : peers_) {
      if (peer && !peer->hello)
        missing += (missing.empty() ? "" : ", ") + std::to_string(peer->rank);
    }
    if (missing.empty()) return;
    if (deadline.expired()) {
      throw TimeoutError("rank " + std::to_string(rank_) +
                         ": the ibverbs handshake (hello over each queue pair) never completed "
                         "with ranks " +
                         missing +
                         "; check the GID choice (GLOO_LITE_IB_GID_INDEX) "
                         "and that every rank reaches the same RDMA fabric");
    }
    auto slice = std::chrono::steady_clock::now() + std::chrono::milliseconds(10);
    completed_.wait_until(lock, std::min(slice, deadline.time_point()));
  }
}

void IbMesh::check_lifelines() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return;
  for (auto& peer : peers_) {
    if (!peer || !peer->lifeline) continue;
    try {
      if (!peer->lifeline->test()) continue;
      peer->lifeline = nullptr;
      // The peer said goodbye only after its last sends completed (drain_posted_sends), so
      // their data is already in our completion queue: take it in before the pair closes,
      // else a receive that has its data would fail with the goodbye.
      poll_cq();
      if (!peer->open) continue;
      take_in_held_past_bound(*peer);
      fail_pair(*peer, ErrorKind::kConnection,
                describe_peer(peer->rank) + " has closed this context (clean shutdown)");
    } catch (const MismatchError& e) {
      // A peer found a collective mismatch: raise it as one here too.
      peer->lifeline = nullptr;
      if (!mesh_failure().failed()) lose_pair(*peer, e.what(), ErrorKind::kMismatch);
    } catch (const Error& e) {
      peer->lifeline = nullptr;
      // The side channel's message names the peer that died or aborted, and why.
      if (!mesh_failure().failed()) lose_pair(*peer, e.what());
    }
  }
}

}  // namespace gloo_lite::ibverbs
