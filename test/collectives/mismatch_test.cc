// Ranks that disagree about a collective (count, type, op, root, v-counts). Ranks are real
// processes, so that a write outside a buffer cannot take the test binary down with it.
//  check on (CollectiveOptions::check): every rank throws MismatchError, and every message names
//    the odd rank.
//  check off, for disagreements that change what goes on the wire: no rank hangs (each returns
//    or throws within a bound of its 1 s timeout), the guard zones around every buffer stay
//    intact, checked after every rank has finished (late writes included), the errors are
//    MismatchError or TimeoutError (or the ConnectionError a peer's timeout causes), and where a
//    receive disagrees in size with its send, at least one rank reports MismatchError or
//    TimeoutError.
// Every scenario runs with a small (eager) and a large (rendezvous) count.
//
// DetectedByDefault: disagreements that change nothing on the wire's sizes (type of the same
// width, op, root, collective, algorithm) and one that does (count), all with check off. The
// call fingerprint in every message catches them where the odd rank's message lands: a rank
// that receives it throws MismatchError naming both calls, and it aborts the context so that
// every other rank throws the same cause within milliseconds, not at its (20 s) deadline. No
// rank may return a result other than what its own arguments ask for.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>

#include "gloo_lite/algorithm_choice.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/collectives.h"
#include "test/collectives/process_sync.h"
#include "test/collectives/rank_run.h"
#include "test/collectives/reference.h"
#include "test/transport/harness.h"

namespace gloo_lite::test {
namespace {

using namespace std::chrono_literals;

constexpr int kRanks = 4;
constexpr auto kShortTimeout = 1000ms;
constexpr DataType kType = DataType::kInt32;

using Keep = std::vector<std::unique_ptr<GuardedBuffer>>;

// A guarded buffer of `elements` of `type`, kept until the end of the rank's test.
uint8_t* make(Keep& keep, size_t elements, DataType type = kType) {
  keep.push_back(std::make_unique<GuardedBuffer>(elements * element_bytes(type)));
  fill_filler(keep.back()->data(), keep.back()->bytes());
  return keep.back()->data();
}

// What a run with check off can expect of a disagreement.
enum class Without {
  kCheckOnly,  // no message size changes (a type of the same width, the op): not run here,
               // DetectedByDefault asserts that the call check catches them
  kMayPass,    // may complete everywhere (wrong data, leftover eager messages): roots, the odd
               // rank's view of other ranks' counts; no hang and no corruption still required
  kMustFail,   // a receive disagrees in size with its send: some rank must report it
};

struct Scenario {
  const char* name;
  int odd;  // the rank whose arguments differ
  Without without;
  void (*run)(Context& context, size_t n, bool odd, const CollectiveOptions& options, Keep& keep);
};

const Scenario kScenarios[] = {
    {"allreduce_count", 2, Without::kMustFail,
     [](Context& c, size_t n, bool odd, const CollectiveOptions& o, Keep& k) {
       size_t count = odd ? n + 1 : n;
       allreduce(c, make(k, count), make(k, count), count, kType, ReduceOp::kSum, o);
     }},
    {"allreduce_type", 1, Without::kCheckOnly,
     [](Context& c, size_t n, bool odd, const CollectiveOptions& o, Keep& k) {
       DataType type = odd ? DataType::kFloat32 : DataType::kInt32;
       allreduce(c, make(k, n), make(k, n), n, type, ReduceOp::kSum, o);
     }},
    {"allreduce_type_width", 3, Without::kMustFail,
     [](Context& c, size_t n, bool odd, const CollectiveOptions& o, Keep& k) {
       DataType type = odd ? DataType::kInt64 : DataType::kInt32;
       allreduce(c, make(k, n, type), make(k, n, type), n, type, ReduceOp::kSum, o);
     }},
    {"allreduce_op", 3, Without::kCheckOnly,
     [](Context& c, size_t n, bool odd, const CollectiveOptions& o, Keep& k) {
       allreduce(c, make(k, n), make(k, n), n, kType, odd ? ReduceOp::kMax : ReduceOp::kSum, o);
     }},
    {"allreduce_bitwise_op", 0, Without::kCheckOnly,
     [](Context& c, size_t n, bool odd, const CollectiveOptions& o, Keep& k) {
       allreduce(c, make(k, n), make(k, n), n, kType, odd ? ReduceOp::kBor : ReduceOp::kBand, o);
     }},
    {"reduce_root", 2, Without::kMayPass,
     [](Context& c, size_t n, bool odd, const CollectiveOptions& o, Keep& k) {
       reduce(c, make(k, n), make(k, n), n, kType, ReduceOp::kSum, odd ? 2 : 0, o);
     }},
    {"reduce_scatter_count", 1, Without::kMustFail,
     [](Context& c, size_t n, bool odd, const CollectiveOptions& o, Keep& k) {
       size_t count = odd ? n - 1 : n;
       reduce_scatter(c, make(k, count * kRanks), make(k, count), count, kType, ReduceOp::kSum, o);
     }},
    {"allgatherv_counts", 2, Without::kMustFail,
     [](Context& c, size_t n, bool odd, const CollectiveOptions& o, Keep& k) {
       std::vector<size_t> counts = {n, n / 2, 0, n + 1};
       if (odd) counts[1] += 3;
       size_t total = counts[0] + counts[1] + counts[2] + counts[3];
       allgatherv(c, make(k, counts[c.rank()]), make(k, total), counts, kType, o);
     }},
    {"gather_count", 3, Without::kMustFail,
     [](Context& c, size_t n, bool odd, const CollectiveOptions& o, Keep& k) {
       size_t count = odd ? n + 3 : n;
       gather(c, make(k, count), make(k, count * kRanks), count, kType, 1, o);
     }},
    {"gatherv_root", 1, Without::kMayPass,
     [](Context& c, size_t n, bool odd, const CollectiveOptions& o, Keep& k) {
       std::vector<size_t> counts = {n, 0, n / 3, n};
       gatherv(c, make(k, counts[c.rank()]), make(k, 2 * n + n / 3), counts, kType, odd ? 1 : 3, o);
     }},
    {"scatter_root", 2, Without::kMayPass,
     [](Context& c, size_t n, bool odd, const CollectiveOptions& o, Keep& k) {
       scatter(c, make(k, n * kRanks), make(k, n), n, kType, odd ? 2 : 0, o);
     }},
    {"scatterv_counts", 0, Without::kMayPass,
     [](Context& c, size_t n, bool odd, const CollectiveOptions& o, Keep& k) {
       std::vector<size_t> counts = {n / 2, n, n, 0};
       if (odd) counts[2] = n / 4;
       size_t total = counts[0] + counts[1] + counts[2] + counts[3];
       scatterv(c, make(k, total), make(k, counts[c.rank()]), counts, kType, 1, o);
     }},
    {"broadcast_root", 2, Without::kMayPass,
     [](Context& c, size_t n, bool odd, const CollectiveOptions& o, Keep& k) {
       broadcast(c, make(k, n), n, kType, odd ? 2 : 1, o);
     }},
    {"broadcast_count", 0, Without::kMustFail,
     [](Context& c, size_t n, bool odd, const CollectiveOptions& o, Keep& k) {
       size_t count = odd ? 2 * n : n;
       broadcast(c, make(k, count), count, kType, 0, o);
     }},
    {"alltoall_count", 3, Without::kMustFail,
     [](Context& c, size_t n, bool odd, const CollectiveOptions& o, Keep& k) {
       size_t count = odd ? n + 2 : n;
       alltoall(c, make(k, count * kRanks), make(k, count * kRanks), count, kType, o);
     }},
    // Only ranks 0 and 1 disagree (0 sends 1 more than 1 expects); 2 and 3 cannot see it from
    // their own fingerprints.
    {"alltoallv_pair", 0, Without::kMustFail,
     [](Context& c, size_t n, bool, const CollectiveOptions& o, Keep& k) {
       std::vector<size_t> send(kRanks, n), receive(kRanks, n);
       if (c.rank() == 0) send[1] = n + 5;
       alltoallv(c, make(k, 3 * n + (c.rank() == 0 ? n + 5 : n)), send, make(k, kRanks * n),
                 receive, kType, o);
     }},
};

enum Outcome : int { kPending, kReturned, kMismatch, kTimeout, kConnection, kOther };
const char* outcome_name(int outcome) {
  const char* names[] = {"did not report", "returned",        "MismatchError",
                         "TimeoutError",   "ConnectionError", "another error"};
  return names[outcome];
}

struct Outcomes {
  std::atomic<int> outcome[kRanks];
  std::atomic<int> later[kRanks];  // DetectedByDefault: in the barriers after the bad call
  std::atomic<bool> skipped{false};
};

struct Variant {
  const Scenario* scenario;
  bool check;
  size_t count;
  std::string name() const {
    return std::string(check ? "CheckOn_" : "CheckOff_") + scenario->name + "_n" +
           std::to_string(count);
  }
};

std::vector<Variant> variants() {
  std::vector<Variant> all;
  for (bool check : {true, false}) {
    for (const Scenario& scenario : kScenarios) {
      if (!check && scenario.without == Without::kCheckOnly) continue;
      for (size_t count : {size_t{12}, size_t{100000}}) all.push_back({&scenario, check, count});
    }
  }
  return all;
}

void PrintTo(const Variant& v, std::ostream* os) { *os << v.name(); }

class CollectiveMismatch : public ::testing::TestWithParam<Variant> {};

void rank_body(const Variant& v, Context& context, Outcomes& outcomes) {
  const Scenario& scenario = *v.scenario;
  bool odd = context.rank() == scenario.odd;
  CollectiveOptions options;
  options.check = v.check;
  options.timeout = v.check ? std::chrono::milliseconds(3s) : kShortTimeout;
  Keep keep;
  Outcome outcome = kReturned;
  std::string message;
  auto start = std::chrono::steady_clock::now();
  try {
    scenario.run(context, v.count, odd, options, keep);
  } catch (const MismatchError& error) {
    outcome = kMismatch;
    message = error.what();
  } catch (const TimeoutError& error) {
    outcome = kTimeout;
    message = error.what();
  } catch (const ConnectionError& error) {
    outcome = kConnection;
    message = error.what();
  } catch (const std::exception& error) {
    outcome = kOther;
    message = describe_exception(error);
  }
  auto elapsed = std::chrono::steady_clock::now() - start;
  outcomes.outcome[context.rank()].store(outcome);
  // Every rank done before any checks its guards or exits.
  store_barrier(context, "done");
  std::string rank = "rank " + std::to_string(context.rank()) + ": ";
  for (size_t i = 0; i < keep.size(); ++i) {
    EXPECT_EQ(keep[i]->damaged_guard(), "") << rank << "buffer " << i << " of " << scenario.name;
  }
  if (v.check) {
    EXPECT_EQ(outcome, kMismatch) << rank << "expected MismatchError, got " << outcome_name(outcome)
                                  << " " << message;
    std::string odd_name = "rank " + std::to_string(scenario.odd);
    EXPECT_NE(message.find(odd_name), std::string::npos)
        << rank << "the message does not name " << odd_name << ": " << message;
  } else {
    // A ConnectionError is a consequence, not a cause: a peer that timed out cancelled a
    // message this rank had already matched.
    EXPECT_NE(outcome, kOther) << rank << "expected MismatchError or TimeoutError, got " << message;
    // Emulated RDMA (the VM stage) took 5.1 s for the 400 kB alltoall where TCP takes < 2.5 s.
    const auto slack = on_emulated_rdma() ? std::chrono::milliseconds(12000) : 3s;
    EXPECT_LT(elapsed, 2 * kShortTimeout + slack)
        << rank << "took " << std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()
        << " ms with a timeout of " << kShortTimeout.count() << " ms";
  }
}

TEST_P(CollectiveMismatch, FailsCleanly) {
  const Variant& v = GetParam();
  SharedMapping<Outcomes> outcomes;
  ContextOptions options;
  options.timeout = 30s;
  auto results = run_context_processes(
      kRanks, [&](Context& context) { rank_body(v, context, *outcomes); }, 120s, options);
  expect_all_ok(results);
  std::string summary;
  bool reported = false;
  for (int rank = 0; rank < kRanks; ++rank) {
    int outcome = outcomes->outcome[rank].load();
    summary += " rank " + std::to_string(rank) + ": " + outcome_name(outcome) + ";";
    reported = reported || outcome == kMismatch || outcome == kTimeout;
  }
  if (v.check || v.scenario->without == Without::kMustFail) {
    EXPECT_TRUE(reported) << "no rank reported the disagreement as MismatchError or "
                          << "TimeoutError:" << summary;
  }
}

INSTANTIATE_TEST_SUITE_P(Processes, CollectiveMismatch, ::testing::ValuesIn(variants()),
                         [](const ::testing::TestParamInfo<Variant>& info) {
                           return info.param.name();
                         });

// --- DetectedByDefault ---

constexpr auto kLongTimeout = 20s;
// Well under the timeout: the rank that detects aborts the context, peers learn within
// milliseconds; the rest is slack for a busy test machine.
constexpr auto kPrompt = 5s;

// Rank r's input element i, exact in every type used here.
int32_t input_value(int rank, size_t i) { return (rank + 1) * 100 + static_cast<int32_t>(i % 50); }

// What one rank does and what its own arguments make the right result.
struct Arguments {
  const char* collective = "allreduce";  // "allreduce" or "broadcast"
  DataType type = DataType::kInt32;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
  size_t count = 0;
  std::string algorithm = "auto";
  std::string env_algorithm;  // GLOO_LITE_ALGO for this rank, when set
};

struct DefaultScenario {
  const char* name;
  int odd;
  Arguments (*arguments)(size_t n, bool odd);
  // Both must appear in every rank's MismatchError: the two calls as described.
  const char* mine;
  const char* theirs;
  // Every rank may return from the bad call: in a small shared-memory broadcast each reader
  // waits for the root it names alone, so two groups that each agree on a root never meet in
  // it (each gets its own root's data). They meet in the next call that waits for everyone.
  bool may_pass_unseen = false;
};

const DefaultScenario kDefaultScenarios[] = {
    {"type", 1,
     [](size_t n, bool odd) {
       Arguments a;
       a.count = n;
       a.type = odd ? DataType::kFloat32 : DataType::kInt32;
       return a;
     },
     "(int32", "(float32"},
    {"op", 3,
     [](size_t n, bool odd) {
       Arguments a;
       a.count = n;
       a.op = odd ? ReduceOp::kMax : ReduceOp::kSum;
       return a;
     },
     "int32, sum", "int32, max"},
    // bxor is 8: an op field too narrow for it would read sum (0) and see no disagreement.
    {"op_bxor", 2,
     [](size_t n, bool odd) {
       Arguments a;
       a.count = n;
       a.op = odd ? ReduceOp::kBxor : ReduceOp::kSum;
       return a;
     },
     "int32, sum", "int32, bxor"},
    {"root", 2,
     [](size_t n, bool odd) {
       Arguments a;
       a.collective = "broadcast";
       a.count = n;
       a.root = odd ? 2 : 0;
       return a;
     },
     "root 0", "root 2", true},
    {"collective", 1,
     [](size_t n, bool odd) {
       Arguments a;
       a.count = n;
       // As the root it sends at once. (A leaf of a broadcast among ranks in an allreduce may
       // wait on a rank that waits on it, and no message ever crosses: only the explicit
       // check can see that.)
       if (odd) a.collective = "broadcast";
       a.root = 1;
       return a;
     },
     "allreduce #", "broadcast #"},
    {"count", 2,
     [](size_t n, bool odd) {
       Arguments a;
       a.count = odd ? n + 1 : n;
       return a;
     },
     "element counts", "allreduce #"},
    {"algorithm_option", 1,
     [](size_t n, bool odd) {
       Arguments a;
       a.count = n;
       a.algorithm = odd ? "ring" : "recursive_doubling";
       return a;
     },
     "algorithm ring", "algorithm recursive_doubling"},
    {"algorithm_env", 1,
     [](size_t n, bool odd) {
       Arguments a;
       a.count = n;
       a.env_algorithm = odd ? "allreduce:ring" : "allreduce:recursive_doubling";
       return a;
     },
     "algorithm ring", "algorithm recursive_doubling"},
};

template <typename T>
void fill_input(uint8_t* out, int rank, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    T value = static_cast<T>(input_value(rank, i));
    std::memcpy(out + i * sizeof(T), &value, sizeof(T));
  }
}

// Element i of an allreduce with `op` (sum, max or bxor) over `ranks` ranks.
int32_t reduced_value(ReduceOp op, int ranks, size_t i) {
  int32_t result = input_value(0, i);
  for (int r = 1; r < ranks; ++r) {
    int32_t x = input_value(r, i);
    result = op == ReduceOp::kMax    ? std::max(result, x)
             : op == ReduceOp::kBxor ? result ^ x
                                     : result + x;
  }
  return result;
}

template <typename T>
bool result_is_right(const uint8_t* data, const Arguments& a, int ranks) {
  for (size_t i = 0; i < a.count; ++i) {
    int32_t expected = input_value(a.root, i);
    if (std::strcmp(a.collective, "allreduce") == 0) expected = reduced_value(a.op, ranks, i);
    T value;
    std::memcpy(&value, data + i * sizeof(T), sizeof(T));
    if (value != static_cast<T>(expected)) return false;
  }
  return true;
}

struct DefaultVariant {
  const DefaultScenario* scenario;
  size_t count;
  std::string name() const { return std::string(scenario->name) + "_n" + std::to_string(count); }
};

void PrintTo(const DefaultVariant& v, std::ostream* os) { *os << v.name(); }

std::vector<DefaultVariant> default_variants() {
  std::vector<DefaultVariant> all;
  for (const DefaultScenario& scenario : kDefaultScenarios) {
    for (size_t count : {size_t{12}, size_t{100000}}) all.push_back({&scenario, count});
  }
  return all;
}

class DetectedByDefault : public ::testing::TestWithParam<DefaultVariant> {};

void default_rank_body(const DefaultVariant& v, Context& context, Outcomes& outcomes) {
  const DefaultScenario& scenario = *v.scenario;
  bool odd = context.rank() == scenario.odd;
  Arguments a = scenario.arguments(v.count, odd);
  std::string rank = "rank " + std::to_string(context.rank()) + ": ";
  if (!a.env_algorithm.empty()) {
    // GLOO_LITE_ALGO is read once per process, on its first algorithm choice: it takes effect
    // here only when this rank's process made none before the fork (ctest runs these variants
    // alone for that, with GLOO_LITE_TEST_FRESH_PROCESS=1; see CMakeLists.txt).
    ::setenv("GLOO_LITE_ALGO", a.env_algorithm.c_str(), 1);
    std::string expected = a.env_algorithm.substr(a.env_algorithm.find(':') + 1);
    if (chosen_algorithm(context, a.collective, a.count, a.type) != expected) {
      ASSERT_EQ(::getenv("GLOO_LITE_TEST_FRESH_PROCESS"), nullptr)
          << rank << "GLOO_LITE_ALGO did not take effect in a fresh process";
      outcomes.skipped.store(true);
      return;
    }
  }
  CollectiveOptions options;
  options.check = false;
  options.timeout = kLongTimeout;
  options.algorithm = a.algorithm;
  GuardedBuffer input(a.count * element_bytes(a.type));
  GuardedBuffer output(a.count * element_bytes(a.type));
  if (a.type == DataType::kFloat32) {
    fill_input<float>(input.data(), context.rank(), a.count);
  } else {
    fill_input<int32_t>(input.data(), context.rank(), a.count);
  }
  fill_filler(output.data(), output.bytes());
  Outcome outcome = kReturned;
  std::string message;
  auto start = std::chrono::steady_clock::now();
  try {
    if (std::strcmp(a.collective, "broadcast") == 0) {
      std::memcpy(output.data(), input.data(), input.bytes());
      broadcast(context, output.data(), a.count, a.type, a.root, options);
    } else {
      allreduce(context, input.data(), output.data(), a.count, a.type, a.op, options);
    }
  } catch (const MismatchError& error) {
    outcome = kMismatch;
    message = error.what();
  } catch (const TimeoutError& error) {
    outcome = kTimeout;
    message = error.what();
  } catch (const ConnectionError& error) {
    outcome = kConnection;
    message = error.what();
  } catch (const std::exception& error) {
    outcome = kOther;
    message = describe_exception(error);
  }
  auto elapsed = std::chrono::steady_clock::now() - start;
  outcomes.outcome[context.rank()].store(outcome);
  store_barrier(context, "done");
  // Every rank that returned raises in one of the next two calls that wait for everyone.
  int later = kReturned;
  if (outcome == kReturned) {
    auto barriers_start = std::chrono::steady_clock::now();
    for (int b = 0; b < 2 && later == kReturned; ++b) {
      try {
        barrier(context, options);
      } catch (const MismatchError& error) {
        later = kMismatch;
        message = error.what();
      } catch (const std::exception& error) {
        later = kConnection;
        message = describe_exception(error);
      }
    }
    EXPECT_LT(std::chrono::steady_clock::now() - barriers_start, kPrompt)
        << rank << "the barriers after the bad call took too long to end with " << message;
  }
  outcomes.later[context.rank()].store(later);
  store_barrier(context, "after");
  EXPECT_EQ(input.damaged_guard(), "") << rank << "input";
  EXPECT_EQ(output.damaged_guard(), "") << rank << "output";
  EXPECT_LT(elapsed, kPrompt)
      << rank << "took " << std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()
      << " ms to end with " << outcome_name(outcome) << " " << message;
  if (outcome == kReturned) {
    EXPECT_NE(later, kReturned) << rank
                                << "returned from the bad call and from two barriers after it";
    if (v.scenario->may_pass_unseen && later == kMismatch) {
      EXPECT_NE(message.find(scenario.mine), std::string::npos) << rank << message;
      EXPECT_NE(message.find(scenario.theirs), std::string::npos) << rank << message;
    }
    // Only a rank that heard from no rank of another call may return, with the right result.
    bool right = a.type == DataType::kFloat32
                     ? result_is_right<float>(output.data(), a, context.size())
                     : result_is_right<int32_t>(output.data(), a, context.size());
    EXPECT_TRUE(right) << rank << "returned success with a wrong result";
    return;
  }
  ASSERT_EQ(outcome, kMismatch) << rank << "expected MismatchError, got " << outcome_name(outcome)
                                << ": " << message;
  EXPECT_NE(message.find("collective mismatch"), std::string::npos) << rank << message;
  EXPECT_NE(message.find(scenario.mine), std::string::npos)
      << rank << "the message does not name the call with '" << scenario.mine << "': " << message;
  EXPECT_NE(message.find(scenario.theirs), std::string::npos)
      << rank << "the message does not name the call with '" << scenario.theirs << "': " << message;
}

TEST_P(DetectedByDefault, EveryRankFailsPromptlyNamingBothCalls) {
  const DefaultVariant& v = GetParam();
  SharedMapping<Outcomes> outcomes;
  ContextOptions options;
  options.timeout = 30s;
  auto results = run_context_processes(
      kRanks, [&](Context& context) { default_rank_body(v, context, *outcomes); }, 120s, options);
  expect_all_ok(results);
  if (outcomes->skipped.load()) {
    GTEST_SKIP() << "an algorithm was chosen in this process before the fork, so GLOO_LITE_ALGO "
                    "is fixed; the variant runs alone as collectives_mismatch_env_tests";
  }
  int mismatches = 0, later_mismatches = 0;
  std::string summary;
  for (int rank = 0; rank < kRanks; ++rank) {
    int outcome = outcomes->outcome[rank].load();
    int later = outcomes->later[rank].load();
    summary += " rank " + std::to_string(rank) + ": " + outcome_name(outcome) +
               (outcome == kReturned ? std::string(", then ") + outcome_name(later) : "") + ";";
    mismatches += outcome == kMismatch;
    later_mismatches += later == kMismatch;
  }
  if (v.scenario->may_pass_unseen) {
    EXPECT_GT(mismatches + later_mismatches, 0) << "nobody detected the disagreement:" << summary;
  } else {
    // The odd rank's call is never completed by a rank of the other call without a message
    // between them, so someone must have seen it in that call.
    EXPECT_GT(mismatches, 0) << "nobody detected the disagreement in the call:" << summary;
  }
}

INSTANTIATE_TEST_SUITE_P(Processes, DetectedByDefault, ::testing::ValuesIn(default_variants()),
                         [](const ::testing::TestParamInfo<DefaultVariant>& info) {
                           return info.param.name();
                         });

}  // namespace
}  // namespace gloo_lite::test
