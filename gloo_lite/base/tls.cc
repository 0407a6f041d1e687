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
// Encrypted bytes a send() prepares before it writes them: several records per system call.
constexpr size_t kSealAheadBytes = 128 * 1024;

// The write BIO of every channel: appends to the channel's out_ (tls.h says why).
BIO_METHOD* sink_method(int (*write)(BIO*, const char*, int),
                        long (*ctrl)(BIO*, int, long, void*)) {
  static BIO_METHOD* method = [&] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "gloo_lite tls out");
    BIO_meth_set_write(m, write);
    BIO_meth_set_ctrl(m, ctrl);
    return m;
  }();
  return method;
}

constexpr const char* kWhatToDo =
    "; set all three of GLOO_LITE_TLS_CERT, GLOO_LITE_TLS_KEY and GLOO_LITE_TLS_CA (PEM files: "
    "this process's certificate, its private key, and the CA that signed every rank's "
    "certificate) on every rank and on the store, or none of them";

// Under TLS 1.3 a client's handshake is over before the server has checked the client's
// certificate, so a refusal of it arrives as an alert at the client's first read, where
// "read failed: tlsv1 alert unknown ca" alone does not tell the user which side to fix.
bool refused_our_certificate(unsigned long code) {
  if (ERR_GET_LIB(code) != ERR_LIB_SSL) return false;
  switch (ERR_GET_REASON(code)) {
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
      return true;
    default:
      return false;
  }
}

const char* const kCertificateRefused =
    " (the peer refused this process's certificate (GLOO_LITE_TLS_CERT): it was not signed by "
    "the CA the peer trusts (GLOO_LITE_TLS_CA there), or it has expired; every rank and the "
    "store need certificates of the same CA)";

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
    : fd_(fd), peer_(std::move(peer)) {
  ERR_clear_error();
  ssl_ = SSL_new(context.get());
  BIO* in = BIO_new_socket(fd, BIO_NOCLOSE);
  BIO* out = BIO_new(sink_method(&Channel::sink_write, &Channel::sink_ctrl));
  if (!ssl_ || !in || !out) {
    BIO_free(in);
    BIO_free(out);
    SSL_free(ssl_);
    throw Error("tls: cannot set up a connection: " + openssl_errors());
  }
  BIO_set_data(out, this);
  BIO_set_init(out, 1);
  SSL_set_bio(ssl_, in, out);  // ssl_ owns both now
  set_nonblocking(fd, true);
  if (role == Role::kClient) {
    SSL_set_connect_state(ssl_);
  } else {
    SSL_set_accept_state(ssl_);
  }
  events_ = role == Role::kClient ? POLLOUT : POLLIN;
}

Channel::~Channel() { SSL_free(ssl_); }

int Channel::sink_write(BIO* bio, const char* data, int bytes) {
  auto* self = static_cast<Channel*>(BIO_get_data(bio));
  self->out_.insert(self->out_.end(), data, data + bytes);
  self->out_total_ += static_cast<uint64_t>(bytes);
  return bytes;
}

long Channel::sink_ctrl(BIO* bio, int command, long /*number*/, void* /*pointer*/) {
  auto* self = static_cast<Channel*>(BIO_get_data(bio));
  switch (command) {
    case BIO_CTRL_FLUSH:
      return 1;  // flush() writes out_ when the caller's socket can take it
    case BIO_CTRL_WPENDING:
    case BIO_CTRL_PENDING:
      return static_cast<long>(self->out_.size() - self->out_sent_);
    default:
      return 0;
  }
}

int Channel::flush() {
  // Bytes OpenSSL wrote on its own (handshake messages, alerts) belong to no caller's data.
  uint64_t sealed_end = sealed_.empty() ? out_flushed_ : sealed_.back().end;
  if (out_total_ > sealed_end) sealed_.push_back({out_total_, 0});
  int result = 0;
  while (out_sent_ < out_.size()) {
    ssize_t n =
        ::send(fd_, out_.data() + out_sent_, out_.size() - out_sent_, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      out_sent_ += static_cast<size_t>(n);
      out_flushed_ += static_cast<uint64_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      events_ = POLLOUT;
      result = 1;
      break;
    }
    error_ = std::strerror(errno);
    result = -1;
    break;
  }
  if (out_sent_ == out_.size()) {
    out_.clear();
    out_sent_ = 0;
  }
  while (!sealed_.empty() && sealed_.front().end <= out_flushed_) {
    flushed_plain_ += sealed_.front().plain;
    sealed_.pop_front();
  }
  return result;
}

Channel::Progress Channel::handshake_step() {
  // Our last flight must be out before the peer can answer it.
  if (flush() == 1) return Progress::kMore;
  ERR_clear_error();
  errno = 0;
  int rc = SSL_do_handshake(ssl_);
  int code = rc == 1 ? SSL_ERROR_NONE : SSL_get_error(ssl_, rc);
  int saved_errno = errno;
  if (code == SSL_ERROR_NONE || code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE) {
    if (flush() == 1) return Progress::kMore;  // events_ is POLLOUT
    if (rc == 1) {
      events_ = POLLIN;
      return Progress::kDone;
    }
    events_ = POLLIN;
    return Progress::kMore;
  }
  flush();  // the alert that tells the peer why, if the socket takes it
  error_ = openssl_errors();
  long verified = SSL_get_verify_result(ssl_);
  if (verified != X509_V_OK) {
    error_ += std::string(error_.empty() ? "" : ": ") + X509_verify_cert_error_string(verified);
  }
  if (error_.empty()) {
    hung_up_ = saved_errno == 0;
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
    default: {
      // A record that fails its integrity check, an alert from the peer: the stream is broken.
      bool refused = refused_our_certificate(ERR_peek_error());
      error_ = "TLS: " + openssl_errors();
      if (refused) error_ += kCertificateRefused;
      errno = EPROTO;
      return -1;
    }
  }
}

ssize_t Channel::recv(void* data, size_t bytes) {
  ERR_clear_error();
  errno = 0;
  int n = SSL_read(ssl_, data, static_cast<int>(std::min<size_t>(bytes, INT_MAX)));
  ssize_t result = n > 0 ? n : io_failure(n);
  if (!out_.empty()) {
    // A read can make OpenSSL answer (an alert); that goes out when the socket takes it.
    int saved_errno = errno;
    flush();
    errno = saved_errno;
  }
  return result;
}

bool Channel::seal(const void* data, size_t bytes) {
  ERR_clear_error();
  errno = 0;
  // The write BIO never blocks, so OpenSSL takes all of it or fails.
  int n = SSL_write(ssl_, data, static_cast<int>(bytes));
  if (n <= 0) {
    io_failure(n);
    return false;
  }
  sealed_.push_back({out_total_, bytes});
  unreported_ += bytes;
  return true;
}

ssize_t Channel::send(const iovec* iov, int count) {
  // Encrypt what is offered past what was encrypted already, a batch of records at a time.
  size_t skip = unreported_;
  size_t gathered = 0;
  for (int i = 0; i < count && out_.size() - out_sent_ < kSealAheadBytes; ++i) {
    const auto* piece = static_cast<const uint8_t*>(iov[i].iov_base);
    size_t left = iov[i].iov_len;
    size_t skipped = std::min(skip, left);
    skip -= skipped;
    piece += skipped;
    left -= skipped;
    while (left > 0 && out_.size() - out_sent_ < kSealAheadBytes) {
      if (gathered == 0 && left >= gather_.size()) {
        // A large payload is encrypted straight from the caller's buffer, a record at a time.
        if (!seal(piece, gather_.size())) return -1;
        piece += gather_.size();
        left -= gather_.size();
        continue;
      }
      // Headers and short payloads: gathered into one record instead of one record each.
      size_t take = std::min(left, gather_.size() - gathered);
      std::memcpy(gather_.data() + gathered, piece, take);
      gathered += take;
      piece += take;
      left -= take;
      if (gathered == gather_.size()) {
        if (!seal(gather_.data(), gathered)) return -1;
        gathered = 0;
      }
    }
  }
  if (gathered > 0 && !seal(gather_.data(), gathered)) return -1;
  int flushed = flush();
  size_t done = flushed_plain_;
  flushed_plain_ = 0;
  unreported_ -= done;
  if (done > 0) return static_cast<ssize_t>(done);
  if (flushed < 0) {
    errno = EPIPE;
    return -1;
  }
  // Nothing of the caller's is out yet: the socket is full (an empty offer sends nothing).
  errno = EAGAIN;
  return flushed == 1 ? -1 : 0;
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
