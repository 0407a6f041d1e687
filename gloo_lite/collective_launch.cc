// The one path of every collective call (collective_launch.h): the checks every call shares,
// the algorithm's choice, and the run in the call's turn on its stream (numbered, recorded,
// cross-checked when asked, its failure turned into the context's).
#include "gloo_lite/collective_launch.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>
#include <optional>

#include "gloo_lite/algorithms/registry.h"
#include "gloo_lite/argument_checks.h"
#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"
#include "gloo_lite/collective_failure.h"
#include "gloo_lite/context_engine.h"
#include "gloo_lite/fingerprint.h"
#include "gloo_lite/stream.h"
#include "gloo_lite/transport/tag_space.h"

namespace gloo_lite {
namespace detail {

using algo::Call;
using algo::Collective;

Call describe_call(ContextEngine& context, Collective collective, DataType type, ReduceOp op,
                   int root, const CollectiveOptions& options) {
  const char* name = algo::collective_name(collective);
  context.require_creating_process(name);
  if (root < 0 || root >= context.size()) {
    throw InvalidArgument(std::string(name) + ": root " + std::to_string(root) +
                          " is not a rank of this context (size " + std::to_string(context.size()) +
                          ")");
  }
  Call call = Call::on(context, collective, type, op, root);  // checks the type
  check_op(name, context.rank(), type, op);
  if (op == ReduceOp::kCustom && !options.custom) {
    throw InvalidArgument(std::string(name) + ": ReduceOp::kCustom needs options.custom");
  }
  call.custom = op == ReduceOp::kCustom ? &options.custom : nullptr;
  return call;
}

size_t set_blocks(Call& call, const std::vector<size_t>& blocks, const char* what) {
  const char* name = algo::collective_name(call.collective);
  if (static_cast<int>(blocks.size()) != call.size) {
    throw InvalidArgument(std::string(name) + ": " + what + " has " +
                          std::to_string(blocks.size()) + " entries for " +
                          std::to_string(call.size) + " ranks");
  }
  size_t total = checked_total(name, blocks, call.element, what);
  call.blocks = blocks;
  call.offsets.assign(blocks.size(), 0);
  std::partial_sum(blocks.begin(), blocks.end() - 1, call.offsets.begin() + 1);
  return total;
}

namespace {

void require_buffer(const Call& call, const void* pointer, size_t elements, const char* what) {
  if (pointer == nullptr && elements > 0) {
    throw InvalidArgument(std::string(algo::collective_name(call.collective)) + " on rank " +
                          std::to_string(call.rank) + ": " + what + " is null for " +
                          std::to_string(elements) + " elements");
  }
}

FlightRecorder::Call record_of(const Call& call, const char* algorithm) {
  FlightRecorder::Call record;
  record.collective = algo::collective_name(call.collective);
  bool moves_data = call.collective != Collective::kBarrier;
  record.type = moves_data ? type_name(call.type) : "-";
  record.op = collective_info(call.collective).has_op ? op_name(call.op) : nullptr;
  record.root = collective_info(call.collective).rooted ? call.root : -1;
  record.elements = moves_data ? call.total_bytes() / call.element : 0;
  record.algorithm = algorithm;
  return record;
}

std::string exception_text(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

// Each collective's one in-place form (collectives.h). A pointer equality means in place only
// where it is that form: allgather's input == output is rank 0's own block, and on rank 1 an
// input at the output's start is data to be gathered, not "already in place".
InPlaceForm in_place_form(const Call& call) {
  const auto own = call.offsets.empty()
                       ? ptrdiff_t{0}
                       : static_cast<ptrdiff_t>(call.bytes(call.offsets[call.rank]));
  switch (call.collective) {
    case Collective::kAllgather:
      return {true, own, "the input at this rank's block of the output"};
    case Collective::kGather:  // at the root; elsewhere the output is ignored (null)
      return {true, own, "the input at the root's own block of the output"};
    case Collective::kScatter:  // at the root; elsewhere the input is ignored (null)
      return {true, -own, "the output at the root's own block of the input"};
    case Collective::kAlltoall:
      return {false, 0, "alltoall(v) has no in-place form: pass disjoint buffers"};
    default:
      return {};
  }
}

// Registers the buffers and runs the algorithm.
void run_algorithm(Call& call, const algo::Algorithm& algorithm, const void* input,
                   size_t input_bytes, void* output, size_t output_bytes) {
  auto& mesh = *call.mesh;
  // Both regions always exist (empty for a null buffer), so that algorithms may post the
  // empty messages that keep their sequences regular without special cases.
  // In place, one region serves both roles and must span the larger (reduce_scatter's
  // input, scatter's full buffer at the root).
  size_t output_span = input == output ? std::max(input_bytes, output_bytes) : output_bytes;
  // A mesh that registers by pointer (TCP, shared memory) takes regions made here, on the
  // stack: no allocation per call, which an 8-byte call would notice.
  const bool by_pointer = mesh.registers_by_pointer();
  std::optional<transport::Memory> output_plain, input_plain;
  std::unique_ptr<transport::Memory> output_registered, input_registered;
  auto region = [&](void* data, size_t bytes, std::optional<transport::Memory>& plain,
                    std::unique_ptr<transport::Memory>& registered) -> transport::Memory* {
    if (data == nullptr) bytes = 0;
    if (by_pointer) return &plain.emplace(data, bytes, transport::MemoryKind::kHost);
    registered = mesh.register_memory(data, bytes);
    return registered.get();
  };
  call.output_memory = region(output, output_span, output_plain, output_registered);
  call.input_memory = input == output ? call.output_memory
                                      : region(const_cast<void*>(input), input_bytes, input_plain,
                                               input_registered);
  call.input = static_cast<const uint8_t*>(input);
  call.output = static_cast<uint8_t*>(output);
  LOG_TRACE("coll", algo::collective_name(call.collective)
                        << " with " << algorithm.name << ", " << call.total_bytes() << " bytes");
  call.fingerprint = call_fingerprint(call, algorithm);
  algorithm.run(call);
}

// The algorithm for `call`, remembered per thread for the last few call shapes: ranking every
// algorithm (the tuner) costs about a third of an 8-byte shared-memory call, and its verdict
// depends only on what the key holds. Every `supports` and `cost` reads the call's shape
// (collective, type, op, root, counts) and what its context fixed at connect (size, ranks per
// core, hosts, knobs) or at creation (its network figure, network_probe.h); the knobs and the cost
// model are read once per process. The context is named by its address and its random id, so that a
// new context at a freed one's address does not reuse its verdicts. A miss (or a throw) asks
// choose_algorithm as before.
const algo::Algorithm& cached_choice(const Call& call, const std::string& requested) {
  struct Entry {
    const ContextEngine* context = nullptr;
    uint64_t context_id = 0;
    Collective collective = Collective::kAllreduce;
    DataType type = DataType::kUint8;
    ReduceOp op = ReduceOp::kSum;
    int root = 0;
    size_t count = 0;
    std::vector<size_t> blocks;
    std::vector<size_t> recv_blocks;
    std::string requested;
    const algo::Algorithm* algorithm = nullptr;
  };
  constexpr size_t kEntries = 8;  // a few shapes per thread (DDP buckets, a barrier, ...)
  thread_local std::array<Entry, kEntries> entries;
  thread_local size_t next = 0;
  const uint64_t id = call.context->id();
  for (const Entry& entry : entries) {
    if (entry.algorithm != nullptr && entry.context == call.context && entry.context_id == id &&
        entry.collective == call.collective && entry.type == call.type && entry.op == call.op &&
        entry.root == call.root && entry.count == call.count && entry.blocks == call.blocks &&
        entry.recv_blocks == call.recv_blocks && entry.requested == requested) {
      return *entry.algorithm;
    }
  }
  const algo::Algorithm& chosen = algo::choose_algorithm(call, requested);
  Entry& entry = entries[next];
  next = (next + 1) % kEntries;
  entry = Entry{call.context, id,          call.collective,  call.type, call.op, call.root,
                call.count,   call.blocks, call.recv_blocks, requested, &chosen};
  return chosen;
}

// The call's data movement on this rank's buffers: the algorithm, or the input as the result
// where there is nothing to exchange.
void move_data(Prepared& prepared) {
  Call& call = prepared.call;
  const void* input = prepared.input;
  void* output = prepared.output;
  // alltoallv's counts are per rank, so only the others can be known empty everywhere.
  bool empty_everywhere = collective_info(call.collective).moves_data &&
                          call.collective != Collective::kAlltoall && call.total_bytes() == 0;
  if (call.size == 1 || empty_everywhere) {
    // One rank, or nothing to move: the result is the input.
    if (output != nullptr && input != nullptr && output != input) {
      std::memmove(output, input, std::min(prepared.input_bytes, prepared.output_bytes));
    }
  } else {
    run_algorithm(call, *prepared.algorithm, input, prepared.input_bytes, output,
                  prepared.output_bytes);
  }
}

// Runs a prepared call in its turn on the stream: numbers it, checks across ranks when asked,
// runs the algorithm, and turns any failure into the context's (collective_failure.h).
void execute(Prepared& prepared, const detail::Turn& turn) {
  Call& call = prepared.call;
  const CollectiveOptions& options = *prepared.options;
  const algo::Algorithm& algorithm = *prepared.algorithm;
  const char* name = algo::collective_name(call.collective);
  ContextEngine& context = *call.context;
  auto what = [&] {
    return std::string(name) + " #" + std::to_string(turn.sequence) + " on tag " +
           std::to_string(options.tag);
  };
  // A work started in the parent and waited for in a forked child would run here, in the child.
  context.require_creating_process(name);
  std::string failure = context.failure();
  if (!failure.empty()) {
    throw ConnectionError(what() + " on rank " + std::to_string(call.rank) +
                          ": this context failed earlier (" + failure +
                          "); create a new context to go on");
  }
  call.custom = call.op == ReduceOp::kCustom ? &options.custom : nullptr;
  call.tag = tags::collective(options.tag, turn.sequence);
  const std::chrono::milliseconds timeout =
      options.timeout.count() > 0 ? options.timeout : context.timeout();
  call.deadline = Deadline::after(timeout);
  FlightRecorder::Call record = record_of(call, algorithm.name);
  FlightRecorder& recorder = context.flight_recorder();
  // The deadline's clock read is the call's start (one read, not two); a deadline that
  // saturated to never (a timeout past the clock's range) has no start in it.
  const Deadline::Clock::time_point started =
      call.deadline.is_never() ? Deadline::Clock::now() : call.deadline.time_point() - timeout;
  uint64_t entry = recorder.start(turn.sequence, options.tag, record, started);
  auto fail = [&](std::exception_ptr error) {
    recorder.finish(entry, FlightRecorder::State::kFailed, exception_text(error));
    fail_collective({&context, what(), FlightRecorder::describe_arguments(record), options.tag,
                     turn.sequence, timeout},
                    error);
  };
  static const bool check_from_env = knob_bool("GLOO_LITE_CHECK");  // read once, not per call
  if (options.check || check_from_env) {
    try {
      check_fingerprints(call, algorithm.name);
    } catch (const AgreedMismatch& error) {
      // Every rank found the same disagreement before any data moved: the context is intact.
      recorder.finish(entry, FlightRecorder::State::kFailed, error.what());
      throw;
    } catch (...) {
      fail(std::current_exception());
    }
  }
  try {
    if (prepared.before) prepared.before();
    move_data(prepared);
    turn.check_not_raced();
  } catch (...) {
    fail(std::current_exception());
  }
  recorder.finish(entry, FlightRecorder::State::kDone);
  if (prepared.after) prepared.after();
}

// A non-blocking call's own copy of what it was started with.
struct OwnedCall {
  Prepared prepared;
  CollectiveOptions options;
};

}  // namespace

Prepared prepare(Call&& call, const void* input, size_t input_elements, void* output,
                 size_t output_elements, const CollectiveOptions& options) {
  const char* name = algo::collective_name(call.collective);
  require_buffer(call, input, input_elements, "the input buffer");
  require_buffer(call, output, output_elements, "the output buffer");
  Prepared prepared;
  prepared.input_bytes = checked_bytes(name, input_elements, call.element, "the input");
  prepared.output_bytes = checked_bytes(name, output_elements, call.element, "the output");
  check_overlap(name, call.rank, input, prepared.input_bytes, output, prepared.output_bytes,
                in_place_form(call));
  prepared.algorithm = &cached_choice(call, options.algorithm);
  prepared.call = std::move(call);
  prepared.input = input;
  prepared.output = output;
  prepared.options = &options;
  return prepared;
}

Work launch(Prepared&& prepared, Mode mode) {
  const char* name = algo::collective_name(prepared.call.collective);
  const char* algorithm = prepared.algorithm->name;
  uint16_t tag = prepared.options->tag;
  detail::Stream& stream = prepared.call.context->stream(tag);
  if (mode == Mode::kBlocking) {
    stream.run_blocking(name, algorithm,
                        [&prepared](const detail::Turn& turn) { execute(prepared, turn); });
    return Work();
  }
  CollectiveOptions options = *prepared.options;
  auto owned = std::make_shared<OwnedCall>(OwnedCall{std::move(prepared), std::move(options)});
  owned->prepared.options = &owned->options;
  auto work = std::make_shared<detail::CollectiveWork>(
      name, tag, algorithm, [owned](const detail::Turn& turn) { execute(owned->prepared, turn); });
  stream.start(work);
  return Work(work);
}

}  // namespace detail
}  // namespace gloo_lite
