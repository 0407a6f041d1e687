// Posting and matching: receives posted per tag in posting order, messages matched against them
// per (peer, tag), the unexpected queue, and the rendezvous bookkeeping by id. The wire-level
// sending is the transport's (the send_* hooks); see matching.h.
#include "gloo_lite/transport/matching.h"
#include "gloo_lite/transport/tag_space.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
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

// Set once by the layer that makes fingerprints, read when a mismatch is reported.
std::atomic<std::string (*)(uint64_t, uint64_t)> describe_call{nullptr};
std::atomic<std::string (*)(uint64_t, uint64_t)> call_difference{nullptr};

std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(value));
  return text;
}

std::string describe_fingerprint(uint64_t fingerprint, uint64_t tag) {
  auto describe = describe_call.load(std::memory_order_acquire);
  if (describe != nullptr) return describe(fingerprint, tag);
  return "call " + hex(fingerprint) + " (" + tags::describe(tag) + ")";
}

OpPtr take(std::unordered_map<uint64_t, OpPtr>& ops, uint64_t id) {
  auto found = ops.find(id);
  if (found == ops.end()) return nullptr;
  OpPtr op = std::move(found->second);
  ops.erase(found);
  return op;
}

}  // namespace

void set_call_describer(const CallDescriber& describer) {
  describe_call.store(describer.describe, std::memory_order_release);
  call_difference.store(describer.difference, std::memory_order_release);
}

MatchingMesh::MatchingMesh(int rank, int size, const char* log_subsystem)
    : rank_(rank), size_(size), log_subsystem_(log_subsystem) {}

MatchingMesh::~MatchingMesh() {
  if (!unsurfaced_.empty()) {
    LOG_WARN(log_subsystem_, unsurfaced_
                                 << " (it reached this rank after its last call on the "
                                    "context had returned; the context was closed with it)");
  }
}

void MatchingMesh::check_peer(const char* what, int peer) const {
  if (peer < 0 || peer >= size_ || peer == rank_) {
    throw InvalidArgument(std::string(what) + ": peer " + std::to_string(peer) +
                          " is not another rank of this context (rank " + std::to_string(rank_) +
                          " of " + std::to_string(size_) + ")");
  }
  if (!served(peer)) {
    throw InvalidArgument(std::string(what) + ": rank " + std::to_string(peer) +
                          " is not served by this " + log_subsystem_ + " mesh of rank " +
                          std::to_string(rank_) +
                          " (its pairs use another transport; post through the context's mesh)");
  }
}

void MatchingMesh::set_served(const std::vector<std::string>& addresses) {
  served_.assign(static_cast<size_t>(size_), false);
  for (int peer = 0; peer < size_ && peer < static_cast<int>(addresses.size()); ++peer) {
    served_[peer] = peer != rank_ && !addresses[peer].empty();
  }
}

std::string MatchingMesh::transport_of(int peer) const {
  if (peer < 0 || peer >= size_ || peer == rank_ || !served(peer)) return "";
  return log_subsystem_;
}

uint64_t MatchingMesh::next_id() {
  if (++last_id_ == 0) ++last_id_;  // 0 means "no id"
  return last_id_;
}

RequestPtr MatchingMesh::send(int peer, uint64_t tag, const Memory& memory, size_t offset,
                              size_t bytes, uint64_t fingerprint) {
  check_peer("send", peer);
  check_range("send", memory, offset, bytes);
  auto op = std::make_shared<Op>(this, Op::Kind::kSend, tag, memory, offset, bytes, fingerprint);
  op->peers_ = {peer};
  std::lock_guard<std::mutex> lock(mutex_);
  take_in_notice(peer);
  if (mesh_failure_.failed()) {
    fail_op(op, mesh_failure_);
    failure_raised();
  } else if (!peer_open(peer)) {
    fail_op(op, peer_failure(peer));
    failure_raised();
  } else if (bytes <= eager_limit(peer) && memory.kind() == MemoryKind::kHost) {
    send_eager(op);
  } else {
    // Rendezvous: the payload waits in the sender's buffer until the receiver is ready.
    op->id_ = next_id();
    awaiting_clearance_[op->id_] = op;
    send_ready_to_send(*op);
  }
  // After the message left: when this rank finds a stray message of the peer's call here and
  // aborts, the peer still gets this rank's message ahead of the abort and finds the mismatch
  // itself (so a peer that only closes the context can still warn of it).
  enter_call(tag, fingerprint);
  return op;
}

void MatchingMesh::enter_collective(uint64_t tag, uint64_t fingerprint) {
  // The 8-byte calls in a segment take about a microsecond: while nothing waits to be judged
  // (no message queued, none arrived unread: shm only), no lock. The call is then not entered;
  // the next one that finds something enters its own number and judges from the last number
  // entered on (CallHistory's `previous`), which covers the calls skipped (a message of one of
  // them reads as a call this rank has passed, without this rank's own call of that number).
  if (!judge_next_.load(std::memory_order_acquire) && !arrivals_pending()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!mesh_failure_.failed()) {
    take_in_arrivals();
    enter_call(tag, fingerprint);
  }
  // A stray message found now (or before, by a call that posted nothing here): this call is
  // the one to raise it, as a receive posted after it would (recv). Other failures reach the
  // call its own way (a host segment's abort record, a closed peer there).
  if (mesh_failure_.kind == ErrorKind::kMismatch) {
    failure_raised();
    throw_error(mesh_failure_.kind, mesh_failure_.message);
  }
  if (unexpected_entries_ == 0) judge_next_.store(false, std::memory_order_relaxed);
}

RequestPtr MatchingMesh::recv(const std::vector<int>& peers, uint64_t tag, Memory& memory,
                              size_t offset, size_t bytes, uint64_t fingerprint) {
  if (peers.empty()) throw InvalidArgument("recv: the set of peers is empty");
  for (int peer : peers) check_peer("recv", peer);
  check_range("recv", memory, offset, bytes);
  auto op = std::make_shared<Op>(this, Op::Kind::kRecv, tag, memory, offset, bytes, fingerprint);
  op->peers_ = peers;
  std::lock_guard<std::mutex> lock(mutex_);
  for (int peer : peers) take_in_notice(peer);
  enter_call(tag, fingerprint);
  if (mesh_failure_.failed() && mesh_failure_.kind == ErrorKind::kMismatch) {
    // After a collective mismatch nothing that waits in the queue may match a receive.
    fail_op(op, mesh_failure_);
    failure_raised();
    return op;
  }
  if (match_unexpected(op)) return op;
  if (mesh_failure_.failed()) {
    fail_op(op, mesh_failure_);
    failure_raised();
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
    failure_raised();
    return op;
  }
  posted_[tag].push_back(op);
  return op;
}

bool MatchingMesh::match_unexpected(const OpPtr& op) {
  // Messages that already arrived are matched first, oldest first.
  auto queue = unexpected_.find(op->tag_);
  if (queue == unexpected_.end()) return false;
  auto& messages = queue->second;
  for (auto it = messages.begin(); it != messages.end(); ++it) {
    if (!contains(op->peers_, (*it)->peer)) continue;
    std::unique_ptr<Unexpected> message = std::move(*it);
    messages.erase(it);
    if (messages.empty()) unexpected_.erase(queue);
    deliver_unexpected(op, *message);
    return true;
  }
  // A message under this tag from another peer belongs to this call too, if the ranks agree.
  for (const auto& message : messages) {
    if (message->fingerprint == kUnchecked || op->fingerprint_ == kUnchecked) continue;
    if (message->fingerprint != op->fingerprint_) {
      int peer = message->peer;
      uint64_t theirs = message->fingerprint;
      reject_call(peer, op, theirs);
      return true;
    }
    break;  // the others came from the same call as this one
  }
  return false;
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

bool MatchingMesh::same_call(int peer, const OpPtr& op, uint64_t fingerprint) {
  if (fingerprint == op->fingerprint_ || fingerprint == kUnchecked ||
      op->fingerprint_ == kUnchecked) {
    return true;
  }
  reject_call(peer, op, fingerprint);
  return false;
}

std::string MatchingMesh::call_mismatch_text(int peer, uint64_t mine, uint64_t my_tag,
                                             uint64_t theirs, uint64_t tag,
                                             const std::string& how) const {
  std::string text = "collective mismatch: rank " + std::to_string(rank_) + " in " +
                     describe_fingerprint(mine, my_tag) + " " + how + " " + describe_peer(peer) +
                     " in " + describe_fingerprint(theirs, tag);
  auto difference = call_difference.load(std::memory_order_acquire);
  if (difference != nullptr && mine != theirs && mine != kUnchecked)
    text += "; the calls differ in " + difference(mine, theirs);
  return text +
         ". Every rank must call the same collectives in the same order with the same type, op, "
         "root, counts and algorithm (GLOO_LITE_CHECK=1 compares every pair before each call)";
}

void MatchingMesh::reject_call(int peer, const OpPtr& op, uint64_t fingerprint) {
  std::string text = call_mismatch_text(peer, op->fingerprint_, op->tag_, fingerprint, op->tag_,
                                        "received a message from");
  fail_op(op, ErrorKind::kMismatch, text);
  LOG_INFO(log_subsystem_, text);  // the context warns once, when it reaches a call
  // Neither rank can know what the other sends next: the context is over, and every peer
  // learns why from this rank rather than waiting for its deadline.
  abort_locked(ErrorKind::kMismatch, text);
}

bool MatchingMesh::reject_if_stray(int peer, uint64_t tag, uint64_t fingerprint) {
  CallHistory::Verdict verdict = calls_.judge(tag, fingerprint);
  if (verdict != CallHistory::Verdict::kPassed && verdict != CallHistory::Verdict::kOtherCall) {
    return false;
  }
  uint64_t mine = calls_.fingerprint_of(tag);
  std::string text;
  if (verdict == CallHistory::Verdict::kOtherCall) {
    text = call_mismatch_text(peer, mine, tag, fingerprint, tag, "received a message from");
  } else {
    // This rank has moved on to a later call: name the one it is in, and its own call of the
    // message's number when it still knows it.
    uint64_t latest = calls_.latest_tag(tag);
    std::string now =
        "(now in " + describe_fingerprint(calls_.fingerprint_of(latest), latest) + ")";
    if (mine == kUnchecked) {
      text = call_mismatch_text(peer, calls_.fingerprint_of(latest), latest, fingerprint, tag,
                                "received a message of a call it has passed from");
    } else if (mine == fingerprint) {
      text = call_mismatch_text(peer, mine, tag, fingerprint, tag,
                                now +
                                    " received, after that call had returned, a message of "
                                    "it that the call never took, from");
    } else {
      text = call_mismatch_text(peer, mine, tag, fingerprint, tag,
                                now +
                                    " received, after that call had returned, a message "
                                    "that none of its calls will receive, from");
    }
  }
  LOG_INFO(log_subsystem_, text);  // the context warns when it reaches a call, else ~MatchingMesh
  // No receive is failed here: the calls of this rank learn it through the mesh's failure,
  // this one if it still waits, else the next. Until one raises it, the destructor owes a
  // warning (a rank that only closes the context does not lose the diagnosis).
  owe_warning(text);
  // Found while closing (or after another failure): only the warning is left to give.
  if (!mesh_failure_.failed()) abort_locked(ErrorKind::kMismatch, text);
  return true;
}

void MatchingMesh::reject_stray_messages(uint64_t tag, uint64_t previous) {
  if (mesh_failure_.failed()) return;
  // The mesh is aborted at the first stray; the queue stays as it is (nothing matches it now).
  auto reject_any = [this](uint64_t queued_tag, const auto& messages) {
    for (const auto& message : messages) {
      if (reject_if_stray(message->peer, queued_tag, message->fingerprint)) return true;
    }
    return false;
  };
  // Every message was judged when it arrived; entering this call changes the verdict only of
  // those under the numbers from the previous call's to this one's. Looking those up keeps a
  // call O(1) when a fast peer is far ahead (a root that ran 800,000 broadcasts ahead made a
  // scan of the whole queue per call quadratic); a first call, or a long gap, scans instead.
  const uint16_t stream = tags::stream_of(tag);
  const uint64_t gap = previous == CallHistory::kNone
                           ? ~uint64_t{0}
                           : (tags::sequence_of(tag) - previous) & tags::kSequenceMask;
  if (gap < unexpected_.size()) {
    for (uint64_t i = 0; i <= gap; ++i) {
      uint64_t queued_tag = tags::collective(stream, (previous + i) & tags::kSequenceMask);
      auto found = unexpected_.find(queued_tag);
      if (found != unexpected_.end() && reject_any(queued_tag, found->second)) return;
    }
    return;
  }
  for (const auto& [queued_tag, messages] : unexpected_) {
    if (tags::stream_of(queued_tag) == stream && reject_any(queued_tag, messages)) return;
  }
}

void MatchingMesh::on_ready_to_send(int peer, uint64_t tag, uint64_t length, uint64_t send_id,
                                    uint64_t fingerprint) {
  OpPtr op = match_posted(peer, tag);
  if (!op) {
    // Charged (its bookkeeping) but never held back: its sender's buffer holds the payload.
    auto message =
        std::make_unique<Unexpected>(Unexpected{peer, true, length, send_id, fingerprint, {}});
    charge(*message);
    queue_unexpected(tag, std::move(message));
  } else if (!same_call(peer, op, fingerprint)) {
    return;
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

OpPtr MatchingMesh::receive_awaiting_data(uint64_t recv_id) const {
  auto it = awaiting_data_.find(recv_id);
  return it == awaiting_data_.end() ? nullptr : it->second;
}

bool MatchingMesh::receive_awaiting_data_from(int peer) const {
  for (const auto& [id, op] : awaiting_data_) {
    if (op->source_ == peer) return true;
  }
  return false;
}

void MatchingMesh::on_send_cancelled(int peer, uint64_t recv_id, bool failing) {
  if (failing) return;  // the transport delivers nothing more to it
  OpPtr op = take_receive_awaiting_data(recv_id);
  if (!op) return;
  fail_op(op, ErrorKind::kConnection,
          describe_peer(peer) + " cancelled its send of " + tags::describe(op->tag_) +
              " after this rank matched it (the sender probably timed out)");
}

std::unique_ptr<Unexpected> MatchingMesh::new_unexpected(int peer, uint64_t length,
                                                         uint64_t fingerprint) {
  auto message = std::make_unique<Unexpected>(Unexpected{peer, false, length, 0, fingerprint, {}});
  message->payload.resize(length);
  charge(*message);
  return message;
}

void MatchingMesh::queue_unexpected(uint64_t tag, std::unique_ptr<Unexpected> message) {
  // A tag is one call: a receive posted under it for another peer is of the same call as this
  // message if the ranks agree. This catches a disagreement where no message of the odd call
  // would ever match (say a broadcast's leaf among ranks in an allreduce).
  auto posted = posted_.find(tag);
  if (posted != posted_.end() && message->fingerprint != kUnchecked) {
    for (const OpPtr& candidate : posted->second) {
      if (candidate->fingerprint_ == kUnchecked) continue;
      if (candidate->fingerprint_ != message->fingerprint) {
        release(*message);
        OpPtr op = candidate;  // reject_call clears posted_
        reject_call(message->peer, op, message->fingerprint);
        return;
      }
      break;
    }
  }
  // No receive of this tag is posted: this rank may have finished the call, or passed it.
  if (reject_if_stray(message->peer, tag, message->fingerprint)) {
    release(*message);
    return;
  }
  unexpected_[tag].push_back(std::move(message));
}

void MatchingMesh::deliver_unexpected(const OpPtr& op, Unexpected& message) {
  op->source_ = message.peer;
  if (!same_call(message.peer, op, message.fingerprint)) {
    // The mesh is aborted; nothing is copied.
  } else if (message.length != op->bytes_) {
    reject_size(message.peer, op, message.length);
  } else if (message.rendezvous) {
    clear_to_send(message.peer, op, message.send_id);
  } else {
    if (message.length > 0) std::memcpy(op->data_, message.payload.data(), message.length);
    complete(op);
  }
  release(message);
  resume_held_messages();
}

std::string MatchingMesh::unexpected_bound_note() const {
  // Room left for the largest eager message: nothing can be held back.
  if (unexpected_bytes_ == 0 || unexpected_bytes_ +
                                        std::max(eager_bytes_, eager_bytes_across_hosts_) +
                                        kUnexpectedEntryBytes <=
                                    unexpected_limit_) {
    return "";
  }
  return " Rank " + std::to_string(rank_) +
         "'s queue of messages that arrived before their "
         "receive is at its bound (" +
         std::to_string(unexpected_entries_) + " messages, " + std::to_string(unexpected_bytes_) +
         " bytes charged, each its payload plus " + std::to_string(kUnexpectedEntryBytes) +
         " bytes, of " + unexpected_knob_ + "=" + std::to_string(unexpected_limit_) +
         "): later messages from the peers that sent them "
         "are held back until receives take some. Post receives in the order peers send, or "
         "raise " +
         unexpected_knob_ + ".";
}

void MatchingMesh::reject_size(int peer, const OpPtr& op, uint64_t sent) {
  std::string text = "size mismatch: rank " + std::to_string(rank_) + " posted a receive of " +
                     std::to_string(op->bytes_) + " bytes for " + tags::describe(op->tag_) +
                     " from " + describe_peer(peer) + ", which sent " + std::to_string(sent) +
                     " bytes; both ranks must agree on the message size";
  fail_op(op, ErrorKind::kMismatch, text);
  if (!peer_open(peer)) return;
  send_mismatch_and_close(peer, *op, sent, text);
  // The other peers must learn it too: they may be waiting for a rank that will never come.
  abort_locked(ErrorKind::kMismatch, text);
}

std::string MatchingMesh::sender_mismatch_text(int peer, uint64_t tag, uint64_t posted,
                                               uint64_t sent) const {
  return "size mismatch: rank " + std::to_string(rank_) + " sent " + std::to_string(sent) +
         " bytes with " + tags::describe(tag) + " to " + describe_peer(peer) +
         ", which posted a receive of " + std::to_string(posted) +
         " bytes; both ranks must agree on the message size";
}

}  // namespace gloo_lite::transport
