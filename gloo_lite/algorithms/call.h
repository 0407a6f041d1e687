// What an algorithm sees of one collective call: the context, the buffers (registered with the
// transport once per call), the element type and reduction, per-rank block counts, and a helper
// to post sends and receives under the call's tag and deadline.
//
// Every algorithm posts its sends and receives to a given peer in the same order on both sides,
// so one transport tag per call suffices: matching per (peer, tag) in posting order keeps steps
// and chunks apart.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "gloo_lite/collective_info.h"
#include "gloo_lite/context_engine.h"
#include "gloo_lite/reduction.h"
#include "gloo_lite/types.h"

namespace gloo_lite::algo {

// The collectives and their shapes: gloo_lite/collective_info.h.
using gloo_lite::Collective;
using gloo_lite::collective_name;
using gloo_lite::kCollectiveCount;

struct Call {
  ContextEngine* context = nullptr;
  transport::Mesh* mesh = nullptr;
  int rank = 0;
  int size = 1;
  Collective collective = Collective::kAllreduce;
  DataType type = DataType::kUint8;
  size_t element = 1;  // bytes per element
  ReduceOp op = ReduceOp::kSum;
  const ReduceFunction* custom = nullptr;
  int root = 0;
  // Element counts:
  //  allreduce, reduce, broadcast: count = the whole vector; blocks empty.
  //  reduce_scatter(v), allgather(v), gather(v), scatter(v): blocks[r] = rank r's block;
  //    input/output offsets are prefix sums (offsets[r]).
  //  alltoall(v): blocks = what this rank sends to each rank, recv_blocks = what it receives.
  size_t count = 0;
  std::vector<size_t> blocks;
  std::vector<size_t> offsets;  // prefix sums of blocks, in elements
  std::vector<size_t> recv_blocks;
  std::vector<size_t> recv_offsets;
  // Buffers. For in-place calls input == output (the API arranges the layout).
  const uint8_t* input = nullptr;
  uint8_t* output = nullptr;
  transport::Memory* input_memory = nullptr;
  transport::Memory* output_memory = nullptr;
  uint64_t tag = 0;
  // The call's fingerprint (gloo_lite/fingerprint.h), carried by every message Step posts so
  // that a peer in another call is caught where its message lands; kUnchecked: not carried.
  uint64_t fingerprint = transport::kUnchecked;
  Deadline deadline = Deadline::never();
  // Ranks per CPU on the busiest host (ContextEngine::ranks_per_core), for the tuner's host term.
  double ranks_per_core = 1;
  // The host of every rank where no context says it: a cluster described to gloo_lite_tuner, so
  // that the hierarchical family's supports and cost see its layout. Ignored with a context.
  const std::vector<std::string>* hosts = nullptr;

  // What every call on `context` shares, the part the tuner reads: context, ranks, host load,
  // collective, type, op and root. Buffers, counts, tag and deadline are the caller's to fill.
  static Call on(ContextEngine& context, Collective collective, DataType type, ReduceOp op,
                 int root);

  size_t bytes(size_t elements) const { return elements * element; }
  size_t total_bytes() const;  // bytes of the largest buffer this rank handles
  // Reduction helpers bound to this call's type and op.
  void reduce_into(void* dst, const void* src, size_t elements) const {
    gloo_lite::reduce_into(dst, src, elements, type, op, custom ? *custom : ReduceFunction());
  }
  void reduce_to(void* dst, const void* a, const void* b, size_t elements) const {
    gloo_lite::reduce_to(dst, a, b, elements, type, op, custom ? *custom : ReduceFunction());
  }
};

// Reusable scratch memory for one call, registered with the transport. It comes from a pool
// kept per (context, tag) and only grows, so steady-state calls allocate nothing.
class Scratch {
 public:
  Scratch(const Call& call, size_t bytes);
  uint8_t* data() const { return data_; }
  transport::Memory& memory() const { return *memory_; }

 private:
  uint8_t* data_;
  transport::Memory* memory_;
};

// Posts sends and receives of one algorithm step, under the call's tag and fingerprint, and
// waits for them together; pipelined algorithms also wait for single requests as they go.
class Step {
 public:
  explicit Step(const Call& call) : call_(call), unwinding_before_(std::uncaught_exceptions()) {}
  // Cancels what was posted but not waited (after an exception: as a failing call's, since
  // the exception fails the context, Mesh::cancel_failing).
  ~Step();
  Step(const Step&) = delete;
  Step& operator=(const Step&) = delete;

  transport::RequestPtr send(int peer, const transport::Memory& memory, size_t offset,
                             size_t bytes);
  transport::RequestPtr recv(int peer, transport::Memory& memory, size_t offset, size_t bytes);
  // Waits for everything posted since the last wait().
  void wait();
  // Waits for one request (posted through this Step) to complete.
  void wait(const transport::RequestPtr& request);

 private:
  const Call& call_;
  const int unwinding_before_;  // std::uncaught_exceptions() when the step began
  std::vector<transport::RequestPtr> requests_;
};

}  // namespace gloo_lite::algo
