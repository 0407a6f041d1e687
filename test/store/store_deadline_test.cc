// A store that does not answer (a real server process stopped with SIGSTOP, or killed) fails
// every operation with a StoreError that names the store and what to check, by the caller's
// deadline plus a small slack, whatever the backend. (A missing key on a store that answers
// stays a TimeoutError: store_conformance_test.cc.)
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <thread>

#include "gloo_lite/base/error.h"
#include "gloo_lite/base/socket.h"
#include "rendezvous/file_store_names.h"
#include "rendezvous/stores.h"
#include "test/store/redis_server.h"
#include "test/support/test_support.h"

extern char** environ;

namespace gloo_lite::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

constexpr milliseconds kDeadline(1000);
// What docs/stores.md promises beyond the deadline.
constexpr milliseconds kSlack(250);

milliseconds since(Clock::time_point start) {
  return std::chrono::duration_cast<milliseconds>(Clock::now() - start);
}

// The process state letter from /proc/<pid>/stat ('T' once stopped).
char process_state(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t paren = text.rfind(')');
  return paren == std::string::npos || paren + 2 >= text.size() ? '?' : text[paren + 2];
}

// Stops a process for the guard's lifetime; continues it however the test ends. kill() only
// queues the signal, so it waits until the process is really stopped.
class Stopped {
 public:
  explicit Stopped(pid_t pid) : pid_(pid) {
    kill(pid_, SIGSTOP);
    auto start = Clock::now();
    while (process_state(pid_) != 'T' && since(start) < seconds(5)) {
      std::this_thread::sleep_for(milliseconds(1));
    }
    EXPECT_EQ(process_state(pid_), 'T') << "process " << pid_ << " did not stop";
  }
  ~Stopped() { kill(pid_, SIGCONT); }
  Stopped(const Stopped&) = delete;
  Stopped& operator=(const Stopped&) = delete;

 private:
  pid_t pid_;
};

// The gloo_lite_store binary as a child process on a free loopback port.
class StoreProcess {
 public:
  StoreProcess() {
    int out[2];
    if (pipe(out) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    std::string program = GLOO_LITE_STORE_BIN;
    std::vector<std::string> args = {program, "--host", "127.0.0.1", "--port", "0"};
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    int rc = posix_spawn(&pid_, program.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    Fd stdout_fd(out[0]);
    if (rc != 0) throw std::runtime_error("cannot start " + program);
    std::string line;
    auto deadline = Deadline::after(seconds(10));
    while (line.find('\n') == std::string::npos && wait_readable(stdout_fd.get(), deadline)) {
      char chunk[256];
      ssize_t n = ::read(stdout_fd.get(), chunk, sizeof(chunk));
      if (n <= 0) break;
      line.append(chunk, static_cast<size_t>(n));
    }
    if (line.rfind("tcp://", 0) != 0) throw std::runtime_error("gloo_lite_store printed " + line);
    url_ = line.substr(0, line.find('\n'));
  }
  ~StoreProcess() { kill_now(); }
  StoreProcess(const StoreProcess&) = delete;
  StoreProcess& operator=(const StoreProcess&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& url() const { return url_; }
  void kill_now() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }

 private:
  pid_t pid_ = -1;
  std::string url_;
};

struct Operation {
  const char* name;
  std::function<void(Store&, const Deadline&)> run;
};

// Every operation of the interface; "present" was set while the store still answered.
std::vector<Operation> every_operation() {
  return {
      {"set", [](Store& s, const Deadline& d) { s.set("k", to_bytes("v"), d); }},
      {"get of a present key", [](Store& s, const Deadline& d) { s.get("present", d); }},
      {"get of a missing key", [](Store& s, const Deadline& d) { s.get("absent", d); }},
      {"wait",
       [](Store& s, const Deadline& d) {
         s.wait({"present", "absent"}, d);
       }},
      {"multi_get",
       [](Store& s, const Deadline& d) {
         s.multi_get({"present", "absent"}, d);
       }},
      {"add", [](Store& s, const Deadline& d) { s.add("counter", 1, d); }},
      {"check", [](Store& s, const Deadline& d) { s.check({"present"}, d); }},
      {"erase", [](Store& s, const Deadline& d) { s.erase("present", d); }},
  };
}

// `op` must throw a StoreError naming `store_name` and saying what to check, within
// kDeadline + kSlack. A TimeoutError would blame the ranks for a store that did not answer.
void expect_store_error_in_time(const std::string& what, const std::string& store_name,
                                const std::function<void(const Deadline&)>& op) {
  auto start = Clock::now();
  try {
    op(Deadline::after(kDeadline));
    ADD_FAILURE() << what << ": succeeded against a store that does not answer";
  } catch (const StoreError& e) {
    std::string message = e.what();
    if (what.rfind("get of a missing key", 0) == 0) std::printf("  %s\n", e.what());
    EXPECT_NE(message.find(store_name), std::string::npos) << what << ": " << message;
    EXPECT_NE(message.find("alive"), std::string::npos) << what << ": " << message;
    EXPECT_EQ(message.find("rank -1"), std::string::npos) << what << ": " << message;
  } catch (const TimeoutError& e) {
    ADD_FAILURE() << what
                  << ": TimeoutError (which blames the ranks) instead of StoreError: " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": not a StoreError: " << e.what();
  }
  auto waited = since(start);
  std::printf("%-50s %5lld ms\n", what.c_str(), static_cast<long long>(waited.count()));
  EXPECT_LE(waited.count(), (kDeadline + kSlack).count()) << what << " overran its deadline";
}

void expect_every_operation_fails_in_time(Store& store, const std::string& store_name,
                                          const std::string& when) {
  for (const auto& op : every_operation()) {
    expect_store_error_in_time(std::string(op.name) + " " + when, store_name,
                               [&](const Deadline& d) { op.run(store, d); });
  }
}

void expect_working(const std::string& url) {
  auto store = open_store(url, Deadline::after(seconds(10)));
  store->set("after", to_bytes("ok"));
  EXPECT_EQ(to_string(store->get("after", Deadline::after(seconds(10)))), "ok");
}

TEST(StoreDeadline, StoppedAndKilledTcpStoreFailsEveryOperationWithStoreErrorInTime) {
  StoreProcess server;
  auto store = open_store(server.url(), Deadline::after(seconds(10)));
  store->set("present", to_bytes("1"));
  auto scoped = make_prefix_store(store, "job");
  {
    Stopped stopped(server.pid());
    expect_every_operation_fails_in_time(*store, server.url(), "on a stopped store");
    expect_store_error_in_time("get through a prefix store on a stopped store", server.url(),
                               [&](const Deadline& d) { scoped->get("present", d); });
    expect_store_error_in_time("connecting to a stopped store", server.url(),
                               [&](const Deadline& d) { open_store(server.url(), d); });
  }
  // Continued, it serves again: the stop, not something else, was what failed.
  expect_working(server.url());
  store->set("present", to_bytes("1"));
  server.kill_now();
  expect_every_operation_fails_in_time(*store, server.url(), "on a killed store");
  expect_store_error_in_time("connecting to a killed store", server.url(),
                             [&](const Deadline& d) { open_store(server.url(), d); });
}

TEST(StoreDeadline, StoppedAndKilledRedisFailsEveryOperationWithStoreErrorInTime) {
  RedisServer server;
  std::string name = "redis://127.0.0.1:" + std::to_string(server.port());
  auto store = open_store(server.url(2), Deadline::after(seconds(10)));
  store->set("present", to_bytes("1"));
  {
    Stopped stopped(server.pid());
    expect_every_operation_fails_in_time(*store, name, "on a stopped redis-server");
    expect_store_error_in_time("connecting to a stopped redis-server", name,
                               [&](const Deadline& d) { open_store(server.url(2), d); });
  }
  expect_working(server.url(2));
  store->set("present", to_bytes("1"));
  server.kill_now();
  expect_every_operation_fails_in_time(*store, name, "on a killed redis-server");
  expect_store_error_in_time("connecting to a killed redis-server", name,
                             [&](const Deadline& d) { open_store(server.url(2), d); });
}

// A process stopped while it holds a counter's lock must not wedge every other add().
TEST(StoreDeadline, FileStoreAddGivesUpOnALockHeldPastTheDeadline) {
  TempDir dir;
  auto store = make_file_store(dir.path());
  store->add("counter", 1);
  auto paths = store_detail::file_key_paths(dir.path(), "counter");
  Fd holder(::open(paths.lock.c_str(), O_RDWR | O_CLOEXEC));
  ASSERT_TRUE(holder.valid());
  ASSERT_EQ(flock(holder.get(), LOCK_EX), 0);  // another open file description: excludes add()

  std::atomic<bool> finished{false};
  std::string outcome;
  milliseconds waited(0);
  std::thread adder([&] {
    auto start = Clock::now();
    try {
      store->add("counter", 1, Deadline::after(kDeadline));
      outcome = "returned";
    } catch (const StoreError& e) {
      outcome = std::string("StoreError: ") + e.what();
    } catch (const std::exception& e) {
      outcome = std::string("other error: ") + e.what();
    }
    waited = since(start);
    finished = true;
  });
  auto start = Clock::now();
  while (!finished && since(start) < kDeadline * 3) std::this_thread::sleep_for(milliseconds(10));
  flock(holder.get(), LOCK_UN);  // lets a hanging add() finish, so the thread can be joined
  adder.join();
  EXPECT_EQ(outcome.rfind("StoreError: ", 0), 0u) << outcome;
  EXPECT_NE(outcome.find("file://" + dir.path()), std::string::npos) << outcome;
  EXPECT_NE(outcome.find("stopped"), std::string::npos) << outcome;
  EXPECT_LE(waited.count(), (kDeadline + kSlack).count());
  EXPECT_EQ(store->add("counter", 1), 2) << "the failed add must not have counted";
}

}  // namespace
}  // namespace gloo_lite::test
