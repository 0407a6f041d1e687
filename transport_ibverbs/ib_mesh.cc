// The ibverbs mesh: its buffers and queue pairs, waiting (the waiter polls the CQ itself) and
// failure. Posting and matching are the shared engine's (matching.h); the wire protocol is in
// ib_protocol.cc, cancel in ib_cancel.cc, connecting in ib_connect.cc.
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/transport/names.h"
#include "transport_ibverbs/ib_mesh.h"

namespace gloo_lite::ibverbs {
namespace {

// Receive buffers beyond the credited depth: credit-only messages use no credit, and at most
// two of them can be unprocessed at a receiver (one per half-depth of returned credits).
constexpr int kReserveSlots = 4;
// Send-queue entries beyond the buffers: RDMA writes of large messages (chunked by kMaxWrite).
constexpr int kExtraSendWr = 16;

}  // namespace

IbMesh::IbMesh(std::shared_ptr<IbDevice> device, int rank, int size,
               const transport::MeshOptions& options)
    : MatchingMesh(rank, size, transport::kIbverbsTransport),
      device_(std::move(device)),
      tuning_(device_->tuning()) {
  slots_ = tuning_.depth + kReserveSlots;
  // Yielding whatever the host's load: between polls the mutex is free for the progress thread.
  wait_policy_.configure(tuning_.spin, /*yield=*/true);
  size_t eager = options.eager_bytes;
  if (eager != 0 && eager + wire::kHeaderBytes > tuning_.slot_bytes) {
    tuning_.slot_bytes = (eager + wire::kHeaderBytes + 4095) / 4096 * 4096;
  }
  eager_bytes_ = eager != 0 ? eager : tuning_.slot_bytes - wire::kHeaderBytes;
  unexpected_limit_ = options.unexpected_bytes
                          ? options.unexpected_bytes
                          : static_cast<size_t>(knob_int("GLOO_LITE_TCP_UNEXPECTED_BYTES"));
  psn_ = std::random_device{}() & 0xffffff;
  control_ = device_->control_device().create_mesh(rank, size, {});
  lifeline_bytes_.assign(static_cast<size_t>(size) * 2, 0);
  lifeline_memory_ = control_->register_memory(lifeline_bytes_.data(), lifeline_bytes_.size());

  int peers = size - 1;
  int cq_entries = std::max(1, peers * (2 * slots_ + kExtraSendWr));
  cq_ = ibv_create_cq(device_->context(), cq_entries, this, device_->channel(), 0);
  if (cq_ == nullptr)
    throw Error("ibverbs: ibv_create_cq of " + std::to_string(cq_entries) + " entries failed");
  ibv_req_notify_cq(cq_, 0);
  buffers_bytes_ = static_cast<size_t>(size) * 2 * slots_ * tuning_.slot_bytes;
  buffers_.reset(new uint8_t[buffers_bytes_]);
  buffers_mr_ = ibv_reg_mr(device_->pd(), buffers_.get(), buffers_bytes_, IBV_ACCESS_LOCAL_WRITE);
  if (buffers_mr_ == nullptr) {
    ibv_destroy_cq(cq_);
    throw Error("ibverbs: registering " + std::to_string(buffers_bytes_) +
                " bytes of eager buffers failed: " + std::strerror(errno) +
                " (raise the locked-memory limit, `ulimit -l`)");
  }
  peers_.resize(size);
  for (int p = 0; p < size; ++p) {
    if (p == rank) continue;
    auto peer = std::make_unique<Peer>();
    peer->rank = p;
    peer->qp =
        create_rc_qp(device_->pd(), cq_, slots_ + kExtraSendWr, slots_, device_->port().port);
    for (int s = 0; s < slots_; ++s) peer->free_send_slots.push_back(slots_ - 1 - s);
    peers_[p] = std::move(peer);
    for (int s = 0; s < slots_; ++s) repost(*peers_[p], s, false);
  }
  device_->add_mesh(this);
}

IbMesh::~IbMesh() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
  }
  drain_posted_sends(Deadline::after(std::chrono::seconds(2)));
  // Tell live peers we close cleanly: a byte on each lifeline, before the side channel's goodbye.
  try {
    std::vector<transport::RequestPtr> sends;
    for (auto& peer : peers_) {
      if (peer && peer->open)
        sends.push_back(control_->send(peer->rank, 2, *lifeline_memory_, 0, 1));
    }
    control_->wait(sends, Deadline::after(std::chrono::milliseconds(500)));
  } catch (const Error&) {
    // Best effort: a peer that is gone needs no goodbye.
  }
  device_->remove_mesh(this);
  control_.reset();
  for (auto& peer : peers_) {
    if (peer && peer->qp) ibv_destroy_qp(peer->qp);
  }
  ibv_destroy_cq(cq_);
  ibv_dereg_mr(buffers_mr_);
}

// An eager send completes for its caller once copied into a send buffer and posted, so the
// peer may not have it yet. Destroying the QP now would drop it, and the lifeline byte (on
// another connection) could overtake it. Once every posted send has completed, the peer's HCA
// has acknowledged it: the data is in the peer's memory before the goodbye leaves. Bounded: a
// peer that is gone flushes or never answers, and then nothing is owed to it.
void IbMesh::drain_posted_sends(const Deadline& deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  // Closed pairs count too (a mismatch notice may still be on its way on a kept QP; a stopped QP
  // flushes at once, as does that of a pair whose lifeline the progress thread already took),
  // except those whose lifeline reports a goodbye or a death now: nothing is owed to them, and
  // their QP would only retry until it gives up.
  auto owed = [&](Peer& peer) {
    if (peer.send_queue_used <= 0) return false;
    try {
      return !peer.lifeline || !peer.lifeline->test();
    } catch (const Error&) {
      return false;  // the side channel says it is gone
    }
  };
  auto in_flight = [&] {
    for (auto& peer : peers_) {
      if (peer && owed(*peer)) return true;
    }
    return false;
  };
  while (in_flight() && !deadline.expired()) {
    if (poll_cq()) continue;
    auto slice = std::chrono::steady_clock::now() + std::chrono::milliseconds(1);
    completed_.wait_until(lock, std::min(slice, deadline.time_point()));
  }
}

uint8_t* IbMesh::recv_slot(int peer, int slot) const {
  return buffers_.get() + (static_cast<size_t>(peer) * 2 * slots_ + slot) * tuning_.slot_bytes;
}

uint8_t* IbMesh::send_slot(int peer, int slot) const {
  return buffers_.get() +
         (static_cast<size_t>(peer) * 2 * slots_ + slots_ + slot) * tuning_.slot_bytes;
}

int32_t IbMesh::credits(const Peer& peer) const {
  return static_cast<int32_t>(static_cast<uint32_t>(tuning_.depth) + peer.peer_reposted -
                              peer.data_sent);
}

std::string IbMesh::describe_peer(int peer) const {
  std::string text = "rank " + std::to_string(peer);
  if (peer >= 0 && peer < size_ && peers_[peer] && !peers_[peer]->control_address.empty()) {
    text += " (" + peers_[peer]->control_address + ", " + device_->port().device + " qpn " +
            std::to_string(peers_[peer]->remote.qpn) + ")";
  }
  return text;
}

// GPUDirect hook: device memory is registered directly when the peer-memory module is loaded
// (ibv_reg_mr then pins GPU pages); otherwise the caller must stage through host memory.
static bool peer_memory_available() {
  struct stat info;
  return ::stat("/sys/module/nvidia_peermem", &info) == 0 ||
         ::stat("/sys/kernel/mm/memory_peers/nv_mem/version", &info) == 0;
}

std::unique_ptr<transport::Memory> IbMesh::register_memory(void* data, size_t bytes,
                                                           transport::MemoryKind kind) {
  if (kind != transport::MemoryKind::kHost && !peer_memory_available()) {
    throw InvalidArgument(
        "the ibverbs transport registers CUDA memory only with GPUDirect RDMA (the nvidia_peermem "
        "module); stage device memory through a host buffer");
  }
  if (data == nullptr && bytes > 0) throw InvalidArgument("register_memory: null buffer");
  return std::make_unique<IbMemory>(data, bytes, kind, &device_->cache());
}

bool IbMesh::can_register(transport::MemoryKind kind) const {
  return kind == transport::MemoryKind::kHost || peer_memory_available();
}

bool IbMesh::wait_until(const std::vector<transport::RequestPtr>& requests,
                        const Deadline& deadline, const Deadline& until) {
  const Deadline bound = until.earlier(deadline);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!finished(requests, deadline)) {
    if (bound.expired() && !deadline.expired()) return false;  // `until` came first
    // Caller-driven progress: poll the CQ ourselves; sleep only when nothing is there (the
    // progress thread, woken by the completion channel, then notifies us). The policy's polls
    // (GLOO_LITE_IB_SPIN_US) yield with the mutex free, so that the progress thread may serve
    // the CQ meanwhile; its sleep looks once more under the mutex before it waits, so that no
    // notification falls between the two.
    if (poll_cq()) continue;
    WaitPolicy policy = wait_policy_;  // a copy per waiter (several threads may wait)
    lock.unlock();
    auto done = [&] { return poll_cq() || finished(requests, deadline); };
    policy.wait(
        [&] {
          lock.lock();
          const bool ready = done();
          lock.unlock();
          return ready;
        },
        [&](const Deadline& slice_end) {
          lock.lock();
          if (!done()) {
            auto slice = Deadline::Clock::now() + std::chrono::milliseconds(100);
            completed_.wait_until(
                lock, slice_end.is_never() ? slice : std::min(slice, slice_end.time_point()));
          }
          lock.unlock();
          return false;  // the loop looks again
        },
        bound);
    lock.lock();
    wait_policy_ = policy;
  }
  return true;
}

void IbMesh::fail_pair(Peer& peer, ErrorKind kind, const std::string& message, bool keep_qp) {
  if (!peer.open) return;
  peer.open = false;
  peer.failure = {kind, message};
  int rank = peer.rank;
  bool rdma_active = receive_awaiting_data_from(rank);
  for (auto& [id, op] : writing_) rdma_active = rdma_active || op->peers_[0] == rank;
  for (auto it = cancelling_.begin(); it != cancelling_.end();) {
    rdma_active = rdma_active || it->second == rank;
    it = it->second == rank ? cancelling_.erase(it) : std::next(it);
  }
  // A stopped QP flushes what is posted and refuses the peer's writes into our buffers.
  if (!keep_qp || rdma_active) move_to_error(peer.qp);
  for (auto& message_out : peer.pending) {
    if (message_out.op) fail_op(message_out.op, kind, message);
  }
  peer.pending.erase(std::remove_if(peer.pending.begin(), peer.pending.end(),
                                    [](const Outgoing& m) { return !m.overdraft; }),
                     peer.pending.end());
  for (auto it = writing_.begin(); it != writing_.end();) {
    if (it->second->peers_[0] == rank) {
      fail_op(it->second, kind, message);
      it = writing_.erase(it);
    } else {
      ++it;
    }
  }
  fail_operations_of_peer(rank, kind, message);
  peer.held.clear();
}

void IbMesh::lose_pair(Peer& peer, const std::string& message, ErrorKind kind) {
  if (!closed_) LOG_WARN("ibverbs", message);
  fail_pair(peer, kind, message);
  fail_mesh(kind, message);
}

void IbMesh::fail_mesh(ErrorKind kind, const std::string& message) {
  for (auto& peer : peers_) {
    if (peer && peer->open) fail_pair(*peer, kind, message);
  }
  for (auto& [id, op] : writing_) fail_op(op, kind, message);
  writing_.clear();
  fail_all_operations(kind, message);
}

void IbMesh::abort(const std::string& reason) {
  transport::AbortCause cause;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // A peer's cause is named as that peer's (abort_cause.h), on the side channel too.
    cause = first_cause_.forward(rank_, mesh_failure(), reason);
  }
  // The side channel carries the cause: it needs no credit and survives a stuck QP.
  control_->abort_relayed(cause);
  std::lock_guard<std::mutex> lock(mutex_);
  std::string message = abort_message(cause);
  LOG_INFO("ibverbs", message << "; telling its peers");  // the context warns once
  fail_mesh(ErrorKind::kConnection, message);
}

// Lock order: this mesh's mutex, then the side channel's (as check_lifelines takes them).
void IbMesh::abort_locked(ErrorKind kind, const std::string& reason) {
  const transport::AbortCause cause = first_cause_.forward(rank_, mesh_failure(), reason);
  if (auto* control = dynamic_cast<transport::MatchingMesh*>(control_.get())) {
    control->relay_abort(kind, cause);
  } else if (control_) {
    control_->abort_relayed(cause);
  }
  std::string message = abort_message(cause);
  LOG_INFO("ibverbs", message << "; telling its peers");
  fail_mesh(kind, message);
}

}  // namespace gloo_lite::ibverbs
