// gloo_lite as a torch.distributed backend: a c10d::Backend whose collectives are gloo_lite's
// non-blocking calls on one context. Registered from Python (python/gloo_lite/torch.py) for
// the "cpu" device, so that init_process_group(backend="gloo_lite"), new_group(...,
// backend="gloo_lite") and "cpu:gloo_lite,cuda:nccl" reach it.
//
// Every collective runs on tag 0 of the context, in the order torch starts them (torch starts
// a group's collectives in the same order on every rank); point-to-point calls are
// gloo_lite's transfers with torch's tag. Each call returns at once with a TorchWork
// (torch_work.h); DDP's bucketed allreduce thereby overlaps the backward pass.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "cuda/collectives.h"
#include "gloo_lite/collectives.h"
#include "gloo_lite/context.h"

namespace gloo_lite::torch_backend {

class TorchWork;

class TorchBackend : public ::c10d::Backend {
 public:
  // Connects to the group's peers through torch's store (torch_store.h) within `timeout`,
  // which is also every call's default timeout. `check`: compare every call's signature
  // across ranks first (gloo_lite's call check; on under TORCH_DISTRIBUTED_DEBUG=DETAIL).
  TorchBackend(const c10::intrusive_ptr<::c10d::Store>& store, const std::string& store_name,
               int rank, int size, std::chrono::milliseconds timeout, bool check);
  ~TorchBackend() override;

  const std::string getBackendName() const override { return "gloo_lite"; }
  c10::intrusive_ptr<Options> getBackendOptions() override;
  void setTimeout(std::chrono::milliseconds timeout) override { timeout_ = timeout; }
  uint64_t getSequenceNumberForGroup() override { return sequence_; }
  void abort() override;
  void shutdown() override;
  // "context 3f2a... (rank 1 of 4)", for messages and tests.
  std::string describe() const;

  using Work = ::c10d::Work;
  using Tensors = std::vector<at::Tensor>;
  using TensorLists = std::vector<std::vector<at::Tensor>>;

  c10::intrusive_ptr<Work> broadcast(Tensors& tensors,
                                     const ::c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<Work> allreduce(Tensors& tensors,
                                     const ::c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<Work> allreduce_coalesced(
      Tensors& tensors, const ::c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<Work> reduce(Tensors& tensors, const ::c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<Work> allgather(TensorLists& outputs, Tensors& inputs,
                                     const ::c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                           const ::c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<Work> allgather_coalesced(TensorLists& outputs, Tensors& inputs,
                                               const ::c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<Work> allgather_into_tensor_coalesced(
      Tensors& outputs, Tensors& inputs, const ::c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<Work> gather(TensorLists& outputs, Tensors& inputs,
                                  const ::c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<Work> scatter(Tensors& outputs, TensorLists& inputs,
                                   const ::c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<Work> reduce_scatter(Tensors& outputs, TensorLists& inputs,
                                          const ::c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                const ::c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<Work> reduce_scatter_tensor_coalesced(
      Tensors& outputs, Tensors& inputs, const ::c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                         std::vector<int64_t>& output_split_sizes,
                                         std::vector<int64_t>& input_split_sizes,
                                         const ::c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<Work> alltoall(Tensors& outputs, Tensors& inputs,
                                    const ::c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<Work> barrier(const ::c10d::BarrierOptions& opts) override;
  c10::intrusive_ptr<Work> send(Tensors& tensors, int dst_rank, int tag) override;
  c10::intrusive_ptr<Work> recv(Tensors& tensors, int src_rank, int tag) override;
  c10::intrusive_ptr<Work> recvAnysource(Tensors& tensors, int tag) override;

 private:
  // What one torch call hands to launch(): the tensors the future reports, the tensors the
  // gloo_lite calls use until they finish, and the step that puts results in place.
  struct Call {
    ::c10d::OpType type;
    const char* title;
    Tensors outputs;
    Tensors keep;
    std::function<void()> finish_step;
    bool point_to_point = false;
    std::vector<c10::Device> devices = {};  // CUDA calls: the outputs' device
  };
  // Starts the gloo_lite calls `start` makes (throws: nothing started, torch's error) and
  // returns the work that watches them.
  c10::intrusive_ptr<Work> launch(Call call,
                                  const std::function<std::vector<gloo_lite::Work>()>& start);
  c10::intrusive_ptr<TorchWork> make_work(Call& call) const;
  // The gloo_lite calls of one torch call, started in order by launch_all. Should one fail to
  // start after others did, those run on (the work keeps their buffers) and the group fails.
  using Starts = std::vector<std::function<gloo_lite::Work()>>;
  c10::intrusive_ptr<Work> launch_all(Call call, Starts starts);
  // One torch call over pairs of (output, input) tensors: the single-tensor forms pass one
  // pair, the coalesced forms several; `add` stages a pair and queues its gloo_lite call.
  using AddPair =
      std::function<void(Call&, Starts&, const at::Tensor& output, const at::Tensor& input)>;
  c10::intrusive_ptr<Work> launch_pairs(::c10d::OpType type, const char* title,
                                        const Tensors& outputs, const Tensors& inputs,
                                        const AddPair& add);
  CollectiveOptions options(std::chrono::milliseconds timeout) const;
  Context& context();
  // The allgather of `input` into `output` (P times its elements), staged where needed; the
  // building block of _allgather_base and its coalesced form.
  void add_allgather(Call& call, Starts& starts, const at::Tensor& output, const at::Tensor& input,
                     const CollectiveOptions& options, const char* collective);
  void add_reduce_scatter(Call& call, Starts& starts, const at::Tensor& output,
                          const at::Tensor& input, const ::c10d::ReduceOp& op,
                          const CollectiveOptions& options, const char* collective);

  // CUDA tensors (torch_cuda.cc): the same collectives through gloo_lite::cuda, stream-ordered
  // on torch's current stream of the tensors' device.
  c10::intrusive_ptr<Work> cuda_allreduce(const at::Tensor& tensor,
                                          const ::c10d::AllreduceOptions& opts);
  c10::intrusive_ptr<Work> cuda_allreduce_coalesced(const Tensors& tensors,
                                                    const ::c10d::AllreduceCoalescedOptions& opts);
  c10::intrusive_ptr<Work> cuda_broadcast(const at::Tensor& tensor,
                                          const ::c10d::BroadcastOptions& opts);
  c10::intrusive_ptr<Work> cuda_reduce(const at::Tensor& tensor, const ::c10d::ReduceOptions& opts);
  c10::intrusive_ptr<Work> cuda_allgather(const at::Tensor& output, const at::Tensor& input,
                                          const Tensors& output_list,
                                          const ::c10d::AllgatherOptions& opts);
  c10::intrusive_ptr<Work> cuda_reduce_scatter(const at::Tensor& output, const at::Tensor& input,
                                               const ::c10d::ReduceScatterOptions& opts);
  // Moves blocks[p] of `sends` to peer p and receives `recvs`' from it, one send or receive
  // per non-empty block, in the order that cannot deadlock (torch_cuda_p2p.cc); `after` (torch
  // ops on the stream that put results in place) is enqueued behind the last of them.
  struct CudaBlock {
    void* data = nullptr;
    size_t bytes = 0;
  };
  c10::intrusive_ptr<Work> cuda_exchange(Call call, const c10::Device& device,
                                         std::vector<CudaBlock> sends, std::vector<CudaBlock> recvs,
                                         std::function<void()> after);
  // torch_cuda_p2p.cc: point-to-point, and the collectives gloo_lite::cuda has no call for
  // (gather, scatter, uneven all_to_all) built from its send/recv.
  c10::intrusive_ptr<Work> cuda_send(const at::Tensor& tensor, int peer, int tag);
  c10::intrusive_ptr<Work> cuda_recv(const at::Tensor& tensor, int peer, int tag);
  c10::intrusive_ptr<Work> cuda_gather(const TensorLists& outputs, const at::Tensor& input,
                                       const ::c10d::GatherOptions& opts);
  c10::intrusive_ptr<Work> cuda_scatter(const at::Tensor& output, const TensorLists& inputs,
                                        const ::c10d::ScatterOptions& opts);
  c10::intrusive_ptr<Work> cuda_alltoall_base(const at::Tensor& output, const at::Tensor& input,
                                              const std::vector<int64_t>& output_split_sizes,
                                              const std::vector<int64_t>& input_split_sizes,
                                              const ::c10d::AllToAllOptions& opts);
  c10::intrusive_ptr<Work> cuda_alltoall(const Tensors& outputs, const Tensors& inputs,
                                         const ::c10d::AllToAllOptions& opts);
  // The gloo_lite::cuda communicator of `device` (made on first use; cuda::Unavailable without
  // CUDA in this build or without a usable GPU).
  cuda::Communicator& cuda_communicator(const c10::Device& device);

  std::shared_ptr<Context> context_;
  std::mutex cuda_mutex_;
  std::map<int, std::unique_ptr<cuda::Communicator>> cuda_;  // by device index, under cuda_mutex_
  std::atomic<std::chrono::milliseconds> timeout_;
  const bool check_;
  std::atomic<uint64_t> sequence_{0};
};

}  // namespace gloo_lite::torch_backend
