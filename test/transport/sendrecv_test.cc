// Point-to-point correctness between real processes over loopback TCP: every size class
// (empty, tiny, eager, just past the eager threshold, rendezvous, very large), for 2..16 ranks.
#include <gtest/gtest.h>

#include "rendezvous/stores.h"
#include "test/transport/harness.h"
#include "transport_tcp/tcp_device.h"

namespace gloo_lite::test {
namespace {

const std::vector<size_t> kSizes = {0, 1, 4096, 65537, 8u << 20, 64u << 20};

// Every rank sends each size to its right neighbour and receives from its left one, posting the
// receive first on even ranks and the send first on odd ranks.
void ring_exchange(Context& context, const std::vector<size_t>& sizes) {
  int rank = context.rank();
  int size = context.size();
  int right = (rank + 1) % size;
  int left = (rank + size - 1) % size;
  auto& mesh = engine_of(context).mesh();
  for (size_t s = 0; s < sizes.size(); ++s) {
    std::vector<uint8_t> out = make_pattern(rank, right, sizes[s], s);
    std::vector<uint8_t> in(sizes[s], 0xEE);
    auto out_memory = mesh.register_memory(out.data(), out.size());
    auto in_memory = mesh.register_memory(in.data(), in.size());
    std::vector<transport::RequestPtr> requests;
    if (rank % 2 == 0) {
      requests.push_back(mesh.recv(left, s, *in_memory, 0, in.size()));
      requests.push_back(mesh.send(right, s, *out_memory, 0, out.size()));
    } else {
      requests.push_back(mesh.send(right, s, *out_memory, 0, out.size()));
      requests.push_back(mesh.recv(left, s, *in_memory, 0, in.size()));
    }
    mesh.wait(requests, engine_of(context).deadline());
    EXPECT_EQ(first_mismatch(in, left, rank, s), -1)
        << "rank " << rank << " got wrong bytes from " << left << " at size " << sizes[s];
    EXPECT_EQ(requests[rank % 2 == 0 ? 0 : 1]->source(), left);
  }
}

class SendRecvProcesses : public ::testing::TestWithParam<int> {};

TEST_P(SendRecvProcesses, RingOfEverySize) {
  int ranks = GetParam();
  // Past 8 ranks the 64 MiB case only repeats what smaller rings show, at 2 GiB of memory.
  std::vector<size_t> sizes = kSizes;
  if (ranks > 8) sizes.pop_back();
  expect_all_ok(run_context_processes(ranks, [&](Context& c) { ring_exchange(c, sizes); }));
}

INSTANTIATE_TEST_SUITE_P(Ranks, SendRecvProcesses, ::testing::Values(2, 3, 4, 5, 8, 16));

TEST(SendRecv, SixteenProcessesAllToAll) {
  // Every rank exchanges with every other rank at once: 240 connections, mixed protocols.
  expect_all_ok(run_context_processes(16, [](Context& context) {
    int rank = context.rank();
    auto& mesh = engine_of(context).mesh();
    std::vector<std::vector<uint8_t>> out(16), in(16);
    std::vector<std::unique_ptr<transport::Memory>> memories;
    std::vector<transport::RequestPtr> requests;
    for (int peer = 0; peer < 16; ++peer) {
      if (peer == rank) continue;
      size_t bytes = peer % 2 ? 100000 : 1000;
      size_t back = rank % 2 ? 100000 : 1000;
      out[peer] = make_pattern(rank, peer, bytes, 7);
      in[peer].assign(back, 0);
      memories.push_back(mesh.register_memory(out[peer].data(), out[peer].size()));
      requests.push_back(mesh.send(peer, 7, *memories.back(), 0, bytes));
      memories.push_back(mesh.register_memory(in[peer].data(), in[peer].size()));
      requests.push_back(mesh.recv(peer, 7, *memories.back(), 0, back));
    }
    mesh.wait(requests, engine_of(context).deadline());
    for (int peer = 0; peer < 16; ++peer) {
      if (peer == rank) continue;
      EXPECT_EQ(first_mismatch(in[peer], peer, rank, 7), -1) << "from " << peer;
    }
  }));
}

TEST(SendRecv, ThreadsAsRanksShareOneDevice) {
  run_context_threads(4, [](Context& context) { ring_exchange(context, {0, 1, 4096, 1 << 20}); });
}

TEST(SendRecv, ContextConveniencePointToPoint) {
  expect_all_ok(run_context_processes(2, [](Context& context) {
    std::vector<uint8_t> data = make_pattern(0, 1, 300000, 3);
    if (context.rank() == 0) {
      context.send(1, data.data(), data.size(), 3);
    } else {
      std::vector<uint8_t> in(data.size());
      context.recv(0, in.data(), in.size(), 3);
      EXPECT_EQ(in, data);
    }
  }));
}

TEST(SendRecv, SplitFormsSubContexts) {
  expect_all_ok(run_context_processes(6, [](Context& context) {
    // Odd and even ranks form two contexts; keys reverse the order inside each.
    auto sub = context.split(context.rank() % 2, -context.rank());
    ASSERT_TRUE(sub);
    EXPECT_EQ(sub->size(), 3);
    EXPECT_EQ(sub->rank(), 2 - context.rank() / 2);
    int value = context.rank();
    int right = (sub->rank() + 1) % 3;
    int left = (sub->rank() + 2) % 3;
    int got = -1;
    auto& mesh = engine_of(*sub).mesh();
    auto out = mesh.register_memory(&value, sizeof(value));
    auto in = mesh.register_memory(&got, sizeof(got));
    mesh.wait({mesh.send(right, 1, *out, 0, 4), mesh.recv(left, 1, *in, 0, 4)},
              engine_of(*sub).deadline());
    // The left neighbour in the sub-context has new rank sub->rank()-1: old rank differs by 2.
    int expected_old = context.rank() % 2 + 2 * (2 - left);
    EXPECT_EQ(got, expected_old);
    auto none = context.split(-1, 0);
    EXPECT_FALSE(none);
  }));
}

}  // namespace
}  // namespace gloo_lite::test

namespace gloo_lite::test {
namespace {

TEST(SendRecv, Ipv6Loopback) {
  // The same exchange over [::1]: addresses, handshake and matching are family-agnostic.
  tcp::DeviceOptions options;
  options.hostname = "::1";
  auto device = tcp::create_device(options);
  auto store = make_hash_store();
  run_threads(3, [&](int rank) {
    auto context = Context::create(store, rank, 3, device);
    EXPECT_NE(engine_of(*context).mesh().address().find("[::1]"), std::string::npos)
        << engine_of(*context).mesh().address();
    ring_exchange(*context, {0, 100, 1 << 20});
  });
}

}  // namespace
}  // namespace gloo_lite::test
