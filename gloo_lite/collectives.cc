// The public collectives: each one's argument forms (counts, roots, in-place, the v forms and
// their equal-count shorthands, averages) onto the one path of every call
// (collective_launch.h), blocking or not; and core's own collectives on an engine.
#include "gloo_lite/collectives.h"

#include <cstring>
#include <functional>
#include <numeric>

#include "gloo_lite/argument_checks.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/collective_launch.h"
#include "gloo_lite/context_engine.h"
#include "gloo_lite/engine_collectives.h"

namespace gloo_lite {
namespace {

using algo::Call;
using algo::Collective;
using detail::describe_call;
using detail::launch;
using detail::Mode;
using detail::prepare;
using detail::Prepared;
using detail::set_blocks;

// Averages: the sum, divided by P on the ranks that hold a result.
std::function<void()> average_after(ReduceOp op, void* output, size_t count, DataType type,
                                    int size) {
  if (op != ReduceOp::kAvg || output == nullptr) return nullptr;
  return [=] { finish_average(output, count, type, size); };
}

Work allreduce_call(ContextEngine& context, const void* input, void* output, size_t count,
                    DataType type, ReduceOp op, const CollectiveOptions& options, Mode mode) {
  Call call = describe_call(context, Collective::kAllreduce, type, op, 0, options);
  call.count = count;
  Prepared prepared = prepare(std::move(call), input, count, output, count, options);
  prepared.after = average_after(op, output, count, type, context.size());
  return launch(std::move(prepared), mode);
}

Work reduce_call(ContextEngine& context, const void* input, void* output, size_t count,
                 DataType type, ReduceOp op, int root, const CollectiveOptions& options,
                 Mode mode) {
  Call call = describe_call(context, Collective::kReduce, type, op, root, options);
  call.count = count;
  bool is_root = context.rank() == root;
  if (!is_root) output = nullptr;
  Prepared prepared = prepare(std::move(call), input, count, output, is_root ? count : 0, options);
  prepared.after = average_after(op, output, count, type, context.size());
  return launch(std::move(prepared), mode);
}

Work reduce_scatterv_call(ContextEngine& context, const void* input, void* output,
                          const std::vector<size_t>& recv_counts, DataType type, ReduceOp op,
                          const CollectiveOptions& options, Mode mode) {
  Call call = describe_call(context, Collective::kReduceScatter, type, op, 0, options);
  size_t total = set_blocks(call, recv_counts, "recv_counts");
  size_t mine = recv_counts[context.rank()];
  Prepared prepared = prepare(std::move(call), input, total, output, mine, options);
  prepared.after = average_after(op, output, mine, type, context.size());
  return launch(std::move(prepared), mode);
}

Work allgatherv_call(ContextEngine& context, const void* input, void* output,
                     const std::vector<size_t>& counts, DataType type,
                     const CollectiveOptions& options, Mode mode) {
  Call call = describe_call(context, Collective::kAllgather, type, ReduceOp::kSum, 0, options);
  size_t total = set_blocks(call, counts, "counts");
  size_t mine = counts[context.rank()];
  const size_t own_at = call.bytes(call.offsets[call.rank]);
  const size_t own_bytes = call.bytes(mine);
  Prepared prepared = prepare(std::move(call), input, mine, output, total, options);
  uint8_t* own = static_cast<uint8_t*>(output) + own_at;  // output is not null past prepare
  const bool in_place = input == own;
  // The algorithms gather in the output alone (input == output): out of place, our own block is
  // the one copy needed, made when the call's turn comes (the output may still be in use by the
  // calls before it).
  prepared.input = output;
  prepared.input_bytes = prepared.output_bytes;
  if (!in_place && own_bytes > 0) {
    prepared.before = [own, input, own_bytes] { std::memcpy(own, input, own_bytes); };
  }
  return launch(std::move(prepared), mode);
}

Work gatherv_call(ContextEngine& context, const void* input, void* output,
                  const std::vector<size_t>& counts, DataType type, int root,
                  const CollectiveOptions& options, Mode mode) {
  Call call = describe_call(context, Collective::kGather, type, ReduceOp::kSum, root, options);
  size_t total = set_blocks(call, counts, "counts");
  bool is_root = context.rank() == root;
  return launch(prepare(std::move(call), input, counts[context.rank()], is_root ? output : nullptr,
                        is_root ? total : 0, options),
                mode);
}

Work scatterv_call(ContextEngine& context, const void* input, void* output,
                   const std::vector<size_t>& counts, DataType type, int root,
                   const CollectiveOptions& options, Mode mode) {
  Call call = describe_call(context, Collective::kScatter, type, ReduceOp::kSum, root, options);
  size_t total = set_blocks(call, counts, "counts");
  bool is_root = context.rank() == root;
  return launch(prepare(std::move(call), is_root ? input : nullptr, is_root ? total : 0, output,
                        counts[context.rank()], options),
                mode);
}

Work broadcast_call(ContextEngine& context, void* data, size_t count, DataType type, int root,
                    const CollectiveOptions& options, Mode mode) {
  Call call = describe_call(context, Collective::kBroadcast, type, ReduceOp::kSum, root, options);
  call.count = count;
  return launch(prepare(std::move(call), data, count, data, count, options), mode);
}

Work alltoallv_call(ContextEngine& context, const void* input,
                    const std::vector<size_t>& send_counts, void* output,
                    const std::vector<size_t>& recv_counts, DataType type,
                    const CollectiveOptions& options, Mode mode) {
  Call call = describe_call(context, Collective::kAlltoall, type, ReduceOp::kSum, 0, options);
  set_blocks(call, send_counts, "send_counts");
  if (static_cast<int>(recv_counts.size()) != context.size()) {
    throw InvalidArgument("alltoallv: recv_counts has " + std::to_string(recv_counts.size()) +
                          " entries for " + std::to_string(context.size()) + " ranks");
  }
  call.recv_blocks = recv_counts;
  call.recv_offsets.assign(recv_counts.size(), 0);
  std::partial_sum(recv_counts.begin(), recv_counts.end() - 1, call.recv_offsets.begin() + 1);
  size_t sent = checked_total("alltoallv", send_counts, call.element, "send_counts");
  size_t received = checked_total("alltoallv", recv_counts, call.element, "recv_counts");
  if (send_counts[context.rank()] != recv_counts[context.rank()]) {
    throw InvalidArgument("alltoallv on rank " + std::to_string(context.rank()) +
                          ": the block to itself is " +
                          std::to_string(send_counts[context.rank()]) + " elements sent but " +
                          std::to_string(recv_counts[context.rank()]) + " received");
  }
  return launch(prepare(std::move(call), input, sent, output, received, options), mode);
}

Work barrier_call(ContextEngine& context, const CollectiveOptions& options, Mode mode) {
  Call call =
      describe_call(context, Collective::kBarrier, DataType::kUint8, ReduceOp::kSum, 0, options);
  return launch(prepare(std::move(call), nullptr, 0, nullptr, 0, options), mode);
}

std::vector<size_t> equal_blocks(const ContextEngine& context, size_t count) {
  return std::vector<size_t>(context.size(), count);
}

}  // namespace

// The blocking forms and the non-blocking ones: one path each (Mode says which).
void allreduce(Context& c, const void* input, void* output, size_t count, DataType type,
               ReduceOp op, const CollectiveOptions& options) {
  allreduce_call(engine_of(c), input, output, count, type, op, options, Mode::kBlocking);
}
Work iallreduce(Context& c, const void* input, void* output, size_t count, DataType type,
                ReduceOp op, const CollectiveOptions& options) {
  return allreduce_call(engine_of(c), input, output, count, type, op, options, Mode::kNonBlocking);
}

void reduce(Context& c, const void* input, void* output, size_t count, DataType type, ReduceOp op,
            int root, const CollectiveOptions& options) {
  reduce_call(engine_of(c), input, output, count, type, op, root, options, Mode::kBlocking);
}
Work ireduce(Context& c, const void* input, void* output, size_t count, DataType type, ReduceOp op,
             int root, const CollectiveOptions& options) {
  return reduce_call(engine_of(c), input, output, count, type, op, root, options,
                     Mode::kNonBlocking);
}

void reduce_scatterv(Context& c, const void* input, void* output,
                     const std::vector<size_t>& recv_counts, DataType type, ReduceOp op,
                     const CollectiveOptions& options) {
  reduce_scatterv_call(engine_of(c), input, output, recv_counts, type, op, options,
                       Mode::kBlocking);
}
Work ireduce_scatterv(Context& c, const void* input, void* output,
                      const std::vector<size_t>& recv_counts, DataType type, ReduceOp op,
                      const CollectiveOptions& options) {
  return reduce_scatterv_call(engine_of(c), input, output, recv_counts, type, op, options,
                              Mode::kNonBlocking);
}
void reduce_scatter(Context& c, const void* input, void* output, size_t recv_count, DataType type,
                    ReduceOp op, const CollectiveOptions& options) {
  reduce_scatterv_call(engine_of(c), input, output, equal_blocks(engine_of(c), recv_count), type,
                       op, options, Mode::kBlocking);
}
Work ireduce_scatter(Context& c, const void* input, void* output, size_t recv_count, DataType type,
                     ReduceOp op, const CollectiveOptions& options) {
  return reduce_scatterv_call(engine_of(c), input, output, equal_blocks(engine_of(c), recv_count),
                              type, op, options, Mode::kNonBlocking);
}

void allgatherv(Context& c, const void* input, void* output, const std::vector<size_t>& counts,
                DataType type, const CollectiveOptions& options) {
  allgatherv_call(engine_of(c), input, output, counts, type, options, Mode::kBlocking);
}
Work iallgatherv(Context& c, const void* input, void* output, const std::vector<size_t>& counts,
                 DataType type, const CollectiveOptions& options) {
  return allgatherv_call(engine_of(c), input, output, counts, type, options, Mode::kNonBlocking);
}
void allgather(Context& c, const void* input, void* output, size_t count, DataType type,
               const CollectiveOptions& options) {
  allgatherv_call(engine_of(c), input, output, equal_blocks(engine_of(c), count), type, options,
                  Mode::kBlocking);
}
Work iallgather(Context& c, const void* input, void* output, size_t count, DataType type,
                const CollectiveOptions& options) {
  return allgatherv_call(engine_of(c), input, output, equal_blocks(engine_of(c), count), type,
                         options, Mode::kNonBlocking);
}

void gatherv(Context& c, const void* input, void* output, const std::vector<size_t>& counts,
             DataType type, int root, const CollectiveOptions& options) {
  gatherv_call(engine_of(c), input, output, counts, type, root, options, Mode::kBlocking);
}
Work igatherv(Context& c, const void* input, void* output, const std::vector<size_t>& counts,
              DataType type, int root, const CollectiveOptions& options) {
  return gatherv_call(engine_of(c), input, output, counts, type, root, options, Mode::kNonBlocking);
}
void gather(Context& c, const void* input, void* output, size_t count, DataType type, int root,
            const CollectiveOptions& options) {
  gatherv_call(engine_of(c), input, output, equal_blocks(engine_of(c), count), type, root, options,
               Mode::kBlocking);
}
Work igather(Context& c, const void* input, void* output, size_t count, DataType type, int root,
             const CollectiveOptions& options) {
  return gatherv_call(engine_of(c), input, output, equal_blocks(engine_of(c), count), type, root,
                      options, Mode::kNonBlocking);
}

void scatterv(Context& c, const void* input, void* output, const std::vector<size_t>& counts,
              DataType type, int root, const CollectiveOptions& options) {
  scatterv_call(engine_of(c), input, output, counts, type, root, options, Mode::kBlocking);
}
Work iscatterv(Context& c, const void* input, void* output, const std::vector<size_t>& counts,
               DataType type, int root, const CollectiveOptions& options) {
  return scatterv_call(engine_of(c), input, output, counts, type, root, options,
                       Mode::kNonBlocking);
}
void scatter(Context& c, const void* input, void* output, size_t count, DataType type, int root,
             const CollectiveOptions& options) {
  scatterv_call(engine_of(c), input, output, equal_blocks(engine_of(c), count), type, root, options,
                Mode::kBlocking);
}
Work iscatter(Context& c, const void* input, void* output, size_t count, DataType type, int root,
              const CollectiveOptions& options) {
  return scatterv_call(engine_of(c), input, output, equal_blocks(engine_of(c), count), type, root,
                       options, Mode::kNonBlocking);
}

void broadcast(Context& c, void* data, size_t count, DataType type, int root,
               const CollectiveOptions& options) {
  broadcast_call(engine_of(c), data, count, type, root, options, Mode::kBlocking);
}
Work ibroadcast(Context& c, void* data, size_t count, DataType type, int root,
                const CollectiveOptions& options) {
  return broadcast_call(engine_of(c), data, count, type, root, options, Mode::kNonBlocking);
}

void alltoallv(Context& c, const void* input, const std::vector<size_t>& send_counts, void* output,
               const std::vector<size_t>& recv_counts, DataType type,
               const CollectiveOptions& options) {
  alltoallv_call(engine_of(c), input, send_counts, output, recv_counts, type, options,
                 Mode::kBlocking);
}
Work ialltoallv(Context& c, const void* input, const std::vector<size_t>& send_counts, void* output,
                const std::vector<size_t>& recv_counts, DataType type,
                const CollectiveOptions& options) {
  return alltoallv_call(engine_of(c), input, send_counts, output, recv_counts, type, options,
                        Mode::kNonBlocking);
}
void alltoall(Context& c, const void* input, void* output, size_t count, DataType type,
              const CollectiveOptions& options) {
  alltoallv_call(engine_of(c), input, equal_blocks(engine_of(c), count), output,
                 equal_blocks(engine_of(c), count), type, options, Mode::kBlocking);
}
Work ialltoall(Context& c, const void* input, void* output, size_t count, DataType type,
               const CollectiveOptions& options) {
  return alltoallv_call(engine_of(c), input, equal_blocks(engine_of(c), count), output,
                        equal_blocks(engine_of(c), count), type, options, Mode::kNonBlocking);
}

void barrier(Context& c, const CollectiveOptions& options) {
  barrier_call(engine_of(c), options, Mode::kBlocking);
}
Work ibarrier(Context& c, const CollectiveOptions& options) {
  return barrier_call(engine_of(c), options, Mode::kNonBlocking);
}

// Core's own collectives on an engine (gloo_lite/engine_collectives.h): the public path, from
// the handle's engine on.
void allreduce(ContextEngine& engine, const void* input, void* output, size_t count, DataType type,
               ReduceOp op, const CollectiveOptions& options) {
  allreduce_call(engine, input, output, count, type, op, options, Mode::kBlocking);
}

void allgather(ContextEngine& engine, const void* input, void* output, size_t count, DataType type,
               const CollectiveOptions& options) {
  allgatherv_call(engine, input, output, equal_blocks(engine, count), type, options,
                  Mode::kBlocking);
}

}  // namespace gloo_lite
