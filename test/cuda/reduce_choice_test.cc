// Where allreduce and reduce combine with ReduceOn::kAuto (cuda/reduce_choice.h,
// cuda/agreement.h), on the host stand-in layer (no GPU): the formula's choice for given
// speeds (references worked out by hand below), the agreement of ranks whose speeds differ,
// and results that stay right whichever placement the speeds pick.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cuda/agreement.h"
#include "cuda/collectives.h"
#include "cuda/host_stand_in.h"
#include "cuda/reduce_choice.h"
#include "test/collectives/process_sync.h"
#include "test/transport/harness.h"

namespace gloo_lite::test {
namespace {

using namespace std::chrono_literals;
using cuda::ReduceOn;
using cuda::Speeds;

constexpr double kGB = 1e9;

// P = 2, one slot of 1 MB holding the whole call, copy = wire = device reduction = 1 GB/s:
//   kHost:   one chunk of 1 MB: stage 1 ms, wire 1 ms + 0.5 MB / host, drain 1 ms
//   kDevice: two chunks of 0.5 MB: stage 0.5 ms, wire 0.5 ms, drain 1 ms + 0.5 ms = 1.5 ms,
//            T = 0.5 + 0.5 + 1.5 + 1 * 1.5 = 4 ms
// so kDevice wins exactly when 0.5 MB / host > 1 ms: host reduction below 0.5 GB/s.
Speeds hand_worked(double host_gbps) { return {1 * kGB, 1 * kGB, host_gbps * kGB, 1 * kGB}; }
constexpr size_t kMB = 1000 * 1000;

TEST(ReduceChoice, CostsFollowTheFormula) {
  EXPECT_DOUBLE_EQ(cuda::placement_cost(hand_worked(1), ReduceOn::kHost, kMB, 2, kMB), 3.5e-3);
  EXPECT_DOUBLE_EQ(cuda::placement_cost(hand_worked(1), ReduceOn::kDevice, kMB, 2, kMB), 4e-3);
  EXPECT_DOUBLE_EQ(cuda::placement_cost(hand_worked(0.4), ReduceOn::kHost, kMB, 2, kMB), 4.25e-3);
}

TEST(ReduceChoice, ChoosesTheCheaperPlacement) {
  EXPECT_EQ(cuda::choose_reduce_on(hand_worked(1), kMB, 2, kMB), ReduceOn::kHost);
  EXPECT_EQ(cuda::choose_reduce_on(hand_worked(0.6), kMB, 2, kMB), ReduceOn::kHost);
  EXPECT_EQ(cuda::choose_reduce_on(hand_worked(0.4), kMB, 2, kMB), ReduceOn::kDevice);
  // Eight ranks: the allgather moves 7 chunk-widths per chunk against the ring's 1.75, so even
  // a slow CPU reduction (0.4 GB/s, (7/8) / 0.4 = 2.2 ms per MB) keeps kHost:
  // kHost per MB: max(1, 1.75 + 2.19, 1) ms; kDevice per MB: max(1, 7, 8 + 7) ms.
  EXPECT_EQ(cuda::choose_reduce_on(hand_worked(0.4), 64 * kMB, 8, kMB), ReduceOn::kHost);
}

TEST(ReduceChoice, UnknownSpeedsOneRankAndCustomOpsStayOnTheHost) {
  Speeds unknown = hand_worked(0.001);
  unknown.device_reduce = 0;
  EXPECT_EQ(cuda::choose_reduce_on(unknown, kMB, 2, kMB), ReduceOn::kHost);
  EXPECT_EQ(cuda::choose_reduce_on(hand_worked(0.001), kMB, 1, kMB), ReduceOn::kHost);
  EXPECT_EQ(cuda::choose_reduce_on(hand_worked(0.001), 0, 2, kMB), ReduceOn::kHost);
  cuda::Agreement slow_host;
  slow_host.speeds = hand_worked(0.001);
  const size_t floats = kMB / 4;
  EXPECT_TRUE(cuda::reduces_on_device(ReduceOn::kAuto, slow_host, DataType::kFloat32,
                                      ReduceOp::kSum, floats, 2, kMB));
  EXPECT_FALSE(cuda::reduces_on_device(ReduceOn::kAuto, slow_host, DataType::kFloat32,
                                       ReduceOp::kCustom, floats, 2, kMB));
  EXPECT_FALSE(cuda::reduces_on_device(ReduceOn::kHost, slow_host, DataType::kFloat32,
                                       ReduceOp::kSum, floats, 2, kMB));
  cuda::Agreement fast_host;
  fast_host.speeds = hand_worked(100);
  EXPECT_TRUE(cuda::reduces_on_device(ReduceOn::kDevice, fast_host, DataType::kFloat32,
                                      ReduceOp::kSum, floats, 2, kMB));
}

TEST(ReduceChoice, KnobsOverrideTheMeasurement) {
  ASSERT_EQ(setenv("GLOO_LITE_CUDA_COPY_GBPS", "12.5", 1), 0);
  ASSERT_EQ(setenv("GLOO_LITE_CUDA_KERNEL_GBPS", "300", 1), 0);
  ASSERT_EQ(setenv("GLOO_LITE_CUDA_HOST_REDUCE_GBPS", "7", 1), 0);
  auto layer = cuda::host_stand_in_layer({});
  const Speeds speeds = cuda::measure_speeds(*layer);
  unsetenv("GLOO_LITE_CUDA_COPY_GBPS");
  unsetenv("GLOO_LITE_CUDA_KERNEL_GBPS");
  unsetenv("GLOO_LITE_CUDA_HOST_REDUCE_GBPS");
  EXPECT_DOUBLE_EQ(speeds.copy, 12.5 * kGB);
  EXPECT_DOUBLE_EQ(speeds.device_reduce, 300 * kGB);
  EXPECT_DOUBLE_EQ(speeds.host_reduce, 7 * kGB);
  EXPECT_DOUBLE_EQ(speeds.wire, 1.5 * kGB);  // GLOO_LITE_BETA_GBPS's default
  // Measured: positive and finite on the stand-in too.
  const Speeds measured = cuda::measure_speeds(*layer);
  EXPECT_GT(measured.copy, 0);
  EXPECT_GT(measured.device_reduce, 0);
  EXPECT_GT(measured.host_reduce, 0);
}

// Four ranks with different speeds and different GPUDirect answers: every rank gets the
// elementwise minimum, so every rank makes the same choice.
TEST(ReduceChoiceAgreement, RanksWithDifferentMeasurementsAgreeOnTheMinimum) {
  constexpr int kRanks = 4;
  struct Seen {
    cuda::Agreement agreed[kRanks];
    bool all_direct[kRanks];
  };
  SharedMapping<Seen> seen;
  ContextOptions options;
  options.timeout = 30s;
  expect_all_ok(run_context_processes(
      kRanks,
      [&](Context& context) {
        const int r = context.rank();
        cuda::Agreement mine;
        mine.speeds = {(1.0 + r) * kGB, (4.0 - r) * kGB, (2.0 + 0.5 * r) * kGB, 3.0 * kGB};
        mine.gpudirect = r != 2;
        seen->agreed[r] = cuda::agree(context, mine, 0);
        mine.gpudirect = true;
        seen->all_direct[r] = cuda::agree(context, mine, 0).gpudirect;
      },
      60s, options));
  for (int r = 0; r < kRanks; ++r) {
    const cuda::Agreement& a = seen->agreed[r];
    EXPECT_DOUBLE_EQ(a.speeds.copy, 1.0 * kGB) << "rank " << r;           // rank 0's
    EXPECT_DOUBLE_EQ(a.speeds.device_reduce, 1.0 * kGB) << "rank " << r;  // rank 3's
    EXPECT_DOUBLE_EQ(a.speeds.host_reduce, 2.0 * kGB) << "rank " << r;    // rank 0's
    EXPECT_DOUBLE_EQ(a.speeds.wire, 3.0 * kGB) << "rank " << r;
    EXPECT_FALSE(a.gpudirect) << "rank " << r << ": rank 2 cannot";
    EXPECT_TRUE(seen->all_direct[r]) << "rank " << r;
  }
}

// kAuto end to end: rank 0's CPU reduction is set slow (others fast) through the knobs, so a
// rank alone would choose differently; every Communicator must report the same placement, and
// allreduce and reduce must be right. Then every rank fast: kHost everywhere, still right.
void run_auto(bool slow_rank_zero) {
  constexpr int kRanks = 3;
  constexpr size_t kCount = 3000;
  struct Seen {
    int on_device[kRanks];
  };
  SharedMapping<Seen> seen;
  ContextOptions options;
  options.timeout = 30s;
  expect_all_ok(run_context_processes(
      kRanks,
      [&](Context& context) {
        const int rank = context.rank();
        setenv("GLOO_LITE_CUDA_COPY_GBPS", "10", 1);
        setenv("GLOO_LITE_CUDA_KERNEL_GBPS", "100", 1);
        setenv("GLOO_LITE_BETA_GBPS", "10", 1);
        setenv("GLOO_LITE_CUDA_HOST_REDUCE_GBPS", slow_rank_zero && rank == 0 ? "0.01" : "100", 1);
        cuda::HostStandInOptions stand_in;
        stand_in.max_delay = 100us;
        stand_in.seed = 50 + static_cast<uint64_t>(rank);
        auto layer = cuda::host_stand_in_layer(stand_in);
        cuda::PipelineOptions pipeline;
        pipeline.slot_bytes = 1536;
        pipeline.slots = 3;
        ASSERT_EQ(pipeline.reduce_on, ReduceOn::kAuto);  // the default
        cuda::Communicator communicator(context, layer, pipeline);
        seen->on_device[rank] =
            communicator.reduces_on_device(DataType::kFloat32, ReduceOp::kSum, kCount);
        EXPECT_FALSE(communicator.reduces_on_device(DataType::kFloat32, ReduceOp::kCustom, kCount));
        cuda::Stream stream = layer->create_stream();
        auto* data = static_cast<float*>(layer->allocate_device(kCount * sizeof(float)));
        auto* out = static_cast<float*>(layer->allocate_device(kCount * sizeof(float)));
        // Element i of rank r: r * 100 + i % 97, exact in float32 for these sums.
        for (size_t i = 0; i < kCount; ++i) data[i] = static_cast<float>(rank * 100 + i % 97);
        cuda::allreduce(communicator, data, out, kCount, DataType::kFloat32, ReduceOp::kSum,
                        stream);
        for (size_t i = 0; i < kCount; ++i) {
          ASSERT_EQ(out[i], static_cast<float>(300 + 3 * (i % 97))) << "allreduce element " << i;
        }
        cuda::reduce(communicator, data, out, kCount, DataType::kFloat32, ReduceOp::kMax, 1,
                     stream);
        if (rank == 1) {
          for (size_t i = 0; i < kCount; ++i) {
            ASSERT_EQ(out[i], static_cast<float>(200 + i % 97)) << "reduce element " << i;
          }
        }
        layer->free_device(out);
        layer->free_device(data);
        layer->destroy_stream(stream);
        store_barrier(context, "done");
      },
      60s, options));
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(seen->on_device[r], slow_rank_zero ? 1 : 0) << "rank " << r;
  }
}

TEST(HostStandInReduceAuto, SlowHostReductionOnOneRankMovesEveryRankToTheDevice) { run_auto(true); }
TEST(HostStandInReduceAuto, FastHostReductionsKeepEveryRankOnTheHost) { run_auto(false); }

}  // namespace
}  // namespace gloo_lite::test
