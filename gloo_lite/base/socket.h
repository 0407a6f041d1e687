// Socket helpers shared by the TCP store and the TCP transport: an owning file descriptor,
// addresses (IPv4 and IPv6), and blocking-with-deadline connect/read/write built on poll().
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "gloo_lite/base/deadline.h"

namespace gloo_lite {

// Owns a file descriptor; closes it on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// A socket address of either family, printable as "host:port" or "[v6]:port".
struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  int family() const { return storage.ss_family; }
  uint16_t port() const;
  void set_port(uint16_t port);
  std::string host() const;
  std::string to_string() const;
  bool is_loopback() const;

  // Resolves "host" and a port; prefers IPv4 when a name has both (numeric addresses keep
  // their family). Throws InvalidArgument when the name does not resolve.
  static SocketAddress resolve(const std::string& host, uint16_t port);
  // Parses "host:port", "[v6]:port"; throws InvalidArgument.
  static SocketAddress parse(const std::string& host_port);
  static SocketAddress local_of(int fd);
  static SocketAddress peer_of(int fd);
};

void set_nonblocking(int fd, bool on);
void set_nodelay(int fd);
void set_cloexec(int fd);

// Creates a listening TCP socket bound to `address` (port 0 picks a free one).
Fd listen_tcp(const SocketAddress& address, int backlog = 4096);
// Connects, retrying refused connections with backoff until the deadline. Blocking socket.
Fd connect_tcp(const SocketAddress& address, const Deadline& deadline, const std::string& what);
// Accepts one connection before the deadline, or returns an invalid Fd when it passes.
Fd accept_tcp(int listen_fd, const Deadline& deadline);

// Whole-buffer I/O on a (blocking or non-blocking) socket, bounded by the deadline.
// Throw TimeoutError on expiry and ConnectionError on EOF or socket errors; `what` names the
// operation and peer for the message.
void write_all(int fd, const void* data, size_t bytes, const Deadline& deadline,
               const std::string& what);
void read_all(int fd, void* data, size_t bytes, const Deadline& deadline, const std::string& what);
// Waits until fd is readable (true) or the deadline passes (false).
bool wait_readable(int fd, const Deadline& deadline);

// Little-endian fixed-width encoding for every wire header and the store protocol.
inline void put_u16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
inline void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline uint16_t get_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace gloo_lite
