// The collectives matrix with ranks as threads: every case of thread_matrix() runs on P threads
// of this process, each with its own Context on one shared loopback TCP device, and every rank
// checks its result against the independent reference (reference.h).
//
// Sampling rule (in full at the top of sampling.cc, which implements it): a deterministic subset
// of P {1..9, 12, 13, 16} x count {0, 1, 2, 3, 7, P-1, P+1, 1000, 65537, 4Mi} x 10 types x 9 ops
// x every registered algorithm and auto x in/out of place x 13 entry points + barrier, roots
// P-1 or P/2. Choices come from splitmix64 keyed by rule and loop indices, so the list is fixed.
// It always holds every collective x algorithm x type (x op for the reducing ones), every
// collective x P, every collective x small count, every algorithm in and out of place, 65537
// for every collective x algorithm at a power-of-two P and at another P, a few 4Mi cases, and
// 1200 uniform draws; and every reducing collective x algorithm x bitwise op x integer type,
// plus bitwise ops on float types, which must be refused. CollectiveMatrixSampling below checks
// these guarantees on the list.
//
// Test names spell the case:
//   Threads/CollectiveMatrix.MatchesReference/allreduce_ring_P5_n1000_float16_sum_inplace
//   Threads/CollectiveMatrix.MatchesReference/gatherv_auto_P9_n7_int64_outofplace_root4
// Run one with --gtest_filter='*allreduce_ring_P5_*'.
#include <gtest/gtest.h>

#include <iostream>
#include <memory>
#include <set>

#include "gloo_lite/algorithms/registry.h"
#include "test/collectives/cases.h"
#include "test/collectives/rank_run.h"
#include "test/collectives/thread_world.h"

namespace gloo_lite::test {

namespace {

using namespace std::chrono_literals;

// The contexts of the current P, kept from case to case (cases are ordered by P).
std::unique_ptr<ThreadWorld>& current_world() {
  static std::unique_ptr<ThreadWorld> world;
  return world;
}

ThreadWorld& world_of_size(int size) {
  auto& world = current_world();
  if (!world || world->size() != size) {
    world.reset();
    world = std::make_unique<ThreadWorld>(size, 60s);
  }
  return *world;
}

std::chrono::milliseconds timeout_for(const Case& c) { return c.count > 1000 ? 60s : 10s; }

class CollectiveMatrix : public ::testing::TestWithParam<Case> {
 protected:
  static void TearDownTestSuite() { current_world().reset(); }
};

TEST_P(CollectiveMatrix, MatchesReference) {
  const Case& c = GetParam();
  ThreadWorld& world = world_of_size(c.size);
  CaseBoard board;
  board.reset();
  std::vector<RankResult> results(c.size);
  auto timeout = timeout_for(c);
  world.run(
      [&](int rank, Context& context) {
        results[rank] = run_rank(c, context, board, timeout);
        // An unexpected exception: tell the peers at once rather than let them wait out their
        // deadlines (their ConnectionErrors then follow this rank's error in the report).
        if (results[rank].threw && !results[rank].problems.empty()) {
          context.abort("the test failed on rank " + std::to_string(rank));
        }
      },
      timeout + 30s);
  bool threw = false;
  for (const RankResult& result : results) {
    threw = threw || result.threw;
    for (const std::string& problem : result.problems) ADD_FAILURE() << problem;
  }
  // After an exception the ranks' streams of collectives may be out of step: start afresh.
  if (threw) current_world().reset();
}

INSTANTIATE_TEST_SUITE_P(Threads, CollectiveMatrix, ::testing::ValuesIn(thread_matrix()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name();
                         });

// The registry must offer at least one algorithm per collective (auto alone cannot run).
TEST(CollectiveRegistry, EveryCollectiveOffersAnAlgorithm) {
  for (Kind kind : kAllKinds) {
    EXPECT_GT(algorithms_for(kind).size(), 1u)
        << kind_name(kind) << ": no algorithm registered in gloo_lite/algorithms/registry";
  }
}

TEST(CollectiveRegistry, NamesAreUniquePerCollective) {
  std::set<std::pair<int, std::string>> seen;
  for (const algo::Algorithm& algorithm : algo::all_algorithms()) {
    EXPECT_TRUE(seen.insert({static_cast<int>(algorithm.collective), algorithm.name}).second)
        << algorithm.name << " registered twice for "
        << algo::collective_name(algorithm.collective);
    EXPECT_NE(std::string(algorithm.name), "auto");
  }
}

// The guarantees of the sampling rule, checked on the list itself.
TEST(CollectiveMatrixSampling, CoversEveryAlgorithmTypeAndSize) {
  std::vector<Case> cases = thread_matrix();
  std::set<std::string> algorithm_type, kind_size;
  std::set<std::string> names;
  for (const Case& c : cases) {
    EXPECT_TRUE(names.insert(c.name()).second) << "duplicate " << c.name();
    algorithm_type.insert(std::string(kind_name(c.kind)) + "/" + c.algorithm + "/" +
                          type_label(c.type));
    kind_size.insert(std::string(kind_name(c.kind)) + "/" + std::to_string(c.size));
  }
  for (Kind kind : kAllKinds) {
    for (const std::string& algorithm : algorithms_for(kind)) {
      if (kind == Kind::kBarrier) continue;
      for (int t = 0; t <= static_cast<int>(DataType::kFloat64); ++t) {
        std::string key = std::string(kind_name(kind)) + "/" + algorithm + "/" +
                          type_label(static_cast<DataType>(t));
        EXPECT_TRUE(algorithm_type.count(key)) << "no case for " << key;
      }
    }
    for (int size : {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16}) {
      std::string key = std::string(kind_name(kind)) + "/" + std::to_string(size);
      EXPECT_TRUE(kind_size.count(key)) << "no case for " << key;
    }
  }
  std::cout << "[          ] thread matrix: " << cases.size() << " cases" << std::endl;
}

TEST(CollectiveMatrixSampling, CoversEveryBitwiseOpOnEveryIntegerType) {
  std::set<std::string> run, refused;
  for (const Case& c : thread_matrix()) {
    if (!is_reducing(c.kind) || !is_bitwise(c.op)) continue;
    std::string key = std::string(kind_name(c.kind)) + "/" + c.algorithm + "/" + op_label(c.op);
    if (is_integer(c.type)) {
      if (c.supported) run.insert(key + "/" + type_label(c.type));
    } else {
      EXPECT_FALSE(c.supported) << c.name() << ": a bitwise op on a float type must be refused";
      refused.insert(std::string(kind_name(c.kind)) + "/" + op_label(c.op));
    }
  }
  for (Kind kind : kAllKinds) {
    if (!is_reducing(kind)) continue;
    for (ReduceOp op : {ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor}) {
      std::string kind_op = std::string(kind_name(kind)) + "/" + op_label(op);
      EXPECT_TRUE(refused.count(kind_op)) << "no float case for " << kind_op;
      for (const std::string& algorithm : algorithms_for(kind)) {
        for (int t = 0; t <= static_cast<int>(DataType::kUint64); ++t) {
          std::string key = std::string(kind_name(kind)) + "/" + algorithm + "/" + op_label(op) +
                            "/" + type_label(static_cast<DataType>(t));
          EXPECT_TRUE(run.count(key)) << "no case that runs " << key;
        }
      }
    }
  }
}

}  // namespace
}  // namespace gloo_lite::test
