// The public side of a TCP mesh: waiting (the waiter reads its sockets itself), cancel and
// failure on the sockets. Posting and matching are the shared engine's (matching.h).
#include "transport_tcp/tcp_mesh.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"

namespace gloo_lite::tcp {

TcpMesh::TcpMesh(EventLoop* loop, const SocketAddress& bind, int rank, int size,
                 const transport::MeshOptions& options)
    : MatchingMesh(rank, size, "tcp"), loop_(loop) {
  eager_bytes_ = options.eager_bytes ? options.eager_bytes
                                     : static_cast<size_t>(knob_int("GLOO_LITE_TCP_EAGER_BYTES"));
  unexpected_limit_ = options.unexpected_bytes
                          ? options.unexpected_bytes
                          : static_cast<size_t>(knob_int("GLOO_LITE_TCP_UNEXPECTED_BYTES"));
  listener_ = listen_tcp(bind);
  set_nonblocking(listener_.get(), true);
  listen_address_ = SocketAddress::local_of(listener_.get());
  driver_wake_ = Fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  spin_us_ = knob_int("GLOO_LITE_SPIN_US");
  pairs_.resize(static_cast<size_t>(size));
}

TcpMesh::~TcpMesh() {
  close_all(/*goodbye=*/true);
  for (auto& pair : pairs_) {
    if (pair && pair->fd_.valid()) loop_->remove(pair->fd_.get());
  }
}

std::string TcpMesh::describe_peer(int peer) const {
  std::string text = "rank " + std::to_string(peer);
  if (peer >= 0 && peer < size_ && pairs_[peer] && !pairs_[peer]->address_.empty()) {
    text += " (" + pairs_[peer]->address_ + ")";
  }
  return text;
}

std::unique_ptr<transport::Memory> TcpMesh::register_memory(void* data, size_t bytes,
                                                            transport::MemoryKind kind) {
  if (kind != transport::MemoryKind::kHost) {
    throw InvalidArgument(
        "the TCP transport registers host memory only; stage device memory "
        "through a host buffer");
  }
  if (data == nullptr && bytes > 0) throw InvalidArgument("register_memory: null buffer");
  return std::make_unique<transport::Memory>(data, bytes, kind);
}

void TcpMesh::wait(const std::vector<transport::RequestPtr>& requests, const Deadline& deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  std::vector<Pair*> driven;
  // Hand the sockets back to the event loop however this wait ends.
  struct Handback {
    TcpMesh* mesh;
    std::vector<Pair*>& driven;
    ~Handback() { mesh->stop_driving(driven); }
  } handback{this, driven};
  while (!finished(requests, deadline)) {
    if (drive(requests, deadline, lock, driven)) continue;
    if (deadline.is_never()) {
      completed_.wait(lock);
    } else {
      completed_.wait_until(lock, deadline.time_point());
    }
  }
}

// The waiting thread reads the sockets its requests depend on instead of sleeping until the
// event loop hands data over: one wake-up per message instead of two (the loop's and ours),
// which on a loaded 2-core machine is most of a small message's latency. Returns false when
// this thread cannot drive (another one does, or nothing to read) and should sleep instead.
bool TcpMesh::drive(const std::vector<transport::RequestPtr>& requests, const Deadline& deadline,
                    std::unique_lock<std::mutex>& lock, std::vector<Pair*>& driven) {
  constexpr size_t kMaxDriven = 64;
  if (!driver_wake_.valid()) return false;
  if (driven.empty()) {
    if (driver_active_) return false;
    for (const auto& request : requests) {
      const Op& op = static_cast<const Op&>(*request);
      if (op.status_ != Op::Status::kPending) continue;
      for (int peer : op.source_ >= 0 ? std::vector<int>{op.source_} : op.peers_) {
        Pair* pair = pairs_[peer].get();
        if (!pair->open_ || pair->driven_ || pair->rx_state_ == RxState::kBlocked) continue;
        if (driven.size() == kMaxDriven) break;
        pair->driven_ = true;
        update_interest(*pair);
        driven.push_back(pair);
      }
    }
    if (driven.empty()) return false;
    driver_active_ = true;
    driver_thread_ = std::this_thread::get_id();
    // Data may have arrived between the loop's last read and the hand-over.
    for (Pair* pair : driven) read_pair(*pair);
    return true;
  }
  std::vector<pollfd> fds;
  fds.push_back({driver_wake_.get(), POLLIN, 0});
  for (Pair* pair : driven) {
    short events = static_cast<short>(POLLIN | (pair->out_.empty() ? 0 : POLLOUT));
    fds.push_back({pair->open_ ? pair->fd_.get() : -1, events, 0});
  }
  lock.unlock();
  // Opt-in bounded spin (GLOO_LITE_SPIN_US): poll without sleeping for a few microseconds
  // first, for machines with a core to spare per rank. Off by default: on 2 cores running 8
  // ranks, a spinning rank steals the time its peers need to answer.
  int ready = 0;
  if (spin_us_ > 0) {
    auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us_);
    do {
      ready = ::poll(fds.data(), fds.size(), 0);
    } while (ready == 0 && std::chrono::steady_clock::now() < until);
  }
  if (ready == 0) ready = ::poll(fds.data(), fds.size(), deadline.poll_timeout_ms());
  lock.lock();
  if (ready <= 0) return true;
  if (fds[0].revents & POLLIN) {
    uint64_t drained = 0;
    ssize_t ignored = ::read(driver_wake_.get(), &drained, sizeof(drained));
    (void)ignored;
  }
  for (size_t i = 0; i < driven.size(); ++i) {
    short revents = fds[i + 1].revents;
    if ((revents & (POLLIN | POLLHUP | POLLERR)) && driven[i]->open_) read_pair(*driven[i]);
    if ((revents & POLLOUT) && driven[i]->open_) write_pair(*driven[i]);
  }
  return true;
}

void TcpMesh::stop_driving(std::vector<Pair*>& driven) {
  if (driven.empty()) return;
  for (Pair* pair : driven) {
    pair->driven_ = false;
    update_interest(*pair);
  }
  driven.clear();
  driver_active_ = false;
}

void TcpMesh::wake_polling_waiter() {
  if (!driver_active_ || std::this_thread::get_id() == driver_thread_) return;
  uint64_t one = 1;
  ssize_t ignored = ::write(driver_wake_.get(), &one, sizeof(one));
  (void)ignored;
}

void TcpMesh::cancel_on_wire(const OpPtr& op, bool /*cleared*/) {
  // A receive that gave clear-to-send needs nothing more: its data, when it comes, finds no
  // receive awaiting it and is read and discarded.
  if (op->kind_ == Op::Kind::kRecv) {
    for (auto& pair : pairs_) {
      if (pair) detach(*pair, op.get());
    }
  } else {
    detach(*pairs_[op->peers_[0]], op.get());
  }
}

void TcpMesh::detach(Pair& pair, const Op* only) {
  for (auto it = pair.out_.begin(); it != pair.out_.end();) {
    if (!it->op || (only != nullptr && it->op.get() != only)) {
      ++it;
    } else if (it->written == 0) {
      it = pair.out_.erase(it);
    } else {
      // Half on the wire: finish the frame from a copy, so the stream stays framed and the
      // caller's buffer is free.
      it->owned.assign(it->payload, it->payload + it->payload_bytes);
      it->payload = it->owned.data();
      it->op = nullptr;
      ++it;
    }
  }
  if (pair.rx_op_ && (only == nullptr || pair.rx_op_.get() == only)) {
    pair.rx_op_ = nullptr;
    pair.rx_target_ = nullptr;  // the rest of the payload is read and discarded
  }
  update_interest(pair);
}

void TcpMesh::fail_pair(Pair& pair, ErrorKind kind, const std::string& message) {
  if (!pair.open_) return;
  pair.open_ = false;
  pair.failure_ = {kind, message};
  // Give queued control frames (a mismatch notice) one chance to leave before the close.
  if (!pair.out_.empty() && pair.out_.front().written == 0 && !pair.out_.front().op) {
    OutFrame& frame = pair.out_.front();
    iovec iov[2] = {{frame.header, wire::kHeaderBytes},
                    {const_cast<uint8_t*>(frame.payload), frame.payload_bytes}};
    msghdr notice{};
    notice.msg_iov = iov;
    notice.msg_iovlen = frame.payload_bytes ? 2 : 1;
    ssize_t ignored = ::sendmsg(pair.fd_.get(), &notice, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)ignored;
  }
  loop_->modify(pair.fd_.get(), 0, &pair);
  ::shutdown(pair.fd_.get(), SHUT_RDWR);
  int peer = pair.peer_;
  for (auto& frame : pair.out_) {
    if (frame.op) fail_op(frame.op, kind, message);
  }
  pair.out_.clear();
  if (pair.rx_op_) fail_op(pair.rx_op_, kind, message);
  pair.rx_op_ = nullptr;
  pair.rx_unexpected_.reset();
  fail_operations_of_peer(peer, kind, message);
}

void TcpMesh::lose_pair(Pair& pair, const std::string& message) {
  LOG_WARN("tcp", message);
  fail_pair(pair, ErrorKind::kConnection, message);
  fail_mesh(ErrorKind::kConnection, message);
}

void TcpMesh::fail_mesh(ErrorKind kind, const std::string& message) {
  // A broken connection breaks the context: every rank's collectives depend on every peer.
  for (auto& pair : pairs_) {
    if (!pair || !pair->open_) continue;
    for (auto& frame : pair->out_) {
      if (frame.op) fail_op(frame.op, kind, message);
    }
    if (pair->rx_op_) fail_op(pair->rx_op_, kind, message);
    detach(*pair, nullptr);
  }
  fail_all_operations(kind, message);
}

void TcpMesh::queue_abort(Pair& pair, const std::string& reason) {
  OutFrame frame;
  std::string text = reason.substr(0, 4096);
  wire::encode_header({wire::FrameType::kAbort, 0, text.size(), 0}, frame.header);
  frame.owned.assign(text.begin(), text.end());
  frame.payload = frame.owned.data();
  frame.payload_bytes = frame.owned.size();
  queue_frame(pair, std::move(frame));
}

void TcpMesh::abort(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& pair : pairs_) {
    if (pair && pair->open_) queue_abort(*pair, reason);
  }
  std::string message = "rank " + std::to_string(rank_) + " aborted: " + reason;
  LOG_WARN("tcp", message << "; telling its peers");
  fail_mesh(ErrorKind::kConnection, message);
  for (auto& pair : pairs_) {
    if (pair && pair->open_) fail_pair(*pair, ErrorKind::kConnection, message);
  }
}

}  // namespace gloo_lite::tcp
