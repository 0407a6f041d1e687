// The TCP store server: one thread, one epoll set, non-blocking sockets. Requests are read
// incrementally, so a slow, silent or half-sent client holds only its own buffer, never the
// thread. A client that breaks the protocol is dropped with a log line naming it and why.
// Strangers are bounded (tcp_store_budget.h): request bodies are buffered within a per-client
// and a total byte limit, and a client that stalls mid-request, or does not read its response,
// for longer than the stall timeout is dropped.
// With a secret configured (docs/security.md), a client must prove it holds the secret, after
// the server proved it, before any other request is read past its header.
// With TLS configured (base/tls.h), every connection opens with a TLS handshake, taken in
// non-blocking steps on this thread and bounded by the stall timeout; a client without a
// certificate from the store's CA is dropped before any request is read.
// Blocking get/wait requests are parked in the Service until their keys appear or their deadline
// passes, so a waiting client costs one request, not a polling loop.
// Past 500 lines on purpose: what is left here is one job, the event loop and each connection's
// states in it (accept, TLS steps, reading, answering, parking, dropping); the requests' meaning
// lives in the Service, the admission in tcp_store_auth.*, the limits in tcp_store_budget.h.
// Cutting the loop's states apart would spread one state machine over two files.
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <set>
#include <thread>

#include "gloo_lite/base/auth.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/base/tls.h"
#include "rendezvous/stores.h"
#include "rendezvous/tcp_store_auth.h"
#include "rendezvous/tcp_store_budget.h"
#include "rendezvous/tcp_store_service.h"

namespace gloo_lite {

using tcp_store::ClientId;
using Clock = std::chrono::steady_clock;

namespace {

constexpr ClientId kListenId = 0;
constexpr ClientId kWakeId = 1;
// Bytes read per recv() into a request body: bounds the allocation ahead of data actually
// received, so a header claiming 64 MiB costs nothing until the bytes arrive.
constexpr size_t kReadChunk = 256 * 1024;

struct Connection {
  ClientId id = 0;
  Fd fd;
  std::unique_ptr<tls::Channel> tls;  // with TLS configured: every byte goes through it
  bool handshaking = false;           // TLS handshake not finished yet
  std::string peer;
  uint8_t header[tcp_store::kRequestHeaderBytes];
  size_t header_got = 0;
  bool in_body = false;
  tcp_store::RequestHeader request;
  Bytes body;
  Bytes out;
  size_t out_sent = 0;
  bool parked = false;
  bool awaiting_budget = false;               // header read, body not admitted yet
  std::optional<Clock::time_point> stall_at;  // while a request or response is part-way
  uint32_t events = 0;
  tcp_store::ServerAuth auth;  // a server with a secret: how far the handshake got

  bool sending() const { return out_sent < out.size(); }
  bool reading() const { return !parked && !sending() && !awaiting_budget && !handshaking; }
  std::string progress() const {
    if (handshaking) return "left its TLS handshake unfinished";
    if (sending()) {
      return "left " + std::to_string(out.size() - out_sent) + " of " + std::to_string(out.size()) +
             " response bytes unread";
    }
    if (awaiting_budget) {
      return "waited for buffer space for a " + std::to_string(request.body_bytes) + "-byte body";
    }
    if (in_body) {
      return "sent " + std::to_string(body.size()) + " of " + std::to_string(request.body_bytes) +
             " body bytes";
    }
    return "sent " + std::to_string(header_got) + " of " +
           std::to_string(tcp_store::kRequestHeaderBytes) + " header bytes";
  }
};

bool is_wildcard(const SocketAddress& address) {
  if (address.family() == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(&address.storage)->sin_addr.s_addr ==
           htonl(INADDR_ANY);
  }
  const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(&address.storage)->sin6_addr;
  return IN6_IS_ADDR_UNSPECIFIED(&a);
}

// A wildcard bind listens everywhere; peers need a name that reaches this host.
std::string public_url(const SocketAddress& bound) {
  if (!is_wildcard(bound)) return "tcp://" + bound.to_string();
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return "tcp://" + std::string(host) + ":" + std::to_string(bound.port());
}

}  // namespace

struct TcpStoreServer::Impl {
  explicit Impl(const SocketAddress& bind)
      : secret(auth::configured_secret()),
        tls_context(tls::configured_context()),
        listen(listen_tcp(bind)),
        address(SocketAddress::local_of(listen.get())),
        url(public_url(address)),
        service("tcp store server " + address.to_string()),
        limits(tcp_store::ServerLimits::from_knobs()),
        budget(limits.total_bytes) {
    set_nonblocking(listen.get(), true);
    epoll.reset(epoll_create1(EPOLL_CLOEXEC));
    wake.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!epoll.valid() || !wake.valid()) {
      throw StoreError("tcp store server: epoll/eventfd: " + std::string(std::strerror(errno)));
    }
    watch(listen.get(), kListenId, EPOLLIN);
    watch(wake.get(), kWakeId, EPOLLIN);
    thread = std::thread([this] { run(); });
  }

  ~Impl() {
    uint64_t one = 1;
    ssize_t ignored = ::write(wake.get(), &one, sizeof(one));
    (void)ignored;
    thread.join();
  }

  void watch(int fd, ClientId id, uint32_t events) {
    epoll_event event{};
    event.events = events;
    event.data.u64 = id;
    epoll_ctl(epoll.get(), EPOLL_CTL_ADD, fd, &event);
  }

  void run() {
    try {
      loop();
    } catch (const std::exception& e) {
      LOG_ERROR("store", "server " << url << ": thread stopped: " << e.what());
    }
  }

  void loop() {
    epoll_event events[64];
    while (true) {
      int n = epoll_wait(epoll.get(), events, 64, wait_timeout_ms());
      if (n < 0 && errno != EINTR)
        throw StoreError("epoll_wait: " + std::string(std::strerror(errno)));
      for (int i = 0; i < n; ++i) {
        ClientId id = events[i].data.u64;
        if (id == kWakeId) return;
        if (id == kListenId) {
          accept_clients();
        } else {
          on_client_event(id, events[i].events);
        }
      }
      deliver(service.expire(Clock::now()));
      drop_stalled(Clock::now());
      serve_tls_buffered();
      if (accept_paused && Clock::now() >= accept_resume) {
        accept_paused = false;
        watch(listen.get(), kListenId, EPOLLIN);
      }
    }
  }

  int wait_timeout_ms() const {
    auto next = service.next_deadline();
    if (accept_paused && (!next || accept_resume < *next)) next = accept_resume;
    if (!stall_timers.empty() && (!next || stall_timers.begin()->first < *next)) {
      next = stall_timers.begin()->first;
    }
    if (!next) return -1;
    auto left = std::chrono::ceil<std::chrono::milliseconds>(*next - Clock::now()).count();
    return static_cast<int>(std::clamp<int64_t>(left, 0, 60 * 60 * 1000));
  }

  void accept_clients() {
    while (true) {
      int fd = accept4(listen.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        // Out of descriptors or memory: the pending connection stays in the backlog and would
        // wake us again at once, so stop accepting for a moment instead of spinning.
        LOG_WARN("store", "server " << url << ": accept failed (" << std::strerror(errno)
                                    << "); pausing new connections for 100 ms");
        epoll_ctl(epoll.get(), EPOLL_CTL_DEL, listen.get(), nullptr);
        accept_paused = true;
        accept_resume = Clock::now() + std::chrono::milliseconds(100);
        return;
      }
      set_nodelay(fd);
      auto connection = std::make_unique<Connection>();
      connection->fd = Fd(fd);
      connection->peer = SocketAddress::peer_of(fd).to_string();
      connection->events = EPOLLIN | EPOLLRDHUP;
      ClientId id = next_id++;
      connection->id = id;
      if (tls_context) {
        connection->tls =
            std::make_unique<tls::Channel>(*tls_context, fd, tls::Role::kServer, connection->peer);
        connection->handshaking = true;
        arm_stall(*connection);  // a client that never finishes its handshake is dropped
      }
      watch(fd, id, connection->events);
      LOG_DEBUG("store", "server " << url << ": client " << connection->peer << " connected");
      clients.emplace(id, std::move(connection));
    }
  }

  void on_client_event(ClientId id, uint32_t events) {
    auto it = clients.find(id);
    if (it == clients.end()) return;
    Connection& c = *it->second;
    if (events & EPOLLERR) return drop(id, "socket error", LogLevel::kWarn);
    if (c.handshaking) return continue_handshake(id, c);
    if ((events & EPOLLOUT) && !flush(id, c)) return;
    if (events & EPOLLIN) {
      serve(id);
    } else if (events & (EPOLLHUP | EPOLLRDHUP)) {
      drop(id, c.parked ? "disconnected while its request was waiting" : "disconnected",
           LogLevel::kInfo);
    }
  }

  void continue_handshake(ClientId id, Connection& c) {
    switch (c.tls->handshake_step()) {
      case tls::Channel::Progress::kMore:
        update_interest(c);
        return;
      case tls::Channel::Progress::kFailed:
        if (c.tls->hung_up()) {
          return drop(id, "disconnected during its TLS handshake", LogLevel::kDebug);
        }
        return drop(id,
                    "its TLS handshake failed (" + c.tls->error() +
                        "): a client without TLS, or without a certificate signed by this "
                        "store's CA (GLOO_LITE_TLS_CA)",
                    LogLevel::kWarn);
      case tls::Channel::Progress::kDone:
        c.handshaking = false;
        disarm_stall(c);
        update_interest(c);
        LOG_DEBUG("store",
                  "server " << url << ": client " << c.peer << " finished its TLS handshake");
        serve(id);  // its first request may have come with the handshake's last record
        return;
    }
  }

  // read_requests, and a note when the client's TLS channel still holds bytes: epoll will not
  // report them, so the loop reads them once the client may read again.
  void serve(ClientId id) {
    auto it = clients.find(id);
    if (it == clients.end()) return;
    read_requests(id, *it->second);
    it = clients.find(id);
    if (it != clients.end() && it->second->tls && it->second->tls->buffered()) {
      tls_buffered.insert(id);
    }
  }

  void serve_tls_buffered() {
    if (tls_buffered.empty()) return;
    std::vector<ClientId> ids(tls_buffered.begin(), tls_buffered.end());
    for (ClientId id : ids) {
      auto it = clients.find(id);
      if (it == clients.end()) {
        tls_buffered.erase(id);
      } else if (it->second->reading()) {
        tls_buffered.erase(id);
        serve(id);
      }
    }
  }

  ssize_t receive(Connection& c, void* data, size_t bytes) {
    return c.tls ? c.tls->recv(data, bytes) : ::recv(c.fd.get(), data, bytes, 0);
  }

  std::string io_error(const Connection& c) const {
    return c.tls ? c.tls->error() : std::strerror(errno);
  }

  // Reads and executes requests until the socket has no more data, or the client has a
  // response pending or a request parked (requests from one client run strictly in order).
  void read_requests(ClientId id, Connection& c) {
    while (c.reading()) {
      ssize_t n = 0;
      if (!c.in_body) {
        n = receive(c, c.header + c.header_got, sizeof(c.header) - c.header_got);
        if (n > 0) {
          if (c.header_got == 0) arm_stall(c);
          c.header_got += static_cast<size_t>(n);
        }
      } else {
        size_t old = c.body.size();
        size_t chunk = std::min<size_t>(kReadChunk, c.request.body_bytes - old);
        c.body.resize(old + chunk);
        n = receive(c, c.body.data() + old, chunk);
        c.body.resize(old + static_cast<size_t>(std::max<ssize_t>(n, 0)));
      }
      if (n == 0) return on_eof(id, c);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        return drop(id, "read failed: " + io_error(c), LogLevel::kWarn);
      }
      if (!c.in_body && !c.awaiting_budget && c.header_got == sizeof(c.header)) {
        std::string problem = tcp_store::decode_request_header(c.header, &c.request);
        if (!problem.empty() && !c.tls && tls::looks_like_tls(c.header)) {
          // Still "bad magic" first: a client that does not speak our protocol gets no answer.
          problem = "bad magic: a TLS handshake on this store's plain TCP port (" +
                    std::string(tls::kKnobs) + " are set on the client but not on the server)";
        }
        if (!problem.empty()) return reject(id, c, problem);
        problem = tcp_store::admission(secret.get(), c.auth, c.request);
        if (!problem.empty()) return reject(id, c, problem);
        if (c.request.body_bytes > limits.client_bytes) {
          return reject(id, c,
                        "request body of " + std::to_string(c.request.body_bytes) +
                            " bytes exceeds this server's limit of " +
                            std::to_string(limits.client_bytes) +
                            " per client (GLOO_LITE_STORE_CLIENT_BYTES)");
        }
        if (budget.admit(id, c.request.body_bytes)) {
          start_body(c);
        } else {
          c.awaiting_budget = true;
          update_interest(c);
          LOG_INFO("store", "server " << url << ": client " << c.peer << " waits to send a "
                                      << c.request.body_bytes << "-byte body: " << budget.reserved()
                                      << " bytes of bodies are buffered "
                                      << "(limit " << budget.total()
                                      << ", GLOO_LITE_STORE_BUFFER_BYTES)");
          return;
        }
      }
      if (c.in_body && c.body.size() == c.request.body_bytes) {
        c.in_body = false;
        c.header_got = 0;
        if (!execute(id, c)) return;
      }
    }
  }

  void on_eof(ClientId id, Connection& c) {
    if (c.header_got == 0 && c.auth.challenged && !c.auth.authenticated) {
      // The client refused our proof: it holds another secret (it reports so itself).
      return drop(id,
                  "disconnected before proving the job's secret (a client with another secret?)",
                  LogLevel::kWarn);
    }
    if (c.header_got == 0) return drop(id, "disconnected", LogLevel::kDebug);
    std::string progress = c.in_body ? "body " + std::to_string(c.body.size()) + " of " +
                                           std::to_string(c.request.body_bytes) + " bytes"
                                     : "header " + std::to_string(c.header_got) + " of " +
                                           std::to_string(sizeof(c.header)) + " bytes";
    drop(id, "disconnected in the middle of a request (" + progress + ")", LogLevel::kWarn);
  }

  // The body's storage is reserved once, so that it grows by the bytes received and never by a
  // doubling vector's spare capacity.
  void start_body(Connection& c) {
    c.in_body = true;
    c.body = Bytes();
    c.body.reserve(c.request.body_bytes);
  }

  // Clients whose bodies now fit in the budget resume reading (level-triggered epoll reports
  // whatever they already sent).
  void admit(const std::vector<ClientId>& admitted) {
    for (ClientId id : admitted) {
      auto it = clients.find(id);
      if (it == clients.end()) continue;
      it->second->awaiting_budget = false;
      // The stall timeout keeps running from the request's first byte: however a request is
      // delayed, strangers cannot hold a place for longer than that.
      start_body(*it->second);
      update_interest(*it->second);
    }
  }

  void arm_stall(Connection& c) {
    if (c.stall_at) return;
    c.stall_at = Clock::now() + limits.stall_timeout;
    stall_timers.emplace(*c.stall_at, c.id);
  }

  void disarm_stall(Connection& c) {
    if (!c.stall_at) return;
    stall_timers.erase({*c.stall_at, c.id});
    c.stall_at.reset();
  }

  // Each stalled client is logged once, with its address and how far it got.
  void drop_stalled(Clock::time_point now) {
    while (!stall_timers.empty() && stall_timers.begin()->first <= now) {
      ClientId id = stall_timers.begin()->second;
      Connection& c = *clients.at(id);
      reject(id, c,
             "stalled: " + c.progress() + " in " +
                 format_ms(
                     std::chrono::duration_cast<std::chrono::milliseconds>(limits.stall_timeout)) +
                 " (GLOO_LITE_STORE_STALL_MS)");
    }
  }

  // Returns false when the client was dropped.
  bool authenticate(ClientId id, Connection& c, const std::vector<tcp_store::Item>& items) {
    tcp_store::AuthAnswer answer = tcp_store::authenticate(*secret, c.auth, c.request, items);
    if (!answer.problem.empty()) {
      reject(id, c, answer.problem);
      return false;
    }
    if (c.auth.authenticated) {
      LOG_DEBUG("store", "server " << url << ": client " << c.peer << " authenticated");
    }
    return send(id, c, std::move(answer.response));
  }

  // Returns false when the client was dropped.
  bool execute(ClientId id, Connection& c) {
    // Only the store's own operations: waiting clients' tests count them (requests_handled).
    if (!tcp_store::is_auth(c.request.op)) requests.fetch_add(1, std::memory_order_relaxed);
    disarm_stall(c);
    admit(budget.release(id));
    std::vector<tcp_store::Item> items;
    std::string problem = tcp_store::parse_items(c.body, &items);
    if (!problem.empty()) {
      reject(id, c,
             "malformed " + std::string(tcp_store::op_name(c.request.op)) + " request: " + problem);
      return false;
    }
    if (tcp_store::is_auth(c.request.op)) {
      bool alive = authenticate(id, c, items);  // items point into c.body: free it after
      if (alive) c.body = Bytes();
      return alive && clients.count(id) > 0;
    }
    auto outcome = service.handle(id, c.request, items, Clock::now());
    c.body = Bytes();
    bool alive = true;
    switch (outcome.kind) {
      case tcp_store::Service::Outcome::kRespond:
        alive = send(id, c, std::move(outcome.response));
        break;
      case tcp_store::Service::Outcome::kParked:
        c.parked = true;
        update_interest(c);
        break;
      case tcp_store::Service::Outcome::kViolation:
        reject(id, c, outcome.violation);
        alive = false;
        break;
    }
    deliver(service.take_ready());
    return alive && clients.count(id) > 0;
  }

  void deliver(std::vector<tcp_store::Service::Delivery> deliveries) {
    for (auto& delivery : deliveries) {
      auto it = clients.find(delivery.client);
      if (it == clients.end()) continue;
      // Once the response is out, EPOLLIN interest returns and level-triggered epoll reports
      // whatever the client pipelined behind the parked request.
      it->second->parked = false;
      send(delivery.client, *it->second, std::move(delivery.response));
    }
  }

  bool send(ClientId id, Connection& c, Bytes response) {
    c.out = std::move(response);
    c.out_sent = 0;
    return flush(id, c);
  }

  // Returns false when the client was dropped.
  bool flush(ClientId id, Connection& c) {
    while (c.sending()) {
      iovec rest{c.out.data() + c.out_sent, c.out.size() - c.out_sent};
      ssize_t n =
          c.tls ? c.tls->send(&rest, 1)
                : ::send(c.fd.get(), rest.iov_base, rest.iov_len, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        c.out_sent += static_cast<size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        break;
      } else {
        drop(id, "write failed: " + io_error(c), LogLevel::kWarn);
        return false;
      }
    }
    if (c.sending()) {
      arm_stall(c);
    } else {
      c.out = Bytes();
      disarm_stall(c);
    }
    update_interest(c);
    return true;
  }

  void update_interest(Connection& c) {
    uint32_t wanted = EPOLLRDHUP;
    if (c.handshaking) {
      wanted |= c.tls->poll_events() == POLLOUT ? EPOLLOUT : EPOLLIN;
    } else if (c.sending()) {
      wanted |= EPOLLOUT;
    } else if (c.reading()) {
      wanted |= EPOLLIN;
    }
    if (wanted == c.events) return;
    c.events = wanted;
    epoll_event event{};
    event.events = wanted;
    event.data.u64 = c.id;
    epoll_ctl(epoll.get(), EPOLL_CTL_MOD, c.fd.get(), &event);
  }

  // A protocol violation: tell the client why when it speaks our protocol at all (a bad magic
  // means it does not, so it gets nothing), then drop it.
  void reject(ClientId id, Connection& c, const std::string& problem) {
    // Over TLS only once the handshake is done: a refused handshake gets its alert instead.
    if (problem.rfind("bad magic", 0) != 0 && !c.handshaking) {
      Bytes message = tcp_store::error_response(url + ": " + problem);
      iovec whole{message.data(), message.size()};
      ssize_t ignored =
          c.tls ? c.tls->send(&whole, 1)
                : ::send(c.fd.get(), message.data(), message.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      (void)ignored;
    }
    drop(id, problem, LogLevel::kWarn);
  }

  void drop(ClientId id, const std::string& why, LogLevel level) {
    auto it = clients.find(id);
    if (it == clients.end()) return;
    GLOO_LITE_LOG_AT(level, "store",
                     "server " << url << ": dropping client " << it->second->peer << ": " << why);
    service.forget(id);
    disarm_stall(*it->second);
    clients.erase(it);  // closing the socket also removes it from the epoll set
    admit(budget.release(id));
  }

  std::shared_ptr<const auth::Secret> secret;       // nullptr: clients are not authenticated
  std::shared_ptr<const tls::Context> tls_context;  // nullptr: plain TCP
  std::set<ClientId> tls_buffered;                  // clients whose TLS channel holds unread bytes
  Fd listen;
  SocketAddress address;
  std::string url;
  tcp_store::Service service;
  tcp_store::ServerLimits limits;
  tcp_store::BodyBudget budget;
  std::set<std::pair<Clock::time_point, ClientId>> stall_timers;
  Fd epoll;
  Fd wake;
  std::unordered_map<ClientId, std::unique_ptr<Connection>> clients;
  ClientId next_id = 2;
  bool accept_paused = false;
  Clock::time_point accept_resume;
  std::atomic<uint64_t> requests{0};
  std::thread thread;
};

TcpStoreServer::TcpStoreServer(const SocketAddress& bind) : impl_(std::make_unique<Impl>(bind)) {}

TcpStoreServer::~TcpStoreServer() = default;

uint16_t TcpStoreServer::port() const { return impl_->address.port(); }

std::string TcpStoreServer::url() const { return impl_->url; }

uint64_t TcpStoreServer::requests_handled() const {
  return impl_->requests.load(std::memory_order_relaxed);
}

}  // namespace gloo_lite
