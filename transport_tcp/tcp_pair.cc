// Socket I/O of a pair: the receive state machine (headers through a staging buffer, large
// payloads straight into their destination) and the send queue (writev of header + user
// payload, no copy). Always called with the mesh mutex held.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>

#include "gloo_lite/base/log.h"
#include "transport_tcp/tcp_mesh.h"

namespace gloo_lite::tcp {
namespace {

constexpr size_t kStageBytes = 64 * 1024;
// Payloads at least this large are read straight into their destination, not staged.
constexpr size_t kDirectReadMin = 4096;
constexpr int kMaxIov = 64;

}  // namespace

void Pair::on_events(uint32_t events) {
  std::lock_guard<std::mutex> lock(mesh_->mutex_);
  if (!open_) return;
  if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) mesh_->read_pair(*this);
  if (open_ && (events & EPOLLOUT)) mesh_->write_pair(*this);
}

std::deque<OutFrame>::iterator Pair::first_unbegun() {
  auto it = out_.begin();
  if (it != out_.end() && it->written > 0) ++it;
  // Encrypted bytes not yet taken cover the frames from the front's written bytes on.
  size_t committed = tls_ ? tls_->unreported() : 0;
  if (committed > 0 && it != out_.begin()) {
    size_t left = out_.front().segment_total() - out_.front().written;
    committed -= std::min(committed, left);
  }
  while (committed > 0 && it != out_.end()) {
    committed -= std::min(committed, it->segment_total() - it->written);
    ++it;
  }
  return it;
}

void TcpMesh::update_interest(Pair& pair) {
  if (!pair.open_) return;
  // A parked pair with something to write, or held back, goes back to the loop: nobody polls it.
  if (pair.owner_ == Owner::kParked &&
      (!pair.out_.empty() || pair.rx_state_ == RxState::kBlocked)) {
    pair.owner_ = Owner::kLoop;
  }
  // A driven pair's socket is served by the waiting caller, reads and writes alike.
  bool loop_owned = pair.owner_ == Owner::kLoop;
  bool loop_reads = pair.rx_state_ != RxState::kBlocked && loop_owned;
  bool loop_writes = !pair.out_.empty() && loop_owned;
  if (pair.owner_ == Owner::kDriven && !pair.out_.empty())
    wake_polling_waiter();  // it must now poll for writability
  uint32_t wanted = (loop_reads ? uint32_t{EPOLLIN} : 0u) | (loop_writes ? uint32_t{EPOLLOUT} : 0u);
  if (wanted != pair.interest_) {
    loop_->modify(pair.fd_.get(), wanted, &pair);
    pair.interest_ = wanted;
  }
}

ssize_t TcpMesh::pair_recv(Pair& pair, void* data, size_t bytes) {
  if (pair.tls_) return pair.tls_->recv(data, bytes);
  return ::recv(pair.fd_.get(), data, bytes, MSG_DONTWAIT);
}

ssize_t TcpMesh::pair_send(Pair& pair, iovec* iov, int count) {
  if (pair.tls_) return pair.tls_->send(iov, count);
  msghdr message{};
  message.msg_iov = iov;
  message.msg_iovlen = static_cast<size_t>(count);
  return ::sendmsg(pair.fd_.get(), &message, MSG_NOSIGNAL | MSG_DONTWAIT);
}

std::string TcpMesh::pair_error(const Pair& pair) {
  return pair.tls_ ? pair.tls_->error() : std::strerror(errno);
}

void TcpMesh::read_pair(Pair& pair, bool drain) {
  bool outer = !pair.reading_;
  pair.reading_ = true;
  read_frames(pair, drain);
  if (!outer) return;
  pair.reading_ = false;
  // A write failed while we were reading, and what the peer sent before it closed held no
  // reason: the write's error is the cause.
  if (pair.open_ && !pair.write_error_.empty()) {
    lose_connection(pair, "lost the connection to " + describe_peer(pair.peer_) +
                              " while sending: " + pair.write_error_);
  }
}

void TcpMesh::read_frames(Pair& pair, bool drain) {
  if (pair.stage_.empty()) pair.stage_.resize(kStageBytes);
  bool short_read = false;
  while (pair.open_) {
    consume_staged(pair);
    if (!pair.open_ || pair.rx_state_ == RxState::kBlocked) return;
    // The last staged recv did not fill its buffer: the socket is most likely empty, and a
    // second recv would only return EAGAIN. The loop's epoll and the waiter's poll are
    // level-triggered, so whatever arrives meanwhile is reported again. (Direct reads of large
    // payloads keep reading: on a busy stream the next recv usually finds more.)
    if (short_read && !drain && pair.write_error_.empty()) return;
    ssize_t n = receive(pair, &short_read);
    if (n > 0 || (n < 0 && errno == EINTR)) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n == 0 && closed_) {
      // We said goodbye and the peer closed its end in answer: the normal end of a pair.
      pair.open_ = false;
      return;
    }
    lose_connection(
        pair,
        n == 0 ? "lost the connection to " + describe_peer(pair.peer_) +
                     ": the peer closed it without saying goodbye (did rank " +
                     std::to_string(pair.peer_) + " crash, get killed or exit early?)"
               : "lost the connection to " + describe_peer(pair.peer_) + ": " + pair_error(pair));
    return;
  }
}

void TcpMesh::consume_staged(Pair& pair) {
  while (pair.open_ && pair.rx_state_ != RxState::kBlocked && pair.stage_end_ > pair.stage_begin_) {
    size_t staged = pair.stage_end_ - pair.stage_begin_;
    if (pair.rx_state_ == RxState::kHeader) {
      if (staged < wire::kHeaderBytes) return;
      if (!wire::decode_header(&pair.stage_[pair.stage_begin_], &pair.rx_header_)) {
        lose_pair(pair, "protocol error on the connection to " + describe_peer(pair.peer_) +
                            ": a frame header is corrupt (a stranger on the port, or memory "
                            "corruption in the peer)");
        return;
      }
      pair.stage_begin_ += wire::kHeaderBytes;
      on_frame_header(pair);
    } else {
      size_t n = std::min(staged, pair.rx_left_);
      if (pair.rx_target_ != nullptr) {
        std::memcpy(pair.rx_target_, &pair.stage_[pair.stage_begin_], n);
        pair.rx_target_ += n;
      }
      pair.stage_begin_ += n;
      pair.rx_left_ -= n;
      if (pair.rx_left_ == 0) on_payload_done(pair);
    }
  }
}

ssize_t TcpMesh::receive(Pair& pair, bool* short_read) {
  ssize_t n;
  size_t asked;
  bool direct = pair.rx_state_ == RxState::kPayload && pair.rx_target_ != nullptr &&
                pair.rx_left_ >= kDirectReadMin && pair.stage_begin_ == pair.stage_end_;
  if (direct) {
    asked = pair.rx_left_;
    n = pair_recv(pair, pair.rx_target_, asked);
  } else {
    // Keep a partial header at the front so the staging buffer never overflows.
    size_t staged = pair.stage_end_ - pair.stage_begin_;
    if (pair.stage_begin_ > 0) {
      std::memmove(pair.stage_.data(), &pair.stage_[pair.stage_begin_], staged);
      pair.stage_begin_ = 0;
      pair.stage_end_ = staged;
    }
    asked = pair.stage_.size() - staged;
    if (pair.segment_follows_ && staged < wire::kHeaderBytes) asked = wire::kHeaderBytes - staged;
    n = pair_recv(pair, &pair.stage_[pair.stage_end_], asked);
  }
  if (n <= 0) return n;  // errno as the recv left it
  // Over TLS a read ends at a record's end, and the next may wait decrypted in the channel,
  // where epoll cannot see it: short only when the channel holds nothing either.
  *short_read = !direct && static_cast<size_t>(n) < asked && !(pair.tls_ && pair.tls_->buffered());
  if (direct) {
    pair.rx_target_ += n;
    pair.rx_left_ -= static_cast<size_t>(n);
    if (pair.rx_left_ == 0) on_payload_done(pair);
  } else {
    pair.stage_end_ += static_cast<size_t>(n);
  }
  return n;
}

void TcpMesh::write_pair(Pair& pair) {
  if (!pair.write_error_.empty()) return;  // the pair fails once its reads are done
  while (pair.open_ && !pair.out_.empty()) {
    iovec iov[kMaxIov];
    int count = 0;
    for (auto it = pair.out_.begin(); it != pair.out_.end() && count + 2 <= kMaxIov; ++it) {
      size_t done = it->written;
      if (done < wire::kHeaderBytes) {
        iov[count++] = {it->header + done, wire::kHeaderBytes - done};
        done = 0;
      } else {
        done -= wire::kHeaderBytes;
      }
      if (it->segment > done) {
        iov[count++] = {const_cast<uint8_t*>(it->payload) + it->sent + done, it->segment - done};
      }
      // The next segment's header is encoded once this one is out, and frames queued ahead
      // of it meanwhile go first: nothing after it joins this write.
      if (!it->last_segment()) break;
    }
    ssize_t n = pair_send(pair, iov, count);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EINTR) continue;
      // A peer that fails tells us why and closes; our write may hit its close before we read
      // its reason. Read what arrived first (all of it): an abort frame there fails the pair
      // with its cause; otherwise read_pair fails it with this error.
      pair.write_error_ = pair_error(pair);
      if (!pair.reading_) read_pair(pair, /*drain=*/true);
      return;
    }
    size_t left = static_cast<size_t>(n);
    while (!pair.out_.empty()) {
      OutFrame& frame = pair.out_.front();
      size_t take = std::min(left, frame.segment_total() - frame.written);
      frame.written += take;
      left -= take;
      if (frame.written < frame.segment_total()) break;
      if (!frame.last_segment()) {
        requeue_after_segment(pair);
        break;  // it ended this write (see above): left is 0
      }
      OpPtr op = std::move(frame.op);
      pair.out_.pop_front();
      if (op) complete(op);
    }
  }
  update_interest(pair);
}

void TcpMesh::begin_segment(OutFrame& frame) const {
  frame.segment = std::min(frame.payload_bytes - frame.sent, segment_bytes_);
  frame.written = 0;
  wire::FrameHeader header;
  header.type = wire::FrameType::kData;
  header.recv_id = frame.recv_id;
  header.length = frame.segment;
  header.sent = frame.sent;
  wire::encode_header(header, frame.header);
}

void TcpMesh::requeue_after_segment(Pair& pair) {
  OutFrame frame = std::move(pair.out_.front());
  pair.out_.pop_front();
  if (pair.abort_queued_) {
    // An abort waits behind it: the rest of the payload (seconds of a slow link) would go
    // first and the reason might never leave. The receiver is at a frame boundary and reads
    // the abort next; the send fails with it.
    if (frame.op) fail_op(frame.op, pair.abort_failure_);
    return;
  }
  frame.sent += frame.segment;
  begin_segment(frame);
  auto behind = pair.out_.begin();
  while (behind != pair.out_.end() && behind->lane > Lane::kPayload) ++behind;
  pair.out_.insert(behind, std::move(frame));
}

}  // namespace gloo_lite::tcp
