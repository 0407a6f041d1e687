// The tuner's per-transport constants (gloo_lite/algorithms/registry.h: CostModel::over,
// pairs_transport): message algorithms whose pairs all use the shm transport are priced with
// its point-to-point constants, every other call with the network's, and the shm collectives
// keep the segment's constants either way. Checked against the documented formulas for given
// constants, not against timings (docs/algorithms.md, "Per-transport constants").
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "gloo_lite/algorithms/registry.h"

namespace gloo_lite {
namespace {

// A mesh that only says which transport serves each peer; anything else is a test bug.
class TransportsOnly : public transport::Mesh {
 public:
  TransportsOnly(int rank, std::vector<std::string> transports)
      : rank_(rank), transports_(std::move(transports)) {}
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(transports_.size()); }
  std::string address() const override { throw std::logic_error("address"); }
  void connect(const std::vector<std::string>&, uint64_t, const Deadline&) override {
    throw std::logic_error("connect");
  }
  std::unique_ptr<transport::Memory> register_memory(void*, size_t,
                                                     transport::MemoryKind) override {
    throw std::logic_error("register_memory");
  }
  transport::RequestPtr send(int, uint64_t, const transport::Memory&, size_t, size_t,
                             uint64_t) override {
    throw std::logic_error("send");
  }
  transport::RequestPtr recv(const std::vector<int>&, uint64_t, transport::Memory&, size_t, size_t,
                             uint64_t) override {
    throw std::logic_error("recv");
  }
  using Mesh::recv;
  using Mesh::send;
  bool wait_until(const std::vector<transport::RequestPtr>&, const Deadline&,
                  const Deadline&) override {
    throw std::logic_error("wait_until");
  }
  void cancel(const transport::RequestPtr&) override { throw std::logic_error("cancel"); }
  void abort(const std::string&) override { throw std::logic_error("abort"); }
  std::string describe_peer(int peer) const override { return "rank " + std::to_string(peer); }
  std::string transport_of(int peer) const override {
    return peer == rank_ ? "" : transports_.at(peer);
  }

 private:
  int rank_;
  std::vector<std::string> transports_;
};

// Network 30 us, 1.5 GB/s, 35 us per message, wait 10 us; segment 1 us, 6 GB/s; shm transport
// 2 us, 8 GB/s, 4 us per message; reductions 20 GB/s.
algo::CostModel model() {
  algo::CostModel m{30e-6, 1 / 1.5e9, 1 / 20e9, 35e-6, 1e-6, 1 / 6e9, 10e-6};
  m.shm_p2p_alpha = 2e-6;
  m.shm_p2p_beta = 1 / 8e9;
  m.shm_p2p_overhead = 4e-6;
  return m;
}

algo::Call allreduce(int size, size_t bytes, transport::Mesh* mesh) {
  algo::Call call;
  call.collective = algo::Collective::kAllreduce;
  call.size = size;
  call.type = DataType::kFloat32;
  call.element = 4;
  call.count = bytes / 4;
  call.mesh = mesh;
  return call;
}

const algo::Algorithm& named(const char* name) {
  const algo::Algorithm* algorithm = algo::find_algorithm(algo::Collective::kAllreduce, name);
  if (algorithm == nullptr) throw std::logic_error(name);
  return *algorithm;
}

TEST(TransportModel, OverShmTakesItsConstantsAndKeepsTheRest) {
  const algo::CostModel m = model();
  const algo::CostModel shm = m.over("shm");
  EXPECT_DOUBLE_EQ(shm.alpha, 2e-6);
  EXPECT_DOUBLE_EQ(shm.beta, 1 / 8e9);
  EXPECT_DOUBLE_EQ(shm.overhead, 4e-6);
  EXPECT_DOUBLE_EQ(shm.wait, 10e-6 * 2 / 30);  // the same share of a step's latency
  EXPECT_DOUBLE_EQ(shm.gamma, m.gamma);
  EXPECT_DOUBLE_EQ(shm.shm_alpha, m.shm_alpha);
  EXPECT_DOUBLE_EQ(shm.shm_beta, m.shm_beta);
  for (const char* other : {"tcp", "ibverbs", ""}) {
    const algo::CostModel same = m.over(other);
    EXPECT_DOUBLE_EQ(same.alpha, m.alpha) << other;
    EXPECT_DOUBLE_EQ(same.beta, m.beta) << other;
    EXPECT_DOUBLE_EQ(same.overhead, m.overhead) << other;
    EXPECT_DOUBLE_EQ(same.wait, m.wait) << other;
  }
  // A model written out without them (as other tests do) keeps the network's over shm too.
  const algo::CostModel bare{30e-6, 1 / 1.5e9, 1 / 20e9, 35e-6};
  EXPECT_DOUBLE_EQ(bare.over("shm").alpha, 30e-6);
  EXPECT_DOUBLE_EQ(bare.over("shm").beta, 1 / 1.5e9);
  EXPECT_DOUBLE_EQ(bare.over("shm").overhead, 35e-6);
}

TEST(TransportModel, PairsTransportIsShmOnlyWhenEveryPeerUsesIt) {
  TransportsOnly all_shm(1, {"shm", "", "shm", "shm"});
  TransportsOnly one_tcp(1, {"shm", "", "tcp", "shm"});
  TransportsOnly all_tcp(0, {"", "tcp", "tcp"});
  EXPECT_EQ(algo::pairs_transport(allreduce(4, 8, &all_shm)), "shm");
  EXPECT_EQ(algo::pairs_transport(allreduce(4, 8, &one_tcp)), "");
  EXPECT_EQ(algo::pairs_transport(allreduce(3, 8, &all_tcp)), "tcp");
  EXPECT_EQ(algo::pairs_transport(allreduce(4, 8, nullptr)), "");
}

// recursive_doubling at P = 2 is one exchange: alpha + n beta + n gamma on the path, one
// message on the host. The estimate takes the constants of the pairs' transport.
TEST(TransportModel, EstimateUsesThePairsTransport) {
  const algo::CostModel m = model();
  TransportsOnly shm(0, {"", "shm"});
  TransportsOnly tcp(0, {"", "tcp"});
  const double n = 32 * 1024;
  const algo::Algorithm& doubling = named("recursive_doubling");
  EXPECT_DOUBLE_EQ(algo::estimate(doubling, allreduce(2, n, &shm), m), 2e-6 + n / 8e9 + n / 20e9);
  EXPECT_DOUBLE_EQ(algo::estimate(doubling, allreduce(2, n, &tcp), m),
                   30e-6 + n / 1.5e9 + n / 20e9);
  EXPECT_DOUBLE_EQ(algo::estimate(doubling, allreduce(2, n, nullptr), m),
                   30e-6 + n / 1.5e9 + n / 20e9);
  // The segment's cost does not depend on the transport of the pairs: 32 KiB is two chunked
  // steps, 2n copied, n reduced.
  const algo::Algorithm& segment = named("shm");
  const double shm_cost = 2 * 1e-6 + 2 * n / 6e9 + n / 20e9;
  EXPECT_DOUBLE_EQ(algo::estimate(segment, allreduce(2, n, &shm), m), shm_cost);
  EXPECT_DOUBLE_EQ(algo::estimate(segment, allreduce(2, n, &tcp), m), shm_cost);
  // The host term takes the shm transport's overhead: 4 ranks per core, one message (and its
  // 8 bytes, copied and reduced: CrowdedShmHostCountsTheCopies).
  algo::Call crowded = allreduce(2, 8, &shm);
  crowded.ranks_per_core = 4;
  EXPECT_DOUBLE_EQ(algo::estimate(doubling, crowded, m), 4 * (4e-6 + 8 / 8e9 + 8 / 20e9));
}

// Where ranks outnumber cores over the shm transport, the host term counts each rank's copies
// and reductions (the cost with every latency zero) besides its messages; over TCP it does
// not. P = 4 recursive doubling: 2 exchanges of n bytes, each reduced; 2 ranks per core.
TEST(TransportModel, CrowdedShmHostCountsTheCopies) {
  const algo::CostModel m = model();
  TransportsOnly shm(0, {"", "shm", "shm", "shm"});
  TransportsOnly tcp(0, {"", "tcp", "tcp", "tcp"});
  const double n = 1 << 20;
  algo::Call over_shm = allreduce(4, n, &shm);
  algo::Call over_tcp = allreduce(4, n, &tcp);
  over_shm.ranks_per_core = over_tcp.ranks_per_core = 2;
  const algo::Algorithm& doubling = named("recursive_doubling");
  const double bytes = 2 * (n / 8e9 + n / 20e9);
  EXPECT_DOUBLE_EQ(algo::estimate(doubling, over_shm, m), 2 * (2 * 4e-6 + bytes));
  EXPECT_DOUBLE_EQ(algo::estimate(doubling, over_tcp, m),
                   std::max(2 * (30e-6 + n / 1.5e9 + n / 20e9), 2 * 2 * 35e-6));
  // The segment: 1 MiB is 4 chunks, 8 flag steps (crowded: 2.5 alpha_shm x ranks per core
  // each, shm.cc), 2n copied, n reduced; its host term is its copies and reductions, twice.
  const algo::Algorithm& segment = named("shm");
  const double shm_bytes = 2 * n / 6e9 + n / 20e9;
  EXPECT_DOUBLE_EQ(algo::estimate(segment, over_shm, m),
                   std::max(8 * 2.5 * 1e-6 * 2 + shm_bytes, 2 * shm_bytes));
  // One rank per core: no change from the messages-only host term.
  over_shm.ranks_per_core = 1;
  EXPECT_DOUBLE_EQ(algo::estimate(doubling, over_shm, m), 2 * (2e-6 + n / 8e9 + n / 20e9));
}

// Over the shm transport a step whose messages exceed the eager limit costs the rendezvous
// more (bytes on the critical path per step, from the algorithm's own formula). P = 2:
// recursive doubling sends n in one step, ring n/2 in each of two.
TEST(TransportModel, RendezvousAboveTheEagerLimit) {
  algo::CostModel m = model();
  m.shm_p2p_rendezvous = 8e-6;
  m.shm_p2p_eager_bytes = 64 * 1024;
  TransportsOnly shm(0, {"", "shm"});
  TransportsOnly tcp(0, {"", "tcp"});
  const algo::Algorithm& doubling = named("recursive_doubling");
  const algo::Algorithm& ring = named("ring");
  for (double n : {64.0 * 1024, 128.0 * 1024}) {
    const double step = n > 64 * 1024 ? 10e-6 : 2e-6;  // alpha, plus the rendezvous above it
    EXPECT_DOUBLE_EQ(algo::estimate(doubling, allreduce(2, n, &shm), m), step + n / 8e9 + n / 20e9)
        << n;
    // Ring's steps carry n/2: both eager.
    EXPECT_DOUBLE_EQ(algo::estimate(ring, allreduce(2, n, &shm), m),
                     2 * 2e-6 + n / 8e9 + n / 2 / 20e9)
        << n;
  }
  // Not over TCP (no rendezvous term for the network).
  const double n = 1 << 20;
  EXPECT_DOUBLE_EQ(algo::estimate(doubling, allreduce(2, n, &tcp), m),
                   30e-6 + n / 1.5e9 + n / 20e9);
}

// What auto picks follows: at P = 2, 32 KiB, the segment (14.6 us) beats every message
// algorithm over TCP (recursive doubling 53.5 us) but loses to one over the shm transport
// (7.7 us); 8 B stays with the segment (1 us against 4 us of host time per message).
TEST(TransportModel, AutoPicksByThePairsTransport) {
  const algo::CostModel m = model();
  TransportsOnly shm(0, {"", "shm"});
  TransportsOnly tcp(0, {"", "tcp"});
  auto first = [&](const algo::Call& call) {
    return std::string(algo::rank_algorithms(call, m).front().algorithm->name);
  };
  EXPECT_EQ(first(allreduce(2, 32 * 1024, &tcp)), "shm");
  EXPECT_NE(first(allreduce(2, 32 * 1024, &shm)), "shm");
  EXPECT_EQ(first(allreduce(2, 8, &shm)), "shm");
  EXPECT_EQ(first(allreduce(2, 8, &tcp)), "shm");
}

}  // namespace
}  // namespace gloo_lite
