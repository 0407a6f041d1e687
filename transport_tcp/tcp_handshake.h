// One TCP connection's handshake, before it becomes a pair (docs/wire-format.md, Handshake).
// Without a secret: hello, hello-ack. With one (docs/security.md), a mutual challenge-response:
//   connector -> listener: hello (authenticated flag) + the connector's fresh nonce
//   listener -> connector: hello-ack + the listener's fresh nonce + the listener's proof
//   connector -> listener: the connector's proof
// each proof an HMAC (base/auth.h) over both nonces, the context id, both ranks and the
// direction. The listener admits a rank only once its proof checks, so a hello copied from the
// store's records or replayed from an earlier connection gets nowhere: its proof would have to
// answer this connection's fresh nonce.
// With TLS configured (base/tls.h), a TLS handshake comes first and all of the above runs inside
// the channel; a peer without a certificate from the job's CA is refused before its hello.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gloo_lite/base/auth.h"
#include "gloo_lite/base/socket.h"
#include "gloo_lite/base/tls.h"
#include "transport_tcp/wire.h"

namespace gloo_lite::tcp {

// What every handshake of one connect() shares.
struct HandshakeSetup {
  uint64_t context_id = 0;
  int rank = 0;
  int size = 0;
  std::shared_ptr<const auth::Secret> secret;  // nullptr: no authentication
  std::shared_ptr<const tls::Context> tls;     // nullptr: plain TCP
};

class Handshake {
 public:
  enum class Step {
    kMore,      // waiting for more bytes
    kDone,      // authenticated (where required): the connection is the pair to peer()
    kRejected,  // a stranger or impostor: log why() and close it; the rendezvous goes on
    kFailed,    // the rank we dialled refused us or failed to prove the secret: fatal
  };

  // A connection this rank dialled to `peer`: writes the opening hello at once (with TLS,
  // starts the TLS handshake; the hello follows it).
  static Handshake dialled(const HandshakeSetup& setup, Fd fd, int peer, std::string address,
                           const Deadline& deadline);
  // A connection accepted on the listener, from `address`.
  static Handshake accepted(const HandshakeSetup& setup, Fd fd, std::string address);

  int fd() const { return fd_.get(); }
  Fd take_fd() { return std::move(fd_); }
  // The TLS channel the pair goes on with (nullptr: plain TCP).
  std::unique_ptr<tls::Channel> take_tls() { return std::move(tls_); }
  // What to poll the socket for: POLLOUT while the TLS handshake waits to write.
  short poll_events() const;
  bool dialled() const { return dialled_; }
  // The rank dialled, or the rank an accepted connection claims (-1 before its hello).
  int peer() const { return peer_; }
  const std::string& from() const { return from_; }
  const std::string& why() const { return why_; }

  // Reads what arrived (without blocking) and takes the next step; replies are written at
  // once. `expected(src)`: whether an accepted connection from rank src may still join.
  Step advance(const std::function<bool(int)>& expected, const Deadline& deadline);

 private:
  enum class Stage { kTls, kHello, kAck, kProof };
  Handshake(const HandshakeSetup& setup, Fd fd, int peer, std::string from, bool dialled);
  Step on_message(const std::function<bool(int)>& expected, const Deadline& deadline);
  Step on_tls(const Deadline& deadline);
  Step read_stage(const std::function<bool(int)>& expected, const Deadline& deadline);
  void send_hello(const Deadline& deadline);
  void send_bytes(const void* data, size_t bytes, const Deadline& deadline,
                  const std::string& what);
  Step on_hello(const std::function<bool(int)>& expected, const Deadline& deadline);
  Step on_ack(const Deadline& deadline);
  Step on_proof(const std::function<bool(int)>& expected);
  // The fields every hello must match; "" or why not.
  std::string check_common(const wire::Hello& hello) const;
  std::vector<uint8_t> hello_bytes(uint16_t kind) const;
  Step reject(std::string why);
  Step fail(std::string why);
  auth::Transcript transcript() const;

  const HandshakeSetup* setup_;
  Fd fd_;
  std::unique_ptr<tls::Channel> tls_;
  int peer_;
  std::string from_;
  bool dialled_;
  Stage stage_;
  uint8_t buffer_[wire::kHelloBytes + auth::kNonceBytes + auth::kProofBytes] = {};
  size_t wanted_ = wire::kHelloBytes;
  size_t received_ = 0;
  bool would_block_ = false;  // the last read found nothing more
  auth::Nonce initiator_nonce_{};
  auth::Nonce responder_nonce_{};
  std::string why_;
};

}  // namespace gloo_lite::tcp
