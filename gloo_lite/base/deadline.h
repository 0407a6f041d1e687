// The single deadline type used by stores, transports and collectives. A deadline is an absolute
// point on the steady clock, so it composes: a collective's deadline is handed unchanged to every
// send, receive and store call it makes.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace gloo_lite {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  static Deadline after(std::chrono::milliseconds timeout) {
    return Deadline(Clock::now() + timeout);
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

// Formats a duration for error messages ("1500 ms").
inline std::string format_ms(std::chrono::milliseconds ms) {
  return std::to_string(ms.count()) + " ms";
}

}  // namespace gloo_lite
