#include "test/collectives/thread_world.h"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "rendezvous/stores.h"
#include "test/transport/harness.h"

namespace gloo_lite::test {

ThreadWorld::ThreadWorld(int size, std::chrono::milliseconds timeout)
    : size_(size),
      device_(loopback_device()),
      contexts_(size),
      connect_errors_(size),
      busy_(size, false),
      running_(size) {
  auto store = make_hash_store();
  ContextOptions options;
  options.timeout = timeout;
  // Each thread connects its own context (all must connect at once), then serves bodies.
  for (int rank = 0; rank < size; ++rank) {
    threads_.emplace_back([this, store, options, rank] {
      try {
        contexts_[rank] = Context::create(store, rank, size_, device_, options);
      } catch (const std::exception& error) {
        connect_errors_[rank] = error.what();
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        --running_;
        done_.notify_all();
      }
      serve(rank);
    });
  }
  {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return running_ == 0; });
  }
  for (int rank = 0; rank < size; ++rank) {
    if (!contexts_[rank]) {
      stop();
      throw std::runtime_error("rank " + std::to_string(rank) +
                               " could not connect: " + connect_errors_[rank]);
    }
  }
}

ThreadWorld::~ThreadWorld() { stop(); }

void ThreadWorld::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  contexts_.clear();
}

void ThreadWorld::serve(int rank) {
  uint64_t seen = 0;
  for (;;) {
    const Body* body = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      body = body_;
    }
    if (contexts_[rank]) (*body)(rank, *contexts_[rank]);
    std::lock_guard<std::mutex> lock(mutex_);
    busy_[rank] = false;
    --running_;
    done_.notify_all();
  }
}

void ThreadWorld::run(const Body& body, std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(mutex_);
  body_ = &body;
  running_ = size_;
  busy_.assign(size_, true);
  ++generation_;
  wake_.notify_all();
  if (!done_.wait_for(lock, limit, [&] { return running_ == 0; })) {
    std::string stuck;
    for (int rank = 0; rank < size_; ++rank) {
      if (busy_[rank]) stuck += " " + std::to_string(rank);
    }
    std::fprintf(
        stderr,
        "FATAL: ranks%s of %d still inside the collective %lld s after it started, past "
        "every deadline it was given: a hang. Aborting the test binary.\n",
        stuck.c_str(), size_,
        static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(limit).count()));
    std::fflush(stderr);
    std::abort();
  }
  body_ = nullptr;
}

}  // namespace gloo_lite::test
