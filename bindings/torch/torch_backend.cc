#include "bindings/torch/torch_backend.h"

#include <cstring>
#include <numeric>
#include <utility>

#include "bindings/torch/torch_errors.h"
#include "bindings/torch/torch_store.h"
#include "bindings/torch/torch_tensors.h"
#include "bindings/torch/torch_work.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/bootstrap.h"

namespace gloo_lite::torch_backend {
namespace {

using ::c10d::OpType;

// Appends `step` to the call's finish step.
void then(std::function<void()>& finish_step, std::function<void()> step) {
  if (!finish_step) {
    finish_step = std::move(step);
    return;
  }
  finish_step = [first = std::move(finish_step), second = std::move(step)] {
    first();
    second();
  };
}

// Copies a staged output back when it is a copy.
void finish_staged(std::function<void()>& finish_step, const Staged& staged) {
  if (staged.copied) then(finish_step, [staged] { staged.finish_output(); });
}

void check_same_type(const char* collective, const at::Tensor& like,
                     const std::vector<at::Tensor>& tensors) {
  for (const at::Tensor& tensor : tensors) {
    check_cpu_dense(collective, tensor);
    if (tensor.scalar_type() != like.scalar_type()) {
      throw InvalidArgument(std::string(collective) + ": tensors of one call must share a dtype; " +
                            "got " + dtype_name(like.scalar_type()) + " and " +
                            dtype_name(tensor.scalar_type()));
    }
  }
}

}  // namespace

TorchBackend::TorchBackend(const c10::intrusive_ptr<::c10d::Store>& store,
                           const std::string& store_name, int rank, int size,
                           std::chrono::milliseconds timeout, bool check)
    : ::c10d::Backend(rank, size), timeout_(timeout), check_(check) {
  try {
    auto adapter = std::make_shared<TorchStore>(store, store_name);
    ContextOptions options;
    options.timeout = timeout;
    context_ = Context::create(adapter, rank, size, create_device_from_env(), options);
  } catch (...) {
    rethrow_as_torch();
  }
}

TorchBackend::~TorchBackend() { cuda_.clear(); }

c10::intrusive_ptr<::c10d::Backend::Options> TorchBackend::getBackendOptions() {
  return c10::make_intrusive<Options>("gloo_lite", timeout_.load());
}

std::string TorchBackend::describe() const {
  return context_ ? context_->describe() : "a shut-down gloo_lite backend";
}

void TorchBackend::abort() {
  if (context_) context_->abort("torch aborted the process group (ProcessGroup.abort)");
}

void TorchBackend::shutdown() {
  {
    std::lock_guard<std::mutex> lock(cuda_mutex_);
    cuda_.clear();  // waits for their calls; they use the context
  }
  context_.reset();
}

Context& TorchBackend::context() {
  if (!context_) {
    throw InvalidArgument(
        "this gloo_lite process group was shut down (destroy_process_group); "
        "create a new one to go on");
  }
  return *context_;
}

CollectiveOptions TorchBackend::options(std::chrono::milliseconds timeout) const {
  CollectiveOptions options;
  options.timeout = timeout == ::c10d::kUnsetTimeout ? timeout_.load() : timeout;
  options.check = check_;
  return options;
}

c10::intrusive_ptr<TorchWork> TorchBackend::make_work(Call& call) const {
  return c10::make_intrusive<TorchWork>(rank_, call.type, call.title, std::move(call.outputs),
                                        std::move(call.keep), std::move(call.finish_step),
                                        call.point_to_point, std::move(call.devices));
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::launch(
    Call call, const std::function<std::vector<gloo_lite::Work>()>& start) {
  auto work = make_work(call);
  std::vector<gloo_lite::Work> calls;
  try {
    calls = start();  // one call: it started, or nothing did
  } catch (...) {
    rethrow_as_torch();
  }
  if (!call.point_to_point) ++sequence_;
  work->watch(std::move(calls));
  return work;
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::launch_all(Call call, Starts starts) {
  const std::string title = call.title;
  auto work = make_work(call);
  std::vector<gloo_lite::Work> calls;
  calls.reserve(starts.size());
  try {
    for (const auto& start : starts) calls.push_back(start());
  } catch (...) {
    if (!calls.empty()) {
      // Some calls run already: the work keeps their buffers until they end, and since the
      // ranks may now disagree on how many calls this group's stream has, the group fails
      // (on every rank, with this reason) instead of going on out of step.
      work->watch(std::move(calls));
      context().abort(title + " failed on rank " + std::to_string(rank_) + " after " +
                      std::to_string(work->started()) + " of its " + std::to_string(starts.size()) +
                      " calls had started");
    }
    rethrow_as_torch();
  }
  ++sequence_;
  work->watch(std::move(calls));
  return work;
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::broadcast(Tensors& tensors,
                                                         const ::c10d::BroadcastOptions& opts) {
  return torch_errors([&] {
    if (on_cuda(tensors)) return cuda_broadcast(single_cuda_tensor("broadcast", tensors), opts);
    const at::Tensor& tensor = single_tensor("broadcast", tensors);
    check_root("broadcast", opts.rootRank, size_);
    Staged staged(tensor);
    Call call{OpType::BROADCAST, "gloo_lite:broadcast", {tensor}, {staged.flat}, nullptr};
    finish_staged(call.finish_step, staged);
    auto copts = options(opts.timeout);
    const int root = static_cast<int>(opts.rootRank);
    return launch(std::move(call), [&] {
      Elements elements = moved_elements(staged.flat);
      return std::vector<gloo_lite::Work>{ibroadcast(context(), staged.flat.data_ptr(),
                                                     elements.count, elements.type, root, copts)};
    });
  });
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::allreduce(Tensors& tensors,
                                                         const ::c10d::AllreduceOptions& opts) {
  return torch_errors([&] {
    if (on_cuda(tensors)) return cuda_allreduce(single_cuda_tensor("allreduce", tensors), opts);
    const at::Tensor& tensor = single_tensor("allreduce", tensors);
    Reduction reduction = reduction_of("allreduce", tensor, opts.reduceOp);
    Staged staged(tensor);
    premultiply(reduction, staged.flat);
    Call call{OpType::ALLREDUCE, "gloo_lite:all_reduce", {tensor}, {staged.flat}, nullptr};
    finish_staged(call.finish_step, staged);
    auto copts = options(opts.timeout);
    return launch(std::move(call), [&] {
      void* data = staged.flat.data_ptr();
      return std::vector<gloo_lite::Work>{iallreduce(context(), data, data,
                                                     staged.flat.numel() * reduction.per_element,
                                                     reduction.type, reduction.op, copts)};
    });
  });
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::allreduce_coalesced(
    Tensors& tensors, const ::c10d::AllreduceCoalescedOptions& opts) {
  return torch_errors([&] {
    if (tensors.empty()) throw InvalidArgument("allreduce_coalesced: got no tensors");
    if (on_cuda(tensors)) return cuda_allreduce_coalesced(tensors, opts);
    check_same_type("allreduce_coalesced", tensors[0], tensors);
    Reduction reduction = reduction_of("allreduce_coalesced", tensors[0], opts.reduceOp);
    at::Tensor flat = flatten(tensors);
    premultiply(reduction, flat);
    Call call{OpType::ALLREDUCE_COALESCED,
              "gloo_lite:all_reduce_coalesced",
              tensors,
              {flat},
              [flat, tensors] { unflatten(flat, tensors); }};
    auto copts = options(opts.timeout);
    return launch(std::move(call), [&] {
      void* data = flat.data_ptr();
      return std::vector<gloo_lite::Work>{iallreduce(context(), data, data,
                                                     flat.numel() * reduction.per_element,
                                                     reduction.type, reduction.op, copts)};
    });
  });
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::reduce(Tensors& tensors,
                                                      const ::c10d::ReduceOptions& opts) {
  return torch_errors([&] {
    if (on_cuda(tensors)) return cuda_reduce(single_cuda_tensor("reduce", tensors), opts);
    const at::Tensor& tensor = single_tensor("reduce", tensors);
    check_root("reduce", opts.rootRank, size_);
    Reduction reduction = reduction_of("reduce", tensor, opts.reduceOp);
    Staged staged(tensor);
    const int root = static_cast<int>(opts.rootRank);
    // Only the root's tensor changes: the premultiplied input of another rank is a copy.
    at::Tensor input = staged.flat;
    if (reduction.premultiply && rank_ != root) input = input.clone();
    premultiply(reduction, input);
    Call call{OpType::REDUCE, "gloo_lite:reduce", {tensor}, {staged.flat, input}, nullptr};
    if (rank_ == root) finish_staged(call.finish_step, staged);
    auto copts = options(opts.timeout);
    return launch(std::move(call), [&] {
      void* output = rank_ == root ? staged.flat.data_ptr() : nullptr;
      return std::vector<gloo_lite::Work>{ireduce(context(), input.data_ptr(), output,
                                                  input.numel() * reduction.per_element,
                                                  reduction.type, reduction.op, root, copts)};
    });
  });
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::allgather(TensorLists& outputs, Tensors& inputs,
                                                         const ::c10d::AllgatherOptions& opts) {
  return torch_errors([&] {
    if (on_cuda(inputs) && outputs.size() == 1) {
      return cuda_allgather(at::Tensor(), single_cuda_tensor("allgather", inputs), outputs[0],
                            opts);
    }
    const at::Tensor& input = single_tensor("allgather", inputs);
    if (outputs.size() != 1) {
      throw InvalidArgument("allgather: gloo_lite takes one output list per process, got " +
                            std::to_string(outputs.size()));
    }
    std::vector<at::Tensor>& list = outputs[0];
    check_list_size("allgather", list.size(), size_, "the output list");
    check_same_shape("allgather", input, list, "output tensor");
    Staged in(input);
    at::Tensor flat = flat_like(in.flat, in.flat.numel() * size_);
    Call call{OpType::ALLGATHER, "gloo_lite:all_gather", list, {in.flat, flat}, [flat, list] {
                unflatten(flat, list);
              }};
    auto copts = options(opts.timeout);
    return launch(std::move(call), [&] {
      Elements elements = moved_elements(in.flat);
      return std::vector<gloo_lite::Work>{iallgather(context(), in.flat.data_ptr(), flat.data_ptr(),
                                                     elements.count, elements.type, copts)};
    });
  });
}

void TorchBackend::add_allgather(Call& call, Starts& starts, const at::Tensor& output,
                                 const at::Tensor& input, const CollectiveOptions& options,
                                 const char* collective) {
  check_cpu_dense(collective, input);
  check_cpu_dense(collective, output);
  if (output.scalar_type() != input.scalar_type() ||
      output.numel() != input.numel() * static_cast<int64_t>(size_)) {
    throw InvalidArgument(
        std::string(collective) + ": the output must be " + dtype_name(input.scalar_type()) +
        " with " + std::to_string(input.numel()) + " x " + std::to_string(size_) +
        " elements (the input's times the group size), got " + dtype_name(output.scalar_type()) +
        " with " + std::to_string(output.numel()));
  }
  Staged in(input), out(output);
  call.outputs.push_back(output);
  call.keep.push_back(in.flat);
  call.keep.push_back(out.flat);
  finish_staged(call.finish_step, out);
  starts.push_back([this, in, out, options] {
    Elements elements = moved_elements(in.flat);
    return iallgather(context(), in.flat.data_ptr(), out.flat.data_ptr(), elements.count,
                      elements.type, options);
  });
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::launch_pairs(::c10d::OpType type, const char* title,
                                                            const Tensors& outputs,
                                                            const Tensors& inputs,
                                                            const AddPair& add) {
  if (outputs.size() != inputs.size()) {
    throw InvalidArgument(std::string(title + std::strlen("gloo_lite:")) + ": " +
                          std::to_string(inputs.size()) + " inputs but " +
                          std::to_string(outputs.size()) + " outputs");
  }
  Call call{type, title, {}, {}, nullptr};
  Starts starts;
  for (size_t i = 0; i < inputs.size(); ++i) add(call, starts, outputs[i], inputs[i]);
  return launch_all(std::move(call), std::move(starts));
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::_allgather_base(
    at::Tensor& output, at::Tensor& input, const ::c10d::AllgatherOptions& opts) {
  return torch_errors([&] {
    if (input.defined() && input.is_cuda()) return cuda_allgather(output, input, {}, opts);
    auto copts = options(opts.timeout);
    return launch_pairs(
        OpType::_ALLGATHER_BASE, "gloo_lite:all_gather_into_tensor", {output}, {input},
        [&](Call& call, Starts& starts, const at::Tensor& out, const at::Tensor& in) {
          add_allgather(call, starts, out, in, copts, "all_gather_into_tensor");
        });
  });
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::allgather_into_tensor_coalesced(
    Tensors& outputs, Tensors& inputs, const ::c10d::AllgatherOptions& opts) {
  return torch_errors([&] {
    auto copts = options(opts.timeout);
    return launch_pairs(
        OpType::ALLGATHER_INTO_TENSOR_COALESCED, "gloo_lite:allgather_into_tensor_coalesced",
        outputs, inputs,
        [&](Call& call, Starts& starts, const at::Tensor& out, const at::Tensor& in) {
          add_allgather(call, starts, out, in, copts, "allgather_into_tensor_coalesced");
        });
  });
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::allgather_coalesced(
    TensorLists& outputs, Tensors& inputs, const ::c10d::AllgatherOptions& opts) {
  return torch_errors([&] {
    if (inputs.empty()) throw InvalidArgument("allgather_coalesced: got no input tensors");
    check_same_type("allgather_coalesced", inputs[0], inputs);
    check_list_size("allgather_coalesced", outputs.size(), size_, "the output lists");
    for (const auto& list : outputs) {
      if (list.size() != inputs.size()) {
        throw InvalidArgument("allgather_coalesced: each rank's output list must match the " +
                              std::to_string(inputs.size()) + " inputs, got " +
                              std::to_string(list.size()));
      }
      for (size_t i = 0; i < list.size(); ++i) {
        check_same_shape("allgather_coalesced", inputs[i], {list[i]}, "output tensor");
      }
    }
    at::Tensor flat_in = flatten(inputs);
    const int64_t per_rank = flat_in.numel();
    at::Tensor flat_out = flat_like(flat_in, per_rank * size_);
    Call call{OpType::ALLGATHER_COALESCED,
              "gloo_lite:all_gather_coalesced",
              {},
              {flat_in, flat_out},
              [flat_out, outputs, per_rank] {
                for (size_t r = 0; r < outputs.size(); ++r) {
                  unflatten(flat_out.narrow(0, static_cast<int64_t>(r) * per_rank, per_rank),
                            outputs[r]);
                }
              }};
    for (const auto& list : outputs)
      call.outputs.insert(call.outputs.end(), list.begin(), list.end());
    auto copts = options(opts.timeout);
    return launch(std::move(call), [&] {
      Elements elements = moved_elements(flat_in);
      return std::vector<gloo_lite::Work>{iallgather(context(), flat_in.data_ptr(),
                                                     flat_out.data_ptr(), elements.count,
                                                     elements.type, copts)};
    });
  });
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::gather(TensorLists& outputs, Tensors& inputs,
                                                      const ::c10d::GatherOptions& opts) {
  return torch_errors([&] {
    if (on_cuda(inputs)) return cuda_gather(outputs, single_cuda_tensor("gather", inputs), opts);
    const at::Tensor& input = single_tensor("gather", inputs);
    check_root("gather", opts.rootRank, size_);
    const int root = static_cast<int>(opts.rootRank);
    Staged in(input);
    Call call{OpType::GATHER, "gloo_lite:gather", {}, {in.flat}, nullptr};
    at::Tensor flat;
    if (rank_ == root) {
      if (outputs.size() != 1) {
        throw InvalidArgument("gather: the root takes one output list, got " +
                              std::to_string(outputs.size()));
      }
      check_list_size("gather", outputs[0].size(), size_, "the root's output list");
      check_same_shape("gather", input, outputs[0], "output tensor");
      flat = flat_like(in.flat, in.flat.numel() * size_);
      call.outputs = outputs[0];
      call.keep.push_back(flat);
      call.finish_step = [flat, list = outputs[0]] { unflatten(flat, list); };
    } else if (!outputs.empty() && !outputs[0].empty()) {
      throw InvalidArgument("gather: only the root (rank " + std::to_string(root) +
                            ") takes output tensors; rank " + std::to_string(rank_) + " got " +
                            std::to_string(outputs[0].size()));
    }
    auto copts = options(opts.timeout);
    return launch(std::move(call), [&] {
      Elements elements = moved_elements(in.flat);
      return std::vector<gloo_lite::Work>{igather(context(), in.flat.data_ptr(),
                                                  flat.defined() ? flat.data_ptr() : nullptr,
                                                  elements.count, elements.type, root, copts)};
    });
  });
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::scatter(Tensors& outputs, TensorLists& inputs,
                                                       const ::c10d::ScatterOptions& opts) {
  return torch_errors([&] {
    if (on_cuda(outputs)) return cuda_scatter(single_cuda_tensor("scatter", outputs), inputs, opts);
    const at::Tensor& output = single_tensor("scatter", outputs);
    check_root("scatter", opts.rootRank, size_);
    const int root = static_cast<int>(opts.rootRank);
    Staged out(output);
    Call call{OpType::SCATTER, "gloo_lite:scatter", {output}, {out.flat}, nullptr};
    finish_staged(call.finish_step, out);
    at::Tensor flat;
    if (rank_ == root) {
      if (inputs.size() != 1) {
        throw InvalidArgument("scatter: the root takes one input list, got " +
                              std::to_string(inputs.size()));
      }
      check_list_size("scatter", inputs[0].size(), size_, "the root's input list");
      check_same_shape("scatter", output, inputs[0], "input tensor");
      flat = flatten(inputs[0]);
      call.keep.push_back(flat);
    } else if (!inputs.empty() && !inputs[0].empty()) {
      throw InvalidArgument("scatter: only the root (rank " + std::to_string(root) +
                            ") takes input tensors; rank " + std::to_string(rank_) + " got " +
                            std::to_string(inputs[0].size()));
    }
    auto copts = options(opts.timeout);
    return launch(std::move(call), [&] {
      Elements elements = moved_elements(out.flat);
      return std::vector<gloo_lite::Work>{
          iscatter(context(), flat.defined() ? flat.data_ptr() : nullptr, out.flat.data_ptr(),
                   elements.count, elements.type, root, copts)};
    });
  });
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::reduce_scatter(
    Tensors& outputs, TensorLists& inputs, const ::c10d::ReduceScatterOptions& opts) {
  return torch_errors([&] {
    const at::Tensor& output = single_tensor("reduce_scatter", outputs);
    if (inputs.size() != 1) {
      throw InvalidArgument("reduce_scatter: gloo_lite takes one input list per process, got " +
                            std::to_string(inputs.size()));
    }
    std::vector<at::Tensor>& list = inputs[0];
    check_list_size("reduce_scatter", list.size(), size_, "the input list");
    check_same_type("reduce_scatter", output, list);
    if (list[rank_].numel() != output.numel()) {
      throw InvalidArgument("reduce_scatter: the output has " + std::to_string(output.numel()) +
                            " elements but this rank's input block (" + std::to_string(rank_) +
                            ") has " + std::to_string(list[rank_].numel()));
    }
    Reduction reduction = reduction_of("reduce_scatter", output, opts.reduceOp);
    at::Tensor flat = flatten(list);
    premultiply(reduction, flat);
    Staged out(output);
    Call call{
        OpType::REDUCE_SCATTER, "gloo_lite:reduce_scatter", {output}, {flat, out.flat}, nullptr};
    finish_staged(call.finish_step, out);
    std::vector<size_t> counts;
    for (const at::Tensor& block : list) counts.push_back(block.numel() * reduction.per_element);
    auto copts = options(opts.timeout);
    return launch(std::move(call), [&] {
      return std::vector<gloo_lite::Work>{ireduce_scatterv(context(), flat.data_ptr(),
                                                           out.flat.data_ptr(), counts,
                                                           reduction.type, reduction.op, copts)};
    });
  });
}

void TorchBackend::add_reduce_scatter(Call& call, Starts& starts, const at::Tensor& output,
                                      const at::Tensor& input, const ::c10d::ReduceOp& op,
                                      const CollectiveOptions& options, const char* collective) {
  check_cpu_dense(collective, input);
  check_cpu_dense(collective, output);
  if (output.scalar_type() != input.scalar_type() ||
      input.numel() != output.numel() * static_cast<int64_t>(size_)) {
    throw InvalidArgument(
        std::string(collective) + ": the input must be " + dtype_name(output.scalar_type()) +
        " with " + std::to_string(output.numel()) + " x " + std::to_string(size_) +
        " elements (the output's times the group size), got " + dtype_name(input.scalar_type()) +
        " with " + std::to_string(input.numel()));
  }
  Reduction reduction = reduction_of(collective, output, op);
  Staged in(input), out(output);
  at::Tensor source = in.flat;
  if (reduction.premultiply) {
    source = source.clone();  // the caller's input stays as it was
    premultiply(reduction, source);
  }
  call.outputs.push_back(output);
  call.keep.push_back(source);
  call.keep.push_back(out.flat);
  finish_staged(call.finish_step, out);
  starts.push_back([this, source, out, reduction, options] {
    return ireduce_scatter(context(), source.data_ptr(), out.flat.data_ptr(),
                           out.flat.numel() * reduction.per_element, reduction.type, reduction.op,
                           options);
  });
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const ::c10d::ReduceScatterOptions& opts) {
  return torch_errors([&] {
    if (input.defined() && input.is_cuda()) return cuda_reduce_scatter(output, input, opts);
    auto copts = options(opts.timeout);
    return launch_pairs(
        OpType::_REDUCE_SCATTER_BASE, "gloo_lite:reduce_scatter_tensor", {output}, {input},
        [&](Call& call, Starts& starts, const at::Tensor& out, const at::Tensor& in) {
          add_reduce_scatter(call, starts, out, in, opts.reduceOp, copts, "reduce_scatter_tensor");
        });
  });
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::reduce_scatter_tensor_coalesced(
    Tensors& outputs, Tensors& inputs, const ::c10d::ReduceScatterOptions& opts) {
  return torch_errors([&] {
    auto copts = options(opts.timeout);
    return launch_pairs(
        OpType::REDUCE_SCATTER_TENSOR_COALESCED, "gloo_lite:reduce_scatter_tensor_coalesced",
        outputs, inputs,
        [&](Call& call, Starts& starts, const at::Tensor& out, const at::Tensor& in) {
          add_reduce_scatter(call, starts, out, in, opts.reduceOp, copts,
                             "reduce_scatter_tensor_coalesced");
        });
  });
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::alltoall_base(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_split_sizes,
    std::vector<int64_t>& input_split_sizes, const ::c10d::AllToAllOptions& opts) {
  return torch_errors([&] {
    if (input.defined() && input.is_cuda()) {
      return cuda_alltoall_base(output, input, output_split_sizes, input_split_sizes, opts);
    }
    check_cpu_dense("all_to_all_single", input);
    check_same_type("all_to_all_single", input, {output});
    const size_t scale = moved_scale(input);
    std::vector<size_t> send_counts = split_counts("input", input, input_split_sizes, size_, scale);
    std::vector<size_t> recv_counts =
        split_counts("output", output, output_split_sizes, size_, scale);
    Staged in(input), out(output);
    Call call{OpType::ALLTOALL_BASE,
              "gloo_lite:all_to_all_single",
              {output},
              {in.flat, out.flat},
              nullptr};
    finish_staged(call.finish_step, out);
    auto copts = options(opts.timeout);
    return launch(std::move(call), [&] {
      const DataType type = moved_elements(input).type;
      return std::vector<gloo_lite::Work>{ialltoallv(context(), in.flat.data_ptr(), send_counts,
                                                     out.flat.data_ptr(), recv_counts, type,
                                                     copts)};
    });
  });
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::alltoall(Tensors& outputs, Tensors& inputs,
                                                        const ::c10d::AllToAllOptions& opts) {
  return torch_errors([&] {
    if (on_cuda(inputs)) return cuda_alltoall(outputs, inputs, opts);
    check_list_size("all_to_all", inputs.size(), size_, "the input list");
    check_list_size("all_to_all", outputs.size(), size_, "the output list");
    check_same_type("all_to_all", inputs[0], inputs);
    check_same_type("all_to_all", inputs[0], outputs);
    const size_t scale = moved_scale(inputs[0]);
    std::vector<size_t> send_counts, recv_counts;
    for (int r = 0; r < size_; ++r) {
      send_counts.push_back(inputs[r].numel() * scale);
      recv_counts.push_back(outputs[r].numel() * scale);
    }
    at::Tensor flat_in = flatten(inputs);
    const int64_t received =
        std::accumulate(outputs.begin(), outputs.end(), int64_t{0},
                        [](int64_t n, const at::Tensor& t) { return n + t.numel(); });
    at::Tensor flat_out = flat_like(inputs[0], received);
    Call call{OpType::ALLTOALL,
              "gloo_lite:all_to_all",
              outputs,
              {flat_in, flat_out},
              [flat_out, outputs] { unflatten(flat_out, outputs); }};
    auto copts = options(opts.timeout);
    return launch(std::move(call), [&] {
      const DataType type = moved_elements(inputs[0]).type;
      return std::vector<gloo_lite::Work>{ialltoallv(context(), flat_in.data_ptr(), send_counts,
                                                     flat_out.data_ptr(), recv_counts, type,
                                                     copts)};
    });
  });
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::barrier(const ::c10d::BarrierOptions& opts) {
  return torch_errors([&] {
    Call call{OpType::BARRIER, "gloo_lite:barrier", {}, {}, nullptr};
    auto copts = options(opts.timeout);
    return launch(std::move(call),
                  [&] { return std::vector<gloo_lite::Work>{ibarrier(context(), copts)}; });
  });
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::send(Tensors& tensors, int dst_rank, int tag) {
  return torch_errors([&] {
    if (on_cuda(tensors)) return cuda_send(single_cuda_tensor("send", tensors), dst_rank, tag);
    const at::Tensor& tensor = single_tensor("send", tensors);
    Staged in(tensor);
    Call call{OpType::SEND, "gloo_lite:send", {tensor}, {in.flat}, nullptr, true};
    const uint64_t wire_tag = p2p_tag("send", tag);
    return launch(std::move(call), [&] {
      return std::vector<gloo_lite::Work>{context().isend(dst_rank, in.flat.data_ptr(),
                                                          in.flat.numel() * in.flat.element_size(),
                                                          wire_tag, timeout_.load())};
    });
  });
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::recv(Tensors& tensors, int src_rank, int tag) {
  return torch_errors([&] {
    if (on_cuda(tensors)) return cuda_recv(single_cuda_tensor("recv", tensors), src_rank, tag);
    const at::Tensor& tensor = single_tensor("recv", tensors);
    Staged out(tensor);
    Call call{OpType::RECV, "gloo_lite:recv", {tensor}, {out.flat}, nullptr, true};
    finish_staged(call.finish_step, out);
    const uint64_t wire_tag = p2p_tag("recv", tag);
    return launch(std::move(call), [&] {
      return std::vector<gloo_lite::Work>{
          context().irecv(src_rank, out.flat.data_ptr(), out.flat.numel() * out.flat.element_size(),
                          wire_tag, timeout_.load())};
    });
  });
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::recvAnysource(Tensors& tensors, int tag) {
  return torch_errors([&] {
    const at::Tensor& tensor = single_tensor("recv (any source)", tensors);
    Staged out(tensor);
    Call call{
        OpType::RECVANYSOURCE, "gloo_lite:recv_anysource", {tensor}, {out.flat}, nullptr, true};
    finish_staged(call.finish_step, out);
    const uint64_t wire_tag = p2p_tag("recv (any source)", tag);
    std::vector<int> peers;
    for (int r = 0; r < size_; ++r) {
      if (r != rank_) peers.push_back(r);
    }
    return launch(std::move(call), [&] {
      return std::vector<gloo_lite::Work>{context().irecv_any(
          peers, out.flat.data_ptr(), out.flat.numel() * out.flat.element_size(), wire_tag,
          timeout_.load())};
    });
  });
}

}  // namespace gloo_lite::torch_backend
