// The TCP store server's bounds against strangers: announced bodies cannot pin more than the
// buffer limit, a client stalled mid-request is dropped after the stall timeout, idle
// connections are kept, and a real client is served throughout.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <thread>

#include "gloo_lite/base/error.h"
#include "gloo_lite/base/socket.h"
#include "rendezvous/stores.h"

namespace gloo_lite::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

milliseconds since(Clock::time_point start) {
  return std::chrono::duration_cast<milliseconds>(Clock::now() - start);
}

// Sets a knob for one test and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_.empty()) {
      unsetenv(name_);
    } else {
      setenv(name_, old_.c_str(), 1);
    }
  }

 private:
  const char* name_;
  std::string old_;
};

// This process's resident set, in bytes: the server runs in-process.
size_t resident_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  ADD_FAILURE() << "no VmRSS in /proc/self/status";
  return 0;
}

// A SET header written by hand from the wire format (tcp_store_protocol.h).
Bytes set_header(uint32_t body_bytes) {
  Bytes h(16);
  put_u32(h.data(), 0x54534C47);
  put_u16(h.data() + 4, 1);
  put_u16(h.data() + 6, 1);
  put_u32(h.data() + 8, 0);
  put_u32(h.data() + 12, body_bytes);
  return h;
}

Fd connect_to(const TcpStoreServer& server) {
  return connect_tcp(SocketAddress::resolve("127.0.0.1", server.port()),
                     Deadline::after(seconds(5)), "test client");
}

// Waits until the server closes `fd` (true) or `limit` passes (false), discarding what it sent.
bool closed_within(const Fd& fd, milliseconds limit) {
  auto deadline = Deadline::after(limit);
  while (wait_readable(fd.get(), deadline)) {
    char chunk[4096];
    ssize_t n = ::recv(fd.get(), chunk, sizeof(chunk), 0);
    if (n <= 0) return true;
  }
  return false;
}

// A real client keeps working: a small set and get, each well within a second.
void expect_served(Store& store, int round) {
  auto start = Clock::now();
  std::string key = "real/" + std::to_string(round);
  store.set(key, to_bytes("v" + std::to_string(round)), Deadline::after(seconds(5)));
  EXPECT_EQ(to_string(store.get(key, Deadline::after(seconds(5)))), "v" + std::to_string(round));
  EXPECT_LT(since(start).count(), 1000) << "round " << round;
}

TEST(TcpStoreLimits, StrangersAnnouncingHugeBodiesCannotPinMemory) {
  constexpr size_t kBufferLimit = size_t{32} << 20;
  constexpr milliseconds kStall(2000);
  ScopedEnv buffer("GLOO_LITE_STORE_BUFFER_BYTES", "32M");
  ScopedEnv stall("GLOO_LITE_STORE_STALL_MS", "2000");
  TcpStoreServer server(SocketAddress::resolve("127.0.0.1", 0));
  auto real = make_tcp_store("127.0.0.1", server.port(), Deadline::after(seconds(5)));

  // Each stranger announces a maximum-size body (64 MiB) and sends a quarter of it.
  constexpr int kStrangers = 24;
  constexpr size_t kSent = size_t{16} << 20;
  Bytes payload(kSent, 0x5a);
  size_t before = resident_bytes();
  std::vector<Fd> strangers;
  for (int i = 0; i < kStrangers; ++i) strangers.push_back(connect_to(server));
  auto started = Clock::now();
  std::vector<std::thread> senders;
  for (auto& stranger : strangers) {
    senders.emplace_back([&, fd = stranger.get()] {
      Bytes header = set_header(64u << 20);
      try {
        write_all(fd, header.data(), header.size(), Deadline::after(seconds(5)), "stranger");
        write_all(fd, payload.data(), payload.size(), Deadline::after(milliseconds(1500)),
                  "stranger");
      } catch (const Error&) {
        // The server stops reading (or drops us): expected.
      }
    });
  }
  for (int round = 0; round < 5; ++round) expect_served(*real, round);
  for (auto& sender : senders) sender.join();

  size_t grown = resident_bytes() - std::min(before, resident_bytes());
  std::printf("resident growth with %d strangers sending %zu MiB each: %zu MiB (limit %zu MiB)\n",
              kStrangers, kSent >> 20, grown >> 20, kBufferLimit >> 20);
  EXPECT_LT(grown, kBufferLimit + (size_t{16} << 20))
      << "the server buffered more than GLOO_LITE_STORE_BUFFER_BYTES for strangers";

  for (auto& stranger : strangers) {
    EXPECT_TRUE(closed_within(stranger, kStall + seconds(3) - since(started)))
        << "a stalled stranger was kept";
  }
  EXPECT_GE(since(started).count(), (kStall - milliseconds(50)).count());
  EXPECT_LE(since(started).count(), (kStall + milliseconds(1500)).count());

  // With the strangers gone, a large value goes through the freed buffer space.
  Bytes large(size_t{8} << 20, 0x33);
  real->set("large", large, Deadline::after(seconds(10)));
  EXPECT_EQ(real->get("large", Deadline::after(seconds(10))), large);
  expect_served(*real, 99);
}

TEST(TcpStoreLimits, StalledAndTricklingClientsAreDroppedAndIdleOnesKept) {
  constexpr milliseconds kStall(1000);
  ScopedEnv stall("GLOO_LITE_STORE_STALL_MS", "1000");
  TcpStoreServer server(SocketAddress::resolve("127.0.0.1", 0));
  auto real = make_tcp_store("127.0.0.1", server.port(), Deadline::after(seconds(5)));
  real->set("warm", to_bytes("pooled"));  // leaves an idle pooled connection behind

  Fd idle = connect_to(server);
  Fd half_header = connect_to(server);
  Fd half_body = connect_to(server);
  Fd trickle = connect_to(server);
  auto started = Clock::now();
  Bytes header = set_header(1000);
  write_all(half_header.get(), header.data(), 5, Deadline::after(seconds(1)), "t");
  write_all(half_body.get(), header.data(), header.size(), Deadline::after(seconds(1)), "t");
  write_all(half_body.get(), header.data(), 10, Deadline::after(seconds(1)), "t");
  std::atomic<bool> stop{false};
  std::thread trickler([&] {
    write_all(trickle.get(), header.data(), header.size(), Deadline::after(seconds(1)), "t");
    uint8_t byte = 0;
    while (!stop) {
      if (::send(trickle.get(), &byte, 1, MSG_NOSIGNAL) != 1) return;
      std::this_thread::sleep_for(milliseconds(50));
    }
  });

  for (const Fd* fd : {&half_header, &half_body, &trickle}) {
    EXPECT_TRUE(closed_within(*fd, kStall + seconds(2) - since(started)));
  }
  auto dropped_after = since(started);
  stop = true;
  trickler.join();
  EXPECT_GE(dropped_after.count(), (kStall - milliseconds(50)).count());
  EXPECT_LE(dropped_after.count(), (kStall + milliseconds(500)).count());

  // Connections that are merely idle, longer than the stall timeout, stay and serve.
  std::this_thread::sleep_for(kStall - std::min(kStall, since(started)) + milliseconds(300));
  EXPECT_FALSE(closed_within(idle, milliseconds(0))) << "an idle connection was dropped";
  EXPECT_EQ(to_string(real->get("warm", Deadline::after(seconds(5)))), "pooled");
  // A parked get longer than the stall timeout is a legitimate wait, not a stall.
  std::thread late([&] {
    std::this_thread::sleep_for(kStall + milliseconds(300));
    make_tcp_store("127.0.0.1", server.port(), Deadline::after(seconds(5)))
        ->set("late", to_bytes("here"));
  });
  EXPECT_EQ(to_string(real->get("late", Deadline::after(seconds(10)))), "here");
  late.join();
}

// A response the client does not read would otherwise pin its bytes for good.
TEST(TcpStoreLimits, ClientThatDoesNotReadItsResponseIsDropped) {
  constexpr milliseconds kStall(1000);
  ScopedEnv stall("GLOO_LITE_STORE_STALL_MS", "1000");
  TcpStoreServer server(SocketAddress::resolve("127.0.0.1", 0));
  auto real = make_tcp_store("127.0.0.1", server.port(), Deadline::after(seconds(5)));
  real->set("big", Bytes(size_t{32} << 20, 7));  // far more than loopback socket buffers hold

  Fd reader = connect_to(server);
  Bytes body(4 + 4 + 3);
  put_u32(body.data(), 1);
  put_u32(body.data() + 4, 3);
  std::copy_n("big", 3, body.begin() + 8);
  Bytes get = set_header(static_cast<uint32_t>(body.size()));
  put_u16(get.data() + 6, 2);  // GET
  get.insert(get.end(), body.begin(), body.end());
  write_all(reader.get(), get.data(), get.size(), Deadline::after(seconds(1)), "t");
  auto started = Clock::now();
  std::this_thread::sleep_for(kStall + milliseconds(500));
  expect_served(*real, 1);
  // Drained now, the connection must end early: the server gave up on it.
  size_t received = 0;
  auto deadline = Deadline::after(seconds(5));
  while (wait_readable(reader.get(), deadline)) {
    char chunk[65536];
    ssize_t n = ::recv(reader.get(), chunk, sizeof(chunk), 0);
    if (n <= 0) break;
    received += static_cast<size_t>(n);
  }
  EXPECT_LT(received, size_t{32} << 20) << "the whole response was kept for a client not reading";
  EXPECT_LT(since(started).count(), 4000);
}

TEST(TcpStoreLimits, RequestsOverThePerClientLimitAreRefusedNamingTheKnob) {
  ScopedEnv limit("GLOO_LITE_STORE_CLIENT_BYTES", "1M");
  TcpStoreServer server(SocketAddress::resolve("127.0.0.1", 0));
  Fd raw = connect_to(server);
  Bytes header = set_header(2u << 20);
  write_all(raw.get(), header.data(), header.size(), Deadline::after(seconds(1)), "t");
  std::string reply;
  auto deadline = Deadline::after(seconds(5));
  while (wait_readable(raw.get(), deadline)) {
    char chunk[4096];
    ssize_t n = ::recv(raw.get(), chunk, sizeof(chunk), 0);
    if (n <= 0) break;
    reply.append(chunk, static_cast<size_t>(n));
  }
  EXPECT_NE(reply.find("GLOO_LITE_STORE_CLIENT_BYTES"), std::string::npos) << reply;

  auto store = make_tcp_store("127.0.0.1", server.port(), Deadline::after(seconds(5)));
  EXPECT_THROW(store->set("big", Bytes(size_t{2} << 20, 1), Deadline::after(seconds(5))),
               StoreError);
  store->set("small", Bytes(size_t{512} << 10, 2));
  EXPECT_EQ(store->get("small", Deadline::after(seconds(5))).size(), size_t{512} << 10);
}

}  // namespace
}  // namespace gloo_lite::test
