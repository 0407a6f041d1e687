#include "bindings/torch/torch_work.h"

#include <ATen/core/grad_mode.h>
#include <ATen/core/jit_type.h>

#include "bindings/torch/completion_pool.h"
#include "bindings/torch/torch_errors.h"
#include "gloo_lite/base/deadline.h"
#include "gloo_lite/base/log.h"

namespace gloo_lite::torch_backend {

TorchWork::TorchWork(int rank, ::c10d::OpType type, const char* title,
                     std::vector<at::Tensor> outputs, std::vector<at::Tensor> keep,
                     std::function<void()> finish_step, bool point_to_point,
                     std::vector<c10::Device> devices)
    : ::c10d::Work(rank, type, title),
      outputs_(std::move(outputs)),
      keep_(std::move(keep)),
      finish_step_(std::move(finish_step)),
      point_to_point_(point_to_point),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::ofTensors(),
                                                       std::move(devices))) {}

TorchWork::~TorchWork() = default;

void TorchWork::watch(std::vector<gloo_lite::Work> calls) {
  calls_ = std::move(calls);
  if (calls_.empty()) {
    complete(nullptr);
    return;
  }
  pending_ = calls_.size();
  // The callbacks hold the work alive until the last call is done, even if torch drops it.
  for (const gloo_lite::Work& call : calls_) {
    call.on_finish([self = c10::intrusive_ptr<TorchWork>::reclaim_copy(this)](
                       std::exception_ptr error) { self->one_finished(std::move(error)); });
  }
}

void TorchWork::one_finished(std::exception_ptr error) {
  if (error) {
    std::lock_guard<std::mutex> lock(first_error_mutex_);
    if (!first_error_) first_error_ = error;
  }
  if (--pending_ != 0) return;
  std::exception_ptr outcome;
  {
    std::lock_guard<std::mutex> lock(first_error_mutex_);
    outcome = first_error_;
  }
  complete(outcome);
}

void TorchWork::complete(std::exception_ptr error) {
  if (!error && finish_step_) {
    try {
      // Copies into the caller's tensors: never recorded by autograd, whichever thread (and
      // its grad mode) this runs on.
      at::NoGradGuard no_grad;
      finish_step_();
    } catch (...) {
      error = std::current_exception();
    }
  }
  finish_step_ = nullptr;
  keep_.clear();
  error = to_torch(error);
  {
    std::lock_guard<std::mutex> lock(future_mutex_);
    if (!future_requested_) {
      // Nobody holds the future, so it has no callbacks: completing it cannot block. (A
      // getFuture() meanwhile waits for this lock and gets a completed future.)
      complete_future(error);
      finish(error);
      return;
    }
  }
  // Callbacks from user code may block (completion_pool.h): not on this thread, which may be
  // the stream's worker.
  complete_in_pool([self = c10::intrusive_ptr<TorchWork>::reclaim_copy(this), error] {
    self->complete_future(error);
    self->finish(error);
  });
}

void TorchWork::complete_future(const std::exception_ptr& error) {
  // The future first, then the work: whoever returns from wait() finds the future complete.
  try {
    if (error) {
      future_->setError(error);
    } else {
      future_->markCompleted(c10::IValue(outputs_));
    }
  } catch (const std::exception& e) {
    LOG_WARN("torch", "completing a torch future failed (ignored): " << e.what());
  }
}

bool TorchWork::isCompleted() {
  // Point-to-point transfers finish when looked at.
  if (point_to_point_) {
    for (const gloo_lite::Work& call : calls_) call.test();
  }
  return ::c10d::Work::isCompleted();
}

bool TorchWork::wait(std::chrono::milliseconds timeout) {
  // A negative timeout (torch's "unset") waits without one.
  if (timeout < std::chrono::milliseconds(0)) timeout = kNoTimeout;
  // Waiting on gloo_lite's works first: a transfer finishes when looked at, and a collective
  // that is next on an idle stream then runs in this thread (Stream::run_here_if_next), so
  // that async_op=False calls pay no hand-off to the worker and back. Their errors arrive
  // through the callbacks, converted, and the base class's wait rethrows them.
  // Saturating: a timeout past the clock's range (a timedelta of centuries) waits without one.
  const gloo_lite::Deadline until = gloo_lite::Deadline::after(timeout);
  const bool forever = timeout == kNoTimeout || until.is_never();
  for (const gloo_lite::Work& call : calls_) {
    try {
      if (forever) {
        call.wait();
      } else if (point_to_point_) {
        call.wait(until.remaining());
      }
    } catch (...) {
    }
  }
  if (forever) return ::c10d::Work::wait(kNoTimeout);
  return ::c10d::Work::wait(std::max(until.remaining(), std::chrono::milliseconds(1)));
}

int TorchWork::sourceRank() const { return calls_.empty() ? -1 : calls_.front().source(); }

std::vector<at::Tensor> TorchWork::result() { return outputs_; }

c10::intrusive_ptr<c10::ivalue::Future> TorchWork::getFuture() {
  if (point_to_point_) {
    return ::c10d::Work::getFuture();  // torch's message: not supported
  }
  std::lock_guard<std::mutex> lock(future_mutex_);
  future_requested_ = true;
  return future_;
}

void TorchWork::abort() {
  // gloo_lite calls are cancelled by failing their context (Backend::abort); a single call
  // cannot be taken back once peers may have matched it.
}

}  // namespace gloo_lite::torch_backend
