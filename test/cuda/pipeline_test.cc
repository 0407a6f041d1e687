// The staging pipeline of cuda/collectives.h, run by real processes (one Context each, TCP) on
// a device layer named in the test name:
//   HostStandIn/...  the host stand-in (cuda/host_stand_in.h) with injected random delays on
//                    every stream operation, and slots small enough for tens of chunks per
//                    call, so that a missing or misplaced wait in the pipeline reads a chunk
//                    before it is there (poisoned memory) and the result check fails;
//   Cuda/...         the CUDA layer on GPU 0; skipped, saying why, where cudaGetDeviceCount
//                    fails or this build has no CUDA.
// Every case uses the layer only through its stream: the input goes in with copy_to_device on
// the caller's stream, the collective is stream-ordered on it, the result comes back with
// copy_to_host on it, and the host waits for nothing but that stream. So the check also
// verifies stream order: the pipeline starts after the input copy and the result copy sees
// the pipeline's output. Results are checked against test/collectives/reference.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "cuda/collectives.h"
#include "cuda/host_stand_in.h"
#include "test/collectives/process_sync.h"
#include "test/collectives/reference.h"
#include "test/cuda/cuda_probe.h"
#include "test/transport/harness.h"

namespace gloo_lite::test {
namespace {

using namespace std::chrono_literals;
using cuda::ReduceOn;

enum class Layer { kHostStandIn, kCuda };
enum class Collective {
  kAllreduce,
  kBroadcast,
  kReduce,
  kAllgather,
  kReduceScatter,
  kAlltoall,
  kSendRecv
};

struct PipelineCase {
  Collective collective;
  DataType type;
  ReduceOp op;
  ReduceOn on;
  int ranks;
  size_t count;  // per rank block (allgather, reduce_scatter, alltoall) or whole buffer
  int root;
  bool in_place;
};

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::kAllreduce:
      return "allreduce";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kReduce:
      return "reduce";
    case Collective::kAllgather:
      return "allgather";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kAlltoall:
      return "alltoall";
    case Collective::kSendRecv:
      return "send_recv";
  }
  return "?";
}

bool reducing(Collective c) {
  return c == Collective::kAllreduce || c == Collective::kReduce || c == Collective::kReduceScatter;
}

// Element counts of one rank's input and output buffers.
size_t input_count(const PipelineCase& c) {
  const bool blocks =
      c.collective == Collective::kReduceScatter || c.collective == Collective::kAlltoall;
  return blocks ? c.count * static_cast<size_t>(c.ranks) : c.count;
}
size_t output_count(const PipelineCase& c) {
  const bool blocks =
      c.collective == Collective::kAllgather || c.collective == Collective::kAlltoall;
  return blocks ? c.count * static_cast<size_t>(c.ranks) : c.count;
}

std::shared_ptr<cuda::DeviceLayer> make_layer(Layer layer, int rank) {
  if (layer == Layer::kCuda) return cuda::cuda_device_layer(0);
  cuda::HostStandInOptions options;
  options.max_delay = 200us;
  options.seed = 1000 + static_cast<uint64_t>(rank);
  return cuda::host_stand_in_layer(options);
}

// One rank's part: stage the input, run the collective stream-ordered, bring the output back,
// check it.
void run_rank(Layer which, const PipelineCase& c, Context& context) {
  const int rank = context.rank();
  const int ranks = context.size();
  auto layer = make_layer(which, rank);
  cuda::PipelineOptions pipeline;
  // Small slots: tens of chunks per call, so every hand-over happens many times.
  pipeline.slot_bytes = 512;
  pipeline.slots = 3;
  pipeline.reduce_on = c.on;
  cuda::Communicator communicator(context, layer, pipeline);

  Inputs inputs;
  inputs.type = c.type;
  inputs.pattern = pattern_for(reducing(c.collective), c.op);
  inputs.seed = 7 + static_cast<uint64_t>(c.collective) * 31 + static_cast<uint64_t>(c.op);
  inputs.ranks = ranks;
  const size_t e = element_bytes(c.type);
  const size_t in_bytes = input_count(c) * e;
  const size_t out_bytes = output_count(c) * e;

  std::vector<std::byte> host_in(in_bytes), host_out(out_bytes);
  fill_inputs(inputs, rank, 0, input_count(c), host_in.data());
  cuda::Stream stream = layer->create_stream();
  void* device_in = layer->allocate_device(std::max(in_bytes, out_bytes));
  void* device_out = c.in_place ? device_in : layer->allocate_device(out_bytes);
  // allgather in place: the input is this rank's block of the output.
  const void* input = device_in;
  if (c.in_place && c.collective == Collective::kAllgather) {
    input = static_cast<std::byte*>(device_out) + static_cast<size_t>(rank) * in_bytes;
  }
  layer->copy_to_device(const_cast<void*>(input), host_in.data(), in_bytes, stream);

  CollectiveOptions options;
  if (c.op == ReduceOp::kCustom) options.custom = plus_one_function(c.type);
  Work last;  // the call the stream waits for last
  switch (c.collective) {
    case Collective::kAllreduce:
      last = communicator.allreduce(input, device_out, c.count, c.type, c.op, stream, options);
      break;
    case Collective::kBroadcast:
      last = communicator.broadcast(device_out, c.count, c.type, c.root, stream, options);
      break;
    case Collective::kReduce:
      last = communicator.reduce(input, device_out, c.count, c.type, c.op, c.root, stream, options);
      break;
    case Collective::kAllgather:
      last = communicator.allgather(input, device_out, c.count, c.type, stream, options);
      break;
    case Collective::kReduceScatter:
      last = communicator.reduce_scatter(input, device_out, c.count, c.type, c.op, stream, options);
      break;
    case Collective::kAlltoall:
      last = communicator.alltoall(input, device_out, c.count, c.type, stream, options);
      break;
    case Collective::kSendRecv: {
      // A ring in two phases so that no rank waits on a send nobody receives yet: even ranks
      // send first, odd ranks receive first (the calls of one Communicator run in order).
      const int next = (rank + 1) % ranks;
      const int previous = (rank + ranks - 1) % ranks;
      if (rank % 2 == 0) {
        last = communicator.send(input, in_bytes, next, 5, stream);
        last = communicator.recv(device_out, out_bytes, previous, 5, stream);
      } else {
        last = communicator.recv(device_out, out_bytes, previous, 5, stream);
        last = communicator.send(input, in_bytes, next, 5, stream);
      }
      break;
    }
  }
  layer->copy_to_host(host_out.data(), device_out, out_bytes, stream);
  layer->synchronize_stream(stream);  // nothing else: the stream's order must suffice
  // The work handle finishes once the stream has been let go (collectives.h): a moment later.
  EXPECT_TRUE(last.wait(std::chrono::seconds(30))) << "rank " << rank << ": work still open";
  communicator.synchronize();

  const std::string what = std::string("rank ") + std::to_string(rank) + " " +
                           collective_name(c.collective) + " on " + layer->name();
  Problems problems;
  const size_t count = c.count;
  switch (c.collective) {
    case Collective::kAllreduce:
      check_reduction(inputs, c.op, 0, count, host_out.data(), what, problems);
      break;
    case Collective::kReduce:
      if (rank == c.root) check_reduction(inputs, c.op, 0, count, host_out.data(), what, problems);
      break;
    case Collective::kBroadcast:
      check_copy(inputs, c.root, 0, count, host_out.data(), what, problems);
      break;
    case Collective::kAllgather:
      for (int r = 0; r < ranks; ++r) {
        check_copy(inputs, r, 0, count, host_out.data() + static_cast<size_t>(r) * count * e,
                   what + " block " + std::to_string(r), problems);
      }
      break;
    case Collective::kReduceScatter:
      check_reduction(inputs, c.op, static_cast<size_t>(rank) * count, count, host_out.data(), what,
                      problems);
      break;
    case Collective::kAlltoall:
      for (int r = 0; r < ranks; ++r) {
        check_copy(inputs, r, static_cast<size_t>(rank) * count, count,
                   host_out.data() + static_cast<size_t>(r) * count * e,
                   what + " block " + std::to_string(r), problems);
      }
      break;
    case Collective::kSendRecv:
      check_copy(inputs, (rank + ranks - 1) % ranks, 0, count, host_out.data(), what, problems);
      break;
  }
  // A few lines say it; thousands of wrong elements would not say more.
  for (size_t i = 0; i < problems.size() && i < 5; ++i) ADD_FAILURE() << problems[i];
  if (problems.size() > 5) ADD_FAILURE() << what << ": " << problems.size() << " problems";

  if (!c.in_place) layer->free_device(device_out);
  layer->free_device(device_in);
  layer->destroy_stream(stream);
}

struct Param {
  Layer layer;
  PipelineCase c;
};

// The test name says it all; without this GoogleTest prints the parameter as raw bytes.
void PrintTo(const Param& param, std::ostream* out) {
  *out << (param.layer == Layer::kCuda ? "cuda layer" : "host stand-in layer");
}

class Pipeline : public ::testing::TestWithParam<Param> {};

TEST_P(Pipeline, MatchesReference) {
  const Param& p = GetParam();
  if (p.layer == Layer::kCuda) {
    const std::string why = cuda_unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << "no usable GPU, CUDA layer not tested: " << why;
  }
  ContextOptions options;
  options.timeout = 30s;
  auto results = run_context_processes(
      p.c.ranks,
      [&](Context& context) {
        run_rank(p.layer, p.c, context);
        store_barrier(context, "done");
      },
      120s, options);
  expect_all_ok(results);
}

const PipelineCase kCases[] = {
    // collective, type, op, reduce on, P, count, root, in place
    {Collective::kAllreduce, DataType::kFloat32, ReduceOp::kSum, ReduceOn::kHost, 3, 1000, 0,
     false},
    {Collective::kAllreduce, DataType::kFloat32, ReduceOp::kSum, ReduceOn::kDevice, 3, 1000, 0,
     true},
    {Collective::kAllreduce, DataType::kFloat16, ReduceOp::kSum, ReduceOn::kDevice, 4, 777, 0,
     false},
    {Collective::kAllreduce, DataType::kBFloat16, ReduceOp::kMax, ReduceOn::kHost, 3, 777, 0, true},
    {Collective::kAllreduce, DataType::kBFloat16, ReduceOp::kAvg, ReduceOn::kDevice, 3, 500, 0,
     false},
    {Collective::kAllreduce, DataType::kFloat64, ReduceOp::kAvg, ReduceOn::kHost, 2, 300, 0, false},
    {Collective::kAllreduce, DataType::kInt32, ReduceOp::kProd, ReduceOn::kDevice, 3, 600, 0,
     false},
    {Collective::kAllreduce, DataType::kInt64, ReduceOp::kBxor, ReduceOn::kHost, 4, 300, 0, false},
    {Collective::kAllreduce, DataType::kUint8, ReduceOp::kBand, ReduceOn::kDevice, 3, 3000, 0,
     false},
    {Collective::kAllreduce, DataType::kUint32, ReduceOp::kMin, ReduceOn::kDevice, 2, 800, 0, true},
    {Collective::kAllreduce, DataType::kInt32, ReduceOp::kCustom, ReduceOn::kHost, 3, 600, 0,
     false},
    {Collective::kBroadcast, DataType::kFloat32, ReduceOp::kSum, ReduceOn::kHost, 3, 1000, 1, true},
    {Collective::kBroadcast, DataType::kUint8, ReduceOp::kSum, ReduceOn::kHost, 4, 4099, 0, true},
    {Collective::kReduce, DataType::kFloat32, ReduceOp::kSum, ReduceOn::kHost, 3, 1000, 2, false},
    {Collective::kReduce, DataType::kBFloat16, ReduceOp::kMin, ReduceOn::kDevice, 3, 700, 1, false},
    {Collective::kAllgather, DataType::kInt32, ReduceOp::kSum, ReduceOn::kHost, 3, 300, 0, false},
    {Collective::kAllgather, DataType::kFloat16, ReduceOp::kSum, ReduceOn::kHost, 4, 200, 0, true},
    {Collective::kReduceScatter, DataType::kFloat32, ReduceOp::kSum, ReduceOn::kHost, 3, 300, 0,
     false},
    {Collective::kAlltoall, DataType::kUint64, ReduceOp::kSum, ReduceOn::kHost, 3, 100, 0, false},
    {Collective::kSendRecv, DataType::kUint8, ReduceOp::kSum, ReduceOn::kHost, 4, 3000, 0, false},
};

std::vector<Param> params(Layer layer) {
  std::vector<Param> out;
  for (const PipelineCase& c : kCases) out.push_back({layer, c});
  return out;
}

std::string case_name(const ::testing::TestParamInfo<Param>& info) {
  const PipelineCase& c = info.param.c;
  std::string name = std::string(collective_name(c.collective)) + "_" + type_name(c.type);
  if (reducing(c.collective)) {
    name +=
        std::string("_") + op_name(c.op) + (c.on == ReduceOn::kHost ? "_on_host" : "_on_device");
  }
  if (c.collective == Collective::kBroadcast || c.collective == Collective::kReduce) {
    name += "_root" + std::to_string(c.root);
  }
  if (c.in_place) name += "_in_place";
  return name + "_P" + std::to_string(c.ranks);
}

// Calls chained on one stream, the caller's own work after them, and the blocking form: the
// second call must see the first's result, the kernel the second's, and the blocking form's
// result must be in place when it returns (device memory is host memory on the stand-in).
TEST(HostStandInStreamOrder, ChainedCallsThenTheCallersWorkThenBlockingForm) {
  constexpr int kRanks = 3;
  constexpr size_t kCount = 1000;
  ContextOptions options;
  options.timeout = 30s;
  auto results = run_context_processes(
      kRanks,
      [&](Context& context) {
        const int rank = context.rank();
        auto layer = make_layer(Layer::kHostStandIn, rank);
        cuda::PipelineOptions pipeline;
        pipeline.slot_bytes = 512;
        pipeline.slots = 2;
        cuda::Communicator communicator(context, layer, pipeline);
        cuda::Stream stream = layer->create_stream();
        // Element i of rank r: r * 1000 + i, exact in float32 for these sums.
        std::vector<float> host(kCount), back(kCount);
        for (size_t i = 0; i < kCount; ++i) host[i] = static_cast<float>(rank * 1000 + i);
        auto* data = static_cast<float*>(layer->allocate_device(kCount * sizeof(float)));
        layer->copy_to_device(data, host.data(), kCount * sizeof(float), stream);
        // Rank 1 doubles its copy before the broadcast, so the broadcast's data is not what
        // every rank already holds.
        communicator.allreduce(data, data, kCount, DataType::kFloat32, ReduceOp::kSum, stream);
        if (rank == 1)
          layer->reduce(data, data, kCount, DataType::kFloat32, ReduceOp::kSum, stream);
        communicator.broadcast(data, kCount, DataType::kFloat32, 1, stream);
        layer->reduce(data, data, kCount, DataType::kFloat32, ReduceOp::kSum, stream);
        layer->copy_to_host(back.data(), data, kCount * sizeof(float), stream);
        layer->synchronize_stream(stream);
        for (size_t i = 0; i < kCount; ++i) {
          const float sum = static_cast<float>(3000 + 3 * i);  // sum over r of r * 1000 + i
          ASSERT_EQ(back[i], 4 * sum) << "rank " << rank << " element " << i;
        }
        // Blocking: max over ranks of (rank + 1) * i, read straight from "device" memory.
        for (size_t i = 0; i < kCount; ++i) host[i] = static_cast<float>((rank + 1) * i);
        layer->copy_to_device(data, host.data(), kCount * sizeof(float), stream);
        cuda::allreduce(communicator, data, data, kCount, DataType::kFloat32, ReduceOp::kMax,
                        stream);
        for (size_t i = 0; i < kCount; ++i) {
          ASSERT_EQ(data[i], static_cast<float>(kRanks * i)) << "rank " << rank << " element " << i;
        }
        layer->free_device(data);
        layer->destroy_stream(stream);
        store_barrier(context, "done");
      },
      120s, options);
  expect_all_ok(results);
}

// Invalid calls throw InvalidArgument from the call and enqueue nothing: a valid call after
// them runs normally.
TEST(HostStandInArguments, InvalidCallsThrowBeforeAnythingIsEnqueued) {
  ContextOptions options;
  options.timeout = 30s;
  auto results = run_context_processes(
      2,
      [&](Context& context) {
        auto layer = make_layer(Layer::kHostStandIn, context.rank());
        cuda::PipelineOptions pipeline;
        pipeline.reduce_on = ReduceOn::kDevice;
        cuda::Communicator communicator(context, layer, pipeline);
        cuda::Stream stream = layer->create_stream();
        auto* data = static_cast<int32_t*>(layer->allocate_device(64 * sizeof(int32_t)));
        EXPECT_THROW(
            communicator.allreduce(data, data, 64, DataType::kFloat32, ReduceOp::kBand, stream),
            InvalidArgument);
        EXPECT_THROW(communicator.broadcast(data, 64, DataType::kInt32, 2, stream),
                     InvalidArgument);
        EXPECT_THROW(
            communicator.allreduce(nullptr, data, 64, DataType::kInt32, ReduceOp::kSum, stream),
            InvalidArgument);
        EXPECT_THROW(
            communicator.allreduce(data, data + 1, 64, DataType::kInt32, ReduceOp::kSum, stream),
            InvalidArgument);
        CollectiveOptions custom;
        custom.custom = plus_one_function(DataType::kInt32);
        EXPECT_THROW(communicator.allreduce(data, data, 64, DataType::kInt32, ReduceOp::kCustom,
                                            stream, custom),
                     InvalidArgument);  // a custom op runs on the host only
        EXPECT_THROW(
            communicator.allreduce(data, data, 64, DataType::kInt32, ReduceOp::kSum, nullptr),
            InvalidArgument);  // the stand-in has no legacy stream
        for (int i = 0; i < 64; ++i) data[i] = i + context.rank();
        cuda::allreduce(communicator, data, data, 64, DataType::kInt32, ReduceOp::kSum, stream);
        for (int i = 0; i < 64; ++i) ASSERT_EQ(data[i], 2 * i + 1) << "element " << i;
        layer->free_device(data);
        layer->destroy_stream(stream);
        store_barrier(context, "done");
      },
      60s, options);
  expect_all_ok(results);
}

INSTANTIATE_TEST_SUITE_P(HostStandIn, Pipeline, ::testing::ValuesIn(params(Layer::kHostStandIn)),
                         case_name);
INSTANTIATE_TEST_SUITE_P(Cuda, Pipeline, ::testing::ValuesIn(params(Layer::kCuda)), case_name);

}  // namespace
}  // namespace gloo_lite::test
