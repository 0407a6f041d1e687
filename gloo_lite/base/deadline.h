// The single deadline type used by stores, transports and collectives. A deadline is an absolute
// point on the steady clock, so it composes: a collective's deadline is handed unchanged to every
// send, receive and store call it makes.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>

#include "gloo_lite/base/error.h"

namespace gloo_lite {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  // `timeout` from now, saturating: a timeout the clock cannot add to now (past ~292 years of
  // nanoseconds, milliseconds::max() included) is never(), a negative one already expired. So
  // every door's "at most that long" holds for any amount, instead of wrapping to the past.
  static Deadline after(std::chrono::milliseconds timeout) {
    const Clock::time_point now = Clock::now();
    if (timeout <= std::chrono::milliseconds::zero()) return Deadline(now);
    if (timeout >=
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - now)) {
      return never();
    }
    return Deadline(now + timeout);
  }
  // Only for callers that really mean "forever"; every default in gloo_lite is finite.
  static Deadline never() { return Deadline(Clock::time_point::max()); }

  bool expired() const { return Clock::now() >= at_; }
  bool is_never() const { return at_ == Clock::time_point::max(); }
  Clock::time_point time_point() const { return at_; }

  std::chrono::milliseconds remaining() const {
    if (is_never()) return std::chrono::milliseconds::max();
    auto left = at_ - Clock::now();
    if (left <= Clock::duration::zero()) return std::chrono::milliseconds(0);
    return std::chrono::ceil<std::chrono::milliseconds>(left);
  }
  // Remaining time as a poll()/epoll_wait() timeout: -1 for never, capped to int.
  int poll_timeout_ms() const {
    if (is_never()) return -1;
    auto ms = remaining().count();
    return ms > 0x7fffffff ? 0x7fffffff : static_cast<int>(ms);
  }

  Deadline earlier(const Deadline& other) const { return at_ < other.at_ ? *this : other; }

 private:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at_;
};

// A timeout in seconds (the Python module's) as milliseconds, the one conversion for every door
// that takes seconds: rounded up, so that a positive amount stays positive, and saturating, so
// that infinity or any amount past what milliseconds hold is milliseconds::max(), which
// Deadline::after reads as never. A negative amount or NaN is an InvalidArgument naming `what`.
inline std::chrono::milliseconds milliseconds_from_seconds(double seconds, const char* what) {
  if (!(seconds >= 0)) {
    throw InvalidArgument(std::string(what) + " is " + std::to_string(seconds) +
                          "; a timeout is a non-negative number of seconds (inf: no limit)");
  }
  const double ms = std::ceil(seconds * 1000.0);
  // 2^63 as a double: the first amount past milliseconds::max().
  if (!(ms < 9223372036854775808.0)) return std::chrono::milliseconds::max();
  return std::chrono::milliseconds(static_cast<int64_t>(ms));
}

// Formats a duration for error messages ("1500 ms").
inline std::string format_ms(std::chrono::milliseconds ms) {
  return std::to_string(ms.count()) + " ms";
}

}  // namespace gloo_lite
