// The public side of a TCP mesh: posting sends and receives, waiting, cancelling, and failure.
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
  if (status_ == Status::kPending) return false;
  if (status_ == Status::kDone) return true;
  throw_error(error_kind_, error_);
}

TcpMesh::TcpMesh(EventLoop* loop, const SocketAddress& bind, int rank, int size,
                 const transport::MeshOptions& options)
    : loop_(loop), rank_(rank), size_(size) {
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
  pairs_.resize(size);
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

std::string TcpMesh::describe_op(const Op& op) const {
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
  return text + " (tag " + std::to_string(op.tag_) + ", " + std::to_string(op.bytes_) + " bytes)";
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

static void check_range(const char* what, const transport::Memory& memory, size_t offset,
                        size_t bytes) {
  if (offset > memory.bytes() || bytes > memory.bytes() - offset) {
    throw InvalidArgument(std::string(what) + ": offset " + std::to_string(offset) + " + " +
                          std::to_string(bytes) + " bytes exceeds the registered region of " +
                          std::to_string(memory.bytes()) + " bytes");
  }
}

void TcpMesh::check_peer(const char* what, int peer) const {
  if (peer < 0 || peer >= size_ || peer == rank_) {
    throw InvalidArgument(std::string(what) + ": peer " + std::to_string(peer) +
                          " is not another rank of this context (rank " + std::to_string(rank_) +
                          " of " + std::to_string(size_) + ")");
  }
}

transport::RequestPtr TcpMesh::send(int peer, uint64_t tag, const transport::Memory& memory,
                                    size_t offset, size_t bytes) {
  check_peer("send", peer);
  check_range("send", memory, offset, bytes);
  auto op = std::make_shared<Op>(this, Op::Kind::kSend, tag, memory.data() + offset, bytes);
  op->peers_ = {peer};
  std::lock_guard<std::mutex> lock(mutex_);
  Pair& pair = *pairs_[peer];
  if (mesh_error_kind_ != ErrorKind::kNone) {
    fail_op(op, mesh_error_kind_, mesh_error_);
  } else if (!pair.open_) {
    fail_op(op, pair.error_kind_, pair.error_);
  } else if (bytes <= eager_bytes_) {
    OutFrame frame;
    wire::encode_header({wire::FrameType::kEager, tag, bytes, 0}, frame.header);
    frame.payload = op->data_;
    frame.payload_bytes = bytes;
    frame.op = op;
    queue_frame(pair, std::move(frame));
  } else {
    op->id_ = next_id_++;
    awaiting_cts_[op->id_] = op;
    queue_control(pair, wire::FrameType::kReadyToSend, tag, bytes, op->id_);
  }
  return op;
}

transport::RequestPtr TcpMesh::recv(const std::vector<int>& peers, uint64_t tag,
                                    transport::Memory& memory, size_t offset, size_t bytes) {
  if (peers.empty()) throw InvalidArgument("recv: the set of peers is empty");
  for (int peer : peers) check_peer("recv", peer);
  check_range("recv", memory, offset, bytes);
  auto op = std::make_shared<Op>(this, Op::Kind::kRecv, tag, memory.data() + offset, bytes);
  op->peers_ = peers;
  std::lock_guard<std::mutex> lock(mutex_);
  // Messages that already arrived are matched first, oldest first.
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
  const Pair* failed = nullptr;
  for (int peer : peers) {
    if (pairs_[peer]->open_) {
      failed = nullptr;
      break;
    }
    failed = pairs_[peer].get();
  }
  if (failed != nullptr) {
    fail_op(op, failed->error_kind_, failed->error_);
    return op;
  }
  posted_[tag].push_back(op);
  return op;
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
  while (true) {
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

void TcpMesh::wake_driver() {
  if (!driver_active_ || std::this_thread::get_id() == driver_thread_) return;
  uint64_t one = 1;
  ssize_t ignored = ::write(driver_wake_.get(), &one, sizeof(one));
  (void)ignored;
}

void TcpMesh::cancel(const transport::RequestPtr& request) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (cancel_locked(std::static_pointer_cast<Op>(request))) completed_.notify_all();
}

bool TcpMesh::cancel_locked(const OpPtr& op) {
  if (op->status_ != Op::Status::kPending) return false;
  if (op->kind_ == Op::Kind::kRecv) {
    auto found = posted_.find(op->tag_);
    if (found != posted_.end()) {
      found->second.remove(op);
      if (found->second.empty()) posted_.erase(found);
    }
    awaiting_data_.erase(op->id_);
    for (auto& pair : pairs_) {
      if (pair) detach(*pair, op.get());
    }
  } else {
    if (op->id_ != 0) awaiting_cts_.erase(op->id_);
    detach(*pairs_[op->peers_[0]], op.get());
  }
  op->status_ = Op::Status::kCancelled;
  return true;
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

void TcpMesh::complete(const OpPtr& op) {
  if (op->status_ != Op::Status::kPending) return;
  op->status_ = Op::Status::kDone;
  completed_.notify_all();
  wake_driver();
}

void TcpMesh::fail_op(const OpPtr& op, ErrorKind kind, const std::string& message) {
  if (op->status_ != Op::Status::kPending) return;
  op->status_ = Op::Status::kFailed;
  op->error_kind_ = kind;
  op->error_ = message;
  completed_.notify_all();
  wake_driver();
}

void TcpMesh::fail_pair(Pair& pair, ErrorKind kind, const std::string& message) {
  if (!pair.open_) return;
  pair.open_ = false;
  pair.error_kind_ = kind;
  pair.error_ = message;
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
  for (auto it = awaiting_cts_.begin(); it != awaiting_cts_.end();) {
    if (it->second->peers_[0] == peer) {
      fail_op(it->second, kind, message);
      it = awaiting_cts_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = awaiting_data_.begin(); it != awaiting_data_.end();) {
    if (it->second->source_ == peer) {
      fail_op(it->second, kind, message);
      it = awaiting_data_.erase(it);
    } else {
      ++it;
    }
  }
  // Receives fail when no peer they could match is left; eager data that already arrived
  // from the peer stays deliverable.
  for (auto& [tag, ops] : posted_) {
    for (auto it = ops.begin(); it != ops.end();) {
      bool alive = false;
      for (int candidate : (*it)->peers_) alive = alive || pairs_[candidate]->open_;
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
                                    return m->peer == peer && m->rendezvous;
                                  }),
                   messages.end());
  }
}

void TcpMesh::lose_pair(Pair& pair, const std::string& message) {
  LOG_WARN("tcp", message);
  fail_pair(pair, ErrorKind::kConnection, message);
  fail_mesh(ErrorKind::kConnection, message);
}

void TcpMesh::fail_mesh(ErrorKind kind, const std::string& message) {
  if (mesh_error_kind_ == ErrorKind::kNone) {
    mesh_error_kind_ = kind;
    mesh_error_ = message;
  }
  // A broken connection breaks the context: every rank's collectives depend on every peer.
  for (auto& pair : pairs_) {
    if (!pair || !pair->open_) continue;
    for (auto& frame : pair->out_) {
      if (frame.op) fail_op(frame.op, kind, message);
    }
    if (pair->rx_op_) fail_op(pair->rx_op_, kind, message);
    detach(*pair, nullptr);
  }
  for (auto& [tag, ops] : posted_) {
    for (auto& op : ops) fail_op(op, kind, message);
  }
  posted_.clear();
  for (auto& [id, op] : awaiting_cts_) fail_op(op, kind, message);
  awaiting_cts_.clear();
  for (auto& [id, op] : awaiting_data_) fail_op(op, kind, message);
  awaiting_data_.clear();
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
