// A private redis-server for one test: loopback only, free port, password, no persistence.
// Also a minimal RESP client written independently of the store under test, used to control
// the server (CONFIG RESETSTAT, INFO) and to check what the store wrote.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "gloo_lite/base/socket.h"

namespace gloo_lite::test {

class RespClient {
 public:
  RespClient(int port, const std::string& password,
             std::chrono::milliseconds connect_timeout = std::chrono::seconds(10));
  // Sends one command; returns the reply as text: simple strings, integers and bulk strings as
  // their content, nil as "(nil)", errors with their leading '-', arrays joined by '\n'.
  std::string call(const std::vector<std::string>& args);

 private:
  std::string read_reply();
  std::string read_line();
  std::string read_exact(size_t bytes);
  Fd fd_;
  std::string buffered_;
};

class RedisServer {
 public:
  // Throws std::runtime_error with an installation hint when redis-server is not in PATH: the
  // Redis tests then fail, loudly, rather than skip.
  RedisServer();
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  // The redis-server process, for tests that stop (SIGSTOP) or kill it.
  pid_t pid() const { return pid_; }
  // Kills the server now and reaps it (the destructor then has nothing left to do).
  void kill_now();
  const std::string& password() const { return password_; }
  std::string url(int db) const;
  RespClient client() const { return RespClient(port_, password_); }

 private:
  bool start(int port);
  pid_t pid_ = -1;
  int port_ = 0;
  std::string password_ = "gl-test-pw";
};

// Parses `INFO commandstats` into command -> calls.
std::map<std::string, long> parse_commandstats(const std::string& info);

}  // namespace gloo_lite::test
