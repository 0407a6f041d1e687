// Test helpers: ranks as real processes (fork) or threads, temporary directories, free ports.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace gloo_lite {
class Context;
}

namespace gloo_lite::test {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// How one forked rank ended.
struct ProcessResult {
  int rank = -1;
  int exit_code = -1;  // valid when !signaled
  bool signaled = false;
  int signal = 0;
  bool timed_out = false;
  bool ok() const { return !signaled && !timed_out && exit_code == 0; }
  std::string describe() const;
};

// Forks `ranks` processes running body(rank). A child exits 0 when body returns without a
// GoogleTest failure, 1 when an assertion failed or an exception escaped (printed to stderr).
// Children still running after `timeout` are killed (timed_out = true). Call only while the
// test process has no other threads.
std::vector<ProcessResult> run_processes(int ranks, const std::function<void(int rank)>& body,
                                         std::chrono::milliseconds timeout);
// Asserts (with GoogleTest) that every process result is ok, describing the ones that are not.
void expect_all_ok(const std::vector<ProcessResult>& results);
// Asserts that rank `victim` was killed with SIGKILL and that every other rank is ok (the
// fault tests: a killed rank, survivors that failed promptly and cleanly).
void expect_only_victim_killed(const std::vector<ProcessResult>& results, int victim);

// Blocks in a receive from `peer`, which never sends: a fault elsewhere (a killed or aborting
// rank) must end it with a ConnectionError whose text holds `expected`, within 2 s.
void expect_receive_fails_promptly(Context& context, int peer, const std::string& expected);

// Whether process `pid` is stopped (SIGSTOP: state T in /proc/<pid>/stat).
bool process_is_stopped(int pid);
// Whether process `pid` is gone (or a zombie nobody reaps, as under a minimal init).
bool process_gone(int pid);
// Waits (bounded) until `pid` is gone.
bool wait_process_gone(int pid, std::chrono::milliseconds timeout);

// Runs body(rank) on `ranks` threads; an exception escaping a thread becomes a test failure
// naming the rank.
void run_threads(int ranks, const std::function<void(int rank)>& body);

// A TCP port on 127.0.0.1 that was free a moment ago.
int free_loopback_port();

// Directory of the test binaries (for locating tools such as gloo_lite_run).
std::string build_bin_dir();

// Whether this run's transport is ibverbs (GLOO_LITE_TEST_TRANSPORT): here that is the VM
// stage's Soft-RoCE under emulation, where every call is many times slower than natively, so
// time bounds written for TCP and shm would measure the emulator.
bool on_emulated_rdma();

}  // namespace gloo_lite::test
