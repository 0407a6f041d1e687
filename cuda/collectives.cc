// The collectives of cuda/collectives.h as chunk plans for the staging pipeline (cuda/pipeline.h):
// per collective, how a chunk is staged into a slot, which CPU collective moves it, and how it
// is drained into the output. The slot's layout per chunk of n elements (e bytes each, P ranks):
//   allreduce, reduce, broadcast, send, recv:  [chunk]                       (1 block)
//   ... with ReduceOn::kDevice:                [rank 0's chunk] ... [P-1's]  (P blocks, gathered)
//   allgather:                                 [rank 0's chunk] ... [P-1's]  (P blocks)
//   reduce_scatter:                            [P input blocks] [result]     (P + 1 blocks)
//   alltoall:                                  [P send blocks] [P received]  (2P blocks)
#include "cuda/collectives.h"

#include <algorithm>
#include <string>
#include <utility>

#include "cuda/gpudirect.h"
#include "cuda/pipeline.h"
#include "gloo_lite/argument_checks.h"

namespace gloo_lite::cuda {
namespace {

// `count` elements in chunks of `per_chunk` (a slot's worth for the plan).
struct Chunking {
  size_t count;
  size_t per_chunk;
  size_t chunks() const { return (count + per_chunk - 1) / per_chunk; }
  size_t first(size_t chunk) const { return chunk * per_chunk; }
  size_t size(size_t chunk) const { return std::min(per_chunk, count - first(chunk)); }
};

Chunking chunking(const Lanes& lanes, size_t count, size_t element, size_t blocks) {
  return {count, std::max<size_t>(1, lanes.slot_bytes / (element * blocks))};
}

const std::byte* at(const void* base, size_t offset) {
  return static_cast<const std::byte*>(base) + offset;
}
std::byte* at(void* base, size_t offset) { return static_cast<std::byte*>(base) + offset; }

void stage_copy(Lanes& lanes, void* host, const void* device, size_t bytes) {
  if (bytes > 0) lanes.layer->copy_to_host(host, device, bytes, lanes.to_host);
}
void drain_copy(Lanes& lanes, void* device, const void* host, size_t bytes) {
  if (bytes > 0) lanes.layer->copy_to_device(device, host, bytes, lanes.to_device);
}

// The rank-blocked collectives (allgather, reduce_scatter, alltoall): `blocks` blocks of
// `block` bytes, packed side by side in the slot and `stride` bytes apart in the user's buffer
// (each rank's block of a chunk sits in that rank's part of the buffer).
void stage_blocks(Lanes& lanes, std::byte* host, const void* device, size_t blocks, size_t stride,
                  size_t block) {
  for (size_t r = 0; r < blocks; ++r)
    stage_copy(lanes, host + r * block, at(device, r * stride), block);
}
void drain_blocks(Lanes& lanes, void* device, const std::byte* host, size_t blocks, size_t stride,
                  size_t block) {
  for (size_t r = 0; r < blocks; ++r)
    drain_copy(lanes, at(device, r * stride), host + r * block, block);
}

// ReduceOn::kDevice: the slot holds every rank's n elements, rank order; `out` gets them
// combined on the device, in rank order, so that every rank computes the same bits.
void combine_on_device(Lanes& lanes, Slot& slot, void* out, size_t n, size_t element, int ranks,
                       DataType type, ReduceOp op) {
  const size_t bytes = n * element;
  DeviceLayer& layer = *lanes.layer;
  drain_copy(lanes, slot.scratch, slot.host, bytes * static_cast<size_t>(ranks));
  layer.copy_on_device(out, slot.scratch, bytes, lanes.to_device);
  for (int r = 1; r < ranks; ++r) {
    layer.reduce(out, slot.scratch + bytes * static_cast<size_t>(r), n, type, op, lanes.to_device);
  }
  if (op == ReduceOp::kAvg) layer.divide(out, n, type, ranks, lanes.to_device);
}

// The bytes of `ranks` blocks of `count` elements of `element` bytes; what overflows is refused.
size_t checked_blocks(const char* collective, size_t count, size_t ranks, size_t element,
                      const char* what) {
  return checked_bytes(collective, checked_bytes(collective, count, ranks, what), element, what);
}

std::string describe(const char* collective, DataType type, const ReduceOp* op, size_t count) {
  std::string text = std::string(collective) + " (" + type_name(type);
  if (op != nullptr) text += std::string(" ") + op_name(*op);
  return text + ", " + std::to_string(count) + " elements)";
}

void check_pointer(const char* collective, const void* pointer, size_t bytes, const char* what) {
  if (pointer == nullptr && bytes > 0) {
    throw InvalidArgument(std::string(collective) + ": " + what + " is null but holds " +
                          std::to_string(bytes) + " bytes");
  }
}

// `what`: "root" or "peer".
void check_rank(const char* collective, const Context& context, int rank, const char* what) {
  if (rank < 0 || rank >= context.size()) {
    throw InvalidArgument(std::string(collective) + ": " + what + " " + std::to_string(rank) +
                          " is not a rank of " + context.describe() + " (0.." +
                          std::to_string(context.size() - 1) + ")");
  }
}

void check_reduction(const char* collective, const Communicator& communicator, DataType type,
                     ReduceOp op, bool device_capable) {
  check_op(collective, communicator.context().rank(), type, op);
  if (op == ReduceOp::kCustom && device_capable &&
      communicator.options().reduce_on == ReduceOn::kDevice) {
    throw InvalidArgument(std::string(collective) +
                          ": a custom operation runs on the host; use ReduceOn::kHost for it");
  }
}

}  // namespace

Communicator::Communicator(Context& context, std::shared_ptr<DeviceLayer> layer,
                           PipelineOptions options)
    : engine_(std::make_unique<Engine>(context, std::move(layer), options)) {}

Communicator::~Communicator() = default;

Context& Communicator::context() const { return engine_->context; }
DeviceLayer& Communicator::layer() const { return *engine_->layer; }
const PipelineOptions& Communicator::options() const { return engine_->options; }
bool Communicator::gpudirect() const { return engine_->agreement.gpudirect; }
bool Communicator::reduces_on_device(DataType type, ReduceOp op, size_t count) const {
  return cuda::reduces_on_device(engine_->options.reduce_on, engine_->agreement, type, op, count,
                                 engine_->context.size(), engine_->options.slot_bytes);
}
void Communicator::synchronize() { engine_->synchronize(); }

Work Communicator::allreduce(const void* input, void* output, size_t count, DataType type,
                             ReduceOp op, Stream stream, const CollectiveOptions& options) {
  const char* name = "cuda allreduce";
  const size_t e = element_size(type);
  check_reduction(name, *this, type, op, true);
  const size_t bytes = checked_bytes(name, count, e, "the buffer");
  check_pointer(name, input, bytes, "input");
  check_pointer(name, output, bytes, "output");
  Context& context = engine_->context;
  check_overlap(name, context.rank(), input, bytes, output, bytes);
  const bool on_device = reduces_on_device(type, op, count);
  auto body = [=, &context](Lanes& lanes) {
    const int ranks = context.size();
    const int rank = context.rank();
    const Chunking c = chunking(lanes, count, e, on_device ? static_cast<size_t>(ranks) : 1);
    ChunkSteps steps;
    steps.chunks = c.chunks();
    if (!on_device) {
      steps.stage = [&](size_t k, Slot& slot) {
        stage_copy(lanes, slot.host, at(input, c.first(k) * e), c.size(k) * e);
      };
      steps.wire = [&](size_t k, Slot& slot) {
        return iallreduce(context, slot.host, slot.host, c.size(k), type, op, options);
      };
      steps.drain = [&](size_t k, Slot& slot) {
        drain_copy(lanes, at(output, c.first(k) * e), slot.host, c.size(k) * e);
      };
    } else {
      steps.stage = [&](size_t k, Slot& slot) {
        stage_copy(lanes, slot.host + static_cast<size_t>(rank) * c.size(k) * e,
                   at(input, c.first(k) * e), c.size(k) * e);
      };
      steps.wire = [&](size_t k, Slot& slot) {
        return iallgather(context, slot.host + static_cast<size_t>(rank) * c.size(k) * e, slot.host,
                          c.size(k), type, options);
      };
      steps.drain = [&](size_t k, Slot& slot) {
        combine_on_device(lanes, slot, at(output, c.first(k) * e), c.size(k), e, ranks, type, op);
      };
    }
    run_chunks(lanes, steps);
  };
  return engine_->submit(describe("allreduce", type, &op, count), stream, body);
}

Work Communicator::broadcast(void* data, size_t count, DataType type, int root, Stream stream,
                             const CollectiveOptions& options) {
  const char* name = "cuda broadcast";
  const size_t e = element_size(type);
  Context& context = engine_->context;
  check_rank(name, context, root, "root");
  const size_t bytes = checked_bytes(name, count, e, "the buffer");
  check_pointer(name, data, bytes, "data");
  const bool direct = engine_->agreement.gpudirect;
  auto body = [=, &context](Lanes& lanes) {
    if (direct) return gpudirect_broadcast(lanes, context, data, bytes, root, options.tag);
    const bool is_root = context.rank() == root;
    const Chunking c = chunking(lanes, count, e, 1);
    ChunkSteps steps;
    steps.chunks = c.chunks();
    steps.stage = [&](size_t k, Slot& slot) {
      if (is_root) stage_copy(lanes, slot.host, at(data, c.first(k) * e), c.size(k) * e);
    };
    steps.wire = [&](size_t k, Slot& slot) {
      return ibroadcast(context, slot.host, c.size(k), type, root, options);
    };
    steps.drain = [&](size_t k, Slot& slot) {
      if (!is_root) drain_copy(lanes, at(data, c.first(k) * e), slot.host, c.size(k) * e);
    };
    run_chunks(lanes, steps);
  };
  return engine_->submit(describe("broadcast", type, nullptr, count), stream, body);
}

Work Communicator::reduce(const void* input, void* output, size_t count, DataType type, ReduceOp op,
                          int root, Stream stream, const CollectiveOptions& options) {
  const char* name = "cuda reduce";
  const size_t e = element_size(type);
  Context& context = engine_->context;
  check_rank(name, context, root, "root");
  check_reduction(name, *this, type, op, true);
  const size_t bytes = checked_bytes(name, count, e, "the buffer");
  const bool is_root = context.rank() == root;
  check_pointer(name, input, bytes, "input");
  if (is_root) {
    check_pointer(name, output, bytes, "output");
    check_overlap(name, context.rank(), input, bytes, output, bytes);
  }
  const bool on_device = reduces_on_device(type, op, count);
  auto body = [=, &context](Lanes& lanes) {
    const int ranks = context.size();
    const int rank = context.rank();
    const Chunking c = chunking(lanes, count, e, on_device ? static_cast<size_t>(ranks) : 1);
    ChunkSteps steps;
    steps.chunks = c.chunks();
    // Both placements stage this rank's chunk at its block (block 0 when reducing on the host).
    auto mine = [&](size_t k, Slot& slot) {
      return slot.host + (on_device ? static_cast<size_t>(rank) * c.size(k) * e : 0);
    };
    steps.stage = [&](size_t k, Slot& slot) {
      stage_copy(lanes, mine(k, slot), at(input, c.first(k) * e), c.size(k) * e);
    };
    steps.wire = [&](size_t k, Slot& slot) {
      void* result = is_root ? slot.host : nullptr;
      if (on_device) return igather(context, mine(k, slot), result, c.size(k), type, root, options);
      return ireduce(context, slot.host, result, c.size(k), type, op, root, options);
    };
    steps.drain = [&](size_t k, Slot& slot) {
      if (!is_root) return;
      void* out = at(output, c.first(k) * e);
      if (on_device) {
        combine_on_device(lanes, slot, out, c.size(k), e, ranks, type, op);
      } else {
        drain_copy(lanes, out, slot.host, c.size(k) * e);
      }
    };
    run_chunks(lanes, steps);
  };
  return engine_->submit(describe("reduce", type, &op, count), stream, body);
}

Work Communicator::allgather(const void* input, void* output, size_t count, DataType type,
                             Stream stream, const CollectiveOptions& options) {
  const char* name = "cuda allgather";
  const size_t e = element_size(type);
  Context& context = engine_->context;
  const auto ranks = static_cast<size_t>(context.size());
  const size_t bytes = checked_bytes(name, count, e, "the input");
  const size_t total = checked_blocks(name, count, ranks, e, "the output");
  check_pointer(name, input, bytes, "input");
  check_pointer(name, output, total, "output");
  const size_t own = static_cast<size_t>(context.rank()) * bytes;
  check_overlap(
      name, context.rank(), input, bytes, output, total,
      {true, static_cast<ptrdiff_t>(own), "the input at this rank's block of the output"});
  const bool direct = engine_->agreement.gpudirect;
  auto body = [=, &context](Lanes& lanes) {
    if (direct) return gpudirect_allgather(lanes, context, input, output, bytes, options.tag);
    const auto rank = static_cast<size_t>(context.rank());
    const Chunking c = chunking(lanes, count, e, ranks);
    ChunkSteps steps;
    steps.chunks = c.chunks();
    steps.stage = [&](size_t k, Slot& slot) {
      stage_copy(lanes, slot.host + rank * c.size(k) * e, at(input, c.first(k) * e), c.size(k) * e);
    };
    steps.wire = [&](size_t k, Slot& slot) {
      return iallgather(context, slot.host + rank * c.size(k) * e, slot.host, c.size(k), type,
                        options);
    };
    steps.drain = [&](size_t k, Slot& slot) {
      drain_blocks(lanes, at(output, c.first(k) * e), slot.host, ranks, count * e, c.size(k) * e);
    };
    run_chunks(lanes, steps);
  };
  return engine_->submit(describe("allgather", type, nullptr, count), stream, body);
}

Work Communicator::reduce_scatter(const void* input, void* output, size_t recv_count, DataType type,
                                  ReduceOp op, Stream stream, const CollectiveOptions& options) {
  const char* name = "cuda reduce_scatter";
  const size_t e = element_size(type);
  Context& context = engine_->context;
  const auto ranks = static_cast<size_t>(context.size());
  check_reduction(name, *this, type, op, false);
  const size_t bytes = checked_bytes(name, recv_count, e, "the output");
  const size_t total = checked_blocks(name, recv_count, ranks, e, "the input");
  check_pointer(name, input, total, "input");
  check_pointer(name, output, bytes, "output");
  check_overlap(name, context.rank(), input, total, output, bytes);
  auto body = [=, &context](Lanes& lanes) {
    const Chunking c = chunking(lanes, recv_count, e, ranks + 1);
    const size_t result_at = ranks * c.per_chunk * e;
    ChunkSteps steps;
    steps.chunks = c.chunks();
    steps.stage = [&](size_t k, Slot& slot) {
      stage_blocks(lanes, slot.host, at(input, c.first(k) * e), ranks, recv_count * e,
                   c.size(k) * e);
    };
    steps.wire = [&](size_t k, Slot& slot) {
      return ireduce_scatter(context, slot.host, slot.host + result_at, c.size(k), type, op,
                             options);
    };
    steps.drain = [&](size_t k, Slot& slot) {
      drain_copy(lanes, at(output, c.first(k) * e), slot.host + result_at, c.size(k) * e);
    };
    run_chunks(lanes, steps);
  };
  return engine_->submit(describe("reduce_scatter", type, &op, recv_count), stream, body);
}

Work Communicator::alltoall(const void* input, void* output, size_t count, DataType type,
                            Stream stream, const CollectiveOptions& options) {
  const char* name = "cuda alltoall";
  const size_t e = element_size(type);
  Context& context = engine_->context;
  const auto ranks = static_cast<size_t>(context.size());
  const size_t total = checked_blocks(name, count, ranks, e, "the buffers");
  check_pointer(name, input, total, "input");
  check_pointer(name, output, total, "output");
  check_overlap(name, context.rank(), input, total, output, total);
  auto body = [=, &context](Lanes& lanes) {
    const Chunking c = chunking(lanes, count, e, 2 * ranks);
    const size_t received_at = ranks * c.per_chunk * e;
    ChunkSteps steps;
    steps.chunks = c.chunks();
    steps.stage = [&](size_t k, Slot& slot) {
      stage_blocks(lanes, slot.host, at(input, c.first(k) * e), ranks, count * e, c.size(k) * e);
    };
    steps.wire = [&](size_t k, Slot& slot) {
      return ialltoall(context, slot.host, slot.host + received_at, c.size(k), type, options);
    };
    steps.drain = [&](size_t k, Slot& slot) {
      drain_blocks(lanes, at(output, c.first(k) * e), slot.host + received_at, ranks, count * e,
                   c.size(k) * e);
    };
    run_chunks(lanes, steps);
  };
  return engine_->submit(describe("alltoall", type, nullptr, count), stream, body);
}

Work Communicator::send(const void* data, size_t bytes, int peer, uint64_t tag, Stream stream) {
  const char* name = "cuda send";
  Context& context = engine_->context;
  check_rank(name, context, peer, "peer");
  check_pointer(name, data, bytes, "data");
  const bool direct = engine_->agreement.gpudirect;
  auto body = [=, &context](Lanes& lanes) {
    if (direct) return gpudirect_send(lanes, context, data, bytes, peer, tag);
    // The total first: slot-sized chunks alone cannot tell a receive of k slots from a longer
    // send (the receive would complete short and the send wait for its deadline).
    const uint64_t total = bytes;
    context.isend(peer, &total, sizeof total, tag).wait();
    const Chunking c = chunking(lanes, bytes, 1, 1);
    ChunkSteps steps;
    steps.chunks = c.chunks();
    steps.stage = [&](size_t k, Slot& slot) {
      stage_copy(lanes, slot.host, at(data, c.first(k)), c.size(k));
    };
    steps.wire = [&](size_t k, Slot& slot) {
      return context.isend(peer, slot.host, c.size(k), tag);
    };
    run_chunks(lanes, steps);
  };
  return engine_->submit("send of " + std::to_string(bytes) + " bytes to rank " +
                             std::to_string(peer) + " (tag " + std::to_string(tag) + ")",
                         stream, body);
}

Work Communicator::recv(void* data, size_t bytes, int peer, uint64_t tag, Stream stream) {
  const char* name = "cuda recv";
  Context& context = engine_->context;
  check_rank(name, context, peer, "peer");
  check_pointer(name, data, bytes, "data");
  const bool direct = engine_->agreement.gpudirect;
  auto body = [=, &context](Lanes& lanes) {
    if (direct) return gpudirect_recv(lanes, context, data, bytes, peer, tag);
    uint64_t total = 0;
    context.irecv(peer, &total, sizeof total, tag).wait();
    if (total != bytes) {
      const std::string why = std::string(name) + " of " + std::to_string(bytes) +
                              " bytes from rank " + std::to_string(peer) + " (tag " +
                              std::to_string(tag) + ") on rank " + std::to_string(context.rank()) +
                              ": rank " + std::to_string(peer) + ": size mismatch: rank " +
                              std::to_string(peer) + " sends " + std::to_string(total) +
                              " bytes; a send and its receive must have the same size";
      context.abort(why);  // the sender's chunks would wait for a receive that never comes
      throw MismatchError(why);
    }
    const Chunking c = chunking(lanes, bytes, 1, 1);
    ChunkSteps steps;
    steps.chunks = c.chunks();
    steps.wire = [&](size_t k, Slot& slot) {
      return context.irecv(peer, slot.host, c.size(k), tag);
    };
    steps.drain = [&](size_t k, Slot& slot) {
      drain_copy(lanes, at(data, c.first(k)), slot.host, c.size(k));
    };
    run_chunks(lanes, steps);
  };
  return engine_->submit("recv of " + std::to_string(bytes) + " bytes from rank " +
                             std::to_string(peer) + " (tag " + std::to_string(tag) + ")",
                         stream, body);
}

void allreduce(Communicator& communicator, const void* input, void* output, size_t count,
               DataType type, ReduceOp op, Stream stream, const CollectiveOptions& options) {
  communicator.allreduce(input, output, count, type, op, stream, options).wait();
}
void broadcast(Communicator& communicator, void* data, size_t count, DataType type, int root,
               Stream stream, const CollectiveOptions& options) {
  communicator.broadcast(data, count, type, root, stream, options).wait();
}
void reduce(Communicator& communicator, const void* input, void* output, size_t count,
            DataType type, ReduceOp op, int root, Stream stream, const CollectiveOptions& options) {
  communicator.reduce(input, output, count, type, op, root, stream, options).wait();
}
void allgather(Communicator& communicator, const void* input, void* output, size_t count,
               DataType type, Stream stream, const CollectiveOptions& options) {
  communicator.allgather(input, output, count, type, stream, options).wait();
}
void reduce_scatter(Communicator& communicator, const void* input, void* output, size_t recv_count,
                    DataType type, ReduceOp op, Stream stream, const CollectiveOptions& options) {
  communicator.reduce_scatter(input, output, recv_count, type, op, stream, options).wait();
}
void alltoall(Communicator& communicator, const void* input, void* output, size_t count,
              DataType type, Stream stream, const CollectiveOptions& options) {
  communicator.alltoall(input, output, count, type, stream, options).wait();
}
void send(Communicator& communicator, const void* data, size_t bytes, int peer, uint64_t tag,
          Stream stream) {
  communicator.send(data, bytes, peer, tag, stream).wait();
}
void recv(Communicator& communicator, void* data, size_t bytes, int peer, uint64_t tag,
          Stream stream) {
  communicator.recv(data, bytes, peer, tag, stream).wait();
}

}  // namespace gloo_lite::cuda
