// The c10d::Work of one torch call: one or more gloo_lite calls (non-blocking, on the
// context's streams) and a last step that puts the results where torch wants them (copying a
// staged or flattened output back). When the last gloo_lite call has finished, the thread that
// finished it (the stream's worker, or a waiter that ran it) runs that step before the stream
// starts its next call, then completes the future and the work (wait, is_completed) -- no
// thread of the backend's own, no polling. A future someone asked for (getFuture: DDP's comm
// hooks chain callbacks on it, which may block) is completed from completion_pool.h instead.
//
// A wait() without a timeout waits on the gloo_lite calls themselves: a collective that is
// next on an idle stream then runs in the waiting thread (async_op=False costs no hand-off).
// Point-to-point calls have no worker: the transport moves the bytes, and the work finishes
// when it is looked at (is_completed or wait), like gloo_lite::Work of a transfer; their
// future is not offered (torch's gloo offers none either).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <vector>

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "gloo_lite/work.h"

namespace gloo_lite::torch_backend {

class TorchWork : public ::c10d::Work {
 public:
  // `outputs`: what the future holds when done; `keep`: tensors (staged copies, flattened
  // buffers, inputs) the gloo_lite calls use until they finish; `finish_step`: runs on success
  // before anything is reported done.
  // `devices`: the CUDA devices of the outputs (empty for CPU tensors), so that the future
  // records events there on completion and its waiters' streams wait for them.
  TorchWork(int rank, ::c10d::OpType type, const char* title, std::vector<at::Tensor> outputs,
            std::vector<at::Tensor> keep, std::function<void()> finish_step, bool point_to_point,
            std::vector<c10::Device> devices = {});
  ~TorchWork() override;

  // Hands over the started gloo_lite calls; the work is done when all of them are.
  void watch(std::vector<gloo_lite::Work> calls);
  size_t started() const { return calls_.size(); }

  bool isCompleted() override;
  bool wait(std::chrono::milliseconds timeout) override;
  int sourceRank() const override;
  std::vector<at::Tensor> result() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  void abort() override;

 private:
  void one_finished(std::exception_ptr error);
  void complete(std::exception_ptr error);
  void complete_future(const std::exception_ptr& error);

  std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> keep_;
  std::function<void()> finish_step_;
  const bool point_to_point_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::mutex future_mutex_;
  bool future_requested_ = false;  // under future_mutex_: getFuture() was called
  std::vector<gloo_lite::Work> calls_;
  std::atomic<size_t> pending_{0};
  std::mutex first_error_mutex_;
  std::exception_ptr first_error_;
};

}  // namespace gloo_lite::torch_backend
