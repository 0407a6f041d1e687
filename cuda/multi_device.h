// Several GPUs per process (namespace gloo_lite::cuda): one call takes one device buffer and one
// stream per local GPU, reduces (or gathers) across the local GPUs first, runs one cross-rank
// collective of cuda/collectives.h on the lead GPU's buffer (device 0 of the list), then copies
// the result to the other local GPUs. The wire carries one buffer per process, not one per GPU.
//
// Devices are DeviceLayer objects (cuda/device_layer.h), one per local GPU: cuda_device_layer(g)
// for GPU g, or several host stand-ins (cuda/host_stand_in.h, HostStandInOptions::device) on a
// machine without a GPU. Device memory of every device must be reachable by the lead's copies
// (CUDA: unified addressing, which every 64-bit CUDA platform has; peer access makes those
// copies direct, without it the driver routes them through the host).
//
// What runs where. The local part runs on internal streams ("lanes", one per device): the lead's
// lane waits for every caller stream (an event each), copies the other devices' buffers to a
// scratch buffer on the lead and combines them there with the layer's reduction kernel; the
// cross-rank call is stream-ordered on the lead's lane; each other device's lane then waits for
// the lead's result and copies it in. Every caller stream waits for the whole call (its own
// device's copy, and every device's copy of the lead buffer, which the caller may overwrite next).
//
// Stream order, errors, in-place rules, argument checks and the order of calls are those of
// cuda::Communicator (cuda/collectives.h), per device. The returned Work is the cross-rank
// call's: it finishes when the cross-rank part has finished (with its error, if it failed); what
// follows (kAvg's division, the copies to the other devices) is ordered on the streams after it.
// The blocking forms (free functions below) return once every device's output holds the result.
//
// Ranks and the global order. With P processes of D devices each (every process must pass the
// same D), device d of rank r is contributor r * D + d: allgather's output block r * D + d comes
// from it, and kAvg divides by P * D. kCustom is not supported here (the local part runs on
// the devices).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "cuda/collectives.h"
#include "cuda/device_layer.h"
#include "gloo_lite/collectives.h"
#include "gloo_lite/context.h"
#include "gloo_lite/types.h"
#include "gloo_lite/work.h"

namespace gloo_lite::cuda {

class MultiDeviceCommunicator {
 public:
  // `devices[0]` is the lead: the staging pool of `options` lives there. The context must
  // outlive the communicator.
  MultiDeviceCommunicator(Context& context, std::vector<std::shared_ptr<DeviceLayer>> devices,
                          PipelineOptions options = {});
  // Waits for every call made, then frees the lanes and the scratch buffer.
  ~MultiDeviceCommunicator();
  MultiDeviceCommunicator(const MultiDeviceCommunicator&) = delete;
  MultiDeviceCommunicator& operator=(const MultiDeviceCommunicator&) = delete;

  Context& context() const;
  int devices() const;
  DeviceLayer& layer(int device) const;

  // Vectors hold one entry per device, in the order of the constructor's `devices`; streams[d]
  // and the buffers of entry d belong to device d.
  Work allreduce(const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
                 size_t count, DataType type, ReduceOp op, const std::vector<Stream>& streams,
                 const CollectiveOptions& options = {});
  // In place: device `root_device` of rank `root` is the source for every device of every rank.
  Work broadcast(const std::vector<void*>& data, size_t count, DataType type, int root,
                 int root_device, const std::vector<Stream>& streams,
                 const CollectiveOptions& options = {});
  // Device `root_device` of rank `root` receives the reduction over every device of every rank
  // in outputs[root_device]; no other output is written (on other ranks and devices it may be
  // null). An input may be its output (in place).
  Work reduce(const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
              size_t count, DataType type, ReduceOp op, int root, int root_device,
              const std::vector<Stream>& streams, const CollectiveOptions& options = {});
  // outputs[d] holds P * D * count elements, block r * D + d' from device d' of rank r; an input
  // may be its device's own block of that device's output (in place).
  Work allgather(const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
                 size_t count, DataType type, const std::vector<Stream>& streams,
                 const CollectiveOptions& options = {});

  // inputs[d] holds P * D * recv_count elements; device d of rank r receives block r * D + d,
  // reduced over every device of every rank.
  Work reduce_scatter(const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
                      size_t recv_count, DataType type, ReduceOp op,
                      const std::vector<Stream>& streams, const CollectiveOptions& options = {});

  // inputs[d] and outputs[d] hold P * D * count elements: block r' * D + d' of device d's input
  // goes to device d' of rank r', block r * D + d of an output came from device d of rank r.
  // Not in place.
  Work alltoall(const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
                size_t count, DataType type, const std::vector<Stream>& streams,
                const CollectiveOptions& options = {});

  // Blocks until every call made so far has finished on every device; throws the first error.
  void synchronize();

  struct State;  // cuda/multi_device.cc

 private:
  std::unique_ptr<State> state_;
};

// Blocking forms: they return once every device's output holds the result; they throw the
// call's error.
void allreduce(MultiDeviceCommunicator& communicator, const std::vector<const void*>& inputs,
               const std::vector<void*>& outputs, size_t count, DataType type, ReduceOp op,
               const std::vector<Stream>& streams, const CollectiveOptions& options = {});
void broadcast(MultiDeviceCommunicator& communicator, const std::vector<void*>& data, size_t count,
               DataType type, int root, int root_device, const std::vector<Stream>& streams,
               const CollectiveOptions& options = {});
void reduce(MultiDeviceCommunicator& communicator, const std::vector<const void*>& inputs,
            const std::vector<void*>& outputs, size_t count, DataType type, ReduceOp op, int root,
            int root_device, const std::vector<Stream>& streams,
            const CollectiveOptions& options = {});
void allgather(MultiDeviceCommunicator& communicator, const std::vector<const void*>& inputs,
               const std::vector<void*>& outputs, size_t count, DataType type,
               const std::vector<Stream>& streams, const CollectiveOptions& options = {});

void alltoall(MultiDeviceCommunicator& communicator, const std::vector<const void*>& inputs,
              const std::vector<void*>& outputs, size_t count, DataType type,
              const std::vector<Stream>& streams, const CollectiveOptions& options = {});

void reduce_scatter(MultiDeviceCommunicator& communicator, const std::vector<const void*>& inputs,
                    const std::vector<void*>& outputs, size_t recv_count, DataType type,
                    ReduceOp op, const std::vector<Stream>& streams,
                    const CollectiveOptions& options = {});

}  // namespace gloo_lite::cuda
