#include "gloo_lite/base/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "gloo_lite/base/backoff.h"
#include "gloo_lite/base/error.h"

namespace gloo_lite {

void Fd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

uint16_t SocketAddress::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (family() == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  }
  return 0;
}

void SocketAddress::set_port(uint16_t port) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(port);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(port);
}

std::string SocketAddress::host() const {
  char text[INET6_ADDRSTRLEN] = {0};
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, text,
              sizeof(text));
  } else if (family() == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, text,
              sizeof(text));
  } else {
    return "?";
  }
  return text;
}

std::string SocketAddress::to_string() const {
  if (family() == AF_INET6) return "[" + host() + "]:" + std::to_string(port());
  return host() + ":" + std::to_string(port());
}

bool SocketAddress::is_loopback() const {
  if (family() == AF_INET) {
    uint32_t a = ntohl(reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr.s_addr);
    return (a >> 24) == 127;
  }
  if (family() == AF_INET6) {
    const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(&a);
  }
  return false;
}

SocketAddress SocketAddress::resolve(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  std::string name = host;
  if (name.size() >= 2 && name.front() == '[' && name.back() == ']') {
    name = name.substr(1, name.size() - 2);
  }
  int rc = getaddrinfo(name.c_str(), nullptr, &hints, &result);
  if (rc != 0 || result == nullptr) {
    throw InvalidArgument("cannot resolve host '" + host + "': " + gai_strerror(rc));
  }
  const addrinfo* pick = result;
  for (const addrinfo* ai = result; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_family == AF_INET) {
      pick = ai;
      break;
    }
  }
  SocketAddress address;
  std::memcpy(&address.storage, pick->ai_addr, pick->ai_addrlen);
  address.length = pick->ai_addrlen;
  freeaddrinfo(result);
  address.set_port(port);
  return address;
}

SocketAddress SocketAddress::parse(const std::string& host_port) {
  size_t colon = host_port.rfind(':');
  if (colon == std::string::npos || colon + 1 >= host_port.size()) {
    throw InvalidArgument("address '" + host_port + "' is not host:port");
  }
  std::string port_text = host_port.substr(colon + 1);
  char* end = nullptr;
  unsigned long port = std::strtoul(port_text.c_str(), &end, 10);
  if (*end != '\0' || port > 65535) {
    throw InvalidArgument("address '" + host_port + "' has a bad port");
  }
  return resolve(host_port.substr(0, colon), static_cast<uint16_t>(port));
}

SocketAddress SocketAddress::local_of(int fd) {
  SocketAddress address;
  address.length = sizeof(address.storage);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address.storage), &address.length);
  return address;
}

SocketAddress SocketAddress::peer_of(int fd) {
  SocketAddress address;
  address.length = sizeof(address.storage);
  getpeername(fd, reinterpret_cast<sockaddr*>(&address.storage), &address.length);
  return address;
}

void set_nonblocking(int fd, bool on) {
  int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK));
}

void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void set_cloexec(int fd) { fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC); }

static std::string errno_text(int err) { return std::strerror(err); }

Fd listen_tcp(const SocketAddress& address, int backlog) {
  Fd fd(::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) throw ConnectionError("socket(): " + errno_text(errno));
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address.storage), address.length) != 0) {
    throw ConnectionError("cannot bind " + address.to_string() + ": " + errno_text(errno));
  }
  if (::listen(fd.get(), backlog) != 0) {
    throw ConnectionError("cannot listen on " + address.to_string() + ": " + errno_text(errno));
  }
  return fd;
}

Fd connect_tcp(const SocketAddress& address, const Deadline& deadline, const std::string& what) {
  Backoff backoff(std::chrono::milliseconds(1), std::chrono::milliseconds(200));
  int last_error = 0;
  while (true) {
    Fd fd(::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) throw ConnectionError(what + ": socket(): " + errno_text(errno));
    set_nonblocking(fd.get(), true);
    int rc =
        ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address.storage), address.length);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd.get(), POLLOUT, 0};
      int ready = ::poll(&p, 1, deadline.poll_timeout_ms());
      if (ready > 0) {
        socklen_t len = sizeof(last_error);
        getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &last_error, &len);
        rc = last_error == 0 ? 0 : -1;
      } else {
        last_error = ETIMEDOUT;
      }
    } else if (rc != 0) {
      last_error = errno;
    }
    if (rc == 0) {
      set_nonblocking(fd.get(), false);
      set_nodelay(fd.get());
      return fd;
    }
    bool retryable = last_error == ECONNREFUSED || last_error == ETIMEDOUT ||
                     last_error == ECONNRESET || last_error == EHOSTUNREACH ||
                     last_error == ENETUNREACH || last_error == EAGAIN;
    if (!retryable) {
      throw ConnectionError(what + ": cannot connect to " + address.to_string() + ": " +
                            errno_text(last_error));
    }
    if (!backoff.sleep(deadline)) break;
  }
  throw TimeoutError(what + ": could not connect to " + address.to_string() +
                     " before the deadline (last error: " + errno_text(last_error) +
                     "); is the peer running and reachable?");
}

Fd accept_tcp(int listen_fd, const Deadline& deadline) {
  while (true) {
    if (!wait_readable(listen_fd, deadline)) return Fd();
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      set_nodelay(fd);
      return Fd(fd);
    }
    if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
      throw ConnectionError("accept(): " + errno_text(errno));
    }
  }
}

bool wait_readable(int fd, const Deadline& deadline) {
  while (true) {
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, deadline.poll_timeout_ms());
    if (ready > 0) return true;
    if (ready == 0) return false;
    if (errno != EINTR) return false;
  }
}

void write_all(int fd, const void* data, size_t bytes, const Deadline& deadline,
               const std::string& what) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      pollfd pfd{fd, POLLOUT, 0};
      int ready = ::poll(&pfd, 1, deadline.poll_timeout_ms());
      if (ready == 0) throw TimeoutError(what + ": write timed out");
      continue;
    }
    throw ConnectionError(what + ": write failed: " + errno_text(errno));
  }
}

void read_all(int fd, void* data, size_t bytes, const Deadline& deadline, const std::string& what) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    ssize_t n = ::recv(fd, p, bytes, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) throw ConnectionError(what + ": connection closed by peer");
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      if (!wait_readable(fd, deadline)) throw TimeoutError(what + ": read timed out");
      continue;
    }
    throw ConnectionError(what + ": read failed: " + errno_text(errno));
  }
}

}  // namespace gloo_lite
