#include "test/support/test_support.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

#include "gloo_lite/base/error.h"
#include "gloo_lite/context.h"

namespace gloo_lite::test {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base ? base : "/tmp") + "/gloo_lite_test.XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = buffer.data();
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string ProcessResult::describe() const {
  std::string text = "rank " + std::to_string(rank);
  if (timed_out) return text + " timed out (killed)";
  if (signaled) return text + " killed by signal " + std::to_string(signal);
  return text + " exited with " + std::to_string(exit_code);
}

std::vector<ProcessResult> run_processes(int ranks, const std::function<void(int rank)>& body,
                                         std::chrono::milliseconds timeout) {
  std::vector<pid_t> pids(ranks, -1);
  std::cout.flush();
  std::cerr.flush();
  for (int rank = 0; rank < ranks; ++rank) {
    pid_t pid = fork();
    if (pid == 0) {
      int code = 0;
      try {
        body(rank);
        if (::testing::Test::HasFailure()) code = 1;
      } catch (const std::exception& e) {
        std::cerr << "rank " << rank << ": uncaught exception: " << e.what() << std::endl;
        code = 1;
      }
      std::cout.flush();
      std::cerr.flush();
      _exit(code);
    }
    pids[rank] = pid;
  }
  std::vector<ProcessResult> results(ranks);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int remaining = ranks;
  while (remaining > 0) {
    for (int rank = 0; rank < ranks; ++rank) {
      if (pids[rank] < 0) continue;
      int status = 0;
      pid_t done = waitpid(pids[rank], &status, WNOHANG);
      if (done == pids[rank]) {
        results[rank].rank = rank;
        if (WIFSIGNALED(status)) {
          results[rank].signaled = true;
          results[rank].signal = WTERMSIG(status);
        } else {
          results[rank].exit_code = WEXITSTATUS(status);
        }
        pids[rank] = -1;
        --remaining;
      }
    }
    if (remaining == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (int rank = 0; rank < ranks; ++rank) {
        if (pids[rank] < 0) continue;
        kill(pids[rank], SIGKILL);
        waitpid(pids[rank], nullptr, 0);
        results[rank].rank = rank;
        results[rank].timed_out = true;
        pids[rank] = -1;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return results;
}

void expect_all_ok(const std::vector<ProcessResult>& results) {
  for (const auto& result : results) {
    EXPECT_TRUE(result.ok()) << result.describe();
  }
}

void expect_only_victim_killed(const std::vector<ProcessResult>& results, int victim) {
  for (const auto& result : results) {
    if (result.rank == victim) {
      EXPECT_TRUE(result.signaled && result.signal == SIGKILL) << result.describe();
    } else {
      EXPECT_TRUE(result.ok()) << result.describe();
    }
  }
}

void expect_receive_fails_promptly(Context& context, int peer, const std::string& expected) {
  int value = 0;
  auto start = std::chrono::steady_clock::now();
  try {
    context.recv(peer, &value, sizeof(value), 99, std::chrono::seconds(30));
    ADD_FAILURE() << "rank " << context.rank() << ": a receive from rank " << peer
                  << " completed although nobody sent";
  } catch (const ConnectionError& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2))
      << "rank " << context.rank() << " failed too slowly";
}

namespace {

// The state letter of /proc/<pid>/stat, or 0 when there is no such process.
char process_state(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  size_t name_end = line.rfind(')');  // the name may hold spaces and parentheses
  return name_end != std::string::npos && name_end + 2 < line.size() ? line[name_end + 2] : 0;
}

}  // namespace

bool process_is_stopped(int pid) { return process_state(pid) == 'T'; }

bool process_gone(int pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  char state = process_state(pid);
  return state == 0 || state == 'Z';
}

bool wait_process_gone(int pid, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!process_gone(pid)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void run_threads(int ranks, const std::function<void(int rank)>& body) {
  std::vector<std::thread> threads;
  std::mutex mutex;
  std::vector<std::string> failures;
  for (int rank = 0; rank < ranks; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        body(rank);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mutex);
        failures.push_back("rank " + std::to_string(rank) + ": " + e.what());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& failure : failures) ADD_FAILURE() << failure;
}

int free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  int port = ntohs(address.sin_port);
  ::close(fd);
  return port;
}

std::string build_bin_dir() {
  char path[4096] = {0};
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return ".";
  return std::filesystem::path(std::string(path, n)).parent_path().string();
}

bool on_emulated_rdma() {
  const char* transport = ::getenv("GLOO_LITE_TEST_TRANSPORT");
  return transport != nullptr && std::strcmp(transport, "ibverbs") == 0;
}

}  // namespace gloo_lite::test
