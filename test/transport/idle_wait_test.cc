// The TCP waiting policy (docs/transport.md, Waiting policy): a waiter polls for a bounded,
// adaptive time and then sleeps, so a rank blocked for seconds costs (almost) no CPU, whether
// it spins alone on its core or yields to ranks that share it; and the budget's rules.
#include <gtest/gtest.h>
#include <time.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "test/transport/harness.h"
#include "transport_tcp/wait_policy.h"

namespace gloo_lite::test {
namespace {

using gloo_lite::WaitPolicy;
using std::chrono::microseconds;
using std::chrono::milliseconds;

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);  // every thread: the event loop's too
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Sets an environment variable for the test's lifetime (children inherit it).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

constexpr auto kBlocked = milliseconds(2000);

// The last rank sleeps kBlocked and then sends 8 bytes to every other rank; those wait in one
// receive, after warm-up exchanges that leave the spin budget at its bound. Each waiter's
// process (all its threads) must use less than 20% of a core meanwhile.
void blocked_receivers(Context& context) {
  auto& mesh = engine_of(context).mesh();
  const int last = context.size() - 1;
  uint64_t value = 0;
  auto memory = mesh.register_memory(&value, sizeof(value));
  auto one = [&](transport::RequestPtr request) {
    mesh.wait({request}, engine_of(context).deadline());
  };
  for (uint64_t round = 0; round < 50; ++round) {
    if (context.rank() == last) {
      for (int peer = 0; peer < last; ++peer) one(mesh.send(peer, round, *memory, 0, 8));
    } else {
      one(mesh.recv(last, round, *memory, 0, 8));
    }
  }
  const uint64_t tag = 1000;
  if (context.rank() == last) {
    std::this_thread::sleep_for(kBlocked);
    value = 42;
    for (int peer = 0; peer < last; ++peer) one(mesh.send(peer, tag, *memory, 0, 8));
    return;
  }
  const double cpu_before = process_cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  one(mesh.recv(last, tag, *memory, 0, 8));
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu = process_cpu_seconds() - cpu_before;
  EXPECT_EQ(value, 42u) << "rank " << context.rank();
  EXPECT_GT(wall, 0.5 * std::chrono::duration<double>(kBlocked).count())
      << "rank " << context.rank() << " did not wait for the sender";
  EXPECT_LT(cpu, 0.2 * wall) << "rank " << context.rank() << " used " << cpu << " s of CPU in a "
                             << wall << " s wait: the waiter spins instead of sleeping";
}

// GLOO_LITE_CORES sets how many CPUs the host is taken to have: 4 gives 2 ranks a core each
// (plain polling), 1 makes them outnumber it (polling with sched_yield).
TEST(IdleWait, BlockedReceiverWithACoreToSpareSleeps) {
  ScopedEnv cores("GLOO_LITE_CORES", "4");
  expect_all_ok(run_context_processes(2, blocked_receivers));
}

TEST(IdleWait, BlockedReceiversThatOutnumberCoresSleep) {
  ScopedEnv cores("GLOO_LITE_CORES", "1");
  expect_all_ok(run_context_processes(4, blocked_receivers));
}

TEST(IdleWait, ExplicitSpinBoundStillSleeps) {
  ScopedEnv spin("GLOO_LITE_SPIN_US", "1000");
  expect_all_ok(run_context_processes(2, blocked_receivers));
}

// A peer that closed its context leaves this rank with a shut-down socket, which epoll reports
// (EPOLLHUP) whatever the events asked for: the event loop must stop watching it rather than
// spin on it while this rank keeps its context.
TEST(IdleWait, ContextOutlivingAClosedPeerSleeps) {
  expect_all_ok(run_context_processes(2, [](Context& context) {
    auto& mesh = engine_of(context).mesh();
    uint64_t value = 7;
    auto memory = mesh.register_memory(&value, sizeof(value));
    if (context.rank() == 1) {
      mesh.wait({mesh.send(0, 1, *memory, 0, 8)}, engine_of(context).deadline());
      return;  // closes the context: a goodbye, then the socket closes
    }
    mesh.wait({mesh.recv(1, 1, *memory, 0, 8)}, engine_of(context).deadline());
    std::this_thread::sleep_for(milliseconds(300));  // the goodbye and the close arrive
    const double cpu_before = process_cpu_seconds();
    std::this_thread::sleep_for(milliseconds(1000));
    const double cpu = process_cpu_seconds() - cpu_before;
    EXPECT_LT(cpu, 0.2) << "rank 0 used " << cpu
                        << " s of CPU in 1 s while idle after its peer closed";
  }));
}

TEST(WaitPolicy, BudgetAdaptsWithinItsBound) {
  WaitPolicy policy;
  policy.configure(microseconds(50), false);
  EXPECT_EQ(policy.budget(), microseconds(50));
  // Long waits: the budget halves down to 0.
  for (int i = 0; i < 10; ++i) policy.record(false, milliseconds(5));
  EXPECT_EQ(policy.budget(), microseconds(0));
  // A short wait that a spin would have caught restarts it, and caught waits grow it to the
  // bound, never past it.
  policy.record(false, microseconds(20));
  EXPECT_EQ(policy.budget(), WaitPolicy::kRestart);
  for (int i = 0; i < 20; ++i) policy.record(true, microseconds(3));
  EXPECT_EQ(policy.budget(), microseconds(50));
  policy.record(false, microseconds(60));
  EXPECT_EQ(policy.budget(), microseconds(25));
}

TEST(WaitPolicy, ZeroNeverSpins) {
  WaitPolicy policy;
  policy.configure(microseconds(0), true);
  for (int i = 0; i < 5; ++i) policy.record(true, microseconds(1));
  EXPECT_EQ(policy.budget(), microseconds(0));
}

TEST(WaitPolicy, DefaultsFollowTheHostLoadAndTheKnobOverrides) {
  unsetenv("GLOO_LITE_SPIN_US");
  WaitPolicy policy;
  policy.configure_for(0.5, tcp::wait_bounds());
  EXPECT_EQ(policy.limit(), kDefaultWaitBounds.free_core);
  EXPECT_FALSE(policy.yields());
  policy.configure_for(1.0, tcp::wait_bounds());
  EXPECT_FALSE(policy.yields());
  policy.configure_for(4.0, tcp::wait_bounds());
  EXPECT_EQ(policy.limit(), kDefaultWaitBounds.shared_core);
  EXPECT_TRUE(policy.yields());
  ScopedEnv spin("GLOO_LITE_SPIN_US", "0");
  policy.configure_for(0.5, tcp::wait_bounds());
  EXPECT_EQ(policy.budget(), microseconds(0));
}

TEST(WaitPolicy, LocalRanksPerCoreCountsPeersOnThisHost) {
  ScopedEnv cores("GLOO_LITE_CORES", "2");
  // Two ranks on 10.0.0.1 (one of them this one), one elsewhere, one served by another
  // transport (empty: it may be anywhere, ibverbs reaches other hosts; not counted).
  EXPECT_DOUBLE_EQ(tcp::local_ranks_per_core(
                       "10.0.0.1:5000", {"10.0.0.1:5000", "10.0.0.1:5001", "10.0.0.2:5000", ""}),
                   1.0);
  EXPECT_DOUBLE_EQ(tcp::local_ranks_per_core("[::1]:7", {"[::1]:7", "[::2]:7"}), 0.5);
  // A TCP mesh that serves only remote peers (the others over ibverbs or shared memory) is
  // one rank on this host, however many peers another transport serves.
  EXPECT_DOUBLE_EQ(
      tcp::local_ranks_per_core("10.0.0.1:5000", {"", "", "10.0.0.1:5000", "", "10.0.0.3:5000"}),
      0.5);
}

}  // namespace
}  // namespace gloo_lite::test
