#include "test/store/redis_server.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "gloo_lite/base/backoff.h"
#include "gloo_lite/base/error.h"
#include "test/support/test_support.h"

extern char** environ;

namespace gloo_lite::test {

namespace {

constexpr std::chrono::milliseconds kIoTimeout(10000);

std::string find_in_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = dirs.substr(start, end - start) + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

}  // namespace

RespClient::RespClient(int port, const std::string& password,
                       std::chrono::milliseconds connect_timeout)
    : fd_(connect_tcp(SocketAddress::resolve("127.0.0.1", static_cast<uint16_t>(port)),
                      Deadline::after(connect_timeout), "test redis client")) {
  std::string reply = call({"AUTH", password});
  if (reply != "OK") throw std::runtime_error("test redis client: AUTH failed: " + reply);
}

std::string RespClient::call(const std::vector<std::string>& args) {
  std::string request = "*" + std::to_string(args.size()) + "\r\n";
  for (const auto& arg : args) request += "$" + std::to_string(arg.size()) + "\r\n" + arg + "\r\n";
  write_all(fd_.get(), request.data(), request.size(), Deadline::after(kIoTimeout), "redis");
  return read_reply();
}

std::string RespClient::read_reply() {
  std::string line = read_line();
  char kind = line.empty() ? '?' : line[0];
  std::string rest = line.substr(1);
  switch (kind) {
    case '+':
    case ':':
      return rest;
    case '-':
      return line;
    case '$': {
      long length = std::stol(rest);
      if (length < 0) return "(nil)";
      std::string value = read_exact(static_cast<size_t>(length) + 2);
      return value.substr(0, static_cast<size_t>(length));
    }
    case '*': {
      long count = std::stol(rest);
      std::string joined;
      for (long i = 0; i < count; ++i) joined += (i ? "\n" : "") + read_reply();
      return joined;
    }
  }
  throw std::runtime_error("test redis client: unexpected reply line '" + line + "'");
}

std::string RespClient::read_line() {
  while (true) {
    size_t end = buffered_.find("\r\n");
    if (end != std::string::npos) {
      std::string line = buffered_.substr(0, end);
      buffered_.erase(0, end + 2);
      return line;
    }
    char chunk[4096];
    if (!wait_readable(fd_.get(), Deadline::after(kIoTimeout))) {
      throw std::runtime_error("test redis client: no reply");
    }
    ssize_t n = ::recv(fd_.get(), chunk, sizeof(chunk), 0);
    if (n <= 0) throw std::runtime_error("test redis client: connection closed");
    buffered_.append(chunk, static_cast<size_t>(n));
  }
}

std::string RespClient::read_exact(size_t bytes) {
  if (buffered_.size() < bytes) {
    std::string more(bytes - buffered_.size(), '\0');
    read_all(fd_.get(), more.data(), more.size(), Deadline::after(kIoTimeout), "redis");
    buffered_ += more;
  }
  std::string out = buffered_.substr(0, bytes);
  buffered_.erase(0, bytes);
  return out;
}

RedisServer::RedisServer() {
  // A port found free can be taken before redis binds it; try a few.
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (start(free_loopback_port())) return;
  }
  throw std::runtime_error("redis-server did not start on a free loopback port after 5 tries");
}

bool RedisServer::start(int port) {
  std::string program = find_in_path("redis-server");
  if (program.empty()) {
    throw std::runtime_error(
        "redis-server is not installed (not found in PATH); the Redis store tests need it: "
        "install it (apt-get install redis-server) or put it in PATH");
  }
  std::vector<std::string> args = {program,
                                   "--port",
                                   std::to_string(port),
                                   "--bind",
                                   "127.0.0.1",
                                   "--save",
                                   "",
                                   "--appendonly",
                                   "no",
                                   "--requirepass",
                                   password_,
                                   "--daemonize",
                                   "no",
                                   "--loglevel",
                                   "warning",
                                   "--databases",
                                   "16"};
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  int rc = posix_spawn(&pid_, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start redis-server: " + std::string(strerror(rc)));
  port_ = port;

  auto deadline = Deadline::after(std::chrono::seconds(10));
  Backoff backoff(std::chrono::milliseconds(1), std::chrono::milliseconds(50));
  while (true) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;  // most likely the port was taken meanwhile
    }
    try {
      RespClient probe(port_, password_, std::chrono::milliseconds(20));
      if (probe.call({"PING"}) == "PONG") return true;
    } catch (const std::exception&) {
      // not listening yet
    }
    if (!backoff.sleep(deadline)) {
      throw std::runtime_error("redis-server on port " + std::to_string(port) +
                               " not ready within 10 s");
    }
  }
}

RedisServer::~RedisServer() { kill_now(); }

void RedisServer::kill_now() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
}

std::string RedisServer::url(int db) const {
  return "redis://:" + password_ + "@127.0.0.1:" + std::to_string(port_) + "/" + std::to_string(db);
}

std::map<std::string, long> parse_commandstats(const std::string& info) {
  // Lines look like: cmdstat_set:calls=16,usec=...
  std::map<std::string, long> calls;
  size_t at = 0;
  while ((at = info.find("cmdstat_", at)) != std::string::npos) {
    size_t colon = info.find(':', at);
    size_t equals = info.find("calls=", colon);
    std::string name = info.substr(at + 8, colon - at - 8);
    calls[name] = std::stol(info.substr(equals + 6));
    at = colon;
  }
  return calls;
}

}  // namespace gloo_lite::test
