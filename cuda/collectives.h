// Collectives on device memory (namespace gloo_lite::cuda): the CPU collectives of
// gloo_lite/collectives.h run on pinned host staging buffers, fed and drained by a pipeline of
// device copies (docs/cuda.md has the design).
//
// A Communicator binds a Context to a DeviceLayer (cuda/device_layer.h: the CUDA runtime, or
// the host stand-in without a GPU) and owns the staging pool: `slots` pinned buffers of
// `slot_bytes` each, allocated once at construction and reused by every call. A call is split
// into chunks that fit a slot; while the CPU collective of chunk k is on the wire, the device
// copies chunk k+1 to the host and chunk k-1 back (one event per slot orders each hand-over).
//
// Stream-ordered calls (the Communicator's members) enqueue and return at once: the collective
// starts after the work enqueued on `stream` before the call, and work enqueued on `stream`
// after the call sees the result (the library holds the stream on a host-written counter until
// the pipeline has put the last chunk in place). The returned Work finishes right after the
// stream is let go (after its on_finish callbacks, which may then wait for the stream), with
// the call's error if it failed; a failed call still lets the stream go (its output is then
// undefined) and fails the context, so later calls fail at once (CPU collectives' rules). The
// buffers belong to the call until its Work has finished or the stream has passed it.
// The blocking forms (free functions below) are the stream-ordered ones plus Work::wait.
//
// Order. The calls of one Communicator run one at a time in the order they were made, on its own
// worker thread; every rank must make them in the same order (like one tag of the CPU
// collectives, which they use: CollectiveOptions::tag, default 0; do not run CPU collectives on
// that tag from another thread meanwhile). A call may come from any thread.
//
// Arguments follow gloo_lite/collectives.h (counts in elements, the same in-place rules, every
// DataType incl. float16 and bfloat16, every ReduceOp; kCustom not with ReduceOn::kDevice, since
// the custom function runs on the host staging buffer; kAuto puts it on the host). Invalid
// arguments throw InvalidArgument from the call, before anything is enqueued.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "cuda/device_layer.h"
#include "gloo_lite/collectives.h"
#include "gloo_lite/context.h"
#include "gloo_lite/types.h"
#include "gloo_lite/work.h"

namespace gloo_lite::cuda {

// Where allreduce and reduce combine received data (reduce_scatter always reduces on the host).
enum class ReduceOn : uint8_t {
  // The CPU collective reduces on the pinned chunk (gloo_lite's CPU kernels; bytes on the wire
  // as for the CPU path).
  kHost,
  // Every rank's chunk is gathered to the host (allgather, or gather to the root), copied to
  // device scratch and combined there by kernels in rank order (the same bits on every rank).
  // Costs P times the wire bytes of a ring allreduce: for few ranks and slow host reductions.
  kDevice,
  // Per call, by the cost formula of cuda/reduce_choice.h over speeds measured (or set by
  // knobs) at the Communicator's creation and agreed by every rank: the same choice everywhere.
  // kCustom always runs on the host.
  kAuto,
};

struct PipelineOptions {
  // Staging pool: `slots` pinned buffers of `slot_bytes`, allocated once (at least 2 slots).
  // A collective's chunk is the largest that fits a slot: slot_bytes for allreduce, reduce,
  // broadcast, send and recv; slot_bytes / P with ReduceOn::kDevice and for allgather;
  // / (P + 1) for reduce_scatter; / 2P for alltoall. Every rank must use the same options.
  size_t slot_bytes = size_t{4} << 20;
  int slots = 4;
  ReduceOn reduce_on = ReduceOn::kAuto;
  // The CPU-collective tag of the agreement the constructor runs (cuda/agreement.h); the rules
  // of CollectiveOptions::tag apply (no other thread's collectives on it meanwhile).
  uint16_t setup_tag = 0;
};

class Communicator {
 public:
  // Allocates the staging pool (and, for ReduceOn::kDevice and kAuto, device scratch of the same
  // size) and starts the worker thread. The context must outlive the Communicator. Collective
  // with more than one rank: every rank agrees on the GPUDirect path and, for kAuto, on the
  // speeds (one small CPU allreduce on options.setup_tag, after measuring for a few ms).
  Communicator(Context& context, std::shared_ptr<DeviceLayer> layer, PipelineOptions options = {});
  // Waits for every call made, then frees the pool.
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  Context& context() const;
  DeviceLayer& layer() const;
  const PipelineOptions& options() const;
  // Whether send/recv, broadcast and allgather hand device memory to the transport
  // (cuda/gpudirect.h; the same on every rank).
  bool gpudirect() const;
  // Whether allreduce / reduce of `count` elements would combine on the device (the same on
  // every rank).
  bool reduces_on_device(DataType type, ReduceOp op, size_t count) const;

  // Stream-ordered forms (see the top of this file). Device pointers throughout.
  Work allreduce(const void* input, void* output, size_t count, DataType type, ReduceOp op,
                 Stream stream, const CollectiveOptions& options = {});
  // In place on every rank: root's `data` is copied to every rank's `data`.
  Work broadcast(void* data, size_t count, DataType type, int root, Stream stream,
                 const CollectiveOptions& options = {});
  // The result lands in `output` on `root` only (output may be null elsewhere).
  Work reduce(const void* input, void* output, size_t count, DataType type, ReduceOp op, int root,
              Stream stream, const CollectiveOptions& options = {});
  // output holds size*count elements, block r from rank r.
  Work allgather(const void* input, void* output, size_t count, DataType type, Stream stream,
                 const CollectiveOptions& options = {});
  // input holds size*recv_count elements; rank r receives block r, reduced.
  Work reduce_scatter(const void* input, void* output, size_t recv_count, DataType type,
                      ReduceOp op, Stream stream, const CollectiveOptions& options = {});
  // input and output hold size*count elements; block j of rank i goes to block i of rank j.
  Work alltoall(const void* input, void* output, size_t count, DataType type, Stream stream,
                const CollectiveOptions& options = {});
  // Point-to-point (Context::send/recv tags: 0 <= tag < 2^63); matched in the order made.
  Work send(const void* data, size_t bytes, int peer, uint64_t tag, Stream stream);
  Work recv(void* data, size_t bytes, int peer, uint64_t tag, Stream stream);

  // Blocks until every call made so far has finished; throws the first error among them.
  void synchronize();

  class Engine;  // cuda/pipeline.h

 private:
  std::unique_ptr<Engine> engine_;
};

// Blocking forms: they return once the result is in the output buffer (and the stream has been
// let go); they throw the call's error.
void allreduce(Communicator& communicator, const void* input, void* output, size_t count,
               DataType type, ReduceOp op, Stream stream, const CollectiveOptions& options = {});
void broadcast(Communicator& communicator, void* data, size_t count, DataType type, int root,
               Stream stream, const CollectiveOptions& options = {});
void reduce(Communicator& communicator, const void* input, void* output, size_t count,
            DataType type, ReduceOp op, int root, Stream stream,
            const CollectiveOptions& options = {});
void allgather(Communicator& communicator, const void* input, void* output, size_t count,
               DataType type, Stream stream, const CollectiveOptions& options = {});
void reduce_scatter(Communicator& communicator, const void* input, void* output, size_t recv_count,
                    DataType type, ReduceOp op, Stream stream,
                    const CollectiveOptions& options = {});
void alltoall(Communicator& communicator, const void* input, void* output, size_t count,
              DataType type, Stream stream, const CollectiveOptions& options = {});
void send(Communicator& communicator, const void* data, size_t bytes, int peer, uint64_t tag,
          Stream stream);
void recv(Communicator& communicator, void* data, size_t bytes, int peer, uint64_t tag,
          Stream stream);

}  // namespace gloo_lite::cuda
