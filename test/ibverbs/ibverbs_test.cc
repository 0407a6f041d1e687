// The ibverbs transport's own tests. The generic contract (matching, sizes, deadlines, faults)
// is tested by test/transport and test/collectives with GLOO_LITE_TEST_TRANSPORT=ibverbs.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "gloo_lite/base/error.h"
#include "gloo_lite/context_engine.h"
#include "rendezvous/stores.h"
#include "test/transport/harness.h"
#include "transport_ibverbs/ib_device.h"
#include "transport_ibverbs/ib_mesh.h"
#include "transport_ibverbs/ib_select.h"
#include "transport_ibverbs/wire.h"

namespace gloo_lite::test {
namespace {

using Clock = std::chrono::steady_clock;

long elapsed_ms(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

std::shared_ptr<transport::Device> rdma_device_or_skip() {
  try {
    ibverbs::DeviceOptions options = ibverbs::options_from_env();
    options.hostname = "127.0.0.1";
    return ibverbs::create_device(options);
  } catch (const InvalidArgument& e) {
    return nullptr;
  }
}

#define REQUIRE_RDMA(device)           \
  auto device = rdma_device_or_skip(); \
  if (!device) GTEST_SKIP() << "no RDMA device (run in the VM stage)"

ibverbs::GidEntry entry(int index, int type, std::initializer_list<uint8_t> tail, bool mapped) {
  ibverbs::GidEntry e;
  e.index = index;
  e.type = type;
  if (mapped) {
    e.raw[10] = e.raw[11] = 0xff;
  } else {
    e.raw[0] = 0xfe;
    e.raw[1] = 0x80;
  }
  int i = 12;
  for (uint8_t b : tail) e.raw[i++] = b;
  return e;
}

// The call fingerprint travels at bytes 32..39 of every header, least significant byte first
// (docs/transport-ibverbs.md); the fields before it stay where they were.
TEST(Wire, HeaderCarriesTheCallFingerprint) {
  ibverbs::wire::Header header{ibverbs::wire::Type::kReadyToSend,
                               7,
                               0x1112131415161718ull,
                               4096,
                               0x21,
                               0x3132333435363738ull};
  uint8_t bytes[ibverbs::wire::kHeaderBytes];
  ibverbs::wire::encode(header, bytes);
  EXPECT_EQ(bytes[0], 2);
  EXPECT_EQ(bytes[4], 7);
  EXPECT_EQ(bytes[8], 0x18);
  EXPECT_EQ(bytes[24], 0x21);
  EXPECT_EQ(bytes[32], 0x38);
  EXPECT_EQ(bytes[39], 0x31);
  ibverbs::wire::Header back;
  ASSERT_TRUE(ibverbs::wire::decode(bytes, &back));
  EXPECT_EQ(back.type, header.type);
  EXPECT_EQ(back.credits, header.credits);
  EXPECT_EQ(back.a, header.a);
  EXPECT_EQ(back.b, header.b);
  EXPECT_EQ(back.c, header.c);
  EXPECT_EQ(back.fingerprint, header.fingerprint);
}

TEST(GidChoice, PrefersRoceV2WithAnIpv4MappedAddress) {
  std::vector<ibverbs::GidEntry> table = {
      entry(0, 1, {0, 0, 0, 1}, false),  // RoCE v1, link-local (fails on rxe over lo/dummy)
      entry(1, 2, {0, 0, 0, 1}, false),  // RoCE v2, link-local
      entry(2, 1, {10, 0, 0, 1}, true),  // RoCE v1, ::ffff:10.0.0.1
      entry(3, 2, {10, 0, 0, 1}, true),  // RoCE v2, ::ffff:10.0.0.1
  };
  EXPECT_EQ(ibverbs::choose_gid(table), 3);
  table.pop_back();
  EXPECT_EQ(ibverbs::choose_gid(table), 2);
  EXPECT_EQ(ibverbs::choose_gid({}), -1);
  EXPECT_EQ(ibverbs::gid_to_string(table[2].raw), "::ffff:10.0.0.1");
}

TEST(GidChoice, DeviceSpecNamesDeviceAndPort) {
  EXPECT_EQ(ibverbs::parse_device_spec("mlx5_0:2").name, "mlx5_0");
  EXPECT_EQ(ibverbs::parse_device_spec("mlx5_0:2").port, 2);
  EXPECT_EQ(ibverbs::parse_device_spec("rxe0").port, 0);
  EXPECT_THROW(ibverbs::parse_device_spec("rxe0:x"), InvalidArgument);
}

TEST(Device, ChoosesAnIpv4MappedGidAndThePortMtu) {
  REQUIRE_RDMA(device);
  ibverbs::DeviceInfo info = ibverbs::device_info(*device);
  std::cout << "device " << info.device << ":" << info.port << " gid[" << info.gid_index
            << "] = " << info.gid << " (type " << info.gid_type << "), active MTU "
            << info.active_mtu << "\n";
  if (info.ethernet) {
    EXPECT_EQ(info.gid.rfind("::ffff:", 0), 0u) << info.gid;
  }
  EXPECT_GE(info.active_mtu, 256);
  EXPECT_LE(info.active_mtu, 4096);
}

TEST(MrCache, OverlappingRegionsHitAndTheLastReleaseInvalidates) {
  REQUIRE_RDMA(device);
  auto mesh = device->create_mesh(0, 1, {});
  std::vector<uint8_t> buffer(1 << 20);
  auto whole = mesh->register_memory(buffer.data(), buffer.size());
  auto part = mesh->register_memory(buffer.data() + 4096, 8192);
  EXPECT_EQ(ibverbs::mr_cache_stats(*device).misses, 0u) << "registration is lazy";
  ibv_mr* first = static_cast<ibverbs::IbMemory&>(*whole).mr();
  ibv_mr* second = static_cast<ibverbs::IbMemory&>(*part).mr();
  EXPECT_EQ(first, second);
  auto stats = ibverbs::mr_cache_stats(*device);
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.hits, 1u);
  EXPECT_EQ(stats.pinned_bytes, buffer.size());
  whole.reset();
  EXPECT_EQ(ibverbs::mr_cache_stats(*device).entries, 1u) << "still used by the part";
  part.reset();
  stats = ibverbs::mr_cache_stats(*device);
  EXPECT_EQ(stats.entries, 0u);
  EXPECT_EQ(stats.invalidations, 1u);
  EXPECT_EQ(stats.pinned_bytes, 0u);
}

TEST(MrCache, ManyRendezvousMessagesFromOneBufferRegisterOnce) {
  REQUIRE_RDMA(device);
  auto store = make_hash_store();
  run_threads(2, [&](int rank) {
    auto context = Context::create(store, rank, 2, device);
    auto& mesh = engine_of(*context).mesh();
    std::vector<uint8_t> data = make_pattern(0, 1, 16 * 65536, 7);
    std::vector<uint8_t> in(data.size());
    auto memory = mesh.register_memory(rank == 0 ? data.data() : in.data(), data.size());
    std::vector<transport::RequestPtr> requests;
    for (int i = 0; i < 16; ++i) {
      if (rank == 0)
        requests.push_back(mesh.send(1, 5, *memory, i * 65536, 65536));
      else
        requests.push_back(mesh.recv(0, 5, *memory, i * 65536, 65536));
    }
    mesh.wait(requests, engine_of(*context).deadline());
    if (rank == 1) {
      EXPECT_EQ(in, data);
    }
  });
  auto stats = ibverbs::mr_cache_stats(*device);
  EXPECT_EQ(stats.misses, 2u) << "one registration per buffer, not per message";
  EXPECT_EQ(stats.entries, 0u) << "invalidated when the regions were released";
}

TEST(Credits, SlowReceiverHoldsTheSenderBackAndLosesNothing) {
  if (!rdma_device_or_skip()) GTEST_SKIP() << "no RDMA device (run in the VM stage)";
  ContextOptions options;
  options.mesh.unexpected_bytes = 64 * 1024;  // with 32 credits of 8 KiB: far below 200 x 4 KiB
  expect_all_ok(run_context_processes(
      2,
      [](Context& context) {
        constexpr int kMessages = 200;
        constexpr size_t kBytes = 4096;
        auto& mesh = engine_of(context).mesh();
        std::vector<uint8_t> buffer(kMessages * kBytes);
        if (context.rank() == 0) {
          for (int i = 0; i < kMessages; ++i) {
            auto piece = make_pattern(0, 1, kBytes, static_cast<uint64_t>(i));
            std::memcpy(&buffer[i * kBytes], piece.data(), kBytes);
          }
        }
        auto memory = mesh.register_memory(buffer.data(), buffer.size());
        std::vector<transport::RequestPtr> requests;
        auto start = Clock::now();
        if (context.rank() == 0) {
          for (int i = 0; i < kMessages; ++i)
            requests.push_back(mesh.send(1, 9, *memory, i * kBytes, kBytes));
          mesh.wait(requests, engine_of(context).deadline());
          EXPECT_GE(elapsed_ms(start), 700) << "the sender was not held back by the slow receiver";
        } else {
          sleep(1);
          for (int i = 0; i < kMessages; ++i)
            requests.push_back(mesh.recv(0, 9, *memory, i * kBytes, kBytes));
          mesh.wait(requests, engine_of(context).deadline());
          for (int i = 0; i < kMessages; ++i) {
            auto piece = make_pattern(0, 1, kBytes, static_cast<uint64_t>(i));
            ASSERT_EQ(std::memcmp(&buffer[i * kBytes], piece.data(), kBytes), 0) << "message " << i;
          }
        }
      },
      std::chrono::seconds(120), options));
}

TEST(Faults, PeerKilledMidRdmaWriteFailsSurvivorsWithinTwoSeconds) {
  if (!rdma_device_or_skip()) GTEST_SKIP() << "no RDMA device (run in the VM stage)";
  constexpr long kKillAfterMs = 300;
  auto results = run_context_processes(3, [](Context& context) {
    constexpr size_t kBytes = 64 << 20;  // seconds of RDMA writing on Soft-RoCE
    std::vector<uint8_t> buffer(kBytes, 1);
    auto& mesh = engine_of(context).mesh();
    auto memory = mesh.register_memory(buffer.data(), buffer.size());
    auto start = Clock::now();
    if (context.rank() == 0) {
      auto request = mesh.send(1, 3, *memory, 0, kBytes);
      usleep(kKillAfterMs * 1000);
      raise(SIGKILL);
    }
    try {
      if (context.rank() == 1) {
        mesh.wait({mesh.recv(0, 3, *memory, 0, kBytes)}, Deadline::after(std::chrono::seconds(30)));
      } else {
        mesh.wait({mesh.recv(1, 3, *memory, 0, 4)}, Deadline::after(std::chrono::seconds(30)));
      }
      ADD_FAILURE() << "completed although rank 0 died";
    } catch (const ConnectionError& e) {
      EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
    }
    EXPECT_LT(elapsed_ms(start), kKillAfterMs + 2000)
        << "rank " << context.rank() << " failed too slowly";
  });
  for (const auto& result : results) {
    if (result.rank == 0) {
      EXPECT_TRUE(result.signaled && result.signal == SIGKILL) << result.describe();
    } else {
      EXPECT_TRUE(result.ok()) << result.describe();
    }
  }
}

}  // namespace
}  // namespace gloo_lite::test
