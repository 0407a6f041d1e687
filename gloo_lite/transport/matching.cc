// Posting and matching: receives posted per tag in posting order, messages matched against them
// per (peer, tag), the unexpected queue, and the rendezvous bookkeeping by id. The wire-level
// sending is the transport's (the send_* hooks); see matching.h.
#include "gloo_lite/transport/matching.h"

#include <algorithm>
#include <cstring>

#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"

namespace gloo_lite::transport {
namespace {

bool contains(const std::vector<int>& peers, int peer) {
  return std::find(peers.begin(), peers.end(), peer) != peers.end();
}

void check_range(const char* what, const Memory& memory, size_t offset, size_t bytes) {
  if (offset > memory.bytes() || bytes > memory.bytes() - offset) {
    throw InvalidArgument(std::string(what) + ": offset " + std::to_string(offset) + " + " +
                          std::to_string(bytes) + " bytes exceeds the registered region of " +
                          std::to_string(memory.bytes()) + " bytes");
  }
}

OpPtr take(std::unordered_map<uint64_t, OpPtr>& ops, uint64_t id) {
  auto found = ops.find(id);
  if (found == ops.end()) return nullptr;
  OpPtr op = std::move(found->second);
  ops.erase(found);
  return op;
}

}  // namespace

MatchingMesh::MatchingMesh(int rank, int size, const char* log_subsystem)
    : rank_(rank), size_(size), log_subsystem_(log_subsystem) {}

void MatchingMesh::check_peer(const char* what, int peer) const {
  if (peer < 0 || peer >= size_ || peer == rank_) {
    throw InvalidArgument(std::string(what) + ": peer " + std::to_string(peer) +
                          " is not another rank of this context (rank " + std::to_string(rank_) +
                          " of " + std::to_string(size_) + ")");
  }
}

uint64_t MatchingMesh::next_id() {
  if (++last_id_ == 0) ++last_id_;  // 0 means "no id"
  return last_id_;
}

RequestPtr MatchingMesh::send(int peer, uint64_t tag, const Memory& memory, size_t offset,
                              size_t bytes) {
  check_peer("send", peer);
  check_range("send", memory, offset, bytes);
  auto op = std::make_shared<Op>(this, Op::Kind::kSend, tag, memory, offset, bytes);
  op->peers_ = {peer};
  std::lock_guard<std::mutex> lock(mutex_);
  if (mesh_failure_.failed()) {
    fail_op(op, mesh_failure_);
  } else if (!peer_open(peer)) {
    fail_op(op, peer_failure(peer));
  } else if (bytes <= eager_bytes_ && memory.kind() == MemoryKind::kHost) {
    send_eager(op);
  } else {
    // Rendezvous: the payload waits in the sender's buffer until the receiver is ready.
    op->id_ = next_id();
    awaiting_clearance_[op->id_] = op;
    send_ready_to_send(*op);
  }
  return op;
}

RequestPtr MatchingMesh::recv(const std::vector<int>& peers, uint64_t tag, Memory& memory,
                              size_t offset, size_t bytes) {
  if (peers.empty()) throw InvalidArgument("recv: the set of peers is empty");
  for (int peer : peers) check_peer("recv", peer);
  check_range("recv", memory, offset, bytes);
  auto op = std::make_shared<Op>(this, Op::Kind::kRecv, tag, memory, offset, bytes);
  op->peers_ = peers;
  std::lock_guard<std::mutex> lock(mutex_);
  // Messages that already arrived are matched first, oldest first.
  auto queue = unexpected_.find(tag);
  if (queue != unexpected_.end()) {
    auto& messages = queue->second;
    for (auto it = messages.begin(); it != messages.end(); ++it) {
      if (!contains(peers, (*it)->peer)) continue;
      std::unique_ptr<Unexpected> message = std::move(*it);
      messages.erase(it);
      if (messages.empty()) unexpected_.erase(queue);
      deliver_unexpected(op, *message);
      return op;
    }
  }
  if (mesh_failure_.failed()) {
    fail_op(op, mesh_failure_);
    return op;
  }
  // A receive fails at once only when none of the peers it may match is left.
  int closed = -1;
  for (int peer : peers) {
    if (peer_open(peer)) {
      closed = -1;
      break;
    }
    closed = peer;
  }
  if (closed >= 0) {
    fail_op(op, peer_failure(closed));
    return op;
  }
  posted_[tag].push_back(op);
  return op;
}

OpPtr MatchingMesh::match_posted(int peer, uint64_t tag) {
  auto found = posted_.find(tag);
  if (found == posted_.end()) return nullptr;
  auto& ops = found->second;
  for (auto it = ops.begin(); it != ops.end(); ++it) {
    if (contains((*it)->peers_, peer)) {
      OpPtr op = *it;
      ops.erase(it);
      if (ops.empty()) posted_.erase(found);
      op->source_ = peer;
      return op;
    }
  }
  return nullptr;
}

void MatchingMesh::on_ready_to_send(int peer, uint64_t tag, uint64_t length, uint64_t send_id) {
  OpPtr op = match_posted(peer, tag);
  if (!op) {
    queue_unexpected(tag,
                     std::make_unique<Unexpected>(Unexpected{peer, true, length, send_id, {}}));
  } else if (op->bytes_ != length) {
    reject_size(peer, op, length);
  } else {
    clear_to_send(peer, op, send_id);
  }
}

void MatchingMesh::clear_to_send(int peer, const OpPtr& op, uint64_t send_id) {
  if (!peer_open(peer)) {
    fail_op(op, peer_failure(peer));
    return;
  }
  op->source_ = peer;
  op->id_ = next_id();
  awaiting_data_[op->id_] = op;
  send_clear_to_send(peer, op, send_id);
}

OpPtr MatchingMesh::take_send_awaiting_clearance(uint64_t send_id) {
  return take(awaiting_clearance_, send_id);
}

OpPtr MatchingMesh::take_receive_awaiting_data(uint64_t recv_id) {
  return take(awaiting_data_, recv_id);
}

bool MatchingMesh::receive_awaiting_data_from(int peer) const {
  for (const auto& [id, op] : awaiting_data_) {
    if (op->source_ == peer) return true;
  }
  return false;
}

void MatchingMesh::on_send_cancelled(int peer, uint64_t recv_id) {
  OpPtr op = take_receive_awaiting_data(recv_id);
  if (!op) return;
  fail_op(op, ErrorKind::kConnection,
          describe_peer(peer) + " cancelled its send of tag " + std::to_string(op->tag_) +
              " after this rank matched it (the sender probably timed out)");
}

std::unique_ptr<Unexpected> MatchingMesh::new_unexpected(int peer, uint64_t length) {
  auto message = std::make_unique<Unexpected>(Unexpected{peer, false, length, 0, {}});
  message->payload.resize(length);
  unexpected_bytes_ += length;
  return message;
}

void MatchingMesh::queue_unexpected(uint64_t tag, std::unique_ptr<Unexpected> message) {
  unexpected_[tag].push_back(std::move(message));
}

void MatchingMesh::deliver_unexpected(const OpPtr& op, Unexpected& message) {
  op->source_ = message.peer;
  if (message.length != op->bytes_) {
    reject_size(message.peer, op, message.length);
  } else if (message.rendezvous) {
    clear_to_send(message.peer, op, message.send_id);
  } else {
    if (message.length > 0) std::memcpy(op->data_, message.payload.data(), message.length);
    complete(op);
  }
  if (!message.rendezvous) {
    unexpected_bytes_ -= message.length;
    resume_held_messages();
  }
}

void MatchingMesh::reject_size(int peer, const OpPtr& op, uint64_t sent) {
  std::string text = "size mismatch: rank " + std::to_string(rank_) + " posted a receive of " +
                     std::to_string(op->bytes_) + " bytes for tag " + std::to_string(op->tag_) +
                     " from " + describe_peer(peer) + ", which sent " + std::to_string(sent) +
                     " bytes; both ranks must agree on the message size";
  fail_op(op, ErrorKind::kMismatch, text);
  if (!peer_open(peer)) return;
  LOG_WARN(log_subsystem_, text);
  send_mismatch_and_close(peer, *op, sent, text);
}

std::string MatchingMesh::sender_mismatch_text(int peer, uint64_t tag, uint64_t posted,
                                               uint64_t sent) const {
  return "size mismatch: rank " + std::to_string(rank_) + " sent " + std::to_string(sent) +
         " bytes with tag " + std::to_string(tag) + " to " + describe_peer(peer) +
         ", which posted a receive of " + std::to_string(posted) +
         " bytes; both ranks must agree on the message size";
}

}  // namespace gloo_lite::transport
