// The streams of collectives (stream.h): who runs a call, in which order, and the race rule.
#include "gloo_lite/stream.h"

#include <algorithm>
#include <csignal>
#include <cstdlib>

#include <pthread.h>

#include "gloo_lite/base/error.h"
#include "gloo_lite/context_engine.h"

namespace gloo_lite::detail {

std::exception_ptr CollectiveWork::run_body(const Turn& turn) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    sequence_ = turn.sequence;
    started_ = true;
  }
  try {
    body_(turn);
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

bool CollectiveWork::wait_until(const Deadline& until) {
  // Only unbounded waits: a sliced wait (Python's, for Ctrl-C) must come back at its slice's
  // end, and a call run here returns only when the collective does.
  if (until.is_never()) {
    if (auto stream = stream_.lock()) {
      if (stream->run_here_if_next(*this)) return true;
    }
  }
  return WorkState::wait_until(until);
}

void CollectiveWork::cancel(std::exception_ptr why) {
  body_ = nullptr;
  finish(std::move(why));
}

std::string CollectiveWork::describe() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string stream = " on tag " + std::to_string(tag_);
  if (!started_) return std::string(collective_) + stream + " (not started yet)";
  return std::string(collective_) + " #" + std::to_string(sequence_) + stream;
}

void Turn::check_not_raced() const {
  if (!stream->raced_.load(std::memory_order_acquire)) return;
  std::string race;
  {
    std::lock_guard<std::mutex> lock(stream->mutex_);
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
  raced_.store(true, std::memory_order_release);
  race_ = clash;
  return clash;
}

void Stream::raise_race(const std::string& clash) {
  context_.fail(clash);
  throw InvalidArgument(clash);
}

void Stream::check_entry(std::unique_lock<std::mutex>& lock, const char* collective) {
  if (stopping_) {
    lock.unlock();
    throw ConnectionError(std::string(collective) + " on rank " + std::to_string(context_.rank()) +
                          ": the context is being destroyed");
  }
  if (running_ != nullptr && running_thread_ == std::this_thread::get_id()) {
    // Not a race: this thread is inside the running call (its custom reduction, say), which
    // cannot finish before the new call does. Refused before anything moved.
    std::string reentry =
        std::string(collective) + " on rank " + std::to_string(context_.rank()) +
        " started on tag " + std::to_string(tag_) + " from inside " + running_ + " #" +
        std::to_string(running_sequence_) +
        " on the same thread (from its custom reduction): it would wait for the call it runs "
        "in; call it after " +
        running_ + " returns";
    lock.unlock();
    throw InvalidArgument(reentry);
  }
  if (!running_inline_) return;
  std::string clash = race_locked(collective);
  lock.unlock();
  raise_race(clash);
}

void Stream::queue_locked(const std::shared_ptr<CollectiveWork>& work) {
  start_worker_locked();  // first: if no thread can be made, nothing is left queued
  work->stream_ = weak_from_this();
  queue_.push_back(work);
  changed_.notify_all();
}

bool Stream::free_for_next_locked() const {
  return running_ == nullptr &&
         (finishing_ == std::thread::id() || finishing_ == std::this_thread::get_id());
}

void Stream::run_next_locked(std::unique_lock<std::mutex>& lock) {
  std::shared_ptr<CollectiveWork> work = std::move(queue_.front());
  queue_.pop_front();
  std::exception_ptr outcome;
  run_locked(lock, work->collective(), /*inline_call=*/false,
             [&](const Turn& turn) { outcome = work->run_body(turn); });
  // The turn is back: now let go of the call's captures (the last reference to the context
  // may go with them) and report the outcome. Until the Work's callbacks are done (they may
  // copy results into buffers the next call reads) no other thread starts the next call.
  finishing_ = std::this_thread::get_id();
  lock.unlock();
  work->release_body();
  work->finish(outcome);
  work.reset();
  lock.lock();
  finishing_ = std::thread::id();
  changed_.notify_all();
}

bool Stream::run_here_if_next(const CollectiveWork& work) {
  // This thread may drop the last reference to the context (with the call's captures), and
  // with it the stream's owner: keep the stream until this returns.
  std::shared_ptr<Stream> keep = shared_from_this();
  std::unique_lock<std::mutex> lock(mutex_);
  if (stopping_ || !free_for_next_locked() || queue_.empty() || queue_.front().get() != &work) {
    return false;
  }
  run_next_locked(lock);
  return true;
}

template <typename Run>
void Stream::run_locked(std::unique_lock<std::mutex>& lock, const char* collective,
                        bool inline_call, Run&& run) {
  running_ = collective;
  running_sequence_ = sequence_++;
  running_inline_ = inline_call;
  running_thread_ = std::this_thread::get_id();
  Turn turn{this, running_sequence_};
  lock.unlock();
  // Give the turn back however the call ends (a blocking call's exception propagates).
  struct Release {
    Stream* stream;
    std::unique_lock<std::mutex>& lock;
    ~Release() {
      lock.lock();
      stream->running_ = nullptr;
      stream->running_inline_ = false;
      stream->running_thread_ = std::thread::id();
      stream->raced_.store(false, std::memory_order_relaxed);
      stream->race_.clear();
      stream->changed_.notify_all();
    }
  } release{this, lock};
  run(turn);
}

void Stream::run_blocking(const char* collective, const char* algorithm, const CallBody& body) {
  std::unique_lock<std::mutex> lock(mutex_);
  check_entry(lock, collective);
  if (free_for_next_locked() && queue_.empty()) {
    run_locked(lock, collective, /*inline_call=*/true, body);
    return;
  }
  auto work = std::make_shared<CollectiveWork>(collective, tag_, algorithm, body);
  queue_locked(work);
  lock.unlock();
  work->wait_until(Deadline::never());
  if (auto error = work->error()) std::rethrow_exception(error);
}

void Stream::start(const std::shared_ptr<CollectiveWork>& work) {
  std::unique_lock<std::mutex> lock(mutex_);
  check_entry(lock, work->collective());
  queue_locked(work);
}

void Stream::worker_loop() {
  // Asynchronous signals are for the application's threads (Python's Ctrl-C handling, say),
  // not this one; faults (SIGSEGV, SIGBUS, ...) stay deliverable so crash handlers still see
  // them.
  sigset_t asynchronous;
  sigemptyset(&asynchronous);
  for (int signal :
       {SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGCHLD, SIGPIPE, SIGWINCH}) {
    sigaddset(&asynchronous, signal);
  }
  pthread_sigmask(SIG_BLOCK, &asynchronous, nullptr);
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || (!queue_.empty() && free_for_next_locked()); });
    if (stopping_ && queue_.empty()) return;
    if (queue_.empty() || !free_for_next_locked()) continue;
    run_next_locked(lock);
  }
}

size_t Stream::in_flight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size() + (running_ != nullptr ? 1 : 0);
}

std::string Stream::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (running_ == nullptr) return "";
  return std::string(running_) + " #" + std::to_string(running_sequence_) + " on tag " +
         std::to_string(tag_);
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
  bool on_worker = worker_.joinable() && worker_.get_id() == std::this_thread::get_id();
  if (!on_worker) {
    // Also a call another thread ran (run_here_if_next) and is finishing. Not a call this
    // thread runs itself (a close from its custom reduction): that one ends with `why` once it
    // returns into the library, and waiting for it here would wait forever.
    std::unique_lock<std::mutex> lock(mutex_);
    if (running_ == nullptr || running_thread_ != std::this_thread::get_id()) {
      changed_.wait(lock, [&] { return free_for_next_locked(); });
    }
  }
  if (worker_.joinable()) {
    // A context destroyed from its own worker (by a callback of the call it runs) cannot join.
    if (on_worker) {
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
    // Page-aligned, as the buffers that frameworks and the benchmark hand us usually are. The
    // kernel copies received bytes from page-aligned socket pages into it; a destination a few
    // cache lines past a page boundary (where a 64-byte aligned_alloc of this size lands, at
    // offset 64 of an mmap'ed chunk) makes every load of that copy alias a store just made,
    // 4 KiB apart (4K aliasing): 1 MiB recursive-doubling allreduces over TCP took 2-3x as long.
    constexpr size_t kPage = 4096;
    capacity = (capacity + kPage - 1) / kPage * kPage;
    scratch_memory_.reset();
    scratch_.reset(static_cast<uint8_t*>(std::aligned_alloc(kPage, capacity)));
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
