// Runs a program (gloo_lite_run, mostly) as a child process with its output captured in files,
// waiting for it with a bound; for the launcher tests.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace gloo_lite::test {

struct CommandResult {
  int exit_code = -1;  // valid when !signaled
  bool signaled = false;
  int signal = 0;
  bool timed_out = false;  // killed by the helper after the bound
  std::chrono::milliseconds elapsed{0};
  std::string out;
  std::string err;
  // "exit 7", "signal 9", "timed out", followed by stderr: for assertion messages.
  std::string describe() const;
};

// A started command; wait() collects it. Killed (SIGKILL) on destruction if still running.
class Command {
 public:
  // `env` entries "NAME=value" are added to (or replace in) this process's environment;
  // "NAME=" alone removes NAME. `stdin_text` is what the program reads on standard input.
  Command(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
          const std::string& stdin_text = "");
  ~Command();
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;

  pid_t pid() const { return pid_; }
  CommandResult wait(std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  int pidfd_ = -1;
  std::string dir_;
  std::chrono::steady_clock::time_point started_;
};

CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                          const std::vector<std::string>& env = {},
                          const std::string& stdin_text = "");

// Waits (bounded) until `path` exists.
bool wait_file(const std::string& path, std::chrono::milliseconds timeout);
std::string read_file(const std::string& path);
std::vector<std::string> split_lines(const std::string& text);

// The path of gloo_lite_run in the build tree.
std::string launcher_path();
// This test binary, which also serves as a rank program (see launcher_main.cc).
std::string self_path();

}  // namespace gloo_lite::test
