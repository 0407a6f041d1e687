// Work handles and the completion state behind them (work_state.h).
#include "gloo_lite/work.h"

#include <exception>
#include <utility>

#include "gloo_lite/base/log.h"
#include "gloo_lite/work_state.h"

namespace gloo_lite {
namespace detail {
namespace {

void run_callback(const std::function<void(std::exception_ptr)>& callback,
                  const std::exception_ptr& error) {
  try {
    callback(error);
  } catch (const std::exception& e) {
    LOG_WARN("work", "a Work::on_finish callback threw (dropped): " << e.what());
  } catch (...) {
    LOG_WARN("work", "a Work::on_finish callback threw a non-std exception (dropped)");
  }
}

// A WorkPromise's work: finished by its maker, described by a text given up front.
class PromisedWork final : public WorkState {
 public:
  PromisedWork(const char* algorithm, std::string description)
      : WorkState(algorithm), description_(std::move(description)) {}
  std::string describe() const override { return description_; }

 private:
  const std::string description_;
};

}  // namespace

void WorkState::finish(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_ || finishing_) return;
    finishing_ = true;
    error_ = error;
  }
  // Outside the lock (a callback may look at this work or start new work), and before the
  // work reports finished: whoever returns from wait() finds every callback done, also one
  // registered while the others ran.
  for (;;) {
    std::vector<std::function<void(std::exception_ptr)>> callbacks;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      callbacks.swap(callbacks_);
      if (callbacks.empty()) {
        finished_ = true;
        break;
      }
    }
    for (const auto& callback : callbacks) run_callback(callback, error);
  }
  finished_cv_.notify_all();
}

void WorkState::on_finish(std::function<void(std::exception_ptr)> callback) {
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!finished_) {
      callbacks_.push_back(std::move(callback));  // finish() runs it, also while finishing
      return;
    }
    error = error_;
  }
  run_callback(callback, error);
}

void WorkState::set_source(int source) {
  std::lock_guard<std::mutex> lock(mutex_);
  source_ = source;
}

bool WorkState::test() {
  std::lock_guard<std::mutex> lock(mutex_);
  return finished_;
}

bool WorkState::wait_until(const Deadline& until) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (until.is_never()) {
    finished_cv_.wait(lock, [&] { return finished_; });
    return true;
  }
  return finished_cv_.wait_until(lock, until.time_point(), [&] { return finished_; });
}

std::exception_ptr WorkState::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

int WorkState::source() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return source_;
}

}  // namespace detail

bool Work::test() const { return !state_ || state_->test(); }

void Work::wait() const {
  if (!state_) return;
  state_->wait_until(Deadline::never());
  if (auto error = state_->error()) std::rethrow_exception(error);
}

bool Work::wait(std::chrono::milliseconds timeout) const {
  if (!state_) return true;
  if (!state_->wait_until(Deadline::after(timeout))) return false;
  if (auto error = state_->error()) std::rethrow_exception(error);
  return true;
}

std::exception_ptr Work::error() const { return state_ ? state_->error() : nullptr; }

std::string Work::algorithm() const { return state_ ? state_->algorithm() : std::string(); }

std::string Work::describe() const { return state_ ? state_->describe() : "empty work"; }

int Work::source() const { return state_ ? state_->source() : -1; }

void Work::on_finish(std::function<void(std::exception_ptr)> callback) const {
  if (!state_) {
    callback(nullptr);
    return;
  }
  state_->on_finish(std::move(callback));
}

WorkPromise::WorkPromise(const char* algorithm, std::string description)
    : state_(std::make_shared<detail::PromisedWork>(algorithm, std::move(description))) {}

Work WorkPromise::work() const { return Work(state_); }

void WorkPromise::finish(std::exception_ptr error) const { state_->finish(error); }

std::string WorkPromise::describe() const { return state_->describe(); }

}  // namespace gloo_lite
