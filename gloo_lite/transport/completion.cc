// The end of a request: completion, failure (of one op, of a peer's ops, of the whole mesh),
// cancel, and the rule that ends a wait. Shared by every transport; see matching.h.
#include <algorithm>

#include "gloo_lite/base/error.h"
#include "gloo_lite/transport/matching.h"
#include "gloo_lite/transport/tag_space.h"

namespace gloo_lite::transport {

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
  if (status_ == Status::kPending) mesh_->make_progress();
  if (status_ == Status::kPending) return false;
  if (status_ == Status::kDone) return true;
  if (status_ == Status::kCancelled && !failure_.failed()) {
    throw ConnectionError("the " + std::string(kind_ == Kind::kSend ? "send" : "receive") + " (" +
                          tags::describe(tag_) + ") was cancelled");
  }
  throw_error(failure_.kind, failure_.message);
}

void MatchingMesh::complete(const OpPtr& op) {
  if (op->status_ != Op::Status::kPending) return;
  op->status_ = Op::Status::kDone;
  completed_.notify_all();
  wake_polling_waiter();
}

void MatchingMesh::fail_op(const OpPtr& op, ErrorKind kind, const std::string& message) {
  if (op->status_ != Op::Status::kPending) return;
  op->status_ = Op::Status::kFailed;
  op->failure_ = {kind, message};
  completed_.notify_all();
  wake_polling_waiter();
}

void MatchingMesh::fail_operations_of_peer(int peer, ErrorKind kind, const std::string& message) {
  auto fail_where = [&](std::unordered_map<uint64_t, OpPtr>& ops, bool by_source) {
    for (auto it = ops.begin(); it != ops.end();) {
      if ((by_source ? it->second->source_ : it->second->peers_[0]) == peer) {
        fail_op(it->second, kind, message);
        it = ops.erase(it);
      } else {
        ++it;
      }
    }
  };
  fail_where(awaiting_clearance_, /*by_source=*/false);
  fail_where(awaiting_data_, /*by_source=*/true);
  for (auto& [tag, ops] : posted_) {
    for (auto it = ops.begin(); it != ops.end();) {
      bool alive = false;
      for (int candidate : (*it)->peers_) alive = alive || peer_open(candidate);
      if (alive) {
        ++it;
      } else {
        fail_op(*it, kind, message);
        it = ops.erase(it);
      }
    }
  }
  // Announced large messages can no longer be fetched; eager payloads stay deliverable.
  for (auto& [tag, messages] : unexpected_) {
    messages.remove_if([&](const std::unique_ptr<Unexpected>& m) {
      if (m->peer != peer || !m->rendezvous) return false;
      release(*m);
      return true;
    });
  }
}

void MatchingMesh::fail_all_operations(ErrorKind kind, const std::string& message) {
  if (!mesh_failure_.failed()) {
    mesh_failure_ = {kind, message};
    // The next enter_collective() must look: it raises a mismatch as one.
    judge_next_.store(true, std::memory_order_release);
  }
  for (auto& [tag, ops] : posted_) {
    for (auto& op : ops) fail_op(op, kind, message);
  }
  posted_.clear();
  for (auto* ops : {&awaiting_clearance_, &awaiting_data_}) {
    for (auto& [id, op] : *ops) fail_op(op, kind, message);
    ops->clear();
  }
  failing_sends_.clear();  // a clear-to-send for one of them now gets the abort
}

std::string MatchingMesh::describe_op(const Op& op) const {
  std::string text = op.kind_ == Op::Kind::kSend ? "send to " : "receive from ";
  if (op.peers_.size() == 1) {
    text += describe_peer(op.peers_[0]);
  } else {
    text += "any of ranks {";
    for (size_t i = 0; i < op.peers_.size(); ++i) {
      text += (i ? "," : "") + std::to_string(op.peers_[i]);
    }
    text += "}";
  }
  return text + " (" + tags::describe(op.tag_) + ", " + std::to_string(op.bytes_) + " bytes)";
}

bool MatchingMesh::finished(const std::vector<RequestPtr>& requests, const Deadline& deadline) {
  const Op* failed = nullptr;
  bool all_done = true;
  for (const auto& request : requests) {
    const Op& op = static_cast<const Op&>(*request);
    if (op.status_ == Op::Status::kPending) all_done = false;
    if (op.status_ == Op::Status::kFailed || op.status_ == Op::Status::kCancelled) {
      if (failed == nullptr) failed = &op;
    }
  }
  if (failed != nullptr) {
    // Leave nothing in flight on the caller's buffers once the exception reaches it.
    // The call fails with it, and so does the context: its abort is the peers' answer.
    for (const auto& request : requests) {
      cancel_locked(std::static_pointer_cast<Op>(request), /*failing=*/true);
    }
    if (failed->status_ == Op::Status::kCancelled) {
      throw Error("wait: " + describe_op(*failed) + " was cancelled");
    }
    failure_raised();  // the caller raises it now (and the context warns)
    throw_error(failed->failure_.kind, failed->failure_.message);
  }
  if (all_done) return true;
  if (!deadline.expired()) return false;
  // Pipelined algorithms wait for many chunks to one peer at once: list each kind of late
  // operation once, with how many of them there were.
  std::vector<std::pair<std::string, int>> late_ops;
  for (const auto& request : requests) {
    auto op = std::static_pointer_cast<Op>(request);
    if (op->status_ != Op::Status::kPending) continue;
    std::string text = describe_op(*op);
    auto same = std::find_if(late_ops.begin(), late_ops.end(),
                             [&](const auto& entry) { return entry.first == text; });
    if (same == late_ops.end()) {
      late_ops.emplace_back(std::move(text), 1);
    } else {
      same->second += 1;
    }
    cancel_locked(op);
  }
  std::string late;
  for (const auto& [text, count] : late_ops) {
    late += (late.empty() ? "" : "; ") + text + (count > 1 ? " x" + std::to_string(count) : "");
  }
  throw TimeoutError("rank " + std::to_string(rank_) + " timed out waiting for: " + late +
                     ". The peer may be stuck, slow, or waiting for something else; raise "
                     "the timeout (GLOO_LITE_TIMEOUT_MS) if it is only slow." +
                     unexpected_bound_note());
}

void MatchingMesh::cancel(const RequestPtr& request) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (cancel_locked(std::static_pointer_cast<Op>(request))) completed_.notify_all();
}

void MatchingMesh::cancel_failing(const RequestPtr& request) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (cancel_locked(std::static_pointer_cast<Op>(request), /*failing=*/true)) {
    completed_.notify_all();
  }
}

MatchingMesh::LostSendAnswer MatchingMesh::answer_for_lost_send(uint64_t send_id) {
  if (mesh_failure_.failed()) return LostSendAnswer::kAbort;
  if (failing_sends_.erase(send_id) > 0) return LostSendAnswer::kNothing;
  return LostSendAnswer::kCancelled;
}

bool MatchingMesh::cancel_locked(const OpPtr& op, bool failing) {
  if (op->status_ != Op::Status::kPending) return false;
  bool cleared = false;
  if (op->kind_ == Op::Kind::kRecv) {
    auto found = posted_.find(op->tag_);
    if (found != posted_.end()) {
      found->second.remove(op);
      if (found->second.empty()) posted_.erase(found);
    }
    cleared = op->id_ != 0 && awaiting_data_.erase(op->id_) > 0;
  } else if (op->id_ != 0 && awaiting_clearance_.erase(op->id_) > 0 && failing) {
    failing_sends_.insert(op->id_);
  }
  // Cancelled before the wire lets go of it, so that a pair the wire closes for this op
  // (verbs) does not report it as failed.
  op->status_ = Op::Status::kCancelled;
  cancel_on_wire(op, cleared, failing);
  return true;
}

}  // namespace gloo_lite::transport
