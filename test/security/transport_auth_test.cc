// The TCP transport's authenticated handshake, attacked by real processes over real sockets: an
// impostor that read rank 0's record in the store, a peer with the wrong secret or none, a
// replayed proof. Each is refused and logged once with its address, and the real ranks connect.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "gloo_lite/base/auth.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/socket.h"
#include "gloo_lite/collectives.h"
#include "gloo_lite/context.h"
#include "rendezvous/stores.h"
#include "test/launcher/command.h"
#include "test/security/security_support.h"
#include "test/support/test_support.h"
#include "transport_tcp/wire.h"

namespace gloo_lite::test {
namespace {

using std::chrono::seconds;
constexpr size_t kAnswerBytes = tcp::wire::kHelloBytes + auth::kNonceBytes + auth::kProofBytes;

constexpr uint64_t kContextId = 0x5eed0000c0ffee01ull;

struct Record {
  uint64_t context_id = 0;
  SocketAddress address;
};

// What anyone who can read the store learns about rank 0: its context id and address, as the
// bootstrap's record holds them.
Record read_record(Store& store, const Deadline& deadline) {
  std::istringstream text(to_string(store.get("record/0", deadline)));
  Record record;
  std::string address;
  text >> record.context_id >> address;
  record.address = SocketAddress::parse(address);
  return record;
}

// Opens a connection to rank 0 claiming to be rank 1 of 2, with the authenticated flag and
// `nonce` when `authenticated`.
Fd claim_rank_one(const Record& record, bool authenticated, const auth::Nonce& nonce,
                  const Deadline& deadline) {
  Fd fd = connect_tcp(record.address, deadline, "impostor");
  tcp::wire::Hello hello;
  hello.context_id = record.context_id;
  hello.src_rank = 1;
  hello.dst_rank = 0;
  hello.size = 2;
  hello.flags = authenticated ? tcp::wire::kHelloAuthenticated : 0;
  std::vector<uint8_t> bytes(tcp::wire::kHelloBytes);
  tcp::wire::encode_hello(hello, bytes.data());
  if (authenticated) bytes.insert(bytes.end(), nonce.begin(), nonce.end());
  write_all(fd.get(), bytes.data(), bytes.size(), deadline, "impostor");
  return fd;
}

// Rank 0's challenge on an authenticated claim: ack, nonce, its proof.
std::vector<uint8_t> read_challenge(int fd, const Deadline& deadline) {
  std::vector<uint8_t> answer(kAnswerBytes);
  read_all(fd, answer.data(), answer.size(), deadline, "impostor reading the challenge");
  EXPECT_EQ(tcp::wire::decode_hello(answer.data()).kind, tcp::wire::kHelloAck);
  return answer;
}

// Whether the other end closed the connection (sending nothing more) before `deadline`.
bool closed_by_peer(int fd, const Deadline& deadline) {
  pollfd p{fd, POLLIN, 0};
  while (::poll(&p, 1, deadline.poll_timeout_ms()) == 0) {
    if (deadline.expired()) return false;
  }
  uint8_t byte = 0;
  ssize_t n = ::recv(fd, &byte, 1, 0);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

auth::Transcript transcript_for(const Record& record, const auth::Nonce& mine,
                                const std::vector<uint8_t>& challenge) {
  auth::Transcript t;
  t.purpose = "gloo_lite tcp transport pair";
  t.context_id = record.context_id;
  t.initiator_rank = 1;
  t.responder_rank = 0;
  t.initiator_nonce = mine;
  std::copy(challenge.begin() + tcp::wire::kHelloBytes,
            challenge.begin() + tcp::wire::kHelloBytes + auth::kNonceBytes,
            t.responder_nonce.begin());
  return t;
}

// A real rank of a 2-rank mesh on the TCP transport, its stderr into `log`: publishes its
// record, rank 1 waits for `gate` (so that the attacks happen while rank 0 listens and before
// rank 1 dials), both connect, and 70000 bytes go from rank 0 to rank 1.
void real_rank(int rank, const std::string& store_dir, const std::string& log,
               const std::string& gate) {
  StderrToFile to_log(log);
  auto store = make_file_store(store_dir);
  auto deadline = Deadline::after(seconds(30));
  auto device = tcp_loopback_device();
  auto mesh = device->create_mesh(rank, 2, transport::MeshOptions{});
  store->set("record/" + std::to_string(rank),
             to_bytes(std::to_string(kContextId) + " " + mesh->address()));
  std::vector<std::string> addresses(2);
  for (int peer = 0; peer < 2; ++peer) {
    std::istringstream text(to_string(store->get("record/" + std::to_string(peer), deadline)));
    uint64_t ignored = 0;
    text >> ignored >> addresses[peer];
  }
  if (rank == 1) store->get(gate, deadline);
  mesh->connect(addresses, kContextId, deadline);
  std::vector<uint8_t> data(70000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 131 + 7);
  std::vector<uint8_t> in(data.size());
  auto out_memory = mesh->register_memory(data.data(), data.size());
  auto in_memory = mesh->register_memory(in.data(), in.size());
  if (rank == 0) {
    mesh->wait({mesh->send(1, 7, *out_memory, 0, data.size())}, deadline);
  } else {
    mesh->wait({mesh->recv(0, 7, *in_memory, 0, in.size())}, deadline);
    EXPECT_EQ(in, data);
  }
}

std::string log_path(const TempDir& dir, int rank) {
  return dir.path() + "/rank" + std::to_string(rank) + ".log";
}

TEST(TransportAuth, ImpostorWithTheStoresRecordIsRefusedAndTheRealRankConnects) {
  ScopedEnv secret("GLOO_LITE_AUTH_SECRET", kSecret);
  TempDir store_dir, logs;
  auto results = run_processes(
      3,
      [&](int index) {
        if (index < 2) return real_rank(index, store_dir.path(), log_path(logs, index), "done");
        // The impostor knows everything in the store, and not the secret.
        unsetenv("GLOO_LITE_AUTH_SECRET");
        auto store = make_file_store(store_dir.path());
        auto deadline = Deadline::after(seconds(30));
        Record record = read_record(*store, deadline);
        // Today's attack: a plain hello as rank 1.
        Fd plain = claim_rank_one(record, false, {}, deadline);
        // A hello with the authenticated flag, then proofs made without the secret: one with a
        // wrong secret, one that reflects rank 0's own proof back.
        auth::Nonce nonce_a = auth::fresh_nonce(), nonce_b = auth::fresh_nonce();
        Fd wrong = claim_rank_one(record, true, nonce_a, deadline);
        Fd reflect = claim_rank_one(record, true, nonce_b, deadline);
        std::string addresses = SocketAddress::local_of(plain.get()).to_string() + " " +
                                SocketAddress::local_of(wrong.get()).to_string() + " " +
                                SocketAddress::local_of(reflect.get()).to_string();
        store->set("impostors", to_bytes(addresses));
        EXPECT_TRUE(closed_by_peer(plain.get(), deadline)) << "a plain hello was not refused";
        std::vector<uint8_t> challenge = read_challenge(wrong.get(), deadline);
        auth::Proof forged = auth::prove(auth::Secret(kOtherSecret), auth::Role::kInitiator,
                                         transcript_for(record, nonce_a, challenge));
        write_all(wrong.get(), forged.data(), forged.size(), deadline, "impostor");
        EXPECT_TRUE(closed_by_peer(wrong.get(), deadline)) << "a wrong secret's proof passed";
        challenge = read_challenge(reflect.get(), deadline);
        write_all(reflect.get(), challenge.data() + tcp::wire::kHelloBytes + auth::kNonceBytes,
                  auth::kProofBytes, deadline, "impostor");
        EXPECT_TRUE(closed_by_peer(reflect.get(), deadline)) << "a reflected proof passed";
        store->set("done", to_bytes("1"));  // now the real rank 1 dials
      },
      seconds(60));
  expect_all_ok(results);
  std::string log0 = read_whole_file(log_path(logs, 0));
  std::istringstream impostors(
      to_string(make_file_store(store_dir.path())->get("impostors", Deadline::after(seconds(5)))));
  for (std::string address; impostors >> address;) {
    // Once each, naming the impostor's address.
    EXPECT_EQ(count_of(log0, "rejected a connection from " + address + ":"), 1u)
        << address << " in:\n"
        << log0;
  }
  EXPECT_EQ(count_of(log0, "without proving the job's secret"), 1u) << log0;
  EXPECT_EQ(count_of(log0, "its proof of the job's secret is wrong"), 2u) << log0;
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(read_whole_file(log_path(logs, rank)).find(kSecret), std::string::npos);
  }
}

TEST(TransportAuth, ProofReplayedOnAFreshChallengeIsRefused) {
  ScopedEnv secret("GLOO_LITE_AUTH_SECRET", kSecret);
  TempDir store_dir, logs;
  auto results = run_processes(
      3,
      [&](int index) {
        if (index < 2) return real_rank(index, store_dir.path(), log_path(logs, index), "done");
        // An eavesdropper's record of a genuine rank 1: its hello and nonce, and the proof it
        // answered rank 0's challenge with (computed here with the secret, as rank 1 would).
        // Played again on a second connection, the hello meets a new challenge.
        auto store = make_file_store(store_dir.path());
        auto deadline = Deadline::after(seconds(30));
        Record record = read_record(*store, deadline);
        auth::Nonce nonce = auth::fresh_nonce();
        Fd recorded = claim_rank_one(record, true, nonce, deadline);
        Fd replayed = claim_rank_one(record, true, nonce, deadline);
        store->set("replayer", to_bytes(SocketAddress::local_of(replayed.get()).to_string()));
        std::vector<uint8_t> first = read_challenge(recorded.get(), deadline);
        std::vector<uint8_t> second = read_challenge(replayed.get(), deadline);
        auto first_transcript = transcript_for(record, nonce, first);
        auto second_transcript = transcript_for(record, nonce, second);
        EXPECT_NE(first_transcript.responder_nonce, second_transcript.responder_nonce);
        auth::Proof genuine =
            auth::prove(auth::Secret(kSecret), auth::Role::kInitiator, first_transcript);
        write_all(replayed.get(), genuine.data(), genuine.size(), deadline, "replay");
        EXPECT_TRUE(closed_by_peer(replayed.get(), deadline)) << "a replayed proof passed";
        store->set("done", to_bytes("1"));
      },
      seconds(60));
  expect_all_ok(results);
  std::string log0 = read_whole_file(log_path(logs, 0));
  std::string replayer =
      to_string(make_file_store(store_dir.path())->get("replayer", Deadline::after(seconds(5))));
  EXPECT_EQ(count_of(log0, "rejected a connection from " + replayer +
                               ": it claimed to be rank 1, but its proof of the job's secret is "
                               "wrong"),
            1u)
      << log0;
}

// Rank 0 with `secret0`, rank 1 with `secret1` (nullptr: none): rank 1 must fail at once with
// `rank1_error`; rank 0 logs `rank0_log` once and, alone, times out.
void expect_refused_pair(const char* secret0, const char* secret1, const std::string& rank1_error,
                         const std::string& rank0_log) {
  TempDir store_dir, logs;
  auto results = run_processes(
      2,
      [&](int rank) {
        const char* mine = rank == 0 ? secret0 : secret1;
        if (mine != nullptr) {
          setenv("GLOO_LITE_AUTH_SECRET", mine, 1);
        } else {
          unsetenv("GLOO_LITE_AUTH_SECRET");
        }
        StderrToFile to_log(log_path(logs, rank));
        auto store = make_file_store(store_dir.path());
        ContextOptions options;
        options.timeout = std::chrono::milliseconds(rank == 0 ? 4000 : 20000);
        auto started = std::chrono::steady_clock::now();
        try {
          Context::create(store, rank, 2, tcp_loopback_device(), options);
          ADD_FAILURE() << "rank " << rank << " connected";
        } catch (const Error& e) {
          if (rank == 1) {
            EXPECT_NE(std::string(e.what()).find(rank1_error), std::string::npos) << e.what();
            EXPECT_LT(std::chrono::steady_clock::now() - started, seconds(10)) << "not at once";
          }
        }
      },
      seconds(60));
  expect_all_ok(results);
  std::string log0 = read_whole_file(log_path(logs, 0));
  EXPECT_EQ(count_of(log0, rank0_log), 1u) << log0;
  EXPECT_EQ(count_of(log0, "rejected a connection from 127.0.0.1:"), 1u) << log0;
  for (int rank = 0; rank < 2; ++rank) {
    std::string log = read_whole_file(log_path(logs, rank));
    EXPECT_EQ(log.find(kSecret), std::string::npos);
    EXPECT_EQ(log.find(kOtherSecret), std::string::npos);
  }
}

TEST(TransportAuth, WrongSecretIsRefusedBothWays) {
  expect_refused_pair(kSecret, kOtherSecret, "failed to prove the job's secret",
                      "hung up before proving the job's secret");
}

TEST(TransportAuth, NoSecretWhereOneIsRequiredIsRefused) {
  expect_refused_pair(kSecret, nullptr, "closed the connection during the handshake",
                      "without proving the job's secret");
}

TEST(TransportAuth, SecretWhereNoneIsConfiguredIsRefused) {
  expect_refused_pair(nullptr, kSecret, "closed the connection during the handshake",
                      "wants to authenticate, but this rank has no secret");
}

TEST(TransportAuth, SecretIsInNoLogLineAndNoStoreValue) {
  // Fresh processes (this binary's --file-store-rank), so that trace level applies to them.
  TempDir store_dir;
  std::vector<std::string> env{std::string("GLOO_LITE_AUTH_SECRET=") + kSecret,
                               "GLOO_LITE_AUTH_FILE=", "GLOO_LITE_LOG=trace"};
  std::vector<std::unique_ptr<Command>> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.push_back(
        std::make_unique<Command>(std::vector<std::string>{self_path(), "--file-store-rank",
                                                           store_dir.path(), std::to_string(rank)},
                                  env));
  }
  for (auto& rank : ranks) {
    CommandResult result = rank->wait(seconds(60));
    EXPECT_EQ(result.exit_code, 0) << result.describe();
    EXPECT_NE(result.out.find("sum 3"), std::string::npos) << result.out;
    EXPECT_NE(result.err.find("[tcp]"), std::string::npos)
        << "trace logging wrote nothing of the transport: the check would prove nothing\n"
        << result.err;
    // A user can tell from the log that the pairs authenticate (and whether TLS is on).
    EXPECT_NE(result.err.find("TCP pairs, each proving the job's secret, plain TCP"),
              std::string::npos)
        << result.err;
    EXPECT_EQ(result.err.find(kSecret), std::string::npos) << result.err;
    EXPECT_EQ(result.out.find(kSecret), std::string::npos) << result.out;
  }
  std::string store = read_directory_files(store_dir.path());
  EXPECT_NE(store.find("addr"), std::string::npos) << "the store's contents were not read";
  EXPECT_EQ(store.find(kSecret), std::string::npos);
}

}  // namespace
}  // namespace gloo_lite::test
