// The matching protocol on top of the frames: eager messages below the threshold, and the
// receiver-ready rendezvous (ready-to-send, clear-to-send, data) above it, so that large
// payloads land directly in the receiver's buffer and unmatched large messages cost no memory.
// Always called with the mesh mutex held.
#include <algorithm>
#include <cstring>

#include "gloo_lite/base/log.h"
#include "transport_tcp/tcp_mesh.h"

namespace gloo_lite::tcp {
namespace {

constexpr uint64_t kMaxAbortText = 64 * 1024;
// A length beyond this cannot be a real message: the stream is corrupt.
constexpr uint64_t kMaxMessageBytes = uint64_t{1} << 48;

bool contains(const std::vector<int>& peers, int peer) {
  return std::find(peers.begin(), peers.end(), peer) != peers.end();
}

}  // namespace

OpPtr TcpMesh::match_posted(int peer, uint64_t tag) {
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

// Both ends of a size mismatch fail: this side's receive and pair now, the sender's pair when
// our notice arrives. The receive buffer is never written past its size.
void TcpMesh::reject_size(Pair& pair, const OpPtr& op, uint64_t sent) {
  std::string text = "size mismatch: rank " + std::to_string(rank_) + " posted a receive of " +
                     std::to_string(op->bytes_) + " bytes for tag " + std::to_string(op->tag_) +
                     " from " + describe_peer(pair.peer_) + ", which sent " + std::to_string(sent) +
                     " bytes; both ranks must agree on the message size";
  fail_op(op, ErrorKind::kMismatch, text);
  if (!pair.open_) return;
  queue_control(pair, wire::FrameType::kMismatch, op->tag_, op->bytes_, sent);
  LOG_WARN("tcp", text);
  fail_pair(pair, ErrorKind::kMismatch, text);
}

void TcpMesh::on_frame_header(Pair& pair) {
  const wire::FrameHeader& h = pair.rx_header_;
  pair.rx_state_ = RxState::kHeader;
  pair.rx_target_ = nullptr;
  pair.rx_left_ = 0;
  if (wire::has_payload(h.type) && h.b > kMaxMessageBytes) {
    lose_pair(pair, "protocol error from " + describe_peer(pair.peer_) +
                        ": impossible payload length " + std::to_string(h.b));
    return;
  }
  switch (h.type) {
    case wire::FrameType::kEager: {
      OpPtr op = match_posted(pair.peer_, h.a);
      if (op) {
        if (op->bytes_ != h.b) {
          reject_size(pair, op, h.b);
          return;
        }
        pair.rx_op_ = op;
        pair.rx_target_ = op->data_;
      } else {
        if (unexpected_bytes_ > 0 && unexpected_bytes_ + h.b > unexpected_limit_) {
          // Back-pressure: stop reading this peer until receives drain the queue.
          pair.rx_state_ = RxState::kBlocked;
          update_interest(pair);
          return;
        }
        auto message = std::make_unique<Unexpected>();
        message->peer = pair.peer_;
        message->rendezvous = false;
        message->length = h.b;
        message->send_id = 0;
        message->payload.resize(h.b);
        unexpected_bytes_ += h.b;
        pair.rx_target_ = message->payload.data();
        pair.rx_unexpected_ = std::move(message);
      }
      pair.rx_state_ = RxState::kPayload;
      pair.rx_left_ = h.b;
      if (h.b == 0) on_payload_done(pair);
      return;
    }
    case wire::FrameType::kReadyToSend: {
      OpPtr op = match_posted(pair.peer_, h.a);
      if (!op) {
        unexpected_[h.a].push_back(
            std::make_unique<Unexpected>(Unexpected{pair.peer_, true, h.b, h.c, {}}));
        return;
      }
      if (op->bytes_ != h.b) {
        reject_size(pair, op, h.b);
        return;
      }
      clear_to_send(pair, op, h.c);
      return;
    }
    case wire::FrameType::kClearToSend: {
      auto found = awaiting_cts_.find(h.a);
      if (found == awaiting_cts_.end()) {
        queue_control(pair, wire::FrameType::kSendCancelled, h.c, 0, 0);
        return;
      }
      OpPtr op = found->second;
      awaiting_cts_.erase(found);
      OutFrame frame;
      wire::encode_header({wire::FrameType::kData, h.c, op->bytes_, 0}, frame.header);
      frame.payload = op->data_;
      frame.payload_bytes = op->bytes_;
      frame.op = op;
      queue_frame(pair, std::move(frame));
      return;
    }
    case wire::FrameType::kData: {
      auto found = awaiting_data_.find(h.a);
      if (found != awaiting_data_.end() && found->second->bytes_ == h.b) {
        pair.rx_op_ = found->second;
        pair.rx_target_ = pair.rx_op_->data_;
      }
      if (found != awaiting_data_.end()) awaiting_data_.erase(found);
      pair.rx_state_ = RxState::kPayload;
      pair.rx_left_ = h.b;
      if (h.b == 0) on_payload_done(pair);
      return;
    }
    case wire::FrameType::kSendCancelled: {
      auto found = awaiting_data_.find(h.a);
      if (found == awaiting_data_.end()) return;
      OpPtr op = found->second;
      awaiting_data_.erase(found);
      fail_op(op, ErrorKind::kConnection,
              describe_peer(pair.peer_) + " cancelled its send of tag " + std::to_string(op->tag_) +
                  " after this rank matched it (the sender probably timed out)");
      return;
    }
    case wire::FrameType::kMismatch:
      fail_pair(pair, ErrorKind::kMismatch,
                "size mismatch: rank " + std::to_string(rank_) + " sent " + std::to_string(h.c) +
                    " bytes with tag " + std::to_string(h.a) + " to " + describe_peer(pair.peer_) +
                    ", which posted a receive of " + std::to_string(h.b) +
                    " bytes; both ranks must agree on the message size");
      return;
    case wire::FrameType::kAbort:
      if (h.b > kMaxAbortText) {
        lose_pair(pair, describe_peer(pair.peer_) + " aborted");
        return;
      }
      pair.rx_text_.assign(h.b, 0);
      pair.rx_target_ = pair.rx_text_.data();
      pair.rx_state_ = RxState::kPayload;
      pair.rx_left_ = h.b;
      if (h.b == 0) on_payload_done(pair);
      return;
    case wire::FrameType::kGoodbye:
      fail_pair(pair, ErrorKind::kConnection,
                describe_peer(pair.peer_) + " has closed this context (clean shutdown)");
      return;
  }
}

void TcpMesh::on_payload_done(Pair& pair) {
  const wire::FrameHeader& h = pair.rx_header_;
  pair.rx_state_ = RxState::kHeader;
  pair.rx_target_ = nullptr;
  if (pair.rx_op_) {
    OpPtr op = std::move(pair.rx_op_);
    pair.rx_op_ = nullptr;
    complete(op);
    return;
  }
  if (pair.rx_unexpected_) {
    std::unique_ptr<Unexpected> message = std::move(pair.rx_unexpected_);
    // A receive may have been posted while the payload was arriving.
    if (OpPtr op = match_posted(pair.peer_, h.a)) {
      deliver_unexpected(op, *message);
    } else {
      unexpected_[h.a].push_back(std::move(message));
    }
    return;
  }
  if (h.type == wire::FrameType::kAbort) {
    std::string reason(pair.rx_text_.begin(), pair.rx_text_.end());
    lose_pair(pair, describe_peer(pair.peer_) + " aborted: " + reason);
  }
}

void TcpMesh::deliver_unexpected(const OpPtr& op, Unexpected& message) {
  Pair& pair = *pairs_[message.peer];
  op->source_ = message.peer;
  if (message.length != op->bytes_) {
    reject_size(pair, op, message.length);
  } else if (message.rendezvous) {
    clear_to_send(pair, op, message.send_id);
  } else {
    if (message.length > 0) std::memcpy(op->data_, message.payload.data(), message.length);
    complete(op);
  }
  if (!message.rendezvous) {
    unexpected_bytes_ -= message.length;
    resume_blocked_pairs();
  }
}

void TcpMesh::clear_to_send(Pair& pair, const OpPtr& op, uint64_t send_id) {
  if (!pair.open_) {
    fail_op(op, pair.error_kind_, pair.error_);
    return;
  }
  op->id_ = next_id_++;
  awaiting_data_[op->id_] = op;
  queue_control(pair, wire::FrameType::kClearToSend, send_id, 0, op->id_);
}

void TcpMesh::queue_frame(Pair& pair, OutFrame frame) {
  if (!pair.open_) {
    if (frame.op) fail_op(frame.op, pair.error_kind_, pair.error_);
    return;
  }
  bool idle = pair.out_.empty();
  pair.out_.push_back(std::move(frame));
  // Write inline from the calling thread; the event loop takes over only when the socket is full.
  if (idle) write_pair(pair);
}

void TcpMesh::queue_control(Pair& pair, wire::FrameType type, uint64_t a, uint64_t b, uint64_t c) {
  OutFrame frame;
  wire::encode_header({type, a, b, c}, frame.header);
  queue_frame(pair, std::move(frame));
}

void TcpMesh::resume_blocked_pairs() {
  for (auto& pair : pairs_) {
    if (!pair || !pair->open_ || pair->rx_state_ != RxState::kBlocked) continue;
    if (unexpected_bytes_ > 0 && unexpected_bytes_ + pair->rx_header_.b > unexpected_limit_) {
      continue;
    }
    on_frame_header(*pair);  // re-dispatch the held header now that there is room
    if (pair->open_ && pair->rx_state_ != RxState::kBlocked) {
      update_interest(*pair);
      read_pair(*pair);
    }
  }
}

}  // namespace gloo_lite::tcp
