// TLS for the TCP transport and the TCP store (base/tls.h, docs/security.md), with real processes
// and sockets on loopback and certificates made at test time by the `openssl` command: a CA,
// one certificate per rank, and an intruder's certificate from a second CA. A job over TLS gets
// the right allreduce and nothing readable on the wire; a peer without the CA's certificate, a
// plaintext client on a TLS port and a TLS client on a plain port are refused, logged once with
// their address, and the job goes on.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "gloo_lite/base/error.h"
#include "gloo_lite/base/socket.h"
#include "gloo_lite/base/tls.h"
#include "gloo_lite/collectives.h"
#include "gloo_lite/context.h"
#include "rendezvous/stores.h"
#include "test/security/security_support.h"
#include "test/support/test_support.h"
#include "transport_tcp/wire.h"

namespace gloo_lite::test {
namespace {

using std::chrono::seconds;

constexpr uint64_t kContextId = 0x7150000000c0ffeeull;
// What the payloads are made of: findable in a capture of the wire if it were plaintext.
constexpr const char* kCanary = "GLOO-LITE-PLAINTEXT-CANARY-0123456789-";

// The certificates, made once per test process (a few ms each with P-256 keys).
class Certs {
 public:
  static const Certs& get() {
    static Certs certs;
    return certs;
  }
  std::string path(const std::string& name) const { return dir_.path() + "/" + name; }

 private:
  Certs() {
    make_ca("ca");
    make_ca("wrong-ca");
    for (const char* who : {"rank0", "rank1", "rank2", "rank3"}) make_cert(who, "ca");
    make_cert("intruder", "wrong-ca");
  }
  void run(const std::string& command) const {
    std::string line = "cd '" + dir_.path() + "' && " + command + " > openssl.log 2>&1";
    if (std::system(line.c_str()) != 0) {
      throw std::runtime_error("openssl failed: " + command + "\n" +
                               read_whole_file(path("openssl.log")));
    }
  }
  void make_ca(const std::string& name) const {
    run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 "
        "-subj /CN=" +
        name + " -keyout " + name + ".key -out " + name + ".pem");
  }
  void make_cert(const std::string& name, const std::string& ca) const {
    run("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=" + name +
        " -keyout " + name + ".key -out " + name + ".csr && openssl x509 -req -days 2 -in " + name +
        ".csr -CA " + ca + ".pem -CAkey " + ca + ".key -CAcreateserial -out " + name + ".pem");
  }
  TempDir dir_;
};

// This process speaks TLS as `who` (a certificate and its key), trusting the CA `ca`, until
// destruction.
class TlsAs {
 public:
  explicit TlsAs(const std::string& who, const std::string& ca = "ca")
      : cert_("GLOO_LITE_TLS_CERT", Certs::get().path(who + ".pem").c_str()),
        key_("GLOO_LITE_TLS_KEY", Certs::get().path(who + ".key").c_str()),
        ca_("GLOO_LITE_TLS_CA", Certs::get().path(ca + ".pem").c_str()) {}

 private:
  ScopedEnv cert_, key_, ca_;
};

bool contains(const Bytes& haystack, const std::string& needle) {
  return std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end()) !=
         haystack.end();
}

Bytes canary_payload(size_t bytes) {
  Bytes data(bytes);
  const size_t n = std::strlen(kCanary);
  for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<uint8_t>(kCanary[i % n]);
  return data;
}

void write_file(const std::string& path, const Bytes& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

Bytes read_bytes(const std::string& path) {
  std::string text = read_whole_file(path);
  return Bytes(text.begin(), text.end());
}

std::string log_path(const TempDir& dir, int rank) {
  return dir.path() + "/rank" + std::to_string(rank) + ".log";
}

// ---- the transport -------------------------------------------------------------------------

// A real rank of a 2-rank mesh (over TLS as "rank<n>" when `tls`), its stderr into `log`:
// publishes its address under "real/<rank>"; rank 1 waits for `gate`, then dials rank 0 at the
// address in `dial_key` (rank 0's own, or a relay's) and the ranks swap a canary payload of
// 300 kB (rendezvous frames, read straight into the receive buffer) and one of 100 bytes (an
// eager frame) each way.
void mesh_rank(int rank, bool tls, const std::string& store_dir, const std::string& log,
               const std::string& gate, const std::string& dial_key) {
  StderrToFile to_log(log);
  std::unique_ptr<TlsAs> as =
      tls ? std::make_unique<TlsAs>("rank" + std::to_string(rank)) : nullptr;
  auto store = make_file_store(store_dir);
  auto deadline = Deadline::after(seconds(30));
  auto device = tcp_loopback_device();  // its event loop serves the mesh: keep it
  auto mesh = device->create_mesh(rank, 2, transport::MeshOptions{});
  store->set("real/" + std::to_string(rank), to_bytes(mesh->address()));
  std::vector<std::string> addresses(2);
  addresses[0] = to_string(store->get(rank == 1 ? dial_key : "real/0", deadline));
  addresses[1] = to_string(store->get("real/1", deadline));
  if (rank == 1) store->get(gate, deadline);
  mesh->connect(addresses, kContextId, deadline);
  for (size_t bytes : {size_t{300000}, size_t{100}}) {
    Bytes out = canary_payload(bytes), in(bytes);
    auto out_memory = mesh->register_memory(out.data(), out.size());
    auto in_memory = mesh->register_memory(in.data(), in.size());
    int peer = 1 - rank;
    mesh->wait({mesh->send(peer, 3, *out_memory, 0, out.size()),
                mesh->recv(peer, 3, *in_memory, 0, in.size())},
               deadline);
    EXPECT_EQ(in, out);
  }
}

// Runs the two ranks with rank 1 dialling rank 0 through a recording relay; returns what the
// relay saw each way (to rank 0, to rank 1).
std::pair<Bytes, Bytes> transfer_through_relay(bool tls) {
  Certs::get();  // made before the ranks fork, so that they share the CA
  TempDir store_dir, logs;
  auto results = run_processes(
      3,
      [&](int index) {
        if (index < 2) {
          return mesh_rank(index, tls, store_dir.path(), log_path(logs, index), "gate", "relay");
        }
        auto store = make_file_store(store_dir.path());
        auto deadline = Deadline::after(seconds(30));
        SocketAddress rank0 = SocketAddress::parse(to_string(store->get("real/0", deadline)));
        RecordingRelay relay(rank0.port());
        store->set("relay", to_bytes("127.0.0.1:" + std::to_string(relay.port())));
        store->set("gate", to_bytes("1"));
        auto seen = relay.finish();
        write_file(store_dir.path() + "/to-rank0", seen.first);
        write_file(store_dir.path() + "/to-rank1", seen.second);
      },
      seconds(60));
  expect_all_ok(results);
  return {read_bytes(store_dir.path() + "/to-rank0"), read_bytes(store_dir.path() + "/to-rank1")};
}

TEST(Tls, BytesOnTheWireAreNotPlaintext) {
  // The control: without TLS the relay sees the payloads.
  auto plain = transfer_through_relay(false);
  EXPECT_TRUE(contains(plain.first, kCanary));
  EXPECT_TRUE(contains(plain.second, kCanary));
  auto tls = transfer_through_relay(true);
  // Over TLS: the 300 kB each way went through, none of it readable, starting with a TLS
  // handshake record.
  EXPECT_GT(tls.first.size(), 300100u);
  EXPECT_GT(tls.second.size(), 300100u);
  EXPECT_FALSE(contains(tls.first, kCanary));
  EXPECT_FALSE(contains(tls.second, kCanary));
  ASSERT_GE(tls.first.size(), 3u);
  EXPECT_TRUE(tls::looks_like_tls(tls.first.data()));
  // Not even the hello shows (its magic, little-endian).
  uint8_t magic[4];
  put_u32(magic, tcp::wire::kMagic);
  const std::string hello_magic(reinterpret_cast<char*>(magic), 4);
  EXPECT_TRUE(contains(plain.first, hello_magic));
  EXPECT_FALSE(contains(tls.first, hello_magic));
}

// A job of `ranks` processes over TLS (and the secret, when `secret`), each with its own
// certificate, on a TCP store served over TLS by a process of its own: allreduces of 1000 and
// of 300000 floats match the sum computed here. The store is not a thread of this process:
// forking the ranks beside a thread that may hold an allocator lock (ASan's has no fork handler
// for it) left a rank deadlocked in its first malloc, 4 runs in 13 under ASan.
void allreduce_job(int ranks, bool secret) {
  Certs::get();
  std::unique_ptr<ScopedEnv> with_secret =
      secret ? std::make_unique<ScopedEnv>("GLOO_LITE_AUTH_SECRET", kSecret) : nullptr;
  TempDir logs, gate_dir;
  auto results = run_processes(
      ranks + 1,
      [&](int index) {
        auto gate = make_file_store(gate_dir.path());
        auto deadline = Deadline::after(seconds(50));
        if (index == ranks) {  // the store, until every rank is done
          TlsAs as("rank0");
          TcpStoreServer server(SocketAddress::resolve("127.0.0.1", 0));
          gate->set("port", to_bytes(std::to_string(server.port())));
          for (int r = 0; r < ranks; ++r) gate->get("done/" + std::to_string(r), deadline);
          return;
        }
        const int rank = index;
        StderrToFile to_log(log_path(logs, rank));
        TlsAs as("rank" + std::to_string(rank));
        auto port = static_cast<uint16_t>(std::stoi(to_string(gate->get("port", deadline))));
        auto store = make_tcp_store("127.0.0.1", port, Deadline::after(seconds(20)));
        auto context = Context::create(store, rank, ranks, tcp_loopback_device());
        for (size_t count : {size_t{1000}, size_t{300000}}) {
          std::vector<float> data(count), expected(count, 0.0f);
          for (size_t i = 0; i < count; ++i) {
            data[i] = static_cast<float>((i % 97) * (rank + 1));
            for (int r = 0; r < ranks; ++r) expected[i] += static_cast<float>((i % 97) * (r + 1));
          }
          allreduce(*context, data);
          EXPECT_EQ(data, expected) << count << " floats";
        }
        context.reset();
        gate->set("done/" + std::to_string(rank), to_bytes("1"));
      },
      seconds(60));
  expect_all_ok(results);
  for (int rank = 0; rank < ranks; ++rank) {
    std::string log = read_whole_file(log_path(logs, rank));
    EXPECT_EQ(log.find("rejected"), std::string::npos) << log;
    EXPECT_EQ(log.find(kSecret), std::string::npos) << log;
  }
}

TEST(Tls, AllreduceOfFourRanksMatchesTheReference) { allreduce_job(4, false); }

TEST(Tls, SecretAndTlsTogether) { allreduce_job(3, true); }

// Whether the other end closed the connection before `deadline`, after whatever it sent.
bool closed_by_peer(int fd, const Deadline& deadline) {
  uint8_t buffer[4096];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, deadline.poll_timeout_ms()) == 0) return false;
    ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
    if (n < 0) return false;
  }
}

// A TLS client as `who` trusting `ca`: its handshake with the server at `address` (it may
// finish here and still be refused there: the server verifies last). Returns the local address.
std::string tls_intruder(const SocketAddress& address, const std::string& who,
                         const std::string& ca) {
  auto deadline = Deadline::after(seconds(10));
  Fd fd = connect_tcp(address, deadline, "intruder");
  std::string local = SocketAddress::local_of(fd.get()).to_string();
  tls::Context context(Certs::get().path(who + ".pem"), Certs::get().path(who + ".key"),
                       Certs::get().path(ca + ".pem"));
  tls::Channel channel(context, fd.get(), tls::Role::kClient, "the listener");
  bool refused = false;
  try {
    channel.handshake(deadline, "intruder");
    // Its certificate is judged now: the listener refuses, so nothing can be read.
    uint8_t byte;
    channel.read_all(&byte, 1, deadline, "intruder");
  } catch (const ConnectionError&) {
    refused = true;
  }
  EXPECT_TRUE(refused) << who << " trusting " << ca << " was not refused";
  return local;
}

// Connects and sends `bytes` in the clear; expects the other end to close. Returns the local
// address.
std::string plaintext_intruder(const SocketAddress& address, const Bytes& bytes) {
  auto deadline = Deadline::after(seconds(10));
  Fd fd = connect_tcp(address, deadline, "intruder");
  std::string local = SocketAddress::local_of(fd.get()).to_string();
  write_all(fd.get(), bytes.data(), bytes.size(), deadline, "intruder");
  EXPECT_TRUE(closed_by_peer(fd.get(), deadline)) << "a plaintext client was not refused";
  return local;
}

Bytes hello_as_rank_one(uint64_t context_id) {
  tcp::wire::Hello hello;
  hello.context_id = context_id;
  hello.src_rank = 1;
  hello.dst_rank = 0;
  hello.size = 2;
  Bytes bytes(tcp::wire::kHelloBytes);
  tcp::wire::encode_hello(hello, bytes.data());
  return bytes;
}

// Rank 0 over TLS (a real mesh) sends rendezvous payloads to a hand-played rank 1 that clears
// them and stops reading, so that rank 0 blocks on a full socket, often with the next segment
// encrypted by the channel but not yet taken by the socket; then rank 1 announces a message of
// its own, and rank 0's clear-to-send must overtake the queued payload. The channel offers
// again, from the same front, what it encrypted: a clear-to-send inserted ahead of those bytes
// was counted sent but never went, and they went twice (the stream corrupt: a wrong header,
// wrong data or a hang). Small segments make a stop at a segment's start likely; several
// rounds make it near certain.
TEST(Tls, ClearToSendOvertakesAPayloadTheChannelEncryptedAhead) {
  TlsAs as("rank0");
  const int buffer = 128 << 10;
  ScopedEnv socket_buffer("GLOO_LITE_TCP_SOCKET_BUFFER", std::to_string(buffer).c_str());
  ScopedEnv segment("GLOO_LITE_TCP_SEGMENT_BYTES", "16384");
  const size_t segment_bytes = 16384;
  auto deadline = Deadline::after(seconds(60));
  auto device = tcp_loopback_device();
  auto mesh = device->create_mesh(0, 2, transport::MeshOptions{});
  const uint64_t context_id = 0x7150000000aa0001ull;
  std::thread connector([&] {
    mesh->connect({mesh->address(), "127.0.0.1:9"}, context_id, deadline);
  });
  Fd fd = connect_tcp(SocketAddress::parse(mesh->address()), deadline, "fake rank 1");
  setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &buffer, sizeof(buffer));
  auto context = tls::configured_context();
  ASSERT_TRUE(context);
  tls::Channel channel(*context, fd.get(), tls::Role::kClient, "rank 0");
  channel.handshake(deadline, "fake rank 1");
  Bytes hello = hello_as_rank_one(context_id);
  channel.write_all(hello.data(), hello.size(), deadline, "fake rank 1: hello");
  channel.read_all(hello.data(), hello.size(), deadline, "fake rank 1: hello-ack");
  connector.join();
  ASSERT_EQ(tcp::wire::decode_hello(hello.data()).kind, tcp::wire::kHelloAck);

  namespace wire = tcp::wire;
  auto put = [&](const wire::FrameHeader& header, const uint8_t* payload) {
    uint8_t bytes[wire::kHeaderBytes];
    wire::encode_header(header, bytes);
    channel.write_all(bytes, sizeof(bytes), deadline, "fake rank 1: header");
    if (payload != nullptr) channel.write_all(payload, header.length, deadline, "fake rank 1");
  };
  auto get = [&] {
    uint8_t bytes[wire::kHeaderBytes];
    channel.read_all(bytes, sizeof(bytes), deadline, "fake rank 1: header");
    wire::FrameHeader header;
    EXPECT_TRUE(wire::decode_header(bytes, &header)) << "a corrupt frame header";
    return header;
  };
  for (uint32_t round = 0; round < 8; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const size_t big = 4 << 20;
    const size_t small = 100000;
    Bytes out = canary_payload(big);
    for (size_t i = 0; i < big; i += 4093) out[i] = static_cast<uint8_t>(i / 4093 + round);
    Bytes in(small);
    auto out_memory = mesh->register_memory(out.data(), big);
    auto in_memory = mesh->register_memory(in.data(), small);
    auto send = mesh->send(1, 10 + round, *out_memory, 0, big);
    auto recv = mesh->recv(1, 100 + round, *in_memory, 0, small);
    wire::FrameHeader ready = get();
    ASSERT_EQ(ready.type, wire::FrameType::kReadyToSend);
    wire::FrameHeader clear;
    clear.type = wire::FrameType::kClearToSend;
    clear.send_id = ready.send_id;
    clear.recv_id = 50 + round;
    put(clear, nullptr);
    // Until rank 0 is blocked on the full socket: bytes wait unread and stop growing.
    int last = -1, stable = 0;
    while (stable < 5 && !deadline.expired()) {
      int waiting = 0;
      ioctl(fd.get(), FIONREAD, &waiting);
      stable = waiting > 0 && waiting == last ? stable + 1 : 0;
      last = waiting;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    wire::FrameHeader mine;
    mine.type = wire::FrameType::kReadyToSend;
    mine.tag = 100 + round;
    mine.length = small;
    mine.send_id = 70 + round;
    put(mine, nullptr);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // rank 0 queues its answer

    Bytes got(big);
    size_t received = 0;
    uint32_t cleared = 0;
    bool answered = false;
    size_t before_answer = 0;
    while (received < big || !answered) {
      wire::FrameHeader header = get();
      if (header.type == wire::FrameType::kClearToSend) {
        ASSERT_FALSE(answered) << "two clear-to-sends";
        ASSERT_EQ(header.send_id, 70 + round);
        cleared = header.recv_id;
        answered = true;
        before_answer = received;
        continue;
      }
      ASSERT_EQ(header.type, wire::FrameType::kData) << "after " << received << " bytes";
      ASSERT_EQ(header.recv_id, 50 + round);
      ASSERT_EQ(header.sent, received) << "segments out of order or repeated";
      ASSERT_LE(header.length, segment_bytes);
      channel.read_all(got.data() + received, header.length, deadline, "fake rank 1: data");
      received += header.length;
    }
    EXPECT_GT(before_answer, 0u) << "no payload was queued";
    EXPECT_LT(before_answer, big / 2) << "the clear-to-send waited behind the queued payload";
    EXPECT_TRUE(got == out) << "the payload arrived wrong";
    Bytes mine_payload = canary_payload(small);
    mine_payload[0] = static_cast<uint8_t>(round);
    wire::FrameHeader data;
    data.type = wire::FrameType::kData;
    data.recv_id = cleared;
    data.length = small;
    put(data, mine_payload.data());
    mesh->wait({send, recv}, deadline);
    EXPECT_EQ(in, mine_payload);
  }
}

TEST(Tls, TransportRefusesPeersWithoutTheCasCertificateAndTheJobGoesOn) {
  Certs::get();
  TempDir store_dir, logs;
  auto results = run_processes(
      3,
      [&](int index) {
        if (index < 2) {
          return mesh_rank(index, true, store_dir.path(), log_path(logs, index), "done", "real/0");
        }
        auto store = make_file_store(store_dir.path());
        SocketAddress rank0 =
            SocketAddress::parse(to_string(store->get("real/0", Deadline::after(seconds(30)))));
        // A client that connects and says nothing: its handshake never finishes, and nobody
        // waits for it.
        Fd silent = connect_tcp(rank0, Deadline::after(seconds(10)), "silent client");
        std::string refused;
        // Another CA's certificate, trusting that CA: it refuses rank 0, which hears why.
        refused += tls_intruder(rank0, "intruder", "wrong-ca") + " ";
        // Another CA's certificate, trusting the job's CA: rank 0 refuses it.
        refused += tls_intruder(rank0, "intruder", "ca") + " ";
        // A plaintext rank 1 hello, and garbage.
        refused += plaintext_intruder(rank0, hello_as_rank_one(kContextId)) + " ";
        refused += plaintext_intruder(rank0, to_bytes("GET / HTTP/1.0\r\n\r\n"));
        store->set("refused", to_bytes(refused));
        store->set("done", to_bytes("1"));  // now the real rank 1 dials
      },
      seconds(60));
  expect_all_ok(results);
  std::string log0 = read_whole_file(log_path(logs, 0));
  std::istringstream refused(
      to_string(make_file_store(store_dir.path())->get("refused", Deadline::after(seconds(5)))));
  for (std::string address; refused >> address;) {
    EXPECT_EQ(
        count_of(log0, "rejected a connection from " + address + ": its TLS handshake failed"), 1u)
        << address << " in:\n"
        << log0;
  }
  EXPECT_EQ(count_of(log0, "rejected a connection"), 4u) << log0;
}

TEST(Tls, TransportRefusesATlsClientOnAPlainPort) {
  Certs::get();
  TempDir store_dir, logs;
  auto results = run_processes(
      3,
      [&](int index) {
        if (index < 2) {
          return mesh_rank(index, false, store_dir.path(), log_path(logs, index), "done", "real/0");
        }
        auto store = make_file_store(store_dir.path());
        SocketAddress rank0 =
            SocketAddress::parse(to_string(store->get("real/0", Deadline::after(seconds(30)))));
        store->set("refused", to_bytes(tls_intruder(rank0, "rank1", "ca")));
        store->set("done", to_bytes("1"));
      },
      seconds(60));
  expect_all_ok(results);
  std::string log0 = read_whole_file(log_path(logs, 0));
  std::string address =
      to_string(make_file_store(store_dir.path())->get("refused", Deadline::after(seconds(5))));
  EXPECT_EQ(count_of(log0, "rejected a connection from " + address +
                               ": a TLS handshake on this rank's plain TCP port"),
            1u)
      << log0;
  EXPECT_EQ(count_of(log0, "rejected a connection"), 1u) << log0;
}

// ---- the store -----------------------------------------------------------------------------

// A TCP store server over TLS (as rank0), its log in a file.
struct TlsServer {
  TempDir dir;
  std::string log = dir.path() + "/server.log";
  std::unique_ptr<StderrToFile> to_log = std::make_unique<StderrToFile>(log);
  std::unique_ptr<TcpStoreServer> server;
  TlsServer() {
    TlsAs as("rank0");
    server = std::make_unique<TcpStoreServer>(SocketAddress::resolve("127.0.0.1", 0));
  }
  SocketAddress address() const { return SocketAddress::resolve("127.0.0.1", server->port()); }
  // The log once `count` lines contain `what` (the server thread logs as it drops a client).
  std::string text_with(const std::string& what, size_t count) {
    Deadline deadline = Deadline::after(seconds(5));
    while (count_of(read_whole_file(log), what) < count && !deadline.expired()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return read_whole_file(log);
  }
  void expect_still_serves() {
    TlsAs as("rank1");
    auto store = make_tcp_store("127.0.0.1", server->port(), Deadline::after(seconds(10)));
    store->set("after", to_bytes("still here"));
    EXPECT_EQ(to_string(store->get("after", Deadline::after(seconds(10)))), "still here");
  }
};

TEST(TlsStore, SetAndGetOverTlsAreNotPlaintextOnTheWire) {
  TlsServer s;
  TlsAs as("rank1");
  auto deadline = Deadline::after(seconds(10));
  Bytes value = canary_payload(5000);
  std::pair<Bytes, Bytes> seen;
  {
    RecordingRelay relay(s.server->port());
    {
      auto store = make_tcp_store("127.0.0.1", relay.port(), deadline);
      store->set("canary", value);
      EXPECT_EQ(store->get("canary", deadline), value);
    }
    seen = relay.finish();
  }
  EXPECT_GT(seen.first.size(), value.size());
  EXPECT_GT(seen.second.size(), value.size());
  EXPECT_FALSE(contains(seen.first, kCanary));
  EXPECT_FALSE(contains(seen.second, kCanary));
  EXPECT_FALSE(contains(seen.first, "canary"));  // the key too
  s.expect_still_serves();
}

TEST(TlsStore, RefusesClientsWithoutTheCasCertificateAndGoesOn) {
  TlsServer s;
  // Another CA's certificate, trusting either CA; a client without TLS; garbage.
  for (const char* ca : {"wrong-ca", "ca"}) {
    TlsAs as("intruder", ca);
    EXPECT_THROW(make_tcp_store("127.0.0.1", s.server->port(), Deadline::after(seconds(10))),
                 StoreError)
        << ca;
  }
  std::string message;
  try {
    make_tcp_store("127.0.0.1", s.server->port(), Deadline::after(seconds(10)));
  } catch (const StoreError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("failed"), std::string::npos) << message;
  std::string garbage = plaintext_intruder(s.address(), to_bytes("GET / HTTP/1.0\r\n\r\n"));
  s.expect_still_serves();
  std::string log = s.text_with("its TLS handshake failed", 4);
  EXPECT_EQ(count_of(log, "its TLS handshake failed"), 4u) << log;
  EXPECT_EQ(count_of(log, "dropping client " + garbage + ": its TLS handshake failed"), 1u) << log;
}

// The StoreError a store client at `port` raises, with the job's secret and without ("" if
// it connected).
std::vector<std::string> store_client_errors(uint16_t port) {
  std::vector<std::string> messages;
  for (const char* secret : {kSecret, static_cast<const char*>(nullptr)}) {
    ScopedEnv with_secret("GLOO_LITE_AUTH_SECRET", secret);
    std::string message;
    try {
      make_tcp_store("127.0.0.1", port, Deadline::after(seconds(10)));
    } catch (const StoreError& e) {
      message = e.what();
    }
    messages.push_back(message);
  }
  return messages;
}

// A rank started without the TLS knobs (by hand, or by a launcher that did not pass them on)
// is hung up on by a TLS store without a word; its error must point at the knobs, not only ask
// whether the server is alive. With a secret it fails at its AUTH-HELLO, without at its first
// request.
TEST(TlsStore, APlaintextClientIsToldTheServerMayRequireTls) {
  TlsServer s;
  for (const std::string& message : store_client_errors(s.server->port())) {
    EXPECT_NE(message.find("GLOO_LITE_TLS_CERT, GLOO_LITE_TLS_KEY and GLOO_LITE_TLS_CA"),
              std::string::npos)
        << message;
  }
}

// Under TLS 1.3 a client finishes its handshake before the server has checked the client's
// certificate, so a certificate from another CA is refused by an alert at the client's first
// read. Its error must say that its certificate was refused, not only that a read failed.
TEST(TlsStore, AClientWhoseCertificateIsRefusedIsToldSo) {
  TlsServer s;
  TlsAs as("intruder", "ca");  // trusts the server, but its own certificate is another CA's
  for (const std::string& message : store_client_errors(s.server->port())) {
    EXPECT_NE(message.find("refused this process's certificate (GLOO_LITE_TLS_CERT)"),
              std::string::npos)
        << message;
  }
}

TEST(TlsStore, ASilentClientIsDroppedAfterTheStallTimeoutAndOthersAreServed) {
  ScopedEnv stall("GLOO_LITE_STORE_STALL_MS", "300");
  TlsServer s;
  auto deadline = Deadline::after(seconds(10));
  Fd silent = connect_tcp(s.address(), deadline, "silent client");
  std::string address = SocketAddress::local_of(silent.get()).to_string();
  s.expect_still_serves();  // the server's one thread is not held by the silent handshake
  auto started = std::chrono::steady_clock::now();
  EXPECT_TRUE(closed_by_peer(silent.get(), deadline));
  EXPECT_LT(std::chrono::steady_clock::now() - started, seconds(5));
  std::string log = s.text_with("left its TLS handshake unfinished", 1);
  EXPECT_EQ(count_of(log, "dropping client " + address + ": stalled: left its TLS handshake"), 1u)
      << log;
}

TEST(TlsStore, TlsClientOnAPlainStoreIsRefused) {
  TempDir dir;
  std::string log = dir.path() + "/server.log";
  StderrToFile to_log(log);
  TcpStoreServer server(SocketAddress::resolve("127.0.0.1", 0));
  {
    TlsAs as("rank1");
    EXPECT_THROW(make_tcp_store("127.0.0.1", server.port(), Deadline::after(seconds(10))),
                 StoreError);
  }
  auto plain = make_tcp_store("127.0.0.1", server.port(), Deadline::after(seconds(10)));
  plain->set("k", to_bytes("v"));
  EXPECT_EQ(count_of(read_whole_file(log), "a TLS handshake on this store's plain TCP port"), 1u)
      << read_whole_file(log);
}

// ---- the knobs -----------------------------------------------------------------------------

std::string open_error() {
  try {
    tls::configured_context();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(TlsConfig, NoKnobIsPlainTcp) {
  ScopedEnv a("GLOO_LITE_TLS_CERT", nullptr), b("GLOO_LITE_TLS_KEY", nullptr),
      c("GLOO_LITE_TLS_CA", nullptr);
  EXPECT_EQ(tls::configured_context(), nullptr);
}

TEST(TlsConfig, OnlySomeKnobsSetIsAnErrorNamingTheMissingOnes) {
  ScopedEnv cert("GLOO_LITE_TLS_CERT", Certs::get().path("rank0.pem").c_str());
  {
    ScopedEnv key("GLOO_LITE_TLS_KEY", nullptr), ca("GLOO_LITE_TLS_CA", nullptr);
    std::string message = open_error();
    EXPECT_NE(message.find("GLOO_LITE_TLS_CERT set but GLOO_LITE_TLS_KEY, GLOO_LITE_TLS_CA not"),
              std::string::npos)
        << message;
    // Where it matters: the store server and the ranks' meshes refuse to start.
    EXPECT_THROW(TcpStoreServer(SocketAddress::resolve("127.0.0.1", 0)), InvalidArgument);
  }
  ScopedEnv key("GLOO_LITE_TLS_KEY", Certs::get().path("rank0.key").c_str());
  ScopedEnv ca("GLOO_LITE_TLS_CA", nullptr);
  std::string message = open_error();
  EXPECT_NE(message.find("set but GLOO_LITE_TLS_CA not"), std::string::npos) << message;
}

TEST(TlsConfig, UnusableFilesNameTheirKnob) {
  TlsAs as("rank0");
  {
    ScopedEnv ca("GLOO_LITE_TLS_CA", "/nonexistent/ca.pem");
    EXPECT_NE(open_error().find("GLOO_LITE_TLS_CA=/nonexistent/ca.pem: cannot load"),
              std::string::npos)
        << open_error();
  }
  ScopedEnv key("GLOO_LITE_TLS_KEY", Certs::get().path("rank1.key").c_str());
  EXPECT_NE(open_error().find("GLOO_LITE_TLS_KEY="), std::string::npos) << open_error();
  EXPECT_NE(open_error().find("mismatch"), std::string::npos) << open_error();
}

}  // namespace
}  // namespace gloo_lite::test
