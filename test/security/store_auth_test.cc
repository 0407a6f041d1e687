// The TCP store's client authentication, against a real server over real sockets: a client
// without the secret, with the wrong one, against a server without one, a forged proof and a
// recorded handshake played again. Each is refused and logged once with the client's address;
// the server goes on serving clients that hold the secret.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <thread>

#include "gloo_lite/base/auth.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/socket.h"
#include "rendezvous/stores.h"
#include "rendezvous/tcp_store_protocol.h"
#include "test/security/security_support.h"
#include "test/support/test_support.h"

namespace gloo_lite::test {
namespace {

using std::chrono::seconds;
namespace ts = tcp_store;

std::string open_error(uint16_t port) {
  try {
    make_tcp_store("127.0.0.1", port, Deadline::after(seconds(10)));
  } catch (const StoreError& e) {
    return e.what();
  }
  return "";
}

// A server holding kSecret, with its log in a file; clients choose their own secret.
struct SecretServer {
  TempDir dir;
  std::string log = dir.path() + "/server.log";
  std::unique_ptr<StderrToFile> to_log = std::make_unique<StderrToFile>(log);
  std::unique_ptr<TcpStoreServer> server;
  explicit SecretServer(const char* secret = kSecret) {
    ScopedEnv env("GLOO_LITE_AUTH_SECRET", secret);
    server = std::make_unique<TcpStoreServer>(SocketAddress::resolve("127.0.0.1", 0));
  }
  // The log so far (the server thread has logged by the time a refused client has its error).
  std::string text() { return read_whole_file(log); }
  void expect_still_serves() {
    ScopedEnv env("GLOO_LITE_AUTH_SECRET", kSecret);
    auto store = make_tcp_store("127.0.0.1", server->port(), Deadline::after(seconds(10)));
    store->set("after", to_bytes("still here"));
    EXPECT_EQ(to_string(store->get("after", Deadline::after(seconds(10)))), "still here");
  }
};

TEST(StoreAuth, ClientWithTheSecretIsServed) {
  SecretServer s;
  ScopedEnv env("GLOO_LITE_AUTH_SECRET", kSecret);
  auto store = make_tcp_store("127.0.0.1", s.server->port(), Deadline::after(seconds(10)));
  store->set("key", to_bytes("value"));
  EXPECT_EQ(to_string(store->get("key", Deadline::after(seconds(10)))), "value");
  EXPECT_EQ(s.text().find(kSecret), std::string::npos);
}

TEST(StoreAuth, ClientWithoutTheSecretIsRefusedAndLoggedOnce) {
  SecretServer s;
  {
    ScopedEnv env("GLOO_LITE_AUTH_SECRET", nullptr);
    std::string message = open_error(s.server->port());
    EXPECT_NE(message.find("without authenticating: this store requires the job's secret"),
              std::string::npos)
        << message;
  }
  s.expect_still_serves();
  std::string log = s.text();
  EXPECT_EQ(count_of(log, "dropping client 127.0.0.1:"), 1u) << log;
  EXPECT_EQ(count_of(log, "without authenticating"), 1u) << log;
}

TEST(StoreAuth, ClientWithAnotherSecretIsRefusedAndLoggedOnce) {
  SecretServer s;
  {
    ScopedEnv env("GLOO_LITE_AUTH_SECRET", kOtherSecret);
    std::string message = open_error(s.server->port());
    EXPECT_NE(message.find("the store server failed to prove the job's secret"), std::string::npos)
        << message;
  }
  s.expect_still_serves();
  // The client hung up on the server's proof: logged when the server sees it go.
  Deadline deadline = Deadline::after(seconds(5));
  while (s.text().find("before proving") == std::string::npos && !deadline.expired()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::string log = s.text();
  EXPECT_EQ(count_of(log, "disconnected before proving the job's secret"), 1u) << log;
  EXPECT_EQ(log.find(kSecret), std::string::npos);
  EXPECT_EQ(log.find(kOtherSecret), std::string::npos);
}

TEST(StoreAuth, ServerWithoutASecretRefusesAClientThatAuthenticates) {
  SecretServer s(nullptr);
  ScopedEnv env("GLOO_LITE_AUTH_SECRET", kSecret);
  std::string message = open_error(s.server->port());
  EXPECT_NE(message.find("this server has no secret"), std::string::npos) << message;
}

// One request on a raw connection; returns the response's status and items.
struct Raw {
  ts::Status status = ts::Status::kOk;
  Bytes body;
  std::vector<ts::Item> items;
};

Raw read_response(int fd, const Deadline& deadline) {
  uint8_t header[ts::kResponseHeaderBytes];
  read_all(fd, header, sizeof(header), deadline, "raw client");
  ts::ResponseHeader decoded;
  EXPECT_EQ(ts::decode_response_header(header, &decoded), "");
  Raw raw;
  raw.status = decoded.status;
  raw.body.resize(decoded.body_bytes);
  read_all(fd, raw.body.data(), raw.body.size(), deadline, "raw client");
  EXPECT_EQ(ts::parse_items(raw.body, &raw.items), "");
  return raw;
}

Bytes auth_request(ts::Op op, const uint8_t* data, size_t bytes) {
  ts::MessageBuilder builder(ts::kRequestHeaderBytes, 1);
  builder.add(data, bytes);
  return builder.finish_request(op, 0);
}

TEST(StoreAuth, ForgedProofIsRefused) {
  SecretServer s;
  auto deadline = Deadline::after(seconds(10));
  Fd fd = connect_tcp(SocketAddress::resolve("127.0.0.1", s.server->port()), deadline, "forger");
  auth::Nonce nonce = auth::fresh_nonce();
  Bytes hello = auth_request(ts::kAuthHello, nonce.data(), nonce.size());
  write_all(fd.get(), hello.data(), hello.size(), deadline, "forger");
  Raw challenge = read_response(fd.get(), deadline);
  ASSERT_EQ(challenge.status, ts::Status::kOk);
  ASSERT_EQ(challenge.items.size(), 2u);
  // The server's own proof sent back (a reflection), then random bytes: neither passes.
  Bytes reflected = auth_request(ts::kAuthProof, challenge.items[1].data, auth::kProofBytes);
  write_all(fd.get(), reflected.data(), reflected.size(), deadline, "forger");
  Raw verdict = read_response(fd.get(), deadline);
  EXPECT_EQ(verdict.status, ts::Status::kError);
  ASSERT_FALSE(verdict.items.empty());
  EXPECT_NE(verdict.items[0].str().find("proof of the job's secret is wrong"), std::string::npos)
      << verdict.items[0].str();
  s.expect_still_serves();
  EXPECT_EQ(count_of(s.text(), "proof of the job's secret is wrong"), 1u) << s.text();
}

TEST(StoreAuth, RecordedHandshakePlayedAgainIsRefused) {
  SecretServer s;
  ScopedEnv env("GLOO_LITE_AUTH_SECRET", kSecret);
  auto deadline = Deadline::after(seconds(10));
  std::pair<Bytes, Bytes> recorded;
  {
    RecordingRelay relay(s.server->port());
    {
      auto store = make_tcp_store("127.0.0.1", relay.port(), deadline);
      store->set("written by the genuine client", to_bytes("1"));
    }  // the client closes, and with it the relay
    recorded = relay.finish();
  }
  const Bytes& sent = recorded.first;
  // A genuine exchange: auth-hello and auth-proof (56 bytes each), then check and set.
  ASSERT_GT(sent.size(), 112u);
  ASSERT_EQ(get_u16(sent.data() + 6), static_cast<uint16_t>(ts::kAuthHello));
  ASSERT_EQ(get_u16(sent.data() + 56 + 6), static_cast<uint16_t>(ts::kAuthProof));
  auto good = make_tcp_store("127.0.0.1", s.server->port(), deadline);
  ASSERT_TRUE(good->erase("written by the genuine client", deadline));
  // Played again, byte for byte, on a new connection.
  Fd fd = connect_tcp(SocketAddress::resolve("127.0.0.1", s.server->port()), deadline, "replay");
  std::string replayer = SocketAddress::local_of(fd.get()).to_string();
  write_all(fd.get(), sent.data(), sent.size(), deadline, "replay");
  Raw challenge = read_response(fd.get(), deadline);
  ASSERT_EQ(challenge.status, ts::Status::kOk);
  ASSERT_EQ(challenge.items.size(), 2u);
  // The server's nonce is new (the recorded answer's starts at byte 12 + 4 + 4).
  EXPECT_NE(Bytes(challenge.items[0].data, challenge.items[0].data + auth::kNonceBytes),
            Bytes(recorded.second.begin() + 20, recorded.second.begin() + 20 + auth::kNonceBytes));
  Raw verdict = read_response(fd.get(), deadline);
  EXPECT_EQ(verdict.status, ts::Status::kError);
  // The replayed set never ran.
  EXPECT_FALSE(good->check({"written by the genuine client"}, deadline));
  std::string log = s.text();
  EXPECT_EQ(
      count_of(log, "dropping client " + replayer + ": its proof of the job's secret is wrong"), 1u)
      << log;
}

}  // namespace
}  // namespace gloo_lite::test
