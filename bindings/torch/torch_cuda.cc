// CUDA tensors in the torch backend (registered for "cpu" and "cuda"): the collectives through
// gloo_lite::cuda (cuda/collectives.h), stream-ordered on torch's current stream of the
// tensors' device, so that the call starts after the work torch queued before it and the work
// torch queues after it sees the result, with no host wait in between (as with NCCL). The
// staging copies of non-contiguous tensors are torch ops on that same stream, so they order
// themselves. The TorchWork finishes when the stream has been let go; its future records its
// events on the outputs' device, so DDP's comm hooks and wait() order their streams after it.
//
// The stream is torch's current one (torch_cuda_support.h). Without CUDA in gloo_lite's build, or
// without a usable GPU, a CUDA tensor's call fails with gloo_lite's reason (cuda::Unavailable).
#include <string>

#include "bindings/torch/torch_backend.h"
#include "bindings/torch/torch_cuda_support.h"
#include "bindings/torch/torch_errors.h"
#include "bindings/torch/torch_tensors.h"

namespace gloo_lite::torch_backend {

using ::c10d::OpType;

void check_cuda_like(const char* collective, const at::Tensor& output, const at::Tensor& input,
                     int64_t numel, const char* what) {
  check_cuda_dense(collective, output);
  if (output.scalar_type() != input.scalar_type() || output.numel() != numel ||
      output.device() != input.device()) {
    throw InvalidArgument(std::string(collective) + ": the output must be " +
                          dtype_name(input.scalar_type()) + " on " + input.device().str() +
                          " with " + std::to_string(numel) + " elements (" + what + "), got " +
                          dtype_name(output.scalar_type()) + " on " + output.device().str() +
                          " with " + std::to_string(output.numel()));
  }
}

void check_same_cuda(const char* collective, const at::Tensor& like,
                     const std::vector<at::Tensor>& tensors) {
  for (const at::Tensor& tensor : tensors) {
    check_cuda_dense(collective, tensor);
    if (tensor.scalar_type() != like.scalar_type() || tensor.device() != like.device()) {
      throw InvalidArgument(
          std::string(collective) + ": the tensors of one call must share dtype " +
          "and device; got " + dtype_name(like.scalar_type()) + " on " + like.device().str() +
          " and " + dtype_name(tensor.scalar_type()) + " on " + tensor.device().str());
    }
  }
}

cuda::Communicator& TorchBackend::cuda_communicator(const c10::Device& device) {
  std::lock_guard<std::mutex> lock(cuda_mutex_);
  auto& slot = cuda_[device.index()];
  if (!slot) {
    // The setup (speeds agreed by a small allreduce) on the CUDA calls' own tag, so that it
    // cannot meet a CPU collective of this backend in flight on tag 0.
    cuda::PipelineOptions options;
    options.setup_tag = kCudaTag;
    slot = std::make_unique<cuda::Communicator>(context(), cuda::cuda_device_layer(device.index()),
                                                options);
  }
  return *slot;
}

// Each CUDA call: check, stage (torch ops on the current stream), enqueue the stream-ordered
// gloo_lite call, copy a staged output back (again on the stream), hand the Work to TorchWork.
c10::intrusive_ptr<::c10d::Work> TorchBackend::cuda_allreduce(
    const at::Tensor& tensor, const ::c10d::AllreduceOptions& opts) {
  return torch_errors([&] {
    Reduction reduction = reduction_of("allreduce", tensor, opts.reduceOp);
    Staged staged(tensor);
    premultiply(reduction, staged.flat);
    auto copts = options(opts.timeout);
    copts.tag = kCudaTag;
    Call call{OpType::ALLREDUCE, "gloo_lite:all_reduce", {tensor}, {staged.flat}, nullptr};
    call.devices = {tensor.device()};
    return launch(std::move(call), [&] {
      void* data = staged.flat.data_ptr();
      gloo_lite::Work work =
          cuda_communicator(tensor.device())
              .allreduce(data, data, staged.flat.numel() * reduction.per_element, reduction.type,
                         reduction.op, current_stream(tensor.device()), copts);
      if (staged.copied) staged.finish_output();
      return std::vector<gloo_lite::Work>{std::move(work)};
    });
  });
}

// The tensors flattened into one (a torch copy on the stream), allreduced in place, and copied
// back on the stream.
c10::intrusive_ptr<::c10d::Work> TorchBackend::cuda_allreduce_coalesced(
    const Tensors& tensors, const ::c10d::AllreduceCoalescedOptions& opts) {
  return torch_errors([&] {
    const char* collective = "allreduce_coalesced";
    check_same_cuda(collective, tensors[0], tensors);
    Reduction reduction = reduction_of(collective, tensors[0], opts.reduceOp);
    at::Tensor flat = flatten(tensors);
    premultiply(reduction, flat);
    auto copts = options(opts.timeout);
    copts.tag = kCudaTag;
    Call call{
        OpType::ALLREDUCE_COALESCED, "gloo_lite:all_reduce_coalesced", tensors, {flat}, nullptr};
    call.devices = {tensors[0].device()};
    return launch(std::move(call), [&] {
      void* data = flat.data_ptr();
      gloo_lite::Work work =
          cuda_communicator(tensors[0].device())
              .allreduce(data, data, flat.numel() * reduction.per_element, reduction.type,
                         reduction.op, current_stream(tensors[0].device()), copts);
      unflatten(flat, tensors);
      return std::vector<gloo_lite::Work>{std::move(work)};
    });
  });
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::cuda_broadcast(
    const at::Tensor& tensor, const ::c10d::BroadcastOptions& opts) {
  return torch_errors([&] {
    if (opts.rootRank < 0 || opts.rootRank >= size_) {
      throw InvalidArgument("broadcast: root rank " + std::to_string(opts.rootRank) +
                            " is outside the group of " + std::to_string(size_) + " ranks");
    }
    Staged staged(tensor);
    auto copts = options(opts.timeout);
    copts.tag = kCudaTag;
    Call call{OpType::BROADCAST, "gloo_lite:broadcast", {tensor}, {staged.flat}, nullptr};
    call.devices = {tensor.device()};
    return launch(std::move(call), [&] {
      Elements elements = moved_elements(staged.flat);
      gloo_lite::Work work =
          cuda_communicator(tensor.device())
              .broadcast(staged.flat.data_ptr(), elements.count, elements.type,
                         static_cast<int>(opts.rootRank), current_stream(tensor.device()), copts);
      if (staged.copied) staged.finish_output();
      return std::vector<gloo_lite::Work>{std::move(work)};
    });
  });
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::cuda_reduce(const at::Tensor& tensor,
                                                           const ::c10d::ReduceOptions& opts) {
  return torch_errors([&] {
    if (opts.rootRank < 0 || opts.rootRank >= size_) {
      throw InvalidArgument("reduce: root rank " + std::to_string(opts.rootRank) +
                            " is outside the group of " + std::to_string(size_) + " ranks");
    }
    const int root = static_cast<int>(opts.rootRank);
    Reduction reduction = reduction_of("reduce", tensor, opts.reduceOp);
    Staged staged(tensor);
    at::Tensor input = staged.flat;
    if (reduction.premultiply && rank_ != root) input = input.clone();
    premultiply(reduction, input);
    auto copts = options(opts.timeout);
    copts.tag = kCudaTag;
    Call call{OpType::REDUCE, "gloo_lite:reduce", {tensor}, {staged.flat, input}, nullptr};
    call.devices = {tensor.device()};
    return launch(std::move(call), [&] {
      void* output = rank_ == root ? staged.flat.data_ptr() : nullptr;
      gloo_lite::Work work =
          cuda_communicator(tensor.device())
              .reduce(input.data_ptr(), output, input.numel() * reduction.per_element,
                      reduction.type, reduction.op, root, current_stream(tensor.device()), copts);
      if (staged.copied && rank_ == root) staged.finish_output();
      return std::vector<gloo_lite::Work>{std::move(work)};
    });
  });
}

// `output` (size times the input's elements) for all_gather_into_tensor, or `output_list`
// (one tensor per rank) for all_gather, filled from a flat output on the stream.
c10::intrusive_ptr<::c10d::Work> TorchBackend::cuda_allgather(
    const at::Tensor& output, const at::Tensor& input, const Tensors& output_list,
    const ::c10d::AllgatherOptions& opts) {
  return torch_errors([&] {
    const char* collective = output.defined() ? "all_gather_into_tensor" : "allgather";
    check_cuda_dense(collective, input);
    const int64_t total = input.numel() * size_;
    if (output.defined()) {
      check_cuda_like(collective, output, input, total, "the input's times the group size");
    } else {
      if (output_list.size() != static_cast<size_t>(size_)) {
        throw InvalidArgument(
            std::string(collective) + ": the output list must hold one tensor per rank (" +
            std::to_string(size_) + "), got " + std::to_string(output_list.size()));
      }
      for (const at::Tensor& t : output_list) {
        check_cuda_like(collective, t, input, input.numel(), "the input's");
      }
    }
    Staged in(input);
    Staged out(output.defined() ? output : flat_like(in.flat, total));
    auto copts = options(opts.timeout);
    copts.tag = kCudaTag;
    Call call{output.defined() ? OpType::_ALLGATHER_BASE : OpType::ALLGATHER,
              output.defined() ? "gloo_lite:all_gather_into_tensor" : "gloo_lite:all_gather",
              output.defined() ? Tensors{output} : output_list,
              {in.flat, out.flat},
              nullptr};
    call.devices = {input.device()};
    return launch(std::move(call), [&] {
      Elements elements = moved_elements(in.flat);
      gloo_lite::Work work = cuda_communicator(input.device())
                                 .allgather(in.flat.data_ptr(), out.flat.data_ptr(), elements.count,
                                            elements.type, current_stream(input.device()), copts);
      if (output.defined()) {
        if (out.copied) out.finish_output();
      } else {
        unflatten(out.flat, output_list);
      }
      return std::vector<gloo_lite::Work>{std::move(work)};
    });
  });
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::cuda_reduce_scatter(
    const at::Tensor& output, const at::Tensor& input, const ::c10d::ReduceScatterOptions& opts) {
  return torch_errors([&] {
    const char* collective = "reduce_scatter_tensor";
    check_cuda_dense(collective, input);
    if (input.numel() % size_ != 0) {
      throw InvalidArgument(std::string(collective) + ": the input's " +
                            std::to_string(input.numel()) + " elements are not a multiple of the " +
                            std::to_string(size_) + " ranks");
    }
    check_cuda_like(collective, output, input, input.numel() / size_,
                    "the input's divided by the group size");
    Reduction reduction = reduction_of(collective, input, opts.reduceOp);
    Staged in(input), out(output);
    at::Tensor source = reduction.premultiply ? in.flat.clone() : in.flat;
    premultiply(reduction, source);
    auto copts = options(opts.timeout);
    copts.tag = kCudaTag;
    Call call{OpType::_REDUCE_SCATTER_BASE,
              "gloo_lite:reduce_scatter_tensor",
              {output},
              {source, out.flat},
              nullptr};
    call.devices = {input.device()};
    return launch(std::move(call), [&] {
      gloo_lite::Work work =
          cuda_communicator(input.device())
              .reduce_scatter(source.data_ptr(), out.flat.data_ptr(),
                              out.flat.numel() * reduction.per_element, reduction.type,
                              reduction.op, current_stream(input.device()), copts);
      if (out.copied) out.finish_output();
      return std::vector<gloo_lite::Work>{std::move(work)};
    });
  });
}

}  // namespace gloo_lite::torch_backend
