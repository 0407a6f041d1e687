// The mixed mesh (gloo_lite/transport/mixed_mesh.h) with real processes and sockets, and a
// stand-in for shared memory (mixed_shm_test.cc runs the real one): "near", a TCP device whose
// can_connect() accepts only peers "on the same host", i.e. bound to the same loopback address.
// Even ranks bind it to 127.0.0.1, odd ranks to 127.0.0.2: pairs of equal parity must use "near",
// the others the plain "tcp" device. "near" also claims to need a waiter (progresses_alone = false,
// as shared memory does), so the waiter-driven side of the wait rule runs too.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "gloo_lite/base/error.h"
#include "gloo_lite/bootstrap.h"
#include "gloo_lite/collectives.h"
#include "gloo_lite/context.h"
#include "gloo_lite/context_engine.h"
#include "gloo_lite/transport/mixed_device.h"
#include "rendezvous/stores.h"
#include "test/mixed/collective_checks.h"
#include "test/mixed/thread_sleeps.h"
#include "test/support/test_support.h"
#include "transport_tcp/tcp_device.h"

namespace gloo_lite::test {
namespace {

using Clock = std::chrono::steady_clock;

long elapsed_ms(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The host part of a TCP address "127.0.0.2:41000".
std::string host_of(const std::string& address) { return address.substr(0, address.rfind(':')); }

// The stand-in for shared memory: a TCP device that connects only peers on its own address.
class NearDevice : public transport::Device {
 public:
  explicit NearDevice(const std::string& host) {
    tcp::DeviceOptions options;
    options.hostname = host;
    tcp_ = tcp::create_device(options);
  }
  std::string name() const override { return "near (stand-in for shm)"; }
  std::unique_ptr<transport::Mesh> create_mesh(int rank, int size,
                                               const transport::MeshOptions& options) override {
    return tcp_->create_mesh(rank, size, options);
  }
  bool can_connect(const std::string& mine, const std::string& theirs) const override {
    return host_of(mine) == host_of(theirs);
  }

 private:
  std::shared_ptr<transport::Device> tcp_;
};

bool near_pair(int a, int b) { return a % 2 == b % 2; }
std::string expected_transport(int a, int b) { return near_pair(a, b) ? "near" : "tcp"; }

std::shared_ptr<transport::Device> near_host_device(int rank) {
  return std::make_shared<NearDevice>(rank % 2 == 0 ? "127.0.0.1" : "127.0.0.2");
}

std::shared_ptr<transport::Device> loopback_tcp() {
  tcp::DeviceOptions options;
  options.hostname = "127.0.0.1";
  return tcp::create_device(options);
}

// The table of this test: near first (as shm will be), then TCP.
std::shared_ptr<transport::Device> mixed_device(int rank) {
  return transport::create_mixed_device(
      {{"near", near_host_device(rank), /*progresses_alone=*/false}, {"tcp", loopback_tcp(), true}},
      /*forced=*/false);
}

using Body = std::function<void(Context& context)>;

std::vector<ProcessResult> run_mixed(
    int ranks, const Body& body, std::chrono::milliseconds timeout = std::chrono::seconds(60),
    std::function<std::shared_ptr<transport::Device>(int)> device = mixed_device) {
  TempDir directory;
  return run_processes(
      ranks,
      [&](int rank) {
        ContextOptions options;
        options.timeout = std::chrono::seconds(20);
        auto context =
            Context::create(make_file_store(directory.path()), rank, ranks, device(rank), options);
        body(*context);
      },
      timeout);
}

// The contract's empty address, on TCP alone: ranks 0 and 2 are not connected (another
// transport would serve them); every call naming the absent pair fails with InvalidArgument,
// the other pairs work, and abort and close pass the absent pair by.
TEST(MixedTransport, TcpMeshServesOnlyPeersWithAnAddress) {
  TempDir directory;
  expect_all_ok(run_processes(
      3,
      [&](int rank) {
        auto store = make_file_store(directory.path());
        auto device = loopback_tcp();  // outlives its mesh
        auto mesh = device->create_mesh(rank, 3, {});
        auto deadline = Deadline::after(std::chrono::seconds(20));
        store->set("addr" + std::to_string(rank), to_bytes(mesh->address()), deadline);
        std::vector<std::string> addresses(3);
        for (int p = 0; p < 3; ++p)
          addresses[p] = to_string(store->get("addr" + std::to_string(p), deadline));
        const int absent = rank == 0 ? 2 : rank == 2 ? 0 : -1;
        if (absent >= 0) addresses[absent] = "";
        mesh->connect(addresses, 77, deadline);
        int value = 0;
        auto memory = mesh->register_memory(&value, sizeof(value));
        if (absent >= 0) {
          EXPECT_EQ(mesh->transport_of(absent), "");
          EXPECT_EQ(mesh->transport_of(1), "tcp");
          EXPECT_EQ(mesh->describe_peer(absent), "rank " + std::to_string(absent));
          try {
            mesh->send(absent, 1, *memory, 0, sizeof(value));
            ADD_FAILURE() << "a send to a peer without an address was posted";
          } catch (const InvalidArgument& e) {
            EXPECT_TRUE(contains(e.what(), "is not served")) << e.what();
          }
          EXPECT_THROW(mesh->recv(std::vector<int>{1, absent}, 1, *memory, 0, sizeof(value)),
                       InvalidArgument);
          value = rank + 10;
          mesh->wait({mesh->send(1, 1, *memory, 0, sizeof(value))}, deadline);
          mesh->wait({mesh->recv(1, 2, *memory, 0, sizeof(value))}, deadline);
          EXPECT_EQ(value, 99);
          // Rank 1 aborts: the failure reaches this rank through its one pair.
          try {
            mesh->wait({mesh->recv(1, 3, *memory, 0, sizeof(value))}, deadline);
            ADD_FAILURE() << "receive completed although rank 1 aborted";
          } catch (const ConnectionError& e) {
            EXPECT_TRUE(contains(e.what(), "giving up")) << e.what();
          }
        } else {
          for (int peer : {0, 2}) {
            mesh->wait({mesh->recv(peer, 1, *memory, 0, sizeof(value))}, deadline);
            EXPECT_EQ(value, peer + 10);
          }
          value = 99;
          mesh->wait({mesh->send(0, 2, *memory, 0, sizeof(value)),
                      mesh->send(2, 2, *memory, 0, sizeof(value))},
                     deadline);
          mesh->abort("rank 1 is giving up");
        }
      },
      std::chrono::seconds(60)));
}

TEST(MixedTransport, EveryPairUsesTheTransportBothEndsChose) {
  constexpr int kRanks = 5;
  expect_all_ok(run_mixed(kRanks, [](Context& context) {
    auto& mesh = engine_of(context).mesh();
    const int me = context.rank();
    // What this rank's mesh says, gathered from every rank: choice[i * P + j] is rank i's
    // transport for rank j (0 near, 1 tcp, -1 self).
    std::vector<int32_t> mine(kRanks);
    for (int peer = 0; peer < kRanks; ++peer) {
      std::string name = mesh.transport_of(peer);
      mine[peer] = peer == me ? -1 : name == "near" ? 0 : name == "tcp" ? 1 : 2;
      if (peer == me) continue;
      EXPECT_EQ(name, expected_transport(me, peer)) << "rank " << me << " for rank " << peer;
      // The pair really runs on that device: a near pair of odd ranks meets on 127.0.0.2.
      std::string described = mesh.describe_peer(peer);
      std::string host = near_pair(me, peer) && peer % 2 == 1 ? "127.0.0.2:" : "127.0.0.1:";
      EXPECT_TRUE(contains(described, host)) << described;
      EXPECT_TRUE(contains(described, "over " + name)) << described;
    }
    // Not a peer: no transport, and the bare rank.
    for (int other : {-1, me, kRanks}) {
      EXPECT_EQ(mesh.transport_of(other), "") << other;
      EXPECT_EQ(mesh.describe_peer(other), "rank " + std::to_string(other));
    }
    std::vector<int32_t> all(kRanks * kRanks);
    allgather(context, mine.data(), all.data(), kRanks, DataType::kInt32);
    for (int i = 0; i < kRanks; ++i) {
      for (int j = 0; j < kRanks; ++j) {
        if (i == j) continue;
        EXPECT_EQ(all[i * kRanks + j], all[j * kRanks + i]) << "ranks " << i << " and " << j;
        EXPECT_EQ(all[i * kRanks + j], near_pair(i, j) ? 0 : 1) << "ranks " << i << " and " << j;
      }
    }
    // Messages of both sizes (eager, rendezvous) to every peer, waited on in one wait that
    // spans both sub-meshes.
    for (size_t bytes : {size_t{100}, size_t{3} << 20}) {
      std::vector<std::vector<uint8_t>> out(kRanks), in(kRanks);
      std::vector<std::unique_ptr<transport::Memory>> memories;
      std::vector<transport::RequestPtr> requests;
      for (int peer = 0; peer < kRanks; ++peer) {
        if (peer == me) continue;
        out[peer].assign(bytes, static_cast<uint8_t>(me * 16 + peer));
        in[peer].assign(bytes, 0);
        memories.push_back(mesh.register_memory(out[peer].data(), bytes));
        requests.push_back(mesh.send(peer, 7, *memories.back(), 0, bytes));
        memories.push_back(mesh.register_memory(in[peer].data(), bytes));
        requests.push_back(mesh.recv(peer, 7, *memories.back(), 0, bytes));
      }
      mesh.wait(requests, engine_of(context).deadline());
      for (int peer = 0; peer < kRanks; ++peer) {
        if (peer == me) continue;
        EXPECT_EQ(in[peer], std::vector<uint8_t>(bytes, static_cast<uint8_t>(peer * 16 + me)))
            << bytes << " bytes from rank " << peer;
      }
    }
  }));
}

TEST(MixedTransport, CollectivesMatchALocalReference) {
  constexpr int kRanks = 5;
  expect_all_ok(run_mixed(kRanks, [](Context& context) {
    expect_allreduce_matches(context);
    expect_allgather_matches(context, 333);
    expect_broadcast_matches(context, 3);
    expect_alltoall_matches(context);
    barrier(context);
  }));
}

TEST(MixedTransport, ReceiveFromAnySpanningTransportsIsRefused) {
  expect_all_ok(run_mixed(4, [](Context& context) {
    if (context.rank() != 0) {
      if (context.rank() == 2) {
        int value = 42;
        context.send(0, &value, sizeof(value), 5);  // to a receive from any of {2} (near)
      }
      barrier(context);
      return;
    }
    int value = 0;
    try {
      context.recv_any({1, 2}, &value, sizeof(value), 5);
      ADD_FAILURE() << "a receive from ranks of two transports was accepted";
    } catch (const InvalidArgument& e) {
      std::string text = e.what();
      for (const char* part :
           {"ranks {1-2}", "rank 1 is served by tcp", "rank 2 by near", "GLOO_LITE_TRANSPORT"}) {
        EXPECT_TRUE(contains(text, part)) << part << " missing in: " << text;
      }
    }
    // Within one transport, receive-from-any works, and the refused call consumed nothing.
    EXPECT_EQ(context.recv_any({2}, &value, sizeof(value), 5), 2);
    EXPECT_EQ(value, 42);
    barrier(context);
  }));
}

TEST(MixedTransport, TimeoutNamesLatePeersOfEveryTransport) {
  expect_all_ok(run_mixed(3, [](Context& context) {
    if (context.rank() != 0) {
      barrier(context);
      return;
    }
    auto& mesh = engine_of(context).mesh();
    int a = 0, b = 0;
    auto ma = mesh.register_memory(&a, sizeof(a));
    auto mb = mesh.register_memory(&b, sizeof(b));
    auto from_tcp = mesh.recv(1, 11, *ma, 0, sizeof(a));
    auto from_near = mesh.recv(2, 11, *mb, 0, sizeof(b));
    // A bounded look returns false and cancels nothing.
    EXPECT_FALSE(mesh.wait_until({from_tcp, from_near}, engine_of(context).deadline(),
                                 Deadline::after(std::chrono::milliseconds(50))));
    auto start = Clock::now();
    try {
      mesh.wait({from_tcp, from_near}, Deadline::after(std::chrono::milliseconds(300)));
      ADD_FAILURE() << "receives that nobody sent completed";
    } catch (const TimeoutError& e) {
      std::string text = e.what();
      EXPECT_TRUE(contains(text, "rank 1")) << text;
      EXPECT_TRUE(contains(text, "rank 2")) << text;
    }
    EXPECT_LT(elapsed_ms(start), 1500);
    barrier(context);
  }));
}

// A receive posted early on the waiter-driven transport and not waited on: a wait on the other
// transport meanwhile sleeps in long slices (rule 2 of mixed_mesh.h: short ones only while a
// waiter-driven sub-mesh has work in hand, which an idle receive is not), about 50 wake-ups a
// second rather than 1000.
TEST(MixedTransport, IdleEarlyReceiveDoesNotShortenTheSlices) {
  expect_all_ok(run_mixed(3, [](Context& context) {
    auto& mesh = engine_of(context).mesh();
    const int me = context.rank();
    uint64_t early = 0, token = 0;
    auto early_memory = mesh.register_memory(&early, sizeof(early));
    auto token_memory = mesh.register_memory(&token, sizeof(token));
    if (me == 0) {
      auto idle = mesh.recv(2, 21, *early_memory, 0, sizeof(early));  // near
      barrier(context);
      const long before = thread_sleeps();
      auto start = Clock::now();
      mesh.wait({mesh.recv(1, 22, *token_memory, 0, sizeof(token))},
                engine_of(context).deadline());  // tcp
      const long wall = elapsed_ms(start), sleeps = thread_sleeps() - before;
      EXPECT_GT(wall, 800) << "rank 1 sends after 1 s";
      EXPECT_LT(sleeps, wall / 4) << sleeps << " wake-ups in " << wall << " ms";
      barrier(context);
      mesh.wait({idle}, engine_of(context).deadline());
      EXPECT_EQ(early, 5u);
    } else {
      barrier(context);
      if (me == 1) {
        usleep(1000000);
        mesh.wait({mesh.send(0, 22, *token_memory, 0, sizeof(token))},
                  engine_of(context).deadline());
      }
      barrier(context);
      if (me == 2) {
        early = 5;
        mesh.wait({mesh.send(0, 21, *early_memory, 0, sizeof(early))},
                  engine_of(context).deadline());
      }
    }
    barrier(context);
  }));
}

// Rank 0 finds a call mismatch on its TCP pair with rank 1; rank 2, served by near, waits on
// rank 0 and must learn it promptly as a MismatchError, although no near pair saw anything.
TEST(MixedTransport, MismatchFoundOnOneTransportReachesPeersOfTheOther) {
  expect_all_ok(run_mixed(3, [](Context& context) {
    auto& mesh = engine_of(context).mesh();
    int value = 0;
    auto memory = mesh.register_memory(&value, sizeof(value));
    const uint64_t tag = 1234;
    if (context.rank() == 1) {
      mesh.wait({mesh.send(0, tag, *memory, 0, sizeof(value), /*fingerprint=*/0x1111)},
                engine_of(context).deadline());
      sleep(2);  // stay alive: rank 2 must learn from rank 0, not from a closed socket
      return;
    }
    if (context.rank() == 0) {
      EXPECT_THROW(mesh.wait({mesh.recv(1, tag, *memory, 0, sizeof(value), 0x2222)},
                             engine_of(context).deadline()),
                   MismatchError);
      sleep(2);
      return;
    }
    auto start = Clock::now();
    try {
      mesh.wait({mesh.recv(0, tag + 1, *memory, 0, sizeof(value))},
                Deadline::after(std::chrono::seconds(10)));
      ADD_FAILURE() << "receive completed although nobody sent";
    } catch (const MismatchError& e) {
      EXPECT_TRUE(contains(e.what(), "collective mismatch")) << e.what();
    }
    EXPECT_LT(elapsed_ms(start), 2000);
  }));
}

// A survivor waits on a live peer of one transport while the victim, served by the other
// transport, dies: the failure must cross sub-meshes and end the wait within 2 s naming it.
TEST(MixedTransport, KilledRankFailsEverySurvivorPromptly) {
  constexpr int kRanks = 5;
  constexpr int kVictim = 2;
  auto results = run_mixed(kRanks, [](Context& context) {
    const int me = context.rank();
    if (me == kVictim) {
      usleep(300000);
      raise(SIGKILL);
    }
    // A live peer served by the transport the victim is not served by (for this rank).
    int peer = -1;
    for (int p = 0; p < kRanks && peer < 0; ++p) {
      if (p != me && p != kVictim && near_pair(me, p) != near_pair(me, kVictim)) peer = p;
    }
    ASSERT_GE(peer, 0);
    expect_receive_fails_promptly(context, peer, "rank 2");
  });
  expect_only_victim_killed(results, kVictim);
}

TEST(MixedTransport, ForcedTransportServesEveryPair) {
  expect_all_ok(run_mixed(
      4,
      [](Context& context) {
        for (int peer = 0; peer < 4; ++peer) {
          if (peer != context.rank()) {
            EXPECT_EQ(engine_of(context).mesh().transport_of(peer), "tcp");
          }
        }
        std::vector<int32_t> data(1000, context.rank());
        allreduce(context, data.data(), data.data(), data.size(), DataType::kInt32, ReduceOp::kSum);
        EXPECT_EQ(data, std::vector<int32_t>(1000, 0 + 1 + 2 + 3));
      },
      std::chrono::seconds(60),
      [](int) {
        return transport::create_mixed_device({{"tcp", loopback_tcp(), true}}, /*forced=*/true);
      }));
}

TEST(MixedTransport, ForcedTransportThatCannotServeAPairFailsEveryRank) {
  // Every rank fails at connect, naming the pairs; none waits for its deadline.
  TempDir directory;
  auto start = Clock::now();
  expect_all_ok(run_processes(
      3,
      [&](int rank) {
        ContextOptions options;
        options.timeout = std::chrono::seconds(20);
        try {
          Context::create(
              make_file_store(directory.path()), rank, 3,
              transport::create_mixed_device({{"near", near_host_device(rank), false}}, true),
              options);
          ADD_FAILURE() << "connect succeeded";
        } catch (const InvalidArgument& e) {
          std::string text = e.what();
          EXPECT_TRUE(contains(text, "GLOO_LITE_TRANSPORT=near")) << text;
          EXPECT_TRUE(contains(text, "ranks 0 and 1")) << text;
          EXPECT_TRUE(contains(text, "ranks 1 and 2")) << text;
        }
      },
      std::chrono::seconds(60)));
  EXPECT_LT(elapsed_ms(start), 10000) << "a rank waited for its deadline";
}

// The bootstrap path: GLOO_LITE_TRANSPORT=tcp forces the table's TCP for every pair.
TEST(MixedTransport, EnvironmentForcesOneTransport) {
  TempDir directory;
  expect_all_ok(run_processes(
      3,
      [&](int rank) {
        setenv("GLOO_LITE_TRANSPORT", "tcp", 1);
        setenv("GLOO_LITE_HOSTNAME", "127.0.0.1", 1);
        auto device = create_device_from_env();
        EXPECT_EQ(device->name(), "tcp");
        ContextOptions options;
        options.timeout = std::chrono::seconds(20);
        auto context = Context::create(make_file_store(directory.path()), rank, 3, device, options);
        for (int peer = 0; peer < 3; ++peer) {
          if (peer != rank) {
            EXPECT_EQ(engine_of(*context).mesh().transport_of(peer), "tcp");
          }
        }
        int32_t value = rank + 1;
        allreduce(*context, &value, &value, 1, DataType::kInt32, ReduceOp::kSum);
        EXPECT_EQ(value, 6);
        setenv("GLOO_LITE_TRANSPORT", "shm-or-so", 1);
        try {
          create_device_from_env();
          ADD_FAILURE() << "an unknown transport was accepted";
        } catch (const InvalidArgument& e) {
          EXPECT_TRUE(contains(e.what(), "shm-or-so")) << e.what();
          EXPECT_TRUE(contains(e.what(), "available transports")) << e.what();
        }
      },
      std::chrono::seconds(60)));
}

}  // namespace
}  // namespace gloo_lite::test
