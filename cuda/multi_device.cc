// Several GPUs per process (cuda/multi_device.h): a local phase on the lead's lane, one call of
// the lead's cuda::Communicator on that lane, and a fan-out from the lead to the other devices'
// lanes. The orderings (each an event, recorded by the device that owns the stream):
//   lead lane waits entered[d] (every caller stream)  -- read inputs / write outputs only after
//                                                        the caller's earlier work on them;
//   lane d waits `result` (lead lane)                 -- copy out only what is there;
//   every caller stream waits done[d]                 -- the caller does not rewrite the lead
//                                                        buffer while lane d still reads it,
//                                                        and sees its own copy;
//   lead lane waits done[d] (reduce_scatter only)     -- lane d copies its block out of the
//                                                        scratch: a later call, perhaps on
//                                                        other caller streams, must not
//                                                        overwrite it first.
// Otherwise the scratch is used on the lead lane only, whose order protects it across calls;
// the caller's buffers are protected across calls by the caller's streams (the next call's lead
// lane waits for them).
#include "cuda/multi_device.h"

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "gloo_lite/argument_checks.h"

namespace gloo_lite::cuda {
namespace {

struct Device {
  std::shared_ptr<DeviceLayer> layer;
  Stream lane = nullptr;
  // Recorded on a caller's stream at the call: one event per caller stream, so that every event
  // is recorded on one stream only and its captures complete in order (an event re-recorded on
  // another stream could complete the later capture first).
  std::map<Stream, Event> entered;
  Event done = nullptr;  // on the lane, after its copy of the result
};

std::byte* at(void* base, size_t offset) { return static_cast<std::byte*>(base) + offset; }

// The reducing calls' check: check_op's rules, and no custom operation, which runs on the host
// while the local reduction runs on the devices.
void check_device_op(const char* name, int rank, DataType type, ReduceOp op) {
  check_op(name, rank, type, op);
  if (op == ReduceOp::kCustom) {
    throw InvalidArgument(std::string(name) +
                          ": a custom operation runs on the host; the local reduction runs on "
                          "the devices (use one device per cuda::Communicator for it)");
  }
}

}  // namespace

struct MultiDeviceCommunicator::State {
  State(Context& context_in, std::vector<std::shared_ptr<DeviceLayer>> layers,
        PipelineOptions options);
  ~State() { release(); }
  void release() noexcept;  // also when the constructor failed midway

  // Checks that every vector has one entry per device and that no stream or needed pointer is
  // missing; throws InvalidArgument naming the call and the device. `only`: just that
  // device's pointer is needed (reduce's output).
  template <typename Pointer>
  void check_pointers(const char* name, const std::vector<Pointer>& pointers, size_t bytes,
                      const char* what, int only = -1) const;
  void check_streams(const char* name, const std::vector<Stream>& streams) const;
  // A root (broadcast, reduce): a rank of the context and one of this communicator's devices.
  void check_root(const char* name, int root, int root_device) const;
  // Grows the lead's scratch to `bytes` (under mutex; waits for the lead lane to drain first).
  void reserve_scratch(size_t bytes);
  // The lead lane waits for every caller stream.
  void enter(const std::vector<Stream>& streams);
  // The fan-out from the lead to every other device d: `copy_out(d)` enqueues d's copies on
  // its lane, inside the orderings of the top of this file. A source in the scratch
  // (`from_scratch`) also holds the lead lane until every copy has read it.
  void fan_out(const std::function<void(size_t device)>& copy_out, bool from_scratch,
               const std::vector<Stream>& streams);
  // The common fan-out: `bytes` from the lead's `source` + d * stride to targets[d] of every
  // other device except `skip` and those whose target is null.
  void fan_out(const std::byte* source, size_t stride, const std::vector<void*>& targets,
               size_t bytes, int skip, bool from_scratch, const std::vector<Stream>& streams);

  Context& context;
  std::vector<Device> devices;
  std::unique_ptr<Communicator> lead;  // on devices[0]
  Event result = nullptr;              // on the lead lane, after the cross-rank call
  std::byte* scratch = nullptr;        // lead device memory, scratch_bytes
  size_t scratch_bytes = 0;
  // One call enqueues at a time: the lanes see the calls in the order the lead runs them.
  std::mutex mutex;
};

MultiDeviceCommunicator::State::State(Context& context_in,
                                      std::vector<std::shared_ptr<DeviceLayer>> layers,
                                      PipelineOptions options)
    : context(context_in) {
  if (layers.empty()) {
    throw InvalidArgument("cuda::MultiDeviceCommunicator: the list of devices is empty");
  }
  for (size_t d = 0; d < layers.size(); ++d) {
    if (!layers[d]) {
      throw InvalidArgument("cuda::MultiDeviceCommunicator: device " + std::to_string(d) +
                            "'s layer is null");
    }
  }
  try {
    for (auto& layer : layers) {
      Device& device = devices.emplace_back();
      device.layer = std::move(layer);
      device.lane = device.layer->create_stream();
      device.done = device.layer->create_event();
    }
    result = devices[0].layer->create_event();
    lead = std::make_unique<Communicator>(context, devices[0].layer, options);
  } catch (...) {
    release();
    throw;
  }
}

void MultiDeviceCommunicator::State::release() noexcept {
  if (devices.empty()) return;
  lead.reset();  // after every cross-rank call: the lead lane is let go
  for (Device& device : devices) {
    try {
      if (device.lane != nullptr) device.layer->synchronize_stream(device.lane);
    } catch (...) {  // a failed device: free what can be freed
    }
  }
  DeviceLayer& first = *devices.front().layer;
  if (scratch != nullptr) first.free_device(scratch);
  scratch = nullptr;
  if (result != nullptr) first.destroy_event(result);
  result = nullptr;
  for (Device& device : devices) {
    if (device.lane != nullptr) device.layer->destroy_stream(device.lane);
    if (device.done != nullptr) device.layer->destroy_event(device.done);
    for (auto& [stream, event] : device.entered) device.layer->destroy_event(event);
    device.entered.clear();
    device.lane = device.done = nullptr;
  }
  devices.clear();
}

template <typename Pointer>
void MultiDeviceCommunicator::State::check_pointers(const char* name,
                                                    const std::vector<Pointer>& pointers,
                                                    size_t bytes, const char* what,
                                                    int only) const {
  if (pointers.size() != devices.size()) {
    throw InvalidArgument(std::string(name) + ": " + std::to_string(pointers.size()) + " " + what +
                          " for " + std::to_string(devices.size()) +
                          " devices (pass one per device)");
  }
  for (size_t d = 0; d < pointers.size(); ++d) {
    if (only >= 0 && static_cast<int>(d) != only) continue;
    if (pointers[d] == nullptr && bytes > 0) {
      throw InvalidArgument(std::string(name) + ": " + what + " of device " + std::to_string(d) +
                            " is null but holds " + std::to_string(bytes) + " bytes");
    }
  }
}

void MultiDeviceCommunicator::State::check_streams(const char* name,
                                                   const std::vector<Stream>& streams) const {
  if (streams.size() != devices.size()) {
    throw InvalidArgument(std::string(name) + ": " + std::to_string(streams.size()) +
                          " streams for " + std::to_string(devices.size()) +
                          " devices (pass one per device)");
  }
}

void MultiDeviceCommunicator::State::check_root(const char* name, int root, int root_device) const {
  if (root_device < 0 || root_device >= static_cast<int>(devices.size())) {
    throw InvalidArgument(std::string(name) + ": root device " + std::to_string(root_device) +
                          " is not one of this communicator's " + std::to_string(devices.size()) +
                          " devices");
  }
  if (root < 0 || root >= context.size()) {
    throw InvalidArgument(std::string(name) + ": root " + std::to_string(root) +
                          " is not a rank of " + context.describe() + " (0.." +
                          std::to_string(context.size() - 1) + ")");
  }
}

void MultiDeviceCommunicator::State::reserve_scratch(size_t bytes) {
  if (bytes <= scratch_bytes) return;
  DeviceLayer& first = *devices[0].layer;
  if (scratch != nullptr) {
    // Earlier calls may still use it: the lead lane, and lanes copying out of it, which the
    // lead lane waits for.
    first.synchronize_stream(devices[0].lane);
    first.free_device(scratch);
    scratch = nullptr;
    scratch_bytes = 0;
  }
  scratch = static_cast<std::byte*>(first.allocate_device(bytes));
  scratch_bytes = bytes;
}

void MultiDeviceCommunicator::State::enter(const std::vector<Stream>& streams) {
  DeviceLayer& first = *devices[0].layer;
  for (size_t d = 0; d < devices.size(); ++d) {
    Device& device = devices[d];
    Event& entered = device.entered[streams[d]];
    if (entered == nullptr) entered = device.layer->create_event();
    device.layer->record(entered, streams[d]);
    first.wait_event(devices[0].lane, entered);
  }
}

void MultiDeviceCommunicator::State::fan_out(const std::function<void(size_t device)>& copy_out,
                                             bool from_scratch,
                                             const std::vector<Stream>& streams) {
  DeviceLayer& first = *devices[0].layer;
  first.record(result, devices[0].lane);
  for (size_t d = 1; d < devices.size(); ++d) {
    Device& device = devices[d];
    device.layer->wait_event(device.lane, result);
    copy_out(d);
    device.layer->record(device.done, device.lane);
  }
  first.wait_event(streams[0], result);
  for (size_t d = 1; d < devices.size(); ++d) {
    if (from_scratch) first.wait_event(devices[0].lane, devices[d].done);
    first.wait_event(streams[0], devices[d].done);
    devices[d].layer->wait_event(streams[d], devices[d].done);
  }
}

void MultiDeviceCommunicator::State::fan_out(const std::byte* source, size_t stride,
                                             const std::vector<void*>& targets, size_t bytes,
                                             int skip, bool from_scratch,
                                             const std::vector<Stream>& streams) {
  auto copy_out = [&](size_t d) {
    if (static_cast<int>(d) != skip && bytes > 0 && targets[d] != nullptr) {
      devices[d].layer->copy_on_device(targets[d], source + d * stride, bytes, devices[d].lane);
    }
  };
  fan_out(copy_out, from_scratch, streams);
}

MultiDeviceCommunicator::MultiDeviceCommunicator(Context& context,
                                                 std::vector<std::shared_ptr<DeviceLayer>> devices,
                                                 PipelineOptions options)
    : state_(std::make_unique<State>(context, std::move(devices), options)) {}

MultiDeviceCommunicator::~MultiDeviceCommunicator() = default;

Context& MultiDeviceCommunicator::context() const { return state_->context; }
int MultiDeviceCommunicator::devices() const { return static_cast<int>(state_->devices.size()); }
DeviceLayer& MultiDeviceCommunicator::layer(int device) const {
  return *state_->devices.at(static_cast<size_t>(device)).layer;
}

void MultiDeviceCommunicator::synchronize() {
  state_->lead->synchronize();
  for (Device& device : state_->devices) device.layer->synchronize_stream(device.lane);
}

Work MultiDeviceCommunicator::allreduce(const std::vector<const void*>& inputs,
                                        const std::vector<void*>& outputs, size_t count,
                                        DataType type, ReduceOp op,
                                        const std::vector<Stream>& streams,
                                        const CollectiveOptions& options) {
  const char* name = "cuda multi-device allreduce";
  State& s = *state_;
  check_device_op(name, s.context.rank(), type, op);
  const size_t bytes = checked_bytes(name, count, element_size(type), "the buffer");
  s.check_pointers(name, inputs, bytes, "inputs");
  s.check_pointers(name, outputs, bytes, "outputs");
  s.check_streams(name, streams);
  for (size_t d = 0; d < inputs.size(); ++d) {
    check_overlap(name, s.context.rank(), inputs[d], bytes, outputs[d], bytes);
  }
  // kAvg: sums everywhere, one division by every contributor at the end.
  const ReduceOp combine = op == ReduceOp::kAvg ? ReduceOp::kSum : op;
  const int contributors = s.context.size() * devices();

  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.devices.size() > 1) s.reserve_scratch(bytes);
  DeviceLayer& first = *s.devices[0].layer;
  Stream lane = s.devices[0].lane;
  s.enter(streams);
  if (bytes > 0) {
    if (inputs[0] != outputs[0]) first.copy_on_device(outputs[0], inputs[0], bytes, lane);
    for (size_t d = 1; d < s.devices.size(); ++d) {
      first.copy_on_device(s.scratch, inputs[d], bytes, lane);
      first.reduce(outputs[0], s.scratch, count, type, combine, lane);
    }
  }
  Work work = s.lead->allreduce(outputs[0], outputs[0], count, type, combine, lane, options);
  if (op == ReduceOp::kAvg && count > 0) first.divide(outputs[0], count, type, contributors, lane);
  s.fan_out(static_cast<std::byte*>(outputs[0]), 0, outputs, bytes, -1, false, streams);
  return work;
}

Work MultiDeviceCommunicator::broadcast(const std::vector<void*>& data, size_t count, DataType type,
                                        int root, int root_device,
                                        const std::vector<Stream>& streams,
                                        const CollectiveOptions& options) {
  const char* name = "cuda multi-device broadcast";
  State& s = *state_;
  s.check_root(name, root, root_device);
  const size_t bytes = checked_bytes(name, count, element_size(type), "the buffer");
  s.check_pointers(name, data, bytes, "buffers");
  s.check_streams(name, streams);
  const bool is_root = s.context.rank() == root;

  std::lock_guard<std::mutex> lock(s.mutex);
  DeviceLayer& first = *s.devices[0].layer;
  Stream lane = s.devices[0].lane;
  s.enter(streams);
  if (is_root && root_device != 0 && bytes > 0) {
    first.copy_on_device(data[0], data[static_cast<size_t>(root_device)], bytes, lane);
  }
  Work work = s.lead->broadcast(data[0], count, type, root, lane, options);
  s.fan_out(static_cast<std::byte*>(data[0]), 0, data, bytes, is_root ? root_device : -1, false,
            streams);
  return work;
}

Work MultiDeviceCommunicator::reduce(const std::vector<const void*>& inputs,
                                     const std::vector<void*>& outputs, size_t count, DataType type,
                                     ReduceOp op, int root, int root_device,
                                     const std::vector<Stream>& streams,
                                     const CollectiveOptions& options) {
  const char* name = "cuda multi-device reduce";
  State& s = *state_;
  check_device_op(name, s.context.rank(), type, op);
  s.check_root(name, root, root_device);
  const bool is_root = s.context.rank() == root;
  const size_t bytes = checked_bytes(name, count, element_size(type), "the buffer");
  s.check_pointers(name, inputs, bytes, "inputs");
  s.check_streams(name, streams);
  // Only the root's root device needs an output (the count of entries is checked everywhere).
  s.check_pointers(name, outputs, is_root ? bytes : 0, "outputs", root_device);
  if (is_root) {
    const auto d = static_cast<size_t>(root_device);
    check_overlap(name, s.context.rank(), inputs[d], bytes, outputs[d], bytes);
  }
  const ReduceOp combine = op == ReduceOp::kAvg ? ReduceOp::kSum : op;
  const int contributors = s.context.size() * devices();

  std::lock_guard<std::mutex> lock(s.mutex);
  // Scratch: [local sum, then the result on the root] [another device's input, with D > 1].
  s.reserve_scratch(s.devices.size() > 1 ? 2 * bytes : bytes);
  std::byte* sum = s.scratch;
  std::byte* other = s.scratch + bytes;
  DeviceLayer& first = *s.devices[0].layer;
  Stream lane = s.devices[0].lane;
  s.enter(streams);
  if (bytes > 0) {
    first.copy_on_device(sum, inputs[0], bytes, lane);
    for (size_t d = 1; d < s.devices.size(); ++d) {
      first.copy_on_device(other, inputs[d], bytes, lane);
      first.reduce(sum, other, count, type, combine, lane);
    }
  }
  Work work =
      s.lead->reduce(sum, is_root ? sum : nullptr, count, type, combine, root, lane, options);
  std::vector<void*> targets(s.devices.size(), nullptr);
  if (is_root) {
    if (op == ReduceOp::kAvg && count > 0) first.divide(sum, count, type, contributors, lane);
    if (root_device == 0 && bytes > 0) {
      first.copy_on_device(outputs[0], sum, bytes, lane);
    } else {
      targets[static_cast<size_t>(root_device)] = outputs[static_cast<size_t>(root_device)];
    }
  }
  s.fan_out(sum, 0, targets, bytes, -1, true, streams);
  return work;
}

Work MultiDeviceCommunicator::allgather(const std::vector<const void*>& inputs,
                                        const std::vector<void*>& outputs, size_t count,
                                        DataType type, const std::vector<Stream>& streams,
                                        const CollectiveOptions& options) {
  const char* name = "cuda multi-device allgather";
  State& s = *state_;
  const size_t e = element_size(type);
  const auto local = s.devices.size();
  const auto everyone = static_cast<size_t>(s.context.size()) * local;
  const size_t bytes = checked_bytes(name, count, e, "the input");
  const size_t total =
      checked_bytes(name, checked_bytes(name, count, everyone, "the output"), e, "the output");
  s.check_pointers(name, inputs, bytes, "inputs");
  s.check_pointers(name, outputs, total, "outputs");
  s.check_streams(name, streams);
  const size_t first_block = static_cast<size_t>(s.context.rank()) * local;
  for (size_t d = 0; d < local; ++d) {
    const auto own = static_cast<ptrdiff_t>((first_block + d) * bytes);
    check_overlap(name, s.context.rank(), inputs[d], bytes, outputs[d], total,
                  {true, own, "the input at its device's block of the output"});
  }

  std::lock_guard<std::mutex> lock(s.mutex);
  DeviceLayer& first = *s.devices[0].layer;
  Stream lane = s.devices[0].lane;
  s.enter(streams);
  // This rank's D blocks, contiguous in the lead's output: the cross-rank allgather moves them
  // as one block of D * count elements.
  std::byte* mine = at(outputs[0], first_block * bytes);
  for (size_t d = 0; d < local && bytes > 0; ++d) {
    if (inputs[d] != mine + d * bytes)
      first.copy_on_device(mine + d * bytes, inputs[d], bytes, lane);
  }
  Work work = s.lead->allgather(mine, outputs[0], count * local, type, lane, options);
  s.fan_out(static_cast<std::byte*>(outputs[0]), 0, outputs, total, -1, false, streams);
  return work;
}

Work MultiDeviceCommunicator::reduce_scatter(const std::vector<const void*>& inputs,
                                             const std::vector<void*>& outputs, size_t recv_count,
                                             DataType type, ReduceOp op,
                                             const std::vector<Stream>& streams,
                                             const CollectiveOptions& options) {
  const char* name = "cuda multi-device reduce_scatter";
  State& s = *state_;
  check_device_op(name, s.context.rank(), type, op);
  const size_t e = element_size(type);
  const auto local = s.devices.size();
  const auto everyone = static_cast<size_t>(s.context.size()) * local;
  const size_t bytes = checked_bytes(name, recv_count, e, "the output");
  const size_t total =
      checked_bytes(name, checked_bytes(name, recv_count, everyone, "the input"), e, "the input");
  s.check_pointers(name, inputs, total, "inputs");
  s.check_pointers(name, outputs, bytes, "outputs");
  s.check_streams(name, streams);
  for (size_t d = 0; d < local; ++d) {
    check_overlap(name, s.context.rank(), inputs[d], total, outputs[d], bytes);
  }
  const ReduceOp combine = op == ReduceOp::kAvg ? ReduceOp::kSum : op;
  const auto contributors = static_cast<int>(everyone);

  std::lock_guard<std::mutex> lock(s.mutex);
  // Scratch: [local sum: total] [this rank's D result blocks: D * bytes] [another device's
  // input: total, with D > 1].
  s.reserve_scratch(total + local * bytes + (local > 1 ? total : 0));
  std::byte* sum = s.scratch;
  std::byte* result = s.scratch + total;
  std::byte* other = result + local * bytes;
  DeviceLayer& first = *s.devices[0].layer;
  Stream lane = s.devices[0].lane;
  s.enter(streams);
  if (total > 0) {
    first.copy_on_device(sum, inputs[0], total, lane);
    for (size_t d = 1; d < local; ++d) {
      first.copy_on_device(other, inputs[d], total, lane);
      first.reduce(sum, other, recv_count * everyone, type, combine, lane);
    }
  }
  // Rank r receives blocks r * D .. r * D + D - 1: one block of D * recv_count per rank.
  Work work = s.lead->reduce_scatter(sum, result, recv_count * local, type, combine, lane, options);
  if (op == ReduceOp::kAvg && recv_count > 0) {
    first.divide(result, recv_count * local, type, contributors, lane);
  }
  if (bytes > 0) first.copy_on_device(outputs[0], result, bytes, lane);
  s.fan_out(result, bytes, outputs, bytes, -1, true, streams);
  return work;
}

Work MultiDeviceCommunicator::alltoall(const std::vector<const void*>& inputs,
                                       const std::vector<void*>& outputs, size_t count,
                                       DataType type, const std::vector<Stream>& streams,
                                       const CollectiveOptions& options) {
  const char* name = "cuda multi-device alltoall";
  State& s = *state_;
  const auto local = s.devices.size();
  const auto everyone = static_cast<size_t>(s.context.size()) * local;
  const size_t block = checked_bytes(name, count, element_size(type), "a block");
  const size_t total = checked_bytes(name, block, everyone, "the buffers");
  s.check_pointers(name, inputs, total, "inputs");
  s.check_pointers(name, outputs, total, "outputs");
  s.check_streams(name, streams);
  for (size_t d = 0; d < local; ++d) {
    check_overlap(name, s.context.rank(), inputs[d], total, outputs[d], total);
  }

  std::lock_guard<std::mutex> lock(s.mutex);
  // Scratch: [what this rank sends: D * total] [what it receives: D * total]. Both are laid out
  // by rank, and within a rank's part by (destination device, source device): the D * D blocks
  // one rank sends another go as one block of the cross-rank alltoall.
  const size_t half = checked_bytes(name, total, local, "the scratch");
  s.reserve_scratch(checked_bytes(name, half, 2, "the scratch"));
  std::byte* sent = s.scratch;
  std::byte* received = s.scratch + half;
  DeviceLayer& first = *s.devices[0].layer;
  Stream lane = s.devices[0].lane;
  s.enter(streams);
  // Contributor j = r' * D + d' gets block j of every device's input: block d of its D.
  for (size_t d = 0; d < local && block > 0; ++d) {
    for (size_t j = 0; j < everyone; ++j) {
      first.copy_on_device(sent + (j * local + d) * block,
                           static_cast<const std::byte*>(inputs[d]) + j * block, block, lane);
    }
  }
  Work work = s.lead->alltoall(sent, received, count * local * local, type, lane, options);
  // Device d' takes, from each rank r, the D blocks that rank's devices sent it: contiguous in
  // `received`, and contiguous (blocks r * D .. r * D + D - 1) in its output.
  const size_t ranks = static_cast<size_t>(s.context.size());
  auto copy_in = [&](size_t d, DeviceLayer& layer, Stream on) {
    for (size_t r = 0; r < ranks && block > 0; ++r) {
      layer.copy_on_device(at(outputs[d], r * local * block),
                           received + (r * local + d) * local * block, local * block, on);
    }
  };
  copy_in(0, first, lane);
  s.fan_out([&](size_t d) { copy_in(d, *s.devices[d].layer, s.devices[d].lane); }, true, streams);
  return work;
}

namespace {

// The blocking forms' last step: the host waits for what the call enqueued on every caller
// stream (a fresh event each, so that no other call's capture counts).
void wait_for_streams(MultiDeviceCommunicator& communicator, const Work& work,
                      const std::vector<Stream>& streams) {
  work.wait();
  for (size_t d = 0; d < streams.size(); ++d) {
    DeviceLayer& layer = communicator.layer(static_cast<int>(d));
    Event event = layer.create_event();
    try {
      layer.record(event, streams[d]);
      layer.synchronize_event(event);
    } catch (...) {
      layer.destroy_event(event);
      throw;
    }
    layer.destroy_event(event);
  }
}

}  // namespace

void allreduce(MultiDeviceCommunicator& communicator, const std::vector<const void*>& inputs,
               const std::vector<void*>& outputs, size_t count, DataType type, ReduceOp op,
               const std::vector<Stream>& streams, const CollectiveOptions& options) {
  wait_for_streams(communicator,
                   communicator.allreduce(inputs, outputs, count, type, op, streams, options),
                   streams);
}
void broadcast(MultiDeviceCommunicator& communicator, const std::vector<void*>& data, size_t count,
               DataType type, int root, int root_device, const std::vector<Stream>& streams,
               const CollectiveOptions& options) {
  wait_for_streams(communicator,
                   communicator.broadcast(data, count, type, root, root_device, streams, options),
                   streams);
}
void reduce(MultiDeviceCommunicator& communicator, const std::vector<const void*>& inputs,
            const std::vector<void*>& outputs, size_t count, DataType type, ReduceOp op, int root,
            int root_device, const std::vector<Stream>& streams, const CollectiveOptions& options) {
  wait_for_streams(
      communicator,
      communicator.reduce(inputs, outputs, count, type, op, root, root_device, streams, options),
      streams);
}
void alltoall(MultiDeviceCommunicator& communicator, const std::vector<const void*>& inputs,
              const std::vector<void*>& outputs, size_t count, DataType type,
              const std::vector<Stream>& streams, const CollectiveOptions& options) {
  wait_for_streams(communicator,
                   communicator.alltoall(inputs, outputs, count, type, streams, options), streams);
}
void allgather(MultiDeviceCommunicator& communicator, const std::vector<const void*>& inputs,
               const std::vector<void*>& outputs, size_t count, DataType type,
               const std::vector<Stream>& streams, const CollectiveOptions& options) {
  wait_for_streams(communicator,
                   communicator.allgather(inputs, outputs, count, type, streams, options), streams);
}

void reduce_scatter(MultiDeviceCommunicator& communicator, const std::vector<const void*>& inputs,
                    const std::vector<void*>& outputs, size_t recv_count, DataType type,
                    ReduceOp op, const std::vector<Stream>& streams,
                    const CollectiveOptions& options) {
  wait_for_streams(
      communicator,
      communicator.reduce_scatter(inputs, outputs, recv_count, type, op, streams, options),
      streams);
}

}  // namespace gloo_lite::cuda
