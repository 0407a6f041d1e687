// The shared-memory collectives (algorithm "shm", gloo_lite/shm/): every collective
// it implements, with ranks as forked processes and as threads, P = 2, 3, 4, 8, several types
// and ops, sizes 0, 1, 4, odd and several chunks (this binary runs with 4 KiB chunks, so that
// "several chunks" stays small), in place and out of place, against the independent reference
// of reference.h. Then the failure cases: a killed rank, a stopped rank, a mismatched call, a
// custom reduction that throws, a late rank after a peer failed the first call (shm and
// messages), a segment that cannot be created (fallback), a context over two (faked) hosts, and
// nothing left in /dev/shm.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <dirent.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gloo_lite/algorithm_choice.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/collectives.h"
#include "gloo_lite/context_engine.h"
#include "rendezvous/stores.h"
#include "test/collectives/process_sync.h"
#include "test/collectives/reference.h"
#include "test/transport/harness.h"

namespace gloo_lite::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr size_t kChunkBytes = 4096;

// Before any knob is read (static initialisation, one thread): every rank of this binary, forked
// or thread, uses small chunks.
[[maybe_unused]] const bool kSmallChunks = [] {
  ::setenv("GLOO_LITE_SHM_CHUNK_BYTES", "4096", 1);
  return true;
}();

long elapsed_ms(Clock::time_point start) {
  return static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
}

enum class Kind { kAllreduce, kReduce, kReduceScatter, kAllgather, kBroadcast };

struct Case {
  Kind kind;
  DataType type;
  ReduceOp op;
  size_t count;  // the vector (allreduce, reduce, broadcast) or the base block size
  bool in_place;
  bool varied = false;  // v-variant blocks: count + 3 * rank, rank 1 empty
  int root = 0;
  std::string name() const {
    const char* kinds[] = {"allreduce", "reduce", "reduce_scatter", "allgather", "broadcast"};
    return std::string(kinds[static_cast<int>(kind)]) + (varied ? "v" : "") + " " +
           type_name(type) + " " + op_name(op) + " n=" + std::to_string(count) +
           (in_place ? " in place" : "") + " root " + std::to_string(root);
  }
};

// Sizes: empty, one element, 4 (16 bytes of float32: the most a reduction carries on the flag's
// line, HostSegment::kInlineBytes; 32 of float64: past it), odd, and several 4 KiB chunks for
// every element size.
std::vector<Case> cases(int ranks) {
  std::vector<Case> all;
  const size_t sizes[] = {0, 1, 4, 7, 1000, 5003};
  struct TypeOp {
    DataType type;
    ReduceOp op;
  };
  const TypeOp reductions[] = {
      {DataType::kFloat32, ReduceOp::kSum}, {DataType::kInt32, ReduceOp::kMax},
      {DataType::kFloat16, ReduceOp::kSum}, {DataType::kBFloat16, ReduceOp::kMin},
      {DataType::kInt64, ReduceOp::kBxor},  {DataType::kFloat64, ReduceOp::kProd},
      {DataType::kUint8, ReduceOp::kBand},  {DataType::kInt32, ReduceOp::kAvg},
      {DataType::kInt32, ReduceOp::kCustom}};
  int i = 0;
  for (size_t n : sizes) {
    for (const TypeOp& t : reductions) {
      bool in_place = (i++ % 2) == 0;
      all.push_back({Kind::kAllreduce, t.type, t.op, n, in_place});
      all.push_back({Kind::kReduceScatter, t.type, t.op, n / ranks + (n % 3), !in_place});
    }
    all.push_back({Kind::kReduce, DataType::kFloat32, ReduceOp::kSum, n, false, false, ranks - 1});
    all.push_back({Kind::kReduce, DataType::kInt64, ReduceOp::kMin, n, true, false, 0});
    all.push_back({Kind::kReduceScatter, DataType::kFloat32, ReduceOp::kSum, n / 2, false, true});
    for (DataType type : {DataType::kUint8, DataType::kFloat32, DataType::kFloat64}) {
      all.push_back({Kind::kAllgather, type, ReduceOp::kSum, n, (i++ % 2) == 0});
      all.push_back({Kind::kBroadcast, type, ReduceOp::kSum, n * 3, true, false, (i % ranks)});
    }
    all.push_back({Kind::kAllgather, DataType::kInt32, ReduceOp::kSum, n, false, true});
  }
  return all;
}

std::vector<size_t> blocks_of(const Case& c, int ranks) {
  std::vector<size_t> blocks(ranks, c.count);
  if (c.varied) {
    for (int r = 0; r < ranks; ++r) blocks[r] = r == 1 ? 0 : c.count + 3 * r;
  }
  return blocks;
}

// Runs case `c` on `context` with the shm algorithm and checks the result; returns problems.
Problems run_case(Context& context, const Case& c, uint64_t seed) {
  const int P = context.size();
  const int rank = context.rank();
  const size_t e = element_bytes(c.type);
  Inputs inputs{c.type, pattern_for(c.kind != Kind::kAllgather && c.kind != Kind::kBroadcast, c.op),
                seed, P};
  if (c.op == ReduceOp::kCustom) inputs.pattern = Pattern::kAdditive;
  CollectiveOptions options;
  options.algorithm = "shm";
  options.timeout = 60s;
  if (c.op == ReduceOp::kCustom) options.custom = plus_one_function(c.type);
  Problems problems;
  const std::string what =
      c.name() + " on rank " + std::to_string(rank) + " of " + std::to_string(P);
  auto bytes = [&](size_t n) { return std::vector<uint8_t>(std::max<size_t>(n * e, 1)); };
  switch (c.kind) {
    case Kind::kAllreduce:
    case Kind::kReduce: {
      auto input = bytes(c.count);
      auto output = bytes(c.count);
      fill_inputs(inputs, rank, 0, c.count, input.data());
      uint8_t* out = c.in_place ? input.data() : output.data();
      if (c.kind == Kind::kAllreduce) {
        allreduce(context, input.data(), out, c.count, c.type, c.op, options);
      } else {
        reduce(context, input.data(), out, c.count, c.type, c.op, c.root, options);
      }
      if (c.kind == Kind::kAllreduce || rank == c.root) {
        if (c.op == ReduceOp::kCustom) {
          // The reference of plus_one: the sum, plus P - 1; checked as a sum of P + (P - 1)
          // ones would be awkward, so compare against an exact integer loop.
          std::vector<int32_t> expect(c.count, 0), one(c.count);
          for (int r = 0; r < P; ++r) {
            fill_inputs(inputs, r, 0, c.count, one.data());
            for (size_t i = 0; i < c.count; ++i) expect[i] += one[i];
          }
          for (size_t i = 0; i < c.count; ++i) {
            int32_t got;
            std::memcpy(&got, out + i * e, sizeof(got));
            if (got != expect[i] + (P - 1)) {
              problems.push_back(what + ": element " + std::to_string(i) + " is " +
                                 std::to_string(got) + ", expected " +
                                 std::to_string(expect[i] + P - 1));
              break;
            }
          }
        } else {
          check_reduction(inputs, c.op, 0, c.count, out, what, problems);
        }
      }
      break;
    }
    case Kind::kReduceScatter: {
      std::vector<size_t> blocks = blocks_of(c, P);
      std::vector<size_t> offsets(P, 0);
      std::partial_sum(blocks.begin(), blocks.end() - 1, offsets.begin() + 1);
      size_t total = std::accumulate(blocks.begin(), blocks.end(), size_t{0});
      auto input = bytes(total);
      auto output = bytes(blocks[rank]);
      fill_inputs(inputs, rank, 0, total, input.data());
      uint8_t* out = c.in_place ? input.data() : output.data();
      reduce_scatterv(context, input.data(), out, blocks, c.type, c.op, options);
      if (c.op == ReduceOp::kCustom) {
        std::vector<int32_t> expect(blocks[rank], 0), one(total);
        for (int r = 0; r < P; ++r) {
          fill_inputs(inputs, r, 0, total, one.data());
          for (size_t i = 0; i < blocks[rank]; ++i) expect[i] += one[offsets[rank] + i];
        }
        for (size_t i = 0; i < blocks[rank]; ++i) {
          int32_t got;
          std::memcpy(&got, out + i * e, sizeof(got));
          if (got != expect[i] + (P - 1)) {
            problems.push_back(what + ": element " + std::to_string(i) + " wrong");
            break;
          }
        }
      } else {
        check_reduction(inputs, c.op, offsets[rank], blocks[rank], out, what, problems);
      }
      break;
    }
    case Kind::kAllgather: {
      std::vector<size_t> blocks = blocks_of(c, P);
      std::vector<size_t> offsets(P, 0);
      std::partial_sum(blocks.begin(), blocks.end() - 1, offsets.begin() + 1);
      size_t total = std::accumulate(blocks.begin(), blocks.end(), size_t{0});
      auto output = bytes(total);
      auto input = bytes(blocks[rank]);
      uint8_t* in = c.in_place ? output.data() + offsets[rank] * e : input.data();
      fill_inputs(inputs, rank, 0, blocks[rank], in);
      allgatherv(context, in, output.data(), blocks, c.type, options);
      for (int s = 0; s < P; ++s) {
        check_copy(inputs, s, 0, blocks[s], output.data() + offsets[s] * e,
                   what + " block " + std::to_string(s), problems);
      }
      break;
    }
    case Kind::kBroadcast: {
      auto data = bytes(c.count);
      if (rank == c.root) fill_inputs(inputs, rank, 0, c.count, data.data());
      broadcast(context, data.data(), c.count, c.type, c.root, options);
      check_copy(inputs, c.root, 0, c.count, data.data(), what, problems);
      break;
    }
  }
  return problems;
}

// Every case, then barriers that must hold back ranks that arrive early.
void run_all_cases(Context& context, std::atomic<int>& arrived) {
  const std::vector<Case> all = cases(context.size());
  uint64_t seed = 1;
  for (const Case& c : all) {
    Problems problems = run_case(context, c, seed++);
    for (const std::string& problem : problems) ADD_FAILURE() << problem;
    if (!problems.empty()) return;
  }
  CollectiveOptions options;
  options.algorithm = "shm";
  for (int round = 1; round <= 3; ++round) {
    // The last rank comes late: nobody may leave the barrier before it arrived.
    if (context.rank() == context.size() - 1) usleep(20000);
    arrived.fetch_add(1);
    barrier(context, options);
    EXPECT_GE(arrived.load(), round * context.size())
        << "rank " << context.rank() << " left barrier " << round << " early";
    barrier(context, options);
  }
}

class ShmProcesses : public ::testing::TestWithParam<int> {};

TEST_P(ShmProcesses, EveryCollectiveMatchesTheReference) {
  const int ranks = GetParam();
  SharedMapping<std::atomic<int>> arrived;
  expect_all_ok(run_context_processes(
      ranks, [&](Context& context) { run_all_cases(context, *arrived); }, 300s));
}

INSTANTIATE_TEST_SUITE_P(P, ShmProcesses, ::testing::Values(2, 3, 4, 8));

class ShmThreads : public ::testing::TestWithParam<int> {};

TEST_P(ShmThreads, EveryCollectiveMatchesTheReference) {
  const int ranks = GetParam();
  std::atomic<int> arrived{0};
  run_context_threads(ranks, [&](Context& context) { run_all_cases(context, arrived); });
}

INSTANTIATE_TEST_SUITE_P(P, ShmThreads, ::testing::Values(2, 3, 4, 8));

// The tuner takes shm on one host, for every collective it has. (Up to moderate sizes: with
// this binary's 4 KiB chunks a large call takes thousands of flag round trips, which the cost
// model rightly charges; the benchmark shows the default chunks at every size.)
TEST(Shm, AutoPicksShmOnOneHost) {
  run_context_threads(4, [](Context& context) {
    for (size_t count : {size_t{1}, size_t{1000}}) {
      for (const char* collective :
           {"allreduce", "reduce", "reduce_scatter", "allgather", "broadcast"}) {
        EXPECT_EQ(chosen_algorithm(context, collective, count, DataType::kFloat32), "shm")
            << collective << " of " << count;
      }
    }
    EXPECT_EQ(chosen_algorithm(context, "barrier", 0, DataType::kUint8), "shm");
    // Two streams at once: each has its own segment.
    std::vector<float> a(3000, 1.0f), b(3000, 2.0f);
    CollectiveOptions on_tag_1;
    on_tag_1.tag = 1;
    Work work = iallreduce(context, b.data(), b.data(), b.size(), DataType::kFloat32,
                           ReduceOp::kSum, on_tag_1);
    allreduce(context, a.data(), a.data(), a.size(), DataType::kFloat32, ReduceOp::kSum);
    work.wait();
    EXPECT_EQ(a[2999], 4.0f);
    EXPECT_EQ(b[2999], 8.0f);
  });
}

// collective_launch.cc remembers the algorithm per call shape: a call whose shape or requested
// algorithm differs from the remembered one must get its own verdict, and the result stays
// right. The flight recorder says what ran; chosen_algorithm (which never looks at the
// remembered verdicts) says what the tuner picks.
TEST(Shm, RememberedChoiceFollowsTheCallShape) {
  run_context_threads(2, [](Context& context) {
    struct Shape {
      size_t count;
      const char* requested;
      DataType type;
    };
    const std::vector<Shape> shapes = {
        {1000, "auto", DataType::kFloat32}, {1000, "ring", DataType::kFloat32},
        {1000, "auto", DataType::kFloat32}, {1 << 20, "auto", DataType::kFloat32},
        {1000, "auto", DataType::kInt32},   {1000, "halving_doubling", DataType::kFloat32},
        {1000, "auto", DataType::kFloat32}};
    for (int round = 0; round < 2; ++round) {
      for (const Shape& shape : shapes) {
        std::vector<int32_t> ints(shape.count, context.rank() + 1);
        std::vector<float> floats(shape.count, float(context.rank() + 1));
        void* data = shape.type == DataType::kInt32 ? static_cast<void*>(ints.data())
                                                    : static_cast<void*>(floats.data());
        CollectiveOptions options;
        options.algorithm = shape.requested;
        allreduce(context, data, data, shape.count, shape.type, ReduceOp::kSum, options);
        std::string expected = std::string(shape.requested) == "auto"
                                   ? chosen_algorithm(context, "allreduce", shape.count, shape.type)
                                   : shape.requested;
        EXPECT_EQ(engine_of(context).flight_recorder().entries().back().call.algorithm, expected)
            << shape.count << " elements, " << shape.requested << ", round " << round;
        bool right = shape.type == DataType::kInt32 ? ints.back() == 3 : floats.back() == 3.0f;
        EXPECT_TRUE(right) << shape.count << " elements, " << shape.requested;
      }
    }
  });
}

// The files of /dev/shm (the segment is a memfd: it must never appear there).
std::set<std::string> dev_shm_files() {
  std::set<std::string> names;
  if (DIR* dir = opendir("/dev/shm")) {
    while (dirent* entry = readdir(dir)) names.insert(entry->d_name);
    closedir(dir);
  }
  return names;
}

TEST(Shm, NothingAppearsInDevShm) {
  std::set<std::string> before = dev_shm_files();
  SharedMapping<std::atomic<int>> new_files;
  expect_all_ok(run_context_processes(4, [&](Context& context) {
    std::vector<float> data(20000, 1.0f);
    allreduce(context, data.data(), data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum);
    EXPECT_EQ(data[0], 4.0f);
    // While the segment is mapped by every rank.
    for (const std::string& name : dev_shm_files()) {
      if (before.count(name) == 0 && name.find("gloo_lite") != std::string::npos) {
        new_files->fetch_add(1);
      }
    }
    store_barrier(context, "checked");
  }));
  EXPECT_EQ(new_files->load(), 0);
  std::set<std::string> after = dev_shm_files();
  for (const std::string& name : after) {
    EXPECT_TRUE(before.count(name) != 0 || name.find("gloo_lite") == std::string::npos)
        << "left in /dev/shm: " << name;
  }
}

TEST(Shm, KilledRankFailsSurvivorsWithinTwoSecondsNamingIt) {
  static constexpr int kRanks = 4;
  static constexpr int kVictim = 2;
  auto results = run_context_processes(kRanks, [](Context& context) {
    CollectiveOptions options;
    options.algorithm = "shm";
    options.timeout = 30s;
    std::vector<float> data(50000, 1.0f);
    allreduce(context, data.data(), data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum,
              options);  // the segment exists, every rank is in it
    if (context.rank() == kVictim) {
      usleep(200000);
      raise(SIGKILL);
    }
    auto start = Clock::now();
    try {
      allreduce(context, data.data(), data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum,
                options);
      ADD_FAILURE() << "allreduce completed without rank " << kVictim;
    } catch (const ConnectionError& e) {
      EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(kVictim)), std::string::npos)
          << e.what();
    }
    EXPECT_LT(elapsed_ms(start), 200 + 2000) << "rank " << context.rank() << " failed too slowly";
  });
  for (const auto& result : results) {
    if (result.rank == kVictim) {
      EXPECT_TRUE(result.signaled && result.signal == SIGKILL) << result.describe();
    } else {
      EXPECT_TRUE(result.ok()) << result.describe();
    }
  }
}

TEST(Shm, StoppedRankTimesOutNamingIt) {
  constexpr int kRanks = 3;
  static constexpr int kVictim = 1;
  SharedMapping<std::atomic<int>> victim_pid;
  auto results = run_context_processes(
      kRanks,
      [&](Context& context) {
        CollectiveOptions options;
        options.algorithm = "shm";
        options.timeout = 1s;
        std::vector<int32_t> data(100, 1);
        // Before the first call: rank 0 must never kill(0, ...) (its whole process group).
        if (context.rank() == kVictim) victim_pid->store(getpid());
        allreduce(context, data.data(), data.data(), data.size(), DataType::kInt32, ReduceOp::kSum,
                  options);
        if (context.rank() == kVictim) {
          raise(SIGSTOP);  // killed by rank 0 below
          _exit(3);
        }
        auto start = Clock::now();
        try {
          allreduce(context, data.data(), data.data(), data.size(), DataType::kInt32,
                    ReduceOp::kSum, options);
          ADD_FAILURE() << "allreduce completed without rank " << kVictim;
        } catch (const TimeoutError& e) {
          EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(kVictim)),
                    std::string::npos)
              << e.what();
        } catch (const ConnectionError& e) {
          // The other survivor timed out first and failed the context: it names the victim too.
          EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(kVictim)),
                    std::string::npos)
              << e.what();
        }
        EXPECT_LT(elapsed_ms(start), 1000 + 2000 + 1000) << "rank " << context.rank();
        if (context.rank() == 0 && victim_pid->load() > 0) kill(victim_pid->load(), SIGKILL);
      },
      60s);
  for (const auto& result : results) {
    if (result.rank == kVictim) {
      EXPECT_TRUE(result.signaled && result.signal == SIGKILL) << result.describe();
    } else {
      EXPECT_TRUE(result.ok()) << result.describe();
    }
  }
}

// Rank 0's first call on a tag fails (its deadline) before rank 1 comes to it. Rank 1 must then
// fail that call at once with rank 0's cause: not wait out its own deadline (the shm algorithm's
// segment is set up in the first call, from store keys rank 0 will never write: item 6 of issue
// 23), nor complete it (a message algorithm over the shm transport found what rank 0 had sent
// before it gave up, and the abort behind it was read only after: item 10). Ranks as processes
// on the shared-memory transport, which no thread reads while a rank is outside its calls.
void expect_a_late_rank_fails_at_once(const std::string& algorithm) {
  const char* before = std::getenv("GLOO_LITE_TEST_TRANSPORT");
  const std::string saved = before != nullptr ? before : "";
  ::setenv("GLOO_LITE_TEST_TRANSPORT", "shm", 1);
  auto results = run_context_processes(
      2,
      [&](Context& context) {
        CollectiveOptions options;
        options.algorithm = algorithm;
        std::vector<float> data(4, 1.0f);
        if (context.rank() == 0) {
          options.timeout = 1s;
          EXPECT_THROW(allreduce(context, data.data(), data.data(), data.size(), DataType::kFloat32,
                                 ReduceOp::kSum, options),
                       TimeoutError);
          engine_of(context).store()->set("test/rank 0 failed", {1});
        } else {
          engine_of(context).store()->wait({"test/rank 0 failed"}, Deadline::after(30s));
          options.timeout = 10s;
          auto start = Clock::now();
          try {
            allreduce(context, data.data(), data.data(), data.size(), DataType::kFloat32,
                      ReduceOp::kSum, options);
            ADD_FAILURE() << algorithm << ": rank 1 completed the call that rank 0 failed";
          } catch (const ConnectionError& e) {
            EXPECT_NE(std::string(e.what()).find("aborted: "), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("timed out on rank 0"), std::string::npos)
                << e.what();
          }
          EXPECT_LT(elapsed_ms(start), 1000) << algorithm << ": rank 1 waited for its deadline";
        }
        store_barrier(context, "done");
      },
      30s);
  if (before != nullptr) {
    ::setenv("GLOO_LITE_TEST_TRANSPORT", saved.c_str(), 1);
  } else {
    ::unsetenv("GLOO_LITE_TEST_TRANSPORT");
  }
  expect_all_ok(results);
}

TEST(Shm, ALateRankFailsTheFirstCallThatAPeerFailedAtOnce) {
  expect_a_late_rank_fails_at_once("shm");
}

TEST(Shm, ALateRankNeverCompletesOnMessagesTheFirstCallThatAPeerFailed) {
  expect_a_late_rank_fails_at_once("recursive_doubling");
}

// Rank 0's first call on a tag waits in the segment's setup for rank 1, which has not come, and
// another thread of rank 0 closes the context (Context::close, what the Python and C bindings'
// close does while other threads' calls hold it). The call must end at once with that cause, not
// when rank 1 comes (item A of issue 23, part 2: Python's close only dropped a reference, so the
// call ran on); rank 1, coming afterwards, must raise rank 0's cause, not wait for its deadline.
TEST(Shm, CloseFromAnotherThreadEndsTheFirstCallOnATagAtOnce) {
  expect_all_ok(run_context_processes(
      2,
      [&](Context& context) {
        CollectiveOptions options;
        options.algorithm = "shm";
        options.tag = 1;
        options.timeout = 20s;
        std::vector<float> data(4, 1.0f);
        const std::string reason =
            "was closed by this rank with 1 operation(s) in flight "
            "(allreduce #0 on tag 1)";
        if (context.rank() == 0) {
          Clock::time_point closed_at;
          std::atomic<bool> done{false};
          std::thread call([&] {
            try {
              allreduce(context, data.data(), data.data(), data.size(), DataType::kFloat32,
                        ReduceOp::kSum, options);
              ADD_FAILURE() << "rank 0's allreduce returned after its context was closed";
            } catch (const ConnectionError& e) {
              EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
              EXPECT_LT(elapsed_ms(closed_at), 1000) << e.what();
            }
            done = true;
          });
          // Rank 0 has published its verdict: it waits for rank 1's in the setup now.
          engine_of(context).store()->wait({engine_of(context).store_key("shm/1/verdict/0")},
                                           Deadline::after(20s));
          closed_at = Clock::now();
          context.close();  // returns once the call has ended
          // Not joined before rank 1 comes: a call that ignored the close would end only then.
          for (int i = 0; i < 500 && !done; ++i) std::this_thread::sleep_for(10ms);
          EXPECT_TRUE(done) << "rank 0's allreduce still ran 5 s after the close";
          engine_of(context).store()->set("test/rank 0 closed", {1});
          call.join();
        } else {
          engine_of(context).store()->wait({"test/rank 0 closed"}, Deadline::after(30s));
          auto start = Clock::now();
          try {
            allreduce(context, data.data(), data.data(), data.size(), DataType::kFloat32,
                      ReduceOp::kSum, options);
            ADD_FAILURE() << "rank 1 completed the call that rank 0 closed";
          } catch (const ConnectionError& e) {
            EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
          }
          EXPECT_LT(elapsed_ms(start), 2000) << "rank 1 waited for its deadline";
        }
        store_barrier(context, "done");
      },
      40s));
}

// Rank 0's store for the next test: the file store, except that rank 0's read of rank 1's verdict
// in the setup of tag 1's segment comes back empty once, after rank 1 has written it and rank 0's
// context has failed. That is the moment a slice of rank 0's store reads ends just before rank
// 1's verdict lands, made certain: rank 1 has mapped the segment and goes on into the call,
// while rank 0 gives the setup up.
class VerdictMissedOnce final : public Store {
 public:
  // `suffix`: the key's end (the context's generation comes before it).
  VerdictMissedOnce(std::shared_ptr<Store> store, std::string suffix)
      : store_(std::move(store)), suffix_(std::move(suffix)) {}
  std::atomic<Context*> context{nullptr};

  Bytes get(const std::string& key, const Deadline& deadline) override {
    bool verdict = key.size() >= suffix_.size() &&
                   key.compare(key.size() - suffix_.size(), suffix_.size(), suffix_) == 0;
    if (!verdict || missed_) return store_->get(key, deadline);
    store_->wait({key}, Deadline::after(20s));  // rank 1 has mapped the segment and said so
    while (context.load()->failure().empty()) std::this_thread::sleep_for(1ms);
    missed_ = true;
    throw TimeoutError("the slice ended before " + key + " came (VerdictMissedOnce)");
  }
  void set(const std::string& key, const Bytes& value, const Deadline& deadline) override {
    store_->set(key, value, deadline);
  }
  void wait(const std::vector<std::string>& keys, const Deadline& deadline) override {
    store_->wait(keys, deadline);
  }
  int64_t add(const std::string& key, int64_t delta, const Deadline& deadline) override {
    return store_->add(key, delta, deadline);
  }
  bool check(const std::vector<std::string>& keys, const Deadline& deadline) override {
    return store_->check(keys, deadline);
  }
  bool erase(const std::string& key, const Deadline& deadline) override {
    return store_->erase(key, deadline);
  }
  std::string describe() const override { return store_->describe(); }

 private:
  std::shared_ptr<Store> store_;
  std::string suffix_;
  bool missed_ = false;
};

// Rank 0 gives up the setup of tag 1's segment (its context is closed from another thread while
// it waits there) after rank 1 has mapped the segment and gone on into the call. Rank 1 must
// raise rank 0's cause from the segment's abort record, not "rank 0 closed its context" from
// the mark rank 0 left when it let go of the segment (item B of issue 23, part 2).
TEST(Shm, ARankThatFailsTheSetupAfterItsPeerMappedTheSegmentLeavesItTheCause) {
  TempDir directory;
  expect_all_ok(run_processes(
      2,
      [&](int rank) {
        std::shared_ptr<Store> store = make_file_store(directory.path());
        auto missing = std::make_shared<VerdictMissedOnce>(store, "/shm/1/verdict/1");
        auto context = Context::create(rank == 0 ? missing : store, rank, 2, loopback_device());
        CollectiveOptions options;
        options.algorithm = "shm";
        options.tag = 1;
        options.timeout = 20s;
        std::vector<float> data(4, 1.0f);
        const std::string reason = "was closed by this rank with 1 operation(s) in flight";
        if (rank == 0) {
          missing->context = context.get();
          std::thread call([&] {
            EXPECT_THROW(allreduce(*context, data.data(), data.data(), data.size(),
                                   DataType::kFloat32, ReduceOp::kSum, options),
                         ConnectionError);
          });
          // Rank 1 has published its verdict: it mapped the segment.
          store->wait({engine_of(*context).store_key("shm/1/verdict/1")}, Deadline::after(20s));
          context->close();
          call.join();
        } else {
          auto start = Clock::now();
          try {
            allreduce(*context, data.data(), data.data(), data.size(), DataType::kFloat32,
                      ReduceOp::kSum, options);
            ADD_FAILURE() << "rank 1 completed the call that rank 0 gave up";
          } catch (const ConnectionError& e) {
            EXPECT_NE(std::string(e.what()).find("rank 0 aborted: "), std::string::npos)
                << e.what();
            EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
          }
          EXPECT_LT(elapsed_ms(start), 5000) << "rank 1 waited for its deadline";
        }
        store_barrier(*context, "done");
      },
      40s));
}

// A custom reduction that throws on rank 1: in the small calls every rank reduces the inputs
// itself, and in a reduce only the root does, so nobody waited for rank 1 after it published its
// input: the others returned success and failed only at their next call. Every rank must fail
// in the call, with rank 1's text, as over messages (issue 23, item 9).
TEST(Shm, CustomReductionThatThrowsFailsEveryRankInTheCall) {
  for (bool reduce_only : {false, true}) {
    expect_all_ok(run_context_processes(4, [&](Context& context) {
      const int rank = context.rank();
      CollectiveOptions options;
      options.algorithm = "shm";
      options.timeout = 20s;
      options.custom = [rank](void* dst, const void* src, size_t elements) {
        if (rank == 1) throw std::runtime_error("user reduction refused its input");
        auto* d = static_cast<float*>(dst);
        const auto* s = static_cast<const float*>(src);
        for (size_t i = 0; i < elements; ++i) d[i] += s[i];
      };
      std::vector<float> data(4, 1.0f);
      const char* what = reduce_only ? "reduce to rank 1" : "allreduce";
      auto start = Clock::now();
      try {
        if (reduce_only) {
          reduce(context, data.data(), data.data(), data.size(), DataType::kFloat32,
                 ReduceOp::kCustom, 1, options);
        } else {
          allreduce(context, data.data(), data.data(), data.size(), DataType::kFloat32,
                    ReduceOp::kCustom, options);
        }
        ADD_FAILURE() << what << ": rank " << rank << " returned";
      } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("user reduction refused its input"), std::string::npos)
            << what << ", rank " << rank << ": " << e.what();
      }
      EXPECT_LT(elapsed_ms(start), 2000) << what << ": rank " << rank;
      store_barrier(context, "done");
    }));
  }
}

// A rank whose call differs (here: its count) is found in the segment by its fingerprint: every
// rank raises MismatchError promptly, naming both calls.
TEST(Shm, MismatchedCallFailsEveryRankPromptly) {
  expect_all_ok(run_context_processes(4, [](Context& context) {
    CollectiveOptions options;
    options.algorithm = "shm";
    options.timeout = 20s;
    size_t count = context.rank() == 2 ? 101 : 100;
    std::vector<int32_t> data(count, 1);
    auto start = Clock::now();
    try {
      allreduce(context, data.data(), data.data(), count, DataType::kInt32, ReduceOp::kSum,
                options);
      ADD_FAILURE() << "rank " << context.rank() << ": a mismatched allreduce returned";
    } catch (const MismatchError& e) {
      EXPECT_NE(std::string(e.what()).find("collective mismatch"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("element counts"), std::string::npos) << e.what();
    }
    EXPECT_LT(elapsed_ms(start), 5000);
    store_barrier(context, "done");
  }));
}

// Small broadcasts let the root run calls ahead of slow readers (pieces of its slot in turn):
// many back to back, with roots, sizes and other collectives mixed in and one reader lagging
// now and then, so that a piece rewritten too early, or read from the wrong turn, shows up as a
// wrong value.
TEST(Shm, BackToBackBroadcastsFromChangingRootsStayExact) {
  expect_all_ok(run_context_processes(4, [](Context& context) {
    CollectiveOptions options;
    options.algorithm = "shm";
    options.timeout = 20s;
    const size_t sizes[] = {2, 1000, 10000, 40000, 70000};  // int32 elements: 8 B .. 280 KB
    std::vector<int32_t> data;
    // First bursts of small ones from one root, which may then run a whole ring of pieces
    // ahead of a reader that sleeps; every third fills a whole slot (4 KiB chunks here: pieces
    // of 512 B), whose root must wait for that buffer's earlier piece readers too.
    for (int i = 0; i < 300; ++i) {
      const int root = i / 150;
      const size_t count = i % 3 == 2 ? 700 : 2;  // 2800 B: more than a piece, within a slot
      auto value = [&](size_t k) { return static_cast<int32_t>(i * 1009 + k); };
      data.assign(count, -1);
      if (context.rank() == root) {
        for (size_t k = 0; k < count; ++k) data[k] = value(k);
      }
      if (context.rank() == 3 - root && i % 25 == 0) usleep(3000);
      broadcast(context, data.data(), count, DataType::kInt32, root, options);
      for (size_t k = 0; k < count; ++k) {
        ASSERT_EQ(data[k], value(k)) << "rank " << context.rank() << ", burst " << i << ", " << k;
      }
    }
    for (int i = 0; i < 300; ++i) {
      const int root = (i / 5) % 4 == 3 ? i % 4 : (i / 5) % 4;
      const size_t count = sizes[(i * 7) % 5];
      data.assign(count, -1);
      auto value = [&](size_t k) { return static_cast<int32_t>(i * 1000003 + root * 7 + k); };
      if (context.rank() == root) {
        for (size_t k = 0; k < count; ++k) data[k] = value(k);
      }
      if (context.rank() == 1 + i % 3 && i % 11 == 0) usleep(2000);  // a reader falls behind
      broadcast(context, data.data(), count, DataType::kInt32, root, options);
      for (size_t k = 0; k < count; ++k) {
        ASSERT_EQ(data[k], value(k)) << "rank " << context.rank() << ", broadcast " << i
                                     << " from rank " << root << ", " << count << " elements";
      }
      if (i % 13 == 0) {
        int32_t one = 1;
        allreduce(context, &one, &one, 1, DataType::kInt32, ReduceOp::kSum, options);
        ASSERT_EQ(one, 4);
      }
    }
  }));
}

// Two groups that each agree on a root among themselves (ranks 0 and 1 say rank 0, ranks 2 and
// 3 say rank 3): in a small broadcast every reader waits for its root alone, so the bad call
// may return. It must never return a mixture: each rank holds what the root it named sent, or
// raises. The next call that waits for everyone (a barrier) compares the broadcast's
// fingerprints too, and every rank raises MismatchError there or in the barrier after it.
TEST(Shm, BroadcastRootsThatDisagreeFailEveryRankByTheNextBarrier) {
  expect_all_ok(run_context_processes(4, [](Context& context) {
    CollectiveOptions options;
    options.algorithm = "shm";
    options.timeout = 20s;
    const int root = context.rank() < 2 ? 0 : 3;
    std::vector<int32_t> data(16, 100 + context.rank());
    int raised = 0;
    try {
      broadcast(context, data.data(), data.size(), DataType::kInt32, root, options);
      for (int32_t value : data) {
        ASSERT_EQ(value, 100 + root) << "rank " << context.rank() << " got a mixture of roots";
      }
    } catch (const MismatchError& e) {
      raised = 1;
      EXPECT_NE(std::string(e.what()).find("root"), std::string::npos) << e.what();
    }
    for (int barriers = 0; barriers < 2 && raised == 0; ++barriers) {
      try {
        barrier(context, options);
      } catch (const MismatchError& e) {
        raised = 2 + barriers;
        EXPECT_NE(std::string(e.what()).find("root"), std::string::npos) << e.what();
      }
    }
    EXPECT_NE(raised, 0) << "rank " << context.rank()
                         << ": two barriers after a broadcast with disagreeing roots returned";
    store_barrier(context, "done");
  }));
}

// Each rank of a context creates it itself, with its own host identity.
std::vector<ProcessResult> run_with_hosts(int ranks, const std::vector<std::string>& hosts,
                                          const std::function<void(Context&)>& body) {
  TempDir directory;
  return run_processes(
      ranks,
      [&](int rank) {
        ::setenv("GLOO_LITE_HOST_ID", hosts[rank].c_str(), 1);
        // Fake hosts: give the link's figure rather than probe loopback at creation.
        ::setenv("GLOO_LITE_NET_BETA_GBPS", "0.025", 1);
        auto context =
            Context::create(make_file_store(directory.path()), rank, ranks, loopback_device());
        body(*context);
      },
      120s);
}

TEST(Shm, TwoHostsDoNotUseShm) {
  expect_all_ok(run_with_hosts(4, {"a", "a", "b", "b"}, [](Context& context) {
    EXPECT_FALSE(engine_of(context).on_one_host());
    EXPECT_NE(chosen_algorithm(context, "allreduce", 1000, DataType::kFloat32), "shm");
    EXPECT_NE(chosen_algorithm(context, "barrier", 0, DataType::kUint8), "shm");
    CollectiveOptions options;
    options.algorithm = "shm";
    std::vector<float> data(10, 1.0f);
    try {
      allreduce(context, data.data(), data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum,
                options);
      ADD_FAILURE() << "shm ran on a context over two hosts";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("'shm' does not support this call"), std::string::npos)
          << e.what();
    }
    allreduce(context, data.data(), data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum);
    EXPECT_EQ(data[9], 4.0f);
  }));
}

// GLOO_LITE_TRANSPORT=tcp asks for the network between every pair: no shared memory at all,
// not even for the collectives of ranks on one host (each process reads the knob afresh).
TEST(Shm, ForcedNetworkTransportTurnsShmCollectivesOff) {
  TempDir directory;
  expect_all_ok(run_processes(
      3,
      [&](int rank) {
        ::setenv("GLOO_LITE_TRANSPORT", "tcp", 1);
        auto context =
            Context::create(make_file_store(directory.path()), rank, 3, loopback_device());
        EXPECT_TRUE(engine_of(*context).on_one_host());
        EXPECT_NE(chosen_algorithm(*context, "allreduce", 1000, DataType::kFloat32), "shm");
        EXPECT_NE(chosen_algorithm(*context, "barrier", 0, DataType::kUint8), "shm");
        std::vector<float> data(10, 1.0f);
        allreduce(*context, data.data(), data.data(), data.size(), DataType::kFloat32,
                  ReduceOp::kSum);
        EXPECT_EQ(data[9], 3.0f);
      },
      120s));
}

// Rank 0 cannot reserve the segment (a file size limit makes posix_fallocate fail): every rank
// falls back to the message algorithms and gets the right result; no SIGBUS.
// --- the single-copy broadcast (readers read the root's buffer with process_vm_readv from
// 64 KiB at P = 2, from 256 KiB above; shm.cc) ---

// What rank `root` broadcasts in round `round`: a value per element that no other root, round
// or position gives (exact in float32).
float broadcast_value(size_t i, int root, int round) {
  return static_cast<float>((i * 7 + static_cast<size_t>(root) * 131 + round * 17) % 65521);
}

// Broadcasts of sizes around the switch-over and one above 1 MiB, from several roots, each
// checked element by element against broadcast_value.
void broadcasts_match(Context& context) {
  CollectiveOptions options;
  options.algorithm = "shm";
  const size_t at = (context.size() == 2 ? 64 * 1024 : 256 * 1024) / sizeof(float);
  const size_t counts[] = {8191, at - 1, at, at + 1, 262147};  // ..., 1 MiB + 12 B
  const int roots[] = {context.size() - 1, 0, 1 % context.size()};
  int round = 0;
  for (int root : roots) {
    for (size_t count : counts) {
      std::vector<float> data(count, -1.0f);
      if (context.rank() == root) {
        for (size_t i = 0; i < count; ++i) data[i] = broadcast_value(i, root, round);
      }
      broadcast(context, data.data(), count, DataType::kFloat32, root, options);
      size_t wrong = 0, first = count;
      for (size_t i = 0; i < count; ++i) {
        if (data[i] != broadcast_value(i, root, round)) {
          ++wrong;
          first = std::min(first, i);
        }
      }
      EXPECT_EQ(wrong, 0u) << "rank " << context.rank() << ": broadcast of " << count
                           << " floats from root " << root << ", first wrong at " << first;
      ++round;
    }
  }
}

TEST_P(ShmProcesses, SingleCopyBroadcastMatchesTheReference) {
  expect_all_ok(run_context_processes(GetParam(), broadcasts_match, 120s));
}

// Ranks as threads of one process: the readers read their own process's memory.
TEST_P(ShmThreads, SingleCopyBroadcastMatchesTheReference) {
  run_context_threads(GetParam(), broadcasts_match);
}

// A rank that may not read the others' memory (GLOO_LITE_SHM_CMA=0 on that rank alone, as
// EPERM would): every rank learns it in the first large broadcast from each root and takes the
// copy through the segment, with the same results.
TEST_P(ShmProcesses, SingleCopyBroadcastFallsBackWhereCmaIsRefused) {
  expect_all_ok(run_context_processes(
      GetParam(),
      [](Context& context) {
        if (context.rank() == context.size() - 1) ::setenv("GLOO_LITE_SHM_CMA", "0", 1);
        broadcasts_match(context);
        broadcasts_match(context);  // the refused roots go straight to the segment now
      },
      120s));
}

// The root of a single-copy broadcast waits until every reader has read its buffer; a reader
// that dies meanwhile fails the root (and the other reader) within the usual 2 s, naming it.
TEST(Shm, DeadReaderFailsTheSingleCopyRootNamingIt) {
  static constexpr int kRanks = 3;
  static constexpr int kVictim = 2;
  auto results = run_context_processes(kRanks, [](Context& context) {
    CollectiveOptions options;
    options.algorithm = "shm";
    options.timeout = 30s;
    std::vector<float> data(1 << 18, 1.0f);  // 1 MiB: single copy
    broadcast(context, data.data(), data.size(), DataType::kFloat32, 0, options);
    if (context.rank() == kVictim) {
      usleep(200000);
      raise(SIGKILL);
    }
    auto start = Clock::now();
    try {
      broadcast(context, data.data(), data.size(), DataType::kFloat32, 0, options);
      ADD_FAILURE() << "broadcast completed without rank " << kVictim;
    } catch (const ConnectionError& e) {
      EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(kVictim)), std::string::npos)
          << e.what();
    }
    EXPECT_LT(elapsed_ms(start), 200 + 2000) << "rank " << context.rank() << " failed too slowly";
  });
  for (const auto& result : results) {
    if (result.rank == kVictim) {
      EXPECT_TRUE(result.signaled && result.signal == SIGKILL) << result.describe();
    } else {
      EXPECT_TRUE(result.ok()) << result.describe();
    }
  }
}

// The root of a single-copy broadcast writes the tail of the vector into each reader's buffer
// (process_vm_writev). A reader that leaves the call early gets its buffer back only once the
// root cannot write into it any more. Here the root is stopped (SIGSTOP, by rank 1) while it waits
// for rank 1's first step; rank 1 then enters, reads its head from the stopped root, times out
// waiting for the root's next step, and leaves; it fills its buffer and resumes the root, which
// sees rank 1's step done and must notice that rank 1 left instead of writing into it. Rank 1
// checks that nothing overwrote its buffer. (Fails when the root writes without the handshake.)
TEST(Shm, ReaderThatLeftIsNeverWrittenByTheSingleCopyRoot) {
  struct Shared {
    std::atomic<pid_t> root{0};
  };
  SharedMapping<Shared> shared;
  constexpr size_t kCount = 1 << 18;  // 1 MiB of floats: single copy at P = 3
  constexpr float kSentinel = -7.0f;
  auto results = run_context_processes(3, [&](Context& context) {
    CollectiveOptions options;
    options.algorithm = "shm";
    std::vector<float> data(kCount, context.rank() == 0 ? 1.0f : 0.0f);
    barrier(context, options);
    options.timeout = 10s;
    if (context.rank() == 0) shared->root = getpid();
    if (context.rank() == 1) {
      while (shared->root == 0) std::this_thread::sleep_for(1ms);
      std::this_thread::sleep_for(200ms);  // the root now waits for this rank's first step
      kill(shared->root, SIGSTOP);
      options.timeout = 300ms;
    }
    try {
      broadcast(context, data.data(), data.size(), DataType::kFloat32, 0, options);
      ADD_FAILURE() << "rank " << context.rank() << ": the broadcast completed";
    } catch (const Error&) {
    }
    if (context.rank() != 1) return;
    std::fill(data.begin(), data.end(), kSentinel);  // the caller's buffer again
    kill(shared->root, SIGCONT);
    std::this_thread::sleep_for(1s);  // the root resumes, looks at rank 1, goes on to rank 2
    size_t overwritten = 0;
    for (float value : data) overwritten += value != kSentinel;
    EXPECT_EQ(overwritten, 0u) << "the root wrote into the buffer of a reader that had left";
  });
  for (const auto& result : results) {
    if (result.rank == 1) {
      EXPECT_TRUE(result.ok()) << result.describe();
    }
  }
}

TEST(Shm, SegmentThatCannotBeCreatedFallsBack) {
  expect_all_ok(run_with_hosts(3, {"x", "x", "x"}, [](Context& context) {
    if (context.rank() == 0) {
      signal(SIGXFSZ, SIG_IGN);
      rlimit limit{16384, 16384};
      ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limit), 0);
    }
    CollectiveOptions options;
    options.algorithm = "shm";
    for (int round = 0; round < 2; ++round) {
      std::vector<int32_t> data(5000, context.rank() + 1);
      allreduce(context, data.data(), data.data(), data.size(), DataType::kInt32, ReduceOp::kSum,
                options);
      EXPECT_EQ(data[4999], 6);
      barrier(context, options);
    }
  }));
}

}  // namespace
}  // namespace gloo_lite::test
