// Store clients are shared by threads, and a get() may hold its connection for as long as it
// waits. A small pool gives each concurrent operation its own connection and reuses idle ones,
// so one thread's blocking get never delays another thread's set.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace gloo_lite::store_detail {

template <typename Connection>
class ConnectionPool {
 public:
  explicit ConnectionPool(size_t max_idle = 8) : max_idle_(max_idle), owner_(getpid()) {}

  // An idle connection, or null when the caller must open one.
  std::unique_ptr<Connection> take() {
    std::lock_guard<std::mutex> lock(mutex_);
    // After fork() parent and child would share these sockets and interleave their requests;
    // the child closes its copies (the parent's stay open) and opens its own.
    if (owner_ != getpid()) {
      idle_.clear();
      owner_ = getpid();
    }
    if (idle_.empty()) return nullptr;
    auto connection = std::move(idle_.back());
    idle_.pop_back();
    return connection;
  }

  // Returns a healthy connection after a completed exchange. A connection that failed part-way
  // is not returned: its stream position is unknown, so it is simply destroyed.
  void give_back(std::unique_ptr<Connection> connection) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (owner_ == getpid() && idle_.size() < max_idle_) idle_.push_back(std::move(connection));
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<Connection>> idle_;
  size_t max_idle_;
  pid_t owner_;
};

}  // namespace gloo_lite::store_detail
