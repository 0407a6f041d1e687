// The TCP store server against hostile and broken clients, the client's error reporting, and the
// gloo_lite_store binary.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "gloo_lite/base/error.h"
#include "gloo_lite/base/socket.h"
#include "rendezvous/stores.h"
#include "test/support/test_support.h"

extern char** environ;

namespace gloo_lite::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Hand-made protocol bytes, written from the wire format in tcp_store_protocol.h rather than
// with its encoder, so that the encoder's own mistakes cannot hide here.
Bytes request_header(uint16_t version, uint16_t op, uint32_t timeout_ms, uint32_t body_bytes) {
  Bytes h(16);
  put_u32(h.data(), 0x54534C47);
  put_u16(h.data() + 4, version);
  put_u16(h.data() + 6, op);
  put_u32(h.data() + 8, timeout_ms);
  put_u32(h.data() + 12, body_bytes);
  return h;
}

Bytes body_of(const std::vector<std::string>& items) {
  Bytes body(4);
  put_u32(body.data(), static_cast<uint32_t>(items.size()));
  for (const auto& item : items) {
    size_t at = body.size();
    body.resize(at + 4 + item.size());
    put_u32(body.data() + at, static_cast<uint32_t>(item.size()));
    std::copy(item.begin(), item.end(), body.begin() + at + 4);
  }
  return body;
}

class TcpStoreServerTest : public ::testing::Test {
 protected:
  Fd raw_connect() {
    return connect_tcp(SocketAddress::resolve("127.0.0.1", server_.port()),
                       Deadline::after(seconds(5)), "raw test client");
  }
  void send_bytes(const Fd& fd, const Bytes& bytes) {
    write_all(fd.get(), bytes.data(), bytes.size(), Deadline::after(seconds(5)), "raw");
  }
  // Everything the server sends until it closes the connection; fails if it stays open.
  std::string read_until_closed(const Fd& fd) {
    std::string received;
    auto deadline = Deadline::after(seconds(5));
    while (wait_readable(fd.get(), deadline)) {
      char chunk[4096];
      ssize_t n = ::recv(fd.get(), chunk, sizeof(chunk), 0);
      if (n <= 0) return received;
      received.append(chunk, static_cast<size_t>(n));
    }
    ADD_FAILURE() << "the server kept the connection open";
    return received;
  }
  // A well-behaved client still gets full service.
  void expect_serving() {
    auto store = make_tcp_store("127.0.0.1", server_.port(), Deadline::after(seconds(5)));
    store->set("health", to_bytes("ok"));
    EXPECT_EQ(to_string(store->get("health", Deadline::after(seconds(5)))), "ok");
  }

  TcpStoreServer server_{SocketAddress::resolve("127.0.0.1", 0)};
};

TEST_F(TcpStoreServerTest, GarbageIsDroppedAndOthersAreServed) {
  Fd garbage = raw_connect();
  std::string http = "GET / HTTP/1.1\r\nHost: store\r\n\r\n";
  send_bytes(garbage, Bytes(http.begin(), http.end()));
  EXPECT_EQ(read_until_closed(garbage), "") << "no reply to a client that is not ours";
  expect_serving();
}

TEST_F(TcpStoreServerTest, OversizedLengthIsRefusedBeforeAllocating) {
  Fd client = raw_connect();
  send_bytes(client, request_header(1, 1, 0, 0xFFFFFFF0u));
  std::string reply = read_until_closed(client);
  EXPECT_NE(reply.find("exceeds the limit"), std::string::npos) << reply;

  Fd big_key = raw_connect();
  Bytes body = body_of({std::string(5000, 'k'), "v"});
  Bytes message = request_header(1, 1, 0, static_cast<uint32_t>(body.size()));
  message.insert(message.end(), body.begin(), body.end());
  send_bytes(big_key, message);
  reply = read_until_closed(big_key);
  EXPECT_NE(reply.find("key of 5000 bytes"), std::string::npos) << reply;
  expect_serving();
}

TEST_F(TcpStoreServerTest, InconsistentBodyIsRefused) {
  Fd client = raw_connect();
  Bytes body = body_of({"key"});
  put_u32(body.data(), 5);  // claims five items, carries one
  Bytes message = request_header(1, 1, 0, static_cast<uint32_t>(body.size()));
  message.insert(message.end(), body.begin(), body.end());
  send_bytes(client, message);
  EXPECT_NE(read_until_closed(client).find("malformed"), std::string::npos);
  expect_serving();
}

TEST_F(TcpStoreServerTest, OtherProtocolVersionGetsAnExplanation) {
  Fd client = raw_connect();
  send_bytes(client, request_header(99, 1, 0, 0));
  std::string reply = read_until_closed(client);
  EXPECT_NE(reply.find("protocol version 99"), std::string::npos) << reply;
  expect_serving();
}

TEST_F(TcpStoreServerTest, DisconnectsMidRequestAreSurvived) {
  {
    Fd half_header = raw_connect();
    Bytes header = request_header(1, 1, 0, 100);
    send_bytes(half_header, Bytes(header.begin(), header.begin() + 7));
  }
  {
    Fd half_body = raw_connect();
    Bytes message = request_header(1, 1, 0, 1000);
    message.resize(message.size() + 10, 'x');
    send_bytes(half_body, message);
  }
  {
    // A parked get whose client vanishes must not be answered into a closed socket later.
    Fd parked = raw_connect();
    Bytes body = body_of({"later"});
    Bytes message = request_header(1, 2, 60000, static_cast<uint32_t>(body.size()));
    message.insert(message.end(), body.begin(), body.end());
    send_bytes(parked, message);
    std::this_thread::sleep_for(milliseconds(50));
  }
  expect_serving();
  auto store = make_tcp_store("127.0.0.1", server_.port(), Deadline::after(seconds(5)));
  store->set("later", to_bytes("fine"));
  EXPECT_EQ(to_string(store->get("later", Deadline::after(seconds(5)))), "fine");
}

TEST_F(TcpStoreServerTest, SilentClientsDoNotDelayOthers) {
  Fd silent = raw_connect();
  Fd stalled = raw_connect();
  Bytes header = request_header(1, 1, 0, 100);
  send_bytes(stalled, Bytes(header.begin(), header.begin() + 5));
  auto store = make_tcp_store("127.0.0.1", server_.port(), Deadline::after(seconds(5)));
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i) store->set("k" + std::to_string(i), to_bytes("v"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(2));
  expect_serving();
}

TEST_F(TcpStoreServerTest, WaitingGetIsOneRequestNotPolling) {
  auto reader = make_tcp_store("127.0.0.1", server_.port(), Deadline::after(seconds(5)));
  auto writer = make_tcp_store("127.0.0.1", server_.port(), Deadline::after(seconds(5)));
  uint64_t before = server_.requests_handled();
  std::thread late([&] {
    std::this_thread::sleep_for(milliseconds(400));
    writer->set("slow", to_bytes("here"));
  });
  EXPECT_EQ(to_string(reader->get("slow", Deadline::after(seconds(10)))), "here");
  late.join();
  EXPECT_EQ(server_.requests_handled() - before, 2u) << "one get and one set";
}

// A server that is gone is the store's failure, not a peer's: StoreError, as for every backend.
TEST_F(TcpStoreServerTest, LostServerIsAStoreErrorNamingIt) {
  auto server = std::make_unique<TcpStoreServer>(SocketAddress::resolve("127.0.0.1", 0));
  std::string url = server->url();
  auto store = make_tcp_store("127.0.0.1", server->port(), Deadline::after(seconds(5)));
  store->set("k", to_bytes("v"));
  server.reset();
  try {
    store->get("k", Deadline::after(seconds(2)));
    FAIL() << "get succeeded without a server";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find(url), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("alive"), std::string::npos) << e.what();
  }
}

TEST(TcpStoreClient, UnreachableServerIsAStoreErrorNamingIt) {
  int port = free_loopback_port();
  auto start = std::chrono::steady_clock::now();
  try {
    make_tcp_store("127.0.0.1", static_cast<uint16_t>(port), Deadline::after(milliseconds(300)));
    FAIL() << "connected to nothing";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("tcp://127.0.0.1:" + std::to_string(port)),
              std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(2));
}

TEST(TcpStoreClient, RejectsOversizedKeysBeforeSending) {
  TcpStoreServer server(SocketAddress::resolve("127.0.0.1", 0));
  auto store = make_tcp_store("127.0.0.1", server.port(), Deadline::after(seconds(5)));
  EXPECT_THROW(store->set(std::string(5000, 'k'), to_bytes("v")), InvalidArgument);
  store->set("still", to_bytes("fine"));
  EXPECT_TRUE(store->check({"still"}));
}

TEST(TcpStoreServer, ServesIPv6Loopback) {
  TcpStoreServer server(SocketAddress::resolve("::1", 0));
  std::string url = "tcp://[::1]:" + std::to_string(server.port());
  EXPECT_EQ(server.url(), url);
  auto store = open_store(url, Deadline::after(seconds(5)));
  store->set("six", to_bytes("v6"));
  EXPECT_EQ(to_string(store->get("six", Deadline::after(seconds(5)))), "v6");
  EXPECT_EQ(store->describe(), url);
}

TEST(GlooLiteStoreBinary, PrintsItsUrlServesAndStopsOnSigterm) {
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  std::string program = GLOO_LITE_STORE_BIN;
  std::vector<std::string> args = {program, "--host", "127.0.0.1", "--port", "0"};
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  ASSERT_EQ(posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  Fd stdout_fd(out[0]);

  std::string line;
  auto deadline = Deadline::after(seconds(10));
  while (line.find('\n') == std::string::npos && wait_readable(stdout_fd.get(), deadline)) {
    char chunk[256];
    ssize_t n = ::read(stdout_fd.get(), chunk, sizeof(chunk));
    if (n <= 0) break;
    line.append(chunk, static_cast<size_t>(n));
  }
  ASSERT_EQ(line.rfind("tcp://127.0.0.1:", 0), 0u) << "printed: " << line;
  std::string url = line.substr(0, line.find('\n'));

  auto store = open_store(url, Deadline::after(seconds(5)));
  store->set("from-test", to_bytes("hi"));
  EXPECT_EQ(to_string(store->get("from-test", Deadline::after(seconds(5)))), "hi");

  kill(pid, SIGTERM);
  int status = 0;
  auto stop = std::chrono::steady_clock::now();
  while (waitpid(pid, &status, WNOHANG) == 0 &&
         std::chrono::steady_clock::now() - stop < seconds(5)) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  ASSERT_TRUE(WIFEXITED(status)) << "did not exit on SIGTERM";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace gloo_lite::test
