// Command line of gloo_lite_run.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace gloo_lite::launcher {

struct LauncherOptions {
  int ranks = 0;
  std::string host = "127.0.0.1";  // where the embedded TCP store listens
  double timeout_s = 0;            // whole-job limit; 0 = none
  double grace_s = 5;              // SIGTERM -> SIGKILL grace period
  bool set_prefix = true;          // GLOO_LITE_PREFIX = fresh job id
  bool authenticate = true;        // GLOO_LITE_AUTH_SECRET = fresh secret, unless one is set
  bool help = false;
  bool knobs = false;
  std::vector<std::string> command;  // program and its arguments
};

// A malformed command line; main prints it with a hint to --help and exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses argv (argv[0] excluded by the caller passing argc - 1, argv + 1). Options end at "--"
// or at the first argument that is not an option.
LauncherOptions parse_launcher_args(const std::vector<std::string>& args);

std::string launcher_usage();

}  // namespace gloo_lite::launcher
