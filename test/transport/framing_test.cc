// The TCP framing of wire version 3 seen from the wire: a hand-made rank 1 speaks the protocol
// to a real rank 0 (a TCP mesh), so that it can leave its socket unread, write frames in any
// order and segment size, and check what rank 0 puts on the wire and in what order.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include "gloo_lite/base/config.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/socket.h"
#include "test/transport/harness.h"
#include "transport_tcp/wire.h"

namespace gloo_lite::test {
namespace {

namespace wire = tcp::wire;
using wire::FrameType;

// These tests speak TCP's wire format by hand: under any other transport the suite runs with
// (shm here, ibverbs in the Soft-RoCE VM), loopback_device() is not TCP and they skip.
bool not_tcp() {
  const char* transport = std::getenv("GLOO_LITE_TEST_TRANSPORT");
  return transport != nullptr && *transport != '\0' && std::string(transport) != "tcp";
}

// Sets an environment variable until destruction, then restores what it was.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Socket buffers of a fixed, small size on both ends: "the socket is full" is a state the tests
// reach after a known, small amount of data, whatever the kernel's autotuning would do.
constexpr int kSocketBuffer = 128 << 10;

// Rank 0 of two, a real TCP mesh, and rank 1 played by hand on a blocking socket.
struct FakePeer {
  ScopedEnv socket_buffer{"GLOO_LITE_TCP_SOCKET_BUFFER", std::to_string(kSocketBuffer).c_str()};
  std::shared_ptr<transport::Device> device = loopback_device();
  std::unique_ptr<transport::Mesh> mesh;
  Fd fd;
  Deadline deadline = Deadline::after(std::chrono::seconds(60));

  // `source`: the address rank 1 dials from (127.0.0.2: rank 0 sees a peer on another host,
  // since the two ends' addresses differ); nullptr: the kernel's choice, rank 0's own address.
  explicit FakePeer(const char* source = nullptr) {
    mesh = device->create_mesh(0, 2, {});
    const uint64_t context_id = 0x5eed;
    std::thread connector([&] {
      // Rank 0 dials nobody (the higher rank connects): rank 1's address only names it.
      mesh->connect({mesh->address(), "127.0.0.1:9"}, context_id, deadline);
    });
    fd = source ? connect_from(source)
                : connect_tcp(SocketAddress::parse(mesh->address()), deadline, "fake rank 1");
    setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &kSocketBuffer, sizeof(kSocketBuffer));
    setsockopt(fd.get(), SOL_SOCKET, SO_SNDBUF, &kSocketBuffer, sizeof(kSocketBuffer));
    wire::Hello hello;
    hello.context_id = context_id;
    hello.src_rank = 1;
    hello.dst_rank = 0;
    hello.size = 2;
    uint8_t bytes[wire::kHelloBytes];
    wire::encode_hello(hello, bytes);
    write_all(fd.get(), bytes, sizeof(bytes), deadline, "fake rank 1: hello");
    read_all(fd.get(), bytes, sizeof(bytes), deadline, "fake rank 1: hello-ack");
    connector.join();
    EXPECT_EQ(wire::decode_hello(bytes).kind, wire::kHelloAck);
  }

  Fd connect_from(const char* source) {
    Fd dialled(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in from{};
    from.sin_family = AF_INET;
    inet_pton(AF_INET, source, &from.sin_addr);
    EXPECT_EQ(::bind(dialled.get(), reinterpret_cast<sockaddr*>(&from), sizeof(from)), 0);
    std::string address = mesh->address();
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
    inet_pton(AF_INET, address.substr(0, address.rfind(':')).c_str(), &to.sin_addr);
    EXPECT_EQ(::connect(dialled.get(), reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0)
        << "fake rank 1: connect from " << source << " to " << address;
    return dialled;
  }

  void put(const wire::FrameHeader& header, const uint8_t* payload = nullptr) {
    uint8_t bytes[wire::kHeaderBytes];
    wire::encode_header(header, bytes);
    write_all(fd.get(), bytes, sizeof(bytes), deadline, "fake rank 1: header");
    if (wire::has_payload(header.type) && header.length > 0) {
      write_all(fd.get(), payload, header.length, deadline, "fake rank 1: payload");
    }
  }
  wire::FrameHeader get() {
    uint8_t bytes[wire::kHeaderBytes];
    read_all(fd.get(), bytes, sizeof(bytes), deadline, "fake rank 1: header");
    wire::FrameHeader header;
    EXPECT_TRUE(wire::decode_header(bytes, &header));
    return header;
  }
  void get_payload(uint8_t* into, size_t bytes) {
    read_all(fd.get(), into, bytes, deadline, "fake rank 1: payload");
  }
  // Reads the data frames of `recv_id` into `into`, from byte `from` until at least `until`
  // bytes are in, checking that segments come in order, none longer than a segment. Returns
  // where it stopped (a segment's end).
  size_t get_data(uint32_t recv_id, uint8_t* into, size_t from, size_t until) {
    size_t got = from;
    while (got < until) {
      wire::FrameHeader header = get();
      EXPECT_EQ(header.type, FrameType::kData);
      EXPECT_EQ(header.recv_id, recv_id);
      EXPECT_EQ(header.sent, got) << "segments out of order";
      EXPECT_GT(header.length, 0u);
      EXPECT_LE(header.length, segment_bytes());
      if (header.type != FrameType::kData || header.sent != got) break;
      get_payload(into + got, header.length);
      got += header.length;
    }
    return got;
  }
  // Waits until rank 0 has filled this end's receive buffer: bytes wait unread in it and their
  // count has stopped growing (rank 0 is blocked on a full socket). Returns that count.
  size_t wait_until_socket_full() {
    int last = -1;
    int stable = 0;
    while (!deadline.expired()) {
      int waiting = 0;
      ioctl(fd.get(), FIONREAD, &waiting);
      stable = waiting > 0 && waiting == last ? stable + 1 : 0;
      if (stable == 5) return static_cast<size_t>(waiting);
      last = waiting;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "rank 0 never filled the socket";
    return 0;
  }
  // Waits until what this end wrote has reached rank 0's socket (acknowledged by its kernel),
  // then gives rank 0's event loop a moment to read it.
  void wait_until_delivered() {
    int unacked = 1;
    while (!deadline.expired()) {
      ioctl(fd.get(), SIOCOUTQ, &unacked);
      if (unacked == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(unacked, 0) << "rank 0 never took what rank 1 wrote";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  static size_t segment_bytes() {
    return static_cast<size_t>(knob_int("GLOO_LITE_TCP_SEGMENT_BYTES"));
  }
};

wire::FrameHeader frame(FrameType type) {
  wire::FrameHeader header;
  header.type = type;
  return header;
}

// Rank 0 sends 64 MiB that rank 1 clears but does not read: rank 0's queue and socket fill.
// Rank 1 then announces a message of its own. Rank 0's clear-to-send for it must come well
// before the end of the 64 MiB (before wire version 3 it came after all of it: the two
// directions took turns). Both payloads arrive whole: rank 0's cut into segments in order,
// and rank 1's, cut by hand into odd sizes with an eager message between two of them,
// reassembled by rank 0.
TEST(Framing, ClearToSendOvertakesQueuedPayloadAndSegmentsReassemble) {
  if (not_tcp()) GTEST_SKIP() << "TCP framing";
  FakePeer peer;
  const size_t big = 64 << 20;
  const size_t small = (1 << 20) + 3;
  std::vector<uint8_t> out = make_pattern(0, 1, big, 1);
  std::vector<uint8_t> in(small);
  std::vector<uint8_t> eager_in(100);
  auto out_memory = peer.mesh->register_memory(out.data(), big);
  auto in_memory = peer.mesh->register_memory(in.data(), small);
  auto eager_memory = peer.mesh->register_memory(eager_in.data(), eager_in.size());
  auto send = peer.mesh->send(1, 1, *out_memory, 0, big);
  auto recv = peer.mesh->recv(1, 2, *in_memory, 0, small);
  auto eager = peer.mesh->recv(1, 3, *eager_memory, 0, eager_in.size());

  wire::FrameHeader ready = peer.get();
  ASSERT_EQ(ready.type, FrameType::kReadyToSend);
  ASSERT_EQ(ready.length, big);
  wire::FrameHeader clear = frame(FrameType::kClearToSend);
  clear.send_id = ready.send_id;
  clear.recv_id = 77;
  peer.put(clear);
  ASSERT_GT(peer.wait_until_socket_full(), 0u);  // the rest of the 64 MiB waits queued
  wire::FrameHeader mine = frame(FrameType::kReadyToSend);
  mine.tag = 2;
  mine.length = small;
  mine.send_id = 9;
  peer.put(mine);
  peer.wait_until_delivered();  // rank 0 matches it and queues its clear-to-send

  std::vector<uint8_t> got(big);
  size_t received = 0;
  wire::FrameHeader answer;
  while (true) {
    answer = peer.get();
    if (answer.type != FrameType::kData) break;
    ASSERT_EQ(answer.recv_id, 77u);
    ASSERT_EQ(answer.sent, received);
    ASSERT_LE(answer.length, FakePeer::segment_bytes());
    peer.get_payload(got.data() + received, answer.length);
    received += answer.length;
  }
  ASSERT_EQ(answer.type, FrameType::kClearToSend);
  EXPECT_EQ(answer.send_id, 9u);
  // What was already in the socket buffers and one segment may go first, not the message.
  EXPECT_GT(received, 0u) << "no payload was queued: nothing for the clear-to-send to pass";
  EXPECT_LT(received, big / 2) << "the clear-to-send waited behind the queued payload";
  EXPECT_EQ(peer.get_data(77, got.data(), received, big), big);
  EXPECT_TRUE(got == out) << "payload segments reassembled wrong";

  std::vector<uint8_t> mine_payload = make_pattern(1, 0, small, 2);
  std::vector<uint8_t> eager_payload = make_pattern(1, 0, eager_in.size(), 3);
  const size_t cuts[] = {0, 300001, 300002, small};
  for (int i = 0; i < 3; ++i) {
    wire::FrameHeader data = frame(FrameType::kData);
    data.recv_id = answer.recv_id;
    data.sent = cuts[i];
    data.length = cuts[i + 1] - cuts[i];
    peer.put(data, mine_payload.data() + cuts[i]);
    if (i == 0) {
      wire::FrameHeader message = frame(FrameType::kEager);
      message.tag = 3;
      message.length = eager_payload.size();
      peer.put(message, eager_payload.data());
    }
  }
  peer.mesh->wait({send, recv, eager}, peer.deadline);
  EXPECT_TRUE(in == mine_payload);
  EXPECT_TRUE(eager_in == eager_payload);
}

// Rank 0 queues 16 MiB of eager messages that rank 1 does not read, then rank 1 announces a
// message: the clear-to-send passes the eager messages not yet begun, while those keep their
// order among themselves (the matching order).
TEST(Framing, ClearToSendOvertakesQueuedEagerMessagesWhichKeepTheirOrder) {
  if (not_tcp()) GTEST_SKIP() << "TCP framing";
  FakePeer peer;
  const size_t each = 64 << 10;  // the default eager size: eager
  const int count = 256;
  std::vector<std::vector<uint8_t>> out;
  std::vector<std::unique_ptr<transport::Memory>> memory;
  std::vector<transport::RequestPtr> requests;
  for (int i = 0; i < count; ++i) {
    out.push_back(make_pattern(0, 1, each, 100 + i));
    memory.push_back(peer.mesh->register_memory(out.back().data(), each));
    requests.push_back(peer.mesh->send(1, 1, *memory.back(), 0, each));
  }
  const size_t bytes = 100000;
  std::vector<uint8_t> in(bytes);
  auto in_memory = peer.mesh->register_memory(in.data(), bytes);
  requests.push_back(peer.mesh->recv(1, 2, *in_memory, 0, bytes));
  ASSERT_GT(peer.wait_until_socket_full(), 0u);  // the other eager messages wait queued
  wire::FrameHeader mine = frame(FrameType::kReadyToSend);
  mine.tag = 2;
  mine.length = bytes;
  mine.send_id = 3;
  peer.put(mine);
  peer.wait_until_delivered();  // rank 0 matches it and queues its clear-to-send

  int before = -1;
  uint32_t recv_id = 0;
  std::vector<uint8_t> got(each);
  for (int i = 0; i < count;) {
    wire::FrameHeader header = peer.get();
    if (header.type == FrameType::kClearToSend) {
      EXPECT_EQ(header.send_id, 3u);
      before = i;
      recv_id = header.recv_id;
      continue;
    }
    ASSERT_EQ(header.type, FrameType::kEager);
    ASSERT_EQ(header.length, each);
    peer.get_payload(got.data(), each);
    EXPECT_TRUE(got == out[static_cast<size_t>(i)]) << "eager message " << i << " out of order";
    ++i;
  }
  ASSERT_GE(before, 0) << "no clear-to-send";
  EXPECT_GT(before, 0) << "no eager message was queued: nothing for the clear-to-send to pass";
  EXPECT_LT(before, count / 2) << "the clear-to-send waited behind the queued eager messages";
  std::vector<uint8_t> payload = make_pattern(1, 0, bytes, 4);
  wire::FrameHeader data = frame(FrameType::kData);
  data.recv_id = recv_id;
  data.length = bytes;
  peer.put(data, payload.data());
  peer.mesh->wait(requests, peer.deadline);
  EXPECT_TRUE(in == payload);
}

// A message above GLOO_LITE_TCP_EAGER_BYTES (64 KiB) and within
// GLOO_LITE_TCP_EAGER_BYTES_ACROSS_HOSTS (256 KiB) goes eagerly to a peer on another host (its
// address differs from rank 0's), and by rendezvous (a ready-to-send first) to one on this
// host: across hosts the round trip costs more than buffering.
TEST(Framing, MessagesUpToTheAcrossHostsBoundGoEagerlyOnlyToOtherHosts) {
  if (not_tcp()) GTEST_SKIP() << "TCP framing";
  ScopedEnv eager("GLOO_LITE_TCP_EAGER_BYTES", "65536");
  ScopedEnv across("GLOO_LITE_TCP_EAGER_BYTES_ACROSS_HOSTS", "262144");
  const size_t bytes = 200000;
  for (const char* source : {"127.0.0.2", static_cast<const char*>(nullptr)}) {
    FakePeer peer(source);
    std::vector<uint8_t> out = make_pattern(0, 1, bytes, 7);
    auto memory = peer.mesh->register_memory(out.data(), bytes);
    transport::RequestPtr request = peer.mesh->send(1, 5, *memory, 0, bytes);
    wire::FrameHeader header = peer.get();
    EXPECT_EQ(header.length, bytes);
    if (source != nullptr) {
      ASSERT_EQ(header.type, FrameType::kEager) << "to another host";
      std::vector<uint8_t> got(bytes);
      peer.get_payload(got.data(), bytes);
      EXPECT_TRUE(got == out);
    } else {
      ASSERT_EQ(header.type, FrameType::kReadyToSend) << "to this host";
      wire::FrameHeader clear = frame(FrameType::kClearToSend);
      clear.send_id = header.send_id;
      clear.recv_id = 9;
      peer.put(clear);
      std::vector<uint8_t> got(bytes);
      EXPECT_EQ(peer.get_data(9, got.data(), 0, bytes), bytes);
      EXPECT_TRUE(got == out);
    }
    peer.mesh->wait({request}, peer.deadline);
  }
}

// Data that would land beyond the receive's buffer fails the pair as a protocol error, naming
// the peer, and writes nothing out of bounds.
TEST(Framing, DataBeyondTheReceiveIsAProtocolError) {
  if (not_tcp()) GTEST_SKIP() << "TCP framing";
  FakePeer peer;
  const size_t bytes = 100000;
  std::vector<uint8_t> in(bytes + 64, 0);
  auto in_memory = peer.mesh->register_memory(in.data(), bytes);
  auto recv = peer.mesh->recv(1, 2, *in_memory, 0, bytes);
  wire::FrameHeader ready = frame(FrameType::kReadyToSend);
  ready.tag = 2;
  ready.length = bytes;
  ready.send_id = 4;
  peer.put(ready);
  wire::FrameHeader clear = peer.get();
  ASSERT_EQ(clear.type, FrameType::kClearToSend);
  std::vector<uint8_t> payload(100, 0xAB);
  wire::FrameHeader data = frame(FrameType::kData);
  data.recv_id = clear.recv_id;
  data.sent = bytes - 36;
  data.length = payload.size();
  peer.put(data, payload.data());
  try {
    peer.mesh->wait({recv}, peer.deadline);
    ADD_FAILURE() << "the receive completed";
  } catch (const ConnectionError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("protocol error"), std::string::npos) << what;
    EXPECT_NE(what.find("rank 1"), std::string::npos) << what;
  }
  EXPECT_EQ(in[bytes - 36], 0);
  EXPECT_EQ(in[bytes], 0);
}

// A send whose wait timed out after its first segments left: the rest goes from a copy, so the
// receiver that cleared it gets every byte (its stream stays framed) and the caller may reuse
// its buffer at once.
TEST(Framing, SendCancelledMidPayloadStillSendsEveryByte) {
  if (not_tcp()) GTEST_SKIP() << "TCP framing";
  FakePeer peer;
  const size_t big = 32 << 20;
  std::vector<uint8_t> out = make_pattern(0, 1, big, 5);
  const std::vector<uint8_t> expected = out;
  auto out_memory = peer.mesh->register_memory(out.data(), big);
  auto send = peer.mesh->send(1, 1, *out_memory, 0, big);
  wire::FrameHeader ready = peer.get();
  ASSERT_EQ(ready.type, FrameType::kReadyToSend);
  wire::FrameHeader clear = frame(FrameType::kClearToSend);
  clear.send_id = ready.send_id;
  clear.recv_id = 5;
  peer.put(clear);
  std::vector<uint8_t> got(big);
  size_t first = std::min(big / 8, 4 * FakePeer::segment_bytes());
  first = peer.get_data(5, got.data(), 0, first);
  EXPECT_THROW(peer.mesh->wait({send}, Deadline::after(std::chrono::milliseconds(100))),
               TimeoutError);
  std::fill(out.begin(), out.end(), 0);  // the caller's buffer is its own again
  EXPECT_EQ(peer.get_data(5, got.data(), first, big), big);
  EXPECT_TRUE(got == expected);
}

// A send cancelled after its receiver cleared it but before any of its payload left (it waited
// behind another payload on the same pair): it still goes, from a copy. Dropping it left the
// receiver, which waits for every byte it cleared, waiting until its own timeout.
TEST(Framing, SendCancelledBeforeItsPayloadBeganStillSendsEveryByte) {
  if (not_tcp()) GTEST_SKIP() << "TCP framing";
  FakePeer peer;
  const size_t first = 8 << 20, second = 1 << 20;
  std::vector<uint8_t> a = make_pattern(0, 1, first, 6), b = make_pattern(0, 1, second, 7);
  const std::vector<uint8_t> expected_b = b;
  auto a_memory = peer.mesh->register_memory(a.data(), first);
  auto b_memory = peer.mesh->register_memory(b.data(), second);
  auto send_a = peer.mesh->send(1, 1, *a_memory, 0, first);
  auto send_b = peer.mesh->send(1, 2, *b_memory, 0, second);
  wire::FrameHeader ready_a = peer.get(), ready_b = peer.get();
  ASSERT_EQ(ready_a.type, FrameType::kReadyToSend);
  ASSERT_EQ(ready_b.type, FrameType::kReadyToSend);
  ASSERT_EQ(ready_b.length, second);
  wire::FrameHeader clear = frame(FrameType::kClearToSend);
  clear.send_id = ready_a.send_id;
  clear.recv_id = 1;
  peer.put(clear);
  ASSERT_GT(peer.wait_until_socket_full(), 0u);  // a's payload waits queued
  clear.send_id = ready_b.send_id;
  clear.recv_id = 2;
  peer.put(clear);
  peer.wait_until_delivered();  // b's payload is queued behind a's, untouched
  EXPECT_THROW(peer.mesh->wait({send_b}, Deadline::after(std::chrono::milliseconds(100))),
               TimeoutError);
  std::fill(b.begin(), b.end(), 0);  // the caller's buffer is its own again
  std::vector<uint8_t> got_a(first), got_b(second);
  EXPECT_EQ(peer.get_data(1, got_a.data(), 0, first), first);
  EXPECT_EQ(peer.get_data(2, got_b.data(), 0, second), second);
  EXPECT_TRUE(got_a == a);
  EXPECT_TRUE(got_b == expected_b);
  peer.mesh->wait({send_a}, peer.deadline);
}

// An abort while a large payload is queued: the payload stops at the end of its current segment
// and the abort's reason comes next. Before, every remaining segment went ahead of it (seconds
// on a slow link), and the abort's 100 ms flush ran out with the reason still queued.
TEST(Framing, AbortGoesAheadOfTheRestOfAQueuedPayload) {
  if (not_tcp()) GTEST_SKIP() << "TCP framing";
  FakePeer peer;
  const size_t big = 256 << 20;
  std::vector<uint8_t> out(big, 0x5a);
  auto out_memory = peer.mesh->register_memory(out.data(), big);
  auto send = peer.mesh->send(1, 1, *out_memory, 0, big);
  wire::FrameHeader ready = peer.get();
  ASSERT_EQ(ready.type, FrameType::kReadyToSend);
  wire::FrameHeader clear = frame(FrameType::kClearToSend);
  clear.send_id = ready.send_id;
  clear.recv_id = 8;
  peer.put(clear);
  ASSERT_GT(peer.wait_until_socket_full(), 0u);
  // Rank 1 reads while rank 0 aborts (the abort waits up to 100 ms for its reason to leave).
  size_t before_abort = 0;
  std::string reason;
  // ASSERTs inside return from the lambda only: its failures still fail the test.
  auto read_until_abort = [&] {
    std::vector<uint8_t> sink(FakePeer::segment_bytes());
    while (true) {
      wire::FrameHeader header = peer.get();
      if (header.type == FrameType::kAbort) {
        reason.resize(header.length);
        peer.get_payload(reinterpret_cast<uint8_t*>(&reason[0]), header.length);
        return;
      }
      ASSERT_EQ(header.type, FrameType::kData);
      ASSERT_EQ(header.sent, before_abort);
      peer.get_payload(sink.data(), header.length);
      before_abort += header.length;
    }
  };
  std::thread reader([&] {
    try {
      read_until_abort();
    } catch (const Error& e) {
      ADD_FAILURE() << "no abort frame: " << e.what();
    }
  });
  peer.mesh->abort("test abort reason");
  reader.join();
  EXPECT_EQ(reason, "test abort reason");
  EXPECT_LT(before_abort, big / 2) << "the abort waited behind the queued payload";
  EXPECT_THROW(peer.mesh->wait({send}, peer.deadline), ConnectionError);
}

}  // namespace
}  // namespace gloo_lite::test
