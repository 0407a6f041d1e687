// The typed conveniences of collectives.h: the element type picks the DataType.
#include <gtest/gtest.h>

#include "gloo_lite/collectives.h"
#include "test/collectives/process_sync.h"
#include "test/collectives/reference.h"
#include "test/transport/harness.h"

namespace gloo_lite::test {
namespace {

using namespace std::chrono_literals;

constexpr int kRanks = 3;

Inputs inputs_of(DataType type, Pattern pattern, uint64_t seed) {
  Inputs inputs;
  inputs.type = type;
  inputs.pattern = pattern;
  inputs.seed = seed;
  inputs.ranks = kRanks;
  return inputs;
}

void run_ranks(const ContextBody& body) {
  ContextOptions options;
  options.timeout = 30s;
  auto results = run_context_processes(
      kRanks,
      [&](Context& context) {
        body(context);
        store_barrier(context, "done");
      },
      60s, options);
  expect_all_ok(results);
}

std::string on(const Context& context, const char* what) {
  return "rank " + std::to_string(context.rank()) + ": " + what;
}

void expect_no_problems(const Problems& problems) {
  for (const std::string& problem : problems) ADD_FAILURE() << problem;
}

TEST(CollectiveTyped, AllreduceVectorOfFloatSumsInPlace) {
  run_ranks([](Context& context) {
    Inputs inputs = inputs_of(DataType::kFloat32, Pattern::kAdditive, 11);
    std::vector<float> data(1000);
    fill_inputs(inputs, context.rank(), 0, data.size(), data.data());
    allreduce(context, data);  // the default op is sum
    Problems problems;
    check_reduction(inputs, ReduceOp::kSum, 0, data.size(), data.data(),
                    on(context, "allreduce(std::vector<float>&)"), problems);
    expect_no_problems(problems);
  });
}

TEST(CollectiveTyped, AllreduceVectorOfFloat16Max) {
  run_ranks([](Context& context) {
    Inputs inputs = inputs_of(DataType::kFloat16, Pattern::kOrdered, 12);
    std::vector<float16> data(333);
    fill_inputs(inputs, context.rank(), 0, data.size(), data.data());
    allreduce(context, data, ReduceOp::kMax);
    Problems problems;
    check_reduction(inputs, ReduceOp::kMax, 0, data.size(), data.data(),
                    on(context, "allreduce(std::vector<float16>&, max)"), problems);
    expect_no_problems(problems);
  });
}

TEST(CollectiveTyped, AllreducePointersOfDoubleProd) {
  run_ranks([](Context& context) {
    Inputs inputs = inputs_of(DataType::kFloat64, Pattern::kProduct, 13);
    std::vector<double> in(77), out(77);
    fill_inputs(inputs, context.rank(), 0, in.size(), in.data());
    allreduce(context, in.data(), out.data(), in.size(), ReduceOp::kProd);
    Problems problems;
    check_reduction(inputs, ReduceOp::kProd, 0, out.size(), out.data(),
                    on(context, "allreduce(const double*, double*, prod)"), problems);
    check_copy(inputs, context.rank(), 0, in.size(), in.data(), on(context, "input unchanged"),
               problems);
    expect_no_problems(problems);
  });
}

TEST(CollectiveTyped, BroadcastVectorOfInt) {
  run_ranks([](Context& context) {
    Inputs inputs = inputs_of(DataType::kInt32, Pattern::kMove, 14);
    std::vector<int> data(4099);
    fill_inputs(inputs, context.rank(), 0, data.size(), data.data());
    broadcast(context, data, /*root=*/kRanks - 1);
    Problems problems;
    check_copy(inputs, kRanks - 1, 0, data.size(), data.data(),
               on(context, "broadcast(std::vector<int>&, root 2)"), problems);
    expect_no_problems(problems);
  });
}

TEST(CollectiveTyped, AllgatherReturnsVector) {
  run_ranks([](Context& context) {
    Inputs inputs = inputs_of(DataType::kUint64, Pattern::kMove, 15);
    std::vector<uint64_t> mine(5);
    fill_inputs(inputs, context.rank(), 0, mine.size(), mine.data());
    std::vector<uint64_t> all = allgather(context, mine);
    ASSERT_EQ(all.size(), mine.size() * kRanks) << on(context, "allgather size");
    Problems problems;
    for (int source = 0; source < kRanks; ++source) {
      check_copy(inputs, source, 0, mine.size(), all.data() + source * mine.size(),
                 on(context, "allgather(std::vector<uint64_t>) block"), problems);
    }
    expect_no_problems(problems);
  });
}

TEST(CollectiveTyped, AllgatherReturnsVectorOfBFloat16) {
  run_ranks([](Context& context) {
    Inputs inputs = inputs_of(DataType::kBFloat16, Pattern::kMove, 16);
    std::vector<bfloat16> mine(3);
    fill_inputs(inputs, context.rank(), 0, mine.size(), mine.data());
    std::vector<bfloat16> all = allgather(context, mine);
    ASSERT_EQ(all.size(), mine.size() * kRanks) << on(context, "allgather size");
    Problems problems;
    for (int source = 0; source < kRanks; ++source) {
      check_copy(inputs, source, 0, mine.size(), all.data() + source * mine.size(),
                 on(context, "allgather(std::vector<bfloat16>) block"), problems);
    }
    expect_no_problems(problems);
  });
}

}  // namespace
}  // namespace gloo_lite::test
