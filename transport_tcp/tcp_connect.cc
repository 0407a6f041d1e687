// Connecting and closing a mesh. Rank r connects to every lower rank and accepts every higher
// one on its own listener; each connection opens with a handshake (tcp_handshake.h) that carries
// magic, protocol version, context id and both ranks and, with a secret configured, proves both
// sides hold it; with TLS configured, all of it runs inside a TLS channel. Anything else (a port
// scanner, a rank of another job, a stale peer, an impostor) is logged and dropped while the
// rendezvous goes on.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "gloo_lite/base/auth.h"
#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/base/tls.h"
#include "transport_tcp/tcp_handshake.h"
#include "transport_tcp/tcp_mesh.h"

namespace gloo_lite::tcp {
namespace {

// Too many half-open strangers would exhaust descriptors: beyond this the oldest is dropped.
constexpr size_t kMaxStrangers = 256;

// Returns whether the connection leaves this host (the two ends' addresses differ).
bool tune_socket(int fd) {
  set_nodelay(fd);
  int64_t buffer = knob_int("GLOO_LITE_TCP_SOCKET_BUFFER");
  if (buffer > 0) {
    int size = static_cast<int>(buffer);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
  }
  // Bounds what waits unsent in the kernel, ahead of any frame queued later (a clear-to-send),
  // on connections that leave this host. Between two ends on this host (one address) the
  // kernel moves bytes at memory speed, a frame behind megabytes waits a millisecond, and the
  // bound's extra wake-ups cost more (ping-pong 64 MiB: 24 -> 28 ms, docs/transport.md).
  bool leaves_host = SocketAddress::local_of(fd).host() != SocketAddress::peer_of(fd).host();
  int64_t lowat = knob_int("GLOO_LITE_TCP_NOTSENT_LOWAT");
  if (lowat > 0 && leaves_host) {
    int bytes = static_cast<int>(lowat);
    setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &bytes, sizeof(bytes));
  }
  return leaves_host;
}

}  // namespace

// The handshakes of one connect() under way. Handshakes keep a pointer to `setup`: this
// stays where connect() made it.
struct TcpMesh::Dialling {
  HandshakeSetup setup;
  std::vector<Handshake> pending;
  // The last refusal of a connection that claimed each rank: a timeout names it, since a rank
  // whose secret differs looks like a missing rank from here.
  std::vector<std::string> refused;
  int missing = 0;  // served peers without an established connection
};

void TcpMesh::connect(const std::vector<std::string>& addresses, uint64_t context_id,
                      const Deadline& deadline) {
  if (static_cast<int>(addresses.size()) != size_) {
    throw InvalidArgument("connect: " + std::to_string(addresses.size()) +
                          " addresses for a context of " + std::to_string(size_) + " ranks");
  }
  // An empty address: another transport serves that peer; it gets no pair (transport.h).
  set_served(addresses);
  Dialling dialling;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_ || !served(peer)) continue;
    pairs_[peer] = std::make_unique<Pair>(this, peer);
    pairs_[peer]->address_ = addresses[peer];
    ++dialling.missing;
  }
  dialling.refused.resize(static_cast<size_t>(size_));
  prepare_handshakes(dialling.setup, context_id, dialling.missing);
  dial_lower_ranks(dialling, addresses, deadline);
  while (dialling.missing > 0) {
    if (!poll_handshakes(dialling, deadline)) break;
  }
  if (dialling.missing > 0) fail_to_connect(dialling);
  listener_.reset();  // the mesh is complete; later connections would only be strangers
  open_pairs();
}

void TcpMesh::prepare_handshakes(HandshakeSetup& setup, uint64_t context_id, int pairs) const {
  setup.context_id = context_id;
  setup.rank = rank_;
  setup.size = size_;
  setup.secret = auth::configured_secret();
  setup.tls = tls::configured_context();
  // What protects this context's pairs, so that a user can check it in the log without a
  // capture of the wire.
  LOG_DEBUG("tcp", "rank " << rank_ << ": connecting " << pairs << " TCP pairs, "
                           << (setup.secret ? "each proving the job's secret"
                                            : "unauthenticated (no GLOO_LITE_AUTH_SECRET or "
                                              "GLOO_LITE_AUTH_FILE)")
                           << (setup.tls ? ", over TLS 1.3" : ", plain TCP"));
}

void TcpMesh::dial_lower_ranks(Dialling& dialling, const std::vector<std::string>& addresses,
                               const Deadline& deadline) {
  for (int peer = 0; peer < rank_; ++peer) {
    if (!pairs_[peer]) continue;
    std::string what =
        "rank " + std::to_string(rank_) + " connecting to rank " + std::to_string(peer);
    Fd fd = connect_tcp(SocketAddress::parse(addresses[peer]), deadline, what);
    dialling.pending.push_back(
        Handshake::dialled(dialling.setup, std::move(fd), peer, addresses[peer], deadline));
    set_nonblocking(dialling.pending.back().fd(), true);
  }
}

bool TcpMesh::poll_handshakes(Dialling& dialling, const Deadline& deadline) {
  std::vector<pollfd> fds;
  fds.push_back({listener_.get(), POLLIN, 0});
  for (auto& handshake : dialling.pending) {
    fds.push_back({handshake.fd(), handshake.poll_events(), 0});
  }
  int ready = ::poll(fds.data(), fds.size(), deadline.poll_timeout_ms());
  if (ready < 0 && errno != EINTR) {
    throw ConnectionError(std::string("connect: poll(): ") + std::strerror(errno));
  }
  if (ready <= 0 && deadline.expired()) return false;
  if (fds[0].revents & POLLIN) {
    while (true) {
      int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) break;
      std::string from = SocketAddress::peer_of(fd).to_string();
      dialling.pending.push_back(Handshake::accepted(dialling.setup, Fd(fd), std::move(from)));
    }
  }
  for (size_t i = 1; i < fds.size(); ++i) {
    if (!(fds[i].revents & (POLLIN | POLLOUT | POLLHUP | POLLERR))) continue;
    advance_handshake(dialling, dialling.pending[i - 1], deadline);
  }
  // Closed handshakes leave; beyond kMaxStrangers accepted ones, the oldest go.
  std::vector<Handshake> still;
  size_t strangers = 0;
  for (auto it = dialling.pending.rbegin(); it != dialling.pending.rend(); ++it) {
    if (it->fd() < 0) continue;
    if (!it->dialled() && ++strangers > kMaxStrangers) continue;
    still.insert(still.begin(), std::move(*it));
  }
  dialling.pending = std::move(still);
  return true;
}

void TcpMesh::advance_handshake(Dialling& dialling, Handshake& handshake,
                                const Deadline& deadline) {
  auto expected = [&](int src) { return pairs_[src] && !pairs_[src]->fd_.valid(); };
  switch (handshake.advance(expected, deadline)) {
    case Handshake::Step::kMore:
      break;
    case Handshake::Step::kDone: {
      Pair& pair = *pairs_[handshake.peer()];
      pair.fd_ = handshake.take_fd();
      pair.tls_ = handshake.take_tls();
      set_nonblocking(pair.fd_.get(), true);
      pair.leaves_host_ = tune_socket(pair.fd_.get());
      --dialling.missing;
      break;
    }
    case Handshake::Step::kRejected:
      // Once per connection, with the peer's address; a silent close has no reason.
      if (!handshake.why().empty()) {
        LOG_WARN("tcp", "rank " << rank_ << " rejected a connection from " << handshake.from()
                                << ": " << handshake.why() << "; the rendezvous goes on");
        if (handshake.peer() >= 0 && handshake.peer() < size_) {
          dialling.refused[static_cast<size_t>(handshake.peer())] =
              handshake.from() + " (" + handshake.why() + ")";
        }
      }
      break;
    case Handshake::Step::kFailed:
      throw ConnectionError(handshake.why());
  }
}

void TcpMesh::fail_to_connect(const Dialling& dialling) const {
  std::string late;
  for (int peer = 0; peer < size_; ++peer) {
    if (pairs_[peer] && !pairs_[peer]->fd_.valid()) {
      late += (late.empty() ? "" : ", ") + describe_peer(peer);
      const std::string& refused = dialling.refused[static_cast<size_t>(peer)];
      if (!refused.empty()) late += " [a connection claiming it was refused: " + refused + "]";
    }
  }
  throw TimeoutError("rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
                     " could not connect to " + late +
                     " before the deadline: are those ranks running, and can they reach " +
                     address() + "?");
}

void TcpMesh::open_pairs() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& pair : pairs_) {
    if (!pair) continue;
    pair->open_ = true;
    pair->interest_ = EPOLLIN;
    loop_->add(pair->fd_.get(), EPOLLIN, pair.get());
    // Frames the TLS channel decrypted with the handshake's last record: epoll will not tell.
    if (pair->tls_ && pair->tls_->buffered()) read_pair(*pair);
  }
}

void TcpMesh::flush_queued_frames(std::unique_lock<std::mutex>* lock, const Deadline& deadline) {
  std::vector<uint8_t> discarded;
  for (auto& pair : pairs_) {
    while (pair && pair->open_ && !pair->out_.empty() && !deadline.expired()) {
      write_pair(*pair);
      // A write that failed (a reset) ends it: nothing more can leave.
      if (!pair->open_ || pair->out_.empty() || !pair->write_error_.empty()) break;
      // With the caller's lock kept nobody reads this socket meanwhile: read and drop what
      // arrives (the pair fails after this), so that a peer flushing to us at the same time
      // (both aborting mid-exchange) gets room too.
      pollfd p{pair->fd_.get(), static_cast<short>(POLLOUT | (lock ? 0 : POLLIN)), 0};
      if (lock) lock->unlock();
      int ready = ::poll(&p, 1, 10);
      if (lock) lock->lock();
      if (ready > 0 && (p.revents & (POLLERR | POLLHUP))) break;
      if (ready > 0 && (p.revents & POLLIN)) {
        discarded.resize(64 * 1024);
        // 0: the peer shut its side (it failed this pair and reads no more); an error: gone.
        ssize_t n = ::recv(pair->fd_.get(), discarded.data(), discarded.size(), MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) break;
      }
    }
  }
}

void TcpMesh::close_all(bool goodbye) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (closed_) return;
  closed_ = true;
  if (goodbye) {
    // A context that failed closes with its failure, not a goodbye: a peer still waiting on
    // this rank then learns the root cause (say, which rank died) instead of "closed".
    // A cause that came from a peer is forwarded as that peer's (abort_cause.h).
    const bool failed = mesh_failure().failed();
    const transport::AbortCause cause = cause_to_forward();
    for (auto& pair : pairs_) {
      if (!pair || !pair->open_) continue;
      if (!failed) {
        queue_control(*pair, {wire::FrameType::kGoodbye}, Lane::kLast);
      } else {
        queue_abort(*pair, mesh_failure().kind, cause);
      }
    }
    // Let queued frames leave, briefly: a peer still reading gets our last messages.
    flush_queued_frames(&lock, Deadline::after(std::chrono::milliseconds(1000)));
  }
  std::string message = "rank " + std::to_string(rank_) + " closed this context";
  fail_mesh(ErrorKind::kConnection, message);
  for (auto& pair : pairs_) {
    if (!pair || !pair->open_) continue;
    read_pair(*pair, /*drain=*/true);  // consume what arrived, so close() does not reset the peer
    if (pair->open_) {
      pair->open_ = false;
      pair->failure_ = {ErrorKind::kConnection, message};
      ::shutdown(pair->fd_.get(), SHUT_WR);
    }
  }
}

}  // namespace gloo_lite::tcp
