// The collectives matrix with ranks as real processes (forked, file store, one TCP device each):
// the representative subset process_matrix() (every collective at P = 2, 3, 4, 8, algorithm,
// type and op cycling; see sampling.cc). The thread matrix covers the rest.
#include <gtest/gtest.h>

#include "test/collectives/cases.h"
#include "test/collectives/process_sync.h"
#include "test/collectives/rank_run.h"
#include "test/transport/harness.h"

namespace gloo_lite::test {

namespace {

using namespace std::chrono_literals;

class CollectiveProcesses : public ::testing::TestWithParam<Case> {};

TEST_P(CollectiveProcesses, MatchesReference) {
  const Case& c = GetParam();
  SharedMapping<CaseBoard> board;
  board->reset();
  ContextOptions options;
  options.timeout = 60s;
  auto results = run_context_processes(
      c.size,
      [&](Context& context) {
        RankResult result = run_rank(c, context, *board, 30s);
        for (const std::string& problem : result.problems) ADD_FAILURE() << problem;
        if (result.threw && !result.problems.empty()) {
          context.abort("the test failed on rank " + std::to_string(context.rank()));
        }
        store_barrier(context, "done");
      },
      120s, options);
  expect_all_ok(results);
}

INSTANTIATE_TEST_SUITE_P(Processes, CollectiveProcesses, ::testing::ValuesIn(process_matrix()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name();
                         });

}  // namespace
}  // namespace gloo_lite::test
