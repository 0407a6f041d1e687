// Starting one rank: fork + execve with its stdout and stderr on pipes, in a process group of
// its own (so that stopping a rank also stops what it started), dying with the launcher.
#pragma once

#include <sys/types.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "gloo_lite/base/socket.h"

namespace gloo_lite::launcher {

struct SpawnSpec {
  std::string path;                  // resolved with find_program
  std::vector<std::string> argv;     // argv[0] is the name the user typed
  std::vector<std::string> env;      // "NAME=value"
  bool inherit_stdin = false;        // else /dev/null
  std::vector<int> default_signals;  // reset to SIG_DFL in the child (besides SIGPIPE)
};

struct SpawnedRank {
  pid_t pid = -1;  // also its process group id
  Fd out;          // read ends, non-blocking, close-on-exec
  Fd err;
};

// The child could not be started; `error` is the errno of fork/pipe/execve.
class SpawnError : public std::runtime_error {
 public:
  SpawnError(const std::string& what, int error) : std::runtime_error(what), error(error) {}
  int error;
};

// Searches PATH like execvp (before forking, so the child only calls async-signal-safe
// functions). Returns "" when not found; a name with a '/' is returned as is.
std::string find_program(const std::string& name);

// Starts the process; returns once it has exec'd (or throws SpawnError when it could not).
SpawnedRank spawn_rank(const SpawnSpec& spec);

}  // namespace gloo_lite::launcher
