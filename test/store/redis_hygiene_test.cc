// Redis store hygiene (rendezvous/redis_hygiene.h) against a real redis-server: a job's keys are
// deleted when its last rank closes and expire when its ranks are killed; ACL users; passwords
// never reach a message or a log line. The keys are listed with an independent RESP client.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "gloo_lite/base/error.h"
#include "rendezvous/store_url.h"
#include "rendezvous/stores.h"
#include "test/store/redis_server.h"
#include "test/support/test_support.h"

extern char** environ;

namespace gloo_lite::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

constexpr int kDb = 5;
constexpr char kAclUser[] = "gl_job";
constexpr char kAclPassword[] = "acl-Secret-4711";
// What an ACL user of a shared Redis needs (docs/stores.md quotes this list).
constexpr char kAclCommands[] =
    "+get +set +mget +exists +incrby +incr +decr +expire +del +sadd +srem +smembers +xadd +xread "
    "+watch +multi +exec +select";

std::vector<std::string> keys_in(RespClient& client, const std::string& pattern = "*") {
  client.call({"SELECT", std::to_string(kDb)});
  std::string joined = client.call({"KEYS", pattern});
  std::vector<std::string> keys;
  std::istringstream lines(joined);
  for (std::string line; std::getline(lines, line);) keys.push_back(line);
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::string joined(const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& key : keys) out += "  " + key + "\n";
  return out;
}

// One rank of a job: joins, publishes, reads every peer, as Context::create does.
void rendezvous(Store& store, int rank, int ranks) {
  store.add("gloo_lite/generation/" + std::to_string(rank), 1);
  store.set("gloo_lite/ctx/1/addr/" + std::to_string(rank),
            to_bytes("addr-" + std::to_string(rank)));
  std::vector<std::string> keys;
  for (int peer = 0; peer < ranks; ++peer)
    keys.push_back("gloo_lite/ctx/1/addr/" + std::to_string(peer));
  auto values = store.multi_get(keys, Deadline::after(seconds(20)));
  for (int peer = 0; peer < ranks; ++peer) {
    if (to_string(values[peer]) != "addr-" + std::to_string(peer)) {
      throw std::runtime_error("wrong address of rank " + std::to_string(peer));
    }
  }
}

std::shared_ptr<Store> open_job(const RedisServer& server, const std::string& job) {
  return make_prefix_store(open_store(server.url(kDb), Deadline::after(seconds(10))), job);
}

TEST(RedisHygiene, KeysOfAJobAreGoneWhenItsLastRankCloses) {
  constexpr int kRanks = 4;
  RedisServer server;
  RespClient control = server.client();
  control.call({"SELECT", std::to_string(kDb)});
  control.call({"SET", "other-job/key", "stays"});  // another job's key, written without hygiene
  auto results = run_processes(
      kRanks,
      [&](int rank) {
        auto store = open_job(server, "jobA");
        rendezvous(*store, rank, kRanks);
        if (rank == 0) {  // mid-job: the keys are there, each with an expiry
          RespClient look = server.client();
          auto keys = keys_in(look, "jobA/*");
          EXPECT_GE(keys.size(), static_cast<size_t>(kRanks)) << joined(keys);
          long ttl = std::stol(look.call({"TTL", "jobA/gloo_lite/ctx/1/addr/0"}));
          EXPECT_GT(ttl, 0);
          EXPECT_LE(ttl, 3600);
        }
      },
      seconds(30));
  expect_all_ok(results);
  EXPECT_EQ(keys_in(control), std::vector<std::string>{"other-job/key"})
      << joined(keys_in(control));
}

// Ranks 0 and 1 close normally and promptly (the killed rank never closes: nothing waits for
// it); rank 2 keeps its keys alive past their TTL (renewal), then is SIGKILLed; every key of the
// job then expires within the TTL.
TEST(RedisHygiene, KeysOfAKilledJobExpire) {
  constexpr int kRanks = 3;
  constexpr int kVictim = 2;
  RedisServer server;
  RespClient control = server.client();
  auto results = run_processes(
      kRanks,
      [&](int rank) {
        setenv("GLOO_LITE_REDIS_TTL_S", "1", 1);
        auto store = open_job(server, "jobK");
        rendezvous(*store, rank, kRanks);
        if (rank != kVictim) {
          store->set("done/" + std::to_string(rank), to_bytes("1"));
          auto start = Clock::now();
          store.reset();
          EXPECT_LT(Clock::now() - start, milliseconds(500)) << "closing waited for the others";
          return;
        }
        store->wait({"done/0", "done/1"}, Deadline::after(seconds(10)));
        std::this_thread::sleep_for(milliseconds(2500));  // 2.5 TTLs
        // Checked before the kill, which would hide a failed EXPECT: exiting 1 instead fails
        // expect_only_victim_killed.
        RespClient look = server.client();
        if (keys_in(look, "jobK/gloo_lite/ctx/1/addr/2").size() != 1) {
          throw std::runtime_error("a live rank's key expired (not renewed)");
        }
        kill(getpid(), SIGKILL);
      },
      seconds(30));
  expect_only_victim_killed(results, kVictim);
  auto deadline = Deadline::after(seconds(4));
  while (!keys_in(control).empty() && !deadline.expired()) {
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_TRUE(keys_in(control).empty()) << "left behind:\n" << joined(keys_in(control));
}

TEST(RedisHygiene, AclUserAuthenticatesAndTidiesUp) {
  RedisServer server;
  RespClient control = server.client();
  std::string rule = std::string("ACL SETUSER ") + kAclUser + " on >" + kAclPassword +
                     " resetkeys ~* -@all " + kAclCommands;
  std::vector<std::string> args;
  std::istringstream words(rule);
  for (std::string word; words >> word;) args.push_back(word);
  ASSERT_EQ(control.call(args), "OK");
  control.call({"ACL", "LOG", "RESET"});
  std::string url = std::string("redis://") + kAclUser + ":" + kAclPassword +
                    "@127.0.0.1:" + std::to_string(server.port()) + "/" + std::to_string(kDb);
  {
    auto store = make_prefix_store(open_store(url, Deadline::after(seconds(5))), "jobU");
    EXPECT_NE(store->describe().find(std::string("redis://") + kAclUser + "@127.0.0.1:"),
              std::string::npos)
        << store->describe();
    rendezvous(*store, 0, 1);
    EXPECT_EQ(store->add("counter", 5), 5);
    EXPECT_TRUE(store->erase("counter"));
    EXPECT_FALSE(keys_in(control).empty());
  }
  EXPECT_TRUE(keys_in(control).empty()) << joined(keys_in(control));
  // Nothing was refused on the way, closing included (whose failures are only logged).
  EXPECT_EQ(control.call({"ACL", "LOG"}), "");
}

TEST(RedisHygiene, WrongPasswordNamesServerAndUserButNotThePassword) {
  RedisServer server;
  RespClient control = server.client();
  ASSERT_EQ(control.call(
                {"ACL", "SETUSER", kAclUser, "on", std::string(">") + kAclPassword, "~*", "+@all"}),
            "OK");
  std::string server_name = "127.0.0.1:" + std::to_string(server.port());
  std::string url = std::string("redis://") + kAclUser + ":Wr0ng-Pass@" + server_name + "/1";
  try {
    open_store(url, Deadline::after(seconds(5)));
    FAIL() << "authenticated with a wrong password";
  } catch (const StoreError& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("redis://" + std::string(kAclUser) + "@" + server_name),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("authentication as user 'gl_job' failed"), std::string::npos) << message;
    EXPECT_EQ(message.find("Wr0ng-Pass"), std::string::npos) << "leaks the password: " << message;
  }
}

TEST(RedisHygiene, RedactedUrlsHideOnlyThePassword) {
  EXPECT_EQ(redact_store_url("redis://u:p%40ss:w/rd@h:1/2"), "redis://u:***@h:1/2");
  EXPECT_EQ(redact_store_url("redis://:pw@[::1]:1"), "redis://:***@[::1]:1");
  EXPECT_EQ(redact_store_url("redis://mistyped-pw@h"), "redis://***@h");
  EXPECT_EQ(redact_store_url("redis://h:6379/0"), "redis://h:6379/0");
  EXPECT_EQ(redact_store_url("file:///a@b"), "file:///a@b");
  StoreUrl url = parse_store_url("redis://us%3Aer:p:w@h");
  EXPECT_EQ(url.user, "us:er");
  EXPECT_EQ(url.password, "p:w");
}

// The passwords the child below uses; none may appear in its log.
constexpr const char* kSecrets[] = {"Leak-Default-PW", "Leak-Acl-PW", "Leak-Bad-Esc"};

// Runs as a separate process (re-executed by the test below with GLOO_LITE_LOG=debug and its
// stderr in a file): every path that names a store, with passwords in the URLs.
TEST(RedisHygiene, ChildWritesLogsWithPasswords) {
  const char* port = std::getenv("GLOO_LITE_TEST_REDIS_PORT");
  if (port == nullptr) GTEST_SKIP() << "run by PasswordsNeverReachTheLog";
  std::string at = std::string("@127.0.0.1:") + port;
  auto report = [](const std::exception& e) { std::cerr << "error: " << e.what() << "\n"; };
  try {
    parse_store_url(std::string("redis://:") + kSecrets[2] + "%zz" + at);
  } catch (const std::exception& e) {
    report(e);
  }
  try {
    open_store(std::string("redis://") + kAclUser + ":" + kSecrets[0] + "-wrong" + at,
               Deadline::after(seconds(5)));
  } catch (const std::exception& e) {
    report(e);
  }
  try {
    open_store(std::string("redis://:") + kSecrets[0] +
                   "@127.0.0.1:" + std::to_string(free_loopback_port()),
               Deadline::after(milliseconds(200)));
  } catch (const std::exception& e) {
    report(e);
  }
  for (const std::string& url : {std::string("redis://:") + kSecrets[0] + at + "/1",
                                 std::string("redis://") + kAclUser + ":" + kSecrets[1] + at}) {
    auto store = make_prefix_store(open_store(url, Deadline::after(seconds(5))), "jobL");
    std::cerr << "opened " << store->describe() << "\n";
    rendezvous(*store, 0, 1);
  }
}

TEST(RedisHygiene, PasswordsNeverReachTheLog) {
  RedisServer server;
  RespClient control = server.client();
  ASSERT_EQ(control.call({"CONFIG", "SET", "requirepass", kSecrets[0]}), "OK");
  RespClient acl(server.port(), kSecrets[0]);
  ASSERT_EQ(
      acl.call({"ACL", "SETUSER", kAclUser, "on", std::string(">") + kSecrets[1], "~*", "+@all"}),
      "OK");
  TempDir dir;
  std::string log_path = dir.path() + "/child.log";
  std::string port = std::to_string(server.port());
  std::vector<std::string> args = {"/proc/self/exe",
                                   "--gtest_filter=RedisHygiene.ChildWritesLogsWithPasswords"};
  std::vector<std::string> env = {"GLOO_LITE_LOG=debug", "GLOO_LITE_TEST_REDIS_PORT=" + port};
  for (char** var = environ; *var != nullptr; ++var) {
    if (std::string(*var).rfind("GLOO_LITE_", 0) != 0) env.push_back(*var);
  }
  std::vector<char*> argv, envp;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  for (auto& var : env) envp.push_back(var.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
  pid_t pid = -1;
  ASSERT_EQ(posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data()), 0);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  std::ifstream in(log_path);
  std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << log;
  // The child did reach every path, logging at debug level.
  EXPECT_NE(log.find("bad %-escape"), std::string::npos) << log;
  EXPECT_NE(log.find("authentication as user"), std::string::npos) << log;
  EXPECT_NE(log.find("cannot connect"), std::string::npos) << log;
  EXPECT_NE(log.find("deleted its"), std::string::npos) << log;
  EXPECT_NE(log.find("opened redis://gl_job@127.0.0.1:" + port), std::string::npos) << log;
  for (const char* secret : kSecrets) {
    EXPECT_EQ(log.find(secret), std::string::npos) << "the log shows " << secret << ":\n" << log;
  }
}

}  // namespace
}  // namespace gloo_lite::test
