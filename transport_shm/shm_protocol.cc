// The records on the rings: eager messages copied in place, and large messages announced
// (ready-to-send with the sender's buffer address) and then either copied once by the receiver
// with process_vm_readv (done goes back) or, where the connect probe found CMA forbidden,
// pipelined through the ring (clear-to-send, then data chunks). Matching itself is the shared
// engine's (matching.h). Always called with the mesh mutex held.
#include <sys/uio.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "gloo_lite/base/log.h"
#include "gloo_lite/transport/tag_space.h"
#include "transport_shm/shm_mesh.h"

namespace gloo_lite::shm {
namespace {

Record make_record(RecordKind kind, uint64_t a = 0, uint64_t b = 0) {
  Record record{};
  record.kind = static_cast<uint32_t>(kind);
  record.a = a;
  record.b = b;
  return record;
}

}  // namespace

void ShmMesh::queue_record(Pair& pair, OutRecord out) {
  if (!pair.open) {
    if (out.op) fail_op(out.op, pair.failure);
    return;
  }
  // Records to one peer keep their order: write now only behind an empty queue.
  if (pair.out.empty()) {
    size_t before = out.offset;
    bool all = write_one(pair, out);
    // A stream may have left some chunks before the ring filled: the reader must know.
    if (all || out.offset != before) ring_doorbell(pair.remote_header);
    if (all) return;
  }
  pair.out.push_back(std::move(out));
  push(pair);
}

void ShmMesh::queue_control(Pair& pair, RecordKind kind, uint64_t a, uint64_t b) {
  OutRecord out;
  out.record = make_record(kind, a, b);
  queue_record(pair, std::move(out));
}

bool ShmMesh::write_one(Pair& pair, OutRecord& out) {
  if (!out.stream) {
    if (!pair.writer.try_write(out.record, out.payload, out.payload_bytes)) return false;
    if (out.op) complete(out.op);
    return true;
  }
  // A data stream: as many chunks as fit; true once the last one is written.
  size_t chunk = pair.writer.max_payload();
  while (out.offset < out.op->bytes_) {
    size_t bytes = std::min(chunk, out.op->bytes_ - out.offset);
    Record record = out.record;
    record.b = out.offset;
    if (!pair.writer.try_write(record, out.op->data_ + out.offset, bytes)) return false;
    out.offset += bytes;
  }
  complete(out.op);
  return true;
}

void ShmMesh::push(Pair& pair) {
  bool wrote = false;
  while (pair.open && !pair.out.empty()) {
    OutRecord& out = pair.out.front();
    size_t before = out.offset;
    if (write_one(pair, out)) {
      pair.out.pop_front();
      wrote = true;
      continue;
    }
    wrote = wrote || out.offset != before;
    // Full: the consumer rings our doorbell once it made room (unless room appeared just now).
    size_t next = out.stream ? std::min(pair.writer.max_payload(), out.op->bytes_ - out.offset)
                             : out.payload_bytes;
    if (!pair.writer.has_room_after_announcing(next)) break;
  }
  if (wrote) ring_doorbell(pair.remote_header);
}

void ShmMesh::send_eager(const OpPtr& op) {
  OutRecord out;
  out.record = make_record(RecordKind::kEager);
  out.record.tag = op->tag_;
  out.record.fingerprint = op->fingerprint_;
  out.record.length = op->bytes_;
  out.payload = op->data_;
  out.payload_bytes = op->bytes_;
  out.op = op;
  queue_record(*pairs_[op->peers_[0]], std::move(out));
}

void ShmMesh::send_ready_to_send(const Op& op) {
  OutRecord out;
  // The buffer's address lets the receiver copy it in one process_vm_readv; 0 asks for the
  // pipelined copy instead.
  uint64_t address = settings_.cma ? reinterpret_cast<uint64_t>(op.data_) : 0;
  out.record = make_record(RecordKind::kReadyToSend, op.id_, address);
  out.record.tag = op.tag_;
  out.record.fingerprint = op.fingerprint_;
  out.record.length = op.bytes_;
  queue_record(*pairs_[op.peers_[0]], std::move(out));
}

void ShmMesh::send_clear_to_send(int peer, const OpPtr& op, uint64_t send_id) {
  Pair& pair = *pairs_[peer];
  uint64_t address = 0;
  if (auto found = pair.announced.find(send_id); found != pair.announced.end()) {
    address = found->second;
    pair.announced.erase(found);
  }
  if (auto found = pair.cancelled.find(send_id); found != pair.cancelled.end()) {
    // The sender took it back while it waited here unmatched.
    bool failing = found->second;
    pair.cancelled.erase(found);
    on_send_cancelled(peer, op->id_, failing);
    return;
  }
  if (pair.cma && address != 0) {
    // Copied at the end of this round of progress, right after the inboxes were read.
    pulls_.push_back(Pull{peer, op, send_id, address});
    return;
  }
  incoming_[op->id_] = Incoming{op, 0};
  queue_control(pair, RecordKind::kClearToSend, send_id, op->id_);
}

void ShmMesh::send_mismatch_and_close(int peer, const Op& op, uint64_t sent,
                                      const std::string& text) {
  Pair& pair = *pairs_[peer];
  write_close(pair, CloseState::kMismatch, ErrorKind::kMismatch, text, op.tag_, op.bytes_, sent);
  fail_pair(pair, ErrorKind::kMismatch, text);
}

void ShmMesh::progress() {
  for (auto& pair : pairs_) {
    if (pair && pair->open) drain(*pair);
  }
  run_pulls();
  for (auto& pair : pairs_) {
    if (pair && pair->open && !pair->out.empty()) push(*pair);
  }
}

bool ShmMesh::drain(Pair& pair) {
  if (!read_cancels(pair)) return false;
  InboxControl* control = pair.inbox.control;
  // Read first: records written before the notice are delivered before it is acted on.
  auto state = static_cast<CloseState>(control->close_state.load(std::memory_order_acquire));
  // A closed producer sends nothing more: what it left in the ring is bounded by the ring, and
  // is taken in whatever the unexpected bound says, so that it stays deliverable.
  if (state != CloseState::kOpen) pair.closing = true;
  uint64_t head = control->head.load(std::memory_order_acquire);
  // Our own count, not the shared word: the peer can write that one too.
  uint64_t tail = pair.consumed;
  const uint32_t capacity = pair.inbox.capacity;
  // head is the peer's to write: never trust it further than the ring reaches.
  if (head - tail > capacity) {
    lose_pair(pair, "protocol error in the ring from " + describe_peer(pair.peer) + ": it claims " +
                        std::to_string(head - tail) + " unread bytes in a ring of " +
                        std::to_string(capacity) + " (memory corruption in the peer?)");
    return false;
  }
  while (tail != head && pair.open) {
    size_t position = static_cast<size_t>(tail % capacity);
    size_t to_end = capacity - position;
    const uint8_t* at = pair.inbox.data + position;
    Record record;
    if (to_end >= kRecordBytes) std::memcpy(&record, at, sizeof(record));
    if (to_end < kRecordBytes || record.kind == static_cast<uint32_t>(RecordKind::kSkip)) {
      if (to_end > head - tail) {
        lose_pair(pair, "protocol error in the ring from " + describe_peer(pair.peer) +
                            ": a skip past what it wrote (memory corruption in the peer?)");
        return false;
      }
      tail += to_end;
    } else {
      size_t footprint = record_footprint(record.payload_bytes);
      if (footprint > to_end || head - tail < footprint) {
        lose_pair(pair, "protocol error in the ring from " + describe_peer(pair.peer) +
                            ": a record of " + std::to_string(record.payload_bytes) +
                            " bytes overruns it (memory corruption in the peer?)");
        return false;
      }
      if (!dispatch(pair, record, at + kRecordBytes)) break;
      tail += footprint;
    }
    pair.consumed = tail;
    control->tail.store(tail, std::memory_order_seq_cst);
    // A producer that found the ring full waits for our doorbell.
    if (control->writer_waiting.load(std::memory_order_seq_cst) != 0 &&
        control->writer_waiting.exchange(0) != 0) {
      ring_doorbell(pair.remote_header);
    }
  }
  // Acted on only once everything that arrived before it was consumed or queued.
  const bool all_read = pair.open && tail == head;
  if (all_read && state != CloseState::kOpen) on_close_notice(pair, state);
  return all_read;
}

bool ShmMesh::dispatch(Pair& pair, const Record& record, const uint8_t* payload) {
  const int peer = pair.peer;
  switch (static_cast<RecordKind>(record.kind)) {
    case RecordKind::kEager:
      return on_eager_record(pair, record, payload);
    case RecordKind::kReadyToSend:
      // One cancelled before we read this still matches a receive, which then fails
      // (send_clear_to_send finds it in `cancelled`), as when the cancel comes later.
      pair.announced[record.a] = record.b;
      on_ready_to_send(peer, record.tag, record.length, record.a, record.fingerprint);
      return pair.open;
    case RecordKind::kClearToSend:
      return on_clear_to_send_record(pair, record);
    case RecordKind::kData:
      return on_data_record(pair, record, payload);
    case RecordKind::kDone:
      if (OpPtr op = take_send_awaiting_clearance(record.a)) {
        if (op->peers_[0] != peer) return reject_foreign_id(pair, op, "done");
        complete(op);
      }
      return true;
    case RecordKind::kSendCancelled: {
      // Only a pipelined receive (in incoming_) hears this; one cancelled here is gone already.
      auto found = incoming_.find(record.a);
      if (found == incoming_.end()) return true;
      if (found->second.op->source_ != peer) {
        return reject_foreign_id(pair, nullptr, "send-cancelled");
      }
      incoming_.erase(found);
      on_send_cancelled(peer, record.a, /*failing=*/record.b == 1);
      return true;
    }
    case RecordKind::kSkip:
      return true;
  }
  return reject_record(pair, record);
}

bool ShmMesh::reject_record(Pair& pair, const Record& record) {
  lose_pair(pair, "protocol error in the ring from " + describe_peer(pair.peer) + ": record kind " +
                      std::to_string(record.kind) + " with " +
                      std::to_string(record.payload_bytes) + " payload bytes is invalid");
  return false;
}

bool ShmMesh::on_eager_record(Pair& pair, const Record& record, const uint8_t* payload) {
  const int peer = pair.peer;
  if (record.payload_bytes != record.length) return reject_record(pair, record);
  OpPtr op = match_posted(peer, record.tag);
  if (op) {
    // A message of another call aborts the mesh: its payload is never copied.
    if (!same_call(peer, op, record.fingerprint)) return false;
    if (op->bytes_ != record.length) {
      reject_size(peer, op, record.length);
      return false;
    }
    if (record.length > 0) std::memcpy(op->data_, payload, record.length);
    complete(op);
    return true;
  }
  // Back-pressure: leave it in the ring until receives drain the unexpected queue.
  if (!pair.closing && !unexpected_has_room(record.length)) return false;
  auto message = new_unexpected(peer, record.length, record.fingerprint);
  if (record.length > 0) std::memcpy(message->payload.data(), payload, record.length);
  queue_unexpected(record.tag, std::move(message));
  return true;
}

bool ShmMesh::on_clear_to_send_record(Pair& pair, const Record& record) {
  OpPtr op = take_send_awaiting_clearance(record.a);
  if (op && op->peers_[0] != pair.peer) return reject_foreign_id(pair, op, "clear-to-send");
  LostSendAnswer answer = op ? LostSendAnswer::kCancelled : answer_for_lost_send(record.a);
  if (!op && answer == LostSendAnswer::kAbort) {
    // The send failed with this context (say, another peer died): the receiver learns that
    // cause, not a cancel that reads like a timeout.
    write_abort(pair, mesh_failure().kind, mesh_failure().message);
    fail_pair(pair, mesh_failure().kind, mesh_failure().message);
    return false;
  }
  if (!op && answer == LostSendAnswer::kNothing) return true;  // this rank's abort follows
  if (!op) {
    queue_control(pair, RecordKind::kSendCancelled, record.b, 0);
    return true;
  }
  OutRecord out;
  out.record = make_record(RecordKind::kData, record.b, 0);
  out.record.length = op->bytes_;
  out.op = op;
  out.stream = true;
  queue_record(pair, std::move(out));
  return true;
}

bool ShmMesh::on_data_record(Pair& pair, const Record& record, const uint8_t* payload) {
  auto found = incoming_.find(record.a);
  if (found == incoming_.end()) return true;  // for a cancelled receive: dropped
  Incoming& incoming = found->second;
  if (incoming.op->source_ != pair.peer) return reject_foreign_id(pair, nullptr, "data");
  if (record.b > incoming.op->bytes_ || record.payload_bytes > incoming.op->bytes_ - record.b) {
    return reject_record(pair, record);
  }
  std::memcpy(incoming.op->data_ + record.b, payload, record.payload_bytes);
  incoming.received += record.payload_bytes;
  if (incoming.received >= incoming.op->bytes_) {
    incoming_.erase(found);
    if (OpPtr op = take_receive_awaiting_data(record.a)) complete(op);
  }
  return true;
}

bool ShmMesh::reject_foreign_id(Pair& pair, const OpPtr& op, const char* what) {
  std::string text = "protocol error from " + describe_peer(pair.peer) + ": its " + what +
                     " names an operation with another rank (memory corruption in the peer?)";
  if (op) fail_op(op, ErrorKind::kConnection, text);  // taken from the engine already
  lose_pair(pair, text);
  return false;
}

bool ShmMesh::read_cancels(Pair& pair) {
  InboxControl* control = pair.inbox.control;
  uint64_t count = control->cancel_count.load(std::memory_order_acquire);
  if (count - pair.cancels_read > kCancelSlots) {
    lose_pair(pair, "protocol error from " + describe_peer(pair.peer) + ": " +
                        std::to_string(count - pair.cancels_read) +
                        " cancels outstanding, more than its inbox holds (memory corruption?)");
    return false;
  }
  while (pair.cancels_read != count) {
    uint64_t send_id =
        control->cancel_ids[pair.cancels_read % kCancelSlots].load(std::memory_order_relaxed);
    ++pair.cancels_read;
    on_cancel(pair, send_id);
  }
  control->cancel_seen.store(pair.cancels_read, std::memory_order_release);
  return pair.open;
}

void ShmMesh::on_cancel(Pair& pair, uint64_t marked_id) {
  const int peer = pair.peer;
  const bool failing = (marked_id & kFailingCancel) != 0;
  const uint64_t send_id = marked_id & ~kFailingCancel;
  if (current_pull_ != nullptr && current_pull_->peer == peer &&
      current_pull_->send_id == send_id) {
    current_pull_->cancelled = true;
    current_pull_->failing = failing;
    return;
  }
  for (auto it = pulls_.begin(); it != pulls_.end(); ++it) {
    if (it->peer == peer && it->send_id == send_id) {
      uint64_t recv_id = it->op->id_;
      pulls_.erase(it);
      on_send_cancelled(peer, recv_id, failing);
      return;
    }
  }
  // Announced and not matched yet, or its announcement is still in the ring (cancels overtake
  // records): either way it must never be copied. (A cancel that crossed our done or our
  // clear-to-send leaves an id here that nothing erases: a few bytes, ids are not reused.)
  pair.announced.erase(send_id);
  pair.cancelled[send_id] = failing;
}

void ShmMesh::on_close_notice(Pair& pair, CloseState state) {
  InboxControl* control = pair.inbox.control;
  const int peer = pair.peer;
  switch (state) {
    case CloseState::kGoodbye:
      fail_pair(pair, ErrorKind::kConnection,
                describe_peer(peer) + " has closed this context (clean shutdown)");
      return;
    case CloseState::kMismatch: {
      // A mismatch breaks the whole context, not just this pair (as on TCP).
      std::string text = sender_mismatch_text(peer, control->close_tag, control->close_posted,
                                              control->close_sent);
      fail_pair(pair, ErrorKind::kMismatch, text);
      fail_mesh(ErrorKind::kMismatch, text);
      return;
    }
    case CloseState::kAbort: {
      size_t bytes = std::min<size_t>(control->close_text_bytes, kCloseTextBytes);
      std::string reason(control->close_text, bytes);
      // Only kinds this build knows are taken; others read as a connection error.
      ErrorKind kind = control->close_kind == static_cast<uint32_t>(ErrorKind::kMismatch)
                           ? ErrorKind::kMismatch
                           : ErrorKind::kConnection;
      // A peer that relays another rank's cause names that rank (abort_cause.h): raised as its
      // origin's, once, and forwarded as such.
      transport::AbortCause cause{transport::decode_origin(control->close_tag, peer, size_),
                                  std::move(reason)};
      first_cause_.note(cause, mesh_failure());
      lose_pair(
          pair,
          transport::describe_abort(cause, peer, [this](int rank) { return describe_peer(rank); }),
          kind);
      return;
    }
    case CloseState::kOpen:
      return;
  }
  lose_pair(pair, "protocol error from " + describe_peer(peer) + ": close notice " +
                      std::to_string(static_cast<uint32_t>(state)));
}

void ShmMesh::run_pulls() {
  while (!pulls_.empty()) {
    Pull pull = std::move(pulls_.front());
    pulls_.pop_front();
    Pair& pair = *pairs_[pull.peer];
    if (!pair.open || pull.op->status_ != Op::Status::kPending) continue;
    current_pull_ = &pull;
    finish_pull(pull);
    current_pull_ = nullptr;
  }
}

void ShmMesh::finish_pull(Pull& pull) {
  Pair& pair = *pairs_[pull.peer];
  const OpPtr& op = pull.op;
  size_t done = 0;
  while (done < op->bytes_) {
    iovec local{op->data_ + done, op->bytes_ - done};
    iovec remote{reinterpret_cast<void*>(pull.address + done), op->bytes_ - done};
    ssize_t n = ::process_vm_readv(pair.address.pid, &local, 1, &remote, 1, 0);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    int error = n < 0 ? errno : EFAULT;
    if (!read_cancels(pair)) return;  // a cancel may explain it
    if (pull.cancelled) break;
    drain(pair);  // or a close notice
    if (!pair.open) return;
    lose_pair(pair, "rank " + std::to_string(rank_) + " could not copy " +
                        std::to_string(op->bytes_) + " bytes (" + tags::describe(op->tag_) +
                        ") from " + describe_peer(pull.peer) + " with process_vm_readv: " +
                        std::strerror(error) + (error == ESRCH ? " (the process has exited)" : ""));
    return;
  }
  // The sender publishes its cancel (out of band, never held back behind ring records) before
  // it lets go of the buffer: a cancel not seen by this RMW came after the copy, which
  // therefore read the message intact (ordered against the sender's publish_before_reuse of
  // cancel_count; read_cancels below sees at least this value).
  read_after_copy(pair.inbox.control->cancel_count);
  if (!read_cancels(pair)) return;
  if (pull.cancelled) {
    on_send_cancelled(pull.peer, op->id_, pull.failing);
    return;
  }
  // A sender that closed or failed may have given the buffer back after its close notice: what
  // was copied cannot be trusted (ordered against the sender's publish_before_reuse of
  // close_state).
  if (read_after_copy(pair.inbox.control->close_state) !=
      static_cast<uint32_t>(CloseState::kOpen)) {
    // The notice says why (an abort's reason, a mismatch): acted on once what the peer wrote
    // before it is read, it fails this receive with that reason, as every other one.
    drain(pair);
    if (!pair.open) return;
    if (OpPtr taken = take_receive_awaiting_data(op->id_)) {
      fail_op(taken, ErrorKind::kConnection,
              describe_peer(pull.peer) + " closed its side while rank " + std::to_string(rank_) +
                  " copied " + tags::describe(op->tag_) + " from it; the copy is discarded");
    }
    return;
  }
  if (OpPtr taken = take_receive_awaiting_data(op->id_)) complete(taken);
  queue_control(pair, RecordKind::kDone, pull.send_id, 0);
}

}  // namespace gloo_lite::shm
