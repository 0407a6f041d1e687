// The shared-memory transport's own cases, beyond the transport suites it also passes
// (test/transport under GLOO_LITE_TEST_TRANSPORT=shm): segments that are stale, foreign or of
// another context; peers that die mid-message, are killed or stopped; both large-message paths
// (CMA and the pipelined fallback); messages larger than the ring; floods of unexpected
// messages; peers this mesh does not serve; and nothing ever named in /dev/shm.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "gloo_lite/base/error.h"
#include "gloo_lite/collectives.h"
#include "gloo_lite/context_engine.h"
#include "rendezvous/stores.h"
#include "test/support/test_support.h"
#include "test/transport/harness.h"
#include "transport_shm/address.h"
#include "transport_shm/segment.h"
#include "transport_shm/shm_device.h"

namespace gloo_lite::test {
namespace {

using Clock = std::chrono::steady_clock;

long elapsed_ms(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

// Forked ranks on shm, with `env` set in each child before its context exists.
std::vector<ProcessResult> run_shm(int ranks, const ContextBody& body,
                                   const std::vector<std::pair<std::string, std::string>>& env = {},
                                   std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  TempDir directory;
  return run_processes(
      ranks,
      [&](int rank) {
        for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
        auto store = make_file_store(directory.path());
        auto context = Context::create(store, rank, ranks, shm::create_device());
        body(*context);
      },
      timeout);
}

std::string contains_msg(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos ? "" : "'" + text + "' lacks '" + part + "'";
}

// --- the handshake --------------------------------------------------------------------------

// Two meshes of one process, connected concurrently (each waits for the other's hello).
struct MeshPair {
  std::shared_ptr<transport::Device> device = shm::create_device();
  std::unique_ptr<transport::Mesh> a = device->create_mesh(0, 2, {});
  std::unique_ptr<transport::Mesh> b;
  explicit MeshPair(int b_size = 2) : b(device->create_mesh(1, b_size, {})) {}
};

// Connects `a` with rank 1's address replaced by `forged`; returns its error.
std::string connect_error(transport::Mesh& a, const std::string& forged) {
  try {
    a.connect({a.address(), forged}, 42, Deadline::after(std::chrono::milliseconds(1500)));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ShmHandshake, GenuinePeersConnectAndExchange) {
  MeshPair meshes;
  std::thread other([&] {
    meshes.b->connect({meshes.a->address(), meshes.b->address()}, 42,
                      Deadline::after(std::chrono::seconds(10)));
  });
  meshes.a->connect({meshes.a->address(), meshes.b->address()}, 42,
                    Deadline::after(std::chrono::seconds(10)));
  other.join();
  int out = 1234, in = 0;
  auto out_memory = meshes.a->register_memory(&out, sizeof(out));
  auto in_memory = meshes.b->register_memory(&in, sizeof(in));
  auto send = meshes.a->send(1, 5, *out_memory, 0, sizeof(out));
  auto recv = meshes.b->recv(0, 5, *in_memory, 0, sizeof(in));
  meshes.b->wait({recv}, Deadline::after(std::chrono::seconds(10)));
  meshes.a->wait({send}, Deadline::after(std::chrono::seconds(10)));
  EXPECT_EQ(in, 1234);
}

TEST(ShmHandshake, SegmentWithAnotherNonceIsRejectedNamingTheRank) {
  MeshPair meshes;
  auto address = shm::Address::parse(meshes.b->address());
  ASSERT_TRUE(address);
  address->nonce ^= 1;  // the same pid and fd, another segment: a reused descriptor
  std::string error = connect_error(*meshes.a, address->encode());
  EXPECT_EQ(contains_msg(error, "rank 1"), "");
  EXPECT_EQ(contains_msg(error, "another segment"), "");
}

TEST(ShmHandshake, StaleAddressOfAnExitedProcessIsRejectedNamingTheRank) {
  MeshPair meshes;
  pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  auto address = shm::Address::parse(meshes.b->address());
  ASSERT_TRUE(address);
  address->pid = child;  // the process that published it is gone
  std::string error = connect_error(*meshes.a, address->encode());
  EXPECT_EQ(contains_msg(error, "rank 1"), "");
  EXPECT_EQ(contains_msg(error, "gone"), "");
}

TEST(ShmHandshake, ForeignDescriptorIsRejected) {
  MeshPair meshes;
  TempDir directory;
  std::string path = directory.path() + "/not_a_segment";
  std::ofstream(path) << std::string(8192, 'x');
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto address = shm::Address::parse(meshes.b->address());
  address->fd = fd;  // a file of the right size that is no segment
  std::string error = connect_error(*meshes.a, address->encode());
  ::close(fd);
  EXPECT_EQ(contains_msg(error, "rank 1"), "");
  EXPECT_EQ(contains_msg(error, "not a gloo_lite segment"), "");
}

TEST(ShmHandshake, SegmentOfAnotherContextOrSizeIsRejected) {
  {
    MeshPair meshes;
    std::string b_error;
    std::thread other([&] {
      try {
        meshes.b->connect({meshes.a->address(), meshes.b->address()}, 7,
                          Deadline::after(std::chrono::milliseconds(1500)));
      } catch (const Error& e) {
        b_error = e.what();
      }
    });
    std::string error = connect_error(*meshes.a, meshes.b->address());
    other.join();
    EXPECT_EQ(contains_msg(error, "rank 1"), "");
    EXPECT_EQ(contains_msg(error, "another context"), "");
    EXPECT_EQ(contains_msg(b_error, "rank 0"), "");
  }
  {
    MeshPair meshes(/*b_size=*/3);
    std::thread other([&] {
      try {
        meshes.b->connect({meshes.a->address(), meshes.b->address(), ""}, 42,
                          Deadline::after(std::chrono::milliseconds(1500)));
      } catch (const Error&) {
      }
    });
    std::string error = connect_error(*meshes.a, meshes.b->address());
    other.join();
    EXPECT_EQ(contains_msg(error, "rank 1 of 3"), "");
  }
}

TEST(ShmHandshake, PeerThatNeverMapsIsNamedAtTheDeadline) {
  MeshPair meshes;  // b never connects, so it never says hello in a's segment
  auto start = Clock::now();
  std::string error = connect_error(*meshes.a, meshes.b->address());
  EXPECT_EQ(contains_msg(error, "rank 1"), "");
  EXPECT_EQ(contains_msg(error, "never"), "");
  EXPECT_LT(elapsed_ms(start), 3000);
}

// Rank 2 maps rank 0, then rejects rank 1's (forged) segment: rank 0, which it had already
// greeted, learns at once that rank 2 gave up and why, instead of at its deadline.
TEST(ShmHandshake, RankWhoseConnectFailsTellsThePeersItGreeted) {
  auto device = shm::create_device();
  std::vector<std::unique_ptr<transport::Mesh>> meshes;
  for (int rank = 0; rank < 3; ++rank) meshes.push_back(device->create_mesh(rank, 3, {}));
  std::vector<std::string> addresses;
  for (auto& mesh : meshes) addresses.push_back(mesh->address());
  auto forged = shm::Address::parse(addresses[1]);
  forged->nonce ^= 1;
  std::string rank2_error;
  std::thread rank2([&] {
    try {
      meshes[2]->connect({addresses[0], forged->encode(), addresses[2]}, 5,
                         Deadline::after(std::chrono::seconds(10)));
    } catch (const Error& e) {
      rank2_error = e.what();
    }
  });
  std::thread rank1([&] {
    try {
      meshes[1]->connect(addresses, 5, Deadline::after(std::chrono::milliseconds(1500)));
    } catch (const Error&) {
    }
  });
  auto start = Clock::now();
  std::string error;
  try {
    meshes[0]->connect(addresses, 5, Deadline::after(std::chrono::seconds(10)));
    int value = 0;
    auto memory = meshes[0]->register_memory(&value, sizeof(value));
    meshes[0]->wait({meshes[0]->recv(2, 1, *memory, 0, sizeof(value))},
                    Deadline::after(std::chrono::seconds(10)));
  } catch (const Error& e) {
    error = e.what();
  }
  rank2.join();
  rank1.join();
  EXPECT_EQ(contains_msg(rank2_error, "rank 1"), "");
  EXPECT_EQ(contains_msg(error, "rank 2"), "");
  EXPECT_EQ(contains_msg(error, "failed to connect"), "");
  EXPECT_LT(elapsed_ms(start), 3000);
}

TEST(ShmDevice, CanConnectIsSymmetricAndNeedsTheSameHostAndNamespace) {
  auto device = shm::create_device();
  auto a = device->create_mesh(0, 2, {});
  auto b = device->create_mesh(1, 2, {});
  EXPECT_TRUE(device->can_connect(a->address(), b->address()));
  EXPECT_TRUE(device->can_connect(b->address(), a->address()));
  auto elsewhere = shm::Address::parse(b->address());
  elsewhere->host = "boot:another-machine";
  EXPECT_FALSE(device->can_connect(a->address(), elsewhere->encode()));
  EXPECT_FALSE(device->can_connect(elsewhere->encode(), a->address()));
  auto other_ns = shm::Address::parse(b->address());
  other_ns->user_ns += 1;
  EXPECT_FALSE(device->can_connect(a->address(), other_ns->encode()));
  auto other_pid_ns = shm::Address::parse(b->address());  // docker --ipc=host, say
  other_pid_ns->pid_ns += 1;
  EXPECT_FALSE(device->can_connect(a->address(), other_pid_ns->encode()));
  EXPECT_FALSE(device->can_connect(other_pid_ns->encode(), a->address()));
  auto other_shm = shm::Address::parse(b->address());
  other_shm->shm_device += 1;
  EXPECT_FALSE(device->can_connect(other_shm->encode(), a->address()));
  EXPECT_FALSE(device->can_connect(a->address(), "127.0.0.1:4000"));
  EXPECT_FALSE(device->can_connect(a->address(), ""));
}

TEST(ShmDevice, EmptyAddressMeansThePeerIsNotServed) {
  auto device = shm::create_device();
  auto m0 = device->create_mesh(0, 3, {});
  auto m1 = device->create_mesh(1, 3, {});
  std::vector<std::string> addresses = {m0->address(), m1->address(), ""};
  std::thread other([&] { m1->connect(addresses, 9, Deadline::after(std::chrono::seconds(10))); });
  m0->connect(addresses, 9, Deadline::after(std::chrono::seconds(10)));
  other.join();
  std::vector<uint8_t> buffer(16, 3), in(16);
  auto out_memory = m0->register_memory(buffer.data(), buffer.size());
  auto in_memory = m1->register_memory(in.data(), in.size());
  // At post time, as on TCP; and the mesh names only the peers it serves.
  EXPECT_THROW(m0->send(2, 1, *out_memory, 0, 16), InvalidArgument);
  EXPECT_THROW(m0->recv(2, 1, *out_memory, 0, 16), InvalidArgument);
  EXPECT_EQ(m0->transport_of(1), "shm");
  EXPECT_EQ(m0->transport_of(2), "");
  EXPECT_THROW(
      m0->wait({m0->send(2, 1, *out_memory, 0, 16)}, Deadline::after(std::chrono::seconds(1))),
      InvalidArgument);
  EXPECT_THROW(
      m0->wait({m0->recv(2, 1, *out_memory, 0, 16)}, Deadline::after(std::chrono::seconds(1))),
      InvalidArgument);
  auto send = m0->send(1, 1, *out_memory, 0, 16);
  auto recv = m1->recv(0, 1, *in_memory, 0, 16);
  m1->wait({recv}, Deadline::after(std::chrono::seconds(10)));
  m0->wait({send}, Deadline::after(std::chrono::seconds(10)));
  EXPECT_EQ(in, buffer);
}

// --- both large-message paths ---------------------------------------------------------------

class Paths : public ::testing::TestWithParam<bool> {
 protected:
  std::vector<std::pair<std::string, std::string>> env() const {
    return {{"GLOO_LITE_SHM_CMA", GetParam() ? "1" : "0"}};
  }
};

// Sizes around the eager bound (64 KiB), the ring (256 KiB) and far beyond, both ways at once;
// the receiver compares against the pattern, an independent reference.
TEST_P(Paths, EverySizeArrivesIntactBothWays) {
  expect_all_ok(run_shm(
      2,
      [](Context& context) {
        auto& mesh = engine_of(context).mesh();
        int peer = 1 - context.rank();
        uint64_t salt = 0;
        for (size_t bytes :
             {size_t{0}, size_t{1}, size_t{7}, size_t{65535}, size_t{65536}, size_t{65537},
              size_t{262144}, size_t{3 * 262144 + 5}, size_t{16} << 20}) {
          ++salt;
          auto out = make_pattern(context.rank(), peer, bytes, salt);
          std::vector<uint8_t> in(bytes + 64, 0xEE);
          auto out_memory = mesh.register_memory(out.data(), out.size());
          auto in_memory = mesh.register_memory(in.data(), in.size());
          mesh.wait({mesh.send(peer, salt, *out_memory, 0, bytes),
                     mesh.recv(peer, salt, *in_memory, 0, bytes)},
                    engine_of(context).deadline());
          std::vector<uint8_t> got(in.begin(), in.begin() + bytes);
          EXPECT_EQ(first_mismatch(got, peer, context.rank(), salt), -1) << bytes << " bytes";
          for (size_t i = bytes; i < in.size(); ++i) {
            ASSERT_EQ(in[i], 0xEE) << "byte " << i << " past a " << bytes << "-byte receive";
          }
        }
      },
      env()));
}

// The path really taken: a CMA receive copies from a sender that is stopped right after it
// posted; the pipelined one needs the sender to push, so it times out until the sender goes on.
TEST_P(Paths, StoppedSenderDeliversOnlyWithCma) {
  const bool cma = GetParam();
  expect_all_ok(run_shm(
      2,
      [cma](Context& context) {
        auto& mesh = engine_of(context).mesh();
        constexpr size_t kBytes = 1 << 20;
        if (context.rank() == 0) {
          int pid = getpid();
          context.send(1, &pid, sizeof(pid), 1);
          auto data = make_pattern(0, 1, kBytes, 9);
          auto memory = mesh.register_memory(data.data(), kBytes);
          auto request = mesh.send(1, 2, *memory, 0, kBytes);
          raise(SIGSTOP);  // rank 1 continues us
          mesh.wait({request}, engine_of(context).deadline());
          return;
        }
        int pid = 0;
        context.recv(0, &pid, sizeof(pid), 1);
        while (!process_is_stopped(pid)) usleep(1000);  // its ready-to-send is in our ring by then
        std::vector<uint8_t> in(kBytes);
        auto memory = mesh.register_memory(in.data(), kBytes);
        auto request = mesh.recv(0, 2, *memory, 0, kBytes);
        bool done = mesh.wait_until({request}, engine_of(context).deadline(),
                                    Deadline::after(std::chrono::milliseconds(700)));
        EXPECT_EQ(done, cma);
        kill(pid, SIGCONT);
        if (!done) mesh.wait({request}, engine_of(context).deadline());
        EXPECT_EQ(first_mismatch(in, 0, 1, 9), -1);
      },
      env()));
}

// Every record rings its reader's doorbell: 20 round trips of 1 MiB take milliseconds each,
// so a wake-up lost to the 100 ms sleep slice (2 s in all) shows.
TEST_P(Paths, LargePingPongIsNotPacedBySleepSlices) {
  expect_all_ok(run_shm(
      2,
      [](Context& context) {
        auto& mesh = engine_of(context).mesh();
        constexpr size_t kBytes = 1 << 20;
        constexpr int kRounds = 20;
        int peer = 1 - context.rank();
        auto data = make_pattern(0, 1, kBytes, 3);
        std::vector<uint8_t> in(kBytes);
        auto out_memory = mesh.register_memory(data.data(), kBytes);
        auto in_memory = mesh.register_memory(in.data(), kBytes);
        mesh.wait({mesh.send(peer, 1, *out_memory, 0, 8), mesh.recv(peer, 1, *in_memory, 0, 8)},
                  engine_of(context).deadline());
        auto start = Clock::now();
        for (int round = 0; round < kRounds; ++round) {
          if (context.rank() == 0) {
            mesh.wait({mesh.send(1, 2, *out_memory, 0, kBytes)}, engine_of(context).deadline());
            mesh.wait({mesh.recv(1, 3, *in_memory, 0, kBytes)}, engine_of(context).deadline());
          } else {
            mesh.wait({mesh.recv(0, 2, *in_memory, 0, kBytes)}, engine_of(context).deadline());
            mesh.wait({mesh.send(0, 3, *out_memory, 0, kBytes)}, engine_of(context).deadline());
          }
        }
        EXPECT_EQ(first_mismatch(in, 0, 1, 3), -1);
        EXPECT_LT(elapsed_ms(start), 1500) << kRounds << " round trips of 1 MiB";
      },
      env()));
}

// A ring of 16 KiB: every message of more than 4 KiB is a rendezvous, pipelined in chunks of
// a quarter of the ring without CMA.
TEST_P(Paths, TinyRingCarriesLargeMessages) {
  auto environment = env();
  environment.emplace_back("GLOO_LITE_SHM_RING_BYTES", "16K");
  expect_all_ok(run_shm(
      3,
      [](Context& context) {
        std::vector<float> data(1 << 18);
        for (size_t i = 0; i < data.size(); ++i) data[i] = float(context.rank() + 1) * (i % 97);
        allreduce(context, data);
        for (size_t i = 0; i < data.size(); ++i) {
          ASSERT_EQ(data[i], 6.0f * (i % 97)) << "element " << i;
        }
      },
      environment));
}

INSTANTIATE_TEST_SUITE_P(CmaAndFallback, Paths, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Cma" : "Fallback"; });

// Three meshes of one process, connected concurrently, all served.
std::vector<std::unique_ptr<transport::Mesh>> connected_meshes(int size) {
  auto device = shm::create_device();
  std::vector<std::unique_ptr<transport::Mesh>> meshes;
  std::vector<std::string> addresses;
  for (int rank = 0; rank < size; ++rank) {
    meshes.push_back(device->create_mesh(rank, size, {}));
    addresses.push_back(meshes.back()->address());
  }
  std::vector<std::thread> threads;
  for (auto& mesh : meshes) {
    threads.emplace_back([&, m = mesh.get()] {
      m->connect(addresses, 11, Deadline::after(std::chrono::seconds(10)));
    });
  }
  for (auto& thread : threads) thread.join();
  return meshes;
}

// A mesh's segment mapped by the test itself, as a corrupt or hostile peer could.
struct ForeignView {
  uint8_t* segment = nullptr;
  size_t bytes = 0;
  explicit ForeignView(const std::string& owner) {
    auto address = shm::Address::parse(owner);
    EXPECT_TRUE(address);
    std::string path = "/proc/self/fd/" + std::to_string(address->fd);
    int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    EXPECT_GE(fd, 0);
    struct stat info {};
    EXPECT_EQ(::fstat(fd, &info), 0);
    bytes = static_cast<size_t>(info.st_size);
    void* at = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    EXPECT_NE(at, MAP_FAILED);
    segment = static_cast<uint8_t*>(at);
  }
  ~ForeignView() { ::munmap(segment, bytes); }
  shm::SegmentHeader* header() { return reinterpret_cast<shm::SegmentHeader*>(segment); }
  uint8_t* inbox(int producer) {
    return segment + shm::kHeaderBytes + producer * header()->inbox_stride;
  }
  shm::InboxControl* control(int producer) {
    return reinterpret_cast<shm::InboxControl*>(inbox(producer));
  }
  // Appends `record` to `producer`'s ring, in place of that producer.
  void write(int producer, const shm::Record& record) {
    uint64_t head = control(producer)->head.load();
    std::memcpy(inbox(producer) + shm::kInboxControlBytes + head % header()->ring_bytes, &record,
                sizeof(record));
    control(producer)->head.store(head + sizeof(record));
  }
};

void forge_bad_record(const std::string& owner, int producer) {
  shm::Record record{};
  record.kind = 99;
  ForeignView(owner).write(producer, record);
}

// --- cancel ---------------------------------------------------------------------------------

// Without CMA: a send times out while its stream is half written and eager sends wait behind it
// in the same queue. The receive fails as cancelled (never hangs or completes short) and the
// messages queued behind the stream still arrive, intact and in order.
TEST(ShmCancel, SendCancelledMidStreamKeepsTheMessagesQueuedBehindIt) {
  expect_all_ok(
      run_shm(2,
              [](Context& context) {
                auto& mesh = engine_of(context).mesh();
                constexpr size_t kLarge = 16 << 20;
                constexpr int kBehind = 300;
                constexpr size_t kSmall = 1000;
                std::vector<uint8_t> large = make_pattern(0, 1, kLarge, 1);
                auto large_memory = mesh.register_memory(large.data(), kLarge);
                if (context.rank() == 0) {
                  auto stream = mesh.send(1, 1, *large_memory, 0, kLarge);
                  // Reads the clear-to-send and pushes chunks until rank 1's ring is full.
                  mesh.wait_until({stream}, engine_of(context).deadline(),
                                  Deadline::after(std::chrono::milliseconds(400)));
                  std::vector<std::vector<uint8_t>> small;
                  std::vector<std::unique_ptr<transport::Memory>> memory;
                  std::vector<transport::RequestPtr> sends;
                  for (int i = 0; i < kBehind; ++i) {
                    small.push_back(make_pattern(0, 1, kSmall, 100 + i));
                    memory.push_back(mesh.register_memory(small.back().data(), kSmall));
                    sends.push_back(mesh.send(1, 100 + i, *memory.back(), 0, kSmall));
                  }
                  EXPECT_THROW(mesh.wait({stream}, Deadline::after(std::chrono::milliseconds(200))),
                               TimeoutError);
                  // Through the store, which does not touch the mesh: rank 1 may read on now.
                  engine_of(context).store()->set("test/cancelled", to_bytes("1"));
                  mesh.wait(sends, engine_of(context).deadline());
                  return;
                }
                usleep(100000);  // the ready-to-send is in our ring
                std::vector<uint8_t> in(kLarge);
                auto in_memory = mesh.register_memory(in.data(), kLarge);
                auto receive = mesh.recv(0, 1, *in_memory, 0, kLarge);
                // Clears it, then stops reading: the sender's ring fills.
                EXPECT_FALSE(receive->test());
                // Until rank 0 has cancelled (a sleep here raced a slow rank 0).
                engine_of(context).store()->get("test/cancelled", engine_of(context).deadline());
                try {
                  mesh.wait({receive}, engine_of(context).deadline());
                  ADD_FAILURE() << "a receive whose sender cancelled mid-stream completed";
                } catch (const ConnectionError& e) {
                  EXPECT_EQ(contains_msg(e.what(), "cancelled"), "");
                }
                std::vector<uint8_t> small(kSmall);
                auto small_memory = mesh.register_memory(small.data(), kSmall);
                for (int i = 0; i < kBehind; ++i) {
                  mesh.wait({mesh.recv(0, 100 + i, *small_memory, 0, kSmall)},
                            engine_of(context).deadline());
                  ASSERT_EQ(first_mismatch(small, 0, 1, 100 + i), -1) << "message " << i;
                }
              },
              {{"GLOO_LITE_SHM_CMA", "0"}}));
}

// With CMA: rank 0 cancels an announced send (its wait times out) and writes new data into the
// buffer while rank 1 is not reading; the cancel is behind an eager message that rank 1 must
// hold back (its unexpected queue is at the bound). When rank 1 then matches and copies, it must
// still see the cancel and fail the receive, not deliver what the caller wrote afterwards.
TEST(ShmCancel, CancelBehindHeldBackMessagesStillFailsTheCopy) {
  expect_all_ok(run_shm(
      2,
      [](Context& context) {
        auto& mesh = engine_of(context).mesh();
        constexpr size_t kLarge = 1 << 20;
        constexpr size_t kSmall = 1000;
        std::vector<uint8_t> small = make_pattern(0, 1, kSmall, 7);
        auto small_memory = mesh.register_memory(small.data(), kSmall);
        if (context.rank() == 0) {
          std::vector<uint8_t> large = make_pattern(0, 1, kLarge, 1);
          auto large_memory = mesh.register_memory(large.data(), kLarge);
          auto announced = mesh.send(1, 1, *large_memory, 0, kLarge);
          // The first waits unexpected at rank 1, the second is held back in the ring.
          auto first = mesh.send(1, 2, *small_memory, 0, kSmall);
          auto second = mesh.send(1, 3, *small_memory, 0, kSmall);
          EXPECT_THROW(mesh.wait({announced}, Deadline::after(std::chrono::milliseconds(100))),
                       TimeoutError);
          auto rewritten = make_pattern(0, 1, kLarge, 2);  // the caller owns its buffer again
          std::copy(rewritten.begin(), rewritten.end(), large.begin());
          engine_of(context).store()->set("test/rewritten", to_bytes("1"));  // not through the mesh
          mesh.wait({first, second}, engine_of(context).deadline());
          int done = 0;
          context.recv(1, &done, sizeof(done), 9);
          return;
        }
        // Until rank 0 has cancelled and rewritten its buffer (a sleep here raced a slow rank 0).
        engine_of(context).store()->get("test/rewritten", engine_of(context).deadline());
        std::vector<uint8_t> in(kLarge);
        auto in_memory = mesh.register_memory(in.data(), kLarge);
        auto receive = mesh.recv(0, 1, *in_memory, 0, kLarge);
        try {
          mesh.wait({receive}, engine_of(context).deadline());
          ADD_FAILURE() << "the copy of a cancelled send completed (data of salt "
                        << (first_mismatch(in, 0, 1, 2) == -1 ? "2: rewritten" : "?") << ")";
        } catch (const ConnectionError& e) {
          EXPECT_EQ(contains_msg(e.what(), "cancelled"), "");
        }
        std::vector<uint8_t> got(kSmall);
        auto got_memory = mesh.register_memory(got.data(), kSmall);
        for (uint64_t tag : {2, 3}) {
          mesh.wait({mesh.recv(0, tag, *got_memory, 0, kSmall)}, engine_of(context).deadline());
          EXPECT_EQ(first_mismatch(got, 0, 1, 7), -1) << "tag " << tag;
        }
        int done = 1;
        context.send(0, &done, sizeof(done), 9);
      },
      {{"GLOO_LITE_SHM_CMA", "1"}, {"GLOO_LITE_SHM_UNEXPECTED_BYTES", "1"}}));
}

// A cancel while the receiver's ring is full: out of band, it neither waits for room (no spin
// under the mesh mutex) nor closes the pair, and the receiver's copy still sees it.
TEST(ShmCancel, CancelWithTheRingFullIsPromptAndSeen) {
  // Before the meshes: their close still writes the sends queued from these buffers.
  std::vector<uint8_t> large(1 << 20, 1), small(60000, 2);
  auto meshes = connected_meshes(2);
  auto& a = *meshes[0];
  auto& b = *meshes[1];
  auto large_memory = a.register_memory(large.data(), large.size());
  auto small_memory = a.register_memory(small.data(), small.size());
  auto announced = a.send(1, 1, *large_memory, 0, large.size());  // a 48-byte record
  // Records of 48 + payload bytes: 48 + 4 * 60048 + 21904 fill the 256 KiB ring to the byte.
  std::vector<transport::RequestPtr> fill;
  for (int i = 0; i < 4; ++i) fill.push_back(a.send(1, 2, *small_memory, 0, small.size()));
  fill.push_back(a.send(1, 3, *small_memory, 0, 21904 - 48));
  fill.push_back(a.send(1, 4, *small_memory, 0, small.size()));
  EXPECT_FALSE(fill.back()->test()) << "b's ring should be full";
  auto start = Clock::now();
  EXPECT_THROW(a.wait({announced}, Deadline::after(std::chrono::milliseconds(50))), TimeoutError);
  EXPECT_LT(elapsed_ms(start), 500) << "the cancel waited for ring space";
  std::vector<uint8_t> in(large.size());
  auto in_memory = b.register_memory(in.data(), in.size());
  try {
    b.wait({b.recv(0, 1, *in_memory, 0, in.size())}, Deadline::after(std::chrono::seconds(3)));
    ADD_FAILURE() << "the receive of a cancelled send completed";
  } catch (const ConnectionError& e) {
    EXPECT_EQ(contains_msg(e.what(), "cancelled"), "");
  }
}

// --- unexpected messages --------------------------------------------------------------------

// 3000 eager messages (3 MB, a dozen rings) before any receive is posted; received in reverse
// order of tags, each matched to its own content.
TEST(ShmFlood, ManyUnexpectedMessagesInReverseOrder) {
  expect_all_ok(run_shm(2, [](Context& context) {
    auto& mesh = engine_of(context).mesh();
    constexpr int kMessages = 3000;
    constexpr size_t kBytes = 1000;
    if (context.rank() == 0) {
      std::vector<std::vector<uint8_t>> out;
      std::vector<std::unique_ptr<transport::Memory>> memory;
      std::vector<transport::RequestPtr> sends;
      for (int i = 0; i < kMessages; ++i) {
        out.push_back(make_pattern(0, 1, kBytes, static_cast<uint64_t>(i)));
        memory.push_back(mesh.register_memory(out.back().data(), kBytes));
        sends.push_back(mesh.send(1, static_cast<uint64_t>(i), *memory.back(), 0, kBytes));
      }
      mesh.wait(sends, engine_of(context).deadline());
      return;
    }
    usleep(300000);  // everything arrives unexpected
    std::vector<uint8_t> in(kBytes);
    auto memory = mesh.register_memory(in.data(), kBytes);
    for (int i = kMessages - 1; i >= 0; --i) {
      mesh.wait({mesh.recv(0, static_cast<uint64_t>(i), *memory, 0, kBytes)},
                engine_of(context).deadline());
      ASSERT_EQ(first_mismatch(in, 0, 1, static_cast<uint64_t>(i)), -1) << "message " << i;
    }
  }));
}

// --- dead and stopped peers -----------------------------------------------------------------

// The sender dies while a 64 MiB message is on its way (pipelined: some chunks arrived; CMA:
// before the copy). The receiver fails within 2 s, naming it.
TEST_P(Paths, PeerThatDiesMidMessageFailsTheReceiveNamingIt) {
  auto results = run_shm(
      2,
      [](Context& context) {
        auto& mesh = engine_of(context).mesh();
        constexpr size_t kBytes = 64 << 20;
        std::vector<uint8_t> buffer(kBytes, 1);
        auto memory = mesh.register_memory(buffer.data(), kBytes);
        if (context.rank() == 0) {
          auto request = mesh.send(1, 3, *memory, 0, kBytes);
          // Push a few chunks (fallback), then die with the message half sent.
          mesh.wait_until({request}, engine_of(context).deadline(),
                          Deadline::after(std::chrono::milliseconds(20)));
          raise(SIGKILL);
        }
        auto start = Clock::now();
        auto request = mesh.recv(0, 4, *memory, 0, kBytes);  // never sent: the wait sees death
        auto large = mesh.recv(0, 3, *memory, 0, kBytes);
        try {
          mesh.wait({large, request}, Deadline::after(std::chrono::seconds(30)));
          ADD_FAILURE() << "receives from a dead rank completed";
        } catch (const ConnectionError& e) {
          EXPECT_EQ(contains_msg(e.what(), "rank 0"), "");
        }
        EXPECT_LT(elapsed_ms(start), 2000);
      },
      env());
  expect_only_victim_killed(results, 0);
}

// Ranks in an allreduce when one of them is killed: every survivor fails within 2 s, naming it.
TEST(ShmFaults, KilledRankFailsSurvivorsInACollective) {
  constexpr int kVictim = 2;
  auto results = run_shm(4, [](Context& context) {
    std::vector<float> data(1 << 16, 1.0f);
    allreduce(context, data);  // all connected and working
    if (context.rank() == kVictim) {
      usleep(300000);
      raise(SIGKILL);
    }
    auto start = Clock::now();
    try {
      CollectiveOptions options;
      options.timeout = std::chrono::seconds(30);
      allreduce(context, data, ReduceOp::kSum, options);
      ADD_FAILURE() << "allreduce without rank 2 completed";
    } catch (const Error& e) {
      EXPECT_EQ(contains_msg(e.what(), "rank 2"), "");
    }
    EXPECT_LT(elapsed_ms(start), 2300);  // 300 ms until the kill, then at most 2 s
  });
  expect_only_victim_killed(results, kVictim);
}

// The abort notice lies outside the ring: it arrives although rank 1 filled rank 0's ring first
// (rank 0 reads nothing until then), and after the messages that were already in the ring.
TEST(ShmFaults, AbortReachesAPeerWhoseRingIsFull) {
  expect_all_ok(run_shm(2, [](Context& context) {
    auto& mesh = engine_of(context).mesh();
    constexpr int kMessages = 64;
    constexpr size_t kBytes = 60000;  // 3.6 MB of eager messages: many rings full
    std::vector<uint8_t> data = make_pattern(1, 0, kBytes, 5);
    auto memory = mesh.register_memory(data.data(), kBytes);
    if (context.rank() == 1) {
      std::vector<transport::RequestPtr> sends;
      for (int i = 0; i < kMessages; ++i) sends.push_back(mesh.send(0, 7, *memory, 0, kBytes));
      EXPECT_FALSE(sends.back()->test()) << "the ring should be full";
      context.abort("disk full on rank 1");
      sleep(1);  // alive: rank 0 must learn from the notice, not from the process ending
      return;
    }
    usleep(300000);
    std::vector<uint8_t> in(kBytes);
    auto in_memory = mesh.register_memory(in.data(), kBytes);
    auto start = Clock::now();
    try {
      // What was in the ring before the abort is delivered; the rest fails with its cause.
      for (int i = 0; i < kMessages; ++i) {
        mesh.wait({mesh.recv(1, 7, *in_memory, 0, kBytes)},
                  Deadline::after(std::chrono::seconds(30)));
        ASSERT_EQ(first_mismatch(in, 1, 0, 5), -1) << "message " << i;
      }
      ADD_FAILURE() << "every message arrived although rank 1 aborted with most of them queued";
    } catch (const ConnectionError& e) {
      EXPECT_EQ(contains_msg(e.what(), "disk full on rank 1"), "");
    }
    EXPECT_LT(elapsed_ms(start), 2000);
  }));
}

// Rank 1 finds a corrupt record from rank 0 and fails: rank 2, which waits only on rank 1, must
// learn it at once (the failed mesh tells every peer), not at its deadline.
TEST(ShmFaults, FailedMeshTellsEveryPeer) {
  auto meshes = connected_meshes(3);
  forge_bad_record(meshes[1]->address(), 0);
  int value = 0;
  auto memory1 = meshes[1]->register_memory(&value, sizeof(value));
  try {
    meshes[1]->wait({meshes[1]->recv(0, 1, *memory1, 0, sizeof(value))},
                    Deadline::after(std::chrono::seconds(5)));
    ADD_FAILURE() << "a corrupt record went unnoticed";
  } catch (const ConnectionError& e) {
    EXPECT_EQ(contains_msg(e.what(), "protocol error"), "");
  }
  auto memory2 = meshes[2]->register_memory(&value, sizeof(value));
  auto start = Clock::now();
  try {
    meshes[2]->wait({meshes[2]->recv(1, 1, *memory2, 0, sizeof(value))},
                    Deadline::after(std::chrono::seconds(3)));
    ADD_FAILURE() << "a receive from a rank whose mesh failed completed";
  } catch (const ConnectionError& e) {
    EXPECT_EQ(contains_msg(e.what(), "aborted"), "");
    EXPECT_EQ(contains_msg(e.what(), "protocol error"), "");
  } catch (const TimeoutError& e) {
    ADD_FAILURE() << "rank 2 learnt nothing from rank 1: " << e.what();
  }
  EXPECT_LT(elapsed_ms(start), 1000);
}

// Rank 0 leaves three eager messages in rank 1's ring, of which rank 1 may queue only one (its
// unexpected bound), then closes (or is killed). Everything that arrived stays deliverable.
void messages_left_in_the_ring_stay_deliverable(bool killed) {
  auto results = run_shm(
      2,
      [killed](Context& context) {
        auto& mesh = engine_of(context).mesh();
        constexpr size_t kBytes = 1000;
        std::vector<uint8_t> buffer(kBytes);
        auto memory = mesh.register_memory(buffer.data(), kBytes);
        if (context.rank() == 0) {
          for (uint64_t tag = 1; tag <= 3; ++tag) {
            auto data = make_pattern(0, 1, kBytes, tag);
            std::copy(data.begin(), data.end(), buffer.begin());
            mesh.wait({mesh.send(1, tag, *memory, 0, kBytes)}, engine_of(context).deadline());
          }
          if (killed) raise(SIGKILL);
          return;
        }
        usleep(500000);  // rank 0 has closed or gone
        for (uint64_t tag = 1; tag <= 3; ++tag) {
          mesh.wait({mesh.recv(0, tag, *memory, 0, kBytes)}, engine_of(context).deadline());
          EXPECT_EQ(first_mismatch(buffer, 0, 1, tag), -1) << "message " << tag;
        }
        try {
          mesh.wait({mesh.recv(0, 4, *memory, 0, kBytes)},
                    Deadline::after(std::chrono::seconds(5)));
          ADD_FAILURE() << "a receive from a closed rank completed";
        } catch (const ConnectionError& e) {
          EXPECT_EQ(contains_msg(e.what(), "rank 0"), "");
        }
      },
      {{"GLOO_LITE_SHM_UNEXPECTED_BYTES", "1"}});
  EXPECT_EQ(results[0].signaled, killed) << results[0].describe();
  EXPECT_TRUE(results[1].ok()) << results[1].describe();
}

TEST(ShmFaults, MessagesLeftInTheRingAtGoodbyeStayDeliverable) {
  messages_left_in_the_ring_stay_deliverable(false);
}

TEST(ShmFaults, MessagesLeftInTheRingByADeadPeerStayDeliverable) {
  messages_left_in_the_ring_stay_deliverable(true);
}

// A head further ahead than the ring reaches is a protocol error naming the peer.
TEST(ShmHostilePeer, HeadBeyondTheRingIsAProtocolError) {
  auto meshes = connected_meshes(2);
  {
    ForeignView view(meshes[1]->address());
    view.control(0)->head.store(3 * view.header()->ring_bytes + 8);
  }
  int value = 0;
  auto memory = meshes[1]->register_memory(&value, sizeof(value));
  try {
    meshes[1]->wait({meshes[1]->recv(0, 1, *memory, 0, sizeof(value))},
                    Deadline::after(std::chrono::seconds(3)));
    ADD_FAILURE() << "a corrupt head went unnoticed";
  } catch (const ConnectionError& e) {
    EXPECT_EQ(contains_msg(e.what(), "unread bytes"), "");
    EXPECT_EQ(contains_msg(e.what(), "rank 0"), "");
  }
}

// A done from rank 2 naming rank 0's send to rank 1 must not complete that send.
TEST(ShmHostilePeer, RecordNamingAnotherPeersOperationIsRejected) {
  std::vector<uint8_t> data(1 << 20, 5);  // outlives the meshes
  auto meshes = connected_meshes(3);
  auto memory = meshes[0]->register_memory(data.data(), data.size());
  auto send = meshes[0]->send(1, 1, *memory, 0, data.size());  // rendezvous, send id 1
  shm::Record done{};
  done.kind = static_cast<uint32_t>(shm::RecordKind::kDone);
  done.a = 1;
  ForeignView(meshes[0]->address()).write(2, done);
  try {
    meshes[0]->wait({send}, Deadline::after(std::chrono::seconds(3)));
    ADD_FAILURE() << "a done from rank 2 completed a send to rank 1";
  } catch (const ConnectionError& e) {
    EXPECT_EQ(contains_msg(e.what(), "protocol error from rank 2"), "");
  } catch (const TimeoutError& e) {
    ADD_FAILURE() << "the forged done went unnoticed: " << e.what();
  }
}

// Segments are sealed against resizing: a peer holding the descriptor cannot shrink one under
// our mapping (SIGBUS), and a segment that is not sealed, or whose ring is too small to hold a
// record, is rejected at connect naming the rank.
TEST(ShmHostilePeer, SegmentsAreSealedAndTheirRingSizeChecked) {
  MeshPair meshes;
  auto address = shm::Address::parse(meshes.b->address());
  std::string path = "/proc/self/fd/" + std::to_string(address->fd);
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_NE(::ftruncate(fd, 4096), 0) << "a segment could be shrunk";
  ::close(fd);
  // A forged segment: b's header with a ring of 0 bytes (a consistent layout), unsealed or
  // sealed.
  for (bool sealed : {false, true}) {
    int forged = ::memfd_create("forged", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    ASSERT_GE(forged, 0);
    shm::Layout layout = shm::Layout::of(2, 0);
    ASSERT_EQ(::ftruncate(forged, static_cast<off_t>(layout.segment_bytes)), 0);
    if (sealed) {
      ASSERT_EQ(::fcntl(forged, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
    }
    void* at = ::mmap(nullptr, layout.segment_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, forged, 0);
    ASSERT_NE(at, MAP_FAILED);
    auto* header = static_cast<shm::SegmentHeader*>(at);
    std::memcpy(static_cast<void*>(header), ForeignView(meshes.b->address()).header(),
                sizeof(shm::SegmentHeader));
    header->ring_bytes = 0;
    header->inbox_stride = layout.inbox_stride;
    header->segment_bytes = layout.segment_bytes;
    header->context_id = 42;
    header->ready.store(1);
    auto* control =
        reinterpret_cast<shm::InboxControl*>(static_cast<uint8_t*>(at) + layout.inbox_offset(0));
    control->reserved.store(1);
    address->fd = forged;
    std::string error = connect_error(*meshes.a, address->encode());
    ::munmap(at, layout.segment_bytes);
    ::close(forged);
    EXPECT_EQ(contains_msg(error, "rank 1"), "");
    EXPECT_EQ(contains_msg(error, sealed ? "ring of 0 bytes is invalid" : "not sealed"), "");
  }
}

// A stopped peer is alive: the wait ends at its deadline with a TimeoutError naming it.
TEST(ShmFaults, StoppedPeerTimesOutNamingIt) {
  expect_all_ok(run_shm(2, [](Context& context) {
    if (context.rank() == 1) {
      int pid = getpid();
      context.send(0, &pid, sizeof(pid), 1);
      raise(SIGSTOP);
      return;
    }
    int pid = 0;
    context.recv(1, &pid, sizeof(pid), 1);
    int value = 0;
    auto start = Clock::now();
    try {
      context.recv(1, &value, sizeof(value), 2, std::chrono::milliseconds(500));
      ADD_FAILURE() << "receive from a stopped rank completed";
    } catch (const TimeoutError& e) {
      EXPECT_EQ(contains_msg(e.what(), "rank 1"), "");
    }
    long ms = elapsed_ms(start);
    EXPECT_GE(ms, 490);
    EXPECT_LT(ms, 2000);
    while (!process_is_stopped(pid)) usleep(1000);  // continue it only once it stopped
    kill(pid, SIGCONT);
  }));
}

// --- nothing in /dev/shm ----------------------------------------------------------------------

std::set<std::string> dev_shm_entries() {
  std::set<std::string> names;
  if (DIR* dir = opendir("/dev/shm")) {
    while (dirent* entry = readdir(dir)) names.insert(entry->d_name);
    closedir(dir);
  }
  return names;
}

TEST(ShmFiles, NothingIsNamedInDevShmWhateverTheExit) {
  auto before = dev_shm_entries();
  auto results = run_shm(4, [](Context& context) {
    std::vector<float> data(1 << 20, 1.0f);
    allreduce(context, data);
    // The segments are memfds: mapped, but with no path in /dev/shm.
    std::ifstream maps("/proc/self/maps");
    std::string line;
    bool memfd = false;
    while (std::getline(maps, line)) {
      EXPECT_EQ(line.find("/dev/shm/"), std::string::npos) << line;
      memfd = memfd || line.find("memfd:gloo_lite_shm") != std::string::npos;
    }
    EXPECT_TRUE(memfd) << "no memfd segment is mapped";
    if (context.rank() == 3) raise(SIGKILL);
  });
  EXPECT_TRUE(results[3].signaled);
  // Ours only: a test running beside this one (ctest -j2: Python, torch) may make its own.
  auto after = dev_shm_entries();
  for (const auto& name : after) {
    EXPECT_TRUE(before.count(name) || name.find("gloo_lite") == std::string::npos)
        << "/dev/shm/" << name << " appeared";
  }
}

}  // namespace
}  // namespace gloo_lite::test
