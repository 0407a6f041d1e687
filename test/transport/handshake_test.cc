// Strangers on our port: garbage, a rank of another job, an idle connection. Each is rejected
// and logged, and the rendezvous still completes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "gloo_lite/base/socket.h"
#include "rendezvous/stores.h"
#include "test/transport/harness.h"
#include "transport_tcp/wire.h"

namespace gloo_lite::test {
namespace {

TEST(Handshake, StrangersMidRendezvousAreRejectedAndRendezvousCompletes) {
  const char* transport = std::getenv("GLOO_LITE_TEST_TRANSPORT");
  if (transport != nullptr && std::string(transport) == "shm") {
    GTEST_SKIP() << "a stranger on a TCP port; shm has no port (test/shm/ rejects stale and "
                    "foreign segments instead)";
  }
  TempDir directory;
  auto results = run_processes(
      3,
      [&](int index) {
        auto store = make_file_store(directory.path());
        auto deadline = Deadline::after(std::chrono::seconds(30));
        if (index == 2) {
          // The stranger: learns rank 0's address from the store, then misbehaves three ways.
          std::istringstream record(to_string(store->get("gloo_lite/ctx/1/addr/0", deadline)));
          uint64_t context_id = 0;
          std::string address;
          record >> context_id >> address;
          SocketAddress target = SocketAddress::parse(address);
          Fd garbage = connect_tcp(target, deadline, "stranger");
          std::vector<uint8_t> noise(1000);
          for (size_t i = 0; i < noise.size(); ++i) noise[i] = static_cast<uint8_t>(i * 37 + 11);
          write_all(garbage.get(), noise.data(), noise.size(), deadline, "stranger");
          Fd other_job = connect_tcp(target, deadline, "stranger");
          tcp::wire::Hello hello;
          hello.context_id = context_id + 1;
          hello.src_rank = 1;
          hello.dst_rank = 0;
          hello.size = 2;
          uint8_t bytes[tcp::wire::kHelloBytes];
          tcp::wire::encode_hello(hello, bytes);
          write_all(other_job.get(), bytes, sizeof(bytes), deadline, "stranger");
          Fd idle = connect_tcp(target, deadline, "stranger");
          store->set("stranger_done", to_bytes("1"));
          sleep(3);
          return;
        }
        if (index == 1) store->get("stranger_done", deadline);
        auto context = Context::create(store, index, 2, loopback_device());
        std::vector<uint8_t> data = make_pattern(0, 1, 70000, 1);
        if (index == 0) {
          context->send(1, data.data(), data.size(), 1);
        } else {
          std::vector<uint8_t> in(data.size());
          context->recv(0, in.data(), in.size(), 1);
          EXPECT_EQ(in, data);
        }
      },
      std::chrono::seconds(60));
  expect_all_ok(results);
}

TEST(Handshake, WireHeadersAreLittleEndianWhateverTheHost) {
  tcp::wire::Hello hello;
  hello.context_id = 0x0102030405060708ull;
  hello.src_rank = 0x0A0B0C0D;
  uint8_t bytes[tcp::wire::kHelloBytes];
  tcp::wire::encode_hello(hello, bytes);
  EXPECT_EQ(bytes[0], 0x47);  // 'G' of the magic, least significant byte first
  EXPECT_EQ(bytes[8], 0x08);
  EXPECT_EQ(bytes[15], 0x01);
  EXPECT_EQ(bytes[16], 0x0D);
  tcp::wire::Hello decoded = tcp::wire::decode_hello(bytes);
  EXPECT_EQ(decoded.context_id, hello.context_id);
  EXPECT_EQ(decoded.src_rank, hello.src_rank);

  // Every field at its documented offset (docs/wire-format.md), least significant byte first.
  tcp::wire::FrameHeader header;
  header.type = tcp::wire::FrameType::kReadyToSend;
  header.error = 3;
  header.send_id = 0x11121314;
  header.recv_id = 0x21222324;
  header.tag = 0x3132333435363738ull;
  header.length = 1ull << 40;
  header.fingerprint = 0x4142434445464748ull;
  header.sent = 0x5152535455565758ull;
  uint8_t frame[tcp::wire::kHeaderBytes];
  tcp::wire::encode_header(header, frame);
  EXPECT_EQ(frame[0], 2);
  EXPECT_EQ(frame[2], 3);
  EXPECT_EQ(frame[4], 0x14);
  EXPECT_EQ(frame[8], 0x24);
  EXPECT_EQ(frame[16], 0x38);
  EXPECT_EQ(frame[29], 0x01);  // bit 40 of the length
  EXPECT_EQ(frame[32], 0x48);
  EXPECT_EQ(frame[47], 0x51);
  tcp::wire::FrameHeader back;
  ASSERT_TRUE(tcp::wire::decode_header(frame, &back));
  EXPECT_EQ(back.type, header.type);
  EXPECT_EQ(back.error, header.error);
  EXPECT_EQ(back.send_id, header.send_id);
  EXPECT_EQ(back.recv_id, header.recv_id);
  EXPECT_EQ(back.tag, header.tag);
  EXPECT_EQ(back.length, header.length);
  EXPECT_EQ(back.fingerprint, header.fingerprint);
  EXPECT_EQ(back.sent, header.sent);
  frame[0] = 0x77;
  EXPECT_FALSE(tcp::wire::decode_header(frame, &back));
}

}  // namespace
}  // namespace gloo_lite::test
