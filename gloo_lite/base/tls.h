// TLS for TCP connections (docs/security.md): the one mechanism the TCP transport's pairs and the
// TCP store's connections use to make what they send private and integrity-checked. OpenSSL
// (libssl) does all of the cryptography: TLS 1.3 only, and both sides present a certificate
// signed by the job's CA and verify the other's, so a peer without one is refused.
//
// A Channel wraps a connected socket it does not own. Its handshake can be taken in steps (an
// epoll- or poll-driven caller: the store server, the transport's connect loop) or at once with
// a deadline; afterwards recv() and send() stand in for recv(MSG_DONTWAIT) and sendmsg(), with
// the same return conventions. Decrypted bytes may wait inside the channel where epoll cannot
// see them: callers that stop reading must ask buffered() before they go back to epoll.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "gloo_lite/base/deadline.h"

struct ssl_ctx_st;
struct ssl_st;
struct bio_st;

namespace gloo_lite::tls {

// The TLS configuration of this process: certificate, key and CA loaded into OpenSSL.
class Context {
 public:
  Context(const std::string& cert, const std::string& key, const std::string& ca);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ssl_ctx_st* get() const { return ctx_; }

 private:
  ssl_ctx_st* ctx_ = nullptr;
};

// GLOO_LITE_TLS_CERT, GLOO_LITE_TLS_KEY and GLOO_LITE_TLS_CA (PEM files), loaded; nullptr when
// none is set (plain TCP). Throws InvalidArgument naming the knob and what to do when only some
// are set or a file cannot be used.
std::shared_ptr<const Context> configured_context();

enum class Role { kClient, kServer };

class Channel {
 public:
  // Puts `fd` (connected, not owned) into non-blocking mode. `peer` names it in messages.
  Channel(const Context& context, int fd, Role role, std::string peer);
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  enum class Progress { kDone, kMore, kFailed };
  // One non-blocking step of the handshake. kMore: poll for poll_events() and call again;
  // kFailed: error() says why (the peer has no TLS, or no certificate the CA signed).
  Progress handshake_step();
  // The whole handshake, poll()ing until `deadline`. Throws ConnectionError naming `what`,
  // the peer and the knobs, or TimeoutError.
  void handshake(const Deadline& deadline, const std::string& what);
  short poll_events() const { return events_; }
  // After kFailed: the peer just closed the connection, with no alert and no bytes that are not
  // TLS (a client that gave up, a port scanner): nothing worth a warning.
  bool hung_up() const { return hung_up_; }

  // Like ::recv(fd, data, bytes, MSG_DONTWAIT): > 0 bytes read, 0 at the peer's end, -1 with
  // errno (EAGAIN: nothing to read now; otherwise error() says why).
  ssize_t recv(void* data, size_t bytes);
  // Like ::sendmsg(MSG_DONTWAIT): bytes sent from the front of `iov` (their records are on the
  // socket), or -1 with errno. Bytes not reported as sent must be offered again, from the same
  // front (what a send queue that only grows at its back does anyway): the channel may have
  // encrypted them already and skips them.
  ssize_t send(const iovec* iov, int count);
  // The caller's bytes encrypted and not yet reported as sent: the front of the next offer,
  // which the caller may no longer change (nothing may be inserted into or dropped from it).
  size_t unreported() const { return unreported_; }
  // Whether decrypted or received bytes wait inside the channel: epoll will not report them.
  bool buffered() const;

  // Whole buffers, poll()ing until `deadline` (socket.h's write_all/read_all over TLS).
  void write_all(const void* data, size_t bytes, const Deadline& deadline, const std::string& what);
  void read_all(void* data, size_t bytes, const Deadline& deadline, const std::string& what);

  int fd() const { return fd_; }
  const std::string& error() const { return error_; }

 private:
  ssize_t io_failure(int rc);  // maps SSL_get_error to the recv/sendmsg conventions
  bool wait(const Deadline& deadline);
  // Encrypts `bytes` (one record's worth at most) into out_.
  bool seal(const void* data, size_t bytes);
  // Writes what out_ holds to the socket, counting the caller's bytes whose records are now all
  // on it into flushed_plain_. Returns 0 when out_ is empty, 1 when the socket is full, -1 with
  // error_ when the connection broke.
  int flush();
  static int sink_write(bio_st* bio, const char* data, int bytes);
  static long sink_ctrl(bio_st* bio, int command, long number, void* pointer);

  ssl_st* ssl_ = nullptr;
  int fd_;
  std::string peer_;
  short events_ = 0;
  bool hung_up_ = false;  // what the last operation waits for (POLLIN/POLLOUT)
  std::string error_;
  // Small pieces of a gather write (a frame header and a short payload) go out as one record.
  std::array<uint8_t, 16384> gather_{};
  // What OpenSSL writes goes here first (its write BIO is this channel), so that several
  // records leave in one send(): one system call and one wakeup of the receiver per batch,
  // not per 16 KiB record.
  std::vector<uint8_t> out_;
  size_t out_sent_ = 0;       // of out_
  uint64_t out_total_ = 0;    // bytes ever appended to out_
  uint64_t out_flushed_ = 0;  // of those, on the socket
  // Records in out_, in order: where each ends in the stream of out_total_, and the plaintext
  // bytes of the caller's it holds (0 for the handshake's and alerts).
  struct Sealed {
    uint64_t end;
    size_t plain;
  };
  std::deque<Sealed> sealed_;
  size_t unreported_ = 0;     // the caller's bytes encrypted and not yet reported as sent
  size_t flushed_plain_ = 0;  // of those, the ones now on the socket
};

// What a failed handshake or refusal should tell the operator to check.
extern const char* const kKnobs;

// Whole-buffer I/O on a socket that may carry TLS: the channel's when there is one, else the
// plain socket's (socket.h).
void write_all(Channel* channel, int fd, const void* data, size_t bytes, const Deadline& deadline,
               const std::string& what);
void read_all(Channel* channel, int fd, void* data, size_t bytes, const Deadline& deadline,
              const std::string& what);

// Whether `bytes` (at least 3) start like a TLS record (a handshake on a plain port).
bool looks_like_tls(const uint8_t* bytes);

}  // namespace gloo_lite::tls
