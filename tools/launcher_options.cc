#include "tools/launcher_options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace gloo_lite::launcher {
namespace {

constexpr int kMaxRanks = 4096;

int parse_ranks(const std::string& text) {
  errno = 0;
  char* end = nullptr;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || *end != '\0' || value < 1 || value > kMaxRanks) {
    throw UsageError("-n expects a number of ranks in 1.." + std::to_string(kMaxRanks) + ", got '" +
                     text + "'");
  }
  return static_cast<int>(value);
}

double parse_seconds(const std::string& option, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || errno != 0 || *end != '\0' || !std::isfinite(value) || value < 0) {
    throw UsageError(option + " expects seconds (e.g. 30 or 0.5), got '" + text + "'");
  }
  return value;
}

}  // namespace

LauncherOptions parse_launcher_args(const std::vector<std::string>& args) {
  LauncherOptions options;
  size_t i = 0;
  // Returns the option's value, from "--opt=value" or from the next argument.
  auto value_of = [&](const std::string& name, const std::string& arg) -> std::string {
    if (arg.size() > name.size() && arg[name.size()] == '=') return arg.substr(name.size() + 1);
    if (name == "-n" && arg.size() > 2) return arg.substr(2);  // -n4
    if (i + 1 >= args.size()) throw UsageError(name + " needs a value");
    return args[++i];
  };
  auto is = [](const std::string& arg, const std::string& name) {
    return arg == name || (arg.compare(0, name.size() + 1, name + "=") == 0);
  };
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.empty() || arg[0] != '-') break;
    if (arg == "-h" || arg == "--help") {
      options.help = true;
    } else if (arg == "--knobs") {
      options.knobs = true;
    } else if (arg == "--no-prefix") {
      options.set_prefix = false;
    } else if (arg == "--no-auth") {
      options.authenticate = false;
    } else if (is(arg, "--np")) {
      options.ranks = parse_ranks(value_of("--np", arg));
    } else if (is(arg, "-np")) {
      options.ranks = parse_ranks(value_of("-np", arg));
    } else if (arg.compare(0, 2, "-n") == 0) {
      options.ranks = parse_ranks(value_of("-n", arg));
    } else if (is(arg, "--host")) {
      options.host = value_of("--host", arg);
      if (options.host.empty()) throw UsageError("--host needs an address or host name");
    } else if (is(arg, "--timeout")) {
      options.timeout_s = parse_seconds("--timeout", value_of("--timeout", arg));
    } else if (is(arg, "--grace")) {
      options.grace_s = parse_seconds("--grace", value_of("--grace", arg));
    } else {
      throw UsageError("unknown option '" + arg + "'");
    }
  }
  options.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  if (options.help || options.knobs) return options;
  if (options.ranks == 0) throw UsageError("say how many ranks to start with -n N");
  if (options.command.empty()) throw UsageError("no program given; put it after --");
  return options;
}

std::string launcher_usage() {
  return R"(Usage: gloo_lite_run -n N [options] [--] program [args...]

Starts N ranks of `program` on this host around an embedded gloo_lite TCP store. Each rank
gets GLOO_LITE_RANK, GLOO_LITE_SIZE, GLOO_LITE_LOCAL_RANK, GLOO_LITE_STORE and (unless
--no-prefix) GLOO_LITE_PREFIX, so gloo_lite::init_from_env() needs nothing else; with the store
on loopback (the default) and neither GLOO_LITE_HOSTNAME nor GLOO_LITE_IFNAME set, also
GLOO_LITE_HOSTNAME=127.0.0.1, since every rank runs on this host. Every line a
rank prints is tagged "[rank] " on the launcher's stdout or stderr. When a rank fails (non-zero
exit or a signal), the others get SIGTERM, then SIGKILL after the grace period, and
gloo_lite_run exits with the failing rank's status (128 + signal number for a signal). Its
summary also names the likely culprit: a rank found stopped or stuck when the first one failed,
or the rank the failure reports in the store point at.

Unless --no-auth, or GLOO_LITE_AUTH_SECRET or GLOO_LITE_AUTH_FILE is set already, the job gets a
fresh random secret in GLOO_LITE_AUTH_SECRET: the store and every rank then admit only peers
that prove they hold it (docs/security.md). With GLOO_LITE_TLS_CERT, GLOO_LITE_TLS_KEY and
GLOO_LITE_TLS_CA set, the store and every TCP pair run over TLS 1.3 as well (pairs that use shared
memory on one host do not cross a wire; GLOO_LITE_TRANSPORT=tcp puts them on TLS too).

Options:
  -n, --np N       number of ranks to start (1..4096)
  --host H         address the store listens on and publishes (default 127.0.0.1)
  --timeout S      stop the job after S seconds (exit status 124); default: no limit
  --grace S        seconds between SIGTERM and SIGKILL when stopping ranks (default 5)
  --no-prefix      do not set GLOO_LITE_PREFIX (keep the one in the environment, if any)
  --no-auth        no per-job secret (keep GLOO_LITE_AUTH_SECRET/FILE if set, else none)
  --knobs          list every GLOO_LITE_* environment knob: default, meaning, allowed values
  -h, --help       show this help

SIGINT, SIGTERM and SIGHUP are forwarded to every rank (a second one kills them at once).
Standard input is /dev/null for every rank except rank 0 when it is not a terminal.

Exit status: 0 when every rank exits 0; the first failing rank's status; 124 on --timeout;
128 + signal when gloo_lite_run itself was interrupted; 127 when the program is not found;
126 when it cannot be executed; 2 for a bad command line or a bad GLOO_LITE_* value (checked
before any rank starts); 1 when the launcher itself fails.
)";
}

}  // namespace gloo_lite::launcher
