// The public side of a TCP mesh: waiting (the waiter reads its sockets itself), cancel and
// failure on the sockets. Posting and matching are the shared engine's (matching.h).
#include "transport_tcp/tcp_mesh.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/transport/names.h"

namespace gloo_lite::tcp {
namespace {

// The most pairs one waiting thread drives (reads itself) at once; the loop serves the rest.
constexpr size_t kMaxDriven = 64;
// The longest a pair stays parked before the event loop takes it back: the bound on how late a
// message is read (a clear-to-send answered, an abort or a dead peer noticed) while no thread
// waits on the mesh. The loop takes back pairs parked for at least half of it.
constexpr std::chrono::microseconds kParkGrace{2000};
// When the timer finds the mesh busy (a thread holds the mutex), it retries this much later
// instead of queueing on the mutex behind that thread.
constexpr std::chrono::microseconds kReclaimRetry{200};

}  // namespace

TcpMesh::TcpMesh(EventLoop* loop, const SocketAddress& bind, int rank, int size,
                 const transport::MeshOptions& options)
    : MatchingMesh(rank, size, transport::kTcpTransport), loop_(loop) {
  eager_bytes_ = options.eager_bytes ? options.eager_bytes
                                     : static_cast<size_t>(knob_int("GLOO_LITE_TCP_EAGER_BYTES"));
  // A bound given by the caller holds for every peer.
  eager_bytes_across_hosts_ =
      options.eager_bytes ? options.eager_bytes
                          : static_cast<size_t>(knob_int("GLOO_LITE_TCP_EAGER_BYTES_ACROSS_HOSTS"));
  segment_bytes_ = static_cast<size_t>(knob_int("GLOO_LITE_TCP_SEGMENT_BYTES"));
  unexpected_limit_ = options.unexpected_bytes
                          ? options.unexpected_bytes
                          : static_cast<size_t>(knob_int("GLOO_LITE_TCP_UNEXPECTED_BYTES"));
  listener_ = listen_tcp(bind);
  set_nonblocking(listener_.get(), true);
  listen_address_ = SocketAddress::local_of(listener_.get());
  driver_wake_ = Fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  reclaim_timer_ = Fd(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  // Without the timer nothing could take parked pairs back: then pairs are never parked.
  if (reclaim_timer_.valid()) loop_->add(reclaim_timer_.get(), EPOLLIN, &reclaimer_);
  pairs_.resize(static_cast<size_t>(size));
}

TcpMesh::~TcpMesh() {
  close_all(/*goodbye=*/true);
  if (reclaim_timer_.valid()) loop_->remove(reclaim_timer_.get());
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

bool TcpMesh::wait_until(const std::vector<transport::RequestPtr>& requests,
                         const Deadline& deadline, const Deadline& until) {
  const Deadline bound = until.earlier(deadline);
  std::unique_lock<std::mutex> lock(mutex_);
  ++waiters_;
  std::vector<Pair*> driven;
  // Park the sockets (or hand them back to the event loop) however this wait ends.
  struct Handback {
    TcpMesh* mesh;
    std::vector<Pair*>& driven;
    ~Handback() {
      --mesh->waiters_;
      mesh->stop_driving(driven);
    }
  } handback{this, driven};
  while (!finished(requests, deadline)) {
    if (bound.expired() && !deadline.expired()) return false;  // `until` came first
    if (drive(requests, bound, lock, driven)) continue;
    if (bound.is_never()) {
      completed_.wait(lock);
    } else {
      completed_.wait_until(lock, bound.time_point());
    }
  }
  return true;
}

// The waiting thread reads the sockets its requests depend on instead of sleeping until the
// event loop hands data over: one wake-up per message instead of two (the loop's and ours),
// which on a loaded 2-core machine is most of a small message's latency. Returns false when
// this thread cannot drive (another one does, or nothing to read) and should sleep instead.
bool TcpMesh::drive(const std::vector<transport::RequestPtr>& requests, const Deadline& deadline,
                    std::unique_lock<std::mutex>& lock, std::vector<Pair*>& driven) {
  if (!driver_wake_.valid()) return false;
  if (driven.empty()) return start_driving(requests, driven);
  drive_once(deadline, lock, driven);
  return true;
}

bool TcpMesh::start_driving(const std::vector<transport::RequestPtr>& requests,
                            std::vector<Pair*>& driven) {
  for (const auto& request : requests) {
    const Op& op = static_cast<const Op&>(*request);
    if (op.status_ != Op::Status::kPending) continue;
    for (int peer : op.source_ >= 0 ? std::vector<int>{op.source_} : op.peers_) {
      Pair* pair = pairs_[peer].get();
      if (!pair->open_ || pair->owner_ == Owner::kDriven) continue;
      if (driver_active_) {
        // Another thread drives: it serves its own pairs, the loop must serve ours.
        if (pair->owner_ == Owner::kParked) unpark(*pair);
        continue;
      }
      if (pair->rx_state_ == RxState::kBlocked) continue;
      if (driven.size() == kMaxDriven) break;
      bool from_loop = pair->owner_ == Owner::kLoop;
      pair->owner_ = Owner::kDriven;
      if (from_loop) update_interest(*pair);  // one epoll_ctl; a parked pair needs none
      driven.push_back(pair);
    }
  }
  if (driven.empty()) return false;
  size_t needed = driven.size();
  // Adopt every other parked pair too: a waiting thread serves them as the loop would (a
  // clear-to-send, an abort, the next step's message), at no extra system call. Past
  // kMaxDriven they go back to the loop: a later park must not postpone their reclaim.
  for (auto& pair : pairs_) {
    if (!pair || !pair->open_ || pair->owner_ != Owner::kParked) continue;
    if (driven.size() == kMaxDriven) {
      unpark(*pair);
    } else {
      pair->owner_ = Owner::kDriven;
      driven.push_back(pair.get());
    }
  }
  driver_active_ = true;
  driver_thread_ = std::this_thread::get_id();
  // Read what already arrived before sleeping: one recv when the message is there.
  for (size_t i = 0; i < needed; ++i) read_pair(*driven[i]);
  return true;
}

void TcpMesh::drive_once(const Deadline& deadline, std::unique_lock<std::mutex>& lock,
                         const std::vector<Pair*>& driven) {
  std::vector<pollfd> fds;
  fds.push_back({driver_wake_.get(), POLLIN, 0});
  for (Pair* pair : driven) {
    // A pair held back by a full unexpected queue is not read (polling it would spin).
    short events = static_cast<short>((pair->rx_state_ == RxState::kBlocked ? 0 : POLLIN) |
                                      (pair->out_.empty() ? 0 : POLLOUT));
    fds.push_back({pair->open_ ? pair->fd_.get() : -1, events, 0});
  }
  if (!wait_policy_set_) {
    std::vector<std::string> addresses(static_cast<size_t>(size_));
    addresses[static_cast<size_t>(rank_)] = address();
    for (int peer = 0; peer < size_; ++peer) {
      if (peer != rank_ && pairs_[peer])
        addresses[static_cast<size_t>(peer)] = pairs_[peer]->address_;
    }
    wait_policy_.configure_for(local_ranks_per_core(address(), addresses), wait_bounds());
    wait_policy_set_ = true;
  }
  lock.unlock();
  int ready = poll_driven(fds, deadline);
  lock.lock();
  if (ready <= 0) return;
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
}

// Polling first saves the wake-up (scheduler latency, often more than the message's own time on
// a loaded host) when the message comes within the budget; the budget's bound and its
// adaptation keep a rank that waits for long from burning a core it may share with its peers.
int TcpMesh::poll_driven(std::vector<pollfd>& fds, const Deadline& deadline) {
  int ready = 0;
  wait_policy_.wait([&] { return (ready = ::poll(fds.data(), fds.size(), 0)) != 0; },
                    [&](const Deadline& until) {
                      ready = ::poll(fds.data(), fds.size(), until.poll_timeout_ms());
                      return ready != 0;
                    },
                    deadline);
  return ready;
}

void TcpMesh::stop_driving(std::vector<Pair*>& driven) {
  if (driven.empty()) return;
  auto now = std::chrono::steady_clock::now();
  bool parked = false;
  for (Pair* pair : driven) {
    if (pair->owner_ != Owner::kDriven) continue;
    if (reclaim_timer_.valid() && pair->open_ && pair->out_.empty() &&
        pair->rx_state_ != RxState::kBlocked) {
      // Keep it out of the loop's epoll set: the next wait adopts it as it is.
      pair->owner_ = Owner::kParked;
      pair->parked_at_ = now;
      parked = true;
    } else {
      // Something to write, or held back: the loop serves it from now on.
      pair->owner_ = Owner::kLoop;
      update_interest(*pair);
    }
  }
  driven.clear();
  driver_active_ = false;
  // Push the timer out rather than let it fire: while waits follow each other it never wakes the
  // loop, at one timerfd_settime per kParkGrace / 2. It fires kParkGrace after the last push;
  // every pair parked before the push - kParkGrace / 2 is then reclaimed.
  if (parked && (!reclaim_armed_ || now - reclaim_armed_at_ >= kParkGrace / 2)) {
    reclaim_armed_at_ = now;
    arm_reclaim(kParkGrace);
  }
  // Another thread waiting on this mesh sleeps on completed_: let it take over driving.
  if (waiters_ > 0) completed_.notify_all();
}

void TcpMesh::unpark(Pair& pair) {
  if (pair.owner_ != Owner::kParked) return;
  pair.owner_ = Owner::kLoop;
  update_interest(pair);
}

void TcpMesh::make_progress() {
  for (auto& pair : pairs_) {
    if (pair) unpark(*pair);
  }
}

void TcpMesh::arm_reclaim(std::chrono::nanoseconds after) {
  auto ns = std::max<int64_t>(after.count(), 1000);
  itimerspec spec{};
  spec.it_value.tv_sec = static_cast<time_t>(ns / 1000000000);
  spec.it_value.tv_nsec = static_cast<long>(ns % 1000000000);
  reclaim_armed_ = timerfd_settime(reclaim_timer_.get(), 0, &spec, nullptr) == 0;
}

void TcpMesh::reclaim_parked() {
  uint64_t expirations = 0;
  ssize_t ignored = ::read(reclaim_timer_.get(), &expirations, sizeof(expirations));
  (void)ignored;
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) {
    // Busy: do not make the holder hand the mutex over to us (a futex wake on its path).
    // reclaim_armed_ stays true, which it is again (only written under the mutex).
    itimerspec spec{};
    spec.it_value.tv_nsec = std::chrono::nanoseconds(kReclaimRetry).count();
    timerfd_settime(reclaim_timer_.get(), 0, &spec, nullptr);
    return;
  }
  reclaim_armed_ = false;
  auto now = std::chrono::steady_clock::now();
  auto next = std::chrono::steady_clock::duration::max();
  for (auto& pair : pairs_) {
    if (!pair || pair->owner_ != Owner::kParked) continue;
    auto parked_for = now - pair->parked_at_;
    if (!pair->open_ || parked_for >= kParkGrace / 2) {
      unpark(*pair);  // the loop's epoll (level-triggered) reports what is already there
    } else {
      next = std::min<std::chrono::steady_clock::duration>(next, kParkGrace / 2 - parked_for);
    }
  }
  if (next != std::chrono::steady_clock::duration::max()) {
    reclaim_armed_at_ = now + next - kParkGrace;  // so that the next park pushes it out
    arm_reclaim(next);
  }
}

void TcpMesh::wake_polling_waiter() {
  if (!driver_active_ || std::this_thread::get_id() == driver_thread_) return;
  uint64_t one = 1;
  ssize_t ignored = ::write(driver_wake_.get(), &one, sizeof(one));
  (void)ignored;
}

void TcpMesh::cancel_on_wire(const OpPtr& op, bool /*cleared*/, bool /*failing*/) {
  // A send awaiting clear-to-send is answered when the peer clears it (answer_for_lost_send).
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
  // Frames before the first not begun (over TLS, maybe encrypted already) are never dropped.
  size_t begun = static_cast<size_t>(pair.first_unbegun() - pair.out_.begin());
  for (auto it = pair.out_.begin(); it != pair.out_.end();) {
    bool droppable = begun == 0;
    if (begun > 0) --begun;
    if (!it->op || (only != nullptr && it->op.get() != only)) {
      ++it;
    } else if (droppable && it->untouched() && it->lane != Lane::kPayload) {
      it = pair.out_.erase(it);  // an eager message nobody has seen
    } else {
      // Half on the wire (a frame, or the first segments of a rendezvous payload), or a payload
      // the receiver cleared (it waits for every byte, begun or not): finish it from a copy, so
      // the stream stays framed, the receiver gets every byte it cleared, and the caller's
      // buffer is free.
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
    // Its current segment only, from where it starts (a payload paused between segments has
    // `sent` bytes out already and its header says so); other frames are one segment.
    OutFrame& frame = pair.out_.front();
    iovec iov[2] = {{frame.header, wire::kHeaderBytes},
                    {const_cast<uint8_t*>(frame.payload) + frame.sent, frame.segment}};
    ssize_t ignored = pair_send(pair, iov, frame.segment ? 2 : 1);
    (void)ignored;
  }
  // Out of the loop's set: a shut-down socket reports EPOLLHUP whatever the mask, and the loop
  // would spin on it until the mesh is destroyed.
  loop_->forget(pair.fd_.get());
  // The write side only: data the peer still sends then waits unread, where a shut read side
  // would answer it with a reset, and a reset drops what this rank wrote but the peer has not
  // received yet (its last frames: an abort's reason, a mismatch notice).
  ::shutdown(pair.fd_.get(), SHUT_WR);
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

void TcpMesh::lose_pair(Pair& pair, const std::string& message, ErrorKind kind) {
  LOG_INFO("tcp", message);  // the context warns once, when the failure reaches a call
  fail_pair(pair, kind, message);
  fail_mesh(kind, message);
}

void TcpMesh::lose_connection(Pair& pair, const std::string& message) {
  if (!mesh_failure().failed() && !reading_for_cause_) {
    // A lost connection is often only the consequence of another rank's abort: the peer that
    // reset it had been told, and so had this rank, on another pair, whose frame may wait
    // unread in its socket. Read those first: such an abort is then the mesh's failure and
    // cause (what this rank raises and forwards), and this loss one of its effects.
    reading_for_cause_ = true;
    try {
      for (auto& other : pairs_) {
        if (mesh_failure().failed()) break;
        if (other && other.get() != &pair && other->open_ && !other->reading_) {
          read_pair(*other, /*drain=*/true);
        }
      }
    } catch (...) {
      reading_for_cause_ = false;
      throw;
    }
    reading_for_cause_ = false;
  }
  lose_pair(pair, message);
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

void TcpMesh::queue_abort(Pair& pair, ErrorKind kind, const transport::AbortCause& cause) {
  OutFrame frame;
  std::string text = cause.text.substr(0, 4096);
  wire::FrameHeader header;
  header.type = wire::FrameType::kAbort;
  header.error = static_cast<uint8_t>(kind);
  header.origin = static_cast<uint32_t>(cause.origin + 1);
  header.length = text.size();
  wire::encode_header(header, frame.header);
  frame.owned.assign(text.begin(), text.end());
  frame.payload = frame.owned.data();
  frame.payload_bytes = frame.owned.size();
  frame.lane = Lane::kLast;  // queue_abort_frames drops what has not begun
  queue_frame(pair, std::move(frame));
}

void TcpMesh::abort(const std::string& reason) {
  std::unique_lock<std::mutex> lock(mutex_);
  transport::AbortCause cause = queue_abort_frames(ErrorKind::kConnection, reason);
  // Peers must read the reason before the connection closes, else they report only a reset.
  // 100 ms: the frame is small and only a frame already partly written goes before it, so a
  // peer that has not taken it by then is not reading (or not reachable); a timed-out call
  // counts on this bound (kAfterTimeoutBudget, gloo_lite/collective_failure.h).
  flush_queued_frames(&lock, Deadline::after(std::chrono::milliseconds(100)));
  fail_after_abort(ErrorKind::kConnection, cause);
}

void TcpMesh::abort_locked(ErrorKind kind, const std::string& reason) {
  transport::AbortCause cause = queue_abort_frames(kind, reason);
  // As in abort(), peers must read the reason before the connection closes, and a frame
  // already begun (a large payload) goes before it: without that wait a peer that was still
  // reading it got the rest cut off and only a reset (collectives_tests, 1 in about 400). The
  // engine holds the lock, kept through the wait (what arrives meanwhile is dropped: this mesh
  // fails with its own cause next).
  flush_queued_frames(nullptr, Deadline::after(std::chrono::milliseconds(100)));
  fail_after_abort(kind, cause);
}

transport::AbortCause TcpMesh::queue_abort_frames(ErrorKind kind, const std::string& reason) {
  // A context that failed before (a peer's abort, a lost connection) forwards that first cause.
  first_cause_.note({rank_, reason}, mesh_failure());
  const transport::AbortCause cause = first_cause_.forward(rank_, mesh_failure(), reason);
  const std::string message = abort_message(cause);
  for (auto& pair : pairs_) {
    if (!pair || !pair->open_ || pair->abort_queued_) continue;
    pair->abort_queued_ = true;
    pair->abort_failure_ = {kind, message};
    // The reason goes first: frames not yet begun are dropped (their operations fail below),
    // only a frame already partly on the wire must be finished before it.
    // Over TLS, frames the channel encrypted already count as begun (Pair::first_unbegun).
    auto begun = pair->first_unbegun();
    for (auto it = begun; it != pair->out_.end(); ++it) {
      if (it->op) fail_op(it->op, kind, message);
    }
    pair->out_.erase(begun, pair->out_.end());
    queue_abort(*pair, kind, cause);
  }
  return cause;
}

void TcpMesh::fail_after_abort(ErrorKind kind, const transport::AbortCause& cause) {
  std::string message = abort_message(cause);
  // The context logs the cause once at WARN; this is the transport's part of it.
  LOG_INFO("tcp", message << "; told its peers");
  fail_mesh(kind, message);
  for (auto& pair : pairs_) {
    if (pair && pair->open_) fail_pair(*pair, kind, message);
  }
}

}  // namespace gloo_lite::tcp
