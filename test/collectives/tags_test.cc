// Concurrent collectives on one context: every rank runs two threads, each issuing its own
// stream of allreduces under its own tag (1 and 2), interleaved differently on different ranks;
// every result is checked against the reference. Sizes alternate between eager and rendezvous
// messages, and the streams use different types and algorithms.
#include <gtest/gtest.h>

#include <mutex>
#include <thread>

#include "gloo_lite/base/error.h"
#include "gloo_lite/collectives.h"
#include "test/collectives/cases.h"
#include "test/collectives/process_sync.h"
#include "test/collectives/rank_run.h"
#include "test/collectives/reference.h"
#include "test/transport/harness.h"

namespace gloo_lite::test {
namespace {

using namespace std::chrono_literals;

constexpr int kRounds = 24;

void run_stream(Context& context, uint16_t tag, Problems& problems) {
  CollectiveOptions options;
  options.tag = tag;
  options.timeout = 60s;
  // Tag 1 pins the first registered allreduce algorithm, tag 2 lets the tuner choose.
  options.algorithm = tag == 1 ? algorithms_for(Kind::kAllreduce).front() : "auto";
  Inputs inputs;
  inputs.type = tag == 1 ? DataType::kInt64 : DataType::kFloat32;
  inputs.pattern = Pattern::kAdditive;
  inputs.ranks = context.size();
  for (int round = 0; round < kRounds; ++round) {
    inputs.seed = mix64(tag * 1000 + round);
    size_t count = round % 4 == 0 ? 300000 : 1 + 37 * round + tag;
    std::vector<uint8_t> in(count * element_bytes(inputs.type));
    std::vector<uint8_t> out(in.size());
    fill_inputs(inputs, context.rank(), 0, count, in.data());
    try {
      allreduce(context, in.data(), out.data(), count, inputs.type, ReduceOp::kSum, options);
    } catch (const std::exception& error) {
      problems.push_back("rank " + std::to_string(context.rank()) + ", tag " + std::to_string(tag) +
                         ", round " + std::to_string(round) + ": threw " +
                         describe_exception(error));
      return;
    }
    check_reduction(inputs, ReduceOp::kSum, 0, count, out.data(),
                    "rank " + std::to_string(context.rank()) + ", tag " + std::to_string(tag) +
                        ", round " + std::to_string(round) + " (" + options.algorithm + ", " +
                        std::to_string(count) + " elements)",
                    problems);
    // Even ranks let tag 1 run ahead, odd ranks tag 2, so the streams interleave differently.
    if ((context.rank() % 2 == 0) == (tag == 2)) std::this_thread::sleep_for(1ms);
  }
}

Problems two_streams(Context& context) {
  Problems first, second;
  std::thread other([&] { run_stream(context, 2, second); });
  run_stream(context, 1, first);
  other.join();
  first.insert(first.end(), second.begin(), second.end());
  return first;
}

TEST(CollectiveTags, TwoStreamsPerRankAsProcesses) {
  ContextOptions options;
  options.timeout = 60s;
  auto results = run_context_processes(
      4,
      [](Context& context) {
        for (const std::string& problem : two_streams(context)) ADD_FAILURE() << problem;
        store_barrier(context, "done");
      },
      120s, options);
  expect_all_ok(results);
}

TEST(CollectiveTags, TwoStreamsPerRankAsThreads) {
  std::mutex mutex;
  Problems problems;
  ContextOptions options;
  options.timeout = 60s;
  run_context_threads(
      3,
      [&](Context& context) {
        Problems mine = two_streams(context);
        std::lock_guard<std::mutex> lock(mutex);
        problems.insert(problems.end(), mine.begin(), mine.end());
      },
      options);
  for (const std::string& problem : problems) ADD_FAILURE() << problem;
}

}  // namespace
}  // namespace gloo_lite::test
