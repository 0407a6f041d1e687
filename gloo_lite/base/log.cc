#include "gloo_lite/base/log.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "gloo_lite/base/config.h"

namespace gloo_lite {
namespace {

struct LogSettings {
  LogLevel level = LogLevel::kWarn;
  bool all_subsystems = true;
  std::vector<std::string> subsystems;
  std::string host;
};

const LogSettings& settings() {
  static const LogSettings parsed = [] {
    LogSettings s;
    std::string level = knob_string("GLOO_LITE_LOG");
    if (level == "error")
      s.level = LogLevel::kError;
    else if (level == "info")
      s.level = LogLevel::kInfo;
    else if (level == "debug")
      s.level = LogLevel::kDebug;
    else if (level == "trace")
      s.level = LogLevel::kTrace;
    std::string subsys = knob_string("GLOO_LITE_LOG_SUBSYS");
    s.all_subsystems = subsys.empty() || subsys == "all";
    size_t start = 0;
    while (!s.all_subsystems && start <= subsys.size()) {
      size_t comma = subsys.find(',', start);
      if (comma == std::string::npos) comma = subsys.size();
      if (comma > start) s.subsystems.push_back(subsys.substr(start, comma - start));
      start = comma + 1;
    }
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    s.host = host;
    return s;
  }();
  return parsed;
}

std::atomic<int> g_rank{-1};
std::mutex g_role_mutex;
// Guarded by g_role_mutex; "" until log_set_identity. Never destroyed, so that threads still
// logging while the process exits find it intact.
std::string& g_role = *new std::string;

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kError:
      return "ERROR";
    case LogLevel::kWarn:
      return "WARN";
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kDebug:
      return "DEBUG";
    case LogLevel::kTrace:
      return "TRACE";
  }
  return "?";
}

}  // namespace

bool log_enabled(LogLevel level, const char* subsys) {
  const LogSettings& s = settings();
  if (level > s.level) return false;
  if (s.all_subsystems || level == LogLevel::kError) return true;
  for (const auto& name : s.subsystems) {
    if (name == subsys) return true;
  }
  return false;
}

void log_set_rank(int rank) { g_rank.store(rank); }

void log_set_identity(const std::string& role) {
  std::lock_guard<std::mutex> lock(g_role_mutex);
  g_role = role;
}

std::string log_identity() {
  int rank = g_rank.load();
  if (rank >= 0) return "rank " + std::to_string(rank);
  std::lock_guard<std::mutex> lock(g_role_mutex);
  if (!g_role.empty()) return g_role;
  return program_invocation_short_name;
}

void log_write(LogLevel level, const char* subsys, const std::string& message) {
  std::string line = settings().host + ":" + std::to_string(getpid()) + " " + log_identity() +
                     " [" + subsys + "] " + level_name(level) + " " + message + "\n";
  // One write() per line keeps lines whole across threads and processes sharing stderr.
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

}  // namespace gloo_lite
