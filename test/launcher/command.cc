#include "test/launcher/command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace gloo_lite::test {
namespace {

std::vector<std::string> merged_environment(const std::vector<std::string>& changes) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) env.emplace_back(*entry);
  for (const auto& change : changes) {
    std::string name = change.substr(0, change.find('='));
    for (auto it = env.begin(); it != env.end();) {
      it = it->compare(0, name.size() + 1, name + "=") == 0 ? env.erase(it) : it + 1;
    }
    if (change.size() > name.size() + 1) env.push_back(change);
  }
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (auto& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary);
  file << text;
}

}  // namespace

std::string CommandResult::describe() const {
  std::string text = timed_out  ? "timed out"
                     : signaled ? "signal " + std::to_string(signal)
                                : "exit " + std::to_string(exit_code);
  return text + " after " + std::to_string(elapsed.count()) + " ms; stdout:\n" + out +
         "\nstderr:\n" + err;
}

Command::Command(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                 const std::string& stdin_text) {
  static int counter = 0;
  const char* base = std::getenv("TMPDIR");
  dir_ = std::string(base ? base : "/tmp") + "/gloo_lite_cmd." + std::to_string(getpid()) + "." +
         std::to_string(counter++);
  mkdir(dir_.c_str(), 0700);
  write_file(dir_ + "/in", stdin_text);
  std::vector<std::string> args = argv;
  std::vector<std::string> environment = merged_environment(env);
  std::vector<char*> c_args = c_strings(args);
  std::vector<char*> c_env = c_strings(environment);
  std::string in = dir_ + "/in", out = dir_ + "/out", err = dir_ + "/err";
  started_ = std::chrono::steady_clock::now();
  pid_ = fork();
  if (pid_ == 0) {
    int in_fd = open(in.c_str(), O_RDONLY);
    int out_fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err_fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in_fd < 0 || out_fd < 0 || err_fd < 0) _exit(125);
    // Whatever the test runner was started with (a shell's background job ignores SIGINT),
    // the launcher under test sees signals as a user's shell would give them.
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    dup2(in_fd, 0);
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    execve(c_args[0], c_args.data(), c_env.data());
    _exit(125);
  }
  pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
}

Command::~Command() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (pidfd_ >= 0) close(pidfd_);
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

CommandResult Command::wait(std::chrono::milliseconds timeout) {
  CommandResult result;
  auto deadline = started_ + timeout;
  int status = 0;
  for (;;) {
    pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) break;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      result.timed_out = true;
      break;
    }
    if (pidfd_ >= 0) {
      pollfd fd{pidfd_, POLLIN, 0};
      poll(&fd, 1, static_cast<int>(left.count()));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  pid_ = -1;
  result.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started_);
  if (!result.timed_out) {
    if (WIFSIGNALED(status)) {
      result.signaled = true;
      result.signal = WTERMSIG(status);
    } else {
      result.exit_code = WEXITSTATUS(status);
    }
  }
  result.out = read_file(dir_ + "/out");
  result.err = read_file(dir_ + "/err");
  return result;
}

CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                          const std::vector<std::string>& env, const std::string& stdin_text) {
  Command command(argv, env, stdin_text);
  return command.wait(timeout);
}

bool wait_file(const std::string& path, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (access(path.c_str(), F_OK) != 0) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

std::string read_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream stream(text);
  std::string line;
  while (std::getline(stream, line)) lines.push_back(line);
  return lines;
}

std::string launcher_path() { return GLOO_LITE_RUN_PATH; }

std::string self_path() {
  char path[4096] = {0};
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : "";
}

}  // namespace gloo_lite::test
