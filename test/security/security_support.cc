#include "test/security/security_support.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "transport_tcp/tcp_device.h"

namespace gloo_lite::test {

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  if (const char* old = std::getenv(name)) old_ = old;
  if (value != nullptr) {
    setenv(name, value, 1);
  } else {
    unsetenv(name);
  }
}

ScopedEnv::~ScopedEnv() {
  if (old_) {
    setenv(name_.c_str(), old_->c_str(), 1);
  } else {
    unsetenv(name_.c_str());
  }
}

StderrToFile::StderrToFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot open " + path);
  saved_ = ::dup(2);
  ::dup2(fd, 2);
  ::close(fd);
}

StderrToFile::~StderrToFile() {
  if (saved_ >= 0) {
    ::dup2(saved_, 2);
    ::close(saved_);
  }
}

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string read_directory_files(const std::string& directory) {
  std::string all;
  DIR* dir = ::opendir(directory.c_str());
  if (dir == nullptr) return all;
  while (dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    std::string path = directory + "/" + name;
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) continue;
    if (S_ISDIR(info.st_mode)) {
      all += read_directory_files(path);
    } else if (S_ISREG(info.st_mode)) {
      all += name + "\n" + read_whole_file(path) + "\n";
    }
  }
  ::closedir(dir);
  return all;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++count;
  }
  return count;
}

std::shared_ptr<transport::Device> tcp_loopback_device() {
  tcp::DeviceOptions options;
  options.hostname = "127.0.0.1";
  return tcp::create_device(options);
}

RecordingRelay::RecordingRelay(uint16_t server_port)
    : listener_(listen_tcp(SocketAddress::resolve("127.0.0.1", 0))),
      port_(SocketAddress::local_of(listener_.get()).port()),
      thread_([this, server_port] { relay(server_port); }) {}

RecordingRelay::~RecordingRelay() {
  if (thread_.joinable()) thread_.join();
}

std::pair<Bytes, Bytes> RecordingRelay::finish() {
  if (thread_.joinable()) thread_.join();
  return {from_client_, from_server_};
}

void RecordingRelay::relay(uint16_t server_port) {
  try {
    relay_until_closed(server_port);
  } catch (const std::exception&) {
    // One side went away while the other still wrote: the connection is over.
  }
}

void RecordingRelay::relay_until_closed(uint16_t server_port) {
  auto deadline = Deadline::after(std::chrono::seconds(20));
  pollfd l{listener_.get(), POLLIN, 0};
  if (::poll(&l, 1, 20000) != 1) return;
  Fd client(::accept(listener_.get(), nullptr, nullptr));
  Fd server = connect_tcp(SocketAddress::resolve("127.0.0.1", server_port), deadline, "relay");
  uint8_t buffer[65536];
  while (!deadline.expired()) {
    pollfd fds[2] = {{client.get(), POLLIN, 0}, {server.get(), POLLIN, 0}};
    if (::poll(fds, 2, 1000) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::recv(fds[i].fd, buffer, sizeof(buffer), 0);
      if (n <= 0) return;
      Bytes& record = i == 0 ? from_client_ : from_server_;
      record.insert(record.end(), buffer, buffer + n);
      write_all(fds[1 - i].fd, buffer, static_cast<size_t>(n), deadline, "relay");
    }
  }
}

}  // namespace gloo_lite::test
