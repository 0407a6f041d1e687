// The matching protocol on top of the frames: eager messages below the threshold, and the
// receiver-ready rendezvous (ready-to-send, clear-to-send, data) above it, so that large
// payloads land directly in the receiver's buffer and unmatched large messages cost no memory.
// Matching itself is the shared engine's (matching.h); this is the TCP framing around it.
// Always called with the mesh mutex held.
#include <algorithm>

#include "gloo_lite/base/log.h"
#include "transport_tcp/tcp_mesh.h"

namespace gloo_lite::tcp {
namespace {

constexpr uint64_t kMaxAbortText = 64 * 1024;
// A length beyond this cannot be a real message: the stream is corrupt.
constexpr uint64_t kMaxMessageBytes = uint64_t{1} << 48;

}  // namespace

void TcpMesh::send_eager(const OpPtr& op) {
  OutFrame frame;
  wire::FrameHeader header;
  header.type = wire::FrameType::kEager;
  header.tag = op->tag_;
  header.length = op->bytes_;
  header.fingerprint = op->fingerprint_;
  wire::encode_header(header, frame.header);
  frame.payload = op->data_;
  frame.payload_bytes = op->bytes_;
  frame.op = op;
  queue_frame(*pairs_[op->peers_[0]], std::move(frame));
}

void TcpMesh::send_ready_to_send(const Op& op) {
  wire::FrameHeader header;
  header.type = wire::FrameType::kReadyToSend;
  header.tag = op.tag_;
  header.length = op.bytes_;
  header.fingerprint = op.fingerprint_;
  header.send_id = static_cast<uint32_t>(op.id_);
  queue_control(*pairs_[op.peers_[0]], header, Lane::kMatched);
}

void TcpMesh::send_clear_to_send(int peer, const OpPtr& op, uint64_t send_id) {
  wire::FrameHeader header;
  header.type = wire::FrameType::kClearToSend;
  header.send_id = static_cast<uint32_t>(send_id);
  header.recv_id = static_cast<uint32_t>(op->id_);
  queue_control(*pairs_[peer], header, Lane::kAnswer);
}

void TcpMesh::send_mismatch_and_close(int peer, const Op& op, uint64_t sent,
                                      const std::string& text) {
  Pair& pair = *pairs_[peer];
  wire::FrameHeader header;
  header.type = wire::FrameType::kMismatch;
  header.tag = op.tag_;
  header.length = op.bytes_;
  header.sent = sent;
  queue_control(pair, header, Lane::kMatched);
  fail_pair(pair, ErrorKind::kMismatch, text);
}

void TcpMesh::on_frame_header(Pair& pair) {
  const wire::FrameHeader& h = pair.rx_header_;
  pair.rx_state_ = RxState::kHeader;
  pair.rx_target_ = nullptr;
  pair.rx_left_ = 0;
  pair.segment_follows_ = false;
  if (wire::has_payload(h.type) && h.length > kMaxMessageBytes) {
    lose_pair(pair, "protocol error from " + describe_peer(pair.peer_) +
                        ": impossible payload length " + std::to_string(h.length));
    return;
  }
  switch (h.type) {
    case wire::FrameType::kEager:
      on_eager_header(pair);
      return;
    case wire::FrameType::kReadyToSend:
      on_ready_to_send(pair.peer_, h.tag, h.length, h.send_id, h.fingerprint);
      return;
    case wire::FrameType::kClearToSend:
      on_clear_to_send(pair);
      return;
    case wire::FrameType::kData:
      on_data_header(pair);
      return;
    case wire::FrameType::kSendCancelled:
      on_send_cancelled(pair.peer_, h.recv_id);
      return;
    case wire::FrameType::kMismatch: {
      // A mismatch breaks the whole context, not just this pair: this rank may have nothing
      // pending with that peer any more and be waiting for another, which never learns why.
      std::string text = sender_mismatch_text(pair.peer_, h.tag, h.length, h.sent);
      fail_pair(pair, ErrorKind::kMismatch, text);
      fail_mesh(ErrorKind::kMismatch, text);
      return;
    }
    case wire::FrameType::kAbort:
      if (h.length > kMaxAbortText) {
        lose_pair(pair, describe_peer(pair.peer_) + " aborted");
        return;
      }
      pair.rx_text_.assign(h.length, 0);
      pair.rx_target_ = pair.rx_text_.data();
      expect_payload(pair, h.length);
      return;
    case wire::FrameType::kGoodbye:
      fail_pair(pair, ErrorKind::kConnection,
                describe_peer(pair.peer_) + " has closed this context (clean shutdown)");
      return;
  }
}

void TcpMesh::expect_payload(Pair& pair, uint64_t length) {
  pair.rx_state_ = RxState::kPayload;
  pair.rx_left_ = length;
  if (length == 0) on_payload_done(pair);
}

void TcpMesh::on_eager_header(Pair& pair) {
  const wire::FrameHeader& h = pair.rx_header_;
  OpPtr op = match_posted(pair.peer_, h.tag);
  if (op) {
    // A message of another call aborts the mesh: its payload is never read.
    if (!same_call(pair.peer_, op, h.fingerprint)) return;
    if (op->bytes_ != h.length) {
      reject_size(pair.peer_, op, h.length);
      return;
    }
    pair.rx_op_ = op;
    pair.rx_target_ = op->data_;
  } else {
    if (!unexpected_has_room(h.length)) {
      // Back-pressure: stop reading this peer until receives drain the queue.
      pair.rx_state_ = RxState::kBlocked;
      update_interest(pair);
      return;
    }
    pair.rx_unexpected_ = new_unexpected(pair.peer_, h.length, h.fingerprint);
    pair.rx_target_ = pair.rx_unexpected_->payload.data();
  }
  expect_payload(pair, h.length);
}

void TcpMesh::on_clear_to_send(Pair& pair) {
  const wire::FrameHeader& h = pair.rx_header_;
  OpPtr op = take_send_awaiting_clearance(h.send_id);
  LostSendAnswer answer = op ? LostSendAnswer::kCancelled : answer_for_lost_send(h.send_id);
  if (!op && answer == LostSendAnswer::kAbort) {
    // The send failed with this context (say, a peer reported a collective mismatch): the
    // receiver learns that cause, not a cancel that reads like a timeout.
    queue_abort(pair, mesh_failure().kind, cause_to_forward());
    fail_pair(pair, mesh_failure().kind, mesh_failure().message);
    return;
  }
  if (!op && answer == LostSendAnswer::kNothing) return;  // this rank's abort follows
  if (!op) {
    wire::FrameHeader cancelled;
    cancelled.type = wire::FrameType::kSendCancelled;
    cancelled.recv_id = h.recv_id;
    queue_control(pair, cancelled, Lane::kAnswer);
    return;
  }
  OutFrame frame;
  frame.lane = Lane::kPayload;
  frame.recv_id = h.recv_id;
  frame.payload = op->data_;
  frame.payload_bytes = op->bytes_;
  frame.op = op;
  queue_frame(pair, std::move(frame));
}

void TcpMesh::on_data_header(Pair& pair) {
  // One segment of a rendezvous payload; the receive stays the engine's (cancel and failure
  // find it there) until its last segment is in. Data for a cancelled receive is read and
  // discarded.
  const wire::FrameHeader& h = pair.rx_header_;
  OpPtr op = receive_awaiting_data(h.recv_id);
  if (op) {
    if (h.sent > op->bytes_ || h.length > op->bytes_ - h.sent) {
      lose_pair(pair, "protocol error from " + describe_peer(pair.peer_) + ": data for " +
                          std::to_string(h.sent) + " + " + std::to_string(h.length) +
                          " bytes into a receive of " + std::to_string(op->bytes_));
      return;
    }
    pair.rx_op_ = std::move(op);
    pair.rx_target_ = pair.rx_op_->data_ + h.sent;
  }
  expect_payload(pair, h.length);
}

void TcpMesh::on_payload_done(Pair& pair) {
  const wire::FrameHeader& h = pair.rx_header_;
  pair.rx_state_ = RxState::kHeader;
  pair.rx_target_ = nullptr;
  if (pair.rx_op_) {
    OpPtr op = std::move(pair.rx_op_);
    pair.rx_op_ = nullptr;
    if (h.type == wire::FrameType::kData) {
      // Segments come in order on the connection: the one that ends the message completes it.
      if (h.sent + h.length < op->bytes_) {
        pair.segment_follows_ = true;
        return;
      }
      op = take_receive_awaiting_data(h.recv_id);
      if (!op) return;
    }
    complete(op);
    return;
  }
  if (pair.rx_unexpected_) {
    std::unique_ptr<Unexpected> message = std::move(pair.rx_unexpected_);
    // A receive may have been posted while the payload was arriving.
    if (OpPtr op = match_posted(pair.peer_, h.tag)) {
      deliver_unexpected(op, *message);
    } else {
      queue_unexpected(h.tag, std::move(message));
    }
    return;
  }
  if (h.type == wire::FrameType::kAbort) {
    std::string reason(pair.rx_text_.begin(), pair.rx_text_.end());
    // The peer's kind of failure travels with it: a collective mismatch found there is a
    // MismatchError here too. Only kinds this build knows are taken; others read as connection.
    ErrorKind kind = h.error == static_cast<uint8_t>(ErrorKind::kMismatch) ? ErrorKind::kMismatch
                                                                           : ErrorKind::kConnection;
    // A peer that relays another rank's cause names that rank: the cause is raised as its
    // origin's, once (abort_cause.h), and forwarded as such should this rank tell others.
    transport::AbortCause cause{transport::decode_origin(h.origin, pair.peer_, size_),
                                std::move(reason)};
    first_cause_.note(cause, mesh_failure());
    lose_pair(pair,
              transport::describe_abort(cause, pair.peer_,
                                        [this](int rank) { return describe_peer(rank); }),
              kind);
  }
}

void TcpMesh::queue_frame(Pair& pair, OutFrame frame) {
  if (!pair.open_) {
    if (frame.op) fail_op(frame.op, pair.failure_);
    return;
  }
  if (frame.lane == Lane::kPayload) {
    begin_segment(frame);
  } else {
    frame.segment = frame.payload_bytes;
  }
  bool idle = pair.out_.empty();
  auto at = pair.out_.end();
  if (frame.lane > Lane::kPayload) {
    // Only frames not begun may be passed: over TLS not even those the channel has encrypted
    // and the socket not yet taken (Pair::first_unbegun).
    auto unbegun = pair.first_unbegun();
    bool passable = unbegun == pair.out_.begin();
    for (auto it = pair.out_.begin(); it != pair.out_.end(); ++it) {
      if (it == unbegun) passable = true;
      if (it->lane == Lane::kLast) break;  // nothing passes a goodbye or an abort
      if (passable && it->lane < frame.lane) {
        at = it;
        break;
      }
    }
  }
  pair.out_.insert(at, std::move(frame));
  // Write inline from the calling thread; the event loop takes over only when the socket is full.
  if (idle) write_pair(pair);
}

void TcpMesh::queue_control(Pair& pair, const wire::FrameHeader& header, Lane lane) {
  OutFrame frame;
  frame.lane = lane;
  wire::encode_header(header, frame.header);
  queue_frame(pair, std::move(frame));
}

void TcpMesh::resume_held_messages() {
  for (auto& pair : pairs_) {
    if (!pair || !pair->open_ || pair->rx_state_ != RxState::kBlocked) continue;
    if (!unexpected_has_room(pair->rx_header_.length)) continue;
    on_frame_header(*pair);  // re-dispatch the held header now that there is room
    if (pair->open_ && pair->rx_state_ != RxState::kBlocked) {
      update_interest(*pair);
      read_pair(*pair);
    }
  }
}

}  // namespace gloo_lite::tcp
