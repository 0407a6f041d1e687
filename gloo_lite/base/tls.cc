#include "gloo_lite/base/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/socket.h"

namespace gloo_lite::tls {

const char* const kKnobs = "GLOO_LITE_TLS_CERT, GLOO_LITE_TLS_KEY and GLOO_LITE_TLS_CA";

namespace {

constexpr size_t kReadAheadBytes = 256 * 1024;

constexpr const char* kWhatToDo =
    "; set all three of GLOO_LITE_TLS_CERT, GLOO_LITE_TLS_KEY and GLOO_LITE_TLS_CA (PEM files: "
    "this process's certificate, its private key, and the CA that signed every rank's "
    "certificate) on every rank and on the store, or none of them";

// The reasons OpenSSL queued on this thread, oldest first, and the queue emptied.
std::string openssl_errors() {
  std::string text;
  while (unsigned long code = ERR_get_error()) {
    char buffer[256];
    ERR_error_string_n(code, buffer, sizeof(buffer));
    // "error:0A000086:SSL routines::certificate verify failed": the reason is the last field.
    const char* reason = std::strrchr(buffer, ':');
    text += (text.empty() ? "" : "; ") + std::string(reason ? reason + 1 : buffer);
  }
  return text;
}

[[noreturn]] void bad_file(const char* knob, const std::string& path, const std::string& why) {
  std::string detail = openssl_errors();
  throw InvalidArgument(std::string(knob) + "=" + path + ": " + why +
                        (detail.empty() ? "" : " (" + detail + ")") + kWhatToDo);
}

}  // namespace

Context::Context(const std::string& cert, const std::string& key, const std::string& ca) {
  ERR_clear_error();
  ctx_ = SSL_CTX_new(TLS_method());
  if (!ctx_) throw Error("tls: SSL_CTX_new failed: " + openssl_errors());
  // TLS 1.3 only: no legacy versions or cipher suites to negotiate down to.
  SSL_CTX_set_min_proto_version(ctx_, TLS1_3_VERSION);
  SSL_CTX_set_max_proto_version(ctx_, TLS1_3_VERSION);
  // Both sides verify: a peer without a certificate from the CA fails the handshake.
  SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  // Connections are long-lived and never resumed: no tickets (they would add a message after
  // the handshake that the first read has to consume).
  SSL_CTX_set_num_tickets(ctx_, 0);
  SSL_CTX_set_session_cache_mode(ctx_, SSL_SESS_CACHE_OFF);
  // A peer that closes its socket ends the stream (reads return 0), as on plain TCP; frames
  // carry their own lengths, so a truncation is still noticed.
  SSL_CTX_set_options(ctx_, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
  // Non-blocking sends from a queue: return after each record, and allow the retry of a send
  // to come from another buffer holding the same bytes (the gather buffer, a user payload).
  SSL_CTX_set_mode(ctx_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // Read what the socket holds in one call, several records at once, rather than a record
  // header and then its body: half the receive system calls. What is read ahead waits in the
  // channel (Channel::buffered()).
  SSL_CTX_set_read_ahead(ctx_, 1);
  SSL_CTX_set_default_read_buffer_len(ctx_, kReadAheadBytes);
  // AES-128-GCM first: as safe for this purpose and faster than the AES-256 default.
  SSL_CTX_set_ciphersuites(ctx_,
                           "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:"
                           "TLS_CHACHA20_POLY1305_SHA256");
  if (SSL_CTX_use_certificate_chain_file(ctx_, cert.c_str()) != 1) {
    SSL_CTX_free(ctx_);
    bad_file("GLOO_LITE_TLS_CERT", cert, "cannot load the certificate");
  }
  if (SSL_CTX_use_PrivateKey_file(ctx_, key.c_str(), SSL_FILETYPE_PEM) != 1) {
    SSL_CTX_free(ctx_);
    bad_file("GLOO_LITE_TLS_KEY", key, "cannot load the private key");
  }
  if (SSL_CTX_check_private_key(ctx_) != 1) {
    SSL_CTX_free(ctx_);
    bad_file("GLOO_LITE_TLS_KEY", key, "the key does not match GLOO_LITE_TLS_CERT=" + cert);
  }
  if (SSL_CTX_load_verify_locations(ctx_, ca.c_str(), nullptr) != 1) {
    SSL_CTX_free(ctx_);
    bad_file("GLOO_LITE_TLS_CA", ca, "cannot load the CA certificate");
  }
}

Context::~Context() { SSL_CTX_free(ctx_); }

std::shared_ptr<const Context> configured_context() {
  const char* names[3] = {"GLOO_LITE_TLS_CERT", "GLOO_LITE_TLS_KEY", "GLOO_LITE_TLS_CA"};
  std::string values[3];
  std::string missing, present;
  for (int i = 0; i < 3; ++i) {
    values[i] = knob_string(names[i]);
    std::string& list = values[i].empty() ? missing : present;
    list += (list.empty() ? "" : ", ") + std::string(names[i]);
  }
  if (present.empty()) return nullptr;
  if (!missing.empty()) {
    throw InvalidArgument("TLS is half configured: " + present + " set but " + missing + " not" +
                          kWhatToDo);
  }
  return std::make_shared<const Context>(values[0], values[1], values[2]);
}

Channel::Channel(const Context& context, int fd, Role role, std::string peer)
    : fd_(fd), role_(role), peer_(std::move(peer)) {
  ERR_clear_error();
  ssl_ = SSL_new(context.get());
  if (!ssl_ || SSL_set_fd(ssl_, fd) != 1) {
    SSL_free(ssl_);
    throw Error("tls: cannot set up a connection: " + openssl_errors());
  }
  set_nonblocking(fd, true);
  if (role == Role::kClient) {
    SSL_set_connect_state(ssl_);
  } else {
    SSL_set_accept_state(ssl_);
  }
  events_ = role == Role::kClient ? POLLOUT : POLLIN;
}

Channel::~Channel() { SSL_free(ssl_); }

Channel::Progress Channel::handshake_step() {
  ERR_clear_error();
  errno = 0;
  int rc = SSL_do_handshake(ssl_);
  if (rc == 1) {
    events_ = POLLIN;
    return Progress::kDone;
  }
  int code = SSL_get_error(ssl_, rc);
  if (code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE) {
    events_ = code == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
    return Progress::kMore;
  }
  int saved_errno = errno;
  error_ = openssl_errors();
  long verified = SSL_get_verify_result(ssl_);
  if (verified != X509_V_OK) {
    error_ += std::string(error_.empty() ? "" : ": ") + X509_verify_cert_error_string(verified);
  }
  if (error_.empty()) {
    error_ = saved_errno != 0 ? std::strerror(saved_errno)
                              : "the peer closed the connection during the TLS handshake";
  }
  return Progress::kFailed;
}

bool Channel::wait(const Deadline& deadline) {
  while (true) {
    pollfd p{fd_, events_, 0};
    int ready = ::poll(&p, 1, deadline.poll_timeout_ms());
    if (ready > 0) return true;
    if (ready == 0 || errno != EINTR) return false;
  }
}

void Channel::handshake(const Deadline& deadline, const std::string& what) {
  while (true) {
    switch (handshake_step()) {
      case Progress::kDone:
        return;
      case Progress::kFailed:
        throw ConnectionError(what + ": the TLS handshake with " + peer_ + " failed (" + error_ +
                              "): does it speak TLS, and were " + kKnobs +
                              " given certificates of the same CA on both sides?");
      case Progress::kMore:
        if (!wait(deadline)) {
          throw TimeoutError(what + ": the TLS handshake with " + peer_ +
                             " did not finish before the deadline (does it speak TLS? " + kKnobs +
                             " must be set on every rank and the store, or on none)");
        }
    }
  }
}

ssize_t Channel::io_failure(int rc) {
  int saved_errno = errno;
  int code = SSL_get_error(ssl_, rc);
  switch (code) {
    case SSL_ERROR_ZERO_RETURN:
      return 0;
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
      events_ = code == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
      errno = EAGAIN;
      return -1;
    case SSL_ERROR_SYSCALL:
      error_ = openssl_errors();
      if (saved_errno == 0) saved_errno = EPIPE;
      if (error_.empty()) error_ = std::strerror(saved_errno);
      errno = saved_errno;
      return -1;
    default:
      // A record that fails its integrity check, an alert from the peer: the stream is broken.
      error_ = "TLS: " + openssl_errors();
      errno = EPROTO;
      return -1;
  }
}

ssize_t Channel::recv(void* data, size_t bytes) {
  ERR_clear_error();
  errno = 0;
  int n = SSL_read(ssl_, data, static_cast<int>(std::min<size_t>(bytes, INT_MAX)));
  return n > 0 ? n : io_failure(n);
}

ssize_t Channel::send(const iovec* iov, int count) {
  const void* data = gather_.data();
  size_t bytes = 0;
  if (count > 0 && iov[0].iov_len >= gather_.size()) {
    // A large payload is encrypted straight from the caller's buffer (OpenSSL copies it into
    // records anyway).
    data = iov[0].iov_base;
    bytes = std::min<size_t>(iov[0].iov_len, size_t{1} << 30);
  } else {
    // Headers and short payloads: one record instead of one per piece. The same queue front
    // always gathers the same leading bytes, which a retry after EAGAIN needs.
    for (int i = 0; i < count && bytes < gather_.size(); ++i) {
      size_t take = std::min(iov[i].iov_len, gather_.size() - bytes);
      std::memcpy(gather_.data() + bytes, iov[i].iov_base, take);
      bytes += take;
    }
  }
  if (bytes == 0) return 0;
  ERR_clear_error();
  errno = 0;
  int n = SSL_write(ssl_, data, static_cast<int>(bytes));
  return n > 0 ? n : io_failure(n);
}

bool Channel::buffered() const { return SSL_pending(ssl_) > 0 || SSL_has_pending(ssl_) == 1; }

void Channel::write_all(const void* data, size_t bytes, const Deadline& deadline,
                        const std::string& what) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (bytes > 0) {
    iovec iov{const_cast<uint8_t*>(p), bytes};
    ssize_t n = send(&iov, 1);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EAGAIN) {
      if (!wait(deadline)) throw TimeoutError(what + ": write timed out");
      continue;
    }
    throw ConnectionError(what + ": write failed: " + error_);
  }
}

void Channel::read_all(void* data, size_t bytes, const Deadline& deadline,
                       const std::string& what) {
  auto* p = static_cast<uint8_t*>(data);
  while (bytes > 0) {
    ssize_t n = recv(p, bytes);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) throw ConnectionError(what + ": connection closed by peer");
    if (errno == EAGAIN) {
      if (!wait(deadline)) throw TimeoutError(what + ": read timed out");
      continue;
    }
    throw ConnectionError(what + ": read failed: " + error_);
  }
}

void write_all(Channel* channel, int fd, const void* data, size_t bytes, const Deadline& deadline,
               const std::string& what) {
  if (channel) return channel->write_all(data, bytes, deadline, what);
  gloo_lite::write_all(fd, data, bytes, deadline, what);
}

void read_all(Channel* channel, int fd, void* data, size_t bytes, const Deadline& deadline,
              const std::string& what) {
  if (channel) return channel->read_all(data, bytes, deadline, what);
  gloo_lite::read_all(fd, data, bytes, deadline, what);
}

bool looks_like_tls(const uint8_t* bytes) {
  // A handshake record (22) of TLS 1.x (3, 1..4): what a ClientHello starts with.
  return bytes[0] == 0x16 && bytes[1] == 0x03 && bytes[2] <= 0x04;
}

}  // namespace gloo_lite::tls
