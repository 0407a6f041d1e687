// Several devices per process (cuda/multi_device.h), run by real processes (one Context each,
// TCP), P ranks x D devices, on a device layer named in the test name:
//   HostStandIn/...  D host stand-in devices per process (cuda/host_stand_in.h), each with its
//                    own injected random delays and poisoned fresh memory, and small staging
//                    slots, so that a missing wait between a caller stream, a device's lane
//                    and the lead shows as a wrong or poisoned value;
//   Cuda/...         D CUDA layers on GPU 0 (one GPU plays every device: the events and copies
//                    between layers are exercised, not peer transfers); skipped, saying why,
//                    where cudaGetDeviceCount fails or this build has no CUDA.
// Each device's input goes in with copy_to_device on that device's caller stream and comes back
// with copy_to_host on it; the host waits for nothing but those streams. Device d of rank r is
// contributor r * D + d of test/collectives/reference.h, which computes the expected results.
#include "cuda/multi_device.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "cuda/host_stand_in.h"
#include "test/collectives/process_sync.h"
#include "test/collectives/reference.h"
#include "test/cuda/cuda_probe.h"
#include "test/transport/harness.h"

namespace gloo_lite::test {
namespace {

using namespace std::chrono_literals;

enum class Layer { kHostStandIn, kCuda };
enum class Collective { kAllreduce, kBroadcast, kReduce, kAllgather, kReduceScatter, kAlltoall };

struct MultiCase {
  Collective collective;
  DataType type;
  ReduceOp op;
  int ranks;
  int devices;
  size_t count;  // per device (allgather's input, reduce_scatter's output)
  int root;
  int root_device;
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
  }
  return "?";
}

std::vector<std::shared_ptr<cuda::DeviceLayer>> make_devices(Layer layer, int rank, int devices) {
  std::vector<std::shared_ptr<cuda::DeviceLayer>> out;
  for (int d = 0; d < devices; ++d) {
    if (layer == Layer::kCuda) {
      out.push_back(cuda::cuda_device_layer(0));
      continue;
    }
    cuda::HostStandInOptions options;
    // The other devices slower than the lead: their copies of the lead's result then tend to
    // run late, after the lead's caller stream would have moved on without its wait.
    options.max_delay = d == 0 ? 200us : 600us;
    options.seed = 5000 + static_cast<uint64_t>(rank * 16 + d);
    options.device = d;
    out.push_back(cuda::host_stand_in_layer(options));
  }
  return out;
}

void run_rank(Layer which, const MultiCase& c, Context& context) {
  const int rank = context.rank();
  const auto local = static_cast<size_t>(c.devices);
  const size_t everyone = static_cast<size_t>(c.ranks) * local;
  auto layers = make_devices(which, rank, c.devices);
  cuda::PipelineOptions pipeline;
  pipeline.slot_bytes = 512;  // tens of chunks per call
  pipeline.slots = 3;
  cuda::MultiDeviceCommunicator communicator(context, layers, pipeline);

  const bool reducing = c.collective == Collective::kAllreduce ||
                        c.collective == Collective::kReduce ||
                        c.collective == Collective::kReduceScatter;
  // reduce writes only the root's root device: the other outputs must keep this.
  const bool untouched_outputs = c.collective == Collective::kReduce && !c.in_place;
  constexpr auto kUntouched = std::byte{0xC3};
  Inputs inputs;
  inputs.type = c.type;
  inputs.pattern = pattern_for(reducing, c.op);
  inputs.seed = 11 + static_cast<uint64_t>(c.collective) * 31 + static_cast<uint64_t>(c.op);
  inputs.ranks = static_cast<int>(everyone);
  const size_t e = element_bytes(c.type);
  const bool all_blocks_in =
      c.collective == Collective::kReduceScatter || c.collective == Collective::kAlltoall;
  const bool all_blocks_out =
      c.collective == Collective::kAllgather || c.collective == Collective::kAlltoall;
  const size_t in_count = all_blocks_in ? c.count * everyone : c.count;
  const size_t in_bytes = in_count * e;
  const size_t out_count = all_blocks_out ? c.count * everyone : c.count;
  const size_t out_bytes = out_count * e;

  std::vector<cuda::Stream> streams;
  std::vector<const void*> ins;
  std::vector<void*> outs, owned;
  std::vector<std::vector<std::byte>> host_in(local, std::vector<std::byte>(in_bytes));
  std::vector<std::vector<std::byte>> host_out(local, std::vector<std::byte>(out_bytes));
  for (size_t d = 0; d < local; ++d) {
    cuda::DeviceLayer& layer = *layers[d];
    const auto contributor = static_cast<int>(static_cast<size_t>(rank) * local + d);
    streams.push_back(layer.create_stream());
    void* out = layer.allocate_device(out_bytes);
    void* in = c.in_place ? out : layer.allocate_device(in_bytes);
    owned.push_back(out);
    if (!c.in_place) owned.push_back(in);
    if (c.in_place && c.collective == Collective::kAllgather) {
      in = static_cast<std::byte*>(out) + static_cast<size_t>(contributor) * in_bytes;
    }
    if (untouched_outputs) {
      std::fill(host_out[d].begin(), host_out[d].end(), kUntouched);
      layer.copy_to_device(out, host_out[d].data(), out_bytes, streams[d]);
      layer.synchronize_stream(streams[d]);  // host_out is reused below
    }
    // Not waited for: the call must wait for it through the stream.
    fill_inputs(inputs, contributor, 0, in_count, host_in[d].data());
    layer.copy_to_device(in, host_in[d].data(), in_bytes, streams[d]);
    ins.push_back(in);
    outs.push_back(out);
  }

  switch (c.collective) {
    case Collective::kAllreduce:
      communicator.allreduce(ins, outs, c.count, c.type, c.op, streams);
      break;
    case Collective::kBroadcast:
      communicator.broadcast(outs, c.count, c.type, c.root, c.root_device, streams);
      break;
    case Collective::kReduce:
      communicator.reduce(ins, outs, c.count, c.type, c.op, c.root, c.root_device, streams);
      break;
    case Collective::kAllgather:
      communicator.allgather(ins, outs, c.count, c.type, streams);
      break;
    case Collective::kReduceScatter:
      communicator.reduce_scatter(ins, outs, c.count, c.type, c.op, streams);
      break;
    case Collective::kAlltoall:
      communicator.alltoall(ins, outs, c.count, c.type, streams);
      break;
  }
  for (size_t d = 0; d < local; ++d) {
    layers[d]->copy_to_host(host_out[d].data(), outs[d], out_bytes, streams[d]);
  }
  // The caller reuses the lead's output at once: the other devices' copies of it must be done
  // by then (the copy to the host above has taken this device's result already).
  std::vector<std::byte> scribble(out_bytes, std::byte{0x5A});
  layers[0]->copy_to_device(outs[0], scribble.data(), out_bytes, streams[0]);
  for (size_t d = 0; d < local; ++d) layers[d]->synchronize_stream(streams[d]);
  communicator.synchronize();

  Problems problems;
  for (size_t d = 0; d < local; ++d) {
    const std::string what = "rank " + std::to_string(rank) + " " + collective_name(c.collective) +
                             " on " + layers[d]->name() + " (device " + std::to_string(d) + ")";
    const std::byte* got = host_out[d].data();
    switch (c.collective) {
      case Collective::kAllreduce:
        check_reduction(inputs, c.op, 0, c.count, got, what, problems);
        break;
      case Collective::kBroadcast:
        check_copy(inputs, c.root * c.devices + c.root_device, 0, c.count, got, what, problems);
        break;
      case Collective::kReduce:
        if (rank == c.root && static_cast<int>(d) == c.root_device) {
          check_reduction(inputs, c.op, 0, c.count, got, what, problems);
        } else if (c.in_place) {  // the input, unchanged
          check_copy(inputs, static_cast<int>(static_cast<size_t>(rank) * local + d), 0, c.count,
                     got, what + " (not the root: its input unchanged)", problems);
        } else if (std::any_of(got, got + out_bytes,
                               [&](std::byte b) { return b != kUntouched; })) {
          problems.push_back(what + ": not the root, but its output was written");
        }
        break;
      case Collective::kAllgather:
        for (size_t g = 0; g < everyone; ++g) {
          check_copy(inputs, static_cast<int>(g), 0, c.count, got + g * in_bytes,
                     what + " block " + std::to_string(g), problems);
        }
        break;
      case Collective::kReduceScatter:
        check_reduction(inputs, c.op, (static_cast<size_t>(rank) * local + d) * c.count, c.count,
                        got, what, problems);
        break;
      case Collective::kAlltoall:
        // Block g came from contributor g: its input's block for this device's contributor.
        for (size_t g = 0; g < everyone; ++g) {
          check_copy(inputs, static_cast<int>(g), (static_cast<size_t>(rank) * local + d) * c.count,
                     c.count, got + g * c.count * e, what + " block " + std::to_string(g),
                     problems);
        }
        break;
    }
  }
  for (size_t i = 0; i < problems.size() && i < 5; ++i) ADD_FAILURE() << problems[i];
  if (problems.size() > 5) ADD_FAILURE() << problems.size() << " problems in all";

  for (size_t d = 0; d < local; ++d) layers[d]->destroy_stream(streams[d]);
  // owned holds out (and in) per device, in device order.
  size_t next = 0;
  for (size_t d = 0; d < local; ++d) {
    const size_t n = c.in_place ? 1 : 2;
    for (size_t i = 0; i < n; ++i) layers[d]->free_device(owned[next++]);
  }
}

struct Param {
  Layer layer;
  MultiCase c;
};

void PrintTo(const Param& param, std::ostream* out) {
  *out << (param.layer == Layer::kCuda ? "cuda layer" : "host stand-in layer");
}

class MultiDevice : public ::testing::TestWithParam<Param> {};

TEST_P(MultiDevice, MatchesReference) {
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

const MultiCase kCases[] = {
    // collective, type, op, P, D, count, root, root device, in place
    {Collective::kAllreduce, DataType::kFloat32, ReduceOp::kSum, 2, 3, 1000, 0, 0, false},
    {Collective::kAllreduce, DataType::kFloat32, ReduceOp::kSum, 3, 2, 777, 0, 0, true},
    {Collective::kAllreduce, DataType::kFloat64, ReduceOp::kAvg, 3, 1, 500, 0, 0, false},
    {Collective::kAllreduce, DataType::kBFloat16, ReduceOp::kAvg, 3, 2, 500, 0, 0, false},
    {Collective::kAllreduce, DataType::kInt64, ReduceOp::kAvg, 2, 3, 300, 0, 0, true},
    {Collective::kAllreduce, DataType::kInt32, ReduceOp::kProd, 3, 3, 400, 0, 0, false},
    {Collective::kAllreduce, DataType::kFloat16, ReduceOp::kMax, 2, 2, 900, 0, 0, false},
    {Collective::kAllreduce, DataType::kUint8, ReduceOp::kBand, 3, 2, 3000, 0, 0, true},
    {Collective::kBroadcast, DataType::kFloat32, ReduceOp::kSum, 3, 2, 1000, 1, 1, true},
    {Collective::kBroadcast, DataType::kUint8, ReduceOp::kSum, 2, 3, 4099, 0, 2, true},
    {Collective::kBroadcast, DataType::kInt32, ReduceOp::kSum, 3, 3, 500, 2, 0, true},
    {Collective::kReduce, DataType::kFloat32, ReduceOp::kSum, 3, 2, 1000, 1, 1, false},
    {Collective::kReduce, DataType::kInt64, ReduceOp::kAvg, 2, 3, 300, 0, 2, true},
    {Collective::kReduce, DataType::kBFloat16, ReduceOp::kMax, 3, 3, 500, 2, 0, false},
    {Collective::kReduce, DataType::kInt32, ReduceOp::kProd, 2, 1, 400, 1, 0, true},
    {Collective::kAllgather, DataType::kInt32, ReduceOp::kSum, 3, 2, 100, 0, 0, false},
    {Collective::kAllgather, DataType::kFloat16, ReduceOp::kSum, 2, 3, 70, 0, 0, true},
    {Collective::kReduceScatter, DataType::kFloat32, ReduceOp::kSum, 3, 2, 100, 0, 0, false},
    {Collective::kReduceScatter, DataType::kInt32, ReduceOp::kAvg, 2, 3, 64, 0, 0, false},
    {Collective::kReduceScatter, DataType::kBFloat16, ReduceOp::kMin, 2, 2, 90, 0, 0, false},
    {Collective::kAlltoall, DataType::kInt32, ReduceOp::kSum, 3, 2, 100, 0, 0, false},
    {Collective::kAlltoall, DataType::kFloat16, ReduceOp::kSum, 2, 3, 77, 0, 0, false},
    {Collective::kAlltoall, DataType::kUint8, ReduceOp::kSum, 2, 1, 301, 0, 0, false},
};

std::vector<Param> params(Layer layer) {
  std::vector<Param> out;
  for (const MultiCase& c : kCases) out.push_back({layer, c});
  return out;
}

std::string case_name(const ::testing::TestParamInfo<Param>& info) {
  const MultiCase& c = info.param.c;
  std::string name = std::string(collective_name(c.collective)) + "_" + type_name(c.type);
  if (c.collective == Collective::kAllreduce || c.collective == Collective::kReduce ||
      c.collective == Collective::kReduceScatter) {
    name += std::string("_") + op_name(c.op);
  }
  if (c.collective == Collective::kBroadcast || c.collective == Collective::kReduce) {
    name += "_root" + std::to_string(c.root) + "_device" + std::to_string(c.root_device);
  }
  if (c.in_place) name += "_in_place";
  return name + "_P" + std::to_string(c.ranks) + "xD" + std::to_string(c.devices);
}

// Two calls chained on the caller streams, then the blocking form: the broadcast must see the
// allreduce's result on every device, and the blocking allreduce's result must be in every
// device's memory when it returns (stand-in device memory is host memory).
TEST(HostStandInMultiDevice, ChainedCallsThenBlockingForm) {
  constexpr int kRanks = 2;
  constexpr int kDevices = 3;
  constexpr size_t kCount = 600;
  ContextOptions options;
  options.timeout = 30s;
  auto results = run_context_processes(
      kRanks,
      [&](Context& context) {
        const int rank = context.rank();
        auto layers = make_devices(Layer::kHostStandIn, rank, kDevices);
        cuda::PipelineOptions pipeline;
        pipeline.slot_bytes = 512;
        pipeline.slots = 2;
        cuda::MultiDeviceCommunicator communicator(context, layers, pipeline);
        std::vector<cuda::Stream> streams;
        std::vector<void*> data;
        std::vector<const void*> inputs;
        // Element i of contributor g = rank * D + d: g * 1000 + i (exact in float32 here).
        std::vector<std::vector<float>> host(kDevices, std::vector<float>(kCount));
        for (int d = 0; d < kDevices; ++d) {
          streams.push_back(layers[d]->create_stream());
          data.push_back(layers[d]->allocate_device(kCount * sizeof(float)));
          inputs.push_back(data.back());
          for (size_t i = 0; i < kCount; ++i) {
            host[d][i] = static_cast<float>((rank * kDevices + d) * 1000 + i);
          }
          layers[d]->copy_to_device(data[d], host[d].data(), kCount * sizeof(float), streams[d]);
        }
        communicator.allreduce(inputs, data, kCount, DataType::kFloat32, ReduceOp::kSum, streams);
        // Device 1 of rank 1 doubles its result before broadcasting it.
        if (rank == 1) {
          layers[1]->reduce(data[1], data[1], kCount, DataType::kFloat32, ReduceOp::kSum,
                            streams[1]);
        }
        communicator.broadcast(data, kCount, DataType::kFloat32, 1, 1, streams);
        constexpr int kEveryone = kRanks * kDevices;
        for (int d = 0; d < kDevices; ++d) {
          std::vector<float> back(kCount);
          layers[d]->copy_to_host(back.data(), data[d], kCount * sizeof(float), streams[d]);
          layers[d]->synchronize_stream(streams[d]);
          for (size_t i = 0; i < kCount; ++i) {
            // Sum over g of g * 1000 + i, doubled by the broadcast's source.
            const float sum = static_cast<float>(kEveryone * (kEveryone - 1) / 2 * 1000 +
                                                 kEveryone * static_cast<int>(i));
            ASSERT_EQ(back[i], 2 * sum) << "rank " << rank << " device " << d << " element " << i;
          }
        }
        // Blocking: max over contributors of (g + 1) * i, read straight from device memory.
        for (int d = 0; d < kDevices; ++d) {
          for (size_t i = 0; i < kCount; ++i) {
            host[d][i] = static_cast<float>((rank * kDevices + d + 1) * static_cast<int>(i));
          }
          layers[d]->copy_to_device(data[d], host[d].data(), kCount * sizeof(float), streams[d]);
        }
        cuda::allreduce(communicator, inputs, data, kCount, DataType::kFloat32, ReduceOp::kMax,
                        streams);
        for (int d = 0; d < kDevices; ++d) {
          const auto* got = static_cast<const float*>(data[d]);
          for (size_t i = 0; i < kCount; ++i) {
            ASSERT_EQ(got[i], static_cast<float>(kEveryone * static_cast<int>(i)))
                << "rank " << rank << " device " << d << " element " << i;
          }
        }
        for (int d = 0; d < kDevices; ++d) {
          layers[d]->free_device(data[d]);
          layers[d]->destroy_stream(streams[d]);
        }
        store_barrier(context, "done");
      },
      120s, options);
  expect_all_ok(results);
}

// Two reduce_scatter calls on different caller streams with no order between them (legal: the
// buffers differ): the second call's local sum must not overwrite the scratch while the slow
// devices' lanes still copy the first call's results out of it. The lead has no delays and the
// other devices long ones, so that the race, if the lead lane did not wait, would be lost.
TEST(HostStandInMultiDevice, ReduceScatterCallsOnOtherStreamsShareTheScratch) {
  constexpr int kRanks = 2;
  constexpr int kDevices = 3;
  constexpr size_t kCount = 16;
  constexpr size_t kEveryone = kRanks * kDevices;
  constexpr int kCalls = 4;
  ContextOptions options;
  options.timeout = 30s;
  auto results = run_context_processes(
      kRanks,
      [&](Context& context) {
        const int rank = context.rank();
        std::vector<std::shared_ptr<cuda::DeviceLayer>> layers;
        for (int d = 0; d < kDevices; ++d) {
          cuda::HostStandInOptions stand_in;
          stand_in.max_delay = d == 0 ? 0us : 3000us;
          stand_in.seed = 77 + static_cast<uint64_t>(rank * 16 + d);
          stand_in.device = d;
          layers.push_back(cuda::host_stand_in_layer(stand_in));
        }
        cuda::MultiDeviceCommunicator communicator(context, layers);
        // Call k, element i of block b on contributor g: (k + 1) * (g + 1) * (b * 100 + i + 1);
        // the reduced block b is (k + 1) * 21 * (b * 100 + i + 1) (21 = sum of g + 1).
        std::vector<std::vector<std::vector<int32_t>>> host_in(kCalls), host_out(kCalls);
        std::vector<std::vector<cuda::Stream>> streams(kCalls);
        std::vector<std::vector<void*>> ins(kCalls), outs(kCalls);
        for (int k = 0; k < kCalls; ++k) {
          for (int d = 0; d < kDevices; ++d) {
            const auto g = static_cast<int32_t>(rank * kDevices + d);
            std::vector<int32_t> in(kCount * kEveryone);
            for (size_t b = 0; b < kEveryone; ++b) {
              for (size_t i = 0; i < kCount; ++i) {
                in[b * kCount + i] = (k + 1) * (g + 1) * static_cast<int32_t>(b * 100 + i + 1);
              }
            }
            host_in[k].push_back(in);
            host_out[k].emplace_back(kCount);
            streams[k].push_back(layers[d]->create_stream());
            ins[k].push_back(layers[d]->allocate_device(in.size() * sizeof(int32_t)));
            outs[k].push_back(layers[d]->allocate_device(kCount * sizeof(int32_t)));
            layers[d]->copy_to_device(ins[k][d], host_in[k][d].data(), in.size() * sizeof(int32_t),
                                      streams[k][d]);
          }
        }
        for (int k = 0; k < kCalls; ++k) {
          std::vector<const void*> inputs(ins[k].begin(), ins[k].end());
          communicator.reduce_scatter(inputs, outs[k], kCount, DataType::kInt32, ReduceOp::kSum,
                                      streams[k]);
          for (int d = 0; d < kDevices; ++d) {
            layers[d]->copy_to_host(host_out[k][d].data(), outs[k][d], kCount * sizeof(int32_t),
                                    streams[k][d]);
          }
        }
        for (int k = 0; k < kCalls; ++k) {
          for (int d = 0; d < kDevices; ++d) {
            layers[d]->synchronize_stream(streams[k][d]);
            const auto b = static_cast<int32_t>(rank * kDevices + d);
            for (size_t i = 0; i < kCount; ++i) {
              ASSERT_EQ(host_out[k][d][i], (k + 1) * 21 * (b * 100 + static_cast<int32_t>(i) + 1))
                  << "call " << k << " rank " << rank << " device " << d << " element " << i;
            }
          }
        }
        communicator.synchronize();
        for (int k = 0; k < kCalls; ++k) {
          for (int d = 0; d < kDevices; ++d) {
            layers[d]->free_device(ins[k][d]);
            layers[d]->free_device(outs[k][d]);
            layers[d]->destroy_stream(streams[k][d]);
          }
        }
        store_barrier(context, "done");
      },
      120s, options);
  expect_all_ok(results);
}

// Invalid calls throw InvalidArgument before anything is enqueued; a valid call then works.
TEST(HostStandInMultiDeviceArguments, InvalidCallsThrow) {
  ContextOptions options;
  options.timeout = 30s;
  auto results = run_context_processes(
      2,
      [&](Context& context) {
        auto layers = make_devices(Layer::kHostStandIn, context.rank(), 2);
        cuda::MultiDeviceCommunicator communicator(context, layers);
        std::vector<cuda::Stream> streams = {layers[0]->create_stream(),
                                             layers[1]->create_stream()};
        auto* a = static_cast<int32_t*>(layers[0]->allocate_device(64 * sizeof(int32_t)));
        auto* b = static_cast<int32_t*>(layers[1]->allocate_device(64 * sizeof(int32_t)));
        std::vector<void*> data = {a, b};
        std::vector<const void*> inputs = {a, b};
        EXPECT_THROW(
            communicator.allreduce({a}, {a}, 64, DataType::kInt32, ReduceOp::kSum, streams),
            InvalidArgument);  // one buffer for two devices
        EXPECT_THROW(communicator.allreduce(inputs, data, 64, DataType::kInt32, ReduceOp::kSum,
                                            {streams[0]}),
                     InvalidArgument);
        EXPECT_THROW(communicator.allreduce({a, nullptr}, data, 64, DataType::kInt32,
                                            ReduceOp::kSum, streams),
                     InvalidArgument);
        EXPECT_THROW(
            communicator.allreduce(inputs, data, 64, DataType::kFloat32, ReduceOp::kBand, streams),
            InvalidArgument);
        CollectiveOptions custom;
        custom.custom = plus_one_function(DataType::kInt32);
        EXPECT_THROW(communicator.allreduce(inputs, data, 64, DataType::kInt32, ReduceOp::kCustom,
                                            streams, custom),
                     InvalidArgument);
        EXPECT_THROW(communicator.broadcast(data, 64, DataType::kInt32, 2, 0, streams),
                     InvalidArgument);
        EXPECT_THROW(communicator.broadcast(data, 64, DataType::kInt32, 0, 2, streams),
                     InvalidArgument);
        for (int i = 0; i < 64; ++i) {
          a[i] = i + context.rank();
          b[i] = 2 * i;
        }
        cuda::allreduce(communicator, inputs, data, 64, DataType::kInt32, ReduceOp::kSum, streams);
        for (int i = 0; i < 64; ++i) {
          ASSERT_EQ(a[i], 6 * i + 1) << "element " << i;
          ASSERT_EQ(b[i], 6 * i + 1) << "element " << i;
        }
        layers[0]->free_device(a);
        layers[1]->free_device(b);
        for (int d = 0; d < 2; ++d) layers[d]->destroy_stream(streams[d]);
        store_barrier(context, "done");
      },
      60s, options);
  expect_all_ok(results);
}

INSTANTIATE_TEST_SUITE_P(HostStandIn, MultiDevice, ::testing::ValuesIn(params(Layer::kHostStandIn)),
                         case_name);
INSTANTIATE_TEST_SUITE_P(Cuda, MultiDevice, ::testing::ValuesIn(params(Layer::kCuda)), case_name);

}  // namespace
}  // namespace gloo_lite::test
