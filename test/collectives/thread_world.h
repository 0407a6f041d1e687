// P ranks as P long-lived threads of this process, each with its own Context on one shared
// loopback TCP device and a shared hash store (as run_context_threads sets them up), reused from
// case to case so that the matrix pays for connecting once per P. Reuse also exercises what a
// real job does: many collectives in a row on one context (sequence numbers, pooled scratch).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gloo_lite/context.h"
#include "gloo_lite/transport/transport.h"

namespace gloo_lite::test {

class ThreadWorld {
 public:
  using Body = std::function<void(int rank, Context& context)>;

  // Connects `size` contexts; throws what a rank's Context::create threw.
  explicit ThreadWorld(int size, std::chrono::milliseconds timeout);
  ~ThreadWorld();
  ThreadWorld(const ThreadWorld&) = delete;
  ThreadWorld& operator=(const ThreadWorld&) = delete;

  int size() const { return size_; }
  // Runs body on every rank at once and waits for all of them. A rank still running after
  // `limit` means a hang that the library's deadlines failed to break: this prints which ranks
  // are stuck and aborts the process, since threads cannot be cancelled.
  void run(const Body& body, std::chrono::milliseconds limit);

 private:
  void serve(int rank);
  void stop();  // ends and joins the threads, closes the contexts

  int size_;
  std::shared_ptr<transport::Device> device_;
  std::vector<std::shared_ptr<Context>> contexts_;
  std::vector<std::string> connect_errors_;
  std::vector<bool> busy_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const Body* body_ = nullptr;
  uint64_t generation_ = 0;
  int running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace gloo_lite::test
