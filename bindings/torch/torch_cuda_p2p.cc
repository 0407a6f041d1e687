// CUDA tensors in the torch backend, second part: point-to-point (send, recv) through
// gloo_lite::cuda's send/recv, and the collectives gloo_lite::cuda has no call for (gather,
// scatter, all_to_all, all_to_all_single with split sizes) built from that same send/recv, one
// mechanism for all of them. all_to_all_single without split sizes is gloo_lite::cuda's
// alltoall. Everything is stream-ordered on torch's current stream, like torch_cuda.cc: this
// rank's own block is a torch copy on that stream, the transfers are enqueued behind it, and
// outputs are put in place by torch ops enqueued behind the transfers.
//
// The communicator runs its calls one at a time, so a send that waits for its receive
// (messages above the transport's eager size) holds every later call. cuda_exchange therefore
// orders the transfers so that no two ranks can wait for each other: rank r visits its peers
// in increasing rank order; with a lower peer it receives first, then sends; with a higher one
// it sends first. Every pair (a < b) then meets in the same global order of pairs, and the
// earliest unfinished pair can always go on.
#include <limits>
#include <string>
#include <utility>

#include "bindings/torch/torch_backend.h"
#include "bindings/torch/torch_cuda_support.h"
#include "bindings/torch/torch_errors.h"
#include "bindings/torch/torch_tensors.h"
#include "gloo_lite/transport/tag_space.h"

namespace gloo_lite::torch_backend {
namespace {

using ::c10d::OpType;

// The point-to-point tag of the exchanges behind gather, scatter and all_to_all: the tag space's
// binding tag, above every tag torch can name, so they never meet a user's messages.
constexpr uint64_t kExchangeTag = tags::kBindingTag;
static_assert(kExchangeTag > static_cast<uint64_t>(std::numeric_limits<int>::max()),
              "torch's tags (C ints) never reach the exchange tag");

size_t bytes_of(const at::Tensor& flat) { return flat.numel() * flat.element_size(); }

std::byte* byte_at(const at::Tensor& flat, size_t offset) {
  return static_cast<std::byte*>(flat.data_ptr()) + offset;
}

// `flat`'s bytes [offset, offset + bytes) as a tensor, for torch copies of one block.
at::Tensor byte_block(const at::Tensor& flat, size_t offset, size_t bytes) {
  return flat.view(at::kByte).narrow(0, static_cast<int64_t>(offset), static_cast<int64_t>(bytes));
}

// Byte offsets of consecutive blocks of `bytes`.
std::vector<size_t> offsets_of(const std::vector<size_t>& bytes) {
  std::vector<size_t> offsets(bytes.size(), 0);
  for (size_t i = 1; i < bytes.size(); ++i) offsets[i] = offsets[i - 1] + bytes[i - 1];
  return offsets;
}

}  // namespace

c10::intrusive_ptr<::c10d::Work> TorchBackend::cuda_exchange(Call call, const c10::Device& device,
                                                             std::vector<CudaBlock> sends,
                                                             std::vector<CudaBlock> recvs,
                                                             std::function<void()> after) {
  call.devices = {device};
  Starts starts;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    auto send = [&] {
      if (sends[peer].bytes == 0) return;
      starts.push_back([this, device, block = sends[peer], peer] {
        return cuda_communicator(device).send(block.data, block.bytes, peer, kExchangeTag,
                                              current_stream(device));
      });
    };
    auto recv = [&] {
      if (recvs[peer].bytes == 0) return;
      starts.push_back([this, device, block = recvs[peer], peer] {
        return cuda_communicator(device).recv(block.data, block.bytes, peer, kExchangeTag,
                                              current_stream(device));
      });
    };
    if (rank_ < peer) {
      send();
      recv();
    } else {
      recv();
      send();
    }
  }
  if (after) {
    if (starts.empty()) {
      after();
    } else {
      starts.back() = [last = std::move(starts.back()), after] {
        gloo_lite::Work work = last();
        after();
        return work;
      };
    }
  }
  return launch_all(std::move(call), std::move(starts));
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::cuda_send(const at::Tensor& tensor, int peer,
                                                         int tag) {
  return torch_errors([&] {
    const uint64_t wire_tag = p2p_tag("send", tag);
    Staged in(tensor);
    Call call{OpType::SEND, "gloo_lite:send", {tensor}, {in.flat}, nullptr, true};
    call.devices = {tensor.device()};
    return launch(std::move(call), [&] {
      return std::vector<gloo_lite::Work>{cuda_communicator(tensor.device())
                                              .send(in.flat.data_ptr(), bytes_of(in.flat), peer,
                                                    wire_tag, current_stream(tensor.device()))};
    });
  });
}

c10::intrusive_ptr<::c10d::Work> TorchBackend::cuda_recv(const at::Tensor& tensor, int peer,
                                                         int tag) {
  return torch_errors([&] {
    const uint64_t wire_tag = p2p_tag("recv", tag);
    Staged out(tensor);
    Call call{OpType::RECV, "gloo_lite:recv", {tensor}, {out.flat}, nullptr, true};
    call.devices = {tensor.device()};
    return launch(std::move(call), [&] {
      gloo_lite::Work work = cuda_communicator(tensor.device())
                                 .recv(out.flat.data_ptr(), bytes_of(out.flat), peer, wire_tag,
                                       current_stream(tensor.device()));
      if (out.copied) out.finish_output();
      return std::vector<gloo_lite::Work>{std::move(work)};
    });
  });
}

// The root receives block r from rank r into one flat tensor (its own block is a copy), then
// splits it into the output list.
c10::intrusive_ptr<::c10d::Work> TorchBackend::cuda_gather(const TensorLists& outputs,
                                                           const at::Tensor& input,
                                                           const ::c10d::GatherOptions& opts) {
  return torch_errors([&] {
    check_root("gather", opts.rootRank, size_);
    const int root = static_cast<int>(opts.rootRank);
    Staged in(input);
    const size_t bytes = bytes_of(in.flat);
    Call call{OpType::GATHER, "gloo_lite:gather", {}, {in.flat}, nullptr};
    std::vector<CudaBlock> sends(size_), recvs(size_);
    std::function<void()> after;
    if (rank_ == root) {
      if (outputs.size() != 1) {
        throw InvalidArgument("gather: the root takes one output list, got " +
                              std::to_string(outputs.size()));
      }
      check_list_size("gather", outputs[0].size(), size_, "the root's output list");
      for (const at::Tensor& t : outputs[0]) {
        check_cuda_like("gather", t, input, input.numel(), "the input's");
      }
      at::Tensor flat = flat_like(in.flat, in.flat.numel() * size_);
      byte_block(flat, rank_ * bytes, bytes).copy_(byte_block(in.flat, 0, bytes));
      for (int r = 0; r < size_; ++r) recvs[r] = {byte_at(flat, r * bytes), bytes};
      call.outputs = outputs[0];
      call.keep.push_back(flat);
      after = [flat, list = outputs[0]] { unflatten(flat, list); };
    } else {
      if (!outputs.empty() && !outputs[0].empty()) {
        throw InvalidArgument("gather: only the root (rank " + std::to_string(root) +
                              ") takes output tensors; rank " + std::to_string(rank_) + " got " +
                              std::to_string(outputs[0].size()));
      }
      sends[root] = {in.flat.data_ptr(), bytes};
    }
    return cuda_exchange(std::move(call), input.device(), std::move(sends), std::move(recvs),
                         std::move(after));
  });
}

// The root flattens its input list and sends block r to rank r (its own block is a copy).
c10::intrusive_ptr<::c10d::Work> TorchBackend::cuda_scatter(const at::Tensor& output,
                                                            const TensorLists& inputs,
                                                            const ::c10d::ScatterOptions& opts) {
  return torch_errors([&] {
    check_root("scatter", opts.rootRank, size_);
    const int root = static_cast<int>(opts.rootRank);
    Staged out(output);
    const size_t bytes = bytes_of(out.flat);
    Call call{OpType::SCATTER, "gloo_lite:scatter", {output}, {out.flat}, nullptr};
    std::vector<CudaBlock> sends(size_), recvs(size_);
    if (rank_ == root) {
      if (inputs.size() != 1) {
        throw InvalidArgument("scatter: the root takes one input list, got " +
                              std::to_string(inputs.size()));
      }
      check_list_size("scatter", inputs[0].size(), size_, "the root's input list");
      for (const at::Tensor& t : inputs[0]) {
        check_cuda_like("scatter", t, output, output.numel(), "the output's");
      }
      at::Tensor flat = flatten(inputs[0]);
      call.keep.push_back(flat);
      byte_block(out.flat, 0, bytes).copy_(byte_block(flat, rank_ * bytes, bytes));
      for (int r = 0; r < size_; ++r) sends[r] = {byte_at(flat, r * bytes), bytes};
    } else {
      if (!inputs.empty() && !inputs[0].empty()) {
        throw InvalidArgument("scatter: only the root (rank " + std::to_string(root) +
                              ") takes input tensors; rank " + std::to_string(rank_) + " got " +
                              std::to_string(inputs[0].size()));
      }
      recvs[root] = {out.flat.data_ptr(), bytes};
    }
    std::function<void()> after;
    if (out.copied) after = [out] { out.finish_output(); };
    return cuda_exchange(std::move(call), output.device(), std::move(sends), std::move(recvs),
                         std::move(after));
  });
}

// Without split sizes (equal blocks; every rank must then pass none, as torch's equal-split
// form does): gloo_lite::cuda's alltoall. With them: the exchange, block p to and from rank p.
c10::intrusive_ptr<::c10d::Work> TorchBackend::cuda_alltoall_base(
    const at::Tensor& output, const at::Tensor& input,
    const std::vector<int64_t>& output_split_sizes, const std::vector<int64_t>& input_split_sizes,
    const ::c10d::AllToAllOptions& opts) {
  return torch_errors([&] {
    const char* collective = "all_to_all_single";
    check_cuda_dense(collective, input);
    check_same_cuda(collective, input, {output});
    const size_t scale = moved_scale(input);
    const Elements moved = moved_elements(input);
    const size_t element = element_size(moved.type);
    std::vector<size_t> send_counts = split_counts("input", input, input_split_sizes, size_, scale);
    std::vector<size_t> recv_counts =
        split_counts("output", output, output_split_sizes, size_, scale);
    Staged in(input), out(output);
    Call call{OpType::ALLTOALL_BASE,
              "gloo_lite:all_to_all_single",
              {output},
              {in.flat, out.flat},
              nullptr};
    if (input_split_sizes.empty() && output_split_sizes.empty()) {
      if (send_counts[0] != recv_counts[0]) {
        throw InvalidArgument(std::string(collective) + ": the input's and the output's " +
                              "blocks differ in size (" + std::to_string(send_counts[0]) + " and " +
                              std::to_string(recv_counts[0]) + " elements)");
      }
      auto copts = options(opts.timeout);
      copts.tag = kCudaTag;
      call.devices = {input.device()};
      return launch(std::move(call), [&] {
        gloo_lite::Work work =
            cuda_communicator(input.device())
                .alltoall(in.flat.data_ptr(), out.flat.data_ptr(), send_counts[0], moved.type,
                          current_stream(input.device()), copts);
        if (out.copied) out.finish_output();
        return std::vector<gloo_lite::Work>{std::move(work)};
      });
    }
    std::vector<size_t> send_bytes, recv_bytes;
    for (int r = 0; r < size_; ++r) {
      send_bytes.push_back(send_counts[r] * element);
      recv_bytes.push_back(recv_counts[r] * element);
    }
    if (send_bytes[rank_] != recv_bytes[rank_]) {
      throw InvalidArgument(std::string(collective) + ": rank " + std::to_string(rank_) +
                            " sends itself " + std::to_string(send_counts[rank_] / scale) +
                            " elements but expects " + std::to_string(recv_counts[rank_] / scale));
    }
    const std::vector<size_t> send_at = offsets_of(send_bytes), recv_at = offsets_of(recv_bytes);
    std::vector<CudaBlock> sends(size_), recvs(size_);
    for (int r = 0; r < size_; ++r) {
      sends[r] = {byte_at(in.flat, send_at[r]), send_bytes[r]};
      recvs[r] = {byte_at(out.flat, recv_at[r]), recv_bytes[r]};
    }
    if (send_bytes[rank_] > 0) {
      byte_block(out.flat, recv_at[rank_], recv_bytes[rank_])
          .copy_(byte_block(in.flat, send_at[rank_], send_bytes[rank_]));
    }
    std::function<void()> after;
    if (out.copied) after = [out] { out.finish_output(); };
    return cuda_exchange(std::move(call), input.device(), std::move(sends), std::move(recvs),
                         std::move(after));
  });
}

// Tensor p of `inputs` goes to rank p; tensor p of `outputs` comes from it (sizes may differ).
c10::intrusive_ptr<::c10d::Work> TorchBackend::cuda_alltoall(const Tensors& outputs,
                                                             const Tensors& inputs,
                                                             const ::c10d::AllToAllOptions& opts) {
  return torch_errors([&] {
    (void)opts;  // the exchange's transfers use the context's timeout
    const char* collective = "all_to_all";
    check_list_size(collective, inputs.size(), size_, "the input list");
    check_list_size(collective, outputs.size(), size_, "the output list");
    check_same_cuda(collective, inputs[0], inputs);
    check_same_cuda(collective, inputs[0], outputs);
    if (inputs[rank_].numel() != outputs[rank_].numel()) {
      throw InvalidArgument(std::string(collective) + ": rank " + std::to_string(rank_) +
                            " sends itself " + std::to_string(inputs[rank_].numel()) +
                            " elements but expects " + std::to_string(outputs[rank_].numel()));
    }
    std::vector<size_t> send_bytes, recv_bytes;
    int64_t received = 0;
    for (int r = 0; r < size_; ++r) {
      send_bytes.push_back(bytes_of(inputs[r]));
      recv_bytes.push_back(bytes_of(outputs[r]));
      received += outputs[r].numel();
    }
    at::Tensor flat_in = flatten(inputs);
    at::Tensor flat_out = flat_like(inputs[0], received);
    const std::vector<size_t> send_at = offsets_of(send_bytes), recv_at = offsets_of(recv_bytes);
    std::vector<CudaBlock> sends(size_), recvs(size_);
    for (int r = 0; r < size_; ++r) {
      sends[r] = {byte_at(flat_in, send_at[r]), send_bytes[r]};
      recvs[r] = {byte_at(flat_out, recv_at[r]), recv_bytes[r]};
    }
    if (send_bytes[rank_] > 0) {
      byte_block(flat_out, recv_at[rank_], recv_bytes[rank_])
          .copy_(byte_block(flat_in, send_at[rank_], send_bytes[rank_]));
    }
    Call call{OpType::ALLTOALL, "gloo_lite:all_to_all", outputs, {flat_in, flat_out}, nullptr};
    return cuda_exchange(std::move(call), inputs[0].device(), std::move(sends), std::move(recvs),
                         [flat_out, outputs] { unflatten(flat_out, outputs); });
  });
}

}  // namespace gloo_lite::torch_backend
