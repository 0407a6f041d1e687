// The non-blocking API (gloo_lite/work.h, the i<collective> forms, Context::isend/irecv/
// irecv_any), ranks as threads with fresh contexts per test (rank_threads.h). Every result is
// checked against the reference (reference.h) or the deterministic p2p pattern (harness.h);
// timing claims (a start returns before the peers join, a wait with a timeout gives up) are
// made against peers that are held back through the store, so they hold on a loaded machine.
// Each test bounds its own run: a hang aborts the binary with the stuck ranks named.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <thread>

#include "gloo_lite/base/error.h"
#include "gloo_lite/collectives.h"
#include "test/collectives/cases.h"
#include "test/collectives/rank_run.h"
#include "test/collectives/rank_threads.h"
#include "test/collectives/reference.h"
#include "test/collectives/started_collective.h"
#include "test/transport/harness.h"

namespace gloo_lite::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kRanks = 4;

void report(const Problems& problems) {
  for (const std::string& problem : problems) ADD_FAILURE() << problem;
}

// Waits (bounded) and returns "" on success, else what went wrong.
std::string outcome(const Work& work, std::chrono::milliseconds bound = 30s) {
  try {
    if (!work.wait(bound)) {
      return work.describe() + " had not finished after " + std::to_string(bound.count()) + " ms";
    }
    return "";
  } catch (const std::exception& e) {
    return work.describe() + " threw " + describe_exception(e);
  }
}

long long ms_since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

// A sum allreduce with reference inputs and the buffers it owns while it runs.
struct Reduction {
  Reduction(DataType type, size_t count, uint64_t seed, const Context& context) : count(count) {
    inputs.type = type;
    inputs.pattern = Pattern::kAdditive;
    inputs.seed = seed;
    inputs.ranks = context.size();
    input.resize(count * element_bytes(type));
    output.assign(input.size(), 0);
    fill_inputs(inputs, context.rank(), 0, count, input.data());
  }
  void start(Context& context, const CollectiveOptions& options = {}) {
    work = iallreduce(context, input.data(), output.data(), count, inputs.type, ReduceOp::kSum,
                      options);
  }
  void run(Context& context, const CollectiveOptions& options = {}) {
    allreduce(context, input.data(), output.data(), count, inputs.type, ReduceOp::kSum, options);
  }
  void check(const std::string& what, Problems& problems) const {
    check_reduction(inputs, ReduceOp::kSum, 0, count, output.data(), what, problems);
  }
  // Waits for the started call, then checks its result.
  void finish(const std::string& what, Problems& problems) const {
    std::string failed = outcome(work);
    if (failed.empty()) {
      check(what, problems);
    } else {
      problems.push_back(what + ": " + failed);
    }
  }

  Inputs inputs;
  size_t count;
  std::vector<uint8_t> input;
  std::vector<uint8_t> output;
  Work work;
};

std::string on(int rank, const std::string& what) {
  return "rank " + std::to_string(rank) + ": " + what;
}

// One case per collective entry point at P = 4: rooted ones at root 2, plus a custom reduction
// and a max, so that every i<collective> and its arguments are exercised.
std::vector<Case> every_collective(size_t count) {
  std::vector<Case> cases;
  auto add = [&](Kind kind, DataType type, ReduceOp op, int root) {
    Case c;
    c.kind = kind;
    c.size = kRanks;
    c.count = count;
    c.type = type;
    c.op = op;
    c.root = root;
    c.finish();
    cases.push_back(c);
  };
  for (Kind kind : kAllKinds) add(kind, DataType::kFloat32, ReduceOp::kSum, 2);
  add(Kind::kAllreduce, DataType::kInt32, ReduceOp::kCustom, 0);
  add(Kind::kReduce, DataType::kInt64, ReduceOp::kCustom, 3);
  add(Kind::kReduceScatterv, DataType::kInt64, ReduceOp::kMax, 0);
  return cases;
}

// Starts every case back to back on one stream (all queued before the first wait), then waits
// for each in order; `inspect` looks at each finished one.
void run_every_collective(
    size_t count,
    const std::function<void(int rank, const StartedCollective&, Problems&)>& inspect) {
  const std::vector<Case> cases = every_collective(count);
  std::atomic<int> barrier_entered{0};
  run_rank_threads(kRanks, [&](int rank, std::shared_ptr<Context>& context, Store&) {
    std::vector<std::unique_ptr<StartedCollective>> started;
    for (const Case& c : cases) {
      started.push_back(StartedCollective::start(c, *context, {}, barrier_entered));
    }
    Problems problems;
    for (const auto& s : started) {
      std::string failed = outcome(s->work());
      if (!failed.empty()) {
        problems.push_back(on(rank, s->which().name() + ": " + failed));
        continue;
      }
      inspect(rank, *s, problems);
    }
    report(problems);
  });
}

TEST(NonBlocking, EveryCollectiveMatchesTheReference) {
  run_every_collective(
      777, [](int, const StartedCollective& s, Problems& problems) { s.check(problems); });
}

// Work::algorithm() names a registered algorithm of the collective once it ran, and
// describe() names the collective.
TEST(NonBlocking, WorkNamesTheCollectiveAndTheAlgorithm) {
  run_every_collective(777, [](int rank, const StartedCollective& s, Problems& problems) {
    const Kind kind = s.which().kind;
    std::vector<std::string> registered = algorithms_for(kind);
    registered.pop_back();  // "auto" is a choice, not an algorithm that runs
    std::string algorithm = s.work().algorithm();
    if (std::find(registered.begin(), registered.end(), algorithm) == registered.end()) {
      problems.push_back(on(rank, s.which().name() + ": algorithm() is '" + algorithm +
                                      "', not a registered algorithm of " + kind_name(kind)));
    }
    std::string name = algo::collective_name(collective_of(kind));
    if (s.work().describe().find(name) == std::string::npos) {
      problems.push_back(on(rank, s.which().name() + ": describe() is '" + s.work().describe() +
                                      "', which does not name " + name));
    }
  });
}

// An ibarrier finishes on no rank before the last one (held back 200 ms) entered it.
TEST(NonBlocking, BarrierWaitsForTheLastRank) {
  std::atomic<int> entered{0};
  run_rank_threads(kRanks, [&](int rank, std::shared_ptr<Context>& context, Store&) {
    if (rank == kRanks - 1) std::this_thread::sleep_for(200ms);
    entered.fetch_add(1);
    Work barrier = ibarrier(*context);
    EXPECT_EQ(outcome(barrier), "") << on(rank, "ibarrier");
    EXPECT_EQ(entered.load(), kRanks) << on(rank, "left the barrier before every rank entered it");
  });
}

// 50 calls on one tag with different sizes, started back to back and waited for in reverse:
// each result is right only if every rank ran them in the order they were started.
TEST(NonBlocking, OneStreamKeepsItsOrderWhenWaitedInReverse) {
  run_rank_threads(kRanks, [](int rank, std::shared_ptr<Context>& context, Store&) {
    std::vector<std::unique_ptr<Reduction>> calls;
    for (int i = 0; i < 50; ++i) {
      size_t count = i % 10 == 0 ? 65536 : 1 + 31 * i;
      calls.push_back(std::make_unique<Reduction>(DataType::kInt32, count, mix64(i + 1), *context));
      calls.back()->start(*context);
    }
    Problems problems;
    for (int i = 49; i >= 0; --i) {
      calls[i]->finish(on(rank, "call " + std::to_string(i)), problems);
    }
    report(problems);
  });
}

// Two streams at once: ranks 0-2 start a large allreduce on tag 1 that cannot finish before
// rank 3 starts it, then many small allgathers on tag 2, which must all finish meanwhile (on a
// synchronous implementation the tag-1 start would not return: a deadlock until its timeout).
TEST(NonBlocking, StreamsOnDifferentTagsProgressIndependently) {
  constexpr int kLarge = 4;
  constexpr int kSmall = 20;
  run_rank_threads(kRanks, [](int rank, std::shared_ptr<Context>& context, Store& store) {
    CollectiveOptions large_options, small_options;
    large_options.tag = 1;
    small_options.tag = 2;
    large_options.timeout = small_options.timeout = 10s;
    std::vector<std::unique_ptr<Reduction>> large;
    auto start_large = [&] {
      for (int i = 0; i < kLarge; ++i) {
        large.push_back(
            std::make_unique<Reduction>(DataType::kFloat32, 200000 + i, mix64(100 + i), *context));
        large.back()->start(*context, large_options);
      }
    };
    const bool late = rank == kRanks - 1;
    if (!late) start_large();
    std::vector<std::unique_ptr<StartedCollective>> small;
    std::atomic<int> unused{0};
    for (int i = 0; i < kSmall; ++i) {
      Case c;
      c.kind = Kind::kAllgather;
      c.size = kRanks;
      c.count = 1 + i;
      c.type = DataType::kInt64;
      c.finish();
      small.push_back(StartedCollective::start(c, *context, small_options, unused));
    }
    Problems problems;
    for (const auto& s : small) {
      std::string failed = outcome(s->work(), 10s);
      if (failed.empty()) {
        s->check(problems);
      } else {
        problems.push_back(on(rank, "tag 2, " + s->which().name() + ": " + failed));
        break;  // the later ones fail the same way
      }
    }
    if (!late) {
      for (const auto& r : large) {
        if (r->work.test()) {
          problems.push_back(on(rank, "a tag-1 allreduce finished before rank 3 started it"));
        }
      }
    }
    // Rank 3 joins tag 1 only once every rank's tag-2 calls finished.
    if (!meet(store, "tag 2 done", rank, kRanks)) {
      problems.push_back(on(rank, "the ranks did not all finish tag 2 within 30 s"));
    }
    if (late) start_large();
    for (size_t i = 0; i < large.size(); ++i) {
      large[i]->finish(on(rank, "tag 1, call " + std::to_string(i)), problems);
    }
    report(problems);
  });
}

// Blocking calls join the same stream: they run after the non-blocking calls started before
// them (so those have finished when a blocking call returns). Odd ranks also make call 2 a
// blocking one, so that ranks mix the two forms differently for the same calls.
TEST(NonBlocking, BlockingCallRunsAfterTheQueuedCallsOfItsTag) {
  run_rank_threads(kRanks, [](int rank, std::shared_ptr<Context>& context, Store&) {
    constexpr int kCalls = 6;
    std::vector<std::unique_ptr<Reduction>> calls;
    Problems problems;
    for (int i = 0; i < kCalls; ++i) {
      calls.push_back(
          std::make_unique<Reduction>(DataType::kInt32, 50000 + 7 * i, mix64(200 + i), *context));
      bool blocking = i == kCalls - 1 || (i == 2 && rank % 2 == 1);
      if (!blocking) {
        calls.back()->start(*context);
        continue;
      }
      try {
        calls.back()->run(*context);
      } catch (const std::exception& e) {
        problems.push_back(
            on(rank, "blocking call " + std::to_string(i) + " threw " + describe_exception(e)));
      }
      for (int before = 0; before < i; ++before) {
        if (!calls[before]->work.test()) {
          problems.push_back(on(rank, "blocking call " + std::to_string(i) +
                                          " returned before call " + std::to_string(before) +
                                          ", started earlier on its tag, finished"));
        }
      }
    }
    for (int i = 0; i < kCalls; ++i) {
      calls[i]->finish(on(rank, "call " + std::to_string(i)), problems);
    }
    report(problems);
  });
}

// A 4 MiB allreduce finishes while the callers only poll test() between sleeps: progress does
// not need wait().
TEST(NonBlocking, ProgressWithoutWait) {
  run_rank_threads(kRanks, [](int rank, std::shared_ptr<Context>& context, Store&) {
    Reduction call(DataType::kFloat32, (4u << 20) / 4, mix64(300), *context);
    call.start(*context);
    auto start = Clock::now();
    while (!call.work.test() && Clock::now() - start < 30s) std::this_thread::sleep_for(5ms);
    EXPECT_TRUE(call.work.test()) << on(rank, "test() still false after 30 s of polling");
    Problems problems;
    call.finish(on(rank, "4 MiB allreduce"), problems);
    report(problems);
  });
}

// Starting returns at once, before the peers have joined; the work finishes only after the
// rank 1, held back until rank 0's start has returned, started it. (Ordered by a flag, not by
// time: a start that waited for the collective returns only after rank 1 gives up waiting, 20 s
// later, and sees it started.)
TEST(NonBlocking, StartReturnsBeforeThePeersJoin) {
  std::atomic<bool> late_rank_started{false};
  run_rank_threads(kRanks, [&](int rank, std::shared_ptr<Context>& context, Store& store) {
    Reduction call(DataType::kInt32, 1024, mix64(400), *context);
    if (rank == 1) {
      if (!await_flag(store, "rank 0 started", 20s)) ADD_FAILURE() << "rank 0's start waited";
      late_rank_started = true;
    }
    call.start(*context);
    if (rank == 0) {
      EXPECT_FALSE(late_rank_started) << "iallreduce on rank 0 returned only after rank 1 had "
                                         "started it: the start waits for the collective";
      raise_flag(store, "rank 0 started");
      while (!call.work.test() && !late_rank_started) std::this_thread::sleep_for(1ms);
      EXPECT_TRUE(late_rank_started) << "rank 0's allreduce finished before rank 1 started it";
    }
    Problems problems;
    call.finish(on(rank, "allreduce"), problems);
    report(problems);
  });
}

// wait(timeout) gives up (false) while a peer is missing, and the work goes on: it finishes,
// correct, once the peer joins.
TEST(NonBlocking, WaitWithTimeoutGivesUpAndTheWorkGoesOn) {
  run_rank_threads(kRanks, [](int rank, std::shared_ptr<Context>& context, Store& store) {
    CollectiveOptions options;
    options.timeout = 5s;
    Reduction call(DataType::kInt64, 3000, mix64(500), *context);
    const bool held_back = rank == kRanks - 1;
    if (held_back && !await_flag(store, "go", 20s)) ADD_FAILURE() << "rank 0 never said go";
    call.start(*context, options);
    Problems problems;
    if (rank == 0) {
      try {
        EXPECT_FALSE(call.work.wait(50ms)) << "finished without rank 3";
        EXPECT_FALSE(call.work.test()) << "finished without rank 3";
        EXPECT_FALSE(call.work.wait(20ms)) << "finished without rank 3";
        EXPECT_EQ(call.work.error(), nullptr);
      } catch (const std::exception& e) {
        problems.push_back(on(rank, "wait(timeout) threw " + describe_exception(e)));
      }
      raise_flag(store, "go");
    }
    call.finish(on(rank, "allreduce"), problems);
    report(problems);
  });
}

// A collective whose peer never joins times out: its Work throws TimeoutError; the calls queued
// behind it and every call started later, collective or point-to-point, fail with that cause.
TEST(NonBlocking, FailureReachesItsWorkAndEveryLaterWork) {
  run_rank_threads(2, [](int rank, std::shared_ptr<Context>& context, Store& store) {
    if (rank == 1) {
      // Never calls: rank 0's first allreduce times out.
      if (!await_flag(store, "done", 40s)) ADD_FAILURE() << "rank 0 never finished";
      return;
    }
    CollectiveOptions short_timeout;
    short_timeout.timeout = 500ms;
    Reduction first(DataType::kFloat32, 100, mix64(600), *context);
    Reduction queued(DataType::kFloat32, 100, mix64(601), *context);
    first.start(*context, short_timeout);
    queued.start(
        *context);  // the context's 30 s timeout: it must fail with the first, not time out
    Work queued_barrier = ibarrier(*context);
    auto start = Clock::now();

    std::string cause;
    try {
      first.work.wait();
      ADD_FAILURE() << "an allreduce without its peer succeeded";
    } catch (const TimeoutError& e) {
      cause = e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "expected TimeoutError, got " << describe_exception(e);
    }
    EXPECT_NE(first.work.error(), nullptr);
    EXPECT_TRUE(first.work.test());

    std::vector<char> byte(8, 1);
    Work later_collective = iallgather(*context, byte.data(), byte.data(), 4, DataType::kUint8);
    std::vector<char> sink(8);
    Work later_send = context->isend(1, byte.data(), byte.size(), 3);
    Work later_recv = context->irecv(1, sink.data(), sink.size(), 3);
    const std::vector<std::pair<std::string, const Work*>> followers = {
        {"the allreduce queued behind it", &queued.work},
        {"the barrier queued behind it", &queued_barrier},
        {"an allgather started after it failed", &later_collective},
        {"an isend started after it failed", &later_send},
        {"an irecv started after it failed", &later_recv}};
    for (const auto& [what, work] : followers) {
      std::string failed = outcome(*work, 5s);
      if (failed.empty()) {
        ADD_FAILURE() << what << " succeeded on a failed context";
        continue;
      }
      EXPECT_NE(work->error(), nullptr) << what;
      EXPECT_NE(failed.find(cause), std::string::npos)
          << what << " does not carry the original cause.\n  its error: " << failed
          << "\n  the cause: " << cause;
    }
    EXPECT_LT(ms_since(start), 10000) << "the followers did not fail promptly";
    raise_flag(store, "done");
  });
}

// How a Work cancelled by its context's destruction must end: finished within `bound`, with an
// error that is not its own timeout (ConnectionError, or a message saying why).
void expect_cancelled(const Work& work, std::chrono::milliseconds bound, const std::string& what) {
  bool finished = false;
  try {
    finished = work.wait(bound);
    if (finished) ADD_FAILURE() << what << " succeeded although its peer never called";
  } catch (const ConnectionError&) {
  } catch (const std::exception& e) {
    std::string text = e.what();
    bool says_why =
        text.find("cancel") != std::string::npos || text.find("destroy") != std::string::npos;
    EXPECT_TRUE(says_why && dynamic_cast<const TimeoutError*>(&e) == nullptr)
        << what << " ended with " << describe_exception(e)
        << ", not a ConnectionError or a cancellation";
  }
  if (!finished && !work.test()) {
    ADD_FAILURE() << what << " still running " << bound.count()
                  << " ms after its context was destroyed";
  }
  EXPECT_NE(work.error(), nullptr) << what;
  // The handle outlives its context: these must not touch it (AddressSanitizer watches).
  (void)work.describe();
  (void)work.algorithm();
  (void)work.source();
}

// The works of rank 0 cannot finish (rank 1 never calls); rank 0 drops its context. Each call
// has a 4 s timeout of its own: cancellation must come well before it.
void destroy_with_work_in_flight(
    const std::function<std::vector<Work>(Context&, std::vector<std::unique_ptr<Reduction>>&)>&
        start,
    const std::function<void(std::shared_ptr<Context>&, const std::vector<Work>&)>& destroy) {
  run_rank_threads(2, [&](int rank, std::shared_ptr<Context>& context, Store& store) {
    if (rank == 1) {
      if (!await_flag(store, "done", 40s)) ADD_FAILURE() << "rank 0 never finished";
      return;
    }
    std::vector<std::unique_ptr<Reduction>> buffers;
    std::vector<Work> works = start(*context, buffers);
    for (const Work& work : works) EXPECT_FALSE(work.test()) << work.describe();
    destroy(context, works);
    EXPECT_EQ(context, nullptr);
    for (size_t i = 0; i < works.size(); ++i) {
      expect_cancelled(works[i], 2s,
                       "work " + std::to_string(i) + " (" + works[i].describe() + ")");
    }
    raise_flag(store, "done");
  });
}

std::vector<Work> start_allreduces(Context& context, const std::vector<uint16_t>& tags, int per_tag,
                                   std::vector<std::unique_ptr<Reduction>>& buffers) {
  std::vector<Work> works;
  for (uint16_t tag : tags) {
    CollectiveOptions options;
    options.tag = tag;
    options.timeout = 4s;
    for (int i = 0; i < per_tag; ++i) {
      buffers.push_back(std::make_unique<Reduction>(DataType::kFloat32, 100000, mix64(i), context));
      buffers.back()->start(context, options);
      works.push_back(buffers.back()->work);
    }
  }
  return works;
}

void drop_now(std::shared_ptr<Context>& context, const std::vector<Work>&) {
  auto start = Clock::now();
  context.reset();
  EXPECT_LT(ms_since(start), 2000) << "destroying the context took long";
}

TEST(NonBlocking, DestroyingTheContextCancelsItsRunningAndQueuedWork) {
  destroy_with_work_in_flight(
      [](Context& context, std::vector<std::unique_ptr<Reduction>>& buffers) {
        return start_allreduces(context, {0}, 3, buffers);
      },
      drop_now);
}

TEST(NonBlocking, DestroyingTheContextCancelsQueuedWorkOnSeveralTags) {
  destroy_with_work_in_flight(
      [](Context& context, std::vector<std::unique_ptr<Reduction>>& buffers) {
        std::vector<Work> works = start_allreduces(context, {0, 1, 2}, 2, buffers);
        CollectiveOptions options;
        options.tag = 3;
        options.timeout = 4s;
        works.push_back(ibarrier(context, options));
        return works;
      },
      drop_now);
}

// Another thread sleeps in Work::wait() (no timeout) when the context goes: it must wake with
// the cancellation.
TEST(NonBlocking, DestroyingTheContextWakesAThreadBlockedInWait) {
  destroy_with_work_in_flight(
      [](Context& context, std::vector<std::unique_ptr<Reduction>>& buffers) {
        return start_allreduces(context, {0}, 2, buffers);
      },
      [](std::shared_ptr<Context>& context, const std::vector<Work>& works) {
        std::promise<std::string> woke;
        std::future<std::string> result = woke.get_future();
        Work last = works.back();
        std::thread waiter([last, &woke] {
          try {
            last.wait();
            woke.set_value("returned without an error");
          } catch (const std::exception& e) {
            woke.set_value(describe_exception(e));
          }
        });
        std::this_thread::sleep_for(50ms);  // let it block
        drop_now(context, works);
        if (result.wait_for(3s) == std::future_status::ready) {
          std::string how = result.get();
          EXPECT_EQ(how.find("TimeoutError"), std::string::npos)
              << "the waiter woke with its own timeout, not the cancellation: " << how;
          EXPECT_NE(how, "returned without an error");
        } else {
          ADD_FAILURE() << "the thread in Work::wait() still sleeps 3 s after the context went";
        }
        waiter.join();  // a waiter that never wakes is a hang: run_rank_threads aborts
      });
}

// --- Point-to-point ---

// Bytes of the message from `src` to `dst`: every pair its own size.
size_t pair_bytes(int src, int dst) { return 1000 + 13 * src + 7 * dst; }

// A finished Work has given its stream back: destroying the context right after wait() finds
// nothing in flight, so the peers see a clean goodbye, not a cancellation.
TEST(NonBlocking, WaitedWorkLeavesNothingInFlight) {
  run_rank_threads(2, [](int rank, std::shared_ptr<Context>& context, Store& store) {
    std::vector<float> data(256, 1.0f);
    Work last;
    for (int i = 0; i < 50; ++i) {
      last = iallreduce(*context, data.data(), data.data(), data.size(), DataType::kFloat32,
                        ReduceOp::kSum);
      last.wait();
    }
    if (rank == 1) {
      int value = 0;
      Work pending = context->irecv(0, &value, sizeof(value), /*tag=*/9, 10s);
      raise_flag(store, "posted");
      std::string how = outcome(pending, 20s);
      EXPECT_NE(how, "") << "a receive nobody sends completed";
      EXPECT_EQ(how.find("in flight"), std::string::npos)
          << "rank 0 destroyed its context with work in flight: " << how;
      return;
    }
    ASSERT_TRUE(await_flag(store, "posted", 10s));
    context.reset();  // right after the last wait()
    EXPECT_EQ(last.error(), nullptr);
  });
}

// A transfer that completed but was never looked at is not in flight: destroying the context
// leaves its Work successful and the peers undisturbed.
TEST(NonBlocking, CompletedTransferIsNotCancelled) {
  run_rank_threads(2, [](int rank, std::shared_ptr<Context>& context, Store& store) {
    if (rank == 1) {
      int value = 0;
      context->recv(0, &value, sizeof(value), /*tag=*/3);
      EXPECT_EQ(value, 42);
      Work pending = context->irecv(0, &value, sizeof(value), /*tag=*/9, 10s);
      raise_flag(store, "received");
      std::string how = outcome(pending, 20s);
      EXPECT_NE(how, "") << "a receive nobody sends completed";
      EXPECT_EQ(how.find("in flight"), std::string::npos)
          << "rank 0 cancelled a delivered send: " << how;
      return;
    }
    int value = 42;
    Work sent = context->isend(1, &value, sizeof(value), /*tag=*/3);
    ASSERT_TRUE(await_flag(store, "received", 10s));
    context.reset();  // without ever testing `sent`
    EXPECT_TRUE(sent.test());
    EXPECT_EQ(sent.error(), nullptr) << outcome(sent);
  });
}

// The last reference to a context may live in a call's own captures (a custom reduction holding
// the context): it then goes on the stream's worker, which must neither wait for itself nor
// touch the stream afterwards.
TEST(NonBlocking, ContextDestroyedOnItsOwnWorker) {
  run_rank_threads(2, [](int, std::shared_ptr<Context>& context, Store&) {
    std::vector<int32_t> data(64, 3);
    CollectiveOptions options;
    options.custom = [keep = context](void* inout, const void* in, size_t count) {
      auto* a = static_cast<int32_t*>(inout);
      const auto* b = static_cast<const int32_t*>(in);
      for (size_t i = 0; i < count; ++i) a[i] += b[i];
    };
    Work work = iallreduce(*context, data.data(), data.data(), data.size(), DataType::kInt32,
                           ReduceOp::kCustom, options);
    options.custom = nullptr;
    context.reset();  // the work's copy of the options now holds the only reference
    EXPECT_EQ(outcome(work, 10s), "");
    EXPECT_EQ(data[0], 6);
  });
}

// Destroying a context that had already failed (a peer left) still ends the waits in flight at
// once, instead of leaving them to their own deadlines.
TEST(NonBlocking, DestroyingAFailedContextEndsItsWaits) {
  run_rank_threads(3, [](int rank, std::shared_ptr<Context>& context, Store& store) {
    if (rank == 2) {
      context.reset();  // a clean goodbye: the others' next barrier fails
      raise_flag(store, "left");
      return;
    }
    ASSERT_TRUE(await_flag(store, "left", 10s));
    EXPECT_THROW(barrier(*context), ConnectionError);
    if (rank == 1) return;  // keeps its context until rank 0 is done (run_rank_threads)
    int value = 0;
    Work pending = context->irecv(1, &value, sizeof(value), /*tag=*/5, 8s);
    CollectiveOptions on_tag_4;
    on_tag_4.tag = 4;
    Work collective = ibarrier(*context, on_tag_4);
    std::promise<std::string> woke;
    std::future<std::string> result = woke.get_future();
    std::thread waiter([pending, &woke] { woke.set_value(outcome(pending, 20s)); });
    std::this_thread::sleep_for(50ms);
    Clock::time_point start = Clock::now();
    context.reset();
    EXPECT_LT(ms_since(start), 2000) << "destroying the failed context took that long";
    ASSERT_EQ(result.wait_for(3s), std::future_status::ready)
        << "the thread in Work::wait() still sleeps 3 s after the context went";
    std::string how = result.get();
    EXPECT_EQ(how.find("TimeoutError"), std::string::npos) << how;
    EXPECT_NE(how, "");
    EXPECT_NE(outcome(collective, 3s), "");
    waiter.join();
  });
}

TEST(NonBlocking, IsendIrecvBetweenEveryPair) {
  run_rank_threads(kRanks, [](int rank, std::shared_ptr<Context>& context, Store&) {
    std::vector<std::vector<uint8_t>> sent(kRanks), received(kRanks);
    std::vector<Work> sends, receives;
    for (int peer = 0; peer < kRanks; ++peer) {
      if (peer == rank) continue;
      sent[peer] = make_pattern(rank, peer, pair_bytes(rank, peer), 7);
      sends.push_back(context->isend(peer, sent[peer].data(), sent[peer].size(), 7));
    }
    for (int peer = 0; peer < kRanks; ++peer) {
      if (peer == rank) continue;
      received[peer].assign(pair_bytes(peer, rank), 0);
      receives.push_back(context->irecv(peer, received[peer].data(), received[peer].size(), 7));
    }
    for (const Work& work : sends) EXPECT_EQ(outcome(work), "") << on(rank, "send");
    for (const Work& work : receives) {
      EXPECT_EQ(outcome(work), "") << on(rank, "receive");
      EXPECT_EQ(work.algorithm(), "p2p");
    }
    for (int peer = 0; peer < kRanks; ++peer) {
      if (peer == rank) continue;
      EXPECT_EQ(first_mismatch(received[peer], peer, rank, 7), -1)
          << on(rank, "message from rank " + std::to_string(peer));
    }
  });
}

// irecv_any from ranks 1-3: three receives match the three senders, each reporting its source.
TEST(NonBlocking, IrecvAnyReportsTheSource) {
  run_rank_threads(kRanks, [](int rank, std::shared_ptr<Context>& context, Store&) {
    constexpr size_t kBytes = 4096;
    if (rank != 0) {
      std::vector<uint8_t> data = make_pattern(rank, 0, kBytes, 9);
      EXPECT_EQ(outcome(context->isend(0, data.data(), data.size(), 9)), "");
      return;
    }
    std::vector<std::vector<uint8_t>> buffers(kRanks - 1, std::vector<uint8_t>(kBytes));
    std::vector<Work> receives;
    for (auto& buffer : buffers) {
      receives.push_back(context->irecv_any({1, 2, 3}, buffer.data(), buffer.size(), 9));
    }
    std::vector<int> sources;
    for (size_t i = 0; i < receives.size(); ++i) {
      std::string failed = outcome(receives[i]);
      if (!failed.empty()) {
        ADD_FAILURE() << failed;
        continue;
      }
      int source = receives[i].source();
      if (source < 1 || source > 3) {
        ADD_FAILURE() << "source() is " << source;
        continue;
      }
      EXPECT_EQ(first_mismatch(buffers[i], source, 0, 9), -1)
          << "the data did not come from rank " << source << ", the source it reported";
      sources.push_back(source);
    }
    std::sort(sources.begin(), sources.end());
    EXPECT_EQ(sources, (std::vector<int>{1, 2, 3}));
  });
}

// A posted receive is pending, without a source, until its sender sends.
TEST(NonBlocking, ReceiveIsPendingUntilItsSenderSends) {
  run_rank_threads(2, [](int rank, std::shared_ptr<Context>& context, Store& store) {
    constexpr size_t kBytes = 256;
    if (rank == 1) {
      if (!await_flag(store, "posted", 20s)) ADD_FAILURE() << "rank 0 never posted";
      std::vector<uint8_t> data = make_pattern(1, 0, kBytes, 11);
      EXPECT_EQ(outcome(context->isend(0, data.data(), data.size(), 11)), "");
      return;
    }
    std::vector<uint8_t> buffer(kBytes);
    auto start = Clock::now();
    Work receive = context->irecv_any({1}, buffer.data(), buffer.size(), 11, 5s);
    // Generous for a descheduled thread; a start that waited for the sender would take 5 s.
    EXPECT_LT(ms_since(start), 2000) << "irecv_any waited for its sender";
    EXPECT_FALSE(receive.test());
    EXPECT_EQ(receive.source(), -1) << "a source before anything matched";
    try {
      EXPECT_FALSE(receive.wait(30ms));
    } catch (const std::exception& e) {
      ADD_FAILURE() << "wait(30 ms) threw " << describe_exception(e);
    }
    raise_flag(store, "posted");
    EXPECT_EQ(outcome(receive), "");
    EXPECT_EQ(receive.source(), 1);
    EXPECT_EQ(first_mismatch(buffer, 1, 0, 11), -1);
  });
}

// Rank 0 starts sends to every peer (small and large, on several tags) before any peer posts a
// receive; the peers then receive in the reverse order. Large sends wait for their receiver,
// so a start that waited for its send would deadlock here.
TEST(NonBlocking, ManyOutstandingIsendsToDifferentPeers) {
  constexpr int kPerPeer = 6;
  // One large (rendezvous) send per peer among small (eager) ones.
  auto bytes_of = [](int i) { return i == 1 ? size_t{1} << 20 : size_t{1000}; };
  run_rank_threads(kRanks, [&](int rank, std::shared_ptr<Context>& context, Store& store) {
    if (rank == 0) {
      std::vector<std::vector<uint8_t>> data;
      std::vector<Work> sends;
      data.reserve((kRanks - 1) * kPerPeer);
      for (int peer = 1; peer < kRanks; ++peer) {
        for (int i = 0; i < kPerPeer; ++i) {
          data.push_back(make_pattern(0, peer, bytes_of(i), 20 + i));
          sends.push_back(context->isend(peer, data.back().data(), data.back().size(), 20 + i, 3s));
        }
      }
      raise_flag(store, "sent");
      for (size_t i = sends.size(); i-- > 0;) EXPECT_EQ(outcome(sends[i]), "") << i;
      return;
    }
    if (!await_flag(store, "sent", 20s)) ADD_FAILURE() << "rank 0 never finished starting";
    for (int i = kPerPeer - 1; i >= 0; --i) {
      std::vector<uint8_t> buffer(bytes_of(i));
      std::string failed = outcome(context->irecv(0, buffer.data(), buffer.size(), 20 + i, 5s));
      EXPECT_EQ(failed, "") << on(rank, "tag " + std::to_string(20 + i));
      if (failed.empty()) {
        EXPECT_EQ(first_mismatch(buffer, 0, rank, 20 + i), -1)
            << on(rank, "tag " + std::to_string(20 + i));
      }
    }
  });
}

// Both ranks send 4 MiB to each other first and receive after: fine when a send only posts,
// a deadlock (until the 5 s timeout) when it waits for its receiver.
TEST(NonBlocking, BothRanksSendFirstThenReceive) {
  run_rank_threads(2, [](int rank, std::shared_ptr<Context>& context, Store&) {
    constexpr size_t kBytes = 4u << 20;
    const int peer = 1 - rank;
    std::vector<uint8_t> out = make_pattern(rank, peer, kBytes, 30);
    std::vector<uint8_t> in(kBytes);
    Work send = context->isend(peer, out.data(), out.size(), 30, 5s);
    Work receive = context->irecv(peer, in.data(), in.size(), 30, 5s);
    EXPECT_EQ(outcome(receive), "") << on(rank, "receive");
    EXPECT_EQ(outcome(send), "") << on(rank, "send");
    EXPECT_EQ(first_mismatch(in, peer, rank, 30), -1) << on(rank, "4 MiB from the peer");
  });
}

// Point-to-point tags are a space of their own. Rank 0 posts sends with tags 0..11, as many
// as the collectives both ranks then run on tag 0, each of the same byte size as one
// collective's message, and rank 1 receives them only after the collectives. Where user tag n
// is the transport tag of collective #n on tag 0, the collective consumes the user's message
// (and the user's receive the collective's).
TEST(NonBlocking, PointToPointTagsDoNotCollideWithCollectives) {
  run_rank_threads(2, [](int rank, std::shared_ptr<Context>& context, Store&) {
    constexpr int kCalls = 12;
    constexpr size_t kCount = 16;  // int64: 128 bytes
    constexpr size_t kBytes = kCount * 8;
    CollectiveOptions options;
    options.timeout = 5s;
    std::vector<std::vector<uint8_t>> payload(kCalls);
    std::vector<Work> sends;
    if (rank == 0) {
      for (int tag = 0; tag < kCalls; ++tag) {
        payload[tag] = make_pattern(0, 1, kBytes, 40 + tag);
        sends.push_back(context->isend(1, payload[tag].data(), kBytes, tag, 5s));
      }
    }
    Problems problems;
    for (int i = 0; i < kCalls; ++i) {
      Reduction call(DataType::kInt64, kCount, mix64(700 + i), *context);
      std::string what = on(rank, "allreduce " + std::to_string(i) + " on tag 0");
      try {
        call.run(*context, options);
        call.check(what, problems);
      } catch (const std::exception& e) {
        problems.push_back(what + " threw " + describe_exception(e));
        break;
      }
    }
    if (rank == 0) {
      for (const Work& send : sends) {
        std::string failed = outcome(send, 10s);
        if (!failed.empty()) problems.push_back(on(rank, failed));
      }
    } else {
      for (int tag = 0; tag < kCalls; ++tag) {
        std::vector<uint8_t> buffer(kBytes);
        std::string failed = outcome(context->irecv(0, buffer.data(), kBytes, tag, 5s), 10s);
        if (!failed.empty()) {
          problems.push_back(on(rank, failed));
        } else if (first_mismatch(buffer, 0, 1, 40 + tag) != -1) {
          problems.push_back(on(rank, "the p2p message with tag " + std::to_string(tag) +
                                          " holds other bytes than rank 0 sent"));
        }
      }
    }
    report(problems);
  });
}

// Tags from 2^63 up are the collectives': every point-to-point entry point refuses them with
// InvalidArgument before any traffic; the largest user tag works.
TEST(NonBlocking, PointToPointTagFromTwoToTheSixtyThreeIsRejected) {
  run_rank_threads(2, [](int rank, std::shared_ptr<Context>& context, Store&) {
    const uint64_t largest = (uint64_t{1} << 63) - 1;
    std::vector<uint8_t> buffer(64);
    if (rank == 0) {
      for (uint64_t tag : {uint64_t{1} << 63, ~uint64_t{0}}) {
        SCOPED_TRACE("tag " + std::to_string(tag));
        auto t = 300ms;  // bounds an implementation that accepts the tag and waits instead
        EXPECT_THROW(context->isend(1, buffer.data(), buffer.size(), tag, t), InvalidArgument);
        EXPECT_THROW(context->irecv(1, buffer.data(), buffer.size(), tag, t), InvalidArgument);
        EXPECT_THROW(context->irecv_any({1}, buffer.data(), buffer.size(), tag, t),
                     InvalidArgument);
        EXPECT_THROW(context->send(1, buffer.data(), buffer.size(), tag, t), InvalidArgument);
        EXPECT_THROW(context->recv(1, buffer.data(), buffer.size(), tag, t), InvalidArgument);
      }
      std::vector<uint8_t> data = make_pattern(0, 1, buffer.size(), 50);
      EXPECT_EQ(outcome(context->isend(1, data.data(), data.size(), largest)), "");
    } else {
      EXPECT_EQ(outcome(context->irecv(0, buffer.data(), buffer.size(), largest)), "");
      EXPECT_EQ(first_mismatch(buffer, 0, 1, 50), -1);
    }
  });
}

// on_finish: the callback runs once, after the result is in the buffer (it reads it), on the
// stream's worker for queued work and at once for finished work; a failure reaches it too.
TEST(NonBlocking, OnFinishRunsAfterTheResultIsInPlace) {
  run_rank_threads(kRanks, [](int rank, std::shared_ptr<Context>& context, Store&) {
    std::vector<int64_t> data(1000, rank + 1);
    std::promise<int64_t> seen;
    std::atomic<int> calls{0};
    std::thread::id caller = std::this_thread::get_id(), ran_on;
    Work work = iallreduce(*context, data.data(), data.data(), data.size(), DataType::kInt64,
                           ReduceOp::kSum);
    work.on_finish([&](std::exception_ptr error) {
      ++calls;
      ran_on = std::this_thread::get_id();
      seen.set_value(error ? -1 : data.back());
    });
    auto future = seen.get_future();
    ASSERT_EQ(future.wait_for(30s), std::future_status::ready) << on(rank, "callback never ran");
    EXPECT_EQ(future.get(), kRanks * (kRanks + 1) / 2) << on(rank, "callback saw the old data");
    EXPECT_EQ(outcome(work), "");
    // Finished work: the callback runs at once, in this thread.
    bool ran_here = false;
    work.on_finish([&](std::exception_ptr error) {
      ran_here = std::this_thread::get_id() == caller && error == nullptr;
    });
    EXPECT_TRUE(ran_here) << on(rank, "on_finish of finished work did not run in the caller");
    EXPECT_EQ(calls.load(), 1);
    EXPECT_NE(ran_on, caller) << on(rank, "the callback of queued work ran in the starting thread");
  });
}

// wait() on work that is next on an idle stream runs it in the waiting thread instead of
// waiting for the worker to wake (Stream::run_here_if_next). Whether the caller or the worker
// gets there first is a race, so: results and order must hold either way, and in 200 tries
// the caller (which goes straight from the start to the wait) must win at least once. (The
// callback has run before wait() returns, so reading what it wrote is safe.)
TEST(NonBlocking, WaitRunsTheNextWorkInTheWaitingThread) {
  run_rank_threads(2, [](int rank, std::shared_ptr<Context>& context, Store&) {
    int ran_here = 0;
    for (int i = 0; i < 200; ++i) {
      std::vector<int32_t> data(8, rank + i);
      std::thread::id ran_on;
      Work work = iallreduce(*context, data.data(), data.data(), data.size(), DataType::kInt32,
                             ReduceOp::kSum);
      work.on_finish([&](std::exception_ptr) { ran_on = std::this_thread::get_id(); });
      work.wait();
      ASSERT_EQ(data[7], 2 * i + 1) << on(rank, "allreduce " + std::to_string(i));
      if (ran_on == std::this_thread::get_id()) ++ran_here;
    }
    EXPECT_GT(ran_here, 0) << on(rank, "no wait() ran its work in the waiting thread");
  });
}

TEST(NonBlocking, OnFinishReportsTheFailure) {
  run_rank_threads(2, [](int rank, std::shared_ptr<Context>& context, Store&) {
    std::vector<float> data(16, 1.0f);
    std::promise<std::string> why;
    if (rank == 1) context->abort("rank 1 gives up on purpose");
    Work work = iallreduce(*context, data.data(), data.data(), data.size(), DataType::kFloat32,
                           ReduceOp::kSum);
    work.on_finish([&](std::exception_ptr error) {
      try {
        if (error) std::rethrow_exception(error);
        why.set_value("");
      } catch (const std::exception& e) {
        why.set_value(e.what());
      }
    });
    auto future = why.get_future();
    ASSERT_EQ(future.wait_for(30s), std::future_status::ready) << on(rank, "callback never ran");
    EXPECT_NE(future.get().find("gives up on purpose"), std::string::npos) << on(rank, "");
  });
}

TEST(NonBlocking, DefaultConstructedWorkIsFinished) {
  Work work;
  EXPECT_TRUE(work.test());
  EXPECT_NO_THROW(work.wait());
  EXPECT_TRUE(work.wait(0ms));
  EXPECT_EQ(work.error(), nullptr);
  EXPECT_EQ(work.source(), -1);
  bool called = false;
  work.on_finish([&](std::exception_ptr error) { called = error == nullptr; });
  EXPECT_TRUE(called);
}

}  // namespace
}  // namespace gloo_lite::test
