// The GPUDirect hook (cuda/gpudirect.h) where no hardware has it: the transport query
// (Mesh::can_register) and the Communicator's decision. GPUDirect itself moves data only on
// ibverbs with nvidia_peermem and a GPU; none of that is here, so these tests check that the
// path is not taken without it and that staging still runs; the path's code is compiled into
// every build of cuda/ (docs/cuda.md, "GPUDirect").
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cuda/collectives.h"
#include "cuda/gpudirect.h"
#include "cuda/host_stand_in.h"
#include "gloo_lite/context_engine.h"
#include "gloo_lite/transport/mixed_device.h"
#include "rendezvous/stores.h"
#include "test/collectives/process_sync.h"
#include "test/transport/harness.h"
#include "transport_tcp/tcp_device.h"

namespace gloo_lite::test {
namespace {

using namespace std::chrono_literals;
using transport::MemoryKind;

// TCP (the harness's transport) takes host memory only: the Communicator stages, on every rank,
// with the knob on (its default) and off; and a broadcast and a send/recv still arrive.
TEST(GpuDirect, NotTakenOverTcpNorOnTheHostStandIn) {
  constexpr int kRanks = 3;
  ContextOptions options;
  options.timeout = 30s;
  expect_all_ok(run_context_processes(
      kRanks,
      [&](Context& context) {
        const int rank = context.rank();
        const int next = (rank + 1) % kRanks;
        ASSERT_EQ(engine_of(context).mesh().transport_of(next), "tcp");
        EXPECT_TRUE(engine_of(context).mesh().can_register(MemoryKind::kHost));
        EXPECT_FALSE(engine_of(context).mesh().can_register(MemoryKind::kCuda));
        auto layer = cuda::host_stand_in_layer({});
        EXPECT_FALSE(cuda::gpudirect_possible(context, *layer));
        for (const char* knob : {"1", "0"}) {
          setenv("GLOO_LITE_CUDA_GPUDIRECT", knob, 1);
          cuda::PipelineOptions pipeline;
          pipeline.slot_bytes = 256;
          cuda::Communicator communicator(context, layer, pipeline);
          EXPECT_FALSE(communicator.gpudirect()) << "GLOO_LITE_CUDA_GPUDIRECT=" << knob;
          cuda::Stream stream = layer->create_stream();
          constexpr size_t kCount = 500;
          auto* data = static_cast<int32_t*>(layer->allocate_device(kCount * sizeof(int32_t)));
          auto* got = static_cast<int32_t*>(layer->allocate_device(kCount * sizeof(int32_t)));
          for (size_t i = 0; i < kCount; ++i) data[i] = static_cast<int32_t>(rank * 10000 + i);
          cuda::broadcast(communicator, data, kCount, DataType::kInt32, 2, stream);
          for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(data[i], static_cast<int32_t>(20000 + i));
          for (size_t i = 0; i < kCount; ++i) data[i] = static_cast<int32_t>(rank * 10000 + i);
          const int previous = (rank + kRanks - 1) % kRanks;
          const size_t bytes = kCount * sizeof(int32_t);
          Work sent = communicator.send(data, bytes, next, 9, stream);
          cuda::recv(communicator, got, bytes, previous, 9, stream);
          sent.wait();
          for (size_t i = 0; i < kCount; ++i) {
            ASSERT_EQ(got[i], static_cast<int32_t>(previous * 10000 + i)) << "element " << i;
          }
          layer->free_device(got);
          layer->free_device(data);
          layer->destroy_stream(stream);
        }
        unsetenv("GLOO_LITE_CUDA_GPUDIRECT");
        store_barrier(context, "done");
      },
      60s, options));
}

// A test-only mesh that claims to register CUDA memory (the rule of the mixed mesh needs a
// sub-mesh that can; no such transport runs here). It forwards everything else to TCP. Test
// code only: the product's answer comes from the transports themselves.
class ClaimsDeviceMemory : public transport::Mesh {
 public:
  explicit ClaimsDeviceMemory(std::unique_ptr<transport::Mesh> inner) : inner_(std::move(inner)) {}
  bool can_register(MemoryKind) const override { return true; }
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string address() const override { return inner_->address(); }
  void connect(const std::vector<std::string>& addresses, uint64_t id,
               const Deadline& deadline) override {
    inner_->connect(addresses, id, deadline);
  }
  std::unique_ptr<transport::Memory> register_memory(void* data, size_t bytes,
                                                     MemoryKind) override {
    return inner_->register_memory(data, bytes, MemoryKind::kHost);
  }
  transport::RequestPtr send(int peer, uint64_t tag, const transport::Memory& memory, size_t offset,
                             size_t bytes, uint64_t fingerprint) override {
    return inner_->send(peer, tag, memory, offset, bytes, fingerprint);
  }
  transport::RequestPtr recv(const std::vector<int>& peers, uint64_t tag, transport::Memory& memory,
                             size_t offset, size_t bytes, uint64_t fingerprint) override {
    return inner_->recv(peers, tag, memory, offset, bytes, fingerprint);
  }
  bool wait_until(const std::vector<transport::RequestPtr>& requests, const Deadline& deadline,
                  const Deadline& until) override {
    return inner_->wait_until(requests, deadline, until);
  }
  void cancel(const transport::RequestPtr& request) override { inner_->cancel(request); }
  void abort(const std::string& reason) override { inner_->abort(reason); }
  std::string describe_peer(int peer) const override { return inner_->describe_peer(peer); }
  std::string transport_of(int peer) const override { return inner_->transport_of(peer); }

 private:
  std::unique_ptr<transport::Mesh> inner_;
};

// A TCP device on `host` whose meshes claim device memory or not; pairs on the same host only.
class HostDevice : public transport::Device {
 public:
  HostDevice(const std::string& host, bool claims) : host_(host), claims_(claims) {
    tcp::DeviceOptions options;
    options.hostname = host;
    tcp_ = tcp::create_device(options);
  }
  std::string name() const override { return "tcp on " + host_; }
  std::unique_ptr<transport::Mesh> create_mesh(int rank, int size,
                                               const transport::MeshOptions& options) override {
    auto mesh = tcp_->create_mesh(rank, size, options);
    if (!claims_) return mesh;
    return std::make_unique<ClaimsDeviceMemory>(std::move(mesh));
  }
  bool can_connect(const std::string& mine, const std::string& theirs) const override {
    return mine.substr(0, mine.rfind(':')) == theirs.substr(0, theirs.rfind(':'));
  }

 private:
  std::string host_;
  bool claims_;
  std::shared_ptr<transport::Device> tcp_;
};

// Three ranks; even ranks on 127.0.0.1, odd on 127.0.0.2. "near" (same host) claims device
// memory; "far" (plain TCP, every pair) claims it when `far_claims`. Rank 1 reaches everyone
// by far; ranks 0 and 2 use near between them and far to rank 1.
void mixed_can_register(bool far_claims, int* verdicts) {
  TempDir directory;
  auto results = run_processes(
      3,
      [&](int rank) {
        auto device = transport::create_mixed_device(
            {{"near", std::make_shared<HostDevice>(rank % 2 ? "127.0.0.2" : "127.0.0.1", true),
              true},
             {"far", std::make_shared<HostDevice>("127.0.0.1", far_claims), true}},
            /*forced=*/false);
        ContextOptions options;
        options.timeout = 20s;
        auto context = Context::create(make_file_store(directory.path()), rank, 3, device, options);
        verdicts[rank] = engine_of(*context).mesh().can_register(MemoryKind::kCuda) ? 1 : 0;
        EXPECT_TRUE(engine_of(*context).mesh().can_register(MemoryKind::kHost));
      },
      60s);
  expect_all_ok(results);
}

TEST(GpuDirect, MixedMeshTakesDeviceMemoryOnlyIfEverySubMeshDoes) {
  struct Verdicts {
    int v[3];
  };
  SharedMapping<Verdicts> some;
  mixed_can_register(false, some->v);
  EXPECT_EQ(some->v[0], 0) << "rank 0 uses far (plain TCP) to rank 1";
  EXPECT_EQ(some->v[1], 0) << "rank 1 uses only far (plain TCP)";
  EXPECT_EQ(some->v[2], 0) << "rank 2 uses far (plain TCP) to rank 1";
  SharedMapping<Verdicts> all;
  mixed_can_register(true, all->v);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(all->v[r], 1) << "rank " << r;
}

}  // namespace
}  // namespace gloo_lite::test
