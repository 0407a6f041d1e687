// Runs one Case on one rank and checks everything that rank can see: its result against the
// reference, inputs left unchanged, guard zones around every buffer, untouched buffers that the
// API says it ignores, and InvalidArgument where the named algorithm declines the call.
#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <string>

#include "gloo_lite/context.h"
#include "test/collectives/cases.h"
#include "test/collectives/reference.h"

namespace gloo_lite::test {

// State the ranks of one case share (threads, or processes through a shared mapping): the
// barrier check counts arrivals per round.
struct CaseBoard {
  static constexpr int kBarrierRounds = 3;
  std::atomic<int> arrivals[kBarrierRounds];
  void reset() {
    for (auto& count : arrivals) count.store(0);
  }
};

struct RankResult {
  Problems problems;
  bool threw = false;  // the collective threw (expected or not): the contexts may be out of step
};

RankResult run_rank(const Case& c, Context& context, CaseBoard& board,
                    std::chrono::milliseconds timeout);

// "MismatchError: <what>" for gloo_lite's errors, "std::exception: <what>" otherwise.
std::string describe_exception(const std::exception& error);

}  // namespace gloo_lite::test
