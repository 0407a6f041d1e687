// A Work is the handle of one non-blocking operation: a collective started with i<name>
// (gloo_lite/collectives.h) or a point-to-point transfer started with Context::isend/irecv.
// The execution model (who makes progress, in what order, what a failure or a destroyed
// context does to work in flight) is described in docs/execution-model.md.
//
// The buffers of a started operation belong to it until it has finished: do not read or write
// them (nor free them) before test() returns true or wait() returns. Dropping the last handle
// of an unfinished collective lets it run on (its stream holds it); dropping that of an
// unfinished point-to-point transfer cancels the transfer. A point-to-point transfer's
// deadline is enforced when it is looked at (test() or wait()).
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <string>

namespace gloo_lite {

namespace detail {
class WorkState;
}

class Work {
 public:
  // An empty handle: finished, without error.
  Work() = default;
  explicit Work(std::shared_ptr<detail::WorkState> state) : state_(std::move(state)) {}

  // True once the operation has finished, successfully or not; never blocks, never throws.
  bool test() const;
  // Blocks until the operation has finished; throws its error (the original exception: a
  // TimeoutError, ConnectionError, ...) if it failed.
  void wait() const;
  // Blocks at most `timeout`. True: finished (and throws its error if it failed, like wait()).
  // False: still running; the operation goes on under its own deadline (the timeout it was
  // started with), and may be waited for again.
  bool wait(std::chrono::milliseconds timeout) const;
  // The error of a finished, failed operation; null while running and after success.
  std::exception_ptr error() const;
  // What runs: the algorithm of a collective ("ring", "tree", ...; chosen when the call was
  // started), "p2p" for point-to-point.
  std::string algorithm() const;
  // "allreduce #12 on tag 0", "send to rank 2 (tag 5)", for messages.
  std::string describe() const;
  // The rank a receive matched (irecv_any); -1 otherwise and until known.
  int source() const;
  // Calls `callback(error)` when the operation finishes (error null on success), before it
  // reports finished: test() turns true and wait() returns only after the callback has run.
  // Right away in this thread if the operation has finished already, else in the thread that
  // finishes it: a queued collective's stream worker (or the thread whose wait() ran it). A
  // callback is how a binding completes a future of its own without a thread of its own. Keep
  // it short (the stream's next call waits for it); it may start new work, but must not wait
  // for this work or other work of its stream. Point-to-point work finishes when it is looked
  // at (test() or wait()). A callback that throws is logged and its exception dropped.
  void on_finish(std::function<void(std::exception_ptr)> callback) const;

 private:
  std::shared_ptr<detail::WorkState> state_;
};

// The maker's side of a Work that it finishes itself: for a layer above the collectives that
// runs operations of its own (the CUDA communicator's staged calls, on its worker thread) and
// hands out Work handles for them. Copies share the one operation.
class WorkPromise {
 public:
  // `algorithm`: what Work::algorithm() reports (a static name); `description`: what
  // Work::describe() reports ("cuda allreduce #3").
  WorkPromise(const char* algorithm, std::string description);

  // A handle of the operation (any number; each sees it finish).
  Work work() const;
  // Finishes it, with `error` (null: success); only the first call counts. Runs the handles'
  // on_finish callbacks in this thread, then wakes every waiter.
  void finish(std::exception_ptr error = nullptr) const;
  std::string describe() const;

 private:
  std::shared_ptr<detail::WorkState> state_;
};

}  // namespace gloo_lite
