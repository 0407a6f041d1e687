// The mixed mesh with the real shared-memory transport beside TCP, through the bootstrap's
// transport table: 2 "hosts" x 2 ranks as processes of this machine. GLOO_LITE_HOST_ID gives
// ranks 0 and 1 one host identity and ranks 2 and 3 another, so each rank has one peer over
// shm (rank ^ 1) and two over TCP. Shared memory moves only while a thread of the rank waits
// on or tests the mesh, so most tests here make a rank wait on TCP alone while its shm peer
// needs it (a full ring, an abort, a call mismatch, its death): rule 2 of mixed_mesh.h.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gloo_lite/base/error.h"
#include "gloo_lite/base/host.h"
#include "gloo_lite/bootstrap.h"
#include "gloo_lite/collectives.h"
#include "gloo_lite/context.h"
#include "gloo_lite/context_engine.h"
#include "rendezvous/stores.h"
#include "test/mixed/collective_checks.h"
#include "test/mixed/thread_sleeps.h"
#include "test/support/test_support.h"

namespace gloo_lite::test {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kRanks = 4;

bool same_host(int a, int b) { return a / 2 == b / 2; }

long elapsed_ms(Clock::time_point start) {
  return std::chrono::duration_cast<milliseconds>(Clock::now() - start).count();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

using Env = std::vector<std::pair<const char*, const char*>>;
using Body = std::function<void(Context& context)>;

// Runs body on 4 ranks of two fake hosts; `env` is set in every rank before its device exists.
std::vector<ProcessResult> run_two_hosts(const Body& body, const Env& env = {}) {
  TempDir directory;
  return run_processes(
      kRanks,
      [&](int rank) {
        setenv("GLOO_LITE_HOST_ID", rank < 2 ? "host-a" : "host-b", 1);
        setenv("GLOO_LITE_HOSTNAME", "127.0.0.1", 1);
        unsetenv("GLOO_LITE_TRANSPORT");
        // Fake hosts: give the link's figure rather than probe loopback at creation (one more
        // collective there for a mismatch test's abort to land in).
        setenv("GLOO_LITE_NET_BETA_GBPS", "0.025", 1);
        for (const auto& [name, value] : env) setenv(name, value, 1);
        ContextOptions options;
        options.timeout = seconds(20);
        auto context = Context::create(make_file_store(directory.path()), rank, kRanks,
                                       create_device_from_env(), options);
        body(*context);
      },
      seconds(90));
}

TEST(MixedShm, EachRankHasOneShmPeerAndTwoTcpPeers) {
  expect_all_ok(run_two_hosts([](Context& context) {
    auto& mesh = engine_of(context).mesh();
    const int me = context.rank();
    EXPECT_TRUE(contains(host_identity(), me < 2 ? "host-a" : "host-b")) << host_identity();
    // Every rank's pid, to check what describe_peer says of the shm peer.
    int32_t pid = static_cast<int32_t>(getpid());
    std::vector<int32_t> pids(kRanks);
    allgather(context, &pid, pids.data(), 1, DataType::kInt32);
    for (int peer = 0; peer < kRanks; ++peer) {
      if (peer == me) continue;
      const std::string transport = same_host(me, peer) ? "shm" : "tcp";
      EXPECT_EQ(mesh.transport_of(peer), transport) << "rank " << me << " for rank " << peer;
      const std::string described = mesh.describe_peer(peer);
      EXPECT_TRUE(contains(described, "rank " + std::to_string(peer) + " ")) << described;
      EXPECT_TRUE(contains(described, " over " + transport)) << described;
      if (transport == "shm") {
        EXPECT_TRUE(contains(described, "(pid " + std::to_string(pids[peer]) + ")")) << described;
      } else {
        EXPECT_TRUE(contains(described, "127.0.0.1:")) << described;
      }
    }
    // Not a peer: no transport, and the bare rank.
    for (int other : {-1, me, kRanks}) {
      EXPECT_EQ(mesh.transport_of(other), "") << other;
      EXPECT_EQ(mesh.describe_peer(other), "rank " + std::to_string(other));
    }
    barrier(context);
  }));
}

// allreduce of several algorithms and sizes (eager and large messages on both transports),
// allgather, broadcast, reduce_scatter and alltoall, against values computed here.
void collectives_match_a_local_reference(Context& context) {
  const int me = context.rank();
  expect_allreduce_matches(context);
  expect_allgather_matches(context, 40000);
  for (int root : {1, 2}) expect_broadcast_matches(context, root);
  const size_t slice = 30000;
  std::vector<int64_t> input(slice * kRanks), output(slice);
  for (size_t i = 0; i < input.size(); ++i) input[i] = reference_value(me, i);
  reduce_scatter(context, input.data(), output.data(), slice, DataType::kInt64, ReduceOp::kSum);
  for (size_t i = 0; i < slice; ++i) {
    int64_t expect = 0;
    for (int r = 0; r < kRanks; ++r) expect += reference_value(r, me * slice + i);
    ASSERT_EQ(output[i], expect) << "element " << i;
  }
  expect_alltoall_matches(context);
  barrier(context);
}

TEST(MixedShm, CollectivesMatchALocalReference) {
  expect_all_ok(run_two_hosts(collectives_match_a_local_reference));
}

// Large shm messages pipelined through the ring instead of copied once (CMA).
TEST(MixedShm, CollectivesMatchALocalReferenceWithoutCma) {
  expect_all_ok(run_two_hosts(collectives_match_a_local_reference, {{"GLOO_LITE_SHM_CMA", "0"}}));
}

TEST(MixedShm, ReceiveFromAnySpanningTransportsIsRefused) {
  expect_all_ok(run_two_hosts([](Context& context) {
    const int me = context.rank();
    int value = 0;
    if (me == 0) {
      try {
        context.recv_any({1, 2}, &value, sizeof(value), 5);
        ADD_FAILURE() << "a receive from ranks of two transports was accepted";
      } catch (const InvalidArgument& e) {
        std::string text = e.what();
        for (const char* part : {"ranks {1-2}", "rank 1 is served by shm", "rank 2 by tcp"}) {
          EXPECT_TRUE(contains(text, part)) << part << " missing in: " << text;
        }
      }
      // Within one transport it works, over shm and over TCP; the refused call took nothing.
      EXPECT_EQ(context.recv_any({1}, &value, sizeof(value), 5), 1);
      EXPECT_EQ(value, 41);
      EXPECT_EQ(context.recv_any({2, 3}, &value, sizeof(value), 6), 3);
      EXPECT_EQ(value, 43);
    } else if (me != 2) {
      value = 40 + me;
      context.send(0, &value, sizeof(value), me == 1 ? 5 : 6);
    }
    barrier(context);
  }));
}

// The cross-transport deadlock of rule 2: rank 1 sends rank 0 more eager data over shm than
// its ring holds and waits for it; rank 2 waits for rank 1's next message; rank 0 waits only
// on TCP, for rank 2. Unless rank 0's wait reads its shm inbox, none of them ever moves.
// `poll`: rank 0 tests its request in a loop instead of waiting.
void shm_peer_that_fills_the_ring(Context& context, bool poll) {
  auto& mesh = engine_of(context).mesh();
  const int me = context.rank();
  constexpr int kMessages = 40;
  constexpr size_t kBytes = 32 << 10;  // eager; 40 of them fill the 256 KiB ring 5 times
  const auto deadline = Deadline::after(seconds(10));
  uint64_t token = 0;
  auto token_memory = mesh.register_memory(&token, sizeof(token));
  std::vector<std::vector<uint8_t>> buffers(kMessages);
  std::vector<std::unique_ptr<transport::Memory>> memories;
  std::vector<transport::RequestPtr> requests;
  if (me == 1) {
    for (int k = 0; k < kMessages; ++k) {
      buffers[k].assign(kBytes, static_cast<uint8_t>(k + 1));
      memories.push_back(mesh.register_memory(buffers[k].data(), kBytes));
      requests.push_back(mesh.send(0, 100 + k, *memories.back(), 0, kBytes));
    }
    mesh.wait(requests, deadline);
    token = 7;
    mesh.wait({mesh.send(2, 200, *token_memory, 0, sizeof(token))}, deadline);
  } else if (me == 2) {
    mesh.wait({mesh.recv(1, 200, *token_memory, 0, sizeof(token))}, deadline);
    EXPECT_EQ(token, 7u);
    token = 8;
    mesh.wait({mesh.send(0, 201, *token_memory, 0, sizeof(token))}, deadline);
  } else if (me == 0) {
    auto from_tcp = mesh.recv(2, 201, *token_memory, 0, sizeof(token));
    if (poll) {
      while (!from_tcp->test()) {
        ASSERT_FALSE(deadline.expired()) << "rank 0 polled its TCP receive for 10 s";
        usleep(200);
      }
    } else {
      mesh.wait({from_tcp}, deadline);
    }
    EXPECT_EQ(token, 8u);
    for (int k = 0; k < kMessages; ++k) {
      buffers[k].assign(kBytes, 0);
      memories.push_back(mesh.register_memory(buffers[k].data(), kBytes));
      requests.push_back(mesh.recv(1, 100 + k, *memories.back(), 0, kBytes));
    }
    mesh.wait(requests, deadline);
    for (int k = 0; k < kMessages; ++k) {
      ASSERT_EQ(buffers[k], std::vector<uint8_t>(kBytes, static_cast<uint8_t>(k + 1)))
          << "message " << k;
    }
  }
  barrier(context);
}

TEST(MixedShm, WaitOnTcpAloneDrainsAShmPeersFullRing) {
  expect_all_ok(
      run_two_hosts([](Context& context) { shm_peer_that_fills_the_ring(context, false); }));
}

TEST(MixedShm, PollingATcpRequestDrainsAShmPeersFullRing) {
  expect_all_ok(
      run_two_hosts([](Context& context) { shm_peer_that_fills_the_ring(context, true); }));
}

// A large message pipelined through the ring (no CMA) into a receive posted early while the
// rank waits on TCP alone, for a message that comes only once the large one is through: the
// wait must keep the stream going at the short slice (32 MiB is 128 rings: about 2.6 s at the
// long slice, a small fraction of that at the short one).
TEST(MixedShm, PipelinedMessageIntoAnEarlyReceiveFlowsWhileWaitingOnTcp) {
  expect_all_ok(run_two_hosts(
      [](Context& context) {
        auto& mesh = engine_of(context).mesh();
        const int me = context.rank();
        constexpr size_t kBytes = size_t{32} << 20;
        const auto deadline = Deadline::after(seconds(15));
        uint64_t token = 0;
        auto token_memory = mesh.register_memory(&token, sizeof(token));
        if (me == 1) {
          std::vector<uint8_t> data(kBytes);
          for (size_t i = 0; i < kBytes; ++i) data[i] = static_cast<uint8_t>(i * 131 + 7);
          auto memory = mesh.register_memory(data.data(), kBytes);
          barrier(context);
          mesh.wait({mesh.send(0, 600, *memory, 0, kBytes)}, deadline);
          mesh.wait({mesh.send(2, 602, *token_memory, 0, sizeof(token))}, deadline);
        } else if (me == 2) {
          barrier(context);
          mesh.wait({mesh.recv(1, 602, *token_memory, 0, sizeof(token))}, deadline);
          mesh.wait({mesh.send(0, 601, *token_memory, 0, sizeof(token))}, deadline);
        } else if (me == 0) {
          std::vector<uint8_t> data(kBytes, 0);
          auto memory = mesh.register_memory(data.data(), kBytes);
          auto large = mesh.recv(1, 600, *memory, 0, kBytes);
          barrier(context);
          auto start = Clock::now();
          mesh.wait({mesh.recv(2, 601, *token_memory, 0, sizeof(token))}, deadline);
          EXPECT_LT(elapsed_ms(start), 1500) << "the stream moved at the long slice";
          mesh.wait({large}, deadline);
          for (size_t i = 0; i < kBytes; ++i) {
            ASSERT_EQ(data[i], static_cast<uint8_t>(i * 131 + 7)) << "byte " << i;
          }
        } else {
          barrier(context);
        }
        barrier(context);
      },
      {{"GLOO_LITE_SHM_CMA", "0"}}));
}

// A receive over shm posted early and not waited on: a wait on TCP meanwhile sleeps in long
// slices (about 50 wake-ups a second), not 1 ms ones.
TEST(MixedShm, IdleEarlyShmReceiveDoesNotShortenTheSlices) {
  expect_all_ok(run_two_hosts([](Context& context) {
    auto& mesh = engine_of(context).mesh();
    const int me = context.rank();
    const auto deadline = Deadline::after(seconds(15));
    uint64_t early = 0, token = 0;
    auto early_memory = mesh.register_memory(&early, sizeof(early));
    auto token_memory = mesh.register_memory(&token, sizeof(token));
    if (me == 0) {
      auto idle = mesh.recv(1, 700, *early_memory, 0, sizeof(early));
      barrier(context);
      const long before = thread_sleeps();
      auto start = Clock::now();
      mesh.wait({mesh.recv(2, 701, *token_memory, 0, sizeof(token))}, deadline);
      const long wall = elapsed_ms(start), sleeps = thread_sleeps() - before;
      EXPECT_GT(wall, 800) << "rank 2 sends after 1 s";
      EXPECT_LT(sleeps, wall / 4) << sleeps << " wake-ups in " << wall << " ms";
      barrier(context);
      mesh.wait({idle}, deadline);
      EXPECT_EQ(early, 11u);
    } else {
      barrier(context);
      if (me == 2) {
        usleep(1000000);
        token = 3;
        mesh.wait({mesh.send(0, 701, *token_memory, 0, sizeof(token))}, deadline);
      }
      barrier(context);
      if (me == 1) {
        early = 11;
        mesh.wait({mesh.send(0, 700, *early_memory, 0, sizeof(early))}, deadline);
      }
    }
    barrier(context);
  }));
}

// Rank 1, rank 0's shm peer, fails in one of three ways while rank 0 waits only on TCP, for
// rank 2, which never sends. Rank 0 must fail within 2 s with rank 1's cause. Ranks 2 and 3
// learn it over their own TCP pairs with rank 1 and then stay alive (a TCP mesh that lost one
// pair keeps its others open), so rank 0 can learn it only from its shm sub-mesh.
enum class Failure { kKilled, kAborted, kMismatch };

void shm_peer_fails_while_rank_0_waits_on_tcp(Failure how) {
  auto results = run_two_hosts([how](Context& context) {
    auto& mesh = engine_of(context).mesh();
    const int me = context.rank();
    uint64_t value = 0;
    auto memory = mesh.register_memory(&value, sizeof(value));
    barrier(context);
    auto start = Clock::now();
    if (me == 1) {
      usleep(300000);
      if (how == Failure::kKilled) raise(SIGKILL);
      if (how == Failure::kAborted) {
        mesh.abort("rank 1 gives up on purpose");
        return;
      }
      // The message rank 0 sent as call 0x1111 reaches a receive of call 0x2222.
      EXPECT_THROW(mesh.wait({mesh.recv(0, 400, *memory, 0, sizeof(value), 0x2222)},
                             engine_of(context).deadline()),
                   MismatchError);
      usleep(3000000);
      return;
    }
    if (me == 0) {
      if (how == Failure::kMismatch) {
        mesh.wait({mesh.send(1, 400, *memory, 0, sizeof(value), 0x1111)},
                  engine_of(context).deadline());
      }
      try {
        mesh.wait({mesh.recv(2, 300, *memory, 0, sizeof(value))}, Deadline::after(seconds(10)));
        ADD_FAILURE() << "a receive that nobody sent completed";
      } catch (const MismatchError& e) {
        EXPECT_EQ(how, Failure::kMismatch) << e.what();
        EXPECT_TRUE(contains(e.what(), "collective mismatch")) << e.what();
      } catch (const ConnectionError& e) {
        EXPECT_NE(how, Failure::kMismatch) << e.what();
        const char* cause = how == Failure::kKilled ? "rank 1" : "rank 1 gives up on purpose";
        EXPECT_TRUE(contains(e.what(), cause)) << e.what();
      }
      EXPECT_LT(elapsed_ms(start), 2000) << "rank 0 learned rank 1's failure too late";
      return;
    }
    // Ranks 2 and 3: fail through their own pair with rank 1, then outlive rank 0's verdict.
    EXPECT_THROW(
        mesh.wait({mesh.recv(1, 300, *memory, 0, sizeof(value))}, Deadline::after(seconds(10))),
        Error);
    usleep(static_cast<useconds_t>(std::max<long>(0, 4000 - elapsed_ms(start)) * 1000));
  });
  if (how == Failure::kKilled) {
    expect_only_victim_killed(results, 1);
  } else {
    expect_all_ok(results);
  }
}

TEST(MixedShm, KilledShmPeerFailsARankWaitingOnTcpAlone) {
  shm_peer_fails_while_rank_0_waits_on_tcp(Failure::kKilled);
}

TEST(MixedShm, ShmPeersAbortReachesARankWaitingOnTcpAlone) {
  shm_peer_fails_while_rank_0_waits_on_tcp(Failure::kAborted);
}

TEST(MixedShm, CallMismatchFoundOverShmReachesARankWaitingOnTcpAlone) {
  shm_peer_fails_while_rank_0_waits_on_tcp(Failure::kMismatch);
}

// Rank 3 calls another collective than the others: every rank, whichever transport brought
// it the news, fails with a MismatchError, promptly. The ring allreduce sends rank 3 a message
// under the tag of its broadcast's receive at once (with algorithms whose first messages never
// reach a rank of the other call, only GLOO_LITE_CHECK=1 finds a mismatch).
TEST(MixedShm, CollectiveMismatchAcrossTransportsFailsEveryRank) {
  expect_all_ok(run_two_hosts([](Context& context) {
    const int me = context.rank();
    std::vector<int32_t> data(1000, me);
    auto start = Clock::now();
    try {
      if (me == 3) {
        broadcast(context, data.data(), data.size(), DataType::kInt32, 0);
      } else {
        CollectiveOptions options;
        options.algorithm = "ring";
        allreduce(context, data.data(), data.data(), data.size(), DataType::kInt32, ReduceOp::kSum,
                  options);
      }
      ADD_FAILURE() << "rank " << me << " finished a mismatched collective";
    } catch (const MismatchError& e) {
      EXPECT_TRUE(contains(e.what(), "collective mismatch")) << e.what();
    }
    EXPECT_LT(elapsed_ms(start), 5000) << "rank " << me << " learned of the mismatch late";
  }));
}

}  // namespace
}  // namespace gloo_lite::test
