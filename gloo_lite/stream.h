// Internal: one stream of collectives of a context, the calls made with one
// CollectiveOptions::tag. A stream runs its calls one at a time, in the order they were started
// (so that every rank runs call #n of the stream as its n-th), and numbers them 0, 1, 2, ...
//
// Who runs a call (docs/execution-model.md):
//  - a blocking call runs in the calling thread when the stream is idle (nothing running,
//    nothing queued): no thread hand-off, so the blocking forms cost what they did before
//    non-blocking work existed;
//  - otherwise (a non-blocking call, or a blocking one behind queued work) the call is queued
//    and the stream's worker thread runs it; the worker is started on the stream's first
//    non-blocking call and sleeps while the queue is empty.
// A blocking call that runs inline holds the stream until it returns: another thread starting a
// call on the stream meanwhile is a program error (the calls could be matched in different
// orders on different ranks); it throws InvalidArgument and fails the context, and the running
// call does not report success either. (A blocking call queued behind non-blocking work is not
// watched this way: it is ordered by the queue like any started call.) A call started on the
// stream by the thread running its current call (from a custom reduction) is refused as such.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "gloo_lite/transport/transport.h"
#include "gloo_lite/work_state.h"

namespace gloo_lite {
class ContextEngine;
}

namespace gloo_lite::detail {

class Stream;

// The turn of one call on its stream, handed to the call's body while it runs.
struct Turn {
  Stream* stream;
  uint64_t sequence;
  // Throws InvalidArgument when another thread started a call on this stream while this
  // (blocking) call ran: its result cannot be trusted (called before reporting success).
  void check_not_raced() const;
};

// The body of a call: runs it in its turn, throws on failure.
using CallBody = std::function<void(const Turn&)>;

// A collective that waits in its stream's queue or runs from there.
class CollectiveWork : public WorkState {
 public:
  CollectiveWork(const char* collective, uint16_t tag, const char* algorithm, CallBody body)
      : WorkState(algorithm), collective_(collective), tag_(tag), body_(std::move(body)) {}
  const char* collective() const { return collective_; }
  // Runs the body (once) and returns its outcome. The worker finishes the work with it only
  // after the call has given its turn back and the body (with whatever it captured) is gone, so
  // that a finished Work never has a call of its stream still running.
  std::exception_ptr run_body(const Turn& turn);
  void release_body() { body_ = nullptr; }
  // Finishes without running.
  void cancel(std::exception_ptr why);
  std::string describe() const override;
  // A wait without a deadline runs the work in the waiting thread when it is next on an idle
  // stream (Stream::run_here_if_next): no hand-off to the worker and back.
  bool wait_until(const Deadline& until) override;

 private:
  friend class Stream;
  const char* collective_;
  const uint16_t tag_;
  uint64_t sequence_ = 0;  // under mutex_, once running
  bool started_ = false;   // under mutex_
  CallBody body_;
  std::weak_ptr<Stream> stream_;  // set when queued
};

class Stream : public std::enable_shared_from_this<Stream> {
 public:
  Stream(ContextEngine& context, uint16_t tag) : context_(context), tag_(tag) {}
  // The worker thread holds the stream too, so that a context destroyed on the worker (by the
  // last reference to it going with a finished call's captures) does not pull the stream from
  // under that worker.
  ~Stream();

  uint16_t tag() const { return tag_; }
  // A blocking call: runs `body` now in this thread if the stream is idle (its exception
  // propagates), else queues it as a CollectiveWork and waits for it (and rethrows its error).
  // Throws InvalidArgument (and fails the context) when another thread's blocking call holds
  // the stream.
  void run_blocking(const char* collective, const char* algorithm, const CallBody& body);
  // Queues `work` for the worker thread and returns. Same race rule as run_blocking.
  void start(const std::shared_ptr<CollectiveWork>& work);
  // Runs `work` in this thread if it is next in the queue and nobody holds the turn, as the
  // worker would have (same order, same sequence number), and returns true once it has
  // finished; false (nothing done) otherwise. A caller that waits for its work at once -- a
  // blocking call behind queued work, torch's async_op=False, iallreduce().wait() -- then
  // pays no hand-off to the worker and no wake-up back; on a machine where ranks outnumber
  // cores those wake-ups wait for a core and cost more than a small collective.
  bool run_here_if_next(const CollectiveWork& work);
  // Calls running or queued.
  size_t in_flight() const;
  // The call holding the turn ("allreduce #0 on tag 1"), or "" when none does.
  std::string running() const;
  // Finishes every queued call with `why` without running it, waits for the running one to end
  // (the caller has aborted the mesh, so it ends promptly), and joins the worker.
  void stop(const std::exception_ptr& why);

  // Scratch memory for the running call (ContextEngine::scratch).
  struct Scratch {
    uint8_t* data = nullptr;
    transport::Memory* memory = nullptr;
  };
  Scratch scratch(transport::Mesh& mesh, size_t bytes);
  void release_scratch();

 private:
  friend struct Turn;
  // The message for a call that entered while another thread's blocking call held the stream;
  // marks that call raced. Called with mutex_ held.
  std::string race_locked(const char* collective);
  void raise_race(const std::string& clash);
  void worker_loop();
  void start_worker_locked();
  // Takes the turn for `collective` and runs `run(turn)`: mutex_ held on entry and exit,
  // released while the call runs.
  template <typename Run>
  void run_locked(std::unique_lock<std::mutex>& lock, const char* collective, bool inline_call,
                  Run&& run);
  // Queues `work`, starting the worker if needed (mutex_ held).
  void queue_locked(const std::shared_ptr<CollectiveWork>& work);
  // Pops the first queued work and runs it in this thread, then finishes it (mutex_ held on
  // entry and exit): the worker's step and run_here_if_next's.
  void run_next_locked(std::unique_lock<std::mutex>& lock);
  // Whether the next call may start in this thread: nothing runs, and no other thread is
  // still finishing the previous call (mutex_ held).
  bool free_for_next_locked() const;
  // Whether `collective` may join the stream now; when it races a blocking call, fails the
  // context and throws (releasing `lock`). A call from inside the running one, on its thread (a
  // custom reduction calling a collective on its own tag), would wait for itself: it throws
  // InvalidArgument and consumes nothing.
  void check_entry(std::unique_lock<std::mutex>& lock, const char* collective);

  ContextEngine& context_;
  const uint16_t tag_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;  // queue, running or stopping changed
  std::deque<std::shared_ptr<CollectiveWork>> queue_;
  uint64_t sequence_ = 0;
  const char* running_ = nullptr;  // the call holding the turn
  uint64_t running_sequence_ = 0;
  std::thread::id running_thread_;  // ... and the thread running it
  bool running_inline_ = false;     // ... run by its caller (a blocking call)
  // Written under mutex_; atomic so that a call's check_not_raced needs no lock when it is not
  // set (every call makes that check).
  std::atomic<bool> raced_{false};
  std::string race_;
  // The thread finishing the last call (running its Work's callbacks, which may copy results
  // into place), or none. The next call starts only after that, except in that very thread (a
  // callback may run or wait for a later call itself).
  std::thread::id finishing_;
  bool stopping_ = false;
  std::thread worker_;

  struct FreeDeleter {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, FreeDeleter> scratch_;
  size_t scratch_bytes_ = 0;
  std::unique_ptr<transport::Memory> scratch_memory_;
};

}  // namespace gloo_lite::detail
