// Client of TcpStoreServer. Each operation is one request and one response on a pooled
// connection; get/wait send their remaining time and the server answers when the keys exist or
// that time is up, so waiting costs a single round trip. With a secret configured, every new
// connection first runs the mutual challenge-response (tcp_store_protocol.h, docs/security.md);
// with TLS configured (base/tls.h), every connection runs over TLS, the challenge included.
#include <algorithm>
#include <cstring>

#include "gloo_lite/base/auth.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/tls.h"
#include "rendezvous/connection_pool.h"
#include "rendezvous/store_util.h"
#include "rendezvous/stores.h"
#include "rendezvous/tcp_store_protocol.h"

namespace gloo_lite {
namespace {

using namespace tcp_store;

// How long past the caller's deadline a get/wait waits for the server's own TIMEOUT answer
// (the server answers at the deadline, so on a live server this is one loop turn and the round
// trip). No answer by then means the server is stopped or gone: a StoreError, not the
// TimeoutError that blames the ranks which never set the key.
constexpr std::chrono::milliseconds kAnswerGrace(200);

// What to check when the server does not answer.
constexpr const char* kServerHint =
    "; is the store server (gloo_lite_store, gloo_lite_run, or rank 0 under torchrun) alive, "
    "running (not stopped) and reachable from this host?";

// A TLS server cannot answer a plaintext client in a protocol it would understand, so it hangs
// up at the first request; a plain client that loses a fresh connection there says why that may
// be, since "is the server alive?" alone sends the user looking in the wrong place.
constexpr const char* kPlainClientHint =
    " (a store server with TLS closes clients without it: if GLOO_LITE_TLS_CERT, "
    "GLOO_LITE_TLS_KEY and GLOO_LITE_TLS_CA are set where it runs, set them here too)";

// A pooled connection: the socket, and its TLS channel when TLS is configured.
struct Connection {
  Fd fd;
  std::unique_ptr<tls::Channel> tls;
};

struct Response {
  Status status = Status::kOk;
  Bytes body;
  std::vector<Item> items;  // views into body
};

class TcpStore final : public Store {
 public:
  TcpStore(const std::string& host, uint16_t port, const Deadline& deadline)
      : secret_(auth::configured_secret()),
        tls_(tls::configured_context()),
        address_(SocketAddress::resolve(host, port)),
        name_(
            "tcp://" +
            (host.find(':') != std::string::npos && host.front() != '[' ? "[" + host + "]" : host) +
            ":" + std::to_string(port)) {
    // Fail at open, not at the first set(), when nothing (or not a store server) listens there.
    Response response = call(Op::kCheck, request(Op::kCheck, 0, {}), deadline);
    expect_flag(response, Op::kCheck);
  }

  void set(const std::string& key, const Bytes& value, const Deadline& deadline) override {
    check_key(key);
    if (value.size() > kMaxValueBytes) {
      throw InvalidArgument(name_ + ": value of " + std::to_string(value.size()) +
                            " bytes for key " + store_detail::quote_key(key) +
                            " exceeds the TCP store limit of " + std::to_string(kMaxValueBytes));
    }
    MessageBuilder builder(kRequestHeaderBytes, 2);
    builder.add(key);
    builder.add(value);
    Response response = call(Op::kSet, builder.finish_request(Op::kSet, 0), deadline);
    expect_items(response, Op::kSet, 0);
  }

  Bytes get(const std::string& key, const Deadline& deadline) override {
    return std::move(multi_get({key}, deadline).front());
  }

  std::vector<Bytes> multi_get(const std::vector<std::string>& keys,
                               const Deadline& deadline) override {
    if (keys.empty()) return {};
    Response response = blocking(Op::kGet, keys, deadline);
    expect_items(response, Op::kGet, keys.size());
    std::vector<Bytes> values;
    values.reserve(keys.size());
    for (const auto& item : response.items) values.push_back(item.bytes());
    return values;
  }

  void wait(const std::vector<std::string>& keys, const Deadline& deadline) override {
    if (keys.empty()) return;
    expect_items(blocking(Op::kWait, keys, deadline), Op::kWait, 0);
  }

  int64_t add(const std::string& key, int64_t delta, const Deadline& deadline) override {
    check_key(key);
    MessageBuilder builder(kRequestHeaderBytes, 2);
    builder.add(key);
    builder.add_i64(delta);
    Response response = call(Op::kAdd, builder.finish_request(Op::kAdd, 0), deadline);
    expect_items(response, Op::kAdd, 1);
    int64_t sum = 0;
    if (!response.items[0].to_i64(&sum)) malformed(Op::kAdd);
    return sum;
  }

  bool check(const std::vector<std::string>& keys, const Deadline& deadline) override {
    if (keys.empty()) return true;
    Response response = call(Op::kCheck, request(Op::kCheck, 0, keys), deadline);
    return expect_flag(response, Op::kCheck);
  }

  bool erase(const std::string& key, const Deadline& deadline) override {
    Response response = call(Op::kErase, request(Op::kErase, 0, {key}), deadline);
    return expect_flag(response, Op::kErase);
  }

  std::string describe() const override { return name_; }

 private:
  void check_key(const std::string& key) const {
    if (key.size() > kMaxKeyBytes) {
      throw InvalidArgument(name_ + ": key of " + std::to_string(key.size()) +
                            " bytes exceeds the TCP store limit of " +
                            std::to_string(kMaxKeyBytes));
    }
  }

  Bytes request(Op op, uint32_t timeout_ms, const std::vector<std::string>& keys) const {
    if (keys.size() > kMaxItems) {
      throw InvalidArgument(name_ + ": " + std::to_string(keys.size()) +
                            " keys in one request exceed the limit of " +
                            std::to_string(kMaxItems));
    }
    MessageBuilder builder(kRequestHeaderBytes, keys.size());
    for (const auto& key : keys) {
      check_key(key);
      builder.add(key);
    }
    if (builder.body_bytes() > kMaxRequestBodyBytes) {
      throw InvalidArgument(name_ + ": request too large; ask for fewer keys at once");
    }
    return builder.finish_request(op, timeout_ms);
  }

  // get/wait: the server parks the request for the caller's remaining time and then answers
  // TIMEOUT with the keys still missing.
  Response blocking(Op op, const std::vector<std::string>& keys, const Deadline& deadline) {
    auto started = Deadline::Clock::now();
    uint32_t timeout_ms = kNoTimeout;
    Deadline answer_by = Deadline::never();
    if (!deadline.is_never()) {
      auto left = deadline.remaining().count();
      timeout_ms = static_cast<uint32_t>(std::min<int64_t>(left, kNoTimeout - 1));
      answer_by = Deadline::after(deadline.remaining() + kAnswerGrace);
    }
    Response response = call(op, request(op, timeout_ms, keys), deadline, answer_by);
    if (response.status == Status::kTimeout) {
      std::vector<std::string> missing;
      for (const auto& item : response.items) missing.push_back(item.str());
      store_detail::throw_key_timeout(name_, missing, started);
    }
    return response;
  }

  // One exchange, connecting first (until `connect_by`) when no pooled connection is idle; the
  // whole of it ends by `answer_by`. A server that does not answer in time, or cannot be
  // reached, is a StoreError.
  Response call(Op op, const Bytes& message, const Deadline& connect_by,
                const Deadline& answer_by) {
    auto started = Deadline::Clock::now();
    try {
      return exchange(op, message, connect_by, answer_by);
    } catch (const TimeoutError& e) {
      auto waited =
          std::chrono::duration_cast<std::chrono::milliseconds>(Deadline::Clock::now() - started);
      throw StoreError(name_ + ": no answer to " + op_name(op) + " within " + format_ms(waited) +
                       " (" + e.what() + ")" + kServerHint);
    } catch (const ConnectionError& e) {
      throw StoreError(name_ + ": " + op_name(op) + " failed: " + e.what() + kServerHint);
    }
  }

  // Errors leave the connection out of the pool (its stream position is unknown); the next call
  // opens a fresh one.
  Response exchange(Op op, const Bytes& message, const Deadline& connect_by,
                    const Deadline& deadline) {
    std::unique_ptr<Connection> connection = pool_.take();
    Response response;
    if (connection) {
      response = round_trip(*connection, op, message, deadline);
    } else {
      try {
        connection = connect(op, connect_by, deadline);
        response = round_trip(*connection, op, message, deadline);
      } catch (const ConnectionError& e) {
        if (tls_) throw;
        throw ConnectionError(std::string(e.what()) + kPlainClientHint);
      }
    }
    // After an ERROR the server may close the connection (it does on protocol violations), so
    // only connections that succeeded go back to the pool.
    if (response.status != Status::kError) pool_.give_back(std::move(connection));
    if (response.status == Status::kError) {
      std::string message_text = response.items.empty() ? "" : response.items[0].str();
      throw StoreError(name_ + ": " + op_name(op) + " failed: " + message_text);
    }
    return response;
  }

  // One request and its response, read whole; no pool handling and no status checks.
  Response round_trip(Connection& c, Op op, const Bytes& message, const Deadline& deadline) {
    std::string what = op_name(op);
    tls::write_all(c.tls.get(), c.fd.get(), message.data(), message.size(), deadline, what);
    uint8_t header[kResponseHeaderBytes];
    tls::read_all(c.tls.get(), c.fd.get(), header, sizeof(header), deadline, what);
    ResponseHeader decoded;
    std::string problem = decode_response_header(header, &decoded);
    if (!problem.empty()) throw StoreError(name_ + ": bad response to " + what + ": " + problem);
    Response response;
    response.status = decoded.status;
    response.body.resize(decoded.body_bytes);
    tls::read_all(c.tls.get(), c.fd.get(), response.body.data(), response.body.size(), deadline,
                  what);
    problem = parse_items(response.body, &response.items);
    if (!problem.empty()) throw StoreError(name_ + ": bad response to " + what + ": " + problem);
    return response;
  }

  Response call(Op op, const Bytes& message, const Deadline& deadline) {
    return call(op, message, deadline, deadline);
  }

  [[noreturn]] void refused(const Response& response) const {
    std::string text = response.items.empty() ? "" : response.items[0].str();
    throw StoreError(name_ + ": the store server refused this client: " + text);
  }

  // The server proves it holds the secret before this client proves it: a client never sends
  // its proof to a server that could not answer its fresh nonce.
  void authenticate(Connection& c, const Deadline& deadline) {
    auth::Transcript transcript;
    transcript.purpose = kAuthPurpose;
    transcript.initiator_nonce = auth::fresh_nonce();
    MessageBuilder hello(kRequestHeaderBytes, 1);
    hello.add(transcript.initiator_nonce.data(), transcript.initiator_nonce.size());
    Response challenge = round_trip(c, kAuthHello, hello.finish_request(kAuthHello, 0), deadline);
    if (challenge.status == Status::kError) refused(challenge);
    if (challenge.status != Status::kOk || challenge.items.size() != 2 ||
        challenge.items[0].size != auth::kNonceBytes ||
        challenge.items[1].size != auth::kProofBytes) {
      malformed(kAuthHello);
    }
    std::memcpy(transcript.responder_nonce.data(), challenge.items[0].data, auth::kNonceBytes);
    if (!auth::verify(*secret_, auth::Role::kResponder, transcript, challenge.items[1].data)) {
      throw StoreError(name_ +
                       ": the store server failed to prove the job's secret: this client and the "
                       "server were given different secrets (GLOO_LITE_AUTH_SECRET or "
                       "GLOO_LITE_AUTH_FILE), or this is not the job's store");
    }
    auth::Proof proof = auth::prove(*secret_, auth::Role::kInitiator, transcript);
    MessageBuilder answer(kRequestHeaderBytes, 1);
    answer.add(proof.data(), proof.size());
    Response verdict = round_trip(c, kAuthProof, answer.finish_request(kAuthProof, 0), deadline);
    if (verdict.status == Status::kError) refused(verdict);
    expect_items(verdict, kAuthProof, 0);
  }

  // Refused connections are retried (the server may be starting) until `connect_by`; the
  // authentication, where a secret is set, ends by `deadline`.
  std::unique_ptr<Connection> connect(Op op, const Deadline& connect_by, const Deadline& deadline) {
    auto started = Deadline::Clock::now();
    auto c = std::make_unique<Connection>();
    try {
      c->fd = connect_tcp(address_, connect_by, op_name(op));
    } catch (const Error& e) {
      auto waited =
          std::chrono::duration_cast<std::chrono::milliseconds>(Deadline::Clock::now() - started);
      throw StoreError(name_ + ": cannot connect for " + op_name(op) + " within " +
                       format_ms(waited) + " (" + e.what() + ")" + kServerHint);
    }
    if (tls_) {
      c->tls = std::make_unique<tls::Channel>(*tls_, c->fd.get(), tls::Role::kClient, name_);
      try {
        c->tls->handshake(deadline, op_name(op));
      } catch (const TimeoutError& e) {
        throw StoreError(name_ + ": " + e.what() + kServerHint);
      } catch (const Error& e) {
        throw StoreError(name_ + ": " + e.what());
      }
    }
    if (secret_) authenticate(*c, deadline);
    return c;
  }

  [[noreturn]] void malformed(Op op) const {
    throw StoreError(name_ + ": malformed " + op_name(op) + " response from the server");
  }

  void expect_items(const Response& response, Op op, size_t count) const {
    if (response.status != Status::kOk || response.items.size() != count) malformed(op);
  }

  bool expect_flag(const Response& response, Op op) const {
    expect_items(response, op, 1);
    if (response.items[0].size != 1) malformed(op);
    return response.items[0].data[0] != 0;
  }

  std::shared_ptr<const auth::Secret> secret_;  // nullptr: the server is not asked to prove one
  std::shared_ptr<const tls::Context> tls_;     // nullptr: plain TCP
  SocketAddress address_;
  std::string name_;
  store_detail::ConnectionPool<Connection> pool_;
};

}  // namespace

std::shared_ptr<Store> make_tcp_store(const std::string& host, uint16_t port,
                                      const Deadline& deadline) {
  return std::make_shared<TcpStore>(host, port, deadline);
}

}  // namespace gloo_lite
