// One log line format for the whole library:  host:pid WHO [subsys] LEVEL message
// where WHO is "rank R" in a rank, else the process's role ("launcher", "store"; set by the
// gloo_lite_run and gloo_lite_store mains), else the program's name.
// Level from GLOO_LITE_LOG, subsystems from GLOO_LITE_LOG_SUBSYS. Lines go to stderr, written
// with a single write() so that lines of concurrent threads and processes never interleave.
#pragma once

#include <sstream>
#include <string>

namespace gloo_lite {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3, kTrace = 4 };

bool log_enabled(LogLevel level, const char* subsys);
void log_write(LogLevel level, const char* subsys, const std::string& message);
// The rank shown in log lines of this process (bootstrap and contexts set it; -1: none).
void log_set_rank(int rank);
// The role shown in log lines of a process that is not a rank ("launcher", "store"); a rank
// set with log_set_rank takes precedence.
void log_set_identity(const std::string& role);
// "rank 3", "launcher", or the program's name: what log lines show after host:pid.
std::string log_identity();

}  // namespace gloo_lite

#define GLOO_LITE_LOG_AT(level, subsys, expr)                             \
  do {                                                                    \
    if (::gloo_lite::log_enabled(level, subsys)) {                        \
      std::ostringstream gloo_lite_log_stream_;                           \
      gloo_lite_log_stream_ << expr;                                      \
      ::gloo_lite::log_write(level, subsys, gloo_lite_log_stream_.str()); \
    }                                                                     \
  } while (0)

#define LOG_ERROR(subsys, expr) GLOO_LITE_LOG_AT(::gloo_lite::LogLevel::kError, subsys, expr)
#define LOG_WARN(subsys, expr) GLOO_LITE_LOG_AT(::gloo_lite::LogLevel::kWarn, subsys, expr)
#define LOG_INFO(subsys, expr) GLOO_LITE_LOG_AT(::gloo_lite::LogLevel::kInfo, subsys, expr)
#define LOG_DEBUG(subsys, expr) GLOO_LITE_LOG_AT(::gloo_lite::LogLevel::kDebug, subsys, expr)
#define LOG_TRACE(subsys, expr) GLOO_LITE_LOG_AT(::gloo_lite::LogLevel::kTrace, subsys, expr)
