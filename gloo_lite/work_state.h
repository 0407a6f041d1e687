// Internal: the shared state behind a Work handle. A WorkState finishes once, with or without
// an error; waiters sleep on its condition variable. What a work is (describe()) and how its
// completion is observed differ: a queued collective (CollectiveWork, stream.h) is finished by
// the thread that runs it; point-to-point work (point_to_point.h) is moved by the transport, so
// testing and waiting look at the transport request instead.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "gloo_lite/base/deadline.h"

namespace gloo_lite::detail {

class WorkState {
 public:
  // `algorithm`: a static name ("ring", "p2p").
  explicit WorkState(const char* algorithm) : algorithm_(algorithm) {}
  virtual ~WorkState() = default;
  WorkState(const WorkState&) = delete;
  WorkState& operator=(const WorkState&) = delete;

  // Finishes the work (the first call counts): runs the callbacks, then marks it finished and
  // wakes every waiter.
  void finish(std::exception_ptr error = nullptr);
  // Work::on_finish.
  void on_finish(std::function<void(std::exception_ptr)> callback);
  void set_source(int source);

  // Whether it has finished; may make progress (point-to-point), never blocks or throws.
  virtual bool test();
  // Waits until finished or `until` passes; returns whether it finished.
  virtual bool wait_until(const Deadline& until);
  // "allreduce #12 on tag 0", "send to rank 2 (tag 5)": formatted on demand, so that starting
  // a call builds no strings.
  virtual std::string describe() const = 0;

  std::exception_ptr error() const;
  const char* algorithm() const { return algorithm_; }
  int source() const;

 protected:
  mutable std::mutex mutex_;
  std::condition_variable finished_cv_;
  bool finished_ = false;   // under mutex_
  bool finishing_ = false;  // under mutex_: finish() is running the callbacks

 private:
  std::exception_ptr error_;
  std::vector<std::function<void(std::exception_ptr)>> callbacks_;  // under mutex_
  const char* const algorithm_;
  int source_ = -1;
};

}  // namespace gloo_lite::detail
