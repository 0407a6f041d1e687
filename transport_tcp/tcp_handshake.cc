#include "transport_tcp/tcp_handshake.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "gloo_lite/base/error.h"

namespace gloo_lite::tcp {
namespace {

constexpr const char* kPurpose = "gloo_lite tcp transport pair";
constexpr const char* kSecretKnobs = "GLOO_LITE_AUTH_SECRET or GLOO_LITE_AUTH_FILE";

}  // namespace

Handshake::Handshake(const HandshakeSetup& setup, Fd fd, int peer, std::string from, bool dialled)
    : setup_(&setup),
      fd_(std::move(fd)),
      peer_(peer),
      from_(std::move(from)),
      dialled_(dialled),
      stage_(dialled ? Stage::kAck : Stage::kHello) {}

Handshake Handshake::dialled(const HandshakeSetup& setup, Fd fd, int peer, std::string address,
                             const Deadline& deadline) {
  Handshake handshake(setup, std::move(fd), peer, std::move(address), /*dialled=*/true);
  if (setup.tls) {
    handshake.tls_ =
        std::make_unique<tls::Channel>(*setup.tls, handshake.fd(), tls::Role::kClient,
                                       "rank " + std::to_string(peer) + " at " + handshake.from_);
    handshake.stage_ = Stage::kTls;
    // The ClientHello leaves now; the rest of the handshake is advance()'s.
    if (handshake.on_tls(deadline) == Step::kFailed) throw ConnectionError(handshake.why_);
    return handshake;
  }
  handshake.send_hello(deadline);
  return handshake;
}

void Handshake::send_hello(const Deadline& deadline) {
  std::vector<uint8_t> hello = hello_bytes(wire::kHello);
  wanted_ = wire::kHelloBytes;
  if (setup_->secret) {
    initiator_nonce_ = auth::fresh_nonce();
    hello.insert(hello.end(), initiator_nonce_.begin(), initiator_nonce_.end());
    wanted_ += auth::kNonceBytes + auth::kProofBytes;
  }
  send_bytes(hello.data(), hello.size(), deadline,
             "rank " + std::to_string(setup_->rank) + " greeting rank " + std::to_string(peer_));
}

void Handshake::send_bytes(const void* data, size_t bytes, const Deadline& deadline,
                           const std::string& what) {
  tls::write_all(tls_.get(), fd(), data, bytes, deadline, what);
}

Handshake Handshake::accepted(const HandshakeSetup& setup, Fd fd, std::string address) {
  Handshake handshake(setup, std::move(fd), -1, std::move(address), /*dialled=*/false);
  if (setup.tls) {
    handshake.tls_ = std::make_unique<tls::Channel>(*setup.tls, handshake.fd(), tls::Role::kServer,
                                                    handshake.from_);
    handshake.stage_ = Stage::kTls;
  }
  return handshake;
}

short Handshake::poll_events() const {
  return stage_ == Stage::kTls ? tls_->poll_events() : short{POLLIN};
}

std::vector<uint8_t> Handshake::hello_bytes(uint16_t kind) const {
  wire::Hello hello;
  hello.kind = kind;
  hello.context_id = setup_->context_id;
  hello.src_rank = static_cast<uint32_t>(setup_->rank);
  hello.dst_rank = static_cast<uint32_t>(peer_);
  hello.size = static_cast<uint32_t>(setup_->size);
  hello.flags = setup_->secret ? wire::kHelloAuthenticated : 0;
  std::vector<uint8_t> bytes(wire::kHelloBytes);
  wire::encode_hello(hello, bytes.data());
  return bytes;
}

auth::Transcript Handshake::transcript() const {
  auth::Transcript t;
  t.purpose = kPurpose;
  t.context_id = setup_->context_id;
  // The connector is always the higher rank; the ranks are in the transcript anyway, so a
  // proof for one pair cannot serve another.
  t.initiator_rank = static_cast<uint32_t>(dialled_ ? setup_->rank : peer_);
  t.responder_rank = static_cast<uint32_t>(dialled_ ? peer_ : setup_->rank);
  t.initiator_nonce = initiator_nonce_;
  t.responder_nonce = responder_nonce_;
  return t;
}

Handshake::Step Handshake::reject(std::string why) {
  why_ = std::move(why);
  tls_.reset();
  fd_.reset();
  return Step::kRejected;
}

Handshake::Step Handshake::fail(std::string why) {
  why_ = std::move(why);
  tls_.reset();
  fd_.reset();
  return Step::kFailed;
}

Handshake::Step Handshake::on_tls(const Deadline& deadline) {
  switch (tls_->handshake_step()) {
    case tls::Channel::Progress::kMore:
      return Step::kMore;
    case tls::Channel::Progress::kFailed:
      if (dialled_) {
        return fail("rank " + std::to_string(setup_->rank) + ": the TLS handshake with rank " +
                    std::to_string(peer_) + " at " + from_ + " failed (" + tls_->error() +
                    "): every rank needs " + tls::kKnobs +
                    ", with certificates signed by the same CA");
      }
      if (tls_->hung_up()) {
        tls_.reset();
        fd_.reset();  // a port scanner or a peer that gave up, as on a plain port
        return Step::kRejected;
      }
      return reject("its TLS handshake failed (" + tls_->error() +
                    "): a client without TLS, or without a certificate signed by this job's CA "
                    "(GLOO_LITE_TLS_CA)");
    case tls::Channel::Progress::kDone:
      break;
  }
  stage_ = dialled_ ? Stage::kAck : Stage::kHello;
  if (dialled_) send_hello(deadline);
  return Step::kMore;
}

Handshake::Step Handshake::advance(const std::function<bool(int)>& expected,
                                   const Deadline& deadline) {
  if (stage_ == Stage::kTls) {
    Step step = on_tls(deadline);
    if (step != Step::kMore || stage_ == Stage::kTls) return step;
  }
  // Bytes the TLS channel already holds are not reported by poll(): read on while it has some
  // (a hello and its nonce arrive in one record, but are read as two stages). After a read
  // that would block, what it holds is part of a record whose rest poll() will report.
  while (true) {
    would_block_ = false;
    Step step = read_stage(expected, deadline);
    if (step != Step::kMore || !tls_ || would_block_ || !tls_->buffered()) return step;
  }
}

Handshake::Step Handshake::read_stage(const std::function<bool(int)>& expected,
                                      const Deadline& deadline) {
  // Exactly the bytes of this stage: what follows the handshake is the pair's first frames.
  ssize_t n = tls_ ? tls_->recv(buffer_ + received_, wanted_ - received_)
                   : ::recv(fd_.get(), buffer_ + received_, wanted_ - received_, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    would_block_ = true;
    return Step::kMore;
  }
  if (n <= 0) {
    // Over TLS, a peer that refused our certificate says why in an alert.
    std::string tls_reason = n < 0 && tls_ ? " [" + tls_->error() + "]" : "";
    if (dialled_) {
      return fail("rank " + std::to_string(peer_) + " at " + from_ +
                  " closed the connection during the handshake" + tls_reason +
                  " (it rejected rank " + std::to_string(setup_->rank) +
                  ": stale store keys from another job, mismatched sizes, a secret (" +
                  kSecretKnobs + ") set on one rank and not the other, or a TLS certificate (" +
                  tls::kKnobs + ") it does not accept?)");
    }
    if (stage_ == Stage::kProof) {
      return reject("it claimed to be rank " + std::to_string(peer_) +
                    " and hung up before proving the job's secret (a rank with another secret "
                    "refuses this rank's proof)");
    }
    if (!tls_reason.empty()) return reject("its TLS stream broke" + tls_reason);
    fd_.reset();  // a port scanner or a peer that gave up: nothing worth a warning
    return Step::kRejected;
  }
  received_ += static_cast<size_t>(n);
  if (received_ < wanted_) return Step::kMore;
  return on_message(expected, deadline);
}

Handshake::Step Handshake::on_message(const std::function<bool(int)>& expected,
                                      const Deadline& deadline) {
  switch (stage_) {
    case Stage::kHello:
      return on_hello(expected, deadline);
    case Stage::kAck:
      return on_ack(deadline);
    case Stage::kProof:
      return on_proof(expected);
    case Stage::kTls:
      break;
  }
  return reject("bad handshake state");
}

std::string Handshake::check_common(const wire::Hello& hello) const {
  if (hello.magic != wire::kMagic) {
    if (!tls_ && tls::looks_like_tls(buffer_)) {
      return std::string("a TLS handshake on this rank's plain TCP port (") + tls::kKnobs +
             " are set there but not here; set them on every rank or on none)";
    }
    return "not a gloo_lite peer (bad magic)";
  }
  if (hello.version != wire::kVersion) {
    return "protocol version " + std::to_string(hello.version) + ", this rank speaks " +
           std::to_string(wire::kVersion);
  }
  if (hello.context_id != setup_->context_id) {
    return "it belongs to another context or job (context id " + std::to_string(hello.context_id) +
           ")";
  }
  if (hello.size != static_cast<uint32_t>(setup_->size) ||
      hello.dst_rank != static_cast<uint32_t>(setup_->rank)) {
    return "it expects rank " + std::to_string(hello.dst_rank) + " of " +
           std::to_string(hello.size);
  }
  return "";
}

Handshake::Step Handshake::on_hello(const std::function<bool(int)>& expected,
                                    const Deadline& deadline) {
  if (received_ == wire::kHelloBytes) {
    wire::Hello hello = wire::decode_hello(buffer_);
    std::string problem = check_common(hello);
    if (!problem.empty()) return reject(problem);
    int src = static_cast<int>(hello.src_rank);
    if (hello.kind != wire::kHello || hello.src_rank >= static_cast<uint32_t>(setup_->size) ||
        src <= setup_->rank || !expected(src)) {
      return reject("rank " + std::to_string(hello.src_rank) + " is not expected to connect here");
    }
    peer_ = src;
    bool authenticates = (hello.flags & wire::kHelloAuthenticated) != 0;
    if (setup_->secret && !authenticates) {
      return reject("it claimed to be rank " + std::to_string(src) +
                    " without proving the job's secret, which this rank requires (" + kSecretKnobs +
                    " must be set on every rank)");
    }
    if (!setup_->secret && authenticates) {
      return reject("it claimed to be rank " + std::to_string(src) +
                    " and wants to authenticate, but this rank has no secret (" + kSecretKnobs +
                    " is unset here)");
    }
    if (authenticates) {
      wanted_ += auth::kNonceBytes;  // its nonce follows the hello
      return Step::kMore;
    }
    std::vector<uint8_t> ack = hello_bytes(wire::kHelloAck);
    send_bytes(ack.data(), ack.size(), deadline, "handshake reply to rank " + std::to_string(src));
    return Step::kDone;
  }
  // The connector's nonce arrived: challenge it with ours, proving our own knowledge first.
  std::memcpy(initiator_nonce_.data(), buffer_ + wire::kHelloBytes, auth::kNonceBytes);
  responder_nonce_ = auth::fresh_nonce();
  auth::Proof proof = auth::prove(*setup_->secret, auth::Role::kResponder, transcript());
  std::vector<uint8_t> ack = hello_bytes(wire::kHelloAck);
  ack.insert(ack.end(), responder_nonce_.begin(), responder_nonce_.end());
  ack.insert(ack.end(), proof.begin(), proof.end());
  send_bytes(ack.data(), ack.size(), deadline, "handshake reply to rank " + std::to_string(peer_));
  stage_ = Stage::kProof;
  received_ = 0;
  wanted_ = auth::kProofBytes;
  return Step::kMore;
}

Handshake::Step Handshake::on_ack(const Deadline& deadline) {
  wire::Hello hello = wire::decode_hello(buffer_);
  std::string problem = check_common(hello);
  if (!problem.empty()) return reject(problem);
  if (hello.kind != wire::kHelloAck || hello.src_rank != static_cast<uint32_t>(peer_)) {
    return reject("a bad handshake reply");
  }
  bool authenticates = (hello.flags & wire::kHelloAuthenticated) != 0;
  if (!setup_->secret) {
    if (authenticates) return reject("a bad handshake reply (authenticated, unasked)");
    return Step::kDone;
  }
  const std::string who = "rank " + std::to_string(peer_) + " at " + from_;
  if (!authenticates) {
    return fail(who + " answered without proving the job's secret; every rank needs the same " +
                kSecretKnobs);
  }
  std::memcpy(responder_nonce_.data(), buffer_ + wire::kHelloBytes, auth::kNonceBytes);
  if (!auth::verify(*setup_->secret, auth::Role::kResponder, transcript(),
                    buffer_ + wire::kHelloBytes + auth::kNonceBytes)) {
    return fail(who +
                " failed to prove the job's secret: the ranks were given different secrets (" +
                kSecretKnobs + "), or something else answers at that address");
  }
  auth::Proof proof = auth::prove(*setup_->secret, auth::Role::kInitiator, transcript());
  send_bytes(proof.data(), proof.size(), deadline,
             "rank " + std::to_string(setup_->rank) + " proving the secret to rank " +
                 std::to_string(peer_));
  return Step::kDone;
}

Handshake::Step Handshake::on_proof(const std::function<bool(int)>& expected) {
  if (!auth::verify(*setup_->secret, auth::Role::kInitiator, transcript(), buffer_)) {
    return reject("it claimed to be rank " + std::to_string(peer_) +
                  ", but its proof of the job's secret is wrong: a rank with another secret, or "
                  "a forged or replayed handshake");
  }
  // Another connection may have proved this rank meanwhile (a genuine retry): one pair each.
  if (!expected(peer_)) return reject("rank " + std::to_string(peer_) + " is connected already");
  return Step::kDone;
}

}  // namespace gloo_lite::tcp
