#include "bindings/torch/completion_pool.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace gloo_lite::torch_backend {
namespace {

class CompletionPool {
 public:
  void post(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push_back(std::move(task));
    if (idle_ < tasks_.size()) {
      std::thread([this] { loop(); }).detach();
      ++idle_;  // counted idle until it takes a task
    }
    ready_.notify_one();
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      ready_.wait(lock, [&] { return !tasks_.empty(); });
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      --idle_;
      lock.unlock();
      task();
      task = nullptr;
      lock.lock();
      ++idle_;
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;
  size_t idle_ = 0;  // threads waiting for a task (or started and about to)
};

// Never destroyed: detached threads use it until the process ends.
CompletionPool& pool() {
  static auto* instance = new CompletionPool();
  return *instance;
}

}  // namespace

void complete_in_pool(std::function<void()> task) { pool().post(std::move(task)); }

}  // namespace gloo_lite::torch_backend
