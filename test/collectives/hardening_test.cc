// Races and failures that used to give silent wrong results or lose their cause (issue 9):
//  - two threads issuing collectives on one tag: every rank fails with an error naming the
//    race, and no call returns a wrong value;
//  - Context::split from several threads: never a communicator of the wrong size;
//  - a custom reduction that throws on one rank fails every rank promptly with that cause;
//  - a size mismatch between two ranks reaches the others as a mismatch, not "closed";
//  - a timeout names the collective and the rank that never arrived, on every rank, also when
//    the hang reports' grace period outlasts their budget (TCP store; issue 23);
//  - contexts created again and again on one store, and a restarted job on the same store,
//    connect at once;
//  - the flight recorder lists the recent collectives;
//  - min/max of +0/-0 and of NaNs end with the same bits on every rank, whatever algorithm;
//  - a forked child of a rank neither uses nor closes its parent's context, on every transport.
// Ranks are real processes (file store, unless said), except where threads of one process are
// the point.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "gloo_lite/algorithms/registry.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/collectives.h"
#include "gloo_lite/context_engine.h"
#include "gloo_lite/hang_report.h"
#include "gloo_lite/transport/mixed_device.h"
#include "rendezvous/stores.h"
#include "test/collectives/process_sync.h"
#include "test/collectives/rank_run.h"
#include "test/support/test_support.h"
#include "test/transport/harness.h"
#include "transport_shm/shm_device.h"

namespace gloo_lite::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

ContextOptions with_timeout(std::chrono::milliseconds timeout) {
  ContextOptions options;
  options.timeout = timeout;
  return options;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(SameTagFromTwoThreads, FailsEveryRankInsteadOfMixingCalls) {
  constexpr int kRanks = 2;
  constexpr int kCalls = 200;
  ContextOptions options;
  options.timeout = 5s;
  auto results = run_context_processes(
      kRanks,
      [&](Context& context) {
        std::atomic<int> wrong{0};
        std::atomic<int> failed{0};
        std::mutex mutex;
        std::string error;
        std::atomic<int> ready{0};
        auto body = [&](int thread) {
          // Both threads enter their first allreduce together, as threads racing on one tag
          // do. (Calls that never overlap on any rank, issued in different orders on different
          // ranks, cannot be told apart by any library: see collectives.h.)
          ready += 1;
          while (ready.load() < 2) std::this_thread::yield();
          for (int call = 0; call < kCalls; ++call) {
            // Thread t's value on rank r; the threads' sums differ, so a call of thread 0
            // matched with thread 1's on the other rank gives a wrong value. 2 MiB, so that a
            // call lasts a millisecond or more: with tiny calls, a thread descheduled for a
            // millisecond on a loaded machine let the other run dozens of calls alone on each
            // rank, never overlapping, paired across threads (invisible to any library).
            std::vector<int64_t> data(1 << 18, (thread + 1) * 1000 + context.rank());
            try {
              allreduce(context, data);
            } catch (const std::exception& e) {
              failed += 1;
              std::lock_guard<std::mutex> lock(mutex);
              if (error.empty()) error = e.what();
              return;
            }
            int64_t expected = 0;
            for (int r = 0; r < kRanks; ++r) expected += (thread + 1) * 1000 + r;
            if (data[0] != expected) wrong += 1;
          }
        };
        auto start = Clock::now();
        std::thread first(body, 0);
        std::thread second(body, 1);
        first.join();
        second.join();
        // On a rank where the race shows, no call returns; on the other rank, a thread's call
        // that completed before the race was seen anywhere may have been matched with the
        // other thread's (no library can tell them apart): at most that one per thread.
        EXPECT_LE(wrong.load(), 2) << "rank " << context.rank() << ": allreduces returned wrong "
                                   << "values without an error";
        EXPECT_GT(failed.load(), 0) << "rank " << context.rank() << ": the race went unnoticed";
        EXPECT_TRUE(contains(error, "another thread"))
            << "rank " << context.rank() << ": " << error;
        EXPECT_LT(seconds_since(start), 4.0) << "rank " << context.rank() << " failed slowly";
        store_barrier(context, "done");
      },
      60s, options);
  expect_all_ok(results);
}

TEST(SplitFromSeveralThreads, NeverBuildsAContextOfTheWrongSize) {
  constexpr int kRanks = 4;
  constexpr int kThreads = 3;
  constexpr int kRounds = 4;
  ContextOptions options;
  options.timeout = 3s;
  auto results = run_context_processes(
      kRanks,
      [&](Context& context) {
        std::atomic<int> wrong_size{0};
        auto body = [&](int color) {
          for (int round = 0; round < kRounds; ++round) {
            try {
              auto sub = context.split(color, context.rank());
              if (!sub || sub->size() != kRanks) wrong_size += 1;
            } catch (const Error&) {
              return;  // a clear refusal is a correct outcome of racing splits
            }
          }
        };
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) threads.emplace_back(body, t);
        for (auto& thread : threads) thread.join();
        EXPECT_EQ(wrong_size.load(), 0) << "rank " << context.rank();
        store_barrier(context, "done");
      },
      60s, options);
  expect_all_ok(results);
}

TEST(CustomReductionThrows, FailsEveryRankPromptlyWithTheCause) {
  constexpr int kRanks = 3;
  ContextOptions options;
  options.timeout = 30s;
  auto results = run_context_processes(
      kRanks,
      [&](Context& context) {
        CollectiveOptions call;
        call.algorithm = "ring";
        int rank = context.rank();
        call.custom = [rank](void* dst, const void* src, size_t elements) {
          if (rank == 1) throw std::runtime_error("user reduction refused");
          auto* d = static_cast<int32_t*>(dst);
          const auto* s = static_cast<const int32_t*>(src);
          for (size_t i = 0; i < elements; ++i) d[i] += s[i];
        };
        std::vector<int32_t> data(3000, 1);
        auto start = Clock::now();
        try {
          allreduce(context, data.data(), data.data(), data.size(), DataType::kInt32,
                    ReduceOp::kCustom, call);
          ADD_FAILURE() << "rank " << rank << ": allreduce returned";
        } catch (const std::runtime_error& e) {
          std::string what = e.what();
          EXPECT_TRUE(contains(what, "user reduction refused")) << "rank " << rank << ": " << what;
          if (rank != 1) {
            EXPECT_TRUE(contains(what, "rank 1")) << "rank " << rank << ": " << what;
          }
        }
        EXPECT_LT(seconds_since(start), 2.0) << "rank " << rank << " waited for its deadline";
        store_barrier(context, "done");
      },
      60s, options);
  expect_all_ok(results);
}

TEST(SizeMismatch, ReachesTheOtherRanksAsAMismatchNotAsClosed) {
  constexpr int kRanks = 4;
  ContextOptions options;
  options.timeout = 30s;
  auto results = run_context_processes(
      kRanks,
      [&](Context& context) {
        CollectiveOptions call;
        call.algorithm = "ring";
        // Rank 3 gives one element fewer: its ring neighbours see messages of the wrong size.
        std::vector<int32_t> data(context.rank() == 3 ? 299 : 300, 1);
        auto start = Clock::now();
        try {
          allreduce(context, data.data(), data.data(), data.size(), ReduceOp::kSum, call);
          ADD_FAILURE() << "rank " << context.rank() << ": allreduce returned";
        } catch (const Error& e) {
          std::string what = e.what();
          EXPECT_TRUE(contains(what, "mismatch")) << "rank " << context.rank() << ": " << what;
          EXPECT_FALSE(contains(what, "clean shutdown"))
              << "rank " << context.rank() << ": " << what;
        }
        EXPECT_LT(seconds_since(start), 2.0) << "rank " << context.rank() << " failed slowly";
        store_barrier(context, "done");
      },
      60s, options);
  expect_all_ok(results);
}

TEST(Timeout, EveryRankNamesTheCollectiveAndTheRankThatNeverArrived) {
  constexpr int kRanks = 4;
  constexpr int kLate = 2;
  ContextOptions options;
  options.timeout = 1500ms;
  auto results = run_context_processes(
      kRanks,
      [&](Context& context) {
        std::vector<float> data(100, 1.0f);
        allreduce(context, data);  // #0: everyone is here
        if (context.rank() == kLate) {
          std::this_thread::sleep_for(4s);  // misses #1 entirely
          EXPECT_THROW(allreduce(context, data), ConnectionError);
        } else {
          auto start = Clock::now();
          try {
            allreduce(context, data);
            ADD_FAILURE() << "rank " << context.rank() << ": allreduce #1 returned";
          } catch (const Error& e) {
            std::string what = e.what();
            EXPECT_TRUE(contains(what, "allreduce #1")) << what;
            EXPECT_TRUE(contains(what, "rank 2 never arrived")) << what;
          }
          // The deadline, the grace period for the reports (200 ms) and a margin.
          EXPECT_LT(seconds_since(start), 2.7) << "rank " << context.rank();
        }
        store_barrier(context, "done");
      },
      60s, options);
  expect_all_ok(results);
}

// With a timeout of 3.5 s or more, the hang reports' grace period (a tenth of it) reaches past
// the part of the post-timeout budget they may use (350 ms): the polling ran its last store
// reads on a deadline already passed, and over the TCP store (whose expired reads throw; the file
// store's checks ignore deadlines) the survivors said "the store could not be reached" instead of
// naming the rank that never came (issue 23, item 7).
TEST(Timeout, SurvivorsNameTheAbsentRankNotTheStoreWhenTheGraceOutlastsTheBudget) {
  constexpr int kRanks = 3;  // + the store server's process
  constexpr int kAbsent = 2;
  ContextOptions options;
  options.timeout = 4s;  // grace 400 ms
  SharedMapping<std::atomic<int>> port;
  auto keys_of = [](const std::string& prefix) {
    std::vector<std::string> keys;
    for (int r = 0; r < kRanks; ++r) keys.push_back(prefix + std::to_string(r));
    return keys;
  };
  auto results = run_processes(
      kRanks + 1,
      [&](int rank) {
        if (rank == kRanks) {
          // The store lives in a process of its own (no thread in the forking parent), until
          // every rank has said it is done.
          TcpStoreServer server(SocketAddress::resolve("127.0.0.1", 0));
          auto store = make_tcp_store("127.0.0.1", server.port(), Deadline::after(10s));
          port->store(server.port());
          store->wait(keys_of("test/left/"), Deadline::after(50s));
          return;
        }
        while (port->load() == 0) std::this_thread::sleep_for(10ms);
        auto store =
            make_tcp_store("127.0.0.1", static_cast<uint16_t>(port->load()), Deadline::after(10s));
        auto context = Context::create(store, rank, kRanks, loopback_device(), options);
        // The survivors enter the call together: one that came more than the grace period
        // after the other (a loaded machine, a sanitizer) would rightly be named too.
        store->set("test/ready/" + std::to_string(rank), {1}, Deadline::after(10s));
        store->wait(keys_of("test/ready/"), Deadline::after(30s));
        if (rank != kAbsent) {
          std::vector<float> data(100, 1.0f);
          try {
            allreduce(*context, data);
            ADD_FAILURE() << "rank " << rank << ": allreduce returned without rank 2";
          } catch (const TimeoutError& e) {
            std::string what = e.what();
            EXPECT_TRUE(contains(what, "rank 2 never arrived")) << what;
            EXPECT_FALSE(contains(what, "could not be reached")) << what;
          } catch (const ConnectionError& e) {
            // The other survivor's abort came first: its text is the verdict.
            EXPECT_TRUE(contains(e.what(), "rank 2 never arrived")) << e.what();
          }
        }
        // Rank 2 never calls: it only outlives the others' calls.
        store->set("test/done/" + std::to_string(rank), {1}, Deadline::after(10s));
        store->wait(keys_of("test/done/"), Deadline::after(50s));
        store->set("test/left/" + std::to_string(rank), {1}, Deadline::after(10s));
      },
      60s);
  expect_all_ok(results);
}

TEST(ContextsOnOneStore, CanBeCreatedAgainAndAgainWhileOthersLive) {
  constexpr int kRanks = 3;
  ContextOptions options;
  options.timeout = 10s;
  auto results = run_context_processes(
      kRanks,
      [&](Context& first) {
        for (int round = 0; round < 3; ++round) {
          auto start = Clock::now();
          auto second = Context::create(engine_of(first).store(), first.rank(), kRanks,
                                        engine_of(first).device(), with_timeout(3s));
          EXPECT_LT(seconds_since(start), 2.0) << "rank " << first.rank() << ", round " << round;
          std::vector<int32_t> a(10, first.rank());
          std::vector<int32_t> b(10, 1);
          allreduce(first, a);
          allreduce(*second, b);
          EXPECT_EQ(a[0], 0 + 1 + 2);
          EXPECT_EQ(b[0], kRanks);
        }
        store_barrier(first, "done");
      },
      60s, options);
  expect_all_ok(results);
}

TEST(ContextsOnOneStore, ARetryAfterAFailedCreationConnectsAtOnce) {
  // Ranks 0 and 1 try to create a context without rank 2 and time out; then all three create
  // one. Rank 2 must not be misled by the addresses of the failed attempt.
  constexpr int kRanks = 3;
  TempDir directory;
  auto results = run_processes(
      kRanks,
      [&](int rank) {
        auto store = make_file_store(directory.path());
        if (rank < 2) {
          EXPECT_THROW(Context::create(store, rank, kRanks, loopback_device(), with_timeout(1s)),
                       TimeoutError);
          std::this_thread::sleep_for(1s);  // rank 2 starts meanwhile and reads the store
        } else {
          std::this_thread::sleep_for(1500ms);
        }
        auto start = Clock::now();
        auto context = Context::create(store, rank, kRanks, loopback_device(), with_timeout(4s));
        EXPECT_LT(seconds_since(start), 2.0) << "rank " << rank;
        std::vector<int32_t> data(10, 1);
        allreduce(*context, data);
        EXPECT_EQ(data[0], kRanks);
        store_barrier(*context, "done");
      },
      60s);
  expect_all_ok(results);
}

TEST(ContextsOnOneStore, ARestartedJobOnTheSameStoreConnectsAtOnce) {
  constexpr int kRanks = 3;
  TempDir directory;
  for (int job = 0; job < 2; ++job) {
    auto results = run_processes(
        kRanks,
        [&](int rank) {
          auto start = Clock::now();
          auto context = Context::create(make_file_store(directory.path()), rank, kRanks,
                                         loopback_device(), with_timeout(3s));
          EXPECT_LT(seconds_since(start), 2.0) << "job " << job << ", rank " << rank;
          std::vector<int32_t> data(10, 1);
          allreduce(*context, data);
          EXPECT_EQ(data[0], kRanks);
          store_barrier(*context, "done" + std::to_string(job));
        },
        60s);
    expect_all_ok(results);
  }
}

TEST(FlightRecorder, ListsTheRecentCollectivesInOrder) {
  run_context_threads(2, [](Context& context) {
    std::vector<float> data(8, 1.0f);
    allreduce(context, data);
    broadcast(context, data, 1);
    barrier(context);
    std::string record = context.flight_record();
    size_t first = record.find("#0 tag 0: allreduce float32 sum, 8 elements");
    size_t second = record.find("#1 tag 0: broadcast float32, root 1, 8 elements");
    size_t third = record.find("#2 tag 0: barrier");
    EXPECT_NE(first, std::string::npos) << record;
    EXPECT_NE(second, std::string::npos) << record;
    EXPECT_NE(third, std::string::npos) << record;
    EXPECT_LT(first, second);
    EXPECT_LT(second, third);
    EXPECT_TRUE(contains(record, "done in")) << record;
  });
}

// Each rank's float32 bits for element k of the pattern below (recursive doubling combines the
// same two values as op(x0, x1) on rank 0 and op(x1, x0) on rank 1, so an order-dependent
// kernel leaves +0 on one rank and -0 on the other).
uint32_t signed_zero_pattern(int rank, size_t k) {
  const uint32_t plus = 0, minus = 0x80000000u;
  switch (k) {
    case 0:
      return rank == 0 ? plus : minus;
    case 1:
      return rank == 0 ? minus : plus;
    case 2:
      return rank % 2 != 0 ? plus : minus;
    case 3:  // a NaN on every rank, each with its own payload and sign
      return 0x7fc00000u | static_cast<uint32_t>(rank + 1) | (rank % 2 != 0 ? minus : plus);
    case 4:  // a signalling NaN on one rank
      return rank == 1 ? 0x7fa00005u : 0x3f800000u;
    case 5:
      return rank == 3 ? 0xffc00000u : minus;
    case 6:
      return rank == 2 ? plus : minus;
    default: {
      const float value = static_cast<float>(rank) - 1.5f;
      uint32_t bits;
      std::memcpy(&bits, &value, sizeof bits);
      return bits;
    }
  }
}

TEST(MinMaxOfSignedZerosAndNaNs, EveryRankEndsWithTheSameBitsOnEveryAlgorithm) {
  constexpr int kRanks = 4;
  constexpr size_t kPattern = 8, kCount = 4096, kMaxAlgorithms = 32;
  struct Outcome {
    bool ran[kMaxAlgorithms][2];
    uint32_t bits[kMaxAlgorithms][2][kRanks][kPattern];
  };
  std::vector<std::string> names;
  for (const algo::Algorithm& algorithm : algo::all_algorithms()) {
    if (algorithm.collective == Collective::kAllreduce) names.push_back(algorithm.name);
  }
  ASSERT_LE(names.size(), kMaxAlgorithms);
  SharedMapping<Outcome> outcome;
  ContextOptions options;
  options.timeout = 30s;
  auto results = run_context_processes(
      kRanks,
      [&](Context& context) {
        const int rank = context.rank();
        for (size_t a = 0; a < names.size(); ++a) {
          for (const ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax}) {
            std::vector<uint32_t> data(kCount);
            for (size_t i = 0; i < kCount; ++i) data[i] = signed_zero_pattern(rank, i % kPattern);
            CollectiveOptions call;
            call.algorithm = names[a];
            try {
              allreduce(context, data.data(), data.data(), kCount, DataType::kFloat32, op, call);
            } catch (const InvalidArgument&) {
              continue;  // this algorithm declines 4 ranks of float32 (on every rank alike)
            }
            const int o = op == ReduceOp::kMin ? 0 : 1;
            outcome->ran[a][o] = true;
            for (size_t i = 0; i < kCount; ++i) {
              ASSERT_EQ(data[i], data[i % kPattern])
                  << names[a] << " " << op_name(op) << " rank " << rank << " element " << i;
            }
            std::memcpy(outcome->bits[a][o][rank], data.data(), sizeof(uint32_t) * kPattern);
          }
        }
        store_barrier(context, "done");
      },
      120s, options);
  expect_all_ok(results);
  for (size_t a = 0; a < names.size(); ++a) {
    for (int o = 0; o < 2; ++o) {
      if (!outcome->ran[a][o]) continue;
      const auto& bits = outcome->bits[a][o];
      const std::string what = names[a] + (o == 0 ? " min" : " max");
      const uint32_t zero = o == 0 ? 0x80000000u : 0u;  // -0 is the min, +0 the max
      for (const size_t k : {0, 1, 2, 6}) EXPECT_EQ(bits[0][k], zero) << what << " element " << k;
      for (const size_t k : {3, 4, 5}) {
        float value;
        std::memcpy(&value, &bits[0][k], sizeof value);
        EXPECT_TRUE(std::isnan(value)) << what << " element " << k;
      }
      float extreme;
      std::memcpy(&extreme, &bits[0][7], sizeof extreme);
      EXPECT_EQ(extreme, o == 0 ? -1.5f : 1.5f) << what;
      for (int rank = 1; rank < kRanks; ++rank) {
        for (size_t k = 0; k < kPattern; ++k) {
          EXPECT_EQ(bits[rank][k], bits[0][k])
              << what << ": rank " << rank << " and rank 0 differ at element " << k;
        }
      }
    }
  }
  // The algorithms where ranks were seen to differ take 4 ranks of float32 on any host.
  for (size_t a = 0; a < names.size(); ++a) {
    if (names[a] == "ring" || names[a] == "recursive_doubling" || names[a] == "halving_doubling") {
      EXPECT_TRUE(outcome->ran[a][0] && outcome->ran[a][1]) << names[a] << " declined the call";
    }
  }
}

// The one list of ranks in messages: sorted, runs compressed, at most 8 pieces.
TEST(RankList, CompressesRunsAndStaysShortForAnyNumberOfRanks) {
  EXPECT_EQ(rank_list({}), "");
  EXPECT_EQ(rank_list({2}), "2");
  EXPECT_EQ(rank_list({3, 0, 1}), "0, 1 and 3");
  EXPECT_EQ(rank_list({5, 1, 2, 3, 4, 9, 9}), "1\u20135 and 9");
  std::vector<int> all(99999), even(50000);
  for (int i = 0; i < 99999; ++i) all[i] = i + 1;
  for (int i = 0; i < 50000; ++i) even[i] = 2 * i;
  EXPECT_EQ(rank_list(all), "1\u201399999");
  EXPECT_EQ(rank_list(even), "0, 2, 4, 6, 8, 10, 12, 14 and 49992 more");
}

// Context::close is for other threads while calls run (the bindings' close); these are the
// ways a user reaches it that are not that.
TEST(Close, AnIdleCloseRefusesLaterCallsInsteadOfLeavingThemUnfinished) {
  run_context_threads(2, [](Context& context) {
    context.close();
    context.close();  // idempotent
    int32_t value = 0;
    int peer = 1 - context.rank();
    // Before: the transfer went out on the live mesh and its work never finished (test()
    // false forever, wait() returning without an error).
    try {
      Work work = context.irecv(peer, &value, sizeof(value), 7);
      ADD_FAILURE() << "irecv after close() was accepted";
    } catch (const ConnectionError& e) {
      EXPECT_TRUE(contains(e.what(), "closed")) << e.what();
    }
    EXPECT_THROW(context.send(peer, &value, sizeof(value), 7), ConnectionError);
    std::vector<float> data(4, 1.0f);
    CollectiveOptions tagged;
    tagged.tag = 3;
    EXPECT_THROW(allreduce(context, data.data(), data.data(), data.size(), DataType::kFloat32,
                           ReduceOp::kSum, tagged),
                 ConnectionError);
  });
}

TEST(Close, FromInsideACustomReductionEndsTheCallInsteadOfWaitingForIt) {
  ContextOptions options;
  options.timeout = 20s;
  auto results = run_context_processes(
      2,
      [&](Context& context) {
        CollectiveOptions call;
        call.algorithm = "ring";
        call.custom = [&context](void* dst, const void* src, size_t elements) {
          // Before: close() waited for the call it was called from, forever.
          if (context.rank() == 0) context.close();
          auto* d = static_cast<int32_t*>(dst);
          const auto* s = static_cast<const int32_t*>(src);
          for (size_t i = 0; i < elements; ++i) d[i] += s[i];
        };
        std::vector<int32_t> data(3000, 1);
        auto start = Clock::now();
        EXPECT_ANY_THROW(allreduce(context, data.data(), data.data(), data.size(), DataType::kInt32,
                                   ReduceOp::kCustom, call));
        EXPECT_LT(seconds_since(start), 5.0) << "rank " << context.rank();
      },
      60s, options);
  expect_all_ok(results);
}

TEST(Close, FromSeveralThreadsAtOnceStopsEachStreamOnce) {
  run_context_threads(2, [](Context& context) {
    std::vector<float> data(4, 1.0f);
    allreduce(context, data);  // the tag's stream and its worker exist
    std::vector<std::thread> closers;
    for (int i = 0; i < 4; ++i) closers.emplace_back([&] { context.close(); });
    for (auto& closer : closers) closer.join();
    EXPECT_THROW(allreduce(context, data), ConnectionError);
  });
}

// Runs in a forked child of rank 0 and owns its copy of the context: every call must throw
// InvalidArgument naming the call and the fork (it used to run as rank 0, with the parent's
// peers), a Work the parent started must fail there too (not drive the parent's transport),
// and dropping the copy must release nothing of the parent's (its goodbye used to close the
// parent's context). Returns a bit per thing that went wrong (0: none).
int check_forked_child(std::shared_ptr<Context> context, const Work& parents_receive) {
  const std::string parent = "this context was created in process " + std::to_string(getppid());
  int wrong = 0;
  int bit = 1;
  auto expect_refused = [&](const std::string& call, const std::function<void()>& body) {
    try {
      body();
      wrong |= bit;
    } catch (const InvalidArgument& e) {
      const std::string text = e.what();
      if (!contains(text, call) || !contains(text, parent) ||
          !contains(text, "a forked child cannot use it")) {
        wrong |= bit;
      }
    } catch (...) {
      wrong |= bit;
    }
    bit <<= 1;
  };
  std::vector<int64_t> data(4, 100);
  expect_refused("allreduce on context", [&] { allreduce(*context, data); });
  expect_refused("send on context", [&] { context->send(1, data.data(), sizeof(int64_t), 3); });
  expect_refused("recv on context", [&] { context->irecv(1, data.data(), sizeof(int64_t), 3); });
  expect_refused("split on context", [&] { context->split(0, 0); });
  expect_refused("abort on context", [&] { context->abort("from the forked child"); });
  expect_refused("recv from rank 1 (tag 9) in process", [&] { parents_receive.wait(); });
  // The parent's receive is in flight in this copy: a close here must not abort the parent's
  // peers (the bindings' close() calls it).
  context->close();
  context.reset();  // the child's only reference
  return wrong;
}

std::shared_ptr<transport::Device> loopback_shm() { return shm::create_device(); }

// Shared memory first, then TCP, as the default table has them.
std::shared_ptr<transport::Device> loopback_mixed() {
  return transport::create_mixed_device(
      {{"shm", shm::create_device(), /*progresses_alone=*/false}, {"tcp", loopback_device(), true}},
      /*forced=*/false);
}

class ForkedChild : public ::testing::TestWithParam<std::shared_ptr<transport::Device> (*)()> {};

TEST_P(ForkedChild, NeitherUsesNorClosesItsParentsContext) {
  TempDir directory;
  auto results = run_processes(
      2,
      [&](int rank) {
        auto context = Context::create(make_file_store(directory.path()), rank, 2, GetParam()(),
                                       with_timeout(10s));
        barrier(*context);
        if (rank == 0) {
          int64_t never_sent = 0;
          Work receive = context->irecv(1, &never_sent, sizeof(never_sent), 9);
          pid_t child = fork();
          if (child == 0) _exit(check_forked_child(std::move(context), receive));
          int status = 0;
          ASSERT_EQ(waitpid(child, &status, 0), child);
          EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
              << "the forked child's checks that failed (bits): " << WEXITSTATUS(status);
        }
        // 1 + 2: the child's 100 must not have reached rank 1, nor its exit closed rank 0.
        std::vector<int64_t> data(4, rank + 1);
        allreduce(*context, data);
        EXPECT_EQ(data, std::vector<int64_t>(4, 3));
      },
      60s);
  expect_all_ok(results);
}

std::string transport_name(const ::testing::TestParamInfo<ForkedChild::ParamType>& info) {
  static const char* const names[] = {"tcp", "shm", "mixed"};
  return names[info.index];
}

INSTANTIATE_TEST_SUITE_P(Transports, ForkedChild,
                         ::testing::Values(&loopback_device, &loopback_shm, &loopback_mixed),
                         transport_name);

}  // namespace
}  // namespace gloo_lite::test
