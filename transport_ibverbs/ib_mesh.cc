// The public side of an ibverbs mesh: posting, waiting (the waiter polls the CQ itself),
// cancelling, and failure. The wire protocol is in ib_protocol.cc, connecting in ib_connect.cc.
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"
#include "transport_ibverbs/ib_mesh.h"

namespace gloo_lite::ibverbs {
namespace {

// Receive buffers beyond the credited depth: credit-only messages use no credit, and at most
// two of them can be unprocessed at a receiver (one per half-depth of returned credits).
constexpr int kReserveSlots = 4;
// Send-queue entries beyond the buffers: RDMA writes of large messages (chunked by kMaxWrite).
constexpr int kExtraSendWr = 16;

}  // namespace

void throw_error(ErrorKind kind, const std::string& message) {
  switch (kind) {
    case ErrorKind::kTimeout:
      throw TimeoutError(message);
    case ErrorKind::kMismatch:
      throw MismatchError(message);
    case ErrorKind::kInvalid:
      throw InvalidArgument(message);
    case ErrorKind::kConnection:
    case ErrorKind::kNone:
      break;
  }
  throw ConnectionError(message);
}

bool Op::test() {
  std::lock_guard<std::mutex> lock(mesh_->mutex_);
  if (status_ == Status::kPending) mesh_->poll_cq();
  if (status_ == Status::kPending) return false;
  if (status_ == Status::kDone) return true;
  throw_error(error_kind_, error_);
}

IbMesh::IbMesh(std::shared_ptr<IbDevice> device, int rank, int size,
               const transport::MeshOptions& options)
    : device_(std::move(device)), rank_(rank), size_(size), tuning_(device_->tuning()) {
  slots_ = tuning_.depth + kReserveSlots;
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
  // Tell live peers we close cleanly: a byte on each lifeline, before the side channel's goodbye.
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
  }
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

std::string IbMesh::describe_op(const Op& op) const {
  std::string text = op.kind_ == Op::Kind::kSend ? "send to " : "receive from ";
  if (op.peers_.size() == 1) {
    text += describe_peer(op.peers_[0]);
  } else {
    text += "any of ranks {";
    for (size_t i = 0; i < op.peers_.size(); ++i)
      text += (i ? "," : "") + std::to_string(op.peers_[i]);
    text += "}";
  }
  return text + " (tag " + std::to_string(op.tag_) + ", " + std::to_string(op.bytes_) + " bytes)";
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

static void check_range(const char* what, const transport::Memory& memory, size_t offset,
                        size_t bytes) {
  if (offset > memory.bytes() || bytes > memory.bytes() - offset) {
    throw InvalidArgument(std::string(what) + ": offset " + std::to_string(offset) + " + " +
                          std::to_string(bytes) + " bytes exceeds the registered region of " +
                          std::to_string(memory.bytes()) + " bytes");
  }
}

void IbMesh::check_peer(const char* what, int peer) const {
  if (peer < 0 || peer >= size_ || peer == rank_) {
    throw InvalidArgument(std::string(what) + ": peer " + std::to_string(peer) +
                          " is not another rank of this context (rank " + std::to_string(rank_) +
                          " of " + std::to_string(size_) + ")");
  }
}

transport::RequestPtr IbMesh::send(int peer, uint64_t tag, const transport::Memory& memory,
                                   size_t offset, size_t bytes) {
  check_peer("send", peer);
  check_range("send", memory, offset, bytes);
  auto op = std::make_shared<Op>(this, Op::Kind::kSend, tag, static_cast<const IbMemory*>(&memory),
                                 offset, bytes);
  op->peers_ = {peer};
  std::lock_guard<std::mutex> lock(mutex_);
  Peer& pair = *peers_[peer];
  if (mesh_error_kind_ != ErrorKind::kNone) {
    fail_op(op, mesh_error_kind_, mesh_error_);
  } else if (!pair.open) {
    fail_op(op, pair.error_kind, pair.error);
  } else if (bytes <= eager_bytes_ && memory.kind() == transport::MemoryKind::kHost) {
    Outgoing message;
    message.header = {wire::Type::kEager, 0, tag, bytes, 0};
    message.op = op;
    queue(pair, std::move(message));
  } else {
    op->id_ = next_id_++;
    awaiting_cts_[op->id_] = op;
    queue_control(pair, wire::Type::kReadyToSend, tag, bytes, op->id_);
  }
  return op;
}

transport::RequestPtr IbMesh::recv(const std::vector<int>& peers, uint64_t tag,
                                   transport::Memory& memory, size_t offset, size_t bytes) {
  if (peers.empty()) throw InvalidArgument("recv: the set of peers is empty");
  for (int peer : peers) check_peer("recv", peer);
  check_range("recv", memory, offset, bytes);
  auto op = std::make_shared<Op>(this, Op::Kind::kRecv, tag, static_cast<const IbMemory*>(&memory),
                                 offset, bytes);
  op->peers_ = peers;
  std::lock_guard<std::mutex> lock(mutex_);
  auto queue = unexpected_.find(tag);
  if (queue != unexpected_.end()) {
    auto& messages = queue->second;
    for (auto it = messages.begin(); it != messages.end(); ++it) {
      if (std::find(peers.begin(), peers.end(), (*it)->peer) == peers.end()) continue;
      std::unique_ptr<Unexpected> message = std::move(*it);
      messages.erase(it);
      if (messages.empty()) unexpected_.erase(queue);
      deliver_unexpected(op, *message);
      return op;
    }
  }
  if (mesh_error_kind_ != ErrorKind::kNone) {
    fail_op(op, mesh_error_kind_, mesh_error_);
    return op;
  }
  const Peer* failed = nullptr;
  for (int peer : peers) {
    if (peers_[peer]->open) {
      failed = nullptr;
      break;
    }
    failed = peers_[peer].get();
  }
  if (failed != nullptr) {
    fail_op(op, failed->error_kind, failed->error);
    return op;
  }
  posted_[tag].push_back(op);
  return op;
}

void IbMesh::wait(const std::vector<transport::RequestPtr>& requests, const Deadline& deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(tuning_.spin_us);
  while (true) {
    const Op* failed = nullptr;
    bool all_done = true;
    for (const auto& request : requests) {
      const Op& op = static_cast<const Op&>(*request);
      if (op.status_ == Op::Status::kPending) all_done = false;
      if ((op.status_ == Op::Status::kFailed || op.status_ == Op::Status::kCancelled) && !failed) {
        failed = &op;
      }
    }
    if (failed != nullptr) {
      for (const auto& request : requests) cancel_locked(std::static_pointer_cast<Op>(request));
      if (failed->status_ == Op::Status::kCancelled) {
        throw Error("wait: " + describe_op(*failed) + " was cancelled");
      }
      throw_error(failed->error_kind_, failed->error_);
    }
    if (all_done) return;
    if (deadline.expired()) {
      std::string late;
      for (const auto& request : requests) {
        auto op = std::static_pointer_cast<Op>(request);
        if (op->status_ != Op::Status::kPending) continue;
        late += (late.empty() ? "" : "; ") + describe_op(*op);
        cancel_locked(op);
      }
      throw TimeoutError("rank " + std::to_string(rank_) + " timed out waiting for: " + late +
                         ". The peer may be stuck, slow, or waiting for something else; raise "
                         "the timeout (GLOO_LITE_TIMEOUT_MS) if it is only slow");
    }
    // Caller-driven progress: poll the CQ ourselves; sleep only when nothing is there (the
    // progress thread, woken by the completion channel, then notifies us).
    if (poll_cq()) continue;
    if (tuning_.busy_poll || std::chrono::steady_clock::now() < spin_until) {
      lock.unlock();
      std::this_thread::yield();
      lock.lock();
      continue;
    }
    auto slice = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
    completed_.wait_until(lock,
                          deadline.is_never() ? slice : std::min(slice, deadline.time_point()));
  }
}

void IbMesh::cancel(const transport::RequestPtr& request) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (cancel_locked(std::static_pointer_cast<Op>(request))) completed_.notify_all();
}

// After cancel the buffer is never touched again. A receive that already gave the sender its
// rkey, or a send whose RDMA write is posted, can only be stopped by stopping the queue pair:
// that pair then fails (see docs/transport-ibverbs.md).
bool IbMesh::cancel_locked(const OpPtr& op) {
  if (op->status_ != Op::Status::kPending) return false;
  if (op->kind_ == Op::Kind::kRecv) {
    auto found = posted_.find(op->tag_);
    if (found != posted_.end()) {
      found->second.remove(op);
      if (found->second.empty()) posted_.erase(found);
    }
    if (op->id_ != 0 && awaiting_data_.erase(op->id_) && op->source_ >= 0) {
      Peer& peer = *peers_[op->source_];
      op->status_ = Op::Status::kCancelled;
      fail_pair(peer, ErrorKind::kConnection,
                "rank " + std::to_string(rank_) + " cancelled a receive from " +
                    describe_peer(peer.rank) +
                    " after telling it where to write; the queue pair was closed so that the "
                    "buffer can no longer be written");
      return true;
    }
  } else {
    Peer& peer = *peers_[op->peers_[0]];
    if (op->writing_) {
      writing_.erase(op->id_);
      op->status_ = Op::Status::kCancelled;
      fail_pair(peer, ErrorKind::kConnection,
                "rank " + std::to_string(rank_) + " cancelled a send to " +
                    describe_peer(peer.rank) + " during its RDMA write; the queue pair was closed");
      return true;
    }
    if (op->id_ != 0) awaiting_cts_.erase(op->id_);
    for (auto it = peer.pending.begin(); it != peer.pending.end(); ++it) {
      if (it->op == op) {
        peer.pending.erase(it);
        break;
      }
    }
  }
  op->status_ = Op::Status::kCancelled;
  return true;
}

void IbMesh::complete(const OpPtr& op) {
  if (op->status_ != Op::Status::kPending) return;
  op->status_ = Op::Status::kDone;
  completed_.notify_all();
}

void IbMesh::fail_op(const OpPtr& op, ErrorKind kind, const std::string& message) {
  if (op->status_ != Op::Status::kPending) return;
  op->status_ = Op::Status::kFailed;
  op->error_kind_ = kind;
  op->error_ = message;
  completed_.notify_all();
}

void IbMesh::fail_pair(Peer& peer, ErrorKind kind, const std::string& message, bool keep_qp) {
  if (!peer.open) return;
  peer.open = false;
  peer.error_kind = kind;
  peer.error = message;
  int rank = peer.rank;
  bool rdma_active = false;
  for (auto& [id, op] : writing_) rdma_active = rdma_active || op->peers_[0] == rank;
  for (auto& [id, op] : awaiting_data_) rdma_active = rdma_active || op->source_ == rank;
  // A stopped QP flushes what is posted and refuses the peer's writes into our buffers.
  if (!keep_qp || rdma_active) move_to_error(peer.qp);
  for (auto& message_out : peer.pending) {
    if (message_out.op) fail_op(message_out.op, kind, message);
  }
  peer.pending.erase(std::remove_if(peer.pending.begin(), peer.pending.end(),
                                    [](const Outgoing& m) { return !m.overdraft; }),
                     peer.pending.end());
  auto fail_where = [&](std::unordered_map<uint32_t, OpPtr>& ops, bool by_source) {
    for (auto it = ops.begin(); it != ops.end();) {
      int who = by_source ? it->second->source_ : it->second->peers_[0];
      if (who == rank) {
        fail_op(it->second, kind, message);
        it = ops.erase(it);
      } else {
        ++it;
      }
    }
  };
  fail_where(awaiting_cts_, false);
  fail_where(writing_, false);
  fail_where(awaiting_data_, true);
  for (auto& [tag, ops] : posted_) {
    for (auto it = ops.begin(); it != ops.end();) {
      bool alive = false;
      for (int candidate : (*it)->peers_) alive = alive || peers_[candidate]->open;
      if (alive) {
        ++it;
      } else {
        fail_op(*it, kind, message);
        it = ops.erase(it);
      }
    }
  }
  for (auto& [tag, messages] : unexpected_) {
    messages.erase(std::remove_if(messages.begin(), messages.end(),
                                  [&](const std::unique_ptr<Unexpected>& m) {
                                    return m->peer == rank && m->rendezvous;
                                  }),
                   messages.end());
  }
  peer.held.clear();
}

void IbMesh::lose_pair(Peer& peer, const std::string& message) {
  if (!closed_) LOG_WARN("ibverbs", message);
  fail_pair(peer, ErrorKind::kConnection, message);
  fail_mesh(ErrorKind::kConnection, message);
}

void IbMesh::fail_mesh(ErrorKind kind, const std::string& message) {
  if (mesh_error_kind_ == ErrorKind::kNone) {
    mesh_error_kind_ = kind;
    mesh_error_ = message;
  }
  for (auto& peer : peers_) {
    if (peer && peer->open) fail_pair(*peer, kind, message);
  }
  for (auto& [tag, ops] : posted_) {
    for (auto& op : ops) fail_op(op, kind, message);
  }
  posted_.clear();
  for (auto* ops : {&awaiting_cts_, &writing_, &awaiting_data_}) {
    for (auto& [id, op] : *ops) fail_op(op, kind, message);
    ops->clear();
  }
}

void IbMesh::abort(const std::string& reason) {
  // The side channel carries the reason: it needs no credit and survives a stuck QP.
  control_->abort(reason);
  std::lock_guard<std::mutex> lock(mutex_);
  std::string message = "rank " + std::to_string(rank_) + " aborted: " + reason;
  LOG_WARN("ibverbs", message << "; telling its peers");
  fail_mesh(ErrorKind::kConnection, message);
}

}  // namespace gloo_lite::ibverbs
