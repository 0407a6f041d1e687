// The streams of collectives (stream.h): who runs a call, in which order, and the race rule.
#include "gloo_lite/stream.h"

#include <algorithm>
#include <csignal>
#include <cstdlib>

#include <pthread.h>

#include "gloo_lite/base/error.h"
#include "gloo_lite/context.h"

namespace gloo_lite::detail {

void CollectiveWork::run(const Turn& turn) {
  try {
    body_(turn);
    finish();
  } catch (...) {
    finish(std::current_exception());
  }
  body_ = nullptr;
}

void CollectiveWork::cancel(std::exception_ptr why) {
  finish(std::move(why));
  body_ = nullptr;
}

void Turn::check_not_raced() const {
  std::string race;
  {
    std::lock_guard<std::mutex> lock(stream->mutex_);
    if (!stream->raced_) return;
    race = stream->race_;
  }
  throw InvalidArgument("another thread called a collective on tag " +
                        std::to_string(stream->tag_) +
                        " while this one ran, so its result cannot be trusted: " + race);
}

Stream::~Stream() {
  if (worker_.joinable()) worker_.detach();  // the worker's own last reference, after stop()
}

void Stream::start_worker_locked() {
  if (worker_.joinable()) return;
  worker_ = std::thread([self = shared_from_this()] { self->worker_loop(); });
}

std::string Stream::race_locked(const char* collective) {
  std::string clash =
      std::string(collective) + " on rank " + std::to_string(context_.rank()) + " started on tag " +
      std::to_string(tag_) + " while " + running_ + " #" + std::to_string(running_sequence_) +
      " was still running on that tag as a blocking call in another thread: collectives with one "
      "tag are one ordered stream and must be called one at a time, in the same order on every "
      "rank; give each thread its own CollectiveOptions::tag";
  // The call holding the turn is part of the race too: it must not report success.
  raced_ = true;
  race_ = clash;
  return clash;
}

void Stream::raise_race(const std::string& clash) {
  context_.fail(clash);
  throw InvalidArgument(clash);
}

void Stream::run_blocking(const std::shared_ptr<CollectiveWork>& work) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (running_inline_) {
    std::string clash = race_locked(work->collective());
    lock.unlock();
    raise_race(clash);
  }
  if (stopping_) {
    lock.unlock();
    work->cancel(std::make_exception_ptr(
        ConnectionError(std::string(work->collective()) + ": the context is being destroyed")));
    return;
  }
  if (running_ == nullptr && queue_.empty()) {
    run_locked(lock, work, /*inline_call=*/true);
    return;
  }
  queue_.push_back(work);
  start_worker_locked();
  changed_.notify_all();
  lock.unlock();
  work->wait_until(Deadline::never());
}

void Stream::start(const std::shared_ptr<CollectiveWork>& work) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (running_inline_) {
    std::string clash = race_locked(work->collective());
    lock.unlock();
    raise_race(clash);
  }
  if (stopping_) {
    lock.unlock();
    work->cancel(std::make_exception_ptr(
        ConnectionError(std::string(work->collective()) + ": the context is being destroyed")));
    return;
  }
  queue_.push_back(work);
  start_worker_locked();
  changed_.notify_all();
}

void Stream::run_locked(std::unique_lock<std::mutex>& lock,
                        const std::shared_ptr<CollectiveWork>& work, bool inline_call) {
  running_ = work->collective();
  running_sequence_ = sequence_++;
  running_inline_ = inline_call;
  Turn turn{this, running_sequence_, work.get()};
  lock.unlock();
  work->run(turn);
  lock.lock();
  running_ = nullptr;
  running_inline_ = false;
  raced_ = false;
  race_.clear();
  changed_.notify_all();
}

void Stream::worker_loop() {
  // Signals are for the application's threads (Python's Ctrl-C handling, say), not this one.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || (!queue_.empty() && running_ == nullptr); });
    if (stopping_ && queue_.empty()) return;
    if (queue_.empty() || running_ != nullptr) continue;
    std::shared_ptr<CollectiveWork> work = std::move(queue_.front());
    queue_.pop_front();
    run_locked(lock, work, /*inline_call=*/false);
  }
}

size_t Stream::in_flight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size() + (running_ != nullptr ? 1 : 0);
}

void Stream::stop(const std::exception_ptr& why) {
  std::deque<std::shared_ptr<CollectiveWork>> queued;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    queued.swap(queue_);
    changed_.notify_all();
  }
  for (const auto& work : queued) work->cancel(why);
  {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return running_ == nullptr; });
  }
  if (worker_.joinable()) {
    // A context destroyed from its own worker (by a callback of the call it runs) cannot join.
    if (worker_.get_id() == std::this_thread::get_id()) {
      worker_.detach();
    } else {
      worker_.join();
    }
  }
}

Stream::Scratch Stream::scratch(transport::Mesh& mesh, size_t bytes) {
  if (bytes > scratch_bytes_ || !scratch_memory_) {
    // Grow by half again so a sweep of rising sizes reallocates O(log) times.
    size_t capacity = std::max<size_t>({bytes, scratch_bytes_ + scratch_bytes_ / 2, 4096});
    capacity = (capacity + 63) / 64 * 64;
    scratch_memory_.reset();
    scratch_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, capacity)));
    if (!scratch_) throw Error("cannot allocate " + std::to_string(capacity) + " bytes of scratch");
    scratch_bytes_ = capacity;
    scratch_memory_ = mesh.register_memory(scratch_.get(), capacity);
  }
  return {scratch_.get(), scratch_memory_.get()};
}

void Stream::release_scratch() {
  scratch_memory_.reset();
  scratch_.reset();
  scratch_bytes_ = 0;
}

}  // namespace gloo_lite::detail
