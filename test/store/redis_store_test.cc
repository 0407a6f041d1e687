// Redis-specific behaviour: authentication, databases, interoperability with plain Redis
// commands, and how many commands waiting and a rendezvous cost (counted by the server itself).
#include <gtest/gtest.h>

#include <iostream>
#include <numeric>

#include "gloo_lite/base/error.h"
#include "rendezvous/stores.h"
#include "test/store/redis_server.h"
#include "test/support/test_support.h"

namespace gloo_lite::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

long total(const std::map<std::string, long>& calls) {
  long sum = 0;
  for (const auto& [name, count] : calls) sum += count;
  return sum;
}

std::string table(const std::map<std::string, long>& calls) {
  std::string out;
  for (const auto& [name, count] : calls) out += "  " + name + " " + std::to_string(count) + "\n";
  return out;
}

// Statistics since CONFIG RESETSTAT, without the control commands themselves.
std::map<std::string, long> commands_since_reset(RespClient& control) {
  auto calls = parse_commandstats(control.call({"INFO", "commandstats"}));
  calls.erase("config|resetstat");
  return calls;
}

TEST(RedisStore, WaitingGetDoesNotHammerRedis) {
  RedisServer server;
  auto store = open_store(server.url(1), Deadline::after(seconds(10)));
  RespClient control = server.client();
  control.call({"CONFIG", "RESETSTAT"});
  EXPECT_THROW(store->get("absent", Deadline::after(milliseconds(600))), TimeoutError);
  auto calls = commands_since_reset(control);
  // One look, one blocking wait for the whole 600 ms, at most one more look.
  EXPECT_LE(total(calls), 3) << table(calls);
}

// The measurement quoted in docs/stores.md: 16 ranks (threads or processes, each with its own
// store as a rank would have) each set their key and then read all 16 keys.
enum class Ranks { kThreads, kProcesses };
enum class Reads { kGets, kMultiGet };

void measure_rendezvous(Ranks ranks, Reads reads) {
  constexpr int kRanks = 16;
  RedisServer server;
  RespClient control = server.client();
  control.call({"CONFIG", "RESETSTAT"});
  auto rank_body = [&](int rank) {
    auto store = open_store(server.url(2), Deadline::after(seconds(10)));
    store->set("addr/" + std::to_string(rank), to_bytes("host-" + std::to_string(rank)));
    std::vector<std::string> keys;
    for (int peer = 0; peer < kRanks; ++peer) keys.push_back("addr/" + std::to_string(peer));
    std::vector<Bytes> values;
    if (reads == Reads::kMultiGet) {
      values = store->multi_get(keys, Deadline::after(seconds(20)));
    } else {
      for (const auto& key : keys) values.push_back(store->get(key, Deadline::after(seconds(20))));
    }
    for (int peer = 0; peer < kRanks; ++peer) {
      if (to_string(values[peer]) != "host-" + std::to_string(peer)) {
        throw std::runtime_error("wrong value for peer " + std::to_string(peer));
      }
    }
  };
  if (ranks == Ranks::kThreads) {
    run_threads(kRanks, rank_body);
  } else {
    expect_all_ok(run_processes(kRanks, rank_body, seconds(30)));
  }
  auto calls = commands_since_reset(control);
  std::cout << "[ redis    ] 16-rank rendezvous, "
            << (ranks == Ranks::kThreads ? "threads" : "processes") << ", "
            << (reads == Reads::kGets ? "16 x get" : "multi_get") << ": " << total(calls)
            << " commands\n"
            << table(calls);
  // Per rank at most: AUTH + SELECT, SET + XADD, per key read a look, a wait, a look, and the
  // hygiene (redis_hygiene.h): join (INCR, EXPIRE), EXPIREs of the key and its notify stream,
  // SADD and the key set's EXPIRE with the write, DECR at close (and for the last rank WATCH,
  // GET, SMEMBERS, MULTI, DEL, EXEC).
  EXPECT_LE(total(calls), kRanks * (2 + 2 + 3 * kRanks + 6 + 6)) << table(calls);
  EXPECT_EQ(calls["set"], kRanks);
  EXPECT_EQ(calls["auth"], kRanks);
}

TEST(RedisStore, RendezvousCommandCountThreadsGets) {
  measure_rendezvous(Ranks::kThreads, Reads::kGets);
}
TEST(RedisStore, RendezvousCommandCountThreadsMultiGet) {
  measure_rendezvous(Ranks::kThreads, Reads::kMultiGet);
}
TEST(RedisStore, RendezvousCommandCountProcessesGets) {
  measure_rendezvous(Ranks::kProcesses, Reads::kGets);
}
TEST(RedisStore, RendezvousCommandCountProcessesMultiGet) {
  measure_rendezvous(Ranks::kProcesses, Reads::kMultiGet);
}

TEST(RedisStore, WrongPasswordIsAStoreError) {
  RedisServer server;
  std::string url = "redis://:wrong@127.0.0.1:" + std::to_string(server.port()) + "/0";
  try {
    open_store(url, Deadline::after(seconds(5)));
    FAIL() << "authenticated with a wrong password";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("authentication as the default user failed"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).find("wrong"), std::string::npos) << "leaks the password";
  }
}

TEST(RedisStore, MissingPasswordIsExplained) {
  RedisServer server;
  auto store =
      open_store("redis://127.0.0.1:" + std::to_string(server.port()), Deadline::after(seconds(5)));
  try {
    store->set("k", to_bytes("v"));
    FAIL() << "wrote without a password";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("requires a password"), std::string::npos) << e.what();
  }
}

TEST(RedisStore, DatabasesAreSeparateAndDataIsPlainRedis) {
  RedisServer server;
  auto db3 = open_store(server.url(3), Deadline::after(seconds(5)));
  auto db4 = open_store(server.url(4), Deadline::after(seconds(5)));
  db3->set("k", to_bytes("in three"));
  EXPECT_FALSE(db4->check({"k"}));

  RespClient raw = server.client();
  EXPECT_EQ(raw.call({"SELECT", "3"}), "OK");
  EXPECT_EQ(raw.call({"GET", "k"}), "in three");
  EXPECT_EQ(raw.call({"INCRBY", "ctr", "5"}), "5");
  EXPECT_EQ(to_string(db3->get("ctr", Deadline::after(seconds(1)))), "5");
  EXPECT_EQ(db3->add("ctr", 2), 7);
  EXPECT_EQ(raw.call({"GET", "ctr"}), "7");
}

TEST(RedisStore, UnreachableServerIsAStoreErrorNamingIt) {
  int port = free_loopback_port();
  auto start = std::chrono::steady_clock::now();
  try {
    open_store("redis://:pw@127.0.0.1:" + std::to_string(port) + "/1",
               Deadline::after(milliseconds(300)));
    FAIL() << "connected to nothing";
  } catch (const StoreError& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("redis://127.0.0.1:" + std::to_string(port)), std::string::npos)
        << message;
    EXPECT_EQ(message.find(":pw@"), std::string::npos) << "leaks the password";
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(2));
}

}  // namespace
}  // namespace gloo_lite::test
