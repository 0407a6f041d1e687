// Internal: the shared state behind a Work handle. A WorkState finishes once, with or without
// an error; waiters sleep on its condition variable. Point-to-point work (PointToPointWork in
// context.cc) overrides how completion is observed: its bytes are moved by the transport, so
// waiting means waiting on the transport request instead of on a thread that runs the work.
#pragma once

#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>

#include "gloo_lite/base/deadline.h"

namespace gloo_lite::detail {

class WorkState {
 public:
  explicit WorkState(std::string description) : description_(std::move(description)) {}
  virtual ~WorkState() = default;
  WorkState(const WorkState&) = delete;
  WorkState& operator=(const WorkState&) = delete;

  // Finishes the work (the first call counts) and wakes every waiter.
  void finish(std::exception_ptr error = nullptr);
  void set_algorithm(const std::string& algorithm);
  void set_source(int source);
  void set_description(std::string description);

  // Whether it has finished; may make progress (point-to-point), never blocks or throws.
  virtual bool test();
  // Waits until finished or `until` passes; returns whether it finished.
  virtual bool wait_until(const Deadline& until);

  std::exception_ptr error() const;
  std::string algorithm() const;
  std::string describe() const;
  int source() const;

 protected:
  bool finished_locked() const { return finished_; }
  mutable std::mutex mutex_;
  std::condition_variable finished_cv_;

 private:
  std::string description_;
  bool finished_ = false;
  std::exception_ptr error_;
  std::string algorithm_;
  int source_ = -1;
};

}  // namespace gloo_lite::detail
